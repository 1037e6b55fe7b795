//! The native turn loop: ccm-engine's one driver with a [`Responder`] as the model, retry
//! delays waited out on this thread, and a [`CancelToken`] to stop the turn.

use crate::cancel::CancelToken;
use crate::http::HttpTransport;
use ccm_core::Session;
use ccm_engine::driver::{block_on, drive_turn, TurnHost};
use ccm_engine::offline::{OfflineModel, SessionFacts};
use ccm_engine::{EngineSettings, LlmRequest, LogLoad, RunError, TurnEvent, TurnResult};
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
        let (response, deltas) = self.model.answer(request, &SessionFacts::of(session));
        deltas.into_iter().for_each(on_delta);
        Ok(response)
    }

    fn label(&self) -> String {
        ccm_engine::offline::OFFLINE_MODEL_LABEL.to_string()
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

/// The native host of ccm-engine's one turn driver: a session in memory, a [`Responder`] that
/// blocks until its answer is in, and retry delays waited out on this thread (cut short by
/// cancellation). Every future it returns is ready when first polled, so the driver runs with
/// [`block_on`].
struct NativeHost<'a> {
    session: &'a mut Session,
    responder: &'a mut dyn Responder,
    cancel: &'a CancelToken,
    records: Option<&'a mut RecordLoader<'a>>,
}

/// Reads the stored records a turn of a session opened from a store needs (the engine's
/// `Step::Load`) and hands them to the session; returns why they could not be read.
pub type RecordLoader<'a> = dyn FnMut(&mut Session, &LogLoad) -> Result<(), String> + 'a;

impl TurnHost for NativeHost<'_> {
    fn with_session<R>(&mut self, change: impl FnOnce(&mut Session) -> R) -> R {
        change(self.session)
    }

    async fn send(
        &mut self,
        request: &LlmRequest,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        self.responder
            .respond(request, self.session, self.cancel, on_delta)
    }

    async fn sleep(&mut self, ms: u64) {
        self.cancel.wait(Duration::from_millis(ms));
    }

    async fn load_logs(&mut self, load: &LogLoad) -> Result<(), String> {
        match self.records.as_mut() {
            Some(read) => read(self.session, load),
            None => Err(format!(
                "this session keeps no stored records, but {} asked for {} logs and {} messages",
                load.tool.as_deref().unwrap_or("the next request"),
                load.efforts.len(),
                load.messages.len()
            )),
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn now_ms(&self) -> u64 {
        now_ms()
    }
}

/// Runs one turn to its end: every request through `responder`, retry delays waited out (and
/// cut short by cancellation), and events passed to `observe`. This is ccm-engine's one turn
/// driver ([`drive_turn`]) with a native host.
///
/// # Errors
/// [`RunError::Engine`] when the turn cannot begin (the session is already in a turn);
/// [`RunError::Failed`] when the provider failed or the turn was cancelled; the session is then
/// exactly as before the turn and the failure holds the person's text.
pub fn run_blocking_turn(
    session: &mut Session,
    user_text: &str,
    settings: EngineSettings,
    responder: &mut dyn Responder,
    cancel: &CancelToken,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let mut host = NativeHost {
        session,
        responder,
        cancel,
        records: None,
    };
    block_on(drive_turn(&mut host, user_text, settings, observe))
}

/// [`run_blocking_turn`] for a session opened from a store: `records` reads what the turn needs
/// (concluded logs a tool expands, steps of the recall index, recalled messages) before the
/// turn goes on.
///
/// # Errors
/// As [`run_blocking_turn`].
pub fn run_stored_turn<'a>(
    session: &'a mut Session,
    records: &'a mut RecordLoader<'a>,
    user_text: &str,
    settings: EngineSettings,
    responder: &'a mut dyn Responder,
    cancel: &'a CancelToken,
    observe: &mut dyn FnMut(TurnEvent<'_>),
) -> Result<TurnResult, RunError> {
    let mut host = NativeHost {
        session,
        responder,
        cancel,
        records: Some(records),
    };
    block_on(drive_turn(&mut host, user_text, settings, observe))
}
