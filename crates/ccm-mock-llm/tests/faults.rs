//! Every fault kind, observed from a real TCP client.

mod common;

use std::time::Duration;

use ccm_mock_llm::{Fault, MockConfig, MockServer, ScriptedReply};
use common::{parse, post_json, send_raw};
use serde_json::{json, Value};

fn openai_body(stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hello there friend"}],
           "tools": [{"type": "function", "function": {"name": "t"}}]})
}

fn anthropic_body(stream: bool) -> Value {
    json!({"model": "m", "max_tokens": 10, "stream": stream,
           "messages": [{"role": "user", "content": "hello there friend"}],
           "tools": [{"name": "t", "input_schema": {}}]})
}

fn raw_post(server: &MockServer, path: &str, body: &Value) -> common::Raw {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    send_raw(server.addr(), request.as_bytes(), false)
}

#[test]
fn error_status_uses_the_openai_shape_and_retry_after() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::fault(Fault::status(429).retry_after_secs(2)));
    // The error replaces a stream too: errors come before any SSE.
    let response = post_json(server.addr(), "/v1/chat/completions", &openai_body(true));
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("2"));
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert!(response
        .header("access-control-expose-headers")
        .unwrap()
        .contains("retry-after"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    let json = response.json();
    assert_eq!(json["error"]["type"], "requests");
    assert_eq!(json["error"]["code"], "rate_limit_exceeded");
    assert!(json["error"]["message"]
        .as_str()
        .unwrap()
        .contains("429 Too Many Requests"));
    assert_eq!(server.requests()[0].status, Some(429));
}

#[test]
fn error_status_uses_the_anthropic_shape() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::fault(Fault::status(529)));
    server.enqueue(ScriptedReply::fault(Fault {
        error_type: Some("custom_error".into()),
        ..Fault::status(401).message("bad key")
    }));
    let response = post_json(server.addr(), "/v1/messages", &anthropic_body(false));
    assert_eq!(response.status, 529);
    assert_eq!(response.header("retry-after"), None);
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "mock fault: HTTP 529 Overloaded"}})
    );
    let response = post_json(server.addr(), "/v1/messages", &anthropic_body(false));
    assert_eq!(response.status, 401);
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "custom_error", "message": "bad key"}})
    );
}

#[test]
fn delay_holds_back_the_response_headers() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("late").with_fault(Fault::delay_ms(400)));
    server.enqueue(ScriptedReply::text("prompt"));
    let late = post_json(server.addr(), "/v1/chat/completions", &openai_body(false));
    assert_eq!(late.status, 200);
    assert!(
        late.first_byte_after >= Duration::from_millis(400),
        "first byte after {:?}",
        late.first_byte_after
    );
    let prompt = post_json(server.addr(), "/v1/chat/completions", &openai_body(false));
    assert!(
        prompt.first_byte_after < Duration::from_millis(300),
        "the delay applies only to its own reply ({:?})",
        prompt.first_byte_after
    );
}

#[test]
fn chunk_delay_spaces_out_stream_events() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("one two three").with_fault(Fault::chunk_delay_ms(60)));
    let response = post_json(server.addr(), "/v1/messages", &anthropic_body(true));
    let events = response.events();
    let gaps = events.len() as u32 - 1;
    assert!(
        response.elapsed >= Duration::from_millis(60) * gaps,
        "{} events in {:?}",
        events.len(),
        response.elapsed
    );
    assert!(
        response.first_byte_after < Duration::from_millis(60) * gaps,
        "headers and the first event come at once ({:?})",
        response.first_byte_after
    );
    assert_eq!(
        events.last().unwrap().event.as_deref(),
        Some("message_stop")
    );
}

#[test]
fn truncated_streams_stop_after_n_events_without_terminator() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("a b c d e f").with_fault(Fault::truncate_after(3)));
    server.enqueue(ScriptedReply::text("a b c d e f").with_fault(Fault::truncate_after(4)));

    let response = post_json(server.addr(), "/v1/chat/completions", &openai_body(true));
    assert_eq!(response.status, 200);
    assert!(response.complete, "the HTTP body itself ends cleanly");
    let events = response.events();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    events.iter().for_each(|e| drop(e.json()));

    let response = post_json(server.addr(), "/v1/messages", &anthropic_body(true));
    assert!(response.complete);
    let names = response.event_names();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta"
        ]
    );
}

#[test]
fn abrupt_truncation_leaves_the_http_body_incomplete() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("a b c d e f").with_fault(Fault {
        truncate_abruptly: true,
        ..Fault::truncate_after(2)
    }));
    let response = post_json(server.addr(), "/v1/chat/completions", &openai_body(true));
    assert_eq!(response.status, 200);
    assert!(!response.complete, "no terminating zero-size chunk");
    assert_eq!(
        response.header("connection"),
        None,
        "no `Connection: close`, so clients cannot take the close for the end of the body"
    );
    assert_eq!(response.events().len(), 2);
}

#[test]
fn malformed_json_breaks_non_streaming_bodies() {
    let server = MockServer::start(MockConfig::default());
    for path in ["/v1/chat/completions", "/v1/messages"] {
        server.enqueue(ScriptedReply::text("broken").with_fault(Fault::malformed_json()));
        let body = if path.ends_with("messages") {
            anthropic_body(false)
        } else {
            openai_body(false)
        };
        let response = post_json(server.addr(), path, &body);
        assert_eq!(response.status, 200);
        assert!(response.complete, "Content-Length matches the broken body");
        assert!(!response.body.is_empty());
        assert!(
            serde_json::from_slice::<Value>(&response.body).is_err(),
            "{path}: {}",
            response.text()
        );
    }
}

#[test]
fn malformed_chunk_breaks_exactly_one_stream_event() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("alpha beta gamma").with_fault(Fault::malformed_json()));
    server.enqueue(ScriptedReply::text("alpha beta gamma").with_fault(Fault {
        malformed_chunk: Some(0),
        ..Fault::default()
    }));

    let events = post_json(server.addr(), "/v1/messages", &anthropic_body(true)).events();
    let broken: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| serde_json::from_str::<Value>(&e.data).is_err())
        .map(|(i, _)| i)
        .collect();
    // message_start, ping, content_block_start, then the first text delta.
    assert_eq!(broken, [3]);
    assert_eq!(events[3].event.as_deref(), Some("content_block_delta"));
    assert_eq!(
        events.last().unwrap().event.as_deref(),
        Some("message_stop")
    );

    let events = post_json(server.addr(), "/v1/chat/completions", &openai_body(true)).events();
    let broken: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(broken, [0]);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[test]
fn close_without_response_sends_nothing_and_the_server_carries_on() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::fault(Fault::close_without_response()));
    server.enqueue(ScriptedReply::text("after"));
    let raw = raw_post(&server, "/v1/chat/completions", &openai_body(false));
    assert!(
        raw.bytes.is_empty(),
        "got {:?}",
        String::from_utf8_lossy(&raw.bytes)
    );
    let log = server.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].status, None);

    let response = parse(&raw_post(
        &server,
        "/v1/chat/completions",
        &openai_body(false),
    ));
    assert_eq!(response.json()["choices"][0]["message"]["content"], "after");
}

#[test]
fn delay_then_close_without_response() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::fault(Fault {
        delay_ms: Some(250),
        close_without_response: true,
        ..Fault::default()
    }));
    let raw = raw_post(&server, "/v1/messages", &anthropic_body(true));
    assert!(raw.bytes.is_empty());
    assert!(
        raw.elapsed >= Duration::from_millis(250),
        "{:?}",
        raw.elapsed
    );
}
