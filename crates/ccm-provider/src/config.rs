//! Which provider to talk to, where it lives, and how to ask it.

use super::error::ProviderError;
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
    pub fn protocol(self) -> &'static Protocol {
        match self {
            ProviderKind::OpenAiCompatible => &super::openai::PROTOCOL,
            ProviderKind::Anthropic => &super::anthropic::PROTOCOL,
        }
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
    pub fn name(self) -> &'static str {
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

/// The JSON field an OpenAI-compatible request uses for the output token limit.
///
/// OpenAI deprecated `max_tokens` in favour of `max_completion_tokens` and its reasoning models
/// reject the old name, while many compatible servers only understand `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimitField {
    /// `max_tokens`: understood by every compatible server.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI itself expects.
    MaxCompletionTokens,
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

/// The output token limit used by [`RequestOptions::new`].
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Whether and which tools the model may call in one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides. This is every provider's default, so nothing is sent for it, which
    /// also keeps servers that do not know the `tool_choice` field working.
    #[default]
    Auto,
    /// The model must answer in plain text. The tools are still sent (a conversation that
    /// contains tool calls needs their definitions), but the model may not call them: this is
    /// how the last round of a turn forces a final answer.
    None,
    /// The model must call at least one tool (Anthropic calls this `any`).
    Required,
    /// The model must call the named tool.
    Function(String),
}

/// The per-request settings: which model, how much output, and the tool choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    /// The model name as the provider knows it (`gpt-4o-mini`, `llama3.2`,
    /// `claude-sonnet-4-5`, …).
    pub model: String,
    /// The most tokens the model may generate. Anthropic requires this value, so it is always
    /// sent.
    pub max_tokens: u32,
    /// Sampling temperature; `None` keeps the provider's default.
    pub temperature: Option<f64>,
    /// Ask for a server-sent-event stream instead of one JSON body.
    pub stream: bool,
    /// Whether and which tools the model may call.
    pub tool_choice: ToolChoice,
}

impl RequestOptions {
    /// Options for `model` with [`DEFAULT_MAX_TOKENS`], the provider's default temperature, no
    /// streaming and [`ToolChoice::Auto`].
    pub fn new(model: impl Into<String>) -> Self {
        RequestOptions {
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            stream: false,
            tool_choice: ToolChoice::Auto,
        }
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets [`temperature`](Self::temperature).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets [`stream`](Self::stream).
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets [`tool_choice`](Self::tool_choice).
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    /// Checks the options against the tools that will be sent with them.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidConfig`] for an empty model name, a zero `max_tokens`, a
    /// temperature that is not a finite number, or a tool choice that requires a tool when
    /// `tool_names` is empty or does not contain the named function.
    pub fn validate<'a>(
        &self,
        tool_names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ProviderError> {
        if self.model.trim().is_empty() {
            return Err(ProviderError::InvalidConfig(
                "no model name is set".to_string(),
            ));
        }
        if self.max_tokens == 0 {
            return Err(ProviderError::InvalidConfig(
                "max_tokens must be at least 1".to_string(),
            ));
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(ProviderError::InvalidConfig(format!(
                    "the temperature must be a number of at least 0, not {t}"
                )));
            }
        }
        let mut names = tool_names.into_iter().peekable();
        match &self.tool_choice {
            ToolChoice::Required if names.peek().is_none() => Err(ProviderError::InvalidConfig(
                "the tool choice requires a tool call, but no tools are sent".to_string(),
            )),
            ToolChoice::Function(wanted) if !names.any(|name| name == wanted) => {
                Err(ProviderError::InvalidConfig(format!(
                    "the tool choice names the tool `{wanted}`, which is not among the tools sent"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn options_validation_explains_the_problem() {
        let tools = ["open_effort", "close_effort"];
        let ok =
            RequestOptions::new("m").with_tool_choice(ToolChoice::Function("close_effort".into()));
        ok.validate(tools).unwrap();

        let cases = [
            (RequestOptions::new(" "), "no model name is set"),
            (
                RequestOptions::new("m").with_max_tokens(0),
                "max_tokens must be at least 1",
            ),
            (
                RequestOptions::new("m").with_temperature(f64::NAN),
                "the temperature must be a number of at least 0, not NaN",
            ),
            (
                RequestOptions::new("m").with_tool_choice(ToolChoice::Function("nope".into())),
                "the tool choice names the tool `nope`, which is not among the tools sent",
            ),
        ];
        for (options, message) in cases {
            assert_eq!(
                options.validate(tools),
                Err(ProviderError::InvalidConfig(message.to_string()))
            );
        }
        assert_eq!(
            RequestOptions::new("m")
                .with_tool_choice(ToolChoice::Required)
                .validate([]),
            Err(ProviderError::InvalidConfig(
                "the tool choice requires a tool call, but no tools are sent".to_string()
            ))
        );
        // Forcing plain text is fine without tools: there is nothing to call anyway.
        RequestOptions::new("m")
            .with_tool_choice(ToolChoice::None)
            .validate([])
            .unwrap();
    }
}
