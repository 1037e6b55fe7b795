//! The limits on a model's output (`ccm_provider::output`), over real HTTP from the local
//! provider server (ccm-mock-llm), for both protocols, streamed and not: an answer or tool-call
//! arguments past a limit are refused with `OutputTooLarge` while the body is read, after
//! reading little more than the limit, however long the answer goes on; an answer at the limit
//! is read whole.
#![cfg(not(target_arch = "wasm32"))]

use ccm_mock_llm::{HugeField, MockConfig, MockServer, ScriptedReply};
use ccm_provider::{
    build_request, parse_response, OutputField, ProviderConfig, ProviderError, ProviderKind,
    ProviderResponse, ProviderStream, RequestOptions, WireMessage, WireTool, MAX_ANSWER_CHARS,
    MAX_RESPONSE_BODY_BYTES, MAX_TOOL_ARGUMENTS_CHARS,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// What one request brought back, and how many body bytes were read to get it.
struct Received {
    outcome: Result<ProviderResponse, ProviderError>,
    bytes_read: usize,
}

/// Sends one chat request to the server and reads the answer the way a transport does:
/// streamed bodies chunk by chunk into a `ProviderStream`, other bodies up to
/// `MAX_RESPONSE_BODY_BYTES`, stopping at the first error.
fn ask(server: &MockServer, kind: ProviderKind, stream: bool) -> Received {
    let base = match kind {
        ProviderKind::OpenAiCompatible => server.openai_base_url(),
        ProviderKind::Anthropic => server.base_url(),
    };
    let config = ProviderConfig::custom(kind, &base, Some("key".into()));
    let options = RequestOptions::new("mock-model").with_stream(stream);
    let tools = [WireTool {
        name: "take_note".into(),
        description: "Keeps a note.".into(),
        parameters: serde_json::json!({"type": "object"}),
    }];
    let request = build_request(&config, &options, &[WireMessage::User("hi".into())], &tools)
        .expect("a valid request");
    let path = request.url.splitn(4, '/').nth(3).unwrap_or_default();
    let mut socket = TcpStream::connect(server.addr()).expect("the server listens");
    let mut head = format!("POST /{path} HTTP/1.1\r\nHost: {}\r\n", server.addr());
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        request.body.len()
    ));
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(request.body.as_bytes()).unwrap();
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if line
            .to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
        {
            chunked = true;
        }
    }
    let mut body_stream = stream.then(|| ProviderStream::new(kind));
    let mut body = Vec::new();
    let mut bytes_read = 0;
    let mut feed = |piece: &[u8]| -> Result<(), ProviderError> {
        bytes_read += piece.len();
        match &mut body_stream {
            Some(decoder) => decoder.push(piece).map(drop),
            None if body.len() + piece.len() > MAX_RESPONSE_BODY_BYTES => {
                Err(ccm_provider::body_too_large())
            }
            None => {
                body.extend_from_slice(piece);
                Ok(())
            }
        }
    };
    let mut failure = None;
    if chunked {
        let mut buffer = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
            if size == 0 {
                break;
            }
            buffer.resize(size + 2, 0);
            reader.read_exact(&mut buffer).unwrap();
            if let Err(error) = feed(&buffer[..size]) {
                failure = Some(error);
                break;
            }
        }
    } else {
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        failure = feed(&rest).err();
    }
    let outcome = match (failure, body_stream) {
        (Some(error), _) => Err(error),
        (None, Some(decoder)) => decoder.finish(),
        (None, None) => parse_response(kind, &String::from_utf8_lossy(&body)),
    };
    Received {
        outcome,
        bytes_read,
    }
}

const KINDS: [ProviderKind; 2] = [ProviderKind::OpenAiCompatible, ProviderKind::Anthropic];

#[test]
fn an_answer_past_the_limit_is_refused_while_it_is_read_in_both_protocols_streamed_or_not() {
    let server = MockServer::start(MockConfig::default());
    // 200 million characters: were they read whole, this test would hold gigabytes.
    let huge = 200_000_000;
    for kind in KINDS {
        for stream in [true, false] {
            server.enqueue(ScriptedReply::text("").with_huge(HugeField::Text, huge));
            let received = ask(&server, kind, stream);
            let what = format!("{kind:?}, stream {stream}");
            assert_eq!(
                received.outcome,
                Err(ProviderError::OutputTooLarge {
                    field: if stream {
                        OutputField::Answer
                    } else {
                        OutputField::Body
                    }
                }),
                "{what}"
            );
            // A stream stops just past the limit (events are framed, so a few per cent more);
            // a body at the body limit.
            let most = if stream {
                MAX_ANSWER_CHARS * 3 / 2
            } else {
                MAX_RESPONSE_BODY_BYTES + (64 << 10)
            };
            assert!(
                received.bytes_read <= most,
                "{what}: {} bytes read",
                received.bytes_read
            );
        }
    }
}

#[test]
fn an_answer_just_past_the_limit_is_refused_and_one_at_it_is_read_whole() {
    let server = MockServer::start(MockConfig::default());
    for kind in KINDS {
        for stream in [true, false] {
            let what = format!("{kind:?}, stream {stream}");
            server.enqueue(
                ScriptedReply::text("").with_huge(HugeField::Text, MAX_ANSWER_CHARS as u64 + 1),
            );
            let over = ask(&server, kind, stream).outcome.unwrap_err();
            assert_eq!(
                over,
                ProviderError::OutputTooLarge {
                    field: OutputField::Answer
                },
                "{what}"
            );
            assert!(
                over.to_string()
                    .contains("longer than 1,000,000 characters"),
                "{what}: {over}"
            );
            assert!(
                !over.is_transient(),
                "{what}: the same request would bring the same answer"
            );

            server.enqueue(
                ScriptedReply::text("").with_huge(HugeField::Text, MAX_ANSWER_CHARS as u64),
            );
            let at = ask(&server, kind, stream)
                .outcome
                .expect("an answer at the limit is fine");
            assert_eq!(at.text.len(), MAX_ANSWER_CHARS, "{what}");
        }
    }
}

#[test]
fn tool_call_arguments_past_the_limit_are_refused_in_both_protocols_streamed_or_not() {
    let server = MockServer::start(MockConfig::default());
    // `{"data":"…"}` adds 11 characters around the letters.
    let within = MAX_TOOL_ARGUMENTS_CHARS as u64 - 11;
    for kind in KINDS {
        for stream in [true, false] {
            let what = format!("{kind:?}, stream {stream}");
            for chars in [within + 1, 10_000_000] {
                server.enqueue(
                    ScriptedReply::tool_call("take_note", serde_json::json!({}))
                        .with_huge(HugeField::Arguments, chars),
                );
                assert_eq!(
                    ask(&server, kind, stream).outcome,
                    Err(ProviderError::OutputTooLarge {
                        field: OutputField::ToolArguments
                    }),
                    "{what}, {chars}"
                );
            }
            server.enqueue(
                ScriptedReply::tool_call("take_note", serde_json::json!({}))
                    .with_huge(HugeField::Arguments, within),
            );
            let at = ask(&server, kind, stream).outcome.unwrap_or_else(|error| {
                panic!("{what}: arguments at the limit are fine: {error:?}")
            });
            assert_eq!(
                at.tool_calls[0].arguments.len(),
                MAX_TOOL_ARGUMENTS_CHARS,
                "{what}"
            );
        }
    }
}

#[test]
fn a_tool_name_past_its_limit_is_refused_in_both_protocols_streamed_or_not() {
    let server = MockServer::start(MockConfig::default());
    for kind in KINDS {
        for stream in [true, false] {
            server.enqueue(ScriptedReply::tool_call(
                "n".repeat(1_001),
                serde_json::json!({}),
            ));
            assert_eq!(
                ask(&server, kind, stream).outcome,
                Err(ProviderError::OutputTooLarge {
                    field: OutputField::ToolName
                }),
                "{kind:?}, stream {stream}"
            );
        }
    }
}
