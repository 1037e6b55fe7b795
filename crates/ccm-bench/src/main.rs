//! `cargo run --release -p ccm-bench`: how the per-turn cost of CCM behaves as the stored
//! history grows, measured against peers in the same run.
//!
//! Printed, for histories of 1k, 10k and 100k stored messages:
//! - building one turn's context plan (stored counts only), and its ratio to the 1k case,
//! - a whole turn (`begin_turn` + `end_turn`: routing, salience, decay, eviction, metrics),
//! - the per-turn compaction check (usage from the plan, the policy's decision),
//! - the peer: a naive builder that walks the whole history, as everything-in-context tools do,
//! - counting throughput: re-tokenizing the working context (exact counter) versus adding the
//!   stored counts, which is what CCM does,
//! - real text: the longest public ShareGPT conversations played turn by turn (as `ccm replay`
//!   plays them), the median cost of a turn in each tenth of the conversation, under the
//!   default settings and, as the peer in the same run, under the specification's literal
//!   reference rule without the working-memory budgets (what CCM did before). Needs the data
//!   that `scripts/replay-real` fetches; skipped with a note without it.
//!
//! Numbers are medians of repeated samples; the machine is shared, so read ratios, not
//! absolute times.

use ccm_core::tokens::{default_counter, Encoding};
use ccm_core::{Config, ReferenceRule, Session};
use ccm_replay::{dataset, play, report};
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
    for message in session.ambient().messages() {
        tokens += u64::from(message.tokens);
        bytes += message.content.len();
    }
    for effort in session.efforts().all() {
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
        // A plan built from scratch: the session would otherwise hand out the plan it keeps.
        let plan_time = median_per_call(200, || {
            black_box(session.build_plan_afresh());
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
        let config = probe.config().clone();
        // Setting the same configuration again changes nothing but the version the kept plan
        // is keyed on, so every check plans, as it does after a message.
        let check_time = median_per_call(200, || {
            probe.set_config(config.clone()).unwrap();
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
            session.efforts().all().len(),
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
    real_text();
}

/// Where `scripts/replay-real` keeps the ShareGPT data, unless `CCM_SHAREGPT_FILE` names it.
fn sharegpt_file() -> std::path::PathBuf {
    if let Some(file) = std::env::var_os("CCM_SHAREGPT_FILE") {
        return file.into();
    }
    let cache = std::env::var_os("CCM_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/ccm")
        });
    cache.join("sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json")
}

/// Conversations in the real-text cases: the longest ones, where growth would show.
const REAL_CONVERSATIONS: usize = 8;
/// Rounds per configuration, alternated so that a busy moment of the machine hits both.
const REAL_ROUNDS: usize = 3;

fn real_text() {
    let file = sharegpt_file();
    let Ok(bytes) = std::fs::read(&file) else {
        println!(
            "\nReal text: skipped, {} is not there (scripts/replay-real fetches it).",
            file.display()
        );
        return;
    };
    let records = match dataset::read_records(&bytes, dataset::DEFAULT_MAX_MESSAGE_BYTES) {
        Ok(read) => read.records,
        Err(error) => {
            println!("\nReal text: skipped, {}: {error}", file.display());
            return;
        }
    };
    let grouped = dataset::group(records);
    let chosen = dataset::longest(&grouped.conversations, REAL_CONVERSATIONS);
    let exchanges: usize = chosen.iter().map(|c| c.exchange_count()).sum();
    let configurations = [
        (
            "defaults (distinctive references, budgets)",
            Config::default(),
        ),
        (
            "peer: seed rule, no budgets",
            Config {
                reference_rule: ReferenceRule::Seed,
                ambient_token_budget: u32::MAX,
                summary_token_budget: u32::MAX,
                ..Config::default()
            },
        ),
    ];
    // Per configuration: every turn's nanoseconds, by conversation, over the rounds.
    let mut timings: Vec<Vec<Vec<Vec<u64>>>> = vec![Vec::new(); configurations.len()];
    let mut resident: Vec<u64> = vec![0; configurations.len()];
    for _ in 0..REAL_ROUNDS {
        for (slot, (_, config)) in configurations.iter().enumerate() {
            let mut rounds = Vec::new();
            for conversation in &chosen {
                match play::play(conversation, config.clone(), None) {
                    Ok(result) => {
                        resident[slot] = resident[slot].max(result.end_resident_summaries);
                        rounds.push(result.points.iter().map(|p| p.nanos).collect());
                    }
                    Err(error) => {
                        println!("\nReal text: {error}");
                        return;
                    }
                }
            }
            timings[slot].push(rounds);
        }
    }
    println!(
        "\nReal text: the {} longest ShareGPT conversations ({exchanges} exchanges), median µs per turn in each tenth of a conversation (median of {REAL_ROUNDS} rounds, pooled over conversations):",
        chosen.len()
    );
    println!("| settings | 1st | 2nd | 3rd | 4th | 5th | 6th | 7th | 8th | 9th | 10th | last / first | resident summaries at the end (most) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (slot, (name, _)) in configurations.iter().enumerate() {
        // The median over rounds of each turn, then the tenth's median over turns.
        let mut pooled: Vec<Vec<u64>> = vec![Vec::new(); 10];
        for conversation in 0..chosen.len() {
            let turns = timings[slot][0][conversation].len();
            for turn in 0..turns {
                let mut samples: Vec<u64> = timings[slot]
                    .iter()
                    .map(|r| r[conversation][turn])
                    .collect();
                pooled[(turn * 10 / turns.max(1)).min(9)].push(report::median(&mut samples));
            }
        }
        let tenths: Vec<u64> = pooled.iter_mut().map(|t| report::median(t)).collect();
        let cells: Vec<String> = tenths
            .iter()
            .map(|&n| format!("{:.0}", n as f64 / 1000.0))
            .collect();
        println!(
            "| {name} | {} | {:.2} | {} |",
            cells.join(" | "),
            tenths[9] as f64 / tenths[0].max(1) as f64,
            resident[slot]
        );
    }
}
