//! What the server's tests share: a real PostgreSQL (from `CCM_TEST_POSTGRES_URL`, as the
//! store's tests), a real server on a free port in a thread of its own, tokens, and raw HTTP.
#![allow(dead_code, reason = "each test binary uses a part of this module")]

use ccm_server::auth::{Accounts, CreatedToken};
use ccm_server::client::HttpTransport;
use ccm_server::{Database, Limits};
use ccm_store::remote::RemoteStore;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const URL_VAR: &str = "CCM_TEST_POSTGRES_URL";

/// The server's URL, or a failure that says how to get one: these tests never pass without
/// having run.
pub fn url() -> String {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{URL_VAR} is not set, so the sync server cannot be tested. Start a throwaway \
             cluster and point the tests at it:\n\n  export {URL_VAR}=\"$(scripts/postgres-cluster start /tmp/ccm-pg)\"\n  \
             cargo test -p ccm-server\n  scripts/postgres-cluster stop /tmp/ccm-pg\n"
        ),
    }
}

/// A schema name no other test or process uses.
pub fn unique_schema(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "s_{tag}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs a future to completion on a runtime of the calling thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// A real server on 127.0.0.1 with a schema of its own, stopped and its schema dropped when
/// dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The database it serves.
    pub database: Database,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server with `limits` over a fresh schema.
    pub fn start(tag: &str, limits: Limits) -> TestServer {
        let mut database = Database::at(&url());
        database.schema = unique_schema(tag);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = database.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the server's runtime");
            runtime.block_on(async move {
                let bound = match ccm_server::bind(&served, "127.0.0.1:0", limits).await {
                    Ok(bound) => bound,
                    Err(e) => {
                        addr_tx.send(Err(e.to_string())).ok();
                        return;
                    }
                };
                addr_tx
                    .send(Ok(bound.local_addr().expect("a bound address")))
                    .ok();
                bound
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
                    .expect("the server runs");
            });
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server reports its address")
            .unwrap_or_else(|e| panic!("the server did not start: {e}"));
        TestServer {
            base: format!("http://{addr}"),
            database,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// The accounts of its database.
    pub async fn accounts(&self) -> Accounts {
        self.database
            .open()
            .await
            .unwrap_or_else(|e| panic!("opening the accounts: {e}"))
            .1
    }

    /// A new token for account `name` (created when new).
    pub fn token(&self, name: &str) -> CreatedToken {
        block_on(async {
            self.accounts()
                .await
                .create_token(name, "test")
                .await
                .unwrap_or_else(|e| panic!("creating a token: {e}"))
        })
    }

    /// A store acting with `token`.
    pub fn store(&self, token: &str) -> RemoteStore<HttpTransport> {
        RemoteStore::new(HttpTransport::new(
            &self.base,
            token,
            Duration::from_secs(30),
        ))
    }

    /// A plain connection to its database, for what tests do behind the server's back.
    pub async fn raw(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.database.url, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("a plain connection: {e}"));
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Runs `sql` with `{s}` standing for its schema; returns the rows changed.
    pub fn execute(&self, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> u64 {
        block_on(self.execute_async(sql, params))
    }

    /// [`execute`](Self::execute) for async callers.
    pub async fn execute_async(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> u64 {
        let sql = sql.replace("{s}", &format!("\"{}\"", self.database.schema));
        self.raw()
            .await
            .execute(&sql, params)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(thread) = self.thread.take() {
            thread.join().ok();
        }
        let schema = self.database.schema.clone();
        let url = self.database.url.clone();
        block_on(async move {
            if let Ok((client, connection)) =
                tokio_postgres::connect(&url, tokio_postgres::NoTls).await
            {
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await
                    .ok();
            }
        });
    }
}

/// A plain HTTP answer: status, headers of interest and body.
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The error code of an error answer.
    pub fn code(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("(no code in {:?})", self.body))
    }
}

/// Sends one raw request: `headers` as given, `body` if any.
pub fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> Answer {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent();
    let request = ureq::http::Request::builder().method(method).uri(url);
    let request = headers
        .iter()
        .fold(request, |r, (name, value)| r.header(*name, *value));
    let result = match body {
        Some(body) => agent.run(request.body(body.to_string()).expect("a request")),
        None => agent.run(request.body(()).expect("a request")),
    };
    let mut response = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Answer {
        status: response.status().as_u16(),
        body: response.body_mut().read_to_string().unwrap_or_default(),
        headers,
    }
}
