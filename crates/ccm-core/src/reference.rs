//! Reference detection: which concluded efforts the messages of a turn refer to.
//!
//! A reference keeps a summary in working memory (slice 4) and an expansion from decaying
//! (slice 3); a reference to a summary that already left working memory brings it back. Two
//! rules are available ([`ReferenceRule`]):
//!
//! - **seed**, the specification's literal rule: the effort id (with or without hyphens) as a
//!   substring, or at least `min_keyword_overlap` of the summary's keywords among the message's
//!   words. It checks every concluded effort, so its cost grows with the history.
//! - **distinctive**: the id as words, or summary keywords whose weights add up to at least
//!   `min_keyword_overlap`. A keyword's weight is its inverse document frequency over the
//!   session's summaries, scaled so that a keyword of one summary only weighs 1.0:
//!   `ln(1 + N / df) / ln(1 + N)` for `N` summaries of which `df` have it. Keywords that more than
//!   [`MAX_DISTINCTIVE_POSTINGS`] summaries share weigh nothing. With few summaries, or with
//!   summaries that share no words, it decides exactly as the seed rule does; in a long
//!   conversation about one domain, the domain's vocabulary ("house", "figure", "answer" in a
//!   conversation about geomancy) no longer keeps every summary alive.
//!
//! The distinctive rule looks up the message's words in the index of concluded efforts
//! ([`SearchIndex`]), so its cost follows the words of the turn and the posting lists it reads
//! (each at most [`MAX_DISTINCTIVE_POSTINGS`] long), never the number of efforts.

use crate::config::ReferenceRule;
use crate::model::Effort;
use crate::search::SearchIndex;
use crate::text::PreparedText;
use std::collections::{BTreeMap, BTreeSet};

/// Keywords shared by more summaries than this never count under the distinctive rule: they
/// say nothing about which summary is meant, and skipping them bounds the work per word.
pub const MAX_DISTINCTIVE_POSTINGS: usize = 32;

/// The weight of a keyword that `df` of `documents` summaries have: 1.0 when it is unique to
/// one summary, falling towards 0 as more summaries share it.
pub fn keyword_weight(df: usize, documents: usize) -> f64 {
    if df == 0 || df > MAX_DISTINCTIVE_POSTINGS {
        return 0.0;
    }
    let n = documents.max(df) as f64;
    (1.0 + n / df as f64).ln() / (1.0 + n).ln()
}

/// The concluded efforts (indices into `efforts`) that any of `texts` refers to under `rule`.
pub fn referenced_efforts(
    index: &SearchIndex,
    efforts: &[Effort],
    rule: ReferenceRule,
    min_overlap: u32,
    texts: &[PreparedText],
) -> BTreeSet<usize> {
    match rule {
        ReferenceRule::Seed => index
            .efforts()
            .filter(|&i| {
                let effort = &efforts[i];
                let keywords = effort.summary.as_ref().map_or(&[][..], |s| &s.keywords[..]);
                texts
                    .iter()
                    .any(|t| t.references(&effort.id, keywords, min_overlap as usize))
            })
            .collect(),
        ReferenceRule::Distinctive => {
            let mut found = BTreeSet::new();
            for text in texts {
                distinctive_references(index, efforts, f64::from(min_overlap), text, &mut found);
            }
            found
        }
    }
}

/// Adds the efforts `text` refers to under the distinctive rule.
fn distinctive_references(
    index: &SearchIndex,
    efforts: &[Effort],
    threshold: f64,
    text: &PreparedText,
    found: &mut BTreeSet<usize>,
) {
    let documents = index.len();
    let mut scores: BTreeMap<usize, f64> = BTreeMap::new();
    for word in text.words() {
        let Some(postings) = index.keyword_postings(word) else {
            continue;
        };
        let weight = keyword_weight(postings.len(), documents);
        if weight == 0.0 {
            continue;
        }
        for &effort in postings {
            *scores.entry(effort).or_insert(0.0) += weight;
        }
    }
    // A small tolerance, so that two keywords of weight 1.0 reach a threshold of 2 whatever
    // the rounding of their logarithms.
    found.extend(
        scores
            .into_iter()
            .filter(|&(_, score)| score + 1e-9 >= threshold)
            .map(|(effort, _)| effort),
    );
    for token in text.alphanumeric_tokens() {
        if let Some(candidates) = index.id_candidates(token) {
            for &effort in candidates {
                if text.mentions_id_as_words(&efforts[effort].id) {
                    found.insert(effort);
                }
            }
        }
    }
}
