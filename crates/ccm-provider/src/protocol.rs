//! What a provider protocol is: the entry each protocol's module holds ([`Protocol`]), with
//! everything the rest of the workspace needs to know about it, and the reading of its streams
//! ([`StreamAccumulator`]). The table that maps each [`ProviderKind`](crate::ProviderKind) to its
//! entry is [`ProviderKind::protocol`](crate::ProviderKind::protocol), so that every front end
//! (the command line's `--protocol`, the app's provider list, the npm package's provider names
//! and its TypeScript type) picks a protocol up from there.
//!
//! Adding a protocol takes three files of this crate: the protocol's module (its body writer,
//! response parser and stream accumulator, and its `PROTOCOL` entry), the `ProviderKind`
//! variant with its arm in `ProviderKind::protocol` (config.rs), and the module's declaration
//! (lib.rs). tests/protocol_places.rs fails when any other file starts to list the protocols.
//!
//! This file and the protocol modules read nothing of the configuration (config.rs), which
//! reads them through the table: the request's envelope (URL, headers) is written once, by
//! [`build_request`](crate::build_request), and a module writes only the body.

use crate::options::{RequestOptions, TokenLimitField};
use crate::sse::SseEvent;
use crate::wire::{WireMessage, WireTool};
use crate::{ProviderError, ProviderResponse, StreamDelta};
use serde::Serialize;
use std::fmt;

/// A protocol's writer of completion request bodies: the options, the field an OpenAI-style
/// output limit is sent in (a protocol with one field only ignores it), the conversation and
/// the tools in, the JSON text out.
pub type WriteBody = fn(
    &RequestOptions,
    TokenLimitField,
    &[WireMessage],
    &[WireTool],
) -> Result<String, ProviderError>;

/// One provider protocol: its names, where its completion endpoint is, its headers, and how its
/// requests are written and its answers read.
pub struct Protocol {
    /// The short name a command line gives (`--protocol openai`).
    pub name: &'static str,
    /// The name people read (`OpenAI`, `Anthropic`).
    pub label: &'static str,
    /// The provider name of any server that speaks it at a base URL (`openai_compatible`).
    pub compatible_name: &'static str,
    /// That provider's label (`OpenAI-compatible server`).
    pub compatible_label: &'static str,
    /// The path appended to the base URL to reach the completion endpoint.
    pub endpoint_path: &'static str,
    /// The headers that authenticate (and version) every request of the protocol.
    pub auth_headers: fn(Option<&str>) -> Vec<(String, String)>,
    /// Writes a completion request's body; [`build_request`](crate::build_request) adds the URL
    /// and the headers.
    pub write_body: WriteBody,
    /// Reads a whole (not streamed) success body.
    pub parse_response: fn(&str) -> Result<ProviderResponse, ProviderError>,
    /// Starts reading a streamed answer.
    pub new_stream: fn() -> Box<dyn StreamAccumulator>,
}

impl fmt::Debug for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Protocol")
            .field("name", &self.name)
            .finish()
    }
}

/// A protocol's reading of a streamed answer, one server-sent event at a time: what each
/// protocol's module writes for its own stream type. Every such type is a
/// [`StreamAccumulator`], which is how a [`ProviderStream`](crate::ProviderStream) holds any
/// protocol's.
pub trait ProtocolStream: fmt::Debug + Clone + Send + 'static {
    /// The stream's latch: its events counted, its end marker and its first error.
    fn latch(&mut self) -> &mut StreamLatch;
    /// Reads one event the latch let through and returns the deltas it carries; the protocol
    /// calls [`StreamLatch::end`] when the event is its end marker.
    ///
    /// # Errors
    /// The protocol's error for an event it cannot accept (an error event, bad JSON, an
    /// answer past an output limit).
    fn read_event(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError>;
    /// Takes one event and returns the deltas it carries: nothing once the stream has ended,
    /// and the first error again once it has failed.
    ///
    /// # Errors
    /// The error [`read_event`](Self::read_event) gave for this event or an earlier one.
    fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        if let Some(refused) = self.latch().refuse_event() {
            return refused;
        }
        let read = self.read_event(event);
        self.latch().keep(read)
    }
    /// The answer text received so far.
    fn text(&self) -> &str;
    /// The whole answer once the stream has ended.
    ///
    /// # Errors
    /// The protocol's error for a stream that ended too early or said nothing usable.
    fn finish(self) -> Result<ProviderResponse, ProviderError>;
}

/// Any protocol's [`ProtocolStream`] behind one type, as the table's `new_stream` makes it.
pub trait StreamAccumulator: fmt::Debug + Send {
    /// Takes one event and returns the deltas it carries; see [`ProtocolStream::push`].
    ///
    /// # Errors
    /// The protocol's error for an event it cannot accept.
    fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError>;
    /// The answer text received so far.
    fn text(&self) -> &str;
    /// The whole answer once the stream has ended; see [`ProtocolStream::finish`].
    ///
    /// # Errors
    /// The protocol's error for a stream that ended too early or said nothing usable.
    fn finish(self: Box<Self>) -> Result<ProviderResponse, ProviderError>;
    /// A copy, for a [`ProviderStream`](crate::ProviderStream) that is cloned.
    fn boxed_clone(&self) -> Box<dyn StreamAccumulator>;
}

/// Written once for every protocol's stream, so that a module writes its stream's own methods
/// only.
impl<S: ProtocolStream> StreamAccumulator for S {
    fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        ProtocolStream::push(self, event)
    }

    fn text(&self) -> &str {
        ProtocolStream::text(self)
    }

    fn finish(self: Box<Self>) -> Result<ProviderResponse, ProviderError> {
        ProtocolStream::finish(*self)
    }

    fn boxed_clone(&self) -> Box<dyn StreamAccumulator> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn StreamAccumulator> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// A request body as JSON text. Only the options and the conversation went into it, so a body
/// that cannot be encoded is reported as a configuration error.
pub(crate) fn encode_body(body: &impl Serialize) -> Result<String, ProviderError> {
    serde_json::to_string(body).map_err(|error| {
        ProviderError::InvalidConfig(format!("the request could not be encoded as JSON: {error}"))
    })
}

/// The bookkeeping every protocol's stream does the same way, whatever its events look like:
/// how many events arrived, whether the protocol's end marker came, and the first error. A
/// stream that failed once stays failed: every later event, and the end, report that error
/// again; events after the end marker are ignored.
#[derive(Debug, Clone, Default)]
pub struct StreamLatch {
    events: usize,
    ended: bool,
    failure: Option<ProviderError>,
}

impl StreamLatch {
    /// What `push` returns instead of reading the next event: the first error again when the
    /// stream failed, nothing when it ended, and `None` (the event is counted) when the event
    /// is to be read.
    fn refuse_event(&mut self) -> Option<Result<Vec<StreamDelta>, ProviderError>> {
        if let Some(failure) = &self.failure {
            return Some(Err(failure.clone()));
        }
        if self.ended {
            return Some(Ok(Vec::new()));
        }
        self.events += 1;
        None
    }

    /// Keeps the error of an event's reading, if it is one, and passes the reading on.
    fn keep(
        &mut self,
        read: Result<Vec<StreamDelta>, ProviderError>,
    ) -> Result<Vec<StreamDelta>, ProviderError> {
        if let Err(error) = &read {
            self.failure = Some(error.clone());
        }
        read
    }

    /// The protocol's end marker arrived.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// Whether the protocol's end marker arrived.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Checks that the stream, now over, gave a whole answer.
    ///
    /// # Errors
    /// The first error again, or [`ProviderError::StreamTruncated`] (with the text and the
    /// tool calls received) when the end marker never came.
    pub fn check_whole(&mut self, text: &str, tool_calls: usize) -> Result<(), ProviderError> {
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        if !self.ended {
            return Err(ProviderError::StreamTruncated {
                events: self.events,
                text_chars: text.chars().count(),
                tool_calls,
            });
        }
        Ok(())
    }
}
