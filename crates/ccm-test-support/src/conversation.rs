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
