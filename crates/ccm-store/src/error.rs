//! The failures of a store, by kind: the same codes on every backend.

use thiserror::Error;

/// The result of a store operation. Named so that the `RecordStore` methods, implemented by
/// every backend, each fit their signature on one line.
pub type StoreResult<T> = Result<T, StoreError>;

/// What went wrong in a store. Each variant is a code hosts act on (`conflict` means "reload
/// and continue", `quota` means "free space"); the message is a sentence for the person.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// Another writer saved the session first, or a new session's id is taken. Nothing was
    /// written.
    #[error("{0}")]
    Conflict(String),
    /// The storage is full; nothing was written.
    #[error("{0}")]
    Quota(String),
    /// The storage cannot be opened yet because another connection holds it at an older
    /// version (an IndexedDB upgrade waiting for another tab).
    #[error("{0}")]
    Blocked(String),
    /// The storage was upgraded or deleted by another connection; this one is closed.
    #[error("{0}")]
    VersionChange(String),
    /// The storage cannot be reached at all (no IndexedDB, a database server that refuses
    /// connections).
    #[error("{0}")]
    Unavailable(String),
    /// No stored session has this id.
    #[error("no stored session with id '{id}'")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// Any other failure: a damaged session row, a refused write, a connection lost during a
    /// save (which then wrote nothing).
    #[error("{0}")]
    Storage(String),
}

impl StoreError {
    /// A storage failure described by `message`.
    pub fn storage(message: impl Into<String>) -> StoreError {
        StoreError::Storage(message.into())
    }

    /// A full storage, described by `message`.
    pub fn quota(message: impl Into<String>) -> StoreError {
        StoreError::Quota(message.into())
    }

    /// An upgrade blocked by another connection.
    pub fn blocked(message: impl Into<String>) -> StoreError {
        StoreError::Blocked(message.into())
    }

    /// A storage that cannot be reached.
    pub fn unavailable(message: impl Into<String>) -> StoreError {
        StoreError::Unavailable(message.into())
    }

    /// A connection closed by another one's upgrade.
    pub fn version_change(message: impl Into<String>) -> StoreError {
        StoreError::VersionChange(message.into())
    }

    /// A conflict described by `message`.
    pub fn conflict_text(message: impl Into<String>) -> StoreError {
        StoreError::Conflict(message.into())
    }

    /// The refusal of a save that does not build on the stored revision.
    pub fn conflict(stored: u64, base: u64) -> StoreError {
        StoreError::Conflict(format!(
            "the session changed in another window or process (stored revision {stored}, this one builds on {base}); reload it to continue"
        ))
    }

    /// The refusal of a save of a session that was deleted while this copy was open: a
    /// conflict (the copy must not bring the session back) that says why and how to keep it.
    pub fn deleted_meanwhile(id: &str) -> StoreError {
        StoreError::Conflict(format!(
            "session '{id}' was deleted (in another window or process) while this copy was open, so the save was refused and nothing was stored; to keep this copy, export it and import the export as a new session"
        ))
    }

    /// The error for an id that names no stored session.
    pub fn not_found(id: &str) -> StoreError {
        StoreError::NotFound { id: id.to_string() }
    }

    /// The code JavaScript and the CLI show for this kind of failure.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Conflict(_) => "conflict",
            StoreError::Quota(_) => "quota",
            StoreError::Blocked(_) => "blocked",
            StoreError::VersionChange(_) => "version_change",
            StoreError::Unavailable(_) => "unavailable",
            StoreError::NotFound { .. } => "not_found",
            StoreError::Storage(_) => "storage",
        }
    }
}
