//! Keyword search over concluded efforts, evicted ones included.
//!
//! An inverted index from normalised words to efforts keeps a search proportional to the
//! postings of the query's words rather than to the number of efforts.

use crate::model::Effort;
use crate::text::{self, is_stopword};
use std::collections::{BTreeMap, BTreeSet};

/// Most words of an effort's raw log that are indexed for search besides its summary.
pub const LOG_TERMS: usize = 48;

/// How much a query word found only among an effort's log terms counts, against one of its
/// summary, name or id.
const LOG_TERM_WEIGHT: f64 = 0.5;

/// Score added when the query names an effort's id outright: an id is the most precise
/// reference there is, so it must outrank any keyword overlap.
const ID_MATCH_BONUS: f64 = 5.0;

/// The inverted index of concluded efforts.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// Words of ids, names, descriptions and summaries to the efforts that have them.
    postings: BTreeMap<String, BTreeSet<usize>>,
    /// Distinctive words of raw logs ([`crate::model::Summary::terms`]) to their efforts. Only
    /// `search_efforts` reads them; automatic retrieval matches what the model would be shown,
    /// the summary.
    log_postings: BTreeMap<String, BTreeSet<usize>>,
    /// Indexed efforts and their conclusion order (for deterministic tie-breaking: the most
    /// recently concluded wins).
    documents: BTreeMap<usize, u64>,
    /// Summary keywords (the specification's reference keywords) to the efforts whose summary
    /// has them: reference detection looks up a message's words here instead of checking every
    /// summary, and the length of a posting list is the keyword's document frequency.
    keywords: BTreeMap<String, BTreeSet<usize>>,
    /// The longest part of each id to its efforts, so an id mention is found from the words of
    /// a message (a long part is rarely a common word, which keeps the candidates few).
    id_keys: BTreeMap<String, BTreeSet<usize>>,
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
    /// Whether a query word matched what the effort is about (its id, name, description or
    /// summary), not only words said in its log.
    pub described: bool,
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

fn summary_keywords(effort: &Effort) -> &[String] {
    effort.summary.as_ref().map_or(&[][..], |s| &s.keywords[..])
}

fn log_terms(effort: &Effort) -> &[String] {
    effort.summary.as_ref().map_or(&[][..], |s| &s.terms[..])
}

/// The longest hyphen-separated part of an id (the first of equally long ones).
pub(crate) fn id_key(id: &str) -> &str {
    id.split('-').fold("", |longest, part| {
        if part.chars().count() > longest.chars().count() {
            part
        } else {
            longest
        }
    })
}

fn remove_posting(postings: &mut BTreeMap<String, BTreeSet<usize>>, term: &str, index: usize) {
    if let Some(set) = postings.get_mut(term) {
        set.remove(&index);
        if set.is_empty() {
            postings.remove(term);
        }
    }
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
        for keyword in summary_keywords(effort) {
            self.keywords
                .entry(keyword.clone())
                .or_default()
                .insert(index);
        }
        for term in log_terms(effort) {
            self.log_postings
                .entry(term.clone())
                .or_default()
                .insert(index);
        }
        self.id_keys
            .entry(id_key(&effort.id).to_string())
            .or_default()
            .insert(index);
        self.documents
            .insert(index, effort.concluded_seq.unwrap_or_default());
    }

    /// The concluded efforts whose summary has `keyword` (empty when none has it).
    pub fn keyword_postings(&self, keyword: &str) -> Option<&BTreeSet<usize>> {
        self.keywords.get(keyword)
    }

    /// The concluded efforts whose id has `word` as its longest part.
    pub fn id_candidates(&self, word: &str) -> Option<&BTreeSet<usize>> {
        self.id_keys.get(word)
    }

    /// Indexed efforts, in index order.
    pub fn efforts(&self) -> impl Iterator<Item = usize> + '_ {
        self.documents.keys().copied()
    }

    /// Removes an effort (when it is reopened). `effort` must be the record it was indexed with.
    pub fn remove(&mut self, index: usize, effort: &Effort) {
        if self.documents.remove(&index).is_none() {
            return;
        }
        for term in effort_terms(effort) {
            remove_posting(&mut self.postings, &term, index);
        }
        for keyword in summary_keywords(effort) {
            remove_posting(&mut self.keywords, keyword, index);
        }
        for term in log_terms(effort) {
            remove_posting(&mut self.log_postings, term, index);
        }
        remove_posting(&mut self.id_keys, id_key(&effort.id), index);
    }

    /// Ranks indexed efforts for `query` by everything indexed about them (id, name,
    /// description, summary and the distinctive words of their raw logs); `ids` maps effort ids
    /// to indices. Returns `None` when the query has no searchable word.
    pub fn search(
        &self,
        query: &str,
        ids: &BTreeMap<String, usize>,
        limit: usize,
    ) -> Option<Vec<RankedHit>> {
        self.rank(query, ids, limit, usize::MAX, true)
    }

    /// Like [`SearchIndex::search`], but only by what a summary line shows (id, name,
    /// description, summary), and skipping words that more than `max_postings` efforts share.
    /// Such words say little about which effort is meant (their IDF is low), and their postings
    /// grow with the history: the planner's automatic retrieval, which runs for every request,
    /// uses this to keep its cost bounded however many efforts exist.
    pub fn search_bounded(
        &self,
        query: &str,
        ids: &BTreeMap<String, usize>,
        limit: usize,
        max_postings: usize,
    ) -> Option<Vec<RankedHit>> {
        self.rank(query, ids, limit, max_postings, false)
    }

    /// The efforts a term is indexed for, in index order: summary words, and with
    /// `with_log_terms` the distinctive words of raw logs too (an effort that has the term in
    /// both counts once). `max` stops the merge early: a longer list is not used anyway.
    fn term_postings(&self, term: &str, with_log_terms: bool, max: usize) -> Vec<usize> {
        let described = self.postings.get(term);
        let logged = self.log_postings.get(term).filter(|_| with_log_terms);
        let mut merged = Vec::new();
        let mut a = described.into_iter().flatten().copied().peekable();
        let mut b = logged.into_iter().flatten().copied().peekable();
        while merged.len() <= max {
            let next = match (a.peek(), b.peek()) {
                (Some(&x), Some(&y)) if x == y => {
                    b.next();
                    a.next()
                }
                (Some(&x), Some(&y)) if x < y => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => None,
            };
            match next {
                Some(effort) => merged.push(effort),
                None => break,
            }
        }
        merged
    }

    /// The words of a concluded effort's raw log worth indexing for search: salient words
    /// (three characters or more, with a letter, not stopwords), ranked by how often the log
    /// uses them (dampened) times how rare they are among the efforts indexed so far, at most
    /// [`LOG_TERMS`], sorted. Deterministic for the same log and index.
    pub fn distinctive_log_terms<'a>(&self, texts: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut frequency: BTreeMap<String, u32> = BTreeMap::new();
        for word in texts.flat_map(text::words) {
            if text::is_salient(&word) && word.chars().any(char::is_alphabetic) {
                *frequency.entry(word).or_insert(0) += 1;
            }
        }
        let documents = self.documents.len() as f64 + 1.0;
        let mut scored: Vec<(f64, String)> = frequency
            .into_iter()
            .map(|(word, count)| {
                let df = self.term_postings(&word, true, usize::MAX).len() as f64;
                let idf = (1.0 + documents / (df + 1.0)).ln();
                (f64::from(count).ln_1p() * idf, word)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut terms: Vec<String> = scored.into_iter().take(LOG_TERMS).map(|(_, w)| w).collect();
        terms.sort();
        terms
    }

    fn rank(
        &self,
        query: &str,
        ids: &BTreeMap<String, usize>,
        limit: usize,
        max_postings: usize,
        with_log_terms: bool,
    ) -> Option<Vec<RankedHit>> {
        let terms: BTreeSet<String> = index_terms(query).collect();
        let slug = text::slugify(query);
        if terms.is_empty() && !ids.contains_key(&slug) {
            return None;
        }
        let total = self.documents.len() as f64;
        // Per effort: score, matched words, and whether a word matched its description.
        let mut scores: BTreeMap<usize, (f64, Vec<String>, bool)> = BTreeMap::new();
        for term in &terms {
            let postings = self.term_postings(term, with_log_terms, max_postings);
            if postings.is_empty() || postings.len() > max_postings {
                continue;
            }
            // Rare words say more about which effort is meant than common ones.
            let idf = (1.0 + total / postings.len() as f64).ln();
            let described = self.postings.get(term);
            for effort in postings {
                // A word of the summary, name or id says what the effort is about; a word only
                // of its log says what was said while it was active, which may be about
                // another effort (a question about an earlier one, say).
                let about = described.is_some_and(|p| p.contains(&effort));
                let weight = if about { 1.0 } else { LOG_TERM_WEIGHT };
                let entry = scores.entry(effort).or_insert((0.0, Vec::new(), false));
                entry.0 += idf * weight;
                entry.1.push(term.clone());
                entry.2 |= about;
            }
        }
        // An id written out in the query (as one word, or as the whole query) is a direct hit.
        for candidate in terms.iter().chain(std::iter::once(&slug)) {
            if let Some(&effort) = ids.get(candidate.as_str()) {
                if self.documents.contains_key(&effort) {
                    let entry = scores.entry(effort).or_insert((0.0, Vec::new(), false));
                    if !entry.1.contains(candidate) {
                        entry.0 += ID_MATCH_BONUS;
                        entry.1.push(candidate.clone());
                    }
                    entry.2 = true;
                }
            }
        }
        let mut ranked: Vec<RankedHit> = scores
            .into_iter()
            .map(|(effort, (score, mut matched, described))| {
                matched.sort();
                matched.dedup();
                RankedHit {
                    effort,
                    score: (score * 10_000.0).round() / 10_000.0,
                    matched,
                    described,
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
