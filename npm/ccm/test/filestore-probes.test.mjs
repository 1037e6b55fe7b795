// FileSessionStore under kill-and-race probes (issue 26): real Node processes save, delete and
// list one directory at the same time, and are killed with SIGKILL at random points. These are
// the Node counterparts of ccm-store's process tests (crates/ccm-store/tests/files.rs) and of
// the conformance suite's process halves (crates/ccm-store/src/conformance.rs): each test's name
// starts with the name of the Rust case it mirrors (`race_turns` + `check_after_race`,
// `save_until_killed` + `check_after_kill`, `list_rename_delete`, `damaged_records` and
// `damaged_row`), or with `node_` where the case is the Node store's own (the module stopped by
// a trap, temporaries). The number of kill-and-race rounds is CCM_PROBE_ROUNDS (default 50).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fork, spawnSync } from "node:child_process";
import {
  existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { FileSessionStore } from "cognitive-context";

const PACKAGE = import.meta.resolve("cognitive-context");
const ROUNDS = Number(process.env.CCM_PROBE_ROUNDS ?? 50);
// How long a save may wait for a lock that a killed process left: the old store waited up to
// 30 seconds for it; a dead holder must be seen at once.
const AFTER_KILL_LIMIT_MS = 3000;

function scratch(what) {
  return mkdtempSync(join(tmpdir(), `ccm-probe-${what}-`));
}

// One worker script for every probe: it takes orders over the IPC channel and reports each
// outcome before going on, so the parent knows what was acknowledged when it kills it.
const WORKER = `
import { FileSessionStore } from ${JSON.stringify(PACKAGE)};
const [directory] = process.argv.slice(2);
const store = await FileSessionStore.open({ directory });
let stop = false;
let running = null;
const say = (message) => new Promise((resolve) => process.send(message, resolve));

// Takes turns on session \`id\`, each saved at once; a refused save (conflict) reloads and tries
// again, as ccm_store::conformance::race_turns does. Runs until told to stop.
async function race(id, label) {
  let n = 0;
  while (!stop) {
    let session;
    try {
      session = await store.load(id);
    } catch (error) {
      await say({ kind: "error", label, at: "load", code: error.code ?? null, message: String(error.message) });
      if (error.code === "not_found") {
        await say({ kind: "ended", label });
        return;
      }
      continue;
    }
    const text = label + " turn " + n;
    session.beginTurn(text);
    session.endTurn("ack " + text);
    try {
      const report = await store.save(session);
      n++;
      await say({ kind: "acked", label, text, revision: report.revision });
    } catch (error) {
      if (error.code !== "conflict") {
        await say({ kind: "error", label, at: "save", code: error.code ?? null, message: String(error.message) });
      }
      if (error.code === "conflict" || error.code === "not_found") {
        await say({ kind: "refused", label, code: error.code, message: String(error.message) });
      }
    }
    session.free();
    // Back to the event loop between turns, as a server would be: an IPC write can complete at
    // once, and a loop of promises alone would never read the order to stop.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

process.on("message", async (order) => {
  if (order.kind === "race") {
    stop = false;
    running = race(order.id, order.label);
    await say({ kind: "started" });
  } else if (order.kind === "stop") {
    stop = true;
    await running;
    await say({ kind: "stopped" });
  } else if (order.kind === "exit") {
    process.exit(0);
  }
});
await say({ kind: "ready" });
`;

/** A worker process on `directory`, with its messages collected in order. */
function startWorker(script, directory) {
  const child = fork(script, [directory], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
  const worker = { child, messages: [], stderr: "", waiters: [], exited: false };
  child.stderr.on("data", (chunk) => { worker.stderr += chunk; });
  child.on("message", (message) => {
    worker.messages.push(message);
    worker.waiters = worker.waiters.filter((waiter) => !waiter());
  });
  worker.exit = new Promise((resolve) => child.on("exit", () => {
    worker.exited = true;
    worker.waiters = worker.waiters.filter((waiter) => !waiter());
    resolve();
  }));
  return worker;
}

/** Resolves with the first message of `kind` after the `from`th, or fails after `limitMs`. */
function nextMessage(worker, kind, from = 0, limitMs = 20_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${kind}" message from the worker within ${limitMs} ms; its stderr: ${worker.stderr}`)), limitMs);
    const check = () => {
      const found = worker.messages.slice(from).find((m) => m.kind === kind);
      if (found) {
        clearTimeout(timer);
        resolve(found);
        return true;
      }
      if (worker.exited) {
        clearTimeout(timer);
        reject(new Error(`the worker exited before sending "${kind}"; its stderr: ${worker.stderr}`));
        return true;
      }
      return false;
    };
    if (!check()) worker.waiters.push(check);
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The user messages of a stored session's export, and its repairs. */
async function exported(store, id) {
  const document = JSON.parse(await store.exportSession(id));
  return { document, texts: document.ambient.filter((m) => m.role === "user").map((m) => m.content), repairs: document.repairs ?? [] };
}

/** Files under `dir` left by an atomic replace or a lock takeover that did not finish. */
function leftovers(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...leftovers(path));
    else if (/\.(tmp|stale)-|\.break$/.test(entry.name)) found.push(path);
  }
  return found;
}

test("race_turns + check_after_race, with kills: two racing processes, one killed at a random point each round; no revision is acknowledged twice, no acknowledged turn is lost, and a dead process's lock never blocks", async () => {
  const directory = scratch("race");
  const scripts = scratch("race-scripts");
  const script = join(scripts, "worker.mjs");
  writeFileSync(script, WORKER);
  const workers = [];
  try {
    const store = await FileSessionStore.open({ directory });
    const created = await store.create("Raced and killed");
    const id = created.storeId;
    const acked = [];
    const parentAcked = [];
    const errors = [];
    let labels = 0;
    // A worker for each racing slot; a killed one is replaced by a spare started beforehand, so
    // a round waits for no process start.
    const spawnReady = async () => {
      const worker = startWorker(script, directory);
      workers.push(worker);
      await nextMessage(worker, "ready");
      return worker;
    };
    const launch = async (worker) => {
      const label = `w${labels++}`;
      worker.label = label;
      worker.child.send({ kind: "race", id, label });
      await nextMessage(worker, "started");
      return worker;
    };
    const racing = [await launch(await spawnReady()), await launch(await spawnReady())];
    // A spare that fails to start fails the test where it is awaited, not as a stray rejection.
    const spareOf = () => {
      const pending = spawnReady();
      pending.catch(() => {});
      return pending;
    };
    let spare = spareOf();
    let slowest = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(5 + Math.floor(Math.random() * 40));
      const slot = Math.floor(Math.random() * racing.length);
      const victim = racing[slot];
      victim.child.kill("SIGKILL");
      // At once, before the kill is even reaped: this process takes a turn itself, as a server
      // would, and the other racer goes on. Neither may wait for the dead one's lock.
      const started = Date.now();
      const loaded = await store.load(id);
      const text = `parent turn ${round}`;
      loaded.beginTurn(text);
      loaded.endTurn(`ack ${text}`);
      try {
        parentAcked.push({ kind: "acked", label: "parent", text, revision: (await store.save(loaded)).revision });
      } catch (error) {
        if (error.code !== "conflict") throw error;
      }
      loaded.free();
      const other = racing[1 - slot];
      const before = other.messages.filter((m) => m.kind === "acked").length;
      await new Promise((resolve, reject) => {
        const limit = setTimeout(() => reject(new Error(`round ${round}: the surviving racer saved nothing for ${AFTER_KILL_LIMIT_MS} ms after the kill`)), AFTER_KILL_LIMIT_MS);
        const check = () => {
          if (other.messages.filter((m) => m.kind === "acked").length > before || other.exited) {
            clearTimeout(limit);
            resolve();
            return true;
          }
          return false;
        };
        if (!check()) other.waiters.push(check);
      });
      slowest = Math.max(slowest, Date.now() - started);
      await victim.exit;
      racing[slot] = await launch(await spare);
      spare = spareOf();
    }
    for (const worker of racing) {
      const from = worker.messages.length;
      worker.child.send({ kind: "stop" });
      await nextMessage(worker, "stopped", from);
    }
    (await spare).child.send({ kind: "exit" });
    acked.push(...parentAcked);
    for (const worker of workers) {
      for (const m of worker.messages) {
        if (m.kind === "acked") acked.push(m);
        if (m.kind === "error") errors.push(m);
      }
    }
    assert.deepEqual(errors, [], "no racer failed other than by a refused save");
    const revisions = acked.map((m) => m.revision);
    const twice = revisions.filter((r, i) => revisions.indexOf(r) !== i);
    assert.deepEqual(twice, [], "no revision was acknowledged to two saves");

    const reopened = await FileSessionStore.open({ directory });
    const { texts, repairs } = await exported(reopened, id);
    assert.deepEqual(repairs, [], "the export needs no repair");
    for (const m of acked) {
      assert.equal(texts.filter((t) => t === m.text).length, 1, `the acknowledged turn "${m.text}" (revision ${m.revision}) is stored once`);
    }
    assert.equal(new Set(texts).size, texts.length, "no turn is stored twice");
    const session = await reopened.load(id);
    assert.deepEqual(session.loadProblems, []);
    // Every save added one turn: the stored turns are the saves that committed, acknowledged
    // or cut off by the kill after their commit.
    assert.equal(session.turn, session.revision - 1);
    assert.ok(texts.length >= acked.length);
    // Its export imports, and the copy opens.
    const copy = await reopened.importSession(await reopened.exportSession(id), "Copy");
    assert.deepEqual((await reopened.load(copy.id)).loadProblems, []);
    const listed = await reopened.list();
    assert.deepEqual(listed.filter((info) => info.damaged), [], "nothing is listed as damaged");
    // Opening cleared what the killed processes left, and no lock is held any more.
    assert.deepEqual(leftovers(directory), []);
    assert.deepEqual(readdirSync(join(directory, "locks")).filter((n) => n.endsWith(".owner")), []);
    console.log(`kill-and-race: ${ROUNDS} rounds, ${acked.length} saves acknowledged, ${texts.length} turns stored, slowest recovery after a kill ${slowest} ms`);
  } finally {
    for (const worker of workers) if (!worker.exited) worker.child.kill("SIGKILL");
    await Promise.all(workers.map((w) => w.exit));
    rmSync(directory, { recursive: true, force: true });
    rmSync(scripts, { recursive: true, force: true });
  }
});

test("node_snapshot_at_save: a change made while a save is in flight is entirely in that save or entirely in the next, at every timing", async () => {
  const directory = scratch("snapshot");
  try {
    const store = await FileSessionStore.open({ directory });
    const other = await FileSessionStore.open({ directory });
    // Each timing is a moment after `save` is called and before its promise settles, or just
    // after; the change is a whole turn, or its first half with the second half later.
    const timings = {
      "in the same tick": (change) => change(),
      "in a microtask": (change) => queueMicrotask(change),
      "in a later task": (change) => setImmediate(change),
      "after a timer": (change) => setTimeout(change, 0),
    };
    let refusals = 0;
    for (const [timing, at] of Object.entries(timings)) {
      for (const half of [false, true]) {
        const session = await store.create(`Snapshot ${timing}`);
        session.beginTurn("the first question");
        session.endTurn("the first answer");
        await store.save(session);
        const revision = session.revision;
        let changed;
        const done = new Promise((resolve) => { changed = resolve; });
        const saving = store.save(session);
        // While the save is in flight the session may refuse a change with code "busy", whole
        // and at once; the change is then made again once the save is done, for the next save.
        let refused = false;
        const change = () => {
          session.beginTurn("the second question");
          if (!half) session.endTurn("the second answer");
        };
        at(() => {
          try {
            change();
          } catch (error) {
            assert.equal(error.code, "busy", `${timing}: ${error.message}`);
            // The refusal says that nothing was changed and what to do.
            assert.match(error.message, /^a save of this session is in progress and nothing was changed: wait for the save to finish and try again$/, timing);
            refusals++;
            assert.equal(session.inTurn, false, `${timing}: a refused change leaves no turn begun`);
            refused = true;
          }
          changed();
        });
        const report = await saving;
        await done;
        if (refused) change();
        // What the first save stored: the first turn, and the second only if whole.
        const stored = await other.load(session.storeId);
        const texts = stored.toJSON().ambient.map((m) => m.content);
        const what = `${timing}${half ? " (half a turn)" : ""}`;
        assert.ok(
          JSON.stringify(texts) === JSON.stringify(["the first question", "the first answer"]) ||
            (!half && JSON.stringify(texts) === JSON.stringify(["the first question", "the first answer", "the second question", "the second answer"])),
          `${what}: the save stored ${JSON.stringify(texts)}`,
        );
        assert.equal(stored.turn, texts.length / 2, `${what}: the stored turn count matches its messages`);
        assert.equal(report.revision, revision + 1, what);
        stored.free();
        if (half) session.endTurn("the second answer");
        // The next save stores what the first did not, and both copies agree.
        if (session.revision !== revision + 2 || texts.length === 2) await store.save(session);
        const final = await other.load(session.storeId);
        assert.deepEqual(final.toJSON(), session.toJSON(), `${what}: after the next save`);
        assert.deepEqual(final.loadProblems, []);
        final.free();
      }
    }
    // A change in the same tick as the save always meets it in flight, so the wording above
    // was checked.
    assert.ok(refusals >= 2, `${refusals} changes were refused`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("list_rename_delete, with a saving process: a delete during saves wins; the session never comes back, and the saver gets a clear error, never a raw ENOTEMPTY", async () => {
  const directory = scratch("delete");
  const scripts = scratch("delete-scripts");
  const script = join(scripts, "worker.mjs");
  writeFileSync(script, WORKER);
  const workers = [];
  try {
    const store = await FileSessionStore.open({ directory });
    const spawnReady = async () => {
      const worker = startWorker(script, directory);
      workers.push(worker);
      await nextMessage(worker, "ready");
      return worker;
    };
    let saver = await spawnReady();
    let refusals = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const session = await store.create(`Deleted ${round}`);
      const id = session.storeId;
      session.free();
      const current = saver;
      const from = current.messages.length;
      saver.child.send({ kind: "race", id, label: `r${round}` });
      await nextMessage(saver, "started", from);
      await sleep(Math.floor(Math.random() * 25));
      // Every fifth round the saver is killed as the delete runs, as a crashed server would be.
      const kill = round % 5 === 4;
      if (kill) saver.child.kill("SIGKILL");
      await store.delete(id);
      assert.ok(!(await store.list()).some((info) => info.id === id), `round ${round}: deleted, not listed`);
      if (!kill) {
        // The saver goes on until it finds the session gone, and then stops by itself.
        await nextMessage(saver, "ended", from);
        const stopFrom = saver.messages.length;
        saver.child.send({ kind: "stop" });
        await nextMessage(saver, "stopped", stopFrom);
      } else {
        await saver.exit;
        saver = await spawnReady();
      }
      for (const m of current.messages.slice(from)) {
        if (m.kind === "refused") {
          refusals++;
          assert.match(m.message, /deleted/, `round ${round}: a refused save says that the session was deleted: ${m.message}`);
        }
        if (m.kind === "error") {
          assert.ok(m.code === "not_found" && m.at === "load", `round ${round}: the saver failed with ${m.code}: ${m.message}`);
          assert.doesNotMatch(m.message, /ENOTEMPTY|EEXIST|ENOENT/, `round ${round}`);
        }
      }
      // Deleted for good: not listed, not loadable, nothing of it left in sessions/.
      await assert.rejects(store.load(id), { code: "not_found" }, `round ${round}`);
      assert.ok(!(await store.list()).some((info) => info.id === id), `round ${round}: the session came back`);
      assert.ok(!existsSync(join(directory, "sessions", id)), `round ${round}: its folder came back`);
    }
    const reopened = await FileSessionStore.open({ directory });
    assert.deepEqual(await reopened.list(), []);
    assert.deepEqual(readdirSync(join(directory, "trash")), [], "the trash is emptied by the next open");
    console.log(`delete during saves: ${ROUNDS} rounds, ${refusals} saves refused as deleted`);
  } finally {
    for (const worker of workers) if (!worker.exited) worker.child.kill("SIGKILL");
    await Promise.all(workers.map((w) => w.exit));
    rmSync(directory, { recursive: true, force: true });
    rmSync(scripts, { recursive: true, force: true });
  }
});

// Ways the files of a session are found damaged, each as another program or a failing disk
// would leave them. Every one must be listed as damaged, with what is wrong and what to do.
const DAMAGE = {
  "the commit is empty": (folder) => writeFileSync(join(folder, "commit"), ""),
  "the commit's first line is garbled": (folder) => {
    const text = readFileSync(join(folder, "commit"), "utf8");
    writeFileSync(join(folder, "commit"), text.replace("ccm-files-commit 1", "ccm-fXles-commit 1"));
  },
  "the commit's row is cut": (folder) => {
    const text = readFileSync(join(folder, "commit"), "utf8");
    writeFileSync(join(folder, "commit"), text.slice(0, text.indexOf("\n") + 40));
  },
  "the commit is missing": (folder) => unlinkSync(join(folder, "commit")),
  "records.dat is cut short": (folder) => truncateSync(join(folder, "records.dat"), statSync(join(folder, "records.dat")).size - 300),
  "records.dat is missing": (folder) => unlinkSync(join(folder, "records.dat")),
  "the message index is cut short": (folder) => truncateSync(join(folder, "messages.idx"), 64),
  "the ambient log's header is garbled": (folder) => {
    const path = join(folder, "logs", "ambient.seq");
    const bytes = readFileSync(path);
    bytes.fill(0x21, 0, 12);
    writeFileSync(path, bytes);
  },
  "the metrics index is missing": (folder) => unlinkSync(join(folder, "metrics.idx")),
  "the last record's text is overwritten": (folder) => {
    const path = join(folder, "records.dat");
    const bytes = readFileSync(path);
    bytes.fill(0x7b, bytes.length - 20, bytes.length);
    writeFileSync(path, bytes);
  },
};

test("damaged_records + damaged_row, by list: every kind of file damage is listed as damaged with its cause and the way out; healthy sessions are not", async () => {
  const directory = scratch("damage");
  try {
    const store = await FileSessionStore.open({ directory });
    const ids = {};
    for (const kind of [...Object.keys(DAMAGE), "healthy"]) {
      const session = await store.create(kind);
      for (let turn = 0; turn < 4; turn++) {
        session.beginTurn(`question ${turn} about ${kind}`);
        if (turn === 1) session.openEffort("the topic");
        session.endTurn(`answer ${turn} about ${kind}`);
        await store.save(session);
      }
      ids[kind] = session.storeId;
      session.free();
    }
    for (const [kind, damage] of Object.entries(DAMAGE)) damage(join(directory, "sessions", ids[kind]));
    const listed = new Map((await store.list()).map((info) => [info.id, info]));
    const missed = [];
    for (const kind of Object.keys(DAMAGE)) {
      const info = listed.get(ids[kind]);
      if (!info || !info.damaged) {
        missed.push(kind);
        continue;
      }
      // What is wrong, and what to do about it.
      assert.match(info.damaged, /export/i, `${kind}: ${info.damaged}`);
    }
    assert.deepEqual(missed, [], "every kind of damage is listed as damaged");
    assert.equal(listed.get(ids.healthy).damaged, undefined, "the healthy session is not damaged");
    // The way out works: each damaged session's export imports as a healthy copy. A session
    // whose commit is missing is exported after doing what its message says first.
    for (const kind of Object.keys(DAMAGE)) {
      const info = listed.get(ids[kind]);
      if (/create an empty file named commit/.test(info.damaged)) writeFileSync(join(directory, "sessions", ids[kind], "commit"), "");
      const copy = await store.importSession(await store.exportSession(ids[kind]), `${kind} (copy)`);
      const again = (await store.list()).find((info) => info.id === copy.id);
      assert.equal(again.damaged, undefined, `${kind}: the imported copy is healthy`);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("list reads a bounded part of each session: listing 20 sessions of 300 turns costs far less than opening them", async () => {
  const directory = scratch("list-cost");
  try {
    const store = await FileSessionStore.open({ directory });
    const model = await store.create("Model");
    for (let turn = 0; turn < 300; turn++) {
      model.beginTurn(`question ${turn} about the long conversation that fills the file`);
      if (turn % 50 === 0) model.openEffort(`topic ${turn}`);
      model.endTurn(`answer ${turn} about the long conversation that fills the file`);
    }
    await store.save(model);
    const json = await store.exportSession(model.storeId);
    for (let i = 1; i < 20; i++) await store.importSession(json, `Copy ${i}`);
    const time = async (what, times = 3) => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < times; i++) await what();
      return Number(process.hrtime.bigint() - started) / 1e6 / times;
    };
    const list = await time(() => store.list());
    const ids = (await store.list()).map((info) => info.id);
    const load = await time(async () => { for (const id of ids) (await store.load(id)).free(); });
    const exportAll = await time(async () => { for (const id of ids) await store.exportSession(id); }, 1);
    console.log(`20 sessions of 300 turns: list ${list.toFixed(1)} ms, loading each ${load.toFixed(1)} ms, exporting each ${exportAll.toFixed(1)} ms`);
    assert.equal(ids.length, 20);
    assert.deepEqual((await store.list()).filter((info) => info.damaged), [], "healthy sessions are not listed as damaged");
    assert.ok(list < load, `list took ${list} ms, loading every session ${load} ms`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("node_trap_is_not_damage: after a WebAssembly trap, load, list and save say reload_required, never damaged, and the files stay healthy for the next process", async () => {
  const directory = scratch("trap");
  const scripts = scratch("trap-scripts");
  try {
    const script = join(scripts, "trap.mjs");
    writeFileSync(script, `
      import { FileSessionStore, Session } from ${JSON.stringify(PACKAGE)};
      const [directory] = process.argv.slice(2);
      const store = await FileSessionStore.open({ directory });
      const session = await store.create("Before the trap");
      session.beginTurn("a question before the trap");
      session.endTurn("an answer before the trap");
      await store.save(session);
      const id = session.storeId;
      // A RuntimeError raised while the module runs stops it as a trap does (see
      // boundary.test.mjs, which cannot provoke a real trap without exhausting memory).
      const trapping = { get name() { throw new WebAssembly.RuntimeError("unreachable"); }, count: () => 1 };
      try { new Session({}, trapping); } catch (error) { if (error.code !== "reload_required") throw error; }
      const outcomes = {};
      for (const [what, call] of Object.entries({
        load: () => store.load(id),
        list: () => store.list(),
        save: () => store.save(session),
        exportSession: () => store.exportSession(id),
        open: () => FileSessionStore.open({ directory }),
      })) {
        try {
          await call();
          outcomes[what] = { code: null, message: "it worked" };
        } catch (error) {
          outcomes[what] = { code: error.code ?? null, message: String(error.message) };
        }
      }
      process.send({ id, outcomes }, () => process.exit(0));
    `);
    const child = fork(script, [directory], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => { stderr += chunk; });
    let result = null;
    child.once("message", (message) => { result = message; });
    await new Promise((resolve) => child.on("exit", resolve));
    assert.ok(result, `the process with the stopped module reported nothing: ${stderr}`);
    for (const [what, outcome] of Object.entries(result.outcomes)) {
      assert.equal(outcome.code, "reload_required", `${what} after the trap: ${outcome.message}`);
      assert.doesNotMatch(outcome.message, /damaged|cannot be read|unreadable/i, `${what} after the trap`);
    }
    // The file the stopped process had is healthy: a new process opens and lists it as such.
    const store = await FileSessionStore.open({ directory });
    const [info] = await store.list();
    assert.equal(info.damaged, undefined);
    const session = await store.load(result.id);
    assert.deepEqual(session.loadProblems, []);
    assert.equal(session.turn, 1);
    assert.deepEqual(readdirSync(join(directory, "locks")).filter((n) => n.endsWith(".owner")), [], "the stopped process holds no lock");
  } finally {
    rmSync(directory, { recursive: true, force: true });
    rmSync(scripts, { recursive: true, force: true });
  }
});

test("node_temporaries: what killed processes left (temporary files, set-aside lock files, locks) is removed by the next open, and a live process's temporary stays", async () => {
  const directory = scratch("temporaries");
  try {
    const store = await FileSessionStore.open({ directory });
    const session = await store.create("Left behind");
    session.beginTurn("a question");
    session.endTurn("an answer");
    await store.save(session);
    const folder = join(directory, "sessions", session.storeId);
    // A process that has exited: its id names no process now.
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    const host = hostname();
    const left = [
      join(folder, `commit.tmp-${dead}-0a1b2c3d-0`),
      join(folder, `intent.tmp-${dead}-7`),
      join(directory, `layout.tmp-${dead}-1`),
      join(directory, "locks", `${session.storeId}.lock.owner.stale-${dead}-0a1b2c3d-2`),
    ];
    for (const path of left) writeFileSync(path, "half a write");
    // A lock that a killed process held: the next save must not wait for it.
    writeFileSync(join(directory, "locks", `${session.storeId}.lock.owner`), JSON.stringify({ pid: dead, host, time_ms: Date.now(), holder: "node" }));
    const live = join(folder, `commit.tmp-${process.pid}-0a1b2c3d-9`);
    writeFileSync(live, "a write in progress");
    const reopened = await FileSessionStore.open({ directory });
    for (const path of left) assert.ok(!existsSync(path), `${path} is removed`);
    assert.ok(existsSync(live), "a live process's temporary stays");
    rmSync(live);
    const again = await reopened.load(session.storeId);
    again.beginTurn("a second question");
    again.endTurn("a second answer");
    const started = Date.now();
    await reopened.save(again);
    assert.ok(Date.now() - started < AFTER_KILL_LIMIT_MS, "the dead process's lock is taken over at once");
    assert.deepEqual(leftovers(directory), []);
    assert.equal((await reopened.list()).length, 1);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
