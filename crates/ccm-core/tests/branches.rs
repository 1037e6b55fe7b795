//! Branches: forks at the current or an earlier turn, isolation from the parent line.

use ccm_core::branch::{BranchError, Branches};
use ccm_core::Session;
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";

/// One scripted turn: the user's text, the tool calls, the answer.
type Step<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

/// The same scripted conversation, stopped after `turns` turns.
fn scripted(turns: usize) -> Session {
    let close = format!(r#"{{"summary": "{AUTH_SUMMARY}"}}"#);
    let chat: Step = ("How is the weather today?", vec![], "Sunny and mild.");
    let script: Vec<Step> = vec![
        (
            "Let's work on the auth bug.",
            vec![("open_effort", r#"{"name": "auth bug"}"#)],
            "Started.",
        ),
        (
            "The refresh token expires after an hour.",
            vec![],
            "Raise the TTL.",
        ),
        (
            "Done.",
            vec![("close_effort", close.as_str())],
            "Concluded.",
        ),
        (
            "Show me the auth bug details.",
            vec![("expand_effort", r#"{"id": "auth-bug"}"#)],
            "Here.",
        ),
        (
            "Let's work on guilds.",
            vec![
                ("open_effort", r#"{"name": "guilds"}"#),
                (
                    "pin_context",
                    r#"{"target": "summary:auth-bug", "ttl_turns": 3}"#,
                ),
            ],
            "ok",
        ),
        chat.clone(),
        chat.clone(),
        (
            "guild ranks",
            vec![
                ("open_effort", r#"{"name": "ranks"}"#),
                ("switch_effort", r#"{"id": "guilds"}"#),
            ],
            "ok",
        ),
        chat,
    ];
    let mut s = session();
    for (user, tools, assistant) in script.iter().take(turns) {
        turn(&mut s, user, tools, assistant);
    }
    s
}

portable_tests! {
    fn a_fork_at_an_earlier_turn_equals_the_session_that_stopped_there() {
        let full = scripted(9);
        for at in [0u64, 3, 4, 5, 8, 9] {
            let fork = full.fork_at(at, "explore").unwrap();
            let stopped = scripted(at as usize);
            // The fork records its branch; everything else equals the session stopped there.
            let mut forked: serde_json::Value = serde_json::from_str(&fork.to_json().unwrap()).unwrap();
            assert_eq!(forked["branch"]["name"], "explore");
            forked.as_object_mut().unwrap().remove("branch");
            let stopped_json: serde_json::Value =
                serde_json::from_str(&stopped.to_json().unwrap()).unwrap();
            assert!(forked == stopped_json, "fork at turn {at} differs from the session stopped there");
            assert!(fork.build_plan().to_json() == stopped.build_plan().to_json(), "plans differ at turn {at}");
            assert_eq!(fork.efforts().expanded_ids(), stopped.efforts().expanded_ids(), "expansions at turn {at}");
            assert_eq!(fork.branch().parent.as_deref(), Some("main"));
            assert_eq!(fork.branch().fork_turn, Some(at));
        }
        // Forking changes nothing on the parent.
        assert!(full.to_json().unwrap() == scripted(9).to_json().unwrap());
    }

    fn exploring_a_branch_never_collapses_or_evicts_anything_on_the_main_line() {
        let mut branches = Branches::new(scripted(4));
        assert_eq!(branches.current().efforts().expanded_ids(), ["auth-bug"]);
        let main_before = branches.current().to_json().unwrap();
        branches.fork("explore", 4).unwrap();
        for _ in 0..25 {
            chatter(branches.current_mut());
        }
        assert!(branches.current().efforts().expanded_ids().is_empty(), "decayed on the branch");
        assert_eq!(branches.current().efforts().evicted_ids(), ["auth-bug"], "evicted on the branch");
        branches.switch("main").unwrap();
        assert_eq!(branches.current().efforts().expanded_ids(), ["auth-bug"], "still expanded on main");
        assert!(branches.current().to_json().unwrap() == main_before);
        let list = branches.list();
        let names: Vec<(&str, u64, bool)> = list.iter().map(|b| (b.info.name.as_str(), b.head_turn, b.current)).collect();
        assert_eq!(names, [("explore", 29, false), ("main", 4, true)]);
    }

    fn branch_errors_are_precise_and_change_nothing() {
        let mut branches = Branches::new(scripted(3));
        assert!(matches!(branches.fork("", 1), Err(BranchError::BadName(_))));
        assert!(matches!(branches.fork("main", 1), Err(BranchError::BadName(_))));
        let error = branches.fork("x", 9).unwrap_err().to_string();
        assert_eq!(error, "cannot fork at turn 9: the session is at turn 3");
        let error = branches.switch("nope").unwrap_err().to_string();
        assert_eq!(error, "no branch named 'nope'; branches: main");
        assert!(branches.remove("main").is_err());
        branches.current_mut().begin_turn("mid-turn", 0).unwrap();
        assert!(matches!(branches.fork("y", 1), Err(BranchError::NotNow(_))));
        branches.current_mut().abort_turn().unwrap();
        branches.fork("y", 1).unwrap();
        branches.switch("main").unwrap();
        let removed = branches.remove("y").unwrap();
        assert_eq!(removed.turn(), 1);
        assert_eq!(branches.list().len(), 1);
    }

    fn only_recent_turns_can_be_rewound() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        assert_eq!(s.earliest_fork_turn(), 0);
        assert!(s.fork_at(0, "start").is_ok());
        let stopped_json = s.to_json().unwrap();
        let stopped_turn = s.turn();
        // Exactly REWIND_TURNS more turns: the turn the effort was concluded in is now the
        // earliest that can be rewound to, and the one before it is out of reach.
        let limit = Session::REWIND_TURNS as u64;
        for _ in 0..limit {
            chatter(&mut s);
        }
        assert_eq!(s.earliest_fork_turn(), stopped_turn);
        let oldest = s.fork_at(stopped_turn, "oldest").expect("the earliest turn can be forked");
        // Rewinding all 1,000 turns gives the session as it was then, its branch aside.
        let mut forked: serde_json::Value = serde_json::from_str(&oldest.to_json().unwrap()).unwrap();
        forked.as_object_mut().unwrap().remove("branch");
        let stopped: serde_json::Value = serde_json::from_str(&stopped_json).unwrap();
        assert!(forked == stopped, "a fork 1,000 turns back differs from the session then");
        let error = s.fork_at(stopped_turn - 1, "too-old").unwrap_err();
        assert!(matches!(error, BranchError::BadTurn { turn, .. } if turn == stopped_turn - 1), "{error}");
        assert!(error.to_string().contains("only the last 1000 turns can be rewound"), "{error}");
    }

    // What rewinding needs is kept in memory, not stored: after an import (or a reload) only
    // the turns run since can be forked, and the refusal says so instead of blaming a limit.
    fn after_an_import_the_turns_run_since_can_be_forked_and_the_refusal_says_why() {
        let full = scripted(6);
        let mut imported = Session::from_json(&full.to_json().unwrap()).unwrap();
        let at_import = imported.turn();
        assert_eq!(imported.earliest_fork_turn(), at_import);
        let error = imported.fork_at(at_import - 1, "before").unwrap_err();
        assert!(error.to_string().contains("ran before this session was opened or imported"), "{error}");
        assert!(!error.to_string().contains("export and import"), "{error}");
        chatter(&mut imported);
        chatter(&mut imported);
        assert!(imported.fork_at(at_import, "at-import").is_ok());
        assert!(imported.fork_at(at_import + 1, "since").is_ok());
    }

    fn a_fork_remembers_its_parent_through_export_and_storage() {
        let full = scripted(6);
        let fork = full.fork_at(4, "explore").unwrap();
        let restored = Session::from_json(&fork.to_json().unwrap()).unwrap();
        assert_eq!(restored.branch(), fork.branch());
        assert_eq!(restored.branch().fork_turn, Some(4));
        let mut store = ccm_test_support::memory_store::MemoryStore::default();
        store.apply(&fork.full_write_batch().unwrap()).unwrap();
        let (opened, _) = Session::from_store(store.load(), fork.counter().clone()).unwrap();
        assert_eq!(opened.branch().parent.as_deref(), Some("main"));
        // The main line writes no branch field at all: older documents read the same.
        assert!(!full.to_json().unwrap().contains("\"branch\""));
    }
}
