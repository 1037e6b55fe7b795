//! CORS, the control endpoints, the request log, reply matching and robustness against bad
//! requests, over real TCP.

mod common;

use std::net::TcpStream;
use std::time::Duration;

use ccm_mock_llm::{MockConfig, MockServer, ReplySource, RequestKind, ScriptedReply};
use common::{get, parse, post_json, request, send_raw};
use serde_json::{json, Value};

fn chat(user: &str) -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": user}],
           "tools": [{"type": "function", "function": {"name": "start_effort"}}]})
}

fn summary_request(log: &str) -> Value {
    json!({"model": "m", "messages": [
        {"role": "system", "content": "Write a summary of this effort. Keep decisions and identifiers."},
        {"role": "user", "content": log}
    ]})
}

fn content(response: &common::Response) -> String {
    response.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn preflight_allows_provider_headers_from_any_origin() {
    let server = MockServer::start(MockConfig::default());
    let response = request(
        server.addr(),
        "OPTIONS",
        "/v1/messages",
        &[
            ("Origin", "http://127.0.0.1:8080"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "anthropic-dangerous-direct-browser-access,anthropic-version,content-type,x-api-key,x-custom-thing",
            ),
        ],
        None,
    );
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());
    assert_eq!(response.header("content-length"), None);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    let methods = response.header("access-control-allow-methods").unwrap();
    for method in ["GET", "POST", "OPTIONS"] {
        assert!(methods.contains(method), "{methods}");
    }
    let allowed: Vec<&str> = response
        .header("access-control-allow-headers")
        .unwrap()
        .split(", ")
        .collect();
    for name in [
        "authorization",
        "content-type",
        "x-api-key",
        "anthropic-version",
        "anthropic-dangerous-direct-browser-access",
        "x-custom-thing",
    ] {
        assert!(allowed.contains(&name), "{name} missing from {allowed:?}");
    }
    let log = server.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].kind, RequestKind::Preflight);
    assert_eq!(log[0].status, Some(204));
}

#[test]
fn every_kind_of_response_carries_cors() {
    let server = MockServer::start(MockConfig::default());
    let responses = [
        post_json(server.addr(), "/v1/chat/completions", &chat("hi")),
        post_json(server.addr(), "/v1/embeddings", &json!({"input": "x"})),
        get(server.addr(), "/v1/models"),
        get(server.addr(), "/nowhere"),
        get(server.addr(), "/v1/chat/completions"),
        post_json(
            server.addr(),
            "/v1/chat/completions",
            &json!({"no": "messages"}),
        ),
        get(server.addr(), "/__mock/requests"),
        parse(&send_raw(server.addr(), b"NONSENSE\r\n\r\n", true)),
    ];
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 200, 404, 405, 400, 200, 400]);
    for response in &responses {
        assert_eq!(response.header("access-control-allow-origin"), Some("*"));
        assert_eq!(response.header("connection"), Some("close"));
    }
}

#[test]
fn the_request_log_shows_what_the_client_sent() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("first").labelled("one"));
    let body = chat("remember the JWT secret");
    let response = request(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer sk-test"),
        ],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(response.status, 200);
    post_json(server.addr(), "/v1/chat/completions", &chat("second turn"));

    let over_http = get(server.addr(), "/__mock/requests").json();
    let entries = over_http.as_array().unwrap();
    assert_eq!(entries.len(), 2, "control requests are not logged");
    let first = &entries[0];
    assert_eq!(first["seq"], 0);
    assert_eq!(first["method"], "POST");
    assert_eq!(first["path"], "/v1/chat/completions");
    assert_eq!(first["kind"], "openai_chat");
    assert_eq!(first["headers"]["authorization"], "Bearer sk-test");
    assert_eq!(first["body"], body);
    assert_eq!(
        first["body"]["tools"][0]["function"]["name"],
        "start_effort"
    );
    assert_eq!(first["last_user_text"], "remember the JWT secret");
    assert_eq!(first["reply_source"], "script");
    assert_eq!(first["reply"]["label"], "one");
    assert_eq!(first["status"], 200);
    assert_eq!(entries[1]["reply_source"], "default");
    assert!(entries[1]["at_ms"].as_u64() >= first["at_ms"].as_u64());

    // The library API returns the same log.
    let log = server.requests();
    assert_eq!(serde_json::to_value(&log).unwrap(), over_http);
    assert_eq!(log[0].tool_names(), ["start_effort"]);
    assert_eq!(log[0].messages().len(), 1);
    assert_eq!(log[1].reply_source, Some(ReplySource::Default));
}

#[test]
fn control_endpoints_replace_append_list_and_reset_the_queue() {
    let server = MockServer::start(MockConfig::default());
    let addr = server.addr();
    server.enqueue(ScriptedReply::text("replaced away"));

    let response = post_json(
        addr,
        "/__mock/script",
        &json!({"replies": [{"text": "a"}, {"text": "b"}]}),
    );
    assert_eq!(response.json(), json!({"ok": true, "queued": 2}));
    let response = post_json(
        addr,
        "/__mock/enqueue",
        &json!({"text": "c", "label": "third"}),
    );
    assert_eq!(response.json()["queued"], 3);
    let queue = get(addr, "/__mock/queue").json();
    assert_eq!(
        queue,
        json!([{"text": "a"}, {"text": "b"}, {"text": "c", "label": "third"}])
    );

    let served: Vec<String> = (0..4)
        .map(|_| content(&post_json(addr, "/v1/chat/completions", &chat("x"))))
        .collect();
    assert_eq!(served[..3], ["a", "b", "c"]);
    assert!(served[3].starts_with("Mock reply to:"));

    let health = get(addr, "/__mock/health").json();
    assert_eq!(health["requests"], 4);
    post_json(addr, "/__mock/enqueue", &json!([{"text": "d"}]));
    let response = request(addr, "POST", "/__mock/reset", &[], None);
    assert_eq!(response.status, 200);
    assert!(server.requests().is_empty());
    assert!(server.queued().is_empty());
    // Sequence numbers keep counting after a reset, so ids stay unique.
    post_json(addr, "/v1/chat/completions", &chat("x"));
    assert_eq!(server.requests()[0].seq, 4);
}

#[test]
fn bad_scripts_are_refused_with_a_precise_message() {
    let server = MockServer::start(MockConfig::default());
    let response = post_json(
        server.addr(),
        "/__mock/script",
        &json!([{"text": "fine"}, {"tool_calls": [{"name": "x", "argumentz": {}}]}]),
    );
    assert_eq!(response.status, 400);
    let message = response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("reply #1") && message.contains("argumentz"),
        "{message}"
    );
    let response = request(
        server.addr(),
        "POST",
        "/__mock/enqueue",
        &[],
        Some(b"{oops"),
    );
    assert_eq!(response.status, 400);
    assert!(
        server.queued().is_empty(),
        "a refused script changes nothing"
    );
    assert_eq!(get(server.addr(), "/__mock/nothing").status, 404);
    assert_eq!(get(server.addr(), "/__mock/reset").status, 405);
}

#[test]
fn replies_match_by_last_user_text_and_summary_requests_have_their_own_channel() {
    let server = MockServer::start(MockConfig::default());
    let addr = server.addr();
    server.enqueue_all([
        ScriptedReply::text("about tests").when_last_user_contains("flaky"),
        ScriptedReply::text("for the chat"),
        ScriptedReply::text("Decided: rotate the secret.").for_summary_requests(),
    ]);

    // A summary request skips the chat replies and takes the summary reply.
    let response = post_json(
        addr,
        "/v1/chat/completions",
        &summary_request("user: rotate it"),
    );
    assert_eq!(content(&response), "Decided: rotate the secret.");
    // A request that does not contain "flaky" skips the conditional reply: the first reply
    // that matches wins, wherever it is in the queue.
    let response = post_json(addr, "/v1/chat/completions", &chat("anything"));
    assert_eq!(content(&response), "for the chat");
    let response = post_json(addr, "/v1/chat/completions", &chat("the flaky test again"));
    assert_eq!(content(&response), "about tests");
    // With no summary reply left, a summary request gets the default summary.
    server.enqueue(ScriptedReply::text("for the next chat request"));
    let response = post_json(addr, "/v1/chat/completions", &summary_request("user: more"));
    assert_eq!(content(&response), "Summary (mock): \"user: more\"");
    assert_eq!(
        server.queued().len(),
        1,
        "the chat reply still waits for its request"
    );

    let log = server.requests();
    let kinds: Vec<bool> = log.iter().map(|r| r.summary_request).collect();
    assert_eq!(kinds, [true, false, false, true]);
}

#[test]
fn bad_requests_get_clear_errors_and_never_stop_the_server() {
    let server = MockServer::start(MockConfig::default());
    let addr = server.addr();
    let cases: [(&[u8], u16, &str); 5] = [
        (b"BLAH\r\n\r\n", 400, "malformed request line"),
        (b"GET / HTTP/9\r\n\r\n", 505, "not supported"),
        (
            b"POST /v1/messages HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            400,
            "content-length",
        ),
        (
            b"POST /v1/messages HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"a\"",
            400,
            "closed before",
        ),
        (b"GET / HTTP/1.1\r\nBroken header\r\n\r\n", 400, "no colon"),
    ];
    for (raw, status, needle) in cases {
        let response = parse(&send_raw(addr, raw, true));
        assert_eq!(
            response.status,
            status,
            "{:?}",
            String::from_utf8_lossy(raw)
        );
        let message = response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            message.contains(needle),
            "{message:?} should mention {needle:?}"
        );
    }

    let response = request(
        addr,
        "POST",
        "/v1/messages",
        &[("Content-Type", "application/json")],
        Some(b"{not json"),
    );
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["type"], "error", "Anthropic-shaped error");
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    let response = post_json(addr, "/v1/chat/completions", &json!({"messages": "nope"}));
    assert_eq!(response.status, 400);
    assert!(response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("messages"));
    let response = request(addr, "GET", "/v1/chat/completions", &[], None);
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("POST, OPTIONS"));

    // A client that connects and leaves without a word gets nothing and harms nothing.
    drop(TcpStream::connect(addr).unwrap());
    // After all of that the server still answers.
    let response = post_json(addr, "/v1/chat/completions", &chat("still there?"));
    assert_eq!(response.status, 200);
}

#[test]
fn chunked_request_bodies_and_expect_continue_are_accepted() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue(ScriptedReply::text("chunked ok"));
    let body = chat("chunked").to_string();
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let mut raw_response = send_raw(server.addr(), raw.as_bytes(), false);
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    assert!(raw_response.bytes.starts_with(interim));
    raw_response.bytes.drain(..interim.len());
    let response = parse(&raw_response);
    assert_eq!(content(&response), "chunked ok");
    assert_eq!(
        server.requests()[0].last_user_text.as_deref(),
        Some("chunked")
    );
}

#[test]
fn concurrent_requests_each_take_a_different_reply() {
    let server = MockServer::start(MockConfig::default());
    let n = 12;
    server.enqueue_all((0..n).map(|i| ScriptedReply::text(format!("reply {i}"))));
    let addr = server.addr();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            std::thread::spawn(move || {
                content(&post_json(addr, "/v1/chat/completions", &chat("x")))
            })
        })
        .collect();
    let mut served: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    served.sort();
    let mut expected: Vec<String> = (0..n).map(|i| format!("reply {i}")).collect();
    expected.sort();
    assert_eq!(served, expected);
}

#[test]
fn shutdown_endpoint_stops_an_in_process_server() {
    let server = MockServer::start(MockConfig::default());
    let response = request(server.addr(), "POST", "/__mock/shutdown", &[], None);
    assert_eq!(response.json(), json!({"ok": true, "stopping": true}));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !server.is_stopped() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.is_stopped());
    assert!(
        TcpStream::connect_timeout(&server.addr(), Duration::from_millis(500)).is_err(),
        "the port is closed"
    );
}

#[test]
fn dropping_the_server_closes_the_port() {
    let server = MockServer::start(MockConfig::default());
    let addr = server.addr();
    assert_eq!(get(addr, "/__mock/health").status, 200);
    drop(server);
    assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err());
}

#[test]
fn an_idle_in_process_server_stops_by_itself() {
    let server = MockServer::start(MockConfig {
        idle_exit: Some(Duration::from_millis(300)),
        ..MockConfig::default()
    });
    assert_eq!(get(server.addr(), "/__mock/health").status, 200);
    assert!(!server.is_stopped());
    // Poll with a deadline rather than `wait`, so a broken idle timer fails instead of hanging.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !server.is_stopped() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        server.is_stopped(),
        "still running 5 s after a 300 ms idle limit"
    );
}

#[test]
fn the_model_list_can_name_several_models_until_a_reset() {
    let server = MockServer::start(MockConfig::default());
    let ids = |response: common::Response| -> Vec<String> {
        response.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|model| model["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(get(server.addr(), "/v1/models")), ["mock-model"]);
    let set = post_json(
        server.addr(),
        "/__mock/models",
        &json!(["llama3.2:latest", "qwen2.5:7b"]),
    );
    assert_eq!(set.status, 200);
    assert_eq!(
        ids(get(server.addr(), "/v1/models")),
        ["llama3.2:latest", "qwen2.5:7b"]
    );
    // Bad bodies are refused with what the endpoint takes, and change nothing.
    let wrong = post_json(server.addr(), "/__mock/models", &json!({"models": 1}));
    assert_eq!(wrong.status, 400);
    assert!(
        wrong.text().contains("JSON array of model names"),
        "{}",
        wrong.text()
    );
    let empty = post_json(server.addr(), "/__mock/models", &json!(["ok", " "]));
    assert_eq!(empty.status, 400);
    assert_eq!(ids(get(server.addr(), "/v1/models")).len(), 2);
    assert_eq!(
        post_json(server.addr(), "/__mock/reset", &json!({})).status,
        200
    );
    assert_eq!(ids(get(server.addr(), "/v1/models")), ["mock-model"]);
}
