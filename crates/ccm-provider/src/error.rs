//! Everything that can go wrong while talking to a provider, as one error type.

use super::snippet;
use serde_json::Value;

/// Why a provider request failed.
///
/// HTTP failures are built with [`ProviderError::from_http`]; transports report the failures
/// only they can see with [`Timeout`](Self::Timeout), [`ConnectionRefused`](Self::ConnectionRefused),
/// [`Network`](Self::Network) and [`Cancelled`](Self::Cancelled). Every message is written to
/// be shown to the person using the application as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// HTTP 400 (or 422): the provider considers the request malformed, for example because
    /// the context is longer than the model's window or a parameter is not supported.
    #[error("The provider rejected the request as invalid (HTTP {status}): {message}")]
    BadRequest {
        /// 400, or 422 as some compatible servers use it.
        status: u16,
        /// The provider's explanation.
        message: String,
        /// The provider's machine-readable error code or type, when it gave one (for example
        /// `context_length_exceeded` or `invalid_request_error`).
        code: Option<String>,
    },
    /// HTTP 401: the API key is missing, wrong or revoked.
    #[error("{}", unauthorized_message(.message, *.api_key_given))]
    Unauthorized {
        /// The provider's explanation.
        message: String,
        /// Whether the request carried a key at all.
        api_key_given: bool,
    },
    /// HTTP 402, or a 429 that reports an exhausted quota: the account has no credit left.
    /// Waiting does not help, so this is never retried.
    #[error(
        "The provider account has run out of credit or quota (HTTP {status}): {message}. \
         Add credit or check the plan's limits, then try again."
    )]
    QuotaExceeded {
        /// 402 or 429.
        status: u16,
        /// The provider's explanation.
        message: String,
    },
    /// HTTP 403: the key is valid but may not use this model or endpoint (or the request came
    /// from a region or origin the provider blocks).
    #[error(
        "The provider refused access (HTTP 403 Forbidden): {message}. The API key may not be \
         allowed to use this model or endpoint."
    )]
    Forbidden {
        /// The provider's explanation.
        message: String,
    },
    /// HTTP 404: usually an unknown model name or a base URL without the right path
    /// (for example a missing `/v1`).
    #[error(
        "Not found (HTTP 404) at {url}: {message}. Check that the model \"{model}\" exists \
         on this provider (for Ollama: pulled) and that the base URL is right."
    )]
    NotFound {
        /// The provider's explanation.
        message: String,
        /// The model name that was requested.
        model: String,
        /// The URL that was requested.
        url: String,
    },
    /// HTTP 429: too many requests or tokens per minute. Retried after the delay the provider
    /// asks for.
    #[error("The provider is rate limiting requests (HTTP 429): {message}{}", retry_hint(*.retry_after_ms))]
    RateLimited {
        /// The provider's explanation.
        message: String,
        /// How long the provider asked to wait (`retry-after-ms` or integer/decimal
        /// `retry-after` seconds), if it said.
        retry_after_ms: Option<u64>,
    },
    /// HTTP 5xx (including Anthropic's 529 "overloaded"): a problem on the provider's side.
    #[error("The provider had a server error (HTTP {status}): {message}{}", retry_hint(*.retry_after_ms))]
    Server {
        /// The status code, 500 to 599.
        status: u16,
        /// The provider's explanation.
        message: String,
        /// How long the provider asked to wait, if it said.
        retry_after_ms: Option<u64>,
    },
    /// Any other status that is not a success (for example 408, 409 or 413).
    #[error("The provider answered with HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The provider's explanation.
        message: String,
    },
    /// No answer arrived in time.
    #[error("The provider did not answer within {}.", format_duration(*.after_ms))]
    Timeout {
        /// How long the transport waited.
        after_ms: u64,
    },
    /// Nothing is listening at the provider's address.
    #[error(
        "Could not connect to {url}: the connection was refused. Check the base URL, and for a \
         local server (Ollama, LM Studio) that it is running."
    )]
    ConnectionRefused {
        /// The URL that was requested.
        url: String,
    },
    /// Any other network failure (DNS, TLS, reset connection, CORS in a browser, …).
    #[error("Network error while talking to the provider: {0}")]
    Network(String),
    /// The response stream ended before its end-of-stream marker: the answer is incomplete.
    #[error("{}", truncated_message(*.events, *.text_chars, *.tool_calls))]
    StreamTruncated {
        /// How many events had arrived.
        events: usize,
        /// How many characters of answer text had arrived.
        text_chars: usize,
        /// How many tool calls had started.
        tool_calls: usize,
    },
    /// The response stream stopped sending for the transport's idle timeout in the middle of
    /// the answer, and the wait was ended: the answer is incomplete. Like a cut-off stream, it
    /// is not retried by itself, since its beginning may already be on screen.
    #[error(
        "The provider sent nothing for {} in the middle of its answer (after {events} events, \
         {text_chars} characters of text and {tool_calls} tool calls), so the wait was ended; \
         the answer is incomplete.",
        format_duration(*.after_ms)
    )]
    StreamStalled {
        /// How long the stream had been silent.
        after_ms: u64,
        /// How many events had arrived.
        events: usize,
        /// How many characters of answer text had arrived.
        text_chars: usize,
        /// How many tool calls had started.
        tool_calls: usize,
    },
    /// The response was still arriving when its total deadline ran out: the stream kept
    /// sending (so the idle timeout never fired) but too slowly to finish. The answer is
    /// incomplete; like a stalled stream it is not retried by itself.
    #[error(
        "The provider's answer was still arriving after {}, the longest a response may take, \
         so the wait was ended (after {events} events, {text_chars} characters of text and \
         {tool_calls} tool calls); the answer is incomplete.",
        format_duration(*.after_ms)
    )]
    StreamDeadline {
        /// The deadline that ran out, from the request to the end of the response.
        after_ms: u64,
        /// How many events had arrived.
        events: usize,
        /// How many characters of answer text had arrived.
        text_chars: usize,
        /// How many tool calls had started.
        tool_calls: usize,
    },
    /// A stream was asked for, but the provider answered with something else: most often an
    /// HTML page (a web server's, a login page or a proxy's) because the base URL leads there
    /// rather than to the API.
    #[error("{}", not_a_stream_message(.content_type.as_deref(), *.html, .excerpt))]
    NotAStream {
        /// The `Content-Type` of the answer, if it named one.
        content_type: Option<String>,
        /// Whether the answer is an HTML page (by its type, or by its first bytes when it
        /// named no type).
        html: bool,
        /// The first words of the answer: for a page its text without the markup.
        excerpt: String,
    },
    /// The provider reported an error inside a successful response: an `error` event in a
    /// stream, or an error object with a 2xx status.
    #[error("The provider reported an error{}: {message}", error_type_hint(.error_type))]
    ApiError {
        /// The provider's error type or code (for example `overloaded_error`), if given.
        error_type: Option<String>,
        /// The provider's explanation.
        message: String,
    },
    /// The response is valid JSON but does not follow the protocol (for example a
    /// tool-argument fragment for a call that never started).
    #[error("The provider's response did not follow the expected protocol: {0}")]
    Protocol(String),
    /// Part of the response is not the JSON the protocol prescribes.
    #[error("Could not read the provider's {context}. The text received was: {snippet}")]
    InvalidJson {
        /// What was being read and what was wrong with it.
        context: String,
        /// The beginning of the offending text.
        snippet: String,
    },
    /// The model's output passed one of the limits of [`crate::output`] (its answer, its
    /// tool-call arguments, a tool name or id, the number of calls, or the body's size).
    /// Reading stopped there; nothing of the answer is kept. Not retried by itself: the same
    /// request would most likely bring the same answer.
    #[error("{}", crate::output::too_large_message(*.field))]
    OutputTooLarge {
        /// The field that passed its limit.
        field: crate::OutputField,
    },
    /// The request was cancelled before it completed.
    #[error("The request was cancelled.")]
    Cancelled,
    /// The settings cannot produce a valid request.
    #[error("The provider settings are invalid: {0}.")]
    InvalidConfig(String),
}

fn unauthorized_message(message: &str, api_key_given: bool) -> String {
    if api_key_given {
        format!(
            "The provider did not accept the API key (HTTP 401 Unauthorized): {message}. \
             Check that the key is correct, not revoked, and meant for this provider."
        )
    } else {
        format!(
            "The provider requires an API key (HTTP 401 Unauthorized), but none is set: \
             {message}."
        )
    }
}

fn not_a_stream_message(content_type: Option<&str>, html: bool, excerpt: &str) -> String {
    let quoted = if excerpt.is_empty() {
        String::new()
    } else {
        format!(": \"{excerpt}\"")
    };
    if html {
        return format!(
            "The provider answered with an HTML page, not an event stream{quoted}. Check the \
             base URL: it may lead to a web page, a login page or a proxy rather than to the API."
        );
    }
    match content_type.map(str::trim).filter(|kind| !kind.is_empty()) {
        Some(kind) => format!(
            "The provider answered with {kind} content, not an event stream{quoted}. Check the \
             base URL and that the server speaks the provider's protocol."
        ),
        None => format!(
            "The provider answered with something other than an event stream{quoted}. Check the \
             base URL and that the server speaks the provider's protocol."
        ),
    }
}

fn retry_hint(retry_after_ms: Option<u64>) -> String {
    match retry_after_ms {
        Some(ms) => format!(" (the provider asks to wait {})", format_duration(ms)),
        None => String::new(),
    }
}

fn error_type_hint(error_type: &Option<String>) -> String {
    match error_type {
        Some(kind) => format!(" ({kind})"),
        None => String::new(),
    }
}

/// `1500` → `1.5 s`, `30000` → `30 s`, `250` → `250 ms`.
/// The message of [`ProviderError::StreamTruncated`]: a stream that ended before any event
/// is said to be empty, which is what a person can act on.
fn truncated_message(events: usize, text_chars: usize, tool_calls: usize) -> String {
    if events == 0 {
        return "The response stream ended before any event arrived: the provider sent an empty \
                stream and no answer."
            .to_string();
    }
    format!(
        "The response stream ended before it was complete (after {events} events, \
         {text_chars} characters of text and {tool_calls} tool calls); the answer is incomplete."
    )
}

fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// What was requested, so that HTTP errors can name the model, the URL and whether a key was
/// sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorContext {
    /// The endpoint URL.
    pub url: String,
    /// The model name.
    pub model: String,
    /// Whether an API key was sent.
    pub api_key_given: bool,
}

/// How much of a non-JSON error body goes into a message.
const BODY_SNIPPET_CHARS: usize = 300;

impl ProviderError {
    /// Classifies a response whose status is not a success.
    ///
    /// The provider's own explanation is taken from the body when it is a JSON error object
    /// (OpenAI and Anthropic `{"error": {"message": …}}`, Ollama `{"error": "…"}`, or a
    /// top-level `message` / `detail`); otherwise the beginning of the body is used, and a
    /// fixed description of the status when the body is empty. Header names are compared
    /// case-insensitively; `retry-after-ms` and `retry-after` (in seconds) give the delay of a
    /// 429 or 5xx. An HTTP-date `retry-after` is ignored: turning it into a delay needs the
    /// current time, which this crate does not have, and the retry policy then falls back to
    /// its own backoff.
    ///
    /// ```
    /// # use ccm_provider::{ErrorContext, ProviderError};
    /// let context = ErrorContext { url: "https://api.openai.com/v1/chat/completions".into(),
    ///                              model: "gpt-4o".into(), api_key_given: true };
    /// let error = ProviderError::from_http(
    ///     429,
    ///     &[("Retry-After".into(), "20".into())],
    ///     r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
    ///     &context,
    /// );
    /// assert_eq!(error, ProviderError::RateLimited {
    ///     message: "Rate limit reached".into(), retry_after_ms: Some(20_000) });
    /// ```
    pub fn from_http(
        status: u16,
        headers: &[(String, String)],
        body: &str,
        context: &ErrorContext,
    ) -> ProviderError {
        let details = ErrorDetails::from_body(body);
        let message = details
            .message
            .unwrap_or_else(|| status_description(status).to_string());
        let code = details.code;
        let quota = code.as_deref().is_some_and(is_quota_code);
        match status {
            400 | 422 => ProviderError::BadRequest {
                status,
                message,
                code,
            },
            401 => ProviderError::Unauthorized {
                message,
                api_key_given: context.api_key_given,
            },
            402 => ProviderError::QuotaExceeded { status, message },
            403 => ProviderError::Forbidden { message },
            404 => ProviderError::NotFound {
                message,
                model: context.model.clone(),
                url: context.url.clone(),
            },
            429 if quota => ProviderError::QuotaExceeded { status, message },
            429 => ProviderError::RateLimited {
                message,
                retry_after_ms: retry_after_ms(headers),
            },
            500..=599 => ProviderError::Server {
                status,
                message,
                retry_after_ms: retry_after_ms(headers),
            },
            _ => ProviderError::Http { status, message },
        }
    }

    /// Whether the same request may well succeed if sent again later: rate limits, server
    /// errors (except 501 Not Implemented and 505, which describe a permanent mismatch),
    /// timeouts, network failures, and transient error events (`overloaded_error`,
    /// `api_error`, `rate_limit_error`, `server_error`).
    ///
    /// A refused connection is not transient: nothing is listening, and trying again only
    /// delays telling the person to start the server or fix the URL. A truncated stream is not
    /// transient either: part of the answer may already be on screen, so sending the request
    /// again is the caller's decision.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Network(_) => true,
            ProviderError::Server { status, .. } => !matches!(status, 501 | 505),
            ProviderError::ApiError { error_type, .. } => matches!(
                error_type.as_deref(),
                Some("overloaded_error" | "api_error" | "rate_limit_error" | "server_error")
            ),
            _ => false,
        }
    }

    /// The delay the provider asked for before a retry, if it named one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ProviderError::RateLimited { retry_after_ms, .. }
            | ProviderError::Server { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }

    /// Whether the request failed because the context is longer than the model accepts, so
    /// that the caller can compact harder and try again.
    ///
    /// Recognises OpenAI's `context_length_exceeded` code and the wording of Anthropic
    /// (`prompt is too long`) and of common compatible servers.
    pub fn is_context_length_exceeded(&self) -> bool {
        let (code, message) = match self {
            ProviderError::BadRequest { code, message, .. } => (code.as_deref(), message),
            ProviderError::Http {
                status: 413,
                message,
            } => (None, message),
            ProviderError::ApiError {
                error_type,
                message,
            } => (error_type.as_deref(), message),
            _ => return false,
        };
        if code == Some("context_length_exceeded") {
            return true;
        }
        let lower = message.to_ascii_lowercase();
        [
            "prompt is too long",
            "context length",
            "context window",
            "maximum context",
            "too many tokens",
        ]
        .iter()
        .any(|phrase| lower.contains(phrase))
    }

    /// An [`ApiError`](Self::ApiError) from an error object that came inside a success body
    /// or a stream (Anthropic's `error` event, an OpenAI chunk's `error`): it has no status of
    /// its own, so only the object says what went wrong.
    pub(crate) fn embedded(error: &Value) -> Self {
        let details = ErrorDetails::from_json(&serde_json::json!({ "error": error }));
        ProviderError::ApiError {
            error_type: details.code,
            message: details
                .message
                .unwrap_or_else(|| "no details were given".to_string()),
        }
    }

    /// An [`InvalidJson`](Self::InvalidJson) error for `text`, which was being read as `what`.
    pub(crate) fn invalid_json(what: &str, error: &serde_json::Error, text: &str) -> Self {
        ProviderError::InvalidJson {
            context: format!("{what} ({error})"),
            snippet: snippet(text, 200),
        }
    }
}

fn is_quota_code(code: &str) -> bool {
    matches!(code, "insufficient_quota" | "billing_hard_limit_reached")
}

/// A fixed description for a status whose body explains nothing.
fn status_description(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "no details were given",
    }
}

/// The provider's explanation and error code, as far as the body reveals them.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ErrorDetails {
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
}

impl ErrorDetails {
    /// Reads an error body of any known shape; falls back to the body's text.
    pub(crate) fn from_body(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(json) => {
                let details = Self::from_json(&json);
                if details.message.is_some() {
                    return details;
                }
                ErrorDetails {
                    message: non_empty(snippet(body, BODY_SNIPPET_CHARS)),
                    code: details.code,
                }
            }
            Err(_) => ErrorDetails {
                message: plain_body_message(body),
                code: None,
            },
        }
    }

    /// Reads an error object: `{"error": {"message", "code", "type"}}`, `{"error": "…"}`,
    /// `{"message": …}` or `{"detail": …}`.
    pub(crate) fn from_json(json: &Value) -> Self {
        let text = |value: Option<&Value>| -> Option<String> {
            match value? {
                Value::String(s) => non_empty(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        };
        match json.get("error") {
            Some(Value::Object(error)) => ErrorDetails {
                message: text(error.get("message")),
                // OpenAI's `code` is the specific one (`context_length_exceeded`), its `type` the
                // broad class; Anthropic only has `type`.
                code: text(error.get("code")).or_else(|| text(error.get("type"))),
            },
            Some(Value::String(message)) => ErrorDetails {
                message: non_empty(message.trim().to_string()),
                code: None,
            },
            _ => ErrorDetails {
                message: text(json.get("message")).or_else(|| text(json.get("detail"))),
                code: None,
            },
        }
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// The message for a body that is not JSON: its beginning, unless it is an HTML page (a proxy's
/// or load balancer's error page), which would only be noise.
fn plain_body_message(body: &str) -> Option<String> {
    let trimmed = body.trim_start();
    let lower: String = trimmed
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return Some("the server answered with an HTML page instead of an API error".to_string());
    }
    let collapsed = trimmed.split_whitespace().collect::<Vec<_>>().join(" ");
    non_empty(snippet(&collapsed, BODY_SNIPPET_CHARS))
}

/// The delay a 429 or 5xx response asks for: `retry-after-ms` (milliseconds, sent by OpenAI)
/// or `retry-after` as a number of seconds. Negative, non-numeric and HTTP-date values give
/// `None`.
fn retry_after_ms(headers: &[(String, String)]) -> Option<u64> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let parse = |value: &str| -> Option<f64> {
        let number: f64 = value.parse().ok()?;
        (number.is_finite() && number >= 0.0).then_some(number)
    };
    if let Some(ms) = header("retry-after-ms").and_then(parse) {
        return Some(ms.ceil() as u64);
    }
    header("retry-after")
        .and_then(parse)
        .map(|seconds| (seconds * 1000.0).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> ErrorContext {
        ErrorContext {
            url: "http://localhost:11434/v1/chat/completions".into(),
            model: "llama3.2".into(),
            api_key_given: false,
        }
    }

    fn classify(status: u16, body: &str) -> ProviderError {
        ProviderError::from_http(status, &[], body, &context())
    }

    #[test]
    fn statuses_map_to_their_variants() {
        let openai = r#"{"error":{"message":"boom","type":"invalid_request_error","code":null}}"#;
        assert_eq!(
            classify(400, openai),
            ProviderError::BadRequest {
                status: 400,
                message: "boom".into(),
                code: Some("invalid_request_error".into())
            }
        );
        assert!(matches!(
            classify(422, openai),
            ProviderError::BadRequest { status: 422, .. }
        ));
        assert_eq!(
            classify(401, openai),
            ProviderError::Unauthorized {
                message: "boom".into(),
                api_key_given: false
            }
        );
        assert_eq!(
            classify(403, openai),
            ProviderError::Forbidden {
                message: "boom".into()
            }
        );
        assert_eq!(
            classify(404, openai),
            ProviderError::NotFound {
                message: "boom".into(),
                model: "llama3.2".into(),
                url: "http://localhost:11434/v1/chat/completions".into()
            }
        );
        assert_eq!(
            classify(429, openai),
            ProviderError::RateLimited {
                message: "boom".into(),
                retry_after_ms: None
            }
        );
        for status in [500, 502, 503, 504, 529] {
            assert_eq!(
                classify(status, openai),
                ProviderError::Server {
                    status,
                    message: "boom".into(),
                    retry_after_ms: None
                }
            );
        }
        assert_eq!(
            classify(408, openai),
            ProviderError::Http {
                status: 408,
                message: "boom".into()
            }
        );
    }

    #[test]
    fn provider_messages_are_extracted_from_every_known_shape() {
        let cases = [
            // OpenAI
            (
                r#"{"error":{"message":"Incorrect API key provided: sk-ab***cd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
                Some("Incorrect API key provided: sk-ab***cd."),
                Some("invalid_api_key"),
            ),
            // Anthropic
            (
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#,
                Some("model: claude-x"),
                Some("not_found_error"),
            ),
            // Ollama
            (
                r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
                Some("model \"llama9\" not found, try pulling it first"),
                None,
            ),
            // OpenRouter (numeric code)
            (
                r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
                Some("Rate limit exceeded"),
                Some("429"),
            ),
            // FastAPI-style servers
            (r#"{"detail":"Not Found"}"#, Some("Not Found"), None),
            (r#"{"message":"nope"}"#, Some("nope"), None),
            // JSON without any message: the body itself is the best explanation.
            (r#"{"status":"down"}"#, Some(r#"{"status":"down"}"#), None),
            (
                r#"{"error":{"type":"overloaded_error"}}"#,
                Some(r#"{"error":{"type":"overloaded_error"}}"#),
                Some("overloaded_error"),
            ),
            // Plain text, whitespace collapsed.
            (
                "upstream  connect\n error",
                Some("upstream connect error"),
                None,
            ),
            (
                "<!DOCTYPE html><html><body>502</body></html>",
                Some("the server answered with an HTML page instead of an API error"),
                None,
            ),
            ("", None, None),
            ("   \n", None, None),
        ];
        for (body, message, code) in cases {
            let details = ErrorDetails::from_body(body);
            assert_eq!(details.message.as_deref(), message, "{body}");
            assert_eq!(details.code.as_deref(), code, "{body}");
        }
    }

    #[test]
    fn empty_bodies_fall_back_to_the_status_description() {
        assert_eq!(
            classify(503, ""),
            ProviderError::Server {
                status: 503,
                message: "Service Unavailable".into(),
                retry_after_ms: None
            }
        );
        assert_eq!(
            classify(418, " "),
            ProviderError::Http {
                status: 418,
                message: "no details were given".into()
            }
        );
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = "x".repeat(1000);
        let ProviderError::Server { message, .. } = classify(500, &body) else {
            panic!("not a server error");
        };
        assert_eq!(message.chars().count(), BODY_SNIPPET_CHARS + 1);
        assert!(message.ends_with('…'));
    }

    #[test]
    fn retry_after_headers_are_read() {
        let with = |name: &str, value: &str| {
            ProviderError::from_http(
                429,
                &[(name.to_string(), value.to_string())],
                "",
                &context(),
            )
            .retry_after_ms()
        };
        assert_eq!(with("Retry-After", "20"), Some(20_000));
        assert_eq!(with("retry-after", " 1.5 "), Some(1_500));
        assert_eq!(with("RETRY-AFTER", "0"), Some(0));
        assert_eq!(with("retry-after-ms", "250"), Some(250));
        assert_eq!(with("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(with("retry-after", "-3"), None);
        assert_eq!(with("retry-after", "soon"), None);
        assert_eq!(with("x-other", "5"), None);

        // `retry-after-ms` is more precise, so it wins.
        let headers = [
            ("retry-after".to_string(), "2".to_string()),
            ("retry-after-ms".to_string(), "1234".to_string()),
        ];
        let error = ProviderError::from_http(503, &headers, "", &context());
        assert_eq!(error.retry_after_ms(), Some(1234));
        // Other statuses never carry a delay.
        let error = ProviderError::from_http(400, &headers, "", &context());
        assert_eq!(error.retry_after_ms(), None);
    }

    #[test]
    fn exhausted_quotas_are_not_rate_limits() {
        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let error = classify(429, body);
        assert!(matches!(
            error,
            ProviderError::QuotaExceeded { status: 429, .. }
        ));
        assert!(!error.is_transient());
        let error = classify(
            402,
            r#"{"error":{"message":"Insufficient credits","code":402}}"#,
        );
        assert_eq!(
            error,
            ProviderError::QuotaExceeded {
                status: 402,
                message: "Insufficient credits".into()
            }
        );
    }

    #[test]
    fn messages_are_precise_and_user_facing() {
        let with_key = ErrorContext {
            api_key_given: true,
            ..context()
        };
        let cases = [
            (
                ProviderError::from_http(
                    401,
                    &[],
                    r#"{"error":{"message":"Invalid key"}}"#,
                    &with_key,
                ),
                "The provider did not accept the API key (HTTP 401 Unauthorized): Invalid key. \
                 Check that the key is correct, not revoked, and meant for this provider.",
            ),
            (
                classify(401, ""),
                "The provider requires an API key (HTTP 401 Unauthorized), but none is set: \
                 Unauthorized.",
            ),
            (
                classify(
                    404,
                    r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
                ),
                "Not found (HTTP 404) at http://localhost:11434/v1/chat/completions: model \
                 \"llama9\" not found, try pulling it first. Check that the model \"llama3.2\" \
                 exists on this provider (for Ollama: pulled) and that the base URL is right.",
            ),
            (
                ProviderError::RateLimited {
                    message: "slow down".into(),
                    retry_after_ms: Some(1500),
                },
                "The provider is rate limiting requests (HTTP 429): slow down (the provider asks \
                 to wait 1.5 s)",
            ),
            (
                ProviderError::Server {
                    status: 529,
                    message: "Overloaded".into(),
                    retry_after_ms: None,
                },
                "The provider had a server error (HTTP 529): Overloaded",
            ),
            (
                ProviderError::Timeout { after_ms: 60_000 },
                "The provider did not answer within 60 s.",
            ),
            (
                ProviderError::ConnectionRefused {
                    url: "http://localhost:1234/v1/chat/completions".into(),
                },
                "Could not connect to http://localhost:1234/v1/chat/completions: the connection \
                 was refused. Check the base URL, and for a local server (Ollama, LM Studio) that \
                 it is running.",
            ),
            (
                ProviderError::StreamTruncated {
                    events: 12,
                    text_chars: 340,
                    tool_calls: 1,
                },
                "The response stream ended before it was complete (after 12 events, 340 \
                 characters of text and 1 tool calls); the answer is incomplete.",
            ),
            (
                ProviderError::ApiError {
                    error_type: Some("overloaded_error".into()),
                    message: "Overloaded".into(),
                },
                "The provider reported an error (overloaded_error): Overloaded",
            ),
            (
                ProviderError::InvalidJson {
                    context: "OpenAI stream chunk (EOF while parsing)".into(),
                    snippet: "{\"cho".into(),
                },
                "Could not read the provider's OpenAI stream chunk (EOF while parsing). The text \
                 received was: {\"cho",
            ),
            (ProviderError::Cancelled, "The request was cancelled."),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }

    #[test]
    fn transient_errors_are_recognised() {
        let transient = [
            classify(429, ""),
            classify(500, ""),
            classify(529, ""),
            ProviderError::Timeout { after_ms: 1 },
            ProviderError::Network("reset".into()),
            ProviderError::ApiError {
                error_type: Some("overloaded_error".into()),
                message: String::new(),
            },
        ];
        for error in transient {
            assert!(error.is_transient(), "{error:?}");
        }
        let permanent = [
            classify(400, ""),
            classify(401, ""),
            classify(403, ""),
            classify(404, ""),
            classify(408, ""),
            classify(501, ""),
            ProviderError::ConnectionRefused { url: "u".into() },
            ProviderError::StreamTruncated {
                events: 0,
                text_chars: 0,
                tool_calls: 0,
            },
            ProviderError::ApiError {
                error_type: Some("invalid_request_error".into()),
                message: String::new(),
            },
            ProviderError::ApiError {
                error_type: None,
                message: String::new(),
            },
            ProviderError::Cancelled,
            ProviderError::InvalidConfig("x".into()),
        ];
        for error in permanent {
            assert!(!error.is_transient(), "{error:?}");
        }
    }

    #[test]
    fn context_overflow_is_recognised() {
        let openai = classify(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        );
        assert!(openai.is_context_length_exceeded());
        let anthropic = classify(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        );
        assert!(anthropic.is_context_length_exceeded());
        let other = classify(
            400,
            r#"{"error":{"message":"temperature must be at most 2","type":"invalid_request_error"}}"#,
        );
        assert!(!other.is_context_length_exceeded());
        assert!(!classify(500, "context length").is_context_length_exceeded());
    }
}
