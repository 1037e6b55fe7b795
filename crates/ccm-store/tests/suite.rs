//! The conformance suite checked against itself: a reference backend in memory passes every
//! property, and backends broken on purpose fail the property that names their fault. Without
//! the second half a suite that asserts too little would pass every backend.

#![cfg(feature = "conformance")]

use ccm_core::compaction::SessionAttachment;
use ccm_core::persistence::{EffortRecord, LoadedRecords, LogRef, StoredMessage, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::conformance::{self, Fault as ConformanceFault, Harness, Injected, Options};
use ccm_store::records::{decode, decode_all, encode, log_key};
use ccm_store::{
    existing_row, next_row, DamagedSession, LogRead, MessagesRead, RecordStore, SessionRow,
    StoreError, StoreResult, StoredRecords, WriteMode, WriteResult,
};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

/// One session's records as texts, keyed as the browser backends key them.
#[derive(Default, Clone)]
struct Records {
    row: String,
    efforts: BTreeMap<u64, String>,
    messages: BTreeMap<u64, (String, String)>,
    metrics: BTreeMap<u64, String>,
    telemetry: BTreeMap<u64, String>,
    attachments: BTreeMap<String, String>,
}

/// What a broken backend gets wrong.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Writes without checking the stored revision.
    NoRevisionCheck,
    /// Rewrites every stored message on every save, as a whole-document store does.
    RewritesEverything,
    /// Drops records it cannot decode when it reads them, without a word.
    HidesDamage,
    /// Takes a save of a session that is no longer stored as a creation, as a store of whole
    /// documents that writes a file per save does: a delete during a save is undone.
    BringsDeletedBack,
}

/// Sessions in memory, shared between handles like storage is.
#[derive(Clone)]
struct MemoryStore {
    sessions: Rc<RefCell<BTreeMap<String, Records>>>,
    written: Rc<Cell<u64>>,
    fault: Fault,
}

impl MemoryStore {
    fn decode_messages(&self, records: &Records, seqs: impl Iterator<Item = u64>) -> MessagesRead {
        let mut unreadable = Vec::new();
        let texts: Vec<(String, Option<String>)> = seqs
            .filter_map(|seq| {
                records
                    .messages
                    .get(&seq)
                    .map(|(_, text)| (format!("message {seq}"), Some(text.clone())))
            })
            .collect();
        let messages = decode_all::<StoredMessage>(texts, &mut unreadable);
        if self.fault == Fault::HidesDamage {
            unreadable.clear();
        }
        (messages, unreadable)
    }

    fn session(&self, id: &str) -> Result<Records, StoreError> {
        self.sessions
            .borrow()
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::not_found(id))
    }
}

fn row_of(records: &Records) -> Result<SessionRow, String> {
    decode("the session's header record", Some(&records.row))
}

/// Every readable effort record of a session; the others are described in `unreadable`.
fn efforts_of(records: &Records, unreadable: &mut Vec<String>) -> Vec<EffortRecord> {
    let texts = records.efforts.iter();
    decode_all(
        texts.map(|(p, t)| (format!("effort record {p}"), Some(t.clone()))),
        unreadable,
    )
}

/// Every readable attachment of a session; the others are described in `unreadable`.
fn attachments_of(records: &Records, unreadable: &mut Vec<String>) -> Vec<SessionAttachment> {
    let texts = records.attachments.iter();
    decode_all(
        texts.map(|(k, t)| (format!("attachment {k}"), Some(t.clone()))),
        unreadable,
    )
}

impl RecordStore for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for (id, records) in self.sessions.borrow().iter() {
            match row_of(records) {
                Ok(row) => rows.push(row),
                Err(problem) => damaged.push(DamagedSession {
                    id: id.clone(),
                    problem,
                }),
            }
        }
        Ok((rows, damaged))
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        let mut sessions = self.sessions.borrow_mut();
        let stored = sessions.get(id).map(row_of);
        let row = match (self.fault, stored, &mode) {
            (Fault::NoRevisionCheck, Some(Ok(row)), WriteMode::Save { now_ms }) => SessionRow {
                updated_ms: *now_ms,
                header: batch.header.clone(),
                ..row
            },
            (Fault::BringsDeletedBack, None, WriteMode::Save { now_ms }) => SessionRow {
                id: id.to_string(),
                name: id.to_string(),
                created_ms: *now_ms,
                updated_ms: *now_ms,
                header: batch.header.clone(),
            },
            (_, stored, _) => next_row(id, stored, batch, mode)?,
        };
        let records = sessions.entry(id.to_string()).or_default();
        let mut written = 0;
        let mut put = |text: String| {
            written += text.len() as u64;
            text
        };
        records.row = put(encode(&row));
        for record in &batch.efforts {
            records.efforts.insert(record.position, put(encode(record)));
        }
        for stored in &batch.messages {
            let text = put(encode(stored));
            records
                .messages
                .insert(stored.message.seq, (log_key(&stored.log), text));
        }
        if self.fault == Fault::RewritesEverything {
            for (_, text) in records.messages.values() {
                written += text.len() as u64;
            }
        }
        for point in &batch.metrics {
            records.metrics.insert(point.turn, encode(point));
        }
        for entry in &batch.telemetry {
            records.telemetry.insert(entry.turn, encode(entry));
        }
        for attachment in &batch.attachments {
            records
                .attachments
                .insert(attachment.attachment.id.clone(), encode(attachment));
        }
        self.written.set(self.written.get() + written);
        Ok(row)
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let records = self.session(id)?;
        let row = existing_row(id, Some(row_of(&records)))?;
        let request = row.header.load_request();
        let mut loaded = LoadedRecords {
            header: Some(row.header.clone()),
            ..LoadedRecords::default()
        };
        loaded.efforts = efforts_of(&records, &mut loaded.unreadable);
        let mut log_sizes: BTreeMap<LogRef, u64> = BTreeMap::new();
        let mut by_log: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (seq, (log, _)) in &records.messages {
            by_log.entry(log.clone()).or_default().push(*seq);
        }
        for (key, seqs) in &by_log {
            let log = match key.strip_prefix("effort:") {
                Some(effort) => LogRef::Effort(effort.to_string()),
                None => LogRef::Ambient,
            };
            log_sizes.insert(log, seqs.len() as u64);
        }
        for effort in &request.effort_logs {
            let seqs = by_log
                .get(&log_key(&LogRef::Effort(effort.clone())))
                .cloned()
                .unwrap_or_default();
            let (messages, mut problems) = self.decode_messages(&records, seqs.into_iter());
            loaded.unreadable.append(&mut problems);
            let log = messages.into_iter().map(|m| m.message).collect();
            loaded.effort_logs.insert(effort.clone(), log);
        }
        let ambient = by_log.get("ambient").cloned().unwrap_or_default();
        let tail = ambient.len().saturating_sub(request.ambient_tail as usize);
        let (ambient_tail, mut problems) =
            self.decode_messages(&records, ambient[tail..].iter().copied());
        loaded.unreadable.append(&mut problems);
        loaded.ambient_tail = ambient_tail.into_iter().map(|m| m.message).collect();
        loaded.history_tail = decode_all(
            records
                .metrics
                .values()
                .rev()
                .take(request.history_tail as usize)
                .rev()
                .map(|t| ("a metrics point".to_string(), Some(t.clone()))),
            &mut loaded.unreadable,
        );
        loaded.attachments = attachments_of(&records, &mut loaded.unreadable);
        loaded.log_sizes = Some(log_sizes);
        Ok((row, loaded))
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let records = self.session(id)?;
        let key = log_key(&LogRef::Effort(effort.to_string()));
        let seqs: Vec<u64> = records
            .messages
            .iter()
            .filter(|(_, (log, _))| *log == key)
            .map(|(seq, _)| *seq)
            .collect();
        let (messages, unreadable) = self.decode_messages(&records, seqs.into_iter());
        Ok((
            messages.into_iter().map(|m| m.message).collect(),
            unreadable,
        ))
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        let records = self.session(id)?;
        Ok(self.decode_messages(&records, from..to))
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        let records = self.session(id)?;
        Ok(self.decode_messages(&records, seqs.iter().copied()))
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let records = self.session(id)?;
        let mut read = StoredRecords::of(row_of(&records));
        read.efforts = efforts_of(&records, &mut read.unreadable);
        let (messages, mut problems) =
            self.decode_messages(&records, records.messages.keys().copied());
        read.messages = messages;
        read.unreadable.append(&mut problems);
        read.metrics = decode_all(
            records
                .metrics
                .values()
                .map(|t| ("a metrics point".to_string(), Some(t.clone()))),
            &mut read.unreadable,
        );
        read.attachments = attachments_of(&records, &mut read.unreadable);
        Ok(read)
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        let records = self.session(id)?;
        records
            .telemetry
            .get(&turn)
            .map(|t| decode("telemetry", Some(t)).map_err(StoreError::storage))
            .transpose()
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let mut sessions = self.sessions.borrow_mut();
        let records = sessions
            .get_mut(id)
            .ok_or_else(|| StoreError::not_found(id))?;
        let mut row = existing_row(id, Some(row_of(records)))?;
        row.name = name.to_string();
        row.updated_ms = now_ms;
        records.row = encode(&row);
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.sessions.borrow_mut().remove(id);
        Ok(())
    }
}

struct MemoryHarness {
    fault: Fault,
}

impl Harness for MemoryHarness {
    type Store = MemoryStore;

    async fn fresh(&mut self) -> MemoryStore {
        MemoryStore {
            sessions: Rc::default(),
            written: Rc::default(),
            fault: self.fault,
        }
    }

    async fn second_handle(&mut self, store: &MemoryStore) -> MemoryStore {
        MemoryStore {
            written: Rc::default(),
            ..store.clone()
        }
    }

    async fn damage_message(&mut self, store: &MemoryStore, id: &str, seq: u64) {
        let mut sessions = store.sessions.borrow_mut();
        let message = sessions
            .get_mut(id)
            .unwrap()
            .messages
            .get_mut(&seq)
            .unwrap();
        message.1 = "{\"log\": damaged".to_string();
    }

    async fn remove_message(&mut self, store: &MemoryStore, id: &str, seq: u64) {
        store
            .sessions
            .borrow_mut()
            .get_mut(id)
            .unwrap()
            .messages
            .remove(&seq);
    }

    async fn damage_row(&mut self, store: &MemoryStore, id: &str) {
        store.sessions.borrow_mut().get_mut(id).unwrap().row = "{\"header\": damaged".into();
    }

    async fn inject(&mut self, _: &MemoryStore, _: &str, fault: ConformanceFault) -> Injected {
        Injected::CannotExist(match fault {
            ConformanceFault::SaveKilledBeforeCommit => {
                "the reference backend writes a batch in one step, in memory: nothing of a save outlives a crash"
            }
            _ => "the reference backend takes no lock: its writes are one step each",
        })
    }

    fn leftovers(&self, _: &MemoryStore) -> Result<Vec<String>, &'static str> {
        Err("the reference backend makes no temporary records")
    }

    fn clock_ms(&self) -> f64 {
        conformance::system_clock_ms()
    }

    fn bytes_written(&self, store: &MemoryStore) -> Option<u64> {
        Some(store.written.get())
    }
}

fn run(fault: Fault) -> conformance::Report {
    let mut harness = MemoryHarness { fault };
    let report = block_on(conformance::run(&mut harness, Options::default()));
    println!("{}", report.table());
    report
}

fn failed(report: &conformance::Report) -> Vec<&'static str> {
    report
        .results
        .iter()
        .filter(|(_, r)| r.is_err())
        .map(|(name, _)| *name)
        .collect()
}

/// Every future here is ready at once (memory does no waiting), so polling with a waker that
/// does nothing completes it.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
    }
}

#[test]
fn a_correct_backend_passes_every_property() {
    let report = run(Fault::None);
    report.assert_passed();
    assert_eq!(report.results.len(), conformance::PROPERTIES.len());
    let names: Vec<&str> = report.results.iter().map(|(n, _)| *n).collect();
    let listed: Vec<&str> = conformance::PROPERTIES.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, listed);
}

#[test]
fn a_backend_without_the_revision_check_fails_the_writer_properties() {
    let failed = failed(&run(Fault::NoRevisionCheck));
    assert!(failed.contains(&"stale_writer"), "{failed:?}");
    assert!(failed.contains(&"racing_writers"), "{failed:?}");
}

#[test]
fn a_backend_that_rewrites_everything_fails_the_incremental_property() {
    assert_eq!(failed(&run(Fault::RewritesEverything)), ["incremental"]);
}

#[test]
fn a_backend_that_hides_damage_fails_the_damage_property() {
    let failed = failed(&run(Fault::HidesDamage));
    assert!(failed.contains(&"damaged_records"), "{failed:?}");
}

#[test]
fn a_backend_that_brings_deleted_sessions_back_fails_the_delete_properties() {
    let failed = failed(&run(Fault::BringsDeletedBack));
    assert!(failed.contains(&"delete_during_save"), "{failed:?}");
    assert!(failed.contains(&"list_rename_delete"), "{failed:?}");
}
