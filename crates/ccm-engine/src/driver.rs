//! The one turn driver: the loop that moves a [`TurnEngine`]'s requests to a model and its
//! answers back, for every host (the native runner, the npm package's `runTurn`, the browser
//! app, and [`run_instant_turn`](crate::run_instant_turn) for responders without a clock).
//!
//! The engine decides everything; the driver only carries out its steps through a
//! [`TurnHost`], which owns what differs between hosts: where the session lives, how a request
//! reaches the model, how to wait, how stored logs are read, and whether the person cancelled.
//! Keeping the loop here, once, means a rule about driving a turn (announce a retry before
//! waiting for it, undo a turn the engine was misused in, ask for the written rolling summary
//! after an emergency compaction) is written and tested in one place.
//!
//! The driver is `async` without depending on any runtime: the browser hosts await `fetch` and
//! timers through their JavaScript event loop, while a native host whose futures never wait
//! runs it with [`block_on`].

use crate::offline::{OfflineModel, SessionFacts};
use crate::{EngineError, EngineSettings, LlmRequest, RunError, Step, TurnEngine, TurnEvent};
use crate::{HostToolCall, LogLoad, TurnResult};
use ccm_core::Session;
use ccm_provider::{ProviderError, ProviderResponse, StreamDelta};
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// What a host gives the driver. Every method is called from the driver's one loop, never
/// concurrently.
// The futures are not required to be `Send`: the browser hosts hold JavaScript values and run
// on one thread, and native hosts block on them in place.
#[allow(async_fn_in_trait)]
pub trait TurnHost {
    /// Runs `change` on the session the turn is in.
    fn with_session<R>(&mut self, change: impl FnOnce(&mut Session) -> R) -> R;

    /// Sends one attempt of `request` to the model and returns its answer, passing streamed
    /// pieces to `on_delta` as they arrive.
    ///
    /// # Errors
    /// Any [`ProviderError`]; [`ProviderError::Cancelled`] when the person cancelled.
    async fn send(
        &mut self,
        request: &LlmRequest,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError>;

    /// Waits `ms` milliseconds, or less when the person cancels meanwhile.
    async fn sleep(&mut self, ms: u64);

    /// Reads the stored records `load` names (raw logs, a step of the recall index's
    /// rebuild, messages a recalled excerpt shows) and hands them to the session. Hosts whose
    /// sessions are wholly in memory are never asked (the default says so).
    ///
    /// # Errors
    /// Why the records could not be read, in words for the person.
    async fn load_logs(&mut self, load: &LogLoad) -> Result<(), String> {
        Err(format!(
            "this host keeps no stored records, but {} asked for {} logs, {} messages{}",
            load.tool.as_deref().unwrap_or("the next request"),
            load.efforts.len(),
            load.messages.len(),
            if load.index.is_some() {
                " and a step of the recall index"
            } else {
                ""
            }
        ))
    }

    /// Runs a call of a tool whose table entry says the host runs it (`Runs::Host`; the
    /// host added it with [`TurnEngine::with_tools`]) and returns the result for the model.
    /// Hosts that add no tools of their own are never asked (the default says so).
    ///
    /// # Errors
    /// Why the call failed, in words for the model, which receives them as its error result.
    async fn run_tool(&mut self, call: &HostToolCall) -> Result<serde_json::Value, String> {
        Err(format!(
            "this host runs no tools of its own, but the model called '{}'",
            call.name
        ))
    }

    /// Whether the person cancelled the turn.
    fn is_cancelled(&self) -> bool;

    /// Milliseconds since the Unix epoch, the timestamps the session stores.
    fn now_ms(&self) -> u64;
}

/// Begins a turn with the person's text and drives it to its end; see [`drive`].
///
/// # Errors
/// [`RunError::Engine`] when the turn cannot begin (the session is already in a turn), and as
/// [`drive`].
pub async fn drive_turn<H: TurnHost>(
    host: &mut H,
    user_text: &str,
    settings: EngineSettings,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let now = host.now_ms();
    let mut engine =
        host.with_session(|session| TurnEngine::begin(session, user_text, now, settings))?;
    drive(host, &mut engine, observe).await
}

/// Drives a begun turn to its end: every request through the host, every retry delay waited
/// out, stored logs read when a tool call needs them, events passed to `observe`, and, after
/// a turn whose compaction fell back to the extractive rolling summary, one more request for
/// a written one.
///
/// # Errors
/// [`RunError::Failed`] when the provider failed or the turn was cancelled; the session is then
/// exactly as before the turn and the failure holds the person's text.
/// [`RunError::Engine`] when the engine was misused (the session left the turn behind its
/// back); the turn is undone if the session is still in it.
pub async fn drive<H: TurnHost>(
    host: &mut H,
    engine: &mut TurnEngine,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let mut tool_calls_shown = 0;
    loop {
        let cancelled = host.is_cancelled();
        let step = host.with_session(|session| {
            if cancelled {
                Ok(engine.cancel(session))
            } else {
                engine.next(session)
            }
        });
        // Tool calls run inside `next`; show each once, as soon as it has run.
        for call in &engine.tool_calls()[tool_calls_shown..] {
            observe(TurnEvent::ToolCalled(call));
        }
        tool_calls_shown = engine.tool_calls().len();
        match step.map_err(|error| undo(host, engine, error))? {
            Step::Send(request) => {
                observe(TurnEvent::Sending(&request));
                let purpose = request.purpose.clone();
                let outcome = host
                    .send(&request, &mut |delta| {
                        observe(TurnEvent::Delta {
                            purpose: &purpose,
                            delta: &delta,
                        })
                    })
                    .await;
                let now = host.now_ms();
                host.with_session(|session| engine.receive(session, outcome, now))
                    .map_err(|error| undo(host, engine, error))?;
            }
            Step::Wait(wait) => {
                observe(TurnEvent::Retrying(&wait));
                // A cancellation during the wait is picked up at the top of the loop.
                host.sleep(wait.delay_ms).await;
            }
            Step::Load(load) => {
                let outcome = host.load_logs(&load).await;
                host.with_session(|session| engine.logs_loaded(session, outcome))
                    .map_err(|error| undo(host, engine, error))?;
            }
            Step::RunTool(call) => {
                let result = host.run_tool(&call).await;
                host.with_session(|session| engine.tool_ran(session, result))
                    .map_err(|error| undo(host, engine, error))?;
            }
            Step::Done(result) => {
                upgrade_rolling_summary(host, engine.settings(), observe).await;
                return Ok(*result);
            }
            Step::Failed(failure) => return Err(RunError::Failed(failure)),
        }
    }
}

/// Undoes the turn after the engine was misused, so that the session is not left half-way
/// through a turn nobody drives. A session already out of the engine's turn is left alone:
/// undoing would undo somebody else's turn.
fn undo<H: TurnHost>(host: &mut H, engine: &TurnEngine, error: EngineError) -> RunError {
    host.with_session(|session| {
        if session.in_turn() && session.turn() == engine.turn() {
            let _ = session.abort_turn();
        }
    });
    RunError::Engine(error)
}

/// After a turn whose compaction replaced history with the extractive rolling summary, asks
/// the model for a written one. Any failure keeps the extractive summary, which is never
/// empty: the turn has already succeeded and must not fail because of this extra request.
async fn upgrade_rolling_summary<H: TurnHost>(
    host: &mut H,
    settings: &EngineSettings,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) {
    let Some(request) =
        host.with_session(|session| crate::rolling_summary_request(session, settings))
    else {
        return;
    };
    observe(TurnEvent::Sending(&request));
    let purpose = request.purpose.clone();
    let answer = host
        .send(&request, &mut |delta| {
            observe(TurnEvent::Delta {
                purpose: &purpose,
                delta: &delta,
            })
        })
        .await;
    if let Ok(response) = answer {
        host.with_session(|session| session.upgrade_rolling_summary(&response.text));
    }
}

/// A host whose requests the offline demo model answers: no network, no key. Everything but
/// sending goes to the wrapped host. When a request asks for streaming, the answer's words
/// arrive as deltas with `word_pause_ms` between them, so that a reply shows the way a real
/// model's does and the person can stop it half-way.
#[derive(Debug)]
pub struct OfflineHost<H> {
    host: H,
    model: OfflineModel,
    word_pause_ms: u64,
}

impl<H: TurnHost> OfflineHost<H> {
    /// Answers `host`'s requests with the offline model, pausing `word_pause_ms` between
    /// streamed words (0 streams them at once).
    pub fn new(host: H, word_pause_ms: u64) -> OfflineHost<H> {
        OfflineHost {
            host,
            model: OfflineModel::new(),
            word_pause_ms,
        }
    }

    /// The wrapped host.
    pub fn into_inner(self) -> H {
        self.host
    }
}

impl<H: TurnHost> TurnHost for OfflineHost<H> {
    fn with_session<R>(&mut self, change: impl FnOnce(&mut Session) -> R) -> R {
        self.host.with_session(change)
    }

    async fn send(
        &mut self,
        request: &LlmRequest,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        let model = self.model;
        let (response, deltas) = self
            .host
            .with_session(|session| model.answer(request, &SessionFacts::of(session)));
        for delta in deltas {
            if self.host.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            on_delta(delta);
            if self.word_pause_ms > 0 {
                self.host.sleep(self.word_pause_ms).await;
            }
        }
        if self.host.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        Ok(response)
    }

    async fn sleep(&mut self, ms: u64) {
        self.host.sleep(ms).await;
    }

    async fn load_logs(&mut self, load: &LogLoad) -> Result<(), String> {
        self.host.load_logs(load).await
    }

    async fn run_tool(&mut self, call: &HostToolCall) -> Result<serde_json::Value, String> {
        self.host.run_tool(call).await
    }

    fn is_cancelled(&self) -> bool {
        self.host.is_cancelled()
    }

    fn now_ms(&self) -> u64 {
        self.host.now_ms()
    }
}

/// Runs a future whose awaits all complete at once (a native host that blocks inside `send`
/// and `sleep`, or one that answers from memory) to its end on the calling thread.
///
/// A future that really waits for something outside (a socket, a timer of an event loop) is
/// polled again and again until it is ready, which only makes sense for tests; such hosts
/// belong to an executor.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}
