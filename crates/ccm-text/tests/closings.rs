//! The extractive summary keeps the outcome of every closing of `data/closings.txt` (issue 25),
//! as written and padded with discussion that leaves no room for everything.

mod closing_cases;

use closing_cases::{closing_cases, ClosingCase};

/// Every case as written and padded, with the failures of `summarize`.
fn failures(summarize: impl Fn(&ClosingCase) -> String) -> (usize, Vec<String>) {
    let cases: Vec<ClosingCase> = closing_cases()
        .into_iter()
        .flat_map(|case| [case.padded(), case])
        .collect();
    let failed = cases
        .iter()
        .filter_map(|case| case.check(&summarize(case)).err())
        .collect();
    (cases.len(), failed)
}

#[test]
fn every_closing_keeps_its_outcome() {
    let (total, failed) = failures(|case| {
        let texts: Vec<&str> = case.messages.iter().map(|(_, t)| t.as_str()).collect();
        ccm_text::extractive_summary(&case.name, &texts)
    });
    assert!(total >= 60, "{total} cases");
    assert!(
        failed.is_empty(),
        "{} of {total} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
