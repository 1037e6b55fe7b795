//! One account's view of the shared store.
//!
//! Every account's sessions live in one PostgreSQL schema, each stored under the key
//! `<account id>/<session id>`. [`AccountStore`] is the only way a request reaches the store: it
//! builds every key from the authenticated account, lists by the account part of the key, and
//! takes the prefix back out of everything it returns. A request therefore cannot name another
//! account's session, whatever id it sends: the id is only ever the part after the prefix.

use ccm_core::model::Message;
use ccm_core::persistence::{LoadedRecords, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use ccm_store::postgres::PostgresStore;
use ccm_store::{
    DamagedSession, MessagesRead, RecordStore, SessionRow, StoreError, StoreResult, StoredRecords,
    WriteMode, WriteResult,
};

/// The longest session id a client may use.
pub const MAX_SESSION_ID: usize = 200;

/// The store as one account sees it.
pub struct AccountStore<'a> {
    store: &'a PostgresStore,
    account: &'a str,
}

/// Whether a client's session id is usable: 1 to [`MAX_SESSION_ID`] bytes, no control
/// characters (ids appear in logs and file names of exports).
pub fn check_session_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_SESSION_ID || id.chars().any(char::is_control) {
        return Err(format!(
            "a session id must be 1 to {MAX_SESSION_ID} bytes without control characters"
        ));
    }
    Ok(())
}

impl<'a> AccountStore<'a> {
    /// The sessions of `account` in `store`.
    pub fn new(store: &'a PostgresStore, account: &'a str) -> AccountStore<'a> {
        AccountStore { store, account }
    }

    /// The stored key of the account's session `id`.
    pub fn key(&self, id: &str) -> String {
        format!("{}/{id}", self.account)
    }

    /// The client's id of a stored key (keys of this account only ever reach here).
    fn client_id(&self, key: &str) -> String {
        key.strip_prefix(self.account)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(key)
            .to_string()
    }

    fn row(&self, row: SessionRow) -> SessionRow {
        SessionRow {
            id: self.client_id(&row.id),
            ..row
        }
    }

    /// The error as the client should read it: with its own ids, never the stored keys.
    pub fn error(&self, error: StoreError) -> StoreError {
        let prefix = format!("{}/", self.account);
        let clean = |message: String| message.replace(&prefix, "");
        match error {
            StoreError::NotFound { id } => StoreError::not_found(&self.client_id(&id)),
            StoreError::Conflict(m) => StoreError::Conflict(clean(m)),
            StoreError::Quota(m) => StoreError::Quota(clean(m)),
            StoreError::Blocked(m) => StoreError::Blocked(clean(m)),
            StoreError::VersionChange(m) => StoreError::VersionChange(clean(m)),
            StoreError::Unavailable(m) => StoreError::Unavailable(clean(m)),
            StoreError::Storage(m) => StoreError::Storage(clean(m)),
        }
    }

    /// The stored revision of the account's session `id`, if it exists.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn revision(&self, id: &str) -> Result<Option<u64>, StoreError> {
        self.store
            .revision(&self.key(id))
            .await
            .map_err(|e| self.error(e))
    }
}

impl RecordStore for AccountStore<'_> {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let (rows, damaged) = self
            .store
            .rows_in_namespace(self.account)
            .await
            .map_err(|e| self.error(e))?;
        Ok((
            rows.into_iter().map(|row| self.row(row)).collect(),
            damaged
                .into_iter()
                .map(|d| DamagedSession {
                    id: self.client_id(&d.id),
                    problem: d.problem.replace(&format!("{}/", self.account), ""),
                })
                .collect(),
        ))
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        self.store
            .write(&self.key(id), batch, mode)
            .await
            .map(|row| self.row(row))
            .map_err(|e| self.error(e))
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        self.store
            .load(&self.key(id))
            .await
            .map(|(row, records)| (self.row(row), records))
            .map_err(|e| self.error(e))
    }

    async fn effort_log(
        &self,
        id: &str,
        effort: &str,
    ) -> Result<(Vec<Message>, Vec<String>), StoreError> {
        self.store
            .effort_log(&self.key(id), effort)
            .await
            .map_err(|e| self.error(e))
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        self.store
            .messages_between(&self.key(id), from, to)
            .await
            .map_err(|e| self.error(e))
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        self.store
            .messages_by_seq(&self.key(id), seqs)
            .await
            .map_err(|e| self.error(e))
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let records = self
            .store
            .read_all(&self.key(id))
            .await
            .map_err(|e| self.error(e))?;
        Ok(StoredRecords {
            row: records.row.map(|row| self.row(row)),
            ..records
        })
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        self.store
            .telemetry(&self.key(id), turn)
            .await
            .map_err(|e| self.error(e))
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        self.store
            .rename(&self.key(id), name, now_ms)
            .await
            .map_err(|e| self.error(e))
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.store
            .delete(&self.key(id))
            .await
            .map_err(|e| self.error(e))
    }
}
