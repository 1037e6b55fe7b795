// Pathological inputs: each library counts each kind of input at 10k, 100k and 1M characters in
// a child process of its own, with a time cap per input. A library that passes the cap is
// killed and gets "timeout > cap"; a larger size after it is not run. The growth of time with
// size is summarised by the log-log slope between 100k and 1M (1.0 linear, 2.0 quadratic).
//
// Children run one at a time while the main process waits, so nothing else competes for the
// two cores during a timed count.

import { fileURLToPath } from "node:url";
import { firstLine, runWorker } from "./processes.mjs";
import { formatMs, logLogSlope } from "./stats.mjs";

const WORKER = fileURLToPath(new URL("../workers/pathological.mjs", import.meta.url));

/** Runs one library on one kind; returns { sizes: { [size]: result } }. */
async function runKind({ adapter, kind, sizes, capMs, skip, oursPath }) {
  const results = {};
  let current;
  let error;
  const status = await runWorker(WORKER, [adapter.id, kind.id, String(capMs), sizes.join(","), skip ? "skip" : "no-skip", oursPath], {
    execArgv: ["--expose-gc"],
    // Generous overall guard; the per-input deadline below is the real cap.
    timeoutMs: sizes.length * capMs + 120_000,
    onMessage(message, control) {
      if (message.type === "start") {
        current = message.size;
        control.setDeadline(capMs);
      } else if (message.type === "done") {
        control.clearDeadline();
        results[message.size] = { ms: message.ms, count: message.count };
        current = undefined;
      } else if (message.type === "skipped") {
        results[message.size] = { status: "skipped", atLeastMs: message.atLeastMs, detail: `needs ≥ ${Math.round(message.atLeastMs / 1000)} s at linear growth` };
      } else if (message.type === "error") {
        error = message.message;
      }
    },
  });
  // Sizes without a result: the one that was running when the child was killed or failed gets
  // the timeout or the error, the larger ones were never started. A failure before any size
  // started (the library did not load) applies to all of them.
  const failure = status.timedOut
    ? { status: "timeout", capMs, detail: `killed after ${capMs / 1000} s` }
    : error || status.code !== 0
      ? { status: "error", detail: error ?? `exit ${status.signal ?? status.code}: ${firstLine(status.stderr)}` }
      : undefined;
  for (const size of sizes.filter((s) => !results[s])) {
    if (failure && (current === undefined || size === current)) results[size] = failure;
    else results[size] = { status: "not-run", detail: "a smaller size did not finish" };
  }
  return { sizes: results, slope: slopeOf(results, sizes) };
}

/**
 * The growth slope, preferably between 100k and 1M, else between 10k and 100k (the report
 * marks which). When the smaller size finished and the larger one was killed at the cap, the
 * slope is at least what finishing exactly at the cap would give (`atLeast`).
 */
function slopeOf(results, sizes) {
  for (let i = sizes.length - 1; i > 0; i--) {
    const [a, b] = [sizes[i - 1], sizes[i]];
    const [ra, rb] = [results[a], results[b]];
    if (ra?.ms === undefined) continue;
    if (rb?.ms !== undefined) return { value: logLogSlope(a, ra.ms, b, rb.ms), from: a, to: b };
    if (rb?.status === "timeout") return { value: logLogSlope(a, ra.ms, b, rb.capMs), from: a, to: b, atLeast: true };
  }
  return undefined;
}

/** Runs every library on every kind. Resolves to { [id]: { [kind]: { sizes, slope } } }. */
export async function runPathological({ adapters, kinds, sizes, capMs, skip = true, oursPath, log = () => {} }) {
  const out = Object.fromEntries(adapters.map((a) => [a.id, {}]));
  for (const kind of kinds) {
    const started = performance.now();
    const notes = [];
    for (const adapter of adapters) {
      const result = await runKind({ adapter, kind, sizes, capMs, skip, oursPath });
      out[adapter.id][kind.id] = result;
      notes.push(`${adapter.id} ${sizes.map((size) => describe(result.sizes[size])).join("/")}`);
    }
    log(`${kind.label} (${((performance.now() - started) / 1000).toFixed(1)} s): ${notes.join(", ")}`);
  }
  return out;
}

/** One result in a progress line: its time, or its status. */
function describe(result) {
  return result.ms !== undefined ? formatMs(result.ms).replace(" ", "") : result.status;
}
