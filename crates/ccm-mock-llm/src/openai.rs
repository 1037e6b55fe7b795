//! OpenAI Chat Completions bodies, stream chunks and error bodies.

use serde_json::{json, Value};

use crate::http::reason;
use crate::reply::{argument_fragments, text_fragments, PlannedReply, RenderContext, SseEvent};
use crate::script::Fault;

/// The scripted override, else `tool_calls` when there are tool calls and `stop` otherwise.
fn finish_reason(reply: &PlannedReply) -> String {
    reply.finish_reason.clone().unwrap_or_else(|| {
        if reply.calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    })
}

/// OpenAI's usage object.
fn usage(ctx: &RenderContext, reply: &PlannedReply) -> Value {
    json!({
        "prompt_tokens": ctx.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": ctx.prompt_tokens + reply.completion_tokens,
    })
}

/// The non-streaming `chat.completion` body.
pub(crate) fn completion(reply: &PlannedReply, ctx: &RenderContext) -> Value {
    let mut message = json!({"role": "assistant", "content": reply.text});
    if !reply.calls.is_empty() {
        // OpenAI sends `content: null` next to tool calls when there is no text.
        if reply.text.is_empty() {
            message["content"] = Value::Null;
        }
        message["tool_calls"] = reply
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
    }
    json!({
        "id": ctx.id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": "fp_ccm_mock",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(reply),
        }],
        "usage": usage(ctx, reply),
    })
}

/// The stream: a role chunk, text deltas, tool-call deltas (a header chunk with id and name,
/// then the arguments in small fragments), a finish chunk, the usage chunk when asked for,
/// and `[DONE]`.
pub(crate) fn stream_events(reply: &PlannedReply, ctx: &RenderContext) -> Vec<SseEvent> {
    let chunk = |delta: Value, finish: Option<String>| -> String {
        let mut chunk = json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": "fp_ccm_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if ctx.include_usage {
            // With include_usage every chunk carries `usage: null` except the last one.
            chunk["usage"] = Value::Null;
        }
        chunk.to_string()
    };

    let mut events = vec![SseEvent::data(
        chunk(json!({"role": "assistant", "content": ""}), None),
        false,
    )];
    for piece in text_fragments(&reply.text) {
        events.push(SseEvent::data(chunk(json!({"content": piece}), None), true));
    }
    for (index, call) in reply.calls.iter().enumerate() {
        let header = json!({"tool_calls": [{
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        events.push(SseEvent::data(chunk(header, None), true));
        for piece in argument_fragments(&call.arguments) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            events.push(SseEvent::data(chunk(delta, None), true));
        }
    }
    events.push(SseEvent::data(
        chunk(json!({}), Some(finish_reason(reply))),
        false,
    ));
    if ctx.include_usage {
        let last = json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": "fp_ccm_mock",
            "choices": [],
            "usage": usage(ctx, reply),
        });
        events.push(SseEvent::data(last.to_string(), false));
    }
    events.push(SseEvent::data("[DONE]".into(), false));
    events
}

/// An OpenAI-shaped error body: `{"error": {"message", "type", "param", "code"}}`.
pub(crate) fn error_body(status: u16, fault: &Fault) -> Value {
    let (default_type, default_code) = match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        404 => ("invalid_request_error", Some("model_not_found")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    json!({"error": {
        "message": fault.message.clone().unwrap_or_else(|| format!("mock fault: HTTP {status} {}", reason(status))),
        "type": fault.error_type.as_deref().unwrap_or(default_type),
        "param": null,
        "code": fault.code.as_deref().or(default_code),
    }})
}

/// A plain error in OpenAI's shape, for requests the server itself rejects.
pub(crate) fn simple_error(message: &str, error_type: &str) -> Value {
    json!({"error": {"message": message, "type": error_type, "param": null, "code": null}})
}
