//! # ccm-core
//!
//! Cognitive Context Management: a pure, deterministic engine that keeps an LLM conversation's
//! working context small, explainable and lossless.
//!
//! A conversation is split into **efforts**. An open effort keeps its raw log in context; a
//! concluded one is replaced by its summary; it can be expanded back and collapses by itself
//! after a few turns without reference. Summaries nobody mentions for a while, and ambient chat
//! beyond the last exchanges, leave working memory but stay stored and searchable. Nothing is
//! ever deleted: every mechanism only changes the working set, and [`Session::build_plan`] says
//! for every candidate why it is in the context or not.
//!
//! The crate has no I/O, no clock and no randomness: time and ids are passed in, and the same
//! state always gives a byte-identical context.
//!
//! ```
//! use ccm_core::{Config, Session};
//!
//! let mut session = Session::new(Config::default()).unwrap();
//! session.begin_turn("Let's work on the auth bug: users get 401 after an hour.", 1_000).unwrap();
//! session.execute_tool("open_effort", r#"{"name": "auth bug"}"#);
//! session.end_turn("Looks like the refresh token expires early.", 1_001).unwrap();
//!
//! session.begin_turn("Fixed it, the TTL was wrong. We're done.", 2_000).unwrap();
//! let close = session.execute_tool(
//!     "close_effort",
//!     r#"{"summary": "Fixed 401 errors: refresh token TTL was 1h, now 24h."}"#,
//! );
//! assert!(close.ok);
//! let report = session.end_turn("Great, concluded.", 2_001).unwrap();
//! assert!(report.banners[0].starts_with("--- Concluded effort: auth-bug ---"));
//!
//! // The raw log left the context; its summary stands in for it.
//! let plan = session.build_plan();
//! assert!(plan.included.iter().any(|item| item.id == "summary:auth-bug"));
//! assert!(plan.excluded.iter().any(|item| item.id == "effort:auth-bug"));
//! ```
#![deny(missing_docs)]

pub mod branch;
pub mod compaction;
pub mod components;
pub mod config;
pub mod error;
pub mod metrics;
pub mod model;
pub mod persistence;
pub mod pins;
pub mod plan;
pub mod prompt;
pub mod recall;
pub mod reference;
pub mod search;
pub mod session;
pub mod snapshot;
pub mod state;
pub mod telemetry;
pub mod tokens;
pub mod tools;

/// The specification's text rules (effort ids, keywords, stopwords, prepared text, the
/// extractive summary) live in the leaf crate `ccm-text`; they are the domain's words, so they
/// keep their place here.
pub use ccm_text as text;

pub use config::{Config, ContextMode, Profile, ReferenceRule, SearchRule, NO_BUDGET};
pub use error::{ConfigError, EffortError, SnapshotError, ToolError, TurnError};
pub use metrics::{DecayReport, DecayStats, EffortEvent, EventKind, TurnMetrics};
pub use model::{ContextMessage, Effort, EffortStatus, LogState, Message, Role, ToolDefinition};
pub use plan::{
    ContextPlan, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason, Section,
};
pub use session::{EffortState, Session, TurnReport};
#[cfg(feature = "embedded-tables")]
pub use tokens::default_counter;
pub use tokens::ExactCounter;
pub use tokens::{ApproximateCounter, Encoding, TokenCounter};
pub use tools::{tool_definitions, ToolOutcome};

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
