//! Just enough HTTP/1.1 for a test server, on plain `Read + Write` streams.
//!
//! One request is read per connection and every response says `Connection: close`, which
//! every real client accepts and which removes keep-alive bookkeeping. Request bodies may be
//! sized by `Content-Length` or sent with `Transfer-Encoding: chunked`; `Expect:
//! 100-continue` is honoured so curl and similar clients do not stall. Anything malformed
//! becomes a [`ReadError::Reject`] carrying the status and message to answer with; the parser
//! never panics on input and every read is bounded in size (and in time, by the socket's read
//! timeout that the caller sets).

use std::io::{self, Read, Write};

/// The largest request line plus header section accepted.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest request body accepted.
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// The most header lines accepted.
const MAX_HEADER_COUNT: usize = 200;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    /// The method, as sent (methods are case-sensitive).
    pub method: String,
    /// The path without the query string.
    pub path: String,
    /// The query string without the `?`, when there was one.
    pub query: Option<String>,
    /// Header names in lower case, with their trimmed values, in the order received.
    pub headers: Vec<(String, String)>,
    /// The decoded body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request could be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The peer went away, reset the connection or never sent a byte: nobody to answer.
    Silent,
    /// The request is unusable; answer with this status and message, then close.
    Reject { status: u16, message: String },
}

/// Shorthand for a [`ReadError::Reject`].
fn reject(status: u16, message: impl Into<String>) -> ReadError {
    ReadError::Reject {
        status,
        message: message.into(),
    }
}

/// A low-level failure while pulling bytes, before we know what it means for the request.
enum Pull {
    Eof,
    TimedOut,
    Broken,
    TooLong,
}

/// Buffered input over the connection. It is also the writer for `100 Continue`.
struct Input<'a, S> {
    stream: &'a mut S,
    buf: Vec<u8>,
    pos: usize,
    received_any: bool,
}

impl<'a, S: Read + Write> Input<'a, S> {
    fn new(stream: &'a mut S) -> Self {
        Self {
            stream,
            buf: Vec::with_capacity(8192),
            pos: 0,
            received_any: false,
        }
    }

    fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads more bytes into the buffer.
    fn fill(&mut self) -> Result<(), Pull> {
        if self.pos == self.buf.len() {
            // Everything buffered was consumed: start over instead of growing forever.
            self.buf.clear();
            self.pos = 0;
        }
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Pull::Eof),
                Ok(n) => {
                    self.received_any = true;
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_read_timeout(&e) => return Err(Pull::TimedOut),
                Err(_) => return Err(Pull::Broken),
            }
        }
    }

    /// Reads one line (without its `\n` or `\r\n`), charging its length to `budget`.
    fn read_line(&mut self, budget: &mut usize) -> Result<Vec<u8>, Pull> {
        loop {
            if let Some(offset) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let consumed = offset + 1;
                if consumed > *budget {
                    return Err(Pull::TooLong);
                }
                *budget -= consumed;
                let mut line = self.buf[self.pos..self.pos + offset].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.pos += consumed;
                return Ok(line);
            }
            if self.buffered() > *budget {
                return Err(Pull::TooLong);
            }
            self.fill()?;
        }
    }

    /// Reads exactly `n` bytes.
    fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, Pull> {
        while self.buffered() < n {
            self.fill()?;
        }
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(out)
    }

    /// Turns a pull failure into the answer for the client, given what was being read.
    fn fail(&self, pull: Pull, reading: &str, too_long_status: u16) -> ReadError {
        match pull {
            Pull::Eof | Pull::TimedOut if !self.received_any => ReadError::Silent,
            Pull::Broken => ReadError::Silent,
            Pull::Eof => reject(
                400,
                format!("the connection was closed before the end of {reading}"),
            ),
            Pull::TimedOut => reject(408, format!("timed out while reading {reading}")),
            Pull::TooLong => reject(too_long_status, format!("{reading} is too large")),
        }
    }
}

/// Reads one request from the stream.
pub(crate) fn read_request<S: Read + Write>(stream: &mut S) -> Result<Request, ReadError> {
    let mut input = Input::new(stream);
    let mut budget = MAX_HEAD_BYTES;

    // RFC 9112 §2.2 lets a server ignore empty lines before the request line.
    let line = loop {
        let line = input
            .read_line(&mut budget)
            .map_err(|p| input.fail(p, "the request line", 431))?;
        if !line.is_empty() {
            break line;
        }
    };
    let (method, path, query) = parse_request_line(&line)?;

    let mut headers = Vec::new();
    loop {
        let line = input
            .read_line(&mut budget)
            .map_err(|p| input.fail(p, "the header section", 431))?;
        if line.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADER_COUNT {
            return Err(reject(431, "too many header lines"));
        }
        headers.push(parse_header_line(&line)?);
    }

    let mut request = Request {
        method,
        path,
        query,
        headers,
        body: Vec::new(),
    };
    request.body = read_body(&mut input, &request)?;
    Ok(request)
}

/// Splits `METHOD target HTTP/1.x` into method, path and query.
fn parse_request_line(line: &[u8]) -> Result<(String, String, Option<String>), ReadError> {
    let text = std::str::from_utf8(line)
        .map_err(|_| reject(400, "the request line is not valid UTF-8"))?;
    let parts: Vec<&str> = text.split(' ').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(reject(
            400,
            format!(
                "malformed request line `{}` (expected `METHOD target HTTP/1.1`)",
                shorten(text)
            ),
        ));
    }
    let (method, target, version) = (parts[0], parts[1], parts[2]);
    if !method.bytes().all(is_token_byte) {
        return Err(reject(400, format!("invalid method `{}`", shorten(method))));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(reject(
            505,
            format!("HTTP version `{}` is not supported", shorten(version)),
        ));
    }
    // Origin-form is what clients send; absolute-form is what they send to proxies, and `*`
    // is only used by `OPTIONS *`. All three reduce to a path for routing.
    let path_and_query = if target.starts_with('/') || target == "*" {
        target
    } else if let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        rest.find('/').map_or("/", |i| &rest[i..])
    } else {
        return Err(reject(
            400,
            format!("invalid request target `{}`", shorten(target)),
        ));
    };
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (path_and_query.to_string(), None),
    };
    Ok((method.to_string(), path, query))
}

/// Splits `Name: value`, lower-casing the name.
fn parse_header_line(line: &[u8]) -> Result<(String, String), ReadError> {
    if line[0] == b' ' || line[0] == b'\t' {
        return Err(reject(400, "obsolete header line folding is not supported"));
    }
    let colon = line.iter().position(|&b| b == b':').ok_or_else(|| {
        reject(
            400,
            format!(
                "malformed header line `{}` (no colon)",
                shorten(&String::from_utf8_lossy(line))
            ),
        )
    })?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().copied().all(is_token_byte) {
        return Err(reject(
            400,
            format!(
                "invalid header name `{}`",
                shorten(&String::from_utf8_lossy(name))
            ),
        ));
    }
    // Header values may legally contain non-UTF-8 bytes (obs-text); keep them readable.
    let value = String::from_utf8_lossy(&line[colon + 1..])
        .trim_matches(|c| c == ' ' || c == '\t')
        .to_string();
    Ok((String::from_utf8_lossy(name).to_ascii_lowercase(), value))
}

/// Reads the body the headers announce: chunked, sized by `Content-Length`, or none.
fn read_body<S: Read + Write>(
    input: &mut Input<'_, S>,
    request: &Request,
) -> Result<Vec<u8>, ReadError> {
    let expects_continue = request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));

    if let Some(te) = request.header("transfer-encoding") {
        // Per RFC 9112 §6.1 Transfer-Encoding wins over Content-Length; chunked must be last.
        let last = te.rsplit(',').next().unwrap_or("").trim();
        if !last.eq_ignore_ascii_case("chunked") {
            return Err(reject(
                501,
                format!("transfer-encoding `{}` is not supported", shorten(te)),
            ));
        }
        if expects_continue {
            send_continue(input);
        }
        return read_chunked(input);
    }

    let mut length: Option<usize> = None;
    for (name, value) in &request.headers {
        if name != "content-length" {
            continue;
        }
        // A repeated or comma-listed Content-Length is only acceptable when all values agree.
        for item in value.split(',') {
            let item = item.trim();
            let parsed = if !item.is_empty() && item.bytes().all(|b| b.is_ascii_digit()) {
                item.parse::<usize>().ok()
            } else {
                None
            };
            let parsed = parsed.ok_or_else(|| {
                reject(400, format!("invalid content-length `{}`", shorten(value)))
            })?;
            if length.is_some_and(|l| l != parsed) {
                return Err(reject(400, "conflicting content-length values"));
            }
            length = Some(parsed);
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY_BYTES {
        return Err(reject(
            413,
            format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
        ));
    }
    if length == 0 {
        return Ok(Vec::new());
    }
    if expects_continue && input.buffered() < length {
        send_continue(input);
    }
    input
        .read_exact(length)
        .map_err(|p| input.fail(p, "the request body", 413))
}

/// Decodes a chunked body (RFC 9112 §7.1); chunk extensions and trailers are dropped.
fn read_chunked<S: Read + Write>(input: &mut Input<'_, S>) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let mut budget = 4096;
        let line = input
            .read_line(&mut budget)
            .map_err(|p| input.fail(p, "a chunk size line", 400))?;
        let line = String::from_utf8_lossy(&line);
        let size_text = line.split(';').next().unwrap_or("").trim();
        if size_text.is_empty()
            || size_text.len() > 15
            || !size_text.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(reject(
                400,
                format!("invalid chunk size `{}`", shorten(size_text)),
            ));
        }
        let size =
            usize::from_str_radix(size_text, 16).map_err(|_| reject(400, "invalid chunk size"))?;
        if size == 0 {
            // Trailer fields, if any, end with an empty line; they are read and dropped.
            let mut trailer_budget = MAX_HEAD_BYTES;
            loop {
                let line = input
                    .read_line(&mut trailer_budget)
                    .map_err(|p| input.fail(p, "the chunked trailer", 431))?;
                if line.is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(reject(
                413,
                format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
            ));
        }
        let data = input
            .read_exact(size)
            .map_err(|p| input.fail(p, "a body chunk", 413))?;
        body.extend_from_slice(&data);
        let mut budget = 2;
        let end = input
            .read_line(&mut budget)
            .map_err(|p| input.fail(p, "a body chunk", 400))?;
        if !end.is_empty() {
            return Err(reject(400, "chunk data is not followed by CRLF"));
        }
    }
}

/// Tells a client waiting on `Expect: 100-continue` to send its body.
fn send_continue<S: Read + Write>(input: &mut Input<'_, S>) {
    // If this write fails, the following body read fails too and reports it.
    let _ = input.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    let _ = input.stream.flush();
}

/// Whether a byte may appear in a method or header name (RFC 9110 `tchar`).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Keeps echoed client input short in error messages.
fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// The standard reason phrase for the statuses this server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes the status line and the headers. Header values come partly from scripts, so CR,
/// LF and other control characters are replaced to keep them from splitting the header.
pub(crate) fn write_head<W: Write>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        let clean: String = value
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        head.push_str(name);
        head.push_str(": ");
        head.push_str(&clean);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()
}

/// Writes one chunk of a chunked body. An empty chunk would end the body, so it is skipped.
pub(crate) fn write_chunk<W: Write>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    w.write_all(&out)?;
    w.flush()
}

/// Ends a chunked body.
pub(crate) fn write_last_chunk<W: Write>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

/// Whether a read failed only because its timeout passed (the kind differs between
/// platforms), as opposed to the connection failing.
pub(crate) fn is_read_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory connection: reads come from `input`, writes go to `output`.
    struct Fake {
        input: io::Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Fake {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Fake {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn parse(raw: &[u8]) -> (Result<Request, ReadError>, Vec<u8>) {
        let mut fake = Fake {
            input: io::Cursor::new(raw.to_vec()),
            output: Vec::new(),
        };
        let result = read_request(&mut fake);
        (result, fake.output)
    }

    fn status_of(raw: &[u8]) -> u16 {
        match parse(raw).0 {
            Err(ReadError::Reject { status, .. }) => status,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_content_length_request() {
        let (req, _) = parse(
            b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        );
        let req = req.unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/v1/chat/completions");
        assert_eq!(req.query.as_deref(), Some("x=1"));
        assert_eq!(req.header("CONTENT-TYPE"), Some("application/json"));
        assert_eq!(req.body, b"{}");
    }

    #[test]
    fn parses_chunked_bodies_lf_lines_and_absolute_targets() {
        let (req, _) = parse(
            b"\r\nPOST http://127.0.0.1:9/v1/messages HTTP/1.1\nTransfer-Encoding: chunked\n\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n",
        );
        let req = req.unwrap();
        assert_eq!(req.path, "/v1/messages");
        assert_eq!(req.body, b"abcde");
    }

    #[test]
    fn answers_expect_continue() {
        let (req, out) =
            parse(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx");
        assert!(req.is_ok());
        // The body was already buffered, so no 100 Continue was needed.
        assert!(out.is_empty());
        let (req, out) = parse(
            b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        );
        assert!(req.is_ok());
        assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn rejects_bad_requests_with_a_status() {
        assert_eq!(status_of(b"GARBAGE\r\n\r\n"), 400);
        assert_eq!(status_of(b"GET / HTTP/2.0\r\n\r\n"), 505);
        assert_eq!(status_of(b"GET nope HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status_of(b"G(T / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status_of(b"GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
        assert_eq!(status_of(b"GET / HTTP/1.1\r\n folded\r\n\r\n"), 400);
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
            400
        );
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
            400
        );
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"),
            413
        );
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501
        );
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            400
        );
        // The body is shorter than announced and the client closed: incomplete request.
        assert_eq!(
            status_of(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"),
            400
        );
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 10));
        assert_eq!(status_of(&huge), 431);
    }

    #[test]
    fn a_connection_closed_before_any_byte_is_silent() {
        assert_eq!(parse(b"").0.unwrap_err(), ReadError::Silent);
    }

    #[test]
    fn head_values_cannot_inject_headers() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            429,
            &[("Retry-After".into(), "1\r\nX-Evil: yes".into())],
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(text.contains("Retry-After: 1  X-Evil: yes\r\n"));
    }
}
