//! Which model the app talks to: the offline demo model (the default), a preset, or a custom
//! endpoint, with the model name and whether to stream.
//!
//! These settings are the person's, not the session's: they are kept in localStorage for the
//! browser, never in a session document. The API key is not part of them at all; it lives in
//! memory for the tab and is stored only when the person asks (see `state::KeyStore`).

use crate::models::{known_model, ModelInfo};
use ccm_browser::provider::{
    Preset, ProviderChoice, ProviderChoiceError, ProviderConfig, ProviderKind, ProviderName,
};
use ccm_browser::turn::{EngineSettings, RetryPolicy, OFFLINE_MODEL_NAME};
use serde::{Deserialize, Deserializer, Serialize};

/// What the settings screen shows and starts from for each of ccm-provider's [`ProviderName`]s
/// (the names the command line and the npm package accept too). The app has no provider type
/// of its own: a new preset or protocol in ccm-provider is listed without a change here.
pub trait ProviderInSettings {
    /// The value of the `<option>` and the suffix of the localStorage entry that remembers
    /// the provider's API key; ccm-provider's [`ProviderName::from_name`] reads it back.
    fn key(self) -> String;
    /// The name the settings list shows, longer than ccm-provider's
    /// [`label`](ProviderName::label) (the offline model says it needs no key).
    fn settings_label(self) -> String;
    /// The base URL suggested when the provider is chosen.
    fn default_base_url(self) -> &'static str;
    /// What the base URL field shows while it is empty.
    fn base_url_placeholder(self) -> &'static str;
    /// A model name to start from; the person can type any other.
    fn default_model(self) -> &'static str;
    /// Whether the provider cannot be used without an API key (ccm-provider decides).
    fn needs_key(self) -> bool;
}

impl ProviderInSettings for ProviderName {
    /// The provider's [`name`](ProviderName::name), except that the `*_compatible` names keep
    /// `custom_` and the protocol's name (`custom_openai`, …), under which earlier versions
    /// remembered their keys (ccm-provider accepts them as aliases).
    fn key(self) -> String {
        match self {
            ProviderName::Compatible(kind) => format!("custom_{}", kind.protocol().name),
            other => other.name().to_string(),
        }
    }

    fn settings_label(self) -> String {
        match self {
            ProviderName::Offline => "Offline demo model (no key, no network)".to_string(),
            ProviderName::Preset(preset) => preset.label().to_string(),
            ProviderName::Compatible(kind) => {
                format!("Custom {}-compatible URL", kind.protocol().label)
            }
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            ProviderName::Offline => "",
            ProviderName::Preset(preset) => preset.base_url(),
            // A custom server's address is the person's to type: a real-looking value here
            // would be taken for a working one (the field shows an example as its placeholder).
            ProviderName::Compatible(_) => "",
        }
    }

    fn base_url_placeholder(self) -> &'static str {
        match self {
            ProviderName::Compatible(_) => "the server's base URL, e.g. http://localhost:8000/v1",
            _ => "the provider's base URL",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            ProviderName::Offline => OFFLINE_MODEL_NAME,
            ProviderName::Preset(Preset::OpenAi) => "gpt-4o-mini",
            ProviderName::Preset(Preset::Anthropic) => "claude-3-5-haiku-latest",
            ProviderName::Preset(Preset::OpenRouter) => "openai/gpt-4o-mini",
            ProviderName::Preset(Preset::Ollama) => "llama3.2",
            ProviderName::Preset(Preset::LmStudio) => "local-model",
            // The server's own names are unknown until its list is loaded or one is typed.
            ProviderName::Compatible(_) => "",
        }
    }

    fn needs_key(self) -> bool {
        let choice = ProviderChoice::new(self)
            .with_base_url(Some(self.default_base_url().to_string()))
            .with_api_key(None);
        matches!(
            ProviderConfig::from_choice(&choice),
            Err(ProviderChoiceError::MissingApiKey { .. })
        )
    }
}

/// Reads a stored provider in any spelling ccm-provider accepts, and the forms earlier versions
/// stored: `{"preset": "open_ai"}` for a preset, and `"custom_"` with a protocol's name
/// (`"custom_openai"`). Settings write the canonical name (`"openai"`, `"openai_compatible"`).
fn stored_provider<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ProviderName, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Name(ProviderName),
        OlderPreset { preset: Preset },
    }
    Ok(match Stored::deserialize(deserializer)? {
        Stored::Name(name) => name,
        Stored::OlderPreset { preset } => ProviderName::Preset(preset),
    })
}

/// The person's provider settings (without the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// Where requests go.
    #[serde(deserialize_with = "stored_provider")]
    pub choice: ProviderName,
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
        ProviderSettings::for_choice(ProviderName::Offline)
    }
}

impl ProviderSettings {
    /// The settings a choice starts with.
    pub fn for_choice(choice: ProviderName) -> ProviderSettings {
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
        let choice = ProviderChoice {
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
        self.choice == ProviderName::Offline
    }

    /// The provider configuration for an HTTP transport, or `None` for the offline model, as
    /// ccm-provider's `ProviderConfig::from_choice` makes it from the choice, the base URL
    /// (blank: a preset's own) and the key.
    ///
    /// # Errors
    /// A sentence for the person when the URL is unusable or a required key is missing.
    pub fn provider_config(&self, key: Option<&str>) -> Result<Option<ProviderConfig>, String> {
        let choice = ProviderChoice::new(self.choice)
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
            ProviderName::Offline => "Offline demo model".to_string(),
            ProviderName::Preset(preset) => format!("{} · {}", preset.label(), self.model),
            ProviderName::Compatible(_) => {
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
        let mut settings = ProviderSettings::for_choice(ProviderName::Preset(Preset::OpenAi));
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
        for choice in ProviderName::all() {
            assert_eq!(ProviderName::from_name(&choice.key()), Some(choice));
        }
        assert_eq!(ProviderName::all().len(), 8);
    }

    #[test]
    fn hosted_presets_need_a_key_local_ones_do_not() {
        let openai = ProviderSettings::for_choice(ProviderName::Preset(Preset::OpenAi));
        assert!(openai
            .provider_config(None)
            .unwrap_err()
            .contains("needs an API key"));
        let config = openai.provider_config(Some(" sk-1 ")).unwrap().unwrap();
        assert_eq!(config.api_key.as_deref(), Some("sk-1"));
        let ollama = ProviderSettings::for_choice(ProviderName::Preset(Preset::Ollama));
        let config = ollama.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn custom_urls_are_normalised_and_checked() {
        let mut custom =
            ProviderSettings::for_choice(ProviderName::Compatible(ProviderKind::OpenAiCompatible));
        custom.base_url = "http://127.0.0.1:9999/v1/".into();
        let config = custom.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://127.0.0.1:9999/v1/chat/completions"
        );
        custom.base_url = "not a url".into();
        assert!(custom.provider_config(None).is_err());
        let mut anthropic =
            ProviderSettings::for_choice(ProviderName::Compatible(ProviderKind::Anthropic));
        anthropic.base_url = "http://127.0.0.1:9999/v1".into();
        let config = anthropic.provider_config(Some("k")).unwrap().unwrap();
        assert_eq!(config.kind, ProviderKind::Anthropic);
    }

    #[test]
    fn prices_come_from_the_table_unless_the_person_sets_them() {
        let mut settings =
            ProviderSettings::for_choice(ProviderName::Compatible(ProviderKind::OpenAiCompatible));
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
        let settings = ProviderSettings::for_choice(ProviderName::Preset(Preset::Anthropic));
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
        for choice in ProviderName::all() {
            let settings = ProviderSettings::for_choice(choice);
            let json = serde_json::to_value(&settings).unwrap();
            assert_eq!(json["choice"], choice.name(), "{choice:?}");
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
            (r#""offline""#, ProviderName::Offline),
            (
                r#"{"preset":"open_ai"}"#,
                ProviderName::Preset(Preset::OpenAi),
            ),
            (
                r#"{"preset":"anthropic"}"#,
                ProviderName::Preset(Preset::Anthropic),
            ),
            (
                r#"{"preset":"open_router"}"#,
                ProviderName::Preset(Preset::OpenRouter),
            ),
            (
                r#"{"preset":"ollama"}"#,
                ProviderName::Preset(Preset::Ollama),
            ),
            (
                r#"{"preset":"lm_studio"}"#,
                ProviderName::Preset(Preset::LmStudio),
            ),
            (
                r#""custom_openai""#,
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ),
            (
                r#""custom_anthropic""#,
                ProviderName::Compatible(ProviderKind::Anthropic),
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
            ProviderName::Compatible(ProviderKind::OpenAiCompatible).key(),
            "custom_openai"
        );
        assert_eq!(
            ProviderName::Compatible(ProviderKind::Anthropic).key(),
            "custom_anthropic"
        );
        assert_eq!(ProviderName::Preset(Preset::LmStudio).key(), "lmstudio");
        let unknown = serde_json::from_str::<ProviderSettings>(&stored(r#""gemini""#));
        assert!(unknown.is_err());
    }

    #[test]
    fn mistakes_are_sentences_for_the_person() {
        let mut custom =
            ProviderSettings::for_choice(ProviderName::Compatible(ProviderKind::Anthropic));
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
        let openai = ProviderSettings::for_choice(ProviderName::Preset(Preset::OpenAi));
        assert_eq!(
            openai.provider_config(Some("  ")).unwrap_err(),
            "OpenAI needs an API key: enter it in Settings (it stays in this tab unless you ask \
             to remember it)."
        );
    }
}
