//! The context planner, driven by scripts: a list of turns and operations, and at chosen
//! moments the plan expected then, written as one line per item.
//!
//! A plan is written in the order the planner placed its items, included ones first:
//!
//! ```text
//! in  system                 system_prompt        permanent
//! in  summary:auth-bug       recently_referenced  eviction 18
//! out effort:auth-bug        summarized
//! in  ambient:3..12           ambient_window       permanent
//! out ambient:before:3       outside_ambient_window  ×4
//! ```
//!
//! `in` lines give the item's id, the reason code and how long it stays without a new
//! reference (its TTL); `out` lines give the id and the reason, and `×n` when the line stands
//! for n stored messages, turns or efforts. Consecutive ambient exchanges included alike are
//! one line, `in ambient:20..29 ambient_window permanent`. Columns are separated by any run of spaces. Every
//! expected plan lists every item, so an item that appears or leaves unexpectedly fails the
//! script; a failure prints both plans line by line, marking what only the script expected
//! (`<`) and what only the planner produced (`>`).
//!
//! Whatever a script expects, the runner also checks the plan's own accounts at every
//! checkpoint: the context total is the sum of the included items, the excluded total that of
//! the excluded ones, and the session's working tokens are the plan's working set (its
//! context without what the automatic recall adds for the message being answered).

use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::plan::TtlState;
use ccm_core::{Config, ContextMode, ContextPlan, Session};
use ccm_test_support::{chatter, concluded_effort, portable_tests, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";
const MAIL_SUMMARY: &str =
    "Email bounces: soft bounces retried three times, hard bounces suppressed via webhook.";

/// One step of a script.
enum Step {
    /// A whole turn: the user's message, the tool calls the model makes, its answer. A tool
    /// call that fails stops the script.
    Turn(
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
    ),
    /// This many neutral exchanges, which reference nothing.
    Chatter(usize),
    /// An effort opened, this many exchanges in it, and concluded with the summary.
    Concluded(&'static str, &'static str, usize),
    /// The user's message sent and the turn left running, so the next plan is the request
    /// that answers it.
    Begin(&'static str),
    /// The running turn ends with this answer.
    End(&'static str),
    /// A pin made by the person or the model: its target, kind and lease in turns (`None`:
    /// the kind's default).
    Pin(PinOrigin, &'static str, PinKind, Option<u32>),
    /// The targets pinned now, in the order they were pinned.
    Pins(&'static [&'static str]),
    /// The plan now.
    Expect(&'static str),
    /// One line of the plan now, where the rest of it is not the point.
    Has(&'static str),
}

/// A script: the configuration it starts from, and its steps.
struct Script {
    name: &'static str,
    config: Config,
    steps: Vec<Step>,
}

/// The plan in the scripts' notation, one line per item.
fn written(plan: &ContextPlan) -> Vec<String> {
    let included = plan.included.iter().map(|item| {
        let ttl = match &item.ttl {
            TtlState::Decay { turns } => format!("decay {turns}"),
            TtlState::Eviction { turns } => format!("eviction {turns}"),
            TtlState::Lease { turns } => format!("lease {turns}"),
            TtlState::Task { effort } => format!("task {effort}"),
            TtlState::Ephemeral => "ephemeral".to_string(),
            TtlState::Permanent => "permanent".to_string(),
        };
        format!("in {} {} {ttl}", item.id, item.reason.code())
    });
    let excluded = plan.excluded.iter().map(|item| match item.count {
        1 => format!("out {} {}", item.id, item.reason.code()),
        count => format!("out {} {} ×{count}", item.id, item.reason.code()),
    });
    fold_ambient_runs(included.chain(excluded).collect())
}

/// Consecutive ambient exchanges included for the same reason, written as one line
/// (`in ambient:20..29 ambient_window permanent`): a window of ten exchanges would otherwise
/// fill a script with ten lines that differ only in their number.
fn fold_ambient_runs(lines: Vec<String>) -> Vec<String> {
    // The exchange number of an `in ambient:<n> …` line, and the rest of the line.
    fn exchange(line: &str) -> Option<(u64, &str)> {
        let rest = line.strip_prefix("in ambient:")?;
        let (number, reason) = rest.split_once(' ')?;
        Some((number.parse().ok()?, reason))
    }
    let mut folded: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64, String)> = None;
    let close = |run: &mut Option<(u64, u64, String)>, folded: &mut Vec<String>| {
        if let Some((first, last, reason)) = run.take() {
            folded.push(match first == last {
                true => format!("in ambient:{first} {reason}"),
                false => format!("in ambient:{first}..{last} {reason}"),
            });
        }
    };
    for line in lines {
        match (exchange(&line), run.as_mut()) {
            (Some((n, reason)), Some((_, last, same))) if n == *last + 1 && reason == same => {
                *last = n;
            }
            (Some((n, reason)), _) => {
                close(&mut run, &mut folded);
                run = Some((n, n, reason.to_string()));
            }
            (None, _) => {
                close(&mut run, &mut folded);
                folded.push(line);
            }
        }
    }
    close(&mut run, &mut folded);
    folded
}

/// An expected plan's lines, with the columns' spacing folded and blank lines dropped.
fn expected_lines(expected: &str) -> Vec<String> {
    expected
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect()
}

/// The two plans side by side as a line diff (longest common subsequence): `  ` for a line
/// both have, `< ` for one only the script expected, `> ` for one only the planner produced.
fn line_diff(expected: &[String], actual: &[String]) -> String {
    let (n, m) = (expected.len(), actual.len());
    // common[i][j]: the longest common subsequence of expected[i..] and actual[j..].
    let mut common = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if expected[i] == actual[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < n || j < m {
        if i < n && j < m && expected[i] == actual[j] {
            out += &format!("    {}\n", expected[i]);
            (i, j) = (i + 1, j + 1);
        } else if j == m || (i < n && common[i + 1][j] >= common[i][j + 1]) {
            out += &format!("  < {}\n", expected[i]);
            i += 1;
        } else {
            out += &format!("  > {}\n", actual[j]);
            j += 1;
        }
    }
    out
}

/// The plan's own accounts, which hold whatever the script expects.
fn check_accounts(session: &Session, plan: &ContextPlan) -> Result<(), String> {
    let included: u64 = plan.included.iter().map(|i| i.tokens).sum();
    let excluded: u64 = plan.excluded.iter().map(|i| i.tokens).sum();
    if included != plan.totals.context_tokens {
        return Err(format!(
            "the included items add up to {included} tokens, the plan's context total is {}",
            plan.totals.context_tokens
        ));
    }
    if excluded != plan.totals.excluded_tokens {
        return Err(format!(
            "the excluded items add up to {excluded} tokens, the plan's excluded total is {}",
            plan.totals.excluded_tokens
        ));
    }
    if session.working_tokens() != plan.working_set_tokens() {
        return Err(format!(
            "the session's working tokens ({}) are not the plan's working set ({})",
            session.working_tokens(),
            plan.working_set_tokens()
        ));
    }
    Ok(())
}

/// Plays a script; the first step whose expectation does not hold is the error, in words.
fn run(script: Script) -> Result<(), String> {
    let mut s = Session::new(script.config).map_err(|e| e.to_string())?;
    for (number, step) in script.steps.iter().enumerate() {
        let at = format!("script '{}', step {}", script.name, number + 1);
        match step {
            Step::Turn(user, tools, assistant) => {
                turn(&mut s, user, tools, assistant);
            }
            Step::Chatter(count) => {
                for _ in 0..*count {
                    chatter(&mut s);
                }
            }
            Step::Concluded(name, summary, exchanges) => {
                concluded_effort(&mut s, name, summary, *exchanges);
            }
            Step::Begin(user) => {
                s.begin_turn(user, 0).map_err(|e| format!("{at}: {e}"))?;
            }
            Step::End(assistant) => {
                s.end_turn(assistant, 0).map_err(|e| format!("{at}: {e}"))?;
            }
            Step::Pin(origin, target, kind, ttl_turns) => {
                let request = PinRequest {
                    target: target.to_string(),
                    kind: *kind,
                    ttl_turns: *ttl_turns,
                    task: None,
                };
                s.pin(request, *origin).map_err(|e| format!("{at}: {e}"))?;
            }
            Step::Pins(expected) => {
                let pinned: Vec<&str> = s.pins().all().iter().map(|p| p.target.as_str()).collect();
                if pinned != *expected {
                    return Err(format!(
                        "{at}: pinned {pinned:?}, the script expects {expected:?}"
                    ));
                }
            }
            Step::Has(line) => {
                let actual = written(&s.build_plan());
                let line = expected_lines(line).join(" ");
                if !actual.contains(&line) {
                    return Err(format!(
                        "{at} (turn {}): the plan has no line '{line}'; it is:\n    {}",
                        s.turn(),
                        actual.join("\n    ")
                    ));
                }
            }
            Step::Expect(expected) => {
                let plan = s.build_plan();
                check_accounts(&s, &plan).map_err(|e| format!("{at}: {e}"))?;
                let (expected, actual) = (expected_lines(expected), written(&plan));
                if expected != actual {
                    return Err(format!(
                        "{at} (turn {}): the plan differs from the script (< only the script, > only the planner):\n{}",
                        s.turn(),
                        line_diff(&expected, &actual)
                    ));
                }
            }
        }
    }
    Ok(())
}

fn check(script: Script) {
    if let Err(message) = run(script) {
        panic!("{message}");
    }
}

/// Compaction off: the budget scripts watch the planner alone.
fn without_compaction(config: Config) -> Config {
    let mut config = config;
    config.compaction.enabled = false;
    config
}

portable_tests! {
    // From memory.rs: a collapsed expansion's log is `decayed`, a never-expanded one
    // `summarized`.
    fn concluded_logs_are_listed_as_summarized_or_decayed() {
        check(Script {
            name: "decayed and summarized logs",
            config: Config::default(),
            steps: vec![
                Step::Concluded("auth bug", AUTH_SUMMARY, 1),
                Step::Concluded("email bounce", MAIL_SUMMARY, 1),
                Step::Turn("Show the auth bug.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "ok"),
                Step::Chatter(3),
                Step::Expect("
                    in  system                system_prompt        permanent
                    in  summary:auth-bug      recently_referenced  eviction 17
                    in  summary:email-bounce  recently_referenced  eviction 16
                    in  ambient:7..10         ambient_window       permanent
                    out effort:auth-bug       decayed
                    out effort:email-bounce   summarized
                "),
            ],
        });
    }
}

/// auth-bug concluded in turn 4 and evicted after 25 turns of chatter: the start of the pin
/// and mode scripts.
fn evicted_auth() -> Vec<Step> {
    vec![
        Step::Concluded("auth bug", AUTH_SUMMARY, 2),
        Step::Chatter(25),
    ]
}

/// A script that starts from [`evicted_auth`].
fn after_eviction(name: &'static str, config: Config, steps: Vec<Step>) -> Script {
    let mut all = evicted_auth();
    all.extend(steps);
    Script {
        name,
        config,
        steps: all,
    }
}

portable_tests! {
    // From planner.rs.
    fn an_ephemeral_pin_lasts_one_request() {
        check(after_eviction("ephemeral pin", Config::default(), vec![
            Step::Pin(PinOrigin::User, "summary:auth-bug", PinKind::Ephemeral, None),
            Step::Begin("What is new?"),
            Step::Expect("
                in  system              system_prompt         permanent
                in  summary:auth-bug    pinned                ephemeral
                in  ambient:20..29      ambient_window        permanent
                in  pending             current_user_message  ephemeral
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
            "),
            Step::End("Nothing much."),
            Step::Pins(&[]),
            Step::Expect("
                in  system              system_prompt         permanent
                in  ambient:21..30      ambient_window        permanent
                out evicted             evicted_unreferenced
                out ambient:before:21   outside_ambient_window  ×32
            "),
        ]));
    }

    // From planner.rs.
    fn a_task_lease_ends_with_its_effort() {
        check(after_eviction("task lease", Config::default(), vec![
            Step::Turn("Start the migration.", &[("open_effort", r#"{"name": "migration"}"#), ("pin_context", r#"{"target": "summary:auth-bug", "task": "migration"}"#)], "ok"),
            Step::Turn("more migration work", &[], "ok"),
            Step::Turn("more migration work", &[], "ok"),
            Step::Turn("more migration work", &[], "ok"),
            Step::Expect("
                in  system              system_prompt         permanent
                in  summary:auth-bug    pinned                task migration
                in  ambient:20..29      ambient_window        permanent
                in  effort:migration    active_effort         permanent
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
            "),
            Step::Turn("Migration done.", &[("close_effort", r#"{"summary": "Migrated."}"#)], "ok"),
            Step::Pins(&[]),
            Step::Expect("
                in  system              system_prompt         permanent
                in  summary:migration   recently_referenced   eviction 20
                in  ambient:20..29      ambient_window        permanent
                out effort:migration    summarized
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
                out pin:1               ttl_expired
            "),
        ]));
    }

    // From planner.rs: a lease whose item does not fit the leased budget is excluded and
    // keeps its turns.
    fn a_lease_that_is_not_included_does_not_count_down() {
        let config = Config { leased_token_budget: 5, ..Config::default() };
        check(after_eviction("lease over its budget", config, vec![
            Step::Pin(PinOrigin::Model, "summary:auth-bug", PinKind::Leased, Some(2)),
            Step::Expect("
                in  system              system_prompt         permanent
                in  ambient:20..29      ambient_window        permanent
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
                out summary:auth-bug    over_budget
            "),
            Step::Chatter(5),
            Step::Pins(&["summary:auth-bug"]),
        ]));
    }

    fn a_sticky_pin_keeps_an_evicted_summary_in_working_memory() {
        check(after_eviction("sticky pin", Config::default(), vec![
            Step::Pin(PinOrigin::User, "summary:auth-bug", PinKind::Sticky, None),
            Step::Chatter(30),
            Step::Expect("
                in  system              system_prompt         permanent
                in  summary:auth-bug    pinned                permanent
                in  ambient:50..59      ambient_window        permanent
                out evicted             evicted_unreferenced
                out ambient:before:50   outside_ambient_window  ×90
            "),
        ]));
    }

    fn context_modes_decide_what_matches_the_message_pulls_in() {
        let question = "Did the refresh token TTL fix hold up?";
        let mode = |mode| Config { context_mode: mode, ..Config::default() };
        check(after_eviction("mode off", mode(ContextMode::Off), vec![
            Step::Begin(question),
            Step::Expect("
                in  system              system_prompt         permanent
                in  ambient:20..29      ambient_window        permanent
                in  pending             current_user_message  ephemeral
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
                out summary:auth-bug    mode_off
            "),
        ]));
        // Light pulls in the matching summary for this request only; the rest of the plan is
        // Off's without the exclusion.
        check(after_eviction("mode light", mode(ContextMode::Light), vec![
            Step::Begin(question),
            Step::Has("in summary:auth-bug auto_retrieved ephemeral"),
        ]));
        check(after_eviction("mode heavy", mode(ContextMode::Heavy), vec![
            Step::Begin(question),
            Step::Expect("
                in  system              system_prompt         permanent
                in  ambient:20..29      ambient_window        permanent
                in  effort:auth-bug     auto_expanded         ephemeral
                in  pending             current_user_message  ephemeral
                out evicted             evicted_unreferenced
                out ambient:before:20   outside_ambient_window  ×30
                out summary:auth-bug    superseded
            "),
        ]));
    }

    fn an_expansion_collapses_after_three_turns_without_a_reference() {
        check(Script {
            name: "expansion decay",
            config: Config::default(),
            steps: vec![
                Step::Concluded("auth bug", AUTH_SUMMARY, 1),
                Step::Turn("Show the auth bug.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "Loaded."),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  ambient:4           ambient_window        permanent
                    in  effort:auth-bug     expanded              decay 3
                    out summary:auth-bug    expanded
                "),
                Step::Chatter(2),
                Step::Has("in effort:auth-bug expanded decay 1"),
                Step::Chatter(1),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  summary:auth-bug    recently_referenced   eviction 17
                    in  ambient:4..7        ambient_window        permanent
                    out effort:auth-bug     decayed
                "),
            ],
        });
    }

    fn a_summary_leaves_working_memory_after_twenty_turns_without_a_reference() {
        check(Script {
            name: "summary eviction",
            config: Config::default(),
            steps: vec![
                Step::Concluded("auth bug", AUTH_SUMMARY, 1),
                Step::Chatter(18),
                Step::Begin("What should we cook tonight?"),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  summary:auth-bug    recently_referenced   eviction 1
                    in  ambient:12..21      ambient_window        permanent
                    in  pending             current_user_message  ephemeral
                    out effort:auth-bug     summarized
                    out ambient:before:12   outside_ambient_window  ×16
                "),
                Step::End("Sunny and mild."),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  ambient:13..22      ambient_window        permanent
                    out evicted             evicted_unreferenced
                    out ambient:before:13   outside_ambient_window  ×18
                "),
            ],
        });
    }

    fn ambient_chat_beyond_the_last_ten_exchanges_leaves_the_context() {
        check(Script {
            name: "ambient window",
            config: Config::default(),
            steps: vec![
                Step::Chatter(12),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  ambient:3..12       ambient_window        permanent
                    out ambient:before:3    outside_ambient_window  ×4
                "),
            ],
        });
    }

    fn under_budget_pressure_an_open_log_loses_its_oldest_turns_whole() {
        let config = Config { context_window: 540, reserved_output_tokens: 100, ..Config::default() };
        check(Script {
            name: "budget pressure",
            config: without_compaction(config),
            steps: vec![
                Step::Turn("Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started."),
                Step::Turn("The tokenizer splits unicode escapes in the wrong place.", &[], "Then read the escape whole."),
                Step::Turn("It also drops the surrogate pairs of emoji.", &[], "Join the pairs before decoding."),
                Step::Turn("And the line numbers drift after a multi-line string.", &[], "Count newlines inside strings too."),
                Step::Turn("What about the column of a tab?", &[], "Count a tab as one column, as editors report."),
                Step::Begin("And now?"),
                Step::Expect("
                    in  system              system_prompt         permanent
                    in  effort:parser       active_effort         permanent
                    in  pending             current_user_message  ephemeral
                    out effort:parser@before:3  over_budget       ×2
                "),
            ],
        });
    }
}

portable_tests! {
    fn a_wrong_expected_plan_fails_with_both_plans_side_by_side() {
        let wrong = Script {
            name: "wrong on purpose",
            config: Config::default(),
            steps: vec![
                Step::Concluded("auth bug", AUTH_SUMMARY, 1),
                Step::Expect("
                    in  system            system_prompt  permanent
                    out summary:auth-bug  evicted_unreferenced
                "),
            ],
        };
        let message = run(wrong).expect_err("a wrong plan must fail the script");
        assert!(message.starts_with("script 'wrong on purpose', step 2 (turn 3): the plan differs"), "{message}");
        assert!(message.contains("\n    in system system_prompt permanent\n"), "{message}");
        assert!(message.contains("\n  < out summary:auth-bug evicted_unreferenced\n"), "{message}");
        assert!(message.contains("\n  > in summary:auth-bug recently_referenced eviction 20\n"), "{message}");
        assert!(message.contains("\n  > out effort:auth-bug summarized\n"), "{message}");
        let missing = Script {
            name: "no such line",
            config: Config::default(),
            steps: vec![
                Step::Concluded("auth bug", AUTH_SUMMARY, 1),
                Step::Has("in summary:auth-bug   pinned   permanent"),
            ],
        };
        let message = run(missing).unwrap_err();
        assert!(message.starts_with("script 'no such line', step 2 (turn 3): the plan has no line 'in summary:auth-bug pinned permanent'; it is:\n    in system system_prompt permanent\n"), "{message}");
        let pins = Script {
            name: "no pins",
            config: Config::default(),
            steps: vec![Step::Pins(&["summary:auth-bug"])],
        };
        assert_eq!(run(pins).unwrap_err(), "script 'no pins', step 1: pinned [], the script expects [\"summary:auth-bug\"]");
    }

    fn the_line_diff_marks_what_each_side_has_alone() {
        let lines = |text: &str| expected_lines(text);
        let diff = line_diff(&lines("a\nb\nc"), &lines("a\nc\nd"));
        assert_eq!(diff, "    a\n  < b\n    c\n  > d\n");
        assert_eq!(line_diff(&lines(""), &lines("x")), "  > x\n");
    }
}
