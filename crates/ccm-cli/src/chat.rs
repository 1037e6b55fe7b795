//! `ccm chat`: an interactive conversation on stdin with any provider, or with the offline
//! demo model.

use crate::provider_args::{provider_usage, ProviderArgs, API_KEY_VARIABLE};
use crate::session_args::{SessionArgs, SESSION_USAGE};
use crate::store_args::{CliStore, STORE_USAGE};
use ccm_core::Session;
use ccm_engine::{RequestPurpose, RunError, TurnEvent};
use ccm_native::{run_stored_turn, CancelToken};
use ccm_provider::StreamDelta;
use std::io::{BufRead, Write};

/// The variable the embeddings endpoint's key is read from (never a flag: flags show in `ps`).
pub const EMBEDDINGS_KEY_VARIABLE: &str = "CCM_EMBEDDINGS_KEY";

/// The usage of `ccm chat`.
pub fn usage() -> String {
    let provider_usage = provider_usage();
    format!(
        "ccm chat [provider options] [session options] [--embeddings-url URL --embeddings-model NAME]
  Reads one message per line from stdin and prints the reply with its effort banners.
  /status shows the efforts, /search WORDS the stored messages that best match (verbatim,
  with their date), /quit ends; after a failed turn an empty line sends the message again.
{provider_usage}
{SESSION_USAGE}
{STORE_USAGE}
  --embeddings-url URL  an OpenAI-compatible embeddings endpoint (its base URL, e.g.
                        http://localhost:11434/v1 for Ollama): before each message the new
                        messages and the message itself are embedded, and search ranks by
                        meaning as well as by words ({EMBEDDINGS_KEY_VARIABLE} holds its key)
  --embeddings-model NAME  the embedding model (needed with --embeddings-url)"
    )
}

/// Prints the stored messages that best match `query`, grouped by where they are stored.
fn print_search(
    out: &mut impl Write,
    session: &Session,
    query: &str,
) -> Result<(), std::io::Error> {
    let found = match session.find_efforts(query) {
        Ok(found) => found,
        Err(error) => return writeln!(out, "{error}"),
    };
    for hit in &found.results {
        writeln!(out, "effort {} ({:?}): {}", hit.id, hit.state, hit.summary)?;
    }
    for group in &found.evidence.groups {
        let label = match &group.log {
            ccm_core::session::EvidenceLog::Effort { id, .. } => format!("effort {id}"),
            ccm_core::session::EvidenceLog::Ambient => "earlier chat".to_string(),
            ccm_core::session::EvidenceLog::Attachment { name, .. } => {
                format!("attachment {name}")
            }
        };
        for excerpt in &group.excerpts {
            writeln!(
                out,
                "-- {label}, turn {}{}",
                excerpt.turn,
                excerpt
                    .date
                    .as_deref()
                    .map(|d| format!(", {d}"))
                    .unwrap_or_default()
            )?;
            for message in &excerpt.messages {
                writeln!(out, "   {}: {}", message.role.as_str(), message.text)?;
            }
        }
    }
    if found.results.is_empty() && found.evidence.groups.is_empty() {
        writeln!(out, "Nothing stored outside the context matches '{query}'.")?;
    } else if found.evidence.more > 0 {
        writeln!(
            out,
            "({} more matching messages: over the budget, or in the context already)",
            found.evidence.more
        )?;
    }
    Ok(())
}

/// Runs `ccm chat` with the arguments after the subcommand.
///
/// # Errors
/// A message for bad arguments, or when stdin or stdout fail.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut provider = ProviderArgs::default();
    let mut session_args = SessionArgs::default();
    let (mut embeddings_url, mut embeddings_model) = (None, None);
    let (mut store_spec, mut session_id, mut session_name) = (None, None, None);
    let mut rest = args.iter().cloned();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--embeddings-url" => {
                embeddings_url = Some(rest.next().ok_or("--embeddings-url needs a URL")?)
            }
            "--embeddings-model" => {
                embeddings_model = Some(rest.next().ok_or("--embeddings-model needs a name")?)
            }
            "--store" => {
                store_spec = Some(
                    rest.next()
                        .ok_or("--store needs file:DIR or a postgres:// URL")?,
                )
            }
            "--session" => session_id = Some(rest.next().ok_or("--session needs an id")?),
            "--name" => session_name = Some(rest.next().ok_or("--name needs a name")?),
            _ if provider.take(&arg, &mut rest)? => {}
            _ if session_args.take(&arg, &mut rest)? => {}
            _ => return Err(format!("unexpected argument {arg}\n{}", usage())),
        }
    }
    let config = session_args.config(provider.model())?;
    let (mut responder, settings) = provider.connect(std::env::var(API_KEY_VARIABLE).ok())?;
    let store = store_spec.as_deref().map(CliStore::open).transpose()?;
    if store.is_none() && (session_id.is_some() || session_name.is_some()) {
        return Err("--session and --name need --store: without it nothing is kept".to_string());
    }
    // A stored session is continued as it was configured; the options configure new ones.
    let (mut session, stored_id) = match (&store, session_id) {
        (Some(store), Some(id)) => {
            let (session, problems) = store.open_session(&id)?;
            for problem in problems {
                eprintln!("(while opening {id}: {problem})");
            }
            (session, Some(id))
        }
        (Some(store), None) => {
            let mut session =
                Session::new(config).map_err(|e| format!("invalid configuration: {e}"))?;
            let name = session_name.unwrap_or_else(|| "ccm chat".to_string());
            let id = store.create(&mut session, &name, true)?;
            (session, Some(id))
        }
        (None, _) => (
            Session::new(config).map_err(|e| format!("invalid configuration: {e}"))?,
            None,
        ),
    };
    let embeddings = match (embeddings_url, embeddings_model) {
        (None, None) => None,
        (Some(url), Some(model)) => {
            let choice = ccm_provider::ProviderChoice {
                provider: ccm_provider::ProviderName::Compatible(
                    ccm_provider::ProviderKind::OpenAiCompatible,
                ),
                base_url: Some(url),
                api_key: std::env::var(EMBEDDINGS_KEY_VARIABLE).ok(),
                headers: Vec::new(),
            };
            let provider = ccm_provider::ProviderConfig::from_choice(&choice)
                .map_err(|e| format!("--embeddings-url: {e}"))?
                .ok_or("--embeddings-url: an embeddings endpoint needs a server, not the offline model")?;
            session.enable_embeddings(&model);
            Some(ccm_provider::EmbeddingsEndpoint {
                provider,
                model,
                dimensions: None,
            })
        }
        _ => return Err("--embeddings-url and --embeddings-model go together".to_string()),
    };
    let speaker = settings.model.clone();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let write_error = |e: std::io::Error| format!("could not write to stdout: {e}");
    writeln!(
        out,
        "ccm chat: {}, model {speaker}, context window {} tokens. Type a message; /status shows the efforts, /quit ends.",
        responder.label(),
        session.config().context_window
    )
    .map_err(write_error)?;
    if let (Some(spec), Some(id)) = (&store_spec, &stored_id) {
        writeln!(
            out,
            "Session {id} in {spec}, {} turns so far; every turn is saved. Continue it later with --store {spec} --session {id}.",
            session.turn()
        )
        .map_err(write_error)?;
    }
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
            searched if searched.starts_with("/search") => {
                print_search(&mut out, &session, searched["/search".len()..].trim())
                    .map_err(write_error)?;
                continue;
            }
            _ => line,
        };
        if let Some(endpoint) = &embeddings {
            // A failed refresh is shown and the turn goes on: ranking falls back to words.
            let timeouts = ccm_native::Timeouts::default();
            let refreshed = ccm_native::refresh_recall_embeddings(
                &mut session,
                Some(&text),
                endpoint,
                timeouts,
                ccm_native::RECALL_EMBEDDING_BATCH,
            )
            .and_then(|_| ccm_native::refresh_embeddings(&mut session, &text, endpoint, timeouts));
            if let Err(error) = refreshed {
                eprintln!("(embeddings unavailable, searching by words: {error})");
            }
        }
        let mut streamed = false;
        // The round whose text is on screen: text of a later round starts a new paragraph,
        // as it does in the stored answer.
        let mut shown_round: Option<u32> = None;
        // Banners of tool calls are printed as the calls run, between the streamed pieces of
        // text, so the screen shows the turn in the order it happened.
        let mut banners_shown: Vec<String> = Vec::new();
        let mut read_stored =
            |session: &mut Session, load: &ccm_engine::LogLoad| match (&store, &stored_id) {
                (Some(store), Some(id)) => store.read_for_turn(id, session, load),
                _ => Err("this session keeps no stored records".to_string()),
            };
        let outcome = run_stored_turn(
            &mut session,
            &mut read_stored,
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
                TurnEvent::ToolCalled(entry) if settings.stream => {
                    if let Some(banner) = &entry.banner {
                        if streamed {
                            println!();
                        }
                        println!("{banner}");
                        banners_shown.push(banner.clone());
                        // The next text starts a new paragraph after the banner.
                        streamed = false;
                    }
                }
                _ => {}
            },
        );
        match outcome {
            Ok(result) if settings.stream => {
                // The text and the tool calls' banners are on screen already; what remains are
                // the banners of what the turn did without a tool call (a conclusion with the
                // extractive summary, the end of turn's auto-collapses), in the turn's order.
                if streamed {
                    writeln!(out).map_err(write_error)?;
                }
                for banner in &result.report.banners {
                    match banners_shown.iter().position(|shown| shown == banner) {
                        Some(at) => {
                            banners_shown.remove(at);
                        }
                        None => writeln!(out, "{banner}").map_err(write_error)?,
                    }
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
        if let (Some(store), Some(id)) = (&store, &stored_id) {
            // A failed save keeps the turn in memory: the next turn's save writes it too.
            if let Err(error) = store.save(id, &mut session) {
                eprintln!("(not saved: {error})");
            }
        }
    }
    Ok(())
}
