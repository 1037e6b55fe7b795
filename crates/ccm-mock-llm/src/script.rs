//! The script format: scripted replies, the faults they inject and the requests they apply to.
//!
//! Every type here is plain data with public fields, so tests can build replies either from
//! JSON (a `--script` file, `POST /__mock/script`, `POST /__mock/enqueue`) or in Rust with the
//! small builder methods. Unknown fields are rejected, because a typo such as `tool_call`
//! instead of `tool_calls` would otherwise be ignored silently and the test would pass or fail
//! for the wrong reason.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// One scripted answer to a chat request (OpenAI or Anthropic).
///
/// A reply carries any mix of `text` and `tool_calls`; with neither it is an empty assistant
/// message, which is how a test produces "the model returned nothing usable". A `fault`
/// changes how the reply is delivered (or replaces it with an error), and `when` restricts
/// which requests may consume it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReply {
    /// A free name shown in the request log, so a failing test can tell which reply was served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Which requests this reply may answer; see [`ReplyMatch`]. Absent means any ordinary
    /// (non-summary) chat request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<ReplyMatch>,
    /// The assistant's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, in order. Several calls in one reply are sent as parallel tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Overrides the finish reason (`finish_reason` for OpenAI, `stop_reason` for Anthropic),
    /// for example `"length"` or `"max_tokens"`. By default it is `tool_calls` / `tool_use`
    /// when the reply has tool calls and `stop` / `end_turn` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// A fault to inject while serving this reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Grows one field of the reply to a given number of characters, written to the socket
    /// as it is sent rather than built in memory, so a test can send an answer of hundreds of
    /// millions of characters; see [`HugeOutput`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge: Option<HugeOutput>,
}

impl ScriptedReply {
    /// A plain text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// An answer consisting of one tool call whose arguments are the given JSON value.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::tool_calls(vec![ScriptedToolCall::new(name, arguments)])
    }

    /// An answer consisting of several tool calls.
    pub fn tool_calls(calls: Vec<ScriptedToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::default()
        }
    }

    /// A reply that is only a fault (an error status, a dropped connection, …).
    pub fn fault(fault: Fault) -> Self {
        Self {
            fault: Some(fault),
            ..Self::default()
        }
    }

    /// Adds or replaces the fault injected while serving this reply.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// Restricts the reply to requests whose last user message contains `needle`.
    pub fn when_last_user_contains(mut self, needle: impl Into<String>) -> Self {
        self.when
            .get_or_insert_with(ReplyMatch::default)
            .last_user_contains = Some(needle.into());
        self
    }

    /// Restricts the reply to summary requests (see [`ReplyMatch::summary_request`]).
    pub fn for_summary_requests(mut self) -> Self {
        self.when
            .get_or_insert_with(ReplyMatch::default)
            .summary_request = true;
        self
    }

    /// Grows `field` to `chars` characters when the reply is sent (see [`HugeOutput`]).
    pub fn with_huge(mut self, field: HugeField, chars: u64) -> Self {
        self.huge = Some(HugeOutput { field, chars });
        self
    }

    /// Sets the label shown in the request log.
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Checks the values serde cannot check by itself.
    fn validate(&self) -> Result<(), String> {
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.name.trim().is_empty() {
                return Err(format!("tool_calls[{i}]: the tool name is empty"));
            }
        }
        if let Some(huge) = &self.huge {
            if huge.field == HugeField::Arguments && self.tool_calls.is_empty() {
                return Err("huge.field \"arguments\" needs a tool call to grow".to_string());
            }
            if huge.chars > HugeOutput::MAX_CHARS {
                return Err(format!(
                    "huge.chars {} is more than the {} a reply may be grown to",
                    huge.chars,
                    HugeOutput::MAX_CHARS
                ));
            }
        }
        if let Some(fault) = &self.fault {
            if let Some(status) = fault.status {
                if !(400..=599).contains(&status) {
                    return Err(format!(
                        "fault.status {status} is not an error status (use 400-599)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One field of a reply grown to a size no test would want to build: the answer's text, or
/// the first tool call's arguments, which become `{"data":"xxx…"}` with `chars` letters in
/// the string. The letters are written in blocks as the response goes out (as many stream
/// events as needed, or one chunked JSON body), so the server's memory stays small whatever
/// the size. The faults that shape a stream (chunk delays, trickling, truncation, malformed
/// JSON) do not apply to a grown reply; the others do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HugeOutput {
    /// Which field grows.
    pub field: HugeField,
    /// How many characters the grown part has.
    pub chars: u64,
}

impl HugeOutput {
    /// The largest size a field may be grown to (a terabyte of letters would take hours to
    /// send; a typo should fail at once instead).
    pub const MAX_CHARS: u64 = 1 << 34;
}

/// The field a [`HugeOutput`] grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HugeField {
    /// The answer's text.
    Text,
    /// The first tool call's arguments.
    Arguments,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The call id; generated (`call_mock_<seq>_<i>` / `toolu_mock_<seq>_<i>`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool (function) name.
    pub name: String,
    /// The arguments; `{}` when absent.
    #[serde(default)]
    pub arguments: ToolArguments,
}

impl ScriptedToolCall {
    /// A call with JSON arguments (normally an object).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments: ToolArguments::Json(arguments),
        }
    }

    /// A call whose arguments string is sent exactly as given, valid JSON or not.
    pub fn raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments: ToolArguments::Raw(arguments.into()),
        }
    }
}

/// The arguments of a scripted tool call.
///
/// In JSON a string is taken as the raw arguments text (which is also how OpenAI puts
/// arguments on the wire), and anything else as a JSON value that the server serialises.
/// So `"arguments": {"id": 3}` and `"arguments": "{\"id\": 3}"` send the same bytes, and
/// `"arguments": "{\"id\": "` sends malformed JSON on purpose.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArguments {
    /// A JSON value, serialised compactly when sent.
    Json(Value),
    /// A raw string sent verbatim; it need not be valid JSON.
    Raw(String),
}

impl Default for ToolArguments {
    fn default() -> Self {
        ToolArguments::Json(Value::Object(serde_json::Map::new()))
    }
}

impl ToolArguments {
    /// The arguments as the string that goes on the wire.
    pub fn to_wire_string(&self) -> String {
        match self {
            ToolArguments::Json(value) => value.to_string(),
            ToolArguments::Raw(text) => text.clone(),
        }
    }

    /// The arguments as a JSON value, for Anthropic's non-streaming `tool_use.input`.
    ///
    /// A raw string that parses is returned parsed; one that does not parse cannot be an
    /// object, so it is returned as a JSON string, which a client expecting an object must
    /// reject just as it would reject malformed streamed JSON.
    pub fn to_input_value(&self) -> Value {
        match self {
            ToolArguments::Json(value) => value.clone(),
            ToolArguments::Raw(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
        }
    }
}

impl Serialize for ToolArguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolArguments::Json(value) => value.serialize(serializer),
            ToolArguments::Raw(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for ToolArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::String(text) => ToolArguments::Raw(text),
            other => ToolArguments::Json(other),
        })
    }
}

/// Which requests a scripted reply applies to.
///
/// A request takes the *first* queued reply whose match accepts it, so a reply meant for a
/// later, different request can wait in the queue while others are served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyMatch {
    /// Only requests whose last user message contains this substring (case-sensitive).
    ///
    /// The last user message is the last `user` message with text in it; for Anthropic a
    /// `user` message holding only `tool_result` blocks is skipped, so this sees the same
    /// human text under both protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_contains: Option<String>,
    /// `true`: only summary requests; `false` (the default): only other requests.
    ///
    /// A summary request is one that offers no tools and whose system prompt or last user
    /// message contains `summar` (any case: summary, summarise, summarize). Summary requests
    /// form their own channel on purpose: an unconditional reply queued for the next chat
    /// round is never consumed by the summary request that a `close_effort` call triggers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub summary_request: bool,
}

/// A fault injected while serving a scripted reply. All fields are optional and combine.
///
/// The order of effects is: `delay_ms`, then `close_without_response`, then `status` (an
/// error response ends it there), then `body` (which ends it too), then the normal reply with
/// the other faults applied.
/// `delay_ms` and `close_without_response` also apply to non-streaming requests; the
/// `chunk_delay_ms` and truncation faults only affect streams.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Answer with this HTTP status (400-599) and a provider-shaped error body instead of the
    /// reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The error `type` in the body; defaults to the provider's usual type for the status
    /// (for example `rate_limit_error` for 429 on Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The error message; defaults to a sentence naming the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// OpenAI's error `code` (for example `rate_limit_exceeded`); ignored for Anthropic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The `Retry-After` header sent with the error status: seconds as a number, or any
    /// string (such as an HTTP date) sent as is.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_number"
    )]
    pub retry_after: Option<String>,
    /// Wait this long before sending the response headers (or closing the connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// In a stream, wait this long before every event after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_delay_ms: Option<u64>,
    /// In a stream, send the body one byte at a time with this pause before each byte: a
    /// stream that is never silent for long (so an idle timeout never fires) and takes
    /// (bytes × pause) to finish, which is what a total deadline is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trickle_ms: Option<u64>,
    /// In a stream, send only the first N events (SSE `data:` blocks, counting every kind
    /// including `[DONE]`), then end the response without the protocol's terminator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate_after_chunks: Option<usize>,
    /// With `truncate_after_chunks`: close the socket in the middle of the chunked HTTP body
    /// (the client sees an incomplete body, as when a connection drops; this response omits
    /// `Connection: close` so that clients which trust a closing connection's end, such as
    /// Node's fetch, report it too). Without it the HTTP body ends cleanly and only the
    /// missing `[DONE]` / `message_stop` tells.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncate_abruptly: bool,
    /// Send malformed JSON: a non-streaming body cut in half, or in a stream the event chosen
    /// by `malformed_chunk` (by default the first event that carries content).
    #[serde(default, skip_serializing_if = "is_false")]
    pub malformed_json: bool,
    /// In a stream, the 0-based index of the event whose JSON is cut in half. Setting it
    /// implies `malformed_json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_chunk: Option<usize>,
    /// Read the request, then close the connection without sending a single byte.
    #[serde(default, skip_serializing_if = "is_false")]
    pub close_without_response: bool,
    /// Answer `200` with this body instead of the reply, whatever the request asked for: what
    /// a web server, a login page or a proxy in front of the API sends (for example an HTML
    /// page). Its type is `content_type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The `Content-Type` of `body`; `text/html; charset=utf-8` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

impl Fault {
    /// A `200` answer with `body` of type `content_type` instead of the reply.
    pub fn body(body: impl Into<String>, content_type: impl Into<String>) -> Self {
        Self {
            body: Some(body.into()),
            content_type: Some(content_type.into()),
            ..Self::default()
        }
    }

    /// An error response with this status.
    pub fn status(status: u16) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }

    /// Adds a `Retry-After` header, in seconds.
    pub fn retry_after_secs(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs.to_string());
        self
    }

    /// Sets the error message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// A delay before the response headers.
    pub fn delay_ms(ms: u64) -> Self {
        Self {
            delay_ms: Some(ms),
            ..Self::default()
        }
    }

    /// A delay between stream events.
    pub fn chunk_delay_ms(ms: u64) -> Self {
        Self {
            chunk_delay_ms: Some(ms),
            ..Self::default()
        }
    }

    /// A stream sent one byte at a time, `ms` apart.
    pub fn trickle_ms(ms: u64) -> Self {
        Self {
            trickle_ms: Some(ms),
            ..Self::default()
        }
    }

    /// A stream cut off after `chunks` events, with a clean end of the HTTP body.
    pub fn truncate_after(chunks: usize) -> Self {
        Self {
            truncate_after_chunks: Some(chunks),
            ..Self::default()
        }
    }

    /// Malformed JSON in the body or in the first content event of a stream.
    pub fn malformed_json() -> Self {
        Self {
            malformed_json: true,
            ..Self::default()
        }
    }

    /// A connection closed with no response at all.
    pub fn close_without_response() -> Self {
        Self {
            close_without_response: true,
            ..Self::default()
        }
    }
}

/// Accepts `"retry_after": 2` as well as `"retry_after": "2"`.
fn string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text)),
        Value::Number(number) => Ok(Some(number.to_string())),
        other => Err(de::Error::custom(format!(
            "retry_after must be a number of seconds or a string, not {other}"
        ))),
    }
}

/// For `skip_serializing_if`: leave `false` flags out of serialised replies.
fn is_false(value: &bool) -> bool {
    !*value
}

/// A script that could not be read or parsed, with a message that names the bad reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    message: String,
}

impl ScriptError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The human-readable explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScriptError {}

/// Parses a script: `{"replies": [...]}`, a bare array of replies, or one reply object.
///
/// # Errors
/// Returns a [`ScriptError`] naming the offending reply when the text is not JSON, a reply
/// has an unknown field or a wrong type, or a value is out of range.
///
/// # Examples
/// ```
/// let replies = ccm_mock_llm::parse_script(
///     r#"{"replies": [{"text": "hi"}, {"fault": {"status": 429, "retry_after": 1}}]}"#,
/// )
/// .unwrap();
/// assert_eq!(replies.len(), 2);
/// assert_eq!(replies[1].fault.as_ref().unwrap().retry_after.as_deref(), Some("1"));
/// ```
pub fn parse_script(text: &str) -> Result<Vec<ScriptedReply>, ScriptError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ScriptError::new(format!("the script is not valid JSON: {e}")))?;
    script_from_value(value)
}

/// Reads and parses a script file (see [`parse_script`]).
///
/// # Errors
/// Returns a [`ScriptError`] when the file cannot be read or does not parse.
pub fn load_script(path: impl AsRef<Path>) -> Result<Vec<ScriptedReply>, ScriptError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScriptError::new(format!("cannot read script {}: {e}", path.display())))?;
    parse_script(&text).map_err(|e| ScriptError::new(format!("{}: {}", path.display(), e)))
}

/// Like [`parse_script`], for an already parsed JSON value.
pub(crate) fn script_from_value(value: Value) -> Result<Vec<ScriptedReply>, ScriptError> {
    let items =
        match value {
            Value::Array(items) => items,
            Value::Object(mut map) if map.contains_key("replies") => {
                let replies = map.remove("replies").unwrap_or(Value::Null);
                if let Some(extra) = map.keys().next() {
                    return Err(ScriptError::new(format!(
                        "unknown top-level field `{extra}` (a script object has only `replies`)"
                    )));
                }
                match replies {
                    Value::Array(items) => items,
                    _ => return Err(ScriptError::new("`replies` must be an array of replies")),
                }
            }
            single @ Value::Object(_) => vec![single],
            _ => return Err(ScriptError::new(
                "a script is an object with `replies`, an array of replies, or one reply object",
            )),
        };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let reply: ScriptedReply = serde_json::from_value(item)
                .map_err(|e| ScriptError::new(format!("reply #{i}: {e}")))?;
            reply
                .validate()
                .map_err(|e| ScriptError::new(format!("reply #{i}: {e}")))?;
            Ok(reply)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_shape_of_script() {
        assert_eq!(parse_script(r#"[{"text":"a"}]"#).unwrap().len(), 1);
        assert_eq!(parse_script(r#"{"text":"a"}"#).unwrap().len(), 1);
        assert_eq!(
            parse_script(r#"{"replies":[{"text":"a"},{"text":"b"}]}"#)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn string_arguments_are_raw_and_other_values_are_json() {
        let replies = parse_script(
            r#"[{"tool_calls":[{"name":"a","arguments":"{\"x\": "},{"name":"b","arguments":{"y":1}},{"name":"c"}]}]"#,
        )
        .unwrap();
        let calls = &replies[0].tool_calls;
        assert_eq!(calls[0].arguments, ToolArguments::Raw("{\"x\": ".into()));
        assert_eq!(calls[0].arguments.to_input_value(), json!("{\"x\": "));
        assert_eq!(calls[1].arguments.to_wire_string(), r#"{"y":1}"#);
        assert_eq!(calls[2].arguments.to_wire_string(), "{}");
    }

    #[test]
    fn typos_and_bad_values_are_reported_with_the_reply_index() {
        let err = parse_script(r#"[{"text":"ok"},{"tool_call":[]}]"#).unwrap_err();
        assert!(err.message().contains("reply #1"), "{err}");
        assert!(err.message().contains("tool_call"), "{err}");
        let err = parse_script(r#"[{"fault":{"status":200}}]"#).unwrap_err();
        assert!(err.message().contains("not an error status"), "{err}");
        let err = parse_script(r#"{"replies":[],"extra":1}"#).unwrap_err();
        assert!(err.message().contains("extra"), "{err}");
        assert!(parse_script("42").is_err());
        assert!(parse_script("{").is_err());
    }

    #[test]
    fn retry_after_accepts_numbers_and_strings() {
        let r = parse_script(r#"[{"fault":{"status":429,"retry_after":2}},{"fault":{"status":503,"retry_after":"Wed, 21 Oct 2015 07:28:00 GMT"}}]"#).unwrap();
        assert_eq!(
            r[0].fault.as_ref().unwrap().retry_after.as_deref(),
            Some("2")
        );
        assert!(r[1]
            .fault
            .as_ref()
            .unwrap()
            .retry_after
            .as_deref()
            .unwrap()
            .contains("GMT"));
    }

    /// The script shown in the crate documentation must stay valid.
    #[test]
    fn the_documented_example_script_parses() {
        let docs = include_str!("lib.rs");
        let start = docs
            .find("//! ```json\n")
            .expect("a json example in the crate docs");
        let example: String = docs[start..]
            .lines()
            .skip(1)
            .take_while(|line| !line.starts_with("//! ```"))
            .map(|line| line.trim_start_matches("//!").trim_start_matches(' '))
            .collect::<Vec<_>>()
            .join("\n");
        let replies = parse_script(&example).unwrap_or_else(|e| panic!("{e}\n{example}"));
        assert_eq!(replies.len(), 10);
        let page = replies[9]
            .fault
            .as_ref()
            .expect("the last reply is a fault");
        assert_eq!(page.content_type.as_deref(), Some("text/html"));
        assert!(page
            .body
            .as_deref()
            .is_some_and(|body| body.starts_with("<html>")));
        assert_eq!(
            replies[2].tool_calls[1].arguments,
            ToolArguments::Raw("{\"id\": ".into())
        );
        assert!(replies[3].when.as_ref().unwrap().summary_request);
    }

    #[test]
    fn builders_round_trip_through_json() {
        let reply = ScriptedReply::tool_call("close_effort", json!({"id": "e1"}))
            .for_summary_requests()
            .when_last_user_contains("done")
            .labelled("close")
            .with_fault(Fault::status(429).retry_after_secs(3));
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(parse_script(&text).unwrap(), vec![reply]);
    }
}
