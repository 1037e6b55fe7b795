//! The one turn driver over a scripted host: stored logs read when a tool call needs them
//! (`Step::Load`), a log that cannot be read, retries announced before they are waited for,
//! cancellation during a wait, and the events a user interface sees.

use ccm_core::{Config, EffortStatus, LogState, Session};
use ccm_engine::driver::{block_on, drive_turn};
use ccm_engine::{run_instant_turn, EngineSettings, LlmRequest, LogLoad, RunError, TurnEvent};
use ccm_provider::{FinishReason, ProviderError, ProviderResponse, ToolCall};
// The in-memory store of ccm-core's own tests: the same record layout and transaction rules as
// the browser backends, so that a session opened from it has its concluded logs left in storage.
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::scripted_host::{answer, Reading, ScriptedHost};
use std::collections::VecDeque;

fn call(name: &str, arguments: &str) -> ProviderResponse {
    ProviderResponse {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: format!("call_{name}"),
            name: name.to_string(),
            arguments: arguments.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        usage: None,
    }
}

fn status(session: &Session) -> Option<EffortStatus> {
    session
        .efforts()
        .get("csv-import")
        .map(|effort| effort.status)
}

/// A session with one concluded effort (`csv-import`), saved to a store and opened again, so
/// that the concluded effort's raw log stays in the store until something needs it.
fn stored_session() -> (Session, MemoryStore) {
    let mut session = Session::new(Config::default()).expect("default config");
    let turns = [
        (
            "The CSV import mangles dates.",
            [
                call("open_effort", r#"{"name": "csv import"}"#),
                answer("Which column is wrong?"),
            ],
        ),
        (
            "Fixed it, thanks.",
            [
                call(
                    "close_effort",
                    r#"{"summary": "Dates were parsed as numbers; fixed."}"#,
                ),
                answer("Done."),
            ],
        ),
    ];
    for (at_ms, (text, answers)) in (1..).zip(turns) {
        let mut answers = answers.into_iter();
        let respond = |_: &LlmRequest, _: &Session| Ok(answers.next().expect("scripted"));
        run_instant_turn(
            &mut session,
            text,
            at_ms,
            EngineSettings::new("scripted"),
            respond,
        )
        .expect("a scripted turn");
    }
    assert_eq!(status(&session), Some(EffortStatus::Concluded));
    let mut store = MemoryStore::default();
    let batch = session.write_batch().expect("between turns");
    store.apply(&batch).expect("one writer");
    let (opened, report) =
        Session::from_store(store.load(), session.counter().clone()).expect("readable");
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_ne!(
        opened.efforts().get("csv-import").expect("stored").log,
        LogState::Loaded
    );
    (opened, store)
}

/// Runs a turn where the model expands `csv-import`, and returns the host, the outcome and the
/// events seen, in a compact form.
fn expand_turn(reading: Reading) -> (Session, Vec<LogLoad>, Vec<String>) {
    let (session, store) = stored_session();
    let mut host = ScriptedHost::new(session, &store);
    host.reading = reading;
    host.answers = VecDeque::from([
        Ok(call("expand_effort", r#"{"id": "csv-import"}"#)),
        Ok(answer("Here is what we did.")),
    ]);
    let mut events = Vec::new();
    let result = block_on(drive_turn(
        &mut host,
        "What did we do about the CSV dates?",
        EngineSettings::new("scripted"),
        &mut |event| {
            if let TurnEvent::ToolCalled(entry) = event {
                events.push(format!("{} ok={} {}", entry.name, entry.ok, entry.result));
            }
        },
    ))
    .expect("the turn ends with an answer");
    assert!(
        result.reply.ends_with("Here is what we did."),
        "{}",
        result.reply
    );
    (host.session, host.loads, events)
}

/// The loads a tool call asked for (the others are the request's).
fn tool_loads(loads: &[LogLoad]) -> Vec<&LogLoad> {
    loads.iter().filter(|l| l.tool.is_some()).collect()
}

#[test]
fn a_stored_log_is_read_when_a_tool_call_needs_it_and_the_call_then_runs() {
    let (session, loads, events) = expand_turn(Reading::Works);
    assert_eq!(
        tool_loads(&loads),
        [&LogLoad {
            efforts: vec!["csv-import".to_string()],
            index: None,
            messages: Vec::new(),
            tool: Some("expand_effort".to_string()),
        }]
    );
    assert_eq!(events.len(), 1);
    assert!(events[0].starts_with("expand_effort ok=true"), "{events:?}");
    assert_eq!(
        session.efforts().get("csv-import").unwrap().log,
        LogState::Loaded
    );
    assert_eq!(session.efforts().expanded_ids(), ["csv-import"]);
}

#[test]
fn before_the_first_request_the_recall_index_is_rebuilt_and_recalled_messages_read() {
    let (session, loads, _) = expand_turn(Reading::Works);
    // The session was opened from the store: its index is rebuilt first, in one step here
    // (it has a few messages), then the messages its automatic recall shows are read back.
    assert_eq!(loads[0].tool, None);
    assert_eq!(
        loads[0].index.map(|r| (r.from_seq, r.to_seq)),
        Some((0, session.stored_message_count() as u64 - 2))
    );
    assert!(session.recall_state().index_complete());
    let recalled = loads
        .iter()
        .find(|l| l.tool.is_none() && !l.messages.is_empty())
        .expect("the question recalls the csv-import messages, which are in the store only");
    assert!(recalled.index.is_none() && recalled.efforts.is_empty());
}

#[test]
fn records_a_request_needs_are_asked_for_once_when_reading_them_fails() {
    let (_, loads, events) = expand_turn(Reading::Fails);
    // The index step failed: the request went out without it, and nothing was asked again
    // for the request; the tool call's own read failed and became its error.
    let for_request: Vec<_> = loads.iter().filter(|l| l.tool.is_none()).collect();
    assert_eq!(for_request.len(), 1, "{loads:?}");
    assert!(for_request.iter().all(|l| l.index.is_some()));
    assert!(
        events[0].starts_with("expand_effort ok=false"),
        "{events:?}"
    );
}

#[test]
fn a_log_that_cannot_be_read_becomes_the_calls_error_and_the_turn_goes_on() {
    let (session, loads, events) = expand_turn(Reading::Fails);
    assert_eq!(tool_loads(&loads).len(), 1);
    assert_eq!(events.len(), 1);
    assert!(
        events[0].contains("could not read the stored log of 'csv-import': the disk is unreadable"),
        "{events:?}"
    );
    assert!(
        events[0].starts_with("expand_effort ok=false"),
        "{events:?}"
    );
    // Nothing changed: the effort is still concluded and its log still in the store only.
    assert_eq!(status(&session), Some(EffortStatus::Concluded));
    assert_ne!(
        session.efforts().get("csv-import").unwrap().log,
        LogState::Loaded
    );
    assert!(session.efforts().expanded_ids().is_empty());
}

#[test]
fn a_host_that_claims_a_read_without_attaching_is_asked_once_and_the_call_fails() {
    let (_, loads, events) = expand_turn(Reading::ClaimsWithoutAttaching);
    assert_eq!(tool_loads(&loads).len(), 1, "asked once, not in a loop");
    let for_request = loads.iter().filter(|l| l.tool.is_none()).count();
    assert_eq!(for_request, 1, "the request's records too: {loads:?}");
    assert!(events[0].contains("is stored but not loaded"), "{events:?}");
}

#[test]
fn a_retry_is_announced_before_its_wait_and_cancelling_in_the_wait_restores_the_session() {
    let (session, store) = stored_session();
    let turn_before = session.turn();
    let messages_before = session.stored_message_count();
    let mut host = ScriptedHost::new(session, &store);
    host.cancel_when_sleeping = true;
    host.answers = VecDeque::from([Err(ProviderError::Server {
        status: 503,
        message: "overloaded".into(),
        retry_after_ms: Some(1_500),
    })]);
    let mut seen = Vec::new();
    let outcome = block_on(drive_turn(
        &mut host,
        "Still there?",
        EngineSettings::new("scripted"),
        &mut |event| {
            seen.push(match event {
                TurnEvent::Sending(request) => format!("sending {}", request.attempt),
                TurnEvent::Retrying(wait) => format!("retrying in {}", wait.delay_ms),
                TurnEvent::Delta { .. } => "delta".to_string(),
                TurnEvent::ToolCalled(entry) => format!("tool {}", entry.name),
            })
        },
    ));
    let Err(RunError::Failed(failure)) = outcome else {
        panic!("expected a cancelled turn, got {outcome:?}");
    };
    assert!(failure.was_cancelled());
    assert_eq!(failure.user_text, "Still there?");
    assert_eq!(seen, ["sending 1", "retrying in 1500"]);
    assert_eq!(host.slept, [1_500]);
    assert_eq!(host.session.turn(), turn_before);
    assert!(!host.session.in_turn());
    assert_eq!(host.session.stored_message_count(), messages_before);
}
