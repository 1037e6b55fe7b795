//! The IndexedDB backend: the default store in browsers.
//!
//! Object stores (database version [`DB_VERSION`]):
//!
//! | store | key | value |
//! |---|---|---|
//! | `sessions` | `id` | `{id, row}`: the [`SessionRow`] (header, name, times) as JSON |
//! | `efforts` | `[session, position]` | `{session, position, record}` |
//! | `messages` | `[session, seq]`, index `by_log` on `[session, log, seq]` | `{session, seq, log, record}` |
//! | `metrics` | `[session, turn]` | `{session, turn, record}` |
//! | `telemetry` | `[session, turn]` | `{session, turn, record}`: diagnostics, never read to open |
//! | `attachments` | `[session, id]` | `{session, id, record}`: files and pastes (version 3) |
//!
//! A save is one `readwrite` transaction over all the stores: it reads the session row,
//! refuses the batch unless its `base_revision` equals the stored revision (another tab saved
//! first), and writes the batch. IndexedDB runs `readwrite` transactions with overlapping
//! scopes one after the other, so the check and the write cannot interleave with another
//! tab's save. Opening a session is one `readonly` transaction that reads the row, every effort
//! record, the open efforts' logs through `by_log`, and the newest ambient messages and metrics
//! points through cursors that stop after the tail: never the whole message history.
//!
//! Requests are awaited as promises. Every request of a transaction is issued from a
//! microtask that runs while the transaction is still active (the success event of the
//! previous request), which browsers guarantee keeps the transaction open.

use crate::error::js_message;
use ccm_core::model::Message;
use ccm_core::persistence::{LoadedRecords, LogRef, StoredMessage, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::records::{decode, decode_all, encode, log_key, SessionRow};
use ccm_store::{
    DamagedSession, LogRead, StoreError, StoreResult, StoredRecords, WriteMode, WriteResult,
};
use js_sys::{Array, Function, Object, Promise, Reflect};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    DomException, Event, IdbCursorDirection, IdbCursorWithValue, IdbDatabase, IdbFactory,
    IdbIndexParameters, IdbKeyRange, IdbObjectStore, IdbObjectStoreParameters, IdbOpenDbRequest,
    IdbRequest, IdbTransaction, IdbTransactionMode,
};

/// The database version this build creates and upgrades to.
///
/// - 1: the four stores, messages keyed by `[session, seq]` without a log field or index.
/// - 2: messages carry `log` and are indexed by `[session, log, seq]`, so an effort's log and
///   the ambient tail are read without scanning the session's messages; the `telemetry` store
///   keeps each turn's request telemetry.
pub const DB_VERSION: u32 = 3;

const SESSIONS: &str = "sessions";
const EFFORTS: &str = "efforts";
const MESSAGES: &str = "messages";
const METRICS: &str = "metrics";
const TELEMETRY: &str = "telemetry";
const ATTACHMENTS: &str = "attachments";
const BY_LOG: &str = "by_log";
const ALL_STORES: [&str; 6] = [SESSIONS, EFFORTS, MESSAGES, METRICS, TELEMETRY, ATTACHMENTS];

/// How long an open may wait without any event. A request queued behind another tab's blocked
/// upgrade gets no `blocked` event of its own (only the request doing the upgrade does), so
/// without this limit it would wait silently until that tab closes.
const OPEN_TIMEOUT_MS: f64 = 5_000.0;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
}

/// An event handler kept alive on the Rust side while IndexedDB may call it.
type EventHandler = Closure<dyn FnMut(Event)>;

/// An open connection to the session database.
pub(crate) struct IdbBackend {
    db: IdbDatabase,
    /// Set when another tab upgraded or deleted the database and this connection let go.
    closed_by_other_tab: Rc<Cell<bool>>,
    /// Keeps the `versionchange` handler alive as long as the connection.
    _on_version_change: EventHandler,
}

impl Drop for IdbBackend {
    fn drop(&mut self) {
        self.db.set_onversionchange(None);
        self.db.close();
    }
}

/// The failure an IndexedDB error stands for: quota errors are told apart, because the person
/// can act on them (free space), and everything else keeps the browser's own message.
fn idb_failure(context: &str, error: &JsValue) -> StoreError {
    let name = error
        .dyn_ref::<DomException>()
        .map(|e| e.name())
        .unwrap_or_default();
    if name == "QuotaExceededError" {
        return StoreError::quota(
            format!(
                "{context}: the browser's storage quota for this site is used up; nothing was written. Free space (delete or export old sessions) and save again"
            ),
        );
    }
    StoreError::storage(format!("{context}: {}", js_message(error)))
}

/// A promise and the functions that settle it.
fn deferred() -> (Promise, Function, Function) {
    let mut settle = None;
    let promise = Promise::new(&mut |resolve, reject| settle = Some((resolve, reject)));
    let (resolve, reject) = settle.expect("the Promise executor runs synchronously");
    (promise, resolve, reject)
}

/// Awaits one request: its result, or its error.
///
/// The handlers are attached before this returns, not when the future is first polled: a
/// load issues several requests and then awaits them one by one, and a success event that
/// fires while nobody listens would be lost (the load would hang).
fn request(req: Result<IdbRequest, JsValue>) -> impl Future<Output = Result<JsValue, JsValue>> {
    let pending = req.map(|req| {
        let (promise, resolve, reject) = deferred();
        // One closure serves both events; `once_into_js` frees it after its single call.
        let settle = {
            let req = req.clone();
            Closure::once_into_js(move |event: Event| {
                if event.type_() == "success" {
                    let _ =
                        resolve.call1(&JsValue::NULL, &req.result().unwrap_or(JsValue::UNDEFINED));
                } else {
                    let error = req.error().ok().flatten().map(JsValue::from);
                    let _ = reject.call1(&JsValue::NULL, &error.unwrap_or(JsValue::UNDEFINED));
                }
            })
        };
        req.set_onsuccess(Some(settle.unchecked_ref()));
        req.set_onerror(Some(settle.unchecked_ref()));
        JsFuture::from(promise)
    });
    async move { pending?.await }
}

/// A promise that settles when the transaction completes (or rejects when it aborts).
fn completion(tx: &IdbTransaction) -> JsFuture {
    let (promise, resolve, reject) = deferred();
    let settle = {
        let tx = tx.clone();
        Closure::once_into_js(move |event: Event| {
            if event.type_() == "complete" {
                let _ = resolve.call0(&JsValue::NULL);
            } else {
                let error = tx.error().map(JsValue::from);
                let _ = reject.call1(&JsValue::NULL, &error.unwrap_or(JsValue::UNDEFINED));
            }
        })
    };
    tx.set_oncomplete(Some(settle.unchecked_ref()));
    tx.set_onerror(Some(settle.unchecked_ref()));
    tx.set_onabort(Some(settle.unchecked_ref()));
    JsFuture::from(promise)
}

/// Walks a cursor request, collecting at most `limit` values. Like [`request`], the handler is
/// attached at once.
fn cursor_values(
    req: Result<IdbRequest, JsValue>,
    limit: usize,
) -> impl Future<Output = Result<Vec<JsValue>, JsValue>> {
    let values = Rc::new(RefCell::new(Vec::new()));
    let pending = req.map(|req| {
        let (promise, resolve, reject) = deferred();
        let step = {
            let req = req.clone();
            let values = values.clone();
            Closure::<dyn FnMut(Event)>::new(move |event: Event| {
                if event.type_() != "success" {
                    let error = req.error().ok().flatten().map(JsValue::from);
                    let _ = reject.call1(&JsValue::NULL, &error.unwrap_or(JsValue::UNDEFINED));
                    return;
                }
                let cursor = req
                    .result()
                    .ok()
                    .and_then(|c| c.dyn_into::<IdbCursorWithValue>().ok());
                let mut values = values.borrow_mut();
                let Some(cursor) = cursor.filter(|_| values.len() < limit) else {
                    let _ = resolve.call0(&JsValue::NULL);
                    return;
                };
                values.push(cursor.value().unwrap_or(JsValue::UNDEFINED));
                if values.len() >= limit || cursor.continue_().is_err() {
                    let _ = resolve.call0(&JsValue::NULL);
                }
            })
        };
        req.set_onsuccess(Some(step.as_ref().unchecked_ref()));
        req.set_onerror(Some(step.as_ref().unchecked_ref()));
        (req, step, JsFuture::from(promise))
    });
    async move {
        let (req, step, done) = pending?;
        done.await?;
        req.set_onsuccess(None);
        req.set_onerror(None);
        drop(step);
        Ok(values.take())
    }
}

/// `[session, from]` to `[session, Infinity]`: every record of one session in a store keyed by
/// `[session, number]`.
fn session_range(session: &str) -> Result<IdbKeyRange, JsValue> {
    let lower = Array::of2(&session.into(), &JsValue::from_f64(f64::NEG_INFINITY));
    let upper = Array::of2(&session.into(), &JsValue::from_f64(f64::INFINITY));
    IdbKeyRange::bound(&lower, &upper)
}

/// `[session, ""]` to `[session, []]`: every record of one session in a store keyed by
/// `[session, string]` (IndexedDB orders strings before arrays, so the empty array bounds every
/// string).
fn session_text_range(session: &str) -> Result<IdbKeyRange, JsValue> {
    let lower = Array::of2(&session.into(), &JsValue::from_str(""));
    let upper = Array::of2(&session.into(), &Array::new());
    IdbKeyRange::bound(&lower, &upper)
}

/// Every message of one log, through the `by_log` index.
fn log_range(session: &str, log: &str) -> Result<IdbKeyRange, JsValue> {
    let lower = Array::of3(
        &session.into(),
        &log.into(),
        &JsValue::from_f64(f64::NEG_INFINITY),
    );
    let upper = Array::of3(
        &session.into(),
        &log.into(),
        &JsValue::from_f64(f64::INFINITY),
    );
    IdbKeyRange::bound(&lower, &upper)
}

fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (name, value) in fields {
        let _ = Reflect::set(&object, &JsValue::from_str(name), value);
    }
    object.into()
}

fn field(value: &JsValue, name: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// The JSON text of a stored value's `field`, with a description of the record for reports.
fn record_text(value: &JsValue, field_name: &str, what: String) -> (String, Option<String>) {
    (what, field(value, field_name).as_string())
}

fn key_path(parts: &[&str]) -> JsValue {
    parts
        .iter()
        .map(|p| JsValue::from_str(p))
        .collect::<Array>()
        .into()
}

/// Creates what is missing for [`DB_VERSION`] in an upgrade transaction, and migrates records
/// of older versions. Returns the cursor closure of a running migration, which must be kept
/// alive until the open request completes.
fn upgrade(
    db: &IdbDatabase,
    tx: &IdbTransaction,
    old_version: u32,
) -> Result<Option<EventHandler>, JsValue> {
    if old_version < 1 {
        let keyed = |name: &str, path: JsValue| {
            let parameters = IdbObjectStoreParameters::new();
            parameters.set_key_path(&path);
            db.create_object_store_with_optional_parameters(name, &parameters)
        };
        keyed(SESSIONS, JsValue::from_str("id"))?;
        keyed(EFFORTS, key_path(&["session", "position"]))?;
        keyed(MESSAGES, key_path(&["session", "seq"]))?;
        keyed(METRICS, key_path(&["session", "turn"]))?;
    }
    let mut migration = None;
    if old_version < 2 {
        let parameters = IdbObjectStoreParameters::new();
        parameters.set_key_path(&key_path(&["session", "turn"]));
        db.create_object_store_with_optional_parameters(TELEMETRY, &parameters)?;
        let messages = tx.object_store(MESSAGES)?;
        messages.create_index_with_str_sequence_and_optional_parameters(
            BY_LOG,
            &key_path(&["session", "log", "seq"]),
            &IdbIndexParameters::new(),
        )?;
        if old_version == 1 {
            migration = Some(add_log_fields(&messages)?);
        }
    }
    if old_version < 3 {
        // Version 3: attachments (files and pastes) as records of their own, so a save writes
        // only the ones that changed.
        let parameters = IdbObjectStoreParameters::new();
        parameters.set_key_path(&key_path(&["session", "id"]));
        db.create_object_store_with_optional_parameters(ATTACHMENTS, &parameters)?;
    }
    Ok(migration)
}

/// Version 1 → 2: every message gets the `log` field its record names, so the new index
/// covers it. A record that cannot be read keeps no log field: it stays stored (and is found
/// by an export), and the log it belonged to reports a missing message when it is loaded.
fn add_log_fields(messages: &IdbObjectStore) -> Result<EventHandler, JsValue> {
    let cursor_request = messages.open_cursor()?;
    let step = {
        let cursor_request = cursor_request.clone();
        Closure::<dyn FnMut(Event)>::new(move |_event: Event| {
            let Some(cursor) = cursor_request
                .result()
                .ok()
                .and_then(|c| c.dyn_into::<IdbCursorWithValue>().ok())
            else {
                return;
            };
            let value = cursor.value().unwrap_or(JsValue::UNDEFINED);
            let stored = field(&value, "record")
                .as_string()
                .and_then(|text| serde_json::from_str::<StoredMessage>(&text).ok());
            if let Some(stored) = stored {
                let _ = Reflect::set(&value, &"log".into(), &log_key(&stored.log).into());
                let _ = cursor.update(&value);
            }
            let _ = cursor.continue_();
        })
    };
    cursor_request.set_onsuccess(Some(step.as_ref().unchecked_ref()));
    Ok(step)
}

/// The `indexedDB` factory of this global scope (window or worker), or why there is none.
fn factory() -> Result<IdbFactory, String> {
    super::global_api("indexedDB", "IndexedDB", "an IDBFactory")
}

impl IdbBackend {
    /// Opens (creating or upgrading) the database `name`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when this environment has no usable IndexedDB (the caller may
    /// fall back to localStorage); [`StoreError::Blocked`] when an upgrade waits for another tab
    /// that keeps an older connection open.
    pub(crate) async fn open(name: &str) -> Result<IdbBackend, StoreError> {
        let factory = factory().map_err(StoreError::Unavailable)?;
        let open_request: IdbOpenDbRequest =
            factory.open_with_u32(name, DB_VERSION).map_err(|e| {
                StoreError::unavailable(format!(
                    "IndexedDB refused to open '{name}' ({})",
                    js_message(&e)
                ))
            })?;
        let (promise, resolve, reject) = deferred();
        // Whether the caller already got an answer; a connection that succeeds after the
        // caller was told it is blocked is closed at once, so it cannot block anyone in turn.
        let settled = Rc::new(Cell::new(false));
        let migration: Rc<RefCell<Option<EventHandler>>> = Rc::default();
        let reject_on_timeout = reject.clone();
        let events = {
            let open_request = open_request.clone();
            let settled = settled.clone();
            let migration = migration.clone();
            Closure::<dyn FnMut(Event)>::new(move |event: Event| match event.type_().as_str() {
                "upgradeneeded" => {
                    let old = event
                        .dyn_ref::<web_sys::IdbVersionChangeEvent>()
                        .map_or(0.0, |e| e.old_version()) as u32;
                    let db = open_request
                        .result()
                        .ok()
                        .map(IdbDatabase::unchecked_from_js);
                    let tx = open_request.transaction();
                    let outcome = match (db, tx) {
                        (Some(db), Some(tx)) => upgrade(&db, &tx, old).map(|m| {
                            *migration.borrow_mut() = m;
                        }),
                        _ => Err(JsValue::from_str(
                            "the upgrade has no database or transaction",
                        )),
                    };
                    if let Err(error) = outcome {
                        // Aborting the upgrade leaves the database exactly as it was.
                        if let Some(tx) = open_request.transaction() {
                            let _ = tx.abort();
                        }
                        settled.set(true);
                        let _ = reject.call1(
                            &JsValue::NULL,
                            &rejection(idb_failure("the database upgrade failed", &error)),
                        );
                    }
                }
                "blocked" => {
                    if !settled.replace(true) {
                        let failure = StoreError::blocked(
                            "the session database needs an upgrade, but another tab still has it open with an older version of this page; close or reload the other tabs, then try again (nothing was changed)",
                        );
                        let _ = reject.call1(&JsValue::NULL, &rejection(failure));
                    }
                }
                "success" => {
                    let db = open_request
                        .result()
                        .ok()
                        .map(IdbDatabase::unchecked_from_js);
                    match db {
                        Some(db) if settled.replace(true) => db.close(),
                        Some(db) => {
                            let _ = resolve.call1(&JsValue::NULL, &db);
                        }
                        None => {}
                    }
                }
                _ => {
                    if !settled.replace(true) {
                        let error = open_request
                            .error()
                            .ok()
                            .flatten()
                            .map(JsValue::from)
                            .unwrap_or(JsValue::UNDEFINED);
                        let failure = StoreError::unavailable(format!(
                            "IndexedDB could not open the session database ({})",
                            js_message(&error)
                        ));
                        let _ = reject.call1(&JsValue::NULL, &rejection(failure));
                    }
                }
            })
        };
        let timeout = {
            let settled = settled.clone();
            let reject = reject_on_timeout;
            Closure::once_into_js(move || {
                if !settled.replace(true) {
                    let failure = StoreError::blocked(
                        "the session database did not open within 5 seconds: an upgrade is waiting for another tab that still has it open; close or reload the other tabs, then try again (nothing was changed)",
                    );
                    let _ = reject.call1(&JsValue::NULL, &rejection(failure));
                }
            })
        };
        set_timeout(timeout.unchecked_ref(), OPEN_TIMEOUT_MS);
        let handler: &Function = events.as_ref().unchecked_ref();
        open_request.set_onupgradeneeded(Some(handler));
        open_request.set_onblocked(Some(handler));
        open_request.set_onsuccess(Some(handler));
        open_request.set_onerror(Some(handler));
        let opened = JsFuture::from(promise).await;
        // The handlers stay attached while a blocked open may still succeed later, so
        // `events` must outlive this function in that case; it is small and rare.
        if opened.is_err() {
            events.forget();
        } else {
            drop(events);
        }
        drop(migration.take());
        let db: IdbDatabase = opened.map_err(failure_from_js)?.unchecked_into();

        let closed_by_other_tab = Rc::new(Cell::new(false));
        let on_version_change = {
            let db = db.clone();
            let closed = closed_by_other_tab.clone();
            // Another tab wants to upgrade or delete the database: let go at once, so that
            // tab is not blocked, and refuse further work here with a clear message.
            Closure::<dyn FnMut(Event)>::new(move |_event: Event| {
                closed.set(true);
                db.close();
            })
        };
        db.set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
        Ok(IdbBackend {
            db,
            closed_by_other_tab,
            _on_version_change: on_version_change,
        })
    }

    fn transaction(&self, mode: IdbTransactionMode) -> Result<IdbTransaction, StoreError> {
        if self.closed_by_other_tab.get() {
            return Err(StoreError::version_change(
                "the session database was upgraded or deleted from another tab, so this tab closed its connection; reload this page to continue (nothing that was saved is lost)",
            ));
        }
        let stores: Array = ALL_STORES.iter().map(|s| JsValue::from_str(s)).collect();
        self.db
            .transaction_with_str_sequence_and_mode(&stores, mode)
            .map_err(|e| idb_failure("could not start a database transaction", &e))
    }

    /// Every session row, with a problem description for each one that cannot be read.
    pub(crate) async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let store = tx
            .object_store(SESSIONS)
            .map_err(|e| idb_failure("list", &e))?;
        let all = request(store.get_all())
            .await
            .map_err(|e| idb_failure("could not list the sessions", &e))?;
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for value in Array::from(&all).iter() {
            // The id is the record's key, readable even when the row inside is not.
            let id = field(&value, "id").as_string().unwrap_or_default();
            match stored_row(&value) {
                Some(Ok(row)) => rows.push(row),
                Some(Err(problem)) => damaged.push(DamagedSession { id, problem }),
                None => {}
            }
        }
        Ok((rows, damaged))
    }

    /// Writes a batch in one transaction; see the module documentation for the revision check.
    /// Returns the session row as written.
    pub(crate) async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        let tx = self.transaction(IdbTransactionMode::Readwrite)?;
        let done = completion(&tx);
        let fail = |e: JsValue| idb_failure("the session could not be saved", &e);
        let sessions = tx.object_store(SESSIONS).map_err(fail)?;
        let existing = request(sessions.get(&id.into())).await.map_err(fail)?;
        let row = match ccm_store::next_row(id, stored_row(&existing), batch, mode) {
            Ok(row) => row,
            Err(failure) => {
                // Nothing was written yet; aborting makes sure nothing will be.
                let _ = tx.abort();
                let _ = done.await;
                return Err(failure);
            }
        };
        // Every record row is `{ session, <its key fields>, record }`.
        let put = |store: &IdbObjectStore, keys: &[(&str, JsValue)], record: String| {
            let mut fields = vec![("session", JsValue::from(id))];
            fields.extend(keys.iter().cloned());
            fields.push(("record", record.into()));
            store.put(&object(&fields)).map(|_| ())
        };
        let result = (|| -> Result<(), JsValue> {
            sessions.put(&object(&[("id", id.into()), ("row", encode(&row).into())]))?;
            let efforts = tx.object_store(EFFORTS)?;
            for record in &batch.efforts {
                let position = (record.position as f64).into();
                put(&efforts, &[("position", position)], encode(record))?;
            }
            let messages = tx.object_store(MESSAGES)?;
            for stored in &batch.messages {
                let keys = [
                    ("seq", (stored.message.seq as f64).into()),
                    ("log", log_key(&stored.log).into()),
                ];
                put(&messages, &keys, encode(stored))?;
            }
            let metrics = tx.object_store(METRICS)?;
            for point in &batch.metrics {
                put(
                    &metrics,
                    &[("turn", (point.turn as f64).into())],
                    encode(point),
                )?;
            }
            let attachments = tx.object_store(ATTACHMENTS)?;
            for attachment in &batch.attachments {
                let key = ("id", attachment.attachment.id.as_str().into());
                put(&attachments, &[key], encode(attachment))?;
            }
            let telemetry = tx.object_store(TELEMETRY)?;
            for entry in &batch.telemetry {
                put(
                    &telemetry,
                    &[("turn", (entry.turn as f64).into())],
                    encode(entry),
                )?;
            }
            Ok(())
        })();
        if let Err(error) = result {
            let _ = tx.abort();
            let _ = done.await;
            return Err(fail(error));
        }
        done.await.map_err(fail)?;
        Ok(row)
    }

    /// The stored telemetry of one turn, if any.
    pub(crate) async fn telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<TurnTelemetry>, StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("the turn's telemetry could not be read", &e);
        let key = Array::of2(&id.into(), &JsValue::from_f64(turn as f64));
        let value = request(tx.object_store(TELEMETRY).and_then(|s| s.get(&key)))
            .await
            .map_err(fail)?;
        if value.is_undefined() {
            return Ok(None);
        }
        decode(
            &format!("the telemetry of turn {turn}"),
            field(&value, "record").as_string().as_deref(),
        )
        .map(Some)
        .map_err(StoreError::Storage)
    }

    /// Reads what opening a session needs.
    pub(crate) async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("the session could not be read", &e);
        let store = |name: &str| tx.object_store(name).map_err(fail);
        let value = request(store(SESSIONS)?.get(&id.into()))
            .await
            .map_err(fail)?;
        let row = ccm_store::existing_row(id, stored_row(&value))?;
        let request_plan = row.header.load_request();
        let messages = store(MESSAGES)?;
        let by_log = messages.index(BY_LOG).map_err(fail)?;
        // Issue every read before awaiting any, so they run together.
        let efforts_read =
            request(store(EFFORTS)?.get_all_with_key(&session_range(id).map_err(fail)?.into()));
        let attachments_read = request(
            store(ATTACHMENTS)?.get_all_with_key(&session_text_range(id).map_err(fail)?.into()),
        );
        let mut log_reads = Vec::new();
        for effort in &request_plan.effort_logs {
            let range = log_range(id, &log_key(&LogRef::Effort(effort.clone()))).map_err(fail)?;
            log_reads.push((effort.clone(), request(by_log.get_all_with_key(&range))));
        }
        let ambient_range = log_range(id, &log_key(&LogRef::Ambient)).map_err(fail)?;
        let ambient_read = cursor_values(
            by_log.open_cursor_with_range_and_direction(&ambient_range, IdbCursorDirection::Prev),
            request_plan.ambient_tail as usize,
        );
        let metrics_read = cursor_values(
            store(METRICS)?.open_cursor_with_range_and_direction(
                &session_range(id).map_err(fail)?.into(),
                IdbCursorDirection::Prev,
            ),
            request_plan.history_tail as usize,
        );

        let mut loaded = LoadedRecords {
            header: Some(row.header.clone()),
            ..LoadedRecords::default()
        };
        let efforts_all = efforts_read.await.map_err(fail)?;
        loaded.efforts = decode_all(
            Array::from(&efforts_all).iter().map(|v| {
                let position = field(&v, "position").as_f64().unwrap_or(-1.0);
                record_text(&v, "record", format!("effort record {position}"))
            }),
            &mut loaded.unreadable,
        );
        // The size of every log the records name, counted through the index without reading
        // a message: how a load finds messages missing from logs it does not read. Issued
        // from the microtask of the efforts' success, while the transaction is active.
        let mut size_reads = Vec::new();
        let logs = std::iter::once(LogRef::Ambient).chain(
            loaded
                .efforts
                .iter()
                .map(|r| LogRef::Effort(r.effort.id.clone())),
        );
        for log in logs {
            let range = log_range(id, &log_key(&log)).map_err(fail)?;
            size_reads.push((log, request(by_log.count_with_key(&range))));
        }
        let mut log_sizes = std::collections::BTreeMap::new();
        for (log, read) in size_reads {
            let count = read.await.map_err(fail)?.as_f64().unwrap_or(0.0);
            log_sizes.insert(log, count as u64);
        }
        for (effort, read) in log_reads {
            let values = read.await.map_err(fail)?;
            let messages = messages_of(Array::from(&values).iter(), &mut loaded.unreadable);
            loaded.effort_logs.insert(effort, messages);
        }
        loaded.ambient_tail = messages_of(
            ambient_read.await.map_err(fail)?.into_iter(),
            &mut loaded.unreadable,
        );
        loaded.ambient_tail.reverse();
        loaded.history_tail = decode_all(
            metrics_read.await.map_err(fail)?.into_iter().map(|v| {
                let turn = field(&v, "turn").as_f64().unwrap_or(-1.0);
                record_text(&v, "record", format!("the metrics point of turn {turn}"))
            }),
            &mut loaded.unreadable,
        );
        loaded.history_tail.reverse();
        loaded.attachments = attachments_of(
            &attachments_read.await.map_err(fail)?,
            &mut loaded.unreadable,
        );
        loaded.log_sizes = Some(log_sizes);
        Ok((row, loaded))
    }

    /// The stored raw log of one effort, in sequence order, and the records that could not be
    /// read.
    pub(crate) async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("the effort's log could not be read", &e);
        let by_log = tx
            .object_store(MESSAGES)
            .and_then(|s| s.index(BY_LOG))
            .map_err(fail)?;
        let range = log_range(id, &log_key(&LogRef::Effort(effort.to_string()))).map_err(fail)?;
        let values = request(by_log.get_all_with_key(&range))
            .await
            .map_err(fail)?;
        let mut unreadable = Vec::new();
        let messages = messages_of(Array::from(&values).iter(), &mut unreadable);
        Ok((messages, unreadable))
    }

    /// The stored message records with sequence numbers from `from` up to (not including)
    /// `to`, of every log, and the records that could not be read.
    pub(crate) async fn messages_between(
        &self,
        id: &str,
        from: u64,
        to: u64,
    ) -> Result<(Vec<StoredMessage>, Vec<String>), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("stored messages could not be read", &e);
        if to <= from {
            return Ok((Vec::new(), Vec::new()));
        }
        let lower = Array::of2(&id.into(), &JsValue::from_f64(from as f64));
        let upper = Array::of2(&id.into(), &JsValue::from_f64((to - 1) as f64));
        let range = IdbKeyRange::bound(&lower, &upper).map_err(fail)?;
        let values = request(
            tx.object_store(MESSAGES)
                .and_then(|s| s.get_all_with_key(&range)),
        )
        .await
        .map_err(fail)?;
        let mut unreadable = Vec::new();
        let messages = stored_messages_of(Array::from(&values).iter(), &mut unreadable);
        Ok((messages, unreadable))
    }

    /// The stored message records with these sequence numbers (every log), read in one
    /// transaction; a missing or unreadable one is described instead.
    pub(crate) async fn messages_by_seq(
        &self,
        id: &str,
        seqs: &[u64],
    ) -> Result<(Vec<StoredMessage>, Vec<String>), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("stored messages could not be read", &e);
        let store = tx.object_store(MESSAGES).map_err(fail)?;
        // Every request is made before the first is awaited, so they run together.
        let reads: Vec<_> = seqs
            .iter()
            .map(|&seq| {
                let key = Array::of2(&id.into(), &JsValue::from_f64(seq as f64));
                (seq, request(store.get(&key)))
            })
            .collect();
        let mut values = Vec::with_capacity(reads.len());
        let mut unreadable = Vec::new();
        for (seq, read) in reads {
            let value = read.await.map_err(fail)?;
            if value.is_undefined() {
                unreadable.push(format!("message {seq} is missing from storage"));
            } else {
                values.push(value);
            }
        }
        let messages = stored_messages_of(values.into_iter(), &mut unreadable);
        Ok((messages, unreadable))
    }

    /// Every record of a session, for an export.
    pub(crate) async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readonly)?;
        let fail = |e: JsValue| idb_failure("the session could not be read for export", &e);
        let store = |name: &str| tx.object_store(name).map_err(fail);
        let value = request(store(SESSIONS)?.get(&id.into()))
            .await
            .map_err(fail)?;
        let row = match stored_row(&value) {
            None => return Err(StoreError::not_found(id)),
            Some(row) => row,
        };
        let range = session_range(id).map_err(fail)?;
        let efforts = request(store(EFFORTS)?.get_all_with_key(&range));
        let messages = request(store(MESSAGES)?.get_all_with_key(&range));
        let metrics = request(store(METRICS)?.get_all_with_key(&range));
        let text_range = session_text_range(id).map_err(fail)?;
        let attachments = request(store(ATTACHMENTS)?.get_all_with_key(&text_range));
        let mut read = StoredRecords::of(row);
        let text = |v: &JsValue| field(v, "record").as_string();
        read.efforts = decode_all(
            Array::from(&efforts.await.map_err(fail)?).iter().map(|v| {
                (
                    format!(
                        "effort record {}",
                        field(&v, "position").as_f64().unwrap_or(-1.0)
                    ),
                    text(&v),
                )
            }),
            &mut read.unreadable,
        );
        read.messages = decode_all(
            Array::from(&messages.await.map_err(fail)?).iter().map(|v| {
                (
                    format!("message {}", field(&v, "seq").as_f64().unwrap_or(-1.0)),
                    text(&v),
                )
            }),
            &mut read.unreadable,
        );
        read.metrics = decode_all(
            Array::from(&metrics.await.map_err(fail)?).iter().map(|v| {
                (
                    format!(
                        "the metrics point of turn {}",
                        field(&v, "turn").as_f64().unwrap_or(-1.0)
                    ),
                    text(&v),
                )
            }),
            &mut read.unreadable,
        );
        read.attachments = attachments_of(&attachments.await.map_err(fail)?, &mut read.unreadable);
        Ok(read)
    }

    /// Renames a session (its records are untouched).
    pub(crate) async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readwrite)?;
        let done = completion(&tx);
        let fail = |e: JsValue| idb_failure("the session could not be renamed", &e);
        let sessions = tx.object_store(SESSIONS).map_err(fail)?;
        let value = request(sessions.get(&id.into())).await.map_err(fail)?;
        let row = ccm_store::existing_row(id, stored_row(&value));
        let mut row = match row {
            Ok(row) => row,
            Err(failure) => {
                let _ = tx.abort();
                let _ = done.await;
                return Err(failure);
            }
        };
        row.name = name.to_string();
        row.updated_ms = now_ms;
        sessions
            .put(&object(&[("id", id.into()), ("row", encode(&row).into())]))
            .map_err(fail)?;
        done.await.map(|_| ()).map_err(fail)
    }

    /// Deletes a session and every record of it, in one transaction.
    pub(crate) async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let tx = self.transaction(IdbTransactionMode::Readwrite)?;
        let done = completion(&tx);
        let fail = |e: JsValue| idb_failure("the session could not be deleted", &e);
        let range = session_range(id).map_err(fail)?;
        let result = (|| -> Result<(), JsValue> {
            tx.object_store(SESSIONS)?.delete(&id.into())?;
            for store in [EFFORTS, MESSAGES, METRICS, TELEMETRY] {
                tx.object_store(store)?.delete(&range)?;
            }
            tx.object_store(ATTACHMENTS)?
                .delete(&session_text_range(id)?.into())?;
            Ok(())
        })();
        if let Err(error) = result {
            let _ = tx.abort();
            let _ = done.await;
            return Err(fail(error));
        }
        done.await.map(|_| ()).map_err(fail)
    }
}

/// The attachment records of a `getAll` result; unreadable ones are described.
fn attachments_of(
    values: &JsValue,
    unreadable: &mut Vec<String>,
) -> Vec<ccm_core::compaction::SessionAttachment> {
    decode_all(
        Array::from(values).iter().map(|v| {
            let id = field(&v, "id").as_string().unwrap_or_default();
            record_text(&v, "record", format!("attachment {id}"))
        }),
        unreadable,
    )
}

/// The stored session row of a `sessions` value: `None` when there is none, else the row or why
/// it cannot be read.
fn stored_row(value: &JsValue) -> Option<Result<SessionRow, String>> {
    (!value.is_undefined()).then(|| {
        decode(
            "the session's header record",
            field(value, "row").as_string().as_deref(),
        )
    })
}

/// Decodes message values as stored (with their log), describing the unreadable ones.
fn stored_messages_of(
    values: impl Iterator<Item = JsValue>,
    unreadable: &mut Vec<String>,
) -> Vec<StoredMessage> {
    decode_all::<StoredMessage>(
        values.map(|v| {
            let seq = field(&v, "seq").as_f64().unwrap_or(-1.0);
            record_text(&v, "record", format!("message {seq}"))
        }),
        unreadable,
    )
}

/// Decodes message values, describing the unreadable ones.
fn messages_of(
    values: impl Iterator<Item = JsValue>,
    unreadable: &mut Vec<String>,
) -> Vec<Message> {
    decode_all::<StoredMessage>(
        values.map(|v| {
            let seq = field(&v, "seq").as_f64().unwrap_or(-1.0);
            record_text(&v, "record", format!("message {seq}"))
        }),
        unreadable,
    )
    .into_iter()
    .map(|stored| stored.message)
    .collect()
}

/// The rejection value of our own promises for `failure`: an `Error` whose `code` property
/// says which kind it was, so that [`failure_from_js`] gets the same kind back.
fn rejection(failure: StoreError) -> JsValue {
    let code = match &failure {
        StoreError::Blocked(_) => "blocked",
        StoreError::Quota(_) => "quota",
        StoreError::Storage(_) => "storage",
        _ => "unavailable",
    };
    let error = js_sys::Error::new(&failure.to_string());
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(&error, &JsValue::from_str("code"), &JsValue::from_str(code));
    error.into()
}

/// A rejection value from our own promises is an `Error` with a code ([`rejection`]); anything
/// else is a browser error.
fn failure_from_js(value: JsValue) -> StoreError {
    let code = field(&value, "code").as_string();
    let message = js_message(&value);
    match code.as_deref() {
        Some("blocked") => StoreError::Blocked(message),
        Some("quota") => StoreError::Quota(message),
        Some("storage") => StoreError::Storage(message),
        _ => StoreError::Unavailable(message),
    }
}

/// Deletes the whole database (tests and "forget everything" buttons).
pub(crate) async fn delete_database(name: &str) -> Result<(), StoreError> {
    let factory = factory().map_err(StoreError::Unavailable)?;
    let req = factory
        .delete_database(name)
        .map_err(|e| idb_failure("could not delete the database", &e))?;
    request(Ok(req.into()))
        .await
        .map(|_| ())
        .map_err(|e| idb_failure("could not delete the database", &e))
}
