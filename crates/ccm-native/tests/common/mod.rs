//! Helpers shared by the integration tests against the real mock server.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use ccm_core::{Config, Session};
use ccm_engine::{EngineSettings, RunError, TurnEvent, TurnFailure, TurnResult};
use ccm_mock_llm::{MockConfig, MockServer};
use ccm_native::{run_blocking_turn, CancelToken, HttpTransport, Timeouts};
use ccm_provider::{ProviderConfig, ProviderKind, RetryPolicy};
use std::time::Duration;

/// Both protocols, for tests that must hold for each.
pub const KINDS: [ProviderKind; 2] = [ProviderKind::OpenAiCompatible, ProviderKind::Anthropic];

/// A mock server on a free port of 127.0.0.1; it stops when dropped.
pub fn server() -> MockServer {
    MockServer::start(MockConfig::default())
}

/// The provider configuration of the mock server for `kind`.
pub fn config(server: &MockServer, kind: ProviderKind) -> ProviderConfig {
    let base = match kind {
        ProviderKind::OpenAiCompatible => server.openai_base_url(),
        ProviderKind::Anthropic => format!("{}/v1", server.base_url()),
    };
    ProviderConfig::custom(kind, &base, Some("test-key".to_string()))
}

/// Timeouts short enough that a hung test fails fast, long enough for a loaded machine.
pub fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(5),
        first_byte: Duration::from_secs(10),
        idle: Duration::from_secs(10),
        total: Duration::from_secs(30),
    }
}

/// A transport to the mock server.
pub fn transport(server: &MockServer, kind: ProviderKind) -> HttpTransport {
    HttpTransport::with_timeouts(config(server, kind), timeouts())
}

/// Settings that never retry, so an error surfaces at once.
pub fn settings(stream: bool) -> EngineSettings {
    EngineSettings::new("mock-model")
        .with_stream(stream)
        .with_retry(RetryPolicy::never())
}

/// A retry policy with short delays, for tests that wait through retries.
pub fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        initial_delay_ms: 50,
        max_delay_ms: 400,
        max_retry_after_ms: 5_000,
    }
}

/// A new session with the default configuration.
pub fn session() -> Session {
    Session::new(Config::default()).expect("the default configuration is valid")
}

/// Runs one turn against the transport, collecting the streamed text of the reply.
pub fn turn_with(
    session: &mut Session,
    text: &str,
    settings: EngineSettings,
    transport: &mut HttpTransport,
    cancel: &CancelToken,
) -> (Result<TurnResult, RunError>, String) {
    let mut streamed = String::new();
    let outcome = run_blocking_turn(session, text, settings, transport, cancel, &mut |event| {
        if let TurnEvent::Delta {
            purpose,
            delta: ccm_provider::StreamDelta::Text(text),
        } = event
        {
            if purpose.is_answer() {
                streamed.push_str(text);
            }
        }
    });
    (outcome, streamed)
}

/// A turn that must succeed.
pub fn ok_turn(
    session: &mut Session,
    text: &str,
    settings: EngineSettings,
    transport: &mut HttpTransport,
) -> TurnResult {
    match turn_with(session, text, settings, transport, &CancelToken::new()).0 {
        Ok(result) => result,
        Err(error) => panic!("the turn {text:?} failed: {error}"),
    }
}

/// A turn that must fail; returns the failure.
pub fn failed_turn(
    session: &mut Session,
    text: &str,
    settings: EngineSettings,
    transport: &mut HttpTransport,
) -> TurnFailure {
    match turn_with(session, text, settings, transport, &CancelToken::new()).0 {
        Err(RunError::Failed(failure)) => *failure,
        Err(other) => panic!("the turn {text:?} was misused: {other}"),
        Ok(result) => panic!("the turn {text:?} should have failed: {}", result.reply),
    }
}

/// A session with an open, active effort `auth-bug` holding two exchanges, made without any
/// provider.
pub fn session_with_open_effort() -> Session {
    let mut s = session();
    s.begin_turn(
        "Let's work on the auth bug: users get 401 after an hour.",
        0,
    )
    .unwrap();
    assert!(s.execute_tool("open_effort", r#"{"name": "auth bug"}"#).ok);
    s.end_turn("Started.", 0).unwrap();
    s.begin_turn("The refresh token TTL is 3600 in config/auth.yaml.", 0)
        .unwrap();
    s.end_turn("That explains the hour.", 0).unwrap();
    s
}
