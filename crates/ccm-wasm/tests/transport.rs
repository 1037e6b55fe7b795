//! The fetch transport against answers a real server can give, in headless Chromium: a stream
//! that goes silent, a body that never starts, and an HTML page instead of a stream. `fetch`
//! is replaced by a function that answers with a scripted `Response` whose body is a real
//! `ReadableStream`, so the transport reads it exactly as it reads the network.

#![cfg(target_arch = "wasm32")]

use ccm_core::{Config, Session};
use ccm_engine::{EngineSettings, LlmRequest, Step, TurnEngine};
use ccm_provider::{ProviderConfig, ProviderError, ProviderKind, RetryPolicy};
use ccm_wasm::transport::send;
use js_sys::{Function, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The first request of a streaming turn.
fn request() -> LlmRequest {
    let mut session = Session::new(Config::default()).unwrap();
    let settings = EngineSettings::new("mock-model")
        .with_stream(true)
        .with_retry(RetryPolicy::never());
    let mut engine = TurnEngine::begin(&mut session, "Hello there.", 0, settings).unwrap();
    match engine.next(&mut session).unwrap() {
        Step::Send(request) => request,
        _ => panic!("a turn starts with a request"),
    }
}

fn config() -> ProviderConfig {
    ProviderConfig::custom(
        ProviderKind::OpenAiCompatible,
        "http://127.0.0.1:9/v1",
        None,
    )
}

/// Makes `fetch` answer `200` with `parts` as the body's chunks (bytes, so that a chunk may
/// end inside a character), of type `content_type`; the body stays open (and silent) after
/// the last part unless `close`.
fn answer_with(parts: &[&[u8]], content_type: &str, close: bool) {
    let parts = serde_json::to_string(parts).unwrap();
    let content_type = serde_json::to_string(content_type).unwrap();
    let close = if close { "controller.close();" } else { "" };
    let fetch = Function::new_with_args(
        "request",
        &format!(
            "const body = new ReadableStream({{ start(controller) {{
               for (const part of {parts}) controller.enqueue(new Uint8Array(part));
               {close}
             }} }});
             return Promise.resolve(new Response(body, {{
               status: 200, headers: {{ 'content-type': {content_type} }} }}));"
        ),
    );
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
}

const FIRST_EVENT: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n";

#[wasm_bindgen_test]
async fn a_stream_that_goes_silent_midway_is_given_up_on() {
    answer_with(&[FIRST_EVENT.as_bytes()], "text/event-stream", false);
    let error = send(&config(), &request(), None, 200, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::StreamStalled {
            after_ms: 200,
            events: 1,
            text_chars: 5,
            tool_calls: 0
        }
    );
    assert!(!error.is_transient());
}

#[wasm_bindgen_test]
async fn a_body_that_never_starts_is_a_timeout_which_is_retried() {
    answer_with(&[], "text/event-stream", false);
    let error = send(&config(), &request(), None, 200, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(error, ProviderError::Timeout { after_ms: 200 });
    assert!(error.is_transient());
}

/// A stream that ends keeps its answer, a character cut between chunks included.
#[wasm_bindgen_test]
async fn a_complete_stream_is_not_cut_by_the_idle_timeout() {
    let end = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    // The emoji's bytes are cut between two network chunks on purpose.
    let crab = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" 🦀\"}}]}\n\n";
    let (head, tail) = crab.as_bytes().split_at(crab.find('🦀').unwrap() + 2);
    answer_with(
        &[FIRST_EVENT.as_bytes(), head, tail, end.as_bytes()],
        "text/event-stream",
        true,
    );
    let response = send(&config(), &request(), None, 200, &|_| {})
        .await
        .unwrap();
    assert_eq!(response.text, "Hello 🦀");
}

#[wasm_bindgen_test]
async fn an_html_page_is_reported_as_one() {
    answer_with(
        &[
            b"<!DOCTYPE html><html><head><title>Sign in</title></head>",
            b"<body>Please sign in.</body></html>",
        ],
        "text/html; charset=utf-8",
        true,
    );
    let error = send(&config(), &request(), None, 200, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::NotAStream {
            content_type: Some("text/html".into()),
            html: true,
            excerpt: "Sign in Please sign in.".into(),
        }
    );
}
