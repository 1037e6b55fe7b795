//! `ccm replay`: plays public real conversations through CCM and reports what working memory
//! holds: savings against the naive context, resident summaries, the ambient window, the cost
//! of a turn as the conversation grows, and whether evicted efforts can be found again.

use ccm_core::Config;
use ccm_replay::{dataset, play, report};
use std::path::PathBuf;

/// The usage of `ccm replay`.
pub fn usage() -> &'static str {
    "ccm replay <file> [--longest N | --ids ID,ID,...] [--config JSON] [--budget-window N]
            [--svg PATH] [--json PATH] [--markdown PATH] [--max-message-bytes N]
  Plays conversations in the ShareGPT layout (a JSON array, or JSON lines, of records
  {\"id\", \"conversations\": [{\"from\", \"value\"}]}; split parts `<id>_<n>` are grouped back)
  turn by turn through a session with the given configuration (default: the defaults), and
  prints per conversation and in total: naive and working tokens at the end, the peak request,
  resident summaries, summary and ambient tokens, per-turn cost by tenth, and the recall of
  evicted efforts by their own distinctive words. Each split part with two or more exchanges is
  one effort (opened on its first exchange, concluded with the extractive summary on its last);
  one-exchange parts stay ambient.
  --longest N          the N conversations with the most exchanges (default 24), copies left out
  --ids A,B            exactly these conversations (an error in any of them stops the run)
  --config JSON        session configuration, e.g. '{\"reference_rule\": \"seed\"}'
  --budget-window N    a second pass with an N-token window (one eighth reserved for the answer,
                       default 16000) checks that no request goes over its budget
  --svg PATH           writes the growth curve (working context against naive, over turns)
  --json PATH          writes every measured point
  --markdown PATH      writes the table"
}

struct Arguments {
    file: PathBuf,
    longest: usize,
    ids: Option<Vec<String>>,
    config: Config,
    budget_window: u32,
    svg: Option<PathBuf>,
    json: Option<PathBuf>,
    markdown: Option<PathBuf>,
    max_message_bytes: usize,
}

fn parse(args: &[String]) -> Result<Arguments, String> {
    let mut file = None;
    let mut parsed = Arguments {
        file: PathBuf::new(),
        longest: 24,
        ids: None,
        config: Config::default(),
        budget_window: 16_000,
        svg: None,
        json: None,
        markdown: None,
        max_message_bytes: dataset::DEFAULT_MAX_MESSAGE_BYTES,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |flag: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |flag: &str, text: String| {
            text.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag} needs a positive whole number, not {text:?}"))
        };
        match arg.as_str() {
            "--longest" => parsed.longest = number("--longest", value("--longest")?)?,
            "--ids" => {
                parsed.ids = Some(
                    value("--ids")?
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect(),
                )
            }
            "--config" => {
                parsed.config =
                    Config::from_json(&value("--config")?).map_err(|e| format!("--config: {e}"))?
            }
            "--budget-window" => {
                let window = number("--budget-window", value("--budget-window")?)?;
                parsed.budget_window =
                    u32::try_from(window).map_err(|_| "--budget-window is too large".to_string())?
            }
            "--svg" => parsed.svg = Some(value("--svg")?.into()),
            "--json" => parsed.json = Some(value("--json")?.into()),
            "--markdown" => parsed.markdown = Some(value("--markdown")?.into()),
            "--max-message-bytes" => {
                parsed.max_message_bytes =
                    number("--max-message-bytes", value("--max-message-bytes")?)?
            }
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{}", usage()))
            }
            other if file.is_none() => file = Some(PathBuf::from(other)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    parsed.file = file.ok_or_else(|| format!("which file?\n{}", usage()))?;
    Ok(parsed)
}

/// Runs `ccm replay` with the arguments after the subcommand.
///
/// # Errors
/// A message for bad arguments, an unreadable or malformed file, a bad record in a
/// conversation named with `--ids`, or a failed write.
pub fn run(args: &[String]) -> Result<(), String> {
    let arguments = parse(args)?;
    let bytes = std::fs::read(&arguments.file)
        .map_err(|e| format!("could not read {}: {e}", arguments.file.display()))?;
    let read = dataset::read_records(&bytes, arguments.max_message_bytes)
        .map_err(|e| format!("{}: {e}", arguments.file.display()))?;
    let record_count = read.records.len();
    let grouped = dataset::group(read.records);
    eprintln!(
        "read {record_count} records of {} ({} conversations usable, {} left out for a bad record{})",
        arguments.file.display(),
        grouped.conversations.len(),
        grouped.rejected.len() + grouped.unattributed.len(),
        match read.truncated_at {
            Some(at) => format!("; the file ends inside a record that starts at byte {at}, which is not played"),
            None => String::new(),
        }
    );
    let selected: Vec<&dataset::Conversation> = match &arguments.ids {
        Some(ids) => ids
            .iter()
            .map(|id| {
                if let Some((_, error)) = grouped.rejected.iter().find(|(r, _)| r == id) {
                    return Err(error.to_string());
                }
                grouped
                    .conversations
                    .iter()
                    .find(|c| &c.id == id)
                    .ok_or_else(|| format!("conversation {id} is not in the file"))
            })
            .collect::<Result<_, _>>()?,
        None => dataset::longest(&grouped.conversations, arguments.longest),
    };
    if selected.is_empty() {
        return Err("no conversation to play".to_string());
    }
    let encoder = tiktoken_rs::o200k_base().map_err(|e| format!("tiktoken-rs: {e}"))?;
    let exact = |text: &str| encoder.encode_ordinary(text).len();
    let mut results = Vec::with_capacity(selected.len());
    let mut budget_problems = Vec::new();
    let mut small_config = arguments.config.clone();
    small_config.context_window = arguments.budget_window;
    small_config.reserved_output_tokens = arguments.budget_window / 8;
    for conversation in &selected {
        eprintln!(
            "playing {} ({} exchanges)",
            conversation.id,
            conversation.exchange_count()
        );
        results.push(play::play(
            conversation,
            arguments.config.clone(),
            Some(&exact),
        )?);
        let small = play::play(conversation, small_config.clone(), None)?;
        let over: Vec<u64> = small
            .points
            .iter()
            .filter(|p| !p.within_budget)
            .map(|p| p.turn)
            .collect();
        if !over.is_empty() {
            budget_problems.push(format!(
                "{}: {} requests over the {}-token window's budget (turns {:?})",
                conversation.id,
                over.len(),
                arguments.budget_window,
                &over[..over.len().min(10)]
            ));
        }
    }
    let totals = report::totals(&results);
    let table = report::markdown(&results, &totals);
    println!("{table}");
    println!(
        "With a {}-token window ({} reserved): {}.",
        arguments.budget_window,
        small_config.reserved_output_tokens,
        if budget_problems.is_empty() {
            "no request went over its budget".to_string()
        } else {
            budget_problems.join("; ")
        }
    );
    for result in &results {
        for problem in &result.problems {
            println!("check failed: {}: {problem}", result.id);
        }
    }
    if let Some(path) = &arguments.markdown {
        std::fs::write(path, &table)
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    }
    if let Some(path) = &arguments.json {
        let document = serde_json::json!({ "totals": totals, "conversations": results });
        std::fs::write(path, document.to_string())
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    }
    if let Some(path) = &arguments.svg {
        let title = format!(
            "{} real conversations ({} exchanges): naive context and CCM's request per turn",
            totals.conversations, totals.exchanges
        );
        std::fs::write(path, report::svg(&results, &title))
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    }
    Ok(())
}
