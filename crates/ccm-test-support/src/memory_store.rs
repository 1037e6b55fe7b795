//! An in-memory storage backend with the same record layout and transaction rules as the
//! browser backends, for the tests of saving, loading and repairing sessions. It lives with the
//! tests, not in the library: no host keeps sessions in memory, and the domain does no I/O.

use ccm_core::compaction::SessionAttachment;
use ccm_core::error::SnapshotError;
use ccm_core::persistence::{
    EffortRecord, LoadedRecords, LogRef, SessionHeader, StoredMessage, WriteBatch,
};
use ccm_core::snapshot::SessionDocument;
use ccm_core::telemetry::TurnTelemetry;
use ccm_core::{Message, Session, TokenCounter, TurnMetrics};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// An in-memory backend with the same record layout and transaction rules as the browser
/// backends.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    header: Option<SessionHeader>,
    efforts: BTreeMap<u64, EffortRecord>,
    messages: BTreeMap<u64, StoredMessage>,
    /// Sequence numbers per log, like the log index a browser backend keeps.
    logs: BTreeMap<LogRef, BTreeSet<u64>>,
    metrics: BTreeMap<u64, TurnMetrics>,
    telemetry: BTreeMap<u64, TurnTelemetry>,
    attachments: BTreeMap<String, SessionAttachment>,
    /// Records written by every batch so far, for tests of incremental saving.
    pub writes: Vec<usize>,
}

impl MemoryStore {
    /// A store holding all of `session`, saved in one full batch (the session is marked saved).
    pub fn saved_from(session: &mut Session) -> MemoryStore {
        let mut store = MemoryStore::default();
        let batch = session.full_write_batch().unwrap();
        store.apply(&batch).unwrap();
        session.mark_saved(&batch).unwrap();
        store
    }

    /// The stored session opened the way a host opens it; the load must report no problem.
    pub fn open_clean(&self, counter: &Arc<dyn TokenCounter>) -> Session {
        let (opened, report) = Session::from_store(self.load(), counter.clone()).unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        opened
    }

    /// Applies a batch atomically.
    ///
    /// # Errors
    /// [`SnapshotError::Inconsistent`] when the batch does not build on the stored revision
    /// (another writer saved first); nothing is written then.
    pub fn apply(&mut self, batch: &WriteBatch) -> Result<(), SnapshotError> {
        let stored = self.header.as_ref().map_or(0, |h| h.revision);
        if batch.base_revision != stored {
            return Err(SnapshotError::Inconsistent(format!(
                "the session changed in another window (stored revision {stored}, this one builds on {}); reload it to continue",
                batch.base_revision
            )));
        }
        self.header = Some(batch.header.clone());
        for record in &batch.efforts {
            self.efforts.insert(record.position, record.clone());
        }
        for message in &batch.messages {
            self.logs
                .entry(message.log.clone())
                .or_default()
                .insert(message.message.seq);
            self.messages.insert(message.message.seq, message.clone());
        }
        for point in &batch.metrics {
            self.metrics.insert(point.turn, point.clone());
        }
        for entry in &batch.telemetry {
            self.telemetry.insert(entry.turn, entry.clone());
        }
        for attachment in &batch.attachments {
            self.attachments
                .insert(attachment.attachment.id.clone(), attachment.clone());
        }
        self.writes.push(batch.record_count());
        Ok(())
    }

    /// Reads what opening the session needs, the way a browser backend does: the header, the
    /// effort records, the open efforts' logs, the ambient tail and the recent metrics.
    pub fn load(&self) -> LoadedRecords {
        let Some(header) = self.header.clone() else {
            return LoadedRecords::default();
        };
        let request = header.load_request();
        let effort_logs = request
            .effort_logs
            .iter()
            .map(|id| (id.clone(), self.effort_log(id)))
            .collect();
        let ambient_tail: Vec<Message> = self
            .logs
            .get(&LogRef::Ambient)
            .map(|seqs| {
                let skip = seqs.len().saturating_sub(request.ambient_tail as usize);
                seqs.iter()
                    .skip(skip)
                    .map(|seq| self.messages[seq].message.clone())
                    .collect()
            })
            .unwrap_or_default();
        let history_tail: Vec<TurnMetrics> = self
            .metrics
            .values()
            .rev()
            .take(request.history_tail as usize)
            .rev()
            .cloned()
            .collect();
        LoadedRecords {
            header: Some(header),
            efforts: self.efforts.values().cloned().collect(),
            effort_logs,
            ambient_tail,
            history_tail,
            unreadable: Vec::new(),
            attachments: self.attachments.values().cloned().collect(),
            log_sizes: Some(
                self.logs
                    .iter()
                    .map(|(log, seqs)| (log.clone(), seqs.len() as u64))
                    .collect(),
            ),
        }
    }

    /// The stored telemetry of one turn.
    pub fn turn_telemetry(&self, turn: u64) -> Option<&TurnTelemetry> {
        self.telemetry.get(&turn)
    }

    /// The stored raw log of one effort, in sequence order.
    pub fn effort_log(&self, id: &str) -> Vec<Message> {
        self.logs
            .get(&LogRef::Effort(id.to_string()))
            .map(|seqs| {
                seqs.iter()
                    .map(|seq| self.messages[seq].message.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The whole session as one document, read from every record.
    ///
    /// # Errors
    /// [`SnapshotError`] when nothing is stored or the records do not add up.
    pub fn export(&self) -> Result<SessionDocument, SnapshotError> {
        let header = self
            .header
            .clone()
            .ok_or_else(|| SnapshotError::Malformed("nothing is stored".to_string()))?;
        let mut document = SessionDocument::from_records(
            header,
            self.efforts.values().cloned().collect(),
            self.messages.values().cloned().collect(),
            self.metrics.values().cloned().collect(),
        )?;
        // Attachments are records of their own; the document carries them whole.
        document.attachments = self.attachments.values().cloned().collect();
        Ok(document)
    }

    /// The whole session as one document even when records are missing or were reported
    /// `unreadable` by the caller, the way a browser backend exports: see
    /// [`SessionDocument::from_stored_records`].
    ///
    /// # Errors
    /// [`SnapshotError`] when nothing is stored, or if the repair fails its own import check.
    pub fn export_repaired(
        &self,
        unreadable: Vec<String>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<SessionDocument, SnapshotError> {
        let header = self
            .header
            .clone()
            .ok_or_else(|| SnapshotError::Malformed("nothing is stored".to_string()))?;
        SessionDocument::from_stored_records(
            header,
            self.efforts.values().cloned().collect(),
            self.messages.values().cloned().collect(),
            self.metrics.values().cloned().collect(),
            self.attachments.values().cloned().collect(),
            unreadable,
            counter,
        )
    }

    /// Removes a stored attachment record, for tests that simulate a lost one.
    pub fn forget_attachment(&mut self, id: &str) -> Option<SessionAttachment> {
        self.attachments.remove(id)
    }

    /// Removes a stored effort record, for tests that simulate an unreadable one.
    pub fn forget_effort(&mut self, position: u64) -> Option<EffortRecord> {
        self.efforts.remove(&position)
    }

    /// Mutable access to a stored message, for tests that corrupt records.
    /// The stored messages with sequence numbers in `from..to`, of every log (what a step of
    /// the recall index's rebuild reads).
    pub fn messages_between(&self, from: u64, to: u64) -> Vec<StoredMessage> {
        self.messages
            .range(from..to)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// The stored messages with these sequence numbers (those that exist).
    pub fn messages_by_seq(&self, seqs: &[u64]) -> Vec<StoredMessage> {
        seqs.iter()
            .filter_map(|seq| self.messages.get(seq).cloned())
            .collect()
    }

    pub fn message_mut(&mut self, seq: u64) -> Option<&mut StoredMessage> {
        self.messages.get_mut(&seq)
    }

    /// Removes a stored message, for tests that simulate an unreadable record.
    pub fn forget_message(&mut self, seq: u64) -> Option<StoredMessage> {
        let removed = self.messages.remove(&seq)?;
        if let Some(seqs) = self.logs.get_mut(&removed.log) {
            seqs.remove(&seq);
        }
        Some(removed)
    }
}
