//! Fuzzing the model's output limits (`ccm_provider::output`) through the parsers a transport
//! uses: answers and tool calls of random sizes, mostly small and often right at a limit (one
//! character under, at, or over it, counted in UTF-16 units with characters of one to four
//! bytes), in both protocols, streamed (random fragments, random chunk cuts) or not.
//! Invariants: nothing panics; an answer is accepted exactly when every field is within its
//! limit, and then it comes out unchanged; otherwise the error is `OutputTooLarge` naming a
//! field that is over.
//!
//! `CCM_FUZZ_CASES` sets the cases (a small default keeps the normal suite fast); `scripts/fuzz`
//! runs it with many more. A failure prints the seed that reproduces it (`CCM_FUZZ_SEED`).
#![cfg(not(target_arch = "wasm32"))]

use ccm_provider::{
    parse_response, OutputField, ProviderError, ProviderKind, ProviderResponse, ProviderStream,
    MAX_ANSWER_CHARS, MAX_TOOL_ARGUMENTS_CHARS, MAX_TOOL_NAME_CHARS,
};
use ccm_test_support::fuzz::{self, Rng};
use serde_json::{json, Value};

/// Characters of every UTF-8 length; the crab is two UTF-16 units, the others one; the quote,
/// backslash and line break are escaped in JSON.
const CHARACTERS: [&str; 7] = ["a", "é", "✓", "🦀", "\"", "\\", "\n"];

fn units(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// A text of about `target` UTF-16 units (exactly, unless the last character is a crab that
/// would pass it, in which case one unit less), of one or two kinds of characters.
fn text_of(rng: &mut Rng, target: usize) -> String {
    let first = CHARACTERS[rng.below(CHARACTERS.len())];
    let second = CHARACTERS[rng.below(CHARACTERS.len())];
    let mut text = String::new();
    let mut length = 0;
    // Long runs keep building a million characters fast.
    while length < target {
        let piece = if rng.below(2) == 0 { first } else { second };
        let piece_units = units(piece);
        let run = (1 + rng.below(4096)).min((target - length) / piece_units);
        if run == 0 {
            text.push('b');
            length += 1;
            continue;
        }
        text.push_str(&piece.repeat(run));
        length += run * piece_units;
    }
    text
}

/// A size: mostly small, often at a limit's edge.
fn size(rng: &mut Rng, limit: usize) -> usize {
    match rng.below(8) {
        0 => limit - 1,
        1 => limit,
        2 => limit + 1,
        3 => limit + 1 + rng.below(limit),
        _ => rng.below(200),
    }
}

struct Call {
    id: String,
    name: String,
    arguments: String,
}

/// Cuts `text` into fragments of random sizes, never inside a character.
fn fragments<'a>(rng: &mut Rng, text: &'a str) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = (1 + rng.below(200_000)).min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    pieces
}

fn openai_body(rng: &mut Rng, text: &str, calls: &[Call], stream: bool) -> String {
    if !stream {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        return json!({"choices": [{"index": 0, "message": {"content": text, "tool_calls": tool_calls}, "finish_reason": "stop"}]}).to_string();
    }
    let mut body = String::new();
    let mut event = |delta: Value| {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        ));
    };
    for piece in fragments(rng, text) {
        event(json!({"content": piece}));
    }
    for (index, call) in calls.iter().enumerate() {
        event(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
        );
        for piece in fragments(rng, &call.arguments) {
            event(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}));
        }
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    body
}

fn anthropic_body(rng: &mut Rng, text: &str, calls: &[Call], stream: bool) -> String {
    if !stream {
        let mut content = vec![json!({"type": "text", "text": text})];
        for call in calls {
            let input: Value = serde_json::from_str(&call.arguments).unwrap();
            content.push(
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
            );
        }
        return json!({"type": "message", "content": content, "stop_reason": "end_turn"})
            .to_string();
    }
    let mut body = String::new();
    let mut event = |name: &str, data: Value| {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for piece in fragments(rng, text) {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    for (position, call) in calls.iter().enumerate() {
        let index = position + 1;
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        );
        for piece in fragments(rng, &call.arguments) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    body
}

/// Reads `body` as a transport does.
fn read(
    rng: &mut Rng,
    kind: ProviderKind,
    body: &str,
    stream: bool,
) -> Result<ProviderResponse, ProviderError> {
    if !stream {
        return parse_response(kind, body);
    }
    let mut decoder = ProviderStream::new(kind);
    let bytes = body.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + 1 + rng.below(300_000)).min(bytes.len());
        decoder.push(&bytes[start..end])?;
        start = end;
    }
    decoder.finish()
}

#[test]
fn fuzz_model_output_sizes() {
    let seed = fuzz::seed(0x5EED_0026);
    let (mut inputs, mut checks) = (0u64, 0u64);
    for case in 0..fuzz::cases(30) {
        let case_seed = fuzz::case_seed(seed, case);
        let rng = &mut Rng::new(case_seed);
        let kind = if rng.below(2) == 0 {
            ProviderKind::OpenAiCompatible
        } else {
            ProviderKind::Anthropic
        };
        let stream = rng.below(2) == 0;
        let text_size = size(rng, MAX_ANSWER_CHARS);
        let text = text_of(rng, text_size);
        let mut calls = Vec::new();
        for position in 0..rng.below(4) {
            // `{"d":"…"}` around the string; its characters are counted as JSON writes them.
            let inner_size = size(rng, MAX_TOOL_ARGUMENTS_CHARS) / 2;
            let inner = text_of(rng, inner_size);
            let name_size = size(rng, MAX_TOOL_NAME_CHARS).clamp(1, MAX_TOOL_NAME_CHARS + 1);
            let name = "n".repeat(name_size);
            calls.push(Call {
                id: format!("call_{position}"),
                name,
                arguments: json!({"d": inner}).to_string(),
            });
        }
        let mut over = Vec::new();
        if units(&text) > MAX_ANSWER_CHARS {
            over.push(OutputField::Answer);
        }
        if calls.iter().map(|c| units(&c.arguments)).sum::<usize>() > MAX_TOOL_ARGUMENTS_CHARS {
            over.push(OutputField::ToolArguments);
        }
        if calls.iter().any(|c| units(&c.name) > MAX_TOOL_NAME_CHARS) {
            over.push(OutputField::ToolName);
        }
        let body = match kind {
            ProviderKind::OpenAiCompatible => openai_body(rng, &text, &calls, stream),
            ProviderKind::Anthropic => anthropic_body(rng, &text, &calls, stream),
        };
        inputs += 1;
        let what = format!(
            "seed {case_seed}: {kind:?}, stream {stream}, text {} units, calls {:?}",
            units(&text),
            calls
                .iter()
                .map(|c| (units(&c.name), units(&c.arguments)))
                .collect::<Vec<_>>()
        );
        match read(rng, kind, &body, stream) {
            Ok(response) => {
                checks += 3;
                assert!(
                    over.is_empty(),
                    "{what}: accepted although {over:?} are over"
                );
                assert_eq!(response.text, text, "{what}");
                let arguments: Vec<&str> = response
                    .tool_calls
                    .iter()
                    .map(|c| c.arguments.as_str())
                    .collect();
                assert_eq!(
                    arguments,
                    calls
                        .iter()
                        .map(|c| c.arguments.as_str())
                        .collect::<Vec<_>>(),
                    "{what}"
                );
            }
            Err(ProviderError::OutputTooLarge { field }) => {
                checks += 1;
                assert!(
                    over.contains(&field),
                    "{what}: refused for {field:?}, but only {over:?} are over"
                );
            }
            Err(other) => panic!("{what}: {other}"),
        }
    }
    println!("fuzz model-output: {inputs} inputs, {checks} invariant checks, 0 failures");
}
