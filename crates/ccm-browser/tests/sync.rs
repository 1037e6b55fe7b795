//! The sync client's browser side in headless Chromium: what its `fetch` transport sends (the
//! server's address, the bearer token, the JSON body), how it reports a server that cannot be
//! reached (in words that say what to check, and apart from a refusal the server answered),
//! and the synced revisions it keeps in localStorage. The whole sync against the real server
//! and PostgreSQL is tests/e2e/sync.test.mjs.

#![cfg(target_arch = "wasm32")]

use ccm_browser::sync::{FetchTransport, SyncClient, SyncedRevisions};
use ccm_browser::BrowserError;
use ccm_store::remote::{Method, Request, Transport};
use js_sys::{Function, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Replaces `fetch` with a function that records each request in `globalThis.seen` and
/// answers `status` with `body`; returns the original, for [`restore`].
fn answer_with(status: u16, body: &str) -> JsValue {
    let original = Reflect::get(&js_sys::global(), &JsValue::from_str("fetch")).unwrap();
    let body = serde_json::to_string(body).unwrap();
    let fetch = Function::new_with_args(
        "request",
        &format!(
            "globalThis.seen = globalThis.seen || [];
             return request.text().then((text) => {{
               globalThis.seen.push({{
                 method: request.method,
                 url: request.url,
                 authorization: request.headers.get('authorization'),
                 contentType: request.headers.get('content-type'),
                 body: text,
               }});
               return new Response({body}, {{ status: {status}, headers: {{ 'content-type': 'application/json' }} }});
             }});"
        ),
    );
    Reflect::set(
        &js_sys::global(),
        &JsValue::from_str("seen"),
        &js_sys::Array::new(),
    )
    .unwrap();
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &fetch).unwrap();
    original
}

fn restore(original: JsValue) {
    Reflect::set(&js_sys::global(), &JsValue::from_str("fetch"), &original).unwrap();
}

/// The requests the replaced `fetch` saw, as JSON.
fn seen() -> serde_json::Value {
    let seen = Reflect::get(&js_sys::global(), &JsValue::from_str("seen")).unwrap();
    let text = js_sys::JSON::stringify(&seen).unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

#[wasm_bindgen_test]
fn an_address_that_is_no_url_and_an_empty_token_are_refused() {
    for address in ["", "sync.example", "ftp://host", "http://", "http://a b"] {
        let error = SyncClient::new(address, "token").err().expect(address);
        assert!(
            matches!(error, BrowserError::Argument(_)),
            "{address}: {error}"
        );
        assert!(error.to_string().contains("http:// or https://"), "{error}");
    }
    let error = SyncClient::new("http://127.0.0.1:8787", "  ")
        .err()
        .unwrap();
    assert!(error.to_string().contains("token is empty"), "{error}");
    // A trailing slash is the same server.
    let transport = FetchTransport::new("https://sync.test:8443/", "t").unwrap();
    assert_eq!(transport.base_url(), "https://sync.test:8443");
}

#[wasm_bindgen_test]
async fn requests_carry_the_token_and_their_json_body_to_the_servers_routes() {
    let original = answer_with(200, r#"{"sessions":[],"damaged":[]}"#);
    let client = SyncClient::new("http://sync.test:1234/", "secret-token").unwrap();
    let listed = client.check().await;
    let transport = FetchTransport::new("http://sync.test:1234", "secret-token").unwrap();
    let answer = transport
        .send(Request {
            method: Method::Patch,
            path: "/v1/sessions/s1".to_string(),
            body: Some(r#"{"name":"n","now_ms":1}"#.to_string()),
        })
        .await;
    restore(original);
    assert_eq!(listed.unwrap(), 0);
    let answer = answer.unwrap();
    assert_eq!(answer.status, 200);
    let seen = seen();
    assert_eq!(seen[0]["method"], "GET");
    assert_eq!(seen[0]["url"], "http://sync.test:1234/v1/sessions");
    assert_eq!(seen[0]["authorization"], "Bearer secret-token");
    assert_eq!(seen[0]["contentType"], serde_json::Value::Null);
    assert_eq!(seen[1]["method"], "PATCH");
    assert_eq!(seen[1]["url"], "http://sync.test:1234/v1/sessions/s1");
    assert_eq!(seen[1]["contentType"], "application/json");
    assert_eq!(seen[1]["body"], r#"{"name":"n","now_ms":1}"#);
    assert!(!client.unreachable() && !transport.unreachable());
}

#[wasm_bindgen_test]
async fn a_server_that_cannot_be_reached_is_unavailable_and_the_message_says_what_to_check() {
    // Port 9 (discard) has no listener here: the connection is refused, as with a server that
    // is not running.
    let client = SyncClient::new("http://127.0.0.1:9", "token").unwrap();
    let error = client.check().await.unwrap_err();
    assert!(matches!(error, BrowserError::Unavailable(_)), "{error:?}");
    let text = error.to_string();
    for part in [
        "http://127.0.0.1:9 could not be reached",
        "the server is running",
        "CORS",
    ] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }
    assert!(client.unreachable());

    // A refusal the server answers (a token it does not take) is no unreachable server.
    let original = answer_with(
        401,
        r#"{"error":{"code":"unauthorized","message":"the token is not valid"}}"#,
    );
    let refused = client.check().await;
    restore(original);
    assert_eq!(
        refused.unwrap_err(),
        BrowserError::Unavailable("the token is not valid".to_string())
    );
    assert!(!client.unreachable());
}

#[wasm_bindgen_test]
fn synced_revisions_are_kept_per_server_and_session() {
    let one = SyncedRevisions::for_server("http://one.test");
    let two = SyncedRevisions::for_server("http://two.test");
    one.set("s1", Some(7)).unwrap();
    one.set("s2", Some(3)).unwrap();
    assert_eq!(one.get("s1"), Some(7));
    assert_eq!(one.get("s2"), Some(3));
    assert_eq!(two.get("s1"), None, "another server has its own revisions");
    one.set("s1", None).unwrap();
    assert_eq!(one.get("s1"), None);
    assert_eq!(one.get("s2"), Some(3));
    one.set("s2", None).unwrap();
}
