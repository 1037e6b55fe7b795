//! The tool definitions the model receives are pinned byte for byte: a change to a name, a
//! description or a schema changes every request (and what the model does), so it must be
//! deliberate. The file `tests/golden/tool_definitions.jsonl` holds one definition per line as
//! compact JSON, exactly the bytes of each element of the request's tool list; it was written
//! from the definitions at commit 87ec202, before the tools became a table. Refresh it with
//! `CCM_BLESS=1` after a deliberate change, and review the diff.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;

fn pinned_definitions() -> String {
    ccm_core::tool_definitions()
        .iter()
        .map(|definition| serde_json::to_string(definition).expect("definitions serialise") + "\n")
        .collect()
}

#[test]
fn the_tool_definitions_sent_to_the_model_are_the_pinned_bytes() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tool_definitions.jsonl");
    let written = pinned_definitions();
    if std::env::var_os("CCM_BLESS").is_some() {
        std::fs::write(&path, &written).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        written == expected,
        "the tool definitions changed; if intended, rerun with CCM_BLESS=1 and review the diff\nnow:\n{written}"
    );
    // The whole list as the request carries it is the same bytes, joined.
    let lines: Vec<&str> = expected.lines().collect();
    assert_eq!(
        serde_json::to_string(&ccm_core::tool_definitions()).unwrap(),
        format!("[{}]", lines.join(","))
    );
}
