//! `ccm chat` and `ccm script` as a person runs them: the real binary, stdin and files, with
//! the offline demo model and against the real mock server.

use ccm_mock_llm::{MockConfig, MockServer, ScriptedReply};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/conversations/demo.txt");

fn ccm(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ccm"))
        .args(args)
        .env_remove("CCM_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ccm binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn script_replays_the_demo_conversation_offline_into_csv_and_json() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let csv_path = dir.join("cli-demo.csv");
    let output = ccm(&["script", DEMO, "--out", csv_path.to_str().unwrap()], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = text(&output.stderr);
    assert!(
        report.starts_with("44 turns with Offline demo model"),
        "{report}"
    );
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 45);
    assert!(rows[0].starts_with("turn,context_tokens,naive_tokens,savings_vs_naive"));
    assert!(rows[44].starts_with("44,"));

    let json_path = dir.join("cli-demo.json");
    let output = ccm(&["script", DEMO, "--out", json_path.to_str().unwrap()], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let metrics = metrics.as_array().unwrap();
    assert_eq!(metrics.len(), 44);
    let last = &metrics[43];
    assert!(last["context_tokens"].as_u64().unwrap() < last["naive_tokens"].as_u64().unwrap());
}

#[test]
fn script_talks_to_a_provider_and_reports_a_failed_turn() {
    let server = MockServer::start(MockConfig::default());
    server.enqueue_all([
        ScriptedReply::tool_call("open_effort", json!({"name": "auth bug"})),
        ScriptedReply::text("Started."),
        ScriptedReply::fault(ccm_mock_llm::Fault::status(401)),
    ]);
    let conversation = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-two.txt");
    std::fs::write(&conversation, "Let's work on the auth bug.\nAnd now?\n").unwrap();
    let base = server.openai_base_url();
    let output = ccm(
        &[
            "script",
            conversation.to_str().unwrap(),
            "--provider",
            "custom",
            "--base-url",
            &base,
            "--model",
            "mock-model",
        ],
        "",
    );
    assert!(!output.status.success());
    let csv = text(&output.stdout);
    assert_eq!(
        csv.lines().count(),
        2,
        "the completed turn is written: {csv}"
    );
    let error = text(&output.stderr);
    assert!(
        error.starts_with(
            "ccm: turn 2 failed: The provider requires an API key (HTTP 401 Unauthorized), \
             but none is set:"
        ),
        "{error}"
    );
    assert!(
        error
            .trim_end()
            .ends_with("Nothing was changed; your message can be sent again."),
        "{error}"
    );
}

#[test]
fn chat_answers_on_stdin_and_resends_nothing_without_a_failure() {
    let output = ccm(
        &["chat"],
        "Let's work on the auth bug: users get 401 after an hour.\n\n/status\n/quit\n",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    assert!(shown.starts_with("ccm chat: Offline demo model"), "{shown}");
    assert!(
        shown.contains(
            "ccm-offline-demo> --- Started effort: auth-bug ---\n\n(offline demo model) Started \
             effort auth-bug; tell me more about it."
        ),
        "{shown}"
    );
    assert!(shown.contains("\"active\": \"auth-bug\""), "{shown}");
}

#[test]
fn chat_refuses_a_key_on_the_command_line() {
    let output = ccm(
        &["chat", "--provider", "openai", "--api-key", "sk-secret"],
        "",
    );
    assert!(!output.status.success());
    assert_eq!(
        text(&output.stderr).trim(),
        "ccm: the API key is not taken from the command line; set CCM_API_KEY instead"
    );
}
