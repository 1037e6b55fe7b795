//! Text rules of the specification: effort ids, keywords, reference detection and the
//! extractive fallback summary. All of it is deterministic and allocation-light, because it runs
//! on every turn.
//!
//! A leaf crate without dependencies: `ccm-core` re-exports it as `ccm_core::text`.
#![deny(missing_docs)]

use std::collections::BTreeSet;

mod summary;

pub use summary::{
    extractive_summary, extractive_summary_of_conversation, states_outcome, summary_sentences,
    Speaker, EXTRACTIVE_WORD_BUDGET,
};

/// Longest effort id. Longer names are cut at a word boundary so ids stay readable in banners.
pub const MAX_ID_LEN: usize = 48;

/// Characters stripped from both ends of a word before it is compared, as in the specification.
const EDGE_PUNCTUATION: &[char] = &[
    '.', ',', ';', ':', '!', '?', '"', '\'', '(', ')', '-', '[', ']', '{', '}', '`', '*', '_', '/',
    '<', '>', '#',
];

/// Common English words that carry no topic, sorted (a test keeps them so) to read and diff well.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren't",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doing",
    "don't",
    "done",
    "down",
    "during",
    "each",
    "even",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn't",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "let",
    "let's",
    "like",
    "made",
    "make",
    "many",
    "me",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "no",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "still",
    "such",
    "than",
    "thank",
    "thanks",
    "that",
    "that's",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "use",
    "used",
    "using",
    "very",
    "want",
    "was",
    "wasn't",
    "way",
    "we",
    "were",
    "weren't",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won't",
    "would",
    "yes",
    "yet",
    "you",
    "you're",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (already lowercase) is a stopword.
///
/// Every word of every stored message passes through here (the recall index, references,
/// keywords), so the words are compared as packed integers: a binary search over strings spent
/// most of its time in `memcmp` calls on the replay of real conversations.
pub fn is_stopword(word: &str) -> bool {
    let Some(key) = packed_word(word) else {
        return false;
    };
    static PACKED: std::sync::OnceLock<Vec<u128>> = std::sync::OnceLock::new();
    PACKED
        .get_or_init(|| {
            let mut packed: Vec<u128> = STOPWORDS.iter().filter_map(|w| packed_word(w)).collect();
            packed.sort_unstable();
            packed
        })
        .binary_search(&key)
        .is_ok()
}

/// A word of at most 15 bytes as one integer: its bytes, then its length in the last byte (so
/// a word that ends in NUL bytes does not equal a shorter one). Longer words are no stopwords.
fn packed_word(word: &str) -> Option<u128> {
    let bytes = word.as_bytes();
    if bytes.len() > 15 {
        return None;
    }
    let mut buffer = [0u8; 16];
    buffer[..bytes.len()].copy_from_slice(bytes);
    buffer[15] = bytes.len() as u8;
    Some(u128::from_le_bytes(buffer))
}

/// Lowercase words of `text` with edge punctuation stripped, in order, duplicates kept.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace().filter_map(|raw| {
        let trimmed = raw.trim_matches(EDGE_PUNCTUATION);
        (!trimmed.is_empty()).then(|| trimmed.to_lowercase())
    })
}

/// Whether a normalised word is salient: three or more characters and not a stopword.
pub fn is_salient(word: &str) -> bool {
    word.chars().count() >= 3 && !is_stopword(word)
}

/// Salient keywords of a text, sorted and unique (the specification's `extract_keywords`).
///
/// # Examples
/// ```
/// let keywords = ccm_text::extract_keywords("Fixed the 401 errors: refresh token expired.");
/// assert_eq!(keywords, ["401", "errors", "expired", "fixed", "refresh", "token"]);
/// ```
pub fn extract_keywords(text: &str) -> Vec<String> {
    let set: BTreeSet<String> = words(text).filter(|w| is_salient(w)).collect();
    set.into_iter().collect()
}

/// Derives an effort id from its name: lowercase letters and digits (any script) joined by
/// single hyphens, at most [`MAX_ID_LEN`] characters. Every other character separates words.
/// Returns an empty string when the name has no letter or digit.
///
/// # Examples
/// ```
/// assert_eq!(ccm_text::slugify("Auth Bug: 401 on refresh!"), "auth-bug-401-on-refresh");
/// assert_eq!(ccm_text::slugify("Größe ändern"), "größe-ändern");
/// assert_eq!(ccm_text::slugify("  --  "), "");
/// ```
pub fn slugify(name: &str) -> String {
    let mut chars: Vec<char> = Vec::with_capacity(name.len());
    let mut pending_hyphen = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if pending_hyphen && !chars.is_empty() {
                chars.push('-');
            }
            pending_hyphen = false;
            chars.push(c);
        } else {
            pending_hyphen = true;
        }
    }
    if chars.len() > MAX_ID_LEN {
        // Cut at the last hyphen inside the limit so no word is split, unless that would leave
        // almost nothing (one very long word).
        let cut = chars[..=MAX_ID_LEN]
            .iter()
            .rposition(|&c| c == '-')
            .filter(|&i| i >= MAX_ID_LEN / 2)
            .unwrap_or(MAX_ID_LEN);
        chars.truncate(cut);
        while chars.last() == Some(&'-') {
            chars.pop();
        }
    }
    chars.into_iter().collect()
}

/// One message prepared once per turn for reference checks against many efforts: its lowercase
/// text and its set of normalised words.
#[derive(Debug, Clone)]
pub struct PreparedText {
    lower: String,
    words: BTreeSet<String>,
}

impl PreparedText {
    /// Prepares `text` for reference checks.
    pub fn new(text: &str) -> PreparedText {
        PreparedText {
            lower: text.to_lowercase(),
            words: words(text).collect(),
        }
    }

    /// Whether the text mentions the effort id, with hyphens or with spaces in their place.
    pub fn mentions_id(&self, id: &str) -> bool {
        !id.is_empty() && (self.lower.contains(id) || self.lower.contains(&id.replace('-', " ")))
    }

    /// Whether the text mentions the effort id as whole words: with hyphens or with spaces in
    /// their place, and neither preceded nor followed by a letter or digit (`auth-bug` is in
    /// "the auth bug again" but not in "oauth-bugs").
    pub fn mentions_id_as_words(&self, id: &str) -> bool {
        if id.is_empty() {
            return false;
        }
        let spaced = id.replace('-', " ");
        [id, spaced.as_str()].iter().any(|needle| {
            self.lower.match_indices(needle).any(|(start, _)| {
                let before = self.lower[..start].chars().next_back();
                let after = self.lower[start + needle.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
        })
    }

    /// The distinct normalised words of the text (edge punctuation stripped, lowercase).
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(String::as_str)
    }

    /// The distinct maximal runs of letters and digits of the lowercased text, the pieces an
    /// id's parts can be.
    pub fn alphanumeric_tokens(&self) -> BTreeSet<&str> {
        self.lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|token| !token.is_empty())
            .collect()
    }

    /// The `keywords` (sorted, unique) that occur as words of the text, in their order.
    pub fn shared_keywords<'a>(
        &'a self,
        keywords: &'a [String],
    ) -> impl Iterator<Item = &'a String> + 'a {
        keywords.iter().filter(|k| self.words.contains(*k))
    }

    /// How many of `keywords` (sorted, unique) occur as words of the text.
    pub fn keyword_overlap(&self, keywords: &[String]) -> usize {
        self.shared_keywords(keywords).count()
    }

    /// The specification's `is_referenced`: an id mention or at least `min_overlap` keywords.
    pub fn references(&self, id: &str, keywords: &[String], min_overlap: usize) -> bool {
        self.mentions_id(id) || self.keyword_overlap(keywords) >= min_overlap
    }
}

/// Splits text into trimmed sentences at `.`, `!`, `?` or a line break.
pub fn split_sentences(text: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '\n') {
            let end = i + c.len_utf8();
            // A period inside a token (a version number, a file name) does not end a sentence.
            let next = text[end..].chars().next();
            if c == '.' && next.is_some_and(|n| !n.is_whitespace()) {
                continue;
            }
            let sentence = text[start..end].trim();
            if !sentence.is_empty() {
                sentences.push(sentence);
            }
            start = end;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        sentences.push(rest);
    }
    sentences
}

/// The first `max` words of a sentence, with an ellipsis when cut.
pub fn clip_words(sentence: &str, max: usize) -> String {
    let parts: Vec<&str> = sentence.split_whitespace().collect();
    if parts.len() <= max {
        parts.join(" ")
    } else {
        format!("{} …", parts[..max].join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_and_all_found() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOPWORDS.iter().all(|w| w.len() <= 15 && is_stopword(w)));
        for word in [
            "",
            "auth",
            "abouts",
            "thes",
            "a\0",
            "yourselvesx",
            "the-",
            "ünd",
        ] {
            assert!(!is_stopword(word), "{word:?} is no stopword");
        }
    }

    #[test]
    fn keywords_drop_stopwords_short_words_and_punctuation() {
        assert_eq!(
            extract_keywords("The auth bug: we FIXED it (refresh tokens) and the 401s."),
            ["401s", "auth", "bug", "fixed", "refresh", "tokens"]
        );
        assert!(extract_keywords("it is a the of").is_empty());
    }

    #[test]
    fn reference_by_id_with_or_without_hyphens() {
        let text = PreparedText::new("Remember the Auth Bug from before?");
        assert!(text.mentions_id("auth-bug"));
        assert!(PreparedText::new("see auth-bug").mentions_id("auth-bug"));
        assert!(!PreparedText::new("authorization").mentions_id("auth-bug"));
    }

    #[test]
    fn an_id_mentioned_as_words_needs_word_boundaries() {
        let text = PreparedText::new("Back to the Auth Bug, and auth-bug's test.");
        assert!(text.mentions_id_as_words("auth-bug"));
        assert!(!PreparedText::new("oauth-bugs everywhere").mentions_id_as_words("auth-bug"));
        assert!(PreparedText::new("oauth-bugs everywhere").mentions_id("auth-bug"));
        assert!(!PreparedText::new("").mentions_id_as_words(""));
        let text = PreparedText::new("Auth-bug: 401, again 401!");
        let tokens: Vec<&str> = text.alphanumeric_tokens().into_iter().collect();
        assert_eq!(tokens, ["401", "again", "auth", "bug"]);
    }

    #[test]
    fn reference_by_keyword_overlap_needs_the_minimum() {
        let keywords = extract_keywords("Fixed 401 errors caused by refresh token expiry");
        let one = PreparedText::new("what about the token?");
        let two = PreparedText::new("is the refresh token still valid?");
        assert!(!one.references("auth-bug", &keywords, 2));
        assert!(two.references("auth-bug", &keywords, 2));
        assert!(one.references("auth-bug", &keywords, 1));
    }

    #[test]
    fn slugify_cuts_long_names_at_a_word_boundary() {
        let long = "a very long effort name that keeps going well past the limit of ids";
        let id = slugify(long);
        assert!(id.chars().count() <= MAX_ID_LEN, "{id}");
        assert!(!id.ends_with('-'));
        assert!(long.replace(' ', "-").starts_with(&id));
        assert_eq!(slugify("修复 登录"), "修复-登录");
        assert_eq!(slugify(&"x".repeat(100)).len(), MAX_ID_LEN);
    }

    #[test]
    fn extractive_summary_is_short_deterministic_and_never_empty() {
        let texts = [
            "Users report 401 errors after an hour of use.",
            "I think the refresh token expires too early.",
            "Sure, the refresh token TTL is 3600 seconds in auth.rs.",
            "We changed the refresh token TTL to 86400 and added a retry.",
            "Great, the 401 errors are gone.",
        ];
        let a = extractive_summary("auth-bug", &texts);
        let b = extractive_summary("auth-bug", &texts);
        assert_eq!(a, b);
        assert!(a.contains("refresh token"), "{a}");
        assert!(words(&a).count() <= EXTRACTIVE_WORD_BUDGET + 2, "{a}");
        assert_eq!(
            extractive_summary("empty", &[]),
            "empty: (no conversation was recorded for this effort)"
        );
    }

    #[test]
    fn version_numbers_do_not_split_sentences() {
        assert_eq!(
            split_sentences("Upgrade to v1.2.3 now. Then test!"),
            ["Upgrade to v1.2.3 now.", "Then test!"]
        );
    }
}
