//! Helpers shared by the integration tests, which run natively and, through
//! `wasm-bindgen-test`, in headless Chromium.

#![allow(dead_code)]

use ccm_core::{Config, Session};

pub mod memory_store;
pub mod rolling_history;

/// Declares tests that run natively (`#[test]`) and in the browser (`#[wasm_bindgen_test]`).
#[macro_export]
macro_rules! portable_tests {
    ($( $(#[$meta:meta])* fn $name:ident() $body:block )*) => {
        $(
            $(#[$meta])*
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            #[cfg_attr(not(target_arch = "wasm32"), test)]
            fn $name() $body
        )*
    };
}

/// A session with the specification's defaults and exact o200k counts.
pub fn session() -> Session {
    Session::new(Config::default()).expect("default configuration is valid")
}

/// Runs one turn with the given tool calls; panics on a failed tool call so a broken script
/// cannot pass silently. Returns the turn report.
pub fn turn(
    session: &mut Session,
    user: &str,
    tools: &[(&str, &str)],
    assistant: &str,
) -> ccm_core::TurnReport {
    session.begin_turn(user, 0).expect("no turn in progress");
    for (name, args) in tools {
        let outcome = session.execute_tool(name, args);
        assert!(outcome.ok, "{name}({args}) failed: {}", outcome.result);
    }
    session.end_turn(assistant, 0).expect("turn in progress")
}

/// Opens an effort, has `exchanges` exchanges in it, and concludes it with `summary`.
pub fn concluded_effort(
    session: &mut Session,
    name: &str,
    summary: &str,
    exchanges: usize,
) -> String {
    let open_args = format!(r#"{{"name": "{name}"}}"#);
    turn(
        session,
        &format!("Let's work on {name}."),
        &[("open_effort", &open_args)],
        "Started.",
    );
    for i in 0..exchanges {
        turn(
            session,
            &format!("Detail {i} of {name}: the widget frobnicates twice."),
            &[],
            &format!("Noted detail {i}; we should dedupe the calls."),
        );
    }
    let close_args = serde_json::json!({ "summary": summary }).to_string();
    turn(
        session,
        "That's done.",
        &[("close_effort", &close_args)],
        "Concluded.",
    );
    ccm_core::text::slugify(name)
}

/// A neutral exchange that references no effort in these tests.
pub fn chatter(session: &mut Session) -> ccm_core::TurnReport {
    turn(session, "How is the weather today?", &[], "Sunny and mild.")
}

/// Topic words of the synthetic documents and conversations (those of the CLI's compaction
/// proof run, `ccm_cli::proof`).
pub const WORDS: [&str; 24] = [
    "invoice",
    "ledger",
    "rounding",
    "currency",
    "schema",
    "migration",
    "index",
    "replica",
    "latency",
    "cache",
    "shard",
    "queue",
    "retry",
    "backoff",
    "token",
    "session",
    "cookie",
    "header",
    "payload",
    "checksum",
    "archive",
    "snapshot",
    "rollback",
    "deploy",
];

/// A deterministic document of about `words` words for topic `seed`: large, distinct texts for
/// attachments. The same documents as the CLI's compaction proof run (`ccm_cli::proof`), which
/// the core cannot depend on.
pub fn synthetic_document(seed: usize, words: usize) -> String {
    let mut text = format!("Design notes {seed}. ");
    for i in 0..words {
        text.push_str(WORDS[(i * 7 + seed * 13 + i / 5) % WORDS.len()]);
        text.push_str(if i % 12 == 11 { ". " } else { " " });
    }
    text
}
