//! The browser host of ccm-engine's one turn driver (`ccm_engine::driver`), shared by ccm-wasm's
//! `Session.runTurn` and the browser app: the session in its shared cell, requests sent with
//! `fetch` ([`crate::transport`]) or answered by the offline demo model, waits on JavaScript
//! timers, stored logs read from the session's store when a tool call needs them
//! (`Step::Load`), and an `AbortSignal` to cancel.

use crate::session::{load_records, BrowserSession, SessionCell};
use crate::transport::{send_with_limits, sleep, Limits};
use ccm_core::Session as CoreSession;
use ccm_engine::driver::{OfflineHost, TurnHost};
use ccm_engine::{LlmRequest, LogLoad, RunError, TurnEngine, TurnEvent, TurnResult};
use ccm_provider::{ProviderConfig, ProviderError, ProviderResponse, StreamDelta};
use std::cell::RefCell;
use std::rc::Rc;
use web_sys::AbortSignal;

/// Who answers a turn's requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// The offline demo model, with a pause between the words it streams (0 for none), so
    /// that a person sees a reply arrive as from a real model and can stop it half-way.
    Offline {
        /// Milliseconds between streamed words.
        word_pause_ms: u64,
    },
    /// A provider over `fetch`, with how long its responses may take.
    Provider(ProviderConfig, Limits),
}

struct BrowserHost {
    cell: Rc<RefCell<SessionCell>>,
    provider: Option<(ProviderConfig, Limits)>,
    signal: Option<AbortSignal>,
    /// The failure of a request the browser refused to show this page by CORS. The engine
    /// retries network failures, but a server that does not allow this page's origin refuses
    /// every attempt alike: the attempts after it fail at once with the same error, without
    /// a request or a wait, so the person reads the reason in a second rather than after
    /// the whole retry schedule.
    blocked: Option<ProviderError>,
}

impl TurnHost for BrowserHost {
    fn with_session<R>(&mut self, change: impl FnOnce(&mut CoreSession) -> R) -> R {
        change(&mut self.cell.borrow_mut().core)
    }

    async fn send(
        &mut self,
        request: &LlmRequest,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        let Some((config, limits)) = &self.provider else {
            return Err(ProviderError::InvalidConfig(
                "no provider is configured for this turn".to_string(),
            ));
        };
        // The transport passes deltas through a shared reference; the driver's observer
        // changes state, so it is reached through a cell.
        if let Some(blocked) = &self.blocked {
            return Err(blocked.clone());
        }
        let on_delta = RefCell::new(on_delta);
        let forward = |delta: StreamDelta| (on_delta.borrow_mut())(delta);
        let outcome =
            send_with_limits(config, request, self.signal.as_ref(), *limits, &forward).await;
        if let Err(error @ ProviderError::Network(message)) = &outcome {
            if message.contains(crate::transport::CORS_MARK) {
                self.blocked = Some(error.clone());
            }
        }
        outcome
    }

    async fn sleep(&mut self, ms: u64) {
        if self.blocked.is_none() {
            sleep(ms, self.signal.as_ref()).await;
        }
    }

    async fn load_logs(&mut self, load: &LogLoad) -> Result<(), String> {
        load_records(&self.cell, &load.efforts, load.index, &load.messages)
            .await
            .map_err(|failure| failure.to_string())
    }

    fn is_cancelled(&self) -> bool {
        self.signal.as_ref().is_some_and(AbortSignal::aborted)
    }

    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }
}

/// Drives a begun turn of the session in `cell` to its end with ccm-engine's one driver.
///
/// # Errors
/// As `ccm_engine::driver::drive`: the turn failed or was cancelled (the session is as before
/// it), or the engine was misused.
pub async fn drive(
    cell: Rc<RefCell<SessionCell>>,
    engine: &mut TurnEngine,
    model: &Model,
    signal: Option<AbortSignal>,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let provider = match model {
        Model::Provider(config, limits) => Some((config.clone(), *limits)),
        Model::Offline { .. } => None,
    };
    let mut host = BrowserHost {
        cell,
        provider,
        signal,
        blocked: None,
    };
    match model {
        Model::Offline { word_pause_ms } => {
            let mut offline = OfflineHost::new(host, *word_pause_ms);
            ccm_engine::driver::drive(&mut offline, engine, observe).await
        }
        Model::Provider(..) => ccm_engine::driver::drive(&mut host, engine, observe).await,
    }
}

impl BrowserSession {
    /// Drives a turn begun on this session (`TurnEngine::begin` through
    /// [`with_core`](BrowserSession::with_core)) to its end: the same driver and transport as
    /// ccm-wasm's `runTurn`. `signal` cancels the turn.
    ///
    /// # Errors
    /// As `ccm_engine::driver::drive`: the turn failed or was cancelled (the session is as
    /// before it), or the engine was misused.
    pub async fn drive_turn(
        &self,
        engine: &mut TurnEngine,
        model: &Model,
        signal: Option<AbortSignal>,
        observe: &mut dyn FnMut(TurnEvent<'_>),
    ) -> Result<TurnResult, RunError> {
        drive(self.cell().clone(), engine, model, signal, observe).await
    }
}
