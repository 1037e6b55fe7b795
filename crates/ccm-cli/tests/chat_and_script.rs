//! `ccm chat` and `ccm script` as a person runs them: the real binary, stdin and files, with
//! the offline demo model and against the real mock server.

use ccm_mock_llm::{MockConfig, MockServer, ScriptedReply};
use serde_json::json;
mod common;

use common::{ccm, text};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/conversations/demo.txt");

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

#[test]
fn every_command_answers_help_and_the_version_with_success() {
    for (args, expected) in [
        (&["chat", "--help"][..], "ccm chat [provider options]"),
        (&["replay", "--help"][..], "ccm replay"),
        (&["script", "-h"][..], "ccm script <conversation-file>"),
        (&["help", "chat"][..], "--context-window N"),
        (&["--help"][..], "ccm --version"),
    ] {
        let output = ccm(args, "");
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(
            text(&output.stdout).contains(expected),
            "{args:?}: {}",
            text(&output.stdout)
        );
    }
    let output = ccm(&["--version"], "");
    assert!(output.status.success());
    assert_eq!(
        text(&output.stdout).trim(),
        format!("ccm {}", env!("CARGO_PKG_VERSION"))
    );
}

/// Sums the o200k tokens of a request's message texts.
fn message_tokens(request: &ccm_mock_llm::RecordedRequest) -> u64 {
    let counter = ccm_core::tokens::default_counter(ccm_core::tokens::Encoding::O200kBase);
    request
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .map(|content| u64::from(counter.count(content)))
        .sum()
}

#[test]
fn a_small_local_model_compacts_instead_of_overflowing_its_window() {
    // llama3 has an 8,192-token window in the known-models table. The conversation opens an
    // effort, whose raw log stays in context while it is open, and then adds 24 messages of
    // about 470 tokens: far more than the window, so every request must have been planned
    // (compacted) to fit it. With the default 128K window the last requests would be larger.
    let server = MockServer::start(MockConfig::default());
    let turns = 24;
    let script = || {
        std::iter::once(ScriptedReply::tool_call(
            "open_effort",
            json!({"name": "worker restarts"}),
        ))
        .chain((0..turns).map(|i| ScriptedReply::text(format!("Noted point {i}."))))
    };
    let filler = "The deployment log shows the worker restarting after each batch because the \
                  memory limit is reached while the cache warms up. ";
    let conversation: Vec<String> = (0..turns)
        .map(|i| format!("Point {i} about the worker restarts: {}", filler.repeat(18)))
        .collect();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-small-window.json");
    std::fs::write(&path, serde_json::to_string(&conversation).unwrap()).unwrap();
    let base = server.openai_base_url();
    let run = |extra: &[&str]| {
        server.reset();
        server.enqueue_all(script());
        let mut args = vec![
            "script",
            path.to_str().unwrap(),
            "--provider",
            "custom",
            "--base-url",
            &base,
        ];
        args.extend_from_slice(extra);
        let output = ccm(&args, "");
        assert!(
            output.status.success(),
            "{extra:?}: {}",
            text(&output.stderr)
        );
        server.requests().iter().map(message_tokens).max().unwrap()
    };
    let largest = run(&["--model", "llama3"]);
    assert!(
        largest < 8_192,
        "a request of {largest} tokens overflows the 8K window"
    );
    let largest = run(&["--model", "local-model", "--context-window", "8192"]);
    assert!(
        largest < 8_192,
        "a request of {largest} tokens overflows the 8K window"
    );
    // The control: an unknown model keeps the 128K default, and the requests grow past 8K.
    let largest = run(&["--model", "local-model"]);
    assert!(
        largest > 8_192,
        "the conversation must outgrow the window: {largest}"
    );
}

#[test]
fn a_streamed_chat_prints_each_banner_where_its_tool_ran() {
    let output = ccm(
        &["chat", "--stream"],
        "Let's work on the auth bug: users get 401 after an hour.\n/quit\n",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    let banner = shown
        .find("--- Started effort: auth-bug ---")
        .unwrap_or_else(|| panic!("no banner: {shown}"));
    let answer = shown
        .find("Started effort auth-bug; tell me more about it.")
        .unwrap_or_else(|| panic!("no answer: {shown}"));
    assert!(
        banner < answer,
        "the banner comes before the text written after the call: {shown}"
    );
    assert_eq!(
        shown.matches("--- Started effort: auth-bug ---").count(),
        1,
        "printed once: {shown}"
    );
}
