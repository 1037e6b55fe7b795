//! The offline demo model: a deterministic stand-in for an LLM that needs no network and no
//! key, so the app, the CLI and the examples work out of the box.
//!
//! It answers an [`LlmRequest`] the way a well-behaved model would, by reading patterns of
//! ordinary phrasing in the person's last message ([`detect_intents`]) and the state of the
//! session ([`SessionFacts`]):
//!
//! | the person says | the model calls |
//! |---|---|
//! | "let's work on …", "I'm trying to figure out why …", "we have a problem with …", "my … keeps crashing" | `open_effort`; `switch_effort` if an open effort is already about it; nothing if the active one is |
//! | a call for help or an intention about something no effort shares a word with ("need a packing list for camping", "the seating plan is doing my head in, help") | `open_effort` named by what it is about |
//! | "done", "party's sorted", "splitting the bundle fixed it", "close this" | `close_effort` on the effort named or talked about, else the active one (after `switch_effort` when it is another, so the message joins its log), without a summary of its own, so the engine asks for one |
//! | "back to …", "let's get back to the … problem", "re the …", "about the … again" | `switch_effort` to the open effort named, `reopen_effort` for a concluded one |
//! | a statement clearly about another open effort (its name, or words of its latest messages, and nothing of the active one's) | `switch_effort` to it, and it says why |
//! | asks for details of a concluded effort ("remind me exactly …") | `expand_effort` |
//! | asks about earlier work that no summary in memory mentions | `search_efforts`, then `expand_effort` on the best hit if details were asked for |
//! | "got it", "that's enough" | `collapse_effort` on every expanded effort |
//! | "status", "what are we working on" | `effort_status` |
//! | "help", "what is CCM?", "what can you do?" | nothing: it explains CCM and what to try ([`HELP_TEXT`]) |
//! | something that fits two efforts equally ("the page is fixed" with two pages open) | nothing: it asks which one is meant |
//! | a question it has no reading for | nothing: it says it could not tell what is wanted, and where the message was kept |
//!
//! Names are matched by content words, lightly stemmed, so "the login page problem" finds the
//! effort "login page slow on mobile", and a slip of the keyboard ("logn page") still names
//! it. Negations ("it's not fixed yet", "don't close this"), questions ("is it done?"), and
//! what is only expected, wished, conditional, due by a deadline, long past or reported ("it
//! should be done by Friday", "if it's fixed on Android we can close it", "we fixed a similar
//! bug last year", "remind me how we fixed it", "my boss asked if it was done") trigger
//! nothing; a move put off ("the login page can wait") does not move.
//!
//! After the tool results come back it writes a short plain answer saying what it did (and,
//! for recall, what the summary or the expanded log says). It answers summary requests with a
//! summary it composes from the effort's log ([`compose_summary`]).
//!
//! # How it is labelled
//!
//! Its model name is [`OFFLINE_MODEL_NAME`] and [`OFFLINE_MODEL_LABEL`] is the text a user
//! interface shows next to its replies. The reply to the first turn of a conversation also
//! starts with [`OFFLINE_MARKER`]. Only that one: the marker's words would otherwise sit in
//! every stored message, where they would count as a reference to any summary that happened to
//! contain them.
//!
//! # Example
//!
//! ```
//! use ccm_engine::{run_instant_turn, EngineSettings};
//! use ccm_engine::offline::{OfflineModel, SessionFacts, OFFLINE_MODEL_NAME};
//! use ccm_core::{Config, Session};
//!
//! let mut session = Session::new(Config::default()).unwrap();
//! let model = OfflineModel::new();
//! let settings = EngineSettings::new(OFFLINE_MODEL_NAME);
//! let result = run_instant_turn(
//!     &mut session,
//!     "Let's work on the auth bug: users get 401 after an hour.",
//!     0,
//!     settings,
//!     |request, session| Ok(model.respond(request, &SessionFacts::of(session))),
//! )
//! .unwrap();
//! assert!(result.reply.starts_with("--- Started effort: auth-bug ---"));
//! assert!(result.model_text.starts_with("(offline demo model)"));
//! assert_eq!(session.efforts().active_id(), Some("auth-bug"));
//! ```

mod intent;
mod summarize;

pub use intent::{detect_intents, Intent};
pub use summarize::compose_summary;

use crate::{LlmRequest, RequestPurpose};
use ccm_core::text::{self, PreparedText};
use ccm_core::tools::name as tool;
use ccm_core::Session;
use ccm_provider::{
    FinishReason, ProviderResponse, StreamDelta, ToolCall, ToolChoice, WireMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The model name the offline demo model goes by (in settings, requests and metrics).
pub const OFFLINE_MODEL_NAME: &str = "ccm-offline-demo";

/// What a user interface shows as the name of the offline demo model.
pub const OFFLINE_MODEL_LABEL: &str = "Offline demo model (deterministic, no network, no API key)";

/// The words the first reply of a conversation starts with.
pub const OFFLINE_MARKER: &str = "(offline demo model)";

/// One effort as the offline model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffortFact {
    /// The effort's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its summary, when it is concluded.
    pub summary: Option<String>,
    /// The content words of its description, its latest messages from the person and its
    /// summary, lightly stemmed: what tells that a message is about this effort although it
    /// does not name it ("the bundle split worked" for an effort about a slow login page).
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// What the offline model may know about the session: what a real model reads from its
/// context (open efforts, summaries in memory, expanded logs), as plain data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFacts {
    /// The turn in progress (1 for the first turn of a conversation).
    pub turn: u64,
    /// The active effort's id.
    pub active: Option<String>,
    /// Open efforts in opening order.
    pub open: Vec<EffortFact>,
    /// Concluded efforts whose summaries are in working memory, expanded ones included.
    pub concluded: Vec<EffortFact>,
    /// Ids of the expanded efforts.
    pub expanded: Vec<String>,
}

impl SessionFacts {
    /// The facts of `session` as it stands.
    pub fn of(session: &Session) -> SessionFacts {
        let fact = |id: &str| {
            session.efforts().get(id).map(|effort| {
                // What an open effort is about: its latest messages from the person, without
                // the ones that only steered the conversation ("remind me of the billing
                // export…" asked while this effort was active is about another effort). A
                // concluded effort is known by its summary, which was written to stand for it.
                let mut about: Vec<&str> = Vec::new();
                if effort.status == ccm_core::EffortStatus::Open {
                    about.extend(
                        effort
                            .messages
                            .iter()
                            .rev()
                            .filter(|m| m.role == ccm_core::Role::User)
                            .map(|m| m.content.as_str())
                            .filter(|text| !steers(text))
                            .take(RECENT_MESSAGES),
                    );
                }
                about.extend(effort.description.as_deref());
                about.extend(effort.summary.as_ref().map(|s| s.text.as_str()));
                EffortFact {
                    id: effort.id.clone(),
                    name: effort.name.clone(),
                    summary: effort.summary.as_ref().map(|s| s.text.clone()),
                    keywords: intent::topic_words(&about.join("\n")).into_iter().collect(),
                }
            })
        };
        SessionFacts {
            turn: session.turn(),
            active: session.efforts().active_id().map(str::to_string),
            open: session
                .efforts()
                .open_ids()
                .into_iter()
                .filter_map(fact)
                .collect(),
            concluded: session
                .efforts()
                .summary_ids_in_memory()
                .into_iter()
                .filter_map(fact)
                .collect(),
            expanded: session
                .efforts()
                .expanded_ids()
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }

    fn is_expanded(&self, id: &str) -> bool {
        self.expanded.iter().any(|e| e == id)
    }
}

/// The result of one tool call, as read back from a request's messages.
#[derive(Debug, Clone)]
struct ToolResultSeen {
    name: String,
    result: Value,
}

/// The deterministic offline demo model; see the [module documentation](self).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OfflineModel;

impl OfflineModel {
    /// The model. It has no settings: the same request and facts always give the same answer.
    pub fn new() -> OfflineModel {
        OfflineModel
    }

    /// Answers a request: tool calls, or a short plain answer, or a summary.
    pub fn respond(&self, request: &LlmRequest, facts: &SessionFacts) -> ProviderResponse {
        if let RequestPurpose::Summary { .. } = request.purpose {
            let text = request
                .messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    WireMessage::User(text) => Some(text.as_str()),
                    _ => None,
                })
                .unwrap_or_default();
            return text_response(compose_summary(text));
        }
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(m, WireMessage::User(_)));
        let user_text = match last_user.map(|i| &request.messages[i]) {
            Some(WireMessage::User(text)) => text.as_str(),
            _ => "",
        };
        let exchange = &request.messages[last_user.map_or(0, |i| i + 1)..];
        let results = tool_results(exchange);
        let intents = detect_intents(user_text);
        let may_call_tools =
            request.options.tool_choice != ToolChoice::None && !request.tools.is_empty();
        let round = exchange
            .iter()
            .filter(|m| matches!(m, WireMessage::Assistant { .. }))
            .count()
            + 1;

        if may_call_tools {
            let calls = if results.is_empty() {
                plan(&intents, facts, user_text).calls
            } else {
                follow_up_calls(&intents, &results, facts)
            };
            if !calls.is_empty() {
                return ProviderResponse {
                    text: String::new(),
                    tool_calls: calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, (name, arguments))| ToolCall {
                            id: format!("offline_call_{round}_{}", i + 1),
                            name: name.to_string(),
                            arguments: arguments.to_string(),
                        })
                        .collect(),
                    finish_reason: FinishReason::ToolCalls,
                    usage: None,
                };
            }
        }

        // The context before the person's message: the logs a recall answer quotes from.
        let context = &request.messages[..last_user.unwrap_or(0)];
        let mut answer = if results.is_empty() {
            plain_answer(&intents, facts, context, user_text)
        } else {
            answer_from_results(&results, &intents, context, user_text)
        };
        if facts.turn <= 1 {
            answer = format!("{OFFLINE_MARKER} {answer}");
        }
        text_response(answer)
    }

    /// The answer to `request` and the deltas a streaming provider would send for it: none
    /// unless the request asks for streaming and its text is the reply the person waits for
    /// (summary requests never show their text as a reply).
    pub fn answer(
        &self,
        request: &LlmRequest,
        facts: &SessionFacts,
    ) -> (ProviderResponse, Vec<StreamDelta>) {
        let response = self.respond(request, facts);
        let deltas = if request.options.stream && request.purpose.is_answer() {
            OfflineModel::stream_deltas(&response)
        } else {
            Vec::new()
        };
        (response, deltas)
    }

    /// The deltas a streaming transport would show for `response`: its text a word at a time
    /// (spaces kept, so they join back into the text), then one start per tool call. Lets a
    /// user interface exercise its streaming path with the offline model.
    pub fn stream_deltas(response: &ProviderResponse) -> Vec<StreamDelta> {
        let mut deltas: Vec<StreamDelta> = response
            .text
            .split_inclusive(' ')
            .map(|word| StreamDelta::Text(word.to_string()))
            .collect();
        deltas.extend(
            response
                .tool_calls
                .iter()
                .map(|call| StreamDelta::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                }),
        );
        deltas
    }
}

fn text_response(text: String) -> ProviderResponse {
    ProviderResponse {
        text,
        tool_calls: Vec::new(),
        finish_reason: FinishReason::Stop,
        usage: None,
    }
}

/// The results of this turn's tool calls, in order.
fn tool_results(exchange: &[WireMessage]) -> Vec<ToolResultSeen> {
    exchange
        .iter()
        .filter_map(|m| match m {
            WireMessage::ToolResult { name, content, .. } => Some(ToolResultSeen {
                name: name.clone(),
                result: serde_json::from_str(content).unwrap_or(Value::Null),
            }),
            _ => None,
        })
        .collect()
}

/// Whether a message only steers the conversation (asks about past work, switches, asks for
/// the status or for help): its words are about another effort or about none.
fn steers(text: &str) -> bool {
    detect_intents(text)
        .iter()
        .any(|i| !matches!(i, Intent::Open { .. } | Intent::Close { .. }))
}

/// How many of an effort's latest messages from the person tell what it is about.
const RECENT_MESSAGES: usize = 6;

/// How well a text fits an effort: two points for each word of its name the text shares (all
/// of them when it names the id), one for each word of its latest messages or summary, at
/// most three of those, so that a long log does not outweigh a name.
fn fit(words: &BTreeSet<String>, prepared: &PreparedText, effort: &EffortFact) -> usize {
    let (by_name, by_log) = fit_parts(words, prepared, effort);
    2 * by_name + by_log
}

/// The words of an effort's name a text shares, and the words of its log (at most three).
fn fit_parts(
    words: &BTreeSet<String>,
    prepared: &PreparedText,
    effort: &EffortFact,
) -> (usize, usize) {
    let name = intent::topic_words(&effort.name);
    // A word of the name typed with a slip ("logn page") still names it.
    let mut by_name = words
        .iter()
        .filter(|w| {
            name.contains(*w)
                || name
                    .iter()
                    .any(|n| n.is_ascii() && w.is_ascii() && intent::slip_of(w, n))
        })
        .count();
    if prepared.mentions_id_as_words(&effort.id) {
        by_name = by_name.max(name.len().max(1));
    }
    let by_log = effort
        .keywords
        .iter()
        .filter(|k| words.contains(*k) && !name.contains(*k))
        .count()
        .min(3);
    (by_name, by_log)
}

/// Which of the candidates a text is about.
#[derive(Debug)]
enum Choice<'a> {
    /// This one, clearly.
    One(&'a EffortFact),
    /// These fit equally well.
    Tie(Vec<&'a EffortFact>),
    /// None fits well enough.
    Neither,
}

/// The candidate `text` fits best with at least `min` points ([`fit`]), or the ones tied for
/// best.
fn choose<'a>(
    text: &str,
    candidates: impl IntoIterator<Item = &'a EffortFact>,
    min: usize,
) -> Choice<'a> {
    let words = intent::topic_words(text);
    let prepared = PreparedText::new(text);
    choose_by(&words, &prepared, candidates, min)
}

fn choose_by<'a>(
    words: &BTreeSet<String>,
    prepared: &PreparedText,
    candidates: impl IntoIterator<Item = &'a EffortFact>,
    min: usize,
) -> Choice<'a> {
    let scored: Vec<(usize, &EffortFact)> = candidates
        .into_iter()
        .map(|e| (fit(words, prepared, e), e))
        .filter(|(score, _)| *score >= min.max(1))
        .collect();
    let Some(best) = scored.iter().map(|(score, _)| *score).max() else {
        return Choice::Neither;
    };
    let top: Vec<&EffortFact> = scored
        .into_iter()
        .filter(|(score, _)| *score == best)
        .map(|(_, e)| e)
        .collect();
    match top.as_slice() {
        [one] => Choice::One(one),
        _ => Choice::Tie(top),
    }
}

/// The effort among `candidates` that `text` names, when one clearly does.
fn named_effort<'a>(text: &str, candidates: &'a [EffortFact]) -> Option<&'a EffortFact> {
    match choose(text, candidates, 2) {
        Choice::One(effort) => Some(effort),
        _ => None,
    }
}

/// What the model does about a message before any tool ran: the calls, or a question back when
/// it cannot tell which effort is meant, and what it has to say about what it did not do.
#[derive(Debug, Default)]
struct Plan {
    calls: Vec<(&'static str, Value)>,
    /// A clarifying question, asked instead of acting.
    ask: Option<String>,
    /// Sentences about what was understood but needed no call.
    notes: Vec<String>,
}

/// "a", "a or b", "a, b or c".
fn either(efforts: &[&EffortFact]) -> String {
    let ids: Vec<&str> = efforts.iter().map(|e| e.id.as_str()).collect();
    match ids.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The question for a move that names several efforts equally well.
fn which_effort(tied: &[&EffortFact]) -> String {
    format!(
        "Which effort do you mean: {}? Say \"back to\" and its name.",
        either(tied)
    )
}

/// The plan for the person's message, given what the session holds.
fn plan(intents: &[Intent], facts: &SessionFacts, user_text: &str) -> Plan {
    let mut plan = Plan::default();
    let asks_about_the_past = intents.iter().any(|i| matches!(i, Intent::Recall { .. }));
    // Whether a switch of this message found its effort: new work it also names is then that
    // effort's, not another one.
    let mut moved = false;
    let mut closing: Vec<String> = Vec::new();
    let mut active = facts.active.clone();
    let still_open = |closing: &[String]| -> Vec<&EffortFact> {
        facts
            .open
            .iter()
            .filter(|e| !closing.contains(&e.id))
            .collect()
    };
    for intent in intents {
        match intent {
            Intent::Close { mention, specific } => {
                let open = still_open(&closing);
                let target: Option<&EffortFact> = if *specific {
                    // What is done must be named by the effort's name ("the shed is
                    // finished"); words of its log are not enough ("the cake order is
                    // confirmed" is one step of the party).
                    let words = intent::topic_words(mention);
                    let prepared = PreparedText::new(mention);
                    let named = open
                        .iter()
                        .copied()
                        .filter(|e| fit_parts(&words, &prepared, e).0 > 0);
                    match choose_by(&words, &prepared, named, 2) {
                        Choice::One(effort) => Some(effort),
                        Choice::Tie(tied) => {
                            plan.ask = Some(close_question(&tied));
                            None
                        }
                        // "The receipts are sorted" reports a step, not the end of an effort.
                        Choice::Neither => None,
                    }
                } else {
                    generic_close_target(intents, &open, active.as_deref(), user_text, &mut plan)
                };
                if let Some(effort) = target {
                    // The message goes into the log of the effort it concludes, so that its
                    // summary keeps the outcome: a switch first when it is not the active one.
                    if active.as_deref() != Some(effort.id.as_str()) {
                        plan.calls
                            .push((tool::SWITCH_EFFORT, json!({ "id": effort.id })));
                    }
                    plan.calls
                        .push((tool::CLOSE_EFFORT, json!({ "id": effort.id })));
                    closing.push(effort.id.clone());
                    active = None;
                }
            }
            Intent::Switch { target, explicit } => {
                let open = still_open(&closing);
                // A soft cue ("pick up the kids") needs a clear name; "go back to the cake"
                // may name an effort by a word of its log.
                let min = if *explicit { 1 } else { 2 };
                match choose(target, open.iter().copied(), min) {
                    Choice::One(effort) if active.as_deref() == Some(effort.id.as_str()) => {
                        plan.notes.push(format!("We are already on {}.", effort.id));
                    }
                    Choice::One(effort) => {
                        plan.calls
                            .push((tool::SWITCH_EFFORT, json!({ "id": effort.id })));
                        active = Some(effort.id.clone());
                        moved = true;
                    }
                    Choice::Tie(tied) => plan.ask = Some(which_effort(&tied)),
                    // "Where were we with the tax return?" about a concluded effort asks what
                    // came of it; a move that is also a question about the past only goes
                    // between open efforts.
                    Choice::Neither if !*explicit && asks_about_the_past => {}
                    Choice::Neither => match choose(target, &facts.concluded, min) {
                        Choice::One(effort) => {
                            plan.calls
                                .push((tool::REOPEN_EFFORT, json!({ "id": effort.id })));
                            active = Some(effort.id.clone());
                            moved = true;
                        }
                        Choice::Tie(tied) => plan.ask = Some(which_effort(&tied)),
                        Choice::Neither if *explicit => plan.notes.push(format!(
                            "I found no open or concluded effort called \"{target}\", so I \
                             could not tell what you want me to do."
                        )),
                        Choice::Neither => {}
                    },
                }
            }
            Intent::Open { name, explicit } => {
                if moved || plan.ask.is_some() {
                    continue;
                }
                let id = text::slugify(name);
                let open = still_open(&closing);
                let same = open.iter().find(|e| e.id == id).copied().or_else(|| {
                    // Work asked for by a shorter form of an open effort's name ("the login
                    // page" for "login page slow on mobile") is that effort.
                    let words = intent::topic_words(name);
                    if *explicit {
                        let named: Vec<&EffortFact> = open
                            .iter()
                            .filter(|e| {
                                !words.is_empty() && words.is_subset(&intent::topic_words(&e.name))
                            })
                            .copied()
                            .collect();
                        return match named.as_slice() {
                            [one] => Some(*one),
                            [] => None,
                            several => {
                                plan.ask = Some(which_effort(several));
                                None
                            }
                        };
                    }
                    // Work described rather than asked for by name that is already what an open
                    // effort is about continues it: the active effort when half of the work's
                    // words are its own, another when it fits clearly (its name, or two words of
                    // its latest messages).
                    let prepared = PreparedText::new(name);
                    let active_fits = open.iter().find(|e| {
                        let (by_name, by_log) = fit_parts(&words, &prepared, e);
                        active.as_deref() == Some(e.id.as_str())
                            && by_name + by_log > 0
                            && 2 * (by_name + by_log) >= words.len()
                    });
                    // Another effort needs half of the work's words too: "the office
                    // Christmas party" is not the birthday party.
                    let half = |e: &&EffortFact| {
                        let (by_name, by_log) = fit_parts(&words, &prepared, e);
                        2 * (by_name + by_log) >= words.len()
                    };
                    active_fits.copied().or(
                        match choose_by(&words, &prepared, open.iter().copied().filter(half), 2) {
                            Choice::One(effort) => Some(effort),
                            _ => None,
                        },
                    )
                });
                if plan.ask.is_some() {
                    continue;
                }
                match same {
                    Some(effort) if active.as_deref() != Some(effort.id.as_str()) => {
                        plan.calls
                            .push((tool::SWITCH_EFFORT, json!({ "id": effort.id })));
                        active = Some(effort.id.clone());
                    }
                    Some(effort) => plan.notes.push(format!(
                        "That is part of {}, so I kept it there.",
                        effort.id
                    )),
                    None => {
                        plan.calls
                            .push((tool::OPEN_EFFORT, json!({ "name": name })));
                        active = Some(id);
                    }
                }
            }
            Intent::Collapse => {
                for id in &facts.expanded {
                    plan.calls
                        .push((tool::COLLAPSE_EFFORT, json!({ "id": id })));
                }
            }
            Intent::Recall { query, details } => {
                let in_context = facts
                    .open
                    .iter()
                    .chain(facts.concluded.iter().filter(|e| facts.is_expanded(&e.id)));
                let in_context: Vec<EffortFact> = in_context.cloned().collect();
                if named_effort(query, &in_context).is_some() {
                    // Its full log is already in the context: nothing to load.
                    continue;
                }
                match named_effort(query, &facts.concluded) {
                    Some(effort) if *details => {
                        plan.calls
                            .push((tool::EXPAND_EFFORT, json!({ "id": effort.id })));
                    }
                    // The summary in memory answers a question without "details".
                    Some(_) => {}
                    None => plan
                        .calls
                        .push((tool::SEARCH_EFFORTS, json!({ "query": query }))),
                }
            }
            Intent::Status => plan.calls.push((tool::EFFORT_STATUS, json!({}))),
            // Answered in words: what CCM is and what to try.
            Intent::Help => {}
        }
    }
    // A soft cue that named no effort ("14 kids now") leaves the message to be filed like any
    // other.
    let unresolved = plan.calls.is_empty()
        && plan.ask.is_none()
        && plan.notes.is_empty()
        && intents.iter().all(|i| {
            matches!(
                i,
                Intent::Switch {
                    explicit: false,
                    ..
                }
            )
        });
    if intents.is_empty() || unresolved {
        file_where_it_belongs(facts, user_text, &mut plan);
    }
    if intents.is_empty() && plan.calls.is_empty() && plan.ask.is_none() {
        open_new_work(facts, user_text, &mut plan);
    }
    plan
}

/// The effort a closing without a noun of its own concludes: the one the rest of the message is
/// about ("all sorted, we split the bundle"), else the active one; a question back when that
/// cannot be told.
fn generic_close_target<'a>(
    intents: &[Intent],
    open: &[&'a EffortFact],
    active: Option<&str>,
    user_text: &str,
    plan: &mut Plan,
) -> Option<&'a EffortFact> {
    // The words naming new work or a switch in the same message are not about what is done.
    let mut words = intent::topic_words(user_text);
    for other in intents {
        if let Intent::Open { name: t, .. } | Intent::Switch { target: t, .. } = other {
            for word in intent::topic_words(t) {
                words.remove(&word);
            }
        }
    }
    let prepared = PreparedText::new(user_text);
    let active_effort = open.iter().find(|e| Some(e.id.as_str()) == active).copied();
    let active_fit = active_effort.map_or(0, |e| fit(&words, &prepared, e));
    let others = open
        .iter()
        .copied()
        .filter(|e| Some(e.id.as_str()) != active);
    let others: Vec<&EffortFact> = others.collect();
    match choose_by(&words, &prepared, others.iter().copied(), active_fit + 1) {
        Choice::One(effort) => return Some(effort),
        Choice::Tie(tied) => {
            plan.ask = Some(close_question(&tied));
            return None;
        }
        Choice::Neither => {}
    }
    // The rest of the message fits another effort as well as the active one ("all sorted: the
    // cake and the bundle"): which one is done cannot be told.
    if let Some(effort) = active_effort.filter(|_| active_fit > 0) {
        let mut tied = vec![effort];
        tied.extend(
            others
                .iter()
                .copied()
                .filter(|e| fit(&words, &prepared, e) == active_fit),
        );
        if tied.len() > 1 {
            plan.ask = Some(close_question(&tied));
            return None;
        }
    }
    if let Some(effort) = active_effort {
        return Some(effort);
    }
    match open {
        [] => {
            plan.notes
                .push("There is no open effort to conclude.".to_string());
            None
        }
        [only] => Some(only),
        several => {
            plan.ask = Some(close_question(several));
            None
        }
    }
}

fn close_question(efforts: &[&EffortFact]) -> String {
    let example = efforts.first().map_or("", |e| e.name.as_str());
    format!(
        "Which effort is done: {}? Say, for example, \"{example} is done\", and I will conclude it.",
        either(efforts)
    )
}

/// A message with no request of its own goes into the active effort, unless it is clearly about
/// another open one (its name, or several words of its latest messages, and nothing of the
/// active one's): then the model switches there first, so it is filed where it belongs, or asks
/// when two fit equally.
fn file_where_it_belongs(facts: &SessionFacts, user_text: &str, plan: &mut Plan) {
    let words = intent::topic_words(user_text);
    // A question about another effort ("is the party sorted?") asks; it does not move on.
    if words.is_empty()
        || facts.open.is_empty()
        || user_text.contains('?')
        || intent::declines(user_text)
    {
        return;
    }
    let prepared = PreparedText::new(user_text);
    let active = facts
        .open
        .iter()
        .find(|e| facts.active.as_deref() == Some(e.id.as_str()));
    let active_fit = active.map_or(0, |e| fit(&words, &prepared, e));
    // With an active effort the message needs a clear reason to go elsewhere; without one, any
    // name it shares is reason enough.
    let min = match active {
        Some(_) if active_fit == 0 => 2,
        Some(_) => (2 * active_fit + 2).max(4),
        None => 2,
    };
    // One shared word of a name is not enough ("return the drill" is not about the tax
    // return): two words of it, or one and a word of its log, or two words of its log.
    let clear = |e: &&EffortFact| {
        let (by_name, by_log) = fit_parts(&words, &prepared, e);
        2 * by_name + by_log >= 3 || by_log >= 2
    };
    let others = facts
        .open
        .iter()
        .filter(|e| Some(*e) != active)
        .filter(clear);
    match choose_by(&words, &prepared, others, min) {
        Choice::One(effort) => plan
            .calls
            .push((tool::SWITCH_EFFORT, json!({ "id": effort.id }))),
        Choice::Tie(tied) => {
            let kept = facts
                .active
                .as_deref()
                .map_or("the conversation".to_string(), str::to_string);
            plan.ask = Some(format!(
                "Is this about {}? I kept it in {kept} for now; say \"back to\" and the effort's \
                 name to move on there.",
                either(&tied)
            ));
        }
        Choice::Neither => {}
    }
}

/// New work that only a call for help or an intention marks ([`intent::new_work`]) is opened
/// when nothing the session knows shares a word with it: "we should do a piñata too" while
/// planning the party is a detail of the party, "need a packing list for camping" is new.
fn open_new_work(facts: &SessionFacts, user_text: &str, plan: &mut Plan) {
    let Some(name) = intent::new_work(user_text) else {
        return;
    };
    let words = intent::topic_words(user_text);
    let prepared = PreparedText::new(user_text);
    let known = facts.open.iter().chain(&facts.concluded).any(|e| {
        let (by_name, by_log) = fit_parts(&words, &prepared, e);
        by_name + by_log > 0
    });
    if !known && !intent::topic_words(&name).is_empty() {
        plan.calls
            .push((tool::OPEN_EFFORT, json!({ "name": name })));
    }
}

/// A second round after the results: expanding the best search hit when details were asked
/// for and nothing was expanded yet in this turn.
fn follow_up_calls(
    intents: &[Intent],
    results: &[ToolResultSeen],
    facts: &SessionFacts,
) -> Vec<(&'static str, Value)> {
    let wants_details = intents
        .iter()
        .any(|i| matches!(i, Intent::Recall { details: true, .. }));
    if !wants_details || results.iter().any(|r| r.name == tool::EXPAND_EFFORT) {
        return Vec::new();
    }
    let best_hit = results
        .iter()
        .filter(|r| r.name == tool::SEARCH_EFFORTS)
        .find_map(|r| r.result["results"].get(0))
        .and_then(|hit| hit["id"].as_str());
    match best_hit {
        Some(id) if !facts.is_expanded(id) && !facts.open.iter().any(|e| e.id == id) => {
            vec![(tool::EXPAND_EFFORT, json!({ "id": id }))]
        }
        _ => Vec::new(),
    }
}

/// The answer after this turn's tool calls: one short sentence per call.
fn answer_from_results(
    results: &[ToolResultSeen],
    intents: &[Intent],
    messages: &[WireMessage],
    user_text: &str,
) -> String {
    let mut sentences: Vec<String> = Vec::new();
    let asked_to_move = intents
        .iter()
        .any(|i| matches!(i, Intent::Switch { .. } | Intent::Open { .. }));
    for seen in results {
        let id = seen.result["id"].as_str().unwrap_or_default();
        if let Some(error) = seen.result["error"].as_str() {
            sentences.push(format!("{} did not work: {error}.", seen.name));
            continue;
        }
        let sentence = match seen.name.as_str() {
            tool::OPEN_EFFORT => format!("Started effort {id}; tell me more about it."),
            tool::CLOSE_EFFORT => format!("Concluded {id}; its summary is in memory now."),
            // A switch nobody asked for is explained: the message was about that effort, or
            // it is the one a closing concluded.
            tool::SWITCH_EFFORT if !asked_to_move => {
                if results.iter().any(|r| r.name == tool::CLOSE_EFFORT) {
                    continue;
                }
                format!("Your message is about {id}, so I switched to it and filed it there.")
            }
            tool::SWITCH_EFFORT => format!("Switched to {id}."),
            tool::REOPEN_EFFORT => format!("Reopened {id} with its full log."),
            // The banner names the effort. Naming it again would count as a reference and
            // keep its summary in memory longer than the person's own words warrant.
            tool::COLLAPSE_EFFORT => {
                "Collapsed the expanded log; its summary stands in again.".to_string()
            }
            tool::EXPAND_EFFORT => match best_log_line(messages, id, user_text) {
                Some(line) => format!("Loaded the full log of {id}. From it: \"{line}\""),
                None => format!("Loaded the full log of {id}."),
            },
            tool::SEARCH_EFFORTS => search_sentence(&seen.result, user_text),
            tool::EFFORT_STATUS => status_sentence(&seen.result),
            other => format!("Ran {other}."),
        };
        sentences.push(sentence);
    }
    if sentences.is_empty() {
        return plain_answer(intents, &SessionFacts::default(), messages, user_text);
    }
    sentences.join(" ")
}

/// What a search found, in one or two sentences: the best effort with its summary (when the
/// query is about it), and the stored line that best matches the question, quoted.
fn search_sentence(result: &Value, question: &str) -> String {
    let line = best_evidence_line(result, question);
    let quoted = |line: &str| format!("From what was said: \"{line}\"");
    match (result["results"].get(0), line) {
        (Some(hit), line) => {
            let id = hit["id"].as_str().unwrap_or_default();
            let found = match hit["summary"].as_str().filter(|s| !s.is_empty()) {
                Some(summary) => format!("Found {id}: {summary}"),
                None => format!("Found {id}."),
            };
            match line {
                Some(line) => format!("{found} {}", quoted(&line)),
                None => found,
            }
        }
        (None, Some(line)) => quoted(&line),
        (None, None) => "Nothing stored matches that.".to_string(),
    }
}

/// The line of a search result's messages that shares the most keywords with the question
/// (the first of equals), without its role.
fn best_evidence_line(result: &Value, question: &str) -> Option<String> {
    let keywords = text::extract_keywords(question);
    let mut best: Option<(usize, String)> = None;
    let groups = result["messages"].as_array()?;
    for line in groups
        .iter()
        .flat_map(|g| g["excerpts"].as_array().into_iter().flatten())
        .flat_map(|e| e["lines"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
    {
        let said = line.split_once(": ").map_or(line, |(_, rest)| rest).trim();
        let overlap = PreparedText::new(said).keyword_overlap(&keywords);
        if overlap > 0 && best.as_ref().is_none_or(|(most, _)| overlap > *most) {
            best = Some((overlap, said.to_string()));
        }
    }
    best.map(|(_, line)| text::clip_words(&line, 40))
}

/// The status in one sentence: the open efforts by id, the others counted. Concluded efforts
/// are not named, because naming them counts as a reference and would keep every summary in
/// memory just because someone asked for the status.
fn status_sentence(status: &Value) -> String {
    let efforts = status["efforts"].as_array().cloned().unwrap_or_default();
    let state = |e: &Value| e["state"].as_str().unwrap_or_default().to_string();
    let open: Vec<String> = efforts
        .iter()
        .filter(|e| matches!(state(e).as_str(), "active" | "open"))
        .map(|e| format!("{} ({})", e["id"].as_str().unwrap_or_default(), state(e)))
        .collect();
    let expanded = efforts.iter().filter(|e| state(e) == "expanded").count();
    let concluded = efforts.iter().filter(|e| state(e) == "concluded").count();
    let open = if open.is_empty() {
        "nothing is open".to_string()
    } else {
        format!("open: {}", open.join(", "))
    };
    format!(
        "Status: {open}; {concluded} concluded in memory, {expanded} expanded, {} out of memory.",
        status["evicted_count"].as_u64().unwrap_or(0)
    )
}

/// What the model says when asked for help: what CCM does, what it understands, what to try.
pub const HELP_TEXT: &str = "CCM (Cognitive Context Management) keeps a long conversation \
within the model's context window: it files the chat into efforts, one per piece of work, and \
when an effort is concluded only its short summary stays in memory, to be expanded again when \
you ask for details. I am the offline demo model: I follow simple phrasings rather than free \
language, and I cannot answer questions about the world. Try: \"Let's work on the launch \
plan\" to open an effort, \"Back to the launch plan\" to switch to it, \"That's done\" to \
conclude it with a summary, \"What did we decide about the launch plan?\" to ask about past \
work, and \"status\" to list your efforts.";

/// The answer when no tool was called.
fn plain_answer(
    intents: &[Intent],
    facts: &SessionFacts,
    messages: &[WireMessage],
    user_text: &str,
) -> String {
    if intents.contains(&Intent::Help) {
        return HELP_TEXT.to_string();
    }
    let planned = plan(intents, facts, user_text);
    if let Some(question) = planned.ask {
        return question;
    }
    for intent in intents {
        if let Intent::Recall { query, .. } = intent {
            let expanded: Vec<EffortFact> = facts
                .concluded
                .iter()
                .filter(|e| facts.is_expanded(&e.id))
                .cloned()
                .collect();
            for candidates in [&facts.open, &expanded] {
                if let Some(effort) = named_effort(query, candidates) {
                    if let Some(line) = best_log_line(messages, &effort.id, user_text) {
                        return format!("From {}: \"{line}\"", effort.id);
                    }
                }
            }
            if let Some(effort) = named_effort(query, &facts.concluded) {
                return format!(
                    "From {}: {}",
                    effort.id,
                    effort
                        .summary
                        .as_deref()
                        .unwrap_or("no summary was stored.")
                );
            }
        }
    }
    let kept_in = match &facts.active {
        Some(active) => format!("it is kept in {active}"),
        None => "it is kept in the conversation".to_string(),
    };
    if !planned.notes.is_empty() {
        let mut said = planned.notes.join(" ");
        if said.starts_with("I found no") {
            said.push_str(&format!(
                " Your message is noted; {kept_in}. Say \"help\" to see what I understand."
            ));
        }
        return said;
    }
    // A question or request the model has no reading for is said to be one, rather than
    // answered with a "Noted" that pretends it was understood.
    if intents.is_empty() && user_text.contains('?') {
        return format!(
            "I could not tell what you want me to do with that: I am the offline demo model, so \
             I only manage efforts and cannot answer other questions. Your message is noted; \
             {kept_in}. Say \"help\" to see what I understand."
        );
    }
    match &facts.active {
        Some(active) => format!("Noted, that goes into {active}."),
        None => "Noted.".to_string(),
    }
}

/// The person's message in an effort's log (as the request shows it) that shares the most
/// words with the question, the earliest among equals.
fn best_log_line(messages: &[WireMessage], id: &str, question: &str) -> Option<String> {
    let header = format!("[Effort log: {id}]");
    let start = messages
        .iter()
        .position(|m| matches!(m, WireMessage::System(text) if text.starts_with(&header)))?;
    // The words naming the effort pick the log, not the line within it.
    let naming: Vec<&str> = id.split('-').collect();
    let question: Vec<String> = text::extract_keywords(question)
        .into_iter()
        .filter(|word| !naming.contains(&word.as_str()))
        .collect();
    let mut best: Option<(usize, &str)> = None;
    for message in messages[start + 1..].iter() {
        match message {
            WireMessage::User(text) => {
                let overlap = PreparedText::new(text).keyword_overlap(&question);
                if best.is_none_or(|(most, _)| overlap > most) {
                    best = Some((overlap, text));
                }
            }
            WireMessage::Assistant { .. } => {}
            // The next log (or any other system text) ends this one.
            _ => break,
        }
    }
    best.map(|(_, text)| text.trim().to_string())
}
