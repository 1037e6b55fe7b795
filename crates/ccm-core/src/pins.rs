//! Pins: items the user or the model asks to keep in context.
//!
//! - **Sticky** pins are the user's: always included (when they fit the budget on their own),
//!   never expire. Only a user makes something sticky.
//! - **Leased** pins are added by the model or promoted automatically. They hold for a number
//!   of turns — counted only on turns where the item was actually included — or for as long as
//!   a task (an effort) stays open, and all leased items together are capped by
//!   `leased_token_budget`.
//! - **Ephemeral** pins hold for one request. Items the planner retrieves on its own in Light or
//!   Heavy mode are ephemeral; one that keeps being referenced is promoted to leased.
//!
//! A pin's target is a plan candidate id: `summary:<effort>`, `effort:<effort>` (the raw log)
//! or `ambient:<turn>` (an ambient exchange).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Turns a promoted or model-made lease lasts when no length is given.
pub const DEFAULT_LEASE_TURNS: u32 = 5;
/// References (in separate turns) after which an ephemeral item is promoted to leased.
pub const PROMOTE_AFTER_REFERENCES: u32 = 2;
/// Longest lease the model may ask for: longer holds are the user's call (a sticky pin).
pub const MAX_LEASE_TURNS: u32 = 50;

/// How long a pin holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinKind {
    /// Always in, never expires; user pins only.
    Sticky,
    /// Holds for a number of included turns or while a task is open.
    Leased,
    /// Holds for one request.
    Ephemeral,
}

/// Who made a pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinOrigin {
    /// The person, through the API or the app.
    User,
    /// The model, through the `pin_context` tool.
    Model,
    /// The planner (automatic retrieval and promotion).
    Auto,
}

/// What ends a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum LeaseScope {
    /// Ends after this many more turns in which the item is included.
    Turns {
        /// Included turns left.
        remaining: u32,
    },
    /// Ends when this effort is no longer open.
    Task {
        /// The effort's id.
        effort: String,
    },
}

/// A pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Session-wide number.
    pub id: u64,
    /// The candidate id it keeps in context.
    pub target: String,
    /// How long it holds.
    pub kind: PinKind,
    /// Who made it.
    pub origin: PinOrigin,
    /// The lease, for leased pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseScope>,
    /// Turn it was made in.
    pub created_turn: u64,
    /// Turns in which its target was referenced while pinned (drives promotion).
    pub references: u32,
}

/// What a caller asks for when pinning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRequest {
    /// The candidate id to keep in context.
    pub target: String,
    /// How long it should hold.
    pub kind: PinKind,
    /// For leased pins: included turns it lasts ([`DEFAULT_LEASE_TURNS`] if absent).
    #[serde(default)]
    pub ttl_turns: Option<u32>,
    /// For leased pins: an effort whose end ends the lease, instead of a turn count.
    #[serde(default)]
    pub task: Option<String>,
}

/// Why a pin or unpin was refused. Nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PinError {
    /// The target is not a candidate this session has.
    #[error("cannot pin '{target}': {reason}")]
    InvalidTarget {
        /// The target as given.
        target: String,
        /// Why, e.g. `no effort with id 'x'`.
        reason: String,
    },
    /// The caller may not make or remove this kind of pin.
    #[error("{0}")]
    NotAllowed(String),
    /// Nothing is pinned under that id or target.
    #[error("nothing is pinned as '{0}'")]
    NotPinned(String),
}
