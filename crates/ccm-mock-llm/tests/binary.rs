//! The `ccm-mock-llm` binary as scripts use it: spawn, read the port line, talk, watch it
//! exit by itself.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{get, post_json, request};
use serde_json::json;

/// A spawned binary that is killed if a test fails before it exits.
struct Spawned {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[&str]) -> Spawned {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ccm-mock-llm"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ccm-mock-llm");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("read the first stdout line");
    let url = line
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("CCM_MOCK_LLM_LISTENING http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let port: u16 = url.parse().expect("a port number");
    assert_ne!(port, 0);
    Spawned {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    }
}

/// Waits for the process to exit on its own, failing after `limit`.
fn wait_for_exit(spawned: &mut Spawned, limit: Duration) -> (ExitStatus, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = spawned.child.try_wait().unwrap() {
            return (status, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "ccm-mock-llm still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn prints_the_port_serves_and_exits_when_idle() {
    let mut server = spawn(&["--idle-exit-secs", "1"]);
    let response = post_json(
        server.addr,
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "ping"}]}),
    );
    assert_eq!(response.status, 200);
    let (status, after) = wait_for_exit(&mut server, Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert!(
        after >= Duration::from_millis(700),
        "exited too early: {after:?}"
    );
    assert!(std::net::TcpStream::connect(server.addr).is_err());
}

#[test]
fn exits_at_the_lifetime_limit_even_when_busy() {
    let mut server = spawn(&["--idle-exit-secs", "0", "--max-lifetime-secs=1"]);
    let start = Instant::now();
    // Keep it busy: requests never let it go idle, but the lifetime still ends it.
    while start.elapsed() < Duration::from_millis(600) {
        assert_eq!(get(server.addr, "/__mock/health").status, 200);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _) = wait_for_exit(&mut server, Duration::from_secs(10));
    assert!(status.success());
}

#[test]
fn the_shutdown_endpoint_ends_the_process() {
    let mut server = spawn(&[]);
    let response = request(server.addr, "POST", "/__mock/shutdown", &[], None);
    assert_eq!(response.status, 200);
    let (status, after) = wait_for_exit(&mut server, Duration::from_secs(10));
    assert!(status.success());
    assert!(after < Duration::from_secs(5), "{after:?}");
}

#[test]
fn serves_the_script_file_and_logs_with_verbose() {
    let path = std::env::temp_dir().join(format!("ccm-mock-script-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"replies": [{"label": "from-file", "tool_calls": [{"name": "start_effort", "arguments": {"name": "x"}}]}]}"#,
    )
    .unwrap();
    let mut server = spawn(&["--script", path.to_str().unwrap(), "--verbose"]);
    std::fs::remove_file(&path).unwrap();
    let response = post_json(
        server.addr,
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "go"}]}),
    );
    let call = &response.json()["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "start_effort");
    request(server.addr, "POST", "/__mock/shutdown", &[], None);
    wait_for_exit(&mut server, Duration::from_secs(10));
    let mut stderr = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("#0 POST /v1/chat/completions -> 200 [script: from-file]"),
        "{stderr}"
    );
}

#[test]
fn a_bad_script_or_argument_fails_fast_with_a_message() {
    let path = std::env::temp_dir().join(format!("ccm-mock-bad-{}.json", std::process::id()));
    std::fs::write(&path, r#"[{"txt": "typo"}]"#).unwrap();
    for args in [
        vec!["--script".to_string(), path.display().to_string()],
        vec!["--port".to_string(), "seventy".to_string()],
        vec!["--what".to_string()],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_ccm-mock-llm"))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "no listening line on failure");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("ccm-mock-llm: "), "{stderr}");
    }
    std::fs::remove_file(&path).unwrap();
}
