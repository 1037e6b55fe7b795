//! The `fetch` transport shared by `Session.runTurn` and Rust hosts such as the browser app:
//! it sends one request the turn engine built and feeds back what arrives.
//!
//! Only bytes move here. The request comes from `LlmRequest::to_http`, streamed bodies go
//! through ccm-provider's `ProviderStream` exactly as they arrive, and HTTP errors become its
//! typed `ProviderError`, which decides about retries. Cancellation is the host's:
//! the `AbortSignal` is given to `fetch`, which aborts the request and the body read. Headers
//! that do not come, a body that sends nothing for the idle timeout and a body still trickling
//! in at the total deadline are given up on here ([`Limits`]), since `fetch` has no timeout of
//! its own and would wait for ever.

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

/// How long [`send_with_limits`] waits, in milliseconds; 0 lifts a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// For the response headers ([`ccm_provider::DEFAULT_HEADERS_TIMEOUT_MS`] by default): a
    /// server that accepts the request and never answers ends with
    /// [`ProviderError::Timeout`], since `fetch` itself would wait for ever.
    pub headers_ms: u64,
    /// For the next bytes of a streamed body ([`ccm_provider::DEFAULT_IDLE_TIMEOUT_MS`]).
    pub idle_ms: u64,
    /// For the whole response, from the request to its last byte
    /// ([`ccm_provider::DEFAULT_RESPONSE_DEADLINE_MS`]): a stream that trickles, never silent
    /// for `idle_ms` and never finished, ends with [`ProviderError::StreamDeadline`].
    pub total_ms: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            headers_ms: ccm_provider::DEFAULT_HEADERS_TIMEOUT_MS,
            idle_ms: ccm_provider::DEFAULT_IDLE_TIMEOUT_MS,
            total_ms: ccm_provider::DEFAULT_RESPONSE_DEADLINE_MS,
        }
    }
}

/// The smaller of two limits, where 0 is no limit.
fn tighter(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, other) | (other, 0) => other,
        (a, b) => a.min(b),
    }
}

/// Sends `request` to the provider of `config` with `fetch`. Streamed deltas are passed to
/// `on_delta` as they arrive, but only for requests whose text is the reply the person waits
/// for (`RequestPurpose::is_answer`); a summary request's text is not shown as a reply.
///
/// The response headers must arrive within `limits.headers_ms`, a streamed body may not be
/// silent for `limits.idle_ms`, and the whole response must be in within `limits.total_ms`.
///
/// # Errors
///
/// The provider's typed error: HTTP status errors (with the retry headers the policy reads),
/// network failures, a cut-off or empty stream, a body that is not an event stream,
/// [`ProviderError::StreamStalled`] when the stream went silent in the middle of the answer
/// ([`ProviderError::Timeout`] when it went silent before sending anything, or the headers
/// never came), [`ProviderError::StreamDeadline`] when it was still trickling in at the total
/// deadline, or [`ProviderError::Cancelled`] when `signal` aborted.
pub async fn send_with_limits(
    config: &ProviderConfig,
    request: &LlmRequest,
    signal: Option<&AbortSignal>,
    limits: Limits,
    on_delta: &dyn Fn(StreamDelta),
) -> Result<ProviderResponse, ProviderError> {
    let started = js_sys::Date::now();
    let elapsed = move || (js_sys::Date::now() - started).max(0.0) as u64;
    let http = request.to_http(config)?;
    let context = request.error_context(config);
    let network = |error: JsValue| {
        if signal.is_some_and(AbortSignal::aborted) {
            ProviderError::Cancelled
        } else {
            ProviderError::Network(full_stop(js_message(&error)))
        }
    };
    let fetch_request = fetch_request_of(&http, signal, network)?;
    let headers_limit = tighter(limits.headers_ms, limits.total_ms);
    let answer = match within(fetch_with_request(&fetch_request), headers_limit).await {
        Ok(answer) => answer,
        Err(error) if signal.is_some_and(AbortSignal::aborted) => return Err(network(error)),
        Err(error) => return Err(unreached(&http.url, &error).await),
    };
    let Some(response) = answer else {
        return Err(ProviderError::Timeout {
            after_ms: headers_limit,
        });
    };
    let response: Response = response.unchecked_into();
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
    let Some(body) = response.body() else {
        return if request.options.stream {
            ProviderStream::new(kind).finish()
        } else {
            ccm_provider::parse_response(kind, "")
        };
    };
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    // Stops the body's download; whatever the cancellation reports changes nothing.
    let stop_reading = |reader: &ReadableStreamDefaultReader| {
        let cancelled = reader.cancel();
        wasm_bindgen_futures::spawn_local(async move {
            let _ = JsFuture::from(cancelled).await;
        });
    };
    // A Stop ends the wait for the next piece at once. Aborting the fetch's signal should also
    // fail a pending read, but Node's fetch leaves the read of a body it has finished receiving
    // pending until the idle timeout (measured: 60 s after a Stop at the last text piece).
    let aborted = signal.map(rejected_on_abort);
    let next_piece = || match &aborted {
        Some(aborted) => Promise::race(&Array::of2(&reader.read(), aborted)),
        None => reader.read(),
    };
    // A read that failed because of a Stop also stops the download.
    let failed_read = |error: JsValue| {
        if signal.is_some_and(AbortSignal::aborted) {
            stop_reading(&reader);
        }
        network(error)
    };
    if !request.options.stream {
        // Read piece by piece rather than with `text()`, so that a body larger than any answer
        // within the output limits is given up on at that size instead of being held whole.
        let mut bytes = Vec::new();
        loop {
            let chunk = JsFuture::from(next_piece()).await.map_err(failed_read)?;
            let Some(piece) = chunk_bytes(&chunk) else {
                break;
            };
            if bytes.len() + piece.len() > ccm_provider::MAX_RESPONSE_BODY_BYTES {
                stop_reading(&reader);
                return Err(ccm_provider::body_too_large());
            }
            bytes.extend_from_slice(&piece);
        }
        return ccm_provider::parse_response(kind, &String::from_utf8_lossy(&bytes));
    }
    let mut stream = ProviderStream::new(kind);
    // `Content-Type` is readable cross-origin without being exposed, so an HTML page or any
    // other answer that is not an event stream is reported as what it is.
    let content_type = response.headers().get("content-type").ok().flatten();
    stream.set_content_type(content_type.as_deref());
    let show = request.purpose.is_answer();
    loop {
        // The next read may wait for the idle timeout, or for what is left of the total
        // deadline if that is sooner (at least a millisecond, so 0 keeps meaning no limit).
        let left = match limits.total_ms {
            0 => 0,
            total => total.saturating_sub(elapsed()).max(1),
        };
        let chunk = within(next_piece(), tighter(limits.idle_ms, left))
            .await
            .map_err(failed_read)?;
        let Some(chunk) = chunk else {
            stop_reading(&reader);
            let past_deadline = limits.total_ms != 0 && elapsed() >= limits.total_ms;
            return match (stream.bytes_received() > 0, past_deadline) {
                (true, true) => stream.finish_past_deadline(limits.total_ms),
                (true, false) => stream.finish_stalled(limits.idle_ms),
                (false, true) => Err(ProviderError::Timeout {
                    after_ms: limits.total_ms,
                }),
                (false, false) => Err(ProviderError::Timeout {
                    after_ms: limits.idle_ms,
                }),
            };
        };
        let Some(bytes) = chunk_bytes(&chunk) else {
            break;
        };
        // An answer past an output limit (or any other error) ends the reading at once: the
        // rest of the body, however long, is not downloaded.
        let deltas = stream.push(&bytes).inspect_err(|_| stop_reading(&reader))?;
        for delta in deltas {
            if show {
                on_delta(delta);
            }
        }
    }
    stream.finish()
}

/// The bytes of one `read()` result, or `None` at the end of the body.
fn chunk_bytes(chunk: &JsValue) -> Option<Vec<u8>> {
    let done = Reflect::get(chunk, &"done".into())
        .ok()
        .and_then(|d| d.as_bool())
        .unwrap_or(true);
    if done {
        return None;
    }
    Some(
        Reflect::get(chunk, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into::<Uint8Array>().ok())
            .map(|a| a.to_vec())
            .unwrap_or_default(),
    )
}

/// What a page can tell about a `fetch` that was rejected before any response came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreached {
    /// Nothing answered at the address: no server is running there, the address is wrong,
    /// or the network is down. Also what is reported outside a page, where there is no CORS.
    NoAnswer,
    /// A server answered, but the browser kept its answer from this page, because the server
    /// does not allow requests from the page's origin (CORS).
    Blocked,
}

/// The page's origin, for sentences about CORS; `None` outside a page (a worker or Node).
pub fn page_origin() -> Option<String> {
    let location = Reflect::get(&js_sys::global(), &"location".into()).ok()?;
    let origin = Reflect::get(&location, &"origin".into()).ok()?;
    origin.as_string().filter(|origin| origin != "null")
}

/// Tells a refused connection from a CORS refusal after a `fetch` of `url` was rejected (a
/// page gets the same `TypeError` for both): a `no-cors` request is not subject to CORS, so
/// it gets an (opaque) answer exactly when a server is listening. Outside a page, and when
/// the check itself gets no answer within two seconds, nothing answered.
pub async fn why_unreached(url: &str) -> Unreached {
    if page_origin().is_none() {
        return Unreached::NoAnswer;
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(web_sys::RequestMode::NoCors);
    init.set_cache(web_sys::RequestCache::NoStore);
    init.set_credentials(web_sys::RequestCredentials::Omit);
    let Ok(probe) = Request::new_with_str_and_init(url, &init) else {
        return Unreached::NoAnswer;
    };
    match within(fetch_with_request(&probe), 2_000).await {
        Ok(Some(_)) => Unreached::Blocked,
        _ => Unreached::NoAnswer,
    }
}

/// Words that only the sentence of a CORS refusal holds, by which the turn driver knows it
/// (the error is a network failure, whose text is all it carries).
pub(crate) const CORS_MARK: &str = "did not let this page read the answer";

/// The sentence for a request to `url` that got no readable answer, saying what to check.
pub fn unreached_sentence(url: &str, why: Unreached) -> String {
    let origin = page_origin();
    match (why, origin) {
        (Unreached::Blocked, Some(origin)) => format!(
            "The server at {url} answered, but the browser {CORS_MARK}: the server must allow \
             requests from {origin} (CORS)."
        ),
        (Unreached::Blocked, None) => {
            format!("The server at {url} answered, but its answer could not be read.")
        }
        (Unreached::NoAnswer, Some(origin)) => format!(
            "Could not connect to {url}. Check the URL, that the server is running, and that \
             it allows requests from {origin} (CORS)."
        ),
        (Unreached::NoAnswer, None) => {
            format!("Could not connect to {url}. Check the URL and that the server is running.")
        }
    }
}

/// The error of a provider request whose `fetch` was rejected before any response came. A
/// server that is not there is reported at once, since sending again only delays telling the
/// person to start it or fix the URL (`ConnectionRefused` is never retried); one that answered
/// but is refused by CORS is a network failure with a sentence naming the origin to allow.
async fn unreached(url: &str, error: &JsValue) -> ProviderError {
    // Outside a page there is no CORS and no probe: the runtime's own message is kept.
    if page_origin().is_none() {
        return ProviderError::Network(full_stop(js_message(error)));
    }
    match why_unreached(url).await {
        Unreached::NoAnswer => ProviderError::ConnectionRefused {
            url: url.to_string(),
        },
        Unreached::Blocked => ProviderError::Network(unreached_sentence(url, Unreached::Blocked)),
    }
}

/// `text` ending with a full stop (or its own final punctuation), so that a sentence can follow.
pub fn full_stop(text: String) -> String {
    let text = text.trim_end().to_string();
    if text.is_empty() || text.ends_with(['.', '!', '?']) {
        text
    } else {
        format!("{text}.")
    }
}

/// The fetch `Request` of a provider request: its method, headers and body, and the signal
/// that cancels it. A header the browser refuses is a configuration error naming the header.
fn fetch_request_of(
    http: &ccm_provider::HttpRequest,
    signal: Option<&AbortSignal>,
    network: impl Fn(JsValue) -> ProviderError,
) -> Result<Request, ProviderError> {
    let headers = Headers::new().map_err(network)?;
    for (name, value) in &http.headers {
        headers.append(name, value).map_err(|e| {
            ProviderError::InvalidConfig(format!("header {name}: {}", js_message(&e)))
        })?;
    }
    let init = RequestInit::new();
    init.set_method(http.method.as_str());
    init.set_headers(&headers);
    // A `GET` (the model list) may carry no body at all: `fetch` refuses one, even empty.
    if http.method == ccm_provider::HttpMethod::Post {
        init.set_body(&JsValue::from_str(&http.body));
    }
    if let Some(signal) = signal {
        init.set_signal(Some(signal));
    }
    Request::new_with_str_and_init(&http.url, &init)
        .map_err(|e| ProviderError::InvalidConfig(js_message(&e)))
}

/// Sends a plain (not streamed) request with `fetch` and returns the body of a successful
/// answer: what an embeddings endpoint is asked with. The whole answer must arrive within
/// `timeout_ms` (0: no limit).
///
/// # Errors
/// The HTTP status error of `endpoint` (as `ProviderError::from_http` reads it), a network
/// failure, or [`ProviderError::Timeout`].
pub async fn post(
    http: &ccm_provider::HttpRequest,
    context: &ccm_provider::ErrorContext,
    timeout_ms: u64,
) -> Result<String, ProviderError> {
    let network = |error: JsValue| ProviderError::Network(full_stop(js_message(&error)));
    let fetch_request = fetch_request_of(http, None, network)?;
    let started = js_sys::Date::now();
    let Some(response) = within(fetch_with_request(&fetch_request), timeout_ms)
        .await
        .map_err(network)?
    else {
        return Err(ProviderError::Timeout {
            after_ms: timeout_ms,
        });
    };
    let response: Response = response.unchecked_into();
    let left = match timeout_ms {
        0 => 0,
        total => total
            .saturating_sub((js_sys::Date::now() - started).max(0.0) as u64)
            .max(1),
    };
    let Some(body) = within(response.text().map_err(network)?, left)
        .await
        .map_err(network)?
    else {
        return Err(ProviderError::Timeout {
            after_ms: timeout_ms,
        });
    };
    let body = body.as_string().unwrap_or_default();
    if !response.ok() {
        return Err(ProviderError::from_http(
            response.status(),
            &[],
            &body,
            context,
        ));
    }
    Ok(body)
}

/// Reads the model list of the provider of `config` (`GET {base}/models`, with the headers
/// ccm-provider writes for the protocol) and returns the body of a successful answer, for the
/// host to read.
///
/// # Errors
/// A sentence for the person: a bad URL, no answer (with what to check, CORS included), or an
/// HTTP error (this provider may have no model list).
pub async fn fetch_model_list(config: &ProviderConfig) -> Result<String, String> {
    let http = config.model_list_request().map_err(|e| e.to_string())?;
    let fetch_request = fetch_request_of(&http, None, |error| {
        ProviderError::Network(js_message(&error))
    })
    .map_err(|e| e.to_string())?;
    let url = &http.url;
    let response: Response = match JsFuture::from(fetch_with_request(&fetch_request)).await {
        Ok(response) => response.unchecked_into(),
        Err(_) => return Err(unreached_sentence(url, why_unreached(url).await)),
    };
    if !response.ok() {
        return Err(format!(
            "{url} answered HTTP {} (this provider may have no model list: type the model name instead)",
            response.status()
        ));
    }
    let text = response.text().map_err(|e| js_message(&e))?;
    Ok(JsFuture::from(text)
        .await
        .map_err(|e| js_message(&e))?
        .as_string()
        .unwrap_or_default())
}

/// What `promise` resolves with, or `None` when it has not settled within `timeout_ms`
/// milliseconds (0: no limit). Every promise raced here (a `fetch`, a body read) resolves with
/// an object, never with `undefined`, which is what the timer resolves with.
pub(crate) async fn within(promise: Promise, timeout_ms: u64) -> Result<Option<JsValue>, JsValue> {
    if timeout_ms == 0 {
        return JsFuture::from(promise).await.map(Some);
    }
    let mut timer = JsValue::UNDEFINED;
    let expired = Promise::new(&mut |resolve, _| {
        timer = set_timeout(&resolve, timeout_ms as f64);
    });
    let first = JsFuture::from(Promise::race(&Array::of2(&promise, &expired))).await;
    clear_timeout(&timer);
    let value = first?;
    Ok((!value.is_undefined()).then_some(value))
}

/// A promise that is rejected when `signal` aborts (at once if it already has) and otherwise
/// stays pending, for racing a wait against a Stop.
fn rejected_on_abort(signal: &AbortSignal) -> Promise {
    if signal.aborted() {
        return Promise::reject(&"aborted".into());
    }
    let promise = Promise::new(&mut |_, reject| {
        // The reject function itself is the listener, so no closure has to be kept alive.
        let _ = signal.add_event_listener_with_callback("abort", &reject);
    });
    // The promise joins a race in the same tick it is made, so its rejection always has a
    // handler and is never reported as unhandled.
    promise
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
