// Worker of the time-to-first-count stage (started by bench.mjs with spawn, many times): loads
// one library, counts one short string and prints performance.now(), the time since this
// process's time origin (its start), as JSON on stdout.
//
// With --baseline it loads the same harness module but no library, so the difference between a
// library's time and the baseline's is the library's own load, table load and first count.
//
// Arguments: <library id | --baseline> <encoding> <path of our ccm_tokens.js>

const [id, encoding, oursPath] = process.argv.slice(2);
const { adapterById } = await import("../lib/adapters.mjs");
if (id === "--baseline") {
  process.stdout.write(JSON.stringify({ ms: performance.now() }) + "\n");
} else {
  const counter = await adapterById(id, oursPath).open(encoding);
  const count = counter.count("Hello! How many tokens does this short message have?");
  const ms = performance.now();
  process.stdout.write(JSON.stringify({ ms, count }) + "\n");
  counter.close();
}
