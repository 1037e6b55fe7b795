//! Planning one compaction: given the working set and a level, which items move and why.
//!
//! The function is independent of `Session`: the context planner describes its working set as
//! a list of [`WorkingItem`]s, calls [`plan_compaction`], has a rolling summary written when
//! the plan asks for one, and turns the plan into a [`CompactionEvent`] with
//! [`CompactionPlan::finish`]. See the module documentation of `compaction` for the whole
//! contract.
//!
//! What each level does (levels are cumulative):
//!
//! | level | moves |
//! |---|---|
//! | 1, soft | full attachments unreferenced for `stale_attachment_messages` → summary (`compressed_attachment`); expanded efforts idle for `idle_expansion_turns` → summary (`collapsed_idle_expansion`) |
//! | 2, hard | as 1, and the older ambient items (all but the last `keep_last_messages_hard` messages) ranked by relevance to the user's message: the best `keep_fraction_hard` stay, the rest leave (`compacted_level_2`) |
//! | 3, emergency | every attachment and expansion the current message does not reference → summary; all ambient items but the last `keep_last_messages_emergency` messages, with the previous rolling summary, → one new rolling summary (`compacted_level_3`); then, only while the projection is still at or above the emergency threshold: expansions and attachments the current message references, and finally the older turns of open efforts (the last `keep_last_messages_emergency` messages of each stay) |
//!
//! Invariants: pinned and fixed items never move; an open effort's turns move only in the
//! emergency level's last resort, after every ambient item that could move has; an item
//! moves only when its replacement is smaller; a rolling summary is planned only when what it
//! replaces is larger than its token budget; [`CompactionPlan::finish`] refuses a summary that
//! would not shrink what it replaces, and reports a compaction that frees nothing as not
//! applied.

use super::attachments::{Attachment, AttachmentMode};
use super::error::CompactionError;
use super::level::Level;
use super::policy::{threshold_tokens, CompactionConfig, CompactionDecision};
use super::relevance::{bm25_scores, select_keep};
use super::report::{
    check_applicable, CompactionEvent, MoveReason, MovedItem, MovedKind, NotApplied,
    RollingSummaryInfo,
};
use super::rolling::{merge_ranges, rolling_budget_tokens, RollingInput, RollingSummary, SeqRange};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What a working item is, with what compaction needs to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind<'a> {
    /// Never moved by compaction: the system prompt, effort summaries, pins' own entries, the
    /// user message being answered. Listed so the token totals are right.
    Fixed,
    /// Ambient chat: an exchange or a message (the planner's unit).
    Ambient {
        /// The stored messages it holds.
        seqs: SeqRange,
        /// How many stored messages it holds.
        messages: u32,
        /// Its text, as the model reads it (for relevance and the rolling summary).
        text: &'a str,
    },
    /// A turn of an open effort's raw log: protected, moved only as the emergency level's last
    /// resort.
    EffortTurn {
        /// The effort's id.
        effort: &'a str,
        /// The stored messages it holds.
        seqs: SeqRange,
        /// How many stored messages it holds.
        messages: u32,
        /// Its text.
        text: &'a str,
    },
    /// A concluded effort's raw log loaded by expansion; collapsing it brings its summary back.
    Expanded {
        /// Tokens of the summary that replaces it when it collapses.
        summary_tokens: u64,
        /// Turns since it was last referenced (0: the current message references it).
        turns_since_reference: u64,
    },
    /// An attachment.
    Attachment {
        /// Its current mode.
        mode: AttachmentMode,
        /// Tokens in compressed mode.
        compressed_tokens: u64,
        /// Messages since it was last referenced (0: the current message references it).
        messages_since_reference: u64,
    },
    /// The rolling summary of an earlier level-3 compaction.
    RollingSummary {
        /// The stored messages it stands for.
        covers: &'a [SeqRange],
        /// Its text (folded into the next rolling summary).
        text: &'a str,
    },
}

/// One item of the working context, as the context planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkingItem<'a> {
    /// The planner's id for the item (unique in the list).
    pub id: &'a str,
    /// Tokens it adds to the context now (stored counts).
    pub tokens: u64,
    /// Kept by a pin: never moved.
    pub pinned: bool,
    /// What it is.
    pub kind: ItemKind<'a>,
}

impl<'a> WorkingItem<'a> {
    /// Every constructor's item: not pinned until [`pinned`](Self::pinned) says so.
    fn unpinned(id: &'a str, tokens: u64, kind: ItemKind<'a>) -> WorkingItem<'a> {
        WorkingItem {
            id,
            tokens,
            pinned: false,
            kind,
        }
    }

    /// An item compaction never moves.
    pub fn fixed(id: &'a str, tokens: u64) -> WorkingItem<'a> {
        WorkingItem::unpinned(id, tokens, ItemKind::Fixed)
    }

    /// An ambient exchange or message.
    pub fn ambient(
        id: &'a str,
        tokens: u64,
        seqs: SeqRange,
        messages: u32,
        text: &'a str,
    ) -> WorkingItem<'a> {
        WorkingItem::history(id, tokens, None, seqs, messages, text)
    }

    /// A turn of the open effort `effort`.
    pub fn effort_turn(
        id: &'a str,
        tokens: u64,
        effort: &'a str,
        seqs: SeqRange,
        messages: u32,
        text: &'a str,
    ) -> WorkingItem<'a> {
        WorkingItem::history(id, tokens, Some(effort), seqs, messages, text)
    }

    /// Ambient chat and an open effort's turn are one thing to compaction, a piece of history
    /// with its stored messages and text; only the effort it belongs to tells them apart.
    fn history(
        id: &'a str,
        tokens: u64,
        effort: Option<&'a str>,
        seqs: SeqRange,
        messages: u32,
        text: &'a str,
    ) -> WorkingItem<'a> {
        let kind = match effort {
            None => ItemKind::Ambient {
                seqs,
                messages,
                text,
            },
            Some(effort) => ItemKind::EffortTurn {
                effort,
                seqs,
                messages,
                text,
            },
        };
        WorkingItem::unpinned(id, tokens, kind)
    }

    /// An expanded effort's raw log.
    pub fn expanded(
        id: &'a str,
        tokens: u64,
        summary_tokens: u64,
        turns_since_reference: u64,
    ) -> WorkingItem<'a> {
        WorkingItem::unpinned(
            id,
            tokens,
            ItemKind::Expanded {
                summary_tokens,
                turns_since_reference,
            },
        )
    }

    /// An attachment seen from message `current` (the caller's message counter).
    pub fn attachment(attachment: &'a Attachment, current: u64) -> WorkingItem<'a> {
        WorkingItem::unpinned(
            &attachment.id,
            u64::from(attachment.tokens()),
            ItemKind::Attachment {
                mode: attachment.mode,
                compressed_tokens: u64::from(attachment.compressed_tokens),
                messages_since_reference: attachment.messages_since_reference(current),
            },
        )
    }

    /// The previous rolling summary.
    pub fn rolling_summary(id: &'a str, summary: &'a RollingSummary) -> WorkingItem<'a> {
        WorkingItem::unpinned(
            id,
            u64::from(summary.tokens),
            ItemKind::RollingSummary {
                covers: &summary.covers,
                text: &summary.text,
            },
        )
    }

    /// The same item, kept by a pin.
    pub fn pinned(mut self) -> WorkingItem<'a> {
        self.pinned = true;
        self
    }

    fn movable(&self) -> bool {
        !self.pinned && !matches!(self.kind, ItemKind::Fixed)
    }
}

/// How level 2 ranks ambient items.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Relevance<'a> {
    /// The built-in BM25 model over the ambient texts and the user's message.
    Lexical,
    /// Scores computed elsewhere (embeddings), by item id; every ambient candidate needs one.
    Scores(&'a BTreeMap<String, f64>),
}

/// Everything [`plan_compaction`] needs.
#[derive(Debug, Clone, Copy)]
pub struct CompactionInput<'a> {
    /// The level to apply (from [`CompactionDecision::level_to_apply`]).
    pub level: Level,
    /// The whole working context, fixed items included, in any order.
    pub items: &'a [WorkingItem<'a>],
    /// The user message being answered: what relevance is measured against.
    pub query: &'a str,
    /// How to rank ambient items at level 2.
    pub relevance: Relevance<'a>,
    /// The settings.
    pub config: &'a CompactionConfig,
    /// The window usage is measured against.
    pub window_tokens: u64,
}

/// The part of a plan that a rolling summary replaces, with the material to write it from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollingPlan {
    /// Ids of the items it replaces (history and the previous summary).
    pub replaces: Vec<String>,
    /// Their tokens.
    pub replaced_tokens: u64,
    /// The stored messages the new summary will stand for.
    pub covers: Vec<SeqRange>,
    /// The token estimate used for the projection: the summary must stay below what it
    /// replaces, and should stay near this.
    pub budget_tokens: u64,
    /// The word limit to ask for.
    pub max_words: u32,
    previous_text: Option<String>,
    previous_covers: Vec<SeqRange>,
    history: Vec<(SeqRange, String)>,
}

impl RollingPlan {
    /// The material for the engine's rolling summary request and
    /// [`RollingSummary::extractive`]: the previous summary and the history, oldest first.
    pub fn input(&self) -> RollingInput<'_> {
        RollingInput::borrowing(
            self.previous_text.as_deref(),
            &self.previous_covers,
            &self.history,
        )
    }
}

/// What a compaction will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionPlan {
    /// The level planned.
    pub level: Level,
    /// Working tokens before.
    pub tokens_before: u64,
    /// Every move, in the order chosen; items the rolling summary replaces included.
    pub moves: Vec<MovedItem>,
    /// The rolling summary to write, at level 3.
    pub rolling: Option<RollingPlan>,
    /// Working tokens after, with the rolling summary at its budget.
    pub projected_tokens_after: u64,
    /// Whether the projection still exceeds the window: pinned and fixed items alone are too
    /// large, and the host must refuse or trim the request itself.
    pub over_window: bool,
}

/// The result of finishing a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// Apply the moves; record the event.
    Applied(CompactionEvent),
    /// Change nothing.
    NotApplied {
        /// Why.
        reason: NotApplied,
        /// The level that was planned.
        level: Level,
        /// Working tokens before.
        tokens_before: u64,
        /// Working tokens the moves would have left.
        tokens_after: u64,
    },
}

impl CompactionPlan {
    /// Tokens freed by the moves other than the rolling summary's.
    fn direct_freed(&self) -> u64 {
        let rolling: BTreeSet<&str> = self
            .rolling
            .iter()
            .flat_map(|r| r.replaces.iter().map(String::as_str))
            .collect();
        self.moves
            .iter()
            .filter(|m| !rolling.contains(m.id.as_str()))
            .map(|m| m.tokens.saturating_sub(m.replacement_tokens))
            .sum()
    }

    /// Working tokens after the moves, with a rolling summary of `summary_tokens` tokens (0
    /// when the plan has none).
    pub fn tokens_after(&self, summary_tokens: u64) -> u64 {
        let replaced = self.rolling.as_ref().map_or(0, |r| r.replaced_tokens);
        let summary = if self.rolling.is_some() {
            summary_tokens
        } else {
            0
        };
        // Saturating: a plan read back from storage might not add up, and a wrong total must
        // not become a panic.
        self.tokens_before
            .saturating_sub(self.direct_freed())
            .saturating_sub(replaced)
            .saturating_add(summary)
    }

    /// The same plan without its rolling summary (for when no summary short enough could be
    /// written): the other moves stand.
    pub fn without_rolling(&self) -> CompactionPlan {
        let mut plan = self.clone();
        if let Some(rolling) = plan.rolling.take() {
            let replaced: BTreeSet<&str> = rolling.replaces.iter().map(String::as_str).collect();
            plan.moves.retain(|m| !replaced.contains(m.id.as_str()));
            plan.projected_tokens_after = plan.tokens_after(0);
        }
        plan
    }

    /// Turns the plan into its outcome: the event to apply and record, or why nothing is to
    /// be applied. `summary` is the rolling summary written for [`CompactionPlan::rolling`]
    /// (`None` when the plan has none).
    ///
    /// # Errors
    /// [`CompactionError::SummaryMismatch`] when a summary is missing, unexpected, or covers
    /// other messages than planned; [`CompactionError::SummaryTooLarge`] when the summary is
    /// not smaller than what it replaces (use the extractive one, or
    /// [`without_rolling`](Self::without_rolling)).
    pub fn finish(
        &self,
        decision: &CompactionDecision,
        summary: Option<&RollingSummary>,
    ) -> Result<CompactionOutcome, CompactionError> {
        let rolling_summary = match (&self.rolling, summary) {
            (None, None) => None,
            (Some(rolling), None) => {
                return Err(CompactionError::SummaryMismatch(format!(
                    "the plan replaces {} items with a rolling summary, but no summary was given",
                    rolling.replaces.len()
                )))
            }
            (None, Some(_)) => {
                return Err(CompactionError::SummaryMismatch(
                    "a rolling summary was given, but the plan replaces no history".to_string(),
                ))
            }
            (Some(rolling), Some(summary)) => {
                if summary.covers != rolling.covers {
                    return Err(CompactionError::SummaryMismatch(format!(
                        "the summary covers {:?} but the plan replaces {:?}",
                        summary.covers, rolling.covers
                    )));
                }
                if u64::from(summary.tokens) >= rolling.replaced_tokens {
                    return Err(CompactionError::SummaryTooLarge {
                        summary_tokens: u64::from(summary.tokens),
                        replaced_tokens: rolling.replaced_tokens,
                    });
                }
                Some(RollingSummaryInfo {
                    covers: summary.covers.clone(),
                    source: summary.source,
                    tokens: u64::from(summary.tokens),
                })
            }
        };
        let tokens_after = self.tokens_after(rolling_summary.as_ref().map_or(0, |s| s.tokens));
        if let Err(reason) = check_applicable(self.tokens_before, tokens_after, self.moves.len()) {
            return Ok(CompactionOutcome::NotApplied {
                reason,
                level: self.level,
                tokens_before: self.tokens_before,
                tokens_after,
            });
        }
        Ok(CompactionOutcome::Applied(CompactionEvent {
            level: self.level,
            trigger_usage: decision.usage,
            tokens_before: self.tokens_before,
            tokens_after,
            tokens_freed: self.tokens_before - tokens_after,
            moved: self.moves.clone(),
            rolling_summary,
            at_message: decision.at_message,
            at_ms: decision.at_ms,
        }))
    }
}

/// Plans the compaction of `input.level` over `input.items`. Deterministic: the same input
/// gives the same plan, whatever the order of equal-scoring items.
///
/// # Errors
/// [`CompactionError::DuplicateId`] for two items with one id;
/// [`CompactionError::MultipleRollingSummaries`] for more than one movable rolling summary;
/// [`CompactionError::MissingScore`] when precomputed scores leave out an ambient candidate.
pub fn plan_compaction(input: &CompactionInput<'_>) -> Result<CompactionPlan, CompactionError> {
    let items = input.items;
    let mut ids = BTreeSet::new();
    for item in items {
        if !ids.insert(item.id) {
            return Err(CompactionError::DuplicateId(item.id.to_string()));
        }
    }
    let summaries: Vec<&str> = items
        .iter()
        .filter(|i| i.movable() && matches!(i.kind, ItemKind::RollingSummary { .. }))
        .map(|i| i.id)
        .collect();
    if summaries.len() > 1 {
        return Err(CompactionError::MultipleRollingSummaries(
            summaries.iter().map(|s| s.to_string()).collect(),
        ));
    }
    let mut planner = Planner {
        input,
        moved: vec![None; items.len()],
        order: Vec::new(),
        tokens_before: items.iter().map(|i| i.tokens).sum(),
        freed: 0,
        rolling: false,
    };
    if input.level >= Level::Soft {
        planner.soft();
    }
    match input.level {
        Level::Hard => planner.hard()?,
        Level::Emergency => planner.emergency(),
        Level::None | Level::Soft => {}
    }
    Ok(planner.into_plan())
}

struct Planner<'p, 'a> {
    input: &'p CompactionInput<'a>,
    /// The move chosen for each item, by index.
    moved: Vec<Option<MovedItem>>,
    /// Indices of moved items in the order they were chosen.
    order: Vec<usize>,
    tokens_before: u64,
    /// Running totals of the moves so far, so each projection is O(1) however many last-resort
    /// steps run: tokens freed, and whether a rolling summary is needed.
    freed: u64,
    rolling: bool,
}

impl Planner<'_, '_> {
    fn config(&self) -> &CompactionConfig {
        self.input.config
    }

    fn items(&self) -> &[WorkingItem<'_>] {
        self.input.items
    }

    fn move_item(&mut self, index: usize, replacement_tokens: u64, reason: MoveReason) {
        let item = &self.input.items[index];
        let (kind, messages) = match item.kind {
            ItemKind::Ambient { messages, .. } => (MovedKind::Ambient, messages),
            ItemKind::EffortTurn { messages, .. } => (MovedKind::EffortTurn, messages),
            ItemKind::Attachment { .. } => (MovedKind::Attachment, 0),
            ItemKind::Expanded { .. } => (MovedKind::Expanded, 0),
            ItemKind::RollingSummary { .. } => (MovedKind::RollingSummary, 0),
            ItemKind::Fixed => unreachable!("fixed items are never movable"),
        };
        debug_assert!(self.moved[index].is_none(), "an item moves once");
        let moved = MovedItem {
            id: item.id.to_string(),
            kind,
            tokens: item.tokens,
            replacement_tokens,
            messages,
            reason,
        };
        self.freed += moved.tokens.saturating_sub(moved.replacement_tokens);
        self.rolling |= joins_rolling_summary(&moved);
        self.moved[index] = Some(moved);
        self.order.push(index);
    }

    fn is_moved(&self, index: usize) -> bool {
        self.moved[index].is_some()
    }

    /// The smaller form an attachment or expansion would take, if it is movable, not moved
    /// yet, and the smaller form is really smaller; with its idleness.
    fn shrinkable(&self, index: usize) -> Option<(u64, u64)> {
        let item = &self.items()[index];
        if !item.movable() || self.is_moved(index) {
            return None;
        }
        let (replacement, idle) = match item.kind {
            ItemKind::Attachment {
                mode: AttachmentMode::Full,
                compressed_tokens,
                messages_since_reference,
            } => (compressed_tokens, messages_since_reference),
            ItemKind::Expanded {
                summary_tokens,
                turns_since_reference,
            } => (summary_tokens, turns_since_reference),
            _ => return None,
        };
        (replacement < item.tokens).then_some((replacement, idle))
    }

    /// Level 1: stale attachments and idle expansions.
    fn soft(&mut self) {
        let stale = u64::from(self.config().stale_attachment_messages);
        let idle_turns = u64::from(self.config().idle_expansion_turns);
        for index in 0..self.items().len() {
            let Some((replacement, idle)) = self.shrinkable(index) else {
                continue;
            };
            match self.items()[index].kind {
                ItemKind::Attachment { .. } if idle >= stale => {
                    self.move_item(index, replacement, MoveReason::CompressedAttachment)
                }
                ItemKind::Expanded { .. } if idle >= idle_turns => {
                    self.move_item(index, replacement, MoveReason::CollapsedIdleExpansion)
                }
                _ => {}
            }
        }
    }

    /// Movable ambient items, oldest first (by first sequence number, then position).
    fn ambient_by_age(&self) -> Vec<usize> {
        let mut ambient: Vec<usize> = (0..self.items().len())
            .filter(|&i| {
                let item = &self.items()[i];
                item.movable() && matches!(item.kind, ItemKind::Ambient { .. })
            })
            .collect();
        ambient.sort_by_key(|&i| (first_seq(&self.items()[i]), i));
        ambient
    }

    /// How many of the newest items (indices oldest first) hold at least `messages` messages.
    fn newest_covering(&self, oldest_first: &[usize], messages: u32) -> usize {
        let mut count = 0;
        let mut covered: u64 = 0;
        for &i in oldest_first.iter().rev() {
            if covered >= u64::from(messages) {
                break;
            }
            covered += u64::from(message_count(&self.items()[i]));
            count += 1;
        }
        count
    }

    /// Level 2: the less relevant older ambient items leave.
    fn hard(&mut self) -> Result<(), CompactionError> {
        let ambient = self.ambient_by_age();
        if ambient.is_empty() {
            return Ok(());
        }
        let keep_last = self.newest_covering(&ambient, self.config().keep_last_messages_hard);
        let scores: Vec<f64> = match self.input.relevance {
            Relevance::Lexical => {
                let texts: Vec<&str> = ambient.iter().map(|&i| text_of(&self.items()[i])).collect();
                bm25_scores(self.input.query, &texts)
            }
            Relevance::Scores(scores) => ambient
                .iter()
                .map(|&i| {
                    let id = self.items()[i].id;
                    scores
                        .get(id)
                        .copied()
                        .ok_or_else(|| CompactionError::MissingScore(id.to_string()))
                })
                .collect::<Result<_, _>>()?,
        };
        let recency: Vec<u64> = ambient
            .iter()
            .map(|&i| first_seq(&self.items()[i]))
            .collect();
        let selection = select_keep(
            &recency,
            &scores,
            self.config().keep_fraction_hard_per_mille,
            keep_last,
        )?;
        for position in selection.leave {
            self.move_item(ambient[position], 0, MoveReason::CompactedLevel2);
        }
        Ok(())
    }

    /// Tokens after the moves so far, with a rolling summary at its budget if one is planned.
    fn projected(&self) -> u64 {
        let summary = if self.rolling {
            rolling_budget_tokens(self.config().rolling_summary_max_words)
        } else {
            0
        };
        (self.tokens_before - self.freed).saturating_add(summary)
    }

    /// Level 3: everything not referenced now is compressed or collapsed, the older history
    /// goes into a rolling summary, and only if that is not enough, the last resorts.
    fn emergency(&mut self) {
        for index in 0..self.items().len() {
            if let Some((replacement, idle)) = self.shrinkable(index) {
                if idle > 0 {
                    self.move_item(index, replacement, MoveReason::CompactedLevel3);
                }
            }
        }
        let ambient = self.ambient_by_age();
        let keep_last = self.newest_covering(&ambient, self.config().keep_last_messages_emergency);
        let older = &ambient[..ambient.len() - keep_last];
        for &index in older {
            self.move_item(index, 0, MoveReason::CompactedLevel3);
        }
        if !older.is_empty() {
            self.fold_previous_summary();
        }

        let threshold =
            threshold_tokens(self.input.window_tokens, self.config().emergency_per_mille);
        if self.projected() < threshold {
            return;
        }
        // Last resort 1 and 2: what the current message references, largest saving first
        // (expansions before attachments: an effort's summary was written to stand in for it).
        for want_expanded in [true, false] {
            let mut referenced: Vec<(u64, usize, u64)> = (0..self.items().len())
                .filter_map(|i| {
                    let is_expanded = matches!(self.items()[i].kind, ItemKind::Expanded { .. });
                    if is_expanded != want_expanded {
                        return None;
                    }
                    self.shrinkable(i).map(|(replacement, _)| {
                        (self.items()[i].tokens - replacement, i, replacement)
                    })
                })
                .collect();
            referenced.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, index, replacement) in referenced {
                if self.projected() < threshold {
                    return;
                }
                self.move_item(index, replacement, MoveReason::CompactedLevel3);
            }
        }
        // Last resort 3: older turns of open efforts, oldest first; each effort keeps its last
        // `keep_last_messages_emergency` messages.
        let mut by_effort: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, item) in self.items().iter().enumerate() {
            if let ItemKind::EffortTurn { effort, .. } = item.kind {
                if item.movable() {
                    by_effort.entry(effort).or_default().push(i);
                }
            }
        }
        let mut candidates: Vec<usize> = Vec::new();
        for turns in by_effort.values_mut() {
            turns.sort_by_key(|&i| (first_seq(&self.items()[i]), i));
            let keep = self.newest_covering(turns, self.config().keep_last_messages_emergency);
            candidates.extend_from_slice(&turns[..turns.len() - keep]);
        }
        candidates.sort_by_key(|&i| (first_seq(&self.items()[i]), i));
        for index in candidates {
            if self.projected() < threshold {
                break;
            }
            self.move_item(index, 0, MoveReason::CompactedLevel3);
            self.fold_previous_summary();
        }
    }

    /// Moves the previous rolling summary into the new one (once).
    fn fold_previous_summary(&mut self) {
        let previous = (0..self.items().len()).find(|&i| {
            let item = &self.items()[i];
            item.movable()
                && !self.is_moved(i)
                && matches!(item.kind, ItemKind::RollingSummary { .. })
        });
        if let Some(index) = previous {
            self.move_item(index, 0, MoveReason::CompactedLevel3);
        }
    }

    fn into_plan(self) -> CompactionPlan {
        let config = self.input.config;
        let items = self.input.items;
        // Items the rolling summary replaces, in the order they were chosen.
        let replaced: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&i| self.moved[i].as_ref().is_some_and(joins_rolling_summary))
            .collect();
        let budget = rolling_budget_tokens(config.rolling_summary_max_words);
        let replaced_tokens: u64 = replaced.iter().map(|&i| items[i].tokens).sum();
        let mut moved = self.moved;
        let mut order = self.order;
        let rolling = if replaced.is_empty() {
            None
        } else if replaced_tokens <= budget {
            // A summary would not be smaller than what it replaces: leave that history alone.
            for &i in &replaced {
                moved[i] = None;
            }
            order.retain(|i| moved[*i].is_some());
            None
        } else {
            let mut previous_text = None;
            let mut previous_covers = Vec::new();
            let mut history: Vec<(SeqRange, String)> = Vec::new();
            let mut covers = Vec::new();
            for &i in &replaced {
                match items[i].kind {
                    ItemKind::Ambient { seqs, text, .. }
                    | ItemKind::EffortTurn { seqs, text, .. } => {
                        history.push((seqs, text.to_string()));
                        covers.push(seqs);
                    }
                    ItemKind::RollingSummary { covers: c, text } => {
                        previous_text = Some(text.to_string());
                        previous_covers = c.to_vec();
                        covers.extend_from_slice(c);
                    }
                    _ => {}
                }
            }
            history.sort_by_key(|(seqs, _)| *seqs);
            Some(RollingPlan {
                replaces: replaced.iter().map(|&i| items[i].id.to_string()).collect(),
                replaced_tokens,
                covers: merge_ranges(covers),
                budget_tokens: budget,
                max_words: config.rolling_summary_max_words,
                previous_text,
                previous_covers,
                history,
            })
        };
        let moves: Vec<MovedItem> = order.iter().filter_map(|&i| moved[i].clone()).collect();
        let mut plan = CompactionPlan {
            level: self.input.level,
            tokens_before: self.tokens_before,
            moves,
            rolling,
            projected_tokens_after: 0,
            over_window: false,
        };
        let summary = plan.rolling.as_ref().map_or(0, |r| r.budget_tokens);
        plan.projected_tokens_after = plan.tokens_after(summary);
        plan.over_window = plan.projected_tokens_after > self.input.window_tokens;
        plan
    }
}

/// Whether a move hands the item to the rolling summary (history and the previous summary
/// at level 3), rather than to a smaller form of its own.
fn joins_rolling_summary(move_: &MovedItem) -> bool {
    move_.reason == MoveReason::CompactedLevel3
        && matches!(
            move_.kind,
            MovedKind::Ambient | MovedKind::EffortTurn | MovedKind::RollingSummary
        )
}

fn first_seq(item: &WorkingItem<'_>) -> u64 {
    match item.kind {
        ItemKind::Ambient { seqs, .. } | ItemKind::EffortTurn { seqs, .. } => seqs.first,
        _ => 0,
    }
}

fn message_count(item: &WorkingItem<'_>) -> u32 {
    match item.kind {
        ItemKind::Ambient { messages, .. } | ItemKind::EffortTurn { messages, .. } => messages,
        _ => 0,
    }
}

fn text_of<'a>(item: &WorkingItem<'a>) -> &'a str {
    match item.kind {
        ItemKind::Ambient { text, .. } | ItemKind::EffortTurn { text, .. } => text,
        ItemKind::RollingSummary { text, .. } => text,
        _ => "",
    }
}
