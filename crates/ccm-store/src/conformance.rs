//! The conformance suite: the storage contract, checked against any [`RecordStore`].
//!
//! Every backend's tests run [`run`] with a [`Harness`] that gives the suite fresh storage, a
//! second handle on the same storage (what another tab, process or machine opens) and a way to
//! damage records the way disks, crashes and other programs do. The suite is the only place
//! the contract is tested; a backend's own tests keep what is specific to it (its layout, its
//! connection handling).
//!
//! What crashed and concurrent processes leave behind (a dead process's lock, a save killed
//! before its commit, a delete meeting a save, damage that makes a whole session unreadable,
//! temporary files) is checked by the cases of [`faults`], with the crashes each backend's
//! harness fakes through [`Harness::inject`].
//!
//! Two properties need real processes and are driven from each native backend's tests with
//! the steps here: [`save_until_killed`] / [`check_after_kill`] (a process killed in the
//! middle of a save) and [`race_turns`] / [`check_after_race`] (two processes writing one
//! session).

use crate::backend::{RecordStore, WriteMode};
use crate::error::StoreError;
use crate::records::{encode, SessionRow};
use crate::sessions::{self, SessionInfo};
use ccm_core::persistence::{LogRef, SessionHeader, WriteBatch};
use ccm_core::snapshot::SessionDocument;
use ccm_core::tokens::{ApproximateCounter, TokenCounter};
use ccm_core::tools::name as tool;
use ccm_core::{Config, Session, SnapshotError, TurnError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What the suite needs from a backend's tests besides the store itself.
#[allow(
    async_fn_in_trait,
    reason = "awaited by the backend's own test executor, as RecordStore is"
)]
pub trait Harness {
    /// The backend under test.
    type Store: RecordStore;

    /// A store over fresh, empty storage (a new directory, database schema or namespace).
    async fn fresh(&mut self) -> Self::Store;

    /// A second, independent handle on the storage behind `store`: what another tab, process
    /// or machine opens. It must not share caches or locks held in memory with `store`.
    async fn second_handle(&mut self, store: &Self::Store) -> Self::Store;

    /// Replaces the stored text of message `seq` of session `id` with text that is not a
    /// record (as a damaged disk or another program would).
    async fn damage_message(&mut self, store: &Self::Store, id: &str, seq: u64);

    /// Removes the record of message `seq` of session `id`, leaving the others.
    async fn remove_message(&mut self, store: &Self::Store, id: &str, seq: u64);

    /// Replaces the stored row (header) of session `id` with text that is not a row.
    async fn damage_row(&mut self, store: &Self::Store, id: &str);

    /// Leaves `fault` in the storage of session `id` as a crashed process would, or says in one
    /// line why this backend's storage cannot hold it.
    async fn inject(&mut self, store: &Self::Store, id: &str, fault: Fault) -> Injected;

    /// The kinds of damage this backend's storage can have that make a whole session
    /// unreadable, by name. A store of records under keys has one, its row; the file store
    /// names the ways its files can be cut, lost or overwritten.
    fn damage_kinds(&self) -> Vec<String> {
        vec![faults::ROW_DAMAGE.to_string()]
    }

    /// Damages session `id` as `kind` (one of [`damage_kinds`](Harness::damage_kinds)) says.
    async fn damage(&mut self, store: &Self::Store, id: &str, kind: &str) {
        assert_eq!(kind, faults::ROW_DAMAGE, "a kind the harness does not name");
        self.damage_row(store, id).await;
    }

    /// The temporary files in the storage behind `store` (what an atomic replace or a lock
    /// takeover makes and removes), or why the backend has none.
    fn leftovers(&self, store: &Self::Store) -> Result<Vec<String>, &'static str>;

    /// Milliseconds of a clock that runs where the test runs (the suite has no clock of its
    /// own: it runs in browsers too), to time a save after a crash.
    fn clock_ms(&self) -> f64;

    /// Bytes this handle has written to its storage so far (record texts, rows, indexes and
    /// whatever else the backend writes), for the check that a save costs the same at any
    /// length of conversation. `None` when the backend cannot count them; the suite then
    /// measures the records handed to it.
    fn bytes_written(&self, store: &Self::Store) -> Option<u64>;
}

/// Milliseconds since the epoch by the system's clock: [`Harness::clock_ms`] for native
/// harnesses (wasm32 in a browser has no such clock; its harnesses read JavaScript's).
#[cfg(not(target_arch = "wasm32"))]
pub fn system_clock_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The properties [`run`] checks, in order, with what each means: those of this module, then
/// those of [`faults`].
pub const PROPERTIES: &[(&str, &str)] = &[
    (
        "round_trip",
        "a conversation saved turn by turn exports byte for byte as the session's own document, and opens with the same working context",
    ),
    (
        "working_set_only",
        "opening reads the working set; concluded logs, older messages and telemetry are read on demand",
    ),
    (
        "incremental",
        "the bytes a save writes do not grow with the conversation (late turns within 1.5× of early ones)",
    ),
    (
        "stale_writer",
        "a save that builds on an older revision is refused with `conflict`, writes nothing, and keeps its turns for a retry",
    ),
    (
        "racing_writers",
        "two handles saving the same revision at once: exactly one wins, the other gets `conflict`",
    ),
    (
        "damaged_records",
        "unreadable and missing messages are held, reported on open, kept through saves and exported as a document that imports",
    ),
    (
        "damaged_row",
        "a session whose row cannot be read is listed as damaged, refuses to open with `storage`, and still exports",
    ),
    (
        "list_rename_delete",
        "sessions are listed newest first; renaming keeps the revision; deleting removes every record; unknown ids are `not_found`",
    ),
    (
        "export_import",
        "an export imports as a new session whose export is the same document",
    ),
    faults::PROPERTIES[0],
    faults::PROPERTIES[1],
    faults::PROPERTIES[2],
    faults::PROPERTIES[3],
    faults::PROPERTIES[4],
    faults::PROPERTIES[5],
];

/// The outcome of each property for one backend: a row of the conformance matrix.
#[derive(Debug, Clone)]
pub struct Report {
    /// The backend's kind.
    pub backend: String,
    /// Each property's name and its failure, if it failed.
    pub results: Vec<(&'static str, Result<(), String>)>,
    /// Bytes written per save early and late in the incremental check, and the turns at which
    /// they were measured.
    pub incremental: Option<Incremental>,
    /// For each fault of [`faults`], whether the harness injected it or why the backend
    /// cannot hold it: what the crash cases ran against.
    pub faults: Vec<String>,
}

/// What the incremental check measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Incremental {
    /// The turn of the early measurement.
    pub early_turn: u64,
    /// Mean bytes per save around it.
    pub early_bytes: f64,
    /// The turn of the late measurement.
    pub late_turn: u64,
    /// Mean bytes per save around it.
    pub late_bytes: f64,
    /// Whether the backend counted its own writes (otherwise the records it was handed).
    pub counted_by_backend: bool,
}

impl Report {
    /// One line per property, `ok` or the failure, for a test's output and the matrix.
    pub fn table(&self) -> String {
        let mut out = format!("conformance of {}:\n", self.backend);
        for (name, result) in &self.results {
            match result {
                Ok(()) => out.push_str(&format!("  {name:<20} ok\n")),
                Err(problem) => out.push_str(&format!("  {name:<20} FAILED: {problem}\n")),
            }
        }
        if let Some(m) = &self.incremental {
            out.push_str(&format!(
                "  bytes per save: {:.0} at turn {}, {:.0} at turn {} ({})\n",
                m.early_bytes,
                m.early_turn,
                m.late_bytes,
                m.late_turn,
                if m.counted_by_backend {
                    "counted by the backend"
                } else {
                    "records handed to it"
                }
            ));
        }
        for fault in &self.faults {
            out.push_str(&format!("  fault {fault}\n"));
        }
        out
    }

    /// Panics with the table when any property failed.
    pub fn assert_passed(&self) {
        if self.results.iter().any(|(_, r)| r.is_err()) {
            panic!("{}", self.table());
        }
    }
}

/// How long the incremental check's conversation is; backends whose saves are slow in tests
/// (a browser's IndexedDB) may pass a shorter one, and the benchmark runs 3,000 turns.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Turns of the incremental check's conversation.
    pub incremental_turns: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            incremental_turns: 600,
        }
    }
}

/// A failure of one step, for the report.
type Check = Result<(), String>;

fn fail<T>(what: &str, error: impl std::fmt::Display) -> Result<T, String> {
    Err(format!("{what}: {error}"))
}

macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+));
        }
    };
}

// After the macro, which the module's cases use too.
pub mod faults;
pub use faults::{Fault, Injected};

/// Runs every property against the harness's backend and reports each.
pub async fn run<H: Harness>(harness: &mut H, options: Options) -> Report {
    let backend = harness.fresh().await.kind().to_string();
    let mut results = Vec::new();
    results.push(("round_trip", round_trip(harness).await));
    results.push(("working_set_only", working_set_only(harness).await));
    let incremental = incremental(harness, options).await;
    let measured = incremental.as_ref().ok().copied();
    results.push((
        "incremental",
        incremental.and_then(|m| {
            let within = m.late_bytes.partial_cmp(&(m.early_bytes * 1.5))
                != Some(std::cmp::Ordering::Greater);
            ensure!(
                within,
                "a save at turn {} wrote {:.0} bytes, at turn {} {:.0}: more than 1.5×",
                m.late_turn,
                m.late_bytes,
                m.early_turn,
                m.early_bytes
            );
            Ok(())
        }),
    ));
    results.push(("stale_writer", stale_writer(harness).await));
    results.push(("racing_writers", racing_writers(harness).await));
    results.push(("damaged_records", damaged_records(harness).await));
    results.push(("damaged_row", damaged_row(harness).await));
    results.push(("list_rename_delete", list_rename_delete(harness).await));
    results.push(("export_import", export_import(harness).await));
    let (fault_results, faults) = faults::run(harness).await;
    results.extend(fault_results);
    Report {
        backend,
        results,
        incremental: measured,
        faults,
    }
}

// ----- conversations -----

/// A session that counts with the approximation, so the suite needs no rank tables.
pub fn new_session() -> Session {
    Session::with_counter(Config::default(), counter()).expect("the default configuration")
}

fn counter() -> Arc<dyn TokenCounter> {
    Arc::new(ApproximateCounter)
}

/// The counter the suite opens every stored session with.
pub fn counter_for(_: &SessionHeader) -> Result<Arc<dyn TokenCounter>, SuiteError> {
    Ok(counter())
}

/// The errors of the session operations, in one type for the suite.
#[derive(Debug)]
pub enum SuiteError {
    /// The store refused.
    Store(StoreError),
    /// The core refused.
    Snapshot(SnapshotError),
    /// A turn operation out of order.
    Turn(TurnError),
}

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SuiteError::Store(e) => write!(f, "{} ({})", e, e.code()),
            SuiteError::Snapshot(e) => write!(f, "{e}"),
            SuiteError::Turn(e) => write!(f, "{e}"),
        }
    }
}

impl From<StoreError> for SuiteError {
    fn from(e: StoreError) -> Self {
        SuiteError::Store(e)
    }
}

impl From<SnapshotError> for SuiteError {
    fn from(e: SnapshotError) -> Self {
        SuiteError::Snapshot(e)
    }
}

impl From<TurnError> for SuiteError {
    fn from(e: TurnError) -> Self {
        SuiteError::Turn(e)
    }
}

impl SuiteError {
    /// The store's code, when the store refused.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            SuiteError::Store(e) => Some(e.code()),
            _ => None,
        }
    }
}

/// Turn `n` of the suite's conversation: every sixth turn opens an effort, every sixth
/// concludes it, the others talk, in it or in ambient chat, with an attachment now and then.
/// Times rise with `n`, so every stored record is distinct.
pub fn scripted_turn(session: &mut Session, n: u64) {
    let now = 1_700_000_000_000 + n * 60_000;
    let topic = [
        "cache warmup",
        "login latency",
        "invoice export",
        "birthday party",
        "search ranking",
    ][(n / 6 % 5) as usize];
    match n % 6 {
        0 => {
            session
                .begin_turn(&format!("Let's look at the {topic}, round {n}."), now)
                .expect("between turns");
            let args = format!(r#"{{"name": "{topic} {n}"}}"#);
            session.execute_tool(tool::OPEN_EFFORT, &args);
            session.end_turn("Opened it.", now + 1).expect("in a turn");
        }
        4 => {
            session
                .begin_turn("That settles it, we keep the second option.", now)
                .expect("between turns");
            let args =
                format!(r#"{{"summary": "{topic}: decided on the second option in turn {n}."}}"#);
            session.execute_tool(tool::CLOSE_EFFORT, &args);
            session.end_turn("Concluded.", now + 1).expect("in a turn");
        }
        3 => {
            session
                .begin_turn(&format!("Here is the log of step {n}."), now)
                .expect("between turns");
            if n % 12 == 3 {
                let text = format!("line {n}: timeout after 30 s\n").repeat(20);
                session
                    .attach(
                        &format!("step-{n}.log"),
                        ccm_core::compaction::AttachmentKind::File,
                        &text,
                        None,
                    )
                    .expect("in a turn");
            }
            session
                .end_turn(&format!("Step {n} timed out; retry with backoff."), now + 1)
                .expect("in a turn");
        }
        _ => {
            session
                .begin_turn(&format!("Message {n} about the {topic}: what next?"), now)
                .expect("between turns");
            session
                .end_turn(&format!("Answer {n}: try the next measurement."), now + 1)
                .expect("in a turn");
        }
    }
}

/// A session of `turns` scripted turns, created in `store` as `id` after the first and saved
/// after every turn.
async fn saved_conversation<S: RecordStore>(
    store: &S,
    id: &str,
    turns: u64,
) -> Result<Session, String> {
    let mut session = new_session();
    for n in 0..turns {
        scripted_turn(&mut session, n);
        if n == 0 {
            sessions::insert::<_, SuiteError>(store, id, &mut session, id, now_ms(n), true)
                .await
                .or_else(|e| fail("creating the session", e))?;
        } else {
            sessions::save::<_, SuiteError>(store, id, &mut session, now_ms(n))
                .await
                .or_else(|e| fail(&format!("saving turn {n}"), e))?;
        }
    }
    Ok(session)
}

fn now_ms(n: u64) -> f64 {
    1.7e12 + n as f64 * 60_000.0
}

async fn open<S: RecordStore>(store: &S, id: &str) -> Result<(Session, Vec<String>), SuiteError> {
    let (session, _, problems) = sessions::open::<_, SuiteError>(store, id, counter_for).await?;
    Ok((session, problems))
}

async fn export<S: RecordStore>(store: &S, id: &str) -> Result<SessionDocument, SuiteError> {
    sessions::export_document::<_, SuiteError>(store, id, |_| Some(counter())).await
}

fn document_json(document: &SessionDocument) -> String {
    serde_json::to_string(document).expect("documents serialise")
}

/// The request a session would send for `text`, as JSON: what "the same working context"
/// compares. A session opened from `stored` first reads the messages its automatic recall
/// shows, as a host's turn does.
async fn request_for<S: RecordStore>(
    session: &mut Session,
    text: &str,
    stored: Option<(&S, &str)>,
) -> Result<String, String> {
    session
        .begin_turn(text, 1_800_000_000_000)
        .or_else(|e| fail("beginning a turn", e))?;
    if let Some((store, id)) = stored {
        let needed = session.messages_needed_for_plan();
        let (messages, unreadable) = store
            .messages_by_seq(id, &needed)
            .await
            .or_else(|e| fail("reading the recalled messages", e))?;
        ensure!(
            unreadable.is_empty(),
            "recalled messages unreadable: {unreadable:?}"
        );
        session
            .attach_recalled_messages(messages)
            .or_else(|e| fail("attaching the recalled messages", e))?;
    }
    let plan = session.build_plan();
    let rendered = serde_json::to_string(&plan.messages).expect("messages serialise");
    session
        .abort_turn()
        .or_else(|e| fail("aborting the turn", e))?;
    Ok(rendered)
}

// ----- properties -----

async fn round_trip<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    let mut session = saved_conversation(&store, "round-trip", 40).await?;
    let expected = session
        .to_json()
        .or_else(|e| fail("the session's document", e))?;
    let reader = harness.second_handle(&store).await;
    let exported = export(&reader, "round-trip")
        .await
        .or_else(|e| fail("exporting", e))?;
    ensure!(
        exported.repairs.is_empty(),
        "a clean session exported with repairs: {:?}",
        exported.repairs
    );
    let exported = document_json(&exported);
    ensure!(
        exported == expected,
        "the export differs from the session's document ({} against {} bytes)",
        exported.len(),
        expected.len()
    );
    let (mut opened, problems) = open(&reader, "round-trip")
        .await
        .or_else(|e| fail("opening", e))?;
    ensure!(
        problems.is_empty(),
        "a clean session opened with problems: {problems:?}"
    );
    // A host completes the recall index of an opened session before its first request (the
    // automatic recall reads it); its steps read the stored messages by range.
    let problems =
        sessions::complete_recall_index::<_, SuiteError>(&reader, "round-trip", &mut opened)
            .await
            .or_else(|e| fail("completing the recall index", e))?;
    ensure!(
        problems.is_empty(),
        "the recall index read problems: {problems:?}"
    );
    ensure!(
        opened.header() == session.header(),
        "the opened session's header differs from the saved one"
    );
    let question = "What did we decide about the invoice export?";
    let (reopened, original) = (
        request_for(&mut opened, question, Some((&reader, "round-trip"))).await?,
        request_for::<H::Store>(&mut session, question, None).await?,
    );
    if reopened != original {
        let at = reopened
            .bytes()
            .zip(original.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let near = |text: &str| {
            text.get(at.saturating_sub(80)..(at + 120).min(text.len()))
                .unwrap_or("")
                .to_string()
        };
        return Err(format!(
            "the opened session builds another request than the saved one; at byte {at} it reads {:?} where the saved one reads {:?}",
            near(&reopened),
            near(&original)
        ));
    }
    Ok(())
}

async fn working_set_only<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    let session = saved_conversation(&store, "lazy", 30).await?;
    let (row, records) = store.load("lazy").await.or_else(|e| fail("loading", e))?;
    let request = row.header.load_request();
    let read_messages: usize =
        records.effort_logs.values().map(Vec::len).sum::<usize>() + records.ambient_tail.len();
    ensure!(
        records.ambient_tail.len() as u64 == request.ambient_tail,
        "the load read {} ambient messages where the header asks for {}",
        records.ambient_tail.len(),
        request.ambient_tail
    );
    let open_logs: Vec<&String> = records.effort_logs.keys().collect();
    ensure!(
        open_logs.iter().all(|id| request.effort_logs.contains(id)),
        "the load read logs the header does not ask for: {open_logs:?}"
    );
    ensure!(
        (read_messages as u64) < row.header.next_seq,
        "the load read every message ({read_messages} of {})",
        row.header.next_seq
    );
    // A concluded effort's log, read on demand, is the effort's whole log.
    let document = session.to_document().or_else(|e| fail("the document", e))?;
    let concluded = document
        .efforts
        .iter()
        .find(|e| !request.effort_logs.contains(&e.id) && !e.messages.is_empty())
        .ok_or("the conversation has no concluded effort")?;
    let (log, unreadable) = store
        .effort_log("lazy", &concluded.id)
        .await
        .or_else(|e| fail("reading a concluded log", e))?;
    ensure!(
        unreadable.is_empty(),
        "a clean log read with problems: {unreadable:?}"
    );
    ensure!(
        log == concluded.messages,
        "effort {}'s log read back differs ({} messages, {} stored)",
        concluded.id,
        log.len(),
        concluded.messages.len()
    );
    // Messages by number and by range, across logs.
    let (between, _) = store
        .messages_between("lazy", 3, 9)
        .await
        .or_else(|e| fail("reading messages 3..9", e))?;
    let seqs: Vec<u64> = between.iter().map(|m| m.message.seq).collect();
    ensure!(
        seqs == vec![3, 4, 5, 6, 7, 8],
        "messages 3..9 read as {seqs:?}"
    );
    let (by_seq, _) = store
        .messages_by_seq("lazy", &[1, 17, 10_000])
        .await
        .or_else(|e| fail("reading messages 1 and 17", e))?;
    let mut seqs: Vec<u64> = by_seq.iter().map(|m| m.message.seq).collect();
    seqs.sort_unstable();
    ensure!(
        seqs == vec![1, 17],
        "messages 1, 17 and 10,000 read as {seqs:?}"
    );
    ensure!(
        by_seq
            .iter()
            .all(|m| matches!(m.log, LogRef::Ambient | LogRef::Effort(_))),
        "messages read without their log"
    );
    Ok(())
}

async fn incremental<H: Harness>(harness: &mut H, options: Options) -> Result<Incremental, String> {
    let store = harness.fresh().await;
    let turns = options.incremental_turns.max(192);
    let mut session = new_session();
    let mut sizes = Vec::new();
    let counted_by_backend = harness.bytes_written(&store).is_some();
    for n in 0..turns {
        scripted_turn(&mut session, n);
        let before = harness.bytes_written(&store);
        let handed = batch_bytes(&session, n == 0)?;
        if n == 0 {
            sessions::insert::<_, SuiteError>(
                &store,
                "long",
                &mut session,
                "long",
                now_ms(n),
                true,
            )
            .await
            .or_else(|e| fail("creating", e))?;
        } else {
            sessions::save::<_, SuiteError>(&store, "long", &mut session, now_ms(n))
                .await
                .or_else(|e| fail(&format!("saving turn {n}"), e))?;
        }
        let written = match (before, harness.bytes_written(&store)) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => handed,
        };
        sizes.push(written as f64);
    }
    // Means over whole cycles of the script (12 turns), early and late, so both windows hold
    // the same kinds of turns. The early window starts once the working set is full (a
    // summary stays in memory for 20 turns after its last mention, and the script concludes
    // an effort every 6 turns): before that a save grows with the working set (its telemetry
    // lists what the request held), which is not the length of the conversation.
    let window = 24usize;
    let early_start = 96usize;
    let late_start = sizes.len() - window;
    let late_start = late_start - (late_start - early_start) % 12;
    let mean = |from: usize| sizes[from..from + window].iter().sum::<f64>() / window as f64;
    Ok(Incremental {
        early_turn: early_start as u64,
        early_bytes: mean(early_start),
        late_turn: late_start as u64,
        late_bytes: mean(late_start),
        counted_by_backend,
    })
}

/// Bytes of the records the next save hands to the store.
fn batch_bytes(session: &Session, first: bool) -> Result<u64, String> {
    let batch: WriteBatch = if first {
        session
            .full_write_batch()
            .or_else(|e| fail("the batch", e))?
    } else {
        session.write_batch().or_else(|e| fail("the batch", e))?
    };
    let mut bytes = encode(&batch.header).len();
    bytes += batch.efforts.iter().map(|r| encode(r).len()).sum::<usize>();
    bytes += batch
        .messages
        .iter()
        .map(|r| encode(r).len())
        .sum::<usize>();
    bytes += batch.metrics.iter().map(|r| encode(r).len()).sum::<usize>();
    bytes += batch
        .telemetry
        .iter()
        .map(|r| encode(r).len())
        .sum::<usize>();
    bytes += batch
        .attachments
        .iter()
        .map(|r| encode(r).len())
        .sum::<usize>();
    Ok(bytes as u64)
}

async fn stale_writer<H: Harness>(harness: &mut H) -> Check {
    let first = harness.fresh().await;
    saved_conversation(&first, "stale", 8).await?;
    let second = harness.second_handle(&first).await;
    let (mut a, _) = open(&first, "stale")
        .await
        .or_else(|e| fail("opening as A", e))?;
    let (mut b, _) = open(&second, "stale")
        .await
        .or_else(|e| fail("opening as B", e))?;
    scripted_turn(&mut a, 8);
    sessions::save::<_, SuiteError>(&first, "stale", &mut a, now_ms(8))
        .await
        .or_else(|e| fail("A's save", e))?;
    let expected = document_json(
        &export(&first, "stale")
            .await
            .or_else(|e| fail("export", e))?,
    );
    b.begin_turn(
        "B's own message, typed on the other device.",
        1_800_000_000_000,
    )
    .or_else(|e| fail("B's turn", e))?;
    b.end_turn("B's answer.", 1_800_000_000_001)
        .or_else(|e| fail("B's turn", e))?;
    let refused = sessions::save::<_, SuiteError>(&second, "stale", &mut b, now_ms(9)).await;
    match refused {
        Err(e) if e.code() == Some("conflict") => {}
        Err(e) => return fail("B's stale save failed with another error than conflict", e),
        Ok(_) => return Err("B's save on an older revision was accepted".into()),
    }
    let after = document_json(
        &export(&second, "stale")
            .await
            .or_else(|e| fail("export", e))?,
    );
    ensure!(
        after == expected,
        "the refused save changed the stored session"
    );
    let pending = b.write_batch().or_else(|e| fail("B's pending batch", e))?;
    ensure!(
        pending
            .messages
            .iter()
            .any(|m| m.message.content.contains("B's own message")),
        "B's refused turn is no longer pending for a retry"
    );
    // Reloading shows A's turn; B's turn can then be saved on top of it.
    let (mut reloaded, _) = open(&second, "stale")
        .await
        .or_else(|e| fail("reload", e))?;
    ensure!(
        reloaded.turn() == a.turn(),
        "the reload is at turn {}, A saved turn {}",
        reloaded.turn(),
        a.turn()
    );
    scripted_turn(&mut reloaded, 9);
    sessions::save::<_, SuiteError>(&second, "stale", &mut reloaded, now_ms(10))
        .await
        .or_else(|e| fail("saving after the reload", e))?;
    Ok(())
}

async fn racing_writers<H: Harness>(harness: &mut H) -> Check {
    let first = harness.fresh().await;
    saved_conversation(&first, "race", 6).await?;
    let second = harness.second_handle(&first).await;
    for round in 0..5u64 {
        let (mut a, _) = open(&first, "race")
            .await
            .or_else(|e| fail("opening A", e))?;
        let (mut b, _) = open(&second, "race")
            .await
            .or_else(|e| fail("opening B", e))?;
        scripted_turn(&mut a, 100 + round);
        scripted_turn(&mut b, 200 + round);
        let (ra, rb) = join(
            sessions::save::<_, SuiteError>(&first, "race", &mut a, now_ms(100 + round)),
            sessions::save::<_, SuiteError>(&second, "race", &mut b, now_ms(200 + round)),
        )
        .await;
        let wins = usize::from(ra.is_ok()) + usize::from(rb.is_ok());
        ensure!(
            wins == 1,
            "round {round}: {wins} of two racing saves were accepted"
        );
        for loser in [&ra, &rb].into_iter().filter_map(|r| r.as_ref().err()) {
            ensure!(
                loser.code() == Some("conflict"),
                "round {round}: the losing save failed with {loser} instead of a conflict"
            );
        }
        let winner = if ra.is_ok() { &a } else { &b };
        let stored = export(&first, "race")
            .await
            .or_else(|e| fail("export", e))?;
        // A session opened from a store is partly loaded; compare what both agree on.
        let stored_seq = stored.next_seq;
        ensure!(
            stored_seq == winner.header().next_seq,
            "round {round}: the stored session has {stored_seq} messages, the winner {}",
            winner.header().next_seq
        );
        ensure!(
            stored.repairs.is_empty(),
            "round {round}: the race left records that need repair: {:?}",
            stored.repairs
        );
    }
    Ok(())
}

async fn damaged_records<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    let session = saved_conversation(&store, "damaged", 30).await?;
    let document = session.to_document().or_else(|e| fail("the document", e))?;
    // One message of a concluded effort's log and one of the ambient tail.
    let concluded = document
        .efforts
        .iter()
        .find(|e| e.messages.len() >= 2 && !session.header().open.contains(&e.id))
        .ok_or("the conversation has no concluded effort")?;
    let damaged_seq = concluded.messages[1].seq;
    let removed_seq = document
        .ambient
        .last()
        .ok_or("the conversation has no ambient message")?
        .seq;
    harness.damage_message(&store, "damaged", damaged_seq).await;
    harness.remove_message(&store, "damaged", removed_seq).await;
    let reader = harness.second_handle(&store).await;
    let listed = sessions::list(&reader)
        .await
        .or_else(|e| fail("listing", e))?;
    ensure!(
        listed
            .iter()
            .any(|s| s.id == "damaged" && s.damaged.is_none()),
        "a session with damaged messages is not listed as readable: {listed:?}"
    );
    let (mut opened, problems) = open(&reader, "damaged")
        .await
        .or_else(|e| fail("opening with damaged messages", e))?;
    ensure!(
        !problems.is_empty(),
        "opening a session whose ambient tail lost message {removed_seq} reported nothing"
    );
    // The concluded log's damage shows when it is read.
    let (_, unreadable) = reader
        .effort_log("damaged", &concluded.id)
        .await
        .or_else(|e| fail("reading the damaged log", e))?;
    ensure!(
        !unreadable.is_empty(),
        "reading a log with an unreadable message reported nothing"
    );
    // A save after the damage neither repairs nor loses it silently.
    scripted_turn(&mut opened, 30);
    sessions::save::<_, SuiteError>(&reader, "damaged", &mut opened, now_ms(30))
        .await
        .or_else(|e| fail("saving after the damage", e))?;
    let exported = export(&reader, "damaged")
        .await
        .or_else(|e| fail("exporting the damaged session", e))?;
    ensure!(
        exported.repairs.len() >= 2,
        "the export lists {} repairs for one unreadable and one missing message: {:?}",
        exported.repairs.len(),
        exported.repairs
    );
    let json = document_json(&exported);
    let imported = Session::from_json_with_counter(&json, counter())
        .or_else(|e| fail("importing the damaged session's export", e))?;
    ensure!(
        imported.turn() == opened.turn(),
        "the export of the damaged session lost turns ({} of {})",
        imported.turn(),
        opened.turn()
    );
    Ok(())
}

async fn damaged_row<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    saved_conversation(&store, "headless", 12).await?;
    saved_conversation(&store, "healthy", 3).await?;
    harness.damage_row(&store, "headless").await;
    let reader = harness.second_handle(&store).await;
    let listed = sessions::list(&reader)
        .await
        .or_else(|e| fail("listing", e))?;
    let entry = listed
        .iter()
        .find(|s| s.id == "headless")
        .ok_or("a session with a damaged row is not listed")?;
    ensure!(
        entry.damaged.is_some(),
        "a damaged row is listed as readable"
    );
    ensure!(
        listed
            .iter()
            .any(|s| s.id == "healthy" && s.damaged.is_none()),
        "a damaged row hid another session"
    );
    match open(&reader, "headless").await {
        Err(e) if e.code() == Some("storage") => {}
        Err(e) => {
            return fail(
                "opening a damaged row failed with another error than storage",
                e,
            )
        }
        Ok(_) => return Err("a session with a damaged row opened".into()),
    }
    let exported = export(&reader, "headless")
        .await
        .or_else(|e| fail("exporting a session with a damaged row", e))?;
    ensure!(
        !exported.repairs.is_empty(),
        "the export does not say the row was lost"
    );
    let json = document_json(&exported);
    let imported =
        Session::from_json_with_counter(&json, counter()).or_else(|e| fail("importing it", e))?;
    ensure!(
        imported.header().next_seq >= 20,
        "the export of a damaged row kept {} messages of 24",
        imported.header().next_seq
    );
    Ok(())
}

async fn list_rename_delete<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    ensure!(
        sessions::list(&store)
            .await
            .or_else(|e| fail("listing", e))?
            .is_empty(),
        "fresh storage lists sessions"
    );
    for (id, turns) in [("older", 2), ("newer", 4)] {
        saved_conversation(&store, id, turns).await?;
    }
    let listed = sessions::list(&store)
        .await
        .or_else(|e| fail("listing", e))?;
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    ensure!(
        ids == ["newer", "older"],
        "listed as {ids:?}, newest first expected"
    );
    let newer: &SessionInfo = &listed[0];
    ensure!(
        newer.turn_count == 4.0 && newer.revision == 4.0 && newer.name == "newer",
        "the listing says {newer:?} for a session of 4 turns saved 4 times"
    );
    // A new session's id must be free.
    let mut other = new_session();
    scripted_turn(&mut other, 0);
    match sessions::insert::<_, SuiteError>(&store, "older", &mut other, "x", 0.0, false).await {
        Err(e) if e.code() == Some("conflict") => {}
        Err(e) => return fail("creating over a taken id failed with another error", e),
        Ok(_) => return Err("a session was created over an existing id".into()),
    }
    store
        .rename("older", "Renamed", 1.9e12)
        .await
        .or_else(|e| fail("renaming", e))?;
    let listed = sessions::list(&store)
        .await
        .or_else(|e| fail("listing", e))?;
    let renamed = listed
        .iter()
        .find(|s| s.id == "older")
        .ok_or("renamed session lost")?;
    ensure!(
        renamed.name == "Renamed" && renamed.revision == 2.0,
        "after renaming: {renamed:?}"
    );
    ensure!(
        listed[0].id == "older",
        "a renamed session is not listed first"
    );
    store
        .delete("older")
        .await
        .or_else(|e| fail("deleting", e))?;
    store
        .delete("older")
        .await
        .or_else(|e| fail("deleting an already deleted session", e))?;
    let reader = harness.second_handle(&store).await;
    let listed = sessions::list(&reader)
        .await
        .or_else(|e| fail("listing", e))?;
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    ensure!(ids == ["newer"], "after deleting: {ids:?}");
    for (what, outcome) in [
        ("opening", open(&reader, "older").await.map(|_| ())),
        ("exporting", export(&reader, "older").await.map(|_| ())),
    ] {
        match outcome {
            Err(e) if e.code() == Some("not_found") => {}
            Err(e) => return fail(&format!("{what} a deleted session"), e),
            Ok(()) => return Err(format!("{what} a deleted session succeeded")),
        }
    }
    let (messages, _) = reader
        .messages_by_seq("older", &[0, 1, 2])
        .await
        .unwrap_or_default();
    ensure!(
        messages.is_empty(),
        "a deleted session's messages are still read"
    );
    match reader.rename("older", "ghost", 2e12).await {
        Err(StoreError::NotFound { .. }) => {}
        other => return Err(format!("renaming a deleted session gave {other:?}")),
    }
    // A save to a session deleted meanwhile is a conflict: the writer learns its copy is gone.
    let (mut newer, _) = open(&store, "newer")
        .await
        .or_else(|e| fail("opening", e))?;
    store
        .delete("newer")
        .await
        .or_else(|e| fail("deleting", e))?;
    scripted_turn(&mut newer, 4);
    match sessions::save::<_, SuiteError>(&store, "newer", &mut newer, 2e12).await {
        Err(e) if e.code() == Some("conflict") => {}
        Err(e) => return fail("saving a deleted session", e),
        Ok(_) => return Err("a save recreated a deleted session".into()),
    }
    Ok(())
}

async fn export_import<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    saved_conversation(&store, "original", 25).await?;
    let exported = document_json(
        &export(&store, "original")
            .await
            .or_else(|e| fail("export", e))?,
    );
    let mut imported = Session::from_json_with_counter(&exported, counter())
        .or_else(|e| fail("importing the export", e))?;
    let row: SessionRow =
        sessions::insert::<_, SuiteError>(&store, "copy", &mut imported, "Copy", 1.9e12, false)
            .await
            .or_else(|e| fail("storing the import", e))?;
    ensure!(row.name == "Copy", "the import is named {:?}", row.name);
    let again = document_json(
        &export(&store, "copy")
            .await
            .or_else(|e| fail("export", e))?,
    );
    ensure!(
        again == exported,
        "the import's export differs from the original export"
    );
    Ok(())
}

// ----- processes -----

/// The child's side of the kill test: saves scripted turns of session `id` forever, printing
/// `saved <revision>` after each completed save (on stdout, flushed), until it is killed.
pub async fn save_until_killed<S: RecordStore>(store: &S, id: &str) -> Result<(), String> {
    use std::io::Write;
    let mut session = match open(store, id).await {
        Ok((session, _)) => session,
        Err(SuiteError::Store(StoreError::NotFound { .. })) => {
            let mut session = new_session();
            scripted_turn(&mut session, 0);
            sessions::insert::<_, SuiteError>(store, id, &mut session, id, 0.0, true)
                .await
                .or_else(|e| fail("creating", e))?;
            session
        }
        Err(e) => return fail("opening", e),
    };
    loop {
        let n = session.turn();
        scripted_turn(&mut session, n);
        let report = sessions::save::<_, SuiteError>(store, id, &mut session, now_ms(n))
            .await
            .or_else(|e| fail("saving", e))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "saved {}", report.revision).map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
}

/// The parent's side of the kill test, after the child was killed: the session opens cleanly
/// at the last revision the child reported, or at the one after it (a save that completed as
/// the kill arrived), and its export needs no repair.
pub async fn check_after_kill<S: RecordStore>(
    store: &S,
    id: &str,
    last_reported: u64,
) -> Result<u64, String> {
    let (session, problems) = open(store, id)
        .await
        .or_else(|e| fail("opening after the kill", e))?;
    ensure!(
        problems.is_empty(),
        "opening after the kill reported {problems:?}"
    );
    let revision = session.revision();
    ensure!(
        revision == last_reported || revision == last_reported + 1,
        "after the kill the session is at revision {revision}; the child last reported {last_reported}"
    );
    let exported = export(store, id).await.or_else(|e| fail("export", e))?;
    ensure!(
        exported.repairs.is_empty(),
        "the export after the kill needed repairs: {:?}",
        exported.repairs
    );
    Ok(revision)
}

/// One racing process's side: `turns` times, open session `id` (creating it if missing),
/// take a turn labelled `label` and save it; a refused save reloads and tries again. Returns
/// how many saves were accepted and how many were refused.
pub async fn race_turns<S: RecordStore>(
    store: &S,
    id: &str,
    label: &str,
    turns: u64,
) -> Result<(u64, u64), String> {
    let (mut accepted, mut refused) = (0, 0);
    while accepted < turns {
        let mut session = match open(store, id).await {
            Ok((session, _)) => session,
            Err(SuiteError::Store(StoreError::NotFound { .. })) => new_session(),
            Err(e) => return fail("opening", e),
        };
        let creating = session.revision() == 0;
        let text = format!("{label} turn {accepted}");
        session
            .begin_turn(&text, 1_800_000_000_000)
            .or_else(|e| fail("a turn", e))?;
        session
            .end_turn(&format!("ack {text}"), 1_800_000_000_001)
            .or_else(|e| fail("a turn", e))?;
        let outcome = if creating {
            sessions::insert::<_, SuiteError>(store, id, &mut session, id, 0.0, true)
                .await
                .map(|_| ())
        } else {
            sessions::save::<_, SuiteError>(store, id, &mut session, 1.8e12)
                .await
                .map(|_| ())
        };
        match outcome {
            Ok(()) => accepted += 1,
            Err(e) if e.code() == Some("conflict") => refused += 1,
            Err(e) => return fail("saving", e),
        }
    }
    Ok((accepted, refused))
}

/// The parent's side of the race, after every racer finished: each accepted turn of each
/// label is stored exactly once, and nothing else.
pub async fn check_after_race<S: RecordStore>(
    store: &S,
    id: &str,
    labels: &[&str],
    turns: u64,
) -> Result<(), String> {
    let exported = export(store, id).await.or_else(|e| fail("export", e))?;
    ensure!(
        exported.repairs.is_empty(),
        "the race needed repairs: {:?}",
        exported.repairs
    );
    let texts: Vec<&str> = exported
        .ambient
        .iter()
        .filter(|m| m.role == ccm_core::Role::User)
        .map(|m| m.content.as_str())
        .collect();
    for label in labels {
        for n in 0..turns {
            let text = format!("{label} turn {n}");
            let copies = texts.iter().filter(|t| **t == text).count();
            ensure!(copies == 1, "{text:?} is stored {copies} times");
        }
    }
    let expected = labels.len() as u64 * turns;
    ensure!(
        texts.len() as u64 == expected,
        "{} user messages stored, {expected} accepted",
        texts.len()
    );
    Ok(())
}

// ----- a join without a runtime -----

/// Polls two futures on one task until both are done: the racing check without tying the
/// suite to an executor.
fn join<A: Future, B: Future>(a: A, b: B) -> impl Future<Output = (A::Output, B::Output)> {
    Join {
        a: Box::pin(a),
        b: Box::pin(b),
        a_out: None,
        b_out: None,
    }
}

struct Join<A: Future, B: Future> {
    a: Pin<Box<A>>,
    b: Pin<Box<B>>,
    a_out: Option<A::Output>,
    b_out: Option<B::Output>,
}

impl<A: Future, B: Future> Unpin for Join<A, B> {}

impl<A: Future, B: Future> Future for Join<A, B> {
    type Output = (A::Output, B::Output);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.a_out.is_none() {
            if let Poll::Ready(out) = this.a.as_mut().poll(cx) {
                this.a_out = Some(out);
            }
        }
        if this.b_out.is_none() {
            if let Poll::Ready(out) = this.b.as_mut().poll(cx) {
                this.b_out = Some(out);
            }
        }
        match (this.a_out.take(), this.b_out.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                this.a_out = a;
                this.b_out = b;
                Poll::Pending
            }
        }
    }
}

/// Writes a session row through `store` as a create, for backends' own tests that need a
/// stored session without a conversation.
pub async fn create_empty<S: RecordStore>(store: &S, id: &str) -> Result<SessionRow, StoreError> {
    let session = new_session();
    let batch = session.full_write_batch().expect("a new session");
    store
        .write(
            id,
            &batch,
            WriteMode::Create {
                now_ms: 0.0,
                name: id.to_string(),
            },
        )
        .await
}
