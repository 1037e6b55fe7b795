//! Token counting. Every stored message is counted once, when it is stored, with the session's
//! encoding; contexts are priced by adding those stored counts.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A tokenizer encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Encoding {
    /// The encoding of GPT-4o and later OpenAI models; the default.
    #[serde(rename = "o200k_base")]
    O200kBase,
    /// The encoding of GPT-4 and GPT-3.5; the one the original CCM measured with.
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl Encoding {
    /// The canonical name, as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// Parses a canonical encoding name.
    ///
    /// # Errors
    /// [`ConfigError::UnknownEncoding`] for any other name.
    pub fn from_name(name: &str) -> Result<Encoding, ConfigError> {
        match name.trim() {
            "o200k_base" => Ok(Encoding::O200kBase),
            "cl100k_base" => Ok(Encoding::Cl100kBase),
            other => Err(ConfigError::UnknownEncoding(other.to_string())),
        }
    }
}

/// Counts the tokens of a text. Implementations must be deterministic: the same text always
/// gives the same count, because stored counts are trusted forever after.
pub trait TokenCounter: Send + Sync {
    /// Tokens of `text`, with special-token markers treated as ordinary text (user input is
    /// never allowed to smuggle in control tokens).
    fn count(&self, text: &str) -> u32;

    /// A short name identifying the counting rule, stored with sessions so that counts made
    /// by another rule are recomputed on import.
    fn name(&self) -> &str;
}

impl Encoding {
    /// The same encoding as the tokenizer crate names it.
    pub fn tokenizer_encoding(self) -> ccm_tokens::Encoding {
        match self {
            Encoding::O200kBase => ccm_tokens::Encoding::O200kBase,
            Encoding::Cl100kBase => ccm_tokens::Encoding::Cl100kBase,
        }
    }
}

/// Exact counts, equal to tiktoken's, from `ccm-tokens` (a hand-written split scanner and a
/// linear-time merge over compact rank tables). Its name is the encoding's, so sessions
/// counted by tiktoken itself and by this counter are interchangeable.
///
/// It asks `ccm-tokens` for the tokenizer on every count instead of keeping one, because a
/// browser host may install the common-scripts part of a table first and the whole table
/// later ([`ccm_tokens::coverage`]); each count uses the best one that counts its text exactly.
#[derive(Clone, Copy)]
pub struct ExactCounter {
    encoding: Encoding,
}

impl ExactCounter {
    /// The counter for `encoding`, when its rank table is available: compiled in (feature
    /// `embedded-tables`) or installed by the host with [`ccm_tokens::install`] (the whole
    /// table or its common-scripts part).
    ///
    /// # Errors
    /// [`ConfigError::TableNotLoaded`] when neither is the case.
    pub fn try_new(encoding: Encoding) -> Result<ExactCounter, ConfigError> {
        ccm_tokens::best_tokenizer(encoding.tokenizer_encoding())
            .ok_or_else(|| ConfigError::TableNotLoaded(encoding.name().to_string()))?;
        Ok(ExactCounter { encoding })
    }

    /// The counter for `encoding` from the compiled-in tables. The first call per encoding
    /// decodes its table (a few milliseconds); later calls share it.
    #[cfg(feature = "embedded-tables")]
    pub fn new(encoding: Encoding) -> ExactCounter {
        // The embedded tables are checked by ccm-tokens' tests, so they always decode.
        ExactCounter::try_new(encoding).expect("embedded rank tables decode")
    }
}

impl TokenCounter for ExactCounter {
    fn count(&self, text: &str) -> u32 {
        let encoding = self.encoding.tokenizer_encoding();
        // A host that installs only the common-scripts part must load the whole table before
        // it hands over text in other scripts (the app does, before every turn and import).
        // Should one miss that, the part still counts the text, too high, instead of failing.
        let tokenizer = ccm_tokens::tokenizer_for(encoding, text)
            .or_else(|| ccm_tokens::best_tokenizer(encoding))
            .expect("a counter exists only once its table is installed");
        // Messages longer than u32::MAX tokens cannot exist in any context window, so
        // saturating is only a guard against overflow, never a visible cap.
        u32::try_from(tokenizer.count(text)).unwrap_or(u32::MAX)
    }

    fn name(&self) -> &str {
        self.encoding.name()
    }
}

/// The counter a session uses by default for `encoding`.
#[cfg(feature = "embedded-tables")]
pub fn default_counter(encoding: Encoding) -> Arc<dyn TokenCounter> {
    Arc::new(ExactCounter::new(encoding))
}

/// The exact counter for `encoding` as a shared counter, when its table is available.
///
/// # Errors
/// [`ConfigError::TableNotLoaded`] when the table is neither compiled in nor installed.
pub fn exact_counter(encoding: Encoding) -> Result<Arc<dyn TokenCounter>, ConfigError> {
    Ok(Arc::new(ExactCounter::try_new(encoding)?))
}

/// A cheap approximate counter (one token per started group of four bytes of each
/// whitespace-separated word) for builds without rank tables and for tests that only need a
/// stable, monotone count. Never use it where exact counts are promised.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApproximateCounter;

impl TokenCounter for ApproximateCounter {
    fn count(&self, text: &str) -> u32 {
        let tokens: usize = text.split_whitespace().map(|w| w.len().div_ceil(4)).sum();
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }

    fn name(&self) -> &str {
        "approximate"
    }
}
