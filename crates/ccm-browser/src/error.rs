//! The typed failures of CCM in the browser.
//!
//! Every fallible function of this crate returns a [`BrowserError`]: a Rust host (the app)
//! matches its variant (`BrowserError::Conflict` after a save another tab got in first), and
//! ccm-wasm turns it into a JavaScript `Error` whose `code` property names the variant. The
//! message (the `Display` text) is a sentence for the person who must act, the same in both.

use thiserror::Error;
use wasm_bindgen::{JsCast, JsValue};

/// What went wrong in the browser layer, by kind.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BrowserError {
    /// Another window saved the session first, or a new session's id is taken.
    #[error("{0}")]
    Conflict(String),
    /// The browser's storage quota is used up; nothing was written.
    #[error("{0}")]
    Quota(String),
    /// The database upgrade waits for another tab to close its connection.
    #[error("{0}")]
    Blocked(String),
    /// The database was upgraded or deleted by another tab; this connection is closed.
    #[error("{0}")]
    VersionChange(String),
    /// No usable storage (no IndexedDB, no localStorage) in this environment.
    #[error("{0}")]
    Unavailable(String),
    /// No stored session has this id.
    #[error("no stored session with id '{id}'")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// Any other storage failure (a damaged session row, a refused write, …).
    #[error("{0}")]
    Storage(String),
    /// The session is busy: a save or a turn of it is in progress.
    #[error("{0}")]
    Busy(String),
    /// A token counter failed, or the session's counting rule is not available.
    #[error("{0}")]
    Counter(String),
    /// A call with an argument this layer cannot use (an unknown backend, a session of
    /// another store).
    #[error("{0}")]
    Argument(String),
    /// The provider failed; the turn was undone.
    #[error("{message}")]
    Provider {
        /// What failed, for the person.
        message: String,
        /// The person's text of the undone turn, so it can be sent again.
        user_text: String,
    },
    /// Invalid session options.
    #[error(transparent)]
    Config(#[from] ccm_core::ConfigError),
    /// A turn operation out of order.
    #[error(transparent)]
    Turn(#[from] ccm_core::TurnError),
    /// The turn engine refused: a turn could not begin, or the engine was misused.
    #[error(transparent)]
    Engine(#[from] ccm_engine::EngineError),
    /// A session document could not be read, written or checked (also: stored records that
    /// do not add up).
    #[error(transparent)]
    Snapshot(#[from] ccm_core::SnapshotError),
    /// Files in the original CCM layout could not be imported.
    #[error(transparent)]
    Import(#[from] ccm_import::ImportError),
}

impl BrowserError {
    pub(crate) fn busy(message: impl Into<String>) -> BrowserError {
        BrowserError::Busy(message.into())
    }

    /// The refusal of a change, a save or a turn while `activity` of the same session ("a
    /// save", "a turn", "a summary") runs. Every host words it this way (the app through this
    /// crate, the npm package through ccm-wasm), so the person reads that nothing was applied
    /// and what to do, whichever door the refusal came through.
    pub fn in_progress(activity: &str) -> BrowserError {
        BrowserError::Busy(format!(
            "{activity} of this session is in progress and nothing was changed: wait for {} to finish and try again",
            activity.replacen("a ", "the ", 1)
        ))
    }

    pub(crate) fn argument(message: impl Into<String>) -> BrowserError {
        BrowserError::Argument(message.into())
    }
}

impl From<ccm_store::StoreError> for BrowserError {
    /// The store's failures keep their kind: a host matches `BrowserError::Conflict` whatever
    /// backend refused the save.
    fn from(error: ccm_store::StoreError) -> Self {
        use ccm_store::StoreError;
        match error {
            StoreError::Conflict(m) => BrowserError::Conflict(m),
            StoreError::Quota(m) => BrowserError::Quota(m),
            StoreError::Blocked(m) => BrowserError::Blocked(m),
            StoreError::VersionChange(m) => BrowserError::VersionChange(m),
            StoreError::Unavailable(m) => BrowserError::Unavailable(m),
            StoreError::NotFound { id } => BrowserError::NotFound { id },
            StoreError::Storage(m) => BrowserError::Storage(m),
        }
    }
}

/// Shorthand for results of this crate.
pub type BrowserResult<T> = Result<T, BrowserError>;

/// The message of a thrown JavaScript value: an `Error`'s message, a string, or its
/// `String(...)` form.
pub fn js_message(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    if let Some(text) = value.as_string() {
        return text;
    }
    // `String(value)`, exactly what JavaScript would print for a thrown non-Error. It is called
    // rather than assumed: a number or `undefined` is no string, and converting one as if it
    // were threw through the module (`unwrap_throw`) with the session still borrowed. Symbols
    // and objects whose `toString` throws get their type instead.
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("String"))
        .ok()
        .and_then(|string| string.dyn_into::<js_sys::Function>().ok())
        .and_then(|string| string.call1(&JsValue::UNDEFINED, value).ok())
        .and_then(|text| text.as_string())
        .unwrap_or_else(|| ccm_tokens_wasm::describe_type(value))
}
