//! Per-turn metrics for the token curve and the decay statistics of slice 3.

use serde::{Deserialize, Serialize};

/// What happened to an effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// `open_effort`.
    Opened,
    /// `close_effort`.
    Concluded,
    /// `reopen_effort`.
    Reopened,
    /// `expand_effort`.
    Expanded,
    /// `collapse_effort`.
    Collapsed,
    /// Collapsed by decay.
    AutoCollapsed,
    /// `switch_effort`.
    Switched,
    /// Summary left working memory after going unreferenced for the eviction threshold.
    Evicted,
    /// Summary left working memory because the resident summaries exceeded their token budget
    /// and it was the least recently referenced.
    EvictedOverBudget,
    /// Excerpts of stored messages brought into the context with `recall` (the event's
    /// `effort` is `recall`, its tokens what they added).
    Recalled,
    /// A recalled excerpt left the context after going unreferenced for the decay threshold
    /// (the event's `effort` is the excerpt's id, `recall:<seq>`).
    RecallDecayed,
}

/// One effort event, a marker on the token curve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffortEvent {
    /// What happened.
    pub kind: EventKind,
    /// To which effort.
    pub effort: String,
    /// Tokens involved: raw tokens loaded or freed, summary tokens evicted, header tokens of a
    /// new effort; 0 for a switch.
    pub tokens: u64,
}

impl EffortEvent {
    /// A new event.
    pub fn new(kind: EventKind, effort: &str, tokens: u64) -> EffortEvent {
        EffortEvent {
            kind,
            effort: effort.to_string(),
            tokens,
        }
    }
}

/// One point of the token curve, recorded at the end of every turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnMetrics {
    /// The turn.
    pub turn: u64,
    /// Tokens of the working context at the end of the turn, with its exchange stored and
    /// before decay and eviction: what the turn was carried out with.
    pub context_tokens: u64,
    /// Tokens of that context loaded by expanded efforts.
    pub expansion_tokens: u64,
    /// `expansion_tokens / context_tokens`: the cost of recall.
    pub expansion_overhead: f64,
    /// Tokens of the naive baseline that keeps every stored message in context.
    pub naive_tokens: u64,
    /// `1 - context_tokens / naive_tokens`: the share of the naive context saved (0 when the
    /// naive context is empty).
    pub savings_vs_naive: f64,
    /// Tokens of the working context after decay and eviction: what the next turn starts with.
    pub next_context_tokens: u64,
    /// Summaries shown in working memory after the turn.
    pub summaries_in_memory: u64,
    /// Ambient messages in working memory after the turn.
    pub ambient_messages_in_memory: u64,
    /// Expanded efforts after the turn, in expansion order.
    pub expanded: Vec<String>,
    /// Open efforts after the turn.
    pub open_efforts: u64,
    /// Concluded efforts out of working memory after the turn.
    pub evicted_efforts: u64,
    /// What happened to efforts during the turn, in order.
    pub events: Vec<EffortEvent>,
    /// Compactions applied during the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<crate::compaction::CompactionRecord>,
}

impl TurnMetrics {
    /// Builds a point, deriving the ratios.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        turn: u64,
        context_tokens: u64,
        expansion_tokens: u64,
        naive_tokens: u64,
        next_context_tokens: u64,
        summaries_in_memory: u64,
        ambient_messages_in_memory: u64,
        expanded: Vec<String>,
        open_efforts: u64,
        evicted_efforts: u64,
        events: Vec<EffortEvent>,
    ) -> TurnMetrics {
        TurnMetrics {
            turn,
            context_tokens,
            expansion_tokens,
            expansion_overhead: ratio(expansion_tokens, context_tokens),
            naive_tokens,
            savings_vs_naive: if naive_tokens == 0 {
                0.0
            } else {
                1.0 - ratio(context_tokens, naive_tokens)
            },
            next_context_tokens,
            summaries_in_memory,
            ambient_messages_in_memory,
            expanded,
            open_efforts,
            evicted_efforts,
            events,
            compactions: Vec::new(),
        }
    }
}

fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

/// The decay metrics of slice 3, accumulated over the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecayStats {
    /// Expanded efforts collapsed by decay.
    pub auto_collapses: u64,
    /// Expanded efforts collapsed by `collapse_effort`.
    pub manual_collapses: u64,
    /// Sum of the turns each finished expansion lasted.
    pub expansion_turns_total: u64,
    /// Re-expansions within 2 turns of an auto-collapse: decay that came too early.
    pub false_decays: u64,
    /// Tokens decay keeps out of every context now: for each effort that decayed and was not
    /// expanded again, its raw log less the summary that took its place.
    pub decayed_resident_tokens: u64,
    /// Tokens decay kept out of the contexts turns were carried out with: for every turn after
    /// an auto-collapse (not the collapsing turn itself, whose context still had the log),
    /// each decayed effort's raw log less its summary, until it is expanded again.
    pub tokens_saved_by_decay: u64,
}

/// The derived view of [`DecayStats`] that slice 3 reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecayReport {
    /// Count of auto-collapse events.
    pub auto_collapses: u64,
    /// Count of explicit collapses.
    pub manual_collapses: u64,
    /// Average turns an expansion stayed active (finished expansions only).
    pub avg_expansion_duration: f64,
    /// Manual collapses per auto-collapse (0 when nothing auto-collapsed).
    pub manual_vs_auto_collapse: f64,
    /// Re-expansions within 2 turns of an auto-collapse, per auto-collapse.
    pub false_decay_rate: f64,
    /// Tokens decay kept out of the contexts of the turns since each auto-collapse (the raw
    /// log less the summary shown instead), summed over turns.
    pub tokens_saved_by_decay: u64,
}

impl DecayStats {
    /// Records the end of an expansion that lasted `turns` turns.
    pub fn record_collapse(&mut self, turns: u64, automatic: bool) {
        if automatic {
            self.auto_collapses += 1;
        } else {
            self.manual_collapses += 1;
        }
        self.expansion_turns_total += turns;
    }

    /// The ratios slice 3 asks for.
    pub fn report(&self) -> DecayReport {
        let finished = self.auto_collapses + self.manual_collapses;
        DecayReport {
            auto_collapses: self.auto_collapses,
            manual_collapses: self.manual_collapses,
            avg_expansion_duration: ratio(self.expansion_turns_total, finished),
            manual_vs_auto_collapse: ratio(self.manual_collapses, self.auto_collapses),
            false_decay_rate: ratio(self.false_decays, self.auto_collapses),
            tokens_saved_by_decay: self.tokens_saved_by_decay,
        }
    }
}
