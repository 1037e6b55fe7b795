//! A localStorage log index chunk that cannot be read is reported as what it is: the messages
//! it lists are still stored (and exported), so a load must not call them missing ("6 of the
//! 6 ambient messages are missing from storage") but say that the index is damaged.

#![cfg(target_arch = "wasm32")]

use ccm_browser::{BackendChoice, BrowserStore};
use ccm_core::Config;
use js_sys::Reflect;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_damaged_ambient_index_chunk_is_reported_as_damage_not_as_missing_messages() {
    let namespace = "ccm-local-index-test";
    let storage: web_sys::Storage = Reflect::get(&js_sys::global(), &"localStorage".into())
        .unwrap()
        .unchecked_into();
    storage.clear().unwrap();
    let store = BrowserStore::open(BackendChoice::LocalStorage, namespace)
        .await
        .unwrap();
    let session = store.create("chat", Config::default(), None).await.unwrap();
    session.with_core(|s| {
        for turn in 0..3 {
            s.begin_turn(&format!("Question {turn} about the weather."), turn)
                .unwrap();
            s.end_turn(&format!("Answer {turn}: sunny."), turn).unwrap();
        }
    });
    store.save(&session).await.unwrap();
    let id = session.store_id().expect("saved");
    let ambient = session.with_core(|s| s.ambient().messages().len());
    assert_eq!(ambient, 6);

    let chunk = format!("{namespace}/{id}/l/ambient/0");
    assert!(
        storage.get_item(&chunk).unwrap().is_some(),
        "{chunk} is the index"
    );
    storage.set_item(&chunk, "[1, 2, not json").unwrap();

    let loaded = store.load(&id, None).await.unwrap();
    let problems = loaded.problems().join("\n");
    assert!(
        !problems.contains("ambient messages are missing"),
        "the messages are stored, not missing: {problems}"
    );
    assert!(
        problems.contains(
            "the index of the ambient messages at positions 0 to 5 (the localStorage record l/ambient/0) cannot be read: those messages are still stored"
        ),
        "{problems}"
    );
    // The export reads every message record, so all six are there.
    let document = store.export_document(&id).await.unwrap();
    assert_eq!(document.ambient.len(), 6);
    storage.clear().unwrap();
}
