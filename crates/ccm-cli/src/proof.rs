//! Scripted proof runs of slices 2, 3 and 4, driven through the engine without an LLM.
//!
//! Each run is a list of scripted turns (user text, the tool calls a well-behaved model would
//! make, the assistant's answer). The runner executes them with `begin_turn`, `execute_tool` and
//! `end_turn`, and records one row per visible step: what is in working memory, the context's
//! tokens, the change, and the decay counters. Tests assert what each table must show; the CLI
//! prints them.

use ccm_core::metrics::{DecayReport, EventKind};
use ccm_core::Config;
use ccm_core::Session;
use ccm_core::TokenCounter;
use ccm_replay::synthetic;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// One scripted turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedTurn {
    /// Label of the row (`Turn 3`), or `None` for a setup turn that gets no row of its own.
    pub step: Option<String>,
    /// What the row's action column says.
    pub action: String,
    /// The user's message.
    pub user: String,
    /// Tool calls the model makes, as (name, JSON arguments).
    pub tools: Vec<(String, String)>,
    /// The assistant's final answer.
    pub assistant: String,
}

impl ScriptedTurn {
    fn shown(
        step: impl Into<String>,
        action: &str,
        user: &str,
        tools: &[(&str, &str)],
        assistant: &str,
    ) -> ScriptedTurn {
        ScriptedTurn {
            step: Some(step.into()),
            action: action.to_string(),
            user: user.to_string(),
            tools: tools
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
            assistant: assistant.to_string(),
        }
    }

    /// A setup turn: the same as a shown one, without a row of its own.
    fn setup(user: &str, tools: &[(&str, &str)], assistant: &str) -> ScriptedTurn {
        ScriptedTurn {
            step: None,
            ..ScriptedTurn::shown("", "", user, tools, assistant)
        }
    }
}

/// One row of a proof table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProofRow {
    /// `Setup`, `Turn 1`, …
    pub step: String,
    /// The session's turn number at the end of the step.
    pub turn: u64,
    /// What happened.
    pub action: String,
    /// Expanded efforts after the step.
    pub expanded: Vec<String>,
    /// Open efforts after the step (active last).
    pub open: Vec<String>,
    /// The active effort after the step.
    pub active: Option<String>,
    /// Summaries in working memory after the step.
    pub summaries_in_memory: u64,
    /// Ambient exchanges in working memory after the step.
    pub ambient_exchanges_in_memory: u64,
    /// Working-context tokens after the step.
    pub context_tokens: u64,
    /// Change against the previous row.
    pub delta: i64,
    /// Change caused by the step's tool calls alone (measured inside the turn).
    pub tool_delta: i64,
    /// Decay counter of every expanded effort (`auth-bug: 2`), and auto-collapses of the step.
    pub decay: Vec<String>,
    /// Banners of the step.
    pub banners: Vec<String>,
    /// Error results of tool calls in the step (a correct script has none).
    pub tool_errors: Vec<String>,
    /// The effort ids `search_efforts` calls of the step returned, best first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<String>,
    /// The naive baseline after the step.
    pub naive_tokens: u64,
}

/// A finished proof run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProofRun {
    /// `slice2`, `slice3`, `slice4`, `slice4-long`.
    pub name: String,
    /// What the run proves.
    pub title: String,
    /// The table.
    pub rows: Vec<ProofRow>,
    /// Decay metrics at the end.
    pub decay: DecayReport,
    /// Turns driven, setup included.
    pub turns: u64,
    /// Efforts created.
    pub efforts: usize,
    /// Messages stored.
    pub stored_messages: usize,
    /// Highest working-context tokens over the run's visible steps.
    pub max_context_tokens: u64,
    /// The naive baseline at the end.
    pub final_naive_tokens: u64,
    /// Every tool error of the run, setup turns included (a correct script has none).
    pub tool_errors: Vec<String>,
}

impl ProofRun {
    /// The table as Markdown, with a short footer of totals.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {} — {}\n", self.name, self.title);
        let _ = writeln!(
            out,
            "| Step | Turn | Action | Expanded | Summaries in WM | Ambient in WM | Open (active last) | Context tokens | Delta | Tool delta | Decay counter |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|");
        for row in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.step,
                row.turn,
                row.action,
                list_or_dash(&row.expanded),
                row.summaries_in_memory,
                row.ambient_exchanges_in_memory,
                list_or_dash(&row.open),
                row.context_tokens,
                signed(row.delta),
                signed(row.tool_delta),
                if row.decay.is_empty() {
                    "—".to_string()
                } else {
                    row.decay.join("; ")
                },
            );
        }
        let d = &self.decay;
        let _ = writeln!(
            out,
            "\n{} turns, {} efforts, {} stored messages; max working context {} tokens, naive baseline {} tokens ({:.1}% saved at the end).",
            self.turns,
            self.efforts,
            self.stored_messages,
            self.max_context_tokens,
            self.final_naive_tokens,
            self.rows.last().map_or(0.0, |r| 100.0 * (1.0 - r.context_tokens as f64 / r.naive_tokens.max(1) as f64)),
        );
        let _ = writeln!(
            out,
            "Decay: {} auto-collapses, {} manual, avg expansion {:.1} turns, false-decay rate {:.2}, {} tokens saved by decay.",
            d.auto_collapses, d.manual_collapses, d.avg_expansion_duration, d.false_decay_rate, d.tokens_saved_by_decay
        );
        out
    }
}

fn list_or_dash(items: &[String]) -> String {
    if items.is_empty() {
        "—".to_string()
    } else {
        items.join(", ")
    }
}

fn signed(value: i64) -> String {
    if value == 0 {
        "0".to_string()
    } else {
        format!("{value:+}")
    }
}

/// Drives scripted turns through a session and records the table.
pub struct ProofRunner {
    session: Session,
    rows: Vec<ProofRow>,
    clock_ms: u64,
    last_tokens: u64,
    all_tool_errors: Vec<String>,
    /// What the search calls of the turn being run returned.
    found: Vec<String>,
}

impl ProofRunner {
    /// A runner over a fresh session.
    ///
    /// # Panics
    /// Never with the default configuration; a caller passing an invalid one gets the
    /// configuration error as a panic message, since proof runs are fixed scripts.
    pub fn new(config: Config, counter: Arc<dyn TokenCounter>) -> ProofRunner {
        let session = Session::with_counter(config, counter).expect("proof configuration is valid");
        let last_tokens = session.working_tokens();
        ProofRunner {
            session,
            rows: Vec::new(),
            clock_ms: 1_767_225_600_000,
            last_tokens,
            all_tool_errors: Vec::new(),
            found: Vec::new(),
        }
    }

    /// The session being driven.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Runs one turn; returns the row it produced (setup turns produce none).
    pub fn run(&mut self, turn: &ScriptedTurn) -> Option<&ProofRow> {
        self.clock_ms += 60_000;
        self.session
            .begin_turn(&turn.user, self.clock_ms)
            .expect("proof turns never overlap");
        let before_tools = self.session.working_tokens();
        let mut tool_errors = Vec::new();
        for (name, args) in &turn.tools {
            let outcome = self.session.execute_tool(name, args);
            if name == "search_efforts" {
                let hits = outcome.result["results"].as_array().into_iter().flatten();
                self.found
                    .extend(hits.filter_map(|hit| hit["id"].as_str().map(str::to_string)));
            }
            if !outcome.ok {
                let error = format!(
                    "turn {}: {name}: {}",
                    self.session.turn(),
                    outcome.result["error"].as_str().unwrap_or("")
                );
                self.all_tool_errors.push(error.clone());
                tool_errors.push(error);
            }
        }
        let tool_delta = self.session.working_tokens() as i64 - before_tools as i64;
        self.clock_ms += 5_000;
        let report = self
            .session
            .end_turn(&turn.assistant, self.clock_ms)
            .expect("a turn was begun");
        let step = turn.step.as_ref()?;
        let mut decay: Vec<String> = report
            .metrics
            .events
            .iter()
            .filter(|e| e.kind == EventKind::AutoCollapsed)
            .map(|e| {
                format!(
                    "{}: {} → auto-collapse",
                    e.effort,
                    self.session.config().decay_threshold
                )
            })
            .collect();
        for id in self.session.efforts().expanded_ids() {
            let expansion = self
                .session
                .efforts()
                .expansion(id)
                .expect("listed as expanded");
            decay.push(format!(
                "{id}: {}",
                self.session.turn() - expansion.last_referenced_turn
            ));
        }
        Some(self.push_row(
            step.clone(),
            turn.action.clone(),
            tool_delta,
            decay,
            report.banners,
            tool_errors,
        ))
    }

    /// Runs every turn of a script.
    pub fn run_all(&mut self, turns: &[ScriptedTurn]) {
        for turn in turns {
            self.run(turn);
        }
    }

    /// Records a row for the current state without a turn (the end of a setup).
    pub fn snapshot_row(&mut self, step: &str, action: &str) {
        self.push_row(
            step.to_string(),
            action.to_string(),
            0,
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
    }

    fn push_row(
        &mut self,
        step: String,
        action: String,
        tool_delta: i64,
        decay: Vec<String>,
        banners: Vec<String>,
        tool_errors: Vec<String>,
    ) -> &ProofRow {
        let s = &self.session;
        let context_tokens = s.working_tokens();
        let mut open: Vec<String> = s
            .efforts()
            .open_ids()
            .into_iter()
            .filter(|id| Some(*id) != s.efforts().active_id())
            .map(str::to_string)
            .collect();
        open.extend(s.efforts().active_id().map(str::to_string));
        self.rows.push(ProofRow {
            step,
            turn: s.turn(),
            action,
            expanded: s
                .efforts()
                .expanded_ids()
                .into_iter()
                .map(str::to_string)
                .collect(),
            open,
            active: s.efforts().active_id().map(str::to_string),
            summaries_in_memory: s.efforts().summary_ids_in_memory().len() as u64
                - s.efforts().expanded_ids().len() as u64,
            ambient_exchanges_in_memory: s.ambient_window().len() as u64 / 2,
            context_tokens,
            delta: context_tokens as i64 - self.last_tokens as i64,
            tool_delta,
            decay,
            banners,
            tool_errors,
            found: std::mem::take(&mut self.found),
            naive_tokens: s.naive_tokens(),
        });
        self.last_tokens = context_tokens;
        self.rows.last().expect("just pushed")
    }

    /// Finishes the run.
    pub fn finish(self, name: &str, title: &str) -> (ProofRun, Session) {
        let run = ProofRun {
            name: name.to_string(),
            title: title.to_string(),
            max_context_tokens: self
                .rows
                .iter()
                .map(|r| r.context_tokens)
                .max()
                .unwrap_or(0),
            final_naive_tokens: self.session.naive_tokens(),
            decay: self.session.efforts().decay_stats().report(),
            turns: self.session.turn(),
            efforts: self.session.efforts().all().len(),
            stored_messages: self.session.stored_message_count(),
            rows: self.rows,
            tool_errors: self.all_tool_errors,
        };
        (run, self.session)
    }
}

// ----- shared setup ------------------------------------------------------------------------

const AUTH_SUMMARY: &str = "Fixed intermittent 401 errors: the refresh token TTL in auth/config.rs was 3600 seconds while sessions last 24 hours. Raised the TTL to 86400, added a retry on 401 in api_client.rs, and a regression test. Open question: rotate refresh tokens on use?";
const PERF_SUMMARY: &str = "Cut dashboard load time from 4.2s to 0.9s: the orders query did N+1 lookups of customers; replaced with one JOIN, added an index on orders.customer_id, and cached the totals panel for 60 seconds.";

fn auth_bug_turns() -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::setup(
            "Let's work on the auth bug: users get logged out with 401 errors after about an hour, even though sessions should last a day.",
            &[("open_effort", r#"{"name": "auth bug", "description": "401 errors after an hour"}"#)],
            "Started. An hour is suspicious: that is a common default for token lifetimes. Can you check the refresh token TTL in the auth configuration, and whether the client retries with a refreshed token when it sees a 401?",
        ),
        ScriptedTurn::setup(
            "auth/config.rs has REFRESH_TOKEN_TTL = 3600 and SESSION_TTL = 86400. The client in api_client.rs just surfaces the 401 to the UI.",
            &[],
            "That explains it. The refresh token expires after 3600 seconds while the session is meant to last 86400 seconds, so after an hour the refresh fails and every request returns 401. Two changes: set REFRESH_TOKEN_TTL to 86400 to match the session, and in api_client.rs catch a 401 once, refresh, and retry the request before surfacing an error.",
        ),
        ScriptedTurn::setup(
            "Done both. Should we also rotate refresh tokens every time they are used?",
            &[],
            "Rotation on use is safer, since a stolen refresh token stops working after one use, but it needs the server to store the latest token per session and to handle two tabs refreshing at once. I would add a regression test for the TTL first and keep rotation as an open question for the security review.",
        ),
        ScriptedTurn::setup(
            "Added test_refresh_token_outlives_one_hour and it passes. The auth bug is fixed, we're done with it.",
            &[("close_effort", &format!(r#"{{"summary": "{AUTH_SUMMARY}"}}"#))],
            "Great, concluded the auth bug.",
        ),
    ]
}

fn perf_fix_turns() -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::setup(
            "Help me with the perf fix for the dashboard, it takes over four seconds to load.",
            &[("open_effort", r#"{"name": "perf fix"}"#)],
            "Started. Let's profile first: which request dominates the load time?",
        ),
        ScriptedTurn::setup(
            "The orders endpoint takes 3.8 seconds. It loads 200 orders and then fetches each customer separately.",
            &[],
            "That is an N+1 query: 201 round trips. Replace the per-order customer lookups with one JOIN on orders.customer_id, and add an index on that column so the join stays fast as the table grows. The totals panel can be cached for a minute since it changes slowly.",
        ),
        ScriptedTurn::setup(
            "With the JOIN, the index and the 60 second cache the dashboard loads in 0.9 seconds. That's resolved, thanks.",
            &[("close_effort", &format!(r#"{{"summary": "{PERF_SUMMARY}"}}"#))],
            "Concluded the perf fix.",
        ),
    ]
}

const AMBIENT_CHATTER: [(&str, &str); 6] = [
    ("Good morning! How are you today?", "Good morning, doing well. What shall we look at?"),
    ("Can you recommend a podcast for the commute?", "Try a long-form interview show; episodes of about forty minutes fit most commutes."),
    ("What's the difference between a latte and a flat white?", "A flat white has less milk and a thinner layer of microfoam, so the coffee tastes stronger."),
    ("Any tips for staying focused in the afternoon?", "Short walks, water, and tackling the hardest task before lunch help most people."),
    ("How many minutes should I steep green tea?", "Two to three minutes at about 80 degrees keeps it from turning bitter."),
    ("What is a good stretch after sitting all day?", "A standing hamstring stretch and a doorway chest stretch, thirty seconds each."),
];

fn ambient_turns(count: usize, offset: usize) -> Vec<ScriptedTurn> {
    (0..count)
        .map(|i| {
            let (user, assistant) = AMBIENT_CHATTER[(i + offset) % AMBIENT_CHATTER.len()];
            ScriptedTurn::setup(user, &[], assistant)
        })
        .collect()
}

fn setup_two_concluded() -> Vec<ScriptedTurn> {
    let mut turns = ambient_turns(2, 0);
    turns.extend(auth_bug_turns());
    turns.extend(perf_fix_turns());
    turns
}

// ----- slice 2 -----------------------------------------------------------------------------

/// Slice 2: expansion is lossless and temporary; several efforts can be open; the active one
/// receives the messages.
pub fn slice2(config: Config, counter: Arc<dyn TokenCounter>) -> (ProofRun, Session) {
    let mut runner = ProofRunner::new(config, counter);
    runner.run_all(&setup_two_concluded());
    runner.snapshot_row(
        "Setup",
        "2 concluded efforts (auth-bug, perf-fix) + ambient",
    );
    let turns = [
        ScriptedTurn::shown("Turn 1", "User asks about auth-bug detail", "What exactly did we change for the auth bug?", &[], "Let me load the details of the auth bug."),
        ScriptedTurn::shown("Turn 2", "LLM expands auth-bug", "Yes, show me the full auth-bug conversation.", &[("expand_effort", r#"{"id": "auth-bug"}"#)], "Loaded: we raised REFRESH_TOKEN_TTL from 3600 to 86400 and added a retry on 401 in api_client.rs."),
        ScriptedTurn::shown("Turn 3", "User asks specific question, LLM answers from raw", "Which file had the refresh token TTL?", &[], "auth/config.rs had REFRESH_TOKEN_TTL = 3600."),
        ScriptedTurn::shown("Turn 4", "LLM collapses auth-bug", "Got it, thanks.", &[("collapse_effort", r#"{"id": "auth-bug"}"#)], "Collapsed it back to its summary."),
        ScriptedTurn::shown("Turn 5", "Open new effort guild-feature", "Let's work on the guild feature: players should be able to create guilds.", &[("open_effort", r#"{"name": "guild feature"}"#)], "Started the guild feature. What should a guild have?"),
        ScriptedTurn::shown("Turn 6", "Open second effort api-refactor", "Also help me with an API refactor of the player endpoints.", &[("open_effort", r#"{"name": "api refactor"}"#)], "Started the API refactor as a second effort."),
        ScriptedTurn::shown("Turn 7", "Switch to guild-feature", "Back to the guild feature.", &[("switch_effort", r#"{"id": "guild-feature"}"#)], "Switched to the guild feature."),
        ScriptedTurn::shown("Turn 8", "Message logged to guild-feature (active)", "A guild needs a name, a leader, up to fifty members and a shared bank.", &[], "Then the guild table holds name, leader_id and bank_balance, with a guild_members join table capped at fifty rows per guild."),
    ];
    runner.run_all(&turns);
    runner.finish("slice2", "expansion and multi-effort")
}

// ----- slice 3 -----------------------------------------------------------------------------

/// Slice 3: an expanded effort collapses by itself after `DECAY_THRESHOLD` turns without
/// reference; a reference resets the counter; re-expansion works after decay.
pub fn slice3(config: Config, counter: Arc<dyn TokenCounter>) -> (ProofRun, Session) {
    let mut runner = ProofRunner::new(config, counter);
    runner.run_all(&setup_two_concluded());
    runner.snapshot_row("Setup", "2 concluded efforts + ambient");
    let turns = [
        ScriptedTurn::shown(
            "Turn 1",
            "Expand auth-bug",
            "What exactly did we do for the auth bug?",
            &[("expand_effort", r#"{"id": "auth-bug"}"#)],
            "Loaded the full auth bug conversation: the TTL change and the retry.",
        ),
        ScriptedTurn::shown(
            "Turn 2",
            "Ask about auth-bug (referenced)",
            "Does the retry refresh the token before the request is repeated?",
            &[],
            "Yes: on a 401 the client refreshes the token once and then repeats the request.",
        ),
        ScriptedTurn::shown(
            "Turn 3",
            "Ask unrelated question",
            "What's a good name for a sailing boat?",
            &[],
            "Something short and easy to shout over wind, like Tern or Skylark.",
        ),
        ScriptedTurn::shown(
            "Turn 4",
            "Another unrelated exchange",
            "How long does it take to learn to sail?",
            &[],
            "A week of lessons covers the basics; confidence in gusty weather takes a season.",
        ),
        ScriptedTurn::shown(
            "Turn 5",
            "Another unrelated exchange",
            "Should I buy a wetsuit or rent one first?",
            &[],
            "Rent first: fit matters more than brand, and you will learn what thickness you need.",
        ),
        ScriptedTurn::shown(
            "Turn 6",
            "Continue (auth-bug gone)",
            "What should I pack for a day on the water?",
            &[],
            "Sunscreen, a hat, water, a dry bag and a warm layer.",
        ),
        ScriptedTurn::shown(
            "Turn 7",
            "Ask about auth-bug again → re-expand",
            "Back to the auth bug: what was the regression test called?",
            &[("expand_effort", r#"{"id": "auth-bug"}"#)],
            "It was test_refresh_token_outlives_one_hour.",
        ),
    ];
    runner.run_all(&turns);
    runner.finish("slice3", "salience decay")
}

// ----- slice 4 -----------------------------------------------------------------------------

/// Distinct topic words per effort of slice 4, chosen so no two efforts share a keyword and no
/// chatter line mentions one.
const SLICE4_TOPICS: [(&str, &str, &str); 5] = [
    ("billing export", "invoices CSV export crashed on unicode customer names; fixed encoding to UTF-8 with BOM and added a fuzz test", "invoices"),
    ("search ranking", "search ranking ignored product freshness; added a recency boost of 0.2 and tuned BM25 parameters k1=1.2 b=0.75", "ranking"),
    ("deploy pipeline", "deploy pipeline took 25 minutes; cached cargo builds and parallelised integration stages, now 9 minutes", "pipeline"),
    ("email bounce", "email bounce handling dropped soft bounces; now retries soft bounces three times and suppresses hard bounces via webhook", "bounces"),
    ("image resize", "image resize worker ran out of memory on 50 megapixel uploads; switched to streaming decode and capped dimensions at 8000 pixels", "megapixel"),
];

/// Slice 4: summaries evict after `SUMMARY_EVICTION_THRESHOLD` unreferenced turns, ambient chat
/// is windowed, `search_efforts` finds evicted efforts, and the context has a ceiling.
pub fn slice4(config: Config, counter: Arc<dyn TokenCounter>) -> (ProofRun, Session) {
    let mut runner = ProofRunner::new(config, counter);
    runner.run_all(&ambient_turns(30, 0));
    for (name, summary, keyword) in SLICE4_TOPICS {
        let args = format!(r#"{{"name": "{name}"}}"#);
        let close = format!(r#"{{"summary": "{summary}"}}"#);
        runner.run_all(&[
            ScriptedTurn::setup(
                &format!("Let's work on the {name} problem."),
                &[("open_effort", &args)],
                &format!("Started {name}. What do the logs say about the {keyword}?"),
            ),
            ScriptedTurn::setup(
                &format!("Here is what I found about the {keyword}."),
                &[],
                &format!("Understood. The fix: {summary}."),
            ),
            ScriptedTurn::setup(
                "That worked, we're done.",
                &[("close_effort", &close)],
                &format!("Concluded {name}."),
            ),
        ]);
    }
    runner.snapshot_row("Setup", "5 concluded efforts, 30 ambient exchanges");
    let refer_one_two = "Quick check on the billing export invoices and the search ranking freshness boost: both still fine?";
    runner.run(&ScriptedTurn::shown(
        "Turn 1",
        "Reference billing-export and search-ranking",
        refer_one_two,
        &[],
        "Yes: the invoices export handles unicode and the ranking recency boost is live.",
    ));
    for i in 2..=20 {
        let (user, assistant) = if i == 11 {
            (
                refer_one_two,
                "Still fine: invoices export and ranking boost both healthy.",
            )
        } else {
            AMBIENT_CHATTER[i % AMBIENT_CHATTER.len()]
        };
        let action = if i == 11 {
            "Re-reference billing-export and search-ranking"
        } else {
            "Unrelated chat"
        };
        let step = format!("Turn {i}");
        runner.run(&ScriptedTurn::shown(step, action, user, &[], assistant));
    }
    let turns = [
        ScriptedTurn::shown(
            "Turn 21",
            "No references to the other 3 for 20 turns",
            "What's the weather like for a walk later?",
            &[],
            "Mild and dry this afternoon.",
        ),
        ScriptedTurn::shown(
            "Turn 22",
            "User asks about an evicted topic → search finds it",
            // Neither the question nor the answer names the effort or two of its summary's
            // keywords: only the search can bring it back, so the row fails if search breaks.
            "What did we decide about mail that could not be delivered?",
            &[("search_efforts", r#"{"query": "soft bounces retries"}"#)],
            "Found it in the earlier work; it is back in view.",
        ),
        ScriptedTurn::shown(
            "Turn 23",
            "User asks for details → expand",
            "Show me the details of the email bounce work.",
            &[("expand_effort", r#"{"id": "email-bounce"}"#)],
            "Here is the full conversation of the email bounce work.",
        ),
        ScriptedTurn::shown(
            "Turn 24",
            "Unrelated chat",
            AMBIENT_CHATTER[1].0,
            &[],
            AMBIENT_CHATTER[1].1,
        ),
        ScriptedTurn::shown(
            "Turn 25",
            "Unrelated chat",
            AMBIENT_CHATTER[2].0,
            &[],
            AMBIENT_CHATTER[2].1,
        ),
        ScriptedTurn::shown(
            "Turn 26",
            "Decay collapses email-bounce",
            AMBIENT_CHATTER[3].0,
            &[],
            AMBIENT_CHATTER[3].1,
        ),
    ];
    runner.run_all(&turns);
    runner.finish("slice4", "bounded working context")
}

// ----- slice 4, long ------------------------------------------------------------------------

/// Syllables for generated topic words: every effort gets words no other effort and no chatter
/// line contains, so references in the long run are exactly the scripted ones.
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "do", "fu", "gi", "ha", "jo", "pe", "su",
];

fn topic_word(n: usize, salt: usize) -> String {
    let mut value = n * 7 + salt * 100_003 + 1;
    let mut word = String::new();
    for _ in 0..4 {
        word.push_str(SYLLABLES[value % SYLLABLES.len()]);
        value /= SYLLABLES.len();
    }
    word.push_str(&salt.to_string());
    word
}

/// Slice 4 at scale: `turns` turns (at least 1,000 in the tests) creating `efforts` efforts, with
/// ambient chat between them, references to recent efforts, searches and expansions of old ones.
/// The working context must stay under a ceiling while the stored history grows.
pub fn slice4_long(
    config: Config,
    counter: Arc<dyn TokenCounter>,
    turns: u64,
    efforts: usize,
) -> (ProofRun, Session) {
    let mut runner = ProofRunner::new(config, counter);
    let per_effort = (turns as usize / efforts.max(1)).max(4);
    let report_every = (turns / 10).max(1);
    let mut created = 0usize;
    let mut turn = 0u64;
    while turn < turns {
        let slot = (turn as usize) % per_effort;
        let n = created;
        let words = [topic_word(n, 1), topic_word(n, 2), topic_word(n, 3)];
        let name = format!("task {}", words[0]);
        let scripted = if created < efforts && slot == 0 {
            ScriptedTurn::setup(
                &format!("Let's work on {name}."),
                &[("open_effort", &format!(r#"{{"name": "{name}"}}"#))],
                &format!("Started {name}; what about {}?", words[1]),
            )
        } else if created < efforts && slot == 1 {
            ScriptedTurn::setup(
                &format!("The {} depends on the {}.", words[1], words[2]),
                &[],
                &format!(
                    "Then change the {} first and test the {}.",
                    words[2], words[1]
                ),
            )
        } else if created < efforts && slot == 2 {
            created += 1;
            let summary = format!(
                "Resolved {} by changing {} before {}; verified with tests.",
                words[0], words[2], words[1]
            );
            ScriptedTurn::setup(
                "Works now, done.",
                &[("close_effort", &format!(r#"{{"summary": "{summary}"}}"#))],
                "Concluded.",
            )
        } else if slot == 3 && created > 8 && turn.is_multiple_of(3) {
            // Recall an old effort: search for it by its words, then expand it.
            let old = (turn as usize * 31) % (created - 4);
            let old_words = [topic_word(old, 2), topic_word(old, 3)];
            let old_id = ccm_core::text::slugify(&format!("task {}", topic_word(old, 1)));
            let query = format!(r#"{{"query": "{} {}"}}"#, old_words[0], old_words[1]);
            let expand = format!(r#"{{"id": "{old_id}"}}"#);
            ScriptedTurn::setup(
                &format!(
                    "What did we decide about the {} and the {}?",
                    old_words[0], old_words[1]
                ),
                &[("search_efforts", &query), ("expand_effort", &expand)],
                "Found it and loaded the details.",
            )
        } else {
            let (user, assistant) = AMBIENT_CHATTER[turn as usize % AMBIENT_CHATTER.len()];
            ScriptedTurn::setup(user, &[], assistant)
        };
        runner.run(&scripted);
        turn += 1;
        if turn.is_multiple_of(report_every) || turn == turns {
            let label = format!("Turn {turn}");
            let action = format!("{created} efforts created so far");
            runner.snapshot_row(&label, &action);
        }
    }
    runner.finish(
        "slice4-long",
        "working memory has a ceiling while history grows",
    )
}

// ----- compaction ---------------------------------------------------------------------------

/// One compaction of the long compaction run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionRow {
    /// The turn it happened in.
    pub turn: u64,
    /// 1 soft, 2 hard, 3 emergency.
    pub level: u8,
    /// Usage that triggered it, in percent of the request budget.
    pub trigger_percent: f64,
    /// Working tokens before.
    pub tokens_before: u64,
    /// Working tokens after.
    pub tokens_after: u64,
    /// Items moved out of the working set (or compressed).
    pub items_moved: u64,
    /// Messages stored so far (never fewer than before).
    pub stored_messages: usize,
}

/// The long compaction run: its compactions, its peak and what it kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionProof {
    /// The context window.
    pub context_window: u32,
    /// The request budget (window minus reserved answer tokens).
    pub request_budget: u64,
    /// Turns driven.
    pub turns: u64,
    /// Every compaction, in order.
    pub rows: Vec<CompactionRow>,
    /// The highest working-context total seen after any message.
    pub peak_tokens: u64,
    /// Attachments made (each several thousand tokens).
    pub attachments: usize,
    /// Bytes of every stored message and attachment text at the end: all of them, since
    /// nothing is deleted.
    pub stored_bytes: usize,
    /// Every message text the run sent, in the order sent (user, then assistant, per turn):
    /// what the session must still hold byte for byte. Not part of the printed proof.
    #[serde(skip)]
    pub messages_sent: Vec<String>,
    /// Every attachment the run made, as (id, full text). Not part of the printed proof.
    #[serde(skip)]
    pub attachments_sent: Vec<(String, String)>,
}

impl CompactionProof {
    /// The table as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## compaction — a long, heavy conversation in a {}-token window (budget {})\n",
            self.context_window, self.request_budget
        );
        let _ = writeln!(out, "| Turn | Level | Trigger usage | Tokens before | Tokens after | Items moved | Stored messages |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        for row in &self.rows {
            let name = match row.level {
                1 => "1 soft",
                2 => "2 hard",
                _ => "3 emergency",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.1}% | {} | {} | {} | {} |",
                row.turn,
                name,
                row.trigger_percent,
                row.tokens_before,
                row.tokens_after,
                row.items_moved,
                row.stored_messages
            );
        }
        let _ = writeln!(
            out,
            "\n{} turns, {} attachments, {} compactions; peak working context {} tokens (budget {}); {} bytes stored, none deleted.",
            self.turns,
            self.attachments,
            self.rows.len(),
            self.peak_tokens,
            self.request_budget,
            self.stored_bytes
        );
        out
    }
}

/// A long conversation (at least 300 turns) with attachments of several thousand tokens
/// against an 8k-token window: compaction must keep every request inside the budget, fire
/// every level, and delete nothing. `config` gives every setting but the window, which the
/// run sets to 8,192 tokens with 1,024 reserved for the answer (what it is about).
pub fn compaction_run(
    config: Config,
    counter: Arc<dyn TokenCounter>,
    turns: u64,
) -> (CompactionProof, Session) {
    let config = Config {
        context_window: 8_192,
        reserved_output_tokens: 1_024,
        ..config
    };
    let budget = config.request_budget();
    let mut session = Session::with_counter(config, counter).expect("proof configuration is valid");
    let mut peak = 0u64;
    let mut attachments = 0usize;
    let mut rows = Vec::new();
    let mut messages_sent = Vec::new();
    let mut attachments_sent = Vec::new();
    for t in 0..turns as usize {
        let w = |k: usize| synthetic::WORDS[k % synthetic::WORDS.len()];
        let user = format!(
            "Question {t}: how should the {} handle the {}?",
            w(t),
            w(t * 5)
        );
        let at = 1_767_225_600_000 + t as u64 * 60_000;
        session
            .begin_turn(&user, at)
            .expect("proof turns never overlap");
        messages_sent.push(user);
        if t % 40 == 5 {
            session.execute_tool("open_effort", &format!(r#"{{"name": "topic {t}"}}"#));
        }
        if t % 40 == 25 {
            session.execute_tool(
                "close_effort",
                r#"{"summary": "Settled the approach and wrote it down."}"#,
            );
        }
        let attached = if t % 50 == 49 {
            Some((format!("dump-{t}.log"), synthetic::document(t, 4_000)))
        } else if t % 6 == 0 {
            Some((format!("notes-{t}.md"), synthetic::document(t, 1_400)))
        } else {
            None
        };
        if let Some((name, text)) = attached {
            let kind = ccm_core::compaction::AttachmentKind::File;
            if let Ok(id) = session.attach(&name, kind, &text, None) {
                attachments += 1;
                attachments_sent.push((id, text));
            }
        }
        peak = peak.max(session.working_tokens());
        let answer = format!("Answer {t}: keep the {} simple and measure it.", w(t * 3));
        session
            .end_turn(&answer, at + 5_000)
            .expect("a turn was begun");
        messages_sent.push(answer);
        peak = peak.max(session.working_tokens());
        // The turn's compactions, with the messages the session holds once the turn is stored:
        // counted, not derived from the turn number, so a lost or doubled message shows.
        // (Not `stored_message_count`, which is the next sequence number.)
        let stored = session.ambient().messages().len()
            + session
                .efforts()
                .all()
                .iter()
                .map(|e| e.messages.len())
                .sum::<usize>();
        let point = session
            .history()
            .points()
            .last()
            .expect("every turn records a point");
        for record in &point.compactions {
            rows.push(CompactionRow {
                turn: point.turn,
                level: record.level,
                trigger_percent: record.trigger_per_mille as f64 / 10.0,
                tokens_before: record.tokens_before,
                tokens_after: record.tokens_after,
                items_moved: record.items_moved,
                stored_messages: stored,
            });
        }
    }
    let stored_bytes = session
        .ambient()
        .messages()
        .iter()
        .map(|m| m.content.len())
        .sum::<usize>()
        + session
            .efforts()
            .all()
            .iter()
            .flat_map(|e| e.messages.iter())
            .map(|m| m.content.len())
            .sum::<usize>()
        + session
            .attachments()
            .by_id()
            .values()
            .map(|a| a.attachment.full_text.len())
            .sum::<usize>();
    let proof = CompactionProof {
        context_window: session.config().context_window,
        request_budget: budget,
        turns,
        rows,
        peak_tokens: peak,
        attachments,
        stored_bytes,
        messages_sent,
        attachments_sent,
    };
    (proof, session)
}
