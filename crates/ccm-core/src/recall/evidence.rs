//! Choosing what to show of a ranking within a token budget: each hit with its neighbours in
//! its own log, as excerpts (runs of neighbouring messages), grouped by where they are stored.
//!
//! A hit is shown with the message before and after it because that is where its context is:
//! the question a fact answers, or the answer a question got. On the LoCoMo conversations this
//! brings about as much recall per token as scoring in context does (`scripts/bench-recall`).
//! Hits are taken in rank order while the whole selection, excerpt headers included, fits the
//! budget; a hit that does not fit is passed over for smaller ones after it.

use super::index::{RecallIndex, Scored, Source, NO_DOC};
use std::collections::{BTreeMap, BTreeSet};

/// Neighbouring documents of one source, shown together.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    /// Where its documents are stored.
    pub source: Source,
    /// Its documents, in order; each is the `next` of the one before.
    pub docs: Vec<u32>,
    /// The best score of a hit in it.
    pub score: f64,
    /// The query terms its hits matched (bits of [`super::Query::terms`]).
    pub matched: u64,
    /// The rank of its best hit in the ranking (0 is the best).
    pub rank: usize,
}

/// What fits the budget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// The excerpts, grouped by source (the source of the best hit first), in log order
    /// within a source.
    pub excerpts: Vec<Excerpt>,
    /// Tokens of the whole selection, headers included.
    pub tokens: u64,
    /// Hits that matched but did not fit, best first (at most the number asked for).
    pub left_out: Vec<Scored>,
}

/// Selects excerpts for `hits` (best first) within `budget` tokens. `usable` says which
/// documents may be shown (not those already in the context); `header_tokens` gives the tokens
/// of the header an excerpt starting at a document is shown with, and `per_document` what
/// showing a document costs beyond its own tokens.
pub fn select(
    index: &RecallIndex,
    hits: &[Scored],
    budget: u64,
    usable: impl Fn(u32) -> bool,
    header_tokens: impl Fn(u32) -> u64,
    per_document: u64,
    max_left_out: usize,
) -> Selection {
    let mut chosen: BTreeSet<u32> = BTreeSet::new();
    let mut used = 0u64;
    let mut left_out = Vec::new();
    for hit in hits {
        let doc = index.doc(hit.doc);
        let group: Vec<u32> = [doc.prev, hit.doc, doc.next]
            .into_iter()
            .filter(|&d| d != NO_DOC && usable(d) && !chosen.contains(&d))
            .collect();
        if group.is_empty() {
            continue;
        }
        // What the group adds: its documents, and a header for each excerpt it starts, less
        // the header of an excerpt it now leads into (which joins it).
        let mut added: Vec<u32> = Vec::with_capacity(group.len());
        let is_chosen =
            |d: u32, added: &[u32]| d != NO_DOC && (chosen.contains(&d) || added.contains(&d));
        let mut total = used;
        for &d in &group {
            let this = index.doc(d);
            total += u64::from(this.tokens) + per_document;
            if !is_chosen(this.prev, &added) {
                total += header_tokens(d);
            }
            if is_chosen(this.next, &added) {
                // `next` started an excerpt of its own until now; its header was counted.
                total -= header_tokens(this.next);
            }
            added.push(d);
        }
        if total <= budget {
            chosen.extend(added);
            used = total;
        } else if !chosen.contains(&hit.doc) && left_out.len() < max_left_out {
            left_out.push(*hit);
        }
    }
    let rank_of: BTreeMap<u32, (usize, &Scored)> = hits
        .iter()
        .enumerate()
        .map(|(rank, hit)| (hit.doc, (rank, hit)))
        .collect();
    let mut excerpts: Vec<Excerpt> = runs(index, &chosen)
        .into_iter()
        .map(|docs| {
            let mut excerpt = Excerpt {
                source: index.doc(docs[0]).source,
                docs,
                score: 0.0,
                matched: 0,
                rank: usize::MAX,
            };
            for doc in &excerpt.docs {
                if let Some(&(rank, hit)) = rank_of.get(doc) {
                    excerpt.score = excerpt.score.max(hit.score);
                    excerpt.matched |= hit.matched;
                    excerpt.rank = excerpt.rank.min(rank);
                }
            }
            excerpt
        })
        .collect();
    let mut source_rank: BTreeMap<Source, usize> = BTreeMap::new();
    for excerpt in &excerpts {
        let best = source_rank.entry(excerpt.source).or_insert(usize::MAX);
        *best = (*best).min(excerpt.rank);
    }
    excerpts.sort_by_key(|e| (source_rank[&e.source], e.source, e.docs[0]));
    Selection {
        excerpts,
        tokens: used,
        left_out,
    }
}

/// The chosen documents as runs of neighbours, in document order.
fn runs(index: &RecallIndex, chosen: &BTreeSet<u32>) -> Vec<Vec<u32>> {
    let mut runs: Vec<Vec<u32>> = Vec::new();
    let mut in_run: BTreeSet<u32> = BTreeSet::new();
    for &doc in chosen {
        if in_run.contains(&doc) {
            continue;
        }
        let mut run = vec![doc];
        in_run.insert(doc);
        let mut next = index.doc(doc).next;
        while next != NO_DOC && chosen.contains(&next) {
            run.push(next);
            in_run.insert(next);
            next = index.doc(next).next;
        }
        runs.push(run);
    }
    // Walking in document order starts every run at its head: a document's predecessor in
    // its source always has a lower number.
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::analyzer::analyze;
    use crate::recall::index::Query;

    fn index() -> RecallIndex {
        let mut index = RecallIndex::default();
        let texts = [
            (Source::Effort(0), "planning the garden"),
            (Source::Effort(0), "tomatoes need sun"),
            (Source::Effort(0), "we chose cherry tomatoes"),
            (Source::Ambient, "the weather today"),
            (Source::Effort(0), "watering twice a week"),
            (Source::Effort(1), "tomatoes for the salad"),
        ];
        for (seq, (source, text)) in texts.iter().enumerate() {
            index.add(
                crate::recall::index::tests::doc(seq as u64, *source, 10),
                &analyze(text),
            );
        }
        index
    }

    #[test]
    fn hits_come_with_their_neighbours_as_runs() {
        let index = index();
        let hits = index.search(&Query::new("cherry tomatoes"), usize::MAX, 20, |_, _| true);
        let selection = select(&index, &hits, 1_000, |_| true, |_| 5, 0, 10);
        let runs: Vec<(Source, Vec<u32>)> = selection
            .excerpts
            .iter()
            .map(|e| (e.source, e.docs.clone()))
            .collect();
        assert_eq!(
            runs,
            [
                (Source::Effort(0), vec![0, 1, 2, 4]),
                (Source::Effort(1), vec![5])
            ]
        );
        assert_eq!(selection.tokens, 5 * 10 + 2 * 5);
    }

    #[test]
    fn the_budget_holds_headers_included() {
        let index = index();
        let hits = index.search(&Query::new("tomatoes"), usize::MAX, 20, |_, _| true);
        for budget in [0, 14, 15, 35, 40, 100] {
            let selection = select(&index, &hits, budget, |_| true, |_| 5, 0, 10);
            assert!(selection.tokens <= budget, "budget {budget}");
            if selection.excerpts.is_empty() {
                assert!(!selection.left_out.is_empty());
            }
        }
    }

    #[test]
    fn unusable_documents_are_never_shown() {
        let index = index();
        let hits = index.search(&Query::new("tomatoes"), usize::MAX, 20, |_, _| true);
        let selection = select(&index, &hits, 1_000, |d| d != 1, |_| 5, 0, 10);
        assert!(selection.excerpts.iter().all(|e| !e.docs.contains(&1)));
    }
}
