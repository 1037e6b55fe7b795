//! The extractive summary keeps the outcome of every closing of ccm-test-support's
//! `data/closings.txt` (issue 25), as written and padded with discussion that leaves no room for
//! everything.

use ccm_test_support::closings::{assert_none_failed, failures};

#[test]
fn every_closing_keeps_its_outcome() {
    let (total, failed) = failures(|case| {
        let texts: Vec<&str> = case.messages.iter().map(|(_, t)| t.as_str()).collect();
        Some(ccm_text::extractive_summary(&case.name, &texts))
    });
    assert!(total >= 60, "{total} cases");
    assert_none_failed((total, failed));
}

#[test]
fn the_outcome_wins_over_a_problem_that_does_not_fit() {
    let problem = "The login page is slow on mobile ".repeat(12);
    let texts = [problem.as_str(), "Splitting the bundle fixed it."];
    let summary = ccm_text::extractive_summary("login page", &texts);
    assert!(
        summary.contains("Splitting the bundle fixed it."),
        "{summary}"
    );
    let words = ccm_text::words(&summary).count();
    assert!(
        words <= ccm_text::EXTRACTIVE_WORD_BUDGET + 2,
        "{words}: {summary}"
    );
}

#[test]
fn the_latest_value_of_a_fact_replaces_the_earlier_ones() {
    let summary = ccm_text::extractive_summary(
        "party",
        &[
            "Let's plan the party.",
            "The budget is 200.",
            "We have 20 guests.",
            "Make the budget 250.",
        ],
    );
    assert!(summary.contains("250"), "{summary}");
    assert!(!summary.contains("200"), "{summary}");
    // Another fact with a number stays: it is not the budget.
    assert!(summary.contains("20 guests"), "{summary}");
}

#[test]
fn a_negated_or_hoped_for_fix_is_no_outcome() {
    let summary = ccm_text::extractive_summary(
        "api timeout",
        &[
            "The API times out after 30 seconds.",
            "Adding an index to the orders table fixed it.",
            "Raising the timeout might have fixed it too, but it did not fix it.",
        ],
    );
    assert!(summary.contains("orders table"), "{summary}");
}

#[test]
fn a_first_message_that_ends_the_previous_effort_is_not_the_problem() {
    let summary = ccm_text::extractive_summary(
        "docs site",
        &[
            "The export is finished. Let's work on the docs site: the sidebar links are broken.",
            "Absolute paths fixed the links.",
        ],
    );
    assert!(!summary.contains("export"), "{summary}");
    assert!(summary.contains("sidebar links are broken"), "{summary}");
    assert!(
        summary.contains("Absolute paths fixed the links."),
        "{summary}"
    );
}
