//! Dialogs over the side panel: concluding an effort with an editable summary, and reading an
//! effort's raw log. Both are [`Modal`]s: focus moves in, stays in, and returns on close.

use crate::components::modal::Modal;
use crate::state::{AppState, NoticeKind};
use crate::turn;
use crate::view_model::EffortAction;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Concludes an open effort with a summary the person can edit. It starts from the core's
/// extractive summary; "Write with the model" asks the current model for one, with the same
/// prompt the engine uses when the model concludes an effort itself.
#[component]
pub fn ConcludeDialog(
    /// The effort being concluded; `None` hides the dialog.
    effort: RwSignal<Option<String>>,
) -> impl IntoView {
    // A new form (with fresh state) for each effort to conclude.
    move || {
        effort
            .get()
            .map(|id| view! { <ConcludeForm id=id effort=effort /> })
    }
}

/// The conclude form for one effort.
#[component]
fn ConcludeForm(
    /// The effort's id.
    id: String,
    /// Cleared to close the dialog.
    effort: RwSignal<Option<String>>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let suggestion = state
        .session
        .read(|core| {
            core.efforts()
                .all()
                .iter()
                .position(|e| e.id == id)
                .map(|index| core.extractive_summary_of(index))
        })
        .flatten()
        .unwrap_or_default();
    let summary = RwSignal::new(suggestion);
    let writing = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    // A summary request still running when the dialog closes is aborted with it.
    let request = StoredValue::new_local(None::<web_sys::AbortController>);
    on_cleanup(move || {
        request.try_with_value(|controller| {
            if let Some(controller) = controller {
                controller.abort();
            }
        });
    });
    let write_id = id.clone();
    let write = move |_| {
        let id = write_id.clone();
        let Ok(controller) = web_sys::AbortController::new() else {
            return;
        };
        let signal = controller.signal();
        request.set_value(Some(controller));
        writing.set(true);
        error.set(None);
        spawn_local(async move {
            let written = turn::write_summary(state, id, signal).await;
            // The dialog may have been closed while the model was writing.
            match written {
                Ok(text) => {
                    let _ = summary.try_set(text);
                }
                Err(e) => {
                    let _ = error.try_set(Some(e));
                }
            }
            let _ = writing.try_set(false);
        });
    };
    let conclude_id = id.clone();
    let conclude = move |_| {
        let id = conclude_id.clone();
        let text = summary.get_untracked();
        effort.set(None);
        spawn_local(async move {
            state
                .effort_action(EffortAction::Conclude, id, Some(text))
                .await;
        });
    };
    let close = Callback::new(move |()| effort.set(None));
    view! {
        <Modal title=format!("Conclude {id}") test_id="conclude-dialog" on_close=close>
            <p class="hint">
                "The raw log leaves the context and this summary stands in for it. Nothing is deleted: you can expand or reopen the effort later."
            </p>
            <label for="conclude-summary">"Summary"</label>
            <textarea
                id="conclude-summary"
                data-testid="conclude-summary"
                rows="5"
                autofocus=true
                prop:value=move || summary.get()
                on:input=move |ev| summary.set(event_target_value(&ev))
            ></textarea>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="row">
                <button type="button" data-testid="conclude-confirm" on:click=conclude disabled=move || writing.get()>
                    "Conclude"
                </button>
                <button type="button" class="secondary" data-testid="conclude-write" on:click=write disabled=move || writing.get()>
                    {move || if writing.get() { "Writing the summary…" } else { "Write with the model" }}
                </button>
                <button type="button" class="secondary" data-testid="conclude-cancel" on:click=move |_| effort.set(None)>
                    "Cancel"
                </button>
            </div>
        </Modal>
    }
}

/// Shows an effort's whole raw log.
#[component]
pub fn LogViewer() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        {move || {
            state
                .session.open_log()
                .get()
                .map(|log| {
                    let close = Callback::new(move |()| state.session.close_log());
                    view! {
                        <Modal
                            title=format!("Raw log of {} ({} messages)", log.id, log.messages.len())
                            test_id="log-viewer"
                            class="log-viewer"
                            on_close=close
                        >
                            <ol class="log">
                                {log
                                    .messages
                                    .into_iter()
                                    .map(|(role, content, tokens)| {
                                        view! {
                                            <li class=format!("log-{role}")>
                                                <span class="badge">{format!("{role} · {tokens} tokens")}</span>
                                                <pre>{content}</pre>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ol>
                            <button type="button" data-testid="close-log" on:click=move |_| state.session.close_log()>
                                "Close"
                            </button>
                        </Modal>
                    }
                })
        }}
    }
}

/// Runs an action from the tier view: conclusions open the dialog, the rest run at once.
pub fn run_action(
    state: AppState,
    concluding: RwSignal<Option<String>>,
    action: EffortAction,
    id: String,
) {
    if action == EffortAction::Conclude {
        concluding.set(Some(id));
        return;
    }
    if state.turn.in_turn() {
        state.notices.notify(
            NoticeKind::Info,
            "Wait for the reply (or stop it) before changing efforts.",
        );
        return;
    }
    spawn_local(async move { state.effort_action(action, id, None).await });
}
