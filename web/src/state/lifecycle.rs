//! Opening, saving, importing, exporting and forking sessions: the operations of the app's
//! state that span its parts (the session and store, the turn, the settings, notices and
//! sync). A session is replaced only between turns; every failure becomes a notice.

use super::{list_saved, read_local, write_local, AppState, ImportSource, NoticeKind, STORE_NAME};
use ccm_browser::{BackendChoice, BrowserError, BrowserSession, BrowserStore, SessionInfo};
use ccm_core::tokens::Encoding;
use ccm_core::LogState;
use ccm_core::Session as CoreSession;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::BTreeMap;
use std::rc::Rc;

const LAST_SESSION_KEY: &str = "ccm.app.lastSession";

impl AppState {
    /// Whether the current session may be replaced now; says why not when a turn is running
    /// (the turn must end in, and be saved to, the session it began in).
    fn may_replace_session(&self) -> bool {
        if self.turn.in_turn() {
            self.notices.notify(
                NoticeKind::Info,
                "Wait for the reply (or stop it) before opening another session.",
            );
            return false;
        }
        true
    }

    /// Loads the stored version of the current session when another tab (or a sync) saved a
    /// newer revision than this tab holds, and this tab has nothing unsaved of its own (no
    /// turn running, no refused save). A failed turn's message goes back into the box, and
    /// what is typed there stays. Says whether it loaded the newer version. `for_send` is the
    /// check a send makes before its turn: it waits for a catch-up already running, where an
    /// announcement's catch-up leaves a send (or another catch-up) alone.
    pub async fn catch_up(&self, for_send: bool) -> bool {
        if !for_send && (self.turn.sending() || self.session.catching_up.get_value()) {
            return false;
        }
        while self.session.catching_up.get_value() {
            crate::js::timeout(20.0).await;
        }
        self.session.catching_up.set_value(true);
        let loaded = self.catch_up_now(for_send).await;
        self.session.catching_up.set_value(false);
        loaded
    }

    async fn catch_up_now(&self, for_send: bool) -> bool {
        let (Some(store), Some(id)) = (
            self.session.store.get_value(),
            self.session.id.get_untracked(),
        ) else {
            return false;
        };
        // A send's own turn is already on screen while it checks; any other turn is not
        // this tab's to interrupt.
        if (self.turn.in_turn() && !for_send) || self.session.conflict.get_untracked() {
            return false;
        }
        let Some(ours) = self.session.with_core(|core| core.revision()) else {
            return false;
        };
        let stored = match store.list().await {
            Ok(list) => list
                .iter()
                .find(|info| info.id == id)
                .map(|info| info.revision as u64),
            Err(_) => None,
        };
        if stored.is_none_or(|stored| stored <= ours)
            || (self.turn.in_turn() && !for_send)
            || self.session.id.get_untracked().as_deref() != Some(id.as_str())
        {
            return false;
        }
        let failed = self
            .turn
            .failed()
            .get_untracked()
            .map(|failed| failed.user_text);
        self.load_session(id, false).await;
        if let Some(text) = failed {
            self.turn.keep_in_box(&text);
        }
        self.notices.notify(
            NoticeKind::Info,
            if for_send {
                "Another tab continued this conversation: your message follows its latest turn."
            } else {
                "Another tab continued this conversation: this tab now shows its latest version. Your text in the box is kept."
            },
        );
        true
    }

    /// Saves what changed in the current session. Failures are shown, and nothing stored is
    /// damaged by them (the store writes a turn in one transaction).
    pub async fn save(&self) {
        let (Some(store), Some(session)) = (
            self.session.store.get_value(),
            self.session.current.get_value(),
        ) else {
            return;
        };
        let saved = match store.prepare_save(&session) {
            Ok(prepared) => {
                // The sync server gets the same batch after the local write.
                let batch = self.sync.is_on().then(|| prepared.batch().clone());
                prepared.finish().await.map(|report| (report, batch))
            }
            Err(e) => Err(e),
        };
        match saved {
            // The save says how the session is listed now: no need to read the list again.
            Ok((report, batch)) => {
                let id = report.session.id.clone();
                crate::tabs::announce(&id);
                self.session
                    .list
                    .update(|sessions| list_saved(sessions, report.session));
                if let Some(batch) = batch {
                    crate::sync::after_save(*self, id, batch);
                }
            }
            Err(BrowserError::Conflict(_)) => {
                // The conflict card explains it and offers the ways on; the message of the
                // turn that could not be saved is kept for the box.
                let text = self.turn.live_user_text();
                self.session.unsaved_text.set_value(text);
                self.session.conflict.set(true);
                self.refresh_sessions().await;
            }
            Err(error) => {
                self.notices.notify(
                    NoticeKind::Error,
                    format!("Could not save the session: {error}."),
                );
                self.refresh_sessions().await;
            }
        }
    }

    /// Reloads the list of stored sessions.
    pub async fn refresh_sessions(&self) {
        let Some(store) = self.session.store.get_value() else {
            return;
        };
        match store.list().await {
            Ok(list) => self.session.list.set(list),
            Err(e) => self.notices.notify(
                NoticeKind::Error,
                format!("Could not list the stored sessions: {e}"),
            ),
        }
    }

    /// Makes `session` (stored as `id`) the current one.
    fn adopt(&self, session: BrowserSession, id: Option<String>) {
        let problems = session.problems();
        if !problems.is_empty() {
            self.notices.notify(
                NoticeKind::Error,
                format!(
                    "Some stored records could not be read and were skipped: {}",
                    problems.join("; ")
                ),
            );
        }
        self.session.current.set_value(Some(Rc::new(session)));
        if let Some(id) = &id {
            let _ = write_local(LAST_SESSION_KEY, Some(id));
        }
        self.settings.load_temperature(id.as_deref());
        self.session.id.set(id);
        self.turn.forget_session();
        self.session.open_log.set(None);
        self.session.conflict.set(false);
        self.session.search.set(None);
        super::archive::read_after_adopt(*self);
        self.session.changed();
        self.prepare_recall_in_background();
        self.read_stored_telemetry();
    }

    /// Reads, in the background, the stored telemetry of the current session's turns that the
    /// session in memory has none of (`stored_telemetry`).
    fn read_stored_telemetry(&self) {
        self.session.stored_telemetry.set(BTreeMap::new());
        let (Some(store), Some(id)) = (
            self.session.store.get_value(),
            self.session.id.get_untracked(),
        ) else {
            return;
        };
        let Some(missing) = self.session.with_core(|core| {
            core.history()
                .points()
                .iter()
                .map(|point| point.turn)
                .filter(|turn| !core.history().telemetry().iter().any(|t| t.turn == *turn))
                .collect::<Vec<u64>>()
        }) else {
            return;
        };
        if missing.is_empty() {
            return;
        }
        let state = *self;
        spawn_local(async move {
            let mut read = BTreeMap::new();
            for turn in missing {
                // A turn whose telemetry cannot be read keeps its context size as its count.
                if let Ok(Some(telemetry)) = store.turn_telemetry(&id, turn).await {
                    read.insert(turn, telemetry);
                }
            }
            if state.session.id.get_untracked().as_deref() == Some(id.as_str()) {
                state.session.stored_telemetry.set(read);
            }
        });
    }

    /// Completes the recall index of a session just opened from storage, in the background:
    /// opening read only its working set, and search and the automatic recall should see
    /// every stored message before the person asks. The first turn would do it otherwise.
    fn prepare_recall_in_background(&self) {
        let Some(session) = self.session.current.get_value() else {
            return;
        };
        if session.with_core(|core| core.recall_state().index_complete()) {
            return;
        }
        let state = *self;
        leptos::task::spawn_local(async move {
            // A turn begun meanwhile completes the index itself; both read the same steps.
            if let Err(e) = session.prepare_recall().await {
                state.notices.notify(
                    NoticeKind::Error,
                    format!("Older messages could not be read for search: {e}"),
                );
            }
        });
    }

    /// Opens browser storage and the last session (or a new one). Without storage the app
    /// still works, with an in-memory session and a notice saying nothing is kept.
    pub async fn open_storage(&self) {
        match BrowserStore::open(BackendChoice::Auto, STORE_NAME).await {
            Ok(store) => {
                if let Some(reason) = store.fallback_reason() {
                    self.notices.notify(
                        NoticeKind::Info,
                        format!("IndexedDB is unavailable ({reason}); sessions are kept in localStorage, which holds less."),
                    );
                }
                self.session.store.set_value(Some(store));
            }
            Err(error) => {
                self.notices.notify(
                    NoticeKind::Error,
                    format!(
                        "Browser storage is unavailable ({error}). This conversation works but is lost when the tab closes."
                    ),
                );
                match CoreSession::new(self.settings.new_session_config()) {
                    Ok(core) => self.adopt(BrowserSession::from_core(core), None),
                    Err(e) => self.notices.notify(NoticeKind::Error, e.to_string()),
                }
                return;
            }
        }
        // With a sync server, what other devices wrote comes first, so that a new device opens
        // the latest conversation rather than starting an empty one.
        crate::sync::init(*self);
        crate::sync::sync_all(*self).await;
        self.refresh_sessions().await;
        let last = read_local(LAST_SESSION_KEY);
        let known = self.session.list.get_untracked();
        // A session whose header cannot be read cannot open; it stays listed for export, and
        // the user is told rather than left wondering where it went.
        let damaged = known.iter().filter(|s| s.damaged.is_some()).count();
        if damaged > 0 {
            self.notices.notify(
                NoticeKind::Error,
                format!("{damaged} stored session(s) are damaged and cannot be opened. They are listed under Sessions; Export takes out everything readable."),
            );
        }
        let openable = |s: &&SessionInfo| s.damaged.is_none();
        let pick = last
            .filter(|id| known.iter().filter(openable).any(|s| &s.id == id))
            .or_else(|| known.iter().find(openable).map(|s| s.id.clone()));
        match pick {
            // Just synced above: the session opens as it is stored.
            Some(id) => self.open_session(id, false).await,
            None => self.create_session("Conversation 1".to_string()).await,
        }
    }

    /// Opens the most recently updated session that can be opened, or a new one when there is
    /// none (after the current session was deleted, here or on another device).
    pub async fn open_any(&self) {
        let next = self
            .session
            .list
            .get_untracked()
            .iter()
            .find(|s| s.damaged.is_none())
            .map(|s| s.id.clone());
        match next {
            Some(next) => self.switch_session(next).await,
            None => self.create_session("Conversation 1".to_string()).await,
        }
    }

    /// Creates a stored session and switches to it.
    pub async fn create_session(&self, name: String) {
        if !self.may_replace_session() {
            return;
        }
        let Some(store) = self.session.store.get_value() else {
            return;
        };
        match store
            .create(&name, self.settings.new_session_config(), None)
            .await
        {
            Ok(session) => {
                let stored_id = session.store_id();
                self.refresh_sessions().await;
                if let Some(id) = &stored_id {
                    crate::sync::push_new(*self, id.clone());
                }
                self.adopt(session, stored_id);
            }
            Err(e) => self.notices.notify(
                NoticeKind::Error,
                format!("Could not create a session: {e}"),
            ),
        }
    }

    /// Opens a stored session, with what other devices wrote to it when sync is on.
    pub async fn switch_session(&self, id: String) {
        self.open_session(id, true).await;
    }

    /// Opens a stored session; `sync_first` pulls what other devices wrote before (unless the
    /// caller has just synced it).
    pub async fn open_session(&self, id: String, sync_first: bool) {
        if !self.may_replace_session() {
            return;
        }
        self.load_session(id, sync_first).await;
    }

    /// Reads a stored session and makes it the current one (after `open_session`'s check, or
    /// from a send's check for a newer version, whose turn has not begun in the session yet).
    async fn load_session(&self, id: String, sync_first: bool) {
        let Some(store) = self.session.store.get_value() else {
            return;
        };
        self.notices
            .set_busy(Some("Opening the session…".to_string()));
        if sync_first {
            crate::sync::before_open(*self, &id).await;
        }
        let mut loaded = store.load(&id, None).await;
        if self.load_table_for(&loaded).await {
            loaded = store.load(&id, None).await;
        }
        match loaded {
            Ok(session) => self.adopt(session, Some(id)),
            Err(e) => self.notices.notify(
                NoticeKind::Error,
                format!("Could not open the session: {e}"),
            ),
        }
        self.notices.set_busy(None);
    }

    /// When `outcome` failed because a rank table is not loaded (a session counted with
    /// cl100k_base, which the app does not load on start), loads the missing table and says
    /// whether it did, so the caller tries again; a table that cannot be loaded is reported.
    async fn load_table_for<T>(&self, outcome: &Result<T, BrowserError>) -> bool {
        if !matches!(outcome, Err(BrowserError::Counter(_))) {
            return false;
        }
        let Some(encoding) = [Encoding::Cl100kBase, Encoding::O200kBase]
            .into_iter()
            .find(|e| ccm_tokens_wasm::ensure_tokenizer(e.tokenizer_encoding()).is_err())
        else {
            return false;
        };
        self.notices.set_busy(Some(format!(
            "Loading the {} tokenizer for this session…",
            encoding.name()
        )));
        let url = crate::tokenizer::table_url(encoding);
        match ccm_tokens_wasm::load_from_url(encoding.tokenizer_encoding(), &url, &|_, _, _| {})
            .await
        {
            Ok(()) => true,
            Err(error) => {
                self.notices.notify(
                    NoticeKind::Error,
                    format!(
                        "The {} tokenizer table could not be loaded ({}), so this session cannot open; check the connection and try again.",
                        encoding.name(),
                        crate::js::js_error_text(&error)
                    ),
                );
                false
            }
        }
    }

    /// Renames a stored session.
    pub async fn rename_session(&self, id: String, name: String) {
        let Some(store) = self.session.store.get_value() else {
            return;
        };
        match store.rename(&id, &name).await {
            Ok(()) => crate::sync::renamed(*self, id, name),
            Err(e) => self.notices.notify(
                NoticeKind::Error,
                format!("Could not rename the session: {e}"),
            ),
        }
        self.refresh_sessions().await;
    }

    /// Deletes a stored session; deleting the current one opens another (or a new one).
    pub async fn delete_session(&self, id: String) {
        let Some(store) = self.session.store.get_value() else {
            return;
        };
        if let Err(e) = store.delete(&id).await {
            self.notices.notify(
                NoticeKind::Error,
                format!("Could not delete the session: {e}"),
            );
            return;
        }
        crate::sync::deleted(*self, id.clone());
        self.refresh_sessions().await;
        if self.session.id.get_untracked().as_deref() == Some(id.as_str()) {
            self.open_any().await;
        }
    }

    /// The stored session as its versioned JSON document.
    pub async fn export_session(&self, id: &str) -> Result<String, String> {
        let store = self
            .session
            .store
            .get_value()
            .ok_or("browser storage is unavailable")?;
        let document = store.export_document(id).await.map_err(|e| e.to_string())?;
        serde_json::to_string_pretty(&document).map_err(|e| e.to_string())
    }

    /// Stores a session document as a new session and switches to it.
    pub async fn import_document(&self, json: String, name: String) {
        self.import_session(ImportSource::Document(json), name)
            .await;
    }

    /// Stores a session (a document, or files in the original CCM layout, recounted with the
    /// current session's settings) as a new session and switches to it.
    pub async fn import_session(&self, source: ImportSource, name: String) {
        if !self.may_replace_session() {
            return;
        }
        let Some(store) = self.session.store.get_value() else {
            self.notices.notify(
                NoticeKind::Error,
                "Import needs browser storage, which is unavailable.",
            );
            return;
        };
        // An imported text may be in any script (and a document may spell its characters as
        // JSON escapes), so every import is counted with the whole table.
        if !crate::tokenizer::ready_for_import(*self).await {
            return;
        }
        self.notices.set_busy(Some(format!("Importing {name}…")));
        // Give the progress line a chance to paint before the (synchronous) recount.
        crate::js::timeout(0.0).await;
        let imported = match &source {
            ImportSource::Document(json) => {
                let mut imported = store.import_document(json, &name, None).await;
                if self.load_table_for(&imported).await {
                    imported = store.import_document(json, &name, None).await;
                }
                imported.map(|info| (info, Vec::new()))
            }
            ImportSource::CcmFiles(files) => {
                let config = self
                    .session
                    .with_core(|core| core.config().clone())
                    .unwrap_or_default();
                store
                    .import_ccm_files(&files.files(), config, &name, None)
                    .await
                    .map(|imported| (imported.session, imported.notes))
            }
        };
        match imported {
            Ok((info, notes)) => {
                crate::sync::push_new(*self, info.id.clone());
                self.refresh_sessions().await;
                self.switch_session(info.id.clone()).await;
                self.notices.notify(
                    NoticeKind::Info,
                    format!(
                        "Imported {} ({}, {}).",
                        info.name,
                        crate::words::turns(info.turn_count as usize),
                        crate::words::messages(info.message_count as usize)
                    ),
                );
                for note in notes {
                    self.notices.notify(NoticeKind::Info, note);
                }
            }
            Err(e) => self
                .notices
                .notify(NoticeKind::Error, format!("Could not import {name}: {e}")),
        }
        self.notices.set_busy(None);
    }

    /// Forks the current session at `turn` into a new stored session named after the branch,
    /// and switches to it. A session opened from storage holds no rewind history, so it is
    /// re-read from its document first; then only its latest turn can be forked.
    pub async fn fork(&self, turn: u64, branch: String) {
        if !self.may_replace_session() {
            return;
        }
        let Some(id) = self.session.id.get_untracked() else {
            return;
        };
        if self.session.store.with_value(Option::is_none) {
            return;
        }
        let base_name = self.session.name_of(&id).unwrap_or_default();
        let stored = match self.fork_session(&id, turn, &branch).await {
            Ok(fork) => {
                self.store_and_open(&fork, &format!("{base_name} ⎇ {branch}"))
                    .await
            }
            Err(e) => {
                self.notices
                    .notify(NoticeKind::Error, format!("Could not fork: {e}"));
                return;
            }
        };
        match stored {
            Ok(()) => self.notices.notify(
                NoticeKind::Info,
                format!("Forked “{base_name}” at turn {turn} as branch {branch}."),
            ),
            Err(e) => self.notices.notify(NoticeKind::Error, e),
        }
    }

    /// The name a stored session is listed under.
    pub fn session_name(&self, id: &str) -> Option<String> {
        self.session
            .list
            .with_untracked(|list| list.iter().find(|s| s.id == id).map(|s| s.name.clone()))
    }

    /// A new branch `branch` of the open session `id` as it was at the end of `turn`. Any turn
    /// can be forked: recent ones exactly, earlier ones rebuilt from the stored messages. A
    /// session opened from storage holds its working set only, so a fork of it is taken from
    /// the stored document (what an export reads).
    pub async fn fork_session(
        &self,
        id: &str,
        turn: u64,
        branch: &str,
    ) -> Result<CoreSession, String> {
        let direct = self
            .session
            .with_core(|core| core.is_fully_loaded().then(|| core.fork(turn, branch)))
            .ok_or("no session is open")?;
        let fork = match direct {
            Some(fork) => fork,
            None => CoreSession::from_json(&self.export_session(id).await?)
                .map_err(|e| e.to_string())?
                .fork(turn, branch),
        };
        fork.map(|fork| fork.session).map_err(|e| e.to_string())
    }

    /// Stores `session` as a new session named `name`, sends it to the sync server in the
    /// background, and opens it.
    pub async fn store_and_open(&self, session: &CoreSession, name: &str) -> Result<(), String> {
        let store = self
            .session
            .store
            .get_value()
            .ok_or("a fork needs browser storage, which is unavailable")?;
        let info = store
            .import_core(session, name)
            .await
            .map_err(|e| e.to_string())?;
        crate::sync::push_new(*self, info.id.clone());
        self.refresh_sessions().await;
        self.switch_session(info.id).await;
        Ok(())
    }

    /// Replaces this tab's session by the stored (newer) one. The message of the turn that could
    /// not be saved goes back into the box, before whatever is typed there.
    pub async fn load_newer(&self) {
        let Some(id) = self.session.id().get_untracked() else {
            return;
        };
        self.switch_session(id).await;
        if let Some(text) = self.session.take_unsaved_text() {
            self.turn.keep_in_box(&text);
        }
    }

    /// Stores this tab's version of the session as a new session (a branch) and opens it. Every
    /// record must be in memory for that: the concluded efforts' logs are read first; a session
    /// whose older messages were never loaded into this tab cannot be copied whole, and the person
    /// is told so.
    pub async fn keep_as_branch(&self) {
        let Some(session) = self.session.current.get_value() else {
            return;
        };
        let missing: Vec<String> = session.with_core(|core| {
            core.efforts()
                .all()
                .iter()
                .filter(|e| e.log != LogState::Loaded)
                .map(|e| e.id.clone())
                .collect()
        });
        for id in missing {
            let args = serde_json::json!({ "id": id }).to_string();
            if let Err(e) = session.load_logs_for("expand_effort", &args).await {
                self.notices.notify(
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
                let id = self.session.id().get_untracked();
                let base = self
                    .session
                    .list()
                    .get_untracked()
                    .into_iter()
                    .find(|s| Some(&s.id) == id.as_ref())
                    .map(|s| s.name)
                    .unwrap_or_else(|| "Conversation".to_string());
                self.import_document(json, format!("{base} (this tab's version)"))
                    .await;
            }
            Err(reason) => self.notices.notify(
                NoticeKind::Error,
                format!("Could not keep this tab's version: {reason}."),
            ),
        }
    }
}
