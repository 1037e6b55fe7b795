//! The common-scripts part of `o200k_base` (`tables/o200k_base.common.ccmt`, which the app loads
//! on a first visit): it holds exactly the tokens `coverage::token_in_common_scripts` keeps, at
//! their ranks, and it counts every text of the common scripts exactly as tiktoken does.

// tiktoken-rs is a dev-dependency on native targets only.
#![cfg(not(target_arch = "wasm32"))]

use ccm_tokens::coverage::{is_common_script, text_in_common_scripts, token_in_common_scripts};
use ccm_tokens::table::decode_table;
use ccm_tokens::{Coverage, Encoding, Tokenizer};
use proptest::prelude::*;
use std::sync::OnceLock;
use tiktoken_rs::{CoreBPE, Rank};

const COMMON: &[u8] = include_bytes!("../tables/o200k_base.common.ccmt");
const WHOLE: &[u8] = include_bytes!("../tables/o200k_base.ccmt");

fn tiktoken() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("tiktoken-rs loads o200k_base"))
}

fn common() -> &'static Tokenizer {
    static COMMON_TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    COMMON_TOKENIZER.get_or_init(|| {
        Tokenizer::from_table(Encoding::O200kBase, COMMON).expect("the common part loads")
    })
}

fn whole() -> &'static Tokenizer {
    static WHOLE_TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    WHOLE_TOKENIZER.get_or_init(|| {
        Tokenizer::from_table(Encoding::O200kBase, WHOLE).expect("the whole table loads")
    })
}

#[test]
fn the_committed_part_holds_the_common_tokens_at_their_ranks_and_nothing_else() {
    let table = decode_table(COMMON).expect("o200k_base.common.ccmt decodes");
    assert_eq!(table.name, "o200k_base+common-scripts");
    assert_eq!(table.len(), 199_998);
    let mut kept = 0;
    for rank in 0..table.len() {
        let ours = table
            .token(rank)
            .expect("every rank has a token, maybe empty");
        let theirs = tiktoken()
            .decode_bytes(&[rank as Rank])
            .unwrap_or_else(|e| panic!("tiktoken-rs has no token at rank {rank}: {e}"));
        if theirs.len() == 1 || token_in_common_scripts(&theirs) {
            assert_eq!(ours, &theirs[..], "rank {rank} must be kept");
            kept += 1;
        } else {
            assert!(ours.is_empty(), "rank {rank} ({theirs:?}) must be left out");
        }
    }
    // About 71% of the tokens: the part is worth loading first only while it stays small.
    assert!((130_000..160_000).contains(&kept), "{kept} tokens kept");
    assert_eq!(common().coverage(), Coverage::CommonScripts);
    assert_eq!(whole().coverage(), Coverage::Full);
}

/// Characters of the common scripts, weighted the way prose and code mix them: mostly ASCII,
/// then accented Latin, punctuation, symbols, combining marks and emoji.
fn common_char() -> impl Strategy<Value = char> {
    prop_oneof![
        8 => prop::char::range(' ', '~'),
        2 => prop::sample::select(vec![' ', '\n', '\t', '\r', '\u{a0}']),
        2 => prop::char::range('\u{a0}', '\u{24f}'),
        1 => prop::char::range('\u{250}', '\u{36f}'),
        1 => prop::char::range('\u{1e00}', '\u{1eff}'),
        2 => prop::char::range('\u{2000}', '\u{2bff}'),
        1 => prop::char::range('\u{1f300}', '\u{1f64f}'),
        1 => prop::sample::select(vec!['\u{fe0f}', '\u{200d}', '\u{fffd}']),
    ]
    .prop_filter("a common-script character", |&c| is_common_script(c))
}

fn assert_counted_exactly(text: &str) {
    assert!(text_in_common_scripts(text), "{text:?}");
    assert!(common().counts_exactly(text));
    let expected = tiktoken().encode_ordinary(text).len();
    assert_eq!(common().count(text), expected, "count of {text:?}");
    assert_eq!(
        common().encode(text).len(),
        expected,
        "encoding of {text:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_common_script_text_counts_as_tiktoken_counts_it(
        chars in prop::collection::vec(common_char(), 0..120)
    ) {
        assert_counted_exactly(&chars.into_iter().collect::<String>());
    }

    /// Words of one letter repeated, which make long pieces that go through the heap merge.
    #[test]
    fn long_pieces_count_as_tiktoken_counts_them(
        letter in common_char(), times in 1usize..400
    ) {
        assert_counted_exactly(&letter.to_string().repeat(times));
    }
}

#[test]
fn ordinary_prose_code_and_typography_count_exactly() {
    for text in [
        "We split the bundle, the login page performance issue is resolved.",
        "Grüße aus Köln — naïve café, señor, Łódź, Việt Nam… “quoted” ‘single’ «guillemets»",
        "fn main() { println!(\"{}\", 2 + 2); } // → 4 ≤ 5 ≠ 6 × 7 ÷ 8",
        "Done ✅ 🎉🙂👍🏽 👨‍👩‍👧 ★ ☆ ♥ € £ ¥ © ® ™ ° ± µ",
        "│ box ├── drawing └── tree ┘ █▓▒░",
        "e\u{301}\u{302} combining marks a\u{308}",
    ] {
        assert_counted_exactly(text);
    }
}

#[test]
fn text_in_other_scripts_is_not_covered_and_counts_too_high_rather_than_failing() {
    for text in [
        "Привет, мир! Как дела?",
        "我们把包拆开了，登录页面的性能问题解决了。",
        "مرحبا بالعالم",
        "こんにちは世界",
        "mixed: hello мир 世界",
    ] {
        assert!(!text_in_common_scripts(text), "{text:?}");
        assert!(!common().counts_exactly(text));
        assert!(whole().counts_exactly(text));
        let exact = tiktoken().encode_ordinary(text).len();
        assert_eq!(whole().count(text), exact);
        assert!(
            common().count(text) >= exact,
            "the part's fallback count of {text:?} must not be lower than the exact one"
        );
    }
}
