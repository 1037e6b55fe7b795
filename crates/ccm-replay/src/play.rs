//! Plays a real conversation through a session, turn by turn, the way a host without an LLM
//! drives it, and measures what the session keeps in working memory.
//!
//! Effort segmentation: each split part of the conversation with two or more exchanges is one
//! effort with a neutral name (`sg part 3`, so no real text mentions its id by chance), opened
//! in the turn of its first exchange and concluded with the extractive summary in the turn of
//! its last; parts of one exchange stay ambient.

use crate::dataset::Conversation;
use ccm_core::text;
use ccm_core::{Config, Session};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// One turn as measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnPoint {
    /// The turn number.
    pub turn: u64,
    /// Tokens of the request the turn was answered with (its plan, with the user message).
    pub request_tokens: u64,
    /// Whether that request fit the request budget.
    pub within_budget: bool,
    /// The naive baseline after the turn: every stored message.
    pub naive_tokens: u64,
    /// Tokens of working memory after the turn: what the next turn starts from.
    pub working_tokens: u64,
    /// Summaries in working memory after the turn.
    pub resident_summaries: u64,
    /// Nanoseconds the core spent on the turn: begin, the request plan, the tool calls, end.
    pub nanos: u64,
}

/// Whether `search_efforts` finds an evicted effort from its own distinctive words.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecallProbe {
    /// The evicted effort.
    pub effort: String,
    /// The query: the effort's most distinctive words.
    pub query: String,
    /// Its 1-based rank among the hits, or `None` when it was not found.
    pub rank: Option<usize>,
}

/// Everything measured for one conversation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConversationResult {
    /// The conversation id.
    pub id: String,
    /// Exchanges played.
    pub exchanges: usize,
    /// Efforts opened.
    pub efforts: usize,
    /// One point per turn.
    pub points: Vec<TurnPoint>,
    /// Tokens of working memory at the end.
    pub end_working_tokens: u64,
    /// The naive baseline at the end.
    pub end_naive_tokens: u64,
    /// Summaries in working memory at the end.
    pub end_resident_summaries: u64,
    /// Tokens of the ambient window at the end.
    pub end_ambient_tokens: u64,
    /// Tokens of resident summaries at the end.
    pub end_summary_tokens: u64,
    /// The largest request of the run.
    pub peak_request_tokens: u64,
    /// One probe per effort out of working memory at the end.
    pub recall: Vec<RecallProbe>,
    /// Problems found by the checks (messages stored once with exact counts, the document's
    /// round trip); empty when everything held.
    pub problems: Vec<String>,
}

/// The neutral name of the effort that plays part `number` (1-based).
fn effort_name(number: usize) -> String {
    format!("sg part {number}")
}

/// Plays one conversation with `config`. With `exact` (a text's count as tiktoken gives it),
/// every stored count is checked against it; benchmarks that only time the turns pass `None`.
///
/// # Errors
/// A message when the session refuses the configuration or a step of the script (which would
/// be a bug: the script only does what is valid).
pub fn play(
    conversation: &Conversation,
    config: Config,
    exact: Option<&dyn Fn(&str) -> usize>,
) -> Result<ConversationResult, String> {
    let mut session = Session::new(config).map_err(|e| format!("configuration: {e}"))?;
    let budget = session.config().request_budget();
    let mut points = Vec::with_capacity(conversation.exchange_count());
    let mut clock_ms: u64 = 1_767_225_600_000;
    let mut efforts = 0;
    let fail = |turn: u64, what: &str, error: String| {
        format!(
            "conversation {}, turn {turn}: {what}: {error}",
            conversation.id
        )
    };
    for part in &conversation.parts {
        let as_effort = part.exchanges.len() >= 2;
        let last = part.exchanges.len() - 1;
        let name = as_effort.then(|| {
            efforts += 1;
            effort_name(efforts)
        });
        for (position, exchange) in part.exchanges.iter().enumerate() {
            clock_ms += 60_000;
            let started = Instant::now();
            let turn = session
                .begin_turn(&exchange.user, clock_ms)
                .map_err(|e| fail(session.turn() + 1, "begin_turn", e.to_string()))?;
            if let Some(name) = &name {
                let call = if position == 0 {
                    Some(("open_effort", serde_json::json!({ "name": name })))
                } else if position == last {
                    Some(("close_effort", serde_json::json!({})))
                } else {
                    None
                };
                if let Some((tool, arguments)) = call {
                    let outcome = session.execute_tool(tool, &arguments.to_string());
                    if !outcome.ok {
                        return Err(fail(turn, tool, outcome.result.to_string()));
                    }
                }
            }
            // The request a host would send now, recorded for the turn's telemetry as the
            // engine records each request it sends.
            let request = session.build_plan();
            session.record_request(&request, None);
            let report = session
                .end_turn(&exchange.assistant, clock_ms + 5_000)
                .map_err(|e| fail(turn, "end_turn", e.to_string()))?;
            let nanos = started.elapsed().as_nanos() as u64;
            points.push(TurnPoint {
                turn,
                request_tokens: request.totals.context_tokens,
                within_budget: request.totals.context_tokens <= budget
                    && !request.budget.mandatory_over_budget,
                naive_tokens: report.metrics.naive_tokens,
                working_tokens: report.metrics.next_context_tokens,
                resident_summaries: report.metrics.summaries_in_memory,
                nanos,
            });
        }
    }
    let plan = session.build_plan();
    let mut problems = check_messages(&session, conversation, exact);
    problems.extend(check_round_trip(&session));
    Ok(ConversationResult {
        id: conversation.id.clone(),
        exchanges: conversation.exchange_count(),
        efforts,
        end_working_tokens: plan.totals.context_tokens,
        end_naive_tokens: session.naive_tokens(),
        end_resident_summaries: points.last().map_or(0, |p| p.resident_summaries),
        end_ambient_tokens: plan.totals.ambient_tokens,
        end_summary_tokens: plan.totals.summary_tokens,
        peak_request_tokens: points.iter().map(|p| p.request_tokens).max().unwrap_or(0),
        recall: recall_probes(&session),
        points,
        problems,
    })
}

/// Every message of the conversation must be stored exactly once, in order, with the count
/// tiktoken gives it.
fn check_messages(
    session: &Session,
    conversation: &Conversation,
    exact: Option<&dyn Fn(&str) -> usize>,
) -> Vec<String> {
    let mut stored: Vec<&ccm_core::Message> = session
        .ambient()
        .messages()
        .iter()
        .chain(session.efforts().all().iter().flat_map(|e| &e.messages))
        .collect();
    stored.sort_by_key(|m| m.seq);
    let expected: Vec<&str> = conversation
        .parts
        .iter()
        .flat_map(|p| &p.exchanges)
        .flat_map(|e| [e.user.as_str(), e.assistant.as_str()])
        .collect();
    let mut problems = Vec::new();
    if stored.len() != expected.len() {
        problems.push(format!(
            "{} messages stored for {} in the conversation",
            stored.len(),
            expected.len()
        ));
    }
    for (position, (message, text)) in stored.iter().zip(&expected).enumerate() {
        if message.content != *text {
            problems.push(format!(
                "stored message {} differs from the source",
                position + 1
            ));
        }
        let Some(exact) = exact else { continue };
        let reference = exact(&message.content);
        if message.tokens as usize != reference {
            problems.push(format!(
                "stored message {} has {} tokens, tiktoken counts {reference}",
                position + 1,
                message.tokens
            ));
        }
    }
    problems.truncate(10);
    problems
}

/// The session document must survive export and import byte for byte.
fn check_round_trip(session: &Session) -> Vec<String> {
    let json = match session.to_json() {
        Ok(json) => json,
        Err(error) => return vec![format!("export failed: {error}")],
    };
    match Session::from_json(&json).and_then(|restored| restored.to_json()) {
        Ok(again) if again == json => Vec::new(),
        Ok(_) => vec!["the exported document changed after an import".to_string()],
        Err(error) => vec![format!("import failed: {error}")],
    }
}

/// Word frequencies of each log: salient words (not stopwords, three characters or more,
/// with a letter) and how often each occurs.
fn word_frequencies(logs: &[Vec<&str>]) -> Vec<BTreeMap<String, u32>> {
    logs.iter()
        .map(|texts| {
            let mut frequency = BTreeMap::new();
            for word in texts.iter().flat_map(|t| text::words(t)) {
                if text::is_salient(&word) && word.chars().any(char::is_alphabetic) {
                    *frequency.entry(word).or_insert(0u32) += 1;
                }
            }
            frequency
        })
        .collect()
}

/// For each log, the `count` words that set it apart from the other logs: term frequency in
/// the log (dampened) times inverse document frequency over all logs. What a person who
/// remembers a past discussion might type to find it.
pub fn distinctive_words(logs: &[Vec<&str>], count: usize) -> Vec<Vec<String>> {
    let frequencies = word_frequencies(logs);
    let mut document_frequency: BTreeMap<&str, u32> = BTreeMap::new();
    for set in &frequencies {
        for word in set.keys() {
            *document_frequency.entry(word).or_insert(0) += 1;
        }
    }
    let documents = logs.len() as f64;
    frequencies
        .iter()
        .map(|set| {
            let mut scored: Vec<(f64, &str)> = set
                .iter()
                .map(|(word, &tf)| {
                    let idf = (documents / f64::from(document_frequency[word.as_str()])).ln();
                    (f64::from(tf).ln_1p() * idf, word.as_str())
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            scored
                .into_iter()
                .take(count)
                .map(|(_, w)| w.to_string())
                .collect()
        })
        .collect()
}

/// Words of a query in a recall probe.
const QUERY_WORDS: usize = 4;

/// For every effort out of working memory: does searching for the effort's own distinctive
/// words rank it first, or in the top 3? The ranking is `search_efforts`' own, read without
/// its effects ([`Session::find_efforts`]).
fn recall_probes(session: &Session) -> Vec<RecallProbe> {
    let efforts = session.efforts();
    let logs: Vec<Vec<&str>> = efforts
        .all()
        .iter()
        .map(|e| e.messages.iter().map(|m| m.content.as_str()).collect())
        .collect();
    let evicted: BTreeSet<&str> = session.efforts().evicted_ids().into_iter().collect();
    let queries = distinctive_words(&logs, QUERY_WORDS);
    efforts
        .all()
        .iter()
        .zip(queries)
        .filter(|(effort, _)| evicted.contains(effort.id.as_str()))
        .map(|(effort, words)| {
            let query = words.join(" ");
            let rank = session
                .find_efforts(&query)
                .ok()
                .and_then(|found| found.results.iter().position(|hit| hit.id == effort.id))
                .map(|position| position + 1);
            RecallProbe {
                effort: effort.id.clone(),
                query,
                rank,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinctive_words_favour_what_one_log_says_often_and_others_never() {
        let logs = vec![
            vec![
                "the parser fails on nested brackets",
                "nested brackets again, parser",
            ],
            vec!["the parser is fine for flat input", "flat input works"],
        ];
        let words = distinctive_words(&logs, 2);
        assert_eq!(words[0], ["brackets", "nested"]);
        assert_eq!(words[1], ["flat", "input"]);
    }
}
