//! `ccm-server`: the sync server and the commands that manage its accounts.
//!
//! ```text
//! ccm-server serve  [--listen ADDR] [--allow-origin ORIGIN]... [limits] [database]
//! ccm-server token create --account NAME [--label TEXT] [--raw] [database]
//! ccm-server token rotate --account NAME [--raw] [database]
//! ccm-server token revoke (--token ID | --account NAME) [database]
//! ccm-server token list [database]
//! ccm-server migrate [database]
//! ```
//!
//! The database is `--database URL` or, so that a password stays out of the process list,
//! the environment variable `CCM_SERVER_DATABASE_URL`; `--schema` picks the schema (`ccm`).

use ccm_server::auth::CreatedToken;
use ccm_server::{ApiError, Database, Limits};
use std::process::ExitCode;

const USAGE: &str = "usage:
  ccm-server serve [--listen ADDR] [--allow-origin ORIGIN]... [--max-body-bytes N]
                   [--rate N] [--burst N] [--pool N] [database]
  ccm-server token create --account NAME [--label TEXT] [--raw] [database]
  ccm-server token rotate --account NAME [--raw] [database]
  ccm-server token revoke (--token ID | --account NAME) [database]
  ccm-server token list [database]
  ccm-server migrate [database]
database: --database URL (or CCM_SERVER_DATABASE_URL) [--schema NAME]
serve listens on 127.0.0.1:8787 by default; --allow-origin names each origin whose pages may
call it from a browser (the app's, e.g. http://127.0.0.1:8080).";

/// The options of a command line, read once.
#[derive(Default)]
struct Options {
    words: Vec<String>,
    database: Option<String>,
    schema: Option<String>,
    listen: Option<String>,
    origins: Vec<String>,
    max_body_bytes: Option<usize>,
    rate: Option<u32>,
    burst: Option<u32>,
    pool: Option<usize>,
    account: Option<String>,
    token: Option<String>,
    label: Option<String>,
    raw: bool,
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a number"))?;
    value
        .parse()
        .map_err(|_| format!("{flag} needs a whole number, not '{value}'"))
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--database" => options.database = Some(value("--database")?),
            "--schema" => options.schema = Some(value("--schema")?),
            "--listen" => options.listen = Some(value("--listen")?),
            "--allow-origin" => options.origins.push(value("--allow-origin")?),
            "--max-body-bytes" => {
                options.max_body_bytes = Some(number("--max-body-bytes", args.next())?)
            }
            "--rate" => options.rate = Some(number("--rate", args.next())?),
            "--burst" => options.burst = Some(number("--burst", args.next())?),
            "--pool" => options.pool = Some(number("--pool", args.next())?),
            "--account" => options.account = Some(value("--account")?),
            "--token" => options.token = Some(value("--token")?),
            "--label" => options.label = Some(value("--label")?),
            "--raw" => options.raw = true,
            "-h" | "--help" => options.words.push("help".to_string()),
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{USAGE}"))
            }
            _ => options.words.push(arg),
        }
    }
    Ok(options)
}

impl Options {
    fn database(&self) -> Result<Database, String> {
        let url = match &self.database {
            Some(url) => url.clone(),
            None => std::env::var("CCM_SERVER_DATABASE_URL").map_err(|_| {
                format!(
                    "which database? give --database URL or set CCM_SERVER_DATABASE_URL\n{USAGE}"
                )
            })?,
        };
        let mut database = Database::at(&url);
        if let Some(schema) = &self.schema {
            database.schema = schema.clone();
        }
        if let Some(pool) = self.pool {
            database.pool_size = pool.max(1);
        }
        Ok(database)
    }

    fn account(&self) -> Result<&str, String> {
        self.account
            .as_deref()
            .ok_or_else(|| format!("which account? --account NAME is missing\n{USAGE}"))
    }
}

fn print_token(created: &CreatedToken, raw: bool) {
    if raw {
        println!("{}", created.token);
        return;
    }
    println!(
        "account: {} (id {})",
        created.account_name, created.account_id
    );
    println!("token id: {}", created.token_id);
    println!("token: {}", created.token);
    println!("(shown once: the server keeps only its hash)");
}

async fn serve(options: &Options) -> Result<(), String> {
    let database = options.database()?;
    let defaults = Limits::default();
    let limits = Limits {
        max_body_bytes: options.max_body_bytes.unwrap_or(defaults.max_body_bytes),
        requests_per_second: options.rate.unwrap_or(defaults.requests_per_second),
        burst: options.burst.unwrap_or(defaults.burst),
        allowed_origins: options.origins.clone(),
    };
    let listen = options.listen.as_deref().unwrap_or("127.0.0.1:8787");
    let bound = ccm_server::bind(&database, listen, limits.clone())
        .await
        .map_err(|e| e.message)?;
    let addr = bound.local_addr().map_err(|e| e.to_string())?;
    if limits.allowed_origins.is_empty() {
        tracing::warn!(
            "no --allow-origin given: browsers will refuse the app's requests to this server"
        );
    }
    tracing::info!(
        address = %addr,
        schema = %database.schema,
        origins = ?limits.allowed_origins,
        max_body_bytes = limits.max_body_bytes,
        rate = limits.requests_per_second,
        burst = limits.burst,
        "ccm-server listening"
    );
    // Printed plainly too, for a person starting it by hand and for scripts waiting on it.
    println!("ccm-server listening on http://{addr}");
    bound
        .run(shutdown_signal())
        .await
        .map_err(|e| format!("the server stopped: {e}"))?;
    tracing::info!("ccm-server stopped");
    Ok(())
}

/// Completes on SIGINT or SIGTERM, so that requests in flight are finished before exiting.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

async fn token(options: &Options) -> Result<(), String> {
    let database = options.database()?;
    let (_, accounts) = database.open().await.map_err(|e| e.message)?;
    let label = options.label.as_deref().unwrap_or("");
    let words: Vec<&str> = options.words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["token", "create"] => {
            let created = accounts
                .create_token(options.account()?, label)
                .await
                .map_err(|e: ApiError| e.message)?;
            print_token(&created, options.raw);
        }
        ["token", "rotate"] => {
            let (created, revoked) = accounts
                .rotate(options.account()?, label)
                .await
                .map_err(|e| e.message)?;
            if !options.raw {
                println!("revoked {revoked} token(s) of {}", created.account_name);
            }
            print_token(&created, options.raw);
        }
        ["token", "revoke"] => match (&options.token, &options.account) {
            (Some(id), _) => {
                let revoked = accounts.revoke_token(id).await.map_err(|e| e.message)?;
                if !revoked {
                    return Err(format!("no live token has the id '{id}'"));
                }
                println!("revoked token {id}");
            }
            (None, Some(name)) => {
                let revoked = accounts.revoke_account(name).await.map_err(|e| e.message)?;
                println!("revoked {revoked} token(s) of {name}");
            }
            (None, None) => {
                return Err(format!(
                    "revoke which? give --token ID or --account NAME\n{USAGE}"
                ))
            }
        },
        ["token", "list"] => {
            for token in accounts.tokens().await.map_err(|e| e.message)? {
                let state = match &token.revoked {
                    Some(when) => format!("revoked {when}"),
                    None => "live".to_string(),
                };
                println!(
                    "{}  {}  created {}  {state}  {}",
                    token.id, token.account, token.created, token.label
                );
            }
        }
        _ => return Err(USAGE.to_string()),
    }
    Ok(())
}

async fn run(options: Options) -> Result<(), String> {
    match options.words.first().map(String::as_str) {
        Some("serve") if options.words.len() == 1 => serve(&options).await,
        Some("token") => token(&options).await,
        Some("migrate") if options.words.len() == 1 => {
            let database = options.database()?;
            database.open().await.map_err(|e| e.message)?;
            println!("the schema '{}' is migrated", database.schema);
            Ok(())
        }
        Some("help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .json()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CCM_SERVER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("the server's runtime could not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ccm-server: {message}");
            ExitCode::FAILURE
        }
    }
}
