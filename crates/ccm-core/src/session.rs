//! The session: efforts, the ambient log, the turn counter and every effort operation.
//!
//! A session only ever appends messages and changes which tier an item is in. Decay, eviction
//! and windowing move items out of the working set; nothing here removes a stored message.

use crate::components::ambient::Ambient;
use crate::components::attachments::Attachments;
use crate::components::compaction::Compaction;
use crate::components::efforts::{Efforts, Placement};
use crate::components::history::History;
use crate::components::pins::Pins;
use crate::components::saves::Saves;
use crate::config::Config;
use crate::error::{EffortError, SnapshotError, TurnError};
use crate::metrics::{DecayStats, EffortEvent, EventKind, TurnMetrics};
use crate::model::{Effort, EffortStatus, LogState, Message, Role, Summary, SummarySource};
use crate::prompt;
use crate::state::SessionState;
use crate::text::{self, PreparedText};
use crate::tokens::TokenCounter;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

pub use crate::components::efforts::Expansion;

/// The open turn: what `end_turn` needs to route messages and what `abort_turn` needs to undo.
#[derive(Debug, Clone)]
pub(crate) struct TurnState {
    pub(crate) user_text: String,
    pub(crate) user_tokens: u32,
    pub(crate) at_ms: u64,
    /// The effort that was active when the turn began.
    pub(crate) active_before: Option<usize>,
    /// Efforts opened during this turn, in order.
    pub(crate) opened: Vec<usize>,
    /// Banners of the operations executed so far in this turn.
    pub(crate) banners: Vec<String>,
    /// Events of this turn, for the metrics point.
    pub(crate) events: Vec<EffortEvent>,
    /// Efforts named by a tool in this turn (expand, search results, …): references.
    pub(crate) touched: BTreeSet<usize>,
    /// What `abort_turn` restores.
    pub(crate) undo: Undo,
    /// Set once `end_turn` has stored the exchange: the user text is no longer pending.
    pub(crate) stored: bool,
    /// Requests recorded by the engine in this turn.
    pub(crate) requests: Vec<crate::telemetry::RequestRecord>,
    /// Tool calls of this turn.
    pub(crate) tools: Vec<crate::telemetry::ToolTrace>,
    /// Compactions applied in this turn.
    pub(crate) compactions: Vec<crate::compaction::CompactionRecord>,
}

impl TurnState {
    /// Records an attachment's mode before its first change in the turn.
    pub(crate) fn undo_attachment_mode(
        &mut self,
        id: &str,
        mode: crate::compaction::AttachmentMode,
    ) {
        self.undo
            .attachment_modes
            .entry(id.to_string())
            .or_insert(mode);
    }

    /// Records the compaction state before its first change in the turn.
    pub(crate) fn undo_compaction(
        &mut self,
        policy: &crate::compaction::CompactionPolicy,
        rolling: &Option<crate::compaction::RollingSummary>,
        compacted: &BTreeMap<String, crate::compaction::MoveReason>,
    ) {
        if self.undo.compaction.is_none() {
            self.undo.compaction = Some((policy.clone(), rolling.clone(), compacted.clone()));
        }
    }
}

/// The state before a turn, recorded lazily: the small parts whole (where the efforts are,
/// the pins, a few counters), effort records only when an operation is about to change them,
/// and the parts that grow with the history (the auto-collapse record, attachment modes, the
/// compaction state) as the changes made to them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Undo {
    efforts_len: usize,
    efforts: BTreeMap<usize, Effort>,
    placement: Placement,
    auto_collapsed_added: Vec<usize>,
    auto_collapsed_removed: Vec<(usize, u64)>,
    pins: Pins,
    ambient_tokens: u64,
    next_seq: u64,
    history_len: usize,
    next_attachment: u64,
    attachment_modes: BTreeMap<String, crate::compaction::AttachmentMode>,
    #[allow(clippy::type_complexity)]
    compaction: Option<(
        crate::compaction::CompactionPolicy,
        Option<crate::compaction::RollingSummary>,
        BTreeMap<String, crate::compaction::MoveReason>,
    )>,
}

/// What rewinding one completed turn needs: the state before it, recorded the same lazy way as
/// an abort's undo record (effort metadata only, never raw logs). Kept for the last
/// [`Session::REWIND_TURNS`] turns, so a branch can be forked at any of them.
#[derive(Debug, Clone)]
pub(crate) struct TurnDelta {
    pub(crate) turn: u64,
    undo: Undo,
}

/// The efforts a turn's messages refer to.
struct TurnReferences {
    /// Every effort referred to: these stay in working memory, and their pins and activation
    /// count the reference.
    all: BTreeSet<usize>,
    /// Those whose reference also brings an evicted summary back into working memory.
    reviving: BTreeSet<usize>,
}

/// What `end_turn` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnReport {
    /// The turn that ended.
    pub turn: u64,
    /// Where the user and assistant messages were stored: an effort id, or `None` for ambient.
    pub routed_to: Option<String>,
    /// Every banner of the turn in order: those of the operations, then those of salience
    /// (auto-collapses).
    pub banners: Vec<String>,
    /// How many of `banners` come from operations; the rest come from salience. A reply shows
    /// operation banners before the model's text and salience banners after it.
    pub operation_banners: usize,
    /// The metrics point of this turn.
    pub metrics: TurnMetrics,
    /// What the turn's requests held and left out, its tool calls, and the diff against the
    /// previous turn.
    pub telemetry: crate::telemetry::TurnTelemetry,
}

/// A conversation under Cognitive Context Management.
///
/// A session is composed of parts that own their fields (`components`): the efforts and
/// where each one is, the ambient log, the pins, the attachments, the compaction state, the
/// history of past turns and what the next save must write. The session coordinates what spans
/// several of them: a turn, an operation, a save.
#[derive(Clone)]
pub struct Session {
    pub(crate) config: Config,
    pub(crate) counter: Arc<dyn TokenCounter>,
    pub(crate) system_prompt: String,
    /// FNV-1a hash of the system prompt, computed when the prompt is set: every plan's recipe
    /// names the prompt by it.
    pub(crate) system_hash: String,
    pub(crate) system_tokens: u32,
    pub(crate) turn: u64,
    pub(crate) next_seq: u64,
    pub(crate) efforts: Efforts,
    pub(crate) ambient: Ambient,
    pub(crate) pins: Pins,
    pub(crate) attachments: Attachments,
    pub(crate) compaction: Compaction,
    pub(crate) history: History<TurnDelta>,
    pub(crate) saves: Saves,
    pub(crate) turn_state: Option<TurnState>,
    /// Banner of the last successful operation, read back by tool dispatch.
    pub(crate) last_banner: Option<String>,
    /// This session's branch.
    pub(crate) branch: crate::state::BranchInfo,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("turn", &self.turn)
            .field("efforts", &self.efforts.list.len())
            .field("ambient_messages", &self.ambient.messages.len())
            .field("active", &self.active_id())
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

/// Where an effort is, as `effort_status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffortState {
    /// Open and receiving the new messages.
    Active,
    /// Open, in context, but not receiving messages.
    Open,
    /// Concluded, with its raw log temporarily in context.
    Expanded,
    /// Concluded; its summary is in working memory.
    Concluded,
    /// Concluded; out of working memory, findable with `search_efforts`.
    Evicted,
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
    /// Matches, best first; at most [`Session::SEARCH_LIMIT`].
    pub results: Vec<SearchHit>,
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
            config,
            counter,
            system_prompt,
            system_hash,
            system_tokens,
            turn: 0,
            next_seq: 0,
            efforts: Efforts::default(),
            ambient: Ambient::default(),
            pins: Pins::default(),
            attachments: Attachments::default(),
            compaction: Compaction::new(
                crate::compaction::CompactionPolicy::new(config_compaction)
                    .map_err(|e| crate::ConfigError::Invalid(e.to_string()))?,
            ),
            history: History::default(),
            saves: Saves::default(),
            turn_state: None,
            last_banner: None,
            branch: crate::state::BranchInfo::main(),
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
        self.compaction.policy = crate::compaction::CompactionPolicy::with_state(
            config.compaction.clone(),
            self.compaction.policy.state().clone(),
        )
        .map_err(|e| crate::ConfigError::Invalid(format!("compaction: {e}")))?;
        self.config = config;
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

    /// Every effort in opening order, evicted ones included.
    pub fn efforts(&self) -> &[Effort] {
        &self.efforts.list
    }

    /// The effort with this id.
    pub fn effort(&self, id: &str) -> Option<&Effort> {
        self.efforts.get(id)
    }

    /// The loaded ambient log (messages exchanged while no effort was active). A session
    /// created in memory or imported from a document has all of it; one opened from a store
    /// has the tail its working set needs ([`Session::ambient_offset`] older ones are stored).
    pub fn ambient(&self) -> &[Message] {
        &self.ambient.messages
    }

    /// How many older ambient messages are stored but not loaded.
    pub fn ambient_offset(&self) -> u64 {
        self.ambient.offset
    }

    /// The active effort's id.
    pub fn active_id(&self) -> Option<&str> {
        self.efforts.active_id()
    }

    /// Ids of the open efforts in opening order.
    pub fn open_ids(&self) -> Vec<&str> {
        self.efforts.open_ids()
    }

    /// Ids of the expanded efforts in expansion order.
    pub fn expanded_ids(&self) -> Vec<&str> {
        self.efforts
            .placement
            .expanded
            .iter()
            .map(|e| self.efforts.list[e.effort].id.as_str())
            .collect()
    }

    /// The expansion record of an effort, if it is expanded.
    pub fn expansion(&self, id: &str) -> Option<&Expansion> {
        let index = *self.efforts.index.get(id)?;
        self.efforts
            .placement
            .expanded
            .iter()
            .find(|e| e.effort == index)
    }

    /// Ids of the concluded efforts whose summaries are in working memory, in conclusion order.
    pub fn summary_ids_in_memory(&self) -> Vec<&str> {
        self.efforts
            .placement
            .in_memory
            .iter()
            .map(|&(_, i)| self.efforts.list[i].id.as_str())
            .collect()
    }

    /// Ids of the evicted efforts, in conclusion order. Walks every effort: meant for views and
    /// tests, not for the per-turn path.
    pub fn evicted_ids(&self) -> Vec<&str> {
        let mut evicted: Vec<&Effort> = self.efforts.list.iter().filter(|e| e.evicted).collect();
        evicted.sort_by_key(|e| e.concluded_seq);
        evicted.into_iter().map(|e| e.id.as_str()).collect()
    }

    /// Per-turn metrics since the session started.
    pub fn history(&self) -> &[TurnMetrics] {
        &self.history.points
    }

    /// How many older metrics points are stored but not loaded.
    pub fn history_offset(&self) -> u64 {
        self.history.offset
    }

    /// The decay statistics of slice 3.
    pub fn decay_stats(&self) -> &DecayStats {
        &self.efforts.placement.decay
    }

    /// Total stored messages (ambient and every effort's log).
    pub fn stored_message_count(&self) -> usize {
        self.next_seq as usize
    }

    /// Tokens of everything stored: the naive baseline that keeps every message in context.
    pub fn naive_tokens(&self) -> u64 {
        u64::from(self.system_tokens) + self.ambient.tokens + self.efforts.placement.raw_total
    }

    // ----- turns -------------------------------------------------------------------------

    /// Begins a turn: increments the turn counter, counts the user's text once, and remembers
    /// which effort is active so `end_turn` can route the exchange.
    ///
    /// # Errors
    /// [`TurnError::AlreadyInTurn`] when the previous turn was not ended.
    pub fn begin_turn(&mut self, user_text: &str, at_ms: u64) -> Result<u64, TurnError> {
        if self.turn_state.is_some() {
            return Err(TurnError::AlreadyInTurn { turn: self.turn });
        }
        let undo = Undo {
            efforts_len: self.efforts.list.len(),
            placement: self.efforts.placement.clone(),
            pins: self.pins.clone(),
            ambient_tokens: self.ambient.tokens,
            next_seq: self.next_seq,
            history_len: self.history.points.len(),
            next_attachment: self.attachments.next_id,
            ..Undo::default()
        };
        self.turn += 1;
        self.turn_state = Some(TurnState {
            user_text: user_text.to_string(),
            user_tokens: self.counter.count(user_text),
            at_ms,
            active_before: self.efforts.placement.active,
            opened: Vec::new(),
            banners: Vec::new(),
            events: Vec::new(),
            touched: BTreeSet::new(),
            undo,
            stored: false,
            requests: Vec::new(),
            tools: Vec::new(),
            compactions: Vec::new(),
        });
        self.note_attachment_references(user_text, self.next_seq);
        self.compact_if_needed(at_ms);
        Ok(self.turn)
    }

    /// Cancels the turn in progress and every effort operation made in it, leaving the session
    /// exactly as it was before `begin_turn`. Returns the user's text so it can be sent again.
    ///
    /// # Errors
    /// [`TurnError::NotInTurn`] without a matching `begin_turn`.
    pub fn abort_turn(&mut self) -> Result<String, TurnError> {
        let state = self.turn_state.take().ok_or(TurnError::NotInTurn)?;
        self.restore(self.turn, state.undo);
        self.last_banner = None;
        Ok(state.user_text)
    }

    /// Rewinds one completed turn (for forking at an earlier turn).
    pub(crate) fn rewind_delta(&mut self, delta: TurnDelta) {
        self.restore(delta.turn, delta.undo);
    }

    /// Puts the session back as it was before `turn` began, from that turn's undo record: its
    /// messages (if it was completed) leave the logs, every changed effort record and the
    /// session-wide state return to their earlier values. Used by `abort_turn` and to rewind
    /// completed turns when forking a branch.
    fn restore(&mut self, turn: u64, undo: Undo) {
        // Messages stored by the turn sit at the ends of their logs.
        while self.ambient.messages.last().is_some_and(|m| m.turn >= turn) {
            self.ambient.messages.pop();
        }
        for effort in &mut self.efforts.list {
            while effort.messages.last().is_some_and(|m| m.turn >= turn) {
                effort.messages.pop();
            }
        }
        // Efforts opened in the turn go again (their messages, if any, just left with it).
        while self.efforts.list.len() > undo.efforts_len {
            let index = self.efforts.list.len() - 1;
            let effort = self.efforts.list.pop().expect("length checked");
            self.saves.dirty_efforts.remove(&index);
            self.efforts.search.remove(index, &effort);
            self.efforts.index.remove(&effort.id);
        }
        for (index, before) in undo.efforts {
            if index >= self.efforts.list.len() {
                continue;
            }
            self.efforts.search.remove(index, &self.efforts.list[index]);
            // The log may have been loaded during the turn; loading changes no state the
            // turn could have to undo, so the loaded messages stay.
            let messages = std::mem::take(&mut self.efforts.list[index].messages);
            let log = self.efforts.list[index].log;
            self.efforts.list[index] = Effort {
                messages,
                log,
                ..before
            };
            if self.efforts.list[index].status == EffortStatus::Concluded {
                self.efforts.search.insert(index, &self.efforts.list[index]);
            }
        }
        for index in undo.auto_collapsed_added {
            self.efforts.auto_collapsed_at.remove(&index);
        }
        for (index, collapsed_turn) in undo.auto_collapsed_removed {
            self.efforts.auto_collapsed_at.insert(index, collapsed_turn);
        }
        self.efforts.placement = undo.placement;
        self.pins = undo.pins;
        self.ambient.tokens = undo.ambient_tokens;
        self.next_seq = undo.next_seq;
        self.history.points.truncate(undo.history_len);
        self.history.telemetry.retain(|t| t.turn < turn);
        // Attachments of the rewound turn go with it; modes changed in it come back.
        for id in self.attachments.remove_from(undo.next_seq) {
            self.saves.dirty_attachments.remove(&id);
        }
        self.attachments.pending.clear();
        self.attachments.next_id = undo.next_attachment;
        for (id, mode) in undo.attachment_modes {
            if let Some(stored) = self.attachments.by_id.get_mut(&id) {
                stored.attachment.set_mode(mode);
            }
        }
        if let Some((policy, rolling, compacted)) = undo.compaction {
            self.compaction.policy = policy;
            self.compaction.rolling = rolling;
            self.compaction.compacted = compacted;
        }
        self.saves.telemetry_saved = self.saves.telemetry_saved.min(self.history.telemetry.len());
        self.saves.history_saved = self.saves.history_saved.min(self.history.points.len());
        self.saves
            .unsaved_messages
            .retain(|&(log, position)| match log {
                Some(index) => {
                    index < self.efforts.list.len()
                        && position < self.efforts.list[index].messages.len()
                }
                None => position < self.ambient.messages.len(),
            });
        self.turn = turn - 1;
    }

    /// The one way to change an effort record: it records the undo copy for a turn in progress
    /// and marks the record for the next write batch.
    pub(crate) fn effort_mut(&mut self, index: usize) -> &mut Effort {
        self.backup(index);
        self.saves.dirty_efforts.insert(index);
        &mut self.efforts.list[index]
    }

    /// Records an effort's state before an operation in a turn changes it (first change wins).
    fn backup(&mut self, index: usize) {
        if let Some(state) = &mut self.turn_state {
            if index < state.undo.efforts_len && !state.undo.efforts.contains_key(&index) {
                state
                    .undo
                    .efforts
                    .insert(index, self.efforts.list[index].clone_without_messages());
            }
        }
    }

    /// The user text of the turn in progress and its token count.
    pub fn pending_user_message(&self) -> Option<(&str, u32)> {
        self.turn_state
            .as_ref()
            .filter(|t| !t.stored)
            .map(|t| (t.user_text.as_str(), t.user_tokens))
    }

    /// Ends the turn: stores the user and assistant messages in the right log, updates
    /// references, collapses expanded efforts that went unreferenced for `decay_threshold`
    /// turns, evicts summaries unreferenced for `summary_eviction_threshold` turns, and records
    /// the turn's metrics.
    ///
    /// Routing: the effort opened during the turn (the first, if several), else the effort
    /// active when the turn began, else the ambient log.
    ///
    /// # Errors
    /// [`TurnError::NotInTurn`] without a matching `begin_turn`.
    pub fn end_turn(&mut self, assistant_text: &str, at_ms: u64) -> Result<TurnReport, TurnError> {
        if self.turn_state.is_none() {
            return Err(TurnError::NotInTurn);
        }
        // The plan of the turn's request decides which leases count down and which automatic
        // items were shown; it must be taken before the exchange is stored. When the host
        // recorded the requests it sent (the engine does), their telemetry is already there
        // and the items alone are needed: the plan is not rendered a second time.
        let recorded = self
            .turn_state
            .as_ref()
            .is_some_and(|t| !t.requests.is_empty());
        let request_plan = self.plan(!recorded);
        // The turn state stays in place until the end, so that every change made by routing
        // and salience is recorded in the turn's undo record (which becomes its rewind delta).
        let state = {
            let live = self.turn_state.as_mut().ok_or(TurnError::NotInTurn)?;
            TurnState {
                user_text: live.user_text.clone(),
                user_tokens: live.user_tokens,
                at_ms: live.at_ms,
                active_before: live.active_before,
                opened: live.opened.clone(),
                banners: std::mem::take(&mut live.banners),
                events: std::mem::take(&mut live.events),
                touched: live.touched.clone(),
                undo: Undo::default(),
                stored: true,
                requests: std::mem::take(&mut live.requests),
                tools: std::mem::take(&mut live.tools),
                compactions: Vec::new(),
            }
        };
        let target = route(state.opened.first().copied(), state.active_before);
        let assistant_tokens = self.counter.count(assistant_text);
        let user = self.make_message(
            Role::User,
            state.user_text.clone(),
            state.user_tokens,
            state.at_ms,
        );
        let assistant = self.make_message(
            Role::Assistant,
            assistant_text.to_string(),
            assistant_tokens,
            at_ms,
        );
        match target {
            Some(index) => {
                let added = u64::from(user.tokens) + u64::from(assistant.tokens);
                let effort = self.effort_mut(index);
                effort.messages.push(user);
                effort.messages.push(assistant);
                let end = effort.messages.len();
                self.saves.unsaved_messages.push((Some(index), end - 2));
                self.saves.unsaved_messages.push((Some(index), end - 1));
                let effort = &mut self.efforts.list[index];
                effort.raw_tokens += added;
                self.efforts.placement.raw_total += added;
                if effort.evicted {
                    self.efforts
                        .placement
                        .evicted
                        .grow(added, effort.evicted_over_budget);
                }
            }
            None => {
                for position in self.ambient.push_exchange(user, assistant) {
                    self.saves.unsaved_messages.push((None, position));
                }
            }
        }

        if let Some(live) = self.turn_state.as_mut() {
            live.stored = true;
        }
        if let Some(index) = target {
            if self.efforts.list[index].status == EffortStatus::Concluded {
                self.refresh_log_terms(index);
            }
        }
        let log = match target {
            Some(index) => crate::store::LogRef::Effort(self.efforts.list[index].id.clone()),
            None => crate::store::LogRef::Ambient,
        };
        self.file_pending_attachments(log);
        self.note_attachment_references(assistant_text, self.next_seq.saturating_sub(1));
        let before_salience = self.working_tokens();
        let mut banners = state.banners;
        let operation_banners = banners.len();
        let mut events = state.events;
        let referenced = self.references_of_turn(&state.user_text, assistant_text);
        self.update_salience(&referenced, &state.touched, &mut banners, &mut events);
        self.update_pins_and_activation(&request_plan, &referenced.all);
        self.prune_compacted();
        self.compact_if_needed(at_ms);
        let compactions = self
            .turn_state
            .as_mut()
            .map(|live| std::mem::take(&mut live.compactions))
            .unwrap_or_default();
        if let Some(live) = self.turn_state.as_mut() {
            // Compaction banners of the turn were collected in the live state.
            banners.append(&mut live.banners);
        }
        let mut metrics = self.metrics_point(before_salience, events);
        metrics.compactions = compactions;
        self.history.points.push(metrics.clone());
        let telemetry = self.finish_telemetry(&request_plan, state.requests, state.tools);
        if let Some(finished) = self.turn_state.take() {
            self.history.keep_delta(
                TurnDelta {
                    turn: self.turn,
                    undo: finished.undo,
                },
                Session::REWIND_TURNS,
            );
        }
        Ok(TurnReport {
            turn: self.turn,
            routed_to: target.map(|i| self.efforts.list[i].id.clone()),
            banners,
            operation_banners,
            metrics,
            telemetry,
        })
    }

    fn make_message(&mut self, role: Role, content: String, tokens: u32, at_ms: u64) -> Message {
        let seq = self.next_seq;
        self.next_seq += 1;
        Message {
            seq,
            turn: self.turn,
            role,
            content,
            tokens,
            at_ms,
        }
    }

    /// The efforts the turn's messages refer to: concluded efforts (summaries in working memory
    /// or out of it) under the configured reference rule, and open efforts named by their id.
    /// Computed once per turn and shared by salience, pins and activation.
    fn references_of_turn(&self, user_text: &str, assistant_text: &str) -> TurnReferences {
        let user = PreparedText::new(user_text);
        let assistant = PreparedText::new(assistant_text);
        let detect = |texts: &[PreparedText]| {
            crate::reference::referenced_efforts(
                &self.efforts.search,
                &self.efforts.list,
                self.config.reference_rule,
                self.config.min_keyword_overlap,
                texts,
            )
        };
        let by_user = detect(std::slice::from_ref(&user));
        let mut all = by_user.clone();
        all.extend(detect(std::slice::from_ref(&assistant)));
        for &index in &self.efforts.placement.open {
            let id = &self.efforts.list[index].id;
            if user.mentions_id(id) || assistant.mentions_id(id) {
                all.insert(index);
            }
        }
        // Which references bring a summary back into working memory. Under the seed rule, any
        // (slice 4 tracks references for every concluded effort). Under the distinctive rule,
        // the user's: a long answer touches many words in passing, and an evicted summary
        // should come back because the person asked about it, not because the model rambled.
        let reviving = match self.config.reference_rule {
            crate::config::ReferenceRule::Seed => all.clone(),
            crate::config::ReferenceRule::Distinctive => by_user,
        };
        TurnReferences { all, reviving }
    }

    /// Reference detection, decay and eviction for the turn that just ended.
    fn update_salience(
        &mut self,
        references: &TurnReferences,
        touched: &BTreeSet<usize>,
        banners: &mut Vec<String>,
        events: &mut Vec<EffortEvent>,
    ) {
        let turn = self.turn;
        // A reference keeps a summary in working memory; some bring back one that had left it
        // (see `references_of_turn`).
        for &index in &references.all {
            let effort = &self.efforts.list[index];
            if effort.status != EffortStatus::Concluded {
                continue;
            }
            if effort.evicted {
                if !references.reviving.contains(&index) {
                    continue;
                }
                self.restore_to_memory(index);
            }
            self.effort_mut(index).last_referenced_turn = turn;
        }
        for expansion in &mut self.efforts.placement.expanded {
            let effort = &self.efforts.list[expansion.effort];
            if touched.contains(&expansion.effort) || effort.last_referenced_turn == turn {
                expansion.last_referenced_turn = turn;
            }
        }

        // Decay: expanded efforts unreferenced for the threshold collapse by themselves.
        let threshold = u64::from(self.config.decay_threshold);
        let mut position = 0;
        while position < self.efforts.placement.expanded.len() {
            let expansion = &self.efforts.placement.expanded[position];
            let idle = turn - expansion.last_referenced_turn;
            if idle >= threshold {
                let expansion = self.efforts.placement.expanded.remove(position);
                let effort = &self.efforts.list[expansion.effort];
                banners.push(format!(
                    "--- Auto-collapsed effort: {} (inactive for {} turns) ---",
                    effort.id, idle
                ));
                events.push(EffortEvent::new(
                    EventKind::AutoCollapsed,
                    &effort.id,
                    effort.raw_tokens,
                ));
                self.efforts
                    .placement
                    .decay
                    .record_collapse(turn - expansion.expanded_turn, true);
                self.efforts.placement.decay.decayed_resident_tokens += effort.raw_tokens;
                if self
                    .efforts
                    .auto_collapsed_at
                    .insert(expansion.effort, turn)
                    .is_none()
                {
                    if let Some(state) = &mut self.turn_state {
                        state.undo.auto_collapsed_added.push(expansion.effort);
                    }
                }
            } else {
                position += 1;
            }
        }
        self.efforts.placement.decay.tokens_saved_by_decay +=
            self.efforts.placement.decay.decayed_resident_tokens;
        self.evict_summaries(turn + 1, events);
    }

    /// Takes out of working memory the summaries that must not be in the context of turn
    /// `next_turn`: those not referenced within the last `summary_eviction_threshold` turns (a
    /// summary last referenced in turn T is in the contexts of turns T+1 to T+threshold-1, as
    /// slice 4 words it), then, while the resident summaries hold more tokens than
    /// `summary_token_budget`, the least recently referenced. Expanded efforts stay: their
    /// summary is not in the context, and they decay first.
    fn evict_summaries(&mut self, next_turn: u64, events: &mut Vec<EffortEvent>) {
        let eviction = u64::from(self.config.summary_eviction_threshold);
        let expanded: BTreeSet<usize> = self
            .efforts
            .placement
            .expanded
            .iter()
            .map(|e| e.effort)
            .collect();
        let mut resident: Vec<(u64, u64, usize)> =
            Vec::with_capacity(self.efforts.placement.in_memory.len());
        let mut expired: Vec<usize> = Vec::new();
        for &(seq, index) in &self.efforts.placement.in_memory {
            if expanded.contains(&index) {
                continue;
            }
            let last = self.efforts.list[index].last_referenced_turn;
            if next_turn.saturating_sub(last) >= eviction {
                expired.push(index);
            } else {
                resident.push((last, seq, index));
            }
        }
        for index in expired {
            self.evict(index, false, events);
        }
        let summary_tokens = |efforts: &[Effort], index: usize| {
            efforts[index]
                .summary
                .as_ref()
                .map_or(0, |s| u64::from(s.tokens))
        };
        let mut total: u64 = resident
            .iter()
            .map(|&(_, _, i)| summary_tokens(&self.efforts.list, i))
            .sum();
        let budget = u64::from(self.config.summary_token_budget);
        if total <= budget {
            return;
        }
        // Least recently referenced first; of those, the earliest concluded.
        resident.sort_unstable();
        for (_, _, index) in resident {
            if total <= budget {
                break;
            }
            total -= summary_tokens(&self.efforts.list, index);
            self.evict(index, true, events);
        }
    }

    /// Moves a concluded effort's summary out of working memory (it stays stored and
    /// searchable) and records the event.
    fn evict(&mut self, index: usize, over_budget: bool, events: &mut Vec<EffortEvent>) {
        let key = (
            self.efforts.list[index].concluded_seq.unwrap_or_default(),
            index,
        );
        self.efforts.placement.in_memory.remove(&key);
        let effort = self.effort_mut(index);
        effort.evicted = true;
        effort.evicted_over_budget = over_budget;
        let raw_tokens = effort.raw_tokens;
        self.efforts.placement.evicted.add(raw_tokens, over_budget);
        let effort = &self.efforts.list[index];
        events.push(EffortEvent::new(
            if over_budget {
                EventKind::EvictedOverBudget
            } else {
                EventKind::Evicted
            },
            &effort.id,
            effort.summary.as_ref().map_or(0, |s| u64::from(s.tokens)),
        ));
    }

    /// Leases, ephemeral pins, promotion and activation, after the turn's exchange is stored.
    ///
    /// - A turn-counted lease loses one turn only if its item was in the turn's request.
    /// - A task lease ends when its effort is no longer open.
    /// - An ephemeral pin ends after its one request, unless its target was referenced again,
    ///   which promotes it to a lease once it has been referenced in
    ///   [`crate::pins::PROMOTE_AFTER_REFERENCES`] turns.
    /// - An automatically retrieved item that the user or the model referenced becomes an
    ///   ephemeral pin, so it is there for the next request too.
    /// - Activation decays by a fifth per turn; inclusion adds 1.0, a reference 2.0.
    fn update_pins_and_activation(
        &mut self,
        request_plan: &crate::plan::ContextPlan,
        references: &BTreeSet<usize>,
    ) {
        use crate::pins::{LeaseScope, Pin, PinKind, PinOrigin};
        use crate::plan::InclusionReason;
        // Whether a pin or plan target (`summary:<id>`, `effort:<id>`) names an effort the
        // turn referred to.
        let referenced = |session: &Session, target: &str| -> bool {
            target
                .split_once(':')
                .and_then(|(_, rest)| session.efforts.index.get(rest))
                .is_some_and(|index| references.contains(index))
        };
        let included: BTreeSet<&str> = request_plan
            .included
            .iter()
            .map(|i| i.id.as_str())
            .collect();

        let mut kept: Vec<Pin> = Vec::with_capacity(self.pins.list.len());
        let mut expired: Vec<Pin> = Vec::new();
        for mut pin in std::mem::take(&mut self.pins.list) {
            match (pin.kind, pin.lease.clone()) {
                (PinKind::Sticky, _) => kept.push(pin),
                (PinKind::Leased, Some(LeaseScope::Turns { remaining })) => {
                    let remaining = if included.contains(pin.target.as_str()) {
                        remaining.saturating_sub(1)
                    } else {
                        remaining
                    };
                    if remaining == 0 {
                        expired.push(pin);
                    } else {
                        pin.lease = Some(LeaseScope::Turns { remaining });
                        kept.push(pin);
                    }
                }
                (PinKind::Leased, Some(LeaseScope::Task { effort })) => {
                    if self
                        .effort(&effort)
                        .is_some_and(|e| e.status == EffortStatus::Open)
                    {
                        kept.push(pin);
                    } else {
                        expired.push(pin);
                    }
                }
                (PinKind::Leased, None) => expired.push(pin),
                (PinKind::Ephemeral, _) => {
                    if referenced(self, &pin.target) {
                        pin.references += 1;
                        if pin.references >= crate::pins::PROMOTE_AFTER_REFERENCES {
                            pin.kind = PinKind::Leased;
                            pin.lease = Some(LeaseScope::Turns {
                                remaining: crate::pins::DEFAULT_LEASE_TURNS,
                            });
                        }
                        kept.push(pin);
                    }
                    // An ephemeral pin that was not referenced simply ends: that is its nature,
                    // not an expiry worth reporting.
                }
            }
        }
        self.pins.list = kept;
        self.pins.expired = expired;

        for item in &request_plan.included {
            let automatic = matches!(
                item.reason,
                InclusionReason::AutoRetrieved { .. } | InclusionReason::AutoExpanded { .. }
            );
            // A retrieved summary that was referenced is back in working memory (salience
            // brought it back), where the summary budget governs it; a pin would keep it past
            // that budget.
            let resident = item
                .id
                .strip_prefix("summary:")
                .and_then(|id| self.effort(id))
                .is_some_and(|e| e.status == EffortStatus::Concluded && !e.evicted);
            if automatic
                && !resident
                && self.pin_for(&item.id).is_none()
                && referenced(self, &item.id)
            {
                let pin = Pin {
                    id: self.pins.next_id,
                    target: item.id.clone(),
                    kind: PinKind::Ephemeral,
                    origin: PinOrigin::Auto,
                    lease: None,
                    created_turn: self.turn,
                    references: 1,
                };
                self.pins.next_id += 1;
                self.pins.list.push(pin);
            }
        }

        // Activation: decay, then credit inclusion and references.
        for value in self.pins.activation.values_mut() {
            *value = *value * 4 / 5;
        }
        for item in &request_plan.included {
            if item.id.starts_with("summary:") || item.id.starts_with("effort:") {
                *self.pins.activation.entry(item.id.clone()).or_insert(0) += 1000;
            }
        }
        let mentioned: Vec<String> = self
            .efforts
            .placement
            .in_memory
            .iter()
            .map(|&(_, i)| i)
            .chain(self.efforts.placement.open.iter().copied())
            .filter(|i| {
                self.efforts.list[*i].last_referenced_turn == self.turn || references.contains(i)
            })
            .map(|i| self.efforts.list[i].id.clone())
            .collect();
        for id in mentioned {
            for prefix in ["summary", "effort"] {
                *self
                    .pins
                    .activation
                    .entry(format!("{prefix}:{id}"))
                    .or_insert(0) += 2000;
            }
        }
        self.pins.activation.retain(|_, value| *value >= 50);
    }

    /// Tokens of the working context as it stands: the plan's total, from stored counts.
    /// Cost follows the working set, never the history.
    pub fn working_tokens(&self) -> u64 {
        self.plan(false).totals.context_tokens
    }

    /// Tokens currently loaded by expanded efforts.
    pub fn expansion_tokens(&self) -> u64 {
        self.efforts.expansion_tokens()
    }

    /// The ambient messages in working memory: the last `ambient_window` exchanges, as many of
    /// them as fit `ambient_token_budget` (the newest exchange is always kept, whole).
    pub fn ambient_window(&self) -> &[Message] {
        &self.ambient.messages[self.ambient_window_bounds().1..]
    }

    /// Where the ambient window starts in the loaded ambient log: `(by count, by count and
    /// tokens)`. Messages between the two are among the last `ambient_window` exchanges but left
    /// out for the token budget. An exchange is the messages of one turn; the walk reads at most
    /// `ambient_window` exchanges from the end, so it costs the window, not the log.
    pub(crate) fn ambient_window_bounds(&self) -> (usize, usize) {
        self.ambient
            .window_bounds(self.config.ambient_window, self.config.ambient_token_budget)
    }

    fn metrics_point(&self, context_tokens: u64, events: Vec<EffortEvent>) -> TurnMetrics {
        let expansion_tokens = self.expansion_tokens_of_events(&events);
        let naive = self.naive_tokens();
        TurnMetrics::new(
            self.turn,
            context_tokens,
            expansion_tokens,
            naive,
            self.working_tokens(),
            self.efforts.placement.in_memory.len() as u64
                - self.efforts.placement.expanded.len() as u64,
            self.ambient_window().len() as u64,
            self.expanded_ids().iter().map(|s| s.to_string()).collect(),
            self.efforts.placement.open.len() as u64,
            self.efforts.placement.evicted.count,
            events,
        )
    }

    /// Expansion tokens as they were during the turn: the current expansions plus those that
    /// auto-collapsed at its end (they were in the context the turn was measured with).
    fn expansion_tokens_of_events(&self, events: &[EffortEvent]) -> u64 {
        self.expansion_tokens()
            + events
                .iter()
                .filter(|e| e.kind == EventKind::AutoCollapsed)
                .map(|e| e.tokens)
                .sum::<u64>()
    }

    // ----- effort operations -------------------------------------------------------------

    /// Resolves an effort the way every operation does: by id, by the slug of a name, or the
    /// active effort when `id` is `None`.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`] (with the ids in working memory as a hint) or
    /// [`EffortError::NoActiveEffort`].
    pub fn resolve_effort(&self, id: Option<&str>) -> Result<&Effort, EffortError> {
        let index = match id {
            Some(id) => self.lookup(id)?,
            None => self
                .efforts
                .placement
                .active
                .ok_or(EffortError::NoActiveEffort)?,
        };
        Ok(&self.efforts.list[index])
    }

    /// The effort the turn in progress will be stored in, as `end_turn` will route it: the
    /// first effort opened during the turn, else the effort active when the turn began; `None`
    /// for the ambient log (or outside a turn).
    pub fn routing_target(&self) -> Option<&str> {
        let state = self.turn_state.as_ref()?;
        let index = route(state.opened.first().copied(), state.active_before)?;
        Some(self.efforts.list[index].id.as_str())
    }

    fn lookup(&self, id: &str) -> Result<usize, EffortError> {
        let id = id.trim();
        if let Some(&index) = self.efforts.index.get(id) {
            return Ok(index);
        }
        // Models sometimes pass the name instead of the id; its slug finds the same effort.
        if let Some(&index) = self.efforts.index.get(&text::slugify(id)) {
            return Ok(index);
        }
        let known: Vec<&str> = self
            .open_ids()
            .into_iter()
            .chain(self.summary_ids_in_memory())
            .collect();
        let hint = if known.is_empty() {
            String::new()
        } else {
            format!("; efforts in working memory: {}", known.join(", "))
        };
        Err(EffortError::UnknownEffort {
            id: id.to_string(),
            hint,
        })
    }

    fn state_of(&self, index: usize) -> EffortState {
        let effort = &self.efforts.list[index];
        match effort.status {
            EffortStatus::Open if self.efforts.placement.active == Some(index) => {
                EffortState::Active
            }
            EffortStatus::Open => EffortState::Open,
            EffortStatus::Concluded if self.efforts.is_expanded(index) => EffortState::Expanded,
            EffortStatus::Concluded if effort.evicted => EffortState::Evicted,
            EffortStatus::Concluded => EffortState::Concluded,
        }
    }

    fn record(&mut self, banner: String, event: EffortEvent) {
        self.last_banner = Some(banner.clone());
        if let Some(state) = &mut self.turn_state {
            state.banners.push(banner);
            state.events.push(event);
        } else {
            // Operations outside a turn (setting up a session, the app's manual buttons) are
            // attributed to the last turn's metrics so the token curve still shows them.
            if let Some(last) = self.history.points.last_mut() {
                last.events.push(event);
            }
        }
    }

    fn touch(&mut self, index: usize) {
        let turn = self.turn;
        self.effort_mut(index).last_referenced_turn = turn;
        if let Some(state) = &mut self.turn_state {
            state.touched.insert(index);
        }
    }

    /// Opens a new effort and makes it active. Several efforts may be open at once.
    ///
    /// # Errors
    /// [`EffortError::EmptyName`] when the name has no letter or digit;
    /// [`EffortError::DuplicateId`] when its id is taken.
    pub fn open_effort(
        &mut self,
        name: &str,
        description: Option<&str>,
    ) -> Result<Opened, EffortError> {
        let id = text::slugify(name);
        if id.is_empty() {
            return Err(EffortError::EmptyName {
                name: name.to_string(),
            });
        }
        if let Some(&existing) = self.efforts.index.get(&id) {
            return Err(EffortError::DuplicateId {
                id,
                status: state_word(self.state_of(existing)),
            });
        }
        let name = name.trim().to_string();
        let description = description
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        let header = prompt::effort_header(&id, &name, description.as_deref());
        let header_tokens = self.counter.count(&header);
        let index = self.efforts.list.len();
        self.efforts.list.push(Effort {
            id: id.clone(),
            name,
            description,
            status: EffortStatus::Open,
            opened_turn: self.turn,
            concluded_turn: None,
            concluded_seq: None,
            summary: None,
            messages: Vec::new(),
            header,
            header_tokens,
            raw_tokens: u64::from(header_tokens),
            last_referenced_turn: self.turn,
            evicted: false,
            evicted_over_budget: false,
            log: LogState::Loaded,
        });
        self.efforts.placement.raw_total += u64::from(header_tokens);
        self.saves.dirty_efforts.insert(index);
        self.efforts.index.insert(id.clone(), index);
        self.efforts.placement.open.push(index);
        self.efforts.placement.active = Some(index);
        if let Some(state) = &mut self.turn_state {
            state.opened.push(index);
        }
        self.record(
            format!("--- Started effort: {id} ---"),
            EffortEvent::new(EventKind::Opened, &id, u64::from(header_tokens)),
        );
        Ok(Opened {
            id,
            open_efforts: self.open_ids().into_iter().map(str::to_string).collect(),
        })
    }

    /// Concludes an open effort (the active one when `id` is `None`): its raw log leaves the
    /// context and its summary enters. Without a summary the deterministic extractive summary
    /// is used, and the result says so.
    ///
    /// # Errors
    /// [`EffortError::NoActiveEffort`], [`EffortError::UnknownEffort`],
    /// [`EffortError::WrongState`] when it is not open, [`EffortError::EmptySummary`] when the
    /// given summary is blank. In every error case nothing changes.
    pub fn close_effort(
        &mut self,
        id: Option<&str>,
        summary: Option<&str>,
    ) -> Result<Concluded, EffortError> {
        self.conclude(id, summary, "no summary was provided")
    }

    /// Concludes an effort with the extractive summary because a written one could not be had
    /// (for example the summary request to the model failed). `reason` is shown in the banner,
    /// so the user knows the summary is a fallback.
    ///
    /// # Errors
    /// As [`Session::close_effort`].
    pub fn close_effort_with_fallback(
        &mut self,
        id: Option<&str>,
        reason: &str,
    ) -> Result<Concluded, EffortError> {
        let result = self.conclude(id, None, reason);
        // The engine concludes this way outside `execute_tool`; the trace must still show it.
        let arguments = serde_json::json!({ "id": id, "fallback_reason": reason }).to_string();
        let outcome = match &result {
            Ok(concluded) => serde_json::to_string(concluded).unwrap_or_default(),
            Err(error) => serde_json::json!({ "error": error.to_string() }).to_string(),
        };
        self.trace_tool("close_effort", &arguments, result.is_ok(), &outcome);
        result
    }

    fn conclude(
        &mut self,
        id: Option<&str>,
        summary: Option<&str>,
        fallback_reason: &str,
    ) -> Result<Concluded, EffortError> {
        let index = match id {
            Some(id) => self.lookup(id)?,
            None => self
                .efforts
                .placement
                .active
                .ok_or(EffortError::NoActiveEffort)?,
        };
        let effort = &self.efforts.list[index];
        if effort.status != EffortStatus::Open {
            return Err(EffortError::WrongState {
                operation: "close",
                id: effort.id.clone(),
                reason: "it is already concluded".to_string(),
            });
        }
        let (text, source) = match summary {
            Some(given) if given.trim().is_empty() => {
                return Err(EffortError::EmptySummary {
                    id: effort.id.clone(),
                })
            }
            Some(given) => (given.trim().to_string(), SummarySource::Provided),
            None => (self.extractive_summary_of(index), SummarySource::Extractive),
        };
        let rendered = prompt::summary_line(&effort.id, &text);
        let tokens = self.counter.count(&rendered);
        let terms = self
            .efforts
            .search
            .distinctive_log_terms(effort.messages.iter().map(|m| m.content.as_str()));
        let summary = Summary {
            keywords: text::extract_keywords(&text),
            terms,
            text,
            source,
            rendered,
            tokens,
        };
        let concluded_seq = self.efforts.placement.next_concluded_seq;
        self.efforts.placement.next_concluded_seq += 1;
        let turn = self.turn;
        let effort = self.effort_mut(index);
        effort.status = EffortStatus::Concluded;
        effort.concluded_turn = Some(turn);
        effort.concluded_seq = Some(concluded_seq);
        effort.summary = Some(Arc::new(summary));
        effort.evicted = false;
        let report = Concluded {
            id: effort.id.clone(),
            summary: effort
                .summary
                .as_ref()
                .map(|s| s.text.clone())
                .unwrap_or_default(),
            summary_source: source,
            raw_tokens: effort.raw_tokens,
            summary_tokens: tokens,
            now_active: None,
        };
        self.efforts.placement.open.retain(|&i| i != index);
        if self.efforts.placement.active == Some(index) {
            // While efforts are open, one of them receives the messages (the specification's
            // routing table): the first one still open, as in the original implementation.
            self.efforts.placement.active = self.efforts.placement.open.first().copied();
        }
        let report = Concluded {
            now_active: self.active_id().map(str::to_string),
            ..report
        };
        self.efforts
            .placement
            .in_memory
            .insert((concluded_seq, index));
        self.efforts.search.insert(index, &self.efforts.list[index]);
        self.touch(index);
        let banner = match source {
            SummarySource::Provided => format!(
                "--- Concluded effort: {} ---\n{}",
                report.id, report.summary
            ),
            SummarySource::Extractive => format!(
                "--- Concluded effort: {} ---\n{}\n(extractive summary: {fallback_reason})",
                report.id, report.summary
            ),
        };
        self.record(
            banner,
            EffortEvent::new(EventKind::Concluded, &report.id, report.raw_tokens),
        );
        Ok(report)
    }

    /// Chooses a concluded effort's search terms again, now that its log has grown: the
    /// exchange of the turn that concludes an effort is stored after the conclusion, and what
    /// was said in it must be findable too. The summary itself stays as it was shown.
    fn refresh_log_terms(&mut self, index: usize) {
        if self.efforts.list[index].log != LogState::Loaded {
            return;
        }
        // The effort is taken out of the index first, so its terms are weighed against the
        // other efforts only, as they were at its conclusion.
        self.efforts.search.remove(index, &self.efforts.list[index]);
        let terms = self.efforts.search.distinctive_log_terms(
            self.efforts.list[index]
                .messages
                .iter()
                .map(|m| m.content.as_str()),
        );
        if let Some(summary) = self
            .effort_mut(index)
            .summary
            .as_mut()
            .map(std::sync::Arc::make_mut)
        {
            summary.terms = terms;
        }
        self.efforts.search.insert(index, &self.efforts.list[index]);
    }

    /// The deterministic extractive summary of an effort's raw log (what `close_effort` uses
    /// when no summary is given).
    pub fn extractive_summary_of(&self, index: usize) -> String {
        let effort = &self.efforts.list[index];
        let mut texts: Vec<&str> = Vec::with_capacity(effort.messages.len() + 1);
        if let Some(description) = &effort.description {
            texts.push(description);
        }
        texts.extend(effort.messages.iter().map(|m| m.content.as_str()));
        text::extractive_summary(&effort.name, &texts)
    }

    /// Reopens a concluded effort: it becomes open and active again, with its full raw log in
    /// context. Its last summary is kept on record.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is open.
    pub fn reopen_effort(&mut self, id: &str) -> Result<Reopened, EffortError> {
        let index = self.lookup(id)?;
        let effort = &self.efforts.list[index];
        if effort.status != EffortStatus::Concluded {
            return Err(EffortError::WrongState {
                operation: "reopen",
                id: effort.id.clone(),
                reason: "it is already open".to_string(),
            });
        }
        if effort.log != LogState::Loaded {
            return Err(EffortError::LogNotLoaded {
                id: effort.id.clone(),
                operation: "reopen_effort",
            });
        }
        let key = (effort.concluded_seq.unwrap_or_default(), index);
        if effort.evicted {
            self.forget_eviction(index);
        }
        self.efforts.placement.in_memory.remove(&key);
        self.efforts
            .placement
            .expanded
            .retain(|e| e.effort != index);
        self.forget_decay(index);
        self.efforts.search.remove(index, &self.efforts.list[index]);
        let effort = self.effort_mut(index);
        effort.status = EffortStatus::Open;
        let report = Reopened {
            id: effort.id.clone(),
            raw_tokens: effort.raw_tokens,
        };
        self.efforts.placement.open.push(index);
        self.efforts.placement.active = Some(index);
        self.touch(index);
        self.record(
            format!("--- Reopened effort: {} ---", report.id),
            EffortEvent::new(EventKind::Reopened, &report.id, report.raw_tokens),
        );
        Ok(report)
    }

    fn forget_decay(&mut self, index: usize) {
        if let Some(turn) = self.efforts.auto_collapsed_at.remove(&index) {
            self.efforts.placement.decay.decayed_resident_tokens -=
                self.efforts.list[index].raw_tokens;
            if let Some(state) = &mut self.turn_state {
                state.undo.auto_collapsed_removed.push((index, turn));
            }
        }
    }

    /// Loads a concluded effort's raw log back into the context until it is collapsed or
    /// decays. An evicted effort returns to working memory.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is open or
    /// already expanded.
    pub fn expand_effort(&mut self, id: &str) -> Result<Expanded, EffortError> {
        let index = self.lookup(id)?;
        let effort = &self.efforts.list[index];
        let refuse = |reason: &str| EffortError::WrongState {
            operation: "expand",
            id: effort.id.clone(),
            reason: reason.to_string(),
        };
        if effort.status == EffortStatus::Open {
            return Err(refuse(
                "it is open, and open efforts are already in context",
            ));
        }
        if self.efforts.is_expanded(index) {
            return Err(refuse("it is already expanded"));
        }
        if effort.log != LogState::Loaded {
            return Err(EffortError::LogNotLoaded {
                id: effort.id.clone(),
                operation: "expand_effort",
            });
        }
        self.restore_to_memory(index);
        if let Some(collapsed_at) = self.efforts.auto_collapsed_at.get(&index) {
            if self.turn - collapsed_at <= 2 {
                self.efforts.placement.decay.false_decays += 1;
            }
        }
        self.forget_decay(index);
        self.efforts.placement.expanded.push(Expansion {
            effort: index,
            expanded_turn: self.turn,
            last_referenced_turn: self.turn,
        });
        self.touch(index);
        let effort = &self.efforts.list[index];
        let report = Expanded {
            id: effort.id.clone(),
            tokens_loaded: effort.raw_tokens,
        };
        self.record(
            format!(
                "--- Expanded effort: {} ({} tokens loaded) ---",
                report.id, report.tokens_loaded
            ),
            EffortEvent::new(EventKind::Expanded, &report.id, report.tokens_loaded),
        );
        Ok(report)
    }

    /// Brings an evicted effort's summary back into working memory.
    fn restore_to_memory(&mut self, index: usize) {
        if self.efforts.list[index].evicted {
            self.forget_eviction(index);
            let effort = &self.efforts.list[index];
            self.efforts
                .placement
                .in_memory
                .insert((effort.concluded_seq.unwrap_or_default(), index));
        }
    }

    /// Clears an effort's eviction mark and takes it out of the evicted totals.
    fn forget_eviction(&mut self, index: usize) {
        let effort = self.effort_mut(index);
        let over_budget = effort.evicted_over_budget;
        effort.evicted = false;
        effort.evicted_over_budget = false;
        let tokens = effort.raw_tokens;
        self.efforts.placement.evicted.remove(tokens, over_budget);
    }

    /// Takes an expanded effort's raw log out of the context; its summary stands in again.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is not expanded.
    pub fn collapse_effort(&mut self, id: &str) -> Result<Collapsed, EffortError> {
        let index = self.lookup(id)?;
        let Some(position) = self
            .efforts
            .placement
            .expanded
            .iter()
            .position(|e| e.effort == index)
        else {
            let effort = &self.efforts.list[index];
            let reason = match effort.status {
                EffortStatus::Open => "it is open; only expanded efforts can be collapsed (close_effort concludes an open one)",
                EffortStatus::Concluded => "it is not expanded",
            };
            return Err(EffortError::WrongState {
                operation: "collapse",
                id: effort.id.clone(),
                reason: reason.to_string(),
            });
        };
        let expansion = self.efforts.placement.expanded.remove(position);
        self.efforts
            .placement
            .decay
            .record_collapse(self.turn - expansion.expanded_turn, false);
        let effort = &self.efforts.list[index];
        let report = Collapsed {
            id: effort.id.clone(),
            tokens_freed: effort.raw_tokens,
        };
        self.record(
            format!("--- Collapsed effort: {} (back to summary) ---", report.id),
            EffortEvent::new(EventKind::Collapsed, &report.id, report.tokens_freed),
        );
        Ok(report)
    }

    /// Makes another open effort the active one; both raw logs stay in context.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is concluded or
    /// already active.
    pub fn switch_effort(&mut self, id: &str) -> Result<Switched, EffortError> {
        let index = self.lookup(id)?;
        let effort = &self.efforts.list[index];
        let reason = match (effort.status, self.efforts.placement.active == Some(index)) {
            (EffortStatus::Concluded, _) => {
                Some("it is concluded; reopen_effort continues it, expand_effort shows its log")
            }
            (EffortStatus::Open, true) => Some("it is already the active effort"),
            (EffortStatus::Open, false) => None,
        };
        if let Some(reason) = reason {
            return Err(EffortError::WrongState {
                operation: "switch to",
                id: effort.id.clone(),
                reason: reason.to_string(),
            });
        }
        let previous = self.active_id().map(str::to_string);
        self.efforts.placement.active = Some(index);
        self.touch(index);
        let id = self.efforts.list[index].id.clone();
        self.record(
            format!("--- Switched to effort: {id} ---"),
            EffortEvent::new(EventKind::Switched, &id, 0),
        );
        Ok(Switched { id, previous })
    }

    /// Where every effort in working memory is, with token sizes and expansion cost.
    pub fn effort_status(&self) -> StatusReport {
        let decay = u64::from(self.config.decay_threshold);
        let eviction = u64::from(self.config.summary_eviction_threshold);
        let entry = |index: usize| {
            let effort = &self.efforts.list[index];
            let state = self.state_of(index);
            let expansion = self
                .efforts
                .placement
                .expanded
                .iter()
                .find(|e| e.effort == index);
            EffortStatusEntry {
                id: effort.id.clone(),
                name: effort.name.clone(),
                state,
                raw_tokens: effort.raw_tokens,
                summary_tokens: effort.summary.as_ref().map(|s| s.tokens),
                turns_until_auto_collapse: expansion
                    .map(|e| (e.last_referenced_turn + decay).saturating_sub(self.turn)),
                turns_until_eviction: (state == EffortState::Concluded)
                    .then(|| (effort.last_referenced_turn + eviction).saturating_sub(self.turn)),
            }
        };
        let mut efforts: Vec<EffortStatusEntry> = self
            .efforts
            .placement
            .open
            .iter()
            .map(|&i| entry(i))
            .collect();
        efforts.extend(
            self.efforts
                .placement
                .expanded
                .iter()
                .map(|e| entry(e.effort)),
        );
        efforts.extend(
            self.efforts
                .placement
                .in_memory
                .iter()
                .filter(|(_, i)| !self.efforts.is_expanded(*i))
                .map(|&(_, i)| entry(i)),
        );
        StatusReport {
            turn: self.turn,
            active: self.active_id().map(str::to_string),
            efforts,
            evicted_count: self.efforts.placement.evicted.count,
            expansion_tokens: self.expansion_tokens(),
        }
    }

    /// Searches every concluded effort, evicted ones included, by keyword relevance. Each hit
    /// counts as a reference: an evicted hit returns to working memory.
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word.
    pub fn search_efforts(&mut self, query: &str) -> Result<SearchResults, EffortError> {
        let found = self.find_efforts(query)?;
        for hit in &found.results {
            // A hit on what the effort is about is a reference to it; a hit only on words said
            // in its log is shown, but does not bring it back into working memory.
            if hit.about {
                let index = self.efforts.index[&hit.id];
                self.restore_to_memory(index);
                self.touch(index);
            }
        }
        Ok(found)
    }

    /// The ranking of [`Session::search_efforts`] without its effects: nothing counts as
    /// referenced and nothing returns to working memory. For views that let a person look
    /// through past efforts, and for measuring recall.
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word.
    pub fn find_efforts(&self, query: &str) -> Result<SearchResults, EffortError> {
        let ranked = self
            .efforts
            .search
            .search(query, &self.efforts.index, Session::SEARCH_LIMIT)
            .ok_or_else(|| EffortError::EmptyQuery {
                query: query.to_string(),
            })?;
        let results = ranked
            .into_iter()
            .map(|hit| {
                let effort = &self.efforts.list[hit.effort];
                SearchHit {
                    id: effort.id.clone(),
                    name: effort.name.clone(),
                    state: self.state_of(hit.effort),
                    summary: effort
                        .summary
                        .as_ref()
                        .map(|s| s.text.clone())
                        .unwrap_or_default(),
                    score: hit.score,
                    matched: hit.matched,
                    about: hit.described,
                    raw_tokens: effort.raw_tokens,
                }
            })
            .collect();
        Ok(SearchResults {
            query: query.to_string(),
            results,
        })
    }
}

/// Where a turn's exchange is stored: the first effort the turn opened (the exchange that opens
/// an effort states its problem, so it belongs to it), else the effort that was active when the
/// turn began, else the ambient log (`None`).
fn route(first_opened: Option<usize>, active_before: Option<usize>) -> Option<usize> {
    first_opened.or(active_before)
}

fn state_word(state: EffortState) -> &'static str {
    match state {
        EffortState::Active => "open and active",
        EffortState::Open => "open",
        EffortState::Expanded => "concluded and expanded",
        EffortState::Concluded => "concluded",
        EffortState::Evicted => "concluded, out of working memory",
    }
}

impl Session {
    /// The session-wide state the exported document and the stored header share: read here,
    /// and only here, from the parts that own it.
    pub fn state(&self) -> SessionState {
        let placement = &self.efforts.placement;
        SessionState {
            counted_with: self.counter.name().to_string(),
            config: self.config.clone(),
            turn: self.turn,
            next_seq: self.next_seq,
            next_concluded_seq: placement.next_concluded_seq,
            active: self.active_id().map(str::to_string),
            open: self.open_ids().into_iter().map(str::to_string).collect(),
            decay: placement.decay.clone(),
            auto_collapsed_at: self
                .efforts
                .auto_collapsed_at
                .iter()
                .map(|(&i, &t)| (self.efforts.list[i].id.clone(), t))
                .collect(),
            pins: self.pins.list.clone(),
            next_pin_id: self.pins.next_id,
            activation: self.pins.activation.clone(),
            next_attachment: self.attachments.next_id,
            rolling: self.compaction.rolling.clone(),
            compacted: self.compaction.compacted.clone(),
            compaction_state: self.compaction.policy.state().clone(),
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
                Some(&i) if self.efforts.list[i].status == EffortStatus::Open => {
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
        for (i, effort) in self.efforts.list.iter().enumerate() {
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
                _ => problem(format!(
                    "the active effort '{id}' is not an open effort; no effort is active"
                ))?,
            }
        }
        self.efforts.placement = placement;
        for index in 0..self.efforts.list.len() {
            self.efforts.placement.raw_total += self.efforts.list[index].raw_tokens;
            if self.efforts.list[index].status == EffortStatus::Concluded {
                self.efforts.place_concluded(index);
            }
        }
        for (id, turn) in state.auto_collapsed_at {
            match self.efforts.index.get(&id) {
                Some(&i) if self.efforts.list[i].status == EffortStatus::Concluded => {
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
            .map(|&i| self.efforts.list[i].raw_tokens)
            .sum();
        self.pins.next_id = state.next_pin_id.max(1);
        for pin in state.pins {
            if pin.id >= self.pins.next_id {
                problem(format!(
                    "pin {} is not below next_pin_id {}",
                    pin.id, self.pins.next_id
                ))?;
                self.pins.next_id = pin.id + 1;
            }
            self.pins.list.push(pin);
        }
        self.pins.activation = state.activation;
        self.branch = state.branch;
        self.attachments.next_id = state.next_attachment.max(1);
        self.compaction.rolling = state.rolling;
        self.compaction.compacted = state.compacted;
        self.compaction.policy = crate::compaction::CompactionPolicy::with_state(
            self.config.compaction.clone(),
            state.compaction_state,
        )
        .map_err(|e| SnapshotError::Inconsistent(format!("compaction: {e}")))?;
        Ok(())
    }
}
