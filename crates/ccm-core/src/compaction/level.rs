//! The scale compaction works on: the [`Level`]s and the [`Usage`] measurement that places a
//! context on them.
//!
//! These two are the shared vocabulary of the policy (which level a usage reaches), the
//! planner (what a level moves) and the report (what an applied level did). They sit below all
//! three, so that none of those modules has to import another only to name a level.

use super::error::UsageError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A compaction level. Higher levels do everything lower ones do, and more.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Level 0: usage below the soft threshold; nothing to do.
    #[default]
    None,
    /// Level 1: compress stale attachments, collapse idle expansions.
    Soft,
    /// Level 2: also move the less relevant older ambient messages out.
    Hard,
    /// Level 3: compress every attachment, keep the last few ambient messages, replace the
    /// rest of the working history with a rolling summary.
    Emergency,
}

impl Level {
    /// The level's number, 0 to 3.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The level's name (`none`, `soft`, `hard`, `emergency`).
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Soft => "soft",
            Level::Hard => "hard",
            Level::Emergency => "emergency",
        }
    }

    /// The level with number `n`, if there is one.
    pub fn from_number(n: u8) -> Option<Level> {
        [Level::None, Level::Soft, Level::Hard, Level::Emergency]
            .get(usize::from(n))
            .copied()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level {} ({})", self.number(), self.name())
    }
}

/// How full the context is: working tokens against the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the working context (stored counts).
    pub working_tokens: u64,
    /// Tokens the model accepts (the window, or the request budget if output is reserved).
    pub window_tokens: u64,
}

impl Usage {
    /// A usage measurement.
    ///
    /// # Errors
    /// [`UsageError::ZeroWindow`] when `window_tokens` is 0.
    pub fn new(working_tokens: u64, window_tokens: u64) -> Result<Usage, UsageError> {
        if window_tokens == 0 {
            return Err(UsageError::ZeroWindow);
        }
        Ok(Usage {
            working_tokens,
            window_tokens,
        })
    }

    /// The window, never 0 (a zero read back from a stored record counts as 1).
    fn window(self) -> u128 {
        u128::from(self.window_tokens.max(1))
    }

    /// Usage in per-mille, rounded down; above 1000 when the context exceeds the window.
    pub fn per_mille(self) -> u64 {
        let value = u128::from(self.working_tokens) * 1000 / self.window();
        u64::try_from(value).unwrap_or(u64::MAX)
    }

    /// Whether usage is at or above `per_mille`, compared exactly.
    pub fn reaches(self, per_mille: u16) -> bool {
        // Cannot overflow: both sides are below 2^64 · 2^10.
        u128::from(self.working_tokens) * 1000 >= u128::from(per_mille) * self.window()
    }

    /// Whether the working context no longer fits the window.
    pub fn exceeds_window(self) -> bool {
        u128::from(self.working_tokens) > self.window()
    }

    /// Whether usage is at least `margin_per_mille` above `low`, compared exactly even when
    /// the two were measured against different windows (the model was switched).
    pub fn risen_above(self, low: Usage, margin_per_mille: u16) -> bool {
        // w/W >= l/L + m/1000  <=>  1000·w·L >= 1000·l·W + m·W·L. Products of two token
        // counts fit in u128; the factor 1000 could overflow only for counts beyond 2^59,
        // where saturating keeps the comparison total instead of panicking.
        let (w, big_w) = (u128::from(self.working_tokens), self.window());
        let (l, big_l) = (u128::from(low.working_tokens), low.window());
        let left = (w * big_l).saturating_mul(1000);
        let right = (l * big_w)
            .saturating_mul(1000)
            .saturating_add((big_w * big_l).saturating_mul(u128::from(margin_per_mille)));
        left >= right
    }

    /// Whether this usage is lower than `other`, compared exactly.
    pub(super) fn lower_than(self, other: Usage) -> bool {
        u128::from(self.working_tokens) * other.window()
            < u128::from(other.working_tokens) * self.window()
    }

    /// Usage as a percentage with one decimal, rounded down (`78.3%`).
    pub fn percent(self) -> String {
        let tenths = u128::from(self.working_tokens) * 1000 / self.window();
        format!("{}.{}%", tenths / 10, tenths % 10)
    }
}
