//! The `fetch` transport shared by `Session.runTurn` and Rust hosts such as the browser app:
//! it sends one request the turn engine built and feeds back what arrives.
//!
//! Only bytes move here. The request comes from `LlmRequest::to_http`, streamed bodies go
//! through ccm-provider's `ProviderStream` exactly as they arrive, and HTTP errors become its
//! typed `ProviderError`, which decides about retries. Cancellation is the host's:
//! the `AbortSignal` is given to `fetch`, which aborts the request and the body read. A body
//! that sends nothing for the idle timeout is given up on here, since `fetch` has no timeout
//! of its own and would wait for ever.

use crate::error::js_message;
use ccm_engine::LlmRequest;
use ccm_provider::{ProviderConfig, ProviderError, ProviderResponse, ProviderStream, StreamDelta};
use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, ReadableStreamDefaultReader, Request, RequestInit, Response};

#[wasm_bindgen]
extern "C" {
    // The global functions rather than `window`'s, so that the same code runs in pages,
    // workers and Node.
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_with_request(request: &Request) -> Promise;

    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Sends `request` to the provider of `config` with `fetch`. Streamed deltas are passed to
/// `on_delta` as they arrive, but only for requests whose text is the reply the person waits
/// for (`RequestPurpose::is_answer`); a summary request's text is not shown as a reply.
///
/// A streamed body that sends nothing for `idle_timeout_ms` milliseconds
/// ([`ccm_provider::DEFAULT_IDLE_TIMEOUT_MS`] is the usual value; 0 waits for ever) is given
/// up on.
///
/// # Errors
///
/// The provider's typed error: HTTP status errors (with the retry headers the policy reads),
/// network failures, a cut-off stream, a body that is not an event stream,
/// [`ProviderError::StreamStalled`] when the stream went silent in the middle of the answer
/// ([`ProviderError::Timeout`] when it went silent before sending anything), or
/// [`ProviderError::Cancelled`] when `signal` aborted.
pub async fn send(
    config: &ProviderConfig,
    request: &LlmRequest,
    signal: Option<&AbortSignal>,
    idle_timeout_ms: u64,
    on_delta: &dyn Fn(StreamDelta),
) -> Result<ProviderResponse, ProviderError> {
    let http = request.to_http(config)?;
    let context = request.error_context(config);
    let network = |error: JsValue| {
        if signal.is_some_and(AbortSignal::aborted) {
            ProviderError::Cancelled
        } else {
            ProviderError::Network(js_message(&error))
        }
    };
    let headers = Headers::new().map_err(network)?;
    for (name, value) in &http.headers {
        headers.append(name, value).map_err(|e| {
            ProviderError::InvalidConfig(format!("header {name}: {}", js_message(&e)))
        })?;
    }
    let init = RequestInit::new();
    init.set_method(http.method.as_str());
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(&http.body));
    if let Some(signal) = signal {
        init.set_signal(Some(signal));
    }
    let fetch_request = Request::new_with_str_and_init(&http.url, &init)
        .map_err(|e| ProviderError::InvalidConfig(js_message(&e)))?;
    let response: Response = JsFuture::from(fetch_with_request(&fetch_request))
        .await
        .map_err(network)?
        .unchecked_into();
    if !response.ok() {
        let status = response.status();
        let mut response_headers = Vec::new();
        for name in ["retry-after", "retry-after-ms", "x-should-retry"] {
            if let Ok(Some(value)) = response.headers().get(name) {
                response_headers.push((name.to_string(), value));
            }
        }
        let body = match response.text() {
            Ok(promise) => JsFuture::from(promise)
                .await
                .map_err(network)?
                .as_string()
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        return Err(ProviderError::from_http(
            status,
            &response_headers,
            &body,
            &context,
        ));
    }
    let kind = config.kind;
    if !request.options.stream {
        let body = JsFuture::from(response.text().map_err(network)?)
            .await
            .map_err(network)?;
        return ccm_provider::parse_response(kind, &body.as_string().unwrap_or_default());
    }
    let Some(body) = response.body() else {
        return ProviderStream::new(kind).finish();
    };
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut stream = ProviderStream::new(kind);
    // `Content-Type` is readable cross-origin without being exposed, so an HTML page or any
    // other answer that is not an event stream is reported as what it is.
    let content_type = response.headers().get("content-type").ok().flatten();
    stream.set_content_type(content_type.as_deref());
    let show = request.purpose.is_answer();
    loop {
        let Some(chunk) = read_within(&reader, idle_timeout_ms)
            .await
            .map_err(network)?
        else {
            // Stop the body's download; whatever the cancellation reports changes nothing.
            let cancelled = reader.cancel();
            wasm_bindgen_futures::spawn_local(async move {
                let _ = JsFuture::from(cancelled).await;
            });
            return if stream.bytes_received() > 0 {
                stream.finish_stalled(idle_timeout_ms)
            } else {
                Err(ProviderError::Timeout {
                    after_ms: idle_timeout_ms,
                })
            };
        };
        let done = Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        let bytes = Reflect::get(&chunk, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into::<Uint8Array>().ok())
            .map(|a| a.to_vec())
            .unwrap_or_default();
        for delta in stream.push(&bytes)? {
            if show {
                on_delta(delta);
            }
        }
    }
    stream.finish()
}

/// The next read of `reader`, or `None` when nothing arrived within `timeout_ms` milliseconds
/// (0: no limit).
async fn read_within(
    reader: &ReadableStreamDefaultReader,
    timeout_ms: u64,
) -> Result<Option<JsValue>, JsValue> {
    let read = reader.read();
    if timeout_ms == 0 {
        return JsFuture::from(read).await.map(Some);
    }
    let mut timer = JsValue::UNDEFINED;
    // The timer resolves with `undefined`, while a read always resolves with an object.
    let expired = Promise::new(&mut |resolve, _| {
        timer = set_timeout(&resolve, timeout_ms as f64);
    });
    let first = JsFuture::from(Promise::race(&Array::of2(&read, &expired))).await;
    clear_timeout(&timer);
    let value = first?;
    Ok((!value.is_undefined()).then_some(value))
}

/// Waits `ms` milliseconds, or less when `signal` aborts (checked every 50 ms, so a Stop
/// during a retry wait is honoured quickly).
pub async fn sleep(ms: u64, signal: Option<&AbortSignal>) {
    let mut left = ms as f64;
    while left > 0.0 && !signal.is_some_and(AbortSignal::aborted) {
        let step = left.min(50.0);
        let promise = Promise::new(&mut |resolve, _| {
            set_timeout(&resolve, step);
        });
        let _ = JsFuture::from(promise).await;
        left -= step;
    }
}
