//! What happened, turn by turn: the metrics points and the telemetry of the last turns.

use crate::metrics::TurnMetrics;
use crate::telemetry::{TurnTelemetry, TELEMETRY_IN_MEMORY};

/// The session's record of past turns. Read it through [`crate::Session::history`].
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Per-turn metrics, oldest first (the loaded ones).
    points: Vec<TurnMetrics>,
    /// Metrics points older than the loaded ones.
    offset: u64,
    /// Telemetry of the last turns (at most [`TELEMETRY_IN_MEMORY`]).
    telemetry: Vec<TurnTelemetry>,
}

impl History {
    /// The history of an imported document: every metrics point, no telemetry (a document does
    /// not carry it).
    pub(crate) fn whole(points: Vec<TurnMetrics>) -> History {
        History {
            points,
            ..History::default()
        }
    }

    /// The tail of a stored history: `points` are the newest of `stored` points.
    pub(crate) fn tail(points: Vec<TurnMetrics>, stored: u64) -> History {
        History {
            offset: stored.saturating_sub(points.len() as u64),
            points,
            telemetry: Vec::new(),
        }
    }

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

    /// Every stored metrics point, loaded or not.
    pub(crate) fn stored_points(&self) -> u64 {
        self.offset + self.points.len() as u64
    }

    /// Adds the metrics point of a completed turn.
    pub(crate) fn push_point(&mut self, point: TurnMetrics) {
        self.points.push(point);
    }

    /// The last metrics point, to amend with what happened between turns; `None` before the
    /// first turn.
    pub(crate) fn last_point_mut(&mut self) -> Option<&mut TurnMetrics> {
        self.points.last_mut()
    }

    /// Adds a turn's telemetry, dropping the oldest beyond [`TELEMETRY_IN_MEMORY`]; returns
    /// whether one was dropped (so the save tracking can move its mark down by one).
    pub(crate) fn push_telemetry(&mut self, entry: TurnTelemetry) -> bool {
        let dropped = self.telemetry.len() == TELEMETRY_IN_MEMORY;
        if dropped {
            self.telemetry.remove(0);
        }
        self.telemetry.push(entry);
        dropped
    }

    /// Keeps only the telemetry of turns up to `turn` (a branch rebuilt at that turn).
    pub(crate) fn keep_telemetry_through(&mut self, turn: u64, from: &History) {
        self.telemetry = from
            .telemetry
            .iter()
            .filter(|t| t.turn <= turn)
            .cloned()
            .collect();
    }

    /// Undoing a turn: the first `points` metrics points stay, and the telemetry of `turn` and
    /// later goes.
    pub(crate) fn undo_from(&mut self, turn: u64, points: usize) {
        self.points.truncate(points);
        self.telemetry.retain(|t| t.turn < turn);
    }
}
