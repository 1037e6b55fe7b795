//! The versioned session document: exact round trips, transient expansions, and precise errors
//! for documents that cannot be trusted.

use ccm_core::{ApproximateCounter, Config, Session, SnapshotError};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};
use serde_json::Value;
use std::sync::Arc;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// The model's call that expands auth-bug, made twice in `busy_session`.
const EXPAND_AUTH_BUG: [(&str, &str); 1] = [("expand_effort", r#"{"id": "auth-bug"}"#)];

fn busy_session() -> Session {
    let mut s = session();
    concluded_effort(
        &mut s,
        "auth bug",
        "Fixed 401 errors: refresh token TTL raised.",
        2,
    );
    concluded_effort(&mut s, "old work", "Archived the legacy reports.", 1);
    for _ in 0..22 {
        chatter(&mut s);
    }
    turn(
        &mut s,
        "Start guild.",
        &[(
            "open_effort",
            r#"{"name": "guild", "description": "guild system"}"#,
        )],
        "ok",
    );
    turn(
        &mut s,
        "And the api.",
        &[
            ("open_effort", r#"{"name": "api"}"#),
            ("switch_effort", r#"{"id": "guild"}"#),
        ],
        "ok",
    );
    turn(&mut s, "Show the auth bug.", &EXPAND_AUTH_BUG, "ok");
    for _ in 0..3 {
        turn(&mut s, "guild members and ranks", &[], "ok");
    }
    turn(&mut s, "auth bug again", &EXPAND_AUTH_BUG, "ok");
    s
}

fn mutate(json: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(json).unwrap();
    edit(&mut value);
    value.to_string()
}

/// An edit that breaks a document in one specific way.
type Edit = Box<dyn FnOnce(&mut Value)>;

fn import_error(json: &str) -> String {
    Session::from_json(json)
        .expect_err("document must be refused")
        .to_string()
}

portable_tests! {
    fn export_import_round_trips_exactly_without_expansions() {
        let original = busy_session();
        assert_eq!(original.efforts().expanded_ids(), ["auth-bug"]);
        assert!(!original.efforts().evicted_ids().is_empty());
        let json = original.to_json().unwrap();
        let restored = Session::from_json(&json).unwrap();
        assert!(restored.efforts().expanded_ids().is_empty(), "expansions are transient");
        // Compared with assert! so a failure does not print two whole sessions.
        assert!(restored.to_json().unwrap() == json, "everything else must round-trip byte for byte");
        assert_eq!(restored.efforts().active_id(), Some("guild"));
        assert_eq!(restored.efforts().open_ids(), ["guild", "api"]);
        assert_eq!(restored.efforts().evicted_ids(), original.efforts().evicted_ids());
        assert_eq!(restored.efforts().summary_ids_in_memory(), original.efforts().summary_ids_in_memory());
        assert_eq!(restored.efforts().decay_stats(), original.efforts().decay_stats());
        // The restored session behaves identically from here on (collapse the original's
        // expansion so both start from the same working set).
        let mut original = original;
        original.collapse_effort("auth-bug").unwrap();
        let mut restored = restored;
        for s in [&mut original, &mut restored] {
            turn(s, "What did the old work archive?", &[("search_efforts", r#"{"query": "legacy reports"}"#)], "The legacy reports.");
        }
        assert_eq!(original.build_plan().to_json(), restored.build_plan().to_json());
    }

    fn a_document_counted_with_another_rule_is_recounted() {
        let original = busy_session();
        let approximate = Session::from_json_with_counter(&original.to_json().unwrap(), Arc::new(ApproximateCounter)).unwrap();
        let effort = approximate.efforts().get("auth-bug").unwrap();
        let expected: u64 = u64::from(effort.header_tokens) + effort.messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        assert_eq!(effort.raw_tokens, expected);
        assert_ne!(effort.raw_tokens, original.efforts().get("auth-bug").unwrap().raw_tokens);
        assert_eq!(approximate.naive_tokens(), approximate.build_plan().totals.naive_tokens);
    }

    fn wrong_format_version_and_garbage_are_refused_precisely() {
        let json = busy_session().to_json().unwrap();
        assert!(import_error("not json").starts_with("session document is not valid: "));
        assert_eq!(import_error(&mutate(&json, |v| v["format"] = "other".into())), "session document has format 'other', expected 'ccm-session'");
        assert_eq!(import_error(&mutate(&json, |v| v["version"] = 7.into())), "session document version 7 is not supported (this build reads version 1)");
        assert!(import_error(&mutate(&json, |v| v["efforts"] = "x".into())).contains("invalid type"));
        assert_eq!(import_error(&mutate(&json, |v| v["config"]["decay_threshold"] = 0.into())), "decay_threshold must be at least 1, got 0");
    }

    fn inconsistent_documents_are_refused_with_the_reason() {
        let json = busy_session().to_json().unwrap();
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|v| v["active"] = "auth-bug".into()), "active effort 'auth-bug' is not an open effort"),
            (Box::new(|v| { let first = v["efforts"][0]["messages"][0].clone(); v["efforts"][1]["messages"].as_array_mut().unwrap().push(first); }), "appears twice"),
            (Box::new(|v| v["efforts"][0]["messages"][0]["tokens"] = 999.into()), "raw tokens but its header and messages add up to"),
            (Box::new(|v| { v["efforts"][0]["messages"].as_array_mut().unwrap().pop(); }), "messages are missing"),
            (Box::new(|v| v["efforts"][0]["summary"]["text"] = " ".into()), "has an empty summary"),
            (Box::new(|v| v["efforts"][1]["id"] = "auth-bug".into()), "effort id 'auth-bug' appears twice"),
            (Box::new(|v| v["efforts"][0]["id"] = "Not An Id".into()), "is not a valid id"),
            (Box::new(|v| v["next_seq"] = 10_000.into()), "messages are missing"),
            (Box::new(|v| v["open"] = serde_json::json!(["guild"])), "effort 'api' is open but missing from the open list"),
            (Box::new(|v| v["ambient"][0]["role"] = "system".into()), "has role system"),
        ];
        for (edit, expected) in cases {
            let error = import_error(&mutate(&json, edit));
            assert!(error.starts_with("session document is inconsistent: "), "{error}");
            assert!(error.contains(expected), "{error:?} should contain {expected:?}");
        }
    }

    fn a_document_with_open_efforts_and_none_active_is_repaired_and_says_so() {
        let json = busy_session().to_json().unwrap();
        let restored = Session::from_json(&mutate(&json, |v| v["active"] = Value::Null)).unwrap();
        // guild and api are open; api was opened last, so it is the one made active.
        assert_eq!(restored.efforts().active_id(), Some("api"));
        assert_eq!(restored.repairs_on_open().len(), 1, "{:?}", restored.repairs_on_open());
        assert!(restored.repairs_on_open()[0].contains("'api', the most recently opened, is now active"));
        // The repaired session routes the next exchange into the effort, not the ambient log.
        let mut s = restored;
        let ambient_before = s.ambient().messages().len();
        turn(&mut s, "more about the endpoints", &[], "ok");
        assert_eq!(s.ambient().messages().len(), ambient_before);
        // A consistent document reports nothing.
        assert!(Session::from_json(&json).unwrap().repairs_on_open().is_empty());
    }

    fn an_export_in_the_middle_of_a_turn_leaves_the_pending_message_out() {
        let mut s = session();
        chatter(&mut s);
        s.begin_turn("pending text", 0).unwrap();
        let restored = Session::from_json(&s.to_json().unwrap()).unwrap();
        assert!(!restored.in_turn());
        assert!(!restored.to_json().unwrap().contains("pending text"));
    }

    fn configuration_errors_are_precise() {
        assert_eq!(Config::from_json(r#"{"ambient_window": -3}"#).unwrap_err().to_string(), "ambient_window must be at least 1, got -3");
        assert_eq!(Config::from_json(r#"{"summary_eviction_threshold": 0}"#).unwrap_err().to_string(), "summary_eviction_threshold must be at least 1, got 0");
        assert_eq!(Config::from_json(r#"{"encoding": "gpt2"}"#).unwrap_err().to_string(), "unknown encoding 'gpt2'; supported: o200k_base, cl100k_base");
        assert!(Config::from_json(r#"{"decay": 3}"#).unwrap_err().to_string().contains("unknown field `decay`"));
        let config = Config::from_json(r#"{"encoding": "cl100k_base", "min_keyword_overlap": 3}"#).unwrap();
        assert_eq!((config.min_keyword_overlap, config.decay_threshold), (3, 3));
        assert!(matches!(Session::from_json("{}"), Err(SnapshotError::WrongFormat { .. })));
    }
}
