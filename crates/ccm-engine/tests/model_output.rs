//! A model's output past a limit of `ccm_provider::output` ends the turn as a clear failure,
//! whatever host delivered it: the session is exactly as before the turn (nothing of the
//! answer is stored), the person's text is given back, and the request is not retried. An
//! answer at the limit is stored, and the session that holds it can be saved and read again.

use ccm_core::Session;
use ccm_engine::{run_instant_turn, EngineSettings, RunError};
use ccm_provider::{
    FinishReason, OutputField, ProviderError, ProviderResponse, ToolCall, MAX_ANSWER_CHARS,
    MAX_TOOL_ARGUMENTS_CHARS,
};
use ccm_test_support::portable_tests;
use ccm_test_support::session;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn answer(text: String, tool_calls: Vec<ToolCall>) -> ProviderResponse {
    ProviderResponse {
        text,
        finish_reason: if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        },
        tool_calls,
        usage: None,
    }
}

/// Runs a turn whose first answer is `first` (later requests get a short answer) and returns
/// the outcome and how many requests were made.
fn run(session: &mut Session, first: ProviderResponse) -> (Result<(), RunError>, usize) {
    let mut requests = 0;
    let mut first = Some(first);
    let outcome = run_instant_turn(
        session,
        "write it all out",
        1_000,
        EngineSettings::new("m"),
        |_, _| {
            requests += 1;
            Ok(first
                .take()
                .unwrap_or_else(|| answer("done".into(), vec![])))
        },
    );
    (outcome.map(drop), requests)
}

fn assert_refused(first: ProviderResponse, field: OutputField) {
    let mut session = session();
    ccm_test_support::turn(&mut session, "hello", &[], "hi");
    let before = session.to_json().unwrap();
    let (outcome, requests) = run(&mut session, first);
    match outcome {
        Err(RunError::Failed(failure)) => {
            assert_eq!(failure.error, ProviderError::OutputTooLarge { field });
            assert_eq!(failure.user_text, "write it all out");
        }
        other => panic!("{field:?}: expected a failed turn, got {other:?}"),
    }
    assert_eq!(requests, 1, "{field:?}: not retried");
    assert_eq!(
        session.to_json().unwrap(),
        before,
        "{field:?}: the session is unchanged"
    );
}

portable_tests! {
    fn an_answer_past_the_limit_fails_the_turn_and_leaves_the_session_as_it_was() {
        assert_refused(answer("a".repeat(MAX_ANSWER_CHARS + 1), vec![]), OutputField::Answer);
    }

    fn tool_call_arguments_past_the_limit_fail_the_turn() {
        let arguments = format!("{{\"name\":\"{}\"}}", "n".repeat(MAX_TOOL_ARGUMENTS_CHARS));
        let call = ToolCall { id: "c1".into(), name: "open_effort".into(), arguments };
        assert_refused(answer(String::new(), vec![call]), OutputField::ToolArguments);
    }

    fn a_tool_name_past_its_limit_fails_the_turn() {
        let call = ToolCall { id: "c1".into(), name: "x".repeat(1_001), arguments: "{}".into() };
        assert_refused(answer(String::new(), vec![call]), OutputField::ToolName);
    }

    fn an_answer_at_the_limit_is_stored_and_its_session_reads_back() {
        let mut session = session();
        let (outcome, _) = run(&mut session, answer("a".repeat(MAX_ANSWER_CHARS), vec![]));
        outcome.expect("an answer at the limit is fine");
        let stored = session.ambient().messages().last().expect("the answer is stored");
        assert_eq!(stored.content.len(), MAX_ANSWER_CHARS);
        let json = session.to_json().unwrap();
        let again = Session::from_json(&json).expect("what was stored reads back");
        assert_eq!(again.to_json().unwrap(), json);
    }
}
