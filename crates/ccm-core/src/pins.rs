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
//!
//! This module holds the pins of a session ([`Pins`]) and every rule about them: who may make
//! which kind, how long a lease lasts, how a pin ends, promotion, activation. Two parts live
//! elsewhere because they read more than the pins: `session/pins.rs` checks that a target
//! names something the session has (the efforts, the ambient log) and records the banner, and
//! the planner's `plan/pinned.rs` places the pinned items in a plan.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
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

/// The pins of a session and the activation scores of its candidates. Small (a handful of
/// pins, the recently included items), so an undo record copies it whole. Read it through
/// [`crate::Session::pins`]; every change goes through the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Pins {
    /// Pins in creation order.
    list: Vec<Pin>,
    /// The number of the next pin.
    next_id: u64,
    /// Leases that ran out at the end of the last turn (reported once, as `ttl_expired`).
    expired: Vec<Pin>,
    /// Activation score per candidate id, in thousandths.
    activation: BTreeMap<String, u32>,
}

impl Default for Pins {
    fn default() -> Self {
        Pins {
            list: Vec::new(),
            next_id: 1,
            expired: Vec::new(),
            activation: BTreeMap::new(),
        }
    }
}

impl Pins {
    /// The pins in creation order.
    pub fn all(&self) -> &[Pin] {
        &self.list
    }

    /// The pin on a target, if any.
    pub fn on(&self, target: &str) -> Option<&Pin> {
        self.list.iter().find(|p| p.target == target)
    }

    /// Leases that ran out at the end of the last turn.
    pub(crate) fn expired(&self) -> &[Pin] {
        &self.expired
    }

    /// The number the next pin gets.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Activation per candidate id, in thousandths.
    pub(crate) fn activation(&self) -> &BTreeMap<String, u32> {
        &self.activation
    }

    /// The activation of a candidate (0 when it has none).
    pub(crate) fn activation_of(&self, id: &str) -> u32 {
        self.activation.get(id).copied().unwrap_or(0)
    }

    /// Whether `origin` may ask for a pin of `kind`: only the user makes sticky pins, and the
    /// model only leases.
    pub(crate) fn check_kind(kind: PinKind, origin: PinOrigin) -> Result<(), PinError> {
        if origin != PinOrigin::User && kind == PinKind::Sticky {
            return Err(PinError::NotAllowed(
                "only the user can make a sticky pin; ask for a lease (ttl_turns) instead"
                    .to_string(),
            ));
        }
        if origin == PinOrigin::Model && kind != PinKind::Leased {
            return Err(PinError::NotAllowed(
                "the model can only make leased pins".to_string(),
            ));
        }
        Ok(())
    }

    /// The lease of `turns` included turns ([`DEFAULT_LEASE_TURNS`] when absent) that `origin`
    /// may have: at least one turn, and at most [`MAX_LEASE_TURNS`] from the model.
    pub(crate) fn lease_of_turns(
        turns: Option<u32>,
        origin: PinOrigin,
    ) -> Result<LeaseScope, PinError> {
        match turns {
            Some(0) => Err(PinError::NotAllowed(
                "a lease must last at least one turn".to_string(),
            )),
            Some(turns) if origin == PinOrigin::Model && turns > MAX_LEASE_TURNS => {
                Err(PinError::NotAllowed(format!(
                    "a lease from the model lasts at most {MAX_LEASE_TURNS} turns; longer holds are the user's call"
                )))
            }
            turns => Ok(LeaseScope::Turns {
                remaining: turns.unwrap_or(DEFAULT_LEASE_TURNS),
            }),
        }
    }

    /// Pins `target` (already checked against the session), or changes the pin already on it;
    /// a sticky pin is never weakened, so a weaker request leaves it as it is.
    pub(crate) fn put(
        &mut self,
        target: String,
        kind: PinKind,
        origin: PinOrigin,
        lease: Option<LeaseScope>,
        turn: u64,
    ) -> Pin {
        if let Some(existing) = self.list.iter_mut().find(|p| p.target == target) {
            if existing.kind == PinKind::Sticky && kind != PinKind::Sticky {
                return existing.clone();
            }
            existing.kind = kind;
            existing.lease = lease;
            existing.origin = origin;
            return existing.clone();
        }
        self.number_and_push(Pin {
            id: 0,
            target,
            kind,
            origin,
            lease,
            created_turn: turn,
            references: 0,
        })
    }

    /// Gives a new pin the next number and adds it.
    fn number_and_push(&mut self, mut pin: Pin) -> Pin {
        pin.id = self.next_id;
        self.next_id += 1;
        self.list.push(pin.clone());
        pin
    }

    /// Removes the pin on a target (or with the id `pin:<n>`) on behalf of `origin`.
    ///
    /// # Errors
    /// [`PinError::NotPinned`] when nothing matches; [`PinError::NotAllowed`] when the model
    /// tries to remove a pin that is not a lease.
    pub(crate) fn remove(
        &mut self,
        target_or_id: &str,
        origin: PinOrigin,
    ) -> Result<Pin, PinError> {
        let key = target_or_id.trim();
        let position = self
            .list
            .iter()
            .position(|p| p.target == key || format!("pin:{}", p.id) == key)
            .ok_or_else(|| PinError::NotPinned(key.to_string()))?;
        if origin == PinOrigin::Model && self.list[position].kind != PinKind::Leased {
            return Err(PinError::NotAllowed(format!(
                "'{key}' is pinned by the user; only the user can unpin it"
            )));
        }
        Ok(self.list.remove(position))
    }

    /// Ages the pins after a turn whose request included `included`:
    ///
    /// - a turn-counted lease loses one turn only if its item was in the request;
    /// - a task lease ends when `task_open` says its effort is no longer open;
    /// - an ephemeral pin ends after its one request, unless `referenced` says its target was
    ///   referenced again, which promotes it to a lease once it has been referenced in
    ///   [`PROMOTE_AFTER_REFERENCES`] turns.
    ///
    /// The leases that ran out are kept as [`Pins::expired`] until the next turn.
    pub(crate) fn age(
        &mut self,
        included: &BTreeSet<&str>,
        task_open: impl Fn(&str) -> bool,
        referenced: impl Fn(&str) -> bool,
    ) {
        let mut kept: Vec<Pin> = Vec::with_capacity(self.list.len());
        let mut expired: Vec<Pin> = Vec::new();
        for mut pin in std::mem::take(&mut self.list) {
            match (pin.kind, pin.lease.clone()) {
                (PinKind::Sticky, _) => kept.push(pin),
                (PinKind::Leased, Some(LeaseScope::Turns { remaining })) => {
                    let remaining = if included.contains(pin.target.as_str()) {
                        remaining.saturating_sub(1)
                    } else {
                        remaining
                    };
                    if remaining == 0 {
                        expired.push(pin);
                    } else {
                        pin.lease = Some(LeaseScope::Turns { remaining });
                        kept.push(pin);
                    }
                }
                (PinKind::Leased, Some(LeaseScope::Task { effort })) => {
                    if task_open(&effort) {
                        kept.push(pin);
                    } else {
                        expired.push(pin);
                    }
                }
                (PinKind::Leased, None) => expired.push(pin),
                (PinKind::Ephemeral, _) => {
                    if referenced(&pin.target) {
                        pin.references += 1;
                        if pin.references >= PROMOTE_AFTER_REFERENCES {
                            pin.kind = PinKind::Leased;
                            pin.lease = Some(LeaseScope::Turns {
                                remaining: DEFAULT_LEASE_TURNS,
                            });
                        }
                        kept.push(pin);
                    }
                    // An ephemeral pin that was not referenced simply ends: that is its nature,
                    // not an expiry worth reporting.
                }
            }
        }
        self.list = kept;
        self.expired = expired;
    }

    /// Keeps an automatically retrieved item that was referenced for the next request too: an
    /// ephemeral pin the planner made, counting this turn's reference.
    pub(crate) fn keep_retrieved(&mut self, target: &str, turn: u64) {
        self.number_and_push(Pin {
            id: 0,
            target: target.to_string(),
            kind: PinKind::Ephemeral,
            origin: PinOrigin::Auto,
            lease: None,
            created_turn: turn,
            references: 1,
        });
    }

    /// Activation after a turn: every score decays by a fifth, each included summary or log
    /// gains 1.0, and each mentioned effort's summary and log gain 2.0; scores below 0.05 are
    /// dropped.
    pub(crate) fn update_activation<'a>(
        &mut self,
        included: impl Iterator<Item = &'a str>,
        mentioned_efforts: &[String],
    ) {
        for value in self.activation.values_mut() {
            *value = *value * 4 / 5;
        }
        for id in included {
            if id.starts_with("summary:") || id.starts_with("effort:") {
                *self.activation.entry(id.to_string()).or_insert(0) += 1000;
            }
        }
        for id in mentioned_efforts {
            for prefix in ["summary", "effort"] {
                *self.activation.entry(format!("{prefix}:{id}")).or_insert(0) += 2000;
            }
        }
        self.activation.retain(|_, value| *value >= 50);
    }

    /// Takes in stored pins: their numbering, the pins and the activation. A pin numbered at or
    /// above the stored next number is reported to `problem` (which refuses or repairs) and the
    /// numbering moves past it, so no two pins share a number.
    pub(crate) fn restore<E>(
        &mut self,
        next_id: u64,
        pins: Vec<Pin>,
        activation: BTreeMap<String, u32>,
        mut problem: impl FnMut(String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.next_id = next_id.max(1);
        for pin in pins {
            if pin.id >= self.next_id {
                problem(format!(
                    "pin {} is not below next_pin_id {}",
                    pin.id, self.next_id
                ))?;
                self.next_id = pin.id + 1;
            }
            self.list.push(pin);
        }
        self.activation = activation;
        Ok(())
    }
}
