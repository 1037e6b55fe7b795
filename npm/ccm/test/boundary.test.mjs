// The JavaScript boundary of the package: every exported function and method refuses arguments
// of the wrong type, unknown keys, numbers out of range and texts over their size limit with an
// `Error` whose `code` says what happened, before anything reaches the module's memory, and
// changes nothing. Freed objects and WebAssembly traps give coded errors too.
//
// The table below is checked against the exports themselves: a new method or function without
// an entry fails the first test, so nothing new reaches wasm unchecked.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as ccm from "cognitive-context";
import { Session, SessionStore, FileSessionStore, countTokens } from "cognitive-context";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// ----- localStorage for Node ---------------------------------------------------------------
// The store's localStorage backend runs against this in-memory Storage, so the store's methods
// can be called here; the browser storage itself is tested in headless Chromium.
class Storage {
  #items = new Map();
  get length() { return this.#items.size; }
  key(index) { return [...this.#items.keys()][index] ?? null; }
  getItem(key) { return this.#items.has(String(key)) ? this.#items.get(String(key)) : null; }
  setItem(key, value) { this.#items.set(String(key), String(value)); }
  removeItem(key) { this.#items.delete(String(key)); }
  clear() { this.#items.clear(); }
  snapshot() { return JSON.stringify([...this.#items.entries()]); }
}
globalThis.Storage = Storage;
globalThis.localStorage = new Storage();
// The backend reaches localStorage through the window (gloo-storage asks `window` for it), so
// the global object stands in for one.
globalThis.Window = class Window {
  static [Symbol.hasInstance](value) {
    return value === globalThis;
  }
};

// ----- what each argument accepts, and the wrong values tried for it ----------------------
const WRONG_TYPES = {
  number: 42,
  boolean: true,
  object: { some: "object" },
  bigint: 10n,
  null: null,
  undefined: undefined,
  array: ["an", "array"],
  string: "a string",
  function: () => 1,
};

// For each kind of argument: a valid value, and the names of the wrong values that must be
// refused (as keys of WRONG_TYPES), plus extra wrong values (numbers out of range, ...).
const KINDS = {
  string: { wrong: ["number", "boolean", "object", "bigint", "null", "undefined", "array", "function"] },
  optionalString: { wrong: ["number", "boolean", "object", "bigint", "array", "function"] },
  number: { wrong: ["string", "boolean", "object", "bigint", "null", "undefined", "array"], extra: [-1, 1.5, NaN, Infinity, 2 ** 60] },
  optionalNumber: { wrong: ["string", "boolean", "object", "bigint", "array"], extra: [-1, 1.5, NaN, 2 ** 60] },
  options: { wrong: ["number", "boolean", "string", "bigint", "array", "function"], extra: [{ noSuchKey: 1 }] },
  object: { wrong: ["number", "boolean", "string", "bigint", "null", "undefined", "array"], extra: [{ noSuchKey: 1 }] },
  document: { wrong: ["number", "boolean", "bigint", "null", "undefined", "array", "function"], extra: [{ format: "ccm-session", big: 1n }] },
  response: { wrong: ["number", "boolean", "string", "bigint", "null", "undefined", "function"], extra: [{ noSuchKey: 1 }] },
  toolArgs: { wrong: ["number", "boolean", "bigint", "null", "array", "function"], extra: [{ name: 1n }] },
  counter: { wrong: ["number", "boolean", "string", "bigint", "array", "object"] },
  session: { wrong: ["number", "boolean", "string", "bigint", "null", "undefined", "array", "object"] },
  bytes: { wrong: ["number", "boolean", "string", "bigint", "null", "undefined", "array", "object"] },
  function: { wrong: ["number", "boolean", "string", "bigint", "null", "undefined", "array", "object"] },
  optionalFunction: { wrong: ["number", "boolean", "string", "bigint", "array", "object"] },
};

// Every method with parameters: its arguments as [kind, valid value] pairs. Valid values are
// chosen so that the call would otherwise go through (or fail for its own reasons later).
const offline = { provider: "offline" };
const SESSION_METHODS = {
  openEffort: [["string", "billing export"], ["optionalString", "the CSV export"]],
  setMemoryBudget: [["number", 64 * 2 ** 20]],
  closeEffort: [["options", { summary: "done" }]],
  reopenEffort: [["string", "billing-export"]],
  expandEffort: [["string", "billing-export"]],
  collapseEffort: [["string", "billing-export"]],
  switchEffort: [["string", "billing-export"]],
  searchEfforts: [["string", "billing export"]],
  findEfforts: [["string", "billing export"]],
  findMessages: [["string", "billing export"]],
  recall: [["string", "billing export"], ["optionalString", "ambient"]],
  enableEmbeddings: [["string", "mock-embed"]],
  refreshEmbeddings: [["object", { baseUrl: "http://127.0.0.1:9/v1", model: "mock-embed", maxTexts: 0 }]],
  beginTurn: [["string", "hello"]],
  endTurn: [["string", "hi"]],
  executeTool: [["string", "effort_status"], ["toolArgs", "{}"]],
  loadLogsForTool: [["string", "expand_effort"], ["string", "{}"]],
  runTurn: [["string", "hello"], ["object", offline]],
  setOptions: [["options", {}]],
  setContextMode: [["string", "light"]],
  pin: [["string", "summary:billing-export"], ["string", "leased"], ["optionalNumber", 3], ["optionalString", undefined]],
  unpin: [["string", "summary:billing-export"]],
  attach: [["string", "notes.txt"], ["string", "some text"], ["optionalString", "file"], ["optionalString", undefined]],
  expandAttachment: [["string", "att-1"]],
  compressAttachment: [["string", "att-1"]],
  fork: [["number", 0], ["string", "a fork"]],
  closeEffortWith: [["object", { summarize: () => "A summary." }]],
  runToolCalls: [["response", { role: "assistant", content: null, tool_calls: [] }], ["options", {}]],
  streamTurn: [["string", "hello"], ["options", offline]],
  contextMessages: [["options", {}]],
};
// Methods whose refusal arrives when their result is used: the turn of `streamTurn` starts at
// the call, and runTurn's option checks reject its first event.
const SESSION_CALLS = {
  streamTurn: async (s, args) => {
    await s.streamTurn(...args).next();
  },
};
const SESSION_STATICS = {
  fromJSON: [["document", undefined /* set below */], ["counter", undefined]],
};
const STORE_METHODS = {
  create: [["string", "a name"], ["options", {}], ["counter", undefined]],
  load: [["string", "no-such-id"], ["counter", undefined]],
  save: [["session", undefined /* set below */]],
  turnTelemetry: [["string", "no-such-id"], ["number", 1]],
  rename: [["string", "no-such-id"], ["string", "new name"]],
  delete: [["string", "no-such-id"]],
  exportSession: [["string", "no-such-id"]],
  importSession: [["document", undefined /* set below */], ["string", "imported"], ["counter", undefined]],
  importCcmFiles: [["object", { manifest: "id: x\n" }], ["string", "imported"], ["options", {}], ["counter", undefined]],
  importSessionAs: [["string", "kept-id"], ["document", undefined /* set below */], ["string", "imported"], ["number", 1], ["number", 2]],
};
const STORE_STATICS = {
  open: [["options", { backend: "localstorage", name: "boundary" }]],
  // A valid table or file functions would open a store; `{}` has no methods, so a call with
  // only one argument wrong is refused for that argument or for the empty object, both codes
  // `argument`.
  openHost: [["object", {}]],
  openFiles: [["string", "boundary-files"], ["object", {}]],
  deleteDatabase: [["string", "boundary-none"]],
};
// FileSessionStore (Node): the same methods as SessionStore, checked in JavaScript.
const FILE_STORE_METHODS = {
  create: [["string", "a name"], ["options", {}], ["counter", undefined]],
  load: [["string", "no-such-id"], ["counter", undefined]],
  save: [["session", undefined /* set below */]],
  turnTelemetry: [["string", "no-such-id"], ["number", 1]],
  rename: [["string", "no-such-id"], ["string", "new name"]],
  delete: [["string", "no-such-id"]],
  exportSession: [["string", "no-such-id"]],
  importSession: [["document", undefined /* set below */], ["string", "imported"], ["counter", undefined]],
};
const FILE_STORE_STATICS = {
  open: [["options", { directory: undefined /* set below */ }]],
};
const FUNCTIONS = {
  countTokens: [["string", "hello"], ["string", "o200k_base"]],
  encodingLoaded: [["string", "o200k_base"]],
  installEncoding: [["string", "o200k_base"], ["bytes", new Uint8Array(4)]],
  loadEncodingFrom: [["string", "o200k_base"], ["string", "http://127.0.0.1:9/none.ccmt"], ["optionalFunction", () => {}]],
  loadEncoding: [["string", "o200k_base"], ["options", {}]],
  setTableLoader: [["function", () => new Uint8Array(0)]],
  setDefaultMemoryBudget: [["number", 256 * 2 ** 20]],
};
// Functions without parameters: nothing to check but that they exist.
const NO_PARAMETERS = new Set(["toolDefinitions", "hasExactTokenCounts", "memoryUsage"]);

// The methods a class defines (not getters, not `free`), as the package exports them.
function methodsOf(target) {
  return Object.getOwnPropertyNames(target).filter((key) => {
    if (["constructor", "free", "length", "name", "prototype"].includes(key) || key.startsWith("__")) return false;
    return typeof Object.getOwnPropertyDescriptor(target, key).value === "function";
  });
}

test("every exported function and method with parameters has an entry in the table", () => {
  const missing = [];
  const check = (names, table, where) => {
    for (const name of names) {
      if (!(name in table) && !NO_PARAMETERS.has(name)) missing.push(`${where}${name}`);
    }
  };
  check(methodsOf(Session.prototype).filter((m) => Session.prototype[m].length > 0), SESSION_METHODS, "Session.prototype.");
  check(methodsOf(Session).filter((m) => Session[m].length > 0), SESSION_STATICS, "Session.");
  check(methodsOf(SessionStore.prototype).filter((m) => SessionStore.prototype[m].length > 0), STORE_METHODS, "SessionStore.prototype.");
  check(methodsOf(SessionStore).filter((m) => SessionStore[m].length > 0), STORE_STATICS, "SessionStore.");
  check(methodsOf(FileSessionStore.prototype).filter((m) => FileSessionStore.prototype[m].length > 0), FILE_STORE_METHODS, "FileSessionStore.prototype.");
  check(methodsOf(FileSessionStore).filter((m) => FileSessionStore[m].length > 0), FILE_STORE_STATICS, "FileSessionStore.");
  const functions = Object.entries(ccm)
    // PostgresSessionStore and its table are JavaScript over `pg`, checked in postgres.test.mjs.
    .filter(([name, value]) => typeof value === "function" && value !== Session && value !== SessionStore && value !== FileSessionStore && value !== ccm.PostgresSessionStore && value !== ccm.PostgresRecordTable)
    .map(([name]) => name);
  check(functions, FUNCTIONS, "");
  assert.deepEqual(missing, [], "exports without a row in the boundary table (add one, with the checks in Rust)");
  // And the table names nothing that does not exist.
  for (const name of Object.keys(SESSION_METHODS)) assert.equal(typeof Session.prototype[name], "function", name);
  for (const name of Object.keys(STORE_METHODS)) assert.equal(typeof SessionStore.prototype[name], "function", name);
});

// The wrong values for an argument of `kind`, with a label each.
function wrongValues(kind) {
  const spec = KINDS[kind];
  return [
    ...spec.wrong.map((name) => [name, WRONG_TYPES[name]]),
    ...(spec.extra ?? []).map((value) => [typeof value === "object" ? JSON.stringify(value, (k, v) => (typeof v === "bigint" ? `${v}n` : v)) : String(value), value]),
  ];
}

// Calls `call(args)` once for each wrong value of each argument (the others valid) and checks
// the coded error and that `state()` did not change.
async function refusesEveryWrongArgument(label, params, call, state) {
  let checked = 0;
  for (let index = 0; index < params.length; index++) {
    const [kind] = params[index];
    for (const [wrongLabel, wrong] of wrongValues(kind)) {
      const args = params.map(([, valid]) => valid);
      args[index] = wrong;
      const before = await state();
      let thrown;
      try {
        await call(args);
      } catch (error) {
        thrown = error;
      }
      const what = `${label} with argument ${index + 1} (${kind}) = ${wrongLabel}`;
      assert.ok(thrown instanceof Error, `${what}: expected an Error, got ${thrown}`);
      const expectedCodes = kind === "options" && wrongLabel.startsWith("{") && label.includes("Options") ? ["config"] : ["argument", "config"];
      assert.ok(expectedCodes.includes(thrown.code), `${what}: code ${thrown.code}: ${thrown.message}`);
      assert.ok(!/[a-z]+_[a-z]+\(|Some\(|None\b|\bu32\b|\bf64\b|unwrap|null pointer|memory access/.test(thrown.message), `${what}: the message has Rust words: ${thrown.message}`);
      assert.equal(await state(), before, `${what}: the state changed`);
      checked++;
    }
  }
  return checked;
}

function newSession() {
  const s = new Session();
  s.beginTurn("Let's look at the billing export");
  s.openEffort("billing export");
  s.endTurn("Sure.");
  s.beginTurn("and now?");
  return s;
}

test("every Session method refuses wrong argument types and ranges with code argument, changing nothing", async () => {
  const s = newSession();
  const state = () => JSON.stringify([s.toJSON(), s.inTurn, s.activeEffort]);
  let checked = 0;
  for (const [method, params] of Object.entries(SESSION_METHODS)) {
    const call = SESSION_CALLS[method] ?? ((session, args) => session[method](...args));
    checked += await refusesEveryWrongArgument(`Session.${method}`, params, (args) => call(s, args), state);
  }
  const document = JSON.stringify(newSession().toJSON());
  SESSION_STATICS.fromJSON[0][1] = document;
  checked += await refusesEveryWrongArgument("Session.fromJSON", SESSION_STATICS.fromJSON, (args) => Session.fromJSON(...args), state);
  checked += await refusesEveryWrongArgument("new Session", [["options", {}], ["counter", undefined]], (args) => new Session(...args), state);
  assert.ok(checked > 150, `${checked} wrong calls checked`);
});

test("every SessionStore method refuses wrong argument types with code argument, storing nothing", async () => {
  const store = await SessionStore.open({ backend: "localstorage", name: "boundary" });
  const stored = await store.create("kept");
  const state = async () => JSON.stringify([await store.list(), localStorage.snapshot()]);
  STORE_METHODS.save[0][1] = stored;
  STORE_METHODS.importSession[0][1] = JSON.stringify(newSession().toJSON());
  STORE_METHODS.importSessionAs[1][1] = JSON.stringify(newSession().toJSON());
  let checked = 0;
  for (const [method, params] of Object.entries(STORE_METHODS)) {
    checked += await refusesEveryWrongArgument(`SessionStore.${method}`, params, (args) => store[method](...args), state);
  }
  for (const [method, params] of Object.entries(STORE_STATICS)) {
    checked += await refusesEveryWrongArgument(`SessionStore.${method}`, params, (args) => SessionStore[method](...args), state);
  }
  assert.ok(checked > 60, `${checked} wrong calls checked`);
});

test("every FileSessionStore method refuses wrong argument types with code argument, writing nothing", async () => {
  const directory = mkdtempSync(join(tmpdir(), "ccm-boundary-"));
  try {
    const store = await FileSessionStore.open({ directory });
    const stored = await store.create("kept");
    const state = async () => JSON.stringify(await store.list());
    FILE_STORE_METHODS.save[0][1] = stored;
    FILE_STORE_METHODS.importSession[0][1] = JSON.stringify(newSession().toJSON());
    FILE_STORE_STATICS.open[0][1] = { directory };
    let checked = 0;
    for (const [method, params] of Object.entries(FILE_STORE_METHODS)) {
      checked += await refusesEveryWrongArgument(`FileSessionStore.${method}`, params, (args) => store[method](...args), state);
    }
    for (const [method, params] of Object.entries(FILE_STORE_STATICS)) {
      checked += await refusesEveryWrongArgument(`FileSessionStore.${method}`, params, (args) => FileSessionStore[method](...args), state);
    }
    assert.ok(checked > 60, `${checked} wrong calls checked`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("the module functions refuse wrong argument types with code argument", async () => {
  const state = () => String(ccm.encodingLoaded("o200k_base"));
  let checked = 0;
  for (const [name, params] of Object.entries(FUNCTIONS)) {
    checked += await refusesEveryWrongArgument(name, params, (args) => ccm[name](...args), state);
  }
  assert.ok(checked > 30, `${checked} wrong calls checked`);
  assert.equal(countTokens("hello world", "o200k_base"), 2, "counting still works");
});

test("unknown keys are refused in every options object, naming the key", async () => {
  const s = newSession();
  assert.throws(() => s.closeEffort({ idd: "billing-export" }), { code: "argument", message: "closeEffort: unknown key `idd` in args; the keys are id, summary" });
  assert.equal(s.activeEffort, "billing-export", "nothing was concluded");
  await assert.rejects(s.runTurn("hi", { provider: "offline", modle: "x" }), (e) => e.code === "argument" && e.message.startsWith("runTurn: unknown key `modle` in options"));
  assert.equal(s.inTurn, true);
  await assert.rejects(SessionStore.open({ backnd: "localstorage" }), (e) => e.code === "argument" && e.message.startsWith("SessionStore.open: unknown key `backnd`"));
  assert.throws(() => s.setOptions({ decayTreshold: 3 }), (e) => e.code === "config" && e.message.startsWith("unknown session option `decayTreshold`"));
  const store = await SessionStore.open({ backend: "localstorage", name: "keys" });
  await assert.rejects(store.importCcmFiles({ manifest: "x", efforst: {} }, "n"), (e) => e.code === "argument" && e.message.includes("unknown key `efforst`"));
});

test("option values of the wrong type are named in JavaScript's words, not serde's", async () => {
  assert.throws(() => new Session({ decayThreshold: "3" }), { code: "config", message: "new Session: options.decayThreshold must be a number, got a string" });
  assert.throws(() => new Session({ encoding: 200 }), { code: "config", message: "new Session: options.encoding must be a string, got a number" });
  assert.throws(() => new Session({ maxNameChars: 10n }), { code: "config", message: "new Session: options.maxNameChars must be a number, got a BigInt" });
  const s = newSession();
  await assert.rejects(s.runTurn("x", { provider: "offline", stream: "yes" }), { code: "argument", message: "runTurn: options.stream must be a boolean, got a string" });
  await assert.rejects(s.runTurn("x", { provider: "offline", headers: { "x-team": 7 } }), { code: "argument", message: "runTurn: options.headers must be an object of strings, got an object" });
  await assert.rejects(s.runTurn("x", { provider: "offline", onText: "print" }), { code: "argument", message: "runTurn: options.onText must be a function, got a string" });
  await assert.rejects(s.runTurn("x", { provider: 1 }), { code: "argument", message: "runTurn: options.provider must be a string, got a number" });
  assert.equal(s.inTurn, true, "the turn begun before is still the one in progress");
});

test("numbers are checked for range: no negative or huge turn, TTL or budget wraps around", async () => {
  const s = newSession();
  s.endTurn("done");
  const before = JSON.stringify(s.toJSON());
  assert.throws(() => s.fork(-1, "f"), { code: "argument", message: "fork: turn must be a whole number from 0 to 9,007,199,254,740,991, got -1" });
  assert.throws(() => s.fork(2 ** 32 + 1, "f"), (e) => e.code === "branch", "a turn beyond the session is the core's refusal, not a wrapped 1");
  assert.throws(() => s.pin("summary:billing-export", "leased", -1), { code: "argument", message: "pin: ttlTurns must be a whole number from 1 to 1,000,000, got -1" });
  assert.throws(() => s.pin("summary:billing-export", "leased", 2 ** 32), { code: "argument" });
  await assert.rejects(s.runTurn("x", { provider: "offline", maxTokens: -1 }), { code: "argument", message: "runTurn: options.maxTokens must be a whole number from 0 to 4,294,967,295, got -1" });
  await assert.rejects(s.runTurn("x", { provider: "offline", idleTimeoutMs: 2 ** 40 }), { code: "argument" });
  assert.throws(() => new Session({ contextWindow: 2 ** 60 }), { code: "config" });
  assert.equal(JSON.stringify(s.toJSON()), before, "nothing changed");
});

test("a document with integers beyond 2^53 is refused by fromJSON and importSession, changing nothing", async () => {
  const s = newSession();
  s.endTurn("ok");
  const text = JSON.stringify(s.toJSON()).replace(/"next_pin_id":\d+/, '"next_pin_id":9007199254740993');
  assert.ok(text.includes("9007199254740993"));
  assert.throws(() => Session.fromJSON(text), (e) => e.code === "snapshot" && e.message.includes("next_pin_id") && e.message.includes("2^53"));
  const store = await SessionStore.open({ backend: "localstorage", name: "big-numbers" });
  const before = JSON.stringify(await store.list());
  await assert.rejects(store.importSession(text, "big"), { code: "snapshot" });
  assert.equal(JSON.stringify(await store.list()), before, "nothing was stored");
});

test("a document with a text longer than any limit is refused before it is recounted", async () => {
  const s = newSession();
  s.endTurn("MARKER");
  // Another counting rule, so that loading would recount every text.
  const text = JSON.stringify(s.toJSON())
    .replace("MARKER", "a".repeat(16_000_001))
    .replace(/"counted_with":"[^"]*"/, '"counted_with":"approximate"');
  const started = performance.now();
  assert.throws(() => Session.fromJSON(text), (e) => e.code === "too_large" && e.message.includes("16,000,001 characters"));
  const store = await SessionStore.open({ backend: "localstorage", name: "long-texts" });
  await assert.rejects(store.importSession(text, "long"), { code: "too_large" });
  assert.deepEqual(await store.list(), [], "nothing was stored");
  assert.ok(performance.now() - started < 10_000, "refused without counting");
});

test("a freed object gives code freed, and so does passing one", async () => {
  const s = newSession();
  s.free();
  assert.throws(() => s.beginTurn("x"), { code: "freed", message: "beginTurn: this Session was freed (free() was called on it), so it can no longer be used" });
  assert.throws(() => s.turn, { code: "freed" });
  assert.throws(() => s.toJSON(), { code: "freed" });
  s.free(); // freeing twice does nothing
  const store = await SessionStore.open({ backend: "localstorage", name: "freed" });
  await assert.rejects(async () => store.save(s), { code: "freed" });
  store.free();
  assert.throws(() => store.list(), { code: "freed" });
  assert.throws(() => store.backend, { code: "freed" });
});

test("a token counter that returns NaN, a negative or a non-number gives code counter and leaves the session usable", () => {
  for (const bad of [NaN, -1, "7", undefined, 1.5, Infinity]) {
    let armed = false;
    const s = new Session({}, { name: "host", count: (text) => (armed && text.includes("boom") ? bad : 1) });
    armed = true;
    assert.throws(() => s.beginTurn("boom"), (e) => e.code === "counter" && e.message.includes("instead of a whole number of tokens"), String(bad));
    // The session is not stuck "in use" by the failed call.
    armed = false;
    assert.doesNotThrow(() => s.inTurn, String(bad));
  }
  assert.throws(() => new Session({}, { name: "nan", count: () => NaN }), { code: "counter" });
});

test("size limits: over the limit is code too_large before anything is copied; the limits are options", async () => {
  const s = new Session({ maxMessageChars: 20, maxNameChars: 10, maxAttachmentChars: 30 });
  assert.throws(() => s.beginTurn("x".repeat(21)), { code: "too_large", message: "beginTurn: userText is 21 characters long, more than the limit of 20 (the session option maxMessageChars); nothing was changed" });
  assert.equal(s.inTurn, false);
  s.beginTurn("x".repeat(20));
  assert.throws(() => s.openEffort("n".repeat(11)), { code: "too_large" });
  assert.throws(() => s.attach("a.txt", "t".repeat(31)), { code: "too_large" });
  assert.equal(typeof s.attach("a.txt", "t".repeat(30)), "string");
  // A model's call over a limit is a bad call like any other: ok false, the reason, no throw.
  const overLong = s.executeTool("open_effort", { name: "n".repeat(40) });
  assert.equal(overLong.ok, false);
  assert.match(overLong.result.error, /more than the limit of 20 \(the session option maxMessageChars\)/);
  assert.throws(() => new Session({ maxMessageChars: 0 }), { code: "config" });
  assert.throws(() => new Session({ maxMessageChars: 16_000_001 }), { code: "config" });
  assert.throws(() => s.endTurn("y".repeat(21)), { code: "too_large" });
  s.endTurn("y".repeat(20));
  s.setOptions({ maxMessageChars: 100 });
  s.beginTurn("x".repeat(100));
  // Like every option, a limit not given to setOptions takes its default again.
  assert.equal(s.openEffort("n".repeat(11)).id, "n".repeat(11));
  // The defaults: a million characters per message, a thousand per name.
  const d = new Session();
  assert.throws(() => d.beginTurn("z".repeat(1_000_001)), { code: "too_large" });
  assert.throws(() => d.openEffort("n".repeat(1_001)), { code: "too_large" });
});

test("a 160 MB string is refused everywhere with too_large, and the module works afterwards", async () => {
  const huge = "a".repeat(160_000_000);
  const s = newSession();
  const before = JSON.stringify(s.toJSON());
  const started = performance.now();
  assert.throws(() => s.endTurn(huge), { code: "too_large" });
  assert.throws(() => s.attach("big.txt", huge), { code: "too_large" });
  assert.equal(s.executeTool("open_effort", huge).ok, false);
  assert.throws(() => s.searchEfforts(huge), { code: "too_large" });
  assert.throws(() => s.openEffort(huge), { code: "too_large" });
  assert.throws(() => countTokens(huge, "o200k_base"), { code: "too_large" });
  assert.throws(() => Session.fromJSON(huge), { code: "too_large" });
  assert.throws(() => new Session({ systemPrompt: huge }), { code: "too_large" });
  await assert.rejects(s.runTurn(huge, { provider: "offline" }), { code: "too_large" });
  const store = await SessionStore.open({ backend: "localstorage", name: "huge" });
  await assert.rejects(store.create(huge), { code: "too_large" });
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 2000, `refusing took ${elapsed} ms: nothing was copied or counted`);
  assert.equal(JSON.stringify(s.toJSON()), before, "nothing changed");
  // The module still works, for this session and for new ones.
  s.endTurn("fine");
  const fresh = new Session();
  fresh.beginTurn("still working");
  assert.equal(fresh.endTurn("yes").turn, 1);
  assert.equal(countTokens("hello world", "o200k_base"), 2);
});

// Last in this file: it stops the module for the rest of the process.
test("after a WebAssembly failure every call says reload_required, and nothing half-changed is used", () => {
  const kept = newSession();
  // A trap cannot be provoked on purpose without exhausting memory; a RuntimeError thrown
  // from inside a call (here by the counter's `name`, read while the module runs) reaches the
  // guard the same way a trap does.
  const trapping = { get name() { throw new WebAssembly.RuntimeError("unreachable"); }, count: () => 1 };
  assert.throws(() => new Session({}, trapping), (e) => e.code === "reload_required" && /reload the page/.test(e.message));
  for (const call of [() => kept.beginTurn("x"), () => kept.turn, () => new Session(), () => countTokens("a", "o200k_base"), () => Session.fromJSON("{}")]) {
    assert.throws(call, { code: "reload_required" });
  }
});
