//! The extractive summary: a few sentences of an effort's own conversation, chosen so that the
//! summary keeps what the effort came to (the outcome), the latest value of each fact, and the
//! problem when there is room.
//!
//! Everyone concludes an effort in their own words ("all sorted, we split the bundle", "Done.
//! Splitting the bundle fixed it.", "We split the bundle. … That's resolved."), so the outcome
//! is not found from fixed phrases but from kinds of words: completion and decision verbs
//! ("fixed", "went with", "booked", "turned out"), not negated, not asked about and not
//! hypothetical. The last such sentence is the outcome; when it says nothing of its own ("That's
//! resolved."), the sentences around it say what was resolved.

use crate::{clip_words, is_salient, split_sentences, words};
use std::collections::{BTreeMap, BTreeSet};

/// Target length of the extractive summary, in words. Summaries in the specification run 30–50
/// tokens; a little more room keeps identifiers intact.
pub const EXTRACTIVE_WORD_BUDGET: usize = 60;

/// Who wrote a message of the conversation being summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The person: the goal, the facts and the closing are usually theirs.
    Person,
    /// The assistant (or any other writer).
    Assistant,
}

/// Completion and decision words: a sentence with one (not negated, not hypothetical, not a
/// question) states an outcome.
const OUTCOME_WORDS: &[&str] = &[
    "agreed",
    "approved",
    "booked",
    "bought",
    "chose",
    "chosen",
    "completed",
    "concluded",
    "confirmed",
    "culprit",
    "decided",
    "decision",
    "deployed",
    "downgraded",
    "final",
    "finalised",
    "finalized",
    "fixed",
    "fixes",
    "merged",
    "nailed",
    "opted",
    "ordered",
    "picked",
    "pinned",
    "replaced",
    "reserved",
    "resolved",
    "scheduled",
    "selected",
    "settled",
    "shipped",
    "signed",
    "solution",
    "solved",
    "sorted",
    "succeeded",
    "switched",
    "upgraded",
    "worked",
    "works",
];

/// Multi-word outcome phrases; they weigh more than a single word because they are rarely used
/// for anything else.
const OUTCOME_PHRASES: &[&[&str]] = &[
    &["all", "good"],
    &["all", "set"],
    &["did", "it"],
    &["did", "the", "trick"],
    &["ended", "up"],
    &["final", "choice"],
    &["fixed", "by"],
    &["fixed", "it"],
    &["go", "with"],
    &["going", "with"],
    &["good", "to", "go"],
    &["got", "it", "working"],
    &["root", "cause"],
    &["settle", "on"],
    &["settled", "on"],
    &["stick", "with"],
    &["sticking", "with"],
    &["the", "answer"],
    &["the", "fix"],
    &["turned", "out"],
    &["was", "the", "culprit"],
    &["was", "the", "issue"],
    &["was", "the", "problem"],
    &["went", "with"],
    &["working", "again"],
    &["working", "now"],
    &["works", "again"],
    &["works", "now"],
];

/// Words that only end an effort ("done", "wrap it up"): a sentence with one closes, but says
/// what was achieved only if it has words of its own.
const CLOSING_WORDS: &[&str] = &[
    "close", "closed", "closing", "done", "finished", "over", "wrap", "wrapped",
];

/// Words that, shortly before an outcome word, deny it ("didn't fix it", "not resolved").
const NEGATIONS: &[&str] = &[
    "cannot", "hardly", "never", "no", "nobody", "not", "nothing", "without",
];

/// Words that, shortly before an outcome word, make it a wish, a plan or a condition rather
/// than a fact ("if that fixed it", "we need to decide", "hopefully resolved").
const HYPOTHETICALS: &[&str] = &[
    "could",
    "hope",
    "hopefully",
    "if",
    "maybe",
    "might",
    "need",
    "needs",
    "once",
    "perhaps",
    "should",
    "try",
    "trying",
    "unless",
    "until",
    "want",
    "wants",
    "when",
    "whether",
    "would",
];

/// Words that say a value was changed: a later fact with one replaces the earlier statement of
/// the same thing even when neither has a number.
const CHANGE_WORDS: &[&str] = &[
    "actually",
    "bump",
    "bumped",
    "change",
    "changed",
    "changing",
    "correction",
    "increase",
    "increased",
    "instead",
    "lower",
    "lowered",
    "raise",
    "raised",
    "rather",
    "reduce",
    "reduced",
    "replace",
    "scratch",
    "switch",
    "switched",
    "update",
    "updated",
];

/// Words that carry no content of their own in a closing ("great, that's all sorted now,
/// thanks!") besides the outcome, closing, negation and change words above.
const FILLER_WORDS: &[&str] = &[
    "above",
    "absolutely",
    "again",
    "awesome",
    "case",
    "cheers",
    "conclude",
    "cool",
    "deal",
    "effort",
    "everything",
    "finally",
    "fine",
    "fully",
    "good",
    "great",
    "help",
    "helped",
    "helping",
    "issue",
    "issues",
    "looks",
    "mark",
    "matter",
    "news",
    "noted",
    "nice",
    "officially",
    "okay",
    "perfect",
    "problem",
    "problems",
    "see",
    "set",
    "sounds",
    "sure",
    "stuff",
    "task",
    "thing",
    "things",
    "topic",
    "totally",
    "trick",
    "understood",
    "wait",
    "working",
    "yeah",
    "yep",
];

/// Units: two values in the same unit are not the same fact for that alone.
const UNIT_WORDS: &[&str] = &[
    "days", "dollars", "euros", "hours", "minutes", "months", "percent", "people", "pounds",
    "seconds", "times", "weeks", "years",
];

/// Words that make a sentence a statement of a fact ("the venue is the community hall").
const COPULAS: &[&str] = &[
    "is", "are", "was", "were", "it's", "that's", "costs", "equals",
];

/// How many words before an outcome word a negation or a hypothetical still applies.
const QUALIFIER_REACH: usize = 4;

/// One sentence of the conversation, read once.
struct Sentence<'a> {
    text: &'a str,
    /// Index of its message.
    message: usize,
    person: bool,
    /// Salient words that are neither the effort's name nor outcome, closing or filler words:
    /// what the sentence says of its own.
    content: BTreeSet<String>,
    /// Its content words without numbers and units, and with the name's words: what a fact is
    /// about, to tell whether a later sentence states the same fact again.
    subject: BTreeSet<String>,
    /// Whether it states a number (a value).
    value: bool,
    /// The units of its numbers: the letters right after a number, or the word after it
    /// ("2 MB", "900ms", "3 nights").
    units: BTreeSet<String>,
    /// Whether it states a fact ("… is …") rather than a goal or a question.
    fact: bool,
    /// Whether it says a value was changed ("actually", "instead").
    change: bool,
    /// Whether it points back at something said before ("make it 250", "change that to 9").
    refers_back: bool,
    /// How strongly it states an outcome: 0 none, 1 a closing word, 2 an outcome word, 3 an
    /// outcome phrase.
    outcome: u8,
    /// Whether it asks, proposes or guesses ("that should help", "maybe the cache?") rather
    /// than reports.
    tentative: bool,
    /// How many words it has.
    length: usize,
}

impl<'a> Sentence<'a> {
    fn read(text: &'a str, message: usize, person: bool, name_words: &BTreeSet<String>) -> Self {
        let all: Vec<String> = words(text).collect();
        let question = text.trim_end().ends_with('?');
        let outcome = if question { 0 } else { outcome_strength(&all) };
        let value = all.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
        let content: BTreeSet<String> = all
            .iter()
            .filter(|w| {
                (is_salient(w) || w.chars().any(|c| c.is_ascii_digit()))
                    && !name_words.contains(*w)
                    && !is_non_content(w)
            })
            .cloned()
            .collect();
        let subject: BTreeSet<String> = all
            .iter()
            .filter(|w| {
                is_salient(w)
                    && w.chars().all(char::is_alphabetic)
                    && !is_non_content(w)
                    && !UNIT_WORDS.contains(&w.as_str())
            })
            .cloned()
            .collect();
        let mut units = BTreeSet::new();
        for (at, word) in all.iter().enumerate() {
            if !word.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let suffix: String = word
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',')
                .to_string();
            let next = all
                .get(at + 1)
                .filter(|w| w.chars().all(char::is_alphabetic));
            match (suffix.is_empty(), next) {
                (false, _) => units.insert(suffix),
                (true, Some(next)) => units.insert(next.clone()),
                (true, None) => false,
            };
        }
        Sentence {
            text,
            units,
            message,
            person,
            content,
            subject,
            value,
            fact: !question && all.iter().any(|w| COPULAS.contains(&w.as_str())),
            change: !question && all.iter().any(|w| CHANGE_WORDS.contains(&w.as_str())),
            outcome,
            refers_back: all
                .iter()
                .any(|w| matches!(w.as_str(), "it" | "that" | "this" | "them" | "those")),
            tentative: question || all.iter().any(|w| HYPOTHETICALS.contains(&w.as_str())),
            length: all.len(),
        }
    }

    /// Whether it has words of its own besides the effort's name and how it closes.
    fn has_content(&self) -> bool {
        !self.content.is_empty()
    }
}

/// Whether a word says nothing of the effort's subject in a closing.
fn is_non_content(word: &str) -> bool {
    [
        OUTCOME_WORDS,
        CLOSING_WORDS,
        NEGATIONS,
        CHANGE_WORDS,
        FILLER_WORDS,
    ]
    .iter()
    .any(|list| list.contains(&word))
        || OUTCOME_PHRASES.iter().any(|phrase| phrase.contains(&word))
}

/// Whether a sentence states an outcome: a completion or decision word or phrase ("fixed",
/// "went with", "booked", "turned out") that is not negated, hypothetical or asked about.
///
/// # Examples
/// ```
/// assert!(ccm_text::states_outcome("Splitting the bundle fixed it."));
/// assert!(ccm_text::states_outcome("We went with the blue logo."));
/// assert!(!ccm_text::states_outcome("Splitting the bundle didn't fix it."));
/// assert!(!ccm_text::states_outcome("Did splitting the bundle fix it?"));
/// assert!(!ccm_text::states_outcome("If we split the bundle, it should be resolved."));
/// ```
pub fn states_outcome(sentence: &str) -> bool {
    let all: Vec<String> = words(sentence).collect();
    !sentence.trim_end().ends_with('?') && outcome_strength(&all) >= 2
}

/// How strongly the words of a sentence state an outcome (see [`Sentence::outcome`]). An
/// outcome word counts only when no negation or hypothetical stands shortly before it.
fn outcome_strength(all: &[String]) -> u8 {
    let qualified = |at: usize| {
        all[at.saturating_sub(QUALIFIER_REACH)..at].iter().any(|w| {
            NEGATIONS.contains(&w.as_str())
                || HYPOTHETICALS.contains(&w.as_str())
                || w.ends_with("n't")
        })
    };
    let mut strength = 0;
    for at in 0..all.len() {
        let word = all[at].as_str();
        let found = if OUTCOME_PHRASES.iter().any(|phrase| {
            all.len() - at >= phrase.len()
                && phrase.iter().zip(&all[at..]).all(|(p, w)| *p == w.as_str())
        }) {
            3
        } else if OUTCOME_WORDS.contains(&word) {
            2
        } else if CLOSING_WORDS.contains(&word) {
            1
        } else {
            0
        };
        if found > strength && !qualified(at) {
            strength = found;
        }
    }
    strength
}

/// Whether the later sentence `later` states again the fact of `earlier` with another value:
/// both have numbers and share enough of what they are about, or `later` has a number and
/// nothing else ("make it 250") right after `earlier`'s number, or `later` says it changes a
/// fact that `earlier` stated ("actually, let's change the venue to the library"), or a
/// decision that `earlier` took ("we chose Postgres" … "scratch that, we went with SQLite").
fn replaces(
    earlier: &Sentence<'_>,
    later: &Sentence<'_>,
    nearest_value: bool,
    next_outcome: bool,
) -> bool {
    let shared = earlier.subject.intersection(&later.subject).count();
    let same_subject = shared > 0 && shared * 3 >= earlier.subject.len();
    // A number with nothing else restates the number just before it only when it says so:
    // "make it 250" or "250 instead" does, a second row of a table does not.
    let anaphoric = later.refers_back || later.change || later.outcome >= 2;
    // Numbers in different units ("2 MB", "900 ms") are values of different facts.
    let comparable = earlier.units.is_empty()
        || later.units.is_empty()
        || !earlier.units.is_disjoint(&later.units);
    let revalued = earlier.value
        && later.value
        && comparable
        && (same_subject || (later.subject.is_empty() && nearest_value && anaphoric));
    // A decision taken back ("we chose Postgres" … "actually we switched to SQLite"): the
    // later one says it changes something, and it is about the same thing or the very next
    // decision.
    let redecided = earlier.outcome >= 2
        && later.outcome >= 2
        && later.change
        && (same_subject || next_outcome);
    revalued || redecided || (earlier.fact && later.change && same_subject)
}

/// The sentences of an effort's conversation worth keeping, in their original order, within
/// about `budget` words; empty only when the conversation has no words worth keeping.
///
/// The outcome comes first: the last sentence that states one (a completion or decision word
/// that is not negated, hypothetical or asked about), or, when that sentence only closes
/// ("That's resolved."), the sentences after it in its message, else those before it, else the
/// nearest earlier message with words of its own. Then the rest of the closing exchange (the
/// last two messages of the person and what lies between), then the problem (the person's first
/// sentence with words of its own), then other outcomes, latest first, then the sentences that
/// carry the conversation's most frequent words and most values. A sentence whose fact a later
/// sentence states again with another value ("the budget is 200" … "make it 250") is left out
/// whatever its rank, so the summary never reports a value that was replaced.
pub fn summary_sentences(name: &str, messages: &[(Speaker, &str)], budget: usize) -> Vec<String> {
    let name_words: BTreeSet<String> = words(name)
        .flat_map(|w| {
            w.split(|c: char| !c.is_alphanumeric())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .chain(words(name))
        .collect();
    let sentences: Vec<Sentence<'_>> = messages
        .iter()
        .enumerate()
        .flat_map(|(index, (speaker, text))| {
            let person = *speaker == Speaker::Person;
            let name_words = &name_words;
            split_sentences(text)
                .into_iter()
                .map(move |s| Sentence::read(s, index, person, name_words))
        })
        .collect();
    let replaced: Vec<bool> = (0..sentences.len())
        .map(|i| {
            let next_value = (i + 1..sentences.len()).find(|&j| sentences[j].value);
            let next_outcome = (i + 1..sentences.len()).find(|&j| sentences[j].outcome >= 2);
            (i + 1..sentences.len()).any(|j| {
                replaces(
                    &sentences[i],
                    &sentences[j],
                    next_value == Some(j),
                    next_outcome == Some(j),
                )
            })
        })
        .collect();
    let eligible = |i: usize| !replaced[i] && sentences[i].has_content();

    // In order of importance: the outcome, the closing exchange, the problem, other outcomes,
    // then what carries the conversation's words.
    // The problem is the person's first sentence with words of its own that does not close
    // anything: a first message often ends the previous effort before starting this one ("the
    // export is finished; let's work on the docs site").
    let states_problem = |i: usize| sentences[i].person && sentences[i].has_content();
    let problem: Vec<usize> = (0..sentences.len())
        .find(|&i| states_problem(i) && sentences[i].outcome == 0)
        .or_else(|| (0..sentences.len()).find(|&i| states_problem(i)))
        .filter(|&i| !replaced[i])
        .into_iter()
        .collect();
    let other_outcomes: Vec<usize> = (0..sentences.len())
        .rev()
        .filter(|&i| sentences[i].outcome >= 2 && eligible(i))
        .collect();
    let tiers: [Vec<usize>; 5] = [
        outcome_sentences(&sentences, &eligible),
        closing_exchange(&sentences, &eligible),
        problem,
        other_outcomes,
        by_frequency(&sentences, &eligible),
    ];

    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    let mut used = 0;
    for (tier, indices) in tiers.iter().enumerate() {
        for &index in indices {
            if chosen.contains(&index) {
                continue;
            }
            let length = sentences[index].length;
            // The outcome is kept whatever its length (cut to the budget below); everything
            // else only where it fits.
            if tier > 0 && used + length > budget {
                continue;
            }
            used += length;
            chosen.insert(index);
        }
    }
    // A conversation of asides and closings still says something: its first sentence with a
    // salient word, so that the summary is never empty while anything was said.
    if chosen.is_empty() {
        chosen.extend(
            (0..sentences.len()).find(|&i| words(sentences[i].text).any(|w| is_salient(&w))),
        );
    }
    chosen
        .into_iter()
        .map(|i| clip_words(sentences[i].text, budget))
        .collect()
}

/// The sentences that state the outcome (see [`summary_sentences`]); empty when no sentence
/// states one.
fn outcome_sentences(sentences: &[Sentence<'_>], eligible: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let Some(last) = (0..sentences.len())
        .rev()
        .find(|&i| sentences[i].outcome > 0 && (eligible(i) || !sentences[i].has_content()))
    else {
        return Vec::new();
    };
    if eligible(last) {
        return vec![last];
    }
    let message = sentences[last].message;
    let after: Vec<usize> = (last + 1..sentences.len())
        .take_while(|&i| sentences[i].message == message)
        .filter(|&i| eligible(i))
        .collect();
    if !after.is_empty() {
        return after;
    }
    if let Some(before) = (0..last)
        .rev()
        .take_while(|&i| sentences[i].message == message)
        .find(|&i| eligible(i))
    {
        return vec![before];
    }
    // An earlier message said what the closing confirms: the nearest sentence that reports
    // rather than asks or guesses ("that should help" acknowledges a fix without naming it),
    // within the last few messages, else simply the nearest sentence with words of its own.
    let reach = message.saturating_sub(LOOKBACK_MESSAGES);
    let earlier = || {
        (0..last)
            .rev()
            .take_while(move |&i| sentences[i].message >= reach)
            .filter(|&i| eligible(i))
    };
    earlier()
        .find(|&i| !sentences[i].tentative)
        .or_else(|| earlier().next())
        .or_else(|| (0..last).rev().find(|&i| eligible(i)))
        .into_iter()
        .collect()
}

/// How many messages before a closing that only confirms are searched for what it confirms.
const LOOKBACK_MESSAGES: usize = 3;

/// The sentences of the closing exchange, latest first: from the person's second-to-last
/// message on (after the first). Closing messages weigh more than the discussion before them.
fn closing_exchange(sentences: &[Sentence<'_>], eligible: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let mut person_messages: Vec<usize> = sentences
        .iter()
        .filter(|s| s.person)
        .map(|s| s.message)
        .collect();
    person_messages.dedup();
    // The first message is the problem's (ranked as such) and may end the previous effort
    // before starting this one, so it is part of the closing exchange only when it is the
    // only message of the person.
    let from = match person_messages.len() {
        0 => return Vec::new(),
        1 => person_messages[0],
        n => person_messages[(n - 2).max(1)],
    };
    (0..sentences.len())
        .rev()
        .take_while(|&i| sentences[i].message >= from)
        .filter(|&i| eligible(i))
        .collect()
}

/// The eligible sentences by how much they carry, best first: the frequencies of their distinct
/// salient words plus two for each value or identifier, normalised by length so one rambling
/// sentence cannot take the whole budget. Sentences without a value and without a word that
/// recurs in the conversation are left out. Earlier sentences win ties, so the result is
/// deterministic.
fn by_frequency(sentences: &[Sentence<'_>], eligible: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let mut frequency: BTreeMap<String, u64> = BTreeMap::new();
    for sentence in sentences {
        for word in words(sentence.text).filter(|w| is_salient(w)) {
            *frequency.entry(word).or_insert(0) += 1;
        }
    }
    let mut scored: Vec<(u64, usize)> = (0..sentences.len())
        .filter(|&i| eligible(i))
        .map(|i| {
            let text = sentences[i].text;
            let distinct: BTreeSet<String> = words(text).filter(|w| is_salient(w)).collect();
            let identifiers = text
                .split_whitespace()
                .filter(|token| {
                    let bare = token.trim_matches(|c: char| !c.is_alphanumeric());
                    bare.chars().any(|c| c.is_ascii_digit())
                        || bare.contains(['_', '/', '.', '='])
                        || token.contains('`')
                })
                .count() as u64;
            // A sentence none of whose words recurs and that holds no value is an aside
            // ("nice weather today"): it carries nothing of the conversation's subject.
            let recurs = distinct.iter().any(|w| frequency[w] > 1);
            let total: u64 = distinct.iter().map(|w| frequency[w]).sum::<u64>() + 2 * identifiers;
            let score = if recurs || identifiers > 0 {
                total * 100 / (sentences[i].length as u64 + 5)
            } else {
                0
            };
            (score, i)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, i)| i).collect()
}

/// A deterministic extractive summary of an effort's conversation, used when no summary is
/// given: [`summary_sentences`] within [`EXTRACTIVE_WORD_BUDGET`] words of texts that are all
/// taken as the person's, after the effort's name, so it is never empty.
///
/// # Examples
/// ```
/// let summary = ccm_text::extractive_summary(
///     "login page",
///     &[
///         "Why is the login page slow on mobile?",
///         "The JS bundle is 2 MB.",
///         "We split the bundle into route chunks.",
///         "That's resolved.",
///     ],
/// );
/// assert!(summary.starts_with("login page: "));
/// assert!(summary.contains("We split the bundle into route chunks."));
/// ```
pub fn extractive_summary(name: &str, texts: &[&str]) -> String {
    let messages: Vec<(Speaker, &str)> = texts.iter().map(|t| (Speaker::Person, *t)).collect();
    extractive_summary_of_conversation(name, &messages)
}

/// [`extractive_summary`] of a conversation whose messages say who wrote them: the problem is
/// the person's, and a closing that only confirms looks for what it confirms in the person's
/// words as well as the assistant's.
pub fn extractive_summary_of_conversation(name: &str, messages: &[(Speaker, &str)]) -> String {
    let body = summary_sentences(name, messages, EXTRACTIVE_WORD_BUDGET);
    if body.is_empty() {
        format!("{name}: (no conversation was recorded for this effort)")
    } else {
        format!("{name}: {}", body.join(" "))
    }
}
