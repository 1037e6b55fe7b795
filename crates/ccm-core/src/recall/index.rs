//! The full-text index of every stored text: an inverted index from index terms to the
//! documents (messages and attachment passages) that hold them, ranked with BM25 over each
//! document read in its context.
//!
//! **Documents in context.** A message is scored as itself plus half of each neighbour in its
//! own log (the message before and the one after). In a conversation the words that identify
//! a fact are often in the question next to it ("How are your pets?" — "We got another cat
//! named Bailey"), so a document that stands alone misses them. The neighbours are not
//! indexed twice: their postings are read at query time, so a new message changes nothing
//! stored for the one before it. (Measured on the LoCoMo conversations with 1–4K tokens of
//! evidence: about 4 points of recall above plain BM25 per message; see `scripts/bench-recall`.)
//!
//! **Order.** Documents are added in key order (message sequence number, then passage), which
//! is the order of every posting list: truncating a rewound turn pops the tails, and a bounded
//! scan of a frequent term reads its newest postings.
//!
//! **Determinism.** Scores use `libm`'s logarithm, the same code on every target, and every
//! sum is made in a fixed order (query terms sorted, postings in document order), so the same
//! index and query rank identically natively and in WebAssembly.

use std::collections::{BTreeMap, HashMap};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How much a neighbour's words count towards a message, against its own.
const NEIGHBOUR_WEIGHT: f64 = 0.5;

/// A hasher for document numbers: the maps a query fills hold thousands of them, and the
/// standard hasher (SipHash, made to resist chosen keys, which sequence numbers are not) was
/// most of a query's cost. A multiplication spreads consecutive numbers over the table.
#[derive(Default, Clone, Copy)]
struct DocHasher(u64);

impl std::hash::Hasher for DocHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.0 = (u64::from(value) ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type DocMap<V> = HashMap<u32, V, std::hash::BuildHasherDefault<DocHasher>>;

/// No document (the end of a log).
pub const NO_DOC: u32 = u32::MAX;

/// Most distinct terms of one query that are scored: a pasted page as a question would
/// otherwise cost as much as the page is long. The rarest terms are kept, since they carry
/// almost all of the ranking.
pub const MAX_QUERY_TERMS: usize = 48;

/// Which stored text a document is part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The ambient log.
    Ambient,
    /// The raw log of the effort at this position in the session.
    Effort(u32),
    /// The attachment with this number (`att-<n>`); its documents are passages of its text.
    Attachment(u32),
}

/// One indexed document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doc {
    /// The message's sequence number (for an attachment passage, its message's).
    pub seq: u64,
    /// 0 for a message; for an attachment's passage, its number plus one.
    pub part: u32,
    /// Where the text is stored.
    pub source: Source,
    /// Index terms in the document.
    pub len: u32,
    /// Tokens of the text as it is shown.
    pub tokens: u32,
    /// The turn it was stored in (saturated at `u32::MAX`).
    pub turn: u32,
    /// When it was stored, in minutes since the Unix epoch (0 when the host passed no time).
    pub at_minutes: u32,
    /// The document before it in its source, or [`NO_DOC`].
    pub prev: u32,
    /// The document after it in its source, or [`NO_DOC`].
    pub next: u32,
}

/// What a new document is: its key, where it is stored, its size and when it was said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewDoc {
    /// The message's sequence number (for an attachment passage, its message's).
    pub seq: u64,
    /// 0 for a message; for an attachment's passage, its number plus one.
    pub part: u32,
    /// Where the text is stored.
    pub source: Source,
    /// Tokens of the text as it is shown.
    pub tokens: u32,
    /// The turn it was stored in.
    pub turn: u64,
    /// When it was stored (milliseconds since the Unix epoch, 0 when unknown).
    pub at_ms: u64,
}

/// The postings of one term: documents in order and the term's frequency in each.
#[derive(Debug, Clone, Default)]
struct Postings {
    docs: Vec<u32>,
    freqs: Vec<u16>,
}

/// A scored document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The document's number.
    pub doc: u32,
    /// BM25 of the document in context.
    pub score: f64,
    /// Which of the query's terms it (or a neighbour) holds, one bit per term of
    /// [`Query::terms`].
    pub matched: u64,
}

/// A prepared query: its distinct index terms, each with the word of the query it came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The query as written (what an embedding of it is looked up by).
    pub text: String,
    /// `(term, word as written)`, sorted by term.
    pub terms: Vec<(String, String)>,
}

impl Query {
    /// Analyses a query's text. Words that give no index term (stopwords) are left out.
    pub fn new(text: &str) -> Query {
        let mut terms: BTreeMap<String, String> = BTreeMap::new();
        for word in text.split_whitespace() {
            for term in super::analyzer::analyze(word) {
                let shown = word
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                terms.entry(term).or_insert(shown);
            }
        }
        Query {
            text: text.to_string(),
            terms: terms.into_iter().collect(),
        }
    }

    /// Whether the query has no searchable word.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The words of the query whose terms are set in `mask`, sorted and unique.
    pub fn words(&self, mask: u64) -> Vec<String> {
        let mut words: Vec<String> = self
            .terms
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < 64 && mask & (1 << i) != 0)
            .map(|(_, (_, word))| word.clone())
            .collect();
        words.sort();
        words.dedup();
        words
    }
}

/// The full-text index of a session's stored texts.
#[derive(Debug, Clone, Default)]
pub struct RecallIndex {
    dictionary: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    docs: Vec<Doc>,
    /// The last document of each source, where the next one links to.
    last_of: HashMap<Source, u32>,
    /// Sum of every document's length.
    total_len: u64,
    /// Sum of every document's length in context, doubled (so it stays an integer): each
    /// document counts twice, and each pair of neighbours adds both lengths once.
    context_len_doubled: u64,
}

impl RecallIndex {
    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The document with this number.
    pub fn doc(&self, doc: u32) -> &Doc {
        &self.docs[doc as usize]
    }

    /// Every document, in key order.
    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.dictionary.len()
    }

    /// The key of the next document must be above this one.
    pub fn last_key(&self) -> Option<(u64, u32)> {
        self.docs.last().map(|d| (d.seq, d.part))
    }

    /// The number of the first document whose sequence number is `seq` or more.
    pub fn first_at_or_after(&self, seq: u64) -> u32 {
        self.docs.partition_point(|d| d.seq < seq) as u32
    }

    /// The document with this key, `(seq, part)`.
    pub fn doc_of_key(&self, seq: u64, part: u32) -> Option<u32> {
        let at = self.docs.partition_point(|d| (d.seq, d.part) < (seq, part));
        self.docs
            .get(at)
            .filter(|d| (d.seq, d.part) == (seq, part))
            .map(|_| at as u32)
    }

    /// The document of a message, by its sequence number.
    pub fn message_doc(&self, seq: u64) -> Option<u32> {
        let at = self.first_at_or_after(seq);
        self.docs
            .get(at as usize)
            .filter(|d| d.seq == seq && d.part == 0 && !matches!(d.source, Source::Attachment(_)))
            .map(|_| at)
    }

    /// Bytes of memory the index holds, approximately: documents, postings and the
    /// dictionary (for the figures in the README, not an exact allocator count).
    pub fn approximate_bytes(&self) -> usize {
        let docs = self.docs.capacity() * std::mem::size_of::<Doc>();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.docs.capacity() * 4 + p.freqs.capacity() * 2 + 48)
            .sum();
        let dictionary: usize = self.dictionary.keys().map(|k| k.len() + 16 + 8).sum();
        docs + postings + dictionary + self.last_of.len() * 24
    }

    /// Adds a document after every indexed one, with its index terms (repeats kept).
    ///
    /// # Panics
    /// When its key is not above the last document's: the index is built in key order.
    pub fn add(&mut self, new: NewDoc, terms: &[String]) {
        let NewDoc {
            seq,
            part,
            source,
            tokens,
            turn,
            at_ms,
        } = new;
        assert!(
            self.last_key().is_none_or(|last| (seq, part) > last),
            "recall documents are added in key order"
        );
        let number = self.docs.len() as u32;
        let mut frequencies: BTreeMap<&str, u32> = BTreeMap::new();
        for term in terms {
            *frequencies.entry(term.as_str()).or_insert(0) += 1;
        }
        for (term, frequency) in frequencies {
            let id = match self.dictionary.get(term) {
                Some(&id) => id,
                None => {
                    let id = self.postings.len() as u32;
                    self.dictionary.insert(term.into(), id);
                    self.postings.push(Postings::default());
                    id
                }
            };
            let postings = &mut self.postings[id as usize];
            postings.docs.push(number);
            postings
                .freqs
                .push(frequency.min(u32::from(u16::MAX)) as u16);
        }
        let len = terms.len() as u32;
        let prev = self.last_of.get(&source).copied().unwrap_or(NO_DOC);
        self.total_len += u64::from(len);
        self.context_len_doubled += 2 * u64::from(len);
        if prev != NO_DOC {
            self.docs[prev as usize].next = number;
            self.context_len_doubled += u64::from(self.docs[prev as usize].len) + u64::from(len);
        }
        self.last_of.insert(source, number);
        self.docs.push(Doc {
            seq,
            part,
            source,
            len,
            tokens,
            turn: u32::try_from(turn).unwrap_or(u32::MAX),
            at_minutes: u32::try_from(at_ms / 60_000).unwrap_or(u32::MAX),
            prev,
            next: NO_DOC,
        });
    }

    /// Removes every document whose sequence number is `seq` or more (the messages of rewound
    /// turns are always the newest).
    pub fn truncate_from_seq(&mut self, seq: u64) {
        let keep = self.first_at_or_after(seq);
        if keep as usize == self.docs.len() {
            return;
        }
        for postings in &mut self.postings {
            while postings.docs.last().is_some_and(|&d| d >= keep) {
                postings.docs.pop();
                postings.freqs.pop();
            }
        }
        while self.docs.len() > keep as usize {
            let doc = self.docs.pop().expect("length checked");
            self.total_len -= u64::from(doc.len);
            self.context_len_doubled -= 2 * u64::from(doc.len);
            if doc.prev == NO_DOC {
                self.last_of.remove(&doc.source);
            } else {
                let prev = &mut self.docs[doc.prev as usize];
                prev.next = NO_DOC;
                self.context_len_doubled -= u64::from(prev.len) + u64::from(doc.len);
                self.last_of.insert(doc.source, doc.prev);
            }
        }
    }

    fn context_len(&self, doc: &Doc) -> f64 {
        let neighbour = |d: u32| {
            if d == NO_DOC {
                0.0
            } else {
                f64::from(self.docs[d as usize].len)
            }
        };
        f64::from(doc.len) + NEIGHBOUR_WEIGHT * (neighbour(doc.prev) + neighbour(doc.next))
    }

    /// Ranks the documents `accept` lets through for `query`, best first, at most `limit`.
    /// Terms held by more than `max_postings` documents are left out of the query: they are
    /// too common in this history to say which message is meant, and leaving them out keeps a
    /// query's cost bounded however long the history is (`usize::MAX` keeps every term).
    pub fn search(
        &self,
        query: &Query,
        max_postings: usize,
        limit: usize,
        accept: impl Fn(u32, &Doc) -> bool,
    ) -> Vec<Scored> {
        let count = self.docs.len();
        if count == 0 || query.is_empty() {
            return Vec::new();
        }
        let average = self.context_len_doubled as f64 / (2.0 * count as f64);
        let mut scores: DocMap<(f64, u64)> = DocMap::default();
        for (bit, postings) in self.query_postings(query) {
            if postings.docs.len() > max_postings {
                continue;
            }
            // The term's frequency in each document read in context. Each document's sum is
            // made in posting order, and each document's score is added to once per term, so
            // the result never depends on the map's order.
            let mut in_context: DocMap<f64> =
                DocMap::with_capacity_and_hasher(3 * postings.docs.len(), Default::default());
            for (&doc, &frequency) in postings.docs.iter().zip(&postings.freqs) {
                let frequency = f64::from(frequency);
                let d = &self.docs[doc as usize];
                for (neighbour, weight) in [(d.prev, NEIGHBOUR_WEIGHT), (d.next, NEIGHBOUR_WEIGHT)]
                {
                    if neighbour != NO_DOC {
                        *in_context.entry(neighbour).or_insert(0.0) += weight * frequency;
                    }
                }
                *in_context.entry(doc).or_insert(0.0) += frequency;
            }
            // Documents holding the term in context.
            let idf = inverse_document_frequency(count as f64, in_context.len() as f64);
            for (doc, frequency) in in_context {
                let length = self.context_len(&self.docs[doc as usize]);
                let saturation =
                    frequency * (K1 + 1.0) / (frequency + K1 * (1.0 - B + B * length / average));
                let entry = scores.entry(doc).or_insert((0.0, 0));
                entry.0 += idf * saturation;
                entry.1 |= 1 << bit;
            }
        }
        let mut ranked: Vec<Scored> = scores
            .into_iter()
            .filter(|(doc, _)| accept(*doc, &self.docs[*doc as usize]))
            .map(|(doc, (score, matched))| Scored {
                doc,
                score: round4(score),
                matched,
            })
            .collect();
        // Best first; equal scores favour the newer document, then the order is total. Only
        // the best `limit` are sorted: a frequent word touches thousands of documents.
        let order = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(b.doc.cmp(&a.doc));
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, order);
        }
        ranked.truncate(limit);
        ranked.sort_by(order);
        ranked
    }

    /// The postings of the query's terms, at most [`MAX_QUERY_TERMS`] of them (the rarest),
    /// each with its bit in [`Scored::matched`]; in the query's term order.
    fn query_postings(&self, query: &Query) -> Vec<(usize, &Postings)> {
        let mut found: Vec<(usize, &Postings)> = query
            .terms
            .iter()
            .enumerate()
            .take(64)
            .filter_map(|(bit, (term, _))| {
                let id = *self.dictionary.get(term.as_str())?;
                let postings = &self.postings[id as usize];
                (!postings.docs.is_empty()).then_some((bit, postings))
            })
            .collect();
        if found.len() > MAX_QUERY_TERMS {
            found.sort_by_key(|(bit, p)| (p.docs.len(), *bit));
            found.truncate(MAX_QUERY_TERMS);
            found.sort_by_key(|(bit, _)| *bit);
        }
        found
    }
}

/// BM25's inverse document frequency (the variant that is never negative).
fn inverse_document_frequency(documents: f64, holding: f64) -> f64 {
    libm::log(1.0 + (documents - holding + 0.5) / (holding + 0.5))
}

/// Rounds a score to 4 decimals, so results print the same everywhere.
fn round4(score: f64) -> f64 {
    libm::round(score * 10_000.0) / 10_000.0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::recall::analyzer::analyze;

    pub(crate) fn doc(seq: u64, source: Source, tokens: u32) -> NewDoc {
        NewDoc {
            seq,
            part: 0,
            source,
            tokens,
            turn: seq / 2 + 1,
            at_ms: 0,
        }
    }

    fn index_of(texts: &[(Source, &str)]) -> RecallIndex {
        let mut index = RecallIndex::default();
        for (seq, (source, text)) in texts.iter().enumerate() {
            index.add(doc(seq as u64, *source, 10), &analyze(text));
        }
        index
    }

    #[test]
    fn a_neighbour_brings_the_answer_to_its_question() {
        let index = index_of(&[
            (Source::Effort(0), "How are your pets doing?"),
            (Source::Effort(0), "We got another cat named Bailey."),
            (Source::Effort(1), "The weather was lovely on the coast."),
            (Source::Effort(1), "We swam every morning."),
        ]);
        let hits = index.search(&Query::new("pets"), usize::MAX, 10, |_, _| true);
        let docs: Vec<u32> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(
            docs,
            [0, 1],
            "the question first, then its answer through it"
        );
        assert!(hits[0].score > hits[1].score);
    }

    #[test]
    fn neighbours_are_taken_from_the_same_source_only() {
        let index = index_of(&[
            (Source::Effort(0), "budget spreadsheet"),
            (Source::Ambient, "unrelated chat"),
            (Source::Effort(0), "more about the plan"),
        ]);
        assert_eq!(index.doc(0).next, 2);
        assert_eq!(index.doc(2).prev, 0);
        assert_eq!(index.doc(1).prev, NO_DOC);
        let hits = index.search(&Query::new("spreadsheet"), usize::MAX, 10, |_, _| true);
        assert!(hits.iter().all(|h| h.doc != 1));
    }

    #[test]
    fn truncation_gives_the_index_of_the_shorter_history() {
        let texts = [
            (Source::Effort(0), "the login page is slow"),
            (Source::Effort(0), "the bundle is two megabytes"),
            (Source::Ambient, "lunch plans for friday"),
            (Source::Effort(0), "we split the login bundle"),
        ];
        let mut longer = index_of(&texts);
        longer.truncate_from_seq(2);
        let shorter = index_of(&texts[..2]);
        for query in ["login bundle", "lunch", "slow page"] {
            let q = Query::new(query);
            assert_eq!(
                longer.search(&q, usize::MAX, 10, |_, _| true),
                shorter.search(&q, usize::MAX, 10, |_, _| true),
                "{query}"
            );
        }
        assert_eq!(longer.docs(), shorter.docs());
        assert_eq!(longer.context_len_doubled, shorter.context_len_doubled);
        assert_eq!(longer.total_len, shorter.total_len);
    }

    #[test]
    fn a_query_of_stopwords_finds_nothing() {
        let index = index_of(&[(Source::Ambient, "what is it")]);
        assert!(Query::new("what is it").is_empty());
        assert!(index
            .search(&Query::new("what is it"), usize::MAX, 10, |_, _| true)
            .is_empty());
    }

    #[test]
    fn matched_words_are_the_query_words_as_written() {
        let index = index_of(&[(Source::Ambient, "Melanie painted a sunrise")]);
        let query = Query::new("When did Melanie paint the sunrise?");
        let hits = index.search(&query, usize::MAX, 10, |_, _| true);
        assert_eq!(
            query.words(hits[0].matched),
            ["melanie", "paint", "sunrise"]
        );
    }

    #[test]
    fn a_bounded_query_leaves_out_words_too_common_to_tell_messages_apart() {
        let texts: Vec<(Source, String)> = (0..50)
            .map(|i| (Source::Ambient, format!("deploy number {i}")))
            .collect();
        let mut index = RecallIndex::default();
        for (seq, (source, text)) in texts.iter().enumerate() {
            index.add(doc(seq as u64, *source, 5), &analyze(text));
        }
        let query = Query::new("deploy number 7");
        let bounded = index.search(&query, 4, 100, |_, _| true);
        // "deploy" and "number" are in every message: only "7" is scored.
        assert!(bounded.iter().all(|h| query.words(h.matched) == ["7"]));
        assert_eq!(bounded[0].doc, 7);
        let full = index.search(&query, usize::MAX, 100, |_, _| true);
        assert_eq!(full.len(), 50);
        assert_eq!(query.words(full[0].matched), ["7", "deploy", "number"]);
    }
}
