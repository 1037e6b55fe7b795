//! A record store whose I/O lives in JavaScript: the host hands over an object of the
//! `RecordTable` shape (npm/ccm/glue/hoststore.d.ts), a table of record texts per session
//! with two compare-and-set operations, and this module keeps every rule of the contract on
//! the Rust side: what a save writes and checks, what opening reads, damaged records reported.
//! The npm package's PostgreSQL store for Node (over `pg`) is such a table; so can be any
//! database a server already runs.
//!
//! Values cross the boundary as JSON text (`JSON.stringify` of what the table returns, and
//! `JSON.parse` of what it is given), so that one conversion, checked by serde, reads every
//! shape and a table that returns the wrong one gets a sentence naming the method.

use crate::error::js_message;
use ccm_core::compaction::SessionAttachment;
use ccm_core::metrics::TurnMetrics;
use ccm_core::model::Message;
use ccm_core::persistence::{
    EffortRecord, LoadRequest, LoadedRecords, LogRef, StoredMessage, WriteBatch,
};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::records::{decode, decode_all, encode, log_key};
use ccm_store::{
    existing_row, next_row, DamagedSession, LogRead, MessagesRead, RecordStore, SessionRow,
    StoreError, StoreResult, StoredRecords, WriteMode, WriteResult,
};
use js_sys::{Array, Function, Promise, Reflect, JSON};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// How often opening a session reads its row again when a writer changed it between the row
/// and the working set: each retry means another save landed, so a handful is plenty.
const LOAD_ATTEMPTS: usize = 8;

/// The methods a table must have, checked when the store opens so that a missing one is
/// reported at once rather than at the first save.
const METHODS: [&str; 11] = [
    "rows",
    "row",
    "write",
    "setRow",
    "workingSet",
    "log",
    "messages",
    "messagesBetween",
    "telemetry",
    "all",
    "delete",
];

/// A JavaScript `RecordTable`.
pub(crate) struct HostStore {
    table: JsValue,
    kind: &'static str,
}

/// The records of one save, in the shape `RecordTable.write` takes.
#[derive(Serialize)]
struct RecordWrites {
    efforts: Vec<(u64, String)>,
    messages: Vec<(u64, String, String)>,
    metrics: Vec<(u64, String)>,
    telemetry: Vec<(u64, String)>,
    attachments: Vec<(String, String)>,
}

/// `WorkingSetRequest`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkingSetRequest {
    effort_logs: Vec<String>,
    ambient_tail: u64,
    history_tail: u64,
}

/// `WorkingSet`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkingSet {
    efforts: Vec<(u64, String)>,
    effort_logs: BTreeMap<String, Vec<(u64, String)>>,
    ambient_tail: Vec<(u64, String)>,
    history_tail: Vec<(u64, String)>,
    attachments: Vec<(String, String)>,
    log_sizes: Vec<(String, u64)>,
}

/// `AllRecords`.
#[derive(Deserialize)]
struct AllRecords {
    row: Option<String>,
    efforts: Vec<(u64, String)>,
    messages: Vec<(u64, String, String)>,
    metrics: Vec<(u64, String)>,
    attachments: Vec<(String, String)>,
}

/// The failure a table's rejection stands for: its `code` when it names one of the store's
/// kinds, a storage failure otherwise.
fn failure_of(method: &str, value: &JsValue) -> StoreError {
    let code = Reflect::get(value, &JsValue::from_str("code"))
        .ok()
        .and_then(|c| c.as_string());
    let message = js_message(value);
    match code.as_deref() {
        Some("unavailable") => StoreError::Unavailable(message),
        Some("quota") => StoreError::Quota(message),
        Some("conflict") => StoreError::Conflict(message),
        Some("not_found") => StoreError::Storage(message),
        _ => StoreError::storage(format!("the store's {method} failed: {message}")),
    }
}

/// The log a `log` key names.
fn log_of(key: &str) -> LogRef {
    match key.strip_prefix("effort:") {
        Some(effort) => LogRef::Effort(effort.to_string()),
        None => LogRef::Ambient,
    }
}

/// Messages as read (`[seq, text]`), decoded; an unreadable one is described.
fn messages_of(texts: Vec<(u64, String)>, unreadable: &mut Vec<String>) -> Vec<Message> {
    decode_all::<StoredMessage>(
        texts
            .into_iter()
            .map(|(seq, text)| (format!("message {seq}"), Some(text))),
        unreadable,
    )
    .into_iter()
    .map(|stored| stored.message)
    .collect()
}

/// Stored messages as read (`[seq, log, text]`), decoded.
fn stored_messages_of(texts: Vec<(u64, String, String)>) -> MessagesRead {
    let mut unreadable = Vec::new();
    let messages = decode_all::<StoredMessage>(
        texts
            .into_iter()
            .map(|(seq, _, text)| (format!("message {seq}"), Some(text))),
        &mut unreadable,
    );
    (messages, unreadable)
}

fn efforts_of(texts: Vec<(u64, String)>, unreadable: &mut Vec<String>) -> Vec<EffortRecord> {
    decode_all(
        texts
            .into_iter()
            .map(|(position, text)| (format!("effort record {position}"), Some(text))),
        unreadable,
    )
}

fn metrics_of(texts: Vec<(u64, String)>, unreadable: &mut Vec<String>) -> Vec<TurnMetrics> {
    decode_all(
        texts
            .into_iter()
            .map(|(turn, text)| (format!("the metrics point of turn {turn}"), Some(text))),
        unreadable,
    )
}

fn attachments_of(
    texts: Vec<(String, String)>,
    unreadable: &mut Vec<String>,
) -> Vec<SessionAttachment> {
    decode_all(
        texts
            .into_iter()
            .map(|(id, text)| (format!("attachment {id}"), Some(text))),
        unreadable,
    )
}

fn row_of(text: &str) -> Result<SessionRow, String> {
    decode("the session's header record", Some(text))
}

impl HostStore {
    /// Takes a `RecordTable`, after checking that it has every method.
    pub(crate) fn new(table: JsValue) -> Result<HostStore, StoreError> {
        if !table.is_object() {
            return Err(StoreError::unavailable(
                "a record table must be an object with the RecordTable methods",
            ));
        }
        let missing: Vec<&str> = METHODS
            .iter()
            .copied()
            .filter(|name| {
                !Reflect::get(&table, &JsValue::from_str(name))
                    .map(|m| m.is_function())
                    .unwrap_or(false)
            })
            .collect();
        if !missing.is_empty() {
            return Err(StoreError::unavailable(format!(
                "the record table lacks the method{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            )));
        }
        let kind = Reflect::get(&table, &JsValue::from_str("kind"))
            .ok()
            .and_then(|k| k.as_string());
        // `RecordStore::kind` is a static name: the tables this package ships are named, any
        // other is a host's own.
        let kind = match kind.as_deref() {
            Some("postgres") => "postgres",
            Some("files") => "files",
            _ => "host",
        };
        Ok(HostStore { table, kind })
    }

    /// Calls `method` with `args` and awaits its promise; the result as JSON-decoded `T`.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        args: &[JsValue],
    ) -> Result<T, StoreError> {
        let function: Function = Reflect::get(&self.table, &JsValue::from_str(method))
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(|| StoreError::unavailable(format!("the record table has no {method}")))?;
        let returned = function
            .apply(&self.table, &args.iter().collect::<Array>())
            .map_err(|e| failure_of(method, &e))?;
        let value = match returned.dyn_into::<Promise>() {
            Ok(promise) => JsFuture::from(promise)
                .await
                .map_err(|e| failure_of(method, &e))?,
            Err(value) => value,
        };
        let text = if value.is_undefined() {
            "null".to_string()
        } else {
            JSON::stringify(&value)
                .ok()
                .and_then(|t| t.as_string())
                .ok_or_else(|| {
                    StoreError::storage(format!(
                        "the store's {method} returned a value that is not JSON"
                    ))
                })?
        };
        serde_json::from_str(&text).map_err(|e| {
            StoreError::storage(format!(
                "the store's {method} returned an unexpected shape ({e})"
            ))
        })
    }

    /// A Rust value as the JavaScript value `JSON.parse` makes of it.
    fn js<T: Serialize>(value: &T) -> JsValue {
        JSON::parse(&encode(value)).expect("serde_json writes JSON")
    }

    async fn row_text(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.call("row", &[JsValue::from_str(id)]).await
    }
}

impl RecordStore for HostStore {
    fn kind(&self) -> &'static str {
        self.kind
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let listed: Vec<(String, String)> = self.call("rows", &[]).await?;
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for (id, text) in listed {
            match row_of(&text) {
                Ok(row) => rows.push(row),
                Err(problem) => damaged.push(DamagedSession { id, problem }),
            }
        }
        Ok((rows, damaged))
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        let stored = self.row_text(id).await?;
        let saving = matches!(mode, WriteMode::Save { .. });
        let row = next_row(id, stored.as_deref().map(row_of), batch, mode)?;
        let records = RecordWrites {
            efforts: batch
                .efforts
                .iter()
                .map(|r| (r.position, encode(r)))
                .collect(),
            messages: batch
                .messages
                .iter()
                .map(|m| (m.message.seq, log_key(&m.log), encode(m)))
                .collect(),
            metrics: batch.metrics.iter().map(|p| (p.turn, encode(p))).collect(),
            telemetry: batch
                .telemetry
                .iter()
                .map(|t| (t.turn, encode(t)))
                .collect(),
            attachments: batch
                .attachments
                .iter()
                .map(|a| (a.attachment.id.clone(), encode(a)))
                .collect(),
        };
        let expected = stored.map_or(JsValue::NULL, |text| JsValue::from_str(&text));
        let written: bool = self
            .call(
                "write",
                &[
                    JsValue::from_str(id),
                    expected,
                    JsValue::from_str(&encode(&row)),
                    Self::js(&records),
                ],
            )
            .await?;
        if written {
            return Ok(row);
        }
        // Another writer changed the row between the check and the write: say which revision
        // it stored, as the other backends do.
        let now = self.row_text(id).await?;
        let stored_revision = now
            .as_deref()
            .and_then(|t| row_of(t).ok())
            .map_or(0, |r| r.header.revision);
        Err(match now {
            // Deleted while this save ran: say so, as `next_row` does for a delete before it.
            None if saving => StoreError::deleted_meanwhile(id),
            Some(_) if stored_revision == batch.base_revision => StoreError::conflict_text(
                "the session was changed by another writer while this save ran (it was renamed); save again",
            ),
            _ => StoreError::conflict(stored_revision, batch.base_revision),
        })
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        for _ in 0..LOAD_ATTEMPTS {
            let text = self.row_text(id).await?;
            let Some(text) = text else {
                return Err(StoreError::not_found(id));
            };
            let row = existing_row(id, Some(row_of(&text)))?;
            let LoadRequest {
                effort_logs,
                ambient_tail,
                history_tail,
            } = row.header.load_request();
            let request = WorkingSetRequest {
                effort_logs,
                ambient_tail,
                history_tail,
            };
            let set: Option<WorkingSet> = self
                .call(
                    "workingSet",
                    &[
                        JsValue::from_str(id),
                        JsValue::from_str(&text),
                        Self::js(&request),
                    ],
                )
                .await?;
            let Some(set) = set else { continue };
            let mut loaded = LoadedRecords {
                header: Some(row.header.clone()),
                ..LoadedRecords::default()
            };
            loaded.efforts = efforts_of(set.efforts, &mut loaded.unreadable);
            for (effort, texts) in set.effort_logs {
                let messages = messages_of(texts, &mut loaded.unreadable);
                loaded.effort_logs.insert(effort, messages);
            }
            loaded.ambient_tail = messages_of(set.ambient_tail, &mut loaded.unreadable);
            loaded.history_tail = metrics_of(set.history_tail, &mut loaded.unreadable);
            loaded.attachments = attachments_of(set.attachments, &mut loaded.unreadable);
            loaded.log_sizes = Some(
                set.log_sizes
                    .into_iter()
                    .map(|(key, count)| (log_of(&key), count))
                    .collect(),
            );
            return Ok((row, loaded));
        }
        Err(StoreError::storage(format!(
            "session '{id}' changed {LOAD_ATTEMPTS} times while it was being opened; try again"
        )))
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let key = log_key(&LogRef::Effort(effort.to_string()));
        let texts: Vec<(u64, String)> = self
            .call("log", &[JsValue::from_str(id), JsValue::from_str(&key)])
            .await?;
        let mut unreadable = Vec::new();
        let messages = messages_of(texts, &mut unreadable);
        Ok((messages, unreadable))
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        let texts: Vec<(u64, String, String)> = self
            .call(
                "messagesBetween",
                &[
                    JsValue::from_str(id),
                    JsValue::from_f64(from as f64),
                    JsValue::from_f64(to as f64),
                ],
            )
            .await?;
        Ok(stored_messages_of(texts))
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        if seqs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let texts: Vec<(u64, String, String)> = self
            .call("messages", &[JsValue::from_str(id), Self::js(&seqs)])
            .await?;
        Ok(stored_messages_of(texts))
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let all: AllRecords = self.call("all", &[JsValue::from_str(id)]).await?;
        let Some(row) = all.row else {
            return Err(StoreError::not_found(id));
        };
        let mut read = StoredRecords::of(row_of(&row));
        read.efforts = efforts_of(all.efforts, &mut read.unreadable);
        let (messages, mut problems) = stored_messages_of(all.messages);
        read.messages = messages;
        read.unreadable.append(&mut problems);
        read.metrics = metrics_of(all.metrics, &mut read.unreadable);
        read.attachments = attachments_of(all.attachments, &mut read.unreadable);
        Ok(read)
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        let text: Option<String> = self
            .call(
                "telemetry",
                &[JsValue::from_str(id), JsValue::from_f64(turn as f64)],
            )
            .await?;
        text.map(|t| {
            decode(&format!("the telemetry of turn {turn}"), Some(&t)).map_err(StoreError::storage)
        })
        .transpose()
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        for _ in 0..LOAD_ATTEMPTS {
            let Some(text) = self.row_text(id).await? else {
                return Err(StoreError::not_found(id));
            };
            let mut row = existing_row(id, Some(row_of(&text)))?;
            row.name = name.to_string();
            row.updated_ms = now_ms;
            let set: bool = self
                .call(
                    "setRow",
                    &[
                        JsValue::from_str(id),
                        JsValue::from_str(&text),
                        JsValue::from_str(&encode(&row)),
                    ],
                )
                .await?;
            if set {
                return Ok(());
            }
        }
        Err(StoreError::conflict_text(format!(
            "session '{id}' kept changing while it was being renamed; try again"
        )))
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let _: Option<()> = self.call("delete", &[JsValue::from_str(id)]).await?;
        Ok(())
    }
}
