//! The whole session as one versioned JSON document.
//!
//! Export and import round-trip exactly, except for expansions, which are transient by design:
//! an imported session starts with nothing expanded. A document that is not valid, of another
//! format or version, or inconsistent with the session model is refused with a precise error
//! and nothing is half-imported.

use crate::config::Config;
use crate::error::SnapshotError;
use crate::metrics::{DecayStats, TurnMetrics};
use crate::model::{Effort, EffortStatus, Message, Role};
use crate::prompt;
use crate::search::SearchIndex;
use crate::session::Session;
use crate::text;
use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The `format` field of every session document.
pub const FORMAT: &str = "ccm-session";
/// The version this build writes and reads.
pub const VERSION: u64 = 1;

/// The serialised form of a session (version 1). It holds the conversation and every piece of
/// state that decides the context; request telemetry is diagnostic and stays with the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionDocument {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] when written by this build.
    pub version: u64,
    /// Name of the counting rule the stored counts were made with (e.g. `o200k_base`).
    pub counted_with: String,
    /// The configuration.
    pub config: Config,
    /// Turns completed (or begun, when exported mid-turn).
    pub turn: u64,
    /// Next message sequence number.
    pub next_seq: u64,
    /// Next conclusion sequence number.
    pub next_concluded_seq: u64,
    /// The active effort's id.
    pub active: Option<String>,
    /// Open efforts' ids in opening order.
    pub open: Vec<String>,
    /// Every effort in opening order, with its full raw log.
    pub efforts: Vec<Effort>,
    /// The full ambient log.
    pub ambient: Vec<Message>,
    /// Decay statistics.
    pub decay: DecayStats,
    /// Turn of the last auto-collapse of each effort not expanded again since.
    pub auto_collapsed_at: BTreeMap<String, u64>,
    /// The per-turn metrics.
    pub history: Vec<TurnMetrics>,
    /// Pins in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<crate::pins::Pin>,
    /// Next pin number.
    #[serde(default = "first_pin_id")]
    pub next_pin_id: u64,
    /// Activation scores by candidate id (thousandths).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub activation: BTreeMap<String, u32>,
    /// Every attachment, with its full text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::compact::SessionAttachment>,
    /// Next attachment number.
    #[serde(default = "first_pin_id")]
    pub next_attachment: u64,
    /// The rolling summary of the last level-3 compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling: Option<crate::compaction::RollingSummary>,
    /// Working-set items compaction moved out, with why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub compacted: BTreeMap<String, crate::compaction::MoveReason>,
    /// The compaction policy's state (last compaction, hysteresis mark, last decision).
    #[serde(default)]
    pub compaction_state: crate::compaction::PolicyState,
    /// The session's branch: its name and, for a fork, its parent and fork turn.
    #[serde(
        default = "crate::branch::BranchInfo::main",
        skip_serializing_if = "crate::branch::BranchInfo::is_main"
    )]
    pub branch: crate::branch::BranchInfo,
}

fn first_pin_id() -> u64 {
    1
}

impl Session {
    /// The session as a versioned document. A turn in progress is not part of it: its user
    /// message has not been stored yet.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] when the session was opened from a store and is only
    /// partly loaded (export it from the store instead).
    pub fn to_document(&self) -> Result<SessionDocument, SnapshotError> {
        self.ensure_fully_loaded()?;
        Ok(SessionDocument {
            format: FORMAT.to_string(),
            version: VERSION,
            counted_with: self.counter.name().to_string(),
            config: self.config.clone(),
            turn: self.turn,
            next_seq: self.next_seq,
            next_concluded_seq: self.next_concluded_seq,
            active: self.active_id().map(str::to_string),
            open: self.open_ids().into_iter().map(str::to_string).collect(),
            efforts: self.efforts.clone(),
            ambient: self.ambient.clone(),
            decay: self.decay.clone(),
            auto_collapsed_at: self
                .auto_collapsed_at
                .iter()
                .map(|(&i, &t)| (self.efforts[i].id.clone(), t))
                .collect(),
            history: self.history.clone(),
            pins: self.pins.clone(),
            next_pin_id: self.next_pin_id,
            activation: self.activation.clone(),
            attachments: self.attachments.values().cloned().collect(),
            next_attachment: self.next_attachment,
            rolling: self.rolling.clone(),
            compacted: self.compacted.clone(),
            compaction_state: self.compaction.state().clone(),
            branch: self.branch.clone(),
        })
    }

    /// The session as versioned JSON.
    ///
    /// # Errors
    /// As [`Session::to_document`].
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        let document = self.to_document()?;
        Ok(serde_json::to_string(&document).expect("session documents are serialisable"))
    }

    /// Restores a session from versioned JSON, counting with `counter`. Stored token counts are
    /// kept when they were made with the same counting rule and recomputed otherwise.
    ///
    /// # Errors
    /// [`SnapshotError`] for invalid JSON, another format or version, an invalid
    /// configuration, or a document that breaks an invariant (duplicate ids or sequence
    /// numbers, an active effort that is not open, token totals that do not add up, …).
    pub fn from_json_with_counter(
        json: &str,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Session, SnapshotError> {
        // Check format and version before the full shape, so a newer document gets the version
        // error rather than a confusing field error.
        let header: serde_json::Value =
            serde_json::from_str(json).map_err(|e| SnapshotError::Malformed(e.to_string()))?;
        let format = header.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != FORMAT {
            return Err(SnapshotError::WrongFormat {
                found: format.to_string(),
                expected: FORMAT,
            });
        }
        match header.get("version").and_then(|v| v.as_u64()) {
            Some(VERSION) => {}
            Some(found) => {
                return Err(SnapshotError::UnsupportedVersion {
                    found,
                    supported: VERSION,
                })
            }
            None => {
                return Err(SnapshotError::Malformed(
                    "missing or non-integer field `version`".to_string(),
                ))
            }
        }
        let document: SessionDocument =
            serde_json::from_value(header).map_err(|e| SnapshotError::Malformed(e.to_string()))?;
        Session::from_document(document, counter)
    }

    /// Restores a session from versioned JSON with exact token counts.
    ///
    /// # Errors
    /// See [`Session::from_json_with_counter`]; also [`SnapshotError::Config`] when the
    /// encoding's rank table is neither compiled in nor installed.
    pub fn from_json(json: &str) -> Result<Session, SnapshotError> {
        let encoding = serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| {
                v.get("config")?
                    .get("encoding")?
                    .as_str()
                    .map(str::to_string)
            })
            .and_then(|name| crate::tokens::Encoding::from_name(&name).ok())
            .unwrap_or(crate::tokens::Encoding::O200kBase);
        Session::from_json_with_counter(json, crate::tokens::exact_counter(encoding)?)
    }

    /// Restores a session from a parsed document. See [`Session::from_json_with_counter`].
    ///
    /// # Errors
    /// See [`Session::from_json_with_counter`].
    pub fn from_document(
        document: SessionDocument,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Session, SnapshotError> {
        let inconsistent = |message: String| Err(SnapshotError::Inconsistent(message));
        let mut session = Session::with_counter(document.config, counter)?;
        let recount = document.counted_with != session.counter.name();

        let mut seqs = BTreeSet::new();
        let mut check_message = |m: &Message, owner: &str| {
            if m.seq >= document.next_seq {
                return Err(SnapshotError::Inconsistent(format!(
                    "message {} in {owner} is not below next_seq {}",
                    m.seq, document.next_seq
                )));
            }
            if !seqs.insert(m.seq) {
                return Err(SnapshotError::Inconsistent(format!(
                    "message sequence number {} appears twice",
                    m.seq
                )));
            }
            if m.role == Role::System {
                return Err(SnapshotError::Inconsistent(format!("message {} in {owner} has role system; raw logs hold user and assistant messages", m.seq)));
            }
            if m.turn > document.turn {
                return Err(SnapshotError::Inconsistent(format!(
                    "message {} in {owner} is from turn {}, after the session's turn {}",
                    m.seq, m.turn, document.turn
                )));
            }
            Ok(())
        };

        let mut efforts = document.efforts;
        for effort in &efforts {
            if effort.id.is_empty() || text::slugify(&effort.id) != effort.id {
                return inconsistent(format!("effort id {:?} is not a valid id", effort.id));
            }
            for m in &effort.messages {
                check_message(m, &format!("effort '{}'", effort.id))?;
            }
        }
        for m in &document.ambient {
            check_message(m, "the ambient log")?;
        }
        if seqs.len() as u64 != document.next_seq {
            // Gaps would mean messages were lost: refuse rather than hide it.
            return inconsistent(format!(
                "{} messages stored but next_seq is {}; messages are missing",
                seqs.len(),
                document.next_seq
            ));
        }

        let counter = session.counter.clone();
        for (index, effort) in efforts.iter_mut().enumerate() {
            if session.index.insert(effort.id.clone(), index).is_some() {
                return inconsistent(format!("effort id '{}' appears twice", effort.id));
            }
            if effort.last_referenced_turn > document.turn {
                return inconsistent(format!(
                    "effort '{}' was referenced in turn {}, after the session's turn {}",
                    effort.id, effort.last_referenced_turn, document.turn
                ));
            }
            // Derived fields are rebuilt rather than trusted, so a hand-edited document cannot
            // make the context disagree with the stored text.
            effort.header =
                prompt::effort_header(&effort.id, &effort.name, effort.description.as_deref());
            if recount {
                effort.header_tokens = counter.count(&effort.header);
                for m in &mut effort.messages {
                    m.tokens = counter.count(&m.content);
                }
            }
            let raw: u64 = u64::from(effort.header_tokens)
                + effort
                    .messages
                    .iter()
                    .map(|m| u64::from(m.tokens))
                    .sum::<u64>();
            if !recount && raw != effort.raw_tokens {
                return inconsistent(format!(
                    "effort '{}' records {} raw tokens but its header and messages add up to {raw}",
                    effort.id, effort.raw_tokens
                ));
            }
            effort.raw_tokens = raw;
            match (
                effort.status,
                effort.summary.as_mut().map(std::sync::Arc::make_mut),
                effort.concluded_seq,
            ) {
                (EffortStatus::Concluded, Some(summary), Some(seq)) => {
                    if summary.text.trim().is_empty() {
                        return inconsistent(format!(
                            "concluded effort '{}' has an empty summary",
                            effort.id
                        ));
                    }
                    if seq >= document.next_concluded_seq {
                        return inconsistent(format!(
                            "effort '{}' has conclusion number {seq}, not below {}",
                            effort.id, document.next_concluded_seq
                        ));
                    }
                    summary.rendered = prompt::summary_line(&effort.id, &summary.text);
                    summary.keywords = text::extract_keywords(&summary.text);
                    if recount {
                        summary.tokens = counter.count(&summary.rendered);
                    }
                }
                (EffortStatus::Concluded, _, _) => {
                    return inconsistent(format!(
                        "concluded effort '{}' lacks its summary or conclusion number",
                        effort.id
                    ));
                }
                (EffortStatus::Open, _, _) if effort.evicted => {
                    return inconsistent(format!("open effort '{}' is marked evicted", effort.id));
                }
                (EffortStatus::Open, _, _) => {}
            }
            if effort.evicted_over_budget && !effort.evicted {
                return inconsistent(format!(
                    "effort '{}' is marked evicted over budget but not evicted",
                    effort.id
                ));
            }
        }
        let mut ambient = document.ambient;
        if recount {
            for m in &mut ambient {
                m.tokens = counter.count(&m.content);
            }
        }

        let mut open = Vec::with_capacity(document.open.len());
        for id in &document.open {
            match session.index.get(id) {
                Some(&i) if efforts[i].status == EffortStatus::Open && !open.contains(&i) => {
                    open.push(i)
                }
                Some(_) => {
                    return inconsistent(format!(
                        "effort '{id}' is listed as open twice or is not open"
                    ))
                }
                None => return inconsistent(format!("open list names unknown effort '{id}'")),
            }
        }
        let open_count = efforts
            .iter()
            .filter(|e| e.status == EffortStatus::Open)
            .count();
        if open_count != open.len() {
            return inconsistent(format!(
                "{open_count} efforts are open but the open list has {}",
                open.len()
            ));
        }
        let active = match &document.active {
            None => None,
            Some(id) => match session.index.get(id) {
                Some(&i) if open.contains(&i) => Some(i),
                _ => return inconsistent(format!("active effort '{id}' is not an open effort")),
            },
        };
        let mut concluded_seqs = BTreeSet::new();
        for (index, effort) in efforts.iter().enumerate() {
            if let (EffortStatus::Concluded, Some(seq)) = (effort.status, effort.concluded_seq) {
                if !concluded_seqs.insert(seq) {
                    return inconsistent(format!("conclusion number {seq} appears twice"));
                }
                if effort.evicted {
                    session.evicted_count += 1;
                    session.evicted_tokens += effort.raw_tokens;
                    if effort.evicted_over_budget {
                        session.budget_evicted_count += 1;
                        session.budget_evicted_tokens += effort.raw_tokens;
                    }
                } else {
                    session.in_memory.insert((seq, index));
                }
            }
            session.effort_raw_total += effort.raw_tokens;
        }
        let mut auto_collapsed_at = BTreeMap::new();
        for (id, turn) in &document.auto_collapsed_at {
            match session.index.get(id) {
                Some(&i) if efforts[i].status == EffortStatus::Concluded => {
                    auto_collapsed_at.insert(i, *turn);
                }
                _ => {
                    return inconsistent(format!(
                        "decay record names '{id}', which is not a concluded effort"
                    ))
                }
            }
        }

        let mut search = SearchIndex::default();
        for (index, effort) in efforts.iter().enumerate() {
            if effort.status == EffortStatus::Concluded {
                search.insert(index, effort);
            }
        }
        session.ambient_tokens = ambient.iter().map(|m| u64::from(m.tokens)).sum();
        session.turn = document.turn;
        session.next_seq = document.next_seq;
        session.next_concluded_seq = document.next_concluded_seq;
        session.efforts = efforts;
        session.ambient = ambient;
        session.open = open;
        session.active = active;
        session.search = search;
        session.decay = document.decay;
        // Decay keeps counting what it keeps out of context, so the resident total follows the
        // efforts that are still decayed.
        session.decay.decayed_resident_tokens = auto_collapsed_at
            .keys()
            .map(|&i| session.efforts[i].raw_tokens)
            .sum();
        session.auto_collapsed_at = auto_collapsed_at;
        session.history = document.history;
        session.next_pin_id = document.next_pin_id.max(1);
        for pin in document.pins {
            if pin.id >= session.next_pin_id {
                return inconsistent(format!(
                    "pin {} is not below next_pin_id {}",
                    pin.id, session.next_pin_id
                ));
            }
            session.pins.push(pin);
        }
        session.activation = document.activation;
        session.branch = document.branch;
        session.restore_compaction_state(
            document.attachments,
            document.next_attachment,
            document.rolling,
            document.compacted,
            document.compaction_state,
        )?;
        Ok(session)
    }
}
