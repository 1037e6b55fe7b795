//! Recall's part of a session: the full-text index of every stored text, the excerpts the
//! model recalled (which decay like expansions), the excerpts recalled automatically for the
//! message being answered, and the stored messages read back for them.

use super::ambient::Ambient;
use super::attachments::Attachments;
use super::efforts::Efforts;
use super::versioned::Versioned;
use crate::model::{LogState, Message, Role};
use crate::recall::{Query, RecallIndex, Scored, Source};
use std::collections::{BTreeMap, BTreeSet};

/// An excerpt as the context shows it: a header line, then its messages (or an attachment's
/// passages) in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShownExcerpt {
    /// The plan item id, `recall:<seq>` after the first message (`recall:<seq>.<passage>` for
    /// an attachment's passage).
    pub(crate) id: String,
    /// Where its texts are stored.
    pub(crate) source: Source,
    /// Its documents by key, `(seq, part)`, in order.
    pub(crate) keys: Vec<(u64, u32)>,
    /// The line shown before it.
    pub(crate) header: String,
    /// Tokens of the whole excerpt: header and texts.
    pub(crate) tokens: u64,
    /// The best score of a hit in it.
    pub(crate) score: f64,
    /// The query words its hits matched.
    pub(crate) matched: Vec<String>,
}

/// An excerpt the model brought into the context with the `recall` tool. It stays until it
/// goes `decay_threshold` turns without a reference, as an expanded effort does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Focused {
    pub(crate) excerpt: ShownExcerpt,
    /// The query it was recalled with.
    pub(crate) query: String,
    /// The turn it was recalled in.
    pub(crate) recalled_turn: u64,
    /// The last turn that referred to it (by its effort's id or two of its words).
    pub(crate) last_referenced_turn: u64,
    /// Its index terms, sorted and unique: what a message must share to refer to it.
    pub(crate) terms: Vec<String>,
}

/// An excerpt that matched but was not shown, with its size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LeftOut {
    pub(crate) id: String,
    pub(crate) tokens: u64,
}

/// The automatic recall for the user message being answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct AutoRecall {
    /// The ranking, kept so that a tool call that changes the working set in the turn only
    /// repeats the (cheap) selection.
    pub(crate) hits: Vec<Scored>,
    /// The words of the message each hit bit stands for.
    pub(crate) query: crate::recall::Query,
    /// What fits the recall budget, in context order.
    pub(crate) excerpts: Vec<ShownExcerpt>,
    /// What matched but did not fit.
    pub(crate) left_out: Vec<LeftOut>,
}

/// Whether the index holds every stored text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexState {
    /// Every stored text is indexed.
    Complete,
    /// A session opened from a store: its stored messages below `until` are read back in
    /// chunks (from `next` on); messages stored since the session was opened wait in memory
    /// until the index reaches them.
    Building { next: u64, until: u64 },
}

/// Token counts of excerpt headers. Every automatic recall prices its candidates with their
/// headers, and headers repeat (one per log and day), so each is counted once. A cache: it
/// never changes a result, only what a result costs to compute; behind a mutex so the session
/// stays `Sync`, as the plan cache does.
#[derive(Debug, Default)]
pub(crate) struct HeaderCounts(std::sync::Mutex<std::collections::HashMap<String, u32>>);

/// Headers kept at most; past it the cache starts again (a session with that many logs and
/// days does not come back to most of them).
const HEADER_COUNTS_KEPT: usize = 4_096;

impl Clone for HeaderCounts {
    fn clone(&self) -> HeaderCounts {
        let counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        HeaderCounts(std::sync::Mutex::new(counts))
    }
}

impl HeaderCounts {
    /// The tokens of `header` by `counter` (the session's one counter).
    pub(crate) fn count(&self, header: &str, counter: &dyn crate::tokens::TokenCounter) -> u32 {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&tokens) = counts.get(header) {
            return tokens;
        }
        if counts.len() >= HEADER_COUNTS_KEPT {
            counts.clear();
        }
        let tokens = counter.count(header);
        counts.insert(header.to_string(), tokens);
        tokens
    }
}

/// Embeddings of stored texts, for the semantic half of recall's ranking (when the host turned
/// embeddings on). Vectors are unit length and kept as signed bytes (each value times 127):
/// a quarter of the memory of `f32`, and a cosine that differs from the exact one by well
/// under what separates two hits.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RecallVectors {
    /// The model the vectors come from (vectors of two models are not comparable).
    pub(crate) model: String,
    /// Their length, once the first one arrived.
    pub(crate) dimensions: Option<usize>,
    /// Vectors by document key `(seq, part)`.
    pub(crate) by_key: BTreeMap<(u64, u32), Vec<i8>>,
    /// The last query embedded, and its unit vector.
    pub(crate) query: Option<(String, Vec<f32>)>,
}

/// Stored messages a host reads per step while the index of a session opened from a store is
/// rebuilt: a step costs about as much as opening a session does.
pub const INDEX_CHUNK: u64 = 2_000;

/// A step of the rebuild of the recall index of a session opened from a store: read the stored
/// messages with sequence numbers from `from_seq` up to (not including) `to_seq`, of every log,
/// and hand them to [`crate::Session::index_stored_messages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IndexRequest {
    /// The first sequence number to read.
    pub from_seq: u64,
    /// The end of the range (exclusive).
    pub to_seq: u64,
}

/// Recall's state in a session. Read it through [`crate::Session::recall_state`].
#[derive(Debug, Clone)]
pub struct Recall {
    pub(crate) index: RecallIndex,
    pub(crate) state: IndexState,
    /// Stored messages read back to show them (the logs they belong to are not loaded).
    pub(crate) loaded: BTreeMap<u64, Message>,
    /// Excerpts recalled with the `recall` tool, in the order they were recalled.
    pub(crate) focused: Vec<Focused>,
    /// The automatic recall of the turn in progress.
    pub(crate) auto: Option<AutoRecall>,
    /// Token counts of excerpt headers.
    pub(crate) header_counts: HeaderCounts,
    /// Embeddings of stored texts, when turned on.
    pub(crate) vectors: Option<RecallVectors>,
}

impl Default for Recall {
    fn default() -> Recall {
        Recall {
            index: RecallIndex::default(),
            state: IndexState::Complete,
            loaded: BTreeMap::new(),
            focused: Vec::new(),
            auto: None,
            header_counts: HeaderCounts::default(),
            vectors: None,
        }
    }
}

impl Recall {
    /// Bytes of memory the recall index holds, approximately (documents, postings and the
    /// dictionary): for measuring its cost per stored message.
    pub fn index_bytes(&self) -> usize {
        self.index.approximate_bytes()
    }

    /// Whether the recall index holds every stored text. A session opened from a store starts
    /// without it and is brought up to date with [`Recall::index_request`]; until then
    /// searches and the automatic recall see only what was indexed so far.
    pub fn index_complete(&self) -> bool {
        self.state == IndexState::Complete
    }

    /// The next step of the rebuild of the recall index, or `None` when it is complete. A host
    /// that opened the session from a store reads the stored messages of the range (every log)
    /// and hands them to [`crate::Session::index_stored_messages`]; each step reads at most
    /// [`INDEX_CHUNK`] messages.
    pub fn index_request(&self) -> Option<IndexRequest> {
        match self.state {
            IndexState::Complete => None,
            IndexState::Building { next, until } => Some(IndexRequest {
                from_seq: next,
                to_seq: until.min(next + INDEX_CHUNK),
            }),
        }
    }

    /// The documents shown in the context already by recall itself.
    pub(crate) fn recalled_keys(&self, with_auto: bool) -> BTreeSet<(u64, u32)> {
        let mut keys: BTreeSet<(u64, u32)> = self
            .focused
            .iter()
            .flat_map(|f| f.excerpt.keys.iter().copied())
            .collect();
        if with_auto {
            if let Some(auto) = &self.auto {
                keys.extend(auto.excerpts.iter().flat_map(|e| e.keys.iter().copied()));
            }
        }
        keys
    }

    /// The documents with vectors by cosine similarity to the query's vector, best first (ties:
    /// the newer document), at most `limit`; `None` without embeddings or a vector of this
    /// query.
    pub(crate) fn semantic_ranking(
        &self,
        query: &Query,
        limit: usize,
        accept: &dyn Fn(u32, &crate::recall::Doc) -> bool,
    ) -> Option<Vec<u32>> {
        let vectors = self.vectors.as_ref()?;
        let (text, unit) = vectors.query.as_ref()?;
        if *text != query.text {
            return None;
        }
        let index = &self.index;
        let mut scored: Vec<(f64, u32)> = Vec::new();
        for (&(seq, part), vector) in &vectors.by_key {
            let Some(doc) = index.doc_of_key(seq, part) else {
                continue;
            };
            if !accept(doc, index.doc(doc)) {
                continue;
            }
            let dot: f64 = unit
                .iter()
                .zip(vector)
                .map(|(q, v)| f64::from(*q) * f64::from(*v))
                .sum();
            scored.push((dot / 127.0, doc));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        scored.truncate(limit);
        Some(scored.into_iter().map(|(_, doc)| doc).collect())
    }

    /// The ranking of `query`: the lexical one, fused (with `fuse`) with the semantic one when
    /// recall has embeddings and a vector of this query (see [`fuse`]).
    pub(crate) fn rank(
        &self,
        query: &Query,
        scope: Scope,
        max_postings: usize,
        limit: usize,
        fuse_vectors: bool,
    ) -> Vec<Scored> {
        let accept = |_: u32, doc: &crate::recall::Doc| match scope {
            Scope::Everywhere => true,
            Scope::Only(source) => doc.source == source,
        };
        let lexical = self.index.search(query, max_postings, limit, accept);
        if !fuse_vectors {
            return lexical;
        }
        match self.semantic_ranking(query, limit, &accept) {
            Some(semantic) => fuse(&lexical, &semantic, limit),
            None => lexical,
        }
    }

    /// The model of the vectors recall keeps, or `None` while embeddings are off.
    pub fn embeddings_model(&self) -> Option<&str> {
        self.vectors.as_ref().map(|v| v.model.as_str())
    }

    /// How many indexed texts have no vector yet (0 when embeddings are off).
    pub fn texts_without_vectors(&self) -> usize {
        self.vectors.as_ref().map_or(0, |vectors| {
            self.index.len().saturating_sub(vectors.by_key.len())
        })
    }
}

impl Versioned<Recall> {
    /// Forgets messages read back for recall that no recalled excerpt shows any more. The
    /// state is borrowed mutably (a new version) only when there are such messages, so a
    /// turn without recalled messages keeps its plan reusable.
    pub(crate) fn prune_loaded(&mut self) {
        if self.loaded.is_empty() {
            return;
        }
        let keep: BTreeSet<u64> = self
            .recalled_keys(false)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        self.loaded.retain(|seq, _| keep.contains(seq));
    }
}

/// Whether a search looks everywhere, or only in one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Everywhere,
    Only(Source),
}

impl Scope {
    /// The scope an optional effort id names: every log, the ambient log (`"ambient"`) or
    /// one effort's.
    ///
    /// # Errors
    /// [`crate::error::EffortError::UnknownEffort`] for an id no effort has.
    pub(crate) fn of(
        efforts: &Efforts,
        effort: Option<&str>,
    ) -> Result<Scope, crate::error::EffortError> {
        match effort.map(str::trim) {
            None | Some("") => Ok(Scope::Everywhere),
            Some("ambient") => Ok(Scope::Only(Source::Ambient)),
            Some(id) => Ok(Scope::Only(Source::Effort(efforts.lookup(id)? as u32))),
        }
    }
}

/// How much the semantic ranking counts in the fused one, against the lexical ranking's 1.
const SEMANTIC_WEIGHT: f64 = 0.5;

/// Reciprocal rank fusion of a lexical and a semantic ranking: a document scores
/// `1 / (60 + rank)` (rank from 1) in the lexical ranking plus [`SEMANTIC_WEIGHT`] times that
/// in the semantic one; the query words it matched are the lexical ranking's. Best first, ties
/// to the newer document, at most `limit`. Ranks, not scores, are fused, so neither ranking's
/// scale matters; the semantic ranking weighs half because on the LoCoMo conversations an equal
/// weight moved good lexical hits out for weaker ones (README, "Recall").
fn fuse(lexical: &[Scored], semantic: &[u32], limit: usize) -> Vec<Scored> {
    const K: f64 = 60.0;
    let mut fused: std::collections::BTreeMap<u32, (f64, u64)> = std::collections::BTreeMap::new();
    for (rank, hit) in lexical.iter().enumerate() {
        let entry = fused.entry(hit.doc).or_insert((0.0, 0));
        entry.0 += 1.0 / (K + rank as f64 + 1.0);
        entry.1 = hit.matched;
    }
    for (rank, &doc) in semantic.iter().enumerate() {
        fused.entry(doc).or_insert((0.0, 0)).0 += SEMANTIC_WEIGHT / (K + rank as f64 + 1.0);
    }
    let mut ranked: Vec<Scored> = fused
        .into_iter()
        .map(|(doc, (score, matched))| Scored {
            doc,
            score: libm::round(score * 1e6) / 1e6,
            matched,
        })
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.doc.cmp(&a.doc)));
    ranked.truncate(limit);
    ranked
}

/// One stored text of an excerpt, as the context shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredText<'a> {
    pub(crate) role: Role,
    pub(crate) text: &'a str,
    pub(crate) turn: u64,
    pub(crate) at_ms: u64,
}

/// The components a stored text is read from.
#[derive(Clone, Copy)]
pub(crate) struct TextSources<'a> {
    pub(crate) efforts: &'a Efforts,
    pub(crate) ambient: &'a Ambient,
    pub(crate) attachments: &'a Attachments,
    pub(crate) loaded: &'a BTreeMap<u64, Message>,
}

fn find(messages: &[Message], seq: u64) -> Option<&Message> {
    messages
        .binary_search_by_key(&seq, |m| m.seq)
        .ok()
        .map(|at| &messages[at])
}

impl<'a> TextSources<'a> {
    /// The stored message with this sequence number, if it is in memory (its log is loaded,
    /// or it was read back for recall).
    pub(crate) fn message(&self, source: Source, seq: u64) -> Option<&'a Message> {
        let in_log = match source {
            Source::Ambient => find(self.ambient.messages(), seq),
            Source::Effort(index) => self
                .efforts
                .all()
                .get(index as usize)
                .filter(|e| e.log == LogState::Loaded)
                .and_then(|e| find(&e.messages, seq)),
            Source::Attachment(_) => None,
        };
        in_log.or_else(|| self.loaded.get(&seq))
    }

    /// The text of a document by its key, if it is in memory.
    pub(crate) fn text(&self, source: Source, (seq, part): (u64, u32)) -> Option<StoredText<'a>> {
        if let Source::Attachment(number) = source {
            let stored = self.attachments.by_id().get(&format!("att-{number}"))?;
            let text = &stored.attachment.full_text;
            let first = self.attachments.first_part(number)?;
            let passage = usize::try_from(part.checked_sub(first)?).ok()?;
            let range = crate::recall::passages(text).get(passage)?.clone();
            return Some(StoredText {
                role: Role::User,
                text: &text[range],
                turn: stored.message_turn,
                at_ms: 0,
            });
        }
        self.message(source, seq).map(|m| StoredText {
            role: m.role,
            text: &m.content,
            turn: m.turn,
            at_ms: m.at_ms,
        })
    }
}
