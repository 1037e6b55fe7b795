//! Streams as real servers send them: characters split across network chunks and across
//! events, and bodies that are not event streams at all.

use ccm_provider::{ProviderError, ProviderKind, ProviderResponse, ProviderStream, StreamDelta};
use ccm_test_support::portable_tests;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// An OpenAI stream chunk whose `delta` is `delta` (raw JSON text, so that escapes are sent
/// exactly as written).
fn openai_chunk(delta: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n")
}

const OPENAI_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn anthropic_event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// Feeds `chunks` to a stream of `kind` and returns the text deltas and the final answer.
fn run(kind: ProviderKind, chunks: &[&[u8]]) -> (Vec<String>, ProviderResponse) {
    let mut stream = ProviderStream::new(kind);
    let mut shown = Vec::new();
    for chunk in chunks {
        for delta in stream.push(chunk).expect("no chunk fails") {
            if let StreamDelta::Text(text) = delta {
                shown.push(text);
            }
        }
    }
    (shown, stream.finish().expect("the stream is complete"))
}

portable_tests! {
    /// A server that cuts its text by UTF-16 code units (as JavaScript's `slice` does) sends
    /// an emoji's surrogate pair as two escapes in two events; each half alone is not a
    /// character, so neither event may fail, and the emoji appears once both halves are in.
    fn an_emoji_split_across_two_openai_events_is_joined() {
        let body = [
            openai_chunk(r#"{"content":"crab \ud83e"}"#),
            openai_chunk(r#"{"content":"\udd80 ok"}"#),
            OPENAI_END.to_string(),
        ]
        .concat();
        let (shown, response) = run(ProviderKind::OpenAiCompatible, &[body.as_bytes()]);
        assert_eq!(response.text, "crab 🦀 ok");
        assert_eq!(shown.concat(), "crab 🦀 ok");
        // Nothing half-made is ever shown.
        assert_eq!(shown, vec!["crab ", "🦀 ok"]);
    }

    fn an_emoji_split_across_two_anthropic_events_is_joined() {
        let body = [
            anthropic_event("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}"#),
            anthropic_event("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
            anthropic_event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"crab \ud83e"}}"#),
            anthropic_event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\udd80 ok"}}"#),
            anthropic_event("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            anthropic_event("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#),
            anthropic_event("message_stop", r#"{"type":"message_stop"}"#),
        ]
        .concat();
        let (shown, response) = run(ProviderKind::Anthropic, &[body.as_bytes()]);
        assert_eq!(response.text, "crab 🦀 ok");
        assert_eq!(shown, vec!["crab ", "🦀 ok"]);
    }

    fn tool_arguments_with_an_emoji_split_across_events_are_joined() {
        let body = [
            openai_chunk(r#"{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"note","arguments":"{\"t\":\"\ud83e"}}]}"#),
            openai_chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"\udd80\"}"}}]}"#),
            OPENAI_END.to_string(),
        ]
        .concat();
        let (_, response) = run(ProviderKind::OpenAiCompatible, &[body.as_bytes()]);
        assert_eq!(response.tool_calls[0].arguments, "{\"t\":\"🦀\"}");

        let body = [
            anthropic_event("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"note","input":{}}}"#),
            anthropic_event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"t\":\"\ud83e"}}"#),
            anthropic_event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\udd80\"}"}}"#),
            anthropic_event("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#),
            anthropic_event("message_stop", r#"{"type":"message_stop"}"#),
        ]
        .concat();
        let (_, response) = run(ProviderKind::Anthropic, &[body.as_bytes()]);
        assert_eq!(response.tool_calls[0].arguments, "{\"t\":\"🦀\"}");
    }

    /// Text parts (`content` as an array) take the same path as plain string content.
    fn an_emoji_split_across_content_parts_is_joined() {
        let body = [
            openai_chunk(r#"{"content":[{"type":"text","text":"\ud83e"}]}"#),
            openai_chunk(r#"{"content":[{"type":"text","text":"\udd80"}]}"#),
            OPENAI_END.to_string(),
        ]
        .concat();
        let (_, response) = run(ProviderKind::OpenAiCompatible, &[body.as_bytes()]);
        assert_eq!(response.text, "🦀");
    }

    /// A half that never gets its other half is shown as U+FFFD, the way any undecodable text
    /// is, rather than failing an answer that is otherwise complete.
    fn a_lone_half_becomes_a_replacement_character() {
        let body = [
            openai_chunk(r#"{"content":"a\udd80b"}"#),
            openai_chunk(r#"{"content":"c\ud83e"}"#),
            OPENAI_END.to_string(),
        ]
        .concat();
        let (shown, response) = run(ProviderKind::OpenAiCompatible, &[body.as_bytes()]);
        assert_eq!(response.text, "a\u{FFFD}bc\u{FFFD}");
        assert_eq!(shown.concat(), "a\u{FFFD}bc\u{FFFD}");
    }

    /// The same text with its UTF-8 bytes cut by the network at every possible place: the
    /// answer is the same whatever the cut.
    fn an_emoji_split_across_network_chunks_is_joined() {
        let body = [
            openai_chunk(r#"{"content":"crab 🦀 ok"}"#),
            OPENAI_END.to_string(),
        ]
        .concat();
        let bytes = body.as_bytes();
        for cut in 0..=bytes.len() {
            let (shown, response) =
                run(ProviderKind::OpenAiCompatible, &[&bytes[..cut], &bytes[cut..]]);
            assert_eq!(response.text, "crab 🦀 ok", "cut at byte {cut}");
            assert_eq!(shown.concat(), "crab 🦀 ok", "cut at byte {cut}");
        }
    }

    /// Without a `Content-Type` (a transport that does not pass it on), the first bytes tell
    /// an HTML page.
    fn an_html_page_is_recognised_by_its_first_bytes() {
        let page = "\n<!doctype HTML><html><head><TITLE>502 Bad Gateway</TITLE></head>\
                    <body><!-- nginx --><center><h1>502 Bad Gateway</h1></center></body></html>";
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream.push(page.as_bytes()).unwrap();
        let error = stream.finish().unwrap_err();
        assert_eq!(
            error,
            ProviderError::NotAStream {
                content_type: None,
                html: true,
                excerpt: "502 Bad Gateway 502 Bad Gateway".into(),
            }
        );
    }

    /// A body that calls itself an event stream but brought no event was cut off, whatever it
    /// holds; and a JSON document is still read as a whole answer.
    fn the_content_type_decides_before_the_first_bytes() {
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream.set_content_type(Some("text/event-stream; charset=utf-8"));
        stream.push(b"<html>").unwrap();
        assert!(matches!(
            stream.finish(),
            Err(ProviderError::StreamTruncated { events: 0, .. })
        ));

        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream.set_content_type(Some("application/json"));
        stream
            .push(br#"{"choices":[{"message":{"content":"whole"},"finish_reason":"stop"}]}"#)
            .unwrap();
        assert_eq!(stream.finish().unwrap().text, "whole");

        let mut stream = ProviderStream::new(ProviderKind::Anthropic);
        stream.set_content_type(Some("Text/Plain"));
        stream.push(b"upstream   connect error").unwrap();
        let error = stream.finish().unwrap_err();
        assert_eq!(
            error,
            ProviderError::NotAStream {
                content_type: Some("text/plain".into()),
                html: false,
                excerpt: "upstream connect error".into(),
            }
        );
    }

    /// A page too large to be kept whole is still quoted from its beginning.
    fn a_large_html_page_is_quoted_from_its_beginning() {
        let mut stream = ProviderStream::new(ProviderKind::OpenAiCompatible);
        stream.set_content_type(Some("text/html"));
        stream
            .push(b"<html><style>p { margin: 0 }</style><p>Welcome to the router</p>")
            .unwrap();
        let filler = "<p>more words</p>".repeat(100_000);
        stream.push(filler.as_bytes()).unwrap();
        let error = stream.finish().unwrap_err();
        let ProviderError::NotAStream { excerpt, html, .. } = &error else {
            panic!("not reported as a page: {error}");
        };
        assert!(html);
        assert!(excerpt.starts_with("Welcome to the router more words"), "{excerpt}");
        assert!(excerpt.ends_with('…'), "{excerpt}");
    }
}
