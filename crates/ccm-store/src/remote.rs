//! The storage contract over HTTP: the wire format the sync server (`ccm-server`) speaks, and
//! [`RemoteStore`], a [`RecordStore`] that sends each operation as one request.
//!
//! The format is written once, here, for the server and for every client (the browser's
//! fetch, a native client, the benchmark), so that the two sides cannot drift apart. It is
//! sans-IO like the rest of this crate: [`RemoteStore`] builds requests and reads responses,
//! and a [`Transport`] of the host's sends them (with the base URL and the bearer token).
//!
//! # Routes
//!
//! Every path starts with [`API_PREFIX`]; session ids and effort ids are percent-encoded.
//!
//! | operation | request | answer |
//! |---|---|---|
//! | [`rows`](RecordStore::rows) | `GET /v1/sessions` | [`ListResponse`] |
//! | [`write`](RecordStore::write) | `PUT /v1/sessions/{id}` with [`WriteRequest`] | [`SessionRow`] |
//! | [`load`](RecordStore::load) | `GET /v1/sessions/{id}` | [`LoadResponse`] |
//! | [`effort_log`](RecordStore::effort_log) | `GET /v1/sessions/{id}/efforts/{effort}/log` | [`LogResponse`] |
//! | [`messages_between`](RecordStore::messages_between) | `GET /v1/sessions/{id}/messages?from=F&to=T` | [`MessagesResponse`] |
//! | [`messages_by_seq`](RecordStore::messages_by_seq) | `POST /v1/sessions/{id}/messages/by-seq` with [`SeqsRequest`] | [`MessagesResponse`] |
//! | [`read_all`](RecordStore::read_all) | `GET /v1/sessions/{id}/records` | [`RecordsResponse`] |
//! | [`telemetry`](RecordStore::telemetry) | `GET /v1/sessions/{id}/telemetry/{turn}` | the record or `null` |
//! | [`rename`](RecordStore::rename) | `PATCH /v1/sessions/{id}` with [`RenameRequest`] | `204` |
//! | [`delete`](RecordStore::delete) | `DELETE /v1/sessions/{id}` | `204` |
//! | export | `GET /v1/sessions/{id}/export` | the session document |
//! | import | `POST /v1/sessions/{id}/import` with [`ImportRequest`] | [`SessionRow`] |
//!
//! A refusal is a status code and an [`ErrorBody`]: the store's codes keep their meaning
//! (`409 conflict` names the stored revision, `404 not_found`, `507 quota`, `503
//! unavailable`, `500 storage`), and the server adds its own (`401 unauthorized`, `400
//! bad_request`, `413 too_large`, `429 rate_limited`).

use crate::backend::{
    DamagedSession, LogRead, MessagesRead, RecordStore, StoredRecords, WriteMode, WriteResult,
};
use crate::error::{StoreError, StoreResult};
use crate::records::SessionRow;
use ccm_core::compaction::SessionAttachment;
use ccm_core::metrics::TurnMetrics;
use ccm_core::model::Message;
use ccm_core::persistence::{
    EffortRecord, LoadedRecords, LogRef, SessionHeader, StoredMessage, WriteBatch,
};
use ccm_core::telemetry::TurnTelemetry;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The prefix of every route: the version of this wire format.
pub const API_PREFIX: &str = "/v1";

/// A session list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResponse {
    /// Every readable session row of the account.
    pub sessions: Vec<SessionRow>,
    /// Sessions whose row cannot be read.
    pub damaged: Vec<DamagedRow>,
}

/// A session whose row cannot be read, on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DamagedRow {
    /// Its id.
    pub id: String,
    /// Why its row could not be read.
    pub problem: String,
}

/// How a write applies: the wire form of [`WriteMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// A new session.
    Create,
    /// A save of a stored session.
    Save,
}

/// The body of a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteRequest {
    /// Create or save.
    pub mode: WriteKind,
    /// The client's time of the write, ms since the epoch.
    pub now_ms: f64,
    /// The session's name (creates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What changed, building on `batch.base_revision`.
    pub batch: WriteBatch,
}

impl WriteRequest {
    /// The request of a store's write.
    pub fn of(batch: &WriteBatch, mode: &WriteMode) -> WriteRequest {
        match mode {
            WriteMode::Create { now_ms, name } => WriteRequest {
                mode: WriteKind::Create,
                now_ms: *now_ms,
                name: Some(name.clone()),
                batch: batch.clone(),
            },
            WriteMode::Save { now_ms } => WriteRequest {
                mode: WriteKind::Save,
                now_ms: *now_ms,
                name: None,
                batch: batch.clone(),
            },
        }
    }

    /// The store's write mode of this request.
    pub fn write_mode(&self) -> WriteMode {
        match self.mode {
            WriteKind::Create => WriteMode::Create {
                now_ms: self.now_ms,
                name: self.name.clone().unwrap_or_default(),
            },
            WriteKind::Save => WriteMode::Save {
                now_ms: self.now_ms,
            },
        }
    }
}

/// A session's working set, as [`RecordStore::load`] returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResponse {
    /// The session row.
    pub row: SessionRow,
    /// The effort records that could be read.
    pub efforts: Vec<EffortRecord>,
    /// The open efforts' raw logs, by effort id.
    pub effort_logs: BTreeMap<String, Vec<Message>>,
    /// The newest ambient messages.
    pub ambient_tail: Vec<Message>,
    /// The newest metrics points.
    pub history_tail: Vec<TurnMetrics>,
    /// Records that could not be read, one sentence each.
    pub unreadable: Vec<String>,
    /// Every attachment record.
    pub attachments: Vec<SessionAttachment>,
    /// Message records per log, where the backend counted them.
    #[serde(default)]
    pub log_sizes: Option<Vec<(LogRef, u64)>>,
}

impl LoadResponse {
    /// The answer for what a backend loaded.
    pub fn of(row: SessionRow, records: LoadedRecords) -> LoadResponse {
        LoadResponse {
            row,
            efforts: records.efforts,
            effort_logs: records.effort_logs,
            ambient_tail: records.ambient_tail,
            history_tail: records.history_tail,
            unreadable: records.unreadable,
            attachments: records.attachments,
            log_sizes: records.log_sizes.map(|sizes| sizes.into_iter().collect()),
        }
    }

    /// The row and the records, as a backend's load gives them.
    pub fn into_parts(self) -> (SessionRow, LoadedRecords) {
        let header: SessionHeader = self.row.header.clone();
        let records = LoadedRecords {
            header: Some(header),
            efforts: self.efforts,
            effort_logs: self.effort_logs,
            ambient_tail: self.ambient_tail,
            history_tail: self.history_tail,
            unreadable: self.unreadable,
            attachments: self.attachments,
            log_sizes: self.log_sizes.map(|sizes| sizes.into_iter().collect()),
        };
        (self.row, records)
    }
}

/// One effort's raw log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogResponse {
    /// The readable messages, in sequence order.
    pub messages: Vec<Message>,
    /// Records that could not be read.
    pub unreadable: Vec<String>,
}

/// Stored messages read by sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesResponse {
    /// The readable messages with their logs, in sequence order.
    pub messages: Vec<StoredMessage>,
    /// Records that could not be read.
    pub unreadable: Vec<String>,
}

/// The body of a read by sequence numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeqsRequest {
    /// The sequence numbers wanted.
    pub seqs: Vec<u64>,
}

/// Every record of a session, for an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordsResponse {
    /// The row, when it could be read.
    pub row: Option<SessionRow>,
    /// Why the row could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_problem: Option<String>,
    /// Every readable effort record.
    pub efforts: Vec<EffortRecord>,
    /// Every readable message record, in sequence order.
    pub messages: Vec<StoredMessage>,
    /// Every readable metrics point.
    pub metrics: Vec<TurnMetrics>,
    /// Every readable attachment.
    pub attachments: Vec<SessionAttachment>,
    /// Records that could not be read.
    pub unreadable: Vec<String>,
}

impl RecordsResponse {
    /// The answer for what a backend read.
    pub fn of(records: StoredRecords) -> RecordsResponse {
        let (row, row_problem) = match records.row {
            Ok(row) => (Some(row), None),
            Err(problem) => (None, Some(problem)),
        };
        RecordsResponse {
            row,
            row_problem,
            efforts: records.efforts,
            messages: records.messages,
            metrics: records.metrics,
            attachments: records.attachments,
            unreadable: records.unreadable,
        }
    }

    /// The records as a backend's `read_all` gives them.
    pub fn into_records(self) -> StoredRecords {
        let row = match (self.row, self.row_problem) {
            (Some(row), _) => Ok(row),
            (None, Some(problem)) => Err(problem),
            (None, None) => Err("the session's row was not sent".to_string()),
        };
        StoredRecords {
            row,
            efforts: self.efforts,
            messages: self.messages,
            metrics: self.metrics,
            attachments: self.attachments,
            unreadable: self.unreadable,
        }
    }
}

/// The body of a rename.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenameRequest {
    /// The new name.
    pub name: String,
    /// The client's time, ms since the epoch.
    pub now_ms: f64,
}

/// The body of an import: a session document (the export's JSON) stored under the path's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportRequest {
    /// The session document, as JSON text.
    pub document: String,
    /// The name to list it under.
    pub name: String,
    /// The client's time, ms since the epoch.
    pub now_ms: f64,
}

/// A refusal, as every error answer's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The code and sentence of a refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A store code (`conflict`, `not_found`, `quota`, `unavailable`, `storage`, …) or one of
    /// the server's (`unauthorized`, `bad_request`, `too_large`, `rate_limited`).
    pub code: String,
    /// A sentence for the person.
    pub message: String,
    /// For a conflict on a stored session: the revision that is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_revision: Option<u64>,
}

impl ErrorBody {
    /// The body of a store error; `stored_revision` for a conflict whose stored revision is
    /// known.
    pub fn of(error: &StoreError, stored_revision: Option<u64>) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: error.code().to_string(),
                message: error.to_string(),
                stored_revision,
            },
        }
    }

    /// The HTTP status of a store error's code.
    pub fn status_of(error: &StoreError) -> u16 {
        match error {
            StoreError::Conflict(_) => 409,
            StoreError::NotFound { .. } => 404,
            StoreError::Quota(_) => 507,
            StoreError::Unavailable(_) | StoreError::Blocked(_) | StoreError::VersionChange(_) => {
                503
            }
            StoreError::Storage(_) => 500,
        }
    }
}

/// An HTTP method of the wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// A read.
    Get,
    /// A write of a whole resource.
    Put,
    /// A read or an action with a body.
    Post,
    /// A rename.
    Patch,
    /// A delete.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One request of the wire format, before the transport adds the server's address and the
/// credentials.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path and query, starting with [`API_PREFIX`].
    pub path: String,
    /// The JSON body, if any.
    pub body: Option<String>,
}

/// An answer as the transport received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The body as text (empty for `204`).
    pub body: String,
}

/// What sends a request to the server: the host's HTTP client, with the server's base URL and
/// the bearer token. A transport reports a request that never got an answer (refused
/// connection, timeout, offline) as [`StoreError::Unavailable`], naming the server and what to
/// check; any answer, error statuses included, is returned as a [`Response`].
#[allow(
    async_fn_in_trait,
    reason = "each host awaits its transport on its own executor; the browser's is not Send"
)]
pub trait Transport {
    /// Sends one request and returns the answer.
    async fn send(&self, request: Request) -> Result<Response, StoreError>;
}

/// A session store on a sync server: each operation of the contract is one request. The
/// server applies every rule (the revision check above all) in its own backend, so this side
/// only translates.
#[derive(Debug, Clone)]
pub struct RemoteStore<T> {
    transport: T,
}

/// Percent-encodes one path segment: ids may hold any character, the path must not.
pub fn encode_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The path of a session's resource: `/v1/sessions/{id}` followed by `rest`.
pub fn session_path(id: &str, rest: &str) -> String {
    format!("{API_PREFIX}/sessions/{}{rest}", encode_segment(id))
}

impl<T: Transport> RemoteStore<T> {
    /// A store that sends its requests through `transport`.
    pub fn new(transport: T) -> RemoteStore<T> {
        RemoteStore { transport }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Sends a request and reads a JSON answer of type `A`.
    async fn call<A: DeserializeOwned>(
        &self,
        method: Method,
        path: String,
        body: Option<String>,
    ) -> Result<A, StoreError> {
        let response = self.send(method, path, body).await?;
        serde_json::from_str(&response.body).map_err(|e| {
            StoreError::storage(format!(
                "the sync server's answer could not be read ({e}); nothing was changed here"
            ))
        })
    }

    /// Sends a request and returns the successful answer, or the error it carries.
    async fn send(
        &self,
        method: Method,
        path: String,
        body: Option<String>,
    ) -> Result<Response, StoreError> {
        let response = self.transport.send(Request { method, path, body }).await?;
        if (200..300).contains(&response.status) {
            Ok(response)
        } else {
            Err(error_of(&response))
        }
    }

    /// The server's export of a session: its document as JSON text.
    ///
    /// # Errors
    /// The server's refusal, or a request that got no answer.
    pub async fn export(&self, id: &str) -> Result<String, StoreError> {
        Ok(self
            .send(Method::Get, session_path(id, "/export"), None)
            .await?
            .body)
    }

    /// Imports a session document on the server as a new session `id`.
    ///
    /// # Errors
    /// The server's refusal (a taken id is a conflict, a document it cannot read a
    /// `bad_request`), or a request that got no answer.
    pub async fn import(
        &self,
        id: &str,
        request: &ImportRequest,
    ) -> Result<SessionRow, StoreError> {
        self.call(
            Method::Post,
            session_path(id, "/import"),
            Some(json(request)),
        )
        .await
    }
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire types serialise to JSON")
}

/// The store error an error answer stands for. The server's own codes map to the nearest
/// store code, keeping the server's sentence: `unauthorized` and `rate_limited` become
/// `unavailable` (the store cannot be used until the person acts or waits), `bad_request` and
/// `too_large` become `storage`.
pub fn error_of(response: &Response) -> StoreError {
    let detail = serde_json::from_str::<ErrorBody>(&response.body)
        .map(|body| body.error)
        .unwrap_or_else(|_| ErrorDetail {
            code: String::new(),
            message: format!(
                "the sync server answered {} without an explanation",
                response.status
            ),
            stored_revision: None,
        });
    let message = detail.message;
    match (detail.code.as_str(), response.status) {
        ("conflict", _) | (_, 409) => StoreError::conflict_text(message),
        ("not_found", _) => {
            // The message is the store's own ("no stored session with id '…'"); the id is
            // taken back out of it so that the error is the same value on both sides.
            match message
                .strip_prefix("no stored session with id '")
                .and_then(|rest| rest.strip_suffix('\''))
            {
                Some(id) => StoreError::not_found(id),
                None => StoreError::storage(message),
            }
        }
        ("quota", _) | (_, 507) => StoreError::quota(message),
        ("unavailable", _)
        | ("unauthorized", _)
        | ("rate_limited", _)
        | (_, 401)
        | (_, 429)
        | (_, 502..=504) => StoreError::unavailable(message),
        ("blocked", _) => StoreError::blocked(message),
        ("version_change", _) => StoreError::version_change(message),
        _ => StoreError::storage(message),
    }
}

/// The stored revision an error answer names, for a conflict.
pub fn stored_revision_of(response: &Response) -> Option<u64> {
    serde_json::from_str::<ErrorBody>(&response.body)
        .ok()
        .and_then(|body| body.error.stored_revision)
}

impl<T: Transport> RecordStore for RemoteStore<T> {
    fn kind(&self) -> &'static str {
        "remote"
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let list: ListResponse = self
            .call(Method::Get, format!("{API_PREFIX}/sessions"), None)
            .await?;
        let damaged = list
            .damaged
            .into_iter()
            .map(|row| DamagedSession {
                id: row.id,
                problem: row.problem,
            })
            .collect();
        Ok((list.sessions, damaged))
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        let request = WriteRequest::of(batch, &mode);
        self.call(Method::Put, session_path(id, ""), Some(json(&request)))
            .await
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let loaded: LoadResponse = self.call(Method::Get, session_path(id, ""), None).await?;
        Ok(loaded.into_parts())
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let path = session_path(id, &format!("/efforts/{}/log", encode_segment(effort)));
        let log: LogResponse = self.call(Method::Get, path, None).await?;
        Ok((log.messages, log.unreadable))
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        let path = session_path(id, &format!("/messages?from={from}&to={to}"));
        let read: MessagesResponse = self.call(Method::Get, path, None).await?;
        Ok((read.messages, read.unreadable))
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        let body = json(&SeqsRequest {
            seqs: seqs.to_vec(),
        });
        let read: MessagesResponse = self
            .call(
                Method::Post,
                session_path(id, "/messages/by-seq"),
                Some(body),
            )
            .await?;
        Ok((read.messages, read.unreadable))
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let records: RecordsResponse = self
            .call(Method::Get, session_path(id, "/records"), None)
            .await?;
        Ok(records.into_records())
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        self.call(
            Method::Get,
            session_path(id, &format!("/telemetry/{turn}")),
            None,
        )
        .await
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let body = json(&RenameRequest {
            name: name.to_string(),
            now_ms,
        });
        self.send(Method::Patch, session_path(id, ""), Some(body))
            .await?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.send(Method::Delete, session_path(id, ""), None)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode_segment("s-1_a.b~c"), "s-1_a.b~c");
        assert_eq!(encode_segment("a/b c?d"), "a%2Fb%20c%3Fd");
        assert_eq!(encode_segment("é"), "%C3%A9");
        assert_eq!(
            session_path("x/y", "/records"),
            "/v1/sessions/x%2Fy/records"
        );
    }

    #[test]
    fn error_answers_map_to_store_errors() {
        let body = |code: &str, message: &str| {
            json(&ErrorBody {
                error: ErrorDetail {
                    code: code.to_string(),
                    message: message.to_string(),
                    stored_revision: Some(7),
                },
            })
        };
        let conflict = Response {
            status: 409,
            body: body("conflict", "stored revision 7"),
        };
        assert_eq!(error_of(&conflict).code(), "conflict");
        assert_eq!(stored_revision_of(&conflict), Some(7));
        let missing = Response {
            status: 404,
            body: body("not_found", "no stored session with id 'abc'"),
        };
        assert_eq!(error_of(&missing), StoreError::not_found("abc"));
        let refused = Response {
            status: 401,
            body: body("unauthorized", "the token is not valid"),
        };
        assert_eq!(
            error_of(&refused),
            StoreError::unavailable("the token is not valid")
        );
        let bare = Response {
            status: 502,
            body: "<html>bad gateway</html>".to_string(),
        };
        assert_eq!(error_of(&bare).code(), "unavailable");
        assert!(error_of(&bare).to_string().contains("502"));
    }
}
