//! The effort operations the tools and the host call: open, close (with a summary or the
//! extractive fallback), reopen, expand, collapse, switch, the status report and search.

use super::turn::route;
use super::*;

impl Session {
    // ----- effort operations -------------------------------------------------------------

    /// The effort the turn in progress will be stored in, as `end_turn` will route it: the
    /// first effort opened during the turn, else the effort it switched to or reopened last,
    /// else the effort active when the turn began; `None` for the ambient log (or outside a
    /// turn).
    pub fn routing_target(&self) -> Option<&str> {
        let state = self.turn_state.as_ref()?;
        let index = route(
            state.opened.first().copied(),
            state.switched_to,
            state.active_before,
        )?;
        Some(self.efforts.at(index).id.as_str())
    }

    pub(super) fn record(&mut self, banner: String, event: EffortEvent) {
        self.last_banner = Some(banner.clone());
        if let Some(state) = &mut self.turn_state {
            state.banners.push(banner);
            state.events.push(event);
        } else {
            // Operations outside a turn (setting up a session, the app's manual buttons) are
            // attributed to the last turn's metrics so the token curve still shows them.
            self.amend_last_point(|last| last.events.push(event));
        }
    }

    /// Changes the last metrics point, for what happens between turns, and has the next save
    /// write that point again (a store keeps one record per turn and replaces it).
    pub(super) fn amend_last_point(&mut self, change: impl FnOnce(&mut TurnMetrics)) {
        if let Some(last) = self.history.last_point_mut() {
            change(last);
            let index = self.history.points().len() - 1;
            self.saves.history_saved = self.saves.history_saved.min(index);
        }
    }

    pub(super) fn touch(&mut self, index: usize) {
        let turn = self.turn;
        self.effort_mut(index).last_referenced_turn = turn;
        if let Some(state) = &mut self.turn_state {
            state.touched.insert(index);
        }
    }

    /// Opens a new effort and makes it active. Several efforts may be open at once.
    ///
    /// # Errors
    /// [`EffortError::EmptyName`] when the name has no letter or digit;
    /// [`EffortError::DuplicateId`] when its id is taken.
    pub fn open_effort(
        &mut self,
        name: &str,
        description: Option<&str>,
    ) -> Result<Opened, EffortError> {
        let id = text::slugify(name);
        if id.is_empty() {
            return Err(EffortError::EmptyName {
                name: name.to_string(),
            });
        }
        if let Some(&existing) = self.efforts.index.get(&id) {
            return Err(EffortError::DuplicateId {
                id,
                status: state_word(self.efforts.state_of(existing)),
            });
        }
        let name = name.trim().to_string();
        let description = description
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        let header = prompt::effort_header(&id, &name, description.as_deref());
        let header_tokens = self.counter.count(&header);
        let index = self.efforts.add(Effort {
            id: id.clone(),
            name,
            description,
            status: EffortStatus::Open,
            opened_turn: self.turn,
            concluded_turn: None,
            concluded_seq: None,
            summary: None,
            messages: Vec::new(),
            header,
            header_tokens,
            raw_tokens: u64::from(header_tokens),
            last_referenced_turn: self.turn,
            evicted: false,
            evicted_over_budget: false,
            log: LogState::Loaded,
        });
        self.efforts.placement.raw_total += u64::from(header_tokens);
        self.saves.dirty_efforts.insert(index);
        self.efforts.placement.open.push(index);
        self.efforts.placement.active = Some(index);
        if let Some(state) = &mut self.turn_state {
            state.opened.push(index);
        }
        self.record(
            format!("--- Started effort: {id} ---"),
            EffortEvent::new(EventKind::Opened, &id, u64::from(header_tokens)),
        );
        Ok(Opened {
            id,
            open_efforts: self
                .efforts
                .open_ids()
                .into_iter()
                .map(str::to_string)
                .collect(),
        })
    }

    /// Concludes an open effort (the active one when `id` is `None`): its raw log leaves the
    /// context and its summary enters. Without a summary the deterministic extractive summary
    /// is used, and the result says so.
    ///
    /// # Errors
    /// [`EffortError::NoActiveEffort`], [`EffortError::UnknownEffort`],
    /// [`EffortError::WrongState`] when it is not open, [`EffortError::EmptySummary`] when the
    /// given summary is blank. In every error case nothing changes.
    pub fn close_effort(
        &mut self,
        id: Option<&str>,
        summary: Option<&str>,
    ) -> Result<Concluded, EffortError> {
        self.conclude(id, summary, "no summary was provided")
    }

    /// Concludes an effort with the extractive summary because a written one could not be had
    /// (for example the summary request to the model failed). `reason` is shown in the banner,
    /// so the user knows the summary is a fallback.
    ///
    /// # Errors
    /// As [`Session::close_effort`].
    pub fn close_effort_with_fallback(
        &mut self,
        id: Option<&str>,
        reason: &str,
    ) -> Result<Concluded, EffortError> {
        let result = self.conclude(id, None, reason);
        // The engine concludes this way outside `execute_tool`; the trace must still show it.
        let arguments = serde_json::json!({ "id": id, "fallback_reason": reason }).to_string();
        let outcome = match &result {
            Ok(concluded) => serde_json::to_string(concluded).unwrap_or_default(),
            Err(error) => serde_json::json!({ "error": error.to_string() }).to_string(),
        };
        self.trace_tool(
            crate::tools::name::CLOSE_EFFORT,
            &arguments,
            result.is_ok(),
            &outcome,
        );
        result
    }

    fn conclude(
        &mut self,
        id: Option<&str>,
        summary: Option<&str>,
        fallback_reason: &str,
    ) -> Result<Concluded, EffortError> {
        let index = self.efforts.resolve_index(id)?;
        let effort = self.efforts.at(index);
        if effort.status != EffortStatus::Open {
            return Err(EffortError::WrongState {
                operation: "close",
                id: effort.id.clone(),
                reason: "it is already concluded".to_string(),
            });
        }
        let (text, source) = match summary {
            Some(given) if given.trim().is_empty() => {
                return Err(EffortError::EmptySummary {
                    id: effort.id.clone(),
                })
            }
            Some(given) => (given.trim().to_string(), SummarySource::Provided),
            None => (self.extractive_summary_of(index), SummarySource::Extractive),
        };
        let rendered = prompt::summary_line(&effort.id, &text);
        let tokens = self.counter.count(&rendered);
        let terms = self
            .efforts
            .search
            .distinctive_log_terms(effort.messages.iter().map(|m| m.content.as_str()));
        let summary = Summary {
            keywords: text::extract_keywords(&text),
            terms,
            text,
            source,
            rendered,
            tokens,
        };
        let concluded_seq = self.efforts.placement.next_concluded_seq;
        self.efforts.placement.next_concluded_seq += 1;
        let turn = self.turn;
        let effort = self.effort_mut(index);
        effort.status = EffortStatus::Concluded;
        effort.concluded_turn = Some(turn);
        effort.concluded_seq = Some(concluded_seq);
        effort.summary = Some(Arc::new(summary));
        effort.evicted = false;
        let report = Concluded {
            id: effort.id.clone(),
            summary: effort
                .summary
                .as_ref()
                .map(|s| s.text.clone())
                .unwrap_or_default(),
            summary_source: source,
            raw_tokens: effort.raw_tokens,
            summary_tokens: tokens,
            now_active: None,
        };
        self.efforts.placement.open.retain(|&i| i != index);
        if self.efforts.placement.active == Some(index) {
            // While efforts are open, one of them receives the messages (the specification's
            // routing table): the first one still open, as in the original implementation.
            self.efforts.placement.active = self.efforts.placement.open.first().copied();
        }
        let report = Concluded {
            now_active: self.efforts.active_id().map(str::to_string),
            ..report
        };
        self.efforts
            .placement
            .in_memory
            .insert((concluded_seq, index));
        self.efforts.index_for_search(index);
        self.touch(index);
        let banner = match source {
            SummarySource::Provided => format!(
                "--- Concluded effort: {} ---\n{}",
                report.id, report.summary
            ),
            SummarySource::Extractive => format!(
                "--- Concluded effort: {} ---\n{}\n(extractive summary: {fallback_reason})",
                report.id, report.summary
            ),
        };
        self.record(
            banner,
            EffortEvent::new(EventKind::Concluded, &report.id, report.raw_tokens),
        );
        Ok(report)
    }

    /// Chooses a concluded effort's search terms again, now that its log has grown: the
    /// exchange of the turn that concludes an effort is stored after the conclusion, and what
    /// was said in it must be findable too. The summary itself stays as it was shown.
    pub(super) fn refresh_log_terms(&mut self, index: usize) {
        if self.efforts.at(index).log != LogState::Loaded {
            return;
        }
        // The effort is taken out of the index first, so its terms are weighed against the
        // other efforts only, as they were at its conclusion.
        self.efforts.unindex_for_search(index);
        let terms = self.efforts.search.distinctive_log_terms(
            self.efforts
                .at(index)
                .messages
                .iter()
                .map(|m| m.content.as_str()),
        );
        if let Some(summary) = self
            .effort_mut(index)
            .summary
            .as_mut()
            .map(std::sync::Arc::make_mut)
        {
            summary.terms = terms;
        }
        self.efforts.index_for_search(index);
    }

    /// The deterministic extractive summary of an effort's raw log (what `close_effort` uses
    /// when no summary is given).
    ///
    /// Only this effort's own messages are read: its description, its raw log, and the user
    /// message of the turn in progress when the turn is routed to this effort. That message is
    /// stored only when the turn ends, after the conclusion, but it is usually the closing one
    /// and often the only one that states the outcome ("we split the bundle, that's
    /// resolved"); without it the summary would report the problem instead of its solution.
    pub fn extractive_summary_of(&self, index: usize) -> String {
        let effort = self.efforts.at(index);
        let mut messages: Vec<(text::Speaker, &str)> =
            Vec::with_capacity(effort.messages.len() + 2);
        if let Some(description) = &effort.description {
            messages.push((text::Speaker::Person, description));
        }
        messages.extend(effort.messages.iter().map(|m| {
            let speaker = match m.role {
                crate::model::Role::User => text::Speaker::Person,
                crate::model::Role::Assistant | crate::model::Role::System => {
                    text::Speaker::Assistant
                }
            };
            (speaker, m.content.as_str())
        }));
        if let Some((pending, _)) = self.pending_user_message() {
            if self.routing_target() == Some(effort.id.as_str()) {
                messages.push((text::Speaker::Person, pending));
            }
        }
        text::extractive_summary_of_conversation(&effort.name, &messages)
    }

    /// Reopens a concluded effort: it becomes open and active again, with its full raw log in
    /// context. Its last summary is kept on record.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is open.
    pub fn reopen_effort(&mut self, id: &str) -> Result<Reopened, EffortError> {
        let index = self.efforts.lookup(id)?;
        let effort = self.efforts.at(index);
        if effort.status != EffortStatus::Concluded {
            return Err(EffortError::WrongState {
                operation: "reopen",
                id: effort.id.clone(),
                reason: "it is already open".to_string(),
            });
        }
        if effort.log != LogState::Loaded {
            return Err(EffortError::LogNotLoaded {
                id: effort.id.clone(),
                operation: crate::tools::name::REOPEN_EFFORT,
            });
        }
        let key = (effort.concluded_seq.unwrap_or_default(), index);
        if effort.evicted {
            self.forget_eviction(index);
        }
        self.efforts.placement.in_memory.remove(&key);
        self.efforts
            .placement
            .expanded
            .retain(|e| e.effort != index);
        self.forget_decay(index);
        self.efforts.unindex_for_search(index);
        let effort = self.effort_mut(index);
        effort.status = EffortStatus::Open;
        let report = Reopened {
            id: effort.id.clone(),
            raw_tokens: effort.raw_tokens,
        };
        self.efforts.placement.open.push(index);
        self.efforts.placement.active = Some(index);
        if let Some(state) = &mut self.turn_state {
            state.switched_to = Some(index);
        }
        self.touch(index);
        self.record(
            format!("--- Reopened effort: {} ---", report.id),
            EffortEvent::new(EventKind::Reopened, &report.id, report.raw_tokens),
        );
        Ok(report)
    }

    fn forget_decay(&mut self, index: usize) {
        if let Some(turn) = self.efforts.auto_collapsed_at.remove(&index) {
            self.efforts.placement.decay.decayed_resident_tokens -=
                self.efforts.at(index).raw_minus_summary_tokens();
            if let Some(state) = &mut self.turn_state {
                state.undo.auto_collapsed_removed.push((index, turn));
            }
        }
    }

    /// Loads a concluded effort's raw log back into the context until it is collapsed or
    /// decays. An evicted effort returns to working memory.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is open or
    /// already expanded.
    pub fn expand_effort(&mut self, id: &str) -> Result<Expanded, EffortError> {
        let index = self.efforts.lookup(id)?;
        let effort = self.efforts.at(index);
        let refuse = |reason: &str| EffortError::WrongState {
            operation: "expand",
            id: effort.id.clone(),
            reason: reason.to_string(),
        };
        if effort.status == EffortStatus::Open {
            return Err(refuse(
                "it is open, and open efforts are already in context",
            ));
        }
        if self.efforts.is_expanded(index) {
            return Err(refuse("it is already expanded"));
        }
        if effort.log != LogState::Loaded {
            return Err(EffortError::LogNotLoaded {
                id: effort.id.clone(),
                operation: crate::tools::name::EXPAND_EFFORT,
            });
        }
        self.restore_to_memory(index);
        if let Some(collapsed_at) = self.efforts.auto_collapsed_at.get(&index) {
            if self.turn - collapsed_at <= 2 {
                self.efforts.placement.decay.false_decays += 1;
            }
        }
        self.forget_decay(index);
        self.efforts.placement.expanded.push(Expansion {
            effort: index,
            expanded_turn: self.turn,
            last_referenced_turn: self.turn,
        });
        self.touch(index);
        let effort = self.efforts.at(index);
        let report = Expanded {
            id: effort.id.clone(),
            tokens_loaded: effort.raw_tokens,
        };
        self.record(
            format!(
                "--- Expanded effort: {} ({} tokens loaded) ---",
                report.id, report.tokens_loaded
            ),
            EffortEvent::new(EventKind::Expanded, &report.id, report.tokens_loaded),
        );
        Ok(report)
    }

    /// Brings an evicted effort's summary back into working memory.
    pub(super) fn restore_to_memory(&mut self, index: usize) {
        if self.efforts.at(index).evicted {
            self.forget_eviction(index);
            let efforts = &mut *self.efforts;
            efforts
                .placement
                .in_memory
                .insert((efforts.at(index).concluded_seq.unwrap_or_default(), index));
        }
    }

    /// Clears an effort's eviction mark and takes it out of the evicted totals.
    fn forget_eviction(&mut self, index: usize) {
        let effort = self.effort_mut(index);
        let over_budget = effort.evicted_over_budget;
        effort.evicted = false;
        effort.evicted_over_budget = false;
        let tokens = effort.raw_tokens;
        self.efforts.placement.evicted.remove(tokens, over_budget);
    }

    /// Takes an expanded effort's raw log out of the context; its summary stands in again.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is not expanded.
    pub fn collapse_effort(&mut self, id: &str) -> Result<Collapsed, EffortError> {
        let index = self.efforts.lookup(id)?;
        let Some(position) = self
            .efforts
            .placement
            .expanded
            .iter()
            .position(|e| e.effort == index)
        else {
            let effort = self.efforts.at(index);
            let reason = match effort.status {
                EffortStatus::Open => "it is open; only expanded efforts can be collapsed (close_effort concludes an open one)",
                EffortStatus::Concluded => "it is not expanded",
            };
            return Err(EffortError::WrongState {
                operation: "collapse",
                id: effort.id.clone(),
                reason: reason.to_string(),
            });
        };
        let expansion = self.efforts.placement.expanded.remove(position);
        self.efforts
            .placement
            .decay
            .record_collapse(self.turn - expansion.expanded_turn, false);
        let effort = self.efforts.at(index);
        let report = Collapsed {
            id: effort.id.clone(),
            tokens_freed: effort.raw_tokens,
        };
        self.record(
            format!("--- Collapsed effort: {} (back to summary) ---", report.id),
            EffortEvent::new(EventKind::Collapsed, &report.id, report.tokens_freed),
        );
        Ok(report)
    }

    /// Makes another open effort the active one; both raw logs stay in context.
    ///
    /// # Errors
    /// [`EffortError::UnknownEffort`], or [`EffortError::WrongState`] when it is concluded or
    /// already active.
    pub fn switch_effort(&mut self, id: &str) -> Result<Switched, EffortError> {
        let index = self.efforts.lookup(id)?;
        let effort = self.efforts.at(index);
        let reason = match (effort.status, self.efforts.placement.active == Some(index)) {
            (EffortStatus::Concluded, _) => {
                Some("it is concluded; reopen_effort continues it, expand_effort shows its log")
            }
            (EffortStatus::Open, true) => Some("it is already the active effort"),
            (EffortStatus::Open, false) => None,
        };
        if let Some(reason) = reason {
            return Err(EffortError::WrongState {
                operation: "switch to",
                id: effort.id.clone(),
                reason: reason.to_string(),
            });
        }
        let previous = self.efforts.active_id().map(str::to_string);
        self.efforts.placement.active = Some(index);
        if let Some(state) = &mut self.turn_state {
            state.switched_to = Some(index);
        }
        self.touch(index);
        let id = self.efforts.at(index).id.clone();
        self.record(
            format!("--- Switched to effort: {id} ---"),
            EffortEvent::new(EventKind::Switched, &id, 0),
        );
        Ok(Switched { id, previous })
    }

    /// Where every effort in working memory is, with token sizes and expansion cost.
    pub fn effort_status(&self) -> StatusReport {
        let decay = u64::from(self.config.decay_threshold);
        let eviction = u64::from(self.config.summary_eviction_threshold);
        let entry = |index: usize| {
            let effort = self.efforts.at(index);
            let state = self.efforts.state_of(index);
            let expansion = self
                .efforts
                .placement
                .expanded
                .iter()
                .find(|e| e.effort == index);
            EffortStatusEntry {
                id: effort.id.clone(),
                name: effort.name.clone(),
                state,
                raw_tokens: effort.raw_tokens,
                summary_tokens: effort.summary.as_ref().map(|s| s.tokens),
                turns_until_auto_collapse: expansion
                    .map(|e| (e.last_referenced_turn + decay).saturating_sub(self.turn)),
                turns_until_eviction: (state == EffortState::Concluded)
                    .then(|| (effort.last_referenced_turn + eviction).saturating_sub(self.turn)),
            }
        };
        let mut efforts: Vec<EffortStatusEntry> = self
            .efforts
            .placement
            .open
            .iter()
            .map(|&i| entry(i))
            .collect();
        efforts.extend(
            self.efforts
                .placement
                .expanded
                .iter()
                .map(|e| entry(e.effort)),
        );
        efforts.extend(
            self.efforts
                .placement
                .in_memory
                .iter()
                .filter(|(_, i)| !self.efforts.is_expanded(*i))
                .map(|&(_, i)| entry(i)),
        );
        StatusReport {
            turn: self.turn,
            active: self.efforts.active_id().map(str::to_string),
            efforts,
            evicted_count: self.efforts.placement.evicted.count,
            expansion_tokens: self.efforts.expansion_tokens(),
        }
    }

    /// Searches every concluded effort, evicted ones included, by keyword relevance. Each hit
    /// counts as a reference: an evicted hit returns to working memory.
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word.
    pub fn search_efforts(&mut self, query: &str) -> Result<SearchResults, EffortError> {
        let found = self.find_efforts(query)?;
        for hit in &found.results {
            // A hit on what the effort is about is a reference to it; a hit only on words said
            // in its log is shown, but does not bring it back into working memory.
            if hit.about {
                let index = self.efforts.index[&hit.id];
                self.restore_to_memory(index);
                self.touch(index);
            }
        }
        Ok(found)
    }

    /// The ranking of [`Session::search_efforts`] without its effects: nothing counts as
    /// referenced and nothing returns to working memory. For views that let a person look
    /// through past efforts, and for measuring recall.
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word.
    pub fn find_efforts(&self, query: &str) -> Result<SearchResults, EffortError> {
        let empty = || EffortError::EmptyQuery {
            query: query.to_string(),
        };
        let seed = self.config.search_rule == crate::config::SearchRule::Seed;
        let ranked = if seed {
            self.seed_search(query).ok_or_else(empty)?
        } else {
            self.efforts
                .search
                .search(query, &self.efforts.index, Session::SEARCH_LIMIT)
                .ok_or_else(empty)?
        };
        let results = ranked
            .into_iter()
            .map(|hit| {
                let effort = self.efforts.at(hit.effort);
                SearchHit {
                    id: effort.id.clone(),
                    name: effort.name.clone(),
                    state: self.efforts.state_of(hit.effort),
                    summary: effort
                        .summary
                        .as_ref()
                        .map(|s| s.text.clone())
                        .unwrap_or_default(),
                    score: hit.score,
                    matched: hit.matched,
                    about: hit.described,
                    raw_tokens: effort.raw_tokens,
                }
            })
            .collect();
        Ok(SearchResults {
            query: query.to_string(),
            results,
            // The specification's search returns summaries only.
            evidence: if seed {
                Default::default()
            } else {
                self.evidence_of(query)
            },
        })
    }

    /// The specification's search (slice 4, `SearchRule::Seed`): the concluded efforts whose
    /// id the query mentions or whose summary shares at least `min_keyword_overlap` of its
    /// keywords with the query (the reference check of slice 3), ranked by the keywords shared,
    /// an id mention first, the most recently concluded first among equals. `None` when the
    /// query has no word.
    fn seed_search(&self, query: &str) -> Option<Vec<crate::search::RankedHit>> {
        let prepared = text::PreparedText::new(query);
        // A query without a word cannot overlap anything.
        prepared.words().next()?;
        let min_overlap = self.config.min_keyword_overlap as usize;
        let mut hits: Vec<(crate::search::RankedHit, u64)> = self
            .efforts
            .search
            .efforts()
            .filter_map(|index| {
                let effort = self.efforts.at(index);
                let keywords = effort.summary.as_ref().map_or(&[][..], |s| &s.keywords[..]);
                let mut matched: Vec<String> =
                    prepared.shared_keywords(keywords).cloned().collect();
                let names_id = prepared.mentions_id(&effort.id);
                if !names_id && matched.len() < min_overlap {
                    return None;
                }
                let mut score = matched.len() as f64;
                if names_id {
                    // An id outranks any overlap, as in the ranked search.
                    score += 1_000.0;
                    matched.push(effort.id.clone());
                }
                matched.sort();
                matched.dedup();
                let hit = crate::search::RankedHit {
                    effort: index,
                    score,
                    matched,
                    described: true,
                };
                Some((hit, effort.concluded_seq.unwrap_or(0)))
            })
            .collect();
        hits.sort_by(|a, b| b.0.score.total_cmp(&a.0.score).then(b.1.cmp(&a.1)));
        Some(
            hits.into_iter()
                .take(Session::SEARCH_LIMIT)
                .map(|(hit, _)| hit)
                .collect(),
        )
    }
}

fn state_word(state: EffortState) -> &'static str {
    match state {
        EffortState::Active => "open and active",
        EffortState::Open => "open",
        EffortState::Expanded => "concluded and expanded",
        EffortState::Concluded => "concluded",
        EffortState::Evicted => "concluded, out of working memory",
    }
}
