//! The sync server's load and fault benchmark (`scripts/bench-sync`; not a pass/fail test):
//! simulated devices taking turns against two `ccm-server` processes and one PostgreSQL,
//! while a server process is killed, the database restarts and a device goes offline.
//!
//! - **Devices.** Every account has two devices (A and B), each a thread of its own with its
//!   own [`RemoteStore`] over the blocking HTTP transport; device A talks to one server and
//!   device B to the other, and each fails over to the other server when its own gives no
//!   answer (and goes back after a few seconds). Every account has two sessions; each device
//!   writes its own one, and on `--cross` of its turns (10% by default) the other device's
//!   one, so that both devices of an account write the same session and conflicts happen.
//! - **Turns.** A device keeps both sessions open in memory, takes a scripted turn (efforts
//!   opened and concluded, an attachment now and then; every message carries the device's
//!   tag and turn number) and saves it with `sessions::save`, paced like people typing so that
//!   all devices together offer `--rate` turns per second (600 by default). A refused save
//!   (`conflict`) is resolved the way the app does: the server's version is opened and the
//!   refused turn is taken again on top of it. A save that got no answer may have landed, so
//!   the device opens the server's version and looks for its turn there before taking it
//!   again: a turn is never lost and never saved twice.
//! - **Faults** (with `--control`, which the script gives): a server process killed with
//!   SIGKILL while devices save, restarted some seconds later; the database restarted
//!   (`pg_ctl restart`); one device offline for `--offline-turns` turns (50), saving into a
//!   local PostgreSQL store in a schema of its own, then reconnecting and bringing both of its
//!   sessions in sync with `ccm_store::sync::sync_session`. After each fault every session is
//!   read back through the server and checked against what the devices believed they had
//!   saved by then.
//! - **Afterwards** every session is read back through the server and compared message by
//!   message with every turn its devices saw acknowledged: each must be stored exactly once,
//!   in the order its device took them. Each account's token must list only its own sessions
//!   and must not read another account's session.
//!
//! The load phase (`--load-seconds`, no faults) gives the headline: turns per second
//! acknowledged, and the p99 of a save request. It ends with one line:
//! `sync: <N> turns/s, p99 <X> ms, lost <n>, duplicated <n>, cross-account <n>`.

use ccm_core::Session;
use ccm_server::client::HttpTransport;
use ccm_store::conformance::{counter_for, new_session, SuiteError};
use ccm_store::postgres::{PostgresOptions, PostgresStore};
use ccm_store::remote::{RemoteStore, Request, Response, Transport};
use ccm_store::sync::{sync_session, SyncOutcome};
use ccm_store::{sessions, RecordStore, StoreError};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

// ----- arguments -----

struct Args {
    servers: Vec<String>,
    tokens: PathBuf,
    accounts: usize,
    rate: f64,
    load_seconds: f64,
    offline_turns: u64,
    cross: f64,
    /// The program that injects faults (`scripts/bench-sync`) and its work directory.
    control: Option<(String, String)>,
    local_database: Option<String>,
}

const USAGE: &str =
    "usage: sync --servers URL,URL --tokens FILE [--accounts N] [--rate TURNS_PER_S]
            [--load-seconds S] [--offline-turns N] [--cross FRACTION] [--quick]
            [--control PROGRAM --control-dir DIR] [--local-database URL]";

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        servers: Vec::new(),
        tokens: PathBuf::new(),
        accounts: 100,
        rate: 600.0,
        load_seconds: 40.0,
        offline_turns: 50,
        cross: 0.1,
        control: None,
        local_database: None,
    };
    let (mut program, mut dir) = (None, None);
    let mut quick = false;
    let mut accounts = None;
    let mut rate = None;
    let mut load = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = || {
            rest.next()
                .cloned()
                .ok_or(format!("{arg} needs a value\n{USAGE}"))
        };
        let number = |text: String| -> Result<f64, String> {
            text.parse::<f64>()
                .map_err(|_| format!("{arg} needs a number, not '{text}'"))
        };
        match arg.as_str() {
            "--servers" => {
                parsed.servers = value()?.split(',').map(str::to_string).collect();
            }
            "--tokens" => parsed.tokens = value()?.into(),
            "--accounts" => accounts = Some(number(value()?)? as usize),
            "--rate" => rate = Some(number(value()?)?),
            "--load-seconds" => load = Some(number(value()?)?),
            "--offline-turns" => parsed.offline_turns = number(value()?)? as u64,
            "--cross" => parsed.cross = number(value()?)?,
            "--quick" => quick = true,
            "--control" => program = Some(value()?),
            "--control-dir" => dir = Some(value()?),
            "--local-database" => parsed.local_database = Some(value()?),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    // A quick run keeps every kind of fault but a fifth of the devices and a short load
    // phase: for trying the harness, not for the figures.
    if quick {
        parsed.accounts = 20;
        parsed.rate = 120.0;
        parsed.load_seconds = 10.0;
    }
    parsed.accounts = accounts.unwrap_or(parsed.accounts);
    parsed.rate = rate.unwrap_or(parsed.rate);
    parsed.load_seconds = load.unwrap_or(parsed.load_seconds);
    parsed.control = program.zip(dir);
    if parsed.servers.len() != 2 {
        return Err(format!("--servers needs two URLs\n{USAGE}"));
    }
    if parsed.accounts < 2 || parsed.rate <= 0.0 || parsed.load_seconds <= 0.0 {
        return Err("--accounts must be at least 2, --rate and --load-seconds positive".into());
    }
    if !(0.0..=1.0).contains(&parsed.cross) {
        return Err("--cross is a fraction between 0 and 1".into());
    }
    Ok(parsed)
}

/// Each account's name and token, one `NAME TOKEN` a line (the script writes the file, so
/// that tokens stay out of the process list).
fn read_tokens(path: &PathBuf, accounts: usize) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the tokens file {} cannot be read: {e}", path.display()))?;
    let tokens: Vec<(String, String)> = text
        .lines()
        .filter_map(|line| {
            let (name, token) = line.trim().split_once(' ')?;
            Some((name.to_string(), token.trim().to_string()))
        })
        .collect();
    if tokens.len() < accounts {
        return Err(format!(
            "{} holds {} tokens, {accounts} accounts were asked for",
            path.display(),
            tokens.len()
        ));
    }
    Ok(tokens.into_iter().take(accounts).collect())
}

// ----- time -----

/// The moment the load began, shared by every thread so that all times are on one scale.
static START: OnceLock<Instant> = OnceLock::new();

/// Seconds since the load began.
fn since_start() -> f64 {
    START.get().map_or(0.0, |s| s.elapsed().as_secs_f64())
}

/// Milliseconds since the Unix epoch: the sessions' clock.
fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

// ----- the transport with failover -----

/// What a device's transport saw.
#[derive(Default, Clone)]
struct TransportStats {
    /// Requests that got no answer (refused connection, reset, timeout), with their times.
    no_answer: Vec<f64>,
    /// Switches to the other server after a request got no answer.
    failovers: Vec<f64>,
    /// Answers `503 unavailable` (the server up, the database not).
    unavailable: u64,
}

/// Two servers, one of them the device's own: a request that gets no answer switches to the
/// other one. A read is sent again there at once (reading twice changes nothing); a write is
/// not, because it may have landed, which only the device can find out (see
/// [`Device::recover`]). After [`FAIL_BACK`] on the other server the device tries its own again.
struct Failover {
    servers: [HttpTransport; 2],
    home: usize,
    current: Cell<usize>,
    away_since: Cell<Option<Instant>>,
    stats: RefCell<TransportStats>,
}

/// How long a device stays on the other server before trying its own again.
const FAIL_BACK: Duration = Duration::from_secs(3);

impl Failover {
    fn new(servers: &[String], token: &str, home: usize) -> Failover {
        // Ten seconds in all per request: longer than any answer under load, short enough
        // that a request to a process that stopped answering is given up in good time.
        let transport = |base: &str| HttpTransport::new(base, token, Duration::from_secs(10));
        Failover {
            servers: [transport(&servers[0]), transport(&servers[1])],
            home,
            current: Cell::new(home),
            away_since: Cell::new(None),
            stats: RefCell::new(TransportStats::default()),
        }
    }

    fn switch_away_from(&self, server: usize) {
        let other = 1 - server;
        self.current.set(other);
        self.away_since.set((other != self.home).then(Instant::now));
        self.stats.borrow_mut().failovers.push(since_start());
    }
}

impl Transport for Failover {
    async fn send(&self, request: Request) -> Result<Response, StoreError> {
        if let Some(since) = self.away_since.get() {
            if since.elapsed() >= FAIL_BACK {
                self.current.set(self.home);
                self.away_since.set(None);
            }
        }
        let server = self.current.get();
        let is_read = request.method == ccm_store::remote::Method::Get;
        let answer = match self.servers[server].send(request.clone()).await {
            Err(error) => {
                self.stats.borrow_mut().no_answer.push(since_start());
                self.switch_away_from(server);
                if !is_read {
                    return Err(error);
                }
                let again = self.servers[1 - server].send(request).await;
                if again.is_err() {
                    self.stats.borrow_mut().no_answer.push(since_start());
                    self.switch_away_from(1 - server);
                }
                again?
            }
            Ok(answer) => answer,
        };
        if answer.status == 503 {
            self.stats.borrow_mut().unavailable += 1;
        }
        Ok(answer)
    }
}

type Remote = RemoteStore<Failover>;

fn remote(servers: &[String], token: &str, home: usize) -> Remote {
    RemoteStore::new(Failover::new(servers, token, home))
}

// ----- the conversation -----

const TOPICS: [&str; 5] = [
    "cache warmup",
    "login latency",
    "invoice export",
    "birthday party",
    "search ranking",
];

/// The tag every message of a device's turn starts with: `[acct-017/B/42]`.
fn tag(account: &str, side: usize, k: u64) -> String {
    format!("[{account}/{}/{k}]", side_name(side))
}

fn side_name(side: usize) -> &'static str {
    ["A", "B"][side]
}

/// The person's and the assistant's text of turn `k` of a device: what the device expects to
/// find stored, exactly.
fn turn_texts(account: &str, side: usize, k: u64) -> (String, String) {
    let tag = tag(account, side, k);
    let topic = TOPICS[(k / 6 % 5) as usize];
    match k % 6 {
        0 => (
            format!("{tag} Let's look at the {topic}, round {k}."),
            format!("{tag} Opened it."),
        ),
        4 => (
            format!("{tag} That settles it, we keep the second option."),
            format!("{tag} Concluded."),
        ),
        3 => (
            format!("{tag} Here is the log of step {k}."),
            format!("{tag} Step {k} timed out; retry with backoff."),
        ),
        _ => (
            format!("{tag} Message {k} about the {topic}: what next?"),
            format!("{tag} Answer {k}: try the next measurement."),
        ),
    }
}

/// Takes turn `k` of a device on `session`: the scripted conversation of the conformance
/// suite (an effort opened every sixth turn and concluded four turns later, a log attached
/// every twelfth), with texts that name the device and the turn.
fn take_turn(session: &mut Session, account: &str, side: usize, k: u64) {
    let (user, assistant) = turn_texts(account, side, k);
    let now = epoch_ms() as u64;
    let topic = TOPICS[(k / 6 % 5) as usize];
    session.begin_turn(&user, now).expect("between turns");
    match k % 6 {
        0 => {
            let name = format!("{topic} {account} {} {k}", side_name(side));
            session.execute_tool("open_effort", &format!(r#"{{"name": "{name}"}}"#));
        }
        4 => {
            let summary = format!("{topic}: decided on the second option in turn {k}.");
            session.execute_tool("close_effort", &format!(r#"{{"summary": "{summary}"}}"#));
        }
        3 if k % 12 == 3 => {
            let text = format!("line {k}: timeout after 30 s\n").repeat(20);
            session
                .attach(
                    &format!("step-{k}-{account}-{}.log", side_name(side)),
                    ccm_core::compaction::AttachmentKind::File,
                    &text,
                    None,
                )
                .expect("in a turn");
        }
        _ => {}
    }
    session.end_turn(&assistant, now + 1).expect("in a turn");
}

/// The tag of a stored message's text: account, side and turn.
fn parse_tag(content: &str) -> Option<(&str, usize, u64)> {
    let inner = content.strip_prefix('[')?.split(']').next()?;
    let mut parts = inner.split('/');
    let account = parts.next()?;
    let side = match parts.next()? {
        "A" => 0,
        "B" => 1,
        _ => return None,
    };
    let k = parts.next()?.parse().ok()?;
    Some((account, side, k))
}

// ----- devices -----

/// What every thread shares.
struct Shared {
    stop: AtomicBool,
    /// Set by the controller to send device B of the first account offline.
    offline_request: AtomicBool,
    accounts: Vec<AccountShared>,
}

/// What the two devices of an account share: while one is offline, the other keeps off its
/// session, so that reconnecting is a push and not a conflict (a conflict after being offline
/// is the person's choice in the app, which a benchmark cannot make). A device counts itself
/// in `crossing` before it looks at `partner_offline`, and the device going offline sets
/// `partner_offline` before it waits for `crossing` to be zero: with sequentially consistent
/// order one of them sees the other, so no turn on the offline device's session is under way
/// once it copies it.
#[derive(Default)]
struct AccountShared {
    partner_offline: AtomicBool,
    crossing: AtomicU32,
}

/// A turn a device saw acknowledged: the session (0 or 1) and the turn number.
type Ack = (usize, u64);

/// One save request: when it started (s since the start), how long it took (µs), whether it
/// was accepted.
type SaveTime = (f64, u32, bool);

/// What a device measured.
#[derive(Default)]
struct DeviceStats {
    saves: Vec<SaveTime>,
    /// Each acknowledged turn: when (s since the start), and from its start to acknowledged
    /// (µs), conflicts and retries included.
    turns: Vec<(f64, u32)>,
    conflicts: Vec<f64>,
    resolved: u64,
    /// Saves that got no answer or an error other than a conflict.
    unanswered_saves: Vec<f64>,
    /// Of the turns whose save got no answer, those found stored on the server afterwards.
    found_landed: u64,
    /// Turns given up after [`GIVE_UP`] of failures.
    gave_up: u64,
    /// Failed save requests by the store's error code, with the server's sentence of the
    /// first of each: what a device saw during the faults.
    errors: std::collections::BTreeMap<&'static str, (u64, String)>,
}

/// A device stops retrying a turn after this long (and counts it as given up).
const GIVE_UP: Duration = Duration::from_secs(120);

struct OfflineReport {
    turns: u64,
    reconnect_ms: f64,
    outcomes: Vec<String>,
    mismatched: u64,
    error: Option<String>,
}

struct Device {
    account: usize,
    name: String,
    side: usize,
    store: Remote,
    ids: [String; 2],
    sessions: [Session; 2],
    rng: u64,
    stats: DeviceStats,
    acks: Arc<Mutex<Vec<Ack>>>,
}

fn session_id(account: &str, j: usize) -> String {
    format!("{account}-s{j}")
}

/// Waits before retrying: 50 ms doubling to 1 s, with a jitter of the device's own so that
/// two hundred devices do not retry in step.
async fn backoff(attempt: u32, rng: &mut u64) {
    let base = 50.0 * 2f64.powi(attempt.min(5) as i32);
    let ms = base.min(1000.0) * (0.5 + next_random(rng));
    tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
}

/// A number in 0..1 from a device's xorshift generator (the load is the same from run to run).
fn next_random(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

impl Device {
    /// Opens the account's two sessions on the server, retrying while it does not answer.
    async fn open(&mut self, j: usize) -> Result<(), String> {
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            match sessions::open::<_, SuiteError>(&self.store, &self.ids[j], counter_for).await {
                Ok((session, _, _)) => {
                    self.sessions[j] = session;
                    return Ok(());
                }
                Err(e) if started.elapsed() > GIVE_UP => {
                    return Err(format!("opening {}: {e}", self.ids[j]))
                }
                Err(_) => {
                    backoff(attempt, &mut self.rng).await;
                    attempt += 1;
                }
            }
        }
    }

    /// Takes turn `k` on session `j` and saves it until it is acknowledged.
    async fn turn(&mut self, j: usize, k: u64) {
        let started = Instant::now();
        // Where this turn's messages begin in the version it was first taken on: if a save
        // that got no answer landed, its messages are at or after this number.
        let first_seq = self.sessions[j].header().next_seq;
        take_turn(&mut self.sessions[j], &self.name, self.side, k);
        let mut may_have_landed = false;
        let mut conflicts = 0u32;
        let mut attempt = 0;
        loop {
            let t = since_start();
            let save_started = Instant::now();
            let saved = sessions::save::<_, SuiteError>(
                &self.store,
                &self.ids[j],
                &mut self.sessions[j],
                epoch_ms(),
            )
            .await;
            let took = save_started.elapsed().as_micros() as u32;
            self.stats.saves.push((t, took, saved.is_ok()));
            match saved {
                Ok(_) => break,
                Err(e) if e.code() == Some("conflict") => {
                    // Another device saved first: nothing of this save was written. The
                    // first time, the turn is taken again at once (the usual case: this copy
                    // was stale). Again and again means the other device keeps winning the
                    // race between this device's reopening and its save, which happens when
                    // the server is slow; waiting, longer each time, as clients of optimistic
                    // writes do, lets the server recover instead of feeding it more
                    // conflicts (without it, devices on a slow server livelock against a
                    // partner on a fast one).
                    self.stats.conflicts.push(t);
                    if conflicts > 0 {
                        backoff(conflicts - 1, &mut self.rng).await;
                    }
                    conflicts += 1;
                }
                Err(SuiteError::Store(e)) => {
                    // No answer, or the server could not reach the database: the write may
                    // or may not have been committed.
                    let seen = self
                        .stats
                        .errors
                        .entry(e.code())
                        .or_insert_with(|| (0, e.to_string()));
                    seen.0 += 1;
                    self.stats.unanswered_saves.push(t);
                    may_have_landed = true;
                    if started.elapsed() > GIVE_UP {
                        // The turn is dropped from the device's copy; whether it landed is
                        // for the read-back to find.
                        self.stats.gave_up += 1;
                        self.open(j).await.unwrap_or_else(|e| panic!("{e}"));
                        return;
                    }
                    backoff(attempt, &mut self.rng).await;
                    attempt += 1;
                }
                Err(e) => panic!("{} turn {k}: {e}", self.ids[j]),
            }
            if self.recover(j, k, first_seq, may_have_landed).await {
                self.stats.found_landed += 1;
                break;
            }
            // The turn was taken again on the server's version; the loop saves that.
        }
        self.stats.resolved += u64::from(conflicts);
        self.stats
            .turns
            .push((since_start(), started.elapsed().as_micros() as u32));
        self.acks.lock().expect("acks").push((j, k));
    }

    /// Brings session `j` to the server's version. When the turn may have landed, looks for it
    /// there first: found, it is acknowledged as it is (returns true); otherwise the turn is
    /// taken again on top of the server's version, to be saved by the caller (returns false).
    async fn recover(&mut self, j: usize, k: u64, first_seq: u64, may_have_landed: bool) -> bool {
        let id = self.ids[j].clone();
        let (user, _) = turn_texts(&self.name, self.side, k);
        let mut attempt = 0;
        loop {
            let opened = sessions::open::<_, SuiteError>(&self.store, &id, counter_for).await;
            let (session, row) = match opened {
                Ok((session, row, _)) => (session, row),
                Err(_) => {
                    backoff(attempt, &mut self.rng).await;
                    attempt += 1;
                    continue;
                }
            };
            if may_have_landed {
                let read = self
                    .store
                    .messages_between(&id, first_seq, row.header.next_seq)
                    .await;
                match read {
                    Ok((messages, _)) => {
                        if messages.iter().any(|m| m.message.content == user) {
                            self.sessions[j] = session;
                            return true;
                        }
                    }
                    Err(_) => {
                        backoff(attempt, &mut self.rng).await;
                        attempt += 1;
                        continue;
                    }
                }
            }
            self.sessions[j] = session;
            take_turn(&mut self.sessions[j], &self.name, self.side, k);
            return false;
        }
    }

    /// The device's paced turns until the controller stops the run.
    async fn run(
        mut self,
        shared: Arc<Shared>,
        interval: Duration,
        offset: Duration,
        cross: f64,
        offline: Option<(String, u64, mpsc::Sender<OfflineReport>)>,
    ) -> (DeviceStats, TransportStats) {
        let start = *START.get().expect("the start is set");
        let pace = Pace {
            start,
            offset,
            interval,
        };
        let mut offline = offline;
        let account = &shared.accounts[self.account];
        let mut k = 0u64;
        let mut last_done = start;
        while !shared.stop.load(Ordering::Relaxed) {
            // A person's next message comes an interval after the last one, and never before
            // they have read the answer to the last one (half an interval): a device that
            // fell behind (a fault, a slow server) takes its next turn late, never early, and
            // does not fire the turns it missed back to back, which would turn the rest of
            // the run into a test of saturation rather than of the fault.
            let due = pace.due(k).max(last_done + interval / 2);
            tokio::time::sleep_until(due.into()).await;
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if offline.is_some() && shared.offline_request.load(Ordering::Relaxed) {
                let (url, turns, reports) = offline.take().expect("checked");
                let report = self.go_offline(&url, turns, &mut k, pace, account).await;
                reports.send(report).ok();
                continue;
            }
            let mut j = self.side;
            if next_random(&mut self.rng) < cross {
                // The other device's session, unless that device is offline.
                account.crossing.fetch_add(1, Ordering::SeqCst);
                if account.partner_offline.load(Ordering::SeqCst) {
                    account.crossing.fetch_sub(1, Ordering::SeqCst);
                } else {
                    j = 1 - self.side;
                }
            }
            self.turn(j, k).await;
            if j != self.side {
                account.crossing.fetch_sub(1, Ordering::SeqCst);
            }
            last_done = Instant::now();
            k += 1;
        }
        let transport = self.store.transport().stats.borrow().clone();
        (self.stats, transport)
    }

    /// The offline fault: copies both sessions into a local store, takes `turns` turns on its
    /// own session there, then reconnects and syncs both; reports the time from reconnecting
    /// to both sessions in sync.
    async fn go_offline(
        &mut self,
        url: &str,
        turns: u64,
        k: &mut u64,
        pace: Pace,
        account: &AccountShared,
    ) -> OfflineReport {
        let mut report = OfflineReport {
            turns: 0,
            reconnect_ms: 0.0,
            outcomes: Vec::new(),
            mismatched: 0,
            error: None,
        };
        account.partner_offline.store(true, Ordering::SeqCst);
        // A turn of the other device on this device's session that is under way finishes
        // before the copy is taken.
        while account.crossing.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let result = self
            .offline_and_back(url, turns, k, pace, &mut report)
            .await;
        account.partner_offline.store(false, Ordering::SeqCst);
        if let Err(e) = result {
            report.error = Some(e);
        }
        report
    }

    async fn offline_and_back(
        &mut self,
        url: &str,
        turns: u64,
        k: &mut u64,
        pace: Pace,
        report: &mut OfflineReport,
    ) -> Result<(), String> {
        let local = PostgresStore::connect(
            url,
            PostgresOptions {
                pool_size: 2,
                schema: format!("bench_sync_local_{}", std::process::id()),
                application_name: "ccm-bench-sync-local".to_string(),
                ..PostgresOptions::default()
            },
        )
        .await
        .map_err(|e| format!("the local store: {e}"))?;
        // The local copy, as the app's IndexedDB holds it: each session pulled whole, its
        // revision remembered as the synced one.
        let (rows, _) = self.store.rows().await.map_err(|e| e.to_string())?;
        let mut synced = [None, None];
        for (j, synced) in synced.iter_mut().enumerate() {
            let row = rows.iter().find(|r| r.id == self.ids[j]);
            let outcome = sync_session(
                &local,
                &self.store,
                &self.ids[j],
                None,
                row,
                None,
                epoch_ms(),
            )
            .await
            .map_err(|e| format!("copying {} before going offline: {e}", self.ids[j]))?;
            *synced = outcome.synced_revision();
            let (session, _, _) =
                sessions::open::<_, SuiteError>(&local, &self.ids[j], counter_for)
                    .await
                    .map_err(|e| format!("opening the local copy: {e}"))?;
            self.sessions[j] = session;
        }
        // Offline: turns on its own session, saved into the local store only.
        let j = self.side;
        for _ in 0..turns {
            let due = pace.due(*k);
            tokio::time::sleep_until(due.into()).await;
            take_turn(&mut self.sessions[j], &self.name, self.side, *k);
            sessions::save::<_, SuiteError>(
                &local,
                &self.ids[j],
                &mut self.sessions[j],
                epoch_ms(),
            )
            .await
            .map_err(|e| format!("saving offline: {e}"))?;
            self.acks.lock().expect("acks").push((j, *k));
            *k += 1;
            report.turns += 1;
        }
        // Reconnecting: both sides' rows, then each session brought in sync.
        let reconnected = Instant::now();
        let (local_rows, _) = local.rows().await.map_err(|e| e.to_string())?;
        let (remote_rows, _) = self.store.rows().await.map_err(|e| e.to_string())?;
        let (listed_local, listed_remote) = (local_rows.len(), remote_rows.len());
        report.outcomes.push(format!(
            "both lists read in {:.0} ms ({listed_local} and {listed_remote} sessions)",
            reconnected.elapsed().as_secs_f64() * 1000.0
        ));
        for (id, synced) in self.ids.iter().zip(synced) {
            let one = Instant::now();
            let outcome = sync_session(
                &local,
                &self.store,
                id,
                local_rows.iter().find(|r| &r.id == id),
                remote_rows.iter().find(|r| &r.id == id),
                synced,
                epoch_ms(),
            )
            .await
            .map_err(|e| format!("syncing {id}: {e}"))?;
            let took = one.elapsed().as_secs_f64() * 1000.0;
            report.outcomes.push(match &outcome {
                SyncOutcome::InSync { .. } => format!("{id} in sync ({took:.0} ms)"),
                SyncOutcome::Pushed { records, .. } => {
                    format!("{id} pushed {records} records in {took:.0} ms")
                }
                SyncOutcome::Pulled { records, .. } => {
                    format!("{id} pulled {records} records in {took:.0} ms")
                }
                SyncOutcome::Conflict(c) => format!("{id} conflict ({c:?})"),
            });
            if outcome.synced_revision().is_none() {
                return Err(format!("{id} is in conflict after reconnecting"));
            }
        }
        report.reconnect_ms = reconnected.elapsed().as_secs_f64() * 1000.0;
        // In sync means the same messages on both sides up to the synced revision.
        for j in 0..2 {
            let id = &self.ids[j];
            let mine = local.read_all(id).await.map_err(|e| e.to_string())?;
            let theirs = self.store.read_all(id).await.map_err(|e| e.to_string())?;
            let upto = mine
                .row
                .as_ref()
                .map_err(|e| e.to_string())?
                .header
                .next_seq;
            let key = |m: &ccm_core::persistence::StoredMessage| {
                (m.message.seq, m.message.content.clone())
            };
            let mine: Vec<_> = mine.messages.iter().map(key).collect();
            let theirs: Vec<_> = theirs
                .messages
                .iter()
                .filter(|m| m.message.seq < upto)
                .map(key)
                .collect();
            let matching = mine.iter().zip(&theirs).filter(|(a, b)| a == b).count();
            report.mismatched += (mine.len().max(theirs.len()) - matching) as u64;
        }
        // Online again: the sessions as the server holds them now.
        for j in 0..2 {
            self.open(j).await?;
        }
        Ok(())
    }
}

// ----- read-back -----

/// The messages one range read asks for (the server's limit, `ccm_server::api::MAX_RANGE`).
const STEP: u64 = ccm_server::api::MAX_RANGE;

/// Runs a store operation until it succeeds, waiting between attempts (a read-back runs
/// while faults are being made); gives up after about half a minute.
fn retrying<T, F, Fut>(rt: &tokio::runtime::Runtime, mut operation: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    rt.block_on(async {
        let mut attempt = 0;
        loop {
            match operation().await {
                Ok(value) => return value,
                Err(e) if attempt >= 30 => panic!("reading back: {e}"),
                Err(_) => {
                    backoff(attempt, &mut rng).await;
                    attempt += 1;
                }
            }
        }
    })
}

/// What a read-back found.
#[derive(Default, Clone, Copy)]
struct Tally {
    sessions: u64,
    turns: u64,
    messages: u64,
    lost: u64,
    duplicated: u64,
    out_of_order: u64,
    unacknowledged: u64,
    cross_account: u64,
    unreadable: u64,
}

/// Reads every session back through the server and checks it against the turns the devices
/// had seen acknowledged (`acks[account][side]`): each turn's two messages stored once, each
/// device's turns in the order it took them. `complete` says the acknowledgements are all
/// there will be (afterwards): then a stored turn no device saw acknowledged is counted too.
fn read_back(
    rt: &tokio::runtime::Runtime,
    stores: &[Remote],
    names: &[String],
    acks: &[[Vec<Ack>; 2]],
    complete: bool,
) -> Tally {
    let mut tally = Tally::default();
    for (a, store) in stores.iter().enumerate() {
        // The rows after the acknowledgements were taken: every acknowledged turn is below
        // each row's next sequence number.
        let (rows, _) = retrying(rt, || store.rows());
        for j in 0..2 {
            let id = session_id(&names[a], j);
            let next_seq = rows
                .iter()
                .find(|r| r.id == id)
                .map_or(0, |r| r.header.next_seq);
            // The messages alone, by range (what a device's recall rebuild reads): the other
            // records are not what is compared, and reading them all mid-run would weigh on
            // the devices still taking turns.
            let mut messages = Vec::new();
            for from in (0..next_seq).step_by(STEP as usize) {
                let to = (from + STEP).min(next_seq);
                let (mut read, unreadable) = retrying(rt, || store.messages_between(&id, from, to));
                tally.unreadable += unreadable.len() as u64;
                messages.append(&mut read);
            }
            tally.sessions += 1;
            let mut counts: HashMap<&str, u64> = HashMap::new();
            // Each device's turns (user messages) in stored order, first copy only.
            let mut order: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
            let mut seen: HashSet<(usize, u64)> = HashSet::new();
            for stored in &messages {
                let content = stored.message.content.as_str();
                let Some((account, side, k)) = parse_tag(content) else {
                    continue;
                };
                if account != names[a] {
                    tally.cross_account += 1;
                    continue;
                }
                *counts.entry(content).or_default() += 1;
                if stored.message.role == ccm_core::Role::User && seen.insert((side, k)) {
                    order[side].push(k);
                }
            }
            let mut expected: HashSet<String> = HashSet::new();
            for side in 0..2 {
                let mine: HashSet<u64> = acks[a][side]
                    .iter()
                    .filter(|(s, _)| *s == j)
                    .map(|(_, k)| *k)
                    .collect();
                for &k in &mine {
                    let (user, assistant) = turn_texts(&names[a], side, k);
                    for text in [user, assistant] {
                        match counts.get(text.as_str()).copied().unwrap_or(0) {
                            0 => tally.lost += 1,
                            n => tally.duplicated += n - 1,
                        }
                        tally.messages += 1;
                        expected.insert(text);
                    }
                    tally.turns += 1;
                }
                let in_order: Vec<u64> = order[side]
                    .iter()
                    .copied()
                    .filter(|k| mine.contains(k))
                    .collect();
                tally.out_of_order += in_order.windows(2).filter(|w| w[1] < w[0]).count() as u64;
                if complete {
                    tally.unacknowledged += order[side].len() as u64 - in_order.len() as u64;
                }
            }
            if complete {
                for (text, n) in &counts {
                    if !expected.contains(*text) && *n > 1 {
                        tally.duplicated += n - 1;
                    }
                }
            }
        }
    }
    tally
}

/// Each account's token must list only that account's sessions and must not read another
/// account's session (tried by id): every foreign session seen counts.
fn isolation(rt: &tokio::runtime::Runtime, stores: &[Remote], names: &[String]) -> (u64, u64) {
    let mut foreign = 0u64;
    let mut tries = 0u64;
    for (a, store) in stores.iter().enumerate() {
        let (rows, damaged) = rt
            .block_on(store.rows())
            .unwrap_or_else(|e| panic!("listing {}'s sessions: {e}", names[a]));
        let own = format!("{}-", names[a]);
        foreign += rows.iter().filter(|r| !r.id.starts_with(&own)).count() as u64;
        foreign += damaged.iter().filter(|d| !d.id.starts_with(&own)).count() as u64;
        let other = session_id(&names[(a + 1) % names.len()], 0);
        tries += 2;
        match rt.block_on(store.load(&other)) {
            Err(StoreError::NotFound { .. }) => {}
            _ => foreign += 1,
        }
        match rt.block_on(store.messages_between(&other, 0, 100)) {
            Ok((messages, _)) if messages.is_empty() => {}
            Err(StoreError::NotFound { .. }) => {}
            _ => foreign += 1,
        }
    }
    (foreign, tries)
}

/// What opening a session costs once the devices have stopped: the request a conflict
/// adds (with the save it refused), on sessions as long as the run made them. Returns the
/// median time (ms), the mean turns, answer size (KB), open efforts, messages in their
/// logs, effort records and attachments.
fn open_cost(rt: &tokio::runtime::Runtime, stores: &[Remote], names: &[String]) -> [f64; 7] {
    let mut times = Vec::new();
    let mut sums = [0.0f64; 6];
    let count = names.len().min(20);
    for (store, name) in stores.iter().zip(names).take(count) {
        let id = session_id(name, 0);
        let started = Instant::now();
        let (row, records) = retrying(rt, || store.load(&id));
        times.push(started.elapsed().as_micros() as u32);
        let logs: usize = records.effort_logs.values().map(Vec::len).sum();
        let answer = ccm_store::remote::LoadResponse::of(row.clone(), records.clone());
        let bytes = serde_json::to_string(&answer).map_or(0, |t| t.len());
        for (sum, value) in sums.iter_mut().zip([
            row.header.turn as f64,
            bytes as f64 / 1024.0,
            row.header.open.len() as f64,
            logs as f64,
            records.efforts.len() as f64,
            records.attachments.len() as f64,
        ]) {
            *sum += value;
        }
    }
    times.sort_unstable();
    let mean = |sum: f64| sum / count.max(1) as f64;
    [
        percentile(&times, 0.5),
        mean(sums[0]),
        mean(sums[1]),
        mean(sums[2]),
        mean(sums[3]),
        mean(sums[4]),
        mean(sums[5]),
    ]
}

// ----- faults -----

/// Runs the fault program (`scripts/bench-sync --control DIR ACTION [N]`); returns how long
/// it took.
fn control(args: &Args, action: &[&str]) -> Result<Duration, String> {
    let (program, dir) = args
        .control
        .as_ref()
        .ok_or("no --control program was given")?;
    let started = Instant::now();
    let status = Command::new(program)
        .arg("--control")
        .arg(dir)
        .args(action)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("{program} could not be run: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{program} --control {} failed: {status}",
            action.join(" ")
        ));
    }
    Ok(started.elapsed())
}

fn snapshot(acks: &[[Arc<Mutex<Vec<Ack>>>; 2]]) -> Vec<[Vec<Ack>; 2]> {
    acks.iter()
        .map(|pair| {
            [
                pair[0].lock().expect("acks").clone(),
                pair[1].lock().expect("acks").clone(),
            ]
        })
        .collect()
}

struct FaultRow {
    name: String,
    what: String,
    check: Option<Tally>,
}

/// Set when any thread panicked: a device that crashed makes the whole run meaningless.
static CRASHED: AtomicBool = AtomicBool::new(false);

/// Waits until `at` seconds after the start; stops the run at once when a thread crashed.
fn sleep_until_s(at: f64) {
    loop {
        if CRASHED.load(Ordering::SeqCst) {
            eprintln!("bench sync: a thread crashed (see above); stopping");
            std::process::exit(1);
        }
        let left = at - since_start();
        if left <= 0.0 {
            return;
        }
        std::thread::sleep(Duration::from_secs_f64(left.min(0.1)));
    }
}

// ----- where the processor time goes -----

/// Linux's USER_HZ: the unit of the times in /proc.
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of /proc/PID/stat after the command name (the state is the first).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Processor seconds (user and system) a process has used.
fn cpu_seconds(pid: u32) -> f64 {
    // utime and stime are the 14th and 15th fields of the line; the list starts at the 3rd.
    stat_fields(pid).map_or(0.0, |f| {
        f.get(11..13).map_or(0.0, |t| {
            t.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
        }) / TICKS_PER_SECOND
    })
}

/// Processor seconds used so far by this harness, each server, PostgreSQL (the cluster's
/// postmaster and its children) and the whole machine.
#[derive(Default, Clone, Copy)]
struct CpuSample {
    harness: f64,
    servers: [f64; 2],
    postgres: f64,
    machine: f64,
}

fn cpu_sample(control_dir: Option<&str>) -> CpuSample {
    let mut sample = CpuSample {
        harness: cpu_seconds(std::process::id()),
        ..CpuSample::default()
    };
    let read_pid = |path: String| -> Option<u32> {
        std::fs::read_to_string(path)
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    };
    if let Some(dir) = control_dir {
        for n in 0..2 {
            if let Some(pid) = read_pid(format!("{dir}/server-{n}.pid")) {
                sample.servers[n] = cpu_seconds(pid);
            }
        }
        // The script writes the cluster's directory into its state file.
        let cluster = std::fs::read_to_string(format!("{dir}/state"))
            .ok()
            .and_then(|state| {
                state
                    .lines()
                    .find_map(|l| l.strip_prefix("cluster=").map(str::to_string))
            });
        if let Some(postmaster) = cluster.and_then(|c| read_pid(format!("{c}/data/postmaster.pid")))
        {
            sample.postgres = cpu_seconds(postmaster);
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                if stat_fields(pid).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(postmaster)
                {
                    sample.postgres += cpu_seconds(pid);
                }
            }
        }
    }
    // The machine: every processor's time but idle and waiting for I/O.
    if let Some(line) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
    {
        let values: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        let idle = values.get(3).copied().unwrap_or(0.0) + values.get(4).copied().unwrap_or(0.0);
        sample.machine = (values.iter().take(8).sum::<f64>() - idle) / TICKS_PER_SECOND;
    }
    sample
}

/// A device's schedule: its turn `k` is due an `interval` after turn `k - 1`, the first one
/// `offset` after the run's `start` (the devices' offsets spread their turns over the interval).
#[derive(Debug, Clone, Copy)]
struct Pace {
    start: Instant,
    offset: Duration,
    interval: Duration,
}

impl Pace {
    /// When turn `k` is due, if nothing held the device back.
    fn due(&self, k: u64) -> Instant {
        self.start + self.offset + self.interval.mul_f64(k as f64)
    }
}

// ----- figures -----

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at] as f64 / 1000.0
}

struct Phase {
    name: &'static str,
    from: f64,
    to: f64,
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&raw) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("bench sync: {message}");
            std::process::exit(2);
        }
    };
    let tokens = read_tokens(&args.tokens, args.accounts).unwrap_or_else(|e| {
        eprintln!("bench sync: {e}");
        std::process::exit(2);
    });
    let names: Vec<String> = tokens.iter().map(|(name, _)| name.clone()).collect();
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        CRASHED.store(true, Ordering::SeqCst);
        report(info);
    }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // The checker's view of each account: its own transports, on the first server.
    let checkers: Vec<Remote> = tokens
        .iter()
        .map(|(_, token)| remote(&args.servers, token, 0))
        .collect();

    // Every account's two sessions, created empty before the clock starts.
    eprintln!("bench sync: creating {} accounts' sessions", names.len());
    for (a, store) in checkers.iter().enumerate() {
        for j in 0..2 {
            let id = session_id(&names[a], j);
            let mut session = new_session();
            rt.block_on(sessions::insert::<_, SuiteError>(
                store,
                &id,
                &mut session,
                &id,
                epoch_ms(),
                true,
            ))
            .unwrap_or_else(|e| panic!("creating {id}: {e}"));
        }
    }

    let devices = names.len() * 2;
    let interval = Duration::from_secs_f64(devices as f64 / args.rate);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        offline_request: AtomicBool::new(false),
        accounts: (0..names.len()).map(|_| AccountShared::default()).collect(),
    });
    let acks: Vec<[Arc<Mutex<Vec<Ack>>>; 2]> = (0..names.len())
        .map(|_| [Arc::default(), Arc::default()])
        .collect();
    let ready = Arc::new(Barrier::new(devices + 1));
    let (offline_tx, offline_rx) = mpsc::channel();
    let mut threads = Vec::new();
    for (a, ((name, token), acked)) in tokens.iter().zip(&acks).enumerate() {
        for (side, acked) in acked.iter().enumerate() {
            // The account's two devices on different servers, half of the devices on each.
            let home = (a + side) % 2;
            let index = a * 2 + side;
            let offset = interval.mul_f64(index as f64 / devices as f64);
            let offline = (a == 0 && side == 1)
                .then(|| args.local_database.clone())
                .flatten()
                .map(|url| (url, args.offline_turns, offline_tx.clone()));
            let device = Device {
                account: a,
                name: name.clone(),
                side,
                store: remote(&args.servers, token, home),
                ids: [session_id(name, 0), session_id(name, 1)],
                sessions: [new_session(), new_session()],
                rng: 0x2545_f491_4f6c_dd1d ^ ((index as u64 + 1) * 0x9e37_79b9),
                stats: DeviceStats::default(),
                acks: acked.clone(),
            };
            let (shared, ready, cross) = (shared.clone(), ready.clone(), args.cross);
            let thread = std::thread::Builder::new()
                .name(format!("{name}-{}", side_name(side)))
                .stack_size(1 << 20)
                .spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a device's runtime");
                    let mut device = device;
                    for j in 0..2 {
                        rt.block_on(device.open(j))
                            .unwrap_or_else(|e| panic!("{e}"));
                    }
                    // Twice: once when every device is ready, once after the start is set.
                    ready.wait();
                    ready.wait();
                    rt.block_on(device.run(shared, interval, offset, cross, offline))
                })
                .expect("a device's thread");
            threads.push(thread);
        }
    }
    drop(offline_tx);
    ready.wait();
    let control_dir = args.control.as_ref().map(|(_, dir)| dir.clone());
    let cpu_before = cpu_sample(control_dir.as_deref());
    START.set(Instant::now()).expect("set once");
    ready.wait();
    eprintln!(
        "bench sync: {devices} devices taking turns; load phase of {} s",
        args.load_seconds
    );

    // ----- the faults, one after another after the load phase -----
    let load_end = args.load_seconds;
    sleep_until_s(load_end);
    let cpu_after = cpu_sample(control_dir.as_deref());
    let mut faults: Vec<FaultRow> = Vec::new();
    let mut killed_window = None;
    let mut database_window = None;
    if args.control.is_some() {
        let killed_at = load_end + 3.0;
        sleep_until_s(killed_at);
        eprintln!(
            "bench sync [{:5.1} s]: killing server 2 (SIGKILL)",
            since_start()
        );
        let outcome = control(&args, &["kill-server", "1"]).and_then(|_| {
            sleep_until_s(killed_at + 7.0);
            eprintln!("bench sync [{:5.1} s]: restarting server 2", since_start());
            control(&args, &["start-server", "1"])
        });
        let restarted_at = since_start();
        killed_window = Some((killed_at, restarted_at));
        match outcome {
            Ok(_) => {
                sleep_until_s(restarted_at + 4.0);
                eprintln!(
                    "bench sync [{:5.1} s]: reading every session back",
                    since_start()
                );
                let check = read_back(&rt, &checkers, &names, &snapshot(&acks), false);
                faults.push(FaultRow {
                    name: "server 2 killed (SIGKILL) while saving, restarted".into(),
                    what: format!(
                        "down {:.1} s (kill to ready again)",
                        restarted_at - killed_at
                    ),
                    check: Some(check),
                });
            }
            Err(e) => faults.push(FaultRow {
                name: "server 2 killed".into(),
                what: format!("the fault could not be made: {e}"),
                check: None,
            }),
        }
        let restart_at = since_start() + 2.0;
        sleep_until_s(restart_at);
        eprintln!(
            "bench sync [{:5.1} s]: restarting the database",
            since_start()
        );
        match control(&args, &["restart-database"]) {
            Ok(took) => {
                database_window = Some((restart_at, since_start()));
                sleep_until_s(since_start() + 5.0);
                eprintln!(
                    "bench sync [{:5.1} s]: reading every session back",
                    since_start()
                );
                let check = read_back(&rt, &checkers, &names, &snapshot(&acks), false);
                faults.push(FaultRow {
                    name: "database restarted (pg_ctl restart -m fast)".into(),
                    what: format!("pg_ctl restart took {:.1} s", took.as_secs_f64()),
                    check: Some(check),
                });
            }
            Err(e) => faults.push(FaultRow {
                name: "database restarted".into(),
                what: format!("the fault could not be made: {e}"),
                check: None,
            }),
        }
    } else {
        eprintln!(
            "bench sync [{:5.1} s]: no --control program: no server kill, no database restart",
            since_start()
        );
    }
    let mut offline_summary = None;
    if args.local_database.is_some() {
        sleep_until_s(since_start() + 2.0);
        eprintln!(
            "bench sync: device B of {} goes offline for {} turns",
            names[0], args.offline_turns
        );
        shared.offline_request.store(true, Ordering::SeqCst);
        let wait =
            Duration::from_secs_f64(interval.as_secs_f64() * args.offline_turns as f64 + 120.0);
        match offline_rx.recv_timeout(wait) {
            Ok(report) => {
                sleep_until_s(since_start() + 2.0);
                eprintln!(
                    "bench sync [{:5.1} s]: reading every session back",
                    since_start()
                );
                let check = read_back(&rt, &checkers, &names, &snapshot(&acks), false);
                let what = match &report.error {
                    Some(e) => format!("failed: {e}"),
                    None => format!(
                        "{} turns offline; reconnect to in sync {:.0} ms ({}); {} messages differ between the copies",
                        report.turns,
                        report.reconnect_ms,
                        report.outcomes.join(", "),
                        report.mismatched
                    ),
                };
                offline_summary = Some((report.reconnect_ms, report.error.is_none()));
                faults.push(FaultRow {
                    name: format!("a device offline for {} turns", args.offline_turns),
                    what,
                    check: Some(check),
                });
            }
            Err(_) => faults.push(FaultRow {
                name: "a device offline".into(),
                what: "the device did not report back".into(),
                check: None,
            }),
        }
    } else {
        eprintln!(
            "bench sync [{:5.1} s]: no --local-database: no offline device",
            since_start()
        );
    }
    let end = since_start().max(load_end + 1.0);
    sleep_until_s(end);
    shared.stop.store(true, Ordering::SeqCst);
    let mut stats = Vec::new();
    for thread in threads {
        match thread.join() {
            Ok(result) => stats.push(result),
            Err(_) => {
                eprintln!(
                    "bench sync [{:5.1} s]: a device's thread failed",
                    since_start()
                );
                std::process::exit(1);
            }
        }
    }
    let finished = since_start();
    let cpu_end = cpu_sample(control_dir.as_deref());

    eprintln!("bench sync [{:5.1} s]: the final read-back", since_start());
    let acked = snapshot(&acks);
    let last = read_back(&rt, &checkers, &names, &acked, true);
    let (foreign, tries) = isolation(&rt, &checkers, &names);
    let opening = open_cost(&rt, &checkers, &names);

    // ----- tables -----
    let phases = [
        Phase {
            name: "load",
            from: 0.0,
            to: load_end,
        },
        Phase {
            name: "faults",
            from: load_end,
            to: finished,
        },
    ];
    println!(
        "Sync server under load: {} accounts × 2 devices (one thread and one RemoteStore each) against two ccm-server processes and one PostgreSQL, offering {:.0} turns/s (each device a turn every {:.0} ms), {:.0}% of a device's turns on the other device's session.\n",
        names.len(),
        args.rate,
        interval.as_secs_f64() * 1000.0,
        args.cross * 100.0
    );
    println!("| phase | seconds | turns acknowledged | turns/s | save requests | save p50 | save p99 | turn p50 | turn p99 | conflicts detected | saves without an answer | failovers |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut headline = (0.0, 0.0);
    for phase in &phases {
        let within = |t: f64| t >= phase.from && t < phase.to;
        let mut saves: Vec<u32> = Vec::new();
        let mut turns: Vec<u32> = Vec::new();
        let (mut conflicts, mut unanswered, mut failovers) = (0, 0, 0);
        for (device, transport) in &stats {
            saves.extend(device.saves.iter().filter(|s| within(s.0)).map(|s| s.1));
            turns.extend(device.turns.iter().filter(|t| within(t.0)).map(|t| t.1));
            conflicts += device.conflicts.iter().filter(|t| within(**t)).count();
            unanswered += device
                .unanswered_saves
                .iter()
                .filter(|t| within(**t))
                .count();
            failovers += transport.failovers.iter().filter(|t| within(**t)).count();
        }
        saves.sort_unstable();
        turns.sort_unstable();
        let seconds = phase.to - phase.from;
        let rate = turns.len() as f64 / seconds;
        let (p50, p99) = (percentile(&saves, 0.5), percentile(&saves, 0.99));
        if phase.name == "load" {
            headline = (rate, p99);
        }
        println!(
            "| {} | {seconds:.0} | {} | {rate:.0} | {} | {p50:.1} ms | {p99:.1} ms | {:.1} ms | {:.1} ms | {conflicts} | {unanswered} | {failovers} |",
            phase.name,
            turns.len(),
            saves.len(),
            percentile(&turns, 0.5),
            percentile(&turns, 0.99),
        );
    }
    println!(
        "\n| processor time, cores busy on average (of {}) | the devices (this harness) | server 1 | server 2 | PostgreSQL | everything else on the machine |",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("|---|---|---|---|---|---|");
    let cores = |after: f64, before: f64, seconds: f64| (after - before) / seconds;
    let seconds = phases[0].to - phases[0].from;
    let harness = cores(cpu_after.harness, cpu_before.harness, seconds);
    let servers = [
        cores(cpu_after.servers[0], cpu_before.servers[0], seconds),
        cores(cpu_after.servers[1], cpu_before.servers[1], seconds),
    ];
    let postgres = cores(cpu_after.postgres, cpu_before.postgres, seconds);
    let machine = cores(cpu_after.machine, cpu_before.machine, seconds);
    println!(
        "| load | {harness:.2} | {:.2} | {:.2} | {postgres:.2} | {:.2} |",
        servers[0],
        servers[1],
        (machine - harness - servers[0] - servers[1] - postgres).max(0.0)
    );
    // A restarted process starts counting again, so during the faults only the harness and
    // the machine as a whole are measured.
    let seconds = phases[1].to - phases[1].from;
    let harness = cores(cpu_end.harness, cpu_after.harness, seconds);
    let machine = cores(cpu_end.machine, cpu_after.machine, seconds);
    println!(
        "| faults | {harness:.2} | {:.2} for the servers, PostgreSQL and everything else (restarted processes are not told apart) ||||",
        (machine - harness).max(0.0)
    );
    let sum = |f: &dyn Fn(&DeviceStats, &TransportStats) -> u64| -> u64 {
        stats.iter().map(|(d, t)| f(d, t)).sum()
    };
    println!(
        "\nWhole run: conflicts detected {}, resolved {} (the server's version opened and the refused turn taken again on it); saves without an answer {}, of which {} had landed (found on the server and not saved again); answers 503 unavailable {}; turns given up {}.",
        sum(&|d, _| d.conflicts.len() as u64),
        sum(&|d, _| d.resolved),
        sum(&|d, _| d.unanswered_saves.len() as u64),
        sum(&|d, _| d.found_landed),
        sum(&|_, t| t.unavailable),
        sum(&|d, _| d.gave_up),
    );
    let mut errors: std::collections::BTreeMap<&str, (u64, String)> = Default::default();
    for (device, _) in &stats {
        for (code, (n, message)) in &device.errors {
            let seen = errors.entry(code).or_insert_with(|| (0, message.clone()));
            seen.0 += n;
        }
    }
    for (code, (n, message)) in &errors {
        println!("Failed saves with code `{code}`: {n} (for example: {message}).");
    }
    println!(
        "Opening a session once the devices stopped (what resolving a conflict reads, besides the refused save): {:.1} ms (median of {}), at {:.0} turns on average: an answer of {:.0} KB with {:.1} open efforts holding {:.0} messages in their logs, {:.0} effort records and {:.0} attachments.",
        opening[0],
        names.len().min(20),
        opening[1],
        opening[2],
        opening[3],
        opening[4],
        opening[5],
        opening[6],
    );
    if let Some((from, to)) = killed_window {
        let moved = stats
            .iter()
            .filter(|(_, t)| t.failovers.iter().any(|f| *f >= from && *f <= to))
            .count();
        println!("While server 2 was down, {moved} devices failed over to server 1.");
    }
    if let Some((from, to)) = database_window {
        let affected = stats
            .iter()
            .filter(|(d, _)| {
                d.unanswered_saves
                    .iter()
                    .any(|t| *t >= from && *t <= to + 2.0)
            })
            .count();
        println!("While the database restarted, {affected} devices had a save fail and saved again after checking the server.");
    }

    println!("\n| fault | what happened | turns checked | messages compared | lost | duplicated | out of order |");
    println!("|---|---|---|---|---|---|---|");
    for fault in &faults {
        match &fault.check {
            Some(t) => println!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                fault.name, fault.what, t.turns, t.messages, t.lost, t.duplicated, t.out_of_order
            ),
            None => println!("| {} | {} | – | – | – | – | – |", fault.name, fault.what),
        }
    }
    if let Some((ms, ok)) = offline_summary {
        println!(
            "\nReconnect after {} offline turns: in sync in {ms:.0} ms (target < 2,000 ms){}.",
            args.offline_turns,
            if ok { "" } else { "; the sync failed" }
        );
    }

    println!("\n| read-back afterwards | sessions | turns acknowledged | messages compared | lost | duplicated | out of order | stored but never acknowledged | unreadable records | cross-account |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let cross_account = last.cross_account + foreign;
    println!(
        "| every session, through the server | {} | {} | {} | {} | {} | {} | {} | {} | {} (of {} sessions listed and {tries} reads of another account's session tried) |",
        last.sessions,
        last.turns,
        last.messages,
        last.lost,
        last.duplicated,
        last.out_of_order,
        last.unacknowledged,
        last.unreadable,
        cross_account,
        names.len() * 2,
    );
    println!();
    println!(
        "sync: {:.0} turns/s, p99 {:.1} ms, lost {}, duplicated {}, cross-account {}",
        headline.0, headline.1, last.lost, last.duplicated, cross_account
    );
}
