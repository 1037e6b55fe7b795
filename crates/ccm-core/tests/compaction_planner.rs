//! Planning a compaction: what each level moves, protections, the never-larger rule, the
//! rolling summary hand-off, events and banners.

use ccm_core::compaction::thousands;
use ccm_core::compaction::{
    check_applicable, plan_compaction, AttachmentMode, CompactionConfig, CompactionDecision,
    CompactionError, CompactionEvent, CompactionInput, CompactionOutcome, CompactionPlan,
    DecisionReason, HistoryText, ItemKind, Level, MoveReason, MovedKind, NotApplied, Relevance,
    RollingInput, RollingSource, RollingSummary, SeqRange, Usage, WorkingItem,
};
use ccm_core::{Encoding, ExactCounter};
use ccm_test_support::portable_tests;
use std::collections::{BTreeMap, BTreeSet};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const QUERY: &str = "How does password hashing with argon2 work for login?";

/// Twelve ambient exchanges, oldest first; #2 is pinned, #1 and #5 are about passwords.
const AMBIENT: [&str; 12] = [
    "USER: What's the capital of France?\nASSISTANT: Paris.",
    "USER: How should we hash passwords?\nASSISTANT: Use argon2id with a per-user salt.",
    "USER: Recommend a pizza place.\nASSISTANT: Try Luigi's.",
    "USER: The CI cache is slow.\nASSISTANT: Split the cache key by lockfile.",
    "USER: What time is the standup?\nASSISTANT: 9:30.",
    "USER: Password reset emails bounce.\nASSISTANT: The SMTP sender domain lacks SPF.",
    "USER: Rename the repo?\nASSISTANT: Keep the name.",
    "USER: Is the VPN down?\nASSISTANT: It's back up.",
    "USER: Book the offsite venue.\nASSISTANT: Booked.",
    "USER: Next up: the release notes.\nASSISTANT: Drafting them.",
    "USER: Add the changelog link.\nASSISTANT: Added.",
    "USER: Thanks, that's all for the notes.\nASSISTANT: You're welcome.",
];

struct Fixture {
    ambient_ids: Vec<String>,
    turn_ids: Vec<String>,
    turn_texts: Vec<String>,
    previous: Option<RollingSummary>,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            ambient_ids: (0..AMBIENT.len()).map(|i| format!("ambient:{i}")).collect(),
            turn_ids: (1..=4).map(|i| format!("effort:parser#{i}")).collect(),
            turn_texts: (1..=4)
                .map(|i| {
                    format!(
                        "USER: Parser step {i}: handle nested brackets.\nASSISTANT: Done step {i}."
                    )
                })
                .collect(),
            previous: None,
        }
    }

    /// Adds the rolling summary of an earlier level-3 compaction, covering message 1.
    fn with_previous_summary(mut self) -> Fixture {
        let input = RollingInput {
            history: vec![HistoryText {
                seqs: SeqRange::single(1),
                text: "USER: Earlier we chose PostgreSQL 16 for the orders service.",
            }],
            ..RollingInput::default()
        };
        let counter = ExactCounter::new(Encoding::O200kBase);
        self.previous = Some(RollingSummary::extractive(&input, 150, &counter).unwrap());
        self
    }

    /// 7,190 tokens: fixed 370, ambient 1,200, open effort 600, expansions 1,400, attachments
    /// 3,620.
    fn items(&self) -> Vec<WorkingItem<'_>> {
        let mut items = vec![
            WorkingItem::fixed("system", 300),
            WorkingItem::fixed("summary:auth", 40),
        ];
        for (i, text) in AMBIENT.iter().enumerate() {
            let first = 10 + 2 * i as u64;
            let item = WorkingItem::ambient(
                &self.ambient_ids[i],
                100,
                SeqRange::new(first, first + 1),
                2,
                text,
            );
            items.push(if i == 2 { item.pinned() } else { item });
        }
        for (i, text) in self.turn_texts.iter().enumerate() {
            let first = 40 + 2 * i as u64;
            items.push(WorkingItem::effort_turn(
                &self.turn_ids[i],
                150,
                "parser",
                SeqRange::new(first, first + 1),
                2,
                text,
            ));
        }
        items.push(WorkingItem::expanded("effort:perf-fix", 800, 40, 2));
        items.push(WorkingItem::expanded("effort:db-migration", 600, 30, 0));
        items.push(attachment("att-1", 2_000, 80, AttachmentMode::Full, 5));
        items.push(attachment("att-2", 1_500, 60, AttachmentMode::Full, 0));
        items.push(attachment("att-3", 70, 70, AttachmentMode::Compressed, 10));
        // A summary longer than the text: compressing it would grow the context.
        items.push(attachment("att-4", 50, 60, AttachmentMode::Full, 9));
        if let Some(previous) = &self.previous {
            items.push(WorkingItem::rolling_summary("rolling", previous));
        }
        items.push(WorkingItem::fixed("pending", 30));
        items
    }
}

fn attachment(
    id: &str,
    tokens: u64,
    compressed: u64,
    mode: AttachmentMode,
    since: u64,
) -> WorkingItem<'_> {
    WorkingItem {
        id,
        tokens,
        pinned: false,
        kind: ItemKind::Attachment {
            mode,
            compressed_tokens: compressed,
            messages_since_reference: since,
        },
    }
}

fn plan(level: Level, items: &[WorkingItem<'_>], window: u64) -> CompactionPlan {
    let config = CompactionConfig::default();
    plan_compaction(&CompactionInput {
        level,
        items,
        query: QUERY,
        relevance: Relevance::Lexical,
        config: &config,
        window_tokens: window,
    })
    .unwrap()
}

fn decision(level: Level, tokens: u64, window: u64) -> CompactionDecision {
    CompactionDecision {
        level,
        reason: DecisionReason::ThresholdReached,
        usage: Usage::new(tokens, window).unwrap(),
        at_message: 42,
        at_ms: 1_700_000_000_000,
    }
}

fn applied(
    plan: &CompactionPlan,
    window: u64,
    summary: Option<&RollingSummary>,
) -> CompactionEvent {
    match plan
        .finish(&decision(plan.level, plan.tokens_before, window), summary)
        .unwrap()
    {
        CompactionOutcome::Applied(event) => event,
        other => panic!("expected the compaction to apply, got {other:?}"),
    }
}

fn moves(plan: &CompactionPlan) -> Vec<(&str, MoveReason)> {
    plan.moves
        .iter()
        .map(|m| (m.id.as_str(), m.reason))
        .collect()
}

fn extractive(plan: &CompactionPlan) -> RollingSummary {
    let rolling = plan
        .rolling
        .as_ref()
        .expect("the plan has a rolling summary");
    RollingSummary::extractive(
        &rolling.input(),
        rolling.max_words,
        &ExactCounter::new(Encoding::O200kBase),
    )
    .unwrap()
}

portable_tests! {
    fn level_0_moves_nothing() {
        let f = Fixture::new();
        let items = f.items();
        let p = plan(Level::None, &items, 8_000);
        assert_eq!(p.tokens_before, 7_190);
        assert!(p.moves.is_empty());
        assert_eq!(p.projected_tokens_after, 7_190);
        assert_eq!(
            p.finish(&decision(Level::None, 7_190, 8_000), None).unwrap(),
            CompactionOutcome::NotApplied { reason: NotApplied::NothingToMove, level: Level::None, tokens_before: 7_190, tokens_after: 7_190 }
        );
    }

    fn level_1_compresses_stale_attachments_and_collapses_idle_expansions() {
        let f = Fixture::new();
        let items = f.items();
        let p = plan(Level::Soft, &items, 8_000);
        assert_eq!(
            moves(&p),
            [("effort:perf-fix", MoveReason::CollapsedIdleExpansion), ("att-1", MoveReason::CompressedAttachment)]
        );
        // Referenced now (db-migration, att-2), already compressed (att-3), or not smaller
        // when compressed (att-4): untouched. No history moves at level 1.
        let event = applied(&p, 8_000, None);
        assert_eq!(event.tokens_freed, 760 + 1_920);
        assert_eq!(event.tokens_after, 7_190 - 2_680);
        assert_eq!(event.moved[1].tokens, 2_000);
        assert_eq!(event.moved[1].replacement_tokens, 80);
        assert_eq!(event.moved[1].kind, MovedKind::Attachment);
        assert_eq!(
            event.banner(),
            "--- Compacted context (level 1, soft): 2,680 tokens freed, 1 attachment compressed to its summary, 1 expanded effort collapsed (still stored) ---"
        );
    }

    fn level_2_keeps_the_relevant_half_and_the_last_five_messages() {
        let f = Fixture::new();
        let items = f.items();
        let p = plan(Level::Hard, &items, 8_000);
        let level2: Vec<&str> = p.moves.iter().filter(|m| m.reason == MoveReason::CompactedLevel2).map(|m| m.id.as_str()).collect();
        // 11 movable ambient exchanges (one is pinned). The last 5 messages are the newest 3
        // exchanges; of the 8 older ones, the 4 most relevant stay: the two about passwords,
        // then (no other overlap) the newest.
        assert_eq!(level2, ["ambient:0", "ambient:3", "ambient:4", "ambient:6"]);
        assert!(p.moves.iter().all(|m| m.kind != MovedKind::EffortTurn), "open efforts are protected");
        assert!(!level2.contains(&"ambient:2"), "pinned");
        // Level 1's moves come along.
        assert!(moves(&p).contains(&("att-1", MoveReason::CompressedAttachment)));
        let event = applied(&p, 8_000, None);
        assert_eq!(event.tokens_freed, 2_680 + 400);
        assert_eq!(event.messages_moved(), 8);
        assert_eq!(
            event.banner(),
            "--- Compacted context (level 2, hard): 3,080 tokens freed, 1 attachment compressed to its summary, 1 expanded effort collapsed, 8 messages moved out of the working set (still stored) ---"
        );
    }

    fn level_2_can_rank_with_precomputed_embedding_scores() {
        let f = Fixture::new();
        let items = f.items();
        let config = CompactionConfig::default();
        // Scores that prefer the oldest exchanges.
        let scores: BTreeMap<String, f64> = (0..12).map(|i| (format!("ambient:{i}"), 1.0 - f64::from(i) / 100.0)).collect();
        let input = CompactionInput { level: Level::Hard, items: &items, query: QUERY, relevance: Relevance::Scores(&scores), config: &config, window_tokens: 8_000 };
        let p = plan_compaction(&input).unwrap();
        let level2: Vec<&str> = p.moves.iter().filter(|m| m.reason == MoveReason::CompactedLevel2).map(|m| m.id.as_str()).collect();
        assert_eq!(level2, ["ambient:5", "ambient:6", "ambient:7", "ambient:8"]);
        let mut partial = scores.clone();
        partial.remove("ambient:4");
        assert_eq!(
            plan_compaction(&CompactionInput { relevance: Relevance::Scores(&partial), ..input }).unwrap_err(),
            CompactionError::MissingScore("ambient:4".to_string())
        );
        let mut bad = scores.clone();
        bad.insert("ambient:4".into(), f64::INFINITY);
        assert!(matches!(
            plan_compaction(&CompactionInput { relevance: Relevance::Scores(&bad), ..input }),
            Err(CompactionError::Relevance(_))
        ));
    }

    fn level_3_keeps_four_messages_and_summarises_the_rest() {
        let f = Fixture::new();
        let items = f.items();
        let p = plan(Level::Emergency, &items, 8_000);
        let rolling = p.rolling.as_ref().unwrap();
        // The last 4 messages are the newest 2 exchanges; the pinned one stays too.
        let expected: Vec<String> = [0, 1, 3, 4, 5, 6, 7, 8, 9].iter().map(|i| format!("ambient:{i}")).collect();
        assert_eq!(rolling.replaces, expected);
        assert_eq!(rolling.replaced_tokens, 900);
        assert_eq!(rolling.covers, [SeqRange::new(10, 13), SeqRange::new(16, 29)]);
        assert_eq!(rolling.budget_tokens, 340);
        // The window is not at risk after that, so what the current message references and
        // the open effort stay.
        assert!(!moves(&p).iter().any(|(id, _)| ["att-2", "effort:db-migration"].contains(id)));
        assert!(p.moves.iter().all(|m| m.kind != MovedKind::EffortTurn));
        assert_eq!(p.projected_tokens_after, 7_190 - 2_680 - 900 + 340);

        let summary = extractive(&p);
        assert!(summary.text.contains("argon2id"), "{}", summary.text);
        let event = applied(&p, 8_000, Some(&summary));
        assert_eq!(event.tokens_after, 7_190 - 2_680 - 900 + u64::from(summary.tokens));
        let info = event.rolling_summary.as_ref().unwrap();
        assert_eq!((info.source, info.tokens), (RollingSource::Extractive, u64::from(summary.tokens)));
        assert_eq!(event.messages_moved(), 18);
        assert!(event.banner().ends_with("18 messages replaced by a rolling summary (still stored) ---"), "{}", event.banner());
    }

    fn level_3_touches_references_and_open_efforts_only_as_a_last_resort() {
        let f = Fixture::new();
        let items = f.items();
        // Window 4,000: after the regular level-3 moves the projection (3,950) is still above
        // 90 % (3,600); collapsing the expansion the message references is enough.
        let p = plan(Level::Emergency, &items, 4_000);
        assert!(moves(&p).contains(&("effort:db-migration", MoveReason::CompactedLevel3)));
        assert!(!moves(&p).iter().any(|(id, _)| *id == "att-2"));
        assert!(p.moves.iter().all(|m| m.kind != MovedKind::EffortTurn));
        // Window 2,000: the referenced attachment goes too, then the oldest open-effort turn.
        let tight = plan(Level::Emergency, &items, 2_000);
        let order: Vec<&str> = tight.moves.iter().map(|m| m.id.as_str()).collect();
        let position = |id: &str| order.iter().position(|o| *o == id).unwrap();
        assert!(position("effort:db-migration") < position("att-2"));
        assert!(position("att-2") < position("effort:parser#1"));
        for ambient in ["ambient:0", "ambient:9"] {
            assert!(position(ambient) < position("effort:parser#1"), "ambient chatter goes before open efforts");
        }
        assert!(!order.contains(&"effort:parser#2"), "it stops once under the threshold");
        assert!(!order.contains(&"ambient:2"), "pinned");
        let rolling = tight.rolling.as_ref().unwrap();
        assert!(rolling.replaces.contains(&"effort:parser#1".to_string()));
        assert_eq!(tight.projected_tokens_after, 3_950 - 570 - 1_440 - 150);
        assert!(!tight.over_window);
        // Each open effort keeps its last 4 messages even when the window cannot be met.
        let hopeless = plan(Level::Emergency, &items, 500);
        let turns: Vec<&str> = hopeless.moves.iter().filter(|m| m.kind == MovedKind::EffortTurn).map(|m| m.id.as_str()).collect();
        assert_eq!(turns, ["effort:parser#1", "effort:parser#2"]);
        assert!(hopeless.over_window, "fixed and protected items alone exceed the window");
    }

    fn the_previous_rolling_summary_is_folded_into_the_next() {
        let f = Fixture::new().with_previous_summary();
        let items = f.items();
        let p = plan(Level::Emergency, &items, 8_000);
        let rolling = p.rolling.as_ref().unwrap();
        assert_eq!(rolling.replaces.last().map(String::as_str), Some("rolling"));
        assert_eq!(rolling.covers, [SeqRange::new(1, 1), SeqRange::new(10, 13), SeqRange::new(16, 29)]);
        let input = rolling.input();
        assert!(input.previous_text.unwrap().contains("PostgreSQL 16"));
        let summary = extractive(&p);
        assert!(summary.text.contains("PostgreSQL 16"), "{}", summary.text);
        assert_eq!(summary.covers, rolling.covers);
        let event = applied(&p, 8_000, Some(&summary));
        assert!(event.moved.iter().any(|m| m.kind == MovedKind::RollingSummary && m.reason == MoveReason::CompactedLevel3));
        // At levels 1 and 2 the previous summary stays where it is.
        assert!(plan(Level::Hard, &items, 8_000).moves.iter().all(|m| m.id != "rolling"));
    }

    fn finishing_checks_the_summary_against_the_plan() {
        let f = Fixture::new();
        let items = f.items();
        let p = plan(Level::Emergency, &items, 8_000);
        let d = decision(Level::Emergency, p.tokens_before, 8_000);
        assert_eq!(
            p.finish(&d, None).unwrap_err().to_string(),
            "the plan replaces 9 items with a rolling summary, but no summary was given"
        );
        let mut huge = extractive(&p);
        huge.tokens = 900;
        assert_eq!(
            p.finish(&d, Some(&huge)).unwrap_err().to_string(),
            "the rolling summary has 900 tokens but replaces only 900; use the extractive summary, or finish the plan without the rolling summary"
        );
        let mut elsewhere = extractive(&p);
        elsewhere.covers = vec![SeqRange::new(1, 2)];
        assert!(matches!(p.finish(&d, Some(&elsewhere)), Err(CompactionError::SummaryMismatch(_))));
        // Without the rolling part, the other moves still apply.
        let rest = p.without_rolling();
        assert!(rest.rolling.is_none());
        assert!(rest.moves.iter().all(|m| m.kind != MovedKind::Ambient));
        assert_eq!(rest.projected_tokens_after, 7_190 - 2_680);
        assert_eq!(applied(&rest, 8_000, None).tokens_freed, 2_680);
        let soft = plan(Level::Soft, &items, 8_000);
        assert!(matches!(soft.finish(&d, Some(&extractive(&p))), Err(CompactionError::SummaryMismatch(_))));
    }

    fn a_compaction_that_frees_nothing_or_grows_the_context_is_not_applied() {
        // Only small ambient items: a rolling summary would be larger than what it replaces,
        // so none is planned, and nothing else can move.
        let texts: Vec<String> = (0..8).map(|i| format!("USER: ok {i}\nASSISTANT: fine")).collect();
        let ids: Vec<String> = (0..8).map(|i| format!("ambient:{i}")).collect();
        let mut items: Vec<WorkingItem<'_>> = (0..8)
            .map(|i| WorkingItem::ambient(&ids[i], 10, SeqRange::new(2 * i as u64, 2 * i as u64 + 1), 2, &texts[i]))
            .collect();
        items.push(WorkingItem::fixed("system", 500));
        let p = plan(Level::Emergency, &items, 600);
        assert!(p.rolling.is_none());
        assert!(p.moves.is_empty());
        assert!(matches!(
            p.finish(&decision(Level::Emergency, 580, 600), None).unwrap(),
            CompactionOutcome::NotApplied { reason: NotApplied::NothingToMove, .. }
        ));
        assert_eq!(check_applicable(100, 100, 2), Err(NotApplied::FreesNothing));
        assert_eq!(check_applicable(100, 130, 2), Err(NotApplied::WouldGrow { by: 30 }));
        assert_eq!(NotApplied::WouldGrow { by: 1_500 }.to_string(), "the compaction would make the context 1,500 tokens larger");
        assert_eq!(NotApplied::FreesNothing.to_string(), "the compaction would free no tokens");
        // An item whose smaller form is not smaller never moves.
        let f = Fixture::new();
        for level in [Level::Soft, Level::Hard, Level::Emergency] {
            assert!(plan(level, &f.items(), 500).moves.iter().all(|m| m.id != "att-4" && m.id != "att-3"));
        }
    }

    fn every_level_shrinks_the_context_and_higher_levels_free_more() {
        let f = Fixture::new();
        let items = f.items();
        let mut previous = 0;
        for level in [Level::Soft, Level::Hard, Level::Emergency] {
            let p = plan(level, &items, 8_000);
            assert!(p.projected_tokens_after < p.tokens_before, "{level}");
            let freed = p.tokens_before - p.projected_tokens_after;
            assert!(freed > previous, "{level} frees {freed}, the level below {previous}");
            previous = freed;
            for m in &p.moves {
                assert!(m.replacement_tokens < m.tokens, "{} would not shrink", m.id);
            }
        }
    }

    fn plans_do_not_depend_on_item_order() {
        let f = Fixture::new();
        let items = f.items();
        let mut reversed = items.clone();
        reversed.reverse();
        for level in [Level::Soft, Level::Hard, Level::Emergency] {
            let a = plan(level, &items, 4_000);
            let b = plan(level, &reversed, 4_000);
            let set = |p: &CompactionPlan| p.moves.iter().map(|m| (m.id.clone(), m.reason)).collect::<BTreeSet<_>>();
            assert_eq!(set(&a), set(&b), "{level}");
            assert_eq!(a.projected_tokens_after, b.projected_tokens_after);
            assert_eq!(a.rolling.as_ref().map(|r| r.covers.clone()), b.rolling.as_ref().map(|r| r.covers.clone()));
            assert_eq!(a, plan(level, &items, 4_000), "same input, same plan");
        }
    }

    fn bad_working_sets_are_refused() {
        let items = [WorkingItem::fixed("x", 1), WorkingItem::fixed("x", 2)];
        let config = CompactionConfig::default();
        let input = CompactionInput { level: Level::Soft, items: &items, query: "", relevance: Relevance::Lexical, config: &config, window_tokens: 10 };
        assert_eq!(plan_compaction(&input).unwrap_err().to_string(), "working item id 'x' appears twice; ids must be unique");
        let f = Fixture::new().with_previous_summary();
        let previous = f.previous.as_ref().unwrap();
        let two = [WorkingItem::rolling_summary("r1", previous), WorkingItem::rolling_summary("r2", previous)];
        assert_eq!(
            plan_compaction(&CompactionInput { items: &two, ..input }).unwrap_err().to_string(),
            "the working set holds more than one rolling summary (r1, r2); fold them into one"
        );
    }

    fn events_serialise_with_snake_case_codes() {
        let f = Fixture::new();
        let items = f.items();
        let event = applied(&plan(Level::Hard, &items, 8_000), 8_000, None);
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value["level"], "hard");
        assert_eq!(value["trigger_usage"], serde_json::json!({"working_tokens": 7_190, "window_tokens": 8_000}));
        assert_eq!(value["moved"][0]["reason"], "collapsed_idle_expansion");
        assert_eq!(value["moved"][0]["kind"], "expanded");
        assert_eq!(value["moved"][1]["reason"], "compressed_attachment");
        assert_eq!(value["moved"][2]["reason"], "compacted_level_2");
        assert!(value.get("rolling_summary").is_none());
        let back: CompactionEvent = serde_json::from_value(value).unwrap();
        assert_eq!(back, event);
        assert_eq!(MoveReason::CompactedLevel3.code(), "compacted_level_3");
        assert_eq!(
            serde_json::to_value(CompactionOutcome::NotApplied { reason: NotApplied::FreesNothing, level: Level::Soft, tokens_before: 5, tokens_after: 5 }).unwrap(),
            serde_json::json!({"outcome": "not_applied", "reason": {"code": "frees_nothing"}, "level": "soft", "tokens_before": 5, "tokens_after": 5})
        );
    }
}

portable_tests! {
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(3_120), "3,120");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
