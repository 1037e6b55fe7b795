// Worker of the bundle-size stage (started by bench.mjs): finds the files each library ships for
// o200k counting and compresses them with brotli at quality 11. It runs in its own process, next
// to the exactness workers, because compressing ~25 MB at quality 11 takes a while and must not
// run during the timed stages.
//
// Arguments: <path of our ccm_tokens.js> <comma-separated library ids>

import { adapterById } from "../lib/adapters.mjs";
import { measureBundles } from "../lib/bundle-size.mjs";
import { send, workerMain } from "../lib/processes.mjs";

await workerMain(async () => {
  const [oursPath, ids] = process.argv.slice(2);
  const adapters = ids.split(",").map((id) => adapterById(id, oursPath));
  await send({ type: "result", bundles: await measureBundles(adapters) });
});
