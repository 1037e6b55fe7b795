//! The store's import (what the app's import calls) refuses the documents the library's
//! `Session.fromJSON` and `importSession` refuse, with the same message: an integer beyond
//! 2^53 and a text longer than 16,000,000 characters. Nothing is stored then.

#![cfg(target_arch = "wasm32")]

use ccm_browser::{BackendChoice, BrowserError, BrowserStore};
use ccm_core::{Config, Session};
use serde_json::Value;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// A real session document with one turn.
fn document() -> Value {
    let mut session = Session::new(Config::default()).unwrap();
    session.begin_turn("What is the weather?", 1).unwrap();
    session.end_turn("Sunny.", 1).unwrap();
    serde_json::from_str(&session.to_json().unwrap()).unwrap()
}

#[wasm_bindgen_test]
async fn the_store_import_refuses_what_the_library_refuses_with_its_message() {
    let store = BrowserStore::open(BackendChoice::LocalStorage, "ccm-import-checks-test")
        .await
        .unwrap();
    let before = store.list().await.unwrap().len();

    let mut unsafe_number = document();
    unsafe_number["turn"] = serde_json::from_str("9007199254740993").unwrap();
    let long_text = {
        let mut document = document();
        document["ambient"][0]["content"] = Value::String("x".repeat(20_000_000));
        document
    };
    for (document, expected) in [
        (
            unsafe_number,
            "the session document cannot be used: the number 9007199254740993 at turn is larger than JavaScript can hold exactly (2^53); nothing was changed",
        ),
        (
            long_text,
            "the session document cannot be used: the text at ambient.0.content is 20,000,000 characters long, more than the 16,000,000 any one text may have; nothing was changed",
        ),
    ] {
        let json = serde_json::to_string(&document).unwrap();
        match store.import_document(&json, "imported", None).await {
            Err(BrowserError::Argument(message)) => assert_eq!(message, expected),
            other => panic!("expected the refusal, got {other:?}"),
        }
    }
    assert_eq!(
        store.list().await.unwrap().len(),
        before,
        "nothing was stored"
    );
    // The document as it was imports.
    let json = serde_json::to_string(&document()).unwrap();
    store.import_document(&json, "fine", None).await.unwrap();
}
