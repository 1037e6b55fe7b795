//! The attachments of a session: every attachment by id, and an index of them by log, so the
//! planner reads only the working set's.

use crate::compaction::SessionAttachment;
use crate::model::LogRef;
use std::collections::{BTreeMap, BTreeSet};

/// Every attachment of a session, and where each belongs.
#[derive(Debug, Clone)]
pub(crate) struct Attachments {
    /// Every attachment, by id.
    pub(crate) by_id: BTreeMap<String, SessionAttachment>,
    /// Attachment ids per log, by the sequence number of their message.
    pub(crate) by_log: BTreeMap<LogRef, BTreeSet<(u64, String)>>,
    /// Attachments of the turn in progress (filed under a log when the turn is stored).
    pub(crate) pending: Vec<String>,
    /// The number of the next attachment (`att-<n>`).
    pub(crate) next_id: u64,
}

impl Default for Attachments {
    fn default() -> Self {
        Attachments {
            by_id: BTreeMap::new(),
            by_log: BTreeMap::new(),
            pending: Vec::new(),
            next_id: 1,
        }
    }
}

impl Attachments {
    /// Files an attachment under its log (it must have one).
    pub(crate) fn index(&mut self, id: &str) {
        if let Some(stored) = self.by_id.get(id) {
            if let Some(log) = &stored.log {
                self.by_log
                    .entry(log.clone())
                    .or_default()
                    .insert((stored.message_seq, id.to_string()));
            }
        }
    }

    /// Removes every attachment of messages from `first_seq` on (a rewound turn's), returning
    /// their ids.
    pub(crate) fn remove_from(&mut self, first_seq: u64) -> Vec<String> {
        let removed: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, a)| a.message_seq >= first_seq)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &removed {
            if let Some(stored) = self.by_id.remove(id) {
                if let Some(log) = &stored.log {
                    if let Some(set) = self.by_log.get_mut(log) {
                        set.remove(&(stored.message_seq, id.clone()));
                    }
                }
            }
        }
        removed
    }
}
