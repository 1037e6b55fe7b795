//! A short conversation history of a level-3 compaction (an incident, chatter, a decision with
//! identifiers, an open question), shared by the tests of the rolling summary's extractive
//! fallback (ccm-core) and of its request (ccm-engine), so both read the same history.

use ccm_core::compaction::{HistoryText, RollingInput, SeqRange};

/// The history: sequence ranges and the text of each exchange.
pub const HISTORY: [(u64, u64, &str); 4] = [
    (
        11,
        12,
        "USER: The nightly export fails with error E1042 on the orders table.\nASSISTANT: The export job times out after 300 s.",
    ),
    (
        13,
        14,
        "USER: Nice weather today.\nASSISTANT: Indeed, sunny and mild.",
    ),
    (
        15,
        16,
        "USER: We decided to raise export_timeout_s to 900 in config/export.toml.\nASSISTANT: Changed; the next run is at 02:00.",
    ),
    (
        17,
        18,
        "USER: Should we also split the export into batches?\nASSISTANT: Maybe later, it is still an open question.",
    ),
];

/// The rolling summary's input over [`HISTORY`], after an optional earlier summary.
pub fn input<'a>(previous: Option<&'a str>, previous_covers: &'a [SeqRange]) -> RollingInput<'a> {
    RollingInput {
        previous_text: previous,
        previous_covers,
        history: HISTORY
            .iter()
            .map(|&(a, b, text)| HistoryText {
                seqs: SeqRange::new(a, b),
                text,
            })
            .collect(),
    }
}
