//! What the next save must write: everything changed since the last save.

use std::collections::{BTreeMap, BTreeSet};

/// Save tracking. A write batch is built from it without clearing it; `mark_saved` clears what
/// a stored batch held, so a failed write can be retried.
#[derive(Debug, Clone, Default)]
pub(crate) struct Saves {
    /// Effort records changed since the last save.
    pub(crate) dirty_efforts: BTreeSet<usize>,
    /// Messages stored since the last save: (effort index or `None` for ambient, position in
    /// that log's loaded messages).
    pub(crate) unsaved_messages: Vec<(Option<usize>, usize)>,
    /// Loaded metrics points already written (index into the history's points).
    pub(crate) history_saved: usize,
    /// Telemetry entries already written (index into the history's telemetry).
    pub(crate) telemetry_saved: usize,
    /// Attachments changed since the last save.
    pub(crate) dirty_attachments: BTreeSet<String>,
    /// Effort record positions that hold a record this session did not take in (unreadable,
    /// or a second record of an effort already read). Positions are assigned around them, so
    /// a save never writes over a record the user may still want back.
    pub(crate) held_positions: BTreeSet<u64>,
    /// Messages missing from storage per effort id, found when its log was read. Its record
    /// keeps counting them, so a save does not make them look never written and every later
    /// load reports them again.
    pub(crate) missing_messages: BTreeMap<String, u64>,
}

impl Saves {
    /// The stored record position of the effort at `index` in opening order: the `index`-th
    /// position that is not held.
    pub(crate) fn effort_position(&self, index: usize) -> u64 {
        let mut position = index as u64;
        // Held positions are sorted; each one at or below the candidate pushes it one further.
        for &held in &self.held_positions {
            if held <= position {
                position += 1;
            } else {
                break;
            }
        }
        position
    }
}
