//! The common-scripts part of a vocabulary: the tokens that text written in Latin scripts,
//! punctuation, symbols and emoji can ever be made of.
//!
//! A first visit of the app downloads the rank table before a message can be counted, and
//! `o200k_base` is large because it covers many scripts. Most of its tokens that are not
//! Latin belong to scripts (CJK, Cyrillic, Arabic, Indic, …) that a given person either writes
//! or does not. So the app first loads a table with only the tokens that can occur in text of
//! the common scripts (about 71% of the tokens), and fetches the whole table the moment it is
//! asked to count anything else.
//!
//! Why the counts stay exact: byte-pair merging only ever looks up byte strings that are
//! substrings of the piece being encoded. Every substring of the UTF-8 bytes of a text made of
//! common-script characters is a byte string that [`token_in_common_scripts`] accepts, so the
//! common-scripts table answers every lookup exactly as the whole table would, with the same
//! ranks. A text with any other character is not covered ([`text_in_common_scripts`]), and a
//! host must load the whole table before counting it.

use std::collections::HashSet;
use std::sync::OnceLock;

/// The suffix of a common-scripts table's name after its encoding's name
/// (`o200k_base+common-scripts`).
pub const COMMON_SCRIPTS_SUFFIX: &str = "+common-scripts";

/// Whether `c` is in the common scripts: Latin (with its extensions, IPA and combining
/// diacritics), general punctuation, currency and letter-like symbols, arrows, mathematical and
/// technical symbols, box drawing, shapes, dingbats, variation selectors, the replacement
/// character and emoji.
pub fn is_common_script(c: char) -> bool {
    matches!(
        u32::from(c),
        0x0000..=0x036F
            | 0x1E00..=0x1EFF
            | 0x2000..=0x2BFF
            | 0xFE00..=0xFE0F
            | 0xFFFD
            | 0x1F000..=0x1FAFF
    )
}

/// Whether every character of `text` is in the common scripts, so that a common-scripts table
/// counts it exactly.
pub fn text_in_common_scripts(text: &str) -> bool {
    // Prose and code are mostly ASCII, which needs no decoding.
    text.is_ascii() || text.chars().all(is_common_script)
}

/// The byte strings that stand inside one character's UTF-8 encoding, for the common scripts:
/// every proper prefix, every proper suffix, and every substring.
struct Fragments {
    prefixes: HashSet<Vec<u8>>,
    suffixes: HashSet<Vec<u8>>,
    inside: HashSet<Vec<u8>>,
}

fn fragments() -> &'static Fragments {
    static FRAGMENTS: OnceLock<Fragments> = OnceLock::new();
    FRAGMENTS.get_or_init(|| {
        let mut fragments = Fragments {
            prefixes: HashSet::new(),
            suffixes: HashSet::new(),
            inside: HashSet::new(),
        };
        let mut buffer = [0u8; 4];
        for c in (0x80..=0x1FAFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_common_script(c))
        {
            let bytes = c.encode_utf8(&mut buffer).as_bytes();
            for start in 0..bytes.len() {
                for end in start + 1..=bytes.len() {
                    fragments.inside.insert(bytes[start..end].to_vec());
                }
            }
            for cut in 1..bytes.len() {
                fragments.prefixes.insert(bytes[..cut].to_vec());
                fragments.suffixes.insert(bytes[cut..].to_vec());
            }
        }
        fragments
    })
}

/// Whether `token` can be a substring of the UTF-8 bytes of some text in the common scripts:
/// the end of one character's encoding, then whole characters, then the start of another.
/// Used to write the common-scripts table and to test it; hosts never need it at run time.
pub fn token_in_common_scripts(token: &[u8]) -> bool {
    let fragments = fragments();
    if token.is_empty() || fragments.inside.contains(token) {
        return true;
    }
    let continuation = |b: u8| b & 0xC0 == 0x80;
    let tail = token
        .iter()
        .take(3)
        .take_while(|&&b| continuation(b))
        .count();
    if tail > 0 && !fragments.suffixes.contains(&token[..tail]) {
        return false;
    }
    let mut at = tail;
    while at < token.len() {
        let lead = token[at];
        let width = match lead {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return false,
        };
        if at + width > token.len() {
            return fragments.prefixes.contains(&token[at..]);
        }
        match std::str::from_utf8(&token[at..at + width]) {
            Ok(text) if text.chars().all(is_common_script) => at += width,
            _ => return false,
        }
    }
    true
}

/// The common-scripts part of a vocabulary given in rank order: every token that
/// [`token_in_common_scripts`] accepts keeps its rank, every other one becomes an empty token
/// (which nothing matches). The single bytes stay whatever they are, so that a host that counts
/// an uncovered text with this part by mistake still gets a count (too high), never a failure.
pub fn common_scripts_part(tokens: &[Vec<u8>]) -> Vec<Vec<u8>> {
    tokens
        .iter()
        .map(|token| {
            if token.len() == 1 || token_in_common_scripts(token) {
                token.clone()
            } else {
                Vec::new()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_scripts_are_latin_punctuation_symbols_and_emoji() {
        for c in [
            'a', 'é', 'ß', 'ł', 'ǆ', 'ạ', '—', '’', '…', '€', '→', '∑', '█', '🙂', '\u{FE0F}',
        ] {
            assert!(is_common_script(c), "{c:?} should be common");
        }
        for c in ['ж', 'α', '中', 'あ', '한', 'ع', 'ש', 'क', 'ไ'] {
            assert!(!is_common_script(c), "{c:?} should not be common");
        }
        assert!(text_in_common_scripts("Grüße — naïve café 🙂"));
        assert!(!text_in_common_scripts("hello мир"));
    }

    #[test]
    fn tokens_are_judged_by_what_text_could_contain_them() {
        // Whole characters, and pieces of characters cut at either end.
        assert!(token_in_common_scripts(" café".as_bytes()));
        assert!(token_in_common_scripts(&"—".as_bytes()[1..]));
        assert!(token_in_common_scripts(&[b'a', 0xE2, 0x80]));
        assert!(token_in_common_scripts(&[0x80, 0x94, b' ']));
        // A lead byte that only other scripts use, a foreign character, and broken UTF-8.
        assert!(!token_in_common_scripts(&[0xE4]));
        assert!(!token_in_common_scripts("мир".as_bytes()));
        assert!(!token_in_common_scripts(&[b'a', 0x80]));
        assert!(!token_in_common_scripts(&[0xFF]));
    }
}
