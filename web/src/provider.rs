//! Which model the app talks to: the offline demo model (the default), a preset, or a custom
//! endpoint, with the model name and whether to stream.
//!
//! These settings are the person's, not the session's: they are kept in localStorage for the
//! browser, never in a session document. The API key is not part of them at all; it lives in
//! memory for the tab and is stored only when the person asks (see `state::KeyStore`).

use crate::models::{known_model, ModelInfo};
use ccm_engine::offline::OFFLINE_MODEL_NAME;
use ccm_engine::EngineSettings;
use ccm_provider::{normalize_base_url, Preset, ProviderConfig, ProviderKind, RetryPolicy};
use serde::{Deserialize, Serialize};

/// Where requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderChoice {
    /// The deterministic offline demo model: no network, no key.
    Offline,
    /// A well-known provider.
    Preset(Preset),
    /// Any OpenAI-compatible endpoint at a base URL.
    CustomOpenAi,
    /// Any Anthropic-compatible endpoint at a base URL.
    CustomAnthropic,
}

impl ProviderChoice {
    /// Every choice, in the order the settings list them.
    pub fn all() -> Vec<ProviderChoice> {
        let mut all = vec![ProviderChoice::Offline];
        all.extend(Preset::ALL.into_iter().map(ProviderChoice::Preset));
        all.push(ProviderChoice::CustomOpenAi);
        all.push(ProviderChoice::CustomAnthropic);
        all
    }

    /// The value of the `<option>` (stable, used by tests).
    pub fn key(self) -> &'static str {
        match self {
            ProviderChoice::Offline => "offline",
            ProviderChoice::Preset(preset) => preset.name(),
            ProviderChoice::CustomOpenAi => "custom_openai",
            ProviderChoice::CustomAnthropic => "custom_anthropic",
        }
    }

    /// Parses [`key`](Self::key).
    pub fn from_key(key: &str) -> Option<ProviderChoice> {
        ProviderChoice::all().into_iter().find(|c| c.key() == key)
    }

    /// The name shown to people.
    pub fn label(self) -> &'static str {
        match self {
            ProviderChoice::Offline => "Offline demo model (no key, no network)",
            ProviderChoice::Preset(preset) => preset.label(),
            ProviderChoice::CustomOpenAi => "Custom OpenAI-compatible URL",
            ProviderChoice::CustomAnthropic => "Custom Anthropic-compatible URL",
        }
    }

    /// The base URL suggested when the choice is made.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderChoice::Offline => "",
            ProviderChoice::Preset(preset) => preset.base_url(),
            ProviderChoice::CustomOpenAi => "http://127.0.0.1:8000/v1",
            ProviderChoice::CustomAnthropic => "http://127.0.0.1:8000/v1",
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
            ProviderChoice::CustomOpenAi | ProviderChoice::CustomAnthropic => "model",
        }
    }

    /// Whether requests of this choice carry an API key when one is given.
    pub fn takes_key(self) -> bool {
        !matches!(self, ProviderChoice::Offline)
    }

    /// Whether the hosted service refuses requests without a key.
    pub fn needs_key(self) -> bool {
        matches!(self, ProviderChoice::Preset(p) if p.needs_api_key())
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
        }
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

    /// The provider configuration for an HTTP transport, or `None` for the offline model.
    ///
    /// # Errors
    /// A sentence for the person when the URL is unusable or a required key is missing.
    pub fn provider_config(&self, key: Option<&str>) -> Result<Option<ProviderConfig>, String> {
        let key = key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        let config = match self.choice {
            ProviderChoice::Offline => return Ok(None),
            ProviderChoice::Preset(preset) => {
                if preset.needs_api_key() && key.is_none() {
                    return Err(format!(
                        "{} needs an API key: enter it in Settings (it stays in this tab unless you ask to remember it).",
                        preset.label()
                    ));
                }
                let mut config = ProviderConfig::from_preset(preset, key);
                let url = self.base_url.trim();
                if !url.is_empty() {
                    config.base_url = normalize_base_url(config.kind, url);
                }
                config
            }
            ProviderChoice::CustomOpenAi => {
                ProviderConfig::custom(ProviderKind::OpenAiCompatible, &self.base_url, key)
            }
            ProviderChoice::CustomAnthropic => {
                ProviderConfig::custom(ProviderKind::Anthropic, &self.base_url, key)
            }
        };
        config.validate().map_err(|e| e.to_string())?;
        Ok(Some(config))
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
            ProviderChoice::CustomOpenAi | ProviderChoice::CustomAnthropic => {
                format!("{} · {}", self.base_url, self.model)
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
            assert_eq!(ProviderChoice::from_key(choice.key()), Some(choice));
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
        let mut custom = ProviderSettings::for_choice(ProviderChoice::CustomOpenAi);
        custom.base_url = "http://127.0.0.1:9999/v1/".into();
        let config = custom.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://127.0.0.1:9999/v1/chat/completions"
        );
        custom.base_url = "not a url".into();
        assert!(custom.provider_config(None).is_err());
        let mut anthropic = ProviderSettings::for_choice(ProviderChoice::CustomAnthropic);
        anthropic.base_url = "http://127.0.0.1:9999/v1".into();
        let config = anthropic.provider_config(Some("k")).unwrap().unwrap();
        assert_eq!(config.kind, ProviderKind::Anthropic);
    }

    #[test]
    fn prices_come_from_the_table_unless_the_person_sets_them() {
        let mut settings = ProviderSettings::for_choice(ProviderChoice::CustomOpenAi);
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
}
