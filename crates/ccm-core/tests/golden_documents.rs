//! Golden session documents and stored headers: the exported format may only change on purpose.
//!
//! Three scripted sessions (everyday use with pins and every kind of eviction, heavy use in a
//! small window with attachments and all compaction levels, and a branch) are exported and
//! compared byte for byte with the files in `tests/golden/documents/`; each golden document is
//! imported and exported again and must come back byte for byte; and each session's stored
//! header, written and read back through the store layout, must come back byte for byte.
//! Refresh with `CCM_BLESS=1` after a deliberate format change, and review the diff.
#![cfg(not(target_arch = "wasm32"))]

use ccm_core::compaction::AttachmentKind;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::{Config, Session};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::{chatter, concluded_effort, turn};
use std::path::PathBuf;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/documents")
        .join(name)
}

/// A deterministic text of `words` words from a small vocabulary, different for each seed.
fn text(seed: usize, words: usize) -> String {
    const VOCABULARY: [&str; 16] = [
        "ledger", "invoice", "rounding", "replica", "latency", "cache", "shard", "queue", "retry",
        "backoff", "token", "cookie", "payload", "checksum", "archive", "rollback",
    ];
    (0..words)
        .map(|i| VOCABULARY[(seed * 7 + i * 3 + i / 5) % VOCABULARY.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Everyday use: efforts with written and extractive summaries, references, an expansion that
/// decays, summaries evicted by age and by the summary budget, ambient chat beyond the window,
/// and every kind of pin.
fn everyday() -> Session {
    let mut s = Session::new(Config {
        summary_token_budget: 60,
        ..Config::default()
    })
    .unwrap();
    chatter(&mut s);
    concluded_effort(
        &mut s,
        "auth bug",
        "Fixed 401 errors: refresh token TTL raised to 86400 seconds.",
        2,
    );
    concluded_effort(
        &mut s,
        "email bounce",
        "Soft bounces retried three times, hard bounces suppressed.",
        1,
    );
    turn(
        &mut s,
        "Let's work on the cache layer.",
        &[("open_effort", r#"{"name": "cache layer"}"#)],
        "Started.",
    );
    turn(
        &mut s,
        "It evicts with LRU and a 60 second TTL.",
        &[],
        "Noted.",
    );
    turn(
        &mut s,
        "Done with the cache layer.",
        &[("close_effort", "{}")],
        "Concluded.",
    );
    turn(
        &mut s,
        "Show me the auth bug again.",
        &[("expand_effort", r#"{"id": "auth-bug"}"#)],
        "Here it is.",
    );
    for _ in 0..4 {
        chatter(&mut s);
    }
    turn(
        &mut s,
        "Start the docs.",
        &[
            ("open_effort", r#"{"name": "docs"}"#),
            (
                "pin_context",
                r#"{"target": "summary:email-bounce", "ttl_turns": 3}"#,
            ),
        ],
        "ok",
    );
    s.pin(
        PinRequest {
            target: "summary:auth-bug".into(),
            kind: PinKind::Sticky,
            ttl_turns: None,
            task: None,
        },
        PinOrigin::User,
    )
    .unwrap();
    for i in 0..24 {
        turn(
            &mut s,
            &format!("Docs question {i}: {}", text(i, 12)),
            &[],
            &text(i + 100, 20),
        );
    }
    turn(
        &mut s,
        "What did we do about bounces?",
        &[("search_efforts", r#"{"query": "bounces retried"}"#)],
        "Retried three times.",
    );
    s
}

/// Heavy use in a small window: large attachments and long answers, so every compaction level
/// fires and a rolling summary stands in for older history.
fn compaction() -> Session {
    let mut s = Session::new(Config {
        context_window: 4_096,
        reserved_output_tokens: 512,
        ..Config::default()
    })
    .unwrap();
    for t in 0..40 {
        s.begin_turn(&format!("Turn {t}: {}", text(t, 30)), 0)
            .unwrap();
        if t % 4 == 0 {
            s.attach(
                &format!("notes-{t}.md"),
                AttachmentKind::File,
                &text(t + 50, 600),
                None,
            )
            .unwrap();
        }
        if t == 10 {
            s.execute_tool("open_effort", r#"{"name": "migration"}"#);
        }
        if t == 30 {
            s.execute_tool(
                "close_effort",
                r#"{"summary": "Migrated the ledger tables."}"#,
            );
        }
        s.end_turn(&text(t + 200, 120), 0).unwrap();
    }
    s
}

/// A branch forked at an earlier turn, then continued.
fn branch() -> Session {
    let s = everyday();
    let mut fork = s.fork_at(s.turn() - 5, "what-if").unwrap();
    turn(
        &mut fork,
        "On this branch, let's reopen the cache layer.",
        &[("reopen_effort", r#"{"id": "cache-layer"}"#)],
        "Reopened.",
    );
    fork
}

fn check(name: &str, session: &Session) {
    let path = golden(&format!("{name}.json"));
    let json = session.to_json().unwrap();
    let header_path = golden(&format!("{name}.header.json"));
    let mut store = MemoryStore::default();
    let batch = session.full_write_batch().unwrap();
    store.apply(&batch).unwrap();
    let header = serde_json::to_string_pretty(&batch.header).unwrap();
    if std::env::var_os("CCM_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &json).unwrap();
        std::fs::write(&header_path, &header).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(json == expected, "{name}: the exported document changed; if intended, rerun with CCM_BLESS=1 and review the diff");
    // The golden document imports and exports to the same bytes.
    let again = Session::from_json(&expected).unwrap().to_json().unwrap();
    assert!(
        again == expected,
        "{name}: the golden document did not round-trip byte for byte"
    );
    // The stored header, written and read back through the store layout, too.
    let expected_header = std::fs::read_to_string(&header_path).unwrap();
    assert!(
        header == expected_header,
        "{name}: the stored header changed"
    );
    let (opened, report) = Session::from_store(store.load(), session.counter().clone()).unwrap();
    assert!(report.is_clean(), "{name}: {:?}", report.problems);
    let mut reread = opened.header();
    // The header a session writes next carries the next revision; the rest must be the same.
    reread.revision = batch.header.revision;
    let reread = serde_json::to_string_pretty(&reread).unwrap();
    assert!(
        reread == expected_header,
        "{name}: the header read back from the store differs"
    );
}

#[test]
fn documents_and_headers_match_the_golden_files() {
    check("everyday", &everyday());
    check("compaction", &compaction());
    check("branch", &branch());
}

/// What the golden documents freeze about search, stated independently of the code that wrote
/// them: each concluded effort's indexed log terms are at most `LOG_TERMS`, sorted and unique,
/// words said in its own log, never stopwords.
#[test]
fn the_golden_documents_index_words_of_each_effort_s_own_log() {
    for name in ["everyday", "compaction", "branch"] {
        let json = std::fs::read_to_string(golden(&format!("{name}.json"))).unwrap();
        let document: serde_json::Value = serde_json::from_str(&json).unwrap();
        for effort in document["efforts"].as_array().unwrap() {
            let Some(terms) = effort["summary"]["terms"].as_array() else {
                continue;
            };
            let terms: Vec<&str> = terms.iter().map(|t| t.as_str().unwrap()).collect();
            let id = effort["id"].as_str().unwrap();
            assert!(terms.len() <= ccm_core::search::LOG_TERMS, "{name}/{id}");
            assert!(
                terms.windows(2).all(|w| w[0] < w[1]),
                "{name}/{id}: {terms:?}"
            );
            let log: String = effort["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap().to_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            for term in &terms {
                assert!(log.contains(term), "{name}/{id}: {term} is not in its log");
                assert!(!ccm_core::text::is_stopword(term), "{name}/{id}: {term}");
            }
        }
    }
    // And by name: the auth bug's distinctive log words are found, its filler is not.
    let branch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden("branch.json")).unwrap()).unwrap();
    let auth = &branch["efforts"][0];
    assert_eq!(auth["id"], "auth-bug");
    let terms: Vec<&str> = auth["summary"]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for expected in ["frobnicates", "widget", "dedupe"] {
        assert!(terms.contains(&expected), "{terms:?}");
    }
    for filler in ["the", "of", "we", "should"] {
        assert!(!terms.contains(&filler), "{terms:?}");
    }
}
