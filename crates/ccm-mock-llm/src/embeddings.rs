//! Deterministic embeddings: a signed, hashed bag of words, L2-normalised.
//!
//! Words are lower-cased, split on anything that is not alphanumeric, stripped of a short
//! list of English stop words and of a plural `s`. Each word adds ±1 to one dimension chosen
//! by its hash (FNV-1a, finalised), and its first four characters add ±0.5 to another, so inflections
//! ("rotating", "rotation") still meet. The sign comes from the hash too, so unrelated
//! features that share a dimension cancel as often as they pile up. Texts that share
//! content words therefore have a clearly positive cosine similarity and unrelated texts one
//! near zero, which is what relevance-ranking tests need, and the vectors are identical on
//! every machine and every run.
//!
//! The default is 256 dimensions rather than fewer because hash collisions add noise to the
//! similarity of unrelated texts with a spread of roughly `1 / sqrt(dimensions)`: about 0.12
//! at 64 dimensions, enough to let an unrelated text outrank a related one now and then,
//! and about 0.06 at 256. A request may still ask for fewer with `dimensions`.

use serde_json::{json, Value};

use crate::inspect::bytes_to_tokens;

/// The number of dimensions returned when the request does not ask for `dimensions`.
pub const DEFAULT_DIMENSIONS: usize = 256;

/// The largest `dimensions` a request may ask for.
pub const MAX_DIMENSIONS: usize = 4096;

const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for",
    "from", "has", "have", "how", "i", "if", "in", "is", "it", "its", "let", "lets", "me", "my",
    "of", "on", "or", "our", "please", "so", "that", "the", "this", "to", "us", "was", "we",
    "were", "what", "when", "where", "which", "who", "will", "with", "you", "your",
];

/// The words that make up a text's embedding, in order (duplicates kept).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            // A crude plural strip ("bugs" → "bug") so trivial inflection does not separate
            // related texts; "ss" endings ("class", "access") are left alone.
            if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_string()
            } else {
                w
            }
        })
        .collect()
}

/// FNV-1a followed by MurmurHash3's 64-bit finaliser. The finaliser matters: the low bits
/// of a plain FNV-1a hash depend only on the low bits of the input bytes, so `hash % 256`
/// alone would spread words over the dimensions badly and make collisions common.
fn feature_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// Adds one hashed feature: ±`weight` in the dimension its hash picks.
fn add_feature(vector: &mut [f64], feature: &str, weight: f64) {
    let hash = feature_hash(feature.as_bytes());
    let index = (hash % vector.len() as u64) as usize;
    let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
    vector[index] += sign * weight;
}

/// The embedding of `text` with `dimensions` dimensions (at least 1), L2-normalised.
///
/// A text without content words (empty, only stop words, or words that cancel out) is
/// embedded from its whole lower-cased text instead, so every vector has length 1 and a
/// cosine similarity never divides by zero.
///
/// # Examples
/// ```
/// use ccm_mock_llm::{cosine_similarity, embed, DEFAULT_DIMENSIONS};
/// let a = embed("fix the login bug", DEFAULT_DIMENSIONS);
/// let b = embed("the login bug is back", DEFAULT_DIMENSIONS);
/// let c = embed("banana bread recipe", DEFAULT_DIMENSIONS);
/// assert_eq!(a, embed("fix the login bug", DEFAULT_DIMENSIONS));
/// assert!(cosine_similarity(&a, &b) > cosine_similarity(&a, &c));
/// ```
pub fn embed(text: &str, dimensions: usize) -> Vec<f32> {
    let dimensions = dimensions.max(1);
    let mut vector = vec![0.0f64; dimensions];
    for word in words(text) {
        add_feature(&mut vector, &word, 1.0);
        if word.chars().count() >= 4 {
            // A distinct namespace keeps the prefix "fail" apart from the word "fail".
            let prefix: String = word.chars().take(4).collect();
            add_feature(&mut vector, &format!("prefix:{prefix}"), 0.5);
        }
    }
    let mut norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm == 0.0 {
        add_feature(&mut vector, &text.to_lowercase(), 1.0);
        norm = 1.0;
    }
    vector.iter().map(|x| (x / norm) as f32).collect()
}

/// The cosine similarity of two vectors (0 when either has length 0 or the sizes differ).
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Builds the response for an OpenAI `/v1/embeddings` request body, or explains in a
/// sentence why the request is invalid.
pub(crate) fn respond(body: &Value) -> Result<Value, String> {
    let inputs: Vec<&str> = match body.get("input") {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err("`input` must not be an empty array".into())
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().ok_or_else(|| {
                    "`input` must be a string or an array of strings (token arrays are not supported by the mock)".to_string()
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`input` must be a string or an array of strings".into()),
        None => return Err("`input` is required".into()),
    };
    let dimensions = match body.get("dimensions") {
        None | Some(Value::Null) => DEFAULT_DIMENSIONS,
        Some(value) => match value.as_u64() {
            Some(d) if (1..=MAX_DIMENSIONS as u64).contains(&d) => d as usize,
            _ => {
                return Err(format!(
                    "`dimensions` must be an integer from 1 to {MAX_DIMENSIONS}"
                ))
            }
        },
    };
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(format!(
                "`encoding_format` must be \"float\" or \"base64\", not \"{other}\""
            ))
        }
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let vector = embed(text, dimensions);
            let embedding = if base64 {
                // OpenAI's base64 format is the little-endian f32 array, base64-encoded.
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                Value::String(base64_encode(&bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens = bytes_to_tokens(inputs.iter().map(|t| t.len()).sum());
    Ok(json!({
        "object": "list",
        "data": data,
        "model": body.get("model").and_then(Value::as_str).unwrap_or("mock-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

/// Standard base64 with padding.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn vectors_are_unit_length_even_without_content_words() {
        for text in ["", "the and of", "login bug", "ünïcödé words"] {
            let v = embed(text, DEFAULT_DIMENSIONS);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text:?}: {norm}");
        }
    }

    #[test]
    fn plural_and_case_do_not_separate_words() {
        assert_eq!(
            embed("Login Bugs", DEFAULT_DIMENSIONS),
            embed("login bug", DEFAULT_DIMENSIONS)
        );
    }
}
