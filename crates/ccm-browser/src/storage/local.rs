//! The localStorage backend: the fallback where IndexedDB is unavailable.
//!
//! The same records as the IndexedDB backend, flattened to keys under a namespace `ns`:
//!
//! | key | value |
//! |---|---|
//! | `ns/layout` | [`LAYOUT_VERSION`] |
//! | `ns/sessions` | JSON array of session ids |
//! | `ns/<id>/row` | the [`SessionRow`] (header, name, times) |
//! | `ns/<id>/e/<position>` | an effort record |
//! | `ns/<id>/m/<seq>` | a message record |
//! | `ns/<id>/x/<index>` | the metrics point at that index of the history |
//! | `ns/<id>/t/<turn>` | the turn's request telemetry (diagnostics, never read to open) |
//! | `ns/<id>/a/<attachment id>` | an attachment (ids `att-1`, `att-2`, … below the header's `next_attachment`) |
//! | `ns/<id>/l/<log>/<chunk>` | sequence numbers of messages `256·chunk ..` of that log |
//!
//! The log chunks play the part of IndexedDB's `by_log` index: a log's size is known from the
//! header (ambient) or its effort record, so reading a log or the ambient tail touches only its
//! own chunks, and appending a message rewrites one chunk of at most 256 numbers.
//!
//! localStorage has no transactions. A save writes every key through [`UndoLog`], the session
//! row last (it is what makes the new revision visible), and on any failure (typically
//! `QuotaExceededError`) restores every key it touched, so a failed save leaves the stored
//! session exactly as it was. Where the Web Locks API exists, the revision check and the write
//! run under a lock named after the namespace, so two tabs of one browser profile do not
//! interleave their saves.
//!
//! Every write goes through `gloo-storage` ([`LocalStorage::set`]): it stores a record as its
//! `serde_json` text, the same bytes [`encode`](ccm_store::records::encode) wrote before, so
//! sessions saved by earlier versions load unchanged, and its errors keep the browser's error
//! name, which is how a full localStorage is recognised. The rest stays on the raw
//! `web_sys::Storage`, each for a reason gloo-storage cannot meet:
//! - reads, removals and the key count: gloo-storage's `get`, `delete` and `length` treat a
//!   failure of the browser as impossible and throw it through the wasm module instead of
//!   returning it, which would leave the store's Rust state borrowed and the caller without a
//!   coded error; the raw calls return it, so a failed read is a `storage` error and a failed
//!   removal of a deleted session's record leaves only an unreachable key behind;
//! - listing keys (index rebuild, delete, export of a headerless session): gloo-storage has no
//!   key listing, and its `get_all` decodes every value in the origin's localStorage, failing
//!   on any other script's non-JSON value;
//! - the undo log: a rollback must put back the exact text that was there, damaged or not,
//!   and gloo-storage's `set` would store a string as a quoted JSON string.

use crate::error::js_message;
use ccm_core::model::Message;
use ccm_core::persistence::{EffortRecord, LoadedRecords, LogRef, StoredMessage, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::records::{decode, decode_all, log_key, SessionRow};
use ccm_store::{
    DamagedSession, LogRead, StoreError, StoreResult, StoredRecords, WriteMode, WriteResult,
};
use gloo_storage::errors::StorageError;
use gloo_storage::{LocalStorage, Storage as _};
use js_sys::{Function, Promise, Reflect};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DomException, Storage};

/// Version of the key layout above. A namespace written by a newer layout is refused.
pub const LAYOUT_VERSION: u32 = 1;

/// Sequence numbers per log chunk.
const CHUNK: u64 = 256;

/// The localStorage of this global scope, or why there is none.
fn local_storage() -> Result<Storage, String> {
    let storage = super::global_api("localStorage", "localStorage", "a Storage")?;
    // gloo-storage's `LocalStorage` reaches the storage through `window`, and throws where
    // there is none; checking here, once, is what keeps every later write from throwing.
    if web_sys::window().is_none() {
        return Err(
            "this environment has a localStorage but no browser window, and sessions are kept in localStorage only in a window"
                .to_string(),
        );
    }
    Ok(storage)
}

/// The name browsers give a write refused for lack of space (DOMException code 22 carries
/// this name).
const QUOTA_ERROR: &str = "QuotaExceededError";

fn is_quota_error(error: &JsValue) -> bool {
    error
        .dyn_ref::<DomException>()
        .is_some_and(|e| e.name() == QUOTA_ERROR || e.code() == 22)
}

/// Stores `record` as JSON text under `key`, through gloo-storage.
fn put<T: Serialize + ?Sized>(key: &str, record: &T) -> Result<(), StorageError> {
    LocalStorage::set(key, record)
}

/// The failure for a write gloo-storage refused: [`StoreError::Quota`] when localStorage is full,
/// else [`StoreError::Storage`] with the browser's message.
fn write_failure(context: &str, error: StorageError) -> StoreError {
    match error {
        StorageError::JsError(error) if error.name == QUOTA_ERROR => quota_failure(context),
        StorageError::JsError(error) => {
            StoreError::storage(format!("{context}: {}", error.message))
        }
        other => StoreError::storage(format!("{context}: {other}")),
    }
}

fn quota_failure(context: &str) -> StoreError {
    StoreError::quota(
        format!(
            "{context}: localStorage is full (browsers allow about 5 MB per site); nothing was changed. Delete or export old sessions and try again"
        ),
    )
}

/// What a failed save reports.
const SAVE_FAILED: &str = "the session could not be saved";

/// The localStorage backend of one namespace.
#[derive(Clone)]
pub(crate) struct LocalBackend {
    storage: Storage,
    ns: String,
}

/// Every key a write touched and its value before, so that a failed write can be undone.
struct UndoLog<'a> {
    storage: &'a Storage,
    before: BTreeMap<String, Option<String>>,
}

impl<'a> UndoLog<'a> {
    fn new(storage: &'a Storage) -> Self {
        UndoLog {
            storage,
            before: BTreeMap::new(),
        }
    }

    /// Writes `record` under `key`, first keeping the key's text as it was.
    fn set<T: Serialize + ?Sized>(&mut self, key: String, record: &T) -> Result<(), StoreError> {
        if !self.before.contains_key(&key) {
            let old = self
                .storage
                .get_item(&key)
                .map_err(|e| read_failure(SAVE_FAILED, &e))?;
            self.before.insert(key.clone(), old);
        }
        put(&key, record).map_err(|e| write_failure(SAVE_FAILED, e))
    }

    /// Puts every touched key back, as the exact text it held (raw `Storage`: the text may be
    /// a damaged record, which is not JSON gloo-storage could store). Restoring only gives
    /// back space, so it cannot run out of quota; removal never fails.
    fn undo(self) {
        for (key, old) in self.before.into_iter().rev() {
            let _ = match old {
                Some(value) => self.storage.set_item(&key, &value),
                None => self.storage.remove_item(&key),
            };
        }
    }
}

impl LocalBackend {
    /// The backend of namespace `ns`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] without localStorage; [`StoreError::Storage`] for a namespace written
    /// by a newer layout.
    pub(crate) fn open(ns: &str) -> Result<LocalBackend, StoreError> {
        let storage = local_storage().map_err(StoreError::Unavailable)?;
        let backend = LocalBackend {
            storage,
            ns: ns.to_string(),
        };
        match backend.get(&backend.key("layout"))? {
            Some(version) if version.parse::<u32>().map_or(true, |v| v > LAYOUT_VERSION) => {
                return Err(StoreError::storage(
                    format!(
                        "the sessions in localStorage were written by a newer version of this app (layout {version}, this one reads {LAYOUT_VERSION}); update the app to open them"
                    ),
                ))
            }
            Some(_) => {}
            None => {
                // A fresh namespace; writing the version can itself hit the quota. As JSON, the
                // number is the same text `1` earlier versions wrote.
                put(&backend.key("layout"), &LAYOUT_VERSION)
                    .map_err(|e| write_failure("could not prepare localStorage", e))?;
            }
        }
        Ok(backend)
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}/{suffix}", self.ns)
    }

    fn session_key(&self, id: &str, suffix: &str) -> String {
        format!("{}/{id}/{suffix}", self.ns)
    }

    fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.storage
            .get_item(key)
            .map_err(|e| read_failure("could not read localStorage", &e))
    }

    /// The ids of the stored sessions. The index key is a list kept for speed; the records
    /// are the truth, so when the index is missing or unreadable while records exist, the ids
    /// are found from the record keys instead (and the next save writes the index again).
    fn session_ids(&self) -> Result<Vec<String>, StoreError> {
        let indexed: Option<Vec<String>> = self
            .get(&self.key("sessions"))?
            .and_then(|t| serde_json::from_str(&t).ok());
        match indexed {
            Some(ids) => Ok(ids),
            None => self.scanned_session_ids(),
        }
    }

    /// Every key under this namespace, without the `ns/` prefix.
    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let prefix = format!("{}/", self.ns);
        let length = self
            .storage
            .length()
            .map_err(|e| read_failure("could not read localStorage", &e))?;
        let mut keys = Vec::new();
        for i in 0..length {
            let key = self
                .storage
                .key(i)
                .map_err(|e| read_failure("could not read localStorage", &e))?;
            if let Some(rest) = key.as_deref().and_then(|k| k.strip_prefix(&prefix)) {
                keys.push(rest.to_string());
            }
        }
        Ok(keys)
    }

    /// The ids that own a record key (`<id>/...`), in sorted order.
    fn scanned_session_ids(&self) -> Result<Vec<String>, StoreError> {
        let ids: std::collections::BTreeSet<String> = self
            .keys()?
            .into_iter()
            .filter_map(|key| key.split_once('/').map(|(id, _)| id.to_string()))
            .collect();
        Ok(ids.into_iter().collect())
    }

    fn row(&self, id: &str) -> Result<Option<Result<SessionRow, String>>, StoreError> {
        let text = self.get(&self.session_key(id, "row"))?;
        Ok(text.map(|t| decode("the session's header record", Some(&t))))
    }

    /// Every session row, and the sessions whose row cannot be read (listed as damaged).
    pub(crate) fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for id in self.session_ids()? {
            match self.row(&id)? {
                Some(Ok(row)) => rows.push(row),
                Some(Err(problem)) => damaged.push(DamagedSession { id, problem }),
                None => damaged.push(DamagedSession {
                    problem: format!("session '{id}' has records but no header record"),
                    id,
                }),
            }
        }
        Ok((rows, damaged))
    }

    /// Writes a batch, under a Web Lock where the API exists. Returns the session row as
    /// written.
    pub(crate) async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        let outcome: Rc<RefCell<Option<Result<SessionRow, StoreError>>>> = Rc::default();
        let work = {
            let (backend, id, batch, outcome) =
                (self.clone(), id.to_string(), batch.clone(), outcome.clone());
            Box::new(move || {
                *outcome.borrow_mut() = Some(backend.write_now(&id, &batch, mode));
            })
        };
        let locked = with_lock(&format!("ccm-localstorage:{}", self.ns), work).await;
        if let Err(error) = locked {
            return Err(StoreError::storage(format!(
                "could not take the storage lock: {}",
                js_message(&error)
            )));
        }
        let outcome = outcome.borrow_mut().take();
        outcome.unwrap_or_else(|| {
            Err(StoreError::storage(
                "the storage lock was released without running the save",
            ))
        })
    }

    fn write_now(
        &self,
        id: &str,
        batch: &WriteBatch,
        mode: WriteMode,
    ) -> Result<SessionRow, StoreError> {
        let row = ccm_store::next_row(id, self.row(id)?, batch, mode.clone())?;
        let mut undo = UndoLog::new(&self.storage);
        let outcome = self.write_records(&mut undo, id, batch, &row, &mode);
        if outcome.is_err() {
            undo.undo();
        }
        outcome.map(|()| row)
    }

    fn write_records(
        &self,
        undo: &mut UndoLog<'_>,
        id: &str,
        batch: &WriteBatch,
        row: &SessionRow,
        mode: &WriteMode,
    ) -> Result<(), StoreError> {
        // Where each log's new messages start: the log's size after the batch, less what the
        // batch adds to it.
        let mut added: BTreeMap<&LogRef, u64> = BTreeMap::new();
        for stored in &batch.messages {
            *added.entry(&stored.log).or_default() += 1;
        }
        let mut next_position: BTreeMap<&LogRef, u64> = BTreeMap::new();
        for (log, count) in &added {
            let size = match log {
                LogRef::Ambient => batch.header.ambient_messages,
                LogRef::Effort(effort) => batch
                    .efforts
                    .iter()
                    .find(|r| &r.effort.id == effort)
                    .map(|r| r.message_count)
                    .ok_or_else(|| {
                        StoreError::storage(
                            format!(
                                "{SAVE_FAILED}: the batch adds messages to effort '{effort}' without its record"
                            ),
                        )
                    })?,
            };
            next_position.insert(log, size.saturating_sub(*count));
        }
        let mut chunks: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for stored in &batch.messages {
            let seq = stored.message.seq;
            undo.set(self.session_key(id, &format!("m/{seq}")), stored)?;
            let position = next_position.get_mut(&stored.log).expect("counted above");
            let chunk_key = self.session_key(
                id,
                &format!("l/{}/{}", log_key(&stored.log), *position / CHUNK),
            );
            *position += 1;
            if !chunks.contains_key(&chunk_key) {
                let existing = self
                    .storage
                    .get_item(&chunk_key)
                    .map_err(|e| read_failure(SAVE_FAILED, &e))?;
                let seqs = existing
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_default();
                chunks.insert(chunk_key.clone(), seqs);
            }
            chunks
                .get_mut(&chunk_key)
                .expect("inserted above")
                .push(seq);
        }
        for (key, seqs) in &chunks {
            undo.set(key.clone(), seqs)?;
        }
        for record in &batch.efforts {
            undo.set(
                self.session_key(id, &format!("e/{}", record.position)),
                record,
            )?;
        }
        let first_point = batch.header.history_len - batch.metrics.len() as u64;
        for (i, point) in batch.metrics.iter().enumerate() {
            undo.set(
                self.session_key(id, &format!("x/{}", first_point + i as u64)),
                point,
            )?;
        }
        for entry in &batch.telemetry {
            undo.set(self.session_key(id, &format!("t/{}", entry.turn)), entry)?;
        }
        for attachment in &batch.attachments {
            undo.set(
                self.session_key(id, &format!("a/{}", attachment.attachment.id)),
                attachment,
            )?;
        }
        if let WriteMode::Create { .. } = mode {
            let mut ids = self
                .session_ids()
                .map_err(|failure| StoreError::storage(format!("{SAVE_FAILED}: {failure}")))?;
            // Without an index (a first save, or a damaged index) the ids come from the record
            // keys, which by now include this session's own.
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_string());
            }
            undo.set(self.key("sessions"), &ids)?;
        }
        // The row goes last: until it is written, the stored revision is the old one and the
        // records above are unreachable extras.
        undo.set(self.session_key(id, "row"), row)
    }

    /// One log chunk's sequence numbers: empty when the chunk is not stored, `None` when it is
    /// stored but cannot be read (its messages are still stored, each under its own key).
    fn log_chunk(&self, key: &str) -> Result<Option<Vec<u64>>, StoreError> {
        Ok(match self.get(key)? {
            None => Some(Vec::new()),
            Some(text) => serde_json::from_str(&text).ok(),
        })
    }

    /// The sequence numbers of positions `from..to` of a log. A chunk that cannot be read is
    /// described in `unreadable`: its messages are stored (and exported), but this read cannot
    /// find them, which is different from their being missing.
    fn log_seqs(
        &self,
        id: &str,
        log: &LogRef,
        (from, to): (u64, u64),
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<u64>, StoreError> {
        let mut seqs = Vec::new();
        if from >= to {
            return Ok(seqs);
        }
        for chunk in from / CHUNK..=(to - 1) / CHUNK {
            let suffix = format!("l/{}/{chunk}", log_key(log));
            let start = chunk * CHUNK;
            let Some(list) = self.log_chunk(&self.session_key(id, &suffix))? else {
                let whose = match log {
                    LogRef::Ambient => "the ambient messages".to_string(),
                    LogRef::Effort(effort) => format!("the messages of effort '{effort}'"),
                };
                unreadable.push(format!(
                    "the index of {whose} at positions {} to {} (the localStorage record {suffix}) cannot be read: those messages are still stored, and an export holds them, but this session was opened without them",
                    start.max(from),
                    (start + CHUNK).min(to) - 1
                ));
                continue;
            };
            for (i, seq) in list.into_iter().enumerate() {
                let position = start + i as u64;
                if position >= from && position < to {
                    seqs.push(seq);
                }
            }
        }
        Ok(seqs)
    }

    /// The stored message records with these sequence numbers (every log), in the order
    /// given; a missing or unreadable one is described in `unreadable` instead.
    pub(crate) fn stored_messages(
        &self,
        id: &str,
        seqs: &[u64],
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let mut texts = Vec::with_capacity(seqs.len());
        for seq in seqs {
            texts.push((
                format!("message {seq}"),
                self.get(&self.session_key(id, &format!("m/{seq}")))?,
            ));
        }
        Ok(decode_all::<StoredMessage>(texts, unreadable))
    }

    /// The messages of [`LocalBackend::stored_messages`] without their log tags.
    fn messages(
        &self,
        id: &str,
        seqs: &[u64],
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<Message>, StoreError> {
        Ok(self
            .stored_messages(id, seqs, unreadable)?
            .into_iter()
            .map(|s| s.message)
            .collect())
    }

    /// How many message records each of the session's logs holds, as IndexedDB's count on its
    /// log index gives it: the sequence numbers its log chunks list whose message key exists.
    /// With it a load reports messages missing from logs it does not read (concluded efforts'
    /// logs, older ambient messages) and messages whose effort record is gone. It reads the key
    /// list once and each log chunk (256 sequence numbers) once, never a message.
    fn log_sizes(&self, id: &str) -> Result<BTreeMap<LogRef, u64>, StoreError> {
        let prefix = format!("{id}/");
        let keys: std::collections::BTreeSet<String> = self
            .keys()?
            .into_iter()
            .filter_map(|key| key.strip_prefix(&prefix).map(str::to_string))
            .collect();
        let mut sizes = BTreeMap::new();
        let mut damaged = std::collections::BTreeSet::new();
        for key in keys.iter().filter(|key| key.starts_with("l/")) {
            let Some((log_part, _chunk)) = key["l/".len()..].rsplit_once('/') else {
                continue;
            };
            let log = match log_part.strip_prefix("effort:") {
                Some(effort) => LogRef::Effort(effort.to_string()),
                None if log_part == "ambient" => LogRef::Ambient,
                None => continue,
            };
            // A chunk that cannot be read does not make its messages missing: they are stored
            // under their own keys, and an export holds them. That log is counted from the
            // message records below instead, and the load reports the damaged index itself.
            let Some(seqs) = self.log_chunk(&self.session_key(id, key))? else {
                damaged.insert(log);
                continue;
            };
            let present = seqs
                .iter()
                .filter(|seq| keys.contains(&format!("m/{seq}")))
                .count() as u64;
            *sizes.entry(log).or_insert(0) += present;
        }
        if !damaged.is_empty() {
            // Only after damage: every message record is read to learn its log.
            for log in &damaged {
                sizes.insert(log.clone(), 0);
            }
            for key in keys.iter().filter(|key| key.starts_with("m/")) {
                let text = self.get(&self.session_key(id, key))?;
                if let Ok(stored) = decode::<StoredMessage>("", text.as_deref()) {
                    if damaged.contains(&stored.log) {
                        *sizes.entry(stored.log).or_insert(0) += 1;
                    }
                }
            }
        }
        Ok(sizes)
    }

    /// Reads what opening a session needs.
    pub(crate) fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let row = ccm_store::existing_row(id, self.row(id)?)?;
        let header = &row.header;
        let plan = header.load_request();
        let mut loaded = LoadedRecords {
            header: Some(header.clone()),
            ..LoadedRecords::default()
        };
        let mut texts = Vec::new();
        for position in 0..header.effort_count {
            texts.push((
                format!("effort record {position}"),
                self.get(&self.session_key(id, &format!("e/{position}")))?,
            ));
        }
        loaded.efforts = decode_all(texts, &mut loaded.unreadable);
        for effort in &plan.effort_logs {
            let size = loaded
                .efforts
                .iter()
                .find(|r| &r.effort.id == effort)
                .map_or(0, |r| r.message_count);
            let seqs = self.log_seqs(
                id,
                &LogRef::Effort(effort.clone()),
                (0, size),
                &mut loaded.unreadable,
            )?;
            let messages = self.messages(id, &seqs, &mut loaded.unreadable)?;
            loaded.effort_logs.insert(effort.clone(), messages);
        }
        let ambient_seqs = self.log_seqs(
            id,
            &LogRef::Ambient,
            (
                header.ambient_messages - plan.ambient_tail,
                header.ambient_messages,
            ),
            &mut loaded.unreadable,
        )?;
        loaded.ambient_tail = self.messages(id, &ambient_seqs, &mut loaded.unreadable)?;
        let mut texts = Vec::new();
        for index in header.history_len - plan.history_tail..header.history_len {
            texts.push((
                format!("the metrics point at {index}"),
                self.get(&self.session_key(id, &format!("x/{index}")))?,
            ));
        }
        loaded.history_tail = decode_all(texts, &mut loaded.unreadable);
        loaded.attachments = self.attachments(id, header, &mut loaded.unreadable)?;
        loaded.log_sizes = Some(self.log_sizes(id)?);
        Ok((row, loaded))
    }

    /// The stored raw log of one effort.
    pub(crate) fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let row = ccm_store::existing_row(id, self.row(id)?)?;
        let mut unreadable = Vec::new();
        let mut size = 0;
        for position in 0..row.header.effort_count {
            let text = self.get(&self.session_key(id, &format!("e/{position}")))?;
            if let Ok(record) = decode::<EffortRecord>("", text.as_deref()) {
                if record.effort.id == effort {
                    size = record.message_count;
                    break;
                }
            }
        }
        let seqs = self.log_seqs(
            id,
            &LogRef::Effort(effort.to_string()),
            (0, size),
            &mut unreadable,
        )?;
        let messages = self.messages(id, &seqs, &mut unreadable)?;
        Ok((messages, unreadable))
    }

    /// Every record of a session, for an export. With a readable row, its counts say which
    /// records must exist (so missing ones are reported); without one, every record key of the
    /// session is read.
    pub(crate) fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let row = match self.row(id)? {
            Some(row) => row,
            None if self.scanned_session_ids()?.iter().any(|s| s == id) => {
                Err(format!("session '{id}' has records but no header record"))
            }
            None => return Err(StoreError::not_found(id)),
        };
        let mut read = StoredRecords::of(row);
        let Ok(stored) = &read.row else {
            return self.read_all_without_header(id, read);
        };
        // The texts of records `<kind>/0` … `<kind>/<count - 1>`, each with what it is.
        let texts = |kind: &str, count: u64, what: fn(u64) -> String| {
            (0..count)
                .map(|index| {
                    let key = self.session_key(id, &format!("{kind}/{index}"));
                    Ok((what(index), self.get(&key)?))
                })
                .collect::<Result<Vec<_>, StoreError>>()
        };
        let header = &stored.header;
        read.efforts = decode_all(
            texts("e", header.effort_count, |p| format!("effort record {p}"))?,
            &mut read.unreadable,
        );
        read.messages = decode_all(
            texts("m", header.next_seq, |seq| format!("message {seq}"))?,
            &mut read.unreadable,
        );
        read.metrics = decode_all(
            texts("x", header.history_len, |i| {
                format!("the metrics point at {i}")
            })?,
            &mut read.unreadable,
        );
        read.attachments = self.attachments(id, header, &mut read.unreadable)?;
        Ok(read)
    }

    /// Every record of a session whose row cannot be read, found by its keys.
    fn read_all_without_header(
        &self,
        id: &str,
        mut read: StoredRecords,
    ) -> Result<StoredRecords, StoreError> {
        let prefix = format!("{id}/");
        let mut by_kind: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
        for key in self.keys()? {
            let Some((kind, name)) = key
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('/'))
            else {
                continue;
            };
            let what = match kind {
                "e" => format!("effort record {name}"),
                "m" => format!("message {name}"),
                "x" => format!("the metrics point at {name}"),
                "a" => format!("attachment {name}"),
                _ => continue,
            };
            let text = self.get(&self.session_key(id, &format!("{kind}/{name}")))?;
            by_kind
                .entry(kind.to_string())
                .or_default()
                .push((what, text));
        }
        let mut take = |kind: &str| by_kind.remove(kind).unwrap_or_default();
        read.efforts = decode_all(take("e"), &mut read.unreadable);
        read.messages = decode_all(take("m"), &mut read.unreadable);
        read.metrics = decode_all(take("x"), &mut read.unreadable);
        read.metrics.sort_by_key(|point| point.turn);
        read.attachments = decode_all(take("a"), &mut read.unreadable);
        Ok(read)
    }

    /// Every attachment record of a session. Attachment ids are numbered (`att-1`, `att-2`,
    /// …) below the header's `next_attachment`, so no separate list is kept.
    fn attachments(
        &self,
        id: &str,
        header: &ccm_core::persistence::SessionHeader,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<ccm_core::compaction::SessionAttachment>, StoreError> {
        let mut texts = Vec::new();
        for n in 1..header.next_attachment.max(1) {
            if let Some(text) = self.get(&self.session_key(id, &format!("a/att-{n}")))? {
                texts.push((format!("attachment att-{n}"), Some(text)));
            }
        }
        Ok(decode_all(texts, unreadable))
    }

    /// The stored telemetry of one turn, if any.
    pub(crate) fn telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<TurnTelemetry>, StoreError> {
        match self.get(&self.session_key(id, &format!("t/{turn}")))? {
            None => Ok(None),
            Some(text) => decode(&format!("the telemetry of turn {turn}"), Some(&text))
                .map(Some)
                .map_err(StoreError::Storage),
        }
    }

    /// Renames a session.
    pub(crate) fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let mut row = ccm_store::existing_row(id, self.row(id)?)?;
        row.name = name.to_string();
        row.updated_ms = now_ms;
        put(&self.session_key(id, "row"), &row)
            .map_err(|e| write_failure("the session could not be renamed", e))
    }

    /// Deletes a session and every key under it.
    pub(crate) fn delete(&self, id: &str) -> Result<(), StoreError> {
        let prefix = self.session_key(id, "");
        let length = self
            .storage
            .length()
            .map_err(|e| read_failure("could not read localStorage", &e))?;
        let mut doomed = Vec::new();
        for i in 0..length {
            if let Ok(Some(key)) = self.storage.key(i) {
                if key.starts_with(&prefix) {
                    doomed.push(key);
                }
            }
        }
        // The session leaves the list first, so an interrupted delete never shows a session
        // whose records are half gone.
        let ids: Vec<String> = self
            .session_ids()?
            .into_iter()
            .filter(|s| s != id)
            .collect();
        put(&self.key("sessions"), &ids)
            .map_err(|e| write_failure("the session could not be deleted", e))?;
        for key in doomed {
            let _ = self.storage.remove_item(&key);
        }
        Ok(())
    }
}

/// The failure for an error the raw `Storage` threw.
fn read_failure(context: &str, error: &JsValue) -> StoreError {
    if is_quota_error(error) {
        return quota_failure(context);
    }
    StoreError::storage(format!("{context}: {}", js_message(error)))
}

/// Runs `work` under the Web Lock `name` where `navigator.locks` exists, else at once. The
/// work is synchronous (localStorage is), so it runs entirely inside the lock.
async fn with_lock(name: &str, work: Box<dyn FnOnce()>) -> Result<(), JsValue> {
    let locks = Reflect::get(&js_sys::global(), &"navigator".into())
        .ok()
        .filter(JsValue::is_object)
        .and_then(|navigator| Reflect::get(&navigator, &"locks".into()).ok())
        .filter(JsValue::is_object);
    let Some(locks) = locks else {
        work();
        return Ok(());
    };
    let request: Function = Reflect::get(&locks, &"request".into())?.dyn_into()?;
    let callback = Closure::once(move || {
        work();
        JsValue::UNDEFINED
    });
    let promise: Promise = request
        .call2(
            &locks,
            &JsValue::from_str(name),
            callback.as_ref().unchecked_ref(),
        )?
        .dyn_into()?;
    JsFuture::from(promise).await?;
    Ok(())
}
