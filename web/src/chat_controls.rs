//! Chat controls beyond sending: regenerate the last answer, edit and resend the last
//! message, and files attached to the next message.
//!
//! Regenerate and edit never rewrite what is stored: they fork the session just before its
//! last turn (the core's branch facility, which rewinds a copy) into a new stored session and
//! send there, so the original answer stays in Sessions. A file is read here and waits in
//! `AppState::attachments`; `turn.rs` attaches it to the next message as a CCM attachment
//! (`Session::attach`, counted once, compressible by compaction).

use crate::js::js_error_text;
use crate::state::{AppState, NoticeKind, PendingAttachment};
use crate::turn;
use ccm_core::model::Role;
use leptos::prelude::*;

/// Largest file the app attaches, in bytes: a text file beyond this is rarely meant for a
/// chat, and the whole text is stored with the session.
pub const MAX_ATTACHMENT_BYTES: f64 = 1_000_000.0;

/// Whether a file looks like text the model can read (by type or by name).
pub fn is_text_file(name: &str, mime: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "txt", "md", "markdown", "rst", "csv", "tsv", "json", "yaml", "yml", "toml", "xml", "html",
        "css", "js", "mjs", "ts", "tsx", "jsx", "rs", "py", "go", "java", "kt", "c", "h", "cpp",
        "hpp", "cs", "rb", "php", "sh", "sql", "swift", "log", "ini", "cfg",
    ];
    if mime.starts_with("text/") || mime == "application/json" {
        return true;
    }
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// Reads a chosen file and adds it to the next message's attachments, with its token count.
pub async fn add_file(state: AppState, file: web_sys::File) {
    let name = file.name();
    if !is_text_file(&name, &file.type_()) {
        state.notify(
            NoticeKind::Error,
            format!("{name} is not a text file: attach text, Markdown or code."),
        );
        return;
    }
    if file.size() > MAX_ATTACHMENT_BYTES {
        state.notify(
            NoticeKind::Error,
            format!(
                "{name} is {:.1} MB; files up to 1 MB can be attached.",
                file.size() / 1e6
            ),
        );
        return;
    }
    let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
        Ok(text) => text.as_string().unwrap_or_default(),
        Err(e) => {
            state.notify(
                NoticeKind::Error,
                format!("Could not read {name}: {}", js_error_text(&e)),
            );
            return;
        }
    };
    if text.trim().is_empty() {
        state.notify(NoticeKind::Error, format!("{name} is empty."));
        return;
    }
    let Some(tokens) = state.with_core(|core| core.counter().count(&text)) else {
        return;
    };
    state
        .attachments
        .update(|pending| pending.push(PendingAttachment { name, text, tokens }));
}

/// The last turn's number and the person's message in it, when the turn can be redone now:
/// the session is not in a turn, and can be rewound to before it (a session opened from
/// storage keeps no rewind history, so only turns taken since it was opened qualify).
pub fn last_exchange(state: &AppState) -> Option<(u64, String)> {
    state.with_core(|core| {
        let turn = core.turn();
        if turn == 0
            || core.in_turn()
            || !core.is_fully_loaded()
            || turn - 1 < core.earliest_fork_turn()
        {
            return None;
        }
        let in_turn = |m: &&ccm_core::Message| m.turn == turn && m.role == Role::User;
        core.ambient()
            .iter()
            .filter(in_turn)
            .chain(
                core.efforts()
                    .iter()
                    .flat_map(|e| e.messages.iter().filter(in_turn)),
            )
            .map(|m| (turn, m.content.clone()))
            .next()
    })?
}

/// Forks the session before its last turn into a new stored session and opens it.
async fn branch_before_last_turn(state: AppState, label: &str) -> Result<(), String> {
    let store = state
        .store
        .get_value()
        .ok_or("redoing a turn needs browser storage, which is unavailable")?;
    let forked = state
        .with_core(|core| {
            let turn = core.turn();
            if turn < 1 || turn - 1 < core.earliest_fork_turn() || !core.is_fully_loaded() {
                return Err("only turns taken since this conversation was opened in this tab can be redone (earlier ones cannot be rewound here). Fork it from Sessions instead".to_string());
            }
            core.fork_at(turn - 1, &format!("{label} of turn {turn}"))
                .map_err(|e| e.to_string())
        })
        .ok_or("no session is open")??;
    let id = state.session_id.get_untracked();
    let base = state
        .sessions
        .get_untracked()
        .into_iter()
        .find(|s| Some(&s.id) == id.as_ref())
        .map_or_else(|| "Conversation".to_string(), |s| s.name);
    let info = store
        .import_core(&forked, &format!("{base} ⎇ {label}"))
        .await
        .map_err(|e| e.to_string())?;
    state.refresh_sessions().await;
    state.switch_session(info.id).await;
    state.notify(
        NoticeKind::Info,
        format!("The earlier version stays in Sessions as “{base}”; this is a new branch."),
    );
    Ok(())
}

/// Asks for the last answer again: the session is forked before the last turn and the same
/// message is sent there.
pub async fn regenerate(state: AppState) {
    if state.in_turn() {
        return;
    }
    let Some((_, text)) = last_exchange(&state) else {
        return;
    };
    match branch_before_last_turn(state, "regenerated").await {
        Ok(()) => turn::send_message(state, text),
        Err(e) => state.notify(NoticeKind::Error, format!("Could not regenerate: {e}.")),
    }
}

/// Sends an edited version of the last message in place of the original: the session is
/// forked before the last turn and the new text is sent there.
pub async fn resend_edited(state: AppState, text: String) {
    if state.in_turn() {
        return;
    }
    state.editing.set(None);
    match branch_before_last_turn(state, "edited").await {
        Ok(()) => turn::send_message(state, text),
        Err(e) => {
            // The edited text stays in the box.
            state.draft.set(text);
            state.notify(NoticeKind::Error, format!("Could not resend: {e}."));
        }
    }
}
