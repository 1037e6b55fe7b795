//! The request log: what the client sent and what the server answered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::script::ScriptedReply;

/// What kind of endpoint a logged request was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A path ending in `/chat/completions` (OpenAI-compatible).
    OpenaiChat,
    /// A path ending in `/messages` (Anthropic).
    AnthropicMessages,
    /// A path ending in `/embeddings` (OpenAI-compatible).
    Embeddings,
    /// A path ending in `/models`.
    Models,
    /// A CORS preflight (`OPTIONS`) to any path.
    Preflight,
    /// Anything else (answered with 404 or 405).
    Other,
}

/// Where the reply to a chat request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplySource {
    /// A reply taken from the scripted queue.
    Script,
    /// The default reply, because no queued reply matched.
    Default,
}

/// One request as the server received it, in the order received.
///
/// `GET /__mock/requests` returns an array of these as JSON, with the field names below.
/// Requests to `/__mock/*` are not logged, and neither are requests too malformed to parse
/// (those only get a 400).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// 0-based position in the log; also part of generated ids (`chatcmpl-mock-<seq>`).
    pub seq: u64,
    /// Milliseconds between the server's start and the moment the request was read, so
    /// tests can check the spacing of retries.
    pub at_ms: u64,
    /// The HTTP method.
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The query string without `?`, when there was one.
    pub query: Option<String>,
    /// Headers by lower-case name; repeated headers are joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON, when it was JSON.
    pub body: Option<Value>,
    /// The body as (lossy UTF-8) text, only when it was not empty and not JSON.
    pub body_text: Option<String>,
    /// The endpoint kind.
    pub kind: RequestKind,
    /// Chat requests: whether the client asked for a stream.
    pub stream: bool,
    /// Chat requests: whether it was recognised as a summary request.
    pub summary_request: bool,
    /// Chat requests: the last user text that matching saw.
    pub last_user_text: Option<String>,
    /// Chat requests: where the reply came from.
    pub reply_source: Option<ReplySource>,
    /// Chat requests: the reply that was served (for the default reply, the generated one).
    pub reply: Option<ScriptedReply>,
    /// The status the server answered with; `None` when it closed without a response.
    pub status: Option<u16>,
}

impl RecordedRequest {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The names of the tools offered in the body (`tools[].function.name` for OpenAI,
    /// `tools[].name` for Anthropic); empty when there were none.
    pub fn tool_names(&self) -> Vec<String> {
        self.body
            .as_ref()
            .and_then(|b| b.get("tools"))
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| {
                        t.pointer("/function/name")
                            .or_else(|| t.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The `messages` array of a chat body; empty when there is none.
    pub fn messages(&self) -> &[Value] {
        self.body
            .as_ref()
            .and_then(|b| b.get("messages"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}
