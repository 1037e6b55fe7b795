//! # ccm-engine
//!
//! The sans-IO LLM turn engine of CCM: one turn of a conversation with a real model, as a state
//! machine the caller drives ([`TurnEngine`]), and the deterministic offline demo model
//! ([`offline`]) that answers without a network or a key.
//!
//! The engine sits on top of the domain's turn ([`Session::begin_turn`] and
//! [`Session::end_turn`]) and speaks to models through `ccm-provider`'s wire types; it uses
//! nothing of the session but its public API. It owns the conversions between the two
//! ([`wire_messages`], [`wire_tools`], and [`embeddings`] between a session's embedding cache
//! and an embeddings endpoint), so that the provider crate stays a leaf and the dependency
//! arrows point one way: `ccm-engine` → `ccm-core`, `ccm-engine` → `ccm-provider`.
//!
//! For every request it builds the context plan afresh (so an effort opened, expanded or
//! concluded by a tool call shows in the very next request), appends this turn's assistant tool
//! calls and tool results, and hands the caller an [`LlmRequest`]. The caller sends it however
//! it can — `fetch` in the browser, a blocking HTTP client natively, or the offline demo model —
//! and feeds back the [`ProviderResponse`] or the [`ProviderError`]. The engine runs the tool calls
//! through [`Session::execute_tool`], asks for summaries when the model concludes an effort,
//! decides about retries, and finally ends the turn.
//!
//! ```text
//! begin ──► next() ──► Send(request) ──► receive(response) ──► next() ──► … ──► Done(result)
//!                 ╰──► Wait(retry)  ──► (caller waits) ─────► next() ──► Send(same request)
//!            any provider error that is not retried, or cancel() ──► Failed(failure)
//! ```
//!
//! # Rules of a turn
//!
//! * **Tool rounds.** Each answer with tool calls is a round; all its calls run in order. After
//!   [`EngineSettings::max_tool_rounds`] rounds the next request forces a plain text answer
//!   ([`ToolChoice::None`]); tool calls in that forced answer are ignored (recorded, not run).
//! * **Bad tool calls.** Malformed JSON arguments, an unknown tool or an unknown or wrong effort
//!   id give the model an `{"error": …}` result, change nothing, and the turn goes on.
//! * **Summaries on close.** A valid `close_effort` call without a summary of its own makes
//!   the engine send a separate summary request over the effort's raw log (see
//!   [`summary`]); the effort is concluded with the answer. If that request fails or returns
//!   nothing usable, the effort is concluded with the extractive summary and the banner says
//!   why ([`Session::close_effort_with_fallback`]): never with an empty summary, and the raw log
//!   is kept either way. A `close_effort` call that would fail anyway (unknown id, effort not
//!   open) gets its error at once, without a summary request. Whether a summary written in
//!   the call's own arguments is used is [`SummaryPolicy`]'s choice.
//! * **Failures.** A provider error that is not retried, and cancellation, end the turn with
//!   [`Session::abort_turn`]: the session is exactly as before the turn and the person's text
//!   comes back in the [`TurnFailure`] to be sent again. A failed summary request is the one
//!   exception: it falls back as above and the turn goes on (unless it was cancelled).
//! * **Retries.** Transient failures (429, 5xx, timeouts, network errors) are retried after
//!   the delay [`RetryPolicy`] computes, honouring `Retry-After`. The engine decides; the
//!   caller only waits, because it owns the clock ([`Step::Wait`]).
//!
//! # Showing a turn while it runs
//!
//! Every host drives the engine with the one async loop in [`driver`] ([`driver::drive_turn`]
//! over a [`driver::TurnHost`]): the native runner, the npm package's `runTurn`, the browser
//! app and [`run_instant_turn`]. The engine also says when a tool call needs a raw log that is stored
//! but not loaded ([`Step::Load`]), so hosts that open sessions from a store read it then. The
//! driver tells the user interface what happens through one event type, [`TurnEvent`]: a
//! request being sent (or sent again), a piece of streamed answer, a retry being waited for, a
//! tool call handled. The result and the failure are what the driver returns.
//!
//! # Example
//!
//! A complete turn with hand-made responses, as a test or a scripted transport would drive it:
//!
//! ```
//! use ccm_engine::{EngineSettings, Step, TurnEngine};
//! use ccm_provider::{FinishReason, ProviderResponse, ToolCall};
//! use ccm_core::{Config, Session};
//!
//! let mut session = Session::new(Config::default()).unwrap();
//! let mut engine = TurnEngine::begin(
//!     &mut session,
//!     "Let's work on the auth bug: users get 401 after an hour.",
//!     1_000,
//!     EngineSettings::new("any-model"),
//! )
//! .unwrap();
//!
//! let answers = [
//!     ProviderResponse {
//!         text: String::new(),
//!         tool_calls: vec![ToolCall {
//!             id: "call_1".into(),
//!             name: "open_effort".into(),
//!             arguments: r#"{"name": "auth bug"}"#.into(),
//!         }],
//!         finish_reason: FinishReason::ToolCalls,
//!         usage: None,
//!     },
//!     ProviderResponse {
//!         text: "Started. When exactly do the 401s begin?".into(),
//!         tool_calls: vec![],
//!         finish_reason: FinishReason::Stop,
//!         usage: None,
//!     },
//! ];
//! let mut answers = answers.into_iter();
//! let result = loop {
//!     match engine.next(&mut session).unwrap() {
//!         Step::Send(_request) => {
//!             let answer = answers.next().expect("the engine asked for one request too many");
//!             engine.receive(&mut session, Ok(answer), 1_500).unwrap();
//!         }
//!         Step::Wait(_) => unreachable!("nothing failed, so nothing is retried"),
//!         Step::Load(_) => unreachable!("a session made in memory has every log loaded"),
//!         Step::RunTool(_) => unreachable!("only the built-in tools are offered"),
//!         Step::Done(result) => break result,
//!         Step::Failed(failure) => panic!("{failure}"),
//!     }
//! };
//! assert_eq!(
//!     result.reply,
//!     "--- Started effort: auth-bug ---\n\nStarted. When exactly do the 401s begin?"
//! );
//! assert_eq!(result.report.routed_to.as_deref(), Some("auth-bug"));
//! assert_eq!(result.tool_rounds, 1);
//! ```
//!
//! [`Session::begin_turn`]: ccm_core::Session::begin_turn
//! [`Session::end_turn`]: ccm_core::Session::end_turn
//! [`Session::execute_tool`]: ccm_core::Session::execute_tool
//! [`Session::close_effort_with_fallback`]: ccm_core::Session::close_effort_with_fallback
//! [`Session::abort_turn`]: ccm_core::Session::abort_turn
//! [`ProviderResponse`]: ccm_provider::ProviderResponse
//! [`ProviderError`]: ccm_provider::ProviderError
//! [`ToolChoice::None`]: ccm_provider::ToolChoice::None
//! [`RetryPolicy`]: ccm_provider::RetryPolicy
#![deny(missing_docs)]

pub mod driver;
pub mod embeddings;
mod event;
pub mod offline;
mod record;
pub mod summary;
mod turn;
mod wire;

pub use event::TurnEvent;
pub use record::{
    PromptEstimate, RequestOutcome, RequestPurpose, RequestRecord, RetryRecord, ToolHandling,
    ToolTraceEntry, TurnFailure, TurnResult,
};
pub use turn::{
    rolling_summary_request, run_instant_turn, tool_definition_tokens, EngineError, EngineSettings,
    HostToolCall, LlmRequest, LogLoad, RetryWait, RunError, Step, SummaryPolicy, TurnEngine,
    DEFAULT_MAX_TOOL_ROUNDS, DEFAULT_SUMMARY_MAX_TOKENS,
};
pub use wire::{wire_messages, wire_tools};
