//! A session is kept from growing past what an import accepts (issue 26): an attachment that
//! would bring the session's attachments past 48,000,000 characters is refused, and so is
//! every addition (a message, an attachment, an answer a host ends a turn with) that would
//! bring what the session stores past 62,000,000 characters as its export counts them, with a
//! clear error that names the limit and the way out and with nothing changed. Every export
//! stays importable, and a session opened from a store knows its total without reading its
//! history.

use ccm_core::compaction::{
    AttachmentError, AttachmentKind, MAX_IMPORT_DOCUMENT_CHARS, MAX_SESSION_ATTACHMENT_CHARS,
};
// The tests that fill a session to its limit run natively only (see below).
use ccm_core::{ApproximateCounter, Config, Session, TokenCounter};
use std::sync::Arc;
#[cfg(not(target_arch = "wasm32"))]
use {
    ccm_core::compaction::{MAX_SESSION_STORED_CHARS, ROOM_FOR_ANSWER_CHARS},
    ccm_core::TurnError,
};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn an_attachment_past_the_session_budget_is_refused_and_the_export_stays_importable() {
    let mut session =
        Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
    session.begin_turn("Here are the files.", 1).unwrap();
    let piece = MAX_SESSION_ATTACHMENT_CHARS / 4;
    for i in 0..4 {
        session
            .attach(
                &format!("part-{i}.txt"),
                AttachmentKind::File,
                &"a".repeat(piece),
                Some("a part"),
            )
            .unwrap();
    }
    // One more character would pass the budget; a crab is two characters as JavaScript counts.
    let refused = session
        .attach("more.txt", AttachmentKind::File, "🦀", Some("more"))
        .unwrap_err();
    assert_eq!(
        refused,
        AttachmentError::SessionFull {
            name: "more.txt".into(),
            total: MAX_SESSION_ATTACHMENT_CHARS + 2
        }
    );
    let message = refused.to_string();
    assert!(
        message.contains("more than the 48,000,000 one session may hold"),
        "{message}"
    );
    assert!(message.contains("nothing was attached"), "{message}");
    assert_eq!(
        session.attachments().by_id().len(),
        4,
        "nothing was attached"
    );
    session.end_turn("Read them.", 1).unwrap();

    let json = session.to_json().unwrap();
    let length: usize = json.chars().map(char::len_utf16).sum();
    assert!(
        length <= MAX_IMPORT_DOCUMENT_CHARS,
        "the export ({length}) can be imported"
    );
}

fn approximate() -> Arc<dyn TokenCounter> {
    Arc::new(ApproximateCounter)
}

/// How long `json` is as JavaScript counts it (the import limit's unit).
#[cfg(not(target_arch = "wasm32"))]
fn js_length(json: &str) -> usize {
    json.chars().map(char::len_utf16).sum()
}

/// A message of exactly `chars` characters: one quoted line (a quote and a line break are
/// written as two characters in JSON, so the count has to follow its escapes), then one long
/// word, which keeps the session's own work on the text (indexing, references, summaries)
/// small.
#[cfg(not(target_arch = "wasm32"))]
fn long_message(turn: usize, chars: usize) -> String {
    let mut text = format!("Turn {turn} says \"here is the log\":\n");
    text.push_str(&"x".repeat(chars - text.len()));
    text
}

/// Grows a session by messages alone (no attachments) until the next message of `chars`
/// characters is refused; returns the refusal.
#[cfg(not(target_arch = "wasm32"))]
fn grow_until_refused(session: &mut Session, chars: usize) -> TurnError {
    for turn in 0.. {
        let text = long_message(turn, chars);
        match session.begin_turn(&text, 1) {
            Ok(_) => {
                session.end_turn("Noted.", 2).unwrap();
            }
            Err(refused) => return refused,
        }
        assert!(turn < 100, "the session never filled up");
    }
    unreachable!()
}

// Native only: a browser's test page would hold three copies of 60 MB of text.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_session_grown_by_messages_alone_refuses_the_message_that_would_not_import_and_its_export_imports(
) {
    let mut session = Session::with_counter(Config::default(), approximate()).unwrap();
    let refused = grow_until_refused(&mut session, 16_000_000);
    let TurnError::SessionFull(full) = &refused else {
        panic!("{refused:?}")
    };
    assert!(full.room_for_answer);
    assert!(full.total > MAX_SESSION_STORED_CHARS, "{full:?}");
    let message = refused.to_string();
    for words in [
        "this message of 16,000,000 characters",
        "more than the 62,000,000 one session may hold",
        "within the 64,000,000 characters an import accepts",
        "nothing was changed",
        "Start a new session to go on; this one can still be read, exported and searched",
    ] {
        assert!(message.contains(words), "{words:?} is not in: {message}");
    }
    // Nothing changed: no turn began, and the session still takes a short message.
    assert!(!session.in_turn());
    let turns = session.turn();
    assert_eq!(turns, 3, "turns of 16 M characters");
    let json = session.to_json().unwrap();
    let length = js_length(&json);
    // The count is an upper bound of the export, and the export fits the import limit.
    assert!(
        length as u64 <= session.stored_chars(),
        "export {length}, counted {}",
        session.stored_chars()
    );
    assert!(
        length <= MAX_IMPORT_DOCUMENT_CHARS,
        "the export is {length}"
    );
    // Without the limit, the next message would have taken the export past the import limit.
    assert!(
        length + 16_000_000 > MAX_IMPORT_DOCUMENT_CHARS,
        "the test must fill the session: {length}"
    );
    session.begin_turn("A short question.", 3).unwrap();
    session.end_turn("A short answer.", 4).unwrap();

    // The export imports back, and the imported session counts what it holds the same way.
    let json = session.to_json().unwrap();
    assert!(js_length(&json) <= MAX_IMPORT_DOCUMENT_CHARS);
    let imported = Session::from_json_with_counter(&json, approximate()).unwrap();
    assert_eq!(imported.turn(), turns + 1);
    assert_eq!(imported.stored_chars(), session.stored_chars());
    assert_eq!(imported.to_json().unwrap(), json);
}

// Native only: a browser's test page would hold three copies of 60 MB of text.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn an_answer_a_host_ends_a_turn_with_is_checked_and_an_attachment_counts_against_the_session() {
    let mut session = Session::with_counter(Config::default(), approximate()).unwrap();
    for turn in 0..3 {
        session
            .begin_turn(&long_message(turn, 16_000_000), 1)
            .unwrap();
        session.end_turn("Noted.", 2).unwrap();
    }
    // About 48 M stored: a 15 M answer would not fit, an answer of the model's size would.
    session.begin_turn("One more thing.", 3).unwrap();
    let answer = long_message(9, 15_000_000);
    let refused = session.room_for_answer(&answer).unwrap_err();
    assert!(!refused.room_for_answer);
    assert!(
        refused
            .to_string()
            .starts_with("the answer of 15,000,000 characters would bring this session to"),
        "{refused}"
    );
    session.room_for_answer(&"a".repeat(1_000_000)).unwrap();
    // A host that ends the turn with the answer anyway is refused the same way, and the turn
    // stays open with nothing changed.
    let stored_before = session.stored_chars();
    let refused = session.end_turn(&answer, 4).unwrap_err();
    assert!(
        matches!(&refused, TurnError::SessionFull(full) if !full.room_for_answer),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("Start a new session to go on"),
        "{refused}"
    );
    assert!(session.in_turn(), "the turn stays open");
    assert_eq!(session.stored_chars(), stored_before);
    // An attachment under the attachments' own limit still counts against the session.
    let refused = session
        .attach(
            "big.txt",
            AttachmentKind::File,
            &long_message(8, 14_000_000),
            Some("big"),
        )
        .unwrap_err();
    assert!(
        matches!(refused, AttachmentError::SessionStorageFull(_)),
        "{refused:?}"
    );
    assert!(refused
        .to_string()
        .contains("attachment 'big.txt' would bring"));
    assert!(
        session.attachments().by_id().is_empty(),
        "nothing was attached"
    );
    session.end_turn("Short.", 4).unwrap();
    assert!(session.stored_chars() + ROOM_FOR_ANSWER_CHARS <= MAX_SESSION_STORED_CHARS);
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn an_aborted_turn_gives_its_count_back() {
    let mut session = Session::with_counter(Config::default(), approximate()).unwrap();
    session.begin_turn("First.", 1).unwrap();
    session.end_turn("One.", 2).unwrap();
    let before = session.stored_chars();
    session.begin_turn(&"x".repeat(10_000), 3).unwrap();
    assert!(session.stored_chars() >= before + 10_000);
    session
        .attach("a.txt", AttachmentKind::File, &"y".repeat(5_000), None)
        .unwrap();
    session.abort_turn().unwrap();
    assert_eq!(session.stored_chars(), before);
}

/// The count where history is not read: a session opened from a store's working set knows
/// what it stores from its header, and refuses what would not fit without reading history.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_session_opened_from_its_working_set_counts_its_unread_history_from_the_header() {
    use ccm_core::compaction::RECORDED_FROM_CHARS;
    use ccm_test_support::memory_store::MemoryStore;

    let counter = approximate();
    let mut session = Session::with_counter(Config::default(), counter.clone()).unwrap();
    // Ambient history beyond the window is not read when the session is opened.
    for turn in 0..30 {
        session
            .begin_turn(&long_message(turn, 1_900_000), 1)
            .unwrap();
        session.end_turn("Noted.", 2).unwrap();
    }
    let mut store = MemoryStore::saved_from(&mut session);
    let header = session.header();
    assert!(header.stored_chars >= 57_000_000, "{}", header.stored_chars);
    let opened = store.open_clean(&counter);
    assert!(
        opened.to_json().is_err(),
        "the opened session must hold its working set only"
    );
    assert_eq!(opened.stored_chars(), session.stored_chars());
    // The next long message is refused by the opened session as by the whole one.
    let mut opened = opened;
    let refused = opened
        .begin_turn(&long_message(99, 5_000_000), 3)
        .unwrap_err();
    assert!(matches!(refused, TurnError::SessionFull(_)), "{refused:?}");
    // A short turn still goes, is counted, and the store's export imports.
    opened.begin_turn("Short.", 4).unwrap();
    opened.end_turn("Yes.", 5).unwrap();
    let batch = opened.write_batch().unwrap();
    store.apply(&batch).unwrap();
    opened.mark_saved(&batch).unwrap();
    assert!(batch.header.stored_chars > header.stored_chars);
    let document = store.export().unwrap();
    let json = serde_json::to_string(&document).unwrap();
    let length = js_length(&json);
    assert!(length <= MAX_IMPORT_DOCUMENT_CHARS, "{length}");
    assert!(length as u64 <= opened.stored_chars(), "{length}");
    Session::from_json_with_counter(&json, counter.clone()).unwrap();

    // A small session's header leaves the count out (so ordinary headers stay as they were),
    // and a header without one is counted as the most it stands for.
    let mut small = Session::with_counter(Config::default(), counter.clone()).unwrap();
    small.begin_turn("Hello.", 1).unwrap();
    small.end_turn("Hi.", 2).unwrap();
    let header = serde_json::to_value(small.header()).unwrap();
    assert!(header.get("stored_chars").is_none(), "{header}");
    let store = MemoryStore::saved_from(&mut small);
    let mut reopened = store.open_clean(&counter);
    assert!(reopened.stored_chars() >= RECORDED_FROM_CHARS);
    // Reopened unchanged, its header is written back as it was.
    let header = serde_json::to_value(reopened.header()).unwrap();
    assert!(header.get("stored_chars").is_none(), "{header}");
    // Once it changes, the header records the count (now an upper bound).
    reopened.begin_turn("More.", 3).unwrap();
    reopened.end_turn("Ok.", 4).unwrap();
    assert!(reopened.header().stored_chars > RECORDED_FROM_CHARS);
}
