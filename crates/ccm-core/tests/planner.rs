//! The budgeted planner: budget and atoms, pins, context modes, the budget meter, activation,
//! replay and plan diffs.

use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::plan::request_hash;
use ccm_core::plan::{diff_plans, ExclusionReason, InclusionReason, TtlState};
use ccm_core::{Config, ContextMode, Section, Session};
use ccm_core::{ContextMessage, Role};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";
const MAIL_SUMMARY: &str =
    "Email bounces: soft bounces retried three times, hard bounces suppressed via webhook.";

fn session_with(config: Config) -> Session {
    Session::new(config).expect("valid configuration")
}

/// Budget tests watch the planner alone: compaction would otherwise step in first.
fn no_compaction() -> ccm_core::compaction::CompactionConfig {
    ccm_core::compaction::CompactionConfig {
        enabled: false,
        ..Default::default()
    }
}

/// auth-bug concluded and then evicted after 25 turns of chatter.
fn evicted_auth(config: Config) -> Session {
    let mut s = session_with(config);
    concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 2);
    for _ in 0..25 {
        chatter(&mut s);
    }
    assert_eq!(s.efforts().evicted_ids(), ["auth-bug"]);
    s
}

fn sticky(target: &str) -> PinRequest {
    PinRequest {
        target: target.to_string(),
        kind: PinKind::Sticky,
        ttl_turns: None,
        task: None,
    }
}

portable_tests! {
    fn a_small_budget_trims_whole_turns_oldest_first_and_keeps_the_header() {
        let config = Config { context_window: 1_000, reserved_output_tokens: 100, compaction: no_compaction(), ..Config::default() };
        let mut s = session_with(config);
        turn(&mut s, "Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started.");
        for i in 0..40 {
            turn(&mut s, &format!("Step {i}: the tokenizer splits unicode escapes in the wrong place."), &[], &format!("Then fix case {i} by reading the escape whole."));
        }
        s.begin_turn("And now?", 0).unwrap();
        let plan = s.build_plan();
        assert!(plan.totals.context_tokens <= 900, "{}", plan.totals.context_tokens);
        let log = plan.item("effort:parser").expect("the active log stays, trimmed");
        assert!(log.atoms < 42, "older turns were dropped: {}", log.atoms);
        let first = &plan.messages[log.first_message];
        assert!(first.content.starts_with("[Effort log: parser]"), "the header always leads its log");
        // Turns are whole: after the header, user and assistant alternate.
        let body = &plan.messages[log.first_message + 1..log.first_message + log.message_count];
        assert_eq!(body.len() % 2, 0);
        assert!(body.chunks(2).all(|pair| pair[0].role == ccm_core::Role::User && pair[1].role == ccm_core::Role::Assistant));
        // The newest turn is kept, and the dropped ones are reported with their tokens.
        assert_eq!(body.last().unwrap().content, "Then fix case 39 by reading the escape whole.");
        let dropped = plan.excluded.iter().find(|e| e.id.starts_with("effort:parser@before:")).unwrap();
        assert_eq!(dropped.reason, ExclusionReason::OverBudget);
        assert_eq!(dropped.count, 41 - u64::from(log.atoms - 1));
        assert_eq!(dropped.tokens + log.tokens, s.efforts().get("parser").unwrap().raw_tokens);
        assert!(plan.item("pending").is_some(), "the current message is mandatory");
        s.end_turn("ok", 0).unwrap();
        // Nothing was lost: the log is whole in storage.
        assert_eq!(s.efforts().get("parser").unwrap().messages.len(), 84);
    }

    fn ambient_exchanges_stay_contiguous_under_pressure() {
        let config = Config { context_window: 700, reserved_output_tokens: 100, compaction: no_compaction(), ..Config::default() };
        let mut s = session_with(config);
        for i in 0..10 {
            turn(&mut s, &format!("A long question number {i} about gardening, compost, soil and worms?"), &[], &format!("A long answer number {i} about compost heat, turning, moisture and patience."));
        }
        let plan = s.build_plan();
        let kept: Vec<u64> = plan.included.iter().filter(|i| i.section == Section::Ambient).map(|i| i.id.trim_start_matches("ambient:").parse().unwrap()).collect();
        assert!(!kept.is_empty() && kept.len() < 10, "{kept:?}");
        // The kept exchanges are the newest ones, without a gap.
        assert_eq!(*kept.last().unwrap(), 10);
        assert!(kept.windows(2).all(|w| w[1] == w[0] + 1), "{kept:?}");
        assert!(plan.excluded.iter().any(|e| e.section == Section::Ambient && e.reason == ExclusionReason::OverBudget));
    }

    fn a_sticky_pin_keeps_an_evicted_summary_in_and_only_the_user_makes_one() {
        let mut s = evicted_auth(Config::default());
        let pin = s.pin(sticky("summary:auth-bug"), PinOrigin::User).unwrap();
        assert_eq!(pin.kind, PinKind::Sticky);
        for _ in 0..30 {
            chatter(&mut s);
        }
        let plan = s.build_plan();
        let item = plan.item("summary:auth-bug").expect("pinned summary included");
        assert_eq!(item.reason, InclusionReason::Pinned { kind: PinKind::Sticky, pin: pin.id });
        assert_eq!(item.ttl, TtlState::Permanent);
        assert_eq!(plan.totals.pinned_tokens, item.tokens);
        let refused = s.pin(sticky("summary:auth-bug"), PinOrigin::Model).unwrap_err();
        assert!(refused.to_string().contains("only the user can make a sticky pin"), "{refused}");
        let refused = s.execute_tool("unpin_context", r#"{"target": "summary:auth-bug"}"#);
        assert!(!refused.ok);
        assert!(refused.result["error"].as_str().unwrap().contains("only the user can unpin it"));
        s.unpin("summary:auth-bug", PinOrigin::User).unwrap();
        assert!(s.build_plan().item("summary:auth-bug").is_none());
    }

    fn pin_targets_are_checked() {
        let mut s = evicted_auth(Config::default());
        for (target, expected) in [
            ("summary:nope", "no effort with id 'nope'"),
            ("auth-bug", "targets look like"),
            ("ambient:x", "is not a turn number"),
            ("ambient:9999", "has no loaded ambient exchange"),
            ("thing:auth-bug", "unknown kind 'thing'"),
        ] {
            let error = s.pin(sticky(target), PinOrigin::User).unwrap_err().to_string();
            assert!(error.contains(expected), "{target}: {error}");
        }
        let outcome = s.execute_tool("pin_context", r#"{"target": "summary:auth-bug", "ttl_turns": 500}"#);
        assert!(!outcome.ok);
        assert!(outcome.result["error"].as_str().unwrap().contains("at most 50 turns"));
        assert!(s.pins().all().is_empty(), "refused pins change nothing");
    }

    fn a_lease_counts_down_only_on_included_turns_and_reports_its_expiry() {
        let mut s = evicted_auth(Config::default());
        // The message does not name the effort: a reference would bring the summary back into
        // working memory by itself, and this test watches the lease alone.
        s.begin_turn("Keep that one around for two turns.", 0).unwrap();
        let outcome = s.execute_tool("pin_context", r#"{"target": "summary:auth-bug", "ttl_turns": 2}"#);
        assert!(outcome.ok, "{}", outcome.result);
        assert_eq!(outcome.banner.as_deref(), Some("--- Pinned: summary:auth-bug (lease) ---"));
        s.end_turn("Pinned.", 0).unwrap();
        // The pin was made during the turn; that turn's request already included it.
        let lease = |s: &Session| match &s.pins().on("summary:auth-bug").map(|p| p.lease.clone()) {
            Some(Some(ccm_core::pins::LeaseScope::Turns { remaining })) => Some(*remaining),
            _ => None,
        };
        assert_eq!(lease(&s), Some(1));
        let plan = s.build_plan();
        assert!(matches!(plan.item("summary:auth-bug").unwrap().reason, InclusionReason::Pinned { kind: PinKind::Leased, .. }));
        chatter(&mut s);
        assert_eq!(lease(&s), None, "two included turns used the lease up");
        let plan = s.build_plan();
        assert!(plan.item("summary:auth-bug").is_none());
        assert!(plan.excluded.iter().any(|e| e.id.starts_with("pin:") && e.reason == ExclusionReason::TtlExpired));
        chatter(&mut s);
        assert!(!s.build_plan().excluded.iter().any(|e| e.reason == ExclusionReason::TtlExpired), "reported once");
    }

    fn context_modes_decide_what_is_pulled_in_automatically() {
        let question = "Did the refresh token TTL fix hold up?";
        let mut off = evicted_auth(Config { context_mode: ContextMode::Off, ..Config::default() });
        off.begin_turn(question, 0).unwrap();
        let plan = off.build_plan();
        assert!(plan.item("summary:auth-bug").is_none());
        assert_eq!(plan.exclusion("summary:auth-bug").unwrap().reason, ExclusionReason::ModeOff);
        assert_eq!(plan.meter.line, format!("CTX Off · 0 auto items · +0 tokens · {}% of budget", plan.meter.percent_of_budget.round()));

        let mut light = evicted_auth(Config::default());
        light.begin_turn(question, 0).unwrap();
        let plan = light.build_plan();
        let item = plan.item("summary:auth-bug").expect("light pulls in the matching summary");
        match &item.reason {
            InclusionReason::AutoRetrieved { matched, score } => {
                assert!(matched.contains(&"refresh".to_string()) && matched.contains(&"token".to_string()), "{matched:?}");
                assert!(*score > 0.0);
            }
            other => panic!("unexpected reason {other:?}"),
        }
        assert_eq!(plan.meter.auto_items, 1);
        assert_eq!(plan.meter.auto_tokens, item.tokens);
        assert!(plan.meter.line.starts_with("CTX Light · 1 auto item · +"), "{}", plan.meter.line);
        // An unrelated message pulls nothing in.
        light.abort_turn().unwrap();
        light.begin_turn("Any plans for the weekend?", 0).unwrap();
        assert_eq!(light.build_plan().meter.auto_items, 0);

        let mut heavy = evicted_auth(Config { context_mode: ContextMode::Heavy, ..Config::default() });
        heavy.begin_turn(question, 0).unwrap();
        let plan = heavy.build_plan();
        let log = plan.item("effort:auth-bug").expect("heavy loads the best match's log");
        assert!(matches!(log.reason, InclusionReason::AutoExpanded { .. }));
        assert_eq!(log.tokens, heavy.efforts().get("auth-bug").unwrap().raw_tokens);
        assert_eq!(plan.exclusion("summary:auth-bug").unwrap().reason, ExclusionReason::Superseded);
        // The mode is an input of the plan.
        assert_ne!(plan.plan_id, light.build_plan().plan_id);
    }

    fn a_retrieved_summary_the_user_refers_to_returns_to_working_memory() {
        let mut s = evicted_auth(Config::default());
        s.begin_turn("Did the refresh token TTL fix hold up?", 0).unwrap();
        let plan = s.build_plan();
        assert!(matches!(plan.item("summary:auth-bug").unwrap().reason, InclusionReason::AutoRetrieved { .. }));
        s.end_turn("Yes, the refresh token TTL of 86400 held.", 0).unwrap();
        assert_eq!(s.efforts().summary_ids_in_memory(), ["auth-bug"], "the user's reference brought it back");
        assert!(s.pins().on("summary:auth-bug").is_none(), "working memory keeps it; no pin is needed");
        let plan = s.build_plan();
        assert!(matches!(plan.item("summary:auth-bug").unwrap().reason, InclusionReason::RecentlyReferenced { turns_since_reference: 0, .. }));
    }

    fn an_automatic_item_that_keeps_being_referenced_is_promoted_to_a_lease() {
        // Heavy mode loads the best match's raw log for one request; referenced, it stays as an
        // ephemeral pin, and referenced again it is promoted to a lease.
        let mut s = evicted_auth(Config { context_mode: ContextMode::Heavy, ..Config::default() });
        turn(&mut s, "Did the refresh token TTL fix hold up?", &[], "Yes, the refresh token TTL of 86400 held.");
        let pin = s.pins().on("effort:auth-bug").expect("referenced automatic item becomes ephemeral").clone();
        assert_eq!((pin.kind, pin.origin, pin.references), (PinKind::Ephemeral, PinOrigin::Auto, 1));
        turn(&mut s, "And the refresh token retry?", &[], "The retry refreshes the token once.");
        let pin = s.pins().on("effort:auth-bug").unwrap();
        assert_eq!(pin.kind, PinKind::Leased, "referenced again: promoted");
        // Nothing but the user makes a pin sticky.
        for _ in 0..3 {
            turn(&mut s, "refresh token again", &[], "refresh token");
        }
        assert_ne!(s.pins().on("effort:auth-bug").map(|p| p.kind), Some(PinKind::Sticky));
    }

    fn activation_ranks_summaries_when_the_budget_is_short() {
        let mut s = session_with(Config::default());
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        concluded_effort(&mut s, "email bounce", MAIL_SUMMARY, 1);
        for _ in 0..3 {
            turn(&mut s, "About email bounces and the webhook again.", &[], "Soft bounces retry.");
        }
        let plan = s.build_plan();
        let mail = plan.item("summary:email-bounce").unwrap().activation;
        let auth = plan.item("summary:auth-bug").unwrap().activation;
        assert!(mail > auth, "referenced summary is more active: {mail} vs {auth}");
        // With room for only one summary, the more active one stays.
        let tight = plan.totals.context_tokens - plan.item("summary:auth-bug").unwrap().tokens;
        s.set_config(Config { context_window: tight as u32 + 100, reserved_output_tokens: 100, compaction: no_compaction(), ..Config::default() }).unwrap();
        let plan = s.build_plan();
        assert!(plan.item("summary:email-bounce").is_some());
        assert_eq!(plan.exclusion("summary:auth-bug").map(|e| e.reason), Some(ExclusionReason::OverBudget));
    }

    fn plans_replay_to_identical_request_bytes_and_diff_between_turns() {
        let mut s = session_with(Config::default());
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 2);
        chatter(&mut s);
        s.begin_turn("Show the auth bug.", 0).unwrap();
        let before = s.build_plan();
        s.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#);
        let after = s.build_plan();
        let replayed = s.replay_recipe(&after.recipe).unwrap();
        assert_eq!(replayed, after.messages);
        let diff = diff_plans(&before, &after);
        assert!(diff.entered.iter().any(|e| e.id == "effort:auth-bug" && e.why == "expanded"), "{diff:?}");
        assert!(diff.left.iter().any(|e| e.id == "summary:auth-bug" && e.why == "expanded"), "{diff:?}");
        assert_eq!(diff.token_delta, after.totals.context_tokens as i64 - before.totals.context_tokens as i64);
        s.end_turn("Here.", 0).unwrap();
        // The stored messages still replay after the turn (the pending part carries its text).
        assert_eq!(s.replay_recipe(&after.recipe).unwrap(), after.messages);
    }

    fn every_turn_records_its_requests_tools_and_diff() {
        let mut s = session_with(Config::default());
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        s.begin_turn("Show the auth bug, and try a bad call.", 0).unwrap();
        s.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#);
        s.execute_tool("expand_effort", r#"{"id": "nope"}"#);
        // An engine records each request it sends and the usage the provider reports.
        let sent = s.build_plan();
        s.record_request(&sent, None);
        assert!(s.report_usage(&sent.plan_id, sent.totals.context_tokens + 42));
        assert!(!s.report_usage("0000000000000000", 1));
        let report = s.end_turn("Here it is.", 0).unwrap();
        let telemetry = &report.telemetry;
        assert_eq!(telemetry.turn, report.turn);
        assert_eq!(telemetry.requests.len(), 1);
        let request = &telemetry.requests[0];
        assert_eq!(request.plan_id, sent.plan_id);
        assert_eq!(request.usage_difference(), Some(42));
        assert_eq!(telemetry.tools.len(), 2);
        assert!(telemetry.tools[0].ok && !telemetry.tools[1].ok);
        assert!(telemetry.tools[1].result.contains("no effort with id 'nope'"));
        assert!(telemetry.diff.entered.iter().any(|e| e.id == "effort:auth-bug" && e.why == "expanded"), "{:?}", telemetry.diff);
        assert!(telemetry.diff.left.iter().any(|e| e.id == "summary:auth-bug" && e.why == "expanded"), "{:?}", telemetry.diff);
        // The recorded recipe rebuilds the request bytes exactly.
        let replayed = s.replay_recipe(&request.recipe).unwrap();
        assert_eq!(replayed, sent.messages);
        // A turn driven without an engine records the plan it ended with.
        let report = chatter(&mut s);
        assert_eq!(report.telemetry.requests.len(), 1);
        assert_eq!(report.telemetry.requests[0].reported_prompt_tokens, None);
        assert_eq!(s.history().telemetry().len(), s.turn() as usize);
    }
}

// The plan's codes and hashes, which stored plans and telemetry depend on.
portable_tests! {
    fn inclusion_codes_are_the_json_codes() {
        let reasons = [
            InclusionReason::SystemPrompt,
            InclusionReason::RecentlyReferenced {
                turns_since_reference: 1,
                turns_until_eviction: 2,
            },
            InclusionReason::AmbientWindow,
            InclusionReason::Expanded {
                turns_since_reference: 0,
                turns_until_auto_collapse: 3,
            },
            InclusionReason::OpenEffort,
            InclusionReason::ActiveEffort,
            InclusionReason::CurrentUserMessage,
            InclusionReason::Pinned {
                kind: PinKind::Sticky,
                pin: 1,
            },
            InclusionReason::AutoRetrieved {
                score: 1.0,
                matched: vec![],
            },
            InclusionReason::AutoExpanded { score: 1.0 },
            InclusionReason::Attachment {
                mode: ccm_core::compaction::AttachmentMode::Full,
            },
            InclusionReason::RollingSummary {
                covers: String::new(),
            },
        ];
        for reason in reasons {
            let json = serde_json::to_value(&reason).unwrap();
            assert_eq!(json["code"], reason.code(), "{reason:?}");
        }
    }

    fn request_hashes_tell_messages_apart_and_are_stable() {
        let messages = |parts: &[(Role, &str)]| -> Vec<ContextMessage> {
            parts
                .iter()
                .map(|(role, text)| ContextMessage { role: *role, content: text.to_string() })
                .collect()
        };
        let one = request_hash(&messages(&[(Role::User, "hello world")]));
        // A fixed value, so a change of the hash is a deliberate one.
        assert_eq!(one, "fbeeb47c23251842");
        for other in [
            messages(&[(Role::Assistant, "hello world")]),
            messages(&[(Role::User, "hello worle")]),
            messages(&[(Role::User, "hello"), (Role::User, " world")]),
            messages(&[(Role::User, "hello world\0")]),
            messages(&[]),
        ] {
            assert_ne!(request_hash(&other), one, "{other:?}");
        }
    }
}
