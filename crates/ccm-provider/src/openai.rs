//! The OpenAI Chat Completions protocol, as spoken by OpenAI, Ollama, LM Studio, OpenRouter and
//! other compatible servers.
//!
//! Requests go to `POST {base_url}/chat/completions`. Compatible servers differ in small ways,
//! so reading is lenient where it costs nothing: a missing tool-call id gets a deterministic
//! one, arguments sent as a JSON object instead of a string are accepted, and message content
//! sent as an array of text parts is joined.

use super::error::ProviderError;
use super::fragment::{fragment_of, text_of, Fragment, TextJoiner};
use super::options::{RequestOptions, TokenLimitField, ToolChoice};
use super::output::{check_output, OutputMeter};
use super::protocol::{encode_body, Protocol, ProtocolStream, StreamLatch};
use super::sse::SseEvent;
use super::wire::{ToolCall, WireMessage, WireTool};
use super::{FinishReason, ProviderResponse, StreamDelta, Usage};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// Writes a Chat Completions request body.
///
/// [`build_request`](crate::build_request) sends it with `authorization: Bearer …` when a key
/// is configured (see `auth_headers`). A streaming request asks for
/// `stream_options.include_usage`, so that the last chunk reports token usage. With no tools,
/// neither `tools` nor `tool_choice` is sent (OpenAI rejects a tool choice without tools), and
/// [`ToolChoice::Auto`] is never sent because it is the default. The output limit goes in the
/// configuration's `limit_field`.
///
/// # Errors
///
/// [`ProviderError::InvalidConfig`] when the body cannot be encoded as JSON.
pub fn write_body(
    options: &RequestOptions,
    limit_field: TokenLimitField,
    messages: &[WireMessage],
    tools: &[WireTool],
) -> Result<String, ProviderError> {
    encode_body(&request_body(limit_field, options, messages, tools))
}

/// This protocol's entry in the table of protocols.
pub(crate) const PROTOCOL: Protocol = Protocol {
    name: "openai",
    label: "OpenAI",
    compatible_name: "openai_compatible",
    compatible_label: "OpenAI-compatible server",
    endpoint_path: "/chat/completions",
    auth_headers,
    write_body,
    parse_response,
    new_stream: || Box::new(OpenAiStream::new()),
};

/// The headers that authenticate a request of this protocol: `authorization: Bearer …`, and
/// nothing without a key (local servers expect none, and a proxy may add its own).
pub(crate) fn auth_headers(api_key: Option<&str>) -> Vec<(String, String)> {
    api_key
        .map(|key| ("authorization".to_string(), format!("Bearer {key}")))
        .into_iter()
        .collect()
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// `null` when the message only carries tool calls, as OpenAI documents it.
        content: Option<&'a str>,
        /// Omitted when empty: OpenAI rejects an empty `tool_calls` array.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall<'a>,
}

#[derive(Serialize)]
struct ChatFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Value::is_null")]
    parameters: &'a Value,
}

fn request_body<'a>(
    limit_field: TokenLimitField,
    options: &'a RequestOptions,
    messages: &'a [WireMessage],
    tools: &'a [WireTool],
) -> ChatRequest<'a> {
    let messages = messages.iter().map(chat_message).collect();
    let tools: Vec<ChatTool<'a>> = tools
        .iter()
        .map(|tool| ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        })
        .collect();
    let tool_choice = if tools.is_empty() {
        None
    } else {
        match &options.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(Value::from("none")),
            ToolChoice::Required => Some(Value::from("required")),
            ToolChoice::Function(name) => Some(serde_json::json!({
                "type": "function",
                "function": { "name": name },
            })),
        }
    };
    let (max_tokens, max_completion_tokens) = match limit_field {
        TokenLimitField::MaxTokens => (Some(options.max_tokens), None),
        TokenLimitField::MaxCompletionTokens => (None, Some(options.max_tokens)),
    };
    ChatRequest {
        model: options.model.trim(),
        messages,
        max_tokens,
        max_completion_tokens,
        temperature: options.temperature,
        stream: options.stream,
        stream_options: options.stream.then_some(StreamOptions {
            include_usage: true,
        }),
        tools,
        tool_choice,
    }
}

fn chat_message(message: &WireMessage) -> ChatMessage<'_> {
    match message {
        WireMessage::System(text) => ChatMessage::System { content: text },
        WireMessage::User(text) => ChatMessage::User { content: text },
        WireMessage::Assistant { text, tool_calls } => ChatMessage::Assistant {
            content: if text.is_empty() && !tool_calls.is_empty() {
                None
            } else {
                Some(text.as_str())
            },
            tool_calls: tool_calls
                .iter()
                .map(|call| ChatToolCall {
                    id: &call.id,
                    kind: "function",
                    function: ChatFunctionCall {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
        },
        // The tool's name is not part of OpenAI's tool message; the id links it to its call.
        WireMessage::ToolResult {
            call_id, content, ..
        } => ChatMessage::Tool {
            tool_call_id: call_id,
            content,
        },
    }
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Option<Vec<Choice>>,
    usage: Option<UsageDto>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<ChoiceMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<Value>,
    tool_calls: Option<Vec<ToolCallDto>>,
}

#[derive(Deserialize)]
struct ToolCallDto {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDto>,
}

#[derive(Deserialize)]
struct FunctionDto {
    name: Option<String>,
    /// Read raw, so that a string fragment holding half of a character is not refused.
    arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct UsageDto {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl UsageDto {
    fn to_usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            completion_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

/// Text of a `content` value: a string, or an array of `{"type": "text", "text": …}` parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Arguments as bytes: normally a string (possibly a fragment that ends or starts inside a
/// character); some servers send an object, which is taken as its compact JSON text.
fn arguments_fragment(arguments: Option<&RawValue>) -> Result<Vec<u8>, ProviderError> {
    fragment_of(arguments, |json| {
        let value: Value = serde_json::from_str(json)?;
        Ok(match value {
            Value::Null => Vec::new(),
            other => other.to_string().into_bytes(),
        })
    })
    .map_err(|error| {
        let json = arguments.map_or("", RawValue::get);
        ProviderError::invalid_json("tool call arguments", &error, json)
    })
}

/// Text of a streamed `content` value: a string, or an array of `{"type": "text", "text": …}`
/// parts; each may start or end inside a character.
fn content_fragment(content: Option<&RawValue>) -> Result<Vec<u8>, ProviderError> {
    #[derive(Deserialize)]
    struct Part {
        text: Option<Fragment>,
    }
    fragment_of(content, |json| {
        if !json.starts_with('[') {
            return Ok(Vec::new());
        }
        let parts: Vec<Part> = serde_json::from_str(json)?;
        Ok(parts
            .into_iter()
            .flat_map(|part| part.text.unwrap_or_default().0)
            .collect())
    })
    .map_err(|error| {
        let json = content.map_or("", RawValue::get);
        ProviderError::invalid_json("stream chunk content", &error, json)
    })
}

/// The id a call gets when the server sent none, so that its result can still refer to it.
fn fallback_call_id(index: usize) -> String {
    format!("call_{index}")
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("stop") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
        None => FinishReason::Other(String::new()),
    }
}

/// Parses a complete Chat Completions response body.
///
/// Only the first choice is read (requests never ask for more than one).
///
/// # Errors
///
/// [`ProviderError::InvalidJson`] when the body is not a JSON completion,
/// [`ProviderError::ApiError`] when it is an error object, and [`ProviderError::Protocol`] when
/// it has no choices.
pub fn parse_response(body: &str) -> Result<ProviderResponse, ProviderError> {
    let response: ChatResponse = serde_json::from_str(body)
        .map_err(|error| ProviderError::invalid_json("chat completion response", &error, body))?;
    if let Some(error) = &response.error {
        return Err(ProviderError::embedded(error));
    }
    let choice = response
        .choices
        .and_then(|choices| choices.into_iter().next())
        .ok_or_else(|| {
            ProviderError::Protocol("the chat completion response contains no choices".into())
        })?;
    let (text, tool_calls) = match choice.message {
        Some(message) => {
            let calls = message.tool_calls.unwrap_or_default();
            let calls = calls
                .into_iter()
                .enumerate()
                .map(|(position, call)| {
                    let function = call.function.unwrap_or(FunctionDto {
                        name: None,
                        arguments: None,
                    });
                    Ok(ToolCall {
                        id: call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| {
                            fallback_call_id(call.index.map_or(position, |i| i as usize))
                        }),
                        name: function.name.unwrap_or_default(),
                        arguments: text_of(&arguments_fragment(function.arguments.as_deref())?),
                    })
                })
                .collect::<Result<_, ProviderError>>()?;
            (content_text(message.content.as_ref()), calls)
        }
        None => (String::new(), Vec::new()),
    };
    Ok(ProviderResponse {
        text,
        tool_calls,
        finish_reason: finish_reason(choice.finish_reason.as_deref()),
        usage: response.usage.as_ref().map(UsageDto::to_usage),
    })
}

#[derive(Deserialize)]
struct Chunk {
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<UsageDto>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    index: Option<u32>,
    delta: Option<ChunkDelta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    /// Read raw, so that a fragment holding half of a character is not refused.
    content: Option<Box<RawValue>>,
    tool_calls: Option<Vec<ToolCallDto>>,
}

/// A tool call being assembled from deltas.
#[derive(Debug, Clone, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// The end of the arguments that may still become a character.
    pending: TextJoiner,
    /// Whether [`StreamDelta::ToolCallStarted`] was emitted for it.
    announced: bool,
}

/// Accumulates a streamed Chat Completions response from its server-sent events.
///
/// Each event's `data` is a JSON chunk whose `choices[0].delta` carries text (`content`) or
/// tool-call fragments (`tool_calls[]`, keyed by `index`: the id and name come first, the
/// `arguments` text arrives in pieces, and calls may interleave). A chunk with empty `choices`
/// carries the usage, and `data: [DONE]` ends the stream.
#[derive(Debug, Clone, Default)]
pub struct OpenAiStream {
    text: String,
    /// The end of the text that may still become a character.
    pending: TextJoiner,
    calls: BTreeMap<u32, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// The events counted, the end (`[DONE]`) and the first error.
    latch: StreamLatch,
    /// What arrived so far, against the limits of [`crate::output`].
    meter: OutputMeter,
}

impl OpenAiStream {
    /// An empty accumulator.
    pub fn new() -> Self {
        OpenAiStream::default()
    }

    /// Ends the text and the arguments: what was held back will not be completed any more.
    fn flush(&mut self) -> Vec<StreamDelta> {
        for call in self.calls.values_mut() {
            let rest = call.pending.finish();
            call.arguments.push_str(&rest);
        }
        let rest = self.pending.finish();
        if rest.is_empty() {
            return Vec::new();
        }
        self.text.push_str(&rest);
        vec![StreamDelta::Text(rest)]
    }

    fn apply_tool_call(
        &mut self,
        call: ToolCallDto,
        deltas: &mut Vec<StreamDelta>,
    ) -> Result<(), ProviderError> {
        let id = call.id.filter(|id| !id.is_empty());
        // Servers that omit `index` send each call whole or in order: a new id starts a new
        // call, anything else continues the latest one.
        let index = call.index.unwrap_or_else(|| {
            let latest = self.calls.iter().next_back();
            match (&id, latest) {
                (_, None) => 0,
                (Some(id), Some((last, partial))) if partial.id != *id => last + 1,
                (_, Some((last, _))) => *last,
            }
        });
        if !self.calls.contains_key(&index) {
            self.meter.call_started()?;
        }
        let partial = self.calls.entry(index).or_default();
        if let Some(id) = id {
            if partial.id.is_empty() {
                self.meter.id(&id)?;
                partial.id = id;
            }
        }
        if let Some(function) = call.function {
            // The name arrives whole in the first delta; some servers repeat it later, so it is
            // set once rather than appended.
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                if partial.name.is_empty() {
                    self.meter.name(&name)?;
                    partial.name = name;
                }
            }
            let fragment = arguments_fragment(function.arguments.as_deref())?;
            let arguments = partial.pending.push(&fragment);
            self.meter.arguments(&arguments)?;
            partial.arguments.push_str(&arguments);
        }
        if !partial.announced && !partial.name.is_empty() {
            partial.announced = true;
            // The fallback id is only shown, not stored: should the real id still arrive, it
            // is the one the final call carries.
            let id = if partial.id.is_empty() {
                fallback_call_id(index as usize)
            } else {
                partial.id.clone()
            };
            deltas.push(StreamDelta::ToolCallStarted {
                id,
                name: partial.name.clone(),
            });
        }
        Ok(())
    }

    /// Whether `data: [DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.latch.has_ended()
    }
}

impl ProtocolStream for OpenAiStream {
    fn latch(&mut self) -> &mut StreamLatch {
        &mut self.latch
    }

    /// Reads one event and returns what can be shown already. Events after `[DONE]` are
    /// ignored.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidJson`] for a chunk that is not JSON and
    /// [`ProviderError::ApiError`] for an error chunk. The first error is kept: every later
    /// call, and [`finish`](Self::finish), returns it again.
    fn read_event(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.latch.end();
            return Ok(self.flush());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|error| ProviderError::invalid_json("stream chunk", &error, data))?;
        if let Some(error) = &chunk.error {
            return Err(ProviderError::embedded(error));
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.to_usage());
        }
        let mut deltas = Vec::new();
        // Only the first choice is followed; requests never ask for more than one.
        let choices = chunk.choices.unwrap_or_default();
        for choice in choices.into_iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(delta) = choice.delta {
                let text = self
                    .pending
                    .push(&content_fragment(delta.content.as_deref())?);
                if !text.is_empty() {
                    self.meter.text(&text)?;
                    self.text.push_str(&text);
                    deltas.push(StreamDelta::Text(text));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.apply_tool_call(call, &mut deltas)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(deltas)
    }

    /// The answer text received so far.
    fn text(&self) -> &str {
        &self.text
    }

    /// Ends the stream and returns the whole answer, tool calls in `index` order.
    ///
    /// # Errors
    ///
    /// [`ProviderError::StreamTruncated`] when `data: [DONE]` never arrived, or the error an
    /// earlier [`push`](Self::push) returned.
    fn finish(mut self) -> Result<ProviderResponse, ProviderError> {
        self.latch.check_whole(&self.text, self.calls.len())?;
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, call)| ToolCall {
                id: if call.id.is_empty() {
                    fallback_call_id(index as usize)
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let response = ProviderResponse {
            text: self.text,
            tool_calls,
            finish_reason: finish_reason(self.finish_reason.as_deref()),
            usage: self.usage,
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
    use crate::{build_request, HttpMethod, HttpRequest, Preset, ProviderConfig, ProviderKind};
    use serde_json::json;

    fn tools() -> Vec<WireTool> {
        vec![
            WireTool {
                name: "open_effort".into(),
                description: "Start an effort.".into(),
                parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            },
            WireTool {
                name: "search_efforts".into(),
                description: "Search.".into(),
                parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            },
        ]
    }

    fn conversation() -> Vec<WireMessage> {
        vec![
            WireMessage::System("You manage efforts.".into()),
            WireMessage::User("Let's work on the auth bug".into()),
            WireMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "open_effort".into(),
                    arguments: r#"{"name":"auth bug"}"#.into(),
                }],
            },
            WireMessage::ToolResult {
                call_id: "call_1".into(),
                name: "open_effort".into(),
                content: r#"{"ok":true}"#.into(),
            },
        ]
    }

    fn body_of(request: &HttpRequest) -> Value {
        serde_json::from_str(&request.body).unwrap()
    }

    #[test]
    fn request_maps_every_message_kind() {
        let config = ProviderConfig::from_preset(Preset::OpenAi, Some("sk-1".into()));
        let options = RequestOptions::new("gpt-4o-mini")
            .with_max_tokens(512)
            .with_temperature(0.2);
        let request = build_request(&config, &options, &conversation(), &tools()).unwrap();
        assert_eq!(request.method, HttpMethod::Post);
        assert_eq!(request.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(
            request.headers,
            vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("authorization".to_string(), "Bearer sk-1".to_string()),
            ]
        );
        assert_eq!(
            body_of(&request),
            json!({
                "model": "gpt-4o-mini",
                "max_completion_tokens": 512,
                "temperature": 0.2,
                "messages": [
                    {"role": "system", "content": "You manage efforts."},
                    {"role": "user", "content": "Let's work on the auth bug"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "open_effort", "arguments": "{\"name\":\"auth bug\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "{\"ok\":true}"},
                ],
                "tools": [
                    {"type": "function", "function": {"name": "open_effort", "description": "Start an effort.",
                        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}},
                    {"type": "function", "function": {"name": "search_efforts", "description": "Search.",
                        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},
                ],
            })
        );
    }

    #[test]
    fn request_body_text_is_deterministic_and_ordered() {
        let config = ProviderConfig::from_preset(Preset::Ollama, None);
        let options = RequestOptions::new("llama3.2").with_stream(true);
        let messages = [WireMessage::User("hi".into())];
        let request = build_request(&config, &options, &messages, &[]).unwrap();
        assert_eq!(
            request.body,
            r#"{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"max_tokens":4096,"stream":true,"stream_options":{"include_usage":true}}"#
        );
        assert_eq!(
            build_request(&config, &options, &messages, &[]).unwrap(),
            request
        );
        // Local servers get no authentication header at all.
        assert_eq!(request.header("authorization"), None);
    }

    #[test]
    fn assistant_text_with_tool_calls_keeps_its_text() {
        let message = WireMessage::Assistant {
            text: "Opening it.".into(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "open_effort".into(),
                arguments: "{}".into(),
            }],
        };
        let json = serde_json::to_value(chat_message(&message)).unwrap();
        assert_eq!(json["content"], "Opening it.");
        let plain = serde_json::to_value(chat_message(&WireMessage::assistant_text(""))).unwrap();
        assert_eq!(plain, json!({"role": "assistant", "content": ""}));
    }

    #[test]
    fn tool_choice_mapping() {
        let config = ProviderConfig::from_preset(Preset::OpenRouter, Some("k".into()));
        let cases = [
            (ToolChoice::Auto, None),
            (ToolChoice::None, Some(json!("none"))),
            (ToolChoice::Required, Some(json!("required"))),
            (
                ToolChoice::Function("search_efforts".into()),
                Some(json!({"type": "function", "function": {"name": "search_efforts"}})),
            ),
        ];
        for (choice, expected) in cases {
            let options = RequestOptions::new("m").with_tool_choice(choice.clone());
            let body = body_of(&build_request(&config, &options, &[], &tools()).unwrap());
            assert_eq!(body.get("tool_choice"), expected.as_ref(), "{choice:?}");
        }
        // Without tools, a "none" choice is simply left out.
        let options = RequestOptions::new("m").with_tool_choice(ToolChoice::None);
        let body = body_of(&build_request(&config, &options, &[], &[]).unwrap());
        assert_eq!(body.get("tool_choice"), None);
        assert_eq!(body.get("tools"), None);
    }

    #[test]
    fn extra_headers_are_added_and_can_replace_built_in_ones() {
        let config = ProviderConfig::from_preset(Preset::OpenRouter, Some("k".into()))
            .with_header("HTTP-Referer", "https://ccm.example")
            .with_header("Content-Type", "application/json; charset=utf-8");
        let request = build_request(&config, &RequestOptions::new("m"), &[], &[]).unwrap();
        assert_eq!(
            request.headers,
            vec![
                ("authorization".to_string(), "Bearer k".to_string()),
                (
                    "HTTP-Referer".to_string(),
                    "https://ccm.example".to_string()
                ),
                (
                    "Content-Type".to_string(),
                    "application/json; charset=utf-8".to_string()
                ),
            ]
        );
    }

    #[test]
    fn invalid_settings_are_reported_before_sending() {
        let config = ProviderConfig::custom(ProviderKind::OpenAiCompatible, "localhost:8080", None);
        assert!(matches!(
            build_request(&config, &RequestOptions::new("m"), &[], &[]),
            Err(ProviderError::InvalidConfig(_))
        ));
        let config = ProviderConfig::from_preset(Preset::Ollama, None);
        assert!(matches!(
            build_request(&config, &RequestOptions::new(""), &[], &[]),
            Err(ProviderError::InvalidConfig(_))
        ));
    }

    #[test]
    fn parses_a_text_response() {
        let body = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
            "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},
            "logprobs":null,"finish_reason":"stop"}],
            "usage":{"prompt_tokens":19,"completion_tokens":3,"total_tokens":22}}"#;
        assert_eq!(
            parse_response(body).unwrap(),
            ProviderResponse {
                text: "Hello!".into(),
                tool_calls: vec![],
                finish_reason: FinishReason::Stop,
                usage: Some(Usage {
                    prompt_tokens: 19,
                    completion_tokens: 3
                }),
            }
        );
    }

    #[test]
    fn parses_a_tool_call_response() {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,
            "tool_calls":[
              {"id":"call_a","type":"function","function":{"name":"open_effort","arguments":"{\"name\":\"auth\"}"}},
              {"id":"call_b","type":"function","function":{"name":"search_efforts","arguments":"{\"query\":\"db\"}"}}
            ]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":20}}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(response.text, "");
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "open_effort".into(),
                    arguments: r#"{"name":"auth"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "search_efforts".into(),
                    arguments: r#"{"query":"db"}"#.into()
                },
            ]
        );
        assert_eq!(
            response.to_wire_message(),
            WireMessage::Assistant {
                text: String::new(),
                tool_calls: response.tool_calls.clone()
            }
        );
    }

    #[test]
    fn lenient_with_compatible_servers() {
        // No ids, arguments as an object, content as text parts, no usage, null finish reason.
        let body = r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "tool_calls":[{"function":{"name":"open_effort","arguments":{"name":"x"}}},
                          {"id":"","function":{"name":"close_effort","arguments":null}}]},
            "finish_reason":null}]}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(response.text, "ab");
        assert_eq!(response.usage, None);
        assert_eq!(response.finish_reason, FinishReason::Other(String::new()));
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "call_0".into(),
                    name: "open_effort".into(),
                    arguments: r#"{"name":"x"}"#.into()
                },
                ToolCall {
                    id: "call_1".into(),
                    name: "close_effort".into(),
                    arguments: String::new()
                },
            ]
        );
    }

    #[test]
    fn finish_reasons_map_to_the_neutral_enum() {
        for (raw, expected) in [
            ("stop", FinishReason::Stop),
            ("tool_calls", FinishReason::ToolCalls),
            ("function_call", FinishReason::ToolCalls),
            ("length", FinishReason::Length),
            (
                "content_filter",
                FinishReason::Other("content_filter".into()),
            ),
        ] {
            let body = format!(
                r#"{{"choices":[{{"message":{{"content":"x"}},"finish_reason":"{raw}"}}]}}"#
            );
            assert_eq!(parse_response(&body).unwrap().finish_reason, expected);
        }
    }

    #[test]
    fn bad_bodies_are_typed_errors() {
        let error = parse_response("<html>oops</html>").unwrap_err();
        let ProviderError::InvalidJson { context, snippet } = &error else {
            panic!("{error:?}");
        };
        assert!(
            context.starts_with("chat completion response ("),
            "{context}"
        );
        assert_eq!(snippet, "<html>oops</html>");

        assert_eq!(
            parse_response(r#"{"choices":[]}"#).unwrap_err(),
            ProviderError::Protocol("the chat completion response contains no choices".into())
        );
        assert_eq!(
            parse_response(r#"{"error":{"message":"Provider returned error","code":502}}"#)
                .unwrap_err(),
            ProviderError::ApiError {
                error_type: Some("502".into()),
                message: "Provider returned error".into()
            }
        );
        assert!(matches!(
            parse_response(r#"{"choices":"nope"}"#),
            Err(ProviderError::InvalidJson { .. })
        ));
    }

    /// A realistic stream: a role chunk, text, two tool calls whose argument fragments
    /// interleave, the finish chunk, the usage chunk, `[DONE]`, with an OpenRouter-style
    /// comment line and CRLF line breaks mixed in.
    const STREAM: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sure — \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"on it 🦀\"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_A\",\"type\":\"function\",\"function\":{\"name\":\"open_effort\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_B\",\"type\":\"function\",\"function\":{\"name\":\"search_efforts\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"na\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"query\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"me\\\":\\\"auth bug\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"wörld\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":812,\"completion_tokens\":41,\"total_tokens\":853}}\n\n",
        "data: [DONE]\n\n",
    );

    fn expected_stream_response() -> ProviderResponse {
        ProviderResponse {
            text: "Sure — on it 🦀".into(),
            tool_calls: vec![
                ToolCall {
                    id: "call_A".into(),
                    name: "open_effort".into(),
                    arguments: r#"{"name":"auth bug"}"#.into(),
                },
                ToolCall {
                    id: "call_B".into(),
                    name: "search_efforts".into(),
                    arguments: r#"{"query":"wörld"}"#.into(),
                },
            ],
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                prompt_tokens: 812,
                completion_tokens: 41,
            }),
        }
    }

    fn run(chunks: &[&[u8]]) -> (Vec<StreamDelta>, Result<ProviderResponse, ProviderError>) {
        stream_checks::run(ProviderKind::OpenAiCompatible, chunks)
    }

    #[test]
    fn stream_accumulates_text_and_interleaved_tool_calls() {
        let (deltas, response) = run(&[STREAM.as_bytes()]);
        let expected = expected_stream_response();
        assert_eq!(
            deltas,
            stream_checks::text_then_calls(&["Sure — ", "on it 🦀"], &expected)
        );
        assert_eq!(response.unwrap(), expected);
    }

    #[test]
    fn stream_gives_the_same_result_split_at_every_byte() {
        let bytes = STREAM.as_bytes();
        let expected = expected_stream_response();
        stream_checks::assert_same_answer_split_at_every_byte(
            ProviderKind::OpenAiCompatible,
            bytes,
            &expected,
        );
        // And split into three pieces at every pair of offsets a few bytes apart, which cuts
        // multi-byte characters and CRLF pairs in every possible way.
        for first in 0..bytes.len() {
            for width in [1, 2, 3, 5] {
                let second = (first + width).min(bytes.len());
                let (_, response) =
                    run(&[&bytes[..first], &bytes[first..second], &bytes[second..]]);
                assert_eq!(
                    response.as_ref(),
                    Ok(&expected),
                    "cuts at {first} and {second}"
                );
            }
        }
    }

    #[test]
    fn stream_without_done_is_truncated_at_every_cut() {
        let bytes = STREAM.as_bytes();
        let done_at = STREAM.find("data: [DONE]").unwrap();
        stream_checks::assert_truncated_at_every_cut_before(
            ProviderKind::OpenAiCompatible,
            bytes,
            done_at,
        );
        let cut = STREAM
            .find("data: {\"id\":\"c1\",\"choices\":[],\"usage\"")
            .unwrap();
        assert_eq!(
            run(&[&bytes[..cut]]).1,
            Err(ProviderError::StreamTruncated {
                events: 10,
                text_chars: 14,
                tool_calls: 2
            })
        );
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"open_effort\",\"arguments\":\"{\\\"name\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\"x\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"close_effort\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"close_effort\",\"arguments\":\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let response = run(&[stream.as_bytes()]).1.unwrap();
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "open_effort".into(),
                    arguments: r#"{"name":"x"}"#.into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "close_effort".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(response.usage, None);
    }

    /// What a stream shows whose one call, `open_effort`, came without an id at first: the
    /// call starts at once, under the fallback id of its index, whatever id comes later.
    fn open_effort_started_under_fallback_id() -> Vec<StreamDelta> {
        vec![StreamDelta::ToolCallStarted {
            id: "call_0".into(),
            name: "open_effort".into(),
        }]
    }

    #[test]
    fn a_whole_call_in_one_chunk_without_id_gets_a_fallback_id() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"open_effort\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, response) = run(&[stream.as_bytes()]);
        assert_eq!(deltas, open_effort_started_under_fallback_id());
        let response = response.unwrap();
        assert_eq!(response.tool_calls[0].id, "call_0");
        assert_eq!(
            response.usage,
            Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 1
            })
        );
    }

    #[test]
    fn a_late_real_id_wins_over_the_fallback() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"open_effort\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_real\",\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, response) = run(&[stream.as_bytes()]);
        assert_eq!(deltas, open_effort_started_under_fallback_id());
        assert_eq!(
            response.unwrap().tool_calls,
            vec![ToolCall {
                id: "call_real".into(),
                name: "open_effort".into(),
                arguments: "{}".into()
            }]
        );
    }

    #[test]
    fn a_malformed_chunk_fails_the_stream_and_stays_failed() {
        let mut stream = OpenAiStream::new();
        let good = SseEvent {
            event: None,
            data: r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#.into(),
        };
        let bad = SseEvent {
            event: None,
            data: r#"{"choices":[{"index":0,"delta":{"content":"b""#.into(),
        };
        stream.push(&good).unwrap();
        let error = stream.push(&bad).unwrap_err();
        let ProviderError::InvalidJson { context, snippet } = &error else {
            panic!("{error:?}");
        };
        assert!(context.starts_with("stream chunk ("), "{context}");
        assert_eq!(snippet, r#"{"choices":[{"index":0,"delta":{"content":"b""#);
        assert_eq!(stream.push(&good).unwrap_err(), error);
        assert_eq!(stream.text(), "a");
        assert_eq!(stream.finish().unwrap_err(), error);
    }

    #[test]
    fn an_error_chunk_mid_stream_is_an_error() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n",
            "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, response) = run(&[stream.as_bytes()]);
        assert_eq!(deltas, vec![]);
        stream_checks::assert_transient_api_error(
            &response.unwrap_err(),
            "server_error",
            "The server had an error while processing your request.",
        );
    }

    #[test]
    fn events_after_done_are_ignored() {
        let mut stream = OpenAiStream::new();
        let done = SseEvent {
            event: None,
            data: "[DONE]".into(),
        };
        stream.push(&done).unwrap();
        assert!(stream.is_done());
        let late = SseEvent {
            event: None,
            data: "not json".into(),
        };
        assert_eq!(stream.push(&late).unwrap(), vec![]);
        let response = stream.finish().unwrap();
        assert_eq!(response.text, "");
        assert_eq!(response.finish_reason, FinishReason::Other(String::new()));
    }
}
