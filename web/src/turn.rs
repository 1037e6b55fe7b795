//! One turn of the conversation: ccm-engine's one turn driver with the browser host that
//! `runTurn` uses too (`ccm_browser::BrowserSession::drive_turn`).
//!
//! The engine decides everything (what to send, tool calls, summaries on close, retries, which
//! stored logs to read, how to end or undo the turn). The driver moves requests to the offline
//! demo model or `fetch` and waits; this module shows its events, and saves the session when
//! the turn is done. Stop aborts the `AbortController`: the request in flight is
//! aborted by the browser and the engine cancels the turn, which restores the session exactly
//! and gives the person's text back to the message box.

use crate::provider::ProviderSettings;
use crate::state::{now_ms, AppState, FailedTurn, LiveTurn, NoticeKind, Phase};
use crate::view_model::TurnBanners;
use ccm_browser::transport::{self, send_with_limits, Limits};
use ccm_browser::{BrowserSession, Model};
use ccm_core::compaction::AttachmentKind;
use ccm_engine::offline::{OfflineModel, SessionFacts};
use ccm_engine::{
    summary, LlmRequest, PromptEstimate, RequestPurpose, RunError, TurnEngine, TurnEvent,
    TurnResult, DEFAULT_SUMMARY_MAX_TOKENS,
};
use ccm_provider::{ProviderError, ProviderResponse, RequestOptions, ToolChoice};
use leptos::prelude::*;
use leptos::task::spawn_local;
use web_sys::{AbortController, AbortSignal};

/// Pause between the words the offline model "streams", so its replies arrive the way a real
/// model's do (and Stop can interrupt them).
const OFFLINE_WORD_PAUSE_MS: u64 = 12;

/// Who answers with the app's provider settings and key.
fn model_of(settings: &ProviderSettings, key: &str) -> Result<Model, String> {
    Ok(match settings.provider_config(Some(key))? {
        None => Model::Offline {
            word_pause_ms: OFFLINE_WORD_PAUSE_MS,
        },
        Some(config) => Model::Provider(config, Limits::default()),
    })
}

/// Sends one request outside a turn (the conclude dialog's summary) and returns the answer.
async fn send_once(
    session: &BrowserSession,
    model: &Model,
    request: &LlmRequest,
    signal: &AbortSignal,
) -> Result<ProviderResponse, ProviderError> {
    match model {
        Model::Provider(config, limits) => {
            send_with_limits(config, request, Some(signal), *limits, &|_| {}).await
        }
        Model::Offline { .. } => {
            Ok(session
                .with_core(|core| OfflineModel::new().respond(request, &SessionFacts::of(core))))
        }
    }
}

/// Sends the person's message as a new turn (unless a turn is running or the text is blank).
pub fn send_message(state: AppState, text: String) {
    if text.trim().is_empty() || state.in_turn() || state.session.with_value(Option::is_none) {
        return;
    }
    // Another tab saved a newer revision, or another device wrote the session too: a turn
    // taken here could not be saved (or synced) either.
    if state.blocked_now() {
        return;
    }
    // The turn shows at once, with the text out of the box, while the check for another
    // tab's newer version runs; the text goes back into the box if the turn cannot be taken.
    state.sending.set_value(true);
    state.failed.set(None);
    state.draft.set(String::new());
    state.live.set(Some(LiveTurn::new(text.clone())));
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
    drive_sent(state, text).await;
    state.sending.set_value(false);
}

/// Takes the turn `send_message` began showing: `state.live` holds it from the start, and
/// every way out before the turn runs clears it (and puts the text back where it belongs).
async fn drive_sent(state: AppState, text: String) {
    // Another tab may have taken a turn in this session since this tab loaded it: answer
    // from its latest version.
    state.catch_up(true).await;
    let back_in_box = |text: String| {
        state.live.set(None);
        state
            .draft
            .update(|draft| *draft = crate::tabs::keep_both(&text, draft));
    };
    if state.blocked_now() {
        return back_in_box(text);
    }
    let Some(session) = state.session.get_value() else {
        return back_in_box(text);
    };
    if let Some(error) = message_too_long(&text) {
        state.live.set(None);
        state.failed.set(Some(FailedTurn {
            user_text: text,
            error,
        }));
        return;
    }
    let settings = state.provider.get_untracked();
    let model = match model_of(&settings, &state.api_key.get_untracked()) {
        Ok(model) => model,
        Err(error) => {
            state.live.set(None);
            state.failed.set(Some(FailedTurn {
                user_text: text,
                error,
            }));
            return;
        }
    };
    refresh_embeddings(state, &session, &settings, &text).await;
    let Ok(controller) = AbortController::new() else {
        return back_in_box(text);
    };
    let signal = controller.signal();
    state.abort.set_value(Some(controller));
    // Still the turn `send_message` showed, restarted for the session it now runs in.
    state.live.set(Some(LiveTurn::new(text.clone())));
    // The turn is running: announcements now wait for its save.
    state.sending.set_value(false);
    let begun =
        session.with_core(|core| TurnEngine::begin(core, &text, now_ms(), state.engine_settings()));
    match begun {
        Ok(mut engine) => {
            attach_pending(state, &session);
            let outcome = session
                .drive_turn(&mut engine, &model, Some(signal), &mut |event| {
                    show(state, event)
                })
                .await;
            finish(state, outcome).await;
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

/// With an embeddings endpoint in the settings: embeds the message and the newest stored texts
/// without a vector, so the turn's searches rank by meaning as well as by words. A failure is
/// shown and the turn goes on: search then ranks by words.
async fn refresh_embeddings(
    state: AppState,
    session: &ccm_browser::BrowserSession,
    settings: &crate::provider::ProviderSettings,
    text: &str,
) {
    let endpoint = match settings.embeddings_endpoint(&state.api_key.get_untracked()) {
        None => return,
        Some(Ok(endpoint)) => endpoint,
        Some(Err(error)) => {
            state.notify(
                NoticeKind::Info,
                format!("Searching by words only: {error}."),
            );
            return;
        }
    };
    session.with_core(|core| {
        if core.recall_state().embeddings_model() != Some(endpoint.model.as_str()) {
            core.enable_embeddings(&endpoint.model);
        }
    });
    let refreshed = ccm_browser::embeddings::refresh_recall_embeddings(
        session.cell(),
        Some(text),
        &endpoint,
        ccm_browser::embeddings::BATCH,
    )
    .await;
    if let Err(error) = refreshed {
        state.notify(
            NoticeKind::Info,
            format!("Searching by words only (the embeddings endpoint failed: {error})."),
        );
    }
}

/// Shows how the turn ended and saves the session after a turn that succeeded.
async fn finish(state: AppState, outcome: Result<TurnResult, RunError>) {
    match outcome {
        Ok(result) => {
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
        }
        Err(RunError::Failed(failure)) => {
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
                    error: failure_text(&failure.error),
                }));
            }
            state.changed();
        }
        Err(RunError::Engine(error)) => {
            // The driver has undone the turn; the person's text is the draft that was sent.
            let user_text = state
                .live
                .with_untracked(|live| live.as_ref().map(|live| live.user_text.clone()))
                .unwrap_or_default();
            state.live.set(None);
            state.failed.set(Some(FailedTurn {
                user_text,
                error: error.to_string(),
            }));
            state.changed();
        }
    }
}

/// What a failed turn says: the provider's error as a sentence, then that nothing changed. A
/// server that is not there is named with everything a browser page should check (the URL,
/// the server, and CORS, which a page cannot tell from a refused connection at all times).
fn failure_text(error: &ProviderError) -> String {
    let what = match error {
        ProviderError::ConnectionRefused { url } => {
            transport::unreached_sentence(url, transport::Unreached::NoAnswer)
        }
        other => transport::full_stop(other.to_string()),
    };
    format!("{what} Nothing was changed; your message can be sent again.")
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
            core.efforts()
                .get(&effort_id)
                .map(|effort| summary::summary_messages(effort, None))
        })
        .ok_or_else(|| format!("no effort {effort_id}"))?;
    let settings = state.provider.get_untracked();
    let model = model_of(&settings, &state.api_key.get_untracked())?;
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
    let response = send_once(&session, &model, &request, &signal)
        .await
        .map_err(|e| e.to_string())?;
    summary::clean_summary(&response.text)
        .ok_or_else(|| "the model answered with an empty summary".to_string())
}

/// Attaches the waiting files to the turn just begun (called after the engine begins the turn
/// and before the driver sends its first request). They stay listed until the turn is saved, so a
/// stopped or failed turn keeps them for the next try.
fn attach_pending(state: AppState, session: &BrowserSession) {
    let pending = state.attachments.get_untracked();
    for file in pending {
        let attached = session
            .with_core(|core| core.attach(&file.name, AttachmentKind::File, &file.text, None));
        if let Err(e) = attached {
            state.notify(
                NoticeKind::Error,
                format!("Could not attach {}: {e}", file.name),
            );
        }
    }
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
