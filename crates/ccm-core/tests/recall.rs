//! Full-text recall: every stored message findable by what was said in it, the evidence shown
//! verbatim within a budget, excerpts recalled into the context that decay, the automatic
//! recall within its budget, and an index rebuilt from storage that ranks like the live one.

use ccm_core::compaction::AttachmentKind;
use ccm_core::{Config, ContextMode, ExclusionReason, InclusionReason, Section, Session};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::portable_tests;
use ccm_test_support::{session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// 8 May 2023, 13:56 UTC.
const MAY_8: u64 = 1_683_554_160_000;
const DAY: u64 = 86_400_000;

/// A turn at a given time.
fn timed(s: &mut Session, user: &str, tools: &[(&str, &str)], assistant: &str, at: u64) {
    s.begin_turn(user, at).unwrap();
    for (name, args) in tools {
        let outcome = s.execute_tool(name, args);
        assert!(outcome.ok, "{name}: {}", outcome.result);
    }
    s.end_turn(assistant, at + 1_000).unwrap();
}

/// A long effort about a payment service in which one detail is said once, concluded with a
/// summary that does not keep it; then other efforts and chat push it out of working memory.
fn long_history() -> Session {
    let mut s = session();
    let open = [("open_effort", r#"{"name": "payment migration"}"#)];
    timed(
        &mut s,
        "Let's plan the payment service migration.",
        &open,
        "Sure, where do we start?",
        MAY_8,
    );
    for i in 0..14 {
        timed(
            &mut s,
            &format!("Step {i}: move the ledger tables and replay the invoices of batch {i}."),
            &[],
            &format!("Done for batch {i}; the ledger totals match."),
            MAY_8 + 60_000 * (i + 1),
        );
    }
    timed(
        &mut s,
        "Oh, and the staging database password rotates every 45 days through Vault.",
        &[],
        "Noted, I'll keep that in mind for the cut-over.",
        MAY_8 + 20 * 60_000,
    );
    for i in 14..28 {
        timed(
            &mut s,
            &format!("Step {i}: move the ledger tables and replay the invoices of batch {i}."),
            &[],
            &format!("Done for batch {i}; the ledger totals match."),
            MAY_8 + 60_000 * (i + 10),
        );
    }
    timed(
        &mut s,
        "The migration is finished.",
        &[(
            "close_effort",
            r#"{"summary": "Migrated the payment ledger in 28 batches; totals verified."}"#,
        )],
        "Great, concluded.",
        MAY_8 + DAY,
    );
    for topic in ["team offsite", "logo redesign", "quarterly report"] {
        let open = format!(r#"{{"name": "{topic}"}}"#);
        timed(
            &mut s,
            &format!("Now the {topic}."),
            &[("open_effort", &open)],
            "Started.",
            MAY_8 + 2 * DAY,
        );
        timed(
            &mut s,
            &format!("The {topic} is settled."),
            &[("close_effort", r#"{"summary": "Settled."}"#)],
            "Concluded.",
            MAY_8 + 2 * DAY,
        );
    }
    s
}

fn evidence_texts(evidence: &ccm_core::session::Evidence) -> Vec<String> {
    evidence
        .groups
        .iter()
        .flat_map(|g| g.excerpts.iter())
        .flat_map(|e| e.messages.iter().map(|m| m.text.clone()))
        .collect()
}

const DETAIL: &str = "Oh, and the staging database password rotates every 45 days through Vault.";

portable_tests! {
    fn a_detail_said_once_in_a_long_effort_is_found_by_its_content_words() {
        let mut s = long_history();
        // The question shares only content words with the detail, in other forms
        // ("rotation" / "rotates", "passwords" / "password").
        let question = "How often is there a rotation of the staging passwords?";
        let found = s.find_messages(question).unwrap();
        assert!(evidence_texts(&found).iter().any(|t| t == DETAIL), "{found:?}");
        // The effort-level ranking alone cannot show it: the summary does not keep it.
        let efforts = s.find_efforts(question).unwrap();
        assert!(efforts.results.iter().all(|hit| !hit.summary.contains("45 days")));
        // What the model reads, in Off mode: the tool result holds the message verbatim, with
        // its date.
        s.set_config(Config { context_mode: ContextMode::Off, ..s.config().clone() }).unwrap();
        s.begin_turn(question, MAY_8 + 3 * DAY).unwrap();
        let args = serde_json::json!({ "query": question }).to_string();
        let outcome = s.execute_tool("search_efforts", &args);
        assert!(outcome.ok, "{}", outcome.result);
        let text = outcome.result_json();
        assert!(text.contains(&format!("user: {DETAIL}")), "{text}");
        assert!(text.contains("8 May 2023"), "{text}");
        assert!(outcome.banner.is_none());
        s.abort_turn().unwrap();
        // In Light mode the automatic recall has already brought it into the request, and the
        // search does not show it twice.
        s.set_config(Config { context_mode: ContextMode::Light, ..s.config().clone() }).unwrap();
        s.begin_turn(question, MAY_8 + 3 * DAY).unwrap();
        let outcome = s.execute_tool("search_efforts", &args);
        assert!(!outcome.result_json().contains(DETAIL));
        assert!(s.build_plan().messages.iter().any(|m| m.content == DETAIL));
        s.abort_turn().unwrap();
    }

    fn ambient_chat_beyond_the_window_is_found() {
        let mut s = session();
        timed(&mut s, "My sister's wedding is on June 14 in Lisbon.", &[], "How lovely!", MAY_8);
        for i in 0..15 {
            timed(&mut s, &format!("Random chat number {i}."), &[], "Sure.", MAY_8 + (i + 1) * 60_000);
        }
        assert!(s.ambient_window().iter().all(|m| !m.content.contains("Lisbon")), "outside the window");
        let found = s.find_messages("when is the wedding in Lisbon").unwrap();
        let group = &found.groups[0];
        assert_eq!(group.log, ccm_core::session::EvidenceLog::Ambient);
        assert_eq!(group.excerpts[0].messages[0].text, "My sister's wedding is on June 14 in Lisbon.");
        assert_eq!(group.excerpts[0].date.as_deref(), Some("8 May 2023"));
        // In Light mode the planner brings it in for a question about it, with a reason.
        s.begin_turn("Remind me, when is the wedding in Lisbon?", MAY_8 + DAY).unwrap();
        let plan = s.build_plan();
        let item = plan.included.iter().find(|i| i.section == Section::Recalled).expect("recalled");
        assert!(matches!(&item.reason, InclusionReason::AutoRecalled { matched, .. } if matched.contains(&"lisbon".to_string())));
        let shown: Vec<&str> = plan.messages[item.first_message..item.first_message + item.message_count]
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(shown[0], "[Recalled from earlier chat · 8 May 2023]");
        assert!(shown.contains(&"My sister's wedding is on June 14 in Lisbon."));
        // Context order: recalled excerpts come after the summaries and before the window.
        let ambient = plan.included.iter().position(|i| i.section == Section::Ambient).unwrap();
        let recalled = plan.included.iter().position(|i| i.section == Section::Recalled).unwrap();
        assert!(recalled < ambient);
        s.abort_turn().unwrap();
    }

    fn a_recalled_excerpt_stays_while_referred_to_and_then_decays() {
        let mut s = long_history();
        s.begin_turn("I need the details about the Vault password rotation.", MAY_8 + 3 * DAY).unwrap();
        let outcome = s.execute_tool("recall", r#"{"query": "staging database password Vault"}"#);
        assert!(outcome.ok, "{}", outcome.result);
        let banner = outcome.banner.clone().unwrap();
        assert!(banner.starts_with("--- Recalled "), "{banner}");
        assert!(banner.contains("payment-migration"), "{banner}");
        assert!(outcome.result["tokens_loaded"].as_u64().unwrap() > 0);
        s.end_turn("The password rotates every 45 days.", MAY_8 + 3 * DAY).unwrap();
        let recalled_id = |s: &Session| {
            s.build_plan()
                .included
                .iter()
                .find(|i| matches!(i.reason, InclusionReason::Recalled { .. }))
                .map(|i| i.id.clone())
        };
        let id = recalled_id(&s).expect("the excerpt is in the context after the turn");
        // A turn that refers to it (two of its words) keeps it.
        turn(&mut s, "So the Vault rotation is automatic?", &[], "Yes.");
        let plan = s.build_plan();
        let item = plan.item(&id).expect("still there");
        assert!(matches!(item.reason, InclusionReason::Recalled { turns_since_reference: 0, turns_until_auto_collapse: 3, .. }));
        // Three turns about something else, and it leaves by itself.
        turn(&mut s, "What is for lunch?", &[], "Soup.");
        turn(&mut s, "Any plans for the weekend?", &[], "Hiking.");
        let report = turn(&mut s, "Nice weather today.", &[], "Indeed.");
        assert!(
            report.banners.iter().any(|b| b == &format!("--- Auto-collapsed recall: {id} (inactive for 3 turns) ---")),
            "{:?}",
            report.banners
        );
        assert_eq!(recalled_id(&s), None);
        // Nothing was deleted: the message is stored and found again.
        assert!(evidence_texts(&s.find_messages("Vault password").unwrap()).iter().any(|t| t == DETAIL));
    }

    fn automatic_recall_respects_its_budget_and_lists_what_it_left_out() {
        let mut s = long_history();
        s.set_config(Config { recall_token_budget: 120, ..s.config().clone() }).unwrap();
        s.begin_turn("Which batches of ledger invoices did we replay?", MAY_8 + 3 * DAY).unwrap();
        let plan = s.build_plan();
        let recalled: u64 = plan
            .included
            .iter()
            .filter(|i| matches!(i.reason, InclusionReason::AutoRecalled { .. }))
            .map(|i| i.tokens)
            .sum();
        assert!(recalled > 0 && recalled <= 120, "{recalled}");
        assert_eq!(plan.totals.recall_tokens, recalled);
        let left_out: Vec<_> = plan.excluded.iter().filter(|e| e.reason == ExclusionReason::OverRecallBudget).collect();
        assert!(!left_out.is_empty());
        assert!(left_out.iter().all(|e| e.id.starts_with("recall:") && e.section == Section::Recalled));
        assert_eq!(ExclusionReason::OverRecallBudget.code(), "over_recall_budget");
        assert!(plan.meter.auto_items >= 1);
        s.abort_turn().unwrap();
        // Heavy mode doubles the budget; Off mode recalls nothing and lists nothing.
        s.set_config(Config { context_mode: ContextMode::Heavy, ..s.config().clone() }).unwrap();
        s.begin_turn("Which batches of ledger invoices did we replay?", MAY_8 + 3 * DAY).unwrap();
        let heavy = s.build_plan().totals.recall_tokens;
        assert!(heavy > recalled && heavy <= 240, "{heavy}");
        s.abort_turn().unwrap();
        s.set_config(Config { context_mode: ContextMode::Off, ..s.config().clone() }).unwrap();
        s.begin_turn("Which batches of ledger invoices did we replay?", MAY_8 + 3 * DAY).unwrap();
        let off = s.build_plan();
        assert_eq!(off.totals.recall_tokens, 0);
        assert!(off.excluded.iter().all(|e| e.reason != ExclusionReason::OverRecallBudget));
        s.abort_turn().unwrap();
    }

    fn an_index_rebuilt_from_storage_ranks_like_the_live_one() {
        let mut s = long_history();
        timed(&mut s, "Let me attach the runbook.", &[], "Thanks.", MAY_8 + 3 * DAY);
        s.begin_turn("Here is the cut-over runbook.", MAY_8 + 4 * DAY).unwrap();
        let runbook = format!(
            "{} The rollback window closes at 02:00 UTC on the first Sunday. {}",
            ccm_test_support::synthetic_document(3, 300),
            ccm_test_support::synthetic_document(4, 300)
        );
        s.attach("runbook.md", AttachmentKind::File, &runbook, None).unwrap();
        s.end_turn("Read it.", MAY_8 + 4 * DAY).unwrap();
        for i in 0..12 {
            turn(&mut s, &format!("Unrelated message {i}."), &[], "Ok.");
        }
        let store = MemoryStore::saved_from(&mut s);
        let mut opened = store.open_clean(s.counter());
        let mut steps = 0;
        while let Some(request) = opened.recall_state().index_request() {
            steps += 1;
            let problems = opened
                .index_stored_messages(request, store.messages_between(request.from_seq, request.to_seq))
                .unwrap();
            assert!(problems.is_empty(), "{problems:?}");
        }
        assert!(steps >= 1 && opened.recall_state().index_complete());
        for query in ["password rotation Vault", "ledger invoices batch 7", "rollback window Sunday", "wedding"] {
            let args = serde_json::json!({ "query": query }).to_string();
            let needed = opened.messages_needed_for_tool("search_efforts", &args);
            opened.attach_recalled_messages(store.messages_by_seq(&needed)).unwrap();
            let live = s.find_messages(query).unwrap();
            let rebuilt = opened.find_messages(query).unwrap();
            assert_eq!(
                serde_json::to_string(&rebuilt).unwrap(),
                serde_json::to_string(&live).unwrap(),
                "{query}"
            );
        }
        // The attachment's passage is found by its words.
        let found = s.find_messages("When does the rollback window close?").unwrap();
        assert!(matches!(&found.groups[0].log, ccm_core::session::EvidenceLog::Attachment { name, .. } if name == "runbook.md"));
        assert!(evidence_texts(&found).iter().any(|t| t.contains("The rollback window closes at 02:00 UTC")));
    }

    fn two_files_attached_to_one_message_are_both_found_and_recalled() {
        // Two files on one message: before the fix, their passages shared recall keys and the
        // turn's end panicked while indexing the second.
        let mut s = long_history();
        s.begin_turn("Here are the two runbooks.", MAY_8 + 4 * DAY).unwrap();
        let first = format!(
            "{} The primary database fails over to the eu-west replica. {}",
            ccm_test_support::synthetic_document(5, 300),
            ccm_test_support::synthetic_document(6, 300)
        );
        let second = format!(
            "{} The rollback window closes at 02:00 UTC on the first Sunday. {}",
            ccm_test_support::synthetic_document(7, 300),
            ccm_test_support::synthetic_document(8, 300)
        );
        s.attach("failover.md", AttachmentKind::File, &first, None).unwrap();
        s.attach("rollback.md", AttachmentKind::File, &second, None).unwrap();
        s.end_turn("Read both.", MAY_8 + 4 * DAY).unwrap();
        for i in 0..12 {
            turn(&mut s, &format!("Unrelated message {i}."), &[], "Ok.");
        }
        for (query, name, sentence) in [
            ("When does the rollback window close?", "rollback.md", "The rollback window closes at 02:00 UTC"),
            ("Which replica does the primary database fail over to?", "failover.md", "fails over to the eu-west replica"),
        ] {
            let found = s.find_messages(query).unwrap();
            assert!(
                matches!(&found.groups[0].log, ccm_core::session::EvidenceLog::Attachment { name: n, .. } if n == name),
                "{query}: {:?}",
                found.groups[0].log
            );
            assert!(evidence_texts(&found).iter().any(|t| t.contains(sentence)), "{query}");
            // Recalled into the context, the passage is the right file's, and the request
            // replays from the stored records to the same bytes.
            s.begin_turn(query, MAY_8 + 5 * DAY).unwrap();
            let outcome = s.execute_tool("recall", &serde_json::json!({ "query": query }).to_string());
            assert!(outcome.ok, "{}", outcome.result);
            let plan = s.build_plan();
            assert!(plan.messages.iter().any(|m| m.content.contains(sentence)), "{query}");
            assert_eq!(s.replay_recipe(&plan.recipe).unwrap(), plan.messages);
            s.abort_turn().unwrap();
        }
    }

    fn bad_recall_calls_change_nothing_and_say_why() {
        let mut s = long_history();
        s.begin_turn("hm", MAY_8 + 3 * DAY).unwrap();
        let before = s.build_plan();
        for (args, needle) in [
            (r#"{"query": "the of and"}"#, "no searchable word"),
            (r#"{"query": "ledger", "effort": "no-such-effort"}"#, "no-such-effort"),
            (r#"{"query": "zebra unicorn"}"#, "nothing stored outside the context matches"),
            (r#"{"effort": "payment-migration"}"#, "query"),
            ("[1, 2]", "expected a JSON object"),
        ] {
            let outcome = s.execute_tool("recall", args);
            assert!(!outcome.ok, "{args}");
            assert!(outcome.banner.is_none());
            let error = outcome.result["error"].as_str().unwrap();
            assert!(error.contains(needle), "{args}: {error}");
        }
        assert!(s.build_plan() == before, "nothing changed");
        s.abort_turn().unwrap();
    }

    fn aborting_a_turn_takes_back_its_recall_and_a_fork_forgets_later_messages() {
        let mut s = long_history();
        let before = s.build_plan();
        s.begin_turn("Vault password?", MAY_8 + 3 * DAY).unwrap();
        assert!(s.execute_tool("recall", r#"{"query": "staging database password Vault"}"#).ok);
        s.abort_turn().unwrap();
        assert!(s.build_plan() == before);
        turn(&mut s, "The new office is in Porto.", &[], "Great.");
        assert!(s.find_messages("office Porto").unwrap().groups.is_empty(), "in the window: shown already");
        let mut fork = s.fork_at(s.turn() - 1, "before porto").unwrap();
        for i in 0..12 {
            turn(&mut s, &format!("Later chat {i}."), &[], "Ok.");
            turn(&mut fork, &format!("Later chat {i}."), &[], "Ok.");
        }
        assert!(evidence_texts(&s.find_messages("office Porto").unwrap()).iter().any(|t| t == "The new office is in Porto."));
        assert!(fork.find_messages("office Porto").unwrap().groups.is_empty(), "the fork never said it");
        assert!(evidence_texts(&fork.find_messages("Vault password").unwrap()).iter().any(|t| t == DETAIL));
    }

    fn embeddings_fuse_meaning_into_the_search_and_bad_vectors_change_nothing() {
        let mut s = session();
        timed(&mut s, "We moored the boat in the harbour overnight.", &[], "Sounds calm.", MAY_8);
        for i in 0..14 {
            timed(&mut s, &format!("Random chat number {i}."), &[], "Sure.", MAY_8 + (i + 1) * 60_000);
        }
        let question = "Where did we leave the vessel at the sea port?";
        let texts = |s: &Session| evidence_texts(&s.find_messages(question).unwrap());
        assert!(!texts(&s).iter().any(|t| t.contains("harbour")), "no word in common");
        assert!(s.recall_embedding_batch(Some(question), 10).is_none(), "embeddings are off");
        s.enable_embeddings("toy");
        assert_eq!(s.recall_state().embeddings_model(), Some("toy"));
        let batch = s.recall_embedding_batch(Some(question), 1_000).unwrap();
        assert_eq!(batch.query.as_deref(), Some(question));
        assert_eq!(batch.texts.len(), 1 + s.stored_message_count());
        // A toy model: texts about mooring and harbours point one way, the rest another.
        let vector = |text: &str| {
            if text.contains("harbour") || text.contains("port") {
                vec![1.0, 0.0]
            } else {
                vec![0.0, 1.0]
            }
        };
        // Vectors that do not fit are refused whole: nothing is kept.
        let mut mixed = batch.texts.iter().map(|t| vector(t)).collect::<Vec<_>>();
        mixed[2] = vec![1.0];
        assert!(s.absorb_recall_embeddings(&batch, mixed).is_err());
        assert!(s.absorb_recall_embeddings(&batch, vec![vec![1.0, 0.0]]).is_err());
        let mut nan = batch.texts.iter().map(|t| vector(t)).collect::<Vec<_>>();
        nan[1] = vec![f32::NAN, 0.0];
        assert!(s.absorb_recall_embeddings(&batch, nan).is_err());
        assert_eq!(s.recall_state().texts_without_vectors(), s.stored_message_count());
        let vectors = batch.texts.iter().map(|t| vector(t)).collect();
        s.absorb_recall_embeddings(&batch, vectors).unwrap();
        assert_eq!(s.recall_state().texts_without_vectors(), 0);
        assert!(texts(&s).iter().any(|t| t.contains("harbour")), "{:?}", texts(&s));
        // A query without a vector ranks by words alone, as before.
        assert!(!evidence_texts(&s.find_messages("vessel sea port location").unwrap())
            .iter()
            .any(|t| t.contains("harbour")));
    }
}
