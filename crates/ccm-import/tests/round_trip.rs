//! Export to the original CCM layout and import back: the same conversation comes back.

use ccm_core::snapshot::SessionDocument;
use ccm_core::{ApproximateCounter, Config, Session};
use std::sync::Arc;

fn turn(s: &mut Session, at_ms: u64, user: &str, tools: &[(&str, &str)], assistant: &str) {
    s.begin_turn(user, at_ms).unwrap();
    for (name, args) in tools {
        let outcome = s.execute_tool(name, args);
        assert!(outcome.ok, "{name}: {}", outcome.result);
    }
    s.end_turn(assistant, at_ms + 5_000).unwrap();
}

/// Ambient chat, a concluded effort with a written summary, one with the extractive summary,
/// two open efforts with a switch between them, quotes and newlines in the texts, and turns
/// without a clock (time 0) after turns with one.
fn session() -> Session {
    let mut s = Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
    let t0 = 1_771_174_800_000;
    turn(
        &mut s,
        t0,
        "Hi! How's the \"weather\"?",
        &[],
        "Sunny.\nAnd mild.",
    );
    turn(
        &mut s,
        t0 + 60_000,
        "Let's work on the auth bug: 401 after an hour.",
        &[(
            "open_effort",
            r#"{"name": "auth bug", "description": "users logged out"}"#,
        )],
        "Started.",
    );
    turn(
        &mut s,
        t0 + 120_000,
        "The refresh token TTL is 3600.",
        &[],
        "Raise it to a day.",
    );
    turn(
        &mut s,
        t0 + 180_000,
        "Done, it works.",
        &[(
            "close_effort",
            r#"{"summary": "Refresh token TTL raised from 1h to 24h."}"#,
        )],
        "Concluded.",
    );
    turn(
        &mut s,
        0,
        "Let's work on the billing export.",
        &[("open_effort", r#"{"name": "billing export"}"#)],
        "Started.",
    );
    turn(
        &mut s,
        0,
        "The CSV misses the VAT column.",
        &[],
        "Add it after the net amount.",
    );
    turn(
        &mut s,
        0,
        "Also the party planning.",
        &[("open_effort", r#"{"name": "party"}"#)],
        "Started.",
    );
    turn(&mut s, 0, "Bowling on Friday.", &[], "Booked.");
    turn(
        &mut s,
        0,
        "Back to billing: VAT is 20%.",
        &[("switch_effort", r#"{"id": "billing-export"}"#)],
        "Noted.",
    );
    turn(
        &mut s,
        0,
        "Party is sorted.",
        &[("close_effort", r#"{"id": "party"}"#)],
        "Concluded.",
    );
    turn(&mut s, 0, "What's for lunch? 🍜", &[], "Noodles.");
    s
}

fn conversation(document: &SessionDocument) -> serde_json::Value {
    let messages = |list: &[ccm_core::Message]| {
        list.iter()
            .map(|m| serde_json::json!([m.seq, m.turn, m.role.as_str(), m.content]))
            .collect::<Vec<_>>()
    };
    serde_json::json!({
        "turn": document.turn,
        "active": document.active,
        "open": document.open,
        "ambient": messages(&document.ambient),
        "efforts": document.efforts.iter().map(|e| serde_json::json!({
            "id": e.id,
            "name": e.name,
            "description": e.description,
            "status": format!("{:?}", e.status),
            "summary": e.summary.as_ref().map(|s| s.text.clone()),
            "last_referenced_turn": e.last_referenced_turn,
            "opened_turn": e.opened_turn,
            "concluded_turn": e.concluded_turn,
            "messages": messages(&e.messages),
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn an_exported_session_imports_as_the_same_conversation() {
    let original = session().to_document().unwrap();
    let files = ccm_import::export(&original);
    assert!(
        files.manifest_yaml.starts_with("efforts:\n"),
        "{}",
        files.manifest_yaml
    );
    assert_eq!(
        files
            .effort_logs
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["auth-bug", "billing-export", "party"]
    );
    assert!(files.session_state_json.contains("\"turn_count\":11"));
    let imported =
        ccm_import::convert(&files.files(), Config::default(), &ApproximateCounter).unwrap();
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    assert_eq!(conversation(&imported.document), conversation(&original));
    // Times that rose are kept; turns without a clock get one millisecond after the last.
    let times =
        |document: &SessionDocument| document.ambient.iter().map(|m| m.at_ms).collect::<Vec<_>>();
    assert_eq!(times(&imported.document)[..2], times(&original)[..2]);
    // The imported session opens, and exporting it again writes the same files.
    let session =
        Session::from_document(imported.document.clone(), Arc::new(ApproximateCounter)).unwrap();
    assert_eq!(session.efforts().active_id(), Some("billing-export"));
    assert_eq!(ccm_import::export(&session.to_document().unwrap()), files);
}

#[test]
fn an_empty_session_exports_and_imports() {
    let empty = Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
    let files = ccm_import::export(&empty.to_document().unwrap());
    assert_eq!(files.raw_jsonl, "");
    let imported =
        ccm_import::convert(&files.files(), Config::default(), &ApproximateCounter).unwrap();
    assert_eq!(imported.document.next_seq, 0);
    assert!(imported.document.efforts.is_empty());
}
