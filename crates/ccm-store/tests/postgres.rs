#![cfg(feature = "postgres")]
//! The PostgreSQL backend against a real server: the conformance suite, processes killed in
//! the middle of saves, two processes racing on one session, and what is PostgreSQL's own
//! (concurrent migrations, an unreachable server, a connection lost during a save).
//!
//! The server comes from `CCM_TEST_POSTGRES_URL`; without it every test here fails and says
//! how to start a throwaway cluster:
//!
//! ```sh
//! export CCM_TEST_POSTGRES_URL="$(scripts/postgres-cluster start /tmp/ccm-pg)"
//! cargo test -p ccm-store --features postgres --test postgres
//! scripts/postgres-cluster stop /tmp/ccm-pg
//! ```
//!
//! Every test works in schemas of its own, named after the process and a counter, so runs
//! (and the processes of one run) never see each other's sessions.
//!
//! The process tests run this test binary again as their child processes
//! (`current_exe() --exact <child test> --nocapture`), with `CCM_PG_TEST_CHILD` saying what
//! the child does. The child tests (`child_*`) do nothing and pass when that variable is not
//! set, which is how they show up in a normal run.

use ccm_store::conformance::{self, Fault, Harness, Injected, Options, SuiteError};
use ccm_store::postgres::{PostgresOptions, PostgresStore, SCHEMA_VERSION};
use ccm_store::{sessions, RecordStore, StoreError};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const URL_VAR: &str = "CCM_TEST_POSTGRES_URL";
/// Set in child processes: `kill` or `race:<label>`.
const CHILD_VAR: &str = "CCM_PG_TEST_CHILD";
/// The schema a child process works in.
const SCHEMA_VAR: &str = "CCM_PG_TEST_SCHEMA";
/// The application name of a child's connections, by which the parent finds them on the
/// server.
const APPLICATION_VAR: &str = "CCM_PG_TEST_APPLICATION";

/// The server's URL, or a failure that says how to get one: these tests never pass
/// without having run.
fn url() -> String {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{URL_VAR} is not set, so the PostgreSQL backend cannot be tested. Start a throwaway \
             cluster and point the tests at it:\n\n  export {URL_VAR}=\"$(scripts/postgres-cluster start /tmp/ccm-pg)\"\n  \
             cargo test -p ccm-store --features postgres --test postgres\n  scripts/postgres-cluster stop /tmp/ccm-pg\n"
        ),
    }
}

/// A schema name no other test or process uses.
fn unique_schema(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t_{tag}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn connect(url: &str, schema: &str) -> PostgresStore {
    connect_with(
        url,
        PostgresOptions {
            schema: schema.to_string(),
            ..PostgresOptions::default()
        },
    )
    .await
}

async fn connect_with(url: &str, options: PostgresOptions) -> PostgresStore {
    let schema = options.schema.clone();
    PostgresStore::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("connecting with schema {schema}: {e} ({})", e.code()))
}

/// A plain connection for what the tests do behind the store's back (damage, locks, checks).
async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("a plain connection to {URL_VAR}: {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

async fn drop_schemas(client: &tokio_postgres::Client, schemas: &[String]) {
    for schema in schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .unwrap_or_else(|e| panic!("dropping schema {schema}: {e}"));
    }
}

// ----- the conformance suite -----

struct PgHarness {
    url: String,
    raw: tokio_postgres::Client,
    schemas: Vec<String>,
}

impl PgHarness {
    /// Runs one statement on the store's schema (`{s}` in `sql`) and returns the rows it
    /// changed.
    async fn change(
        &self,
        store: &PostgresStore,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> u64 {
        let sql = sql.replace("{s}", &format!("\"{}\"", store.schema()));
        self.raw
            .execute(&sql, params)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Harness for PgHarness {
    type Store = PostgresStore;

    async fn fresh(&mut self) -> PostgresStore {
        let schema = unique_schema("conf");
        self.schemas.push(schema.clone());
        connect(&self.url, &schema).await
    }

    async fn second_handle(&mut self, store: &PostgresStore) -> PostgresStore {
        // Its own pool: no connection, cache or lock is shared with `store`.
        connect(&self.url, store.schema()).await
    }

    async fn damage_message(&mut self, store: &PostgresStore, id: &str, seq: u64) {
        let changed = self
            .change(
                store,
                "UPDATE {s}.messages SET record = '{\"log\": ambient, garbled' WHERE session = $1 AND seq = $2",
                &[&id, &(seq as i64)],
            )
            .await;
        assert_eq!(changed, 1, "message {seq} of {id} to damage");
    }

    async fn remove_message(&mut self, store: &PostgresStore, id: &str, seq: u64) {
        let changed = self
            .change(
                store,
                "DELETE FROM {s}.messages WHERE session = $1 AND seq = $2",
                &[&id, &(seq as i64)],
            )
            .await;
        assert_eq!(changed, 1, "message {seq} of {id} to remove");
    }

    async fn damage_row(&mut self, store: &PostgresStore, id: &str) {
        let changed = self
            .change(
                store,
                "UPDATE {s}.sessions SET row = 'not a session row' WHERE id = $1",
                &[&id],
            )
            .await;
        assert_eq!(changed, 1, "the row of {id} to damage");
    }

    async fn inject(&mut self, _: &PostgresStore, _: &str, fault: Fault) -> Injected {
        Injected::transactional(fault)
    }

    fn leftovers(&self, _: &PostgresStore) -> Result<Vec<String>, &'static str> {
        Err("PostgreSQL keeps a write's work in its transaction, not in files of ours")
    }

    fn clock_ms(&self) -> f64 {
        conformance::system_clock_ms()
    }

    fn bytes_written(&self, store: &PostgresStore) -> Option<u64> {
        Some(store.bytes_written())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance() {
    let url = url();
    let mut harness = PgHarness {
        raw: raw(&url).await,
        url,
        schemas: Vec::new(),
    };
    let report = conformance::run(&mut harness, Options::default()).await;
    println!("{}", report.table());
    drop_schemas(&harness.raw, &harness.schemas).await;
    report.assert_passed();
}

// ----- processes -----

/// Starts this test binary again, running only `test`, as child `mode` in `schema`.
fn spawn_child(test: &str, mode: &str, url: &str, schema: &str, application: &str) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(CHILD_VAR, mode)
        .env(SCHEMA_VAR, schema)
        .env(APPLICATION_VAR, application)
        .env(URL_VAR, url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting a child test process")
}

/// The child's stdout, line by line, through a channel (closed at the child's end), and its
/// stderr, collected by a thread.
fn child_output(child: &mut Child) -> (mpsc::Receiver<String>, std::thread::JoinHandle<String>) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let (lines, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    (receiver, errors)
}

fn saved_revision(line: &str) -> Option<u64> {
    line.strip_prefix("saved ")?.trim().parse().ok()
}

/// A child's store, on the schema and under the application name its parent chose.
async fn connect_child() -> PostgresStore {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("the parent sets {name}"));
    connect_with(
        &url(),
        PostgresOptions {
            schema: var(SCHEMA_VAR),
            application_name: var(APPLICATION_VAR),
            ..PostgresOptions::default()
        },
    )
    .await
}

/// Waits until the server has no session left of the connections named `application`.
///
/// A killed process's server session outlives it briefly: a `COMMIT` it sent just before the
/// kill is still carried out, after which the server notices the closed socket and ends the
/// session. Until then the stored revision may still move by one, so the check after a kill
/// waits for it (another process would see the same, and a save of its own built on the
/// revision before would be refused as a conflict, which is the point of the revision check).
async fn wait_for_sessions_to_end(client: &tokio_postgres::Client, application: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let open: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&application],
            )
            .await
            .expect("reading pg_stat_activity")
            .get(0);
        if open == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server still has {open} sessions of the killed process {application}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The child's side of the kill test: saves until killed. Does nothing without the child
/// variable (a normal run lists it as a passing test).
#[tokio::test(flavor = "multi_thread")]
async fn child_save_until_killed() {
    if std::env::var(CHILD_VAR).as_deref() != Ok("kill") {
        return;
    }
    let store = connect_child().await;
    if let Err(problem) = conformance::save_until_killed(&store, "killed").await {
        panic!("the child stopped saving: {problem}");
    }
}

/// A process killed at varying moments of its saves leaves a session that opens cleanly at
/// the last revision it reported (or the one after), 15 times over.
#[tokio::test(flavor = "multi_thread")]
async fn killed_saves_leave_a_readable_session() {
    let url = url();
    let schema = unique_schema("kill");
    let store = connect(&url, &schema).await;
    // Delays after the child's first completed save, in ms: from at once to many saves in.
    let delays = [0u64, 3, 7, 1, 12, 20, 2, 35, 5, 50, 9, 80, 15, 27, 4];
    let watcher = raw(&url).await;
    let mut revisions = Vec::new();
    for (round, &delay) in delays.iter().enumerate() {
        let application = format!("ccm-kill-{}-{round}", std::process::id());
        let (child_url, child_schema, child_application) =
            (url.clone(), schema.clone(), application.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let mut child = spawn_child(
                "child_save_until_killed",
                "kill",
                &child_url,
                &child_schema,
                &child_application,
            );
            let (lines, errors) = child_output(&mut child);
            let mut last = None;
            let deadline = Instant::now() + Duration::from_secs(60);
            // Wait for the first completed save, so every round kills a process that is
            // saving, not one still connecting.
            while last.is_none() {
                let left = deadline.saturating_duration_since(Instant::now());
                match lines.recv_timeout(left) {
                    Ok(line) => last = saved_revision(&line).or(last),
                    Err(_) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        let errors = errors.join().unwrap_or_default();
                        return Err(format!(
                            "round {round}: the child reported no save:\n{errors}"
                        ));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(delay));
            child.kill().expect("SIGKILL to the child");
            let status = child.wait().expect("the killed child's status");
            // What the child printed before it died is still in the pipe.
            for line in lines.iter() {
                last = saved_revision(&line).or(last);
            }
            let _ = errors.join();
            Ok((last.expect("a save was reported"), status))
        })
        .await
        .expect("the round's thread");
        let (last, status) = outcome.unwrap_or_else(|problem| panic!("{problem}"));
        assert!(
            !status.success(),
            "round {round}: the child was not killed ({status})"
        );
        wait_for_sessions_to_end(&watcher, &application).await;
        let revision = conformance::check_after_kill(&store, "killed", last)
            .await
            .unwrap_or_else(|problem| panic!("round {round} (killed {delay} ms in): {problem}"));
        println!("round {round:>2}: killed {delay:>2} ms after the first save; last reported revision {last}, stored {revision}");
        revisions.push(revision);
    }
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "every round saved something: {revisions:?}"
    );
    drop_schemas(&watcher, &[schema]).await;
}

const RACE_TURNS: u64 = 40;

/// One racing process. Does nothing without the child variable.
#[tokio::test(flavor = "multi_thread")]
async fn child_race_turns() {
    let Ok(mode) = std::env::var(CHILD_VAR) else {
        return;
    };
    let Some(label) = mode.strip_prefix("race:") else {
        return;
    };
    let store = connect_child().await;
    let (accepted, refused) = conformance::race_turns(&store, "raced", label, RACE_TURNS)
        .await
        .unwrap_or_else(|problem| panic!("racer {label}: {problem}"));
    println!("racer {label}: {accepted} saves accepted, {refused} refused");
}

/// Two processes taking turns on one session at once: every accepted turn is stored exactly
/// once.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_racing_on_one_session() {
    let url = url();
    let schema = unique_schema("race");
    let store = connect(&url, &schema).await;
    let labels = ["a", "b"];
    let outputs = {
        let (url, schema) = (url.clone(), schema.clone());
        tokio::task::spawn_blocking(move || {
            let children: Vec<Child> = labels
                .iter()
                .map(|label| {
                    let application = format!("ccm-race-{}-{label}", std::process::id());
                    let mode = format!("race:{label}");
                    spawn_child("child_race_turns", &mode, &url, &schema, &application)
                })
                .collect();
            children
                .into_iter()
                .map(|child| {
                    let output = child.wait_with_output().expect("a racer's output");
                    (
                        output.status,
                        String::from_utf8_lossy(&output.stdout).into_owned(),
                        String::from_utf8_lossy(&output.stderr).into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .expect("the racers' thread")
    };
    for (status, stdout, stderr) in &outputs {
        assert!(
            status.success(),
            "a racer failed ({status}):\n{stdout}\n{stderr}"
        );
        // libtest prints the test's name on the same line, before the child's own output.
        for line in stdout
            .lines()
            .filter_map(|l| l.find("racer ").map(|at| &l[at..]))
        {
            println!("{line}");
        }
    }
    conformance::check_after_race(&store, "raced", &labels, RACE_TURNS)
        .await
        .unwrap_or_else(|problem| panic!("after the race: {problem}"));
    drop_schemas(&raw(&url).await, &[schema]).await;
}

// ----- PostgreSQL's own -----

/// Several stores connecting to a new schema at once apply the migration once, and all work.
#[tokio::test(flavor = "multi_thread")]
async fn migrations_apply_once_when_stores_connect_at_once() {
    let url = url();
    let schema = unique_schema("migrate");
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let (url, schema) = (url.clone(), schema.clone());
            tokio::spawn(async move { connect(&url, &schema).await })
        })
        .collect();
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.expect("a connecting task"));
    }
    for store in &stores {
        assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    }
    let client = raw(&url).await;
    let applied: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".schema_version"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        applied,
        i64::from(SCHEMA_VERSION),
        "each migration recorded once"
    );
    // Connecting again finds nothing to do; every handle sees the others' sessions.
    let again = connect(&url, &schema).await;
    conformance::create_empty(&stores[0], "shared")
        .await
        .unwrap();
    let (rows, damaged) = again.rows().await.unwrap();
    assert!(damaged.is_empty());
    assert_eq!(
        rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["shared"]
    );
    drop_schemas(&client, &[schema]).await;
}

/// A server nobody listens on is `unavailable` at once, with host and port and without the
/// password; a host that does not answer is `unavailable` after the connect timeout.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_server_is_unavailable_quickly() {
    // The URL of a real cluster is required here too: these tests run against one or fail.
    let _ = url();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let refused = PostgresStore::connect(
        &format!("postgres://ccm:secret-word@127.0.0.1:{port}/ccm_test"),
        PostgresOptions::default(),
    )
    .await
    .expect_err("nothing listens on that port");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(refused.code(), "unavailable", "{refused}");
    let message = refused.to_string();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(
        !message.contains("secret-word"),
        "the password leaked: {message}"
    );
    println!("refused: {message}");

    // A TEST-NET-1 address (RFC 5737): never routed, so the connection waits for the timeout
    // (or fails at once where the network says it is unreachable).
    let started = Instant::now();
    let silent = PostgresStore::connect(
        "postgres://ccm@192.0.2.1:5432/ccm_test",
        PostgresOptions {
            connect_timeout: Duration::from_millis(500),
            ..PostgresOptions::default()
        },
    )
    .await
    .expect_err("nothing answers at 192.0.2.1");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(silent.code(), "unavailable", "{silent}");
    assert!(silent.to_string().contains("192.0.2.1:5432"), "{silent}");
    println!("silent: {silent}");
}

/// A connection lost while a save waits inside its transaction writes nothing, says so, and
/// the next save (on a new connection) goes through.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_lost_during_a_save_writes_nothing() {
    let url = url();
    let schema = unique_schema("lost");
    let application = format!("ccm-lost-{}", std::process::id());
    let store = connect_with(
        &url,
        PostgresOptions {
            schema: schema.clone(),
            pool_size: 2,
            application_name: application.clone(),
            ..PostgresOptions::default()
        },
    )
    .await;
    let mut session = conformance::new_session();
    conformance::scripted_turn(&mut session, 0);
    sessions::insert::<_, SuiteError>(&store, "lost", &mut session, "lost", 0.0, true)
        .await
        .unwrap();
    conformance::scripted_turn(&mut session, 1);

    // Another connection holds the session's row, so the save stops inside its transaction
    // (at `SELECT … FOR UPDATE`); its backend is then terminated.
    let locker = raw(&url).await;
    locker
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM \"{schema}\".sessions WHERE id = 'lost' FOR UPDATE"
        ))
        .await
        .unwrap();
    let watcher = raw(&url).await;
    let kill = async {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let terminated = watcher
                .query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE application_name = $1 AND wait_event_type = 'Lock'",
                    &[&application],
                )
                .await
                .unwrap();
            if !terminated.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the save never waited for the lock"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        locker.batch_execute("COMMIT").await.unwrap();
    };
    let (saved, ()) = tokio::join!(
        sessions::save::<_, SuiteError>(&store, "lost", &mut session, 1.0),
        kill
    );
    let error = match saved {
        Err(SuiteError::Store(error)) => error,
        Err(other) => panic!("the save failed with {other}, not a store error"),
        Ok(_) => panic!("a save whose connection was terminated succeeded"),
    };
    assert!(matches!(error, StoreError::Storage(_)), "{error:?}");
    assert!(error.to_string().contains("nothing was written"), "{error}");
    // What a server tells its clients to retry.
    assert!(ccm_store::postgres::connection_was_lost(&error), "{error}");
    assert!(!ccm_store::postgres::connection_was_lost(
        &StoreError::storage("the session's row could not be read")
    ));
    println!("lost: {error}");

    let (rows, _) = store.rows().await.unwrap();
    assert_eq!(
        rows[0].header.revision, 1,
        "the lost save changed the stored revision"
    );
    // The turn is still pending; the pool replaced the broken connection.
    let report = sessions::save::<_, SuiteError>(&store, "lost", &mut session, 2.0)
        .await
        .unwrap_or_else(|e| panic!("saving again: {e}"));
    assert_eq!(report.revision, 2);
    let (_, _, problems) =
        sessions::open::<_, SuiteError>(&store, "lost", conformance::counter_for)
            .await
            .unwrap_or_else(|e| panic!("opening: {e}"));
    assert!(problems.is_empty(), "{problems:?}");
    drop_schemas(&watcher, &[schema]).await;
}

// ----- TLS -----

/// Turns TLS on in the test cluster with a server certificate for 127.0.0.1 signed by a fresh
/// authority, and returns that authority's PEM file. Plain connections keep working (the
/// other tests use them), and the setting stays for the cluster's short life.
async fn enable_tls(client: &tokio_postgres::Client) -> std::path::PathBuf {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let data: String = client
        .query_one("SHOW data_directory", &[])
        .await
        .expect("the data directory")
        .get(0);
    let data = std::path::PathBuf::from(data);
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let (cert_file, key_file) = (
        data.join("ccm-test-server.crt"),
        data.join("ccm-test-server.key"),
    );
    std::fs::write(&cert_file, server.pem()).unwrap();
    std::fs::write(&key_file, server_key.serialize_pem()).unwrap();
    // PostgreSQL reads the key only when its owner (the cluster's) alone can read it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    for file in [&cert_file, &key_file] {
        let status = Command::new("chown")
            .arg("postgres:postgres")
            .arg(file)
            .status()
            .expect("chown");
        assert!(
            status.success(),
            "the TLS test gives the cluster's owner its key (needs root)"
        );
    }
    let authority = std::env::temp_dir().join(format!("ccm-test-ca-{}.pem", std::process::id()));
    std::fs::write(&authority, ca.pem()).unwrap();
    // One statement each: ALTER SYSTEM refuses to run in the implicit transaction of a batch.
    for statement in [
        format!("ALTER SYSTEM SET ssl_cert_file = '{}'", cert_file.display()),
        format!("ALTER SYSTEM SET ssl_key_file = '{}'", key_file.display()),
        "ALTER SYSTEM SET ssl = on".to_string(),
        "SELECT pg_reload_conf()".to_string(),
    ] {
        client
            .batch_execute(&statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    // The reload is a signal: wait until new connections see it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let fresh = raw(&url()).await;
        let on: String = fresh.query_one("SHOW ssl", &[]).await.unwrap().get(0);
        if on == "on" {
            break;
        }
        assert!(Instant::now() < deadline, "TLS did not come on: {on}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    authority
}

/// Whether the store's connections are encrypted, as the server sees them.
async fn encrypted(store: &PostgresStore) -> bool {
    let client = store.pool().get().await.expect("a connection");
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .expect("pg_stat_ssl")
        .get(0)
}

fn with_params(url: &str, params: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{params}")
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_is_used_when_asked_and_the_servers_certificate_is_verified() {
    let url = url();
    let admin = raw(&url).await;
    let authority = enable_tls(&admin).await;
    let schema = unique_schema("tls");
    let options = |schema: &str| PostgresOptions {
        schema: schema.to_string(),
        ..PostgresOptions::default()
    };

    // sslmode=require with the authority: encrypted, and the store works.
    let required = with_params(
        &url,
        &format!("sslmode=require&sslrootcert={}", authority.display()),
    );
    let store = PostgresStore::connect(&required, options(&schema))
        .await
        .unwrap_or_else(|e| panic!("TLS with the right authority: {e}"));
    assert!(
        encrypted(&store).await,
        "sslmode=require connected in the clear"
    );
    conformance::create_empty(&store, "over-tls").await.unwrap();
    let (rows, _) = store.rows().await.unwrap();
    assert_eq!(rows.len(), 1);
    // libpq's verify-full reads as require, which verifies as much.
    let full = with_params(
        &url,
        &format!("sslmode=verify-full&sslrootcert={}", authority.display()),
    );
    let store = connect_with(&full, options(&schema)).await;
    assert!(encrypted(&store).await);

    // Without the authority, the certificate is refused, and the message says what to do.
    let unknown = PostgresStore::connect(&with_params(&url, "sslmode=require"), options(&schema))
        .await
        .expect_err("a certificate of an unknown authority was accepted");
    assert_eq!(unknown.code(), "unavailable");
    assert!(unknown.to_string().contains("sslrootcert"), "{unknown}");
    // A root file that is not there is named.
    let missing = PostgresStore::connect(
        &with_params(&url, "sslmode=require&sslrootcert=/nonexistent/ca.pem"),
        options(&schema),
    )
    .await
    .expect_err("a missing root file was accepted");
    assert!(
        missing.to_string().contains("/nonexistent/ca.pem"),
        "{missing}"
    );
    // Without sslmode the connection stays plain, as on the same machine.
    let plain = connect(&url, &schema).await;
    assert!(!encrypted(&plain).await);
    drop_schemas(&admin, &[schema]).await;
    std::fs::remove_file(authority).ok();
}
