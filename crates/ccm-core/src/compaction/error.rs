//! Errors of the compaction components. Every message names the field or value at fault and
//! says what would be accepted, so the person configuring CCM (or the host integrating it) can
//! act on it without reading the source.

use super::numbers::thousands;
use thiserror::Error;

/// A compaction setting outside its valid range, or settings that contradict each other.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompactionConfigError {
    /// A numeric setting outside its range.
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// The field name as written in the configuration.
        field: &'static str,
        /// The smallest accepted value.
        min: i64,
        /// The largest accepted value.
        max: i64,
        /// The value given.
        value: i64,
    },
    /// The three thresholds are not strictly increasing.
    #[error(
        "compaction thresholds must increase strictly (soft < hard < emergency), got soft \
         {soft}‰, hard {hard}‰, emergency {emergency}‰"
    )]
    ThresholdsNotIncreasing {
        /// The soft threshold in per-mille.
        soft: u16,
        /// The hard threshold in per-mille.
        hard: u16,
        /// The emergency threshold in per-mille.
        emergency: u16,
    },
    /// The emergency level would keep more recent messages than the hard level.
    #[error(
        "keep_last_messages_emergency ({emergency}) must not exceed keep_last_messages_hard \
         ({hard}): the emergency level is the more aggressive one"
    )]
    EmergencyKeepsMore {
        /// Messages the hard level keeps.
        hard: u32,
        /// Messages the emergency level keeps.
        emergency: u32,
    },
    /// A preset name that is not known.
    #[error(
        "unknown compaction preset '{0}'; expected standard (60/75/90 %) or early (50/65/80 %)"
    )]
    UnknownPreset(String),
    /// The configuration document could not be parsed.
    #[error("invalid compaction configuration: {0}")]
    Invalid(String),
}

impl From<CompactionConfigError> for crate::error::ConfigError {
    fn from(error: CompactionConfigError) -> Self {
        crate::error::ConfigError::Invalid(error.to_string())
    }
}

/// A usage measurement that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UsageError {
    /// A context window of zero tokens: usage would be a division by zero.
    #[error("the context window must be at least 1 token, got 0")]
    ZeroWindow,
}

/// Why an attachment could not be created.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AttachmentError {
    /// An id that is empty after trimming.
    #[error("an attachment needs a non-empty id")]
    EmptyId,
    /// A name that is empty after trimming.
    #[error("attachment '{id}' needs a non-empty name")]
    EmptyName {
        /// The attachment's id.
        id: String,
    },
    /// A caller-provided summary that is empty after trimming. Omit the summary to get the
    /// extractive one instead.
    #[error(
        "the summary given for attachment '{id}' is empty; give a summary, or omit it to use the \
         extractive summary"
    )]
    EmptySummary {
        /// The attachment's id.
        id: String,
    },
    /// Attaching outside a turn: an attachment goes with the user's message.
    #[error("attachments go with the user's message: begin the turn first")]
    NoTurn,
    /// An id that names no attachment.
    #[error("no attachment with id '{id}'")]
    Unknown {
        /// The id as given.
        id: String,
    },
    /// The session's attachments would pass [`MAX_SESSION_ATTACHMENT_CHARS`]: its export
    /// could then be longer than an import accepts.
    #[error(
        "attachment '{name}' would bring this session's attachments to {} characters, more than the {} one session may hold (so that its export stays within the {} characters an import accepts); nothing was attached. Start a new session for more documents, or attach a shorter excerpt",
        thousands(*.total as u64),
        thousands(MAX_SESSION_ATTACHMENT_CHARS as u64),
        thousands(MAX_IMPORT_DOCUMENT_CHARS as u64)
    )]
    SessionFull {
        /// The attachment's name.
        name: String,
        /// The attachments' characters with this one, as JavaScript counts them.
        total: usize,
    },
    /// The attachment would take the session's stored text past
    /// [`MAX_SESSION_STORED_CHARS`] (messages and attachments together).
    #[error(transparent)]
    SessionStorageFull(#[from] SessionFull),
}

/// The longest session document an import accepts, in characters (the library's
/// `Session.fromJSON` and `importSession`, and the app's import). Reading one that long takes
/// about 15 seconds and 750 MB in the npm package (measured at 62 million characters), so the
/// limit is not raised; a session is kept from growing past it instead.
pub const MAX_IMPORT_DOCUMENT_CHARS: usize = 64_000_000;

/// The most characters of attachment text one session may hold: the import limit less
/// 16,000,000 characters for the conversation, its summaries and the document's structure.
/// Attachments are what grows a session fastest (four million characters each by default),
/// and every attachment is in memory, so this is checked where one is added.
pub const MAX_SESSION_ATTACHMENT_CHARS: usize = 48_000_000;

/// The most characters one session may store, counted as its export would write them
/// (messages, attachments, per-turn records and effort records, with their JSON). It is the
/// import limit less 2,000,000 characters: room for the counts that are estimated (a session
/// opened from a store counts what it never read as at most 1,000,000 characters, see
/// `Session::stored_chars`) and for the document's own structure. Checked at every addition,
/// so that whatever a session stores can be exported and imported again.
pub const MAX_SESSION_STORED_CHARS: u64 = 62_000_000;

/// A stored header records what its session stores (its running count) once that reaches
/// this many characters; a header without a count belongs to a session that stored fewer (or
/// to one stored before the count existed), and is counted as this many. Below it, headers
/// stay as they were before the count existed.
pub const RECORDED_FROM_CHARS: u64 = 1_000_000;

/// Room a turn keeps for the model's answer and the tool texts it stores, checked when the
/// turn begins and when something is attached: the model's answer is at most 1,000,000
/// characters and its tool-call arguments at most 1,000,000 per answer (ccm-provider's output
/// limits), so a turn that begins always has room to end.
pub const ROOM_FOR_ANSWER_CHARS: u64 = 2_000_000;

/// A change that would take a session past [`MAX_SESSION_STORED_CHARS`]. Nothing was changed;
/// the session can still be read, exported and searched.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{what} would bring this session to {} characters stored{}, more than the {} one session may hold (so that its export stays within the {} characters an import accepts); nothing was changed. Start a new session to go on; this one can still be read, exported and searched",
    thousands(*.total),
    if *.room_for_answer { " with room kept for the model's answer" } else { "" },
    thousands(MAX_SESSION_STORED_CHARS),
    thousands(MAX_IMPORT_DOCUMENT_CHARS as u64)
)]
pub struct SessionFull {
    /// What was refused, in words: "this message of 2,000 characters", "attachment 'a.txt'".
    pub what: String,
    /// The characters the session would store with it, counted as its export writes them.
    pub total: u64,
    /// Whether `total` includes [`ROOM_FOR_ANSWER_CHARS`].
    pub room_for_answer: bool,
}

/// Why relevance scores could not be turned into a selection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RelevanceError {
    /// The candidate and score lists have different lengths.
    #[error("{candidates} candidates were given but {scores} scores; every candidate needs exactly one score")]
    LengthMismatch {
        /// Number of candidates.
        candidates: usize,
        /// Number of scores.
        scores: usize,
    },
    /// A score that is NaN or infinite cannot be ranked.
    #[error("the score of candidate {index} is not a finite number ({value})")]
    NonFiniteScore {
        /// Position of the candidate.
        index: usize,
        /// The score as text (`NaN`, `inf`, `-inf`).
        value: String,
    },
    /// Per-mille above 1000.
    #[error("keep fraction must be at most 1000‰, got {0}‰")]
    FractionTooLarge(u16),
}

/// What went wrong with embeddings in the cache: vectors that do not fit it, or a key without
/// one. (The endpoint's own errors, about its request and response JSON, are
/// `ccm_provider::EmbeddingsEndpointError`.) The messages quote what was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EmbeddingError {
    /// Embeddings cannot be used as configured (for example, they are not enabled).
    #[error("the embeddings endpoint is misconfigured: {0}")]
    InvalidConfig(String),
    /// Fewer or more vectors than texts in the batch.
    #[error("the embeddings response has {got} vectors for {expected} texts")]
    CountMismatch {
        /// Texts in the batch.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// A vector whose length differs from the others or from the cache's.
    #[error("embedding {position} has {got} dimensions, expected {expected}")]
    DimensionMismatch {
        /// Which vector: `index 3`, `seq 42` or `query`.
        position: String,
        /// The expected number of dimensions.
        expected: usize,
        /// The number found.
        got: usize,
    },
    /// A vector with no dimensions, or with a value that is not a finite number.
    #[error("embedding {position} is unusable: {reason}")]
    BadVector {
        /// Which vector.
        position: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Vectors that do not belong to the batch they are applied to.
    #[error("the embeddings response was built for another batch ({0})")]
    WrongBatch(String),
    /// Scoring a key that has no cached vector yet.
    #[error("no embedding is cached for seq {seq}; request it first")]
    NotCached {
        /// The missing key.
        seq: u64,
    },
}

/// Why a rolling summary could not be recorded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RollingSummaryError {
    /// The model returned an empty summary. An empty summary never replaces history: fall back
    /// to the extractive summary.
    #[error("the rolling summary is empty; use the extractive fallback instead")]
    Empty,
    /// A summary that covers no stored message.
    #[error("a rolling summary must cover at least one stored message")]
    CoversNothing,
}

/// Why a compaction could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompactionError {
    /// Two working items share an id.
    #[error("working item id '{0}' appears twice; ids must be unique")]
    DuplicateId(String),
    /// Precomputed relevance scores that leave out a candidate.
    #[error("no relevance score was given for candidate '{0}'; give one per ambient item or use the lexical model")]
    MissingScore(String),
    /// Scores that cannot be ranked.
    #[error(transparent)]
    Relevance(#[from] RelevanceError),
    /// A usage that cannot be computed.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// More than one movable rolling summary in the working set; there is only ever one.
    #[error("the working set holds more than one rolling summary ({}); fold them into one", .0.join(", "))]
    MultipleRollingSummaries(Vec<String>),
    /// A rolling summary given for a plan that replaces no history, a plan that needs one
    /// finished without it, or a summary of other messages than planned.
    #[error("{0}")]
    SummaryMismatch(String),
    /// The rolling summary is not smaller than the history it would replace.
    #[error(
        "the rolling summary has {summary_tokens} tokens but replaces only {replaced_tokens}; \
         use the extractive summary, or finish the plan without the rolling summary"
    )]
    SummaryTooLarge {
        /// Tokens of the summary.
        summary_tokens: u64,
        /// Tokens of what it would replace.
        replaced_tokens: u64,
    },
}
