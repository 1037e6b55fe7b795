//! The conversation of one request and the tools it offers, in a form every provider mapping
//! starts from.
//!
//! These are the crate's own types on purpose: the provider protocols know nothing of sessions,
//! efforts or the context plan, so the crate stays a leaf of the workspace. The turn engine
//! (`ccm-engine`) converts a built context and the session's tool definitions into them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the model may call: a function name, when to call it, and the JSON Schema of its
/// arguments object. Serialised as `{"name", "description", "parameters"}`, the shape of an
/// OpenAI function definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTool {
    /// The function name the model calls.
    pub name: String,
    /// When the model should call it.
    pub description: String,
    /// JSON Schema of the arguments object (`null` sends none).
    pub parameters: Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the tool result must quote it.
    pub id: String,
    /// The name of the tool.
    pub name: String,
    /// The arguments exactly as the model wrote them: JSON text that is usually, but not
    /// always, a valid JSON object. It is kept raw so that malformed arguments can be reported
    /// back to the model instead of being lost.
    pub arguments: String,
}

/// One message of a request's conversation.
///
/// A built context only holds plain system, user and assistant text; the tool-calling turn
/// engine appends assistant tool calls and their results during a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireMessage {
    /// Instructions or memory from the application.
    System(String),
    /// What the person wrote.
    User(String),
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The answer's text; may be empty when the model only called tools.
        text: String,
        /// The tools the model asked to run.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of running one tool call.
    ToolResult {
        /// The [`ToolCall::id`] this result answers.
        call_id: String,
        /// The [`ToolCall::name`] of the call.
        name: String,
        /// The result as text (the engine sends JSON).
        content: String,
    },
}

impl WireMessage {
    /// An assistant message with text and no tool calls.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        WireMessage::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_messages_serialise_readably() {
        let message = WireMessage::ToolResult {
            call_id: "c1".into(),
            name: "open_effort".into(),
            content: "{}".into(),
        };
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"tool_result":{"call_id":"c1","name":"open_effort","content":"{}"}}"#
        );
        assert_eq!(serde_json::from_str::<WireMessage>(&json).unwrap(), message);
    }
}
