//! The candidates of a plan, one function per tier of the working set: the mandatory items,
//! summaries in working memory, the ambient window, expanded and open logs, the rolling
//! summary and attachments, and the grouped exclusions of what is stored but not in working
//! memory. Each reads only the components it names.

use super::{ExcludedItem, ExclusionReason, InclusionReason, PlanInput, Section, TtlState};
use crate::components::compaction::PlannedCompaction;
use crate::model::LogRef;
use crate::model::{ContextMessage, Effort, EffortStatus, Message, Role};
use std::collections::BTreeMap;

/// How a candidate is rendered into messages.
#[derive(Debug, Clone)]
pub(super) enum Part {
    System,
    Summary(usize),
    /// Positions in the loaded ambient log.
    Ambient(Vec<usize>),
    /// An effort's log: header plus its messages from `first` on (earlier turns trimmed),
    /// without the turns compaction moved out.
    Log {
        effort: usize,
        first: usize,
    },
    Pending,
    Attachment(String),
    Rolling,
    /// A recalled excerpt: one of the `recall` tool's (`auto: false`) or of the automatic
    /// recall's, by position.
    Excerpt {
        auto: bool,
        index: usize,
    },
}

/// Fill tiers, in order.
pub(super) const TIER_MANDATORY: u8 = 0;
pub(super) const TIER_STICKY: u8 = 1;
pub(super) const TIER_ACTIVE: u8 = 2;
pub(super) const TIER_OPEN: u8 = 3;
pub(super) const TIER_EXPANDED: u8 = 4;
pub(super) const TIER_LEASED: u8 = 5;
pub(super) const TIER_AMBIENT: u8 = 6;
pub(super) const TIER_SUMMARY: u8 = 7;
pub(super) const TIER_EPHEMERAL: u8 = 8;
/// Attachments of stored messages come last: they depend on their message's item, which must
/// have been placed first, and a compaction compresses them before anything else anyway.
pub(super) const TIER_ATTACHMENT: u8 = 9;
/// The automatic recall's excerpts fill only the room the working set leaves: they are not
/// part of it, and must never push an item of it out of the request.
pub(super) const TIER_AUTO_RECALL: u8 = 10;

/// Candidate groups whose atoms must stay contiguous: once one is left out for budget, the
/// older ones are left out too, so the context never has a gap in the middle of a dialogue.
pub(super) const GROUP_AMBIENT: u8 = 1;

#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) id: String,
    pub(super) section: Section,
    pub(super) part: Part,
    pub(super) tokens: u64,
    pub(super) tier: u8,
    /// Within a tier, higher first.
    pub(super) rank: (u32, u64),
    /// Position in the rendered context.
    pub(super) render: (u8, u64, u64),
    pub(super) reason: InclusionReason,
    pub(super) ttl: TtlState,
    pub(super) activation: u32,
    pub(super) ties: Ties,
}

/// How a candidate came to be and what it is tied to. Nearly every candidate has the
/// defaults (no pin, not automatic, no group, no dependency), so literals spell out only
/// what differs.
#[derive(Debug, Clone, Default)]
pub(super) struct Ties {
    /// A leased pin: counts against the leased budget.
    pub(super) leased: bool,
    /// Pulled in by automatic retrieval (context modes).
    pub(super) auto: bool,
    /// Pinned (sticky or leased).
    pub(super) pinned: bool,
    /// Candidates of one non-zero group stop at the first that does not fit.
    pub(super) group: u8,
    /// Candidate ids that must be included for this one to be.
    pub(super) depends_on: Vec<String>,
}

/// The candidates and exclusions gathered so far, in the order they were found (the order of
/// the exclusions is part of the plan).
#[derive(Debug, Default)]
pub(super) struct Gathered {
    pub(super) candidates: Vec<Candidate>,
    pub(super) excluded: Vec<ExcludedItem>,
}

impl Gathered {
    pub(super) fn exclude(
        &mut self,
        id: String,
        section: Section,
        tokens: u64,
        count: u64,
        reason: ExclusionReason,
    ) {
        self.excluded.push(ExcludedItem {
            id,
            section,
            tokens,
            count,
            reason,
        });
    }
}

pub(super) fn message(role: Role, content: &str) -> ContextMessage {
    ContextMessage {
        role,
        content: content.to_string(),
    }
}

/// Where the turns of a log start, by position, oldest first: `(turn, first position, tokens)`.
/// Turns that compaction moved out are skipped.
pub(super) fn turn_atoms(
    compaction: PlannedCompaction<'_>,
    effort: &Effort,
) -> Vec<(u64, usize, u64)> {
    let mut atoms: Vec<(u64, usize, u64)> = Vec::new();
    for (position, m) in effort.messages.iter().enumerate() {
        if compaction.turn_compacted(&effort.id, m.turn) {
            continue;
        }
        match atoms.last_mut() {
            Some(last) if last.0 == m.turn => last.2 += u64::from(m.tokens),
            _ => atoms.push((m.turn, position, u64::from(m.tokens))),
        }
    }
    atoms
}

/// A log's tokens as the context shows it: header and every turn not compacted.
fn log_tokens(compaction: PlannedCompaction<'_>, effort: &Effort) -> u64 {
    u64::from(effort.header_tokens)
        + turn_atoms(compaction, effort)
            .iter()
            .map(|a| a.2)
            .sum::<u64>()
}

/// Tier 0: the system prompt and the user message of the turn in progress.
pub(super) fn mandatory(input: &PlanInput<'_>, gathered: &mut Gathered) {
    gathered.candidates.push(Candidate {
        id: "system".to_string(),
        section: Section::System,
        part: Part::System,
        tokens: u64::from(input.system.tokens),
        tier: TIER_MANDATORY,
        rank: (0, 0),
        render: (0, 0, 0),
        reason: InclusionReason::SystemPrompt,
        ttl: TtlState::Permanent,
        activation: 0,
        ties: Ties::default(),
    });
    if let Some((_, tokens)) = input.pending {
        gathered.candidates.push(Candidate {
            id: "pending".to_string(),
            section: Section::Pending,
            part: Part::Pending,
            tokens: u64::from(tokens),
            tier: TIER_MANDATORY,
            rank: (0, 0),
            render: (7, 0, 0),
            reason: InclusionReason::CurrentUserMessage,
            ttl: TtlState::Ephemeral,
            activation: 0,
            ties: Ties::default(),
        });
    }
}

/// The efforts that are expanded, each with its position in the expansion list.
pub(super) fn expansion_order(input: &PlanInput<'_>) -> BTreeMap<usize, usize> {
    input
        .efforts
        .placement
        .expanded
        .iter()
        .enumerate()
        .map(|(order, e)| (e.effort, order))
        .collect()
}

/// Summaries in working memory (by activation, then recency); an expanded effort's summary is
/// excluded, its log stands in for it.
pub(super) fn summaries(
    input: &PlanInput<'_>,
    expanded: &BTreeMap<usize, usize>,
    gathered: &mut Gathered,
) {
    let eviction = u64::from(input.config.summary_eviction_threshold);
    let efforts = input.efforts;
    for &(seq, index) in &efforts.placement.in_memory {
        let effort = efforts.at(index);
        let Some(summary) = &effort.summary else {
            continue;
        };
        let summary_id = format!("summary:{}", effort.id);
        if expanded.contains_key(&index) {
            gathered.exclude(
                summary_id,
                Section::Summary,
                u64::from(summary.tokens),
                1,
                ExclusionReason::Expanded,
            );
            continue;
        }
        let idle = input.turn - effort.last_referenced_turn;
        let activation = input.pins.activation_of(&summary_id);
        gathered.candidates.push(Candidate {
            activation,
            rank: (activation, seq),
            id: summary_id,
            section: Section::Summary,
            part: Part::Summary(index),
            tokens: u64::from(summary.tokens),
            tier: TIER_SUMMARY,
            render: (1, seq, 0),
            reason: InclusionReason::RecentlyReferenced {
                turns_since_reference: idle,
                turns_until_eviction: eviction.saturating_sub(idle),
            },
            ttl: TtlState::Eviction {
                turns: eviction.saturating_sub(idle),
            },
            ties: Ties::default(),
        });
    }
}

/// The ambient window, one candidate per exchange (newest first when filled); exchanges that
/// compaction moved out are excluded.
pub(super) fn ambient_window(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let ambient = input.ambient;
    let (_, window_start) = input.ambient_bounds();
    let window = &ambient.messages()[window_start..];
    let mut exchanges: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (offset, m) in window.iter().enumerate() {
        exchanges
            .entry(m.turn)
            .or_default()
            .push(window_start + offset);
    }
    for (exchange_turn, positions) in exchanges {
        let id = format!("ambient:{exchange_turn}");
        let tokens = positions
            .iter()
            .map(|&p| u64::from(ambient.messages()[p].tokens))
            .sum();
        if let Some(reason) = input.compaction.compacted.get(&id) {
            gathered.exclude(id, Section::Ambient, tokens, 1, compacted_reason(*reason));
            continue;
        }
        gathered.candidates.push(Candidate {
            activation: input.pins.activation_of(&id),
            rank: (0, exchange_turn),
            tokens,
            render: (2, ambient.messages()[positions[0]].seq, 0),
            id,
            section: Section::Ambient,
            part: Part::Ambient(positions),
            tier: TIER_AMBIENT,
            reason: InclusionReason::AmbientWindow,
            ttl: TtlState::Permanent,
            ties: Ties {
                group: GROUP_AMBIENT,
                ..Ties::default()
            },
        });
    }
}

/// Expanded raw logs, in expansion order.
pub(super) fn expanded_logs(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let decay = u64::from(input.config.decay_threshold);
    for (order, e) in input.efforts.placement.expanded.iter().enumerate() {
        let effort = input.efforts.at(e.effort);
        let idle = input.turn - e.last_referenced_turn;
        let id = format!("effort:{}", effort.id);
        let activation = input.pins.activation_of(&id);
        gathered.candidates.push(Candidate {
            activation,
            rank: (activation, e.last_referenced_turn),
            id,
            section: Section::Expanded,
            part: Part::Log {
                effort: e.effort,
                first: 0,
            },
            tokens: log_tokens(input.compaction, effort),
            tier: TIER_EXPANDED,
            render: (3, order as u64, 0),
            reason: InclusionReason::Expanded {
                turns_since_reference: idle,
                turns_until_auto_collapse: decay.saturating_sub(idle),
            },
            ttl: TtlState::Decay {
                turns: decay.saturating_sub(idle),
            },
            ties: Ties::default(),
        });
    }
}

/// Open raw logs: the active one in its own tier (rendered last), the others by last activity.
pub(super) fn open_logs(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let placement = &input.efforts.placement;
    for (order, &index) in placement.open.iter().enumerate() {
        let effort = input.efforts.at(index);
        debug_assert_eq!(effort.status, EffortStatus::Open);
        let active = Some(index) == placement.active;
        let id = format!("effort:{}", effort.id);
        let last_activity = effort
            .messages
            .last()
            .map_or(effort.opened_turn, |m| m.turn);
        gathered.candidates.push(Candidate {
            activation: input.pins.activation_of(&id),
            rank: (0, last_activity),
            id,
            section: Section::Open,
            part: Part::Log {
                effort: index,
                first: 0,
            },
            tokens: log_tokens(input.compaction, effort),
            tier: if active { TIER_ACTIVE } else { TIER_OPEN },
            render: if active {
                (6, 0, 0)
            } else {
                (5, order as u64, 0)
            },
            reason: if active {
                InclusionReason::ActiveEffort
            } else {
                InclusionReason::OpenEffort
            },
            ttl: TtlState::Permanent,
            ties: Ties::default(),
        });
    }
}

/// Raw logs represented by their summaries (summarized or decayed), and the evicted summaries
/// as two grouped exclusions.
pub(super) fn stored_efforts(
    input: &PlanInput<'_>,
    expanded: &BTreeMap<usize, usize>,
    gathered: &mut Gathered,
) {
    let efforts = input.efforts;
    for &(_, index) in &efforts.placement.in_memory {
        if expanded.contains_key(&index) {
            continue;
        }
        let effort = efforts.at(index);
        let reason = if efforts.auto_collapsed_at.contains_key(&index) {
            ExclusionReason::Decayed
        } else {
            ExclusionReason::Summarized
        };
        gathered.exclude(
            format!("effort:{}", effort.id),
            Section::RawLog,
            effort.raw_tokens,
            1,
            reason,
        );
    }
    let evicted = &efforts.placement.evicted;
    let unreferenced_count = evicted.count - evicted.budget_count;
    if unreferenced_count > 0 {
        gathered.exclude(
            "evicted".to_string(),
            Section::Summary,
            evicted.tokens - evicted.budget_tokens,
            unreferenced_count,
            ExclusionReason::EvictedUnreferenced,
        );
    }
    if evicted.budget_count > 0 {
        gathered.exclude(
            "evicted:over_budget".to_string(),
            Section::Summary,
            evicted.budget_tokens,
            evicted.budget_count,
            ExclusionReason::EvictedOverBudget,
        );
    }
}

/// Ambient exchanges outside the window: those among the last `ambient_window` that the
/// ambient token budget left out, one by one (there are fewer than `ambient_window` of them),
/// and all older messages as one group.
pub(super) fn stored_ambient(input: &PlanInput<'_>, gathered: &mut Gathered) {
    let ambient = input.ambient;
    let (count_start, window_start) = input.ambient_bounds();
    let mut position = count_start;
    while position < window_start {
        let turn_of = ambient.messages()[position].turn;
        let mut tokens = 0u64;
        while position < window_start && ambient.messages()[position].turn == turn_of {
            tokens += u64::from(ambient.messages()[position].tokens);
            position += 1;
        }
        gathered.exclude(
            format!("ambient:{turn_of}"),
            Section::Ambient,
            tokens,
            1,
            ExclusionReason::OverAmbientBudget,
        );
    }
    // Older ambient messages of a session opened from a store are stored but not loaded;
    // they are outside the window all the same.
    let outside = ambient.offset() + count_start as u64;
    if outside > 0 {
        let counted_tokens: u64 = ambient.messages()[count_start..]
            .iter()
            .map(|m| u64::from(m.tokens))
            .sum();
        let first_turn = ambient
            .messages()
            .get(count_start)
            .map_or(input.turn + 1, |m| m.turn);
        gathered.exclude(
            format!("ambient:before:{first_turn}"),
            Section::Ambient,
            ambient.tokens() - counted_tokens,
            outside,
            ExclusionReason::OutsideAmbientWindow,
        );
    }
}

/// Turns of open logs that compaction moved out: one grouped exclusion per effort.
pub(super) fn compacted_turns(input: &PlanInput<'_>, gathered: &mut Gathered) {
    for &index in &input.efforts.placement.open {
        let effort = input.efforts.at(index);
        let compacted: Vec<&Message> = effort
            .messages
            .iter()
            .filter(|m| input.compaction.turn_compacted(&effort.id, m.turn))
            .collect();
        if !compacted.is_empty() {
            gathered.exclude(
                format!("effort:{}@compacted", effort.id),
                Section::Open,
                compacted.iter().map(|m| u64::from(m.tokens)).sum(),
                compacted.len() as u64 / 2,
                ExclusionReason::CompactedLevel3,
            );
        }
    }
}

/// The rolling summary of compacted ambient exchanges, in the ambient tier.
pub(super) fn rolling(compaction: PlannedCompaction<'_>, gathered: &mut Gathered) {
    if let Some(rolling) = compaction.rolling.as_ref() {
        gathered.candidates.push(Candidate {
            id: "rolling".to_string(),
            section: Section::Rolling,
            part: Part::Rolling,
            tokens: u64::from(rolling.tokens),
            tier: TIER_AMBIENT,
            rank: (u32::MAX, u64::MAX),
            render: (1, u64::MAX, 0),
            reason: InclusionReason::RollingSummary {
                covers: crate::compaction::rolling::describe_ranges(&rolling.covers),
            },
            ttl: TtlState::Permanent,
            activation: 0,
            ties: Ties::default(),
        });
    }
}

/// Attachments in the working set: those of the pending message are mandatory, the others come
/// last and only with the item of their message.
pub(super) fn attachments(input: &PlanInput<'_>, gathered: &mut Gathered) {
    for id in &input.attachments_in_working_set {
        let stored = &input.attachments.by_id()[id];
        let pending = stored.log.is_none();
        let depends_on = match &stored.log {
            None => "pending".to_string(),
            Some(LogRef::Ambient) => format!("ambient:{}", stored.message_turn),
            Some(LogRef::Effort(effort)) => format!("effort:{effort}"),
        };
        gathered.candidates.push(Candidate {
            id: format!("attachment:{id}"),
            section: Section::Attachment,
            part: Part::Attachment(id.clone()),
            tokens: u64::from(stored.attachment.tokens()),
            tier: if pending {
                TIER_MANDATORY
            } else {
                TIER_ATTACHMENT
            },
            rank: (0, stored.message_seq),
            render: if pending {
                (6, u64::MAX, stored.message_seq)
            } else {
                (1, u64::MAX, 1 + stored.message_seq)
            },
            reason: InclusionReason::Attachment {
                mode: stored.attachment.mode,
            },
            ttl: TtlState::Permanent,
            activation: 0,
            ties: Ties {
                depends_on: vec![depends_on],
                ..Ties::default()
            },
        });
    }
}

fn compacted_reason(reason: crate::compaction::MoveReason) -> ExclusionReason {
    match reason {
        crate::compaction::MoveReason::CompactedLevel2 => ExclusionReason::CompactedLevel2,
        _ => ExclusionReason::CompactedLevel3,
    }
}
