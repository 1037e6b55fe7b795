//! Tools as data, through the turn engine: a tool added in this file (its table entry and its
//! handler, nothing else) is offered to the model, run by the session and traced like a
//! built-in one; a tool the host runs is handed to the host (`Step::RunTool`, or the driver's
//! `TurnHost::run_tool`), and the host's result or failure is stored like any other result.

use ccm_core::tools::{parse_args, Needs, Runs, Tool, ToolReply, Tools, BUILTIN};
use ccm_core::{Config, Session, ToolError};
use ccm_engine::driver::{block_on, drive, TurnHost};
use ccm_engine::{
    EngineError, EngineSettings, HostToolCall, LlmRequest, Step, ToolHandling, TurnEngine,
};
use ccm_provider::{FinishReason, ProviderResponse, ToolCall};
use ccm_provider::{WireMessage, WireTool};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::scripted_host::{answer, ScriptedHost};
use serde_json::{json, Value};
use std::collections::VecDeque;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A model tool that exists only in this test: the whole of what it takes to add one.
const COUNT_WORDS: Tool = Tool {
    name: "count_words",
    description: "Count the words of a text, and say which turn it is.",
    properties: || json!({"text": {"type": "string", "description": "The text to count."}}),
    required: &["text"],
    result_type: "WordCount",
    needs: Needs::Nothing,
    runs: Runs::Session(count_words),
};

fn count_words(session: &mut Session, args: &str) -> Result<ToolReply, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        text: String,
    }
    let a: Args = parse_args(COUNT_WORDS.name, args)?;
    let words = a.text.split_whitespace().count();
    let banner = format!("--- Counted {words} words ---");
    Ok((
        json!({"words": words, "turn": session.turn()}),
        Some(banner),
    ))
}

/// A tool the host runs: the table has no handler for it.
const READ_CLOCK: Tool = Tool {
    name: "read_clock",
    description: "Read the wall clock of the person's computer.",
    properties: || json!({"zone": {"type": "string", "description": "An IANA time zone."}}),
    required: &[],
    result_type: "ClockReading",
    needs: Needs::Nothing,
    runs: Runs::Host,
};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

fn answer_with_calls(calls: Vec<ToolCall>) -> ProviderResponse {
    ProviderResponse {
        text: String::new(),
        tool_calls: calls,
        finish_reason: FinishReason::ToolCalls,
        usage: None,
    }
}

fn offered(request: &LlmRequest) -> Vec<&str> {
    request.tools.iter().map(|t| t.name.as_str()).collect()
}

/// The tool results of the turn's exchange, as the next request carries them.
fn tool_results(request: &LlmRequest) -> Vec<(String, String, String)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            WireMessage::ToolResult {
                call_id,
                name,
                content,
            } => Some((call_id.clone(), name.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

fn send(step: Step) -> LlmRequest {
    match step {
        Step::Send(request) => request,
        other => panic!("expected a request, got {other:?}"),
    }
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_tool_added_in_a_test_is_offered_run_by_the_session_and_traced() {
    let mut session = Session::new(Config::default()).unwrap();
    let tools = Tools::builtin().with(COUNT_WORDS).unwrap();
    let mut engine = TurnEngine::begin(
        &mut session,
        "How long is this?",
        10,
        EngineSettings::new("m"),
    )
    .unwrap()
    .with_tools(&session, tools);

    let first = send(engine.next(&mut session).unwrap());
    let mut names: Vec<&str> = BUILTIN.iter().map(|t| t.name).collect();
    names.push("count_words");
    assert_eq!(offered(&first), names);
    assert_eq!(
        first.tools.last().unwrap(),
        &WireTool {
            name: "count_words".into(),
            description: COUNT_WORDS.description.into(),
            parameters: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to count."}},
                "required": ["text"],
                "additionalProperties": false,
            }),
        }
    );
    // The added definition is counted in every request's estimate.
    let builtin_only = {
        let mut other = Session::new(Config::default()).unwrap();
        let mut engine = TurnEngine::begin(
            &mut other,
            "How long is this?",
            10,
            EngineSettings::new("m"),
        )
        .unwrap();
        send(engine.next(&mut other).unwrap())
            .estimate
            .tool_definition_tokens
    };
    assert!(first.estimate.tool_definition_tokens > builtin_only);

    let calls = vec![
        call("c1", "count_words", r#"{"text": "one two three"}"#),
        call("c2", "count_words", r#"{"words": 3}"#),
    ];
    engine
        .receive(&mut session, Ok(answer_with_calls(calls)), 20)
        .unwrap();
    let second = send(engine.next(&mut session).unwrap());
    let results = tool_results(&second);
    assert_eq!(
        results[0],
        (
            "c1".into(),
            "count_words".into(),
            r#"{"turn":1,"words":3}"#.into()
        )
    );
    assert_eq!(results[1].0, "c2");
    assert!(
        results[1].2.contains("invalid arguments for count_words") && results[1].2.contains("text"),
        "{}",
        results[1].2
    );

    engine
        .receive(&mut session, Ok(answer("Three words.")), 30)
        .unwrap();
    let Step::Done(result) = engine.next(&mut session).unwrap() else {
        panic!("expected the turn to end")
    };
    let trace: Vec<(bool, ToolHandling, Option<&str>)> = result
        .tool_calls
        .iter()
        .map(|t| (t.ok, t.handling, t.banner.as_deref()))
        .collect();
    assert_eq!(
        trace,
        [
            (
                true,
                ToolHandling::Executed,
                Some("--- Counted 3 words ---")
            ),
            (false, ToolHandling::Executed, None)
        ]
    );
    // Like `pin_context`'s, a handler's banner is the call's (the trace shows it); the reply
    // carries the banners of the session's own operations only.
    assert_eq!(result.reply, "Three words.");
    // The session's own telemetry traces the added tool like a built-in one.
    let telemetry = session
        .history()
        .telemetry()
        .last()
        .expect("the turn's telemetry");
    let traced: Vec<(&str, bool)> = telemetry
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.ok))
        .collect();
    assert_eq!(traced, [("count_words", true), ("count_words", false)]);
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_name_already_offered_cannot_be_added_again() {
    let clash = Tool {
        name: "open_effort",
        ..COUNT_WORDS
    };
    let error = Tools::builtin().with(clash).unwrap_err();
    assert_eq!(
        error,
        ToolError::NameTaken {
            name: "open_effort".into()
        }
    );
    assert!(error.to_string().contains("another name"), "{error}");
    let twice = Tools::builtin()
        .with(COUNT_WORDS)
        .unwrap()
        .with(COUNT_WORDS);
    assert!(matches!(twice, Err(ToolError::NameTaken { .. })));
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn the_session_refuses_a_host_tool_and_names_the_way_out() {
    let mut session = Session::new(Config::default()).unwrap();
    let tools = Tools::builtin().with(READ_CLOCK).unwrap();
    let outcome = tools.execute(&mut session, "read_clock", "{}");
    assert!(!outcome.ok);
    let error = outcome.result["error"].as_str().unwrap();
    assert!(
        error.contains("run by the host") && error.contains("RunTool"),
        "{error}"
    );
    // A name no table has is still an unknown tool, and the list names the added tools too.
    let unknown = tools.execute(&mut session, "read_calendar", "{}");
    let error = unknown.result["error"].as_str().unwrap();
    assert!(error.starts_with("unknown tool 'read_calendar'"), "{error}");
    assert!(
        error.ends_with("pin_context, unpin_context, read_clock"),
        "{error}"
    );
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_host_tool_call_is_handed_to_the_host_and_its_result_stored_like_any_other() {
    let mut session = Session::new(Config::default()).unwrap();
    let tools = Tools::builtin().with(READ_CLOCK).unwrap();
    let mut engine = TurnEngine::begin(
        &mut session,
        "What time is it?",
        10,
        EngineSettings::new("m"),
    )
    .unwrap()
    .with_tools(&session, tools);
    let first = send(engine.next(&mut session).unwrap());
    assert_eq!(offered(&first).last(), Some(&"read_clock"));
    // Nothing is waiting for the host yet.
    assert_eq!(
        engine.tool_ran(&mut session, Ok(json!({}))),
        Err(EngineError::NotAwaitingToolResult)
    );

    let calls = vec![
        call("k1", "read_clock", r#"{"zone": "Europe/Zurich"}"#),
        call("k2", "read_clock", "{}"),
    ];
    engine
        .receive(&mut session, Ok(answer_with_calls(calls)), 20)
        .unwrap();
    let expected = HostToolCall {
        call_id: "k1".into(),
        name: "read_clock".into(),
        arguments: r#"{"zone": "Europe/Zurich"}"#.into(),
    };
    assert_eq!(
        engine.next(&mut session).unwrap(),
        Step::RunTool(expected.clone())
    );
    // Asking again before the host answered hands over the same call.
    assert_eq!(engine.next(&mut session).unwrap(), Step::RunTool(expected));
    engine
        .tool_ran(&mut session, Ok(json!({"time": "12:00"})))
        .unwrap();
    let Step::RunTool(second_call) = engine.next(&mut session).unwrap() else {
        panic!("expected the second call to be handed over")
    };
    assert_eq!(second_call.call_id, "k2");
    engine
        .tool_ran(&mut session, Err("the clock is not readable".into()))
        .unwrap();

    let second = send(engine.next(&mut session).unwrap());
    assert_eq!(
        tool_results(&second),
        [
            (
                "k1".into(),
                "read_clock".into(),
                r#"{"time":"12:00"}"#.into()
            ),
            (
                "k2".into(),
                "read_clock".into(),
                r#"{"error":"the clock is not readable"}"#.into()
            ),
        ]
    );
    engine
        .receive(&mut session, Ok(answer("It is noon.")), 30)
        .unwrap();
    let Step::Done(result) = engine.next(&mut session).unwrap() else {
        panic!("expected the turn to end")
    };
    let trace: Vec<(&str, bool, ToolHandling, &Value)> = result
        .tool_calls
        .iter()
        .map(|t| (t.call_id.as_str(), t.ok, t.handling, &t.result))
        .collect();
    assert_eq!(
        trace,
        [
            (
                "k1",
                true,
                ToolHandling::RanByHost,
                &json!({"time": "12:00"})
            ),
            (
                "k2",
                false,
                ToolHandling::Executed,
                &json!({"error": "the clock is not readable"})
            ),
        ]
    );
    assert_eq!(result.reply, "It is noon.");
    let telemetry = session
        .history()
        .telemetry()
        .last()
        .expect("the turn's telemetry");
    let traced: Vec<(&str, &str, bool)> = telemetry
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.arguments.as_str(), t.ok))
        .collect();
    assert_eq!(
        traced,
        [
            ("read_clock", r#"{"zone": "Europe/Zurich"}"#, true),
            ("read_clock", "{}", false)
        ]
    );
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn the_driver_runs_a_host_tool_through_the_host() {
    // A session wholly in memory: the store stays empty.
    let store = MemoryStore::default();
    let mut host = ScriptedHost::new(Session::new(Config::default()).unwrap(), &store);
    host.now_ms = 1_000;
    host.answers = VecDeque::from([
        Ok(answer_with_calls(vec![call("k1", "read_clock", "{}")])),
        Ok(answer("It is seven.")),
    ]);
    host.tool_results = VecDeque::from([Ok(json!({"time": "07:00", "zone": "UTC"}))]);
    let tools = Tools::builtin().with(READ_CLOCK).unwrap();
    let mut engine = host
        .with_session(|session| {
            TurnEngine::begin(session, "What time is it?", 1_000, EngineSettings::new("m"))
                .map(|engine| engine.with_tools(session, tools))
        })
        .unwrap();
    let mut shown = Vec::new();
    let result = block_on(drive(&mut host, &mut engine, &mut |event| {
        if let ccm_engine::TurnEvent::ToolCalled(call) = event {
            shown.push((call.name.clone(), call.handling));
        }
    }))
    .unwrap();
    assert_eq!(host.ran.len(), 1);
    assert_eq!(host.ran[0].call_id, "k1");
    assert_eq!(shown, [("read_clock".to_string(), ToolHandling::RanByHost)]);
    assert_eq!(
        result.tool_calls[0].result,
        json!({"time": "07:00", "zone": "UTC"})
    );
    assert_eq!(result.reply, "It is seven.");
    assert!(!host.session.in_turn());
}
