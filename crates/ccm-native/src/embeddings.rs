//! Embeddings over a real endpoint (OpenAI-compatible `/v1/embeddings`), for compaction's
//! relevance ranking and for recall's: the session says what to embed, this sends it and hands
//! the answer back.

use crate::http::Timeouts;
use ccm_core::Session;
use ccm_engine::embeddings::{
    absorb_embeddings, absorb_recall_embeddings, embeddings_request, recall_embeddings_request,
};
use ccm_provider::{EmbeddingsEndpoint, ErrorContext, ProviderError, RequestOptions};
use std::io::Read;

/// Embeds `query` and the session's ambient exchanges that are not cached yet, so the next
/// compaction ranks older messages by embeddings. Returns whether vectors were fetched (`false`
/// when embeddings are not enabled for the session).
///
/// # Errors
/// The endpoint's HTTP errors as [`ProviderError`]s, timeouts and connection failures, and a
/// response that is not a valid embeddings answer. On any error nothing is cached and the
/// session falls back to lexical ranking.
pub fn refresh_embeddings(
    session: &mut Session,
    query: &str,
    endpoint: &EmbeddingsEndpoint,
    timeouts: Timeouts,
) -> Result<bool, ProviderError> {
    let batch = match embeddings_request(session, query, endpoint) {
        Ok(Some(batch)) => batch,
        Ok(None) => return Ok(false),
        Err(error) => return Err(ProviderError::Network(error.to_string())),
    };
    let body = post(&batch.request, endpoint, timeouts)?;
    absorb_embeddings(session, query, &batch, &body).map_err(|error| {
        ProviderError::Network(format!("the embeddings answer was not usable: {error}"))
    })?;
    Ok(true)
}

/// Texts embedded per request by [`refresh_recall_embeddings`].
pub const RECALL_EMBEDDING_BATCH: usize = 64;

/// Embeds `query` (when given) and up to `max_texts` stored texts of the session that have no
/// vector yet, newest first, in requests of [`RECALL_EMBEDDING_BATCH`] texts, so recall ranks
/// them by meaning as well as by words. Returns how many texts were embedded (0 when embeddings
/// are not enabled for the session).
///
/// # Errors
/// As [`refresh_embeddings`]. Vectors of the requests before a failed one are kept.
pub fn refresh_recall_embeddings(
    session: &mut Session,
    query: Option<&str>,
    endpoint: &EmbeddingsEndpoint,
    timeouts: Timeouts,
    max_texts: usize,
) -> Result<usize, ProviderError> {
    let mut embedded = 0;
    let mut query = query;
    loop {
        let room = max_texts
            .saturating_sub(embedded)
            .min(RECALL_EMBEDDING_BATCH);
        let request = match recall_embeddings_request(session, query, endpoint, room) {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(embedded),
            Err(error) => return Err(ProviderError::Network(error.to_string())),
        };
        let body = post(&request.request, endpoint, timeouts)?;
        absorb_recall_embeddings(session, &request, &body).map_err(|error| {
            ProviderError::Network(format!("the embeddings answer was not usable: {error}"))
        })?;
        embedded += request.batch.keys.len();
        query = None;
        if request.batch.keys.is_empty() || embedded >= max_texts {
            return Ok(embedded);
        }
    }
}

/// Sends one embeddings request and returns the body of a successful answer.
fn post(
    request: &ccm_provider::HttpRequest,
    endpoint: &EmbeddingsEndpoint,
    timeouts: Timeouts,
) -> Result<String, ProviderError> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(timeouts.connect))
        .timeout_recv_response(Some(timeouts.first_byte))
        .timeout_per_read(Some(timeouts.idle))
        .build()
        .new_agent();
    let mut builder = agent.post(&request.url);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    let mut response = builder.send(&request.body).map_err(|error| {
        ProviderError::Network(format!(
            "embeddings request to {} failed: {error}",
            request.url
        ))
    })?;
    let status = response.status().as_u16();
    let mut body = String::new();
    response
        .body_mut()
        .as_reader()
        .read_to_string(&mut body)
        .map_err(|error| {
            ProviderError::Network(format!("reading the embeddings answer failed: {error}"))
        })?;
    if !(200..300).contains(&status) {
        let context = ErrorContext::new(
            &endpoint.provider,
            &RequestOptions::new(endpoint.model.clone()),
        );
        return Err(ProviderError::from_http(status, &[], &body, &context));
    }
    Ok(body)
}
