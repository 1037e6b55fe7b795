//! Session configuration with the specification's defaults, validated at every boundary.

use crate::error::ConfigError;
use crate::tokens::Encoding;
use serde::{Deserialize, Serialize};

/// Turns without reference before an expanded effort collapses by itself (slice 3).
pub const DEFAULT_DECAY_THRESHOLD: u32 = 3;
/// Summary keywords a message must mention to count as a reference (slice 3).
pub const DEFAULT_MIN_KEYWORD_OVERLAP: u32 = 2;
/// Turns without reference before a summary leaves working memory (slice 4).
pub const DEFAULT_SUMMARY_EVICTION_THRESHOLD: u32 = 20;
/// Recent ambient exchanges (user + assistant pairs) kept in working memory (slice 4).
pub const DEFAULT_AMBIENT_WINDOW: u32 = 10;

/// Upper bound for every threshold. Larger values are almost certainly a unit mistake, and
/// bounding them keeps turn arithmetic far from overflow.
const MAX_THRESHOLD: i64 = 1_000_000;

/// The tunable behaviour of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Turns without reference before an expanded effort auto-collapses.
    pub decay_threshold: u32,
    /// Summary keywords needed in one message to count as a reference.
    pub min_keyword_overlap: u32,
    /// Turns without reference before a concluded effort's summary is evicted.
    pub summary_eviction_threshold: u32,
    /// Ambient exchanges kept in working memory.
    pub ambient_window: u32,
    /// Tokenizer encoding used for every count of this session.
    pub encoding: Encoding,
    /// Replaces the opening paragraph of the system prompt; tool guidance and the memory
    /// section are always appended so the model knows how to use its tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            decay_threshold: DEFAULT_DECAY_THRESHOLD,
            min_keyword_overlap: DEFAULT_MIN_KEYWORD_OVERLAP,
            summary_eviction_threshold: DEFAULT_SUMMARY_EVICTION_THRESHOLD,
            ambient_window: DEFAULT_AMBIENT_WINDOW,
            encoding: Encoding::O200kBase,
            system_prompt: None,
        }
    }
}

/// A configuration as a caller may write it: every field optional and signed, so that a
/// missing field takes its default and a negative one gets a precise error instead of a
/// generic parse failure.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ConfigInput {
    /// See [`Config::decay_threshold`].
    pub decay_threshold: Option<i64>,
    /// See [`Config::min_keyword_overlap`].
    pub min_keyword_overlap: Option<i64>,
    /// See [`Config::summary_eviction_threshold`].
    pub summary_eviction_threshold: Option<i64>,
    /// See [`Config::ambient_window`].
    pub ambient_window: Option<i64>,
    /// See [`Config::encoding`]; `o200k_base` or `cl100k_base`.
    pub encoding: Option<String>,
    /// See [`Config::system_prompt`].
    pub system_prompt: Option<String>,
}

impl ConfigInput {
    /// Validates every field and fills the missing ones with the defaults.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        let defaults = Config::default();
        let threshold = |field: &'static str, value: Option<i64>, default: u32| match value {
            None => Ok(default),
            Some(v) if v < 1 => Err(ConfigError::TooSmall {
                field,
                min: 1,
                value: v,
            }),
            Some(v) if v > MAX_THRESHOLD => Err(ConfigError::TooLarge {
                field,
                max: MAX_THRESHOLD,
                value: v,
            }),
            Some(v) => Ok(v as u32),
        };
        let encoding = match self.encoding {
            None => defaults.encoding,
            Some(name) => Encoding::from_name(&name)?,
        };
        Ok(Config {
            decay_threshold: threshold(
                "decay_threshold",
                self.decay_threshold,
                defaults.decay_threshold,
            )?,
            min_keyword_overlap: threshold(
                "min_keyword_overlap",
                self.min_keyword_overlap,
                defaults.min_keyword_overlap,
            )?,
            summary_eviction_threshold: threshold(
                "summary_eviction_threshold",
                self.summary_eviction_threshold,
                defaults.summary_eviction_threshold,
            )?,
            ambient_window: threshold(
                "ambient_window",
                self.ambient_window,
                defaults.ambient_window,
            )?,
            encoding,
            system_prompt: self.system_prompt.filter(|p| !p.trim().is_empty()),
        })
    }
}

impl Config {
    /// Parses and validates a JSON configuration object; missing fields take the defaults.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for malformed JSON or unknown fields, or the range error of
    /// the first invalid field.
    ///
    /// # Examples
    /// ```
    /// let config = ccm_core::Config::from_json(r#"{"decay_threshold": 5}"#).unwrap();
    /// assert_eq!(config.decay_threshold, 5);
    /// assert_eq!(config.ambient_window, 10);
    /// assert!(ccm_core::Config::from_json(r#"{"decay_threshold": 0}"#).is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<Config, ConfigError> {
        let input: ConfigInput =
            serde_json::from_str(json).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        input.resolve()
    }

    /// Checks the invariants of an already-typed configuration (for example one read back from
    /// a stored session).
    ///
    /// # Errors
    /// The range error of the first invalid field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigInput {
            decay_threshold: Some(self.decay_threshold.into()),
            min_keyword_overlap: Some(self.min_keyword_overlap.into()),
            summary_eviction_threshold: Some(self.summary_eviction_threshold.into()),
            ambient_window: Some(self.ambient_window.into()),
            encoding: Some(self.encoding.name().to_string()),
            system_prompt: self.system_prompt.clone(),
        }
        .resolve()
        .map(|_| ())
    }
}
