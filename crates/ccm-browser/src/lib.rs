//! # ccm-browser
//!
//! Cognitive Context Management in the browser, for Rust hosts: sessions stored in IndexedDB
//! (localStorage where IndexedDB is unavailable), the `fetch` transport to providers, the
//! session cell a host holds, and one typed error, [`BrowserError`].
//!
//! The browser app (web/) uses it directly; ccm-wasm wraps it in the JavaScript classes of
//! the npm package and turns each [`BrowserError`] into an `Error` with a `code`. This crate
//! exports nothing to JavaScript itself.
//!
//! - [`BrowserStore`]: open, list, create, load, save, rename, delete, export, import.
//! - [`BrowserSession`]: a core session with its store link, its load problems and its busy
//!   mark; [`BrowserSession::load_logs_for`] reads the logs a tool call needs.
//! - [`transport`]: requests to providers through `fetch` (streaming, time limits, Stop).
//! - [`driver`]: the browser host of ccm-engine's one turn driver, for `runTurn` and the app:
//!   [`BrowserSession::begin_turn`] (the one busy rule) and [`driver::BegunTurn::run`]
//!   (`fetch` or the offline model, chosen once by [`Model::of`], JavaScript timers, stored
//!   logs read when the engine asks for them, and an `AbortSignal`).
//! - [`summary`]: an open effort's summary outside a turn, asked of the same model.
//! - [`turn`] and [`provider`]: the door's vocabulary, the engine's and the provider crate's
//!   types a host names (see `vocabulary.rs`); hosts depend on this crate only.
//! - [`counter`]: which token counter a session counts with.
//! - [`sync`]: sessions kept on a sync server as well (ccm-store's wire format over `fetch`,
//!   the synced revisions, push, pull and the two ways out of a conflict).
//!
//! Architecture invariant: a save writes only the core's `WriteBatch` (what changed since the
//! last save) and opening reads only what the header names, so both cost the same at 1k and at
//! 100k stored messages (see `storage`).
#![deny(missing_docs)]

pub mod counter;
pub mod document;
pub mod driver;
pub mod embeddings;
mod error;
mod session;
mod session_store;
mod storage;
pub mod summary;
pub mod sync;
pub mod transport;
mod vocabulary;

pub use vocabulary::{provider, turn};

pub use driver::{tool_definition_tokens, BegunTurn, Model};
pub use error::{js_message, BrowserError, BrowserResult};
pub use session::{
    load_effort_logs, load_logs_for_tool, load_records, prepare_recall, BrowserSession,
    SessionCell, StoreLink,
};
pub use session_store::{
    document_config, new_session_id, BackendChoice, BrowserStore, CcmImport, PreparedSave,
    SaveReport, SessionInfo,
};

/// Test and benchmark helpers: the versions of the stored layouts.
#[doc(hidden)]
pub mod testing {
    pub use crate::storage::idb::DB_VERSION;
    pub use crate::storage::local::LAYOUT_VERSION;
}
