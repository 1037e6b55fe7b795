//! How the offline model answers a summary request: it reads the rendered log out of the
//! request and keeps the person's sentences that state the outcome, the latest values and the
//! goal, with ccm-text's extractive summary.

use crate::summary::{LOG_ASSISTANT_PREFIX, LOG_END, LOG_START, LOG_USER_PREFIX};
use ccm_core::text::{self, Speaker};

/// The summary of the effort in a summary request's text (its user message).
///
/// The offline model knows nothing of its own, so what is worth keeping was said by the person:
/// its summary is [`text::summary_sentences`] of the person's messages, which keeps the outcome
/// whenever one is stated (the last sentence with a completion or decision word, or what a bare
/// "that's resolved" confirms), the latest value of each fact ("the TTL is 1h", then "make the
/// TTL 24h" keeps only 24h), and the goal when there is room, in their original order. The
/// assistant's messages are left out: they are the demo's own short replies. Sentences that
/// only steer the conversation (switching, recalling) are left out too; closing ones stay,
/// since the summary reads the outcome from them. The result always starts with the effort's
/// name and is never empty.
pub fn compose_summary(request_text: &str) -> String {
    let name = effort_name(request_text).unwrap_or_else(|| "effort".to_string());
    let user_messages = user_messages(request_text);
    let several = user_messages.len() > 1;
    let messages: Vec<String> = user_messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            split_sentences(message)
                .into_iter()
                .filter(|sentence| !manages_the_conversation(sentence))
                .filter(|sentence| {
                    // An effort opened and concluded in one message keeps all of it.
                    if index == 0 {
                        !several || !concludes(sentence)
                    } else {
                        !opens_new_work(sentence)
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|message| !message.is_empty())
        .collect();
    let conversation: Vec<(Speaker, &str)> = messages
        .iter()
        .map(|message| (Speaker::Person, message.as_str()))
        .collect();
    let body = text::summary_sentences(&name, &conversation, text::EXTRACTIVE_WORD_BUDGET);
    if body.is_empty() {
        return format!("{name}: worked on {name}; no details were recorded.");
    }
    format!("{name}: {}", body.join(" "))
}

/// Whether a sentence only steers the conversation ("back to the export", "remind me what the
/// TTL was"): it says nothing about the effort's subject, and its words would only make the
/// summary match unrelated questions later. A sentence that opens an effort is kept, since it
/// usually states the goal, and so is one that concludes it: it often states the outcome
/// ("resolved: raising the TTL to 24h fixed it"), and when it does not, it still tells the
/// summary which earlier sentence was the outcome. A sentence that states an outcome is kept
/// whatever else it is read as ("finally got it working" is not a request to collapse).
fn manages_the_conversation(sentence: &str) -> bool {
    !text::states_outcome(sentence)
        && super::detect_intents(sentence).iter().any(|intent| {
            !matches!(
                intent,
                super::Intent::Open { .. } | super::Intent::Close { .. }
            )
        })
}

/// Whether a sentence asks for new work by name ("let's work on the docs site: the links are
/// broken"). In the effort's first message that is its goal; in a later one it starts another
/// effort, which the message is filed under (a closing message often ends one effort and
/// starts the next), so its words are not this effort's.
fn opens_new_work(sentence: &str) -> bool {
    super::detect_intents(sentence)
        .iter()
        .any(|intent| matches!(intent, super::Intent::Open { explicit: true, .. }))
}

/// Whether a sentence concludes work ("the export is finished"). In the effort's first message
/// it concludes the effort before this one (the message that starts this effort often ends the
/// last), so its words are not this effort's, and it must not pass for this effort's outcome.
fn concludes(sentence: &str) -> bool {
    super::detect_intents(sentence)
        .iter()
        .any(|intent| matches!(intent, super::Intent::Close { .. }))
}

/// The effort's name from the request heading ("… effort `id` (name).").
fn effort_name(request_text: &str) -> Option<String> {
    let heading = request_text.lines().next()?;
    let start = heading.find("` (")? + 3;
    let end = start + heading[start..].find(')')?;
    let name = heading[start..end].trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The person's messages of the rendered log, continuation lines included.
fn user_messages(request_text: &str) -> Vec<String> {
    let Some(start) = request_text.find(LOG_START) else {
        return Vec::new();
    };
    let log = &request_text[start + LOG_START.len()..];
    let log = &log[..log.find(LOG_END).unwrap_or(log.len())];
    let mut messages: Vec<String> = Vec::new();
    let mut in_user_message = false;
    for line in log.lines() {
        if let Some(text) = line.strip_prefix(LOG_USER_PREFIX) {
            messages.push(text.to_string());
            in_user_message = true;
        } else if line.starts_with(LOG_ASSISTANT_PREFIX) || line.starts_with("SYSTEM: ") {
            in_user_message = false;
        } else if in_user_message {
            if let Some(last) = messages.last_mut() {
                last.push('\n');
                last.push_str(line);
            }
        }
    }
    messages
}

fn split_sentences(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            push_sentence(&mut sentences, &mut current);
            continue;
        }
        current.push(c);
        // A full stop inside a token (a version, a file name) does not end the sentence.
        let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace());
        if ends {
            push_sentence(&mut sentences, &mut current);
        }
    }
    push_sentence(&mut sentences, &mut current);
    sentences
}

fn push_sentence(sentences: &mut Vec<String>, current: &mut String) {
    let sentence = current.trim();
    if sentence.chars().any(char::is_alphanumeric) {
        let mut sentence = sentence.to_string();
        if !sentence.ends_with(['.', '!', '?']) {
            sentence.push('.');
        }
        sentences.push(sentence);
    }
    current.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::summary_messages;
    use ccm_core::tokens::ApproximateCounter;
    use ccm_core::Effort;
    use ccm_core::{Config, Session};
    use ccm_provider::WireMessage;
    use std::sync::Arc;

    /// The effort `auth-bug` after one turn per (user, assistant) exchange.
    fn effort(exchanges: &[(&str, &str)]) -> Effort {
        let mut session =
            Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
        session.open_effort("auth bug", None).unwrap();
        for (user, assistant) in exchanges {
            session.begin_turn(user, 0).unwrap();
            session.end_turn(assistant, 0).unwrap();
        }
        session.efforts().get("auth-bug").unwrap().clone()
    }

    fn request_text(effort: &Effort, pending: Option<&str>) -> String {
        match &summary_messages(effort, pending)[1] {
            WireMessage::User(text) => text.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn keeps_the_goal_identifiers_and_decisions() {
        let effort = effort(&[
            (
                "Let's work on the auth bug: users get 401 after an hour.",
                "(offline demo model) Started effort auth-bug.",
            ),
            ("Nice weather today. The coffee is good.", "Indeed."),
            (
                "The refresh token TTL in config/auth.yaml was 3600; we decided to set it to 86400.",
                "Sounds right.",
            ),
        ]);
        let summary = compose_summary(&request_text(&effort, Some("That's resolved.")));
        assert_eq!(
            summary,
            "auth bug: Let's work on the auth bug: users get 401 after an hour. The refresh \
             token TTL in config/auth.yaml was 3600; we decided to set it to 86400."
        );
    }

    #[test]
    fn leaves_out_the_neighbouring_efforts_words() {
        // The first message concludes the previous effort and opens this one; the last
        // concludes this one and opens the next. Each is filed under the effort it opens.
        let effort = effort(&[
            (
                "The export is finished. Let's work on the auth bug: users get 401 after an hour.",
                "Started effort auth-bug.",
            ),
            ("The refresh token TTL was 3600.", "Noted."),
        ]);
        let summary = compose_summary(&request_text(
            &effort,
            Some("Raised the TTL to 86400, fixed. Let's work on the docs site next."),
        ));
        assert_eq!(
            summary,
            "auth bug: Let's work on the auth bug: users get 401 after an hour. Raised the TTL to \
             86400, fixed."
        );
    }

    #[test]
    fn is_never_empty() {
        let summary = compose_summary(&request_text(&effort(&[]), None));
        assert_eq!(
            summary,
            "auth bug: worked on auth bug; no details were recorded."
        );
        assert_eq!(
            compose_summary("garbage"),
            "effort: worked on effort; no details were recorded."
        );
    }
}
