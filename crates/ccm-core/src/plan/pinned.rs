//! The pinned tiers: a pin lifts its target's tier (sticky, leased, ephemeral) or brings in a
//! target that is not in the working set by itself; expired pins are listed as excluded.

use super::candidates::{
    Candidate, Gathered, Part, Ties, TIER_EPHEMERAL, TIER_LEASED, TIER_STICKY,
};
use super::{ExcludedItem, ExclusionReason, InclusionReason, PlanInput, Section, TtlState};
use crate::model::LogState;
use crate::pins::{LeaseScope, PinKind};

/// Pins raise their targets' tier, or bring targets that are not in the working set.
pub(super) fn apply(input: &PlanInput<'_>, gathered: &mut Gathered) {
    for pin in input.pins.all() {
        let (tier, ttl, leased) = match (&pin.kind, &pin.lease) {
            (PinKind::Sticky, _) => (TIER_STICKY, TtlState::Permanent, false),
            (PinKind::Leased, Some(LeaseScope::Turns { remaining })) => {
                (TIER_LEASED, TtlState::Lease { turns: *remaining }, true)
            }
            (PinKind::Leased, Some(LeaseScope::Task { effort })) => (
                TIER_LEASED,
                TtlState::Task {
                    effort: effort.clone(),
                },
                true,
            ),
            (PinKind::Leased, None) => (TIER_LEASED, TtlState::Lease { turns: 0 }, true),
            (PinKind::Ephemeral, _) => (TIER_EPHEMERAL, TtlState::Ephemeral, false),
        };
        let reason = InclusionReason::Pinned {
            kind: pin.kind,
            pin: pin.id,
        };
        if let Some(existing) = gathered.candidates.iter_mut().find(|c| c.id == pin.target) {
            // A pin never lowers an item's place: it only lifts it.
            if tier < existing.tier {
                existing.tier = tier;
                existing.reason = reason;
                existing.ttl = ttl;
                existing.ties.leased = leased;
            }
            existing.ties.pinned = true;
            continue;
        }
        let lift = Lift {
            tier,
            ttl,
            reason,
            leased,
        };
        if let Some(candidate) = pinned_candidate(input, &pin.target, lift, &mut gathered.excluded)
        {
            gathered.candidates.push(candidate);
        }
    }
    for expired in input.pins.expired() {
        gathered.excluded.push(ExcludedItem {
            id: format!("pin:{}", expired.id),
            section: section_of_target(&expired.target),
            tokens: 0,
            count: 1,
            reason: ExclusionReason::TtlExpired,
        });
    }
}

/// Where a pin puts its target.
struct Lift {
    tier: u8,
    ttl: TtlState,
    reason: InclusionReason,
    leased: bool,
}

/// A candidate for a pinned target that is not in the working set by itself.
fn pinned_candidate(
    input: &PlanInput<'_>,
    target: &str,
    lift: Lift,
    excluded: &mut Vec<ExcludedItem>,
) -> Option<Candidate> {
    let base = |id: &str, section, part, tokens, render| Candidate {
        id: id.to_string(),
        section,
        part,
        tokens,
        tier: lift.tier,
        rank: (input.pins.activation_of(id), 0),
        render,
        reason: lift.reason.clone(),
        ttl: lift.ttl.clone(),
        activation: input.pins.activation_of(id),
        ties: Ties {
            leased: lift.leased,
            pinned: true,
            ..Ties::default()
        },
    };
    let efforts = input.efforts;
    let (kind, rest) = target.split_once(':')?;
    match kind {
        "summary" => {
            let index = *efforts.index.get(rest)?;
            let effort = efforts.at(index);
            let summary = effort.summary.as_ref()?;
            if efforts.is_expanded(index) {
                return None;
            }
            Some(base(
                target,
                Section::Summary,
                Part::Summary(index),
                u64::from(summary.tokens),
                (1, effort.concluded_seq.unwrap_or_default(), 0),
            ))
        }
        "effort" => {
            let index = *efforts.index.get(rest)?;
            let effort = efforts.at(index);
            if effort.log != LogState::Loaded {
                excluded.push(ExcludedItem {
                    id: target.to_string(),
                    section: Section::Expanded,
                    tokens: effort.raw_tokens,
                    count: 1,
                    reason: ExclusionReason::NotLoaded,
                });
                return None;
            }
            // The pinned log stands in for the summary.
            excluded.retain(|e| e.id != target);
            Some(base(
                target,
                Section::Expanded,
                Part::Log {
                    effort: index,
                    first: 0,
                },
                effort.raw_tokens,
                (3, 1_000_000 + index as u64, 0),
            ))
        }
        "ambient" => {
            let exchange_turn: u64 = rest.parse().ok()?;
            let messages = input.ambient.messages();
            let positions: Vec<usize> = messages
                .iter()
                .enumerate()
                .rev()
                .take_while(|(_, m)| m.turn >= exchange_turn)
                .filter(|(_, m)| m.turn == exchange_turn)
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let first = *positions.first()?;
            let tokens = positions
                .iter()
                .map(|&p| u64::from(messages[p].tokens))
                .sum();
            Some(base(
                target,
                Section::Ambient,
                Part::Ambient(positions),
                tokens,
                (2, messages[first].seq, 0),
            ))
        }
        _ => None,
    }
}

fn section_of_target(target: &str) -> Section {
    match target.split_once(':').map(|(kind, _)| kind) {
        Some("summary") => Section::Summary,
        Some("ambient") => Section::Ambient,
        _ => Section::Expanded,
    }
}
