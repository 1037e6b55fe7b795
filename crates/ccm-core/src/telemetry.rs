//! Telemetry: for every request, what the model was shown (plan id, request hash, the recipe
//! that rebuilds it), what was left out and why, the tool calls of the turn, and the local
//! token estimate next to the provider's reported prompt tokens.
//!
//! A turn driven without an LLM records one request: the plan the turn ended with. The LLM
//! engine records each of its requests with [`Session::record_request`](crate::Session::record_request) and reports usage with
//! [`Session::report_usage`](crate::Session::report_usage) when the provider answers.

use crate::plan::{ContextPlan, ExcludedItem, PlanDiff, RecipePart};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Telemetry entries kept in memory; older ones are in the store (every turn's entry is part of
/// its write batch). Each entry is proportional to the working set, so keeping all of them in
/// memory would make memory grow with the length of the conversation.
pub const TELEMETRY_IN_MEMORY: usize = 500;

/// Longest tool result kept in a trace, in bytes. Search results and status reports can be
/// long; the trace needs enough to see what the model got, not a second copy of the session.
pub const TOOL_RESULT_TRACE_BYTES: usize = 2_000;

pub use crate::plan::ItemRef;

/// One request sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The plan's id.
    pub plan_id: String,
    /// The hash of the messages: what a replay must reproduce.
    pub request_hash: String,
    /// The local estimate of the prompt tokens (the plan's total).
    pub estimated_prompt_tokens: u64,
    /// The provider's reported prompt tokens, when it reported usage.
    pub reported_prompt_tokens: Option<u64>,
    /// What was included, in context order.
    pub included: Vec<ItemRef>,
    /// What was excluded and why.
    pub excluded: Vec<ExcludedItem>,
    /// How to rebuild the messages from stored records.
    pub recipe: Vec<RecipePart>,
}

impl RequestRecord {
    /// The record of a plan.
    pub fn of(plan: &ContextPlan, reported_prompt_tokens: Option<u64>) -> RequestRecord {
        RequestRecord {
            plan_id: plan.plan_id.clone(),
            request_hash: plan.request_hash.clone(),
            estimated_prompt_tokens: plan.totals.context_tokens,
            reported_prompt_tokens,
            included: plan.included.iter().map(ItemRef::of).collect(),
            excluded: plan.excluded.clone(),
            recipe: plan.recipe.clone(),
        }
    }

    /// Reported minus estimated prompt tokens, when usage was reported. Providers add a few
    /// tokens of framing per message and for the tool definitions, so a small positive
    /// difference is expected.
    pub fn usage_difference(&self) -> Option<i64> {
        self.reported_prompt_tokens
            .map(|reported| reported as i64 - self.estimated_prompt_tokens as i64)
    }
}

/// One tool call of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTrace {
    /// The tool.
    pub name: String,
    /// The arguments as the caller sent them.
    pub arguments: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// The result (cut at [`TOOL_RESULT_TRACE_BYTES`]).
    pub result: String,
}

/// Everything recorded about one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTelemetry {
    /// The turn.
    pub turn: u64,
    /// Its requests, in order.
    pub requests: Vec<RequestRecord>,
    /// Its tool calls, in order.
    pub tools: Vec<ToolTrace>,
    /// What changed against the previous turn's last request.
    pub diff: PlanDiff,
}

/// Cuts a string at a character boundary at most `max` bytes in.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The diff between two recorded requests.
pub fn diff_records(old: Option<&RequestRecord>, new: &RequestRecord) -> PlanDiff {
    let old_items: BTreeMap<&str, &ItemRef> = old
        .map(|r| r.included.iter().map(|i| (i.id.as_str(), i)).collect())
        .unwrap_or_default();
    crate::plan::diff_items(
        &old_items,
        old.map_or(0, |r| r.estimated_prompt_tokens),
        &new.included,
        &new.excluded,
        new.estimated_prompt_tokens,
    )
}
