//! Counts in WebAssembly equal tiktoken's. tiktoken-rs does not run in the browser tests, so
//! the reference goes through a golden file: natively, this test checks that
//! `golden_counts.txt` holds tiktoken-rs' counts and token-id fingerprints for a fixed set of
//! generated texts (and that ours equal them); in headless Chromium, it checks that the wasm
//! build gives exactly the same. The texts come from a seeded generator, so the file never
//! needs updating unless the generator changes (`CCM_REGENERATE=1` rewrites it natively).

use ccm_tokens::{Encoding, Tokenizer};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const GOLDEN: &str = include_str!("golden_counts.txt");

/// A deterministic xorshift generator.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The texts: strings from an alphabet of the characters the split patterns treat specially,
/// random code points from every plane, long single pieces, and CJK runs.
fn texts() -> Vec<String> {
    const TRICKY: &[char] = &[
        'a', 'b', 's', 'S', 'ſ', 't', 'l', 'L', 'v', 'e', 'r', 'm', 'd', 'Z', 'É', 'ǅ', 'ß', 'ʰ',
        '中', 'ア', '\u{301}', '\u{93F}', '0', '7', '٣', '½', ' ', ' ', '\t', '\n', '\r', '\u{a0}',
        '\u{3000}', '\u{85}', '\'', '/', '.', ',', '!', '_', '"', '😀', '\u{200d}',
    ];
    let mut random = Random(0x5EED_CC3D_0000_0001);
    let mut texts = Vec::new();
    for length in 1..=160 {
        texts.push(
            (0..length)
                .map(|_| TRICKY[random.below(TRICKY.len())])
                .collect(),
        );
    }
    for _ in 0..60 {
        let length = 1 + random.below(80);
        let text: String = (0..length)
            .filter_map(|_| char::from_u32(random.below(0x3_0000) as u32))
            .collect();
        texts.push(text);
    }
    for unit in ["a", "ab", " ", "\n", "_", "Ab", "中文", "1"] {
        texts.push(unit.repeat(500 + random.below(3000)));
    }
    for _ in 0..10 {
        let length = 200 + random.below(2000);
        texts.push(
            (0..length)
                .map(|_| char::from_u32(0x4E00 + random.below(0x5000) as u32).unwrap_or('中'))
                .collect(),
        );
    }
    texts
}

/// FNV-1a over the token ids: equal fingerprints mean equal ids (up to a 64-bit collision).
fn fingerprint(ids: &[u32]) -> u64 {
    ids.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &id| {
        (hash ^ u64::from(id)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One line per text: the count and fingerprint in o200k_base, then in cl100k_base.
fn lines(o200k: impl Fn(&str) -> Vec<u32>, cl100k: impl Fn(&str) -> Vec<u32>) -> Vec<String> {
    texts()
        .iter()
        .map(|text| {
            let (a, b) = (o200k(text), cl100k(text));
            format!(
                "{} {:016x} {} {:016x}",
                a.len(),
                fingerprint(&a),
                b.len(),
                fingerprint(&b)
            )
        })
        .collect()
}

fn ours() -> Vec<String> {
    let o200k = Tokenizer::from_table(
        Encoding::O200kBase,
        include_bytes!("../tables/o200k_base.ccmt"),
    )
    .expect("valid table");
    let cl100k = Tokenizer::from_table(
        Encoding::Cl100kBase,
        include_bytes!("../tables/cl100k_base.ccmt"),
    )
    .expect("valid table");
    let counted = lines(|t| o200k.encode(t), |t| cl100k.encode(t));
    // The counting path (with its memos) must agree with the ids' number.
    for (text, line) in texts().iter().zip(&counted) {
        let mut fields = line.split(' ');
        assert_eq!(fields.next(), Some(o200k.count(text).to_string().as_str()));
        assert_eq!(fields.nth(1), Some(cl100k.count(text).to_string().as_str()));
    }
    counted
}

fn assert_matches_golden(actual: &[String]) {
    let golden: Vec<&str> = GOLDEN.lines().collect();
    assert_eq!(
        actual.len(),
        golden.len(),
        "golden_counts.txt has another number of texts"
    );
    for (index, (actual, golden)) in actual.iter().zip(&golden).enumerate() {
        assert_eq!(
            actual,
            golden,
            "text {index}: {:?}",
            texts()[index].chars().take(60).collect::<String>()
        );
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn golden_file_holds_tiktoken_counts_and_ours_equal_them() {
    let o200k = tiktoken_rs::o200k_base_singleton();
    let cl100k = tiktoken_rs::cl100k_base_singleton();
    let reference = lines(|t| o200k.encode_ordinary(t), |t| cl100k.encode_ordinary(t));
    if std::env::var_os("CCM_REGENERATE").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden_counts.txt");
        std::fs::write(path, reference.join("\n") + "\n").expect("write golden_counts.txt");
    }
    assert_matches_golden(&reference);
    assert_matches_golden(&ours());
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test::wasm_bindgen_test]
fn wasm_counts_equal_the_golden_tiktoken_counts() {
    assert_matches_golden(&ours());
}
