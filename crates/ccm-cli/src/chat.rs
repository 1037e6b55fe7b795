//! `ccm chat`: an interactive conversation on stdin with any provider, or with the offline
//! demo model.

use crate::provider_args::{ProviderArgs, API_KEY_VARIABLE, PROVIDER_USAGE};
use ccm_core::{Config, Session};
use ccm_engine::{RequestPurpose, RunError, TurnEvent};
use ccm_native::{run_turn, CancelToken};
use ccm_provider::StreamDelta;
use std::io::{BufRead, Write};

/// The usage of `ccm chat`.
pub fn usage() -> String {
    format!(
        "ccm chat [provider options]
  Reads one message per line from stdin and prints the reply with its effort banners.
  /status shows the efforts, /quit ends; after a failed turn an empty line sends the
  message again.
{PROVIDER_USAGE}"
    )
}

/// Runs `ccm chat` with the arguments after the subcommand.
///
/// # Errors
/// A message for bad arguments, or when stdin or stdout fail.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut provider = ProviderArgs::default();
    let mut rest = args.iter().cloned();
    while let Some(arg) = rest.next() {
        if !provider.take(&arg, &mut rest)? {
            return Err(format!("unexpected argument {arg}\n{}", usage()));
        }
    }
    let (mut responder, settings) = provider.connect(std::env::var(API_KEY_VARIABLE).ok())?;
    let mut session =
        Session::new(Config::default()).map_err(|e| format!("invalid configuration: {e}"))?;
    let speaker = settings.model.clone();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let write_error = |e: std::io::Error| format!("could not write to stdout: {e}");
    writeln!(
        out,
        "ccm chat: {}, model {speaker}. Type a message; /status shows the efforts, /quit ends.",
        responder.label()
    )
    .map_err(write_error)?;
    let cancel = CancelToken::new();
    let mut unsent: Option<String> = None;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        write!(out, "you> ")
            .and_then(|_| out.flush())
            .map_err(write_error)?;
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|e| format!("could not read stdin: {e}"))?;
        let text = match line.trim() {
            "/quit" | "/exit" => break,
            "/status" => {
                let status = serde_json::to_string_pretty(&session.effort_status())
                    .map_err(|e| e.to_string())?;
                writeln!(out, "{status}").map_err(write_error)?;
                continue;
            }
            "" => match unsent.take() {
                Some(text) => text,
                None => continue,
            },
            _ => line,
        };
        let mut streamed = false;
        // The round whose text is on screen: text of a later round starts a new paragraph,
        // as it does in the stored answer.
        let mut shown_round: Option<u32> = None;
        let outcome = run_turn(
            &mut session,
            &text,
            settings.clone(),
            responder.as_mut(),
            &cancel,
            &mut |event| match event {
                TurnEvent::Delta {
                    purpose: RequestPurpose::Turn { round, .. },
                    delta: StreamDelta::Text(piece),
                } => {
                    if !streamed {
                        print!("{speaker}> ");
                        streamed = true;
                    } else if shown_round != Some(*round) {
                        print!("\n\n");
                    }
                    shown_round = Some(*round);
                    print!("{piece}");
                    let _ = std::io::stdout().flush();
                }
                TurnEvent::Retrying(wait) => {
                    eprintln!("(retrying in {} ms: {})", wait.delay_ms, wait.error);
                }
                _ => {}
            },
        );
        match outcome {
            Ok(result) if streamed => {
                // The text is on screen already; the banners follow it.
                writeln!(out).map_err(write_error)?;
                for banner in &result.report.banners {
                    writeln!(out, "{banner}").map_err(write_error)?;
                }
            }
            Ok(result) => writeln!(out, "{speaker}> {}", result.reply).map_err(write_error)?,
            Err(RunError::Failed(failure)) => {
                if streamed {
                    writeln!(out).map_err(write_error)?;
                }
                eprintln!("{failure}");
                eprintln!("(press Enter to send it again)");
                unsent = Some(failure.user_text);
            }
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(())
}
