//! The file backend: sessions in a directory of files, for the CLI and native Rust hosts.
//!
//! A save appends the batch's records and commits; it never rewrites or re-reads the
//! session, so its cost follows the batch, not the conversation. Opening reads what the
//! header's load request names, through fixed-width indexes, so a record is found in one
//! seek whatever the session's length.
//!
//! # Layout
//!
//! | path | what it holds |
//! |---|---|
//! | `layout` | `ccm-files 1`: the version of this layout; a directory written by a newer one is refused |
//! | `locks/<name>.lock` | empty; the inter-process lock of one session (kept after a delete, see below) |
//! | `locks/<name>.lock.owner` | while a process holds that lock: which process (see [`fs::NativeFs`]) |
//! | `trash/` | sessions being deleted, removed at the next opening if a delete was interrupted |
//! | `sessions/<name>/commit` | one line `ccm-files-commit 1 revision=R seq_end=M data=L`, then the [`SessionRow`](crate::SessionRow) as JSON; replaced atomically by every write |
//! | `sessions/<name>/records.dat` | every record's JSON text ([`records::encode`](crate::records::encode)), each followed by a newline, appended in write order; only its first `L` bytes are committed |
//! | `sessions/<name>/messages.idx` | one 64-byte row per message sequence number |
//! | `sessions/<name>/efforts.idx` | one row per effort position |
//! | `sessions/<name>/metrics.idx` | one row per metrics point (its index in the history) |
//! | `sessions/<name>/telemetry.idx` | one row per turn with request telemetry |
//! | `sessions/<name>/attachments.idx` | one row per attachment number (`att-<number>`) |
//! | `sessions/<name>/logs/ambient.seq`, `logs/effort-<hash>.seq` | a 256-byte header naming the log (`ccm-log 1 "effort:<id>"`), then one 16-byte entry per message of the log, in order |
//! | `sessions/<name>/intent` | what the last write was about to change: the base revision, the index rows and the log files' lengths before it |
//!
//! `<name>` is the session id with every byte but `a`–`z`, `0`–`9`, `-` and `_` written as
//! `%XX`, so that no id can reach outside its directory, no two ids share a name on a
//! case-insensitive file system, and names with a dot are the store's temporary files. An id
//! that is empty or whose name would pass 200 bytes is refused. Effort logs are named by a
//! 64-bit FNV-1a hash of their key, because effort ids can be long and in any script; the
//! key itself is in the file's header, so counting a log's messages reads no message.
//!
//! An index row holds two 32-byte slots, each a version of the record: its offset and length
//! in `records.dat`, the revision that wrote it, and a check over the three. A reader of
//! revision `R` takes the newest slot written at `R` or before; a writer writes the other
//! slot, so the version the committed revision sees is never touched before the commit. A
//! log entry is a sequence number and its check. Every number is little-endian.
//!
//! # Writes
//!
//! A write takes the session's lock exclusively, reads the commit and checks
//! [`next_row`](crate::next_row) against its row: the check and the write are one critical
//! section across processes, so of two writers on one revision exactly one succeeds and the
//! other gets [`StoreError::Conflict`]. It then
//!
//! 1. undoes the write before it if that one never committed (see below),
//! 2. cuts `records.dat` to its committed length `L`, appends the batch's texts and syncs,
//! 3. replaces `intent` with the rows and log files it is about to change,
//! 4. writes each record's index row (the slot the commit does not see) and appends the log
//!    entries, and syncs those files,
//! 5. replaces `commit` (a temporary file, synced, renamed over it, directory synced).
//!
//! The rename in step 5 is the commit: a process killed at any point before it leaves the
//! previous revision as it was, because readers of revision `R` ignore bytes of
//! `records.dat` beyond `L`, slots written by a later revision, and log entries at the end of
//! a log whose sequence number is not below `M`. Those remains are undone by the next writer
//! from the intent (slots cleared, log files cut back) before it writes anything, because
//! the next revision would otherwise see them. The commit file holds one row and three
//! numbers: it does not grow with the conversation. A message is only ever added: a batch
//! that would rewrite a stored sequence number is refused.
//!
//! Readers take the same lock shared, so a read sees one revision whole. Listing sessions
//! reads only the commit files, which are replaced atomically, and takes no lock.
//!
//! # Damage
//!
//! A record whose text does not decode, whose index row fails its check, or that a log lists
//! without a record is skipped and described in the read's `unreadable` list. A session
//! whose commit has a readable first line but a damaged row is listed as damaged and its
//! records are still exported; one whose commit cannot be read at all is exported from the
//! newest version of every record. Deleting moves the session's directory into `trash/` in
//! one rename, then removes it. Lock files stay: a process waiting for a lock holds the file
//! open, and removing it would let a third process lock a new file of the same name at the
//! same moment.
//!
//! # The primitives
//!
//! The format is written against a small set of file operations (open a file, read or write
//! bytes at an offset, cut a file, sync it, replace a file atomically, list, rename and
//! remove directories, take a lock), the traits of [`fs`]. Paths given to them are relative
//! to the store's directory and separated by `/`. [`FileStore::open`] binds them to
//! `std::fs` ([`fs::NativeFs`], not on wasm32); [`FileStore::with_fs`] takes any other
//! implementation. `ccm-browser` implements them over JavaScript functions that Node's
//! synchronous `fs` module provides, so the same code runs in WebAssembly on Node and a
//! session saved by the CLI and one saved by a Node host are the same files. The lock
//! protocol both kinds of process honour is described at [`fs::NativeFs`].
//!
//! The I/O is blocking and runs inside each future: the futures complete on their first
//! poll. A host on a multi-threaded runtime that must not block a worker can run the calls
//! on its blocking pool.

mod format;
pub mod fs;
mod store;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;

use crate::backend::{
    DamagedSession, LogRead, MessagesRead, RecordStore, StoredRecords, WriteMode, WriteResult,
};
use crate::error::{StoreError, StoreResult};
use crate::records::SessionRow;
use ccm_core::persistence::{LoadedRecords, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use fs::FileSystem;
#[cfg(not(target_arch = "wasm32"))]
use std::path::Path;

/// Sessions in a directory of files, through the file operations `F` (by default `std::fs`).
/// Any number of handles, in any number of processes, may open one directory: writes to one
/// session are serialised by an inter-process lock.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug)]
pub struct FileStore<F: FileSystem = fs::NativeFs> {
    store: store::Store<F>,
}

/// Sessions in a directory of files, through the file operations `F`. Any number of handles,
/// in any number of processes, may open one directory: writes to one session are serialised
/// by an inter-process lock. (wasm32 has no native file system, so there is no default `F`.)
#[cfg(target_arch = "wasm32")]
#[derive(Debug)]
pub struct FileStore<F: FileSystem> {
    store: store::Store<F>,
}

impl<F: FileSystem> FileStore<F> {
    /// Opens the store in the directory `fs` works in, creating it when missing, exactly as
    /// [`FileStore::open`] does with `std::fs`.
    ///
    /// # Errors
    /// [`StoreError::Storage`] when the directory cannot be created or read, or holds sessions
    /// of a newer layout; [`StoreError::Quota`] when the disk is full.
    pub fn with_fs(fs: F) -> Result<FileStore<F>, StoreError> {
        let store = store::Store { fs };
        store.prepare()?;
        Ok(FileStore { store })
    }

    /// The file operations the store works through.
    pub fn file_system(&self) -> &F {
        &self.store.fs
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl FileStore {
    /// Opens the store in `dir`, creating the directory when it is missing.
    ///
    /// # Errors
    /// [`StoreError::Storage`] when the directory cannot be created or read, or holds sessions
    /// of a newer layout; [`StoreError::Quota`] when the disk is full.
    pub fn open(dir: impl AsRef<Path>) -> Result<FileStore, StoreError> {
        let fs = fs::NativeFs::new(dir.as_ref().to_path_buf());
        // What killed processes left is cleared where a store is opened, as Node's
        // FileSessionStore.open does, so that no temporary file outlives its process for long.
        fs.clear_leftovers();
        FileStore::with_fs(fs)
    }

    /// The directory the sessions are in.
    pub fn dir(&self) -> &Path {
        self.store.fs.root()
    }

    /// Bytes this handle has written so far (record texts, index rows, log entries, intents
    /// and commits): what the conformance suite measures a save by.
    pub fn bytes_written(&self) -> u64 {
        self.store.fs.bytes_written()
    }
}

impl<F: FileSystem> RecordStore for FileStore<F> {
    fn kind(&self) -> &'static str {
        "files"
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        self.store.rows()
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        self.store.write(id, batch, mode)
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        self.store.load(id)
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        self.store.effort_log(id, effort)
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        self.store.messages_between(id, from, to)
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        self.store.messages_by_seq(id, seqs)
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        self.store.read_all(id)
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        self.store.telemetry(id, turn)
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        self.store.rename(id, name, now_ms)
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.store.delete(id)
    }
}
