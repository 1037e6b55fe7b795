//! The file backend: the conformance suite, real processes killed in the middle of saves and
//! racing on one session, and what is specific to the file layout.
//!
//! Run with `cargo test -p ccm-store --features files --test files` (the crate's
//! dev-dependency on itself turns on the conformance suite).

#![cfg(feature = "files")]

#[cfg(not(feature = "conformance"))]
compile_error!(
    "the file backend's tests run the conformance suite: enable the feature `conformance` too (the crate's dev-dependency on itself normally does)"
);

use ccm_store::conformance::{self, Fault, Harness, Injected, Options, SuiteError};
use ccm_store::files::FileStore;
use ccm_store::{sessions, RecordStore, StoreError};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

// ----- temporary directories -----

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "ccm-files-{label}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ----- the layout, read and damaged the way another program would -----

/// The directory of session `id` (the tests use ids that are their own file names).
fn session_dir(root: &Path, id: &str) -> PathBuf {
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "the layout helpers take plain ids"
    );
    root.join("sessions").join(id)
}

/// The numbers of a session's commit line: revision, seq_end and committed data length.
fn commit_numbers(dir: &Path) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(dir.join("commit")).expect("a commit");
    let line = text.lines().next().expect("a first line");
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line:?}"))
    };
    (field("revision"), field("seq_end"), field("data"))
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Offset and length in `records.dat` of the version of message `seq` the commit sees.
fn message_text_range(dir: &Path, seq: u64) -> (u64, u64) {
    let (revision, _, _) = commit_numbers(dir);
    let index = std::fs::read(dir.join("messages.idx")).expect("a message index");
    let row = &index[seq as usize * 64..seq as usize * 64 + 64];
    (0..2)
        .map(|slot| &row[slot * 32..slot * 32 + 32])
        .filter(|slot| slot.iter().any(|b| *b != 0) && read_u64(slot, 16) <= revision)
        .max_by_key(|slot| read_u64(slot, 16))
        .map(|slot| (read_u64(slot, 0), read_u64(slot, 8)))
        .unwrap_or_else(|| panic!("message {seq} has no committed version"))
}

fn damage_message_files(root: &Path, id: &str, seq: u64) {
    let dir = session_dir(root, id);
    let (offset, len) = message_text_range(&dir, seq);
    let path = dir.join("records.dat");
    let mut data = std::fs::read(&path).expect("records");
    data[offset as usize..(offset + len) as usize].fill(b'#');
    std::fs::write(&path, data).expect("damaging a message");
}

/// Removes message `seq`: its index row and its entry in its log's file.
fn remove_message_files(root: &Path, id: &str, seq: u64) {
    let dir = session_dir(root, id);
    let index_path = dir.join("messages.idx");
    let mut index = std::fs::read(&index_path).expect("a message index");
    index[seq as usize * 64..seq as usize * 64 + 64].fill(0);
    std::fs::write(&index_path, index).expect("clearing the row");
    for entry in std::fs::read_dir(dir.join("logs")).expect("logs") {
        let path = entry.expect("an entry").path();
        let bytes = std::fs::read(&path).expect("a log");
        if bytes.len() < 256 {
            continue;
        }
        let mut kept = bytes[..256].to_vec();
        for chunk in bytes[256..].chunks(16) {
            if chunk.len() < 16 || read_u64(chunk, 0) != seq {
                kept.extend_from_slice(chunk);
            }
        }
        if kept.len() != bytes.len() {
            std::fs::write(&path, kept).expect("rewriting a log");
        }
    }
}

/// Keeps the commit's line of numbers and replaces the row after it.
fn damage_row_files(root: &Path, id: &str) {
    let path = session_dir(root, id).join("commit");
    let text = std::fs::read_to_string(&path).expect("a commit");
    let line = text.lines().next().expect("a first line");
    std::fs::write(&path, format!("{line}\nthis is not a session row\n"))
        .expect("damaging the row");
}

/// The host name, as the lock's owner files name it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// The id of a process that has exited (and been reaped), so that no process has it now.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("`true` runs");
    let pid = child.id();
    child.wait().expect("`true` exits");
    pid
}

/// The owner file of session `id`'s lock, as a Node process that held it left it.
fn left_owner(root: &Path, id: &str, pid: u32, start: &str) -> PathBuf {
    let path = root.join("locks").join(format!("{id}.lock.owner"));
    let text = format!(
        r#"{{"pid":{pid},"host":"{}","time_ms":{},"holder":"node","start":"{start}","thread":0,"nonce":"left"}}"#,
        host_name(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    std::fs::write(&path, &text).expect("writing an owner file");
    path
}

/// What a process killed while it appended a save's records left: bytes past the committed
/// end of `records.dat` and the temporary file of its commit.
fn killed_save_files(root: &Path, id: &str) {
    let dir = session_dir(root, id);
    let mut data = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("records.dat"))
        .expect("records");
    std::io::Write::write_all(&mut data, b"{\"role\":\"user\",\"content\":\"half a rec")
        .expect("appending");
    std::fs::write(
        dir.join(format!("commit.tmp-{}-0", dead_pid())),
        b"ccm-files-commit 1 revision=",
    )
    .expect("a temporary commit");
}

/// Damages the files of the session in the directory given.
type Damage = fn(&Path);

/// Kinds of damage that make a whole session unreadable, each as a failing disk or another
/// program leaves it, in the session's directory.
const FILE_DAMAGE: [(&str, Damage); 9] = [
    ("the commit's first line is garbled", |dir| {
        let text = std::fs::read_to_string(dir.join("commit")).unwrap();
        std::fs::write(
            dir.join("commit"),
            text.replace("ccm-files-commit 1", "ccm-fXles-commit 1"),
        )
        .unwrap();
    }),
    ("the commit's row is cut", |dir| {
        let text = std::fs::read_to_string(dir.join("commit")).unwrap();
        std::fs::write(dir.join("commit"), &text[..text.find('\n').unwrap() + 40]).unwrap();
    }),
    ("the commit is empty", |dir| {
        std::fs::write(dir.join("commit"), "").unwrap()
    }),
    ("records.dat is cut short", |dir| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("records.dat"))
            .unwrap();
        file.set_len(file.metadata().unwrap().len() - 300).unwrap();
    }),
    ("records.dat is missing", |dir| {
        std::fs::remove_file(dir.join("records.dat")).unwrap()
    }),
    ("the message index is cut short", |dir| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("messages.idx"))
            .unwrap();
        file.set_len(64).unwrap();
    }),
    ("the ambient log's header is garbled", |dir| {
        let path = dir.join("logs").join("ambient.seq");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[..12].fill(b'!');
        std::fs::write(&path, bytes).unwrap();
    }),
    ("the metrics index is missing", |dir| {
        std::fs::remove_file(dir.join("metrics.idx")).unwrap()
    }),
    ("the last record's text is overwritten", |dir| {
        let path = dir.join("records.dat");
        let mut bytes = std::fs::read(&path).unwrap();
        let end = bytes.len();
        bytes[end - 20..].fill(b'{');
        std::fs::write(&path, bytes).unwrap();
    }),
];

/// Files under `dir` that an atomic replace or a lock takeover makes and removes.
fn temporaries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            found.extend(temporaries(&path));
        } else if name.contains(".tmp-") || name.contains(".stale-") || name.ends_with(".break") {
            found.push(path.display().to_string());
        }
    }
    found
}

// ----- the conformance suite -----

struct FilesHarness {
    dirs: Vec<TempDir>,
}

impl Harness for FilesHarness {
    type Store = FileStore;

    async fn fresh(&mut self) -> FileStore {
        let dir = TempDir::new("suite");
        let store = FileStore::open(dir.path()).expect("a fresh store");
        self.dirs.push(dir);
        store
    }

    async fn second_handle(&mut self, store: &FileStore) -> FileStore {
        FileStore::open(store.dir()).expect("a second handle")
    }

    async fn damage_message(&mut self, store: &FileStore, id: &str, seq: u64) {
        damage_message_files(store.dir(), id, seq);
    }

    async fn remove_message(&mut self, store: &FileStore, id: &str, seq: u64) {
        remove_message_files(store.dir(), id, seq);
    }

    async fn damage_row(&mut self, store: &FileStore, id: &str) {
        damage_row_files(store.dir(), id);
    }

    async fn inject(&mut self, store: &FileStore, id: &str, fault: Fault) -> Injected {
        let root = store.dir();
        match fault {
            Fault::LockOfDeadProcess => {
                left_owner(root, id, dead_pid(), "1");
            }
            Fault::LockOfReusedProcessId => {
                // This test's parent runs, and started long before the time written here.
                left_owner(root, id, std::os::unix::process::parent_id(), "1");
            }
            Fault::InterruptedLockTakeover => {
                let owner = left_owner(root, id, dead_pid(), "1");
                let mut mark = owner.into_os_string();
                mark.push(".break");
                let breaker = left_owner(root, "breaker", dead_pid(), "1");
                std::fs::rename(breaker, mark).expect("a break file");
            }
            Fault::SaveKilledBeforeCommit => killed_save_files(root, id),
        }
        Injected::Done
    }

    fn damage_kinds(&self) -> Vec<String> {
        FILE_DAMAGE
            .iter()
            .map(|(kind, _)| kind.to_string())
            .collect()
    }

    async fn damage(&mut self, store: &FileStore, id: &str, kind: &str) {
        let (_, damage) = FILE_DAMAGE
            .iter()
            .find(|(name, _)| *name == kind)
            .expect("a kind the harness named");
        damage(&session_dir(store.dir(), id));
    }

    fn leftovers(&self, store: &FileStore) -> Result<Vec<String>, &'static str> {
        Ok(temporaries(store.dir()))
    }

    fn clock_ms(&self) -> f64 {
        conformance::system_clock_ms()
    }

    fn bytes_written(&self, store: &FileStore) -> Option<u64> {
        Some(store.bytes_written())
    }
}

#[tokio::test]
async fn conformance_suite() {
    let mut harness = FilesHarness { dirs: Vec::new() };
    let report = conformance::run(&mut harness, Options::default()).await;
    println!("{}", report.table());
    report.assert_passed();
}

// ----- real processes -----

/// What a child process is asked to do, in this variable: `save <dir>` or
/// `race <dir> <label>`.
const CHILD_TASK: &str = "CCM_FILES_TEST_CHILD_TASK";

/// Not a test of its own: the body of the child processes the process tests below start
/// (this test binary, run again with `--exact child_process`). Without the variable
/// [`CHILD_TASK`] it returns at once, so that it passes in an ordinary test run.
#[tokio::test]
async fn child_process() {
    let Ok(task) = std::env::var(CHILD_TASK) else {
        return;
    };
    let parts: Vec<&str> = task.splitn(3, ' ').collect();
    match parts.as_slice() {
        ["save", dir] => {
            let store = FileStore::open(dir).expect("the store");
            let outcome = conformance::save_until_killed(&store, "killed").await;
            panic!("saving stopped before the kill: {outcome:?}");
        }
        ["race", dir, label] => {
            let store = FileStore::open(dir).expect("the store");
            let (accepted, refused) = conformance::race_turns(&store, "raced", label, 40)
                .await
                .expect("the racer's turns");
            println!("raced {label}: accepted {accepted}, refused {refused}");
        }
        other => panic!("unknown child task {other:?}"),
    }
}

fn spawn_child(task: &str) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_TASK, task)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("a child process")
}

/// Whether a write was interrupted between its first change and its commit: `records.dat`
/// runs past the committed length, or the intent builds on the committed revision.
fn interrupted_mid_save(root: &Path, id: &str) -> bool {
    let dir = session_dir(root, id);
    let (revision, _, data_len) = commit_numbers(&dir);
    let data = std::fs::metadata(dir.join("records.dat")).map_or(0, |m| m.len());
    let intent_base = std::fs::read(dir.join("intent"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|intent| intent.get("base")?.as_u64());
    data > data_len || intent_base == Some(revision)
}

#[tokio::test]
async fn killed_in_the_middle_of_a_save() {
    let dir = TempDir::new("kill");
    // Delays after the child's first reported save: mostly within a save or two, some
    // longer so that the session grows between rounds.
    let delays_ms = [
        0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 7, 9, 12, 15, 20, 30, 50, 80,
    ];
    let mut interrupted = 0;
    let mut lines = Vec::new();
    for (round, delay) in delays_ms.iter().enumerate() {
        let mut child = spawn_child(&format!("save {}", dir.path().display()));
        let stdout = child.stdout.take().expect("piped");
        let (sender, receiver) = std::sync::mpsc::channel::<u64>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // libtest writes `test child_process ... ` before the child's first line.
                let report = line.split_once("saved ").map(|(_, n)| n.trim());
                if let Some(n) = report.and_then(|n| n.parse().ok()) {
                    if sender.send(n).is_err() {
                        break;
                    }
                }
            }
        });
        let first = receiver
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("round {round}: the child reported no save"));
        std::thread::sleep(Duration::from_millis(*delay));
        child.kill().expect("killing the child");
        child.wait().expect("reaping the child");
        reader.join().expect("the reader thread");
        let last = receiver.try_iter().fold(first, u64::max);
        let mid_save = interrupted_mid_save(dir.path(), "killed");
        interrupted += usize::from(mid_save);
        let store = FileStore::open(dir.path()).expect("the store");
        let revision = conformance::check_after_kill(&store, "killed", last)
            .await
            .unwrap_or_else(|e| panic!("round {round} (killed {delay} ms after a save): {e}"));
        lines.push(format!(
            "  round {round:>2}: killed {delay:>2} ms after the first save; last reported revision {last}, stored {revision}{}",
            if mid_save { ", killed inside a save" } else { "" }
        ));
    }
    println!(
        "kill loop: {} rounds, {interrupted} killed inside a save, every one opened cleanly\n{}",
        delays_ms.len(),
        lines.join("\n")
    );
}

#[tokio::test]
async fn two_processes_race_on_one_session() {
    let dir = TempDir::new("race");
    let started = Instant::now();
    let children: Vec<(String, Child)> = ["a", "b"]
        .iter()
        .map(|label| {
            let task = format!("race {} {label}", dir.path().display());
            (label.to_string(), spawn_child(&task))
        })
        .collect();
    for (label, child) in children {
        let output = child.wait_with_output().expect("a racer");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "racer {label} failed: {stdout}");
        for line in stdout
            .lines()
            .filter_map(|l| l.find("raced ").map(|at| &l[at..]))
        {
            println!("{line}");
        }
    }
    let store = FileStore::open(dir.path()).expect("the store");
    conformance::check_after_race(&store, "raced", &["a", "b"], 40)
        .await
        .expect("every accepted turn stored once");
    println!("race: 2 processes × 40 turns in {:?}", started.elapsed());
}

// ----- the layout -----

/// A session of `turns` scripted turns saved after each one.
async fn saved(store: &FileStore, id: &str, turns: u64) -> ccm_core::Session {
    let mut session = conformance::new_session();
    for n in 0..turns {
        conformance::scripted_turn(&mut session, n);
        if n == 0 {
            sessions::insert::<_, SuiteError>(store, id, &mut session, id, 1.0, true)
                .await
                .expect("created");
        } else {
            sessions::save::<_, SuiteError>(store, id, &mut session, 1.0 + n as f64)
                .await
                .expect("saved");
        }
    }
    session
}

async fn export_json(store: &FileStore, id: &str) -> (String, Vec<String>) {
    let document = sessions::export_document::<_, SuiteError>(store, id, |_| None)
        .await
        .expect("an export");
    let repairs = document.repairs.clone();
    (serde_json::to_string(&document).expect("json"), repairs)
}

#[tokio::test]
async fn a_torn_append_is_ignored_and_cut_by_the_next_save() {
    let dir = TempDir::new("torn");
    let store = FileStore::open(dir.path()).expect("a store");
    let mut session = saved(&store, "torn", 10).await;
    let (before, _) = export_json(&store, "torn").await;
    let files = session_dir(dir.path(), "torn");
    // What a writer killed after its appends leaves: text past the committed length, and a
    // torn entry at the end of the ambient log.
    let append = |name: &str, bytes: &[u8]| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(files.join(name))
            .expect("an existing file");
        file.write_all(bytes).expect("appending");
    };
    append("records.dat", b"{\"log\":{\"kind\":\"ambient\"},\"mess");
    append("logs/ambient.seq", &[0xAB; 11]);
    let (after, repairs) = export_json(&store, "torn").await;
    assert_eq!(after, before, "the torn append changed what is read");
    assert!(repairs.is_empty(), "{repairs:?}");
    let (_, problems) = sessions::open::<_, SuiteError>(&store, "torn", conformance::counter_for)
        .await
        .map(|(s, _, p)| (s, p))
        .expect("opens");
    assert!(problems.is_empty(), "{problems:?}");

    // Turn 11 talks in the ambient log (turn 10 concludes an effort): a writer cuts the
    // remains at the end of the logs it appends to.
    for n in [10, 11] {
        conformance::scripted_turn(&mut session, n);
        sessions::save::<_, SuiteError>(&store, "torn", &mut session, 99.0 + n as f64)
            .await
            .expect("the next save");
    }
    let (_, _, data_len) = commit_numbers(&files);
    let size = std::fs::metadata(files.join("records.dat"))
        .expect("records")
        .len();
    assert_eq!(
        size, data_len,
        "the torn text was not cut before the append"
    );
    let log = std::fs::metadata(files.join("logs/ambient.seq"))
        .expect("log")
        .len();
    assert_eq!((log - 256) % 16, 0, "the torn log entry was not cut");
    let (exported, repairs) = export_json(&store, "torn").await;
    assert!(repairs.is_empty(), "{repairs:?}");
    assert_eq!(exported, session.to_json().expect("the session's document"));
}

#[tokio::test]
async fn ids_never_reach_outside_the_directory() {
    let dir = TempDir::new("ids");
    let root = dir.path().join("store");
    let store = FileStore::open(&root).expect("a store");
    for id in ["../escape", "a/b", "Upper.Case", "..", "日本語"] {
        saved(&store, id, 2).await;
    }
    let outside: Vec<_> = std::fs::read_dir(dir.path())
        .expect("the parent")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("store")]);
    let mut ids: Vec<String> = sessions::list(&store)
        .await
        .expect("a listing")
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["..", "../escape", "Upper.Case", "a/b", "日本語"]);
    store.delete("../escape").await.expect("deleted");
    assert!(matches!(
        store.load("../escape").await,
        Err(StoreError::NotFound { .. })
    ));
    let session = conformance::new_session();
    let batch = session.full_write_batch().expect("a batch");
    for refused in [String::new(), "x".repeat(300)] {
        let mode = ccm_store::WriteMode::Create {
            now_ms: 0.0,
            name: "refused".into(),
        };
        match store.write(&refused, &batch, mode).await {
            Err(StoreError::Storage(_)) => {}
            other => panic!("the id {refused:?} gave {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreadable_commit_lists_the_session_as_damaged_and_exports_its_records() {
    let dir = TempDir::new("commit");
    let store = FileStore::open(dir.path()).expect("a store");
    saved(&store, "broken", 12).await;
    std::fs::write(
        session_dir(dir.path(), "broken").join("commit"),
        b"\x00\x01 not a commit",
    )
    .expect("damaging the commit");
    let listed = sessions::list(&store).await.expect("a listing");
    assert!(listed[0].damaged.is_some(), "{listed:?}");
    let records = store.read_all("broken").await.expect("its records");
    assert!(records.row.is_err());
    assert!(
        records.messages.len() >= 20,
        "{} messages",
        records.messages.len()
    );
    let (_, repairs) = export_json(&store, "broken").await;
    assert!(!repairs.is_empty());
}
