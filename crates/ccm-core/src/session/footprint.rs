//! How much memory a session holds: an estimate a host can hold each session to.
//!
//! Every session of a WebAssembly module shares one memory of at most 4 GiB, so a host that
//! serves many sessions needs to know what each one costs and to stop one before it takes the
//! memory of all. The estimate walks what grows with a session's history (the texts in memory,
//! the recall index, the per-turn records) and adds what each kept record costs beyond its
//! text. It is an estimate, not an allocator count: the constants below were measured against
//! the allocator's live bytes in the npm package's memory test (npm/ccm/test/memory-*.test.mjs),
//! which checks that the estimate stays within a factor of the real growth.
//!
//! A session opened from a store holds only its working set (the open efforts' logs, the
//! ambient tail, the recent records) and the recall index; stored history read on demand for a
//! tool call counts from the moment it is read.

use super::Session;
use crate::model::Message;
use serde::Serialize;
use std::mem::size_of;

/// The memory a session holds, estimated in bytes and broken down by what holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MemoryFootprint {
    /// Message texts in memory (effort logs, the ambient log, messages read back for recall),
    /// summaries, names and attachments, with each record's fixed part.
    pub texts: u64,
    /// The recall index over every stored text, the effort search index and embeddings.
    pub indexes: u64,
    /// Per-turn records kept in memory: metrics points, request telemetry and the rewind
    /// records a branch is forked from.
    pub records: u64,
    /// The sum of the three.
    pub total: u64,
}

/// What one kept per-turn record costs beyond its texts, measured (see the module comment):
/// a metrics point with its event list, and a rewind record with its copy of the pins and the
/// effort placement.
const BYTES_PER_TURN_RECORD: u64 = 2_000;

/// What one turn's request telemetry costs in memory: the plan's ids, its exclusions and the
/// diff against the previous request, measured for an ordinary turn.
const BYTES_PER_TELEMETRY_TURN: u64 = 4_000;

/// What a message costs beyond its text: its record, its place in the log, and its share of
/// the search structures that are not counted per term.
const BYTES_PER_MESSAGE: u64 = size_of::<Message>() as u64 + 64;

/// The bytes a string holds on the heap.
fn text_bytes(text: &str) -> u64 {
    text.len() as u64
}

/// What a stored message's text costs per byte: the text in its log, and about as much again
/// in its copies (the cached plan of the next request, the excerpts and terms derived from it);
/// measured at 2.2 to 2.3 bytes per byte of long prose.
const BYTES_PER_MESSAGE_TEXT_BYTE: u64 = 2;

fn messages_bytes<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    messages
        .into_iter()
        .map(|message| {
            text_bytes(&message.content) * BYTES_PER_MESSAGE_TEXT_BYTE + BYTES_PER_MESSAGE
        })
        .sum()
}

impl Session {
    /// The memory this session holds, estimated (see [`MemoryFootprint`]). It walks the
    /// session's logs once, which costs about as much as counting its messages.
    pub fn memory_footprint(&self) -> MemoryFootprint {
        let mut texts = text_bytes(&self.system_prompt);
        for effort in self.efforts.all() {
            texts += text_bytes(&effort.id)
                + text_bytes(&effort.name)
                + effort.description.as_deref().map_or(0, text_bytes)
                + text_bytes(&effort.header)
                + size_of::<crate::model::Effort>() as u64;
            if let Some(summary) = &effort.summary {
                texts += text_bytes(&summary.text)
                    + text_bytes(&summary.rendered)
                    + summary
                        .keywords
                        .iter()
                        .map(|k| text_bytes(k) + 24)
                        .sum::<u64>();
            }
            texts += messages_bytes(&effort.messages);
        }
        texts += messages_bytes(self.ambient.messages());
        texts += messages_bytes(self.recall.loaded.values());
        for attached in self.attachments.by_id().values() {
            let attachment = &attached.attachment;
            texts += text_bytes(&attachment.id)
                + text_bytes(&attachment.name)
                + text_bytes(&attachment.full_text)
                + text_bytes(&attachment.summary)
                + attachment
                    .keywords
                    .iter()
                    .map(|k| text_bytes(k) + 24)
                    .sum::<u64>()
                + attachment.references.len() as u64 * 8
                + size_of::<crate::compaction::SessionAttachment>() as u64;
        }
        if let Some(state) = &self.turn_state {
            texts += text_bytes(&state.user_text);
        }

        let mut indexes = self.recall.index.approximate_bytes() as u64;
        if let Some(vectors) = &self.recall.vectors {
            let dimensions = vectors.dimensions.unwrap_or(0) as u64;
            indexes += vectors.by_key.len() as u64 * (dimensions + 48);
        }
        // The effort search index holds a few words per effort (its id, name and summary
        // keywords, and its log's distinctive words).
        indexes += self.efforts.len() as u64 * 512;

        let records = self.history.points().len() as u64 * BYTES_PER_TURN_RECORD
            + self.rewind.len() as u64 * BYTES_PER_TURN_RECORD
            + self.history.telemetry().len() as u64 * BYTES_PER_TELEMETRY_TURN;

        MemoryFootprint {
            texts,
            indexes,
            records,
            total: texts + indexes + records,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Session};

    #[test]
    fn the_footprint_grows_with_the_texts_and_turns_a_session_keeps() {
        let mut session = Session::new(Config::default()).unwrap();
        let empty = session.memory_footprint();
        assert_eq!(empty.total, empty.texts + empty.indexes + empty.records);
        let long = "word ".repeat(20_000);
        session.begin_turn(&long, 1).unwrap();
        session.end_turn("short answer", 2).unwrap();
        let after_one = session.memory_footprint();
        // The long text is held at least once, and the index of its words besides.
        assert!(
            after_one.texts >= empty.texts + long.len() as u64,
            "{after_one:?}"
        );
        assert!(after_one.indexes > empty.indexes, "{after_one:?}");
        assert!(after_one.records > empty.records, "{after_one:?}");
        for turn in 0..10 {
            session.begin_turn(&format!("question {turn}"), 3).unwrap();
            session.end_turn("answer", 4).unwrap();
        }
        assert!(session.memory_footprint().total > after_one.total);
    }

    #[test]
    fn aborting_a_turn_gives_its_text_back() {
        let mut session = Session::new(Config::default()).unwrap();
        let before = session.memory_footprint();
        session.begin_turn(&"x".repeat(50_000), 1).unwrap();
        assert!(session.memory_footprint().total >= before.total + 50_000);
        session.abort_turn().unwrap();
        assert_eq!(session.memory_footprint(), before);
    }
}
