//! Embeddings for recall in the browser: the session names the texts to embed, ccm-engine
//! writes the endpoint's request and reads its answer, `fetch` sends it.

use crate::error::BrowserError;
use crate::session::SessionCell;
use ccm_engine::embeddings::{absorb_recall_embeddings, recall_embeddings_request};
use ccm_provider::{EmbeddingsEndpoint, ErrorContext, RequestOptions};
use std::cell::RefCell;
use std::rc::Rc;

/// A failure of the embeddings endpoint, for the person (no turn was undone: none ran).
fn provider_failure(message: String) -> BrowserError {
    BrowserError::Provider {
        message: format!("embeddings: {message}"),
        user_text: String::new(),
    }
}

/// Texts embedded per request.
pub const BATCH: usize = 64;

/// How long one embeddings request may take, answer included.
const TIMEOUT_MS: u64 = 60_000;

/// Embeds `query` (when given) and up to `max_texts` stored texts of the session in memory
/// that have no vector yet, newest first, in requests of [`BATCH`] texts, so recall's searches
/// rank by meaning as well as by words. Returns how many stored texts were embedded (0 when
/// embeddings are not enabled for the session).
///
/// # Errors
/// [`BrowserError::Provider`] for the endpoint's failures (vectors of earlier requests are
/// kept), a misconfigured endpoint, or an answer that is not valid embeddings.
pub async fn refresh_recall_embeddings(
    cell: &Rc<RefCell<SessionCell>>,
    query: Option<&str>,
    endpoint: &EmbeddingsEndpoint,
    max_texts: usize,
) -> Result<usize, BrowserError> {
    let context = ErrorContext::new(
        &endpoint.provider,
        &RequestOptions::new(endpoint.model.clone()),
    );
    let mut embedded = 0;
    let mut query = query;
    loop {
        let room = max_texts.saturating_sub(embedded).min(BATCH);
        let request = recall_embeddings_request(&cell.borrow().core, query, endpoint, room)
            .map_err(|e| provider_failure(e.to_string()))?;
        let Some(request) = request else {
            return Ok(embedded);
        };
        let body = crate::transport::post(&request.request, &context, TIMEOUT_MS)
            .await
            .map_err(|e| provider_failure(e.to_string()))?;
        absorb_recall_embeddings(&mut cell.borrow_mut().core, &request, &body)
            .map_err(|e| provider_failure(e.to_string()))?;
        embedded += request.batch.keys.len();
        query = None;
        if request.batch.keys.is_empty() || embedded >= max_texts {
            return Ok(embedded);
        }
    }
}
