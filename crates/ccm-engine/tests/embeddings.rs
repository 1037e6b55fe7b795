//! Embeddings between a session and an endpoint: the session names the texts, the endpoint's
//! request carries them, and its answer fills the session's cache (or, when it is bad, nothing
//! does).

use ccm_core::Session;
use ccm_engine::embeddings::{absorb_embeddings, embeddings_request, EmbeddingsError};
use ccm_provider::{EmbeddingsEndpoint, EmbeddingsEndpointError, ProviderConfig, ProviderKind};
use ccm_test_support::portable_tests;
use ccm_test_support::{session, turn};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn endpoint(model: &str) -> EmbeddingsEndpoint {
    EmbeddingsEndpoint {
        provider: ProviderConfig::custom(
            ProviderKind::OpenAiCompatible,
            "http://127.0.0.1:9/v1/",
            None,
        ),
        model: model.to_string(),
        dimensions: None,
    }
}

/// What an OpenAI-compatible server answers to `request_body`: a vector per text that says
/// whether it mentions passwords, listed in reverse order (servers may list items in any order;
/// `index` says where each belongs).
fn toy_server(request_body: &str) -> String {
    let request: Value = serde_json::from_str(request_body).unwrap();
    let data: Vec<Value> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let about_passwords = text.as_str().unwrap().contains("password");
            let vector = if about_passwords {
                [1.0, 0.1]
            } else {
                [0.0, 1.0]
            };
            json!({"object": "embedding", "index": index, "embedding": vector})
        })
        .rev()
        .collect();
    json!({"object": "list", "data": data, "model": "toy"}).to_string()
}

/// A session with embeddings enabled and three ambient exchanges.
fn chatty_session() -> Session {
    let mut session = session();
    session.enable_embeddings("toy");
    turn(
        &mut session,
        "How should we store passwords?",
        &[],
        "Hash them with argon2id.",
    );
    turn(&mut session, "Lunch plans?", &[], "Pizza at noon.");
    turn(
        &mut session,
        "Which index for orders?",
        &[],
        "A composite one.",
    );
    session
}

fn inputs(request: &ccm_engine::embeddings::EmbeddingsRequest) -> Vec<String> {
    let body: Value = serde_json::from_str(&request.request.body).unwrap();
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|text| text.as_str().unwrap().to_string())
        .collect()
}

portable_tests! {
    fn the_session_names_the_texts_and_the_answer_fills_its_cache() {
        let mut session = chatty_session();
        let query = "Remind me how passwords are stored";
        let request = embeddings_request(&session, query, &endpoint("toy")).unwrap().unwrap();
        assert_eq!(request.request.url, "http://127.0.0.1:9/v1/embeddings");
        let sent = inputs(&request);
        assert_eq!(sent.len(), 4, "the query and three exchanges: {sent:?}");
        assert_eq!(sent[0], query);
        assert_eq!(sent, request.batch.texts);
        absorb_embeddings(&mut session, query, &request, &toy_server(&request.request.body)).unwrap();

        // Everything is cached now: the next request only carries the query.
        let again = embeddings_request(&session, "and lunch?", &endpoint(" toy ")).unwrap().unwrap();
        assert_eq!(inputs(&again), ["and lunch?"]);
    }

    fn a_session_without_embeddings_asks_for_nothing() {
        let mut session = session();
        turn(&mut session, "Hello", &[], "Hi.");
        assert_eq!(embeddings_request(&session, "q", &endpoint("toy")).unwrap(), None);
    }

    fn an_endpoint_of_another_model_is_refused() {
        let session = chatty_session();
        let error = embeddings_request(&session, "q", &endpoint("nomic-embed-text")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the embeddings endpoint is misconfigured: the cache holds vectors of model 'toy' but the endpoint uses 'nomic-embed-text'; start a new cache"
        );
        assert!(matches!(error, EmbeddingsError::Endpoint(EmbeddingsEndpointError::InvalidConfig(_))));
    }

    fn a_bad_answer_caches_nothing() {
        let mut session = chatty_session();
        let request = embeddings_request(&session, "q", &endpoint("toy")).unwrap().unwrap();
        let short = r#"{"data": [{"embedding": [1, 0]}, {"embedding": [0, 1]}]}"#;
        assert_eq!(
            absorb_embeddings(&mut session, "q", &request, short).unwrap_err(),
            EmbeddingsError::Endpoint(EmbeddingsEndpointError::CountMismatch { expected: 4, got: 2 })
        );
        let ragged = r#"{"data": [{"embedding": [1, 0]}, {"embedding": [0, 1]}, {"embedding": [0, 1]}, {"embedding": [0, 1, 0]}]}"#;
        assert_eq!(
            absorb_embeddings(&mut session, "q", &request, ragged).unwrap_err().to_string(),
            "embedding index 3 has 3 dimensions, expected 2"
        );
        let again = embeddings_request(&session, "q", &endpoint("toy")).unwrap().unwrap();
        assert_eq!(inputs(&again).len(), 4, "nothing was cached");
        // Vectors of another length than the cached ones do not fit the session's cache.
        absorb_embeddings(&mut session, "q", &again, &toy_server(&again.request.body)).unwrap();
        let session_only = embeddings_request(&session, "q", &endpoint("toy")).unwrap().unwrap();
        let three_dims = r#"{"data": [{"embedding": [1, 0, 0]}]}"#;
        assert!(matches!(
            absorb_embeddings(&mut session, "q", &session_only, three_dims),
            Err(EmbeddingsError::Cache(ccm_core::compaction::EmbeddingError::DimensionMismatch { .. }))
        ));
    }
}
