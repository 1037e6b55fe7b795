//! The provider options shared by `ccm chat` and `ccm script`, and the responder they select.

use ccm_engine::offline::OFFLINE_MODEL_NAME;
use ccm_engine::EngineSettings;
use ccm_native::{HttpTransport, OfflineResponder, Responder};
use ccm_provider::{
    ProviderChoice, ProviderChoiceError, ProviderConfig, ProviderKind, ProviderName,
};

/// The environment variable the API key is read from. A key is never taken from the command
/// line, where it would end up in the shell history and the process list.
pub const API_KEY_VARIABLE: &str = "CCM_API_KEY";

/// The usage lines of the provider options. The names are ccm-provider's `ProviderName`s and
/// the protocols its table's (`ProviderKind::ALL`), the same the npm package and the browser app
/// accept, so a new protocol is listed here without a change to this file.
pub fn provider_usage() -> String {
    let names = ProviderName::all();
    let presets: Vec<&str> = names
        .iter()
        .filter(|name| matches!(name, ProviderName::Preset(_)))
        .map(|name| name.name())
        .collect();
    let compatible: Vec<&str> = names
        .iter()
        .filter(|name| name.needs_base_url())
        .map(|name| name.name())
        .collect();
    let these = if compatible.len() == 2 {
        "these two"
    } else {
        "these"
    };
    let protocols: Vec<&str> = ProviderKind::ALL
        .iter()
        .map(|kind| kind.protocol().name)
        .collect();
    let default_protocol = ProviderKind::OpenAiCompatible.protocol().name;
    format!(
        "\
  --provider NAME       offline (the default), {presets},
                        {compatible} ({these} need --base-url);
                        case, '-' and '_' do not matter (openai-compatible), and custom,
                        from earlier versions, means openai_compatible
  --base-url URL        the provider's base URL (required for the *_compatible ones; replaces a
                        preset's, for example with a proxy's)
  --protocol {protocols}   the protocol of the server at --base-url, as earlier
                        versions chose it for --provider custom (default: {default_protocol})
  --model NAME          the model name (required except for offline)
  --stream              ask for streamed answers
  The API key is read from the CCM_API_KEY environment variable.",
        presets = presets.join(", "),
        compatible = or_list(&compatible),
        protocols = protocols.join("|"),
    )
}

/// `a`, `a or b`, `a, b or c`: a list as a sentence gives it.
fn or_list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

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

    /// The model name given with `--model`, if any.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The responder and the engine settings these options select. `api_key` is the value of
    /// [`API_KEY_VARIABLE`], if set.
    ///
    /// The name and the base URL are checked by ccm-provider's `ProviderConfig::from_choice`,
    /// as in the npm package and the browser app; this only adds which option to fix.
    ///
    /// # Errors
    /// A message naming the option to fix: an unknown provider or protocol, a missing model
    /// or base URL, a hosted provider without a key, an invalid base URL.
    pub fn connect(
        &self,
        api_key: Option<String>,
    ) -> Result<(Box<dyn Responder>, EngineSettings), String> {
        let given = self.provider.as_deref().unwrap_or("offline");
        let mut name: ProviderName = given
            .parse()
            .map_err(|e: ProviderChoiceError| e.to_string())?;
        if let Some(protocol) = &self.protocol {
            // `--provider custom --protocol anthropic` is how earlier versions named an
            // Anthropic-compatible server; the protocol only chooses between the two names that
            // take a base URL.
            if !name.needs_base_url() {
                let mut takers: Vec<&str> = ProviderName::all()
                    .iter()
                    .filter(|name| name.needs_base_url())
                    .map(|name| name.name())
                    .collect();
                takers.push("custom");
                return Err(format!(
                    "--protocol is only for a server at --base-url ({}); {} speaks its own",
                    or_list(&takers),
                    name.label()
                ));
            }
            // The protocols are ccm-provider's table: a new one is accepted here as it is added.
            let kind = ProviderKind::from_protocol_name(protocol).ok_or_else(|| {
                format!(
                    "unknown protocol '{}'; expected {}",
                    protocol.trim().to_ascii_lowercase(),
                    ProviderKind::protocol_names()
                )
            })?;
            name = ProviderName::Compatible(kind);
        }
        let choice = ProviderChoice::new(name)
            .with_base_url(self.base_url.clone())
            .with_api_key(api_key);
        let config = ProviderConfig::from_choice(&choice).map_err(|error| match error {
            ProviderChoiceError::MissingApiKey { .. } => {
                format!("{error}: set {API_KEY_VARIABLE}")
            }
            ProviderChoiceError::MissingBaseUrl { .. } => {
                format!("{error} (give it with --base-url)")
            }
            _ => error.to_string(),
        })?;
        let Some(config) = config else {
            if self.base_url.is_some() {
                return Err("--base-url has no meaning for the offline demo model".to_string());
            }
            let model = self.model.as_deref().unwrap_or(OFFLINE_MODEL_NAME);
            let settings = EngineSettings::new(model).with_stream(self.stream);
            return Ok((Box::new(OfflineResponder::new()), settings));
        };
        let model = self
            .model
            .as_deref()
            .ok_or_else(|| format!("--provider {given} needs --model"))?;
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
    fn every_spelling_of_earlier_versions_still_works() {
        let label = |args: &[&str]| {
            let (responder, _) = parse(args).unwrap().connect(None).unwrap();
            responder.label()
        };
        let base = "http://127.0.0.1:9/v1";
        for provider in [
            "custom",
            "openai_compatible",
            "openai-compatible",
            "Custom_OpenAI",
        ] {
            assert_eq!(
                label(&["--provider", provider, "--base-url", base, "--model", "m"]),
                base,
                "{provider}"
            );
        }
        assert_eq!(
            label(&["--provider", "LM-Studio", "--model", "m"]),
            "http://localhost:1234/v1"
        );
        // The protocol of `--provider custom` is still chosen with `--protocol`; the config's
        // kind shows in the URL it trims.
        let anthropic = [
            "--provider",
            "anthropic-compatible",
            "--base-url",
            "http://127.0.0.1:9/v1/messages",
            "--model",
            "m",
        ];
        assert_eq!(label(&anthropic), base);
        let custom_openai = [
            "--provider",
            "custom",
            "--protocol",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1/messages",
            "--model",
            "m",
        ];
        assert_eq!(label(&custom_openai), "http://127.0.0.1:9/v1/messages");
    }

    #[test]
    fn a_hosted_preset_behind_a_proxy_may_go_without_a_key() {
        let (responder, _) = parse(&[
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "gpt-4o",
        ])
        .unwrap()
        .connect(None)
        .unwrap();
        assert_eq!(responder.label(), "http://127.0.0.1:9/v1");
    }

    /// `--protocol` reads ccm-provider's table: every protocol in it is accepted by its name
    /// and selects the server at the base URL that speaks it.
    #[test]
    fn every_protocol_of_the_table_is_accepted_by_protocol() {
        for kind in ccm_provider::ProviderKind::ALL {
            let name = kind.protocol().name;
            let (responder, _) = parse(&[
                "--provider",
                "custom",
                "--protocol",
                name,
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
            ])
            .unwrap()
            .connect(None)
            .unwrap();
            assert_eq!(responder.label(), "http://127.0.0.1:9/v1", "{name}");
            assert!(
                provider_usage().contains(name),
                "{name} is not in the usage"
            );
        }
    }

    #[test]
    fn the_usage_lists_every_provider_name() {
        let usage = provider_usage();
        for name in ProviderName::all() {
            assert!(usage.contains(name.name()), "{name} is not in the usage");
        }
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
            "the provider 'openai_compatible' needs a base URL, such as http://localhost:8000/v1 \
             (give it with --base-url)"
        );
        assert_eq!(
            error(&["--provider", "gemini"], None),
            "unknown provider 'gemini'; expected one of offline, openai, anthropic, openrouter, \
             ollama, lmstudio, openai_compatible (with a base URL), anthropic_compatible (with a \
             base URL)"
        );
        assert_eq!(
            error(
                &[
                    "--provider",
                    "ollama",
                    "--base-url",
                    "localhost:11434",
                    "--model",
                    "m"
                ],
                None
            ),
            "the base URL 'localhost:11434' must start with http:// or https:// followed by a \
             host, such as http://localhost:8000/v1"
        );
        assert_eq!(
            error(
                &[
                    "--provider",
                    "ollama",
                    "--protocol",
                    "openai",
                    "--model",
                    "m"
                ],
                None
            ),
            "--protocol is only for a server at --base-url (openai_compatible, \
             anthropic_compatible or custom); Ollama speaks its own"
        );
        assert_eq!(
            error(&["--provider", "custom", "--protocol", "grpc"], None),
            "unknown protocol 'grpc'; expected openai or anthropic"
        );
        assert_eq!(
            error(&["--base-url", "http://x"], None),
            "--base-url has no meaning for the offline demo model"
        );
        assert_eq!(
            parse(&["--api-key", "sk-1"]).unwrap_err(),
            "the API key is not taken from the command line; set CCM_API_KEY instead"
        );
        assert_eq!(parse(&["--model"]).unwrap_err(), "--model needs a value");
    }
}
