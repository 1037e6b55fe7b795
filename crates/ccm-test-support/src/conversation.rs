//! Conversations driven without an LLM: a session with the defaults, a turn with scripted tool
//! calls, a concluded effort and a neutral exchange, as the tests of ccm-core and ccm-engine
//! play them.

use ccm_core::{Config, Session};

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

/// A session where an ambient exchange came first and the effort "auth bug" was then opened
/// and concluded, its summary naming the fix (the refresh token's TTL); the six messages are
/// timed 1 to 6. The web app's view-model and component tests both start from it and open
/// their own efforts on top.
pub fn auth_bug_concluded() -> Session {
    let mut s = session();
    s.begin_turn("hello there", 1).unwrap();
    s.end_turn("hi!", 2).unwrap();
    s.begin_turn("Let's work on the auth bug", 3).unwrap();
    s.open_effort("auth bug", None).unwrap();
    s.end_turn("Started.", 4).unwrap();
    s.begin_turn("Fixed: the TTL was wrong.", 5).unwrap();
    s.close_effort(None, Some("Refresh token TTL 1h -> 24h fixed the 401s."))
        .unwrap();
    s.end_turn("Concluded.", 6).unwrap();
    s
}
