#!/usr/bin/env node
// Benchmark of CCM's token counter (the wasm build of crates/ccm-tokens) against the JavaScript
// token counters on npm. Not part of the test suite: the only pass/fail is exactness, where a
// count of ours that differs from the `tiktoken` package's makes the process exit with status 1.
//
// Stages, in the order they run (README.md explains the method):
//   exactness     every corpus in full, both encodings, one child process per library
//   bundle        brotli size of each library's browser files (a child, next to exactness)
//   throughput    interleaved rounds in this process; first pass and re-count
//   pathological  10k / 100k / 1M characters of nine hostile inputs, a child per library and kind
//   first-count   time from process start to the first count, in fresh processes
//
// Usage: node bench.mjs [--ours PATH] [--rounds N] [--cap SECONDS] [--no-skip] [--runs N]
//                       [--only STAGE,...] [--libs ID,...] [--write | --no-write]
//        node bench.mjs --report results/latest.json      (re-render a saved run as Markdown)

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { arch, availableParallelism, cpus, loadavg, platform, release } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { adapterList, BENCH_DIR, DEFAULT_OURS_PATH, OURS_ID, REFERENCE_ID, REPO_ROOT } from "./lib/adapters.mjs";
import { DEFAULT_PARTS, loadCorpora, PATHOLOGICAL_KINDS, PATHOLOGICAL_SIZES } from "./lib/corpora.mjs";
import { compare, corpusChecks, localizeMismatch, pathologicalChecks, runExactnessWorkers, throughputChecks } from "./lib/exactness.mjs";
import { runFirstCount } from "./lib/first-count.mjs";
import { runPathological } from "./lib/pathological.mjs";
import { firstLine, runWorker } from "./lib/processes.mjs";
import { renderDisagreements, renderReport } from "./lib/report.mjs";
import { runThroughput, summariseThroughput } from "./lib/throughput.mjs";

const STAGES = ["exactness", "bundle", "throughput", "pathological", "first-count"];
const MIN_ROUNDS = 9;
const MIN_FIRST_COUNT_RUNS = 7;

const USAGE = `Usage: node bench.mjs [options]
  --ours PATH        our wasm-pack nodejs module (default: ${relative(process.cwd(), DEFAULT_OURS_PATH)});
                     when it does not exist, the peers are measured alone
  --rounds N         throughput rounds after the warm-up round (default and minimum: ${MIN_ROUNDS})
  --cap SECONDS      time cap per pathological input (default: 20)
  --no-skip          run every pathological size even when the smaller one, scaled linearly,
                     already needs more than the cap (by default such a size is skipped)
  --runs N           fresh processes per library for time to first count (default and minimum: ${MIN_FIRST_COUNT_RUNS})
  --only STAGES      comma-separated subset of: ${STAGES.join(", ")}
  --libs IDS         comma-separated subset of the libraries (tiktoken, the reference, is always kept)
  --write/--no-write write results/latest.json and latest.md (default: only for a full run)
  --report FILE      print the Markdown report of a saved results JSON and exit
  --help`;

function fail(message, code = 2) {
  console.error(`bench-tokenizers: ${message}`);
  process.exit(code);
}

/** Progress goes to stderr, so stdout carries only the report. */
function log(message) {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);
}

function parseOptions() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        ours: { type: "string" },
        rounds: { type: "string" },
        cap: { type: "string" },
        "no-skip": { type: "boolean" },
        runs: { type: "string" },
        only: { type: "string" },
        libs: { type: "string" },
        write: { type: "boolean" },
        "no-write": { type: "boolean" },
        report: { type: "string" },
        help: { type: "boolean" },
      },
    });
  } catch (error) {
    fail(`${error.message}\n${USAGE}`);
  }
  const v = parsed.values;
  if (v.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const integer = (text, name, min) => {
    if (text === undefined) return min;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer ≥ ${min} (got "${text}")`);
    return n;
  };
  const only = v.only ? v.only.split(",").map((s) => s.trim()) : STAGES;
  const unknown = only.filter((s) => !STAGES.includes(s));
  if (unknown.length) fail(`unknown stage(s) ${unknown.join(", ")}; stages: ${STAGES.join(", ")}`);
  const cap = v.cap === undefined ? 20 : Number(v.cap);
  if (!(cap > 0)) fail(`--cap must be a positive number of seconds (got "${v.cap}")`);
  const partial = Boolean(v.only || v.libs);
  return {
    oursPath: v.ours ?? DEFAULT_OURS_PATH,
    rounds: integer(v.rounds, "rounds", MIN_ROUNDS),
    capMs: cap * 1000,
    skip: !v["no-skip"],
    runs: integer(v.runs, "runs", MIN_FIRST_COUNT_RUNS),
    stages: new Set(only),
    libs: v.libs ? v.libs.split(",").map((s) => s.trim()) : undefined,
    partial,
    write: v["no-write"] ? false : v.write ? true : !partial,
    report: v.report,
  };
}

function machine() {
  const list = cpus();
  return {
    cpu: (list[0]?.model ?? "unknown CPU").replace(/\s+/g, " ").trim(),
    cores: availableParallelism?.() ?? list.length,
    node: process.version,
    platform: `${platform()} ${release()} ${arch()}`,
    // Other processes (a build, a test run) make every timing noisier; the report says so.
    loadAverage: loadavg()[0],
  };
}

/**
 * Exactness rows for the report: every corpus and pathological check as it is, and the
 * throughput checks folded into one row per corpus (all measured parts together).
 */
function exactnessRows(checks, corpora, ids) {
  const rows = [];
  const strip = (c) => ({
    input: c.input,
    group: c.group,
    encoding: c.encoding,
    reference: c.results[REFERENCE_ID]?.total,
    consensus: c.consensus,
    counted: c.counted,
    verdicts: c.verdicts,
    results: Object.fromEntries(Object.entries(c.results).map(([id, r]) => [id, { total: r.total, status: r.status, detail: r.detail }])),
  });
  for (const c of checks.filter((c) => c.group === "corpus")) rows.push(strip(c));
  for (const corpus of corpora) {
    const parts = checks.filter((c) => c.group === "throughput" && c.input.startsWith(`${corpus.label}, part `));
    if (!parts.length) continue;
    const rank = { mismatch: 4, "no-count": 3, unverified: 2, estimate: 1, ok: 0, reference: 0 };
    const results = {};
    const verdicts = {};
    for (const id of ids) {
      const per = parts.map((p) => p.results[id]).filter(Boolean);
      if (!per.length) continue;
      const failed = per.find((r) => r.total === undefined);
      results[id] = failed ? { status: failed.status, detail: failed.detail } : { total: per.reduce((s, r) => s + r.total, 0) };
      verdicts[id] = parts.map((p) => p.verdicts[id]).reduce((worst, v) => (rank[v] > rank[worst] ? v : worst));
    }
    rows.push({
      input: `${corpus.label}, parts 1–${parts.length} (throughput)`,
      group: "throughput",
      encoding: "o200k_base",
      reference: results[REFERENCE_ID]?.total,
      consensus: parts.every((p) => p.consensus),
      counted: Math.min(...parts.map((p) => p.counted)),
      verdicts,
      results,
    });
  }
  for (const c of checks.filter((c) => c.group === "pathological")) rows.push(strip(c));
  return rows;
}

/** Compares the checks with the reference and keeps what the report and the JSON need. */
function exactnessResults(checks, { adapters, corpora, oursLoaded }) {
  const verdict = compare(checks, { adapters, oursId: OURS_ID });
  return {
    rows: exactnessRows(checks, corpora, adapters.map((a) => a.id)),
    disagreements: verdict.disagreements.map((d) => ({
      id: d.id,
      input: d.check.input,
      encoding: d.check.encoding,
      reference: d.reference,
      count: d.count,
      diff: d.diff,
      detail: d.detail,
    })),
    oursChecked: oursLoaded,
    oursFailed: verdict.oursFailed,
    peerMismatches: verdict.peerMismatches,
  };
}

/**
 * For each disagreement on a whole text corpus, finds the first short piece of the text on which
 * the library and the reference differ (lib/exactness.mjs, localizeMismatch) and adds it to the
 * detail, so that a wrong total comes with an input that reproduces it.
 */
async function localizeDisagreements(disagreements, { adapters, corpora }) {
  const reference = adapters.find((a) => a.id === REFERENCE_ID);
  for (const d of disagreements) {
    const corpus = corpora.find((c) => c.kind === "text" && d.input === `${c.label} (full)`);
    const adapter = adapters.find((a) => a.id === d.id);
    if (!corpus || !adapter || d.count === undefined) continue;
    let counters = [];
    try {
      counters = [await adapter.open(d.encoding), await reference.open(d.encoding)];
      const found = localizeMismatch(corpus.full, counters[0].count, counters[1].count);
      d.detail = found
        ? `first differing piece at character ${found.offset.toLocaleString("en-US")}: ${JSON.stringify(found.piece.slice(0, 80))} (${found.a} vs ${found.b})`
        : "every short piece agrees; the difference needs the context across pieces";
    } catch (error) {
      d.detail = `could not localize: ${firstLine(error.message)}`;
    } finally {
      for (const counter of counters) counter.close();
    }
  }
}

async function main() {
  const options = parseOptions();
  if (options.report) {
    let saved;
    try {
      saved = JSON.parse(readFileSync(options.report, "utf8"));
    } catch (error) {
      fail(`cannot read the results file ${options.report}: ${error.message}`);
    }
    console.log(renderReport(saved));
    return 0;
  }
  // Collecting garbage before each timed count needs --expose-gc; start again with it rather
  // than time counts that pay for another library's garbage.
  if (typeof globalThis.gc !== "function") {
    const child = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" });
    return child.status ?? 1;
  }

  const started = performance.now();
  const { adapters: listed, ours, oursMissing } = adapterList({ oursPath: options.oursPath, only: options.libs });
  const oursReason = `${relative(REPO_ROOT, ours.path)} does not exist; build it with npm/build, or pass --ours`;
  if (oursMissing) {
    log("=".repeat(78));
    log(`OUR COUNTER IS NOT LOADED: ${oursReason}.`);
    log("Measuring the peers only; ratios are shown relative to tiktoken instead.");
    log("=".repeat(78));
  }

  // Open every library in this process now (o200k, for the throughput rounds): a library that
  // does not load is reported in one line and left out, except the reference, without which
  // exactness means nothing.
  const counters = {};
  const adapters = [];
  for (const adapter of listed) {
    try {
      counters[adapter.id] = await adapter.open("o200k_base");
      adapters.push(adapter);
    } catch (error) {
      if (adapter.id === REFERENCE_ID) fail(`the reference library cannot be loaded: ${error.message}`);
      if (adapter.id === OURS_ID) fail(`our counter exists but cannot be loaded: ${error.message}`, 1);
      log(`leaving ${adapter.id} out: ${firstLine(error.message)}`);
    }
  }
  const oursLoaded = adapters.some((a) => a.id === OURS_ID);
  const libraries = adapters.map((a) => ({ id: a.id, name: a.name, label: a.label, exact: a.exact, version: a.version(), how: a.how }));
  log(`libraries: ${libraries.map((l) => `${l.id} ${l.version}`).join(", ")}`);

  const corpora = loadCorpora(Math.max(DEFAULT_PARTS, options.rounds + 1));
  log(`corpora: ${corpora.map((c) => `${c.id} ${(c.bytes / 1e6).toFixed(2)} MB`).join(", ")}`);

  const results = {
    date: new Date().toISOString(),
    machine: machine(),
    command: process.env.CCM_BENCH_COMMAND || `node bench.mjs ${process.argv.slice(2).join(" ")}`.trim(),
    ours: { path: relative(REPO_ROOT, ours.path), loaded: oursLoaded, reason: oursLoaded ? undefined : oursReason },
    libraries,
    corpora: corpora.map(({ id, label, kind, bytes, chars, parts, source }) => ({ id, label, kind, bytes, chars, parts: parts.length, source })),
    stages: [...options.stages],
  };
  const checks = [];

  // --- exactness (and bundle sizes alongside: neither is timed) ---
  let bundlePromise;
  if (options.stages.has("bundle")) {
    log("bundle sizes: measuring in a child process (brotli q11)");
    let bundles;
    bundlePromise = runWorker(fileURLToPath(new URL("./workers/bundle-size.mjs", import.meta.url)), [ours.path, adapters.map((a) => a.id).join(",")], {
      timeoutMs: 600_000,
      onMessage(message) {
        if (message.type === "result") bundles = message.bundles;
        if (message.type === "error") bundles = [{ id: "all", label: "all", error: message.message }];
      },
    }).then((status) => bundles ?? [{ id: "all", label: "all", error: firstLine(status.stderr) || `exit ${status.code}` }]);
  }
  if (options.stages.has("exactness")) {
    log("exactness: counting every corpus in full, both encodings, a child process per library");
    const workerResults = await runExactnessWorkers({ adapters, oursPath: ours.path, log: (m) => log(`  ${m}`) });
    checks.push(...corpusChecks({ corpora, workerResults }));
  }
  if (bundlePromise) {
    results.bundles = await bundlePromise;
    log("bundle sizes: done");
  }
  if (checks.length) {
    // Shown now, so a wrong count is on screen before the long timed stages; the final report
    // repeats it with the throughput and pathological counts added.
    results.exactness = exactnessResults(checks, { adapters, corpora, oursLoaded });
    console.error("\n" + renderDisagreements(results) + "\n");
  }

  // --- throughput ---
  if (options.stages.has("throughput")) {
    log(`throughput: ${options.rounds} rounds + 1 warm-up, ${adapters.length} libraries, in this process`);
    const order = adapters.map((a) => a.id);
    const measured = runThroughput({ counters, order, corpora, rounds: options.rounds, log: (m) => log(`  ${m}`) });
    const baseline = oursLoaded ? OURS_ID : REFERENCE_ID;
    results.throughput = { rounds: options.rounds, baseline, summary: summariseThroughput(measured, { corpora, ids: order, baseline }), measured };
    checks.push(...throughputChecks({ corpora, measured }));
  }
  for (const counter of Object.values(counters)) counter.close();

  // --- pathological ---
  if (options.stages.has("pathological")) {
    log(`pathological inputs: ${PATHOLOGICAL_KINDS.length} kinds × ${PATHOLOGICAL_SIZES.length} sizes, cap ${options.capMs / 1000} s per input`);
    const pathological = await runPathological({
      adapters,
      kinds: PATHOLOGICAL_KINDS,
      sizes: PATHOLOGICAL_SIZES,
      capMs: options.capMs,
      skip: options.skip,
      oursPath: ours.path,
      log: (m) => log(`  ${m}`),
    });
    results.pathological = {
      capMs: options.capMs,
      skip: options.skip,
      sizes: PATHOLOGICAL_SIZES,
      kinds: PATHOLOGICAL_KINDS.map(({ id, label }) => ({ id, label })),
      results: pathological,
    };
    checks.push(...pathologicalChecks({ kinds: PATHOLOGICAL_KINDS, sizes: PATHOLOGICAL_SIZES, pathological }));
  }

  // --- time to first count ---
  if (options.stages.has("first-count")) {
    log(`time to first count: ${options.runs} fresh processes per library`);
    results.firstCount = await runFirstCount({ adapters, runs: options.runs, oursPath: ours.path, log: (m) => log(`  ${m}`) });
  }

  // --- verdict and report ---
  if (checks.length) {
    results.exactness = exactnessResults(checks, { adapters, corpora, oursLoaded });
    await localizeDisagreements(results.exactness.disagreements, { adapters, corpora });
  }
  results.durationMs = performance.now() - started;
  const markdown = renderReport(results);
  console.log(markdown);

  if (options.write) {
    const dir = join(BENCH_DIR, "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "latest.json"), JSON.stringify(results, null, 1) + "\n");
    writeFileSync(join(dir, "latest.md"), markdown + "\n");
    log(`wrote ${relative(process.cwd(), join(dir, "latest.json"))} and latest.md`);
  } else {
    log(options.partial ? "results not written (a partial run; --write writes them anyway)" : "results not written (--no-write)");
  }
  log(`done in ${(results.durationMs / 1000).toFixed(0)} s`);
  if (results.exactness?.oursFailed) {
    log("FAILED: our counter disagrees with tiktoken (see the disagreements above)");
    return 1;
  }
  if (!oursLoaded) log("note: our counter was not loaded; only the peers were measured");
  return 0;
}

main().then(
  (code) => process.exit(code),
  // The messages of this harness say what is wrong and what to run; the stack is for debugging.
  (error) => fail(process.env.CCM_BENCH_DEBUG ? (error?.stack ?? String(error)) : `${error?.message ?? error} (CCM_BENCH_DEBUG=1 shows the stack)`),
);
