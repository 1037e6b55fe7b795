//! Which provider to talk to, where it lives, and how to ask it; and the table of protocols,
//! [`ProviderKind`]: one variant per protocol, each mapped to its module's entry.
//!
//! The table sits here, above the protocol modules, because what needs it is here: a
//! configuration's endpoint URL, its model-list request and the typed base URL's clean-up all
//! depend on the protocol. The modules in turn read only [`crate::options`], [`crate::protocol`]
//! and the shared wire types, never this file, so the table can name them without an import
//! circle.

use super::error::{ErrorContext, ProviderError};
use super::options::{RequestOptions, TokenLimitField};
use super::protocol::Protocol;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The protocol family a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// The OpenAI Chat Completions API (`POST {base}/chat/completions`), also spoken by Ollama,
    /// LM Studio, OpenRouter, vLLM, llama.cpp and many others.
    OpenAiCompatible,
    /// The Anthropic Messages API (`POST {base}/messages`).
    Anthropic,
}

impl ProviderKind {
    /// Every protocol, in the order lists and error messages give them. It sits beside the enum
    /// so that a new protocol touches this file, its own module and `lib.rs` only.
    pub const ALL: [ProviderKind; 2] = [ProviderKind::OpenAiCompatible, ProviderKind::Anthropic];

    /// The protocol's entry in the table (see [`crate::protocol`]): the one place that maps a
    /// kind to its module. A new protocol adds its variant above, to `ProviderKind::ALL`, and
    /// its arm here.
    pub const fn protocol(self) -> &'static Protocol {
        match self {
            ProviderKind::OpenAiCompatible => &super::openai::PROTOCOL,
            ProviderKind::Anthropic => &super::anthropic::PROTOCOL,
        }
    }

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

    /// The headers that authenticate (and, for some protocols, version) every request of the
    /// protocol, the model list's included: completion requests and model lists must send the
    /// same ones, so they are written in the protocol's module only.
    pub fn auth_headers(self, api_key: Option<&str>) -> Vec<(String, String)> {
        (self.protocol().auth_headers)(api_key)
    }
}

/// A well-known provider with its default base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// OpenAI's hosted API (`https://api.openai.com/v1`); needs an API key.
    OpenAi,
    /// A local Ollama server (`http://localhost:11434/v1`); no key.
    Ollama,
    /// LM Studio's local server (`http://localhost:1234/v1`); no key.
    LmStudio,
    /// OpenRouter (`https://openrouter.ai/api/v1`); needs an API key.
    OpenRouter,
    /// Anthropic's hosted API (`https://api.anthropic.com/v1`); needs an API key.
    Anthropic,
}

impl Preset {
    /// Every preset, in the order a settings screen would list them.
    pub const ALL: [Preset; 5] = [
        Preset::OpenAi,
        Preset::Anthropic,
        Preset::OpenRouter,
        Preset::Ollama,
        Preset::LmStudio,
    ];

    /// The short name used on command lines and in settings (`openai`, `anthropic`,
    /// `openrouter`, `ollama`, `lmstudio`).
    pub const fn name(self) -> &'static str {
        match self {
            Preset::OpenAi => "openai",
            Preset::Ollama => "ollama",
            Preset::LmStudio => "lmstudio",
            Preset::OpenRouter => "openrouter",
            Preset::Anthropic => "anthropic",
        }
    }

    /// The name to show to people (`OpenAI`, `LM Studio`, …).
    pub fn label(self) -> &'static str {
        match self {
            Preset::OpenAi => "OpenAI",
            Preset::Ollama => "Ollama",
            Preset::LmStudio => "LM Studio",
            Preset::OpenRouter => "OpenRouter",
            Preset::Anthropic => "Anthropic",
        }
    }

    /// The protocol the preset speaks.
    pub fn kind(self) -> ProviderKind {
        match self {
            Preset::Anthropic => ProviderKind::Anthropic,
            _ => ProviderKind::OpenAiCompatible,
        }
    }

    /// The default base URL, without a trailing slash.
    pub fn base_url(self) -> &'static str {
        match self {
            Preset::OpenAi => "https://api.openai.com/v1",
            Preset::Ollama => "http://localhost:11434/v1",
            Preset::LmStudio => "http://localhost:1234/v1",
            Preset::OpenRouter => "https://openrouter.ai/api/v1",
            Preset::Anthropic => "https://api.anthropic.com/v1",
        }
    }

    /// Whether the hosted service refuses requests without an API key.
    pub fn needs_api_key(self) -> bool {
        matches!(
            self,
            Preset::OpenAi | Preset::OpenRouter | Preset::Anthropic
        )
    }

    /// Looks a preset up by [`name`](Self::name), ignoring case and accepting `lm-studio` /
    /// `lm_studio` and `open-ai` style spellings.
    /// [`ProviderName::from_name`](crate::ProviderName::from_name) looks up every provider
    /// name, these included, and its error lists them all.
    pub fn from_name(name: &str) -> Option<Preset> {
        let folded: String = name
            .trim()
            .chars()
            .filter(|c| *c != '-' && *c != '_' && *c != ' ')
            .flat_map(char::to_lowercase)
            .collect();
        Preset::ALL.into_iter().find(|p| p.name() == folded)
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Where to send requests and how to authenticate.
///
/// The [`Debug`] output hides the API key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// The protocol.
    pub kind: ProviderKind,
    /// The base URL without a trailing slash, for example `https://api.openai.com/v1`.
    pub base_url: String,
    /// The API key. `None` sends no authentication header at all, which is what local servers
    /// expect (and lets a proxy add the credentials).
    pub api_key: Option<String>,
    /// The output-limit field of OpenAI-compatible requests; ignored for Anthropic.
    pub token_limit_field: TokenLimitField,
    /// Extra headers sent with every request (for example OpenRouter's `HTTP-Referer` and
    /// `X-Title`). A header with the same name as one the protocol sets replaces it.
    pub extra_headers: Vec<(String, String)>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .extra_headers
            .iter()
            .map(|(name, value)| {
                let shown = if super::is_secret_header(name) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("token_limit_field", &self.token_limit_field)
            .field("extra_headers", &headers)
            .finish()
    }
}

impl ProviderConfig {
    /// The configuration of a well-known provider. An empty or blank key counts as no key.
    pub fn from_preset(preset: Preset, api_key: Option<String>) -> Self {
        let token_limit_field = match preset {
            Preset::OpenAi => TokenLimitField::MaxCompletionTokens,
            _ => TokenLimitField::MaxTokens,
        };
        ProviderConfig {
            kind: preset.kind(),
            base_url: preset.base_url().to_string(),
            api_key: clean_key(api_key),
            token_limit_field,
            extra_headers: Vec::new(),
        }
    }

    /// A provider at any base URL, for example a self-hosted vLLM server or a proxy.
    ///
    /// The URL is normalised with [`normalize_base_url`], so `http://host:8000/v1/`,
    /// `http://host:8000/v1` and even the full endpoint `http://host:8000/v1/chat/completions`
    /// all give the same configuration. An empty or blank key counts as no key.
    pub fn custom(kind: ProviderKind, base_url: &str, api_key: Option<String>) -> Self {
        ProviderConfig {
            kind,
            base_url: normalize_base_url(kind, base_url),
            api_key: clean_key(api_key),
            token_limit_field: TokenLimitField::MaxTokens,
            extra_headers: Vec::new(),
        }
    }

    /// Adds a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// The full URL of the completion endpoint.
    pub fn endpoint_url(&self) -> String {
        format!(
            "{}{}",
            self.base_url.trim_end_matches('/'),
            self.kind.endpoint_path()
        )
    }

    /// The request for the provider's model list (`GET {base}/models`, which OpenAI,
    /// Anthropic, OpenRouter, Ollama and LM Studio all answer), with the protocol's
    /// authentication headers and the extra headers, exactly as a completion request has them.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidConfig`] when the base URL cannot be requested (see
    /// [`validate`](Self::validate)).
    pub fn model_list_request(&self) -> Result<super::HttpRequest, ProviderError> {
        self.validate()?;
        Ok(super::HttpRequest {
            method: super::HttpMethod::Get,
            url: format!("{}/models", self.base_url.trim_end_matches('/')),
            headers: super::request_headers(
                self.kind.auth_headers(self.api_key.as_deref()),
                &self.extra_headers,
            ),
            body: String::new(),
        })
    }

    /// Checks that the base URL can be requested at all.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidConfig`] when the base URL is empty or does not start with
    /// `http://` or `https://`.
    pub fn validate(&self) -> Result<(), ProviderError> {
        let url = self.base_url.trim();
        if url.is_empty() {
            return Err(ProviderError::InvalidConfig(
                "the base URL is empty".to_string(),
            ));
        }
        if is_requestable_base_url(url) {
            Ok(())
        } else {
            Err(ProviderError::InvalidConfig(format!(
                "the base URL `{url}` must start with http:// or https:// followed by a host"
            )))
        }
    }
}

/// Written here rather than beside [`ErrorContext`], so that the errors, which every protocol
/// module reads, do not depend on the configuration, which reads the protocol table.
impl ErrorContext {
    /// The context of a request built from `config` and `options`.
    pub fn new(config: &ProviderConfig, options: &RequestOptions) -> Self {
        ErrorContext {
            url: config.endpoint_url(),
            model: options.model.clone(),
            api_key_given: config.api_key.is_some(),
        }
    }
}

/// Whether a base URL can be requested at all: `http://` or `https://` (in any case) followed by
/// a host, and no blank inside (a URL with a space in it was mistyped, and `fetch` refuses it).
/// Surrounding blanks are ignored. [`ProviderConfig::validate`] and
/// [`ProviderConfig::from_choice`] both check with this, so they accept the same URLs.
pub(crate) fn is_requestable_base_url(url: &str) -> bool {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
        && !url.chars().any(char::is_whitespace)
}

fn clean_key(api_key: Option<String>) -> Option<String> {
    api_key
        .map(|key| key.trim().to_string())
        .filter(|key| !key.is_empty())
}

/// Normalises a base URL typed by a person: surrounding whitespace and trailing slashes are
/// removed, and so is the protocol's endpoint path if the whole endpoint URL was pasted.
///
/// ```
/// # use ccm_provider::{normalize_base_url, ProviderKind};
/// let kind = ProviderKind::OpenAiCompatible;
/// assert_eq!(normalize_base_url(kind, " http://gpu:8000/v1// "), "http://gpu:8000/v1");
/// assert_eq!(normalize_base_url(kind, "http://gpu:8000/v1/chat/completions"), "http://gpu:8000/v1");
/// ```
pub fn normalize_base_url(kind: ProviderKind, url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    let base = trimmed
        .strip_suffix(kind.endpoint_path())
        .unwrap_or(trimmed);
    base.trim_end_matches('/').to_string()
}

/// How long a transport waits, by default, for the next bytes of a response body before it
/// gives up on the response: a minute. A stream that stalls after part of the answer arrived
/// then ends with [`ProviderError::StreamStalled`]. Streaming servers send something well
/// within that while the model works (text, `ping` events, keep-alive comments), and a silent
/// minute means a connection or a server that is stuck.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;

/// How long a transport waits, by default, for the response headers: five minutes. A
/// non-streaming answer's headers come only once the model has written the whole answer, so
/// this is generous; a server that accepts the connection and then says nothing ends with
/// [`ProviderError::Timeout`](crate::ProviderError::Timeout) instead of a wait for ever.
pub const DEFAULT_HEADERS_TIMEOUT_MS: u64 = 300_000;

/// The longest a whole response may take by default, from the request to the last byte: ten
/// minutes. The idle timeout cannot catch a stream that trickles (a byte every few seconds,
/// never silent for long, never finished); this deadline does, with
/// [`ProviderError::StreamDeadline`](crate::ProviderError::StreamDeadline).
pub const DEFAULT_RESPONSE_DEADLINE_MS: u64 = 600_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProviderChoice, ProviderName, ProviderStream};

    #[test]
    fn a_model_list_request_carries_the_protocols_own_headers() {
        let anthropic = ProviderConfig::from_preset(Preset::Anthropic, Some("sk-ant".into()))
            .with_header("x-team", "ml");
        let request = anthropic.model_list_request().unwrap();
        assert_eq!(request.method, crate::HttpMethod::Get);
        assert_eq!(request.url, "https://api.anthropic.com/v1/models");
        assert_eq!(request.header("x-api-key"), Some("sk-ant"));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("x-team"), Some("ml"));
        let local = ProviderConfig::custom(ProviderKind::OpenAiCompatible, "http://h:1/v1/", None);
        let request = local.model_list_request().unwrap();
        assert_eq!(request.url, "http://h:1/v1/models");
        assert_eq!(request.header("authorization"), None);
        let keyed = ProviderConfig::from_preset(Preset::OpenAi, Some("sk-1".into()));
        assert_eq!(
            keyed.model_list_request().unwrap().header("authorization"),
            Some("Bearer sk-1")
        );
    }

    #[test]
    fn presets_have_the_documented_urls_and_kinds() {
        let expected = [
            (
                Preset::OpenAi,
                "https://api.openai.com/v1/chat/completions",
                true,
            ),
            (
                Preset::Ollama,
                "http://localhost:11434/v1/chat/completions",
                false,
            ),
            (
                Preset::LmStudio,
                "http://localhost:1234/v1/chat/completions",
                false,
            ),
            (
                Preset::OpenRouter,
                "https://openrouter.ai/api/v1/chat/completions",
                true,
            ),
            (
                Preset::Anthropic,
                "https://api.anthropic.com/v1/messages",
                true,
            ),
        ];
        for (preset, endpoint, needs_key) in expected {
            let config = ProviderConfig::from_preset(preset, None);
            assert_eq!(config.endpoint_url(), endpoint, "{preset:?}");
            assert_eq!(preset.needs_api_key(), needs_key, "{preset:?}");
            config.validate().unwrap();
        }
        assert_eq!(Preset::Anthropic.kind(), ProviderKind::Anthropic);
        assert_eq!(Preset::OpenRouter.kind(), ProviderKind::OpenAiCompatible);
    }

    #[test]
    fn preset_names_round_trip_and_accept_common_spellings() {
        for preset in Preset::ALL {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
        }
        assert_eq!(Preset::from_name("LM-Studio"), Some(Preset::LmStudio));
        assert_eq!(Preset::from_name(" OpenAI "), Some(Preset::OpenAi));
        // A name that is no preset is not one; `ProviderName` explains the mistake.
        assert_eq!(Preset::from_name("gemini"), None);
    }

    #[test]
    fn custom_base_urls_are_normalised() {
        let kind = ProviderKind::OpenAiCompatible;
        for typed in [
            "http://gpu:8000/v1",
            "http://gpu:8000/v1/",
            "  http://gpu:8000/v1///  ",
            "http://gpu:8000/v1/chat/completions",
            "http://gpu:8000/v1/chat/completions/",
        ] {
            let config = ProviderConfig::custom(kind, typed, None);
            assert_eq!(config.base_url, "http://gpu:8000/v1", "{typed:?}");
            assert_eq!(config.endpoint_url(), "http://gpu:8000/v1/chat/completions");
        }
        let anthropic = ProviderConfig::custom(
            ProviderKind::Anthropic,
            "https://proxy.example/v1/messages/",
            None,
        );
        assert_eq!(
            anthropic.endpoint_url(),
            "https://proxy.example/v1/messages"
        );
    }

    #[test]
    fn blank_keys_count_as_no_key() {
        let config = ProviderConfig::from_preset(Preset::OpenAi, Some("   ".into()));
        assert_eq!(config.api_key, None);
        let config = ProviderConfig::custom(
            ProviderKind::OpenAiCompatible,
            "http://x",
            Some(" sk-1 \n".into()),
        );
        assert_eq!(config.api_key.as_deref(), Some("sk-1"));
    }

    #[test]
    fn invalid_base_urls_are_rejected() {
        for bad in [
            "",
            "   ",
            "localhost:11434/v1",
            "ftp://host/v1",
            "http://",
            "https:///v1",
        ] {
            let config = ProviderConfig::custom(ProviderKind::OpenAiCompatible, bad, None);
            assert!(
                matches!(config.validate(), Err(ProviderError::InvalidConfig(_))),
                "{bad:?} was accepted"
            );
        }
        ProviderConfig::custom(ProviderKind::Anthropic, "HTTPS://Proxy.Example", None)
            .validate()
            .unwrap();
    }

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
