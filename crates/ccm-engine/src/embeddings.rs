//! Embeddings between a session and an embeddings endpoint, for compaction's relevance ranking
//! and for recall's: the session says which texts to embed and keeps the vectors
//! ([`Session::embedding_batch`] and [`Session::absorb_embeddings`] for compaction,
//! [`Session::recall_embedding_batch`] and [`Session::absorb_recall_embeddings`] for recall);
//! `ccm-provider` writes the endpoint's request and reads its answer. The transport sends the
//! request in between.

use ccm_core::compaction::{EmbeddingBatch, EmbeddingError};
use ccm_core::Session;
use ccm_provider::embeddings::parse_embeddings_response;
use ccm_provider::{EmbeddingsEndpoint, EmbeddingsEndpointError, HttpRequest};

/// Why embeddings could not be fetched or used. Either way nothing was cached, and compaction
/// ranks with the lexical model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddingsError {
    /// The endpoint's request could not be built, or its answer is not a valid embeddings
    /// response.
    #[error(transparent)]
    Endpoint(#[from] EmbeddingsEndpointError),
    /// The vectors do not fit the session's cache.
    #[error(transparent)]
    Cache(#[from] EmbeddingError),
}

/// One embeddings request for a session: the texts it embeds and the HTTP request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsRequest {
    /// The texts and the keys their vectors are cached under.
    pub batch: EmbeddingBatch,
    /// The request to send to the endpoint.
    pub request: HttpRequest,
}

/// The request that embeds `query` and every ambient exchange of `session`'s working set not
/// cached yet, or `None` when embeddings are not enabled for the session. Send it and give the
/// answer's body to [`absorb_embeddings`].
///
/// # Errors
/// [`EmbeddingsEndpointError::InvalidConfig`] when the endpoint's model is not the one the
/// session's cache holds vectors of (vectors of two models are not comparable: enable
/// embeddings anew), and the errors of [`EmbeddingsEndpoint::build_request`].
pub fn embeddings_request(
    session: &Session,
    query: &str,
    endpoint: &EmbeddingsEndpoint,
) -> Result<Option<EmbeddingsRequest>, EmbeddingsError> {
    let Some(batch) = session.embedding_batch(query) else {
        return Ok(None);
    };
    let request = request_for_model(endpoint, &batch.model, &batch.texts, |kept, asked| {
        format!("the cache holds vectors of model '{kept}' but the endpoint uses '{asked}'; start a new cache")
    })?;
    Ok(Some(EmbeddingsRequest { batch, request }))
}

/// The request that embeds `texts` at `endpoint`, refused when the endpoint's model is not
/// `model`, the one the session holds vectors of: vectors of two models are not comparable.
/// `mismatch` words the refusal from the kept and the asked model.
fn request_for_model(
    endpoint: &EmbeddingsEndpoint,
    model: &str,
    texts: &[String],
    mismatch: impl FnOnce(&str, &str) -> String,
) -> Result<HttpRequest, EmbeddingsError> {
    if endpoint.model.trim() != model {
        return Err(
            EmbeddingsEndpointError::InvalidConfig(mismatch(model, endpoint.model.trim())).into(),
        );
    }
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    Ok(endpoint.build_request(&texts)?)
}

/// Caches the vectors of the endpoint's answer `body` to `request` in `session`, for `query`.
/// Nothing is cached unless the whole answer is valid.
///
/// # Errors
/// [`EmbeddingsError::Endpoint`] when the body is not a valid answer for the request's texts;
/// [`EmbeddingsError::Cache`] when the vectors do not fit the session's cache (or embeddings
/// are not enabled).
pub fn absorb_embeddings(
    session: &mut Session,
    query: &str,
    request: &EmbeddingsRequest,
    body: &str,
) -> Result<(), EmbeddingsError> {
    let vectors = parse_embeddings_response(body, request.batch.texts.len(), None)?;
    session.absorb_embeddings(query, &request.batch, vectors)?;
    Ok(())
}

/// One embeddings request for recall: the texts it embeds and the HTTP request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallEmbeddingsRequest {
    /// The texts (the query's first, when it has one) and the keys of the stored ones.
    pub batch: ccm_core::session::RecallEmbeddingBatch,
    /// The request to send to the endpoint.
    pub request: HttpRequest,
}

/// The request that embeds `query` (when given and not embedded yet) and up to `max_texts`
/// stored texts without a vector, newest first, or `None` when embeddings are off for the
/// session or there is nothing to embed. Send it and give the answer's body to
/// [`absorb_recall_embeddings`].
///
/// # Errors
/// [`EmbeddingsEndpointError::InvalidConfig`] when the endpoint's model is not the one the
/// session keeps vectors of, and the errors of [`EmbeddingsEndpoint::build_request`].
pub fn recall_embeddings_request(
    session: &Session,
    query: Option<&str>,
    endpoint: &EmbeddingsEndpoint,
    max_texts: usize,
) -> Result<Option<RecallEmbeddingsRequest>, EmbeddingsError> {
    let Some(batch) = session.recall_embedding_batch(query, max_texts) else {
        return Ok(None);
    };
    let request = request_for_model(endpoint, &batch.model, &batch.texts, |kept, asked| {
        format!("the session keeps vectors of model '{kept}' but the endpoint uses '{asked}'; enable embeddings anew")
    })?;
    Ok(Some(RecallEmbeddingsRequest { batch, request }))
}

/// Keeps the vectors of the endpoint's answer `body` to `request` in `session`. Nothing is kept
/// unless the whole answer is valid.
///
/// # Errors
/// [`EmbeddingsError::Endpoint`] when the body is not a valid answer for the request's texts;
/// [`EmbeddingsError::Cache`] when the vectors do not fit the session's (or embeddings are off).
pub fn absorb_recall_embeddings(
    session: &mut Session,
    request: &RecallEmbeddingsRequest,
    body: &str,
) -> Result<(), EmbeddingsError> {
    let vectors = parse_embeddings_response(body, request.batch.texts.len(), None)?;
    session.absorb_recall_embeddings(&request.batch, vectors)?;
    Ok(())
}
