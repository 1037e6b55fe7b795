//! Chat controls beyond sending: regenerate an answer, edit and resend a message (any turn),
//! switch between the versions these make, and files attached to the next message.
//!
//! Regenerate and edit never rewrite what is stored: they fork the session just before the
//! redone turn (the core's branch facility: an exact rewind for recent turns, a rebuild from
//! the stored messages for earlier ones) into a new stored session of the same conversation,
//! and send there, so every earlier version stays and the chat browses them in place.
//!
//! A file is read here and waits in the turn part's attachments (`TurnState::attachments`); `turn.rs` attaches it to the next message as a CCM attachment
//! (`Session::attach`, counted once, compressible by compaction).

use crate::js::js_error_text;
use crate::state::{AppState, NoticeKind, PendingAttachment};
use crate::turn;
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
        state.notices.notify(
            NoticeKind::Error,
            format!("{name} is not a text file: attach text, Markdown or code."),
        );
        return;
    }
    if file.size() > MAX_ATTACHMENT_BYTES {
        state.notices.notify(
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
            state.notices.notify(
                NoticeKind::Error,
                format!("Could not read {name}: {}", js_error_text(&e)),
            );
            return;
        }
    };
    if text.trim().is_empty() {
        state
            .notices
            .notify(NoticeKind::Error, format!("{name} is empty."));
        return;
    }
    let Some(tokens) = state.session.read(|core| core.counter().count(&text)) else {
        return;
    };
    state.turn.attach(PendingAttachment { name, text, tokens });
}

/// Whether a turn can be redone now (Regenerate and Edit): the session is not in a turn, a
/// store is there to keep the new version in, and no other tab's newer version is pending.
pub fn can_redo(state: &AppState) -> bool {
    state.session.has_store()
        && !state.turn.in_turn()
        && !state.blocked()
        && state.session.read(|core| core.turn() > 0).unwrap_or(false)
}

/// Stores a new version of the conversation that holds everything before `turn` and opens
/// it, so the caller can send that turn's message (the same or an edited one) there. The
/// version the person was on stays stored as it was; the chat offers both at that turn
/// (`crate::alternatives`).
async fn branch_before(state: AppState, turn: u64, label: &str) -> Result<(), String> {
    let id = state
        .session
        .id()
        .get_untracked()
        .ok_or("no stored session is open")?;
    if turn == 0 {
        return Err("there is no turn 0 to redo".to_string());
    }
    let mut fork = state
        .fork_session(&id, turn - 1, &format!("{label} turn {turn}"))
        .await?;
    fork.set_branch_parent(&id);
    let name = state
        .session
        .name_of(&id)
        .unwrap_or_else(|| "Conversation".to_string());
    state.store_and_open(&fork, &name).await
}

/// Asks for the answer to turn `turn` again: a new version of the conversation holds every
/// turn before it, and the same message is sent there.
pub async fn regenerate(state: AppState, turn: u64, text: String) {
    if !can_redo(&state) {
        return;
    }
    match branch_before(state, turn, "regenerated").await {
        Ok(()) => turn::send_message(state, text),
        Err(e) => state
            .notices
            .notify(NoticeKind::Error, format!("Could not regenerate: {e}.")),
    }
}

/// Sends an edited version of the message of turn `turn` in its place: a new version of the
/// conversation holds every turn before it, and the new text is sent there.
pub async fn resend_edited(state: AppState, turn: u64, text: String) {
    if !can_redo(&state) {
        return;
    }
    state.turn.set_editing(None);
    match branch_before(state, turn, "edited").await {
        Ok(()) => turn::send_message(state, text),
        Err(e) => {
            // The edited text stays in the box.
            state.turn.set_draft(text);
            state
                .notices
                .notify(NoticeKind::Error, format!("Could not resend: {e}."));
        }
    }
}

/// Opens another version of the conversation (a session of the same family).
pub async fn open_version(state: AppState, id: String) {
    if state.session.id().get_untracked().as_deref() == Some(id.as_str()) {
        return;
    }
    state.switch_session(id).await;
}
