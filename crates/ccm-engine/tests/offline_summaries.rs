//! The offline demo model's summaries keep the outcome of every closing of ccm-test-support's
//! `data/closings.txt` (issue 25): the summary request is made as the engine makes it, with the
//! closing message of the turn in progress, and answered by [`compose_summary`].

use ccm_core::tokens::ApproximateCounter;
use ccm_core::{Config, Session};
use ccm_engine::offline::compose_summary;
use ccm_engine::summary::summary_messages;
use ccm_provider::WireMessage;
use ccm_test_support::closings::{assert_none_failed, failures, ClosingCase};
use std::sync::Arc;

/// The demo's summary of `case`: one turn per message of the person, the last one pending.
fn demo_summary(case: &ClosingCase) -> String {
    let mut session =
        Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
    let id = session.open_effort(&case.name, None).unwrap().id;
    let turns = case.turns("(offline demo model) Noted.");
    let (last, rest) = turns.split_last().unwrap();
    for (user, assistant) in rest {
        session.begin_turn(user, 0).unwrap();
        session.end_turn(assistant, 0).unwrap();
    }
    let effort = session.efforts().get(&id).unwrap();
    match &summary_messages(effort, Some(last.0))[1] {
        WireMessage::User(text) => compose_summary(text),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn the_demo_summary_keeps_the_outcome_of_every_closing() {
    assert_none_failed(failures(|case| {
        // The demo summarises the person's words: an outcome only the assistant stated is
        // not its to keep.
        let person_only = case.messages.iter().all(|(person, text)| {
            *person
                || case
                    .outcome
                    .iter()
                    .all(|w| !text.to_lowercase().contains(w))
        });
        person_only.then(|| demo_summary(case))
    }));
}
