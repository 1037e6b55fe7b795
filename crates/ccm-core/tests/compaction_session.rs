//! Graduated compaction inside a session: a long, heavy run against a small window, the
//! effects of each level on the plan, and recoverability of everything moved.

use ccm_core::compaction::{AttachmentKind, AttachmentMode, CompactionConfig};
use ccm_core::plan::{ExclusionReason, InclusionReason};
use ccm_core::{Config, Session};
use ccm_test_support::portable_tests;
use ccm_test_support::{turn, WORDS};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// The proof run's synthetic documents: large, distinct, deterministic.
fn document(seed: usize, words: usize) -> String {
    ccm_test_support::synthetic_document(seed, words)
}

fn small_window() -> Config {
    Config {
        context_window: 8_192,
        reserved_output_tokens: 1_024,
        ..Config::default()
    }
}

/// The effort call the heavy run makes at turn `t`, if any: an effort opens at turn 5 of every
/// 40 and is concluded at turn 25, so the run has open and concluded efforts beside its chat.
fn effort_call(t: usize) -> Option<(&'static str, String)> {
    match t % 40 {
        5 => Some(("open_effort", format!(r#"{{"name": "topic {t}"}}"#))),
        25 => Some((
            "close_effort",
            r#"{"summary": "Settled the approach and wrote it down."}"#.to_string(),
        )),
        _ => None,
    }
}

/// Drives `turns` turns of chat with an attachment every `every` turns, an effort now and then.
/// Returns the session and every attachment's original text.
fn heavy_run(turns: usize, every: usize) -> (Session, Vec<(String, String)>) {
    heavy_run_observed(turns, every, &mut |_| {})
}

/// [`heavy_run`], calling `observe` with the session after every turn, so a test can check what
/// each turn's plan shows rather than only the last one.
fn heavy_run_observed(
    turns: usize,
    every: usize,
    observe: &mut dyn FnMut(&Session),
) -> (Session, Vec<(String, String)>) {
    let mut s = Session::new(small_window()).unwrap();
    let budget = s.config().request_budget();
    let mut originals = Vec::new();
    for t in 0..turns {
        let user = format!(
            "Question {t}: how should the {} handle the {}?",
            WORDS[t % 24],
            WORDS[(t * 5) % 24]
        );
        s.begin_turn(&user, t as u64 * 1_000).unwrap();
        if let Some((tool, args)) = effort_call(t) {
            s.execute_tool(tool, &args);
        }
        if t % 50 == 49 {
            // A very large paste jumps usage past the emergency threshold in one message.
            let text = document(t, 4_000);
            let id = s
                .attach(
                    &format!("dump-{t}.log"),
                    AttachmentKind::PastedText,
                    &text,
                    None,
                )
                .unwrap();
            originals.push((id, text));
        } else if t % every == 0 {
            let text = document(t, 1_400);
            let id = s
                .attach(&format!("notes-{t}.md"), AttachmentKind::File, &text, None)
                .unwrap();
            originals.push((id, text));
        }
        let plan = s.build_plan();
        assert!(
            plan.totals.context_tokens <= budget || plan.budget.mandatory_over_budget,
            "turn {t}: {} tokens over the {budget} budget",
            plan.totals.context_tokens
        );
        s.end_turn(
            &format!(
                "Answer {t}: keep the {} simple and measure it.",
                WORDS[(t * 3) % 24]
            ),
            t as u64 * 1_000 + 500,
        )
        .unwrap();
        let after = s.build_plan();
        assert!(
            after.totals.context_tokens <= budget,
            "turn {t}: {} tokens after the turn",
            after.totals.context_tokens
        );
        observe(&s);
    }
    (s, originals)
}

portable_tests! {
    fn attachments_are_counted_once_shown_in_context_and_recoverable() {
        let mut s = Session::new(Config::default()).unwrap();
        assert!(s.attach("x.md", AttachmentKind::File, "text", None).is_err(), "attachments go with a turn");
        s.begin_turn("Please review the attached notes.", 0).unwrap();
        let text = document(1, 300);
        let id = s.attach("notes.md", AttachmentKind::File, &text, None).unwrap();
        let plan = s.build_plan();
        let item = plan.item(&format!("attachment:{id}")).expect("the attachment is in the request");
        assert_eq!(item.reason, InclusionReason::Attachment { mode: AttachmentMode::Full });
        assert_eq!(plan.messages[item.first_message].content, s.attachments().by_id()[&id].attachment.context_text());
        assert!(plan.messages[item.first_message].content.contains(&text));
        // It sits right before the message it came with, and is included only with it.
        assert_eq!(plan.included.last().unwrap().id, "pending");
        assert_eq!(item.depends_on, ["pending"]);
        assert!(plan.included.iter().filter(|i| !i.id.starts_with("attachment:")).all(|i| i.depends_on.is_empty()));
        s.end_turn("Reviewed.", 0).unwrap();
        // Stored with its exchange, it depends on that exchange's item, which the plan includes.
        let stored = s.build_plan();
        let depends_on = &stored.item(&format!("attachment:{id}")).unwrap().depends_on;
        assert_eq!(depends_on.len(), 1);
        assert!(depends_on[0].starts_with("ambient:"), "{depends_on:?}");
        assert!(stored.item(&depends_on[0]).is_some(), "{depends_on:?} is an included item");
        // Compressed, then expanded again: the full text comes back byte for byte.
        s.compress_attachment(&id).unwrap();
        let compressed = s.build_plan();
        assert_eq!(compressed.item(&format!("attachment:{id}")).unwrap().reason, InclusionReason::Attachment { mode: AttachmentMode::Compressed });
        assert!(compressed.totals.attachment_tokens < item.tokens);
        s.expand_attachment(&id).unwrap();
        let expanded = s.build_plan();
        let again = expanded.item(&format!("attachment:{id}")).unwrap();
        assert_eq!(expanded.messages[again.first_message].content, plan.messages[item.first_message].content);
        assert_eq!(s.attachments().by_id()[&id].attachment.full_text, text);
    }

    fn a_long_heavy_run_stays_inside_a_small_window_fires_every_level_and_loses_nothing() {
        let (s, originals) = heavy_run(300, 6);
        let levels: Vec<u8> = s.history().points().iter().flat_map(|m| m.compactions.iter().map(|c| c.level)).collect();
        for level in [1u8, 2, 3] {
            assert!(levels.contains(&level), "level {level} never fired: {levels:?}");
        }
        for record in s.history().points().iter().flat_map(|m| &m.compactions) {
            assert!(record.tokens_after < record.tokens_before, "{record:?}");
            assert!(record.banner.starts_with("--- Compacted context (level"), "{}", record.banner);
        }
        // Nothing stored was lost: every message, every attachment's full text.
        assert_eq!(s.stored_message_count(), 600);
        let stored: usize = s.ambient().messages().len() + s.efforts().all().iter().map(|e| e.messages.len()).sum::<usize>();
        assert_eq!(stored, 600);
        for (t, message) in s.ambient().messages().iter().filter(|m| m.role == ccm_core::Role::User).enumerate().take(3) {
            assert!(message.content.starts_with("Question "), "{t}: {}", message.content);
        }
        for (id, text) in &originals {
            assert_eq!(&s.attachments().by_id()[id].attachment.full_text, text, "{id} changed");
        }
    }

    fn level_effects_show_in_the_plan_with_their_reasons() {
        // Every turn's plan is checked: at the end of the run the compressed attachments have
        // usually left the working set with their messages, so the last plan alone would show
        // nothing of level 1.
        let mut compressed_seen = 0usize;
        let mut compacted_seen = 0usize;
        let (s, _) = heavy_run_observed(120, 5, &mut |s| {
            let plan = s.build_plan();
            // Level 1 compresses attachments: each one included in compressed form must be one
            // the session compressed, at its compressed size.
            for item in plan.included.iter().filter(|i| i.reason == InclusionReason::Attachment { mode: AttachmentMode::Compressed }) {
                let id = item.id.strip_prefix("attachment:").expect("attachment items are named by their id");
                let stored = &s.attachments().by_id()[id].attachment;
                assert_eq!(stored.mode, AttachmentMode::Compressed, "{id}");
                assert_eq!(item.tokens, u64::from(stored.compressed_tokens), "{id}");
                compressed_seen += 1;
            }
            // Levels 2 and 3 move ambient exchanges out; the plan explains every one.
            let reasons: std::collections::BTreeSet<&str> = plan.excluded.iter().map(|e| e.reason.code()).collect();
            for id in s.compaction().compacted_items().keys().filter(|id| id.starts_with("ambient:")) {
                let excluded = plan.exclusion(id).unwrap_or_else(|| panic!("{id} compacted but not listed; reasons {reasons:?}"));
                assert!(matches!(excluded.reason, ExclusionReason::CompactedLevel2 | ExclusionReason::CompactedLevel3));
                compacted_seen += 1;
            }
        });
        // Each check above ran on something: a run that never compacted would pass them all.
        assert!(compressed_seen > 0, "no plan showed a compressed attachment");
        assert!(compacted_seen > 0, "no plan showed a compacted ambient exchange");
        for level in [1u8, 2, 3] {
            assert!(s.history().points().iter().flat_map(|m| &m.compactions).any(|c| c.level == level), "level {level} never ran in 120 heavy turns");
        }
    }

    fn an_aborted_turn_undoes_its_compaction() {
        let (mut s, _) = heavy_run(40, 4);
        let before = s.to_json().unwrap();
        s.begin_turn("One more with a big file.", 1).unwrap();
        s.attach("big.md", AttachmentKind::PastedText, &document(99, 2_500), None).unwrap();
        s.abort_turn().unwrap();
        assert!(s.to_json().unwrap() == before, "the session is as before the turn");
    }

    fn compaction_state_survives_export_and_import() {
        let (s, _) = heavy_run(60, 5);
        let json = s.to_json().unwrap();
        let restored = Session::from_json(&json).unwrap();
        assert!(restored.to_json().unwrap() == json);
        assert_eq!(restored.attachments().by_id().len(), s.attachments().by_id().len());
        assert_eq!(restored.compaction().compacted_items(), s.compaction().compacted_items());
        assert_eq!(restored.compaction().rolling_summary(), s.compaction().rolling_summary());
        // Expansions are transient, everything else decides the same context.
        let mut a = s;
        let mut b = restored;
        for session in [&mut a, &mut b] {
            for id in session.efforts().expanded_ids().into_iter().map(str::to_string).collect::<Vec<_>>() {
                session.collapse_effort(&id).unwrap();
            }
        }
        assert!(a.build_plan().to_json() == b.build_plan().to_json());
    }

    fn compaction_can_be_turned_off() {
        let config = Config { compaction: CompactionConfig { enabled: false, ..CompactionConfig::default() }, ..small_window() };
        let mut s = Session::new(config).unwrap();
        for t in 0..30 {
            turn(&mut s, &format!("q{t} {}", document(t, 80)), &[], "ok");
        }
        assert!(s.history().points().iter().all(|m| m.compactions.is_empty()));
        assert!(s.compaction().compacted_items().is_empty());
    }
}
