//! The committed rank tables hold exactly tiktoken-rs' ordinary tokens, rank for rank. If this
//! fails after a tiktoken-rs update, regenerate the tables (see `tables/README.md`).

// tiktoken-rs is a dev-dependency on native targets only.
#![cfg(not(target_arch = "wasm32"))]

use ccm_tokens::table::decode_table;
use tiktoken_rs::{CoreBPE, Rank};

fn check_table(name: &str, data: &[u8], bpe: &CoreBPE, expected_tokens: usize) {
    let table = decode_table(data).unwrap_or_else(|e| panic!("{name}.ccmt: {e}"));
    assert_eq!(table.name, name);
    assert_eq!(
        table.offsets.len(),
        expected_tokens + 1,
        "{name}: token count"
    );
    assert_eq!(
        table.offsets.last().map(|&o| o as usize),
        Some(table.bytes.len())
    );
    for rank in 0..expected_tokens {
        let ours = &table.bytes[table.offsets[rank] as usize..table.offsets[rank + 1] as usize];
        let theirs = bpe
            .decode_bytes(&[rank as Rank])
            .unwrap_or_else(|e| panic!("{name}: tiktoken-rs has no token at rank {rank}: {e}"));
        assert_eq!(ours, &theirs[..], "{name}: rank {rank}");
    }
    // The rank after the table is not an ordinary token: it has no token at all or is special.
    if let Ok(bytes) = bpe.decode_bytes(&[expected_tokens as Rank]) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            bpe.special_tokens().contains(text.as_ref()),
            "{name}: rank {expected_tokens} is an ordinary token missing from the table"
        );
    }
}

#[test]
fn o200k_base_matches_tiktoken() {
    let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs loads o200k_base");
    check_table(
        "o200k_base",
        include_bytes!("../tables/o200k_base.ccmt"),
        &bpe,
        199_998,
    );
}

#[test]
fn cl100k_base_matches_tiktoken() {
    let bpe = tiktoken_rs::cl100k_base().expect("tiktoken-rs loads cl100k_base");
    check_table(
        "cl100k_base",
        include_bytes!("../tables/cl100k_base.ccmt"),
        &bpe,
        100_256,
    );
}
