//! Branches: named timelines forked from a session at any recent turn.
//!
//! A branch is a session of its own, forked from its parent's state at the fork turn: every
//! piece of effort, pin, lease and decay state is copied at the fork, so nothing done on a
//! branch can expire, collapse or evict anything on the line it came from. Forking at an
//! earlier turn rewinds a copy with the per-turn deltas the session keeps for its last
//! [`Session::REWIND_TURNS`] turns.
//!
//! Trade-off, written down: a fork copies the parent's stored messages up to the fork turn
//! instead of sharing them, which costs memory proportional to that history. Sharing would need
//! persistent data structures throughout the session; branches are few and explored briefly,
//! so the copy keeps the model simple.

use crate::session::Session;
use serde::Serialize;
use std::collections::BTreeMap;
use thiserror::Error;

pub use crate::state::{BranchInfo, MAIN_BRANCH};

/// Why a branch operation was refused. Nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BranchError {
    /// A name that is empty or taken.
    #[error("branch name '{0}' is empty or already used")]
    BadName(String),
    /// No branch by that name.
    #[error("no branch named '{name}'; branches: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// The existing branches, comma-separated.
        known: String,
    },
    /// A fork turn in the future, or too far back to rewind.
    #[error("cannot fork at turn {turn}: {reason}")]
    BadTurn {
        /// The turn asked for.
        turn: u64,
        /// Why.
        reason: String,
    },
    /// The session is in a state that cannot be forked (a turn in progress, a partly loaded
    /// session).
    #[error("cannot fork now: {0}")]
    NotNow(String),
    /// The current branch or the main line cannot be removed.
    #[error("{0}")]
    Protected(String),
}

/// One line of [`Branches::list`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BranchSummary {
    /// The branch.
    pub info: BranchInfo,
    /// Its latest turn.
    pub head_turn: u64,
    /// Messages stored on it.
    pub stored_messages: usize,
    /// Whether it is the current branch.
    pub current: bool,
}

impl Session {
    /// This session's branch.
    pub fn branch(&self) -> &BranchInfo {
        &self.branch
    }

    /// The earliest turn this session can be forked at.
    pub fn earliest_fork_turn(&self) -> u64 {
        self.history
            .rewind
            .front()
            .map_or(self.turn, |delta| delta.turn.saturating_sub(1))
    }

    /// A new branch of this session as it was at the end of `turn` (the current turn if equal).
    /// The session itself is not changed.
    ///
    /// # Errors
    /// [`BranchError::BadTurn`] for a turn in the future or earlier than
    /// [`Session::earliest_fork_turn`]; [`BranchError::NotNow`] during a turn or for a session
    /// that is only partly loaded (its rewound turns may not be in memory).
    pub fn fork_at(&self, turn: u64, name: &str) -> Result<Session, BranchError> {
        if self.in_turn() {
            return Err(BranchError::NotNow(
                "a turn is in progress; end or abort it first".to_string(),
            ));
        }
        if !self.is_fully_loaded() {
            return Err(BranchError::NotNow(
                "the session is only partly loaded (opened from storage with its working set); a fork copies every log, so load them all first".to_string(),
            ));
        }
        if turn > self.turn {
            return Err(BranchError::BadTurn {
                turn,
                reason: format!("the session is at turn {}", self.turn),
            });
        }
        if turn < self.earliest_fork_turn() {
            // What rewinding needs is kept in memory for the turns run since the session was
            // created, opened or imported, up to the last REWIND_TURNS; it is not stored.
            let reason = if self.history.rewind.len() < Session::REWIND_TURNS {
                format!(
                    "turns before {} ran before this session was opened or imported, and what rewinding needs is kept in memory only, not stored; turn {} or later can be forked",
                    self.earliest_fork_turn(),
                    self.earliest_fork_turn()
                )
            } else {
                format!(
                    "only the last {} turns can be rewound; the earliest is turn {}",
                    Session::REWIND_TURNS,
                    self.earliest_fork_turn()
                )
            };
            return Err(BranchError::BadTurn { turn, reason });
        }
        let mut fork = self.clone();
        while fork.turn > turn {
            let delta = fork
                .history
                .rewind
                .pop_back()
                .expect("earliest_fork_turn guarantees a delta per rewound turn");
            fork.rewind_delta(delta);
        }
        fork.branch = BranchInfo {
            name: name.to_string(),
            parent: Some(self.branch.name.clone()),
            fork_turn: Some(turn),
        };
        // A fork is a new line: its first save is a full write under its own name.
        fork.saves.revision = 0;
        fork.saves.dirty_efforts.clear();
        fork.saves.held_positions.clear();
        fork.saves.missing_messages.clear();
        fork.saves.unsaved_messages.clear();
        fork.saves.history_saved = 0;
        Ok(fork)
    }
}

/// A session's branches, one of them current.
#[derive(Debug, Clone)]
pub struct Branches {
    sessions: BTreeMap<String, Session>,
    current: String,
}

impl Branches {
    /// Starts with `session` as the only branch (its own name, normally `main`).
    pub fn new(session: Session) -> Branches {
        let current = session.branch().name.clone();
        let mut sessions = BTreeMap::new();
        sessions.insert(current.clone(), session);
        Branches { sessions, current }
    }

    fn known(&self) -> String {
        self.sessions.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The current branch's session.
    pub fn current(&self) -> &Session {
        &self.sessions[&self.current]
    }

    /// The current branch's session, to drive turns on it.
    pub fn current_mut(&mut self) -> &mut Session {
        self.sessions
            .get_mut(&self.current)
            .expect("the current branch always exists")
    }

    /// A branch by name.
    pub fn get(&self, name: &str) -> Option<&Session> {
        self.sessions.get(name)
    }

    /// Forks the current branch at `turn` into a new branch called `name` and makes it current.
    ///
    /// # Errors
    /// [`BranchError::BadName`] for an empty or used name, and the errors of
    /// [`Session::fork_at`].
    pub fn fork(&mut self, name: &str, turn: u64) -> Result<&Session, BranchError> {
        let name = name.trim();
        if name.is_empty() || self.sessions.contains_key(name) {
            return Err(BranchError::BadName(name.to_string()));
        }
        let fork = self.current().fork_at(turn, name)?;
        self.sessions.insert(name.to_string(), fork);
        self.current = name.to_string();
        Ok(self.current())
    }

    /// Makes another branch current.
    ///
    /// # Errors
    /// [`BranchError::Unknown`] for a name that is not a branch.
    pub fn switch(&mut self, name: &str) -> Result<&Session, BranchError> {
        if !self.sessions.contains_key(name) {
            return Err(BranchError::Unknown {
                name: name.to_string(),
                known: self.known(),
            });
        }
        self.current = name.to_string();
        Ok(self.current())
    }

    /// Every branch, by name.
    pub fn list(&self) -> Vec<BranchSummary> {
        self.sessions
            .iter()
            .map(|(name, session)| BranchSummary {
                info: session.branch().clone(),
                head_turn: session.turn(),
                stored_messages: session.stored_message_count(),
                current: *name == self.current,
            })
            .collect()
    }

    /// Removes a branch that is neither current nor the main line. Its session is returned, so
    /// nothing is lost unless the caller drops it.
    ///
    /// # Errors
    /// [`BranchError::Protected`] for the current or main branch, [`BranchError::Unknown`]
    /// for a name that is not a branch.
    pub fn remove(&mut self, name: &str) -> Result<Session, BranchError> {
        if name == self.current || name == MAIN_BRANCH {
            return Err(BranchError::Protected(format!(
                "'{name}' is the current or main branch and cannot be removed"
            )));
        }
        self.sessions
            .remove(name)
            .ok_or_else(|| BranchError::Unknown {
                name: name.to_string(),
                known: self.known(),
            })
    }
}
