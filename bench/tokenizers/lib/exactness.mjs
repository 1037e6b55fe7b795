// Exactness: every exact library must give the same count as the reference (the `tiktoken`
// package) on every input. The counts come from three places:
//   - the exactness workers: every real-text corpus in full, both encodings (this module);
//   - the throughput rounds: every part of every corpus, o200k, counted in the main process;
//   - the pathological workers: every pathological input that finished within the cap, o200k.
// They are all turned into "checks" here, compared with the reference, and the disagreements
// listed. Our counter disagreeing with the reference anywhere makes the run exit non-zero; a
// peer disagreeing is reported and nothing more. Estimators are never compared; their error
// against the reference is shown for information.

import { fileURLToPath } from "node:url";
import { ENCODINGS, REFERENCE_ID } from "./adapters.mjs";
import { firstLine, runWorker } from "./processes.mjs";

const WORKER = fileURLToPath(new URL("../workers/exactness.mjs", import.meta.url));

/**
 * Counts the full corpora with every adapter, `concurrency` workers at a time (timing does not
 * matter here). Resolves to { [id]: { counts } | { error } }.
 */
export async function runExactnessWorkers({ adapters, oursPath, concurrency = 2, timeoutMs = 300_000, log = () => {} }) {
  const out = {};
  const queue = [...adapters];
  const runOne = async (adapter) => {
    const started = performance.now();
    let counts;
    let error;
    const status = await runWorker(WORKER, [adapter.id, oursPath], {
      timeoutMs,
      onMessage(message) {
        if (message.type === "result") counts = message.counts;
        if (message.type === "error") error = message.message;
      },
    });
    if (!counts && !error) {
      error = status.timedOut ? `did not finish within ${timeoutMs / 1000} s` : `worker exited with ${status.signal ?? status.code}: ${firstLine(status.stderr)}`;
    }
    out[adapter.id] = counts ? { counts } : { error };
    log(`${adapter.id}: ${counts ? "counted" : `FAILED (${error})`} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  const lanes = Array.from({ length: concurrency }, async () => {
    while (queue.length) await runOne(queue.shift());
  });
  await Promise.all(lanes);
  return out;
}

/**
 * One comparison: an input, an encoding, and each library's result, which is
 *   { total, perString? }  a count (for a batch, also the count of every string)
 *   { status, detail }     no count: "error", "timeout", "skipped" (predicted over the cap) or "not-run"
 */
function check(input, group, encoding, results, strings) {
  return { input, group, encoding, results, strings };
}

function fromCount(value) {
  if (Array.isArray(value)) return { total: value.reduce((a, b) => a + b, 0), perString: value };
  return { total: value };
}

/** Checks from the exactness workers (full corpora, both encodings). */
export function corpusChecks({ corpora, workerResults }) {
  const checks = [];
  for (const encoding of ENCODINGS) {
    for (const corpus of corpora) {
      const results = {};
      for (const [id, result] of Object.entries(workerResults)) {
        results[id] = result.counts ? fromCount(result.counts[encoding][corpus.id]) : { status: "error", detail: result.error };
      }
      checks.push(check(`${corpus.label} (full)`, "corpus", encoding, results, corpus.kind === "batch" ? corpus.full : undefined));
    }
  }
  return checks;
}

/** Checks from the throughput rounds (every part, o200k; first pass and re-count must agree). */
export function throughputChecks({ corpora, measured }) {
  const checks = [];
  for (const corpus of corpora) {
    for (const round of measured) {
      const results = {};
      for (const [id, r] of Object.entries(round.results[corpus.id])) {
        results[id] =
          r.count === r.recountCount ? { total: r.count } : { status: "error", detail: `first pass ${r.count}, re-count ${r.recountCount}` };
      }
      checks.push(check(`${corpus.label}, part ${round.part}`, "throughput", "o200k_base", results));
    }
  }
  return checks;
}

/** Checks from the pathological workers (o200k). */
export function pathologicalChecks({ kinds, sizes, pathological }) {
  const checks = [];
  for (const kind of kinds) {
    for (const size of sizes) {
      const results = {};
      for (const [id, byKind] of Object.entries(pathological)) {
        const r = byKind[kind.id]?.sizes?.[size];
        if (!r) continue;
        results[id] = r.count !== undefined ? { total: r.count } : { status: r.status, detail: r.detail };
      }
      checks.push(check(`${kind.label}, ${size.toLocaleString("en-US")} chars`, "pathological", "o200k_base", results));
    }
  }
  return checks;
}

/**
 * Compares every check with the reference. Each library's verdict on a check is one of
 *   "ok", "mismatch", "estimate" (not compared), "no-count" (error/timeout/skipped),
 *   "unverified" (it counted, the reference did not: then `agrees` says whether every exact
 *   library that counted gave the same number).
 * Returns { checks (with verdicts), disagreements, oursFailed, peerMismatches }.
 */
export function compare(checks, { adapters, oursId }) {
  const exact = new Set(adapters.filter((a) => a.exact).map((a) => a.id));
  const disagreements = [];
  let oursFailed = false;
  for (const c of checks) {
    const reference = c.results[REFERENCE_ID];
    const refTotal = reference?.total;
    c.verdicts = {};
    const counted = Object.entries(c.results).filter(([id, r]) => exact.has(id) && r.total !== undefined);
    // Without a reference count, the exact libraries that did count can still be compared with
    // each other; that says something only when there are at least two of them.
    c.counted = counted.length;
    c.consensus = counted.length > 1 && counted.every(([, r]) => r.total === counted[0][1].total && sameStrings(r, counted[0][1]));
    for (const [id, r] of Object.entries(c.results)) {
      if (id === REFERENCE_ID) {
        c.verdicts[id] = r.total !== undefined ? "reference" : "no-count";
        continue;
      }
      if (!exact.has(id)) {
        c.verdicts[id] = "estimate";
        continue;
      }
      if (r.total === undefined) {
        c.verdicts[id] = "no-count";
        // Our counter failing to count an ordinary input is as bad as a wrong count; a
        // timeout on a pathological input is a performance result, reported there.
        if (id === oursId && r.status === "error") {
          oursFailed = true;
          disagreements.push({ check: c, id, detail: `error: ${r.detail}` });
        }
        continue;
      }
      if (refTotal === undefined) {
        c.verdicts[id] = "unverified";
        continue;
      }
      const wrongStrings = r.perString && reference.perString ? countDifferences(r.perString, reference.perString) : [];
      if (r.total !== refTotal || wrongStrings.length) {
        c.verdicts[id] = "mismatch";
        const detail =
          c.strings && wrongStrings.length
            ? `${count(wrongStrings.length)} of ${count(c.strings.length)} strings differ; first: string #${wrongStrings[0]} ${JSON.stringify(c.strings[wrongStrings[0]].slice(0, 60))} ` +
              `(${r.perString[wrongStrings[0]]} vs ${reference.perString[wrongStrings[0]]})`
            : "";
        disagreements.push({ check: c, id, reference: refTotal, count: r.total, diff: r.total - refTotal, detail });
        if (id === oursId) oursFailed = true;
      } else c.verdicts[id] = "ok";
    }
  }
  const peerMismatches = disagreements.filter((d) => d.id !== oursId).length;
  return { checks, disagreements, oursFailed, peerMismatches };
}

function sameStrings(a, b) {
  if (!a.perString || !b.perString) return true;
  return countDifferences(a.perString, b.perString).length === 0;
}

/** Indexes where two per-string count lists differ. */
function countDifferences(a, b) {
  const out = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) out.push(i);
  return out;
}

/**
 * Finds where in a text two counters first disagree, to point at the bug behind a wrong total:
 * the text is cut into short pieces (at newlines, and long lines at a space about every 300
 * characters), both counters count each piece, and the first piece with different counts is
 * returned as { index, offset, piece, a, b }, or undefined when every piece agrees (the
 * difference then needs the context across a cut).
 */
export function localizeMismatch(text, countA, countB) {
  let offset = 0;
  let index = 0;
  while (offset < text.length) {
    let end = text.indexOf("\n", offset);
    end = end < 0 ? text.length : end + 1;
    if (end - offset > 400) {
      const space = text.indexOf(" ", offset + 300);
      if (space > 0 && space < end) end = space;
    }
    const piece = text.slice(offset, end);
    const [a, b] = [countA(piece), countB(piece)];
    if (a !== b) return { index, offset, piece, a, b };
    offset = end;
    index++;
  }
  return undefined;
}

function count(n) {
  return n.toLocaleString("en-US");
}
