//! Relevance of older messages to the current user message, and the selection of what stays.
//!
//! Two models rank candidates:
//!
//! - **Lexical** ([`bm25_scores`]), built in and the default, so ranking works offline: BM25
//!   over the candidates and the query, with the crate's word normalisation and stopwords and
//!   a light stemmer ([`light_stem`]).
//! - **Embeddings**, when an OpenAI-compatible `/v1/embeddings` endpoint is configured: a pure
//!   [`EmbeddingCache`] (one vector per stored message, keyed by sequence number), cosine
//!   similarity, and the request/response mapping ([`EmbeddingCache::batch`] builds the
//!   request for the texts not cached yet; [`EmbeddingCache::absorb`] parses the answer and
//!   fills the cache). No I/O happens here: the host sends the request.
//!
//! [`select_keep`] turns scores into the set of candidates that stay, deterministically.
//!
//! Determinism: BM25 needs a logarithm, and `ln` is not guaranteed to round identically on
//! every platform, so BM25 scores are rounded to 6 decimals before they are compared; cosine
//! similarity uses only correctly rounded operations (`+`, `*`, `/`, `sqrt`) in a fixed order.

use super::error::{EmbeddingError, RelevanceError};
use crate::provider::{HttpMethod, HttpRequest, ProviderConfig, ProviderKind};
use crate::text::{is_stopword, words};
use serde::{Deserialize, Serialize};
use serde_json::Value;
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

/// An OpenAI-compatible embeddings endpoint: `POST {base_url}/embeddings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsEndpoint {
    /// Where it lives and how to authenticate (must be OpenAI-compatible).
    pub provider: ProviderConfig,
    /// The embedding model, for example `text-embedding-3-small` or `nomic-embed-text`.
    pub model: String,
    /// The `dimensions` to ask for, if the model supports shortening.
    pub dimensions: Option<u32>,
}

impl EmbeddingsEndpoint {
    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!(
            "{}/embeddings",
            self.provider.base_url.trim_end_matches('/')
        )
    }

    /// The request that embeds `texts`, in order.
    ///
    /// # Errors
    /// [`EmbeddingError::UnsupportedProvider`] for an Anthropic configuration,
    /// [`EmbeddingError::InvalidConfig`] for an unusable base URL or an empty model name,
    /// [`EmbeddingError::NoInput`] for no texts.
    pub fn build_request(&self, texts: &[&str]) -> Result<HttpRequest, EmbeddingError> {
        if self.provider.kind != ProviderKind::OpenAiCompatible {
            return Err(EmbeddingError::UnsupportedProvider(format!(
                "{:?}",
                self.provider.kind
            )));
        }
        self.provider
            .validate()
            .map_err(|e| EmbeddingError::InvalidConfig(e.to_string()))?;
        if self.model.trim().is_empty() {
            return Err(EmbeddingError::InvalidConfig(
                "the embedding model name is empty".to_string(),
            ));
        }
        if texts.is_empty() {
            return Err(EmbeddingError::NoInput);
        }
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(key) = &self.provider.api_key {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        // Extra headers replace protocol headers of the same name, as for chat requests.
        for (name, value) in &self.provider.extra_headers {
            let lower = name.to_ascii_lowercase();
            headers.retain(|(n, _)| *n != lower);
            headers.push((lower, value.clone()));
        }
        Ok(HttpRequest {
            method: HttpMethod::Post,
            url: self.url(),
            headers,
            body: embeddings_request_body(self.model.trim(), texts, self.dimensions),
        })
    }
}

/// The JSON body of an embeddings request. It asks for `float` vectors explicitly, because
/// some clients default to base64.
pub fn embeddings_request_body(model: &str, texts: &[&str], dimensions: Option<u32>) -> String {
    let mut body = serde_json::json!({
        "model": model,
        "input": texts,
        "encoding_format": "float",
    });
    if let Some(d) = dimensions {
        body["dimensions"] = Value::from(d);
    }
    body.to_string()
}

/// Parses an embeddings response that answers `expected` texts: one vector per text, ordered
/// by the response's `index` fields (position when absent), all of one length (and of
/// `dimensions` when given), finite and non-empty. Base64 vectors (little-endian `f32`) are
/// decoded too.
///
/// # Errors
/// [`EmbeddingError`] naming exactly what does not match.
pub fn parse_embeddings_response(
    body: &str,
    expected: usize,
    dimensions: Option<usize>,
) -> Result<Vec<Vec<f32>>, EmbeddingError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| EmbeddingError::Malformed(format!("not JSON ({e})")))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| error.as_str().map(str::to_string))
            .unwrap_or_else(|| error.to_string());
        return Err(EmbeddingError::Provider(message));
    }
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbeddingError::Malformed("no `data` array".to_string()))?;
    if data.len() != expected {
        return Err(EmbeddingError::CountMismatch {
            expected,
            got: data.len(),
        });
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None | Some(Value::Null) => position as u64,
            Some(v) => v.as_u64().ok_or_else(|| {
                EmbeddingError::Malformed(format!(
                    "`data[{position}].index` is not a non-negative integer: {v}"
                ))
            })?,
        };
        let slot = usize::try_from(index)
            .ok()
            .filter(|&i| i < expected && slots[i].is_none())
            .ok_or(EmbeddingError::BadIndex { index, expected })?;
        let vector = match item.get("embedding") {
            Some(Value::Array(values)) => values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    v.as_f64()
                        .map(|x| x as f32)
                        .ok_or_else(|| EmbeddingError::BadVector {
                            position: format!("index {index}"),
                            reason: format!("value {k} is not a number: {v}"),
                        })
                })
                .collect::<Result<Vec<f32>, _>>()?,
            Some(Value::String(encoded)) => {
                decode_base64_f32(encoded).ok_or_else(|| EmbeddingError::BadVector {
                    position: format!("index {index}"),
                    reason: "a string embedding that is not base64 of little-endian f32 values"
                        .to_string(),
                })?
            }
            _ => {
                return Err(EmbeddingError::Malformed(format!(
                    "`data[{position}].embedding` is missing or not an array of numbers"
                )))
            }
        };
        check_vector(&vector, &format!("index {index}"))?;
        slots[slot] = Some(vector);
    }
    let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
    let expected_dims = dimensions.unwrap_or_else(|| vectors.first().map_or(0, Vec::len));
    for (index, vector) in vectors.iter().enumerate() {
        if vector.len() != expected_dims {
            return Err(EmbeddingError::DimensionMismatch {
                position: format!("index {index}"),
                expected: expected_dims,
                got: vector.len(),
            });
        }
    }
    Ok(vectors)
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

/// Standard base64 (with or without padding) of little-endian `f32` values.
fn decode_base64_f32(encoded: &str) -> Option<Vec<f32>> {
    let mut bytes = Vec::with_capacity(encoded.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in encoded.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// One embeddings request prepared by [`EmbeddingCache::batch`]: the query first, then every
/// candidate text not cached yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingBatch {
    /// The request to send.
    pub request: HttpRequest,
    /// Keys of the candidate texts in the request, after the query, in order.
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

    /// The request that embeds `query` and every candidate text not cached yet.
    ///
    /// # Errors
    /// [`EmbeddingError::InvalidConfig`] when the endpoint's model is not the cache's (vectors
    /// of two models are not comparable: start a new cache), and the errors of
    /// [`EmbeddingsEndpoint::build_request`].
    pub fn batch(
        &self,
        endpoint: &EmbeddingsEndpoint,
        query: &str,
        candidates: &[(u64, &str)],
    ) -> Result<EmbeddingBatch, EmbeddingError> {
        if endpoint.model.trim() != self.model {
            return Err(EmbeddingError::InvalidConfig(format!(
                "the cache holds vectors of model '{}' but the endpoint uses '{}'; start a new cache",
                self.model,
                endpoint.model.trim()
            )));
        }
        let missing = self.missing(candidates);
        let mut texts: Vec<&str> = Vec::with_capacity(missing.len() + 1);
        texts.push(query);
        texts.extend(missing.iter().map(|(_, text)| *text));
        Ok(EmbeddingBatch {
            request: endpoint.build_request(&texts)?,
            seqs: missing.iter().map(|(seq, _)| *seq).collect(),
            model: self.model.clone(),
        })
    }

    /// Applies the response to `batch`: caches the candidates' vectors and returns the
    /// query's. Nothing is cached unless the whole response is valid.
    ///
    /// # Errors
    /// The parse errors of [`parse_embeddings_response`]; [`EmbeddingError::WrongBatch`] for a
    /// batch of another model; [`EmbeddingError::DimensionMismatch`] when the vectors' length
    /// differs from the cached ones'.
    pub fn absorb(
        &mut self,
        batch: &EmbeddingBatch,
        body: &str,
    ) -> Result<Vec<f32>, EmbeddingError> {
        if batch.model != self.model {
            return Err(EmbeddingError::WrongBatch(format!(
                "batch for model '{}', cache for '{}'",
                batch.model, self.model
            )));
        }
        let mut vectors = parse_embeddings_response(body, batch.seqs.len() + 1, self.dimensions)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors_decode() {
        // 1.0f32 = 00 00 80 3F, -2.0f32 = 00 00 00 C0.
        assert_eq!(decode_base64_f32("AACAPwAAAMA="), Some(vec![1.0, -2.0]));
        assert_eq!(decode_base64_f32("AACAPwAAAMA"), Some(vec![1.0, -2.0]));
        assert_eq!(decode_base64_f32("AACAPw!!"), None);
        assert_eq!(decode_base64_f32("AACA"), None, "3 bytes are not an f32");
    }
}
