//! Anthropic Messages bodies, stream events and error bodies.

use serde_json::{json, Value};

use crate::http::reason;
use crate::reply::{argument_fragments, text_fragments, PlannedReply, RenderContext, SseEvent};
use crate::script::Fault;

/// The scripted override, else `tool_use` when there are tool calls and `end_turn` otherwise.
fn stop_reason(reply: &PlannedReply) -> String {
    reply.finish_reason.clone().unwrap_or_else(|| {
        if reply.calls.is_empty() {
            "end_turn".into()
        } else {
            "tool_use".into()
        }
    })
}

/// Anthropic's usage object; the mock never caches, so the cache counts are 0.
fn usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

/// The non-streaming `message` body. A text block is present only when there is text, so
/// an empty scripted reply gives `"content": []`.
pub(crate) fn message(reply: &PlannedReply, ctx: &RenderContext) -> Value {
    let mut content = Vec::new();
    if !reply.text.is_empty() {
        content.push(json!({"type": "text", "text": reply.text}));
    }
    for call in &reply.calls {
        content.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": call.input,
        }));
    }
    json!({
        "id": ctx.id,
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(ctx.prompt_tokens, reply.completion_tokens),
    })
}

/// The stream: `message_start`, a `ping`, one content block per text or tool call (start,
/// `text_delta` / `input_json_delta` fragments, stop), `message_delta` with the stop reason
/// and output tokens, and `message_stop`.
pub(crate) fn stream_events(reply: &PlannedReply, ctx: &RenderContext) -> Vec<SseEvent> {
    let start = json!({"type": "message_start", "message": {
        "id": ctx.id,
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": usage(ctx.prompt_tokens, 1),
    }});
    let mut events = vec![
        SseEvent::named("message_start", start.to_string(), false),
        // The real API sends pings at any point; one early ping keeps clients honest.
        SseEvent::named("ping", json!({"type": "ping"}).to_string(), false),
    ];
    let mut index = 0usize;
    if !reply.text.is_empty() {
        events.push(SseEvent::named(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}).to_string(),
            false,
        ));
        for piece in text_fragments(&reply.text) {
            events.push(SseEvent::named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}).to_string(),
                true,
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    for call in &reply.calls {
        events.push(SseEvent::named(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call.id, "name": call.name, "input": {},
            }})
            .to_string(),
            false,
        ));
        for piece in argument_fragments(&call.arguments) {
            events.push(SseEvent::named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}).to_string(),
                true,
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    events.push(SseEvent::named(
        "message_delta",
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": {"output_tokens": reply.completion_tokens}})
        .to_string(),
        false,
    ));
    events.push(SseEvent::named(
        "message_stop",
        json!({"type": "message_stop"}).to_string(),
        false,
    ));
    events
}

/// The `content_block_stop` event of block `index`.
fn block_stop(index: usize) -> SseEvent {
    SseEvent::named(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}).to_string(),
        false,
    )
}

/// An Anthropic-shaped error body: `{"type": "error", "error": {"type", "message"}}`.
pub(crate) fn error_body(status: u16, fault: &Fault) -> Value {
    let default_type = match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {
        "type": fault.error_type.as_deref().unwrap_or(default_type),
        "message": fault.message.clone().unwrap_or_else(|| format!("mock fault: HTTP {status} {}", reason(status))),
    }})
}

/// A plain error in Anthropic's shape, for requests the server itself rejects.
pub(crate) fn simple_error(message: &str, error_type: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}
