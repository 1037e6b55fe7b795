//! An open effort's summary written outside a turn: the request the engine sends when the
//! model concludes an effort itself, asked of the same model a turn would ask (the app's
//! conclude dialog), or handed to the host's own model as a prompt (ccm-wasm's
//! `closeEffortWith`).

use crate::driver::Model;
use crate::session::BrowserSession;
use ccm_core::Effort;
use ccm_engine::summary::{clean_summary, summary_messages};
use ccm_engine::{LlmRequest, PromptEstimate, RequestPurpose, DEFAULT_SUMMARY_MAX_TOKENS};
use ccm_provider::{RequestOptions, ToolChoice, WireMessage};
use web_sys::AbortSignal;

/// The summary request of one open effort: a system message and a user prompt holding the
/// effort's log, with the engine's output limit for summaries.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// The effort to be summarised.
    pub effort_id: String,
    messages: Vec<WireMessage>,
}

impl SummaryRequest {
    /// The request for `effort`'s summary. `pending_user_text` is the person's message of the
    /// turn in progress when it belongs to this effort: it is stored only when the turn ends,
    /// but often carries the final facts, so the summary sees it (as the engine's does).
    pub fn for_effort(effort: &Effort, pending_user_text: Option<&str>) -> SummaryRequest {
        SummaryRequest {
            effort_id: effort.id.clone(),
            messages: summary_messages(effort, pending_user_text),
        }
    }

    /// The messages as (role, text) pairs, `"system"` then `"user"`: ccm-engine's summary
    /// request holds nothing else.
    pub fn messages(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.messages.iter().filter_map(|message| match message {
            WireMessage::System(text) => Some(("system", text.as_str())),
            WireMessage::User(text) => Some(("user", text.as_str())),
            _ => None,
        })
    }

    /// The output limit of a summary, in tokens.
    pub fn max_tokens(&self) -> u32 {
        DEFAULT_SUMMARY_MAX_TOKENS
    }

    /// The request as the engine would send it to `model_name`, whole rather than streamed.
    fn llm_request(&self, model_name: String) -> LlmRequest {
        let mut options = RequestOptions::new(model_name);
        options.max_tokens = self.max_tokens();
        options.stream = false;
        options.tool_choice = ToolChoice::Auto;
        LlmRequest {
            purpose: RequestPurpose::Summary {
                effort_id: self.effort_id.clone(),
            },
            attempt: 1,
            messages: self.messages.clone(),
            tools: Vec::new(),
            options,
            plan_id: None,
            estimate: PromptEstimate::default(),
        }
    }
}

/// The summary in a model's answer, cleaned of the wrappers models like to add (a `Summary:`
/// label, quotes), or `None` when nothing usable is left.
pub fn summary_of_answer(text: &str) -> Option<String> {
    clean_summary(text)
}

/// Asks `model` (as `model_name`) for the summary of the open effort `effort_id` of `session`,
/// after reading its stored log, and returns the cleaned summary. `signal` cancels the request.
///
/// # Errors
/// A sentence for the person: a storage failure, no such effort, a failed request, or an
/// answer with no usable summary.
pub async fn write_summary(
    session: &BrowserSession,
    effort_id: &str,
    model: &Model,
    model_name: String,
    signal: Option<&AbortSignal>,
) -> Result<String, String> {
    let args = serde_json::json!({ "id": effort_id }).to_string();
    session
        .load_logs_for("reopen_effort", &args)
        .await
        .map_err(|e| e.to_string())?;
    let request = session
        .with_core(|core| {
            core.efforts()
                .get(effort_id)
                .map(|effort| SummaryRequest::for_effort(effort, None))
        })
        .ok_or_else(|| format!("no effort {effort_id}"))?;
    let response = model
        .answer(session, &request.llm_request(model_name), signal)
        .await
        .map_err(|e| e.to_string())?;
    summary_of_answer(&response.text)
        .ok_or_else(|| "the model answered with an empty summary".to_string())
}
