// The memory load run of issue 26, shared by its reduced-scale test (memory-load.test.mjs) and
// its full-scale benchmark (bench/memory/load.mjs, which scripts/bench-memory runs). Not a test
// file itself: it has no tests, and `node --test` runs it as one that passes.
//
// One process serves `sessions` sessions for `turns` rounds, round-robin, as a server would:
// for each turn it opens the session (`open`), runs the turn against the offline model, keeps
// it (`keep`), and frees it. Session 0 is a runaway tenant held to a small budget: on the first
// round it sends long messages in a burst until it is refused, and one more on each later round.

/** The runaway tenant's memory budget, in bytes. */
export const RUNAWAY_BUDGET = 4 * 2 ** 20;
export const runawayText = (n) => `Paste number ${n} of the whole server log, again and again. `.repeat(2_000);
export const userText = (s, t) => `Tenant ${s}, turn ${t}: the billing export of customer ${(s * 31 + t) % 97} is off by a cent; can you check the rounding?`;

/**
 * Runs the load with the package `ccm` (its `memoryUsage`); returns the memory at each tenth of
 * the run (`samples`: live heap, WebAssembly memory and the process's RSS, in bytes) and what
 * happened to the runaway and to the others. `onTenth(sample, index)` is told of each sample.
 */
export async function loadRun(ccm, { sessions, turns, open, keep, onTenth = () => {} }) {
  const samples = [];
  const outcome = { runawayTurns: 0, runawayRefusals: [], runawayLargest: 0, otherTurns: 0, otherFailures: [] };
  const tenth = Math.max(1, Math.round(turns / 10));
  for (let t = 0; t < turns; t++) {
    for (let s = 0; s < sessions; s++) {
      const session = await open(s);
      try {
        if (s === 0) {
          session.setMemoryBudget(RUNAWAY_BUDGET);
          for (let attempt = 0; attempt < (t === 0 ? 1000 : 1); attempt++) {
            try {
              await session.runTurn(runawayText(attempt), { provider: "offline" });
              outcome.runawayTurns++;
              outcome.runawayLargest = Math.max(outcome.runawayLargest, session.memoryFootprint().total);
            } catch (error) {
              outcome.runawayRefusals.push(error);
              break;
            }
          }
        } else {
          try {
            await session.runTurn(userText(s, t), { provider: "offline" });
            outcome.otherTurns++;
          } catch (error) {
            outcome.otherFailures.push(error);
          }
        }
        await keep(s, session);
      } finally {
        session.free();
      }
    }
    if ((t + 1) % tenth === 0 && samples.length < 10) {
      const usage = ccm.memoryUsage();
      const sample = { turn: t + 1, live: usage.liveBytes, memory: usage.memoryBytes, rss: process.memoryUsage().rss };
      samples.push(sample);
      onTenth(sample, samples.length);
    }
  }
  return { samples, ...outcome };
}
