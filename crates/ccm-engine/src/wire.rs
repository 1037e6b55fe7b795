//! The domain's messages and tools as the provider protocols take them.
//!
//! `ccm-provider` has its own small wire types so that it depends on nothing of the domain;
//! the engine owns both sides, so the conversions live here and the dependency arrow points
//! one way only.

use ccm_core::{ContextMessage, Role, ToolDefinition};
use ccm_provider::{WireMessage, WireTool};

/// Converts a built context into the messages of a request, one for one and in order.
pub fn wire_messages(context: &[ContextMessage]) -> Vec<WireMessage> {
    context.iter().map(wire_message).collect()
}

fn wire_message(message: &ContextMessage) -> WireMessage {
    match message.role {
        Role::System => WireMessage::System(message.content.clone()),
        Role::User => WireMessage::User(message.content.clone()),
        Role::Assistant => WireMessage::assistant_text(message.content.clone()),
    }
}

/// Converts the session's tool definitions into the tools a request offers, in order.
pub fn wire_tools(tools: &[ToolDefinition]) -> Vec<WireTool> {
    tools
        .iter()
        .map(|tool| WireTool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_messages_convert_one_for_one() {
        let context = [
            ContextMessage {
                role: Role::System,
                content: "be brief".into(),
            },
            ContextMessage {
                role: Role::User,
                content: "hi".into(),
            },
            ContextMessage {
                role: Role::Assistant,
                content: "hello".into(),
            },
        ];
        assert_eq!(
            wire_messages(&context),
            vec![
                WireMessage::System("be brief".into()),
                WireMessage::User("hi".into()),
                WireMessage::Assistant {
                    text: "hello".into(),
                    tool_calls: vec![]
                },
            ]
        );
    }

    /// The engine counts the tokens of the tool definitions as JSON; the wire tools must
    /// serialise to exactly the same text, or the estimate would drift.
    #[test]
    fn tools_convert_to_identical_json() {
        let tools = ccm_core::tool_definitions();
        let wire = wire_tools(&tools);
        assert_eq!(wire.len(), tools.len());
        assert_eq!(
            serde_json::to_string(&wire).unwrap(),
            serde_json::to_string(&tools).unwrap()
        );
    }
}
