//! The stored records of a session: messages, efforts, and the messages a context is made of.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions and memory the engine gives the model.
    System,
    /// The person chatting.
    User,
    /// The model's answer.
    Assistant,
}

impl Role {
    /// The lowercase wire name (`system`, `user`, `assistant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One stored message of a raw log (an effort's or the ambient one).
///
/// Its token count is computed once, when it is stored, and kept with it: building a context
/// never tokenizes history again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Session-wide sequence number; unique and increasing in the order messages were stored.
    pub seq: u64,
    /// The turn during which the message was stored.
    pub turn: u64,
    /// Who wrote it.
    pub role: Role,
    /// The text exactly as written.
    pub content: String,
    /// Tokens of `content` in the session's encoding.
    pub tokens: u32,
    /// Milliseconds since the Unix epoch, as passed in by the caller (the core has no clock).
    pub at_ms: u64,
}

/// Which log a stored message belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "effort", rename_all = "snake_case")]
pub enum LogRef {
    /// The ambient log.
    Ambient,
    /// The raw log of the effort with this id.
    Effort(String),
}

/// A message of a built context, ready to be mapped onto a provider's wire format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextMessage {
    /// Who the message is from.
    pub role: Role,
    /// The text sent to the model.
    pub content: String,
}

/// Whether an effort is still being worked on. Expansion is deliberately not a status: it is a
/// transient view kept in the session's runtime state, so a reload never revives stale
/// expansions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EffortStatus {
    /// Its raw log is in the working context.
    Open,
    /// Its summary stands in for its raw log.
    Concluded,
}

/// A topic of the conversation with a natural end, and everything said while it was active.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effort {
    /// Slug derived from the name; unique within the session.
    pub id: String,
    /// The name as given to `open_effort`.
    pub name: String,
    /// Optional longer description given at opening.
    pub description: Option<String>,
    /// Open or concluded.
    pub status: EffortStatus,
    /// Turn during which it was opened.
    pub opened_turn: u64,
    /// The latest turn during which it was concluded, if it is concluded.
    pub concluded_turn: Option<u64>,
    /// Order of conclusion (session-wide counter), used to order summaries deterministically.
    pub concluded_seq: Option<u64>,
    /// The summary that stands in for the raw log once concluded. Shared, because undo and
    /// rewind records copy effort records on every turn that references them, and a summary
    /// with its keywords and search terms is most of a record.
    pub summary: Option<std::sync::Arc<Summary>>,
    /// The full raw log, in the order the messages were stored. Never truncated. Left out of
    /// the serialised form when empty (effort records of a store never carry it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// Header line that introduces the raw log in a context, counted once at opening.
    pub header: String,
    /// Tokens of `header`.
    pub header_tokens: u32,
    /// Tokens of the header plus every message: what an expansion loads.
    pub raw_tokens: u64,
    /// The last turn in which the effort was referenced (by id, by summary keywords, or by a
    /// tool that named it). Drives summary eviction; a conclusion counts as a reference, which
    /// gives a freshly concluded effort its grace period.
    pub last_referenced_turn: u64,
    /// Whether the summary has left working memory. Evicted efforts stay concluded, stored and
    /// searchable; only the working set changes.
    pub evicted: bool,
    /// Whether it was the summary token budget, not the eviction threshold, that took the
    /// summary out of working memory (the least recently referenced summaries leave first when
    /// the resident ones exceed the budget).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub evicted_over_budget: bool,
    /// Whether `messages` holds the whole raw log. Runtime state: a session opened from a
    /// store loads a concluded effort's log only when it is expanded or reopened.
    #[serde(skip)]
    pub log: LogState,
}

/// Whether an effort's raw log is in memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogState {
    /// `messages` is the whole raw log.
    #[default]
    Loaded,
    /// The log is stored but not loaded; `messages` is empty.
    NotLoaded {
        /// How many messages the stored log has.
        messages: u64,
    },
}

impl Effort {
    /// Tokens a context saves by showing this concluded effort's summary instead of its raw
    /// log: what an expansion adds, and what decay saves in each context after a collapse.
    pub fn raw_minus_summary_tokens(&self) -> u64 {
        let summary = self.summary.as_ref().map_or(0, |s| u64::from(s.tokens));
        self.raw_tokens.saturating_sub(summary)
    }

    /// Number of messages in the raw log, loaded or not.
    pub fn message_count(&self) -> u64 {
        match self.log {
            LogState::Loaded => self.messages.len() as u64,
            LogState::NotLoaded { messages } => messages,
        }
    }
}

impl Effort {
    /// A copy of everything but the raw log. Effort operations never change messages, so this
    /// is all an undo record needs, and it stays cheap however long the log is.
    pub fn clone_without_messages(&self) -> Effort {
        Effort {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            status: self.status,
            opened_turn: self.opened_turn,
            concluded_turn: self.concluded_turn,
            concluded_seq: self.concluded_seq,
            summary: self.summary.clone(),
            messages: Vec::new(),
            header: self.header.clone(),
            header_tokens: self.header_tokens,
            raw_tokens: self.raw_tokens,
            last_referenced_turn: self.last_referenced_turn,
            evicted: self.evicted,
            evicted_over_budget: self.evicted_over_budget,
            log: self.log,
        }
    }
}

/// Where a summary's text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummarySource {
    /// Written by the caller or the model.
    Provided,
    /// The engine's deterministic extractive fallback.
    Extractive,
}

/// A concluded effort's summary as it appears in working memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary text.
    pub text: String,
    /// Who produced it.
    pub source: SummarySource,
    /// The line placed in the context (`[Concluded effort: id] text`).
    pub rendered: String,
    /// Tokens of `rendered`, counted once at conclusion.
    pub tokens: u32,
    /// Salient keywords of the summary used for reference detection, sorted.
    pub keywords: Vec<String>,
    /// Words of the raw log that set it apart from the efforts concluded before it (at most
    /// [`crate::search::LOG_TERMS`], chosen when it was concluded). `search_efforts` indexes them
    /// with the summary, so an effort can be found by what was said in it, not only by the few
    /// words its summary kept. Not used for reference detection, which stays with what the
    /// model sees: the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
}

/// A tool the model may call: its name, when to call it, and the JSON Schema of its arguments.
/// The turn engine sends it as `ccm_provider::WireTool`, which serialises identically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The function name the model calls (`open_effort`, …).
    pub name: String,
    /// When the model should call it.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}
