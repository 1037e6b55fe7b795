//! The fetch transport stops reading an answer at the model's output limits, in headless
//! Chromium: `fetch` answers with a body that never ends (a `ReadableStream` that makes another
//! 64 KiB piece each time it is read), and the transport must give up with `OutputTooLarge`
//! after little more than the limit and cancel the body, streamed or not.

#![cfg(target_arch = "wasm32")]

use ccm_browser::transport::send_with_limits;
use ccm_engine::LlmRequest;
use ccm_provider::{OutputField, ProviderConfig, ProviderError};
use js_sys::{Function, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

fn request(stream: bool) -> LlmRequest {
    common::first_request("Write it all out.", stream)
}

fn config() -> ProviderConfig {
    common::provider()
}

/// Makes `fetch` answer with `head`, then `piece` for ever; counts the reads in
/// `globalThis.__ccmPulls` and sets `globalThis.__ccmCancelled` when the body is cancelled.
fn answer_endlessly(head: &str, piece: &str, content_type: &str) {
    let fetch = Function::new_with_args(
        "request",
        &format!(
            "globalThis.__ccmPulls = 0; globalThis.__ccmCancelled = false;
             const encoder = new TextEncoder();
             const head = encoder.encode({head}), piece = encoder.encode({piece}.repeat(65536));
             const body = new ReadableStream({{
               start(controller) {{ controller.enqueue(head); }},
               pull(controller) {{ globalThis.__ccmPulls++; controller.enqueue(piece); }},
               cancel() {{ globalThis.__ccmCancelled = true; }},
             }});
             return Promise.resolve(new Response(body, {{ status: 200, headers: {{ 'content-type': {content_type} }} }}));",
            head = serde_json::to_string(head).unwrap(),
            piece = serde_json::to_string(piece).unwrap(),
            content_type = serde_json::to_string(content_type).unwrap(),
        ),
    );
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
}

fn global_number(name: &str) -> f64 {
    Reflect::get(&js_sys::global(), &name.into())
        .unwrap()
        .as_f64()
        .unwrap()
}

async fn next_tick() {
    let tick = js_sys::Promise::new(&mut |resolve, _| {
        let set_timeout = Reflect::get(&js_sys::global(), &"setTimeout".into()).unwrap();
        let set_timeout: Function = set_timeout.into();
        set_timeout
            .call2(&JsValue::NULL, &resolve, &JsValue::from(20))
            .unwrap();
    });
    JsFuture::from(tick).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_endless_streamed_answer_is_given_up_on_just_past_the_limit_and_cancelled() {
    // Each read is one event carrying 64 Ki characters of answer.
    let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
    let fetch = Function::new_with_args(
        "request",
        &format!(
            "globalThis.__ccmPulls = 0; globalThis.__ccmCancelled = false;
             const piece = new TextEncoder().encode({event} + 'x'.repeat(65536) + '\"}}}}]}}\\n\\n');
             const body = new ReadableStream({{
               pull(controller) {{ globalThis.__ccmPulls++; controller.enqueue(piece); }},
               cancel() {{ globalThis.__ccmCancelled = true; }},
             }});
             return Promise.resolve(new Response(body, {{ status: 200, headers: {{ 'content-type': 'text/event-stream' }} }}));",
            event = serde_json::to_string(event).unwrap(),
        ),
    );
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
    let limits = common::idle_limits(0);
    let error = send_with_limits(&config(), &request(true), None, limits, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::OutputTooLarge {
            field: OutputField::Answer
        }
    );
    next_tick().await;
    let pulls = global_number("__ccmPulls");
    // 1,000,000 characters are 16 events; the stream may read a few ahead.
    assert!(pulls <= 20.0, "{pulls} pieces were read");
    assert_eq!(
        Reflect::get(&js_sys::global(), &"__ccmCancelled".into()).unwrap(),
        JsValue::TRUE,
        "the rest of the body is not downloaded"
    );
}

#[wasm_bindgen_test]
async fn an_endless_body_that_is_not_streamed_is_given_up_on_at_the_body_limit() {
    answer_endlessly(
        "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"",
        "x",
        "application/json",
    );
    let limits = common::idle_limits(0);
    let error = send_with_limits(&config(), &request(false), None, limits, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::OutputTooLarge {
            field: OutputField::Body
        }
    );
    assert!(error.to_string().contains("larger than 32 MiB"), "{error}");
    next_tick().await;
    let pulls = global_number("__ccmPulls");
    // 32 MiB are 512 pieces of 64 KiB.
    assert!(pulls <= 520.0, "{pulls} pieces were read");
    assert_eq!(
        Reflect::get(&js_sys::global(), &"__ccmCancelled".into()).unwrap(),
        JsValue::TRUE
    );
}
