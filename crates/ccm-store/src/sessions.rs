//! The session operations over any [`RecordStore`]: list, create, open, save, export and
//! import, written once so that every backend behaves the same. Hosts add what is theirs: the
//! browser its session cell and busy mark, the CLI its terminal.

use crate::backend::{RecordStore, WriteMode, DAMAGED_WAY_OUT};
use crate::error::StoreError;
use crate::records::SessionRow;
use ccm_core::branch::BranchInfo;
use ccm_core::persistence::{SessionHeader, WriteBatch};
use ccm_core::snapshot::SessionDocument;
use ccm_core::tokens::{ApproximateCounter, TokenCounter};
use ccm_core::{Session, SnapshotError};
use serde::Serialize;
use std::sync::Arc;

/// One stored session, as a session list shows it. Serialised as the JavaScript package's
/// `SessionInfo` (snake_case fields, counts as numbers).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Such a session cannot be opened, but an export still takes out everything readable;
    /// its other fields are zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// Where a branch session came from (its name, its parent and the turn it was forked
    /// at); `None` for a main line. The app groups a conversation's alternatives (Regenerate
    /// and Edit) by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchInfo>,
}

impl SessionInfo {
    /// A readable session's entry.
    pub fn of(row: &SessionRow) -> SessionInfo {
        SessionInfo {
            id: row.id.clone(),
            name: row.name.clone(),
            created_ms: row.created_ms,
            updated_ms: row.updated_ms,
            turn_count: row.header.turn as f64,
            message_count: row.header.next_seq as f64,
            revision: row.header.revision as f64,
            damaged: None,
            branch: Some(row.header.branch.clone()).filter(|branch| !branch.is_main()),
        }
    }
}

/// What a save wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveReport {
    /// The stored revision after the save.
    pub revision: u64,
    /// Records written (the session row included): what changed, not the whole history.
    pub records_written: usize,
    /// The saved session as a session list shows it now, so a host's list needs no re-reading.
    pub session: SessionInfo,
}

/// Every stored session, most recently updated first; damaged ones last, listed rather than
/// hidden: their records are still stored and an export takes out what is readable.
///
/// # Errors
/// A storage failure.
pub async fn list<S: RecordStore>(store: &S) -> Result<Vec<SessionInfo>, StoreError> {
    let (rows, damaged) = store.rows().await?;
    let mut sessions: Vec<SessionInfo> = rows.iter().map(SessionInfo::of).collect();
    sessions.sort_by(|a, b| {
        b.updated_ms
            .total_cmp(&a.updated_ms)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut damaged = damaged;
    damaged.sort_by(|a, b| a.id.cmp(&b.id));
    sessions.extend(damaged.into_iter().map(|d| SessionInfo {
        name: format!("Damaged session {}", d.id),
        id: d.id,
        created_ms: 0.0,
        updated_ms: 0.0,
        turn_count: 0.0,
        message_count: 0.0,
        revision: 0.0,
        damaged: Some(format!("{}{DAMAGED_WAY_OUT}", d.problem)),
        branch: None,
    }));
    Ok(sessions)
}

/// Stores the whole of `core` as a new session `id` named `name`, and returns its row; the
/// session is marked saved when `mark` is set (a created session stays linked to the store,
/// an imported copy does not).
///
/// # Errors
/// `E` from a [`StoreError`] (a taken id is a conflict) or from the core's refusal of records
/// that do not add up.
pub async fn insert<S: RecordStore, E>(
    store: &S,
    id: &str,
    core: &mut Session,
    name: &str,
    now_ms: f64,
    mark: bool,
) -> Result<SessionRow, E>
where
    E: From<StoreError> + From<SnapshotError>,
{
    let batch = core.full_write_batch()?;
    let mode = WriteMode::Create {
        now_ms,
        name: name.to_string(),
    };
    let row = store.write(id, &batch, mode).await?;
    if mark {
        core.mark_saved(&batch)?;
    }
    Ok(row)
}

/// Opens a stored session: its header, effort records, the open efforts' logs, the ambient
/// tail and the recent metrics, never its whole history. `counter_for` chooses the counter
/// from the stored header (its counting rule and configuration). Unreadable records other than
/// the header do not fail the open: they are returned as problems, one sentence each, beside
/// what the core repaired on the way.
///
/// # Errors
/// An unknown id, an unreadable header, `counter_for`'s refusal, a storage failure.
pub async fn open<S: RecordStore, E>(
    store: &S,
    id: &str,
    counter_for: impl FnOnce(&SessionHeader) -> Result<Arc<dyn TokenCounter>, E>,
) -> Result<(Session, SessionRow, Vec<String>), E>
where
    E: From<StoreError> + From<SnapshotError>,
{
    let (row, records) = store.load(id).await?;
    let counter = counter_for(&row.header)?;
    let (core, report) = Session::from_store(records, counter)?;
    Ok((core, row, report.problems))
}

/// Writes the batch of what changed in `core` since its last save to session `id` and marks
/// it saved. On any failure the session stays unsaved and the stored one unchanged.
///
/// # Errors
/// A conflict when another writer saved first, a full storage, a storage failure, or a turn
/// in progress.
pub async fn save<S: RecordStore, E>(
    store: &S,
    id: &str,
    core: &mut Session,
    now_ms: f64,
) -> Result<SaveReport, E>
where
    E: From<StoreError> + From<SnapshotError> + From<ccm_core::TurnError>,
{
    let batch = core.write_batch()?;
    let row = store.write(id, &batch, WriteMode::Save { now_ms }).await?;
    core.mark_saved(&batch)?;
    Ok(report_of(&batch, &row))
}

/// What writing `batch` did, once it is written as `row`.
pub fn report_of(batch: &WriteBatch, row: &SessionRow) -> SaveReport {
    SaveReport {
        revision: batch.header.revision,
        records_written: batch.record_count(),
        session: SessionInfo::of(row),
    }
}

/// The whole stored session as one versioned document. When records are damaged (unreadable,
/// missing, or not adding up), the document holds everything readable, placeholders for what
/// is not, and lists each repair in its `repairs` field; it imports like any other. The
/// damaged records stay stored as they are. `counter_for` gives the session's own counter
/// where the host has it, so checking the export recounts nothing; `None` takes the
/// approximation (an import recounts either way).
///
/// # Errors
/// An unknown id or a storage failure.
pub async fn export_document<S: RecordStore, E>(
    store: &S,
    id: &str,
    counter_for: impl FnOnce(&SessionHeader) -> Option<Arc<dyn TokenCounter>>,
) -> Result<SessionDocument, E>
where
    E: From<StoreError> + From<SnapshotError>,
{
    let records = store.read_all(id).await?;
    let mut unreadable = records.unreadable;
    let header = match records.row {
        Ok(row) => row.header,
        Err(problem) => {
            // Without its header the session's counters and settings are unknown: a fresh
            // session's header stands in, and the repair rebuilds the counters from the
            // records themselves.
            unreadable.insert(0, format!("{problem}; default settings stand in for it"));
            Session::with_counter(Default::default(), Arc::new(ApproximateCounter))
                .map_err(|e| SnapshotError::Malformed(e.to_string()))?
                .header()
        }
    };
    let counter = counter_for(&header).unwrap_or_else(|| Arc::new(ApproximateCounter));
    Ok(SessionDocument::from_stored_records(
        header,
        records.efforts,
        records.messages,
        records.metrics,
        records.attachments,
        unreadable,
        counter,
    )?)
}

/// Completes the recall index of a session opened from `store` as `id`, in the core's steps,
/// reading each step's messages by range: what a host does before the first request of an
/// opened session, so that search and the automatic recall see every stored message. Returns
/// a sentence per message that could not be read or indexed.
///
/// # Errors
/// A storage failure, or a step the core refuses.
pub async fn complete_recall_index<S: RecordStore, E>(
    store: &S,
    id: &str,
    core: &mut Session,
) -> Result<Vec<String>, E>
where
    E: From<StoreError> + From<SnapshotError>,
{
    let mut problems = Vec::new();
    while let Some(request) = core.recall_state().index_request() {
        problems.extend(read_records::<S, E>(store, id, core, &[], Some(request), &[]).await?);
    }
    Ok(problems)
}

/// Reads what a turn of a session opened from `store` as `id` needs before it goes on (the
/// turn driver's `Step::Load`): the raw logs of `efforts`, a step of the recall index's
/// rebuild, and the stored messages a recalled excerpt shows; each is handed to the session.
/// Returns a sentence per record that could not be read (the readable rest is attached).
///
/// # Errors
/// A storage failure, or stored records that do not match the session.
pub async fn read_records<S: RecordStore, E>(
    store: &S,
    id: &str,
    core: &mut Session,
    efforts: &[String],
    index: Option<ccm_core::session::IndexRequest>,
    messages: &[u64],
) -> Result<Vec<String>, E>
where
    E: From<StoreError> + From<SnapshotError>,
{
    let mut problems = Vec::new();
    for effort in efforts {
        let (log, mut unreadable) = store.effort_log(id, effort).await?;
        problems.append(&mut unreadable);
        // A log with messages missing from storage is attached as far as it is readable.
        problems.extend(core.attach_effort_log(effort, log)?);
    }
    if let Some(request) = index {
        let (stored, mut unreadable) = store
            .messages_between(id, request.from_seq, request.to_seq)
            .await?;
        problems.append(&mut unreadable);
        problems.extend(core.index_stored_messages(request, stored)?);
    }
    if !messages.is_empty() {
        let (stored, mut unreadable) = store.messages_by_seq(id, messages).await?;
        problems.append(&mut unreadable);
        core.attach_recalled_messages(stored)?;
    }
    Ok(problems)
}
