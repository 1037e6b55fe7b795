//! A scripted conversation of 44 turns with seven efforts — opened, switched, concluded,
//! expanded, collapsed, decayed, evicted, found again by search — run twice: once against the
//! real mock server with the tool calls a well-behaved model makes, once with the offline demo
//! model deciding by itself. Both runs write their per-turn metrics; the test checks the
//! working context's ceiling and its savings against the naive full history, and that the
//! offline model made the same calls and reached the same effort states after every turn.

mod common;

use ccm_core::metrics::{EventKind, TurnMetrics};
use ccm_core::Session;
use ccm_engine::offline::OFFLINE_MODEL_NAME;
use ccm_engine::{EngineSettings, TurnResult};
use ccm_mock_llm::{ScriptedReply, ScriptedToolCall};
use ccm_native::{
    metrics_to_csv, metrics_to_json, run_blocking_turn, CancelToken, OfflineResponder,
};
use ccm_provider::ProviderKind;
use serde_json::{json, Value};

/// One turn of the script: what the person says, the tool calls of each round a well-behaved
/// model makes, the summary it writes when asked, and its final text.
struct ScriptTurn {
    user: &'static str,
    rounds: Vec<Vec<(&'static str, Value)>>,
    summary: Option<&'static str>,
    reply: &'static str,
}

fn say(user: &'static str, reply: &'static str) -> ScriptTurn {
    ScriptTurn {
        user,
        rounds: Vec::new(),
        summary: None,
        reply,
    }
}

fn act(user: &'static str, calls: Vec<(&'static str, Value)>, reply: &'static str) -> ScriptTurn {
    ScriptTurn {
        user,
        rounds: vec![calls],
        summary: None,
        reply,
    }
}

fn close(
    user: &'static str,
    calls: Vec<(&'static str, Value)>,
    summary: &'static str,
    reply: &'static str,
) -> ScriptTurn {
    ScriptTurn {
        user,
        rounds: vec![calls],
        summary: Some(summary),
        reply,
    }
}

fn script() -> Vec<ScriptTurn> {
    const BILLING_DETAILS: &str = "Remind me of the details of the billing export rounding.";
    const TOKEN_QUESTION: &str =
        "Remind me what we decided about the refresh token expiry earlier?";
    vec![
        say("Hi! I have a few things to sort out this week.", "Happy to help."),
        act(
            "Let's work on the auth bug: users get 401 errors after an hour.",
            vec![("open_effort", json!({"name": "auth bug"}))],
            "Started. What is the token lifetime?",
        ),
        say("The refresh token TTL is 3600 seconds in config/auth.yaml.", "That matches the hour."),
        say("The mobile client never calls the refresh endpoint before expiry.", "Noted."),
        act(
            "Help me with the billing export: the CSV totals are off by one cent.",
            vec![("open_effort", json!({"name": "billing export"}))],
            "Started the billing export.",
        ),
        say("Rounding happens per line item instead of on the invoice total.", "Noted."),
        act(
            "Back to the auth bug.",
            vec![("switch_effort", json!({"id": "auth-bug"}))],
            "Switched.",
        ),
        close(
            "Raised the TTL to 86400 and added a refresh call at 80 percent of the lifetime. That's resolved.",
            vec![("close_effort", json!({"id": "auth-bug"}))],
            "Users got 401 errors after an hour: the refresh token TTL was 3600 seconds in config/auth.yaml. Raised it to 86400 and added a refresh call at 80 percent of the lifetime.",
            "Concluded.",
        ),
        // Concluding the active auth bug made billing-export, the effort still open, active:
        // there is nothing to switch.
        say("Back to the billing export.", "We are on it."),
        say("We switched to banker's rounding on the invoice total in export.py.", "Noted."),
        ScriptTurn {
            user: "The export is finished. Let's work on the docs site: the sidebar links are broken.",
            rounds: vec![vec![
                ("close_effort", json!({"id": "billing-export"})),
                ("open_effort", json!({"name": "docs site"})),
            ]],
            summary: Some("Billing export CSV totals were off by one cent; switched to banker's rounding on the invoice total in export.py."),
            reply: "Concluded the export and started the docs site.",
        },
        say("The sidebar uses relative paths that break under /v2/.", "Noted."),
        act(
            "Remind me exactly what the TTL was in the auth bug?",
            vec![("expand_effort", json!({"id": "auth-bug"}))],
            "It was 3600 seconds.",
        ),
        act(
            "Got it, thanks.",
            vec![("collapse_effort", json!({"id": "auth-bug"}))],
            "Collapsed.",
        ),
        say("Switching the sidebar to absolute paths fixed most links.", "Good."),
        act(
            BILLING_DETAILS,
            vec![("expand_effort", json!({"id": "billing-export"}))],
            "Rounding moved to the invoice total.",
        ),
        say("The search box on the docs site also needs a debounce.", "Noted."),
        say("Added a 300 ms debounce to the search input.", "Good."),
        // The expanded billing export goes unmentioned for three turns and collapses here.
        say("Theme colours in dark mode look washed out.", "Noted."),
        close(
            "The docs site is done.",
            vec![("close_effort", json!({"id": "docs-site"}))],
            "Docs site: sidebar links broke under /v2/ with relative paths; absolute paths fixed them. Added a 300 ms debounce to the search input.",
            "Concluded.",
        ),
        act(
            "Let's work on the pricing page: the yearly toggle shows monthly prices.",
            vec![("open_effort", json!({"name": "pricing page"}))],
            "Started.",
        ),
        say("The toggle reads plan.interval but the API sends billing_period.", "That is the mismatch."),
        say("Mapped billing_period to interval in pricing.ts.", "Good."),
        close(
            "That's resolved.",
            vec![("close_effort", json!({"id": "pricing-page"}))],
            "Pricing page yearly toggle showed monthly prices: plan.interval vs billing_period; mapped billing_period to interval in pricing.ts.",
            "Concluded.",
        ),
        act(
            "Let's work on the search index: queries for refund return nothing.",
            vec![("open_effort", json!({"name": "search index"}))],
            "Started.",
        ),
        say("The tokenizer drops words shorter than seven letters.", "That would drop refund."),
        say("Lowered the minimum length to three in indexer.rs.", "Good."),
        act("What's the status?", vec![("effort_status", json!({}))], "Here it is."),
        close(
            "We're done with the search index.",
            vec![("close_effort", json!({"id": "search-index"}))],
            "Search index: queries for refund returned nothing because the tokenizer dropped short words; lowered the minimum length to three in indexer.rs.",
            "Concluded.",
        ),
        say("How is everyone holding up?", "All fine here."),
        say("Any tips for a quiet Friday?", "Take a walk."),
        act(
            "Let's work on the release notes: version 2.4 ships Monday.",
            vec![("open_effort", json!({"name": "release notes"}))],
            "Started.",
        ),
        // The auth bug's summary has gone 20 turns without a reference and leaves memory here.
        say("The notes need a short upgrade section.", "Noted."),
        say("Add a thank-you line for the beta testers.", "Added."),
        close(
            "The release notes are done.",
            vec![("close_effort", json!({"id": "release-notes"}))],
            "Release notes for version 2.4 shipping Monday, with an upgrade section and thanks to the beta testers.",
            "Concluded.",
        ),
        say("Quick question about lunch plans.", "Anything but pizza."),
        act(
            TOKEN_QUESTION,
            vec![("search_efforts", json!({"query": TOKEN_QUESTION}))],
            "Found it in the auth bug.",
        ),
        ScriptTurn {
            user: BILLING_DETAILS,
            rounds: vec![
                vec![("search_efforts", json!({"query": BILLING_DETAILS}))],
                vec![("expand_effort", json!({"id": "billing-export"}))],
            ],
            summary: None,
            reply: "Rounding moved to the invoice total.",
        },
        act(
            "Got it.",
            vec![("collapse_effort", json!({"id": "billing-export"}))],
            "Collapsed.",
        ),
        act(
            "Let's work on the onboarding emails: the welcome mail is sent twice.",
            vec![("open_effort", json!({"name": "onboarding emails"}))],
            "Started.",
        ),
        say("The signup handler and the queue worker both send it.", "That is the duplicate."),
        close(
            "Removed the send from the signup handler. We're finished.",
            vec![("close_effort", json!({"id": "onboarding-emails"}))],
            "Onboarding welcome mail was sent twice, by the signup handler and the queue worker; removed the send from the signup handler.",
            "Concluded.",
        ),
        say("Thanks for the help today!", "Any time."),
        act("What's the status?", vec![("effort_status", json!({}))], "Here it is."),
    ]
}

/// What the mock model says after its short answer in every turn. Real answers run to a
/// paragraph or more, and that is what makes raw logs expensive; the words are chosen to be
/// neutral (no effort's keywords), so the padding changes token counts, not references.
const ANSWER_BODY: &str = "I will keep this in mind as we go on. If anything else comes up \
that changes the picture, tell me and I will take it into account; otherwise we can carry on \
with the next step whenever you like. I can also write down a short plan, go through the \
remaining open points one by one, or wait until you have looked at it yourself.";

/// Where every effort is after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EffortStates {
    active: Option<String>,
    open: Vec<String>,
    summaries_in_memory: Vec<String>,
    expanded: Vec<String>,
    evicted: Vec<String>,
}

fn states(session: &Session) -> EffortStates {
    let owned = |ids: Vec<&str>| ids.into_iter().map(str::to_string).collect();
    EffortStates {
        active: session.efforts().active_id().map(str::to_string),
        open: owned(session.efforts().open_ids()),
        summaries_in_memory: owned(session.efforts().summary_ids_in_memory()),
        expanded: owned(session.efforts().expanded_ids()),
        evicted: owned(session.efforts().evicted_ids()),
    }
}

/// The tool calls of a turn as (name, parsed arguments), in order.
fn calls_of(result: &TurnResult) -> Vec<(String, Value)> {
    result
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                serde_json::from_str(&c.arguments).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// What one run produced, turn by turn.
struct Run {
    results: Vec<TurnResult>,
    states: Vec<EffortStates>,
    session: Session,
}

impl Run {
    fn metrics(&self) -> Vec<TurnMetrics> {
        self.results
            .iter()
            .map(|r| r.report.metrics.clone())
            .collect()
    }
}

fn run_against_mock(script: &[ScriptTurn]) -> Run {
    let server = common::server();
    let mut transport = common::transport(&server, ProviderKind::OpenAiCompatible);
    let mut session = common::session();
    let mut run = Run {
        results: Vec::new(),
        states: Vec::new(),
        session: common::session(),
    };
    for (number, turn) in script.iter().enumerate() {
        for round in &turn.rounds {
            server.enqueue(ScriptedReply::tool_calls(
                round
                    .iter()
                    .map(|(name, args)| ScriptedToolCall::new(*name, args.clone()))
                    .collect(),
            ));
        }
        if let Some(summary) = turn.summary {
            server.enqueue(ScriptedReply::text(summary).for_summary_requests());
        }
        server.enqueue(ScriptedReply::text(format!("{} {ANSWER_BODY}", turn.reply)));
        let result = common::ok_turn(
            &mut session,
            turn.user,
            common::settings(true),
            &mut transport,
        );
        assert!(
            server.queued().is_empty(),
            "turn {}: the model's scripted replies were not all used",
            number + 1
        );
        for call in &result.tool_calls {
            assert!(
                call.ok,
                "turn {}: {}({}) failed: {}",
                number + 1,
                call.name,
                call.arguments,
                call.result
            );
        }
        run.states.push(states(&session));
        run.results.push(result);
    }
    run.session = session;
    run
}

fn run_offline(script: &[ScriptTurn]) -> Run {
    let mut session = common::session();
    let mut responder = OfflineResponder::new();
    let mut run = Run {
        results: Vec::new(),
        states: Vec::new(),
        session: common::session(),
    };
    for turn in script {
        let result = run_blocking_turn(
            &mut session,
            turn.user,
            EngineSettings::new(OFFLINE_MODEL_NAME),
            &mut responder,
            &CancelToken::new(),
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{:?}: {e}", turn.user));
        run.states.push(states(&session));
        run.results.push(result);
    }
    run.session = session;
    run
}

fn write_metrics(name: &str, metrics: &[TurnMetrics]) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let json_path = dir.join(format!("{name}.json"));
    let csv_path = dir.join(format!("{name}.csv"));
    std::fs::write(&json_path, metrics_to_json(metrics)).unwrap();
    std::fs::write(&csv_path, metrics_to_csv(metrics)).unwrap();
    let back: Vec<TurnMetrics> =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(back.len(), metrics.len());
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(csv.lines().count(), metrics.len() + 1);
}

#[test]
fn forty_four_turns_against_the_mock_and_the_offline_model_reach_the_same_states() {
    let script = script();
    assert!(script.len() >= 40);
    // `ccm script` ships the same conversation as its demo; keep the two in step.
    let demo = include_str!("../../ccm-cli/conversations/demo.txt");
    let demo_lines: Vec<&str> = demo
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    let users: Vec<&str> = script.iter().map(|turn| turn.user).collect();
    assert_eq!(
        demo_lines, users,
        "crates/ccm-cli/conversations/demo.txt is out of step"
    );
    let mock = run_against_mock(&script);
    let offline = run_offline(&script);
    let mock_metrics = mock.metrics();
    write_metrics("scripted-run-mock", &mock_metrics);
    write_metrics("scripted-run-offline", &offline.metrics());

    // Every effort mechanism happened.
    let events: Vec<EventKind> = mock_metrics
        .iter()
        .flat_map(|m| m.events.iter().map(|e| e.kind))
        .collect();
    for kind in [
        EventKind::Opened,
        EventKind::Switched,
        EventKind::Concluded,
        EventKind::Expanded,
        EventKind::Collapsed,
        EventKind::AutoCollapsed,
        EventKind::Evicted,
    ] {
        assert!(events.contains(&kind), "no {kind:?} event in the run");
    }
    let searched = |run: &Run| {
        run.results
            .iter()
            .flat_map(|r| &r.tool_calls)
            .filter(|c| c.name == "search_efforts")
            .map(|c| {
                c.result["results"][0]["id"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(searched(&mock), ["auth-bug", "billing-export"]);
    // Every close asked for a summary, and got one.
    let summaries = mock
        .results
        .iter()
        .flat_map(|r| &r.requests)
        .filter(|r| !r.purpose.is_answer())
        .count();
    assert_eq!(summaries, 7);

    // The offline model made the same calls and reached the same states, turn by turn.
    for (number, turn) in script.iter().enumerate() {
        assert_eq!(
            calls_of(&offline.results[number]),
            calls_of(&mock.results[number]),
            "turn {}: {:?}",
            number + 1,
            turn.user
        );
        assert_eq!(
            offline.states[number],
            mock.states[number],
            "turn {}: {:?}",
            number + 1,
            turn.user
        );
    }
    assert_eq!(
        mock.states.last().unwrap(),
        &EffortStates {
            active: None,
            open: vec![],
            // In order of conclusion: the two found again by search kept their place.
            summaries_in_memory: vec![
                "auth-bug".into(),
                "billing-export".into(),
                "search-index".into(),
                "release-notes".into(),
                "onboarding-emails".into(),
            ],
            expanded: vec![],
            evicted: vec!["docs-site".into(), "pricing-page".into()],
        }
    );

    // The working context stays small while the naive history keeps growing.
    let ceiling = mock_metrics.iter().map(|m| m.context_tokens).max().unwrap();
    let last = mock_metrics.last().unwrap();
    println!(
        "ceiling {ceiling} tokens; last turn {} of {} naive ({:.0}% saved)",
        last.context_tokens,
        last.naive_tokens,
        last.savings_vs_naive * 100.0
    );
    // Once the first efforts are concluded, every turn saves at least half of the naive
    // context, expansions included.
    for m in &mock_metrics[19..] {
        assert!(
            m.savings_vs_naive >= 0.5,
            "turn {} saved only {:.1}%",
            m.turn,
            m.savings_vs_naive * 100.0
        );
    }
    assert!(
        ceiling <= CONTEXT_CEILING,
        "the context peaked at {ceiling} tokens"
    );
    assert!(
        last.savings_vs_naive >= MIN_FINAL_SAVINGS,
        "only {:.1}% saved at the end",
        last.savings_vs_naive * 100.0
    );
    assert!(last.naive_tokens > 2 * ceiling);
    assert_eq!(mock.session.turn(), script.len() as u64);
}

/// The most tokens the working context may hold in any turn of the script. The run peaks at
/// about 1,650 (o200k) while an expanded effort sits next to the open one; the margin absorbs
/// small changes to the system prompt, not a context that grows with the history.
const CONTEXT_CEILING: u64 = 2_000;

/// The share of the naive context the last turn must save (the run ends near 68%).
const MIN_FINAL_SAVINGS: f64 = 0.6;
