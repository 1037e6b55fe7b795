//! The stored form of a session's records, shared by every backend.
//!
//! Every record is stored as JSON text of the core's record type ([`SessionHeader`],
//! [`EffortRecord`](ccm_core::persistence::EffortRecord), [`StoredMessage`](ccm_core::persistence::StoredMessage),
//! [`TurnMetrics`](ccm_core::metrics::TurnMetrics), …). JSON text rather than a backend's own
//! structured form keeps the backends byte-identical, makes a damaged record detectable (it
//! fails to decode instead of silently missing fields) and is what an export contains anyway.

use ccm_core::persistence::{LogRef, SessionHeader};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The per-session row: the core's header plus what a session list shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// The session's id in this store.
    pub id: String,
    /// The name a person gave it.
    pub name: String,
    /// When it was created (ms since the epoch).
    pub created_ms: f64,
    /// When it was last saved, renamed or imported.
    pub updated_ms: f64,
    /// The core's header record.
    pub header: SessionHeader,
}

/// The key of a log in a message index: `ambient`, or `effort:<id>` (effort ids are slugs,
/// so the prefix keeps every effort apart from the ambient log).
pub fn log_key(log: &LogRef) -> String {
    match log {
        LogRef::Ambient => "ambient".to_string(),
        LogRef::Effort(id) => format!("effort:{id}"),
    }
}

/// JSON text of a record. The core's records contain only serialisable data.
pub fn encode<T: Serialize>(record: &T) -> String {
    serde_json::to_string(record).expect("core records serialise to JSON")
}

/// Decodes one record, or describes for the person why it could not be read; `what` names
/// the record ("message 12 of session s1").
pub fn decode<T: DeserializeOwned>(what: &str, text: Option<&str>) -> Result<T, String> {
    let text = text.ok_or_else(|| format!("{what} is not text; it was skipped"))?;
    serde_json::from_str(text)
        .map_err(|e| format!("{what} could not be read ({e}); it was skipped"))
}

/// Decodes every record of a list, keeping the readable ones and describing the others.
pub fn decode_all<T: DeserializeOwned>(
    records: impl IntoIterator<Item = (String, Option<String>)>,
    unreadable: &mut Vec<String>,
) -> Vec<T> {
    let mut decoded = Vec::new();
    for (what, text) in records {
        match decode(&what, text.as_deref()) {
            Ok(record) => decoded.push(record),
            Err(problem) => unreadable.push(problem),
        }
    }
    decoded
}
