//! Benchmark, not a test: time to persist one turn, to open a session, and then to rebuild its
//! recall index from the stored messages (which opening leaves for later), with 1k, 10k and
//! 100k stored messages, in real IndexedDB in headless Chromium. Built only with the
//! `bench-storage` feature; `scripts/bench-storage` runs it and prints the table.

#![cfg(target_arch = "wasm32")]

use ccm_core::tokens::ApproximateCounter;
use ccm_core::{Config, Session as CoreSession};
use ccm_wasm::testing::{session_of, with_core};
use ccm_wasm::SessionStore;
use std::sync::Arc;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;

use common::{load, open, save};

wasm_bindgen_test_configure!(run_in_browser);

/// A session with `messages` stored messages: 20 concluded efforts (distinct words, so no
/// summary is referenced by the others), ambient chat for most of the history, and an effort
/// opened a few turns before the end.
fn session_with(messages: u64) -> CoreSession {
    let mut s = CoreSession::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
    let turns = messages / 2;
    for n in 1..=turns {
        s.begin_turn(&format!("chat {n} about nothing in particular"), n)
            .unwrap();
        if n <= 60 && n % 3 == 1 {
            s.open_effort(&format!("topic{}", n / 3), None).unwrap();
        } else if n <= 60 && n % 3 == 0 {
            s.close_effort(None, Some(&format!("word{} settled", n / 3)))
                .unwrap();
        } else if n == turns - 4 {
            // The effort in progress is young: an open effort's log is working set, so one
            // that held the whole history would make every size measure the history.
            s.open_effort("current work", None).unwrap();
        }
        s.end_turn("fine", n).unwrap();
    }
    s
}

fn now() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen_test]
async fn persist_and_open_at_1k_10k_100k_messages() {
    let mut rows = Vec::new();
    for size in [1_000u64, 10_000, 100_000] {
        let name = format!("ccm-bench-{size}");
        JsFuture::from(SessionStore::delete_database_js(name.clone().into()))
            .await
            .unwrap();
        let store = open("indexeddb", &name).await.unwrap();
        let session = session_of(session_with(size));
        save(&store, &session).await.unwrap();
        let id = session.store_id().unwrap().unwrap();
        let rounds = 20;
        let (mut save_ms, mut open_ms) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            with_core(&session, |s| {
                s.begin_turn(&format!("one more turn {round}"), 1).unwrap();
                s.end_turn("ok", 1).unwrap();
            });
            let started = now();
            save(&store, &session).await.unwrap();
            save_ms.push(now() - started);
            let started = now();
            let loaded = load(&store, &id).await.unwrap();
            open_ms.push(now() - started);
            assert!(loaded.load_problems().unwrap().is_empty());
        }
        let mut rebuild_ms = Vec::new();
        for _ in 0..3 {
            let loaded = load(&store, &id).await.unwrap();
            let started = now();
            JsFuture::from(loaded.prepare_recall()).await.unwrap();
            rebuild_ms.push(now() - started);
            assert!(loaded.recall_ready().unwrap());
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        rows.push((
            size,
            median(&mut save_ms),
            median(&mut open_ms),
            median(&mut rebuild_ms),
        ));
    }
    let (base_save, base_open, base_rebuild) = (rows[0].1, rows[0].2, rows[0].3);
    let mut table = String::from("| stored messages | persist one turn | ratio | open session | ratio | then rebuild the recall index | ratio |\n|---|---|---|---|---|---|---|\n");
    for (size, save, open, rebuild) in &rows {
        table += &format!(
            "| {size} | {save:.1} ms | {:.2} | {open:.1} ms | {:.2} | {rebuild:.0} ms | {:.1} |\n",
            save / base_save,
            open / base_open,
            rebuild / base_rebuild
        );
    }
    console_log!("{table}");
    // The numbers are printed by making the run fail: the runner shows a test's console
    // output only then. scripts/bench-storage reads the table and ignores the failure.
    panic!("bench_storage results above");
}
