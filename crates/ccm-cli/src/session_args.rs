//! The session options shared by `ccm proof`, `ccm chat` and `ccm script`: the configuration
//! (a profile, a JSON object or file, the context window), resolved by ccm-core's rules.

use ccm_core::config::ConfigInput;
use ccm_core::Config;
use serde_json::{Map, Value};

/// The usage lines of the session options.
pub const SESSION_USAGE: &str = "\
  --profile NAME        default, or seed: the specification as the seeds describe it (their
                        reference rule, no token budgets, no automatic recall, search by
                        keyword overlap); --config fields override it
  --config JSON|@FILE   session configuration fields, as a JSON object or a file holding one,
                        e.g. '{\"context_mode\": \"heavy\", \"ambient_token_budget\": \"none\"}'
  --context-window N    the model's context window in tokens (default: the window of --model
                        when it is a known model, such as gpt-4o or llama3, else 128000)";

/// The session options as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct SessionArgs {
    profile: Option<String>,
    config: Option<String>,
    context_window: Option<String>,
}

impl SessionArgs {
    /// Takes `arg` (and its value from `rest`) if it is a session option. Returns whether it
    /// was one.
    ///
    /// # Errors
    /// A message when the option's value is missing.
    pub fn take(
        &mut self,
        arg: &str,
        rest: &mut dyn Iterator<Item = String>,
    ) -> Result<bool, String> {
        let mut value = |flag: &str| rest.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg {
            "--profile" => self.profile = Some(value(arg)?),
            "--config" => self.config = Some(value(arg)?),
            "--context-window" => self.context_window = Some(value(arg)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The validated configuration for a session with `model` (whose window, when the model
    /// is known, is the default context window).
    ///
    /// # Errors
    /// A message naming the option to fix: a file that cannot be read, JSON that is not an
    /// object, or the core's range error of a field.
    pub fn config(&self, model: Option<&str>) -> Result<Config, String> {
        let mut fields = match &self.config {
            None => Map::new(),
            Some(given) => {
                let text = match given.strip_prefix('@') {
                    Some(path) => std::fs::read_to_string(path)
                        .map_err(|e| format!("--config: could not read {path}: {e}"))?,
                    None => given.clone(),
                };
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(fields)) => fields,
                    Ok(_) => return Err("--config: expected a JSON object of fields".to_string()),
                    Err(e) => return Err(format!("--config: not valid JSON: {e}")),
                }
            }
        };
        if let Some(profile) = &self.profile {
            if fields.contains_key("profile") {
                return Err("--profile and a \"profile\" field in --config: give one".to_string());
            }
            fields.insert("profile".to_string(), Value::String(profile.clone()));
        }
        if let Some(window) = &self.context_window {
            if fields.contains_key("context_window") {
                return Err(
                    "--context-window and a \"context_window\" field in --config: give one"
                        .to_string(),
                );
            }
            let tokens: i64 = window.trim().parse().map_err(|_| {
                format!("--context-window: expected a number of tokens, got '{window}'")
            })?;
            fields.insert("context_window".to_string(), tokens.into());
        } else if !fields.contains_key("context_window") {
            if let Some(known) = model.and_then(ccm_provider::models::known_model) {
                fields.insert("context_window".to_string(), known.context_window.into());
            }
        }
        let input: ConfigInput =
            serde_json::from_value(Value::Object(fields)).map_err(|e| format!("--config: {e}"))?;
        input.resolve().map_err(|e| format!("--config: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<SessionArgs, String> {
        let mut parsed = SessionArgs::default();
        let mut rest = args.iter().map(|a| a.to_string());
        while let Some(arg) = rest.next() {
            assert!(parsed.take(&arg, &mut rest)?, "{arg} is a session option");
        }
        Ok(parsed)
    }

    #[test]
    fn a_known_model_sizes_the_window_and_the_flags_override_it() {
        let none = parse(&[]).unwrap();
        assert_eq!(none.config(None).unwrap(), Config::default());
        assert_eq!(
            none.config(Some("llama3:8b")).unwrap().context_window,
            8_192
        );
        // Half the window at most is kept for the answer, as with any small window.
        assert_eq!(
            none.config(Some("llama3:8b"))
                .unwrap()
                .reserved_output_tokens,
            4_096
        );
        assert_eq!(
            none.config(Some("some-local-model"))
                .unwrap()
                .context_window,
            128_000
        );
        let window = parse(&["--context-window", "16000"]).unwrap();
        assert_eq!(
            window.config(Some("llama3")).unwrap().context_window,
            16_000
        );
        let json = parse(&["--config", r#"{"context_window": 32000}"#]).unwrap();
        assert_eq!(json.config(Some("llama3")).unwrap().context_window, 32_000);
    }

    #[test]
    fn the_seed_profile_and_fields_over_it() {
        let seed = parse(&["--profile", "seed"]).unwrap().config(None).unwrap();
        assert_eq!(seed, ccm_core::Profile::Seed.config());
        let over = parse(&[
            "--profile",
            "seed",
            "--config",
            r#"{"ambient_token_budget": 500}"#,
        ])
        .unwrap()
        .config(None)
        .unwrap();
        assert_eq!(over.ambient_token_budget, 500);
        assert_eq!(over.summary_token_budget, ccm_core::NO_BUDGET);
    }

    #[test]
    fn bad_values_name_the_option() {
        let error = |args: &[&str]| parse(args).unwrap().config(None).unwrap_err();
        assert_eq!(
            error(&["--context-window", "big"]),
            "--context-window: expected a number of tokens, got 'big'"
        );
        assert_eq!(
            error(&["--context-window", "100"]),
            "--config: context_window must be at least 256, got 100"
        );
        assert!(error(&["--config", "[1]"]).contains("expected a JSON object"));
        assert!(error(&["--config", "{"]).starts_with("--config: not valid JSON"));
        assert!(error(&["--config", "@/no/such/file.json"]).starts_with("--config: could not read"));
        assert!(error(&["--profile", "spec"]).contains("unknown profile 'spec'"));
        assert!(error(&["--config", r#"{"decay": 3}"#]).contains("unknown field `decay`"));
        assert!(error(&[
            "--context-window",
            "9000",
            "--config",
            r#"{"context_window": 8000}"#
        ])
        .contains("give one"));
        assert!(parse(&["--config"]).unwrap_err().contains("needs a value"));
    }
}
