//! The rank table as a hash map over byte strings, and byte-pair merging.
//!
//! A piece that is itself a token (most English words are) costs one lookup. Other pieces are
//! merged exactly like tiktoken: repeatedly join the adjacent pair whose joined bytes have the
//! lowest rank, the leftmost on ties, until no joined pair is a token. Short pieces use a
//! small array scan (fast for a few dozen bytes); long ones use a heap over a linked list, so
//! a megabyte-long piece (one repeated letter, say) costs O(n log n), not O(n²).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A token's rank, which is also its id.
pub type Rank = u32;

/// Pieces at least this long are merged with the heap; below it the array scan is faster.
const HEAP_MERGE_FROM: usize = 16;

/// The tokens of an encoding, looked up by their bytes.
pub(crate) struct Vocabulary {
    /// Every token's bytes, in rank order.
    bytes: Vec<u8>,
    /// `offsets[r]..offsets[r + 1]` are token `r`'s bytes.
    offsets: Vec<u32>,
    /// Open addressing with linear probing. Each slot holds a token's first 12 bytes, its
    /// length and its rank ([`Slot`]), so a lookup of a token up to 12 bytes long (nearly all
    /// lookups) reads one slot and never the token bytes, which are far away in memory.
    slots: Vec<Slot>,
    mask: usize,
    /// The rank of every two-byte token, indexed by the two bytes (`Rank::MAX` when the pair
    /// is not a token): every merge starts by ranking all adjacent byte pairs of a piece, and
    /// a direct index is several times cheaper than hashing them.
    byte_pairs: Vec<Rank>,
    /// Counts of recently merged long pieces. Text repeats (identifiers in code, sentences
    /// in chat histories, the same message counted twice), and a long piece's merge costs
    /// far more than a lookup.
    merged: MergeCache,
}

/// A bounded map from long pieces to their token counts. It forgets everything when full,
/// which bounds its memory without bookkeeping on the hot path. A pure memo of a
/// deterministic function, so it can never change a count.
struct MergeCache {
    entries: std::sync::Mutex<std::collections::HashMap<Box<[u8]>, u32, PieceHashing>>,
}

/// At most this many pieces are remembered (a few MiB at most).
const MERGE_CACHE_ENTRIES: usize = 16_384;
/// Longer pieces are not remembered: they are rare, and one could hold megabytes.
const MERGE_CACHE_MAX_PIECE: usize = 4_096;

impl MergeCache {
    fn new() -> MergeCache {
        MergeCache {
            entries: std::sync::Mutex::new(std::collections::HashMap::with_hasher(PieceHashing)),
        }
    }

    #[inline]
    fn lookup(&self, piece: &[u8]) -> Option<usize> {
        let entries = self.entries.lock().ok()?;
        entries.get(piece).map(|&count| count as usize)
    }

    fn remember(&self, piece: &[u8], count: usize) {
        if piece.len() > MERGE_CACHE_MAX_PIECE {
            return;
        }
        // A poisoned lock only means another thread panicked mid-insert; the memo is then
        // skipped, never wrong.
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MERGE_CACHE_ENTRIES {
                entries.clear();
            }
            entries.insert(piece.into(), u32::try_from(count).unwrap_or(u32::MAX));
        }
    }
}

/// Hashes byte-string keys with [`hash_bytes`] instead of SipHash.
#[derive(Clone, Copy, Default)]
struct PieceHashing;

impl std::hash::BuildHasher for PieceHashing {
    type Hasher = PieceHasher;

    fn build_hasher(&self) -> PieceHasher {
        PieceHasher(0)
    }
}

/// The hasher [`PieceHashing`] builds: mixes every written slice with [`hash_bytes`].
struct PieceHasher(u64);

impl std::hash::Hasher for PieceHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = self.0.rotate_left(17) ^ hash_bytes(bytes);
    }
}

/// Bytes of a token kept in its slot.
const INLINE_BYTES: usize = 12;
/// The bits of [`Slot::meta`] that hold the rank plus one (0: the slot is empty).
const RANK_MASK: u64 = 0x00FF_FFFF;
/// Tables may have at most this many tokens, so that a rank plus one fits a slot.
pub(crate) const MAX_TOKENS: usize = (1 << 24) - 2;

/// One slot of the vocabulary's table: `head` is the token's bytes 0..8 (little-endian, zero
/// padded); `meta` is `bytes 8..12 << 32 | length << 24 | (rank + 1)` (the length capped at
/// 255). Two words compare a candidate completely for tokens up to 12 bytes.
#[derive(Clone, Copy, Default)]
struct Slot {
    head: u64,
    meta: u64,
}

/// The first `bytes.len()` (at most 8) bytes as a little-endian word, zero padded. Loads
/// overlap for lengths that are not a power of two; the overlapping bytes are equal, so
/// or-ing them is exact.
#[inline]
fn pack_up_to_8(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    if len >= 8 {
        load8(bytes, 0)
    } else if len >= 4 {
        u64::from(load4(bytes, 0)) | u64::from(load4(bytes, len - 4)) << (8 * (len - 4))
    } else if len > 0 {
        u64::from(bytes[0])
            | u64::from(bytes[len / 2]) << (8 * (len / 2))
            | u64::from(bytes[len - 1]) << (8 * (len - 1))
    } else {
        0
    }
}

/// The `(head, meta without the rank)` a slot for `bytes` holds.
#[inline]
fn slot_key(bytes: &[u8]) -> (u64, u64) {
    let len = bytes.len();
    let head = pack_up_to_8(&bytes[..len.min(8)]);
    let tail = if len > 8 {
        pack_up_to_8(&bytes[8..len.min(INLINE_BYTES)])
    } else {
        0
    };
    (head, tail << 32 | (len.min(255) as u64) << 24)
}

/// A fast multiplicative hash. Tokens and the spans the merge asks about are short (a few
/// bytes on average), so slices up to 16 bytes are read with at most two overlapping loads and
/// mixed once; longer ones are folded 8 bytes at a time. The table is built once, so a simple,
/// well-mixed hash beats SipHash by far.
#[inline]
fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let len = bytes.len();
    let (a, b) = if len >= 8 {
        if len > 16 {
            return hash_long(bytes);
        }
        (load8(bytes, 0), load8(bytes, len - 8))
    } else if len >= 4 {
        (u64::from(load4(bytes, 0)), u64::from(load4(bytes, len - 4)))
    } else if len > 0 {
        let word =
            u64::from(bytes[0]) | u64::from(bytes[len / 2]) << 8 | u64::from(bytes[len - 1]) << 16;
        (word, 0)
    } else {
        (0, 0)
    };
    let mixed = (a ^ K).wrapping_mul(b ^ (len as u64).wrapping_mul(K) ^ 0xD6E8_FEB8_6659_FD93);
    let hash = (mixed ^ (mixed >> 32)).wrapping_mul(K);
    hash ^ (hash >> 29)
}

#[inline]
fn load8(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[inline]
fn load4(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// [`hash_bytes`] for slices longer than 16 bytes.
fn hash_long(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        hash = (hash.rotate_left(23) ^ load8(chunk, 0)).wrapping_mul(K);
    }
    let tail = bytes.len() - 8;
    hash = (hash.rotate_left(23) ^ load8(bytes, tail)).wrapping_mul(K);
    hash ^ (hash >> 29)
}

impl Vocabulary {
    /// Builds the lookup table over `bytes`/`offsets` (token `r` is
    /// `bytes[offsets[r]..offsets[r + 1]]`).
    pub(crate) fn new(bytes: Vec<u8>, offsets: Vec<u32>) -> Vocabulary {
        let mut vocabulary = Vocabulary::empty(bytes, offsets);
        vocabulary.index_tokens(0..vocabulary.len());
        vocabulary
    }

    /// The vocabulary over `bytes`/`offsets` with no token indexed yet: lookups find nothing
    /// until [`Vocabulary::index_tokens`] has indexed every rank. Building in steps lets a
    /// browser page stay responsive while a table is prepared.
    pub(crate) fn empty(bytes: Vec<u8>, offsets: Vec<u32>) -> Vocabulary {
        let tokens = offsets.len().saturating_sub(1);
        // At most half full, so probe sequences stay short.
        let capacity = (tokens * 2).next_power_of_two().max(16);
        Vocabulary {
            bytes,
            offsets,
            slots: vec![Slot::default(); capacity],
            mask: capacity - 1,
            byte_pairs: vec![Rank::MAX; 1 << 16],
            merged: MergeCache::new(),
        }
    }

    /// Indexes the tokens whose ranks are in `ranks` (each rank exactly once over all calls).
    pub(crate) fn index_tokens(&mut self, ranks: std::ops::Range<usize>) {
        for rank in ranks {
            let token = self.token(rank as Rank);
            // An empty token is a gap in the ranks (a common-scripts table leaves out the
            // tokens of other scripts that way): no piece can match it, so it is not indexed.
            if token.is_empty() {
                continue;
            }
            let hash = hash_bytes(token);
            let byte_pair = match *token {
                [first, second] => Some(usize::from(first) << 8 | usize::from(second)),
                _ => None,
            };
            let (head, meta) = slot_key(token);
            let mut slot = (hash as usize) & self.mask;
            while self.slots[slot].meta != 0 {
                slot = (slot + 1) & self.mask;
            }
            self.slots[slot] = Slot {
                head,
                meta: meta | (rank as u64 + 1),
            };
            if let Some(index) = byte_pair {
                self.byte_pairs[index] = rank as Rank;
            }
        }
    }

    /// The number of tokens.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Token `rank`'s bytes.
    #[inline]
    pub(crate) fn token(&self, rank: Rank) -> &[u8] {
        let r = rank as usize;
        &self.bytes[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// The rank of the token whose bytes are `bytes`, if it is one.
    #[inline]
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        let hash = hash_bytes(bytes);
        let (head, meta) = slot_key(bytes);
        let mut slot = (hash as usize) & self.mask;
        loop {
            let entry = self.slots[slot];
            if entry.meta == 0 {
                return None;
            }
            if entry.head == head && entry.meta & !RANK_MASK == meta {
                let rank = ((entry.meta & RANK_MASK) - 1) as Rank;
                // Bytes beyond the slot's twelve must be compared with the token itself.
                if bytes.len() <= INLINE_BYTES || self.token(rank) == bytes {
                    return Some(rank);
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }

    /// The number of tokens `piece` merges into.
    #[inline]
    pub(crate) fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.rank(piece).is_some() {
            return piece.len().min(1);
        }
        if piece.len() < HEAP_MERGE_FROM {
            return self.merge_short(piece, |_| {});
        }
        if let Some(count) = self.merged.lookup(piece) {
            return count;
        }
        let count = self.merge_long(piece, |_| {});
        self.merged.remember(piece, count);
        count
    }

    /// Appends the ranks `piece` merges into to `out`.
    pub(crate) fn encode_piece(&self, piece: &[u8], out: &mut Vec<Rank>) {
        if piece.is_empty() {
            return;
        }
        if let Some(rank) = self.rank(piece) {
            out.push(rank);
            return;
        }
        let mut emit = |part: &[u8]| {
            // Every single byte is a token, and every merged part was found in the table, so
            // the lookup cannot fail for a well-formed table; the fallback keeps counts right.
            out.push(self.rank(part).unwrap_or(Rank::MAX));
        };
        if piece.len() < HEAP_MERGE_FROM {
            self.merge_short(piece, &mut emit);
        } else {
            self.merge_long(piece, &mut emit);
        }
    }

    /// The rank of `piece[start..end]`, or `Rank::MAX` when it is not a token.
    #[inline]
    fn pair_rank(&self, piece: &[u8], start: usize, end: usize) -> Rank {
        if end - start == 2 {
            return self.byte_pair_rank(piece, start);
        }
        self.rank(&piece[start..end]).unwrap_or(Rank::MAX)
    }

    /// The rank of the two bytes at `piece[start..start + 2]`, or `Rank::MAX`.
    #[inline]
    fn byte_pair_rank(&self, piece: &[u8], start: usize) -> Rank {
        self.byte_pairs[usize::from(piece[start]) << 8 | usize::from(piece[start + 1])]
    }

    /// Merges a short piece by scanning an array of join ranks for the lowest (tiktoken's own
    /// algorithm, which is fastest when the piece fits in a cache line or two). The arrays are
    /// indexed by byte position and live on the stack, so nothing moves or allocates: a joined
    /// part's slot is set to `Rank::MAX`. Calls `emit` with each final part and returns how
    /// many there are.
    fn merge_short(&self, piece: &[u8], mut emit: impl FnMut(&[u8])) -> usize {
        let n = piece.len();
        debug_assert!((2..HEAP_MERGE_FROM).contains(&n));
        // For a position s that starts a part: end[s] is where it ends, prev[s] where the
        // previous part starts, join[s] the rank of joining it with the next part.
        let mut end = [0u8; HEAP_MERGE_FROM];
        let mut prev = [0u8; HEAP_MERGE_FROM];
        let mut join = [Rank::MAX; HEAP_MERGE_FROM];
        for s in 0..n {
            end[s] = (s + 1) as u8;
            prev[s] = s.wrapping_sub(1) as u8;
        }
        let join = &mut join[..n];
        for (s, rank) in join[..n - 1].iter_mut().enumerate() {
            *rank = self.byte_pair_rank(piece, s);
        }
        let mut parts = n;
        loop {
            // The lowest rank, then its leftmost position: two simple passes that compilers
            // vectorise, cheaper than keeping a heap for a handful of parts.
            let lowest = join.iter().copied().min().unwrap_or(Rank::MAX);
            if lowest == Rank::MAX {
                break;
            }
            let start = join.iter().position(|&r| r == lowest).unwrap_or(0);
            let middle = usize::from(end[start]);
            let joined_end = usize::from(end[middle]);
            end[start] = joined_end as u8;
            join[middle] = Rank::MAX;
            parts -= 1;
            join[start] = if joined_end < n {
                prev[joined_end] = start as u8;
                self.pair_rank(piece, start, usize::from(end[joined_end]))
            } else {
                Rank::MAX
            };
            if start > 0 {
                let before = usize::from(prev[start]);
                join[before] = self.pair_rank(piece, before, joined_end);
            }
        }
        let mut at = 0;
        while at < n {
            let next = usize::from(end[at]);
            emit(&piece[at..next]);
            at = next;
        }
        parts
    }

    /// Merges a piece with a min-heap of candidate joins over a linked list of parts.
    /// Heap entries pack `(rank, start)` into one `u64`, so the smallest is the lowest rank and
    /// then the leftmost, exactly tiktoken's choice. An entry is stale once the part at `start`
    /// has changed its join rank (or stopped being a part); stale entries are skipped when
    /// popped, which keeps every step O(log n). The arrays are reused from piece to piece.
    fn merge_long(&self, piece: &[u8], mut emit: impl FnMut(&[u8])) -> usize {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let parts = self.merge_with_heap(piece, &mut scratch);
            let end = &scratch.end;
            let mut at = 0;
            while at < piece.len() {
                let next = end[at] as usize;
                emit(&piece[at..next]);
                at = next;
            }
            parts
        })
    }

    /// The heap merge itself; leaves each final part's end in `scratch.end`.
    fn merge_with_heap(&self, piece: &[u8], scratch: &mut Scratch) -> usize {
        let n = piece.len();
        debug_assert!(n >= 2 && u32::try_from(n).is_ok());
        // For a position s that starts a part: end[s] is where the part ends, prev[s] where the
        // previous part starts, and join[s] the rank of joining it with the next part
        // (Rank::MAX when that is not a token, or when s no longer starts a part).
        let Scratch {
            end,
            prev,
            join,
            heap,
        } = scratch;
        end.clear();
        end.extend(1..=n as u32);
        prev.clear();
        prev.extend((0..n as u32).map(|s| s.wrapping_sub(1)));
        join.clear();
        let mut entries = std::mem::take(heap).into_vec();
        entries.clear();
        for s in 0..n - 1 {
            let rank = self.byte_pair_rank(piece, s);
            join.push(rank);
            if rank != Rank::MAX {
                entries.push(Reverse(u64::from(rank) << 32 | s as u64));
            }
        }
        join.push(Rank::MAX);
        // Building the heap from all entries at once is linear, unlike n pushes.
        let mut candidates = BinaryHeap::from(entries);
        let mut parts = n;
        while let Some(Reverse(entry)) = candidates.pop() {
            let rank = (entry >> 32) as Rank;
            let start = (entry & 0xFFFF_FFFF) as usize;
            if join[start] != rank {
                continue;
            }
            let middle = end[start] as usize;
            let joined_end = end[middle] as usize;
            end[start] = joined_end as u32;
            join[middle] = Rank::MAX;
            parts -= 1;
            join[start] = if joined_end < n {
                prev[joined_end] = start as u32;
                self.pair_rank(piece, start, end[joined_end] as usize)
            } else {
                Rank::MAX
            };
            if join[start] != Rank::MAX {
                candidates.push(Reverse(u64::from(join[start]) << 32 | start as u64));
            }
            if start > 0 {
                let before = prev[start] as usize;
                join[before] = self.pair_rank(piece, before, joined_end);
                if join[before] != Rank::MAX {
                    candidates.push(Reverse(u64::from(join[before]) << 32 | before as u64));
                }
            }
        }
        *heap = candidates;
        parts
    }
}

/// The heap merge's working arrays, kept between pieces so that merging allocates only when a
/// piece is longer than any before it.
#[derive(Default)]
struct Scratch {
    end: Vec<u32>,
    prev: Vec<u32>,
    join: Vec<Rank>,
    heap: BinaryHeap<Reverse<u64>>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small vocabulary whose tokens share long prefixes, so that lookups land on slots of
    /// tokens that differ only in the bytes kept beyond the first eight, or beyond twelve.
    fn vocabulary(tokens: &[&[u8]]) -> Vocabulary {
        let mut bytes = Vec::new();
        let mut offsets = vec![0u32];
        for token in tokens {
            bytes.extend_from_slice(token);
            offsets.push(bytes.len() as u32);
        }
        Vocabulary::new(bytes, offsets)
    }

    #[test]
    fn lookups_compare_every_byte_of_the_token() {
        let tokens: Vec<Vec<u8>> = (b'a'..=b'p')
            .flat_map(|x| {
                [
                    format!("abcdefgh{}", x as char).into_bytes(),
                    format!("abcdefghij{}", x as char).into_bytes(),
                    format!("abcdefghijkl{}", x as char).into_bytes(),
                    format!("abcdefghijklmnop{}", x as char).into_bytes(),
                    format!("ab{}", x as char).into_bytes(),
                ]
            })
            .collect();
        let slices: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        let vocabulary = vocabulary(&slices);
        for (rank, token) in tokens.iter().enumerate() {
            assert_eq!(vocabulary.rank(token), Some(rank as Rank), "{token:?}");
            // The same length and prefix with another last byte is not a token.
            let mut near = token.clone();
            *near.last_mut().unwrap() = b'z';
            assert_eq!(vocabulary.rank(&near), None, "{near:?}");
            // Nor is the token with a byte more or less.
            assert_eq!(vocabulary.rank(&[token.as_slice(), b"a"].concat()), None);
            if token.len() > 3 {
                assert_eq!(vocabulary.rank(&token[..token.len() - 1]), None);
            }
        }
        assert_eq!(vocabulary.rank(b""), None);
    }

    #[test]
    fn packing_keeps_every_byte_and_the_length() {
        let text = b"0123456789abcdefXYZ";
        let mut seen = std::collections::HashSet::new();
        for len in 0..=text.len() {
            assert!(
                seen.insert(slot_key(&text[..len])),
                "length {len} packs like a shorter one"
            );
        }
        for len in 1..=8 {
            let packed = pack_up_to_8(&text[..len]);
            assert_eq!(&packed.to_le_bytes()[..len], &text[..len]);
            assert!(packed.to_le_bytes()[len..].iter().all(|&b| b == 0));
        }
    }
}
