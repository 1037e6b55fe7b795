//! The compaction state of a session: the policy with its history, the rolling summary, the
//! working-set items moved out, and the caches that help rank what to keep.

use super::versioned::Versioned;
use crate::compaction::{
    CompactionConfig, CompactionConfigError, CompactionPolicy, EmbeddingBatch, EmbeddingCache,
    EmbeddingError, MoveReason, PolicyState, RollingInput, RollingSummary, SeqRange,
};
use crate::tokens::TokenCounter;
use std::collections::BTreeMap;

/// What undoing a turn puts back of the compaction state: the policy, the rolling summary and
/// the moved items as they were before the turn's first compaction.
pub(crate) type CompactionBefore = (
    CompactionPolicy,
    Option<RollingSummary>,
    BTreeMap<String, MoveReason>,
);

/// Compaction state. The policy, the rolling summary and the moved items are persisted; the
/// caches are not (they are recomputed on demand). Read it through
/// [`crate::Session::compaction`].
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The compaction policy (configuration and state).
    policy: CompactionPolicy,
    /// The rolling summary of the last level-3 compaction (the planner reads it, so it is
    /// versioned).
    rolling: Versioned<Option<RollingSummary>>,
    /// Working-set items moved out by compaction, with why (versioned as well).
    compacted: Versioned<BTreeMap<String, MoveReason>>,
    /// Embedding vectors of ambient exchanges, when the host configured an embeddings
    /// endpoint. A cache: never persisted, recomputed on demand.
    embeddings: Option<EmbeddingCache>,
    /// The vector of the last query embedded, with its text.
    query_vector: Option<(String, Vec<f32>)>,
    /// What a model-written rolling summary needs while the current one is extractive.
    rolling_upgrade: Option<RollingUpgrade>,
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

    /// The policy, to decide a level and record what was done: it keeps its own history
    /// (cooldown, hysteresis) consistent.
    pub(crate) fn policy_mut(&mut self) -> &mut CompactionPolicy {
        &mut self.policy
    }

    /// Puts the policy under new thresholds; it keeps its history (cooldown, hysteresis).
    pub(crate) fn reconfigure(
        &mut self,
        config: CompactionConfig,
    ) -> Result<(), CompactionConfigError> {
        self.policy = CompactionPolicy::with_state(config, self.policy.state().clone())?;
        Ok(())
    }

    /// Takes in a stored compaction state: the rolling summary, the moved items and the
    /// policy's history under `config`.
    pub(crate) fn restore(
        &mut self,
        rolling: Option<RollingSummary>,
        compacted: BTreeMap<String, MoveReason>,
        config: CompactionConfig,
        state: PolicyState,
    ) -> Result<(), CompactionConfigError> {
        self.policy = CompactionPolicy::with_state(config, state)?;
        *self.rolling = rolling;
        *self.compacted = compacted;
        Ok(())
    }

    /// A copy of what undoing a turn puts back (see [`CompactionBefore`]).
    pub(crate) fn before_change(&self) -> CompactionBefore {
        (
            self.policy.clone(),
            (*self.rolling).clone(),
            (*self.compacted).clone(),
        )
    }

    /// Undoing a turn: the state as [`Compaction::before_change`] copied it.
    pub(crate) fn undo(&mut self, (policy, rolling, compacted): CompactionBefore) {
        self.policy = policy;
        *self.rolling = rolling;
        *self.compacted = compacted;
    }

    /// Records that compaction moved the working-set item `id` out, and why.
    pub(crate) fn mark_moved(&mut self, id: String, reason: MoveReason) {
        self.compacted.insert(id, reason);
    }

    /// Forgets the moved items `keep` says no longer matter (they left the working set for
    /// other reasons), so the record stays proportional to the working set.
    pub(crate) fn forget_moved(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.compacted.retain(|id, _| keep(id));
    }

    /// Puts in the rolling summary of a level-3 compaction.
    pub(crate) fn set_rolling(&mut self, summary: RollingSummary) {
        *self.rolling = Some(summary);
    }

    /// Keeps what a model-written rolling summary needs, for the summary a compaction is about
    /// to put in.
    pub(crate) fn await_upgrade(&mut self, upgrade: Option<RollingUpgrade>) {
        self.rolling_upgrade = upgrade;
    }

    /// Replaces the extractive rolling summary with a model's answer (see
    /// [`crate::Session::upgrade_rolling_summary`]); `false`, nothing changed, when there is
    /// nothing to upgrade or the answer is empty or not smaller than what it stands for.
    pub(crate) fn upgrade_rolling(&mut self, text: &str, counter: &dyn TokenCounter) -> bool {
        let Some(upgrade) = self.rolling_upgrade.as_ref() else {
            return false;
        };
        let Ok(summary) = RollingSummary::from_llm(text, &upgrade.input(), counter) else {
            return false;
        };
        if u64::from(summary.tokens) >= upgrade.replaced_tokens {
            return false;
        }
        *self.rolling = Some(summary);
        self.rolling_upgrade = None;
        true
    }

    /// Turns on relevance by embeddings with `model`, with an empty cache.
    pub(crate) fn enable_embeddings(&mut self, model: &str) {
        self.embeddings = Some(EmbeddingCache::new(model));
        self.query_vector = None;
    }

    /// The embeddings cache, when embeddings are enabled.
    pub(crate) fn embeddings(&self) -> Option<&EmbeddingCache> {
        self.embeddings.as_ref()
    }

    /// Caches the vectors of `batch`'s texts for `query` and keeps the query's vector, then
    /// drops the cached vectors of exchanges `keep` no longer wants.
    ///
    /// # Errors
    /// Embeddings not enabled; the [`EmbeddingError`] of vectors that do not fit.
    pub(crate) fn absorb_embeddings(
        &mut self,
        query: &str,
        batch: &EmbeddingBatch,
        vectors: Vec<Vec<f32>>,
        keep: impl FnMut(u64) -> bool,
    ) -> Result<(), EmbeddingError> {
        let cache = self.embeddings.as_mut().ok_or_else(|| {
            EmbeddingError::InvalidConfig("embeddings are not enabled for this session".to_string())
        })?;
        let vector = cache.absorb(batch, vectors)?;
        self.query_vector = Some((query.to_string(), vector));
        cache.retain(keep);
        Ok(())
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
