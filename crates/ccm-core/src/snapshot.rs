//! The whole session as one versioned JSON document.
//!
//! Export and import round-trip exactly, except for expansions, which are transient by design:
//! an imported session starts with nothing expanded. A document that is not valid, of another
//! format or version, or inconsistent with the session model is refused with a precise error
//! and nothing is half-imported.

use crate::components::{Ambient, History};
use crate::config::Config;
use crate::error::SnapshotError;
use crate::metrics::{DecayStats, TurnMetrics};
use crate::model::{Effort, EffortStatus, Message, Role};
use crate::prompt;
use crate::session::Session;
use crate::state::{layout_with_state, state_of_layout, SessionState};
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
    pub attachments: Vec<crate::compaction::SessionAttachment>,
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
        default = "crate::state::BranchInfo::main",
        skip_serializing_if = "crate::state::BranchInfo::is_main"
    )]
    pub branch: crate::state::BranchInfo,
    /// What an export from damaged storage had to repair, one sentence each (records that
    /// could not be read, placeholders put in their place); empty for every clean export. An
    /// import carries the session, not this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

fn first_pin_id() -> u64 {
    1
}

/// The bulk records of a document: what its [`SessionState`] does not hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocumentRecords {
    /// Every effort in opening order, with its full raw log.
    pub efforts: Vec<Effort>,
    /// The full ambient log.
    pub ambient: Vec<Message>,
    /// The per-turn metrics.
    pub history: Vec<TurnMetrics>,
    /// Every attachment, with its full text.
    pub attachments: Vec<crate::compaction::SessionAttachment>,
    /// What an export from damaged storage had to repair (see [`SessionDocument::repairs`]).
    pub repairs: Vec<String>,
}

impl SessionDocument {
    /// The document of a state and its records, in this version's layout.
    pub fn assemble(state: SessionState, records: DocumentRecords) -> SessionDocument {
        layout_with_state!(
            SessionDocument {
                format: FORMAT.to_string(),
                version: VERSION,
                efforts: records.efforts,
                ambient: records.ambient,
                history: records.history,
                attachments: records.attachments,
                repairs: records.repairs,
            },
            state
        )
    }

    /// The document's state and records (its format and version are the reader's to check).
    pub fn into_parts(self) -> (SessionState, DocumentRecords) {
        let records = DocumentRecords {
            efforts: self.efforts,
            ambient: self.ambient,
            history: self.history,
            attachments: self.attachments,
            repairs: self.repairs,
        };
        (state_of_layout!(self), records)
    }
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
        Ok(SessionDocument::assemble(
            self.state(),
            DocumentRecords {
                efforts: self.efforts.all().to_vec(),
                ambient: self.ambient.messages().to_vec(),
                history: self.history.points().to_vec(),
                attachments: self.attachments.by_id().values().cloned().collect(),
                repairs: Vec::new(),
            },
        ))
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
        let (state, records) = document.into_parts();
        let mut session = Session::with_counter(state.config.clone(), counter)?;
        let recount = state.counted_with != session.counter.name();

        let mut seqs = BTreeSet::new();
        let mut check_message = |m: &Message, owner: &str| {
            if m.seq >= state.next_seq {
                return Err(SnapshotError::Inconsistent(format!(
                    "message {} in {owner} is not below next_seq {}",
                    m.seq, state.next_seq
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
            if m.turn > state.turn {
                return Err(SnapshotError::Inconsistent(format!(
                    "message {} in {owner} is from turn {}, after the session's turn {}",
                    m.seq, m.turn, state.turn
                )));
            }
            Ok(())
        };

        let mut efforts = records.efforts;
        for effort in &efforts {
            if effort.id.is_empty() || text::slugify(&effort.id) != effort.id {
                return inconsistent(format!("effort id {:?} is not a valid id", effort.id));
            }
            for m in &effort.messages {
                check_message(m, &format!("effort '{}'", effort.id))?;
            }
        }
        for m in &records.ambient {
            check_message(m, "the ambient log")?;
        }
        if seqs.len() as u64 != state.next_seq {
            // Gaps would mean messages were lost: refuse rather than hide it.
            return inconsistent(format!(
                "{} messages stored but next_seq is {}; messages are missing",
                seqs.len(),
                state.next_seq
            ));
        }

        let counter = session.counter.clone();
        let mut concluded_seqs = BTreeSet::new();
        for (index, effort) in efforts.iter_mut().enumerate() {
            if session
                .efforts
                .index
                .insert(effort.id.clone(), index)
                .is_some()
            {
                return inconsistent(format!("effort id '{}' appears twice", effort.id));
            }
            if effort.last_referenced_turn > state.turn {
                return inconsistent(format!(
                    "effort '{}' was referenced in turn {}, after the session's turn {}",
                    effort.id, effort.last_referenced_turn, state.turn
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
                    if seq >= state.next_concluded_seq {
                        return inconsistent(format!(
                            "effort '{}' has conclusion number {seq}, not below {}",
                            effort.id, state.next_concluded_seq
                        ));
                    }
                    if !concluded_seqs.insert(seq) {
                        return inconsistent(format!("conclusion number {seq} appears twice"));
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
        let mut ambient = records.ambient;
        if recount {
            for m in &mut ambient {
                m.tokens = counter.count(&m.content);
            }
        }
        *session.ambient = Ambient::whole(ambient);
        session.efforts.set_all(efforts);
        session.history = History::whole(records.history);
        // A document is refused at its first problem: nothing is half-imported.
        session.install_state(state, &mut |message| {
            Err(SnapshotError::Inconsistent(message))
        })?;
        session.restore_attachments(records.attachments)?;
        // A document holds everything the session stores, so its count is exact.
        session.stored.chars = session.count_loaded_records();
        // A document holds every message: the recall index is built from it at once.
        session.index_messages_in_memory(0);
        Ok(session)
    }
}
