//! The offline demo model against the ways people actually phrase things: asking for help,
//! opening, switching, concluding and asking about past work in many wordings, saying so when
//! it cannot tell what is wanted, and summaries that keep the latest facts. Each table row is
//! one real phrasing; a row that is not understood fails with its text.

use ccm_core::{EffortStatus, Session};
use ccm_test_support::offline::{calls, say};
use ccm_test_support::portable_tests;
use ccm_test_support::session;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A session where "tax return" is open and active, as in the report of the bug where every
/// new topic was filed into it.
fn busy_with_taxes() -> Session {
    let mut s = session();
    say(
        &mut s,
        "Let's work on the tax return: the deadline is April 15.",
    );
    say(&mut s, "The receipts are in the blue folder.");
    assert_eq!(s.efforts().active_id(), Some("tax-return"));
    s
}

portable_tests! {
    fn it_explains_itself_when_asked_for_help() {
        for text in [
            "help",
            "Help!",
            "help?",
            "What is CCM?",
            "what is this?",
            "What can you do?",
            "How does this work?",
            "Who are you?",
            "What are you?",
            "How do I use this?",
            "What should I try?",
            "I'm new here, where do I start?",
            "what commands do you understand?",
            "Can you help?",
        ] {
            let mut s = session();
            let answer = say(&mut s, text);
            assert!(answer.tool_calls.is_empty(), "{text}: {:?}", calls(&answer));
            let said = &answer.model_text;
            assert!(said.contains("CCM (Cognitive Context Management)"), "{text}: {said}");
            assert!(said.contains("efforts"), "{text}: {said}");
            assert!(said.contains("Try: "), "{text}: {said}");
            assert!(said.contains("\"Let's work on"), "{text}: {said}");
            // Nothing was filed or opened.
            assert!(s.efforts().open_ids().is_empty(), "{text}");
        }
        // Asking for help with something opens an effort for it instead.
        let mut s = session();
        let opened = say(&mut s, "Help me with the CSV import.");
        assert_eq!(calls(&opened), [r#"open_effort({"name":"csv import"})"#]);
    }

    fn it_opens_an_effort_for_many_phrasings_of_new_work() {
        for (text, id) in [
            ("let's plan the team offsite", "team-offsite"),
            ("Let's plan the team offsite for June.", "team-offsite-for-june"),
            ("I want to plan the team offsite.", "team-offsite"),
            ("I'd like to organize the team offsite.", "team-offsite"),
            ("We need to fix the login redirect.", "login-redirect"),
            ("Can we start on the quarterly report?", "quarterly-report"),
            ("Let's draft the launch announcement.", "launch-announcement"),
            ("Time to refactor the payment module.", "payment-module"),
            ("I need to write the onboarding guide.", "onboarding-guide"),
            ("Let's figure out the flaky CI job.", "flaky-ci-job"),
            ("New effort: vendor contract review", "vendor-contract-review"),
            ("New task: hiring plan", "hiring-plan"),
            ("Could we set up the staging server?", "staging-server"),
            ("Let's debug the memory leak in the worker.", "memory-leak"),
            ("Next up: the pricing page.", "pricing-page"),
            ("Let's talk about the conference talk.", "conference-talk"),
        ] {
            let mut s = busy_with_taxes();
            let opened = say(&mut s, text);
            assert_eq!(s.efforts().active_id(), Some(id), "{text}: {:?}", calls(&opened));
            assert_eq!(s.efforts().get("tax-return").unwrap().messages.len(), 4, "{text}: filed into tax-return");
        }
    }

    fn it_switches_for_many_phrasings() {
        for text in [
            "Back to the tax return.",
            "Let's go back to the tax return.",
            "Switch to the tax return.",
            "Can we return to the tax return?",
            "Resume the tax return.",
            "Let's pick up the tax return again.",
            "Let's continue with the tax return.",
            "Let's get back to the tax return, please.",
            "Let's revisit the tax return.",
            "Switch back to tax return",
        ] {
            let mut s = busy_with_taxes();
            say(&mut s, "Let's work on the garden shed: it needs a new roof.");
            assert_eq!(s.efforts().active_id(), Some("garden-shed"));
            let switched = say(&mut s, text);
            assert_eq!(calls(&switched), [r#"switch_effort({"id":"tax-return"})"#], "{text}");
            assert_eq!(s.efforts().active_id(), Some("tax-return"), "{text}");
        }
    }

    fn it_concludes_for_many_phrasings() {
        for text in [
            "That's done.",
            "Done!",
            "Finished.",
            "We're all set with this.",
            "Let's wrap this up.",
            "Wrap it up.",
            "Close this effort.",
            "Please close it.",
            "That's settled.",
            "It's fixed now.",
            "Mark it as done.",
            "Conclude the tax return.",
            "The tax return is filed, we can close it.",
            "That's everything for the tax return.",
        ] {
            let mut s = busy_with_taxes();
            let closed = say(&mut s, text);
            assert_eq!(calls(&closed), [r#"close_effort({"id":"tax-return"})"#], "{text}");
            assert_eq!(s.efforts().get("tax-return").unwrap().status, EffortStatus::Concluded, "{text}");
        }
        // Questions about what is done are not conclusions.
        for text in ["What have we done so far?", "Is the tax return finished?", "Is it fixed?"] {
            let mut s = busy_with_taxes();
            let asked = say(&mut s, text);
            assert!(!calls(&asked).iter().any(|c| c.starts_with("close_effort")), "{text}");
        }
    }

    fn it_answers_questions_about_past_work_in_many_phrasings() {
        for text in [
            "What did we decide about the tax return?",
            "Remind me about the tax return.",
            "Can you remind me what we did for the tax return?",
            "What was the outcome of the tax return?",
            "Recap the tax return for me.",
            "Catch me up on the tax return.",
            "Tell me about the tax return.",
            "What do we know about the tax return?",
            "Summarize the tax return.",
            "Where were we with the tax return?",
            "What happened with the tax return?",
        ] {
            let mut s = busy_with_taxes();
            say(&mut s, "Filed it on April 10 with the receipts. That's done.");
            let recalled = say(&mut s, text);
            let said = &recalled.model_text;
            assert!(said.contains("tax-return"), "{text}: {said}");
            assert!(said.contains("April 10") || said.contains("April 15"), "{text}: {said}");
            assert!(!said.starts_with("Noted"), "{text}: {said}");
        }
    }

    fn it_says_so_when_it_cannot_tell_what_is_wanted() {
        for text in [
            "Can you book me a flight to Paris?",
            "What's the capital of France?",
            "Why is the sky blue?",
            "hmm?",
        ] {
            let mut s = busy_with_taxes();
            let answer = say(&mut s, text);
            assert!(answer.tool_calls.is_empty(), "{text}");
            let said = &answer.model_text;
            assert!(said.contains("I could not tell what you want me to do"), "{text}: {said}");
            assert!(said.contains("\"help\""), "{text}: {said}");
            assert!(said.contains("tax-return"), "{text}: it says where the message went: {said}");
        }
        // A plain statement is simply noted where it belongs.
        let mut s = busy_with_taxes();
        let noted = say(&mut s, "The accountant is Maria Lopez.");
        assert_eq!(noted.model_text, "Noted, that goes into tax-return.");
    }

    fn summaries_keep_the_latest_facts() {
        for (facts, latest, stale) in [
            (
                &["The cache TTL is 1h.", "Actually, make the TTL 24h."][..],
                "24h",
                "1h.",
            ),
            (
                &["The server listens on port 8080.", "We moved the server to port 9090."][..],
                "9090",
                "8080",
            ),
            (
                &["We use Postgres 14.", "We upgraded to Postgres 16 yesterday."][..],
                "Postgres 16",
                "Postgres 14",
            ),
            (
                &["The budget is 5000 EUR.", "Marketing needs a slot too.", "The budget is now 7500 EUR after review."][..],
                "7500",
                "5000",
            ),
        ] {
            let mut s = session();
            say(&mut s, "Let's work on the platform settings.");
            for fact in facts {
                say(&mut s, fact);
            }
            say(&mut s, "That's done.");
            let summary = s.efforts().get("platform-settings").unwrap().summary.clone().unwrap().text.clone();
            assert!(summary.contains(latest), "{facts:?}: {summary}");
            assert!(!summary.contains(stale), "{facts:?} kept the stale fact: {summary}");
        }
        // The outcome stated in the message that concludes the effort is its last fact.
        let mut s = session();
        say(&mut s, "Let's work on the auth bug: users get 401 errors after an hour.");
        say(&mut s, "The refresh token TTL is 1h in config/auth.yaml.");
        say(&mut s, "The auth bug is resolved: raising the refresh token TTL to 24h fixed it. We're done.");
        let summary = s.efforts().get("auth-bug").unwrap().summary.clone().unwrap().text.clone();
        assert!(summary.contains("raising the refresh token TTL to 24h fixed it"), "{summary}");
        assert!(!summary.contains("1h"), "{summary}");
    }
}
