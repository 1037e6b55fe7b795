//! What happened, turn by turn: the metrics points, the telemetry of the last turns and the
//! rewind deltas that let a branch fork at an earlier turn.

use crate::metrics::TurnMetrics;
use crate::telemetry::TurnTelemetry;
use std::collections::VecDeque;

/// The session's record of past turns. `Delta` is the session's rewind record; the history
/// only keeps them, oldest first.
#[derive(Debug, Clone)]
pub(crate) struct History<Delta> {
    /// Per-turn metrics, oldest first (the loaded ones).
    pub(crate) points: Vec<TurnMetrics>,
    /// Metrics points older than the loaded ones.
    pub(crate) offset: u64,
    /// Telemetry of the last turns (at most [`crate::telemetry::TELEMETRY_IN_MEMORY`]).
    pub(crate) telemetry: Vec<TurnTelemetry>,
    /// Rewind deltas of the last completed turns, oldest first.
    pub(crate) rewind: VecDeque<Delta>,
}

impl<Delta> Default for History<Delta> {
    fn default() -> Self {
        History {
            points: Vec::new(),
            offset: 0,
            telemetry: Vec::new(),
            rewind: VecDeque::new(),
        }
    }
}

impl<Delta> History<Delta> {
    /// Keeps a completed turn's rewind delta, dropping the oldest beyond `limit`.
    pub(crate) fn keep_delta(&mut self, delta: Delta, limit: usize) {
        if self.rewind.len() == limit {
            self.rewind.pop_front();
        }
        self.rewind.push_back(delta);
    }
}
