//! A small table of well-known models' context windows and prices, shared by every host: the
//! app sizes a new session's window and shows costs from it, the CLI sizes `--model`'s window.
//!
//! The table is deliberately small and approximate (prices change); every value can be
//! overridden (the app's Settings, the CLI's `--context-window`). A model that is not in the
//! table keeps the configured or default context window.

/// What CCM knows about a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Its context window in tokens.
    pub context_window: u32,
    /// US dollars per million prompt tokens.
    pub input_per_million: f64,
    /// US dollars per million answer tokens.
    pub output_per_million: f64,
}

/// Known models by name prefix, the more specific prefixes first (`gpt-4o-mini` before
/// `gpt-4o` before `gpt-4`).
const KNOWN: &[(&str, ModelInfo)] = &[
    ("gpt-4o-mini", info(128_000, 0.15, 0.60)),
    ("gpt-4o", info(128_000, 2.50, 10.00)),
    ("gpt-4.1-nano", info(1_047_576, 0.10, 0.40)),
    ("gpt-4.1-mini", info(1_047_576, 0.40, 1.60)),
    ("gpt-4.1", info(1_047_576, 2.00, 8.00)),
    ("gpt-4-turbo", info(128_000, 10.00, 30.00)),
    ("gpt-4-32k", info(32_768, 60.00, 120.00)),
    ("gpt-4", info(8_192, 30.00, 60.00)),
    ("gpt-3.5-turbo", info(16_385, 0.50, 1.50)),
    ("o1-mini", info(128_000, 1.10, 4.40)),
    ("o3-mini", info(200_000, 1.10, 4.40)),
    ("o4-mini", info(200_000, 1.10, 4.40)),
    ("claude-3-5-haiku", info(200_000, 0.80, 4.00)),
    ("claude-3-5-sonnet", info(200_000, 3.00, 15.00)),
    ("claude-3-7-sonnet", info(200_000, 3.00, 15.00)),
    ("claude-3-haiku", info(200_000, 0.25, 1.25)),
    ("claude-3-opus", info(200_000, 15.00, 75.00)),
    ("claude-sonnet-4", info(200_000, 3.00, 15.00)),
    ("claude-opus-4", info(200_000, 15.00, 75.00)),
    ("llama3.2", info(128_000, 0.0, 0.0)),
    ("llama3.1", info(128_000, 0.0, 0.0)),
    ("llama3", info(8_192, 0.0, 0.0)),
    ("mistral", info(32_768, 0.0, 0.0)),
];

const fn info(context_window: u32, input_per_million: f64, output_per_million: f64) -> ModelInfo {
    ModelInfo {
        context_window,
        input_per_million,
        output_per_million,
    }
}

/// What the table knows about `model` (case-insensitive; a provider's `vendor/` prefix, as
/// OpenRouter writes it, is ignored; a dated or tagged name matches its family).
pub fn known_model(model: &str) -> Option<ModelInfo> {
    let name = model.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or_default();
    KNOWN.iter().find_map(|(prefix, info)| {
        let rest = name.strip_prefix(prefix)?;
        // "gpt-4" must not match "gpt-4o": what follows the prefix starts a new part.
        (rest.is_empty() || rest.starts_with(['-', ':', '@', '.', '_'])).then_some(*info)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_match_by_family_and_the_most_specific_prefix_wins() {
        assert_eq!(known_model("gpt-4").unwrap().context_window, 8_192);
        assert_eq!(known_model("gpt-4-0613").unwrap().context_window, 8_192);
        assert_eq!(known_model("GPT-4o").unwrap().context_window, 128_000);
        assert_eq!(
            known_model("openai/gpt-4o-mini").unwrap().input_per_million,
            0.15
        );
        assert_eq!(
            known_model("gpt-4-turbo-2024-04-09")
                .unwrap()
                .context_window,
            128_000
        );
        assert_eq!(known_model("llama3:8b").unwrap().context_window, 8_192);
        assert_eq!(
            known_model("claude-3-5-haiku-latest")
                .unwrap()
                .output_per_million,
            4.0
        );
        assert_eq!(known_model("gpt-4oops"), None);
        assert_eq!(known_model("mock-model"), None);
    }
}
