//! Property tests over random operation sequences, against a naive reference implementation
//! that rescans everything on every step. Native only (proptest).
#![cfg(not(target_arch = "wasm32"))]

// The one piece of product text code the reference uses: the wording of the fallback summary,
// which is tested on its own in `text.rs`; keywords, references and search are the reference's.
use ccm_core::text::{extractive_summary_of_conversation, Speaker};
use ccm_core::{Config, ContextMessage, ReferenceRule, Role, Session, TokenCounter};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

const NAMES: [&str; 6] = ["alpha", "beta", "gamma", "delta task", "Alpha", "?!"];
const IDS: [&str; 6] = ["alpha", "beta", "gamma", "delta-task", "nope", "Delta Task"];
const SUMMARIES: [Option<&str>; 4] = [
    None,
    Some("alpha widget cache tuned"),
    Some("gamma ledger rounding fixed"),
    Some("  "),
];
const QUERIES: [&str; 5] = ["alpha", "ledger rounding", "widget cache", "zzz", "the"];
const TEXTS: [&str; 7] = [
    "hello there",
    "about the widget cache",
    "ledger rounding again",
    "alpha",
    "delta task status",
    "nothing relevant",
    "the beta plan",
];

#[derive(Debug, Clone)]
enum Op {
    Open(usize),
    Close(Option<usize>, usize),
    Reopen(usize),
    Expand(usize),
    Collapse(usize),
    Switch(usize),
    Search(usize),
    Status,
    Garbage,
}

#[derive(Debug, Clone)]
struct ScriptTurn {
    user: usize,
    ops: Vec<Op>,
    assistant: usize,
    abort: bool,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES.len()).prop_map(Op::Open),
        3 => (proptest::option::of(0..IDS.len()), 0..SUMMARIES.len()).prop_map(|(i, s)| Op::Close(i, s)),
        1 => (0..IDS.len()).prop_map(Op::Reopen),
        3 => (0..IDS.len()).prop_map(Op::Expand),
        1 => (0..IDS.len()).prop_map(Op::Collapse),
        2 => (0..IDS.len()).prop_map(Op::Switch),
        1 => (0..QUERIES.len()).prop_map(Op::Search),
        1 => Just(Op::Status),
        1 => Just(Op::Garbage),
    ]
}

fn script_turn() -> impl Strategy<Value = ScriptTurn> {
    (
        0..TEXTS.len(),
        proptest::collection::vec(op(), 0..4),
        0..TEXTS.len(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(user, ops, assistant, abort)| ScriptTurn {
            user,
            ops,
            assistant,
            abort,
        })
}

/// The reference: the rules of the specification written as plainly as possible, scanning
/// everything every time.
#[derive(Debug, Clone)]
struct NaiveEffort {
    id: String,
    name: String,
    open: bool,
    messages: Vec<(Role, String)>,
    summary: Option<String>,
    concluded_seq: u64,
    last_ref: u64,
    evicted: bool,
    header: String,
    /// Tokens of its summary line, once concluded.
    summary_tokens: u64,
}

#[derive(Clone)]
struct Naive {
    config: Config,
    turn: u64,
    efforts: Vec<NaiveEffort>,
    ambient: Vec<(Role, String, u32)>,
    active: Option<String>,
    open_order: Vec<String>,
    expanded: Vec<(String, u64)>,
    concluded_counter: u64,
    system: String,
    pending: Option<String>,
    active_before: Option<String>,
    opened_this_turn: Vec<String>,
    switched_this_turn: Option<String>,
    touched: BTreeSet<String>,
    counter: Arc<dyn TokenCounter>,
}

/// The specification's stopwords among the words this test's texts, names, queries and
/// fallback summaries use. The reference keeps its own list so that it does not share the
/// product's keyword code; `the_reference_stopwords_are_the_specifications` checks the list
/// against every word of the pool.
const REFERENCE_STOPWORDS: [&str; 8] =
    ["about", "again", "for", "no", "the", "there", "this", "was"];

/// Lowercase words with punctuation stripped from both ends, written independently of
/// `ccm_core::text::words` (the pool's punctuation is all at word edges).
fn naive_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Summary keywords: words of three or more characters that are not stopwords.
fn naive_keywords(text: &str) -> BTreeSet<String> {
    naive_words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !REFERENCE_STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// An effort id: the runs of letters and digits of the lowercased name, joined by hyphens.
/// The pool's names are short, so the product's length cut never applies.
fn naive_slug(name: &str) -> String {
    let lower = name.to_lowercase();
    let runs: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|r| !r.is_empty())
        .collect();
    runs.join("-")
}

/// Search terms: words of two or more characters that are not stopwords.
fn naive_search_terms(text: &str) -> BTreeSet<String> {
    naive_words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 2 && !REFERENCE_STOPWORDS.contains(&w.as_str()))
        .collect()
}

#[test]
fn the_reference_stopwords_are_the_specifications() {
    let mut pool: Vec<&str> = TEXTS.to_vec();
    pool.extend(NAMES);
    pool.extend(IDS);
    pool.extend(QUERIES);
    pool.extend(SUMMARIES.iter().flatten());
    // The extractive summary of an effort without messages.
    pool.push("(no conversation was recorded for this effort)");
    for text in pool {
        for word in naive_words(text) {
            assert_eq!(
                REFERENCE_STOPWORDS.contains(&word.as_str()),
                ccm_core::text::is_stopword(&word),
                "{word:?} in {text:?}"
            );
        }
    }
}

/// Whether `text` names `id` as whole words (with hyphens or spaces), checked at every place
/// the id occurs.
fn mentions_as_words(text: &str, id: &str) -> bool {
    let lower = text.to_lowercase();
    let spaced = id.replace('-', " ");
    [id.to_string(), spaced].iter().any(|needle| {
        (0..lower.len())
            .filter(|&at| lower[at..].starts_with(needle.as_str()))
            .any(|at| {
                let before = lower[..at].chars().last();
                let after = lower[at + needle.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
    })
}

impl Naive {
    fn find(&self, id: &str) -> Option<usize> {
        let id = id.trim();
        self.efforts
            .iter()
            .position(|e| e.id == id)
            .or_else(|| self.efforts.iter().position(|e| e.id == naive_slug(id)))
    }

    fn is_expanded(&self, id: &str) -> bool {
        self.expanded.iter().any(|(e, _)| e == id)
    }

    fn touch(&mut self, i: usize) {
        self.efforts[i].last_ref = self.turn;
        self.touched.insert(self.efforts[i].id.clone());
    }

    /// Applies an operation; returns whether it is valid.
    fn apply(&mut self, op: &Op, search_hits: &[(String, bool)]) -> bool {
        match *op {
            Op::Open(n) => {
                let id = naive_slug(NAMES[n]);
                if id.is_empty() || self.find(&id).is_some_and(|i| self.efforts[i].id == id) {
                    return false;
                }
                let name = NAMES[n].trim().to_string();
                self.efforts.push(NaiveEffort {
                    header: ccm_core::prompt::effort_header(&id, &name, None),
                    id: id.clone(),
                    name,
                    open: true,
                    messages: Vec::new(),
                    summary: None,
                    concluded_seq: 0,
                    last_ref: self.turn,
                    evicted: false,
                    summary_tokens: 0,
                });
                self.open_order.push(id.clone());
                self.active = Some(id.clone());
                self.opened_this_turn.push(id);
                true
            }
            Op::Close(target, s) => {
                let Some(i) = (match target {
                    Some(t) => self.find(IDS[t]),
                    None => self.active.as_ref().and_then(|a| self.find(a)),
                }) else {
                    return false;
                };
                if !self.efforts[i].open || SUMMARIES[s].is_some_and(|x| x.trim().is_empty()) {
                    return false;
                }
                let e = &self.efforts[i];
                let summary = match SUMMARIES[s] {
                    Some(text) => text.trim().to_string(),
                    None => {
                        // The effort's own messages with who wrote them, and the turn's
                        // pending user message when the turn is routed to this effort.
                        let mut texts: Vec<(Speaker, &str)> = e
                            .messages
                            .iter()
                            .map(|(role, t)| {
                                let speaker = if *role == Role::User {
                                    Speaker::Person
                                } else {
                                    Speaker::Assistant
                                };
                                (speaker, t.as_str())
                            })
                            .collect();
                        let target = self
                            .opened_this_turn
                            .first()
                            .or(self.switched_this_turn.as_ref())
                            .or(self.active_before.as_ref());
                        if let (Some(pending), Some(target)) = (&self.pending, target) {
                            if *target == e.id {
                                texts.push((Speaker::Person, pending.as_str()));
                            }
                        }
                        extractive_summary_of_conversation(&e.name, &texts)
                    }
                };
                let id = e.id.clone();
                let summary_tokens = u64::from(
                    self.counter
                        .count(&ccm_core::prompt::summary_line(&id, &summary)),
                );
                let e = &mut self.efforts[i];
                e.open = false;
                e.summary_tokens = summary_tokens;
                e.summary = Some(summary);
                e.concluded_seq = self.concluded_counter;
                e.evicted = false;
                self.concluded_counter += 1;
                self.open_order.retain(|o| *o != id);
                if self.active.as_deref() == Some(&id) {
                    // While efforts are open, the first one in opening order takes over.
                    self.active = self.open_order.first().cloned();
                }
                self.touch(i);
                true
            }
            Op::Reopen(t) => {
                let Some(i) = self.find(IDS[t]) else {
                    return false;
                };
                if self.efforts[i].open {
                    return false;
                }
                let id = self.efforts[i].id.clone();
                self.efforts[i].open = true;
                self.efforts[i].evicted = false;
                self.expanded.retain(|(e, _)| *e != id);
                self.open_order.push(id.clone());
                self.active = Some(id.clone());
                self.switched_this_turn = Some(id);
                self.touch(i);
                true
            }
            Op::Expand(t) => {
                let Some(i) = self.find(IDS[t]) else {
                    return false;
                };
                let id = self.efforts[i].id.clone();
                if self.efforts[i].open || self.is_expanded(&id) {
                    return false;
                }
                self.efforts[i].evicted = false;
                self.expanded.push((id, self.turn));
                self.touch(i);
                true
            }
            Op::Collapse(t) => {
                let Some(i) = self.find(IDS[t]) else {
                    return false;
                };
                let id = self.efforts[i].id.clone();
                if !self.is_expanded(&id) {
                    return false;
                }
                self.expanded.retain(|(e, _)| *e != id);
                true
            }
            Op::Switch(t) => {
                let Some(i) = self.find(IDS[t]) else {
                    return false;
                };
                let id = self.efforts[i].id.clone();
                if !self.efforts[i].open || self.active.as_deref() == Some(&id) {
                    return false;
                }
                self.active = Some(id.clone());
                self.switched_this_turn = Some(id);
                self.touch(i);
                true
            }
            Op::Search(q) => {
                // "the" is the pool's only query without a searchable word.
                if QUERIES[q] == "the" {
                    return false;
                }
                let expected = self.search(QUERIES[q]);
                let found: BTreeSet<(String, bool)> = search_hits.iter().cloned().collect();
                assert_eq!(found, expected, "hits for {:?}", QUERIES[q]);
                for (hit, about) in expected {
                    // Only a hit on what the effort is about counts as a reference.
                    if about {
                        let i = self.find(&hit).expect("hits name stored efforts");
                        self.efforts[i].evicted = false;
                        self.touch(i);
                    }
                }
                true
            }
            Op::Status => true,
            Op::Garbage => false,
        }
    }

    fn begin(&mut self, text: &str) {
        self.turn += 1;
        self.pending = Some(text.to_string());
        self.active_before = self.active.clone();
        self.opened_this_turn.clear();
        self.switched_this_turn = None;
        self.touched.clear();
    }

    fn end(&mut self, assistant: &str) {
        let user = self.pending.take().unwrap();
        // The exchange belongs to the first effort the turn opened, else to the effort it last
        // switched to or reopened, else to the effort active when the turn began, else to the
        // ambient log.
        let target = self
            .opened_this_turn
            .first()
            .cloned()
            .or_else(|| self.switched_this_turn.clone())
            .or_else(|| self.active_before.clone());
        match target.and_then(|t| self.find(&t)) {
            Some(i) => {
                self.efforts[i].messages.push((Role::User, user.clone()));
                self.efforts[i]
                    .messages
                    .push((Role::Assistant, assistant.to_string()));
            }
            None => {
                let count = |text: &str| self.counter.count(text);
                let (user_tokens, assistant_tokens) = (count(&user), count(assistant));
                self.ambient.push((Role::User, user.clone(), user_tokens));
                self.ambient
                    .push((Role::Assistant, assistant.to_string(), assistant_tokens));
            }
        }
        let turn = self.turn;
        let by_user = self.referenced_by(&user);
        let by_assistant = self.referenced_by(assistant);
        for (i, e) in self.efforts.iter_mut().enumerate() {
            if e.open {
                continue;
            }
            let referenced = by_user.contains(&i) || by_assistant.contains(&i);
            let reviving = match self.config.reference_rule {
                ReferenceRule::Seed => referenced,
                ReferenceRule::Distinctive => by_user.contains(&i),
            };
            if e.evicted && (reviving || self.touched.contains(&e.id)) {
                e.evicted = false;
            }
            if !e.evicted && (referenced || self.touched.contains(&e.id)) {
                e.last_ref = turn;
            }
        }
        let efforts = self.efforts.clone();
        for (id, last) in &mut self.expanded {
            let e = efforts.iter().find(|e| e.id == *id).unwrap();
            if e.last_ref == turn {
                *last = turn;
            }
        }
        let decay = u64::from(self.config.decay_threshold);
        self.expanded.retain(|(_, last)| turn - last < decay);
        // Summaries not referenced within the threshold are not in the next turn's context.
        let eviction = u64::from(self.config.summary_eviction_threshold);
        let expanded: Vec<String> = self.expanded.iter().map(|(e, _)| e.clone()).collect();
        for e in &mut self.efforts {
            if !e.open
                && !e.evicted
                && !expanded.contains(&e.id)
                && turn + 1 - e.last_ref >= eviction
            {
                e.evicted = true;
            }
        }
        // Then the summary budget: least recently referenced first, earliest concluded first.
        loop {
            let mut resident: Vec<&mut NaiveEffort> = self
                .efforts
                .iter_mut()
                .filter(|e| !e.open && !e.evicted && !expanded.contains(&e.id))
                .collect();
            let total: u64 = resident.iter().map(|e| e.summary_tokens).sum();
            if total <= u64::from(self.config.summary_token_budget) {
                break;
            }
            resident.sort_by_key(|e| (e.last_ref, e.concluded_seq));
            resident[0].evicted = true;
        }
    }

    /// The concluded efforts (indices) that `text` refers to under the configured rule,
    /// checked against every concluded effort, one by one.
    fn referenced_by(&self, text: &str) -> BTreeSet<usize> {
        let lower = text.to_lowercase();
        let words: BTreeSet<String> = naive_words(text).into_iter().collect();
        let min = self.config.min_keyword_overlap as usize;
        let concluded: Vec<usize> = (0..self.efforts.len())
            .filter(|&i| !self.efforts[i].open)
            .collect();
        let keywords = |i: usize| naive_keywords(self.efforts[i].summary.as_deref().unwrap_or(""));
        match self.config.reference_rule {
            // The literal rule: the id (with hyphens or spaces) anywhere in the text, or enough
            // summary keywords among its words.
            ReferenceRule::Seed => concluded
                .into_iter()
                .filter(|&i| {
                    let id = &self.efforts[i].id;
                    lower.contains(id.as_str())
                        || lower.contains(&id.replace('-', " "))
                        || keywords(i).intersection(&words).count() >= min
                })
                .collect(),
            ReferenceRule::Distinctive => {
                let n = concluded.len() as f64;
                let df = |word: &str| {
                    concluded
                        .iter()
                        .filter(|&&j| keywords(j).contains(word))
                        .count()
                };
                concluded
                    .iter()
                    .copied()
                    .filter(|&i| {
                        let score: f64 = keywords(i)
                            .iter()
                            .filter(|k| words.contains(*k))
                            .map(|k| {
                                let df = df(k);
                                if df > 32 {
                                    0.0
                                } else {
                                    (1.0 + n / df as f64).ln() / (1.0 + n).ln()
                                }
                            })
                            .sum();
                        score + 1e-9 >= min as f64 || mentions_as_words(text, &self.efforts[i].id)
                    })
                    .collect()
            }
        }
    }

    /// The hits `search_efforts` must give for `query`, as (id, about) pairs: every concluded
    /// effort with a query term among what it is about (id parts, name, summary) or among the
    /// words of its raw log, or whose id the query names. The pool has at most four efforts
    /// and few log words, so the product's result limit and log-term cap never apply.
    fn search(&self, query: &str) -> BTreeSet<(String, bool)> {
        let terms = naive_search_terms(query);
        let slug = naive_slug(query);
        self.efforts
            .iter()
            .filter(|e| !e.open)
            .filter_map(|e| {
                let mut described: BTreeSet<String> =
                    e.id.split('-')
                        .filter(|p| p.chars().count() >= 2)
                        .map(str::to_string)
                        .collect();
                described.extend(naive_search_terms(&e.name));
                described.extend(naive_search_terms(e.summary.as_deref().unwrap_or("")));
                let logged: BTreeSet<String> = e
                    .messages
                    .iter()
                    .flat_map(|(_, text)| naive_keywords(text))
                    .filter(|w| w.chars().any(char::is_alphabetic))
                    .collect();
                let names_id = terms.contains(&e.id) || slug == e.id;
                let about = names_id || terms.iter().any(|t| described.contains(t));
                (about || terms.iter().any(|t| logged.contains(t))).then(|| (e.id.clone(), about))
            })
            .collect()
    }

    /// The ambient messages in the window: at most `ambient_window` exchanges from the end,
    /// and of those, the newest plus older ones while they fit the token budget.
    fn ambient_window(&self) -> &[(Role, String, u32)] {
        let pairs = self.ambient.len() / 2;
        let mut kept = 0;
        let mut tokens = 0u64;
        while kept < pairs && kept < self.config.ambient_window as usize {
            let start = self.ambient.len() - 2 * (kept + 1);
            let exchange: u64 = self.ambient[start..start + 2]
                .iter()
                .map(|m| u64::from(m.2))
                .sum();
            if kept > 0 && tokens + exchange > u64::from(self.config.ambient_token_budget) {
                break;
            }
            tokens += exchange;
            kept += 1;
        }
        &self.ambient[self.ambient.len() - 2 * kept..]
    }

    fn context(&self) -> Vec<ContextMessage> {
        let msg = |role: Role, content: &str| ContextMessage {
            role,
            content: content.to_string(),
        };
        let mut out = vec![msg(Role::System, &self.system)];
        let mut concluded: Vec<&NaiveEffort> = self
            .efforts
            .iter()
            .filter(|e| !e.open && !e.evicted && !self.is_expanded(&e.id))
            .collect();
        concluded.sort_by_key(|e| e.concluded_seq);
        for e in concluded {
            out.push(msg(
                Role::System,
                &ccm_core::prompt::summary_line(&e.id, e.summary.as_ref().unwrap()),
            ));
        }
        for (role, text, _) in self.ambient_window() {
            out.push(msg(*role, text));
        }
        let log = |out: &mut Vec<ContextMessage>, id: &str| {
            let e = self.efforts.iter().find(|e| e.id == id).unwrap();
            out.push(msg(Role::System, &e.header));
            for (role, text) in &e.messages {
                out.push(msg(*role, text));
            }
        };
        for (id, _) in &self.expanded {
            log(&mut out, id);
        }
        for id in self
            .open_order
            .iter()
            .filter(|o| Some(*o) != self.active.as_ref())
            .chain(self.active.iter())
        {
            log(&mut out, id);
        }
        if let Some(p) = &self.pending {
            out.push(msg(Role::User, p));
        }
        out
    }
}

fn tool_call(op: &Op) -> (&'static str, String) {
    let id = |t: usize| serde_json::json!({ "id": IDS[t] }).to_string();
    match *op {
        Op::Open(n) => (
            "open_effort",
            serde_json::json!({ "name": NAMES[n] }).to_string(),
        ),
        Op::Close(t, s) => {
            let mut args = serde_json::Map::new();
            if let Some(t) = t {
                args.insert("id".into(), IDS[t].into());
            }
            if let Some(summary) = SUMMARIES[s] {
                args.insert("summary".into(), summary.into());
            }
            ("close_effort", serde_json::Value::Object(args).to_string())
        }
        Op::Reopen(t) => ("reopen_effort", id(t)),
        Op::Expand(t) => ("expand_effort", id(t)),
        Op::Collapse(t) => ("collapse_effort", id(t)),
        Op::Switch(t) => ("switch_effort", id(t)),
        Op::Search(q) => (
            "search_efforts",
            serde_json::json!({ "query": QUERIES[q] }).to_string(),
        ),
        Op::Status => ("effort_status", "{}".to_string()),
        Op::Garbage => ("expand_effort", "{\"id\": ".to_string()),
    }
}

fn check_invariants(s: &Session, completed_turns: u64) {
    let mut seqs: Vec<u64> = s.ambient().messages().iter().map(|m| m.seq).collect();
    for e in s.efforts().all() {
        seqs.extend(e.messages.iter().map(|m| m.seq));
    }
    seqs.sort_unstable();
    assert!(
        seqs.iter().copied().eq(0..2 * completed_turns),
        "every message exactly once: {seqs:?}"
    );
    for id in s.efforts().expanded_ids() {
        assert_eq!(
            s.efforts().get(id).unwrap().status,
            ccm_core::EffortStatus::Concluded,
            "expanded ⊆ concluded"
        );
    }
    if let Some(active) = s.efforts().active_id() {
        assert!(s.efforts().open_ids().contains(&active), "active ∈ open");
    }
    let plan = s.build_plan();
    assert_eq!(plan.totals.context_tokens, s.working_tokens());
    assert_eq!(
        plan.totals.context_tokens,
        plan.included.iter().map(|i| i.tokens).sum::<u64>()
    );
    for e in s.efforts().all() {
        let raw: u64 = u64::from(e.header_tokens)
            + e.messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        assert_eq!(e.raw_tokens, raw, "raw token total of {}", e.id);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_sessions_match_the_naive_reference(
        turns in proptest::collection::vec(script_turn(), 1..40),
        ambient_budget in 4u32..30,
        summary_budget in 10u32..60,
        seed_rule in proptest::bool::ANY,
    ) {
        // The reference implements the specification's tiers; automatic retrieval (Light and
        // Heavy modes) is tested on its own, so the mode here is Off.
        let config = Config {
            decay_threshold: 2,
            summary_eviction_threshold: 5,
            ambient_window: 3,
            // Small enough that both budgets decide in many sessions: an exchange of the test's
            // texts is a few tokens, a summary line about ten.
            ambient_token_budget: ambient_budget,
            summary_token_budget: summary_budget,
            reference_rule: if seed_rule { ReferenceRule::Seed } else { ReferenceRule::Distinctive },
            context_mode: ccm_core::ContextMode::Off,
            ..Config::default()
        };
        let mut session = Session::new(config.clone()).unwrap();
        let mut naive = Naive {
            system: session.system_prompt().to_string(),
            config,
            turn: 0,
            efforts: Vec::new(),
            ambient: Vec::new(),
            active: None,
            open_order: Vec::new(),
            expanded: Vec::new(),
            concluded_counter: 0,
            pending: None,
            active_before: None,
            opened_this_turn: Vec::new(),
            switched_this_turn: None,
            touched: BTreeSet::new(),
            counter: session.counter().clone(),
        };
        let mut completed = 0u64;
        for t in &turns {
            let before_json = session.to_json().unwrap();
            let naive_before = naive.clone();
            session.begin_turn(TEXTS[t.user], 0).unwrap();
            naive.begin(TEXTS[t.user]);
            for op in &t.ops {
                let (name, args) = tool_call(op);
                let outcome = session.execute_tool(name, &args);
                let hits: Vec<(String, bool)> = outcome.result["results"].as_array().map(|r| r.iter().map(|h| (h["id"].as_str().unwrap().to_string(), h["about"].as_bool().unwrap())).collect()).unwrap_or_default();
                let valid = naive.apply(op, &hits);
                prop_assert_eq!(outcome.ok, valid, "{}({}) -> {}", name, args, outcome.result);
                prop_assert_eq!(outcome.banner.is_some(), outcome.ok && !matches!(op, Op::Search(_) | Op::Status));
                prop_assert_eq!(session.build_context(), naive.context());
            }
            if t.abort {
                prop_assert_eq!(session.abort_turn().unwrap(), TEXTS[t.user]);
                prop_assert!(session.to_json().unwrap() == before_json, "abort must restore the session exactly");
                naive = naive_before;
            } else {
                session.end_turn(TEXTS[t.assistant], 0).unwrap();
                naive.end(TEXTS[t.assistant]);
                completed += 1;
            }
            check_invariants(&session, completed);
            prop_assert_eq!(session.build_context(), naive.context());
            // Exported and imported, the session keeps its context (expansions aside).
            let restored = Session::from_json(&session.to_json().unwrap()).unwrap();
            prop_assert!(restored.to_json().unwrap() == session.to_json().unwrap());
        }
    }
}

fn check_plan_invariants(s: &Session) -> Result<(), TestCaseError> {
    use ccm_core::plan::Section;
    let plan = s.build_plan();
    let budget = &plan.budget;
    if !budget.mandatory_over_budget {
        prop_assert!(
            plan.totals.context_tokens <= budget.request_budget,
            "{} > {}",
            plan.totals.context_tokens,
            budget.request_budget
        );
    }
    prop_assert!(budget.leased_used <= budget.leased_budget);
    prop_assert_eq!(
        plan.totals.context_tokens,
        plan.included.iter().map(|i| i.tokens).sum::<u64>()
    );
    prop_assert_eq!(
        plan.messages.len(),
        plan.included.iter().map(|i| i.message_count).sum::<usize>()
    );
    for item in &plan.included {
        let messages = &plan.messages[item.first_message..item.first_message + item.message_count];
        match item.section {
            Section::Ambient => {
                // An exchange is an atom: a user message and its answer, never one alone.
                prop_assert_eq!(messages.len(), 2, "{}", item.id);
                prop_assert_eq!(messages[0].role, Role::User);
                prop_assert_eq!(messages[1].role, Role::Assistant);
            }
            Section::Expanded | Section::Open => {
                let id = item.id.trim_start_matches("effort:");
                let effort = s.efforts().get(id).expect("log of a stored effort");
                prop_assert_eq!(
                    &messages[0].content,
                    &effort.header,
                    "a log starts with its header"
                );
                // The kept turns are the newest, whole and in order: a suffix of the log.
                let body = &messages[1..];
                let stored = &effort.messages[effort.messages.len() - body.len()..];
                prop_assert!(body
                    .iter()
                    .zip(stored)
                    .all(|(a, b)| a.content == b.content && a.role == b.role));
                prop_assert!(
                    body.is_empty() || body[0].role == Role::User,
                    "{} starts mid-turn",
                    item.id
                );
                let tokens: u64 = u64::from(effort.header_tokens)
                    + stored.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
                prop_assert_eq!(item.tokens, tokens);
            }
            _ => {}
        }
    }
    // A sticky pin that fits beside the mandatory items on its own is always in.
    let mandatory: u64 = plan
        .included
        .iter()
        .filter(|i| i.priority == 0)
        .map(|i| i.tokens)
        .sum();
    let sticky: Vec<&ccm_core::pins::Pin> = s
        .pins()
        .all()
        .iter()
        .filter(|p| p.kind == ccm_core::pins::PinKind::Sticky)
        .collect();
    if sticky.len() == 1 {
        let target = &sticky[0].target;
        let size = plan
            .item(target)
            .map(|i| i.tokens)
            .or_else(|| plan.exclusion(target).map(|e| e.tokens));
        if let Some(size) = size {
            if mandatory + size <= budget.request_budget
                && s.efforts()
                    .get(target.split_once(':').unwrap().1)
                    .is_some_and(|e| e.log == ccm_core::LogState::Loaded)
            {
                // A pinned summary may be represented by its raw log instead (expanded or
                // superseded): the pin's content is in context either way.
                let represented = plan.exclusion(target).is_some_and(|e| {
                    matches!(
                        e.reason,
                        ccm_core::ExclusionReason::Expanded | ccm_core::ExclusionReason::Superseded
                    )
                });
                prop_assert!(
                    plan.item(target).is_some() || represented,
                    "sticky pin {} excluded though it fits",
                    target
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn plans_respect_the_budget_atoms_and_sticky_pins(
        turns in proptest::collection::vec(script_turn(), 1..30),
        window in 450u32..4000,
        leased in 0u32..400,
        mode in 0usize..3,
        pin_choice in 0usize..IDS.len(),
        pin_summary in proptest::bool::ANY,
        user in 0..TEXTS.len(),
    ) {
        let config = Config {
            decay_threshold: 2,
            summary_eviction_threshold: 5,
            ambient_window: 3,
            context_window: window,
            reserved_output_tokens: 100,
            leased_token_budget: leased,
            context_mode: [ccm_core::ContextMode::Off, ccm_core::ContextMode::Light, ccm_core::ContextMode::Heavy][mode],
            ..Config::default()
        };
        let mut session = Session::new(config).unwrap();
        let mut completed = 0u64;
        for t in &turns {
            session.begin_turn(TEXTS[t.user], 0).unwrap();
            for op in &t.ops {
                let (name, args) = tool_call(op);
                session.execute_tool(name, &args);
            }
            if t.abort {
                session.abort_turn().unwrap();
            } else {
                session.end_turn(TEXTS[t.assistant], 0).unwrap();
                completed += 1;
            }
            check_plan_invariants(&session)?;
        }
        let target = format!("{}:{}", if pin_summary { "summary" } else { "effort" }, naive_slug(IDS[pin_choice]));
        let request = ccm_core::pins::PinRequest { target, kind: ccm_core::pins::PinKind::Sticky, ttl_turns: None, task: None };
        let _ = session.pin(request, ccm_core::pins::PinOrigin::User);
        session.begin_turn(TEXTS[user], 0).unwrap();
        check_plan_invariants(&session)?;
        session.end_turn("ok", 0).unwrap();
        completed += 1;
        check_plan_invariants(&session)?;
        // Nothing is ever lost from storage, whatever the budget did to the context.
        check_invariants(&session, completed);
    }
}
