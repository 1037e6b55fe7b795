//! How often one message makes the planner run. A plan costs about as much as the rest of a
//! turn, so each plan a message builds without need is the turn's cost again.

mod common;

use ccm_core::plan::builds_on_this_thread;
use common::{chatter, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Plans built while `message` runs.
fn builds_during(message: impl FnOnce()) -> u64 {
    let before = builds_on_this_thread();
    message();
    builds_on_this_thread() - before
}

portable_tests! {
    fn a_message_driven_without_an_llm_builds_four_plans() {
        let mut s = session();
        turn(&mut s, "Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started.");
        chatter(&mut s);
        // The compaction check when the user's text is counted, the plan of the turn's
        // request, the working tokens before salience, and the compaction check after it,
        // whose measure the metrics point reuses when it applied nothing.
        let builds = builds_during(|| {
            turn(&mut s, "The parser rejects nested lists.", &[], "Then relax the depth check.");
        });
        assert_eq!(builds, 4);
    }

    fn the_counter_counts_every_plan() {
        let s = session();
        let builds = builds_during(|| {
            s.build_plan();
            s.working_tokens();
        });
        assert_eq!(builds, 2);
    }
}
