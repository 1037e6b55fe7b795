// The Node stores under load (scripts/bench-stores runs it after the native stores; not a
// pass/fail test): FileSessionStore and PostgresSessionStore of the npm package as built,
// with the same measures as crates/ccm-bench/src/bin/stores.rs.
//
//   node bench/stores/node.mjs PACKAGE_NODE_DIR [--sessions N] [--turns M] [--length L]
//                              [--rate R] [--postgres URL] [--dir DIR]
//
// 1. Length: one session of L turns (3,000), saved after each; mean save time and bytes
//    written (files: the growth of the directory) around turn 10 and around the last turn.
// 2. Load: N sessions (200) of M turns (60), split between two Node processes, paced to offer
//    R turns per second together (1,000); turns per second over the span both ran, save p50
//    and p99, peak memory per process; afterwards every session is opened through a new store
//    object and compared message by message with the one kept in memory.
// It ends with `node-<store>: <N> turns/s, p99 <X> ms, lost <n>, duplicated <n>` lines.
import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const packageDir = args[0];
const settings = {
  sessions: Number(option("--sessions", 200)),
  turns: Number(option("--turns", 60)),
  length: Number(option("--length", 3000)),
  rate: Number(option("--rate", 1000)),
  postgres: option("--postgres", process.env.CCM_BENCH_POSTGRES_URL),
  dir: option("--dir", mkdtempSync(join(tmpdir(), "ccm-bench-node-"))),
};
const ccm = createRequire(join(packageDir, "ccm.js"))(join(packageDir, "ccm.js"));

// The conversation every session has: an effort opened every sixth turn and concluded four
// turns later, ambient chat between, as the native benchmark's script does.
function takeTurn(session, n) {
  const topic = ["cache warmup", "login latency", "invoice export", "birthday party", "search ranking"][Math.floor(n / 6) % 5];
  if (n % 6 === 0) {
    session.beginTurn(`Let's look at the ${topic}, round ${n}.`);
    session.openEffort(`${topic} ${n}`);
    session.endTurn("Opened it.");
  } else if (n % 6 === 4) {
    session.beginTurn("That settles it, we keep the second option.");
    session.closeEffort({ summary: `${topic}: decided on the second option in turn ${n}.` });
    session.endTurn("Concluded.");
  } else {
    session.beginTurn(`Message ${n} about the ${topic}: what next?`);
    session.endTurn(`Answer ${n}: try the next measurement.`);
  }
}

async function openStore(kind, dir, schema, url = settings.postgres) {
  if (kind === "files") return ccm.FileSessionStore.open({ directory: dir });
  return ccm.PostgresSessionStore.open({ connectionString: url, schema, max: 16 });
}

const directoryBytes = (dir) =>
  readdirSync(dir, { recursive: true }).reduce((sum, name) => {
    const stat = statSync(join(dir, name), { throwIfNoEntry: false });
    return sum + (stat?.isFile() ? stat.size : 0);
  }, 0);

function messagesOf(document) {
  const all = [...document.ambient, ...document.efforts.flatMap((e) => e.messages)];
  return all.map((m) => [m.seq, m.content]).sort((a, b) => a[0] - b[0]);
}

// ----- a writer process -----

async function writer({ kind, dir, schema, url, first, count, turns, intervalMs }) {
  const store = await openStore(kind, dir, schema, url);
  const times = [];
  let peak = 0;
  const start = performance.now();
  const sessions = await Promise.all(
    Array.from({ length: count }, async (_, k) => {
      const session = await store.create(`load ${first + k}`);
      const offset = (intervalMs * k) / count;
      for (let n = 0; n < turns; n++) {
        const due = start + offset + intervalMs * n;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        takeTurn(session, n);
        const begun = performance.now();
        await store.save(session);
        times.push(performance.now() - begun);
        peak = Math.max(peak, process.memoryUsage().rss);
      }
      return session;
    }),
  );
  const span = [performance.timeOrigin + start, performance.timeOrigin + performance.now()];
  const reader = await openStore(kind, dir, schema, url);
  let lost = 0;
  let duplicated = 0;
  for (const session of sessions) {
    const stored = messagesOf(JSON.parse(await reader.exportSession(session.storeId)));
    const seqs = new Set(stored.map(([seq]) => seq));
    duplicated += stored.length - seqs.size;
    for (const [seq, content] of messagesOf(session.toJSON())) {
      if (!stored.some(([s, c]) => s === seq && c === content)) lost++;
    }
  }
  await store.close?.();
  await reader.close?.();
  process.send({ span, turns: turns * count, times, peak, lost, duplicated });
}

// ----- the parent -----

async function lengthCheck(kind, dir, schema) {
  const store = await openStore(kind, dir, schema);
  const session = await store.create("length");
  const times = [];
  const bytes = [];
  for (let n = 0; n < settings.length; n++) {
    takeTurn(session, n);
    const before = kind === "files" ? directoryBytes(dir) : 0;
    const begun = performance.now();
    await store.save(session);
    times.push(performance.now() - begun);
    bytes.push(kind === "files" ? directoryBytes(dir) - before : NaN);
  }
  await store.close?.();
  const mean = (values, from) => values.slice(from, from + 24).reduce((a, b) => a + b, 0) / 24;
  const last = settings.length - 24;
  return [mean(times, 10), mean(times, last), mean(bytes, 10), mean(bytes, last)];
}

function loadRun(kind, dir, schema) {
  const half = Math.floor(settings.sessions / 2);
  const intervalMs = (settings.sessions / settings.rate) * 1000;
  const parts = [
    [0, half],
    [half, settings.sessions - half],
  ];
  return Promise.all(
    parts.map(
      ([first, count]) =>
        new Promise((resolve, reject) => {
          const child = fork(fileURLToPath(import.meta.url), [packageDir, "--writer"]);
          child.on("message", resolve);
          child.on("exit", (code) => code !== 0 && reject(new Error(`a writer exited with ${code}`)));
          child.send({ kind, dir, schema, url: settings.postgres, first, count, turns: settings.turns, intervalMs });
        }),
    ),
  );
}

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.round((sorted.length - 1) * p)] : 0;
}

async function main() {
  if (args.includes("--writer")) {
    process.once("message", (task) => writer(task).then(() => process.exit(0), (error) => { console.error(error); process.exit(1); }));
    return;
  }
  const kinds = settings.postgres ? ["files", "postgres"] : ["files"];
  if (!settings.postgres) console.error("(no PostgreSQL: give --postgres URL)");
  console.log(`\nNode stores: ${settings.sessions} sessions × ${settings.turns} turns in two Node processes, offering ${settings.rate} turns/s; a session of ${settings.length} turns for the length check.\n`);
  console.log(`| store | save at turn 10 | save at turn ${settings.length} | ratio | bytes/save at 10 | bytes/save at ${settings.length} | turns/s | save p50 | save p99 | peak memory per process |`);
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  const lines = [];
  for (const kind of kinds) {
    const schema = `ccm_bench_node_${process.pid}`;
    const [early, late, earlyBytes, lateBytes] = await lengthCheck(kind, join(settings.dir, "length"), `${schema}_length`);
    const reports = await loadRun(kind, join(settings.dir, "load"), schema);
    const span = (Math.max(...reports.map((r) => r.span[1])) - Math.min(...reports.map((r) => r.span[0]))) / 1000;
    const turns = reports.reduce((sum, r) => sum + r.turns, 0);
    const times = reports.flatMap((r) => r.times).sort((a, b) => a - b);
    const lost = reports.reduce((sum, r) => sum + r.lost, 0);
    const duplicated = reports.reduce((sum, r) => sum + r.duplicated, 0);
    const bytes = (value) => (Number.isNaN(value) ? "–" : value.toFixed(0));
    const memory = reports.map((r) => `${(r.peak / 2 ** 20).toFixed(0)} MB`).join(", ");
    console.log(
      `| ${kind} | ${early.toFixed(2)} ms | ${late.toFixed(2)} ms | ${(late / early).toFixed(2)}× | ${bytes(earlyBytes)} | ${bytes(lateBytes)} | ${(turns / span).toFixed(0)} | ${percentile(times, 0.5).toFixed(2)} ms | ${percentile(times, 0.99).toFixed(2)} ms | ${memory} |`,
    );
    lines.push(`node-${kind}: ${(turns / span).toFixed(0)} turns/s, p99 ${percentile(times, 0.99).toFixed(1)} ms, lost ${lost}, duplicated ${duplicated}`);
  }
  console.log();
  for (const line of lines) console.log(line);
  rmSync(settings.dir, { recursive: true, force: true });
}

await main();
