//! The context planner: every candidate for a request, included in order or excluded with a
//! reason, within a token budget, with totals, a budget meter and a stable id.
//!
//! Candidates: the system prompt, summaries of concluded efforts in working memory, ambient
//! exchanges, expanded raw logs, open raw logs, pinned items, items retrieved automatically for
//! the user's message (Light and Heavy modes), and the user message of the turn in progress.
//!
//! **Atoms.** A stored turn (the user's message and the answer) is never split: ambient
//! exchanges are one candidate each, and an effort's raw log is trimmed only by whole turns,
//! oldest first, never without its header. Tool calls and their results live inside the turn in
//! progress and are sent by the engine as one unit after the plan's messages.
//!
//! **Filling.** Candidates are taken by tier — mandatory (system prompt, current message),
//! sticky pins, the active effort's log, other open logs, expanded logs, leased pins (within
//! the leased budget), the ambient window (newest first), summaries (by activation, then
//! recency), then ephemeral and automatic items — and each one that fits the remaining budget
//! goes in; the others are excluded with `over_budget`. The order the model sees does not follow
//! the fill order: it is the fixed section order (system, summaries, ambient, expanded, open,
//! active, current message), so that the prompt stays stable from one turn to the next.
//!
//! Architecture invariant: building a plan reads only the working set and stored token counts.
//! Items outside working memory whose number grows with history (old ambient messages, evicted
//! efforts) are reported as one grouped exclusion each, so the cost of a plan never grows with
//! the length of the conversation.

use crate::config::ContextMode;
use crate::model::{ContextMessage, Effort, EffortStatus, LogState, Role};
use crate::pins::{LeaseScope, PinKind};
use crate::session::Session;
use crate::store::LogRef;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// Most summaries pulled in automatically for one message.
pub const AUTO_SUMMARY_LIMIT: usize = 3;
/// Words shared by more efforts than this are ignored by automatic retrieval: they do not
/// single out an effort, and scoring them would make every plan cost more as history grows.
pub const AUTO_MAX_POSTINGS: usize = 32;

/// The part of the context an item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// The system prompt.
    System,
    /// A concluded effort's summary.
    Summary,
    /// Ambient chat.
    Ambient,
    /// A concluded effort's raw log, loaded by expansion (or a pin, or Heavy mode).
    Expanded,
    /// An open effort's raw log.
    Open,
    /// An effort's raw log that is not in context (concluded).
    RawLog,
    /// The user message of the turn in progress.
    Pending,
    /// An attachment of a message in the working set (full or compressed).
    Attachment,
    /// The rolling summary that stands in for compacted history.
    Rolling,
}

/// Why an item is in the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum InclusionReason {
    /// The system prompt is always first.
    SystemPrompt,
    /// A summary referenced recently enough to stay in working memory.
    RecentlyReferenced {
        /// Turns since its last reference.
        turns_since_reference: u64,
        /// Turns left before it is evicted without a new reference.
        turns_until_eviction: u64,
    },
    /// One of the last `ambient_window` exchanges.
    AmbientWindow,
    /// A concluded effort expanded on demand.
    Expanded {
        /// Turns since its last reference.
        turns_since_reference: u64,
        /// Turns left before it collapses by itself.
        turns_until_auto_collapse: u64,
    },
    /// An open effort in the background.
    OpenEffort,
    /// The open effort receiving new messages; placed last.
    ActiveEffort,
    /// The user message being answered.
    CurrentUserMessage,
    /// Kept by a pin.
    Pinned {
        /// The pin's kind.
        kind: PinKind,
        /// The pin's id.
        pin: u64,
    },
    /// Pulled in automatically because it matches the user's message (Light and Heavy modes).
    AutoRetrieved {
        /// Search relevance.
        score: f64,
        /// The words of the message that matched.
        matched: Vec<String>,
    },
    /// The best match's raw log, loaded automatically (Heavy mode).
    AutoExpanded {
        /// Search relevance.
        score: f64,
    },
    /// An attachment of a message in the working set.
    Attachment {
        /// Full text or summary.
        mode: crate::compaction::AttachmentMode,
    },
    /// The rolling summary of a level-3 compaction.
    RollingSummary {
        /// The stored messages it stands for, e.g. `messages 4-57`.
        covers: String,
    },
}

/// Why an item is not in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionReason {
    /// A summary whose effort is expanded: the raw log stands in for it.
    Expanded,
    /// A concluded effort's raw log, represented by its summary.
    Summarized,
    /// A raw log that was expanded and collapsed by itself after going unreferenced.
    Decayed,
    /// Concluded efforts whose summaries went unreferenced for the eviction threshold; still
    /// stored and searchable.
    EvictedUnreferenced,
    /// Ambient messages older than the ambient window; still stored.
    OutsideAmbientWindow,
    /// An ambient exchange among the last `ambient_window` that did not fit the ambient token
    /// budget (newer exchanges filled it); still stored.
    OverAmbientBudget,
    /// Concluded efforts whose summaries left working memory because the resident summaries
    /// exceeded their token budget and they were the least recently referenced; still stored
    /// and searchable.
    EvictedOverBudget,
    /// It did not fit the request budget (or, for leased items, the leased budget).
    OverBudget,
    /// Its lease ran out at the end of the last turn.
    TtlExpired,
    /// It matches the user's message but the context mode is Off.
    ModeOff,
    /// Another representation of the same effort is included (its raw log instead of its
    /// summary).
    Superseded,
    /// Its raw log is stored but not loaded; the host loads it (see
    /// [`Session::logs_needed_for_plan`]).
    NotLoaded,
    /// Left the working set in a level-2 (hard) compaction: among the less relevant older
    /// messages. Still stored.
    #[serde(rename = "compacted_level_2")]
    CompactedLevel2,
    /// Replaced by the rolling summary in a level-3 (emergency) compaction. Still stored.
    #[serde(rename = "compacted_level_3")]
    CompactedLevel3,
    /// It belongs to an item that is not in the context (an attachment of an exchange that
    /// was left out).
    DependencyExcluded,
}

impl ExclusionReason {
    /// The reason code as written in plans.
    pub fn code(self) -> &'static str {
        match self {
            ExclusionReason::Expanded => "expanded",
            ExclusionReason::Summarized => "summarized",
            ExclusionReason::Decayed => "decayed",
            ExclusionReason::EvictedUnreferenced => "evicted_unreferenced",
            ExclusionReason::OutsideAmbientWindow => "outside_ambient_window",
            ExclusionReason::OverAmbientBudget => "over_ambient_budget",
            ExclusionReason::EvictedOverBudget => "evicted_over_budget",
            ExclusionReason::OverBudget => "over_budget",
            ExclusionReason::TtlExpired => "ttl_expired",
            ExclusionReason::ModeOff => "mode_off",
            ExclusionReason::Superseded => "superseded",
            ExclusionReason::NotLoaded => "not_loaded",
            ExclusionReason::CompactedLevel2 => "compacted_level_2",
            ExclusionReason::CompactedLevel3 => "compacted_level_3",
            ExclusionReason::DependencyExcluded => "dependency_excluded",
        }
    }
}

/// How long an included item stays without a new reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TtlState {
    /// An expanded log: turns until it collapses by itself.
    Decay {
        /// Turns left.
        turns: u64,
    },
    /// A summary: turns until it is evicted.
    Eviction {
        /// Turns left.
        turns: u64,
    },
    /// A leased pin: included turns left.
    Lease {
        /// Turns left.
        turns: u32,
    },
    /// A leased pin held while an effort is open.
    Task {
        /// The effort.
        effort: String,
    },
    /// This request only.
    Ephemeral,
    /// Never expires (sticky pins, open efforts, the system prompt).
    Permanent,
}

/// An item in the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncludedItem {
    /// Stable id: `system`, `summary:<effort>`, `ambient:<turn>`, `effort:<effort>`, `pending`.
    pub id: String,
    /// Its section.
    pub section: Section,
    /// Tokens it adds (stored counts).
    pub tokens: u64,
    /// Why it is in.
    pub reason: InclusionReason,
    /// Fill tier: 0 is filled first (mandatory), higher tiers give way under budget pressure.
    pub priority: u8,
    /// How long it stays.
    pub ttl: TtlState,
    /// Candidate ids it needs (turns of a log need the log's header).
    pub depends_on: Vec<String>,
    /// Activation score (thousandths): references and recent inclusion raise it.
    pub activation: u32,
    /// Atoms it holds (turns for a log or an exchange, 1 otherwise).
    pub atoms: u32,
    /// Index of its first message in [`ContextPlan::messages`].
    pub first_message: usize,
    /// How many messages it contributes.
    pub message_count: usize,
}

/// An item, or a group of items, left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedItem {
    /// Stable id: `summary:<effort>`, `effort:<effort>`, `effort:<effort>@before:<turn>` (older
    /// turns of a trimmed log), `ambient:before:<turn>` (every ambient exchange before that
    /// turn), `ambient:<turn>`, `evicted` (every evicted effort), `pin:<n>`.
    pub id: String,
    /// Its section.
    pub section: Section,
    /// Tokens it would add.
    pub tokens: u64,
    /// How many stored records the entry stands for (1 unless grouped).
    pub count: u64,
    /// Why it is out.
    pub reason: ExclusionReason,
}

/// Token totals of a plan by section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTotals {
    /// Everything included.
    pub context_tokens: u64,
    /// The system prompt.
    pub system_tokens: u64,
    /// Summaries.
    pub summary_tokens: u64,
    /// The ambient window.
    pub ambient_tokens: u64,
    /// Expanded raw logs.
    pub expansion_tokens: u64,
    /// Open raw logs.
    pub open_tokens: u64,
    /// The user message of the turn in progress.
    pub pending_tokens: u64,
    /// Items kept by pins.
    pub pinned_tokens: u64,
    /// Items pulled in automatically.
    pub auto_tokens: u64,
    /// Attachments (in their current form).
    pub attachment_tokens: u64,
    /// The rolling summary.
    pub rolling_tokens: u64,
    /// Everything stored (the naive baseline), plus the pending message.
    pub naive_tokens: u64,
    /// Everything excluded.
    pub excluded_tokens: u64,
}

/// The request budget and how much of it the plan uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The model's context window.
    pub context_window: u64,
    /// Tokens reserved for the answer.
    pub reserved_output_tokens: u64,
    /// What one request may use.
    pub request_budget: u64,
    /// What leased pins may use.
    pub leased_budget: u64,
    /// Tokens leased pins use in this plan.
    pub leased_used: u64,
    /// Whether the mandatory items alone (system prompt, current message) exceed the budget.
    pub mandatory_over_budget: bool,
}

/// The one-line summary shown after the user's message, with its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetMeter {
    /// The context mode.
    pub mode: ContextMode,
    /// Items added automatically (retrieved, or kept by an automatic or ephemeral pin).
    pub auto_items: u32,
    /// Their tokens.
    pub auto_tokens: u64,
    /// Share of the request budget the whole plan uses, in percent.
    pub percent_of_budget: f64,
    /// E.g. `CTX Light · 3 auto items · +1.2k tokens · 61% of budget`.
    pub line: String,
}

/// One part of a request, by reference to stored records: what replay needs to rebuild the
/// exact request bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum RecipePart {
    /// The system prompt, identified by the hash of its text.
    System {
        /// FNV-1a hash of the prompt text.
        hash: String,
    },
    /// A summary line.
    Summary {
        /// The effort.
        effort: String,
        /// The summary text used.
        text: String,
    },
    /// An effort log's header.
    Header {
        /// The effort.
        effort: String,
    },
    /// Stored messages of one log, by sequence number, in order.
    Messages {
        /// The log.
        log: LogRef,
        /// Their sequence numbers.
        seqs: Vec<u64>,
    },
    /// The user message of the turn in progress.
    Pending {
        /// Its text.
        text: String,
    },
    /// An attachment in the form it was shown.
    Attachment {
        /// Its id.
        id: String,
        /// Full or compressed.
        mode: crate::compaction::AttachmentMode,
    },
    /// The rolling summary, by its text.
    Rolling {
        /// The rendered summary.
        text: String,
    },
}

/// The working context of one request, and why it is what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextPlan {
    /// A hash of the plan's content (items, reasons, budget, message bytes), 16 hex digits.
    /// Equal plans have equal ids on every platform.
    pub plan_id: String,
    /// A hash of the messages alone: the request bytes a replay must reproduce.
    pub request_hash: String,
    /// The turn the plan was built in (the turn in progress, or the last one).
    pub turn: u64,
    /// The context mode it was built with.
    pub mode: ContextMode,
    /// The budget.
    pub budget: Budget,
    /// Included items in context order.
    pub included: Vec<IncludedItem>,
    /// Excluded items and groups.
    pub excluded: Vec<ExcludedItem>,
    /// Token totals.
    pub totals: PlanTotals,
    /// The budget meter.
    pub meter: BudgetMeter,
    /// How to rebuild the messages from stored records.
    pub recipe: Vec<RecipePart>,
    /// The messages, in order, exactly as they are sent.
    pub messages: Vec<ContextMessage>,
}

impl ContextPlan {
    /// Serialises the plan as compact JSON. The same session state always gives the same bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plans contain only serialisable data")
    }

    /// The included item with this id.
    pub fn item(&self, id: &str) -> Option<&IncludedItem> {
        self.included.iter().find(|i| i.id == id)
    }

    /// The exclusion with this id.
    pub fn exclusion(&self, id: &str) -> Option<&ExcludedItem> {
        self.excluded.iter().find(|i| i.id == id)
    }
}

/// What changed between two consecutive plans.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanDiff {
    /// Items in the new plan that were not in the old one, with why they are in.
    pub entered: Vec<DiffEntry>,
    /// Items of the old plan that are not in the new one, with why they left.
    pub left: Vec<DiffEntry>,
    /// Items in both whose token count changed (a log that grew).
    pub changed: Vec<DiffEntry>,
    /// New total minus old total.
    pub token_delta: i64,
}

/// One line of a [`PlanDiff`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffEntry {
    /// The item id.
    pub id: String,
    /// Its tokens in the plan it is listed from (for `changed`, the new count).
    pub tokens: u64,
    /// Why: an inclusion reason code for entered items, an exclusion reason code (or `gone`)
    /// for items that left, `grew`/`shrank` for changed ones.
    pub why: String,
}

impl InclusionReason {
    /// The reason code as written in plans (the `code` field of its JSON form).
    pub fn code(&self) -> &'static str {
        match self {
            InclusionReason::SystemPrompt => "system_prompt",
            InclusionReason::RecentlyReferenced { .. } => "recently_referenced",
            InclusionReason::AmbientWindow => "ambient_window",
            InclusionReason::Expanded { .. } => "expanded",
            InclusionReason::OpenEffort => "open_effort",
            InclusionReason::ActiveEffort => "active_effort",
            InclusionReason::CurrentUserMessage => "current_user_message",
            InclusionReason::Pinned { .. } => "pinned",
            InclusionReason::AutoRetrieved { .. } => "auto_retrieved",
            InclusionReason::AutoExpanded { .. } => "auto_expanded",
            InclusionReason::Attachment { .. } => "attachment",
            InclusionReason::RollingSummary { .. } => "rolling_summary",
        }
    }
}

/// Compares two plans: what entered, what left and why, what changed size.
pub fn diff_plans(old: &ContextPlan, new: &ContextPlan) -> PlanDiff {
    let old = crate::telemetry::RequestRecord::of(old, None);
    let new = crate::telemetry::RequestRecord::of(new, None);
    crate::telemetry::diff_records(Some(&old), &new)
}

/// The diff of included items, shared by live plans and recorded requests.
pub(crate) fn diff_items(
    old_items: &BTreeMap<&str, &crate::telemetry::ItemRef>,
    old_total: u64,
    new_included: &[crate::telemetry::ItemRef],
    new_excluded: &[ExcludedItem],
    new_total: u64,
) -> PlanDiff {
    let new_ids: BTreeSet<&str> = new_included.iter().map(|i| i.id.as_str()).collect();
    let mut diff = PlanDiff {
        token_delta: new_total as i64 - old_total as i64,
        ..PlanDiff::default()
    };
    for item in new_included {
        match old_items.get(item.id.as_str()) {
            None => diff.entered.push(DiffEntry {
                id: item.id.clone(),
                tokens: item.tokens,
                why: item.why.clone(),
            }),
            Some(before) if before.tokens != item.tokens => diff.changed.push(DiffEntry {
                id: item.id.clone(),
                tokens: item.tokens,
                why: if item.tokens > before.tokens {
                    "grew"
                } else {
                    "shrank"
                }
                .to_string(),
            }),
            Some(_) => {}
        }
    }
    for (id, item) in old_items {
        if new_ids.contains(id) {
            continue;
        }
        let why = new_excluded
            .iter()
            .find(|e| e.id == *id)
            .map(|e| e.reason.code().to_string())
            .or_else(|| {
                // Ambient exchanges leave as part of the grouped window exclusion.
                id.starts_with("ambient:").then(|| {
                    new_excluded
                        .iter()
                        .find(|e| e.id.starts_with("ambient:before:"))
                        .map(|e| e.reason.code().to_string())
                })?
            })
            .unwrap_or_else(|| "gone".to_string());
        diff.left.push(DiffEntry {
            id: id.to_string(),
            tokens: item.tokens,
            why,
        });
    }
    diff
}

// ----- building --------------------------------------------------------------------------

/// How a candidate is rendered into messages.
#[derive(Debug, Clone)]
enum Part {
    System,
    Summary(usize),
    /// Positions in the loaded ambient log.
    Ambient(Vec<usize>),
    /// An effort's log: header plus its messages from `first` on (earlier turns trimmed),
    /// without the turns compaction moved out.
    Log {
        effort: usize,
        first: usize,
    },
    Pending,
    Attachment(String),
    Rolling,
}

/// Fill tiers, in order.
const TIER_MANDATORY: u8 = 0;
const TIER_STICKY: u8 = 1;
const TIER_ACTIVE: u8 = 2;
const TIER_OPEN: u8 = 3;
const TIER_EXPANDED: u8 = 4;
const TIER_LEASED: u8 = 5;
const TIER_AMBIENT: u8 = 6;
const TIER_SUMMARY: u8 = 7;
const TIER_EPHEMERAL: u8 = 8;
/// Attachments of stored messages come last: they depend on their message's item, which must
/// have been placed first, and a compaction compresses them before anything else anyway.
const TIER_ATTACHMENT: u8 = 9;

/// Candidate groups whose atoms must stay contiguous: once one is left out for budget, the
/// older ones are left out too, so the context never has a gap in the middle of a dialogue.
const GROUP_AMBIENT: u8 = 1;

#[derive(Debug, Clone)]
struct Candidate {
    id: String,
    section: Section,
    part: Part,
    tokens: u64,
    tier: u8,
    /// Within a tier, higher first.
    rank: (u32, u64),
    /// Position in the rendered context.
    render: (u8, u64, u64),
    reason: InclusionReason,
    ttl: TtlState,
    activation: u32,
    ties: Ties,
}

/// How a candidate came to be and what it is tied to. Nearly every candidate has the
/// defaults (no pin, not automatic, no group, no dependency), so literals spell out only
/// what differs.
#[derive(Debug, Clone, Default)]
struct Ties {
    /// A leased pin: counts against the leased budget.
    leased: bool,
    /// Pulled in by automatic retrieval (context modes).
    auto: bool,
    /// Pinned (sticky or leased).
    pinned: bool,
    /// Candidates of one non-zero group stop at the first that does not fit.
    group: u8,
    /// Candidate ids that must be included for this one to be.
    depends_on: Vec<String>,
}

fn message(role: Role, content: &str) -> ContextMessage {
    ContextMessage {
        role,
        content: content.to_string(),
    }
}

/// Where the turns of a log start, by position, oldest first: `(turn, first position, tokens)`.
/// Turns that compaction moved out are skipped.
fn turn_atoms(session: &Session, effort: &Effort) -> Vec<(u64, usize, u64)> {
    let mut atoms: Vec<(u64, usize, u64)> = Vec::new();
    for (position, m) in effort.messages.iter().enumerate() {
        if session.turn_compacted(&effort.id, m.turn) {
            continue;
        }
        match atoms.last_mut() {
            Some(last) if last.0 == m.turn => last.2 += u64::from(m.tokens),
            _ => atoms.push((m.turn, position, u64::from(m.tokens))),
        }
    }
    atoms
}

/// A log's tokens as the context shows it: header and every turn not compacted.
fn log_tokens(session: &Session, effort: &Effort) -> u64 {
    u64::from(effort.header_tokens) + turn_atoms(session, effort).iter().map(|a| a.2).sum::<u64>()
}

/// The hash of a request's messages, 16 hex digits: each message's role, its length in bytes
/// and its content, in order, read eight bytes at a time (little-endian), each word folded in
/// with a multiply and a shift. The length keeps any content from imitating a message boundary.
/// Equal messages give equal hashes on every platform. Word by word rather than byte by byte
/// (as FNV-1a would) because a request is the whole context and this runs for every plan.
pub fn request_hash(messages: &[ContextMessage]) -> String {
    let mut hash = FNV_OFFSET;
    for message in messages {
        hash = fold_words(hash, message.role.as_str().as_bytes());
        hash = fold_words(hash, &(message.content.len() as u64).to_le_bytes());
        hash = fold_words(hash, message.content.as_bytes());
    }
    format!("{hash:016x}")
}

/// Folds `bytes` into `hash` eight at a time; the last, shorter word is padded with zeros
/// (callers hash a length first wherever a boundary matters).
fn fold_words(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let fold = |hash: u64, word: u64| {
        let mixed = (hash ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        mixed ^ (mixed >> 29)
    };
    for word in &mut words {
        hash = fold(
            hash,
            u64::from_le_bytes(word.try_into().expect("eight bytes")),
        );
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        hash = fold(hash, u64::from_le_bytes(last));
    }
    hash
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_feed(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a, 64 bits, as 16 hex digits. Enough to name a plan for replay and comparison (not a
/// security boundary), and it needs no dependency.
pub(crate) fn fnv_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv_feed(FNV_OFFSET, bytes))
}

/// An automatic retrieval for the user's message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AutoHit {
    pub(crate) effort: usize,
    pub(crate) score: f64,
    pub(crate) matched: Vec<String>,
}

impl Session {
    /// Efforts the planner would pull in for `query`: concluded, out of working memory, not
    /// expanded, matching by id or by at least `min_keyword_overlap` words.
    pub(crate) fn auto_hits(&self, query: &str) -> Vec<AutoHit> {
        let min = self.config.min_keyword_overlap as usize;
        let Some(ranked) = self.efforts.search.search_bounded(
            query,
            &self.efforts.index,
            AUTO_SUMMARY_LIMIT * 3,
            AUTO_MAX_POSTINGS,
        ) else {
            return Vec::new();
        };
        ranked
            .into_iter()
            .filter(|hit| {
                let effort = &self.efforts.list[hit.effort];
                let in_memory = !effort.evicted;
                let id_hit = hit.matched.contains(&effort.id);
                !in_memory && (id_hit || hit.matched.len() >= min)
            })
            .take(AUTO_SUMMARY_LIMIT)
            .map(|hit| AutoHit {
                effort: hit.effort,
                score: hit.score,
                matched: hit.matched,
            })
            .collect()
    }

    /// Raw logs the next plan would include if they were loaded (pinned logs and Heavy mode's
    /// best match). A host that opened the session from a store attaches them before planning.
    pub fn logs_needed_for_plan(&self) -> Vec<String> {
        let mut needed: BTreeSet<String> = BTreeSet::new();
        for pin in &self.pins.list {
            if let Some(id) = pin.target.strip_prefix("effort:") {
                if self.effort(id).is_some_and(|e| e.log != LogState::Loaded) {
                    needed.insert(id.to_string());
                }
            }
        }
        if self.config.context_mode == ContextMode::Heavy {
            if let Some((text, _)) = self.pending_user_message() {
                if let Some(best) = self.auto_hits(text).first() {
                    let effort = &self.efforts.list[best.effort];
                    if effort.log != LogState::Loaded {
                        needed.insert(effort.id.clone());
                    }
                }
            }
        }
        needed.into_iter().collect()
    }

    fn activation_of(&self, id: &str) -> u32 {
        self.pins.activation_of(id)
    }

    /// Builds the context plan for the current state: the next request's messages, with the
    /// reason for every candidate, within the request budget. The same state always gives a
    /// byte-identical plan.
    pub fn build_plan(&self) -> ContextPlan {
        self.plan(true)
    }

    /// Builds the plan; without `render`, messages, the recipe and the ids are left empty (what
    /// token totals need, at a fraction of the cost).
    pub(crate) fn plan(&self, render: bool) -> ContextPlan {
        let turn = self.turn;
        let config = &self.config;
        let eviction = u64::from(config.summary_eviction_threshold);
        let decay = u64::from(config.decay_threshold);
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut excluded: Vec<ExcludedItem> = Vec::new();
        let exclude =
            |excluded: &mut Vec<ExcludedItem>, id: String, section, tokens, count, reason| {
                excluded.push(ExcludedItem {
                    id,
                    section,
                    tokens,
                    count,
                    reason,
                })
            };

        candidates.push(Candidate {
            id: "system".to_string(),
            section: Section::System,
            part: Part::System,
            tokens: u64::from(self.system_tokens),
            tier: TIER_MANDATORY,
            rank: (0, 0),
            render: (0, 0, 0),
            reason: InclusionReason::SystemPrompt,
            ttl: TtlState::Permanent,
            activation: 0,
            ties: Ties::default(),
        });
        let pending = self.pending_user_message();
        if let Some((_, tokens)) = pending {
            candidates.push(Candidate {
                id: "pending".to_string(),
                section: Section::Pending,
                part: Part::Pending,
                tokens: u64::from(tokens),
                tier: TIER_MANDATORY,
                rank: (0, 0),
                render: (7, 0, 0),
                reason: InclusionReason::CurrentUserMessage,
                ttl: TtlState::Ephemeral,
                activation: 0,
                ties: Ties::default(),
            });
        }

        // Summaries in working memory; their raw logs are excluded as summarized or decayed.
        let expanded: BTreeMap<usize, usize> = self
            .efforts
            .placement
            .expanded
            .iter()
            .enumerate()
            .map(|(order, e)| (e.effort, order))
            .collect();
        for &(seq, index) in &self.efforts.placement.in_memory {
            let effort = &self.efforts.list[index];
            let Some(summary) = &effort.summary else {
                continue;
            };
            let summary_id = format!("summary:{}", effort.id);
            if expanded.contains_key(&index) {
                exclude(
                    &mut excluded,
                    summary_id,
                    Section::Summary,
                    u64::from(summary.tokens),
                    1,
                    ExclusionReason::Expanded,
                );
                continue;
            }
            let idle = turn - effort.last_referenced_turn;
            candidates.push(Candidate {
                activation: self.activation_of(&summary_id),
                rank: (self.activation_of(&summary_id), seq),
                id: summary_id,
                section: Section::Summary,
                part: Part::Summary(index),
                tokens: u64::from(summary.tokens),
                tier: TIER_SUMMARY,
                render: (1, seq, 0),
                reason: InclusionReason::RecentlyReferenced {
                    turns_since_reference: idle,
                    turns_until_eviction: eviction.saturating_sub(idle),
                },
                ttl: TtlState::Eviction {
                    turns: eviction.saturating_sub(idle),
                },
                ties: Ties::default(),
            });
        }

        // The ambient window, one candidate per exchange.
        let (count_start, window_start) = self.ambient_window_bounds();
        let window = &self.ambient.messages[window_start..];
        let mut exchanges: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (offset, m) in window.iter().enumerate() {
            exchanges
                .entry(m.turn)
                .or_default()
                .push(window_start + offset);
        }
        for (&exchange_turn, positions) in &exchanges {
            let id = format!("ambient:{exchange_turn}");
            if let Some(reason) = self.compaction.compacted.get(&id) {
                let tokens = positions
                    .iter()
                    .map(|&p| u64::from(self.ambient.messages[p].tokens))
                    .sum();
                exclude(
                    &mut excluded,
                    id,
                    Section::Ambient,
                    tokens,
                    1,
                    compacted_reason(*reason),
                );
                continue;
            }
            candidates.push(Candidate {
                activation: self.activation_of(&id),
                rank: (0, exchange_turn),
                tokens: positions
                    .iter()
                    .map(|&p| u64::from(self.ambient.messages[p].tokens))
                    .sum(),
                render: (2, self.ambient.messages[positions[0]].seq, 0),
                id,
                section: Section::Ambient,
                part: Part::Ambient(positions.clone()),
                tier: TIER_AMBIENT,
                reason: InclusionReason::AmbientWindow,
                ttl: TtlState::Permanent,
                ties: Ties {
                    group: GROUP_AMBIENT,
                    ..Ties::default()
                },
            });
        }

        // Expanded logs, then open logs (the active one last).
        for (order, e) in self.efforts.placement.expanded.iter().enumerate() {
            let effort = &self.efforts.list[e.effort];
            let idle = turn - e.last_referenced_turn;
            let id = format!("effort:{}", effort.id);
            candidates.push(Candidate {
                activation: self.activation_of(&id),
                rank: (self.activation_of(&id), e.last_referenced_turn),
                id,
                section: Section::Expanded,
                part: Part::Log {
                    effort: e.effort,
                    first: 0,
                },
                tokens: log_tokens(self, effort),
                tier: TIER_EXPANDED,
                render: (3, order as u64, 0),
                reason: InclusionReason::Expanded {
                    turns_since_reference: idle,
                    turns_until_auto_collapse: decay.saturating_sub(idle),
                },
                ttl: TtlState::Decay {
                    turns: decay.saturating_sub(idle),
                },
                ties: Ties::default(),
            });
        }
        for (order, &index) in self.efforts.placement.open.iter().enumerate() {
            let effort = &self.efforts.list[index];
            debug_assert_eq!(effort.status, EffortStatus::Open);
            let active = Some(index) == self.efforts.placement.active;
            let id = format!("effort:{}", effort.id);
            let last_activity = effort
                .messages
                .last()
                .map_or(effort.opened_turn, |m| m.turn);
            candidates.push(Candidate {
                activation: self.activation_of(&id),
                rank: (0, last_activity),
                id,
                section: Section::Open,
                part: Part::Log {
                    effort: index,
                    first: 0,
                },
                tokens: log_tokens(self, effort),
                tier: if active { TIER_ACTIVE } else { TIER_OPEN },
                render: if active {
                    (6, 0, 0)
                } else {
                    (5, order as u64, 0)
                },
                reason: if active {
                    InclusionReason::ActiveEffort
                } else {
                    InclusionReason::OpenEffort
                },
                ttl: TtlState::Permanent,
                ties: Ties::default(),
            });
        }

        // Raw logs represented by their summaries, and the evicted group.
        for &(_, index) in &self.efforts.placement.in_memory {
            if expanded.contains_key(&index) {
                continue;
            }
            let effort = &self.efforts.list[index];
            let reason = if self.efforts.auto_collapsed_at.contains_key(&index) {
                ExclusionReason::Decayed
            } else {
                ExclusionReason::Summarized
            };
            exclude(
                &mut excluded,
                format!("effort:{}", effort.id),
                Section::RawLog,
                effort.raw_tokens,
                1,
                reason,
            );
        }
        let unreferenced_count =
            self.efforts.placement.evicted.count - self.efforts.placement.evicted.budget_count;
        if unreferenced_count > 0 {
            exclude(
                &mut excluded,
                "evicted".to_string(),
                Section::Summary,
                self.efforts.placement.evicted.tokens
                    - self.efforts.placement.evicted.budget_tokens,
                unreferenced_count,
                ExclusionReason::EvictedUnreferenced,
            );
        }
        if self.efforts.placement.evicted.budget_count > 0 {
            exclude(
                &mut excluded,
                "evicted:over_budget".to_string(),
                Section::Summary,
                self.efforts.placement.evicted.budget_tokens,
                self.efforts.placement.evicted.budget_count,
                ExclusionReason::EvictedOverBudget,
            );
        }
        // Exchanges among the last `ambient_window` that the ambient token budget left out,
        // one by one (there are fewer than `ambient_window` of them).
        let mut position = count_start;
        while position < window_start {
            let turn_of = self.ambient.messages[position].turn;
            let mut tokens = 0u64;
            while position < window_start && self.ambient.messages[position].turn == turn_of {
                tokens += u64::from(self.ambient.messages[position].tokens);
                position += 1;
            }
            exclude(
                &mut excluded,
                format!("ambient:{turn_of}"),
                Section::Ambient,
                tokens,
                1,
                ExclusionReason::OverAmbientBudget,
            );
        }
        // Older ambient messages of a session opened from a store are stored but not loaded;
        // they are outside the window all the same.
        let outside = self.ambient.offset + count_start as u64;
        if outside > 0 {
            let counted_tokens: u64 = self.ambient.messages[count_start..]
                .iter()
                .map(|m| u64::from(m.tokens))
                .sum();
            let first_turn = self
                .ambient
                .messages
                .get(count_start)
                .map_or(turn + 1, |m| m.turn);
            exclude(
                &mut excluded,
                format!("ambient:before:{first_turn}"),
                Section::Ambient,
                self.ambient.tokens - counted_tokens,
                outside,
                ExclusionReason::OutsideAmbientWindow,
            );
        }

        // Turns of open logs that compaction moved out: one grouped exclusion per effort.
        for &index in &self.efforts.placement.open {
            let effort = &self.efforts.list[index];
            let compacted: Vec<&crate::model::Message> = effort
                .messages
                .iter()
                .filter(|m| self.turn_compacted(&effort.id, m.turn))
                .collect();
            if !compacted.is_empty() {
                exclude(
                    &mut excluded,
                    format!("effort:{}@compacted", effort.id),
                    Section::Open,
                    compacted.iter().map(|m| u64::from(m.tokens)).sum(),
                    compacted.len() as u64 / 2,
                    ExclusionReason::CompactedLevel3,
                );
            }
        }
        if let Some(rolling) = &self.compaction.rolling {
            candidates.push(Candidate {
                id: "rolling".to_string(),
                section: Section::Rolling,
                part: Part::Rolling,
                tokens: u64::from(rolling.tokens),
                tier: TIER_AMBIENT,
                rank: (u32::MAX, u64::MAX),
                render: (1, u64::MAX, 0),
                reason: InclusionReason::RollingSummary {
                    covers: crate::compaction::rolling::describe_ranges(&rolling.covers),
                },
                ttl: TtlState::Permanent,
                activation: 0,
                ties: Ties::default(),
            });
        }
        for id in self.attachments_in_working_set() {
            let stored = &self.attachments.by_id[&id];
            let pending = stored.log.is_none();
            let depends_on = match &stored.log {
                None => "pending".to_string(),
                Some(LogRef::Ambient) => format!("ambient:{}", stored.message_turn),
                Some(LogRef::Effort(effort)) => format!("effort:{effort}"),
            };
            candidates.push(Candidate {
                id: format!("attachment:{id}"),
                section: Section::Attachment,
                part: Part::Attachment(id.clone()),
                tokens: u64::from(stored.attachment.tokens()),
                tier: if pending {
                    TIER_MANDATORY
                } else {
                    TIER_ATTACHMENT
                },
                rank: (0, stored.message_seq),
                render: if pending {
                    (6, u64::MAX, stored.message_seq)
                } else {
                    (1, u64::MAX, 1 + stored.message_seq)
                },
                reason: InclusionReason::Attachment {
                    mode: stored.attachment.mode,
                },
                ttl: TtlState::Permanent,
                activation: 0,
                ties: Ties {
                    depends_on: vec![depends_on],
                    ..Ties::default()
                },
            });
        }

        self.apply_pins(&mut candidates, &mut excluded);
        self.add_auto_candidates(
            &mut candidates,
            &mut excluded,
            pending.map(|(text, _)| text),
        );

        self.fill(candidates, excluded, render)
    }

    /// Pins raise their targets' tier, or bring targets that are not in the working set.
    fn apply_pins(&self, candidates: &mut Vec<Candidate>, excluded: &mut Vec<ExcludedItem>) {
        for pin in &self.pins.list {
            let (tier, ttl, leased) = match (&pin.kind, &pin.lease) {
                (PinKind::Sticky, _) => (TIER_STICKY, TtlState::Permanent, false),
                (PinKind::Leased, Some(LeaseScope::Turns { remaining })) => {
                    (TIER_LEASED, TtlState::Lease { turns: *remaining }, true)
                }
                (PinKind::Leased, Some(LeaseScope::Task { effort })) => (
                    TIER_LEASED,
                    TtlState::Task {
                        effort: effort.clone(),
                    },
                    true,
                ),
                (PinKind::Leased, None) => (TIER_LEASED, TtlState::Lease { turns: 0 }, true),
                (PinKind::Ephemeral, _) => (TIER_EPHEMERAL, TtlState::Ephemeral, false),
            };
            let reason = InclusionReason::Pinned {
                kind: pin.kind,
                pin: pin.id,
            };
            if let Some(existing) = candidates.iter_mut().find(|c| c.id == pin.target) {
                // A pin never lowers an item's place: it only lifts it.
                if tier < existing.tier {
                    existing.tier = tier;
                    existing.reason = reason;
                    existing.ttl = ttl;
                    existing.ties.leased = leased;
                }
                existing.ties.pinned = true;
                continue;
            }
            let Some(candidate) =
                self.pinned_candidate(&pin.target, tier, ttl, reason, leased, excluded)
            else {
                continue;
            };
            candidates.push(candidate);
        }
        for expired in &self.pins.expired {
            excluded.push(ExcludedItem {
                id: format!("pin:{}", expired.id),
                section: section_of_target(&expired.target),
                tokens: 0,
                count: 1,
                reason: ExclusionReason::TtlExpired,
            });
        }
    }

    /// A candidate for a pinned target that is not in the working set by itself.
    fn pinned_candidate(
        &self,
        target: &str,
        tier: u8,
        ttl: TtlState,
        reason: InclusionReason,
        leased: bool,
        excluded: &mut Vec<ExcludedItem>,
    ) -> Option<Candidate> {
        let base = |id: &str, section, part, tokens, render| Candidate {
            id: id.to_string(),
            section,
            part,
            tokens,
            tier,
            rank: (self.activation_of(id), 0),
            render,
            reason: reason.clone(),
            ttl: ttl.clone(),
            activation: self.activation_of(id),
            ties: Ties {
                leased,
                pinned: true,
                ..Ties::default()
            },
        };
        let (kind, rest) = target.split_once(':')?;
        match kind {
            "summary" => {
                let index = *self.efforts.index.get(rest)?;
                let effort = &self.efforts.list[index];
                let summary = effort.summary.as_ref()?;
                if self.efforts.is_expanded(index) {
                    return None;
                }
                Some(base(
                    target,
                    Section::Summary,
                    Part::Summary(index),
                    u64::from(summary.tokens),
                    (1, effort.concluded_seq.unwrap_or_default(), 0),
                ))
            }
            "effort" => {
                let index = *self.efforts.index.get(rest)?;
                let effort = &self.efforts.list[index];
                if effort.log != LogState::Loaded {
                    excluded.push(ExcludedItem {
                        id: target.to_string(),
                        section: Section::Expanded,
                        tokens: effort.raw_tokens,
                        count: 1,
                        reason: ExclusionReason::NotLoaded,
                    });
                    return None;
                }
                // The pinned log stands in for the summary.
                excluded.retain(|e| e.id != target);
                Some(base(
                    target,
                    Section::Expanded,
                    Part::Log {
                        effort: index,
                        first: 0,
                    },
                    effort.raw_tokens,
                    (3, 1_000_000 + index as u64, 0),
                ))
            }
            "ambient" => {
                let exchange_turn: u64 = rest.parse().ok()?;
                let positions: Vec<usize> = self
                    .ambient
                    .messages
                    .iter()
                    .enumerate()
                    .rev()
                    .take_while(|(_, m)| m.turn >= exchange_turn)
                    .filter(|(_, m)| m.turn == exchange_turn)
                    .map(|(p, _)| p)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let first = *positions.first()?;
                let tokens = positions
                    .iter()
                    .map(|&p| u64::from(self.ambient.messages[p].tokens))
                    .sum();
                Some(base(
                    target,
                    Section::Ambient,
                    Part::Ambient(positions),
                    tokens,
                    (2, self.ambient.messages[first].seq, 0),
                ))
            }
            _ => None,
        }
    }

    /// Items pulled in for the user's message by the context mode (or listed as `mode_off`).
    fn add_auto_candidates(
        &self,
        candidates: &mut Vec<Candidate>,
        excluded: &mut Vec<ExcludedItem>,
        query: Option<&str>,
    ) {
        let Some(query) = query else { return };
        let hits = self.auto_hits(query);
        for (rank, hit) in hits.iter().enumerate() {
            let effort = &self.efforts.list[hit.effort];
            let summary_id = format!("summary:{}", effort.id);
            let Some(summary) = &effort.summary else {
                continue;
            };
            if candidates
                .iter()
                .any(|c| c.id == summary_id || c.id == format!("effort:{}", effort.id))
            {
                continue;
            }
            if self.config.context_mode == ContextMode::Off {
                excluded.push(ExcludedItem {
                    id: summary_id,
                    section: Section::Summary,
                    tokens: u64::from(summary.tokens),
                    count: 1,
                    reason: ExclusionReason::ModeOff,
                });
                continue;
            }
            let heavy_best = self.config.context_mode == ContextMode::Heavy && rank == 0;
            if heavy_best && effort.log == LogState::Loaded {
                excluded.push(ExcludedItem {
                    id: summary_id,
                    section: Section::Summary,
                    tokens: u64::from(summary.tokens),
                    count: 1,
                    reason: ExclusionReason::Superseded,
                });
                let id = format!("effort:{}", effort.id);
                candidates.push(Candidate {
                    activation: self.activation_of(&id),
                    rank: (u32::MAX - rank as u32, 0),
                    id,
                    section: Section::Expanded,
                    part: Part::Log {
                        effort: hit.effort,
                        first: 0,
                    },
                    tokens: effort.raw_tokens,
                    tier: TIER_EPHEMERAL,
                    render: (4, 0, 0),
                    reason: InclusionReason::AutoExpanded { score: hit.score },
                    ttl: TtlState::Ephemeral,
                    ties: Ties {
                        auto: true,
                        ..Ties::default()
                    },
                });
                continue;
            }
            candidates.push(Candidate {
                activation: self.activation_of(&summary_id),
                rank: (u32::MAX - rank as u32, 0),
                id: summary_id,
                section: Section::Summary,
                part: Part::Summary(hit.effort),
                tokens: u64::from(summary.tokens),
                tier: TIER_EPHEMERAL,
                render: (1, effort.concluded_seq.unwrap_or_default(), 0),
                reason: InclusionReason::AutoRetrieved {
                    score: hit.score,
                    matched: hit.matched.clone(),
                },
                ttl: TtlState::Ephemeral,
                ties: Ties {
                    auto: true,
                    ..Ties::default()
                },
            });
        }
    }

    /// Fills the budget tier by tier and renders the included items in context order.
    fn fill(
        &self,
        mut candidates: Vec<Candidate>,
        mut excluded: Vec<ExcludedItem>,
        render: bool,
    ) -> ContextPlan {
        let config = &self.config;
        let budget = config.request_budget();
        let leased_budget = u64::from(config.leased_token_budget);
        // Within a tier, candidates that depend on others come after them, so a dependency is
        // always placed (or left out) before the items that need it.
        candidates.sort_by(|a, b| {
            (
                a.tier,
                !a.ties.depends_on.is_empty(),
                Reverse(a.rank),
                &a.id,
            )
                .cmp(&(
                    b.tier,
                    !b.ties.depends_on.is_empty(),
                    Reverse(b.rank),
                    &b.id,
                ))
        });
        let mut used = 0u64;
        let mut leased_used = 0u64;
        let mut closed_groups: BTreeSet<u8> = BTreeSet::new();
        let mut chosen: Vec<(Candidate, u64, u32)> = Vec::new();
        let mut mandatory_over_budget = false;
        let mut placed: BTreeSet<String> = BTreeSet::new();
        for mut candidate in candidates {
            if !candidate.ties.depends_on.iter().all(|d| placed.contains(d)) {
                excluded.push(ExcludedItem {
                    id: candidate.id.clone(),
                    section: candidate.section,
                    tokens: candidate.tokens,
                    count: 1,
                    reason: ExclusionReason::DependencyExcluded,
                });
                continue;
            }
            if candidate.tier == TIER_MANDATORY {
                placed.insert(candidate.id.clone());
                used += candidate.tokens;
                mandatory_over_budget = used > budget;
                chosen.push((candidate, 0, 1));
                continue;
            }
            let leased_room = if candidate.ties.leased {
                leased_budget.saturating_sub(leased_used)
            } else {
                u64::MAX
            };
            let room = budget.saturating_sub(used).min(leased_room);
            let over = |excluded: &mut Vec<ExcludedItem>,
                        candidate: &Candidate,
                        tokens: u64,
                        count: u64| {
                excluded.push(ExcludedItem {
                    id: candidate.id.clone(),
                    section: candidate.section,
                    tokens,
                    count,
                    reason: ExclusionReason::OverBudget,
                });
            };
            if candidate.ties.group != 0 && closed_groups.contains(&candidate.ties.group) {
                over(&mut excluded, &candidate, candidate.tokens, 1);
                continue;
            }
            match candidate.part {
                Part::Log { effort, .. } => {
                    let log = &self.efforts.list[effort];
                    let header = u64::from(log.header_tokens);
                    if header > room {
                        over(&mut excluded, &candidate, candidate.tokens, 1);
                        continue;
                    }
                    // Whole turns, newest first, while they fit; older ones are left out together.
                    let atoms = turn_atoms(self, log);
                    let mut kept_tokens = header;
                    let mut first = log.messages.len();
                    let mut kept = 0u32;
                    for &(_, position, tokens) in atoms.iter().rev() {
                        if kept_tokens + tokens > room {
                            break;
                        }
                        kept_tokens += tokens;
                        first = position;
                        kept += 1;
                    }
                    let dropped = atoms.len() as u64 - u64::from(kept);
                    if dropped > 0 {
                        let cut_turn = atoms[atoms.len() - kept as usize - 1].0 + 1;
                        excluded.push(ExcludedItem {
                            id: format!("{}@before:{cut_turn}", candidate.id),
                            section: candidate.section,
                            tokens: candidate.tokens - kept_tokens,
                            count: dropped,
                            reason: ExclusionReason::OverBudget,
                        });
                    }
                    candidate.part = Part::Log { effort, first };
                    placed.insert(candidate.id.clone());
                    used += kept_tokens;
                    if candidate.ties.leased {
                        leased_used += kept_tokens;
                    }
                    chosen.push((candidate, kept_tokens, kept + 1));
                }
                _ if candidate.tokens <= room => {
                    placed.insert(candidate.id.clone());
                    used += candidate.tokens;
                    if candidate.ties.leased {
                        leased_used += candidate.tokens;
                    }
                    let tokens = candidate.tokens;
                    chosen.push((candidate, tokens, 1));
                }
                _ => {
                    if candidate.ties.group != 0 {
                        closed_groups.insert(candidate.ties.group);
                    }
                    over(&mut excluded, &candidate, candidate.tokens, 1);
                }
            }
        }

        chosen.sort_by(|a, b| (a.0.render, &a.0.id).cmp(&(b.0.render, &b.0.id)));
        let mut plan = ContextPlan {
            plan_id: String::new(),
            request_hash: String::new(),
            turn: self.turn,
            mode: config.context_mode,
            budget: Budget {
                context_window: u64::from(config.context_window),
                reserved_output_tokens: u64::from(config.reserved_output_tokens),
                request_budget: budget,
                leased_budget,
                leased_used,
                mandatory_over_budget,
            },
            included: Vec::with_capacity(chosen.len()),
            excluded,
            totals: PlanTotals::default(),
            meter: BudgetMeter {
                mode: config.context_mode,
                auto_items: 0,
                auto_tokens: 0,
                percent_of_budget: 0.0,
                line: String::new(),
            },
            recipe: Vec::new(),
            messages: Vec::new(),
        };
        for (candidate, tokens, atoms) in chosen {
            let tokens = if candidate.tier == TIER_MANDATORY {
                candidate.tokens
            } else {
                tokens
            };
            let first_message = plan.messages.len();
            if render {
                self.render(&candidate.part, &mut plan.messages, &mut plan.recipe);
            }
            let totals = &mut plan.totals;
            totals.context_tokens += tokens;
            match candidate.section {
                Section::System => totals.system_tokens += tokens,
                Section::Summary => totals.summary_tokens += tokens,
                Section::Ambient => totals.ambient_tokens += tokens,
                Section::Expanded => totals.expansion_tokens += tokens,
                Section::Open => totals.open_tokens += tokens,
                Section::Pending => totals.pending_tokens += tokens,
                Section::Attachment => totals.attachment_tokens += tokens,
                Section::Rolling => totals.rolling_tokens += tokens,
                Section::RawLog => {}
            }
            if candidate.ties.pinned {
                totals.pinned_tokens += tokens;
            }
            let automatic = candidate.ties.auto
                || matches!(candidate.ttl, TtlState::Ephemeral) && candidate.tier == TIER_EPHEMERAL;
            if automatic {
                totals.auto_tokens += tokens;
                plan.meter.auto_items += 1;
                plan.meter.auto_tokens += tokens;
            }
            plan.included.push(IncludedItem {
                id: candidate.id,
                section: candidate.section,
                tokens,
                reason: candidate.reason,
                priority: candidate.tier,
                ttl: candidate.ttl,
                depends_on: Vec::new(),
                activation: candidate.activation,
                atoms,
                first_message,
                message_count: plan.messages.len() - first_message,
            });
        }
        plan.totals.naive_tokens = self.naive_tokens() + plan.totals.pending_tokens;
        plan.totals.excluded_tokens = plan.excluded.iter().map(|e| e.tokens).sum();
        plan.meter.percent_of_budget = if budget == 0 {
            0.0
        } else {
            (plan.totals.context_tokens as f64 * 1000.0 / budget as f64).round() / 10.0
        };
        plan.meter.line = meter_line(&plan.meter);
        if !render {
            return plan;
        }
        plan.request_hash = request_hash(&plan.messages);
        // The messages are represented by their hash: serialising and hashing them a second
        // time would double the cost of a plan, which grows with the context.
        let messages = std::mem::take(&mut plan.messages);
        let mut identity = serde_json::to_vec(&plan).expect("plans serialise");
        identity.extend_from_slice(plan.request_hash.as_bytes());
        plan.plan_id = format!("{:016x}", fold_words(FNV_OFFSET, &identity));
        plan.messages = messages;
        plan
    }

    fn render(
        &self,
        part: &Part,
        messages: &mut Vec<ContextMessage>,
        recipe: &mut Vec<RecipePart>,
    ) {
        match part {
            Part::System => {
                messages.push(message(Role::System, &self.system_prompt));
                recipe.push(RecipePart::System {
                    hash: self.system_hash.clone(),
                });
            }
            Part::Summary(index) => {
                let effort = &self.efforts.list[*index];
                if let Some(summary) = &effort.summary {
                    messages.push(message(Role::System, &summary.rendered));
                    recipe.push(RecipePart::Summary {
                        effort: effort.id.clone(),
                        text: summary.text.clone(),
                    });
                }
            }
            Part::Ambient(positions) => {
                for &p in positions {
                    let m = &self.ambient.messages[p];
                    messages.push(message(m.role, &m.content));
                }
                recipe.push(RecipePart::Messages {
                    log: LogRef::Ambient,
                    seqs: positions
                        .iter()
                        .map(|&p| self.ambient.messages[p].seq)
                        .collect(),
                });
            }
            Part::Log { effort, first } => {
                let effort = &self.efforts.list[*effort];
                messages.push(message(Role::System, &effort.header));
                recipe.push(RecipePart::Header {
                    effort: effort.id.clone(),
                });
                let kept: Vec<&crate::model::Message> = effort.messages[*first..]
                    .iter()
                    .filter(|m| !self.turn_compacted(&effort.id, m.turn))
                    .collect();
                messages.extend(kept.iter().map(|m| message(m.role, &m.content)));
                if !kept.is_empty() {
                    recipe.push(RecipePart::Messages {
                        log: LogRef::Effort(effort.id.clone()),
                        seqs: kept.iter().map(|m| m.seq).collect(),
                    });
                }
            }
            Part::Attachment(id) => {
                if let Some(stored) = self.attachments.by_id.get(id) {
                    messages.push(message(Role::User, &stored.attachment.context_text()));
                    recipe.push(RecipePart::Attachment {
                        id: id.clone(),
                        mode: stored.attachment.mode,
                    });
                }
            }
            Part::Rolling => {
                if let Some(rolling) = &self.compaction.rolling {
                    messages.push(message(Role::System, &rolling.rendered));
                    recipe.push(RecipePart::Rolling {
                        text: rolling.rendered.clone(),
                    });
                }
            }
            Part::Pending => {
                if let Some((text, _)) = self.pending_user_message() {
                    messages.push(message(Role::User, text));
                    recipe.push(RecipePart::Pending {
                        text: text.to_string(),
                    });
                }
            }
        }
    }

    /// The messages of the working context, in order (the plan's messages).
    pub fn build_context(&self) -> Vec<ContextMessage> {
        self.build_plan().messages
    }

    /// Rebuilds a request's messages from a stored recipe, reading every part from the stored
    /// records: the check that a logged plan can be replayed to identical request bytes.
    ///
    /// # Errors
    /// A sentence naming the first part that cannot be rebuilt (a message not loaded or not
    /// stored, a system prompt that changed since).
    pub fn replay_recipe(&self, recipe: &[RecipePart]) -> Result<Vec<ContextMessage>, String> {
        let mut messages = Vec::new();
        for part in recipe {
            match part {
                RecipePart::System { hash } => {
                    if *hash != self.system_hash {
                        return Err(
                            "the system prompt changed since this plan was made".to_string()
                        );
                    }
                    messages.push(message(Role::System, &self.system_prompt));
                }
                RecipePart::Summary { effort, text } => {
                    messages.push(message(
                        Role::System,
                        &crate::prompt::summary_line(effort, text),
                    ));
                }
                RecipePart::Header { effort } => {
                    let e = self
                        .effort(effort)
                        .ok_or_else(|| format!("effort '{effort}' is not stored"))?;
                    messages.push(message(Role::System, &e.header));
                }
                RecipePart::Messages { log, seqs } => {
                    let stored: &[crate::model::Message] = match log {
                        LogRef::Ambient => &self.ambient.messages,
                        LogRef::Effort(id) => {
                            &self
                                .effort(id)
                                .ok_or_else(|| format!("effort '{id}' is not stored"))?
                                .messages
                        }
                    };
                    for seq in seqs {
                        let position = stored
                            .binary_search_by_key(seq, |m| m.seq)
                            .map_err(|_| format!("message {seq} is not loaded"))?;
                        let m = &stored[position];
                        messages.push(message(m.role, &m.content));
                    }
                }
                RecipePart::Pending { text } => messages.push(message(Role::User, text)),
                RecipePart::Attachment { id, mode } => {
                    let stored = self
                        .attachments
                        .by_id
                        .get(id)
                        .ok_or_else(|| format!("attachment '{id}' is not stored"))?;
                    messages.push(message(
                        Role::User,
                        &stored.attachment.context_text_for(*mode),
                    ));
                }
                RecipePart::Rolling { text } => messages.push(message(Role::System, text)),
            }
        }
        Ok(messages)
    }
}

fn compacted_reason(reason: crate::compaction::MoveReason) -> ExclusionReason {
    match reason {
        crate::compaction::MoveReason::CompactedLevel2 => ExclusionReason::CompactedLevel2,
        _ => ExclusionReason::CompactedLevel3,
    }
}

fn section_of_target(target: &str) -> Section {
    match target.split_once(':').map(|(kind, _)| kind) {
        Some("summary") => Section::Summary,
        Some("ambient") => Section::Ambient,
        _ => Section::Expanded,
    }
}

/// `1234` → `1.2k`, `999` → `999`.
fn compact_tokens(tokens: u64) -> String {
    if tokens >= 1000 {
        format!("{:.1}k", tokens as f64 / 1000.0)
    } else {
        tokens.to_string()
    }
}

fn meter_line(meter: &BudgetMeter) -> String {
    format!(
        "CTX {} · {} auto item{} · +{} tokens · {}% of budget",
        meter.mode.label(),
        meter.auto_items,
        if meter.auto_items == 1 { "" } else { "s" },
        compact_tokens(meter.auto_tokens),
        meter.percent_of_budget.round() as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_line_reads_like_the_specification() {
        let meter = BudgetMeter {
            mode: ContextMode::Light,
            auto_items: 3,
            auto_tokens: 1234,
            percent_of_budget: 61.2,
            line: String::new(),
        };
        assert_eq!(
            meter_line(&meter),
            "CTX Light · 3 auto items · +1.2k tokens · 61% of budget"
        );
        assert_eq!(compact_tokens(999), "999");
    }

    #[test]
    fn inclusion_codes_are_the_json_codes() {
        let reasons = [
            InclusionReason::SystemPrompt,
            InclusionReason::RecentlyReferenced {
                turns_since_reference: 1,
                turns_until_eviction: 2,
            },
            InclusionReason::AmbientWindow,
            InclusionReason::Expanded {
                turns_since_reference: 0,
                turns_until_auto_collapse: 3,
            },
            InclusionReason::OpenEffort,
            InclusionReason::ActiveEffort,
            InclusionReason::CurrentUserMessage,
            InclusionReason::Pinned {
                kind: PinKind::Sticky,
                pin: 1,
            },
            InclusionReason::AutoRetrieved {
                score: 1.0,
                matched: vec![],
            },
            InclusionReason::AutoExpanded { score: 1.0 },
            InclusionReason::Attachment {
                mode: crate::compaction::AttachmentMode::Full,
            },
            InclusionReason::RollingSummary {
                covers: String::new(),
            },
        ];
        for reason in reasons {
            let json = serde_json::to_value(&reason).unwrap();
            assert_eq!(json["code"], reason.code(), "{reason:?}");
        }
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv_hex(b""), "cbf29ce484222325");
        assert_eq!(fnv_hex(b"a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn request_hashes_tell_messages_apart_and_are_stable() {
        let messages = |parts: &[(Role, &str)]| -> Vec<ContextMessage> {
            parts
                .iter()
                .map(|(role, text)| message(*role, text))
                .collect()
        };
        let one = request_hash(&messages(&[(Role::User, "hello world")]));
        assert_eq!(one, request_hash(&messages(&[(Role::User, "hello world")])));
        // A fixed value, so a change of the hash is a deliberate one.
        assert_eq!(one, "fbeeb47c23251842");
        for other in [
            messages(&[(Role::Assistant, "hello world")]),
            messages(&[(Role::User, "hello worle")]),
            messages(&[(Role::User, "hello"), (Role::User, " world")]),
            messages(&[(Role::User, "hello world\0")]),
            messages(&[]),
        ] {
            assert_ne!(request_hash(&other), one, "{other:?}");
        }
    }
}
