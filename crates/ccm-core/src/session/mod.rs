//! The session: efforts, the ambient log, the turn counter and every effort operation.
//!
//! `Session` itself (this file) holds the components and the accessors; the rest lives in one
//! file per concern, each an `impl Session` block:
//!
//! - `turn.rs` — the turn lifecycle: `begin_turn`, `end_turn`, `abort_turn`, the undo record
//!   and rewinding a turn;
//! - `salience.rs` — after a turn: references, decay, eviction, pins and activation, the
//!   metrics point;
//! - `efforts.rs` — the effort operations (open, close, reopen, expand, collapse, switch,
//!   status, search);
//! - `planning.rs` — the planner's inputs borrowed from the components, and the plan;
//! - `pins.rs` and `telemetry.rs` — pinning, and the per-request records and usage;
//! - `compaction_hooks.rs` — graduated compaction inside the session: attachments, the check
//!   after every message, applying moves, embeddings;
//! - `rebuild.rs` — the state at the end of an earlier turn, rebuilt from the stored records,
//!   for a fork before the rewind window.
//!
//! A session only ever appends messages and changes which tier an item is in. Decay, eviction
//! and windowing move items out of the working set; nothing here removes a stored message.

use crate::components::ambient::Ambient;
use crate::components::attachments::Attachments;
use crate::components::compaction::Compaction;
use crate::components::efforts::{Efforts, Placement};
use crate::components::history::History;
use crate::components::recall::Recall;
use crate::components::saves::Saves;
use crate::components::versioned::Versioned;
use crate::config::Config;
use crate::error::{EffortError, SnapshotError};
use crate::metrics::{EffortEvent, EventKind, TurnMetrics};
use crate::model::{Effort, EffortStatus, LogState, Summary, SummarySource};
use crate::pins::Pins;
use crate::prompt;
use crate::state::SessionState;
use crate::text;
use crate::tokens::TokenCounter;
use serde::Serialize;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

pub use crate::components::efforts::{EffortState, Expansion};
pub use crate::components::recall::{IndexRequest, INDEX_CHUNK};
pub use footprint::MemoryFootprint;
pub use recall::{
    Evidence, EvidenceExcerpt, EvidenceGroup, EvidenceLog, EvidenceMessage, RecallEmbeddingBatch,
    Recalled, AUTO_MAX_MESSAGES_PER_WORD,
};
pub(crate) use stored_size::{is_unrecorded, StoredSize};
pub use turn::TurnReport;
pub(crate) use turn::{TurnDelta, TurnState};

mod compaction_hooks;
mod efforts;
mod footprint;
mod pins;
mod planning;
mod rebuild;
mod recall;
mod salience;
mod stored_size;
mod telemetry;
mod turn;

/// A conversation under Cognitive Context Management.
///
/// A session is composed of parts that own their fields (`components`): the efforts and
/// where each one is, the ambient log, the pins, the attachments, the compaction state, the
/// history of past turns and what the next save must write. The session coordinates what spans
/// several of them: a turn, an operation, a save.
#[derive(Clone)]
pub struct Session {
    pub(crate) config: Versioned<Config>,
    pub(crate) counter: Arc<dyn TokenCounter>,
    pub(crate) system_prompt: String,
    /// FNV-1a hash of the system prompt, computed when the prompt is set: every plan's recipe
    /// names the prompt by it.
    pub(crate) system_hash: String,
    pub(crate) system_tokens: u32,
    pub(crate) turn: u64,
    pub(crate) next_seq: u64,
    pub(crate) efforts: Versioned<Efforts>,
    pub(crate) ambient: Versioned<Ambient>,
    pub(crate) pins: Versioned<Pins>,
    pub(crate) attachments: Versioned<Attachments>,
    /// The full-text index of every stored text and the recalled excerpts.
    pub(crate) recall: Versioned<Recall>,
    pub(crate) compaction: Compaction,
    pub(crate) history: History,
    /// Rewind deltas of the last completed turns, oldest first (at most
    /// [`Session::REWIND_TURNS`]): what forking at an earlier turn undoes.
    pub(crate) rewind: VecDeque<TurnDelta>,
    /// The revision of the last save a store confirmed (0 if never saved): the next write
    /// batch builds on it, and a store refuses a batch built on another (another tab wrote
    /// first). It names the stored copy this session continues, so it is the session's own
    /// rather than part of the save tracking, which only lists what changed.
    pub(crate) revision: u64,
    pub(crate) saves: Saves,
    pub(crate) turn_state: Option<TurnState>,
    /// Banner of the last successful operation, read back by tool dispatch.
    pub(crate) last_banner: Option<String>,
    /// This session's branch.
    pub(crate) branch: crate::state::BranchInfo,
    /// The last plan built and the state it was built from.
    pub(crate) plan_cache: crate::plan::PlanCache,
    /// What opening this session from a document or a store had to repair although the
    /// records were readable (an invariant the records broke), one sentence each.
    pub(crate) repairs_on_open: Vec<String>,
    /// What the session stores, counted as its export writes it (see `stored_size.rs`).
    pub(crate) stored: StoredSize,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("turn", &self.turn)
            .field("efforts", &self.efforts.len())
            .field("ambient_messages", &self.ambient.messages().len())
            .field("active", &self.efforts.active_id())
            .field("counter", &self.counter.name())
            .finish_non_exhaustive()
    }
}

/// The result of `open_effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opened {
    /// The new effort's id.
    pub id: String,
    /// Every open effort's id, in opening order; the new one is active.
    pub open_efforts: Vec<String>,
}

/// The result of `close_effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Concluded {
    /// The concluded effort's id.
    pub id: String,
    /// The summary now in working memory.
    pub summary: String,
    /// Who wrote the summary.
    pub summary_source: SummarySource,
    /// Tokens of the raw log that left the context.
    pub raw_tokens: u64,
    /// Tokens of the summary line that entered it.
    pub summary_tokens: u32,
    /// The effort active after the conclusion: when the active effort is concluded while
    /// others stay open, the first of them becomes active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now_active: Option<String>,
}

/// The result of `reopen_effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reopened {
    /// The reopened effort's id; it is now active.
    pub id: String,
    /// Tokens of its raw log, back in context.
    pub raw_tokens: u64,
}

/// The result of `expand_effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expanded {
    /// The expanded effort's id.
    pub id: String,
    /// Tokens of the raw log loaded into context.
    pub tokens_loaded: u64,
}

/// The result of `collapse_effort` (and of an auto-collapse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collapsed {
    /// The collapsed effort's id.
    pub id: String,
    /// Tokens of the raw log that left the context.
    pub tokens_freed: u64,
}

/// The result of `switch_effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Switched {
    /// The newly active effort.
    pub id: String,
    /// The effort that was active before, if any.
    pub previous: Option<String>,
}

/// One effort in `effort_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffortStatusEntry {
    /// The effort's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Where it is.
    pub state: EffortState,
    /// Tokens of its raw log (header included): the cost of expanding it.
    pub raw_tokens: u64,
    /// Tokens of its summary line, when concluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_tokens: Option<u32>,
    /// Turns until it collapses by itself, when expanded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns_until_auto_collapse: Option<u64>,
    /// Turns until its summary leaves working memory, when concluded and in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns_until_eviction: Option<u64>,
}

/// The result of `effort_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusReport {
    /// The current turn number.
    pub turn: u64,
    /// The active effort's id, if any.
    pub active: Option<String>,
    /// Open efforts (opening order), expanded efforts (expansion order) and concluded efforts in
    /// working memory (conclusion order).
    pub efforts: Vec<EffortStatusEntry>,
    /// How many concluded efforts are out of working memory (find them with `search_efforts`).
    pub evicted_count: u64,
    /// Tokens currently added to the context by expanded efforts.
    pub expansion_tokens: u64,
}

/// One hit of `search_efforts`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The effort's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `concluded`, `expanded` or `evicted` (before this search brought it back).
    pub state: EffortState,
    /// Its summary.
    pub summary: String,
    /// Relevance; higher is better. Comparable within one search.
    pub score: f64,
    /// The query words that matched, sorted.
    pub matched: Vec<String>,
    /// Whether the query matched what the effort is about (its id, name or summary) rather
    /// than only words said in its log. Only such hits count as references and return to
    /// working memory.
    pub about: bool,
    /// Tokens an `expand_effort` would load.
    pub raw_tokens: u64,
}

/// The result of `search_efforts`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults {
    /// The query as given.
    pub query: String,
    /// Matching efforts, best first; at most [`Session::SEARCH_LIMIT`].
    pub results: Vec<SearchHit>,
    /// The best-matching stored messages verbatim (effort logs, the ambient log,
    /// attachments), with their neighbours, grouped by log, within the configured
    /// `evidence_token_budget`; messages the context already shows are left out.
    pub evidence: Evidence,
}

impl Session {
    /// Completed turns that can be rewound (for forking a branch at an earlier turn). Each
    /// delta holds only effort metadata and working-set state, so this bounds memory while
    /// covering any realistic "branch from here" in a conversation.
    pub const REWIND_TURNS: usize = 1_000;

    /// Most hits `search_efforts` returns. Every hit counts as a reference and returns to working
    /// memory, so a small number keeps a vague query from flooding the context.
    pub const SEARCH_LIMIT: usize = 5;

    /// A new, empty session that counts tokens with `counter`.
    ///
    /// # Errors
    /// [`crate::ConfigError`] when the configuration is invalid.
    pub fn with_counter(
        config: Config,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Session, crate::ConfigError> {
        config.validate()?;
        let config_compaction = config.compaction.clone();
        let system_prompt = prompt::system_prompt(config.system_prompt.as_deref());
        let system_tokens = counter.count(&system_prompt);
        let system_hash = crate::plan::fnv_hex(system_prompt.as_bytes());
        Ok(Session {
            config: Versioned::new(config),
            counter,
            system_prompt,
            system_hash,
            system_tokens,
            turn: 0,
            next_seq: 0,
            efforts: Versioned::default(),
            ambient: Versioned::default(),
            pins: Versioned::default(),
            attachments: Versioned::default(),
            recall: Versioned::default(),
            compaction: Compaction::new(
                crate::compaction::CompactionPolicy::new(config_compaction)
                    .map_err(|e| crate::ConfigError::Invalid(e.to_string()))?,
            ),
            history: History::default(),
            rewind: VecDeque::new(),
            revision: 0,
            saves: Saves::default(),
            turn_state: None,
            last_banner: None,
            branch: crate::state::BranchInfo::main(),
            plan_cache: crate::plan::PlanCache::default(),
            repairs_on_open: Vec::new(),
            stored: StoredSize::default(),
        })
    }

    /// A new, empty session with exact token counts in the configured encoding.
    ///
    /// # Errors
    /// [`crate::ConfigError`] when the configuration is invalid, or when the encoding's rank
    /// table is neither compiled in (feature `embedded-tables`) nor installed.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::{Config, Session};
    /// let mut session = Session::new(Config::default()).unwrap();
    /// session.begin_turn("Let's work on the auth bug", 0).unwrap();
    /// session.open_effort("auth bug", None).unwrap();
    /// let report = session.end_turn("Started. What do you see?", 0).unwrap();
    /// assert_eq!(report.routed_to.as_deref(), Some("auth-bug"));
    /// assert_eq!(report.banners, ["--- Started effort: auth-bug ---"]);
    /// ```
    pub fn new(config: Config) -> Result<Session, crate::ConfigError> {
        let counter = crate::tokens::exact_counter(config.encoding)?;
        Session::with_counter(config, counter)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Replaces the configuration between turns (the app's per-session settings). Thresholds,
    /// the window and the context mode take effect from the next plan; a new system prompt is
    /// counted once here.
    ///
    /// # Errors
    /// [`crate::ConfigError`] when the configuration is invalid, when a turn is in progress,
    /// or when it changes the encoding (stored counts were made with the old one: export and
    /// import the session to recount it).
    pub fn set_config(&mut self, config: Config) -> Result<(), crate::ConfigError> {
        config.validate()?;
        if self.in_turn() {
            return Err(crate::ConfigError::Invalid(
                "the configuration cannot change during a turn".to_string(),
            ));
        }
        if config.encoding != self.config.encoding {
            return Err(crate::ConfigError::Invalid(format!(
                "the encoding cannot change from {} to {} in place: stored counts were made with the old one; export the session and import it with the new encoding",
                self.config.encoding.name(),
                config.encoding.name()
            )));
        }
        if config.system_prompt != self.config.system_prompt {
            self.system_prompt = prompt::system_prompt(config.system_prompt.as_deref());
            self.system_tokens = self.counter.count(&self.system_prompt);
            self.system_hash = crate::plan::fnv_hex(self.system_prompt.as_bytes());
        }
        // The policy keeps its history (cooldown, hysteresis) under the new thresholds.
        self.compaction
            .reconfigure(config.compaction.clone())
            .map_err(|e| crate::ConfigError::Invalid(format!("compaction: {e}")))?;
        *self.config = config;
        Ok(())
    }

    /// The token counter every count of this session is made with.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// The current turn number (0 before the first turn).
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// Whether a turn is in progress.
    pub fn in_turn(&self) -> bool {
        self.turn_state.is_some()
    }

    /// The system prompt placed first in every context.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The efforts and where each one is (open, active, expanded, in working memory, evicted).
    pub fn efforts(&self) -> &Efforts {
        &self.efforts
    }

    /// The ambient log (messages exchanged while no effort was active).
    pub fn ambient(&self) -> &Ambient {
        &self.ambient
    }

    /// The pins and the activation of the candidates.
    pub fn pins(&self) -> &Pins {
        &self.pins
    }

    /// The attachments, by id and by log.
    pub fn attachments(&self) -> &Attachments {
        &self.attachments
    }

    /// The compaction state: the policy, the rolling summary and the moved items.
    pub fn compaction(&self) -> &Compaction {
        &self.compaction
    }

    /// The record of past turns: metrics points and telemetry.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Recall's state: the index of every stored text and its embeddings (the `recall` tool
    /// is [`Session::recall`]).
    pub fn recall_state(&self) -> &Recall {
        &self.recall
    }

    /// What opening this session had to repair, one sentence each; empty for a session
    /// created in memory or opened from consistent records. A store's load also lists these
    /// in its [`crate::persistence::LoadReport`].
    pub fn repairs_on_open(&self) -> &[String] {
        &self.repairs_on_open
    }

    /// Total stored messages (ambient and every effort's log).
    pub fn stored_message_count(&self) -> usize {
        self.next_seq as usize
    }

    /// Tokens of everything stored: the naive baseline that keeps every message in context.
    pub fn naive_tokens(&self) -> u64 {
        u64::from(self.system_tokens) + self.ambient.tokens() + self.efforts.placement.raw_total
    }
}

impl Session {
    /// The session-wide state the exported document and the stored header share: read here,
    /// and only here, from the parts that own it.
    pub fn state(&self) -> SessionState {
        let placement = &self.efforts.placement;
        SessionState {
            counted_with: self.counter.name().to_string(),
            config: (*self.config).clone(),
            turn: self.turn,
            next_seq: self.next_seq,
            next_concluded_seq: placement.next_concluded_seq,
            active: self.efforts.active_id().map(str::to_string),
            open: self
                .efforts
                .open_ids()
                .into_iter()
                .map(str::to_string)
                .collect(),
            decay: placement.decay.clone(),
            auto_collapsed_at: self
                .efforts
                .auto_collapsed_at
                .iter()
                .map(|(&i, &t)| (self.efforts.at(i).id.clone(), t))
                .collect(),
            pins: self.pins.all().to_vec(),
            next_pin_id: self.pins.next_id(),
            activation: self.pins.activation().clone(),
            next_attachment: self.attachments.next_id(),
            rolling: self.compaction.rolling_summary().cloned(),
            compacted: self.compaction.compacted_items().clone(),
            compaction_state: self.compaction.policy().state().clone(),
            branch: self.branch.clone(),
        }
    }

    /// Puts a stored state into a session whose efforts are already in place (an import or a
    /// store's load): where the efforts are, the counters, decay, pins, the branch and the
    /// compaction state. Written once for both readers; they differ only in what a problem
    /// means: `problem` returns an error to refuse (an import) or records it and lets the
    /// repair below go on (a store's load, which must not lock anyone out of their session).
    pub(crate) fn install_state(
        &mut self,
        state: SessionState,
        problem: &mut dyn FnMut(String) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        self.turn = state.turn;
        self.next_seq = state.next_seq;
        let mut placement = Placement {
            next_concluded_seq: state.next_concluded_seq,
            decay: state.decay,
            ..Placement::default()
        };
        for id in &state.open {
            match self.efforts.index.get(id) {
                Some(&i) if self.efforts.at(i).status == EffortStatus::Open => {
                    if placement.open.contains(&i) {
                        problem(format!("effort '{id}' is listed as open twice"))?;
                    } else {
                        placement.open.push(i);
                    }
                }
                Some(_) => problem(format!("effort '{id}' is listed as open but is not open"))?,
                None => problem(format!("the open list names unknown effort '{id}'"))?,
            }
        }
        for (i, effort) in self.efforts.all().iter().enumerate() {
            if effort.status == EffortStatus::Open && !placement.open.contains(&i) {
                problem(format!(
                    "effort '{}' is open but missing from the open list",
                    effort.id
                ))?;
                placement.open.push(i);
            }
        }
        if let Some(id) = &state.active {
            match self.efforts.index.get(id) {
                Some(i) if placement.open.contains(i) => placement.active = Some(*i),
                _ => problem(format!("the active effort '{id}' is not an open effort"))?,
            }
        }
        // Routing needs an active effort while efforts are open (slice 2): without one, the
        // person's messages would go to the ambient log beside open efforts. Records that name
        // none (an older export, a hand-edited document, a wrong id) get the most recently
        // opened effort, the one the person was most likely working on, and the repair is
        // reported rather than refused: the records themselves are intact.
        if placement.active.is_none() {
            if let Some(&last_opened) = placement.open.last() {
                placement.active = Some(last_opened);
                self.repairs_on_open.push(format!(
                    "{} open effort(s) but none was active; '{}', the most recently opened, is now active",
                    placement.open.len(),
                    self.efforts.at(last_opened).id
                ));
            }
        }
        self.efforts.placement = placement;
        for index in 0..self.efforts.len() {
            self.efforts.placement.raw_total += self.efforts.at(index).raw_tokens;
            if self.efforts.at(index).status == EffortStatus::Concluded {
                self.efforts.place_concluded(index);
            }
        }
        for (id, turn) in state.auto_collapsed_at {
            match self.efforts.index.get(&id) {
                Some(&i) if self.efforts.at(i).status == EffortStatus::Concluded => {
                    self.efforts.auto_collapsed_at.insert(i, turn);
                }
                _ => problem(format!(
                    "the decay record names '{id}', which is not a concluded effort"
                ))?,
            }
        }
        // Decay keeps counting what it keeps out of context, so the resident total follows the
        // efforts that are still decayed.
        self.efforts.placement.decay.decayed_resident_tokens = self
            .efforts
            .auto_collapsed_at
            .keys()
            .map(|&i| self.efforts.at(i).raw_minus_summary_tokens())
            .sum();
        self.pins.restore(
            state.next_pin_id,
            state.pins,
            state.activation,
            &mut *problem,
        )?;
        self.branch = state.branch;
        self.attachments.restore_next_id(state.next_attachment);
        self.compaction
            .restore(
                state.rolling,
                state.compacted,
                self.config.compaction.clone(),
                state.compaction_state,
            )
            .map_err(|e| SnapshotError::Inconsistent(format!("compaction: {e}")))?;
        Ok(())
    }
}
