//! What the transport tests (`transport.rs`, `model_output.rs`) share: the first request of a
//! real turn, and a provider at an address nothing listens on (each test replaces `fetch`, so
//! no request leaves the page).

use ccm_browser::transport::Limits;
use ccm_core::{Config, Session};
use ccm_engine::{EngineSettings, LlmRequest, Step, TurnEngine};
use ccm_provider::{ProviderConfig, ProviderKind, RetryPolicy};

/// The first request of a turn that begins with `user_text`, streamed or not, never retried.
pub fn first_request(user_text: &str, stream: bool) -> LlmRequest {
    let mut session = Session::new(Config::default()).unwrap();
    let settings = EngineSettings::new("mock-model")
        .with_stream(stream)
        .with_retry(RetryPolicy::never());
    let mut engine = TurnEngine::begin(&mut session, user_text, 0, settings).unwrap();
    match engine.next(&mut session).unwrap() {
        Step::Send(request) => request,
        _ => panic!("a turn starts with a request"),
    }
}

/// An OpenAI-compatible provider whose address is never reached.
pub fn provider() -> ProviderConfig {
    ProviderConfig::custom(
        ProviderKind::OpenAiCompatible,
        "http://127.0.0.1:9/v1",
        None,
    )
}

/// The transport's default limits but for the idle timeout (0: none), which the tests make
/// short so that a silent stream is given up on quickly.
pub fn idle_limits(idle_ms: u64) -> Limits {
    Limits {
        idle_ms,
        ..Limits::default()
    }
}
