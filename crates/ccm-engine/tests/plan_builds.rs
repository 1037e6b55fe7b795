//! How often one message driven by the engine makes the planner run: each plan a message
//! builds without need costs about as much as the rest of the turn.

use ccm_core::plan::builds_on_this_thread;
use ccm_engine::{EngineSettings, Step, TurnEngine};
use ccm_provider::{FinishReason, ProviderResponse};
use ccm_test_support::portable_tests;
use ccm_test_support::{session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

portable_tests! {
    fn a_message_answered_in_one_request_builds_three_plans() {
        let mut s = session();
        turn(&mut s, "Let's work on the parser.", &[("open_effort", r#"{"name": "parser"}"#)], "Started.");
        let before = builds_on_this_thread();
        let mut engine = TurnEngine::begin(&mut s, "The parser rejects nested lists.", 10, EngineSettings::new("test-model"))
            .expect("no turn in progress");
        let mut requests = 0;
        loop {
            match engine.next(&mut s).expect("engine used correctly") {
                Step::Send(_) => {
                    requests += 1;
                    let answer = ProviderResponse {
                        text: "Then relax the depth check.".to_string(),
                        tool_calls: Vec::new(),
                        finish_reason: FinishReason::Stop,
                        usage: None,
                    };
                    engine.receive(&mut s, Ok(answer), 20).unwrap();
                }
                Step::Wait(_) => {}
                Step::Done(_) => break,
                other => panic!("expected the turn to end, got {other:?}"),
            }
        }
        assert_eq!(requests, 1);
        // The compaction check when the user's text is counted, whose plan the session keeps
        // and hands out again as the request's plan and to `end_turn` for leases and
        // activation; the working tokens before salience; and the compaction check after it,
        // which the metrics point reads again.
        assert_eq!(builds_on_this_thread() - before, 3);
    }
}
