//! The efforts of a session and where each one is: open (one of them active), concluded with
//! its summary in working memory, expanded, or evicted.

use crate::error::EffortError;
use crate::metrics::DecayStats;
use crate::model::{Effort, EffortStatus, LogRef};
use crate::recall::Source;
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

/// Where an effort is, as `effort_status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffortState {
    /// Open and receiving the new messages.
    Active,
    /// Open, in context, but not receiving messages.
    Open,
    /// Concluded, with its raw log temporarily in context.
    Expanded,
    /// Concluded; its summary is in working memory.
    Concluded,
    /// Concluded; out of working memory, findable with `search_efforts`.
    Evicted,
}

/// Effort records as they were before a turn changed them, and how many there were: what
/// undoing the turn puts back.
#[derive(Debug, Clone, Default)]
pub(crate) struct EffortsBefore {
    len: usize,
    records: BTreeMap<usize, Effort>,
}

/// Every effort of a session, evicted ones included, with the indexes that keep the per-turn
/// path proportional to the working set. Read it through [`crate::Session::efforts`].
#[derive(Debug, Clone, Default)]
pub struct Efforts {
    /// Every effort, in opening order. Private: a record changes only through the operations
    /// of this type, and a change of state only through [`Efforts::record_mut`], which takes
    /// the undo copy and the save mark itself.
    list: Vec<Effort>,
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
    /// The index of the effort `id` names. Models sometimes pass the name instead of the id;
    /// its slug finds the same effort.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], naming the efforts in working memory.
    pub(crate) fn lookup(&self, id: &str) -> Result<usize, EffortError> {
        let id = id.trim();
        if let Some(&index) = self.index.get(id) {
            return Ok(index);
        }
        if let Some(&index) = self.index.get(&crate::text::slugify(id)) {
            return Ok(index);
        }
        let known: Vec<&str> = self
            .open_ids()
            .into_iter()
            .chain(self.summary_ids_in_memory())
            .collect();
        let hint = if known.is_empty() {
            String::new()
        } else {
            format!("; efforts in working memory: {}", known.join(", "))
        };
        Err(EffortError::UnknownEffort {
            id: id.to_string(),
            hint,
        })
    }

    /// Resolves an effort the way every operation does: by id, by the slug of a name, or the
    /// active effort when `id` is `None`.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`] (with the ids in working memory as a hint) or
    /// [`EffortError::NoActiveEffort`].
    pub fn resolve(&self, id: Option<&str>) -> Result<&Effort, EffortError> {
        self.resolve_index(id).map(|index| &self.list[index])
    }

    /// The index of the effort `id` names, or of the active effort when `id` is `None`.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::NoActiveEffort`] without an id.
    pub(crate) fn resolve_index(&self, id: Option<&str>) -> Result<usize, EffortError> {
        match id {
            Some(id) => self.lookup(id),
            None => self.placement.active.ok_or(EffortError::NoActiveEffort),
        }
    }

    /// Where the effort at `index` is.
    pub(crate) fn state_of(&self, index: usize) -> EffortState {
        let effort = &self.list[index];
        match effort.status {
            EffortStatus::Open if self.placement.active == Some(index) => EffortState::Active,
            EffortStatus::Open => EffortState::Open,
            EffortStatus::Concluded if self.is_expanded(index) => EffortState::Expanded,
            EffortStatus::Concluded if effort.evicted => EffortState::Evicted,
            EffortStatus::Concluded => EffortState::Concluded,
        }
    }

    /// The recall index's source of a stored log.
    pub(crate) fn source_of(&self, log: &LogRef) -> Option<Source> {
        match log {
            LogRef::Ambient => Some(Source::Ambient),
            LogRef::Effort(id) => self.index.get(id).map(|&i| Source::Effort(i as u32)),
        }
    }

    /// How an excerpt's source is named where recall lists what it showed.
    pub(crate) fn source_label(&self, source: Source) -> String {
        match source {
            Source::Ambient => "earlier chat".to_string(),
            Source::Effort(index) => self
                .list
                .get(index as usize)
                .map_or_else(|| "?".to_string(), |e| e.id.clone()),
            Source::Attachment(number) => format!("att-{number}"),
        }
    }

    /// Every effort in opening order, evicted ones included.
    pub fn all(&self) -> &[Effort] {
        &self.list
    }

    /// The effort at `index` in opening order. Indexes come from this component (its id index,
    /// its placement), so one out of range is a bug and panics, as slice indexing does.
    #[inline]
    pub(crate) fn at(&self, index: usize) -> &Effort {
        &self.list[index]
    }

    /// How many efforts there are, evicted ones included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The one way to change an effort record: takes its undo copy while a turn is in
    /// progress (`before`, the first change wins) and marks it for the next write batch
    /// (`dirty`), then hands it out.
    pub(crate) fn record_mut(
        &mut self,
        index: usize,
        before: Option<&mut EffortsBefore>,
        dirty: &mut BTreeSet<usize>,
    ) -> &mut Effort {
        if let Some(before) = before {
            if index < before.len && !before.records.contains_key(&index) {
                before
                    .records
                    .insert(index, self.list[index].clone_without_messages());
            }
        }
        dirty.insert(index);
        &mut self.list[index]
    }

    /// What undoing the changes from now on needs: the number of efforts (the copies of
    /// changed records are taken by [`Efforts::record_mut`]).
    pub(crate) fn before_changes(&self) -> EffortsBefore {
        EffortsBefore {
            len: self.list.len(),
            records: BTreeMap::new(),
        }
    }

    /// Adds an effort after the others (a new one, or one read back from a store) and
    /// indexes its id; returns its index.
    pub(crate) fn add(&mut self, effort: Effort) -> usize {
        let index = self.list.len();
        self.index.insert(effort.id.clone(), index);
        self.list.push(effort);
        index
    }

    /// Puts the efforts of an imported document in place (their ids are already indexed).
    pub(crate) fn set_all(&mut self, efforts: Vec<Effort>) {
        self.list = efforts;
    }

    /// The exchange of a turn grew the log of the effort at `index` by `added` raw tokens: the
    /// record, the running total and, for an evicted effort, the evicted totals follow.
    pub(crate) fn grow_log(&mut self, index: usize, added: u64) {
        let effort = &mut self.list[index];
        effort.raw_tokens += added;
        self.placement.raw_total += added;
        if effort.evicted {
            self.placement
                .evicted
                .grow(added, effort.evicted_over_budget);
        }
    }

    /// Attaches a raw log read from the store. Loading is not a change of state, so it needs
    /// no undo copy and no save; `raw_tokens` replaces the record's total when the log came
    /// back short (the plan never counts tokens it cannot show).
    pub(crate) fn attach_log(
        &mut self,
        index: usize,
        messages: Vec<crate::model::Message>,
        raw_tokens: Option<u64>,
    ) {
        let effort = &mut self.list[index];
        effort.messages = messages;
        effort.log = crate::model::LogState::Loaded;
        if let Some(tokens) = raw_tokens {
            effort.raw_tokens = tokens;
        }
    }

    /// After a turn: an expanded effort named by a tool (`touched`) or referenced in turn
    /// `turn` counts as referenced then, which resets its decay.
    pub(crate) fn refer_expansions(&mut self, turn: u64, touched: &BTreeSet<usize>) {
        for expansion in &mut self.placement.expanded {
            let effort = &self.list[expansion.effort];
            if touched.contains(&expansion.effort) || effort.last_referenced_turn == turn {
                expansion.last_referenced_turn = turn;
            }
        }
    }

    /// Adds the concluded effort at `index` to the search index.
    pub(crate) fn index_for_search(&mut self, index: usize) {
        self.search.insert(index, &self.list[index]);
    }

    /// Takes the effort at `index` out of the search index.
    pub(crate) fn unindex_for_search(&mut self, index: usize) {
        self.search.remove(index, &self.list[index]);
    }

    /// Undo: every message stored in turn `turn` or later leaves the logs (they sit at the
    /// ends).
    pub(crate) fn drop_messages_from(&mut self, turn: u64) {
        for effort in &mut self.list {
            while effort.messages.last().is_some_and(|m| m.turn >= turn) {
                effort.messages.pop();
            }
        }
    }

    /// Undo: the efforts opened since `before` was taken go again (no longer to be saved),
    /// and every changed record returns to its copy. A log loaded meanwhile stays: loading
    /// changes no state to undo.
    pub(crate) fn undo(&mut self, before: EffortsBefore, dirty: &mut BTreeSet<usize>) {
        while self.list.len() > before.len {
            let index = self.list.len() - 1;
            let effort = self.list.pop().expect("length checked");
            dirty.remove(&index);
            self.search.remove(index, &effort);
            self.index.remove(&effort.id);
        }
        for (index, record) in before.records {
            if index >= self.list.len() {
                continue;
            }
            self.search.remove(index, &self.list[index]);
            let messages = std::mem::take(&mut self.list[index].messages);
            let log = self.list[index].log;
            self.list[index] = Effort {
                messages,
                log,
                ..record
            };
            if self.list[index].status == EffortStatus::Concluded {
                self.search.insert(index, &self.list[index]);
            }
        }
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
