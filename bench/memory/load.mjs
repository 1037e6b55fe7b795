// The memory load run of issue 26 (scripts/bench-memory runs it; a benchmark that prints
// numbers, not a pass/fail test: npm/ccm/test/memory-load.test.mjs is the same run at a reduced
// scale, with assertions).
//
//   node bench/memory/load.mjs PACKAGE_NODE_DIR [--sessions N] [--turns M] [--store memory|files]
//
// One Node process serves N sessions (200) for M turns each (200), round-robin, as a server
// would: for each turn it opens the session (from its document kept in JavaScript with
// `--store memory`, or from a FileSessionStore with `--store files`), runs the turn against the
// offline model, keeps the session (its document, or a save), and frees it. Session 0 is a
// runaway tenant: held to a budget of 4 MiB, it sends long messages in a burst until it is
// refused, and one more each turn after that. At each tenth of the run it prints the module's
// live heap and WebAssembly memory and the process's RSS; at the end, how the memory moved from
// the first tenth to the last, whether the runaway was refused, and whether every other turn
// went through.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
// The run itself is the reduced-scale test's (npm/ccm/test/load-run.mjs), so both measure the same load.
import { loadRun, RUNAWAY_BUDGET } from "../../npm/ccm/test/load-run.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const ccm = createRequire(import.meta.url)(join(resolve(args[0]), "ccm.js"));
const sessions = Number(option("--sessions", 200));
const turns = Number(option("--turns", 200));
const storeKind = option("--store", "memory");
if (!(sessions >= 2 && turns >= 10 && ["memory", "files"].includes(storeKind))) {
  console.error("usage: load.mjs PACKAGE_NODE_DIR [--sessions N>=2] [--turns M>=10] [--store memory|files]");
  process.exit(2);
}

const directory = storeKind === "files" ? mkdtempSync(join(tmpdir(), "ccm-bench-memory-")) : null;
const store = directory ? await ccm.FileSessionStore.open({ directory }) : null;
const documents = new Array(sessions).fill(null);
const ids = new Array(sessions).fill(null);

async function open(s) {
  if (store) return ids[s] ? store.load(ids[s]) : store.create(`tenant ${s}`);
  return documents[s] ? ccm.Session.fromJSON(documents[s]) : new ccm.Session();
}

async function keep(s, session) {
  if (store) {
    await store.save(session);
    ids[s] = session.storeId;
  } else {
    documents[s] = JSON.stringify(session);
  }
}

const mb = (bytes) => (bytes / 1e6).toFixed(1);
const started = performance.now();
console.log(`memory load run: ${sessions} sessions × ${turns} turns, store ${storeKind}, runaway budget ${mb(RUNAWAY_BUDGET)} MB`);
const run = await loadRun(ccm, {
  sessions,
  turns,
  open,
  keep,
  onTenth: (sample, index) =>
    console.log(`tenth ${index}: turn ${sample.turn}, live heap ${mb(sample.live)} MB, wasm memory ${mb(sample.memory)} MB, rss ${mb(sample.rss)} MB, ${((performance.now() - started) / 1000).toFixed(1)} s`),
});
const { samples } = run;
for (const error of run.otherFailures.slice(0, 3)) console.error(`another tenant's turn failed: ${error.code}: ${error.message}`);
const runawayRefusal = run.runawayRefusals[0];
const [first, last] = [samples[0], samples.at(-1)];
const growth = (key) => `${((last[key] / first[key] - 1) * 100).toFixed(1)}%`;
console.log(`first to last tenth: live heap ${growth("live")}, wasm memory ${growth("memory")}, rss ${growth("rss")}`);
// A session reopened from a store holds only its working set, so with `--store files` the
// runaway may get a turn in again after a refusal; in memory it is refused on every turn.
console.log(`runaway: ${run.runawayTurns} turns, refused ${run.runawayRefusals.length} times${runawayRefusal ? `; the first refusal (${runawayRefusal.code}): ${runawayRefusal.message}` : ""}`);
console.log(`other sessions: ${run.otherTurns} of ${(sessions - 1) * turns} turns went through, ${run.otherFailures.length} failed`);
console.log(`turns per second: ${((run.otherTurns + run.runawayTurns) / ((performance.now() - started) / 1000)).toFixed(0)}`);
if (directory) rmSync(directory, { recursive: true, force: true });
