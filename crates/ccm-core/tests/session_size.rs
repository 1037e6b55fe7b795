//! A session is kept from growing past what an import accepts where it grows fastest: an
//! attachment that would bring the session's attachments past 48,000,000 characters is
//! refused with a clear error and nothing is attached, so every export stays importable.

use ccm_core::compaction::{
    AttachmentError, AttachmentKind, MAX_IMPORT_DOCUMENT_CHARS, MAX_SESSION_ATTACHMENT_CHARS,
};
use ccm_core::{ApproximateCounter, Config, Session};
use std::sync::Arc;

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
