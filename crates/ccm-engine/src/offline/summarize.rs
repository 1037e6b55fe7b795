//! How the offline model answers a summary request: it reads the rendered log out of the
//! request and keeps the person's sentences that carry identifiers, numbers and decisions.

use crate::summary::{LOG_ASSISTANT_PREFIX, LOG_END, LOG_START, LOG_USER_PREFIX};

/// Words long enough for the summary before it stops adding sentences.
const SUMMARY_WORD_BUDGET: usize = 55;

/// Words that mark a decision, a cause or a next step.
const DECISION_WORDS: [&str; 24] = [
    "decided", "decide", "chose", "choose", "use", "using", "fixed", "fix", "because", "cause",
    "caused", "root", "set", "changed", "switched", "will", "must", "should", "need", "todo",
    "next", "open", "question", "plan",
];

/// The summary of the effort in a summary request's text (its user message).
///
/// The offline model knows nothing of its own, so what is worth keeping was said by the person:
/// it keeps the first sentence that states the goal and the person's sentences with the most
/// identifiers, numbers and decision words, in their original order, within about 55 words. A
/// value stated again later about the same subject ("the TTL is 1h", then "make the TTL 24h")
/// keeps only its latest statement, so a summary never reports a fact the person corrected.
/// Sentences that only steer the conversation (switching, recalling, concluding) are left out.
/// The result always starts with the effort's name and is never empty.
pub fn compose_summary(request_text: &str) -> String {
    let name = effort_name(request_text).unwrap_or_else(|| "effort".to_string());
    let sentences: Vec<String> = user_messages(request_text)
        .iter()
        .flat_map(|message| split_sentences(message))
        .filter(|sentence| !manages_the_conversation(sentence))
        .collect();
    if sentences.is_empty() {
        return format!("{name}: worked on {name}; no details were recorded.");
    }
    let mut scores: Vec<usize> = sentences.iter().map(|s| score(s)).collect();
    // A fact said again later with another value ("the TTL is 1h" … "make the TTL 24h") is
    // out of date: only the latest one is worth a place in the summary.
    for (index, score) in scores.iter_mut().enumerate() {
        if superseded(index, &sentences) {
            *score = 0;
        }
    }
    // Without a sentence worth a score, the first one (usually the goal) stands for the
    // effort, unless a later one corrected it.
    let goal = scores.iter().position(|&s| s > 0).unwrap_or_else(|| {
        if superseded(0, &sentences) {
            sentences.len() - 1
        } else {
            0
        }
    });
    let mut order: Vec<usize> = (0..sentences.len()).filter(|&i| i != goal).collect();
    // Highest score first; the stable sort keeps earlier sentences first among equals.
    order.sort_by_key(|&i| std::cmp::Reverse(scores[i]));
    let mut chosen = vec![goal];
    let mut words = word_count(&sentences[goal]);
    for index in order {
        if scores[index] == 0 || words >= SUMMARY_WORD_BUDGET {
            break;
        }
        let length = word_count(&sentences[index]);
        if words + length > SUMMARY_WORD_BUDGET + 10 {
            continue;
        }
        chosen.push(index);
        words += length;
    }
    chosen.sort_unstable();
    let body = chosen
        .iter()
        .map(|&i| sentences[i].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{name}: {body}")
}

/// Whether a sentence only steers the conversation ("back to the export", "remind me what the
/// TTL was", "that's resolved"): it says nothing about the effort's subject, and its words
/// would only make the summary match unrelated questions later. A sentence that opens an
/// effort is kept, since it usually states the goal, and so is one that concludes it while
/// stating the outcome ("resolved: raising the TTL to 24h fixed it"), often the last fact.
fn manages_the_conversation(sentence: &str) -> bool {
    super::detect_intents(sentence)
        .iter()
        .any(|intent| match intent {
            super::Intent::Open { .. } => false,
            super::Intent::Close { .. } => score(sentence) == 0,
            _ => true,
        })
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

/// Words too common to say what a sentence is about.
const COMMON_WORDS: [&str; 40] = [
    "the", "and", "for", "with", "this", "that", "was", "were", "are", "its", "it's", "our", "you",
    "now", "not", "but", "has", "have", "had", "let's", "lets", "actually", "make", "also", "just",
    "then", "from", "into", "about", "after", "before", "use", "set", "we're", "there", "here",
    "what", "will", "should", "can",
];

/// The words that say what a sentence is about: alphabetic, three letters or more, not common.
fn subject_words(sentence: &str) -> Vec<String> {
    let mut words: Vec<String> = sentence
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| w.len() >= 3 && w.chars().all(char::is_alphabetic))
        .map(str::to_lowercase)
        .filter(|w| !COMMON_WORDS.contains(&w.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Whether the sentence at `index` states a value (a number) that a later sentence states
/// again about the same subject: the later one shares at least half of its subject words and
/// has a number of its own.
fn superseded(index: usize, sentences: &[String]) -> bool {
    let has_number = |s: &str| s.chars().any(|c| c.is_ascii_digit());
    if !has_number(&sentences[index]) {
        return false;
    }
    let subject = subject_words(&sentences[index]);
    if subject.is_empty() {
        return false;
    }
    sentences[index + 1..].iter().any(|later| {
        if !has_number(later) {
            return false;
        }
        let later = subject_words(later);
        let shared = subject.iter().filter(|w| later.contains(w)).count();
        shared > 0 && shared * 2 >= subject.len()
    })
}

fn word_count(sentence: &str) -> usize {
    sentence.split_whitespace().count()
}

/// How much a sentence is worth keeping: identifiers and numbers count double, decision words
/// and an open question once.
fn score(sentence: &str) -> usize {
    let mut score = 0;
    for token in sentence.split_whitespace() {
        let bare = token.trim_matches(|c: char| !c.is_alphanumeric());
        let number = bare.chars().any(|c| c.is_ascii_digit());
        let identifier = bare.contains(['_', '/', '.', '-', '=']) || token.contains('`');
        if number || identifier {
            score += 2;
        } else if DECISION_WORDS.contains(&bare.to_lowercase().as_str()) {
            score += 1;
        }
    }
    if sentence.ends_with('?') {
        score += 1;
    }
    score
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
        session.effort("auth-bug").unwrap().clone()
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
