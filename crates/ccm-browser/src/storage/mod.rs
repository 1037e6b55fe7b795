//! Browser storage of sessions in the core's record layout (`ccm_core::persistence`).
//!
//! Two backends keep the same records: [`idb`] (IndexedDB, the default) and [`local`]
//! (localStorage, the fallback where IndexedDB is unavailable). Both implement
//! `ccm_store::RecordStore`, the contract every backend keeps, and apply its write rules
//! (`ccm_store::next_row`); this module holds the lookup of the global storage APIs and the
//! dispatch between the two.
//!
//! Architecture invariant: a save writes only the core's `WriteBatch` (what changed since the
//! last save) and opening reads only what `SessionHeader::load_request` names. Neither touches
//! the whole message history, so both cost the same at 1k and at 100k stored messages.

pub(crate) mod host;
pub mod idb;
#[cfg(feature = "files")]
pub(crate) mod js_files;
pub mod local;

use crate::error::js_message;
use ccm_core::persistence::{LoadedRecords, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::{
    DamagedSession, LogRead, MessagesRead, RecordStore, SessionRow, StoreError, StoreResult,
    StoredRecords, WriteMode, WriteResult,
};
use js_sys::Reflect;
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

/// An open store: IndexedDB or localStorage, chosen when the store opens.
pub(crate) enum Backend {
    /// IndexedDB.
    Idb(idb::IdbBackend),
    /// localStorage.
    Local(local::LocalBackend),
    /// A JavaScript record table (`SessionStore.openHost`): PostgreSQL on Node, or a host's own.
    Host(host::HostStore),
    /// ccm-store's file format over the host's file functions (`SessionStore.openFiles`:
    /// Node's `fs`), the same layout as the CLI's `--store file:DIR`.
    #[cfg(feature = "files")]
    Files(Box<ccm_store::files::FileStore<js_files::JsFs>>),
}

impl RecordStore for Backend {
    fn kind(&self) -> &'static str {
        match self {
            Backend::Idb(_) => "indexeddb",
            Backend::Local(_) => "localstorage",
            Backend::Host(b) => b.kind(),
            #[cfg(feature = "files")]
            Backend::Files(b) => b.kind(),
        }
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        match self {
            Backend::Idb(b) => b.rows().await,
            Backend::Host(b) => b.rows().await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.rows().await,
            Backend::Local(b) => b.rows(),
        }
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        match self {
            Backend::Idb(b) => b.write(id, batch, mode).await,
            Backend::Host(b) => b.write(id, batch, mode).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.write(id, batch, mode).await,
            Backend::Local(b) => b.write(id, batch, mode).await,
        }
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        match self {
            Backend::Idb(b) => b.load(id).await,
            Backend::Host(b) => b.load(id).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.load(id).await,
            Backend::Local(b) => b.load(id),
        }
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        match self {
            Backend::Idb(b) => b.effort_log(id, effort).await,
            Backend::Host(b) => b.effort_log(id, effort).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.effort_log(id, effort).await,
            Backend::Local(b) => b.effort_log(id, effort),
        }
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        match self {
            Backend::Idb(b) => b.messages_between(id, from, to).await,
            Backend::Host(b) => b.messages_between(id, from, to).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.messages_between(id, from, to).await,
            // localStorage keys messages by sequence number only: a range is those numbers.
            Backend::Local(b) => {
                let seqs: Vec<u64> = (from..to).collect();
                let mut unreadable = Vec::new();
                let messages = b.stored_messages(id, &seqs, &mut unreadable)?;
                Ok((messages, unreadable))
            }
        }
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        match self {
            Backend::Idb(b) => b.messages_by_seq(id, seqs).await,
            Backend::Host(b) => b.messages_by_seq(id, seqs).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.messages_by_seq(id, seqs).await,
            Backend::Local(b) => {
                let mut unreadable = Vec::new();
                let messages = b.stored_messages(id, seqs, &mut unreadable)?;
                Ok((messages, unreadable))
            }
        }
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        match self {
            Backend::Idb(b) => b.read_all(id).await,
            Backend::Host(b) => b.read_all(id).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.read_all(id).await,
            Backend::Local(b) => b.read_all(id),
        }
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        match self {
            Backend::Idb(b) => b.telemetry(id, turn).await,
            Backend::Host(b) => b.telemetry(id, turn).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.telemetry(id, turn).await,
            Backend::Local(b) => b.telemetry(id, turn),
        }
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        match self {
            Backend::Idb(b) => b.rename(id, name, now_ms).await,
            Backend::Host(b) => b.rename(id, name, now_ms).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.rename(id, name, now_ms).await,
            Backend::Local(b) => b.rename(id, name, now_ms),
        }
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        match self {
            Backend::Idb(b) => b.delete(id).await,
            Backend::Host(b) => b.delete(id).await,
            #[cfg(feature = "files")]
            Backend::Files(b) => b.delete(id).await,
            Backend::Local(b) => b.delete(id),
        }
    }
}
