//! Building a tokenizer in steps (how browsers load a table without a long task) gives the
//! same tokenizer as building it at once, and refuses what `from_table` refuses.

use ccm_tokens::{Encoding, LoadError, Tokenizer};

const O200K: &[u8] = include_bytes!("../tables/o200k_base.ccmt");
const CL100K: &[u8] = include_bytes!("../tables/cl100k_base.ccmt");

#[test]
fn steps_report_progress_and_end_in_the_same_tokenizer() {
    let text = include_str!("../../../ARCHITECTURE.md");
    let at_once = Tokenizer::from_table(Encoding::Cl100kBase, CL100K).expect("valid table");
    let mut build = Tokenizer::build_in_steps(Encoding::Cl100kBase, CL100K).expect("valid table");
    let mut progress = Vec::new();
    while !build.is_done() {
        progress.push(build.step(30_000));
    }
    assert_eq!(
        progress,
        [
            (30_000, 100_256),
            (60_000, 100_256),
            (90_000, 100_256),
            (100_256, 100_256)
        ]
    );
    let stepped = build.finish();
    assert_eq!(stepped.vocabulary_size(), 100_256);
    assert_eq!(stepped.encode(text), at_once.encode(text));
    assert_eq!(stepped.count(text), at_once.count(text));
}

#[test]
fn finishing_early_indexes_the_rest() {
    let mut build = Tokenizer::build_in_steps(Encoding::O200kBase, O200K).expect("valid table");
    build.step(10);
    let stepped = build.finish();
    let at_once = Tokenizer::from_table(Encoding::O200kBase, O200K).expect("valid table");
    let text = include_str!("../../../README.md");
    assert_eq!(stepped.encode(text), at_once.encode(text));
    assert_eq!(stepped.count("hello world"), 2);
}

#[test]
fn a_table_for_another_encoding_or_a_damaged_one_is_refused() {
    match Tokenizer::build_in_steps(Encoding::O200kBase, CL100K) {
        Err(LoadError::WrongEncoding { expected, found }) => {
            assert_eq!(expected, Encoding::O200kBase);
            assert_eq!(found, "cl100k_base");
        }
        other => panic!("expected a wrong-encoding error, got {:?}", other.err()),
    }
    let truncated = &O200K[..O200K.len() / 2];
    let error = Tokenizer::build_in_steps(Encoding::O200kBase, truncated)
        .err()
        .expect("a truncated table is refused");
    assert!(error.to_string().contains("truncated"), "{error}");
}
