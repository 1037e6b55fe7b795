//! Playing a LoCoMo conversation through a CCM session, and asking its questions the ways a
//! model with CCM's tools would.
//!
//! **Replay.** Each dated session is one effort: opened on its first exchange, concluded with
//! the extractive summary on its last. Consecutive dialog turns are paired into exchanges (the
//! first speaker's turn as the user message, the next as the answer; a session with an odd
//! number of turns ends with an empty answer). A message reads `Speaker: text`, as a
//! two-person transcript does, and keeps the session's date as its time (30 seconds apart),
//! so recalled messages show when they were said.
//!
//! **Questions.** Every question is asked at the end of its conversation: it begins a turn,
//! the way under test runs (nothing, `search_efforts`, `recall`, `expand_effort` of the top
//! hits), and the request the model would send next is checked: a question counts when the
//! text of every evidence turn is in it. The turn is then aborted, so every question sees the
//! same session.

use super::locomo::Conversation;
use ccm_core::{Config, ContextMode, Session};
use std::collections::BTreeMap;

/// A stored message of the replay, for the peers (which read the same stored messages).
#[derive(Debug, Clone)]
pub struct StoredText {
    /// The text as stored.
    pub text: String,
    /// Its tokens as stored.
    pub tokens: u32,
    /// The effort (dated session) it belongs to.
    pub effort: u32,
}

/// A conversation played into a session.
pub struct Played {
    /// The session at the end of the conversation.
    pub session: Session,
    /// Every stored message, in order.
    pub messages: Vec<StoredText>,
    /// Dialog turn id to the position of its message in `messages`.
    pub position_of: BTreeMap<String, usize>,
}

fn message_text(speaker: &str, text: &str) -> String {
    format!("{speaker}: {text}")
}

/// Plays `conversation` into a new session with `config`.
pub fn play(conversation: &Conversation, config: Config) -> Result<Played, String> {
    let mut session = Session::new(config).map_err(|e| e.to_string())?;
    let mut messages = Vec::new();
    let mut position_of = BTreeMap::new();
    let fail =
        |what: &str, e: &dyn std::fmt::Display| format!("{}: {what}: {e}", conversation.name);
    for (effort, dated) in conversation.sessions.iter().enumerate() {
        let exchanges: Vec<_> = dated.turns.chunks(2).collect();
        let start_ms = dated.at_ms.unwrap_or(0);
        for (k, pair) in exchanges.iter().enumerate() {
            let at = start_ms + k as u64 * 30_000;
            let user = message_text(&pair[0].speaker, &pair[0].text);
            let answer = pair
                .get(1)
                .map(|t| message_text(&t.speaker, &t.text))
                .unwrap_or_default();
            session
                .begin_turn(&user, at)
                .map_err(|e| fail("begin_turn", &e))?;
            if k == 0 {
                let args = serde_json::json!({
                    "name": format!("session {}", dated.number),
                    "description": dated.date,
                });
                let opened = session.execute_tool("open_effort", &args.to_string());
                if !opened.ok {
                    return Err(fail("open_effort", &opened.result));
                }
            }
            if k + 1 == exchanges.len() {
                let closed = session.execute_tool("close_effort", "{}");
                if !closed.ok {
                    return Err(fail("close_effort", &closed.result));
                }
            }
            let first = messages.len();
            session
                .end_turn(&answer, at + 15_000)
                .map_err(|e| fail("end_turn", &e))?;
            for (offset, turn) in pair.iter().enumerate() {
                position_of.insert(turn.id.clone(), first + offset);
            }
            let stored = session.efforts().get(&format!("session-{}", dated.number));
            let log = stored.map(|e| &e.messages[..]).unwrap_or(&[]);
            for message in &log[log.len().saturating_sub(2)..] {
                messages.push(StoredText {
                    text: message.content.clone(),
                    tokens: message.tokens,
                    effort: effort as u32,
                });
            }
        }
    }
    Ok(Played {
        session,
        messages,
        position_of,
    })
}

/// How a question is put to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The request for the question, before any tool call (the context mode's automatic tier).
    Automatic,
    /// `search_efforts` with the question; the next request holds its result.
    Search,
    /// `recall` with the question; the next request holds the recalled excerpts.
    Recall,
    /// `search_efforts`, then `expand_effort` of its top `k` efforts.
    Expand(usize),
}

/// What the model would read next, and what it costs.
#[derive(Debug, Clone)]
pub struct Asked {
    /// Every text the next request holds: the plan's messages and the turn's tool results.
    pub texts: Vec<String>,
    /// Tokens of the next request: the plan, the tool calls and their results.
    pub tokens: u64,
    /// Tokens of the plan of the question before any tool call, without automatic recall: the
    /// context a peer adds its own evidence to.
    pub base_tokens: u64,
    /// Tokens of the tool calls and their results.
    pub tool_tokens: u64,
}

/// Asks `question` the way `way`, and puts the session back as it was.
pub fn ask(session: &mut Session, question: &str, way: Way) -> Result<Asked, String> {
    let counter = session.counter().clone();
    // The context a peer starts from: the same request without any recall of CCM's.
    let mode = session.config().context_mode;
    set_mode(session, ContextMode::Off)?;
    session.begin_turn(question, 0).map_err(|e| e.to_string())?;
    let base_tokens = session.build_plan().totals.context_tokens;
    session.abort_turn().map_err(|e| e.to_string())?;
    set_mode(session, mode)?;

    session.begin_turn(question, 0).map_err(|e| e.to_string())?;
    let mut texts = Vec::new();
    let mut tool_tokens = 0u64;
    let mut call = |session: &mut Session, name: &str, args: String, texts: &mut Vec<String>| {
        let outcome = session.execute_tool(name, &args);
        let result = outcome.result_json();
        tool_tokens += u64::from(counter.count(name)) + u64::from(counter.count(&args));
        tool_tokens += u64::from(counter.count(&result));
        collect_strings(&outcome.result, texts);
        outcome
    };
    let query = serde_json::json!({ "query": question }).to_string();
    match way {
        Way::Automatic => {}
        Way::Search => {
            call(session, "search_efforts", query, &mut texts);
        }
        Way::Recall => {
            call(session, "recall", query, &mut texts);
        }
        Way::Expand(k) => {
            let found = call(session, "search_efforts", query, &mut texts);
            let ids: Vec<String> = found.result["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|hit| hit["id"].as_str().map(str::to_string))
                .take(k)
                .collect();
            for id in ids {
                call(
                    session,
                    "expand_effort",
                    serde_json::json!({ "id": id }).to_string(),
                    &mut texts,
                );
            }
        }
    }
    let plan = session.build_plan();
    texts.extend(plan.messages.iter().map(|m| m.content.clone()));
    let tokens = plan.totals.context_tokens + tool_tokens;
    session.abort_turn().map_err(|e| e.to_string())?;
    Ok(Asked {
        texts,
        tokens,
        base_tokens,
        tool_tokens,
    })
}

fn set_mode(session: &mut Session, mode: ContextMode) -> Result<(), String> {
    if session.config().context_mode == mode {
        return Ok(());
    }
    let config = Config {
        context_mode: mode,
        ..session.config().clone()
    };
    session.set_config(config).map_err(|e| e.to_string())
}

/// Every string inside a JSON value: the texts a tool result shows the model.
fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => out.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// Whether every evidence text is in what the model reads.
pub fn holds_all(texts: &[String], evidence: &[&str]) -> bool {
    evidence
        .iter()
        .all(|needle| texts.iter().any(|text| text.contains(needle)))
}
