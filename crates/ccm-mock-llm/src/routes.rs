//! Routing and the endpoints: the provider protocols, embeddings, CORS preflights and the
//! `/__mock/*` control endpoints, with the faults of scripted replies applied on the way out.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::http::{self, Request};
use crate::inspect::{chat_facts, ChatFacts, Protocol};
use crate::record::{RecordedRequest, RequestKind};
use crate::reply::{cut_in_half, PlannedReply, RenderContext, SseEvent, PLACEHOLDER};
use crate::script::{script_from_value, Fault, HugeField, ScriptedReply, ToolArguments};
use crate::shared::{Shared, DEFAULT_MODEL};
use crate::{anthropic, embeddings, openai};

/// The request headers a browser may send cross-origin; preflights allow these and any
/// other header the preflight asks for.
const ALLOWED_HEADERS: &str = "authorization, content-type, x-api-key, anthropic-version, \
anthropic-beta, anthropic-dangerous-direct-browser-access, openai-organization, \
openai-project, x-stainless-retry-count, x-stainless-timeout, x-request-id";
/// The response headers a browser script may read.
const EXPOSED_HEADERS: &str = "retry-after, x-request-id, request-id";

/// How a connection ends after its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The response is complete: close politely.
    Graceful,
    /// Close at once, response or not (faults, or the client went away).
    Abort,
    /// Close politely, then stop the server (`/__mock/shutdown`).
    StopServer,
}

/// One response header.
fn header(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_string(), value.into())
}

/// Headers on every response: CORS, `Connection: close`, and the request id when logged.
fn common_headers(seq: Option<u64>) -> Vec<(String, String)> {
    let mut headers = vec![
        header("Access-Control-Allow-Origin", "*"),
        header("Access-Control-Expose-Headers", EXPOSED_HEADERS),
        header("Connection", "close"),
    ];
    if let Some(seq) = seq {
        headers.push(header("x-request-id", format!("req_mock_{seq}")));
        headers.push(header("request-id", format!("req_mock_{seq}")));
    }
    headers
}

/// Writes a complete response whose body is sized by `Content-Length`.
fn send(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra: &[(String, String)],
    seq: Option<u64>,
) -> io::Result<()> {
    let mut headers = common_headers(seq);
    headers.push(header("Content-Type", content_type));
    headers.push(header("Content-Length", body.len().to_string()));
    headers.extend_from_slice(extra);
    http::write_head(stream, status, &headers)?;
    stream.write_all(body)?;
    stream.flush()
}

/// Writes a complete JSON response.
pub(crate) fn send_json(
    stream: &mut TcpStream,
    status: u16,
    body: &Value,
    extra: &[(String, String)],
    seq: Option<u64>,
) -> io::Result<()> {
    send(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
        extra,
        seq,
    )
}

/// The endpoint kind, by the end of the path only, so that any base-URL prefix works
/// (`/v1`, `/api/openai/v1`, a proxy's or OpenRouter's prefix, or none).
fn classify(path: &str) -> RequestKind {
    if path.ends_with("/chat/completions") {
        RequestKind::OpenaiChat
    } else if path.ends_with("/messages") {
        RequestKind::AnthropicMessages
    } else if path.ends_with("/embeddings") {
        RequestKind::Embeddings
    } else if path.ends_with("/models") {
        RequestKind::Models
    } else {
        RequestKind::Other
    }
}

/// A log entry for a request, before its sequence number and outcome are known.
fn record(request: &Request, kind: RequestKind) -> RecordedRequest {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &request.headers {
        headers
            .entry(name.clone())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(value);
            })
            .or_insert_with(|| value.clone());
    }
    let (body, body_text) = if request.body.is_empty() {
        (None, None)
    } else {
        match serde_json::from_slice::<Value>(&request.body) {
            Ok(value) => (Some(value), None),
            Err(_) => (
                None,
                Some(String::from_utf8_lossy(&request.body).into_owned()),
            ),
        }
    };
    RecordedRequest {
        seq: 0,
        at_ms: 0,
        method: request.method.clone(),
        path: request.path.clone(),
        query: request.query.clone(),
        headers,
        body,
        body_text,
        kind,
        stream: false,
        summary_request: false,
        last_user_text: None,
        reply_source: None,
        reply: None,
        status: None,
    }
}

/// Answers one parsed request. Everything but `/__mock/*` is logged before it is answered.
pub(crate) fn route(shared: &Shared, request: &Request, stream: &mut TcpStream) -> Ending {
    let path = request.path.as_str();
    let is_control = path == "/__mock" || path.starts_with("/__mock/");
    if request.method == "OPTIONS" {
        let seq = if is_control {
            None
        } else {
            let mut entry = record(request, RequestKind::Preflight);
            entry.status = Some(204);
            Some(shared.push_log(entry))
        };
        return finish(preflight(request, stream, seq));
    }
    if is_control {
        return control(shared, request, stream);
    }
    let kind = classify(path);
    let allowed = match kind {
        RequestKind::OpenaiChat | RequestKind::AnthropicMessages | RequestKind::Embeddings => {
            "POST"
        }
        RequestKind::Models => "GET",
        _ => "",
    };
    if !allowed.is_empty() && request.method != allowed {
        let mut entry = record(request, kind);
        entry.status = Some(405);
        let seq = shared.push_log(entry);
        let message = format!("{path} accepts {allowed} only, not {}", request.method);
        let body = error_for(kind, &message);
        let extra = [header("Allow", format!("{allowed}, OPTIONS"))];
        return finish(send_json(stream, 405, &body, &extra, Some(seq)));
    }
    match kind {
        RequestKind::OpenaiChat => chat(shared, request, stream, Protocol::OpenAi),
        RequestKind::AnthropicMessages => chat(shared, request, stream, Protocol::Anthropic),
        RequestKind::Embeddings => embeddings_endpoint(shared, request, stream),
        RequestKind::Models => {
            let mut entry = record(request, kind);
            entry.status = Some(200);
            let seq = shared.push_log(entry);
            let data: Vec<Value> = shared
                .state()
                .models
                .iter()
                .map(|id| {
                    json!({
                        "id": id,
                        "object": "model",
                        "type": "model",
                        "display_name": id,
                        "created": 0,
                        "owned_by": "ccm-mock-llm",
                    })
                })
                .collect();
            let body = json!({"object": "list", "data": data, "has_more": false});
            finish(send_json(stream, 200, &body, &[], Some(seq)))
        }
        RequestKind::Preflight | RequestKind::Other => {
            let mut entry = record(request, RequestKind::Other);
            if path == "/" && request.method == "GET" {
                entry.status = Some(200);
                let seq = shared.push_log(entry);
                let text = "ccm-mock-llm: a mock LLM provider for tests. POST /v1/chat/completions, \
                            POST /v1/messages, POST /v1/embeddings, GET /v1/models; control under /__mock/.\n";
                return finish(send(
                    stream,
                    200,
                    "text/plain; charset=utf-8",
                    text.as_bytes(),
                    &[],
                    Some(seq),
                ));
            }
            entry.status = Some(404);
            let seq = shared.push_log(entry);
            let message = format!(
                "unknown path {path}: the mock serves POST …/chat/completions, POST …/messages, \
                 POST …/embeddings, GET …/models and /__mock/*"
            );
            finish(send_json(
                stream,
                404,
                &openai::simple_error(&message, "invalid_request_error"),
                &[],
                Some(seq),
            ))
        }
    }
}

/// A write failure means the client went away; there is nothing left to close politely.
fn finish(result: io::Result<()>) -> Ending {
    match result {
        Ok(()) => Ending::Graceful,
        Err(_) => Ending::Abort,
    }
}

/// An error body in the shape of the endpoint's protocol.
fn error_for(kind: RequestKind, message: &str) -> Value {
    match kind {
        RequestKind::AnthropicMessages => anthropic::simple_error(message, "invalid_request_error"),
        _ => openai::simple_error(message, "invalid_request_error"),
    }
}

/// The CORS preflight answer: any origin, the provider headers, and anything else asked.
fn preflight(request: &Request, stream: &mut TcpStream, seq: Option<u64>) -> io::Result<()> {
    let mut allowed: Vec<String> = ALLOWED_HEADERS.split(", ").map(str::to_string).collect();
    // Allow whatever else the browser asks for: this is a test server, and refusing an
    // unexpected SDK header would make a browser test fail for a reason unrelated to CCM.
    if let Some(requested) = request.header("access-control-request-headers") {
        for name in requested.split(',') {
            let name = name.trim().to_ascii_lowercase();
            let is_token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if is_token && !allowed.contains(&name) {
                allowed.push(name);
            }
        }
    }
    let mut headers = common_headers(seq);
    headers.push(header("Access-Control-Allow-Methods", "GET, POST, OPTIONS"));
    headers.push(header("Access-Control-Allow-Headers", allowed.join(", ")));
    headers.push(header("Access-Control-Max-Age", "600"));
    if request
        .header("access-control-request-private-network")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        headers.push(header("Access-Control-Allow-Private-Network", "true"));
    }
    // A 204 response carries neither a body nor Content-Length (RFC 9110 §8.6).
    http::write_head(stream, 204, &headers)
}

/// A chat request under either protocol: validate, pick the reply, log, serve.
fn chat(shared: &Shared, request: &Request, stream: &mut TcpStream, protocol: Protocol) -> Ending {
    let kind = match protocol {
        Protocol::OpenAi => RequestKind::OpenaiChat,
        Protocol::Anthropic => RequestKind::AnthropicMessages,
    };
    let mut entry = record(request, kind);
    let facts = match &entry.body {
        Some(body) => chat_facts(protocol, body),
        None if request.body.is_empty() => Err("the request body is empty".to_string()),
        None => Err("the request body is not valid JSON".to_string()),
    };
    let facts = match facts {
        Ok(facts) => facts,
        Err(message) => {
            entry.status = Some(400);
            let seq = shared.push_log(entry);
            return finish(send_json(
                stream,
                400,
                &error_for(kind, &message),
                &[],
                Some(seq),
            ));
        }
    };
    entry.stream = facts.stream;
    entry.summary_request = facts.summary_request;
    entry.last_user_text = Some(facts.last_user_text.clone());
    let (seq, reply) = shared.take_reply(entry, &facts);
    serve(stream, protocol, seq, &reply, &facts)
}

/// Sends a chosen reply, applying its fault.
fn serve(
    stream: &mut TcpStream,
    protocol: Protocol,
    seq: u64,
    reply: &ScriptedReply,
    facts: &ChatFacts,
) -> Ending {
    let fault = reply.fault.clone().unwrap_or_default();
    if let Some(ms) = fault.delay_ms {
        thread::sleep(Duration::from_millis(ms));
    }
    if fault.close_without_response {
        return Ending::Abort;
    }
    if let Some(status) = fault.status {
        let body = match protocol {
            Protocol::OpenAi => openai::error_body(status, &fault),
            Protocol::Anthropic => anthropic::error_body(status, &fault),
        };
        let extra: Vec<(String, String)> = fault
            .retry_after
            .iter()
            .map(|value| header("Retry-After", value.clone()))
            .collect();
        return finish(send_json(stream, status, &body, &extra, Some(seq)));
    }
    if let Some(body) = &fault.body {
        let content_type = fault
            .content_type
            .as_deref()
            .unwrap_or("text/html; charset=utf-8");
        return finish(send(
            stream,
            200,
            content_type,
            body.as_bytes(),
            &[],
            Some(seq),
        ));
    }
    let grown;
    let reply = match &reply.huge {
        Some(huge) => {
            grown = with_placeholder(reply, huge.field);
            &grown
        }
        None => reply,
    };
    let planned = PlannedReply::new(reply, seq, protocol);
    let ctx = RenderContext {
        id: match protocol {
            Protocol::OpenAi => format!("chatcmpl-mock-{seq}"),
            Protocol::Anthropic => format!("msg_mock_{seq}"),
        },
        model: facts.model.clone(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        prompt_tokens: facts.prompt_tokens,
        include_usage: facts.include_usage,
    };
    if facts.stream {
        let events = match protocol {
            Protocol::OpenAi => openai::stream_events(&planned, &ctx),
            Protocol::Anthropic => anthropic::stream_events(&planned, &ctx),
        };
        if let Some(huge) = &reply.huge {
            return finish(stream_huge(stream, &events, huge.chars, seq));
        }
        return stream_out(stream, &events, &fault, seq);
    }
    let body = match protocol {
        Protocol::OpenAi => openai::completion(&planned, &ctx),
        Protocol::Anthropic => anthropic::message(&planned, &ctx),
    }
    .to_string();
    if let Some(huge) = &reply.huge {
        return finish(send_huge_body(stream, &body, huge.chars, seq));
    }
    let body = if fault.malformed_json || fault.malformed_chunk.is_some() {
        cut_in_half(&body)
    } else {
        body.as_str()
    };
    finish(send(
        stream,
        200,
        "application/json",
        body.as_bytes(),
        &[],
        Some(seq),
    ))
}

/// The letters a grown field is made of, written this many at a time.
const HUGE_BLOCK_CHARS: u64 = 64 * 1024;

/// The reply with the field to grow set to the placeholder.
fn with_placeholder(reply: &ScriptedReply, field: HugeField) -> ScriptedReply {
    let mut reply = reply.clone();
    match field {
        HugeField::Text => reply.text = Some(PLACEHOLDER.to_string()),
        HugeField::Arguments => {
            if let Some(call) = reply.tool_calls.first_mut() {
                call.arguments = ToolArguments::Raw(format!("{{\"data\":\"{PLACEHOLDER}\"}}"));
            }
        }
    }
    reply
}

/// Splits rendered bytes around the placeholder.
fn around_placeholder(rendered: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut buffer = [0u8; 4];
    let needle = PLACEHOLDER.encode_utf8(&mut buffer).as_bytes();
    let at = rendered.windows(needle.len()).position(|w| w == needle)?;
    Some((&rendered[..at], &rendered[at + needle.len()..]))
}

/// Writes `chars` letters in blocks, each block framed by `frame` (which writes the bytes
/// before and after it).
fn write_letters(chars: u64, mut frame: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let block = vec![b'x'; HUGE_BLOCK_CHARS as usize];
    let mut left = chars;
    while left > 0 {
        let now = left.min(HUGE_BLOCK_CHARS);
        frame(&block[..now as usize])?;
        left -= now;
    }
    Ok(())
}

/// Streams the events of a grown reply: the event holding the placeholder is sent as many
/// times as it takes, each time with a block of letters in its place.
fn stream_huge(
    stream: &mut TcpStream,
    events: &[SseEvent],
    chars: u64,
    seq: u64,
) -> io::Result<()> {
    let mut headers = common_headers(Some(seq));
    headers.push(header("Content-Type", "text/event-stream; charset=utf-8"));
    headers.push(header("Cache-Control", "no-cache"));
    headers.push(header("Transfer-Encoding", "chunked"));
    http::write_head(stream, 200, &headers)?;
    for event in events {
        let bytes = event.encode(false);
        match around_placeholder(&bytes) {
            Some((before, after)) => write_letters(chars, |letters| {
                let mut framed = Vec::with_capacity(before.len() + letters.len() + after.len());
                framed.extend_from_slice(before);
                framed.extend_from_slice(letters);
                framed.extend_from_slice(after);
                http::write_chunk(stream, &framed)
            })?,
            None => http::write_chunk(stream, &bytes)?,
        }
    }
    http::write_last_chunk(stream)
}

/// Sends the JSON body of a grown reply, chunked, with the letters in the placeholder's place.
fn send_huge_body(stream: &mut TcpStream, body: &str, chars: u64, seq: u64) -> io::Result<()> {
    let mut headers = common_headers(Some(seq));
    headers.push(header("Content-Type", "application/json"));
    headers.push(header("Transfer-Encoding", "chunked"));
    http::write_head(stream, 200, &headers)?;
    let (before, after) = around_placeholder(body.as_bytes()).unwrap_or((body.as_bytes(), b""));
    http::write_chunk(stream, before)?;
    write_letters(chars, |letters| http::write_chunk(stream, letters))?;
    http::write_chunk(stream, after)?;
    http::write_last_chunk(stream)
}

/// Writes the events as a chunked SSE body, applying the stream faults.
fn stream_out(stream: &mut TcpStream, events: &[SseEvent], fault: &Fault, seq: u64) -> Ending {
    let mut headers = common_headers(Some(seq));
    let abrupt = fault.truncate_abruptly && fault.truncate_after_chunks.is_some();
    if abrupt {
        // Some clients (Node's undici among them) take the end of a `Connection: close`
        // response as the end of the body even in the middle of a chunked body. Without
        // the header the response looks keep-alive, and a close mid-body is then reported
        // as the error it is. The connection is never reused: it is closed right after.
        headers.retain(|(name, _)| name != "Connection");
    }
    headers.push(header("Content-Type", "text/event-stream; charset=utf-8"));
    headers.push(header("Cache-Control", "no-cache"));
    headers.push(header("Transfer-Encoding", "chunked"));
    if http::write_head(stream, 200, &headers).is_err() {
        return Ending::Abort;
    }
    let malformed_at = fault.malformed_chunk.or_else(|| {
        fault
            .malformed_json
            .then(|| events.iter().position(|e| e.carries_content).unwrap_or(0))
    });
    let limit = fault.truncate_after_chunks.unwrap_or(usize::MAX);
    for (i, event) in events.iter().enumerate() {
        if i >= limit {
            if fault.truncate_abruptly {
                return Ending::Abort;
            }
            break;
        }
        if i > 0 {
            if let Some(ms) = fault.chunk_delay_ms {
                thread::sleep(Duration::from_millis(ms));
            }
        }
        let bytes = event.encode(malformed_at == Some(i));
        if let Some(ms) = fault.trickle_ms {
            // One chunk per byte, so a client sees a character cut between chunks too.
            for byte in bytes {
                thread::sleep(Duration::from_millis(ms));
                if http::write_chunk(stream, &[byte]).is_err() {
                    return Ending::Abort;
                }
            }
            continue;
        }
        if http::write_chunk(stream, &bytes).is_err() {
            return Ending::Abort;
        }
    }
    finish(http::write_last_chunk(stream))
}

/// `POST …/embeddings`.
fn embeddings_endpoint(shared: &Shared, request: &Request, stream: &mut TcpStream) -> Ending {
    let mut entry = record(request, RequestKind::Embeddings);
    let result = match &entry.body {
        Some(body) => embeddings::respond(body),
        None => Err("the request body is not valid JSON".to_string()),
    };
    let (status, body) = match result {
        Ok(body) => (200, body),
        Err(message) => (400, openai::simple_error(&message, "invalid_request_error")),
    };
    entry.status = Some(status);
    let seq = shared.push_log(entry);
    finish(send_json(stream, status, &body, &[], Some(seq)))
}

/// The `/__mock/*` endpoints. They are not logged, so the log shows only client traffic.
fn control(shared: &Shared, request: &Request, stream: &mut TcpStream) -> Ending {
    let action = request.path.trim_start_matches("/__mock").trim_matches('/');
    let method = request.method.as_str();
    let (status, body, ending) = match (method, action) {
        ("GET", "" | "health") => {
            let state = shared.state();
            let body = json!({
                "ok": true,
                "queued": state.queue.len(),
                "requests": state.log.len(),
                "uptime_ms": shared.elapsed_ms(),
            });
            (200, body, Ending::Graceful)
        }
        ("GET", "requests") => (200, json!(shared.state().log), Ending::Graceful),
        ("GET", "queue") => {
            let queue: Vec<ScriptedReply> = shared.state().queue.iter().cloned().collect();
            (200, json!(queue), Ending::Graceful)
        }
        ("POST", "script" | "enqueue") => match parse_script_body(&request.body) {
            Ok(replies) => {
                let mut state = shared.state();
                if action == "script" {
                    state.queue = replies.into();
                } else {
                    state.queue.extend(replies);
                }
                (
                    200,
                    json!({"ok": true, "queued": state.queue.len()}),
                    Ending::Graceful,
                )
            }
            Err(message) => (
                400,
                openai::simple_error(&message, "invalid_script"),
                Ending::Graceful,
            ),
        },
        ("POST", "reset") => {
            let mut state = shared.state();
            state.queue.clear();
            state.log.clear();
            state.models = vec![DEFAULT_MODEL.to_string()];
            (200, json!({"ok": true}), Ending::Graceful)
        }
        ("POST", "models") => match parse_model_names(&request.body) {
            Ok(models) => {
                let body = json!({"ok": true, "models": models});
                shared.state().models = models;
                (200, body, Ending::Graceful)
            }
            Err(message) => (
                400,
                openai::simple_error(&message, "invalid_request_error"),
                Ending::Graceful,
            ),
        },
        ("POST", "shutdown") => (
            200,
            json!({"ok": true, "stopping": true}),
            Ending::StopServer,
        ),
        (
            _,
            "" | "health" | "requests" | "queue" | "script" | "enqueue" | "reset" | "models"
            | "shutdown",
        ) => {
            let message = format!("/__mock/{action} does not accept {method}");
            (
                405,
                openai::simple_error(&message, "invalid_request_error"),
                Ending::Graceful,
            )
        }
        _ => {
            let message = format!(
                "unknown control endpoint {}: try GET /__mock/health, /__mock/requests, /__mock/queue \
                 or POST /__mock/script, /__mock/enqueue, /__mock/reset, /__mock/models, \
                 /__mock/shutdown",
                request.path
            );
            (
                404,
                openai::simple_error(&message, "invalid_request_error"),
                Ending::Graceful,
            )
        }
    };
    match send_json(stream, status, &body, &[], None) {
        Ok(()) => ending,
        // The client is gone, but a shutdown was still asked for.
        Err(_) if ending == Ending::StopServer => Ending::StopServer,
        Err(_) => Ending::Abort,
    }
}

/// The model names sent to `/__mock/models`: a JSON array of non-empty strings, so that a
/// test can play a server with several models (a local Ollama, say) and check which one the
/// client picks.
fn parse_model_names(body: &[u8]) -> Result<Vec<String>, String> {
    let names: Vec<String> = serde_json::from_slice(body).map_err(|e| {
        format!("/__mock/models takes a JSON array of model names, like [\"llama3.2\"]: {e}")
    })?;
    if names.iter().any(|name| name.trim().is_empty()) {
        return Err("/__mock/models: a model name is empty".to_string());
    }
    Ok(names)
}

/// A script sent to `/__mock/script` or `/__mock/enqueue`.
fn parse_script_body(body: &[u8]) -> Result<Vec<ScriptedReply>, String> {
    if body.is_empty() {
        return Err("the script body is empty".into());
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the script is not valid JSON: {e}"))?;
    script_from_value(value).map_err(|e| e.to_string())
}
