//! Names for plans and requests: the request hash (of the messages a provider receives) and
//! FNV-1a for short stable ids. Both are the same on every platform and need no dependency.

use crate::model::ContextMessage;

/// The hash of a request's messages, 16 hex digits: each message's role, its length in bytes
/// and its content, in order, read eight bytes at a time (little-endian), each word folded in
/// with a multiply and a shift. The length keeps any content from imitating a message boundary.
/// Equal messages give equal hashes on every platform. Word by word rather than byte by byte
/// (as FNV-1a would) because a request is the whole context and this runs for every plan.
pub fn request_hash(messages: &[ContextMessage]) -> String {
    let mut hash = FNV_OFFSET;
    for message in messages {
        hash = fold_words(hash, message.role.as_str().as_bytes());
        hash = fold_words(hash, &(message.content.len() as u64).to_le_bytes());
        hash = fold_words(hash, message.content.as_bytes());
    }
    format!("{hash:016x}")
}

/// Folds `bytes` into `hash` eight at a time; the last, shorter word is padded with zeros
/// (callers hash a length first wherever a boundary matters).
pub(super) fn fold_words(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let fold = |hash: u64, word: u64| {
        let mixed = (hash ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        mixed ^ (mixed >> 29)
    };
    for word in &mut words {
        hash = fold(
            hash,
            u64::from_le_bytes(word.try_into().expect("eight bytes")),
        );
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        hash = fold(hash, u64::from_le_bytes(last));
    }
    hash
}

pub(super) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_feed(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a, 64 bits, as 16 hex digits. Enough to name a plan for replay and comparison (not a
/// security boundary), and it needs no dependency.
pub(crate) fn fnv_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv_feed(FNV_OFFSET, bytes))
}
