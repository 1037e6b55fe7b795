//! The persistence layout, without I/O: what a storage backend writes after a turn and what it
//! reads to open a session.
//!
//! A session is stored as records, so that cost follows change rather than history:
//!
//! - one [`SessionHeader`] (turn counters, configuration, the open list, running totals),
//! - one [`EffortRecord`] per effort (its metadata and summary, never its messages),
//! - one [`StoredMessage`] per message, keyed by its sequence number, tagged with its log,
//! - one [`TurnMetrics`] per turn.
//!
//! After a turn, [`Session::write_batch`] gives only what changed: the header, the effort
//! records that changed, the new messages and the new metrics points. A backend writes the
//! batch in one transaction and then calls [`Session::mark_saved`]. To open a session, a backend
//! reads the header, asks [`SessionHeader::load_request`] what else the working set needs (the
//! effort records, the open efforts' logs, the ambient tail, the recent metrics) and hands it
//! to [`Session::from_store`]. Raw logs of concluded efforts are read when an effort is
//! expanded or reopened ([`crate::tools::logs_needed`], [`Session::attach_effort_log`]).
//!
//! Architecture invariant: a record that cannot be read never stops a session from opening and
//! is never silently dropped: [`Session::from_store`] repairs what it can and lists every
//! problem in its [`LoadReport`].

use crate::components::saves::Saves;
use crate::components::{Ambient, History};
use crate::config::Config;
use crate::error::{SnapshotError, TurnError};
use crate::metrics::{DecayStats, TurnMetrics};
use crate::model::{Effort, EffortStatus, LogState, Message, Role};
use crate::prompt;
use crate::session::Session;
use crate::snapshot::SessionDocument;
use crate::state::{layout_with_state, state_of_layout, SessionState};
use crate::text;
use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Version of the record layout. Backends keep it with their schema so that a layout change
/// can be migrated.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// Metrics points loaded with a session: enough for the token curve's recent window; older
/// points stay stored.
pub const HISTORY_TAIL: u64 = 500;

pub use crate::model::LogRef;

/// The per-session record: everything but efforts, messages and metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// [`RECORD_SCHEMA_VERSION`] of the writer.
    pub schema: u32,
    /// Increases by one with every write batch; a backend refuses a batch whose base is not
    /// the stored revision (another tab wrote first).
    pub revision: u64,
    /// The counting rule of every stored count.
    pub counted_with: String,
    /// The configuration.
    pub config: Config,
    /// Turns completed.
    pub turn: u64,
    /// Next message sequence number (also the number of stored messages).
    pub next_seq: u64,
    /// Next conclusion sequence number.
    pub next_concluded_seq: u64,
    /// The active effort's id.
    pub active: Option<String>,
    /// Open efforts in opening order.
    pub open: Vec<String>,
    /// Decay statistics.
    pub decay: DecayStats,
    /// Turn of the last auto-collapse of each effort not expanded again since.
    pub auto_collapsed_at: BTreeMap<String, u64>,
    /// Stored ambient messages.
    pub ambient_messages: u64,
    /// Tokens of every stored ambient message.
    pub ambient_tokens: u64,
    /// Stored metrics points (one per turn).
    pub history_len: u64,
    /// Stored efforts.
    pub effort_count: u64,
    /// Pins in creation order.
    #[serde(default)]
    pub pins: Vec<crate::pins::Pin>,
    /// Next pin number.
    #[serde(default)]
    pub next_pin_id: u64,
    /// Activation scores by candidate id (thousandths).
    #[serde(default)]
    pub activation: BTreeMap<String, u32>,
    /// Next attachment number.
    #[serde(default)]
    pub next_attachment: u64,
    /// The rolling summary of the last level-3 compaction.
    #[serde(default)]
    pub rolling: Option<crate::compaction::RollingSummary>,
    /// Working-set items compaction moved out, with why.
    #[serde(default)]
    pub compacted: BTreeMap<String, crate::compaction::MoveReason>,
    /// The compaction policy's state.
    #[serde(default)]
    pub compaction_state: crate::compaction::PolicyState,
    /// The session's branch.
    #[serde(default = "crate::state::BranchInfo::main")]
    pub branch: crate::state::BranchInfo,
    /// What the session stores, counted as its export would write it, once that passes
    /// [`RECORDED_FROM_CHARS`](crate::compaction::RECORDED_FROM_CHARS); left out (0) below it,
    /// so that the headers of ordinary sessions stay as they were. It is how a session opened
    /// from its working set knows how much more it may store without reading its history.
    #[serde(default, skip_serializing_if = "crate::session::is_unrecorded")]
    pub stored_chars: u64,
}

/// An effort's record: its metadata, summary and the size of its log, without the messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffortRecord {
    /// Position of the effort in opening order (0-based); the record's key with the session.
    pub position: u64,
    /// How many messages its raw log has.
    pub message_count: u64,
    /// The effort, with `messages` empty.
    pub effort: Effort,
}

/// A message record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The log it belongs to.
    pub log: LogRef,
    /// The message; `message.seq` is its key with the session.
    pub message: Message,
}

/// What one save writes: only what changed since the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteBatch {
    /// The stored revision this batch builds on (0 for a session never saved).
    pub base_revision: u64,
    /// The new header (its `revision` is `base_revision + 1`).
    pub header: SessionHeader,
    /// Effort records that changed or are new, in opening order.
    pub efforts: Vec<EffortRecord>,
    /// Messages stored since the last save, in sequence order.
    pub messages: Vec<StoredMessage>,
    /// Metrics points recorded since the last save, in turn order.
    pub metrics: Vec<TurnMetrics>,
    /// Telemetry of the turns since the last save, in turn order.
    #[serde(default)]
    pub telemetry: Vec<crate::telemetry::TurnTelemetry>,
    /// Attachments added or changed (mode, references) since the last save.
    #[serde(default)]
    pub attachments: Vec<crate::compaction::SessionAttachment>,
}

impl WriteBatch {
    /// Records written by this batch, the header included: a measure of what a save costs.
    pub fn record_count(&self) -> usize {
        1 + self.efforts.len()
            + self.messages.len()
            + self.metrics.len()
            + self.telemetry.len()
            + self.attachments.len()
    }
}

/// What a backend must read, after the header, to open a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadRequest {
    /// Ids of the efforts whose raw logs must be loaded (the open ones).
    pub effort_logs: Vec<String>,
    /// How many of the newest ambient messages to read.
    pub ambient_tail: u64,
    /// How many of the newest metrics points to read.
    pub history_tail: u64,
}

/// What a header records about the bulk records it does not hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Stored ambient messages.
    pub ambient_messages: u64,
    /// Tokens of every stored ambient message.
    pub ambient_tokens: u64,
    /// Stored metrics points (one per turn).
    pub history_len: u64,
    /// Stored efforts.
    pub effort_count: u64,
    /// What the session stores, as [`SessionHeader::stored_chars`] records it (0: not
    /// recorded).
    pub stored_chars: u64,
}

impl SessionHeader {
    /// The header of a state at `revision`, in this schema's layout.
    pub fn assemble(state: SessionState, revision: u64, counts: RecordCounts) -> SessionHeader {
        layout_with_state!(
            SessionHeader {
                schema: RECORD_SCHEMA_VERSION,
                revision,
                ambient_messages: counts.ambient_messages,
                ambient_tokens: counts.ambient_tokens,
                history_len: counts.history_len,
                effort_count: counts.effort_count,
                stored_chars: counts.stored_chars,
            },
            state
        )
    }

    /// The header's state, revision and counts (its schema is the reader's to check).
    pub fn into_parts(self) -> (SessionState, u64, RecordCounts) {
        let counts = RecordCounts {
            ambient_messages: self.ambient_messages,
            ambient_tokens: self.ambient_tokens,
            history_len: self.history_len,
            effort_count: self.effort_count,
            stored_chars: self.stored_chars,
        };
        (state_of_layout!(self), self.revision, counts)
    }
}

impl SessionHeader {
    /// What the working set of this session needs besides the header and the effort records.
    pub fn load_request(&self) -> LoadRequest {
        LoadRequest {
            effort_logs: self.open.clone(),
            ambient_tail: (u64::from(self.config.ambient_window) * 2).min(self.ambient_messages),
            history_tail: HISTORY_TAIL.min(self.history_len),
        }
    }
}

/// Everything a backend read to open a session.
#[derive(Debug, Clone, Default)]
pub struct LoadedRecords {
    /// The header, if it could be read.
    pub header: Option<SessionHeader>,
    /// The effort records that could be read (any order).
    pub efforts: Vec<EffortRecord>,
    /// The raw logs asked for, by effort id, each in sequence order.
    pub effort_logs: BTreeMap<String, Vec<Message>>,
    /// The newest ambient messages, in sequence order.
    pub ambient_tail: Vec<Message>,
    /// The newest metrics points, in turn order.
    pub history_tail: Vec<TurnMetrics>,
    /// Records the backend could not decode, each described for the user.
    pub unreadable: Vec<String>,
    /// The attachment records (every one: they are few next to messages, and each knows
    /// whether its message is in the working set).
    pub attachments: Vec<crate::compaction::SessionAttachment>,
    /// How many message records each log holds in storage, where the backend counted them
    /// (a count of index keys, no message is read). With it a load reports messages that are
    /// missing from logs it does not read: older ambient messages and concluded efforts' logs.
    pub log_sizes: Option<BTreeMap<LogRef, u64>>,
}

/// What opening a session had to repair or skip. Empty when everything was read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoadReport {
    /// One sentence per problem, written for the user.
    pub problems: Vec<String>,
}

impl LoadReport {
    /// Whether everything was read intact.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The record of `effort` at `position`; `saves` adds the messages its stored log is known
/// to miss, so the record goes on describing them.
fn effort_record(saves: &Saves, position: u64, effort: &Effort) -> EffortRecord {
    let missing = saves.missing_messages.get(&effort.id).copied().unwrap_or(0);
    EffortRecord {
        position,
        message_count: effort.message_count() + missing,
        effort: effort.clone_without_messages(),
    }
}

impl Session {
    /// The revision of the last save (0 if never saved).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The header record of the current state.
    pub fn header(&self) -> SessionHeader {
        SessionHeader::assemble(
            self.state(),
            self.revision + 1,
            RecordCounts {
                ambient_messages: self.ambient.stored(),
                ambient_tokens: self.ambient.tokens(),
                history_len: self.history.stored_points(),
                // Every position in use, held ones included, so that a backend that reads
                // positions up to this count keeps reading (and reporting) the held records.
                effort_count: (self.efforts.len() + self.saves.held_positions.len()) as u64,
                stored_chars: self.recorded_stored_chars(),
            },
        )
    }

    /// What changed since the last save. The session is not changed: call
    /// [`Session::mark_saved`] once the batch is stored, so a failed write can be retried.
    ///
    /// # Errors
    /// [`TurnError::AlreadyInTurn`] during a turn: its operations may still be aborted, so
    /// only whole turns are saved.
    pub fn write_batch(&self) -> Result<WriteBatch, TurnError> {
        if self.in_turn() {
            return Err(TurnError::AlreadyInTurn { turn: self.turn });
        }
        let messages = self
            .saves
            .unsaved_messages
            .iter()
            .map(|&(log, position)| match log {
                Some(index) => StoredMessage {
                    log: LogRef::Effort(self.efforts.at(index).id.clone()),
                    message: self.efforts.at(index).messages[position].clone(),
                },
                None => StoredMessage {
                    log: LogRef::Ambient,
                    message: self.ambient.messages()[position].clone(),
                },
            })
            .collect();
        Ok(WriteBatch {
            base_revision: self.revision,
            header: self.header(),
            efforts: self
                .saves
                .dirty_efforts
                .iter()
                .map(|&i| {
                    effort_record(
                        &self.saves,
                        self.saves.effort_position(i),
                        self.efforts.at(i),
                    )
                })
                .collect(),
            messages,
            metrics: self.history.points()[self.saves.history_saved..].to_vec(),
            telemetry: self.history.telemetry()[self.saves.telemetry_saved..].to_vec(),
            attachments: self
                .saves
                .dirty_attachments
                .iter()
                .filter_map(|id| self.attachments.by_id().get(id))
                .filter(|a| a.log.is_some())
                .cloned()
                .collect(),
        })
    }

    /// Every record of the session, as one batch: for a first save, an import, or a backend
    /// change. Requires every raw log to be loaded.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] when a log or older messages are not loaded;
    /// [`SnapshotError::Malformed`] during a turn.
    pub fn full_write_batch(&self) -> Result<WriteBatch, SnapshotError> {
        if self.in_turn() {
            return Err(SnapshotError::Malformed(
                "a turn is in progress; save between turns".to_string(),
            ));
        }
        self.ensure_fully_loaded()?;
        let mut messages: Vec<StoredMessage> = self
            .ambient
            .messages()
            .iter()
            .map(|m| StoredMessage {
                log: LogRef::Ambient,
                message: m.clone(),
            })
            .collect();
        for effort in self.efforts.all() {
            messages.extend(effort.messages.iter().map(|m| StoredMessage {
                log: LogRef::Effort(effort.id.clone()),
                message: m.clone(),
            }));
        }
        messages.sort_by_key(|m| m.message.seq);
        Ok(WriteBatch {
            base_revision: self.revision,
            header: self.header(),
            efforts: self
                .efforts
                .all()
                .iter()
                .enumerate()
                .map(|(i, e)| effort_record(&self.saves, self.saves.effort_position(i), e))
                .collect(),
            messages,
            metrics: self.history.points().to_vec(),
            telemetry: self.history.telemetry().to_vec(),
            attachments: self.attachments.by_id().values().cloned().collect(),
        })
    }

    /// Records that `batch` was stored: its changes are no longer pending.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] when the batch is not the session's pending one (its
    /// revision does not follow the session's).
    pub fn mark_saved(&mut self, batch: &WriteBatch) -> Result<(), SnapshotError> {
        if batch.base_revision != self.revision {
            return Err(SnapshotError::Inconsistent(format!(
                "batch builds on revision {} but the session is at revision {}",
                batch.base_revision, self.revision
            )));
        }
        self.revision = batch.header.revision;
        // Only what the batch held is saved: a change made while the batch was being written
        // (another turn, a changed effort record) stays pending for the next save.
        let written: BTreeMap<u64, &EffortRecord> =
            batch.efforts.iter().map(|r| (r.position, r)).collect();
        let efforts = self.efforts.all();
        let saves = &self.saves;
        let saved: Vec<usize> = saves
            .dirty_efforts
            .iter()
            .copied()
            .filter(|&index| {
                let position = saves.effort_position(index);
                written.get(&position).is_some_and(|record| {
                    index < efforts.len()
                        && effort_record(saves, position, &efforts[index]) == **record
                })
            })
            .collect();
        for index in saved {
            self.saves.dirty_efforts.remove(&index);
        }
        let saved_seqs: BTreeSet<u64> = batch.messages.iter().map(|m| m.message.seq).collect();
        let efforts = self.efforts.all();
        let ambient = self.ambient.messages();
        self.saves.unsaved_messages.retain(|&(log, position)| {
            let seq = match log {
                Some(index) => efforts[index].messages[position].seq,
                None => ambient[position].seq,
            };
            !saved_seqs.contains(&seq)
        });
        let history_saved = self.saves.history_saved + batch.metrics.len();
        // A point amended between turns while the batch was written stays pending.
        let amended = batch
            .metrics
            .last()
            .is_some_and(|written| self.history.points().get(history_saved - 1) != Some(written));
        self.saves.history_saved =
            (history_saved - usize::from(amended)).min(self.history.points().len());
        self.saves.telemetry_saved = (self.saves.telemetry_saved + batch.telemetry.len())
            .min(self.history.telemetry().len());
        for attachment in &batch.attachments {
            let id = &attachment.attachment.id;
            if self.attachments.by_id().get(id) == Some(attachment) {
                self.saves.dirty_attachments.remove(id);
            }
        }
        Ok(())
    }

    /// Whether every raw log and every stored message and metrics point is in memory.
    pub fn is_fully_loaded(&self) -> bool {
        self.ambient.offset() == 0
            && self.history.offset() == 0
            && self.efforts.all().iter().all(|e| e.log == LogState::Loaded)
    }

    pub(crate) fn ensure_fully_loaded(&self) -> Result<(), SnapshotError> {
        if self.is_fully_loaded() {
            return Ok(());
        }
        let missing: Vec<&str> = self
            .efforts
            .all()
            .iter()
            .filter(|e| e.log != LogState::Loaded)
            .map(|e| e.id.as_str())
            .collect();
        Err(SnapshotError::Inconsistent(format!(
            "the session is only partly loaded ({} older ambient messages, {} older metrics points, raw logs of {:?} not in memory); export it from its store, which reads every record",
            self.ambient.offset(), self.history.offset(), missing
        )))
    }

    /// Attaches a raw log read from the store to an effort whose log was not loaded. A log
    /// shorter than the effort's record says (messages missing from storage) is attached as
    /// it is, so the readable messages show, and the returned sentences say what is missing;
    /// the missing records are not written over.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] for an unknown effort, a log out of sequence order, or
    /// one with more messages or other token totals than its record (nothing is attached then).
    pub fn attach_effort_log(
        &mut self,
        id: &str,
        messages: Vec<Message>,
    ) -> Result<Vec<String>, SnapshotError> {
        let index = *self.efforts.index.get(id).ok_or_else(|| {
            SnapshotError::Inconsistent(format!("no effort with id '{id}' to attach a log to"))
        })?;
        let effort = self.efforts.at(index);
        let LogState::NotLoaded { messages: expected } = effort.log else {
            return Ok(Vec::new());
        };
        let tokens: u64 = u64::from(effort.header_tokens)
            + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        let found = messages.len() as u64;
        let short = found < expected;
        if found > expected || (!short && tokens != effort.raw_tokens) {
            return Err(SnapshotError::Inconsistent(format!(
                "the stored log of '{id}' has {} messages and {tokens} tokens, but its record says {expected} messages and {} tokens",
                messages.len(),
                effort.raw_tokens
            )));
        }
        if messages.windows(2).any(|w| w[0].seq >= w[1].seq) {
            return Err(SnapshotError::Inconsistent(format!(
                "the stored log of '{id}' is not in sequence order"
            )));
        }
        let mut problems = Vec::new();
        if short {
            problems.push(format!(
                "effort '{id}' (\"{}\", {}): {} of its {expected} messages are missing from storage; the {found} readable ones are shown",
                effort.name,
                effort_turns(effort),
                expected - found
            ));
        }
        // Loading is not a change of state: no dirty mark, no undo record.
        // The totals follow what is in memory, so the plan never counts tokens it cannot show.
        self.efforts
            .attach_log(index, messages, short.then_some(tokens));
        if short {
            self.saves
                .missing_messages
                .insert(id.to_string(), expected - found);
        }
        Ok(problems)
    }

    /// Opens a session from the records a backend read. Repairs what it can and reports every
    /// problem instead of refusing: an unreadable record must not lock the user out of the rest
    /// of their session.
    ///
    /// # Errors
    /// [`SnapshotError`] only when the header itself is missing or unusable (then there is no
    /// session to open).
    pub fn from_store(
        records: LoadedRecords,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<(Session, LoadReport), SnapshotError> {
        let mut report = LoadReport {
            problems: records.unreadable,
        };
        let log_sizes = records.log_sizes;
        let header = records.header.ok_or_else(|| {
            SnapshotError::Malformed("the session's header record could not be read".to_string())
        })?;
        if header.schema > RECORD_SCHEMA_VERSION {
            return Err(SnapshotError::UnsupportedVersion {
                found: u64::from(header.schema),
                supported: u64::from(RECORD_SCHEMA_VERSION),
            });
        }
        let mut session = Session::with_counter(header.config.clone(), counter)?;
        let recount = header.counted_with != session.counter.name();
        if recount {
            // Stored counts were made with another rule; mixing rules would make totals lie.
            // Recounting needs every message, so the caller must load the session fully.
            return Err(SnapshotError::Inconsistent(format!(
                "the session was counted with {} but this session counts with {}; import its exported document to recount",
                header.counted_with,
                session.counter.name()
            )));
        }

        let (efforts, held_positions) =
            effort_records_in_order(records.efforts, header.effort_count, &mut report.problems);
        session.saves.held_positions = held_positions;
        let mut logs = records.effort_logs;
        for record in efforts {
            let effort = restore_effort(
                record,
                &mut logs,
                header.turn,
                &mut session.saves,
                &mut report.problems,
            );
            session.efforts.add(effort);
        }

        report_missing_attachments(
            &records.attachments,
            header.next_attachment,
            header.turn,
            &mut report.problems,
        );

        let (state, revision, counts) = header.into_parts();
        let ambient = records.ambient_tail;
        if ambient.iter().any(|m| m.role == Role::System)
            || ambient.windows(2).any(|w| w[0].seq >= w[1].seq)
        {
            report
                .problems
                .push("the ambient messages read were out of order or malformed".to_string());
        }
        *session.ambient = Ambient::tail(ambient, counts.ambient_messages, counts.ambient_tokens);
        if let Some(sizes) = &log_sizes {
            report_missing_messages(
                &session,
                counts.ambient_messages,
                sizes,
                &mut report.problems,
            );
        }
        session.history = History::tail(records.history_tail, counts.history_len);
        session.saves.history_saved = session.history.points().len();
        session.revision = revision;
        // A store's load repairs and reports: every problem is noted and the session opens.
        let problems = &mut report.problems;
        if let Err(error) = session.install_state(state, &mut |message| {
            problems.push(message);
            Ok(())
        }) {
            report.problems.push(error.to_string());
        }
        report
            .problems
            .extend(session.repairs_on_open.iter().cloned());
        let mut attachments = records.attachments;
        attachments.retain(|a| match &a.log {
            Some(LogRef::Effort(effort)) if session.efforts().get(effort).is_none() => {
                report.problems.push(format!(
                    "attachment '{}' belongs to an effort that could not be read; it stays stored",
                    a.attachment.id
                ));
                false
            }
            _ => true,
        });
        if let Err(error) = session.restore_attachments(attachments) {
            report.problems.push(error.to_string());
        }
        session.open_stored_size(counts.stored_chars);
        // Opening reads the working set only; the recall index is rebuilt from the stored
        // messages afterwards, in steps the host drives (`recall_index_request`).
        session.start_index_rebuild();
        Ok((session, report))
    }
}

/// `records` in position order with the first record of each effort; a second one is left
/// out (it stays stored) and reported.
fn one_record_per_effort(
    mut records: Vec<EffortRecord>,
    problems: &mut Vec<String>,
) -> Vec<EffortRecord> {
    records.sort_by_key(|r| r.position);
    let mut seen = BTreeSet::new();
    records.retain(|r| {
        let first = seen.insert(r.effort.id.clone());
        if !first {
            problems.push(format!(
                "a second record for effort '{}' (record {}) was left out; it stays stored",
                r.effort.id, r.position
            ));
        }
        first
    });
    records
}

/// The effort records a store read, one per effort and in position order, and the positions
/// that stay held: every position up to the header's count (or beyond, if records say so) is
/// in use, and those not taken in here stay held, so no later save lands on them.
fn effort_records_in_order(
    efforts: Vec<EffortRecord>,
    header_effort_count: u64,
    problems: &mut Vec<String>,
) -> (Vec<EffortRecord>, BTreeSet<u64>) {
    let position_bound = efforts
        .iter()
        .map(|r| r.position + 1)
        .max()
        .unwrap_or(0)
        .max(header_effort_count);
    let efforts = one_record_per_effort(efforts, problems);
    let taken: BTreeSet<u64> = efforts.iter().map(|r| r.position).collect();
    let held: BTreeSet<u64> = (0..position_bound).filter(|p| !taken.contains(p)).collect();
    if efforts.len() as u64 != position_bound {
        let listed: Vec<String> = held.iter().map(u64::to_string).collect();
        problems.push(format!(
            "{} of {} effort records could be read; record {} stays stored as it is and later saves go around it, and the messages of an effort it held stay stored",
            efforts.len(),
            position_bound,
            listed.join(", ")
        ));
    }
    (efforts, held)
}

/// One effort as a store's load takes it in: derived text rebuilt, its log taken from `logs`
/// when read, what cannot be trusted repaired and reported, and the logs known to miss
/// messages noted in `saves`, so the records go on saying so.
fn restore_effort(
    record: EffortRecord,
    logs: &mut BTreeMap<String, Vec<Message>>,
    session_turn: u64,
    saves: &mut Saves,
    problems: &mut Vec<String>,
) -> Effort {
    let mut effort = record.effort;
    if effort.last_referenced_turn > session_turn {
        // Salience counts turns since the last reference; a reference after the session's
        // turn (a damaged header) would make that count negative.
        problems.push(format!(
            "effort '{}' was referenced in turn {}, after the session's turn {}; it counts as referenced now",
            effort.id, effort.last_referenced_turn, session_turn
        ));
        effort.last_referenced_turn = session_turn;
    }
    effort.header = prompt::effort_header(&effort.id, &effort.name, effort.description.as_deref());
    if let Some(summary) = effort.summary.as_mut().map(Arc::make_mut) {
        summary.rendered = prompt::summary_line(&effort.id, &summary.text);
        summary.keywords = text::extract_keywords(&summary.text);
    }
    effort.messages = Vec::new();
    effort.log = LogState::NotLoaded {
        messages: record.message_count,
    };
    if let Some(messages) = logs.remove(&effort.id) {
        let tokens: u64 = u64::from(effort.header_tokens)
            + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        if messages.len() as u64 != record.message_count || tokens != effort.raw_tokens {
            // Say what actually disagrees: "4 of 4 messages could be read" for a record whose
            // token total was changed reads as if nothing were wrong.
            let found = messages.len() as u64;
            problems.push(if found < record.message_count {
                format!(
                    "effort '{}': {found} of {} messages could be read; the context shows the readable ones",
                    effort.id, record.message_count
                )
            } else if found > record.message_count {
                format!(
                    "effort '{}': {found} messages were found where its record lists {}; the context shows all {found}",
                    effort.id, record.message_count
                )
            } else {
                format!(
                    "effort '{}': its record says its log holds {} tokens, but its {found} messages hold {tokens} (the record was changed outside CCM); the totals follow the messages",
                    effort.id, effort.raw_tokens
                )
            });
            // The totals follow what is actually in memory, so the plan never counts tokens
            // it cannot show.
            effort.raw_tokens = tokens;
            let missing = record.message_count.saturating_sub(messages.len() as u64);
            if missing > 0 {
                saves.missing_messages.insert(effort.id.clone(), missing);
            }
        }
        effort.messages = messages;
        effort.log = LogState::Loaded;
    }
    if effort.status == EffortStatus::Open && effort.log != LogState::Loaded {
        effort.messages = Vec::new();
        effort.log = LogState::Loaded;
        effort.raw_tokens = u64::from(effort.header_tokens);
        if record.message_count > 0 {
            saves
                .missing_messages
                .insert(effort.id.clone(), record.message_count);
        }
        problems.push(format!(
            "the log of open effort '{}' could not be read; it continues with an empty log",
            effort.id
        ));
    }
    if effort.status == EffortStatus::Concluded && effort.summary.is_none() {
        problems.push(format!(
            "concluded effort '{}' has no summary; it was reopened so its log stays in context",
            effort.id
        ));
        effort.status = EffortStatus::Open;
    }
    effort
}

impl SessionDocument {
    /// The document of a session whose every record was read: how a backend exports a session
    /// without opening it fully in memory first.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] when the records do not add up (the resulting document
    /// is validated the same way an import is).
    pub fn from_records(
        header: SessionHeader,
        mut efforts: Vec<EffortRecord>,
        messages: Vec<StoredMessage>,
        history: Vec<TurnMetrics>,
    ) -> Result<SessionDocument, SnapshotError> {
        efforts.sort_by_key(|r| r.position);
        let positions: BTreeMap<String, usize> = efforts
            .iter()
            .enumerate()
            .map(|(i, r)| (r.effort.id.clone(), i))
            .collect();
        let mut efforts: Vec<Effort> = efforts.into_iter().map(|r| r.effort).collect();
        let mut ambient = Vec::new();
        let mut messages = messages;
        messages.sort_by_key(|m| m.message.seq);
        for stored in messages {
            match stored.log {
                LogRef::Ambient => ambient.push(stored.message),
                LogRef::Effort(id) => match positions.get(&id) {
                    Some(&i) => efforts[i].messages.push(stored.message),
                    None => {
                        return Err(SnapshotError::Inconsistent(format!(
                            "message {} belongs to unknown effort '{id}'",
                            stored.message.seq
                        )))
                    }
                },
            }
        }
        let (mut state, _, _) = header.into_parts();
        state.next_pin_id = state.next_pin_id.max(1);
        state.next_attachment = state.next_attachment.max(1);
        Ok(SessionDocument::assemble(
            state,
            crate::snapshot::DocumentRecords {
                efforts,
                ambient,
                history,
                attachments: Vec::new(),
                repairs: Vec::new(),
            },
        ))
    }

    /// The document of a session from every stored record, as an export reads them: the
    /// records as they are when they add up (the same document as
    /// [`SessionDocument::from_records`]), and otherwise, or when records were `unreadable`
    /// or attachments are missing, the repaired document of
    /// [`SessionDocument::from_damaged_records`]. Either way the result has passed the
    /// import's checks, so an export always re-imports.
    ///
    /// # Errors
    /// As [`SessionDocument::from_damaged_records`].
    #[allow(clippy::too_many_arguments)]
    pub fn from_stored_records(
        header: SessionHeader,
        efforts: Vec<EffortRecord>,
        messages: Vec<StoredMessage>,
        history: Vec<TurnMetrics>,
        attachments: Vec<crate::compaction::SessionAttachment>,
        unreadable: Vec<String>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<SessionDocument, SnapshotError> {
        let mut attachments_missing = Vec::new();
        report_missing_attachments(
            &attachments,
            header.next_attachment,
            header.turn,
            &mut attachments_missing,
        );
        if unreadable.is_empty() && attachments_missing.is_empty() {
            let strict = SessionDocument::from_records(
                header.clone(),
                efforts.clone(),
                messages.clone(),
                history.clone(),
            );
            if let Ok(mut document) = strict {
                // Attachments are records of their own; the document carries them whole.
                document.attachments = attachments.clone();
                // Records that are all readable can still fail to add up (one missing), and
                // then the repair below takes over.
                if Session::from_document(document.clone(), counter.clone()).is_ok() {
                    return Ok(document);
                }
            }
        }
        SessionDocument::from_damaged_records(
            header,
            efforts,
            messages,
            history,
            attachments,
            unreadable,
            counter,
        )
    }

    /// The document of a session whose storage is damaged: everything readable, with a
    /// placeholder for each message that could not be read, an open effort for messages whose
    /// effort record could not be read, and every repair listed in
    /// [`SessionDocument::repairs`] (`unreadable` first, as the backend described it). Unlike
    /// [`SessionDocument::from_records`] it never refuses readable records: a user must always
    /// be able to take their conversation out. The result imports like any document.
    ///
    /// # Errors
    /// [`SnapshotError`] only if the repaired document still fails the import's checks, which
    /// would be a bug in this repair; nothing is lost then either, the records stay stored.
    pub fn from_damaged_records(
        header: SessionHeader,
        efforts: Vec<EffortRecord>,
        messages: Vec<StoredMessage>,
        history: Vec<TurnMetrics>,
        attachments: Vec<crate::compaction::SessionAttachment>,
        unreadable: Vec<String>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<SessionDocument, SnapshotError> {
        let mut repairs = unreadable;
        report_missing_attachments(
            &attachments,
            header.next_attachment,
            header.turn,
            &mut repairs,
        );
        let (mut state, _, _) = header.into_parts();
        state.next_pin_id = state.next_pin_id.max(1);
        state.next_attachment = state.next_attachment.max(1);

        let mut efforts = DamagedEfforts::from_records(efforts, &mut repairs);
        let ambient = efforts.take_messages(messages, &mut state, &*counter, &mut repairs);
        // An attachment whose effort record and messages are all lost still has its text: it
        // goes out in an open effort of that name rather than being dropped.
        for stored in &attachments {
            if let Some(LogRef::Effort(id)) = &stored.log {
                let kept = format!("its attachment '{}' is", stored.attachment.id);
                let turn = stored.message_turn;
                efforts.index_or_recover(id, turn, &kept, &mut state.open, &mut repairs);
            }
        }
        let efforts = efforts.repaired(&mut state, &*counter, &mut repairs);

        let mut document = SessionDocument::assemble(
            state,
            crate::snapshot::DocumentRecords {
                efforts,
                ambient,
                history,
                attachments,
                repairs,
            },
        );
        // The promise of this function is an export that imports: check it the way an
        // import does before handing it out. Attachments are checked against messages that
        // may be placeholders now; if they no longer fit, the conversation goes out without
        // them and says so, rather than not at all.
        if let Err(error) = Session::from_document(document.clone(), counter.clone()) {
            if document.attachments.is_empty() {
                return Err(error);
            }
            document.repairs.push(format!(
                "{} attachments were left out of this export: {error}",
                document.attachments.len()
            ));
            document.attachments.clear();
            Session::from_document(document.clone(), counter)?;
        }
        Ok(document)
    }
}

/// The efforts of a damaged store's export: every readable record once, in position order,
/// and an open effort for each lost record whose messages or attachments were read.
struct DamagedEfforts {
    list: Vec<Effort>,
    index: BTreeMap<String, usize>,
}

impl DamagedEfforts {
    /// The readable records in position order, one per effort.
    fn from_records(records: Vec<EffortRecord>, repairs: &mut Vec<String>) -> Self {
        let list: Vec<Effort> = one_record_per_effort(records, repairs)
            .into_iter()
            .map(|record| record.effort)
            .collect();
        let index = list
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        DamagedEfforts { list, index }
    }

    /// The index of effort `id`. When its record could not be read, an open effort of that
    /// name is added, opened in `opened_turn`, and the repair says that `kept` ("its messages
    /// are") is kept in it.
    fn index_or_recover(
        &mut self,
        id: &str,
        opened_turn: u64,
        kept: &str,
        open: &mut Vec<String>,
        repairs: &mut Vec<String>,
    ) -> usize {
        if let Some(&at) = self.index.get(id) {
            return at;
        }
        repairs.push(format!(
            "the record of effort '{id}' could not be read; {kept} kept in an open effort of that name"
        ));
        self.index.insert(id.to_string(), self.list.len());
        self.list.push(recovered_effort(id, opened_turn));
        if !open.iter().any(|o| o == id) {
            open.push(id.to_string());
        }
        self.list.len() - 1
    }

    /// Puts every readable message in its log and returns the ambient log, with a placeholder
    /// where each unreadable message stood. Records newer than the header (damage) are kept:
    /// the counters grow to hold them rather than the messages being dropped.
    fn take_messages(
        &mut self,
        mut messages: Vec<StoredMessage>,
        state: &mut SessionState,
        counter: &dyn TokenCounter,
        repairs: &mut Vec<String>,
    ) -> Vec<Message> {
        messages.sort_by_key(|m| m.message.seq);
        messages.dedup_by_key(|m| m.message.seq);
        if let Some(last) = messages.last() {
            state.next_seq = state.next_seq.max(last.message.seq + 1);
        }
        state.turn = messages
            .iter()
            .map(|m| m.message.turn)
            .fold(state.turn, u64::max);
        let mut ambient: Vec<Message> = Vec::new();
        let mut expected_seq = 0;
        // The turn of the message before a gap: a placeholder stands where its message stood.
        let mut last_turn = 0;
        for stored in messages {
            let gap = expected_seq..stored.message.seq;
            fill_gap(&mut ambient, repairs, gap, last_turn, counter);
            expected_seq = stored.message.seq + 1;
            last_turn = stored.message.turn;
            let message = stored.message;
            match stored.log {
                LogRef::Ambient => ambient.push(message),
                LogRef::Effort(id) => {
                    let kept = "its messages are";
                    let at =
                        self.index_or_recover(&id, message.turn, kept, &mut state.open, repairs);
                    self.list[at].messages.push(message);
                }
            }
        }
        let gap = expected_seq..state.next_seq;
        fill_gap(&mut ambient, repairs, gap, last_turn, counter);
        ambient
    }

    /// The efforts with their counts made anew from what was read, a concluded effort without
    /// a usable summary reopened, and the open list and the active effort made to agree with
    /// them.
    fn repaired(
        self,
        state: &mut SessionState,
        counter: &dyn TokenCounter,
        repairs: &mut Vec<String>,
    ) -> Vec<Effort> {
        let mut efforts = self.list;
        for effort in &mut efforts {
            effort.header =
                prompt::effort_header(&effort.id, &effort.name, effort.description.as_deref());
            effort.header_tokens = counter.count(&effort.header);
            effort.raw_tokens = u64::from(effort.header_tokens)
                + effort
                    .messages
                    .iter()
                    .map(|m| u64::from(m.tokens))
                    .sum::<u64>();
            effort.last_referenced_turn = effort.last_referenced_turn.min(state.turn);
            let concluded_well = effort
                .summary
                .as_ref()
                .is_some_and(|s| !s.text.trim().is_empty())
                && effort
                    .concluded_seq
                    .is_some_and(|seq| seq < state.next_concluded_seq);
            if effort.status == EffortStatus::Concluded && !concluded_well {
                repairs.push(format!(
                    "concluded effort '{}' had no usable summary; it is open in the export so its log stays in context",
                    effort.id
                ));
                effort.status = EffortStatus::Open;
            }
            if effort.status == EffortStatus::Open {
                effort.evicted = false;
                effort.evicted_over_budget = false;
                if !state.open.contains(&effort.id) {
                    state.open.push(effort.id.clone());
                }
            }
        }
        let known: BTreeSet<&str> = efforts.iter().map(|e| e.id.as_str()).collect();
        let before = state.open.len();
        state.open.retain(|id| known.contains(id.as_str()));
        if state.open.len() != before {
            repairs.push(
                "open efforts without any readable record were left out of the open list"
                    .to_string(),
            );
        }
        if state
            .active
            .as_ref()
            .is_some_and(|id| !state.open.contains(id))
        {
            state.active = state.open.first().cloned();
        }
        efforts
    }
}

/// Placeholders for the messages `seqs` that could not be read, appended to the ambient log
/// in sequence order, where they stood.
fn fill_gap(
    ambient: &mut Vec<Message>,
    repairs: &mut Vec<String>,
    seqs: std::ops::Range<u64>,
    turn: u64,
    counter: &dyn TokenCounter,
) {
    for seq in seqs {
        let content = format!("[message {seq} could not be read from storage]");
        let role = opposite_of_last(ambient);
        ambient.push(Message {
            seq,
            turn,
            role,
            tokens: counter.count(&content),
            content,
            at_ms: 0,
        });
        repairs.push(format!(
            "message {seq} could not be read; a placeholder stands in its place in the ambient log"
        ));
    }
}

/// The role a placeholder takes after `log`'s last message: exchanges alternate, so the
/// opposite of the last one keeps a replayed context well formed.
fn opposite_of_last(log: &[Message]) -> Role {
    match log.last().map(|m| m.role) {
        Some(Role::User) => Role::Assistant,
        _ => Role::User,
    }
}

/// The turns an effort spans, for a person: "turn 3", "turns 3 to 7", "turns 3 on".
fn effort_turns(effort: &Effort) -> String {
    match effort.concluded_turn {
        Some(end) if end == effort.opened_turn => format!("turn {end}"),
        Some(end) => format!("turns {} to {end}", effort.opened_turn),
        None => format!("turns {} on", effort.opened_turn),
    }
}

/// Reports messages the header and effort records account for but storage no longer holds,
/// in the logs a load does not read (older ambient messages, logs of concluded efforts), and
/// messages stored under an effort whose record is gone. `sizes` is what the backend counted
/// per log. Nothing is changed: the records stay as they are, and the report repeats on every
/// load until they are repaired by hand.
fn report_missing_messages(
    session: &Session,
    ambient_messages: u64,
    sizes: &BTreeMap<LogRef, u64>,
    problems: &mut Vec<String>,
) {
    let stored = |log: &LogRef| sizes.get(log).copied().unwrap_or(0);
    let ambient = stored(&LogRef::Ambient);
    if ambient < ambient_messages {
        let missing = ambient_messages - ambient;
        // Sequence numbers are shared by every log, so a gap among the ambient messages read
        // does not locate the missing ones; the export, which reads every record, does.
        let place = match session.ambient.messages().first() {
            Some(first) if (session.ambient.messages().len() as u64) < ambient => format!(
                " (the newest ambient messages, from turn {} on, were read)",
                first.turn
            ),
            _ => String::new(),
        };
        problems.push(format!(
            "{missing} of the {ambient_messages} ambient messages are missing from storage{place}; the conversation continues without them and an export marks their places"
        ));
    }
    for effort in session.efforts.all() {
        let LogState::NotLoaded { messages: expected } = effort.log else {
            // A loaded log was compared with its record when it was read.
            continue;
        };
        let found = stored(&LogRef::Effort(effort.id.clone()));
        if found < expected {
            problems.push(format!(
                "effort '{}' (\"{}\", {}): {} of its {expected} messages are missing from storage; its summary stands in the context, the readable messages show when it is expanded, and an export marks the missing ones",
                effort.id,
                effort.name,
                effort_turns(effort),
                expected - found
            ));
        }
    }
    for (log, &count) in sizes {
        if let LogRef::Effort(id) = log {
            if count > 0 && session.efforts().get(id).is_none() {
                problems.push(format!(
                    "{count} messages of effort '{id}' are stored but its record could not be read; they stay stored, and an export keeps them in an open effort of that name"
                ));
            }
        }
    }
}

/// Reports attachments the header numbered (`att-1` up to `next_attachment`) that are not
/// among the stored `attachments`, with the turns their message lies between as far as the
/// neighbouring attachments tell.
fn report_missing_attachments(
    attachments: &[crate::compaction::SessionAttachment],
    next_attachment: u64,
    session_turn: u64,
    problems: &mut Vec<String>,
) {
    let by_number: BTreeMap<u64, &crate::compaction::SessionAttachment> = attachments
        .iter()
        .filter_map(|a| {
            let number = a.attachment.id.strip_prefix("att-")?.parse::<u64>().ok()?;
            Some((number, a))
        })
        .collect();
    let numbered = next_attachment.saturating_sub(1);
    let present = by_number.range(1..next_attachment.max(1)).count() as u64;
    if present >= numbered {
        return;
    }
    // A damaged header may claim any number; list a few ids by name and count the rest.
    const NAMED: usize = 10;
    let mut named = Vec::new();
    let mut number = 1;
    while named.len() < NAMED && number < next_attachment {
        if !by_number.contains_key(&number) {
            let after = by_number
                .range(..number)
                .next_back()
                .map_or(0, |(_, a)| a.message_turn);
            let before = by_number
                .range(number + 1..)
                .next()
                .map_or(session_turn, |(_, a)| a.message_turn);
            let turns = if after == before {
                format!("turn {after}")
            } else {
                format!("a message of turns {after} to {before}")
            };
            named.push(format!("'att-{number}' (attached to {turns})"));
        }
        number += 1;
    }
    let missing = numbered - present;
    let rest = missing.saturating_sub(named.len() as u64);
    let more = if rest > 0 {
        format!(" and {rest} more")
    } else {
        String::new()
    };
    problems.push(format!(
        "attachment {}{more} is missing from storage; the message it came with is kept, without its attached text",
        named.join(", ")
    ));
}

/// An open effort for messages whose effort record could not be read: its id is all that is
/// known of it.
fn recovered_effort(id: &str, opened_turn: u64) -> Effort {
    Effort {
        id: id.to_string(),
        name: id.to_string(),
        description: Some("recovered from storage: its record could not be read".to_string()),
        status: EffortStatus::Open,
        opened_turn,
        concluded_turn: None,
        concluded_seq: None,
        summary: None,
        messages: Vec::new(),
        header: String::new(),
        header_tokens: 0,
        raw_tokens: 0,
        last_referenced_turn: opened_turn,
        evicted: false,
        evicted_over_budget: false,
        log: LogState::Loaded,
    }
}
