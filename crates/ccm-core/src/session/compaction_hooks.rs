//! Graduated compaction inside the session: attachments, the compaction check after every
//! message, and applying a compaction's moves to the working set.
//!
//! The decisions come from [`crate::compaction`] (pure and independent of the session); this
//! module describes the working set to it and applies what it decides. Every move changes only
//! the working set: attachments keep their full text, compacted messages stay in their logs,
//! and a rolling summary records which stored messages it stands for.

use super::Session;
use crate::compaction::{
    plan_compaction, Attachment, AttachmentError, AttachmentKind, AttachmentMode, CompactionEvent,
    CompactionInput, CompactionOutcome, CompactionRecord, MovedKind, NewAttachment, Relevance,
    RollingSummary, SeqRange, SessionAttachment, Usage, WorkingItem,
};
use crate::components::compaction::RollingUpgrade;
use crate::model::LogRef;
use crate::plan::{IncludedItem, InclusionReason, Section};
use crate::text::PreparedText;
use std::collections::BTreeMap;

/// The text of an exchange as a compaction reads it (relevance, rolling summary).
fn exchange_text(messages: &[&crate::model::Message]) -> String {
    messages
        .iter()
        .map(|m| format!("{}: {}", m.role.as_str().to_uppercase(), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Owned descriptions of the working set, from which the borrowed [`WorkingItem`]s are made.
struct OwnedItem {
    id: String,
    tokens: u64,
    pinned: bool,
    kind: OwnedKind,
}

enum OwnedKind {
    Fixed,
    Ambient {
        seqs: SeqRange,
        messages: u32,
        text: String,
    },
    EffortTurn {
        effort: String,
        seqs: SeqRange,
        messages: u32,
        text: String,
    },
    Expanded {
        summary_tokens: u64,
        idle: u64,
    },
    Attachment(String),
    Rolling,
}

impl Session {
    /// Attaches a file or pasted document to the user message of the turn in progress. Its
    /// text is stored whole and counted once; `summary` is the caller's (or an extractive one
    /// is made) and is what the context shows when the attachment is compressed.
    ///
    /// # Errors
    /// [`AttachmentError::NoTurn`] outside a turn; [`AttachmentError::SessionFull`] when the
    /// session's attachments would pass
    /// [`MAX_SESSION_ATTACHMENT_CHARS`](crate::compaction::MAX_SESSION_ATTACHMENT_CHARS);
    /// [`AttachmentError::SessionStorageFull`] when the session as a whole would pass
    /// [`MAX_SESSION_STORED_CHARS`](crate::compaction::MAX_SESSION_STORED_CHARS) with room
    /// kept for the model's answer; the attachment's own errors for an empty name or summary.
    pub fn attach(
        &mut self,
        name: &str,
        kind: AttachmentKind,
        text: &str,
        summary: Option<&str>,
    ) -> Result<String, AttachmentError> {
        let Some((_, _)) = self.pending_user_message() else {
            return Err(AttachmentError::NoTurn);
        };
        // Every attachment is in memory (a stored session loads them all), so the session's
        // total is known here, where it grows fastest: past it, the export could no longer be
        // imported.
        let js_length = |text: &str| text.chars().map(char::len_utf16).sum::<usize>();
        let total = js_length(text)
            + self
                .attachments
                .by_id()
                .values()
                .map(|stored| js_length(&stored.attachment.full_text))
                .sum::<usize>();
        if total > crate::compaction::MAX_SESSION_ATTACHMENT_CHARS {
            return Err(AttachmentError::SessionFull {
                name: name.to_string(),
                total,
            });
        }
        let id = self.attachments.next_label();
        let attachment = Attachment::new(
            NewAttachment {
                id: &id,
                name,
                kind,
                text,
                summary,
                attached_at: self.next_seq,
            },
            self.counter.as_ref(),
        )?;
        let stored = SessionAttachment {
            attachment,
            message_seq: self.next_seq,
            message_turn: self.turn,
            log: None,
        };
        // Past the attachments' own limit, the session as a whole must keep room for the
        // messages and for the model's answer to this turn.
        let chars = super::stored_size::attachment_chars(&stored);
        self.check_room_to_store(|| format!("attachment '{name}'"), chars, true)?;
        self.count_stored(chars);
        self.attachments.add_pending(id.clone(), stored);
        self.saves.dirty_attachments.insert(id.clone());
        // The user's message just grew: the same check as after any message.
        let at_ms = self.turn_state.as_ref().map_or(0, |t| t.at_ms);
        self.compact(at_ms, true);
        Ok(id)
    }

    /// Shows an attachment's full text again (after a compaction compressed it).
    ///
    /// # Errors
    /// [`AttachmentError::Unknown`] for an unknown id.
    pub fn expand_attachment(&mut self, id: &str) -> Result<bool, AttachmentError> {
        self.set_attachment_mode(id, AttachmentMode::Full)
    }

    /// Shows an attachment's summary instead of its text.
    ///
    /// # Errors
    /// [`AttachmentError::Unknown`] for an unknown id.
    pub fn compress_attachment(&mut self, id: &str) -> Result<bool, AttachmentError> {
        self.set_attachment_mode(id, AttachmentMode::Compressed)
    }

    fn set_attachment_mode(
        &mut self,
        id: &str,
        mode: AttachmentMode,
    ) -> Result<bool, AttachmentError> {
        let Some(stored) = self.attachments.by_id().get(id) else {
            return Err(AttachmentError::Unknown { id: id.to_string() });
        };
        let before = stored.attachment.mode;
        if let Some(state) = &mut self.turn_state {
            state.undo_attachment_mode(id, before);
        }
        let changed = self
            .attachments
            .attachment_mut(id)
            .is_some_and(|attachment| attachment.set_mode(mode));
        if changed {
            self.saves.dirty_attachments.insert(id.to_string());
        }
        Ok(changed)
    }

    /// Records references to attachments in a message (by name, id or summary keywords).
    pub(crate) fn note_attachment_references(&mut self, text: &str, message: u64) {
        let ids = self.attachments_in_working_set();
        if ids.is_empty() {
            // Most turns have no attachment in sight: no need to prepare the text.
            return;
        }
        let prepared = PreparedText::new(text);
        let min = (self.config.min_keyword_overlap as usize).max(3);
        let ids: Vec<String> = ids
            .into_iter()
            .filter(|id| {
                self.attachments.by_id()[id]
                    .attachment
                    .is_referenced_by(&prepared, min)
            })
            .collect();
        for id in ids {
            if let Some(attachment) = self.attachments.attachment_mut(&id) {
                attachment.record_reference(message);
                self.saves.dirty_attachments.insert(id);
            }
        }
    }

    /// Ids of the attachments whose messages are in the working set: the pending message's,
    /// those of ambient exchanges in the window that were not compacted, and those of open or
    /// expanded efforts' logs. Reads only the working set's part of the index.
    pub(crate) fn attachments_in_working_set(&self) -> Vec<String> {
        let mut ids = Vec::new();
        if self.in_turn() {
            ids.extend(self.attachments.pending().iter().cloned());
        }
        let window = self.ambient_window();
        if let Some(first) = window.first() {
            if let Some(by_seq) = self.attachments.filed_under(&LogRef::Ambient) {
                for (_, id) in by_seq.range((first.seq, String::new())..) {
                    let turn = self.attachments.by_id()[id].message_turn;
                    if !self
                        .compaction
                        .compacted_items()
                        .contains_key(&format!("ambient:{turn}"))
                    {
                        ids.push(id.clone());
                    }
                }
            }
        }
        let logs = self
            .efforts
            .placement
            .open
            .iter()
            .copied()
            .chain(self.efforts.placement.expanded.iter().map(|e| e.effort));
        for index in logs {
            let effort = self.efforts.at(index);
            if let Some(by_seq) = self
                .attachments
                .filed_under(&LogRef::Effort(effort.id.clone()))
            {
                for (_, id) in by_seq {
                    let turn = self.attachments.by_id()[id].message_turn;
                    if !self
                        .compaction
                        .compacted_items()
                        .contains_key(&format!("effort:{}@{turn}", effort.id))
                    {
                        ids.push(id.clone());
                    }
                }
            }
        }
        ids
    }

    /// Files the attachments of the stored turn under the log its message went to.
    pub(crate) fn file_pending_attachments(&mut self, log: LogRef) {
        let filed = self.attachments.file_pending(&log);
        self.saves.dirty_attachments.extend(filed);
    }

    /// Forgets compaction marks of items that left the working set for other reasons (the
    /// ambient window moved past them, their effort is no longer open), so the record stays
    /// proportional to the working set.
    pub(crate) fn prune_compacted(&mut self) {
        let window_start = self.ambient_window().first().map(|m| m.turn);
        let open: Vec<String> = self
            .efforts
            .placement
            .open
            .iter()
            .map(|&i| self.efforts.at(i).id.clone())
            .collect();
        self.compaction.forget_moved(|id| {
            if let Some(turn) = id.strip_prefix("ambient:") {
                let turn: u64 = turn.parse().unwrap_or(0);
                window_start.is_some_and(|start| turn >= start)
            } else if let Some(rest) = id.strip_prefix("effort:") {
                let effort = rest.split('@').next().unwrap_or("");
                open.iter().any(|o| o == effort)
            } else {
                true
            }
        });
    }

    /// Runs the compaction check (after a message is stored or counted): decides the level
    /// with the policy's thresholds, cooldown and hysteresis, and applies it. Returns the
    /// event when a compaction was applied. Usage is measured against the request budget (the
    /// window minus the reserved answer tokens).
    ///
    /// The plan it measures is kept: when nothing is applied, whatever plans the same state
    /// next reads it (deciding the policy's next state changes nothing the planner reads).
    pub fn compact_if_needed(&mut self, at_ms: u64) -> Option<CompactionEvent> {
        self.compact(at_ms, false)
    }

    /// The compaction check; with `render`, the plan it measures is rendered, for a check
    /// that a request follows (a message counted in a turn): the request then reads it as
    /// it is. Rendering is most of a plan's cost, so checks that no request follows do not.
    pub(crate) fn compact(&mut self, at_ms: u64, render: bool) -> Option<CompactionEvent> {
        if !self.compaction.policy().config().enabled {
            return None;
        }
        let budget = self.config.request_budget().max(1);
        let plan = self.plan(render);
        // What the automatic recall adds is not the working set (see
        // `ContextPlan::auto_recalled_tokens`); counting it would let optional excerpts push
        // the conversation itself out.
        let usage = Usage::new(plan.working_set_tokens(), budget).ok()?;
        if let Some(state) = &mut self.turn_state {
            state.undo_compaction(&self.compaction);
        }
        let decision = self
            .compaction
            .policy_mut()
            .decide(usage, self.next_seq, at_ms);
        let level = decision.level_to_apply()?;

        let owned = self.describe_working_set(&plan.included);
        let items: Vec<WorkingItem<'_>> = owned
            .iter()
            .map(|o| {
                let item = match &o.kind {
                    OwnedKind::Fixed => WorkingItem::fixed(&o.id, o.tokens),
                    OwnedKind::Ambient {
                        seqs,
                        messages,
                        text,
                    } => WorkingItem::ambient(&o.id, o.tokens, *seqs, *messages, text),
                    OwnedKind::EffortTurn {
                        effort,
                        seqs,
                        messages,
                        text,
                    } => WorkingItem::effort_turn(&o.id, o.tokens, effort, *seqs, *messages, text),
                    OwnedKind::Expanded {
                        summary_tokens,
                        idle,
                    } => WorkingItem::expanded(&o.id, o.tokens, *summary_tokens, *idle),
                    OwnedKind::Attachment(id) => {
                        let mut item = WorkingItem::attachment(
                            &self.attachments.by_id()[id].attachment,
                            self.next_seq,
                        );
                        item.id = &o.id;
                        item
                    }
                    OwnedKind::Rolling => match self.compaction.rolling_summary() {
                        Some(summary) => WorkingItem::rolling_summary(&o.id, summary),
                        None => WorkingItem::fixed(&o.id, o.tokens),
                    },
                };
                if o.pinned {
                    item.pinned()
                } else {
                    item
                }
            })
            .collect();
        let query = self
            .pending_user_message()
            .map(|(text, _)| text.to_string())
            .or_else(|| {
                self.ambient
                    .messages()
                    .iter()
                    .rev()
                    .find(|m| m.role == crate::model::Role::User)
                    .map(|m| m.content.clone())
            })
            .unwrap_or_default();
        let config = self.compaction.policy().config().clone();
        let ambient = owned.iter().filter_map(|item| match &item.kind {
            OwnedKind::Ambient { seqs, .. } => Some((item.id.as_str(), seqs.first)),
            _ => None,
        });
        let scores = self.compaction.embedding_scores(&query, ambient);
        let relevance_used = if scores.is_some() {
            "embeddings"
        } else {
            "lexical"
        };
        let planned = plan_compaction(&CompactionInput {
            level,
            items: &items,
            query: &query,
            relevance: match &scores {
                Some(scores) => Relevance::Scores(scores),
                None => Relevance::Lexical,
            },
            config: &config,
            window_tokens: budget,
        });
        let Ok(planned) = planned else {
            self.compaction.policy_mut().record_not_applied(&decision);
            return None;
        };
        // Level 3 replaces history with a rolling summary. The engine can upgrade it to a
        // model-written one afterwards; the extractive one is never empty and needs no network.
        let summary = planned.rolling.as_ref().and_then(|rolling| {
            RollingSummary::extractive(&rolling.input(), rolling.max_words, self.counter.as_ref())
                .ok()
        });
        let upgrade = planned.rolling.as_ref().map(|rolling| {
            let input = rolling.input();
            RollingUpgrade {
                previous_text: input.previous_text.map(str::to_string),
                previous_covers: input.previous_covers.to_vec(),
                history: input
                    .history
                    .iter()
                    .map(|h| (h.seqs, h.text.to_string()))
                    .collect(),
                max_words: rolling.max_words,
                replaced_tokens: rolling.replaced_tokens,
            }
        });
        let outcome = match planned.finish(&decision, summary.as_ref()) {
            Ok(outcome) => outcome,
            Err(_) => match planned.without_rolling().finish(&decision, None) {
                Ok(outcome) => outcome,
                Err(_) => {
                    self.compaction.policy_mut().record_not_applied(&decision);
                    return None;
                }
            },
        };
        let event = match outcome {
            CompactionOutcome::Applied(event) => event,
            CompactionOutcome::NotApplied { .. } => {
                self.compaction.policy_mut().record_not_applied(&decision);
                return None;
            }
        };
        drop(items);
        if event.rolling_summary.is_some() {
            self.compaction.await_upgrade(upgrade);
        }
        self.apply_compaction(&event, summary);
        self.compaction.policy_mut().record_applied(&event);
        let banner = event.banner();
        self.last_banner = Some(banner.clone());
        if let Some(state) = &mut self.turn_state {
            state.banners.push(banner);
            state
                .compactions
                .push(CompactionRecord::of(&event, relevance_used));
        } else {
            let record = CompactionRecord::of(&event, relevance_used);
            self.amend_last_point(|last| last.compactions.push(record));
        }
        Some(event)
    }

    /// Replaces the extractive rolling summary with a model's answer to the request made from
    /// [`Session::rolling_summary_upgrade`]. Returns whether it was taken: an empty answer, or
    /// one not smaller than the history it stands for, keeps the extractive summary.
    pub fn upgrade_rolling_summary(&mut self, text: &str) -> bool {
        self.compaction.upgrade_rolling(text, self.counter.as_ref())
    }

    /// Turns on relevance ranking by embeddings for compaction (model name as the endpoint
    /// knows it). Without it, or whenever vectors are missing, the built-in lexical model
    /// (BM25) ranks, so compaction works offline.
    pub fn enable_embeddings(&mut self, model: &str) {
        self.compaction.enable_embeddings(model);
        // Recall ranks with the same model: its ranking fuses the lexical one with cosine
        // similarity wherever vectors are present (`recall_embedding_batch`).
        self.recall.vectors = Some(crate::components::recall::RecallVectors {
            model: model.trim().to_string(),
            ..Default::default()
        });
        self.recall.auto = None;
        self.refresh_auto_recall();
    }

    /// The texts to embed for `query`: the query and every ambient exchange of the working set
    /// not cached yet; `None` when embeddings are not enabled. The host embeds them (the
    /// endpoint's request and response are `ccm-provider`'s) and hands the vectors to
    /// [`Session::absorb_embeddings`].
    pub fn embedding_batch(&self, query: &str) -> Option<crate::compaction::EmbeddingBatch> {
        let cache = self.compaction.embeddings()?;
        let texts = self.ambient_exchange_texts();
        let candidates: Vec<(u64, &str)> = texts
            .iter()
            .map(|(seq, text)| (*seq, text.as_str()))
            .collect();
        Some(cache.batch(query, &candidates))
    }

    /// Caches the vectors of `batch`'s texts (in order) for `query`. Nothing is cached unless
    /// every vector is usable.
    ///
    /// # Errors
    /// The [`crate::compaction::EmbeddingError`] of vectors that do not fit the batch or the
    /// cache; embeddings not enabled.
    pub fn absorb_embeddings(
        &mut self,
        query: &str,
        batch: &crate::compaction::EmbeddingBatch,
        vectors: Vec<Vec<f32>>,
    ) -> Result<(), crate::compaction::EmbeddingError> {
        // Vectors of exchanges that left the window are of no further use.
        let keep: std::collections::BTreeSet<u64> = self
            .ambient_exchange_texts()
            .into_iter()
            .map(|(seq, _)| seq)
            .collect();
        self.compaction
            .absorb_embeddings(query, batch, vectors, |seq| keep.contains(&seq))
    }

    /// The ambient exchanges of the window: (first sequence number, text as compaction reads
    /// it).
    fn ambient_exchange_texts(&self) -> Vec<(u64, String)> {
        let mut exchanges: BTreeMap<u64, Vec<&crate::model::Message>> = BTreeMap::new();
        for m in self.ambient_window() {
            exchanges.entry(m.turn).or_default().push(m);
        }
        exchanges
            .into_values()
            .map(|messages| (messages[0].seq, exchange_text(&messages)))
            .collect()
    }

    /// The working set as compaction sees it, from the plan's included items.
    fn describe_working_set(&self, included: &[IncludedItem]) -> Vec<OwnedItem> {
        let mut owned = Vec::with_capacity(included.len());
        let pinned = |id: &str| self.pins.on(id).is_some();
        for item in included {
            match item.section {
                Section::Ambient => {
                    let turn: u64 = item.id.trim_start_matches("ambient:").parse().unwrap_or(0);
                    let tail = self.ambient.messages().iter().rev();
                    let mut messages: Vec<&crate::model::Message> = tail
                        .take_while(|m| m.turn >= turn)
                        .filter(|m| m.turn == turn)
                        .collect();
                    messages.reverse();
                    let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
                        continue;
                    };
                    owned.push(OwnedItem {
                        id: item.id.clone(),
                        tokens: item.tokens,
                        pinned: pinned(&item.id),
                        kind: OwnedKind::Ambient {
                            seqs: SeqRange::new(first.seq, last.seq),
                            messages: messages.len() as u32,
                            text: exchange_text(&messages),
                        },
                    });
                }
                Section::Open => {
                    let id = item.id.trim_start_matches("effort:");
                    let Some(effort) = self.efforts.get(id) else {
                        continue;
                    };
                    owned.push(OwnedItem {
                        id: format!("{}@header", item.id),
                        tokens: u64::from(effort.header_tokens),
                        pinned: false,
                        kind: OwnedKind::Fixed,
                    });
                    let mut turns: BTreeMap<u64, Vec<&crate::model::Message>> = BTreeMap::new();
                    for m in &effort.messages {
                        if !self
                            .compaction
                            .compacted_items()
                            .contains_key(&format!("{}@{}", item.id, m.turn))
                        {
                            turns.entry(m.turn).or_default().push(m);
                        }
                    }
                    let kept_tokens: u64 =
                        turns.values().flatten().map(|m| u64::from(m.tokens)).sum();
                    // Turns trimmed by the budget are not in the context; only the kept ones
                    // (the newest) are working items.
                    let mut budget_left =
                        item.tokens.saturating_sub(u64::from(effort.header_tokens));
                    let skip_tokens = kept_tokens.saturating_sub(budget_left);
                    let mut skipped = 0u64;
                    for (turn, messages) in turns {
                        let tokens: u64 = messages.iter().map(|m| u64::from(m.tokens)).sum();
                        if skipped < skip_tokens {
                            skipped += tokens;
                            continue;
                        }
                        budget_left = budget_left.saturating_sub(tokens);
                        let (first, last) = (messages[0].seq, messages[messages.len() - 1].seq);
                        owned.push(OwnedItem {
                            id: format!("{}@{turn}", item.id),
                            tokens,
                            pinned: pinned(&item.id),
                            kind: OwnedKind::EffortTurn {
                                effort: id.to_string(),
                                seqs: SeqRange::new(first, last),
                                messages: messages.len() as u32,
                                text: exchange_text(&messages),
                            },
                        });
                    }
                }
                Section::Expanded => {
                    let id = item.id.trim_start_matches("effort:");
                    let Some(effort) = self.efforts.get(id) else {
                        continue;
                    };
                    let idle = self
                        .efforts
                        .expansion(id)
                        .map_or(0, |e| self.turn.saturating_sub(e.last_referenced_turn));
                    let expanded = matches!(item.reason, InclusionReason::Expanded { .. });
                    owned.push(OwnedItem {
                        id: item.id.clone(),
                        tokens: item.tokens,
                        pinned: pinned(&item.id) || !expanded,
                        kind: if expanded {
                            OwnedKind::Expanded {
                                summary_tokens: effort
                                    .summary
                                    .as_ref()
                                    .map_or(0, |s| u64::from(s.tokens)),
                                idle,
                            }
                        } else {
                            OwnedKind::Fixed
                        },
                    });
                }
                Section::Attachment => {
                    let id = item.id.trim_start_matches("attachment:").to_string();
                    owned.push(OwnedItem {
                        id: item.id.clone(),
                        tokens: item.tokens,
                        pinned: pinned(&item.id),
                        kind: OwnedKind::Attachment(id),
                    });
                }
                Section::Rolling => owned.push(OwnedItem {
                    id: item.id.clone(),
                    tokens: item.tokens,
                    pinned: false,
                    kind: OwnedKind::Rolling,
                }),
                // The automatic recall's excerpts are not part of the working set (see
                // `compact`).
                Section::Recalled
                    if matches!(item.reason, InclusionReason::AutoRecalled { .. }) => {}
                // Recalled excerpts leave by decay; compaction does not move them.
                Section::Recalled => owned.push(OwnedItem {
                    id: item.id.clone(),
                    tokens: item.tokens,
                    pinned: false,
                    kind: OwnedKind::Fixed,
                }),
                Section::System | Section::Summary | Section::Pending | Section::RawLog => owned
                    .push(OwnedItem {
                        id: item.id.clone(),
                        tokens: item.tokens,
                        pinned: true,
                        kind: OwnedKind::Fixed,
                    }),
            }
        }
        owned
    }

    /// Applies a compaction's moves to the working set. Nothing stored changes.
    fn apply_compaction(&mut self, event: &CompactionEvent, summary: Option<RollingSummary>) {
        for moved in &event.moved {
            match moved.kind {
                MovedKind::Attachment => {
                    let id = moved.id.trim_start_matches("attachment:").to_string();
                    let _ = self.set_attachment_mode(&id, AttachmentMode::Compressed);
                }
                MovedKind::Expanded => {
                    let id = moved.id.trim_start_matches("effort:");
                    if let Some(index) = self.efforts.index.get(id).copied() {
                        if let Some(position) = self
                            .efforts
                            .placement
                            .expanded
                            .iter()
                            .position(|e| e.effort == index)
                        {
                            let expansion = self.efforts.placement.expanded.remove(position);
                            self.efforts
                                .placement
                                .decay
                                .record_collapse(self.turn - expansion.expanded_turn, true);
                        }
                    }
                }
                MovedKind::Ambient | MovedKind::EffortTurn => {
                    self.compaction.mark_moved(moved.id.clone(), moved.reason);
                }
                MovedKind::RollingSummary => {}
            }
        }
        if let Some(summary) = summary {
            if event.rolling_summary.is_some() {
                self.compaction.set_rolling(summary);
            }
        }
    }

    /// Restores attachments and compaction state read back from a document or a store.
    ///
    /// # Errors
    /// [`crate::SnapshotError::Inconsistent`] for an attachment whose log names an unknown
    /// effort, or a duplicate attachment id.
    pub(crate) fn restore_attachments(
        &mut self,
        attachments: Vec<SessionAttachment>,
    ) -> Result<(), crate::SnapshotError> {
        for stored in attachments {
            let id = stored.attachment.id.clone();
            match &stored.log {
                Some(LogRef::Effort(effort)) if self.efforts.get(effort).is_none() => {
                    return Err(crate::SnapshotError::Inconsistent(format!(
                        "attachment '{id}' belongs to unknown effort '{effort}'"
                    )))
                }
                Some(_) => {}
                // Saved while its turn was in progress: that turn was not saved, so the
                // attachment goes with it, like the user message it belonged to.
                None => continue,
            }
            if !self.attachments.insert_stored(stored) {
                return Err(crate::SnapshotError::Inconsistent(format!(
                    "attachment id '{id}' appears twice"
                )));
            }
        }
        Ok(())
    }
}
