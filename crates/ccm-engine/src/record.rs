//! What a turn records about itself: one entry per request (with the usage reconciliation) and
//! one per tool call, returned with the turn's result or failure.

use ccm_core::TurnReport;
use ccm_provider::{FinishReason, ProviderError, Usage, UsageReconciliation};
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// Why a request is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestPurpose {
    /// A request of the turn's conversation with the model.
    Turn {
        /// 1 for the first request of the turn; each executed round of tool calls adds one.
        round: u32,
        /// Whether this request forces a plain text answer (`tool_choice: none`) because the
        /// turn used up its tool rounds.
        final_answer_forced: bool,
    },
    /// The separate request for the summary of an effort the model is concluding.
    Summary {
        /// The effort being concluded.
        effort_id: String,
    },
    /// The request for a model-written rolling summary after a level-3 compaction.
    RollingSummary,
}

impl RequestPurpose {
    /// Whether the request's streamed text is the answer the person is waiting for. A summary
    /// request's text goes into a banner instead, so a user interface should not show its
    /// deltas as the reply.
    pub fn is_answer(&self) -> bool {
        matches!(self, RequestPurpose::Turn { .. })
    }
}

/// The local token estimate of one request's prompt.
///
/// `estimated_prompt_tokens` is what [`UsageReconciliation`] compares with the provider's
/// count: the plan's context tokens plus the messages this turn added (assistant tool calls and
/// tool results), all counted with the session's counter. The tool definitions are sent too,
/// and are counted separately in `tool_definition_tokens`, so the difference can be read
/// either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PromptEstimate {
    /// Tokens of the context plan (for a summary request: of its two messages).
    pub context_tokens: u64,
    /// Tokens of this turn's assistant tool calls and tool results sent with the plan.
    pub turn_extra_tokens: u64,
    /// `context_tokens + turn_extra_tokens`.
    pub estimated_prompt_tokens: u64,
    /// Tokens of the JSON tool definitions sent with the request (0 when none are sent).
    pub tool_definition_tokens: u64,
}

/// One failed attempt that was retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryRecord {
    /// The attempt that failed, counting from 1.
    pub attempt: u32,
    /// Why it failed, as shown to people.
    pub error: String,
    /// How long the transport was asked to wait before the next attempt.
    pub delay_ms: u64,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RequestOutcome {
    /// Sent, and no answer received yet.
    Pending,
    /// The model answered.
    Answered {
        /// Characters of answer text.
        text_chars: usize,
        /// Tool calls in the answer.
        tool_calls: usize,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
    /// The request failed after its last attempt.
    Failed {
        /// Why, as shown to people.
        error: String,
    },
}

/// Everything recorded about one request of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// Why it was made.
    pub purpose: RequestPurpose,
    /// The id of the context plan it was built from (turn requests only).
    pub plan_id: Option<String>,
    /// How many times it was sent.
    pub attempts: u32,
    /// The local estimate of its prompt.
    pub estimate: PromptEstimate,
    /// The token counts the provider reported, if it did.
    pub usage: Option<Usage>,
    /// The estimate next to the provider's prompt count, when the provider reported one.
    pub reconciliation: Option<UsageReconciliation>,
    /// The attempts that failed and were retried.
    pub retries: Vec<RetryRecord>,
    /// How it ended.
    pub outcome: RequestOutcome,
}

/// How the engine handled one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolHandling {
    /// Executed with `Session::execute_tool`.
    Executed,
    /// A `close_effort` concluded with the summary the model wrote in its arguments.
    ClosedWithModelSummary,
    /// A `close_effort` concluded with the answer of a separate summary request.
    ClosedWithRequestedSummary,
    /// A `close_effort` concluded with the extractive summary because the summary request
    /// failed or returned nothing usable.
    ClosedWithFallbackSummary,
    /// A tool call in the answer that was forced to be plain text; it was not executed.
    IgnoredInForcedAnswer,
    /// A call of a tool the host runs, answered with the host's result.
    RanByHost,
}

/// One tool call of the turn and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolTraceEntry {
    /// The turn request whose answer contained the call (see [`RequestPurpose::Turn`]).
    pub round: u32,
    /// The provider's id of the call.
    pub call_id: String,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The arguments exactly as the model wrote them.
    pub arguments: String,
    /// How the engine handled it.
    pub handling: ToolHandling,
    /// Whether it succeeded. An ignored call did not run and is not `ok`.
    pub ok: bool,
    /// The result sent back to the model (`{"error": "..."}` on failure; `null` when ignored).
    pub result: Value,
    /// The banner of a successful call. A conclusion with the extractive fallback has its
    /// banner only in the turn's banners, since it does not go through `execute_tool`.
    pub banner: Option<String>,
}

/// A turn that completed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnResult {
    /// What the person sees: the banners of the turn's operations, the model's text, then the
    /// banners of what salience did at the end of the turn (auto-collapses), separated by blank
    /// lines.
    pub reply: String,
    /// The model's text, stored as the turn's assistant message: the text of every answer of
    /// the turn (said before tool calls, and the final answer), separated by blank lines.
    pub model_text: String,
    /// What `end_turn` reported: routing, every banner, and the metrics point.
    pub report: TurnReport,
    /// Every request of the turn in order, summary requests included.
    pub requests: Vec<RequestRecord>,
    /// Every tool call of the turn in order.
    pub tool_calls: Vec<ToolTraceEntry>,
    /// How many rounds of tool calls were executed.
    pub tool_rounds: u32,
    /// Whether the turn ran out of tool rounds and its answer was forced to be plain text.
    pub final_answer_forced: bool,
}

/// A turn that ended without an answer: the provider failed or the turn was cancelled.
///
/// The session was restored with `abort_turn`, exactly as it was before the turn; the person's
/// text is returned so it can be sent again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnFailure {
    /// What went wrong.
    #[serde(serialize_with = "serialize_display")]
    pub error: ProviderError,
    /// The person's message, to send again.
    pub user_text: String,
    /// The requests made before the failure (their effects were undone).
    pub requests: Vec<RequestRecord>,
    /// The tool calls executed before the failure (their effects were undone).
    pub tool_calls: Vec<ToolTraceEntry>,
}

impl TurnFailure {
    /// Whether the turn ended because it was cancelled rather than because of an error.
    pub fn was_cancelled(&self) -> bool {
        self.error == ProviderError::Cancelled
    }
}

impl fmt::Display for TurnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.was_cancelled() {
            write!(
                f,
                "The turn was cancelled; nothing was changed and your message can be sent again."
            )
        } else {
            write!(
                f,
                "{} Nothing was changed; your message can be sent again.",
                self.error
            )
        }
    }
}

impl std::error::Error for TurnFailure {}

fn serialize_display<S: serde::Serializer>(
    error: &ProviderError,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}
