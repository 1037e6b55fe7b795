//! Synthetic text for runs that need large, distinct documents without a data set: the
//! attachments of the CLI's compaction proof run (`ccm proof`), and of the tests that must
//! play the same documents (through ccm-test-support, since the core's tests cannot depend on
//! the CLI).

/// Topic words of the synthetic documents and conversations.
pub const WORDS: [&str; 24] = [
    "invoice",
    "ledger",
    "rounding",
    "currency",
    "schema",
    "migration",
    "index",
    "replica",
    "latency",
    "cache",
    "shard",
    "queue",
    "retry",
    "backoff",
    "token",
    "session",
    "cookie",
    "header",
    "payload",
    "checksum",
    "archive",
    "snapshot",
    "rollback",
    "deploy",
];

/// A deterministic document of about `words` words for topic `seed`.
pub fn document(seed: usize, words: usize) -> String {
    let mut text = format!("Design notes {seed}. ");
    for i in 0..words {
        text.push_str(WORDS[(i * 7 + seed * 13 + i / 5) % WORDS.len()]);
        text.push_str(if i % 12 == 11 { ". " } else { " " });
    }
    text
}
