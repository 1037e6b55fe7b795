//! Sessions that survive the browser: the store over IndexedDB or localStorage.

use crate::counter::{check_counter, counter_for, counter_named};
use crate::error::BrowserError;
use crate::session::{BrowserSession, SessionCell, StoreLink};
use crate::storage::{idb, local, Backend};
use ccm_core::persistence::WriteBatch;
use ccm_core::snapshot::SessionDocument;
use ccm_core::tokens::TokenCounter;
use ccm_core::{Config, Session as CoreSession};
use ccm_import::CcmFiles;
use ccm_store::{
    sessions, RecordStore, SessionRow, StoreError, StoreResult, WriteMode, WriteResult,
};
pub use ccm_store::{SaveReport, SessionInfo};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Which browser storage a store keeps its sessions in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// IndexedDB, else localStorage (and [`BrowserStore::fallback_reason`] says why).
    #[default]
    Auto,
    /// IndexedDB only.
    IndexedDb,
    /// localStorage only.
    LocalStorage,
}

/// What an import of the original CCM layout did.
#[derive(Debug, Clone, PartialEq)]
pub struct CcmImport {
    /// The new stored session.
    pub session: SessionInfo,
    /// What had to be assumed or skipped, one sentence each.
    pub notes: Vec<String>,
}

/// Sessions kept in the browser: IndexedDB by default, localStorage where IndexedDB is
/// unavailable. Cheap to clone (clones share the open database).
///
/// A save is refused with [`BrowserError::Conflict`] when another window saved the same
/// session first; load it again to continue. Nothing already stored is changed by a failed
/// save.
#[derive(Clone)]
pub struct BrowserStore {
    backend: Rc<Backend>,
    fallback_reason: Option<String>,
}

/// Where a prepared save writes.
enum SaveTarget {
    /// The stored session of this id.
    Existing(String),
    /// A new stored session (the first save of a session kept in memory so far).
    New,
}

/// A save whose batch is taken and whose session is marked busy; [`PreparedSave::finish`]
/// writes it.
pub struct PreparedSave {
    cell: Rc<RefCell<SessionCell>>,
    batch: WriteBatch,
    target: SaveTarget,
    backend: Rc<Backend>,
}

impl PreparedSave {
    /// What the save will write: a sync layer pushes the same batch to a server after the
    /// local write, so one turn costs one request there too.
    pub fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// Writes the prepared batch and marks the session saved.
    ///
    /// # Errors
    /// [`BrowserError::Conflict`] when another window saved first, [`BrowserError::Quota`] when
    /// storage is full, another storage failure; the session stays unsaved then.
    pub async fn finish(self) -> Result<SaveReport, BrowserError> {
        let PreparedSave {
            cell,
            batch,
            target,
            backend,
        } = self;
        let (id, mode) = match target {
            SaveTarget::New => (
                new_session_id(),
                WriteMode::Create {
                    now_ms: js_sys::Date::now(),
                    name: String::new(),
                },
            ),
            SaveTarget::Existing(id) => (
                id,
                WriteMode::Save {
                    now_ms: js_sys::Date::now(),
                },
            ),
        };
        let outcome = backend.write(&id, &batch, mode).await;
        let mut state = cell.borrow_mut();
        state.busy = None;
        let row = outcome?;
        state.core.mark_saved(&batch)?;
        state.link = Some(StoreLink { backend, id });
        Ok(sessions::report_of(&batch, &row))
    }
}

/// A new session id: time and randomness, so two tabs never pick the same one.
pub fn new_session_id() -> String {
    let random = (js_sys::Math::random() * 2f64.powi(48)) as u64;
    format!("s{:x}-{random:012x}", js_sys::Date::now() as u64)
}

/// The configuration a document declares, for choosing its counter (the core checks the rest).
pub fn document_config(json: &str) -> Config {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("config")?.clone()).ok())
        .unwrap_or_default()
}

/// A session read from a document to import: the document passes the library's checks
/// (`crate::document`, so the store refuses what `Session.fromJSON` refuses, with the same
/// words), and every token is counted with `counter` or the document's own encoding.
fn session_of_document(
    json: &str,
    counter: Option<Arc<dyn TokenCounter>>,
) -> Result<CoreSession, BrowserError> {
    crate::document::check_document_text(json)
        .map_err(|refusal| BrowserError::Argument(refusal.message().to_string()))?;
    let counter = counter_for(&document_config(json), counter)?;
    let core = CoreSession::from_json_with_counter(json, counter)?;
    check_counter()?;
    Ok(core)
}

impl BrowserStore {
    /// Opens a store; `name` is the IndexedDB database name and the localStorage key prefix.
    ///
    /// # Errors
    /// The chosen backend is unavailable (with `Auto`: neither is), or an IndexedDB upgrade
    /// is blocked by another tab.
    pub async fn open(choice: BackendChoice, name: &str) -> Result<BrowserStore, BrowserError> {
        let (backend, fallback_reason) = match choice {
            BackendChoice::IndexedDb => (Backend::Idb(idb::IdbBackend::open(name).await?), None),
            BackendChoice::LocalStorage => (Backend::Local(local::LocalBackend::open(name)?), None),
            BackendChoice::Auto => match idb::IdbBackend::open(name).await {
                Ok(backend) => (Backend::Idb(backend), None),
                Err(StoreError::Unavailable(reason)) => {
                    let backend = local::LocalBackend::open(name).map_err(|local| {
                        BrowserError::Unavailable(format!(
                            "no browser storage is available: {reason}; {local}"
                        ))
                    })?;
                    (Backend::Local(backend), Some(reason))
                }
                Err(failure) => return Err(failure.into()),
            },
        };
        Ok(BrowserStore {
            backend: Rc::new(backend),
            fallback_reason,
        })
    }

    /// Opens a store over a JavaScript record table (the `RecordTable` shape of the npm
    /// package's hoststore.d.ts): every rule of the storage contract runs here, the table only
    /// reads and writes record texts, with two compare-and-set operations.
    ///
    /// # Errors
    /// A value that is not an object with every method of the shape.
    pub fn open_host(table: wasm_bindgen::JsValue) -> Result<BrowserStore, BrowserError> {
        Ok(BrowserStore {
            // A value that is no record table is the caller's mistake, not the storage's.
            backend: Rc::new(Backend::Host(
                crate::storage::host::HostStore::new(table)
                    .map_err(|e| BrowserError::Argument(e.to_string()))?,
            )),
            fallback_reason: None,
        })
    }

    /// Opens a store in ccm-store's file layout, over the host's synchronous file functions
    /// (`primitives`, npm/ccm/glue/fileprimitives.d.ts: Node's `fs`); `directory` names the
    /// directory in messages.
    ///
    /// # Errors
    /// Primitives without every function, or a directory that cannot be prepared.
    #[cfg(feature = "files")]
    pub fn open_files(
        directory: &str,
        primitives: wasm_bindgen::JsValue,
    ) -> Result<BrowserStore, BrowserError> {
        let store = crate::storage::js_files::open_files(directory, primitives)?;
        Ok(BrowserStore {
            backend: Rc::new(Backend::Files(Box::new(store))),
            fallback_reason: None,
        })
    }

    /// `"indexeddb"`, `"localstorage"`, `"files"`, or the kind of a host's record table
    /// (`"postgres"`).
    pub fn backend_kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Why IndexedDB was not used, when `Auto` fell back to localStorage.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Every stored session, most recently updated first; damaged ones last.
    ///
    /// # Errors
    /// A storage failure.
    pub async fn list(&self) -> Result<Vec<SessionInfo>, BrowserError> {
        Ok(sessions::list(self.backend.as_ref()).await?)
    }

    /// Stores `core` whole as a new session named `name`.
    async fn insert(&self, core: &CoreSession, name: &str) -> Result<SessionRow, BrowserError> {
        let batch = core.full_write_batch()?;
        let mode = WriteMode::Create {
            now_ms: js_sys::Date::now(),
            name: name.to_string(),
        };
        Ok(self.backend.write(&new_session_id(), &batch, mode).await?)
    }

    /// Stores a whole core session as a new session (an import, a fork); the session itself
    /// stays unlinked.
    ///
    /// # Errors
    /// A storage failure, or a session whose records do not add up.
    pub async fn import_core(
        &self,
        core: &CoreSession,
        name: &str,
    ) -> Result<SessionInfo, BrowserError> {
        Ok(SessionInfo::of(&self.insert(core, name).await?))
    }

    /// Creates and stores a new session, linked to this store.
    ///
    /// # Errors
    /// Invalid options, a failing counter, or a storage failure.
    pub async fn create(
        &self,
        name: &str,
        config: Config,
        counter: Option<Arc<dyn TokenCounter>>,
    ) -> Result<BrowserSession, BrowserError> {
        let counter = counter_for(&config, counter)?;
        let mut core = CoreSession::with_counter(config, counter)?;
        let batch = core.full_write_batch()?;
        let row = self.insert(&core, name).await?;
        core.mark_saved(&batch)?;
        let link = StoreLink {
            backend: self.backend.clone(),
            id: row.id,
        };
        Ok(BrowserSession::from_parts(core, Some(link), Vec::new()))
    }

    /// Opens a stored session: its header, effort records, the open efforts' logs, the
    /// ambient tail and the recent metrics, never its whole history. Unreadable records other
    /// than the header do not fail the load: they are listed in its problems.
    ///
    /// # Errors
    /// An unknown id, an unreadable header, a counting rule this build lacks, a failing
    /// counter, or a storage failure.
    pub async fn load(
        &self,
        id: &str,
        counter: Option<Arc<dyn TokenCounter>>,
    ) -> Result<BrowserSession, BrowserError> {
        let (core, _, problems) = sessions::open::<_, BrowserError>(&*self.backend, id, |header| {
            counter_named(&header.counted_with, &header.config, counter)
        })
        .await?;
        check_counter()?;
        let link = StoreLink {
            backend: self.backend.clone(),
            id: id.to_string(),
        };
        Ok(BrowserSession::from_parts(core, Some(link), problems))
    }

    /// Saves what changed in `session` since its last save, in one transaction; a session
    /// kept in memory so far is stored as a new session.
    ///
    /// # Errors
    /// See [`BrowserStore::prepare_save`] and [`PreparedSave::finish`].
    pub async fn save(&self, session: &BrowserSession) -> Result<SaveReport, BrowserError> {
        self.prepare_save(session)?.finish().await
    }

    /// Takes what the save will write, synchronously: the state at the moment of the call is
    /// what gets stored, so a turn begun before the write runs neither fails the save nor
    /// slips into it. The session is busy until [`PreparedSave::finish`] returns.
    ///
    /// # Errors
    /// [`BrowserError::Busy`] while a save or a turn of it runs, [`BrowserError::Argument`]
    /// for a session of another store, [`BrowserError::Turn`] during a turn.
    pub fn prepare_save(&self, session: &BrowserSession) -> Result<PreparedSave, BrowserError> {
        let cell = session.cell().clone();
        let mut state = session.borrow_cell()?;
        if let Some(busy) = state.busy {
            return Err(BrowserError::in_progress(busy));
        }
        let (batch, target) = match &state.link {
            Some(link) if Rc::ptr_eq(&link.backend, &self.backend) => (
                state.core.write_batch()?,
                SaveTarget::Existing(link.id.clone()),
            ),
            Some(_) => return Err(BrowserError::argument(
                "this session belongs to another store; save it with the store it was opened from",
            )),
            // A session kept in memory so far is stored as a new one on its first save.
            None => (state.core.full_write_batch()?, SaveTarget::New),
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

    /// The whole stored session as one versioned document. When records are damaged
    /// (unreadable, missing, or not adding up), the document holds everything readable,
    /// placeholders for what is not, and lists each repair in its `repairs` field; it imports
    /// like any other. The damaged records stay stored as they are.
    ///
    /// # Errors
    /// An unknown id, an unreadable session header, or a storage failure.
    pub async fn export_document(&self, id: &str) -> Result<SessionDocument, BrowserError> {
        // The session's own counting rule where this build has it, so checking the export
        // recounts nothing; otherwise the approximation (an import recounts either way).
        sessions::export_document::<_, BrowserError>(&*self.backend, id, |header| {
            counter_named(&header.counted_with, &header.config, None).ok()
        })
        .await
    }

    /// Stores a session restored from its document (JSON text) as a new session. The document
    /// passes the same checks as the library's (`crate::document`) first.
    ///
    /// # Errors
    /// An invalid document (nothing is stored then), a failing counter, or a storage failure.
    pub async fn import_document(
        &self,
        json: &str,
        name: &str,
        counter: Option<Arc<dyn TokenCounter>>,
    ) -> Result<SessionInfo, BrowserError> {
        let core = session_of_document(json, counter)?;
        self.import_core(&core, name).await
    }

    /// Stores a session document as a new session with the id, name and times it had in
    /// another store (FileSessionStore's import of its earlier whole-document layout).
    ///
    /// # Errors
    /// `Conflict` when the id is taken, an invalid document (nothing is stored then), or a
    /// storage failure.
    pub async fn import_document_as(
        &self,
        id: &str,
        json: &str,
        name: &str,
        (created_ms, updated_ms): (f64, f64),
        counter: Option<Arc<dyn TokenCounter>>,
    ) -> Result<SessionInfo, BrowserError> {
        let core = session_of_document(json, counter)?;
        let batch = core.full_write_batch()?;
        let mode = WriteMode::Create {
            now_ms: created_ms,
            name: name.to_string(),
        };
        let mut row = self.backend.write(id, &batch, mode).await?;
        // A creation stamps both times with one; the later one is set as a rename sets it.
        if updated_ms != created_ms {
            self.backend.rename(id, name, updated_ms).await?;
            row.updated_ms = updated_ms;
        }
        Ok(SessionInfo::of(&row))
    }

    /// Imports a session in the original CCM file layout as a new session, recounting every
    /// token with `config`'s counter.
    ///
    /// # Errors
    /// Files that cannot be imported (nothing is stored then), a failing counter, or a storage
    /// failure.
    pub async fn import_ccm_files(
        &self,
        files: &CcmFiles<'_>,
        config: Config,
        name: &str,
        counter: Option<Arc<dyn TokenCounter>>,
    ) -> Result<CcmImport, BrowserError> {
        let counter = counter_for(&config, counter)?;
        let imported = ccm_import::convert(files, config, counter.as_ref())?;
        check_counter()?;
        let core = CoreSession::from_document(imported.document, counter)?;
        Ok(CcmImport {
            session: self.import_core(&core, name).await?,
            notes: imported.notes,
        })
    }

    /// The stored request telemetry of one turn of a stored session, if it has any.
    /// Telemetry is diagnostic: opening a session never reads it.
    ///
    /// # Errors
    /// An unreadable telemetry record or a storage failure.
    pub async fn turn_telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<ccm_core::telemetry::TurnTelemetry>, BrowserError> {
        Ok(self.backend.telemetry(id, turn).await?)
    }

    /// Renames a stored session.
    ///
    /// # Errors
    /// An unknown id or a storage failure.
    pub async fn rename(&self, id: &str, name: &str) -> Result<(), BrowserError> {
        Ok(self.backend.rename(id, name, js_sys::Date::now()).await?)
    }

    /// Deletes a stored session and every record of it.
    ///
    /// # Errors
    /// A storage failure.
    pub async fn delete(&self, id: &str) -> Result<(), BrowserError> {
        Ok(self.backend.delete(id).await?)
    }

    /// Deletes a whole IndexedDB database of sessions, for tests and "forget everything"
    /// buttons. Other tabs' connections let go of it by themselves.
    ///
    /// # Errors
    /// No IndexedDB, or the browser refused.
    pub async fn delete_database(name: &str) -> Result<(), BrowserError> {
        Ok(idb::delete_database(name).await?)
    }
}

/// The store as a record store, for the conformance suite and for hosts that drive the
/// contract directly: every call goes to the backend it opened.
impl RecordStore for BrowserStore {
    fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<ccm_store::DamagedSession>), StoreError> {
        self.backend.rows().await
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        self.backend.write(id, batch, mode).await
    }

    async fn load(
        &self,
        id: &str,
    ) -> Result<(SessionRow, ccm_core::persistence::LoadedRecords), StoreError> {
        self.backend.load(id).await
    }

    async fn effort_log(
        &self,
        id: &str,
        effort: &str,
    ) -> Result<(Vec<ccm_core::Message>, Vec<String>), StoreError> {
        self.backend.effort_log(id, effort).await
    }

    async fn messages_between(
        &self,
        id: &str,
        from: u64,
        to: u64,
    ) -> StoreResult<ccm_store::MessagesRead> {
        self.backend.messages_between(id, from, to).await
    }

    async fn messages_by_seq(
        &self,
        id: &str,
        seqs: &[u64],
    ) -> Result<ccm_store::MessagesRead, StoreError> {
        self.backend.messages_by_seq(id, seqs).await
    }

    async fn read_all(&self, id: &str) -> Result<ccm_store::StoredRecords, StoreError> {
        self.backend.read_all(id).await
    }

    async fn telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<ccm_core::telemetry::TurnTelemetry>, StoreError> {
        self.backend.telemetry(id, turn).await
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        self.backend.rename(id, name, now_ms).await
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.backend.delete(id).await
    }
}
