//! The context plan: every candidate for the working context, included in order or excluded
//! with a reason, with token totals and a stable id.
//!
//! Order of the working context: system prompt, summaries of concluded efforts in working
//! memory, the ambient window, expanded raw logs, open raw logs with the active effort last,
//! then the user message of the turn in progress.
//!
//! Architecture invariant: building a plan reads only the working set and stored token counts.
//! Items outside working memory whose number grows with history (old ambient messages, evicted
//! efforts) are reported as one grouped exclusion each, so the cost of a plan never grows with
//! the length of the conversation.

use crate::model::{ContextMessage, EffortStatus, Role};
use crate::session::Session;
use serde::{Deserialize, Serialize};

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
    /// A concluded effort's raw log, loaded by expansion.
    Expanded,
    /// An open effort's raw log.
    Open,
    /// An effort's raw log that is not in context (concluded).
    RawLog,
    /// The user message of the turn in progress.
    Pending,
}

/// Why an item is in the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }
}

/// An item in the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncludedItem {
    /// Stable id: `system`, `summary:<effort>`, `ambient:<seq>`, `effort:<effort>`, `pending`.
    pub id: String,
    /// Its section.
    pub section: Section,
    /// Tokens it adds (stored counts).
    pub tokens: u64,
    /// Why it is in.
    pub reason: InclusionReason,
    /// Index of its first message in [`ContextPlan::messages`].
    pub first_message: usize,
    /// How many messages it contributes.
    pub message_count: usize,
}

/// An item, or a group of items, left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedItem {
    /// Stable id: `summary:<effort>`, `effort:<effort>`, `ambient:before:<seq>` (every ambient
    /// message older than that sequence number), `evicted` (every evicted effort).
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
    /// Everything stored (the naive baseline), plus the pending message.
    pub naive_tokens: u64,
    /// Everything excluded.
    pub excluded_tokens: u64,
}

/// The working context of one request, and why it is what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPlan {
    /// A hash of the plan's content (items and message bytes), 16 hex digits. Equal plans have
    /// equal ids on every platform.
    pub plan_id: String,
    /// The turn the plan was built in (the turn in progress, or the last one).
    pub turn: u64,
    /// Included items in context order.
    pub included: Vec<IncludedItem>,
    /// Excluded items and groups.
    pub excluded: Vec<ExcludedItem>,
    /// Token totals.
    pub totals: PlanTotals,
    /// The messages, in order, exactly as they are sent.
    pub messages: Vec<ContextMessage>,
}

impl ContextPlan {
    /// Serialises the plan as compact JSON. The same session state always gives the same bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plans contain only serialisable data")
    }
}

struct Builder {
    included: Vec<IncludedItem>,
    excluded: Vec<ExcludedItem>,
    messages: Vec<ContextMessage>,
    totals: PlanTotals,
}

impl Builder {
    fn include(
        &mut self,
        id: String,
        section: Section,
        tokens: u64,
        reason: InclusionReason,
        messages: impl IntoIterator<Item = ContextMessage>,
    ) {
        let first_message = self.messages.len();
        self.messages.extend(messages);
        let message_count = self.messages.len() - first_message;
        self.totals.context_tokens += tokens;
        match section {
            Section::System => self.totals.system_tokens += tokens,
            Section::Summary => self.totals.summary_tokens += tokens,
            Section::Ambient => self.totals.ambient_tokens += tokens,
            Section::Expanded => self.totals.expansion_tokens += tokens,
            Section::Open => self.totals.open_tokens += tokens,
            Section::Pending => self.totals.pending_tokens += tokens,
            Section::RawLog => {}
        }
        self.included.push(IncludedItem {
            id,
            section,
            tokens,
            reason,
            first_message,
            message_count,
        });
    }

    fn exclude(
        &mut self,
        id: String,
        section: Section,
        tokens: u64,
        count: u64,
        reason: ExclusionReason,
    ) {
        self.totals.excluded_tokens += tokens;
        self.excluded.push(ExcludedItem {
            id,
            section,
            tokens,
            count,
            reason,
        });
    }
}

fn message(role: Role, content: &str) -> ContextMessage {
    ContextMessage {
        role,
        content: content.to_string(),
    }
}

impl Session {
    /// Builds the context plan for the current state: the next request's messages, with the
    /// reason for every candidate. The same state always gives a byte-identical plan.
    pub fn build_plan(&self) -> ContextPlan {
        let mut b = Builder {
            included: Vec::new(),
            excluded: Vec::new(),
            messages: Vec::new(),
            totals: PlanTotals::default(),
        };
        let turn = self.turn;
        b.include(
            "system".to_string(),
            Section::System,
            u64::from(self.system_tokens),
            InclusionReason::SystemPrompt,
            [message(Role::System, &self.system_prompt)],
        );

        let eviction = u64::from(self.config.summary_eviction_threshold);
        let decay = u64::from(self.config.decay_threshold);
        for &(_, index) in &self.in_memory {
            let effort = &self.efforts[index];
            let Some(summary) = &effort.summary else {
                continue;
            };
            let expanded = self.expanded.iter().any(|e| e.effort == index);
            if expanded {
                b.exclude(
                    format!("summary:{}", effort.id),
                    Section::Summary,
                    u64::from(summary.tokens),
                    1,
                    ExclusionReason::Expanded,
                );
                continue;
            }
            let idle = turn - effort.last_referenced_turn;
            b.include(
                format!("summary:{}", effort.id),
                Section::Summary,
                u64::from(summary.tokens),
                InclusionReason::RecentlyReferenced {
                    turns_since_reference: idle,
                    turns_until_eviction: eviction.saturating_sub(idle),
                },
                [message(Role::System, &summary.rendered)],
            );
            let reason = if self.auto_collapsed_at.contains_key(&index) {
                ExclusionReason::Decayed
            } else {
                ExclusionReason::Summarized
            };
            b.exclude(
                format!("effort:{}", effort.id),
                Section::RawLog,
                effort.raw_tokens,
                1,
                reason,
            );
        }
        if self.evicted_count > 0 {
            b.exclude(
                "evicted".to_string(),
                Section::Summary,
                self.evicted_tokens,
                self.evicted_count,
                ExclusionReason::EvictedUnreferenced,
            );
        }

        let window = self.ambient_window();
        // Older ambient messages of a session opened from a store are stored but not loaded;
        // they are outside the window all the same.
        let outside = self.ambient_offset + (self.ambient.len() - window.len()) as u64;
        if outside > 0 {
            let outside_tokens =
                self.ambient_tokens - window.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
            b.exclude(
                format!("ambient:before:{}", window.first().map_or(0, |m| m.seq)),
                Section::Ambient,
                outside_tokens,
                outside,
                ExclusionReason::OutsideAmbientWindow,
            );
        }
        for m in window {
            b.include(
                format!("ambient:{}", m.seq),
                Section::Ambient,
                u64::from(m.tokens),
                InclusionReason::AmbientWindow,
                [message(m.role, &m.content)],
            );
        }

        for expansion in &self.expanded {
            let effort = &self.efforts[expansion.effort];
            let idle = turn - expansion.last_referenced_turn;
            b.include(
                format!("effort:{}", effort.id),
                Section::Expanded,
                effort.raw_tokens,
                InclusionReason::Expanded {
                    turns_since_reference: idle,
                    turns_until_auto_collapse: decay.saturating_sub(idle),
                },
                raw_log_messages(effort),
            );
        }

        let background = self.open.iter().filter(|&&i| Some(i) != self.active);
        for &index in background.chain(self.active.iter()) {
            let effort = &self.efforts[index];
            debug_assert_eq!(effort.status, EffortStatus::Open);
            let reason = if Some(index) == self.active {
                InclusionReason::ActiveEffort
            } else {
                InclusionReason::OpenEffort
            };
            b.include(
                format!("effort:{}", effort.id),
                Section::Open,
                effort.raw_tokens,
                reason,
                raw_log_messages(effort),
            );
        }

        if let Some((text, tokens)) = self.pending_user_message() {
            b.include(
                "pending".to_string(),
                Section::Pending,
                u64::from(tokens),
                InclusionReason::CurrentUserMessage,
                [message(Role::User, text)],
            );
        }
        b.totals.naive_tokens = self.naive_tokens() + b.totals.pending_tokens;

        let mut plan = ContextPlan {
            plan_id: String::new(),
            turn,
            included: b.included,
            excluded: b.excluded,
            totals: b.totals,
            messages: b.messages,
        };
        plan.plan_id = plan_hash(&plan);
        plan
    }

    /// The messages of the working context, in order (the plan's messages).
    pub fn build_context(&self) -> Vec<ContextMessage> {
        self.build_plan().messages
    }
}

fn raw_log_messages(effort: &crate::model::Effort) -> impl Iterator<Item = ContextMessage> + '_ {
    std::iter::once(message(Role::System, &effort.header))
        .chain(effort.messages.iter().map(|m| message(m.role, &m.content)))
}

/// FNV-1a over the plan's canonical JSON (with an empty id). FNV is enough here: the id names a
/// plan for replay and comparison, it is not a security boundary, and it needs no dependency.
fn plan_hash(plan: &ContextPlan) -> String {
    let bytes = serde_json::to_vec(plan).expect("plans contain only serialisable data");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
