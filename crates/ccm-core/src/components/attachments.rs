//! The attachments of a session: every attachment by id, and an index of them by log, so the
//! planner reads only the working set's.

use crate::compaction::{Attachment, SessionAttachment};
use crate::model::LogRef;
use std::collections::{BTreeMap, BTreeSet};

/// Every attachment of a session, and where each belongs. Read it through
/// [`crate::Session::attachments`].
#[derive(Debug, Clone)]
pub struct Attachments {
    /// Every attachment, by id.
    by_id: BTreeMap<String, SessionAttachment>,
    /// Attachment ids per log, by the sequence number of their message.
    by_log: BTreeMap<LogRef, BTreeSet<(u64, String)>>,
    /// Attachments of the turn in progress (filed under a log when the turn is stored).
    pending: Vec<String>,
    /// The number of the next attachment (`att-<n>`).
    next_id: u64,
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

    /// The number the next attachment gets.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Sets the number the next attachment gets (a stored session's counter; never below 1).
    pub(crate) fn restore_next_id(&mut self, next_id: u64) {
        self.next_id = next_id.max(1);
    }

    /// The id the next attachment gets.
    pub(crate) fn next_label(&self) -> String {
        format!("att-{}", self.next_id)
    }

    /// The attachments of the turn in progress.
    pub(crate) fn pending(&self) -> &[String] {
        &self.pending
    }

    /// The ids filed under `log`, by the sequence number of their message.
    pub(crate) fn filed_under(&self, log: &LogRef) -> Option<&BTreeSet<(u64, String)>> {
        self.by_log.get(log)
    }

    /// The attachment with `id`, to change its content (its mode, its references); where it
    /// is filed stays the component's.
    pub(crate) fn attachment_mut(&mut self, id: &str) -> Option<&mut Attachment> {
        self.by_id.get_mut(id).map(|stored| &mut stored.attachment)
    }

    /// Adds an attachment to the turn in progress under the id [`Attachments::next_label`]
    /// gave; it is filed under a log when the turn is stored.
    pub(crate) fn add_pending(&mut self, id: String, stored: SessionAttachment) {
        self.next_id += 1;
        self.by_id.insert(id.clone(), stored);
        self.pending.push(id);
    }

    /// Files the turn's attachments under the log its message went to; returns their ids.
    pub(crate) fn file_pending(&mut self, log: &LogRef) -> Vec<String> {
        let mut filed = Vec::new();
        for id in std::mem::take(&mut self.pending) {
            if let Some(stored) = self.by_id.get_mut(&id) {
                stored.log = Some(log.clone());
                self.index(&id);
                filed.push(id);
            }
        }
        filed
    }

    /// Takes in a stored attachment, filed under its log. Refused (`false`, nothing changed)
    /// when its id is taken.
    pub(crate) fn insert_stored(&mut self, stored: SessionAttachment) -> bool {
        let id = stored.attachment.id.clone();
        if self.by_id.contains_key(&id) {
            return false;
        }
        self.by_id.insert(id.clone(), stored);
        self.index(&id);
        true
    }

    /// Undoing a turn: the attachments of messages from `first_seq` on go, nothing is pending,
    /// and the numbering returns to `next_id`. Returns the ids that went.
    pub(crate) fn undo_from(&mut self, first_seq: u64, next_id: u64) -> Vec<String> {
        let removed = self.remove_from(first_seq);
        self.pending.clear();
        self.next_id = next_id;
        removed
    }

    /// Files an attachment under its log (it must have one).
    fn index(&mut self, id: &str) {
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
    fn remove_from(&mut self, first_seq: u64) -> Vec<String> {
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
