//! `ccm replay` as a person runs it: the real binary on files in the ShareGPT layout, good and
//! damaged.

use serde_json::json;
use std::path::PathBuf;
use std::process::{Command, Output};

fn ccm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccm"))
        .args(args)
        .output()
        .expect("the ccm binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A conversation of `parts` split parts, each with `exchanges` exchanges about its own topic.
fn conversation(id: &str, parts: usize, exchanges: usize) -> Vec<serde_json::Value> {
    const TOPICS: [&str; 6] = [
        "lighthouse",
        "sourdough",
        "telescope",
        "harpsichord",
        "glacier",
        "origami",
    ];
    (0..parts)
        .map(|part| {
            let topic = TOPICS[part % TOPICS.len()];
            let messages: Vec<serde_json::Value> = (0..exchanges)
                .flat_map(|i| {
                    [
                        json!({"from": "human", "value": format!("About {id}: tell me more about the {topic}, point {i}, and its {topic}-specific history.")}),
                        json!({"from": "gpt", "value": format!("The {topic} has a long history; point {i} concerns how the {topic} was made and kept.")}),
                    ]
                })
                .collect();
            json!({"id": format!("{id}_{part}"), "conversations": messages})
        })
        .collect()
}

#[test]
fn replay_prints_the_table_writes_the_curve_and_checks_every_message() {
    let mut records = conversation("longone", 6, 3);
    records.extend(conversation("short", 1, 2));
    let file = write(
        "replay-good.json",
        serde_json::to_string(&records).unwrap().as_bytes(),
    );
    let svg = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-curve.svg");
    let output = ccm(&[
        "replay",
        file.to_str().unwrap(),
        "--longest",
        "2",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    assert!(out.contains("| longone | 18 | 6 |"), "{out}");
    assert!(out.contains("| short | 2 | 1 |"), "{out}");
    assert!(out.contains("2 conversations, 20 exchanges"), "{out}");
    assert!(out.contains("check problems: 0"), "{out}");
    assert!(out.contains("no request went over its budget"), "{out}");
    assert!(!out.contains("check failed"), "{out}");
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawing.starts_with("<svg") && drawing.contains("<polyline"),
        "{drawing}"
    );
}

#[test]
fn bad_input_names_the_conversation_and_the_message_and_plays_nothing_of_it() {
    let mut records = conversation("fine", 2, 2);
    let mut broken = conversation("broken", 2, 2);
    broken[1]["conversations"][2]["from"] = json!("narrator");
    records.extend(broken);
    let file = write(
        "replay-bad-role.json",
        serde_json::to_string(&records).unwrap().as_bytes(),
    );
    let output = ccm(&["replay", file.to_str().unwrap(), "--ids", "broken"]);
    assert!(!output.status.success());
    let error = text(&output.stderr);
    assert!(
        error.contains("conversation broken_1, message 3: unknown role \"narrator\""),
        "{error}"
    );
    assert!(text(&output.stdout).is_empty(), "nothing was played");

    // Chosen by length instead, the damaged conversation is left out and the others play.
    let output = ccm(&["replay", file.to_str().unwrap(), "--longest", "5"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("1 left out for a bad record"));
    assert!(text(&output.stdout).contains("| fine |"));
    assert!(!text(&output.stdout).contains("| broken |"));

    // A message over the limit, invalid UTF-8, an empty message.
    let big = json!([{"id": "huge", "conversations": [{"from": "human", "value": "x".repeat(1_100_000)}]}]);
    let file = write("replay-huge.json", big.to_string().as_bytes());
    let error = text(&ccm(&["replay", file.to_str().unwrap(), "--ids", "huge"]).stderr);
    assert!(error.contains("conversation huge, message 1: the message has 1100000 bytes, more than the limit of 524288"), "{error}");

    let mut invalid =
        br#"[{"id": "latin1", "conversations": [{"from": "human", "value": "caf"#.to_vec();
    invalid.push(0xE9);
    invalid.extend_from_slice(br#""}]}]"#);
    let file = write("replay-latin1.json", &invalid);
    let error = text(&ccm(&["replay", file.to_str().unwrap(), "--ids", "latin1"]).stderr);
    assert!(
        error.contains("conversation latin1, message 1: invalid UTF-8"),
        "{error}"
    );

    let empty = json!([{"id": "blank", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "   "}]}]);
    let file = write("replay-empty.json", empty.to_string().as_bytes());
    let error = text(&ccm(&["replay", file.to_str().unwrap(), "--ids", "blank"]).stderr);
    assert!(
        error.contains("conversation blank, message 2: the message is empty"),
        "{error}"
    );

    let error = text(&ccm(&["replay", "/nonexistent/file.json"]).stderr);
    assert!(
        error.contains("could not read /nonexistent/file.json"),
        "{error}"
    );
}
