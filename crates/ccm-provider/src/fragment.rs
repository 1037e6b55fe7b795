//! Text that arrives in pieces: a stream's answer text and tool-call arguments come as one JSON
//! string fragment per event, and a server may cut a character between two of them.
//!
//! The SSE decoder already reassembles characters that the network splits between chunks,
//! since it decodes whole lines. A cut between two events is different: a server that slices
//! its text by UTF-16 code units (JavaScript's `slice`, for example) sends the two halves of an
//! emoji's surrogate pair as `"\ud83e"` in one event and `"\udd80"` in the next. Neither half
//! is a character, so reading either fragment as a Rust `String` fails. Fragments are therefore
//! read as bytes, where serde_json writes a lone surrogate in its three-byte WTF-8 form, and a
//! [`TextJoiner`] holds back an unfinished end until the next fragment completes it. Raw UTF-8
//! bytes of a character cut between fragments are held back the same way.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;

/// One JSON string fragment as bytes: UTF-8, except that a lone surrogate escape is kept as its
/// WTF-8 encoding instead of failing the whole event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fragment(pub(crate) Vec<u8>);

impl<'de> Deserialize<'de> for Fragment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde_json only accepts lone surrogates when a string is read as bytes.
        deserializer.deserialize_bytes(FragmentVisitor)
    }
}

struct FragmentVisitor;

impl Visitor<'_> for FragmentVisitor {
    type Value = Fragment;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Fragment, E> {
        Ok(Fragment(bytes.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Fragment, E> {
        Ok(Fragment(bytes))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Fragment, E> {
        Ok(Fragment(text.as_bytes().to_vec()))
    }
}

/// The bytes of a JSON value that is normally a string fragment. `other` decides what any
/// other kind of value contributes.
pub(crate) fn fragment_of(
    raw: Option<&RawValue>,
    other: impl FnOnce(&str) -> Result<Vec<u8>, serde_json::Error>,
) -> Result<Vec<u8>, serde_json::Error> {
    match raw.map(RawValue::get) {
        None => Ok(Vec::new()),
        Some(json) if json.starts_with('"') => Ok(serde_json::from_str::<Fragment>(json)?.0),
        Some(json) => other(json),
    }
}

/// Joins fragments into text, holding back an end that may still become a character.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextJoiner {
    pending: Vec<u8>,
}

impl TextJoiner {
    /// Appends a fragment and returns the text that is complete so far (possibly empty).
    pub(crate) fn push(&mut self, fragment: &[u8]) -> String {
        self.pending.extend_from_slice(fragment);
        let keep = unfinished_tail(&self.pending);
        let tail = self.pending.split_off(self.pending.len() - keep);
        decode(&std::mem::replace(&mut self.pending, tail))
    }

    /// The text still held back, which no fragment will complete any more: each broken piece
    /// becomes U+FFFD, as undecodable text does everywhere else.
    pub(crate) fn finish(&mut self) -> String {
        decode(&std::mem::take(&mut self.pending))
    }
}

/// Joins one whole value's fragment into text.
pub(crate) fn text_of(fragment: &[u8]) -> String {
    let mut joiner = TextJoiner::default();
    let mut text = joiner.push(fragment);
    text.push_str(&joiner.finish());
    text
}

/// How many bytes at the end may still become a character with what follows: a leading
/// surrogate (waiting for its trailing half), or the start of a UTF-8 sequence whose
/// continuation bytes have not arrived.
fn unfinished_tail(bytes: &[u8]) -> usize {
    let len = bytes.len();
    if len >= 3 && is_leading_surrogate(&bytes[len - 3..]) {
        return 3;
    }
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if back < needed { back } else { 0 };
    }
    0
}

/// A surrogate code point in its three-byte WTF-8 form (`ED A0..BF 80..BF`).
fn surrogate(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [0xED, second @ 0xA0..=0xBF, third @ 0x80..=0xBF, ..] => {
            Some(0xD000 | (u32::from(second & 0x3F) << 6) | u32::from(third & 0x3F))
        }
        _ => None,
    }
}

fn is_leading_surrogate(bytes: &[u8]) -> bool {
    surrogate(bytes).is_some_and(|unit| unit < 0xDC00)
}

/// Decodes UTF-8 with surrogates in WTF-8 form: a leading surrogate followed by a trailing one
/// is the character they encode together; anything else that is not UTF-8 becomes U+FFFD.
fn decode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        if let Some(unit) = surrogate(rest) {
            let pair = surrogate(&rest[3..]).filter(|low| unit < 0xDC00 && *low >= 0xDC00);
            match pair
                .and_then(|low| char::from_u32(0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00)))
            {
                Some(character) => {
                    text.push(character);
                    rest = &rest[6..];
                }
                None => {
                    text.push(char::REPLACEMENT_CHARACTER);
                    rest = &rest[3..];
                }
            }
            continue;
        }
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                break;
            }
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                text.push_str(&String::from_utf8_lossy(valid));
                rest = after;
                if surrogate(rest).is_none() {
                    text.push(char::REPLACEMENT_CHARACTER);
                    rest = &rest[error.error_len().unwrap_or(rest.len())..];
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `"\ud83e"` and `"\udd80"` as serde_json reads them into bytes.
    fn halves() -> (Vec<u8>, Vec<u8>) {
        let high = serde_json::from_str::<Fragment>(r#""\ud83e""#).unwrap().0;
        let low = serde_json::from_str::<Fragment>(r#""\udd80""#).unwrap().0;
        (high, low)
    }

    #[test]
    fn surrogate_halves_in_two_fragments_make_one_character() {
        let (high, low) = halves();
        assert_eq!(high, b"\xED\xA0\xBE");
        let mut joiner = TextJoiner::default();
        assert_eq!(joiner.push(&[b"a".as_slice(), &high].concat()), "a");
        assert_eq!(joiner.push(&[low.as_slice(), b"b"].concat()), "🦀b");
        assert_eq!(joiner.finish(), "");
    }

    #[test]
    fn utf8_bytes_cut_between_fragments_make_one_character() {
        let crab = "🦀é".as_bytes();
        for cut in 0..=crab.len() {
            let mut joiner = TextJoiner::default();
            let mut text = joiner.push(&crab[..cut]);
            text.push_str(&joiner.push(&crab[cut..]));
            text.push_str(&joiner.finish());
            assert_eq!(text, "🦀é", "cut at {cut}");
        }
    }

    #[test]
    fn broken_pieces_become_replacement_characters() {
        let (high, low) = halves();
        // A trailing half first, two leading halves in a row, a leading half at the end.
        let bytes = [low.as_slice(), b"x", &high, &high, &low, b"\xFF", &high].concat();
        assert_eq!(text_of(&bytes), "\u{FFFD}x\u{FFFD}🦀\u{FFFD}\u{FFFD}");
        // A UTF-8 sequence cut off for good.
        assert_eq!(text_of(b"ok\xF0\x9F"), "ok\u{FFFD}");
    }

    #[test]
    fn other_values_are_left_to_the_caller() {
        let raw = serde_json::from_str::<Box<RawValue>>(r#"{"a": 1}"#).unwrap();
        let bytes = fragment_of(Some(&raw), |json| Ok(json.as_bytes().to_vec())).unwrap();
        assert_eq!(bytes, br#"{"a": 1}"#);
        assert!(fragment_of(None, |_| unreachable!()).unwrap().is_empty());
    }
}
