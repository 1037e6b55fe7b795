// A process survives one runaway session, and freed sessions give their memory back (issue 26):
// the load run of load-run.mjs, which bench/memory/load.mjs runs at full scale
// (scripts/bench-memory, 200 sessions × 200 turns), here at a reduced scale, with assertions.
// One process serves many sessions round-robin as a server would (open, run a turn against the offline model, keep the session, free it); the module's
// memory must stay flat from the first tenth of the run to the last, and a runaway session
// held to a small budget is refused while every turn of the others goes through.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import * as ccm from "cognitive-context";
import { loadRun, RUNAWAY_BUDGET, userText } from "./load-run.mjs";

const { Session, FileSessionStore, memoryUsage } = ccm;

// `everyTurn`: whether the runaway is refused on every turn after its burst (sessions kept
// whole in memory) or may get a turn in again (a session reopened from a store holds only its
// working set, which is the way out the refusal names).
function assertFlatAndContained(run, sessions, turns, everyTurn) {
  const { samples } = run;
  assert.equal(samples.length, 10);
  const [first, last] = [samples[0], samples.at(-1)];
  const report = samples.map((s) => `${(s.live / 1e6).toFixed(1)}/${(s.memory / 1e6).toFixed(1)} MB`).join(", ");
  // The wasm memory never shrinks, so flat means what sessions freed is reused; the live heap
  // must come back to where it was, whatever the sessions stored meanwhile.
  assert.ok(last.memory <= first.memory * 1.2, `wasm memory grew more than 20%: ${report}`);
  assert.ok(last.live <= first.live * 1.2, `live heap grew more than 20%: ${report}`);
  // The runaway was refused with the budget's error, and never held much more than its budget
  // (the last reply that fitted may take it a little over).
  assert.ok(run.runawayTurns >= 3, `${run.runawayTurns} runaway turns before the refusal`);
  if (everyTurn) assert.equal(run.runawayRefusals.length, turns);
  else assert.ok(run.runawayRefusals.length >= 1);
  assert.ok(run.runawayLargest <= RUNAWAY_BUDGET * 1.1, `the runaway held ${run.runawayLargest} bytes`);
  for (const refusal of run.runawayRefusals) {
    assert.equal(refusal.code, "memory_budget", refusal.message);
    assert.equal(refusal.budget, RUNAWAY_BUDGET);
  }
  assert.match(run.runawayRefusals[0].message, /over its memory budget of 4\.2 MB; nothing was changed\. Start a new session/);
  // The others were unaffected.
  assert.deepEqual(run.otherFailures.map((e) => `${e.code}: ${e.message}`), []);
  assert.equal(run.otherTurns, (sessions - 1) * turns);
}

test("sessions opened from their documents and freed after each turn: memory flat, the runaway refused, the others unaffected", async () => {
  const sessions = 40;
  const turns = 20;
  const documents = new Array(sessions).fill(null);
  const run = await loadRun(ccm, {
    sessions,
    turns,
    open: (s) => (documents[s] ? Session.fromJSON(documents[s]) : new Session()),
    keep: (s, session) => {
      documents[s] = JSON.stringify(session);
    },
  });
  assertFlatAndContained(run, sessions, turns, true);
  // The documents did grow: the memory stayed flat because each session was freed, not
  // because nothing was kept.
  const last = Session.fromJSON(documents[1]);
  assert.equal(last.turn, turns);
  last.free();
});

test("sessions in a FileSessionStore, loaded and freed per turn: memory flat, the runaway refused, the others unaffected", async () => {
  const directory = mkdtempSync(join(tmpdir(), "ccm-memory-load-"));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const store = await FileSessionStore.open({ directory });
  const sessions = 8;
  const turns = 10;
  const ids = new Array(sessions).fill(null);
  const run = await loadRun(ccm, {
    sessions,
    turns,
    open: (s) => (ids[s] ? store.load(ids[s]) : store.create(`tenant ${s}`)),
    keep: async (s, session) => {
      await store.save(session);
      ids[s] = session.storeId;
    },
  });
  assertFlatAndContained(run, sessions, turns, false);
  const reopened = await store.load(ids[1]);
  assert.equal(reopened.turn, turns);
  reopened.free();
});

test("sessions that are not freed hold their memory until the garbage collector finalizes them; free() gives it back at once", () => {
  const base = memoryUsage().liveBytes;
  const kept = [];
  for (let n = 0; n < 30; n++) {
    const session = new Session();
    session.beginTurn(userText(n, 0).repeat(200));
    session.endTurn("Noted.");
    kept.push(session);
  }
  const holding = memoryUsage().liveBytes - base;
  assert.ok(holding > 30 * 20_000, `30 sessions of about 25 KB each: ${holding} bytes`);
  for (const session of kept) session.free();
  const left = memoryUsage().liveBytes - base;
  assert.ok(left < holding / 20, `after free(): ${left} of ${holding} bytes still held`);
});

test("a worker thread has a module and a WebAssembly memory of its own, apart from the main thread's (the README's recycle)", async () => {
  const entry = createRequire(import.meta.url).resolve("cognitive-context");
  const before = memoryUsage();
  const worker = new Worker(`
    const { parentPort, workerData } = require("node:worker_threads");
    const { Session, memoryUsage } = require(workerData.entry);
    const sessions = [];
    for (let n = 0; n < 20; n++) {
      const session = new Session();
      session.beginTurn(("A long paste, number " + n + ". ").repeat(20_000));
      session.endTurn("Noted.");
      sessions.push(session);
    }
    parentPort.postMessage(memoryUsage());
  `, { eval: true, workerData: { entry } });
  const inWorker = await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  // The worker's sessions filled its own memory; the main thread's module did not grow.
  assert.ok(inWorker.liveBytes > 20 * 500_000, `the worker holds ${inWorker.liveBytes} bytes`);
  assert.ok(inWorker.memoryBytes > before.memoryBytes, JSON.stringify({ inWorker, before }));
  const after = memoryUsage();
  assert.ok(after.memoryBytes === before.memoryBytes, `the main module grew from ${before.memoryBytes} to ${after.memoryBytes}`);
  await worker.terminate();
});
