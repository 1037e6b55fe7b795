//! A scripted reply turned into what both protocol renderers need, plus the pieces they share:
//! SSE events, the deliberate fragmentation of streamed text and arguments, and the default
//! reply used when the queue has nothing for a request.

use serde_json::Value;

use crate::inspect::{bytes_to_tokens, ChatFacts, Protocol};
use crate::script::ScriptedReply;

/// The size, in bytes, of the fragments a streamed tool-call arguments string is cut into.
///
/// Five bytes is small on purpose: it cuts keys, strings and escapes in the middle, so a
/// client that parses each delta on its own instead of accumulating them fails at once.
/// Cuts fall on UTF-8 character boundaries, so a fragment can be a little longer than this
/// when it holds a multi-byte character.
pub const ARGUMENT_FRAGMENT_BYTES: usize = 5;

/// Streamed text is cut after each whitespace run, and words longer than this are cut too.
const MAX_TEXT_FRAGMENT_BYTES: usize = 24;

/// A tool call ready to render.
#[derive(Debug, Clone)]
pub(crate) struct PlannedCall {
    pub id: String,
    pub name: String,
    /// The arguments string exactly as it goes on the wire (possibly malformed on purpose).
    pub arguments: String,
    /// The arguments as a JSON value, for Anthropic's non-streaming `input`.
    pub input: Value,
}

/// A reply ready to render in either protocol.
#[derive(Debug, Clone)]
pub(crate) struct PlannedReply {
    pub text: String,
    pub calls: Vec<PlannedCall>,
    pub finish_reason: Option<String>,
    pub completion_tokens: u64,
}

impl PlannedReply {
    /// Resolves ids and argument strings. Generated ids include the request's sequence
    /// number, so they are unique within a server's life and identical between runs.
    pub fn new(reply: &ScriptedReply, seq: u64, protocol: Protocol) -> Self {
        let prefix = match protocol {
            Protocol::OpenAi => "call_mock",
            Protocol::Anthropic => "toolu_mock",
        };
        let calls: Vec<PlannedCall> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| PlannedCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("{prefix}_{seq}_{i}")),
                name: call.name.clone(),
                arguments: call.arguments.to_wire_string(),
                input: call.arguments.to_input_value(),
            })
            .collect();
        let text = reply.text.clone().unwrap_or_default();
        let output_bytes = text.len()
            + calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        Self {
            text,
            calls,
            finish_reason: reply.finish_reason.clone(),
            // A real model spends at least one token even on an empty answer.
            completion_tokens: bytes_to_tokens(output_bytes).max(1),
        }
    }
}

/// Response-wide values shared by every rendered body or event.
#[derive(Debug, Clone)]
pub(crate) struct RenderContext {
    /// The response id (`chatcmpl-mock-<seq>` / `msg_mock_<seq>`).
    pub id: String,
    pub model: String,
    /// Unix seconds, for OpenAI's `created`.
    pub created: u64,
    pub prompt_tokens: u64,
    pub include_usage: bool,
}

/// One server-sent event: an optional `event:` name and one `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub event: Option<&'static str>,
    pub data: String,
    /// Whether the event carries model output; the default target of a malformed chunk.
    pub carries_content: bool,
}

impl SseEvent {
    pub fn data(data: String, carries_content: bool) -> Self {
        Self {
            event: None,
            data,
            carries_content,
        }
    }

    pub fn named(event: &'static str, data: String, carries_content: bool) -> Self {
        Self {
            event: Some(event),
            data,
            carries_content,
        }
    }

    /// The wire form; `malformed` cuts the JSON of the `data:` line in half.
    pub fn encode(&self, malformed: bool) -> Vec<u8> {
        let data = if malformed {
            cut_in_half(&self.data)
        } else {
            self.data.as_str()
        };
        let mut out = String::new();
        if let Some(name) = self.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(data);
        out.push_str("\n\n");
        out.into_bytes()
    }
}

/// The first half of a JSON text, cut on a character boundary. A proper prefix of a JSON
/// object or array is never valid JSON, which is exactly the malformation wanted.
pub(crate) fn cut_in_half(text: &str) -> &str {
    let mut cut = text.len() / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// Stands in for the grown part of a [`HugeOutput`](crate::HugeOutput) while a reply is
/// rendered: one private-use character, which JSON leaves unescaped and which is always a
/// fragment of its own, so the event that carries it can be sent again and again with a block
/// of letters in its place.
pub(crate) const PLACEHOLDER: char = '\u{E000}';

/// Streamed text pieces: each word with the whitespace after it, long words cut further.
pub(crate) fn text_fragments(text: &str) -> Vec<&str> {
    around_placeholders(text, |part| {
        part.split_inclusive(char::is_whitespace)
            .flat_map(|piece| split_by_bytes(piece, MAX_TEXT_FRAGMENT_BYTES))
            .collect()
    })
}

/// Streamed arguments pieces of [`ARGUMENT_FRAGMENT_BYTES`] bytes.
pub(crate) fn argument_fragments(arguments: &str) -> Vec<&str> {
    around_placeholders(arguments, |part| {
        split_by_bytes(part, ARGUMENT_FRAGMENT_BYTES)
    })
}

/// Cuts `text` with `cut`, but makes every [`PLACEHOLDER`] a piece of its own.
fn around_placeholders<'a>(text: &'a str, cut: impl Fn(&'a str) -> Vec<&'a str>) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(PLACEHOLDER) {
        pieces.extend(cut(&rest[..at]));
        let end = at + PLACEHOLDER.len_utf8();
        pieces.push(&rest[at..end]);
        rest = &rest[end..];
    }
    pieces.extend(cut(rest));
    pieces
}

/// Splits into pieces of at most `max` bytes where possible, never inside a character.
fn split_by_bytes(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = max.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (head, tail) = rest.split_at(cut);
        pieces.push(head);
        rest = tail;
    }
    pieces
}

/// The reply used when no queued reply matches: deterministic text that echoes a digest of
/// the last user message, so tests never hang and can still tell turns apart.
pub(crate) fn default_reply(facts: &ChatFacts) -> ScriptedReply {
    let digest = digest(&facts.last_user_text);
    let text = if facts.summary_request {
        format!("Summary (mock): {digest}")
    } else {
        format!("Mock reply to: {digest}")
    };
    ScriptedReply::text(text).labelled("default")
}

/// The first 60 characters of the text with whitespace collapsed, quoted.
pub(crate) fn digest(text: &str) -> String {
    const MAX_CHARS: usize = 60;
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > MAX_CHARS {
        let cut: String = collapsed.chars().take(MAX_CHARS).collect();
        format!("\"{cut}…\"")
    } else {
        format!("\"{collapsed}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_rejoin_to_the_original() {
        let args = r#"{"name":"auth-bug","note":"héllo wörld ✓"}"#;
        let pieces = argument_fragments(args);
        assert!(pieces.len() > 5);
        assert_eq!(pieces.concat(), args);
        assert!(pieces
            .iter()
            .all(|p| p.len() <= ARGUMENT_FRAGMENT_BYTES + 3));
        let text = "Hello there,  a-very-long-word-that-needs-to-be-cut-twice ok";
        assert_eq!(text_fragments(text).concat(), text);
        assert!(text_fragments("").is_empty());
    }

    #[test]
    fn halves_are_never_valid_json() {
        for text in [r#"{"a":1}"#, "{}", r#"{"é":"ü"}"#] {
            assert!(serde_json::from_str::<Value>(cut_in_half(text)).is_err());
        }
    }

    #[test]
    fn digest_is_short_and_collapsed() {
        assert_eq!(digest("  hi\n there "), "\"hi there\"");
        assert_eq!(digest(&"x".repeat(100)).chars().count(), 63);
    }
}
