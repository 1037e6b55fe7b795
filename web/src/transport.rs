//! The `fetch` transport: sends one request the engine built and feeds back what arrives.
//!
//! Only bytes move here. The request comes from `LlmRequest::to_http`, streamed bodies go
//! through the core's `ProviderStream` exactly as they arrive, and HTTP errors become the
//! core's typed `ProviderError`, which decides about retries. Cancellation is the browser's:
//! the `AbortSignal` is given to `fetch`, which aborts the request and the body read.

use ccm_core::engine::LlmRequest;
use ccm_core::provider::{
    self, ProviderConfig, ProviderError, ProviderResponse, ProviderStream, StreamDelta,
};
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, ReadableStreamDefaultReader, Request, RequestInit, Response};

/// The message of a JavaScript error value, for people.
pub fn js_error_text(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        return text;
    }
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "unknown error".to_string())
}

/// Sends `request` to the provider of `config`. Streamed answer text is passed to `on_delta`
/// as it arrives (only for requests whose text is the reply).
///
/// # Errors
/// The provider's typed error: HTTP status errors, network failures, a cut-off stream, or
/// [`ProviderError::Cancelled`] when `signal` aborted.
pub async fn send(
    config: &ProviderConfig,
    request: &LlmRequest,
    signal: &AbortSignal,
    on_delta: &dyn Fn(StreamDelta),
) -> Result<ProviderResponse, ProviderError> {
    let http = request.to_http(config)?;
    let context = request.error_context(config);
    let network = |error: JsValue| {
        if signal.aborted() {
            ProviderError::Cancelled
        } else {
            ProviderError::Network(js_error_text(&error))
        }
    };
    let headers = Headers::new().map_err(network)?;
    for (name, value) in &http.headers {
        headers.append(name, value).map_err(|e| {
            ProviderError::InvalidConfig(format!("header {name}: {}", js_error_text(&e)))
        })?;
    }
    let init = RequestInit::new();
    init.set_method(http.method.as_str());
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(&http.body));
    init.set_signal(Some(signal));
    let fetch_request = Request::new_with_str_and_init(&http.url, &init)
        .map_err(|e| ProviderError::InvalidConfig(js_error_text(&e)))?;
    let window = web_sys::window().ok_or_else(|| ProviderError::Network("no window".into()))?;
    let response: Response = JsFuture::from(window.fetch_with_request(&fetch_request))
        .await
        .map_err(network)?
        .unchecked_into();
    if !response.ok() {
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
            response.status(),
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
        return provider::parse_response(kind, &body.as_string().unwrap_or_default());
    }
    let Some(body) = response.body() else {
        return ProviderStream::new(kind).finish();
    };
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut stream = ProviderStream::new(kind);
    let show = request.purpose.is_answer();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(network)?;
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

/// Waits `ms` milliseconds, or less when `signal` aborts (checked every 50 ms).
pub async fn sleep(ms: u64, signal: Option<&AbortSignal>) {
    let mut left = ms as f64;
    while left > 0.0 && !signal.is_some_and(AbortSignal::aborted) {
        let step = left.min(50.0);
        timeout(step).await;
        left -= step;
    }
}

/// Resolves after `ms` milliseconds (a macrotask, so the page can paint in between).
pub async fn timeout(ms: f64) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ =
                window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32);
        }
    });
    let _ = JsFuture::from(promise).await;
}
