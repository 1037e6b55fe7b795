// Time to first count: a fresh `node` process loads one library, counts one short string and
// reports performance.now(), the time since the process's time origin (its start). That
// includes Node's own start-up, so an "empty" process that loads the same harness module but no
// library is measured the same way, and the difference is shown next to the raw time. Each
// library is measured `runs` times, interleaved (one of each per run, in a rotating order), and
// the median is reported.

import { fileURLToPath } from "node:url";
import { firstLine, runNode } from "./processes.mjs";
import { summary } from "./stats.mjs";

const WORKER = fileURLToPath(new URL("../workers/first-count.mjs", import.meta.url));
const BASELINE = "--baseline";

export async function runFirstCount({ adapters, runs, encoding = "o200k_base", oursPath, log = () => {} }) {
  const ids = [BASELINE, ...adapters.map((a) => a.id)];
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  const errors = {};
  const counts = {};
  for (let run = 0; run < runs; run++) {
    const shift = run % ids.length;
    for (const id of [...ids.slice(shift), ...ids.slice(0, shift)]) {
      if (errors[id]) continue;
      const result = await runNode(WORKER, [id, encoding, oursPath]);
      const line = result.stdout.trim().split("\n").pop();
      try {
        const parsed = JSON.parse(line);
        samples[id].push(parsed.ms);
        counts[id] = parsed.count;
      } catch {
        errors[id] = result.timedOut ? "did not finish within 60 s" : firstLine(result.stderr) || `exit ${result.code}`;
      }
    }
    log(`run ${run + 1}/${runs} done`);
  }
  const baseline = summary(samples[BASELINE]);
  const libs = {};
  for (const adapter of adapters) {
    const s = summary(samples[adapter.id]);
    libs[adapter.id] = s
      ? { raw: s, net: s.median - (baseline?.median ?? 0), count: counts[adapter.id] }
      : { error: errors[adapter.id] };
  }
  return { encoding, runs, baseline, libs };
}
