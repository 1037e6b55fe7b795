//! The CCM sync server: one conversation on every device.
//!
//! The app keeps each session in the browser's IndexedDB; with sync on, it also keeps it here,
//! so that a laptop and a phone continue the same conversation. The server is the storage
//! contract of `ccm-store` served over HTTP ([`ccm_store::remote`] is the wire format) on the
//! PostgreSQL backend, for authenticated accounts:
//!
//! - [`auth`]: accounts and bearer tokens (created, rotated and revoked with `ccm-server token`,
//!   stored only as hashes);
//! - [`scope`]: one account's view of the shared store, the only way a request reaches it;
//! - [`api`]: the routes, health and readiness, CORS for configured origins, the body limit and
//!   the per-account rate limit, and one structured log line per request;
//! - [`client`]: a native client (a [`ccm_store::remote::Transport`] over a blocking HTTP
//!   client), for tests, the benchmark and Rust hosts.
//!
//! Architecture invariant: the server keeps no session state between requests. Every rule of a
//! write (above all the revision check) is the store's, applied in one PostgreSQL transaction,
//! so any number of server processes on any number of machines can serve one database. The
//! rate limiter is the one thing in memory, per process (see [`api::Limits`]).
//!
//! Architecture invariant: a request reaches only its own account's sessions. Keys are built
//! from the authenticated account ([`scope::AccountStore`]); there is no route that takes an
//! account id.

pub mod api;
pub mod auth;
pub mod client;
pub mod error;
pub mod scope;

pub use api::Limits;
pub use error::ApiError;

use auth::Accounts;
use ccm_store::postgres::{PostgresOptions, PostgresStore};
use std::net::SocketAddr;
use std::sync::Arc;

/// Where the server keeps its data.
#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    /// The PostgreSQL URL (its password never appears in messages or logs).
    pub url: String,
    /// The schema of the tables (`ccm` by default).
    pub schema: String,
    /// Connections per server process.
    pub pool_size: usize,
}

impl Database {
    /// The database at `url`, schema `ccm`, 16 connections.
    pub fn at(url: &str) -> Database {
        Database {
            url: url.to_string(),
            schema: "ccm".to_string(),
            pool_size: 16,
        }
    }

    /// Connects, creating or migrating the store's and the server's tables.
    ///
    /// # Errors
    /// The database cannot be reached, or a migration failed.
    pub async fn open(&self) -> Result<(PostgresStore, Accounts), ApiError> {
        let store = PostgresStore::connect(
            &self.url,
            PostgresOptions {
                schema: self.schema.clone(),
                pool_size: self.pool_size,
                application_name: "ccm-server".to_string(),
                ..PostgresOptions::default()
            },
        )
        .await?;
        let accounts = Accounts::open(store.pool().clone(), &self.schema).await?;
        Ok((store, accounts))
    }
}

/// A server bound to its address, ready to run.
pub struct Bound {
    listener: tokio::net::TcpListener,
    state: Arc<api::AppState>,
}

impl Bound {
    /// The address it listens on (the port chosen when 0 was asked for).
    ///
    /// # Errors
    /// The operating system's.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes; requests in flight are finished first.
    ///
    /// # Errors
    /// The listener's failure.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let state = self.state.clone();
        let sweeper = tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                every.tick().await;
                state.forget_idle_accounts();
            }
        });
        let result = axum::serve(self.listener, api::router(self.state))
            .with_graceful_shutdown(shutdown)
            .await;
        sweeper.abort();
        result
    }
}

/// Connects to the database and binds `listen`.
///
/// # Errors
/// The database cannot be reached or migrated, the limits are not usable, or the address
/// cannot be bound.
pub async fn bind(database: &Database, listen: &str, limits: Limits) -> Result<Bound, ApiError> {
    let (store, accounts) = database.open().await?;
    let state = Arc::new(api::AppState::new(store, accounts, limits)?);
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        ApiError::unavailable(format!("the address {listen} cannot be listened on: {e}"))
    })?;
    Ok(Bound { listener, state })
}
