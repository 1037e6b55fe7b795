//! Slice 4: summary eviction, the ambient window, search over every concluded effort, and the
//! context plan's reasons.

use ccm_core::{Config, EffortState, ExclusionReason, Section, Session};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";
const MAIL_SUMMARY: &str =
    "Email bounces: soft bounces retried three times, hard bounces suppressed via webhook.";
const DEPLOY_SUMMARY: &str =
    "Deploy pipeline: cached cargo builds, parallel integration stages, 25 to 9 minutes.";

portable_tests! {
    // Rule (slice 4): only summaries "referenced within the last SUMMARY_EVICTION_THRESHOLD
    // turns" are in the context. A summary last referenced in turn T is in the contexts of turns
    // T+1 to T+19 and not in the context of turn T+20: it leaves at the end of turn T+19.
    fn rule_a_summary_last_referenced_in_turn_t_is_not_in_the_context_of_turn_t_plus_20() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        let concluded_at = s.efforts().get("auth-bug").unwrap().last_referenced_turn;
        while s.turn() < concluded_at + 18 {
            chatter(&mut s);
        }
        // The request of turn T+19 still shows it.
        s.begin_turn("How is the weather today?", 0).unwrap();
        assert_eq!(s.turn(), concluded_at + 19);
        assert!(s.build_plan().item("summary:auth-bug").is_some(), "turn T+19 is inside the threshold");
        let report = s.end_turn("Sunny and mild.", 0).unwrap();
        assert!(s.efforts().summary_ids_in_memory().is_empty());
        assert_eq!(s.efforts().evicted_ids(), ["auth-bug"]);
        assert_eq!(report.metrics.evicted_efforts, 1);
        assert!(report.metrics.events.iter().any(|e| e.effort == "auth-bug" && e.kind == ccm_core::EventKind::Evicted));
        // The request of turn T+20 does not.
        s.begin_turn("How is the weather today?", 0).unwrap();
        assert_eq!(s.turn(), concluded_at + 20);
        let plan = s.build_plan();
        assert!(plan.item("summary:auth-bug").is_none());
        assert!(!plan.messages.iter().any(|m| m.content.contains("86400")));
        s.end_turn("Sunny and mild.", 0).unwrap();
        // Still stored, concluded, with its full log and summary.
        let effort = s.efforts().get("auth-bug").unwrap();
        assert_eq!(effort.status, ccm_core::EffortStatus::Concluded);
        assert_eq!(effort.messages.len(), 6);
        assert_eq!(effort.summary.as_ref().unwrap().text, AUTH_SUMMARY);
        let plan = s.build_plan();
        let evicted = plan.excluded.iter().find(|e| e.id == "evicted").unwrap();
        assert_eq!((evicted.count, evicted.reason), (1, ExclusionReason::EvictedUnreferenced));
        assert_eq!(s.effort_status().evicted_count, 1);
    }

    fn a_reference_resets_the_eviction_counter() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        for _ in 0..15 {
            chatter(&mut s);
        }
        let referenced = turn(&mut s, "Similar to the auth-bug pattern, right?", &[], "Yes.").turn;
        while s.turn() < referenced + 18 {
            chatter(&mut s);
        }
        assert_eq!(s.efforts().summary_ids_in_memory(), ["auth-bug"]);
        chatter(&mut s);
        assert!(s.efforts().summary_ids_in_memory().is_empty());
    }

    fn ambient_window_keeps_the_last_exchanges_and_stores_all() {
        let mut s = session();
        for i in 0..50 {
            turn(&mut s, &format!("ambient question {i}"), &[], &format!("ambient answer {i}"));
        }
        assert_eq!(s.ambient().messages().len(), 100, "every message stays stored");
        let plan = s.build_plan();
        let ambient: Vec<&str> = plan.included.iter().filter(|i| i.section == Section::Ambient).map(|i| i.id.as_str()).collect();
        // One item per exchange: a turn is an atom and is never split.
        assert_eq!(ambient.len(), 10);
        assert!(plan
            .included
            .iter()
            .filter(|i| i.section == Section::Ambient)
            .all(|i| i.message_count == 2));
        let window_text: Vec<&str> = plan.messages.iter().skip(1).map(|m| m.content.as_str()).collect();
        assert_eq!(window_text.first(), Some(&"ambient question 40"));
        assert_eq!(window_text.last(), Some(&"ambient answer 49"));
        let outside = plan.excluded.iter().find(|e| e.reason == ExclusionReason::OutsideAmbientWindow).unwrap();
        assert_eq!(outside.count, 80);
        let stored_outside: u64 = s.ambient().messages()[..80].iter().map(|m| u64::from(m.tokens)).sum();
        assert_eq!(outside.tokens, stored_outside);
    }

    fn ambient_window_is_configurable() {
        let mut s = Session::new(Config { ambient_window: 2, ..Config::default() }).unwrap();
        for i in 0..5 {
            turn(&mut s, &format!("q{i}"), &[], &format!("a{i}"));
        }
        assert_eq!(s.ambient_window().len(), 4);
        assert_eq!(s.ambient_window()[0].content, "q3");
    }

    fn search_finds_evicted_efforts_ranks_by_relevance_and_brings_them_back() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        concluded_effort(&mut s, "email bounce", MAIL_SUMMARY, 1);
        concluded_effort(&mut s, "deploy pipeline", DEPLOY_SUMMARY, 1);
        for _ in 0..25 {
            chatter(&mut s);
        }
        assert_eq!(s.efforts().evicted_ids().len(), 3);
        s.begin_turn("How did we handle email bounces?", 0).unwrap();
        let outcome = s.execute_tool("search_efforts", r#"{"query": "email bounces webhook"}"#);
        assert!(outcome.ok, "{}", outcome.result);
        assert_eq!(outcome.banner, None);
        let results = outcome.result["results"].as_array().unwrap();
        assert_eq!(results[0]["id"], "email-bounce");
        assert_eq!(results[0]["state"], "evicted");
        assert_eq!(results[0]["summary"], MAIL_SUMMARY);
        assert_eq!(results[0]["matched"], serde_json::json!(["bounces", "email", "webhook"]));
        assert!(results.iter().all(|r| r["id"] != "auth-bug"), "unrelated efforts do not match: {results:?}");
        // The hit is referenced: back in working memory, and expandable.
        assert_eq!(s.efforts().summary_ids_in_memory(), ["email-bounce"]);
        assert!(s.build_plan().included.iter().any(|i| i.id == "summary:email-bounce"));
        let expanded = s.execute_tool("expand_effort", r#"{"id": "email-bounce"}"#);
        assert!(expanded.ok);
        s.end_turn("We retry soft bounces three times.", 0).unwrap();
    }

    fn search_ranks_more_specific_matches_first() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        concluded_effort(&mut s, "token cache", "Cached token lookups for 60 seconds in memory.", 1);
        let results = s.search_efforts("refresh token ttl").unwrap().results;
        let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["auth-bug", "token-cache"]);
        assert!(results[0].score > results[1].score);
        // Naming the id wins over keyword overlap.
        let results = s.search_efforts("token-cache").unwrap().results;
        assert_eq!(results[0].id, "token-cache");
        assert_eq!(results[0].state, EffortState::Concluded);
    }

    fn search_ignores_open_efforts_and_reports_no_hits_plainly() {
        let mut s = session();
        turn(&mut s, "Start guild.", &[("open_effort", r#"{"name": "guild bank"}"#)], "ok");
        let results = s.search_efforts("guild bank").unwrap();
        assert!(results.results.is_empty());
        let outcome = s.execute_tool("search_efforts", r#"{"query": "zebra crossing"}"#);
        assert!(outcome.ok);
        assert_eq!(outcome.result["results"], serde_json::json!([]));
    }

    fn working_memory_is_bounded_while_history_grows() {
        let mut s = session();
        let mut ceilings = Vec::new();
        for round in 0..12 {
            let name = format!("task {}", ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"][round]);
            concluded_effort(&mut s, &name, &format!("Finished {name} with a careful plan."), 2);
            for _ in 0..8 {
                chatter(&mut s);
            }
            ceilings.push(s.working_tokens());
        }
        // Once eviction and the ambient window are in steady state the ceiling is flat while
        // the naive baseline keeps growing.
        let steady = &ceilings[4..];
        let (low, high) = (*steady.iter().min().unwrap(), *steady.iter().max().unwrap());
        assert!(high - low <= high / 10, "context should stay flat: {ceilings:?}");
        assert!(s.naive_tokens() > 3 * high, "naive {} vs ceiling {high}", s.naive_tokens());
    }

    fn plans_are_deterministic_and_their_id_changes_with_the_content() {
        let build = || {
            let mut s = session();
            concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 2);
            turn(&mut s, "Show the auth bug.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "ok");
            chatter(&mut s);
            s
        };
        let (a, b) = (build(), build());
        assert_eq!(a.build_plan().to_json(), b.build_plan().to_json());
        assert_eq!(a.build_plan().plan_id.len(), 16);
        let mut c = build();
        chatter(&mut c);
        assert_ne!(a.build_plan().plan_id, c.build_plan().plan_id);
    }

    fn the_pending_user_message_is_last_and_counted_once() {
        let mut s = session();
        s.begin_turn("What is the capital of France?", 0).unwrap();
        let plan = s.build_plan();
        let last = plan.included.last().unwrap();
        assert_eq!(last.id, "pending");
        assert_eq!(plan.messages.last().unwrap().content, "What is the capital of France?");
        let tokens = s.pending_user_message().unwrap().1;
        assert_eq!(last.tokens, u64::from(tokens));
        s.end_turn("Paris.", 0).unwrap();
        assert_eq!(s.ambient().messages()[0].tokens, tokens);
    }
}

/// The plan of a fixed session as pretty JSON, with the system prompt's wording masked: the
/// golden file guards the plan's structure, reasons, order, token counts and ids.
fn golden_plan_json() -> String {
    let mut s = session();
    concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 2);
    concluded_effort(&mut s, "email bounce", MAIL_SUMMARY, 1);
    chatter(&mut s);
    turn(
        &mut s,
        "Start guild.",
        &[
            ("open_effort", r#"{"name": "guild"}"#),
            ("expand_effort", r#"{"id": "auth-bug"}"#),
        ],
        "ok",
    );
    let mut plan: serde_json::Value = serde_json::from_str(&s.build_plan().to_json()).unwrap();
    plan["messages"][0]["content"] = "<system prompt>".into();
    serde_json::to_string_pretty(&plan).unwrap()
}

portable_tests! {
    /// The same inputs give the same plan, id and bytes natively and in the browser: the golden
    /// file is compiled into the test, so the wasm build compares against the very bytes the
    /// native build produced.
    fn plan_matches_the_golden_file_on_every_platform() {
        let expected = include_str!("golden/plan.json");
        assert!(golden_plan_json() == expected, "plan differs from tests/golden/plan.json; run the native test with CCM_BLESS=1 to review");
    }

    /// What the golden file freezes, stated independently of the code that wrote it: the
    /// items in the slice-2 order with their reasons, the exclusions, and no dependencies
    /// (only attachments have them, and the session has none).
    fn the_golden_plan_says_what_the_specification_says() {
        let plan: serde_json::Value = serde_json::from_str(include_str!("golden/plan.json")).unwrap();
        let reason = |item: &serde_json::Value| item["reason"].as_str().map(str::to_string).unwrap_or_else(|| item["reason"]["code"].as_str().unwrap().to_string());
        let included: Vec<(String, String)> = plan["included"].as_array().unwrap().iter().map(|i| (i["id"].as_str().unwrap().to_string(), reason(i))).collect();
        let expected = [
            ("system", "system_prompt"),
            ("summary:email-bounce", "recently_referenced"),
            ("ambient:8", "ambient_window"),
            ("effort:auth-bug", "expanded"),
            ("effort:guild", "active_effort"),
        ];
        assert_eq!(included, expected.map(|(id, why)| (id.to_string(), why.to_string())));
        let excluded: Vec<(&str, &str)> = plan["excluded"].as_array().unwrap().iter().map(|e| (e["id"].as_str().unwrap(), e["reason"].as_str().unwrap())).collect();
        assert_eq!(excluded, [("summary:auth-bug", "expanded"), ("effort:email-bounce", "summarized")]);
        assert!(plan["included"].as_array().unwrap().iter().all(|i| i["depends_on"].as_array().unwrap().is_empty()));
        let sum: u64 = plan["included"].as_array().unwrap().iter().map(|i| i["tokens"].as_u64().unwrap()).sum();
        assert_eq!(plan["totals"]["context_tokens"].as_u64().unwrap(), sum);
    }
}

/// Refreshes the golden file when `CCM_BLESS` is set, and otherwise compares against the file
/// on disk (which `include_str!` may hold an older copy of until the next build).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn plan_matches_the_golden_file() {
    let actual = golden_plan_json();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/plan.json");
    if std::env::var_os("CCM_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .expect("golden file exists; run with CCM_BLESS=1 to create it");
    if actual != expected {
        let out = std::env::temp_dir().join("ccm-plan-actual.json");
        std::fs::write(&out, &actual).unwrap();
        panic!("plan changed (actual written to {}); if intended, rerun with CCM_BLESS=1 and review the diff", out.display());
    }
}
