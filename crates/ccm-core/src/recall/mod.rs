//! Full-text recall over everything a session stored: every message of every effort log and of
//! the ambient log, and every attachment's text, findable by what was said, not only by the
//! summaries that stand for it.
//!
//! - `analyzer` — how a text becomes index terms (words, stemming, numbers, compounds);
//! - `index` — the inverted index and its BM25 ranking of each message read in context;
//! - `evidence` — what of a ranking fits a token budget: hits with their neighbours, as
//!   excerpts grouped by where they are stored.
//!
//! The session keeps one index, updated with every stored message
//! (`components::recall`); `search_efforts` shows the best excerpts verbatim, the `recall`
//! tool brings them into the context until they decay, and in Light and Heavy modes the
//! planner brings in the excerpts that best match the user's message on its own.

pub mod analyzer;
pub mod evidence;
pub mod index;

pub use evidence::{Excerpt, Selection};
pub use index::{Doc, NewDoc, Query, RecallIndex, Scored, Source, NO_DOC};

/// The words of an attachment's text per passage: an attachment is indexed as passages of
/// about this many words, so a long document is found by the part that matches, and a hit
/// shows that part rather than the whole text.
pub const PASSAGE_WORDS: usize = 120;

/// The passages of an attachment's text, as byte ranges: runs of about [`PASSAGE_WORDS`]
/// words, cut at the end of a line or a sentence when one is near. Deterministic for a text.
pub fn passages(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut words = 0;
    let mut in_word = false;
    let mut cut_after: Option<usize> = None;
    for (at, c) in text.char_indices() {
        let end = at + c.len_utf8();
        if c.is_whitespace() {
            in_word = false;
            if c == '\n' && words >= PASSAGE_WORDS * 3 / 4 {
                cut_after = Some(end);
            }
        } else {
            if !in_word {
                words += 1;
            }
            in_word = true;
            if matches!(c, '.' | '!' | '?') && words >= PASSAGE_WORDS * 3 / 4 {
                cut_after = Some(end);
            }
        }
        let cut = cut_after
            .filter(|_| words >= PASSAGE_WORDS * 3 / 4)
            .or_else(|| (words > PASSAGE_WORDS * 5 / 4 && c.is_whitespace()).then_some(end));
        if let Some(cut) = cut {
            if text[start..cut].trim().is_empty() {
                continue;
            }
            ranges.push(start..cut);
            start = cut;
            words = 0;
            cut_after = None;
        }
    }
    if !text[start..].trim().is_empty() {
        ranges.push(start..text.len());
    } else if let Some(last) = ranges.last_mut() {
        // Trailing whitespace belongs to the last passage, so the passages cover the text.
        last.end = text.len();
    }
    ranges
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The civil date (year, month 1–12, day) of a number of days since 1970-01-01, in the
/// proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// The day a message was said, as a recalled excerpt shows it: `8 May 2023` (UTC), or `None`
/// for 0, the time of messages whose host passed none. A date, not a timestamp: it is what a
/// question about when something happened needs, and it costs a model a third of the tokens.
pub fn format_date(at_ms: u64) -> Option<String> {
    if at_ms == 0 {
        return None;
    }
    let days = (at_ms / 86_400_000) as i64;
    let (year, month, day) = civil_from_days(days);
    Some(format!("{day} {} {year}", MONTHS[month as usize - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_dates() {
        assert_eq!(format_date(0), None);
        assert_eq!(format_date(1_000).as_deref(), Some("1 January 1970"));
        // 2023-05-08 13:56 UTC
        assert_eq!(
            format_date(1_683_554_160_000).as_deref(),
            Some("8 May 2023")
        );
        // A leap day, and the last minute of a year.
        assert_eq!(
            format_date(1_709_208_000_000).as_deref(),
            Some("29 February 2024")
        );
        assert_eq!(
            format_date(1_704_067_199_000).as_deref(),
            Some("31 December 2023")
        );
    }

    #[test]
    fn passages_cover_the_text_without_overlap() {
        let sentence = "The quick brown fox jumps over the lazy dog. ";
        let text = sentence.repeat(100);
        let ranges = passages(&text);
        assert!(ranges.len() > 3);
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges.last().map(|r| r.end), Some(text.len()));
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for range in &ranges {
            let words = text[range.clone()].split_whitespace().count();
            assert!(words <= PASSAGE_WORDS * 5 / 4 + 1, "{words}");
        }
        assert_eq!(
            passages("short note"),
            vec![std::ops::Range { start: 0, end: 10 }]
        );
        assert!(passages("  ").is_empty());
    }
}
