//! The session keeps the last plan it built and hands it out again while nothing the planner
//! reads has changed. A stale plan is a worse bug than a slow one: every public way to change a
//! session is driven here, and after each the kept plan must equal one built from scratch, and
//! differ from the plan before wherever the change shows in the context.

use ccm_core::compaction::AttachmentKind;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::plan::builds_on_this_thread;
use ccm_core::{Config, ContextMode, Session};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Keeps a plan, runs `change`, and checks the plan read afterwards (rendered, and as the
/// working tokens) against one built from scratch. Returns whether the plan changed.
fn changes_plan(s: &mut Session, what: &str, change: impl FnOnce(&mut Session)) -> bool {
    let before = s.build_plan();
    assert!(
        s.build_plan() == s.build_plan_afresh(),
        "{what}: the kept plan differs before the change"
    );
    change(s);
    let kept = s.build_plan();
    let fresh = s.build_plan_afresh();
    assert!(
        kept == fresh,
        "{what}: the kept plan is stale after the change"
    );
    assert_eq!(
        s.working_tokens(),
        fresh.working_set_tokens(),
        "{what}: stale working tokens"
    );
    kept != before
}

/// A session with a concluded effort ("auth-bug") in working memory and some chatter.
fn with_history() -> Session {
    let mut s = session();
    concluded_effort(
        &mut s,
        "auth bug",
        "Fixed 401 errors: the refresh token TTL was 1h, now 24h.",
        2,
    );
    chatter(&mut s);
    s
}

/// `with_history` with a second effort "parser" open and active.
fn with_open_effort() -> Session {
    let mut s = with_history();
    turn(
        &mut s,
        "Now the parser.",
        &[("open_effort", r#"{"name": "parser"}"#)],
        "Started.",
    );
    s
}

/// A long Light-mode session: ambient chat that fills a good part of the default window.
fn long_session() -> Session {
    let mut s = session();
    for t in 0..30 {
        let text = ccm_test_support::synthetic_document(t, 300);
        turn(
            &mut s,
            &format!("Question {t}: {text}"),
            &[],
            &format!("Answer {t}: {text}"),
        );
    }
    s
}

portable_tests! {
    fn the_turn_lifecycle_never_leaves_a_stale_plan() {
        let mut s = with_history();
        assert!(changes_plan(&mut s, "begin_turn", |s| {
            s.begin_turn("What about the auth bug tokens?", 1).unwrap();
        }));
        assert!(changes_plan(&mut s, "execute_tool", |s| {
            assert!(s.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#).ok);
        }));
        assert!(changes_plan(&mut s, "end_turn", |s| {
            s.end_turn("The TTL is 24h now.", 2).unwrap();
        }));
        s.begin_turn("One more thing.", 3).unwrap();
        assert!(changes_plan(&mut s, "abort_turn", |s| {
            s.abort_turn().unwrap();
        }));
    }

    fn effort_operations_never_leave_a_stale_plan() {
        let mut s = with_open_effort();
        assert!(changes_plan(&mut s, "open_effort", |s| {
            s.open_effort("cache layer", None).unwrap();
        }));
        assert!(changes_plan(&mut s, "switch_effort", |s| {
            s.switch_effort("parser").unwrap();
        }));
        assert!(changes_plan(&mut s, "close_effort", |s| {
            s.close_effort(Some("parser"), Some("The parser accepts nested lists now.")).unwrap();
        }));
        assert!(changes_plan(&mut s, "close_effort_with_fallback", |s| {
            s.close_effort_with_fallback(Some("cache-layer"), "the model gave no summary").unwrap();
        }));
        assert!(changes_plan(&mut s, "reopen_effort", |s| {
            s.reopen_effort("parser").unwrap();
        }));
        assert!(changes_plan(&mut s, "expand_effort", |s| {
            s.expand_effort("auth-bug").unwrap();
        }));
        assert!(changes_plan(&mut s, "collapse_effort", |s| {
            s.collapse_effort("auth-bug").unwrap();
        }));
    }

    fn search_brings_an_evicted_summary_back_into_the_plan() {
        let mut s = session();
        s.set_config(Config { summary_eviction_threshold: 1, ..Config::default() }).unwrap();
        concluded_effort(&mut s, "auth bug", "Fixed 401 errors: the refresh token TTL was 1h, now 24h.", 1);
        chatter(&mut s);
        chatter(&mut s);
        assert!(s.build_plan().included.iter().all(|i| i.id != "summary:auth-bug"), "evicted");
        assert!(changes_plan(&mut s, "search_efforts", |s| {
            assert!(!s.search_efforts("refresh token TTL").unwrap().results.is_empty());
        }));
    }

    fn pins_attachments_and_configuration_never_leave_a_stale_plan() {
        let mut s = with_history();
        let request = PinRequest {
            target: "effort:auth-bug".to_string(),
            kind: PinKind::Sticky,
            ttl_turns: None,
            task: None,
        };
        assert!(changes_plan(&mut s, "pin", |s| {
            s.pin(request, PinOrigin::User).unwrap();
        }));
        assert!(changes_plan(&mut s, "unpin", |s| {
            s.unpin("effort:auth-bug", PinOrigin::User).unwrap();
        }));
        s.begin_turn("Please review the attached notes.", 1).unwrap();
        let notes = ccm_test_support::synthetic_document(7, 400);
        let mut id = String::new();
        assert!(changes_plan(&mut s, "attach", |s| {
            id = s.attach("notes.md", AttachmentKind::File, &notes, None).unwrap();
        }));
        s.end_turn("Reviewed.", 2).unwrap();
        assert!(changes_plan(&mut s, "compress_attachment", |s| {
            assert!(s.compress_attachment(&id).unwrap());
        }));
        assert!(changes_plan(&mut s, "expand_attachment", |s| {
            assert!(s.expand_attachment(&id).unwrap());
        }));
        assert!(changes_plan(&mut s, "set_config", |s| {
            s.set_config(Config { context_mode: ContextMode::Heavy, ..s.config().clone() }).unwrap();
        }));
    }

    fn compaction_and_its_rolling_summary_never_leave_a_stale_plan() {
        let mut s = long_session();
        // A window the context fills to 97% makes the next check compact at the emergency
        // level, which puts an extractive rolling summary in place.
        let tokens = s.working_tokens();
        let window = u32::try_from(tokens * 1_000 / 970).unwrap() + s.config().reserved_output_tokens;
        s.set_config(Config { context_window: window, ..s.config().clone() }).unwrap();
        assert!(changes_plan(&mut s, "compact_if_needed", |s| {
            let event = s.compact_if_needed(1).expect("a window this small compacts");
            assert!(event.rolling_summary.is_some(), "{}", event.banner());
        }));
        assert!(changes_plan(&mut s, "upgrade_rolling_summary", |s| {
            assert!(s.upgrade_rolling_summary("Thirty questions were asked and answered."));
        }));
    }

    fn operations_that_change_no_plan_keep_it() {
        let mut s = with_history();
        s.enable_embeddings("toy");
        let batch = s.embedding_batch("auth").expect("embeddings are enabled");
        let vectors = (0..batch.texts.len()).map(|i| vec![1.0, i as f32]).collect();
        assert!(!changes_plan(&mut s, "absorb_embeddings", |s| {
            s.absorb_embeddings("auth", &batch, vectors).unwrap();
        }));
        assert!(!changes_plan(&mut s, "enable_embeddings", |s| s.enable_embeddings("other")));
        let mut store = MemoryStore::default();
        assert!(!changes_plan(&mut s, "mark_saved", |s| {
            let batch = s.write_batch().unwrap();
            store.apply(&batch).unwrap();
            s.mark_saved(&batch).unwrap();
        }));
        // The engine records every request it sends: the request's plan stays the kept one,
        // so `end_turn` reads it without building it again.
        s.begin_turn("And the parser?", 1).unwrap();
        let request = s.build_plan();
        let builds = builds_on_this_thread();
        assert!(!changes_plan(&mut s, "record_request", |s| s.record_request(&request, None)));
        assert!(!changes_plan(&mut s, "report_usage", |s| {
            assert!(s.report_usage(&request.plan_id, 1_234));
        }));
        assert_eq!(builds_on_this_thread() - builds, 4, "only the plans built from scratch");
    }

    fn a_host_tool_result_keeps_the_plan() {
        // A tool the host runs changes nothing the planner reads: its result is traced only.
        let mut s = with_history();
        s.begin_turn("What time is it?", 1).unwrap();
        assert!(!changes_plan(&mut s, "record_host_tool_result", |s| {
            let ok = s.record_host_tool_result("read_clock", "{}", Ok(serde_json::json!({"time": "12:00"})));
            assert!(ok.ok);
            let failed = s.record_host_tool_result("read_clock", "{}", Err("no clock".into()));
            assert_eq!(failed.result, serde_json::json!({"error": "no clock"}));
        }));
    }

    fn recall_and_the_rebuilt_index_never_leave_a_stale_plan() {
        let mut s = with_history();
        s.begin_turn("How did the widget frobnicate again?", 1).unwrap();
        assert!(changes_plan(&mut s, "recall", |s| {
            s.recall("widget frobnicates twice", Some("auth-bug")).unwrap();
        }));
        s.end_turn("Twice.", 2).unwrap();

        // A session opened from a store rebuilds its index in steps, and reads back the
        // messages its automatic recall shows.
        let store = MemoryStore::saved_from(&mut s);
        let mut opened = store.open_clean(s.counter());
        assert!(!opened.recall_state().index_complete());
        opened.begin_turn("Remind me: the widget frobnicates how often?", 3).unwrap();
        while let Some(request) = opened.recall_state().index_request() {
            let messages = store.messages_between(request.from_seq, request.to_seq);
            changes_plan(&mut opened, "index_stored_messages", |opened| {
                assert!(opened.index_stored_messages(request, messages).unwrap().is_empty());
            });
        }
        assert!(opened.recall_state().index_complete());
        let needed = opened.messages_needed_for_plan();
        assert!(!needed.is_empty(), "the concluded log's messages are not loaded");
        assert!(changes_plan(&mut opened, "attach_recalled_messages", |opened| {
            opened.attach_recalled_messages(store.messages_by_seq(&needed)).unwrap();
        }));
        assert!(opened.messages_needed_for_plan().is_empty());
        assert!(opened.build_plan().totals.recall_tokens > 0);
    }

    fn recall_embeddings_never_leave_a_stale_plan() {
        let mut s = with_history();
        s.enable_embeddings("toy");
        s.begin_turn("How did the widget frobnicate again?", 1).unwrap();
        let batch = s
            .recall_embedding_batch(Some("How did the widget frobnicate again?"), 100)
            .expect("embeddings are on");
        let vectors = (0..batch.texts.len()).map(|i| vec![1.0, i as f32]).collect();
        // The automatic recall ranks by words alone; the plan may stay as it was, but the one
        // kept must be current.
        changes_plan(&mut s, "absorb_recall_embeddings", |s| {
            s.absorb_recall_embeddings(&batch, vectors).unwrap();
        });
    }

    fn a_log_loaded_from_the_store_and_a_fork_never_see_a_stale_plan() {
        let mut s = with_history();
        let store = MemoryStore::saved_from(&mut s);
        let mut opened = store.open_clean(s.counter());
        opened.begin_turn("Show me the auth bug again.", 1).unwrap();
        changes_plan(&mut opened, "attach_effort_log", |opened| {
            opened.attach_effort_log("auth-bug", store.effort_log("auth-bug")).unwrap();
        });
        assert!(changes_plan(&mut opened, "expand_effort after loading", |opened| {
            opened.expand_effort("auth-bug").unwrap();
        }));
        let kept = s.build_plan();
        let fork = s.fork_at(s.turn() - 1, "earlier").unwrap();
        assert!(fork.build_plan() == fork.build_plan_afresh(), "the fork's plan is its own");
        assert!(fork.build_plan() != kept, "the fork is a turn earlier");
    }
}

/// Every public method that takes `&mut self` in the modules that change a session, read from
/// the sources: a new one fails this test until it is driven above.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn every_public_mutation_is_driven_by_a_test_here() {
    let covered = [
        "begin_turn",
        "execute_tool",
        "end_turn",
        "abort_turn",
        "open_effort",
        "switch_effort",
        "close_effort",
        "close_effort_with_fallback",
        "reopen_effort",
        "expand_effort",
        "collapse_effort",
        "search_efforts",
        "pin",
        "unpin",
        "attach",
        "compress_attachment",
        "expand_attachment",
        "set_config",
        "compact_if_needed",
        "upgrade_rolling_summary",
        "absorb_embeddings",
        "enable_embeddings",
        "mark_saved",
        "record_request",
        "report_usage",
        "attach_effort_log",
        "recall",
        "index_stored_messages",
        "attach_recalled_messages",
        "absorb_recall_embeddings",
        "record_host_tool_result",
    ];
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<_> = std::fs::read_dir(src.join("session"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files
        .extend(["persistence.rs", "tools/mod.rs", "snapshot.rs", "state.rs"].map(|f| src.join(f)));
    let mut missing = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("pub fn ") {
            let rest = &text[at + "pub fn ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let arguments = rest[name.len()..].trim_start_matches('(').trim_start();
            if arguments.starts_with("&mut self") && !covered.contains(&name.as_str()) {
                missing.push(format!("{}: {name}", file.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "drive these in tests/plan_cache.rs: {missing:?}"
    );
}
