//! What the app knows about models: the table of well-known models' context windows and prices
//! (ccm-provider's, shared with the CLI; every value can be overridden in Settings: the context
//! window per session, the prices per browser), and the reading of a provider's `/models`
//! list.

use serde_json::Value;

pub use ccm_browser::provider::{known_model, ModelInfo};

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
