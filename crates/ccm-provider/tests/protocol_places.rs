//! Where the workspace lists the provider protocols, so that adding one stays three files of
//! this crate: the protocol's module, `config.rs` (its `ProviderKind` variant and the table's
//! arm) and `lib.rs` (the module's declaration).
//!
//! Every other front end reads the table (`ProviderKind::ALL`, `ProviderName::NAMES`): the
//! command line's `--protocol`, the app's provider list, the npm package's names and its
//! TypeScript `Provider` type. A file that names every protocol is a list someone must extend
//! by hand when a protocol is added, and it breaks that promise; this test finds such files in
//! the sources of `crates/`, `web/` and the npm package, and fails naming them.

use ccm_provider::ProviderKind;
use std::path::{Path, PathBuf};

/// The files that may list every protocol: the table and the crate root that declares the
/// protocols' modules (and introduces them in its documentation).
const ALLOWED_LISTS: [&str; 2] = [
    "crates/ccm-provider/src/config.rs",
    "crates/ccm-provider/src/lib.rs",
];

/// The spellings that name one protocol in code: its `ProviderKind` variant, its
/// `*_compatible` provider name, and the `custom_<name>` alias of earlier versions.
fn spellings(kind: ProviderKind) -> Vec<String> {
    let protocol = kind.protocol();
    vec![
        format!("ProviderKind::{kind:?}"),
        protocol.compatible_name.to_string(),
        format!("custom_{}", protocol.name),
    ]
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate sits in crates/ of the workspace")
        .to_path_buf()
}

/// The source files of the shipped code: tests, fixtures, build output and installed packages
/// left out, since they exercise the protocols rather than list them for users.
fn shipped_sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = [
                "target",
                "node_modules",
                "tests",
                "test",
                "fixtures",
                "benches",
            ];
            if !skipped.contains(&name.as_str()) && !name.starts_with('.') {
                shipped_sources(&path, found);
            }
        } else if [".rs", ".ts", ".mjs", ".js"]
            .iter()
            .any(|ending| name.ends_with(ending))
        {
            found.push(path);
        }
    }
}

/// The shipped part of a source file: a Rust file's unit tests, which by this workspace's habit
/// close the file, are left out.
fn shipped_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.find("#[cfg(test)]") {
        Some(tests) if path.extension().is_some_and(|ending| ending == "rs") => {
            text[..tests].to_string()
        }
        _ => text,
    }
}

/// Every shipped source file that names each protocol of the table, as a path from the
/// workspace root.
fn files_listing_every_protocol() -> Vec<String> {
    let root = workspace_root();
    let mut files = Vec::new();
    for top in ["crates", "web", "npm/ccm"] {
        shipped_sources(&root.join(top), &mut files);
    }
    assert!(files.len() > 50, "too few sources found under {root:?}");
    let mut lists: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = shipped_text(path);
            ProviderKind::ALL.iter().all(|kind| {
                spellings(*kind)
                    .iter()
                    .any(|spelling| text.contains(spelling.as_str()))
            })
        })
        .map(|path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    lists.sort();
    lists
}

#[test]
fn only_the_table_and_the_crate_root_list_the_protocols() {
    assert_eq!(
        files_listing_every_protocol(),
        ALLOWED_LISTS.to_vec(),
        "these files name every provider protocol, so a new protocol would have to be added to \
         each by hand: make them read ccm_provider::ProviderKind::ALL or ProviderName::NAMES"
    );
}

/// The search itself finds a list where there is one: the table names every protocol.
#[test]
fn the_table_itself_is_found_as_a_list() {
    let table = shipped_text(&workspace_root().join(ALLOWED_LISTS[0]));
    for kind in ProviderKind::ALL {
        assert!(
            spellings(kind)
                .iter()
                .any(|spelling| table.contains(spelling.as_str())),
            "config.rs does not name {kind:?}"
        );
    }
}
