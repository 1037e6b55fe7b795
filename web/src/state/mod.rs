//! The app's state, in parts, and the operations that change it.
//!
//! One [`AppState`] (a bundle of `Copy` handles) is provided as context. It is made of parts,
//! each a type with its own signals and operations: the session and its store
//! ([`SessionState`]), the turn ([`TurnState`]), the settings ([`Settings`]), the notices
//! ([`Notices`]), the panels ([`Panels`]) and sync ([`SyncState`]). The signals are private to
//! this module: views read them through read-only handles (`ReadSignal`, or the session as
//! `&Session` through [`SessionState::derive`]) and change them only through the operations.
//!
//! The core session lives in a `ccm_browser::BrowserSession` (shared with ccm-browser's store,
//! which saves what changed); views read snapshots the app derives after each change (the
//! session's version is bumped then). What spans several parts (opening, saving, importing
//! and forking sessions in `lifecycle.rs`; effort actions, pins, configuration and search in
//! `operations.rs`) is `AppState`'s, and delegates every decision to the core, reporting
//! failures as plain notices.

mod archive;
mod lifecycle;
mod notices;
mod operations;
mod panels;
mod session;
mod settings;
mod sync;
mod turn;

pub use archive::ArchiveState;
pub use notices::{Notice, NoticeKind, Notices, Startup};
pub use panels::{Panel, Panels};
pub use session::{list_saved, ImportSource, OpenLog, SessionState};
pub use settings::Settings;
pub use sync::{SyncState, SyncStatus};
pub use turn::{FailedTurn, LiveTurn, PendingAttachment, Phase, TurnState};

use crate::js::js_error_text;
use ccm_core::Config;
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

/// The IndexedDB database (and localStorage prefix) of the app's sessions.
pub const STORE_NAME: &str = "ccm-app";

/// The app's state: `Copy` handles to its parts, provided once as context.
#[derive(Clone, Copy)]
pub struct AppState {
    /// The current session, the store and the session list.
    pub session: SessionState,
    /// The turn in progress, the last failed one, and what goes into the next.
    pub turn: TurnState,
    /// Provider settings, the API key and the session's temperature.
    pub settings: Settings,
    /// Notices, the progress line and start-up.
    pub notices: Notices,
    /// Which panel shows beside the chat.
    pub panels: Panels,
    /// Syncing with a server.
    pub sync: SyncState,
}

impl AppState {
    /// Fresh state with the provider settings and key this browser remembers.
    pub fn new() -> AppState {
        AppState {
            session: SessionState::new(),
            turn: TurnState::new(),
            settings: Settings::new(),
            notices: Notices::new(),
            panels: Panels::new(),
            sync: SyncState::new(),
        }
    }
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Reads a localStorage entry (absent, or storage unavailable: `None`).
pub fn read_local(key: &str) -> Option<String> {
    local_storage()?.get_item(key).ok().flatten()
}

/// Writes a localStorage entry; failures (quota, private mode) are returned as text.
pub fn write_local(key: &str, value: Option<&str>) -> Result<(), String> {
    let storage = local_storage().ok_or("localStorage is unavailable")?;
    match value {
        Some(value) => storage.set_item(key, value),
        None => storage.remove_item(key),
    }
    .map_err(|e| js_error_text(&e))
}

/// Milliseconds since the epoch (the core has no clock; the app passes time in).
pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl AppState {
    /// Whether the current session takes no turns now: another tab saved a newer version of
    /// it, or another device wrote it too (a sync conflict). Tracks both.
    pub fn blocked(&self) -> bool {
        self.session.conflict.get() || self.in_sync_conflict()
    }

    /// Whether the open session is in a sync conflict (no turn is taken into it until the
    /// person chooses a version). Tracks the open session and the conflicts.
    pub fn in_sync_conflict(&self) -> bool {
        let id = self.session.id().get();
        self.sync
            .conflicts()
            .with(|c| id.as_ref().is_some_and(|id| c.contains(id)))
    }

    /// [`blocked`](Self::blocked) without tracking, for event handlers.
    pub fn blocked_now(&self) -> bool {
        untrack(|| self.blocked())
    }
}

impl Default for AppState {
    fn default() -> Self {
        AppState::new()
    }
}

/// Downloads `text` as a file named `name`.
pub fn download(name: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)
        .map_err(|e| js_error_text(&e))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| js_error_text(&e))?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let anchor: web_sys::HtmlAnchorElement = wasm_bindgen::JsCast::unchecked_into(
        document
            .create_element("a")
            .map_err(|e| js_error_text(&e))?,
    );
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.click();
    // The object URL is released once the browser had time to start the download.
    spawn_local(async move {
        crate::js::timeout(10_000.0).await;
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    Ok(())
}

/// `config` with the context window `window`, keeping the answer's reserve below half of it
/// so a small window still leaves room for a prompt.
pub(crate) fn sized_for_window(mut config: Config, window: u32) -> Config {
    config.context_window = window;
    if config.reserved_output_tokens >= window / 2 {
        config.reserved_output_tokens = window / 4;
    }
    config
}
