//! The app's state and the operations that change it.
//!
//! One [`AppState`] (a bundle of `Copy` handles) is provided as context. The core session
//! lives in a `ccm_browser::BrowserSession` (shared with ccm-browser's store, which saves what
//! changed);
//! components never touch it: they read snapshots the app derives after each change
//! ([`AppState::version`] is bumped then) and call the operations below, which delegate every
//! decision to the core and report failures as plain notices.

use crate::js::js_error_text;
use crate::provider::ProviderSettings;
use crate::view_model::{EffortAction, TurnBanners};
use ccm_browser::{BackendChoice, BrowserError, BrowserSession, BrowserStore, SessionInfo};
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::tokens::Encoding;
use ccm_core::{Config, Session as CoreSession};
use ccm_engine::{RequestPurpose, TurnEvent};
use ccm_provider::StreamDelta;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// The IndexedDB database (and localStorage prefix) of the app's sessions.
pub const STORE_NAME: &str = "ccm-app";
const LAST_SESSION_KEY: &str = "ccm.app.lastSession";
const PROVIDER_KEY: &str = "ccm.app.provider";
const API_KEY_PREFIX: &str = "ccm.app.apiKey.";
const TEMPERATURE_PREFIX: &str = "ccm.app.temperature.";

/// How a notice looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// Something worth knowing.
    Info,
    /// Something went wrong and the person may need to act.
    Error,
}

/// A dismissible notice above the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Unique within the tab.
    pub id: u64,
    /// How it looks.
    pub kind: NoticeKind,
    /// The text.
    pub text: String,
}

/// What the turn in progress is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the model's first bytes.
    Waiting,
    /// Text is arriving.
    Streaming,
    /// The model asked for tools; they run between requests.
    Tools(Vec<String>),
    /// A separate request writes the summary of an effort being concluded.
    Summarizing(String),
    /// A request failed and will be sent again.
    Retrying {
        /// Seconds until the next attempt.
        seconds: u64,
        /// Why the last attempt failed.
        error: String,
    },
    /// The turn is done and being saved.
    Saving,
}

impl Phase {
    /// The progress text shown under the streaming reply.
    pub fn text(&self) -> String {
        match self {
            Phase::Waiting => "Waiting for the model…".to_string(),
            Phase::Streaming => "Writing…".to_string(),
            Phase::Tools(names) => format!("Running {}…", names.join(", ")),
            Phase::Summarizing(effort) => format!("Writing the summary of {effort}…"),
            Phase::Retrying { seconds, error } => {
                format!("Retrying in {seconds} s: {error}")
            }
            Phase::Saving => "Saving…".to_string(),
        }
    }
}

/// The turn in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTurn {
    /// The person's message.
    pub user_text: String,
    /// The reply text streamed so far.
    pub text: String,
    /// What is happening now.
    pub phase: Phase,
    /// Where the current request's streamed text starts in `text`, so that a retried attempt
    /// can drop what its failed predecessor showed.
    reply_start: usize,
}

impl LiveTurn {
    /// A turn that just began with the person's `user_text`: nothing shown yet.
    pub fn new(user_text: String) -> LiveTurn {
        LiveTurn {
            user_text,
            text: String::new(),
            phase: Phase::Waiting,
            reply_start: 0,
        }
    }

    /// Shows what the turn engine's driver reports.
    pub fn show(&mut self, event: TurnEvent<'_>) {
        match event {
            TurnEvent::Sending(request) => match &request.purpose {
                RequestPurpose::Turn { .. } => {
                    if request.attempt > 1 {
                        self.text.truncate(self.reply_start);
                    } else if !self.text.is_empty() {
                        self.text.push_str("\n\n");
                    }
                    self.reply_start = self.text.len();
                    self.phase = Phase::Waiting;
                }
                RequestPurpose::Summary { effort_id } => {
                    self.phase = Phase::Summarizing(effort_id.clone());
                }
                RequestPurpose::RollingSummary => {
                    self.phase = Phase::Summarizing("earlier conversation".to_string());
                }
            },
            TurnEvent::Delta {
                delta: StreamDelta::ToolCallStarted { name, .. },
                ..
            } => match &mut self.phase {
                Phase::Tools(names) => names.push(name.clone()),
                _ => self.phase = Phase::Tools(vec![name.clone()]),
            },
            TurnEvent::Delta { .. } => {
                if let Some(text) = event.reply_text() {
                    self.text.push_str(text);
                    self.phase = Phase::Streaming;
                }
            }
            TurnEvent::Retrying(wait) => {
                self.phase = Phase::Retrying {
                    seconds: wait.delay_ms.div_ceil(1000),
                    error: wait.error.clone(),
                };
            }
            // The banners of the turn's tool calls show with the finished turn, in order.
            TurnEvent::ToolCalled(_) => {}
        }
    }
}

/// A turn that failed; the session is as before it and the text can be sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedTurn {
    /// The person's message.
    pub user_text: String,
    /// What went wrong, for people.
    pub error: String,
}

/// Where the app is in starting up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Startup {
    /// Loading the tokenizer's rank table: bytes downloaded (`phase` "download"), then tokens
    /// parsed ("parse"), out of `total` (0 while unknown).
    Tokenizer {
        /// "download" or "parse".
        phase: String,
        /// Bytes or tokens done.
        done: usize,
        /// Bytes or tokens in all, 0 when the server sent no length.
        total: usize,
    },
    /// The tokenizer could not be loaded; the app cannot count, so it cannot chat.
    Failed(String),
    /// Opening browser storage and the last session.
    Storage,
    /// Ready; the string says how long the tokenizer took.
    Ready(String),
}

/// The panel shown beside the chat (or instead of it at phone width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// Only the chat (phone width).
    Chat,
    /// The effort tiers.
    Memory,
    /// The context inspector.
    Context,
    /// The token curves.
    Tokens,
    /// Sessions and branches.
    Sessions,
    /// Provider and session settings.
    Settings,
}

impl Panel {
    /// The panels in tab order.
    pub const TABS: [Panel; 6] = [
        Panel::Chat,
        Panel::Memory,
        Panel::Context,
        Panel::Tokens,
        Panel::Sessions,
        Panel::Settings,
    ];

    /// The tab's label.
    pub fn label(self) -> &'static str {
        match self {
            Panel::Chat => "Chat",
            Panel::Memory => "Memory",
            Panel::Context => "Context",
            Panel::Tokens => "Tokens",
            Panel::Sessions => "Sessions",
            Panel::Settings => "Settings",
        }
    }

    /// The tab's `data-testid` suffix.
    pub fn key(self) -> &'static str {
        match self {
            Panel::Chat => "chat",
            Panel::Memory => "memory",
            Panel::Context => "context",
            Panel::Tokens => "tokens",
            Panel::Sessions => "sessions",
            Panel::Settings => "settings",
        }
    }
}

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

/// A file waiting to go out with the next message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAttachment {
    /// The file name.
    pub name: String,
    /// Its text.
    pub text: String,
    /// Its tokens, counted with the session's encoding.
    pub tokens: u32,
}

/// The app's state: `Copy` handles, provided once as context.
#[derive(Clone, Copy)]
pub struct AppState {
    /// Browser storage, once opened (`None` when storage is unavailable).
    pub store: StoredValue<Option<BrowserStore>, LocalStorage>,
    /// The current session.
    pub session: StoredValue<Option<Rc<BrowserSession>>, LocalStorage>,
    /// The current session's id in the store.
    pub session_id: RwSignal<Option<String>>,
    /// Bumped after every change of the current session; views derived from it track this.
    pub version: RwSignal<u64>,
    /// Stored sessions, most recently updated first.
    pub sessions: RwSignal<Vec<SessionInfo>>,
    /// Start-up progress.
    pub startup: RwSignal<Startup>,
    /// Notices above the chat.
    pub notices: RwSignal<Vec<Notice>>,
    /// The turn in progress.
    pub live: RwSignal<Option<LiveTurn>>,
    /// The last turn, when it failed.
    pub failed: RwSignal<Option<FailedTurn>>,
    /// The text in the message box.
    pub draft: RwSignal<String>,
    /// Exact banners by turn, for turns completed in this tab.
    pub banners: RwSignal<BTreeMap<u64, TurnBanners>>,
    /// Provider settings (without the key).
    pub provider: RwSignal<ProviderSettings>,
    /// The API key, in memory for this tab.
    pub api_key: RwSignal<String>,
    /// Cancels the turn in progress.
    pub abort: StoredValue<Option<web_sys::AbortController>, LocalStorage>,
    /// The side panel.
    pub panel: RwSignal<Panel>,
    /// A long operation in progress (import, export, summary), for the progress line.
    pub busy: RwSignal<Option<String>>,
    /// An effort log opened for reading.
    pub open_log: RwSignal<Option<OpenLog>>,
    /// Set by the mode hotkey: the inspector opens its budget breakdown.
    pub breakdown_open: RwSignal<bool>,
    /// What the chat shows of a session opened from storage beyond what is in memory.
    pub archive: RwSignal<crate::archive::ArchiveState>,
    /// The request telemetry of the current session's turns that storage holds and the
    /// session in memory does not (it opens without it), read in the background after opening
    /// so that a turn's "tokens in" is counted the same way before and after a reload.
    pub stored_telemetry: RwSignal<BTreeMap<u64, ccm_core::telemetry::TurnTelemetry>>,
    /// Set when a save of the current session was refused because another tab saved a newer
    /// revision: no turn is taken into it until the person loads the newer version or keeps
    /// this one as a branch.
    pub conflict: RwSignal<bool>,
    /// The message of the turn whose save another tab's newer version refused: loading the
    /// newer version puts it back into the message box, so that it is not lost.
    pub unsaved_text: StoredValue<Option<String>>,
    /// Set from the moment a message is sent until its turn is running: a newer version
    /// announced meanwhile is left to the send's own check, which must not be raced.
    pub sending: StoredValue<bool>,
    /// Set while `catch_up` runs, so that two of them never load the session at once.
    pub catching_up: StoredValue<bool>,
    /// The sampling temperature of the current session (`None`: the provider's default). Kept
    /// in this browser's localStorage by session id: it is how this app talks to the model,
    /// not part of the session's stored format.
    pub temperature: RwSignal<Option<f64>>,
    /// Files waiting to go out with the next message.
    pub attachments: RwSignal<Vec<PendingAttachment>>,
    /// The turn whose message is being edited in the box (sending then redoes that turn).
    pub editing: RwSignal<Option<u64>>,
    /// The manifest's search: the results for the last query (`None` while it is empty).
    pub search: RwSignal<Option<crate::view_model::SearchView>>,
    /// The last query typed into the manifest's search.
    pub search_query: StoredValue<String>,
    /// The sync server's client, when sync is set up in this browser (`crate::sync`).
    pub sync: StoredValue<Option<Rc<ccm_browser::sync::SyncClient>>, LocalStorage>,
    /// Where syncing stands.
    pub sync_status: RwSignal<crate::sync::SyncStatus>,
    /// Sessions that this browser and another device both changed since they were last the
    /// same: no turn is taken into one until the person chooses a version.
    pub sync_conflicts: RwSignal<BTreeSet<String>>,
    /// Set while a sync runs: syncs take turns (`crate::sync`).
    pub sync_running: StoredValue<bool>,
    next_notice: StoredValue<u64>,
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
    /// Fresh state with the provider settings and key this browser remembers.
    pub fn new() -> AppState {
        let provider: ProviderSettings = read_local(PROVIDER_KEY)
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
        let api_key = if provider.remember_key {
            read_local(&format!("{API_KEY_PREFIX}{}", provider.choice.key())).unwrap_or_default()
        } else {
            String::new()
        };
        AppState {
            store: StoredValue::new_local(None),
            session: StoredValue::new_local(None),
            session_id: RwSignal::new(None),
            version: RwSignal::new(0),
            sessions: RwSignal::new(Vec::new()),
            startup: RwSignal::new(Startup::Tokenizer {
                phase: "download".to_string(),
                done: 0,
                total: 0,
            }),
            notices: RwSignal::new(Vec::new()),
            live: RwSignal::new(None),
            failed: RwSignal::new(None),
            draft: RwSignal::new(String::new()),
            banners: RwSignal::new(BTreeMap::new()),
            provider: RwSignal::new(provider),
            api_key: RwSignal::new(api_key),
            abort: StoredValue::new_local(None),
            panel: RwSignal::new(Panel::Memory),
            busy: RwSignal::new(None),
            open_log: RwSignal::new(None),
            breakdown_open: RwSignal::new(false),
            archive: RwSignal::new(crate::archive::ArchiveState::default()),
            stored_telemetry: RwSignal::new(BTreeMap::new()),
            unsaved_text: StoredValue::new(None),
            sending: StoredValue::new(false),
            catching_up: StoredValue::new(false),
            conflict: RwSignal::new(false),
            temperature: RwSignal::new(None),
            attachments: RwSignal::new(Vec::new()),
            editing: RwSignal::new(None),
            search: RwSignal::new(None),
            search_query: StoredValue::new(String::new()),
            sync: StoredValue::new_local(None),
            sync_status: RwSignal::new(crate::sync::SyncStatus::Off),
            sync_conflicts: RwSignal::new(BTreeSet::new()),
            sync_running: StoredValue::new(false),
            next_notice: StoredValue::new(1),
        }
    }

    /// Runs `f` on the current core session (`None` before a session is open).
    pub fn with_core<R>(&self, f: impl FnOnce(&mut CoreSession) -> R) -> Option<R> {
        let session = self.session.get_value()?;
        Some(session.with_core(f))
    }

    /// Reads the current session for a view, tracking [`version`](Self::version).
    pub fn derive<R>(&self, f: impl FnOnce(&mut CoreSession) -> R) -> Option<R> {
        self.version.track();
        self.with_core(f)
    }

    /// Marks the session changed, so every derived view recomputes.
    pub fn changed(&self) {
        self.version.update(|v| *v += 1);
        crate::archive::remember_expansions(*self);
    }

    /// Shows a notice.
    pub fn notify(&self, kind: NoticeKind, text: impl Into<String>) {
        let id = self.next_notice.get_value();
        self.next_notice.set_value(id + 1);
        let text = text.into();
        self.notices.update(|n| {
            n.push(Notice { id, kind, text });
            // Old notices go first; a long session must not pile them up.
            if n.len() > 5 {
                n.remove(0);
            }
        });
    }

    /// Removes a notice.
    pub fn dismiss(&self, id: u64) {
        self.notices.update(|n| n.retain(|notice| notice.id != id));
    }

    /// Whether the current session takes no turns now: another tab saved a newer version of
    /// it, or another device wrote it too (a sync conflict). Tracks both.
    pub fn blocked(&self) -> bool {
        self.conflict.get() || crate::sync::current_in_conflict(*self)
    }

    /// [`blocked`](Self::blocked) without tracking, for event handlers.
    pub fn blocked_now(&self) -> bool {
        untrack(|| self.blocked())
    }

    /// Whether a turn is running (session changes wait for it).
    pub fn in_turn(&self) -> bool {
        self.live.with_untracked(Option::is_some)
    }

    /// Whether the current session may be replaced now; says why not when a turn is running
    /// (the turn must end in, and be saved to, the session it began in).
    fn may_replace_session(&self) -> bool {
        if self.in_turn() {
            self.notify(
                NoticeKind::Info,
                "Wait for the reply (or stop it) before opening another session.",
            );
            return false;
        }
        true
    }

    /// Saves the provider settings (never the key, unless asked) in localStorage.
    pub fn save_provider(&self, settings: ProviderSettings, key: String) {
        let choice_key = format!("{API_KEY_PREFIX}{}", settings.choice.key());
        let json = serde_json::to_string(&settings).unwrap_or_default();
        let stored = write_local(PROVIDER_KEY, Some(&json)).and_then(|_| {
            if settings.remember_key && !key.trim().is_empty() {
                write_local(&choice_key, Some(key.trim()))
            } else {
                write_local(&choice_key, None)
            }
        });
        if let Err(e) = stored {
            self.notify(
                NoticeKind::Error,
                format!("Settings apply to this tab only: they could not be stored ({e})."),
            );
        }
        self.provider.set(settings);
        self.api_key.set(key);
    }

    /// The engine settings of the next turn: the provider's, with this session's temperature.
    pub fn engine_settings(&self) -> ccm_engine::EngineSettings {
        let mut settings = self.provider.with_untracked(|p| p.engine_settings());
        settings.temperature = self.temperature.get_untracked();
        settings
    }

    /// Sets the current session's temperature (`None`: the provider's default) and keeps it.
    pub fn set_temperature(&self, temperature: Option<f64>) {
        self.temperature.set(temperature);
        if let Some(id) = self.session_id.get_untracked() {
            let key = format!("{TEMPERATURE_PREFIX}{id}");
            let value = temperature.map(|t| t.to_string());
            if let Err(e) = write_local(&key, value.as_deref()) {
                self.notify(
                    NoticeKind::Error,
                    format!(
                        "The temperature applies to this tab only: it could not be stored ({e})."
                    ),
                );
            }
        }
    }

    /// Makes the session's context window follow the chosen model, when the model's window is
    /// known (from the app's table or the provider's list): an 8K model gets an 8K budget, so
    /// compaction starts where that model needs it. Says what changed.
    pub async fn follow_model_window(&self, model: &str, window: u32) {
        let Some(config) = self.with_core(|core| core.config().clone()) else {
            return;
        };
        if window == 0 || config.context_window == window {
            return;
        }
        match self.apply_config(sized_for_window(config, window)).await {
            Ok(()) => self.notify(
                NoticeKind::Info,
                format!(
                    "This session's context window is now {window} tokens, the window of {model}. Settings › This session can change it."
                ),
            ),
            Err(e) => self.notify(NoticeKind::Error, e),
        }
    }

    /// Loads the stored version of the current session when another tab (or a sync) saved a
    /// newer revision than this tab holds, and this tab has nothing unsaved of its own (no
    /// turn running, no refused save). A failed turn's message goes back into the box, and
    /// what is typed there stays. Says whether it loaded the newer version. `for_send` is the
    /// check a send makes before its turn: it waits for a catch-up already running, where an
    /// announcement's catch-up leaves a send (or another catch-up) alone.
    pub async fn catch_up(&self, for_send: bool) -> bool {
        if !for_send && (self.sending.get_value() || self.catching_up.get_value()) {
            return false;
        }
        while self.catching_up.get_value() {
            crate::js::timeout(20.0).await;
        }
        self.catching_up.set_value(true);
        let loaded = self.catch_up_now(for_send).await;
        self.catching_up.set_value(false);
        loaded
    }

    async fn catch_up_now(&self, for_send: bool) -> bool {
        let (Some(store), Some(id)) = (self.store.get_value(), self.session_id.get_untracked())
        else {
            return false;
        };
        // A send's own turn is already on screen while it checks; any other turn is not
        // this tab's to interrupt.
        if (self.in_turn() && !for_send) || self.conflict.get_untracked() {
            return false;
        }
        let Some(ours) = self.with_core(|core| core.revision()) else {
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
            || (self.in_turn() && !for_send)
            || self.session_id.get_untracked().as_deref() != Some(id.as_str())
        {
            return false;
        }
        let failed = self.failed.get_untracked().map(|failed| failed.user_text);
        self.load_session(id, false).await;
        if let Some(text) = failed {
            self.draft
                .update(|draft| *draft = crate::tabs::keep_both(&text, draft));
        }
        self.notify(
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
        let (Some(store), Some(session)) = (self.store.get_value(), self.session.get_value())
        else {
            return;
        };
        let saved = match store.prepare_save(&session) {
            Ok(prepared) => {
                // The sync server gets the same batch after the local write.
                let batch = self
                    .sync
                    .with_value(Option::is_some)
                    .then(|| prepared.batch().clone());
                prepared.finish().await.map(|report| (report, batch))
            }
            Err(e) => Err(e),
        };
        match saved {
            // The save says how the session is listed now: no need to read the list again.
            Ok((report, batch)) => {
                let id = report.session.id.clone();
                crate::tabs::announce(&id);
                self.sessions
                    .update(|sessions| list_saved(sessions, report.session));
                if let Some(batch) = batch {
                    crate::sync::after_save(*self, id, batch);
                }
            }
            Err(BrowserError::Conflict(_)) => {
                // The conflict card explains it and offers the ways on; the message of the
                // turn that could not be saved is kept for the box.
                let text = self
                    .live
                    .with_untracked(|live| live.as_ref().map(|live| live.user_text.clone()));
                self.unsaved_text.set_value(text);
                self.conflict.set(true);
                self.refresh_sessions().await;
            }
            Err(error) => {
                self.notify(
                    NoticeKind::Error,
                    format!("Could not save the session: {error}."),
                );
                self.refresh_sessions().await;
            }
        }
    }

    /// Reloads the list of stored sessions.
    pub async fn refresh_sessions(&self) {
        let Some(store) = self.store.get_value() else {
            return;
        };
        match store.list().await {
            Ok(list) => self.sessions.set(list),
            Err(e) => self.notify(
                NoticeKind::Error,
                format!("Could not list the stored sessions: {e}"),
            ),
        }
    }

    /// Makes `session` (stored as `id`) the current one.
    fn adopt(&self, session: BrowserSession, id: Option<String>) {
        let problems = session.problems();
        if !problems.is_empty() {
            self.notify(
                NoticeKind::Error,
                format!(
                    "Some stored records could not be read and were skipped: {}",
                    problems.join("; ")
                ),
            );
        }
        self.session.set_value(Some(Rc::new(session)));
        if let Some(id) = &id {
            let _ = write_local(LAST_SESSION_KEY, Some(id));
        }
        self.temperature.set(
            id.as_deref()
                .and_then(|id| read_local(&format!("{TEMPERATURE_PREFIX}{id}")))
                .and_then(|t| t.parse().ok()),
        );
        self.session_id.set(id);
        self.banners.set(BTreeMap::new());
        self.failed.set(None);
        self.open_log.set(None);
        self.conflict.set(false);
        self.editing.set(None);
        self.search.set(None);
        crate::archive::read_after_adopt(*self);
        self.changed();
        self.prepare_recall_in_background();
        self.read_stored_telemetry();
    }

    /// Reads, in the background, the stored telemetry of the current session's turns that the
    /// session in memory has none of (`stored_telemetry`).
    fn read_stored_telemetry(&self) {
        self.stored_telemetry.set(BTreeMap::new());
        let (Some(store), Some(id)) = (self.store.get_value(), self.session_id.get_untracked())
        else {
            return;
        };
        let Some(missing) = self.with_core(|core| {
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
            if state.session_id.get_untracked().as_deref() == Some(id.as_str()) {
                state.stored_telemetry.set(read);
            }
        });
    }

    /// Completes the recall index of a session just opened from storage, in the background:
    /// opening read only its working set, and search and the automatic recall should see
    /// every stored message before the person asks. The first turn would do it otherwise.
    fn prepare_recall_in_background(&self) {
        let Some(session) = self.session.get_value() else {
            return;
        };
        if session.with_core(|core| core.recall_state().index_complete()) {
            return;
        }
        let state = *self;
        leptos::task::spawn_local(async move {
            // A turn begun meanwhile completes the index itself; both read the same steps.
            if let Err(e) = session.prepare_recall().await {
                state.notify(
                    NoticeKind::Error,
                    format!("Older messages could not be read for search: {e}"),
                );
            }
        });
    }

    /// The manifest's search for `query`: the model's ranking of efforts and the stored
    /// messages that best match, read from storage first where a concluded log is not loaded.
    /// Changes nothing in the session.
    pub async fn search_manifest(&self, query: String) {
        if query.trim().is_empty() {
            self.search.set(None);
            return;
        }
        let Some(session) = self.session.get_value() else {
            return;
        };
        let args = serde_json::json!({ "query": query }).to_string();
        if !self.in_turn() {
            if let Err(e) = session.load_logs_for("search_efforts", &args).await {
                self.notify(NoticeKind::Error, format!("Could not search: {e}"));
            }
        }
        // Only the answer to the latest query is shown: a slower earlier one must not win.
        let latest = self.search_query.get_value();
        if latest != query {
            return;
        }
        let view = session.with_core(|core| crate::view_model::search(core, &query));
        self.search.set(Some(view));
    }

    /// Brings the stored messages that best match `query` into the context, as the model's
    /// `recall` tool does: they stay while the conversation refers to them.
    pub async fn recall(&self, query: String) {
        let args = serde_json::json!({ "query": query }).to_string();
        let Some(session) = self
            .session_ready_for("recall", &args, "recalling messages", "Could not recall")
            .await
        else {
            return;
        };
        let (outcome, turn) =
            session.with_core(|core| (core.execute_tool("recall", &args), core.turn()));
        // Finding nothing to recall is an answer, not a failure.
        self.show_tool_outcome(outcome, turn, NoticeKind::Info, "nothing was recalled");
        self.changed();
        self.search_manifest(query).await;
        self.save().await;
    }

    /// Opens browser storage and the last session (or a new one). Without storage the app
    /// still works, with an in-memory session and a notice saying nothing is kept.
    pub async fn open_storage(&self) {
        match BrowserStore::open(BackendChoice::Auto, STORE_NAME).await {
            Ok(store) => {
                if let Some(reason) = store.fallback_reason() {
                    self.notify(
                        NoticeKind::Info,
                        format!("IndexedDB is unavailable ({reason}); sessions are kept in localStorage, which holds less."),
                    );
                }
                self.store.set_value(Some(store));
            }
            Err(error) => {
                self.notify(
                    NoticeKind::Error,
                    format!(
                        "Browser storage is unavailable ({error}). This conversation works but is lost when the tab closes."
                    ),
                );
                match CoreSession::new(self.new_session_config()) {
                    Ok(core) => self.adopt(BrowserSession::from_core(core), None),
                    Err(e) => self.notify(NoticeKind::Error, e.to_string()),
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
        let known = self.sessions.get_untracked();
        // A session whose header cannot be read cannot open; it stays listed for export, and
        // the user is told rather than left wondering where it went.
        let damaged = known.iter().filter(|s| s.damaged.is_some()).count();
        if damaged > 0 {
            self.notify(
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
            .sessions
            .get_untracked()
            .iter()
            .find(|s| s.damaged.is_none())
            .map(|s| s.id.clone());
        match next {
            Some(next) => self.switch_session(next).await,
            None => self.create_session("Conversation 1".to_string()).await,
        }
    }

    /// The configuration of a new session: the defaults, with the chosen model's context
    /// window when the app's table knows it, so an 8K model's first session compacts for 8K
    /// before anyone opens Settings.
    fn new_session_config(&self) -> Config {
        let window = self
            .provider
            .get_untracked()
            .model_info()
            .map(|info| info.context_window)
            .filter(|window| *window > 0);
        match window {
            Some(window) => sized_for_window(Config::default(), window),
            None => Config::default(),
        }
    }

    /// Creates a stored session and switches to it.
    pub async fn create_session(&self, name: String) {
        if !self.may_replace_session() {
            return;
        }
        let Some(store) = self.store.get_value() else {
            return;
        };
        match store.create(&name, self.new_session_config(), None).await {
            Ok(session) => {
                let stored_id = session.store_id();
                self.refresh_sessions().await;
                if let Some(id) = &stored_id {
                    crate::sync::push_new(*self, id.clone());
                }
                self.adopt(session, stored_id);
            }
            Err(e) => self.notify(
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
        let Some(store) = self.store.get_value() else {
            return;
        };
        self.busy.set(Some("Opening the session…".to_string()));
        if sync_first {
            crate::sync::before_open(*self, &id).await;
        }
        let mut loaded = store.load(&id, None).await;
        if self.load_table_for(&loaded).await {
            loaded = store.load(&id, None).await;
        }
        match loaded {
            Ok(session) => self.adopt(session, Some(id)),
            Err(e) => self.notify(
                NoticeKind::Error,
                format!("Could not open the session: {e}"),
            ),
        }
        self.busy.set(None);
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
        self.busy.set(Some(format!(
            "Loading the {} tokenizer for this session…",
            encoding.name()
        )));
        let url = crate::components::app::table_url(encoding);
        match ccm_tokens_wasm::load_from_url(encoding.tokenizer_encoding(), &url, &|_, _, _| {})
            .await
        {
            Ok(()) => true,
            Err(error) => {
                self.notify(
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
        let Some(store) = self.store.get_value() else {
            return;
        };
        match store.rename(&id, &name).await {
            Ok(()) => crate::sync::renamed(*self, id, name),
            Err(e) => self.notify(
                NoticeKind::Error,
                format!("Could not rename the session: {e}"),
            ),
        }
        self.refresh_sessions().await;
    }

    /// Deletes a stored session; deleting the current one opens another (or a new one).
    pub async fn delete_session(&self, id: String) {
        let Some(store) = self.store.get_value() else {
            return;
        };
        if let Err(e) = store.delete(&id).await {
            self.notify(
                NoticeKind::Error,
                format!("Could not delete the session: {e}"),
            );
            return;
        }
        crate::sync::deleted(*self, id.clone());
        self.refresh_sessions().await;
        if self.session_id.get_untracked().as_deref() == Some(id.as_str()) {
            self.open_any().await;
        }
    }

    /// The stored session as its versioned JSON document.
    pub async fn export_session(&self, id: &str) -> Result<String, String> {
        let store = self
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
        let Some(store) = self.store.get_value() else {
            self.notify(
                NoticeKind::Error,
                "Import needs browser storage, which is unavailable.",
            );
            return;
        };
        self.busy.set(Some(format!("Importing {name}…")));
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
                self.notify(
                    NoticeKind::Info,
                    format!(
                        "Imported {} ({}, {}).",
                        info.name,
                        crate::words::turns(info.turn_count as usize),
                        crate::words::messages(info.message_count as usize)
                    ),
                );
                for note in notes {
                    self.notify(NoticeKind::Info, note);
                }
            }
            Err(e) => self.notify(NoticeKind::Error, format!("Could not import {name}: {e}")),
        }
        self.busy.set(None);
    }

    /// Runs an effort action from the tier view. Logs a concluded effort needs are read from
    /// storage first; the operation itself is the core's tool, so its banner is exact.
    pub async fn effort_action(&self, action: EffortAction, id: String, summary: Option<String>) {
        let args = serde_json::json!({ "id": id }).to_string();
        let failed = format!("Could not read the log of {id}");
        let Some(session) = self
            .session_ready_for("expand_effort", &args, "changing efforts", &failed)
            .await
        else {
            return;
        };
        if action == EffortAction::ReadLog {
            let log = session.with_core(|core| {
                core.efforts().get(&id).map(|e| OpenLog {
                    id: e.id.clone(),
                    messages: e
                        .messages
                        .iter()
                        .map(|m| (m.role.as_str().to_string(), m.content.clone(), m.tokens))
                        .collect(),
                })
            });
            self.open_log.set(log);
            self.changed();
            return;
        }
        let Some(tool) = action.tool() else {
            return;
        };
        let args = match (&action, summary) {
            (EffortAction::Conclude, Some(summary)) if !summary.trim().is_empty() => {
                serde_json::json!({ "id": id, "summary": summary }).to_string()
            }
            _ => args,
        };
        let (outcome, turn) =
            session.with_core(|core| (core.execute_tool(tool, &args), core.turn()));
        self.show_tool_outcome(outcome, turn, NoticeKind::Error, "the operation failed");
        self.changed();
        self.save().await;
    }

    /// The current session with what the tool `tool` needs for `args` read from storage, for
    /// an operation run from the app; `None` (and a notice) while a turn runs (`doing` says
    /// what waits), without a session, or when the read fails (`failed` opens the notice).
    async fn session_ready_for(
        &self,
        tool: &str,
        args: &str,
        doing: &str,
        failed: &str,
    ) -> Option<Rc<BrowserSession>> {
        if self.in_turn() {
            self.notify(
                NoticeKind::Info,
                format!("Wait for the reply (or stop it) before {doing}."),
            );
            return None;
        }
        let session = self.session.get_value()?;
        if let Err(e) = session.load_logs_for(tool, args).await {
            self.notify(NoticeKind::Error, format!("{failed}: {e}"));
            return None;
        }
        Some(session)
    }

    /// Shows what a tool run from the app did: its banner under the turn it belongs to, or its
    /// error as a notice of `failure_kind` (`fallback` when the result names no error).
    fn show_tool_outcome(
        &self,
        outcome: ccm_core::ToolOutcome,
        turn: u64,
        failure_kind: NoticeKind,
        fallback: &str,
    ) {
        if outcome.ok {
            if let Some(banner) = outcome.banner {
                self.banners
                    .update(|b| b.entry(turn).or_default().after.push(banner));
            }
        } else {
            let message = outcome
                .result
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or(fallback)
                .to_string();
            self.notify(failure_kind, message);
        }
    }

    /// Pins (sticky, as the person's pin) or unpins an item of the plan.
    pub async fn set_pin(&self, target: String, pinned: bool) {
        let outcome = self.with_core(|core| {
            if pinned {
                core.pin(
                    PinRequest {
                        target: target.clone(),
                        kind: PinKind::Sticky,
                        ttl_turns: None,
                        task: None,
                    },
                    PinOrigin::User,
                )
                .map(|_| ())
            } else {
                core.unpin(&target, PinOrigin::User).map(|_| ())
            }
        });
        if let Some(Err(e)) = outcome {
            self.notify(NoticeKind::Error, e.to_string());
        }
        self.changed();
        self.save().await;
    }

    /// Applies a new configuration to the current session.
    pub async fn apply_config(&self, config: Config) -> Result<(), String> {
        if self.in_turn() {
            return Err("Wait for the reply (or stop it) before changing the settings.".into());
        }
        let result = self
            .with_core(|core| core.set_config(config))
            .unwrap_or(Ok(()));
        match result {
            Ok(()) => {
                self.changed();
                self.save().await;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Cycles the context mode Off → Light → Heavy (the hotkey) and opens the breakdown.
    pub fn cycle_mode(&self) {
        let Some(config) = self.with_core(|core| {
            let mut config = core.config().clone();
            config.context_mode = config.context_mode.next();
            config
        }) else {
            return;
        };
        let state = *self;
        state.breakdown_open.set(true);
        spawn_local(async move {
            if let Err(e) = state.apply_config(config).await {
                state.notify(NoticeKind::Error, e);
            }
        });
    }

    /// Forks the current session at `turn` into a new stored session named after the branch,
    /// and switches to it. A session opened from storage holds no rewind history, so it is
    /// re-read from its document first; then only its latest turn can be forked.
    pub async fn fork(&self, turn: u64, branch: String) {
        if !self.may_replace_session() {
            return;
        }
        let Some(id) = self.session_id.get_untracked() else {
            return;
        };
        if self.store.with_value(Option::is_none) {
            return;
        }
        let base_name = self.session_name(&id).unwrap_or_default();
        let stored = match self.fork_session(&id, turn, &branch).await {
            Ok(fork) => {
                self.store_and_open(&fork, &format!("{base_name} ⎇ {branch}"))
                    .await
            }
            Err(e) => {
                self.notify(NoticeKind::Error, format!("Could not fork: {e}"));
                return;
            }
        };
        match stored {
            Ok(()) => self.notify(
                NoticeKind::Info,
                format!("Forked “{base_name}” at turn {turn} as branch {branch}."),
            ),
            Err(e) => self.notify(NoticeKind::Error, e),
        }
    }

    /// The name a stored session is listed under.
    pub fn session_name(&self, id: &str) -> Option<String> {
        self.sessions
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

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_engine::{LlmRequest, PromptEstimate, RetryWait};
    use ccm_provider::RequestOptions;

    fn request(purpose: RequestPurpose, attempt: u32) -> LlmRequest {
        LlmRequest {
            purpose,
            attempt,
            messages: Vec::new(),
            tools: Vec::new(),
            options: RequestOptions::new("m"),
            plan_id: None,
            estimate: PromptEstimate::default(),
        }
    }

    fn turn(round: u32) -> RequestPurpose {
        RequestPurpose::Turn {
            round,
            final_answer_forced: false,
        }
    }

    fn text(live: &mut LiveTurn, purpose: &RequestPurpose, piece: &str) {
        let delta = StreamDelta::Text(piece.to_string());
        live.show(TurnEvent::Delta {
            purpose,
            delta: &delta,
        });
    }

    #[test]
    fn a_turn_shows_its_answers_tools_summaries_and_retries() {
        let mut live = LiveTurn::new("Let's fix the auth bug".to_string());
        live.show(TurnEvent::Sending(&request(turn(1), 1)));
        assert_eq!(live.phase, Phase::Waiting);
        text(&mut live, &turn(1), "Opening ");
        text(&mut live, &turn(1), "an effort.");
        assert_eq!(
            (live.text.as_str(), &live.phase),
            ("Opening an effort.", &Phase::Streaming)
        );
        for name in ["open_effort", "effort_status"] {
            let delta = StreamDelta::ToolCallStarted {
                id: format!("call_{name}"),
                name: name.to_string(),
            };
            live.show(TurnEvent::Delta {
                purpose: &turn(1),
                delta: &delta,
            });
        }
        assert_eq!(
            live.phase,
            Phase::Tools(vec!["open_effort".into(), "effort_status".into()])
        );

        // The next round's text starts a new paragraph; a retry of it drops what its failed
        // attempt showed, and nothing before.
        live.show(TurnEvent::Sending(&request(turn(2), 1)));
        text(&mut live, &turn(2), "Half an ans");
        let wait = RetryWait {
            delay_ms: 1_500,
            failed_attempt: 1,
            error: "the provider is overloaded".to_string(),
        };
        live.show(TurnEvent::Retrying(&wait));
        assert_eq!(
            live.phase,
            Phase::Retrying {
                seconds: 2,
                error: "the provider is overloaded".to_string()
            }
        );
        live.show(TurnEvent::Sending(&request(turn(2), 2)));
        assert_eq!(live.text, "Opening an effort.\n\n");
        text(&mut live, &turn(2), "Done.");
        assert_eq!(live.text, "Opening an effort.\n\nDone.");

        // Summary requests show as a phase; their text is not the reply.
        let summary = RequestPurpose::Summary {
            effort_id: "auth-bug".to_string(),
        };
        live.show(TurnEvent::Sending(&request(summary.clone(), 1)));
        assert_eq!(live.phase, Phase::Summarizing("auth-bug".to_string()));
        text(&mut live, &summary, "Fixed the TTL.");
        assert_eq!(live.text, "Opening an effort.\n\nDone.");
        live.show(TurnEvent::Sending(&request(
            RequestPurpose::RollingSummary,
            1,
        )));
        assert_eq!(
            live.phase,
            Phase::Summarizing("earlier conversation".to_string())
        );
    }

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
