//! Our counts and token ids against tiktoken-rs, the reference, for both encodings: on random
//! Unicode, on strings built from the characters the split patterns treat specially, on real
//! text (this repository's documents and sources) and on pathological inputs.
//!
//! The tokenizers here are built from tiktoken-rs' own tables (`Tokenizer::from_tokens`), so
//! these tests check the scanner and the merge alone; `tables_match_tiktoken.rs` checks the
//! shipped table files.
#![cfg(not(target_arch = "wasm32"))]

use ccm_tokens::{Encoding, Tokenizer};
use proptest::prelude::*;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

struct Pair {
    ours: Tokenizer,
    reference: &'static CoreBPE,
    /// tiktoken-rs' split pattern for this encoding, to compare pieces as well as tokens: a
    /// wrong split can still give the same tokens when no merge crosses the boundary.
    pattern: fancy_regex::Regex,
}

/// cl100k_base's split pattern exactly as tiktoken-rs 0.12 compiles it.
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

fn pair(encoding: Encoding) -> &'static Pair {
    static O200K: OnceLock<Pair> = OnceLock::new();
    static CL100K: OnceLock<Pair> = OnceLock::new();
    let (slot, reference, size) = match encoding {
        Encoding::O200kBase => (&O200K, tiktoken_rs::o200k_base_singleton(), 199_998),
        Encoding::Cl100kBase => (&CL100K, tiktoken_rs::cl100k_base_singleton(), 100_256),
    };
    slot.get_or_init(|| {
        let tokens: Vec<Vec<u8>> = (0..size)
            .map(|rank| reference.decode_bytes(&[rank]).expect("ordinary rank"))
            .collect();
        let pattern = match encoding {
            Encoding::O200kBase => tiktoken_rs::O200K_BASE_PAT_STR,
            Encoding::Cl100kBase => CL100K_PATTERN,
        };
        Pair {
            ours: Tokenizer::from_tokens(encoding, &tokens),
            reference,
            pattern: fancy_regex::Regex::new(pattern).expect("tiktoken's pattern compiles"),
        }
    })
}

/// Asserts identical token ids and counts in both encodings, with a readable failure.
fn assert_exact(text: &str) {
    for encoding in Encoding::ALL {
        let pair = pair(encoding);
        let expected_pieces: Vec<&str> = pair
            .pattern
            .find_iter(text)
            .map(|m| m.expect("the reference regex does not fail").as_str())
            .collect();
        let our_pieces: Vec<&str> = pair.ours.split(text).collect();
        if our_pieces != expected_pieces {
            let first = our_pieces
                .iter()
                .zip(&expected_pieces)
                .position(|(a, b)| a != b)
                .unwrap_or(our_pieces.len().min(expected_pieces.len()));
            panic!(
                "{encoding}: pieces differ for {:?} from piece {first}:\n ours {:?}\n tiktoken {:?}",
                text.chars().take(200).collect::<String>(),
                &our_pieces[first..(first + 8).min(our_pieces.len())],
                &expected_pieces[first..(first + 8).min(expected_pieces.len())],
            );
        }
        let expected = pair.reference.encode_ordinary(text);
        let ours = pair.ours.encode(text);
        if ours != expected {
            let pieces: Vec<&str> = pair.ours.split(text).take(40).collect();
            panic!(
                "{encoding}: token ids differ for {:?}\n ours {:?}\n tiktoken {:?}\n our pieces {:?}",
                text.chars().take(200).collect::<String>(),
                &ours[..ours.len().min(40)],
                &expected[..expected.len().min(40)],
                pieces
            );
        }
        assert_eq!(
            pair.ours.count(text),
            expected.len(),
            "{encoding}: count of {text:?}"
        );
        // Again, now that the memos of short and long pieces have seen this text.
        assert_eq!(
            pair.ours.count(text),
            expected.len(),
            "{encoding}: recount of {text:?}"
        );
    }
}

#[test]
fn known_strings() {
    for text in [
        "",
        "hello world",
        "Hello, World! It's 2026; we'll see what they've done.",
        "  leading and trailing  ",
        "line one\nline two\r\n\r\n\n  indented\n",
        "<|endoftext|> is ordinary text here",
        "naïve café déjà vu — “quoted” ‘text’",
        "中文文本没有空格但是有标点。日本語のテキストも。한국어 텍스트",
        "CamelCaseWordsAndHTTPServer and ALLCAPS'S",
        "ǅemal ǈubljana ǋ titlecase",
        "x = a/b // comment\n/* block */ path/to/file.rs",
        "12345678901234567890 3.14159 ٣٤٥ ①②③",
        "emoji 👍🏽 and flags 🇫🇷🇩🇪 and ZWJ 👨‍👩‍👧",
        "tabs\tand\u{a0}nbsp\u{3000}ideographic\u{2028}separators",
        "'s 'S 'ſ 'LL 'Ve 'rE 'm 'd 't 'x",
        // U+017F folds to 's', so it ends a contraction that splits off the letters after it.
        "it'ſa don'ſt 'ſa 'Sa 'llama",
        "e\u{301}\u{302} combining ́marks at start",
    ] {
        assert_exact(text);
    }
}

#[test]
fn real_documents_of_this_repository() {
    for text in [
        include_str!("../../../ARCHITECTURE.md"),
        include_str!("../../../README.md"),
        include_str!("../src/scanner.rs"),
        include_str!("../src/bpe.rs"),
        include_str!("../../ccm-core/src/plan/mod.rs"),
        include_str!("../../ccm-core/src/plan/candidates.rs"),
        include_str!("../../ccm-core/src/session/mod.rs"),
        include_str!("../../ccm-core/src/session/turn.rs"),
    ] {
        assert_exact(text);
    }
}

/// The pathological shapes of the benchmark, at sizes the reference handles quickly.
#[test]
fn pathological_inputs() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let letters: String = (0..20_000)
        .map(|_| (b'a' + (random() % 26) as u8) as char)
        .collect();
    let base64: String = (0..20_000)
        .map(|_| {
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                [(random() % 64) as usize] as char
        })
        .collect();
    let digits: String = (0..20_000)
        .map(|_| (b'0' + (random() % 10) as u8) as char)
        .collect();
    let cjk: String = (0..5_000)
        .map(|_| char::from_u32(0x4E00 + (random() % 0x5000) as u32).unwrap())
        .collect();
    let json = "{\"a\":[1,2,{\"b\":null,\"c\":\"x y\"}],\"d\":true}".repeat(500);
    for text in [
        "a".repeat(20_000),
        "A".repeat(20_000),
        "_".repeat(20_000),
        " ".repeat(20_000),
        "\n".repeat(20_000),
        " \n".repeat(10_000),
        "ab".repeat(10_000),
        letters,
        base64,
        digits,
        cjk,
        json,
    ] {
        assert_exact(&text);
    }
}

/// Characters the split patterns treat specially, weighted so that random strings hit every
/// boundary case: each letter class, marks, numbers, each whitespace kind, contraction
/// letters, apostrophes, slashes and punctuation.
fn tricky_char() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        'a', 'b', 's', 'S', 'ſ', 't', 'l', 'L', 'v', 'e', 'r', 'R', 'm', 'd', 'D', 'Z', 'É', 'ǅ',
        'ß', 'ʰ', '中', 'ア', '\u{301}', '\u{93F}', '0', '7', '٣', '½', ' ', ' ', '\t', '\n', '\r',
        '\u{a0}', '\u{3000}', '\u{85}', '\'', '\'', '/', '.', ',', '!', '-', '_', '"', '(', '😀',
        '\u{200d}', '\u{fe0f}', 'Ω',
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_tricky_strings(chars in prop::collection::vec(tricky_char(), 0..60)) {
        assert_exact(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn random_unicode(text in "\\PC{0,80}") {
        assert_exact(&text);
    }

    #[test]
    fn random_any_chars(chars in prop::collection::vec(any::<char>(), 0..40)) {
        assert_exact(&chars.into_iter().collect::<String>());
    }

    /// Long single pieces take the heap merge; short repeats of a random unit make the ties
    /// between equal ranks that the heap must break exactly like tiktoken (leftmost first).
    #[test]
    fn long_pieces_merge_like_tiktoken(unit in "[a-zA-Z ]{1,4}", repeats in 30usize..400) {
        assert_exact(&unit.repeat(repeats));
    }
}
