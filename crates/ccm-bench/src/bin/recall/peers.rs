//! The peers measured in the same run: a plain BM25 over the stored messages (each message a
//! document of lowercase words, stopwords left out, no stemming, no context), the same BM25
//! showing each hit with its neighbouring messages, and a sliding window of the newest
//! messages. Each fills the same number of tokens as CCM's way it is compared with.

use super::play::StoredText;
use std::collections::{BTreeMap, BTreeSet};

const K1: f64 = 1.2;
const B: f64 = 0.75;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !ccm_core::text::is_stopword(w))
        .collect()
}

/// A plain BM25 index of one conversation's stored messages.
pub struct Bm25 {
    documents: Vec<BTreeMap<String, u32>>,
    lengths: Vec<f64>,
    frequency: BTreeMap<String, u32>,
    average: f64,
}

impl Bm25 {
    /// Indexes `messages`.
    pub fn new(messages: &[StoredText]) -> Bm25 {
        let mut documents = Vec::with_capacity(messages.len());
        let mut lengths = Vec::with_capacity(messages.len());
        let mut frequency: BTreeMap<String, u32> = BTreeMap::new();
        for message in messages {
            let mut counts: BTreeMap<String, u32> = BTreeMap::new();
            let terms = words(&message.text);
            lengths.push(terms.len() as f64);
            for term in terms {
                *counts.entry(term).or_insert(0) += 1;
            }
            for term in counts.keys() {
                *frequency.entry(term.clone()).or_insert(0) += 1;
            }
            documents.push(counts);
        }
        let average = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Bm25 {
            documents,
            lengths,
            frequency,
            average,
        }
    }

    /// Messages by score for `query`, best first (positions in the stored order).
    pub fn rank(&self, query: &str) -> Vec<usize> {
        let terms: BTreeSet<String> = words(query).into_iter().collect();
        let n = self.documents.len() as f64;
        let mut scored: Vec<(f64, usize)> = Vec::new();
        for (position, document) in self.documents.iter().enumerate() {
            let mut score = 0.0;
            for term in &terms {
                let Some(&tf) = document.get(term) else {
                    continue;
                };
                let df = f64::from(self.frequency[term]);
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let tf = f64::from(tf);
                score += idf * tf * (K1 + 1.0)
                    / (tf + K1 * (1.0 - B + B * self.lengths[position] / self.average));
            }
            if score > 0.0 {
                scored.push((score, position));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        scored.into_iter().map(|(_, p)| p).collect()
    }
}

/// The texts of the messages of `ranked` (each with `neighbours` messages on both sides in its
/// effort) that fit `budget` tokens, taken in rank order.
pub fn fill(
    messages: &[StoredText],
    ranked: &[usize],
    neighbours: usize,
    budget: u64,
) -> Vec<String> {
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    let mut used = 0u64;
    for &hit in ranked {
        let effort = messages[hit].effort;
        let group: Vec<usize> = (hit.saturating_sub(neighbours)..=hit + neighbours)
            .filter(|&p| p < messages.len() && messages[p].effort == effort && !chosen.contains(&p))
            .collect();
        let cost: u64 = group.iter().map(|&p| u64::from(messages[p].tokens)).sum();
        if group.is_empty() || used + cost > budget {
            continue;
        }
        used += cost;
        chosen.extend(group);
    }
    chosen
        .into_iter()
        .map(|p| messages[p].text.clone())
        .collect()
}

/// The newest messages that fit `budget` tokens.
pub fn window(messages: &[StoredText], budget: u64) -> Vec<String> {
    let mut used = 0u64;
    let mut texts = Vec::new();
    for message in messages.iter().rev() {
        used += u64::from(message.tokens);
        if used > budget {
            break;
        }
        texts.push(message.text.clone());
    }
    texts
}
