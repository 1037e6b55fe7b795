//! The browser host of ccm-engine's one turn driver (`ccm_engine::driver`), shared by ccm-wasm's
//! `Session.runTurn` and the browser app: the session in its shared cell, requests sent with
//! `fetch` ([`crate::transport`]) or answered by the offline demo model, waits on JavaScript
//! timers, stored logs read from the session's store when a tool call needs them
//! (`Step::Load`), and an `AbortSignal` to cancel.

use crate::error::BrowserError;
use crate::session::{load_records, BrowserSession, SessionCell};
use crate::transport::{send_with_limits, sleep, Limits};
use ccm_core::Session as CoreSession;
use ccm_engine::driver::{OfflineHost, TurnHost};
use ccm_engine::offline::{OfflineModel, SessionFacts};
use ccm_engine::{
    EngineSettings, LlmRequest, LogLoad, RunError, TurnEngine, TurnEvent, TurnResult,
};
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

impl Model {
    /// Who answers with a provider's configuration: the offline model (pausing
    /// `word_pause_ms` between words) when there is none, as `ProviderConfig::from_choice`
    /// gives for the offline choice, and otherwise the provider with `limits`. The app and
    /// `runTurn` both choose this way.
    pub fn of(config: Option<ProviderConfig>, limits: Limits, word_pause_ms: u64) -> Model {
        match config {
            None => Model::Offline { word_pause_ms },
            Some(config) => Model::Provider(config, limits),
        }
    }

    /// Whether the offline demo model answers.
    pub fn is_offline(&self) -> bool {
        matches!(self, Model::Offline { .. })
    }

    /// Sends one request outside a turn (a summary the person asked for) and returns the
    /// answer: the provider's over `fetch`, or the offline model's at once. `signal` cancels it.
    ///
    /// # Errors
    /// The provider's typed error.
    pub(crate) async fn answer(
        &self,
        session: &BrowserSession,
        request: &LlmRequest,
        signal: Option<&AbortSignal>,
    ) -> Result<ProviderResponse, ProviderError> {
        match self {
            Model::Provider(config, limits) => {
                send_with_limits(config, request, signal, *limits, &|_| {}).await
            }
            Model::Offline { .. } => Ok(session
                .with_core(|core| OfflineModel::new().respond(request, &SessionFacts::of(core)))),
        }
    }
}

/// A turn begun on a session by [`BrowserSession::begin_turn`]: the engine that runs it, and the
/// session's busy mark ("a turn"), which refuses saves and other turns until the turn is run to
/// its end or this is dropped.
pub struct BegunTurn {
    engine: TurnEngine,
    cell: Rc<RefCell<SessionCell>>,
}

impl Drop for BegunTurn {
    fn drop(&mut self) {
        // However the turn ends (its result, its failure, or a host that drops it unrun), the
        // session is free again. A cell still borrowed here belongs to a call that clears
        // nothing of the mark, so it is left as it is.
        if let Ok(mut cell) = self.cell.try_borrow_mut() {
            cell.busy = None;
        }
    }
}

impl BegunTurn {
    /// Drives the turn to its end with ccm-engine's one driver and `model`; `signal` cancels
    /// it. The busy mark is cleared when this returns.
    ///
    /// # Errors
    /// As `ccm_engine::driver::drive`: the turn failed or was cancelled (the session is as
    /// before it), or the engine was misused.
    pub async fn run(
        mut self,
        model: &Model,
        signal: Option<AbortSignal>,
        observe: &mut dyn FnMut(TurnEvent<'_>),
    ) -> Result<TurnResult, RunError> {
        drive(self.cell.clone(), &mut self.engine, model, signal, observe).await
    }
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
async fn drive(
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

/// Tokens of the tool definitions every request of a turn carries, counted with `core`'s
/// counter, as the engine counts them (for a host that shows them beside the context plan).
pub fn tool_definition_tokens(core: &CoreSession) -> u64 {
    ccm_engine::tool_definition_tokens(core)
}

/// Begins a turn of the session in `cell` with the person's `user_text` at `at_ms`: the one
/// rule of every browser host. A session that is busy (a save or another turn of it is in
/// progress) is refused with [`BrowserError::Busy`] and left as it is; otherwise the engine
/// begins the turn and the session is marked busy until the returned turn ends.
///
/// # Errors
/// [`BrowserError::Busy`] as above, or [`BrowserError::Engine`] when the core refuses the turn
/// (one is already in progress).
pub fn begin_turn(
    cell: &Rc<RefCell<SessionCell>>,
    user_text: &str,
    at_ms: u64,
    settings: EngineSettings,
) -> Result<BegunTurn, BrowserError> {
    let mut state = cell.try_borrow_mut().map_err(|_| {
        BrowserError::Busy("the session is in use by a call that has not returned".to_string())
    })?;
    if let Some(busy) = state.busy {
        return Err(BrowserError::in_progress(busy));
    }
    let engine = TurnEngine::begin(&mut state.core, user_text, at_ms, settings)?;
    state.busy = Some("a turn");
    Ok(BegunTurn {
        engine,
        cell: cell.clone(),
    })
}

impl BrowserSession {
    /// Begins a turn of this session (see [`begin_turn`]), to be run with [`BegunTurn::run`]:
    /// the same rule, driver and transport as ccm-wasm's `runTurn`.
    ///
    /// # Errors
    /// As [`begin_turn`].
    pub fn begin_turn(
        &self,
        user_text: &str,
        at_ms: u64,
        settings: EngineSettings,
    ) -> Result<BegunTurn, BrowserError> {
        begin_turn(self.cell(), user_text, at_ms, settings)
    }
}
