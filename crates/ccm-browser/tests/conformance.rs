//! The storage contract (`ccm_store::conformance`) against real IndexedDB and localStorage,
//! in headless Chromium and Firefox. What is specific to each backend (schema upgrades, the
//! localStorage index chunks, a full quota) stays in ccm-wasm's `tests/storage.rs`.

#![cfg(target_arch = "wasm32")]

use ccm_browser::{BackendChoice, BrowserStore};
use ccm_store::conformance::{self, Fault, Harness, Injected, Options};
use ccm_store::RecordStore;
use js_sys::{Array, Promise, Reflect};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use web_sys::{IdbDatabase, IdbFactory, IdbOpenDbRequest, IdbTransactionMode};

wasm_bindgen_test_configure!(run_in_browser);

/// The browsers' saves are slower than a native disk's; 240 turns still span twenty cycles of
/// the suite's script, and the late window is measured 200 turns after the early one.
const BROWSER_OPTIONS: Options = Options {
    incremental_turns: 240,
};

/// IndexedDB databases named `ccm-conformance-<n>`, a new one for every fresh store.
struct IdbHarness {
    next: u32,
    name: String,
}

async fn open_store(choice: BackendChoice, name: &str) -> BrowserStore {
    BrowserStore::open(choice, name)
        .await
        .expect("the browser storage opens")
}

async fn wait(request: &web_sys::IdbRequest) -> JsValue {
    let done = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    JsFuture::from(done).await.expect("the request succeeds");
    request.result().unwrap_or(JsValue::UNDEFINED)
}

async fn raw_db(name: &str) -> IdbDatabase {
    let factory: IdbFactory = Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let request: IdbOpenDbRequest = factory.open(name).unwrap();
    wait(&request).await.unchecked_into()
}

/// Runs `change` on object store `store` of database `name` in one read-write transaction.
async fn change_record(
    name: &str,
    store: &str,
    key: JsValue,
    change: impl Fn(&JsValue) -> Option<JsValue>,
) {
    let db = raw_db(name).await;
    let tx = db
        .transaction_with_str_and_mode(store, IdbTransactionMode::Readwrite)
        .unwrap();
    let objects = tx.object_store(store).unwrap();
    let current = wait(&objects.get(&key).unwrap()).await;
    match change(&current) {
        Some(value) => {
            wait(&objects.put(&value).unwrap()).await;
        }
        None => {
            wait(&objects.delete(&key).unwrap()).await;
        }
    }
    db.close();
}

fn with_field(value: &JsValue, field: &str, text: &str) -> JsValue {
    let copy = js_sys::Object::assign(&js_sys::Object::new(), value.unchecked_ref());
    Reflect::set(&copy, &field.into(), &text.into()).unwrap();
    copy.into()
}

impl Harness for IdbHarness {
    type Store = BrowserStore;

    async fn fresh(&mut self) -> BrowserStore {
        self.next += 1;
        self.name = format!("ccm-conformance-{}", self.next);
        BrowserStore::delete_database(&self.name).await.unwrap();
        open_store(BackendChoice::IndexedDb, &self.name).await
    }

    async fn second_handle(&mut self, _: &BrowserStore) -> BrowserStore {
        open_store(BackendChoice::IndexedDb, &self.name).await
    }

    async fn damage_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        let key = Array::of2(&id.into(), &(seq as f64).into());
        change_record(&self.name, "messages", key.into(), |value| {
            Some(with_field(value, "record", "{\"log\": damaged"))
        })
        .await;
    }

    async fn remove_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        let key = Array::of2(&id.into(), &(seq as f64).into());
        change_record(&self.name, "messages", key.into(), |_| None).await;
    }

    async fn damage_row(&mut self, _: &BrowserStore, id: &str) {
        change_record(&self.name, "sessions", id.into(), |value| {
            Some(with_field(value, "row", "{\"header\": damaged"))
        })
        .await;
    }

    async fn inject(&mut self, _: &BrowserStore, _: &str, fault: Fault) -> Injected {
        Injected::transactional(fault)
    }

    fn leftovers(&self, _: &BrowserStore) -> Result<Vec<String>, &'static str> {
        Err("IndexedDB keeps a write's work in its transaction, not in temporary records")
    }

    fn clock_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn bytes_written(&self, _: &BrowserStore) -> Option<u64> {
        // IndexedDB says nothing of what a transaction wrote; the suite measures the records
        // handed to it, and ccm-wasm's storage tests count the records a save puts.
        None
    }
}

#[wasm_bindgen_test]
async fn indexeddb_keeps_the_storage_contract() {
    let mut harness = IdbHarness {
        next: 0,
        name: String::new(),
    };
    let report = conformance::run(&mut harness, BROWSER_OPTIONS).await;
    wasm_bindgen_test::console_log!("{}", report.table());
    report.assert_passed();
    assert_eq!(report.results.len(), conformance::PROPERTIES.len());
}

/// localStorage namespaces `ccm-conformance-ls-<n>`. localStorage can be read whole, so this
/// harness counts what each save really wrote: the bytes of every key whose value changed.
struct LocalHarness {
    next: u32,
    namespace: String,
    seen: RefCell<BTreeMap<String, String>>,
    written: Cell<u64>,
}

fn local_storage() -> web_sys::Storage {
    Reflect::get(&js_sys::global(), &"localStorage".into())
        .unwrap()
        .unchecked_into()
}

fn namespace_entries(namespace: &str) -> BTreeMap<String, String> {
    let storage = local_storage();
    let prefix = format!("{namespace}/");
    (0..storage.length().unwrap())
        .filter_map(|i| storage.key(i).unwrap())
        .filter(|key| key.starts_with(&prefix))
        .filter_map(|key| Some((key.clone(), storage.get_item(&key).ok()??)))
        .collect()
}

impl LocalHarness {
    fn key(&self, id: &str, suffix: &str) -> String {
        format!("{}/{id}/{suffix}", self.namespace)
    }
}

impl Harness for LocalHarness {
    type Store = BrowserStore;

    async fn fresh(&mut self) -> BrowserStore {
        self.next += 1;
        self.namespace = format!("ccm-conformance-ls-{}", self.next);
        for key in namespace_entries(&self.namespace).keys() {
            local_storage().remove_item(key).unwrap();
        }
        self.seen.replace(BTreeMap::new());
        open_store(BackendChoice::LocalStorage, &self.namespace).await
    }

    async fn second_handle(&mut self, _: &BrowserStore) -> BrowserStore {
        open_store(BackendChoice::LocalStorage, &self.namespace).await
    }

    async fn damage_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        local_storage()
            .set_item(&self.key(id, &format!("m/{seq}")), "{\"log\": damaged")
            .unwrap();
    }

    async fn remove_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        local_storage()
            .remove_item(&self.key(id, &format!("m/{seq}")))
            .unwrap();
    }

    async fn damage_row(&mut self, _: &BrowserStore, id: &str) {
        local_storage()
            .set_item(&self.key(id, "row"), "{\"header\": damaged")
            .unwrap();
    }

    async fn inject(&mut self, _: &BrowserStore, id: &str, fault: Fault) -> Injected {
        if fault != Fault::SaveKilledBeforeCommit {
            return Injected::CannotExist(
                "the backend's only lock is a Web Lock, which the browser lets go when its page dies",
            );
        }
        // A page closed during a save leaves the records it wrote before the row, which it
        // writes last: here the next message and an effort record past the stored ones.
        let row: serde_json::Value = serde_json::from_str(
            &local_storage()
                .get_item(&self.key(id, "row"))
                .unwrap()
                .expect("a stored row"),
        )
        .unwrap();
        let next_seq = row["header"]["next_seq"].as_u64().unwrap();
        let efforts = row["header"]["effort_count"].as_u64().unwrap();
        let storage = local_storage();
        storage
            .set_item(
                &self.key(id, &format!("m/{next_seq}")),
                "{\"log\":\"ambient\",\"message\":{\"seq\":",
            )
            .unwrap();
        storage
            .set_item(&self.key(id, &format!("e/{efforts}")), "{\"id\":\"half")
            .unwrap();
        Injected::Done
    }

    fn leftovers(&self, _: &BrowserStore) -> Result<Vec<String>, &'static str> {
        Err("a save writes its records under their own keys; it makes no temporary ones")
    }

    fn clock_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn bytes_written(&self, _: &BrowserStore) -> Option<u64> {
        let now = namespace_entries(&self.namespace);
        let seen = self.seen.replace(now);
        let now = self.seen.borrow();
        let changed: usize = now
            .iter()
            .filter(|(key, value)| seen.get(*key) != Some(*value))
            .map(|(key, value)| key.len() + value.len())
            .sum();
        self.written.set(self.written.get() + changed as u64);
        Some(self.written.get())
    }
}

#[wasm_bindgen_test]
async fn localstorage_keeps_the_storage_contract() {
    let mut harness = LocalHarness {
        next: 0,
        namespace: String::new(),
        seen: RefCell::new(BTreeMap::new()),
        written: Cell::new(0),
    };
    let report = conformance::run(&mut harness, BROWSER_OPTIONS).await;
    wasm_bindgen_test::console_log!("{}", report.table());
    report.assert_passed();
    assert_eq!(report.results.len(), conformance::PROPERTIES.len());
    let store = harness.fresh().await;
    assert_eq!(store.kind(), "localstorage");
}

// ----- a record table in JavaScript --------------------------------------------------------

#[wasm_bindgen(inline_js = r#"
// A RecordTable (npm/ccm/glue/hoststore.d.ts) in memory: the smallest honest table, so that
// the suite checks the Rust side of the bridge. Texts are kept as given; every method is
// async, as a database's would be, and yields once so that two saves can interleave.
export function memoryTable() {
  const sessions = new Map();
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
  const get = (id) => sessions.get(id);
  const sorted = (map) => [...map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    kind: "host",
    sessions,
    async rows() { await tick(); return [...sessions.entries()].map(([id, s]) => [id, s.row]); },
    async row(id) { await tick(); return get(id)?.row ?? null; },
    async write(id, expectedRow, newRow, records) {
      await tick();
      const stored = get(id);
      if ((stored?.row ?? null) !== expectedRow) return false;
      const s = stored ?? { row: null, efforts: new Map(), messages: new Map(), metrics: new Map(), telemetry: new Map(), attachments: new Map() };
      for (const [p, t] of records.efforts) s.efforts.set(p, t);
      for (const [q, log, t] of records.messages) s.messages.set(q, [log, t]);
      for (const [n, t] of records.metrics) s.metrics.set(n, t);
      for (const [n, t] of records.telemetry) s.telemetry.set(n, t);
      for (const [a, t] of records.attachments) s.attachments.set(a, t);
      s.row = newRow;
      sessions.set(id, s);
      return true;
    },
    async setRow(id, expectedRow, newRow) {
      await tick();
      const s = get(id);
      if (!s || s.row !== expectedRow) return false;
      s.row = newRow;
      return true;
    },
    async workingSet(id, expectedRow, request) {
      await tick();
      const s = get(id);
      if (!s || s.row !== expectedRow) return null;
      const messages = sorted(s.messages);
      const ofLog = (log) => messages.filter(([, [l]]) => l === log).map(([q, [, t]]) => [q, t]);
      const effortLogs = {};
      for (const effort of request.effortLogs) effortLogs[effort] = ofLog(`effort:${effort}`);
      const ambient = ofLog("ambient");
      const sizes = new Map();
      for (const [, [log]] of messages) sizes.set(log, (sizes.get(log) ?? 0) + 1);
      const metrics = sorted(s.metrics);
      return {
        efforts: sorted(s.efforts),
        effortLogs,
        ambientTail: ambient.slice(Math.max(0, ambient.length - request.ambientTail)),
        historyTail: metrics.slice(Math.max(0, metrics.length - request.historyTail)),
        attachments: sorted(s.attachments),
        logSizes: [...sizes.entries()],
      };
    },
    async log(id, log) {
      await tick();
      const s = get(id);
      return s ? sorted(s.messages).filter(([, [l]]) => l === log).map(([q, [, t]]) => [q, t]) : [];
    },
    async messages(id, seqs) {
      await tick();
      const s = get(id);
      return s ? seqs.filter((q) => s.messages.has(q)).map((q) => [q, ...s.messages.get(q)]) : [];
    },
    async messagesBetween(id, from, to) {
      await tick();
      const s = get(id);
      return s ? sorted(s.messages).filter(([q]) => q >= from && q < to).map(([q, [l, t]]) => [q, l, t]) : [];
    },
    async telemetry(id, turn) { await tick(); return get(id)?.telemetry.get(turn) ?? null; },
    async all(id) {
      await tick();
      const s = get(id);
      if (!s) return { row: null, efforts: [], messages: [], metrics: [], attachments: [] };
      return {
        row: s.row,
        efforts: sorted(s.efforts),
        messages: sorted(s.messages).map(([q, [l, t]]) => [q, l, t]),
        metrics: sorted(s.metrics),
        attachments: sorted(s.attachments),
      };
    },
    async delete(id) { await tick(); sessions.delete(id); },
  };
}

export function setMessageText(table, id, seq, text) {
  const s = table.sessions.get(id);
  s.messages.set(seq, [s.messages.get(seq)[0], text]);
}

export function removeMessage(table, id, seq) { table.sessions.get(id).messages.delete(seq); }

export function setRowText(table, id, text) { table.sessions.get(id).row = text; }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = memoryTable)]
    fn memory_table() -> JsValue;
    #[wasm_bindgen(js_name = setMessageText)]
    fn set_message_text(table: &JsValue, id: &str, seq: f64, text: &str);
    #[wasm_bindgen(js_name = removeMessage)]
    fn remove_message_js(table: &JsValue, id: &str, seq: f64);
    #[wasm_bindgen(js_name = setRowText)]
    fn set_row_text(table: &JsValue, id: &str, text: &str);
}

/// The bridge to JavaScript record tables, over a table in memory: every rule is the bridge's.
struct HostHarness {
    table: JsValue,
}

impl Harness for HostHarness {
    type Store = BrowserStore;

    async fn fresh(&mut self) -> BrowserStore {
        self.table = memory_table();
        BrowserStore::open_host(self.table.clone()).expect("the table has every method")
    }

    async fn second_handle(&mut self, _: &BrowserStore) -> BrowserStore {
        BrowserStore::open_host(self.table.clone()).expect("the table has every method")
    }

    async fn damage_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        set_message_text(&self.table, id, seq as f64, "{\"log\": damaged");
    }

    async fn remove_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        remove_message_js(&self.table, id, seq as f64);
    }

    async fn damage_row(&mut self, _: &BrowserStore, id: &str) {
        set_row_text(&self.table, id, "{\"header\": damaged");
    }

    async fn inject(&mut self, _: &BrowserStore, _: &str, fault: Fault) -> Injected {
        // A record table's write is one call that applies whole, like a transaction.
        Injected::transactional(fault)
    }

    fn leftovers(&self, _: &BrowserStore) -> Result<Vec<String>, &'static str> {
        Err("a record table's write is one call; it makes no temporary records")
    }

    fn clock_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn bytes_written(&self, _: &BrowserStore) -> Option<u64> {
        // A table in memory overwrites nothing it was not given; the suite measures the
        // records handed to it.
        None
    }
}

#[wasm_bindgen_test]
async fn a_javascript_record_table_keeps_the_storage_contract() {
    let mut harness = HostHarness {
        table: JsValue::NULL,
    };
    let report = conformance::run(&mut harness, BROWSER_OPTIONS).await;
    wasm_bindgen_test::console_log!("{}", report.table());
    report.assert_passed();
    assert_eq!(report.backend, "host");
}

#[wasm_bindgen_test]
async fn a_record_table_without_every_method_is_refused_at_once() {
    let table = js_sys::Object::new();
    let refused = BrowserStore::open_host(table.into())
        .err()
        .expect("refused");
    let message = refused.to_string();
    assert!(
        message.contains("lacks the methods rows, row, write"),
        "{message}"
    );
}
