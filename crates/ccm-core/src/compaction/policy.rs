//! When to compact: the configuration, the levels, and the state machine that turns a usage
//! measurement into a decision.
//!
//! Usage is the working context's tokens over the model's window. Below the soft threshold
//! nothing happens (level 0); from the soft, hard and emergency thresholds on, levels 1, 2 and
//! 3 apply. Thresholds are per-mille integers and usage is compared by cross-multiplication, so
//! a decision never depends on float rounding and is the same on every platform.
//!
//! Two rules keep compaction from thrashing:
//!
//! - **Cooldown**: after a compaction, at least `cooldown_messages` messages (and, when set,
//!   `min_interval_ms` milliseconds) must pass before the next one.
//! - **Hysteresis**: after a compaction (or an attempt that found nothing to free), a level at
//!   or below the one last tried fires again only once usage has risen at least
//!   `hysteresis_per_mille` above the lowest usage seen since. Usage hovering around a
//!   threshold therefore never compacts every turn, while a conversation that keeps growing
//!   is compacted again after every real climb. A classic "re-arm below threshold − margin"
//!   trigger would never re-arm here, because a conversation only grows between compactions;
//!   measuring the climb from the low-water mark gives the same protection without that
//!   dead end.
//!
//! Three situations override the holds, each for a stated reason:
//!
//! - **Over the window**: when the working context no longer fits the window the request would
//!   fail, so neither cooldown nor hysteresis applies.
//! - **Escalation**: a level above the one last tried is not thrashing, it is the previous
//!   compaction falling short, so hysteresis does not hold it.
//! - **Emergency after a lighter compaction** bypasses the cooldown when
//!   `emergency_bypasses_cooldown` is set (the default): one large message (an attachment) can
//!   jump from the hard zone past the emergency threshold right after a compaction, and waiting
//!   two messages there risks overflowing the window.
//!
//! The specification's example skips messages 21 *and* 22 after a compaction at message 20,
//! while its code (`messages_since < 2`) and the issue ("at least 2 messages since the last
//! compaction") let message 22 compact. This module follows the code: a compaction at message
//! `m` allows the next one at message `m + cooldown_messages`.

use super::error::CompactionConfigError;
use super::level::{Level, Usage};
use super::report::CompactionEvent;
use serde::{Deserialize, Serialize};

/// Default soft threshold: 60 % of the window (level 1).
pub const DEFAULT_SOFT_PER_MILLE: u16 = 600;
/// Default hard threshold: 75 % of the window (level 2).
pub const DEFAULT_HARD_PER_MILLE: u16 = 750;
/// Default emergency threshold: 90 % of the window (level 3).
pub const DEFAULT_EMERGENCY_PER_MILLE: u16 = 900;
/// Messages that must pass after a compaction before the next one.
pub const DEFAULT_COOLDOWN_MESSAGES: u32 = 2;
/// Rise above the low-water mark (per-mille of the window) before a level fires again.
///
/// Five points: well below the fifteen points between two levels, so a growing conversation
/// is compacted again within a level, and well above the one or two points a single short
/// exchange adds, so usage hovering at a threshold does not compact every turn.
pub const DEFAULT_HYSTERESIS_PER_MILLE: u16 = 50;
/// Most recent ambient messages the hard level always keeps.
pub const DEFAULT_KEEP_LAST_MESSAGES_HARD: u32 = 5;
/// Most recent ambient messages the emergency level keeps.
pub const DEFAULT_KEEP_LAST_MESSAGES_EMERGENCY: u32 = 4;
/// Share of the older ambient messages the hard level keeps, by relevance (per-mille).
pub const DEFAULT_KEEP_FRACTION_HARD_PER_MILLE: u16 = 500;
/// Messages without a reference after which an attachment counts as stale.
pub const DEFAULT_STALE_ATTACHMENT_MESSAGES: u32 = 3;
/// Turns without a reference after which an expanded effort counts as idle and is collapsed
/// early under pressure. One turn: an expansion the current message asks for stays, any other
/// goes before the decay threshold would take it.
pub const DEFAULT_IDLE_EXPANSION_TURNS: u32 = 1;
/// Word limit of the level-3 rolling summary.
pub const DEFAULT_ROLLING_SUMMARY_MAX_WORDS: u32 = 150;

/// Largest message-count setting. Larger values are almost certainly a unit mistake.
const MAX_MESSAGES: i64 = 1_000_000;

/// The accepted range of each numeric field, in one place so that validation and parsing can
/// never disagree.
fn range_of(field: &str) -> (i64, i64) {
    match field {
        "soft_per_mille" | "hard_per_mille" | "emergency_per_mille" => (1, 1000),
        "keep_fraction_hard_per_mille" => (0, 1000),
        // Half the window: a larger margin would stop a level from ever firing twice.
        "hysteresis_per_mille" => (0, 500),
        "cooldown_messages" => (0, MAX_MESSAGES),
        // One day is far beyond any sensible pause between compactions; more is a unit mistake.
        "min_interval_ms" => (1, 86_400_000),
        "rolling_summary_max_words" => (20, 4000),
        _ => (1, MAX_MESSAGES),
    }
}

fn out_of_range(field: &'static str, value: i64) -> CompactionConfigError {
    let (min, max) = range_of(field);
    CompactionConfigError::OutOfRange {
        field,
        min,
        max,
        value,
    }
}

fn check(field: &'static str, value: i64) -> Result<(), CompactionConfigError> {
    let (min, max) = range_of(field);
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(field, value))
    }
}

/// A published set of thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdPreset {
    /// 60 / 75 / 90 %: the decision tree of the specification; the default.
    Standard,
    /// 50 / 65 / 80 %: the implementation addendum's set. It compacts earlier and leaves more
    /// room for long answers and large attachments.
    Early,
}

impl ThresholdPreset {
    /// Both presets, default first.
    pub const ALL: [ThresholdPreset; 2] = [ThresholdPreset::Standard, ThresholdPreset::Early];

    /// The preset's name (`standard`, `early`).
    pub fn name(self) -> &'static str {
        match self {
            ThresholdPreset::Standard => "standard",
            ThresholdPreset::Early => "early",
        }
    }

    /// Soft, hard and emergency thresholds in per-mille.
    pub fn per_mille(self) -> (u16, u16, u16) {
        match self {
            ThresholdPreset::Standard => (
                DEFAULT_SOFT_PER_MILLE,
                DEFAULT_HARD_PER_MILLE,
                DEFAULT_EMERGENCY_PER_MILLE,
            ),
            ThresholdPreset::Early => (500, 650, 800),
        }
    }

    /// Parses a preset name (any case).
    ///
    /// # Errors
    /// [`CompactionConfigError::UnknownPreset`] for any other name.
    pub fn from_name(name: &str) -> Result<ThresholdPreset, CompactionConfigError> {
        let folded = name.trim().to_ascii_lowercase();
        ThresholdPreset::ALL
            .into_iter()
            .find(|p| p.name() == folded)
            .ok_or_else(|| CompactionConfigError::UnknownPreset(name.trim().to_string()))
    }
}

/// How graduated compaction behaves. Thresholds and fractions are per-mille of the window
/// (600 = 60 %), so every comparison is exact integer arithmetic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// Whether compaction runs at all. Off, the working set is bounded only by the planner's
    /// budget (which excludes items instead of compacting them).
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// Usage from which level 1 (soft) applies.
    pub soft_per_mille: u16,
    /// Usage from which level 2 (hard) applies.
    pub hard_per_mille: u16,
    /// Usage from which level 3 (emergency) applies.
    pub emergency_per_mille: u16,
    /// Messages that must pass after a compaction before the next one (0 disables).
    pub cooldown_messages: u32,
    /// Milliseconds that must pass after a compaction before the next one, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_interval_ms: Option<u64>,
    /// Rise above the low-water mark before a level at or below the last one fires again.
    pub hysteresis_per_mille: u16,
    /// Whether a jump to the emergency level right after a lighter compaction ignores the
    /// cooldown.
    pub emergency_bypasses_cooldown: bool,
    /// Most recent ambient messages the hard level always keeps.
    pub keep_last_messages_hard: u32,
    /// Most recent ambient messages the emergency level keeps.
    pub keep_last_messages_emergency: u32,
    /// Share of the older ambient messages the hard level keeps, most relevant first.
    pub keep_fraction_hard_per_mille: u16,
    /// Messages without a reference after which a full attachment is compressed (level 1+).
    pub stale_attachment_messages: u32,
    /// Turns without a reference after which an expanded effort is collapsed early (level 1+).
    pub idle_expansion_turns: u32,
    /// Word limit of the level-3 rolling summary (the prompt asks for it, the extractive
    /// fallback keeps to it).
    pub rolling_summary_max_words: u32,
}

fn enabled_by_default() -> bool {
    true
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig::preset(ThresholdPreset::Standard)
    }
}

impl CompactionConfig {
    /// The defaults with the thresholds of `preset`.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::compaction::{CompactionConfig, ThresholdPreset};
    /// let early = CompactionConfig::preset(ThresholdPreset::Early);
    /// assert_eq!((early.soft_per_mille, early.hard_per_mille, early.emergency_per_mille), (500, 650, 800));
    /// assert_eq!(CompactionConfig::default().soft_per_mille, 600);
    /// ```
    pub fn preset(preset: ThresholdPreset) -> CompactionConfig {
        let (soft, hard, emergency) = preset.per_mille();
        CompactionConfig {
            enabled: true,
            soft_per_mille: soft,
            hard_per_mille: hard,
            emergency_per_mille: emergency,
            cooldown_messages: DEFAULT_COOLDOWN_MESSAGES,
            min_interval_ms: None,
            hysteresis_per_mille: DEFAULT_HYSTERESIS_PER_MILLE,
            emergency_bypasses_cooldown: true,
            keep_last_messages_hard: DEFAULT_KEEP_LAST_MESSAGES_HARD,
            keep_last_messages_emergency: DEFAULT_KEEP_LAST_MESSAGES_EMERGENCY,
            keep_fraction_hard_per_mille: DEFAULT_KEEP_FRACTION_HARD_PER_MILLE,
            stale_attachment_messages: DEFAULT_STALE_ATTACHMENT_MESSAGES,
            idle_expansion_turns: DEFAULT_IDLE_EXPANSION_TURNS,
            rolling_summary_max_words: DEFAULT_ROLLING_SUMMARY_MAX_WORDS,
        }
    }

    /// The threshold of `level` in per-mille (0 for [`Level::None`]).
    pub fn threshold(&self, level: Level) -> u16 {
        match level {
            Level::None => 0,
            Level::Soft => self.soft_per_mille,
            Level::Hard => self.hard_per_mille,
            Level::Emergency => self.emergency_per_mille,
        }
    }

    /// The level `usage` falls in, ignoring cooldown and hysteresis.
    pub fn level_for(&self, usage: Usage) -> Level {
        [Level::Emergency, Level::Hard, Level::Soft]
            .into_iter()
            .find(|&level| usage.reaches(self.threshold(level)))
            .unwrap_or(Level::None)
    }

    /// Checks every field and the relations between them.
    ///
    /// # Errors
    /// The first problem found, naming the field.
    pub fn validate(&self) -> Result<(), CompactionConfigError> {
        check("soft_per_mille", self.soft_per_mille.into())?;
        check("hard_per_mille", self.hard_per_mille.into())?;
        check("emergency_per_mille", self.emergency_per_mille.into())?;
        if !(self.soft_per_mille < self.hard_per_mille
            && self.hard_per_mille < self.emergency_per_mille)
        {
            return Err(CompactionConfigError::ThresholdsNotIncreasing {
                soft: self.soft_per_mille,
                hard: self.hard_per_mille,
                emergency: self.emergency_per_mille,
            });
        }
        check("cooldown_messages", self.cooldown_messages.into())?;
        if let Some(ms) = self.min_interval_ms {
            check("min_interval_ms", i64::try_from(ms).unwrap_or(i64::MAX))?;
        }
        check("hysteresis_per_mille", self.hysteresis_per_mille.into())?;
        check(
            "keep_last_messages_hard",
            self.keep_last_messages_hard.into(),
        )?;
        check(
            "keep_last_messages_emergency",
            self.keep_last_messages_emergency.into(),
        )?;
        if self.keep_last_messages_emergency > self.keep_last_messages_hard {
            return Err(CompactionConfigError::EmergencyKeepsMore {
                hard: self.keep_last_messages_hard,
                emergency: self.keep_last_messages_emergency,
            });
        }
        check(
            "keep_fraction_hard_per_mille",
            self.keep_fraction_hard_per_mille.into(),
        )?;
        check(
            "stale_attachment_messages",
            self.stale_attachment_messages.into(),
        )?;
        check("idle_expansion_turns", self.idle_expansion_turns.into())?;
        check(
            "rolling_summary_max_words",
            self.rolling_summary_max_words.into(),
        )?;
        Ok(())
    }

    /// Parses and validates a JSON configuration. `preset` (`standard` or `early`) picks the
    /// starting thresholds; every other field overrides one value; missing fields take the
    /// defaults.
    ///
    /// # Errors
    /// [`CompactionConfigError::Invalid`] for malformed JSON, unknown fields or values of the
    /// wrong type, otherwise the first range or consistency error.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::compaction::CompactionConfig;
    /// let config = CompactionConfig::from_json(r#"{"preset": "early", "cooldown_messages": 4}"#).unwrap();
    /// assert_eq!((config.soft_per_mille, config.cooldown_messages), (500, 4));
    /// let error = CompactionConfig::from_json(r#"{"soft_per_mille": 800}"#).unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "compaction thresholds must increase strictly (soft < hard < emergency), got soft 800‰, hard 750‰, emergency 900‰"
    /// );
    /// ```
    pub fn from_json(json: &str) -> Result<CompactionConfig, CompactionConfigError> {
        let input: CompactionConfigInput = serde_json::from_str(json)
            .map_err(|e| CompactionConfigError::Invalid(e.to_string()))?;
        input.resolve()
    }
}

/// A compaction configuration as a caller may write it: every field optional and signed, so a
/// missing field takes its default and a negative one gets a precise range error.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfigInput {
    /// See [`CompactionConfig::enabled`].
    pub enabled: Option<bool>,
    /// `standard` (60/75/90 %) or `early` (50/65/80 %); the starting thresholds.
    pub preset: Option<String>,
    /// See [`CompactionConfig::soft_per_mille`].
    pub soft_per_mille: Option<i64>,
    /// See [`CompactionConfig::hard_per_mille`].
    pub hard_per_mille: Option<i64>,
    /// See [`CompactionConfig::emergency_per_mille`].
    pub emergency_per_mille: Option<i64>,
    /// See [`CompactionConfig::cooldown_messages`].
    pub cooldown_messages: Option<i64>,
    /// See [`CompactionConfig::min_interval_ms`].
    pub min_interval_ms: Option<i64>,
    /// See [`CompactionConfig::hysteresis_per_mille`].
    pub hysteresis_per_mille: Option<i64>,
    /// See [`CompactionConfig::emergency_bypasses_cooldown`].
    pub emergency_bypasses_cooldown: Option<bool>,
    /// See [`CompactionConfig::keep_last_messages_hard`].
    pub keep_last_messages_hard: Option<i64>,
    /// See [`CompactionConfig::keep_last_messages_emergency`].
    pub keep_last_messages_emergency: Option<i64>,
    /// See [`CompactionConfig::keep_fraction_hard_per_mille`].
    pub keep_fraction_hard_per_mille: Option<i64>,
    /// See [`CompactionConfig::stale_attachment_messages`].
    pub stale_attachment_messages: Option<i64>,
    /// See [`CompactionConfig::idle_expansion_turns`].
    pub idle_expansion_turns: Option<i64>,
    /// See [`CompactionConfig::rolling_summary_max_words`].
    pub rolling_summary_max_words: Option<i64>,
}

impl CompactionConfigInput {
    /// Fills the missing fields from the preset and the defaults, then validates.
    ///
    /// # Errors
    /// The first range or consistency error.
    pub fn resolve(self) -> Result<CompactionConfig, CompactionConfigError> {
        let preset = match &self.preset {
            None => ThresholdPreset::Standard,
            Some(name) => ThresholdPreset::from_name(name)?,
        };
        let base = CompactionConfig::preset(preset);
        // Each value is range-checked before it is narrowed, so the casts cannot wrap and a
        // negative value gets the same precise message as one that is too large.
        fn pick<T: TryFrom<i64>>(
            field: &'static str,
            value: Option<i64>,
            default: T,
        ) -> Result<T, CompactionConfigError> {
            match value {
                None => Ok(default),
                Some(v) => {
                    check(field, v)?;
                    T::try_from(v).map_err(|_| out_of_range(field, v))
                }
            }
        }
        let config = CompactionConfig {
            enabled: self.enabled.unwrap_or(true),
            soft_per_mille: pick("soft_per_mille", self.soft_per_mille, base.soft_per_mille)?,
            hard_per_mille: pick("hard_per_mille", self.hard_per_mille, base.hard_per_mille)?,
            emergency_per_mille: pick(
                "emergency_per_mille",
                self.emergency_per_mille,
                base.emergency_per_mille,
            )?,
            cooldown_messages: pick(
                "cooldown_messages",
                self.cooldown_messages,
                base.cooldown_messages,
            )?,
            min_interval_ms: match self.min_interval_ms {
                None => None,
                Some(v) => Some(pick("min_interval_ms", Some(v), 0u64)?),
            },
            hysteresis_per_mille: pick(
                "hysteresis_per_mille",
                self.hysteresis_per_mille,
                base.hysteresis_per_mille,
            )?,
            emergency_bypasses_cooldown: self
                .emergency_bypasses_cooldown
                .unwrap_or(base.emergency_bypasses_cooldown),
            keep_last_messages_hard: pick(
                "keep_last_messages_hard",
                self.keep_last_messages_hard,
                base.keep_last_messages_hard,
            )?,
            keep_last_messages_emergency: pick(
                "keep_last_messages_emergency",
                self.keep_last_messages_emergency,
                base.keep_last_messages_emergency,
            )?,
            keep_fraction_hard_per_mille: pick(
                "keep_fraction_hard_per_mille",
                self.keep_fraction_hard_per_mille,
                base.keep_fraction_hard_per_mille,
            )?,
            stale_attachment_messages: pick(
                "stale_attachment_messages",
                self.stale_attachment_messages,
                base.stale_attachment_messages,
            )?,
            idle_expansion_turns: pick(
                "idle_expansion_turns",
                self.idle_expansion_turns,
                base.idle_expansion_turns,
            )?,
            rolling_summary_max_words: pick(
                "rolling_summary_max_words",
                self.rolling_summary_max_words,
                base.rolling_summary_max_words,
            )?,
        };
        config.validate()?;
        Ok(config)
    }
}

/// The smallest token count that reaches `per_mille` of `window_tokens`.
pub fn threshold_tokens(window_tokens: u64, per_mille: u16) -> u64 {
    let scaled = u128::from(window_tokens) * u128::from(per_mille);
    u64::try_from(scaled.div_ceil(1000)).unwrap_or(u64::MAX)
}

/// Why the policy fired or held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum DecisionReason {
    /// Held: usage is below the soft threshold.
    BelowThreshold,
    /// Held: too soon after the last compaction.
    Cooldown {
        /// Messages since the last compaction.
        messages_since: u64,
        /// Messages the cooldown requires.
        messages_required: u32,
        /// Milliseconds since the last compaction, when a minimum interval is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms_since: Option<u64>,
        /// The minimum interval, when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms_required: Option<u64>,
    },
    /// Held: usage has not risen far enough since the last compaction at this level or above.
    Hysteresis {
        /// Lowest usage seen since the last compaction or attempt, per-mille.
        low_water_per_mille: u64,
        /// Usage from which the level fires again, per-mille.
        refires_at_per_mille: u64,
    },
    /// Fires: a threshold is reached and nothing was compacted or attempted before.
    ThresholdReached,
    /// Fires: a level above the one last tried.
    Escalation {
        /// The level last tried.
        previous: Level,
    },
    /// Fires: usage rose at least the hysteresis margin above the low-water mark.
    Regrowth {
        /// Lowest usage seen since the last compaction or attempt, per-mille.
        low_water_per_mille: u64,
    },
    /// Fires: the working context exceeds the window, so no hold applies.
    OverWindow,
}

impl DecisionReason {
    /// Whether the reason means the level is applied now.
    pub fn fires(&self) -> bool {
        matches!(
            self,
            DecisionReason::ThresholdReached
                | DecisionReason::Escalation { .. }
                | DecisionReason::Regrowth { .. }
                | DecisionReason::OverWindow
        )
    }

    /// The reason's code as written in decisions (`below_threshold`, `cooldown`, …).
    pub fn code(&self) -> &'static str {
        match self {
            DecisionReason::BelowThreshold => "below_threshold",
            DecisionReason::Cooldown { .. } => "cooldown",
            DecisionReason::Hysteresis { .. } => "hysteresis",
            DecisionReason::ThresholdReached => "threshold_reached",
            DecisionReason::Escalation { .. } => "escalation",
            DecisionReason::Regrowth { .. } => "regrowth",
            DecisionReason::OverWindow => "over_window",
        }
    }
}

/// One compaction check: the level the usage calls for, whether it fires now, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionDecision {
    /// The level the usage falls in (whether or not it fires).
    pub level: Level,
    /// Why it fires or holds.
    pub reason: DecisionReason,
    /// The usage that was checked: the trigger usage when it fires.
    pub usage: Usage,
    /// The message counter at the check.
    pub at_message: u64,
    /// The time of the check, in milliseconds (passed in; the core has no clock).
    pub at_ms: u64,
}

impl CompactionDecision {
    /// Whether a compaction is to be planned now.
    pub fn fires(&self) -> bool {
        self.reason.fires()
    }

    /// The level to apply now, or `None` when the decision holds.
    pub fn level_to_apply(&self) -> Option<Level> {
        self.fires().then_some(self.level)
    }
}

/// The last compaction that was applied: what the cooldown counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionMark {
    /// Its level.
    pub level: Level,
    /// The message counter when it was applied.
    pub at_message: u64,
    /// When it was applied.
    pub at_ms: u64,
}

/// What hysteresis measures from: the highest level last tried (applied, or found nothing to
/// free) and the lowest usage seen since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HysteresisMark {
    /// The level last tried.
    pub level: Level,
    /// The lowest usage seen since.
    pub low_water: Usage,
}

/// The policy's state: small, serialisable, and worth persisting with a session so a reload
/// neither forgets a cooldown nor compacts again at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyState {
    /// The last compaction applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_compaction: Option<CompactionMark>,
    /// The hysteresis reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hysteresis: Option<HysteresisMark>,
    /// The last decision taken, fired or held: what a user interface shows to explain why
    /// the context was (not) compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_decision: Option<CompactionDecision>,
}

/// The compaction state machine: configuration plus state. Pure: the message counter and the
/// time are passed in, and the same inputs always give the same decisions.
///
/// # Examples
/// ```
/// use ccm_core::compaction::{CompactionConfig, CompactionPolicy, Level, Usage};
/// let mut policy = CompactionPolicy::new(CompactionConfig::default()).unwrap();
/// let held = policy.decide(Usage::new(5_000, 10_000).unwrap(), 1, 0);
/// assert_eq!((held.level, held.fires()), (Level::None, false));
/// let fired = policy.decide(Usage::new(7_600, 10_000).unwrap(), 2, 0);
/// assert_eq!(fired.level_to_apply(), Some(Level::Hard));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionPolicy {
    config: CompactionConfig,
    state: PolicyState,
}

impl CompactionPolicy {
    /// A policy with no compaction history.
    ///
    /// # Errors
    /// The configuration's validation error.
    pub fn new(config: CompactionConfig) -> Result<CompactionPolicy, CompactionConfigError> {
        CompactionPolicy::with_state(config, PolicyState::default())
    }

    /// A policy resuming from a stored state.
    ///
    /// # Errors
    /// The configuration's validation error.
    pub fn with_state(
        config: CompactionConfig,
        state: PolicyState,
    ) -> Result<CompactionPolicy, CompactionConfigError> {
        config.validate()?;
        Ok(CompactionPolicy { config, state })
    }

    /// The configuration.
    pub fn config(&self) -> &CompactionConfig {
        &self.config
    }

    /// The state, for persistence and display.
    pub fn state(&self) -> &PolicyState {
        &self.state
    }

    /// The decision for `usage` at message `at_message` and time `at_ms`, without recording
    /// anything.
    pub fn preview(&self, usage: Usage, at_message: u64, at_ms: u64) -> CompactionDecision {
        let level = self.config.level_for(usage);
        let reason = self.reason(level, usage, at_message, at_ms);
        CompactionDecision {
            level,
            reason,
            usage,
            at_message,
            at_ms,
        }
    }

    fn reason(&self, level: Level, usage: Usage, at_message: u64, at_ms: u64) -> DecisionReason {
        if level == Level::None {
            return DecisionReason::BelowThreshold;
        }
        if usage.exceeds_window() {
            return DecisionReason::OverWindow;
        }
        if let Some(last) = self.state.last_compaction {
            let messages_since = at_message.saturating_sub(last.at_message);
            let ms_since = at_ms.saturating_sub(last.at_ms);
            let too_few_messages = messages_since < u64::from(self.config.cooldown_messages);
            let too_soon = self
                .config
                .min_interval_ms
                .is_some_and(|min| ms_since < min);
            let bypass = self.config.emergency_bypasses_cooldown
                && level == Level::Emergency
                && last.level < Level::Emergency;
            if (too_few_messages || too_soon) && !bypass {
                return DecisionReason::Cooldown {
                    messages_since,
                    messages_required: self.config.cooldown_messages,
                    ms_since: self.config.min_interval_ms.map(|_| ms_since),
                    ms_required: self.config.min_interval_ms,
                };
            }
        }
        let Some(mark) = self.state.hysteresis else {
            return DecisionReason::ThresholdReached;
        };
        if level > mark.level {
            return DecisionReason::Escalation {
                previous: mark.level,
            };
        }
        // The low-water mark includes the usage being checked, so a dip is taken into
        // account the moment it is seen.
        let low = if usage.lower_than(mark.low_water) {
            usage
        } else {
            mark.low_water
        };
        let margin = self.config.hysteresis_per_mille;
        if usage.risen_above(low, margin) {
            DecisionReason::Regrowth {
                low_water_per_mille: low.per_mille(),
            }
        } else {
            DecisionReason::Hysteresis {
                low_water_per_mille: low.per_mille(),
                refires_at_per_mille: low.per_mille() + u64::from(margin),
            }
        }
    }

    /// Decides whether to compact now, and records the decision: the low-water mark follows
    /// the usage seen, and [`PolicyState::last_decision`] keeps the decision for display.
    ///
    /// When the decision fires, plan the compaction for its level, then report the outcome
    /// with [`record_applied`](Self::record_applied) or
    /// [`record_not_applied`](Self::record_not_applied).
    pub fn decide(&mut self, usage: Usage, at_message: u64, at_ms: u64) -> CompactionDecision {
        let decision = self.preview(usage, at_message, at_ms);
        if let Some(mark) = &mut self.state.hysteresis {
            if usage.lower_than(mark.low_water) {
                mark.low_water = usage;
            }
        }
        self.state.last_decision = Some(decision.clone());
        decision
    }

    /// Records an applied compaction: the cooldown starts, and hysteresis measures from the
    /// usage the compaction left.
    pub fn record_applied(&mut self, event: &CompactionEvent) {
        self.state.last_compaction = Some(CompactionMark {
            level: event.level,
            at_message: event.at_message,
            at_ms: event.at_ms,
        });
        self.state.hysteresis = Some(HysteresisMark {
            level: event.level,
            low_water: Usage {
                working_tokens: event.tokens_after,
                window_tokens: event.trigger_usage.window_tokens,
            },
        });
    }

    /// Records a decision that fired but whose compaction was not applied (it would have freed
    /// nothing or grown the context). No cooldown starts, since nothing changed, but the level
    /// is not tried again until usage rises by the hysteresis margin: trying the same thing on
    /// the same context every turn would find the same nothing.
    pub fn record_not_applied(&mut self, decision: &CompactionDecision) {
        if decision.level == Level::None {
            return;
        }
        let level = match self.state.hysteresis {
            // An attempt at a lower level must not lower the bar for the level already tried.
            Some(mark) if mark.level > decision.level => mark.level,
            _ => decision.level,
        };
        self.state.hysteresis = Some(HysteresisMark {
            level,
            low_water: decision.usage,
        });
    }
}
