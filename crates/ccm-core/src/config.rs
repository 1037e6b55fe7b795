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

/// Most tokens the ambient window may hold. Real answers run to thousands of tokens, so ten
/// exchanges alone can fill a small model's window; the newest exchange is always kept whole.
/// Chosen from the replay of public real conversations (README, "Real conversations").
pub const DEFAULT_AMBIENT_TOKEN_BUDGET: u32 = 3_000;
/// Most tokens the summaries in working memory may hold; beyond it the least recently
/// referenced summaries leave working memory (still stored and searchable). Chosen from the
/// replay of public real conversations.
pub const DEFAULT_SUMMARY_TOKEN_BUDGET: u32 = 800;

/// Most tokens the automatic recall adds to one request in Light mode (twice as many in Heavy
/// mode): excerpts of stored messages outside working memory that match the user's message.
/// About a dozen short exchanges; on the LoCoMo conversations this brings all the evidence of
/// a question into the request, with no tool call, for most questions (`scripts/bench-recall`).
pub const DEFAULT_RECALL_TOKEN_BUDGET: u32 = 800;
/// Most tokens of messages a `search_efforts` result shows verbatim, and that one `recall`
/// call brings into the context.
pub const DEFAULT_EVIDENCE_TOKEN_BUDGET: u32 = 2_000;

/// The stored value of a token budget that is not set ("none" where a configuration is
/// written): the tier keeps what its count rule keeps, as the specification describes it
/// (the ambient window's last `ambient_window` exchanges, every summary referenced within
/// `summary_eviction_threshold` turns). A budget of 0 is a budget: it keeps the least a tier
/// can keep (the newest ambient exchange; no resident summary).
pub const NO_BUDGET: u32 = u32::MAX;

/// A token budget as a caller writes it: a whole number of tokens, or the word `"none"` for
/// no budget ([`NO_BUDGET`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum BudgetInput {
    /// A budget in tokens (checked for range when resolved).
    Tokens(i64),
    /// `"none"` (any case) for no budget; another word is an error naming the field.
    Word(String),
}

impl From<u32> for BudgetInput {
    fn from(tokens: u32) -> Self {
        if tokens == NO_BUDGET {
            BudgetInput::Word("none".to_string())
        } else {
            BudgetInput::Tokens(tokens.into())
        }
    }
}

/// Context window assumed when none is configured: a common size for current models. The
/// planner only trims when the working set would not fit, so a generous default changes
/// nothing for small sessions.
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;
/// Tokens kept free for the model's answer.
pub const DEFAULT_RESERVED_OUTPUT_TOKENS: u32 = 4_096;
/// Most tokens that leased pins may add to one request.
pub const DEFAULT_LEASED_TOKEN_BUDGET: u32 = 8_000;

/// How much the planner pulls into the context on its own, per session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextMode {
    /// Never pull anything in automatically.
    Off,
    /// Add cheap items: summaries of out-of-memory efforts that match the user's message.
    #[default]
    Light,
    /// As light, and also load the raw log of the best-matching concluded effort.
    Heavy,
}

impl ContextMode {
    /// The mode's display name (`Off`, `Light`, `Heavy`).
    pub fn label(self) -> &'static str {
        match self {
            ContextMode::Off => "Off",
            ContextMode::Light => "Light",
            ContextMode::Heavy => "Heavy",
        }
    }

    /// The next mode in the cycle Off → Light → Heavy → Off (the app's hotkey).
    pub fn next(self) -> ContextMode {
        match self {
            ContextMode::Off => ContextMode::Light,
            ContextMode::Light => ContextMode::Heavy,
            ContextMode::Heavy => ContextMode::Off,
        }
    }

    /// Parses `off`, `light` or `heavy` (any case).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for any other name.
    pub fn from_name(name: &str) -> Result<ContextMode, ConfigError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(ContextMode::Off),
            "light" => Ok(ContextMode::Light),
            "heavy" => Ok(ContextMode::Heavy),
            other => Err(ConfigError::Invalid(format!(
                "unknown context mode '{other}'; expected off, light or heavy"
            ))),
        }
    }
}

/// How a message is decided to refer to a concluded effort's summary (slices 3 and 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceRule {
    /// The specification's literal rule: the effort id, or at least `min_keyword_overlap`
    /// summary keywords. In long real conversations the summaries of one domain share many
    /// keywords, so every summary keeps the others referenced and nothing is ever evicted.
    Seed,
    /// The effort id as words, or summary keywords whose weights add up to at least
    /// `min_keyword_overlap`, where a keyword weighs less the more summaries of the session
    /// share it (inverse document frequency, 1.0 for a keyword of one summary only) and
    /// keywords shared by many summaries count for nothing. A summary is referenced by what
    /// sets it apart, not by the vocabulary of its domain.
    #[default]
    Distinctive,
}

impl ReferenceRule {
    /// The rule's name as written in configurations (`seed`, `distinctive`).
    pub fn name(self) -> &'static str {
        match self {
            ReferenceRule::Seed => "seed",
            ReferenceRule::Distinctive => "distinctive",
        }
    }

    /// Parses `seed` or `distinctive` (any case).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for any other name.
    pub fn from_name(name: &str) -> Result<ReferenceRule, ConfigError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "seed" => Ok(ReferenceRule::Seed),
            "distinctive" => Ok(ReferenceRule::Distinctive),
            other => Err(ConfigError::Invalid(format!(
                "unknown reference rule '{other}'; expected seed or distinctive"
            ))),
        }
    }
}

/// How `search_efforts` finds past efforts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchRule {
    /// Ranked by the words' rarity over everything indexed about each effort (id, name,
    /// description, summary, the distinctive words of its log), with the best-matching stored
    /// messages shown verbatim as evidence.
    #[default]
    Ranked,
    /// The specification's search (slice 4): concluded efforts whose id the query mentions or
    /// whose summary shares at least `min_keyword_overlap` keywords with it, ranked by how many
    /// it shares; summaries only, no evidence.
    Seed,
}

impl SearchRule {
    /// The rule's name as written in configurations (`ranked`, `seed`).
    pub fn name(self) -> &'static str {
        match self {
            SearchRule::Ranked => "ranked",
            SearchRule::Seed => "seed",
        }
    }

    /// Parses `ranked` or `seed` (any case).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for any other name.
    pub fn from_name(name: &str) -> Result<SearchRule, ConfigError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "ranked" => Ok(SearchRule::Ranked),
            "seed" => Ok(SearchRule::Seed),
            other => Err(ConfigError::Invalid(format!(
                "unknown search rule '{other}'; expected ranked or seed"
            ))),
        }
    }

    fn is_default(&self) -> bool {
        *self == SearchRule::default()
    }
}

/// Named starting points for a configuration; fields given besides a profile override it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profile {
    /// The product's defaults: token budgets on every tier, the distinctive reference rule,
    /// ranked search with evidence, automatic recall.
    #[default]
    Default,
    /// The specification as the seeds describe it, as far as they define it: the literal
    /// reference rule, no token budgets on the ambient window or the summaries, no automatic
    /// recall, `search_efforts` by keyword overlap returning summaries only. What the seeds do
    /// not define (the context window, compaction, pins, modes) keeps the defaults.
    Seed,
}

impl Profile {
    /// The profile's name (`default`, `seed`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Seed => "seed",
        }
    }

    /// Parses `default` or `seed` (any case).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for any other name.
    pub fn from_name(name: &str) -> Result<Profile, ConfigError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "default" => Ok(Profile::Default),
            "seed" => Ok(Profile::Seed),
            other => Err(ConfigError::Invalid(format!(
                "unknown profile '{other}'; expected default or seed"
            ))),
        }
    }

    /// The profile's configuration.
    pub fn config(self) -> Config {
        match self {
            Profile::Default => Config::default(),
            Profile::Seed => Config {
                reference_rule: ReferenceRule::Seed,
                ambient_token_budget: NO_BUDGET,
                summary_token_budget: NO_BUDGET,
                recall_token_budget: 0,
                evidence_token_budget: 0,
                search_rule: SearchRule::Seed,
                ..Config::default()
            },
        }
    }
}

fn default_ambient_token_budget() -> u32 {
    DEFAULT_AMBIENT_TOKEN_BUDGET
}

fn default_summary_token_budget() -> u32 {
    DEFAULT_SUMMARY_TOKEN_BUDGET
}

fn default_recall_token_budget() -> u32 {
    DEFAULT_RECALL_TOKEN_BUDGET
}

fn default_evidence_token_budget() -> u32 {
    DEFAULT_EVIDENCE_TOKEN_BUDGET
}

fn is_default_recall_token_budget(value: &u32) -> bool {
    *value == DEFAULT_RECALL_TOKEN_BUDGET
}

fn is_default_evidence_token_budget(value: &u32) -> bool {
    *value == DEFAULT_EVIDENCE_TOKEN_BUDGET
}

fn default_context_window() -> u32 {
    DEFAULT_CONTEXT_WINDOW
}

fn default_reserved_output_tokens() -> u32 {
    DEFAULT_RESERVED_OUTPUT_TOKENS
}

fn default_leased_token_budget() -> u32 {
    DEFAULT_LEASED_TOKEN_BUDGET
}

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
    /// Most tokens the ambient window keeps (the newest exchange is always kept whole);
    /// [`NO_BUDGET`] for none.
    #[serde(default = "default_ambient_token_budget")]
    pub ambient_token_budget: u32,
    /// Most tokens the summaries in working memory keep; the least recently referenced leave
    /// first. [`NO_BUDGET`] for none.
    #[serde(default = "default_summary_token_budget")]
    pub summary_token_budget: u32,
    /// How references to summaries are detected.
    #[serde(default)]
    pub reference_rule: ReferenceRule,
    /// Tokenizer encoding used for every count of this session.
    pub encoding: Encoding,
    /// Replaces the opening paragraph of the system prompt; tool guidance and the memory
    /// section are always appended so the model knows how to use its tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The model's context window in tokens.
    #[serde(default = "default_context_window")]
    pub context_window: u32,
    /// Tokens reserved for the answer; the request budget is the window minus these.
    #[serde(default = "default_reserved_output_tokens")]
    pub reserved_output_tokens: u32,
    /// Most tokens leased pins may add to one request; leased items beyond it are excluded
    /// with reason `over_budget`.
    #[serde(default = "default_leased_token_budget")]
    pub leased_token_budget: u32,
    /// How much the planner pulls in on its own.
    #[serde(default)]
    pub context_mode: ContextMode,
    /// Most tokens the automatic recall adds to a request in Light mode (twice as many in
    /// Heavy mode; none in Off mode). Written only when it differs from the default, so
    /// documents of sessions that keep the default read as before.
    #[serde(
        default = "default_recall_token_budget",
        skip_serializing_if = "is_default_recall_token_budget"
    )]
    pub recall_token_budget: u32,
    /// Most tokens of messages a search result shows verbatim, and that one `recall` tool call
    /// brings into the context.
    #[serde(
        default = "default_evidence_token_budget",
        skip_serializing_if = "is_default_evidence_token_budget"
    )]
    pub evidence_token_budget: u32,
    /// Graduated compaction: thresholds (60/75/90 % by default), cooldown, hysteresis and
    /// what each level keeps.
    #[serde(default)]
    pub compaction: crate::compaction::CompactionConfig,
    /// How `search_efforts` finds past efforts. Written only when it differs from the
    /// default, so documents of sessions that keep the default read as before.
    #[serde(default, skip_serializing_if = "SearchRule::is_default")]
    pub search_rule: SearchRule,
}

impl Config {
    /// Tokens one request may use: the context window minus the reserved answer tokens.
    pub fn request_budget(&self) -> u64 {
        u64::from(
            self.context_window
                .saturating_sub(self.reserved_output_tokens),
        )
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            decay_threshold: DEFAULT_DECAY_THRESHOLD,
            min_keyword_overlap: DEFAULT_MIN_KEYWORD_OVERLAP,
            summary_eviction_threshold: DEFAULT_SUMMARY_EVICTION_THRESHOLD,
            ambient_window: DEFAULT_AMBIENT_WINDOW,
            ambient_token_budget: DEFAULT_AMBIENT_TOKEN_BUDGET,
            summary_token_budget: DEFAULT_SUMMARY_TOKEN_BUDGET,
            reference_rule: ReferenceRule::Distinctive,
            encoding: Encoding::O200kBase,
            system_prompt: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            reserved_output_tokens: DEFAULT_RESERVED_OUTPUT_TOKENS,
            leased_token_budget: DEFAULT_LEASED_TOKEN_BUDGET,
            context_mode: ContextMode::Light,
            recall_token_budget: DEFAULT_RECALL_TOKEN_BUDGET,
            evidence_token_budget: DEFAULT_EVIDENCE_TOKEN_BUDGET,
            compaction: crate::compaction::CompactionConfig::default(),
            search_rule: SearchRule::Ranked,
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
    /// See [`Config::ambient_token_budget`]; a number of tokens or `"none"` for no budget.
    pub ambient_token_budget: Option<BudgetInput>,
    /// See [`Config::summary_token_budget`]; a number of tokens or `"none"` for no budget.
    pub summary_token_budget: Option<BudgetInput>,
    /// See [`Config::reference_rule`]; `seed` or `distinctive`.
    pub reference_rule: Option<String>,
    /// See [`Config::encoding`]; `o200k_base` or `cl100k_base`.
    pub encoding: Option<String>,
    /// See [`Config::system_prompt`].
    pub system_prompt: Option<String>,
    /// See [`Config::context_window`].
    pub context_window: Option<i64>,
    /// See [`Config::reserved_output_tokens`].
    pub reserved_output_tokens: Option<i64>,
    /// See [`Config::leased_token_budget`]; a number of tokens or `"none"` for no budget.
    pub leased_token_budget: Option<BudgetInput>,
    /// See [`Config::context_mode`]; `off`, `light` or `heavy`.
    pub context_mode: Option<String>,
    /// See [`Config::recall_token_budget`]; 0 turns the automatic recall off in every mode.
    pub recall_token_budget: Option<i64>,
    /// See [`Config::evidence_token_budget`].
    pub evidence_token_budget: Option<i64>,
    /// See [`Config::compaction`]: an object with `preset` (`standard` or `early`) and any
    /// field to override.
    pub compaction: Option<serde_json::Value>,
    /// See [`Config::search_rule`]; `ranked` or `seed`.
    pub search_rule: Option<String>,
    /// The configuration the other fields start from: `default` or `seed` (see [`Profile`]).
    pub profile: Option<String>,
}

impl ConfigInput {
    /// Validates every field and fills the missing ones with the defaults.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        let defaults = match &self.profile {
            None => Config::default(),
            Some(name) => Profile::from_name(name)?.config(),
        };
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
        let tokens = |field: &'static str, value: Option<i64>, default: u32, min: i64| match value {
            None => Ok(default),
            Some(v) if v < min => Err(ConfigError::TooSmall {
                field,
                min,
                value: v,
            }),
            Some(v) if v > i64::from(u32::MAX) => Err(ConfigError::TooLarge {
                field,
                max: i64::from(u32::MAX),
                value: v,
            }),
            Some(v) => Ok(v as u32),
        };
        // A budget field: tokens as above, or "none" for no budget.
        let budget = |field: &'static str, value: Option<BudgetInput>, default: u32| match value {
            None => Ok(default),
            Some(BudgetInput::Word(word)) if word.trim().eq_ignore_ascii_case("none") => {
                Ok(NO_BUDGET)
            }
            Some(BudgetInput::Word(word)) => Err(ConfigError::Invalid(format!(
                "{field} must be a number of tokens or \"none\" for no budget, got \"{word}\""
            ))),
            Some(BudgetInput::Tokens(v)) => tokens(field, Some(v), default, 0),
        };
        let context_window = tokens(
            "context_window",
            self.context_window,
            defaults.context_window,
            256,
        )?;
        let reserved_output_tokens = tokens(
            "reserved_output_tokens",
            self.reserved_output_tokens,
            defaults.reserved_output_tokens.min(context_window / 2),
            0,
        )?;
        if reserved_output_tokens >= context_window {
            return Err(ConfigError::Invalid(format!(
                "reserved_output_tokens ({reserved_output_tokens}) must be smaller than context_window ({context_window})"
            )));
        }
        let leased_token_budget = budget(
            "leased_token_budget",
            self.leased_token_budget,
            defaults.leased_token_budget,
        )?;
        let context_mode = match self.context_mode {
            None => defaults.context_mode,
            Some(name) => ContextMode::from_name(&name)?,
        };
        let reference_rule = match self.reference_rule {
            None => defaults.reference_rule,
            Some(name) => ReferenceRule::from_name(&name)?,
        };
        let ambient_token_budget = budget(
            "ambient_token_budget",
            self.ambient_token_budget,
            defaults.ambient_token_budget,
        )?;
        let summary_token_budget = budget(
            "summary_token_budget",
            self.summary_token_budget,
            defaults.summary_token_budget,
        )?;
        let recall_token_budget = tokens(
            "recall_token_budget",
            self.recall_token_budget,
            defaults.recall_token_budget,
            0,
        )?;
        let evidence_token_budget = tokens(
            "evidence_token_budget",
            self.evidence_token_budget,
            defaults.evidence_token_budget,
            0,
        )?;
        let compaction = match self.compaction {
            None => defaults.compaction,
            Some(value) => crate::compaction::CompactionConfig::from_json(&value.to_string())
                .map_err(|e| ConfigError::Invalid(format!("compaction: {e}")))?,
        };
        let search_rule = match self.search_rule {
            None => defaults.search_rule,
            Some(name) => SearchRule::from_name(&name)?,
        };
        Ok(Config {
            search_rule,
            compaction,
            context_window,
            reserved_output_tokens,
            leased_token_budget,
            context_mode,
            reference_rule,
            ambient_token_budget,
            summary_token_budget,
            recall_token_budget,
            evidence_token_budget,
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
            ambient_token_budget: Some(BudgetInput::from(self.ambient_token_budget)),
            summary_token_budget: Some(BudgetInput::from(self.summary_token_budget)),
            reference_rule: Some(self.reference_rule.name().to_string()),
            encoding: Some(self.encoding.name().to_string()),
            system_prompt: self.system_prompt.clone(),
            context_window: Some(self.context_window.into()),
            reserved_output_tokens: Some(self.reserved_output_tokens.into()),
            leased_token_budget: Some(BudgetInput::from(self.leased_token_budget)),
            context_mode: Some(self.context_mode.label().to_string()),
            recall_token_budget: Some(self.recall_token_budget.into()),
            evidence_token_budget: Some(self.evidence_token_budget.into()),
            compaction: None,
            search_rule: Some(self.search_rule.name().to_string()),
            profile: None,
        }
        .resolve()?;
        self.compaction
            .validate()
            .map_err(|e| ConfigError::Invalid(format!("compaction: {e}")))
    }
}
