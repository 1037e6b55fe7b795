//! The record-store interface every backend implements, and the rules of a write that every
//! backend applies the same way.

use crate::error::{StoreError, StoreResult};
use crate::records::SessionRow;
use ccm_core::compaction::SessionAttachment;
use ccm_core::metrics::TurnMetrics;
use ccm_core::model::Message;
use ccm_core::persistence::{EffortRecord, LoadedRecords, StoredMessage, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;

/// Whether a write creates a session or saves one that exists.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteMode {
    /// A new session (`create`, `import`): the id must be free and the batch must build on
    /// revision 0.
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
#[derive(Debug, Clone)]
pub struct StoredRecords {
    /// The session row, or why it could not be read (the other records are read regardless,
    /// so a session with a damaged header can still be exported).
    pub row: Result<SessionRow, String>,
    /// Every readable effort record.
    pub efforts: Vec<EffortRecord>,
    /// Every readable message record, in sequence order.
    pub messages: Vec<StoredMessage>,
    /// Every readable metrics point, in turn order.
    pub metrics: Vec<TurnMetrics>,
    /// Every readable attachment.
    pub attachments: Vec<SessionAttachment>,
    /// One sentence for each record that could not be read.
    pub unreadable: Vec<String>,
}

impl StoredRecords {
    /// No records yet beside the row: an export's read starts here and fills each list in as
    /// it reads it, with what it could not read in `unreadable`.
    pub fn of(row: Result<SessionRow, String>) -> StoredRecords {
        StoredRecords {
            row,
            efforts: Vec::new(),
            messages: Vec::new(),
            metrics: Vec::new(),
            attachments: Vec::new(),
            unreadable: Vec::new(),
        }
    }
}

/// A stored session whose row (header) cannot be read: it is still listed, marked damaged.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedSession {
    /// Its id in the store.
    pub id: String,
    /// Why its row could not be read, for the person.
    pub problem: String,
}

/// Messages read by sequence number, and the records among them that could not be read.
pub type MessagesRead = (Vec<StoredMessage>, Vec<String>);

/// One log's messages in sequence order, and the records among them that could not be read.
/// Named, as [`MessagesRead`] is, so that `effort_log` fits its signature on one line in
/// every backend, where the spelled-out type repeated the same five lines in each.
pub type LogRead = (Vec<Message>, Vec<String>);

/// What a [`RecordStore::write`] returns: the row as written, or why nothing was written. A name
/// of its own keeps every backend's `write` on one line, where the spelled-out type made each
/// implementation repeat the same six-line signature.
pub type WriteResult = StoreResult<SessionRow>;

/// The storage of sessions as records, the one interface every backend implements.
///
/// A backend keeps, per session id: the [`SessionRow`] (name, times and the core's header
/// with its revision), effort records by position, message records by sequence number with
/// the log each belongs to, metrics points by index, telemetry by turn and attachments by id,
/// each as the JSON text of [`records::encode`](crate::records::encode). What it promises:
///
/// - **Atomic, checked writes.** [`write`](RecordStore::write) applies the whole batch or
///   nothing, after checking [`next_row`] against the stored row *in the same transaction*:
///   two writers on one revision never both succeed, wherever they run. A failed write
///   (conflict, full storage, a lost connection, a killed process) leaves the previously
///   stored revision readable.
/// - **Incremental.** A write stores the batch's records and the row, nothing else, so its
///   cost does not grow with the conversation; [`load`](RecordStore::load) reads what the
///   header's [`load_request`](ccm_core::persistence::SessionHeader::load_request) names.
/// - **Damage held and reported.** A record that cannot be decoded is skipped with a sentence
///   in the result's `unreadable` list, never dropped from storage or fatal to its session
///   (except the row, without which a session cannot be opened but is still listed and
///   exported).
///
/// The futures are not required to be `Send`: browser backends hold JavaScript values.
/// `crate::conformance` (feature `conformance`) checks all of it for a backend.
#[allow(
    async_fn_in_trait,
    reason = "each host awaits its backend on its own executor; a Send bound would exclude the browser backends"
)]
pub trait RecordStore {
    /// The backend's name as hosts show it (`"indexeddb"`, `"files"`, `"postgres"`).
    fn kind(&self) -> &'static str;

    /// Every stored session's row, and the sessions whose row cannot be read.
    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError>;

    /// Writes `batch` for session `id` atomically, after checking [`next_row`]; returns the
    /// row as written.
    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult;

    /// The row and the working set of a session: what its header's load request names, the
    /// effort records and the attachments, with `log_sizes` where the backend can count them
    /// without reading messages.
    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError>;

    /// The raw log of one effort, in sequence order, and its unreadable records.
    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead>;

    /// The stored messages with sequence numbers `from..to` (every log): a step of the recall
    /// index's rebuild.
    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead>;

    /// The stored messages with these sequence numbers: the messages a recalled excerpt or a
    /// search shows. Numbers with no record are left out.
    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError>;

    /// Every record of a session, for an export.
    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError>;

    /// The request telemetry of one turn, if stored.
    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError>;

    /// Renames a stored session (its revision stays).
    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError>;

    /// Deletes a session and every record of it; deleting an unknown id is not an error.
    async fn delete(&self, id: &str) -> Result<(), StoreError>;
}

/// What a person can do with a session that cannot be opened whole, for the sentences that
/// report one (the listing of every backend, the file store's refusal to open it).
pub const DAMAGED_WAY_OUT: &str = ". Its records are kept as they are: an export takes out everything readable (its repairs list says what was lost), and importing that export stores it as a new, healthy session";

/// The stored row of an existing session, or a precise error.
pub fn existing_row(
    id: &str,
    stored: Option<Result<SessionRow, String>>,
) -> Result<SessionRow, StoreError> {
    match stored {
        Some(Ok(row)) => Ok(row),
        Some(Err(problem)) => Err(StoreError::storage(format!(
            "session '{id}' cannot be opened: {problem}. Its other records are untouched; an export lists what is readable"
        ))),
        None => Err(StoreError::not_found(id)),
    }
}

/// The row to write with `batch`, after checking the write rules against the stored row
/// (`None` when no session has this id): a new session's id must be free and its batch must
/// build on revision 0; a save must build on the stored revision.
pub fn next_row(
    id: &str,
    stored: Option<Result<SessionRow, String>>,
    batch: &WriteBatch,
    mode: WriteMode,
) -> Result<SessionRow, StoreError> {
    match mode {
        WriteMode::Create { now_ms, name } => {
            if stored.is_some() {
                return Err(StoreError::conflict_text(format!(
                    "a session with id '{id}' already exists"
                )));
            }
            if batch.base_revision != 0 {
                return Err(StoreError::conflict(0, batch.base_revision));
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
                // The session was deleted meanwhile (by another window or process): a conflict,
                // since this copy must not bring it back, that says what happened.
                None => return Err(StoreError::deleted_meanwhile(id)),
                Some(row) => existing_row(id, Some(row))?,
            };
            if row.header.revision != batch.base_revision {
                return Err(StoreError::conflict(
                    row.header.revision,
                    batch.base_revision,
                ));
            }
            Ok(SessionRow {
                updated_ms: now_ms,
                header: batch.header.clone(),
                ..row
            })
        }
    }
}
