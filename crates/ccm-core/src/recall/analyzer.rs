//! The analyzer of full-text recall: how a stored text and a query become index terms.
//!
//! Both sides go through the same steps, so a question finds a message when they share
//! content words in any form:
//!
//! 1. **Words** are maximal runs of letters and digits (any script). An apostrophe between
//!    letters stays inside the word for the next step; hyphens and slashes join the parts of a
//!    compound (`de-stress`, `e-mail`, `covid-19`, `and/or`).
//! 2. **Normalisation**: lowercase; a possessive `'s` is dropped (`Caroline's` → `caroline`);
//!    contractions that are stopwords (`don't`) go, other apostrophes are removed (`o'clock`
//!    → `oclock`).
//! 3. **Stopwords** (the specification's list in `ccm-text`, the same words reference
//!    detection ignores) and single letters are dropped; numbers are kept whole, one digit
//!    included (`4 years ago`, `401`, `2023`), because a date or an error code is often the
//!    one precise word of a question.
//! 4. **Stemming** with the Snowball English stemmer (`painting`, `painted`, `paints` →
//!    `paint`) for words of letters; words with digits are kept as they are.
//! 5. **Compounds** give their parts and the joined word (`de-stress` → `de`, `stress`,
//!    `destress`), so `destress` and `de-stress` find each other.
//! 6. **Scripts written without spaces** (Chinese, Japanese kana) give overlapping pairs of
//!    characters, the usual unit of lexical search in those scripts, since one run of them is
//!    a whole phrase.
//!
//! Names and every other capitalised word are ordinary words here: they are rare in a
//! conversation, so BM25's inverse document frequency already makes them count.

use crate::text::is_stopword;
use rust_stemmers::{Algorithm, Stemmer};
use std::sync::OnceLock;

/// The longest word that is indexed, in characters. Longer runs are hashes, encoded data or
/// pasted noise: no question repeats them, and indexing them would only grow the dictionary.
const MAX_WORD_CHARS: usize = 40;

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Whether a character belongs to a script written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B and later
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '/' | '\u{2010}' | '\u{2011}')
}

/// Appends the index terms of `text` to `out`, in order, repeats kept (their count is the term
/// frequency).
pub fn analyze_into(text: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut start = 0;
    while start < chars.len() {
        if !chars[start].is_alphanumeric() {
            start += 1;
            continue;
        }
        // A compound: words joined by hyphens or slashes, each an alphanumeric run with
        // apostrophes between letters.
        let mut parts: Vec<String> = Vec::new();
        let mut position = start;
        loop {
            let word_start = position;
            while position < chars.len()
                && (chars[position].is_alphanumeric()
                    || (is_apostrophe(chars[position])
                        && position > word_start
                        && chars.get(position + 1).is_some_and(|c| c.is_alphabetic())))
            {
                position += 1;
            }
            parts.push(chars[word_start..position].iter().collect());
            let joined = position + 1 < chars.len()
                && is_joiner(chars[position])
                && chars[position + 1].is_alphanumeric();
            if !joined {
                break;
            }
            position += 1;
        }
        start = position;
        emit_compound(&parts, out);
    }
}

/// The index terms of `text`, in order, repeats kept.
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze_into(text, &mut out);
    out
}

fn emit_compound(parts: &[String], out: &mut Vec<String>) {
    let mut normalised: Vec<String> = Vec::with_capacity(parts.len());
    for part in parts {
        if let Some(word) = normalise(part) {
            emit_word(&word, out);
            normalised.push(word);
        }
    }
    if parts.len() > 1 {
        // The joined form of the whole compound (`de-stress` → `destress`), only where every
        // part is a word of its own: `state-of-the-art` is not joined around its stopwords.
        if normalised.len() == parts.len() && !normalised.iter().any(|w| is_stopword(w)) {
            let joined: String = normalised.concat();
            if joined.chars().count() <= MAX_WORD_CHARS {
                emit_word(&joined, out);
            }
        }
    }
}

/// Lowercases a word and resolves its apostrophes; `None` for a stopword contraction.
fn normalise(raw: &str) -> Option<String> {
    let mut word = raw.to_lowercase().replace('\u{2019}', "'");
    if let Some(stem) = word.strip_suffix("'s") {
        word = stem.to_string();
    }
    if word.contains('\'') {
        if is_stopword(&word) {
            return None;
        }
        word.retain(|c| c != '\'');
    }
    (!word.is_empty()).then_some(word)
}

fn emit_word(word: &str, out: &mut Vec<String>) {
    if word.chars().any(is_unspaced) {
        emit_unspaced(word, out);
        return;
    }
    let length = word.chars().count();
    if length > MAX_WORD_CHARS || is_stopword(word) {
        return;
    }
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    if length < 2 && !has_digit {
        return;
    }
    if has_digit {
        out.push(word.to_string());
    } else {
        out.push(stemmer().stem(word).into_owned());
    }
}

/// Overlapping character pairs of a run in a script without spaces; the letters and digits
/// around it form words of their own.
fn emit_unspaced(word: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = word.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        if is_unspaced(chars[index]) {
            let run_start = index;
            while index < chars.len() && is_unspaced(chars[index]) {
                index += 1;
            }
            let run = &chars[run_start..index];
            if run.len() == 1 {
                out.push(run[0].to_string());
            }
            for pair in run.windows(2) {
                out.push(pair.iter().collect());
            }
        } else {
            let run_start = index;
            while index < chars.len() && !is_unspaced(chars[index]) {
                index += 1;
            }
            let rest: String = chars[run_start..index].iter().collect();
            emit_word(&rest, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::analyze;

    #[test]
    fn words_are_stemmed_and_stopwords_dropped() {
        assert_eq!(
            analyze("What has Melanie painted? She paints horses."),
            ["melani", "paint", "paint", "hors"]
        );
    }

    #[test]
    fn possessives_contractions_and_numbers() {
        assert_eq!(
            analyze("Caroline's friends of 4 years don't know; it's 5 o'clock, error 401."),
            ["carolin", "friend", "4", "year", "know", "5", "oclock", "error", "401"]
        );
    }

    #[test]
    fn compounds_give_their_parts_and_the_joined_word() {
        assert_eq!(
            analyze("I run to de-stress"),
            ["run", "de", "stress", "destress"]
        );
        assert_eq!(analyze("covid-19"), ["covid", "19", "covid19"]);
        // A compound around a stopword is not joined.
        assert_eq!(analyze("state-of-the-art"), ["state", "art"]);
    }

    #[test]
    fn unspaced_scripts_give_character_pairs() {
        assert_eq!(analyze("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(analyze("猫"), ["猫"]);
    }

    #[test]
    fn long_runs_are_not_indexed() {
        let hash = "a".repeat(41);
        assert!(analyze(&hash).is_empty());
    }
}
