//! Attachments: files and pasted documents a person adds to a message.
//!
//! Each attachment is stored in full, counted once, summarised once, and shown in the context
//! in one of two modes: **full** (its whole text) or **compressed** (its summary, with a header
//! that says the full text is stored). Compaction only switches the mode; the full text is
//! never dropped, so expanding a compressed attachment gives back the original bytes.
//!
//! An attachment is *referenced* by a message that names it (its id or its name) or shares at
//! least `min_overlap` keywords with its summary. It is *stale* when no message in the last
//! `stale_after` messages referenced it; level 1 compresses stale attachments.

use super::error::AttachmentError;
use crate::model::SummarySource;
use crate::text::{self, PreparedText};
use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};

/// Where an attachment came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A file, with its file name as the attachment's name.
    File,
    /// Text pasted into the chat, with a name the host chose (for example "pasted text 3").
    PastedText,
}

impl AttachmentKind {
    /// How the kind reads in a context header (`file`, `pasted text`).
    pub fn label(self) -> &'static str {
        match self {
            AttachmentKind::File => "file",
            AttachmentKind::PastedText => "pasted text",
        }
    }
}

/// How an attachment appears in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentMode {
    /// The whole text.
    Full,
    /// The summary, with a header saying the full text is stored.
    Compressed,
}

/// What [`Attachment::new`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAttachment<'a> {
    /// A unique id chosen by the host (the core has no randomness), for example `att-3`.
    pub id: &'a str,
    /// The file name or a label for pasted text.
    pub name: &'a str,
    /// File or pasted text.
    pub kind: AttachmentKind,
    /// The full text, stored exactly as given.
    pub text: &'a str,
    /// A summary written by the person or a model; `None` uses the extractive summary.
    pub summary: Option<&'a str>,
    /// The message index (the caller's message counter) of the message it was attached to.
    /// Attaching counts as the first reference.
    pub attached_at: u64,
}

/// A stored attachment: full text, summary, both token counts, mode and reference history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The host's id.
    pub id: String,
    /// The file name or label.
    pub name: String,
    /// File or pasted text.
    pub kind: AttachmentKind,
    /// The full text, exactly as attached. Never changed or dropped.
    pub full_text: String,
    /// The summary that stands in for the text in compressed mode.
    pub summary: String,
    /// Who wrote the summary.
    pub summary_source: SummarySource,
    /// Salient keywords of the summary, sorted: what a message must share to reference it.
    pub keywords: Vec<String>,
    /// Tokens of the full-mode context text (header and full text), counted once.
    pub full_tokens: u32,
    /// Tokens of the compressed-mode context text (header and summary), counted once.
    pub compressed_tokens: u32,
    /// The current mode.
    pub mode: AttachmentMode,
    /// Message index of the message it was attached to.
    pub attached_at: u64,
    /// Message indices of every reference after attaching, ascending and unique.
    pub references: Vec<u64>,
}

impl Attachment {
    /// Stores an attachment in full mode, counting both context texts once with `counter`.
    ///
    /// # Errors
    /// [`AttachmentError`] for an empty id or name, or a provided summary that is empty.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::compaction::{Attachment, AttachmentKind, AttachmentMode, NewAttachment};
    /// use ccm_core::ApproximateCounter;
    /// let text = "The gateway listens on port 8443. Certificates rotate every 30 days.";
    /// let mut attachment = Attachment::new(
    ///     NewAttachment { id: "att-1", name: "gateway.md", kind: AttachmentKind::File, text, summary: None, attached_at: 4 },
    ///     &ApproximateCounter,
    /// ).unwrap();
    /// let original = attachment.context_text();
    /// attachment.compress();
    /// assert!(attachment.context_text().starts_with("[Attachment: gateway.md (file, id att-1), compressed"));
    /// attachment.expand();
    /// assert_eq!(attachment.context_text(), original);
    /// assert_eq!(attachment.full_text, text);
    /// ```
    pub fn new(
        spec: NewAttachment<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Attachment, AttachmentError> {
        let id = spec.id.trim();
        if id.is_empty() {
            return Err(AttachmentError::EmptyId);
        }
        let name = spec.name.trim();
        if name.is_empty() {
            return Err(AttachmentError::EmptyName { id: id.to_string() });
        }
        let (summary, summary_source) = match spec.summary {
            Some(given) if given.trim().is_empty() => {
                return Err(AttachmentError::EmptySummary { id: id.to_string() })
            }
            Some(given) => (given.trim().to_string(), SummarySource::Provided),
            None => (
                extractive_attachment_summary(name, spec.text),
                SummarySource::Extractive,
            ),
        };
        let mut attachment = Attachment {
            id: id.to_string(),
            name: name.to_string(),
            kind: spec.kind,
            full_text: spec.text.to_string(),
            keywords: text::extract_keywords(&summary),
            summary,
            summary_source,
            full_tokens: 0,
            compressed_tokens: 0,
            mode: AttachmentMode::Full,
            attached_at: spec.attached_at,
            references: Vec::new(),
        };
        attachment.recount(counter);
        Ok(attachment)
    }

    /// Counts both context texts again, for example after importing a session counted with
    /// another tokenizer. Full mode's count is taken first because the compressed header
    /// quotes it.
    pub fn recount(&mut self, counter: &dyn TokenCounter) {
        self.full_tokens = counter.count(&self.context_text_for(AttachmentMode::Full));
        self.compressed_tokens = counter.count(&self.context_text_for(AttachmentMode::Compressed));
    }

    /// The context text in the current mode.
    pub fn context_text(&self) -> String {
        self.context_text_for(self.mode)
    }

    /// The context text in `mode`. Full mode wraps the text, byte for byte, between a header
    /// and an end line; compressed mode shows the summary under a header that says the full
    /// text is stored.
    pub fn context_text_for(&self, mode: AttachmentMode) -> String {
        let head = format!(
            "[Attachment: {} ({}, id {})",
            self.name,
            self.kind.label(),
            self.id
        );
        match mode {
            AttachmentMode::Full => format!(
                "{head}]\n{}\n[End of attachment: {}]",
                self.full_text, self.name
            ),
            AttachmentMode::Compressed => format!(
                "{head}, compressed to a summary; the full text ({} tokens) is stored]\n{}",
                self.full_tokens, self.summary
            ),
        }
    }

    /// Tokens the attachment adds to the context in the current mode.
    pub fn tokens(&self) -> u32 {
        self.tokens_for(self.mode)
    }

    /// Tokens it adds in `mode`.
    pub fn tokens_for(&self, mode: AttachmentMode) -> u32 {
        match mode {
            AttachmentMode::Full => self.full_tokens,
            AttachmentMode::Compressed => self.compressed_tokens,
        }
    }

    /// Switches to compressed mode. Returns whether the mode changed.
    pub fn compress(&mut self) -> bool {
        self.set_mode(AttachmentMode::Compressed)
    }

    /// Switches back to full mode. Returns whether the mode changed.
    pub fn expand(&mut self) -> bool {
        self.set_mode(AttachmentMode::Full)
    }

    /// Sets the mode; only the mode changes, never the text. Returns whether it changed.
    pub fn set_mode(&mut self, mode: AttachmentMode) -> bool {
        let changed = self.mode != mode;
        self.mode = mode;
        changed
    }

    /// The message index of the latest reference (attaching counts).
    pub fn last_referenced(&self) -> u64 {
        self.references
            .last()
            .copied()
            .unwrap_or(self.attached_at)
            .max(self.attached_at)
    }

    /// Messages since the latest reference, seen from message `current` (0 when `current`
    /// itself referenced it).
    pub fn messages_since_reference(&self, current: u64) -> u64 {
        current.saturating_sub(self.last_referenced())
    }

    /// Whether no message in the last `stale_after` messages, up to `current`, referenced it.
    pub fn is_stale(&self, current: u64, stale_after: u32) -> bool {
        self.messages_since_reference(current) >= u64::from(stale_after)
    }

    /// Whether `message` references the attachment: it names the id or the name, or shares at
    /// least `min_overlap` keywords with the summary.
    pub fn is_referenced_by(&self, message: &PreparedText, min_overlap: usize) -> bool {
        // Names and ids shorter than three characters would match inside ordinary words.
        let mentions = |label: &str| {
            let lower = label.to_lowercase();
            lower.chars().count() >= 3 && message.mentions_id(&lower)
        };
        mentions(&self.id)
            || mentions(&self.name)
            || (min_overlap > 0 && message.keyword_overlap(&self.keywords) >= min_overlap)
    }

    /// Adds message `message` to the reference history (kept ascending and unique).
    pub fn record_reference(&mut self, message: u64) {
        if let Err(position) = self.references.binary_search(&message) {
            self.references.insert(position, message);
        }
    }
}

/// Checks `text` (message `message`) against every attachment, records the references, and
/// returns the ids referenced, in the order given.
pub fn detect_references(
    attachments: &mut [Attachment],
    text: &str,
    message: u64,
    min_overlap: usize,
) -> Vec<String> {
    let prepared = PreparedText::new(text);
    let mut referenced = Vec::new();
    for attachment in attachments.iter_mut() {
        if attachment.is_referenced_by(&prepared, min_overlap) {
            attachment.record_reference(message);
            referenced.push(attachment.id.clone());
        }
    }
    referenced
}

/// Ids of the attachments in full mode that no message in the last `stale_after` messages (up
/// to `current`) referenced: what level 1 compresses.
pub fn stale_attachments(attachments: &[Attachment], current: u64, stale_after: u32) -> Vec<&str> {
    attachments
        .iter()
        .filter(|a| a.mode == AttachmentMode::Full && a.is_stale(current, stale_after))
        .map(|a| a.id.as_str())
        .collect()
}

/// The extractive summary of an attachment: the sentences that carry its most frequent topic
/// words, under its name, plus its size, so a compressed attachment still says what it is.
/// Never empty, also for text without a single topic word (code, tables of numbers).
pub fn extractive_attachment_summary(name: &str, full_text: &str) -> String {
    let lines = full_text.lines().count();
    let words = full_text.split_whitespace().count();
    let size = format!(
        "({lines} {}, {words} {})",
        if lines == 1 { "line" } else { "lines" },
        if words == 1 { "word" } else { "words" }
    );
    // The crate's extractive summary scores sentences by salient words; without one it would
    // describe an effort, so that case gets a sentence of its own.
    if text::words(full_text).any(|w| text::is_salient(&w)) {
        format!("{} {size}", text::extractive_summary(name, &[full_text]))
    } else {
        format!("{name}: no summarisable prose {size}")
    }
}

/// An attachment kept with the session: its content and where its message lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAttachment {
    /// The attachment (full text, summary, both counts, mode, references).
    pub attachment: Attachment,
    /// Sequence number of the user message it came with.
    pub message_seq: u64,
    /// The turn of that message.
    pub message_turn: u64,
    /// The log the message was stored in; `None` while its turn is in progress.
    pub log: Option<crate::model::LogRef>,
}
