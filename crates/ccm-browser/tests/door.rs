//! The door rule: the browser app (web/) and the npm package's bindings (ccm-wasm) reach
//! turns, summaries, model lists, providers and stores through ccm-browser only, and name no
//! item of ccm-engine or ccm-provider themselves. ccm-browser re-exports the words they need in
//! one file (src/vocabulary.rs), and nowhere else.
//!
//! The test reads the two manifests and every Rust source of both crates. A test module
//! (`#[cfg(test)]` to the end of its file) may use the engine, which the app's manifest allows
//! as a dev-dependency for exactly that; shipped code may not.

#![cfg(not(target_arch = "wasm32"))]

use std::fs;
use std::path::{Path, PathBuf};

/// The crates behind the door, as manifests and as Rust paths spell them.
const BEHIND_THE_DOOR: [(&str, &str); 2] = [
    ("ccm-engine", "ccm_engine"),
    ("ccm-provider", "ccm_provider"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The path an item is named by at `line`, from the crate's name to the end of the path
/// (`ccm_engine::offline::OFFLINE_MODEL_NAME`, `ccm_provider::{ProviderKind, Preset}`).
fn named_item(line: &str, start: usize) -> String {
    line[start..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}' | ',' | ' '))
        .collect::<String>()
        .trim_end_matches([',', ' '])
        .to_string()
}

/// Where the sources under `dir` name a crate behind the door outside test modules, as
/// `file:line: item` lines.
fn reaches_past_the_door(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(dir) {
        let text = fs::read_to_string(&file).expect("a readable source file");
        let mut lines = text.lines().enumerate().peekable();
        while let Some((number, line)) = lines.next() {
            // A test module runs only in tests: from `#[cfg(test)]` before a `mod` to the end
            // of the file, which is where this code base keeps them.
            if line.trim() == "#[cfg(test)]"
                && lines
                    .peek()
                    .is_some_and(|(_, next)| next.trim_start().starts_with("mod "))
            {
                break;
            }
            let code = line.split("//").next().unwrap_or_default();
            for (_, path) in BEHIND_THE_DOOR {
                if let Some(start) = code.find(path) {
                    found.push(format!(
                        "{}:{}: {}",
                        file.strip_prefix(workspace()).unwrap_or(&file).display(),
                        number + 1,
                        named_item(code, start)
                    ));
                }
            }
        }
    }
    found
}

/// The `[dependencies]` of `manifest` that name a crate behind the door.
fn dependencies_behind_the_door(manifest: &Path) -> Vec<String> {
    let text = fs::read_to_string(manifest).expect("a readable manifest");
    let mut section = String::new();
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        for (name, _) in BEHIND_THE_DOOR {
            let key = line.split(['=', '.']).next().unwrap_or_default().trim();
            if key == name {
                found.push(format!("{section} {name}"));
            }
        }
    }
    found
}

#[test]
fn the_app_and_the_bindings_use_no_engine_or_provider_item_directly() {
    let root = workspace();
    let mut problems = Vec::new();
    for host in ["web", "crates/ccm-wasm"] {
        let manifest = root.join(host).join("Cargo.toml");
        assert!(manifest.exists(), "{} is missing", manifest.display());
        for dependency in dependencies_behind_the_door(&manifest) {
            problems.push(format!(
                "{host}/Cargo.toml: {dependency}: depend on ccm-browser and use its door instead"
            ));
        }
        for dir in ["src", "tests"] {
            for place in reaches_past_the_door(&root.join(host).join(dir)) {
                problems.push(format!(
                    "{place}: reaches past ccm-browser; use ccm_browser's function or its \
                     vocabulary (ccm_browser::turn, ccm_browser::provider) instead"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn ccm_browser_re_exports_the_engine_and_the_provider_only_in_its_vocabulary() {
    let src = workspace().join("crates/ccm-browser/src");
    let mut problems = Vec::new();
    for file in rust_files(&src) {
        if file.file_name().is_some_and(|name| name == "vocabulary.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            for (_, path) in BEHIND_THE_DOOR {
                if code.starts_with(&format!("pub use {path}")) {
                    problems.push(format!(
                        "{}:{}: {code}: re-export it in src/vocabulary.rs (if it is a word a \
                         host needs), or give hosts a function",
                        file.display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checks must be able to fail: a file that reaches past the door and a manifest that
/// depends on the engine are found, with the file, the line and the item.
#[test]
fn a_reach_past_the_door_is_named_with_its_file_and_item() {
    let dir = std::env::temp_dir().join(format!("ccm-door-{}", std::process::id()));
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(
        dir.join("src/lib.rs"),
        "use ccm_browser::turn::TurnEvent;\n// ccm_engine in a comment is fine\n\
         fn f() { let _ = ccm_provider::ProviderKind::Anthropic; }\n\
         #[cfg(test)]\nmod tests {\n    use ccm_engine::run_instant_turn;\n}\n",
    )
    .unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        "[dependencies]\nccm-engine.workspace = true\nccm-browser.workspace = true\n\
         [dev-dependencies]\nccm-provider.workspace = true\n",
    )
    .unwrap();
    let found = reaches_past_the_door(&dir.join("src"));
    let manifest = dependencies_behind_the_door(&dir.join("Cargo.toml"));
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with("src/lib.rs:3: ccm_provider::ProviderKind::Anthropic"),
        "{found:?}"
    );
    assert_eq!(manifest, ["[dependencies] ccm-engine"]);
}
