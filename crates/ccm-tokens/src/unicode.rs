//! The character classes the split patterns need, one per code point.
//!
//! tiktoken's patterns ask about `\p{L}` and its parts (`Lu`, `Lt`, `Ll`, `Lm`, `Lo`), `\p{M}`,
//! `\p{N}` and `\s`. These sets are disjoint enough that one small class per code point answers
//! every question the scanner asks, so a lookup is one table read for ASCII and a binary search
//! over a few thousand runs otherwise. The runs are generated from the same Unicode tables the
//! reference regex engine uses (regex-syntax); a test regenerates them and fails on any drift.

use crate::unicode_data::RUNS;

/// Whether `c` matches `letter` case-insensitively under Unicode simple case folding, for the
/// letters of the contraction suffixes. Only `s` has a fold outside ASCII (U+017F LONG S).
#[inline]
pub(crate) fn folds_to(c: char, letter: char) -> bool {
    c == letter || c == letter.to_ascii_uppercase() || (letter == 's' && c == '\u{17F}')
}

/// The class of a code point, as far as the split patterns can tell code points apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Class {
    /// Anything else: punctuation, symbols, controls, unassigned code points.
    Other = 0,
    /// `Lu` or `Lt`: in o200k's "upper" set only.
    Upper = 1,
    /// `Ll`: in o200k's "lower" set only.
    Lower = 2,
    /// `Lm` or `Lo`: a letter in both of o200k's sets (CJK ideographs are here).
    Caseless = 3,
    /// `M`: marks, in both of o200k's sets but not letters, so they can also be a prefix.
    Mark = 4,
    /// `N`: digits and other numbers.
    Number = 5,
    /// `\s`: the Unicode White_Space property.
    Space = 6,
}

impl Class {
    const fn from_u8(value: u8) -> Class {
        match value {
            1 => Class::Upper,
            2 => Class::Lower,
            3 => Class::Caseless,
            4 => Class::Mark,
            5 => Class::Number,
            6 => Class::Space,
            _ => Class::Other,
        }
    }

    /// `\p{L}`.
    #[inline]
    pub(crate) fn is_letter(self) -> bool {
        matches!(self, Class::Upper | Class::Lower | Class::Caseless)
    }

    /// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
    #[inline]
    pub(crate) fn is_upper_set(self) -> bool {
        matches!(self, Class::Upper | Class::Caseless | Class::Mark)
    }

    /// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
    #[inline]
    pub(crate) fn is_lower_set(self) -> bool {
        matches!(self, Class::Lower | Class::Caseless | Class::Mark)
    }

    /// `[^\s\p{L}\p{N}]`: what the punctuation alternative takes.
    #[inline]
    pub(crate) fn is_symbol(self) -> bool {
        matches!(self, Class::Other | Class::Mark)
    }
}

/// The classes of the ASCII range, computed once at compile time from the runs.
static ASCII: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut run = 0;
    let mut code = 0;
    while code < 128 {
        while run + 1 < RUNS.len() && RUNS[run + 1].0 <= code as u32 {
            run += 1;
        }
        table[code] = Class::from_u8(RUNS[run].1);
        code += 1;
    }
    table
};

/// The class of `c`. The ASCII case is one table read and is always inlined into the
/// scanner's loops; the rest is a binary search kept out of line.
#[inline(always)]
pub(crate) fn class_of(c: char) -> Class {
    let code = c as u32;
    if code < 128 {
        return ASCII[code as usize];
    }
    class_of_non_ascii(code)
}

#[inline(never)]
fn class_of_non_ascii(code: u32) -> Class {
    if let Some(&class) = basic_plane().get(code as usize) {
        return Class::from_u8(class);
    }
    run_class(code)
}

/// The class from the runs, by binary search.
fn run_class(code: u32) -> Class {
    // The last run starting at or before `code`; RUNS[0] starts at 0, so there is one.
    let index = RUNS.partition_point(|&(start, _)| start <= code) - 1;
    Class::from_u8(RUNS[index].1)
}

/// The classes of the Basic Multilingual Plane, one byte per code point, expanded from the
/// runs on first use (64 KiB, well under a millisecond). Nearly all non-ASCII text (CJK,
/// Cyrillic, accented Latin) is in this plane, and a table read beats a binary search over
/// thousands of runs, which was an eighth of the time on CJK text.
fn basic_plane() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = vec![0u8; 0x1_0000];
        for (index, &(start, class)) in RUNS.iter().enumerate() {
            let end = RUNS.get(index + 1).map_or(u32::MAX, |&(next, _)| next);
            let (start, end) = (start as usize, (end as usize).min(table.len()));
            if start >= table.len() {
                break;
            }
            table[start..end].fill(class);
        }
        table
    })
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use regex_syntax::hir::{Class as HirClass, HirKind};

    /// The code point ranges of a regex character class, as regex-syntax resolves it.
    fn ranges(pattern: &str) -> Vec<(u32, u32)> {
        let hir = regex_syntax::Parser::new()
            .parse(pattern)
            .expect("valid class");
        match hir.kind() {
            HirKind::Class(HirClass::Unicode(class)) => class
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect(),
            other => panic!("{pattern} is not a Unicode class: {other:?}"),
        }
    }

    /// Runs of equal class over all code points, computed from regex-syntax's tables.
    fn expected_runs() -> Vec<(u32, u8)> {
        let mut classes = vec![Class::Other as u8; 0x11_0000];
        // Later assignments win; the sets are disjoint, which the assertion below checks.
        for (pattern, class) in [
            (r"[\p{Lu}\p{Lt}]", Class::Upper),
            (r"\p{Ll}", Class::Lower),
            (r"[\p{Lm}\p{Lo}]", Class::Caseless),
            (r"\p{M}", Class::Mark),
            (r"\p{N}", Class::Number),
            (r"\s", Class::Space),
        ] {
            for (start, end) in ranges(pattern) {
                for code in start..=end {
                    assert_eq!(classes[code as usize], 0, "classes overlap at U+{code:04X}");
                    classes[code as usize] = class as u8;
                }
            }
        }
        let mut runs: Vec<(u32, u8)> = Vec::new();
        for (code, &class) in classes.iter().enumerate() {
            if runs.last().is_none_or(|&(_, last)| last != class) {
                runs.push((code as u32, class));
            }
        }
        runs
    }

    fn render(runs: &[(u32, u8)]) -> String {
        let mut out = String::from(
            "//! Generated by `CCM_REGENERATE=1 cargo test -p ccm-tokens unicode`; do not edit.\n\
             //! Runs of equal character class over all code points: (first code point, class).\n\n\
             #[rustfmt::skip]\n",
        );
        out.push_str(&format!(
            "pub(crate) static RUNS: [(u32, u8); {}] = [\n",
            runs.len()
        ));
        for chunk in runs.chunks(8) {
            let line: Vec<String> = chunk
                .iter()
                .map(|(start, class)| format!("(0x{start:X}, {class})"))
                .collect();
            out.push_str(&format!("    {},\n", line.join(", ")));
        }
        out.push_str("];\n");
        out
    }

    #[test]
    fn unicode_runs_match_the_reference_regex_tables() {
        let expected = expected_runs();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/unicode_data.rs");
        if std::env::var_os("CCM_REGENERATE").is_some() {
            std::fs::write(path, render(&expected)).expect("write unicode_data.rs");
        }
        assert_eq!(
            RUNS.as_slice(),
            expected.as_slice(),
            "unicode_data.rs is out of date; run CCM_REGENERATE=1 cargo test -p ccm-tokens unicode"
        );
    }

    #[test]
    fn every_code_point_gets_its_reference_class() {
        let expected = expected_runs();
        for window in expected.windows(2) {
            let (start, class) = window[0];
            for code in [start, window[1].0 - 1] {
                if let Some(c) = char::from_u32(code) {
                    assert_eq!(class_of(c) as u8, class, "U+{code:04X}");
                }
                assert_eq!(run_class(code) as u8, class, "runs at U+{code:04X}");
            }
        }
        assert_eq!(class_of('a'), Class::Lower);
        assert_eq!(class_of('Ǆ'), Class::Upper);
        assert_eq!(class_of('ǅ'), Class::Upper, "titlecase counts as upper");
        assert_eq!(class_of('中'), Class::Caseless);
        assert_eq!(class_of('\u{301}'), Class::Mark);
        assert_eq!(class_of('٣'), Class::Number);
        assert_eq!(class_of('\u{3000}'), Class::Space);
        assert_eq!(class_of('\u{85}'), Class::Space);
        // Beyond the basic plane the runs answer: a supplementary ideograph and an emoji.
        assert_eq!(class_of('\u{20000}'), Class::Caseless);
        assert_eq!(class_of('😀'), Class::Other);
    }

    /// The contraction alternatives are case-insensitive, and Unicode case folding adds code
    /// points beyond ASCII to some letters (`s` also matches U+017F LONG S). The scanner
    /// hard-codes those sets; this checks them against regex-syntax.
    #[test]
    fn case_insensitive_letters_of_the_contractions() {
        for letter in ['s', 'd', 'm', 't', 'l', 'v', 'r', 'e'] {
            let folded: Vec<char> = ranges(&format!("(?i:{letter})"))
                .into_iter()
                .flat_map(|(start, end)| (start..=end).filter_map(char::from_u32))
                .collect();
            let ours: Vec<char> = ('\0'..=char::MAX)
                .filter(|&c| folds_to(c, letter))
                .collect();
            assert_eq!(ours, folded, "case folding of '{letter}'");
        }
    }
}
