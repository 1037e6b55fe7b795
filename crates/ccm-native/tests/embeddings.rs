//! Compaction ranks older messages by embeddings from a real endpoint (the mock server's
//! `/v1/embeddings`) and falls back to the lexical model when the endpoint fails.

mod common;

use ccm_core::{Config, Session};
use ccm_native::{refresh_embeddings, refresh_recall_embeddings};
use ccm_provider::EmbeddingsEndpoint;
use ccm_provider::{ProviderConfig, ProviderKind};
use common::{server, timeouts};

const TOPICS: [&str; 6] = [
    "garden compost worms",
    "sailing knots wind",
    "bread sourdough oven",
    "chess openings gambit",
    "bicycle gears chain",
    "violin bow rosin",
];

fn long_chat_turn(
    session: &mut Session,
    endpoint: Option<&EmbeddingsEndpoint>,
    t: usize,
) -> Result<bool, ccm_provider::ProviderError> {
    let topic = TOPICS[t % TOPICS.len()];
    let user = format!("Tell me more about {topic}, part {t}; I want the long version with every detail about {topic}.");
    // A host shows a failed refresh and goes on with the turn: ranking falls back to lexical.
    let fetched = match endpoint {
        Some(endpoint) => refresh_embeddings(session, &user, endpoint, timeouts()),
        None => Ok(false),
    };
    session.begin_turn(&user, t as u64).unwrap();
    let answer = format!(
        "Here is a long answer about {topic}. {}",
        format!("More on {topic}. ").repeat(25)
    );
    session.end_turn(&answer, t as u64).unwrap();
    fetched
}

/// The mock provider's embeddings model at `base_url`.
fn mock_endpoint(base_url: &str) -> EmbeddingsEndpoint {
    EmbeddingsEndpoint {
        provider: ProviderConfig::custom(ProviderKind::OpenAiCompatible, base_url, None),
        model: "mock-embed".to_string(),
        dimensions: None,
    }
}

fn small_session() -> Session {
    let config = Config {
        context_window: 3_000,
        reserved_output_tokens: 500,
        ..Config::default()
    };
    let mut session = Session::new(config).unwrap();
    session.enable_embeddings("mock-embed");
    session
}

/// Every compaction the session's history recorded, in order.
fn compaction_records(session: &Session) -> Vec<&ccm_core::compaction::CompactionRecord> {
    session
        .history()
        .points()
        .iter()
        .flat_map(|m| &m.compactions)
        .collect()
}

#[test]
fn compaction_ranks_by_embeddings_from_the_endpoint() {
    let server = server();
    let endpoint = mock_endpoint(&server.openai_base_url());
    let mut session = small_session();
    for t in 0..24 {
        assert!(
            long_chat_turn(&mut session, Some(&endpoint), t).unwrap(),
            "turn {t} fetched vectors"
        );
    }
    let records = compaction_records(&session);
    assert!(
        records
            .iter()
            .any(|r| r.level >= 2 && r.relevance == "embeddings"),
        "a hard compaction ranked by embeddings: {records:?}"
    );
    let embedding_calls = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/embeddings"))
        .count();
    assert_eq!(embedding_calls, 24, "one batch per turn");
    assert!(session.build_plan().totals.context_tokens <= session.config().request_budget());
}

#[test]
fn a_failing_endpoint_falls_back_to_lexical_ranking() {
    // Nothing listens on this port: every refresh fails, and compaction still works.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let endpoint = mock_endpoint(&format!("http://127.0.0.1:{port}/v1"));
    let mut session = small_session();
    for t in 0..24 {
        let fetched = long_chat_turn(&mut session, Some(&endpoint), t);
        let error = fetched.expect_err("a dead endpoint is an error the host can show");
        assert!(error.to_string().contains("127.0.0.1"), "turn {t}: {error}");
    }
    let records = compaction_records(&session);
    assert!(!records.is_empty());
    assert!(
        records.iter().all(|r| r.relevance == "lexical"),
        "{records:?}"
    );
}

/// The mock endpoint's vectors share a feature between words with the same first four letters
/// ("photograph", "photography"), which the stemmer keeps apart: a message that shares no
/// index term with the question is found only when the ranking fuses in the vectors.
#[test]
fn recall_fuses_the_endpoints_vectors_with_the_lexical_ranking() {
    let server = server();
    let endpoint = mock_endpoint(&server.openai_base_url());
    let mut session = Session::new(Config::default()).unwrap();
    let said = "I framed my photographs of the harbour at dawn.";
    session.begin_turn(said, 1).unwrap();
    session.end_turn("They will look lovely.", 2).unwrap();
    for t in 0..14u64 {
        session
            .begin_turn(&format!("Small talk number {t}."), t + 3)
            .unwrap();
        session.end_turn("Indeed.", t + 3).unwrap();
    }
    let question = "Tell me about my photography.";
    let texts = |session: &Session| -> Vec<String> {
        session
            .find_messages(question)
            .map(|found| {
                found
                    .groups
                    .iter()
                    .flat_map(|g| g.excerpts.iter())
                    .flat_map(|e| e.messages.iter().map(|m| m.text.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    // By words alone the question finds nothing: "photography" and "photographs" have
    // different stems, and no other word is shared.
    assert!(!texts(&session).iter().any(|t| t == said));
    session.enable_embeddings("mock-embed");
    let embedded = refresh_recall_embeddings(
        &mut session,
        Some(question),
        &endpoint,
        timeouts(),
        usize::MAX,
    )
    .expect("the mock endpoint embeds");
    assert_eq!(embedded, session.stored_message_count());
    assert_eq!(session.recall_state().texts_without_vectors(), 0);
    let found = texts(&session);
    assert!(found.iter().any(|t| t == said), "{found:?}");
    // A wrong model is refused before anything is sent.
    let other = EmbeddingsEndpoint {
        model: "another-model".to_string(),
        ..endpoint.clone()
    };
    assert!(refresh_recall_embeddings(&mut session, Some("x"), &other, timeouts(), 8).is_err());
}
