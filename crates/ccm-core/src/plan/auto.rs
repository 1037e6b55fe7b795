//! The automatic tier: summaries (and in Heavy mode the best match's raw log) retrieved for
//! the user's message by the context mode, or listed as `mode_off`.

use super::candidates::{Candidate, Gathered, Part, Ties, TIER_EPHEMERAL};
use super::{
    ExcludedItem, ExclusionReason, InclusionReason, PlanInput, Section, TtlState,
    AUTO_MAX_POSTINGS, AUTO_SUMMARY_LIMIT,
};
use crate::components::efforts::Efforts;
use crate::config::{Config, ContextMode};
use crate::model::LogState;
use std::collections::BTreeSet;

/// An automatic retrieval for the user's message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AutoHit {
    pub(crate) effort: usize,
    pub(crate) score: f64,
    pub(crate) matched: Vec<String>,
}

/// Efforts the planner would pull in for `query`: concluded, out of working memory, not
/// expanded, matching by id or by at least `min_keyword_overlap` words.
pub(crate) fn hits(efforts: &Efforts, config: &Config, query: &str) -> Vec<AutoHit> {
    let min = config.min_keyword_overlap as usize;
    let Some(ranked) = efforts.search.search_bounded(
        query,
        &efforts.index,
        AUTO_SUMMARY_LIMIT * 3,
        AUTO_MAX_POSTINGS,
    ) else {
        return Vec::new();
    };
    ranked
        .into_iter()
        .filter(|hit| {
            let effort = efforts.at(hit.effort);
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
/// best match).
pub(crate) fn logs_needed(input: &PlanInput<'_>) -> Vec<String> {
    let efforts = input.efforts;
    let mut needed: BTreeSet<String> = BTreeSet::new();
    for pin in input.pins.all() {
        if let Some(id) = pin.target.strip_prefix("effort:") {
            if efforts.get(id).is_some_and(|e| e.log != LogState::Loaded) {
                needed.insert(id.to_string());
            }
        }
    }
    if input.config.context_mode == ContextMode::Heavy {
        if let Some((text, _)) = input.pending {
            if let Some(best) = hits(efforts, input.config, text).first() {
                let effort = efforts.at(best.effort);
                if effort.log != LogState::Loaded {
                    needed.insert(effort.id.clone());
                }
            }
        }
    }
    needed.into_iter().collect()
}

/// Items pulled in for the user's message by the context mode (or listed as `mode_off`).
pub(super) fn retrieve(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let Some((query, _)) = input.pending else {
        return;
    };
    let mode = input.config.context_mode;
    for (rank, hit) in hits(input.efforts, input.config, query).iter().enumerate() {
        let effort = input.efforts.at(hit.effort);
        let summary_id = format!("summary:{}", effort.id);
        let Some(summary) = &effort.summary else {
            continue;
        };
        if gathered
            .candidates
            .iter()
            .any(|c| c.id == summary_id || c.id == format!("effort:{}", effort.id))
        {
            continue;
        }
        if mode == ContextMode::Off {
            gathered.excluded.push(ExcludedItem {
                id: summary_id,
                section: Section::Summary,
                tokens: u64::from(summary.tokens),
                count: 1,
                reason: ExclusionReason::ModeOff,
            });
            continue;
        }
        let heavy_best = mode == ContextMode::Heavy && rank == 0;
        if heavy_best && effort.log == LogState::Loaded {
            gathered.excluded.push(ExcludedItem {
                id: summary_id,
                section: Section::Summary,
                tokens: u64::from(summary.tokens),
                count: 1,
                reason: ExclusionReason::Superseded,
            });
            let id = format!("effort:{}", effort.id);
            gathered.candidates.push(Candidate {
                activation: input.pins.activation_of(&id),
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
        gathered.candidates.push(Candidate {
            activation: input.pins.activation_of(&summary_id),
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
