//! The embeddings endpoint: determinism, shape, and vectors that make ranking meaningful.

mod common;

use ccm_mock_llm::{cosine_similarity, embed, MockConfig, MockServer, DEFAULT_DIMENSIONS};
use common::post_json;
use serde_json::{json, Value};

fn vectors(response: &Value) -> Vec<Vec<f32>> {
    response["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            item["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

#[test]
fn embeddings_are_deterministic_unit_vectors_across_servers() {
    let texts = ["Fix the login bug", "Plan the Q3 roadmap", ""];
    let first = MockServer::start(MockConfig::default());
    let second = MockServer::start(MockConfig::default());
    let body = json!({"model": "text-embedding-3-small", "input": texts});
    let a = post_json(first.addr(), "/v1/embeddings", &body);
    let b = post_json(second.addr(), "/v1/embeddings", &body);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    assert_eq!(a.body, b.body, "byte-identical responses from two servers");

    let json = a.json();
    assert_eq!(json["object"], "list");
    assert_eq!(json["model"], "text-embedding-3-small");
    for (i, item) in json["data"].as_array().unwrap().iter().enumerate() {
        assert_eq!(item["object"], "embedding");
        assert_eq!(item["index"], i);
    }
    let vectors = vectors(&json);
    assert_eq!(vectors.len(), 3);
    for (vector, text) in vectors.iter().zip(texts) {
        assert_eq!(vector.len(), DEFAULT_DIMENSIONS);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text:?} has norm {norm}");
        assert_eq!(
            *vector,
            embed(text, DEFAULT_DIMENSIONS),
            "the library computes the same"
        );
    }
    assert!(json["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn similar_texts_score_higher_than_unrelated_ones() {
    let server = MockServer::start(MockConfig::default());
    let query = "why does the login fail after rotating the JWT secret";
    let related =
        "Effort auth-bug: login failures after JWT secret rotation; decided to reload keys";
    let partly = "Effort onboarding: the login page copy needs a friendlier tone";
    let unrelated = [
        "Effort roadmap: planning the Q3 roadmap with marketing and sales",
        "Effort garden: which tomatoes to plant in spring and how much water they need",
        "Effort invoices: the billing export drops cents in CSV files",
    ];
    let mut input = vec![query, related, partly];
    input.extend(unrelated);
    let json = post_json(server.addr(), "/v1/embeddings", &json!({"input": input})).json();
    let vectors = vectors(&json);
    let score = |i: usize| cosine_similarity(&vectors[0], &vectors[i]);
    let (related, partly) = (score(1), score(2));
    let best_unrelated = (3..vectors.len()).map(score).fold(f32::MIN, f32::max);
    assert!(
        related > 0.3,
        "shared words give a clearly positive score: {related}"
    );
    assert!(
        related > partly && partly > best_unrelated,
        "ranking must follow the overlap: related {related}, partly {partly}, unrelated {best_unrelated}"
    );
    assert!(
        best_unrelated.abs() < 0.15,
        "unrelated texts score near zero: {best_unrelated}"
    );
}

#[test]
fn dimensions_and_base64_encoding_are_supported() {
    let server = MockServer::start(MockConfig::default());
    let floats = post_json(
        server.addr(),
        "/v1/embeddings",
        &json!({"input": "context management", "dimensions": 16}),
    )
    .json();
    let floats = &vectors(&floats)[0];
    assert_eq!(floats.len(), 16);

    let encoded = post_json(
        server.addr(),
        "/v1/embeddings",
        &json!({"input": "context management", "dimensions": 16, "encoding_format": "base64"}),
    )
    .json();
    let text = encoded["data"][0]["embedding"].as_str().unwrap();
    let decoded: Vec<f32> = decode_base64(text)
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(&decoded, floats);
}

#[test]
fn invalid_embedding_requests_get_400() {
    let server = MockServer::start(MockConfig::default());
    for body in [
        json!({}),
        json!({"input": []}),
        json!({"input": [[1, 2, 3]]}),
        json!({"input": 5}),
        json!({"input": "x", "dimensions": 0}),
        json!({"input": "x", "encoding_format": "hex"}),
    ] {
        let response = post_json(server.addr(), "/v1/embeddings", &body);
        assert_eq!(response.status, 400, "{body}");
        assert!(response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains('`'));
    }
}

/// An independent base64 decoder, so the test does not trust the server's encoder.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    for group in text.as_bytes().chunks(4) {
        let data: Vec<u8> = group.iter().copied().filter(|&c| c != b'=').collect();
        let mut n = 0u32;
        for (i, &c) in data.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..data.len() - 1]);
    }
    out
}
