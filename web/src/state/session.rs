//! The session and its store: the current session (a `ccm_browser::BrowserSession`), browser
//! storage, the list of stored sessions, and what views show of the session beyond it (the
//! stored conversation, the stored telemetry, an opened log, the manifest's search).
//!
//! Views read the session as `&Session` through [`SessionState::derive`] (tracking its
//! version) or [`SessionState::read`]; only the operations of the app's state change it.

use super::archive::ArchiveState;
use ccm_browser::{BrowserSession, BrowserStore, SessionInfo};
use ccm_core::telemetry::TurnTelemetry;
use ccm_core::Session as CoreSession;
use leptos::prelude::*;
use std::collections::BTreeMap;
use std::rc::Rc;

/// An effort log opened for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenLog {
    /// The effort.
    pub id: String,
    /// Its messages: role and text.
    pub messages: Vec<(String, String, u32)>,
}

/// What an import stores as a new session.
pub enum ImportSource {
    /// A session document (JSON text), as an export wrote it.
    Document(String),
    /// A session in the original CCM file layout.
    CcmFiles(crate::import::CcmFileSet),
}

/// Puts a session as a save left it into the session list (most recently updated first, as
/// the store lists them; damaged sessions stay last), replacing its old entry: the list
/// follows each save without reading every stored session again.
pub fn list_saved(sessions: &mut Vec<SessionInfo>, saved: SessionInfo) {
    sessions.retain(|s| s.id != saved.id);
    let at = sessions
        .iter()
        .position(|s| s.damaged.is_some() || s.updated_ms <= saved.updated_ms)
        .unwrap_or(sessions.len());
    sessions.insert(at, saved);
}

/// The session part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct SessionState {
    /// Browser storage, once opened (`None` when storage is unavailable).
    pub(super) store: StoredValue<Option<BrowserStore>, LocalStorage>,
    /// The current session.
    pub(super) current: StoredValue<Option<Rc<BrowserSession>>, LocalStorage>,
    /// The current session's id in the store.
    pub(super) id: RwSignal<Option<String>>,
    /// Bumped after every change of the current session; views derived from it track this.
    pub(super) version: RwSignal<u64>,
    /// Stored sessions, most recently updated first.
    pub(super) list: RwSignal<Vec<SessionInfo>>,
    /// An effort log opened for reading.
    pub(super) open_log: RwSignal<Option<OpenLog>>,
    /// What the chat shows of a session opened from storage beyond what is in memory.
    pub(super) archive: RwSignal<ArchiveState>,
    /// The request telemetry of the current session's turns that storage holds and the
    /// session in memory does not (it opens without it), read in the background after opening
    /// so that a turn's "tokens in" is counted the same way before and after a reload.
    pub(super) stored_telemetry: RwSignal<BTreeMap<u64, TurnTelemetry>>,
    /// Set when a save of the current session was refused because another tab saved a newer
    /// revision: no turn is taken into it until the person loads the newer version or keeps
    /// this one as a branch.
    pub(super) conflict: RwSignal<bool>,
    /// The message of the turn whose save another tab's newer version refused: loading the
    /// newer version puts it back into the message box, so that it is not lost.
    pub(super) unsaved_text: StoredValue<Option<String>>,
    /// Set while `catch_up` runs, so that two of them never load the session at once.
    pub(super) catching_up: StoredValue<bool>,
    /// The manifest's search: the results for the last query (`None` while it is empty).
    pub(super) search: RwSignal<Option<crate::view_model::SearchView>>,
    /// The last query typed into the manifest's search.
    pub(super) search_query: StoredValue<String>,
}

impl SessionState {
    /// No store and no session yet.
    pub fn new() -> SessionState {
        SessionState {
            store: StoredValue::new_local(None),
            current: StoredValue::new_local(None),
            id: RwSignal::new(None),
            version: RwSignal::new(0),
            list: RwSignal::new(Vec::new()),
            open_log: RwSignal::new(None),
            archive: RwSignal::new(ArchiveState::default()),
            stored_telemetry: RwSignal::new(BTreeMap::new()),
            conflict: RwSignal::new(false),
            unsaved_text: StoredValue::new(None),
            catching_up: StoredValue::new(false),
            search: RwSignal::new(None),
            search_query: StoredValue::new(String::new()),
        }
    }

    /// Browser storage, once opened (`None` when storage is unavailable or not open yet).
    pub fn store(&self) -> Option<BrowserStore> {
        self.store.get_value()
    }

    /// Whether browser storage is open.
    pub fn has_store(&self) -> bool {
        self.store.with_value(Option::is_some)
    }

    /// The current session, for the drivers that run a turn in it (`crate::turn`). Views read
    /// it through [`derive`](Self::derive) or [`read`](Self::read) instead.
    pub(crate) fn current(&self) -> Option<Rc<BrowserSession>> {
        self.current.get_value()
    }

    /// Whether a session is open.
    pub fn is_open(&self) -> bool {
        self.current.with_value(Option::is_some)
    }

    /// Runs `f` on the current core session, which it may change (`None` before a session is
    /// open); the caller marks the change with [`changed`](Self::changed). For the drivers
    /// and operations of the app's state, never for views.
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&mut CoreSession) -> R) -> Option<R> {
        let session = self.current.get_value()?;
        Some(session.with_core(f))
    }

    /// Reads the current session without tracking (`None` before a session is open).
    pub fn read<R>(&self, f: impl FnOnce(&CoreSession) -> R) -> Option<R> {
        self.with_core(|core| f(core))
    }

    /// Reads the current session for a view, tracking its version, so the view recomputes
    /// after every change.
    pub fn derive<R>(&self, f: impl FnOnce(&CoreSession) -> R) -> Option<R> {
        self.version.track();
        self.read(f)
    }

    /// Tracks the session's version without reading it: a view that asks the session only
    /// through another operation recomputes after every change too.
    pub fn track(&self) {
        self.version.track();
    }

    /// Marks the session changed, so every derived view recomputes.
    pub fn changed(&self) {
        self.version.update(|v| *v += 1);
        super::archive::remember_expansions(self);
    }

    /// The current session's id in the store.
    pub fn id(&self) -> ReadSignal<Option<String>> {
        self.id.read_only()
    }

    /// The current session's id in the store, without tracking.
    pub fn id_now(&self) -> Option<String> {
        self.id.get_untracked()
    }

    /// Whether `id` is the current session's id, without tracking.
    pub fn is_current(&self, id: &str) -> bool {
        self.id
            .with_untracked(|current| current.as_deref() == Some(id))
    }

    /// Stored sessions, most recently updated first.
    pub fn list(&self) -> ReadSignal<Vec<SessionInfo>> {
        self.list.read_only()
    }

    /// The name a stored session is listed under.
    pub fn name_of(&self, id: &str) -> Option<String> {
        self.list
            .with_untracked(|list| list.iter().find(|s| s.id == id).map(|s| s.name.clone()))
    }

    /// An effort log opened for reading.
    pub fn open_log(&self) -> ReadSignal<Option<OpenLog>> {
        self.open_log.read_only()
    }

    /// Closes the effort log opened for reading.
    pub fn close_log(&self) {
        self.open_log.set(None);
    }

    /// What the chat shows of a session opened from storage beyond what is in memory.
    pub fn archive(&self) -> ReadSignal<ArchiveState> {
        self.archive.read_only()
    }

    /// The stored telemetry of turns the session in memory holds none of.
    pub fn stored_telemetry(&self) -> ReadSignal<BTreeMap<u64, TurnTelemetry>> {
        self.stored_telemetry.read_only()
    }

    /// Whether another tab's newer version refused this tab's save.
    pub fn conflict(&self) -> ReadSignal<bool> {
        self.conflict.read_only()
    }

    /// Takes the message whose save another tab's newer version refused, if any.
    pub(super) fn take_unsaved_text(&self) -> Option<String> {
        let text = self.unsaved_text.get_value();
        self.unsaved_text.set_value(None);
        text
    }

    /// The manifest's search results for the last query.
    pub fn search(&self) -> ReadSignal<Option<crate::view_model::SearchView>> {
        self.search.read_only()
    }

    /// Notes the query typed last into the manifest's search: only its answer is shown.
    pub fn set_search_query(&self, query: String) {
        self.search_query.set_value(query);
    }
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, updated_ms: f64, turn_count: f64) -> SessionInfo {
        SessionInfo {
            id: id.to_string(),
            name: format!("Session {id}"),
            created_ms: 1.0,
            updated_ms,
            turn_count,
            message_count: turn_count * 2.0,
            revision: turn_count,
            damaged: None,
            branch: None,
        }
    }

    #[test]
    fn a_saved_session_replaces_its_stale_entry_and_moves_to_the_top() {
        let damaged = SessionInfo {
            damaged: Some("its header could not be read".to_string()),
            ..listed("d", 0.0, 0.0)
        };
        let mut sessions = vec![listed("b", 20.0, 4.0), listed("a", 10.0, 1.0), damaged];
        list_saved(&mut sessions, listed("a", 30.0, 2.0));
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "d"]);
        // The entry is the saved one, not the stale one: the list shows the new turn count.
        assert_eq!(sessions[0], listed("a", 30.0, 2.0));
        assert_eq!(sessions.len(), 3);
    }

    #[test]
    fn a_first_save_adds_its_session_before_the_damaged_ones() {
        let damaged = SessionInfo {
            damaged: Some("its header could not be read".to_string()),
            ..listed("d", 0.0, 0.0)
        };
        let mut sessions = vec![listed("b", 20.0, 4.0), damaged];
        list_saved(&mut sessions, listed("new", 5.0, 1.0));
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b", "new", "d"]);
    }
}
