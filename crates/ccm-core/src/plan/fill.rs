//! Filling the request budget: candidates in tier order, each placed if it fits (a raw log
//! trimmed by whole turns, oldest first), the rest excluded as `over_budget`; then the included
//! items in context order with their totals, the meter and the plan's ids.

use super::candidates::{turn_atoms, Candidate, Gathered, Part, TIER_EPHEMERAL, TIER_MANDATORY};
use super::ids::{fold_words, request_hash, FNV_OFFSET};
use super::render::{meter_line, render};
use super::{
    Budget, BudgetMeter, ContextPlan, ExcludedItem, ExclusionReason, IncludedItem, PlanInput,
    PlanTotals, Section, TtlState,
};
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// A candidate that was placed, with the tokens it takes and its number of atoms.
struct Chosen {
    candidate: Candidate,
    tokens: u64,
    atoms: u32,
}

/// The state of one fill: what is used, what is placed and what was left out.
struct Filling {
    budget: u64,
    leased_budget: u64,
    used: u64,
    leased_used: u64,
    closed_groups: BTreeSet<u8>,
    chosen: Vec<Chosen>,
    mandatory_over_budget: bool,
    placed: BTreeSet<String>,
    excluded: Vec<ExcludedItem>,
}

/// Fills the budget tier by tier and renders the included items in context order. Without
/// `render`, messages, the recipe and the ids are left empty.
pub(super) fn fill(input: &PlanInput<'_>, gathered: Gathered, render: bool) -> ContextPlan {
    let Gathered {
        mut candidates,
        excluded,
    } = gathered;
    sort_into_fill_order(&mut candidates);
    let mut filling = Filling {
        budget: input.config.request_budget(),
        leased_budget: u64::from(input.config.leased_token_budget),
        used: 0,
        leased_used: 0,
        closed_groups: BTreeSet::new(),
        chosen: Vec::new(),
        mandatory_over_budget: false,
        placed: BTreeSet::new(),
        excluded,
    };
    for candidate in candidates {
        filling.place(input, candidate);
    }
    assemble(input, filling, render)
}

/// By tier; within a tier, candidates that depend on others come after them, so a dependency
/// is always placed (or left out) before the items that need it; then by rank, then by id.
fn sort_into_fill_order(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| {
        (
            a.tier,
            !a.ties.depends_on.is_empty(),
            Reverse(a.rank),
            &a.id,
        )
            .cmp(&(
                b.tier,
                !b.ties.depends_on.is_empty(),
                Reverse(b.rank),
                &b.id,
            ))
    });
}

impl Filling {
    fn exclude(&mut self, candidate: &Candidate, tokens: u64, count: u64, reason: ExclusionReason) {
        self.excluded.push(ExcludedItem {
            id: candidate.id.clone(),
            section: candidate.section,
            tokens,
            count,
            reason,
        });
    }

    fn choose(&mut self, candidate: Candidate, tokens: u64, atoms: u32) {
        self.placed.insert(candidate.id.clone());
        self.used += tokens;
        if candidate.ties.leased {
            self.leased_used += tokens;
        }
        self.chosen.push(Chosen {
            candidate,
            tokens,
            atoms,
        });
    }

    /// Places one candidate, or excludes it with the reason.
    fn place(&mut self, input: &PlanInput<'_>, candidate: Candidate) {
        if !candidate
            .ties
            .depends_on
            .iter()
            .all(|d| self.placed.contains(d))
        {
            let tokens = candidate.tokens;
            self.exclude(&candidate, tokens, 1, ExclusionReason::DependencyExcluded);
            return;
        }
        if candidate.tier == TIER_MANDATORY {
            // Mandatory items go in whatever the budget says; the plan reports the overrun.
            self.placed.insert(candidate.id.clone());
            self.used += candidate.tokens;
            self.mandatory_over_budget = self.used > self.budget;
            self.chosen.push(Chosen {
                candidate,
                tokens: 0,
                atoms: 1,
            });
            return;
        }
        let leased_room = if candidate.ties.leased {
            self.leased_budget.saturating_sub(self.leased_used)
        } else {
            u64::MAX
        };
        let room = self.budget.saturating_sub(self.used).min(leased_room);
        let group = candidate.ties.group;
        if group != 0 && self.closed_groups.contains(&group) {
            let tokens = candidate.tokens;
            self.exclude(&candidate, tokens, 1, ExclusionReason::OverBudget);
            return;
        }
        match candidate.part {
            Part::Log { effort, .. } => self.place_log(input, candidate, effort, room),
            _ if candidate.tokens <= room => {
                let tokens = candidate.tokens;
                self.choose(candidate, tokens, 1);
            }
            _ => {
                if group != 0 {
                    self.closed_groups.insert(group);
                }
                let tokens = candidate.tokens;
                self.exclude(&candidate, tokens, 1, ExclusionReason::OverBudget);
            }
        }
    }

    /// A raw log: its header, then whole turns, newest first, while they fit; older ones are
    /// left out together as one exclusion.
    fn place_log(
        &mut self,
        input: &PlanInput<'_>,
        mut candidate: Candidate,
        effort: usize,
        room: u64,
    ) {
        let log = input.efforts.at(effort);
        let header = u64::from(log.header_tokens);
        if header > room {
            let tokens = candidate.tokens;
            self.exclude(&candidate, tokens, 1, ExclusionReason::OverBudget);
            return;
        }
        let atoms = turn_atoms(input.compaction, log);
        let mut kept_tokens = header;
        let mut first = log.messages.len();
        let mut kept = 0u32;
        for &(_, position, tokens) in atoms.iter().rev() {
            if kept_tokens + tokens > room {
                break;
            }
            kept_tokens += tokens;
            first = position;
            kept += 1;
        }
        let dropped = atoms.len() as u64 - u64::from(kept);
        if dropped > 0 {
            let cut_turn = atoms[atoms.len() - kept as usize - 1].0 + 1;
            self.excluded.push(ExcludedItem {
                id: format!("{}@before:{cut_turn}", candidate.id),
                section: candidate.section,
                tokens: candidate.tokens - kept_tokens,
                count: dropped,
                reason: ExclusionReason::OverBudget,
            });
        }
        candidate.part = Part::Log { effort, first };
        self.choose(candidate, kept_tokens, kept + 1);
    }
}

/// The plan from a finished fill: included items in context order (rendered when asked),
/// totals, the meter and, when rendered, the request hash and the plan id.
fn assemble(input: &PlanInput<'_>, filling: Filling, render_messages: bool) -> ContextPlan {
    let config = input.config;
    let Filling {
        budget,
        leased_budget,
        leased_used,
        mut chosen,
        mandatory_over_budget,
        excluded,
        ..
    } = filling;
    chosen.sort_by(|a, b| {
        (a.candidate.render, &a.candidate.id).cmp(&(b.candidate.render, &b.candidate.id))
    });
    let mut plan = ContextPlan {
        plan_id: String::new(),
        request_hash: String::new(),
        turn: input.turn,
        mode: config.context_mode,
        budget: Budget {
            context_window: u64::from(config.context_window),
            reserved_output_tokens: u64::from(config.reserved_output_tokens),
            request_budget: budget,
            leased_budget,
            leased_used,
            mandatory_over_budget,
        },
        included: Vec::with_capacity(chosen.len()),
        excluded,
        totals: PlanTotals::default(),
        meter: BudgetMeter {
            mode: config.context_mode,
            auto_items: 0,
            auto_tokens: 0,
            percent_of_budget: 0.0,
            line: String::new(),
        },
        recipe: Vec::new(),
        messages: Vec::new(),
    };
    for chosen in chosen {
        let first_message = plan.messages.len();
        if render_messages {
            render(
                input,
                &chosen.candidate.part,
                &mut plan.messages,
                &mut plan.recipe,
            );
        }
        let item = include(&mut plan, chosen, first_message);
        plan.included.push(item);
    }
    plan.totals.naive_tokens = input.naive_tokens() + plan.totals.pending_tokens;
    plan.totals.excluded_tokens = plan.excluded.iter().map(|e| e.tokens).sum();
    plan.meter.percent_of_budget = if budget == 0 {
        0.0
    } else {
        (plan.totals.context_tokens as f64 * 1000.0 / budget as f64).round() / 10.0
    };
    plan.meter.line = meter_line(&plan.meter);
    if render_messages {
        identify(&mut plan);
    }
    plan
}

/// One placed candidate as an included item, counted in the plan's totals and meter.
fn include(plan: &mut ContextPlan, chosen: Chosen, first_message: usize) -> IncludedItem {
    let Chosen {
        candidate,
        tokens,
        atoms,
    } = chosen;
    let tokens = if candidate.tier == TIER_MANDATORY {
        candidate.tokens
    } else {
        tokens
    };
    let totals = &mut plan.totals;
    totals.context_tokens += tokens;
    match candidate.section {
        Section::System => totals.system_tokens += tokens,
        Section::Summary => totals.summary_tokens += tokens,
        Section::Ambient => totals.ambient_tokens += tokens,
        Section::Expanded => totals.expansion_tokens += tokens,
        Section::Open => totals.open_tokens += tokens,
        Section::Pending => totals.pending_tokens += tokens,
        Section::Attachment => totals.attachment_tokens += tokens,
        Section::Rolling => totals.rolling_tokens += tokens,
        Section::Recalled => totals.recall_tokens += tokens,
        Section::RawLog => {}
    }
    if candidate.ties.pinned {
        totals.pinned_tokens += tokens;
    }
    let automatic = candidate.ties.auto
        || matches!(candidate.ttl, TtlState::Ephemeral) && candidate.tier == TIER_EPHEMERAL;
    if automatic {
        totals.auto_tokens += tokens;
        plan.meter.auto_items += 1;
        plan.meter.auto_tokens += tokens;
    }
    IncludedItem {
        id: candidate.id,
        section: candidate.section,
        tokens,
        reason: candidate.reason,
        priority: candidate.tier,
        ttl: candidate.ttl,
        depends_on: candidate.ties.depends_on,
        activation: candidate.activation,
        atoms,
        first_message,
        message_count: plan.messages.len() - first_message,
    }
}

/// The request hash and the plan id of a rendered plan.
fn identify(plan: &mut ContextPlan) {
    plan.request_hash = request_hash(&plan.messages);
    // The messages are represented by their hash: serialising and hashing them a second
    // time would double the cost of a plan, which grows with the context.
    let messages = std::mem::take(&mut plan.messages);
    let mut identity = serde_json::to_vec(&*plan).expect("plans serialise");
    identity.extend_from_slice(plan.request_hash.as_bytes());
    plan.plan_id = format!("{:016x}", fold_words(FNV_OFFSET, &identity));
    plan.messages = messages;
}
