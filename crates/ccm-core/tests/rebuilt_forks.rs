//! Forks before the rewind window (issue 25): `Session::rebuild_at` rebuilds the state at the
//! end of an earlier turn from what the session holds, and `Session::fork` uses it where
//! rewinding cannot reach. Measured against the exact fork within the window, and exercised
//! on a reopened session at every turn.

use ccm_core::branch::{BranchError, ForkMethod};
use ccm_core::compaction::AttachmentKind;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::{ApproximateCounter, Config, EffortStatus, Session, TokenCounter};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::portable_tests;
use std::sync::Arc;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Effort names; their ids are the slugs.
const NAMES: [&str; 5] = [
    "auth bug",
    "guild ranks",
    "ledger rounding",
    "cache tuning",
    "deploy script",
];
const IDS: [&str; 5] = [
    "auth-bug",
    "guild-ranks",
    "ledger-rounding",
    "cache-tuning",
    "deploy-script",
];
/// Two summaries per effort, so a second conclusion writes a different one.
const SUMMARIES: [[&str; 2]; 5] = [
    [
        "Fixed the auth bug: refresh token TTL raised to 86400 seconds.",
        "Auth bug again: token refresh retried once on 401 responses.",
    ],
    [
        "Guild ranks stored as ordered enum with promotion audit log.",
        "Guild ranks gained officer permissions for invitations.",
    ],
    [
        "Ledger rounding fixed with banker's rounding per currency.",
        "Ledger rounding tests cover negative amounts and yen.",
    ],
    [
        "Cache tuning: eviction moved to LRU with 512 entries.",
        "Cache tuning reverted TTL jitter after latency spikes.",
    ],
    [
        "Deploy script now checks migrations before restarting workers.",
        "Deploy script rolls back automatically on failed health checks.",
    ],
];
/// User texts: some name efforts or their summaries' words (references), some do not.
const TEXTS: [&str; 8] = [
    "How is the weather today?",
    "Back to the auth bug and the refresh token.",
    "What about guild ranks and officer permissions?",
    "The ledger rounding for yen looks off.",
    "Cache tuning: are LRU entries enough?",
    "Let's check the deploy script migrations.",
    "Tell me a joke about queues.",
    "Summarise where we are.",
];

/// One effort operation (or pin, or attachment) of a turn.
#[derive(Debug, Clone, Copy)]
enum Op {
    Open(usize),
    /// Concludes an effort (`None`: the active one) with its first or second summary.
    Close(Option<usize>, usize),
    Reopen(usize),
    Expand(usize),
    Collapse(usize),
    Switch(usize),
    /// The model leases the summary or the log of an effort.
    ModelPin(usize, bool),
    /// The person pins an effort's log, or the ambient exchange of an earlier turn.
    UserPin(usize),
    Attach(usize),
}

#[derive(Debug, Clone)]
struct ScriptTurn {
    user: usize,
    ops: Vec<Op>,
    assistant: usize,
}

fn config() -> Config {
    // Short thresholds and a small summary budget, so decay, eviction by age and eviction
    // over budget all happen within a few dozen turns.
    Config {
        decay_threshold: 3,
        summary_eviction_threshold: 6,
        summary_token_budget: 40,
        ..Config::default()
    }
}

fn counter() -> Arc<dyn TokenCounter> {
    Arc::new(ApproximateCounter)
}

fn new_session() -> Session {
    Session::with_counter(config(), counter()).expect("valid configuration")
}

/// Runs one scripted turn. Operations the session refuses (closing what is not open, …)
/// change nothing, as in a real conversation where the model calls a tool wrongly.
fn run_turn(s: &mut Session, script: &ScriptTurn) {
    let turn = s.turn() + 1;
    s.begin_turn(TEXTS[script.user], turn * 1_000).unwrap();
    let mut attached = false;
    for op in &script.ops {
        match *op {
            Op::Open(e) => {
                s.execute_tool("open_effort", &format!(r#"{{"name": "{}"}}"#, NAMES[e]));
            }
            Op::Close(e, which) => {
                let summary = SUMMARIES[e.unwrap_or(0)][which % 2];
                let args = match e {
                    Some(e) => serde_json::json!({ "id": IDS[e], "summary": summary }),
                    None => serde_json::json!({ "summary": summary }),
                };
                s.execute_tool("close_effort", &args.to_string());
            }
            Op::Reopen(e) => {
                s.execute_tool("reopen_effort", &format!(r#"{{"id": "{}"}}"#, IDS[e]));
            }
            Op::Expand(e) => {
                s.execute_tool("expand_effort", &format!(r#"{{"id": "{}"}}"#, IDS[e]));
            }
            Op::Collapse(e) => {
                s.execute_tool("collapse_effort", &format!(r#"{{"id": "{}"}}"#, IDS[e]));
            }
            Op::Switch(e) => {
                s.execute_tool("switch_effort", &format!(r#"{{"id": "{}"}}"#, IDS[e]));
            }
            Op::ModelPin(e, summary) => {
                let target = format!("{}:{}", if summary { "summary" } else { "effort" }, IDS[e]);
                let args = serde_json::json!({ "target": target, "ttl_turns": 4 });
                s.execute_tool("pin_context", &args.to_string());
            }
            Op::UserPin(n) => {
                let target = if n % 2 == 0 {
                    format!("effort:{}", IDS[n % IDS.len()])
                } else {
                    format!("ambient:{}", turn.saturating_sub(1 + n as u64 % 3))
                };
                let _ = s.pin(
                    PinRequest {
                        target,
                        kind: PinKind::Sticky,
                        ttl_turns: None,
                        task: None,
                    },
                    PinOrigin::User,
                );
            }
            // One attachment per message: a second one on the same message makes the recall
            // index panic when the exchange is indexed (its passages are keyed by message and
            // passage number only), a bug outside what these tests are about.
            Op::Attach(_) if attached => {}
            Op::Attach(n) => {
                attached = true;
                let text = ccm_test_support::synthetic_document(n, 120);
                s.attach(&format!("notes-{n}.md"), AttachmentKind::File, &text, None)
                    .unwrap();
            }
        }
    }
    s.end_turn(
        &format!("Answer {}: {}", turn, TEXTS[script.assistant]),
        turn * 1_000 + 500,
    )
    .unwrap();
}

/// A small deterministic generator, so the fixed tests need no dependency.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A script of `turns` turns from `seed`, weighted so that efforts are opened, concluded,
/// reopened and concluded again, expanded, switched and pinned, between ambient chatter.
fn script(seed: u64, turns: usize) -> Vec<ScriptTurn> {
    let mut rng = Lcg(seed);
    (0..turns)
        .map(|_| {
            let mut ops = Vec::new();
            for _ in 0..rng.below(3) {
                let e = rng.below(NAMES.len());
                ops.push(match rng.below(16) {
                    0..=2 => Op::Open(e),
                    3..=5 => {
                        Op::Close(if rng.below(2) == 0 { None } else { Some(e) }, rng.below(2))
                    }
                    6 | 7 => Op::Reopen(e),
                    8 | 9 => Op::Expand(e),
                    10 => Op::Collapse(e),
                    11 => Op::Switch(e),
                    12 => Op::ModelPin(e, rng.below(2) == 0),
                    13 => Op::UserPin(rng.below(6)),
                    14 => Op::Attach(rng.below(1_000)),
                    _ => Op::Open(e),
                });
            }
            ScriptTurn {
                user: rng.below(TEXTS.len()),
                ops,
                assistant: rng.below(TEXTS.len()),
            }
        })
        .collect()
}

fn driven(script: &[ScriptTurn]) -> Session {
    let mut s = new_session();
    for turn in script {
        run_turn(&mut s, turn);
    }
    s
}

/// The session saved to a store and loaded fully again, the way the app does after a reload
/// (it keeps no rewind deltas).
fn reopened(s: &Session) -> Session {
    let mut saving = s.clone();
    let store = MemoryStore::saved_from(&mut saving);
    let opened = Session::from_document(store.export().unwrap(), counter()).unwrap();
    assert!(opened.is_fully_loaded());
    assert_eq!(opened.earliest_fork_turn(), s.turn());
    opened
}

/// Every stored message of a session, with its log.
fn messages(s: &Session) -> Vec<(Option<String>, ccm_core::Message)> {
    let mut all: Vec<_> = s
        .ambient()
        .messages()
        .iter()
        .map(|m| (None, m.clone()))
        .collect();
    for effort in s.efforts().all() {
        all.extend(
            effort
                .messages
                .iter()
                .map(|m| (Some(effort.id.clone()), m.clone())),
        );
    }
    all.sort_by_key(|(_, m)| m.seq);
    all
}

/// How a rebuilt fork differs from the exact one, summed over the forks compared.
#[derive(Debug, Default)]
struct Differences {
    forks: usize,
    /// Forks whose working set (the plan built for the next request) is identical.
    same_plan: usize,
    /// Forks whose next request holds the same items, ranked perhaps differently (activation).
    same_items: usize,
    /// Efforts concluded in the exact fork that the rebuilt one has open (concluded again
    /// later, so the summary of the time is lost).
    concluded_taken_as_open: usize,
    /// Forks whose active effort differs.
    active: usize,
    /// Forks whose open efforts are the same set in another order.
    open_order: usize,
    /// Efforts whose eviction differs (each a summary referenced after the fork turn, whose
    /// reference is clamped to it, or one the exact fork had expanded).
    evicted: usize,
    /// Forks whose exact state had an expansion (a rebuilt one never has).
    expanded: usize,
    /// Forks whose pins differ (a pin removed or changed after the fork turn).
    pins: usize,
}

/// Compares a rebuilt fork with the exact one and records what differs. What must be equal is
/// asserted: the conversation, the efforts, the history, the counters, and every summary the
/// rebuilt fork shows.
fn compare(parent: &Session, k: u64, exact: &Session, rebuilt: &Session, diff: &mut Differences) {
    diff.forks += 1;
    let at = format!("fork at turn {k} of {}", parent.turn());
    assert_eq!(rebuilt.turn(), exact.turn(), "{at}");
    assert_eq!(messages(rebuilt), messages(exact), "messages of the {at}");
    assert_eq!(
        rebuilt.stored_message_count(),
        exact.stored_message_count(),
        "{at}"
    );
    assert_eq!(
        rebuilt.history().points(),
        exact.history().points(),
        "metrics of the {at}"
    );
    assert_eq!(rebuilt.branch(), exact.branch(), "{at}");
    assert!(
        rebuilt.repairs_on_open().is_empty(),
        "{at}: {:?}",
        rebuilt.repairs_on_open()
    );
    let ids = |s: &Session| {
        s.efforts()
            .all()
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(rebuilt), ids(exact), "efforts of the {at}");
    for (r, x) in rebuilt.efforts().all().iter().zip(exact.efforts().all()) {
        let now = parent.efforts().get(&x.id).unwrap();
        assert_eq!(r.raw_tokens, x.raw_tokens, "{at}, {}", x.id);
        match (r.status, x.status) {
            (EffortStatus::Concluded, EffortStatus::Concluded) => {
                assert_eq!(r.summary, x.summary, "{at}, {}", x.id);
                assert_eq!(r.concluded_turn, x.concluded_turn, "{at}, {}", x.id);
                assert_eq!(r.concluded_seq, x.concluded_seq, "{at}, {}", x.id);
            }
            (EffortStatus::Open, EffortStatus::Concluded) => {
                // Only when its summary of the time was replaced by a later conclusion.
                assert!(now.concluded_turn.unwrap() > k, "{at}, {}", x.id);
                assert!(r.summary.is_none(), "{at}, {}", x.id);
                diff.concluded_taken_as_open += 1;
            }
            (EffortStatus::Concluded, EffortStatus::Open) => {
                panic!(
                    "{at}: '{}' was open then, the rebuilt fork shows a summary",
                    x.id
                )
            }
            (EffortStatus::Open, EffortStatus::Open) => {
                // An open effort never carries a summary written after the fork turn.
                if let Some(turn) = r.concluded_turn {
                    assert!(turn <= k, "{at}, {}", x.id);
                    assert_eq!(r.summary, x.summary, "{at}, {}", x.id);
                }
            }
        }
        assert!(r.last_referenced_turn <= k, "{at}, {}", x.id);
        if r.status == x.status && r.evicted != x.evicted {
            diff.evicted += 1;
            // Eviction differs only for a summary referenced after the fork turn (its
            // reference is clamped to it), when the exact fork had something expanded (the
            // budget eviction passes over it), or by the summary budget, which evicts the least
            // recently referenced first, when another effort's reference was clamped or its
            // status taken as open.
            let by_budget = x.evicted_over_budget || r.evicted_over_budget;
            let others_approximate = rebuilt
                .efforts()
                .all()
                .iter()
                .zip(exact.efforts().all())
                .any(|(r, x)| {
                    r.status != x.status
                        || parent.efforts().get(&x.id).unwrap().last_referenced_turn > k
                });
            assert!(
                now.last_referenced_turn > k
                    || !exact.efforts().expanded_ids().is_empty()
                    || (by_budget && others_approximate),
                "{at}: eviction of '{}' differs although its references are known",
                x.id
            );
        }
    }
    assert!(rebuilt.efforts().expanded_ids().is_empty(), "{at}");
    if !exact.efforts().expanded_ids().is_empty() {
        diff.expanded += 1;
    }
    if rebuilt.efforts().active_id() != exact.efforts().active_id() {
        diff.active += 1;
    }
    let mut open_r = rebuilt.efforts().open_ids();
    let mut open_x = exact.efforts().open_ids();
    if open_r != open_x {
        open_r.sort_unstable();
        open_x.sort_unstable();
        if open_r == open_x {
            diff.open_order += 1;
        }
    }
    if rebuilt.pins() != exact.pins() {
        diff.pins += 1;
    }
    for pin in rebuilt.pins().all() {
        assert!(pin.created_turn <= k, "{at}: pin {pin:?}");
    }
    let (plan_r, plan_x) = (rebuilt.build_plan(), exact.build_plan());
    if plan_r.to_json() == plan_x.to_json() {
        diff.same_plan += 1;
    }
    // Where nothing listed above differs and no reference after the fork turn was clamped,
    // the next request holds the same items; only activation, which a rebuild resets, can
    // rank them differently.
    fn places(f: &Session) -> impl PartialEq + '_ {
        let efforts = f
            .efforts()
            .all()
            .iter()
            .map(|e| (e.status, e.evicted, e.last_referenced_turn));
        (
            efforts.collect::<Vec<_>>(),
            f.efforts().open_ids(),
            f.efforts().active_id(),
            f.pins().all().to_vec(),
        )
    }
    if places(rebuilt) == places(exact) && exact.efforts().expanded_ids().is_empty() {
        let items = |plan: &ccm_core::ContextPlan| {
            let mut items = plan.included.clone();
            items.iter_mut().for_each(|i| i.activation = 0);
            items
        };
        assert_eq!(
            items(&plan_r),
            items(&plan_x),
            "{at}: the next request differs"
        );
        diff.same_items += 1;
    }
}

/// Checks a fork of `parent` at `k` made after a reload, and that saving and reopening it
/// gives the same session.
fn check_reloaded_fork(parent: &Session, k: u64) -> Session {
    let fork = parent.fork(k, "alternative").unwrap();
    let expected = if k == parent.turn() {
        ForkMethod::Rewound
    } else {
        ForkMethod::Rebuilt
    };
    assert_eq!(fork.method, expected, "fork at {k}");
    assert_eq!(fork.is_exact(), k == parent.turn());
    let mut fork = fork.session;
    let at = format!("fork at turn {k} of {}", parent.turn());
    assert_eq!(fork.turn(), k, "{at}");
    assert_eq!(fork.branch().fork_turn, Some(k), "{at}");
    assert_eq!(fork.branch().parent.as_deref(), Some("main"), "{at}");
    assert!(
        fork.repairs_on_open().is_empty(),
        "{at}: {:?}",
        fork.repairs_on_open()
    );
    for (_, m) in messages(&fork) {
        assert!(
            m.turn <= k,
            "{at} holds message {} of turn {}",
            m.seq,
            m.turn
        );
    }
    // Every message of those turns is there.
    let before: Vec<_> = messages(parent)
        .into_iter()
        .filter(|(_, m)| m.turn <= k)
        .collect();
    assert_eq!(messages(&fork), before, "{at}");
    let plan = fork.build_plan();
    assert!(!plan.messages.is_empty(), "{at}");
    let json = fork.to_json().unwrap();
    // Saved as a new line (revision 0, a full write) and opened again: the same session.
    assert_eq!(fork.revision(), 0, "{at}");
    let store = MemoryStore::saved_from(&mut fork);
    let again = Session::from_document(store.export().unwrap(), counter()).unwrap();
    assert!(
        again.to_json().unwrap() == json,
        "{at} changes when saved and reopened"
    );
    assert!(
        again.build_plan().to_json() == plan.to_json(),
        "{at}: plan changes when reopened"
    );
    // The store's own partial open reads it without a problem.
    let partly = store.open_clean(&counter());
    assert_eq!(partly.turn(), k);
    assert_eq!(partly.branch(), fork.branch());
    fork
}

portable_tests! {
    fn within_the_rewind_window_a_rebuilt_fork_keeps_the_conversation_and_errs_towards_raw_logs() {
        let mut diff = Differences::default();
        for seed in [1u64, 7, 42, 2024] {
            let s = driven(&script(seed, 60));
            assert_eq!(s.earliest_fork_turn(), 0);
            for k in 0..=s.turn() {
                let exact = s.fork_at(k, "x").unwrap();
                let rebuilt = s.rebuild_at(k, "x").unwrap();
                compare(&s, k, &exact, &rebuilt, &mut diff);
            }
        }
        eprintln!("{diff:#?}");
        // The scripts exercise what can differ, so the figures above mean something.
        assert!(diff.concluded_taken_as_open > 0 && diff.expanded > 0 && diff.pins > 0, "{diff:?}");
        assert!(diff.same_plan > 0, "{diff:?}");
    }

    fn a_reloaded_session_forks_at_every_turn_and_each_fork_saves_and_reopens_the_same() {
        for seed in [3u64, 11] {
            let s = driven(&script(seed, 40));
            let opened = reopened(&s);
            // Before this change, only the turn it was opened at could be forked.
            assert!(opened.fork_at(s.turn() - 1, "x").is_err());
            for k in 0..=opened.turn() {
                let fork = check_reloaded_fork(&opened, k);
                // The rebuild reads only stored records: the same from the original session.
                let from_original = s.rebuild_at(k, "alternative").unwrap();
                if k < opened.turn() {
                    assert!(fork.to_json().unwrap() == from_original.to_json().unwrap(), "seed {seed}, turn {k}");
                }
            }
        }
    }

    fn a_rebuilt_fork_runs_turns_and_forks_again() {
        let s = driven(&script(5, 30));
        let opened = reopened(&s);
        // Edit the message of turn 12: fork before it and send the new text.
        let mut fork = opened.fork(11, "edit of turn 12").unwrap().session;
        ccm_test_support::turn(&mut fork, "Let's work on the auth bug instead.", &[("open_effort", r#"{"name": "auth bug v2"}"#)], "Started.");
        ccm_test_support::chatter(&mut fork);
        assert_eq!(fork.turn(), 13);
        // Turns run on the fork can be rewound exactly; those before it are rebuilt again.
        assert_eq!(fork.earliest_fork_turn(), 11);
        assert_eq!(fork.fork(12, "again").unwrap().method, ForkMethod::Rewound);
        let earlier = fork.fork(5, "earlier").unwrap();
        assert_eq!(earlier.method, ForkMethod::Rebuilt);
        assert!(messages(&earlier.session).iter().all(|(_, m)| m.turn <= 5));
        assert_eq!(earlier.session.branch().parent.as_deref(), Some("edit of turn 12"));
        // The parent is unchanged.
        assert!(opened.to_json().unwrap() == reopened(&s).to_json().unwrap());
    }

    fn fork_refuses_what_fork_at_refuses() {
        let s = driven(&script(9, 12));
        let mut opened = reopened(&s);
        let error = opened.fork(13, "x").unwrap_err();
        assert_eq!(error.to_string(), "cannot fork at turn 13: the session is at turn 12");
        assert!(matches!(opened.rebuild_at(13, "x"), Err(BranchError::BadTurn { turn: 13, .. })));
        opened.begin_turn("mid-turn", 0).unwrap();
        assert!(matches!(opened.fork(3, "x"), Err(BranchError::NotNow(_))));
        assert!(matches!(opened.rebuild_at(3, "x"), Err(BranchError::NotNow(_))));
        opened.abort_turn().unwrap();
        assert!(opened.fork(3, "x").is_ok());
        // A partly loaded session (the store's working-set open) is refused.
        let mut saving = s.clone();
        let store = MemoryStore::saved_from(&mut saving);
        let partly = store.open_clean(&counter());
        assert!(!partly.is_fully_loaded());
        assert!(matches!(partly.fork(3, "x"), Err(BranchError::NotNow(_))));
        assert!(matches!(partly.rebuild_at(3, "x"), Err(BranchError::NotNow(_))));
        // fork_at still says what rewinding reaches, and points to the rebuild.
        let error = opened.fork_at(3, "x").unwrap_err().to_string();
        assert!(error.contains("ran before this session was opened or imported"), "{error}");
        assert!(error.contains("Session::fork"), "{error}");
    }

    fn an_effort_concluded_then_and_reopened_later_is_concluded_at_the_fork() {
        let mut s = new_session();
        let step = |s: &mut Session, ops: Vec<Op>| run_turn(s, &ScriptTurn { user: 0, ops, assistant: 0 });
        step(&mut s, vec![Op::Open(0)]); // 1
        step(&mut s, vec![]); // 2
        step(&mut s, vec![Op::Close(Some(0), 0)]); // 3
        step(&mut s, vec![]); // 4
        step(&mut s, vec![Op::Reopen(0)]); // 5: open since
        step(&mut s, vec![]); // 6
        let opened = reopened(&s);
        let at = |k: u64| opened.rebuild_at(k, "x").unwrap();
        let auth = |f: &Session| f.efforts().get("auth-bug").unwrap().clone();
        assert_eq!(auth(&at(2)).status, EffortStatus::Open);
        assert!(auth(&at(2)).summary.is_none());
        // Concluded at 3 and not yet reopened at 4: its summary of the time is the one kept.
        for k in [3, 4] {
            let effort = auth(&at(k));
            assert_eq!(effort.status, EffortStatus::Concluded, "turn {k}");
            assert_eq!(effort.summary.unwrap().text, SUMMARIES[0][0]);
            assert_eq!(at(k).efforts().active_id(), None, "turn {k}");
        }
        assert_eq!(auth(&at(5)).status, EffortStatus::Open);
        assert_eq!(at(5).efforts().active_id(), Some("auth-bug"));
        // Concluded again later with another summary: at 5 and 6 it stays open, and at 3 the
        // first summary is lost, so it is open there too (the conservative direction).
        let mut later = s.clone();
        run_turn(&mut later, &ScriptTurn { user: 0, ops: vec![Op::Close(Some(0), 1)], assistant: 0 });
        let later = reopened(&later);
        for k in [3, 4, 5, 6] {
            let fork = later.rebuild_at(k, "x").unwrap();
            assert_eq!(auth(&fork).status, EffortStatus::Open, "turn {k}");
            assert!(auth(&fork).summary.is_none(), "turn {k}");
            assert_eq!(fork.efforts().active_id(), Some("auth-bug"), "turn {k}");
        }
        let last = later.rebuild_at(7, "x").unwrap();
        assert_eq!(auth(&last).summary.unwrap().text, SUMMARIES[0][1]);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let e = 0..NAMES.len();
        prop_oneof![
            3 => e.clone().prop_map(Op::Open),
            3 => (proptest::option::of(e.clone()), 0..2usize).prop_map(|(e, w)| Op::Close(e, w)),
            2 => e.clone().prop_map(Op::Reopen),
            2 => e.clone().prop_map(Op::Expand),
            1 => e.clone().prop_map(Op::Collapse),
            1 => e.clone().prop_map(Op::Switch),
            1 => (e, any::<bool>()).prop_map(|(e, s)| Op::ModelPin(e, s)),
            1 => (0..6usize).prop_map(Op::UserPin),
            1 => (0..50usize).prop_map(Op::Attach),
        ]
    }

    fn script_turn() -> impl Strategy<Value = ScriptTurn> {
        (
            0..TEXTS.len(),
            proptest::collection::vec(op(), 0..3),
            0..TEXTS.len(),
        )
            .prop_map(|(user, ops, assistant)| ScriptTurn {
                user,
                ops,
                assistant,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn any_turn_of_a_reloaded_session_forks_and_round_trips(
            turns in proptest::collection::vec(script_turn(), 1..30),
            pick in any::<prop::sample::Index>(),
        ) {
            let s = driven(&turns);
            let k = pick.index(s.turn() as usize + 1) as u64;
            // Exact within the window: the rebuilt fork keeps the conversation.
            let exact = s.fork_at(k, "alternative").unwrap();
            let rebuilt = s.rebuild_at(k, "alternative").unwrap();
            compare(&s, k, &exact, &rebuilt, &mut Differences::default());
            // After a reload, the same turn forks by rebuilding and round-trips.
            let opened = reopened(&s);
            let fork = check_reloaded_fork(&opened, k);
            if k < s.turn() {
                prop_assert!(fork.to_json().unwrap() == rebuilt.to_json().unwrap());
            }
        }
    }
}
