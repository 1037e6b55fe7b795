//! The `ccm-mock-llm` binary: starts the mock server, prints the listening line, and exits
//! when the server stops (idle limit, lifetime limit or `POST /__mock/shutdown`).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use ccm_mock_llm::{load_script, MockConfig, MockServer, LISTENING_PREFIX};

const USAGE: &str = "\
ccm-mock-llm: a local mock LLM provider (OpenAI chat, Anthropic messages, embeddings) for tests

usage: ccm-mock-llm [options]

  --port N               port on 127.0.0.1 (default 0: a free port)
  --script FILE          queue the replies of this JSON script at start
  --idle-exit-secs N     exit after N seconds without a request in flight (default 120, 0 = never)
  --max-lifetime-secs N  exit N seconds after start whatever happens (default 1800, 0 = never)
  --max-connections N    connections served at once (default 64)
  --verbose              one line per request on stderr
  --help                 this text

The first stdout line is `CCM_MOCK_LLM_LISTENING http://127.0.0.1:PORT`.
Control endpoints: GET /__mock/health, /__mock/requests, /__mock/queue;
POST /__mock/script, /__mock/enqueue, /__mock/reset, /__mock/models, /__mock/shutdown.
";

/// Parses a flag's numeric value, naming the flag when it is missing or wrong.
fn parse_number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a valid non-negative number"))
}

/// Seconds to an optional limit, where 0 means no limit.
fn limit(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}

/// Parses the arguments; `Ok(None)` means `--help` was printed, and an error message means
/// exit code 2.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<MockConfig>, String> {
    let mut config = MockConfig {
        idle_exit: limit(120),
        max_lifetime: limit(1800),
        ..MockConfig::default()
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next());
        match flag.as_str() {
            "--help" | "-h" => {
                print!("{USAGE}");
                return Ok(None);
            }
            "--port" => config.port = parse_number(&flag, value())?,
            "--idle-exit-secs" => config.idle_exit = limit(parse_number(&flag, value())?),
            "--max-lifetime-secs" => config.max_lifetime = limit(parse_number(&flag, value())?),
            "--max-connections" => config.max_connections = parse_number(&flag, value())?,
            "--verbose" => config.log_to_stderr = true,
            "--script" => {
                let path = value().ok_or("--script needs a file path")?;
                config.script = load_script(&path).map_err(|e| e.to_string())?;
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    Ok(Some(config))
}

/// Exit codes: 0 after a normal stop, 1 when the server cannot start, 2 for bad arguments.
fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ccm-mock-llm: {message}");
            return ExitCode::from(2);
        }
    };
    let server = match MockServer::try_start(config) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("ccm-mock-llm: cannot listen on 127.0.0.1: {e}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    // The parent reads this line to learn the port, so it must be complete and flushed now.
    if writeln!(stdout, "{LISTENING_PREFIX} {}", server.base_url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        eprintln!("ccm-mock-llm: cannot write the listening line to stdout");
        return ExitCode::from(1);
    }
    drop(stdout);
    // Give responses in flight (notably the answer to /__mock/shutdown) time to be written.
    server.wait(Duration::from_secs(3));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<MockConfig>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_flags() {
        let config = parse(&[]).unwrap().unwrap();
        assert_eq!(config.idle_exit, Some(Duration::from_secs(120)));
        assert_eq!(config.max_lifetime, Some(Duration::from_secs(1800)));
        let config = parse(&[
            "--port=0",
            "--idle-exit-secs",
            "0",
            "--max-lifetime-secs=5",
            "--verbose",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(config.idle_exit, None);
        assert_eq!(config.max_lifetime, Some(Duration::from_secs(5)));
        assert!(config.log_to_stderr);
    }

    #[test]
    fn bad_arguments_are_explained() {
        assert!(parse(&["--nope"]).unwrap_err().contains("--nope"));
        assert!(parse(&["--port", "x"]).unwrap_err().contains("--port"));
        assert!(parse(&["--port"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--script", "/nonexistent/ccm-mock.json"])
            .unwrap_err()
            .contains("cannot read"));
    }
}
