//! What happens to the working set after a turn's exchange is stored: reference detection,
//! decay of expanded efforts, eviction of summaries, leases and activation, and the metrics
//! point of the turn.

use super::Session;
use crate::components::Efforts;
use crate::metrics::{EffortEvent, EventKind, TurnMetrics};
use crate::model::{Effort, EffortStatus, Message};
use crate::text::PreparedText;
use std::collections::BTreeSet;

/// The efforts a turn's messages refer to.
pub(super) struct TurnReferences {
    /// Every effort referred to: these stay in working memory, and their pins and activation
    /// count the reference.
    pub(super) all: BTreeSet<usize>,
    /// Those whose reference also brings an evicted summary back into working memory.
    pub(super) reviving: BTreeSet<usize>,
}

impl Session {
    /// The efforts the turn's messages refer to: concluded efforts (summaries in working memory
    /// or out of it) under the configured reference rule, and open efforts named by their id.
    /// Computed once per turn and shared by salience, pins and activation.
    pub(super) fn references_of_turn(
        &self,
        user_text: &str,
        assistant_text: &str,
    ) -> TurnReferences {
        let user = PreparedText::new(user_text);
        let assistant = PreparedText::new(assistant_text);
        let detect = |texts: &[PreparedText]| {
            crate::reference::referenced_efforts(
                &self.efforts.search,
                self.efforts.all(),
                self.config.reference_rule,
                self.config.min_keyword_overlap,
                texts,
            )
        };
        let by_user = detect(std::slice::from_ref(&user));
        let mut all = by_user.clone();
        all.extend(detect(std::slice::from_ref(&assistant)));
        for &index in &self.efforts.placement.open {
            let id = &self.efforts.at(index).id;
            if user.mentions_id(id) || assistant.mentions_id(id) {
                all.insert(index);
            }
        }
        // Which references bring a summary back into working memory. Under the seed rule, any
        // (slice 4 tracks references for every concluded effort). Under the distinctive rule,
        // the user's: a long answer touches many words in passing, and an evicted summary
        // should come back because the person asked about it, not because the model rambled.
        let reviving = match self.config.reference_rule {
            crate::config::ReferenceRule::Seed => all.clone(),
            crate::config::ReferenceRule::Distinctive => by_user,
        };
        TurnReferences { all, reviving }
    }

    /// Reference detection, decay and eviction for the turn that just ended.
    pub(super) fn update_salience(
        &mut self,
        references: &TurnReferences,
        touched: &BTreeSet<usize>,
        banners: &mut Vec<String>,
        events: &mut Vec<EffortEvent>,
    ) {
        let turn = self.turn;
        // A reference keeps a summary in working memory; some bring back one that had left it
        // (see `references_of_turn`).
        for &index in &references.all {
            let effort = self.efforts.at(index);
            if effort.status != EffortStatus::Concluded {
                continue;
            }
            if effort.evicted {
                if !references.reviving.contains(&index) {
                    continue;
                }
                self.restore_to_memory(index);
            }
            self.effort_mut(index).last_referenced_turn = turn;
        }
        self.efforts.refer_expansions(turn, touched);

        // What earlier collapses kept out of the context this turn was carried out with; the
        // collapses below count from the next turn on.
        let decay = &mut self.efforts.placement.decay;
        decay.tokens_saved_by_decay += decay.decayed_resident_tokens;

        // Decay: expanded efforts unreferenced for the threshold collapse by themselves.
        let threshold = u64::from(self.config.decay_threshold);
        let mut position = 0;
        while position < self.efforts.placement.expanded.len() {
            let expansion = &self.efforts.placement.expanded[position];
            let idle = turn - expansion.last_referenced_turn;
            if idle >= threshold {
                let efforts = &mut *self.efforts;
                let expansion = efforts.placement.expanded.remove(position);
                let effort = efforts.at(expansion.effort);
                banners.push(format!(
                    "--- Auto-collapsed effort: {} (inactive for {} turns) ---",
                    effort.id, idle
                ));
                events.push(EffortEvent::new(
                    EventKind::AutoCollapsed,
                    &effort.id,
                    effort.raw_tokens,
                ));
                let resident = effort.raw_minus_summary_tokens();
                efforts
                    .placement
                    .decay
                    .record_collapse(turn - expansion.expanded_turn, true);
                efforts.placement.decay.decayed_resident_tokens += resident;
                if efforts
                    .auto_collapsed_at
                    .insert(expansion.effort, turn)
                    .is_none()
                {
                    if let Some(state) = &mut self.turn_state {
                        state.undo.auto_collapsed_added.push(expansion.effort);
                    }
                }
            } else {
                position += 1;
            }
        }
        self.evict_summaries(turn + 1, events);
    }

    /// Takes out of working memory the summaries that must not be in the context of turn
    /// `next_turn`: those not referenced within the last `summary_eviction_threshold` turns (a
    /// summary last referenced in turn T is in the contexts of turns T+1 to T+threshold-1, as
    /// slice 4 words it), then, while the resident summaries hold more tokens than
    /// `summary_token_budget`, the least recently referenced. Expanded efforts stay: their
    /// summary is not in the context, and they decay first.
    pub(super) fn evict_summaries(&mut self, next_turn: u64, events: &mut Vec<EffortEvent>) {
        let eviction = u64::from(self.config.summary_eviction_threshold);
        let expanded: BTreeSet<usize> = self
            .efforts
            .placement
            .expanded
            .iter()
            .map(|e| e.effort)
            .collect();
        let mut resident: Vec<(u64, u64, usize)> =
            Vec::with_capacity(self.efforts.placement.in_memory.len());
        let mut expired: Vec<usize> = Vec::new();
        for &(seq, index) in &self.efforts.placement.in_memory {
            if expanded.contains(&index) {
                continue;
            }
            let last = self.efforts.at(index).last_referenced_turn;
            if next_turn.saturating_sub(last) >= eviction {
                expired.push(index);
            } else {
                resident.push((last, seq, index));
            }
        }
        for index in expired {
            self.evict(index, false, events);
        }
        let summary_tokens = |efforts: &[Effort], index: usize| {
            efforts[index]
                .summary
                .as_ref()
                .map_or(0, |s| u64::from(s.tokens))
        };
        let mut total: u64 = resident
            .iter()
            .map(|&(_, _, i)| summary_tokens(self.efforts.all(), i))
            .sum();
        let budget = u64::from(self.config.summary_token_budget);
        if total <= budget {
            return;
        }
        // Least recently referenced first; of those, the earliest concluded.
        resident.sort_unstable();
        for (_, _, index) in resident {
            if total <= budget {
                break;
            }
            total -= summary_tokens(self.efforts.all(), index);
            self.evict(index, true, events);
        }
    }

    /// Moves a concluded effort's summary out of working memory (it stays stored and
    /// searchable) and records the event.
    fn evict(&mut self, index: usize, over_budget: bool, events: &mut Vec<EffortEvent>) {
        let key = (
            self.efforts.at(index).concluded_seq.unwrap_or_default(),
            index,
        );
        self.efforts.placement.in_memory.remove(&key);
        let effort = self.effort_mut(index);
        effort.evicted = true;
        effort.evicted_over_budget = over_budget;
        let raw_tokens = effort.raw_tokens;
        self.efforts.placement.evicted.add(raw_tokens, over_budget);
        let effort = self.efforts.at(index);
        events.push(EffortEvent::new(
            if over_budget {
                EventKind::EvictedOverBudget
            } else {
                EventKind::Evicted
            },
            &effort.id,
            effort.summary.as_ref().map_or(0, |s| u64::from(s.tokens)),
        ));
    }

    /// Leases, ephemeral pins, promotion and activation, after the turn's exchange is stored:
    /// the rules are the pins' own ([`crate::pins::Pins::age`], `update_activation`); this
    /// tells them what the turn included and referenced. An automatically retrieved item that
    /// the user or the model referenced becomes an ephemeral pin, so it is there for the next
    /// request too.
    pub(super) fn update_pins_and_activation(
        &mut self,
        request_plan: &crate::plan::ContextPlan,
        references: &BTreeSet<usize>,
    ) {
        use crate::plan::InclusionReason;
        // Whether a pin or plan target (`summary:<id>`, `effort:<id>`) names an effort the
        // turn referred to.
        let referenced = |efforts: &Efforts, target: &str| -> bool {
            target
                .split_once(':')
                .and_then(|(_, rest)| efforts.index.get(rest))
                .is_some_and(|index| references.contains(index))
        };
        let included: BTreeSet<&str> = request_plan
            .included
            .iter()
            .map(|i| i.id.as_str())
            .collect();

        let efforts = &self.efforts;
        self.pins.age(
            &included,
            |effort| {
                efforts
                    .get(effort)
                    .is_some_and(|e| e.status == EffortStatus::Open)
            },
            |target| referenced(efforts, target),
        );

        for item in &request_plan.included {
            let automatic = matches!(
                item.reason,
                InclusionReason::AutoRetrieved { .. } | InclusionReason::AutoExpanded { .. }
            );
            // A retrieved summary that was referenced is back in working memory (salience
            // brought it back), where the summary budget governs it; a pin would keep it past
            // that budget.
            let resident = item
                .id
                .strip_prefix("summary:")
                .and_then(|id| self.efforts.get(id))
                .is_some_and(|e| e.status == EffortStatus::Concluded && !e.evicted);
            if automatic
                && !resident
                && self.pins.on(&item.id).is_none()
                && referenced(&self.efforts, &item.id)
            {
                self.pins.keep_retrieved(&item.id, self.turn);
            }
        }

        let mentioned: Vec<String> = self
            .efforts
            .placement
            .in_memory
            .iter()
            .map(|&(_, i)| i)
            .chain(self.efforts.placement.open.iter().copied())
            .filter(|i| {
                self.efforts.at(*i).last_referenced_turn == self.turn || references.contains(i)
            })
            .map(|i| self.efforts.at(i).id.clone())
            .collect();
        self.pins.update_activation(
            request_plan.included.iter().map(|i| i.id.as_str()),
            &mentioned,
        );
    }

    /// Tokens of the working context as it stands: the plan's total, from stored counts,
    /// without the excerpts the automatic recall adds to a request for the message being
    /// answered (they are not part of the working set). Cost follows the working set, never
    /// the history.
    pub fn working_tokens(&self) -> u64 {
        self.plan(false).working_set_tokens()
    }

    /// The ambient messages in working memory: the last `ambient_window` exchanges, as many of
    /// them as fit `ambient_token_budget` (the newest exchange is always kept, whole).
    pub fn ambient_window(&self) -> &[Message] {
        &self.ambient.messages()[self.ambient_window_bounds().1..]
    }

    /// Where the ambient window starts in the loaded ambient log: `(by count, by count and
    /// tokens)`. Messages between the two are among the last `ambient_window` exchanges but left
    /// out for the token budget. An exchange is the messages of one turn; the walk reads at most
    /// `ambient_window` exchanges from the end, so it costs the window, not the log.
    pub(crate) fn ambient_window_bounds(&self) -> (usize, usize) {
        self.ambient
            .window_bounds(self.config.ambient_window, self.config.ambient_token_budget)
    }

    /// The turn's metrics point: `context_tokens` as the turn's context held them (before
    /// salience), `working_tokens` as the working set stands now.
    pub(super) fn metrics_point(
        &self,
        context_tokens: u64,
        working_tokens: u64,
        events: Vec<EffortEvent>,
    ) -> TurnMetrics {
        // Expansion tokens as they were during the turn: the current expansions plus those that
        // auto-collapsed at its end (they were in the context the turn was measured with).
        let expansion_tokens = self.efforts.expansion_tokens() + auto_collapsed_tokens(&events);
        let naive = self.naive_tokens();
        TurnMetrics::new(
            self.turn,
            context_tokens,
            expansion_tokens,
            naive,
            working_tokens,
            self.efforts.placement.in_memory.len() as u64
                - self.efforts.placement.expanded.len() as u64,
            self.ambient_window().len() as u64,
            self.efforts
                .expanded_ids()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            self.efforts.placement.open.len() as u64,
            self.efforts.placement.evicted.count,
            events,
        )
    }
}

/// Raw tokens of the efforts that auto-collapsed, among a turn's events.
fn auto_collapsed_tokens(events: &[EffortEvent]) -> u64 {
    events
        .iter()
        .filter(|e| e.kind == EventKind::AutoCollapsed)
        .map(|e| e.tokens)
        .sum()
}
