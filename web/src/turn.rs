//! One turn of the conversation: ccm-engine's one turn driver with the browser host that
//! `runTurn` uses too (`ccm_browser::BrowserSession::begin_turn`, then `BegunTurn::run`).
//!
//! The engine decides everything (what to send, tool calls, summaries on close, retries, which
//! stored logs to read, how to end or undo the turn). The driver moves requests to the offline
//! demo model or `fetch` and waits; this module shows its events, and saves the session when
//! the turn is done. Stop aborts the `AbortController`: the request in flight is
//! aborted by the browser and the engine cancels the turn, which restores the session exactly
//! and gives the person's text back to the message box.

use crate::provider::ProviderSettings;
use crate::state::{now_ms, AppState, NoticeKind, Phase};
use crate::view_model::TurnBanners;
use ccm_browser::provider::ProviderError;
use ccm_browser::transport::{self, Limits};
use ccm_browser::turn::{RunError, TurnResult};
use ccm_browser::{BrowserSession, Model};
use ccm_core::compaction::AttachmentKind;
use leptos::prelude::*;
use leptos::task::spawn_local;
use web_sys::{AbortController, AbortSignal};

/// Pause between the words the offline model "streams", so its replies arrive the way a real
/// model's do (and Stop can interrupt them).
const OFFLINE_WORD_PAUSE_MS: u64 = 12;

/// Who answers with the app's provider settings and key.
fn model_of(settings: &ProviderSettings, key: &str) -> Result<Model, String> {
    Ok(Model::of(
        settings.provider_config(Some(key))?,
        Limits::default(),
        OFFLINE_WORD_PAUSE_MS,
    ))
}

/// Sends the person's message as a new turn (unless a turn is running or the text is blank).
pub fn send_message(state: AppState, text: String) {
    if text.trim().is_empty() || state.turn.in_turn() || !state.session.is_open() {
        return;
    }
    // Another tab saved a newer revision, or another device wrote the session too: a turn
    // taken here could not be saved (or synced) either.
    if state.blocked_now() {
        return;
    }
    // The turn shows at once, with the text out of the box, while the check for another
    // tab's newer version runs; the text goes back into the box if the turn cannot be taken.
    state.turn.show_sent(text.clone());
    spawn_local(drive(state, text));
}

/// Stops the turn in progress.
pub fn stop(state: AppState) {
    // `try_`: at the app's cleanup the handle may already be gone, and then so is the turn.
    state.turn.stop();
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
    state.turn.set_sending(false);
}

/// Takes the turn `send_message` began showing: `state.turn.live()` holds it from the start, and
/// every way out before the turn runs clears it (and puts the text back where it belongs).
async fn drive_sent(state: AppState, text: String) {
    // Another tab may have taken a turn in this session since this tab loaded it: answer
    // from its latest version.
    state.catch_up(true).await;
    let back_in_box = |text: String| {
        state.turn.end();
        state.turn.keep_in_box(&text);
    };
    if state.blocked_now() {
        return back_in_box(text);
    }
    let Some(session) = state.session.current() else {
        return back_in_box(text);
    };
    if let Some(error) = message_too_long(&text) {
        state.turn.fail(text, error);
        return;
    }
    let settings = state.settings.provider().get_untracked();
    let model = match model_of(&settings, &state.settings.api_key().get_untracked()) {
        Ok(model) => model,
        Err(error) => {
            state.turn.fail(text, error);
            return;
        }
    };
    let attachments = state.turn.pending_attachments();
    let mut texts = vec![text.as_str()];
    texts.extend(attachments.iter().map(|file| file.text.as_str()));
    if !crate::tokenizer::ready_for_turn(state, &texts, !settings.is_offline()).await {
        return back_in_box(text);
    }
    refresh_embeddings(state, &session, &settings, &text).await;
    let Ok(controller) = AbortController::new() else {
        return back_in_box(text);
    };
    let signal = controller.signal();
    state.turn.set_abort(Some(controller));
    // Still the turn `send_message` showed, restarted for the session it now runs in.
    state.turn.restart(text.clone());
    // The turn is running: announcements now wait for its save.
    state.turn.set_sending(false);
    match session.begin_turn(&text, now_ms(), state.settings.engine_settings()) {
        Ok(turn) => {
            attach_pending(state, &session);
            let outcome = turn
                .run(&model, Some(signal), &mut |event| state.turn.show(event))
                .await;
            finish(state, outcome).await;
        }
        Err(error) => {
            state.turn.fail(text, error.to_string());
        }
    }
    state.turn.set_abort(None);
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
    let endpoint = match settings.embeddings_endpoint(&state.settings.api_key().get_untracked()) {
        None => return,
        Some(Ok(endpoint)) => endpoint,
        Some(Err(error)) => {
            state.notices.notify(
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
        state.notices.notify(
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
            state.turn.record_banners(
                report.turn,
                TurnBanners {
                    before: report.banners[..split].to_vec(),
                    after: report.banners[split..].to_vec(),
                },
            );
            state.turn.set_phase(Phase::Saving);
            // The files went out with this turn.
            state.turn.clear_attachments();
            state.session.changed();
            state.save().await;
            state.turn.end();
        }
        Err(RunError::Failed(failure)) => {
            if failure.was_cancelled() {
                state.turn.end();
                state.turn.set_draft(failure.user_text.clone());
                state.notices.notify(
                    NoticeKind::Info,
                    "Stopped. Nothing was changed; your message is back in the box.",
                );
            } else {
                state
                    .turn
                    .fail(failure.user_text.clone(), failure_text(&failure.error));
            }
            state.session.changed();
        }
        Err(RunError::Engine(error)) => {
            // The driver has undone the turn; the person's text is the draft that was sent.
            let user_text = state.turn.live_user_text().unwrap_or_default();
            state.turn.fail(user_text, error.to_string());
            state.session.changed();
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
    let session = state.session.current().ok_or("no session is open")?;
    let settings = state.settings.provider().get_untracked();
    let model = model_of(&settings, &state.settings.api_key().get_untracked())?;
    let model_name = settings.engine_settings().model;
    ccm_browser::summary::write_summary(&session, &effort_id, &model, model_name, Some(&signal))
        .await
}

/// Attaches the waiting files to the turn just begun (called after the engine begins the turn
/// and before the driver sends its first request). They stay listed until the turn is saved, so a
/// stopped or failed turn keeps them for the next try.
fn attach_pending(state: AppState, session: &BrowserSession) {
    let pending = state.turn.pending_attachments();
    for file in pending {
        let attached = session
            .with_core(|core| core.attach(&file.name, AttachmentKind::File, &file.text, None));
        if let Err(e) = attached {
            state.notices.notify(
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
