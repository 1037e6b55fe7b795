//! The level-3 rolling summary: the extractive fallback and the record (the prompt is
//! ccm-engine's, tested there).

use ccm_test_support::portable_tests;
use ccm_test_support::rolling_history::input;

use ccm_core::compaction::{
    describe_ranges, extractive_text, merge_ranges, rolling_budget_tokens, HistoryText,
    RollingInput, RollingSource, RollingSummary, RollingSummaryError, SeqRange,
};
use ccm_core::{Encoding, ExactCounter, TokenCounter};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn counter() -> ExactCounter {
    ExactCounter::new(Encoding::O200kBase)
}

portable_tests! {
    fn the_extractive_fallback_keeps_identifiers_decisions_and_questions() {
        let text = extractive_text(&input(None, &[]), 50);
        assert!(text.contains("E1042"), "{text}");
        assert!(text.contains("export_timeout_s"), "{text}");
        assert!(text.contains("Should we also split the export into batches?"), "{text}");
        assert!(!text.contains("weather"), "small talk is the first thing to go: {text}");
        assert!(text.split_whitespace().count() <= 50, "{text}");
        // Sentences keep their original order.
        assert!(text.find("E1042").unwrap() < text.find("export_timeout_s").unwrap());
        assert_eq!(text, extractive_text(&input(None, &[]), 50), "deterministic");
    }

    fn the_extractive_fallback_respects_any_budget_and_is_never_empty() {
        for budget in [20, 35, 150, 1000] {
            let text = extractive_text(&input(None, &[]), budget);
            assert!(!text.is_empty());
            assert!(text.split_whitespace().count() <= budget.max(20) as usize + 1, "{budget}: {text}");
        }
        let nothing = RollingInput {
            history: vec![
                HistoryText { seqs: SeqRange::new(3, 4), text: "ok" },
                HistoryText { seqs: SeqRange::new(5, 6), text: "" },
            ],
            ..RollingInput::default()
        };
        assert_eq!(
            extractive_text(&nothing, 150),
            "4 earlier messages without summarisable content (see the stored originals)."
        );
        // Small talk alone is still summarised rather than lost.
        let chat = RollingInput {
            history: vec![HistoryText { seqs: SeqRange::new(7, 8), text: "USER: Nice weather today.\nASSISTANT: Sunny and mild." }],
            ..RollingInput::default()
        };
        assert_eq!(extractive_text(&chat, 150), "USER: Nice weather today. ASSISTANT: Sunny and mild.");
        // One enormous sentence is clipped to the budget rather than dropped.
        let long = "word ".repeat(500) + "E1042 happened.";
        let one = RollingInput {
            history: vec![HistoryText { seqs: SeqRange::single(1), text: &long }],
            ..RollingInput::default()
        };
        let clipped = extractive_text(&one, 30);
        assert!(clipped.ends_with(" …"), "{clipped}");
        assert_eq!(clipped.split_whitespace().count(), 31);
    }

    fn the_extractive_summary_keeps_to_the_token_budget_even_when_dense() {
        // Identifiers take several tokens a word.
        let dense: Vec<String> = (0..40)
            .map(|i| format!("USER: Set cfg.{i}.k8s_pod_affinity_weight={} on node-{i:04x}.eu-west-3b?", i * 7919))
            .collect();
        let history: Vec<HistoryText<'_>> = dense
            .iter()
            .enumerate()
            .map(|(i, text)| HistoryText { seqs: SeqRange::single(i as u64 + 1), text })
            .collect();
        let input = RollingInput { history, ..RollingInput::default() };
        let words = extractive_text(&input, 150).split_whitespace().count();
        let summary = RollingSummary::extractive(&input, 150, &counter()).unwrap();
        assert!(u64::from(summary.tokens) <= rolling_budget_tokens(150), "{}", summary.tokens);
        assert!(summary.text.split_whitespace().count() < words, "fewer words than the word limit allowed");
        assert_eq!(rolling_budget_tokens(150), 340);
    }

    fn the_previous_summary_rolls_forward() {
        let previous_covers = [SeqRange::new(1, 10)];
        let previous = "The export job was created for the orders table in ticket OPS-77.";
        let summary = RollingSummary::extractive(&input(Some(previous), &previous_covers), 150, &counter()).unwrap();
        assert!(summary.text.contains("OPS-77"), "{}", summary.text);
        assert_eq!(summary.covers, [SeqRange::new(1, 18)]);
        assert!(summary.covers_seq(1) && summary.covers_seq(18) && !summary.covers_seq(19));
        assert_eq!(summary.source, RollingSource::Extractive);
        assert!(summary.rendered.starts_with(
            "[Summary of earlier conversation (messages 1–18, extractive; the original messages are stored)]\n"
        ));
        assert_eq!(summary.tokens, counter().count(&summary.rendered));
    }

    fn a_model_summary_is_recorded_unless_it_is_empty() {
        let text = "  Export failed with E1042 (timeout 300 s); export_timeout_s raised to 900. Open: batching.  ";
        let summary = RollingSummary::from_llm(text, &input(None, &[]), &counter()).unwrap();
        assert_eq!(summary.text, text.trim());
        assert_eq!(summary.source, RollingSource::Llm);
        assert_eq!(summary.covers, [SeqRange::new(11, 18)]);
        assert!(summary.rendered.starts_with("[Summary of earlier conversation (messages 11–18; the original messages are stored)]\n"));
        assert_eq!(
            RollingSummary::from_llm(" \n ", &input(None, &[]), &counter()).unwrap_err(),
            RollingSummaryError::Empty
        );
        assert_eq!(
            RollingSummary::extractive(&RollingInput::default(), 150, &counter()).unwrap_err().to_string(),
            "a rolling summary must cover at least one stored message"
        );
        let json = serde_json::to_string(&summary).unwrap();
        assert_eq!(serde_json::from_str::<RollingSummary>(&json).unwrap(), summary);
        assert!(json.contains(r#""source":"llm""#));
    }

    fn coverage_ranges_merge_and_read_well() {
        assert_eq!(SeqRange::new(9, 3), SeqRange::new(3, 9));
        assert_eq!(
            merge_ranges([SeqRange::new(20, 25), SeqRange::single(26), SeqRange::new(1, 5), SeqRange::new(3, 8), SeqRange::new(10, 12)]),
            [SeqRange::new(1, 8), SeqRange::new(10, 12), SeqRange::new(20, 26)]
        );
        assert!(merge_ranges([]).is_empty());
        assert_eq!(describe_ranges(&[SeqRange::new(1, 8), SeqRange::single(12)]), "messages 1–8, 12");
        assert_eq!(describe_ranges(&[SeqRange::single(4)]), "message 4");
        assert_eq!(merge_ranges([SeqRange::new(u64::MAX - 1, u64::MAX), SeqRange::single(u64::MAX)]), [SeqRange::new(u64::MAX - 1, u64::MAX)]);
    }
}
