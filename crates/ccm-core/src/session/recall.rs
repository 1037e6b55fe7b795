//! Recall inside the session: every stored text indexed as it is stored, the evidence of a
//! search, the `recall` tool (excerpts brought into the context until they decay), the
//! automatic recall for the message being answered, and the rebuild of the index of a session
//! opened from a store.

use super::{EffortState, Session};
use crate::components::recall::IndexRequest;
use crate::components::recall::{
    AutoRecall, Focused, IndexState, LeftOut, Scope, ShownExcerpt, TextSources,
};
use crate::config::ContextMode;
use crate::error::EffortError;
use crate::model::{EffortStatus, LogRef, Message, Role};
use crate::persistence::StoredMessage;
use crate::recall::{analyzer, evidence, NewDoc, Query, Scored, Source};
use crate::tools::Needs;
use serde::Serialize;
use std::collections::BTreeSet;

/// Most hits a search or a `recall` call ranks before it chooses what to show.
const SEARCH_HITS: usize = 200;
/// Most hits the automatic recall considers.
const AUTO_HITS: usize = 60;
/// Words of the user's message said in more stored messages than this are left out of the
/// automatic recall's query. It runs for every message, so its cost must not grow with the
/// history; a word that common cannot single out what the message is about, as
/// [`crate::plan::AUTO_MAX_POSTINGS`] does for efforts.
pub const AUTO_MAX_MESSAGES_PER_WORD: usize = 1_024;
/// Excerpts that matched but did not fit, listed in the plan as excluded.
const LEFT_OUT_LISTED: usize = 8;
/// Tokens a message costs in a search result beyond its own: its role and the JSON around it.
const EVIDENCE_MESSAGE_OVERHEAD: u64 = 4;

/// One message of the evidence a search or a recall shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceMessage {
    /// Its sequence number.
    pub seq: u64,
    /// Who wrote it (`user` for an attachment's passage).
    pub role: Role,
    /// The turn it was stored in.
    pub turn: u64,
    /// When it was stored (milliseconds since the Unix epoch; 0 when the host passed none).
    pub at_ms: u64,
    /// The text exactly as stored.
    pub text: String,
}

/// Neighbouring messages of one log, shown together: a matching message with the one before
/// and after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceExcerpt {
    /// Its id in a context plan: `recall:<seq>` after its first message.
    pub id: String,
    /// The turn of its first message.
    pub turn: u64,
    /// The day its first message was stored, as `8 May 2023` (UTC), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Relevance of its best message; comparable within one search.
    pub score: f64,
    /// The query words it matched, sorted.
    pub matched: Vec<String>,
    /// Its messages, in order.
    pub messages: Vec<EvidenceMessage>,
    /// Tokens it takes, its header line included.
    pub tokens: u64,
}

/// Where a group of evidence is stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvidenceLog {
    /// An effort's raw log.
    Effort {
        /// The effort's id.
        id: String,
        /// Its name.
        name: String,
        /// Where it is now.
        state: EffortState,
    },
    /// The ambient log.
    Ambient,
    /// An attachment's text.
    Attachment {
        /// The attachment's id.
        id: String,
        /// Its file name or label.
        name: String,
    },
}

/// The excerpts of one log, in the order they were said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceGroup {
    /// Where they are stored.
    pub log: EvidenceLog,
    /// The excerpts.
    pub excerpts: Vec<EvidenceExcerpt>,
}

/// What a search of every stored message found within the evidence budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// The groups, the one with the best match first.
    pub groups: Vec<EvidenceGroup>,
    /// Tokens of everything shown.
    pub tokens: u64,
    /// Matching messages not shown: over the budget, or already in the context.
    pub more: u64,
    /// Whether the index of a session opened from a store is still being rebuilt, so older
    /// messages may be missing from the result.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

/// What one `recall` call brought into the context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recalled {
    /// The query as given.
    pub query: String,
    /// The excerpts now in the context, as the context shows them.
    pub excerpts: Vec<EvidenceGroup>,
    /// Tokens they add to the context.
    pub tokens_loaded: u64,
    /// Turns they stay without a reference.
    pub turns_until_auto_collapse: u64,
}

/// Texts to embed for recall (see [`Session::recall_embedding_batch`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecallEmbeddingBatch {
    /// The model the session keeps vectors of.
    pub model: String,
    /// The query, when the batch embeds one (its text is `texts[0]`).
    pub query: Option<String>,
    /// The texts, in order: the query's first when there is one, then the stored texts.
    pub texts: Vec<String>,
    /// The stored texts' keys, `(seq, part)`, in order after the query.
    pub keys: Vec<(u64, u32)>,
}

impl Session {
    // ----- indexing ----------------------------------------------------------------------

    /// Indexes a stored message and the passages of the attachments that came with it.
    fn index_message(&mut self, source: Source, message: &Message) {
        let terms = analyzer::analyze(&message.content);
        self.recall.index.add(
            NewDoc {
                seq: message.seq,
                part: 0,
                source,
                tokens: message.tokens,
                turn: message.turn,
                at_ms: message.at_ms,
            },
            &terms,
        );
        let attachments: Vec<(u32, String, u64)> = self
            .attachments
            .of_message(message.seq)
            .into_iter()
            .map(|(number, a)| (number, a.attachment.full_text.clone(), a.message_turn))
            .collect();
        // Parts number on across the message's attachments (see `Attachments::first_part`).
        let mut next_part = 1u32;
        for (number, text, turn) in attachments {
            for range in crate::recall::passages(&text) {
                let passage_text = &text[range];
                let tokens = self.counter.count(passage_text);
                self.recall.index.add(
                    NewDoc {
                        seq: message.seq,
                        part: next_part,
                        source: Source::Attachment(number),
                        tokens,
                        turn,
                        at_ms: message.at_ms,
                    },
                    &analyzer::analyze(passage_text),
                );
                next_part += 1;
            }
        }
    }

    /// Indexes the exchange a turn just stored (its attachments filed).
    pub(super) fn index_exchange(&mut self, log: &LogRef, user: u64) {
        if self.recall.state != IndexState::Complete {
            // The rebuild reaches these messages from memory when it is done.
            return;
        }
        let Some(source) = self.efforts.source_of(log) else {
            return;
        };
        for seq in [user, user + 1] {
            if let Some(message) = self.text_sources().message(source, seq).cloned() {
                self.index_message(source, &message);
            }
        }
    }

    /// Indexes every message in memory with a sequence number of `from` or more, in order:
    /// the whole history of a session built in memory or imported, or what was stored since
    /// a stored session was opened.
    pub(crate) fn index_messages_in_memory(&mut self, from: u64) {
        let mut messages: Vec<(Source, Message)> = Vec::new();
        for (index, effort) in self.efforts.all().iter().enumerate() {
            let start = effort.messages.partition_point(|m| m.seq < from);
            messages.extend(
                effort.messages[start..]
                    .iter()
                    .map(|m| (Source::Effort(index as u32), m.clone())),
            );
        }
        let start = self.ambient.messages().partition_point(|m| m.seq < from);
        messages.extend(
            self.ambient.messages()[start..]
                .iter()
                .map(|m| (Source::Ambient, m.clone())),
        );
        messages.sort_by_key(|(_, m)| m.seq);
        for (source, message) in messages {
            self.index_message(source, &message);
        }
    }

    /// Indexes the stored messages a host read for `request` (the messages of its range, any
    /// order; missing ones are skipped and reported). Returns a sentence per problem.
    ///
    /// # Errors
    /// [`crate::SnapshotError::Inconsistent`] when `request` is not the current step.
    pub fn index_stored_messages(
        &mut self,
        request: IndexRequest,
        mut messages: Vec<StoredMessage>,
    ) -> Result<Vec<String>, crate::SnapshotError> {
        if self.recall.index_request() != Some(request) {
            return Err(crate::SnapshotError::Inconsistent(format!(
                "the recall index asked for messages {}..{}, not {}..{}",
                self.recall.index_request().map_or(0, |r| r.from_seq),
                self.recall.index_request().map_or(0, |r| r.to_seq),
                request.from_seq,
                request.to_seq
            )));
        }
        messages.sort_by_key(|m| m.message.seq);
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for stored in &messages {
            let seq = stored.message.seq;
            if seq < request.from_seq || seq >= request.to_seq || !seen.insert(seq) {
                problems.push(format!(
                    "message {seq} was read for the recall index but is not one of messages {}..{}, or was read twice; it is not indexed",
                    request.from_seq, request.to_seq
                ));
                continue;
            }
            match self.efforts.source_of(&stored.log) {
                Some(source) => self.index_message(source, &stored.message),
                None => problems.push(format!(
                    "message {seq} belongs to an effort that could not be read; it stays stored but cannot be found by search"
                )),
            }
        }
        let missing = (request.to_seq - request.from_seq) - seen.len() as u64;
        if missing > 0 {
            problems.push(format!(
                "{missing} of the stored messages {}..{} could not be read for the recall index; search cannot find them",
                request.from_seq, request.to_seq
            ));
        }
        let IndexState::Building { until, .. } = self.recall.state else {
            unreachable!("checked against the current request above");
        };
        if request.to_seq >= until {
            self.recall.state = IndexState::Complete;
            self.index_messages_in_memory(until);
        } else {
            self.recall.state = IndexState::Building {
                next: request.to_seq,
                until,
            };
        }
        // The index grew: the message of a turn in progress is ranked again.
        self.recall.auto = None;
        self.refresh_auto_recall();
        Ok(problems)
    }

    /// Starts the rebuild of the index of a session opened from a store.
    pub(crate) fn start_index_rebuild(&mut self) {
        self.recall.index = crate::recall::RecallIndex::default();
        self.recall.state = if self.next_seq == 0 {
            IndexState::Complete
        } else {
            IndexState::Building {
                next: 0,
                until: self.next_seq,
            }
        };
    }

    // ----- what is in the context ----------------------------------------------------------

    /// Where the included part of the ambient window starts, by sequence number.
    fn ambient_window_start_seq(&self) -> u64 {
        let start = self.ambient_window_bounds().1;
        self.ambient
            .messages()
            .get(start)
            .map_or(self.next_seq, |m| m.seq)
    }

    /// Whether a document is shown in the working context already (an open or expanded log,
    /// the ambient window, an attachment of the working set in full).
    fn in_working_memory(&self, doc: &crate::recall::Doc, ambient_start: u64) -> bool {
        match doc.source {
            Source::Ambient => doc.seq >= ambient_start,
            Source::Effort(index) => {
                let index = index as usize;
                self.efforts.all().get(index).is_some_and(|e| {
                    e.status == EffortStatus::Open || self.efforts.is_expanded(index)
                })
            }
            Source::Attachment(number) => {
                self.attachments
                    .by_id()
                    .get(&format!("att-{number}"))
                    .is_some_and(|a| a.attachment.mode == crate::compaction::AttachmentMode::Full)
                    && self
                        .attachments_in_working_set()
                        .contains(&format!("att-{number}"))
            }
        }
    }

    fn text_sources(&self) -> TextSources<'_> {
        TextSources {
            efforts: &self.efforts,
            ambient: &self.ambient,
            attachments: &self.attachments,
            loaded: &self.recall.loaded,
        }
    }

    // ----- selection -----------------------------------------------------------------------

    /// The header line of an excerpt that starts at `doc`.
    fn excerpt_header(&self, doc: &crate::recall::Doc) -> String {
        let when = crate::recall::format_date(u64::from(doc.at_minutes) * 60_000)
            .map(|date| format!(" · {date}"))
            .unwrap_or_default();
        match doc.source {
            Source::Ambient => format!("[Recalled from earlier chat{when}]"),
            Source::Effort(index) => {
                let id = self
                    .efforts
                    .all()
                    .get(index as usize)
                    .map_or("?", |e| e.id.as_str());
                format!("[Recalled from effort {id}{when}]")
            }
            Source::Attachment(number) => {
                let name = self
                    .attachments
                    .by_id()
                    .get(&format!("att-{number}"))
                    .map_or("?", |a| a.attachment.name.as_str());
                format!("[Recalled from attachment {name} (att-{number}){when}]")
            }
        }
    }

    /// Chooses the excerpts of `hits` that fit `budget`, skipping documents for which
    /// `skip` holds, and describes them as the context shows them.
    fn choose(
        &self,
        query: &Query,
        hits: &[Scored],
        budget: u64,
        per_message: u64,
        skip: &dyn Fn(u32) -> bool,
    ) -> (Vec<ShownExcerpt>, evidence::Selection) {
        let index = &self.recall.index;
        // The selection prices every trial with the headers of all its excerpts: each header is
        // counted once.
        let headers: std::cell::RefCell<std::collections::HashMap<u32, u64>> = Default::default();
        let header_tokens = |d: u32| {
            *headers.borrow_mut().entry(d).or_insert_with(|| {
                let header = self.excerpt_header(index.doc(d));
                u64::from(
                    self.recall
                        .header_counts
                        .count(&header, self.counter.as_ref()),
                )
            })
        };
        let selection = evidence::select(
            index,
            hits,
            budget,
            |d| !skip(d),
            header_tokens,
            per_message,
            LEFT_OUT_LISTED,
        );
        let shown = selection
            .excerpts
            .iter()
            .map(|excerpt| {
                let first = index.doc(excerpt.docs[0]);
                let header = self.excerpt_header(first);
                let header_tokens = header_tokens(excerpt.docs[0]);
                let keys: Vec<(u64, u32)> = excerpt
                    .docs
                    .iter()
                    .map(|&d| (index.doc(d).seq, index.doc(d).part))
                    .collect();
                let tokens = header_tokens
                    + excerpt
                        .docs
                        .iter()
                        .map(|&d| u64::from(index.doc(d).tokens) + per_message)
                        .sum::<u64>();
                ShownExcerpt {
                    id: excerpt_id(first.seq, first.part),
                    source: excerpt.source,
                    keys,
                    header,
                    tokens,
                    score: excerpt.score,
                    matched: query.words(excerpt.matched),
                }
            })
            .collect();
        (shown, selection)
    }

    /// The documents a search shows nothing of: what the context already shows (with
    /// `with_auto`, the automatic recall's excerpts too).
    fn shown_in_context(&self, with_auto: bool) -> impl Fn(u32) -> bool + '_ {
        let ambient_start = self.ambient_window_start_seq();
        let recalled = self.recall.recalled_keys(with_auto);
        move |d: u32| {
            let doc = self.recall.index.doc(d);
            self.in_working_memory(doc, ambient_start) || recalled.contains(&(doc.seq, doc.part))
        }
    }

    /// The evidence of a query: the best excerpts of every stored text that the context does
    /// not show yet, within the evidence budget. A search leaves out what the automatic recall
    /// shows in this request; a `recall` does not, since it is how the model keeps such an
    /// excerpt beyond the request.
    fn evidence_for(
        &self,
        query: &Query,
        scope: Scope,
        for_recall: bool,
    ) -> (Vec<ShownExcerpt>, Evidence) {
        let hits = self
            .recall
            .rank(query, scope, usize::MAX, SEARCH_HITS, true);
        let skip = self.shown_in_context(!for_recall);
        let budget = u64::from(self.config.evidence_token_budget);
        let (shown, selection) =
            self.choose(query, &hits, budget, EVIDENCE_MESSAGE_OVERHEAD, &skip);
        let shown_docs: BTreeSet<u32> = selection
            .excerpts
            .iter()
            .flat_map(|e| e.docs.iter().copied())
            .collect();
        let more = hits.iter().filter(|h| !shown_docs.contains(&h.doc)).count() as u64;
        let evidence = Evidence {
            groups: self.groups_of(&shown),
            tokens: selection.tokens,
            more,
            incomplete: !self.recall.index_complete(),
        };
        (shown, evidence)
    }

    /// Excerpts as evidence groups, one per log, in the order given.
    fn groups_of(&self, shown: &[ShownExcerpt]) -> Vec<EvidenceGroup> {
        let texts = self.text_sources();
        let mut groups: Vec<EvidenceGroup> = Vec::new();
        for excerpt in shown {
            let messages: Vec<EvidenceMessage> = excerpt
                .keys
                .iter()
                .filter_map(|&key| {
                    let text = texts.text(excerpt.source, key)?;
                    Some(EvidenceMessage {
                        seq: key.0,
                        role: text.role,
                        turn: text.turn,
                        at_ms: text.at_ms,
                        text: text.text.to_string(),
                    })
                })
                .collect();
            let first_doc = self
                .recall
                .index
                .message_doc(excerpt.keys[0].0)
                .map(|d| *self.recall.index.doc(d));
            let at = first_doc
                .and_then(|d| crate::recall::format_date(u64::from(d.at_minutes) * 60_000));
            let item = EvidenceExcerpt {
                id: excerpt.id.clone(),
                turn: messages.first().map_or(0, |m| m.turn),
                date: at,
                score: excerpt.score,
                matched: excerpt.matched.clone(),
                messages,
                tokens: excerpt.tokens,
            };
            let log = self.evidence_log(excerpt.source);
            match groups.last_mut() {
                Some(group) if group.log == log => group.excerpts.push(item),
                _ => groups.push(EvidenceGroup {
                    log,
                    excerpts: vec![item],
                }),
            }
        }
        groups
    }

    fn evidence_log(&self, source: Source) -> EvidenceLog {
        match source {
            Source::Ambient => EvidenceLog::Ambient,
            Source::Effort(index) => {
                let index = index as usize;
                let effort = self.efforts.at(index);
                EvidenceLog::Effort {
                    id: effort.id.clone(),
                    name: effort.name.clone(),
                    state: self.efforts.state_of(index),
                }
            }
            Source::Attachment(number) => {
                let id = format!("att-{number}");
                let name = self
                    .attachments
                    .by_id()
                    .get(&id)
                    .map(|a| a.attachment.name.clone())
                    .unwrap_or_default();
                EvidenceLog::Attachment { id, name }
            }
        }
    }

    // ----- searching -----------------------------------------------------------------------

    /// The best excerpts of every stored message (effort logs, the ambient log, attachments)
    /// for `query` that the context does not show yet, within the configured
    /// `evidence_token_budget`, grouped by log. Changes nothing.
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word.
    pub fn find_messages(&self, query: &str) -> Result<Evidence, EffortError> {
        let prepared = Query::new(query);
        if prepared.is_empty() {
            return Err(EffortError::EmptyQuery {
                query: query.to_string(),
            });
        }
        Ok(self.evidence_for(&prepared, Scope::Everywhere, false).1)
    }

    /// The stored messages a tool call would show that are not in memory (their logs are not
    /// loaded), for a tool whose table entry needs [`Needs::FoundMessages`] or
    /// [`Needs::RecalledMessages`]: a host that opened the session from a store reads them and hands them to
    /// [`Session::attach_recalled_messages`] before executing the call.
    pub fn messages_needed_for_tool(&self, name: &str, args_json: &str) -> Vec<u64> {
        let args = serde_json::from_str::<serde_json::Value>(args_json).unwrap_or_default();
        let Some(query) = args.get("query").and_then(|q| q.as_str()) else {
            return Vec::new();
        };
        let prepared = Query::new(query);
        let needs = crate::tools::needs_of(name);
        let scope = match needs {
            Needs::FoundMessages => Scope::Everywhere,
            Needs::RecalledMessages => {
                match Scope::of(&self.efforts, args.get("effort").and_then(|e| e.as_str())) {
                    Ok(scope) => scope,
                    Err(_) => return Vec::new(),
                }
            }
            _ => return Vec::new(),
        };
        let (shown, _) = self.evidence_for(&prepared, scope, needs == Needs::RecalledMessages);
        self.missing_texts(&shown)
    }

    /// The stored messages the next plan shows but does not have in memory (automatic recall
    /// of a session opened from a store): read them and hand them to
    /// [`Session::attach_recalled_messages`] before planning the request.
    pub fn messages_needed_for_plan(&self) -> Vec<u64> {
        let mut shown: Vec<ShownExcerpt> = self
            .recall
            .focused
            .iter()
            .map(|f| f.excerpt.clone())
            .collect();
        if let Some(auto) = &self.recall.auto {
            shown.extend(auto.excerpts.iter().cloned());
        }
        self.missing_texts(&shown)
    }

    fn missing_texts(&self, shown: &[ShownExcerpt]) -> Vec<u64> {
        let texts = self.text_sources();
        let mut missing: BTreeSet<u64> = BTreeSet::new();
        for excerpt in shown {
            if matches!(excerpt.source, Source::Attachment(_)) {
                continue;
            }
            for &(seq, _) in &excerpt.keys {
                if texts.message(excerpt.source, seq).is_none() {
                    missing.insert(seq);
                }
            }
        }
        missing.into_iter().collect()
    }

    /// Takes in stored messages read back for recall (see
    /// [`Session::messages_needed_for_tool`] and [`Session::messages_needed_for_plan`]). They
    /// are kept while an excerpt shows them; loading changes nothing else.
    ///
    /// # Errors
    /// [`crate::SnapshotError::Inconsistent`] for a message the index does not know, or one
    /// whose log or role does not match it (nothing is taken in then).
    pub fn attach_recalled_messages(
        &mut self,
        messages: Vec<StoredMessage>,
    ) -> Result<(), crate::SnapshotError> {
        for stored in &messages {
            let seq = stored.message.seq;
            let known = self
                .recall
                .index
                .message_doc(seq)
                .map(|d| self.recall.index.doc(d).source);
            if known.is_none()
                || known != self.efforts.source_of(&stored.log)
                || stored.message.role == Role::System
            {
                return Err(crate::SnapshotError::Inconsistent(format!(
                    "message {seq} read back for recall is not a stored message of the log it claims"
                )));
            }
        }
        // Reading back is not a change of state: the plan's key does not change either, since
        // a plan that named these messages could not show them before and is built again.
        for stored in messages {
            self.recall
                .loaded
                .insert(stored.message.seq, stored.message);
        }
        Ok(())
    }

    /// Ranks as `search_efforts` does and adds the evidence: the best excerpts of every stored
    /// message. For [`Session::find_efforts`].
    pub(super) fn evidence_of(&self, query: &str) -> Evidence {
        self.evidence_for(&Query::new(query), Scope::Everywhere, false)
            .1
    }

    // ----- embeddings ------------------------------------------------------------------------

    /// The texts to embed for recall, when embeddings are on ([`Session::enable_embeddings`]):
    /// `query` first (when given and not embedded yet), then up to `max_texts` stored texts
    /// without a vector, the newest first, of those in memory. `None` when embeddings are off
    /// or there is nothing to embed. The host sends the texts to the embeddings endpoint and
    /// hands the vectors to [`Session::absorb_recall_embeddings`]; until then, and for texts
    /// that never get one, recall ranks by words alone.
    pub fn recall_embedding_batch(
        &self,
        query: Option<&str>,
        max_texts: usize,
    ) -> Option<RecallEmbeddingBatch> {
        let vectors = self.recall.vectors.as_ref()?;
        let query = query
            .filter(|q| !q.trim().is_empty())
            .filter(|q| vectors.query.as_ref().is_none_or(|(text, _)| text != q))
            .map(str::to_string);
        let texts = self.text_sources();
        let mut keys = Vec::new();
        let mut batch_texts: Vec<String> = query.iter().cloned().collect();
        // Once every text has its vector there is nothing to look for: a host that refreshes
        // before every message must not walk the whole index each time.
        let docs = match self.recall.texts_without_vectors() {
            0 => &[][..],
            _ => self.recall.index.docs(),
        };
        for doc in docs.iter().rev() {
            if keys.len() >= max_texts {
                break;
            }
            let key = (doc.seq, doc.part);
            if vectors.by_key.contains_key(&key) {
                continue;
            }
            if let Some(text) = texts.text(doc.source, key) {
                keys.push(key);
                batch_texts.push(text.text.to_string());
            }
        }
        if batch_texts.is_empty() {
            return None;
        }
        Some(RecallEmbeddingBatch {
            model: vectors.model.clone(),
            query,
            texts: batch_texts,
            keys,
        })
    }

    /// Keeps the vectors of `batch`'s texts (in order: the query's first, when it has one). The
    /// automatic recall of a turn in progress is ranked again with them. Nothing is kept
    /// unless every vector is usable.
    ///
    /// # Errors
    /// [`crate::compaction::EmbeddingError`] when embeddings are off or are of another model,
    /// the count of vectors differs from the texts', or a vector has another length than the
    /// others or a value that is not a finite number.
    pub fn absorb_recall_embeddings(
        &mut self,
        batch: &RecallEmbeddingBatch,
        vectors: Vec<Vec<f32>>,
    ) -> Result<(), crate::compaction::EmbeddingError> {
        use crate::compaction::EmbeddingError;
        let kept = self.recall.vectors.as_ref().ok_or_else(|| {
            EmbeddingError::InvalidConfig("embeddings are not enabled for this session".into())
        })?;
        if kept.model != batch.model {
            return Err(EmbeddingError::InvalidConfig(format!(
                "the vectors are of model '{}' but the session keeps vectors of '{}'; enable embeddings anew to change models",
                batch.model, kept.model
            )));
        }
        if vectors.len() != batch.texts.len() {
            return Err(EmbeddingError::CountMismatch {
                expected: batch.texts.len(),
                got: vectors.len(),
            });
        }
        let dimensions = kept
            .dimensions
            .or(vectors.first().map(Vec::len))
            .unwrap_or(0);
        let mut units = Vec::with_capacity(vectors.len());
        for (position, vector) in vectors.iter().enumerate() {
            let place = || match (&batch.query, position) {
                (Some(_), 0) => "query".to_string(),
                _ => format!("index {position}"),
            };
            if vector.len() != dimensions {
                return Err(EmbeddingError::DimensionMismatch {
                    position: place(),
                    expected: dimensions,
                    got: vector.len(),
                });
            }
            let norm = vector
                .iter()
                .map(|x| f64::from(*x) * f64::from(*x))
                .sum::<f64>()
                .sqrt();
            if vector.is_empty() || !norm.is_finite() || norm == 0.0 {
                return Err(EmbeddingError::BadVector {
                    position: place(),
                    reason: "it is empty, zero, or holds a value that is not a finite number"
                        .to_string(),
                });
            }
            units.push(
                vector
                    .iter()
                    .map(|x| (f64::from(*x) / norm) as f32)
                    .collect::<Vec<f32>>(),
            );
        }
        let mut units = units.into_iter();
        let recall = &mut *self.recall;
        let kept = recall.vectors.as_mut().expect("checked above");
        kept.dimensions = Some(dimensions);
        if let Some(query) = &batch.query {
            let unit = units.next().expect("one vector per text");
            kept.query = Some((query.clone(), unit));
        }
        for (key, unit) in batch.keys.iter().zip(units) {
            let bytes = unit
                .iter()
                .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
                .collect();
            kept.by_key.insert(*key, bytes);
        }
        // The ranking of a message being answered changes with its vector.
        recall.auto = None;
        self.refresh_auto_recall();
        Ok(())
    }

    // ----- the recall tool -----------------------------------------------------------------

    /// Brings the excerpts of stored messages that best match `query` into the context (within
    /// the evidence budget): each matching message with its neighbours, not whole logs. They
    /// stay until they go `decay_threshold` turns without a reference (their effort's id, or
    /// two of their words), like an expanded effort. `effort` limits the search to one
    /// effort's log (or `ambient`).
    ///
    /// # Errors
    /// [`EffortError::EmptyQuery`] when the query has no searchable word, or nothing outside
    /// the context matches it; [`EffortError::UnknownEffort`] for an unknown `effort`.
    pub fn recall(&mut self, query: &str, effort: Option<&str>) -> Result<Recalled, EffortError> {
        let prepared = Query::new(query);
        if prepared.is_empty() {
            return Err(EffortError::EmptyQuery {
                query: query.to_string(),
            });
        }
        let scope = Scope::of(&self.efforts, effort)?;
        let (shown, _) = self.evidence_for(&prepared, scope, true);
        if shown.is_empty() {
            return Err(EffortError::NothingToRecall {
                query: query.to_string(),
            });
        }
        let missing = self.missing_texts(&shown);
        if !missing.is_empty() {
            return Err(EffortError::MessagesNotLoaded {
                count: missing.len(),
            });
        }
        let texts = self.text_sources();
        let turn = self.turn;
        let focused: Vec<Focused> = shown
            .iter()
            .map(|excerpt| {
                let mut terms: Vec<String> = excerpt
                    .keys
                    .iter()
                    .filter_map(|&key| texts.text(excerpt.source, key))
                    .flat_map(|t| analyzer::analyze(t.text))
                    .collect();
                terms.sort();
                terms.dedup();
                Focused {
                    excerpt: excerpt.clone(),
                    query: query.to_string(),
                    recalled_turn: turn,
                    last_referenced_turn: turn,
                    terms,
                }
            })
            .collect();
        let tokens_loaded: u64 = shown.iter().map(|e| e.tokens).sum();
        let report = Recalled {
            query: query.to_string(),
            excerpts: self.groups_of(&shown),
            tokens_loaded,
            turns_until_auto_collapse: u64::from(self.config.decay_threshold),
        };
        let labels: BTreeSet<String> = shown
            .iter()
            .map(|e| self.efforts.source_label(e.source))
            .collect();
        self.backup_focused();
        self.recall.focused.extend(focused);
        for source in shown.iter().map(|e| e.source) {
            if let Source::Effort(index) = source {
                self.touch(index as usize);
            }
        }
        let count = shown.len();
        self.record(
            format!(
                "--- Recalled {count} excerpt{} from {} ({tokens_loaded} tokens loaded) ---",
                if count == 1 { "" } else { "s" },
                labels.into_iter().collect::<Vec<_>>().join(", ")
            ),
            crate::metrics::EffortEvent::new(
                crate::metrics::EventKind::Recalled,
                "recall",
                tokens_loaded,
            ),
        );
        Ok(report)
    }

    /// Records the recalled excerpts before a turn's first change to them, so `abort_turn`
    /// and a rewind put them back.
    fn backup_focused(&mut self) {
        let focused = self.recall.focused.clone();
        if let Some(state) = &mut self.turn_state {
            if state.undo.recall_focused.is_none() {
                state.undo.recall_focused = Some(focused);
            }
        }
    }

    /// After a turn: a recalled excerpt referred to (its effort, or two of its words in the
    /// turn's messages) stays; one unreferenced for `decay_threshold` turns leaves the context.
    pub(super) fn decay_recalled(
        &mut self,
        turn_texts: [&str; 2],
        referenced: &BTreeSet<usize>,
        touched: &BTreeSet<usize>,
        banners: &mut Vec<String>,
        events: &mut Vec<crate::metrics::EffortEvent>,
    ) {
        if self.recall.focused.is_empty() {
            return;
        }
        let turn_terms: BTreeSet<String> = turn_texts
            .iter()
            .flat_map(|text| analyzer::analyze(text))
            .collect();
        self.backup_focused();
        let turn = self.turn;
        let threshold = u64::from(self.config.decay_threshold);
        let min_overlap = self.config.min_keyword_overlap as usize;
        let mut kept = Vec::with_capacity(self.recall.focused.len());
        for mut focused in std::mem::take(&mut self.recall.focused) {
            let by_effort = match focused.excerpt.source {
                Source::Effort(index) => {
                    referenced.contains(&(index as usize)) || touched.contains(&(index as usize))
                }
                _ => false,
            };
            let shared = focused
                .terms
                .iter()
                .filter(|t| turn_terms.contains(*t))
                .count();
            if by_effort || shared >= min_overlap {
                focused.last_referenced_turn = turn;
            }
            let idle = turn - focused.last_referenced_turn;
            if idle >= threshold {
                banners.push(format!(
                    "--- Auto-collapsed recall: {} (inactive for {idle} turns) ---",
                    focused.excerpt.id
                ));
                events.push(crate::metrics::EffortEvent::new(
                    crate::metrics::EventKind::RecallDecayed,
                    &focused.excerpt.id,
                    focused.excerpt.tokens,
                ));
            } else {
                kept.push(focused);
            }
        }
        self.recall.focused = kept;
    }

    // ----- automatic recall ----------------------------------------------------------------

    /// The automatic recall for the user message of the turn in progress: in Light and Heavy
    /// modes, the excerpts of stored messages outside the context that best match it, within
    /// `recall_token_budget` (twice that in Heavy mode). The ranking is made once per message;
    /// a change of the working set (a tool call in the turn) only chooses again.
    pub(crate) fn refresh_auto_recall(&mut self) {
        let budget = match self.config.context_mode {
            ContextMode::Off => 0,
            ContextMode::Light => u64::from(self.config.recall_token_budget),
            ContextMode::Heavy => 2 * u64::from(self.config.recall_token_budget),
        };
        let Some(text) = self
            .pending_user_message()
            .map(|(text, _)| text.to_string())
        else {
            if self.recall.auto.is_some() {
                self.recall.auto = None;
            }
            return;
        };
        if budget == 0 {
            if self.recall.auto.is_some() {
                self.recall.auto = None;
            }
            return;
        }
        let (query, hits) = match self.recall.auto.take() {
            Some(auto) => (auto.query, auto.hits),
            None => {
                let query = Query::new(&text);
                // A hit must share two of the message's words with its excerpt (one, for a
                // message of one word): a single common word is not a topic. The automatic
                // recall ranks by words alone, embeddings or not: on the LoCoMo conversations
                // fusing in the vectors of all-MiniLM-L6-v2 lowered it (README, "Recall"),
                // where the searches the model asks for gained.
                let needed = query.terms.len().min(2) as u32;
                let hits: Vec<Scored> = self
                    .recall
                    .rank(
                        &query,
                        Scope::Everywhere,
                        AUTO_MAX_MESSAGES_PER_WORD,
                        AUTO_HITS,
                        false,
                    )
                    .into_iter()
                    .filter(|h| h.matched.count_ones() >= needed)
                    .collect();
                (query, hits)
            }
        };
        let skip = {
            let ambient_start = self.ambient_window_start_seq();
            let recalled = self.recall.recalled_keys(false);
            move |session: &Session, d: u32| {
                let doc = session.recall.index.doc(d);
                session.in_working_memory(doc, ambient_start)
                    || recalled.contains(&(doc.seq, doc.part))
            }
        };
        let (excerpts, selection) = self.choose(&query, &hits, budget, 0, &|d| skip(self, d));
        let left_out = selection
            .left_out
            .iter()
            .map(|hit| {
                let doc = self.recall.index.doc(hit.doc);
                LeftOut {
                    id: excerpt_id(doc.seq, doc.part),
                    tokens: u64::from(doc.tokens),
                }
            })
            .collect();
        self.recall.auto = Some(AutoRecall {
            hits,
            query,
            excerpts,
            left_out,
        });
    }
}

/// The plan item id of an excerpt that starts at a document.
fn excerpt_id(seq: u64, part: u32) -> String {
    if part == 0 {
        format!("recall:{seq}")
    } else {
        format!("recall:{seq}.{part}")
    }
}

/// A group's log as the model reads it: `{"effort": id, "state": …}`, `{"log": "ambient"}`
/// or `{"attachment": id, "name": …}`.
fn log_for_model(log: &EvidenceLog) -> serde_json::Map<String, serde_json::Value> {
    let value = match log {
        EvidenceLog::Effort { id, state, .. } => {
            serde_json::json!({ "effort": id, "state": state })
        }
        EvidenceLog::Ambient => serde_json::json!({ "log": "ambient" }),
        EvidenceLog::Attachment { id, name } => {
            serde_json::json!({ "attachment": id, "name": name })
        }
    };
    match value {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("built as objects above"),
    }
}

impl Evidence {
    /// The evidence as the model reads it in a tool result: per log, excerpts with their turn
    /// and time, each message one line `role: text`. Compact, because every character of a
    /// tool result is read by the model and paid for.
    pub fn for_model(&self) -> serde_json::Value {
        let groups: Vec<serde_json::Value> = self
            .groups
            .iter()
            .map(|group| {
                let mut object = log_for_model(&group.log);
                let excerpts: Vec<serde_json::Value> = group
                    .excerpts
                    .iter()
                    .map(|excerpt| {
                        let mut item = serde_json::json!({});
                        if let Some(date) = &excerpt.date {
                            item["date"] = serde_json::json!(date);
                        }
                        item["lines"] = excerpt
                            .messages
                            .iter()
                            .map(|m| format!("{}: {}", m.role.as_str(), m.text))
                            .collect();
                        item
                    })
                    .collect();
                object.insert("excerpts".to_string(), excerpts.into());
                serde_json::Value::Object(object)
            })
            .collect();
        groups.into()
    }
}

impl super::SearchResults {
    /// The result as the model reads it: the matching efforts as [`super::SearchHit`]s, and
    /// the matching messages in the compact form of [`Evidence::for_model`].
    pub fn for_model(&self) -> serde_json::Value {
        // A summary is shown for efforts the query is about (their name or summary matched);
        // for an effort found only by words said in it, the messages below are the evidence.
        let results: Vec<serde_json::Value> = self
            .results
            .iter()
            .map(|hit| {
                let mut value = serde_json::to_value(hit).expect("search hits serialise");
                if !hit.about {
                    if let Some(object) = value.as_object_mut() {
                        object.remove("summary");
                    }
                }
                value
            })
            .collect();
        let mut value = serde_json::json!({
            "query": self.query,
            "results": results,
            "messages": self.evidence.for_model(),
        });
        if self.evidence.more > 0 {
            value["more_matching_messages"] = serde_json::json!(self.evidence.more);
        }
        if self.evidence.incomplete {
            value["note"] = serde_json::json!(
                "older messages are still being indexed; search again shortly for a complete result"
            );
        }
        value
    }
}

impl Recalled {
    /// The report as the model reads it: which excerpts are now in the context (their text is
    /// there, not repeated here) and what they cost.
    pub fn for_model(&self) -> serde_json::Value {
        let excerpts: Vec<serde_json::Value> = self
            .excerpts
            .iter()
            .flat_map(|group| {
                group.excerpts.iter().map(move |excerpt| {
                    let mut object = log_for_model(&group.log);
                    object.insert("turn".to_string(), excerpt.turn.into());
                    if let Some(date) = &excerpt.date {
                        object.insert("date".to_string(), date.clone().into());
                    }
                    object.insert("messages".to_string(), excerpt.messages.len().into());
                    serde_json::Value::Object(object)
                })
            })
            .collect();
        serde_json::json!({
            "query": self.query,
            "recalled": excerpts,
            "tokens_loaded": self.tokens_loaded,
            "turns_until_auto_collapse": self.turns_until_auto_collapse,
        })
    }
}
