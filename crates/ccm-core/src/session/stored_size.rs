//! How many characters a session stores, counted as its export would write them, so that
//! whatever a session stores can be exported and imported again (issue 26).
//!
//! An import accepts documents of at most [`MAX_IMPORT_DOCUMENT_CHARS`] characters. A session
//! grows by messages (each up to 16 million characters), model answers, tool texts and
//! attachments; every one of these additions is checked against [`MAX_SESSION_STORED_CHARS`]
//! before it is made, and refused with [`SessionFull`] past it.
//!
//! The total must be known without reading stored history (a session opened from a store
//! holds only its working set), so it is kept as a running count of what grows with history
//! (messages, per-turn records, attachments), counted once when each is added, plus a walk of
//! what is always in memory (effort records, pins, the session-wide state) at each check. The
//! running count is kept in the stored header once it passes [`RECORDED_FROM_CHARS`]: below
//! that the header is left as it was, so the headers of ordinary sessions do not change, and a
//! header without the count is read as "at most that many".
//!
//! [`MAX_IMPORT_DOCUMENT_CHARS`]: crate::compaction::MAX_IMPORT_DOCUMENT_CHARS

use super::Session;
use crate::compaction::{
    SessionAttachment, SessionFull, MAX_SESSION_STORED_CHARS, RECORDED_FROM_CHARS,
    ROOM_FOR_ANSWER_CHARS,
};
use crate::metrics::TurnMetrics;
use crate::model::{Effort, EffortStatus, LogState, Message, Summary, SummarySource};
use serde::Serialize;
use std::sync::{Arc, OnceLock};

/// The most a message record takes in an export besides its text: its sequence number, turn,
/// role, token count and time, with their keys and punctuation (at most about 130 characters
/// with every number at its largest).
const MESSAGE_RECORD_CHARS: u64 = 140;

/// What an attachment's list of references costs per entry: a sequence number and a comma.
const REFERENCE_CHARS: u64 = 21;

/// The document's own keys and punctuation around its parts.
const DOCUMENT_FRAME_CHARS: u64 = 1_000;

/// The running count, and whether it is the assumed one of a header without a count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StoredSize {
    /// Characters of the messages, per-turn records and attachments, as the export writes
    /// them; an upper bound of what they take.
    pub(crate) chars: u64,
    /// Set when the session was opened from a header without a count and has not changed
    /// since: its next header stays without one, as it was.
    pub(crate) assumed: bool,
}

/// The characters `text` takes as a JSON string, quotes included, as JavaScript counts them
/// (UTF-16 units): both serde_json and `JSON.stringify` write a quote, a backslash and the
/// control characters with a short escape as two characters, other control characters as six
/// (`\u0001`), and everything else as it is.
pub(crate) fn json_text_chars(text: &str) -> u64 {
    let escaped: u64 = text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf16() as u64,
        })
        .sum();
    escaped + 2
}

/// The characters a value takes in the export, as JavaScript counts them.
fn serialized_chars<T: Serialize>(value: &T) -> u64 {
    let json = serde_json::to_string(value).unwrap_or_default();
    if json.is_ascii() {
        json.len() as u64
    } else {
        json.chars().map(char::len_utf16).sum::<usize>() as u64
    }
}

/// At most what `text` takes as a JSON string, without its quotes: a character takes at most six
/// characters when escaped (`\u0001`) and at most one per UTF-8 byte otherwise (a UTF-16 unit
/// needs at least one byte), so six per byte bounds it without reading the text.
fn text_chars_at_most(text: &str) -> u64 {
    6 * text.len() as u64
}

/// At most what a list of texts adds to a record beyond its brackets: each text with its quotes
/// and a comma.
fn texts_chars_at_most(texts: &[String]) -> u64 {
    texts.iter().map(|text| text_chars_at_most(text) + 3).sum()
}

/// At most what an effort record takes in the export besides its texts: its keys, numbers,
/// punctuation and the quotes of its texts. Measured once by writing the longest such record:
/// every number at its largest, every optional part present (a missing description, written
/// `null`, is longer than an empty one), and each status and summary source tried.
fn effort_frame_chars() -> u64 {
    static FRAME: OnceLock<u64> = OnceLock::new();
    *FRAME.get_or_init(|| {
        // Matches keep these lists complete: a new status or source fails to compile here.
        let statuses = [EffortStatus::Open, EffortStatus::Concluded].map(|status| match status {
            EffortStatus::Open | EffortStatus::Concluded => status,
        });
        let sources =
            [SummarySource::Provided, SummarySource::Extractive].map(|source| match source {
                SummarySource::Provided | SummarySource::Extractive => source,
            });
        let mut longest = 0;
        for status in statuses {
            for source in sources {
                let record = Effort {
                    id: String::new(),
                    name: String::new(),
                    description: None,
                    status,
                    opened_turn: u64::MAX,
                    concluded_turn: Some(u64::MAX),
                    concluded_seq: Some(u64::MAX),
                    summary: Some(Arc::new(Summary {
                        text: String::new(),
                        source,
                        rendered: String::new(),
                        tokens: u32::MAX,
                        keywords: vec![String::new()],
                        terms: vec![String::new()],
                    })),
                    messages: Vec::new(),
                    header: String::new(),
                    header_tokens: u32::MAX,
                    raw_tokens: u64::MAX,
                    last_referenced_turn: u64::MAX,
                    evicted: false,
                    evicted_over_budget: true,
                    log: LogState::Loaded,
                };
                longest = longest.max(serialized_chars(&record));
            }
        }
        longest
    })
}

/// At most what an effort's record (without its log) takes in the export, from the lengths of
/// its texts alone: far cheaper than writing it, which [`Session::stored_chars`] does only when
/// this bound comes near the limit. The record is taken apart field by field, so a new field
/// fails to compile here until it is counted.
pub(crate) fn effort_record_chars_at_most(effort: &Effort) -> u64 {
    let Effort {
        id,
        name,
        description,
        status: _,
        opened_turn: _,
        concluded_turn: _,
        concluded_seq: _,
        summary,
        messages: _,
        header,
        header_tokens: _,
        raw_tokens: _,
        last_referenced_turn: _,
        evicted: _,
        evicted_over_budget: _,
        log: _,
    } = effort;
    let summary_chars = summary.as_deref().map_or(0, |summary| {
        let Summary {
            text,
            source: _,
            rendered,
            tokens: _,
            keywords,
            terms,
        } = summary;
        text_chars_at_most(text)
            + text_chars_at_most(rendered)
            + texts_chars_at_most(keywords)
            + texts_chars_at_most(terms)
    });
    effort_frame_chars()
        + text_chars_at_most(id)
        + text_chars_at_most(name)
        + description.as_deref().map_or(0, text_chars_at_most)
        + text_chars_at_most(header)
        + summary_chars
        + 1
}

/// What a stored message takes in the export.
pub(crate) fn message_chars(message: &Message) -> u64 {
    message_text_chars(&message.content)
}

/// What a message with `text` takes in the export.
pub(crate) fn message_text_chars(text: &str) -> u64 {
    json_text_chars(text) + MESSAGE_RECORD_CHARS
}

/// What a turn's metrics point takes in the export.
pub(crate) fn turn_record_chars(point: &TurnMetrics) -> u64 {
    serialized_chars(point) + 1
}

/// What an attachment takes in the export (its references counted as they are now; later ones
/// are counted by [`Session::stored_chars`]).
pub(crate) fn attachment_chars(attachment: &SessionAttachment) -> u64 {
    serialized_chars(attachment) + 1
}

/// The characters of a text that does not need escaping, for messages about it.
fn js_length(text: &str) -> u64 {
    text.chars().map(char::len_utf16).sum::<usize>() as u64
}

/// A message's words for what a refusal is about.
pub(crate) fn describe_text(kind: &str, text: &str) -> String {
    format!(
        "{kind} of {} characters",
        crate::compaction::report::thousands(js_length(text))
    )
}

impl Session {
    /// How many characters this session stores, counted as its export writes them (an upper
    /// bound; an import accepts 64,000,000), with the message of a turn in progress. A session
    /// opened from a store counts the history it has not read from the count in its header,
    /// without reading it.
    pub fn stored_chars(&self) -> u64 {
        let efforts: u64 = self
            .efforts
            .all()
            .iter()
            .map(|effort| serialized_chars(&effort.clone_without_messages()) + 1)
            .sum();
        self.stored_chars_besides_efforts() + efforts
    }

    /// An upper bound of [`Session::stored_chars`] that does not write the effort records, only
    /// measures their texts ([`effort_record_chars_at_most`]). Writing every record on every
    /// check made `begin_turn` cost in proportion to the session's whole history (4.4 G of the
    /// 52 G instructions of the ShareGPT replay); with this bound the records are written only
    /// when a check comes near the limit.
    fn stored_chars_at_most(&self) -> u64 {
        let efforts: u64 = self
            .efforts
            .all()
            .iter()
            .map(effort_record_chars_at_most)
            .sum();
        self.stored_chars_besides_efforts() + efforts
    }

    /// What [`Session::stored_chars`] counts besides the effort records.
    fn stored_chars_besides_efforts(&self) -> u64 {
        let pending = self
            .pending_user_message()
            .map_or(0, |(text, _)| message_text_chars(text));
        let references: u64 = self
            .attachments
            .by_id()
            .values()
            .map(|stored| stored.attachment.references.len() as u64 * REFERENCE_CHARS)
            .sum();
        self.stored.chars
            + pending
            + references
            + serialized_chars(&self.state())
            + DOCUMENT_FRAME_CHARS
    }

    /// Refuses an addition of `adding` characters (as the export writes them) that would take
    /// the session past [`MAX_SESSION_STORED_CHARS`]; with `keep_room_for_answer`, room for the
    /// model's answer ([`ROOM_FOR_ANSWER_CHARS`]) must stay besides.
    pub(crate) fn check_room_to_store(
        &self,
        what: impl FnOnce() -> String,
        adding: u64,
        keep_room_for_answer: bool,
    ) -> Result<(), SessionFull> {
        let room = if keep_room_for_answer {
            ROOM_FOR_ANSWER_CHARS
        } else {
            0
        };
        let with_addition = |stored: u64| stored.saturating_add(adding).saturating_add(room);
        // The cheap bound decides whenever it fits, which is every check far from the limit;
        // the exact count decides the rest, so the outcome is the exact count's either way.
        let bound = self.stored_chars_at_most();
        debug_assert!(
            bound >= self.stored_chars(),
            "the bound {bound} is below the count {}",
            self.stored_chars()
        );
        if with_addition(bound) <= MAX_SESSION_STORED_CHARS {
            return Ok(());
        }
        let total = with_addition(self.stored_chars());
        if total > MAX_SESSION_STORED_CHARS {
            return Err(SessionFull {
                what: what(),
                total,
                room_for_answer: keep_room_for_answer,
            });
        }
        Ok(())
    }

    /// Checks that the turn in progress can end with `answer` without taking the session past
    /// [`MAX_SESSION_STORED_CHARS`]. `begin_turn` keeps room for an answer of the model's
    /// largest ([`ROOM_FOR_ANSWER_CHARS`]), so an answer from the turn engine always fits; a
    /// host that ends turns with text of its own (up to 16,000,000 characters) can check it
    /// here before [`Session::end_turn`], which makes the same check and refuses such an answer
    /// with the turn left open.
    ///
    /// # Errors
    /// [`SessionFull`] when it would not fit; the turn stays open (end it with a shorter
    /// answer, or abort it).
    pub fn room_for_answer(&self, answer: &str) -> Result<(), SessionFull> {
        // The answer, and the metrics point of the turn (a few hundred characters; counted at
        // the size of the answer's own record to stay an upper bound in practice).
        let adding = json_text_chars(answer) + MESSAGE_RECORD_CHARS * 8;
        self.check_room_to_store(|| describe_text("the answer", answer), adding, false)
    }

    /// Adds what a stored message, metrics point or attachment takes to the running count.
    pub(crate) fn count_stored(&mut self, chars: u64) {
        self.stored.chars = self.stored.chars.saturating_add(chars);
        self.stored.assumed = false;
    }

    /// The running count of everything loaded: exact for a session opened from a whole
    /// document.
    pub(crate) fn count_loaded_records(&self) -> u64 {
        let messages: u64 = self
            .efforts
            .all()
            .iter()
            .flat_map(|effort| &effort.messages)
            .chain(self.ambient.messages())
            .map(message_chars)
            .sum();
        let history: u64 = self.history.points().iter().map(turn_record_chars).sum();
        let attachments: u64 = self
            .attachments
            .by_id()
            .values()
            .map(attachment_chars)
            .sum();
        messages + history + attachments
    }

    /// Sets the running count of a session opened from a store: the header's count, or, for a
    /// header without one, at most [`RECORDED_FROM_CHARS`] (or what was read, if more).
    pub(crate) fn open_stored_size(&mut self, recorded: u64) {
        self.stored = if recorded > 0 {
            StoredSize {
                chars: recorded,
                assumed: false,
            }
        } else {
            StoredSize {
                chars: self.count_loaded_records().max(RECORDED_FROM_CHARS),
                assumed: true,
            }
        };
    }

    /// The count a stored header records: none (0, left out of the header) while it is below
    /// [`RECORDED_FROM_CHARS`] or still the assumed one it was opened with.
    pub(crate) fn recorded_stored_chars(&self) -> u64 {
        if self.stored.assumed || self.stored.chars < RECORDED_FROM_CHARS {
            0
        } else {
            self.stored.chars
        }
    }
}

/// Whether a header leaves its count out: see [`Session::recorded_stored_chars`].
pub(crate) fn is_unrecorded(chars: &u64) -> bool {
    *chars == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_string_is_counted_as_serde_json_writes_it_and_javascript_counts_it() {
        for text in [
            "",
            "plain words",
            "quote \" and backslash \\",
            "lines\nand\ttabs\r",
            "\u{1}\u{1f} control",
            "ünïcödé 🦀 crab",
        ] {
            let json = serde_json::to_string(text).unwrap();
            let js: u64 = json.chars().map(char::len_utf16).sum::<usize>() as u64;
            assert_eq!(json_text_chars(text), js, "{text:?}");
        }
    }

    /// Texts whose escapes take the most room for their bytes (control characters), the least
    /// (non-Latin letters), and everything between.
    const TEXTS: [&str; 7] = [
        "",
        "plain words",
        "\u{1}\u{2}\u{1f}",
        "quote \" backslash \\ line\n",
        "ünïcödé 🦀 crab",
        "日本語のテキスト",
        "\u{7f}\u{2028} edge",
    ];

    fn effort(seed: usize) -> Effort {
        let text = |k: usize| TEXTS[(seed + k) % TEXTS.len()].repeat(1 + (seed + k) % 3);
        let texts = |k: usize| (0..(seed + k) % 4).map(|j| text(k + j)).collect::<Vec<_>>();
        Effort {
            id: text(0),
            name: text(1),
            description: seed.is_multiple_of(2).then(|| text(2)),
            status: if seed.is_multiple_of(3) {
                EffortStatus::Open
            } else {
                EffortStatus::Concluded
            },
            opened_turn: seed as u64,
            concluded_turn: (!seed.is_multiple_of(3)).then_some(u64::MAX - seed as u64),
            concluded_seq: (!seed.is_multiple_of(5)).then_some(u64::MAX),
            summary: (!seed.is_multiple_of(3)).then(|| {
                Arc::new(Summary {
                    text: text(3),
                    source: if seed.is_multiple_of(2) {
                        SummarySource::Provided
                    } else {
                        SummarySource::Extractive
                    },
                    rendered: text(4),
                    tokens: u32::MAX,
                    keywords: texts(5),
                    terms: texts(6),
                })
            }),
            messages: Vec::new(),
            header: text(7),
            header_tokens: u32::MAX,
            raw_tokens: u64::MAX,
            last_referenced_turn: seed as u64 * 1_000_003,
            evicted: seed % 2 == 1,
            evicted_over_budget: seed % 4 == 1,
            log: LogState::Loaded,
        }
    }

    #[test]
    fn the_bound_of_an_effort_record_is_never_below_what_the_export_writes() {
        for seed in 0..400 {
            let effort = effort(seed);
            let written = serialized_chars(&effort) + 1;
            let bound = effort_record_chars_at_most(&effort);
            assert!(bound >= written, "{bound} < {written} for {effort:?}");
        }
    }

    #[test]
    fn the_bound_of_a_plain_record_stays_within_a_few_times_what_it_writes() {
        // A bound far above the record would send every check of a long session to the exact
        // count, which is what the bound exists to avoid.
        let effort = effort(4);
        let written = serialized_chars(&effort) + 1;
        assert!(effort_record_chars_at_most(&effort) < 8 * written);
    }
}
