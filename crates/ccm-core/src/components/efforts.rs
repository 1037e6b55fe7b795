//! The efforts of a session and where each one is: open (one of them active), concluded with
//! its summary in working memory, expanded, or evicted.

use crate::metrics::DecayStats;
use crate::model::{Effort, EffortStatus};
use crate::search::SearchIndex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An expanded effort: a concluded effort whose raw log is temporarily back in context.
/// Runtime state only; never persisted, so a reload starts with nothing expanded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expansion {
    /// Index of the effort in the session.
    pub(crate) effort: usize,
    /// Turn during which it was expanded.
    pub expanded_turn: u64,
    /// Last turn in which it was referenced; expansion counts as a reference.
    pub last_referenced_turn: u64,
}

/// How many concluded efforts are out of working memory, and their raw tokens: the grouped
/// exclusions of every plan, kept as running totals so a plan never walks the history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Evicted {
    /// Every evicted effort.
    pub(crate) count: u64,
    /// Their raw tokens.
    pub(crate) tokens: u64,
    /// The part of `count` that the summary token budget evicted.
    pub(crate) budget_count: u64,
    /// Their raw tokens.
    pub(crate) budget_tokens: u64,
}

impl Evicted {
    /// Counts an effort out of working memory.
    pub(crate) fn add(&mut self, raw_tokens: u64, over_budget: bool) {
        self.count += 1;
        self.tokens += raw_tokens;
        if over_budget {
            self.budget_count += 1;
            self.budget_tokens += raw_tokens;
        }
    }

    /// Counts an effort back into working memory.
    pub(crate) fn remove(&mut self, raw_tokens: u64, over_budget: bool) {
        self.count -= 1;
        self.tokens -= raw_tokens;
        if over_budget {
            self.budget_count -= 1;
            self.budget_tokens -= raw_tokens;
        }
    }

    /// An evicted effort's log grew (the exchange of the turn that concluded it).
    pub(crate) fn grow(&mut self, added: u64, over_budget: bool) {
        self.tokens += added;
        if over_budget {
            self.budget_tokens += added;
        }
    }
}

/// Where the efforts are: everything about them that is bounded by the working set, so a
/// turn's undo record can copy it whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Placement {
    /// The effort receiving new messages.
    pub(crate) active: Option<usize>,
    /// Open efforts in opening order.
    pub(crate) open: Vec<usize>,
    /// Concluded efforts whose summary is in working memory, keyed by conclusion order.
    pub(crate) in_memory: BTreeSet<(u64, usize)>,
    /// Efforts out of working memory, as running totals.
    pub(crate) evicted: Evicted,
    /// Expanded efforts in expansion order.
    pub(crate) expanded: Vec<Expansion>,
    /// Sum of every effort's raw tokens: the naive baseline's effort part.
    pub(crate) raw_total: u64,
    /// The next conclusion number.
    pub(crate) next_concluded_seq: u64,
    /// The decay statistics of slice 3.
    pub(crate) decay: DecayStats,
}

/// Every effort of a session, evicted ones included, with the indexes that keep the per-turn
/// path proportional to the working set. Read it through [`crate::Session::efforts`].
#[derive(Debug, Clone, Default)]
pub struct Efforts {
    /// Every effort, in opening order.
    pub(crate) list: Vec<Effort>,
    /// Effort ids to their position in `list`.
    pub(crate) index: BTreeMap<String, usize>,
    /// Where the efforts are.
    pub(crate) placement: Placement,
    /// The index of concluded efforts (search and reference detection).
    pub(crate) search: SearchIndex,
    /// Turn of the last auto-collapse of each effort not re-expanded since (for the
    /// false-decay rate and the tokens that decay keeps out of context). It grows with the
    /// history, so undo records track its changes instead of copying it.
    pub(crate) auto_collapsed_at: BTreeMap<usize, u64>,
}

impl Efforts {
    /// Every effort in opening order, evicted ones included.
    pub fn all(&self) -> &[Effort] {
        &self.list
    }

    /// The effort with this id.
    pub fn get(&self, id: &str) -> Option<&Effort> {
        self.index.get(id).map(|&i| &self.list[i])
    }

    /// Ids of the expanded efforts in expansion order.
    pub fn expanded_ids(&self) -> Vec<&str> {
        self.placement
            .expanded
            .iter()
            .map(|e| self.list[e.effort].id.as_str())
            .collect()
    }

    /// The expansion record of an effort, if it is expanded.
    pub fn expansion(&self, id: &str) -> Option<&Expansion> {
        let index = *self.index.get(id)?;
        self.placement.expanded.iter().find(|e| e.effort == index)
    }

    /// Ids of the concluded efforts whose summaries are in working memory, in conclusion order.
    pub fn summary_ids_in_memory(&self) -> Vec<&str> {
        self.placement
            .in_memory
            .iter()
            .map(|&(_, i)| self.list[i].id.as_str())
            .collect()
    }

    /// Ids of the evicted efforts, in conclusion order. Walks every effort: meant for views and
    /// tests, not for the per-turn path.
    pub fn evicted_ids(&self) -> Vec<&str> {
        let mut evicted: Vec<&Effort> = self.list.iter().filter(|e| e.evicted).collect();
        evicted.sort_by_key(|e| e.concluded_seq);
        evicted.into_iter().map(|e| e.id.as_str()).collect()
    }

    /// The decay statistics of slice 3.
    pub fn decay_stats(&self) -> &DecayStats {
        &self.placement.decay
    }

    /// Whether an effort is expanded.
    pub(crate) fn is_expanded(&self, index: usize) -> bool {
        self.placement.expanded.iter().any(|e| e.effort == index)
    }

    /// Ids of the open efforts in opening order.
    pub fn open_ids(&self) -> Vec<&str> {
        self.placement
            .open
            .iter()
            .map(|&i| self.list[i].id.as_str())
            .collect()
    }

    /// The active effort's id.
    pub fn active_id(&self) -> Option<&str> {
        self.placement.active.map(|i| self.list[i].id.as_str())
    }

    /// Tokens currently loaded by expanded efforts.
    pub fn expansion_tokens(&self) -> u64 {
        self.placement
            .expanded
            .iter()
            .map(|e| self.list[e.effort].raw_tokens)
            .sum()
    }

    /// Files a concluded effort among those whose summary is in working memory (or counts it
    /// as evicted), and indexes it; for sessions being rebuilt from stored records.
    pub(crate) fn place_concluded(&mut self, index: usize) {
        let effort = &self.list[index];
        debug_assert_eq!(effort.status, EffortStatus::Concluded);
        if effort.evicted {
            self.placement
                .evicted
                .add(effort.raw_tokens, effort.evicted_over_budget);
        } else {
            // A record without its conclusion number (damaged) sorts after the others.
            let seq = effort.concluded_seq.unwrap_or(u64::MAX - index as u64);
            self.placement.in_memory.insert((seq, index));
        }
        self.search.insert(index, effort);
    }
}
