//! A tiny HTTP/1.1 client on `std::net` for the integration tests, written separately from
//! the server's parser so the tests check the bytes on the wire, not the server against
//! itself. It sends one request, reads until the server closes, and decodes chunked bodies.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A response as read from the socket.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked when it was chunked.
    pub body: Vec<u8>,
    /// Whether the body ended properly: the final `0` chunk of a chunked body, or all the
    /// `Content-Length` bytes.
    pub complete: bool,
    /// Time from sending the request to the first response byte.
    pub first_byte_after: Duration,
    /// Time from sending the request to the end of the connection.
    pub elapsed: Duration,
}

/// What came back on a raw connection.
#[derive(Debug)]
pub struct Raw {
    pub bytes: Vec<u8>,
    pub first_byte_after: Option<Duration>,
    pub elapsed: Duration,
    /// A read error other than a clean end of stream (for example a reset).
    pub error: Option<ErrorKind>,
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    /// The data parsed as JSON; panics with the data when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// Splits an SSE body into events (blocks separated by a blank line).
    pub fn events(&self) -> Vec<Event> {
        let text = self.text();
        let mut events = Vec::new();
        for block in text.split("\n\n") {
            if block.trim().is_empty() {
                continue;
            }
            let mut event = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push(d.to_string());
                } else {
                    panic!("unexpected SSE line {line:?} in block {block:?}");
                }
            }
            events.push(Event {
                event,
                data: data.join("\n"),
            });
        }
        events
    }

    /// The names of the SSE events, in order; every event must be named (Anthropic's stream).
    pub fn event_names(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .map(|e| e.event.expect("a named event"))
            .collect()
    }
}

/// Sends bytes, optionally half-closes, and reads everything until the server closes.
pub fn send_raw(addr: SocketAddr, bytes: &[u8], half_close: bool) -> Raw {
    let mut tcp = TcpStream::connect(addr).expect("connect to the mock server");
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let start = Instant::now();
    tcp.write_all(bytes).expect("send the request");
    if half_close {
        tcp.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let mut out = Vec::new();
    let mut first_byte_after = None;
    let mut error = None;
    let mut buf = [0u8; 8192];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                first_byte_after.get_or_insert_with(|| start.elapsed());
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                assert!(
                    !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                    "the server did not close the connection within 20 s"
                );
                error = Some(e.kind());
                break;
            }
        }
    }
    Raw {
        bytes: out,
        first_byte_after,
        elapsed: start.elapsed(),
        error,
    }
}

/// Parses a raw response; panics when there is no complete head.
pub fn parse(raw: &Raw) -> Response {
    let bytes = &raw.bytes;
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete response head in {:?}",
                String::from_utf8_lossy(bytes)
            )
        });
    let head = std::str::from_utf8(&bytes[..end]).expect("UTF-8 head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {status_line}");
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header line");
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let rest = &bytes[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse::<usize>().unwrap());
    let (body, complete) = if chunked {
        dechunk(rest)
    } else if let Some(length) = length {
        (
            rest[..length.min(rest.len())].to_vec(),
            rest.len() >= length,
        )
    } else {
        (rest.to_vec(), true)
    };
    Response {
        status,
        headers,
        body,
        complete,
        first_byte_after: raw.first_byte_after.unwrap_or_default(),
        elapsed: raw.elapsed,
    }
}

/// Decodes a chunked body; the flag says whether the final zero-size chunk was seen.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
            .expect("chunk size");
        rest = &rest[eol + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        assert_eq!(&rest[size..size + 2], b"\r\n", "chunk not followed by CRLF");
        rest = &rest[size + 2..];
    }
}

/// Sends a request with the given headers and body and parses the response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Response {
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut bytes = out.into_bytes();
    if let Some(body) = body {
        bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        bytes.extend_from_slice(body);
    } else {
        bytes.extend_from_slice(b"\r\n");
    }
    parse(&send_raw(addr, &bytes, false))
}

/// POSTs a JSON body.
pub fn post_json(addr: SocketAddr, path: &str, body: &Value) -> Response {
    request(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body.to_string().as_bytes()),
    )
}

/// GETs a path.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, &[], None)
}

/// Concatenates the text of SSE `data:` fields that are JSON, picking a string at `pointer`.
pub fn collect_strings(events: &[Event], pointer: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}
