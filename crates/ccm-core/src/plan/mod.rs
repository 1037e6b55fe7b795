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
//!
//! The planner is a set of pure functions over the session's components, borrowed
//! ([`PlanInput`]): `candidates.rs` has one function per tier of the working set, `pinned.rs`
//! and `auto.rs` the pinned and automatic tiers, `fill.rs` the budget, `render.rs` the
//! messages and the recipe, `ids.rs` the request hash and the plan id, `diff.rs` plan diffs.
//! It never sees the `Session`.

use crate::components::ambient::Ambient;
use crate::components::attachments::Attachments;
use crate::components::compaction::PlannedCompaction;
use crate::components::efforts::Efforts;
use crate::components::recall::Recall;
use crate::components::versioned::Versioned;
use crate::config::{Config, ContextMode};
use crate::model::ContextMessage;
use crate::model::LogRef;
use crate::pins::{PinKind, Pins};
use serde::{Deserialize, Serialize};

mod auto;
mod cache;
mod candidates;
mod diff;
mod fill;
mod ids;
mod pinned;
mod recalled;
mod render;

pub(crate) use auto::logs_needed;
pub(crate) use cache::PlanCache;
pub(crate) use diff::diff_items;
pub use diff::{diff_plans, ItemRef};
pub(crate) use ids::fnv_hex;
pub use ids::request_hash;
pub(crate) use render::replay;

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
    /// An excerpt of stored messages recalled into the context (by the `recall` tool, or
    /// automatically for the user's message).
    Recalled,
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
    /// An excerpt of stored messages the model recalled with the `recall` tool; it leaves
    /// when it goes `decay_threshold` turns without a reference.
    Recalled {
        /// The query it was recalled with.
        query: String,
        /// Turns since its last reference.
        turns_since_reference: u64,
        /// Turns left before it leaves by itself.
        turns_until_auto_collapse: u64,
    },
    /// An excerpt of stored messages outside working memory that matches the user's message,
    /// brought in by the automatic recall (Light and Heavy modes).
    AutoRecalled {
        /// Relevance of its best message.
        score: f64,
        /// The words of the message that matched.
        matched: Vec<String>,
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
    /// [`Session::logs_needed_for_plan`](crate::Session::logs_needed_for_plan)).
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
    /// An excerpt that matches the user's message but did not fit the automatic recall's
    /// token budget (`recall_token_budget`); still stored and searchable.
    OverRecallBudget,
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
            ExclusionReason::OverRecallBudget => "over_recall_budget",
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
    /// The items it is included only with: an attachment needs the item of the message it is
    /// attached to (`pending`, the ambient exchange `ambient:N`, or the log `effort:ID`); if
    /// that item is left out, so is the attachment (reason `dependency_excluded`). Empty for
    /// every other item: a log carries its own header, and a recalled excerpt carries its
    /// neighbours.
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
    /// Recalled excerpts (by the `recall` tool and automatically). Written only when there are
    /// some, so plans without recall keep the bytes, and the ids, they had before recall.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recall_tokens: u64,
    /// Everything stored (the naive baseline), plus the pending message.
    pub naive_tokens: u64,
    /// Everything excluded.
    pub excluded_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
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
    /// A recalled excerpt: its header line, then stored messages of one log by sequence
    /// number, or passages of one attachment by number.
    Recalled {
        /// The header line shown before it.
        header: String,
        /// The log of its messages (`None` for an attachment's passages).
        #[serde(skip_serializing_if = "Option::is_none")]
        log: Option<LogRef>,
        /// The attachment of its passages (`None` for messages).
        #[serde(skip_serializing_if = "Option::is_none")]
        attachment: Option<String>,
        /// Its messages by sequence number, or the attachment's passages by number (from 1).
        keys: Vec<u64>,
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

    /// Tokens of the excerpts the automatic recall added for the user's message: part of this
    /// request, not of the working set (they are filled last, only into room the request has,
    /// and gone with the request).
    pub fn auto_recalled_tokens(&self) -> u64 {
        self.included
            .iter()
            .filter(|item| matches!(item.reason, InclusionReason::AutoRecalled { .. }))
            .map(|item| item.tokens)
            .sum()
    }

    /// Tokens of the working set: the request without the automatic recall's excerpts.
    pub fn working_set_tokens(&self) -> u64 {
        self.totals.context_tokens - self.auto_recalled_tokens()
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
            InclusionReason::Recalled { .. } => "recalled",
            InclusionReason::AutoRecalled { .. } => "auto_recalled",
        }
    }
}

// ----- building --------------------------------------------------------------------------

/// The system prompt as the planner needs it: its text, its hash (the recipe names it by the
/// hash) and its token count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemPrompt<'a> {
    pub(crate) text: &'a str,
    pub(crate) hash: &'a str,
    pub(crate) tokens: u32,
}

/// What the planner reads: the session's components, borrowed, and the few values the session
/// derives for it. Building one copies nothing that grows with the history. The components
/// come with their versions, so that [`PlanCache`] can tell whether a plan is still current;
/// everything the planner reads must be a field here (its key lists every field).
pub(crate) struct PlanInput<'a> {
    pub(crate) turn: u64,
    pub(crate) config: &'a Versioned<Config>,
    pub(crate) system: SystemPrompt<'a>,
    pub(crate) efforts: &'a Versioned<Efforts>,
    pub(crate) ambient: &'a Versioned<Ambient>,
    pub(crate) pins: &'a Versioned<Pins>,
    pub(crate) compaction: PlannedCompaction<'a>,
    pub(crate) attachments: &'a Versioned<Attachments>,
    /// Recalled excerpts: the `recall` tool's and the automatic recall's.
    pub(crate) recall: &'a Versioned<Recall>,
    /// Ids of the attachments in the working set, in order.
    pub(crate) attachments_in_working_set: Vec<String>,
    /// The user text of the turn in progress and its token count.
    pub(crate) pending: Option<(&'a str, u32)>,
}

impl PlanInput<'_> {
    /// Where the ambient window's counted part and its included part start.
    fn ambient_bounds(&self) -> (usize, usize) {
        self.ambient
            .window_bounds(self.config.ambient_window, self.config.ambient_token_budget)
    }

    /// Every stored token: what a context with the whole history would hold.
    fn naive_tokens(&self) -> u64 {
        u64::from(self.system.tokens) + self.ambient.tokens() + self.efforts.placement.raw_total
    }
}

thread_local! {
    static BUILDS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many plans this thread has built so far, rendered or not. A diagnostic: tests and
/// benchmarks read it to see how often one message makes the planner run (a plan costs about
/// as much as the rest of a turn); nothing in the library depends on it. Per thread, so that
/// tests running side by side do not count each other's plans.
pub fn builds_on_this_thread() -> u64 {
    BUILDS.with(std::cell::Cell::get)
}

/// Builds the plan for `input`, tier by tier; without `render`, messages, the recipe and the
/// ids are left empty (what token totals need, at a fraction of the cost). The order of the
/// steps is the order of the exclusions in the plan.
pub(crate) fn build(input: &PlanInput<'_>, render: bool) -> ContextPlan {
    BUILDS.with(|builds| builds.set(builds.get() + 1));
    let mut gathered = candidates::Gathered::default();
    let expanded = candidates::expansion_order(input);
    candidates::mandatory(input, &mut gathered);
    candidates::summaries(input, &expanded, &mut gathered);
    candidates::ambient_window(input, &mut gathered);
    candidates::expanded_logs(input, &mut gathered);
    candidates::open_logs(input, &mut gathered);
    candidates::stored_efforts(input, &expanded, &mut gathered);
    candidates::stored_ambient(input, &mut gathered);
    candidates::compacted_turns(input, &mut gathered);
    candidates::rolling(input.compaction, &mut gathered);
    candidates::attachments(input, &mut gathered);
    recalled::focused(input, &mut gathered);
    pinned::apply(input, &mut gathered);
    auto::retrieve(input, &mut gathered);
    recalled::automatic(input, &mut gathered);
    fill::fill(input, gathered, render)
}

#[cfg(test)]
mod tests {
    use super::ids::fnv_hex;
    use super::render::{compact_tokens, meter_line};
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
    fn fnv_is_stable() {
        assert_eq!(fnv_hex(b""), "cbf29ce484222325");
        assert_eq!(fnv_hex(b"a"), "af63dc4c8601ec8c");
    }
}
