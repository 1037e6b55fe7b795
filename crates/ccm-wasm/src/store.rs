//! The `SessionStore` class: sessions that survive the browser, in IndexedDB or localStorage.

use crate::args::{arg, counter_arg, Limits, Size};
use crate::counter::{check_counter, counter_for, counter_named, JsTokenCounter};
use crate::error::{fail, Code, Failure};
use crate::options::SessionOptions;
use crate::session::{document_config, document_text, Session, SessionCell, StoreLink};
use crate::storage::records::SessionRow;
use crate::storage::{idb, local, Backend, WriteMode};
use crate::types::to_js;
use ccm_core::snapshot::SessionDocument;
use ccm_core::tokens::ApproximateCounter;
use ccm_core::Session as CoreSession;
use ccm_import::CcmFiles;
use js_sys::Promise;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use tsify::Tsify;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// Where `SessionStore.open` keeps sessions.
#[derive(Debug, Default, Clone, Tsify, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreOptions {
    /// `"auto"` (default: IndexedDB, else localStorage), `"indexeddb"` or `"localstorage"`.
    #[tsify(optional, type = "\"auto\" | \"indexeddb\" | \"localstorage\"")]
    pub backend: Option<String>,
    /// The IndexedDB database name, and the localStorage key prefix. Default `"ccm"`.
    #[tsify(optional)]
    pub name: Option<String>,
}

/// One stored session, as `list()` shows it.
#[derive(Debug, Clone, Tsify, Serialize)]
pub struct SessionInfo {
    /// Its id in this store.
    pub id: String,
    /// The name a person gave it.
    pub name: String,
    /// Creation time, ms since the epoch.
    pub created_ms: f64,
    /// Last save, rename or import, ms since the epoch.
    pub updated_ms: f64,
    /// Turns completed.
    pub turn_count: f64,
    /// Stored messages.
    pub message_count: f64,
    /// Revision of the last save.
    pub revision: f64,
    /// Set when the session's header record cannot be read: why, in words for the person.
    /// Such a session cannot be opened, but `exportSession` still takes out everything
    /// readable; its other fields are zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
    pub damaged: Option<String>,
}

/// What a save wrote.
#[derive(Debug, Clone, Tsify, Serialize)]
pub struct SaveReport {
    /// The stored revision after the save.
    pub revision: f64,
    /// Records written (the session row included): what changed, not the whole history.
    pub records_written: f64,
}

/// The files of a session in the original CCM layout, as text.
#[derive(Debug, Default, Clone, Tsify, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CcmFileTexts {
    /// `manifest.yaml`.
    pub manifest: String,
    /// `raw.jsonl` (the ambient log), if the session has one.
    #[tsify(optional)]
    pub raw: Option<String>,
    /// `efforts/<id>.jsonl` by effort id (the file name without `.jsonl`), as a plain object.
    #[tsify(optional, type = "Record<string, string>")]
    pub efforts: Option<BTreeMap<String, String>>,
    /// `session_state.json` (the turn counter), if the session has one.
    #[tsify(optional)]
    pub session_state: Option<String>,
}

/// What an import of the original CCM layout did.
#[derive(Debug, Clone, Tsify, Serialize)]
pub struct CcmImportReport {
    /// The new stored session.
    pub session: SessionInfo,
    /// What had to be assumed or skipped, one sentence each.
    pub notes: Vec<String>,
}

fn info(row: &SessionRow) -> SessionInfo {
    SessionInfo {
        id: row.id.clone(),
        name: row.name.clone(),
        created_ms: row.created_ms,
        updated_ms: row.updated_ms,
        turn_count: row.header.turn as f64,
        message_count: row.header.next_seq as f64,
        revision: row.header.revision as f64,
        damaged: None,
    }
}

/// A name or an id argument of a `SessionStore` method, within the default name limit.
fn name_arg(function: &str, name: &str, value: &JsValue) -> Result<String, JsValue> {
    arg(function, name)
        .string(value, Size::Name, &Limits::default())
        .map_err(fail)
}

/// A promise rejected with `failure`: argument errors of the asynchronous methods reject like
/// every other error of theirs, rather than throwing before a promise exists.
fn rejected(failure: JsValue) -> Promise {
    Promise::reject(&failure)
}

/// Unwraps a checked argument, or returns the rejected promise from the binding.
macro_rules! checked {
    ($value:expr) => {
        match $value {
            Ok(value) => value,
            Err(error) => return rejected(error),
        }
    };
}

/// Where a prepared save writes.
enum SaveTarget {
    /// The stored session of this id.
    Existing(String),
    /// A new stored session (the first save of a session made with `new Session()`).
    New,
}

/// A save whose batch is taken and whose session is marked busy; [`PreparedSave::finish`]
/// writes it.
struct PreparedSave {
    cell: Rc<RefCell<SessionCell>>,
    batch: ccm_core::store::WriteBatch,
    target: SaveTarget,
    backend: Rc<Backend>,
}

impl PreparedSave {
    async fn finish(self) -> Result<SaveReport, JsValue> {
        let PreparedSave {
            cell,
            batch,
            target,
            backend,
        } = self;
        let outcome = match target {
            SaveTarget::New => {
                let id = new_id();
                let mode = WriteMode::Create {
                    now_ms: js_sys::Date::now(),
                    name: String::new(),
                };
                backend.write(&id, &batch, mode).await.map(|_| id)
            }
            SaveTarget::Existing(id) => {
                let mode = WriteMode::Save {
                    now_ms: js_sys::Date::now(),
                };
                backend.write(&id, &batch, mode).await.map(|_| id)
            }
        };
        let mut state = cell.borrow_mut();
        state.busy = None;
        let id = outcome.map_err(fail)?;
        state.core.mark_saved(&batch).map_err(fail)?;
        state.link = Some(StoreLink { backend, id });
        Ok(SaveReport {
            revision: batch.header.revision as f64,
            records_written: batch.record_count() as f64,
        })
    }
}

/// A new session id: time and randomness, so two tabs never pick the same one.
fn new_id() -> String {
    let random = (js_sys::Math::random() * 2f64.powi(48)) as u64;
    format!("s{:x}-{random:012x}", js_sys::Date::now() as u64)
}

/// Reads the logs a tool call needs into a stored session (see `Session.loadLogsForTool`).
pub(crate) async fn load_logs_for_tool(
    cell: &Rc<RefCell<SessionCell>>,
    name: &str,
    args_json: &str,
) -> Result<(), Failure> {
    let needed = cell.borrow().core.logs_needed_for_tool(name, args_json);
    load_effort_logs(cell, &needed).await
}

/// Reads the raw logs of `efforts` from the session's store and attaches them. A session that
/// is not linked to a store has every log in memory, so there is nothing to read.
pub(crate) async fn load_effort_logs(
    cell: &Rc<RefCell<SessionCell>>,
    efforts: &[String],
) -> Result<(), Failure> {
    let (backend, id) = match (&cell.borrow().link, efforts.is_empty()) {
        (Some(link), false) => (link.backend.clone(), link.id.clone()),
        _ => return Ok(()),
    };
    for effort in efforts {
        let (messages, unreadable) = backend.effort_log(&id, effort).await?;
        let mut cell = cell.borrow_mut();
        cell.load_problems.extend(unreadable);
        // A log with messages missing from storage is attached as far as it is readable; what
        // is missing joins the session's load problems.
        let missing = cell.core.attach_effort_log(effort, messages)?;
        cell.load_problems.extend(missing);
    }
    Ok(())
}

/// Sessions kept in the browser: IndexedDB by default, localStorage where IndexedDB is
/// unavailable.
///
/// ```ts
/// const store = await SessionStore.open();
/// const session = await store.create("Auth work");
/// session.beginTurn("Let's fix the auth bug"); session.openEffort("auth bug"); session.endTurn("On it.");
/// await store.save(session);             // writes only what the turn added
/// const again = await store.load(session.storeId!);
/// ```
///
/// A save is refused with `code: "conflict"` when another window saved the same session
/// first; load it again to continue. Nothing already stored is changed by a failed save.
#[wasm_bindgen]
pub struct SessionStore {
    backend: Rc<Backend>,
    fallback_reason: Option<String>,
}

impl SessionStore {
    /// Opens a store (Rust form of `SessionStore.open`).
    ///
    /// # Errors
    /// When the requested backend is unavailable, or neither is in `"auto"` mode.
    pub async fn open_with(options: StoreOptions) -> Result<SessionStore, JsValue> {
        let name = options.name.unwrap_or_else(|| "ccm".to_string());
        let choice = options.backend.unwrap_or_else(|| "auto".to_string());
        let (backend, fallback_reason) = match choice.as_str() {
            "indexeddb" => (Backend::Idb(idb::IdbBackend::open(&name).await.map_err(fail)?), None),
            "localstorage" => (Backend::Local(local::LocalBackend::open(&name).map_err(fail)?), None),
            "auto" => match idb::IdbBackend::open(&name).await {
                Ok(backend) => (Backend::Idb(backend), None),
                Err(failure) if failure.code == Code::Unavailable => {
                    let backend = local::LocalBackend::open(&name).map_err(|local| {
                        fail(Failure::new(
                            Code::Unavailable,
                            format!("no browser storage is available: {}; {}", failure.message, local.message),
                        ))
                    })?;
                    (Backend::Local(backend), Some(failure.message))
                }
                Err(failure) => return Err(fail(failure)),
            },
            other => {
                return Err(fail(Failure::new(
                    Code::Argument,
                    format!("unknown storage backend '{other}'; use \"auto\", \"indexeddb\" or \"localstorage\""),
                )))
            }
        };
        Ok(SessionStore {
            backend: Rc::new(backend),
            fallback_reason,
        })
    }

    /// Every stored session (Rust form of `list`).
    ///
    /// # Errors
    /// A storage failure.
    pub async fn list_sessions(&self) -> Result<Vec<SessionInfo>, JsValue> {
        let (rows, damaged) = self.backend.rows().await.map_err(fail)?;
        let mut sessions: Vec<SessionInfo> = rows.iter().map(info).collect();
        sessions.sort_by(|a, b| b.updated_ms.total_cmp(&a.updated_ms));
        // Damaged sessions come last, listed rather than hidden: their records are still
        // stored and an export takes out what is readable.
        sessions.extend(damaged.into_iter().map(|d| SessionInfo {
            name: format!("Damaged session {}", d.id),
            id: d.id,
            created_ms: 0.0,
            updated_ms: 0.0,
            turn_count: 0.0,
            message_count: 0.0,
            revision: 0.0,
            damaged: Some(d.problem),
        }));
        Ok(sessions)
    }

    async fn insert(
        &self,
        core: &CoreSession,
        name: &str,
    ) -> Result<(String, SessionRow), Failure> {
        let batch = core.full_write_batch()?;
        let id = new_id();
        let mode = WriteMode::Create {
            now_ms: js_sys::Date::now(),
            name: name.to_string(),
        };
        self.backend.write(&id, &batch, mode).await?;
        let row = SessionRow {
            id: id.clone(),
            name: name.to_string(),
            created_ms: js_sys::Date::now(),
            updated_ms: js_sys::Date::now(),
            header: batch.header.clone(),
        };
        Ok((id, row))
    }

    /// Creates and stores a new session (Rust form of `create`).
    ///
    /// # Errors
    /// Invalid options or a storage failure.
    pub async fn create_session(
        &self,
        name: &str,
        options: SessionOptions,
        counter: Option<JsTokenCounter>,
    ) -> Result<Session, JsValue> {
        let config = options.resolve().map_err(fail)?;
        let counter = counter_for(&config, counter).map_err(fail)?;
        let mut core = CoreSession::with_counter(config, counter).map_err(fail)?;
        let batch = core.full_write_batch().map_err(fail)?;
        let (id, _) = self.insert(&core, name).await.map_err(fail)?;
        core.mark_saved(&batch).map_err(fail)?;
        let link = StoreLink {
            backend: self.backend.clone(),
            id,
        };
        Ok(Session::from_core(core, Some(link), Vec::new()))
    }

    /// Opens a stored session (Rust form of `load`).
    ///
    /// # Errors
    /// An unknown id, an unreadable header, a counting rule this build lacks, or a storage
    /// failure. Unreadable records other than the header do not fail the load: they are listed
    /// in the session's `loadProblems`.
    pub async fn load_session(
        &self,
        id: &str,
        counter: Option<JsTokenCounter>,
    ) -> Result<Session, JsValue> {
        let (row, records) = self.backend.load(id).await.map_err(fail)?;
        let counter =
            counter_named(&row.header.counted_with, &row.header.config, counter).map_err(fail)?;
        let (core, report) = CoreSession::from_store(records, counter).map_err(fail)?;
        check_counter().map_err(fail)?;
        let link = StoreLink {
            backend: self.backend.clone(),
            id: id.to_string(),
        };
        Ok(Session::from_core(core, Some(link), report.problems))
    }

    /// Saves what changed since the last save (Rust form of `save`).
    ///
    /// # Errors
    /// `conflict` when another window saved first, `quota` when storage is full, `turn`
    /// during a turn, `busy` while another save of it runs.
    pub async fn save_session(&self, session: &Session) -> Result<SaveReport, JsValue> {
        let prepared = self.prepare_save(session)?;
        prepared.finish().await
    }

    /// Takes what the save will write, synchronously: the state at the moment `save` is
    /// called is what gets stored, so a `beginTurn` in the same tick (before the returned
    /// promise first runs) neither fails the save nor slips into it.
    fn prepare_save(&self, session: &Session) -> Result<PreparedSave, JsValue> {
        let cell = session.cell.clone();
        let mut state = cell.borrow_mut();
        if let Some(busy) = state.busy {
            return Err(fail(Failure::new(
                Code::Busy,
                format!("{busy} of this session is in progress; await it first"),
            )));
        }
        let (batch, target) = match &state.link {
            Some(link) if Rc::ptr_eq(&link.backend, &self.backend) => (
                state.core.write_batch().map_err(fail)?,
                SaveTarget::Existing(link.id.clone()),
            ),
            Some(_) => return Err(fail(Failure::new(
                Code::Argument,
                "this session belongs to another store; save it with the store it was opened from",
            ))),
            // A session made with `new Session()` is stored as a new one on its first save.
            None => (
                state.core.full_write_batch().map_err(fail)?,
                SaveTarget::New,
            ),
        };
        state.busy = Some("a save");
        drop(state);
        Ok(PreparedSave {
            cell,
            batch,
            target,
            backend: self.backend.clone(),
        })
    }

    /// The whole stored session as one versioned document (Rust form of `exportSession`).
    /// When records are damaged (unreadable, missing, or not adding up), the document holds
    /// everything readable, placeholders for what is not, and lists each repair in its
    /// `repairs` field; it imports like any other. The damaged records stay stored as they are.
    ///
    /// # Errors
    /// An unknown id, an unreadable session header, or a storage failure.
    pub async fn export_document(&self, id: &str) -> Result<SessionDocument, JsValue> {
        let records = self.backend.read_all(id).await.map_err(fail)?;
        let mut unreadable = records.unreadable;
        let header = match records.row {
            Ok(row) => row.header,
            Err(problem) => {
                // Without its header the session's counters and settings are unknown: a
                // fresh session's header stands in, and the repair below rebuilds the
                // counters from the records themselves.
                unreadable.insert(0, format!("{problem}; default settings stand in for it"));
                CoreSession::with_counter(Default::default(), Arc::new(ApproximateCounter))
                    .map_err(fail)?
                    .header()
            }
        };
        // The session's own counting rule where this build has it, so checking the export
        // recounts nothing; otherwise the approximation (an import recounts either way).
        let counter = counter_named(&header.counted_with, &header.config, None)
            .unwrap_or_else(|_| Arc::new(ApproximateCounter));
        // The records as they are when they add up, otherwise (or with records unreadable or
        // attachments missing) a repaired document that says what it repaired; either way one
        // that imports.
        SessionDocument::from_stored_records(
            header,
            records.efforts,
            records.messages,
            records.metrics,
            records.attachments,
            unreadable,
            counter,
        )
        .map_err(fail)
    }

    /// Stores a session restored from a document as a new session (Rust form of
    /// `importSession`).
    ///
    /// # Errors
    /// An invalid document (nothing is stored then) or a storage failure.
    pub async fn import_document(
        &self,
        json: &str,
        name: &str,
        counter: Option<JsTokenCounter>,
    ) -> Result<SessionInfo, JsValue> {
        let counter = counter_for(&document_config(json), counter).map_err(fail)?;
        let core = CoreSession::from_json_with_counter(json, counter).map_err(fail)?;
        check_counter().map_err(fail)?;
        let (_, row) = self.insert(&core, name).await.map_err(fail)?;
        Ok(info(&row))
    }
}

#[wasm_bindgen]
impl SessionStore {
    /// Opens the session store. `backend: "auto"` (the default) uses IndexedDB, and falls back
    /// to localStorage where IndexedDB is unavailable (`fallbackReason` says why).
    #[wasm_bindgen(unchecked_return_type = "Promise<SessionStore>")]
    pub fn open(
        #[wasm_bindgen(unchecked_optional_param_type = "StoreOptions")] options: JsValue,
    ) -> Promise {
        let given = checked!(arg("SessionStore.open", "options")
            .options_object(&options, &["backend", "name"], Limits::default().name_chars)
            .map_err(fail));
        let options = match given {
            None => StoreOptions::default(),
            Some(_) => {
                let field = |key: &str| -> Result<Option<String>, JsValue> {
                    let value = js_sys::Reflect::get(&options, &JsValue::from_str(key))?;
                    arg("SessionStore.open", &format!("options.{key}"))
                        .optional_string(&value, Size::Name, &Limits::default())
                        .map_err(fail)
                };
                StoreOptions {
                    backend: checked!(field("backend")),
                    name: checked!(field("name")),
                }
            }
        };
        future_to_promise(async move { SessionStore::open_with(options).await.map(JsValue::from) })
    }

    /// `"indexeddb"` or `"localstorage"`.
    #[wasm_bindgen(getter, unchecked_return_type = "StorageBackend")]
    pub fn backend(&self) -> String {
        self.backend.kind().to_string()
    }

    /// Why IndexedDB was not used, when `"auto"` fell back to localStorage.
    #[wasm_bindgen(getter, js_name = fallbackReason)]
    pub fn fallback_reason(&self) -> Option<String> {
        self.fallback_reason.clone()
    }

    /// Every stored session, most recently updated first.
    #[wasm_bindgen(unchecked_return_type = "Promise<SessionInfo[]>")]
    pub fn list(&self) -> Promise {
        let store = self.handle();
        future_to_promise(async move {
            let sessions = store.list_sessions().await?;
            to_js::<_, JsValue>(&sessions).map_err(fail)
        })
    }

    /// Creates a new session, stores it, and returns it (linked to this store).
    #[wasm_bindgen(unchecked_return_type = "Promise<Session>")]
    pub fn create(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> Promise {
        let store = self.handle();
        let name = checked!(name_arg("SessionStore.create", "name", &name));
        let options =
            checked!(SessionOptions::read_js("SessionStore.create", &options).map_err(fail));
        let limits = checked!(options.limits().map_err(fail));
        let counter =
            checked!(counter_arg(arg("SessionStore.create", "counter"), &counter).map_err(fail));
        future_to_promise(async move {
            store
                .create_session(&name, options, counter)
                .await
                .map(|session| JsValue::from(session.with_limits(limits)))
        })
    }

    /// Opens a stored session: its header, effort records, the open efforts' logs, the
    /// ambient tail and the recent metrics, never its whole history. Concluded efforts' logs
    /// are read when a tool needs them (`Session.loadLogsForTool`, or `runTurn` by itself).
    /// Records that cannot be read are skipped and listed in `session.loadProblems`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Session>")]
    pub fn load(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> Promise {
        let store = self.handle();
        let id = checked!(name_arg("SessionStore.load", "id", &id));
        let counter =
            checked!(counter_arg(arg("SessionStore.load", "counter"), &counter).map_err(fail));
        future_to_promise(async move { store.load_session(&id, counter).await.map(JsValue::from) })
    }

    /// Saves what changed in `session` since its last save, in one transaction. A session
    /// made with `new Session()` is stored as a new session on its first save.
    #[wasm_bindgen(unchecked_return_type = "Promise<SaveReport>")]
    pub fn save(&self, session: &Session) -> Promise {
        // Prepared now, not when the promise first runs: see `prepare_save`.
        let prepared = match self.handle().prepare_save(session) {
            Ok(prepared) => prepared,
            Err(error) => return Promise::reject(&error),
        };
        future_to_promise(async move {
            let report = prepared.finish().await?;
            to_js::<_, JsValue>(&report).map_err(fail)
        })
    }

    /// The stored request telemetry of one turn of a stored session (plan ids, exclusions,
    /// tool trace, usage), or `null`. Telemetry is diagnostic: opening a session never reads it.
    #[wasm_bindgen(
        js_name = turnTelemetry,
        unchecked_return_type = "Promise<TurnTelemetry | null>"
    )]
    pub fn turn_telemetry(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] turn: JsValue,
    ) -> Promise {
        let backend = self.backend.clone();
        let id = checked!(name_arg("SessionStore.turnTelemetry", "id", &id));
        let turn = checked!(arg("SessionStore.turnTelemetry", "turn")
            .whole_number(&turn, 0, crate::args::MAX_SAFE_INTEGER)
            .map_err(fail));
        future_to_promise(async move {
            let entry = backend.telemetry(&id, turn).await.map_err(fail)?;
            to_js::<_, JsValue>(&entry).map_err(fail)
        })
    }

    /// Renames a stored session.
    #[wasm_bindgen(js_name = rename, unchecked_return_type = "Promise<void>")]
    pub fn rename_js(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Promise {
        let backend = self.backend.clone();
        let id = checked!(name_arg("SessionStore.rename", "id", &id));
        let name = checked!(name_arg("SessionStore.rename", "name", &name));
        future_to_promise(async move {
            backend
                .rename(&id, &name, js_sys::Date::now())
                .await
                .map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a stored session and every record of it.
    #[wasm_bindgen(js_name = delete, unchecked_return_type = "Promise<void>")]
    pub fn delete_js(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> Promise {
        let backend = self.backend.clone();
        let id = checked!(name_arg("SessionStore.delete", "id", &id));
        future_to_promise(async move {
            backend.delete(&id).await.map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The whole stored session as its versioned JSON document, read from every record. When
    /// storage is damaged it still exports everything readable, with placeholders and a
    /// `repairs` list in the document, and the result always imports.
    #[wasm_bindgen(js_name = exportSession, unchecked_return_type = "Promise<string>")]
    pub fn export_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> Promise {
        let store = self.handle();
        let id = checked!(name_arg("SessionStore.exportSession", "id", &id));
        future_to_promise(async move {
            let document = store.export_document(&id).await?;
            serde_json::to_string(&document)
                .map(JsValue::from)
                .map_err(|e| fail(Failure::new(Code::Snapshot, e.to_string())))
        })
    }

    /// Stores a session document (a JSON string or the object `Session.toJSON()` returns) as a
    /// new session. Nothing is stored when the document is invalid.
    #[wasm_bindgen(js_name = importSession, unchecked_return_type = "Promise<SessionInfo>")]
    pub fn import_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | SessionDocument")] document: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> Promise {
        let store = self.handle();
        let text = checked!(document_text("SessionStore.importSession", &document).map_err(fail));
        let name = checked!(name_arg("SessionStore.importSession", "name", &name));
        let counter = checked!(
            counter_arg(arg("SessionStore.importSession", "counter"), &counter).map_err(fail)
        );
        future_to_promise(async move {
            let created = store.import_document(&text, &name, counter).await?;
            to_js::<_, JsValue>(&created).map_err(fail)
        })
    }

    /// Imports a session in the original CCM file layout (`manifest.yaml`, `raw.jsonl`,
    /// `efforts/<id>.jsonl`, given as text) as a new session, recounting every token.
    #[wasm_bindgen(js_name = importCcmFiles, unchecked_return_type = "Promise<CcmImportReport>")]
    pub fn import_ccm_files(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CcmFileTexts")] files: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> Promise {
        let store = self.handle();
        let files = checked!(ccm_file_texts(&files).map_err(fail));
        let name = checked!(name_arg("SessionStore.importCcmFiles", "name", &name));
        let options = checked!(
            SessionOptions::read_js("SessionStore.importCcmFiles", &options).map_err(fail)
        );
        let counter =
            checked!(
                counter_arg(arg("SessionStore.importCcmFiles", "counter"), &counter).map_err(fail)
            );
        future_to_promise(async move {
            let config = options.resolve().map_err(fail)?;
            let counter = counter_for(&config, counter).map_err(fail)?;
            let efforts = files.efforts.unwrap_or_default();
            let imported = ccm_import::convert(
                &CcmFiles {
                    manifest_yaml: &files.manifest,
                    raw_jsonl: files.raw.as_deref().unwrap_or(""),
                    effort_logs: efforts
                        .iter()
                        .map(|(id, text)| (id.as_str(), text.as_str()))
                        .collect(),
                    session_state_json: files.session_state.as_deref(),
                },
                config,
                counter.as_ref(),
            )
            .map_err(fail)?;
            check_counter().map_err(fail)?;
            let core = CoreSession::from_document(imported.document, counter).map_err(fail)?;
            let (_, row) = store.insert(&core, &name).await.map_err(fail)?;
            to_js::<_, JsValue>(&CcmImportReport {
                session: info(&row),
                notes: imported.notes,
            })
            .map_err(fail)
        })
    }

    /// Deletes a whole IndexedDB database of sessions (default name `"ccm"`), for tests and
    /// "forget everything" buttons. Other tabs' connections let go of it by themselves.
    #[wasm_bindgen(js_name = deleteDatabase, unchecked_return_type = "Promise<void>")]
    pub fn delete_database_js(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Promise {
        let name = checked!(name_arg("SessionStore.deleteDatabase", "name", &name));
        future_to_promise(async move {
            idb::delete_database(&name).await.map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// The files of `importCcmFiles`, checked: an object of the four known keys, with a text (or
/// an object of texts) each. A session's files may be large, so each text is bounded like a
/// session document.
fn ccm_file_texts(value: &JsValue) -> Result<CcmFileTexts, Failure> {
    const FUNCTION: &str = "SessionStore.importCcmFiles";
    let bound = crate::session::MAX_DOCUMENT_CHARS;
    let files = arg(FUNCTION, "files");
    if value.is_undefined() || value.is_null() {
        return Err(files.wrong_type(
            "an object { manifest, raw?, efforts?, sessionState? }",
            value,
        ));
    }
    let object = files
        .options_object(
            value,
            &["manifest", "raw", "efforts", "sessionState"],
            bound,
        )?
        .unwrap_or_default();
    let field =
        |key: &str| js_sys::Reflect::get(&object, &JsValue::from_str(key)).unwrap_or_default();
    let text = |key: &str, value: &JsValue| {
        arg(FUNCTION, &format!("files.{key}")).optional_string(
            value,
            Size::Fixed(bound),
            &Limits::default(),
        )
    };
    let manifest = arg(FUNCTION, "files.manifest").string(
        &field("manifest"),
        Size::Fixed(bound),
        &Limits::default(),
    )?;
    let efforts_value = field("efforts");
    let efforts = if efforts_value.is_undefined() || efforts_value.is_null() {
        None
    } else {
        let efforts_arg = arg(FUNCTION, "files.efforts");
        if !efforts_value.is_object() || js_sys::Array::is_array(&efforts_value) {
            return Err(efforts_arg.wrong_type("an object of texts by effort id", &efforts_value));
        }
        let efforts_object: js_sys::Object = efforts_value.clone().unchecked_into();
        let mut efforts = BTreeMap::new();
        for key in js_sys::Object::keys(&efforts_object).iter() {
            let id = key.as_string().unwrap_or_default();
            let value = js_sys::Reflect::get(&efforts_object, &key).unwrap_or_default();
            let log = arg(FUNCTION, &format!("files.efforts.{id}")).string(
                &value,
                Size::Fixed(bound),
                &Limits::default(),
            )?;
            efforts.insert(id, log);
        }
        Some(efforts)
    };
    Ok(CcmFileTexts {
        manifest,
        raw: text("raw", &field("raw"))?,
        efforts,
        session_state: text("sessionState", &field("sessionState"))?,
    })
}

/// The Rust forms of the methods whose JavaScript forms check `JsValue` arguments.
impl SessionStore {
    /// Renames a stored session (Rust form of `rename`).
    pub fn rename(&self, id: String, name: String) -> Promise {
        self.rename_js(id.into(), name.into())
    }

    /// Deletes a stored session (Rust form of `delete`).
    pub fn delete(&self, id: String) -> Promise {
        self.delete_js(id.into())
    }

    /// Deletes a whole IndexedDB database of sessions (Rust form of `deleteDatabase`).
    pub fn delete_database(name: String) -> Promise {
        SessionStore::delete_database_js(name.into())
    }
}

impl SessionStore {
    /// A second handle on the same backend, for futures that outlive one call.
    fn handle(&self) -> SessionStore {
        SessionStore {
            backend: self.backend.clone(),
            fallback_reason: self.fallback_reason.clone(),
        }
    }
}
