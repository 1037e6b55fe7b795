//! The storage contract of CCM sessions.
//!
//! The core (`ccm_core::persistence`) defines what a session is made of in storage: a header with a
//! revision, effort records, message records, metrics, telemetry and attachments; write
//! batches of only what changed, building on a base revision; load requests that name only
//! the working set; and the repair and report of damaged records on load. This crate turns
//! that layout into one interface, [`RecordStore`], that every backend implements, whatever
//! does its I/O: IndexedDB and localStorage (`ccm-browser`), files and PostgreSQL for native
//! hosts. Over it, [`sessions`] holds the operations hosts call (list, create, open, save,
//! export, import), written once. The feature `conformance` adds the suite every backend's
//! tests run: the contract is tested there, and a backend's own tests keep only what is
//! specific to it.
//!
//! Architecture invariant: no I/O and no runtime here. A backend owns its I/O; this crate
//! owns the rules (what a write must check, what a read must report), so that a rule changed
//! here changes for every backend.

pub mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod error;
#[cfg(feature = "files")]
pub mod files;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod records;
pub mod remote;
pub mod sessions;
pub mod sync;

pub use backend::{
    existing_row, next_row, DamagedSession, LogRead, MessagesRead, RecordStore, StoredRecords,
    WriteMode, WriteResult,
};
pub use error::{StoreError, StoreResult};
pub use records::SessionRow;
pub use sessions::{SaveReport, SessionInfo};
