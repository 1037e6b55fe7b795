//! What the app knows about models: a small table of well-known models' context windows and
//! prices, and the reading of a provider's `/models` list.
//!
//! The table is deliberately small and approximate (prices change); every value can be
//! overridden in Settings: the context window per session, the prices per browser. A model
//! that is not in the table keeps the session's context window.

use serde_json::Value;

/// What the app knows about a model.
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

/// One model of a provider's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    /// The name to send.
    pub id: String,
    /// The context window, when the provider lists it (OpenRouter does).
    pub context_window: Option<u32>,
}

/// Reads a `/models` answer (OpenAI, Anthropic, OpenRouter and Ollama's OpenAI-compatible
/// form: `{"data": [{"id": …}, …]}`), sorted by name.
///
/// # Errors
/// A sentence for the person when the answer is not such a list.
pub fn parse_model_list(body: &str) -> Result<Vec<ListedModel>, String> {
    let value: Value = serde_json::from_str(body)
        .map_err(|_| "the provider's model list is not JSON".to_string())?;
    let items = value
        .get("data")
        .or_else(|| value.get("models"))
        .and_then(Value::as_array)
        .ok_or_else(|| "the provider's answer holds no model list".to_string())?;
    let mut models: Vec<ListedModel> = items
        .iter()
        .filter_map(|item| {
            let id = item
                .get("id")
                .or_else(|| item.get("name"))
                .and_then(Value::as_str)?;
            let context_window = item
                .get("context_length")
                .or_else(|| item.get("context_window"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok());
            Some(ListedModel {
                id: id.to_string(),
                context_window,
            })
        })
        .collect();
    models.sort_by(|a, b| a.id.cmp(&b.id));
    models.dedup_by(|a, b| a.id == b.id);
    Ok(models)
}

/// The cost in US dollars of `input` prompt tokens and `output` answer tokens.
pub fn cost(info: &ModelInfo, input: u64, output: u64) -> f64 {
    (input as f64 * info.input_per_million + output as f64 * info.output_per_million) / 1e6
}

/// A cost for people: "$0.0012", "$1.23", "free".
pub fn format_cost(dollars: f64) -> String {
    if dollars <= 0.0 {
        "free".to_string()
    } else if dollars < 0.01 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
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

    #[test]
    fn model_lists_of_every_shape_are_read() {
        let openai =
            r#"{"object":"list","data":[{"id":"b-model"},{"id":"a-model"},{"id":"a-model"}]}"#;
        let listed = parse_model_list(openai).unwrap();
        assert_eq!(
            listed.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a-model", "b-model"]
        );
        let openrouter = r#"{"data":[{"id":"x/y","context_length":32768}]}"#;
        assert_eq!(
            parse_model_list(openrouter).unwrap()[0].context_window,
            Some(32_768)
        );
        let ollama = r#"{"models":[{"name":"llama3.2:latest"}]}"#;
        assert_eq!(parse_model_list(ollama).unwrap()[0].id, "llama3.2:latest");
        assert!(parse_model_list("<html>").unwrap_err().contains("not JSON"));
        assert!(parse_model_list("{}")
            .unwrap_err()
            .contains("no model list"));
    }

    #[test]
    fn costs_are_per_million_and_read_plainly() {
        let info = known_model("gpt-4o-mini").unwrap();
        let dollars = cost(&info, 1_000_000, 1_000_000);
        assert!((dollars - 0.75).abs() < 1e-9);
        assert_eq!(format_cost(dollars), "$0.75");
        assert_eq!(format_cost(cost(&info, 1_000, 100)), "$0.0002");
        assert_eq!(format_cost(0.0), "free");
    }
}
