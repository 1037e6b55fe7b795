//! Relevance of older messages to the current user message, and the selection of what stays.
//!
//! Two models rank candidates:
//!
//! - **Lexical** ([`bm25_scores`]), built in and the default, so ranking works offline: BM25
//!   over the candidates and the query, with the crate's word normalisation and stopwords and
//!   a light stemmer ([`light_stem`]).
//! - **Embeddings**, when an embeddings endpoint is configured: a pure [`EmbeddingCache`] (one
//!   vector per stored message, keyed by sequence number) and cosine similarity.
//!   [`EmbeddingCache::batch`] lists the texts not cached yet; [`EmbeddingCache::absorb`] takes
//!   their vectors. The endpoint's request and response JSON are not the domain's business:
//!   `ccm-provider` maps them, and the host sends the request.
//!
//! [`select_keep`] turns scores into the set of candidates that stay, deterministically.
//!
//! Determinism: BM25 needs a logarithm, and `ln` is not guaranteed to round identically on
//! every platform, so BM25 scores are rounded to 6 decimals before they are compared; cosine
//! similarity uses only correctly rounded operations (`+`, `*`, `/`, `sqrt`) in a fixed order.

use super::error::{EmbeddingError, RelevanceError};
use crate::text::{is_stopword, words};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// BM25 term-frequency saturation: the usual value.
pub const BM25_K1: f64 = 1.2;
/// BM25 length normalisation: the usual value.
pub const BM25_B: f64 = 0.75;

/// Terms for lexical relevance: normalised words of two or more characters that are not
/// stopwords (as the effort search indexes them; short ids such as `db` stay meaningful),
/// reduced by [`light_stem`] so that "hashing", "hashes" and "hash" meet.
pub fn lexical_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text)
        .filter(|w| w.chars().count() >= 2 && !is_stopword(w))
        .map(|w| light_stem(&w))
}

/// A light, deterministic English stemmer for relevance ranking: plural endings (`ies` → `y`,
/// `s` → nothing, as in Harman's S-stemmer), then `ing` or `ed`, then a final `e`,
/// each only when at least four letters remain. Words with digits or inner punctuation are
/// identifiers and stay exactly as written: `argon2id` must not meet `argon2`.
///
/// # Examples
/// ```
/// use ccm_core::compaction::relevance::light_stem;
/// for word in ["hash", "hashes", "hashing", "hashed"] {
///     assert_eq!(light_stem(word), "hash");
/// }
/// assert_eq!(light_stem("passwords"), "password");
/// assert_eq!(light_stem("caching"), light_stem("cache"));
/// assert_eq!(light_stem("argon2id"), "argon2id");
/// assert_eq!(light_stem("string"), "string");
/// ```
pub fn light_stem(word: &str) -> String {
    if !word.chars().all(char::is_alphabetic) {
        return word.to_string();
    }
    let mut w: Vec<char> = word.chars().collect();
    let ends = |w: &[char], suffix: &str| {
        let s: Vec<char> = suffix.chars().collect();
        w.len() >= s.len() && w[w.len() - s.len()..] == s[..]
    };
    // Plurals first. Harman's `es` → `e` rule removes the same single letter as the `s` rule,
    // so one rule covers both.
    if w.len() > 4 && ends(&w, "ies") && !ends(&w, "eies") && !ends(&w, "aies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.len() > 3 && ends(&w, "s") && !ends(&w, "us") && !ends(&w, "ss") {
        w.pop();
    }
    // Then one verb ending, keeping at least four letters.
    for suffix in ["ing", "ed"] {
        let n = suffix.chars().count();
        if ends(&w, suffix) && w.len() >= n + 4 {
            w.truncate(w.len() - n);
            break;
        }
    }
    if ends(&w, "e") && w.len() >= 5 {
        w.pop();
    }
    w.into_iter().collect()
}

/// BM25 scores of `documents` for `query`, one per document, in order.
///
/// The corpus statistics (document count, document frequency, average length) include the
/// query as one more document, so a word that only the query uses has a finite weight and the
/// weights stay positive. A query without terms scores every document 0, which leaves the
/// choice to recency.
///
/// # Examples
/// ```
/// use ccm_core::compaction::bm25_scores;
/// let scores = bm25_scores(
///     "How does password hashing work?",
///     &["We use bcrypt for password hashing.", "The button is blue.", "Lunch at noon?"],
/// );
/// assert!(scores[0] > scores[1] && scores[1] == 0.0 && scores[2] == 0.0);
/// ```
pub fn bm25_scores(query: &str, documents: &[&str]) -> Vec<f64> {
    let query_terms: BTreeSet<String> = lexical_terms(query).collect();
    let query_len = lexical_terms(query).count();
    let docs: Vec<(BTreeMap<String, u32>, usize)> = documents
        .iter()
        .map(|d| {
            let mut tf: BTreeMap<String, u32> = BTreeMap::new();
            let mut length = 0;
            for term in lexical_terms(d) {
                *tf.entry(term).or_insert(0) += 1;
                length += 1;
            }
            (tf, length)
        })
        .collect();
    let n = (docs.len() + 1) as f64;
    let total_len = docs.iter().map(|(_, l)| *l).sum::<usize>() + query_len;
    let avgdl = (total_len as f64 / n).max(1.0);
    let idf: BTreeMap<&str, f64> = query_terms
        .iter()
        .map(|t| {
            let df = docs.iter().filter(|(tf, _)| tf.contains_key(t)).count() as f64 + 1.0;
            (t.as_str(), (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
        })
        .collect();
    docs.iter()
        .map(|(tf, length)| {
            let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * *length as f64 / avgdl);
            let score: f64 = query_terms
                .iter()
                .map(|t| {
                    let f = f64::from(tf.get(t).copied().unwrap_or(0));
                    idf[t.as_str()] * f * (BM25_K1 + 1.0) / (f + norm)
                })
                .sum();
            round6(score)
        })
        .collect()
}

fn round6(x: f64) -> f64 {
    (x * 1_000_000.0).round() / 1_000_000.0
}

/// Which candidates stay and which leave, as indices into the candidate list, ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepSelection {
    /// Indices of the candidates that stay.
    pub keep: Vec<usize>,
    /// Indices of the candidates that leave.
    pub leave: Vec<usize>,
}

/// Chooses what stays: the `keep_last` newest candidates always, and of the older ones the
/// best-scoring `keep_per_mille`‰ (rounded down, as the specification keeps 7 of 15 at 50 %).
///
/// `recency[i]` orders candidate `i` in time (a sequence number: larger is newer). Equal
/// scores go to the newer candidate, so the result never depends on input order.
///
/// # Errors
/// [`RelevanceError`] when the lists differ in length, a score is not finite, or the fraction
/// exceeds 1000‰.
///
/// # Examples
/// ```
/// use ccm_core::compaction::select_keep;
/// // Five candidates, oldest first; keep the last one and half of the other four.
/// let chosen = select_keep(&[1, 2, 3, 4, 5], &[0.9, 0.1, 0.5, 0.1, 0.0], 500, 1).unwrap();
/// assert_eq!(chosen.keep, [0, 2, 4]);
/// assert_eq!(chosen.leave, [1, 3]);
/// ```
pub fn select_keep(
    recency: &[u64],
    scores: &[f64],
    keep_per_mille: u16,
    keep_last: usize,
) -> Result<KeepSelection, RelevanceError> {
    if recency.len() != scores.len() {
        return Err(RelevanceError::LengthMismatch {
            candidates: recency.len(),
            scores: scores.len(),
        });
    }
    if keep_per_mille > 1000 {
        return Err(RelevanceError::FractionTooLarge(keep_per_mille));
    }
    if let Some(index) = scores.iter().position(|s| !s.is_finite()) {
        return Err(RelevanceError::NonFiniteScore {
            index,
            value: scores[index].to_string(),
        });
    }
    // Newest first; equal recency keys fall back to position so the order is total.
    let mut by_age: Vec<usize> = (0..recency.len()).collect();
    by_age.sort_by(|&a, &b| recency[b].cmp(&recency[a]).then(b.cmp(&a)));
    let recent = keep_last.min(by_age.len());
    let mut older: Vec<usize> = by_age[recent..].to_vec();
    let keep_count = older.len() * usize::from(keep_per_mille) / 1000;
    // Highest score first, newer first among equals: `older` is already newest first and the
    // sort is stable.
    older.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut keep: Vec<usize> = by_age[..recent].to_vec();
    keep.extend_from_slice(&older[..keep_count]);
    let mut leave: Vec<usize> = older[keep_count..].to_vec();
    keep.sort_unstable();
    leave.sort_unstable();
    Ok(KeepSelection { keep, leave })
}

/// Cosine similarity of two vectors, accumulated in `f64` in index order. 0 when either vector
/// has zero length (norm), so an empty text never looks relevant.
///
/// # Errors
/// [`EmbeddingError::DimensionMismatch`] when the lengths differ.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> Result<f64, EmbeddingError> {
    if a.len() != b.len() {
        return Err(EmbeddingError::DimensionMismatch {
            position: "query".to_string(),
            expected: b.len(),
            got: a.len(),
        });
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return Ok(0.0);
    }
    Ok(dot / (na.sqrt() * nb.sqrt()))
}

fn check_vector(vector: &[f32], position: &str) -> Result<(), EmbeddingError> {
    if vector.is_empty() {
        return Err(EmbeddingError::BadVector {
            position: position.to_string(),
            reason: "it has no dimensions".to_string(),
        });
    }
    if let Some(k) = vector.iter().position(|x| !x.is_finite()) {
        return Err(EmbeddingError::BadVector {
            position: position.to_string(),
            reason: format!("value {k} is not finite"),
        });
    }
    Ok(())
}

/// The texts of one embeddings request, prepared by [`EmbeddingCache::batch`]: the query
/// first, then every candidate text not cached yet. The host embeds them (with
/// `ccm_provider::EmbeddingsEndpoint`, or any other model) and hands the vectors, in the same
/// order, to [`EmbeddingCache::absorb`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingBatch {
    /// The texts to embed: the query, then the candidate texts of [`seqs`](Self::seqs).
    pub texts: Vec<String>,
    /// Keys of the candidate texts, after the query, in order.
    pub seqs: Vec<u64>,
    /// The model the batch was built for.
    pub model: String,
}

/// Embeddings of stored messages, one vector per sequence number, for one model. Texts never
/// change once stored, so a vector never goes stale; [`retain`](Self::retain) drops vectors
/// whose messages left the working set for good.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingCache {
    model: String,
    dimensions: Option<usize>,
    vectors: BTreeMap<u64, Vec<f32>>,
}

impl EmbeddingCache {
    /// An empty cache for `model`.
    pub fn new(model: &str) -> EmbeddingCache {
        EmbeddingCache {
            model: model.trim().to_string(),
            dimensions: None,
            vectors: BTreeMap::new(),
        }
    }

    /// The model whose vectors the cache holds.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors' length, once the first one is cached.
    pub fn dimensions(&self) -> Option<usize> {
        self.dimensions
    }

    /// Number of cached vectors.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The vector of `seq`, if cached.
    pub fn get(&self, seq: u64) -> Option<&[f32]> {
        self.vectors.get(&seq).map(Vec::as_slice)
    }

    /// Caches the vector of `seq` (replacing an earlier one).
    ///
    /// # Errors
    /// [`EmbeddingError::DimensionMismatch`] when its length differs from the cached vectors',
    /// [`EmbeddingError::BadVector`] when it is empty or not finite.
    pub fn insert(&mut self, seq: u64, vector: Vec<f32>) -> Result<(), EmbeddingError> {
        check_vector(&vector, &format!("seq {seq}"))?;
        match self.dimensions {
            Some(d) if d != vector.len() => {
                return Err(EmbeddingError::DimensionMismatch {
                    position: format!("seq {seq}"),
                    expected: d,
                    got: vector.len(),
                })
            }
            _ => self.dimensions = Some(vector.len()),
        }
        self.vectors.insert(seq, vector);
        Ok(())
    }

    /// Keeps only the vectors whose key passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        self.vectors.retain(|&seq, _| keep(seq));
    }

    /// The candidates (key, text) without a cached vector, first occurrence of each key only.
    pub fn missing<'a>(&self, candidates: &[(u64, &'a str)]) -> Vec<(u64, &'a str)> {
        let mut seen = BTreeSet::new();
        candidates
            .iter()
            .filter(|(seq, _)| !self.vectors.contains_key(seq) && seen.insert(*seq))
            .copied()
            .collect()
    }

    /// The texts to embed for `query`: the query itself and every candidate text not cached
    /// yet (each key once).
    pub fn batch(&self, query: &str, candidates: &[(u64, &str)]) -> EmbeddingBatch {
        let missing = self.missing(candidates);
        let mut texts: Vec<String> = Vec::with_capacity(missing.len() + 1);
        texts.push(query.to_string());
        texts.extend(missing.iter().map(|(_, text)| text.to_string()));
        EmbeddingBatch {
            texts,
            seqs: missing.iter().map(|(seq, _)| *seq).collect(),
            model: self.model.clone(),
        }
    }

    /// Takes the vectors of `batch`'s texts, in order: caches the candidates' vectors and
    /// returns the query's. Nothing is cached unless every vector is usable.
    ///
    /// # Errors
    /// [`EmbeddingError::WrongBatch`] for a batch of another model;
    /// [`EmbeddingError::CountMismatch`] when there is not one vector per text;
    /// [`EmbeddingError::BadVector`] for an empty or non-finite vector;
    /// [`EmbeddingError::DimensionMismatch`] when the vectors' lengths differ from each other
    /// or from the cached ones'.
    pub fn absorb(
        &mut self,
        batch: &EmbeddingBatch,
        mut vectors: Vec<Vec<f32>>,
    ) -> Result<Vec<f32>, EmbeddingError> {
        if batch.model != self.model {
            return Err(EmbeddingError::WrongBatch(format!(
                "batch for model '{}', cache for '{}'",
                batch.model, self.model
            )));
        }
        let expected = batch.seqs.len() + 1;
        if vectors.len() != expected {
            return Err(EmbeddingError::CountMismatch {
                expected,
                got: vectors.len(),
            });
        }
        // Every vector is checked before any is cached, so a bad answer leaves the cache as it
        // was.
        let expected_dims = self
            .dimensions
            .unwrap_or_else(|| vectors.first().map_or(0, Vec::len));
        for (index, vector) in vectors.iter().enumerate() {
            check_vector(vector, &format!("index {index}"))?;
            if vector.len() != expected_dims {
                return Err(EmbeddingError::DimensionMismatch {
                    position: format!("index {index}"),
                    expected: expected_dims,
                    got: vector.len(),
                });
            }
        }
        let query = vectors.remove(0);
        for (seq, vector) in batch.seqs.iter().zip(vectors) {
            self.insert(*seq, vector)?;
        }
        Ok(query)
    }

    /// Cosine similarity of `query` with the cached vector of each key, in order.
    ///
    /// # Errors
    /// [`EmbeddingError::NotCached`] for a key without a vector;
    /// [`EmbeddingError::DimensionMismatch`] when the query's length differs.
    pub fn scores(&self, query: &[f32], seqs: &[u64]) -> Result<Vec<f64>, EmbeddingError> {
        seqs.iter()
            .map(|&seq| {
                let vector = self
                    .vectors
                    .get(&seq)
                    .ok_or(EmbeddingError::NotCached { seq })?;
                cosine_similarity(query, vector)
            })
            .collect()
    }
}
