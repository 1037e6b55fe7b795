//! Relevance: BM25 ranking, the keep selection, and the embeddings cache and cosine similarity.
//! (The endpoint's request and response are ccm-provider's tests; the way between a session
//! and an endpoint is the engine's.)

use ccm_core::compaction::{
    bm25_scores, cosine_similarity, select_keep, EmbeddingBatch, EmbeddingCache, EmbeddingError,
    RelevanceError,
};
use ccm_test_support::portable_tests;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const HISTORY: [&str; 6] = [
    "USER: The dashboard button colors look off on mobile.\nASSISTANT: Use the theme palette.",
    "USER: Which database index speeds up the orders query?\nASSISTANT: A composite index on (customer_id, created_at).",
    "USER: How should we store user passwords?\nASSISTANT: Hash every password with argon2id and a per-user salt; never store plain passwords.",
    "USER: Lunch plans?\nASSISTANT: Pizza at noon.",
    "USER: The login form should lock accounts after failed attempts.\nASSISTANT: Five failed attempts lock the account for 15 minutes.",
    "USER: Deploy the UI on Friday.\nASSISTANT: Scheduled.",
];

fn argmax(scores: &[f64]) -> usize {
    let mut best = 0;
    for (i, s) in scores.iter().enumerate() {
        if *s > scores[best] {
            best = i;
        }
    }
    best
}

/// A toy embedding with one axis per topic, so tests know which vectors are close.
fn toy_embedding(text: &str) -> Vec<f32> {
    let lower = text.to_lowercase();
    let axis = |words: &[&str]| words.iter().filter(|w| lower.contains(*w)).count() as f32;
    vec![
        axis(&["password", "hash", "login", "argon2"]),
        axis(&["database", "index", "query"]),
        axis(&["button", "ui", "color", "theme"]),
        0.1,
    ]
}

/// What an embedding model answers to `batch`: one toy vector per text, in order.
fn toy_vectors(batch: &EmbeddingBatch) -> Vec<Vec<f32>> {
    batch.texts.iter().map(|text| toy_embedding(text)).collect()
}

portable_tests! {
    fn lexical_ranking_puts_the_on_topic_message_first() {
        let scores = bm25_scores("How does password hashing work?", &HISTORY);
        assert_eq!(argmax(&scores), 2, "{scores:?}");
        assert_eq!(scores[3], 0.0, "lunch shares no word with the query");
        assert_eq!(scores, bm25_scores("How does password hashing work?", &HISTORY), "deterministic");
        let db = bm25_scores("the orders query is slow, which index?", &HISTORY);
        assert_eq!(argmax(&db), 1, "{db:?}");
        // A query without content words scores nothing, leaving the choice to recency.
        assert!(bm25_scores("is it?", &HISTORY).iter().all(|s| *s == 0.0));
        assert!(bm25_scores("password", &[]).is_empty());
    }

    fn rare_words_outweigh_common_ones() {
        let docs = ["deploy service alpha", "deploy service beta", "deploy service gamma", "rotate gamma keys"];
        let scores = bm25_scores("deploy gamma", &docs);
        // "gamma" is rarer than "deploy", so the documents with it rank first.
        assert!(scores[2] > scores[0] && scores[3] > scores[0], "{scores:?}");
    }

    fn the_specification_example_keeps_seven_of_fifteen_plus_the_last_five() {
        let recency: Vec<u64> = (1..=20).collect();
        let scores: Vec<f64> = (1..=20).map(|i| f64::from((i * 37) % 11)).collect();
        let chosen = select_keep(&recency, &scores, 500, 5).unwrap();
        assert_eq!(chosen.keep.len(), 5 + 7);
        assert_eq!(chosen.leave.len(), 8);
        for last in 15..20 {
            assert!(chosen.keep.contains(&last), "the last five always stay");
        }
        // Every older item that stays scores at least as well as every one that leaves.
        let min_kept = chosen.keep.iter().filter(|&&i| i < 15).map(|&i| scores[i]).fold(f64::MAX, f64::min);
        let max_left = chosen.leave.iter().map(|&i| scores[i]).fold(f64::MIN, f64::max);
        assert!(min_kept >= max_left);
    }

    fn the_last_messages_stay_even_when_they_score_lowest() {
        let chosen = select_keep(&[1, 2, 3, 4, 5, 6], &[9.0, 8.0, 7.0, 6.0, 0.0, 0.0], 0, 2).unwrap();
        assert_eq!(chosen.keep, [4, 5]);
        assert_eq!(chosen.leave, [0, 1, 2, 3]);
        let all = select_keep(&[1, 2], &[0.0, 0.0], 0, 10).unwrap();
        assert_eq!(all.keep, [0, 1]);
        assert!(all.leave.is_empty());
        let everything = select_keep(&[1, 2, 3, 4], &[0.0; 4], 1000, 1).unwrap();
        assert_eq!(everything.keep, [0, 1, 2, 3]);
    }

    fn ties_go_to_the_newer_message_whatever_the_input_order() {
        let chosen = select_keep(&[1, 2, 3, 4, 5], &[1.0; 5], 500, 1).unwrap();
        // Four older items, keep two: the two newest of them.
        assert_eq!(chosen.keep, [2, 3, 4]);
        // The same candidates listed newest first: the same messages stay.
        let shuffled = select_keep(&[5, 4, 3, 2, 1], &[1.0; 5], 500, 1).unwrap();
        assert_eq!(shuffled.keep, [0, 1, 2]);
        assert_eq!(shuffled.leave, [3, 4]);
    }

    fn bad_selection_input_gets_precise_errors() {
        assert_eq!(
            select_keep(&[1, 2], &[0.5], 500, 1).unwrap_err(),
            RelevanceError::LengthMismatch { candidates: 2, scores: 1 }
        );
        assert_eq!(
            select_keep(&[1, 2], &[0.5, f64::NAN], 500, 1).unwrap_err().to_string(),
            "the score of candidate 1 is not a finite number (NaN)"
        );
        assert_eq!(
            select_keep(&[1], &[0.5], 1001, 1).unwrap_err().to_string(),
            "keep fraction must be at most 1000‰, got 1001‰"
        );
    }

    fn the_cache_requests_only_what_is_missing_and_ranks_by_cosine() {
        let mut cache = EmbeddingCache::new("toy");
        let candidates: Vec<(u64, &str)> = HISTORY.iter().enumerate().map(|(i, t)| (i as u64 * 2 + 1, *t)).collect();
        let query = "How does password hashing work?";
        let batch = cache.batch(query, &candidates);
        assert_eq!(batch.texts.len(), 7, "the query and six texts");
        assert_eq!(batch.texts[0], query);
        assert_eq!(batch.seqs, [1, 3, 5, 7, 9, 11]);

        let query_vector = cache.absorb(&batch, toy_vectors(&batch)).unwrap();
        assert_eq!(cache.len(), 6);
        assert_eq!(cache.dimensions(), Some(4));
        let seqs: Vec<u64> = candidates.iter().map(|(s, _)| *s).collect();
        let scores = cache.scores(&query_vector, &seqs).unwrap();
        assert_eq!(argmax(&scores), 2, "{scores:?}");

        // The next turn only sends the new message (and the query); a repeated key is sent once.
        let mut more = candidates.clone();
        more.push((13, "USER: Rotate the login password hash pepper.\nASSISTANT: Done."));
        more.push((13, "duplicate key"));
        let next = cache.batch("password?", &more);
        assert_eq!(next.seqs, [13]);
        assert_eq!(next.texts, ["password?", "USER: Rotate the login password hash pepper.\nASSISTANT: Done."]);
        cache.absorb(&next, toy_vectors(&next)).unwrap();
        assert_eq!(cache.len(), 7);

        cache.retain(|seq| seq > 5);
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.scores(&query_vector, &[1]).unwrap_err().to_string(), "no embedding is cached for seq 1; request it first");
    }

    fn a_bad_response_caches_nothing() {
        let mut cache = EmbeddingCache::new("toy");
        let batch = cache.batch("q", &[(1, "a"), (2, "b")]);
        let short = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(cache.absorb(&batch, short).unwrap_err(), EmbeddingError::CountMismatch { expected: 3, got: 2 });
        assert!(cache.is_empty());
        // One unusable vector spoils the whole answer.
        let with_nan = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![f32::NAN, 1.0]];
        assert_eq!(
            cache.absorb(&batch, with_nan).unwrap_err().to_string(),
            "embedding index 2 is unusable: value 0 is not finite"
        );
        let ragged = vec![vec![1.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(
            cache.absorb(&batch, ragged).unwrap_err().to_string(),
            "embedding index 1 has 3 dimensions, expected 2"
        );
        assert!(cache.is_empty());
        // Vectors must keep the cache's dimensions across responses.
        cache.insert(7, vec![1.0, 0.0]).unwrap();
        let three = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
        assert_eq!(
            cache.absorb(&batch, three).unwrap_err().to_string(),
            "embedding index 0 has 3 dimensions, expected 2"
        );
        assert_eq!(cache.len(), 1);
        assert_eq!(
            cache.insert(8, vec![1.0, 2.0, 3.0]).unwrap_err().to_string(),
            "embedding seq 8 has 3 dimensions, expected 2"
        );
        assert_eq!(
            cache.insert(8, vec![f32::NAN, 1.0]).unwrap_err().to_string(),
            "embedding seq 8 is unusable: value 0 is not finite"
        );
        // A query vector of the wrong length cannot be scored.
        assert_eq!(
            cache.scores(&[1.0, 0.0, 0.0], &[7]).unwrap_err().to_string(),
            "embedding query has 3 dimensions, expected 2"
        );
    }

    fn a_cache_belongs_to_one_model() {
        let cache = EmbeddingCache::new("toy");
        let batch = cache.batch("q", &[]);
        assert!(batch.seqs.is_empty(), "with everything cached only the query is sent");
        assert_eq!(batch.texts, ["q"]);
        assert_eq!(batch.model, "toy");
        let mut foreign = EmbeddingCache::new("other");
        assert!(matches!(foreign.absorb(&batch, vec![vec![1.0]]), Err(EmbeddingError::WrongBatch(_))));
        assert!(foreign.is_empty());
        // The cache round-trips through JSON with its model and vectors.
        let mut filled = EmbeddingCache::new("toy");
        filled.insert(3, vec![0.25, -1.5]).unwrap();
        let json = serde_json::to_string(&filled).unwrap();
        assert_eq!(serde_json::from_str::<EmbeddingCache>(&json).unwrap(), filled);
    }

    fn cosine_similarity_is_exact_for_simple_vectors() {
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[2.0, 0.0]).unwrap(), 1.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[0.0, 3.0]).unwrap(), 0.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[-1.0, 0.0]).unwrap(), -1.0);
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[1.0, 1.0]).unwrap(), 0.0, "a zero vector is unrelated");
        assert!(cosine_similarity(&[1.0], &[1.0, 2.0]).is_err());
    }
}
