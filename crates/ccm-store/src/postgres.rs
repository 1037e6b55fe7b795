//! The PostgreSQL backend: sessions on a database server that several processes or machines
//! share (feature `postgres`, native targets only).
//!
//! # Connection settings and pool
//!
//! [`PostgresStore::connect`] takes a libpq-style URL (`postgres://user:password@host:port/db`,
//! or the `key=value` form) and [`PostgresOptions`]: how many connections the pool keeps at
//! most, how long to wait for a server to answer a connection, the name the connections show
//! in `pg_stat_activity`, and the database schema the tables live in (`ccm` by default; tests
//! use a fresh schema each). Connections are opened lazily by a `deadpool` pool and reused:
//! every operation takes one connection for its transaction and gives it back, so one store
//! serves many concurrent requests of a server without a connection per request.
//!
//! # TLS
//!
//! `sslmode=require` in the URL makes every connection TLS (rustls), and the server's
//! certificate is always verified: against Mozilla's root authorities (a managed database
//! service's certificate), plus the PEM file that `sslrootcert=FILE` names (a private
//! authority's). libpq's `verify-ca` and `verify-full` are read as `require`, which already
//! verifies the whole chain and the host name. Without `sslmode=require` or `sslrootcert`
//! connections are plain, for a database on the same machine or a private network (libpq's
//! default `prefer` is plain here: a TLS handshake that would silently fall back is no
//! protection).
//!
//! # Schema and migrations
//!
//! The store creates and migrates its own tables when it connects. Each migration has a
//! version, recorded in `schema_version`; the pending ones are applied in one transaction that
//! first takes `pg_advisory_xact_lock` on the schema's name, so several processes starting at
//! once apply each migration exactly once (the others wait for the lock, then find nothing
//! left to do). A database migrated by a newer build is refused rather than written in a
//! layout this build does not know. Version 1:
//!
//! | table | key | columns |
//! |---|---|---|
//! | `sessions` | `id` | `row` (the [`SessionRow`] as JSON text), `revision`, `updated_ms` |
//! | `efforts` | `(session, position)` | `record` |
//! | `messages` | `(session, seq)`, index `messages_by_log` on `(session, log, seq)` | `log` ([`log_key`]), `record` |
//! | `metrics` | `(session, turn)` | `record` |
//! | `telemetry` | `(session, turn)` | `record`: diagnostics, never read to open |
//! | `attachments` | `(session, id)` | `record` |
//!
//! Every `record` and `row` is a `text` column holding exactly [`encode`]'s output, not
//! `jsonb`: the text round-trips byte for byte (an export is identical to other backends'),
//! and a record damaged by hand or by another program stays stored as it is, to be reported
//! on load instead of being refused or silently normalised.
//!
//! # Writes, reads and failures
//!
//! A save is one transaction: it locks the session's row (`SELECT … FOR UPDATE`, or for a new
//! session an `INSERT … ON CONFLICT DO NOTHING` that waits for a concurrent creator), checks
//! [`next_row`] against it, upserts the batch's records with one statement per table (arrays
//! unnested on the server, so a save costs the same round trips at any size), and updates the
//! row under `WHERE revision = <base>`. Two writers on one revision, in any processes or on
//! any machines, are serialised by the row lock; the second finds the new revision and gets
//! [`StoreError::Conflict`]. Loads and exports run in one read-only `REPEATABLE READ`
//! transaction, so the row and the records read agree even while another process saves.
//!
//! A server that cannot be reached gives [`StoreError::Unavailable`], naming host and port
//! (never the password). A connection lost during a save gives [`StoreError::Storage`]: the
//! server rolls the open transaction back, so nothing of the save was written; only when the
//! connection drops while the `COMMIT` itself is on its way is the outcome unknown, and the
//! message says so (reloading shows which revision is stored). Broken connections are not
//! given out again by the pool.
//!
//! # Why tokio-postgres and deadpool
//!
//! `tokio-postgres` is the asynchronous PostgreSQL client that the synchronous `postgres`
//! crate and most Rust servers build on; it is well kept, speaks the extended protocol with
//! prepared statements and arrays, and runs on tokio, which those servers already use.
//! `deadpool-postgres` is the small, widely used pool for it, with a per-connection cache of
//! prepared statements and timeouts for creating and waiting for connections.

use crate::backend::{
    existing_row, next_row, DamagedSession, LogRead, MessagesRead, RecordStore, StoredRecords,
    WriteMode, WriteResult,
};
use crate::error::{StoreError, StoreResult};
use crate::records::{decode, decode_all, encode, log_key, SessionRow};
use ccm_core::compaction::SessionAttachment;
use ccm_core::persistence::{
    LoadedRecords, LogRef, StoredMessage, WriteBatch, RECORD_SCHEMA_VERSION,
};
use ccm_core::telemetry::TurnTelemetry;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::{IsolationLevel, NoTls};

/// The schema version this build creates and migrates to.
pub const SCHEMA_VERSION: i32 = 1;

/// The migrations, by version; `{s}` stands for the quoted schema name. Each runs once, in
/// order, inside the migration transaction.
const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE {s}.sessions (
        id text PRIMARY KEY,
        row text NOT NULL,
        revision bigint NOT NULL,
        updated_ms double precision NOT NULL
    );
    CREATE TABLE {s}.efforts (
        session text NOT NULL,
        position bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, position)
    );
    CREATE TABLE {s}.messages (
        session text NOT NULL,
        seq bigint NOT NULL,
        log text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, seq)
    );
    CREATE INDEX messages_by_log ON {s}.messages (session, log, seq);
    CREATE TABLE {s}.metrics (
        session text NOT NULL,
        turn bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, turn)
    );
    CREATE TABLE {s}.telemetry (
        session text NOT NULL,
        turn bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, turn)
    );
    CREATE TABLE {s}.attachments (
        session text NOT NULL,
        id text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, id)
    );",
)];

/// How a [`PostgresStore`] connects.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresOptions {
    /// Connections the pool keeps open at most (16 by default); an operation waits for a free
    /// one when all are busy.
    pub pool_size: usize,
    /// How long to wait for the server to accept a connection (5 s by default): an unreachable
    /// host fails within it instead of after the operating system's TCP timeout.
    pub connect_timeout: Duration,
    /// How long an operation may wait for a free connection of the pool (30 s by default).
    pub wait_timeout: Duration,
    /// The database schema of the tables (`ccm` by default): letters, digits and `_`, not
    /// starting with a digit, at most 63 characters. It is created when missing.
    pub schema: String,
    /// The name the connections show in `pg_stat_activity` (`ccm-store` by default).
    pub application_name: String,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            wait_timeout: Duration::from_secs(30),
            schema: "ccm".to_string(),
            application_name: "ccm-store".to_string(),
        }
    }
}

/// Sessions stored in PostgreSQL; see the module documentation.
pub struct PostgresStore {
    pool: Pool,
    /// `host:port` of the server (or its socket directory), for messages: never the password.
    server: String,
    schema: String,
    sql: Sql,
    /// Bytes of record and row text this handle has sent in writes.
    bytes_written: AtomicU64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("server", &self.server)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The statements, with the schema filled in once per store (the pool's connections cache
/// them prepared, keyed by their text).
struct Sql {
    row: String,
    row_for_update: String,
    rows: String,
    rows_in_namespace: String,
    revision: String,
    insert_row: String,
    update_row: String,
    rename_row: String,
    upsert_efforts: String,
    upsert_messages: String,
    upsert_metrics: String,
    upsert_telemetry: String,
    upsert_attachments: String,
    efforts: String,
    attachments: String,
    logs: String,
    ambient_tail: String,
    history_tail: String,
    log_sizes: String,
    effort_log: String,
    messages_between: String,
    messages_by_seq: String,
    all_messages: String,
    all_metrics: String,
    telemetry: String,
    delete: [String; 6],
}

impl Sql {
    fn new(s: &str) -> Sql {
        let upsert = |table: &str, key: &str, key_type: &str| {
            format!(
                "INSERT INTO {s}.{table} (session, {key}, record)
                 SELECT $1::text, k, r FROM UNNEST($2::{key_type}[], $3::text[]) AS u(k, r)
                 ON CONFLICT (session, {key}) DO UPDATE SET record = EXCLUDED.record"
            )
        };
        Sql {
            row: format!("SELECT row FROM {s}.sessions WHERE id = $1"),
            row_for_update: format!("SELECT row FROM {s}.sessions WHERE id = $1 FOR UPDATE"),
            rows: format!("SELECT id, row FROM {s}.sessions"),
            rows_in_namespace: format!(
                "SELECT id, row FROM {s}.sessions WHERE split_part(id, '/', 1) = $1"
            ),
            revision: format!("SELECT revision FROM {s}.sessions WHERE id = $1"),
            insert_row: format!(
                "INSERT INTO {s}.sessions (id, row, revision, updated_ms) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id) DO NOTHING"
            ),
            update_row: format!(
                "UPDATE {s}.sessions SET row = $2, revision = $3, updated_ms = $4
                 WHERE id = $1 AND revision = $5"
            ),
            rename_row: format!("UPDATE {s}.sessions SET row = $2, updated_ms = $3 WHERE id = $1"),
            upsert_efforts: upsert("efforts", "position", "bigint"),
            upsert_messages: format!(
                "INSERT INTO {s}.messages (session, seq, log, record)
                 SELECT $1::text, k, l, r FROM UNNEST($2::bigint[], $3::text[], $4::text[]) AS u(k, l, r)
                 ON CONFLICT (session, seq) DO UPDATE SET log = EXCLUDED.log, record = EXCLUDED.record"
            ),
            upsert_metrics: upsert("metrics", "turn", "bigint"),
            upsert_telemetry: upsert("telemetry", "turn", "bigint"),
            upsert_attachments: upsert("attachments", "id", "text"),
            efforts: format!(
                "SELECT position, record FROM {s}.efforts WHERE session = $1 ORDER BY position"
            ),
            attachments: format!(
                "SELECT id, record FROM {s}.attachments WHERE session = $1 ORDER BY id COLLATE \"C\""
            ),
            logs: format!(
                "SELECT log, seq, record FROM {s}.messages
                 WHERE session = $1 AND log = ANY($2::text[]) ORDER BY log, seq"
            ),
            ambient_tail: format!(
                "SELECT seq, record FROM {s}.messages WHERE session = $1 AND log = 'ambient'
                 ORDER BY seq DESC LIMIT $2"
            ),
            history_tail: format!(
                "SELECT turn, record FROM {s}.metrics WHERE session = $1 ORDER BY turn DESC LIMIT $2"
            ),
            // Counted over the (session, log, seq) index: no message text is read.
            log_sizes: format!(
                "SELECT log, count(*) FROM {s}.messages WHERE session = $1 GROUP BY log"
            ),
            effort_log: format!(
                "SELECT seq, record FROM {s}.messages WHERE session = $1 AND log = $2 ORDER BY seq"
            ),
            messages_between: format!(
                "SELECT seq, record FROM {s}.messages WHERE session = $1 AND seq >= $2 AND seq < $3
                 ORDER BY seq"
            ),
            messages_by_seq: format!(
                "SELECT seq, record FROM {s}.messages WHERE session = $1 AND seq = ANY($2::bigint[])
                 ORDER BY seq"
            ),
            all_messages: format!(
                "SELECT seq, record FROM {s}.messages WHERE session = $1 ORDER BY seq"
            ),
            all_metrics: format!(
                "SELECT turn, record FROM {s}.metrics WHERE session = $1 ORDER BY turn"
            ),
            telemetry: format!(
                "SELECT record FROM {s}.telemetry WHERE session = $1 AND turn = $2"
            ),
            // The row first: a save in progress holds it, so a delete waits for the save
            // instead of deleting records under it (and both lock in the same order).
            delete: [
                format!("DELETE FROM {s}.sessions WHERE id = $1"),
                format!("DELETE FROM {s}.efforts WHERE session = $1"),
                format!("DELETE FROM {s}.messages WHERE session = $1"),
                format!("DELETE FROM {s}.metrics WHERE session = $1"),
                format!("DELETE FROM {s}.telemetry WHERE session = $1"),
                format!("DELETE FROM {s}.attachments WHERE session = $1"),
            ],
        }
    }
}

/// A stored number as PostgreSQL's `bigint`. Sequence numbers, turns and revisions count
/// saves and messages, far below 2⁶³; a larger one cannot be stored and is clamped, which
/// only ever makes a range read shorter.
fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The error's kind and, for server errors, the server's own sentence.
fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    match std::error::Error::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
}

/// Whether the error means the connection is gone (closed, broken, or the server shutting
/// the session down), rather than a refusal of one statement.
fn connection_lost(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(code) = error.code() {
        return [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code);
    }
    std::error::Error::source(error).is_some_and(|cause| cause.is::<std::io::Error>())
}

/// Whether the schema name can be used as it is, inside double quotes.
fn valid_schema(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
}

/// `host:port` of each host the configuration names, for messages.
fn server_of(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match host {
                tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => {
                    format!("the socket in {} (port {port})", dir.display())
                }
            }
        })
        .collect();
    if hosts.is_empty() {
        "localhost:5432".to_string()
    } else {
        hosts.join(", ")
    }
}

/// Takes libpq's TLS settings that tokio-postgres does not read out of a connection URL: the
/// `sslrootcert` file (returned), and `sslmode=verify-ca` or `verify-full` (read as
/// `require`, which verifies as much; see the module documentation). Both the URL form and the
/// `key=value` form are read.
fn take_tls_settings(url: &str) -> (String, Option<String>) {
    let mut root = None;
    let mut keep = |key: &str, value: &str| -> Option<String> {
        match (key, value) {
            ("sslrootcert", file) => {
                root = Some(percent_decode(file));
                None
            }
            ("sslmode", "verify-ca" | "verify-full") => Some(format!("{key}=require")),
            _ => Some(format!("{key}={value}")),
        }
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_string(), None);
        };
        let params: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|p| match p.split_once('=') {
                Some((key, value)) => keep(key, value),
                None => Some(p.to_string()),
            })
            .collect();
        let url = if params.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", params.join("&"))
        };
        (url, root)
    } else {
        let params: Vec<String> = url
            .split_whitespace()
            .filter_map(|p| match p.split_once('=') {
                Some((key, value)) => keep(key, value),
                None => Some(p.to_string()),
            })
            .collect();
        (params.join(" "), root)
    }
}

/// `%XX` sequences of a URL parameter decoded (a file path may hold spaces or `&`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The TLS connector: rustls with the ring provider, trusting Mozilla's roots and the PEM file
/// `root_certificate` names.
fn tls_connector(
    root_certificate: Option<&str>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = root_certificate {
        let unusable = |why: String| {
            StoreError::unavailable(format!(
                "the root certificate file {file} (sslrootcert) cannot be used: {why}"
            ))
        };
        let certificates = CertificateDer::pem_file_iter(file)
            .map_err(|e| unusable(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| unusable(e.to_string()))?;
        if certificates.is_empty() {
            return Err(unusable("it holds no PEM certificate".to_string()));
        }
        for certificate in certificates {
            roots
                .add(certificate)
                .map_err(|e| unusable(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::unavailable(format!("TLS cannot be set up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Whether a store error is a connection to the server lost mid-operation (as opposed to a
/// refusal of the operation): the error is `storage`, since for this store's callers nothing
/// but reloading helps, while a server answering many clients can tell them to try again,
/// because a lost connection's transaction was rolled back (or, lost during `COMMIT`, is
/// found by reading the revision again).
pub fn connection_was_lost(error: &StoreError) -> bool {
    matches!(error, StoreError::Storage(message)
        if message.contains("the connection to the PostgreSQL server at") && message.contains(" was lost"))
}

/// What a save failed on, for the message.
#[derive(Clone, Copy)]
enum Step {
    /// Before the `COMMIT` was sent: the server rolls back whatever the transaction did.
    Writing,
    /// The `COMMIT` itself: when the connection drops here, the server may have committed.
    Committing,
}

/// A connection taken from the pool.
type Connection = deadpool_postgres::Object;

/// A connection taken from the pool for one operation. When a statement finds the connection
/// lost, the lease takes it out of the pool as it ends: the pool's own check (is the client
/// closed?) can still say no for a moment after the server ended the session, and would hand
/// the dead connection to the next operation.
struct Lease {
    client: Option<Connection>,
    /// Set by [`PostgresStore::failure`] and [`PostgresStore::save_failure`]; shared with the
    /// error handlers, which run while a transaction borrows the client.
    lost: Arc<AtomicBool>,
}

impl std::ops::Deref for Lease {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.client
            .as_ref()
            .expect("a lease holds its connection until it ends")
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut Connection {
        self.client
            .as_mut()
            .expect("a lease holds its connection until it ends")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.lost.load(Ordering::Relaxed) {
            if let Some(client) = self.client.take() {
                // Detached from the pool and dropped, which closes it; the pool opens a new
                // connection when one is needed.
                drop(deadpool_postgres::Object::take(client));
            }
        }
    }
}

impl PostgresStore {
    /// Connects to the server at `url`, creating or migrating the schema `options.schema`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the URL cannot be read, the server cannot be reached
    /// or refuses the connection (the message names host and port); [`StoreError::Storage`]
    /// when the schema name is not usable, the migration fails, or the schema was migrated by
    /// a newer build.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<PostgresStore, StoreError> {
        if !valid_schema(&options.schema) {
            return Err(StoreError::storage(format!(
                "the schema name '{}' is not usable: letters, digits and '_' only, not starting with a digit, at most 63 characters",
                options.schema
            )));
        }
        let (url, root_certificate) = take_tls_settings(url);
        // The parse error never repeats the URL, so a password in it stays out of messages.
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::unavailable(format!(
                "the PostgreSQL connection URL could not be read ({})",
                describe(&e)
            ))
        })?;
        config.connect_timeout(options.connect_timeout);
        config.application_name(options.application_name.as_str());
        let server = server_of(&config);
        // `Fast` gives back a pooled connection unless it is known closed; a connection that
        // broke silently fails its first statement, which is then reported like any lost
        // connection, and the pool drops it.
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if config.get_ssl_mode() == SslMode::Require || root_certificate.is_some() {
            let tls = tls_connector(root_certificate.as_deref())?;
            Manager::from_config(config, tls, manager_config)
        } else {
            Manager::from_config(config, NoTls, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(options.connect_timeout))
            .wait_timeout(Some(options.wait_timeout))
            .build()
            .map_err(|e| {
                StoreError::unavailable(format!("the connection pool could not be built: {e}"))
            })?;
        let schema = format!("\"{}\"", options.schema);
        let store = PostgresStore {
            pool,
            server,
            sql: Sql::new(&schema),
            schema: options.schema,
            bytes_written: AtomicU64::new(0),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Bytes of record and row text this handle has sent to the server in writes (renames
    /// included), for measuring what a save costs.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The schema version the database is at.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] or [`StoreError::Storage`] when it cannot be read.
    pub async fn schema_version(&self) -> Result<i32, StoreError> {
        let client = self.client().await?;
        let lost = client.lost.clone();
        let sql = format!(
            "SELECT coalesce(max(version), 0) FROM \"{}\".schema_version",
            self.schema
        );
        let row = client
            .query_one(&sql, &[])
            .await
            .map_err(|e| self.failure(&lost, "the schema version could not be read", &e))?;
        Ok(row.get(0))
    }

    /// The connection pool, for a host that keeps tables of its own beside the sessions (the
    /// sync server's accounts and tokens) and wants one pool for both.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The rows of the sessions whose id starts with `namespace` and a `/`: a server that
    /// keeps several accounts' sessions in one schema names them `<account>/<session>` and
    /// lists one account's without reading the others'. (`split_part(id, '/', 1)` is the
    /// expression a host indexes for this.)
    ///
    /// # Errors
    /// As [`RecordStore::rows`].
    pub async fn rows_in_namespace(
        &self,
        namespace: &str,
    ) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        self.list(&self.sql.rows_in_namespace, &[&namespace]).await
    }

    /// The stored revision of session `id`, or `None` when there is no such session: what a
    /// server names in a conflict.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] or [`StoreError::Storage`] when it cannot be read.
    pub async fn revision(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("the revision of session '{id}' could not be read");
        let statement = client
            .prepare_cached(&self.sql.revision)
            .await
            .map_err(|e| self.failure(&lost, &context, &e))?;
        let found = client
            .query_opt(&statement, &[&id])
            .await
            .map_err(|e| self.failure(&lost, &context, &e))?;
        Ok(found.map(|r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)))
    }

    /// Session rows by a listing statement with its parameters.
    async fn list(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let client = self.client().await?;
        let lost = client.lost.clone();
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|e| self.failure(&lost, "the sessions could not be listed", &e))?;
        let found = client
            .query(&statement, params)
            .await
            .map_err(|e| self.failure(&lost, "the sessions could not be listed", &e))?;
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for r in &found {
            // The id is the key column, readable even when the row text is not.
            let id: String = r.get(0);
            match row_of(r.get(1)) {
                Ok(row) => rows.push(row),
                Err(problem) => damaged.push(DamagedSession { id, problem }),
            }
        }
        Ok((rows, damaged))
    }

    /// Applies the pending migrations in one transaction under an advisory lock.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let fail = |e: &tokio_postgres::Error| {
            self.failure(
                &lost,
                &format!(
                    "the schema '{}' could not be created or migrated",
                    self.schema
                ),
                e,
            )
        };
        let tx = client.transaction().await.map_err(|e| fail(&e))?;
        // Serialises migrations of this schema across processes and machines; released with
        // the transaction. Without it two first starts would both create the tables.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("ccm-store schema {}", self.schema)],
        )
        .await
        .map_err(|e| fail(&e))?;
        let quoted = format!("\"{}\"", self.schema);
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {quoted};
             CREATE TABLE IF NOT EXISTS {quoted}.schema_version (
                 version integer PRIMARY KEY,
                 record_layout integer NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now()
             );"
        ))
        .await
        .map_err(|e| fail(&e))?;
        let current: i32 = tx
            .query_one(
                &format!("SELECT coalesce(max(version), 0) FROM {quoted}.schema_version"),
                &[],
            )
            .await
            .map_err(|e| fail(&e))?
            .get(0);
        if current > SCHEMA_VERSION {
            return Err(StoreError::storage(format!(
                "the sessions in schema '{}' on {} were stored by a newer version of this program (schema version {current}, this one knows up to {SCHEMA_VERSION}); update it to open them (nothing was changed)",
                self.schema, self.server
            )));
        }
        for (version, script) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
            tx.batch_execute(&script.replace("{s}", &quoted))
                .await
                .map_err(|e| fail(&e))?;
            tx.execute(
                &format!(
                    "INSERT INTO {quoted}.schema_version (version, record_layout) VALUES ($1, $2)"
                ),
                &[version, &(RECORD_SCHEMA_VERSION as i32)],
            )
            .await
            .map_err(|e| fail(&e))?;
        }
        tx.commit().await.map_err(|e| fail(&e))
    }

    /// A connection from the pool, or why the server cannot be reached.
    async fn client(&self) -> Result<Lease, StoreError> {
        use deadpool_postgres::PoolError;
        let client = self.pool.get().await.map_err(|e| {
            let reason = match &e {
                PoolError::Backend(e) => describe(e),
                PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                    "every connection of the pool stayed busy".to_string()
                }
                PoolError::Timeout(_) => "the server did not answer in time".to_string(),
                other => other.to_string(),
            };
            // A refused certificate is not fixed by starting a server: say what is.
            let check = if reason.contains("certificate") || reason.contains("TLS") {
                "check that the server's certificate is signed by an authority given with sslrootcert=FILE and names the host in the URL"
            } else {
                "check that it runs and accepts connections"
            };
            StoreError::unavailable(format!(
                "the PostgreSQL server at {} cannot be reached ({reason}); {check}",
                self.server
            ))
        })?;
        Ok(Lease {
            client: Some(client),
            lost: Arc::default(),
        })
    }

    /// The store error for a failed statement outside a save.
    fn failure(
        &self,
        lost: &AtomicBool,
        context: &str,
        error: &tokio_postgres::Error,
    ) -> StoreError {
        if connection_lost(error) {
            lost.store(true, Ordering::Relaxed);
            return StoreError::storage(format!(
                "{context}: the connection to the PostgreSQL server at {} was lost ({})",
                self.server,
                describe(error)
            ));
        }
        match error.code() {
            Some(code) if *code == SqlState::DISK_FULL => StoreError::quota(format!(
                "{context}: the database server's disk is full ({})",
                describe(error)
            )),
            _ => StoreError::storage(format!("{context}: {}", describe(error))),
        }
    }

    /// The store error for a failed statement of a save.
    fn save_failure(
        &self,
        lost_flag: &AtomicBool,
        id: &str,
        step: Step,
        error: &tokio_postgres::Error,
    ) -> StoreError {
        let lost = connection_lost(error);
        if lost {
            lost_flag.store(true, Ordering::Relaxed);
        }
        match (step, error.code()) {
            (Step::Committing, _) if lost => StoreError::storage(format!(
                "the connection to the PostgreSQL server at {} was lost while session '{id}' was being committed ({}); the server may or may not have stored this save, so reload the session to see which revision is stored",
                self.server,
                describe(error)
            )),
            _ if lost => StoreError::storage(format!(
                "the connection to the PostgreSQL server at {} was lost while session '{id}' was being saved ({}); the server rolled the save back, nothing was written",
                self.server,
                describe(error)
            )),
            // A create racing another create of the same id, or a save racing a delete.
            (_, Some(code))
                if *code == SqlState::UNIQUE_VIOLATION
                    || *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                StoreError::conflict_text(format!(
                    "session '{id}' was written by another process at the same time; nothing was written, reload it to continue ({})",
                    describe(error)
                ))
            }
            (_, Some(code)) if *code == SqlState::DISK_FULL => StoreError::quota(format!(
                "the database server's disk is full; nothing of session '{id}' was written ({})",
                describe(error)
            )),
            _ => StoreError::storage(format!(
                "session '{id}' could not be saved; nothing was written ({})",
                describe(error)
            )),
        }
    }

    /// Counts `bytes` of text sent.
    fn sent(&self, bytes: usize) {
        self.bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A read-only transaction over one snapshot, so that everything read agrees with the row
    /// read first even while another process saves.
    async fn snapshot<'a>(
        &self,
        client: &'a mut Lease,
        context: &str,
    ) -> Result<deadpool_postgres::Transaction<'a>, StoreError> {
        let lost = client.lost.clone();
        client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(|e| self.failure(&lost, context, &e))
    }

    async fn write_batch(
        &self,
        id: &str,
        batch: &WriteBatch,
        mode: WriteMode,
    ) -> Result<SessionRow, StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let fail = |e: tokio_postgres::Error| self.save_failure(&lost, id, Step::Writing, &e);
        let tx = client.transaction().await.map_err(fail)?;
        let creating = matches!(mode, WriteMode::Create { .. });
        let row = match mode {
            WriteMode::Create { .. } => {
                let row = next_row(id, None, batch, mode.clone())?;
                let text = encode(&row);
                let statement = tx
                    .prepare_cached(&self.sql.insert_row)
                    .await
                    .map_err(fail)?;
                let inserted = tx
                    .execute(
                        &statement,
                        &[&id, &text, &big(row.header.revision), &row.updated_ms],
                    )
                    .await
                    .map_err(fail)?;
                self.sent(text.len());
                if inserted == 0 {
                    // The id is taken (the insert waited for a concurrent creator to finish):
                    // the write rules say how to refuse it.
                    let stored = self
                        .stored_row(&tx, &self.sql.row, id)
                        .await
                        .map_err(fail)?;
                    let stored = Some(stored.unwrap_or_else(|| Err("it was just deleted".into())));
                    return Err(next_row(id, stored, batch, mode).err().unwrap_or_else(|| {
                        StoreError::conflict_text(format!(
                            "a session with id '{id}' already exists"
                        ))
                    }));
                }
                row
            }
            WriteMode::Save { .. } => {
                // The lock is held to the end of the transaction: a concurrent save of this
                // session waits here, then reads the revision this one wrote.
                let stored = self
                    .stored_row(&tx, &self.sql.row_for_update, id)
                    .await
                    .map_err(fail)?;
                // Dropping `tx` on a refusal rolls back; nothing was written.
                next_row(id, stored, batch, mode)?
            }
        };
        self.write_records(&tx, id, batch).await.map_err(fail)?;
        if !creating {
            let text = encode(&row);
            let statement = tx
                .prepare_cached(&self.sql.update_row)
                .await
                .map_err(fail)?;
            let updated = tx
                .execute(
                    &statement,
                    &[
                        &id,
                        &text,
                        &big(row.header.revision),
                        &row.updated_ms,
                        &big(batch.base_revision),
                    ],
                )
                .await
                .map_err(fail)?;
            self.sent(text.len());
            // The row lock already guarantees this; the compare-and-set keeps the guarantee
            // in the statement itself should the locking above ever change.
            if updated != 1 {
                return Err(StoreError::conflict_text(format!(
                    "session '{id}' changed in another window or process during this save (it no longer builds on revision {}); nothing was written, reload it to continue",
                    batch.base_revision
                )));
            }
        }
        tx.commit()
            .await
            .map_err(|e| self.save_failure(&lost, id, Step::Committing, &e))?;
        Ok(row)
    }

    /// The stored row of `id` read with `sql`: `None` when there is none.
    async fn stored_row(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        sql: &str,
        id: &str,
    ) -> Result<Option<Result<SessionRow, String>>, tokio_postgres::Error> {
        let statement = tx.prepare_cached(sql).await?;
        let found = tx.query_opt(&statement, &[&id]).await?;
        Ok(found.map(|r| row_of(r.get::<_, Option<&str>>(0))))
    }

    /// Upserts the batch's records, one statement per table that has any.
    async fn write_records(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        id: &str,
        batch: &WriteBatch,
    ) -> Result<(), tokio_postgres::Error> {
        // One record per key (the last one wins, as sequential puts would have it): an
        // `ON CONFLICT DO UPDATE` may not touch a row twice in one statement.
        fn keyed<K: Ord + Clone, T>(
            records: &[T],
            key: impl Fn(&T) -> K,
            text: impl Fn(&T) -> String,
        ) -> (Vec<K>, Vec<String>) {
            let unique: BTreeMap<K, String> = records.iter().map(|r| (key(r), text(r))).collect();
            unique.into_iter().unzip()
        }
        let (positions, texts) = keyed(&batch.efforts, |r| big(r.position), encode);
        self.upsert(tx, &self.sql.upsert_efforts, id, &positions, &texts)
            .await?;
        let (turns, texts) = keyed(&batch.metrics, |r| big(r.turn), encode);
        self.upsert(tx, &self.sql.upsert_metrics, id, &turns, &texts)
            .await?;
        let (turns, texts) = keyed(&batch.telemetry, |r| big(r.turn), encode);
        self.upsert(tx, &self.sql.upsert_telemetry, id, &turns, &texts)
            .await?;
        let (ids, texts) = keyed(&batch.attachments, |r| r.attachment.id.clone(), encode);
        self.upsert(tx, &self.sql.upsert_attachments, id, &ids, &texts)
            .await?;
        if !batch.messages.is_empty() {
            let unique: BTreeMap<i64, (String, String)> = batch
                .messages
                .iter()
                .map(|m| (big(m.message.seq), (log_key(&m.log), encode(m))))
                .collect();
            let (seqs, rest): (Vec<i64>, Vec<(String, String)>) = unique.into_iter().unzip();
            let (logs, texts): (Vec<String>, Vec<String>) = rest.into_iter().unzip();
            let statement = tx.prepare_cached(&self.sql.upsert_messages).await?;
            tx.execute(&statement, &[&id, &seqs, &logs, &texts]).await?;
            self.sent(texts.iter().map(String::len).sum());
        }
        Ok(())
    }

    /// Upserts `(session, key, record)` rows of one table; nothing when there are none.
    async fn upsert<K: tokio_postgres::types::ToSql + Sync>(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        sql: &str,
        id: &str,
        keys: &[K],
        texts: &[String],
    ) -> Result<(), tokio_postgres::Error> {
        if keys.is_empty() {
            return Ok(());
        }
        let statement = tx.prepare_cached(sql).await?;
        tx.execute(&statement, &[&id, &keys, &texts]).await?;
        self.sent(texts.iter().map(String::len).sum());
        Ok(())
    }

    /// Runs a read of `(number, record)` rows and names each record `what(number)`.
    async fn numbered<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        what: impl Fn(i64) -> String,
    ) -> Result<Vec<(String, Option<String>)>, tokio_postgres::Error> {
        let statement = client.prepare_cached(sql).await?;
        let rows = client.query(&statement, params).await?;
        Ok(rows
            .iter()
            .map(|r| (what(r.get(0)), r.get::<_, Option<String>>(1)))
            .collect())
    }

    /// The records [`numbered`](Self::numbered) reads, decoded; the ones that cannot be read
    /// are described in `unreadable`.
    async fn decoded<C: GenericClient, T: DeserializeOwned>(
        &self,
        client: &C,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        what: impl Fn(i64) -> String,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<T>, tokio_postgres::Error> {
        let texts = self.numbered(client, sql, params, what).await?;
        Ok(decode_all(texts, unreadable))
    }

    async fn load_session(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("session '{id}' could not be read");
        let fail = |e: tokio_postgres::Error| self.failure(&lost, &context, &e);
        let tx = self.snapshot(&mut client, &context).await?;
        let row = existing_row(
            id,
            self.stored_row(&tx, &self.sql.row, id)
                .await
                .map_err(fail)?,
        )?;
        let request = row.header.load_request();
        let mut loaded = LoadedRecords {
            header: Some(row.header.clone()),
            ..LoadedRecords::default()
        };
        let effort = |p| format!("effort record {p}");
        loaded.efforts = self
            .decoded(
                &tx,
                &self.sql.efforts,
                &[&id],
                effort,
                &mut loaded.unreadable,
            )
            .await
            .map_err(fail)?;
        loaded.attachments = self
            .attachments(&tx, id, &mut loaded.unreadable)
            .await
            .map_err(fail)?;

        // The open efforts' logs, in one query over the by-log index.
        let keys: HashMap<String, String> = request
            .effort_logs
            .iter()
            .map(|effort| (log_key(&LogRef::Effort(effort.clone())), effort.clone()))
            .collect();
        loaded.effort_logs = request
            .effort_logs
            .iter()
            .map(|effort| (effort.clone(), Vec::new()))
            .collect();
        if !keys.is_empty() {
            let wanted: Vec<&String> = keys.keys().collect();
            let statement = tx.prepare_cached(&self.sql.logs).await.map_err(fail)?;
            let rows = tx.query(&statement, &[&id, &wanted]).await.map_err(fail)?;
            for r in &rows {
                let log: &str = r.get(0);
                let seq: i64 = r.get(1);
                let text: Option<&str> = r.get(2);
                let Some(effort) = keys.get(log) else {
                    continue;
                };
                match decode::<StoredMessage>(&format!("message {seq}"), text) {
                    Ok(stored) => loaded
                        .effort_logs
                        .entry(effort.clone())
                        .or_default()
                        .push(stored.message),
                    Err(problem) => loaded.unreadable.push(problem),
                }
            }
        }

        let ambient_tail: Vec<StoredMessage> = self
            .decoded(
                &tx,
                &self.sql.ambient_tail,
                &[&id, &big(request.ambient_tail)],
                |seq| format!("message {seq}"),
                &mut loaded.unreadable,
            )
            .await
            .map_err(fail)?;
        loaded.ambient_tail = ambient_tail.into_iter().rev().map(|s| s.message).collect();

        loaded.history_tail = self
            .decoded(
                &tx,
                &self.sql.history_tail,
                &[&id, &big(request.history_tail)],
                |turn| format!("the metrics point of turn {turn}"),
                &mut loaded.unreadable,
            )
            .await
            .map_err(fail)?;
        loaded.history_tail.reverse();

        let statement = tx.prepare_cached(&self.sql.log_sizes).await.map_err(fail)?;
        let mut log_sizes = BTreeMap::new();
        for r in tx.query(&statement, &[&id]).await.map_err(fail)? {
            let key: &str = r.get(0);
            let count: i64 = r.get(1);
            if let Some(log) = log_of_key(key) {
                log_sizes.insert(log, u64::try_from(count).unwrap_or(0));
            }
        }
        loaded.log_sizes = Some(log_sizes);
        Ok((row, loaded))
    }

    /// Every attachment record of a session; unreadable ones are described.
    async fn attachments(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        id: &str,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<SessionAttachment>, tokio_postgres::Error> {
        let statement = tx.prepare_cached(&self.sql.attachments).await?;
        let rows = tx.query(&statement, &[&id]).await?;
        Ok(decode_all(
            rows.iter().map(|r| {
                let key: &str = r.get(0);
                (format!("attachment {key}"), r.get::<_, Option<String>>(1))
            }),
            unreadable,
        ))
    }

    /// Stored message records read with `sql`, and the ones that could not be read. One
    /// statement sees one snapshot, so no transaction is opened for it.
    async fn stored_messages(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        context: &str,
    ) -> Result<(Vec<StoredMessage>, Vec<String>), StoreError> {
        let client = self.client().await?;
        let lost = client.lost.clone();
        let records = self
            .numbered(&*client, sql, params, |seq| format!("message {seq}"))
            .await
            .map_err(|e| self.failure(&lost, context, &e))?;
        let mut unreadable = Vec::new();
        let messages = decode_all(records, &mut unreadable);
        Ok((messages, unreadable))
    }
}

/// A session row as stored, or why it cannot be read.
fn row_of(text: Option<&str>) -> Result<SessionRow, String> {
    decode("the session's header record", text)
}

/// The log a message index key names (the inverse of [`log_key`]).
fn log_of_key(key: &str) -> Option<LogRef> {
    match key {
        "ambient" => Some(LogRef::Ambient),
        _ => key
            .strip_prefix("effort:")
            .map(|id| LogRef::Effort(id.to_string())),
    }
}

impl RecordStore for PostgresStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    async fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        self.list(&self.sql.rows, &[]).await
    }

    async fn write(&self, id: &str, batch: &WriteBatch, mode: WriteMode) -> WriteResult {
        self.write_batch(id, batch, mode).await
    }

    async fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        self.load_session(id).await
    }

    async fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let key = log_key(&LogRef::Effort(effort.to_string()));
        let (stored, unreadable) = self
            .stored_messages(
                &self.sql.effort_log,
                &[&id, &key],
                &format!("the log of effort '{effort}' could not be read"),
            )
            .await?;
        Ok((stored.into_iter().map(|m| m.message).collect(), unreadable))
    }

    async fn messages_between(&self, id: &str, from: u64, to: u64) -> StoreResult<MessagesRead> {
        if to <= from {
            return Ok((Vec::new(), Vec::new()));
        }
        self.stored_messages(
            &self.sql.messages_between,
            &[&id, &big(from), &big(to)],
            "stored messages could not be read",
        )
        .await
    }

    async fn messages_by_seq(&self, id: &str, seqs: &[u64]) -> Result<MessagesRead, StoreError> {
        if seqs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let numbers: Vec<i64> = seqs.iter().map(|&s| big(s)).collect();
        let (messages, mut unreadable) = self
            .stored_messages(
                &self.sql.messages_by_seq,
                &[&id, &numbers],
                "stored messages could not be read",
            )
            .await?;
        // Numbers with no record at all are named too, as the other backends do; unreadable
        // ones were named by the decoding.
        let mut found: Vec<u64> = messages.iter().map(|m| m.message.seq).collect();
        found.sort_unstable();
        for &seq in seqs {
            let described = unreadable
                .iter()
                .any(|u| u.starts_with(&format!("message {seq} ")));
            if found.binary_search(&seq).is_err() && !described {
                unreadable.push(format!("message {seq} is missing from storage"));
            }
        }
        Ok((messages, unreadable))
    }

    async fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("session '{id}' could not be read for export");
        let fail = |e: tokio_postgres::Error| self.failure(&lost, &context, &e);
        let tx = self.snapshot(&mut client, &context).await?;
        let row = self
            .stored_row(&tx, &self.sql.row, id)
            .await
            .map_err(fail)?
            .ok_or_else(|| StoreError::not_found(id))?;
        let mut read = StoredRecords::of(row);
        let sql = &self.sql;
        let effort = |p| format!("effort record {p}");
        read.efforts = self
            .decoded(&tx, &sql.efforts, &[&id], effort, &mut read.unreadable)
            .await
            .map_err(fail)?;
        let message = |seq| format!("message {seq}");
        read.messages = self
            .decoded(
                &tx,
                &sql.all_messages,
                &[&id],
                message,
                &mut read.unreadable,
            )
            .await
            .map_err(fail)?;
        let point = |turn| format!("the metrics point of turn {turn}");
        read.metrics = self
            .decoded(&tx, &sql.all_metrics, &[&id], point, &mut read.unreadable)
            .await
            .map_err(fail)?;
        read.attachments = self
            .attachments(&tx, id, &mut read.unreadable)
            .await
            .map_err(fail)?;
        Ok(read)
    }

    async fn telemetry(&self, id: &str, turn: u64) -> Result<Option<TurnTelemetry>, StoreError> {
        let client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("the telemetry of turn {turn} could not be read");
        let fail = |e: tokio_postgres::Error| self.failure(&lost, &context, &e);
        let statement = client
            .prepare_cached(&self.sql.telemetry)
            .await
            .map_err(fail)?;
        let found = client
            .query_opt(&statement, &[&id, &big(turn)])
            .await
            .map_err(fail)?;
        match found {
            None => Ok(None),
            Some(r) => decode(&format!("the telemetry of turn {turn}"), r.get(0))
                .map(Some)
                .map_err(StoreError::Storage),
        }
    }

    async fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("session '{id}' could not be renamed");
        let fail = |e: tokio_postgres::Error| self.failure(&lost, &context, &e);
        let tx = client.transaction().await.map_err(fail)?;
        let stored = self
            .stored_row(&tx, &self.sql.row_for_update, id)
            .await
            .map_err(fail)?;
        let mut row = existing_row(id, stored)?;
        row.name = name.to_string();
        row.updated_ms = now_ms;
        let text = encode(&row);
        let statement = tx
            .prepare_cached(&self.sql.rename_row)
            .await
            .map_err(fail)?;
        tx.execute(&statement, &[&id, &text, &now_ms])
            .await
            .map_err(fail)?;
        self.sent(text.len());
        tx.commit().await.map_err(fail)
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let lost = client.lost.clone();
        let context = format!("session '{id}' could not be deleted");
        let fail = |e: tokio_postgres::Error| self.failure(&lost, &context, &e);
        let tx = client.transaction().await.map_err(fail)?;
        for sql in &self.sql.delete {
            let statement = tx.prepare_cached(sql).await.map_err(fail)?;
            tx.execute(&statement, &[&id]).await.map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_checked() {
        assert!(valid_schema("ccm"));
        assert!(valid_schema("_t_12"));
        assert!(!valid_schema("1abc"));
        assert!(!valid_schema("a\"b"));
        assert!(!valid_schema(""));
        assert!(!valid_schema(&"a".repeat(64)));
    }

    #[test]
    fn log_keys_read_back() {
        for log in [LogRef::Ambient, LogRef::Effort("e-1".into())] {
            assert_eq!(log_of_key(&log_key(&log)), Some(log));
        }
        assert_eq!(log_of_key("other"), None);
    }

    #[test]
    fn servers_are_named_without_passwords() {
        let config: tokio_postgres::Config =
            "postgres://ccm:secret@db.example:6543/x".parse().unwrap();
        assert_eq!(server_of(&config), "db.example:6543");
    }
}
