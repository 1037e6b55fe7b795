//! ccm-core's modules are layered (ARCHITECTURE.md, "ccm-core's modules are layered"): the
//! types and pure functions never name `Session`, so they never import the module that imports
//! them. The `impl Session` blocks live under `session/`, and the few modules that sit above
//! the session (the document, the store layout, branches, tool dispatch, the crate root) are
//! the only others that may name it. A module that did would close a circle through the
//! session again.
//!
//! Reads the sources, so it runs natively only.
#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};

/// Modules that may name `Session`, relative to `src/`.
const ABOVE_THE_SESSION: [&str; 6] = [
    "session/",
    "snapshot.rs",
    "persistence.rs",
    "branch.rs",
    "tools/",
    "lib.rs",
];

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("src is readable").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Whether `line` names `Session` itself (not `SessionState` or `session`).
fn names_session(line: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices("Session").any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + "Session".len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[test]
fn modules_below_the_session_never_name_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut offenders = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if ABOVE_THE_SESSION
            .iter()
            .any(|above| relative.starts_with(above))
        {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        for (number, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("//") && names_session(line) {
                offenders.push(format!("src/{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 30, "the walk found the sources");
    assert!(
        offenders.is_empty(),
        "modules below the session name it (move the code under session/):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_tells_session_from_longer_names() {
    assert!(names_session("use crate::session::Session;"));
    assert!(names_session("impl Session {"));
    assert!(!names_session("pub struct SessionState {"));
    assert!(!names_session("let session = 1;"));
}
