//! # ccm-tokens
//!
//! Exact token counts for OpenAI's `o200k_base` and `cl100k_base` encodings: every count equals
//! tiktoken's, but computed without a regex engine and without building token vectors.
//!
//! - [`scanner`] splits text into pieces with hand-written scanners equivalent to tiktoken's
//!   split patterns (linear time on any input).
//! - [`bpe`] looks pieces up in the rank table and merges the rest, with a heap for long pieces
//!   so that pathological input (a megabyte of one letter) stays O(n log n).
//! - [`table`] is the compact binary rank-table format (`.ccmt`) that builds ship and hosts load
//!   lazily; `embedded-tables` compiles them in instead.
//!
//! ```
//! # #[cfg(feature = "embedded-tables")] {
//! use ccm_tokens::{tokenizer, Encoding};
//! let o200k = tokenizer(Encoding::O200kBase).expect("tables are embedded");
//! assert_eq!(o200k.count("hello world"), 2);
//! # }
//! ```
#![deny(missing_docs)]

mod bpe;
pub mod coverage;
mod scanner;
pub mod table;
mod unicode;
mod unicode_data;

pub use bpe::Rank;

use std::fmt;
use std::sync::OnceLock;

/// A tokenizer encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The encoding of GPT-4o and later OpenAI models.
    O200kBase,
    /// The encoding of GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// Both encodings.
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// The canonical name, as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The encoding with this canonical name.
    pub fn from_name(name: &str) -> Option<Encoding> {
        Encoding::ALL.into_iter().find(|e| e.name() == name.trim())
    }

    fn index(self) -> usize {
        match self {
            Encoding::O200kBase => 0,
            Encoding::Cl100kBase => 1,
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a rank table could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The bytes are not a valid table.
    Table(table::TableError),
    /// The table has more tokens than a tokenizer can index.
    TooManyTokens(usize),
    /// The table is valid but for another encoding than the one asked for.
    WrongEncoding {
        /// The encoding the caller asked for.
        expected: Encoding,
        /// The name written in the table.
        found: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Table(error) => write!(f, "invalid rank table: {error}"),
            LoadError::TooManyTokens(count) => write!(
                f,
                "the rank table has {count} tokens; at most {} are supported",
                bpe::MAX_TOKENS
            ),
            LoadError::WrongEncoding { expected, found } => write!(
                f,
                "the rank table is for '{found}', not for '{expected}'; load {expected}.ccmt"
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// How much of its encoding's vocabulary a tokenizer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every token: exact counts for any text.
    Full,
    /// The tokens of the common scripts ([`coverage`]): exact counts for text that
    /// [`coverage::text_in_common_scripts`] accepts, too high for any other.
    CommonScripts,
}

/// Exact token counting for one encoding.
pub struct Tokenizer {
    encoding: Encoding,
    coverage: Coverage,
    vocabulary: bpe::Vocabulary,
}

impl Tokenizer {
    /// A tokenizer from a `.ccmt` rank table for `encoding`.
    ///
    /// # Errors
    /// [`LoadError`] when the bytes are not a valid table or belong to another encoding.
    pub fn from_table(encoding: Encoding, data: &[u8]) -> Result<Tokenizer, LoadError> {
        let (decoded, coverage) = checked_table(encoding, data)?;
        Ok(Tokenizer {
            encoding,
            coverage,
            vocabulary: bpe::Vocabulary::new(decoded.bytes, decoded.offsets),
        })
    }

    /// Starts building a tokenizer from a `.ccmt` table in steps: the table is decoded and
    /// checked now (about a millisecond), the lookup table is filled by
    /// [`TokenizerBuild::step`], so a host can yield to its event loop in between.
    ///
    /// # Errors
    /// As [`Tokenizer::from_table`].
    pub fn build_in_steps(encoding: Encoding, data: &[u8]) -> Result<TokenizerBuild, LoadError> {
        let (decoded, coverage) = checked_table(encoding, data)?;
        Ok(TokenizerBuild {
            encoding,
            coverage,
            vocabulary: bpe::Vocabulary::empty(decoded.bytes, decoded.offsets),
            indexed: 0,
        })
    }

    /// A tokenizer from tokens given in rank order (`tokens[r]` has rank `r`).
    ///
    /// # Panics
    /// When there are more than 16,777,214 tokens or 4 GiB of token bytes (far beyond any
    /// real vocabulary; tables from files go through [`Tokenizer::from_table`], which refuses
    /// them with an error instead).
    pub fn from_tokens(encoding: Encoding, tokens: &[Vec<u8>]) -> Tokenizer {
        assert!(tokens.len() <= bpe::MAX_TOKENS, "too many tokens");
        let mut bytes = Vec::with_capacity(tokens.iter().map(Vec::len).sum());
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        offsets.push(0);
        for token in tokens {
            bytes.extend_from_slice(token);
            offsets.push(u32::try_from(bytes.len()).expect("rank tables are far below 4 GiB"));
        }
        Tokenizer {
            encoding,
            coverage: Coverage::Full,
            vocabulary: bpe::Vocabulary::new(bytes, offsets),
        }
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// How much of the encoding's vocabulary this tokenizer holds.
    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// Whether this tokenizer counts `text` exactly: always for a full table, and for a
    /// common-scripts table when every character of `text` is in those scripts.
    pub fn counts_exactly(&self, text: &str) -> bool {
        self.coverage == Coverage::Full || coverage::text_in_common_scripts(text)
    }

    /// The number of ordinary tokens in the table.
    pub fn vocabulary_size(&self) -> usize {
        self.vocabulary.len()
    }

    /// The tokens of `text`, special-token markers counted as ordinary text (what tiktoken's
    /// `encode_ordinary(text).len()` gives).
    pub fn count(&self, text: &str) -> usize {
        SHORT_PIECES.with(|caches| {
            let mut caches = caches.borrow_mut();
            let cache = &mut caches[self.encoding.index()];
            scanner::pieces(text, self.encoding)
                .map(|piece| cache.count(piece.as_bytes(), &self.vocabulary))
                .sum()
        })
    }

    /// The token ranks of `text`, special-token markers encoded as ordinary text (equal to
    /// tiktoken's `encode_ordinary`).
    pub fn encode(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::with_capacity(text.len() / 3);
        for piece in scanner::pieces(text, self.encoding) {
            self.vocabulary.encode_piece(piece.as_bytes(), &mut out);
        }
        out
    }

    /// The pieces the split pattern cuts `text` into (what tiktoken's regex would find).
    pub fn split<'a>(&self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        scanner::pieces(text, self.encoding)
    }
}

/// Decodes a `.ccmt` table and checks that a tokenizer for `encoding` can index it.
fn checked_table(
    encoding: Encoding,
    data: &[u8],
) -> Result<(table::DecodedTable, Coverage), LoadError> {
    let decoded = table::decode_table(data).map_err(LoadError::Table)?;
    let tokens = decoded.offsets.len().saturating_sub(1);
    if tokens > bpe::MAX_TOKENS {
        return Err(LoadError::TooManyTokens(tokens));
    }
    let coverage = match decoded.name.strip_prefix(encoding.name()) {
        Some("") => Coverage::Full,
        Some(coverage::COMMON_SCRIPTS_SUFFIX) => Coverage::CommonScripts,
        _ => {
            return Err(LoadError::WrongEncoding {
                expected: encoding,
                found: decoded.name,
            })
        }
    };
    Ok((decoded, coverage))
}

/// A tokenizer under construction ([`Tokenizer::build_in_steps`]).
pub struct TokenizerBuild {
    encoding: Encoding,
    coverage: Coverage,
    vocabulary: bpe::Vocabulary,
    indexed: usize,
}

impl TokenizerBuild {
    /// Indexes up to `tokens` more tokens; returns `(indexed so far, tokens in all)`.
    pub fn step(&mut self, tokens: usize) -> (usize, usize) {
        let total = self.vocabulary.len();
        let end = (self.indexed + tokens).min(total);
        self.vocabulary.index_tokens(self.indexed..end);
        self.indexed = end;
        (end, total)
    }

    /// Whether every token is indexed.
    pub fn is_done(&self) -> bool {
        self.indexed == self.vocabulary.len()
    }

    /// The finished tokenizer (indexing whatever is left).
    pub fn finish(mut self) -> Tokenizer {
        self.step(usize::MAX - self.indexed);
        Tokenizer {
            encoding: self.encoding,
            coverage: self.coverage,
            vocabulary: self.vocabulary,
        }
    }
}

/// A direct-mapped memo of short pieces' token counts. Most pieces of prose and code are a
/// few bytes and repeat constantly (` the`, `(`, ` =`); the vocabulary's table is megabytes,
/// so a lookup there mostly waits for memory, while this table stays in the CPU's cache. A
/// piece of up to 7 bytes packs into one word with its length, so a hit is one comparison.
struct ShortPieceCache {
    keys: Vec<u64>,
    counts: Vec<u32>,
}

/// Slots of [`ShortPieceCache`] (a power of two): 48 KiB per encoding.
const SHORT_PIECE_SLOTS: usize = 4096;

impl ShortPieceCache {
    fn new() -> ShortPieceCache {
        ShortPieceCache {
            keys: vec![0; SHORT_PIECE_SLOTS],
            counts: vec![0; SHORT_PIECE_SLOTS],
        }
    }

    #[inline]
    fn count(&mut self, piece: &[u8], vocabulary: &bpe::Vocabulary) -> usize {
        if piece.is_empty() || piece.len() > 7 {
            return vocabulary.count_piece(piece);
        }
        // The length in the top byte makes every key non-zero (0 marks an empty slot) and
        // tells apart pieces that differ only by trailing zero bytes.
        let mut key = (piece.len() as u64) << 56;
        for (i, &byte) in piece.iter().enumerate() {
            key |= u64::from(byte) << (8 * i);
        }
        let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize;
        if self.keys[slot] == key {
            return self.counts[slot] as usize;
        }
        let count = vocabulary.count_piece(piece);
        self.keys[slot] = key;
        self.counts[slot] = count as u32;
        count
    }
}

thread_local! {
    /// One short-piece memo per encoding and thread (a count of a piece never changes, so
    /// a memo can only save time).
    static SHORT_PIECES: std::cell::RefCell<[ShortPieceCache; 2]> =
        std::cell::RefCell::new([ShortPieceCache::new(), ShortPieceCache::new()]);
}

/// The whole tokenizers installed so far, one slot per encoding.
static INSTALLED: [OnceLock<Tokenizer>; 2] = [OnceLock::new(), OnceLock::new()];

/// The common-scripts tokenizers installed so far ([`coverage`]), one slot per encoding.
static COMMON_SCRIPTS: [OnceLock<Tokenizer>; 2] = [OnceLock::new(), OnceLock::new()];

/// The rank table compiled into this build, if it has them.
#[cfg(feature = "embedded-tables")]
pub fn embedded_table(encoding: Encoding) -> Option<&'static [u8]> {
    Some(match encoding {
        Encoding::O200kBase => include_bytes!("../tables/o200k_base.ccmt"),
        Encoding::Cl100kBase => include_bytes!("../tables/cl100k_base.ccmt"),
    })
}

/// The rank table compiled into this build, if it has them.
#[cfg(not(feature = "embedded-tables"))]
pub fn embedded_table(_encoding: Encoding) -> Option<&'static [u8]> {
    None
}

/// The shared tokenizer for `encoding`: the installed one, else one built from the embedded
/// table (the first call per encoding decodes it), else `None` when the host has not loaded
/// the table yet.
pub fn tokenizer(encoding: Encoding) -> Option<&'static Tokenizer> {
    let slot = &INSTALLED[encoding.index()];
    if let Some(tokenizer) = slot.get() {
        return Some(tokenizer);
    }
    let data = embedded_table(encoding)?;
    let built = Tokenizer::from_table(encoding, data).ok()?;
    Some(slot.get_or_init(|| built))
}

/// Installs the rank table for `encoding` from `.ccmt` bytes the host loaded, so that
/// [`tokenizer`] finds it. Installing an encoding twice keeps the first (the tables are
/// identical; counts already made stay valid).
///
/// # Errors
/// [`LoadError`] when the bytes are not a valid table for `encoding`; nothing is installed.
pub fn install(encoding: Encoding, data: &[u8]) -> Result<&'static Tokenizer, LoadError> {
    if let Some(tokenizer) = INSTALLED[encoding.index()].get() {
        return Ok(tokenizer);
    }
    Ok(install_tokenizer(Tokenizer::from_table(encoding, data)?))
}

/// Installs a tokenizer built elsewhere (in steps, say) as the shared one for its encoding,
/// whole or common-scripts as the tokenizer is. When that slot is taken already, the first one
/// stays (the tables are identical).
pub fn install_tokenizer(tokenizer: Tokenizer) -> &'static Tokenizer {
    let slots = match tokenizer.coverage {
        Coverage::Full => &INSTALLED,
        Coverage::CommonScripts => &COMMON_SCRIPTS,
    };
    slots[tokenizer.encoding.index()].get_or_init(|| tokenizer)
}

/// Whether [`tokenizer`] has `encoding` ready without loading anything.
pub fn is_installed(encoding: Encoding) -> bool {
    INSTALLED[encoding.index()].get().is_some()
}

/// The tokenizer that counts `text` exactly for `encoding`: the whole one when it is
/// installed or compiled in, else the common-scripts one when that is installed and covers
/// `text`; `None` when the host must load the whole table first.
pub fn tokenizer_for(encoding: Encoding, text: &str) -> Option<&'static Tokenizer> {
    if let Some(whole) = tokenizer(encoding) {
        return Some(whole);
    }
    COMMON_SCRIPTS[encoding.index()]
        .get()
        .filter(|common| common.counts_exactly(text))
}

/// The best tokenizer `encoding` has without loading anything: the whole one, else the
/// common-scripts one.
pub fn best_tokenizer(encoding: Encoding) -> Option<&'static Tokenizer> {
    tokenizer(encoding).or_else(|| COMMON_SCRIPTS[encoding.index()].get())
}
