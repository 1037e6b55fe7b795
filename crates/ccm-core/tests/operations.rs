//! Slice 1–2 behaviour: effort operations, banners, routing, expansion and its token metrics,
//! and the error contract of the tools.

use ccm_core::{Config, EffortState, ExclusionReason, InclusionReason, Role, Section, Session};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const AUTH_SUMMARY: &str = "Fixed 401 errors: refresh token TTL raised from 3600 to 86400 seconds.";

/// Calls a tool that must fail and checks the contract: an error for the model, no banner, and
/// a session that is byte-for-byte what it was (including its next context).
fn assert_refused(session: &mut ccm_core::Session, name: &str, args: &str, expected: &str) {
    let before = session.to_json().unwrap();
    let plan_before = session.build_plan().to_json();
    let outcome = session.execute_tool(name, args);
    assert!(!outcome.ok, "{name}({args}) should fail");
    assert_eq!(outcome.banner, None);
    let error = outcome.result["error"].as_str().expect("error message");
    assert!(
        error.contains(expected),
        "error {error:?} should mention {expected:?}"
    );
    assert_eq!(
        outcome.result.as_object().unwrap().len(),
        1,
        "only the error key"
    );
    assert_eq!(
        session.to_json().unwrap(),
        before,
        "a refused call must change nothing"
    );
    assert_eq!(session.build_plan().to_json(), plan_before);
}

portable_tests! {
    fn open_effort_makes_it_active_and_routes_the_turn_to_it() {
        let mut s = session();
        let report = turn(&mut s, "Let's work on the auth bug.", &[("open_effort", r#"{"name": "Auth Bug"}"#)], "Started.");
        assert_eq!(report.routed_to.as_deref(), Some("auth-bug"));
        assert_eq!(report.banners, ["--- Started effort: auth-bug ---"]);
        assert_eq!(s.efforts().active_id(), Some("auth-bug"));
        let effort = s.efforts().get("auth-bug").unwrap();
        assert_eq!(effort.name, "Auth Bug");
        assert_eq!(effort.messages.len(), 2);
        assert_eq!(effort.messages[0].role, Role::User);
        assert!(s.ambient().messages().is_empty());
    }

    fn several_efforts_can_be_open_and_only_the_active_one_receives_messages() {
        let mut s = session();
        turn(&mut s, "Start guild feature.", &[("open_effort", r#"{"name": "guild feature"}"#)], "ok");
        turn(&mut s, "And an api refactor.", &[("open_effort", r#"{"name": "api refactor"}"#)], "ok");
        assert_eq!(s.efforts().open_ids(), ["guild-feature", "api-refactor"]);
        assert_eq!(s.efforts().active_id(), Some("api-refactor"));
        let guild_before = s.efforts().get("guild-feature").unwrap().messages.len();
        turn(&mut s, "Endpoints first.", &[], "Sure.");
        assert_eq!(s.efforts().get("guild-feature").unwrap().messages.len(), guild_before);
        // Its opening exchange and the one after.
        assert_eq!(s.efforts().get("api-refactor").unwrap().messages.len(), 4);

        let report = turn(&mut s, "Back to guilds.", &[("switch_effort", r#"{"id": "guild-feature"}"#)], "Switched.");
        // The exchange that asked for the switch belongs to the effort switched to.
        assert_eq!(report.routed_to.as_deref(), Some("guild-feature"));
        assert_eq!(report.banners, ["--- Switched to effort: guild-feature ---"]);
        let report = turn(&mut s, "Guilds have fifty members.", &[], "Noted.");
        assert_eq!(report.routed_to.as_deref(), Some("guild-feature"));
    }

    // Rule: the exchange whose turn opens an effort states that effort's problem, so it belongs
    // to the effort it opened (the first, if the turn opens several), even while another effort
    // was active when the turn began.
    fn rule_the_exchange_that_opens_an_effort_is_stored_in_that_effort() {
        let mut s = session();
        turn(&mut s, "Start guild feature.", &[("open_effort", r#"{"name": "guild feature"}"#)], "ok");
        let report = turn(
            &mut s,
            "Let's work on the billing export: the CSV misses the VAT column.",
            &[("open_effort", r#"{"name": "billing export"}"#)],
            "Started; which CSV writer do you use?",
        );
        assert_eq!(report.routed_to.as_deref(), Some("billing-export"));
        let log: Vec<&str> = s.efforts().get("billing-export").unwrap().messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(log, ["Let's work on the billing export: the CSV misses the VAT column.", "Started; which CSV writer do you use?"]);
        assert_eq!(s.efforts().get("guild-feature").unwrap().messages.len(), 2, "guild-feature keeps only its own opening");
        assert_eq!(s.routing_target(), None, "outside a turn nothing is routed");

        // A turn that opens two efforts gives its exchange to the first.
        let report = turn(
            &mut s,
            "Two more: the invoice layout and the tax rates.",
            &[("open_effort", r#"{"name": "invoice layout"}"#), ("open_effort", r#"{"name": "tax rates"}"#)],
            "Both started.",
        );
        assert_eq!(report.routed_to.as_deref(), Some("invoice-layout"));
        assert_eq!(s.efforts().active_id(), Some("tax-rates"));
        assert!(s.efforts().get("tax-rates").unwrap().messages.is_empty());

        // While the turn runs, routing_target already says where the exchange will go.
        s.begin_turn("And the exports folder.", 0).unwrap();
        s.execute_tool("open_effort", r#"{"name": "exports folder"}"#);
        assert_eq!(s.routing_target(), Some("exports-folder"));
        s.end_turn("Started.", 0).unwrap();
    }

    // The system prompt: the preamble (the configuration's, or the default), when to call each
    // effort tool, and slice 4's memory section; every tool the model gets is either explained
    // there or deliberately left to its definition.
    fn the_system_prompt_explains_every_effort_tool_and_how_memory_works() {
        let s = session();
        let prompt = s.system_prompt();
        assert!(prompt.starts_with(ccm_core::prompt::DEFAULT_PREAMBLE));
        let guided = ["open_effort", "close_effort", "switch_effort", "reopen_effort", "expand_effort", "collapse_effort", "effort_status"];
        for tool in guided {
            assert!(prompt.contains(&format!("### {tool}\n")), "no guidance for {tool}");
        }
        let memory = &prompt[prompt.find("## Memory").expect("the memory section")..];
        for named in ["search_efforts(query)", "recall(query)", "expand_effort(id)", "[Recalled"] {
            assert!(memory.contains(named), "the memory section does not mention {named}");
        }
        // Pins are the person's tool as much as the model's: their definitions describe them.
        let by_definition = ["pin_context", "unpin_context"];
        let mut covered: Vec<&str> = guided.iter().chain(["search_efforts", "recall"].iter()).chain(by_definition.iter()).copied().collect();
        covered.sort_unstable();
        let mut tools = ccm_core::tools::TOOL_NAMES.to_vec();
        tools.sort_unstable();
        assert_eq!(covered, tools, "a new tool needs guidance in the prompt or a place in this list");
        // The order: preamble, efforts, memory.
        assert!(prompt.find("## Efforts").unwrap() < prompt.find("## Memory").unwrap());
        // A configured preamble replaces the opening paragraph only.
        let custom = Session::new(Config { system_prompt: Some("You answer like a ship captain.".into()), ..Config::default() }).unwrap();
        assert!(custom.system_prompt().starts_with("You answer like a ship captain.\n\n## Efforts"));
        assert!(!custom.system_prompt().contains(ccm_core::prompt::DEFAULT_PREAMBLE));
        assert!(custom.system_prompt().ends_with(ccm_core::prompt::MEMORY_SECTION));
        // The plan counts it once, first.
        let plan = s.build_plan();
        assert_eq!(plan.included[0].id, "system");
        assert_eq!(plan.messages[0].content, prompt);
    }

    // Search indexes at most LOG_TERMS words of a concluded effort's log besides its summary:
    // the words the log uses most, weighed by how few efforts share them.
    fn a_concluded_log_is_indexed_by_its_most_used_distinctive_words_up_to_the_cap() {
        use ccm_core::search::LOG_TERMS;
        let word = |prefix: &str, n: usize| format!("{prefix}{}", ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi"][n % 8].repeat(1 + n / 8));
        let mut s = session();
        // An earlier effort whose log uses "shared" words too.
        turn(&mut s, "Start the old work.", &[("open_effort", r#"{"name": "old work"}"#)], "ok");
        let shared: Vec<String> = (0..10).map(|n| word("shared", n)).collect();
        turn(&mut s, &shared.join(" "), &[], "noted");
        turn(&mut s, "Done.", &[("close_effort", r#"{"summary": "Old work finished."}"#)], "ok");
        // The new effort: 60 frequent words of its own (three times each), 20 said once, and
        // the shared words three times each.
        turn(&mut s, "Start the new work.", &[("open_effort", r#"{"name": "new work"}"#)], "ok");
        let frequent: Vec<String> = (0..60).map(|n| word("often", n)).collect();
        let once: Vec<String> = (0..20).map(|n| word("once", n)).collect();
        for _ in 0..3 {
            turn(&mut s, &frequent.join(" "), &[], &shared.join(" "));
        }
        turn(&mut s, &once.join(" "), &[], "ok");
        turn(&mut s, "Done.", &[("close_effort", r#"{"summary": "New work finished."}"#)], "ok");
        let terms = &s.efforts().get("new-work").unwrap().summary.as_ref().unwrap().terms;
        assert_eq!(terms.len(), LOG_TERMS);
        assert!(terms.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        assert!(terms.iter().all(|t| frequent.contains(t)), "only its frequent, distinctive words: {terms:?}");
        // A word of its log beyond the cap is not found by it; one within it is.
        let found = |query: &str| s.find_efforts(query).unwrap().results.iter().any(|h| h.id == "new-work");
        assert!(found(&terms[0]));
        assert!(!found(&once[0]), "a word said once is not among its indexed terms");
    }

    // Rule: the exchange that switches to an effort, or reopens one, is about that effort
    // ("back to the auth bug"), so it is stored there, as an opening exchange is stored in the
    // effort it opens; the effort left keeps only its own words, and its summary with them.
    fn rule_the_exchange_that_switches_or_reopens_is_stored_in_the_effort_it_activates() {
        let mut s = session();
        turn(&mut s, "Start the auth bug: 401 after an hour.", &[("open_effort", r#"{"name": "auth bug"}"#)], "ok");
        turn(&mut s, "Also the party: bowling on Friday.", &[("open_effort", r#"{"name": "party"}"#)], "ok");
        let party_before = s.efforts().get("party").unwrap().messages.len();
        s.begin_turn("Back to the auth bug: the refresh token TTL is 3600.", 0).unwrap();
        assert_eq!(s.routing_target(), Some("party"));
        s.execute_tool("switch_effort", r#"{"id": "auth-bug"}"#);
        assert_eq!(s.routing_target(), Some("auth-bug"));
        let report = s.end_turn("Then raise it to a day.", 0).unwrap();
        assert_eq!(report.routed_to.as_deref(), Some("auth-bug"));
        assert_eq!(s.efforts().get("party").unwrap().messages.len(), party_before);
        assert!(s.efforts().get("auth-bug").unwrap().messages.iter().any(|m| m.content.contains("TTL is 3600")));
        // The party's extractive summary keeps to the party.
        turn(&mut s, "Party is sorted.", &[("switch_effort", r#"{"id": "party"}"#), ("close_effort", "{}")], "Concluded.");
        let summary = &s.efforts().get("party").unwrap().summary.as_ref().unwrap().text;
        assert!(!summary.contains("TTL"), "{summary}");

        // Reopening: the turn's exchange goes to the reopened effort.
        let report = turn(&mut s, "Let's reopen the party, the venue changed.", &[("reopen_effort", r#"{"id": "party"}"#)], "Reopened.");
        assert_eq!(report.routed_to.as_deref(), Some("party"));
        // An aborted turn forgets its switch: the next exchange goes where it went before.
        s.begin_turn("Switch to auth.", 0).unwrap();
        s.execute_tool("switch_effort", r#"{"id": "auth-bug"}"#);
        s.abort_turn().unwrap();
        let report = turn(&mut s, "More on the venue.", &[], "ok");
        assert_eq!(report.routed_to.as_deref(), Some("party"));
    }

    // Rule (slice 2 routing table): while efforts are open, messages go to the active effort's
    // log. Concluding the active effort while others stay open makes the first of them (in
    // opening order) active, as the original implementation does.
    fn rule_concluding_the_active_effort_activates_the_first_open_one() {
        let mut s = session();
        turn(&mut s, "Start guild feature.", &[("open_effort", r#"{"name": "guild feature"}"#)], "ok");
        turn(&mut s, "And an api refactor.", &[("open_effort", r#"{"name": "api refactor"}"#)], "ok");
        turn(&mut s, "And the docs.", &[("open_effort", r#"{"name": "docs"}"#)], "ok");
        let closing = s.execute_tool("close_effort", r#"{"summary": "Docs written."}"#);
        assert!(closing.ok, "{}", closing.result);
        assert_eq!(closing.result["now_active"], "guild-feature");
        assert_eq!(s.efforts().active_id(), Some("guild-feature"));
        let report = turn(&mut s, "Guild members need roles.", &[], "Noted.");
        assert_eq!(report.routed_to.as_deref(), Some("guild-feature"));
        assert!(s.ambient().messages().is_empty(), "nothing went to the ambient log while efforts were open");

        // Concluding an effort that is not active leaves the active one as it is.
        let closing = s.execute_tool("close_effort", r#"{"id": "api-refactor", "summary": "Refactored."}"#);
        assert!(closing.ok, "{}", closing.result);
        assert_eq!(closing.result["now_active"], "guild-feature");
        assert_eq!(s.efforts().active_id(), Some("guild-feature"));

        // The last open effort concluded: no effort is active, and chat goes to ambient.
        let closing = s.execute_tool("close_effort", r#"{"summary": "Guilds done."}"#);
        assert!(closing.ok, "{}", closing.result);
        assert!(closing.result.get("now_active").is_none());
        assert_eq!(s.efforts().active_id(), None);
        assert_eq!(chatter(&mut s).routed_to, None);
    }

    fn messages_go_to_ambient_without_an_active_effort() {
        let mut s = session();
        let report = chatter(&mut s);
        assert_eq!(report.routed_to, None);
        assert_eq!(s.ambient().messages().len(), 2);
        assert_eq!(s.ambient().messages()[0].content, "How is the weather today?");
    }

    fn closing_replaces_the_raw_log_with_the_summary() {
        let mut s = session();
        let id = concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 3);
        let effort = s.efforts().get(&id).unwrap();
        let summary = effort.summary.as_ref().unwrap();
        assert_eq!(summary.text, AUTH_SUMMARY);
        let plan = s.build_plan();
        let included = plan.included.iter().find(|i| i.id == "summary:auth-bug").expect("summary included");
        assert_eq!(included.tokens, u64::from(summary.tokens));
        let excluded = plan.excluded.iter().find(|i| i.id == "effort:auth-bug").expect("raw log excluded");
        assert_eq!(excluded.reason, ExclusionReason::Summarized);
        assert_eq!(excluded.tokens, effort.raw_tokens);
        assert!(plan.messages.iter().any(|m| m.content == format!("[Concluded effort: auth-bug] {AUTH_SUMMARY}")));
        assert!(!plan.messages.iter().any(|m| m.content.contains("frobnicates")), "raw log must leave the context");
        // The raw log itself is untouched.
        assert_eq!(effort.messages.len(), 2 * 5);
    }

    fn close_banner_carries_the_summary_and_a_missing_summary_is_extractive() {
        let mut s = session();
        s.begin_turn("Let's work on the cache layer.", 0).unwrap();
        s.execute_tool("open_effort", r#"{"name": "cache layer"}"#);
        s.end_turn("The cache layer evicts entries with LRU and a 60 second TTL.", 0).unwrap();
        s.begin_turn("Done with the cache layer.", 0).unwrap();
        let outcome = s.execute_tool("close_effort", "{}");
        assert!(outcome.ok, "{}", outcome.result);
        assert_eq!(outcome.result["summary_source"], "extractive");
        let banner = outcome.banner.unwrap();
        assert!(banner.starts_with("--- Concluded effort: cache-layer ---\ncache layer: "), "{banner}");
        assert!(banner.contains("(extractive summary: no summary was provided)"));
        let summary = s.efforts().get("cache-layer").unwrap().summary.clone().unwrap();
        assert!(summary.text.contains("LRU"), "{}", summary.text);
        s.end_turn("Concluded.", 0).unwrap();

        let mut s = session();
        s.execute_tool("open_effort", r#"{"name": "x"}"#);
        let outcome = s.execute_tool("close_effort", r#"{"summary": "Chose option B."}"#);
        assert_eq!(outcome.banner.as_deref(), Some("--- Concluded effort: x ---\nChose option B."));
    }

    fn expansion_loads_exactly_the_raw_log_and_collapse_removes_it() {
        let mut s = session();
        let id = concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 4);
        chatter(&mut s);
        let raw = s.efforts().get(&id).unwrap().raw_tokens;
        let summary_tokens = u64::from(s.efforts().get(&id).unwrap().summary.as_ref().unwrap().tokens);
        s.begin_turn("What exactly did we do for the auth bug?", 0).unwrap();
        let before = s.build_plan();
        let outcome = s.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#);
        assert_eq!(outcome.banner, Some(format!("--- Expanded effort: auth-bug ({raw} tokens loaded) ---")));
        assert_eq!(outcome.result["tokens_loaded"], raw);
        let expanded = s.build_plan();
        // The raw log enters with exactly its stored size, and the summary it replaces leaves;
        // so do the excerpts of it that the automatic recall had brought in for the question,
        // since the whole log now shows them.
        assert!(before.totals.recall_tokens > 0, "the question recalls the auth bug's messages");
        assert_eq!(expanded.totals.recall_tokens, 0);
        assert_eq!(
            expanded.totals.context_tokens,
            before.totals.context_tokens - before.totals.recall_tokens + raw - summary_tokens
        );
        assert_eq!(expanded.totals.expansion_tokens, raw);
        let item = expanded.included.iter().find(|i| i.id == "effort:auth-bug").unwrap();
        assert_eq!(item.section, Section::Expanded);
        assert_eq!(item.tokens, raw);
        assert!(matches!(item.reason, InclusionReason::Expanded { turns_since_reference: 0, turns_until_auto_collapse: 3 }));
        let summary = expanded.excluded.iter().find(|i| i.id == "summary:auth-bug").unwrap();
        assert_eq!(summary.reason, ExclusionReason::Expanded);
        // Every raw message is back, in order, byte-identical.
        let raw_messages: Vec<&str> = s.efforts().get(&id).unwrap().messages.iter().map(|m| m.content.as_str()).collect();
        let shown: Vec<&str> = expanded.messages[item.first_message + 1..item.first_message + item.message_count].iter().map(|m| m.content.as_str()).collect();
        assert_eq!(shown, raw_messages);
        s.end_turn("Here are the details.", 0).unwrap();

        s.begin_turn("Thanks, got it.", 0).unwrap();
        let before_collapse = s.build_plan();
        let outcome = s.execute_tool("collapse_effort", r#"{"id": "auth-bug"}"#);
        assert_eq!(outcome.banner.as_deref(), Some("--- Collapsed effort: auth-bug (back to summary) ---"));
        let collapsed = s.build_plan();
        assert_eq!(collapsed.totals.context_tokens, before_collapse.totals.context_tokens - raw + summary_tokens);
        assert_eq!(collapsed.totals.expansion_tokens, 0);
        s.end_turn("Collapsed.", 0).unwrap();
        assert_eq!(s.efforts().decay_stats().manual_collapses, 1);
    }

    fn expanded_logs_sit_after_ambient_and_before_open_efforts_with_the_active_last() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        chatter(&mut s);
        turn(&mut s, "Start a.", &[("open_effort", r#"{"name": "alpha"}"#)], "ok");
        turn(&mut s, "Start b.", &[("open_effort", r#"{"name": "beta"}"#)], "ok");
        turn(&mut s, "Back to alpha, and show the auth bug.", &[("switch_effort", r#"{"id": "alpha"}"#), ("expand_effort", r#"{"id": "auth-bug"}"#)], "ok");
        let plan = s.build_plan();
        let sections: Vec<(Section, &str)> = plan.included.iter().map(|i| (i.section, i.id.as_str())).collect();
        let position = |id: &str| sections.iter().position(|(_, i)| *i == id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(sections[0].1, "system");
        let last_ambient = sections.iter().rposition(|(sec, _)| *sec == Section::Ambient).unwrap();
        assert!(last_ambient < position("effort:auth-bug"));
        assert!(position("effort:auth-bug") < position("effort:beta"));
        assert!(position("effort:beta") < position("effort:alpha"), "active effort last");
        assert_eq!(plan.included.last().unwrap().reason, InclusionReason::ActiveEffort);
        assert_eq!(plan.messages.len(), plan.included.iter().map(|i| i.message_count).sum::<usize>());
    }

    fn expansion_metrics_report_overhead_and_savings() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 4);
        let report = turn(&mut s, "Show the auth bug details.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "Here.");
        let m = report.metrics;
        let raw = s.efforts().get("auth-bug").unwrap().raw_tokens;
        assert_eq!(m.expansion_tokens, raw);
        assert!((m.expansion_overhead - raw as f64 / m.context_tokens as f64).abs() < 1e-12);
        assert_eq!(m.naive_tokens, s.naive_tokens());
        assert!((m.savings_vs_naive - (1.0 - m.context_tokens as f64 / m.naive_tokens as f64)).abs() < 1e-12);
        assert_eq!(m.context_tokens, s.working_tokens());
        assert_eq!(m.expanded, ["auth-bug"]);
    }

    fn reopen_brings_the_full_log_back_and_makes_it_active() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        let report = turn(&mut s, "The auth bug is back.", &[("reopen_effort", r#"{"id": "auth-bug"}"#)], "Reopened.");
        assert_eq!(report.banners, ["--- Reopened effort: auth-bug ---"]);
        assert_eq!(s.efforts().active_id(), Some("auth-bug"));
        let plan = s.build_plan();
        assert!(plan.included.iter().any(|i| i.id == "effort:auth-bug" && i.section == Section::Open));
        assert!(!plan.included.iter().any(|i| i.id == "summary:auth-bug"));
        // It can be concluded again with a new summary.
        let outcome = s.execute_tool("close_effort", r#"{"summary": "Fixed again."}"#);
        assert!(outcome.ok, "{}", outcome.result);
    }

    fn effort_status_reports_states_sizes_and_countdowns() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        concluded_effort(&mut s, "perf fix", "Replaced N+1 queries with a JOIN.", 1);
        turn(&mut s, "Start guild.", &[("open_effort", r#"{"name": "guild"}"#), ("expand_effort", r#"{"id": "auth-bug"}"#)], "ok");
        let status = s.effort_status();
        let states: Vec<(&str, EffortState)> = status.efforts.iter().map(|e| (e.id.as_str(), e.state)).collect();
        assert_eq!(states, [("guild", EffortState::Active), ("auth-bug", EffortState::Expanded), ("perf-fix", EffortState::Concluded)]);
        let auth = &status.efforts[1];
        assert_eq!(auth.raw_tokens, s.efforts().get("auth-bug").unwrap().raw_tokens);
        assert_eq!(auth.turns_until_auto_collapse, Some(3));
        assert_eq!(status.expansion_tokens, auth.raw_tokens);
        assert!(status.efforts[2].turns_until_eviction.is_some());
        let outcome = s.execute_tool("effort_status", "");
        assert!(outcome.ok);
        assert_eq!(outcome.banner, None);
        assert_eq!(outcome.result["active"], "guild");
    }

    fn wrong_state_calls_are_refused_with_precise_errors_and_change_nothing() {
        let mut s = session();
        concluded_effort(&mut s, "auth bug", AUTH_SUMMARY, 1);
        turn(&mut s, "Start guild.", &[("open_effort", r#"{"name": "guild"}"#)], "ok");
        s.begin_turn("Let's try some things.", 0).unwrap();
        assert_refused(&mut s, "expand_effort", r#"{"id": "guild"}"#, "cannot expand 'guild': it is open");
        assert_refused(&mut s, "switch_effort", r#"{"id": "auth-bug"}"#, "cannot switch to 'auth-bug': it is concluded");
        assert_refused(&mut s, "switch_effort", r#"{"id": "guild"}"#, "already the active effort");
        assert_refused(&mut s, "collapse_effort", r#"{"id": "auth-bug"}"#, "cannot collapse 'auth-bug': it is not expanded");
        assert_refused(&mut s, "collapse_effort", r#"{"id": "guild"}"#, "it is open");
        assert_refused(&mut s, "close_effort", r#"{"id": "auth-bug", "summary": "x"}"#, "already concluded");
        assert_refused(&mut s, "close_effort", r#"{"summary": "   "}"#, "summary for 'guild' is empty");
        assert_refused(&mut s, "reopen_effort", r#"{"id": "guild"}"#, "already open");
        assert_refused(&mut s, "expand_effort", r#"{"id": "nope"}"#, "no effort with id 'nope'; efforts in working memory: guild, auth-bug");
        assert_refused(&mut s, "open_effort", r#"{"name": "Guild!"}"#, "an effort with id 'guild' already exists (open and active)");
        assert_refused(&mut s, "open_effort", r#"{"name": "auth bug"}"#, "already exists (concluded)");
        assert_refused(&mut s, "open_effort", r#"{"name": "  ?! "}"#, "must contain at least one letter or digit");
        assert_refused(&mut s, "search_efforts", r#"{"query": "the a of"}"#, "has no searchable word");
        s.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#);
        assert_refused(&mut s, "expand_effort", r#"{"id": "auth-bug"}"#, "already expanded");
        let report = s.end_turn("ok", 0).unwrap();
        assert_eq!(report.banners.len(), 1, "only the successful expansion has a banner: {:?}", report.banners);
    }

    fn malformed_arguments_and_unknown_tools_are_refused() {
        let mut s = session();
        s.execute_tool("open_effort", r#"{"name": "guild"}"#);
        assert_refused(&mut s, "open_effort", "{not json", "invalid arguments for open_effort: not valid JSON");
        assert_refused(&mut s, "open_effort", "[1, 2]", "expected a JSON object, got an array");
        assert_refused(&mut s, "open_effort", "{}", "missing field `name`");
        assert_refused(&mut s, "open_effort", r#"{"name": 42}"#, "invalid type");
        assert_refused(&mut s, "expand_effort", r#"{"id": null}"#, "invalid type");
        assert_refused(&mut s, "delete_effort", r#"{"id": "guild"}"#, "unknown tool 'delete_effort'; available tools: open_effort, close_effort");
        // No active effort and no id.
        let mut empty = session();
        assert_refused(&mut empty, "close_effort", "{}", "no effort is active");
    }

    fn unknown_fields_are_ignored_and_names_resolve_to_ids() {
        let mut s = session();
        let outcome = s.execute_tool("open_effort", r#"{"name": "Guild Feature", "priority": "high"}"#);
        assert!(outcome.ok, "{}", outcome.result);
        // A model that passes the name instead of the id still reaches the effort.
        let outcome = s.execute_tool("close_effort", r#"{"id": "Guild Feature", "summary": "Done."}"#);
        assert!(outcome.ok, "{}", outcome.result);
        assert_eq!(outcome.result["id"], "guild-feature");
    }

    fn tool_definitions_cover_every_tool_with_object_schemas() {
        let definitions = ccm_core::tool_definitions();
        let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ccm_core::tools::TOOL_NAMES);
        for d in &definitions {
            assert_eq!(d.parameters["type"], "object", "{}", d.name);
            assert!(d.description.len() > 30, "{} needs a real description", d.name);
            for required in d.parameters["required"].as_array().unwrap() {
                assert!(d.parameters["properties"].get(required.as_str().unwrap()).is_some());
            }
        }
    }

    fn turns_cannot_overlap_or_end_twice() {
        let mut s = session();
        assert_eq!(s.end_turn("x", 0).unwrap_err().to_string(), "no turn is in progress; call begin_turn first");
        s.begin_turn("a", 0).unwrap();
        assert_eq!(s.begin_turn("b", 0).unwrap_err().to_string(), "turn 1 is still in progress; call end_turn or abort_turn first");
        s.end_turn("c", 0).unwrap();
        assert_eq!(s.turn(), 1);
    }
}
