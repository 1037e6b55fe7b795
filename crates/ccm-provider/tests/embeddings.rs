//! The embeddings endpoint: the OpenAI-compatible request, and the response parsed into one
//! vector per text, with a precise error for everything that does not match.

use ccm_provider::embeddings::parse_embeddings_response;
use ccm_provider::{
    EmbeddingsEndpoint, EmbeddingsEndpointError, Preset, ProviderConfig, ProviderKind,
};
use ccm_test_support::portable_tests;
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn endpoint() -> EmbeddingsEndpoint {
    EmbeddingsEndpoint {
        provider: ProviderConfig::custom(
            ProviderKind::OpenAiCompatible,
            "http://127.0.0.1:9/v1/",
            None,
        ),
        model: "toy".to_string(),
        dimensions: None,
    }
}

portable_tests! {
    fn the_embeddings_request_is_openai_compatible() {
        let mut e = EmbeddingsEndpoint {
            provider: ProviderConfig::from_preset(Preset::OpenAi, Some("sk-test".into()))
                .with_header("OpenAI-Organization", "org-1")
                .with_header("Content-Type", "application/json; charset=utf-8"),
            model: "text-embedding-3-small".to_string(),
            dimensions: Some(256),
        };
        let request = e.build_request(&["hello", "world"]).unwrap();
        assert_eq!(request.url, "https://api.openai.com/v1/embeddings");
        assert_eq!(request.method.as_str(), "POST");
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(request.header("openai-organization"), Some("org-1"));
        assert_eq!(request.header("content-type"), Some("application/json; charset=utf-8"));
        assert_eq!(request.headers.iter().filter(|(n, _)| n == "content-type").count(), 1);
        let body: Value = serde_json::from_str(&request.body).unwrap();
        assert_eq!(
            body,
            json!({"model": "text-embedding-3-small", "input": ["hello", "world"], "encoding_format": "float", "dimensions": 256})
        );
        assert!(!format!("{request:?}").contains("sk-test"), "the key never shows in logs");

        assert_eq!(e.build_request(&[]).unwrap_err(), EmbeddingsEndpointError::NoInput);
        e.model = " ".into();
        assert_eq!(
            e.build_request(&["x"]).unwrap_err().to_string(),
            "the embeddings endpoint is misconfigured: the embedding model name is empty"
        );
        let anthropic = EmbeddingsEndpoint {
            provider: ProviderConfig::from_preset(Preset::Anthropic, Some("k".into())),
            model: "m".into(),
            dimensions: None,
        };
        assert!(matches!(anthropic.build_request(&["x"]), Err(EmbeddingsEndpointError::UnsupportedProvider(_))));
        let bad_url = EmbeddingsEndpoint {
            provider: ProviderConfig::custom(ProviderKind::OpenAiCompatible, "localhost:11434", None),
            model: "m".into(),
            dimensions: None,
        };
        assert!(bad_url.build_request(&["x"]).unwrap_err().to_string().contains("must start with http:// or https://"));
        // A local server: no key, no authorization header, no dimensions field.
        let local = endpoint().build_request(&["x"]).unwrap();
        assert_eq!(local.url, "http://127.0.0.1:9/v1/embeddings");
        assert_eq!(local.header("authorization"), None);
        assert!(!local.body.contains("dimensions"));
    }

    fn responses_are_parsed_in_index_order() {
        let body = r#"{"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.5]}
        ]}"#;
        assert_eq!(parse_embeddings_response(body, 2, None).unwrap(), [vec![1.0, 0.5], vec![0.0, 1.0]]);
        // Without indices, position decides.
        let plain = r#"{"data": [{"embedding": [1, 2]}, {"embedding": [3, 4]}]}"#;
        assert_eq!(parse_embeddings_response(plain, 2, Some(2)).unwrap(), [vec![1.0, 2.0], vec![3.0, 4.0]]);
        // Base64 little-endian f32: [1.0, -2.0].
        let encoded = r#"{"data": [{"index": 0, "embedding": "AACAPwAAAMA="}]}"#;
        assert_eq!(parse_embeddings_response(encoded, 1, None).unwrap(), [vec![1.0, -2.0]]);
    }

    fn malformed_responses_get_precise_errors() {
        let error = |body: &str, expected: usize, dims: Option<usize>| {
            parse_embeddings_response(body, expected, dims).unwrap_err().to_string()
        };
        assert!(error("<html>502</html>", 1, None).starts_with("the embeddings response is malformed: not JSON"));
        assert_eq!(
            error(r#"{"error": {"message": "model not found", "type": "invalid_request_error"}}"#, 1, None),
            "the embeddings endpoint reported an error: model not found"
        );
        assert_eq!(error(r#"{"object": "list"}"#, 1, None), "the embeddings response is malformed: no `data` array");
        assert_eq!(
            error(r#"{"data": [{"embedding": [1]}]}"#, 2, None),
            "the embeddings response has 1 vectors for 2 texts"
        );
        assert_eq!(
            error(r#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}"#, 2, None),
            "the embeddings response has a bad index 0 (duplicate, or not below 2)"
        );
        assert_eq!(
            error(r#"{"data": [{"index": 5, "embedding": [1]}]}"#, 1, None),
            "the embeddings response has a bad index 5 (duplicate, or not below 1)"
        );
        assert_eq!(
            error(r#"{"data": [{"index": -1, "embedding": [1]}]}"#, 1, None),
            "the embeddings response is malformed: `data[0].index` is not a non-negative integer: -1"
        );
        assert_eq!(
            error(r#"{"data": [{"embedding": [1, 2]}, {"embedding": [1, 2, 3]}]}"#, 2, None),
            "embedding index 1 has 3 dimensions, expected 2"
        );
        assert_eq!(
            error(r#"{"data": [{"embedding": [1, 2]}]}"#, 1, Some(3)),
            "embedding index 0 has 2 dimensions, expected 3"
        );
        assert_eq!(
            error(r#"{"data": [{"embedding": [1, "x"]}]}"#, 1, None),
            "embedding index 0 is unusable: value 1 is not a number: \"x\""
        );
        assert_eq!(error(r#"{"data": [{"embedding": []}]}"#, 1, None), "embedding index 0 is unusable: it has no dimensions");
        assert_eq!(
            error(r#"{"data": [{"embedding": {"values": [1]}}]}"#, 1, None),
            "the embeddings response is malformed: `data[0].embedding` is missing or not an array of numbers"
        );
        assert_eq!(
            error(r#"{"data": [{"embedding": "not base64!"}]}"#, 1, None),
            "embedding index 0 is unusable: a string embedding that is not base64 of little-endian f32 values"
        );
        assert_eq!(
            error(r#"{"data": [{"embedding": [1e39]}]}"#, 1, None),
            "embedding index 0 is unusable: value 0 is not finite"
        );
    }

    fn a_response_with_too_few_vectors_is_refused() {
        let short = r#"{"data": [{"embedding": [1, 0]}, {"embedding": [0, 1]}]}"#;
        assert_eq!(
            parse_embeddings_response(short, 3, None).unwrap_err(),
            EmbeddingsEndpointError::CountMismatch { expected: 3, got: 2 }
        );
    }
}
