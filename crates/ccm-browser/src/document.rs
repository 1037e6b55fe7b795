//! The checks every session document passes before it is read, in one place for the library
//! (`Session.fromJSON`, `importSession`) and the app's import, so both refuse the same
//! documents with the same words.
//!
//! A document's JSON may carry an integer JavaScript cannot hold exactly (beyond 2^53): every
//! number the session later hands to JavaScript must be exact, and one that is not would fail
//! only after a change was made. A text longer than any limit allows ([`MAX_TEXT_CHARS`]) is
//! refused too: a document counted with another rule is recounted, and counting one such text
//! could take more memory than the module has. And the whole document has a size limit
//! ([`MAX_DOCUMENT_CHARS`]).

use ccm_core::compaction::report::thousands;
use serde_json::Value;

/// The longest text any limit allows, and so the longest one a document may hold, in
/// characters as JavaScript counts them (UTF-16 units): counting a text of one repeated
/// character needs tens of bytes of working memory per character, and 16 million characters
/// is what the module's memory can hold with room to spare (160 million aborted it).
pub const MAX_TEXT_CHARS: usize = 16_000_000;

/// The longest session document accepted as text, in characters: a session of a thousand
/// turns of long messages is a few megabytes, and anything near the module's memory would
/// abort it rather than load.
pub const MAX_DOCUMENT_CHARS: usize = ccm_core::compaction::MAX_IMPORT_DOCUMENT_CHARS;

/// The largest integer JavaScript holds exactly (2^53 - 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a document is refused; the message is the one the person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentRefusal {
    /// The document, or a text in it, is longer than its limit.
    TooLarge(String),
    /// A number in it is larger than JavaScript can hold exactly.
    UnsafeNumber(String),
}

impl DocumentRefusal {
    /// The message for the person.
    pub fn message(&self) -> &str {
        match self {
            DocumentRefusal::TooLarge(message) | DocumentRefusal::UnsafeNumber(message) => message,
        }
    }
}

/// How long `text` is as JavaScript counts it.
fn js_length(text: &str) -> usize {
    // UTF-16 units never outnumber UTF-8 bytes, so short texts need no count.
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().map(char::len_utf16).sum()
    }
}

/// Checks a document given as JSON text: its length, then every value in it. Text that is
/// not JSON passes: reading it reports that better.
///
/// # Errors
/// The first [`DocumentRefusal`].
pub fn check_document_text(json: &str) -> Result<(), DocumentRefusal> {
    if json.len() > MAX_DOCUMENT_CHARS {
        let length = js_length(json);
        if length > MAX_DOCUMENT_CHARS {
            return Err(DocumentRefusal::TooLarge(format!(
                "the session document is {} characters long, more than the {} a document may have; nothing was changed",
                thousands(length as u64),
                thousands(MAX_DOCUMENT_CHARS as u64)
            )));
        }
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value) => check_document_values(&value),
        Err(_) => Ok(()),
    }
}

/// Checks every value of a parsed document.
///
/// # Errors
/// The first [`DocumentRefusal`], naming where in the document it is.
pub fn check_document_values(document: &Value) -> Result<(), DocumentRefusal> {
    walk(document, &mut Vec::new())
}

/// Where in a document `path` points, for messages.
fn place(path: &[String]) -> String {
    if path.is_empty() {
        "the top level".to_string()
    } else {
        path.join(".")
    }
}

fn walk(value: &Value, path: &mut Vec<String>) -> Result<(), DocumentRefusal> {
    match value {
        Value::String(text) => {
            if text.len() <= MAX_TEXT_CHARS {
                return Ok(());
            }
            let units = js_length(text);
            if units <= MAX_TEXT_CHARS {
                return Ok(());
            }
            Err(DocumentRefusal::TooLarge(format!(
                "the session document cannot be used: the text at {} is {} characters long, more than the {} any one text may have; nothing was changed",
                place(path),
                thousands(units as u64),
                thousands(MAX_TEXT_CHARS as u64),
            )))
        }
        Value::Number(number) => {
            let too_big = match (number.as_u64(), number.as_i64()) {
                (Some(n), _) => n > MAX_SAFE_INTEGER,
                (None, Some(n)) => n.unsigned_abs() > MAX_SAFE_INTEGER,
                // A float: exact or not, JavaScript reads it as JSON does.
                (None, None) => false,
            };
            if too_big {
                return Err(DocumentRefusal::UnsafeNumber(format!(
                    "the session document cannot be used: the number {number} at {} is larger than JavaScript can hold exactly (2^53); nothing was changed",
                    place(path)
                )));
            }
            Ok(())
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(index.to_string());
                walk(item, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                path.push(key.clone());
                walk(item, path)?;
                path.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_integers_and_overlong_texts_are_refused_with_where_they_are() {
        let fine = r#"{"a":[1,9007199254740991,-9007199254740991,1.5e300]}"#;
        assert_eq!(check_document_text(fine), Ok(()));
        let big = check_document_text(r#"{"a":{"b":[0,9007199254740993]}}"#).unwrap_err();
        assert!(matches!(big, DocumentRefusal::UnsafeNumber(_)));
        assert!(
            big.message()
                .contains("the number 9007199254740993 at a.b.1"),
            "{big:?}"
        );
        let long = format!(
            r#"{{"ambient":[{{"content":"{}"}}]}}"#,
            "x".repeat(MAX_TEXT_CHARS + 1)
        );
        let refused = check_document_text(&long).unwrap_err();
        assert!(matches!(refused, DocumentRefusal::TooLarge(_)));
        assert!(
            refused
                .message()
                .contains("the text at ambient.0.content is 16,000,001 characters long"),
            "{refused:?}"
        );
        assert_eq!(check_document_text("not json"), Ok(()));
    }

    /// The app's import (and the library's) takes the export of a session grown by messages
    /// until the session refused the next one (issue 26): whatever a session stores, its
    /// export passes these checks and is read back.
    #[test]
    fn the_export_of_a_session_filled_by_messages_passes_the_import_checks() {
        use ccm_core::{ApproximateCounter, Config, Session, TokenCounter, TurnError};
        use std::sync::Arc;
        let counter: Arc<dyn TokenCounter> = Arc::new(ApproximateCounter);
        let mut session = Session::with_counter(Config::default(), counter.clone()).unwrap();
        let message = format!("A log: {}", "x".repeat(MAX_TEXT_CHARS - 7));
        let mut turns = 0;
        loop {
            match session.begin_turn(&message, 1) {
                Ok(_) => session.end_turn("Read.", 2).map(|_| ()).unwrap(),
                Err(TurnError::SessionFull(_)) => break,
                Err(other) => panic!("{other}"),
            }
            turns += 1;
            assert!(turns < 10, "the session never filled up");
        }
        let json = session.to_json().unwrap();
        assert_eq!(check_document_text(&json), Ok(()));
        let imported = Session::from_json_with_counter(&json, counter).unwrap();
        assert_eq!(imported.turn(), turns);
    }
}
