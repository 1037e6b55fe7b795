//! Plain data the components render, read from the core session in one place.
//!
//! Components never reach into a `ccm_core::Session`: the app derives these snapshots after
//! every change and hands them to the components as props. That keeps the components free of
//! domain rules (the core decides states, countdowns, reasons and totals; this module only
//! copies and labels them) and lets the component tests mount a view with hand-made data or
//! with a snapshot of a real session.

use ccm_core::metrics::{EffortEvent, EventKind};
use ccm_core::model::Role;
use ccm_core::pins::{LeaseScope, PinKind};
use ccm_core::plan::{ContextPlan, InclusionReason, Section, TtlState};
use ccm_core::session::{EffortState, EvidenceLog};
use ccm_core::{Effort, EffortStatus, Session, TurnMetrics};
use std::collections::BTreeMap;

/// What a person can do with an effort from the tier view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EffortAction {
    /// Make an open effort the active one.
    Switch,
    /// Conclude an open effort with a summary the person may edit.
    Conclude,
    /// Bring a concluded effort's raw log back into context.
    Expand,
    /// Take an expanded effort's raw log out of context again.
    Collapse,
    /// Open a concluded effort again.
    Reopen,
    /// Read the effort's whole raw log.
    ReadLog,
}

impl EffortAction {
    /// The button text.
    pub fn label(self) -> &'static str {
        match self {
            EffortAction::Switch => "Switch to",
            EffortAction::Conclude => "Conclude…",
            EffortAction::Expand => "Expand",
            EffortAction::Collapse => "Collapse",
            EffortAction::Reopen => "Reopen",
            EffortAction::ReadLog => "Read log",
        }
    }

    /// The `data-testid` suffix of the button.
    pub fn test_id(self) -> &'static str {
        match self {
            EffortAction::Switch => "switch",
            EffortAction::Conclude => "conclude",
            EffortAction::Expand => "expand",
            EffortAction::Collapse => "collapse",
            EffortAction::Reopen => "reopen",
            EffortAction::ReadLog => "read-log",
        }
    }

    /// The effort tool this action runs (`None` for reading a log).
    pub fn tool(self) -> Option<&'static str> {
        match self {
            EffortAction::Switch => Some("switch_effort"),
            EffortAction::Conclude => Some("close_effort"),
            EffortAction::Expand => Some("expand_effort"),
            EffortAction::Collapse => Some("collapse_effort"),
            EffortAction::Reopen => Some("reopen_effort"),
            EffortAction::ReadLog => None,
        }
    }
}

/// The buttons offered for an effort in a state. The core still checks every operation; this
/// only avoids offering buttons that could never succeed.
pub fn actions_for(state: EffortState) -> &'static [EffortAction] {
    match state {
        EffortState::Active => &[EffortAction::Conclude, EffortAction::ReadLog],
        EffortState::Open => &[
            EffortAction::Switch,
            EffortAction::Conclude,
            EffortAction::ReadLog,
        ],
        EffortState::Expanded => &[
            EffortAction::Collapse,
            EffortAction::Reopen,
            EffortAction::ReadLog,
        ],
        EffortState::Concluded | EffortState::Evicted => &[
            EffortAction::Expand,
            EffortAction::Reopen,
            EffortAction::ReadLog,
        ],
    }
}

/// The word shown for a state.
pub fn state_label(state: EffortState) -> &'static str {
    match state {
        EffortState::Active => "active",
        EffortState::Open => "open",
        EffortState::Expanded => "expanded",
        EffortState::Concluded => "in memory",
        EffortState::Evicted => "evicted",
    }
}

/// One effort as the tier view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffortRow {
    /// The effort's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Where it is.
    pub state: EffortState,
    /// Tokens of its raw log (header included).
    pub raw_tokens: u64,
    /// Tokens of its summary line, when concluded.
    pub summary_tokens: Option<u32>,
    /// Its summary, when concluded.
    pub summary: Option<String>,
    /// Messages in its raw log.
    pub messages: u64,
    /// Turns until it collapses by itself, when expanded.
    pub turns_until_auto_collapse: Option<u64>,
    /// Turns until its summary leaves working memory, when concluded and in memory.
    pub turns_until_eviction: Option<u64>,
    /// The turn it was opened in.
    pub opened_turn: u64,
    /// The turn it was last concluded in.
    pub concluded_turn: Option<u64>,
}

/// The three memory tiers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierSnapshot {
    /// The current turn.
    pub turn: u64,
    /// Open efforts in opening order (the active one has state `Active`).
    pub open: Vec<EffortRow>,
    /// Expanded efforts in expansion order, with their countdown to auto-collapse.
    pub expanded: Vec<EffortRow>,
    /// Concluded efforts whose summaries are in working memory, with their eviction countdown.
    pub summaries: Vec<EffortRow>,
    /// Every effort, evicted ones included, in opening order.
    pub manifest: Vec<EffortRow>,
    /// Tokens of the working context as it stands.
    pub working_tokens: u64,
    /// Tokens of everything stored (the naive baseline).
    pub naive_tokens: u64,
    /// Ambient messages in working memory.
    pub ambient_in_memory: usize,
    /// Concluded efforts out of working memory.
    pub evicted_count: u64,
    /// The configured decay threshold (turns), for the countdown's explanation.
    pub decay_threshold: u32,
    /// The configured eviction threshold (turns).
    pub eviction_threshold: u32,
}

/// The tier view of a session, with a plan of its own (see [`tiers_with_plan`]).
pub fn tiers(session: &Session) -> TierSnapshot {
    tiers_with_plan(session, &session.build_plan())
}

/// The tier view of a session; `plan` is the session's current plan, which the app builds once
/// per change of the session and shares with the inspector and the meter.
pub fn tiers_with_plan(session: &Session, plan: &ContextPlan) -> TierSnapshot {
    let status = session.effort_status();
    let known: BTreeMap<&str, &ccm_core::session::EffortStatusEntry> =
        status.efforts.iter().map(|e| (e.id.as_str(), e)).collect();
    let row = |effort: &ccm_core::Effort| {
        // `effort_status` lists every effort in working memory; the rest are evicted.
        let entry = known.get(effort.id.as_str());
        EffortRow {
            id: effort.id.clone(),
            name: effort.name.clone(),
            state: entry.map_or(EffortState::Evicted, |e| e.state),
            raw_tokens: effort.raw_tokens,
            summary_tokens: effort.summary.as_ref().map(|s| s.tokens),
            summary: effort.summary.as_ref().map(|s| s.text.clone()),
            messages: effort.message_count(),
            turns_until_auto_collapse: entry.and_then(|e| e.turns_until_auto_collapse),
            turns_until_eviction: entry.and_then(|e| e.turns_until_eviction),
            opened_turn: effort.opened_turn,
            concluded_turn: effort.concluded_turn,
        }
    };
    let by_id = |id: &str| session.efforts().get(id).map(row);
    let pick = |states: &[EffortState]| -> Vec<EffortRow> {
        status
            .efforts
            .iter()
            .filter(|e| states.contains(&e.state))
            .filter_map(|e| by_id(&e.id))
            .collect()
    };
    TierSnapshot {
        turn: session.turn(),
        open: pick(&[EffortState::Active, EffortState::Open]),
        expanded: pick(&[EffortState::Expanded]),
        summaries: pick(&[EffortState::Concluded]),
        manifest: session.efforts().all().iter().map(row).collect(),
        working_tokens: plan.totals.context_tokens,
        naive_tokens: stored_tokens(session),
        ambient_in_memory: session.ambient_window().len(),
        evicted_count: status.evicted_count,
        decay_threshold: session.config().decay_threshold,
        eviction_threshold: session.config().summary_eviction_threshold,
    }
}

/// The manifest's search: the efforts the model's `search_efforts` would find, in its order,
/// and the stored messages that best match (verbatim, with their date), as the app shows them.
/// A view only: unlike the tool, it brings nothing back into memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchView {
    /// The query it answers.
    pub query: String,
    /// Ids of the matching efforts, best first.
    pub efforts: Vec<String>,
    /// The matching messages, grouped by where they are stored, best group first.
    pub groups: Vec<EvidenceView>,
    /// Matching messages not shown (over the evidence budget, or already in the context).
    pub more: u64,
    /// Whether older messages are still being indexed (a session just opened from storage).
    pub incomplete: bool,
    /// Why nothing could be searched (a query without a searchable word), if so.
    pub problem: Option<String>,
}

/// The evidence of one log in the manifest's search.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceView {
    /// `effort auth-bug`, `earlier chat`, `attachment notes.md`.
    pub label: String,
    /// The excerpts, in the order they were said.
    pub excerpts: Vec<ExcerptView>,
}

/// One excerpt: neighbouring messages shown together.
#[derive(Debug, Clone, PartialEq)]
pub struct ExcerptView {
    /// Its id in a context plan (`recall:<seq>`).
    pub id: String,
    /// The day it was said, if known.
    pub date: Option<String>,
    /// Its messages: who wrote each, and the text.
    pub messages: Vec<(Role, String)>,
}

/// The manifest's search for `query` over `session` (see [`SearchView`]).
pub fn search(session: &Session, query: &str) -> SearchView {
    let query = query.trim();
    match session.find_efforts(query) {
        Ok(found) => SearchView {
            query: query.to_string(),
            efforts: found.results.iter().map(|hit| hit.id.clone()).collect(),
            groups: found
                .evidence
                .groups
                .iter()
                .map(|group| EvidenceView {
                    label: match &group.log {
                        EvidenceLog::Effort { id, .. } => format!("effort {id}"),
                        EvidenceLog::Ambient => "earlier chat".to_string(),
                        EvidenceLog::Attachment { name, .. } => format!("attachment {name}"),
                    },
                    excerpts: group
                        .excerpts
                        .iter()
                        .map(|excerpt| ExcerptView {
                            id: excerpt.id.clone(),
                            date: excerpt.date.clone(),
                            messages: excerpt
                                .messages
                                .iter()
                                .map(|m| (m.role, m.text.clone()))
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
            more: found.evidence.more,
            incomplete: found.evidence.incomplete,
            problem: None,
        },
        Err(error) => SearchView {
            query: query.to_string(),
            problem: Some(error.to_string()),
            ..SearchView::default()
        },
    }
}

/// One stored message in the chat transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptMessage {
    /// Session-wide sequence number (the key).
    pub seq: u64,
    /// The turn it belongs to.
    pub turn: u64,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Its stored token count.
    pub tokens: u32,
    /// The effort whose log holds it, or `None` for the ambient log.
    pub effort: Option<String>,
    /// Files attached to it: name and tokens.
    pub attachments: Vec<(String, u32)>,
}

/// The messages a session has in memory, in the order they were stored.
///
/// A session opened from storage holds the open efforts' logs and the ambient tail; concluded
/// efforts' logs are read on demand, so `hidden` counts the stored messages not shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The messages, by sequence number.
    pub messages: Vec<TranscriptMessage>,
    /// Stored messages that are not loaded.
    pub hidden: u64,
    /// Notices per turn, derived from the turn's recorded effort events and compactions.
    pub notices: BTreeMap<u64, Vec<String>>,
    /// The concluded efforts, whose messages the chat can fold away.
    pub concluded: std::collections::BTreeSet<String>,
}

/// The transcript of a session, from what it holds in memory.
pub fn transcript(session: &Session) -> Transcript {
    let attachments: Vec<&ccm_core::compaction::SessionAttachment> =
        session.attachments().by_id().values().collect();
    transcript_of(
        session.ambient().messages(),
        session.efforts().all(),
        session.history().points(),
        &attachments,
        session.stored_message_count() as u64,
    )
}

/// The transcript of a stored session's whole document (every message and every recorded
/// turn), read after a reload so the chat shows what the session keeps out of memory.
pub fn transcript_of_document(document: &ccm_core::snapshot::SessionDocument) -> Transcript {
    let stored: usize = document.ambient.len()
        + document
            .efforts
            .iter()
            .map(|e| e.messages.len())
            .sum::<usize>();
    let attachments: Vec<&ccm_core::compaction::SessionAttachment> =
        document.attachments.iter().collect();
    transcript_of(
        &document.ambient,
        &document.efforts,
        &document.history,
        &attachments,
        stored as u64,
    )
}

/// The transcript of an ambient log, effort logs and recorded turns; `stored` is the number
/// of messages stored in all, so the ones not among these are counted as hidden.
pub fn transcript_of(
    ambient: &[ccm_core::Message],
    efforts: &[Effort],
    history: &[TurnMetrics],
    attachments: &[&ccm_core::compaction::SessionAttachment],
    stored: u64,
) -> Transcript {
    let mut messages: Vec<TranscriptMessage> = ambient.iter().map(|m| message(m, None)).collect();
    for effort in efforts {
        messages.extend(effort.messages.iter().map(|m| message(m, Some(&effort.id))));
    }
    messages.sort_by_key(|m| m.seq);
    for attached in attachments {
        if let Ok(index) = messages.binary_search_by_key(&attached.message_seq, |m| m.seq) {
            messages[index].attachments.push((
                attached.attachment.name.clone(),
                attached.attachment.full_tokens,
            ));
        }
    }
    let hidden = stored.saturating_sub(messages.len() as u64);
    let mut notices: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for point in history {
        let lines: Vec<String> = point
            .events
            .iter()
            .map(|event| event_notice_with_summary(event, point.turn, efforts))
            .chain(point.compactions.iter().map(|c| c.banner.clone()))
            .collect();
        if !lines.is_empty() {
            notices.insert(point.turn, lines);
        }
    }
    let concluded = efforts
        .iter()
        .filter(|e| e.status == EffortStatus::Concluded)
        .map(|e| e.id.clone())
        .collect();
    Transcript {
        messages,
        hidden,
        notices,
        concluded,
    }
}

/// The transcript shown after a reload: the stored `archive` (the whole document, read once
/// after opening) merged with what the session holds in memory now. The session wins for the
/// messages and notices it has (it is newer: turns taken since the archive was read).
pub fn merge_transcripts(live: &Transcript, archive: &Transcript) -> Transcript {
    let mut by_seq: BTreeMap<u64, TranscriptMessage> = archive
        .messages
        .iter()
        .map(|m| (m.seq, m.clone()))
        .collect();
    for m in &live.messages {
        by_seq.insert(m.seq, m.clone());
    }
    let mut notices = archive.notices.clone();
    for (turn, lines) in &live.notices {
        notices.insert(*turn, lines.clone());
    }
    let messages: Vec<TranscriptMessage> = by_seq.into_values().collect();
    // Messages the session stored since the archive was read are in memory (a turn's messages
    // stay in memory until it is saved), so nothing is hidden any more.
    Transcript {
        hidden: 0,
        messages,
        notices,
        concluded: live.concluded.clone(),
    }
}

/// A reconstructed notice for a recorded effort event; a conclusion shows the effort's summary
/// when it is the effort's latest conclusion (the one whose summary the record keeps).
fn event_notice_with_summary(event: &EffortEvent, turn: u64, efforts: &[Effort]) -> String {
    let line = event_notice(event);
    if event.kind != EventKind::Concluded {
        return line;
    }
    let summary = efforts
        .iter()
        .find(|e| e.id == event.effort && e.concluded_turn == Some(turn))
        .and_then(|e| e.summary.as_ref())
        .map(|s| s.text.trim().to_string())
        .filter(|s| !s.is_empty());
    match summary {
        Some(summary) => format!("{line}\n{summary}"),
        None => line,
    }
}

/// Efforts that were expanded when the session was last used and are not now: expansions
/// are not kept when a session is stored, so after a reload they are collapsed again. Read
/// from the recorded turns (the last expand or collapse event of each effort).
pub fn lost_expansions(
    history: &[TurnMetrics],
    expanded_now: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut last: BTreeMap<&str, bool> = BTreeMap::new();
    for point in history {
        for event in &point.events {
            let expanded = match event.kind {
                EventKind::Expanded => true,
                EventKind::Collapsed
                | EventKind::AutoCollapsed
                | EventKind::Concluded
                | EventKind::Reopened
                | EventKind::Evicted
                | EventKind::EvictedOverBudget => false,
                EventKind::Opened
                | EventKind::Switched
                | EventKind::Recalled
                | EventKind::RecallDecayed => continue,
            };
            last.insert(event.effort.as_str(), expanded);
        }
    }
    last.into_iter()
        .filter(|(id, expanded)| *expanded && !expanded_now(id))
        .map(|(id, _)| id.to_string())
        .collect()
}

fn message(m: &ccm_core::Message, effort: Option<&str>) -> TranscriptMessage {
    TranscriptMessage {
        seq: m.seq,
        turn: m.turn,
        role: m.role,
        content: m.content.clone(),
        tokens: m.tokens,
        effort: effort.map(str::to_string),
        attachments: Vec::new(),
    }
}

/// A short notice for an effort event recorded in the metrics (used where the exact banner of
/// the turn is not at hand, e.g. after a reload).
pub fn event_notice(event: &EffortEvent) -> String {
    let id = &event.effort;
    match event.kind {
        EventKind::Opened => format!("Started effort: {id}"),
        EventKind::Concluded => format!("Concluded effort: {id}"),
        EventKind::Reopened => format!("Reopened effort: {id}"),
        EventKind::Expanded => format!("Expanded effort: {id} ({} tokens loaded)", event.tokens),
        EventKind::Collapsed => format!("Collapsed effort: {id} ({} tokens freed)", event.tokens),
        EventKind::AutoCollapsed => {
            format!(
                "Auto-collapsed effort: {id} ({} tokens freed)",
                event.tokens
            )
        }
        EventKind::Switched => format!("Switched to effort: {id}"),
        EventKind::Evicted => format!("Summary left working memory: {id}"),
        EventKind::EvictedOverBudget => {
            format!("Summary left working memory (summary budget full): {id}")
        }
        EventKind::Recalled => {
            format!("Recalled earlier messages ({} tokens loaded)", event.tokens)
        }
        EventKind::RecallDecayed => format!("Recalled excerpt left the context: {id}"),
    }
}

/// Exact banners of a turn completed (or acted on) in this tab.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnBanners {
    /// Banners of the turn's operations, shown before the reply.
    pub before: Vec<String>,
    /// Banners of salience (auto-collapses) and of manual actions after the turn.
    pub after: Vec<String>,
}

/// One entry of the chat, in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatEntry {
    /// A stored message.
    Message(TranscriptMessage),
    /// A quiet notice: a banner of an effort operation, salience or compaction.
    Banner(String),
    /// Where a concluded effort's messages begin: a control that folds them away (they are
    /// then left out of the chat) or unfolds them.
    EffortFold {
        /// The concluded effort.
        effort: String,
        /// Its messages in the transcript.
        count: usize,
        /// Whether they are folded away.
        folded: bool,
    },
}

/// Marks where each concluded effort's messages begin and leaves out the messages of the
/// efforts in `folded`. Turns left with nothing to show are dropped.
pub fn fold_efforts(
    groups: Vec<TurnGroup>,
    concluded: &std::collections::BTreeSet<String>,
    folded: &std::collections::BTreeSet<String>,
) -> Vec<TurnGroup> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for group in &groups {
        for entry in &group.entries {
            if let ChatEntry::Message(TranscriptMessage {
                effort: Some(effort),
                ..
            }) = entry
            {
                if concluded.contains(effort) {
                    *counts.entry(effort.as_str()).or_default() += 1;
                }
            }
        }
    }
    let counts: BTreeMap<String, usize> = counts
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let mut marked: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let mut entries = Vec::with_capacity(group.entries.len());
        for entry in group.entries {
            let effort = match &entry {
                ChatEntry::Message(TranscriptMessage {
                    effort: Some(effort),
                    ..
                }) if concluded.contains(effort) => effort.clone(),
                _ => {
                    entries.push(entry);
                    continue;
                }
            };
            let is_folded = folded.contains(&effort);
            if marked.insert(effort.clone()) {
                entries.push(ChatEntry::EffortFold {
                    count: counts.get(&effort).copied().unwrap_or_default(),
                    effort,
                    folded: is_folded,
                });
            }
            if !is_folded {
                entries.push(entry);
            }
        }
        if !entries.is_empty() {
            out.push(TurnGroup {
                turn: group.turn,
                entries,
            });
        }
    }
    out
}

/// The chat entries of one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnGroup {
    /// The turn.
    pub turn: u64,
    /// Its entries: the person's message, the banners of the operations, the reply, then the
    /// banners of what happened after it.
    pub entries: Vec<ChatEntry>,
}

/// Groups a transcript by turn and places the banners. Exact banners of turns completed in
/// this tab are used where known; other turns show notices derived from their recorded events.
pub fn turn_groups(
    transcript: &Transcript,
    banners: &BTreeMap<u64, TurnBanners>,
) -> Vec<TurnGroup> {
    let mut groups: Vec<TurnGroup> = Vec::new();
    let mut by_turn: BTreeMap<u64, Vec<&TranscriptMessage>> = BTreeMap::new();
    for m in &transcript.messages {
        by_turn.entry(m.turn).or_default().push(m);
    }
    let turns: std::collections::BTreeSet<u64> = by_turn
        .keys()
        .chain(banners.keys())
        .chain(transcript.notices.keys())
        .copied()
        .collect();
    for turn in turns {
        let messages = by_turn.remove(&turn).unwrap_or_default();
        let (users, replies): (Vec<&TranscriptMessage>, Vec<&TranscriptMessage>) =
            messages.into_iter().partition(|m| m.role == Role::User);
        let (before, after) = match banners.get(&turn) {
            Some(exact) => (exact.before.clone(), exact.after.clone()),
            None => (
                transcript.notices.get(&turn).cloned().unwrap_or_default(),
                Vec::new(),
            ),
        };
        let mut entries: Vec<ChatEntry> =
            users.into_iter().cloned().map(ChatEntry::Message).collect();
        entries.extend(before.into_iter().map(ChatEntry::Banner));
        entries.extend(replies.into_iter().cloned().map(ChatEntry::Message));
        entries.extend(after.into_iter().map(ChatEntry::Banner));
        groups.push(TurnGroup { turn, entries });
    }
    groups
}

/// Tokens of everything the session stores, the naive baseline that would send it all:
/// its messages and its attachments' full texts (which working memory counts too).
pub fn stored_tokens(session: &Session) -> u64 {
    let attachments: u64 = session
        .attachments()
        .by_id()
        .values()
        .map(|a| u64::from(a.attachment.full_tokens))
        .sum();
    session.naive_tokens() + attachments
}

/// Tokens one turn sent and received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnUsage {
    /// Prompt tokens of all the turn's requests: the provider's count where it reported one,
    /// the local count otherwise.
    pub input: u64,
    /// Tokens of the stored replies.
    pub output: u64,
    /// Whether `input` is (partly) the local count rather than the provider's.
    pub estimated: bool,
}

/// Tokens of the tool definitions every request of a turn carries (the engine sends the same
/// definitions with each request and counts them the same way), counted with the session's
/// counter.
pub fn tool_definition_tokens(session: &Session) -> u64 {
    ccm_browser::tool_definition_tokens(session)
}

/// Tokens per turn, counted the same way whether the turn was taken in this tab or read
/// from storage: each request's prompt as the provider reported it, or else its local
/// estimate with the tool definitions sent along. The request telemetry is the session's
/// for turns of this tab and `stored` (read after opening) for earlier ones; a turn with
/// neither has its context size and the tool definitions as one request's prompt.
pub fn turn_usage(
    session: &Session,
    transcript: &Transcript,
    stored: &BTreeMap<u64, ccm_core::telemetry::TurnTelemetry>,
) -> BTreeMap<u64, TurnUsage> {
    let tools = tool_definition_tokens(session);
    let mut usage: BTreeMap<u64, TurnUsage> = BTreeMap::new();
    for point in session.history().points() {
        usage.insert(
            point.turn,
            TurnUsage {
                input: point.context_tokens + tools,
                output: 0,
                estimated: true,
            },
        );
    }
    for record in stored.values().chain(session.history().telemetry()) {
        if record.requests.is_empty() {
            continue;
        }
        let input = record
            .requests
            .iter()
            .map(|r| {
                r.reported_prompt_tokens
                    .unwrap_or(r.estimated_prompt_tokens + tools)
            })
            .sum();
        let estimated = record
            .requests
            .iter()
            .any(|r| r.reported_prompt_tokens.is_none());
        usage.insert(
            record.turn,
            TurnUsage {
                input,
                output: 0,
                estimated,
            },
        );
    }
    for m in &transcript.messages {
        if m.role == Role::Assistant {
            if let Some(turn) = usage.get_mut(&m.turn) {
                turn.output += u64::from(m.tokens);
            }
        }
    }
    usage
}

/// A turn's or session's tokens and cost for people: "≈1.2k tokens in · 56 out · $0.0004"
/// (≈ where the local count stands in for the provider's; no cost for a model of unknown
/// price).
pub fn usage_text(usage: &TurnUsage, price: Option<&crate::models::ModelInfo>) -> String {
    let approx = if usage.estimated { "≈" } else { "" };
    let mut text = format!(
        "{approx}{} tokens in · {} out",
        crate::chart::format_tokens(usage.input),
        crate::chart::format_tokens(usage.output)
    );
    if let Some(price) = price {
        let dollars = crate::models::cost(price, usage.input, usage.output);
        text.push_str(&format!(" · {}", crate::models::format_cost(dollars)));
    }
    text
}

/// The sum of turns' usage.
pub fn total_usage<'a>(turns: impl IntoIterator<Item = &'a TurnUsage>) -> TurnUsage {
    turns.into_iter().fold(
        TurnUsage {
            input: 0,
            output: 0,
            estimated: false,
        },
        |sum, u| TurnUsage {
            input: sum.input + u.input,
            output: sum.output + u.output,
            estimated: sum.estimated || u.estimated,
        },
    )
}

/// One included item of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludedRow {
    /// The candidate id (`system`, `summary:<id>`, `effort:<id>`, `ambient:<turn>`, …).
    pub id: String,
    /// Its section, as a word.
    pub section: &'static str,
    /// Tokens it adds.
    pub tokens: u64,
    /// Why it is in, in words.
    pub reason: String,
    /// The fill tier (0 is filled first).
    pub tier: u8,
    /// How long it stays, in words.
    pub ttl: String,
    /// The pin on it, if any.
    pub pin: Option<PinKind>,
    /// Whether a person can pin it (summaries, raw logs and ambient exchanges).
    pub pinnable: bool,
}

/// One excluded item or group of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcludedRow {
    /// The candidate id or group id.
    pub id: String,
    /// Its section, as a word.
    pub section: &'static str,
    /// Tokens it would add.
    pub tokens: u64,
    /// Stored records it stands for.
    pub count: u64,
    /// The reason code.
    pub reason: &'static str,
    /// The pin on it, if any (a pinned item can still be out, e.g. over budget).
    pub pin: Option<PinKind>,
}

/// One message of a request, as the inspector lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestMessage {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text sent.
    pub content: String,
}

/// One line of the diff against the previous turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRow {
    /// `entered`, `left` or `changed`.
    pub change: &'static str,
    /// The item id.
    pub id: String,
    /// Its tokens.
    pub tokens: u64,
    /// Why.
    pub why: String,
}

/// What the last completed turn sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRequest {
    /// The turn.
    pub turn: u64,
    /// The plan id of its last request.
    pub plan_id: String,
    /// How many requests the turn made.
    pub requests: usize,
    /// The local estimate of the last request's prompt.
    pub estimated_prompt_tokens: u64,
    /// What the provider reported, if it did.
    pub reported_prompt_tokens: Option<u64>,
    /// The exact messages of the last request, rebuilt from its recipe, or why they could not
    /// be rebuilt.
    pub messages: Result<Vec<RequestMessage>, String>,
    /// What entered and left against the previous turn.
    pub diff: Vec<DiffRow>,
    /// Total token change against the previous turn.
    pub token_delta: i64,
    /// The turn's tool calls: name, arguments, whether they succeeded.
    pub tools: Vec<(String, String, bool)>,
}

/// One compaction event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRow {
    /// The turn it happened in.
    pub turn: u64,
    /// Level 1 (soft), 2 (hard) or 3 (emergency).
    pub level: u8,
    /// Usage that triggered it, in percent of the budget.
    pub trigger_percent: u64,
    /// Tokens before and after.
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// Items moved.
    pub items_moved: u64,
    /// The banner.
    pub banner: String,
}

/// One pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    /// The pin's target.
    pub target: String,
    /// Its kind.
    pub kind: PinKind,
    /// Who made it and how long it holds, in words.
    pub detail: String,
}

/// Everything the context inspector shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectorSnapshot {
    /// The turn the plan is for.
    pub turn: u64,
    /// The context mode's name.
    pub mode: &'static str,
    /// The budget meter line (e.g. `CTX Light · 0 auto items · +0 tokens · 1% of budget`).
    pub meter: String,
    /// Tokens in the plan.
    pub context_tokens: u64,
    /// The request budget.
    pub request_budget: u64,
    /// The model's context window.
    pub context_window: u64,
    /// Included items in context order.
    pub included: Vec<IncludedRow>,
    /// Excluded items and groups.
    pub excluded: Vec<ExcludedRow>,
    /// The last completed turn's request, if any turn completed in memory.
    pub last_request: Option<LastRequest>,
    /// Compactions, newest first.
    pub compactions: Vec<CompactionRow>,
    /// Pins in creation order.
    pub pins: Vec<PinRow>,
}

fn section_name(section: Section) -> &'static str {
    match section {
        Section::System => "system",
        Section::Summary => "summary",
        Section::Ambient => "ambient",
        Section::Expanded => "expanded",
        Section::Open => "open",
        Section::RawLog => "raw log",
        Section::Pending => "current message",
        Section::Attachment => "attachment",
        Section::Rolling => "rolling summary",
        Section::Recalled => "recalled",
    }
}

/// An inclusion reason in words.
pub fn reason_text(reason: &InclusionReason) -> String {
    match reason {
        InclusionReason::SystemPrompt => "system prompt (always first)".to_string(),
        InclusionReason::RecentlyReferenced {
            turns_since_reference,
            turns_until_eviction,
        } => format!(
            "summary referenced {turns_since_reference} turn(s) ago; leaves memory in {turns_until_eviction}"
        ),
        InclusionReason::AmbientWindow => "within the ambient window".to_string(),
        InclusionReason::Expanded {
            turns_since_reference,
            turns_until_auto_collapse,
        } => format!(
            "expanded; referenced {turns_since_reference} turn(s) ago; auto-collapses in {turns_until_auto_collapse}"
        ),
        InclusionReason::OpenEffort => "open effort (background)".to_string(),
        InclusionReason::ActiveEffort => "active effort (placed last)".to_string(),
        InclusionReason::CurrentUserMessage => "the message being answered".to_string(),
        InclusionReason::Pinned { kind, pin } => format!("pinned ({}, pin {pin})", pin_kind(*kind)),
        InclusionReason::AutoRetrieved { score, matched } => format!(
            "retrieved automatically (score {score:.2}; matched {})",
            matched.join(", ")
        ),
        InclusionReason::AutoExpanded { score } => {
            format!("best match loaded automatically (score {score:.2})")
        }
        InclusionReason::Attachment { mode } => format!("attachment ({mode:?})").to_lowercase(),
        InclusionReason::RollingSummary { covers } => format!("rolling summary of {covers}"),
        InclusionReason::Recalled {
            query,
            turns_since_reference,
            turns_until_auto_collapse,
        } => format!(
            "recalled for \"{query}\"; referenced {turns_since_reference} turn(s) ago; leaves in {turns_until_auto_collapse}"
        ),
        InclusionReason::AutoRecalled { score, matched } => format!(
            "recalled automatically for this message (score {score:.2}; matched {})",
            matched.join(", ")
        ),
    }
}

/// A TTL state in words.
pub fn ttl_text(ttl: &TtlState) -> String {
    match ttl {
        TtlState::Decay { turns } => format!("collapses in {turns}"),
        TtlState::Eviction { turns } => format!("evicted in {turns}"),
        TtlState::Lease { turns } => format!("lease: {turns} turn(s)"),
        TtlState::Task { effort } => format!("while {effort} is open"),
        TtlState::Ephemeral => "this request only".to_string(),
        TtlState::Permanent => "permanent".to_string(),
    }
}

/// A pin kind in words.
pub fn pin_kind(kind: PinKind) -> &'static str {
    match kind {
        PinKind::Sticky => "sticky",
        PinKind::Leased => "leased",
        PinKind::Ephemeral => "ephemeral",
    }
}

fn pinnable(id: &str) -> bool {
    ["summary:", "effort:", "ambient:"]
        .iter()
        .any(|prefix| id.starts_with(prefix))
        && !id.contains("before:")
        && !id.contains('@')
}

/// The inspector's view of a session: the plan of the next request (as things stand, without
/// the next message), the last request's exact messages and diff, compactions and pins.
pub fn inspector(session: &Session) -> InspectorSnapshot {
    inspector_with_plan(session, &session.build_plan())
}

/// The inspector's view with the session's current plan given (see [`tiers_with_plan`]).
pub fn inspector_with_plan(session: &Session, plan: &ContextPlan) -> InspectorSnapshot {
    let pin_of = |id: &str| session.pins().on(id).map(|p| p.kind);
    let included = plan
        .included
        .iter()
        .map(|item| IncludedRow {
            id: item.id.clone(),
            section: section_name(item.section),
            tokens: item.tokens,
            reason: reason_text(&item.reason),
            tier: item.priority,
            ttl: ttl_text(&item.ttl),
            pin: pin_of(&item.id),
            pinnable: pinnable(&item.id),
        })
        .collect();
    let excluded = plan
        .excluded
        .iter()
        .map(|item| ExcludedRow {
            id: item.id.clone(),
            section: section_name(item.section),
            tokens: item.tokens,
            count: item.count,
            reason: item.reason.code(),
            pin: pin_of(&item.id),
        })
        .collect();
    let last_request = session.history().telemetry().last().and_then(|t| {
        let request = t.requests.last()?;
        let messages = session.replay_recipe(&request.recipe).map(|messages| {
            messages
                .into_iter()
                .map(|m| RequestMessage {
                    role: m.role.as_str(),
                    content: m.content,
                })
                .collect()
        });
        let mut diff: Vec<DiffRow> = Vec::new();
        for (change, entries) in [
            ("entered", &t.diff.entered),
            ("left", &t.diff.left),
            ("changed", &t.diff.changed),
        ] {
            diff.extend(entries.iter().map(|e| DiffRow {
                change,
                id: e.id.clone(),
                tokens: e.tokens,
                why: e.why.clone(),
            }));
        }
        Some(LastRequest {
            turn: t.turn,
            plan_id: request.plan_id.clone(),
            requests: t.requests.len(),
            estimated_prompt_tokens: request.estimated_prompt_tokens,
            reported_prompt_tokens: request.reported_prompt_tokens,
            messages,
            diff,
            token_delta: t.diff.token_delta,
            tools: t
                .tools
                .iter()
                .map(|tool| (tool.name.clone(), tool.arguments.clone(), tool.ok))
                .collect(),
        })
    });
    let mut compactions: Vec<CompactionRow> = session
        .history()
        .points()
        .iter()
        .flat_map(|m| {
            m.compactions.iter().map(move |c| CompactionRow {
                turn: m.turn,
                level: c.level,
                trigger_percent: c.trigger_per_mille / 10,
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
                items_moved: c.items_moved,
                banner: c.banner.clone(),
            })
        })
        .collect();
    compactions.reverse();
    let pins = session
        .pins()
        .all()
        .iter()
        .map(|p| PinRow {
            target: p.target.clone(),
            kind: p.kind,
            detail: {
                let origin = format!("{:?}", p.origin).to_lowercase();
                match &p.lease {
                    Some(LeaseScope::Turns { remaining }) => {
                        format!("by {origin}; {remaining} included turn(s) left")
                    }
                    Some(LeaseScope::Task { effort }) => {
                        format!("by {origin}; while {effort} is open")
                    }
                    None => format!("by {origin}; since turn {}", p.created_turn),
                }
            },
        })
        .collect();
    InspectorSnapshot {
        turn: plan.turn,
        mode: plan.mode.label(),
        meter: plan.meter.line.clone(),
        context_tokens: plan.totals.context_tokens,
        request_budget: plan.budget.request_budget,
        context_window: plan.budget.context_window,
        included,
        excluded,
        last_request,
        compactions,
        pins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A session with an open effort, a concluded one and some ambient chat.
    pub(crate) fn sample() -> Session {
        let mut s = ccm_test_support::auth_bug_concluded();
        s.begin_turn("Now the billing export", 7).unwrap();
        s.open_effort("billing export", None).unwrap();
        s.end_turn("Started billing.", 8).unwrap();
        s
    }

    /// The app builds one plan per change of the session and hands it to every view; a view
    /// that built its own would cost a plan (about a turn's work) more per change.
    #[test]
    fn the_tier_and_inspector_views_build_no_plan_of_their_own() {
        let s = sample();
        let plan = s.build_plan();
        let before = ccm_core::plan::builds_on_this_thread();
        let t = tiers_with_plan(&s, &plan);
        inspector_with_plan(&s, &plan);
        assert_eq!(ccm_core::plan::builds_on_this_thread() - before, 0);
        assert_eq!(t.working_tokens, s.working_tokens());
    }

    #[test]
    fn tiers_place_each_effort_once_with_its_countdown() {
        let mut s = sample();
        let t = tiers(&s);
        assert_eq!(t.open.len(), 1);
        assert_eq!(t.open[0].state, EffortState::Active);
        assert_eq!(t.summaries.len(), 1);
        assert_eq!(t.summaries[0].id, "auth-bug");
        assert_eq!(t.summaries[0].turns_until_eviction, Some(19));
        assert!(t.expanded.is_empty());
        assert_eq!(t.manifest.len(), 2);

        s.expand_effort("auth-bug").unwrap();
        let t = tiers(&s);
        assert_eq!(t.expanded.len(), 1);
        assert_eq!(t.expanded[0].turns_until_auto_collapse, Some(3));
        assert!(t.summaries.is_empty(), "an expanded effort is listed once");
    }

    #[test]
    fn evicted_efforts_stay_in_the_manifest() {
        let mut s = sample();
        for i in 0..21 {
            s.begin_turn(&format!("unrelated chatter number {i}"), 10)
                .unwrap();
            s.end_turn("ok", 11).unwrap();
        }
        let t = tiers(&s);
        assert!(t.summaries.is_empty());
        let auth = t.manifest.iter().find(|r| r.id == "auth-bug").unwrap();
        assert_eq!(auth.state, EffortState::Evicted);
        assert_eq!(t.evicted_count, 1);
        assert_eq!(actions_for(auth.state)[0], EffortAction::Expand);
        // The manifest's search is the model's: the evicted effort is found by its summary,
        // and what was said in it is shown verbatim.
        let found = search(&s, "TTL refresh");
        assert_eq!(found.efforts, ["auth-bug"]);
        assert_eq!(found.groups[0].label, "effort auth-bug");
        assert!(found.groups[0].excerpts[0]
            .messages
            .contains(&(Role::User, "Fixed: the TTL was wrong.".to_string())));
        assert_eq!(found.problem, None);
        // The chatter went to the open effort, whose log the context shows: nothing to add.
        let chat = search(&s, "chatter number 3");
        assert!(chat.groups.is_empty());
        assert!(chat.problem.is_none());
        assert!(search(&s, "nothing-like-this").efforts.is_empty());
        assert!(search(&s, "the and of").problem.is_some());
    }

    #[test]
    fn transcript_orders_messages_and_notes_events() {
        let t = transcript(&sample());
        let seqs: Vec<u64> = t.messages.iter().map(|m| m.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(t.messages.len(), 8);
        assert_eq!(t.hidden, 0);
        assert_eq!(t.messages[2].effort.as_deref(), Some("auth-bug"));
        assert_eq!(t.messages[0].effort, None);
        assert_eq!(t.notices[&2], vec!["Started effort: auth-bug".to_string()]);
        // A conclusion's notice carries the summary the effort record keeps.
        assert_eq!(
            t.notices[&3],
            vec![
                "Concluded effort: auth-bug\nRefresh token TTL 1h -> 24h fixed the 401s."
                    .to_string()
            ]
        );
        assert_eq!(t.concluded.iter().collect::<Vec<_>>(), ["auth-bug"]);
    }

    #[test]
    fn the_stored_document_fills_in_what_the_session_does_not_hold() {
        let mut s = sample();
        s.begin_turn("one more in billing", 9).unwrap();
        s.end_turn("noted", 10).unwrap();
        let document: ccm_core::snapshot::SessionDocument =
            serde_json::from_str(&s.to_json().unwrap()).unwrap();
        let archive = transcript_of_document(&document);
        assert_eq!(archive.messages.len(), 10);
        assert_eq!(archive.hidden, 0);

        // What a reload holds: the concluded effort's log and the older ambient messages are
        // not in memory, so the session alone hides them.
        let live = Transcript {
            messages: archive.messages[6..].to_vec(),
            hidden: 6,
            notices: BTreeMap::new(),
            concluded: archive.concluded.clone(),
        };
        let merged = merge_transcripts(&live, &archive);
        assert_eq!(merged.hidden, 0);
        assert_eq!(
            merged,
            Transcript {
                hidden: 0,
                ..archive.clone()
            }
        );

        // A turn taken after the archive was read comes from the session.
        let mut newer = live.clone();
        newer.messages.push(TranscriptMessage {
            seq: 99,
            turn: 6,
            role: Role::User,
            content: "new".into(),
            tokens: 1,
            effort: None,
            attachments: Vec::new(),
        });
        newer.notices.insert(6, vec!["Started effort: x".into()]);
        let merged = merge_transcripts(&newer, &archive);
        assert_eq!(merged.messages.len(), 11);
        assert_eq!(merged.messages.last().unwrap().content, "new");
        assert_eq!(merged.notices[&6], vec!["Started effort: x".to_string()]);
    }

    #[test]
    fn concluded_efforts_fold_and_unfold_in_place() {
        let t = transcript(&sample());
        let groups = turn_groups(&t, &BTreeMap::new());
        let none = BTreeSet::new();
        let unfolded = fold_efforts(groups.clone(), &t.concluded, &none);
        let marks: Vec<&ChatEntry> = unfolded
            .iter()
            .flat_map(|g| &g.entries)
            .filter(|e| matches!(e, ChatEntry::EffortFold { .. }))
            .collect();
        // auth-bug holds the exchanges of turns 2 and 3: one mark, before the first of them.
        assert_eq!(
            marks,
            [&ChatEntry::EffortFold {
                effort: "auth-bug".into(),
                count: 4,
                folded: false
            }]
        );
        assert!(matches!(
            unfolded[1].entries[0],
            ChatEntry::EffortFold { .. }
        ));
        let messages = |groups: &[TurnGroup]| {
            groups
                .iter()
                .flat_map(|g| &g.entries)
                .filter(|e| matches!(e, ChatEntry::Message(_)))
                .count()
        };
        assert_eq!(messages(&unfolded), 8);

        let folded: BTreeSet<String> = ["auth-bug".to_string()].into();
        let folded = fold_efforts(groups, &t.concluded, &folded);
        assert_eq!(messages(&folded), 4);
        assert_eq!(
            folded[1].entries[0],
            ChatEntry::EffortFold {
                effort: "auth-bug".into(),
                count: 4,
                folded: true
            }
        );
        // The banners of the folded turns stay.
        assert!(folded.iter().flat_map(|g| &g.entries).any(
            |e| matches!(e, ChatEntry::Banner(b) if b.starts_with("Concluded effort: auth-bug"))
        ));
    }

    #[test]
    fn usage_counts_each_turn_and_prices_it() {
        let s = sample();
        let t = transcript(&s);
        let usage = turn_usage(&s, &t, &BTreeMap::new());
        let tools = tool_definition_tokens(&s);
        assert!(tools > 100, "the tool definitions are counted: {tools}");
        assert_eq!(usage.len(), 4);
        // Turns driven without a provider have no telemetry: their context size stands in.
        let first = usage[&1];
        assert!(first.estimated, "no provider reported a count");
        assert_eq!(
            first.output,
            u64::from(
                t.messages
                    .iter()
                    .find(|m| m.turn == 1 && m.role == Role::Assistant)
                    .unwrap()
                    .tokens
            )
        );
        // Each turn counts its requests' prompts where telemetry has them, its context
        // otherwise; the session's total is their sum.
        let expected: u64 = s
            .history()
            .points()
            .iter()
            .map(|p| {
                s.history()
                    .telemetry()
                    .iter()
                    .find(|t| t.turn == p.turn && !t.requests.is_empty())
                    .map_or(p.context_tokens + tools, |t| {
                        t.requests
                            .iter()
                            .map(|r| r.estimated_prompt_tokens + tools)
                            .sum()
                    })
            })
            .sum();
        let total = total_usage(usage.values());
        assert_eq!(total.input, expected);
        assert_eq!(total.output, usage.values().map(|u| u.output).sum::<u64>());
        let price = crate::models::known_model("gpt-4o").unwrap();
        let line = usage_text(
            &TurnUsage {
                input: 1_200,
                output: 56,
                estimated: false,
            },
            Some(&price),
        );
        assert_eq!(line, "1.2k tokens in · 56 out · $0.0036");
        assert!(usage_text(&first, None).starts_with('≈'));
        assert!(!usage_text(&first, None).contains('$'));
    }

    #[test]
    fn expansions_lost_in_a_reload_are_found_in_the_recorded_turns() {
        let mut s = sample();
        s.begin_turn("show me the auth bug again", 9).unwrap();
        s.expand_effort("auth-bug").unwrap();
        s.end_turn("here", 10).unwrap();
        assert!(lost_expansions(s.history().points(), |id| s
            .efforts()
            .expansion(id)
            .is_some())
        .is_empty());
        assert_eq!(
            lost_expansions(s.history().points(), |_| false),
            ["auth-bug"]
        );
        s.begin_turn("collapse it", 11).unwrap();
        s.collapse_effort("auth-bug").unwrap();
        s.end_turn("done", 12).unwrap();
        assert!(lost_expansions(s.history().points(), |_| false).is_empty());
    }

    #[test]
    fn turn_groups_place_exact_banners_around_the_reply() {
        let t = transcript(&sample());
        let mut banners = BTreeMap::new();
        banners.insert(
            2,
            TurnBanners {
                before: vec!["--- Started effort: auth-bug ---".into()],
                after: vec!["--- Collapsed ---".into()],
            },
        );
        let groups = turn_groups(&t, &banners);
        assert_eq!(groups.len(), 4);
        let second = &groups[1];
        assert_eq!(second.turn, 2);
        assert!(matches!(&second.entries[0], ChatEntry::Message(m) if m.role == Role::User));
        assert_eq!(
            second.entries[1],
            ChatEntry::Banner("--- Started effort: auth-bug ---".into())
        );
        assert!(matches!(&second.entries[2], ChatEntry::Message(m) if m.role == Role::Assistant));
        assert_eq!(
            second.entries[3],
            ChatEntry::Banner("--- Collapsed ---".into())
        );
        // Without exact banners, the recorded events stand in.
        assert_eq!(
            groups[2].entries[1],
            ChatEntry::Banner(
                "Concluded effort: auth-bug\nRefresh token TTL 1h -> 24h fixed the 401s.".into()
            )
        );
    }

    #[test]
    fn inspector_lists_reasons_diff_and_exact_messages() {
        let s = sample();
        let i = inspector(&s);
        assert_eq!(i.mode, "Light");
        assert!(i.meter.starts_with("CTX Light"), "{}", i.meter);
        assert_eq!(i.included[0].id, "system");
        let summary = i
            .included
            .iter()
            .find(|r| r.id == "summary:auth-bug")
            .unwrap();
        assert!(summary.pinnable);
        assert!(
            summary.reason.contains("leaves memory in"),
            "{}",
            summary.reason
        );
        assert!(i
            .excluded
            .iter()
            .any(|r| r.id == "effort:auth-bug" && r.reason == "summarized"));
        let last = i.last_request.expect("a turn completed");
        assert_eq!(last.turn, 4);
        let messages = last.messages.expect("the recipe replays");
        assert_eq!(messages[0].role, "system");
        assert!(last
            .diff
            .iter()
            .any(|d| d.change == "entered" && d.id == "effort:billing-export"));
    }

    #[test]
    fn pins_show_in_rows_and_in_the_pin_list() {
        let mut s = sample();
        s.pin(
            ccm_core::pins::PinRequest {
                target: "summary:auth-bug".into(),
                kind: PinKind::Sticky,
                ttl_turns: None,
                task: None,
            },
            ccm_core::pins::PinOrigin::User,
        )
        .unwrap();
        let i = inspector(&s);
        let row = i
            .included
            .iter()
            .find(|r| r.id == "summary:auth-bug")
            .unwrap();
        assert_eq!(row.pin, Some(PinKind::Sticky));
        assert_eq!(i.pins.len(), 1);
        assert!(
            i.pins[0].detail.starts_with("by user"),
            "{}",
            i.pins[0].detail
        );
    }
}
