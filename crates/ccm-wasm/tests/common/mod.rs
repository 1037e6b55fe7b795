//! The `SessionStore` methods as a JavaScript host calls them, for the storage tests and the
//! storage benchmark: arguments go in as JavaScript values, each promise is awaited, and what
//! it resolves to is read back the way a host reads it (a `Session` object, a `SaveReport`, a
//! list of plain objects, the export's JSON text). The package has no Rust form of these.

#![allow(dead_code)] // Each test binary uses its own share of these.

use ccm_core::snapshot::SessionDocument;
use ccm_wasm::{SaveReport, Session, SessionStore};
use js_sys::{Object, Reflect};
use serde::Deserialize;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// A plain JavaScript object with `fields`.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (name, value) in fields {
        Reflect::set(&object, &(*name).into(), value).unwrap();
    }
    object.into()
}

/// `SessionStore.open({ backend, name })`.
pub async fn open(backend: &str, name: &str) -> Result<SessionStore, JsValue> {
    let options = object(&[("backend", backend.into()), ("name", name.into())]);
    let store = JsFuture::from(SessionStore::open(options)).await?;
    Ok(SessionStore::try_from_js_value(store).expect("open resolves to a SessionStore"))
}

/// `store.create(name, options)`.
pub async fn create(
    store: &SessionStore,
    name: &str,
    options: JsValue,
) -> Result<Session, JsValue> {
    let session = JsFuture::from(store.create(name.into(), options, JsValue::UNDEFINED)).await?;
    Ok(Session::try_from_js_value(session).expect("create resolves to a Session"))
}

/// `store.load(id)`.
pub async fn load(store: &SessionStore, id: &str) -> Result<Session, JsValue> {
    let session = JsFuture::from(store.load(id.into(), JsValue::UNDEFINED)).await?;
    Ok(Session::try_from_js_value(session).expect("load resolves to a Session"))
}

/// `store.save(session)`, and what it reports.
pub async fn save(store: &SessionStore, session: &Session) -> Result<SaveReport, JsValue> {
    let report = JsFuture::from(store.save(session)).await?;
    let number = |name: &str| {
        Reflect::get(&report, &name.into())
            .unwrap()
            .as_f64()
            .unwrap()
    };
    Ok(SaveReport {
        revision: number("revision"),
        records_written: number("records_written"),
    })
}

/// One entry of `store.list()` (the fields the tests read).
#[derive(Debug, Deserialize)]
pub struct Listed {
    pub id: String,
    pub name: String,
    pub turn_count: f64,
    pub message_count: f64,
}

/// `store.list()`.
pub async fn list(store: &SessionStore) -> Result<Vec<Listed>, JsValue> {
    let listed = JsFuture::from(store.list()).await?;
    Ok(serde_wasm_bindgen::from_value(listed).expect("list resolves to SessionInfo objects"))
}

/// `store.exportSession(id)`: the document's JSON text.
pub async fn export(store: &SessionStore, id: &str) -> Result<String, JsValue> {
    let text = JsFuture::from(store.export_session(id.into())).await?;
    Ok(text
        .as_string()
        .expect("exportSession resolves to a string"))
}

/// `store.exportSession(id)`, read as a document.
pub async fn export_document(store: &SessionStore, id: &str) -> Result<SessionDocument, JsValue> {
    Ok(serde_json::from_str(&export(store, id).await?).expect("the export is a session document"))
}

/// `store.importSession(json, name)`.
pub async fn import(store: &SessionStore, json: &str, name: &str) -> Result<Listed, JsValue> {
    let created =
        JsFuture::from(store.import_session(json.into(), name.into(), JsValue::UNDEFINED)).await?;
    Ok(serde_wasm_bindgen::from_value(created).expect("importSession resolves to a SessionInfo"))
}
