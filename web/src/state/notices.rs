//! What the app tells the person beside the conversation: notices above the chat, the
//! progress line of a long operation, and where start-up stands.
//!
//! Views read these through the read-only signals below; every change goes through
//! [`Notices::notify`], [`Notices::dismiss`], [`Notices::set_busy`] and
//! [`Notices::set_startup`].

use leptos::prelude::*;

/// How many notices stay on screen: a long session must not pile them up.
const MAX_NOTICES: usize = 5;

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

/// The notices part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct Notices {
    list: RwSignal<Vec<Notice>>,
    next_id: StoredValue<u64>,
    busy: RwSignal<Option<String>>,
    startup: RwSignal<Startup>,
}

impl Notices {
    /// No notices, start-up at the tokenizer's download.
    pub fn new() -> Notices {
        Notices {
            list: RwSignal::new(Vec::new()),
            next_id: StoredValue::new(1),
            busy: RwSignal::new(None),
            startup: RwSignal::new(Startup::Tokenizer {
                phase: "download".to_string(),
                done: 0,
                total: 0,
            }),
        }
    }

    /// The notices on screen, oldest first.
    pub fn list(&self) -> ReadSignal<Vec<Notice>> {
        self.list.read_only()
    }

    /// Shows a notice.
    pub fn notify(&self, kind: NoticeKind, text: impl Into<String>) {
        let id = self.next_id.get_value();
        self.next_id.set_value(id + 1);
        let text = text.into();
        self.list.update(|n| {
            n.push(Notice { id, kind, text });
            // Old notices go first.
            if n.len() > MAX_NOTICES {
                n.remove(0);
            }
        });
    }

    /// Removes a notice.
    pub fn dismiss(&self, id: u64) {
        self.list.update(|n| n.retain(|notice| notice.id != id));
    }

    /// A long operation in progress (import, export, opening), for the progress line.
    pub fn busy(&self) -> ReadSignal<Option<String>> {
        self.busy.read_only()
    }

    /// Shows (`Some`) or clears the progress line.
    pub fn set_busy(&self, what: Option<String>) {
        self.busy.set(what);
    }

    /// Start-up progress.
    pub fn startup(&self) -> ReadSignal<Startup> {
        self.startup.read_only()
    }

    /// Moves start-up on.
    pub fn set_startup(&self, startup: Startup) {
        self.startup.set(startup);
    }
}

impl Default for Notices {
    fn default() -> Self {
        Notices::new()
    }
}
