//! Where the CLI keeps conversations: `--store file:DIR` (a directory of files, ccm-store's
//! file backend) or `--store postgres://…` (a PostgreSQL database shared with servers), and
//! the `ccm sessions` command that lists, exports, imports and deletes them.

use ccm_core::tokens::{default_counter, ApproximateCounter, Encoding, TokenCounter};
use ccm_core::Session;
use ccm_engine::LogLoad;
use ccm_store::files::FileStore;
use ccm_store::postgres::{PostgresOptions, PostgresStore};
use ccm_store::{sessions, RecordStore, SessionInfo, StoreError};
use std::sync::Arc;

/// The usage lines of the store options of `ccm chat`.
pub const STORE_USAGE: &str = "\
  --store file:DIR      keep the conversation in a directory of files (created when missing)
  --store postgres://USER@HOST:PORT/DB
                        keep it in PostgreSQL, in the schema `ccm` (the store creates and
                        migrates its tables itself; messages never print the password)
  --session ID          continue the stored session ID (without it a new one is created;
                        `ccm sessions --store … list` shows the ids)
  --name NAME           the name of a new stored session";

/// The usage of `ccm sessions`.
pub fn sessions_usage() -> String {
    "ccm sessions --store file:DIR|postgres://… COMMAND
  list                  the stored sessions, newest first: id, turns, messages, name
  export ID [--out FILE]
                        the session as one versioned JSON document (stdout without --out);
                        damaged records are exported as far as they are readable
  import FILE [--name NAME]
                        stores a session document (an export, or the app's) as a new session
  delete ID             deletes the session and every record of it"
        .to_string()
}

/// An open store of either backend, with what it needs to run its futures.
pub enum CliStore {
    /// A directory of files; its futures complete when first polled.
    Files(FileStore),
    /// PostgreSQL, whose client runs on a single-threaded tokio runtime owned here.
    Postgres(Box<PostgresStore>, tokio::runtime::Runtime),
}

/// Runs `$body` with `$store` bound to the open backend and awaits it on that backend's
/// executor: the operations are generic over the backend, the CLI picks one at run time.
macro_rules! on_store {
    ($cli:expr, $store:ident => $body:expr) => {
        match $cli {
            CliStore::Files($store) => ccm_engine::driver::block_on($body),
            CliStore::Postgres($store, runtime) => {
                let $store: &PostgresStore = $store;
                runtime.block_on($body)
            }
        }
    };
}

/// The CLI's one error type for store operations: every failure becomes its sentence.
#[derive(Debug)]
pub struct CliError(pub String);

impl From<StoreError> for CliError {
    fn from(error: StoreError) -> Self {
        let hint = match &error {
            StoreError::Conflict(_) => {
                " (another process saved this session; run the command again to continue from what it saved)"
            }
            StoreError::Unavailable(_) => " (is the database server running and the URL right?)",
            _ => "",
        };
        CliError(format!("{error}{hint}"))
    }
}

impl From<ccm_core::SnapshotError> for CliError {
    fn from(error: ccm_core::SnapshotError) -> Self {
        CliError(error.to_string())
    }
}

impl From<ccm_core::TurnError> for CliError {
    fn from(error: ccm_core::TurnError) -> Self {
        CliError(error.to_string())
    }
}

impl From<CliError> for String {
    fn from(error: CliError) -> Self {
        error.0
    }
}

/// The counter of a stored session: its own counting rule, exact where the CLI has the rule.
fn counter_for(
    header: &ccm_core::persistence::SessionHeader,
) -> Result<Arc<dyn TokenCounter>, CliError> {
    match Encoding::from_name(&header.counted_with) {
        Ok(encoding) => Ok(default_counter(encoding)),
        Err(_) if header.counted_with == ApproximateCounter.name() => {
            Ok(Arc::new(ApproximateCounter))
        }
        Err(_) => Err(CliError(format!(
            "the session counts tokens with '{}', which this build of ccm does not have",
            header.counted_with
        ))),
    }
}

/// A new session id: the time and a random part, so two processes never pick the same one.
fn new_id() -> String {
    let now = ccm_native::now_ms();
    let random = std::collections::hash_map::RandomState::new();
    let noise = std::hash::BuildHasher::hash_one(&random, (now, std::process::id()));
    format!("c{now:x}-{:08x}", noise & 0xffff_ffff)
}

impl CliStore {
    /// Opens the store a `--store` value names.
    ///
    /// # Errors
    /// A value of neither form, or the backend's refusal (a directory that cannot be made, a
    /// database that cannot be reached).
    pub fn open(spec: &str) -> Result<CliStore, String> {
        if let Some(dir) = spec.strip_prefix("file:") {
            if dir.is_empty() {
                return Err("--store file: needs a directory, as in file:./sessions".into());
            }
            return FileStore::open(dir)
                .map(CliStore::Files)
                .map_err(|e| format!("--store {spec}: {e}"));
        }
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("could not start the database client: {e}"))?;
            let options = PostgresOptions {
                pool_size: 2,
                ..PostgresOptions::default()
            };
            let store = runtime
                .block_on(PostgresStore::connect(spec, options))
                .map_err(|e| format!("--store: {}", CliError::from(e).0))?;
            return Ok(CliStore::Postgres(Box::new(store), runtime));
        }
        Err(format!(
            "--store takes file:DIR or postgres://USER@HOST:PORT/DB, got '{spec}'"
        ))
    }

    /// Every stored session, newest first.
    ///
    /// # Errors
    /// A storage failure.
    pub fn list(&self) -> Result<Vec<SessionInfo>, String> {
        on_store!(self, store => async { sessions::list(store).await })
            .map_err(|e| CliError::from(e).0)
    }

    /// Opens stored session `id` with its counting rule; returns it and what had to be
    /// repaired or skipped, one sentence each.
    ///
    /// # Errors
    /// An unknown id, an unreadable session, a storage failure.
    pub fn open_session(&self, id: &str) -> Result<(Session, Vec<String>), String> {
        on_store!(self, store => async {
            let (session, _, problems) = sessions::open::<_, CliError>(store, id, counter_for).await?;
            Ok::<_, CliError>((session, problems))
        })
        .map_err(String::from)
    }

    /// Stores `session` whole as a new session named `name`; returns its id. The session is
    /// linked (marked saved) when `link` is set, so later saves write only what changed.
    ///
    /// # Errors
    /// A storage failure.
    pub fn create(&self, session: &mut Session, name: &str, link: bool) -> Result<String, String> {
        let id = new_id();
        let now = ccm_native::now_ms() as f64;
        on_store!(self, store => async {
            sessions::insert::<_, CliError>(store, &id, session, name, now, link).await
        })
        .map_err(String::from)?;
        Ok(id)
    }

    /// Saves what changed in `session` since its last save to stored session `id`; returns
    /// the stored revision.
    ///
    /// # Errors
    /// A conflict when another process saved the session first, a storage failure.
    pub fn save(&self, id: &str, session: &mut Session) -> Result<u64, String> {
        let now = ccm_native::now_ms() as f64;
        on_store!(self, store => async {
            sessions::save::<_, CliError>(store, id, session, now).await
        })
        .map(|report| report.revision)
        .map_err(String::from)
    }

    /// Reads what a turn of stored session `id` needs (the engine's `Step::Load`).
    ///
    /// # Errors
    /// Why the records could not be read.
    pub fn read_for_turn(
        &self,
        id: &str,
        session: &mut Session,
        load: &LogLoad,
    ) -> Result<(), String> {
        let problems = on_store!(self, store => async {
            sessions::read_records::<_, CliError>(
                store,
                id,
                session,
                &load.efforts,
                load.index,
                &load.messages,
            )
            .await
        })
        .map_err(String::from)?;
        for problem in problems {
            eprintln!("(stored record skipped: {problem})");
        }
        Ok(())
    }

    /// The stored session as a versioned JSON document.
    ///
    /// # Errors
    /// An unknown id or a storage failure.
    pub fn export(&self, id: &str) -> Result<String, String> {
        let document = on_store!(self, store => async {
            sessions::export_document::<_, CliError>(store, id, |header| counter_for(header).ok()).await
        })
        .map_err(String::from)?;
        serde_json::to_string(&document).map_err(|e| e.to_string())
    }

    /// Deletes stored session `id`.
    ///
    /// # Errors
    /// A storage failure.
    pub fn delete(&self, id: &str) -> Result<(), String> {
        on_store!(self, store => async { store.delete(id).await }).map_err(|e| CliError::from(e).0)
    }
}

/// The encoding a session document counts with (its `config.encoding`), o200k_base when it
/// names none or one this build lacks; the import checks the rest.
fn document_encoding(json: &str) -> Encoding {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| Encoding::from_name(v.get("config")?.get("encoding")?.as_str()?).ok())
        .unwrap_or(Encoding::O200kBase)
}

/// `ccm sessions`.
///
/// # Errors
/// A message for the person: a wrong argument, or the store's refusal.
pub fn run_sessions(args: &[String]) -> Result<(), String> {
    let mut spec = None;
    let mut out_file = None;
    let mut name = None;
    let mut words = Vec::new();
    let mut rest = args.iter().cloned();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--store" => {
                spec = Some(
                    rest.next()
                        .ok_or("--store needs file:DIR or a postgres:// URL")?,
                )
            }
            "--out" => out_file = Some(rest.next().ok_or("--out needs a file")?),
            "--name" => name = Some(rest.next().ok_or("--name needs a name")?),
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{}", sessions_usage()))
            }
            _ => words.push(arg),
        }
    }
    let spec =
        spec.ok_or_else(|| format!("which store? --store is missing\n{}", sessions_usage()))?;
    let store = CliStore::open(&spec)?;
    match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["list"] | [] => {
            let listed = store.list()?;
            if listed.is_empty() {
                println!("no stored sessions in {spec}");
            }
            for info in listed {
                match &info.damaged {
                    Some(problem) => println!("{}  DAMAGED: {problem}", info.id),
                    None => println!(
                        "{}  {} turns, {} messages  {}",
                        info.id, info.turn_count, info.message_count, info.name
                    ),
                }
            }
            Ok(())
        }
        ["export", id] => {
            let json = store.export(id)?;
            match out_file {
                Some(path) => {
                    std::fs::write(&path, json).map_err(|e| format!("could not write {path}: {e}"))
                }
                None => {
                    println!("{json}");
                    Ok(())
                }
            }
        }
        ["import", path] => {
            let json =
                std::fs::read_to_string(path).map_err(|e| format!("could not read {path}: {e}"))?;
            let encoding = document_encoding(&json);
            let mut session = Session::from_json_with_counter(&json, default_counter(encoding))
                .map_err(|e| format!("{path} is not a session document CCM can import: {e}"))?;
            let name = name.unwrap_or_else(|| path.to_string());
            let id = store.create(&mut session, &name, false)?;
            println!("imported {path} as {id} ({} turns)", session.turn());
            Ok(())
        }
        ["delete", id] => {
            store.delete(id)?;
            println!("deleted {id}");
            Ok(())
        }
        _ => Err(sessions_usage()),
    }
}
