//! Keeping one session the same in two stores: a local copy (IndexedDB in the app) and a sync
//! server's ([`crate::remote::RemoteStore`]), over any two [`RecordStore`]s.
//!
//! # The rule
//!
//! Each side's revision only says how many saves it has seen, not whose: two devices that both
//! saved once from revision 5 are both at 6, with different turns. So the host remembers, per
//! session, the **synced revision**: the revision at which the two sides were last known to
//! hold the same records (set after a successful push or pull, never guessed). With it:
//!
//! | local | server | what happens |
//! |---|---|---|
//! | at the synced revision | at the synced revision | in sync, nothing to do |
//! | moved on | at the synced revision | **push**: the records written locally since, as one batch on the synced revision |
//! | at the synced revision | moved on | **pull**: the records written on the server since, as one batch on the synced revision |
//! | moved on | moved on | **conflict**: both wrote; the person chooses (see [`fork`] and [`replace`]) |
//! | exists | missing, never synced | **push** everything (a create) |
//! | missing | exists | **pull** everything (a create) |
//!
//! A push or a pull is a write on the other side building on the synced revision, so the
//! other side's own revision check refuses it when a third writer got there first: the
//! outcome is then a conflict, never an interleaving. The batch carries the ahead side's
//! header as it is, revision included, so after a push or a pull both sides are at the same
//! revision and the next turn's ordinary batch applies on both.
//!
//! A catch-up batch holds every effort record and attachment (they can change in place and
//! are few), the messages numbered from the behind side's `next_seq`, and the metrics of the
//! turns after the behind side's turn: what the saves in between wrote, but for telemetry. A
//! whole copy (a session the other side does not have, a fork, a replacement) holds every
//! record but the telemetry. Telemetry is each device's per-turn diagnostics of the requests it
//! sent: opening a session never reads it, and reading it would cost a read per turn behind
//! (most of a reconnect's time over HTTP) and, in the browser, the decoders of every plan type
//! in the download. Records the ahead side cannot read stop the sync with an error naming
//! them, rather than leaving the other side with a header that counts messages it does not
//! have.

use crate::backend::{RecordStore, WriteMode};
use crate::error::StoreError;
use crate::records::SessionRow;
use ccm_core::persistence::{SessionHeader, WriteBatch};

/// What [`sync_session`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncOutcome {
    /// Both sides hold the same revision; nothing was sent.
    InSync {
        /// The revision both hold.
        revision: u64,
    },
    /// Local records were written to the server.
    Pushed {
        /// The revision both hold now.
        revision: u64,
        /// Records the push wrote.
        records: usize,
    },
    /// The server's records were written locally.
    Pulled {
        /// The revision both hold now.
        revision: u64,
        /// Records the pull wrote.
        records: usize,
    },
    /// Both sides wrote since they were last the same: the person chooses.
    Conflict(SyncConflict),
}

impl SyncOutcome {
    /// The revision both sides hold after a successful sync (none for a conflict).
    pub fn synced_revision(&self) -> Option<u64> {
        match self {
            SyncOutcome::InSync { revision }
            | SyncOutcome::Pushed { revision, .. }
            | SyncOutcome::Pulled { revision, .. } => Some(*revision),
            SyncOutcome::Conflict(_) => None,
        }
    }
}

/// Two versions of one session that both moved on from their last common revision.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncConflict {
    /// The local revision.
    pub local_revision: u64,
    /// The server's revision (none when another device deleted the session there).
    pub remote_revision: Option<u64>,
    /// The last revision both were known to hold (none when never synced).
    pub synced_revision: Option<u64>,
}

/// Brings one session's two copies together, as the table in the module documentation says.
/// `local_row` and `remote_row` are the rows each side lists now (`None` where the session is
/// missing); `synced` is the host's synced revision of this session. On success, the host
/// stores the outcome's [`synced_revision`](SyncOutcome::synced_revision).
///
/// # Errors
/// A failure of either store (an unreachable server is [`StoreError::Unavailable`]), records
/// that cannot be read on the side that is ahead, or a conflict found by the other side's
/// revision check while the batch was on its way (another writer came first).
pub async fn sync_session<L: RecordStore, R: RecordStore>(
    local: &L,
    remote: &R,
    id: &str,
    local_row: Option<&SessionRow>,
    remote_row: Option<&SessionRow>,
    synced: Option<u64>,
    now_ms: f64,
) -> Result<SyncOutcome, StoreError> {
    match (local_row, remote_row) {
        (None, None) => Err(StoreError::not_found(id)),
        (Some(local_row), None) => {
            if synced.is_some() {
                // It was on the server once and is gone: another device deleted it. Pushing it
                // back silently would undo that device's choice.
                return Ok(SyncOutcome::Conflict(SyncConflict {
                    local_revision: local_row.header.revision,
                    remote_revision: None,
                    synced_revision: synced,
                }));
            }
            let (records, revision) = copy(local, remote, id, local_row, None, now_ms).await?;
            Ok(SyncOutcome::Pushed { revision, records })
        }
        (None, Some(remote_row)) => {
            let (records, revision) = copy(remote, local, id, remote_row, None, now_ms).await?;
            Ok(SyncOutcome::Pulled { revision, records })
        }
        (Some(local_row), Some(remote_row)) => {
            let local_revision = local_row.header.revision;
            let remote_revision = remote_row.header.revision;
            let local_moved = synced != Some(local_revision);
            let remote_moved = synced != Some(remote_revision);
            if !local_moved && !remote_moved {
                return Ok(SyncOutcome::InSync {
                    revision: local_revision,
                });
            }
            if local_row.header == remote_row.header {
                // Identical headers although the synced revision says otherwise: a push whose
                // answer was lost (it was stored), or a session written by this device before
                // the synced revision was kept. A header holds every count and the time of its
                // last turn's compaction check, so two devices' turns do not make equal headers.
                return Ok(SyncOutcome::InSync {
                    revision: local_revision,
                });
            }
            if synced.is_some() && local_moved && !remote_moved {
                let (records, revision) = copy(
                    local,
                    remote,
                    id,
                    local_row,
                    Some(&remote_row.header),
                    now_ms,
                )
                .await?;
                return Ok(SyncOutcome::Pushed { revision, records });
            }
            if synced.is_some() && remote_moved && !local_moved {
                let (records, revision) = copy(
                    remote,
                    local,
                    id,
                    remote_row,
                    Some(&local_row.header),
                    now_ms,
                )
                .await?;
                return Ok(SyncOutcome::Pulled { revision, records });
            }
            Ok(SyncOutcome::Conflict(SyncConflict {
                local_revision,
                remote_revision: Some(remote_revision),
                synced_revision: synced,
            }))
        }
    }
}

/// Copies session `id` of `from` (whose row is `from_row`) as a new session `new_id` of `to`,
/// named `name`: one way out of a conflict keeps a version this way, as a session of its own
/// (a branch), before the other version takes the session's place. Returns the records
/// written.
///
/// # Errors
/// A failure of either store, unreadable records in `from`, or `new_id` taken in `to`.
pub async fn fork<F: RecordStore, T: RecordStore>(
    from: &F,
    to: &T,
    id: &str,
    new_id: &str,
    name: &str,
    now_ms: f64,
) -> Result<usize, StoreError> {
    let (_, batch) = whole_batch(from, id).await?;
    let written = batch.record_count();
    let mode = WriteMode::Create {
        now_ms,
        name: name.to_string(),
    };
    to.write(new_id, &batch, mode).await?;
    Ok(written)
}

/// Replaces session `id` of `to` with `from`'s version of it: the other way out of a conflict
/// (after the version being replaced was kept with [`fork`], so nothing is lost). Returns the
/// records written.
///
/// # Errors
/// A failure of either store, or unreadable records in `from`. When the write fails after the
/// delete, `to` has no session `id` until the next sync pulls it again; `from` is untouched.
pub async fn replace<F: RecordStore, T: RecordStore>(
    from: &F,
    to: &T,
    id: &str,
    now_ms: f64,
) -> Result<usize, StoreError> {
    // Read first: a failed read leaves the version being replaced in place.
    let (row, batch) = whole_batch(from, id).await?;
    let written = batch.record_count();
    to.delete(id).await?;
    to.write(
        id,
        &batch,
        WriteMode::Create {
            now_ms,
            name: row.name.clone(),
        },
    )
    .await?;
    Ok(written)
}

/// Every record of session `id` of `from` (but telemetry), read in one snapshot, as a batch
/// that creates the session; and the row read with them.
async fn whole_batch<S: RecordStore>(
    from: &S,
    id: &str,
) -> Result<(SessionRow, WriteBatch), StoreError> {
    let records = from.read_all(id).await?;
    let row = records.row.map_err(StoreError::storage)?;
    refuse_unreadable(&records.unreadable)?;
    let batch = WriteBatch {
        base_revision: 0,
        header: row.header.clone(),
        efforts: records.efforts,
        messages: records.messages,
        metrics: records.metrics,
        telemetry: Vec::new(),
        attachments: records.attachments,
    };
    Ok((row, batch))
}

fn refuse_unreadable(unreadable: &[String]) -> Result<(), StoreError> {
    if unreadable.is_empty() {
        return Ok(());
    }
    Err(StoreError::storage(format!(
        "the session cannot be synced while some of its records cannot be read ({}); nothing was sent. Export it to keep what is readable",
        unreadable.join("; ")
    )))
}

/// Writes to `to` what `from` holds beyond `behind` (the header `to` holds, or `None` for a
/// session `to` does not have), as one batch on `behind`'s revision. `from_row` is the row
/// `from` listed (a created copy takes its name); the batch carries what `from` holds when it
/// is read, which may be newer.
/// Returns the records written and the revision both sides hold now.
async fn copy<F: RecordStore, T: RecordStore>(
    from: &F,
    to: &T,
    id: &str,
    from_row: &SessionRow,
    behind: Option<&SessionHeader>,
    now_ms: f64,
) -> Result<(usize, u64), StoreError> {
    let batch = catch_up_batch(from, id, behind).await?;
    let written = batch.record_count();
    let mode = match behind {
        None => WriteMode::Create {
            now_ms,
            name: from_row.name.clone(),
        },
        Some(_) => WriteMode::Save { now_ms },
    };
    to.write(id, &batch, mode).await?;
    Ok((written, batch.header.revision))
}

/// The batch that brings a copy at `behind` (or no copy) up to what `ahead` holds. It is
/// bounded by the header read with the records themselves (in one snapshot), so a save that
/// lands on `ahead` meanwhile is either wholly in the batch or wholly out of it.
///
/// # Errors
/// A failure of `ahead`, or records it cannot read.
pub async fn catch_up_batch<S: RecordStore>(
    ahead: &S,
    id: &str,
    behind: Option<&SessionHeader>,
) -> Result<WriteBatch, StoreError> {
    let Some(behind) = behind else {
        return Ok(whole_batch(ahead, id).await?.1);
    };
    let (loaded_row, loaded) = ahead.load(id).await?;
    let ahead_header = loaded_row.header;
    let (messages, unreadable) = ahead
        .messages_between(id, behind.next_seq, ahead_header.next_seq)
        .await?;
    refuse_unreadable(&unreadable)?;
    refuse_unreadable(&loaded.unreadable)?;
    let new_points = ahead_header.history_len.saturating_sub(behind.history_len);
    let in_range = |point: &ccm_core::metrics::TurnMetrics| {
        point.turn > behind.turn && point.turn <= ahead_header.turn
    };
    let metrics = if (loaded.history_tail.len() as u64) >= new_points {
        loaded.history_tail.into_iter().filter(in_range).collect()
    } else {
        // More turns than a load's tail holds (a device offline for hundreds of turns).
        let all = ahead.read_all(id).await?;
        refuse_unreadable(&all.unreadable)?;
        all.metrics.into_iter().filter(in_range).collect()
    };
    let mut efforts = loaded.efforts;
    efforts.sort_by_key(|record| record.position);
    Ok(WriteBatch {
        base_revision: behind.revision,
        header: ahead_header,
        efforts,
        messages,
        metrics,
        telemetry: Vec::new(),
        attachments: loaded.attachments,
    })
}
