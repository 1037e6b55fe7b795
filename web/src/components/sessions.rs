//! Sessions: the stored list (create, open, rename, delete, export), import of a session
//! document or of the original CCM file layout, and branches of the current session.

use crate::import::{self, PickedFile};
use crate::js::js_error_text;
use crate::state::{download, AppState, ImportSource, NoticeKind};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Reads the files chosen in a file input as text, with their folder-relative paths.
async fn read_files(input: &web_sys::HtmlInputElement) -> Result<Vec<PickedFile>, String> {
    let Some(list) = input.files() else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for i in 0..list.length() {
        let Some(file) = list.item(i) else { continue };
        let text = JsFuture::from(file.text())
            .await
            .map_err(|e| format!("{}: {}", file.name(), js_error_text(&e)))?
            .as_string()
            .unwrap_or_default();
        // Set when a folder was picked (`webkitdirectory`); empty for single files.
        let relative = js_sys::Reflect::get(&file, &"webkitRelativePath".into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        let path = if relative.is_empty() {
            file.name()
        } else {
            relative
        };
        files.push(PickedFile { path, text });
    }
    Ok(files)
}

fn input_of(ev: &web_sys::Event) -> Option<web_sys::HtmlInputElement> {
    ev.target()?.dyn_into::<web_sys::HtmlInputElement>().ok()
}

/// The sessions panel.
#[component]
pub fn SessionsPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let new_name = RwSignal::new(String::new());
    let renaming = RwSignal::new(None::<(String, String)>);
    let fork_turn = RwSignal::new(String::new());
    let fork_name = RwSignal::new(String::new());
    let busy = move || state.live.with(Option::is_some);

    let create = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        let name = new_name.get_untracked();
        let name = if name.trim().is_empty() {
            format!(
                "Conversation {}",
                state.sessions.with_untracked(Vec::len) + 1
            )
        } else {
            name.trim().to_string()
        };
        new_name.set(String::new());
        spawn_local(async move { state.create_session(name).await });
    };
    let import_json = move |ev: web_sys::Event| {
        let Some(input) = input_of(&ev) else { return };
        spawn_local(async move {
            match read_files(&input).await {
                Ok(files) => {
                    for file in files {
                        let name = file
                            .path
                            .trim_end_matches(".json")
                            .trim_end_matches(".ccm")
                            .to_string();
                        state.import_document(file.text, name).await;
                    }
                }
                Err(e) => state.notify(NoticeKind::Error, format!("Could not read the file: {e}")),
            }
            input.set_value("");
        });
    };
    let import_ccm = move |ev: web_sys::Event| {
        let Some(input) = input_of(&ev) else { return };
        spawn_local(async move {
            state.busy.set(Some("Reading the CCM files…".to_string()));
            let result = read_files(&input)
                .await
                .and_then(|files| import::sort_files(&files));
            input.set_value("");
            state.busy.set(None);
            match result {
                Ok((set, notes)) => {
                    for note in notes {
                        state.notify(NoticeKind::Info, note);
                    }
                    state
                        .import_session(
                            ImportSource::CcmFiles(set),
                            "Imported CCM session".to_string(),
                        )
                        .await;
                }
                Err(e) => state.notify(
                    NoticeKind::Error,
                    format!("Could not import the CCM files: {e}"),
                ),
            }
        });
    };
    let fork = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        let current = state.with_core(|core| core.turn()).unwrap_or(0);
        let turn = fork_turn.get_untracked().trim().parse().unwrap_or(current);
        let name = fork_name.get_untracked().trim().to_string();
        let name = if name.is_empty() {
            format!("branch-{turn}")
        } else {
            name
        };
        fork_name.set(String::new());
        spawn_local(async move { state.fork(turn, name).await });
    };
    let branch = Memo::new(move |_| {
        state.derive(|core| {
            let info = core.branch().clone();
            (info, core.turn(), core.earliest_fork_turn())
        })
    });

    view! {
        <div class="sessions" data-testid="sessions-panel">
            <section aria-labelledby="sessions-title">
                <h2 id="sessions-title">"Sessions"</h2>
                <form class="row" on:submit=create>
                    <label class="visually-hidden" for="new-session-name">"New session name"</label>
                    <input id="new-session-name" data-testid="new-session-name" placeholder="New session name" prop:value=move || new_name.get() on:input=move |ev| new_name.set(event_target_value(&ev)) />
                    <button type="submit" data-testid="new-session" disabled=busy>"New session"</button>
                </form>
                <ul class="rows" data-testid="session-list">
                    {move || {
                        let current = state.session_id.get();
                        state
                            .sessions
                            .get()
                            .into_iter()
                            .map(|info| {
                                let is_current = current.as_deref() == Some(info.id.as_str());
                                let id = info.id.clone();
                                let (open_id, delete_id, export_id, rename_id) = (id.clone(), id.clone(), id.clone(), id.clone());
                                let name = info.name.clone();
                                let export_name = info.name.clone();
                                let damaged = info.damaged.is_some();
                                let editing = move || renaming.with(|r| r.as_ref().is_some_and(|(rid, _)| *rid == rename_id));
                                view! {
                                    <li class="row" class:active=is_current data-testid="session-row" data-session=id.clone() data-name=info.name.clone()>
                                        <div class="row-main">
                                            <Show
                                                when=editing
                                                fallback={
                                                    let name = name.clone();
                                                    move || view! { <span class="name">{name.clone()}</span> }
                                                }
                                            >
                                                <form class="row" on:submit=move |ev| {
                                                    ev.prevent_default();
                                                    if let Some((rid, new)) = renaming.get_untracked() {
                                                        renaming.set(None);
                                                        spawn_local(async move { state.rename_session(rid, new).await });
                                                    }
                                                }>
                                                    <input
                                                        data-testid="rename-input"
                                                        aria-label="New name"
                                                        prop:value=move || renaming.get().map(|(_, n)| n).unwrap_or_default()
                                                        on:input=move |ev| {
                                                            let value = event_target_value(&ev);
                                                            renaming.update(|r| if let Some((_, n)) = r { *n = value });
                                                        }
                                                    />
                                                    <button type="submit" class="small" data-testid="rename-save">"Save"</button>
                                                </form>
                                            </Show>
                                            {is_current.then(|| view! { <span class="badge active">"open"</span> })}
                                            {match info.damaged.clone() {
                                                // A session whose header cannot be read cannot open, but its records
                                                // are still stored: say so, and leave Export as the way out.
                                                Some(problem) => view! {
                                                    <span class="badge damaged" data-testid="damaged-session" title=problem>"damaged: export to rescue it"</span>
                                                }.into_any(),
                                                None => view! {
                                                    <span class="tokens">{format!("{} turns · {} messages", info.turn_count, info.message_count)}</span>
                                                }.into_any(),
                                            }}
                                        </div>
                                        <div class="row-actions">
                                            <button type="button" class="small" data-testid="open-session" disabled=move || is_current || damaged || busy() on:click=move |_| {
                                                let id = open_id.clone();
                                                spawn_local(async move { state.switch_session(id).await });
                                            }>"Open"</button>
                                            <button type="button" class="small" data-testid="rename-session" on:click={
                                                let id = id.clone();
                                                let name = name.clone();
                                                move |_| renaming.set(Some((id.clone(), name.clone())))
                                            }>"Rename"</button>
                                            <button type="button" class="small" data-testid="export-session" aria-label=format!("Export {}", info.name) on:click=move |_| {
                                                let id = export_id.clone();
                                                let file = format!("{}.ccm.json", export_name.replace(['/', '\\'], "-"));
                                                spawn_local(async move {
                                                    state.busy.set(Some("Exporting…".to_string()));
                                                    match state.export_session(&id).await.and_then(|json| download(&file, &json)) {
                                                        Ok(()) => {}
                                                        Err(e) => state.notify(NoticeKind::Error, format!("Could not export: {e}")),
                                                    }
                                                    state.busy.set(None);
                                                });
                                            }>"Export"</button>
                                            <button type="button" class="small danger" data-testid="delete-session" aria-label=format!("Delete {}", info.name) disabled=busy on:click=move |_| {
                                                let confirmed = web_sys::window()
                                                    .and_then(|w| w.confirm_with_message("Delete this session and everything stored with it?").ok())
                                                    .unwrap_or(false);
                                                if confirmed {
                                                    let id = delete_id.clone();
                                                    spawn_local(async move { state.delete_session(id).await });
                                                }
                                            }>"Delete"</button>
                                        </div>
                                    </li>
                                }
                            })
                            .collect_view()
                    }}
                </ul>
            </section>
            <section aria-labelledby="import-title">
                <h2 id="import-title">"Import"</h2>
                <label class="file">
                    "Session document (.json): "
                    <input type="file" accept=".json,application/json" data-testid="import-json" on:change=import_json />
                </label>
                <label class="file">
                    "Original CCM files (manifest.yaml, raw.jsonl, efforts/*.jsonl): "
                    <input type="file" multiple=true data-testid="import-ccm" on:change=import_ccm />
                </label>
                <p class="hint">"The API key is never part of an export."</p>
            </section>
            <section aria-labelledby="branches-title">
                <h2 id="branches-title">"Branches"</h2>
                {move || {
                    branch
                        .get()
                        .map(|(info, turn, earliest)| {
                            let origin = match (&info.parent, info.fork_turn) {
                                (Some(parent), Some(at)) => {
                                    format!(" on branch {} (forked from {parent} at turn {at})", info.name)
                                }
                                _ => String::new(),
                            };
                            view! {
                                <p class="hint" data-testid="branch-info">
                                    {format!("At turn {turn}{origin}: turns {earliest}–{turn} can be forked. A session opened from storage keeps no rewind history, so its latest turn is the one to fork.")}
                                </p>
                            }
                        })
                }}
                <form class="row" on:submit=fork>
                    <label>
                        "Fork at turn "
                        <input type="number" min="0" data-testid="fork-turn" class="narrow" prop:value=move || fork_turn.get() on:input=move |ev| fork_turn.set(event_target_value(&ev)) placeholder=move || branch.get().map(|(_, t, _)| t.to_string()).unwrap_or_default() />
                    </label>
                    <label>
                        " as "
                        <input data-testid="fork-name" placeholder="branch name" prop:value=move || fork_name.get() on:input=move |ev| fork_name.set(event_target_value(&ev)) />
                    </label>
                    <button type="submit" data-testid="fork" disabled=busy>"Fork"</button>
                </form>
                <p class="hint">"A branch is stored as its own session (named with ⎇); switching branches is opening it above."</p>
            </section>
        </div>
    }
}
