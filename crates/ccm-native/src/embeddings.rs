//! Embeddings for compaction's relevance ranking over a real endpoint (OpenAI-compatible
//! `/v1/embeddings`): the session says what to embed, this sends it and hands the answer back.

use crate::http::Timeouts;
use ccm_core::Session;
use ccm_engine::embeddings::{absorb_embeddings, embeddings_request};
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
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(timeouts.connect))
        .timeout_recv_response(Some(timeouts.first_byte))
        .timeout_per_read(Some(timeouts.idle))
        .build()
        .new_agent();
    let mut builder = agent.post(&batch.request.url);
    for (name, value) in &batch.request.headers {
        builder = builder.header(name, value);
    }
    let mut response = builder.send(&batch.request.body).map_err(|error| {
        ProviderError::Network(format!(
            "embeddings request to {} failed: {error}",
            batch.request.url
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
    absorb_embeddings(session, query, &batch, &body).map_err(|error| {
        ProviderError::Network(format!("the embeddings answer was not usable: {error}"))
    })?;
    Ok(true)
}
