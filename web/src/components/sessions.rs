//! Sessions: the stored list (create, open, rename, delete, export), import of a session
//! document or of the original CCM file layout, and branches of the current session.

use crate::alternatives::Families;
use crate::import::{self, PickedFile};
use crate::js::js_error_text;
use crate::state::{download, AppState, ImportSource, NoticeKind};
use ccm_browser::SessionInfo;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::BTreeSet;
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

/// The rows of the session list: one per conversation (its versions grouped), each with the
/// ids of all its versions. The row shows the open version when the conversation is open,
/// else the one saved last; damaged sessions are listed on their own.
fn conversations(list: &[SessionInfo], open: Option<&str>) -> Vec<(SessionInfo, Vec<String>)> {
    let families = Families::of(list);
    let shown: BTreeSet<&str> = families.shown().into_iter().collect();
    let mut rows = Vec::new();
    for info in list {
        if info.damaged.is_some() {
            rows.push((info.clone(), vec![info.id.clone()]));
            continue;
        }
        if !shown.contains(info.id.as_str()) {
            continue;
        }
        let family: Vec<String> = families
            .members(&info.id)
            .iter()
            .map(|line| line.id.clone())
            .collect();
        let row = open
            .filter(|open| family.iter().any(|id| id == open))
            .and_then(|open| list.iter().find(|s| s.id == open))
            .unwrap_or(info);
        rows.push((row.clone(), family));
    }
    rows
}

/// The sessions panel.
#[component]
pub fn SessionsPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let new_name = RwSignal::new(String::new());
    let renaming = RwSignal::new(None::<(String, String)>);
    let fork_turn = RwSignal::new(String::new());
    let fork_name = RwSignal::new(String::new());
    let busy = move || state.turn.live().with(Option::is_some);

    let create = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        let name = new_name.get_untracked();
        let name = if name.trim().is_empty() {
            format!(
                "Conversation {}",
                state.session.list().with_untracked(Vec::len) + 1
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
                Err(e) => state
                    .notices
                    .notify(NoticeKind::Error, format!("Could not read the file: {e}")),
            }
            input.set_value("");
        });
    };
    let import_ccm = move |ev: web_sys::Event| {
        let Some(input) = input_of(&ev) else { return };
        spawn_local(async move {
            state
                .notices
                .set_busy(Some("Reading the CCM files…".to_string()));
            let result = read_files(&input)
                .await
                .and_then(|files| import::sort_files(&files));
            input.set_value("");
            state.notices.set_busy(None);
            match result {
                Ok((set, notes)) => {
                    for note in notes {
                        state.notices.notify(NoticeKind::Info, note);
                    }
                    state
                        .import_session(
                            ImportSource::CcmFiles(set),
                            "Imported CCM session".to_string(),
                        )
                        .await;
                }
                Err(e) => state.notices.notify(
                    NoticeKind::Error,
                    format!("Could not import the CCM files: {e}"),
                ),
            }
        });
    };
    let fork = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        let current = state.session.read(|core| core.turn()).unwrap_or(0);
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
        state.session.derive(|core| {
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
                        let current = state.session.id().get();
                        conversations(&state.session.list().get(), current.as_deref())
                            .into_iter()
                            .map(|(info, family)| {
                                let is_current = current.as_ref().is_some_and(|c| family.contains(c));
                                let versions = family.len();
                                let rename_family = family.clone();
                                let delete_family = family.clone();
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
                                                <form class="row" on:submit={
                                                    let rename_family = rename_family.clone();
                                                    move |ev: web_sys::SubmitEvent| {
                                                    ev.prevent_default();
                                                    if let Some((rid, new)) = renaming.get_untracked() {
                                                        renaming.set(None);
                                                        // Every version of the conversation carries its name.
                                                        let family = if rename_family.contains(&rid) { rename_family.clone() } else { vec![rid] };
                                                        spawn_local(async move {
                                                            for id in family {
                                                                state.rename_session(id, new.clone()).await;
                                                            }
                                                        });
                                                    }
                                                }}>
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
                                            {(versions > 1).then(|| view! {
                                                <span class="badge" data-testid="session-versions" title="Regenerate and Edit made these; the chat switches between them at the turn they differ (‹ ›)">{format!("{versions} versions")}</span>
                                            })}
                                            {match info.damaged.clone() {
                                                // A session whose header cannot be read cannot open, but its records
                                                // are still stored: say so, and leave Export as the way out.
                                                Some(problem) => view! {
                                                    <span class="badge damaged" data-testid="damaged-session" title=problem>"damaged: export to rescue it"</span>
                                                }.into_any(),
                                                None => view! {
                                                    <span class="tokens">{format!("{} · {}", crate::words::turns(info.turn_count as usize), crate::words::messages(info.message_count as usize))}</span>
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
                                                    state.notices.set_busy(Some("Exporting…".to_string()));
                                                    match state.export_session(&id).await.and_then(|json| download(&file, &json)) {
                                                        Ok(()) => {}
                                                        Err(e) => state.notices.notify(NoticeKind::Error, format!("Could not export: {e}")),
                                                    }
                                                    state.notices.set_busy(None);
                                                });
                                            }>"Export"</button>
                                            <button type="button" class="small danger" data-testid="delete-session" aria-label=format!("Delete {}", info.name) disabled=busy on:click=move |_| {
                                                let question = if versions > 1 {
                                                    format!("Delete this conversation, all {versions} of its versions, and everything stored with them?")
                                                } else {
                                                    "Delete this session and everything stored with it?".to_string()
                                                };
                                                let confirmed = web_sys::window()
                                                    .and_then(|w| w.confirm_with_message(&question).ok())
                                                    .unwrap_or(false);
                                                if confirmed {
                                                    // The open version goes last, so the app does not open
                                                    // another version that is about to go too.
                                                    let mut ids = if delete_family.is_empty() { vec![delete_id.clone()] } else { delete_family.clone() };
                                                    let open = state.session.id().get_untracked();
                                                    ids.sort_by_key(|id| Some(id) == open.as_ref());
                                                    spawn_local(async move {
                                                        for id in ids {
                                                            state.delete_session(id).await;
                                                        }
                                                    });
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
                                    {if earliest == 0 || earliest >= turn {
                                        format!("At turn {turn}{origin}: any turn from 0 to {turn} can be forked.")
                                    } else {
                                        format!("At turn {turn}{origin}: any turn from 0 to {turn} can be forked; turns {earliest}–{turn} exactly as they were, earlier ones rebuilt from the stored messages (nothing expanded or recalled).")
                                    }}
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
