//! What the person's message asks for, read from fixed phrases. Deterministic and small on
//! purpose: the offline model demonstrates the tools, it does not understand language.

use serde::Serialize;

/// One thing a message asks for. A message can ask for several ("that's resolved — let's work
/// on the export next"); [`detect_intents`] returns them in the order the model acts on them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "intent", rename_all = "snake_case")]
pub enum Intent {
    /// "we're done", "that's resolved", "all done": conclude an effort.
    Close {
        /// The message, to find which open effort it names (the active one if none).
        mention: String,
    },
    /// "back to …", "switch to …": make another effort active (or reopen a concluded one).
    Switch {
        /// The words after the phrase.
        target: String,
    },
    /// "let's work on …", "help me with …": start an effort.
    Open {
        /// The effort's name, taken from the words after the phrase.
        name: String,
    },
    /// "got it", "that's enough": the person is done reviewing expanded efforts.
    Collapse,
    /// A question about earlier work ("remind me…", "what did we decide about…").
    Recall {
        /// The message, to match against summaries or to search with.
        query: String,
        /// Whether it asks for details a summary cannot give ("exactly", "details"), which
        /// calls for expanding the effort's full log.
        details: bool,
    },
    /// "status", "what are we working on": list the efforts.
    Status,
    /// "help", "what is CCM?", "what can you do?": explain CCM and what to try.
    Help,
}

const CLOSE_PHRASES: [&str; 43] = [
    "all set",
    "that's settled",
    "that is settled",
    "it's settled",
    "is settled",
    "wrap this up",
    "wrap it up",
    "wrap up",
    "let's wrap",
    "close this",
    "close it",
    "close the effort",
    "conclude",
    "it's fixed",
    "fixed now",
    "mark it as done",
    "mark it done",
    "mark as done",
    "that's everything",
    "that is everything",
    "that's resolved",
    "that is resolved",
    "it's resolved",
    "is resolved",
    "that's done",
    "that is done",
    "we're done",
    "we are done",
    "i'm done",
    "all done",
    "is done",
    "are done",
    "done with",
    "we're finished",
    "we are finished",
    "is finished",
    "are finished",
    "are resolved",
    "that's fixed for good",
    "problem solved",
    "we can close",
    "that wraps up",
    "wrapped up",
];

const OPEN_PHRASES: [&str; 10] = [
    "let's work on ",
    "let us work on ",
    "lets work on ",
    "help me with ",
    "i need help with ",
    "let's start on ",
    "let's tackle ",
    "start working on ",
    "let's look into ",
    "let's dig into ",
];

const SWITCH_PHRASES: [&str; 8] = [
    "back to ",
    "switch to ",
    "return to ",
    "continue with ",
    "resume ",
    "pick up ",
    "revisit ",
    "switch over to ",
];

/// Openings that lead into new work when an action verb follows ("let's plan the offsite",
/// "we need to fix the login"): the effort is named after what follows the verb.
const WORK_OPENERS: [&str; 17] = [
    "let's ",
    "let us ",
    "lets ",
    "i want to ",
    "i'd like to ",
    "i would like to ",
    "we need to ",
    "i need to ",
    "we should ",
    "we have to ",
    "i have to ",
    "we must ",
    "can we ",
    "could we ",
    "time to ",
    "help me ",
    "let me ",
];

/// Verbs of new work after a [`WORK_OPENERS`] phrase, longest first so "start on" wins over
/// "start". Verbs that steer the conversation ("go back", "continue", "wrap up") are not here.
const ACTION_VERBS: [&str; 33] = [
    "figure out",
    "talk about",
    "sort out",
    "clean up",
    "start on",
    "set up",
    "organize",
    "organise",
    "investigate",
    "implement",
    "refactor",
    "research",
    "schedule",
    "prepare",
    "migrate",
    "discuss",
    "design",
    "create",
    "update",
    "review",
    "deploy",
    "debug",
    "build",
    "write",
    "draft",
    "plan",
    "test",
    "ship",
    "fix",
    "tackle",
    "start",
    "setup",
    "outline",
];

/// Labels that name new work directly ("new task: hiring plan").
const LABELLED_OPENERS: [&str; 7] = [
    "new effort: ",
    "new task: ",
    "new topic: ",
    "new project: ",
    "next up: ",
    "start an effort for ",
    "open an effort for ",
];

/// Whole messages that ask what this is or how to use it.
const HELP_MESSAGES: [&str; 12] = [
    "help",
    "help me",
    "can you help",
    "can you help me",
    "what is this",
    "what's this",
    "who are you",
    "what are you",
    "info",
    "instructions",
    "how does this work",
    "what now",
];

/// Phrases that ask what CCM is or what the model understands, anywhere in a message.
const HELP_PHRASES: [&str; 14] = [
    "what is ccm",
    "what's ccm",
    "what is cognitive context",
    "what can you do",
    "how does this work",
    "how does it work",
    "how do i use",
    "what should i try",
    "where do i start",
    "what commands",
    "what do you understand",
    "getting started",
    "how can you help",
    "what can i say",
];

const COLLAPSE_PHRASES: [&str; 6] = [
    "got it",
    "that's enough",
    "that is enough",
    "enough details",
    "that's all i needed",
    "that answers it",
];

const RECALL_PHRASES: [&str; 25] = [
    "recap",
    "catch me up",
    "tell me about",
    "what do we know about",
    "summarize",
    "summarise",
    "where were we",
    "what happened with",
    "what happened to",
    "what was the outcome",
    "what came of",
    "what about",
    "remind me",
    "remember",
    "did we",
    "we decided",
    "what did we",
    "how did we",
    "what was the",
    "what were the",
    "earlier",
    "last time",
    "previously",
    "details of",
    "details on",
];

/// Phrases that make a message a request even without a question mark.
const ASKING_PHRASES: [&str; 9] = [
    "remind me",
    "tell me",
    "show me",
    "details of",
    "recap",
    "catch me up",
    "summarize",
    "summarise",
    "what about",
];

/// First words of a yes-or-no question ("is it finished?"), which asks about a state rather
/// than changing it.
const YES_NO_STARTS: [&str; 9] = [
    "is", "are", "was", "were", "has", "have", "did", "does", "do",
];

const DETAIL_PHRASES: [&str; 7] = [
    "details",
    "detail",
    "exactly",
    "specifics",
    "the full",
    "step by step",
    "show me",
];

const STATUS_PHRASES: [&str; 5] = [
    "status",
    "what are we working on",
    "which efforts",
    "what's open",
    "what is open",
];

/// Words cut from the front of a name or target ("the auth bug" → "auth bug").
const LEADING_FILLERS: [&str; 10] = [
    "the", "a", "an", "my", "our", "this", "that", "some", "with", "on",
];

/// Words cut from the end of a name ("billing export next" → "billing export"), and words a
/// cut-off name must not end on ("memory leak in the" → "memory leak").
const TRAILING_FILLERS: [&str; 20] = [
    "now", "next", "today", "please", "first", "then", "again", "effort", "the", "a", "an", "in",
    "of", "for", "to", "at", "on", "with", "and", "from",
];

/// Most words an effort name taken from a message keeps.
const MAX_NAME_WORDS: usize = 4;

/// The intents of a message, in the order a careful model acts on them: conclude what is done,
/// switch, open what is new, collapse, then recall and status.
///
/// # Examples
/// ```
/// use ccm_engine::offline::{detect_intents, Intent};
/// let intents = detect_intents("That's resolved. Let's work on the billing export next.");
/// assert!(matches!(&intents[0], Intent::Close { .. }));
/// assert_eq!(intents[1], Intent::Open { name: "billing export".into() });
/// ```
pub fn detect_intents(message: &str) -> Vec<Intent> {
    let text = normalise(message);
    let mut intents = Vec::new();
    let bare = text.trim_matches(|c: char| !c.is_alphanumeric());
    // "Is it finished?" asks about a state; it does not conclude anything.
    let yes_no_question = text.trim_end().ends_with('?')
        && text
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .is_some_and(|first| YES_NO_STARTS.contains(&first));
    let closes = matches!(bare, "done" | "finished")
        || CLOSE_PHRASES.iter().any(|p| contains_phrase(&text, p));
    if closes && !yes_no_question {
        intents.push(Intent::Close {
            mention: text.clone(),
        });
    }
    if let Some(target) = SWITCH_PHRASES
        .iter()
        .find_map(|p| words_after(&text, p))
        .map(|words| trim_fillers(&words))
        .filter(|t| !t.is_empty())
    {
        intents.push(Intent::Switch { target });
    }
    let open = OPEN_PHRASES
        .iter()
        .chain(LABELLED_OPENERS.iter())
        .find_map(|p| words_after(&text, p))
        .or_else(|| WORK_OPENERS.iter().find_map(|p| work_after(&text, p)))
        .map(|words| trim_fillers(&words))
        .filter(|name| !name.is_empty());
    if let Some(name) = &open {
        intents.push(Intent::Open { name: name.clone() });
    }
    if COLLAPSE_PHRASES.iter().any(|p| contains_phrase(&text, p)) {
        intents.push(Intent::Collapse);
    }
    // A new effort's description often mentions the past ("help me with the export we did
    // earlier"); opening it is what the person asked for, so recall is not read into it. And
    // a statement ("we decided to set it to 86400") reports a fact: only a question or a
    // request asks to recall one.
    let asks = text.contains('?') || ASKING_PHRASES.iter().any(|p| contains_phrase(&text, p));
    if open.is_none() && asks && RECALL_PHRASES.iter().any(|p| contains_phrase(&text, p)) {
        intents.push(Intent::Recall {
            query: message.trim().to_string(),
            details: DETAIL_PHRASES.iter().any(|p| contains_phrase(&text, p)),
        });
    }
    if STATUS_PHRASES.iter().any(|p| contains_phrase(&text, p)) {
        intents.push(Intent::Status);
    }
    // Asking for help with something ("help me with the import") is new work, handled above.
    let asks_for_help =
        HELP_MESSAGES.contains(&bare) || HELP_PHRASES.iter().any(|p| contains_phrase(&text, p));
    if open.is_none() && asks_for_help {
        intents.push(Intent::Help);
    }
    intents
}

/// The object of new work after `opener`: the words after an action verb that follows it
/// directly ("let's plan the team offsite" → "the team offsite"), or `None`.
fn work_after(text: &str, opener: &str) -> Option<String> {
    let rest = words_after(text, opener)?;
    ACTION_VERBS.iter().find_map(|verb| {
        let object = rest.strip_prefix(verb)?.strip_prefix(' ')?;
        Some(object.to_string())
    })
}

/// Lowercase, with typographic apostrophes made plain and whitespace collapsed.
pub(crate) fn normalise(text: &str) -> String {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `phrase` occurs in `text` starting and ending at word boundaries.
fn contains_phrase(text: &str, phrase: &str) -> bool {
    let phrase = phrase.trim_end();
    let mut from = 0;
    while let Some(found) = text[from..].find(phrase) {
        let start = from + found;
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '\'');
        if boundary(before) && boundary(after) {
            return true;
        }
        from = start + phrase.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The words after the first occurrence of `phrase` (at a word start), up to the end of the
/// clause.
fn words_after(text: &str, phrase: &str) -> Option<String> {
    let mut from = 0;
    let start = loop {
        let found = from + text[from..].find(phrase)?;
        let at_word_start = text[..found]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        if at_word_start {
            break found + phrase.len();
        }
        from = found + 1;
    };
    let rest = &text[start..];
    let mut end = rest
        .find(['.', ',', ';', ':', '!', '?', '(', '\n'])
        .unwrap_or(rest.len());
    for separator in [
        " - ",
        " — ",
        " so ",
        " because ",
        " and then ",
        " since ",
        " which ",
    ] {
        if let Some(at) = rest[..end].find(separator) {
            end = at;
        }
    }
    Some(rest[..end].trim().to_string())
}

fn trim_fillers(words: &str) -> String {
    let mut words: Vec<&str> = words.split_whitespace().collect();
    while words.first().is_some_and(|w| LEADING_FILLERS.contains(w)) {
        words.remove(0);
    }
    words.truncate(MAX_NAME_WORDS);
    while words.len() > 1 && words.last().is_some_and(|w| TRAILING_FILLERS.contains(w)) {
        words.pop();
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intents(text: &str) -> Vec<Intent> {
        detect_intents(text)
    }

    #[test]
    fn opening_phrases_give_a_clean_name() {
        for (text, name) in [
            (
                "Let's work on the auth bug: users get 401 after an hour.",
                "auth bug",
            ),
            ("Can you help me with my CSV import?", "csv import"),
            ("Let’s work on the billing export now.", "billing export"),
            (
                "I need help with the deploy pipeline - it fails on main",
                "deploy pipeline",
            ),
            (
                "let's work on a very long name for an effort here",
                "very long name",
            ),
        ] {
            assert_eq!(
                intents(text),
                vec![Intent::Open { name: name.into() }],
                "{text}"
            );
        }
    }

    #[test]
    fn closing_phrases_are_whole_words() {
        for text in [
            "Done.",
            "That's resolved, thanks.",
            "OK, we're done with the auth bug.",
            "The export is finished and shipped; we are finished here.",
        ] {
            assert!(
                matches!(intents(text).first(), Some(Intent::Close { .. })),
                "{text}"
            );
        }
        for text in [
            "What have we done so far?",
            "Is it undone?",
            "The job is unresolved.",
        ] {
            assert!(
                !intents(text)
                    .iter()
                    .any(|i| matches!(i, Intent::Close { .. })),
                "{text}"
            );
        }
    }

    #[test]
    fn several_intents_come_in_acting_order() {
        let found = intents("We're done here. Back to the auth bug, and let's work on docs.");
        assert!(matches!(found[0], Intent::Close { .. }));
        assert_eq!(
            found[1],
            Intent::Switch {
                target: "auth bug".into()
            }
        );
        assert_eq!(
            found[2],
            Intent::Open {
                name: "docs".into()
            }
        );
    }

    #[test]
    fn recall_collapse_and_status() {
        assert_eq!(
            intents("Remind me exactly how we fixed the token expiry?"),
            vec![Intent::Recall {
                query: "Remind me exactly how we fixed the token expiry?".into(),
                details: true
            }]
        );
        assert_eq!(
            intents("What did we decide about the cache?"),
            vec![Intent::Recall {
                query: "What did we decide about the cache?".into(),
                details: false
            }]
        );
        assert_eq!(
            intents("Remind me of the details of the billing export rounding."),
            vec![Intent::Recall {
                query: "Remind me of the details of the billing export rounding.".into(),
                details: true
            }]
        );
        // A statement of what was decided is a fact, not a question about the past.
        assert_eq!(intents("We decided to set the TTL to 86400."), vec![]);
        assert_eq!(intents("Got it, thanks."), vec![Intent::Collapse]);
        assert_eq!(intents("What's the status?"), vec![Intent::Status]);
        assert_eq!(intents("The logs show a timeout at 30 s."), vec![]);
    }
}
