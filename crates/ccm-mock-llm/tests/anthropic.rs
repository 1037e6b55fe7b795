//! Anthropic Messages over real TCP: non-streaming and streaming replies.

mod common;

use ccm_mock_llm::{
    estimate_prompt_tokens, MockConfig, MockServer, ScriptedReply, ScriptedToolCall,
    ARGUMENT_FRAGMENT_BYTES,
};
use common::{post_json, request};
use serde_json::{json, Value};

fn messages_body(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": stream,
        "system": "You manage efforts.",
        "messages": [
            {"role": "user", "content": "let's work on the auth bug"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "start_effort", "input": {"name": "auth"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"ok\":true}"}
            ]}
        ],
        "tools": [{"name": "start_effort", "input_schema": {"type": "object"}}]
    })
}

#[test]
fn non_streaming_message_has_text_and_tool_use_blocks() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply {
        text: Some("Opening it.".into()),
        ..ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "start_effort",
            json!({"name": "auth-bug"}),
        )])
    });
    let body = messages_body(false);
    let response = request(
        server.addr(),
        "POST",
        "/v1/messages",
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_eq!(response.header("request-id"), Some("req_mock_0"));
    let json = response.json();
    assert_eq!(json["type"], "message");
    assert_eq!(json["id"], "msg_mock_0");
    assert_eq!(json["role"], "assistant");
    assert_eq!(json["model"], "claude-test");
    assert_eq!(
        json["content"],
        json!([
            {"type": "text", "text": "Opening it."},
            {"type": "tool_use", "id": "toolu_mock_0_0", "name": "start_effort", "input": {"name": "auth-bug"}}
        ])
    );
    assert_eq!(json["stop_reason"], "tool_use");
    assert_eq!(json["usage"]["input_tokens"], estimate_prompt_tokens(&body));
    assert!(json["usage"]["output_tokens"].as_u64().unwrap() >= 1);
    let logged = &server.requests()[0];
    assert_eq!(logged.header("X-Api-Key"), Some("sk-test"));
    assert_eq!(logged.tool_names(), vec!["start_effort".to_string()]);
}

#[test]
fn streamed_message_follows_the_event_sequence_and_splits_input_json() {
    let server = MockServer::start(MockConfig::default());
    let args = json!({"name": "auth-bug", "goal": "find why logins fail"});
    server.enqueue(ScriptedReply {
        text: Some("Opening the effort now.".into()),
        ..ScriptedReply::tool_call("start_effort", args.clone())
    });
    let response = post_json(server.addr(), "/v1/messages", &messages_body(true));
    assert_eq!(response.status, 200);
    assert!(response.complete);
    let events = response.events();

    // Every block has a matching `event:` line and `type`.
    for event in &events {
        assert_eq!(
            event.event.as_deref(),
            event.json()["type"].as_str(),
            "event line and data type agree"
        );
    }
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    let text_deltas = 4; // "Opening ", "the ", "effort ", "now."
    let arg_deltas = args.to_string().len().div_ceil(ARGUMENT_FRAGMENT_BYTES);
    let mut expected = vec!["message_start", "ping", "content_block_start"];
    expected.extend(std::iter::repeat_n("content_block_delta", text_deltas));
    expected.extend(["content_block_stop", "content_block_start"]);
    expected.extend(std::iter::repeat_n("content_block_delta", arg_deltas));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);

    let start = events[0].json();
    assert_eq!(start["message"]["id"], "msg_mock_0");
    assert_eq!(start["message"]["content"], json!([]));
    assert_eq!(
        start["message"]["usage"]["input_tokens"],
        estimate_prompt_tokens(&messages_body(true))
    );

    let mut text = String::new();
    let mut partials = Vec::new();
    for event in &events {
        let data = event.json();
        if data["type"] == "content_block_start" && data["index"] == 1 {
            assert_eq!(
                data["content_block"],
                json!({"type": "tool_use", "id": "toolu_mock_0_0", "name": "start_effort", "input": {}})
            );
        }
        if data["type"] == "content_block_delta" {
            match data["delta"]["type"].as_str().unwrap() {
                "text_delta" => {
                    assert_eq!(data["index"], 0);
                    text.push_str(data["delta"]["text"].as_str().unwrap());
                }
                "input_json_delta" => {
                    assert_eq!(data["index"], 1);
                    partials.push(data["delta"]["partial_json"].as_str().unwrap().to_string());
                }
                other => panic!("unexpected delta type {other}"),
            }
        }
    }
    assert_eq!(text, "Opening the effort now.");
    assert!(
        partials.len() > 5,
        "the arguments arrive in many pieces: {partials:?}"
    );
    assert!(partials.iter().all(|p| p.len() <= ARGUMENT_FRAGMENT_BYTES));
    assert_eq!(
        serde_json::from_str::<Value>(&partials.concat()).unwrap(),
        args
    );

    let delta = events[events.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 1);
}

#[test]
fn malformed_raw_arguments_reach_the_client_unchanged() {
    let server = MockServer::start(MockConfig::default());
    let raw = "{\"id\": \"e1\", ";
    server.enqueue(ScriptedReply::tool_calls(vec![ScriptedToolCall::raw(
        "expand_effort",
        raw,
    )]));
    server.enqueue(ScriptedReply::tool_calls(vec![ScriptedToolCall::raw(
        "expand_effort",
        raw,
    )]));

    // Non-streaming: `input` cannot be an object, so the raw text arrives as a JSON string.
    let json = post_json(server.addr(), "/v1/messages", &messages_body(false)).json();
    assert_eq!(json["content"][0]["input"], raw);

    // Streaming: the partial JSON joins up to exactly the raw text.
    let events = post_json(server.addr(), "/v1/messages", &messages_body(true)).events();
    let joined: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(joined, raw);
}

#[test]
fn matching_sees_the_human_text_behind_tool_results() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("not for this request").when_last_user_contains("zebra"));
    server.enqueue(ScriptedReply::text("about auth").when_last_user_contains("auth bug"));
    let json = post_json(server.addr(), "/v1/messages", &messages_body(false)).json();
    assert_eq!(json["content"][0]["text"], "about auth");
    assert_eq!(
        server.requests()[0].last_user_text.as_deref(),
        Some("let's work on the auth bug")
    );
    assert_eq!(server.queued().len(), 1, "the zebra reply is still waiting");
}

#[test]
fn an_empty_reply_has_no_content_blocks() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::default());
    server.enqueue(ScriptedReply::default());
    let json = post_json(server.addr(), "/v1/messages", &messages_body(false)).json();
    assert_eq!(json["content"], json!([]));
    assert_eq!(json["stop_reason"], "end_turn");
    let names = post_json(server.addr(), "/v1/messages", &messages_body(true)).event_names();
    assert_eq!(
        names,
        ["message_start", "ping", "message_delta", "message_stop"]
    );
}
