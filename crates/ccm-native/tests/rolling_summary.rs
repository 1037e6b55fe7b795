//! After an emergency compaction, the runner asks the model for a written rolling summary and
//! keeps the extractive one when that request fails.

mod common;

use ccm_core::compaction::RollingSource;
use ccm_core::{Config, Session};
use ccm_native::HttpTransport;
use ccm_provider::ProviderKind;
use common::{ok_turn, server, settings, transport};

fn small_session() -> Session {
    let config = Config {
        context_window: 4_400,
        reserved_output_tokens: 400,
        ..Config::default()
    };
    Session::new(config).unwrap()
}

/// Short questions, then a large paste: it jumps usage past the emergency threshold in one
/// message, and the chat before it is what the rolling summary replaces.
fn long_message(t: usize) -> String {
    let ids = if t == 14 { 600 } else { 4 };
    format!(
        "Message {t}: here is a paste of server logs with request ids {}",
        (0..ids)
            .map(|i| format!("req-{t}-{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Plays the long messages one turn each, until `stop` says so after a turn.
fn play(
    session: &mut Session,
    transport: &mut HttpTransport,
    mut stop: impl FnMut(&Session) -> bool,
) {
    for t in 0..15 {
        ok_turn(session, &long_message(t), settings(false), transport);
        if stop(session) {
            break;
        }
    }
}

#[test]
fn an_emergency_compaction_gets_a_model_written_rolling_summary() {
    let server = server();
    let mut transport = transport(&server, ProviderKind::OpenAiCompatible);
    let mut session = small_session();
    let mut upgraded = false;
    play(&mut session, &mut transport, |session| {
        if let Some(rolling) = session.compaction().rolling_summary() {
            if rolling.source == RollingSource::Llm {
                upgraded = true;
                assert!(
                    rolling.text.contains("mock"),
                    "the mock's summary: {}",
                    rolling.text
                );
                assert!(
                    session.compaction().rolling_summary_upgrade().is_none(),
                    "nothing left to upgrade"
                );
                return true;
            }
        }
        false
    });
    assert!(
        upgraded,
        "an emergency compaction happened and its summary was written by the model"
    );
    let summary_requests = server
        .requests()
        .iter()
        .filter(|r| r.summary_request)
        .count();
    assert!(summary_requests >= 1);
}

#[test]
fn a_failed_summary_request_keeps_the_extractive_summary() {
    let server = server();
    let mut transport = transport(&server, ProviderKind::OpenAiCompatible);
    let mut session = small_session();
    // Every summary request gets a server error; the turns themselves succeed.
    for _ in 0..15 {
        server.enqueue(
            ccm_mock_llm::ScriptedReply::fault(ccm_mock_llm::Fault::status(500))
                .for_summary_requests(),
        );
    }
    let mut saw_extractive = false;
    play(&mut session, &mut transport, |session| {
        if let Some(rolling) = session.compaction().rolling_summary() {
            assert_eq!(rolling.source, RollingSource::Extractive);
            assert!(!rolling.text.trim().is_empty());
            saw_extractive = true;
        }
        false
    });
    let levels: Vec<(u8, u64, u64)> = session
        .history()
        .points()
        .iter()
        .flat_map(|m| {
            m.compactions
                .iter()
                .map(|c| (c.level, c.tokens_before, c.tokens_after))
        })
        .collect();
    assert!(
        saw_extractive,
        "an emergency compaction happened: {levels:?}, rolling {:?}, plan {}",
        session.compaction().rolling_summary().map(|r| r.tokens),
        session.working_tokens()
    );
}
