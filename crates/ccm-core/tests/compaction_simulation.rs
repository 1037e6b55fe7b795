//! A deterministic long run: a 300-message conversation with attachments of several thousand
//! tokens, an open effort and an expansion, against an 8,000-token window, driven through the
//! policy and the planning function exactly as the context planner will drive them.
//!
//! The simulated session keeps an append-only store (every message and attachment as
//! written) and a working set of ids. Compaction only changes the working set. The run checks
//! that the context never exceeds the window after a check, that every level fires, that open
//! efforts are left alone below the emergency level, and that everything moved out is still in
//! the store byte for byte.

use ccm_core::compaction::{
    detect_references, plan_compaction, rolling_budget_tokens, Attachment, AttachmentKind,
    CompactionConfig, CompactionEvent, CompactionInput, CompactionOutcome, CompactionPolicy, Level,
    MovedKind, NewAttachment, Relevance, RollingSummary, SeqRange, Usage, WorkingItem,
};
use ccm_core::{Encoding, ExactCounter, TokenCounter};
use ccm_test_support::portable_tests;
use std::collections::BTreeMap;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WINDOW: u64 = 8_000;
const MESSAGES: u64 = 300;
/// Messages 101..=140 are routed into the open effort `parser`, then it is concluded.
const EFFORT: std::ops::RangeInclusive<u64> = 101..=140;
/// The expansion of the concluded effort `perf-fix` at message 201, referenced until 206.
const EXPANDED_AT: u64 = 201;
const SYSTEM_PROMPT_TOKENS: u64 = 260;
const PERF_FIX_RAW_TOKENS: u64 = 1_400;
const PERF_FIX_SUMMARY_TOKENS: u64 = 60;

// One row a topic: rustfmt would spread each over four lines.
#[rustfmt::skip]
const TOPICS: [(&str, [&str; 6]); 6] = [
    ("auth", ["token", "refresh", "login", "password", "session", "oauth"]),
    ("database", ["index", "query", "postgres", "migration", "table", "vacuum"]),
    ("frontend", ["button", "layout", "theme", "render", "modal", "css"]),
    ("deploy", ["pipeline", "docker", "rollout", "canary", "helm", "cluster"]),
    ("billing", ["invoice", "stripe", "refund", "plan", "tax", "currency"]),
    ("search", ["ranking", "tokenizer", "synonym", "facet", "bm25", "shard"]),
];

/// A small deterministic generator (64-bit LCG), seeded per message so any text can be
/// regenerated on its own to check the store.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

fn attachment_number(seq: u64) -> Option<u64> {
    // A user message every 24 messages carries an attachment (12 in all).
    (seq % 24 == 5).then_some(seq / 24 + 1)
}

fn attachment_name(n: u64) -> String {
    format!("spec-{n}.md")
}

/// The text of stored message `seq` (odd: user, even: assistant).
fn message_text(seq: u64) -> String {
    let mut rng = Rng::new(seq);
    let (topic, words) = TOPICS[rng.next(TOPICS.len() as u64) as usize];
    let word = |rng: &mut Rng| words[rng.next(6) as usize];
    if seq % 2 == 1 {
        let mut text = format!(
            "Can we look at the {topic} {} and the {} for build {}?",
            word(&mut rng),
            word(&mut rng),
            1_000 + seq
        );
        if let Some(n) = attachment_number(seq) {
            text.push_str(&format!(
                " I attached {} with the {topic} settings.",
                attachment_name(n)
            ));
        } else if let Some(n) = attachment_number(seq.saturating_sub(2)) {
            text.push_str(&format!(
                " Back to {}: is the {} value right?",
                attachment_name(n),
                word(&mut rng)
            ));
        }
        for _ in 0..rng.next(3) {
            text.push_str(&format!(
                " Also the {} might affect the {}.",
                word(&mut rng),
                word(&mut rng)
            ));
        }
        text
    } else {
        let mut text = format!("For the {topic} question: ");
        for i in 0..(3 + rng.next(6)) {
            text.push_str(&format!(
                "Step {i}: check the {} against the {} (ticket {}-{}). ",
                word(&mut rng),
                word(&mut rng),
                topic.to_uppercase(),
                rng.next(900) + 100
            ));
        }
        text.trim_end().to_string()
    }
}

/// The full text of attachment `n`: 1,800 to 3,400 tokens of settings.
fn attachment_text(n: u64) -> String {
    let mut rng = Rng::new(10_000 + n);
    let (topic, words) = TOPICS[(n % 6) as usize];
    let lines = 110 + rng.next(90);
    let mut text = format!("# {topic} settings, revision {n}\n\n");
    for i in 0..lines {
        text.push_str(&format!(
            "- {topic}.{}.{i} = {} ; owner: team-{} ; note: keep the {} stable\n",
            words[rng.next(6) as usize],
            rng.next(100_000),
            rng.next(20),
            words[rng.next(6) as usize]
        ));
    }
    text
}

/// Where a working item lives.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Ambient(u64),
    EffortTurn(u64),
}

/// The simulated session: an append-only store and a working set.
struct Sim {
    counter: ExactCounter,
    policy: CompactionPolicy,
    /// Every stored message: seq → (text, tokens). Never changed after insertion.
    store: BTreeMap<u64, (String, u64)>,
    /// Every attachment, in full.
    attachments: Vec<Attachment>,
    /// The full-mode context text of each attachment when it was attached.
    attachment_originals: BTreeMap<String, String>,
    /// Working ambient and effort messages, by id.
    working: BTreeMap<String, Entry>,
    /// Fixed items in the working set (system prompt, summaries), id → tokens.
    fixed: BTreeMap<String, u64>,
    /// The expanded effort, while expanded: turns since its last reference.
    expanded: Option<u64>,
    rolling: Option<RollingSummary>,
    /// Every rolling summary ever written (they are records too).
    rolling_history: Vec<RollingSummary>,
    events: Vec<CompactionEvent>,
    /// (message, working tokens after the check, level applied)
    curve: Vec<(u64, u64, Option<Level>)>,
    not_applied: u64,
    last_user_text: String,
}

impl Sim {
    fn new() -> Sim {
        let mut fixed = BTreeMap::new();
        fixed.insert("system".to_string(), SYSTEM_PROMPT_TOKENS);
        fixed.insert("summary:perf-fix".to_string(), PERF_FIX_SUMMARY_TOKENS);
        Sim {
            counter: ExactCounter::new(Encoding::O200kBase),
            policy: CompactionPolicy::new(CompactionConfig::default()).unwrap(),
            store: BTreeMap::new(),
            attachments: Vec::new(),
            attachment_originals: BTreeMap::new(),
            working: BTreeMap::new(),
            fixed,
            expanded: None,
            rolling: None,
            rolling_history: Vec::new(),
            events: Vec::new(),
            curve: Vec::new(),
            not_applied: 0,
            last_user_text: String::new(),
        }
    }

    fn items(&self) -> Vec<WorkingItem<'_>> {
        let mut items: Vec<WorkingItem<'_>> = self
            .fixed
            .iter()
            .map(|(id, tokens)| WorkingItem::fixed(id, *tokens))
            .collect();
        for (id, entry) in &self.working {
            let (seq, effort) = match entry {
                Entry::Ambient(seq) => (*seq, false),
                Entry::EffortTurn(seq) => (*seq, true),
            };
            let (text, tokens) = &self.store[&seq];
            items.push(if effort {
                WorkingItem::effort_turn(id, *tokens, "parser", SeqRange::single(seq), 1, text)
            } else {
                WorkingItem::ambient(id, *tokens, SeqRange::single(seq), 1, text)
            });
        }
        if let Some(idle) = self.expanded {
            items.push(WorkingItem::expanded(
                "effort:perf-fix",
                PERF_FIX_RAW_TOKENS,
                PERF_FIX_SUMMARY_TOKENS,
                idle,
            ));
        }
        let current = self.store.len() as u64;
        for attachment in &self.attachments {
            items.push(WorkingItem::attachment(attachment, current));
        }
        if let Some(rolling) = &self.rolling {
            items.push(WorkingItem::rolling_summary("rolling", rolling));
        }
        items
    }

    fn working_tokens(&self) -> u64 {
        self.items().iter().map(|i| i.tokens).sum()
    }

    /// Stores message `seq` and runs the compaction check, as the planner will after every
    /// message.
    fn message(&mut self, seq: u64) {
        let text = message_text(seq);
        let tokens = u64::from(self.counter.count(&text));
        self.store.insert(seq, (text.clone(), tokens));
        let in_effort = EFFORT.contains(&seq);
        let id = format!("m:{seq}");
        self.working.insert(
            id,
            if in_effort {
                Entry::EffortTurn(seq)
            } else {
                Entry::Ambient(seq)
            },
        );
        if seq == *EFFORT.end() {
            // The effort is concluded: its raw log leaves, its summary enters (as the
            // session does; not a compaction).
            self.working
                .retain(|_, e| !matches!(e, Entry::EffortTurn(_)));
            self.fixed.insert("summary:parser".to_string(), 55);
        }
        if seq == EXPANDED_AT {
            self.fixed.remove("summary:perf-fix");
            self.expanded = Some(0);
        } else if let Some(idle) = &mut self.expanded {
            // Referenced by the messages up to 206, idle after; counted in turns (exchanges).
            *idle = if seq <= EXPANDED_AT + 5 {
                0
            } else {
                (seq - EXPANDED_AT - 5) / 2
            };
        }
        if seq % 2 == 1 {
            self.last_user_text = text.clone();
            if let Some(n) = attachment_number(seq) {
                let name = attachment_name(n);
                let full = attachment_text(n);
                let attachment = Attachment::new(
                    NewAttachment {
                        id: &format!("att-{n}"),
                        name: &name,
                        kind: AttachmentKind::File,
                        text: &full,
                        summary: None,
                        attached_at: seq,
                    },
                    &self.counter,
                )
                .unwrap();
                assert!(
                    attachment.full_tokens >= 1_800,
                    "{name}: {}",
                    attachment.full_tokens
                );
                self.attachment_originals
                    .insert(attachment.id.clone(), attachment.context_text());
                self.attachments.push(attachment);
            }
        }
        // References use a high keyword overlap: generated texts share many words.
        detect_references(&mut self.attachments, &text, seq, 6);
        self.check(seq);
    }

    fn check(&mut self, seq: u64) {
        let before = self.working_tokens();
        let decision = self
            .policy
            .decide(Usage::new(before, WINDOW).unwrap(), seq, seq * 30_000);
        let mut applied = None;
        if let Some(level) = decision.level_to_apply() {
            let items = self.items();
            let config = self.policy.config().clone();
            let plan = plan_compaction(&CompactionInput {
                level,
                items: &items,
                query: &self.last_user_text,
                relevance: Relevance::Lexical,
                config: &config,
                window_tokens: WINDOW,
            })
            .unwrap();
            assert_eq!(plan.tokens_before, before);
            let summary = plan.rolling.as_ref().map(|r| {
                RollingSummary::extractive(&r.input(), r.max_words, &self.counter).unwrap()
            });
            let outcome = plan.finish(&decision, summary.as_ref()).unwrap();
            drop(items);
            match outcome {
                CompactionOutcome::Applied(event) => {
                    self.apply(&event, summary);
                    self.policy.record_applied(&event);
                    assert_eq!(
                        self.working_tokens(),
                        event.tokens_after,
                        "the event's arithmetic is the working set's"
                    );
                    applied = Some(event.level);
                    self.events.push(event);
                }
                CompactionOutcome::NotApplied { .. } => {
                    self.not_applied += 1;
                    self.policy.record_not_applied(&decision);
                }
            }
        }
        let after = self.working_tokens();
        assert!(
            after <= WINDOW,
            "message {seq}: {after} tokens exceed the {WINDOW}-token window"
        );
        self.curve.push((seq, after, applied));
    }

    /// Applies an event's moves to the working set; the store is not touched.
    fn apply(&mut self, event: &CompactionEvent, summary: Option<RollingSummary>) {
        for moved in &event.moved {
            match moved.kind {
                MovedKind::Ambient | MovedKind::EffortTurn => {
                    assert!(
                        self.working.remove(&moved.id).is_some(),
                        "{} was in the working set",
                        moved.id
                    );
                }
                MovedKind::Attachment => {
                    let attachment = self
                        .attachments
                        .iter_mut()
                        .find(|a| a.id == moved.id)
                        .unwrap();
                    assert!(attachment.compress());
                }
                MovedKind::Expanded => {
                    self.expanded = None;
                    self.fixed
                        .insert("summary:perf-fix".to_string(), PERF_FIX_SUMMARY_TOKENS);
                }
                MovedKind::RollingSummary => {
                    assert_eq!(moved.id, "rolling");
                    self.rolling = None;
                }
            }
        }
        if let Some(summary) = summary {
            self.rolling_history.push(summary.clone());
            self.rolling = Some(summary);
        }
    }
}

fn run() -> Sim {
    let mut sim = Sim::new();
    for seq in 1..=MESSAGES {
        sim.message(seq);
    }
    sim
}

portable_tests! {
    fn a_long_conversation_never_overflows_shows_every_level_and_loses_nothing() {
        let sim = run();
        assert_eq!(sim.store.len() as u64, MESSAGES);
        assert!(sim.attachments.len() >= 12);

        // Every level fired, and every applied event made the context smaller.
        let fired = |level: Level| sim.events.iter().filter(|e| e.level == level).count();
        let (soft, hard, emergency) = (fired(Level::Soft), fired(Level::Hard), fired(Level::Emergency));
        assert!(soft >= 1 && hard >= 1 && emergency >= 1, "soft {soft}, hard {hard}, emergency {emergency}");
        for event in &sim.events {
            assert!(event.tokens_after < event.tokens_before, "{event:?}");
            assert!(!event.moved.is_empty());
            assert!(event.banner().starts_with(&format!("--- Compacted context (level {}, {}): ", event.level.number(), event.level.name())));
        }
        // The cooldown held: no two compactions closer than 2 messages, except an emergency
        // following a lighter level (the documented bypass).
        for pair in sim.events.windows(2) {
            let gap = pair[1].at_message - pair[0].at_message;
            let bypass = pair[1].level == Level::Emergency && pair[0].level < Level::Emergency;
            let over = pair[1].trigger_usage.exceeds_window();
            assert!(gap >= 2 || bypass || over, "{} then {}", pair[0].at_message, pair[1].at_message);
        }
        // Compaction does not run every message: far fewer events than checks.
        assert!(sim.events.len() < (MESSAGES / 4) as usize, "{} compactions", sim.events.len());

        // Open efforts are protected below the emergency level.
        for event in &sim.events {
            if event.level < Level::Emergency {
                assert!(event.moved.iter().all(|m| m.kind != MovedKind::EffortTurn), "{event:?}");
            }
        }
        // The expansion survived the emergency at the message that referenced it, then went
        // idle and was collapsed early by compaction.
        let collapsed: Vec<&CompactionEvent> = sim
            .events
            .iter()
            .filter(|e| e.moved.iter().any(|m| m.id == "effort:perf-fix"))
            .collect();
        assert_eq!(collapsed.len(), 1);
        assert!(collapsed[0].at_message > EXPANDED_AT + 5, "not while it was referenced");
        assert!(sim.expanded.is_none());
        // Level 3 keeps the last 4 ambient messages; its rolling summary stays within budget.
        for event in sim.events.iter().filter(|e| e.level == Level::Emergency) {
            let info = event.rolling_summary.as_ref().expect("every emergency here summarises history");
            assert!(info.tokens <= rolling_budget_tokens(CompactionConfig::default().rolling_summary_max_words), "{}", info.tokens);
            let newest_moved = event.moved.iter().filter(|m| m.kind == MovedKind::Ambient).map(|m| m.id.clone()).max_by_key(|id| id[2..].parse::<u64>().unwrap());
            let newest: u64 = newest_moved.unwrap()[2..].parse().unwrap();
            assert!(event.at_message - newest >= 4, "message {}: {newest} moved", event.at_message);
        }

        // Nothing was lost: every stored message is byte-identical to what was written, and
        // every moved item can be found in the store.
        for (seq, (text, tokens)) in &sim.store {
            assert_eq!(text.as_bytes(), message_text(*seq).as_bytes(), "message {seq}");
            assert_eq!(*tokens, u64::from(sim.counter.count(text)));
        }
        let mut moved_messages = 0;
        for event in &sim.events {
            for moved in &event.moved {
                match moved.kind {
                    MovedKind::Ambient | MovedKind::EffortTurn => {
                        let seq: u64 = moved.id.strip_prefix("m:").unwrap().parse().unwrap();
                        let (text, tokens) = &sim.store[&seq];
                        assert_eq!(*tokens, moved.tokens);
                        assert_eq!(text, &message_text(seq));
                        moved_messages += 1;
                    }
                    MovedKind::Attachment => {
                        let mut attachment = sim.attachments.iter().find(|a| a.id == moved.id).unwrap().clone();
                        let n: u64 = moved.id.strip_prefix("att-").unwrap().parse().unwrap();
                        attachment.expand();
                        assert_eq!(attachment.full_text.as_bytes(), attachment_text(n).as_bytes());
                        assert_eq!(attachment.context_text(), sim.attachment_originals[&moved.id]);
                    }
                    MovedKind::Expanded | MovedKind::RollingSummary => {}
                }
            }
            if let Some(info) = &event.rolling_summary {
                for range in &info.covers {
                    for seq in range.first..=range.last {
                        assert!(sim.store.contains_key(&seq), "summary covers stored message {seq}");
                    }
                }
            }
        }
        assert!(moved_messages > 100, "{moved_messages} messages left the working set");
        // Re-expanding the whole conversation from the store gives it back exactly.
        let restored: Vec<&str> = sim.store.values().map(|(t, _)| t.as_str()).collect();
        let original: Vec<String> = (1..=MESSAGES).map(message_text).collect();
        assert_eq!(restored, original);

        // The rolling summaries are never empty and fold into each other.
        assert!(!sim.rolling_history.is_empty());
        assert!(sim.rolling_history.iter().all(|r| !r.text.trim().is_empty()));
        for pair in sim.rolling_history.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            for range in &a.covers {
                assert!(b.covers_seq(range.first) && b.covers_seq(range.last), "a later summary covers what an earlier one did");
            }
        }

        // The token curve: the highest working set after any check, and a short table for
        // `--nocapture` readers.
        let peak = sim.curve.iter().map(|(_, t, _)| *t).max().unwrap();
        assert!(peak <= WINDOW);
        println!("peak {peak} / {WINDOW}; soft {soft}, hard {hard}, emergency {emergency}, not applied {}", sim.not_applied);
        for event in &sim.events {
            println!("{:>4} {:>6} {:>5} → {:>5}  {}", event.at_message, event.trigger_usage.percent(), event.tokens_before, event.tokens_after, event.banner());
        }
    }

    fn the_long_run_is_deterministic() {
        let a = run();
        let b = run();
        assert_eq!(serde_json::to_string(&a.events).unwrap(), serde_json::to_string(&b.events).unwrap());
        assert_eq!(a.curve, b.curve);
        assert_eq!(serde_json::to_string(a.policy.state()).unwrap(), serde_json::to_string(b.policy.state()).unwrap());
    }
}

#[test]
#[cfg(not(target_arch = "wasm32"))]
fn attachments_are_several_thousand_tokens() {
    let counter = ExactCounter::new(Encoding::O200kBase);
    for n in 1..=12 {
        let tokens = counter.count(&attachment_text(n));
        assert!(
            (1_800..=4_500).contains(&tokens),
            "attachment {n}: {tokens}"
        );
    }
}
