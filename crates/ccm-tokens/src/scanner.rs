//! Hand-written scanners equivalent to tiktoken's split patterns.
//!
//! tiktoken splits text into pieces with a regular expression before merging bytes, and that
//! regex (with a lookahead, so it needs a backtracking engine) is most of the cost of counting.
//! Each scanner below takes exactly the piece the pattern's leftmost-first match would take at
//! a position, decided by looking at character classes, and never looks at a character more
//! than a constant number of times, so splitting is linear in the text on every input.
//!
//! The patterns, as tiktoken-rs 0.12 writes them (the reference the tests compare against):
//!
//! cl100k_base: `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
//! ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//!
//! o200k_base: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+C?|
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*C?|\p{N}{1,3}|
//! ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+` with `C = (?i:'s|'t|'re|'ve|'m|'ll|'d)`.

use crate::unicode::{class_of, folds_to, Class};
use crate::Encoding;

/// A cursor over a text's characters that knows each one's class.
struct Text<'a> {
    text: &'a str,
}

impl Text<'_> {
    /// The character starting at byte `at` (which must be a character boundary before the end).
    #[inline]
    fn char_at(&self, at: usize) -> (char, usize) {
        let byte = self.text.as_bytes()[at];
        if byte < 0x80 {
            return (byte as char, 1);
        }
        // A valid `str` always has a whole character at a boundary.
        let c = self.text[at..].chars().next().unwrap_or('\u{FFFD}');
        (c, c.len_utf8())
    }

    /// The class of the character at `at`, or `None` at the end.
    #[inline]
    fn class_at(&self, at: usize) -> Option<(Class, char, usize)> {
        if at >= self.text.len() {
            return None;
        }
        let (c, len) = self.char_at(at);
        Some((class_of(c), c, len))
    }

    /// The end of the longest run from `at` whose characters satisfy `keep`.
    #[inline]
    fn run(&self, mut at: usize, keep: impl Fn(Class) -> bool) -> usize {
        let bytes = self.text.as_bytes();
        while at < bytes.len() {
            let byte = bytes[at];
            let (class, len) = if byte < 0x80 {
                (class_of(byte as char), 1)
            } else {
                let (c, len) = self.char_at(at);
                (class_of(c), len)
            };
            if !keep(class) {
                break;
            }
            at += len;
        }
        at
    }

    /// The end of a contraction suffix (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, any
    /// case) starting at `at`, if there is one.
    #[inline]
    fn contraction(&self, at: usize) -> Option<usize> {
        let rest = self.text.get(at..)?;
        let mut chars = rest.chars();
        if chars.next()? != '\'' {
            return None;
        }
        let first = chars.next()?;
        let end_one = at + 1 + first.len_utf8();
        if ['s', 'd', 'm', 't'].iter().any(|&l| folds_to(first, l)) {
            return Some(end_one);
        }
        let second = chars.next()?;
        let pair_matches = (folds_to(first, 'l') && folds_to(second, 'l'))
            || (folds_to(first, 'v') && folds_to(second, 'e'))
            || (folds_to(first, 'r') && folds_to(second, 'e'));
        pair_matches.then(|| end_one + second.len_utf8())
    }

    /// The end of the last `\r` or `\n` in `[from, to)`, plus one, if there is one.
    #[inline]
    fn after_last_newline(&self, from: usize, to: usize) -> Option<usize> {
        self.text.as_bytes()[from..to]
            .iter()
            .rposition(|&b| b == b'\r' || b == b'\n')
            .map(|p| from + p + 1)
    }

    /// The start of the last character that ends at `end`.
    #[inline]
    fn last_char_start(&self, end: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut at = end - 1;
        while at > 0 && (bytes[at] & 0xC0) == 0x80 {
            at -= 1;
        }
        at
    }
}

/// The end of the whitespace alternatives of both patterns at `at` (a whitespace character),
/// given the end of the whitespace run there.
#[inline]
fn whitespace_end(text: &Text<'_>, at: usize, len: usize, encoding: Encoding) -> usize {
    let run_end = text.run(at, |c| c == Class::Space);
    let at_text_end = run_end == text.text.len();
    // cl100k's `\s++$` comes before its newline rule; o200k has no such rule, and its
    // `\s+(?!\S)` takes a trailing run only when no newline rule matched first.
    if encoding == Encoding::Cl100kBase && at_text_end {
        return run_end;
    }
    // `\s*[\r\n]` (cl100k) and `\s*[\r\n]+` (o200k) both end right after the run's last
    // newline: greedy `\s*` backs off only as far as that newline.
    if let Some(end) = text.after_last_newline(at, run_end) {
        return end;
    }
    if at_text_end {
        return run_end;
    }
    // `\s+(?!\S)`: the run minus its last character, which must stay for the next piece.
    let last = text.last_char_start(run_end);
    if last > at {
        return last;
    }
    // `\s` / `\s+`: a single whitespace character before a non-space.
    at + len
}

/// The end of the piece of `text` that starts at `at` under cl100k_base's pattern.
fn cl100k_piece_end(text: &Text<'_>, at: usize) -> usize {
    let Some((class, c, len)) = text.class_at(at) else {
        return at;
    };
    if c == '\'' {
        if let Some(end) = text.contraction(at) {
            return end;
        }
    }
    if class.is_letter() {
        return text.run(at, Class::is_letter);
    }
    // `[^\r\n\p{L}\p{N}]?+\p{L}++`: one non-letter, non-number (not a newline) then letters.
    if c != '\r' && c != '\n' && class != Class::Number {
        if let Some((next, _, _)) = text.class_at(at + len) {
            if next.is_letter() {
                return text.run(at + len, Class::is_letter);
            }
        }
    }
    if class == Class::Number {
        return number_end(text, at);
    }
    if let Some(end) = symbol_end(text, at, c, class, b"\r\n") {
        return end;
    }
    whitespace_end(text, at, len, Encoding::Cl100kBase)
}

/// `\p{N}{1,3}`.
#[inline]
fn number_end(text: &Text<'_>, mut at: usize) -> usize {
    for _ in 0..3 {
        match text.class_at(at) {
            Some((Class::Number, _, len)) => at += len,
            _ => break,
        }
    }
    at
}

/// ` ?[^\s\p{L}\p{N}]+` followed by any of `trailing` (ASCII bytes), or `None`.
#[inline]
fn symbol_end(text: &Text<'_>, at: usize, c: char, class: Class, trailing: &[u8]) -> Option<usize> {
    let start = if class.is_symbol() {
        at
    } else if c == ' '
        && text
            .class_at(at + 1)
            .is_some_and(|(next, _, _)| next.is_symbol())
    {
        at + 1
    } else {
        return None;
    };
    let mut end = text.run(start, Class::is_symbol);
    let bytes = text.text.as_bytes();
    while end < bytes.len() && trailing.contains(&bytes[end]) {
        end += 1;
    }
    Some(end)
}

/// o200k's first alternative without its prefix: `[A]*[B]+C?` from `at`, where A is the
/// upper set and B the lower set. A backtracking engine gives back characters of the greedy
/// `[A]*` until a B character follows, so the match starts its `[B]+` at the end of the A-run
/// when a B character is there, else at the last character of the run that is also in B.
#[inline]
fn o200k_lower_word(text: &Text<'_>, at: usize) -> Option<usize> {
    let bytes = text.text.as_bytes();
    let mut end = at;
    let mut last_in_both = None;
    while end < bytes.len() {
        let (c, len) = text.char_at(end);
        let class = class_of(c);
        if !class.is_upper_set() {
            break;
        }
        if class.is_lower_set() {
            last_in_both = Some(end);
        }
        end += len;
    }
    let lower_start = match text.class_at(end) {
        Some((class, _, _)) if class.is_lower_set() => end,
        _ => last_in_both?,
    };
    let word_end = text.run(lower_start, Class::is_lower_set);
    Some(text.contraction(word_end).unwrap_or(word_end))
}

/// o200k's second alternative without its prefix: `[A]+[B]*C?` from `at`.
#[inline]
fn o200k_upper_word(text: &Text<'_>, at: usize) -> Option<usize> {
    let upper_end = text.run(at, Class::is_upper_set);
    if upper_end == at {
        return None;
    }
    let word_end = text.run(upper_end, Class::is_lower_set);
    Some(text.contraction(word_end).unwrap_or(word_end))
}

/// The end of the piece of `text` that starts at `at` under o200k_base's pattern.
fn o200k_piece_end(text: &Text<'_>, at: usize) -> usize {
    let Some((class, c, len)) = text.class_at(at) else {
        return at;
    };
    // `[^\r\n\p{L}\p{N}]?`: the optional prefix is tried first, then the same alternative
    // without it, before the next alternative.
    let may_prefix = c != '\r' && c != '\n' && !class.is_letter() && class != Class::Number;
    if may_prefix {
        if let Some(end) = o200k_lower_word(text, at + len) {
            return end;
        }
    }
    if let Some(end) = o200k_lower_word(text, at) {
        return end;
    }
    if may_prefix {
        if let Some(end) = o200k_upper_word(text, at + len) {
            return end;
        }
    }
    if let Some(end) = o200k_upper_word(text, at) {
        return end;
    }
    if class == Class::Number {
        return number_end(text, at);
    }
    if let Some(end) = symbol_end(text, at, c, class, b"\r\n/") {
        return end;
    }
    whitespace_end(text, at, len, Encoding::O200kBase)
}

/// The pieces of `text` under `encoding`'s split pattern, in order; together they are the
/// whole text.
pub(crate) fn pieces(text: &str, encoding: Encoding) -> Pieces<'_> {
    Pieces {
        text: Text { text },
        at: 0,
        encoding,
    }
}

/// The iterator [`pieces`] returns.
pub(crate) struct Pieces<'a> {
    text: Text<'a>,
    at: usize,
    encoding: Encoding,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        if self.at >= self.text.text.len() {
            return None;
        }
        let end = match self.encoding {
            Encoding::O200kBase => o200k_piece_end(&self.text, self.at),
            Encoding::Cl100kBase => cl100k_piece_end(&self.text, self.at),
        };
        // Every alternative takes at least one character; this guards the loop regardless.
        let end = end.max(self.at + self.text.char_at(self.at).1);
        let piece = &self.text.text[self.at..end];
        self.at = end;
        Some(piece)
    }
}
