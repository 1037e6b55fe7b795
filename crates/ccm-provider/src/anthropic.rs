//! The Anthropic Messages API.
//!
//! Requests go to `POST {base_url}/messages`. The API is stricter than Chat Completions about
//! the conversation's shape, so [`write_body`] reshapes the neutral conversation:
//!
//! * **System text.** The system messages before the first user or assistant message become
//!   the top-level `system` field, joined with blank lines. A system message later in the
//!   conversation (an effort header or a banner placed between logs) stays where it is, as a
//!   user text block starting with [`MID_CONVERSATION_SYSTEM_PREFIX`]: moving it into `system`
//!   would detach it from the messages it introduces, and the prefix tells the model it is not
//!   something the person wrote.
//! * **Alternation.** Roles must alternate, so consecutive messages of the same role are
//!   merged into one message with several content blocks. Tool results are user content, so
//!   they merge with user text; inside a merged user message the `tool_result` blocks come
//!   first, as the API requires right after a `tool_use`.
//! * **Empty text.** Blank text blocks are rejected by the API, so they are left out, and a
//!   message left with no blocks is dropped.
//! * **Opening turn.** The first message must come from the user. When the conversation starts
//!   with an assistant message (for example an ambient window that begins mid-exchange), a
//!   short user block, [`CONVERSATION_START_PLACEHOLDER`], is put in front of it.
//! * **Tool arguments.** A `tool_use` block's `input` must be a JSON object. Arguments that are
//!   not valid JSON object text (the model wrote malformed JSON, which the engine answered with
//!   an error result) are sent as `{}`: sending them as they are would make every later request
//!   of the conversation fail with a 400, and the tool result that follows already tells the
//!   model what was wrong.
//! * **Ids.** Tool-use ids must match `[a-zA-Z0-9_-]+`; other characters (from ids another
//!   provider or the offline model made up) are replaced with `_`, consistently in the
//!   `tool_use` and its `tool_result`.

use super::error::ProviderError;
use super::fragment::{Fragment, TextJoiner};
use super::options::{RequestOptions, TokenLimitField, ToolChoice};
use super::output::{check_output, OutputMeter};
use super::protocol::{encode_body, Protocol, ProtocolStream, StreamLatch};
use super::sse::SseEvent;
use super::wire::{ToolCall, WireMessage, WireTool};
use super::{FinishReason, ProviderResponse, StreamDelta, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The API version sent in the `anthropic-version` header.
pub const API_VERSION: &str = "2023-06-01";

/// The start of a user text block that carries a system message from the middle of the
/// conversation.
pub const MID_CONVERSATION_SYSTEM_PREFIX: &str = "[System note]\n";

/// The user text put in front of a conversation that starts with an assistant message.
pub const CONVERSATION_START_PLACEHOLDER: &str = "(The conversation so far follows.)";

/// Writes a Messages API request body (see the [module documentation](self) for how the
/// conversation is reshaped).
///
/// [`build_request`](crate::build_request) sends it with the headers of `auth_headers`:
/// `x-api-key` (only when a key is configured, so that a proxy can add it instead),
/// `anthropic-version: 2023-06-01`, and `anthropic-dangerous-direct-browser-access: true`,
/// without which the API refuses requests that come straight from a browser page (CORS). Tool
/// choice: auto is the default and not sent; none, required (`any`) and a named tool (`tool`)
/// are. The output limit is always `max_tokens`, so `_limit_field` is not read.
///
/// # Errors
///
/// [`ProviderError::InvalidConfig`] when the body cannot be encoded as JSON.
pub fn write_body(
    options: &RequestOptions,
    _limit_field: TokenLimitField,
    messages: &[WireMessage],
    tools: &[WireTool],
) -> Result<String, ProviderError> {
    encode_body(&request_body(options, messages, tools))
}

/// This protocol's entry in the table of protocols.
pub(crate) const PROTOCOL: Protocol = Protocol {
    name: "anthropic",
    label: "Anthropic",
    compatible_name: "anthropic_compatible",
    compatible_label: "Anthropic-compatible server",
    endpoint_path: "/messages",
    auth_headers,
    write_body,
    parse_response,
    new_stream: || Box::new(AnthropicStream::new()),
};

/// The headers every request of this protocol carries besides its content type: `x-api-key`
/// (only when a key is configured, so that a proxy can add it instead), `anthropic-version`,
/// and `anthropic-dangerous-direct-browser-access: true`, without which the API refuses
/// requests that come straight from a browser page (CORS).
pub(crate) fn auth_headers(api_key: Option<&str>) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    if let Some(key) = api_key {
        headers.push(("x-api-key".to_string(), key.to_string()));
    }
    headers.push(("anthropic-version".to_string(), API_VERSION.to_string()));
    headers.push((
        "anthropic-dangerous-direct-browser-access".to_string(),
        "true".to_string(),
    ));
    headers
}

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Speaker {
    User,
    Assistant,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: Speaker,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: &'a str,
    },
}

fn request_body<'a>(
    options: &'a RequestOptions,
    messages: &'a [WireMessage],
    tools: &'a [WireTool],
) -> MessagesRequest<'a> {
    let leading_system = messages
        .iter()
        .take_while(|m| matches!(m, WireMessage::System(_)))
        .count();
    let system: Vec<&str> = messages[..leading_system]
        .iter()
        .filter_map(|m| match m {
            WireMessage::System(text) if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));

    let mut turns: Vec<Turn<'a>> = Vec::new();
    for message in &messages[leading_system..] {
        let (role, blocks) = blocks_of(message);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    if turns.first().is_some_and(|t| t.role == Speaker::Assistant) {
        turns.insert(
            0,
            Turn {
                role: Speaker::User,
                content: vec![Block::Text {
                    text: CONVERSATION_START_PLACEHOLDER.to_string(),
                }],
            },
        );
    }
    for turn in &mut turns {
        if turn.role == Speaker::User {
            // A stable partition: results first, each group keeping its order.
            let (results, others): (Vec<_>, Vec<_>) = std::mem::take(&mut turn.content)
                .into_iter()
                .partition(|block| matches!(block, Block::ToolResult { .. }));
            turn.content = results;
            turn.content.extend(others);
        }
    }

    let tool_list: Vec<Tool<'a>> = tools
        .iter()
        .map(|tool| Tool {
            name: &tool.name,
            description: &tool.description,
            input_schema: input_schema(&tool.parameters),
        })
        .collect();
    let tool_choice = if tool_list.is_empty() {
        None
    } else {
        match &options.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(serde_json::json!({"type": "none"})),
            ToolChoice::Required => Some(serde_json::json!({"type": "any"})),
            ToolChoice::Function(name) => Some(serde_json::json!({"type": "tool", "name": name})),
        }
    };
    MessagesRequest {
        model: options.model.trim(),
        max_tokens: options.max_tokens,
        system,
        messages: turns,
        temperature: options.temperature,
        stream: options.stream,
        tools: tool_list,
        tool_choice,
    }
}

/// The API requires an object schema; a tool without parameters gets an empty one.
fn input_schema(parameters: &Value) -> Value {
    match parameters {
        Value::Object(_) => parameters.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

fn text_block(text: &str) -> Option<Block<'static>> {
    (!text.trim().is_empty()).then(|| Block::Text {
        text: text.to_string(),
    })
}

fn blocks_of(message: &WireMessage) -> (Speaker, Vec<Block<'_>>) {
    match message {
        WireMessage::System(text) => {
            let block = (!text.trim().is_empty()).then(|| Block::Text {
                text: format!("{MID_CONVERSATION_SYSTEM_PREFIX}{text}"),
            });
            (Speaker::User, block.into_iter().collect())
        }
        WireMessage::User(text) => (Speaker::User, text_block(text).into_iter().collect()),
        WireMessage::Assistant { text, tool_calls } => {
            let mut blocks: Vec<Block<'_>> = text_block(text).into_iter().collect();
            blocks.extend(tool_calls.iter().map(|call| Block::ToolUse {
                id: sanitize_id(&call.id),
                name: &call.name,
                input: Value::Object(arguments_object(&call.arguments)),
            }));
            (Speaker::Assistant, blocks)
        }
        WireMessage::ToolResult {
            call_id, content, ..
        } => (
            Speaker::User,
            vec![Block::ToolResult {
                tool_use_id: sanitize_id(call_id),
                content,
            }],
        ),
    }
}

/// The arguments as a JSON object, or an empty object when they are not one (see the module
/// documentation for why).
fn arguments_object(arguments: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    }
}

fn sanitize_id(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "call".to_string()
    } else {
        cleaned
    }
}

#[derive(Deserialize)]
struct MessageDto {
    #[serde(rename = "type")]
    kind: Option<String>,
    content: Option<Vec<BlockDto>>,
    stop_reason: Option<String>,
    usage: Option<UsageDto>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct BlockDto {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

#[derive(Deserialize, Default)]
struct UsageDto {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

/// Usage counts as they arrive in a response or across stream events. The prompt total adds
/// the cache counts because Anthropic reports cached input separately from `input_tokens`,
/// while a local estimate counts the whole context.
#[derive(Debug, Clone, Copy, Default)]
struct UsageParts {
    input: Option<u64>,
    cache_creation: Option<u64>,
    cache_read: Option<u64>,
    output: Option<u64>,
}

impl UsageParts {
    fn update(&mut self, usage: &UsageDto) {
        self.input = usage.input_tokens.or(self.input);
        self.cache_creation = usage.cache_creation_input_tokens.or(self.cache_creation);
        self.cache_read = usage.cache_read_input_tokens.or(self.cache_read);
        self.output = usage.output_tokens.or(self.output);
    }

    fn to_usage(self) -> Option<Usage> {
        if self.input.is_none() && self.output.is_none() {
            return None;
        }
        Some(Usage {
            prompt_tokens: self.input.unwrap_or(0)
                + self.cache_creation.unwrap_or(0)
                + self.cache_read.unwrap_or(0),
            completion_tokens: self.output.unwrap_or(0),
        })
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
        None => FinishReason::Other(String::new()),
    }
}

/// `input` as argument text; a missing or null input is the empty object.
fn input_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => "{}".to_string(),
        Some(value) => value.to_string(),
    }
}

/// Parses a complete Messages API response body.
///
/// Text blocks are concatenated; `tool_use` blocks become tool calls whose arguments are the
/// `input` object as JSON text; other blocks (such as `thinking`) are skipped.
///
/// # Errors
///
/// [`ProviderError::InvalidJson`] when the body is not a JSON message and
/// [`ProviderError::ApiError`] when it is an error object.
pub fn parse_response(body: &str) -> Result<ProviderResponse, ProviderError> {
    let message: MessageDto = serde_json::from_str(body)
        .map_err(|error| ProviderError::invalid_json("message response", &error, body))?;
    if message.kind.as_deref() == Some("error") || message.error.is_some() {
        return Err(ProviderError::embedded(
            message.error.as_ref().unwrap_or(&Value::Null),
        ));
    }
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in message.content.unwrap_or_default() {
        match block.kind.as_str() {
            "text" => text.push_str(block.text.as_deref().unwrap_or_default()),
            "tool_use" => tool_calls.push(ToolCall {
                id: block.id.unwrap_or_default(),
                name: block.name.unwrap_or_default(),
                arguments: input_text(block.input.as_ref()),
            }),
            _ => {}
        }
    }
    let mut usage = UsageParts::default();
    usage.update(message.usage.as_ref().unwrap_or(&UsageDto::default()));
    Ok(ProviderResponse {
        text,
        tool_calls,
        finish_reason: finish_reason(message.stop_reason.as_deref()),
        usage: usage.to_usage(),
    })
}

#[derive(Deserialize)]
struct EventDto {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<StartMessageDto>,
    index: Option<u64>,
    content_block: Option<BlockDto>,
    delta: Option<DeltaDto>,
    usage: Option<UsageDto>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StartMessageDto {
    usage: Option<UsageDto>,
}

#[derive(Deserialize)]
struct DeltaDto {
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Fragments are read as bytes, so that one holding half of a character is not refused.
    text: Option<Fragment>,
    partial_json: Option<Fragment>,
    stop_reason: Option<String>,
}

/// A content block being assembled from stream events.
#[derive(Debug, Clone)]
enum PartialBlock {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// The `input` of `content_block_start`, used when no `input_json_delta` follows.
        initial_input: String,
        /// The concatenated `partial_json` fragments.
        json: String,
        /// The end of `json` that may still become a character.
        pending: TextJoiner,
    },
    /// A block this crate does not use (`thinking`, server tools, …).
    Other,
}

/// Accumulates a streamed Messages API response from its server-sent events.
///
/// Understands `message_start` (input usage), `content_block_start` (text or `tool_use` with
/// its id and name), `content_block_delta` (`text_delta`, `input_json_delta`),
/// `content_block_stop`, `message_delta` (stop reason and output usage), `message_stop`, `ping`
/// and `error`. Unknown events and delta types are ignored, as Anthropic asks clients to do so
/// that new event types can be added.
#[derive(Debug, Clone, Default)]
pub struct AnthropicStream {
    text: String,
    /// The end of the text that may still become a character.
    pending: TextJoiner,
    blocks: BTreeMap<u64, PartialBlock>,
    stop_reason: Option<String>,
    usage: UsageParts,
    /// The events counted, the end (`message_stop`) and the first error.
    latch: StreamLatch,
    /// What arrived so far, against the limits of [`crate::output`].
    meter: OutputMeter,
}

impl AnthropicStream {
    /// An empty accumulator.
    pub fn new() -> Self {
        AnthropicStream::default()
    }

    /// Ends the text and the tool inputs received so far: what was held back will not be
    /// completed any more.
    fn flush(&mut self, deltas: &mut Vec<StreamDelta>) {
        for block in self.blocks.values_mut() {
            if let PartialBlock::ToolUse { json, pending, .. } = block {
                let rest = pending.finish();
                json.push_str(&rest);
            }
        }
        let rest = self.pending.finish();
        if !rest.is_empty() {
            self.text.push_str(&rest);
            deltas.push(StreamDelta::Text(rest));
        }
    }

    /// Whether `message_stop` arrived.
    pub fn is_done(&self) -> bool {
        self.latch.has_ended()
    }
}

impl ProtocolStream for AnthropicStream {
    fn latch(&mut self) -> &mut StreamLatch {
        &mut self.latch
    }

    /// Reads one event and returns what can be shown already. Events after
    /// `message_stop` are ignored.
    ///
    /// # Errors
    ///
    /// [`ProviderError::ApiError`] for an `error` event (for example `overloaded_error`),
    /// [`ProviderError::InvalidJson`] for data that is not JSON, and
    /// [`ProviderError::Protocol`] for tool input that arrives for a block that is not a
    /// started `tool_use`. The first error is kept: every later call, and
    /// [`finish`](Self::finish), returns it again.
    fn read_event(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let dto: EventDto = serde_json::from_str(data)
            .map_err(|error| ProviderError::invalid_json("stream event", &error, data))?;
        // The data's `type` is authoritative; the SSE event name repeats it.
        let kind = dto.kind.as_deref().or(event.event.as_deref()).unwrap_or("");
        let mut deltas = Vec::new();
        match kind {
            "message_start" => {
                if let Some(usage) = dto.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    self.usage.update(usage);
                }
            }
            "content_block_start" => {
                let index = dto.index.unwrap_or(self.blocks.len() as u64);
                let block = match dto.content_block {
                    Some(block) if block.kind == "text" => {
                        let initial = self.pending.push(block.text.unwrap_or_default().as_bytes());
                        if !initial.is_empty() {
                            self.meter.text(&initial)?;
                            self.text.push_str(&initial);
                            deltas.push(StreamDelta::Text(initial));
                        }
                        PartialBlock::Text
                    }
                    Some(block) if block.kind == "tool_use" => {
                        let id = block.id.unwrap_or_default();
                        let name = block.name.unwrap_or_default();
                        self.meter.call_started()?;
                        self.meter.id(&id)?;
                        self.meter.name(&name)?;
                        // Not metered: it is only used when no fragment follows, and the
                        // whole answer is checked at the end.
                        let initial_input = input_text(block.input.as_ref());
                        deltas.push(StreamDelta::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        PartialBlock::ToolUse {
                            id,
                            name,
                            initial_input,
                            json: String::new(),
                            pending: TextJoiner::default(),
                        }
                    }
                    _ => PartialBlock::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let Some(delta) = dto.delta else {
                    return Ok(deltas);
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        let text = self.pending.push(&delta.text.unwrap_or_default().0);
                        if !text.is_empty() {
                            self.meter.text(&text)?;
                            self.text.push_str(&text);
                            deltas.push(StreamDelta::Text(text));
                        }
                    }
                    Some("input_json_delta") => {
                        let index = dto.index.unwrap_or(0);
                        match self.blocks.get_mut(&index) {
                            Some(PartialBlock::ToolUse { json, pending, .. }) => {
                                let fragment = delta.partial_json.unwrap_or_default();
                                let added = pending.push(&fragment.0);
                                self.meter.arguments(&added)?;
                                json.push_str(&added);
                            }
                            _ => {
                                return Err(ProviderError::Protocol(format!(
                                    "tool input arrived for content block {index}, which is not \
                                     a started tool call"
                                )))
                            }
                        }
                    }
                    // `thinking_delta`, `signature_delta`, `citations_delta` and future kinds.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = dto.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = &dto.usage {
                    self.usage.update(usage);
                }
            }
            // A character never spans two blocks: what is held back at a block's end is broken.
            "content_block_stop" => self.flush(&mut deltas),
            "message_stop" => {
                self.latch.end();
                self.flush(&mut deltas);
            }
            "error" => {
                return Err(ProviderError::embedded(
                    dto.error.as_ref().unwrap_or(&Value::Null),
                ));
            }
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(deltas)
    }

    /// The answer text received so far.
    fn text(&self) -> &str {
        &self.text
    }

    /// Ends the stream and returns the whole answer, tool calls in content-block order.
    ///
    /// A tool call's arguments are its concatenated `input_json_delta` fragments exactly as
    /// sent, or the `input` of its start event (normally `{}`) when no fragment arrived.
    ///
    /// # Errors
    ///
    /// [`ProviderError::StreamTruncated`] when `message_stop` never arrived, or the error an
    /// earlier [`push`](Self::push) returned.
    fn finish(mut self) -> Result<ProviderResponse, ProviderError> {
        let started_calls = self
            .blocks
            .values()
            .filter(|block| matches!(block, PartialBlock::ToolUse { .. }))
            .count();
        self.latch.check_whole(&self.text, started_calls)?;
        let tool_calls: Vec<ToolCall> = self
            .blocks
            .into_values()
            .filter_map(|block| match block {
                PartialBlock::ToolUse {
                    id,
                    name,
                    initial_input,
                    json,
                    ..
                } => Some(ToolCall {
                    id,
                    name,
                    arguments: if json.is_empty() { initial_input } else { json },
                }),
                _ => None,
            })
            .collect();
        let response = ProviderResponse {
            text: self.text,
            tool_calls,
            finish_reason: finish_reason(self.stop_reason.as_deref()),
            usage: self.usage.to_usage(),
        };
        // The pieces held back until the end were not metered; the whole answer is.
        check_output(&response)?;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_checks;
    use crate::{build_request, Preset, ProviderConfig, ProviderKind, ProviderStream};
    use serde_json::json;

    fn config() -> ProviderConfig {
        ProviderConfig::from_preset(Preset::Anthropic, Some("sk-ant-1".into()))
    }

    fn tools() -> Vec<WireTool> {
        vec![
            WireTool {
                name: "open_effort".into(),
                description: "Start an effort.".into(),
                parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            },
            WireTool {
                name: "list_efforts".into(),
                description: "List.".into(),
                parameters: Value::Null,
            },
        ]
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn body(messages: &[WireMessage], options: &RequestOptions) -> Value {
        let request = build_request(&config(), options, messages, &tools()).unwrap();
        serde_json::from_str(&request.body).unwrap()
    }

    #[test]
    fn request_headers_and_basic_body() {
        let options = RequestOptions::new("claude-sonnet-4-5")
            .with_max_tokens(1000)
            .with_temperature(0.5)
            .with_stream(true);
        let messages = [
            WireMessage::System("You manage efforts.".into()),
            WireMessage::System("Pinned: use British spelling.".into()),
            WireMessage::User("Hi".into()),
        ];
        let request = build_request(&config(), &options, &messages, &tools()).unwrap();
        assert_eq!(request.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(
            request.headers,
            vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("x-api-key".to_string(), "sk-ant-1".to_string()),
                ("anthropic-version".to_string(), "2023-06-01".to_string()),
                (
                    "anthropic-dangerous-direct-browser-access".to_string(),
                    "true".to_string()
                ),
            ]
        );
        assert_eq!(
            serde_json::from_str::<Value>(&request.body).unwrap(),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 1000,
                "system": "You manage efforts.\n\nPinned: use British spelling.",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                "temperature": 0.5,
                "stream": true,
                "tools": [
                    {"name": "open_effort", "description": "Start an effort.",
                     "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    {"name": "list_efforts", "description": "List.",
                     "input_schema": {"type": "object", "properties": {}}},
                ],
            })
        );
        // Without a key no `x-api-key` header is sent (a proxy may add it).
        let keyless = ProviderConfig::custom(ProviderKind::Anthropic, "http://proxy/v1", None);
        let request = build_request(&keyless, &options, &messages, &[]).unwrap();
        assert_eq!(request.header("x-api-key"), None);
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    }

    #[test]
    fn tool_round_trip_is_reshaped_for_the_api() {
        let messages = [
            WireMessage::System("sys".into()),
            WireMessage::User("Let's work on auth".into()),
            WireMessage::Assistant {
                text: "Opening two.".into(),
                tool_calls: vec![
                    call("toolu_1", "open_effort", r#"{"name":"auth"}"#),
                    call("call:2", "list_efforts", ""),
                ],
            },
            WireMessage::ToolResult {
                call_id: "toolu_1".into(),
                name: "open_effort".into(),
                content: r#"{"ok":true}"#.into(),
            },
            WireMessage::ToolResult {
                call_id: "call:2".into(),
                name: "list_efforts".into(),
                content: "[]".into(),
            },
            WireMessage::Assistant {
                text: "Done.".into(),
                tool_calls: vec![],
            },
            WireMessage::User("thanks".into()),
        ];
        let body = body(&messages, &RequestOptions::new("m"));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Let's work on auth"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Opening two."},
                    {"type": "tool_use", "id": "toolu_1", "name": "open_effort", "input": {"name": "auth"}},
                    {"type": "tool_use", "id": "call_2", "name": "list_efforts", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"ok\":true}"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "[]"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ])
        );
        assert_eq!(body["system"], "sys");
    }

    #[test]
    fn malformed_or_non_object_arguments_become_an_empty_object() {
        for arguments in ["{\"name\": ", "[1,2]", "\"text\"", "null", "", "42"] {
            let messages = [
                WireMessage::User("u".into()),
                WireMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("t", "open_effort", arguments)],
                },
            ];
            let body = body(&messages, &RequestOptions::new("m"));
            assert_eq!(
                body["messages"][1]["content"][0]["input"],
                json!({}),
                "{arguments:?}"
            );
        }
    }

    #[test]
    fn same_role_messages_merge_and_mid_conversation_system_text_stays_in_place() {
        let messages = [
            WireMessage::System("top".into()),
            WireMessage::User("first".into()),
            WireMessage::User("second".into()),
            WireMessage::System("--- Expanded effort: auth ---".into()),
            WireMessage::Assistant {
                text: "a1".into(),
                tool_calls: vec![],
            },
            WireMessage::Assistant {
                text: "   ".into(),
                tool_calls: vec![],
            },
            WireMessage::Assistant {
                text: "a2".into(),
                tool_calls: vec![],
            },
            WireMessage::User("".into()),
            WireMessage::User("last".into()),
        ];
        let body = body(&messages, &RequestOptions::new("m"));
        assert_eq!(body["system"], "top");
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "first"},
                    {"type": "text", "text": "second"},
                    {"type": "text", "text": "[System note]\n--- Expanded effort: auth ---"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "a1"},
                    {"type": "text", "text": "a2"},
                ]},
                {"role": "user", "content": [{"type": "text", "text": "last"}]},
            ])
        );
    }

    #[test]
    fn tool_results_come_first_in_a_merged_user_message() {
        let messages = [
            WireMessage::User("go".into()),
            WireMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("t1", "open_effort", "{}")],
            },
            WireMessage::System("--- Opened effort: auth ---".into()),
            WireMessage::ToolResult {
                call_id: "t1".into(),
                name: "open_effort".into(),
                content: "ok".into(),
            },
        ];
        let body = body(&messages, &RequestOptions::new("m"));
        assert_eq!(
            body["messages"][2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "[System note]\n--- Opened effort: auth ---"},
            ])
        );
    }

    #[test]
    fn a_conversation_starting_with_the_assistant_gets_a_user_opening() {
        let messages = [
            WireMessage::System("s".into()),
            WireMessage::assistant_text("earlier answer"),
            WireMessage::User("question".into()),
        ];
        let body = body(&messages, &RequestOptions::new("m"));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START_PLACEHOLDER}]},
                {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
                {"role": "user", "content": [{"type": "text", "text": "question"}]},
            ])
        );
        assert!(body.get("system").is_some());
        // A blank leading system message adds no `system` field.
        let body = body_without_system();
        assert_eq!(body.get("system"), None);
    }

    fn body_without_system() -> Value {
        body(
            &[
                WireMessage::System(" ".into()),
                WireMessage::User("q".into()),
            ],
            &RequestOptions::new("m"),
        )
    }

    #[test]
    fn tool_choice_mapping() {
        let cases = [
            (ToolChoice::Auto, None),
            (ToolChoice::None, Some(json!({"type": "none"}))),
            (ToolChoice::Required, Some(json!({"type": "any"}))),
            (
                ToolChoice::Function("open_effort".into()),
                Some(json!({"type": "tool", "name": "open_effort"})),
            ),
        ];
        for (choice, expected) in cases {
            let options = RequestOptions::new("m").with_tool_choice(choice.clone());
            let body = body(&[WireMessage::User("u".into())], &options);
            assert_eq!(body.get("tool_choice"), expected.as_ref(), "{choice:?}");
        }
    }

    #[test]
    fn parses_a_response_with_text_and_tool_use() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
            "content":[{"type":"thinking","thinking":"hmm","signature":"s"},
                       {"type":"text","text":"Opening "},{"type":"text","text":"it."},
                       {"type":"tool_use","id":"toolu_1","name":"open_effort","input":{"name":"auth"}},
                       {"type":"tool_use","id":"toolu_2","name":"list_efforts","input":{}}],
            "stop_reason":"tool_use","stop_sequence":null,
            "usage":{"input_tokens":120,"cache_creation_input_tokens":null,"cache_read_input_tokens":300,"output_tokens":45}}"#;
        assert_eq!(
            parse_response(body).unwrap(),
            ProviderResponse {
                text: "Opening it.".into(),
                tool_calls: vec![
                    call("toolu_1", "open_effort", r#"{"name":"auth"}"#),
                    call("toolu_2", "list_efforts", "{}"),
                ],
                finish_reason: FinishReason::ToolCalls,
                usage: Some(Usage {
                    prompt_tokens: 420,
                    completion_tokens: 45
                }),
            }
        );
    }

    #[test]
    fn stop_reasons_map_to_the_neutral_enum() {
        for (raw, expected) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("tool_use", FinishReason::ToolCalls),
            ("max_tokens", FinishReason::Length),
            ("refusal", FinishReason::Other("refusal".into())),
        ] {
            let body = format!(r#"{{"type":"message","content":[],"stop_reason":"{raw}"}}"#);
            let response = parse_response(&body).unwrap();
            assert_eq!(response.finish_reason, expected);
            assert_eq!(response.usage, None);
        }
    }

    #[test]
    fn bad_bodies_are_typed_errors() {
        assert_eq!(
            parse_response(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .unwrap_err(),
            ProviderError::ApiError {
                error_type: Some("overloaded_error".into()),
                message: "Overloaded".into()
            }
        );
        let error = parse_response("{\"type\":\"message\",\"content\":[{\"type\":").unwrap_err();
        assert!(
            matches!(&error, ProviderError::InvalidJson { context, .. } if context.starts_with("message response (")),
            "{error:?}"
        );
    }

    /// A realistic stream: ping, text, two tool_use blocks, a thinking block to be skipped,
    /// usage in `message_start` and `message_delta`, with CRLF line breaks in places.
    const STREAM: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"usage\":{\"input_tokens\":610,\"cache_read_input_tokens\":200,\"output_tokens\":1}}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me see\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\r\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Héllo — \"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"opening 🦀\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_A\",\"name\":\"open_effort\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"name\\\": \\\"au\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"th bug\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_B\",\"name\":\"list_efforts\",\"input\":{}}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":57}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );

    fn expected_stream_response() -> ProviderResponse {
        ProviderResponse {
            text: "Héllo — opening 🦀".into(),
            tool_calls: vec![
                call("toolu_A", "open_effort", r#"{"name": "auth bug"}"#),
                call("toolu_B", "list_efforts", "{}"),
            ],
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                prompt_tokens: 810,
                completion_tokens: 57,
            }),
        }
    }

    fn run(chunks: &[&[u8]]) -> (Vec<StreamDelta>, Result<ProviderResponse, ProviderError>) {
        stream_checks::run(ProviderKind::Anthropic, chunks)
    }

    #[test]
    fn stream_accumulates_text_and_tool_calls() {
        let (deltas, response) = run(&[STREAM.as_bytes()]);
        let expected = expected_stream_response();
        assert_eq!(
            deltas,
            stream_checks::text_then_calls(&["Héllo — ", "opening 🦀"], &expected)
        );
        assert_eq!(response.unwrap(), expected);
    }

    #[test]
    fn stream_gives_the_same_result_split_at_every_byte() {
        let bytes = STREAM.as_bytes();
        let expected = expected_stream_response();
        stream_checks::assert_same_answer_split_at_every_byte(
            ProviderKind::Anthropic,
            bytes,
            &expected,
        );
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(&singles).1, Ok(expected));
    }

    #[test]
    fn stream_without_message_stop_is_truncated_at_every_cut() {
        let bytes = STREAM.as_bytes();
        let stop_at = STREAM.find("event: message_stop").unwrap();
        stream_checks::assert_truncated_at_every_cut_before(
            ProviderKind::Anthropic,
            bytes,
            stop_at,
        );
        // Cut right before the first text delta: the thinking block and the start of the text
        // block have arrived (6 events), but no text and no tool call.
        let first_text = STREAM.find("\"text_delta\"").unwrap();
        let cut = STREAM[..first_text].rfind("event:").unwrap();
        assert_eq!(
            run(&[&bytes[..cut]]).1,
            Err(ProviderError::StreamTruncated {
                events: 6,
                text_chars: 0,
                tool_calls: 0
            })
        );
        // Cut right before message_delta: everything but the stop reason has arrived.
        let cut = STREAM.find("event: message_delta").unwrap();
        assert_eq!(
            run(&[&bytes[..cut]]).1,
            Err(ProviderError::StreamTruncated {
                events: 16,
                text_chars: 17,
                tool_calls: 2
            })
        );
    }

    #[test]
    fn an_error_event_mid_stream_is_an_error() {
        let stream = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hal\"}}\n\n",
            "event: error\n",
            "data: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
        );
        let mut stream_state = ProviderStream::new(ProviderKind::Anthropic);
        let error = stream_state.push(stream.as_bytes()).unwrap_err();
        stream_checks::assert_transient_api_error(&error, "overloaded_error", "Overloaded");
        assert_eq!(stream_state.text(), "Hal");
        assert_eq!(stream_state.finish().unwrap_err(), error);
    }

    #[test]
    fn protocol_violations_and_bad_json_are_errors() {
        let mut stream = AnthropicStream::new();
        let stray = SseEvent {
            event: Some("content_block_delta".into()),
            data: r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}"#.into(),
        };
        assert_eq!(
            stream.push(&stray).unwrap_err(),
            ProviderError::Protocol(
                "tool input arrived for content block 4, which is not a started tool call".into()
            )
        );

        let mut stream = AnthropicStream::new();
        let broken = SseEvent {
            event: Some("content_block_delta".into()),
            data:
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"#
                    .into(),
        };
        assert!(matches!(
            stream.push(&broken),
            Err(ProviderError::InvalidJson { .. })
        ));
    }

    #[test]
    fn the_event_name_is_used_when_data_has_no_type() {
        let mut stream = AnthropicStream::new();
        stream
            .push(&SseEvent {
                event: Some("message_stop".into()),
                data: "{}".into(),
            })
            .unwrap();
        assert!(stream.is_done());
        // Later events are ignored.
        assert_eq!(
            stream
                .push(&SseEvent {
                    event: Some("error".into()),
                    data: "{}".into()
                })
                .unwrap(),
            vec![]
        );
        let response = stream.finish().unwrap();
        assert_eq!(response.usage, None);
        assert_eq!(response.finish_reason, FinishReason::Other(String::new()));
    }

    #[test]
    fn unknown_events_and_deltas_are_ignored() {
        let mut stream = AnthropicStream::new();
        for data in [
            r#"{"type":"something_new","payload":1}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            let deltas = stream
                .push(&SseEvent {
                    event: None,
                    data: data.into(),
                })
                .unwrap();
            assert_eq!(deltas, vec![], "{data}");
        }
        assert_eq!(stream.finish().unwrap().tool_calls, vec![]);
    }
}
