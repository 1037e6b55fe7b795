// Worker of the pathological stage (started by bench.mjs, one process per library and kind of
// input): times the count of the 10k, 100k and 1M character inputs of one kind, in that order,
// and reports each before and after it runs, so that the parent can kill it when one input
// passes the time cap.
//
// Arguments: <library id> <kind id> <cap in ms> <comma-separated sizes> <skip|no-skip> <path of our ccm_tokens.js>

import { adapterById } from "../lib/adapters.mjs";
import { pathologicalInput } from "../lib/corpora.mjs";
import { send, workerMain } from "../lib/processes.mjs";

// Loads the table and warms up the library on ordinary text, which shares no long pre-token
// with any pathological input, so no merge cache can serve the timed counts. About 180 kB of
// counting lets the JIT (and V8's wasm tier-up) compile the hot paths first; with a few hundred
// bytes only, the first 10k input of a fast counter measured the baseline compiler.
const WARM_UP = [
  "The quick brown fox jumps over the lazy dog. 1234, {\"key\": [true, null]} — naïve café!\n",
  "function warmUp(x) { return x.map((y) => y * 2).filter(Boolean); } // 你好，世界\n",
];
const WARM_UP_ROUNDS = 1000;

await workerMain(async () => {
  const [id, kind, capText, sizesText, skipText, oursPath] = process.argv.slice(2);
  const skip = skipText === "skip";
  const cap = Number(capText);
  const sizes = sizesText.split(",").map(Number);
  const counter = await adapterById(id, oursPath).open("o200k_base");
  for (let i = 0; i < WARM_UP_ROUNDS; i++) for (const text of WARM_UP) counter.count(text);
  let previous;
  for (const size of sizes) {
    // The input is made before the clock starts; generating 1M characters is not counting them.
    const text = pathologicalInput(kind, size);
    // Counting must read every character, so time can grow no slower than the input. When the
    // previous size, scaled linearly, already reaches the cap, this size cannot finish within
    // it: it is reported as skipped with that lower bound instead of burning the cap.
    if (skip && previous && previous.ms * (size / previous.size) >= cap) {
      await send({ type: "skipped", size, atLeastMs: previous.ms * (size / previous.size) });
      previous = { size, ms: previous.ms * (size / previous.size) };
      continue;
    }
    globalThis.gc?.();
    await send({ type: "start", size });
    const started = performance.now();
    const count = counter.count(text);
    const ms = performance.now() - started;
    await send({ type: "done", size, ms, count });
    previous = { size, ms };
  }
  counter.close();
});
