//! Fuzzing in the suite: generated and mutated inputs at the session's boundaries (imported
//! documents, tool calls, stored records), each checked against the invariants that hold for
//! any input: nothing panics, a refused call changes nothing, no message is lost or duplicated,
//! and every export re-imports to the same bytes.
//!
//! `CCM_FUZZ_CASES` sets the cases per test (a small default keeps the normal suite to a few
//! seconds); `scripts/fuzz` runs the same tests with many more and prints the counts each test
//! reports. Native only (proptest).
#![cfg(not(target_arch = "wasm32"))]

use ccm_core::persistence::LoadedRecords;
use ccm_core::tools::TOOL_NAMES;
use ccm_core::{Message, Session};
use ccm_test_support::memory_store::MemoryStore;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Cases per test: `CCM_FUZZ_CASES`, else a number small enough for the normal suite.
fn cases() -> u32 {
    std::env::var("CCM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// Counts what one fuzz test tried and checked, and prints it at the end, so a long run can
/// report honest figures: an input is one generated case, a check one invariant evaluated.
struct Tally {
    name: &'static str,
    inputs: AtomicU64,
    checks: AtomicU64,
}

impl Tally {
    const fn new(name: &'static str) -> Tally {
        Tally {
            name,
            inputs: AtomicU64::new(0),
            checks: AtomicU64::new(0),
        }
    }

    fn input(&self) {
        self.inputs.fetch_add(1, Ordering::Relaxed);
    }

    /// Asserts one invariant and counts it.
    fn check(&self, holds: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
        self.checks.fetch_add(1, Ordering::Relaxed);
        if holds {
            Ok(())
        } else {
            Err(TestCaseError::fail(what()))
        }
    }

    /// Runs `strategy` through `test` and prints the figures; a failure panics with proptest's
    /// minimal case.
    fn run<S: Strategy>(
        &'static self,
        strategy: S,
        test: impl Fn(S::Value) -> Result<(), TestCaseError>,
    ) {
        let mut runner = TestRunner::new(ProptestConfig {
            cases: cases(),
            // Failures are reported with their input; no regression files are written.
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let result = runner.run(&strategy, |value| {
            self.input();
            test(value)
        });
        println!(
            "fuzz {}: {} inputs, {} invariant checks, {} failures",
            self.name,
            self.inputs.load(Ordering::Relaxed),
            self.checks.load(Ordering::Relaxed),
            u32::from(result.is_err())
        );
        if let Err(error) = result {
            panic!("fuzz {}: {error}", self.name);
        }
    }
}

/// One scripted turn: the user's text, the tool calls, the answer.
type Step<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

/// A session with every kind of record: concluded, expanded and open efforts, ambient chat,
/// a pin, an attachment. Saved into a store after every turn.
fn base() -> &'static (String, MemoryStore) {
    static BASE: OnceLock<(String, MemoryStore)> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut s = Session::new(ccm_core::Config::default()).unwrap();
        let mut store = MemoryStore::default();
        let mut save = |s: &mut Session| {
            let batch = s.write_batch().unwrap();
            store.apply(&batch).unwrap();
            s.mark_saved(&batch).unwrap();
        };
        let script: [Step; 7] = [
            (
                "Let's fix the auth bug.",
                &[("open_effort", r#"{"name": "auth bug"}"#)],
                "Started.",
            ),
            ("Tokens expire after an hour.", &[], "Raise the TTL."),
            (
                "Done.",
                &[(
                    "close_effort",
                    r#"{"summary": "Raised the refresh TTL to a day."}"#,
                )],
                "Concluded.",
            ),
            ("How is the weather?", &[], "Sunny."),
            (
                "Show the auth bug again and start guild ranks.",
                &[
                    ("expand_effort", r#"{"id": "auth-bug"}"#),
                    ("open_effort", r#"{"name": "guild ranks"}"#),
                    (
                        "pin_context",
                        r#"{"target": "summary:auth-bug", "ttl_turns": 4}"#,
                    ),
                ],
                "Here it is.",
            ),
            ("Officers can invite members.", &[], "Noted."),
            ("And the weather tomorrow?", &[], "Rain."),
        ];
        for (i, (user, tools, assistant)) in script.iter().enumerate() {
            s.begin_turn(user, i as u64).unwrap();
            for (name, args) in *tools {
                assert!(s.execute_tool(name, args).ok, "setup call {name}");
            }
            if i == 5 {
                s.attach(
                    "notes.md",
                    ccm_core::compaction::AttachmentKind::File,
                    "Guild notes: officers invite, members chat.",
                    None,
                )
                .unwrap();
            }
            s.end_turn(assistant, i as u64).unwrap();
            save(&mut s);
        }
        (s.to_json().unwrap(), store)
    })
}

/// Every stored message of a fully loaded session, by sequence number.
fn messages(s: &Session) -> Vec<&Message> {
    let mut all: Vec<&Message> = s
        .ambient()
        .messages()
        .iter()
        .chain(s.efforts().all().iter().flat_map(|e| e.messages.iter()))
        .collect();
    all.sort_by_key(|m| m.seq);
    all
}

/// The invariants of a session that opened: its messages are 0..n exactly once, and its
/// export re-imports to the same bytes.
fn check_session(tally: &Tally, s: &Session) -> Result<(), TestCaseError> {
    let seqs: Vec<u64> = messages(s).iter().map(|m| m.seq).collect();
    tally.check(
        seqs.iter().copied().eq(0..s.stored_message_count() as u64),
        || format!("messages lost or duplicated: {seqs:?}"),
    )?;
    let json = s.to_json().expect("a fully loaded session exports");
    let again = Session::from_json(&json);
    tally.check(again.is_ok(), || {
        format!("an export does not re-import: {:?}", again.as_ref().err())
    })?;
    let again = again.unwrap().to_json().unwrap();
    tally.check(again == json, || {
        "export → import → export is not byte-identical".to_string()
    })
}

// ----- strategies ---------------------------------------------------------------------------

/// Keys and strings that occur in documents and tool arguments, so random values often reach
/// past the first type check.
const WORDS: [&str; 16] = [
    "id",
    "name",
    "summary",
    "query",
    "target",
    "ttl_turns",
    "task",
    "description",
    "auth-bug",
    "guild-ranks",
    "summary:auth-bug",
    "effort:guild-ranks",
    "",
    " ",
    "é🦀",
    "\u{0}",
];

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(&WORDS[..]).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(&WORDS[..]), inner), 0..4).prop_map(
                |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

/// One edit of a JSON tree, addressed by a walk of random choices.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(Vec<usize>, Value),
    Remove(Vec<usize>),
    Duplicate(Vec<usize>),
    Swap(Vec<usize>, usize),
    Bump(Vec<usize>, i64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let path = prop::collection::vec(any::<usize>(), 0..7);
    prop_oneof![
        (path.clone(), any_json()).prop_map(|(p, v)| Mutation::Replace(p, v)),
        path.clone().prop_map(Mutation::Remove),
        path.clone().prop_map(Mutation::Duplicate),
        (path.clone(), any::<usize>()).prop_map(|(p, i)| Mutation::Swap(p, i)),
        (path, -3i64..4).prop_map(|(p, d)| Mutation::Bump(p, d)),
    ]
}

/// The container at the end of a walk (stopping early at a leaf), and the child index chosen
/// in it.
fn walk<'a>(mut value: &'a mut Value, path: &[usize]) -> (&'a mut Value, usize) {
    let (last, steps) = path.split_last().unwrap_or((&0, &[]));
    for step in steps {
        let len = match &*value {
            Value::Array(a) => a.len(),
            Value::Object(o) => o.len(),
            _ => break,
        };
        if len == 0 {
            break;
        }
        let child = step % len;
        let is_container = match &*value {
            Value::Array(a) => a[child].is_array() || a[child].is_object(),
            Value::Object(o) => {
                let v = o.values().nth(child).unwrap();
                v.is_array() || v.is_object()
            }
            _ => false,
        };
        if !is_container {
            break;
        }
        value = match value {
            Value::Array(a) => &mut a[child],
            Value::Object(o) => o.values_mut().nth(child).unwrap(),
            _ => unreachable!(),
        };
    }
    (value, *last)
}

fn child(container: &mut Value, at: usize) -> Option<&mut Value> {
    match container {
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            a.get_mut(at % n)
        }
        Value::Object(o) if !o.is_empty() => {
            let n = o.len();
            o.values_mut().nth(at % n)
        }
        _ => None,
    }
}

fn apply(doc: &mut Value, m: &Mutation) {
    match m {
        Mutation::Replace(path, v) => {
            let (c, at) = walk(doc, path);
            if let Some(slot) = child(c, at) {
                *slot = v.clone();
            }
        }
        Mutation::Remove(path) => {
            let (c, at) = walk(doc, path);
            match c {
                Value::Array(a) if !a.is_empty() => {
                    let n = a.len();
                    a.remove(at % n);
                }
                Value::Object(o) if !o.is_empty() => {
                    let key = o.keys().nth(at % o.len()).unwrap().clone();
                    o.remove(&key);
                }
                _ => {}
            }
        }
        Mutation::Duplicate(path) => {
            let (c, at) = walk(doc, path);
            if let Value::Array(a) = c {
                if !a.is_empty() {
                    let item = a[at % a.len()].clone();
                    a.push(item);
                }
            }
        }
        Mutation::Swap(path, other) => {
            let (c, at) = walk(doc, path);
            if let Value::Array(a) = c {
                if !a.is_empty() {
                    let n = a.len();
                    a.swap(at % n, other % n);
                }
            }
        }
        Mutation::Bump(path, delta) => {
            let (c, at) = walk(doc, path);
            if let Some(slot) = child(c, at) {
                if let Some(n) = slot.as_i64() {
                    *slot = Value::from(n.saturating_add(*delta));
                } else if let Some(n) = slot.as_u64() {
                    *slot = Value::from(n.saturating_add_signed(*delta));
                }
            }
        }
    }
}

// ----- the tests ----------------------------------------------------------------------------

static IMPORT: Tally = Tally::new("from_json");

/// Imported documents: random text, random JSON, and valid documents with random edits. Any of
/// them may be refused; none may panic, and one that is accepted must hold together.
#[test]
fn any_document_is_refused_or_imported_whole() {
    let (valid, _) = base();
    let valid_value: Value = serde_json::from_str(valid).unwrap();
    let input = prop_oneof![
        1 => ".{0,64}".boxed(),
        1 => any_json().prop_map(|v| v.to_string()).boxed(),
        6 => prop::collection::vec(mutation(), 1..4)
            .prop_map(move |ms| {
                let mut doc = valid_value.clone();
                for m in &ms {
                    apply(&mut doc, m);
                }
                doc.to_string()
            })
            .boxed(),
    ];
    IMPORT.run(input, |json| {
        if let Ok(session) = Session::from_json(&json) {
            check_session(&IMPORT, &session)?;
        }
        Ok(())
    });
}

static TOOLS: Tally = Tally::new("execute_tool");

/// Tool calls with random names and arguments, several per turn: a refused call must change
/// nothing, an accepted one must leave a session that stores the turn and re-imports.
#[test]
fn any_tool_call_is_refused_without_change_or_applied_whole() {
    let (valid, _) = base();
    let name = prop_oneof![
        4 => prop::sample::select(&TOOL_NAMES[..]).prop_map(str::to_string),
        1 => ".{0,16}",
    ];
    let args = prop_oneof![
        4 => any_json().prop_map(|v| v.to_string()),
        1 => ".{0,32}",
    ];
    let calls = prop::collection::vec((name, args), 1..6);
    TOOLS.run(calls, |calls| {
        let mut s = Session::from_json(valid).unwrap();
        let before_turn = messages(&s).len();
        s.begin_turn("A user message about auth and guilds.", 100)
            .unwrap();
        for (name, args) in &calls {
            let before = s.to_json().unwrap();
            let outcome = s.execute_tool(name, args);
            if !outcome.ok {
                TOOLS.check(s.to_json().unwrap() == before, || {
                    format!("refused {name}({args}) changed the session")
                })?;
                TOOLS.check(
                    outcome.banner.is_none() && outcome.result["error"].is_string(),
                    || format!("refused {name}({args}) gave {}", outcome.result),
                )?;
            }
        }
        s.end_turn("An answer.", 101).unwrap();
        TOOLS.check(messages(&s).len() == before_turn + 2, || {
            "the turn did not store exactly its two messages".to_string()
        })?;
        check_session(&TOOLS, &s)
    });
}

/// One kind of damage to the records a backend read.
#[derive(Debug, Clone)]
enum Damage {
    NoHeader,
    DropEffort(usize),
    DuplicateEffort(usize),
    ShuffleEfforts(Vec<usize>),
    DropLog(usize),
    DropLogMessage(usize, usize),
    DuplicateLogMessage(usize, usize),
    DropAmbient(usize),
    DuplicateAmbient(usize),
    SwapAmbient(usize, usize),
    HeaderTurn(u64),
    HeaderNextSeq(u64),
    HeaderEffortCount(u64),
    Unreadable,
}

impl Damage {
    /// Whether the damage only reorders what was read (nothing missing or extra).
    fn reorders_only(&self) -> bool {
        matches!(self, Damage::ShuffleEfforts(_))
    }
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::NoHeader),
        any::<usize>().prop_map(Damage::DropEffort),
        any::<usize>().prop_map(Damage::DuplicateEffort),
        prop::collection::vec(any::<usize>(), 1..4).prop_map(Damage::ShuffleEfforts),
        any::<usize>().prop_map(Damage::DropLog),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::DropLogMessage(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::DuplicateLogMessage(a, b)),
        any::<usize>().prop_map(Damage::DropAmbient),
        any::<usize>().prop_map(Damage::DuplicateAmbient),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::SwapAmbient(a, b)),
        (0u64..20).prop_map(Damage::HeaderTurn),
        (0u64..40).prop_map(Damage::HeaderNextSeq),
        (0u64..6).prop_map(Damage::HeaderEffortCount),
        Just(Damage::Unreadable),
    ]
}

fn damage_records(records: &mut LoadedRecords, d: &Damage) {
    match d {
        Damage::NoHeader => records.header = None,
        Damage::DropEffort(i) if !records.efforts.is_empty() => {
            let n = records.efforts.len();
            records.efforts.remove(i % n);
        }
        Damage::DuplicateEffort(i) if !records.efforts.is_empty() => {
            let copy = records.efforts[i % records.efforts.len()].clone();
            records.efforts.push(copy);
        }
        Damage::ShuffleEfforts(swaps) if !records.efforts.is_empty() => {
            let n = records.efforts.len();
            for (k, s) in swaps.iter().enumerate() {
                records.efforts.swap(k % n, s % n);
            }
        }
        Damage::DropLog(i) if !records.effort_logs.is_empty() => {
            let key = records
                .effort_logs
                .keys()
                .nth(i % records.effort_logs.len())
                .unwrap()
                .clone();
            records.effort_logs.remove(&key);
        }
        Damage::DropLogMessage(i, j) | Damage::DuplicateLogMessage(i, j)
            if !records.effort_logs.is_empty() =>
        {
            let n = records.effort_logs.len();
            let log = records.effort_logs.values_mut().nth(i % n).unwrap();
            if !log.is_empty() {
                let at = j % log.len();
                if matches!(d, Damage::DropLogMessage(..)) {
                    log.remove(at);
                } else {
                    let copy = log[at].clone();
                    log.insert(at, copy);
                }
            }
        }
        Damage::DropAmbient(i) if !records.ambient_tail.is_empty() => {
            let n = records.ambient_tail.len();
            records.ambient_tail.remove(i % n);
        }
        Damage::DuplicateAmbient(i) if !records.ambient_tail.is_empty() => {
            let at = i % records.ambient_tail.len();
            let copy = records.ambient_tail[at].clone();
            records.ambient_tail.insert(at, copy);
        }
        Damage::SwapAmbient(a, b) if !records.ambient_tail.is_empty() => {
            let n = records.ambient_tail.len();
            records.ambient_tail.swap(a % n, b % n);
        }
        Damage::HeaderTurn(t) => {
            if let Some(h) = records.header.as_mut() {
                h.turn = *t;
            }
        }
        Damage::HeaderNextSeq(n) => {
            if let Some(h) = records.header.as_mut() {
                h.next_seq = *n;
            }
        }
        Damage::HeaderEffortCount(n) => {
            if let Some(h) = records.header.as_mut() {
                h.effort_count = *n;
            }
        }
        Damage::Unreadable => records
            .unreadable
            .push("message 3 could not be decoded".to_string()),
        _ => {}
    }
}

static STORE: Tally = Tally::new("from_store");

/// Records read back damaged (missing, duplicated, reordered, with a header that disagrees):
/// opening must not panic; reordering alone must open clean with every record; anything else
/// that opens must report a problem or hold together; the session must then take a turn.
#[test]
fn damaged_records_open_with_a_report_and_never_panic() {
    let (_, store) = base();
    STORE.run(prop::collection::vec(damage(), 1..4), |damages| {
        let intact = store.load();
        let mut records = store.load();
        for d in &damages {
            damage_records(&mut records, d);
        }
        let counter = ccm_core::default_counter(ccm_core::Encoding::O200kBase);
        let Ok((mut s, report)) = Session::from_store(records, counter.clone()) else {
            return Ok(());
        };
        if damages.iter().all(Damage::reorders_only) {
            let (reference, _) = Session::from_store(intact, counter).unwrap();
            STORE.check(report.is_clean(), || {
                format!("reordered records reported problems: {:?}", report.problems)
            })?;
            STORE.check(s.header() == reference.header(), || {
                "reordered records opened a different session".to_string()
            })?;
        }
        // Whatever opened must take a turn without panicking, and save it.
        let before = s.stored_message_count();
        s.begin_turn("After the repair.", 1_000).unwrap();
        s.end_turn("Still here.", 1_001).unwrap();
        STORE.check(s.stored_message_count() == before + 2, || {
            "a turn after opening did not store two messages".to_string()
        })?;
        STORE.check(s.write_batch().is_ok(), || {
            "the turn cannot be saved".to_string()
        })
    });
}

/// The reordering check above must be able to tell a clean load from a damaged one.
#[test]
fn a_dropped_effort_record_is_reported() {
    let (_, store) = base();
    let mut records = store.load();
    records.efforts.remove(0);
    let counter = ccm_core::default_counter(ccm_core::Encoding::O200kBase);
    let (_, report) = Session::from_store(records, counter).unwrap();
    assert!(!report.is_clean());
}

/// Found by the store fuzzer: a header whose turn is before an effort's last reference (a
/// damaged or stale header) made planning subtract past zero and panic.
#[test]
fn a_header_turn_before_the_last_reference_is_repaired_and_reported() {
    let (_, store) = base();
    let mut records = store.load();
    records.header.as_mut().unwrap().turn = 0;
    let counter = ccm_core::default_counter(ccm_core::Encoding::O200kBase);
    let (s, report) = Session::from_store(records, counter).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("after the session's turn 0")),
        "{:?}",
        report.problems
    );
    s.build_plan();
}
