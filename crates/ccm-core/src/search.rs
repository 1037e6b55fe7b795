//! Keyword search over concluded efforts, evicted ones included.
//!
//! An inverted index from normalised words to efforts keeps a search proportional to the
//! postings of the query's words rather than to the number of efforts.

use crate::model::Effort;
use crate::text::{self, is_stopword};
use std::collections::{BTreeMap, BTreeSet};

/// Score added when the query names an effort's id outright: an id is the most precise
/// reference there is, so it must outrank any keyword overlap.
const ID_MATCH_BONUS: f64 = 5.0;

/// The inverted index of concluded efforts.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    postings: BTreeMap<String, BTreeSet<usize>>,
    /// Indexed efforts and their conclusion order (for deterministic tie-breaking: the most
    /// recently concluded wins).
    documents: BTreeMap<usize, u64>,
}

/// A ranked match.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedHit {
    /// Index of the effort in the session.
    pub effort: usize,
    /// Relevance, rounded to 4 decimals so results print identically everywhere.
    pub score: f64,
    /// The query words that matched, sorted.
    pub matched: Vec<String>,
}

/// Words of 2+ characters that are not stopwords: ids often hold short parts (`db`, `ui`) that
/// are still precise.
fn index_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text::words(text).filter(|w| w.chars().count() >= 2 && !is_stopword(w))
}

fn effort_terms(effort: &Effort) -> BTreeSet<String> {
    let mut terms: BTreeSet<String> = effort
        .id
        .split('-')
        .filter(|p| p.chars().count() >= 2)
        .map(str::to_string)
        .collect();
    terms.extend(index_terms(&effort.name));
    if let Some(description) = &effort.description {
        terms.extend(index_terms(description));
    }
    if let Some(summary) = &effort.summary {
        terms.extend(index_terms(&summary.text));
    }
    terms
}

impl SearchIndex {
    /// Number of indexed efforts.
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// Indexes a concluded effort (replacing an earlier entry for it).
    pub fn insert(&mut self, index: usize, effort: &Effort) {
        self.remove(index, effort);
        for term in effort_terms(effort) {
            self.postings.entry(term).or_default().insert(index);
        }
        self.documents
            .insert(index, effort.concluded_seq.unwrap_or_default());
    }

    /// Removes an effort (when it is reopened). `effort` must be the record it was indexed with.
    pub fn remove(&mut self, index: usize, effort: &Effort) {
        if self.documents.remove(&index).is_none() {
            return;
        }
        for term in effort_terms(effort) {
            if let Some(set) = self.postings.get_mut(&term) {
                set.remove(&index);
                if set.is_empty() {
                    self.postings.remove(&term);
                }
            }
        }
    }

    /// Ranks indexed efforts for `query`; `ids` maps effort ids to indices. Returns `None` when
    /// the query has no searchable word.
    pub fn search(
        &self,
        query: &str,
        ids: &BTreeMap<String, usize>,
        limit: usize,
    ) -> Option<Vec<RankedHit>> {
        self.search_bounded(query, ids, limit, usize::MAX)
    }

    /// Like [`SearchIndex::search`], but skips words that more than `max_postings` efforts
    /// share. Such words say little about which effort is meant (their IDF is low), and their
    /// postings grow with the history: the planner's automatic retrieval, which runs for every
    /// request, uses this to keep its cost bounded however many efforts exist.
    pub fn search_bounded(
        &self,
        query: &str,
        ids: &BTreeMap<String, usize>,
        limit: usize,
        max_postings: usize,
    ) -> Option<Vec<RankedHit>> {
        let terms: BTreeSet<String> = index_terms(query).collect();
        let slug = text::slugify(query);
        if terms.is_empty() && !ids.contains_key(&slug) {
            return None;
        }
        let total = self.documents.len() as f64;
        let mut scores: BTreeMap<usize, (f64, Vec<String>)> = BTreeMap::new();
        for term in &terms {
            if let Some(postings) = self.postings.get(term).filter(|p| p.len() <= max_postings) {
                // Rare words say more about which effort is meant than common ones.
                let idf = (1.0 + total / postings.len() as f64).ln();
                for &effort in postings {
                    let entry = scores.entry(effort).or_insert((0.0, Vec::new()));
                    entry.0 += idf;
                    entry.1.push(term.clone());
                }
            }
        }
        // An id written out in the query (as one word, or as the whole query) is a direct hit.
        for candidate in terms.iter().chain(std::iter::once(&slug)) {
            if let Some(&effort) = ids.get(candidate.as_str()) {
                if self.documents.contains_key(&effort) {
                    let entry = scores.entry(effort).or_insert((0.0, Vec::new()));
                    if !entry.1.contains(candidate) {
                        entry.0 += ID_MATCH_BONUS;
                        entry.1.push(candidate.clone());
                    }
                }
            }
        }
        let mut ranked: Vec<RankedHit> = scores
            .into_iter()
            .map(|(effort, (score, mut matched))| {
                matched.sort();
                matched.dedup();
                RankedHit {
                    effort,
                    score: (score * 10_000.0).round() / 10_000.0,
                    matched,
                }
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.documents[&b.effort].cmp(&self.documents[&a.effort]))
        });
        ranked.truncate(limit);
        Some(ranked)
    }
}
