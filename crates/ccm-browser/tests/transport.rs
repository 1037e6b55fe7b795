//! The fetch transport against answers a real server can give, in headless Chromium: a stream
//! that goes silent, one that trickles for ever, a body that never starts, headers that never
//! come, an empty stream, and an HTML page instead of a stream. `fetch`
//! is replaced by a function that answers with a scripted `Response` whose body is a real
//! `ReadableStream`, so the transport reads it exactly as it reads the network.

#![cfg(target_arch = "wasm32")]

use ccm_browser::transport::{send_with_limits, Limits};
use ccm_engine::LlmRequest;
use ccm_provider::{ProviderConfig, ProviderError};
use js_sys::{Function, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

/// The first request of a streaming turn.
fn request() -> LlmRequest {
    common::first_request("Hello there.", true)
}

fn config() -> ProviderConfig {
    common::provider()
}

/// How the first request, sent with `limits`, fails.
async fn failure_with(limits: Limits) -> ProviderError {
    send_with_limits(&config(), &request(), None, limits, &|_| {})
        .await
        .unwrap_err()
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
    let limits = common::idle_limits(200);
    let error = failure_with(limits).await;
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
    let limits = common::idle_limits(200);
    let error = failure_with(limits).await;
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
    let limits = common::idle_limits(200);
    let response = send_with_limits(&config(), &request(), None, limits, &|_| {})
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
    let limits = common::idle_limits(200);
    let error = failure_with(limits).await;
    assert_eq!(
        error,
        ProviderError::NotAStream {
            content_type: Some("text/html".into()),
            html: true,
            excerpt: "Sign in Please sign in.".into(),
        }
    );
}

/// Makes `fetch` answer `200` with a stream that sends `first` and then one space every 20 ms
/// for as long as it is read: never silent for long, never finished.
fn answer_with_a_trickle(first: &str) {
    let first = serde_json::to_string(first).unwrap();
    let fetch = Function::new_with_args(
        "request",
        &format!(
            "const bytes = new TextEncoder().encode({first});
             const body = new ReadableStream({{
               start(controller) {{ controller.enqueue(bytes); }},
               pull(controller) {{
                 return new Promise((resolve) => setTimeout(() => {{
                   controller.enqueue(new Uint8Array([32])); resolve();
                 }}, 20));
               }},
             }});
             return Promise.resolve(new Response(body, {{
               status: 200, headers: {{ 'content-type': 'text/event-stream' }} }}));"
        ),
    );
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
}

/// The bug this pins: the idle timeout never fires on a stream that keeps sending a little,
/// so the turn waited for as long as the trickle lasted.
#[wasm_bindgen_test]
async fn a_stream_that_trickles_ends_at_the_total_deadline() {
    answer_with_a_trickle(FIRST_EVENT);
    let limits = Limits {
        idle_ms: 300,
        total_ms: 1_000,
        ..Limits::default()
    };
    let started = js_sys::Date::now();
    let error = failure_with(limits).await;
    let waited = js_sys::Date::now() - started;
    assert_eq!(
        error,
        ProviderError::StreamDeadline {
            after_ms: 1_000,
            events: 1,
            text_chars: 5,
            tool_calls: 0
        }
    );
    assert!(waited < 3_000.0, "waited {waited} ms");
    assert!(!error.is_transient());
    assert!(
        error
            .to_string()
            .starts_with("The provider's answer was still arriving after 1 s"),
        "{error}"
    );
}

/// `fetch` has no timeout: a server that takes the request and never answers kept the turn
/// waiting for ever.
#[wasm_bindgen_test]
async fn headers_that_never_come_are_a_timeout() {
    let fetch = Function::new_with_args("request", "return new Promise(() => {});");
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
    let limits = Limits {
        headers_ms: 200,
        ..Limits::default()
    };
    let error = failure_with(limits).await;
    assert_eq!(error, ProviderError::Timeout { after_ms: 200 });
    assert_eq!(
        error.to_string(),
        "The provider did not answer within 200 ms."
    );
    // The total deadline bounds the wait for the headers too.
    let limits = Limits {
        total_ms: 150,
        ..Limits::default()
    };
    let error = failure_with(limits).await;
    assert_eq!(error, ProviderError::Timeout { after_ms: 150 });
}

/// A body of nothing, or of only a byte order mark, holds no answer: an empty, cut-off
/// stream with a clear error, whatever type it claims.
#[wasm_bindgen_test]
async fn an_empty_or_bom_only_stream_is_a_cut_off_stream() {
    for content_type in ["text/event-stream", "text/plain"] {
        for body in [&b""[..], b"\xEF\xBB\xBF", b"\xEF\xBB\xBF\n\n"] {
            answer_with(&[body], content_type, true);
            let limits = common::idle_limits(200);
            let error = failure_with(limits).await;
            assert_eq!(
                error,
                ProviderError::StreamTruncated {
                    events: 0,
                    text_chars: 0,
                    tool_calls: 0
                },
                "{content_type} {body:?}"
            );
            assert_eq!(
                error.to_string(),
                "The response stream ended before any event arrived: the provider sent an empty stream and no answer."
            );
        }
    }
}
