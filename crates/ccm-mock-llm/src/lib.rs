//! A real local mock LLM provider server for CCM's tests.
//!
//! `ccm-mock-llm` listens on `127.0.0.1` and speaks the provider protocols that CCM talks
//! to — OpenAI-compatible Chat Completions, Anthropic Messages, OpenAI-compatible
//! embeddings — streaming and not, with CORS for browser tests. Tests queue scripted
//! replies (text, tool calls, faults) and read back every request the client sent. It runs
//! in-process for Rust tests ([`MockServer`]) or as the `ccm-mock-llm` binary for
//! Playwright and other scripts.
//!
//! # The binary
//!
//! ```text
//! ccm-mock-llm [--port N] [--script FILE] [--idle-exit-secs N] [--max-lifetime-secs N]
//!              [--max-connections N] [--verbose]
//! ```
//!
//! The first line on stdout is exactly `CCM_MOCK_LLM_LISTENING http://127.0.0.1:PORT`
//! (flushed at once), so a script can read the port. The process stops by itself after
//! `--idle-exit-secs` without a request in flight (default 120), after
//! `--max-lifetime-secs` (default 1800), or on `POST /__mock/shutdown`; `0` disables either
//! limit. `--verbose` prints one line per request on stderr (a parent that asks for it
//! must read stderr, or a full pipe will stall requests).
//!
//! From Node (for example a Playwright global setup), after `cargo build -p ccm-mock-llm`:
//!
//! ```text
//! const child = spawn('target/debug/ccm-mock-llm', ['--idle-exit-secs', '300']);
//! const line = await new Promise((ok) => readline.createInterface({ input: child.stdout }).once('line', ok));
//! const base = line.split(' ')[1];                      // http://127.0.0.1:PORT
//! await fetch(`${base}/__mock/script`, { method: 'POST', body: JSON.stringify([{ text: 'hi' }]) });
//! // point the app at `${base}/v1` (OpenAI) or `${base}` (Anthropic); read `${base}/__mock/requests`
//! ```
//!
//! # Endpoints
//!
//! | endpoint | what it does |
//! |---|---|
//! | `POST …/chat/completions` | OpenAI Chat Completions under any prefix (`/v1`, `/api/v1`, …), `stream: true` for SSE, `stream_options.include_usage` for a usage chunk |
//! | `POST …/messages` | Anthropic Messages under any prefix, `stream: true` for SSE with `event:` lines |
//! | `POST …/embeddings` | OpenAI embeddings: `input` a string or an array of strings, optional `dimensions` (default 256) and `encoding_format` (`float` or `base64`) |
//! | `GET …/models` | the model list: `mock-model` unless `POST /__mock/models` set other names |
//! | `OPTIONS` any path | CORS preflight: `204` with the allowed methods and headers |
//! | `GET /__mock/health` | `{"ok", "queued", "requests", "uptime_ms"}` |
//! | `GET /__mock/requests` | the request log, an array of [`RecordedRequest`] |
//! | `GET /__mock/queue` | the replies still queued |
//! | `POST /__mock/script` | replace the queue with the script in the body |
//! | `POST /__mock/enqueue` | append the script in the body to the queue |
//! | `POST /__mock/reset` | clear the queue and the request log, and list `mock-model` again |
//! | `POST /__mock/models` | replace the listed model names with the JSON array of names in the body |
//! | `POST /__mock/shutdown` | answer, then stop |
//!
//! Every response carries `Access-Control-Allow-Origin: *`, exposes `Retry-After` and
//! `x-request-id`, and says `Connection: close`.
//!
//! # Script format
//!
//! A script is `{"replies": [...]}`, a bare array of replies, or a single reply object (the
//! same for `--script`, `/__mock/script` and `/__mock/enqueue`). Each chat request takes the
//! first queued reply that matches it; when none does it gets the default reply,
//! `Mock reply to: "<first 60 characters of the last user message>"` (or
//! `Summary (mock): "…"` for a summary request), so a test never hangs.
//!
//! ```json
//! {
//!   "replies": [
//!     {"label": "open", "tool_calls": [{"name": "start_effort", "arguments": {"name": "auth-bug"}}]},
//!     {"text": "Started the auth-bug effort."},
//!     {"tool_calls": [
//!         {"name": "switch_effort", "arguments": {"id": "e1"}},
//!         {"id": "call_fixed", "name": "expand_effort", "arguments": "{\"id\": "}
//!     ]},
//!     {"when": {"summary_request": true}, "text": "Decided to rotate the JWT secret."},
//!     {"when": {"last_user_contains": "rate"}, "fault": {"status": 429, "retry_after": 1}},
//!     {"text": "slow and cut", "fault": {"chunk_delay_ms": 50, "truncate_after_chunks": 3}},
//!     {"fault": {"delay_ms": 2000}},
//!     {"text": "broken", "fault": {"malformed_json": true}},
//!     {"fault": {"close_without_response": true}},
//!     {"fault": {"body": "<html><title>Sign in</title></html>", "content_type": "text/html"}}
//!   ]
//! }
//! ```
//!
//! - `text`, `tool_calls` (each `{"name", "arguments"?, "id"?}`), `finish_reason`, `label`,
//!   `when` and `fault` are all optional; see [`ScriptedReply`]. A string `arguments` is
//!   sent verbatim (so it can be malformed on purpose); any other value is serialised.
//! - `when` ([`ReplyMatch`]): `last_user_contains` (a case-sensitive substring of the last
//!   user message with text) and `summary_request`. Summary requests (no tools offered, and
//!   `summar` in the system prompt or the last user message) are their own channel: only
//!   replies with `"summary_request": true` answer them, and those answer nothing else.
//! - `fault` ([`Fault`]): `status` with `error_type`, `message`, `code`, `retry_after`
//!   (provider-shaped error body); `delay_ms` (before the headers); `chunk_delay_ms`;
//!   `trickle_ms` (the stream one byte at a time, never silent for long, never done in time);
//!   `truncate_after_chunks` (+ `truncate_abruptly`); `malformed_json` / `malformed_chunk`;
//!   `close_without_response`; `body` with `content_type` (a `200` answer that is not the
//!   protocol's, such as an HTML page).
//!
//! # What the responses contain
//!
//! - **Usage**: prompt tokens are the byte length of the compact JSON of the request's
//!   `messages`, `system` and `tools`, divided by four and rounded up
//!   ([`estimate_prompt_tokens`]); completion tokens are the bytes of the reply's text,
//!   tool names and arguments over four, at least 1. OpenAI reports them in `usage`
//!   (streams: in a final chunk with empty `choices` when `include_usage` is set); Anthropic
//!   in `message_start` (input) and `message_delta` (output).
//! - **Streams**: text is sent a word at a time; tool-call arguments in fragments of
//!   [`ARGUMENT_FRAGMENT_BYTES`] bytes, so a client must accumulate them. An OpenAI stream
//!   is: a role chunk, content chunks, per tool call a header chunk (`id`, `name`) then
//!   argument chunks, a finish chunk, the usage chunk if asked, `data: [DONE]`. An Anthropic
//!   stream is `message_start`, `ping`, per block `content_block_start` /
//!   `content_block_delta`… / `content_block_stop`, `message_delta`, `message_stop`. Bodies
//!   use chunked transfer encoding, one SSE event per HTTP chunk.
//! - **Ids**: `chatcmpl-mock-<seq>`, `msg_mock_<seq>`, `call_mock_<seq>_<i>`,
//!   `toolu_mock_<seq>_<i>` and header `x-request-id: req_mock_<seq>`, where `seq` is the
//!   request's position in the log.
//! - **Embeddings**: see [`embed`]; the same text always gives the same unit vector.
//!
//! # HTTP
//!
//! One request per connection. Bodies may use `Content-Length` or chunked transfer encoding
//! (`Expect: 100-continue` is honoured); heads are limited to 64 KiB and bodies to 32 MiB.
//! A malformed request gets a 4xx/5xx JSON error with a message, never a hung thread: reads
//! and writes time out after 30 s.
//!
//! # Example
//!
//! ```
//! use std::io::{Read, Write};
//! use ccm_mock_llm::{MockConfig, MockServer, ScriptedReply};
//!
//! let server = MockServer::start(MockConfig::default());
//! server.enqueue(ScriptedReply::text("Hello from the script"));
//!
//! let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
//! let mut tcp = std::net::TcpStream::connect(server.addr()).unwrap();
//! write!(
//!     tcp,
//!     "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
//!      Content-Length: {}\r\n\r\n{body}",
//!     body.len()
//! )
//! .unwrap();
//! let mut response = String::new();
//! tcp.read_to_string(&mut response).unwrap();
//!
//! assert!(response.starts_with("HTTP/1.1 200 OK"));
//! assert!(response.contains("Hello from the script"));
//! assert_eq!(server.requests().len(), 1);
//! ```
#![deny(missing_docs)]

mod anthropic;
mod embeddings;
mod http;
mod inspect;
mod openai;
mod record;
mod reply;
mod routes;
mod script;
mod server;
mod shared;

pub use embeddings::{cosine_similarity, embed, DEFAULT_DIMENSIONS, MAX_DIMENSIONS};
pub use inspect::estimate_prompt_tokens;
pub use record::{RecordedRequest, ReplySource, RequestKind};
pub use reply::ARGUMENT_FRAGMENT_BYTES;
pub use script::{
    load_script, parse_script, Fault, HugeField, HugeOutput, ReplyMatch, ScriptError,
    ScriptedReply, ScriptedToolCall, ToolArguments,
};
pub use server::{MockConfig, MockServer};

/// The prefix of the first stdout line of the binary; the base URL follows after a space.
pub const LISTENING_PREFIX: &str = "CCM_MOCK_LLM_LISTENING";
