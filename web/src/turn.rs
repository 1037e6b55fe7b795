//! One turn of the conversation: a thin async loop over ccm-engine's sans-IO `TurnEngine`.
//!
//! The engine decides everything (what to send, tool calls, summaries on close, retries, how to
//! end or undo the turn). This loop only moves requests to a transport (the offline demo model
//! or `fetch`), shows progress, waits when the engine asks for a retry delay, and saves the
//! session when the turn is done. Stop aborts the `AbortController`: the request in flight is
//! aborted by the browser and the engine cancels the turn, which restores the session exactly
//! and gives the person's text back to the message box.

use crate::provider::ProviderSettings;
use crate::state::{now_ms, AppState, FailedTurn, LiveTurn, NoticeKind, Phase};
use crate::transport;
use crate::view_model::TurnBanners;
use ccm_engine::offline::{OfflineModel, SessionFacts};
use ccm_engine::{
    summary, LlmRequest, PromptEstimate, RequestPurpose, Step, TurnEngine, TurnEvent,
    DEFAULT_SUMMARY_MAX_TOKENS,
};
use ccm_provider::{
    ProviderConfig, ProviderError, ProviderResponse, RequestOptions, StreamDelta, ToolChoice,
};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::rc::Rc;
use web_sys::{AbortController, AbortSignal};

/// Pause between the words the offline model "streams", so its replies arrive the way a real
/// model's do (and Stop can interrupt them).
const OFFLINE_WORD_DELAY_MS: f64 = 12.0;

enum Transport {
    Offline,
    Http(ProviderConfig),
}

impl Transport {
    fn of(settings: &ProviderSettings, key: &str) -> Result<Transport, String> {
        Ok(match settings.provider_config(Some(key))? {
            None => Transport::Offline,
            Some(config) => Transport::Http(config),
        })
    }

    /// Sends one request and returns the model's answer.
    async fn send(
        &self,
        session: &ccm_browser::BrowserSession,
        request: &LlmRequest,
        signal: &AbortSignal,
        on_delta: &dyn Fn(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        match self {
            Transport::Http(config) => {
                let idle_timeout_ms = ccm_provider::DEFAULT_IDLE_TIMEOUT_MS;
                ccm_browser::transport::send(
                    config,
                    request,
                    Some(signal),
                    idle_timeout_ms,
                    on_delta,
                )
                .await
            }
            Transport::Offline => {
                let response = session.with_core(|core| {
                    OfflineModel::new().respond(request, &SessionFacts::of(core))
                });
                if request.options.stream && request.purpose.is_answer() {
                    for delta in OfflineModel::stream_deltas(&response) {
                        if signal.aborted() {
                            return Err(ProviderError::Cancelled);
                        }
                        on_delta(delta);
                        transport::timeout(OFFLINE_WORD_DELAY_MS).await;
                    }
                }
                if signal.aborted() {
                    return Err(ProviderError::Cancelled);
                }
                Ok(response)
            }
        }
    }
}

/// Sends the person's message as a new turn (unless a turn is running or the text is blank).
pub fn send_message(state: AppState, text: String) {
    if text.trim().is_empty() || state.in_turn() || state.session.with_value(Option::is_none) {
        return;
    }
    // Another tab saved a newer revision: a turn taken here could not be saved either.
    if state.conflict.get_untracked() {
        return;
    }
    spawn_local(drive(state, text));
}

/// Stops the turn in progress.
pub fn stop(state: AppState) {
    // `try_`: at the app's cleanup the handle may already be gone, and then so is the turn.
    state.abort.try_with_value(|controller| {
        if let Some(controller) = controller {
            controller.abort();
        }
    });
}

fn set_phase(state: AppState, phase: Phase) {
    state.live.update(|live| {
        if let Some(live) = live {
            live.phase = phase;
        }
    });
}

/// Shows a turn event in the turn in progress.
fn show(state: AppState, event: TurnEvent<'_>) {
    state.live.update(|live| {
        if let Some(live) = live {
            live.show(event);
        }
    });
}

/// The longest message the app sends, in characters: the npm package's default
/// `maxMessageChars`. A longer text (a whole file pasted into the box) belongs in an
/// attachment, and refusing it before the core counts it keeps a giant paste from stalling or
/// exhausting the page.
pub const MAX_MESSAGE_CHARS: usize = 1_000_000;

/// Why `text` cannot be sent as a message, in words for the person, or `None` when it can.
pub fn message_too_long(text: &str) -> Option<String> {
    // Bytes bound characters from above, so most texts are decided without counting.
    if text.len() <= MAX_MESSAGE_CHARS {
        return None;
    }
    let chars = text.chars().count();
    (chars > MAX_MESSAGE_CHARS).then(|| {
        format!(
            "This message is {chars} characters long, more than the {MAX_MESSAGE_CHARS} a message can hold. Nothing was sent and your text is kept: attach it as a file instead, or send a shorter part."
        )
    })
}

async fn drive(state: AppState, text: String) {
    let Some(session) = state.session.get_value() else {
        return;
    };
    if let Some(error) = message_too_long(&text) {
        state.failed.set(Some(FailedTurn {
            user_text: text,
            error,
        }));
        return;
    }
    let settings = state.provider.get_untracked();
    let transport = match Transport::of(&settings, &state.api_key.get_untracked()) {
        Ok(transport) => transport,
        Err(error) => {
            state.failed.set(Some(FailedTurn {
                user_text: text,
                error,
            }));
            return;
        }
    };
    let Ok(controller) = AbortController::new() else {
        return;
    };
    let signal = controller.signal();
    state.abort.set_value(Some(controller));
    state.failed.set(None);
    state.draft.set(String::new());
    state.live.set(Some(LiveTurn::new(text.clone())));
    let begun =
        session.with_core(|core| TurnEngine::begin(core, &text, now_ms(), state.engine_settings()));
    match begun {
        Ok(mut engine) => {
            crate::chat_controls::attach_pending(state, &session);
            run(state, &session, &transport, &mut engine, &signal).await
        }
        Err(error) => {
            state.live.set(None);
            state.failed.set(Some(FailedTurn {
                user_text: text,
                error: error.to_string(),
            }));
        }
    }
    state.abort.set_value(None);
}

async fn run(
    state: AppState,
    session: &Rc<ccm_browser::BrowserSession>,
    transport: &Transport,
    engine: &mut TurnEngine,
    signal: &AbortSignal,
) {
    loop {
        let step = session.with_core(|core| {
            if signal.aborted() {
                Ok(engine.cancel(core))
            } else {
                engine.next(core)
            }
        });
        let step = match step {
            Ok(step) => step,
            Err(error) => {
                // The engine was misused; the session must not stay in a half-done turn.
                let user_text = session
                    .with_core(|core| core.abort_turn())
                    .unwrap_or_default();
                state.live.set(None);
                state.failed.set(Some(FailedTurn {
                    user_text,
                    error: error.to_string(),
                }));
                state.changed();
                return;
            }
        };
        match step {
            Step::Send(request) => {
                show(state, TurnEvent::Sending(&request));
                let on_delta = |delta: StreamDelta| {
                    show(
                        state,
                        TurnEvent::Delta {
                            purpose: &request.purpose,
                            delta: &delta,
                        },
                    )
                };
                let mut outcome = transport.send(session, &request, signal, &on_delta).await;
                if let Ok(response) = &outcome {
                    // A session opened from storage reads a concluded effort's log only when a
                    // tool needs it.
                    for call in &response.tool_calls {
                        if let Err(e) = session.load_logs_for(&call.name, &call.arguments).await {
                            outcome = Err(ProviderError::Network(format!(
                                "could not read a stored effort log: {e}"
                            )));
                            break;
                        }
                    }
                }
                let received = session.with_core(|core| engine.receive(core, outcome, now_ms()));
                if let Err(error) = received {
                    state.notify(NoticeKind::Error, error.to_string());
                }
            }
            Step::Wait(wait) => {
                show(state, TurnEvent::Retrying(&wait));
                ccm_browser::transport::sleep(wait.delay_ms, Some(signal)).await;
            }
            Step::Done(result) => {
                // An emergency compaction replaced history with the extractive summary; ask the
                // model for a written one. Any failure keeps the extractive one (never empty).
                let rolling = session
                    .with_core(|core| ccm_engine::rolling_summary_request(core, engine.settings()));
                if let Some(request) = rolling {
                    show(state, TurnEvent::Sending(&request));
                    let ignore = |_: StreamDelta| {};
                    if let Ok(response) = transport.send(session, &request, signal, &ignore).await {
                        session.with_core(|core| core.upgrade_rolling_summary(&response.text));
                    }
                }
                let report = &result.report;
                let split = report.operation_banners.min(report.banners.len());
                state.banners.update(|banners| {
                    banners.insert(
                        report.turn,
                        TurnBanners {
                            before: report.banners[..split].to_vec(),
                            after: report.banners[split..].to_vec(),
                        },
                    );
                });
                set_phase(state, Phase::Saving);
                // The files went out with this turn.
                state.attachments.set(Vec::new());
                state.changed();
                state.save().await;
                state.live.set(None);
                return;
            }
            Step::Failed(failure) => {
                state.live.set(None);
                if failure.was_cancelled() {
                    state.draft.set(failure.user_text.clone());
                    state.notify(
                        NoticeKind::Info,
                        "Stopped. Nothing was changed; your message is back in the box.",
                    );
                } else {
                    state.failed.set(Some(FailedTurn {
                        user_text: failure.user_text.clone(),
                        error: failure.to_string(),
                    }));
                }
                state.changed();
                return;
            }
        }
    }
}

/// Asks the model for the summary of an open effort (the conclude dialog's "write it for me"),
/// with the same prompt the engine uses when the model concludes an effort itself. `signal`
/// cancels the request (the dialog aborts it when it closes).
///
/// # Errors
/// A sentence for the person when the request fails or returns nothing usable.
pub async fn write_summary(
    state: AppState,
    effort_id: String,
    signal: AbortSignal,
) -> Result<String, String> {
    let session = state.session.get_value().ok_or("no session is open")?;
    let args = serde_json::json!({ "id": effort_id }).to_string();
    session
        .load_logs_for("reopen_effort", &args)
        .await
        .map_err(|e| e.to_string())?;
    let messages = session
        .with_core(|core| {
            core.effort(&effort_id)
                .map(|effort| summary::summary_messages(effort, None))
        })
        .ok_or_else(|| format!("no effort {effort_id}"))?;
    let settings = state.provider.get_untracked();
    let transport = Transport::of(&settings, &state.api_key.get_untracked())?;
    let mut options = RequestOptions::new(settings.engine_settings().model);
    options.max_tokens = DEFAULT_SUMMARY_MAX_TOKENS;
    options.stream = false;
    options.tool_choice = ToolChoice::Auto;
    let request = LlmRequest {
        purpose: RequestPurpose::Summary {
            effort_id: effort_id.clone(),
        },
        attempt: 1,
        messages,
        tools: Vec::new(),
        options,
        plan_id: None,
        estimate: PromptEstimate::default(),
    };
    let response = transport
        .send(&session, &request, &signal, &|_| {})
        .await
        .map_err(|e| e.to_string())?;
    summary::clean_summary(&response.text)
        .ok_or_else(|| "the model answered with an empty summary".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_over_the_limit_is_refused_in_words_and_one_at_the_limit_is_not() {
        assert_eq!(message_too_long(&"a".repeat(MAX_MESSAGE_CHARS)), None);
        let error = message_too_long(&"a".repeat(MAX_MESSAGE_CHARS + 1)).expect("refused");
        assert!(error.contains("1000001 characters"), "{error}");
        // The limit counts characters, not bytes: two-byte letters up to the limit pass.
        assert_eq!(message_too_long(&"é".repeat(MAX_MESSAGE_CHARS)), None);
        assert!(message_too_long(&"é".repeat(MAX_MESSAGE_CHARS + 1)).is_some());
    }
}
