//! The losing tab: another tab saved a newer revision of the session, so this tab's last
//! changes could not be saved. The tab takes no more turns into a session it cannot save and
//! offers, in plain words, to load the newer version or to keep its own as a branch (a new
//! stored session). The text in the message box is never touched. `SyncConflictCard` is the
//! same choice when another device, rather than another tab, wrote the session.

use crate::state::{AppState, NoticeKind};
use ccm_core::LogState;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Replaces this tab's session by the stored (newer) one.
pub async fn load_newer(state: AppState) {
    let Some(id) = state.session_id.get_untracked() else {
        return;
    };
    state.switch_session(id).await;
}

/// Stores this tab's version of the session as a new session (a branch) and opens it. Every
/// record must be in memory for that: the concluded efforts' logs are read first; a session
/// whose older messages were never loaded into this tab cannot be copied whole, and the person
/// is told so.
pub async fn keep_as_branch(state: AppState) {
    let Some(session) = state.session.get_value() else {
        return;
    };
    let missing: Vec<String> = session.with_core(|core| {
        core.efforts()
            .iter()
            .filter(|e| e.log != LogState::Loaded)
            .map(|e| e.id.clone())
            .collect()
    });
    for id in missing {
        let args = serde_json::json!({ "id": id }).to_string();
        if let Err(e) = session.load_logs_for("expand_effort", &args).await {
            state.notify(
                NoticeKind::Error,
                format!(
                    "Could not keep this tab's version: the log of {id} could not be read ({e})."
                ),
            );
            return;
        }
    }
    let json = session.with_core(|core| {
        if core.is_fully_loaded() {
            core.to_json().map_err(|e| e.to_string())
        } else {
            Err("this tab holds only the recent part of a long conversation, so it cannot be copied whole. Load the newer version instead; your message stays in the box".to_string())
        }
    });
    match json {
        Ok(json) => {
            let id = state.session_id.get_untracked();
            let base = state
                .sessions
                .get_untracked()
                .into_iter()
                .find(|s| Some(&s.id) == id.as_ref())
                .map(|s| s.name)
                .unwrap_or_else(|| "Conversation".to_string());
            state
                .import_document(json, format!("{base} (this tab's version)"))
                .await;
        }
        Err(reason) => state.notify(
            NoticeKind::Error,
            format!("Could not keep this tab's version: {reason}."),
        ),
    }
}

/// The card shown while the current session cannot be saved.
#[component]
pub fn ConflictCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    let working = RwSignal::new(false);
    let run = move |branch: bool| {
        if working.get_untracked() {
            return;
        }
        working.set(true);
        spawn_local(async move {
            if branch {
                keep_as_branch(state).await;
            } else {
                load_newer(state).await;
            }
            working.set(false);
        });
    };
    view! {
        <Show when=move || state.conflict.get()>
            <div class="failed conflict" data-testid="save-conflict" role="alert">
                <p class="failed-title">"Another tab changed this conversation"</p>
                <p>
                    "Another tab saved a newer version of this conversation, so what this tab did last could not be saved. "
                    "This tab sends nothing more into it until you choose. Your message in the box stays."
                </p>
                <div class="row">
                    <button
                        type="button"
                        data-testid="conflict-load-newer"
                        disabled=move || working.get()
                        on:click=move |_| run(false)
                    >
                        "Load the newer version"
                    </button>
                    <button
                        type="button"
                        class="secondary"
                        data-testid="conflict-keep-branch"
                        disabled=move || working.get()
                        on:click=move |_| run(true)
                    >
                        "Keep this tab's version as a branch"
                    </button>
                </div>
            </div>
        </Show>
    }
}

/// The card shown while the open session is in a sync conflict: this browser and another
/// device both changed it since they were last the same, so neither version was sent over
/// the other. The person chooses which to continue; the other is kept as a branch, so nothing
/// is lost, and the text in the message box stays.
#[component]
pub fn SyncConflictCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    let working = RwSignal::new(false);
    let run = move |branch: bool| {
        if working.get_untracked() {
            return;
        }
        working.set(true);
        spawn_local(async move {
            crate::sync::resolve(state, branch).await;
            working.set(false);
        });
    };
    view! {
        <Show when=move || crate::sync::current_in_conflict(state)>
            <div class="failed conflict" data-testid="sync-conflict" role="alert">
                <p class="failed-title">"Another device changed this conversation"</p>
                <p>
                    "Another device sent turns to this conversation that this browser does not have, and this browser has turns the other device does not have. "
                    "Choose which version to continue; the other is kept as a branch under Sessions. Your message in the box stays."
                </p>
                <div class="row">
                    <button
                        type="button"
                        data-testid="sync-load-theirs"
                        disabled=move || working.get()
                        on:click=move |_| run(false)
                    >
                        "Load the other device's version"
                    </button>
                    <button
                        type="button"
                        class="secondary"
                        data-testid="sync-keep-branch"
                        disabled=move || working.get()
                        on:click=move |_| run(true)
                    >
                        "Keep this device's version as a branch"
                    </button>
                </div>
            </div>
        </Show>
    }
}
