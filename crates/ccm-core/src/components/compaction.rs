//! The compaction state of a session: the policy with its history, the rolling summary, the
//! working-set items moved out, and the caches that help rank what to keep.

use super::versioned::Versioned;
use crate::compaction::{
    CompactionPolicy, EmbeddingCache, MoveReason, RollingInput, RollingSummary, SeqRange,
};
use std::collections::BTreeMap;

/// Compaction state. The policy, the rolling summary and the moved items are persisted; the
/// caches are not (they are recomputed on demand). Read it through
/// [`crate::Session::compaction`].
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The compaction policy (configuration and state).
    pub(crate) policy: CompactionPolicy,
    /// The rolling summary of the last level-3 compaction (the planner reads it, so it is
    /// versioned).
    pub(crate) rolling: Versioned<Option<RollingSummary>>,
    /// Working-set items moved out by compaction, with why (versioned as well).
    pub(crate) compacted: Versioned<BTreeMap<String, MoveReason>>,
    /// Embedding vectors of ambient exchanges, when the host configured an embeddings
    /// endpoint. A cache: never persisted, recomputed on demand.
    pub(crate) embeddings: Option<EmbeddingCache>,
    /// The vector of the last query embedded, with its text.
    pub(crate) query_vector: Option<(String, Vec<f32>)>,
    /// What a model-written rolling summary needs while the current one is extractive.
    pub(crate) rolling_upgrade: Option<RollingUpgrade>,
}

impl Compaction {
    /// A fresh state under `policy`.
    pub(crate) fn new(policy: CompactionPolicy) -> Compaction {
        Compaction {
            policy,
            rolling: Versioned::new(None),
            compacted: Versioned::default(),
            embeddings: None,
            query_vector: None,
            rolling_upgrade: None,
        }
    }

    /// The rolling summary that stands in for compacted history, if a level-3 compaction made
    /// one.
    pub fn rolling_summary(&self) -> Option<&RollingSummary> {
        self.rolling.as_ref()
    }

    /// Items compaction moved out of the working set, with why (still stored).
    pub fn compacted_items(&self) -> &BTreeMap<String, MoveReason> {
        &self.compacted
    }

    /// The compaction policy (its configuration and state: the last decision and why).
    pub fn policy(&self) -> &CompactionPolicy {
        &self.policy
    }

    /// What a model-written rolling summary is made from, while the current rolling summary
    /// is the extractive fallback of the last level-3 compaction: the history it stands for
    /// and the most words it may have. A host (the native runner, the browser's `runTurn`)
    /// sends the engine's request for it after the turn and hands the answer to
    /// [`crate::Session::upgrade_rolling_summary`]; without a model the extractive summary
    /// stays.
    pub fn rolling_summary_upgrade(&self) -> Option<(RollingInput<'_>, u32)> {
        let upgrade = self.rolling_upgrade.as_ref()?;
        Some((upgrade.input(), upgrade.max_words))
    }

    /// Relevance scores by item id from embeddings, of the working set's ambient exchanges
    /// (`(item id, first sequence number)`), when the query has a vector and at least one
    /// exchange has one.
    pub(crate) fn embedding_scores<'a>(
        &self,
        query: &str,
        ambient: impl Iterator<Item = (&'a str, u64)>,
    ) -> Option<BTreeMap<String, f64>> {
        let cache = self.embeddings.as_ref()?;
        let (text, vector) = self.query_vector.as_ref()?;
        if text != query {
            return None;
        }
        let mut scores = BTreeMap::new();
        let mut scored = 0;
        for (id, first) in ambient {
            // An exchange stored after the last refresh (the turn just ended) has no vector
            // yet. It is among the newest, which every level keeps anyway; scoring it as
            // fully relevant keeps it without guessing.
            let score = match cache.get(first) {
                Some(_) => cache.scores(vector, &[first]).ok()?[0],
                None => 1.0,
            };
            scored += usize::from(cache.get(first).is_some());
            scores.insert(id.to_string(), score);
        }
        (scored > 0).then_some(scores)
    }

    /// The part of the state the planner reads.
    pub(crate) fn planned(&self) -> PlannedCompaction<'_> {
        PlannedCompaction {
            rolling: &self.rolling,
            compacted: &self.compacted,
        }
    }
}

/// What the planner reads of the compaction state, borrowed with its versions: the rolling
/// summary and the moved items (the policy and the caches never change a plan).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlannedCompaction<'a> {
    pub(crate) rolling: &'a Versioned<Option<RollingSummary>>,
    pub(crate) compacted: &'a Versioned<BTreeMap<String, MoveReason>>,
}

impl PlannedCompaction<'_> {
    /// Whether compaction moved a turn of an effort's log out of the working set.
    pub(crate) fn turn_compacted(&self, effort: &str, turn: u64) -> bool {
        !self.compacted.is_empty()
            && self
                .compacted
                .contains_key(&format!("effort:{effort}@{turn}"))
    }
}

/// What a model-written rolling summary needs, kept while the current one is the extractive
/// fallback: the material it summarises and the size it must stay under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RollingUpgrade {
    pub(crate) previous_text: Option<String>,
    pub(crate) previous_covers: Vec<SeqRange>,
    pub(crate) history: Vec<(SeqRange, String)>,
    pub(crate) max_words: u32,
    /// Tokens of what the summary replaced: a model's summary must stay below them.
    pub(crate) replaced_tokens: u64,
}

impl RollingUpgrade {
    pub(crate) fn input(&self) -> RollingInput<'_> {
        RollingInput::borrowing(
            self.previous_text.as_deref(),
            &self.previous_covers,
            &self.history,
        )
    }
}
