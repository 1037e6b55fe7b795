//! The summary requests: the one made when the model concludes an effort (its prompt, and the
//! effort's raw log rendered as the text the model summarises), and the one for a level-3
//! compaction's rolling summary.

use ccm_core::compaction::{describe_ranges, RollingInput};
use ccm_core::{Effort, Role};
use ccm_provider::WireMessage;

/// The instructions of every summary request.
///
/// The summary replaces the effort's whole conversation in the working context, so the prompt
/// asks for exactly what later turns need to go on as if the conversation were still there:
/// decisions, facts, identifiers verbatim and open questions. It deliberately asks for plain
/// prose without a preamble, because the text is placed into the context as it is.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You summarize a concluded effort: a focused piece of \
work from a conversation between a user and an assistant. Your summary replaces the effort's \
full conversation in the assistant's working memory, so it must let the assistant carry on as \
if it still remembered the conversation.

Keep:
- the decisions that were made, and why;
- the facts that were established (causes, values, results);
- identifiers exactly as written: names, ids, file paths, URLs, commands, numbers, versions, \
error codes;
- the open questions and next steps that were left unresolved.

Write plain text in one short paragraph of at most 80 words. Start directly with the content: \
no title, no preamble, no closing remark. Do not add anything that is not in the conversation.";

/// The line that starts every user message in a rendered log.
pub const LOG_USER_PREFIX: &str = "USER: ";

/// The line that starts every assistant message in a rendered log.
pub const LOG_ASSISTANT_PREFIX: &str = "ASSISTANT: ";

/// The line before the rendered log in the summary requests (of an effort and of the rolling
/// summary alike), and the line after it. The offline demo model finds the log between them.
pub const LOG_START: &str = "--- conversation ---";

/// The line that ends the rendered log.
pub const LOG_END: &str = "--- end of conversation ---";

/// The messages of a summary request for `effort`.
///
/// `pending_user_text` is the user message of the turn in progress when it belongs to this
/// effort: it is stored only when the turn ends, but it often carries the final facts ("fixed
/// it, the TTL was the problem — we're done"), so the summary must see it.
pub fn summary_messages(effort: &Effort, pending_user_text: Option<&str>) -> Vec<WireMessage> {
    let mut heading = format!(
        "Summarize the concluded effort `{}` ({}).",
        effort.id, effort.name
    );
    if let Some(description) = &effort.description {
        heading.push_str(&format!(" Its goal: {description}"));
    }
    let mut log = String::new();
    for message in &effort.messages {
        let prefix = match message.role {
            Role::User => LOG_USER_PREFIX,
            Role::Assistant => LOG_ASSISTANT_PREFIX,
            // Raw logs only hold user and assistant messages; anything else is shown as what
            // it is rather than dropped.
            Role::System => "SYSTEM: ",
        };
        log.push_str(prefix);
        log.push_str(message.content.trim());
        log.push('\n');
    }
    if let Some(text) = pending_user_text {
        log.push_str(LOG_USER_PREFIX);
        log.push_str(text.trim());
        log.push('\n');
    }
    if log.is_empty() {
        log.push_str("(no messages were exchanged in this effort)\n");
    }
    vec![
        WireMessage::System(SUMMARY_SYSTEM_PROMPT.to_string()),
        WireMessage::User(format!(
            "{heading}\n\n{LOG_START}\n{log}{LOG_END}\n\nWrite the summary now."
        )),
    ]
}

/// The two texts of a rolling summary request, for any provider's mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryPrompt {
    /// The instructions (system message).
    pub system: String,
    /// The material (user message).
    pub user: String,
}

/// The request for a rolling summary of at most `max_words` words (the material is
/// [`ccm_core::Session::rolling_summary_upgrade`]'s).
///
/// The instructions ask for what later turns need to carry on without the originals:
/// decisions, facts, identifiers verbatim, open questions; and to fold the previous summary in
/// rather than append to it, so the summary does not grow with every compaction.
pub fn rolling_summary_prompt(input: &RollingInput<'_>, max_words: u32) -> SummaryPrompt {
    let system = format!(
        "You maintain the rolling summary of a long conversation between a user and an \
assistant. The summary replaces the older part of the conversation in the assistant's working \
memory (the original messages stay stored and can be retrieved), so it must let the assistant \
carry on as if it still remembered them.

Keep:
- the user's goals, and the decisions that were made and why;
- the facts that were established (causes, values, results);
- identifiers exactly as written: names, ids, file paths, URLs, commands, numbers, versions, \
error codes;
- the open questions and next steps that are still unresolved.

If a previous summary is given, fold it into the new one: keep what still matters and drop \
what was superseded. Write plain text of at most {max_words} words. Start directly with the \
content: no title, no preamble, no closing remark. Do not add anything that is not in the \
conversation."
    );
    let mut user = format!(
        "Update the rolling summary of the earlier conversation ({}).\n\n",
        describe_ranges(&input.covers())
    );
    match input.previous_text {
        Some(previous) if !previous.trim().is_empty() => {
            user.push_str("Previous summary:\n");
            user.push_str(previous.trim());
            user.push_str("\n\n");
        }
        _ => user.push_str("There is no previous summary.\n\n"),
    }
    user.push_str(LOG_START);
    user.push('\n');
    for piece in &input.history {
        user.push_str(piece.text.trim());
        user.push('\n');
    }
    user.push_str(LOG_END);
    SummaryPrompt { system, user }
}

/// The summary text a model answered with, cleaned of the wrappers models like to add, or
/// `None` when nothing usable is left.
///
/// Surrounding whitespace, a leading `Summary:` label and quotes around the whole text are
/// removed; the rest is kept exactly, so identifiers stay intact.
pub fn clean_summary(text: &str) -> Option<String> {
    let mut cleaned = text.trim();
    for label in [
        "Summary:",
        "summary:",
        "SUMMARY:",
        "**Summary:**",
        "**Summary**:",
    ] {
        if let Some(rest) = cleaned.strip_prefix(label) {
            cleaned = rest.trim_start();
        }
    }
    for (open, close) in [('"', '"'), ('“', '”')] {
        if cleaned.len() >= 2 && cleaned.starts_with(open) && cleaned.ends_with(close) {
            let inner = &cleaned[open.len_utf8()..cleaned.len() - close.len_utf8()];
            // Only quotes around the whole text: an inner quote means they were part of it.
            if !inner.contains(open) && !inner.contains(close) {
                cleaned = inner.trim();
            }
        }
    }
    (!cleaned.is_empty()).then(|| cleaned.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_keeps_the_content_and_drops_wrappers() {
        assert_eq!(clean_summary("  \n "), None);
        assert_eq!(clean_summary("Summary:   "), None);
        assert_eq!(
            clean_summary("Summary: TTL raised to 86400 s.").as_deref(),
            Some("TTL raised to 86400 s.")
        );
        assert_eq!(
            clean_summary("\"Rotated the key `k-1`.\"").as_deref(),
            Some("Rotated the key `k-1`.")
        );
        assert_eq!(
            clean_summary("\"a\" and \"b\" were compared").as_deref(),
            Some("\"a\" and \"b\" were compared")
        );
    }
}
