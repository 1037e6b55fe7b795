//! How often one message makes the planner run. A plan costs about as much as the rest of a
//! turn, so each plan a message builds without need is the turn's cost again.

use ccm_core::plan::builds_on_this_thread;
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Plans built while `message` runs.
fn builds_during(message: impl FnOnce()) -> u64 {
    let before = builds_on_this_thread();
    message();
    builds_on_this_thread() - before
}

portable_tests! {
    fn a_message_driven_without_an_llm_builds_three_plans() {
        let mut s = session();
        turn(&mut s, "Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started.");
        chatter(&mut s);
        // The compaction check when the user's text is counted (rendered and kept: the turn's
        // request reads it), the working tokens before salience, and the compaction check
        // after it, which the metrics point reads again.
        let builds = builds_during(|| {
            turn(&mut s, "The parser rejects nested lists.", &[], "Then relax the depth check.");
        });
        assert_eq!(builds, 3);
        // The meter and the inspector after the message share one rendered plan: the check
        // after salience does not render, because rendering is most of a plan's cost and not
        // every host reads the plan between turns.
        let builds = builds_during(|| {
            s.build_plan();
            s.working_tokens();
            s.build_plan();
        });
        assert_eq!(builds, 1);
    }

    fn a_change_between_turns_is_planned_once_for_the_meter_and_the_inspector() {
        let mut s = session();
        turn(&mut s, "Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started.");
        let builds = builds_during(|| {
            s.open_effort("cache layer", None).unwrap();
            s.build_plan();
            s.working_tokens();
            s.build_plan();
        });
        assert_eq!(builds, 1);
    }

    // What a plan lists does not grow with the history: evicted summaries and older ambient
    // chat are grouped exclusions, so the plan of turn 800 lists as many items as that of
    // turn 80 and the same number of messages, and building it costs the same three plans
    // per message.
    fn a_plan_lists_as_much_after_ten_times_the_history() {
        let mut s = session();
        let round = |s: &mut ccm_core::Session, n: usize| {
            let name = format!("task {n}");
            turn(s, &format!("Let's work on {name}."), &[("open_effort", &format!(r#"{{"name": "{name}"}}"#))], "Started.");
            turn(s, "The cache misses on cold start.", &[], "Warm it at boot.");
            turn(s, "Done.", &[("close_effort", &format!(r#"{{"summary": "{name}: warmed the cache at boot."}}"#))], "Concluded.");
            chatter(s);
        };
        let shape = |s: &ccm_core::Session| {
            let plan = s.build_plan();
            (plan.included.len(), plan.excluded.len(), plan.messages.len())
        };
        for n in 0..20 {
            round(&mut s, n);
        }
        let early = shape(&s);
        let early_builds = builds_during(|| { chatter(&mut s); });
        for n in 20..200 {
            round(&mut s, n);
        }
        assert_eq!(s.turn(), 801);
        assert_eq!(shape(&s), early);
        assert_eq!(builds_during(|| { chatter(&mut s); }), early_builds);
    }

    fn the_counter_counts_every_plan_built_and_none_reused() {
        let s = session();
        let builds = builds_during(|| {
            s.build_plan();
            s.working_tokens();
            s.build_plan_afresh();
        });
        assert_eq!(builds, 2);
    }
}
