//! Limits on what a model may send back, checked while the answer is read.
//!
//! The person's input has size limits (a message, a name, an attachment), and everything a
//! session stores must stay loadable: a stored text longer than the loader accepts would make
//! the whole session unreadable. A model's output is stored too (the answer as the assistant's
//! message, each tool call's name and arguments in the session's records), so it gets limits of
//! the same size as the person's, enforced here, where the bytes are turned into text: the
//! stream accumulators stop at the first event that passes a limit, so an answer of hundreds of
//! millions of characters is never held in memory, and a non-streamed body larger than any
//! answer within the limits can be is refused before it is parsed.
//!
//! Every field is a clear error, never a silent or marked truncation: a cut answer would be
//! stored as if the model had said it, and cut tool-call arguments are no longer the JSON the
//! model meant. The turn then fails like any other provider failure: nothing of it is stored
//! and the session is as it was before the turn, with the person's text kept for another try.
//!
//! Lengths are counted as JavaScript counts them (UTF-16 code units), the unit of every other
//! text limit of CCM, so a limit reads the same in Rust, in the npm package and in the app.

use crate::{ProviderError, ProviderResponse};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The longest answer text one response may carry, in characters: the same as the person's
/// message limit by default (`maxMessageChars`), a quarter of a million tokens or so, far more
/// than any model writes in one answer.
pub const MAX_ANSWER_CHARS: usize = 1_000_000;

/// The most characters of tool-call arguments one response may carry, all its calls together;
/// the same as a message, since the arguments become the texts a tool stores (a summary, a
/// note, an effort's description).
pub const MAX_TOOL_ARGUMENTS_CHARS: usize = 1_000_000;

/// The longest tool name or tool-call id, in characters: the same as the person's name limit
/// by default (`maxNameChars`). Real tool names are at most 64 characters.
pub const MAX_TOOL_NAME_CHARS: usize = 1_000;

/// The most tool calls one response may ask for. Each call is stored and answered; a real model
/// asks for a handful.
pub const MAX_TOOL_CALLS: usize = 1_000;

/// The largest body (or single stream event) that is read at all, in bytes. An answer within
/// the limits above fits with room to spare even when every character is written as a
/// six-byte `\uXXXX` escape (2 × 1,000,000 × 6 bytes, plus names and ids); anything larger
/// cannot be an answer within the limits, so it is refused before being parsed.
pub const MAX_RESPONSE_BODY_BYTES: usize = 32 << 20;

/// Which part of a model's output passed its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputField {
    /// The answer's text ([`MAX_ANSWER_CHARS`]).
    Answer,
    /// The tool calls' arguments, all together ([`MAX_TOOL_ARGUMENTS_CHARS`]).
    ToolArguments,
    /// A tool's name ([`MAX_TOOL_NAME_CHARS`]).
    ToolName,
    /// A tool call's id ([`MAX_TOOL_NAME_CHARS`]).
    ToolCallId,
    /// The number of tool calls ([`MAX_TOOL_CALLS`]).
    ToolCalls,
    /// The bytes of the body, or of one stream event ([`MAX_RESPONSE_BODY_BYTES`]).
    Body,
}

impl OutputField {
    /// The limit of this field.
    pub fn limit(self) -> usize {
        match self {
            OutputField::Answer => MAX_ANSWER_CHARS,
            OutputField::ToolArguments => MAX_TOOL_ARGUMENTS_CHARS,
            OutputField::ToolName | OutputField::ToolCallId => MAX_TOOL_NAME_CHARS,
            OutputField::ToolCalls => MAX_TOOL_CALLS,
            OutputField::Body => MAX_RESPONSE_BODY_BYTES,
        }
    }

    /// What passed the limit, as the error message says it.
    fn described(self) -> String {
        let limit = thousands(self.limit());
        match self {
            OutputField::Answer => {
                format!("The model's answer is longer than {limit} characters, the most one answer may have")
            }
            OutputField::ToolArguments => format!(
                "The arguments of the model's tool calls are longer than {limit} characters together, the most one answer may carry"
            ),
            OutputField::ToolName => {
                format!("The model named a tool with more than {limit} characters, the most a tool name may have")
            }
            OutputField::ToolCallId => {
                format!("The model gave a tool call an id of more than {limit} characters, the most an id may have")
            }
            OutputField::ToolCalls => {
                format!("The model asked for more than {limit} tool calls in one answer, the most one answer may have")
            }
            OutputField::Body => format!(
                "The provider's answer is larger than {} MiB, more than an answer within the limits ({} characters of text and {} of tool-call arguments) can be",
                MAX_RESPONSE_BODY_BYTES >> 20,
                thousands(MAX_ANSWER_CHARS),
                thousands(MAX_TOOL_ARGUMENTS_CHARS)
            ),
        }
    }

    /// The way out, as the error message says it.
    fn remedy(self) -> &'static str {
        match self {
            OutputField::Answer | OutputField::Body => {
                "Ask for a shorter answer, or lower the answer's token limit (max_tokens), and try again"
            }
            OutputField::ToolArguments => {
                "Ask for the work in smaller pieces (a long text belongs in an attachment), or lower the answer's token limit (max_tokens), and try again"
            }
            OutputField::ToolName | OutputField::ToolCallId | OutputField::ToolCalls => {
                "The provider or model is misbehaving; try again, or choose another model"
            }
        }
    }
}

/// The message of [`ProviderError::OutputTooLarge`].
pub(crate) fn too_large_message(field: OutputField) -> String {
    format!(
        "{}, so reading it was stopped: the turn failed and nothing of it was stored. {}.",
        field.described(),
        field.remedy()
    )
}

impl fmt::Display for OutputField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputField::Answer => "answer",
            OutputField::ToolArguments => "tool_arguments",
            OutputField::ToolName => "tool_name",
            OutputField::ToolCallId => "tool_call_id",
            OutputField::ToolCalls => "tool_calls",
            OutputField::Body => "body",
        })
    }
}

/// How long `text` is as JavaScript counts it (UTF-16 code units).
pub fn js_length(text: &str) -> usize {
    // ASCII is the common case and one unit per byte; the sum is only needed past it.
    if text.is_ascii() {
        return text.len();
    }
    text.chars().map(char::len_utf16).sum()
}

fn too_large(field: OutputField) -> ProviderError {
    ProviderError::OutputTooLarge { field }
}

/// Checks a whole answer against every limit.
///
/// # Errors
///
/// [`ProviderError::OutputTooLarge`] naming the first field over its limit.
pub fn check_output(response: &ProviderResponse) -> Result<(), ProviderError> {
    let mut meter = OutputMeter::default();
    meter.text(&response.text)?;
    for call in &response.tool_calls {
        meter.call_started()?;
        meter.name(&call.name)?;
        meter.id(&call.id)?;
        meter.arguments(&call.arguments)?;
    }
    Ok(())
}

/// Refuses a body (or a pending stream event) of `bytes` bytes that no answer within the
/// limits can need.
pub(crate) fn check_body_bytes(bytes: usize) -> Result<(), ProviderError> {
    if bytes > MAX_RESPONSE_BODY_BYTES {
        return Err(too_large(OutputField::Body));
    }
    Ok(())
}

/// Counts a streamed answer as it grows, so that the stream stops at the first event that
/// passes a limit instead of holding the rest.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputMeter {
    answer: usize,
    arguments: usize,
    calls: usize,
}

impl OutputMeter {
    /// Answer text was added.
    pub(crate) fn text(&mut self, added: &str) -> Result<(), ProviderError> {
        self.answer += js_length(added);
        if self.answer > MAX_ANSWER_CHARS {
            return Err(too_large(OutputField::Answer));
        }
        Ok(())
    }

    /// Arguments text was added to one of the calls.
    pub(crate) fn arguments(&mut self, added: &str) -> Result<(), ProviderError> {
        self.arguments += js_length(added);
        if self.arguments > MAX_TOOL_ARGUMENTS_CHARS {
            return Err(too_large(OutputField::ToolArguments));
        }
        Ok(())
    }

    /// A new tool call began.
    pub(crate) fn call_started(&mut self) -> Result<(), ProviderError> {
        self.calls += 1;
        if self.calls > MAX_TOOL_CALLS {
            return Err(too_large(OutputField::ToolCalls));
        }
        Ok(())
    }

    /// A tool call's name arrived.
    pub(crate) fn name(&self, name: &str) -> Result<(), ProviderError> {
        short(name, OutputField::ToolName)
    }

    /// A tool call's id arrived.
    pub(crate) fn id(&self, id: &str) -> Result<(), ProviderError> {
        short(id, OutputField::ToolCallId)
    }
}

fn short(text: &str, field: OutputField) -> Result<(), ProviderError> {
    // A UTF-16 count never exceeds the byte count, so short texts need no count.
    if text.len() > MAX_TOOL_NAME_CHARS && js_length(text) > MAX_TOOL_NAME_CHARS {
        return Err(too_large(field));
    }
    Ok(())
}

/// `1234567` → `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FinishReason, ToolCall};

    fn answer(text: String, calls: Vec<ToolCall>) -> ProviderResponse {
        ProviderResponse {
            text,
            tool_calls: calls,
            finish_reason: FinishReason::Stop,
            usage: None,
        }
    }

    fn call(name: &str, arguments: String) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn every_field_is_checked_at_its_limit_and_not_before() {
        let at = |n| "a".repeat(n);
        assert!(check_output(&answer(at(MAX_ANSWER_CHARS), vec![])).is_ok());
        let over = check_output(&answer(at(MAX_ANSWER_CHARS + 1), vec![])).unwrap_err();
        assert_eq!(over, too_large(OutputField::Answer));
        let message = over.to_string();
        assert!(
            message.contains("longer than 1,000,000 characters"),
            "{message}"
        );
        assert!(message.contains("nothing of it was stored"), "{message}");
        assert!(message.contains("max_tokens"), "{message}");

        let half = MAX_TOOL_ARGUMENTS_CHARS / 2;
        let two = vec![call("a", at(half)), call("b", at(half))];
        assert!(check_output(&answer(String::new(), two)).is_ok());
        let three = vec![call("a", at(half)), call("b", at(half)), call("c", at(1))];
        assert_eq!(
            check_output(&answer(String::new(), three)),
            Err(too_large(OutputField::ToolArguments))
        );
        assert_eq!(
            check_output(&answer(String::new(), vec![call(&at(1_001), "{}".into())])),
            Err(too_large(OutputField::ToolName))
        );
        let calls = (0..=MAX_TOOL_CALLS)
            .map(|_| call("a", "{}".into()))
            .collect();
        assert_eq!(
            check_output(&answer(String::new(), calls)),
            Err(too_large(OutputField::ToolCalls))
        );
    }

    #[test]
    fn lengths_are_counted_in_utf16_units_as_javascript_does() {
        assert_eq!(js_length("héllo"), 5);
        assert_eq!(js_length("🦀"), 2);
        // Half a million crabs are a million UTF-16 units: at the limit, not over it.
        let crabs = "🦀".repeat(MAX_ANSWER_CHARS / 2);
        assert!(check_output(&answer(crabs.clone() + "", vec![])).is_ok());
        assert!(check_output(&answer(crabs + "x", vec![])).is_err());
        // A name of 1,000 two-byte characters is 2,000 bytes but within its limit.
        assert!(check_output(&answer(
            String::new(),
            vec![call(&"é".repeat(1_000), "{}".into())]
        ))
        .is_ok());
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
