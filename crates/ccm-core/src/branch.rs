//! Branches: named timelines forked from a session at any earlier turn.
//!
//! A branch is a session of its own, forked from its parent's state at the fork turn: every
//! piece of effort, pin, lease and decay state is copied at the fork, so nothing done on a
//! branch can expire, collapse or evict anything on the line it came from.
//!
//! [`Session::fork`] forks at any turn of a fully loaded session, in one of two ways, and says
//! which ([`ForkMethod`]):
//!
//! - **Rewound** (exact): within the rewind window, [`Session::fork_at`] rewinds a copy with
//!   the per-turn deltas the session keeps in memory for the turns run since it was created,
//!   opened or imported, up to its last [`Session::REWIND_TURNS`]. The fork is the session
//!   exactly as it was at the end of the fork turn.
//! - **Rebuilt** (approximate working set): before that window, [`Session::rebuild_at`]
//!   rebuilds the state from what the session holds. Nothing is ever deleted and every message
//!   carries its turn, so the conversation is exact: the ambient and effort messages of the
//!   turns up to the fork turn, the efforts opened by then, the metrics of those turns. What
//!   the working set looked like then is partly lost and is rebuilt the way a fresh open finds
//!   a session, erring towards more raw log and never towards a summary written later:
//!   - an effort concluded by the fork turn (and, as of then, not reopened) is concluded with
//!     its summary; one concluded only after it is open there, its log cut at the fork turn
//!     and without a summary (the summary it had then, if it had been concluded and reopened
//!     in between, was replaced);
//!   - the active effort is the one holding the latest message if it is open there, else the
//!     first open effort (the rule `close_effort` applies), else none; open efforts are in
//!     the order they were last opened or reopened (by turn, then by opening order);
//!   - nothing is expanded or recalled; activation, the decay record and statistics, the
//!     compaction state and rolling summary are empty, and attachments are in full mode, so
//!     the next turn's own checks compact again what needs it;
//!   - a reference after the fork turn counts as made at it (`last_referenced_turn` is
//!     clamped), and summaries are evicted by the rule a turn's end applies, so a summary last
//!     referenced by the fork turn is evicted exactly as it was then;
//!   - pins made by the fork turn on items that exist there are kept as they are now (a pin
//!     removed or changed since is not restored), a task lease only while its task is open.
//!
//! A rebuilt fork has no rewind deltas of its own, like an opened session. Saving it (a full
//! write) and opening it again gives the same session.
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

/// How a fork was made, so a host can say whether its working set is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkMethod {
    /// Rewound turn by turn with the rewind deltas ([`Session::fork_at`]): the session exactly
    /// as it was at the end of the fork turn.
    Rewound,
    /// Rebuilt from the stored records ([`Session::rebuild_at`]) because the fork turn is
    /// before [`Session::earliest_fork_turn`]: the conversation is exact, the working set
    /// (which efforts are concluded, active, expanded or evicted, pins, compaction) is
    /// approximate, as the module documentation details.
    Rebuilt,
}

/// A new branch and how it was made.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The branch, a session of its own; its first save is a full write.
    pub session: Session,
    /// Whether it was rewound exactly or rebuilt.
    pub method: ForkMethod,
}

impl Fork {
    /// Whether the branch's working set is exactly the parent's at the fork turn.
    pub fn is_exact(&self) -> bool {
        self.method == ForkMethod::Rewound
    }
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

    /// The earliest turn this session can be forked at exactly, by rewinding
    /// ([`Session::fork_at`]); [`Session::fork`] rebuilds earlier turns.
    pub fn earliest_fork_turn(&self) -> u64 {
        self.rewind
            .front()
            .map_or(self.turn, |delta| delta.turn.saturating_sub(1))
    }

    /// A new branch of this session as it was at the end of `turn`, for any turn from 0 to the
    /// current one: rewound exactly ([`Session::fork_at`]) from [`Session::earliest_fork_turn`]
    /// on, rebuilt ([`Session::rebuild_at`]) before it. The session itself is not changed.
    ///
    /// # Errors
    /// [`BranchError::BadTurn`] for a turn in the future; [`BranchError::NotNow`] during a
    /// turn or for a session that is only partly loaded.
    pub fn fork(&self, turn: u64, name: &str) -> Result<Fork, BranchError> {
        self.check_forkable(turn)?;
        if turn >= self.earliest_fork_turn() {
            Ok(Fork {
                session: self.fork_at(turn, name)?,
                method: ForkMethod::Rewound,
            })
        } else {
            Ok(Fork {
                session: self.rebuild_at(turn, name)?,
                method: ForkMethod::Rebuilt,
            })
        }
    }

    /// A new branch of this session at the end of `turn`, rebuilt from what the session holds
    /// rather than rewound, at any turn from 0 to the current one (within the rewind window
    /// too, which is how the tests measure what it approximates). The conversation is exact,
    /// the working set approximate; the module documentation lists how. The session itself is
    /// not changed.
    ///
    /// # Errors
    /// As [`Session::fork`].
    pub fn rebuild_at(&self, turn: u64, name: &str) -> Result<Session, BranchError> {
        self.check_forkable(turn)?;
        let rebuilt = self.rebuilt_at(turn).map_err(|e| BranchError::BadTurn {
            turn,
            reason: format!("the session's records could not be rebuilt at that turn: {e}"),
        })?;
        Ok(self.name_fork(rebuilt, turn, name))
    }

    /// Refuses a fork during a turn, of a partly loaded session, or at a future turn.
    fn check_forkable(&self, turn: u64) -> Result<(), BranchError> {
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
        Ok(())
    }

    /// Records the fork's branch and makes it a new line, whose first save is a full write
    /// under its own name.
    fn name_fork(&self, mut fork: Session, turn: u64, name: &str) -> Session {
        fork.branch = BranchInfo {
            name: name.to_string(),
            parent: Some(self.branch.name.clone()),
            fork_turn: Some(turn),
        };
        fork.revision = 0;
        fork.saves.dirty_efforts.clear();
        fork.saves.held_positions.clear();
        fork.saves.missing_messages.clear();
        fork.saves.unsaved_messages.clear();
        fork.saves.history_saved = 0;
        fork
    }

    /// A new branch of this session as it was at the end of `turn` (the current turn if equal),
    /// rewound exactly; [`Session::fork`] also forks before the rewind window. The session
    /// itself is not changed.
    ///
    /// # Errors
    /// [`BranchError::BadTurn`] for a turn in the future or earlier than
    /// [`Session::earliest_fork_turn`]; [`BranchError::NotNow`] during a turn or for a session
    /// that is only partly loaded (its rewound turns may not be in memory).
    pub fn fork_at(&self, turn: u64, name: &str) -> Result<Session, BranchError> {
        self.check_forkable(turn)?;
        if turn < self.earliest_fork_turn() {
            // What rewinding needs is kept in memory for the turns run since the session was
            // created, opened or imported, up to the last REWIND_TURNS; it is not stored.
            let reason = if self.rewind.len() < Session::REWIND_TURNS {
                format!(
                    "turns before {} ran before this session was opened or imported, and what rewinding needs is kept in memory only, not stored; turn {} or later can be forked exactly, an earlier one rebuilt (Session::fork)",
                    self.earliest_fork_turn(),
                    self.earliest_fork_turn()
                )
            } else {
                format!(
                    "only the last {} turns can be rewound; the earliest is turn {}, an earlier one can be rebuilt (Session::fork)",
                    Session::REWIND_TURNS,
                    self.earliest_fork_turn()
                )
            };
            return Err(BranchError::BadTurn { turn, reason });
        }
        let mut fork = self.clone();
        while fork.turn > turn {
            let delta = fork
                .rewind
                .pop_back()
                .expect("earliest_fork_turn guarantees a delta per rewound turn");
            fork.rewind_delta(delta);
        }
        Ok(self.name_fork(fork, turn, name))
    }

    /// Names the line this branch was forked from in the host's own terms. A host that keeps
    /// each branch as a stored session of its own (the app's Regenerate and Edit) records the
    /// parent's stored id here, so its session list can group a conversation's alternatives;
    /// [`Session::fork_at`] records the parent's branch name, which such a host does not use.
    /// The main line has no parent, and one is not given to it.
    pub fn set_branch_parent(&mut self, parent: &str) {
        if !self.branch.is_main() {
            self.branch.parent = Some(parent.to_string());
        }
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
