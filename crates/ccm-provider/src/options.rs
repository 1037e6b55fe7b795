//! What one request asks of the model: which model, how much output, the tool choice, and the
//! field its output limit is sent in. It names no protocol and no provider, so that every
//! protocol's module can read it without reaching the table of protocols (see
//! [`crate::protocol`]).

use super::error::ProviderError;
use serde::{Deserialize, Serialize};

/// The JSON field an OpenAI-compatible request uses for the output token limit.
///
/// OpenAI deprecated `max_tokens` in favour of `max_completion_tokens` and its reasoning models
/// reject the old name, while many compatible servers only understand `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimitField {
    /// `max_tokens`: understood by every compatible server.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI itself expects.
    MaxCompletionTokens,
}

/// The output token limit used by [`RequestOptions::new`].
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Whether and which tools the model may call in one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides. This is every provider's default, so nothing is sent for it, which
    /// also keeps servers that do not know the `tool_choice` field working.
    #[default]
    Auto,
    /// The model must answer in plain text. The tools are still sent (a conversation that
    /// contains tool calls needs their definitions), but the model may not call them: this is
    /// how the last round of a turn forces a final answer.
    None,
    /// The model must call at least one tool (Anthropic calls this `any`).
    Required,
    /// The model must call the named tool.
    Function(String),
}

/// The per-request settings: which model, how much output, and the tool choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    /// The model name as the provider knows it (`gpt-4o-mini`, `llama3.2`,
    /// `claude-sonnet-4-5`, …).
    pub model: String,
    /// The most tokens the model may generate. Anthropic requires this value, so it is always
    /// sent.
    pub max_tokens: u32,
    /// Sampling temperature; `None` keeps the provider's default.
    pub temperature: Option<f64>,
    /// Ask for a server-sent-event stream instead of one JSON body.
    pub stream: bool,
    /// Whether and which tools the model may call.
    pub tool_choice: ToolChoice,
}

impl RequestOptions {
    /// Options for `model` with [`DEFAULT_MAX_TOKENS`], the provider's default temperature, no
    /// streaming and [`ToolChoice::Auto`].
    pub fn new(model: impl Into<String>) -> Self {
        RequestOptions {
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            stream: false,
            tool_choice: ToolChoice::Auto,
        }
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets [`temperature`](Self::temperature).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets [`stream`](Self::stream).
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets [`tool_choice`](Self::tool_choice).
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    /// Checks the options against the tools that will be sent with them.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidConfig`] for an empty model name, a zero `max_tokens`, a
    /// temperature that is not a finite number, or a tool choice that requires a tool when
    /// `tool_names` is empty or does not contain the named function.
    pub fn validate<'a>(
        &self,
        tool_names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ProviderError> {
        if self.model.trim().is_empty() {
            return Err(ProviderError::InvalidConfig(
                "no model name is set".to_string(),
            ));
        }
        if self.max_tokens == 0 {
            return Err(ProviderError::InvalidConfig(
                "max_tokens must be at least 1".to_string(),
            ));
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(ProviderError::InvalidConfig(format!(
                    "the temperature must be a number of at least 0, not {t}"
                )));
            }
        }
        let mut names = tool_names.into_iter().peekable();
        match &self.tool_choice {
            ToolChoice::Required if names.peek().is_none() => Err(ProviderError::InvalidConfig(
                "the tool choice requires a tool call, but no tools are sent".to_string(),
            )),
            ToolChoice::Function(wanted) if !names.any(|name| name == wanted) => {
                Err(ProviderError::InvalidConfig(format!(
                    "the tool choice names the tool `{wanted}`, which is not among the tools sent"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_validation_explains_the_problem() {
        let tools = ["open_effort", "close_effort"];
        let ok =
            RequestOptions::new("m").with_tool_choice(ToolChoice::Function("close_effort".into()));
        ok.validate(tools).unwrap();

        let cases = [
            (RequestOptions::new(" "), "no model name is set"),
            (
                RequestOptions::new("m").with_max_tokens(0),
                "max_tokens must be at least 1",
            ),
            (
                RequestOptions::new("m").with_temperature(f64::NAN),
                "the temperature must be a number of at least 0, not NaN",
            ),
            (
                RequestOptions::new("m").with_tool_choice(ToolChoice::Function("nope".into())),
                "the tool choice names the tool `nope`, which is not among the tools sent",
            ),
        ];
        for (options, message) in cases {
            assert_eq!(
                options.validate(tools),
                Err(ProviderError::InvalidConfig(message.to_string()))
            );
        }
        assert_eq!(
            RequestOptions::new("m")
                .with_tool_choice(ToolChoice::Required)
                .validate([]),
            Err(ProviderError::InvalidConfig(
                "the tool choice requires a tool call, but no tools are sent".to_string()
            ))
        );
        // Forcing plain text is fine without tools: there is nothing to call anyway.
        RequestOptions::new("m")
            .with_tool_choice(ToolChoice::None)
            .validate([])
            .unwrap();
    }
}
