//! The one place where failures become JavaScript `Error`s.
//!
//! Every binding returns `Result<T, JsValue>`, and every error on its way out goes through
//! [`Failure`]: the message is the core's (or the storage layer's) sentence for the person who
//! must act, and a short `code` property lets JavaScript branch without parsing messages.
//! Where the core's sentence names a function or an option, it names it as Rust does
//! (`begin_turn`, `decay_threshold`); [`in_js_words`] gives the JavaScript names instead.
//! Keeping this in one file is what keeps the messages consistent.

use ccm_browser::BrowserError;
use ccm_core::tools::name as tool;
use std::fmt;
use wasm_bindgen::JsValue;

/// What kind of failure an error is; the `code` property of the thrown `Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Invalid session options.
    Config,
    /// An effort operation was refused (unknown id, wrong state, …).
    Effort,
    /// `beginTurn` / `endTurn` / `abortTurn` out of order.
    Turn,
    /// A session document could not be imported or exported.
    Snapshot,
    /// Another window saved the session first.
    Conflict,
    /// The browser's storage quota is used up.
    Quota,
    /// The database upgrade is blocked by another tab.
    Blocked,
    /// The database was upgraded or deleted by another tab; this connection is closed.
    VersionChange,
    /// No storage is available (no IndexedDB, no localStorage).
    Unavailable,
    /// No stored session with that id.
    NotFound,
    /// Any other storage failure.
    Storage,
    /// The session is busy (a save or a turn is in progress).
    Busy,
    /// The token counter callback failed.
    Counter,
    /// A call from JavaScript with arguments of the wrong shape.
    Argument,
    /// The provider failed; the turn was undone.
    Provider,
    /// The turn was cancelled; the turn was undone.
    Cancelled,
    /// A CCM file-layout import failed.
    Import,
    /// A pin or unpin was refused.
    Pin,
    /// A branch operation was refused.
    Branch,
    /// An attachment could not be made or found.
    Attachment,
    /// A text over its size limit (see `SessionOptions.maxMessageChars`); nothing was copied.
    TooLarge,
    /// A change that would take a session over its memory budget, or the module's memory
    /// near its end (see `memory.rs`); nothing was changed.
    MemoryBudget,
    /// A change that would take what a session stores past the most an export of it may
    /// hold and still be imported; nothing was changed.
    SessionFull,
}

impl Code {
    fn as_str(self) -> &'static str {
        match self {
            Code::Config => "config",
            Code::Effort => "effort",
            Code::Turn => "turn",
            Code::Snapshot => "snapshot",
            Code::Conflict => "conflict",
            Code::Quota => "quota",
            Code::Blocked => "blocked",
            Code::VersionChange => "version_change",
            Code::Unavailable => "unavailable",
            Code::NotFound => "not_found",
            Code::Storage => "storage",
            Code::Busy => "busy",
            Code::Counter => "counter",
            Code::Argument => "argument",
            Code::Provider => "provider",
            Code::Cancelled => "cancelled",
            Code::Import => "import",
            Code::Pin => "pin",
            Code::Branch => "branch",
            Code::Attachment => "attachment",
            Code::TooLarge => "too_large",
            Code::MemoryBudget => "memory_budget",
            Code::SessionFull => "session_full",
        }
    }
}

/// A failure on its way to JavaScript: a code, the message, and optional extra properties.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) code: Code,
    pub(crate) message: String,
    /// Extra properties set on the `Error` object (for example `userText` of a failed turn).
    pub(crate) extra: Vec<(&'static str, JsValue)>,
}

impl Failure {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            extra: Vec::new(),
        }
    }

    pub(crate) fn with(mut self, name: &'static str, value: impl Into<JsValue>) -> Failure {
        self.extra.push((name, value.into()));
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Failure> for JsValue {
    fn from(failure: Failure) -> JsValue {
        let error = js_sys::Error::new(&failure.message);
        let set = |name: &str, value: &JsValue| {
            // Setting a property on a fresh Error object cannot fail.
            let _ = js_sys::Reflect::set(&error, &JsValue::from_str(name), value);
        };
        set("code", &JsValue::from_str(failure.code.as_str()));
        for (name, value) in &failure.extra {
            set(name, value);
        }
        error.into()
    }
}

/// The core's names for what JavaScript calls differently: the session's methods and the
/// options of `new Session(options)`. Tool names in results sent to a model are not
/// translated (they are never thrown), and neither are a session document's fields, which
/// are snake_case in JSON too (so `SnapshotError` keeps the core's words).
const JS_NAMES: [(&str, &str); 22] = [
    ("begin_turn", "beginTurn"),
    ("end_turn", "endTurn"),
    ("abort_turn", "abortTurn"),
    // The effort operations are named after their tools, and the core's errors name the tool
    // (an effort whose log is not loaded says which operation needed it).
    (tool::OPEN_EFFORT, "openEffort"),
    (tool::CLOSE_EFFORT, "closeEffort"),
    (tool::SWITCH_EFFORT, "switchEffort"),
    (tool::REOPEN_EFFORT, "reopenEffort"),
    (tool::EXPAND_EFFORT, "expandEffort"),
    (tool::COLLAPSE_EFFORT, "collapseEffort"),
    ("decay_threshold", "decayThreshold"),
    ("summary_eviction_threshold", "summaryEvictionThreshold"),
    ("ambient_window", "ambientWindow"),
    ("min_keyword_overlap", "minKeywordOverlap"),
    ("context_window", "contextWindow"),
    ("reserved_output_tokens", "reservedOutputTokens"),
    ("leased_token_budget", "leasedTokenBudget"),
    ("context_mode", "contextMode"),
    ("ambient_token_budget", "ambientTokenBudget"),
    ("summary_token_budget", "summaryTokenBudget"),
    ("recall_token_budget", "recallTokenBudget"),
    ("evidence_token_budget", "evidenceTokenBudget"),
    ("search_rule", "searchRule"),
];

/// The compaction fields of `new Session({ compaction: { … } })`, as the core names them and
/// as JavaScript does: the options read the object with it, and errors are worded with it.
pub(crate) const COMPACTION_JS_NAMES: [(&str, &str); 15] = [
    ("enabled", "enabled"),
    ("preset", "preset"),
    ("soft_per_mille", "softPerMille"),
    ("hard_per_mille", "hardPerMille"),
    ("emergency_per_mille", "emergencyPerMille"),
    ("cooldown_messages", "cooldownMessages"),
    ("min_interval_ms", "minIntervalMs"),
    ("hysteresis_per_mille", "hysteresisPerMille"),
    ("emergency_bypasses_cooldown", "emergencyBypassesCooldown"),
    ("keep_last_messages_hard", "keepLastMessagesHard"),
    ("keep_last_messages_emergency", "keepLastMessagesEmergency"),
    ("keep_fraction_hard_per_mille", "keepFractionHardPerMille"),
    ("stale_attachment_messages", "staleAttachmentMessages"),
    ("idle_expansion_turns", "idleExpansionTurns"),
    ("rolling_summary_max_words", "rollingSummaryMaxWords"),
];

/// `message` with each of the core's names in [`JS_NAMES`] and [`COMPACTION_JS_NAMES`]
/// replaced by its JavaScript name, where it stands as a whole word (so an effort id that
/// merely contains one is left alone).
pub(crate) fn in_js_words(message: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    'scan: while let Some(c) = rest.chars().next() {
        let at_word_start = !out.chars().next_back().is_some_and(is_word);
        if at_word_start {
            for &(rust, js) in JS_NAMES.iter().chain(&COMPACTION_JS_NAMES) {
                if let Some(after) = rest.strip_prefix(rust) {
                    if !after.chars().next().is_some_and(is_word) {
                        out.push_str(js);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The core's error types map to a code each; the message is the core's own, in JavaScript's
/// words where `js_words` says so.
macro_rules! core_failure {
    ($($error:ty => $code:expr, js_words: $js_words:expr);* $(;)?) => {$(
        impl From<$error> for Failure {
            fn from(error: $error) -> Failure {
                let message = error.to_string();
                Failure::new($code, if $js_words { in_js_words(&message) } else { message })
            }
        }
    )*};
}

core_failure! {
    ccm_core::ConfigError => Code::Config, js_words: true;
    ccm_core::EffortError => Code::Effort, js_words: true;
    ccm_core::SnapshotError => Code::Snapshot, js_words: false;
    ccm_import::ImportError => Code::Import, js_words: false;
    ccm_core::pins::PinError => Code::Pin, js_words: false;
    ccm_core::branch::BranchError => Code::Branch, js_words: false;
}

/// A session that is full gets its own code (and the limit), whichever call found it.
impl From<ccm_core::compaction::SessionFull> for Failure {
    fn from(error: ccm_core::compaction::SessionFull) -> Failure {
        Failure::new(Code::SessionFull, in_js_words(&error.to_string())).with(
            "limit",
            ccm_core::compaction::MAX_SESSION_STORED_CHARS as f64,
        )
    }
}

impl From<ccm_core::TurnError> for Failure {
    fn from(error: ccm_core::TurnError) -> Failure {
        match error {
            ccm_core::TurnError::SessionFull(full) => full.into(),
            other => Failure::new(Code::Turn, in_js_words(&other.to_string())),
        }
    }
}

impl From<ccm_core::compaction::AttachmentError> for Failure {
    fn from(error: ccm_core::compaction::AttachmentError) -> Failure {
        match error {
            ccm_core::compaction::AttachmentError::SessionStorageFull(full) => full.into(),
            other => Failure::new(Code::Attachment, other.to_string()),
        }
    }
}

/// Shorthand for the result of a binding.
pub(crate) type JsResult<T> = Result<T, JsValue>;

/// Converts any error the core or this crate produces into the thrown value.
pub(crate) fn fail<E: Into<Failure>>(error: E) -> JsValue {
    JsValue::from(error.into())
}

/// The message of a thrown JavaScript value (ccm-browser's, so both crates word it alike).
pub(crate) use ccm_browser::js_message;

/// The browser layer's typed errors get the code of their variant and keep their message;
/// the core's errors inside it go through the core's mapping above (JavaScript's words
/// included), so a failure reads the same whichever layer met it.
impl From<BrowserError> for Failure {
    fn from(error: BrowserError) -> Failure {
        let code = match error {
            BrowserError::Conflict(_) => Code::Conflict,
            BrowserError::Quota(_) => Code::Quota,
            BrowserError::Blocked(_) => Code::Blocked,
            BrowserError::VersionChange(_) => Code::VersionChange,
            BrowserError::Unavailable(_) => Code::Unavailable,
            BrowserError::NotFound { .. } => Code::NotFound,
            BrowserError::Storage(_) => Code::Storage,
            BrowserError::Busy(_) => Code::Busy,
            BrowserError::Counter(_) => Code::Counter,
            BrowserError::Argument(_) => Code::Argument,
            BrowserError::Provider { message, user_text } => {
                return Failure::new(Code::Provider, message)
                    .with("userText", user_text)
                    .with("cancelled", false)
            }
            BrowserError::Config(error) => return error.into(),
            BrowserError::Turn(error) => return error.into(),
            // The engine's refusals read like the core's turn errors, in JavaScript's words.
            BrowserError::Engine(ccm_browser::turn::EngineError::Turn(error)) => {
                return error.into()
            }
            BrowserError::Engine(error) => {
                return Failure::new(Code::Turn, in_js_words(&error.to_string()))
            }
            BrowserError::Snapshot(error) => return error.into(),
            BrowserError::Import(error) => return error.into(),
        };
        Failure::new(code, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::in_js_words;

    #[test]
    fn the_core_names_become_javascript_names_as_whole_words_only() {
        assert_eq!(
            in_js_words("turn 3 is still in progress; call end_turn or abort_turn first"),
            "turn 3 is still in progress; call endTurn or abortTurn first"
        );
        assert_eq!(
            in_js_words("no turn is in progress; call begin_turn first"),
            "no turn is in progress; call beginTurn first"
        );
        assert_eq!(
            in_js_words("reserved_output_tokens (9000) must be smaller than context_window (8000)"),
            "reservedOutputTokens (9000) must be smaller than contextWindow (8000)"
        );
        // Inside a longer word (an effort id, a file name) nothing changes.
        assert_eq!(
            in_js_words("no effort with id 'x_begin_turn' or 'begin_turns'; ünïcode_end_turn"),
            "no effort with id 'x_begin_turn' or 'begin_turns'; ünïcode_end_turn"
        );
        assert_eq!(in_js_words(""), "");
    }
}
