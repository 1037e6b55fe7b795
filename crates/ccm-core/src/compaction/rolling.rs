//! The level-3 rolling summary: one text that stands in for the older working history, and a
//! deterministic extractive fallback that is never empty. The request that asks a model to
//! write it is the engine's (`ccm_engine::summary::rolling_summary_prompt`).
//!
//! "Rolling" means each new summary folds the previous one in: the input is the previous
//! summary (if any) plus the history that leaves the working set now, and the result covers the
//! union of both. The originals stay stored; [`RollingSummary::covers`] says which stored
//! messages the summary stands for, so they can be found and expanded again.
//!
//! Everything here is sans-IO: the host sends the engine's request, and
//! [`RollingSummary::from_llm`] records the answer (refusing an empty one, which must never
//! replace history).

use super::error::RollingSummaryError;
use crate::text::{clip_words, is_salient, split_sentences, words};
use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An inclusive range of stored message sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeqRange {
    /// The first sequence number.
    pub first: u64,
    /// The last sequence number (inclusive).
    pub last: u64,
}

impl SeqRange {
    /// The range between `a` and `b`, whichever order they come in.
    pub fn new(a: u64, b: u64) -> SeqRange {
        SeqRange {
            first: a.min(b),
            last: a.max(b),
        }
    }

    /// The range of one message.
    pub fn single(seq: u64) -> SeqRange {
        SeqRange {
            first: seq,
            last: seq,
        }
    }

    /// How many sequence numbers it spans.
    pub fn span(self) -> u64 {
        self.last - self.first + 1
    }

    /// Whether `seq` is in the range.
    pub fn contains(self, seq: u64) -> bool {
        (self.first..=self.last).contains(&seq)
    }
}

impl fmt::Display for SeqRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}–{}", self.first, self.last)
        }
    }
}

/// Sorts ranges and merges those that overlap or touch, so a coverage list stays short however
/// many compactions it went through.
///
/// # Examples
/// ```
/// use ccm_core::compaction::{merge_ranges, SeqRange};
/// let merged = merge_ranges([SeqRange::new(5, 9), SeqRange::new(1, 4), SeqRange::new(12, 12)]);
/// assert_eq!(merged, [SeqRange::new(1, 9), SeqRange::new(12, 12)]);
/// ```
pub fn merge_ranges(ranges: impl IntoIterator<Item = SeqRange>) -> Vec<SeqRange> {
    let mut sorted: Vec<SeqRange> = ranges.into_iter().collect();
    sorted.sort_unstable();
    let mut merged: Vec<SeqRange> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match merged.last_mut() {
            Some(last) if range.first <= last.last.saturating_add(1) => {
                last.last = last.last.max(range.last);
            }
            _ => merged.push(range),
        }
    }
    merged
}

/// The ranges as people read them: `messages 3–40, 52`.
pub fn describe_ranges(ranges: &[SeqRange]) -> String {
    let parts: Vec<String> = ranges.iter().map(ToString::to_string).collect();
    let total: u64 = ranges.iter().map(|r| r.span()).sum();
    let noun = if total == 1 { "message" } else { "messages" };
    format!("{noun} {}", parts.join(", "))
}

/// Who wrote a rolling summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollingSource {
    /// A model, asked by the engine's rolling summary request.
    Llm,
    /// The deterministic extractive fallback.
    Extractive,
}

/// One piece of history to be summarised: the text of a planner atom (an exchange, a message
/// or an effort turn) and the stored messages it holds. Give the text as the model would read
/// it, for example `USER: …\nASSISTANT: …`, so the summary can tell who said what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryText<'a> {
    /// The stored messages the text comes from.
    pub seqs: SeqRange,
    /// The text.
    pub text: &'a str,
}

/// Everything a rolling summary is made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollingInput<'a> {
    /// The text of the rolling summary being replaced, if there is one.
    pub previous_text: Option<&'a str>,
    /// What the previous summary covers.
    pub previous_covers: &'a [SeqRange],
    /// The history leaving the working set now, oldest first.
    pub history: Vec<HistoryText<'a>>,
}

impl<'a> RollingInput<'a> {
    /// The input read from an owned copy of the material (the previous summary's text and
    /// coverage, and the history as `(messages, text)` pairs): the planned compaction and the
    /// upgrade of an extractive summary both keep it that way, and both hand it out as this.
    pub(crate) fn borrowing(
        previous_text: Option<&'a str>,
        previous_covers: &'a [SeqRange],
        history: &'a [(SeqRange, String)],
    ) -> RollingInput<'a> {
        RollingInput {
            previous_text,
            previous_covers,
            history: history
                .iter()
                .map(|(seqs, text)| HistoryText { seqs: *seqs, text })
                .collect(),
        }
    }

    /// The stored messages the new summary stands for: the previous coverage plus the history.
    pub fn covers(&self) -> Vec<SeqRange> {
        merge_ranges(
            self.previous_covers
                .iter()
                .copied()
                .chain(self.history.iter().map(|h| h.seqs)),
        )
    }
}

/// A rolling summary that stands in for part of the working history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollingSummary {
    /// The summary text.
    pub text: String,
    /// The stored messages it stands for, sorted and merged.
    pub covers: Vec<SeqRange>,
    /// Who wrote it.
    pub source: RollingSource,
    /// The text placed in the context: a header naming what it covers, then the summary.
    pub rendered: String,
    /// Tokens of `rendered`, counted once when the summary is recorded.
    pub tokens: u32,
}

impl RollingSummary {
    /// Records a summary written by a model for `input`.
    ///
    /// # Errors
    /// [`RollingSummaryError::Empty`] when the text is empty after trimming (fall back to
    /// [`RollingSummary::extractive`]); [`RollingSummaryError::CoversNothing`] when the input
    /// has no history and no previous coverage.
    pub fn from_llm(
        text: &str,
        input: &RollingInput<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<RollingSummary, RollingSummaryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RollingSummaryError::Empty);
        }
        RollingSummary::record(text.to_string(), input, RollingSource::Llm, counter)
    }

    /// The deterministic extractive summary of `input`, within `max_words` words. Never empty.
    ///
    /// # Errors
    /// [`RollingSummaryError::CoversNothing`] when the input has no history and no previous
    /// coverage.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::compaction::{HistoryText, RollingInput, RollingSummary, SeqRange};
    /// use ccm_core::ApproximateCounter;
    /// let input = RollingInput {
    ///     history: vec![HistoryText {
    ///         seqs: SeqRange::new(1, 2),
    ///         text: "USER: We decided to use port 8443 for the gateway.\nASSISTANT: Noted.",
    ///     }],
    ///     ..RollingInput::default()
    /// };
    /// let summary = RollingSummary::extractive(&input, 150, &ApproximateCounter).unwrap();
    /// assert!(summary.text.contains("8443"));
    /// assert_eq!(summary.covers, [SeqRange::new(1, 2)]);
    /// ```
    ///
    /// The rendered summary also stays within [`rolling_budget_tokens`]`(max_words)`, the size
    /// the compaction planner reckons with: text dense with identifiers takes more than two
    /// tokens a word, so the word limit shrinks by a fifth until it fits (down to 20 words).
    pub fn extractive(
        input: &RollingInput<'_>,
        max_words: u32,
        counter: &dyn TokenCounter,
    ) -> Result<RollingSummary, RollingSummaryError> {
        let budget = rolling_budget_tokens(max_words);
        let mut words = max_words.max(20);
        loop {
            let text = extractive_text(input, words);
            let summary = RollingSummary::record(text, input, RollingSource::Extractive, counter)?;
            if u64::from(summary.tokens) <= budget || words == 20 {
                return Ok(summary);
            }
            words = (words * 4 / 5).max(20);
        }
    }

    fn record(
        text: String,
        input: &RollingInput<'_>,
        source: RollingSource,
        counter: &dyn TokenCounter,
    ) -> Result<RollingSummary, RollingSummaryError> {
        let covers = input.covers();
        if covers.is_empty() {
            return Err(RollingSummaryError::CoversNothing);
        }
        let rendered = render(&text, &covers, source);
        let tokens = counter.count(&rendered);
        Ok(RollingSummary {
            text,
            covers,
            source,
            rendered,
            tokens,
        })
    }

    /// Whether the summary stands for stored message `seq`.
    pub fn covers_seq(&self, seq: u64) -> bool {
        self.covers.iter().any(|r| r.contains(seq))
    }
}

/// The token budget of a rolling summary of `max_words` words: two tokens a word (identifiers
/// and numbers often take more, which the extractive fallback makes up for by using fewer
/// words) plus the header. The compaction planner projects with it; the extractive fallback
/// keeps to it.
pub fn rolling_budget_tokens(max_words: u32) -> u64 {
    u64::from(max_words) * 2 + 40
}

/// The context text of a rolling summary: a header that says what it covers, that the
/// originals are stored, and (for the fallback) that it is extractive; then the text.
pub fn render(text: &str, covers: &[SeqRange], source: RollingSource) -> String {
    let how = match source {
        RollingSource::Llm => "",
        RollingSource::Extractive => ", extractive",
    };
    format!(
        "[Summary of earlier conversation ({}{how}; the original messages are stored)]\n{text}",
        describe_ranges(covers)
    )
}

/// Words that mark a decision, a cause or a next step: sentences with them are worth keeping.
const DECISION_WORDS: &[&str] = &[
    "agreed", "because", "bug", "cause", "caused", "changed", "chose", "decided", "decision",
    "error", "fix", "fixed", "must", "next", "plan", "root", "should", "switched", "todo",
];

/// A sentence's value for the summary: how many frequent topic words it carries (normalised
/// by length so a long sentence cannot win by size alone), plus bonuses for identifiers,
/// decisions, questions and sentences that already survived a previous summary. The flag says
/// whether the sentence is *substantive*: it carries one of those signals or a topic word
/// that occurs more than once. Small talk ("Nice weather today.") is not, and is kept only
/// when nothing substantive was said at all.
fn sentence_score(
    sentence: &str,
    frequency: &BTreeMap<String, u32>,
    from_previous: bool,
) -> (u64, bool) {
    let sentence = without_role_label(sentence);
    let raw_words: Vec<&str> = sentence.split_whitespace().collect();
    let normalised: BTreeSet<String> = words(sentence).filter(|w| is_salient(w)).collect();
    if normalised.is_empty() {
        return (0, false);
    }
    let topic: u64 = normalised.iter().map(|w| u64::from(frequency[w])).sum();
    let recurring = normalised.iter().any(|w| frequency[w] > 1);
    let identifiers = raw_words
        .iter()
        .filter(|w| looks_like_identifier(w))
        .count() as u64;
    let decisions = normalised
        .iter()
        .filter(|w| DECISION_WORDS.binary_search(&w.as_str()).is_ok())
        .count() as u64;
    let question = u64::from(sentence.trim_end().ends_with('?'));
    let length = raw_words.len() as u64;
    let mut score = topic * 100 / (length + 5);
    score += identifiers * 40 + decisions * 30 + question * 30;
    if from_previous {
        score += 60;
    }
    let substantive =
        recurring || identifiers > 0 || decisions > 0 || question > 0 || from_previous;
    (score, substantive)
}

/// The sentence without a leading `USER:` / `ASSISTANT:` / `SYSTEM:` label. Labels help the
/// reader of the summary, but as words they occur in every other sentence and would make
/// small talk look as topical as anything else.
fn without_role_label(sentence: &str) -> &str {
    for label in ["USER:", "ASSISTANT:", "SYSTEM:"] {
        if let Some(head) = sentence.get(..label.len()) {
            if head.eq_ignore_ascii_case(label) {
                return sentence[label.len()..].trim_start();
            }
        }
    }
    sentence
}

/// Whether a word carries an identifier: a digit, an inner `_ . / : # -` or `::`, backticks,
/// or an inner capital (camelCase).
fn looks_like_identifier(word: &str) -> bool {
    let core = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '`');
    if core.chars().any(|c| c.is_ascii_digit()) || core.contains('`') {
        return true;
    }
    let inner: Vec<char> = core.chars().collect();
    inner.len() > 2
        && inner[1..inner.len() - 1]
            .iter()
            .any(|&c| matches!(c, '_' | '.' | '/' | ':' | '#' | '-') || c.is_uppercase())
}

/// The extractive rolling summary's text: the most valuable sentences of the previous summary
/// and the history, in their original order, within `max_words` words (at least 20). It is
/// never empty: history without a single topic word gets a sentence that says so.
pub fn extractive_text(input: &RollingInput<'_>, max_words: u32) -> String {
    let budget = max_words.max(20) as usize;
    // (sentence, from the previous summary)
    let mut sentences: Vec<(&str, bool)> = Vec::new();
    if let Some(previous) = input.previous_text {
        sentences.extend(split_sentences(previous).into_iter().map(|s| (s, true)));
    }
    for piece in &input.history {
        sentences.extend(split_sentences(piece.text).into_iter().map(|s| (s, false)));
    }
    let mut frequency: BTreeMap<String, u32> = BTreeMap::new();
    for (sentence, _) in &sentences {
        for word in words(without_role_label(sentence)).filter(|w| is_salient(w)) {
            *frequency.entry(word).or_insert(0) += 1;
        }
    }
    let rated: Vec<(u64, bool, usize)> = sentences
        .iter()
        .enumerate()
        .map(|(i, (s, previous))| {
            let (score, substantive) = sentence_score(s, &frequency, *previous);
            (score, substantive, i)
        })
        .filter(|(score, _, _)| *score > 0)
        .collect();
    let any_substantive = rated.iter().any(|(_, substantive, _)| *substantive);
    let mut scored: Vec<(u64, usize)> = rated
        .into_iter()
        .filter(|(_, substantive, _)| *substantive || !any_substantive)
        .map(|(score, _, i)| (score, i))
        .collect();
    // Highest score first; the earlier sentence wins a tie so the result is deterministic.
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0;
    for (_, index) in scored {
        let length = sentences[index].0.split_whitespace().count();
        if used > 0 && used + length > budget {
            continue;
        }
        used += length.min(budget);
        chosen.push(index);
        if used >= budget {
            break;
        }
    }
    chosen.sort_unstable();
    let body: Vec<String> = chosen
        .iter()
        .map(|&i| clip_words(sentences[i].0, budget))
        .collect();
    if body.is_empty() {
        let messages: u64 = input.covers().iter().map(|r| r.span()).sum();
        format!(
            "{} earlier {} without summarisable content (see the stored originals).",
            messages,
            if messages == 1 { "message" } else { "messages" }
        )
    } else {
        body.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_words_are_sorted_for_binary_search() {
        assert!(DECISION_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn identifiers_are_recognised() {
        for word in [
            "v1.2.3",
            "auth_token",
            "src/main.rs",
            "`cargo`",
            "getUser",
            "E401",
            "a::b",
        ] {
            assert!(looks_like_identifier(word), "{word}");
        }
        for word in ["hello", "Hello", "world.", "(see)"] {
            assert!(!looks_like_identifier(word), "{word}");
        }
    }
}
