//! OpenAI Chat Completions over real TCP: non-streaming and streaming replies.

mod common;

use ccm_mock_llm::{
    estimate_prompt_tokens, MockConfig, MockServer, ReplySource, ScriptedReply, ScriptedToolCall,
    ARGUMENT_FRAGMENT_BYTES,
};
use common::{collect_strings, post_json};
use serde_json::{json, Value};

fn chat_body(user: &str, stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You manage efforts."},
            {"role": "user", "content": user}
        ],
        "tools": [{"type": "function", "function": {"name": "start_effort", "parameters": {"type": "object"}}}]
    })
}

#[test]
fn non_streaming_text_reply_has_ids_usage_and_cors() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("Hello, world."));
    let body = chat_body("hi there", false);
    let response = post_json(server.addr(), "/v1/chat/completions", &body);

    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.header("x-request-id"), Some("req_mock_0"));
    let json = response.json();
    assert_eq!(json["object"], "chat.completion");
    assert_eq!(json["id"], "chatcmpl-mock-0");
    assert_eq!(json["model"], "gpt-test");
    assert_eq!(json["choices"][0]["message"]["role"], "assistant");
    assert_eq!(json["choices"][0]["message"]["content"], "Hello, world.");
    assert!(json["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(json["choices"][0]["finish_reason"], "stop");
    let prompt = estimate_prompt_tokens(&body);
    assert!(prompt > 20, "a realistic estimate, got {prompt}");
    assert_eq!(json["usage"]["prompt_tokens"], prompt);
    assert_eq!(json["usage"]["completion_tokens"], 4); // 13 bytes / 4, rounded up
    assert_eq!(json["usage"]["total_tokens"], prompt + 4);
}

#[test]
fn non_streaming_tool_calls_carry_json_and_raw_arguments() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::tool_calls(vec![
        ScriptedToolCall::new("start_effort", json!({"name": "auth-bug"})),
        ScriptedToolCall::raw("close_effort", "{\"id\": "),
    ]));
    let json = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body("go", false),
    )
    .json();
    let message = &json["choices"][0]["message"];
    assert_eq!(message["content"], Value::Null);
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "call_mock_0_0");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "start_effort");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"name":"auth-bug"}"#);
    assert_eq!(calls[1]["id"], "call_mock_0_1");
    assert_eq!(calls[1]["function"]["arguments"], "{\"id\": ");
    assert_eq!(json["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn streamed_text_arrives_word_by_word_and_ends_with_done() {
    let server = MockServer::start(MockConfig::default());
    let text = "The quick brown fox jumps over the lazy dog.";
    server.enqueue(ScriptedReply::text(text));
    let response = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body("hi", true),
    );

    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert!(response.complete, "the chunked body must end properly");
    let events = response.events();
    assert!(
        events.iter().all(|e| e.event.is_none()),
        "OpenAI sends no event: lines"
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let first = events[0].json();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert!(
        first.get("usage").is_none(),
        "no usage field unless asked for"
    );
    let pieces = collect_strings(&events[1..], "/choices/0/delta/content");
    assert_eq!(pieces.len(), 9, "one chunk per word: {pieces:?}");
    assert_eq!(pieces.concat(), text);
    let finish = &events[events.len() - 2].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["choices"][0]["delta"], json!({}));
}

#[test]
fn streamed_tool_call_arguments_are_split_into_small_fragments() {
    let server = MockServer::start(MockConfig::default());
    let first_args = json!({"name": "auth-bug", "goal": "find why logins fail after rotation"});
    let second_args = json!({"query": "JWT secret"});
    server.enqueue(ScriptedReply::tool_calls(vec![
        ScriptedToolCall::new("start_effort", first_args.clone()),
        ScriptedToolCall::new("search_efforts", second_args.clone()),
    ]));
    let response = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body("go", true),
    );
    let events = response.events();
    assert_eq!(events.last().unwrap().data, "[DONE]");

    // Accumulate the deltas the way a client must: by tool-call index.
    let mut ids = [None, None];
    let mut names = [None, None];
    let mut fragments: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for event in events.iter().filter(|e| e.data != "[DONE]") {
        let chunk = event.json();
        let Some(calls) = chunk.pointer("/choices/0/delta/tool_calls") else {
            continue;
        };
        let calls = calls.as_array().unwrap();
        assert_eq!(calls.len(), 1, "one tool-call delta per chunk");
        let call = &calls[0];
        let index = call["index"].as_u64().unwrap() as usize;
        if let Some(id) = call.get("id") {
            assert!(ids[index].is_none(), "the id is sent once");
            ids[index] = Some(id.as_str().unwrap().to_string());
            names[index] = Some(call["function"]["name"].as_str().unwrap().to_string());
            assert_eq!(call["function"]["arguments"], "");
        } else {
            fragments[index].push(call["function"]["arguments"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(
        ids,
        [Some("call_mock_0_0".into()), Some("call_mock_0_1".into())]
    );
    assert_eq!(
        names,
        [Some("start_effort".into()), Some("search_efforts".into())]
    );
    for (frags, expected) in fragments.iter().zip([&first_args, &second_args]) {
        let wire = expected.to_string();
        assert_eq!(frags.len(), wire.len().div_ceil(ARGUMENT_FRAGMENT_BYTES));
        assert!(frags.iter().all(|f| f.len() <= ARGUMENT_FRAGMENT_BYTES));
        assert!(
            frags
                .iter()
                .all(|f| serde_json::from_str::<Value>(f).is_err()),
            "no single fragment is valid JSON on its own: {frags:?}"
        );
        let joined = frags.concat();
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), *expected);
    }
    let finish = events[events.len() - 2].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn include_usage_adds_a_usage_chunk_before_done() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("counted"));
    let mut body = chat_body("count me", true);
    body["stream_options"] = json!({"include_usage": true});
    let events = post_json(server.addr(), "/v1/chat/completions", &body).events();
    let n = events.len();
    assert_eq!(events[n - 1].data, "[DONE]");
    let usage_chunk = events[n - 2].json();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"]["prompt_tokens"],
        estimate_prompt_tokens(&body)
    );
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 2);
    for event in &events[..n - 2] {
        assert_eq!(
            event.json()["usage"],
            Value::Null,
            "earlier chunks carry usage: null"
        );
    }
}

#[test]
fn any_prefix_ending_in_chat_completions_is_served() {
    let server = MockServer::start(MockConfig::default());
    for path in [
        "/chat/completions",
        "/api/openai/v1/chat/completions",
        "/openrouter/api/v1/chat/completions?debug=1",
    ] {
        server.enqueue(ScriptedReply::text(path));
        let response = post_json(server.addr(), path, &chat_body("hi", false));
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.json()["choices"][0]["message"]["content"], path);
    }
    let log = server.requests();
    assert_eq!(log[2].path, "/openrouter/api/v1/chat/completions");
    assert_eq!(log[2].query.as_deref(), Some("debug=1"));
}

#[test]
fn an_empty_queue_gives_a_deterministic_default_reply() {
    let server = MockServer::start(MockConfig::default());
    let long = "Please help me   work on the flaky login test that fails every third run on CI";
    let json = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body(long, false),
    )
    .json();
    assert_eq!(
        json["choices"][0]["message"]["content"],
        "Mock reply to: \"Please help me work on the flaky login test that fails every…\""
    );
    let again = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body(long, false),
    )
    .json();
    assert_eq!(
        again["choices"][0]["message"]["content"],
        json["choices"][0]["message"]["content"]
    );
    assert_eq!(
        server.requests()[0].reply_source,
        Some(ReplySource::Default)
    );
}

#[test]
fn an_empty_scripted_reply_is_an_empty_message() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::default());
    let json = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body("x", false),
    )
    .json();
    assert_eq!(json["choices"][0]["message"]["content"], "");
    assert_eq!(json["usage"]["completion_tokens"], 1);
}

#[test]
fn finish_reason_can_be_overridden() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply {
        finish_reason: Some("length".into()),
        ..ScriptedReply::text("cut off mid")
    });
    let json = post_json(
        server.addr(),
        "/v1/chat/completions",
        &chat_body("x", false),
    )
    .json();
    assert_eq!(json["choices"][0]["finish_reason"], "length");
}
