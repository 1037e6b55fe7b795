//! The table of provider protocols: everything the rest of the workspace needs to know about a
//! protocol, in one entry per protocol, so that a new one is a module with its entry plus a
//! [`ProviderKind`] variant, and every front end (the command line's `--protocol`, the app's
//! provider list, the npm package's provider names) picks it up from here.
//!
//! Adding a protocol takes three files of this crate: the protocol's module (its request
//! builder, response parser and stream accumulator, and its `PROTOCOL` entry), the
//! [`ProviderKind`] variant with its arm in [`ProviderKind::protocol`] (config.rs), and the
//! module's declaration (lib.rs). tests/new_protocol.rs shows it with a protocol that exists
//! only in that test.

use crate::sse::SseEvent;
use crate::{
    HttpRequest, ProviderConfig, ProviderError, ProviderKind, ProviderResponse, RequestOptions,
    StreamDelta, WireMessage, WireTool,
};
use std::fmt;

/// A protocol's writer of completion requests: the configuration, the options, the
/// conversation and the tools in, the HTTP request out.
pub type BuildRequest = fn(
    &ProviderConfig,
    &RequestOptions,
    &[WireMessage],
    &[WireTool],
) -> Result<HttpRequest, ProviderError>;

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
    /// Writes a completion request.
    pub build_request: BuildRequest,
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

/// A protocol's reading of a streamed answer, one server-sent event at a time.
pub trait StreamAccumulator: fmt::Debug + Send {
    /// Takes one event and returns the deltas it carries.
    ///
    /// # Errors
    /// The protocol's error for an event it cannot accept (an error event, bad JSON, an
    /// answer past an output limit).
    fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError>;
    /// The answer text received so far.
    fn text(&self) -> &str;
    /// The whole answer once the stream has ended.
    ///
    /// # Errors
    /// The protocol's error for a stream that ended too early or said nothing usable.
    fn finish(self: Box<Self>) -> Result<ProviderResponse, ProviderError>;
    /// A copy, for a [`ProviderStream`](crate::ProviderStream) that is cloned.
    fn boxed_clone(&self) -> Box<dyn StreamAccumulator>;
}

impl Clone for Box<dyn StreamAccumulator> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl ProviderKind {
    /// The protocol whose `--protocol` name is `name` (case and surrounding blanks ignored).
    pub fn from_protocol_name(name: &str) -> Option<ProviderKind> {
        let name = name.trim();
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.protocol().name.eq_ignore_ascii_case(name))
    }

    /// Every `--protocol` name, as an error message lists them (`openai or anthropic`).
    pub fn protocol_names() -> String {
        let names: Vec<&str> = ProviderKind::ALL
            .iter()
            .map(|kind| kind.protocol().name)
            .collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The path appended to the base URL to reach the completion endpoint.
    pub fn endpoint_path(self) -> &'static str {
        self.protocol().endpoint_path
    }

    /// The headers that authenticate (and, for Anthropic, version) every request of the
    /// protocol, the model list's included: completion requests and model lists must send
    /// the same ones, so they are written in the protocol's module only.
    pub fn auth_headers(self, api_key: Option<&str>) -> Vec<(String, String)> {
        (self.protocol().auth_headers)(api_key)
    }
}

#[cfg(test)]
mod tests {
    use crate::{ProviderChoice, ProviderConfig, ProviderKind, ProviderName, ProviderStream};

    /// Every protocol of the table is reachable by every name a front end gives it, and its
    /// entry is what requests, streams and the model list use: a protocol added to the table is
    /// picked up everywhere without another list to extend.
    #[test]
    fn every_protocol_of_the_table_is_picked_up_by_every_name_and_request() {
        let names = ProviderName::all();
        for kind in ProviderKind::ALL {
            let protocol = kind.protocol();
            assert_eq!(ProviderKind::from_protocol_name(protocol.name), Some(kind));
            assert_eq!(
                ProviderKind::from_protocol_name(&protocol.name.to_uppercase()),
                Some(kind)
            );
            assert!(ProviderKind::protocol_names().contains(protocol.name));
            let compatible = ProviderName::Compatible(kind);
            assert!(names.contains(&compatible), "{compatible} is not listed");
            assert_eq!(compatible.name(), protocol.compatible_name);
            assert_eq!(
                ProviderName::from_name(protocol.compatible_name),
                Some(compatible)
            );
            assert_eq!(
                ProviderName::from_name(&format!("custom_{}", protocol.name)),
                Some(compatible)
            );
            assert!(ProviderName::accepted_names().contains(protocol.compatible_name));
            let choice = ProviderChoice::new(compatible)
                .with_base_url(Some("http://localhost:9/v1".to_string()))
                .with_api_key(Some("k".to_string()));
            let config = ProviderConfig::from_choice(&choice).unwrap().unwrap();
            assert_eq!(config.kind, kind);
            assert!(config.endpoint_url().ends_with(protocol.endpoint_path));
            let listing = config.model_list_request().unwrap();
            for (name, value) in (protocol.auth_headers)(Some("k")) {
                assert_eq!(listing.header(&name), Some(value.as_str()), "{name}");
            }
            // A stream of the protocol that ends before any answer is its own error, not a
            // panic or another protocol's reading.
            assert!(ProviderStream::new(kind).finish().is_err());
        }
        assert_eq!(
            ProviderKind::protocol_names(),
            "openai or anthropic",
            "the two protocols of today, in the table's order"
        );
    }
}
