//! The stored conversation beyond what a session opened from storage holds in memory.
//!
//! Opening a stored session reads its open efforts' logs, the ambient tail and the recent
//! metrics only (that keeps opening fast however long the session is). The chat, though,
//! should show the whole conversation after a reload: so once a session is open, the app reads
//! its whole stored document in the background, once, and the chat merges it with what the
//! session holds. Nothing of it goes into the session itself: the context plan still loads a
//! concluded effort's log only when a tool needs it.

use super::{read_local, write_local, AppState, NoticeKind, SessionState};
use crate::view_model::{self, Transcript};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// localStorage key prefix of the efforts expanded when a session was last shown, by session
/// id. Expansions are not stored with a session (by design), so this is how a reload can say
/// which ones it collapsed.
const EXPANDED_PREFIX: &str = "ccm.app.expanded.";

/// Notes which efforts of the current session are expanded now (called after every change).
pub(super) fn remember_expansions(session: &SessionState) {
    let Some(id) = session.id.get_untracked() else {
        return;
    };
    let Some(expanded) = session.read(|core| {
        core.efforts()
            .all()
            .iter()
            .filter(|e| core.efforts().expansion(&e.id).is_some())
            .map(|e| e.id.clone())
            .collect::<Vec<String>>()
    }) else {
        return;
    };
    let key = format!("{EXPANDED_PREFIX}{id}");
    let value =
        (!expanded.is_empty()).then(|| serde_json::to_string(&expanded).unwrap_or_default());
    if read_local(&key) != value {
        // Best effort: without localStorage a reload only cannot name the lost expansions.
        let _ = write_local(&key, value.as_deref());
    }
}

/// What the app knows of the stored conversation outside the session's memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ArchiveState {
    /// The session holds everything (a new or short session), or has no stored copy.
    #[default]
    NotNeeded,
    /// The stored document is being read.
    Reading,
    /// The stored transcript: every message and every recorded turn's notices.
    Read {
        /// The session it was read for.
        session_id: String,
        /// Its transcript.
        transcript: Transcript,
        /// Efforts that were expanded when the session was stored (expansions are not kept).
        expanded_before: Vec<String>,
    },
    /// The document could not be read; the chat shows what is in memory and says so.
    Failed(String),
}

/// Starts reading the stored document of the session just adopted, when the session does not
/// hold all of it; otherwise notes the expansions the last use left (the session's own
/// history is complete then).
pub(super) fn read_after_adopt(state: AppState) {
    // What this browser saw expanded when the session was last shown (an expansion made with
    // the buttons after the last turn is recorded in no stored turn).
    let remembered: Vec<String> = state
        .session
        .id
        .get_untracked()
        .and_then(|id| read_local(&format!("{EXPANDED_PREFIX}{id}")))
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default();
    let lost = move |recorded: Vec<String>, expanded_now: &dyn Fn(&str) -> bool| {
        let mut all: Vec<String> = recorded;
        all.extend(remembered.iter().cloned());
        all.sort();
        all.dedup();
        all.retain(|id| !expanded_now(id));
        all
    };
    let complete = state.session.read(|core| {
        core.is_fully_loaded().then(|| {
            let recorded = view_model::lost_expansions(core.history().points(), |id| {
                core.efforts().expansion(id).is_some()
            });
            lost(recorded, &|id| core.efforts().expansion(id).is_some())
        })
    });
    let (Some(store), Some(id)) = (state.session.store(), state.session.id_now()) else {
        state.session.archive.set(ArchiveState::NotNeeded);
        return;
    };
    match complete {
        // No session: nothing to read.
        None => {
            state.session.archive.set(ArchiveState::NotNeeded);
            return;
        }
        // Only part of it is in memory: read the rest below.
        Some(None) => {}
        Some(Some(expanded_before)) => {
            state.session.archive.set(if expanded_before.is_empty() {
                ArchiveState::NotNeeded
            } else {
                ArchiveState::Read {
                    session_id: id,
                    transcript: Transcript::default(),
                    expanded_before,
                }
            });
            return;
        }
    }
    state.session.archive.set(ArchiveState::Reading);
    spawn_local(async move {
        let result = store.export_document(&id).await;
        // The person may have opened another session meanwhile: this one is not shown then.
        if state.session.id.get_untracked().as_deref() != Some(id.as_str()) {
            return;
        }
        match result {
            Ok(document) => {
                let transcript = view_model::transcript_of_document(&document);
                let expanded_before = state
                    .session
                    .with_core(|core| {
                        let recorded = view_model::lost_expansions(&document.history, |effort| {
                            core.efforts().expansion(effort).is_some()
                        });
                        lost(recorded, &|id| core.efforts().expansion(id).is_some())
                    })
                    .unwrap_or_default();
                state.session.archive.set(ArchiveState::Read {
                    session_id: id,
                    transcript,
                    expanded_before,
                });
            }
            Err(error) => {
                let text = error.to_string();
                state.notices.notify(
                    NoticeKind::Error,
                    format!("The earlier part of this conversation could not be read: {text}"),
                );
                state.session.archive.set(ArchiveState::Failed(text));
            }
        }
    });
}
