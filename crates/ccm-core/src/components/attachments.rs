//! The attachments of a session: every attachment by id, and an index of them by log, so the
//! planner reads only the working set's.

use crate::compaction::SessionAttachment;
use crate::model::LogRef;
use std::collections::{BTreeMap, BTreeSet};

/// Every attachment of a session, and where each belongs. Read it through
/// [`crate::Session::attachments`].
#[derive(Debug, Clone)]
pub struct Attachments {
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
    /// Attachments by id, evicted or not: every one ever attached stays stored.
    pub fn by_id(&self) -> &BTreeMap<String, SessionAttachment> {
        &self.by_id
    }

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

    /// The filed attachments of message `seq` as the recall index reads them: number, text
    /// and turn, in attachment order.
    pub(crate) fn of_message(&self, seq: u64) -> Vec<(u32, &SessionAttachment)> {
        let mut found: Vec<(u32, &SessionAttachment)> = self
            .by_id
            .values()
            .filter(|a| a.message_seq == seq && a.log.is_some())
            .filter_map(|a| Some((a.attachment.id.strip_prefix("att-")?.parse().ok()?, a)))
            .collect();
        // By number, not by id: "att-10" sorts before "att-2" as text.
        found.sort_by_key(|(number, _)| *number);
        found
    }

    /// The recall part of the first passage of attachment `number`. A message's passages are
    /// numbered on from 1 across all its attachments, in attachment order, so two files
    /// attached to one message never share a key in the recall index.
    pub(crate) fn first_part(&self, number: u32) -> Option<u32> {
        let seq = self.by_id.get(&format!("att-{number}"))?.message_seq;
        let before: usize = self
            .of_message(seq)
            .into_iter()
            .take_while(|(other, _)| *other < number)
            .map(|(_, a)| crate::recall::passages(&a.attachment.full_text).len())
            .sum();
        u32::try_from(before + 1).ok()
    }
}
