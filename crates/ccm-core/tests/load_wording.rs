//! What a load says about an effort record that disagrees with its log: the count of
//! messages read is only given when messages are in fact missing, so a record whose token
//! total was changed is not reported as "4 of 4 messages could be read".

use ccm_core::Session;
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::portable_tests;
use ccm_test_support::{session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A saved session whose open effort 'guild' holds messages.
fn saved() -> (Session, MemoryStore) {
    let mut s = session();
    let mut store = MemoryStore::default();
    turn(
        &mut s,
        "Start guild.",
        &[("open_effort", r#"{"name": "guild"}"#)],
        "ok",
    );
    turn(&mut s, "The roster is Ana, Bo and Cy.", &[], "Noted.");
    let batch = s.write_batch().expect("between turns");
    store.apply(&batch).expect("no other writer");
    s.mark_saved(&batch).expect("the batch just taken");
    (s, store)
}

portable_tests! {
    fn a_changed_token_total_is_reported_as_such_not_as_every_message_read() {
        let (original, store) = saved();
        let mut records = store.load();
        let record = records.efforts.iter_mut().find(|r| r.effort.id == "guild").unwrap();
        let count = record.message_count;
        assert!(count > 0);
        record.effort.raw_tokens += 7;
        let (_, report) = Session::from_store(records, original.counter().clone()).unwrap();
        let problem = report.problems.iter().find(|p| p.contains("effort 'guild'")).expect("reported");
        assert!(!problem.contains(&format!("{count} of {count} messages could be read")), "{problem}");
        assert!(problem.contains("the record was changed outside CCM"), "{problem}");
        assert!(problem.contains(&format!("its {count} messages hold")), "{problem}");
    }

    fn a_record_that_lists_fewer_messages_than_its_log_holds_says_so() {
        let (original, store) = saved();
        let mut records = store.load();
        let record = records.efforts.iter_mut().find(|r| r.effort.id == "guild").unwrap();
        let count = record.message_count;
        record.message_count -= 1;
        let (_, report) = Session::from_store(records, original.counter().clone()).unwrap();
        let problem = report.problems.iter().find(|p| p.contains("effort 'guild'")).expect("reported");
        assert!(problem.contains(&format!("{count} messages were found where its record lists {}", count - 1)), "{problem}");
    }
}
