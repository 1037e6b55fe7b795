//! The turn engine's state machine ([`TurnEngine`]), its settings, the requests it hands out,
//! and [`run_instant_turn`] for responders without a clock. The rules of a turn are in the
//! [crate documentation](crate).

use crate::driver::TurnHost;
use crate::record::{
    PromptEstimate, RequestOutcome, RequestPurpose, RequestRecord, RetryRecord, ToolHandling,
    ToolTraceEntry, TurnFailure, TurnResult,
};
use crate::summary;
use crate::wire::{wire_messages, wire_tools};
use ccm_core::session::IndexRequest;
use ccm_core::tools::{Needs, Tools};
use ccm_core::EffortStatus;
use ccm_core::Session;
use ccm_core::ToolOutcome;
use ccm_core::TurnError;
use ccm_provider::{
    ErrorContext, HttpRequest, ProviderConfig, ProviderError, ProviderResponse, RequestOptions,
    RetryPolicy, StreamDelta, ToolCall, ToolChoice, UsageReconciliation, WireMessage, WireTool,
    DEFAULT_MAX_TOKENS,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

/// Tool rounds per turn before a plain text answer is forced.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 5;

/// Output limit of a summary request. The prompt asks for at most 80 words; the margin keeps
/// a model that overshoots a little from being cut off mid-sentence.
pub const DEFAULT_SUMMARY_MAX_TOKENS: u32 = 400;

/// What to do with a summary the model wrote in its own `close_effort` arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryPolicy {
    /// Use it as it is and skip the summary request. The model wrote it with the whole raw log
    /// in its context, which is exactly what a summary request would show it, and the tool's
    /// description asks for decisions, facts, identifiers and open questions; a second request
    /// would cost a round trip for the same information. A blank summary counts as none.
    #[default]
    UseModelSummary,
    /// Always make the summary request, with its dedicated prompt. The model's own summary is
    /// then only the fallback when the request fails, before the extractive summary.
    AlwaysRequest,
}

/// How the engine talks to the model: the request options it sends and the rules of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// The model name as the provider knows it.
    pub model: String,
    /// Output limit of turn requests.
    pub max_tokens: u32,
    /// Sampling temperature; `None` keeps the provider's default.
    pub temperature: Option<f64>,
    /// Ask for streamed answers on turn requests. Summary requests never stream: their text
    /// goes into a banner, not into the reply being shown.
    pub stream: bool,
    /// Rounds of tool calls per turn before a plain text answer is forced.
    pub max_tool_rounds: u32,
    /// Output limit of summary requests.
    pub summary_max_tokens: u32,
    /// What to do with a summary in the model's own `close_effort` arguments.
    pub summary_policy: SummaryPolicy,
    /// When to retry a failed request.
    pub retry: RetryPolicy,
}

impl EngineSettings {
    /// Settings for `model`: [`DEFAULT_MAX_TOKENS`], the provider's temperature, no streaming,
    /// [`DEFAULT_MAX_TOOL_ROUNDS`], [`SummaryPolicy::UseModelSummary`] and the default
    /// [`RetryPolicy`].
    pub fn new(model: impl Into<String>) -> EngineSettings {
        EngineSettings {
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            stream: false,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            summary_policy: SummaryPolicy::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// Sets [`stream`](Self::stream).
    pub fn with_stream(mut self, stream: bool) -> EngineSettings {
        self.stream = stream;
        self
    }

    /// Sets [`max_tool_rounds`](Self::max_tool_rounds).
    pub fn with_max_tool_rounds(mut self, rounds: u32) -> EngineSettings {
        self.max_tool_rounds = rounds;
        self
    }

    /// Sets [`summary_policy`](Self::summary_policy).
    pub fn with_summary_policy(mut self, policy: SummaryPolicy) -> EngineSettings {
        self.summary_policy = policy;
        self
    }

    /// Sets [`retry`](Self::retry).
    pub fn with_retry(mut self, retry: RetryPolicy) -> EngineSettings {
        self.retry = retry;
        self
    }

    fn options(&self, stream: bool, max_tokens: u32, tool_choice: ToolChoice) -> RequestOptions {
        RequestOptions {
            model: self.model.clone(),
            max_tokens,
            temperature: self.temperature,
            stream,
            tool_choice,
        }
    }
}

/// The request for a model-written rolling summary, when the session's rolling summary is the
/// extractive fallback of a level-3 compaction (see [`Session::rolling_summary_upgrade`]). Send it
/// after the turn and give the answer's text to [`Session::upgrade_rolling_summary`]; on any
/// failure the extractive summary simply stays.
pub fn rolling_summary_request(session: &Session, settings: &EngineSettings) -> Option<LlmRequest> {
    let (input, max_words) = session.compaction().rolling_summary_upgrade()?;
    let prompt = crate::summary::rolling_summary_prompt(&input, max_words);
    let messages = vec![
        WireMessage::System(prompt.system),
        WireMessage::User(prompt.user),
    ];
    let counter = session.counter();
    let estimate: u64 = messages
        .iter()
        .map(|m| u64::from(counter.count(wire_text(m))))
        .sum();
    Some(LlmRequest {
        purpose: RequestPurpose::RollingSummary,
        attempt: 1,
        messages,
        tools: Vec::new(),
        options: settings.options(false, settings.max_tokens, ToolChoice::Auto),
        plan_id: None,
        estimate: PromptEstimate {
            context_tokens: estimate,
            turn_extra_tokens: 0,
            estimated_prompt_tokens: estimate,
            tool_definition_tokens: 0,
        },
    })
}

/// One request for the model, in the neutral form every transport starts from.
///
/// An HTTP transport turns it into the provider's request with [`LlmRequest::to_http`]; the
/// offline demo model reads it directly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmRequest {
    /// Why it is made. Only answers to [`RequestPurpose::Turn`] requests are the reply.
    pub purpose: RequestPurpose,
    /// 1 for the first attempt; a retry sends the same request with the next number. A user
    /// interface that showed streamed text of an earlier attempt should clear it.
    pub attempt: u32,
    /// The conversation: the context plan's messages, then this turn's tool exchange.
    pub messages: Vec<WireMessage>,
    /// The tools offered (empty for a summary request).
    pub tools: Vec<WireTool>,
    /// Model, limits, streaming and tool choice.
    pub options: RequestOptions,
    /// The id of the context plan the request was built from (turn requests only).
    pub plan_id: Option<String>,
    /// The local token estimate of the prompt.
    pub estimate: PromptEstimate,
}

impl LlmRequest {
    /// The HTTP request for the provider described by `config`.
    ///
    /// # Errors
    /// [`ProviderError::InvalidConfig`] when the configuration or the settings cannot produce a
    /// valid request; feed it back with [`TurnEngine::receive`] like any other failure.
    pub fn to_http(&self, config: &ProviderConfig) -> Result<HttpRequest, ProviderError> {
        ccm_provider::build_request(config, &self.options, &self.messages, &self.tools)
    }

    /// What an HTTP error for this request should name (URL, model, whether a key was sent).
    pub fn error_context(&self, config: &ProviderConfig) -> ErrorContext {
        ErrorContext::new(config, &self.options)
    }
}

/// A retry the engine decided on: wait, then call [`TurnEngine::next`] for the same request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryWait {
    /// How long to wait before sending again.
    pub delay_ms: u64,
    /// The attempt that failed, counting from 1.
    pub failed_attempt: u32,
    /// Why it failed, as shown to people ("retrying in 2 s: …").
    pub error: String,
}

/// What the caller should do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this request and pass the outcome to [`TurnEngine::receive`].
    Send(LlmRequest),
    /// Wait this long (or less, if the person cancels meanwhile), then call
    /// [`TurnEngine::next`] again; it returns the same request to send once more.
    Wait(RetryWait),
    /// Read these stored records into the session, then report with
    /// [`TurnEngine::logs_loaded`]: the next request or a tool call of the last answer needs
    /// them, and the session was opened from a store that reads what is outside the working
    /// set only when needed (raw logs of concluded efforts, messages a recalled excerpt shows,
    /// the steps of the recall index's rebuild). Hosts whose sessions are wholly in memory
    /// never see this step.
    Load(LogLoad),
    /// Run this call of a tool the host runs (its table entry says `Runs::Host`, and it was
    /// added with [`TurnEngine::with_tools`]), then hand the result to
    /// [`TurnEngine::tool_ran`]. Hosts that add no tools of their own never see this step.
    RunTool(HostToolCall),
    /// The turn ended; the session holds its messages.
    Done(Box<TurnResult>),
    /// The turn failed or was cancelled; the session is as before the turn.
    Failed(Box<TurnFailure>),
}

/// Stored records the next request or a tool call needs before it can go on (see
/// [`Step::Load`]). A host reads each kind and hands it to the session:
/// - `efforts`: each raw log whole, to [`Session::attach_effort_log`];
/// - `index`: the stored messages of the range (every log), to
///   [`Session::index_stored_messages`];
/// - `messages`: the stored messages with these sequence numbers, to
///   [`Session::attach_recalled_messages`].
///
/// [`Session::attach_effort_log`]: ccm_core::Session::attach_effort_log
/// [`Session::index_stored_messages`]: ccm_core::Session::index_stored_messages
/// [`Session::attach_recalled_messages`]: ccm_core::Session::attach_recalled_messages
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogLoad {
    /// The ids of the efforts whose raw logs to read.
    pub efforts: Vec<String>,
    /// A step of the rebuild of the recall index of a session opened from a store.
    pub index: Option<IndexRequest>,
    /// Stored messages to read back by sequence number: those a recalled excerpt shows.
    pub messages: Vec<u64>,
    /// The tool that needs them (`expand_effort`, `reopen_effort`, `search_efforts`,
    /// `recall`), or `None` for the turn's next request.
    pub tool: Option<String>,
}

impl LogLoad {
    fn is_empty(&self) -> bool {
        self.efforts.is_empty() && self.index.is_none() && self.messages.is_empty()
    }
}

/// A call of a tool the host runs (see [`Step::RunTool`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostToolCall {
    /// The provider's id of the call.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments as the model wrote them (JSON text, unchecked: the host reads them).
    pub arguments: String,
}

/// Tokens of the tool definitions every request of a turn carries, counted with `session`'s
/// counter: what the engine adds to each request's estimate, and what a host shows beside the
/// context plan.
pub fn tool_definition_tokens(session: &Session) -> u64 {
    count_tool_definitions(session, &wire_tools(&ccm_core::tool_definitions()))
}

fn count_tool_definitions(session: &Session, tools: &[WireTool]) -> u64 {
    u64::from(
        session
            .counter()
            .count(&serde_json::to_string(tools).unwrap_or_default()),
    )
}

/// A misuse of the engine by its caller. Provider failures are not errors of this kind: they
/// end the turn with [`Step::Failed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The turn could not begin.
    #[error(transparent)]
    Turn(#[from] TurnError),
    /// `receive` was called while no request was waiting for its outcome.
    #[error(
        "no request is waiting for a response; call next() and send the request it returns first"
    )]
    NotAwaitingResponse,
    /// `logs_loaded` was called while no [`Step::Load`] was waiting for it.
    #[error(
        "no stored logs were asked for; call next() and load the logs its Step::Load names first"
    )]
    NotAwaitingLogs,
    /// `tool_ran` was called while no [`Step::RunTool`] was waiting for it.
    #[error(
        "no tool call is waiting for the host; call next() and run the call its Step::RunTool names first"
    )]
    NotAwaitingToolResult,
    /// The session passed in is not in the turn this engine drives: the turn was ended or
    /// aborted by someone else, or another session was passed.
    #[error("the session is not in turn {expected} that this engine drives (the session is at turn {found}, {state}); a turn must be driven by one engine from begin to end")]
    SessionOutOfStep {
        /// The turn the engine began.
        expected: u64,
        /// The session's turn number.
        found: u64,
        /// Whether the session is in a turn at all.
        state: &'static str,
    },
}

/// Why [`run_instant_turn`] did not return a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The engine was misused (for example the session was already in a turn).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The turn failed or was cancelled; the session is as before the turn.
    #[error("{0}")]
    Failed(Box<TurnFailure>),
}

/// Drives a whole turn with a responder that answers at once: the offline demo model, a test's
/// scripted answers, anything without a clock. The responder sees the session as it stands
/// (read-only) next to each request. It is [`drive_turn`](crate::driver::drive_turn), the one
/// driver every host uses, with a host whose clock stands still at `at_ms`.
///
/// Retry delays are not waited for, since this host has no clock: the request is sent again at
/// once. Transports that talk to a real provider implement [`TurnHost`] and wait.
///
/// # Errors
/// [`RunError::Engine`] when the turn cannot begin; [`RunError::Failed`] when a response is an
/// error that is not retried (the session is then as before the turn).
pub fn run_instant_turn<F>(
    session: &mut Session,
    user_text: &str,
    at_ms: u64,
    settings: EngineSettings,
    respond: F,
) -> Result<TurnResult, RunError>
where
    F: FnMut(&LlmRequest, &Session) -> Result<ProviderResponse, ProviderError>,
{
    let mut host = ClosureHost {
        session,
        respond,
        at_ms,
    };
    crate::driver::block_on(crate::driver::drive_turn(
        &mut host,
        user_text,
        settings,
        &mut |_| {},
    ))
}

/// The host of [`run_instant_turn`]: a session in memory, answers from a function, a clock that stands
/// still, and no cancellation.
struct ClosureHost<'a, F> {
    session: &'a mut Session,
    respond: F,
    at_ms: u64,
}

impl<F> TurnHost for ClosureHost<'_, F>
where
    F: FnMut(&LlmRequest, &Session) -> Result<ProviderResponse, ProviderError>,
{
    fn with_session<R>(&mut self, change: impl FnOnce(&mut Session) -> R) -> R {
        change(self.session)
    }

    async fn send(
        &mut self,
        request: &LlmRequest,
        _on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        (self.respond)(request, self.session)
    }

    async fn sleep(&mut self, _ms: u64) {}

    fn is_cancelled(&self) -> bool {
        false
    }

    fn now_ms(&self) -> u64 {
        self.at_ms
    }
}

/// A `close_effort` call waiting for its summary request.
#[derive(Debug, Clone)]
struct PendingClose {
    call: ToolCall,
    round: u32,
    effort_id: String,
    model_summary: Option<String>,
}

#[derive(Debug, Clone)]
enum Phase {
    /// Nothing is out: the next call of `next` runs pending tool calls, builds the next
    /// request or ends the turn.
    Ready,
    /// A request is out; `receive` takes its outcome.
    Awaiting(LlmRequest),
    /// Stored logs were asked for; `logs_loaded` says how reading them went.
    Loading(LogLoad),
    /// A call was handed to the host (with its answer's round); `tool_ran` takes the result.
    RunningTool(u32, HostToolCall),
    /// A request failed and will be sent again after the delay.
    Waiting {
        request: LlmRequest,
        wait: RetryWait,
        announced: bool,
    },
    /// The turn is over; `next` keeps returning this step.
    Finished(Step),
}

/// One turn of a conversation with a model; see the [crate documentation](crate).
#[derive(Debug, Clone)]
pub struct TurnEngine {
    settings: EngineSettings,
    turn: u64,
    user_text: String,
    /// The tool table of the turn: what each call needs and who runs it.
    table: Tools,
    tools: Vec<WireTool>,
    tool_definition_tokens: u64,
    /// This turn's assistant tool-call messages and tool results, in order.
    exchange: Vec<WireMessage>,
    exchange_tokens: u64,
    /// Turn requests made so far (the round of the next one is this plus one).
    turn_requests: u32,
    tool_rounds: u32,
    final_answer_forced: bool,
    /// Calls of the last answer not yet handled, with that answer's round.
    pending_calls: VecDeque<(u32, ToolCall)>,
    pending_close: Option<PendingClose>,
    /// The id of the pending call whose logs were asked for, and why reading them failed if it
    /// did. Logs are asked for once per call: a host that reports success without attaching
    /// them lets the call run and fail with the session's own error, instead of looping.
    log_request: Option<(String, Option<String>)>,
    /// What the last load for the next request asked for, and whether reading it failed. A
    /// load asked for again unchanged (the host attached nothing) or after a failure is not
    /// asked for again in this turn: the request then shows what is in memory.
    plan_load: Option<(LogLoad, bool)>,
    /// The text of every answer of the turn so far. Models often say something before their
    /// tool calls ("I'll open an effort for that"); that text belongs to the reply as much as
    /// the last answer's.
    texts: Vec<String>,
    /// Whether the final answer (one without tool calls, or a forced one) arrived.
    answered: bool,
    last_response_at_ms: u64,
    records: Vec<RequestRecord>,
    trace: Vec<ToolTraceEntry>,
    phase: Phase,
}

impl TurnEngine {
    /// Begins a turn in `session` with the person's text and returns the engine that drives
    /// it. Call [`next`](Self::next) to get the first request.
    ///
    /// # Errors
    /// [`EngineError::Turn`] when the session is already in a turn.
    pub fn begin(
        session: &mut Session,
        user_text: &str,
        at_ms: u64,
        settings: EngineSettings,
    ) -> Result<TurnEngine, EngineError> {
        let turn = session.begin_turn(user_text, at_ms)?;
        let table = Tools::builtin();
        let tools = wire_tools(&table.definitions());
        let tool_definition_tokens = count_tool_definitions(session, &tools);
        Ok(TurnEngine {
            settings,
            turn,
            user_text: user_text.to_string(),
            table,
            tools,
            tool_definition_tokens,
            exchange: Vec::new(),
            exchange_tokens: 0,
            turn_requests: 0,
            tool_rounds: 0,
            final_answer_forced: false,
            pending_calls: VecDeque::new(),
            pending_close: None,
            log_request: None,
            plan_load: None,
            texts: Vec::new(),
            answered: false,
            last_response_at_ms: at_ms,
            records: Vec::new(),
            trace: Vec::new(),
            phase: Phase::Ready,
        })
    }

    /// Offers `tools` in this turn instead of the built-in ones alone: the built-in table and
    /// the entries a host added, run by the session with their handler or handed to the host
    /// ([`Step::RunTool`]). Call it before the first [`next`](Self::next).
    pub fn with_tools(mut self, session: &Session, tools: Tools) -> TurnEngine {
        self.tools = wire_tools(&tools.definitions());
        self.tool_definition_tokens = count_tool_definitions(session, &self.tools);
        self.table = tools;
        self
    }

    /// The turn this engine drives.
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// The settings the turn runs with.
    pub fn settings(&self) -> &EngineSettings {
        &self.settings
    }

    /// Whether the turn is over (done, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Finished(_))
    }

    /// The requests made so far, with their usage and retries.
    pub fn requests(&self) -> &[RequestRecord] {
        &self.records
    }

    /// The tool calls handled so far.
    pub fn tool_calls(&self) -> &[ToolTraceEntry] {
        &self.trace
    }

    /// Advances the turn: runs the tool calls of the last answer, and returns the next request
    /// to send, a retry delay to wait, or the end of the turn. Calling it again before
    /// [`receive`](Self::receive) returns the same request; after the end it returns the same
    /// final step.
    ///
    /// # Errors
    /// [`EngineError::SessionOutOfStep`] when `session` is not in this engine's turn.
    pub fn next(&mut self, session: &mut Session) -> Result<Step, EngineError> {
        match std::mem::replace(&mut self.phase, Phase::Ready) {
            Phase::Finished(step) => {
                self.phase = Phase::Finished(step.clone());
                Ok(step)
            }
            Phase::Awaiting(request) => {
                self.phase = Phase::Awaiting(request.clone());
                Ok(Step::Send(request))
            }
            Phase::Loading(load) => {
                self.phase = Phase::Loading(load.clone());
                Ok(Step::Load(load))
            }
            Phase::RunningTool(round, call) => {
                self.phase = Phase::RunningTool(round, call.clone());
                Ok(Step::RunTool(call))
            }
            Phase::Waiting {
                request,
                wait,
                announced: false,
            } => {
                self.phase = Phase::Waiting {
                    request,
                    wait: wait.clone(),
                    announced: true,
                };
                Ok(Step::Wait(wait))
            }
            Phase::Waiting {
                mut request,
                announced: true,
                ..
            } => {
                // The caller waited: the same request goes out again as the next attempt.
                request.attempt += 1;
                if let Some(record) = self.records.last_mut() {
                    record.attempts = request.attempt;
                }
                self.phase = Phase::Awaiting(request.clone());
                Ok(Step::Send(request))
            }
            Phase::Ready => {
                self.check_session(session)?;
                Ok(self.advance(session))
            }
        }
    }

    /// Takes the outcome of the request [`next`](Self::next) returned. `at_ms` is when it
    /// arrived; the last answer's time is stored with the assistant message.
    ///
    /// An answer over one of the output limits ([`ccm_provider::check_output`]) is taken as
    /// the failure [`ProviderError::OutputTooLarge`]: the turn fails and the session is
    /// restored, exactly as when the transport stopped reading it.
    ///
    /// # Errors
    /// [`EngineError::NotAwaitingResponse`] when no request is out;
    /// [`EngineError::SessionOutOfStep`] when `session` is not in this engine's turn.
    pub fn receive(
        &mut self,
        session: &mut Session,
        outcome: Result<ProviderResponse, ProviderError>,
        at_ms: u64,
    ) -> Result<(), EngineError> {
        if !matches!(self.phase, Phase::Awaiting(_)) {
            return Err(EngineError::NotAwaitingResponse);
        }
        self.check_session(session)?;
        let Phase::Awaiting(request) = std::mem::replace(&mut self.phase, Phase::Ready) else {
            unreachable!("checked above");
        };
        self.last_response_at_ms = at_ms;
        // Transports built on ccm-provider's parsers stop reading at the output limits
        // already; this check holds every other host (a responder, a JavaScript callback) to
        // the same limits, so nothing the session could not load again is ever stored.
        let outcome = outcome.and_then(|response| {
            ccm_provider::check_output(&response)?;
            Ok(response)
        });
        match outcome {
            Ok(response) => self.accept(session, &request, response),
            Err(error) => self.fail(session, request, error),
        }
        Ok(())
    }

    /// Takes the outcome of reading the logs a [`Step::Load`] asked for: `Ok` once they are
    /// attached to the session, or `Err` with why they could not be read. A failure does not
    /// end the turn: the tool call that needed them gets the reason as its error result, so
    /// the model can tell the person, and nothing is changed.
    ///
    /// # Errors
    /// [`EngineError::NotAwaitingLogs`] when no logs were asked for;
    /// [`EngineError::SessionOutOfStep`] when `session` is not in this engine's turn.
    pub fn logs_loaded(
        &mut self,
        session: &mut Session,
        outcome: Result<(), String>,
    ) -> Result<(), EngineError> {
        let Phase::Loading(load) = &self.phase else {
            return Err(EngineError::NotAwaitingLogs);
        };
        self.check_session(session)?;
        if load.tool.is_none() {
            if let Some((_, failed)) = self.plan_load.as_mut() {
                *failed = outcome.is_err();
            }
        } else if let (Err(reason), Some((_, failure))) = (outcome, self.log_request.as_mut()) {
            *failure = Some(if load.efforts.is_empty() {
                format!("could not read the stored messages to show: {reason}")
            } else {
                format!(
                    "could not read the stored log of '{}': {reason}",
                    load.efforts.join("', '")
                )
            });
        }
        self.phase = Phase::Ready;
        Ok(())
    }

    /// Takes the result of the call a [`Step::RunTool`] handed to the host: `Ok` is the
    /// result for the model, `Err` why the call failed, which the model receives as
    /// `{"error": "..."}`. Either is stored in the turn like the result of any other call.
    ///
    /// # Errors
    /// [`EngineError::NotAwaitingToolResult`] when no call was handed to the host;
    /// [`EngineError::SessionOutOfStep`] when `session` is not in this engine's turn.
    pub fn tool_ran(
        &mut self,
        session: &mut Session,
        result: Result<Value, String>,
    ) -> Result<(), EngineError> {
        if !matches!(self.phase, Phase::RunningTool(..)) {
            return Err(EngineError::NotAwaitingToolResult);
        }
        self.check_session(session)?;
        let Phase::RunningTool(round, call) = std::mem::replace(&mut self.phase, Phase::Ready)
        else {
            unreachable!("checked above");
        };
        let outcome = session.record_host_tool_result(&call.name, &call.arguments, result);
        let call = ToolCall {
            id: call.call_id,
            name: call.name,
            arguments: call.arguments,
        };
        self.answer_call(session, round, &call, ToolHandling::RanByHost, outcome);
        Ok(())
    }

    /// Cancels the turn: the session is restored with [`Session::abort_turn`], and the failure
    /// (with the person's text) is returned. Cancelling a finished turn returns its final step
    /// unchanged.
    pub fn cancel(&mut self, session: &mut Session) -> Step {
        if let Phase::Finished(step) = &self.phase {
            return step.clone();
        }
        if let Phase::Awaiting(_) | Phase::Waiting { .. } = &self.phase {
            // A cancelled log read belongs to no request, so only requests are marked.
            self.mark_last_request(RequestOutcome::Failed {
                error: ProviderError::Cancelled.to_string(),
            });
        }
        self.abort(session, ProviderError::Cancelled)
    }

    fn check_session(&self, session: &Session) -> Result<(), EngineError> {
        if session.in_turn() && session.turn() == self.turn {
            Ok(())
        } else {
            Err(EngineError::SessionOutOfStep {
                expected: self.turn,
                found: session.turn(),
                state: if session.in_turn() {
                    "in another turn"
                } else {
                    "not in a turn"
                },
            })
        }
    }

    /// Runs pending tool calls until one needs a request, then builds the next request or ends
    /// the turn.
    fn advance(&mut self, session: &mut Session) -> Step {
        while let Some((round, call)) = self.pending_calls.pop_front() {
            let (needs, in_host) = self
                .table
                .get(&call.name)
                .map_or((Needs::Nothing, false), |tool| {
                    (tool.needs, tool.runs_in_host())
                });
            if needs == Needs::ModelSummary {
                if let Some(request) = self.start_close(session, round, call) {
                    return self.send(request);
                }
            } else if in_host {
                let call = HostToolCall {
                    call_id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                };
                self.phase = Phase::RunningTool(round, call.clone());
                return Step::RunTool(call);
            } else {
                if let Some(load) = self.logs_to_load(session, &call) {
                    self.pending_calls.push_front((round, call));
                    self.phase = Phase::Loading(load.clone());
                    return Step::Load(load);
                }
                let outcome = match self.log_request.take() {
                    Some((id, Some(reason))) if id == call.id => ToolOutcome {
                        name: call.name.clone(),
                        ok: false,
                        result: serde_json::json!({ "error": reason }),
                        banner: None,
                    },
                    _ => self.table.execute(session, &call.name, &call.arguments),
                };
                self.answer_call(session, round, &call, ToolHandling::Executed, outcome);
            }
        }
        if self.answered {
            let text = self.texts.join("\n\n");
            return self.finish(session, text);
        }
        if let Some(load) = self.records_for_request(session) {
            self.phase = Phase::Loading(load.clone());
            return Step::Load(load);
        }
        let request = self.turn_request(session);
        self.send(request)
    }

    /// What the next request needs read from the store first: the steps of the recall
    /// index's rebuild (so the automatic recall and search see every stored message), then
    /// the logs and messages the plan shows (pinned logs, Heavy mode's best match, recalled
    /// excerpts).
    fn records_for_request(&mut self, session: &Session) -> Option<LogLoad> {
        let index = session.recall_state().index_request();
        let load = if index.is_some() {
            LogLoad {
                efforts: Vec::new(),
                index,
                messages: Vec::new(),
                tool: None,
            }
        } else {
            LogLoad {
                efforts: session.logs_needed_for_plan(),
                index: None,
                messages: session.messages_needed_for_plan(),
                tool: None,
            }
        };
        if load.is_empty() {
            return None;
        }
        if let Some((last, failed)) = &self.plan_load {
            if *failed || *last == load {
                return None;
            }
        }
        self.plan_load = Some((load.clone(), false));
        Some(load)
    }

    /// The stored logs `call` needs that are not in the session yet, unless they were already
    /// asked for this call.
    fn logs_to_load(&mut self, session: &Session, call: &ToolCall) -> Option<LogLoad> {
        if self
            .log_request
            .as_ref()
            .is_some_and(|(id, _)| *id == call.id)
        {
            return None;
        }
        let load = LogLoad {
            efforts: ccm_core::tools::logs_needed(session.efforts(), &call.name, &call.arguments),
            index: None,
            messages: session.messages_needed_for_tool(&call.name, &call.arguments),
            tool: Some(call.name.clone()),
        };
        if load.is_empty() {
            return None;
        }
        self.log_request = Some((call.id.clone(), None));
        Some(load)
    }

    fn send(&mut self, request: LlmRequest) -> Step {
        self.records.push(RequestRecord {
            purpose: request.purpose.clone(),
            plan_id: request.plan_id.clone(),
            attempts: request.attempt,
            estimate: request.estimate,
            usage: None,
            reconciliation: None,
            retries: Vec::new(),
            outcome: RequestOutcome::Pending,
        });
        self.phase = Phase::Awaiting(request.clone());
        Step::Send(request)
    }

    /// The next request of the turn's conversation: the plan as it stands now, then this
    /// turn's tool exchange.
    fn turn_request(&mut self, session: &mut Session) -> LlmRequest {
        self.turn_requests += 1;
        let forced = self.tool_rounds >= self.settings.max_tool_rounds;
        self.final_answer_forced = forced;
        let plan = session.build_plan();
        // The session's telemetry keeps every request's plan, exclusions and recipe.
        session.record_request(&plan, None);
        let mut messages = wire_messages(&plan.messages);
        messages.extend(self.exchange.iter().cloned());
        let tool_choice = if forced {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        };
        LlmRequest {
            purpose: RequestPurpose::Turn {
                round: self.turn_requests,
                final_answer_forced: forced,
            },
            attempt: 1,
            messages,
            // Tools are sent even when the answer is forced to be text: the conversation
            // contains tool calls, and providers reject those without the definitions.
            tools: self.tools.clone(),
            options: self.settings.options(
                self.settings.stream,
                self.settings.max_tokens,
                tool_choice,
            ),
            plan_id: Some(plan.plan_id.clone()),
            estimate: PromptEstimate {
                context_tokens: plan.totals.context_tokens,
                turn_extra_tokens: self.exchange_tokens,
                estimated_prompt_tokens: plan.totals.context_tokens + self.exchange_tokens,
                tool_definition_tokens: self.tool_definition_tokens,
            },
        }
    }

    /// Handles a `close_effort` call. Returns the summary request to send, or `None` when the
    /// call was answered at once (with the model's own summary, or with an error).
    fn start_close(
        &mut self,
        session: &mut Session,
        round: u32,
        call: ToolCall,
    ) -> Option<LlmRequest> {
        let Some((effort_id, model_summary)) = closable_effort(session, &call.arguments) else {
            // The call would fail: let the session produce its precise error, which changes
            // nothing. No summary is requested for an effort that cannot be concluded.
            let outcome = session.execute_tool(&call.name, &call.arguments);
            self.answer_call(session, round, &call, ToolHandling::Executed, outcome);
            return None;
        };
        if let (Some(summary), SummaryPolicy::UseModelSummary) =
            (&model_summary, self.settings.summary_policy)
        {
            let outcome = conclude_with(session, &effort_id, summary);
            self.answer_call(
                session,
                round,
                &call,
                ToolHandling::ClosedWithModelSummary,
                outcome,
            );
            return None;
        }
        let effort = session
            .efforts()
            .get(&effort_id)
            .expect("closable_effort returned an existing id");
        // The turn's own exchange is stored in this effort if the turn is routed to it.
        let pending_user_text = (session.routing_target() == Some(effort_id.as_str()))
            .then_some(self.user_text.as_str());
        let messages = summary::summary_messages(effort, pending_user_text);
        let counter = session.counter();
        let context_tokens: u64 = messages
            .iter()
            .map(|m| u64::from(counter.count(wire_text(m))))
            .sum();
        self.pending_close = Some(PendingClose {
            call,
            round,
            effort_id: effort_id.clone(),
            model_summary,
        });
        Some(LlmRequest {
            purpose: RequestPurpose::Summary { effort_id },
            attempt: 1,
            messages,
            tools: Vec::new(),
            options: self.settings.options(
                false,
                self.settings.summary_max_tokens,
                ToolChoice::Auto,
            ),
            plan_id: None,
            estimate: PromptEstimate {
                context_tokens,
                turn_extra_tokens: 0,
                estimated_prompt_tokens: context_tokens,
                tool_definition_tokens: 0,
            },
        })
    }

    /// Concludes the effort waiting for its summary: with the answer when it is usable, else
    /// with the model's own summary (under [`SummaryPolicy::AlwaysRequest`]), else with the
    /// extractive summary and the reason.
    fn finish_close(&mut self, session: &mut Session, answer: Result<String, String>) {
        let Some(pending) = self.pending_close.take() else {
            return;
        };
        let id = pending.effort_id.as_str();
        let (outcome, handling) = match answer {
            Ok(summary) => (
                conclude_with(session, id, &summary),
                ToolHandling::ClosedWithRequestedSummary,
            ),
            Err(reason) => match &pending.model_summary {
                Some(own) => (
                    conclude_with(session, id, own),
                    ToolHandling::ClosedWithModelSummary,
                ),
                None => {
                    // No tool call concludes with the fallback and its reason, so the session
                    // is called directly; its banner reaches the person through the turn's
                    // banners.
                    let outcome = match session.close_effort_with_fallback(Some(id), &reason) {
                        Ok(concluded) => ToolOutcome {
                            name: pending.call.name.clone(),
                            ok: true,
                            result: serde_json::to_value(&concluded).unwrap_or(Value::Null),
                            banner: None,
                        },
                        Err(error) => ToolOutcome {
                            name: pending.call.name.clone(),
                            ok: false,
                            result: serde_json::json!({"error": error.to_string()}),
                            banner: None,
                        },
                    };
                    (outcome, ToolHandling::ClosedWithFallbackSummary)
                }
            },
        };
        self.answer_call(session, pending.round, &pending.call, handling, outcome);
    }

    /// Records a handled call and appends its result to the exchange sent back to the model.
    /// A conclusion that failed after all (the session refused it) is recorded as a plain
    /// execution: nothing was concluded.
    fn answer_call(
        &mut self,
        session: &Session,
        round: u32,
        call: &ToolCall,
        handling: ToolHandling,
        outcome: ToolOutcome,
    ) {
        let content = outcome.result_json();
        self.exchange_tokens += u64::from(session.counter().count(&content));
        self.exchange.push(WireMessage::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
        });
        self.trace.push(ToolTraceEntry {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            handling: if outcome.ok {
                handling
            } else {
                ToolHandling::Executed
            },
            ok: outcome.ok,
            result: outcome.result,
            banner: outcome.banner,
        });
    }

    fn accept(&mut self, session: &mut Session, request: &LlmRequest, response: ProviderResponse) {
        if let (Some(plan_id), Some(usage)) = (&request.plan_id, &response.usage) {
            session.report_usage(plan_id, usage.prompt_tokens);
        }
        if let Some(record) = self.records.last_mut() {
            record.usage = response.usage;
            record.reconciliation = UsageReconciliation::from_usage(
                request.estimate.estimated_prompt_tokens,
                response.usage.as_ref(),
            );
            record.outcome = RequestOutcome::Answered {
                text_chars: response.text.chars().count(),
                tool_calls: response.tool_calls.len(),
                finish_reason: response.finish_reason.clone(),
            };
        }
        match &request.purpose {
            RequestPurpose::Summary { .. } => {
                let answer = summary::clean_summary(&response.text)
                    .ok_or_else(|| "the model returned an empty summary".to_string());
                self.finish_close(session, answer);
            }
            // The engine never sends these itself: hosts send them after the turn, with
            // `rolling_summary_request`. An answer that reaches a turn is ignored.
            RequestPurpose::RollingSummary => {}
            RequestPurpose::Turn {
                round,
                final_answer_forced,
            } => {
                let text = response.text.trim();
                if !text.is_empty() {
                    self.texts.push(text.to_string());
                }
                if *final_answer_forced || response.tool_calls.is_empty() {
                    for call in &response.tool_calls {
                        self.trace.push(ToolTraceEntry {
                            round: *round,
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                            handling: ToolHandling::IgnoredInForcedAnswer,
                            ok: false,
                            result: Value::Null,
                            banner: None,
                        });
                    }
                    self.answered = true;
                } else {
                    let message = response.to_wire_message();
                    self.exchange_tokens += count_wire(session, &message);
                    self.exchange.push(message);
                    self.tool_rounds += 1;
                    self.pending_calls
                        .extend(response.tool_calls.into_iter().map(|call| (*round, call)));
                }
            }
        }
    }

    fn fail(&mut self, session: &mut Session, request: LlmRequest, error: ProviderError) {
        if let Some(delay_ms) = self.settings.retry.delay_ms(request.attempt, &error) {
            let wait = RetryWait {
                delay_ms,
                failed_attempt: request.attempt,
                error: error.to_string(),
            };
            if let Some(record) = self.records.last_mut() {
                record.retries.push(RetryRecord {
                    attempt: request.attempt,
                    error: wait.error.clone(),
                    delay_ms,
                });
            }
            self.phase = Phase::Waiting {
                request,
                wait,
                announced: false,
            };
            return;
        }
        self.mark_last_request(RequestOutcome::Failed {
            error: error.to_string(),
        });
        match (&request.purpose, &error) {
            (RequestPurpose::Summary { .. }, error) if *error != ProviderError::Cancelled => {
                self.finish_close(session, Err(format!("the summary request failed: {error}")));
            }
            _ => {
                self.abort(session, error);
            }
        }
    }

    fn mark_last_request(&mut self, outcome: RequestOutcome) {
        if let Some(record) = self.records.last_mut() {
            if record.outcome == RequestOutcome::Pending {
                record.outcome = outcome;
            }
        }
    }

    fn abort(&mut self, session: &mut Session, error: ProviderError) -> Step {
        // The session's own copy of the text is the one to give back; the engine's copy only
        // stands in if the session was already taken out of the turn.
        let user_text = session
            .abort_turn()
            .unwrap_or_else(|_| self.user_text.clone());
        self.pending_calls.clear();
        self.pending_close = None;
        let step = Step::Failed(Box::new(TurnFailure {
            error,
            user_text,
            requests: self.records.clone(),
            tool_calls: self.trace.clone(),
        }));
        self.phase = Phase::Finished(step.clone());
        step
    }

    fn finish(&mut self, session: &mut Session, model_text: String) -> Step {
        let report = match session.end_turn(&model_text, self.last_response_at_ms) {
            Ok(report) => report,
            // `next` checked that the session is in this turn just before.
            Err(error) => unreachable!("the session left the turn unexpectedly: {error}"),
        };
        let (operations, salience) = report.banners.split_at(report.operation_banners);
        let parts = [
            operations.join("\n"),
            model_text.trim().to_string(),
            salience.join("\n"),
        ];
        let reply = parts
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        let step = Step::Done(Box::new(TurnResult {
            reply,
            model_text,
            report,
            requests: self.records.clone(),
            tool_calls: self.trace.clone(),
            tool_rounds: self.tool_rounds,
            final_answer_forced: self.final_answer_forced,
        }));
        self.phase = Phase::Finished(step.clone());
        step
    }
}

/// Concludes `id` with `summary` through the `close_effort` tool, so the conclusion is executed
/// (and reported, with its banner) exactly like a call the model made with that summary.
fn conclude_with(session: &mut Session, id: &str, summary: &str) -> ToolOutcome {
    let arguments = serde_json::json!({ "id": id, "summary": summary }).to_string();
    session.execute_tool(ccm_core::tools::name::CLOSE_EFFORT, &arguments)
}

/// The effort a `close_effort` call would conclude, and the summary in its arguments (blank
/// counts as none), or `None` when the call would fail: arguments that are not a JSON object
/// of the documented shape, an unknown id, no active effort, or an effort that is not open.
///
/// It resolves ids the way the session does (exact id, then the slug of a name), so it only
/// decides whether a summary request is worth making; the session still checks everything
/// when the effort is concluded.
fn closable_effort(session: &Session, arguments: &str) -> Option<(String, Option<String>)> {
    let trimmed = arguments.trim();
    let args: Value = if trimmed.is_empty() || trimmed == "null" {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(trimmed).ok()?
    };
    let args = args.as_object()?;
    let id = match args.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.as_str()),
        Some(_) => return None,
    };
    let summary = match args.get("summary") {
        None | Some(Value::Null) => None,
        Some(Value::String(summary)) => Some(summary.trim().to_string()).filter(|s| !s.is_empty()),
        Some(_) => return None,
    };
    let effort = session.efforts().resolve(id).ok()?;
    (effort.status == EffortStatus::Open).then(|| (effort.id.clone(), summary))
}

/// The text of a wire message that a token estimate counts.
fn wire_text(message: &WireMessage) -> &str {
    match message {
        WireMessage::System(text) | WireMessage::User(text) => text,
        WireMessage::Assistant { text, .. } => text,
        WireMessage::ToolResult { content, .. } => content,
    }
}

/// Tokens of an assistant message with tool calls: its text, and each call's name and
/// arguments.
fn count_wire(session: &Session, message: &WireMessage) -> u64 {
    let counter = session.counter();
    let mut tokens = u64::from(counter.count(wire_text(message)));
    if let WireMessage::Assistant { tool_calls, .. } = message {
        for call in tool_calls {
            tokens +=
                u64::from(counter.count(&call.name)) + u64::from(counter.count(&call.arguments));
        }
    }
    tokens
}
