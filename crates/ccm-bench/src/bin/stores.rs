//! The storage load benchmark (`scripts/bench-stores`; not a pass/fail test): the native
//! stores under many concurrent sessions, and the cost of a save against the length of the
//! conversation.
//!
//! For each backend (the file store, and PostgreSQL when a URL is given):
//!
//! 1. **Length**: one session of `--length` turns (3,000 by default), saved after every turn;
//!    the mean save time and bytes written around turn 10 and around the last turn, and their
//!    ratio.
//! 2. **Load**: `--sessions` sessions (200) of `--turns` turns (60) each, split between two
//!    writer processes (this binary started again with `--writer`), each process taking turns
//!    on all of its sessions at once, paced like people typing so that together they offer
//!    `--rate` turns per second (1,000; each session takes a turn every `sessions / rate`
//!    seconds, the first ones spread over one interval): turns per second achieved over the
//!    whole run, p50 and p99 save latency (a backend slower than the offered rate queues, and
//!    its latency shows it), bytes per turn, each process's peak memory. Afterwards every process opens each of its sessions through a new handle and
//!    compares it message by message with the session it kept in memory: messages missing
//!    from storage are *lost*, a sequence number or text stored twice is *duplicated*.
//!
//! It ends with one line per backend: `<backend>: <N> turns/s, p99 <X> ms, lost <n>,
//! duplicated <n>`.

use ccm_core::Session;
use ccm_store::conformance::{new_session, scripted_turn, SuiteError};
use ccm_store::files::FileStore;
use ccm_store::postgres::{PostgresOptions, PostgresStore};
use ccm_store::{sessions, RecordStore};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

struct Args {
    sessions: usize,
    turns: u64,
    length: u64,
    rate: f64,
    postgres: Option<String>,
    dir: std::path::PathBuf,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        sessions: 200,
        turns: 60,
        length: 3000,
        rate: 1000.0,
        postgres: std::env::var("CCM_BENCH_POSTGRES_URL").ok(),
        dir: std::env::temp_dir().join(format!("ccm-bench-stores-{}", std::process::id())),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = || rest.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--sessions" => parsed.sessions = value()?.parse().map_err(|e| format!("{e}"))?,
            "--turns" => parsed.turns = value()?.parse().map_err(|e| format!("{e}"))?,
            "--length" => parsed.length = value()?.parse().map_err(|e| format!("{e}"))?,
            "--rate" => parsed.rate = value()?.parse().map_err(|e| format!("{e}"))?,
            "--postgres" => parsed.postgres = Some(value()?.clone()),
            "--dir" => parsed.dir = value()?.into(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if parsed.sessions < 2 || parsed.turns < 2 || parsed.length < 40 {
        return Err("--sessions and --turns must be at least 2, --length at least 40".into());
    }
    Ok(parsed)
}

/// A backend named on the command line, opened in this process.
enum Backend {
    Files(FileStore),
    Postgres(Box<PostgresStore>),
}

impl Backend {
    async fn open(spec: &str) -> Backend {
        match spec.strip_prefix("file:") {
            Some(dir) => Backend::Files(FileStore::open(dir).expect("the file store opens")),
            None => {
                let options = PostgresOptions {
                    pool_size: 16,
                    schema: "ccm_bench".to_string(),
                    ..PostgresOptions::default()
                };
                Backend::Postgres(Box::new(
                    PostgresStore::connect(spec, options)
                        .await
                        .expect("the database is reachable"),
                ))
            }
        }
    }

    fn bytes_written(&self) -> u64 {
        match self {
            Backend::Files(store) => store.bytes_written(),
            Backend::Postgres(store) => store.bytes_written(),
        }
    }
}

/// Runs `$body` with `$store` bound to the backend's concrete type.
macro_rules! on {
    ($backend:expr, $store:ident => $body:expr) => {
        match $backend {
            Backend::Files($store) => $body,
            Backend::Postgres($store) => {
                let $store: &PostgresStore = $store;
                $body
            }
        }
    };
}

fn now_ms(n: u64) -> f64 {
    1.7e12 + n as f64 * 1000.0
}

/// Takes turn `n` of `session` and saves it (creating the session at its first turn);
/// returns the save's time.
async fn turn_and_save<S: RecordStore>(
    store: &S,
    id: &str,
    session: &mut Session,
    n: u64,
) -> Duration {
    scripted_turn(session, n);
    let started = Instant::now();
    if n == 0 {
        sessions::insert::<_, SuiteError>(store, id, session, id, now_ms(n), true)
            .await
            .unwrap_or_else(|e| panic!("creating {id}: {e}"));
    } else {
        sessions::save::<_, SuiteError>(store, id, session, now_ms(n))
            .await
            .unwrap_or_else(|e| panic!("saving turn {n} of {id}: {e}"));
    }
    started.elapsed()
}

/// The length check: save cost and bytes around turn 10 and around the last turn.
async fn length_check(backend: &Backend, turns: u64) -> (f64, f64, f64, f64) {
    let id = format!("length-{}", std::process::id());
    let mut session = new_session();
    let mut times = Vec::new();
    let mut bytes = Vec::new();
    for n in 0..turns {
        let before = backend.bytes_written();
        let took = on!(backend, store => turn_and_save(store, &id, &mut session, n).await);
        times.push(took.as_secs_f64() * 1000.0);
        bytes.push((backend.bytes_written() - before) as f64);
    }
    // Turns 10..34 and the last 24: two whole cycles of the script each.
    let mean = |values: &[f64], from: usize| values[from..from + 24].iter().sum::<f64>() / 24.0;
    let last = times.len() - 24;
    (
        mean(&times, 10),
        mean(&times, last),
        mean(&bytes, 10),
        mean(&bytes, last),
    )
}

/// Peak resident memory of this process, in MB (Linux's VmHWM).
fn peak_memory_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A writer process: `count` sessions from `first`, `turns` turns each, all at once, named
/// after the run `run` (so that runs against one database never meet). Prints one line:
/// turns, bytes, peak memory, lost, duplicated, then every save time in µs.
fn writer(spec: &str, run: &str, first: usize, count: usize, turns: u64, interval: Duration) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let backend = Rc::new(Backend::open(spec).await);
        let mut tasks = Vec::new();
        let start = tokio::time::Instant::now();
        for k in first..first + count {
            let backend = backend.clone();
            let id = format!("load-{run}-{k}");
            // The sessions' first turns are spread over one interval, as people do not all
            // press Enter at the same moment.
            let offset = interval.mul_f64((k - first) as f64 / count as f64);
            tasks.push(tokio::task::spawn_local(async move {
                let mut session = new_session();
                let mut times = Vec::with_capacity(turns as usize);
                for n in 0..turns {
                    // A person's next message comes an interval after the last one; a backend
                    // that falls behind starts the next turn late, never early.
                    tokio::time::sleep_until(start + offset + interval.mul_f64(n as f64)).await;
                    let took = on!(&*backend, store => turn_and_save(store, &id, &mut session, n).await);
                    times.push(took.as_micros() as u64);
                }
                (id, session, times)
            }));
        }
        let mut all_times = Vec::new();
        let mut kept = Vec::new();
        for task in tasks {
            let (id, session, times) = task.await.expect("a session's task");
            all_times.extend(times);
            kept.push((id, session));
        }
        // The load phase alone, as times since the epoch, so that the parent can measure both
        // processes' turns over the span they ran together (start-up and the read-back after
        // it are not turns).
        let load_started = epoch_ms() - start.elapsed().as_secs_f64() * 1000.0;
        let load_ended = epoch_ms();
        let bytes = backend.bytes_written();
        // Every session, read back through a new handle, against the one kept in memory.
        let reader = Backend::open(spec).await;
        let (mut lost, mut duplicated) = (0u64, 0u64);
        for (id, session) in &kept {
            let document = on!(&reader, store => sessions::export_document::<_, SuiteError>(store, id, |_| None).await)
                .unwrap_or_else(|e| panic!("exporting {id}: {e}"));
            let expected = session.to_document().expect("a session in memory is whole");
            let stored = messages_of(&document);
            // A sequence number stored twice is one duplicate (counted once, below).
            let seen: BTreeSet<u64> = stored.iter().map(|(seq, _)| *seq).collect();
            for (seq, text) in messages_of(&expected) {
                if !stored.iter().any(|(s, t)| *s == seq && *t == text) {
                    lost += 1;
                }
            }
            duplicated += stored.len().saturating_sub(seen.len()) as u64;
        }
        let times: Vec<String> = all_times.iter().map(u64::to_string).collect();
        println!(
            "{load_started:.3} {load_ended:.3} {} {} {:.1} {} {} {}",
            turns * count as u64,
            bytes,
            peak_memory_mb(),
            lost,
            duplicated,
            times.join(",")
        );
    });
}

/// Milliseconds since the Unix epoch.
fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Every message of a document, `(seq, content)`, in every log.
fn messages_of(document: &ccm_core::snapshot::SessionDocument) -> Vec<(u64, String)> {
    let mut messages: Vec<(u64, String)> = document
        .ambient
        .iter()
        .map(|m| (m.seq, m.content.clone()))
        .collect();
    for effort in &document.efforts {
        messages.extend(effort.messages.iter().map(|m| (m.seq, m.content.clone())));
    }
    messages.sort();
    messages
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at] as f64 / 1000.0
}

/// The load run of one backend, in two writer processes.
fn load_run(spec: &str, args: &Args) -> (f64, f64, f64, f64, u64, u64, Vec<f64>) {
    let exe = std::env::current_exe().expect("this binary");
    let half = args.sessions / 2;
    let children: Vec<_> = [(0, half), (half, args.sessions - half)]
        .iter()
        .map(|&(first, count)| {
            Command::new(&exe)
                .args([
                    "--writer",
                    spec,
                    &std::process::id().to_string(),
                    &first.to_string(),
                    &count.to_string(),
                    &args.turns.to_string(),
                    &(args.sessions as f64 / args.rate).to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("a writer process starts")
        })
        .collect();
    let mut turns = 0u64;
    let mut bytes = 0u64;
    let mut memory = Vec::new();
    let (mut lost, mut duplicated) = (0, 0);
    let mut times = Vec::new();
    let (mut span_start, mut span_end) = (f64::MAX, 0.0f64);
    for mut child in children {
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(child.wait().unwrap().success(), "a writer process failed");
        let mut fields = line.split_whitespace();
        let mut next = || fields.next().expect("a writer's report");
        span_start = span_start.min(next().parse::<f64>().unwrap());
        span_end = span_end.max(next().parse::<f64>().unwrap());
        turns += next().parse::<u64>().unwrap();
        bytes += next().parse::<u64>().unwrap();
        memory.push(next().parse::<f64>().unwrap());
        lost += next().parse::<u64>().unwrap();
        duplicated += next().parse::<u64>().unwrap();
        times.extend(next().split(',').map(|t| t.parse::<u64>().unwrap()));
    }
    let wall = (span_end - span_start) / 1000.0;
    times.sort_unstable();
    (
        turns as f64 / wall,
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        bytes as f64 / turns as f64,
        lost,
        duplicated,
        memory,
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--writer") {
        let spec = &args[1];
        let first: usize = args[3].parse().unwrap();
        let count: usize = args[4].parse().unwrap();
        let turns: u64 = args[5].parse().unwrap();
        let interval = Duration::from_secs_f64(args[6].parse().unwrap());
        writer(spec, &args[2], first, count, turns, interval);
        return;
    }
    let args = match parse_args(&args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("bench stores: {message}");
            std::process::exit(2);
        }
    };
    let _ = std::fs::remove_dir_all(&args.dir);
    let mut specs = vec![(
        "files".to_string(),
        format!("file:{}", args.dir.join("load").display()),
        format!("file:{}", args.dir.join("length").display()),
    )];
    match &args.postgres {
        Some(url) => specs.push(("postgres".to_string(), url.clone(), url.clone())),
        None => eprintln!("(no PostgreSQL: give --postgres URL or CCM_BENCH_POSTGRES_URL)"),
    }
    println!(
        "Stores under load: {} sessions × {} turns in two writer processes, offering {} turns/s; a session of {} turns for the length check.\n",
        args.sessions, args.turns, args.rate, args.length
    );
    println!("| backend | save at turn 10 | save at turn {} | ratio | bytes/save at 10 | bytes/save at {} | turns/s | save p50 | save p99 | bytes/turn | peak memory per writer |", args.length, args.length);
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut lines = Vec::new();
    for (name, load_spec, length_spec) in &specs {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let (early, late, early_bytes, late_bytes) = runtime.block_on(async {
            let backend = Backend::open(length_spec).await;
            length_check(&backend, args.length).await
        });
        let (rate, p50, p99, per_turn, lost, duplicated, memory) = load_run(load_spec, &args);
        let memory: Vec<String> = memory.iter().map(|m| format!("{m:.0} MB")).collect();
        println!(
            "| {name} | {early:.2} ms | {late:.2} ms | {:.2}× | {early_bytes:.0} | {late_bytes:.0} | {rate:.0} | {p50:.2} ms | {p99:.2} ms | {per_turn:.0} | {} |",
            late / early,
            memory.join(", ")
        );
        lines.push(format!(
            "{name}: {rate:.0} turns/s, p99 {p99:.1} ms, lost {lost}, duplicated {duplicated}"
        ));
    }
    println!();
    for line in lines {
        println!("{line}");
    }
    let _ = std::fs::remove_dir_all(&args.dir);
}
