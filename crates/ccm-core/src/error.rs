//! Errors of the core. Every message is written for the person (or model) who has to act on it.

use thiserror::Error;

/// Why an effort operation was refused. The session is left exactly as it was.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EffortError {
    /// `open_effort` with a name that has no letter or digit to build an id from.
    #[error("effort name '{name}' must contain at least one letter or digit")]
    EmptyName {
        /// The name as given.
        name: String,
    },
    /// `open_effort` with a name whose id is already taken.
    #[error("an effort with id '{id}' already exists ({status}); use reopen_effort to continue a concluded one or pick another name")]
    DuplicateId {
        /// The id derived from the name.
        id: String,
        /// Its current state, e.g. `open` or `concluded`.
        status: &'static str,
    },
    /// An id that names no effort.
    #[error("no effort with id '{id}'{hint}")]
    UnknownEffort {
        /// The id as given.
        id: String,
        /// A suggestion such as the known ids, with leading punctuation, or empty.
        hint: String,
    },
    /// The effort exists but is not in a state the operation accepts.
    #[error("cannot {operation} '{id}': {reason}")]
    WrongState {
        /// The operation's tool name without `_effort`, e.g. `expand`.
        operation: &'static str,
        /// The effort's id.
        id: String,
        /// Why, e.g. `it is open, and open efforts are already in context`.
        reason: String,
    },
    /// `close_effort` without an id while no effort is active.
    #[error("no effort is active; pass the id of the open effort to close")]
    NoActiveEffort,
    /// `close_effort` with a summary that is empty after trimming.
    #[error(
        "the summary for '{id}' is empty; give a summary, or omit it to use the extractive summary"
    )]
    EmptySummary {
        /// The effort's id.
        id: String,
    },
    /// The operation needs a raw log that is stored but not loaded. Hosts that open sessions
    /// from a store load it first (see `tools::logs_needed`); a model never sees
    /// this unless the host skipped that step.
    #[error("the raw log of '{id}' is stored but not loaded; load it before calling {operation}")]
    LogNotLoaded {
        /// The effort's id.
        id: String,
        /// The tool that needs it.
        operation: &'static str,
    },
    /// `search_efforts` with a query that has no searchable word.
    #[error("search query '{query}' has no searchable word (words of 3+ characters that are not stopwords, or an effort id)")]
    EmptyQuery {
        /// The query as given.
        query: String,
    },
    /// `recall` found nothing outside the context for its query.
    #[error("nothing stored outside the context matches '{query}'; everything that matches is already in the context, or try other words")]
    NothingToRecall {
        /// The query as given.
        query: String,
    },
    /// `recall` needs stored messages that are not in memory; a host that opened the session
    /// from a store reads them first (see `Session::messages_needed_for_tool`); a model never
    /// sees this when the host does.
    #[error("{count} stored messages to recall are not loaded; the host must read them from its store first (messages_needed_for_tool names them)")]
    MessagesNotLoaded {
        /// How many messages are missing.
        count: usize,
    },
}

/// Why a tool call could not be executed. Turned into `{"error": "..."}` for the model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ToolError {
    /// The model called a tool the engine does not offer.
    #[error("unknown tool '{name}'; available tools: {available}")]
    UnknownTool {
        /// The requested name.
        name: String,
        /// Comma-separated list of the offered tools.
        available: String,
    },
    /// The arguments were not a JSON object of the documented shape.
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool name.
        tool: String,
        /// What was wrong, as precise as the parser can say.
        reason: String,
    },
    /// The operation itself was refused.
    #[error(transparent)]
    Effort(#[from] EffortError),
    /// A pin or unpin was refused.
    #[error(transparent)]
    Pin(#[from] crate::pins::PinError),
    /// The session was asked to run a tool whose calls the host runs (its table entry says
    /// `Runs::Host`).
    #[error("the tool '{name}' is run by the host, not the session; hand its call to the host (the turn engine does, with Step::RunTool)")]
    RunsInHost {
        /// The tool's name.
        name: String,
    },
    /// A tool was added to a table that already offers one of that name.
    #[error("a tool named '{name}' is already offered; give the new tool another name")]
    NameTaken {
        /// The name both tools have.
        name: String,
    },
}

/// Why a turn could not begin or end.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TurnError {
    /// `begin_turn` while a turn is still open.
    #[error("turn {turn} is still in progress; call end_turn or abort_turn first")]
    AlreadyInTurn {
        /// The open turn's number.
        turn: u64,
    },
    /// `end_turn` or `abort_turn` without `begin_turn`.
    #[error("no turn is in progress; call begin_turn first")]
    NotInTurn,
    /// The turn's text would take the session past the most it may store; the turn did not
    /// begin (or, for an answer refused by `end_turn` or `Session::room_for_answer`, is still
    /// open).
    #[error(transparent)]
    SessionFull(#[from] crate::compaction::SessionFull),
}

/// A configuration value outside its valid range.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// A threshold below its minimum.
    #[error("{field} must be at least {min}, got {value}")]
    TooSmall {
        /// The field name as written in the configuration.
        field: &'static str,
        /// The smallest accepted value.
        min: i64,
        /// The value given.
        value: i64,
    },
    /// A threshold above what the engine supports.
    #[error("{field} must be at most {max}, got {value}")]
    TooLarge {
        /// The field name as written in the configuration.
        field: &'static str,
        /// The largest accepted value.
        max: i64,
        /// The value given.
        value: i64,
    },
    /// An encoding name that is not supported.
    #[error("unknown encoding '{0}'; supported: o200k_base, cl100k_base")]
    UnknownEncoding(String),
    /// The rank table of an encoding is neither compiled in nor installed by the host.
    #[error("the rank table of '{0}' is not loaded; load it first (the npm package: `await loadEncoding(\"{0}\")`)")]
    TableNotLoaded(String),
    /// The configuration document could not be parsed.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Why a session document could not be imported. Nothing is half-imported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SnapshotError {
    /// Not JSON, or not the documented shape.
    #[error("session document is not valid: {0}")]
    Malformed(String),
    /// A format this build does not know.
    #[error("session document has format '{found}', expected '{expected}'")]
    WrongFormat {
        /// The `format` field found.
        found: String,
        /// The format this build writes.
        expected: &'static str,
    },
    /// A version newer (or older) than this build can read.
    #[error(
        "session document version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// The version found.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The document parsed but breaks an invariant of the session model.
    #[error("session document is inconsistent: {0}")]
    Inconsistent(String),
    /// Its configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
}
