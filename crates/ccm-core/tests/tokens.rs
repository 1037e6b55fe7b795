//! Exact token counts of the compiled-in tables and the encodings' names.
#![cfg(feature = "embedded-tables")]

use ccm_core::{Encoding, ExactCounter, TokenCounter};
use ccm_test_support::portable_tests;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

portable_tests! {
    fn exact_counts_for_known_strings() {
        let o200k = ExactCounter::new(Encoding::O200kBase);
        let cl100k = ExactCounter::new(Encoding::Cl100kBase);
        // "hello world" is two tokens in both encodings.
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(cl100k.count("hello world"), 2);
        assert_eq!(o200k.count(""), 0);
        // Special-token markers are counted as ordinary text, never as one control token.
        assert!(o200k.count("<|endoftext|>") > 1);
    }

    fn encoding_names_round_trip() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            assert_eq!(Encoding::from_name(encoding.name()).unwrap(), encoding);
        }
        assert_eq!(
            Encoding::from_name("p50k").unwrap_err().to_string(),
            "unknown encoding 'p50k'; supported: o200k_base, cl100k_base"
        );
    }
}
