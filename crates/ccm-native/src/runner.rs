//! The native turn loop: drives ccm-engine's [`TurnEngine`] with a [`Responder`], waits out retry
//! delays, and stops when the turn is cancelled.

use crate::cancel::CancelToken;
use crate::http::HttpTransport;
use ccm_core::Session;
use ccm_engine::offline::{OfflineModel, SessionFacts};
use ccm_engine::{EngineSettings, LlmRequest, RunError, Step, TurnEngine, TurnEvent, TurnResult};
use ccm_provider::{ProviderError, ProviderResponse, StreamDelta};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Something that answers [`LlmRequest`]s: a provider over HTTP, or the offline demo model.
pub trait Responder {
    /// Answers one attempt of `request`, passing streamed deltas to `on_delta`. `session` is
    /// the session as it stands (in the turn), for responders that read it.
    ///
    /// # Errors
    /// Any [`ProviderError`]; [`ProviderError::Cancelled`] when `cancel` was set.
    fn respond(
        &mut self,
        request: &LlmRequest,
        session: &Session,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError>;

    /// The name to show for the model's replies.
    fn label(&self) -> String;
}

impl Responder for HttpTransport {
    fn respond(
        &mut self,
        request: &LlmRequest,
        _session: &Session,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        self.send(request, cancel, on_delta)
    }

    fn label(&self) -> String {
        self.config().base_url.clone()
    }
}

/// The offline demo model as a [`Responder`]: no network, answers at once. When the request
/// asks for streaming it passes the answer's words as deltas, like a streaming provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineResponder {
    model: OfflineModel,
}

impl OfflineResponder {
    /// The responder.
    pub fn new() -> OfflineResponder {
        OfflineResponder::default()
    }
}

impl Responder for OfflineResponder {
    fn respond(
        &mut self,
        request: &LlmRequest,
        session: &Session,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let response = self.model.respond(request, &SessionFacts::of(session));
        if request.options.stream {
            for delta in OfflineModel::stream_deltas(&response) {
                on_delta(delta);
            }
        }
        Ok(response)
    }

    fn label(&self) -> String {
        ccm_engine::offline::OFFLINE_MODEL_LABEL.to_string()
    }
}

/// After a turn whose compaction replaced history with the extractive rolling summary, asks the
/// model for a written one. Any failure keeps the extractive summary, which is never empty: the
/// turn has already succeeded and must not fail because of this extra request.
fn upgrade_rolling_summary(
    session: &mut Session,
    settings: &EngineSettings,
    responder: &mut dyn Responder,
    cancel: &CancelToken,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) {
    let Some(request) = ccm_engine::rolling_summary_request(session, settings) else {
        return;
    };
    observe(TurnEvent::Sending(&request));
    let purpose = request.purpose.clone();
    let answer = responder.respond(&request, session, cancel, &mut |delta| {
        observe(TurnEvent::Delta {
            purpose: &purpose,
            delta: &delta,
        })
    });
    if let Ok(response) = answer {
        session.upgrade_rolling_summary(&response.text);
    }
}

/// Milliseconds since the Unix epoch, the timestamps the session stores.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Runs one turn to its end: every request through `responder`, retry delays waited out (and
/// cut short by cancellation), and events passed to `observe`.
///
/// # Errors
/// [`RunError::Engine`] when the turn cannot begin (the session is already in a turn);
/// [`RunError::Failed`] when the provider failed or the turn was cancelled; the session is then
/// exactly as before the turn and the failure holds the person's text.
pub fn run_turn(
    session: &mut Session,
    user_text: &str,
    settings: EngineSettings,
    responder: &mut dyn Responder,
    cancel: &CancelToken,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let rolling_settings = settings.clone();
    let mut engine = TurnEngine::begin(session, user_text, now_ms(), settings)?;
    loop {
        let step = if cancel.is_cancelled() {
            engine.cancel(session)
        } else {
            engine.next(session)?
        };
        match step {
            Step::Send(request) => {
                observe(TurnEvent::Sending(&request));
                let purpose = request.purpose.clone();
                let outcome = responder.respond(&request, session, cancel, &mut |delta| {
                    observe(TurnEvent::Delta {
                        purpose: &purpose,
                        delta: &delta,
                    })
                });
                engine.receive(session, outcome, now_ms())?;
            }
            Step::Wait(wait) => {
                observe(TurnEvent::Retrying(&wait));
                // A cancellation during the wait is picked up at the top of the loop.
                cancel.wait(Duration::from_millis(wait.delay_ms));
            }
            Step::Done(result) => {
                upgrade_rolling_summary(session, &rolling_settings, responder, cancel, observe);
                return Ok(*result);
            }
            Step::Failed(failure) => return Err(RunError::Failed(failure)),
        }
    }
}
