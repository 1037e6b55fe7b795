//! What the server needs to know about a chat request: the last user text, whether it is a
//! summary request, whether it streams, and the deterministic token estimates.

use serde_json::Value;

/// The two chat protocols the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// OpenAI-compatible Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// Facts read from a chat request body.
#[derive(Debug, Clone)]
pub(crate) struct ChatFacts {
    /// The `model` field, or `mock-model` when absent.
    pub model: String,
    /// The text of the last user message that has text (see [`last_user_text`]).
    pub last_user_text: String,
    /// See [`crate::ReplyMatch::summary_request`].
    pub summary_request: bool,
    /// `"stream": true`.
    pub stream: bool,
    /// OpenAI's `"stream_options": {"include_usage": true}`.
    pub include_usage: bool,
    /// The prompt token estimate; see [`estimate_prompt_tokens`].
    pub prompt_tokens: u64,
}

/// Reads the facts, or explains (as a provider would) why the body is not a chat request.
pub(crate) fn chat_facts(protocol: Protocol, body: &Value) -> Result<ChatFacts, String> {
    let object = body
        .as_object()
        .ok_or("the request body must be a JSON object")?;
    let messages = object
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` must be an array")?;
    for (i, message) in messages.iter().enumerate() {
        if message.get("role").and_then(Value::as_str).is_none() {
            return Err(format!("messages[{i}] has no string `role`"));
        }
    }
    let has_tools = object
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let system = system_text(protocol, body);
    let last_user = last_user_text(messages);
    let summary_request = !has_tools && (mentions_summary(&system) || mentions_summary(&last_user));
    Ok(ChatFacts {
        model: object
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_string(),
        last_user_text: last_user,
        summary_request,
        stream: object.get("stream").and_then(Value::as_bool) == Some(true),
        include_usage: object
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true),
        prompt_tokens: estimate_prompt_tokens(body),
    })
}

/// `summar` in any case: summary, summarise, summarize, Summarization, ….
fn mentions_summary(text: &str) -> bool {
    text.to_lowercase().contains("summar")
}

/// The text parts of a message `content`: a string, or an array of blocks of which only
/// `{"type": "text", "text": ...}` blocks count.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The last `user` message that has any text. Anthropic sends tool results as `user`
/// messages made only of `tool_result` blocks; skipping text-less messages makes both
/// protocols see the human's last words.
fn last_user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| content_text(m.get("content")))
        .find(|text| !text.is_empty())
        .unwrap_or_default()
}

/// The system prompt: OpenAI `system` / `developer` messages, or Anthropic's `system` field.
fn system_text(protocol: Protocol, body: &Value) -> String {
    match protocol {
        Protocol::OpenAi => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|messages| {
                messages
                    .iter()
                    .filter(|m| {
                        matches!(
                            m.get("role").and_then(Value::as_str),
                            Some("system" | "developer")
                        )
                    })
                    .map(|m| content_text(m.get("content")))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
        Protocol::Anthropic => content_text(body.get("system")),
    }
}

/// The prompt token estimate reported in `usage`: the byte length of the compact JSON of
/// `messages`, `system` and `tools` (those present) divided by four, rounded up.
///
/// Real tokenizers average roughly four bytes per token on English text, so the numbers look
/// realistic; more importantly they are deterministic and can be recomputed by a test.
pub fn estimate_prompt_tokens(body: &Value) -> u64 {
    let bytes: usize = ["messages", "system", "tools"]
        .iter()
        .filter_map(|key| body.get(*key))
        .map(|value| value.to_string().len())
        .sum();
    bytes_to_tokens(bytes)
}

/// Four bytes per token, rounded up.
pub(crate) fn bytes_to_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_last_user_text_under_both_protocols() {
        let openai = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
            {"role": "tool", "tool_call_id": "x", "content": "result"}
        ], "tools": [{"type": "function"}]});
        let facts = chat_facts(Protocol::OpenAi, &openai).unwrap();
        assert_eq!(facts.last_user_text, "second");
        assert!(!facts.summary_request);

        let anthropic = json!({"system": "Summarize the log", "messages": [
            {"role": "user", "content": "please wrap up"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
        ]});
        let facts = chat_facts(Protocol::Anthropic, &anthropic).unwrap();
        assert_eq!(facts.last_user_text, "please wrap up");
        assert!(
            facts.summary_request,
            "no tools and a system prompt about summaries"
        );
    }

    #[test]
    fn rejects_bodies_that_are_not_chat_requests() {
        assert!(chat_facts(Protocol::OpenAi, &json!([])).is_err());
        assert!(chat_facts(Protocol::OpenAi, &json!({"messages": "x"})).is_err());
        assert!(chat_facts(
            Protocol::Anthropic,
            &json!({"messages": [{"content": "x"}]})
        )
        .is_err());
    }

    #[test]
    fn the_prompt_estimate_is_bytes_over_four() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "abcd"}]});
        let bytes = r#"[{"content":"abcd","role":"user"}]"#.len();
        assert_eq!(estimate_prompt_tokens(&body), bytes.div_ceil(4) as u64);
    }
}
