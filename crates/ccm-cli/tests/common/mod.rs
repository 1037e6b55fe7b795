//! What the CLI's test binaries share: running the real `ccm` binary as a person would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `ccm` with `args`, `stdin` as its input, and no API key in its environment.
pub fn ccm(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ccm"))
        .args(args)
        .env_remove("CCM_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ccm binary runs");
    // A run that stops before reading its input (a refused `--session`, say) closes the pipe
    // first, and the write then fails with a broken pipe; that is the run's own choice, and its
    // output and status are what the tests check, so only other write errors are failures.
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    if let Err(error) = written {
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::BrokenPipe,
            "writing the input: {error}"
        );
    }
    child.wait_with_output().unwrap()
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
