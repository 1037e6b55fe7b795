//! Browser storage of sessions in the core's record layout (`ccm_core::store`).
//!
//! Two backends keep the same records: [`idb`] (IndexedDB, the default) and [`local`]
//! (localStorage, the fallback where IndexedDB is unavailable). This module holds what both
//! share: the rules of a write (a new session must not exist, a save must build on the stored
//! revision), the conversion of read records into a session, and the dispatch between them.
//!
//! Architecture invariant: a save writes only the core's `WriteBatch` (what changed since the
//! last save) and opening reads only what `SessionHeader::load_request` names. Neither touches
//! the whole message history, so both cost the same at 1k and at 100k stored messages.

pub mod idb;
pub mod local;
pub mod records;

use crate::error::{js_message, BrowserError};
use ccm_core::metrics::TurnMetrics;
use ccm_core::model::Message;
use ccm_core::store::{EffortRecord, LoadedRecords, StoredMessage, WriteBatch};
use js_sys::Reflect;
use records::SessionRow;
use wasm_bindgen::{JsCast, JsValue};

/// The storage API the global scope (window or worker) holds under `property`, or a sentence
/// that says why there is none; `label` names the API and `interface` (with its article) the
/// type the value must have.
fn global_api<T: JsCast>(property: &str, label: &str, interface: &str) -> Result<T, String> {
    // Reading the property itself can throw (a SecurityError in sandboxed or opaque-origin
    // documents), which is one of the ways the API is unavailable.
    match Reflect::get(&js_sys::global(), &JsValue::from_str(property)) {
        Ok(value) if value.is_object() => value
            .dyn_into::<T>()
            .map_err(|_| format!("{property} is not {interface} here")),
        Ok(_) => Err(format!("this environment has no {label}")),
        Err(error) => Err(format!(
            "{label} is not accessible here ({})",
            js_message(&error)
        )),
    }
}

/// Whether a write creates a session or saves one that exists.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WriteMode {
    /// A new session (`create`, `import`): the id must be free.
    Create {
        /// Creation time, ms since the epoch.
        now_ms: f64,
        /// The session's name.
        name: String,
    },
    /// A save of a stored session: the batch must build on the stored revision.
    Save {
        /// Save time, ms since the epoch.
        now_ms: f64,
    },
}

/// Every record of a session, as read for an export.
pub(crate) struct StoredRecords {
    /// The session row, or why it could not be read (the other records are read regardless,
    /// so a session with a damaged header can still be exported).
    pub(crate) row: Result<SessionRow, String>,
    pub(crate) efforts: Vec<EffortRecord>,
    pub(crate) messages: Vec<StoredMessage>,
    pub(crate) metrics: Vec<TurnMetrics>,
    pub(crate) attachments: Vec<ccm_core::compaction::SessionAttachment>,
    pub(crate) unreadable: Vec<String>,
}

/// A stored session whose row (header) cannot be read: it is still listed, marked damaged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DamagedSession {
    /// Its id in the store.
    pub(crate) id: String,
    /// Why its row could not be read, for the person.
    pub(crate) problem: String,
}

/// The message of the error a second writer gets.
pub(crate) fn conflict(stored: u64, base: u64) -> BrowserError {
    BrowserError::conflict(stored, base)
}

/// The stored row of an existing session, or a precise error.
pub(crate) fn existing_row(
    id: &str,
    stored: Option<Result<SessionRow, String>>,
) -> Result<SessionRow, BrowserError> {
    match stored {
        Some(Ok(row)) => Ok(row),
        Some(Err(problem)) => Err(BrowserError::storage(
            format!("session '{id}' cannot be opened: {problem}. Its other records are untouched; an export lists what is readable"),
        )),
        None => Err(not_found(id)),
    }
}

/// The error for an id that names no stored session.
pub(crate) fn not_found(id: &str) -> BrowserError {
    BrowserError::not_found(id)
}

/// The row to write with `batch`, after checking the write rules against the stored row.
pub(crate) fn next_row(
    id: &str,
    stored: Option<Result<SessionRow, String>>,
    batch: &WriteBatch,
    mode: WriteMode,
) -> Result<SessionRow, BrowserError> {
    match mode {
        WriteMode::Create { now_ms, name } => {
            if stored.is_some() {
                return Err(BrowserError::conflict_text(format!(
                    "a session with id '{id}' already exists"
                )));
            }
            if batch.base_revision != 0 {
                return Err(conflict(0, batch.base_revision));
            }
            Ok(SessionRow {
                id: id.to_string(),
                name,
                created_ms: now_ms,
                updated_ms: now_ms,
                header: batch.header.clone(),
            })
        }
        WriteMode::Save { now_ms } => {
            let row = match stored {
                // The session was deleted meanwhile (in another window).
                None => return Err(conflict(0, batch.base_revision)),
                Some(row) => existing_row(id, Some(row))?,
            };
            if row.header.revision != batch.base_revision {
                return Err(conflict(row.header.revision, batch.base_revision));
            }
            Ok(SessionRow {
                updated_ms: now_ms,
                header: batch.header.clone(),
                ..row
            })
        }
    }
}

/// An open store: IndexedDB or localStorage.
pub(crate) enum Backend {
    /// IndexedDB.
    Idb(idb::IdbBackend),
    /// localStorage.
    Local(local::LocalBackend),
}

impl Backend {
    /// `"indexeddb"` or `"localstorage"`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Backend::Idb(_) => "indexeddb",
            Backend::Local(_) => "localstorage",
        }
    }

    pub(crate) async fn rows(
        &self,
    ) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), BrowserError> {
        match self {
            Backend::Idb(b) => b.rows().await,
            Backend::Local(b) => b.rows(),
        }
    }

    /// Writes a batch in one transaction (see the backends for what that means in each);
    /// returns the session row as written.
    pub(crate) async fn write(
        &self,
        id: &str,
        batch: &WriteBatch,
        mode: WriteMode,
    ) -> Result<SessionRow, BrowserError> {
        match self {
            Backend::Idb(b) => b.write(id, batch, mode).await,
            Backend::Local(b) => b.write(id, batch, mode).await,
        }
    }

    pub(crate) async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), BrowserError> {
        match self {
            Backend::Idb(b) => b.load(id).await,
            Backend::Local(b) => b.load(id),
        }
    }

    pub(crate) async fn effort_log(
        &self,
        id: &str,
        effort: &str,
    ) -> Result<(Vec<Message>, Vec<String>), BrowserError> {
        match self {
            Backend::Idb(b) => b.effort_log(id, effort).await,
            Backend::Local(b) => b.effort_log(id, effort),
        }
    }

    /// The stored messages with sequence numbers `from..to` (every log), and the records that
    /// could not be read: a step of the recall index's rebuild.
    pub(crate) async fn messages_between(
        &self,
        id: &str,
        from: u64,
        to: u64,
    ) -> Result<(Vec<StoredMessage>, Vec<String>), BrowserError> {
        match self {
            Backend::Idb(b) => b.messages_between(id, from, to).await,
            // localStorage keys messages by sequence number only: a range is those numbers.
            Backend::Local(_) => {
                let seqs: Vec<u64> = (from..to).collect();
                self.messages_by_seq(id, &seqs).await
            }
        }
    }

    /// The stored messages with these sequence numbers, and the records that could not be
    /// read: the messages a recalled excerpt shows.
    pub(crate) async fn messages_by_seq(
        &self,
        id: &str,
        seqs: &[u64],
    ) -> Result<(Vec<StoredMessage>, Vec<String>), BrowserError> {
        match self {
            Backend::Idb(b) => b.messages_by_seq(id, seqs).await,
            Backend::Local(b) => {
                let mut unreadable = Vec::new();
                let messages = b.stored_messages(id, seqs, &mut unreadable)?;
                Ok((messages, unreadable))
            }
        }
    }

    pub(crate) async fn read_all(&self, id: &str) -> Result<StoredRecords, BrowserError> {
        match self {
            Backend::Idb(b) => b.read_all(id).await,
            Backend::Local(b) => b.read_all(id),
        }
    }

    pub(crate) async fn telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<ccm_core::telemetry::TurnTelemetry>, BrowserError> {
        match self {
            Backend::Idb(b) => b.telemetry(id, turn).await,
            Backend::Local(b) => b.telemetry(id, turn),
        }
    }

    pub(crate) async fn rename(
        &self,
        id: &str,
        name: &str,
        now_ms: f64,
    ) -> Result<(), BrowserError> {
        match self {
            Backend::Idb(b) => b.rename(id, name, now_ms).await,
            Backend::Local(b) => b.rename(id, name, now_ms),
        }
    }

    pub(crate) async fn delete(&self, id: &str) -> Result<(), BrowserError> {
        match self {
            Backend::Idb(b) => b.delete(id).await,
            Backend::Local(b) => b.delete(id),
        }
    }
}
