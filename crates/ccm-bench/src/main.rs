//! `cargo run --release -p ccm-bench`: how the per-turn cost of CCM behaves as the stored
//! history grows, measured against peers in the same run.
//!
//! Printed, for histories of 1k, 10k and 100k stored messages:
//! - building one turn's context plan (stored counts only), and its ratio to the 1k case,
//! - a whole turn (`begin_turn` + `end_turn`: routing, salience, decay, eviction, metrics),
//! - the per-turn compaction check (usage from the plan, the policy's decision),
//! - the peer: a naive builder that walks the whole history, as everything-in-context tools do,
//! - counting throughput: re-tokenizing the working context (exact counter) versus adding the
//!   stored counts, which is what CCM does.
//!
//! Numbers are medians of repeated samples; the machine is shared, so read ratios, not
//! absolute times.

use ccm_core::tokens::{default_counter, Encoding};
use ccm_core::{Config, Session};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const SAMPLES: usize = 15;

/// A word no other effort uses (`kalomiru17`), so that references in the benchmark are exactly
/// the scripted ones. Real conversations about one domain share many words, and with the
/// specification's rule (two shared summary keywords make a reference) such shared words keep
/// summaries in working memory; the benchmark measures the engine, not that rule.
fn topic_word(effort: usize, salt: usize) -> String {
    const SYLLABLES: [&str; 8] = ["ka", "lo", "mi", "ru", "ta", "ve", "zo", "pe"];
    let mut value = effort * 3 + salt;
    let mut word = String::new();
    for _ in 0..4 {
        word.push_str(SYLLABLES[value % SYLLABLES.len()]);
        value /= SYLLABLES.len();
    }
    format!("{word}{salt}{}", value % 10)
}

/// Builds a session with about `messages` stored messages: efforts of ten exchanges that are
/// concluded, with ambient chat in between, and every tenth effort recalled by search.
fn session_with(messages: usize) -> Session {
    let mut session = Session::new(Config::default()).expect("default configuration is valid");
    let mut effort = 0usize;
    while session.stored_message_count() < messages {
        let words = [
            topic_word(effort, 1),
            topic_word(effort, 2),
            topic_word(effort, 3),
        ];
        let name = format!("task {}", words[0]);
        session
            .begin_turn(&format!("Let's work on {name}."), 0)
            .unwrap();
        session.execute_tool("open_effort", &format!(r#"{{"name": "{name}"}}"#));
        session
            .end_turn("Started; what do the logs say?", 0)
            .unwrap();
        for i in 0..8 {
            session
                .begin_turn(
                    &format!(
                        "Step {i}: the {} rejects the {} when nested deeper than {i}.",
                        words[1], words[2]
                    ),
                    0,
                )
                .unwrap();
            session
                .end_turn(
                    &format!(
                        "Then relax the {} check and add a case for level {i}.",
                        words[1]
                    ),
                    0,
                )
                .unwrap();
        }
        session.begin_turn("Done, thanks.", 0).unwrap();
        let summary = format!(
            "{}: relaxed the {} check for nested {}; cases added.",
            words[0], words[1], words[2]
        );
        session.execute_tool("close_effort", &format!(r#"{{"summary": "{summary}"}}"#));
        session.end_turn("Concluded.", 0).unwrap();
        for _ in 0..5 {
            session
                .begin_turn("How is the weather looking for the weekend?", 0)
                .unwrap();
            session
                .end_turn("Mostly sunny with a chance of rain on Sunday.", 0)
                .unwrap();
        }
        if effort % 10 == 9 {
            let old = topic_word(effort / 2, 2);
            session
                .begin_turn(&format!("What did we change about the {old}?"), 0)
                .unwrap();
            session.execute_tool("search_efforts", &format!(r#"{{"query": "{old}"}}"#));
            session.end_turn("We relaxed its check.", 0).unwrap();
        }
        effort += 1;
    }
    session
}

/// Median time of one call, measured over `SAMPLES` samples of `iterations` calls each.
fn median_per_call(iterations: u32, mut f: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed() / iterations
        })
        .collect();
    samples.sort();
    samples[SAMPLES / 2]
}

/// The peer: the context an everything-in-context approach builds, by walking every stored
/// message of the session.
fn naive_full_history(session: &Session) -> u64 {
    let mut tokens = 0u64;
    let mut bytes = 0usize;
    for message in session.ambient() {
        tokens += u64::from(message.tokens);
        bytes += message.content.len();
    }
    for effort in session.efforts() {
        for message in &effort.messages {
            tokens += u64::from(message.tokens);
            bytes += message.content.len();
        }
    }
    black_box(bytes);
    tokens
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    println!(
        "CCM per-turn cost against stored history (median of {SAMPLES} samples; release build)\n"
    );
    println!("| stored messages | efforts | plan build µs | ratio to 1k | full turn µs | ratio to 1k | compaction check µs | ratio to 1k | naive full-history walk µs | ratio to 1k | working ctx tokens | naive tokens |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let counter = default_counter(Encoding::O200kBase);
    let mut base: Option<(f64, f64, f64, f64)> = None;
    let mut largest: Option<Session> = None;
    for size in SIZES {
        let session = session_with(size);
        let plan_time = median_per_call(200, || {
            black_box(session.build_plan());
        });
        let mut turn_session = session.clone();
        // "task" is in every effort's name: a word whose postings grow with the history,
        // which automatic retrieval must not pay for on every request.
        let turn_time = median_per_call(200, || {
            turn_session
                .begin_turn("A quick question about the task list for lunch.", 0)
                .unwrap();
            black_box(turn_session.end_turn("Soup sounds good.", 0).unwrap());
        });
        let naive_time = median_per_call(20, || {
            black_box(naive_full_history(&session));
        });
        let mut probe = session.clone();
        let check_time = median_per_call(200, || {
            black_box(probe.compact_if_needed(0));
        });
        let (p, t, n, c) = (
            micros(plan_time),
            micros(turn_time),
            micros(naive_time),
            micros(check_time),
        );
        let (bp, bt, bn, bc) = *base.get_or_insert((p, t, n, c));
        println!(
            "| {} | {} | {p:.1} | {:.2} | {t:.1} | {:.2} | {c:.1} | {:.2} | {n:.1} | {:.2} | {} | {} |",
            session.stored_message_count(),
            session.efforts().len(),
            p / bp,
            t / bt,
            c / bc,
            n / bn,
            session.working_tokens(),
            session.naive_tokens(),
        );
        largest = Some(session);
    }

    let session = largest.expect("at least one size");
    let plan = session.build_plan();
    let texts: Vec<&str> = plan.messages.iter().map(|m| m.content.as_str()).collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let recount = median_per_call(20, || {
        black_box(texts.iter().map(|t| counter.count(t) as u64).sum::<u64>());
    });
    let stored = median_per_call(2_000, || {
        black_box(plan.included.iter().map(|i| i.tokens).sum::<u64>());
    });
    let tokens = plan.totals.context_tokens as f64;
    println!(
        "\nCounting the working context ({} tokens, {bytes} bytes, {} messages):",
        plan.totals.context_tokens,
        plan.messages.len()
    );
    println!("| method | µs per context | tokens per second | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| re-tokenize with the exact counter (o200k_base) | {:.1} | {:.0} | 1.00 |",
        micros(recount),
        tokens / recount.as_secs_f64()
    );
    println!(
        "| add stored counts (CCM) | {:.3} | {:.0} | {:.0}× faster |",
        micros(stored),
        tokens / stored.as_secs_f64().max(1e-12),
        recount.as_secs_f64() / stored.as_secs_f64().max(1e-12)
    );
}
