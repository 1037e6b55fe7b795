//! The sync server against a real PostgreSQL, over real HTTP: authentication, isolation
//! between accounts (tried, not assumed), limits, CORS, conflicts, health, export and import.
//!
//! ```sh
//! export CCM_TEST_POSTGRES_URL="$(scripts/postgres-cluster start /tmp/ccm-pg)"
//! cargo test -p ccm-server
//! scripts/postgres-cluster stop /tmp/ccm-pg
//! ```

mod common;

use ccm_server::Limits;
use ccm_store::conformance::{self, counter_for, new_session, scripted_turn, SuiteError};
use ccm_store::{sessions, RecordStore};
use common::{block_on, http, TestServer};

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The status of a GET of `url` with `token`.
fn status_of_get(url: &str, token: &str) -> u16 {
    http("GET", url, &[("authorization", &bearer(token))], None).status
}

/// A session of `turns` scripted turns saved as `id` through `store`, turn by turn.
fn saved_session<S: RecordStore>(store: &S, id: &str, turns: u64) -> ccm_core::Session {
    block_on(async {
        let mut session = new_session();
        sessions::insert::<_, SuiteError>(store, id, &mut session, id, 1.0, true)
            .await
            .unwrap_or_else(|e| panic!("creating {id}: {e}"));
        for n in 0..turns {
            scripted_turn(&mut session, n);
            sessions::save::<_, SuiteError>(store, id, &mut session, 2.0 + n as f64)
                .await
                .unwrap_or_else(|e| panic!("saving turn {n} of {id}: {e}"));
        }
        session
    })
}

fn export<S: RecordStore>(store: &S, id: &str) -> String {
    block_on(async {
        let document =
            sessions::export_document::<_, SuiteError>(store, id, |h| counter_for(h).ok())
                .await
                .unwrap_or_else(|e| panic!("exporting {id}: {e}"));
        serde_json::to_string(&document).expect("a document")
    })
}

#[test]
fn health_and_readiness_need_no_token() {
    let server = TestServer::start("health", Limits::default());
    let health = http("GET", &format!("{}/healthz", server.base), &[], None);
    assert_eq!(health.status, 200, "{}", health.body);
    let ready = http("GET", &format!("{}/readyz", server.base), &[], None);
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert!(ready.body.contains("ready"));
    let nowhere = http("GET", &format!("{}/v2/sessions", server.base), &[], None);
    assert_eq!(nowhere.status, 404);
    assert_eq!(nowhere.code(), "not_found");
}

#[test]
fn every_route_refuses_a_request_without_a_valid_token() {
    let server = TestServer::start("auth", Limits::default());
    let created = server.token("alice");
    let list = format!("{}/v1/sessions", server.base);
    let routes = [
        ("GET", "/v1/sessions"),
        ("GET", "/v1/sessions/s1"),
        ("PUT", "/v1/sessions/s1"),
        ("PATCH", "/v1/sessions/s1"),
        ("DELETE", "/v1/sessions/s1"),
        ("GET", "/v1/sessions/s1/records"),
        ("GET", "/v1/sessions/s1/export"),
        ("POST", "/v1/sessions/s1/import"),
        ("GET", "/v1/sessions/s1/messages?from=0&to=10"),
        ("POST", "/v1/sessions/s1/messages/by-seq"),
        ("GET", "/v1/sessions/s1/efforts/e/log"),
        ("GET", "/v1/sessions/s1/telemetry/1"),
    ];
    let bad_tokens = [
        None,
        Some("Bearer".to_string()),
        Some("Basic YWxpY2U6c2VjcmV0".to_string()),
        Some(bearer("not-a-ccm-token")),
        Some(bearer("ccm_0000_0000")),
        // The right token id with the wrong secret.
        Some(bearer(&format!("{}x", created.token))),
    ];
    for (method, path) in routes {
        for token in &bad_tokens {
            let headers: Vec<(&str, &str)> = token
                .as_deref()
                .map(|t| vec![("authorization", t)])
                .unwrap_or_default();
            let answer = http(
                method,
                &format!("{}{path}", server.base),
                &headers,
                Some("{}"),
            );
            assert_eq!(
                answer.status, 401,
                "{method} {path} with {token:?}: {}",
                answer.body
            );
            assert_eq!(answer.code(), "unauthorized");
            assert!(
                !answer.body.contains(&created.token),
                "an error must never repeat a token"
            );
        }
    }
    let good = http(
        "GET",
        &list,
        &[("authorization", &bearer(&created.token))],
        None,
    );
    assert_eq!(good.status, 200, "{}", good.body);
}

#[test]
fn revoked_and_rotated_tokens_stop_working_at_once() {
    let server = TestServer::start("rotate", Limits::default());
    let list = format!("{}/v1/sessions", server.base);
    let first = server.token("bob");
    let second = server.token("bob");
    for token in [&first.token, &second.token] {
        assert_eq!(
            http("GET", &list, &[("authorization", &bearer(token))], None).status,
            200
        );
    }
    // Revoking one token leaves the account's others working.
    assert!(block_on(async {
        server
            .accounts()
            .await
            .revoke_token(&first.token_id)
            .await
            .unwrap()
    }));
    let revoked = http(
        "GET",
        &list,
        &[("authorization", &bearer(&first.token))],
        None,
    );
    assert_eq!(revoked.status, 401);
    assert!(revoked.body.contains("revoked"), "{}", revoked.body);
    assert_eq!(status_of_get(&list, &second.token), 200);
    // Rotating revokes every live token of the account and gives a new one.
    let (third, count) = block_on(async {
        server
            .accounts()
            .await
            .rotate("bob", "new phone")
            .await
            .unwrap()
    });
    assert_eq!(count, 1);
    assert_eq!(third.account_id, first.account_id, "the same account");
    assert_eq!(status_of_get(&list, &second.token), 401);
    assert_eq!(status_of_get(&list, &third.token), 200);
    // Only hashes are stored: no stored column holds a token.
    let stored = block_on(async {
        let raw = server.raw().await;
        let rows = raw
            .query(
                &format!(
                    "SELECT id, encode(hash, 'hex'), label FROM \"{}\".tokens",
                    server.database.schema
                ),
                &[],
            )
            .await
            .unwrap();
        rows.iter()
            .map(|r| {
                format!(
                    "{} {} {}",
                    r.get::<_, String>(0),
                    r.get::<_, String>(1),
                    r.get::<_, String>(2)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    for token in [&first.token, &second.token, &third.token] {
        let secret = token.rsplit('_').next().unwrap();
        assert!(
            !stored.contains(secret),
            "a token's secret is stored: {stored}"
        );
    }
}

#[test]
fn no_request_reads_or_changes_another_accounts_sessions() {
    let server = TestServer::start("isolation", Limits::default());
    let alice = server.token("alice");
    let mallory = server.token("mallory");
    let alice_store = server.store(&alice.token);
    saved_session(&alice_store, "plans", 8);
    let before = export(&alice_store, "plans");

    // Mallory lists nothing and cannot read Alice's session under its id, under Alice's stored
    // key, or with the separator percent-encoded or smuggled in by dot segments.
    let auth = bearer(&mallory.token);
    let h = [("authorization", auth.as_str())];
    let listed = http("GET", &format!("{}/v1/sessions", server.base), &h, None);
    assert_eq!(listed.status, 200);
    let listed: serde_json::Value = serde_json::from_str(&listed.body).unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 0, "{listed}");
    let stored_key = format!("{}/plans", alice.account_id);
    let ids = [
        "plans".to_string(),
        ccm_store::remote::encode_segment(&stored_key),
        format!("{}%2Fplans", alice.account_id),
        format!("..%2F{}%2Fplans", alice.account_id),
    ];
    for id in &ids {
        for rest in [
            "",
            "/records",
            "/export",
            "/messages?from=0&to=100",
            "/telemetry/1",
        ] {
            let answer = http(
                "GET",
                &format!("{}/v1/sessions/{id}{rest}", server.base),
                &h,
                None,
            );
            let leaked = answer.body.contains("birthday") || answer.body.contains("login latency");
            assert!(
                !leaked,
                "GET {id}{rest} showed Alice's messages: {}",
                answer.body
            );
            if rest.starts_with("/messages") {
                // A range of a session the account does not have is empty, not Alice's.
                assert_eq!(answer.status, 200, "{}", answer.body);
            } else if !rest.starts_with("/telemetry") {
                assert_eq!(answer.status, 404, "GET {id}{rest}: {}", answer.body);
            }
        }
        let by_seq = http(
            "POST",
            &format!("{}/v1/sessions/{id}/messages/by-seq", server.base),
            &h,
            Some(r#"{"seqs":[0,1,2,3]}"#),
        );
        assert!(!by_seq.body.contains("round"), "{}", by_seq.body);
        // Renaming, deleting and saving under those ids touch nothing of Alice's.
        http(
            "PATCH",
            &format!("{}/v1/sessions/{id}", server.base),
            &h,
            Some(r#"{"name":"pwned","now_ms":1}"#),
        );
        http(
            "DELETE",
            &format!("{}/v1/sessions/{id}", server.base),
            &h,
            None,
        );
    }
    // Mallory may have a session called "plans" of its own: a different session.
    let mallory_store = server.store(&mallory.token);
    saved_session(&mallory_store, "plans", 2);
    block_on(mallory_store.delete("plans")).unwrap();
    assert_eq!(
        export(&alice_store, "plans"),
        before,
        "Alice's session changed"
    );
    let (rows, _) = block_on(alice_store.rows()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].name, "plans", "renamed by another account");
    // The stored row is under Alice's namespace and nobody else's.
    let owners = server.execute("SELECT 1 FROM {s}.sessions WHERE id = $1", &[&stored_key]);
    assert_eq!(owners, 1);
}

#[test]
fn a_stale_save_is_a_conflict_that_names_the_stored_revision() {
    let server = TestServer::start("conflict", Limits::default());
    let carol = server.token("carol");
    let laptop = server.store(&carol.token);
    let phone = server.store(&carol.token);
    let mut on_laptop = saved_session(&laptop, "trip", 3);
    let (mut on_phone, _, _) =
        block_on(sessions::open::<_, SuiteError>(&phone, "trip", counter_for)).unwrap();
    scripted_turn(&mut on_laptop, 3);
    block_on(sessions::save::<_, SuiteError>(
        &laptop,
        "trip",
        &mut on_laptop,
        10.0,
    ))
    .unwrap();
    scripted_turn(&mut on_phone, 3);
    let batch = on_phone.write_batch().unwrap();
    let request =
        ccm_store::remote::WriteRequest::of(&batch, &ccm_store::WriteMode::Save { now_ms: 11.0 });
    let answer = http(
        "PUT",
        &format!("{}/v1/sessions/trip", server.base),
        &[("authorization", &bearer(&carol.token))],
        Some(&serde_json::to_string(&request).unwrap()),
    );
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert_eq!(answer.code(), "conflict");
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["error"]["stored_revision"], 5, "{body}");
    assert!(
        !body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&carol.account_id),
        "the stored key leaked: {body}"
    );
    // The refused device's turns are still pending: nothing was marked saved.
    assert!(on_phone.write_batch().unwrap().messages.len() >= 2);
}

#[test]
fn bodies_over_the_limit_and_malformed_bodies_are_refused_with_nothing_written() {
    let server = TestServer::start(
        "limits",
        Limits {
            max_body_bytes: 64 * 1024,
            ..Limits::default()
        },
    );
    let dave = server.token("dave");
    let auth = bearer(&dave.token);
    let h = [("authorization", auth.as_str())];
    let big = format!(r#"{{"name":"{}","now_ms":1}}"#, "x".repeat(100_000));
    let answer = http(
        "PATCH",
        &format!("{}/v1/sessions/s", server.base),
        &h,
        Some(&big),
    );
    assert_eq!(answer.status, 413, "{}", answer.body);
    assert_eq!(answer.code(), "too_large");
    assert!(answer.body.contains("65536"), "{}", answer.body);
    for (method, path, body) in [
        ("PUT", "/v1/sessions/s", "not json"),
        ("PUT", "/v1/sessions/s", r#"{"mode":"save"}"#),
        ("PATCH", "/v1/sessions/s", r#"{"name": 3}"#),
        (
            "POST",
            "/v1/sessions/s/messages/by-seq",
            r#"{"seqs":"all"}"#,
        ),
        (
            "POST",
            "/v1/sessions/s/import",
            r#"{"document":"{}","name":"x","now_ms":1}"#,
        ),
    ] {
        let answer = http(method, &format!("{}{path}", server.base), &h, Some(body));
        assert_eq!(
            answer.status, 400,
            "{method} {path} {body}: {}",
            answer.body
        );
        assert_eq!(answer.code(), "bad_request");
    }
    let range = http(
        "GET",
        &format!("{}/v1/sessions/s/messages?from=0&to=1000000", server.base),
        &h,
        None,
    );
    assert_eq!(range.status, 400, "{}", range.body);
    let long_id = "i".repeat(300);
    let answer = http(
        "GET",
        &format!("{}/v1/sessions/{long_id}", server.base),
        &h,
        None,
    );
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(
        server.execute("SELECT 1 FROM {s}.sessions", &[]),
        0,
        "something was written"
    );
}

#[test]
fn an_account_over_its_rate_is_told_when_to_retry_and_others_are_not_slowed() {
    let server = TestServer::start(
        "rate",
        Limits {
            requests_per_second: 1,
            burst: 5,
            ..Limits::default()
        },
    );
    let busy = server.token("busy");
    let quiet = server.token("quiet");
    let list = format!("{}/v1/sessions", server.base);
    let statuses: Vec<u16> = (0..8)
        .map(|_| {
            http(
                "GET",
                &list,
                &[("authorization", &bearer(&busy.token))],
                None,
            )
            .status
        })
        .collect();
    assert_eq!(&statuses[..5], &[200; 5], "{statuses:?}");
    let limited = http(
        "GET",
        &list,
        &[("authorization", &bearer(&busy.token))],
        None,
    );
    assert_eq!(limited.status, 429, "{statuses:?}");
    assert_eq!(limited.code(), "rate_limited");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "retry-after {retry}");
    assert_eq!(
        http(
            "GET",
            &list,
            &[("authorization", &bearer(&quiet.token))],
            None
        )
        .status,
        200,
        "another account was limited"
    );
}

#[test]
fn cors_answers_only_the_configured_origins() {
    let server = TestServer::start(
        "cors",
        Limits {
            allowed_origins: vec!["http://127.0.0.1:8080".to_string()],
            ..Limits::default()
        },
    );
    let list = format!("{}/v1/sessions", server.base);
    let preflight = |origin: &str| {
        http(
            "OPTIONS",
            &list,
            &[
                ("origin", origin),
                ("access-control-request-method", "PUT"),
                (
                    "access-control-request-headers",
                    "authorization,content-type",
                ),
            ],
            None,
        )
    };
    let allowed = preflight("http://127.0.0.1:8080");
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://127.0.0.1:8080"),
        "{:?}",
        allowed.headers
    );
    let methods = allowed.header("access-control-allow-methods").unwrap_or("");
    assert!(methods.contains("PUT"), "{methods}");
    let other = preflight("https://evil.example");
    assert_eq!(other.header("access-control-allow-origin"), None);
    // A simple request from another origin gets no CORS header either, so the browser keeps
    // the answer from that page.
    let token = server.token("erin").token;
    let simple = http(
        "GET",
        &list,
        &[
            ("origin", "https://evil.example"),
            ("authorization", &bearer(&token)),
        ],
        None,
    );
    assert_eq!(simple.header("access-control-allow-origin"), None);
}

#[test]
fn export_and_import_round_trip_through_the_server() {
    let server = TestServer::start("export", Limits::default());
    let frank = server.token("frank");
    let store = server.store(&frank.token);
    saved_session(&store, "notes", 13);
    let exported = block_on(store.export("notes")).unwrap();
    let request = ccm_store::remote::ImportRequest {
        document: exported.clone(),
        name: "notes (copy)".to_string(),
        now_ms: 5.0,
    };
    let row = block_on(store.import("copy", &request)).unwrap();
    assert_eq!(row.id, "copy");
    assert_eq!(row.name, "notes (copy)");
    // The copy's export is the original's document, but for token counts: the import counts
    // with the exact tokenizer, the suite's sessions with the approximation.
    let copy = block_on(store.export("copy")).unwrap();
    fn without_counts(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|key, _| !key.ends_with("tokens"));
                map.values_mut().for_each(without_counts);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(without_counts),
            _ => {}
        }
    }
    let strip = |text: &str| {
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        without_counts(&mut v);
        v
    };
    let (copy, exported) = (strip(&copy), strip(&exported));
    for part in [
        "ambient",
        "efforts",
        "attachments",
        "pins",
        "active",
        "open",
    ] {
        assert_eq!(copy[part], exported[part], "{part} differs");
    }
    assert!(copy["ambient"].as_array().is_some_and(|m| !m.is_empty()));
    assert!(copy.to_string().contains("login latency"), "{copy}");
    // Importing onto a taken id is a conflict and changes nothing.
    let again = block_on(store.import("copy", &request)).unwrap_err();
    assert_eq!(again.code(), "conflict");
    let refused = block_on(store.import(
        "broken",
        &ccm_store::remote::ImportRequest {
            document: "{\"format\": \"something else\"}".to_string(),
            name: "b".to_string(),
            now_ms: 1.0,
        },
    ))
    .unwrap_err();
    assert!(refused.to_string().contains("document"), "{refused}");
}

#[test]
fn the_whole_storage_contract_holds_over_http() {
    // The suite saves hundreds of turns as fast as it can: far above a person's rate.
    let server = TestServer::start(
        "conformance",
        Limits {
            requests_per_second: 100_000,
            burst: 100_000,
            ..Limits::default()
        },
    );
    let mut harness = RemoteHarness {
        server: &server,
        accounts: Vec::new(),
    };
    let report = block_on(conformance::run(
        &mut harness,
        conformance::Options::default(),
    ));
    println!("{}", report.table());
    report.assert_passed();
}

/// The conformance suite's backend: the remote store; each fresh storage is a new account.
struct RemoteHarness<'a> {
    server: &'a TestServer,
    /// (token, account id) of each store handed out.
    accounts: Vec<(String, String)>,
}

impl RemoteHarness<'_> {
    fn account_of(
        &self,
        store: &ccm_store::remote::RemoteStore<ccm_server::client::HttpTransport>,
    ) -> String {
        let token = store.transport().token().to_string();
        self.accounts
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, a)| a.clone())
            .expect("a store of this harness")
    }
}

type Remote = ccm_store::remote::RemoteStore<ccm_server::client::HttpTransport>;

impl conformance::Harness for RemoteHarness<'_> {
    type Store = Remote;

    async fn fresh(&mut self) -> Remote {
        let name = format!("suite{}", self.accounts.len());
        let created = self
            .server
            .accounts()
            .await
            .create_token(&name, "suite")
            .await
            .unwrap();
        self.accounts
            .push((created.token.clone(), created.account_id.clone()));
        self.server.store(&created.token)
    }

    async fn second_handle(&mut self, store: &Remote) -> Remote {
        self.server.store(store.transport().token())
    }

    async fn damage_message(&mut self, store: &Remote, id: &str, seq: u64) {
        let key = format!("{}/{id}", self.account_of(store));
        let changed = self.server.execute_async(
            "UPDATE {s}.messages SET record = '{\"log\": ambient, garbled' WHERE session = $1 AND seq = $2",
            &[&key, &(seq as i64)],
        ).await;
        assert_eq!(changed, 1);
    }

    async fn remove_message(&mut self, store: &Remote, id: &str, seq: u64) {
        let key = format!("{}/{id}", self.account_of(store));
        let changed = self
            .server
            .execute_async(
                "DELETE FROM {s}.messages WHERE session = $1 AND seq = $2",
                &[&key, &(seq as i64)],
            )
            .await;
        assert_eq!(changed, 1);
    }

    async fn damage_row(&mut self, store: &Remote, id: &str) {
        let key = format!("{}/{id}", self.account_of(store));
        let changed = self
            .server
            .execute_async(
                "UPDATE {s}.sessions SET row = 'not a session row' WHERE id = $1",
                &[&key],
            )
            .await;
        assert_eq!(changed, 1);
    }

    async fn inject(
        &mut self,
        _: &Remote,
        _: &str,
        fault: conformance::Fault,
    ) -> conformance::Injected {
        // The server keeps sessions in PostgreSQL, one transaction per write.
        conformance::Injected::transactional(fault)
    }

    fn leftovers(&self, _: &Remote) -> Result<Vec<String>, &'static str> {
        Err("the server's PostgreSQL keeps a write's work in its transaction, not in files")
    }

    fn clock_ms(&self) -> f64 {
        conformance::system_clock_ms()
    }

    fn bytes_written(&self, _: &Remote) -> Option<u64> {
        None
    }
}
