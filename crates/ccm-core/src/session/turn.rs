//! The turn lifecycle: `begin_turn` opens a turn and its undo record, `end_turn` stores the
//! exchange and runs salience, `abort_turn` puts everything back; the undo record doubles as
//! the rewind delta a branch is forked from.

use super::Session;
use crate::components::compaction::CompactionBefore;
use crate::components::efforts::{EffortsBefore, Placement};
use crate::components::Compaction;
use crate::error::TurnError;
use crate::metrics::{EffortEvent, TurnMetrics};
use crate::model::{Effort, EffortStatus, Message, Role};
use crate::pins::Pins;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The open turn: what `end_turn` needs to route messages and what `abort_turn` needs to undo.
#[derive(Debug, Clone)]
pub(crate) struct TurnState {
    pub(crate) user_text: String,
    pub(crate) user_tokens: u32,
    pub(crate) at_ms: u64,
    /// The effort that was active when the turn began.
    pub(crate) active_before: Option<usize>,
    /// Efforts opened during this turn, in order.
    pub(crate) opened: Vec<usize>,
    /// The effort the turn last made active by switching to it or reopening it.
    pub(crate) switched_to: Option<usize>,
    /// Banners of the operations executed so far in this turn.
    pub(crate) banners: Vec<String>,
    /// Events of this turn, for the metrics point.
    pub(crate) events: Vec<EffortEvent>,
    /// Efforts named by a tool in this turn (expand, search results, …): references.
    pub(crate) touched: BTreeSet<usize>,
    /// What `abort_turn` restores.
    pub(crate) undo: Undo,
    /// Set once `end_turn` has stored the exchange: the user text is no longer pending.
    pub(crate) stored: bool,
    /// Requests recorded by the engine in this turn.
    pub(crate) requests: Vec<crate::telemetry::RequestRecord>,
    /// Tool calls of this turn.
    pub(crate) tools: Vec<crate::telemetry::ToolTrace>,
    /// Compactions applied in this turn.
    pub(crate) compactions: Vec<crate::compaction::CompactionRecord>,
}

impl TurnState {
    /// Records an attachment's mode before its first change in the turn.
    pub(crate) fn undo_attachment_mode(
        &mut self,
        id: &str,
        mode: crate::compaction::AttachmentMode,
    ) {
        self.undo
            .attachment_modes
            .entry(id.to_string())
            .or_insert(mode);
    }

    /// Records the compaction state before its first change in the turn.
    pub(crate) fn undo_compaction(&mut self, compaction: &Compaction) {
        if self.undo.compaction.is_none() {
            self.undo.compaction = Some(compaction.before_change());
        }
    }
}

/// The state before a turn, recorded lazily: the small parts whole (where the efforts are,
/// the pins, a few counters), effort records only when an operation is about to change them,
/// and the parts that grow with the history (the auto-collapse record, attachment modes, the
/// compaction state) as the changes made to them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Undo {
    efforts: EffortsBefore,
    placement: Placement,
    pub(super) auto_collapsed_added: Vec<usize>,
    pub(super) auto_collapsed_removed: Vec<(usize, u64)>,
    pins: Pins,
    ambient_tokens: u64,
    next_seq: u64,
    history_len: usize,
    next_attachment: u64,
    attachment_modes: BTreeMap<String, crate::compaction::AttachmentMode>,
    /// What the session stored before the turn, as its export counts it.
    stored: super::StoredSize,
    /// The recalled excerpts before the turn's first change to them.
    pub(super) recall_focused: Option<Vec<crate::components::recall::Focused>>,
    compaction: Option<CompactionBefore>,
}

/// What rewinding one completed turn needs: the state before it, recorded the same lazy way as
/// an abort's undo record (effort metadata only, never raw logs). Kept for the last
/// [`Session::REWIND_TURNS`] turns, so a branch can be forked at any of them.
#[derive(Debug, Clone)]
pub(crate) struct TurnDelta {
    pub(crate) turn: u64,
    undo: Undo,
}

/// What `end_turn` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnReport {
    /// The turn that ended.
    pub turn: u64,
    /// Where the user and assistant messages were stored: an effort id, or `None` for ambient.
    pub routed_to: Option<String>,
    /// Every banner of the turn in order: those of the operations, then those of salience
    /// (auto-collapses).
    pub banners: Vec<String>,
    /// How many of `banners` come from operations; the rest come from salience. A reply shows
    /// operation banners before the model's text and salience banners after it.
    pub operation_banners: usize,
    /// The metrics point of this turn.
    pub metrics: TurnMetrics,
    /// What the turn's requests held and left out, its tool calls, and the diff against the
    /// previous turn.
    pub telemetry: crate::telemetry::TurnTelemetry,
}

impl Session {
    // ----- turns -------------------------------------------------------------------------

    /// Begins a turn: increments the turn counter, counts the user's text once, and remembers
    /// which effort is active so `end_turn` can route the exchange.
    ///
    /// The message must leave room, within the most a session may store
    /// ([`MAX_SESSION_STORED_CHARS`](crate::compaction::MAX_SESSION_STORED_CHARS)), for the
    /// model's answer, so that every turn that begins can end and every export can be
    /// imported.
    ///
    /// # Errors
    /// [`TurnError::AlreadyInTurn`] when the previous turn was not ended;
    /// [`TurnError::SessionFull`] when the session has no room for the message and an answer
    /// (nothing changes).
    pub fn begin_turn(&mut self, user_text: &str, at_ms: u64) -> Result<u64, TurnError> {
        if self.turn_state.is_some() {
            return Err(TurnError::AlreadyInTurn { turn: self.turn });
        }
        self.check_room_to_store(
            || super::stored_size::describe_text("this message", user_text),
            super::stored_size::message_text_chars(user_text),
            true,
        )?;
        let undo = Undo {
            efforts: self.efforts.before_changes(),
            placement: self.efforts.placement.clone(),
            pins: (*self.pins).clone(),
            ambient_tokens: self.ambient.tokens(),
            next_seq: self.next_seq,
            history_len: self.history.points().len(),
            next_attachment: self.attachments.next_id(),
            stored: self.stored,
            ..Undo::default()
        };
        self.turn += 1;
        self.turn_state = Some(TurnState {
            user_text: user_text.to_string(),
            user_tokens: self.counter.count(user_text),
            at_ms,
            active_before: self.efforts.placement.active,
            opened: Vec::new(),
            switched_to: None,
            banners: Vec::new(),
            events: Vec::new(),
            touched: BTreeSet::new(),
            undo,
            stored: false,
            requests: Vec::new(),
            tools: Vec::new(),
            compactions: Vec::new(),
        });
        self.note_attachment_references(user_text, self.next_seq);
        // The automatic recall is part of the request the compaction check measures.
        self.refresh_auto_recall();
        self.compact(at_ms, true);
        Ok(self.turn)
    }

    /// Cancels the turn in progress and every effort operation made in it, leaving the session
    /// exactly as it was before `begin_turn`. Returns the user's text so it can be sent again.
    ///
    /// # Errors
    /// [`TurnError::NotInTurn`] without a matching `begin_turn`.
    pub fn abort_turn(&mut self) -> Result<String, TurnError> {
        let state = self.turn_state.take().ok_or(TurnError::NotInTurn)?;
        self.restore(self.turn, state.undo);
        self.last_banner = None;
        Ok(state.user_text)
    }

    /// Rewinds one completed turn (for forking at an earlier turn).
    pub(crate) fn rewind_delta(&mut self, delta: TurnDelta) {
        self.restore(delta.turn, delta.undo);
    }

    /// Puts the session back as it was before `turn` began, from that turn's undo record: its
    /// messages (if it was completed) leave the logs, every changed effort record and the
    /// session-wide state return to their earlier values. Used by `abort_turn` and to rewind
    /// completed turns when forking a branch.
    fn restore(&mut self, turn: u64, undo: Undo) {
        // Messages stored by the turn sit at the ends of their logs.
        self.ambient.undo_from(turn, undo.ambient_tokens);
        self.efforts.drop_messages_from(turn);
        // Efforts opened in the turn go again (their messages, if any, just left with it), and
        // changed records return to their copies.
        self.efforts
            .undo(undo.efforts, &mut self.saves.dirty_efforts);
        for index in undo.auto_collapsed_added {
            self.efforts.auto_collapsed_at.remove(&index);
        }
        for (index, collapsed_turn) in undo.auto_collapsed_removed {
            self.efforts.auto_collapsed_at.insert(index, collapsed_turn);
        }
        self.efforts.placement = undo.placement;
        // The index forgets the rewound messages; recalled excerpts come back as they were,
        // and the automatic recall belonged to the turn.
        let recall = &mut *self.recall;
        recall.index.truncate_from_seq(undo.next_seq);
        if let Some(focused) = undo.recall_focused {
            recall.focused = focused;
        }
        recall.auto = None;
        recall.loaded.retain(|&seq, _| seq < undo.next_seq);
        if let Some(vectors) = &mut recall.vectors {
            vectors.by_key.retain(|&(seq, _), _| seq < undo.next_seq);
        }
        if let crate::components::recall::IndexState::Building { next, until } = recall.state {
            recall.state = crate::components::recall::IndexState::Building {
                next: next.min(undo.next_seq),
                until: until.min(undo.next_seq),
            };
        }
        *self.pins = undo.pins;
        self.next_seq = undo.next_seq;
        self.history.undo_from(turn, undo.history_len);
        // Attachments of the rewound turn go with it; modes changed in it come back.
        for id in self
            .attachments
            .undo_from(undo.next_seq, undo.next_attachment)
        {
            self.saves.dirty_attachments.remove(&id);
        }
        self.stored = undo.stored;
        for (id, mode) in undo.attachment_modes {
            if let Some(attachment) = self.attachments.attachment_mut(&id) {
                attachment.set_mode(mode);
            }
        }
        if let Some(before) = undo.compaction {
            self.compaction.undo(before);
        }
        self.saves.telemetry_saved = self
            .saves
            .telemetry_saved
            .min(self.history.telemetry().len());
        self.saves.history_saved = self.saves.history_saved.min(self.history.points().len());
        self.saves
            .unsaved_messages
            .retain(|&(log, position)| match log {
                Some(index) => {
                    index < self.efforts.len() && position < self.efforts.at(index).messages.len()
                }
                None => position < self.ambient.messages().len(),
            });
        self.turn = turn - 1;
    }

    /// A change to an effort record, undoable and saved: see
    /// [`crate::components::Efforts::record_mut`].
    pub(crate) fn effort_mut(&mut self, index: usize) -> &mut Effort {
        let before = self
            .turn_state
            .as_mut()
            .map(|state| &mut state.undo.efforts);
        self.efforts
            .record_mut(index, before, &mut self.saves.dirty_efforts)
    }

    /// The user text of the turn in progress and its token count.
    pub fn pending_user_message(&self) -> Option<(&str, u32)> {
        self.turn_state
            .as_ref()
            .filter(|t| !t.stored)
            .map(|t| (t.user_text.as_str(), t.user_tokens))
    }

    /// Ends the turn: stores the user and assistant messages in the right log, updates
    /// references, collapses expanded efforts that went unreferenced for `decay_threshold`
    /// turns, evicts summaries unreferenced for `summary_eviction_threshold` turns, and records
    /// the turn's metrics.
    ///
    /// Routing: the effort opened during the turn (the first, if several), else the effort
    /// active when the turn began, else the ambient log.
    ///
    /// # Errors
    /// [`TurnError::NotInTurn`] without a matching `begin_turn`; [`TurnError::SessionFull`]
    /// when the answer would take the session past what it may store (see
    /// [`Session::room_for_answer`]; an answer of the model's size always fits): nothing
    /// changes and the turn stays open, to be ended with a shorter answer or aborted.
    pub fn end_turn(&mut self, assistant_text: &str, at_ms: u64) -> Result<TurnReport, TurnError> {
        if self.turn_state.is_none() {
            return Err(TurnError::NotInTurn);
        }
        self.room_for_answer(assistant_text)?;
        // The plan of the turn's request decides which leases count down and which automatic
        // items were shown; it must be taken before the exchange is stored. It is the kept
        // plan when nothing changed since the request was planned. When the host recorded the
        // requests it sent (the engine does), their telemetry is already there and the items
        // alone are needed: a plan built here is not rendered.
        let recorded = self
            .turn_state
            .as_ref()
            .is_some_and(|t| !t.requests.is_empty());
        let request_plan = self.plan(!recorded);
        // The turn state stays in place until the end, so that every change made by routing
        // and salience is recorded in the turn's undo record (which becomes its rewind delta).
        let state = {
            let live = self.turn_state.as_mut().ok_or(TurnError::NotInTurn)?;
            TurnState {
                user_text: live.user_text.clone(),
                user_tokens: live.user_tokens,
                at_ms: live.at_ms,
                active_before: live.active_before,
                opened: live.opened.clone(),
                switched_to: live.switched_to,
                banners: std::mem::take(&mut live.banners),
                events: std::mem::take(&mut live.events),
                touched: live.touched.clone(),
                undo: Undo::default(),
                stored: true,
                requests: std::mem::take(&mut live.requests),
                tools: std::mem::take(&mut live.tools),
                compactions: Vec::new(),
            }
        };
        let target = route(
            state.opened.first().copied(),
            state.switched_to,
            state.active_before,
        );
        let assistant_tokens = self.counter.count(assistant_text);
        let user = self.make_message(
            Role::User,
            state.user_text.clone(),
            state.user_tokens,
            state.at_ms,
        );
        let assistant = self.make_message(
            Role::Assistant,
            assistant_text.to_string(),
            assistant_tokens,
            at_ms,
        );
        let user_seq = user.seq;
        self.count_stored(
            super::stored_size::message_chars(&user)
                + super::stored_size::message_chars(&assistant),
        );
        match target {
            Some(index) => {
                let added = u64::from(user.tokens) + u64::from(assistant.tokens);
                let effort = self.effort_mut(index);
                effort.messages.push(user);
                effort.messages.push(assistant);
                let end = effort.messages.len();
                self.saves.unsaved_messages.push((Some(index), end - 2));
                self.saves.unsaved_messages.push((Some(index), end - 1));
                self.efforts.grow_log(index, added);
            }
            None => {
                for position in self.ambient.push_exchange(user, assistant) {
                    self.saves.unsaved_messages.push((None, position));
                }
            }
        }

        if let Some(live) = self.turn_state.as_mut() {
            live.stored = true;
        }
        if let Some(index) = target {
            if self.efforts.at(index).status == EffortStatus::Concluded {
                self.refresh_log_terms(index);
            }
        }
        let log = match target {
            Some(index) => crate::model::LogRef::Effort(self.efforts.at(index).id.clone()),
            None => crate::model::LogRef::Ambient,
        };
        self.file_pending_attachments(log.clone());
        self.index_exchange(&log, user_seq);
        self.note_attachment_references(assistant_text, self.next_seq.saturating_sub(1));
        let before_salience = self.working_tokens();
        let mut banners = state.banners;
        let operation_banners = banners.len();
        let mut events = state.events;
        let referenced = self.references_of_turn(&state.user_text, assistant_text);
        self.update_salience(&referenced, &state.touched, &mut banners, &mut events);
        self.decay_recalled(
            [&state.user_text, assistant_text],
            &referenced.all,
            &state.touched,
            &mut banners,
            &mut events,
        );
        self.refresh_auto_recall();
        self.recall.prune_loaded();
        self.update_pins_and_activation(&request_plan, &referenced.all);
        self.prune_compacted();
        self.compact_if_needed(at_ms);
        let compactions = self
            .turn_state
            .as_mut()
            .map(|live| std::mem::take(&mut live.compactions))
            .unwrap_or_default();
        if let Some(live) = self.turn_state.as_mut() {
            // Compaction banners of the turn were collected in the live state.
            banners.append(&mut live.banners);
        }
        // The working tokens after the turn: the compaction check measured them unless it
        // moved something.
        let working_tokens = self.working_tokens();
        let mut metrics = self.metrics_point(before_salience, working_tokens, events);
        metrics.compactions = compactions;
        self.count_stored(super::stored_size::turn_record_chars(&metrics));
        self.history.push_point(metrics.clone());
        let telemetry = self.finish_telemetry(&request_plan, state.requests, state.tools);
        if let Some(finished) = self.turn_state.take() {
            // Keeps the completed turn's rewind delta, dropping the oldest beyond the window.
            if self.rewind.len() == Session::REWIND_TURNS {
                self.rewind.pop_front();
            }
            self.rewind.push_back(TurnDelta {
                turn: self.turn,
                undo: finished.undo,
            });
        }
        Ok(TurnReport {
            turn: self.turn,
            routed_to: target.map(|i| self.efforts.at(i).id.clone()),
            banners,
            operation_banners,
            metrics,
            telemetry,
        })
    }

    fn make_message(&mut self, role: Role, content: String, tokens: u32, at_ms: u64) -> Message {
        let seq = self.next_seq;
        self.next_seq += 1;
        Message {
            seq,
            turn: self.turn,
            role,
            content,
            tokens,
            at_ms,
        }
    }
}

/// Where a turn's exchange is stored: the first effort the turn opened (the exchange that opens
/// an effort states its problem, so it belongs to it), else the effort it switched to or
/// reopened last ("back to the auth bug" is about the auth bug, and its words belong in that
/// effort's log and summary), else the effort that was active when the turn began, else the
/// ambient log (`None`).
pub(super) fn route(
    first_opened: Option<usize>,
    switched_to: Option<usize>,
    active_before: Option<usize>,
) -> Option<usize> {
    first_opened.or(switched_to).or(active_before)
}
