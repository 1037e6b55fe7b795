//! The shape of ccm-core's sources, checked by reading them (ARCHITECTURE.md):
//!
//! - **The modules are layered** ("ccm-core's modules are layered"): the types and pure
//!   functions never name `Session`, so they never import the module that imports them. The
//!   `impl Session` blocks live under `session/`, and the few modules that sit above the
//!   session (the document, the store layout, branches, tool dispatch, the crate root) are the
//!   only others that may name it. A module that did would close a circle through the session
//!   again.
//! - **No `Session` method only forwards to one component** ("A session's components are read
//!   through its accessors"): `Session` coordinates what spans several components (a turn, an
//!   operation's undo, a save, a banner); what concerns one component is that component's
//!   method. The only exception is the read-only accessors, whose whole body is
//!   `&self.<component>`: they are how hosts and views read the parts.
//!
//! Reads the sources, so it runs natively only.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;
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

/// The fields of `Session` that hold a component.
const COMPONENTS: [&str; 8] = [
    "efforts",
    "ambient",
    "pins",
    "attachments",
    "recall",
    "compaction",
    "history",
    "saves",
];

/// A method of an `impl Session` block: its name, where it starts, and its body's lines.
struct Method {
    name: String,
    line: usize,
    body: Vec<String>,
}

/// The methods of every `impl Session {` block of `text`. The sources are rustfmt-formatted,
/// so a block ends at the first `}` in column 0, a method's signature at the first line ending
/// in `{`, and its body at the first `    }`.
fn session_methods(text: &str) -> Vec<Method> {
    let mut methods = Vec::new();
    let mut in_block = false;
    // The method being read, and whether its signature (which may span lines) has ended.
    let mut current: Option<(Method, bool)> = None;
    for (number, line) in text.lines().enumerate() {
        if !in_block {
            in_block = line == "impl Session {";
            continue;
        }
        if line == "}" {
            in_block = false;
            continue;
        }
        if let Some((method, in_body)) = &mut current {
            if line == "    }" {
                methods.push(current.take().expect("a method is open").0);
            } else if *in_body {
                method.body.push(line.to_string());
            } else {
                *in_body = line.trim_end().ends_with('{');
            }
            continue;
        }
        let Some(signature) = line.strip_prefix("    ") else {
            continue;
        };
        let after_visibility = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|visibility| signature.strip_prefix(visibility))
            .unwrap_or(signature);
        if let Some(rest) = after_visibility.strip_prefix("fn ") {
            let name = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let method = Method {
                name,
                line: number + 1,
                body: Vec::new(),
            };
            current = Some((method, line.trim_end().ends_with('{')));
        }
    }
    methods
}

/// The members of `self` a body names (`self.efforts`, `self.turn`), comments left out.
fn members(body: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    // One text, so that `self` at the end of a line and `.field` on the next are read as one.
    let code: String = body
        .iter()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    {
        let mut rest = code.as_str();
        while let Some(at) = rest.find("self") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + 4..];
            let is_word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
            let field = after
                .trim_start()
                .strip_prefix('.')
                .map(|field| {
                    field
                        .trim_start()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .unwrap_or_default();
            if is_word_start && !field.is_empty() {
                found.insert(field);
            }
            rest = after;
        }
    }
    found
}

/// Whether a body is exactly `&self.<member>`: a read-only accessor.
fn is_accessor(body: &[String], member: &str) -> bool {
    let code: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    code == [format!("&self.{member}")]
}

/// The methods of `impl Session` blocks under `src/` that only forward to one component, as
/// `file:line: name -> component`, and the number of methods read.
fn forwarders(src: &Path) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    let mut read = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        let relative = file.strip_prefix(src).expect("under src").display();
        for method in session_methods(&text) {
            read += 1;
            let named = members(&method.body);
            let only = match named.iter().next() {
                Some(only) if named.len() == 1 => only,
                _ => continue,
            };
            if COMPONENTS.contains(&only.as_str()) && !is_accessor(&method.body, only) {
                found.push(format!(
                    "src/{relative}:{}: {} -> {only}",
                    method.line, method.name
                ));
            }
        }
    }
    (found, read)
}

#[test]
fn no_session_method_only_forwards_to_one_component() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (found, read) = forwarders(&src);
    assert!(read > 100, "the walk found the session's methods ({read})");
    assert!(
        found.is_empty(),
        "these Session methods only reach into one component; make them that component's \
         methods:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_forwarder_and_passes_an_accessor() {
    let text = "impl Session {
    pub fn pins(&self) -> &Pins {
        &self.pins
    }

    pub fn unpin(&mut self, target: &str) -> Result<Pin, PinError> {
        // Only the pins change.
        self.pins.remove(target)
    }

    pub fn pin(
        &mut self,
        request: PinRequest,
    ) -> Result<Pin, PinError> {
        self.check(&request)?;
        self.pins.put(request)
    }

    fn coordinated(&mut self) {
        self.pins.age();
        self.last_banner = None;
    }

    fn split_over_lines(&self) -> bool {
        self.ambient.is_empty()
            && self
                .efforts
                .is_empty()
    }
}
";
    let methods = session_methods(text);
    let names: Vec<&str> = methods.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["pins", "unpin", "pin", "coordinated", "split_over_lines"]
    );
    let forwarding: Vec<&str> = methods
        .iter()
        .filter(|m| {
            let named = members(&m.body);
            named.len() == 1 && {
                let only = named.iter().next().expect("one member");
                COMPONENTS.contains(&only.as_str()) && !is_accessor(&m.body, only)
            }
        })
        .map(|m| m.name.as_str())
        .collect();
    // `pin` names `self.check` too, `coordinated` names `self.last_banner`, and
    // `split_over_lines` names `self.efforts` across a line break: each spans more than one.
    assert_eq!(forwarding, ["unpin"]);
}
