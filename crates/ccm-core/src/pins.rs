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

use crate::model::EffortStatus;
use crate::session::Session;
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

impl Session {
    /// The pins in creation order.
    pub fn pins(&self) -> &[Pin] {
        &self.pins.list
    }

    /// The pin on a target, if any.
    pub fn pin_for(&self, target: &str) -> Option<&Pin> {
        self.pins.on(target)
    }

    /// Checks that a target names something this session can put in context.
    fn check_pin_target(&self, target: &str) -> Result<(), PinError> {
        let invalid = |reason: String| PinError::InvalidTarget {
            target: target.to_string(),
            reason,
        };
        let (kind, rest) = target.split_once(':').ok_or_else(|| {
            invalid(
                "targets look like summary:<effort>, effort:<effort> or ambient:<turn>".to_string(),
            )
        })?;
        match kind {
            "summary" | "effort" => {
                let effort = self
                    .effort(rest)
                    .ok_or_else(|| invalid(format!("no effort with id '{rest}'")))?;
                if kind == "summary" && effort.status != EffortStatus::Concluded {
                    return Err(invalid(format!(
                        "'{rest}' is open, so it has no summary yet; pin effort:{rest} to keep its log"
                    )));
                }
                Ok(())
            }
            "ambient" => {
                let turn: u64 = rest
                    .parse()
                    .map_err(|_| invalid(format!("'{rest}' is not a turn number")))?;
                if self.ambient.messages.iter().any(|m| m.turn == turn) {
                    Ok(())
                } else {
                    Err(invalid(format!("turn {turn} has no loaded ambient exchange")))
                }
            }
            other => Err(invalid(format!(
                "unknown kind '{other}'; targets look like summary:<effort>, effort:<effort> or ambient:<turn>"
            ))),
        }
    }

    /// Pins a target on behalf of `origin`. Pinning a target that is already pinned updates
    /// that pin (a sticky pin is never weakened).
    ///
    /// # Errors
    /// [`PinError::InvalidTarget`] for an unknown target; [`PinError::NotAllowed`] when the
    /// model asks for anything but a lease, or for a lease longer than [`MAX_LEASE_TURNS`].
    pub fn pin(&mut self, request: PinRequest, origin: PinOrigin) -> Result<Pin, PinError> {
        let target = request.target.trim().to_string();
        self.check_pin_target(&target)?;
        if origin != PinOrigin::User && request.kind == PinKind::Sticky {
            return Err(PinError::NotAllowed(
                "only the user can make a sticky pin; ask for a lease (ttl_turns) instead"
                    .to_string(),
            ));
        }
        if origin == PinOrigin::Model && request.kind != PinKind::Leased {
            return Err(PinError::NotAllowed(
                "the model can only make leased pins".to_string(),
            ));
        }
        let lease = match request.kind {
            PinKind::Leased => Some(match (&request.task, request.ttl_turns) {
                (Some(task), _) => {
                    let effort = self.effort(task).ok_or_else(|| PinError::InvalidTarget {
                        target: target.clone(),
                        reason: format!("the task effort '{task}' does not exist"),
                    })?;
                    if effort.status != EffortStatus::Open {
                        return Err(PinError::InvalidTarget {
                            target: target.clone(),
                            reason: format!("the task effort '{task}' is not open"),
                        });
                    }
                    LeaseScope::Task {
                        effort: effort.id.clone(),
                    }
                }
                (None, Some(0)) => {
                    return Err(PinError::NotAllowed(
                        "a lease must last at least one turn".to_string(),
                    ))
                }
                (None, Some(turns)) if origin == PinOrigin::Model && turns > MAX_LEASE_TURNS => {
                    return Err(PinError::NotAllowed(format!(
                        "a lease from the model lasts at most {MAX_LEASE_TURNS} turns; longer holds are the user's call"
                    )))
                }
                (None, turns) => LeaseScope::Turns {
                    remaining: turns.unwrap_or(DEFAULT_LEASE_TURNS),
                },
            }),
            _ => None,
        };
        let turn = self.turn;
        if let Some(existing) = self.pins.list.iter_mut().find(|p| p.target == target) {
            if existing.kind == PinKind::Sticky && request.kind != PinKind::Sticky {
                return Ok(existing.clone());
            }
            existing.kind = request.kind;
            existing.lease = lease;
            existing.origin = origin;
            return Ok(existing.clone());
        }
        let pin = Pin {
            id: self.pins.next_id,
            target,
            kind: request.kind,
            origin,
            lease,
            created_turn: turn,
            references: 0,
        };
        self.pins.next_id += 1;
        self.pins.list.push(pin.clone());
        Ok(pin)
    }

    /// Removes the pin on a target (or with the id `pin:<n>`) on behalf of `origin`.
    ///
    /// # Errors
    /// [`PinError::NotPinned`] when nothing matches; [`PinError::NotAllowed`] when the model
    /// tries to remove a pin that is not a lease.
    pub fn unpin(&mut self, target_or_id: &str, origin: PinOrigin) -> Result<Pin, PinError> {
        let key = target_or_id.trim();
        let position = self
            .pins
            .list
            .iter()
            .position(|p| p.target == key || format!("pin:{}", p.id) == key)
            .ok_or_else(|| PinError::NotPinned(key.to_string()))?;
        if origin == PinOrigin::Model && self.pins.list[position].kind != PinKind::Leased {
            return Err(PinError::NotAllowed(format!(
                "'{key}' is pinned by the user; only the user can unpin it"
            )));
        }
        Ok(self.pins.list.remove(position))
    }
}
