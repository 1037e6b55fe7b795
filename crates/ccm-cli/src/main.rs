//! `ccm`: native entry points of CCM. Thin by design: every rule lives in `ccm-core` and
//! `ccm-engine`, and the proof runs are this crate's library (`ccm_cli::proof`).

mod chat;
mod provider_args;
mod replay;
mod script;
mod session_args;
mod store_args;

use ccm_cli::proof::{self, ProofRun};
use ccm_core::tokens::{default_counter, Encoding};
use std::process::ExitCode;

const USAGE: &str = "usage:
  ccm proof <slice2|slice3|slice4|slice4-long|compaction|all> [--json] [--encoding o200k_base|cl100k_base]
            [--profile default|seed] [--config JSON|@FILE]
            [--turns N] [--efforts N]      (slice4-long only; defaults 1000 turns, 200 efforts)
  ccm chat [--provider P] [--base-url URL] [--model NAME] [--stream] [--profile NAME]
           [--config JSON|@FILE] [--context-window N] [...]
  ccm chat --store file:DIR|postgres://… [--session ID] [...]   (keeps the conversation)
  ccm sessions --store file:DIR|postgres://… list|export ID|import FILE|delete ID
  ccm script <conversation-file> [--out metrics.json|metrics.csv] [--provider P] [...]
  ccm replay <sharegpt-file> [--longest N | --ids A,B] [--svg PATH] [...]
  ccm help [chat|sessions|script|replay]      (or ccm <command> --help)
  ccm --version";

struct ProofArgs {
    which: String,
    session: session_args::SessionArgs,
    config: ccm_core::Config,
    json: bool,
    encoding: Encoding,
    turns: u64,
    efforts: usize,
}

fn parse_proof_args(args: &[String]) -> Result<ProofArgs, String> {
    let mut parsed = ProofArgs {
        which: String::new(),
        session: session_args::SessionArgs::default(),
        config: ccm_core::Config::default(),
        json: false,
        encoding: Encoding::O200kBase,
        turns: 1000,
        efforts: 200,
    };
    let mut iter = args.iter().cloned();
    while let Some(arg) = iter.next() {
        if parsed.session.take(&arg, &mut iter)? {
            continue;
        }
        let mut value = |flag: &str| iter.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--json" => parsed.json = true,
            "--encoding" => {
                parsed.encoding =
                    Encoding::from_name(&value("--encoding")?).map_err(|e| e.to_string())?
            }
            "--turns" => {
                parsed.turns = value("--turns")?
                    .parse()
                    .map_err(|e| format!("--turns: {e}"))?
            }
            "--efforts" => {
                parsed.efforts = value("--efforts")?
                    .parse()
                    .map_err(|e| format!("--efforts: {e}"))?
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            other if parsed.which.is_empty() => parsed.which = other.to_string(),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if parsed.which.is_empty() {
        return Err("which proof run? slice2, slice3, slice4, slice4-long or all".to_string());
    }
    parsed.config = parsed.session.config(None)?;
    if parsed.turns < 10 || parsed.efforts == 0 {
        return Err("--turns must be at least 10 and --efforts at least 1".to_string());
    }
    Ok(parsed)
}

fn run_proofs(args: &ProofArgs) -> Result<Vec<ProofRun>, String> {
    let counter = || default_counter(args.encoding);
    let names: Vec<&str> = match args.which.as_str() {
        "all" => vec!["slice2", "slice3", "slice4", "slice4-long"],
        "compaction" => vec![],
        one => vec![one],
    };
    names
        .into_iter()
        .map(|name| match name {
            "slice2" => Ok(proof::slice2(args.config.clone(), counter()).0),
            "slice3" => Ok(proof::slice3(args.config.clone(), counter()).0),
            "slice4" => Ok(proof::slice4(args.config.clone(), counter()).0),
            "slice4-long" => Ok(proof::slice4_long(
                args.config.clone(),
                counter(),
                args.turns,
                args.efforts,
            )
            .0),
            other => Err(format!(
                "unknown proof run '{other}'; expected slice2, slice3, slice4, slice4-long, compaction or all"
            )),
        })
        .collect()
}

/// The usage of one command, for `ccm help COMMAND` and `ccm COMMAND --help`.
fn usage_of(command: Option<&str>) -> String {
    match command {
        Some("chat") => chat::usage(),
        Some("script") => script::usage(),
        Some("replay") => replay::usage().to_string(),
        Some("sessions") => store_args::sessions_usage(),
        _ => USAGE.to_string(),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--help` anywhere after a command asks for that command's usage, not a turn.
    let asks_help = args.iter().skip(1).any(|a| a == "--help" || a == "-h");
    let result = match args.first().map(String::as_str) {
        Some("--version") | Some("-V") | Some("version") => {
            println!("ccm {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some(command) if asks_help => {
            println!("{}", usage_of(Some(command)));
            Ok(())
        }
        Some("proof") => parse_proof_args(&args[1..]).and_then(|parsed| {
            let runs = run_proofs(&parsed)?;
            // The compaction run has a table of its own: one row per compaction.
            let compaction = matches!(parsed.which.as_str(), "compaction" | "all").then(|| {
                proof::compaction_run(parsed.config.clone(), default_counter(parsed.encoding), 300)
                    .0
            });
            if parsed.json {
                let document = serde_json::json!({ "runs": runs, "compaction": compaction });
                println!(
                    "{}",
                    serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?
                );
            } else {
                for run in &runs {
                    println!("{}", run.to_markdown());
                }
                if let Some(compaction) = &compaction {
                    println!("{}", compaction.to_markdown());
                }
            }
            let errors: Vec<&String> = runs.iter().flat_map(|r| &r.tool_errors).collect();
            if errors.is_empty() {
                Ok(())
            } else {
                Err(format!("the scripted runs hit tool errors: {errors:?}"))
            }
        }),
        Some("chat") => chat::run(&args[1..]),
        Some("script") => script::run(&args[1..]),
        Some("replay") => replay::run(&args[1..]),
        Some("sessions") => store_args::run_sessions(&args[1..]),
        Some("help") | Some("--help") | Some("-h") => {
            println!("{}", usage_of(args.get(1).map(String::as_str)));
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ccm: {message}");
            ExitCode::FAILURE
        }
    }
}
