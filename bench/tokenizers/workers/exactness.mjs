// Worker of the exactness stage (started by bench.mjs, one process per library): counts every
// real-text corpus in full with both encodings and sends the counts to the parent. It runs in
// its own process so that the main process's throughput rounds start with cold caches: a
// library that caches merges would otherwise have seen every slice here first.
//
// Arguments: <library id> <path of our ccm_tokens.js>

import { adapterById, ENCODINGS } from "../lib/adapters.mjs";
import { loadCorpora } from "../lib/corpora.mjs";
import { send, workerMain } from "../lib/processes.mjs";

await workerMain(async () => {
  const [id, oursPath] = process.argv.slice(2);
  const adapter = adapterById(id, oursPath);
  const corpora = loadCorpora();
  const counts = {};
  for (const encoding of ENCODINGS) {
    const counter = await adapter.open(encoding);
    try {
      counts[encoding] = {};
      for (const corpus of corpora) {
        // A text corpus is one count; a batch is one count per string, so that two errors of
        // opposite sign in different strings cannot hide each other in a total.
        counts[encoding][corpus.id] = corpus.kind === "text" ? counter.count(corpus.full) : corpus.full.map((text) => counter.count(text));
      }
    } finally {
      counter.close();
    }
  }
  await send({ type: "result", counts });
});
