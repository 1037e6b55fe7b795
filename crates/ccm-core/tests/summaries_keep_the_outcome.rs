//! The extractive summary a session concludes an effort with keeps the outcome (issue 25): the
//! closing message of the turn that concludes is part of it although it is stored only after
//! the conclusion, and an effort's summary holds its own exchanges only, however the efforts'
//! turns interleave.

use ccm_core::tokens::ApproximateCounter;
use ccm_core::{Config, Session};
use ccm_test_support::closings::{assert_none_failed, failures, ClosingCase};
use std::sync::Arc;

fn session() -> Session {
    Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap()
}

/// Plays `case` in a fresh session, one turn per message of the person (the assistant's
/// message after it is the turn's answer), and concludes the effort without a summary in the
/// turn of the last message, as a model's `close_effort` call does.
fn conclude(case: &ClosingCase) -> String {
    let mut session = session();
    let id = session.open_effort(&case.name, None).unwrap().id;
    let turns = case.turns("Noted.");
    let (last, rest) = turns.split_last().unwrap();
    for (user, assistant) in rest {
        session.begin_turn(user, 0).unwrap();
        session.end_turn(assistant, 0).unwrap();
    }
    session.begin_turn(last.0, 0).unwrap();
    let concluded = session.close_effort(Some(&id), None).unwrap();
    session.end_turn("Concluded.", 0).unwrap();
    concluded.summary
}

#[test]
fn a_concluded_effort_keeps_the_outcome_of_every_closing() {
    assert_none_failed(failures(|case| Some(conclude(case))));
}

#[test]
fn the_closing_message_counts_only_for_the_effort_it_is_routed_to() {
    let mut session = session();
    session.open_effort("login page", None).unwrap();
    session
        .begin_turn("The login page is slow: the JS bundle is 2 MB.", 0)
        .unwrap();
    session.end_turn("Noted.", 0).unwrap();
    session.open_effort("birthday party", None).unwrap();
    session
        .begin_turn("Sam's party is on Saturday.", 0)
        .unwrap();
    session.end_turn("Noted.", 0).unwrap();
    // The turn is routed to the active effort, the party; the login page is concluded in it.
    session
        .begin_turn("We booked the bowling alley for the party.", 0)
        .unwrap();
    let login = session.close_effort(Some("login-page"), None).unwrap();
    session.end_turn("Concluded.", 0).unwrap();
    assert!(!login.summary.contains("bowling"), "{}", login.summary);
    assert!(login.summary.contains("2 MB"), "{}", login.summary);
    session.begin_turn("All sorted.", 0).unwrap();
    let party = session.close_effort(None, None).unwrap();
    assert!(party.summary.contains("bowling alley"), "{}", party.summary);
}

#[test]
fn interleaved_efforts_keep_their_own_outcomes() {
    let mut session = session();
    let say = |session: &mut Session, text: &str| {
        session.begin_turn(text, 0).unwrap();
        session.end_turn("Noted.", 0).unwrap();
    };
    session.open_effort("login page performance", None).unwrap();
    say(&mut session, "Why is the login page slow on mobile?");
    session.open_effort("birthday party", None).unwrap();
    say(
        &mut session,
        "Let's plan Sam's birthday party for Saturday.",
    );
    session.switch_effort("login-page-performance").unwrap();
    say(&mut session, "The JS bundle is 2 MB.");
    session.switch_effort("birthday-party").unwrap();
    say(&mut session, "The budget is 200 euros.");
    say(&mut session, "Make it 250.");
    session.switch_effort("login-page-performance").unwrap();
    session
        .begin_turn("We split the bundle, the login page issue is resolved.", 0)
        .unwrap();
    let login = session.close_effort(None, None).unwrap();
    session.end_turn("Concluded.", 0).unwrap();
    // The party, the one effort still open, is active again.
    assert_eq!(session.efforts().active_id(), Some("birthday-party"));
    session
        .begin_turn("Party's sorted, we booked the bowling alley.", 0)
        .unwrap();
    let party = session.close_effort(None, None).unwrap();
    session.end_turn("Concluded.", 0).unwrap();

    assert!(
        login.summary.contains("split the bundle"),
        "{}",
        login.summary
    );
    assert!(party.summary.contains("bowling alley"), "{}", party.summary);
    assert!(party.summary.contains("250"), "{}", party.summary);
    assert!(!party.summary.contains("200"), "{}", party.summary);
    let login_words = ["login", "bundle", "mobile", "split"];
    let party_words = ["party", "bowling", "budget", "saturday", "250"];
    for word in party_words {
        assert!(
            !login.summary.to_lowercase().contains(word),
            "{word} in {}",
            login.summary
        );
    }
    for word in login_words {
        assert!(
            !party.summary.to_lowercase().contains(word),
            "{word} in {}",
            party.summary
        );
    }
}
