//! What happened, turn by turn: the metrics points and the telemetry of the last turns.

use crate::metrics::TurnMetrics;
use crate::telemetry::TurnTelemetry;

/// The session's record of past turns. Read it through [`crate::Session::history`].
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Per-turn metrics, oldest first (the loaded ones).
    pub(crate) points: Vec<TurnMetrics>,
    /// Metrics points older than the loaded ones.
    pub(crate) offset: u64,
    /// Telemetry of the last turns (at most [`crate::telemetry::TELEMETRY_IN_MEMORY`]).
    pub(crate) telemetry: Vec<TurnTelemetry>,
}

impl History {
    /// Per-turn metrics since the session started (the loaded ones, oldest first).
    pub fn points(&self) -> &[TurnMetrics] {
        &self.points
    }

    /// How many older metrics points are stored but not loaded.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Telemetry of the turns kept in memory, oldest first.
    pub fn telemetry(&self) -> &[TurnTelemetry] {
        &self.telemetry
    }
}
