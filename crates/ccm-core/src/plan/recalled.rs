//! The recalled tier: excerpts of stored messages the model recalled with the `recall` tool
//! (they decay like expanded logs), and those the automatic recall found for the user's
//! message (this request only, within `recall_token_budget`; what did not fit is listed as
//! `over_recall_budget`).

use super::candidates::{Candidate, Gathered, Part, Ties, TIER_AUTO_RECALL, TIER_EXPANDED};
use super::{ExclusionReason, InclusionReason, PlanInput, Section, TtlState};
use crate::components::recall::{ShownExcerpt, TextSources};
use crate::recall::Source;

/// Where a recalled excerpt goes in the context: after the summaries, before the ambient
/// window, in the order its messages were said.
fn render_key(excerpt: &ShownExcerpt) -> (u8, u64, u64) {
    (1, u64::MAX - 1, excerpt.keys[0].0)
}

/// How a recalled excerpt competes for room: the part of its candidate that differs between
/// the excerpts the model recalled and those the automatic recall found.
struct Standing {
    tier: u8,
    rank: (u32, u64),
    reason: InclusionReason,
    ttl: TtlState,
    activation: u32,
}

/// An excerpt's candidate: what it is and where it is rendered (the same for both kinds of
/// recall), with its `standing`. An excerpt the automatic recall found is marked automatic,
/// like everything automatic retrieval pulls in.
fn excerpt_candidate(excerpt: &ShownExcerpt, part: Part, standing: Standing) -> Candidate {
    let auto = matches!(part, Part::Excerpt { auto: true, .. });
    Candidate {
        id: excerpt.id.clone(),
        section: Section::Recalled,
        part,
        tokens: excerpt.tokens,
        tier: standing.tier,
        rank: standing.rank,
        render: render_key(excerpt),
        reason: standing.reason,
        ttl: standing.ttl,
        activation: standing.activation,
        ties: Ties {
            auto,
            ..Ties::default()
        },
    }
}

/// Whether every text of an excerpt is in memory (a session opened from a store reads the
/// messages of concluded logs back first; see `Session::messages_needed_for_plan`).
fn is_loaded(input: &PlanInput<'_>, excerpt: &ShownExcerpt) -> bool {
    let texts = sources(input);
    excerpt
        .keys
        .iter()
        .all(|&key| texts.text(excerpt.source, key).is_some())
}

/// Whether an excerpt can be shown; if not, it is listed as excluded for `NotLoaded`, so the
/// host knows to read its messages back.
fn loaded_or_excluded(
    input: &PlanInput<'_>,
    excerpt: &ShownExcerpt,
    gathered: &mut Gathered,
) -> bool {
    let loaded = is_loaded(input, excerpt);
    if !loaded {
        gathered.exclude(
            excerpt.id.clone(),
            Section::Recalled,
            excerpt.tokens,
            1,
            ExclusionReason::NotLoaded,
        );
    }
    loaded
}

pub(super) fn sources<'a>(input: &PlanInput<'a>) -> TextSources<'a> {
    TextSources {
        efforts: input.efforts,
        ambient: input.ambient,
        attachments: input.attachments,
        loaded: &input.recall.loaded,
    }
}

/// Excerpts recalled with the `recall` tool.
pub(super) fn focused(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let decay = u64::from(input.config.decay_threshold);
    for (index, focused) in input.recall.focused.iter().enumerate() {
        let excerpt = &focused.excerpt;
        if !loaded_or_excluded(input, excerpt, gathered) {
            continue;
        }
        let idle = input.turn.saturating_sub(focused.last_referenced_turn);
        let activation = input.pins.activation_of(&excerpt.id);
        let standing = Standing {
            tier: TIER_EXPANDED,
            rank: (activation, focused.last_referenced_turn),
            reason: InclusionReason::Recalled {
                query: focused.query.clone(),
                turns_since_reference: idle,
                turns_until_auto_collapse: decay.saturating_sub(idle),
            },
            ttl: TtlState::Decay {
                turns: decay.saturating_sub(idle),
            },
            activation,
        };
        let part = Part::Excerpt { auto: false, index };
        gathered
            .candidates
            .push(excerpt_candidate(excerpt, part, standing));
    }
}

/// Excerpts the automatic recall found for the user's message, and those it left out.
pub(super) fn automatic(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let Some(auto) = input.recall.auto.as_ref() else {
        return;
    };
    if input.pending.is_none() {
        return;
    }
    let count = auto.excerpts.len();
    for (index, excerpt) in auto.excerpts.iter().enumerate() {
        if !loaded_or_excluded(input, excerpt, gathered) {
            continue;
        }
        let part = Part::Excerpt { auto: true, index };
        gathered.candidates.push(excerpt_candidate(
            excerpt,
            part,
            Standing {
                tier: TIER_AUTO_RECALL,
                // Within the tier, the best excerpt is placed first.
                rank: ((count - index) as u32, 0),
                reason: InclusionReason::AutoRecalled {
                    score: excerpt.score,
                    matched: excerpt.matched.clone(),
                },
                ttl: TtlState::Ephemeral,
                activation: input.pins.activation_of(&excerpt.id),
            },
        ));
    }
    for left in &auto.left_out {
        gathered.exclude(
            left.id.clone(),
            Section::Recalled,
            left.tokens,
            1,
            ExclusionReason::OverRecallBudget,
        );
    }
}

/// The attachment id of an excerpt's source, if it is an attachment's.
pub(super) fn attachment_id(source: Source) -> Option<String> {
    match source {
        Source::Attachment(number) => Some(format!("att-{number}")),
        _ => None,
    }
}
