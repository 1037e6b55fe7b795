//! A session refuses a turn while a save of it runs, and a save while a turn of it runs, in
//! the one wording every host shows (ccm-wasm's `busy` error says the same): nothing was
//! changed, and what to do. In headless Chromium, over the localStorage backend.

#![cfg(target_arch = "wasm32")]

use ccm_browser::turn::EngineSettings;
use ccm_browser::{BackendChoice, BrowserError, BrowserStore};
use ccm_core::Config;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The refusal's text, or a panic naming what came instead.
fn busy_message<T>(outcome: Result<T, BrowserError>) -> String {
    match outcome {
        Err(BrowserError::Busy(message)) => message,
        Err(other) => panic!("expected a busy refusal, got {other:?}"),
        Ok(_) => panic!("expected a busy refusal, got success"),
    }
}

#[wasm_bindgen_test]
async fn a_busy_session_refuses_in_one_wording_that_says_nothing_was_changed() {
    let store = BrowserStore::open(BackendChoice::LocalStorage, "ccm-busy-test")
        .await
        .unwrap();
    let session = store.create("busy", Config::default(), None).await.unwrap();
    let settings = || EngineSettings::new("offline");

    let save = store.prepare_save(&session).unwrap();
    assert_eq!(
        busy_message(session.begin_turn("Hello.", 1, settings())),
        "a save of this session is in progress and nothing was changed: wait for the save to finish and try again"
    );
    save.finish().await.unwrap();

    let turn = session.begin_turn("Hello.", 2, settings()).unwrap();
    assert_eq!(
        busy_message(store.prepare_save(&session)),
        "a turn of this session is in progress and nothing was changed: wait for the turn to finish and try again"
    );
    drop(turn);
}
