// Throughput, in this one Node process, with the libraries interleaved.
//
// Every corpus was cut into disjoint parts (lib/corpora.mjs). Round 0 counts part 0 with every
// library and is thrown away: it loads the tables and lets the JIT compile the hot paths, which
// the time-to-first-count stage measures separately. Rounds 1..N each count a part no library
// has seen before ("first pass"), then count exactly the same part again ("re-count"), which
// shows what a library's caches buy on text it has just seen. Each round starts the library
// order one place further on, so no library is always first (cold CPU caches, a GC debt left by
// the previous library) or always last.
//
// The figure reported per peer is, for each round, our MB/s divided by the peer's MB/s in that
// same round (how many times faster we are), then the median of those ratios over the rounds,
// with their min and max. A ratio within one round compares runs seconds apart on the same
// text, which cancels most of the machine's drift; the median drops outlier rounds.

import { utf8Length } from "./corpora.mjs";
import { summary } from "./stats.mjs";

/** Counts one part: a string, or a batch of strings counted one by one (as a chat app would). */
function countPart(counter, part) {
  if (typeof part === "string") return counter.count(part);
  let total = 0;
  for (let i = 0; i < part.length; i++) total += counter.count(part[i]);
  return total;
}

function partBytes(part) {
  return typeof part === "string" ? utf8Length(part) : part.reduce((sum, s) => sum + utf8Length(s), 0);
}

/** Times one count; collects garbage first so that no library pays for another's allocations. */
function timed(counter, part) {
  globalThis.gc?.();
  const started = performance.now();
  const count = countPart(counter, part);
  return { ms: performance.now() - started, count };
}

/**
 * Runs the rounds. `counters` maps adapter id to an open o200k counter; `order` is the list of
 * adapter ids. Returns raw measurements:
 *   rounds[r] = { order, results: { [corpusId]: { [libId]: { first, recount, count, recountCount, bytes } } } }
 * where first and recount are MB/s (10^6 bytes of UTF-8 input per second).
 */
export function runThroughput({ counters, order, corpora, rounds, log = () => {} }) {
  const measured = [];
  for (let round = 0; round <= rounds; round++) {
    const shift = round % order.length;
    const roundOrder = [...order.slice(shift), ...order.slice(0, shift)];
    const results = {};
    const started = performance.now();
    for (const corpus of corpora) {
      const part = corpus.parts[round];
      if (part === undefined) throw new Error(`corpus ${corpus.id} has only ${corpus.parts.length} parts; ${rounds + 1} are needed`);
      const bytes = partBytes(part);
      results[corpus.id] = {};
      for (const id of roundOrder) {
        const first = timed(counters[id], part);
        const again = timed(counters[id], part);
        results[corpus.id][id] = {
          bytes,
          first: bytes / 1e3 / first.ms,
          recount: bytes / 1e3 / again.ms,
          count: first.count,
          recountCount: again.count,
        };
      }
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (round === 0) log(`warm-up round (part 0) done in ${seconds} s`);
    else {
      measured.push({ round, part: round, order: roundOrder, results });
      log(`round ${round}/${rounds} done in ${seconds} s (order: ${roundOrder.join(", ")})`);
    }
  }
  return measured;
}

/**
 * Summarises the rounds: absolute MB/s medians per library, and per peer the ratio
 * baseline ÷ peer (first pass and re-count) as { median, min, max } over the rounds.
 */
export function summariseThroughput(measured, { corpora, ids, baseline }) {
  const out = {};
  for (const corpus of corpora) {
    const absolute = {};
    const ratios = {};
    for (const id of ids) {
      const first = measured.map((r) => r.results[corpus.id][id].first);
      const recount = measured.map((r) => r.results[corpus.id][id].recount);
      absolute[id] = { first: summary(first), recount: summary(recount) };
      if (baseline && id !== baseline) {
        ratios[id] = {
          first: summary(measured.map((r) => r.results[corpus.id][baseline].first / r.results[corpus.id][id].first)),
          recount: summary(measured.map((r) => r.results[corpus.id][baseline].recount / r.results[corpus.id][id].recount)),
        };
      }
    }
    out[corpus.id] = { absolute, ratios, partBytes: summary(measured.map((r) => r.results[corpus.id][ids[0]].bytes)) };
  }
  return out;
}
