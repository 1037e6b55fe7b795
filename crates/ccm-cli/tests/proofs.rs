//! The scripted proof runs must show what their specification tables promise.

use ccm_cli::proof::{self, ProofRow, ProofRun};
use ccm_core::tokens::{default_counter, Encoding};
use ccm_core::{Config, Profile};

fn row<'a>(run: &'a ProofRun, step: &str) -> &'a ProofRow {
    run.rows
        .iter()
        .find(|r| r.step == step)
        .unwrap_or_else(|| panic!("{} has no row {step}", run.name))
}

fn o200k() -> std::sync::Arc<dyn ccm_core::TokenCounter> {
    default_counter(Encoding::O200kBase)
}

/// Every proof must show the specification's outcome under the defaults and under the seed
/// profile (the seeds' literal reference rule, no token budgets, no automatic recall, search
/// by keyword overlap).
/// The tokens of an effort's raw log and of its summary.
fn raw_and_summary_tokens(session: &ccm_core::Session, effort: &str) -> (i64, i64) {
    let effort = session.efforts().get(effort).unwrap();
    let summary = effort.summary.as_ref().unwrap();
    (effort.raw_tokens as i64, i64::from(summary.tokens))
}

fn both_rules() -> [Config; 2] {
    [Config::default(), Profile::Seed.config()]
}

#[test]
fn slice2_expansion_is_exact_temporary_and_multi_effort_routing_works() {
    for config in both_rules() {
        let (run, session) = proof::slice2(config, o200k());
        assert!(run.tool_errors.is_empty(), "{:?}", run.tool_errors);
        let (raw, summary) = raw_and_summary_tokens(&session, "auth-bug");
        // Expansion adds exactly the raw log (replacing its summary); collapse removes exactly it.
        assert_eq!(row(&run, "Turn 2").tool_delta, raw - summary);
        assert_eq!(row(&run, "Turn 2").expanded, ["auth-bug"]);
        assert!(row(&run, "Turn 2").banners.contains(&format!(
            "--- Expanded effort: auth-bug ({raw} tokens loaded) ---"
        )));
        assert_eq!(row(&run, "Turn 4").tool_delta, -(raw - summary));
        assert!(row(&run, "Turn 4").expanded.is_empty());
        // Without expansion the context is compact: turn 4 is back near the setup level.
        assert!(row(&run, "Turn 4").context_tokens < row(&run, "Turn 3").context_tokens);
        assert_eq!(row(&run, "Turn 6").open, ["guild-feature", "api-refactor"]);
        assert_eq!(row(&run, "Turn 7").active.as_deref(), Some("guild-feature"));
        assert_eq!(
            row(&run, "Turn 7").tool_delta,
            0,
            "switching changes no tokens"
        );
        // The active effort received turn 8; the backgrounded one did not.
        let guild = session.efforts().get("guild-feature").unwrap();
        assert!(guild
            .messages
            .iter()
            .any(|m| m.content.contains("fifty members")));
        let api = session.efforts().get("api-refactor").unwrap();
        assert!(!api
            .messages
            .iter()
            .any(|m| m.content.contains("fifty members")));
    }
}

#[test]
fn slice3_decay_fires_at_exactly_the_threshold_and_re_expansion_works() {
    for config in both_rules() {
        let (run, session) = proof::slice3(config, o200k());
        assert!(run.tool_errors.is_empty(), "{:?}", run.tool_errors);
        assert_eq!(row(&run, "Turn 1").decay, ["auth-bug: 0"]);
        assert_eq!(
            row(&run, "Turn 2").decay,
            ["auth-bug: 0"],
            "a reference resets the counter"
        );
        assert_eq!(row(&run, "Turn 3").decay, ["auth-bug: 1"]);
        assert_eq!(row(&run, "Turn 4").decay, ["auth-bug: 2"]);
        assert_eq!(row(&run, "Turn 5").decay, ["auth-bug: 3 → auto-collapse"]);
        assert_eq!(
            row(&run, "Turn 5").banners,
            ["--- Auto-collapsed effort: auth-bug (inactive for 3 turns) ---"]
        );
        let (raw, summary) = raw_and_summary_tokens(&session, "auth-bug");
        // Tokens freed by decay equal the raw log (less the summary that returns), plus the turn's
        // own exchange.
        let exchange5 = row(&run, "Turn 5").delta + (raw - summary);
        assert!(
            exchange5 > 0 && exchange5 < 60,
            "turn 5 delta {} should be -(raw - summary) plus one short exchange",
            row(&run, "Turn 5").delta
        );
        assert!(row(&run, "Turn 6").expanded.is_empty());
        assert_eq!(row(&run, "Turn 7").expanded, ["auth-bug"]);
        assert_eq!(row(&run, "Turn 7").tool_delta, raw - summary);
        assert_eq!(run.decay.auto_collapses, 1);
        // Decay kept the log out of turn 6's context only (turn 7 expanded it again), and the
        // summary stood in for it there.
        assert_eq!(run.decay.tokens_saved_by_decay, (raw - summary) as u64);
    }
}

#[test]
fn slice4_evicts_unreferenced_summaries_and_recalls_them_through_search() {
    for config in both_rules() {
        let (run, session) = proof::slice4(config, o200k());
        assert!(run.tool_errors.is_empty(), "{:?}", run.tool_errors);
        assert_eq!(row(&run, "Setup").summaries_in_memory, 5);
        assert_eq!(row(&run, "Setup").ambient_exchanges_in_memory, 10);
        assert_eq!(row(&run, "Turn 20").summaries_in_memory, 2);
        assert_eq!(row(&run, "Turn 21").summaries_in_memory, 2);
        assert_eq!(
            session.efforts().evicted_ids(),
            ["deploy-pipeline", "image-resize"]
        );
        // The turn's messages name neither the effort nor its keywords: the search result alone
        // finds it and brings it back.
        assert_eq!(
            row(&run, "Turn 22").found.first().map(String::as_str),
            Some("email-bounce")
        );
        assert_eq!(
            row(&run, "Turn 22").summaries_in_memory,
            3,
            "search brings email-bounce back"
        );
        assert_eq!(row(&run, "Turn 23").expanded, ["email-bounce"]);
        assert_eq!(
            row(&run, "Turn 26").decay,
            ["email-bounce: 3 → auto-collapse"]
        );
        assert_eq!(row(&run, "Turn 26").summaries_in_memory, 3);
        assert!(run.rows.iter().all(|r| r.ambient_exchanges_in_memory <= 10));
        // The ceiling: after setup the context never exceeds the setup level by much, while the
        // naive baseline only grows.
        let setup = row(&run, "Setup").context_tokens;
        assert!(
            run.max_context_tokens <= setup + setup / 5,
            "max {} vs setup {setup}",
            run.max_context_tokens
        );
        assert!(run.final_naive_tokens > 2 * run.max_context_tokens);
    }
}

/// Slice 4 at scale: 1,000 turns and 200 efforts. The working memory ceiling stays flat while the
/// history grows twentyfold. Native only: it drives 1,000 turns and the browser suite keeps to
/// the representative runs above.
#[test]
fn slice4_long_run_has_a_flat_ceiling_over_1000_turns_and_200_efforts() {
    for config in both_rules() {
        let default_rule = config == Config::default();
        let (run, session) = proof::slice4_long(config, o200k(), 1000, 200);
        assert!(run.tool_errors.is_empty(), "{:?}", run.tool_errors);
        assert_eq!(session.efforts().all().len(), 200);
        assert_eq!(session.turn(), 1000);
        assert_eq!(session.stored_message_count(), 2000);
        let early = run
            .rows
            .iter()
            .filter(|r| r.turn <= 300)
            .map(|r| r.context_tokens)
            .max()
            .unwrap();
        let late = run
            .rows
            .iter()
            .filter(|r| r.turn > 500)
            .map(|r| r.context_tokens)
            .max()
            .unwrap();
        assert!(
            late <= early + early / 10,
            "ceiling grew: early max {early}, late max {late}"
        );
        let first = &run.rows[0];
        let last = run.rows.last().unwrap();
        assert!(
            last.naive_tokens > 5 * first.naive_tokens,
            "history must grow: {} -> {}",
            first.naive_tokens,
            last.naive_tokens
        );
        assert!(
            run.decay.auto_collapses > 20,
            "recalls expand and decay: {:?}",
            run.decay
        );
        assert!(
            session.efforts().evicted_ids().len() > 180,
            "old summaries leave working memory"
        );
        // Every stored message is still there, exactly once.
        let mut seqs: Vec<u64> = session
            .ambient()
            .messages()
            .iter()
            .map(|m| m.seq)
            .chain(
                session
                    .efforts()
                    .all()
                    .iter()
                    .flat_map(|e| e.messages.iter().map(|m| m.seq)),
            )
            .collect();
        seqs.sort_unstable();
        assert!(seqs.iter().copied().eq(0..2000));
        if default_rule {
            assert_readme_matches_slice4_long(&run, &session);
        }
    }
}

/// The README's "Slice 4 at scale" figures are those of the run under the default rule:
/// the working context's lowest and highest values each rounded to fifty tokens, the naive
/// baseline to a thousand, the saving to a whole percent.
fn assert_readme_matches_slice4_long(run: &ProofRun, session: &ccm_core::Session) {
    let readme = readme();
    assert_readme_says(
        &readme,
        &format!(
            "{} turns, {} efforts, {} stored messages",
            grouped(session.turn()),
            grouped(session.efforts().all().len() as u64),
            grouped(session.stored_message_count() as u64)
        ),
    );
    let contexts = || run.rows.iter().map(|r| r.context_tokens);
    let nearest_50 = |n: u64| (n + 25) / 50 * 50;
    let low = nearest_50(contexts().min().unwrap());
    let high = nearest_50(contexts().max().unwrap());
    assert_readme_says(
        &readme,
        &format!("stays between about {low} and {high} tokens"),
    );
    let last = run.rows.last().unwrap();
    let naive = (last.naive_tokens as f64 / 1000.0).round() as u64 * 1000;
    let saved = (100.0 * (1.0 - last.context_tokens as f64 / last.naive_tokens as f64)).round();
    assert_readme_says(
        &readme,
        &format!(
            "grows to about {} tokens ({saved}% saved at the end)",
            grouped(naive)
        ),
    );
}

/// The same proof run counted with cl100k_base (the original CCM's encoding) shows the same
/// behaviour with different counts.
#[test]
fn proofs_run_with_cl100k_too() {
    let (run, _) = proof::slice3(Config::default(), default_counter(Encoding::Cl100kBase));
    let (o200k_run, _) = proof::slice3(Config::default(), o200k());
    assert_eq!(run.rows.len(), o200k_run.rows.len());
    assert_eq!(
        run.rows.iter().map(|r| &r.decay).collect::<Vec<_>>(),
        o200k_run.rows.iter().map(|r| &r.decay).collect::<Vec<_>>()
    );
    assert_ne!(
        run.rows
            .iter()
            .map(|r| r.context_tokens)
            .collect::<Vec<_>>(),
        o200k_run
            .rows
            .iter()
            .map(|r| r.context_tokens)
            .collect::<Vec<_>>()
    );
}

/// The README, with every run of whitespace made one space, so that its sentences can be
/// searched whatever their line breaks.
fn readme() -> String {
    include_str!("../../../README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A number as the README writes it: thousands separated by commas.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn assert_readme_says(readme: &str, sentence: &str) {
    assert!(
        readme.contains(sentence),
        "the README's proof section does not say {sentence:?}; update it from `ccm proof all`"
    );
}

/// The long compaction run: 300 turns with attachments of several thousand tokens against an
/// 8k window never exceeds the budget, fires every level, and deletes nothing.
#[test]
fn compaction_run_stays_in_budget_fires_every_level_and_keeps_every_byte() {
    for config in both_rules() {
        compaction_run_holds_under(config);
    }
}

fn compaction_run_holds_under(config: Config) {
    let (run, session) = proof::compaction_run(config, o200k(), 300);
    assert!(
        run.peak_tokens <= run.request_budget,
        "peak {} over budget {}",
        run.peak_tokens,
        run.request_budget
    );
    for level in [1u8, 2, 3] {
        assert!(
            run.rows.iter().any(|r| r.level == level),
            "level {level} never fired"
        );
    }
    assert!(run.rows.iter().all(|r| r.tokens_after < r.tokens_before));
    assert!(run.attachments >= 50);
    assert_eq!(run.attachments, run.attachments_sent.len());

    // Every byte: the stored messages, in sequence order, are exactly the texts sent, and every
    // attachment keeps its full text.
    let mut stored: Vec<&ccm_core::Message> = session
        .ambient()
        .messages()
        .iter()
        .chain(
            session
                .efforts()
                .all()
                .iter()
                .flat_map(|e| e.messages.iter()),
        )
        .collect();
    stored.sort_by_key(|m| m.seq);
    assert_eq!(stored.len(), run.messages_sent.len());
    for (message, sent) in stored.iter().zip(&run.messages_sent) {
        assert!(
            message.content == *sent,
            "message {} changed: {:?} stored, {sent:?} sent",
            message.seq,
            message.content
        );
    }
    for (id, text) in &run.attachments_sent {
        let kept = &session.attachments().by_id()[id].attachment.full_text;
        assert!(kept == text, "attachment {id} lost bytes");
    }
    let sent_bytes: usize = run.messages_sent.iter().map(String::len).sum::<usize>()
        + run
            .attachments_sent
            .iter()
            .map(|(_, t)| t.len())
            .sum::<usize>();
    assert_eq!(run.stored_bytes, sent_bytes);

    // The "stored messages" column counts what is stored after each compaction's turn: the
    // messages of that turn and of every turn before it.
    for row in &run.rows {
        let expected = stored.iter().filter(|m| m.turn <= row.turn).count();
        assert_eq!(row.stored_messages, expected, "turn {}", row.turn);
    }
    let table = run.to_markdown();
    assert!(table.contains("| 3 emergency |"), "{table}");

    // The README's figures are this run's.
    let readme = readme();
    assert_readme_says(
        &readme,
        &format!("{} turns with {} attachments", run.turns, run.attachments),
    );
    assert_readme_says(
        &readme,
        &format!(
            "{}-token window ({}-token request budget)",
            grouped(u64::from(run.context_window)),
            grouped(run.request_budget)
        ),
    );
    assert_readme_says(
        &readme,
        &format!(
            "{} compactions at all three levels, a peak working context of {} tokens",
            run.rows.len(),
            grouped(run.peak_tokens)
        ),
    );
    assert_readme_says(
        &readme,
        &format!(
            "all {} KB of messages and attachment texts",
            (run.stored_bytes as f64 / 1000.0).round()
        ),
    );
}

/// `ccm proof` as a person runs it: the printed table has the documented columns and one row
/// per step with the run's own figures, under the defaults and the seed profile; the JSON form
/// holds every run and the compaction table.
#[test]
fn ccm_proof_prints_the_tables_of_the_runs() {
    let ccm = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_ccm"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    for (flags, config) in [
        (&[][..], Config::default()),
        (&["--profile", "seed"][..], Profile::Seed.config()),
    ] {
        let mut args = vec!["proof", "slice3"];
        args.extend_from_slice(flags);
        let printed = ccm(&args);
        let (run, _) = proof::slice3(config, o200k());
        let lines: Vec<&str> = printed.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(
            lines[0],
            "| Step | Turn | Action | Expanded | Summaries in WM | Ambient in WM | Open (active last) | Context tokens | Delta | Tool delta | Decay counter |"
        );
        assert_eq!(lines.len(), 2 + run.rows.len(), "{printed}");
        for (line, row) in lines[2..].iter().zip(&run.rows) {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells[0], row.step);
            assert_eq!(cells[1], row.turn.to_string());
            assert_eq!(cells[7], row.context_tokens.to_string(), "{line}");
        }
    }
    let compaction = ccm(&["proof", "compaction", "--profile", "seed"]);
    assert!(compaction.contains("| Turn | Level | Trigger usage | Tokens before | Tokens after | Items moved | Stored messages |"), "{compaction}");
    let json: serde_json::Value = serde_json::from_str(&ccm(&["proof", "all", "--json"])).unwrap();
    let names: Vec<&str> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["slice2", "slice3", "slice4", "slice4-long"]);
    assert!(!json["compaction"]["rows"].as_array().unwrap().is_empty());
}

/// The README says every proof table is the same under the seed profile as under the
/// defaults, row for row: the scripted runs decide alike under both reference rules and
/// reach no token budget.
#[test]
fn the_seed_profile_prints_the_same_tables_as_the_defaults() {
    let seed = Profile::Seed.config();
    let runs = |config: Config| {
        [
            proof::slice2(config.clone(), o200k()).0.to_markdown(),
            proof::slice3(config.clone(), o200k()).0.to_markdown(),
            proof::slice4(config.clone(), o200k()).0.to_markdown(),
            proof::slice4_long(config.clone(), o200k(), 1000, 200)
                .0
                .to_markdown(),
            proof::compaction_run(config, o200k(), 300).0.to_markdown(),
        ]
    };
    let (defaults, seeds) = (runs(Config::default()), runs(seed));
    for (default, seed) in defaults.iter().zip(&seeds) {
        assert!(
            default == seed,
            "the tables differ:\n{default}\n---\n{seed}"
        );
    }
}
