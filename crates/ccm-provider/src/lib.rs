//! # ccm-provider
//!
//! The LLM provider protocols of CCM, without any I/O.
//!
//! This crate turns one request's conversation into the HTTP request a provider expects, and
//! turns the provider's answer (a JSON body, or the bytes of a server-sent-event stream) back
//! into a neutral [`ProviderResponse`]. It never opens a socket, reads a clock or draws a random
//! number: the transport (`fetch` in the browser, an HTTP client natively) sends the
//! [`HttpRequest`] and feeds back whatever arrives. That keeps every protocol detail testable
//! natively and byte-for-byte deterministic.
//!
//! It is a leaf of the workspace: it knows nothing of sessions, efforts or context plans. Its
//! own wire types ([`WireMessage`], [`WireTool`]) are what the turn engine (`ccm-engine`)
//! converts a built context and the session's tools into.
//!
//! Two protocol families are supported:
//!
//! * [`ProviderKind::OpenAiCompatible`]: the Chat Completions API spoken by OpenAI, Ollama,
//!   LM Studio, OpenRouter and most local servers ([`openai`]).
//! * [`ProviderKind::Anthropic`]: the Anthropic Messages API ([`anthropic`]).
//!
//! An OpenAI-compatible `/v1/embeddings` endpoint is mapped too ([`embeddings`]), for the
//! relevance ranking of compaction.
//!
//! # One request, end to end
//!
//! ```
//! # use ccm_provider::*;
//! let config = ProviderConfig::from_preset(Preset::Ollama, None);
//! let options = RequestOptions::new("llama3.2").with_stream(true);
//! let messages = [WireMessage::User("Hello".into())];
//! let request = build_request(&config, &options, &messages, &[]).unwrap();
//! assert_eq!(request.url, "http://localhost:11434/v1/chat/completions");
//!
//! // The transport sends `request` and feeds every chunk of the body into the stream.
//! let mut stream = ProviderStream::new(config.kind);
//! let mut shown = String::new();
//! for chunk in [&b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi"[..],
//!               &b"!\"}}]}\n\ndata: [DONE]\n\n"[..]] {
//!     for delta in stream.push(chunk).unwrap() {
//!         if let StreamDelta::Text(text) = delta { shown.push_str(&text); }
//!     }
//! }
//! let response = stream.finish().unwrap();
//! assert_eq!((shown.as_str(), response.text.as_str()), ("Hi!", "Hi!"));
//! ```
//!
//! When the provider answers with a status other than 2xx, [`ProviderError::from_http`] turns
//! the status, headers and body into a typed error, and [`RetryPolicy::delay_ms`] says whether
//! (and after how long) to try again.
#![deny(missing_docs)]

pub mod anthropic;
mod choice;
mod config;
pub mod embeddings;
mod error;
mod fragment;
pub mod models;
pub mod openai;
mod options;
pub mod output;
pub mod protocol;
mod retry;
pub mod sse;
mod usage;
mod wire;

pub use choice::{ProviderChoice, ProviderChoiceError, ProviderName};
pub use config::{
    normalize_base_url, Preset, ProviderConfig, ProviderKind, DEFAULT_HEADERS_TIMEOUT_MS,
    DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_RESPONSE_DEADLINE_MS,
};
pub use embeddings::{EmbeddingsEndpoint, EmbeddingsEndpointError};
pub use error::{ErrorContext, ProviderError};
pub use options::{RequestOptions, TokenLimitField, ToolChoice, DEFAULT_MAX_TOKENS};
pub use output::{
    check_output, OutputField, MAX_ANSWER_CHARS, MAX_RESPONSE_BODY_BYTES, MAX_TOOL_ARGUMENTS_CHARS,
    MAX_TOOL_CALLS, MAX_TOOL_NAME_CHARS,
};
pub use protocol::{Protocol, ProtocolStream, StreamAccumulator, WriteBody};
pub use retry::RetryPolicy;
pub use sse::{SseDecoder, SseEnd, SseEvent};
pub use usage::UsageReconciliation;
pub use wire::{ToolCall, WireMessage, WireTool};

use serde::{Deserialize, Serialize};
use std::fmt;

/// The HTTP method of a provider request: completions and embeddings `POST`, the model list
/// is read with `GET`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HttpMethod {
    /// `POST`, used for every completion request.
    #[serde(rename = "POST")]
    Post,
    /// `GET`, used for the model list ([`ProviderConfig::model_list_request`]).
    #[serde(rename = "GET")]
    Get,
}

impl HttpMethod {
    /// The method as written on the request line (`"POST"`, `"GET"`).
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Post => "POST",
            HttpMethod::Get => "GET",
        }
    }
}

/// A complete description of one HTTP request, ready for any transport to send.
///
/// Header names are lowercase. The [`Debug`] output hides the values of the headers that carry
/// the API key, so a request can be logged without leaking it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The HTTP method.
    pub method: HttpMethod,
    /// The absolute URL of the endpoint, for example `https://api.openai.com/v1/chat/completions`.
    pub url: String,
    /// Header names and values, in a fixed order.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: String,
}

impl HttpRequest {
    /// The value of the first header called `name` (compared case-insensitively), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Headers whose values are secrets and must never appear in logs.
pub(crate) fn is_secret_header(name: &str) -> bool {
    ["authorization", "x-api-key", "api-key"]
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret))
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let shown = if is_secret_header(name) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

/// Why the model stopped producing output, in a form shared by every provider.
///
/// Decide whether to run tools by looking at [`ProviderResponse::tool_calls`], not at this value:
/// some OpenAI-compatible servers report `stop` even when they return tool calls.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer (OpenAI `stop`; Anthropic `end_turn` or `stop_sequence`).
    Stop,
    /// The model wants tools to be run (OpenAI `tool_calls`; Anthropic `tool_use`).
    ToolCalls,
    /// The answer was cut off by the `max_tokens` limit.
    Length,
    /// Any other reason, as the provider spelled it (for example `content_filter` or
    /// `refusal`). The string is empty when the provider gave no reason at all.
    Other(String),
}

/// Token counts the provider reports for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request's input. For Anthropic this includes tokens read from or written to
    /// the prompt cache, so it is comparable with a local count of the whole context.
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
}

/// One complete answer of the model, in a form shared by every provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderResponse {
    /// The answer's text (all text parts concatenated); empty when the model only called tools.
    pub text: String,
    /// The tools the model asked to run, in the order it listed them.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Token counts, when the provider reported them.
    pub usage: Option<Usage>,
}

impl ProviderResponse {
    /// The assistant message to append to the conversation before sending tool results back.
    pub fn to_wire_message(&self) -> WireMessage {
        WireMessage::Assistant {
            text: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Something a stream produced that a user interface can show at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamDelta {
    /// More answer text, to append to what was shown so far.
    Text(String),
    /// The model started a tool call; its arguments are still arriving.
    ToolCallStarted {
        /// The call's id (`call_…` or `toolu_…`).
        id: String,
        /// The name of the tool being called.
        name: String,
    },
}

/// Builds the HTTP request for `config.kind`'s protocol.
///
/// `messages` is the whole conversation of the request; `tools` may be empty, in which case no
/// tools and no tool choice are sent.
///
/// # Errors
///
/// [`ProviderError::InvalidConfig`] when the configuration or options cannot produce a valid
/// request: an empty model name, a base URL that is not `http(s)://…`, a zero `max_tokens`, a
/// temperature that is not a finite number, or a tool choice that requires tools that were not
/// given.
pub fn build_request(
    config: &ProviderConfig,
    options: &RequestOptions,
    messages: &[WireMessage],
    tools: &[WireTool],
) -> Result<HttpRequest, ProviderError> {
    config.validate()?;
    options.validate(tools.iter().map(|tool| tool.name.as_str()))?;
    // The protocol writes the body; the envelope is the same for every protocol: the JSON
    // content type, the protocol's own authentication headers, then the configuration's extra
    // headers, which replace a built-in one of the same name.
    let protocol = config.kind.protocol();
    let body = (protocol.write_body)(options, config.token_limit_field, messages, tools)?;
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend((protocol.auth_headers)(config.api_key.as_deref()));
    Ok(HttpRequest {
        method: HttpMethod::Post,
        url: config.endpoint_url(),
        headers: request_headers(headers, &config.extra_headers),
        body,
    })
}

/// Parses a complete (non-streaming) success body of `kind`'s protocol.
///
/// # Errors
///
/// [`ProviderError::InvalidJson`] when the body is not the expected JSON,
/// [`ProviderError::ApiError`] when the body is an error object despite a success status, and
/// [`ProviderError::Protocol`] when it is JSON of the right shape with nothing usable in it,
/// and [`ProviderError::OutputTooLarge`] when the body or the answer in it passes a limit of
/// [`output`] (a transport should stop reading a body at [`MAX_RESPONSE_BODY_BYTES`] and
/// report it with [`ProviderError::OutputTooLarge`] rather than read it whole).
pub fn parse_response(kind: ProviderKind, body: &str) -> Result<ProviderResponse, ProviderError> {
    output::check_body_bytes(body.len())?;
    let response = (kind.protocol().parse_response)(body)?;
    check_output(&response)?;
    Ok(response)
}

/// The error for a non-streamed body that grew past [`MAX_RESPONSE_BODY_BYTES`] while being
/// read, for transports that count the bytes as they arrive and stop there.
pub fn body_too_large() -> ProviderError {
    ProviderError::OutputTooLarge {
        field: OutputField::Body,
    }
}

/// The largest body kept while waiting for the first server-sent event; see
/// [`ProviderStream::finish`].
const PLAIN_BODY_LIMIT: usize = 1 << 20;

/// How much of a larger body without events is kept, to quote its first words.
const EXCERPT_BYTES: usize = 4096;

/// The largest piece of a chunk [`ProviderStream::push`] decodes at once.
const PUSH_SLICE_BYTES: usize = 64 << 10;

/// How many characters of a body that is not a stream an error message quotes.
const EXCERPT_CHARS: usize = 200;

/// A streaming response being received: raw body bytes in, text deltas out, one
/// [`ProviderResponse`] at the end.
///
/// It combines an [`SseDecoder`] with the accumulator of the provider's protocol
/// ([`openai::OpenAiStream`] or [`anthropic::AnthropicStream`]), so the transport only has to
/// pass on the bytes exactly as they arrive, split anywhere.
#[derive(Debug, Clone)]
pub struct ProviderStream {
    kind: ProviderKind,
    decoder: SseDecoder,
    accumulator: Box<dyn StreamAccumulator>,
    bytes: usize,
    events: usize,
    /// The body so far, kept only until the first event arrives (and at most
    /// [`PLAIN_BODY_LIMIT`] bytes), so that a server which ignores `stream: true` and answers
    /// with one JSON document can still be understood, and an answer that is not a stream at
    /// all can be quoted.
    plain_body: Vec<u8>,
    /// The body outgrew [`PLAIN_BODY_LIMIT`] before any event: only its first
    /// [`EXCERPT_BYTES`] are kept, to quote.
    plain_body_cut: bool,
    /// The response's `Content-Type`, when the transport passed it on.
    content_type: Option<String>,
    /// The first error [`push`](Self::push) reported; the stream is dead after it.
    failure: Option<ProviderError>,
}

impl ProviderStream {
    /// Starts receiving a stream of `kind`'s protocol.
    pub fn new(kind: ProviderKind) -> Self {
        let accumulator = (kind.protocol().new_stream)();
        ProviderStream {
            kind,
            decoder: SseDecoder::new(),
            accumulator,
            bytes: 0,
            events: 0,
            plain_body: Vec::new(),
            plain_body_cut: false,
            content_type: None,
            failure: None,
        }
    }

    /// Tells the stream the response's `Content-Type`, so that an answer that is not an event
    /// stream (an HTML page, plain text) is reported as what it is rather than as a stream that
    /// was cut off. Without it, the first bytes decide.
    pub fn set_content_type(&mut self, content_type: Option<&str>) {
        self.content_type = content_type.map(str::to_string);
    }

    /// Feeds the next chunk of the response body and returns what can be shown already.
    ///
    /// # Errors
    ///
    /// The first error the stream carried: an error event from the provider
    /// ([`ProviderError::ApiError`]), a chunk that is not valid JSON
    /// ([`ProviderError::InvalidJson`]) or an event that breaks the protocol
    /// ([`ProviderError::Protocol`]). After an error the stream is dead: later calls and
    /// [`finish`](Self::finish) return the same error.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<StreamDelta>, ProviderError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        // A transport's chunks are small, but one given many megabytes at once is fed in
        // slices, so that an event that passes a limit is refused before the rest is decoded.
        let mut deltas = Vec::new();
        for slice in chunk.chunks(PUSH_SLICE_BYTES) {
            match self.push_slice(slice) {
                Ok(more) => deltas.extend(more),
                Err(error) => {
                    self.failure = Some(error.clone());
                    return Err(error);
                }
            }
        }
        Ok(deltas)
    }

    fn push_slice(&mut self, chunk: &[u8]) -> Result<Vec<StreamDelta>, ProviderError> {
        self.bytes += chunk.len();
        if self.events > 0 {
            // Events are flowing: the body is a stream.
            self.plain_body = Vec::new();
        } else if self.bytes <= PLAIN_BODY_LIMIT {
            self.plain_body.extend_from_slice(chunk);
        } else if !self.plain_body_cut {
            // Too large to be a plain answer: parsing a partial copy would only produce a
            // misleading JSON error, so only the beginning is kept, to quote.
            let room = EXCERPT_BYTES.saturating_sub(self.plain_body.len());
            self.plain_body
                .extend_from_slice(&chunk[..room.min(chunk.len())]);
            self.plain_body.truncate(EXCERPT_BYTES);
            self.plain_body_cut = true;
        }
        let mut deltas = Vec::new();
        for event in self.decoder.push(chunk) {
            self.accept(&event, &mut deltas)?;
        }
        // One event that never ends (a data line of hundreds of megabytes) is held by the
        // decoder until it does; it is refused once it is larger than any answer can be.
        output::check_body_bytes(self.decoder.pending_bytes())?;
        Ok(deltas)
    }

    fn accept(
        &mut self,
        event: &SseEvent,
        deltas: &mut Vec<StreamDelta>,
    ) -> Result<(), ProviderError> {
        self.events += 1;
        let produced = self.accumulator.push(event)?;
        deltas.extend(produced);
        Ok(())
    }

    /// Ends the stream (the transport saw the end of the body) and returns the whole answer.
    ///
    /// An event whose data lines all arrived but whose terminating blank line did not is still
    /// used: its content is complete, only the separator is missing. A line cut off without its
    /// line break is not used, since its content may be incomplete.
    ///
    /// If no event arrived at all but the body is a plain JSON document, it is parsed as a
    /// non-streaming response: some servers ignore `stream: true`, and some proxies report
    /// errors as a JSON body with a success status.
    ///
    /// # Errors
    ///
    /// [`ProviderError::NotAStream`] when no event arrived and the body is something else
    /// (its `Content-Type` is not `text/event-stream`, or without one it looks like HTML),
    /// [`ProviderError::StreamTruncated`] when the end-of-stream marker (`data: [DONE]` or
    /// `message_stop`) never arrived, or any error [`push`](Self::push) reported.
    pub fn finish(mut self) -> Result<ProviderResponse, ProviderError> {
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        if let SseEnd::MidEvent {
            pending: Some(event),
        } = self.decoder.finish()
        {
            let mut ignored = Vec::new();
            self.accept(&event, &mut ignored)?;
        }
        // A body of nothing but a byte order mark and blank lines holds no answer of any kind:
        // it is an empty stream, reported as cut off below, whatever its type claimed.
        let blank = String::from_utf8_lossy(&self.plain_body)
            .trim_start_matches('\u{feff}')
            .trim()
            .is_empty();
        if self.events == 0 && !blank {
            let body = String::from_utf8_lossy(&self.plain_body);
            if body.trim_start().starts_with('{') && !self.plain_body_cut {
                return parse_response(self.kind, &body);
            }
            if let Some(error) = not_a_stream(self.content_type.as_deref(), &body) {
                return Err(error);
            }
        }
        self.accumulator.finish()
    }

    /// Ends a stream whose body stopped arriving for `after_ms` milliseconds (the transport's
    /// idle timeout) and returns the whole answer if it was in fact complete.
    ///
    /// # Errors
    ///
    /// [`ProviderError::StreamStalled`] when the answer is incomplete, or any other error
    /// [`finish`](Self::finish) reports.
    pub fn finish_stalled(self, after_ms: u64) -> Result<ProviderResponse, ProviderError> {
        match self.finish() {
            Err(ProviderError::StreamTruncated {
                events,
                text_chars,
                tool_calls,
            }) => Err(ProviderError::StreamStalled {
                after_ms,
                events,
                text_chars,
                tool_calls,
            }),
            other => other,
        }
    }

    /// Ends a stream that was still arriving when the response's total deadline of `after_ms`
    /// milliseconds ran out (it trickled: never silent for the idle timeout, never finished),
    /// and returns the whole answer if it was in fact complete.
    ///
    /// # Errors
    ///
    /// [`ProviderError::StreamDeadline`] when the answer is incomplete, or any other error
    /// [`finish`](Self::finish) reports.
    pub fn finish_past_deadline(self, after_ms: u64) -> Result<ProviderResponse, ProviderError> {
        match self.finish() {
            Err(ProviderError::StreamTruncated {
                events,
                text_chars,
                tool_calls,
            }) => Err(ProviderError::StreamDeadline {
                after_ms,
                events,
                text_chars,
                tool_calls,
            }),
            other => other,
        }
    }

    /// The protocol this stream is decoded as.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// How many bytes of the body were fed so far.
    pub fn bytes_received(&self) -> usize {
        self.bytes
    }

    /// The answer text received so far; useful to keep what arrived when a stream breaks.
    pub fn text(&self) -> &str {
        self.accumulator.text()
    }
}

/// The error for a body without events that is not an event stream, if it is not one: its
/// `Content-Type` says something else, or without one it starts like an HTML page. A body
/// that claims to be an event stream but brought no event stays a cut-off stream.
fn not_a_stream(content_type: Option<&str>, body: &str) -> Option<ProviderError> {
    let mime = content_type
        .and_then(|value| value.split(';').next())
        .map(|mime| mime.trim().to_ascii_lowercase())
        .filter(|mime| !mime.is_empty());
    let start: String = body.trim_start().chars().take(15).collect();
    let looks_html = {
        let start = start.to_ascii_lowercase();
        start.starts_with("<!doctype html") || start.starts_with("<html")
    };
    let html = match mime.as_deref() {
        Some("text/event-stream") => return None,
        Some("text/html" | "application/xhtml+xml") => true,
        Some(_) => false,
        None if looks_html => true,
        None => return None,
    };
    let text = if html {
        page_text(body)
    } else {
        body.to_string()
    };
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(ProviderError::NotAStream {
        content_type: mime,
        html,
        excerpt: snippet(&words, EXCERPT_CHARS),
    })
}

/// The readable text of an HTML page: the markup, comments, scripts and styles left out, so
/// that an error message quotes what a person would see. It stops once there is enough text to
/// quote.
fn page_text(html: &str) -> String {
    let mut text = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        text.push(' ');
        if text.len() > EXCERPT_CHARS * 8 {
            return text;
        }
        let tag = &rest[open..];
        let close = if starts_with_ignoring_case(tag, "<!--") {
            "-->"
        } else if starts_with_ignoring_case(tag, "<script") {
            "</script>"
        } else if starts_with_ignoring_case(tag, "<style") {
            "</style>"
        } else {
            ">"
        };
        match find_ignoring_case(tag, close) {
            Some(at) => rest = &tag[at + close.len()..],
            None => return text,
        }
    }
    text.push_str(rest);
    text
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Where the ASCII `needle` first occurs in `text`, letters compared without case. The offset
/// is a character boundary, since the needle starts with an ASCII byte.
fn find_ignoring_case(text: &str, needle: &str) -> Option<usize> {
    text.as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// The headers every request starts with, followed by the configuration's extra headers (an
/// extra header replaces a built-in one of the same name, compared case-insensitively).
pub(crate) fn request_headers(
    built_in: Vec<(String, String)>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut headers = built_in;
    for (name, value) in extra {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    headers
}

/// Shortens `text` to at most `max_chars` characters for an error message, marking the cut.
pub(crate) fn snippet(text: &str, max_chars: usize) -> String {
    let trimmed = text.trim();
    match trimmed.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &trimmed[..cut]),
        None => trimmed.to_string(),
    }
}

#[cfg(test)]
mod stream_checks;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_api_keys() {
        let config = ProviderConfig::from_preset(Preset::OpenAi, Some("sk-secret-123".into()));
        let options = RequestOptions::new("gpt-4o-mini");
        let request = build_request(&config, &options, &[], &[]).unwrap();
        assert_eq!(
            request.header("Authorization"),
            Some("Bearer sk-secret-123")
        );
        let shown = format!("{request:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("<redacted>"));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
    }

    #[test]
    fn build_request_dispatches_on_kind() {
        let messages = [WireMessage::User("hi".into())];
        let options = RequestOptions::new("m");
        let openai = build_request(
            &ProviderConfig::from_preset(Preset::LmStudio, None),
            &options,
            &messages,
            &[],
        )
        .unwrap();
        assert_eq!(openai.url, "http://localhost:1234/v1/chat/completions");
        let anthropic = build_request(
            &ProviderConfig::from_preset(Preset::Anthropic, Some("k".into())),
            &options,
            &messages,
            &[],
        )
        .unwrap();
        assert_eq!(anthropic.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(anthropic.header("x-api-key"), Some("k"));
    }

    #[test]
    fn stream_falls_back_to_a_plain_json_body() {
        // A server that ignores `stream: true` answers with one JSON document.
        let body = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"plain"},"finish_reason":"stop"}]}"#;
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        assert_eq!(stream.push(&body[..10]).unwrap(), vec![]);
        assert_eq!(stream.push(&body[10..]).unwrap(), vec![]);
        let response = stream.finish().unwrap();
        assert_eq!(response.text, "plain");
        assert_eq!(response.finish_reason, FinishReason::Stop);
    }

    #[test]
    fn stream_reports_a_json_error_body_sent_with_success_status() {
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let mut stream = ProviderStream::new(ProviderKind::Anthropic);
        stream.push(body).unwrap();
        let error = stream.finish().unwrap_err();
        stream_checks::assert_transient_api_error(&error, "overloaded_error", "Overloaded");
    }

    #[test]
    fn stream_uses_a_complete_last_event_without_its_blank_line() {
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream
            .push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n")
            .unwrap();
        assert_eq!(stream.text(), "ok");
        let response = stream.finish().unwrap();
        assert_eq!(response.text, "ok");
    }

    #[test]
    fn stream_with_a_cut_last_line_is_truncated() {
        let body =
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DO";
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream.push(&body[..20]).unwrap();
        stream.push(&body[20..]).unwrap();
        assert_eq!(stream.bytes_received(), body.len());
        assert_eq!(
            stream.finish().unwrap_err(),
            ProviderError::StreamTruncated {
                events: 1,
                text_chars: 2,
                tool_calls: 0
            }
        );
    }

    #[test]
    fn an_oversized_body_without_events_is_truncated_not_misread() {
        // Over the limit nothing is kept, so the cut-off JSON is not parsed (which would give a
        // misleading JSON error): the stream simply never completed.
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream
            .push(b"{\"choices\":[{\"message\":{\"content\":\"")
            .unwrap();
        stream.push(&vec![b'a'; PLAIN_BODY_LIMIT]).unwrap();
        stream.push(b"\"}}]}").unwrap();
        assert!(matches!(
            stream.finish(),
            Err(ProviderError::StreamTruncated { events: 0, .. })
        ));
    }

    #[test]
    fn an_empty_body_is_a_truncated_stream() {
        let stream = ProviderStream::new(ProviderKind::Anthropic);
        assert_eq!(
            stream.finish().unwrap_err(),
            ProviderError::StreamTruncated {
                events: 0,
                text_chars: 0,
                tool_calls: 0
            }
        );
    }

    #[test]
    fn snippet_cuts_on_character_boundaries() {
        assert_eq!(snippet("  héllo wörld  ", 5), "héllo…");
        assert_eq!(snippet("short", 5), "short");
    }
}
