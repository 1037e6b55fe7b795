//! `cargo run --release -p ccm-bench --bin recall [-- OPTIONS]` (or `scripts/bench-recall`):
//! how much of what left the context CCM brings back when a question needs it, measured on
//! the LoCoMo conversations (public, with human-written questions and the dialog turns that
//! answer them), against a plain BM25 and a sliding window measured in the same run.
//!
//! Options:
//! - `--data DIR` — the folder of `conversation-*.json` files (default: `../shared/data/locomo`
//!   beside the repository);
//! - `--svg FILE` — where to draw the recall-vs-tokens curve (default: none);
//! - `--no-sweep` — only the table at the default budgets;
//! - `--embeddings URL MODEL` — also rank with the vectors of this OpenAI-compatible
//!   endpoint (default: the mock provider's, started here, model `mock-embed`).
//!
//! Not a pass/fail test: it prints numbers (README, "Recall").

mod locomo;
mod peers;
mod play;
mod report;

use ccm_core::{Config, ContextMode, Session};
use play::Way;
use report::{Point, Row};
use std::path::PathBuf;

struct Options {
    data: PathBuf,
    svg: Option<PathBuf>,
    sweep: bool,
    /// An embeddings endpoint's base URL and model; `None` starts the mock provider.
    embeddings: Option<(String, String)>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/locomo"),
        svg: None,
        sweep: true,
        embeddings: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--data" => options.data = args.next().ok_or("--data needs a folder")?.into(),
            "--svg" => options.svg = Some(args.next().ok_or("--svg needs a file")?.into()),
            "--no-sweep" => options.sweep = false,
            "--embeddings" => {
                let url = args
                    .next()
                    .ok_or("--embeddings needs a base URL and a model")?;
                let model = args
                    .next()
                    .ok_or("--embeddings needs a base URL and a model")?;
                options.embeddings = Some((url, model));
            }
            "-h" | "--help" => {
                println!("usage: recall [--data DIR] [--svg FILE] [--no-sweep] [--embeddings BASE_URL MODEL]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    Ok(options)
}

/// The conversations of the data folder, by file name.
fn conversations(data: &std::path::Path) -> Result<Vec<locomo::Conversation>, String> {
    let entries = std::fs::read_dir(data).map_err(|e| {
        format!(
            "{}: {e} (the LoCoMo conversations are expected there; see --help)",
            data.display()
        )
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no .json conversation files", data.display()));
    }
    paths.iter().map(|p| locomo::read(p)).collect()
}

/// One conversation, played, with what its questions need.
struct Prepared {
    session: Session,
    messages: Vec<play::StoredText>,
    bm25: peers::Bm25,
    /// Per question: its category, its text and the texts of its evidence turns.
    questions: Vec<(u8, String, Vec<String>)>,
}

fn prepare(conversation: &locomo::Conversation) -> Result<(Prepared, usize), String> {
    let played = play::play(conversation, Config::default())?;
    let mut unknown = 0;
    let questions = conversation
        .questions
        .iter()
        .filter_map(|q| {
            let evidence: Vec<String> = q
                .evidence
                .iter()
                .filter_map(|id| {
                    let position = played.position_of.get(id);
                    unknown += usize::from(position.is_none());
                    position.map(|&p| played.messages[p].text.clone())
                })
                .collect();
            (!evidence.is_empty()).then(|| (q.category, q.text.clone(), evidence))
        })
        .collect();
    let bm25 = peers::Bm25::new(&played.messages);
    Ok((
        Prepared {
            session: played.session,
            messages: played.messages,
            bm25,
            questions,
        },
        unknown,
    ))
}

fn set(session: &mut Session, change: impl FnOnce(&mut Config)) -> Result<(), String> {
    let mut config = session.config().clone();
    change(&mut config);
    session.set_config(config).map_err(|e| e.to_string())
}

/// The ways at the default budgets, and the peers at the budget of the search result.
fn table(prepared: &mut [Prepared]) -> Result<Vec<Row>, String> {
    let names = [
        "automatic recall, Light mode (no tool call)",
        "automatic recall, Heavy mode (no tool call)",
        "search_efforts result (and the automatic recall)",
        "recall tool (focused recall)",
        "expand_effort of the top hit",
        "expand_effort of the top 3 hits",
        "peer: plain BM25, at the search result's size",
        "peer: BM25 with neighbouring messages, same size",
        "peer: sliding window of the newest messages, same size",
    ];
    let mut rows: Vec<Row> = names.iter().map(|n| Row::new(n)).collect();
    for p in prepared.iter_mut() {
        for (category, question, evidence) in &p.questions {
            let evidence: Vec<&str> = evidence.iter().map(String::as_str).collect();
            let mut record = |row: usize, asked: &play::Asked| {
                rows[row].add(
                    *category,
                    play::holds_all(&asked.texts, &evidence),
                    asked.tokens,
                );
            };
            let light = play::ask(&mut p.session, question, Way::Automatic)?;
            record(0, &light);
            set(&mut p.session, |c| c.context_mode = ContextMode::Heavy)?;
            let heavy = play::ask(&mut p.session, question, Way::Automatic)?;
            set(&mut p.session, |c| c.context_mode = ContextMode::Light)?;
            record(1, &heavy);
            let search = play::ask(&mut p.session, question, Way::Search)?;
            if std::env::var_os("CCM_RECALL_DEBUG").is_some() {
                eprintln!(
                    "search: base {} plan {} tools {}",
                    search.base_tokens,
                    search.tokens - search.tool_tokens,
                    search.tool_tokens
                );
            }
            record(2, &search);
            if std::env::var_os("CCM_RECALL_MISSES").is_some()
                && !play::holds_all(&search.texts, &evidence)
            {
                let budget = p.session.config().evidence_token_budget;
                set(&mut p.session, |c| c.evidence_token_budget = 1_000_000)?;
                let all = p
                    .session
                    .find_messages(question)
                    .map_err(|e| e.to_string())?;
                set(&mut p.session, |c| c.evidence_token_budget = budget)?;
                let order: Vec<String> = all
                    .groups
                    .iter()
                    .flat_map(|g| g.excerpts.iter())
                    .flat_map(|e| e.messages.iter().map(move |m| (e.score, m.text.clone())))
                    .map(|(score, text)| format!("{score:.2} {text}"))
                    .collect();
                eprintln!("MISS c{category} {question}");
                for text in &evidence {
                    let found = search.texts.iter().any(|t| t.contains(text));
                    let score = order
                        .iter()
                        .find(|o| o.contains(*text))
                        .map(|o| o.split(' ').next().unwrap_or("").to_string());
                    eprintln!(
                        "   {} {:?} {}",
                        if found { "in " } else { "OUT" },
                        score,
                        text.chars().take(110).collect::<String>()
                    );
                }
            }
            record(3, &play::ask(&mut p.session, question, Way::Recall)?);
            record(4, &play::ask(&mut p.session, question, Way::Expand(1))?);
            record(5, &play::ask(&mut p.session, question, Way::Expand(3))?);
            let budget = search.tokens.saturating_sub(search.base_tokens);
            let ranked = p.bm25.rank(question);
            for (row, texts) in [
                (6, peers::fill(&p.messages, &ranked, 0, budget)),
                (7, peers::fill(&p.messages, &ranked, 1, budget)),
                (8, peers::window(&p.messages, budget)),
            ] {
                let mut seen = base_texts(&mut p.session, question)?;
                seen.extend(texts);
                rows[row].add(*category, play::holds_all(&seen, &evidence), search.tokens);
            }
        }
    }
    Ok(rows)
}

/// The texts of the question's request without any recall of CCM's (what a peer adds to).
fn base_texts(session: &mut Session, question: &str) -> Result<Vec<String>, String> {
    let mode = session.config().context_mode;
    set(session, |c| c.context_mode = ContextMode::Off)?;
    session.begin_turn(question, 0).map_err(|e| e.to_string())?;
    let texts = session
        .build_plan()
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    session.abort_turn().map_err(|e| e.to_string())?;
    set(session, |c| c.context_mode = mode)?;
    Ok(texts)
}

/// Recall against the median request for a range of budgets: the search result's evidence
/// budget (with the peers at each question's same size) and the automatic recall's budget.
fn sweep(prepared: &mut [Prepared]) -> Result<Vec<(String, Vec<Point>)>, String> {
    let evidence_budgets = [250u32, 500, 1_000, 1_500, 2_000, 3_000, 4_000];
    let recall_budgets = [200u32, 400, 600, 800, 1_200, 1_600, 3_200];
    let mut search = Vec::new();
    let mut bm25 = Vec::new();
    let mut neighbours = Vec::new();
    let mut window = Vec::new();
    for &budget in &evidence_budgets {
        let mut rows: Vec<Row> = ["search", "bm25", "bm25+", "window"]
            .iter()
            .map(|n| Row::new(n))
            .collect();
        for p in prepared.iter_mut() {
            set(&mut p.session, |c| c.evidence_token_budget = budget)?;
            for (category, question, evidence) in &p.questions {
                let evidence: Vec<&str> = evidence.iter().map(String::as_str).collect();
                let asked = play::ask(&mut p.session, question, Way::Search)?;
                rows[0].add(
                    *category,
                    play::holds_all(&asked.texts, &evidence),
                    asked.tokens,
                );
                let room = asked.tokens.saturating_sub(asked.base_tokens);
                let ranked = p.bm25.rank(question);
                let base = base_texts(&mut p.session, question)?;
                for (row, texts) in [
                    (1, peers::fill(&p.messages, &ranked, 0, room)),
                    (2, peers::fill(&p.messages, &ranked, 1, room)),
                    (3, peers::window(&p.messages, room)),
                ] {
                    let mut seen = base.clone();
                    seen.extend(texts);
                    rows[row].add(*category, play::holds_all(&seen, &evidence), asked.tokens);
                }
            }
            set(&mut p.session, |c| {
                c.evidence_token_budget = Config::default().evidence_token_budget
            })?;
        }
        for (row, series) in rows
            .iter()
            .zip([&mut search, &mut bm25, &mut neighbours, &mut window])
        {
            series.push(row.point(budget));
        }
    }
    let mut automatic = Vec::new();
    for &budget in &recall_budgets {
        let mut row = Row::new("automatic");
        for p in prepared.iter_mut() {
            set(&mut p.session, |c| c.recall_token_budget = budget)?;
            for (category, question, evidence) in &p.questions {
                let evidence: Vec<&str> = evidence.iter().map(String::as_str).collect();
                let asked = play::ask(&mut p.session, question, Way::Automatic)?;
                row.add(
                    *category,
                    play::holds_all(&asked.texts, &evidence),
                    asked.tokens,
                );
            }
            set(&mut p.session, |c| {
                c.recall_token_budget = Config::default().recall_token_budget
            })?;
        }
        automatic.push(row.point(budget));
    }
    Ok(vec![
        ("CCM: search_efforts result".to_string(), search),
        (
            "CCM: automatic recall (no tool call)".to_string(),
            automatic,
        ),
        ("peer: BM25 with neighbours".to_string(), neighbours),
        ("peer: plain BM25".to_string(), bm25),
        ("peer: sliding window".to_string(), window),
    ])
}

/// The search with embeddings: every stored message and each question embedded by the
/// endpoint, the ranking fused (reciprocal rank fusion) with the lexical one, against the
/// lexical search in the same run.
fn with_embeddings(
    prepared: &mut [Prepared],
    endpoint: &ccm_provider::EmbeddingsEndpoint,
) -> Result<Vec<Row>, String> {
    let timeouts = ccm_native::Timeouts::default();
    let model = endpoint.model.clone();
    let mut rows = vec![
        Row::new(&format!(
            "search_efforts result, fused with {model} vectors"
        )),
        Row::new("search_efforts result, lexical alone (the same run)"),
    ];
    for p in prepared.iter_mut() {
        let mut session = p.session.clone();
        session.enable_embeddings(&model);
        ccm_native::refresh_recall_embeddings(&mut session, None, endpoint, timeouts, usize::MAX)
            .map_err(|e| format!("embedding the stored messages: {e}"))?;
        for (category, question, evidence) in &p.questions {
            let evidence: Vec<&str> = evidence.iter().map(String::as_str).collect();
            ccm_native::refresh_recall_embeddings(
                &mut session,
                Some(question),
                endpoint,
                timeouts,
                0,
            )
            .map_err(|e| format!("embedding a question: {e}"))?;
            // The automatic recall ranks by words alone, with embeddings or not (see
            // `Session::refresh_auto_recall`): only the search differs.
            let fused = play::ask(&mut session, question, Way::Search)?;
            rows[0].add(
                *category,
                play::holds_all(&fused.texts, &evidence),
                fused.tokens,
            );
            let lexical = play::ask(&mut p.session, question, Way::Search)?;
            rows[1].add(
                *category,
                play::holds_all(&lexical.texts, &evidence),
                lexical.tokens,
            );
        }
    }
    Ok(rows)
}

fn run() -> Result<(), String> {
    let options = options()?;
    let started = std::time::Instant::now();
    let conversations = conversations(&options.data)?;
    let mut prepared = Vec::new();
    let mut unknown = 0;
    let mut skipped = 0;
    for conversation in &conversations {
        let (p, missing) = prepare(conversation)?;
        unknown += missing;
        skipped += conversation.skipped_evidence;
        prepared.push(p);
    }
    let questions: usize = prepared.iter().map(|p| p.questions.len()).sum();
    let messages: usize = prepared.iter().map(|p| p.messages.len()).sum();
    println!(
        "LoCoMo: {} conversations from {}, {messages} stored messages, {questions} questions of categories 1-4 ({skipped} malformed and {unknown} unknown evidence ids skipped); default options, o200k_base counts",
        conversations.len(),
        options.data.display(),
    );
    for p in &prepared {
        let index_bytes = p.session.recall_state().index_bytes();
        println!(
            "  {} messages, recall index {} KB ({} bytes per message)",
            p.messages.len(),
            index_bytes / 1024,
            index_bytes / p.messages.len().max(1)
        );
    }
    println!();
    let rows = table(&mut prepared)?;
    print!("{}", report::table(&rows));
    // Embeddings: the mock provider's endpoint unless another is named.
    let mock = options
        .embeddings
        .is_none()
        .then(|| ccm_mock_llm::MockServer::start(ccm_mock_llm::MockConfig::default()));
    let (url, model) = options.embeddings.clone().unwrap_or_else(|| {
        (
            mock.as_ref().expect("started above").openai_base_url(),
            "mock-embed".to_string(),
        )
    });
    let endpoint = ccm_provider::EmbeddingsEndpoint {
        provider: ccm_provider::ProviderConfig::custom(
            ccm_provider::ProviderKind::OpenAiCompatible,
            &url,
            std::env::var("CCM_EMBEDDINGS_KEY").ok(),
        ),
        model,
        dimensions: None,
    };
    println!();
    print!(
        "{}",
        report::table(&with_embeddings(&mut prepared, &endpoint)?)
    );
    if options.sweep {
        let series = sweep(&mut prepared)?;
        println!();
        print!("{}", report::curve_table(&series));
        if let Some(path) = &options.svg {
            std::fs::write(path, report::svg(&series))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            println!("\ncurve written to {}", path.display());
        }
    }
    println!("\n({:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}

fn main() {
    if let Err(error) = run() {
        eprintln!("recall: {error}");
        std::process::exit(1);
    }
}
