//! The `SessionStore` class: sessions that survive the browser, in IndexedDB or localStorage.

use crate::args::{arg, counter_arg, Limits, Size};
use crate::counter::{host_counter, JsTokenCounter};
use crate::error::{fail, Code, Failure, JsResult};
use crate::options::SessionOptions;
use crate::session::{document_text, Session};
use crate::types::to_js;
use ccm_browser::{BackendChoice, BrowserStore, PreparedSave};
use ccm_core::snapshot::SessionDocument;
use ccm_import::CcmFiles;
use js_sys::Promise;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
#[derive(Debug, Default, Clone, Tsify, Deserialize, Serialize)]
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

// The original layout's other direction sits here with its import, so that the session's
// module does not depend on the store's.
#[wasm_bindgen]
impl Session {
    /// The session in the original CCM file layout, as texts in the shape
    /// `SessionStore.importCcmFiles` reads: `manifest` (`manifest.yaml`), `raw` (`raw.jsonl`),
    /// `efforts` (`efforts/<id>.jsonl` by id) and `sessionState` (`session_state.json`). An
    /// import of them gives back the same conversation; what the layout cannot hold (pins,
    /// compaction state, attachments, metrics) is left out. Like `toJSON`, it needs the whole
    /// session in memory.
    #[wasm_bindgen(js_name = toCcmFiles, unchecked_return_type = "CcmFileTexts")]
    pub fn to_ccm_files(&self) -> JsResult<JsValue> {
        let document = self.read(|s| s.to_document())?.map_err(fail)?;
        let files = ccm_import::export(&document);
        let texts = CcmFileTexts {
            manifest: files.manifest_yaml,
            raw: Some(files.raw_jsonl),
            efforts: Some(files.effort_logs.into_iter().collect()),
            session_state: Some(files.session_state_json),
        };
        to_js(&texts).map_err(fail)
    }
}

/// What an import of the original CCM layout did.
#[derive(Debug, Clone, Tsify, Serialize)]
pub struct CcmImportReport {
    /// The new stored session.
    pub session: SessionInfo,
    /// What had to be assumed or skipped, one sentence each.
    pub notes: Vec<String>,
}

impl From<ccm_browser::SessionInfo> for SessionInfo {
    fn from(info: ccm_browser::SessionInfo) -> SessionInfo {
        // Every field but `branch`: the package's list leaves branches out for now; the app
        // reads them natively.
        SessionInfo {
            id: info.id,
            name: info.name,
            created_ms: info.created_ms,
            updated_ms: info.updated_ms,
            turn_count: info.turn_count,
            message_count: info.message_count,
            revision: info.revision,
            damaged: info.damaged,
        }
    }
}

impl From<ccm_browser::SaveReport> for SaveReport {
    fn from(report: ccm_browser::SaveReport) -> SaveReport {
        SaveReport {
            revision: report.revision as f64,
            records_written: report.records_written as f64,
        }
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
    inner: BrowserStore,
}

impl SessionStore {
    /// Opens a store (the work of `SessionStore.open`).
    ///
    /// # Errors
    /// When the requested backend is unavailable, or neither is in `"auto"` mode.
    async fn open_with(options: StoreOptions) -> Result<SessionStore, JsValue> {
        let name = options.name.unwrap_or_else(|| "ccm".to_string());
        let choice = match options.backend.as_deref().unwrap_or("auto") {
            "auto" => BackendChoice::Auto,
            "indexeddb" => BackendChoice::IndexedDb,
            "localstorage" => BackendChoice::LocalStorage,
            other => {
                return Err(fail(Failure::new(
                    Code::Argument,
                    format!("unknown storage backend '{other}'; use \"auto\", \"indexeddb\" or \"localstorage\""),
                )))
            }
        };
        let inner = BrowserStore::open(choice, &name).await.map_err(fail)?;
        Ok(SessionStore { inner })
    }

    /// Every stored session (the work of `list`).
    ///
    /// # Errors
    /// A storage failure.
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>, JsValue> {
        let sessions = self.inner.list().await.map_err(fail)?;
        Ok(sessions.into_iter().map(SessionInfo::from).collect())
    }

    /// Creates and stores a new session (the work of `create`).
    ///
    /// # Errors
    /// Invalid options or a storage failure.
    async fn create_session(
        &self,
        name: &str,
        options: SessionOptions,
        counter: Option<JsTokenCounter>,
    ) -> Result<Session, JsValue> {
        let config = options.resolve().map_err(fail)?;
        let counter = host_counter(counter).map_err(fail)?;
        let session = self
            .inner
            .create(name, config, counter)
            .await
            .map_err(fail)?;
        Ok(Session::wrap(session))
    }

    /// Opens a stored session (the work of `load`).
    ///
    /// # Errors
    /// An unknown id, an unreadable header, a counting rule this build lacks, or a storage
    /// failure. Unreadable records other than the header do not fail the load: they are listed
    /// in the session's `loadProblems`.
    async fn load_session(
        &self,
        id: &str,
        counter: Option<JsTokenCounter>,
    ) -> Result<Session, JsValue> {
        let counter = host_counter(counter).map_err(fail)?;
        let session = self.inner.load(id, counter).await.map_err(fail)?;
        Ok(Session::wrap(session))
    }

    /// Takes what the save will write, synchronously: the state at the moment `save` is
    /// called is what gets stored, so a `beginTurn` in the same tick (before the returned
    /// promise first runs) neither fails the save nor slips into it.
    fn prepare_save(&self, session: &Session) -> Result<PreparedSave, JsValue> {
        self.inner.prepare_save(&session.inner).map_err(fail)
    }

    /// The whole stored session as one versioned document (the work of `exportSession`).
    /// When records are damaged (unreadable, missing, or not adding up), the document holds
    /// everything readable, placeholders for what is not, and lists each repair in its
    /// `repairs` field; it imports like any other. The damaged records stay stored as they are.
    ///
    /// # Errors
    /// An unknown id, an unreadable session header, or a storage failure.
    async fn export_document(&self, id: &str) -> Result<SessionDocument, JsValue> {
        self.inner.export_document(id).await.map_err(fail)
    }

    /// Stores a session restored from a document as a new session (the work of
    /// `importSession`).
    ///
    /// # Errors
    /// An invalid document (nothing is stored then) or a storage failure.
    async fn import_document(
        &self,
        json: &str,
        name: &str,
        counter: Option<JsTokenCounter>,
    ) -> Result<SessionInfo, JsValue> {
        let counter = host_counter(counter).map_err(fail)?;
        let info = self
            .inner
            .import_document(json, name, counter)
            .await
            .map_err(fail)?;
        Ok(info.into())
    }
}

/// Writes a prepared save.
async fn finish(prepared: PreparedSave) -> Result<SaveReport, JsValue> {
    Ok(prepared.finish().await.map_err(fail)?.into())
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

    /// Opens a store over a JavaScript record table (`RecordTable`): a backend whose I/O
    /// lives in JavaScript, such as `PostgresSessionStore`'s table over `pg`. The table reads
    /// and writes record texts; every rule of the store (what a save writes and checks, what
    /// opening reads, damaged records reported) runs in this module, as for IndexedDB.
    #[wasm_bindgen(js_name = openHost, unchecked_return_type = "Promise<SessionStore>")]
    pub fn open_host(
        #[wasm_bindgen(unchecked_param_type = "RecordTable")] table: JsValue,
    ) -> Promise {
        if !table.is_object() {
            return rejected(fail(
                arg("SessionStore.openHost", "table").wrong_type("a RecordTable object", &table),
            ));
        }
        let opened = BrowserStore::open_host(table).map_err(fail);
        future_to_promise(async move { opened.map(|inner| SessionStore { inner }.into()) })
    }

    /// Opens a store in the file layout of ccm-store (the CLI's `--store file:DIR`) over the
    /// host's synchronous file functions: what `FileSessionStore.open` does on Node with
    /// Node's `fs`. `directory` names the directory in messages.
    #[wasm_bindgen(js_name = openFiles, unchecked_return_type = "Promise<SessionStore>")]
    pub fn open_files(
        #[wasm_bindgen(unchecked_param_type = "string")] directory: JsValue,
        #[wasm_bindgen(unchecked_param_type = "FilePrimitives")] primitives: JsValue,
    ) -> Promise {
        let directory = checked!(name_arg("SessionStore.openFiles", "directory", &directory));
        if !primitives.is_object() {
            return rejected(fail(
                arg("SessionStore.openFiles", "primitives")
                    .wrong_type("an object of file functions", &primitives),
            ));
        }
        let opened = BrowserStore::open_files(&directory, primitives).map_err(fail);
        future_to_promise(async move { opened.map(|inner| SessionStore { inner }.into()) })
    }

    /// `"indexeddb"`, `"localstorage"`, `"files"`, or a record table's kind (`"postgres"`).
    #[wasm_bindgen(getter, unchecked_return_type = "StorageBackend")]
    pub fn backend(&self) -> String {
        self.inner.backend_kind().to_string()
    }

    /// Why IndexedDB was not used, when `"auto"` fell back to localStorage.
    #[wasm_bindgen(getter, js_name = fallbackReason)]
    pub fn fallback_reason(&self) -> Option<String> {
        self.inner.fallback_reason().map(str::to_string)
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
            let report = finish(prepared).await?;
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
        let store = self.inner.clone();
        let id = checked!(name_arg("SessionStore.turnTelemetry", "id", &id));
        let turn = checked!(arg("SessionStore.turnTelemetry", "turn")
            .whole_number(&turn, 0, crate::args::MAX_SAFE_INTEGER)
            .map_err(fail));
        future_to_promise(async move {
            let entry = store.turn_telemetry(&id, turn).await.map_err(fail)?;
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
        let store = self.inner.clone();
        let id = checked!(name_arg("SessionStore.rename", "id", &id));
        let name = checked!(name_arg("SessionStore.rename", "name", &name));
        future_to_promise(async move {
            store.rename(&id, &name).await.map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a stored session and every record of it.
    #[wasm_bindgen(js_name = delete, unchecked_return_type = "Promise<void>")]
    pub fn delete_js(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> Promise {
        let store = self.inner.clone();
        let id = checked!(name_arg("SessionStore.delete", "id", &id));
        future_to_promise(async move {
            store.delete(&id).await.map_err(fail)?;
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

    /// Stores a session document as a new session under `id`, with the name and times it had
    /// in another store (`FileSessionStore` imports its earlier layout with it). Refused with
    /// `code: "conflict"` when the id is taken.
    #[wasm_bindgen(js_name = importSessionAs, unchecked_return_type = "Promise<SessionInfo>")]
    pub fn import_session_as(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | SessionDocument")] document: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(js_name = createdMs, unchecked_param_type = "number")] created_ms: JsValue,
        #[wasm_bindgen(js_name = updatedMs, unchecked_param_type = "number")] updated_ms: JsValue,
    ) -> Promise {
        let store = self.inner.clone();
        let id = checked!(name_arg("SessionStore.importSessionAs", "id", &id));
        // Times since the epoch, whole milliseconds up to 2^53: stored rows must read back.
        let time = |name: &str, value: &JsValue| {
            arg("SessionStore.importSessionAs", name)
                .whole_number(value, 0, (1u64 << 53) - 1)
                .map(|ms| ms as f64)
                .map_err(fail)
        };
        let created_ms = checked!(time("createdMs", &created_ms));
        let updated_ms = checked!(time("updatedMs", &updated_ms));
        let text = checked!(document_text("SessionStore.importSessionAs", &document).map_err(fail));
        let name = checked!(name_arg("SessionStore.importSessionAs", "name", &name));
        future_to_promise(async move {
            let info = store
                .import_document_as(&id, &text, &name, (created_ms, updated_ms), None)
                .await
                .map_err(fail)?;
            to_js::<_, JsValue>(&SessionInfo::from(info)).map_err(fail)
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
            let counter = host_counter(counter).map_err(fail)?;
            let efforts = files.efforts.unwrap_or_default();
            let imported = store
                .inner
                .import_ccm_files(
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
                    &name,
                    counter,
                )
                .await
                .map_err(fail)?;
            to_js::<_, JsValue>(&CcmImportReport {
                session: imported.session.into(),
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
            BrowserStore::delete_database(&name).await.map_err(fail)?;
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

impl SessionStore {
    /// A second handle on the same backend, for futures that outlive one call.
    fn handle(&self) -> SessionStore {
        SessionStore {
            inner: self.inner.clone(),
        }
    }
}
