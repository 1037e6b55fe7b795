//! An OpenAI-compatible embeddings endpoint (`POST {base_url}/embeddings`): the request that
//! embeds a list of texts, and the parsing of the answer into one vector per text.
//!
//! This is only the wire: which texts to embed, and what the vectors are used for (a cache per
//! stored message, cosine similarity for compaction's relevance ranking), is the domain's
//! business (`ccm_core::compaction::EmbeddingCache`).

use crate::{HttpMethod, HttpRequest, ProviderConfig, ProviderKind};
use serde_json::Value;
use thiserror::Error;

/// What went wrong with an embeddings request or response. The messages quote what was found,
/// so a misconfigured endpoint can be diagnosed from the error alone.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EmbeddingsEndpointError {
    /// The endpoint speaks a protocol without an embeddings API.
    #[error(
        "embeddings need an OpenAI-compatible endpoint (POST {{base}}/embeddings); {0} has none"
    )]
    UnsupportedProvider(String),
    /// The endpoint configuration is unusable.
    #[error("the embeddings endpoint is misconfigured: {0}")]
    InvalidConfig(String),
    /// A request for no text at all.
    #[error("an embeddings request needs at least one text")]
    NoInput,
    /// The body is not JSON or not of the documented shape.
    #[error("the embeddings response is malformed: {0}")]
    Malformed(String),
    /// The body reports an error instead of vectors.
    #[error("the embeddings endpoint reported an error: {0}")]
    Provider(String),
    /// Fewer or more vectors than texts were sent.
    #[error("the embeddings response has {got} vectors for {expected} texts")]
    CountMismatch {
        /// Texts sent.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// Two vectors claim the same position, or a position beyond the texts sent.
    #[error(
        "the embeddings response has a bad index {index} (duplicate, or not below {expected})"
    )]
    BadIndex {
        /// The index found.
        index: u64,
        /// Texts sent.
        expected: usize,
    },
    /// A vector whose length differs from the others or from the expected one.
    #[error("embedding {position} has {got} dimensions, expected {expected}")]
    DimensionMismatch {
        /// Which vector: `index 3`.
        position: String,
        /// The expected number of dimensions.
        expected: usize,
        /// The number found.
        got: usize,
    },
    /// A vector with no dimensions, or with a value that is not a finite number.
    #[error("embedding {position} is unusable: {reason}")]
    BadVector {
        /// Which vector.
        position: String,
        /// What is wrong with it.
        reason: String,
    },
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
    /// [`EmbeddingsEndpointError::UnsupportedProvider`] for an Anthropic configuration,
    /// [`EmbeddingsEndpointError::InvalidConfig`] for an unusable base URL or an empty model
    /// name, [`EmbeddingsEndpointError::NoInput`] for no texts.
    ///
    /// # Examples
    /// ```
    /// use ccm_provider::{EmbeddingsEndpoint, Preset, ProviderConfig};
    /// let endpoint = EmbeddingsEndpoint {
    ///     provider: ProviderConfig::from_preset(Preset::Ollama, None),
    ///     model: "nomic-embed-text".into(),
    ///     dimensions: None,
    /// };
    /// let request = endpoint.build_request(&["hello"]).unwrap();
    /// assert_eq!(request.url, "http://localhost:11434/v1/embeddings");
    /// ```
    pub fn build_request(&self, texts: &[&str]) -> Result<HttpRequest, EmbeddingsEndpointError> {
        if self.provider.kind != ProviderKind::OpenAiCompatible {
            return Err(EmbeddingsEndpointError::UnsupportedProvider(format!(
                "{:?}",
                self.provider.kind
            )));
        }
        self.provider
            .validate()
            .map_err(|e| EmbeddingsEndpointError::InvalidConfig(e.to_string()))?;
        if self.model.trim().is_empty() {
            return Err(EmbeddingsEndpointError::InvalidConfig(
                "the embedding model name is empty".to_string(),
            ));
        }
        if texts.is_empty() {
            return Err(EmbeddingsEndpointError::NoInput);
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
/// [`EmbeddingsEndpointError`] naming exactly what does not match.
pub fn parse_embeddings_response(
    body: &str,
    expected: usize,
    dimensions: Option<usize>,
) -> Result<Vec<Vec<f32>>, EmbeddingsEndpointError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| EmbeddingsEndpointError::Malformed(format!("not JSON ({e})")))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| error.as_str().map(str::to_string))
            .unwrap_or_else(|| error.to_string());
        return Err(EmbeddingsEndpointError::Provider(message));
    }
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbeddingsEndpointError::Malformed("no `data` array".to_string()))?;
    if data.len() != expected {
        return Err(EmbeddingsEndpointError::CountMismatch {
            expected,
            got: data.len(),
        });
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None | Some(Value::Null) => position as u64,
            Some(v) => v.as_u64().ok_or_else(|| {
                EmbeddingsEndpointError::Malformed(format!(
                    "`data[{position}].index` is not a non-negative integer: {v}"
                ))
            })?,
        };
        let slot = usize::try_from(index)
            .ok()
            .filter(|&i| i < expected && slots[i].is_none())
            .ok_or(EmbeddingsEndpointError::BadIndex { index, expected })?;
        let vector = match item.get("embedding") {
            Some(Value::Array(values)) => values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    v.as_f64()
                        .map(|x| x as f32)
                        .ok_or_else(|| EmbeddingsEndpointError::BadVector {
                            position: format!("index {index}"),
                            reason: format!("value {k} is not a number: {v}"),
                        })
                })
                .collect::<Result<Vec<f32>, _>>()?,
            Some(Value::String(encoded)) => {
                decode_base64_f32(encoded).ok_or_else(|| EmbeddingsEndpointError::BadVector {
                    position: format!("index {index}"),
                    reason: "a string embedding that is not base64 of little-endian f32 values"
                        .to_string(),
                })?
            }
            _ => {
                return Err(EmbeddingsEndpointError::Malformed(format!(
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
            return Err(EmbeddingsEndpointError::DimensionMismatch {
                position: format!("index {index}"),
                expected: expected_dims,
                got: vector.len(),
            });
        }
    }
    Ok(vectors)
}

fn check_vector(vector: &[f32], position: &str) -> Result<(), EmbeddingsEndpointError> {
    if vector.is_empty() {
        return Err(EmbeddingsEndpointError::BadVector {
            position: position.to_string(),
            reason: "it has no dimensions".to_string(),
        });
    }
    if let Some(k) = vector.iter().position(|x| !x.is_finite()) {
        return Err(EmbeddingsEndpointError::BadVector {
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
