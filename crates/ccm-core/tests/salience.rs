//! Slice 3: the turn counter, reference detection and the decay of expanded efforts.

use ccm_core::{Config, EventKind, Session};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";
const PERF_SUMMARY: &str =
    "Dashboard latency: replaced N+1 customer lookups with one JOIN and an index.";

/// A session with auth-bug and perf-fix concluded, auth-bug expanded in the last turn.
fn expanded_auth() -> Session {
    let mut s = session();
    concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 2);
    concluded_effort(&mut s, "perf fix", PERF_SUMMARY, 2);
    turn(
        &mut s,
        "Show me the auth bug.",
        &[("expand_effort", r#"{"id": "auth-bug"}"#)],
        "Loaded.",
    );
    s
}

portable_tests! {
    fn turn_counter_increments_once_per_turn_and_is_restored_on_abort() {
        let mut s = session();
        assert_eq!(s.turn(), 0);
        assert_eq!(s.begin_turn("one", 0).unwrap(), 1);
        s.end_turn("ok", 0).unwrap();
        assert_eq!(s.begin_turn("two", 0).unwrap(), 2);
        s.execute_tool("open_effort", r#"{"name": "x"}"#);
        assert_eq!(s.abort_turn().unwrap(), "two");
        assert_eq!(s.turn(), 1);
        assert!(s.efforts().get("x").is_none(), "the aborted turn's effort is undone");
        assert_eq!(s.begin_turn("two again", 0).unwrap(), 2);
    }

    fn expanded_effort_auto_collapses_after_exactly_the_threshold() {
        let mut s = expanded_auth();
        let expanded_at = s.turn();
        assert_eq!(chatter(&mut s).banners, Vec::<String>::new());
        assert_eq!(chatter(&mut s).banners, Vec::<String>::new());
        assert_eq!(s.efforts().expanded_ids(), ["auth-bug"], "two idle turns are not enough");
        let report = chatter(&mut s);
        assert_eq!(report.turn, expanded_at + 3);
        assert_eq!(report.banners, ["--- Auto-collapsed effort: auth-bug (inactive for 3 turns) ---"]);
        assert!(s.efforts().expanded_ids().is_empty());
        let event = &report.metrics.events[0];
        assert_eq!((event.kind, event.effort.as_str()), (EventKind::AutoCollapsed, "auth-bug"));
        assert_eq!(event.tokens, s.efforts().get("auth-bug").unwrap().raw_tokens);
        // The turn was measured with the log still in context; the next one starts without it.
        assert_eq!(report.metrics.expansion_tokens, event.tokens);
        assert_eq!(report.metrics.next_context_tokens + event.tokens - u64::from(s.efforts().get("auth-bug").unwrap().summary.as_ref().unwrap().tokens), report.metrics.context_tokens);
    }

    fn a_reference_by_keywords_resets_the_decay_counter() {
        let mut s = expanded_auth();
        chatter(&mut s);
        chatter(&mut s);
        // Two summary keywords ("refresh", "token") make a reference.
        turn(&mut s, "Does the refresh token survive a restart?", &[], "Yes.");
        chatter(&mut s);
        chatter(&mut s);
        assert_eq!(s.efforts().expanded_ids(), ["auth-bug"]);
        let report = chatter(&mut s);
        assert_eq!(report.banners, ["--- Auto-collapsed effort: auth-bug (inactive for 3 turns) ---"]);
    }

    fn a_reference_by_id_in_the_assistant_text_counts_too() {
        let mut s = expanded_auth();
        chatter(&mut s);
        chatter(&mut s);
        turn(&mut s, "Anything else to check?", &[], "The auth bug is settled; nothing else.");
        chatter(&mut s);
        assert_eq!(s.efforts().expanded_ids(), ["auth-bug"]);
    }

    fn a_single_keyword_is_not_a_reference() {
        let mut s = expanded_auth();
        turn(&mut s, "Is the token ring network still used anywhere?", &[], "Rarely.");
        chatter(&mut s);
        let report = chatter(&mut s);
        assert_eq!(report.banners.len(), 1, "one shared keyword must not keep it expanded");
    }

    fn re_expansion_after_decay_works_and_counts_as_false_decay_within_two_turns() {
        let mut s = expanded_auth();
        for _ in 0..3 {
            chatter(&mut s);
        }
        assert!(s.efforts().expanded_ids().is_empty());
        let report = turn(&mut s, "Back to the auth bug details.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "Loaded again.");
        assert_eq!(s.efforts().expanded_ids(), ["auth-bug"]);
        assert!(report.banners[0].starts_with("--- Expanded effort: auth-bug ("));
        let decay = s.efforts().decay_stats().report();
        assert_eq!(decay.auto_collapses, 1);
        assert_eq!(decay.false_decay_rate, 1.0);
    }

    fn re_expansion_long_after_decay_is_not_a_false_decay() {
        let mut s = expanded_auth();
        for _ in 0..6 {
            chatter(&mut s);
        }
        turn(&mut s, "The auth bug again please.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "Loaded.");
        assert_eq!(s.efforts().decay_stats().report().false_decay_rate, 0.0);
    }

    fn multiple_expanded_efforts_decay_independently() {
        let mut s = expanded_auth();
        turn(&mut s, "And the perf fix.", &[("expand_effort", r#"{"id": "perf-fix"}"#)], "Loaded.");
        chatter(&mut s);
        let report = chatter(&mut s);
        assert_eq!(report.banners, ["--- Auto-collapsed effort: auth-bug (inactive for 3 turns) ---"]);
        assert_eq!(s.efforts().expanded_ids(), ["perf-fix"]);
        let report = chatter(&mut s);
        assert_eq!(report.banners, ["--- Auto-collapsed effort: perf-fix (inactive for 3 turns) ---"]);
    }

    fn decay_never_touches_open_efforts() {
        let mut s = session();
        turn(&mut s, "Start guild.", &[("open_effort", r#"{"name": "guild"}"#)], "ok");
        turn(&mut s, "Start other.", &[("open_effort", r#"{"name": "other"}"#)], "ok");
        for _ in 0..30 {
            let report = chatter(&mut s);
            assert!(report.banners.is_empty());
        }
        assert_eq!(s.efforts().open_ids(), ["guild", "other"]);
        assert!(s.build_plan().included.iter().any(|i| i.id == "effort:guild"));
    }

    fn decay_threshold_is_configurable() {
        let config = Config { decay_threshold: 1, ..Config::default() };
        let mut s = Session::new(config).unwrap();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        turn(&mut s, "Show the auth bug.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "ok");
        let report = chatter(&mut s);
        assert_eq!(report.banners, ["--- Auto-collapsed effort: auth-bug (inactive for 1 turns) ---"]);
    }

    fn decay_metrics_are_collected() {
        let mut s = expanded_auth();
        let auth = s.efforts().get("auth-bug").unwrap();
        // Each context after the collapse shows the summary instead of the raw log.
        let saved_per_turn = auth.raw_tokens - u64::from(auth.summary.as_ref().unwrap().tokens);
        for _ in 0..3 {
            chatter(&mut s);
        }
        // Decayed at the end of the third idle turn, whose context still had the log: nothing
        // saved yet.
        assert_eq!(s.efforts().decay_stats().report().tokens_saved_by_decay, 0);
        chatter(&mut s);
        chatter(&mut s);
        turn(&mut s, "Now the perf fix.", &[("expand_effort", r#"{"id": "perf-fix"}"#)], "ok");
        turn(&mut s, "done", &[("collapse_effort", r#"{"id": "perf-fix"}"#)], "ok");
        let report = s.efforts().decay_stats().report();
        assert_eq!(report.auto_collapses, 1);
        assert_eq!(report.manual_collapses, 1);
        assert_eq!(report.manual_vs_auto_collapse, 1.0);
        // auth-bug lasted 3 turns, perf-fix 1 turn.
        assert_eq!(report.avg_expansion_duration, 2.0);
        // Kept out of the contexts of the four turns after the collapsing one.
        assert_eq!(report.tokens_saved_by_decay, saved_per_turn * 4);
        // Measured on the plans: re-expanding adds exactly what each of those turns saved.
        turn(&mut s, "Back to the auth bug.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "ok");
        let expanded = s.build_plan();
        assert_eq!(expanded.item("effort:auth-bug").unwrap().tokens - saved_per_turn, s.efforts().get("auth-bug").unwrap().summary.as_ref().unwrap().tokens as u64);
        // Once expanded again it saves nothing more.
        let saved = s.efforts().decay_stats().report().tokens_saved_by_decay;
        chatter(&mut s);
        assert_eq!(s.efforts().decay_stats().report().tokens_saved_by_decay, saved);
    }

    fn keyword_extraction_ignores_case_punctuation_and_stopwords() {
        let keywords = ccm_core::text::extract_keywords(AUTH_SUMMARY);
        assert_eq!(keywords, ["3600", "401", "86400", "errors", "fixed", "raised", "refresh", "seconds", "token", "ttl"]);
    }
}
