//! The storage contract (`ccm_store::conformance`) against the Node stores the npm package
//! ships, in Node: `FileSessionStore`'s file functions over Node's `fs` (npm/ccm/glue/
//! filestore.cjs.js) under ccm-store's file format, and `PostgresSessionStore`'s record table
//! over `pg` (npm/ccm/glue/postgres.cjs.js) against a real PostgreSQL server. The glue files
//! are loaded as they are shipped, not copied.
//!
//! Needs what npm/test-package provides: `pg` on `NODE_PATH` (the fixtures' install) and
//! `CCM_TEST_POSTGRES_URL` (the cluster scripts/test starts). Built only with the feature
//! `node-conformance`, which npm/test-package turns on; without the two, the tests fail rather
//! than pass quietly.

#![cfg(all(target_arch = "wasm32", feature = "node-conformance"))]

use ccm_browser::BrowserStore;
use ccm_store::conformance::{self, Fault, Harness, Injected, Options};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

const GLUE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/ccm/glue");

#[wasm_bindgen(inline_js = r##"
const fs = process.getBuiltinModule("fs");
const os = process.getBuiltinModule("os");
const path = process.getBuiltinModule("path");
const { createRequire } = process.getBuiltinModule("module");

// Evaluates a glue file as the package's CommonJS module does, with stand-ins for the engine
// classes it extends (none of the parts used here touch them), and returns what it exports.
function loadGlue(file) {
  const text = fs.readFileSync(file, "utf8");
  const exports = {};
  const stand = { open() {}, prototype: {} };
  new Function("require", "exports", "module", "SessionStore", "Session", text + "\n;exports.__primitives = typeof ccmFilePrimitives === 'function' ? ccmFilePrimitives : undefined;")(
    createRequire(file), exports, { exports }, stand, stand,
  );
  return exports;
}

export function env(name) { return process.env[name] ?? null; }

export function tempDir() { return fs.mkdtempSync(path.join(os.tmpdir(), "ccm-node-conformance-")); }

export function removeDir(dir) { fs.rmSync(dir, { recursive: true, force: true }); }

// FileSessionStore's file functions over `directory`, counting the bytes they write.
export function filePrimitives(glue, directory, counter) {
  const primitives = loadGlue(path.join(glue, "filestore.cjs.js")).__primitives(directory);
  // What FileSessionStore.open does before it opens the store.
  fs.mkdirSync(path.join(directory, "locks"), { recursive: true });
  fs.mkdirSync(path.join(directory, "sessions"), { recursive: true });
  primitives.clearLeftovers();
  const writeAt = primitives.writeAt, replace = primitives.replace;
  primitives.writeAt = (handle, offset, bytes) => { counter.bytes += bytes.length; return writeAt(handle, offset, bytes); };
  primitives.replace = (file, bytes) => { counter.bytes += bytes.length; return replace(file, bytes); };
  return primitives;
}

export function newCounter() { return { bytes: 0 }; }
export function counted(counter) { return counter.bytes; }

// The layout, damaged the way another program would (see crates/ccm-store/src/files.rs).
const u64 = (bytes, at) => Number(Buffer.from(bytes.buffer, bytes.byteOffset + at, 8).readBigUInt64LE());
function commitRevision(dir) {
  const line = fs.readFileSync(path.join(dir, "commit"), "utf8").split("\n")[0];
  return Number(/revision=(\d+)/.exec(line)[1]);
}
export function damageFileMessage(root, id, seq) {
  const dir = path.join(root, "sessions", id);
  const revision = commitRevision(dir);
  const row = fs.readFileSync(path.join(dir, "messages.idx")).subarray(seq * 64, seq * 64 + 64);
  const slots = [0, 1].map((k) => row.subarray(k * 32, k * 32 + 32)).filter((s) => s.some((b) => b !== 0) && u64(s, 16) <= revision);
  slots.sort((a, b) => u64(b, 16) - u64(a, 16));
  const [offset, length] = [u64(slots[0], 0), u64(slots[0], 8)];
  const data = fs.readFileSync(path.join(dir, "records.dat"));
  data.fill("#".charCodeAt(0), offset, offset + length);
  fs.writeFileSync(path.join(dir, "records.dat"), data);
}
export function removeFileMessage(root, id, seq) {
  const dir = path.join(root, "sessions", id);
  const index = fs.readFileSync(path.join(dir, "messages.idx"));
  index.fill(0, seq * 64, seq * 64 + 64);
  fs.writeFileSync(path.join(dir, "messages.idx"), index);
  for (const name of fs.readdirSync(path.join(dir, "logs"))) {
    const file = path.join(dir, "logs", name);
    const bytes = fs.readFileSync(file);
    if (bytes.length < 256) continue;
    const kept = [bytes.subarray(0, 256)];
    for (let at = 256; at + 16 <= bytes.length; at += 16) {
      if (u64(bytes, at) !== seq) kept.push(bytes.subarray(at, at + 16));
    }
    fs.writeFileSync(file, Buffer.concat(kept));
  }
}
export function damageFileRow(root, id) {
  const file = path.join(root, "sessions", id, "commit");
  const line = fs.readFileSync(file, "utf8").split("\n")[0];
  fs.writeFileSync(file, `${line}\nthis is not a session row\n`);
}

// What crashed processes leave in a file store (see ccm_store::conformance::Fault), as the
// native harness leaves it (crates/ccm-store/tests/files.rs): owner files of Node processes
// that are gone, a takeover's break file, and a save's remains before its commit.
const { spawnSync } = process.getBuiltinModule("child_process");
function deadPid() { return spawnSync(process.execPath, ["-e", "0"]).pid; }
function leftOwner(root, id, pid) {
  const file = path.join(root, "locks", `${id}.lock.owner`);
  const owner = { pid, host: os.hostname(), time_ms: Date.now(), holder: "node", start: "1", thread: 0, nonce: "left" };
  fs.writeFileSync(file, JSON.stringify(owner));
  return file;
}
export function injectFileFault(root, id, fault) {
  if (fault === "LockOfDeadProcess") leftOwner(root, id, deadPid());
  // This process's parent runs, and started long before the time written here.
  else if (fault === "LockOfReusedProcessId") leftOwner(root, id, process.ppid);
  else if (fault === "InterruptedLockTakeover") {
    const owner = leftOwner(root, id, deadPid());
    fs.renameSync(leftOwner(root, "breaker", deadPid()), `${owner}.break`);
  } else if (fault === "SaveKilledBeforeCommit") {
    const dir = path.join(root, "sessions", id);
    fs.appendFileSync(path.join(dir, "records.dat"), '{"role":"user","content":"half a rec');
    fs.writeFileSync(path.join(dir, `commit.tmp-${deadPid()}-0a1b2c3d-0`), "ccm-files-commit 1 revision=");
  } else throw new Error(`no such fault: ${fault}`);
}
// The kinds of damage that make a whole session unreadable, as the native harness names them.
const FILE_DAMAGE = {
  "the commit's first line is garbled": (dir) => {
    const text = fs.readFileSync(path.join(dir, "commit"), "utf8");
    fs.writeFileSync(path.join(dir, "commit"), text.replace("ccm-files-commit 1", "ccm-fXles-commit 1"));
  },
  "the commit's row is cut": (dir) => {
    const text = fs.readFileSync(path.join(dir, "commit"), "utf8");
    fs.writeFileSync(path.join(dir, "commit"), text.slice(0, text.indexOf("\n") + 40));
  },
  "the commit is empty": (dir) => fs.writeFileSync(path.join(dir, "commit"), ""),
  "records.dat is cut short": (dir) => fs.truncateSync(path.join(dir, "records.dat"), fs.statSync(path.join(dir, "records.dat")).size - 300),
  "records.dat is missing": (dir) => fs.unlinkSync(path.join(dir, "records.dat")),
  "the message index is cut short": (dir) => fs.truncateSync(path.join(dir, "messages.idx"), 64),
  "the ambient log's header is garbled": (dir) => {
    const file = path.join(dir, "logs", "ambient.seq");
    const bytes = fs.readFileSync(file);
    bytes.fill(0x21, 0, 12);
    fs.writeFileSync(file, bytes);
  },
  "the metrics index is missing": (dir) => fs.unlinkSync(path.join(dir, "metrics.idx")),
  "the last record's text is overwritten": (dir) => {
    const file = path.join(dir, "records.dat");
    const bytes = fs.readFileSync(file);
    bytes.fill(0x7b, bytes.length - 20, bytes.length);
    fs.writeFileSync(file, bytes);
  },
};
export function fileDamageKinds() { return Object.keys(FILE_DAMAGE); }
export function damageFiles(root, id, kind) { FILE_DAMAGE[kind](path.join(root, "sessions", id)); }
// Files an atomic replace or a lock takeover makes and removes.
export function fileLeftovers(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...fileLeftovers(file));
    else if (/\.(tmp|stale)-|\.break$/.test(entry.name)) found.push(file);
  }
  return found;
}

// PostgresSessionStore's record table on a fresh schema (or `schema`), its bytes counted.
let schemas = 0;
export async function postgresTable(glue, url, schema, counter) {
  const { PostgresRecordTable } = loadGlue(path.join(glue, "postgres.cjs.js"));
  const { Pool } = createRequire(path.join(glue, "postgres.cjs.js"))("pg");
  const pool = new Pool({ connectionString: url, max: 4 });
  const name = schema ?? `node_conformance_${process.pid}_${++schemas}`;
  const table = new PostgresRecordTable(pool, name);
  await table.migrate();
  const write = table.write.bind(table);
  table.write = (id, expected, row, records) => {
    counter.bytes += row.length;
    for (const list of Object.values(records)) for (const entry of list) counter.bytes += entry[entry.length - 1].length;
    return write(id, expected, row, records);
  };
  table.pool = pool;
  return table;
}
export function schemaOf(table) { return table.schema; }
export async function sql(table, text, values) { await table.pool.query(text, values); }
"##)]
extern "C" {
    fn env(name: &str) -> Option<String>;
    #[wasm_bindgen(js_name = tempDir)]
    fn temp_dir() -> String;
    #[wasm_bindgen(js_name = removeDir)]
    fn remove_dir(dir: &str);
    #[wasm_bindgen(js_name = filePrimitives)]
    fn file_primitives(glue: &str, directory: &str, counter: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = newCounter)]
    fn new_counter() -> JsValue;
    fn counted(counter: &JsValue) -> f64;
    #[wasm_bindgen(js_name = damageFileMessage)]
    fn damage_file_message(root: &str, id: &str, seq: f64);
    #[wasm_bindgen(js_name = removeFileMessage)]
    fn remove_file_message(root: &str, id: &str, seq: f64);
    #[wasm_bindgen(js_name = damageFileRow)]
    fn damage_file_row(root: &str, id: &str);
    #[wasm_bindgen(js_name = injectFileFault)]
    fn inject_file_fault(root: &str, id: &str, fault: &str);
    #[wasm_bindgen(js_name = fileDamageKinds)]
    fn file_damage_kinds() -> Vec<String>;
    #[wasm_bindgen(js_name = damageFiles)]
    fn damage_files(root: &str, id: &str, kind: &str);
    #[wasm_bindgen(js_name = fileLeftovers)]
    fn file_leftovers(dir: &str) -> Vec<String>;
    #[wasm_bindgen(js_name = postgresTable)]
    fn postgres_table(glue: &str, url: &str, schema: Option<String>, counter: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = schemaOf)]
    fn schema_of(table: &JsValue) -> String;
    fn sql(table: &JsValue, text: &str, values: Vec<JsValue>) -> Promise;
}

/// Node's write and read of these stores is as slow as a disk's; 240 turns span twenty
/// cycles of the suite's script, as in the browsers.
const NODE_OPTIONS: Options = Options {
    incremental_turns: 240,
};

/// FileSessionStore's directories: a new one per fresh store, removed at the end.
struct FilesHarness {
    dirs: Vec<String>,
    counter: JsValue,
}

impl FilesHarness {
    fn open(&self, dir: &str) -> BrowserStore {
        BrowserStore::open_files(dir, file_primitives(GLUE, dir, &self.counter))
            .expect("the file store opens over Node's fs")
    }

    fn dir(&self) -> &str {
        self.dirs.last().expect("a fresh store first")
    }
}

impl Harness for FilesHarness {
    type Store = BrowserStore;

    async fn fresh(&mut self) -> BrowserStore {
        self.dirs.push(temp_dir());
        self.open(self.dir())
    }

    async fn second_handle(&mut self, _: &BrowserStore) -> BrowserStore {
        self.open(self.dir())
    }

    async fn damage_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        damage_file_message(self.dir(), id, seq as f64);
    }

    async fn remove_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        remove_file_message(self.dir(), id, seq as f64);
    }

    async fn damage_row(&mut self, _: &BrowserStore, id: &str) {
        damage_file_row(self.dir(), id);
    }

    async fn inject(&mut self, _: &BrowserStore, id: &str, fault: Fault) -> Injected {
        inject_file_fault(self.dir(), id, &format!("{fault:?}"));
        Injected::Done
    }

    fn damage_kinds(&self) -> Vec<String> {
        // The names live in JavaScript, beside the damage.
        file_damage_kinds()
    }

    async fn damage(&mut self, _: &BrowserStore, id: &str, kind: &str) {
        damage_files(self.dir(), id, kind);
    }

    fn leftovers(&self, _: &BrowserStore) -> Result<Vec<String>, &'static str> {
        Ok(file_leftovers(self.dir()))
    }

    fn clock_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn bytes_written(&self, _: &BrowserStore) -> Option<u64> {
        Some(counted(&self.counter) as u64)
    }
}

#[wasm_bindgen_test]
async fn the_node_file_store_keeps_the_storage_contract() {
    let mut harness = FilesHarness {
        dirs: Vec::new(),
        counter: new_counter(),
    };
    let report = conformance::run(&mut harness, NODE_OPTIONS).await;
    for dir in &harness.dirs {
        remove_dir(dir);
    }
    console_log!("{}", report.table());
    report.assert_passed();
    assert_eq!(report.backend, "files");
}

/// PostgresSessionStore's record tables: a fresh schema per fresh store.
struct PostgresHarness {
    url: String,
    table: JsValue,
    counter: JsValue,
}

impl PostgresHarness {
    async fn table(&self, schema: Option<String>) -> JsValue {
        JsFuture::from(postgres_table(GLUE, &self.url, schema, &self.counter))
            .await
            .expect("the record table connects and migrates")
    }

    async fn run(&self, text: &str, values: Vec<JsValue>) {
        JsFuture::from(sql(&self.table, text, values))
            .await
            .expect("the damaging statement runs");
    }

    fn schema(&self) -> String {
        schema_of(&self.table)
    }
}

impl Harness for PostgresHarness {
    type Store = BrowserStore;

    async fn fresh(&mut self) -> BrowserStore {
        self.table = self.table(None).await;
        BrowserStore::open_host(self.table.clone()).expect("the table has every method")
    }

    async fn second_handle(&mut self, _: &BrowserStore) -> BrowserStore {
        let table = self.table(Some(self.schema())).await;
        BrowserStore::open_host(table).expect("the table has every method")
    }

    async fn damage_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        let text = format!(
            "UPDATE {}.messages SET record = '{{\"log\": damaged' WHERE session = $1 AND seq = $2",
            self.schema()
        );
        self.run(&text, vec![id.into(), (seq as f64).into()]).await;
    }

    async fn remove_message(&mut self, _: &BrowserStore, id: &str, seq: u64) {
        let text = format!(
            "DELETE FROM {}.messages WHERE session = $1 AND seq = $2",
            self.schema()
        );
        self.run(&text, vec![id.into(), (seq as f64).into()]).await;
    }

    async fn damage_row(&mut self, _: &BrowserStore, id: &str) {
        let text = format!(
            "UPDATE {}.sessions SET row = 'this is not a session row' WHERE id = $1",
            self.schema()
        );
        self.run(&text, vec![id.into()]).await;
    }

    async fn inject(&mut self, _: &BrowserStore, _: &str, fault: Fault) -> Injected {
        Injected::transactional(fault)
    }

    fn leftovers(&self, _: &BrowserStore) -> Result<Vec<String>, &'static str> {
        Err("PostgreSQL keeps a write's work in its transaction, not in files of ours")
    }

    fn clock_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn bytes_written(&self, _: &BrowserStore) -> Option<u64> {
        Some(counted(&self.counter) as u64)
    }
}

#[wasm_bindgen_test]
async fn the_node_postgres_store_keeps_the_storage_contract() {
    let url = env("CCM_TEST_POSTGRES_URL").expect(
        "CCM_TEST_POSTGRES_URL names the test database: npm/test-package runs this test with \
         the cluster scripts/test starts",
    );
    let mut harness = PostgresHarness {
        url,
        table: JsValue::NULL,
        counter: new_counter(),
    };
    let report = conformance::run(&mut harness, NODE_OPTIONS).await;
    console_log!("{}", report.table());
    report.assert_passed();
    assert_eq!(report.backend, "postgres");
}
