//! The provider options shared by `ccm chat` and `ccm script`, and the responder they select.

use ccm_engine::offline::OFFLINE_MODEL_NAME;
use ccm_engine::EngineSettings;
use ccm_native::{HttpTransport, OfflineResponder, Responder};
use ccm_provider::{Preset, ProviderConfig, ProviderKind};

/// The environment variable the API key is read from. A key is never taken from the command
/// line, where it would end up in the shell history and the process list.
pub const API_KEY_VARIABLE: &str = "CCM_API_KEY";

/// The usage lines of the provider options.
pub const PROVIDER_USAGE: &str = "\
  --provider offline|openai|anthropic|openrouter|ollama|lmstudio|custom   (default: offline)
  --base-url URL        the provider's base URL (required for custom; overrides a preset's)
  --protocol openai|anthropic   the protocol of a custom provider (default: openai)
  --model NAME          the model name (required except for offline)
  --stream              ask for streamed answers
  The API key is read from the CCM_API_KEY environment variable.";

/// Which provider to talk to, as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct ProviderArgs {
    provider: Option<String>,
    base_url: Option<String>,
    protocol: Option<String>,
    model: Option<String>,
    stream: bool,
}

impl ProviderArgs {
    /// Takes `arg` (and its value from `rest`) if it is a provider option. Returns whether it
    /// was one.
    ///
    /// # Errors
    /// A message when the option's value is missing.
    pub fn take(
        &mut self,
        arg: &str,
        rest: &mut dyn Iterator<Item = String>,
    ) -> Result<bool, String> {
        let mut value = |flag: &str| {
            rest.next()
                .filter(|v| !v.starts_with("--"))
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match arg {
            "--provider" => self.provider = Some(value(arg)?),
            "--base-url" => self.base_url = Some(value(arg)?),
            "--protocol" => self.protocol = Some(value(arg)?),
            "--model" => self.model = Some(value(arg)?),
            "--stream" => self.stream = true,
            "--api-key" => {
                return Err(format!(
                    "the API key is not taken from the command line; set {API_KEY_VARIABLE} instead"
                ))
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The responder and the engine settings these options select. `api_key` is the value of
    /// [`API_KEY_VARIABLE`], if set.
    ///
    /// # Errors
    /// A message naming the option to fix: an unknown provider or protocol, a missing model
    /// or base URL, a hosted provider without a key, an invalid base URL.
    pub fn connect(
        &self,
        api_key: Option<String>,
    ) -> Result<(Box<dyn Responder>, EngineSettings), String> {
        let name = self.provider.as_deref().unwrap_or("offline");
        if name.eq_ignore_ascii_case("offline") {
            if self.base_url.is_some() {
                return Err("--base-url has no meaning for the offline demo model".to_string());
            }
            let model = self.model.as_deref().unwrap_or(OFFLINE_MODEL_NAME);
            let settings = EngineSettings::new(model).with_stream(self.stream);
            return Ok((Box::new(OfflineResponder::new()), settings));
        }
        let config = if name.eq_ignore_ascii_case("custom") {
            let base_url = self
                .base_url
                .as_deref()
                .ok_or("--provider custom needs --base-url")?;
            let kind = match self.protocol.as_deref().unwrap_or("openai") {
                "openai" => ProviderKind::OpenAiCompatible,
                "anthropic" => ProviderKind::Anthropic,
                other => {
                    return Err(format!(
                        "unknown protocol '{other}'; expected openai or anthropic"
                    ))
                }
            };
            ProviderConfig::custom(kind, base_url, api_key)
        } else {
            let preset = Preset::from_name(name).ok_or_else(|| {
                format!(
                    "unknown provider '{name}'; expected offline, openai, anthropic, openrouter, \
                     ollama, lmstudio or custom"
                )
            })?;
            if self.protocol.is_some() {
                return Err(format!(
                    "--protocol is only for --provider custom; {} speaks its own",
                    preset.label()
                ));
            }
            if preset.needs_api_key() && api_key.as_deref().is_none_or(|k| k.trim().is_empty()) {
                return Err(format!(
                    "{} needs an API key: set {API_KEY_VARIABLE}",
                    preset.label()
                ));
            }
            let mut config = ProviderConfig::from_preset(preset, api_key);
            if let Some(base_url) = &self.base_url {
                config.base_url = ccm_provider::normalize_base_url(config.kind, base_url);
            }
            config
        };
        config.validate().map_err(|e| e.to_string())?;
        let model = self
            .model
            .as_deref()
            .ok_or_else(|| format!("--provider {name} needs --model"))?;
        let settings = EngineSettings::new(model).with_stream(self.stream);
        Ok((Box::new(HttpTransport::new(config)), settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ProviderArgs, String> {
        let mut parsed = ProviderArgs::default();
        let mut rest = args.iter().map(|s| s.to_string());
        while let Some(arg) = rest.next() {
            if !parsed.take(&arg, &mut rest)? {
                return Err(format!("not a provider option: {arg}"));
            }
        }
        Ok(parsed)
    }

    fn error(args: &[&str], key: Option<&str>) -> String {
        match parse(args).and_then(|p| p.connect(key.map(str::to_string))) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(message) => message,
        }
    }

    #[test]
    fn offline_is_the_default_and_needs_nothing() {
        let (responder, settings) = parse(&[]).unwrap().connect(None).unwrap();
        assert_eq!(settings.model, OFFLINE_MODEL_NAME);
        assert!(responder.label().contains("Offline demo model"));
    }

    #[test]
    fn presets_and_custom_providers() {
        let (responder, settings) = parse(&["--provider", "ollama", "--model", "llama3.2"])
            .unwrap()
            .connect(None)
            .unwrap();
        assert_eq!(responder.label(), "http://localhost:11434/v1");
        assert_eq!(settings.model, "llama3.2");
        let (responder, _) = parse(&[
            "--provider",
            "custom",
            "--protocol",
            "anthropic",
            "--base-url",
            "http://127.0.0.1:9/v1/messages",
            "--model",
            "m",
        ])
        .unwrap()
        .connect(None)
        .unwrap();
        assert_eq!(responder.label(), "http://127.0.0.1:9/v1");
    }

    #[test]
    fn mistakes_are_explained() {
        assert_eq!(
            error(&["--provider", "openai", "--model", "gpt-4o"], None),
            "OpenAI needs an API key: set CCM_API_KEY"
        );
        assert_eq!(
            error(&["--provider", "ollama"], None),
            "--provider ollama needs --model"
        );
        assert_eq!(
            error(&["--provider", "custom", "--model", "m"], None),
            "--provider custom needs --base-url"
        );
        assert!(error(&["--provider", "gemini"], None).starts_with("unknown provider 'gemini'"));
        assert_eq!(
            parse(&["--api-key", "sk-1"]).unwrap_err(),
            "the API key is not taken from the command line; set CCM_API_KEY instead"
        );
        assert_eq!(parse(&["--model"]).unwrap_err(), "--model needs a value");
    }
}
