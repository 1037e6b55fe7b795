//! How this browser talks to the model: the provider settings, the API key, and the current
//! session's temperature. They are kept in localStorage (the key only when the person asks),
//! never in the session's stored format.

use super::notices::{NoticeKind, Notices};
use super::{read_local, sized_for_window, write_local};
use crate::provider::{ProviderInSettings, ProviderSettings};
use ccm_core::Config;
use leptos::prelude::*;

const PROVIDER_KEY: &str = "ccm.app.provider";
const API_KEY_PREFIX: &str = "ccm.app.apiKey.";
const TEMPERATURE_PREFIX: &str = "ccm.app.temperature.";

/// The settings part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct Settings {
    provider: RwSignal<ProviderSettings>,
    api_key: RwSignal<String>,
    temperature: RwSignal<Option<f64>>,
}

impl Settings {
    /// The provider settings and key this browser remembers.
    pub fn new() -> Settings {
        let provider: ProviderSettings = read_local(PROVIDER_KEY)
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
        let api_key = if provider.remember_key {
            read_local(&format!("{API_KEY_PREFIX}{}", provider.choice.key())).unwrap_or_default()
        } else {
            String::new()
        };
        Settings {
            provider: RwSignal::new(provider),
            api_key: RwSignal::new(api_key),
            temperature: RwSignal::new(None),
        }
    }

    /// Provider settings (without the key).
    pub fn provider(&self) -> ReadSignal<ProviderSettings> {
        self.provider.read_only()
    }

    /// The API key, in memory for this tab.
    pub fn api_key(&self) -> ReadSignal<String> {
        self.api_key.read_only()
    }

    /// The sampling temperature of the current session (`None`: the provider's default).
    pub fn temperature(&self) -> ReadSignal<Option<f64>> {
        self.temperature.read_only()
    }

    /// Saves the provider settings (never the key, unless asked) in localStorage; a failure
    /// to store them is a notice, and they apply to this tab all the same.
    pub fn save_provider(&self, settings: ProviderSettings, key: String, notices: Notices) {
        let choice_key = format!("{API_KEY_PREFIX}{}", settings.choice.key());
        let json = serde_json::to_string(&settings).unwrap_or_default();
        let stored = write_local(PROVIDER_KEY, Some(&json)).and_then(|_| {
            if settings.remember_key && !key.trim().is_empty() {
                write_local(&choice_key, Some(key.trim()))
            } else {
                write_local(&choice_key, None)
            }
        });
        if let Err(e) = stored {
            notices.notify(
                NoticeKind::Error,
                format!("Settings apply to this tab only: they could not be stored ({e})."),
            );
        }
        self.provider.set(settings);
        self.api_key.set(key);
    }

    /// The engine settings of the next turn: the provider's, with this session's temperature.
    pub fn engine_settings(&self) -> ccm_browser::turn::EngineSettings {
        let mut settings = self.provider.with_untracked(|p| p.engine_settings());
        settings.temperature = self.temperature.get_untracked();
        settings
    }

    /// Sets the temperature of the session stored as `session_id` (`None`: the provider's
    /// default) and keeps it in this browser.
    pub fn set_temperature(
        &self,
        temperature: Option<f64>,
        session_id: Option<String>,
        notices: Notices,
    ) {
        self.temperature.set(temperature);
        if let Some(id) = session_id {
            let key = format!("{TEMPERATURE_PREFIX}{id}");
            let value = temperature.map(|t| t.to_string());
            if let Err(e) = write_local(&key, value.as_deref()) {
                notices.notify(
                    NoticeKind::Error,
                    format!(
                        "The temperature applies to this tab only: it could not be stored ({e})."
                    ),
                );
            }
        }
    }

    /// Takes the temperature this browser keeps for the session stored as `session_id`.
    pub fn load_temperature(&self, session_id: Option<&str>) {
        self.temperature.set(
            session_id
                .and_then(|id| read_local(&format!("{TEMPERATURE_PREFIX}{id}")))
                .and_then(|t| t.parse().ok()),
        );
    }

    /// The configuration of a new session: the defaults, with the chosen model's context
    /// window when the app's table knows it, so an 8K model's first session compacts for 8K
    /// before anyone opens Settings.
    pub fn new_session_config(&self) -> Config {
        let window = self
            .provider
            .with_untracked(|p| p.model_info())
            .map(|info| info.context_window)
            .filter(|window| *window > 0);
        match window {
            Some(window) => sized_for_window(Config::default(), window),
            None => Config::default(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new()
    }
}
