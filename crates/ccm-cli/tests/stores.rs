//! `ccm chat --store` and `ccm sessions` as a person runs them: the real binary keeps a
//! conversation across restarts in a directory of files and in a real PostgreSQL server
//! (scripts/test starts a throwaway cluster and sets CCM_TEST_POSTGRES_URL).

mod common;

use common::{ccm, text};

/// The id `ccm chat --store` announced for its session.
fn announced_id(stdout: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Session "))
        .unwrap_or_else(|| panic!("no session announced in {stdout}"));
    line.split_whitespace().nth(1).unwrap().to_string()
}

/// Two runs of `ccm chat` on one stored session, then the `ccm sessions` commands.
fn a_conversation_survives_a_restart(store: &str) {
    let first = ccm(
        &["chat", "--store", store, "--name", "login work"],
        "Let's work on the login page, it is slow on mobile.\nThe JS bundle is 2 MB.\n/quit\n",
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let stdout = text(&first.stdout);
    let id = announced_id(&stdout);
    assert!(stdout.contains("0 turns so far"), "{stdout}");

    // A new process continues where the first stopped: the effort and its log are there.
    let second = ccm(
        &["chat", "--store", store, "--session", &id],
        "/status\nWhat did we find about the bundle?\n/quit\n",
    );
    assert!(second.status.success(), "{}", text(&second.stderr));
    let stdout = text(&second.stdout);
    assert!(stdout.contains("2 turns so far"), "{stdout}");
    assert!(
        stdout.contains("login-page"),
        "the effort is gone after a restart: {stdout}"
    );

    let listed = ccm(&["sessions", "--store", store, "list"], "");
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let listed = text(&listed.stdout);
    assert!(
        listed.contains(&format!("{id}  3 turns, 6 messages  login work")),
        "{listed}"
    );

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let exported = dir.join(format!("export-{id}.json"));
    let export = ccm(
        &[
            "sessions",
            "--store",
            store,
            "export",
            &id,
            "--out",
            exported.to_str().unwrap(),
        ],
        "",
    );
    assert!(export.status.success(), "{}", text(&export.stderr));
    let document = std::fs::read_to_string(&exported).unwrap();
    assert!(document.contains("\"format\":\"ccm-session\""));
    assert!(document.contains("The JS bundle is 2 MB."));

    let import = ccm(
        &[
            "sessions",
            "--store",
            store,
            "import",
            exported.to_str().unwrap(),
            "--name",
            "copy",
        ],
        "",
    );
    assert!(import.status.success(), "{}", text(&import.stderr));
    assert!(
        text(&import.stdout).contains("(3 turns)"),
        "{}",
        text(&import.stdout)
    );

    let delete = ccm(&["sessions", "--store", store, "delete", &id], "");
    assert!(delete.status.success(), "{}", text(&delete.stderr));
    let listed = text(&ccm(&["sessions", "--store", store, "list"], "").stdout);
    assert!(!listed.contains(&id), "{listed}");
    assert!(listed.contains("3 turns, 6 messages  copy"), "{listed}");

    let gone = ccm(&["chat", "--store", store, "--session", &id], "/quit\n");
    assert!(!gone.status.success());
    assert!(
        text(&gone.stderr).contains(&format!("no stored session with id '{id}'")),
        "{}",
        text(&gone.stderr)
    );
}

#[test]
fn chat_keeps_a_conversation_in_a_directory_of_files() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-file-store");
    let _ = std::fs::remove_dir_all(&dir);
    a_conversation_survives_a_restart(&format!("file:{}", dir.display()));
}

#[test]
fn chat_keeps_a_conversation_in_postgresql() {
    let url = std::env::var("CCM_TEST_POSTGRES_URL").expect(
        "CCM_TEST_POSTGRES_URL names the test database: run `scripts/test native-tests`, or start \
         a cluster with `scripts/postgres-cluster start DIR` and export the URL it prints",
    );
    a_conversation_survives_a_restart(&url);
}

#[test]
fn store_options_are_checked_before_anything_runs() {
    let bogus = ccm(&["sessions", "--store", "bogus", "list"], "");
    assert!(!bogus.status.success());
    assert!(text(&bogus.stderr).contains("--store takes file:DIR or postgres://"));
    let without = ccm(&["chat", "--session", "x"], "");
    assert!(!without.status.success());
    assert!(text(&without.stderr).contains("need --store"));
    let unreachable = ccm(
        &[
            "sessions",
            "--store",
            "postgres://ccm:secret@127.0.0.1:9/none",
            "list",
        ],
        "",
    );
    assert!(!unreachable.status.success());
    let message = text(&unreachable.stderr);
    assert!(message.contains("127.0.0.1:9"), "{message}");
    assert!(
        !message.contains("secret"),
        "the password is printed: {message}"
    );
}
