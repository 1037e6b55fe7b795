//! `ccm script`: replays a conversation file through a provider (the offline demo model by
//! default) and writes the per-turn metrics as JSON or CSV.

use crate::provider_args::{provider_usage, ProviderArgs, API_KEY_VARIABLE};
use crate::session_args::{SessionArgs, SESSION_USAGE};
use ccm_core::metrics::TurnMetrics;
use ccm_core::Session;
use ccm_engine::RunError;
use ccm_native::{metrics_to_csv, metrics_to_json, run_blocking_turn, CancelToken};
use std::path::{Path, PathBuf};

/// The usage of `ccm script`.
pub fn usage() -> String {
    let provider_usage = provider_usage();
    format!(
        "ccm script <conversation-file> [--out metrics.json|metrics.csv] [provider options]
           [session options]
  Replays the conversation, one turn per user message, and writes each turn's metrics
  (context tokens, naive tokens, savings, efforts). Without --out, CSV goes to stdout.
  The file is either a JSON array of strings, or plain text with one user message per
  line (blank lines and lines starting with # are skipped).
{provider_usage}
{SESSION_USAGE}"
    )
}

/// The user messages of a conversation file: a JSON array of strings, or one message per line
/// (blank lines and `#` comments skipped).
///
/// # Errors
/// A message when the JSON is malformed or the file holds no message.
pub fn parse_conversation(text: &str) -> Result<Vec<String>, String> {
    let messages: Vec<String> = if text.trim_start().starts_with('[') {
        serde_json::from_str(text).map_err(|e| {
            format!("the conversation looks like JSON but is not an array of strings: {e}")
        })?
    } else {
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    if messages.iter().all(|m| m.trim().is_empty()) {
        return Err("the conversation has no user message".to_string());
    }
    Ok(messages)
}

/// Runs `ccm script` with the arguments after the subcommand.
///
/// # Errors
/// A message for bad arguments, an unreadable file, or a turn that failed (the metrics of the
/// turns before it are still written).
pub fn run(args: &[String]) -> Result<(), String> {
    let mut provider = ProviderArgs::default();
    let mut session_args = SessionArgs::default();
    let mut file: Option<PathBuf> = None;
    let mut out: Option<PathBuf> = None;
    let mut rest = args.iter().cloned();
    while let Some(arg) = rest.next() {
        if provider.take(&arg, &mut rest)? || session_args.take(&arg, &mut rest)? {
            continue;
        }
        match arg.as_str() {
            "--out" => out = Some(rest.next().ok_or("--out needs a file name")?.into()),
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{}", usage()))
            }
            other if file.is_none() => file = Some(other.into()),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let file = file.ok_or_else(|| format!("which conversation file?\n{}", usage()))?;
    let format = match &out {
        Some(path) => OutputFormat::of(path)?,
        None => OutputFormat::Csv,
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("could not read {}: {e}", file.display()))?;
    let messages = parse_conversation(&text)?;
    let config = session_args.config(provider.model())?;
    let (mut responder, settings) = provider.connect(std::env::var(API_KEY_VARIABLE).ok())?;
    let mut session = Session::new(config).map_err(|e| format!("invalid configuration: {e}"))?;
    let cancel = CancelToken::new();
    let mut metrics: Vec<TurnMetrics> = Vec::with_capacity(messages.len());
    let mut failure = None;
    for (index, message) in messages.iter().enumerate() {
        match run_blocking_turn(
            &mut session,
            message,
            settings.clone(),
            responder.as_mut(),
            &cancel,
            &mut |_| {},
        ) {
            Ok(result) => metrics.push(result.report.metrics),
            Err(RunError::Failed(error)) => {
                failure = Some(format!("turn {} failed: {error}", index + 1));
                break;
            }
            Err(error) => return Err(error.to_string()),
        }
    }
    let rendered = match format {
        OutputFormat::Json => metrics_to_json(&metrics),
        OutputFormat::Csv => metrics_to_csv(&metrics),
    };
    match &out {
        Some(path) => {
            std::fs::write(path, rendered)
                .map_err(|e| format!("could not write {}: {e}", path.display()))?;
            eprintln!("{}", summary_line(&metrics, responder.label(), path));
        }
        None => print!("{rendered}"),
    }
    failure.map_or(Ok(()), Err)
}

/// The line reported after a run: turns, the context's peak, the final savings.
fn summary_line(metrics: &[TurnMetrics], label: String, path: &Path) -> String {
    let peak = metrics.iter().map(|m| m.context_tokens).max().unwrap_or(0);
    match metrics.last() {
        Some(last) => format!(
            "{} turns with {label}: context peaked at {peak} tokens; the last turn used {} of {} \
             naive tokens ({:.1}% saved). Metrics written to {}.",
            metrics.len(),
            last.context_tokens,
            last.naive_tokens,
            last.savings_vs_naive * 100.0,
            path.display()
        ),
        None => format!(
            "no turn completed; wrote an empty list to {}",
            path.display()
        ),
    }
}

/// The format of the metrics file, chosen by its extension.
enum OutputFormat {
    Json,
    Csv,
}

impl OutputFormat {
    fn of(path: &Path) -> Result<OutputFormat, String> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Ok(OutputFormat::Json),
            Some(e) if e.eq_ignore_ascii_case("csv") => Ok(OutputFormat::Csv),
            _ => Err(format!(
                "--out {} must end in .json or .csv",
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_are_lines_or_a_json_array() {
        assert_eq!(
            parse_conversation("# a comment\nHello\n\n  Let's work on X.  \n").unwrap(),
            ["Hello", "Let's work on X."]
        );
        assert_eq!(
            parse_conversation(r#"["Hello", "Multi\nline"]"#).unwrap(),
            ["Hello", "Multi\nline"]
        );
        assert!(parse_conversation("[1, 2]")
            .unwrap_err()
            .starts_with("the conversation looks like JSON but is not an array of strings"));
        assert_eq!(
            parse_conversation("# only a comment\n").unwrap_err(),
            "the conversation has no user message"
        );
    }
}
