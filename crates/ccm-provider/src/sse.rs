//! An incremental decoder for server-sent events (`text/event-stream`).
//!
//! It follows the parsing rules of the HTML standard's event-stream format: lines end with
//! `\n`, `\r\n` or a lone `\r`; a blank line dispatches the event; `data:` lines accumulate
//! (joined with `\n`); lines starting with `:` are comments; one space after the colon is
//! dropped. Chunks may be split anywhere, including inside a UTF-8 sequence or between `\r` and
//! `\n`: bytes are only decoded once a whole line has arrived, and line breaks are ASCII bytes
//! that never occur inside a multi-byte UTF-8 sequence.

use serde::{Deserialize, Serialize};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SseEvent {
    /// The `event:` field, if the event had a non-empty one (Anthropic names every event;
    /// OpenAI names none).
    pub event: Option<String>,
    /// The `data:` lines of the event, joined with `\n`.
    pub data: String,
}

/// How a stream ended, as reported by [`SseDecoder::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEnd {
    /// The stream ended between events: nothing was lost.
    Clean,
    /// The stream ended in the middle of an event (the blank line that dispatches it never
    /// came, or a line was cut off).
    MidEvent {
        /// The event as it would have been dispatched from the lines that arrived whole, if any
        /// `data:` line did. A line cut off without its line break is never part of it.
        pending: Option<SseEvent>,
    },
}

/// The UTF-8 byte order mark, which the format allows (and ignores) at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Decodes a byte stream into [`SseEvent`]s, one chunk at a time.
///
/// ```
/// # use ccm_provider::sse::{SseDecoder, SseEnd};
/// let mut decoder = SseDecoder::new();
/// assert!(decoder.push(b"event: ping\r").is_empty());
/// let events = decoder.push(b"\ndata: {}\r\n\r\n");
/// assert_eq!(events[0].event.as_deref(), Some("ping"));
/// assert_eq!(events[0].data, "{}");
/// assert_eq!(decoder.finish(), SseEnd::Clean);
/// ```
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// Bytes of the line being received (without its line break).
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` at the start of the next one belongs to the
    /// same line break and must not end another (empty) line, which would dispatch early.
    skip_newline: bool,
    /// No line has been completed yet, so a byte order mark may still need stripping.
    at_start: bool,
    /// The `event:` field of the event being built.
    event: Option<String>,
    /// The `data:` lines of the event being built, joined with `\n`.
    data: String,
    /// Whether any `data:` line arrived for the event being built (even an empty one).
    has_data: bool,
    /// Whether any field line arrived for the event being built.
    has_fields: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder {
            line: Vec::new(),
            skip_newline: false,
            at_start: true,
            event: None,
            data: String::new(),
            has_data: false,
            has_fields: false,
        }
    }

    /// Feeds the next chunk and returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.skip_newline && !rest.is_empty() {
            self.skip_newline = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let newline = rest[end];
            rest = &rest[end + 1..];
            if newline == b'\r' {
                // A `\r\n` pair is one line break; if the `\n` is not in this chunk, remember to
                // skip it when the next chunk starts.
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_newline = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.process_line(&line) {
                events.push(event);
            }
        }
        self.line.extend_from_slice(rest);
        events
    }

    /// How many bytes of an event that has not ended yet are held: its unfinished line and
    /// the data lines read so far.
    pub fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Feeds the next chunk of already decoded text.
    pub fn push_str(&mut self, chunk: &str) -> Vec<SseEvent> {
        self.push(chunk.as_bytes())
    }

    /// Reports how the stream ended and resets the decoder for a new stream.
    ///
    /// The standard says an event that was not terminated by a blank line is not dispatched;
    /// [`SseEnd::MidEvent`] carries it anyway so the caller can decide (see
    /// [`ProviderStream::finish`](super::ProviderStream::finish)).
    pub fn finish(&mut self) -> SseEnd {
        let cut_line = !self.line.is_empty();
        let end = if cut_line || self.has_fields {
            let pending = self.has_data.then(|| SseEvent {
                event: self.event.clone(),
                data: self.data.clone(),
            });
            SseEnd::MidEvent { pending }
        } else {
            SseEnd::Clean
        };
        *self = SseDecoder::new();
        end
    }

    fn process_line(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut raw = raw;
        if self.at_start {
            self.at_start = false;
            raw = raw.strip_prefix(BOM).unwrap_or(raw);
        }
        if raw.is_empty() {
            return self.dispatch();
        }
        if raw[0] == b':' {
            return None;
        }
        // The format is UTF-8 by definition; invalid sequences become U+FFFD as the standard
        // prescribes rather than failing the whole stream.
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.find(':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => {
                self.has_fields = true;
                self.event = (!value.is_empty()).then(|| value.to_string());
            }
            "data" => {
                self.has_fields = true;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` only matter to a client that reconnects by itself, which a
            // completion request never does; unknown fields are ignored by the standard.
            _ => self.has_fields = true,
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let has_data = std::mem::take(&mut self.has_data);
        self.has_fields = false;
        let data = std::mem::take(&mut self.data);
        has_data.then_some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    /// Decodes `input` fed as one chunk, then split at every byte offset into two chunks, then
    /// one byte at a time, and checks that every split gives the same events and end.
    fn decode_all_ways(input: &[u8]) -> (Vec<SseEvent>, SseEnd) {
        let mut decoder = SseDecoder::new();
        let whole = decoder.push(input);
        let end = decoder.finish();
        for cut in 0..=input.len() {
            let mut decoder = SseDecoder::new();
            let mut events = decoder.push(&input[..cut]);
            events.extend(decoder.push(&input[cut..]));
            assert_eq!(events, whole, "split at byte {cut}");
            assert_eq!(decoder.finish(), end, "split at byte {cut}");
        }
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for byte in input {
            events.extend(decoder.push(std::slice::from_ref(byte)));
        }
        assert_eq!(events, whole, "byte by byte");
        assert_eq!(decoder.finish(), end, "byte by byte");
        (whole, end)
    }

    #[test]
    fn all_three_line_endings_are_understood() {
        for newline in ["\n", "\r\n", "\r"] {
            let input =
                format!("event: a{newline}data: 1{newline}{newline}data: 2{newline}{newline}");
            let (events, end) = decode_all_ways(input.as_bytes());
            assert_eq!(
                events,
                vec![ev(Some("a"), "1"), ev(None, "2")],
                "{newline:?}"
            );
            assert_eq!(end, SseEnd::Clean);
        }
    }

    #[test]
    fn a_split_crlf_is_one_line_break_not_two() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.push(b"data: x\r").is_empty());
        // If the `\n` were taken for a second line break, this would be a blank line and
        // dispatch the event before its second data line.
        assert!(decoder.push(b"\ndata: y\r").is_empty());
        assert_eq!(decoder.push(b"\n\r\n"), vec![ev(None, "x\ny")]);
    }

    #[test]
    fn multi_line_data_comments_and_optional_space() {
        let input =
            b": keep-alive comment\ndata:no space\ndata:  two spaces\ndata\ndata: \n: another\n\n";
        let (events, _) = decode_all_ways(input);
        assert_eq!(events, vec![ev(None, "no space\n two spaces\n\n")]);
    }

    #[test]
    fn fields_without_data_dispatch_nothing() {
        let (events, end) = decode_all_ways(b"event: ping\n\nid: 7\nretry: 100\n\ndata: x\n\n");
        assert_eq!(events, vec![ev(None, "x")]);
        assert_eq!(end, SseEnd::Clean);
    }

    #[test]
    fn utf8_split_inside_a_character_is_reassembled() {
        let (events, _) = decode_all_ways("data: héllo 🦀 wörld\n\n".as_bytes());
        assert_eq!(events, vec![ev(None, "héllo 🦀 wörld")]);
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let (events, _) = decode_all_ways(b"data: a\xFFb\n\n");
        assert_eq!(events, vec![ev(None, "a\u{FFFD}b")]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored() {
        let (events, _) = decode_all_ways(b"\xEF\xBB\xBFdata: x\n\n");
        assert_eq!(events, vec![ev(None, "x")]);
    }

    #[test]
    fn finish_reports_the_way_the_stream_ended() {
        let (_, end) = decode_all_ways(b"data: a\n\n");
        assert_eq!(end, SseEnd::Clean);
        let (_, end) = decode_all_ways(b"data: a\n\n: trailing comment\n");
        assert_eq!(end, SseEnd::Clean);

        let (events, end) = decode_all_ways(b"data: a\n\nevent: x\ndata: b\ndata: c\n");
        assert_eq!(events, vec![ev(None, "a")]);
        assert_eq!(
            end,
            SseEnd::MidEvent {
                pending: Some(ev(Some("x"), "b\nc"))
            }
        );

        // A cut-off line is never part of the pending event.
        let (_, end) = decode_all_ways(b"data: b\ndata: {\"cut");
        assert_eq!(
            end,
            SseEnd::MidEvent {
                pending: Some(ev(None, "b"))
            }
        );
        let (_, end) = decode_all_ways(b"event: message_stop\n");
        assert_eq!(end, SseEnd::MidEvent { pending: None });
        let (_, end) = decode_all_ways(b"data: {\"cut");
        assert_eq!(end, SseEnd::MidEvent { pending: None });
    }

    #[test]
    fn finish_resets_for_a_new_stream() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: half");
        assert!(matches!(decoder.finish(), SseEnd::MidEvent { .. }));
        assert_eq!(decoder.push(b"data: new\n\n"), vec![ev(None, "new")]);
    }

    #[test]
    fn a_default_decoder_also_strips_the_byte_order_mark() {
        let mut decoder = SseDecoder::default();
        assert_eq!(
            decoder.push(b"\xEF\xBB\xBFdata: x\n\n"),
            vec![ev(None, "x")]
        );
    }

    #[test]
    fn push_str_is_the_same_as_push() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.push_str("data: x\n\n"), vec![ev(None, "x")]);
    }
}
