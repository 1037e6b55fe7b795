//! The one vocabulary of provider names that the command line, the npm package and the browser
//! app share, and the one mapping from a person's choice to a [`ProviderConfig`].
//!
//! Every front end used to turn its own spelling of "which provider" into a configuration, each
//! with its own list of names, its own base-URL handling and its own error messages. They now
//! all parse a name with [`ProviderName::from_name`] and build the configuration with
//! [`ProviderConfig::from_choice`], so a name accepted in one place is accepted everywhere and a
//! mistake is explained in the same words.

use super::config::{is_requestable_base_url, normalize_base_url, Preset, ProviderConfig};
use super::ProviderKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The offline demo model's name.
const OFFLINE_NAME: &str = "offline";

/// A provider as a person names it: the offline demo model, a well-known preset, or any server
/// that speaks one of the protocols of [`ProviderKind::ALL`] at a base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProviderName {
    /// The deterministic offline demo model: no network, no key (`offline`).
    #[default]
    Offline,
    /// A well-known provider with its own base URL (`openai`, `anthropic`, `openrouter`,
    /// `ollama`, `lmstudio`).
    Preset(Preset),
    /// Any server speaking a protocol at a base URL (`openai_compatible` for the OpenAI Chat
    /// Completions API, and so on for each protocol of [`ProviderKind::ALL`]): the protocol
    /// table's `compatible_name`.
    Compatible(ProviderKind),
}

impl ProviderName {
    /// Every canonical [`name`](Self::name), in [`all`](Self::all)'s order, as a constant: the
    /// npm package's TypeScript `Provider` type is written from it when the package is
    /// compiled, so a preset or protocol added here is typed there without an edit.
    pub const NAMES: [&'static str; 1 + Preset::ALL.len() + ProviderKind::ALL.len()] = {
        let mut names = [""; 1 + Preset::ALL.len() + ProviderKind::ALL.len()];
        names[0] = OFFLINE_NAME;
        let mut at = 1;
        let mut preset = 0;
        while preset < Preset::ALL.len() {
            names[at] = Preset::ALL[preset].name();
            at += 1;
            preset += 1;
        }
        let mut kind = 0;
        while kind < ProviderKind::ALL.len() {
            names[at] = ProviderKind::ALL[kind].protocol().compatible_name;
            at += 1;
            kind += 1;
        }
        names
    };

    /// Every name, in the order lists and error messages give them: the offline model, the
    /// presets in [`Preset::ALL`]'s order, then one that needs a base URL for each protocol of
    /// [`ProviderKind::ALL`].
    pub fn all() -> Vec<ProviderName> {
        std::iter::once(ProviderName::Offline)
            .chain(Preset::ALL.map(ProviderName::Preset))
            .chain(ProviderKind::ALL.map(ProviderName::Compatible))
            .collect()
    }

    /// The canonical name: `offline`, a preset's [`name`](Preset::name), or a protocol's
    /// `compatible_name` (`openai_compatible`, …). This is the spelling every front end writes
    /// and lists.
    pub fn name(self) -> &'static str {
        match self {
            ProviderName::Offline => OFFLINE_NAME,
            ProviderName::Preset(preset) => preset.name(),
            ProviderName::Compatible(kind) => kind.protocol().compatible_name,
        }
    }

    /// The name to show to people (`Offline demo model`, `OpenAI`, `OpenAI-compatible server`).
    pub fn label(self) -> &'static str {
        match self {
            ProviderName::Offline => "Offline demo model",
            ProviderName::Preset(preset) => preset.label(),
            ProviderName::Compatible(kind) => kind.protocol().compatible_label,
        }
    }

    /// Looks a name up. Case, surrounding blanks and the separators `-`, `_` and space do not
    /// matter (`OpenAI`, `lm-studio`, `openai-compatible` and `Anthropic Compatible` are all
    /// accepted), and three spellings of earlier versions are kept as aliases:
    ///
    /// * `custom`: the command line's `--provider custom`, an OpenAI-compatible server unless
    ///   its `--protocol anthropic` says otherwise;
    /// * `custom_` and any protocol's name (`custom_openai`, …): the browser
    ///   app's names, still found in the settings it stored in localStorage.
    pub fn from_name(name: &str) -> Option<ProviderName> {
        let folded: String = name
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        let fold = |name: &str| name.replace('_', "");
        match folded.as_str() {
            "offline" => Some(ProviderName::Offline),
            "custom" => Some(ProviderName::Compatible(ProviderKind::OpenAiCompatible)),
            _ => ProviderKind::ALL
                .into_iter()
                .find(|kind| {
                    let protocol = kind.protocol();
                    folded == fold(protocol.compatible_name)
                        || folded == format!("custom{}", fold(protocol.name))
                })
                .map(ProviderName::Compatible)
                .or_else(|| Preset::from_name(&folded).map(ProviderName::Preset)),
        }
    }

    /// The protocol spoken, or `None` for the offline model, which is not reached over HTTP.
    pub fn kind(self) -> Option<ProviderKind> {
        match self {
            ProviderName::Offline => None,
            ProviderName::Preset(preset) => Some(preset.kind()),
            ProviderName::Compatible(kind) => Some(kind),
        }
    }

    /// Whether a base URL must be given: only the presets know where their servers are.
    pub fn needs_base_url(self) -> bool {
        matches!(self, ProviderName::Compatible(_))
    }

    /// Every accepted name as error messages list them, the ones that need a base URL marked:
    /// `offline, openai, …, openai_compatible (with a base URL), …`.
    pub fn accepted_names() -> String {
        ProviderName::all()
            .iter()
            .map(|name| {
                if name.needs_base_url() {
                    format!("{} (with a base URL)", name.name())
                } else {
                    name.name().to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProviderName {
    type Err = ProviderChoiceError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ProviderName::from_name(name).ok_or_else(|| ProviderChoiceError::UnknownProvider {
            given: name.trim().to_string(),
        })
    }
}

/// Written as the canonical [`name`](ProviderName::name).
impl Serialize for ProviderName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read from any spelling [`from_name`](ProviderName::from_name) accepts.
impl<'de> Deserialize<'de> for ProviderName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A person's choice of provider, as a settings screen, command-line flags or `runTurn`'s
/// options give it; [`ProviderConfig::from_choice`] checks it and turns it into a
/// configuration.
///
/// The [`Debug`] output hides the API key.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ProviderChoice {
    /// Which provider.
    pub provider: ProviderName,
    /// The base URL: required for the `*_compatible` names, and for a preset a replacement of
    /// its own (a proxy, or a server on another port). Blank counts as none.
    pub base_url: Option<String>,
    /// The API key. Blank counts as none.
    pub api_key: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
}

impl fmt::Debug for ProviderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ProviderChoice")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("header_names", &headers)
            .finish()
    }
}

impl ProviderChoice {
    /// The choice of `provider` with no base URL, key or headers.
    pub fn new(provider: ProviderName) -> Self {
        ProviderChoice {
            provider,
            ..ProviderChoice::default()
        }
    }

    /// Sets [`base_url`](Self::base_url).
    pub fn with_base_url(mut self, base_url: Option<String>) -> Self {
        self.base_url = base_url;
        self
    }

    /// Sets [`api_key`](Self::api_key).
    pub fn with_api_key(mut self, api_key: Option<String>) -> Self {
        self.api_key = api_key;
        self
    }

    /// Adds a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Why a [`ProviderChoice`] cannot be used. The messages are written for the person who made the
/// choice; a front end may add how to fix it in its own terms (a flag, a field of a form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoiceError {
    /// The name is none of [`ProviderName::all`] nor an alias.
    UnknownProvider {
        /// The name as given, without surrounding blanks.
        given: String,
    },
    /// A `*_compatible` provider without a base URL.
    MissingBaseUrl {
        /// The provider that needs one.
        provider: ProviderName,
    },
    /// A base URL that cannot be requested.
    InvalidBaseUrl {
        /// The URL as given, without surrounding blanks.
        url: String,
    },
    /// A hosted preset, at its own URL, without an API key.
    MissingApiKey {
        /// The preset that needs one.
        provider: Preset,
    },
}

impl fmt::Display for ProviderChoiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accepted = ProviderName::accepted_names();
        match self {
            ProviderChoiceError::UnknownProvider { given } if given.is_empty() => {
                write!(f, "no provider is named; expected one of {accepted}")
            }
            ProviderChoiceError::UnknownProvider { given } => {
                write!(f, "unknown provider '{given}'; expected one of {accepted}")
            }
            ProviderChoiceError::MissingBaseUrl { provider } => write!(
                f,
                "the provider '{provider}' needs a base URL, such as http://localhost:8000/v1"
            ),
            ProviderChoiceError::InvalidBaseUrl { url } => write!(
                f,
                "the base URL '{url}' must start with http:// or https:// followed by a host, \
                 such as http://localhost:8000/v1"
            ),
            ProviderChoiceError::MissingApiKey { provider } => {
                write!(f, "{} needs an API key", provider.label())
            }
        }
    }
}

impl std::error::Error for ProviderChoiceError {}

impl ProviderConfig {
    /// The configuration a person's choice selects, or `None` for the offline demo model (which
    /// talks to no server, so any base URL, key or headers are ignored).
    ///
    /// A preset starts from its own base URL; a given one replaces it. The base URL is
    /// normalised with [`normalize_base_url`] and checked here, so every front end accepts and
    /// refuses the same URLs. A hosted preset (OpenAI, Anthropic, OpenRouter) needs a key at its
    /// own URL, given or not; at another one (a proxy that adds the credentials) it may go
    /// without.
    ///
    /// ```
    /// # use ccm_provider::*;
    /// let name: ProviderName = "openai-compatible".parse().unwrap();
    /// let choice = ProviderChoice::new(name).with_base_url(Some("http://gpu:8000/v1/".into()));
    /// let config = ProviderConfig::from_choice(&choice).unwrap().unwrap();
    /// assert_eq!(config.endpoint_url(), "http://gpu:8000/v1/chat/completions");
    /// ```
    ///
    /// # Errors
    ///
    /// [`ProviderChoiceError::MissingBaseUrl`] for a `*_compatible` provider without a base URL,
    /// [`ProviderChoiceError::InvalidBaseUrl`] for one that does not start with `http://` or
    /// `https://` and a host, and [`ProviderChoiceError::MissingApiKey`] for a hosted preset at
    /// its own URL without a key.
    pub fn from_choice(
        choice: &ProviderChoice,
    ) -> Result<Option<ProviderConfig>, ProviderChoiceError> {
        let base_url = choice
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty());
        let api_key = choice
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .map(str::to_string);
        let mut config = match choice.provider {
            ProviderName::Offline => return Ok(None),
            ProviderName::Preset(preset) => {
                let mut config = ProviderConfig::from_preset(preset, api_key);
                if let Some(url) = base_url {
                    config.base_url = normalize_base_url(config.kind, url);
                }
                // A settings form shows a preset's own URL filled in, so the URL given may be
                // the preset's own: the key is needed unless it is another one.
                let own_url = config.base_url.eq_ignore_ascii_case(preset.base_url());
                if preset.needs_api_key() && config.api_key.is_none() && own_url {
                    return Err(ProviderChoiceError::MissingApiKey { provider: preset });
                }
                config
            }
            ProviderName::Compatible(kind) => {
                let url = base_url.ok_or(ProviderChoiceError::MissingBaseUrl {
                    provider: choice.provider,
                })?;
                ProviderConfig::custom(kind, url, api_key)
            }
        };
        if !is_requestable_base_url(&config.base_url) {
            return Err(ProviderChoiceError::InvalidBaseUrl {
                url: base_url.unwrap_or_default().to_string(),
            });
        }
        for (name, value) in &choice.headers {
            config = config.with_header(name.clone(), value.clone());
        }
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant list the TypeScript type is written from is the list every front end
    /// parses and shows, in the same order.
    #[test]
    fn the_constant_names_are_every_name_in_order() {
        let names: Vec<&str> = ProviderName::all().iter().map(|name| name.name()).collect();
        assert_eq!(ProviderName::NAMES.to_vec(), names);
        for name in ProviderName::NAMES {
            assert_eq!(
                ProviderName::from_name(name).map(ProviderName::name),
                Some(name)
            );
        }
    }

    fn config(choice: ProviderChoice) -> ProviderConfig {
        match ProviderConfig::from_choice(&choice) {
            Ok(Some(config)) => config,
            other => panic!("{choice:?} gave {other:?}"),
        }
    }

    fn refusal(choice: ProviderChoice) -> String {
        match ProviderConfig::from_choice(&choice) {
            Err(error) => error.to_string(),
            Ok(config) => panic!("{choice:?} was accepted as {config:?}"),
        }
    }

    #[test]
    fn every_name_round_trips_and_all_lists_each_once() {
        for name in ProviderName::all() {
            assert_eq!(ProviderName::from_name(name.name()), Some(name));
            assert_eq!(name.name().parse::<ProviderName>(), Ok(name));
            assert_eq!(name.to_string(), name.name());
        }
        let presets: Vec<ProviderName> = Preset::ALL.map(ProviderName::Preset).to_vec();
        assert_eq!(
            ProviderName::all()[1..6],
            presets[..],
            "the presets, in order"
        );
        let mut names: Vec<&str> = ProviderName::all().iter().map(|n| n.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ProviderName::all().len());
    }

    #[test]
    fn aliases_of_earlier_versions_and_other_spellings_are_accepted() {
        let cases = [
            ("Offline", ProviderName::Offline),
            (" OpenAI ", ProviderName::Preset(Preset::OpenAi)),
            ("open-ai", ProviderName::Preset(Preset::OpenAi)),
            ("LM Studio", ProviderName::Preset(Preset::LmStudio)),
            ("lm_studio", ProviderName::Preset(Preset::LmStudio)),
            ("open_router", ProviderName::Preset(Preset::OpenRouter)),
            (
                "openai-compatible",
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ),
            (
                "OpenAI Compatible",
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ),
            (
                "anthropic-compatible",
                ProviderName::Compatible(ProviderKind::Anthropic),
            ),
            // The command line's `--provider custom`.
            (
                "custom",
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ),
            // The browser app's names, in settings it stored before.
            (
                "custom_openai",
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ),
            (
                "custom_anthropic",
                ProviderName::Compatible(ProviderKind::Anthropic),
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(ProviderName::from_name(given), Some(expected), "{given:?}");
        }
        assert_eq!(
            serde_json::from_str::<ProviderName>("\"custom_openai\"").unwrap(),
            ProviderName::Compatible(ProviderKind::OpenAiCompatible)
        );
        assert_eq!(
            serde_json::to_string(&ProviderName::Preset(Preset::LmStudio)).unwrap(),
            "\"lmstudio\""
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_accepted_name() {
        let listed = "expected one of offline, openai, anthropic, openrouter, ollama, lmstudio, \
                      openai_compatible (with a base URL), anthropic_compatible (with a base URL)";
        let error = "gemini".parse::<ProviderName>().unwrap_err();
        assert_eq!(
            error,
            ProviderChoiceError::UnknownProvider {
                given: "gemini".into()
            }
        );
        assert_eq!(
            error.to_string(),
            format!("unknown provider 'gemini'; {listed}")
        );
        assert_eq!(
            " ".parse::<ProviderName>().unwrap_err().to_string(),
            format!("no provider is named; {listed}")
        );
        let error = serde_json::from_str::<ProviderName>("\"gpt\"").unwrap_err();
        assert!(
            error.to_string().starts_with("unknown provider 'gpt'"),
            "{error}"
        );
    }

    #[test]
    fn offline_is_no_configuration_whatever_else_is_given() {
        let choice = ProviderChoice::new(ProviderName::Offline)
            .with_base_url(Some("not a url".into()))
            .with_api_key(Some("sk-1".into()));
        assert_eq!(ProviderConfig::from_choice(&choice), Ok(None));
        assert_eq!(
            ProviderConfig::from_choice(&ProviderChoice::default()),
            Ok(None)
        );
    }

    #[test]
    fn each_preset_uses_its_own_url_unless_another_is_given() {
        for preset in Preset::ALL {
            let key = Some("sk-1".to_string());
            let choice =
                ProviderChoice::new(ProviderName::Preset(preset)).with_api_key(key.clone());
            assert_eq!(
                config(choice.clone()),
                ProviderConfig::from_preset(preset, key)
            );
            let proxied = config(choice.with_base_url(Some(" http://proxy:9/v1/ ".into())));
            assert_eq!(proxied.base_url, "http://proxy:9/v1", "{preset:?}");
            assert_eq!(proxied.kind, preset.kind());
        }
        let ollama = config(ProviderChoice::new(ProviderName::Preset(Preset::Ollama)));
        assert_eq!(ollama.base_url, "http://localhost:11434/v1");
        assert_eq!(ollama.api_key, None);
        let blank = ProviderChoice::new(ProviderName::Preset(Preset::LmStudio))
            .with_base_url(Some("  ".into()));
        assert_eq!(config(blank).base_url, "http://localhost:1234/v1");
    }

    #[test]
    fn hosted_presets_need_a_key_at_their_own_url_only() {
        for preset in [Preset::OpenAi, Preset::Anthropic, Preset::OpenRouter] {
            let choice =
                ProviderChoice::new(ProviderName::Preset(preset)).with_api_key(Some("  ".into()));
            assert_eq!(
                ProviderConfig::from_choice(&choice),
                Err(ProviderChoiceError::MissingApiKey { provider: preset })
            );
            assert_eq!(
                refusal(choice.clone()),
                format!("{} needs an API key", preset.label())
            );
            // The preset's own URL, given as a form fills it in, still needs the key.
            let own = choice
                .clone()
                .with_base_url(Some(format!("{}/", preset.base_url())));
            assert_eq!(
                ProviderConfig::from_choice(&own),
                Err(ProviderChoiceError::MissingApiKey { provider: preset })
            );
            // A proxy may add the credentials itself.
            let proxied = config(choice.with_base_url(Some("https://proxy.example/v1".into())));
            assert_eq!(proxied.api_key, None);
        }
    }

    #[test]
    fn compatible_servers_need_a_base_url_which_is_normalised() {
        let openai = ProviderChoice::new(ProviderName::Compatible(ProviderKind::OpenAiCompatible))
            .with_base_url(Some("http://gpu:8000/v1/chat/completions/".into()))
            .with_api_key(Some(" sk-1 ".into()))
            .with_header("x-team", "ml");
        let config_openai = config(openai);
        assert_eq!(config_openai.kind, ProviderKind::OpenAiCompatible);
        assert_eq!(config_openai.base_url, "http://gpu:8000/v1");
        assert_eq!(config_openai.api_key.as_deref(), Some("sk-1"));
        assert_eq!(
            config_openai.extra_headers,
            vec![("x-team".to_string(), "ml".to_string())]
        );
        let anthropic = config(
            ProviderChoice::new(ProviderName::Compatible(ProviderKind::Anthropic))
                .with_base_url(Some("https://proxy.example/v1/messages".into())),
        );
        assert_eq!(anthropic.kind, ProviderKind::Anthropic);
        assert_eq!(
            anthropic.endpoint_url(),
            "https://proxy.example/v1/messages"
        );

        for provider in [
            ProviderName::Compatible(ProviderKind::OpenAiCompatible),
            ProviderName::Compatible(ProviderKind::Anthropic),
        ] {
            for missing in [None, Some(String::new()), Some(" ".to_string())] {
                let choice = ProviderChoice::new(provider).with_base_url(missing);
                assert_eq!(
                    ProviderConfig::from_choice(&choice),
                    Err(ProviderChoiceError::MissingBaseUrl { provider })
                );
            }
        }
        assert_eq!(
            refusal(ProviderChoice::new(ProviderName::Compatible(
                ProviderKind::OpenAiCompatible
            ))),
            "the provider 'openai_compatible' needs a base URL, such as http://localhost:8000/v1"
        );
    }

    #[test]
    fn unusable_base_urls_are_refused_for_every_kind_of_provider() {
        for bad in [
            "localhost:11434/v1",
            "ftp://host/v1",
            "http://",
            "https:///v1",
            "http://my host/v1",
        ] {
            for provider in [
                ProviderName::Preset(Preset::Ollama),
                ProviderName::Compatible(ProviderKind::OpenAiCompatible),
                ProviderName::Compatible(ProviderKind::Anthropic),
            ] {
                let choice = ProviderChoice::new(provider).with_base_url(Some(format!(" {bad} ")));
                assert_eq!(
                    ProviderConfig::from_choice(&choice),
                    Err(ProviderChoiceError::InvalidBaseUrl {
                        url: bad.to_string()
                    }),
                    "{provider} at {bad:?}"
                );
            }
        }
        assert_eq!(
            refusal(
                ProviderChoice::new(ProviderName::Compatible(ProviderKind::OpenAiCompatible))
                    .with_base_url(Some("localhost:8000".into()))
            ),
            "the base URL 'localhost:8000' must start with http:// or https:// followed by a \
             host, such as http://localhost:8000/v1"
        );
    }

    #[test]
    fn debug_output_hides_the_key_and_header_values() {
        let choice = ProviderChoice::new(ProviderName::Compatible(ProviderKind::OpenAiCompatible))
            .with_api_key(Some("sk-secret".into()))
            .with_header("authorization", "Bearer sk-other");
        let shown = format!("{choice:?}");
        assert!(
            !shown.contains("sk-secret") && !shown.contains("sk-other"),
            "{shown}"
        );
        assert!(shown.contains("authorization"), "{shown}");
    }
}
