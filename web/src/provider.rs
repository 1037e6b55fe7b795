//! Which model the app talks to: the offline demo model (the default), a preset, or a custom
//! endpoint, with the model name and whether to stream.
//!
//! These settings are the person's, not the session's: they are kept in localStorage for the
//! browser, never in a session document. The API key is not part of them at all; it lives in
//! memory for the tab and is stored only when the person asks (see `state::KeyStore`).

use crate::models::{known_model, ModelInfo};
use ccm_browser::provider::{
    Preset, ProviderChoiceError, ProviderConfig, ProviderKind, ProviderName,
};
use ccm_browser::turn::{EngineSettings, RetryPolicy, OFFLINE_MODEL_NAME};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where requests go: one of ccm-provider's [`ProviderName`]s (the names the command line and
/// the npm package accept too), with what the settings screen shows for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderChoice {
    /// The deterministic offline demo model: no network, no key.
    Offline,
    /// A well-known provider.
    Preset(Preset),
    /// Any endpoint at a base URL that speaks one of ccm-provider's protocols: every protocol
    /// of its table is offered, so a new one is listed without a change here.
    Compatible(ProviderKind),
}

impl From<ProviderName> for ProviderChoice {
    fn from(name: ProviderName) -> Self {
        match name {
            ProviderName::Offline => ProviderChoice::Offline,
            ProviderName::Preset(preset) => ProviderChoice::Preset(preset),
            ProviderName::Compatible(kind) => ProviderChoice::Compatible(kind),
        }
    }
}

impl From<ProviderChoice> for ProviderName {
    fn from(choice: ProviderChoice) -> Self {
        match choice {
            ProviderChoice::Offline => ProviderName::Offline,
            ProviderChoice::Preset(preset) => ProviderName::Preset(preset),
            ProviderChoice::Compatible(kind) => ProviderName::Compatible(kind),
        }
    }
}

impl ProviderChoice {
    /// Every choice, in the order the settings list them (ccm-provider's order).
    pub fn all() -> Vec<ProviderChoice> {
        ProviderName::all()
            .into_iter()
            .map(ProviderChoice::from)
            .collect()
    }

    /// The provider's name in ccm-provider's vocabulary.
    pub fn name(self) -> ProviderName {
        self.into()
    }

    /// The value of the `<option>` and the suffix of the localStorage entry that remembers the
    /// choice's API key: the provider's [`name`](ProviderName::name), except that the
    /// `*_compatible` choices keep `custom_` and the protocol's name (`custom_openai`, …),
    /// under which earlier versions remembered their keys (ccm-provider
    /// accepts them as aliases).
    pub fn key(self) -> String {
        match self {
            ProviderChoice::Compatible(kind) => format!("custom_{}", kind.protocol().name),
            other => other.name().name().to_string(),
        }
    }

    /// Parses any spelling ccm-provider's [`ProviderName::from_name`] accepts, [`key`](Self::key)
    /// included.
    pub fn from_key(key: &str) -> Option<ProviderChoice> {
        ProviderName::from_name(key).map(ProviderChoice::from)
    }
    /// The name shown to people.
    pub fn label(self) -> String {
        match self {
            ProviderChoice::Offline => "Offline demo model (no key, no network)".to_string(),
            ProviderChoice::Preset(preset) => preset.label().to_string(),
            ProviderChoice::Compatible(kind) => {
                format!("Custom {}-compatible URL", kind.protocol().label)
            }
        }
    }

    /// The base URL suggested when the choice is made.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderChoice::Offline => "",
            ProviderChoice::Preset(preset) => preset.base_url(),
            // A custom server's address is the person's to type: a real-looking value here
            // would be taken for a working one (the field shows an example as its placeholder).
            ProviderChoice::Compatible(_) => "",
        }
    }

    /// What the base URL field shows while it is empty.
    pub fn base_url_placeholder(self) -> &'static str {
        match self {
            ProviderChoice::Compatible(_) => "the server's base URL, e.g. http://localhost:8000/v1",
            _ => "the provider's base URL",
        }
    }

    /// A model name to start from; the person can type any other.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderChoice::Offline => OFFLINE_MODEL_NAME,
            ProviderChoice::Preset(Preset::OpenAi) => "gpt-4o-mini",
            ProviderChoice::Preset(Preset::Anthropic) => "claude-3-5-haiku-latest",
            ProviderChoice::Preset(Preset::OpenRouter) => "openai/gpt-4o-mini",
            ProviderChoice::Preset(Preset::Ollama) => "llama3.2",
            ProviderChoice::Preset(Preset::LmStudio) => "local-model",
            // The server's own names are unknown until its list is loaded or one is typed.
            ProviderChoice::Compatible(_) => "",
        }
    }

    /// Whether the provider cannot be used without an API key (ccm-provider decides).
    pub fn needs_key(self) -> bool {
        let choice = ccm_browser::provider::ProviderChoice::new(self.name())
            .with_base_url(Some(self.default_base_url().to_string()))
            .with_api_key(None);
        matches!(
            ProviderConfig::from_choice(&choice),
            Err(ProviderChoiceError::MissingApiKey { .. })
        )
    }
}

/// Settings store the choice as its canonical name (`"openai"`, `"openai_compatible"`).
impl Serialize for ProviderChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.name().serialize(serializer)
    }
}

/// Reads a name in any spelling ccm-provider accepts, and the forms earlier versions stored:
/// `{"preset": "open_ai"}` for a preset, and `"custom_"` with a protocol's name (`"custom_openai"`).
impl<'de> Deserialize<'de> for ProviderChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Name(ProviderName),
            OlderPreset { preset: Preset },
        }
        Ok(match Stored::deserialize(deserializer)? {
            Stored::Name(name) => name.into(),
            Stored::OlderPreset { preset } => ProviderChoice::Preset(preset),
        })
    }
}

/// The person's provider settings (without the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// Where requests go.
    pub choice: ProviderChoice,
    /// The base URL (ignored for the offline model).
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// Stream answers as they are written.
    pub stream: bool,
    /// Keep the API key in this browser's localStorage instead of only in memory.
    pub remember_key: bool,
    /// US dollars per million prompt tokens, overriding the app's table (`None`: the table's).
    pub input_price: Option<f64>,
    /// US dollars per million answer tokens, overriding the app's table.
    pub output_price: Option<f64>,
    /// An OpenAI-compatible embeddings endpoint's base URL (empty: search by words only).
    pub embeddings_url: String,
    /// Its embedding model.
    pub embeddings_model: String,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings::for_choice(ProviderChoice::Offline)
    }
}

impl ProviderSettings {
    /// The settings a choice starts with.
    pub fn for_choice(choice: ProviderChoice) -> ProviderSettings {
        ProviderSettings {
            choice,
            base_url: choice.default_base_url().to_string(),
            model: choice.default_model().to_string(),
            stream: true,
            remember_key: false,
            input_price: None,
            output_price: None,
            embeddings_url: String::new(),
            embeddings_model: String::new(),
        }
    }

    /// The embeddings endpoint these settings name, if any, or why it cannot be used. The API
    /// key goes along only when the endpoint is on the provider's own server (same scheme,
    /// host and port): a key is never sent anywhere else.
    pub fn embeddings_endpoint(
        &self,
        api_key: &str,
    ) -> Option<Result<ccm_browser::provider::EmbeddingsEndpoint, String>> {
        let url = self.embeddings_url.trim();
        if url.is_empty() {
            return None;
        }
        let model = self.embeddings_model.trim();
        if model.is_empty() {
            return Some(Err(
                "the embeddings endpoint needs a model (Settings, Embedding model)".to_string(),
            ));
        }
        let origin = |url: &str| url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        let same_server = !self.is_offline() && origin(url) == origin(self.base_url.trim());
        let choice = ccm_browser::provider::ProviderChoice {
            provider: ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            base_url: Some(url.to_string()),
            api_key: same_server.then(|| api_key.to_string()),
            headers: Vec::new(),
        };
        Some(
            ccm_browser::provider::ProviderConfig::from_choice(&choice)
                .map_err(|e| format!("embeddings endpoint: {e}"))
                .and_then(|config| config.ok_or_else(|| "no embeddings endpoint".to_string()))
                .map(|provider| ccm_browser::provider::EmbeddingsEndpoint {
                    provider,
                    model: model.to_string(),
                    dimensions: None,
                }),
        )
    }

    /// The model's context window and prices: the app's table, with the person's prices over
    /// it. `None` when neither knows the model (the offline model costs nothing).
    pub fn model_info(&self) -> Option<ModelInfo> {
        if self.is_offline() {
            return Some(ModelInfo {
                context_window: ccm_core::config::DEFAULT_CONTEXT_WINDOW,
                input_per_million: 0.0,
                output_per_million: 0.0,
            });
        }
        let known = known_model(&self.model);
        match (known, self.input_price, self.output_price) {
            (None, None, None) => None,
            (known, input, output) => Some(ModelInfo {
                context_window: known.map_or(0, |k| k.context_window),
                input_per_million: input
                    .or(known.map(|k| k.input_per_million))
                    .unwrap_or_default(),
                output_per_million: output
                    .or(known.map(|k| k.output_per_million))
                    .unwrap_or_default(),
            }),
        }
    }

    /// Whether replies come from the offline demo model.
    pub fn is_offline(&self) -> bool {
        self.choice == ProviderChoice::Offline
    }

    /// The provider configuration for an HTTP transport, or `None` for the offline model, as
    /// ccm-provider's `ProviderConfig::from_choice` makes it from the choice, the base URL
    /// (blank: a preset's own) and the key.
    ///
    /// # Errors
    /// A sentence for the person when the URL is unusable or a required key is missing.
    pub fn provider_config(&self, key: Option<&str>) -> Result<Option<ProviderConfig>, String> {
        let choice = ccm_browser::provider::ProviderChoice::new(self.choice.name())
            .with_base_url(Some(self.base_url.clone()))
            .with_api_key(key.map(str::to_string));
        ProviderConfig::from_choice(&choice).map_err(|error| {
            let sentence = capitalised(&error.to_string());
            match error {
                ProviderChoiceError::MissingApiKey { .. } => format!(
                    "{sentence}: enter it in Settings (it stays in this tab unless you ask to remember it)."
                ),
                _ => format!("{sentence}."),
            }
        })
    }

    /// The engine settings of a turn.
    pub fn engine_settings(&self) -> EngineSettings {
        let model = if self.is_offline() || self.model.trim().is_empty() {
            if self.is_offline() {
                OFFLINE_MODEL_NAME.to_string()
            } else {
                self.choice.default_model().to_string()
            }
        } else {
            self.model.trim().to_string()
        };
        EngineSettings::new(model)
            .with_stream(self.stream)
            .with_retry(RetryPolicy::default())
    }

    /// A short name for the header ("Offline demo model", "OpenAI · gpt-4o-mini").
    pub fn short_label(&self) -> String {
        match self.choice {
            ProviderChoice::Offline => "Offline demo model".to_string(),
            ProviderChoice::Preset(preset) => format!("{} · {}", preset.label(), self.model),
            ProviderChoice::Compatible(_) => {
                format!("{} · {}", self.base_url, self.model)
            }
        }
    }
}

/// `text` with its first letter in upper case, to start a sentence.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embeddings_endpoint_gets_the_key_only_on_the_providers_own_server() {
        let mut settings = ProviderSettings::for_choice(ProviderChoice::Preset(Preset::OpenAi));
        assert!(
            settings.embeddings_endpoint("sk-1").is_none(),
            "empty: words only"
        );
        settings.embeddings_url = "https://api.openai.com/v1".to_string();
        assert!(
            settings.embeddings_endpoint("sk-1").unwrap().is_err(),
            "no model"
        );
        settings.embeddings_model = "text-embedding-3-small".to_string();
        let same = settings.embeddings_endpoint("sk-1").unwrap().unwrap();
        assert_eq!(same.provider.api_key.as_deref(), Some("sk-1"));
        assert_eq!(same.url(), "https://api.openai.com/v1/embeddings");
        settings.embeddings_url = "http://localhost:11434/v1".to_string();
        let other = settings.embeddings_endpoint("sk-1").unwrap().unwrap();
        assert_eq!(other.provider.api_key, None, "never sent to another server");
    }

    use super::*;

    #[test]
    fn the_default_is_the_offline_model() {
        let settings = ProviderSettings::default();
        assert!(settings.is_offline());
        assert_eq!(settings.provider_config(None), Ok(None));
        assert_eq!(settings.engine_settings().model, OFFLINE_MODEL_NAME);
        assert!(settings.engine_settings().stream);
    }

    #[test]
    fn every_choice_round_trips_through_its_key() {
        for choice in ProviderChoice::all() {
            assert_eq!(ProviderChoice::from_key(&choice.key()), Some(choice));
        }
        assert_eq!(ProviderChoice::all().len(), 8);
    }

    #[test]
    fn hosted_presets_need_a_key_local_ones_do_not() {
        let openai = ProviderSettings::for_choice(ProviderChoice::Preset(Preset::OpenAi));
        assert!(openai
            .provider_config(None)
            .unwrap_err()
            .contains("needs an API key"));
        let config = openai.provider_config(Some(" sk-1 ")).unwrap().unwrap();
        assert_eq!(config.api_key.as_deref(), Some("sk-1"));
        let ollama = ProviderSettings::for_choice(ProviderChoice::Preset(Preset::Ollama));
        let config = ollama.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn custom_urls_are_normalised_and_checked() {
        let mut custom = ProviderSettings::for_choice(ProviderChoice::Compatible(
            ProviderKind::OpenAiCompatible,
        ));
        custom.base_url = "http://127.0.0.1:9999/v1/".into();
        let config = custom.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://127.0.0.1:9999/v1/chat/completions"
        );
        custom.base_url = "not a url".into();
        assert!(custom.provider_config(None).is_err());
        let mut anthropic =
            ProviderSettings::for_choice(ProviderChoice::Compatible(ProviderKind::Anthropic));
        anthropic.base_url = "http://127.0.0.1:9999/v1".into();
        let config = anthropic.provider_config(Some("k")).unwrap().unwrap();
        assert_eq!(config.kind, ProviderKind::Anthropic);
    }

    #[test]
    fn prices_come_from_the_table_unless_the_person_sets_them() {
        let mut settings = ProviderSettings::for_choice(ProviderChoice::Compatible(
            ProviderKind::OpenAiCompatible,
        ));
        settings.model = "gpt-4".into();
        let info = settings.model_info().unwrap();
        assert_eq!(info.context_window, 8_192);
        assert_eq!(info.input_per_million, 30.0);
        settings.input_price = Some(1.0);
        assert_eq!(settings.model_info().unwrap().input_per_million, 1.0);
        assert_eq!(settings.model_info().unwrap().output_per_million, 60.0);
        settings.model = "my-own-model".into();
        let own = settings.model_info().unwrap();
        assert_eq!((own.context_window, own.input_per_million), (0, 1.0));
        settings.input_price = None;
        assert_eq!(settings.model_info(), None);
        assert_eq!(
            ProviderSettings::default()
                .model_info()
                .unwrap()
                .input_per_million,
            0.0
        );
    }

    #[test]
    fn settings_never_serialise_a_key() {
        let settings = ProviderSettings::for_choice(ProviderChoice::Preset(Preset::Anthropic));
        let json = serde_json::to_string(&settings).unwrap();
        assert!(!json.contains("key\":\""), "{json}");
        let back: ProviderSettings = serde_json::from_str(&json).unwrap();
        assert_eq!(back, settings);
        // Settings written by an older build (missing fields) still load.
        let partial: ProviderSettings = serde_json::from_str(r#"{"model": "m"}"#).unwrap();
        assert_eq!(partial.model, "m");
        assert!(partial.is_offline());
    }

    #[test]
    fn the_choice_is_stored_by_its_provider_name() {
        for choice in ProviderChoice::all() {
            let settings = ProviderSettings::for_choice(choice);
            let json = serde_json::to_value(&settings).unwrap();
            assert_eq!(json["choice"], choice.name().name(), "{choice:?}");
            let back: ProviderSettings = serde_json::from_value(json).unwrap();
            assert_eq!(back, settings);
        }
    }

    #[test]
    fn settings_stored_by_earlier_versions_keep_loading() {
        // What localStorage holds from builds before the shared provider names: presets as an
        // object of serde's variant names, the custom endpoints under the app's own names.
        let stored = |choice: &str| {
            format!(
                r#"{{"choice":{choice},"base_url":"http://127.0.0.1:9999/v1","model":"m",
                    "stream":false,"remember_key":true,"input_price":null,"output_price":2.5}}"#
            )
        };
        let cases = [
            (r#""offline""#, ProviderChoice::Offline),
            (
                r#"{"preset":"open_ai"}"#,
                ProviderChoice::Preset(Preset::OpenAi),
            ),
            (
                r#"{"preset":"anthropic"}"#,
                ProviderChoice::Preset(Preset::Anthropic),
            ),
            (
                r#"{"preset":"open_router"}"#,
                ProviderChoice::Preset(Preset::OpenRouter),
            ),
            (
                r#"{"preset":"ollama"}"#,
                ProviderChoice::Preset(Preset::Ollama),
            ),
            (
                r#"{"preset":"lm_studio"}"#,
                ProviderChoice::Preset(Preset::LmStudio),
            ),
            (
                r#""custom_openai""#,
                ProviderChoice::Compatible(ProviderKind::OpenAiCompatible),
            ),
            (
                r#""custom_anthropic""#,
                ProviderChoice::Compatible(ProviderKind::Anthropic),
            ),
        ];
        for (choice, expected) in cases {
            let settings: ProviderSettings = serde_json::from_str(&stored(choice))
                .unwrap_or_else(|e| panic!("{choice} did not load: {e}"));
            assert_eq!(settings.choice, expected, "{choice}");
            assert_eq!(settings.base_url, "http://127.0.0.1:9999/v1");
            assert!(settings.remember_key && !settings.stream);
            assert_eq!(settings.output_price, Some(2.5));
        }
        // The API keys those versions remembered stay under the same localStorage names.
        assert_eq!(
            ProviderChoice::Compatible(ProviderKind::OpenAiCompatible).key(),
            "custom_openai"
        );
        assert_eq!(
            ProviderChoice::Compatible(ProviderKind::Anthropic).key(),
            "custom_anthropic"
        );
        assert_eq!(ProviderChoice::Preset(Preset::LmStudio).key(), "lmstudio");
        let unknown = serde_json::from_str::<ProviderSettings>(&stored(r#""gemini""#));
        assert!(unknown.is_err());
    }

    #[test]
    fn mistakes_are_sentences_for_the_person() {
        let mut custom =
            ProviderSettings::for_choice(ProviderChoice::Compatible(ProviderKind::Anthropic));
        custom.base_url = " ".into();
        assert_eq!(
            custom.provider_config(None).unwrap_err(),
            "The provider 'anthropic_compatible' needs a base URL, such as \
             http://localhost:8000/v1."
        );
        custom.base_url = "localhost:8000/v1".into();
        assert_eq!(
            custom.provider_config(None).unwrap_err(),
            "The base URL 'localhost:8000/v1' must start with http:// or https:// followed by a \
             host, such as http://localhost:8000/v1."
        );
        let openai = ProviderSettings::for_choice(ProviderChoice::Preset(Preset::OpenAi));
        assert_eq!(
            openai.provider_config(Some("  ")).unwrap_err(),
            "OpenAI needs an API key: enter it in Settings (it stays in this tab unless you ask \
             to remember it)."
        );
    }
}
