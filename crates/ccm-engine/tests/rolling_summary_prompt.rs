//! The request for a level-3 compaction's rolling summary.

use ccm_core::compaction::SeqRange;
use ccm_engine::summary::rolling_summary_prompt;
use ccm_test_support::portable_tests;
// The same history as ccm-core's tests of the extractive fallback.
use ccm_test_support::rolling_history::input;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

portable_tests! {
    fn the_prompt_asks_for_decisions_facts_identifiers_and_open_questions() {
        let previous_covers = [SeqRange::new(1, 10)];
        let prompt = rolling_summary_prompt(&input(Some("Earlier: the team set up the export job."), &previous_covers), 120);
        for needle in ["decisions", "facts", "identifiers exactly as written", "open questions", "at most 120 words", "fold it into the new one"] {
            assert!(prompt.system.contains(needle), "system prompt lacks {needle:?}:\n{}", prompt.system);
        }
        assert!(prompt.user.starts_with("Update the rolling summary of the earlier conversation (messages 1–18).\n\nPrevious summary:\nEarlier: the team set up the export job.\n\n--- conversation ---\n"));
        assert!(prompt.user.ends_with("--- end of conversation ---"));
        // The history appears in order, verbatim.
        let first = prompt.user.find("E1042").unwrap();
        let last = prompt.user.find("open question").unwrap();
        assert!(first < last);
        let without = rolling_summary_prompt(&input(None, &[]), 120);
        assert!(without.user.contains("There is no previous summary.\n\n--- conversation ---"));
        assert!(without.user.starts_with("Update the rolling summary of the earlier conversation (messages 11–18)."));
    }
}
