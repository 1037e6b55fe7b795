// Tests of `cognitive-context/tokens` (the counting-only module) and of loading rank tables, run against the
// packed tarball like package.test.mjs. Table downloads go to a real HTTP server on 127.0.0.1,
// through the same fetch path browsers use.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as tokens from "cognitive-context/tokens";
import * as engine from "cognitive-context";

const require = createRequire(import.meta.url);
// Through the package's `./tables/*.ccmt` exports, as a host that serves the tables itself would.
const table = (name) => readFileSync(require.resolve(`cognitive-context/tables/${name}.ccmt`));

/** Serves `routes` (path → { status, body }) until the callback's promise settles. */
async function withServer(routes, callback) {
  const server = createServer((request, response) => {
    const route = routes[request.url] ?? { status: 404, body: "not found" };
    response.writeHead(route.status, { "content-length": Buffer.byteLength(route.body) });
    response.end(route.body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    return await callback(base);
  } finally {
    server.close();
  }
}

// cl100k_base is loaded over HTTP in these tests, so nothing may count with it before them.
test("a missing table is a network error with the status and URL; nothing is installed", async () => {
  await withServer({}, async (base) => {
    await assert.rejects(tokens.loadEncoding("cl100k_base", { url: `${base}/nope.ccmt` }), (error) => {
      assert.equal(error.code, "network");
      assert.match(error.message, /cannot load http:\/\/127\.0\.0\.1:\d+\/nope\.ccmt: HTTP 404/);
      return true;
    });
  });
  assert.equal(tokens.encodingLoaded("cl100k_base"), false);
});

test("a damaged or wrong table is refused with what is wrong; nothing is installed", async () => {
  const right = table("cl100k_base");
  const routes = {
    "/truncated.ccmt": { status: 200, body: right.subarray(0, right.length - 1000) },
    "/flipped.ccmt": { status: 200, body: Buffer.from(right).fill(7, 5000, 5001) },
    "/other.ccmt": { status: 200, body: table("o200k_base") },
    "/text.ccmt": { status: 200, body: "<html>Not a table</html>" },
  };
  await withServer(routes, async (base) => {
    const expectations = {
      "/truncated.ccmt": /truncated/,
      "/flipped.ccmt": /checksum/,
      "/other.ccmt": /is for 'o200k_base', not for 'cl100k_base'/,
      "/text.ccmt": /CCMT|magic/,
    };
    for (const [path, pattern] of Object.entries(expectations)) {
      await assert.rejects(tokens.loadEncoding("cl100k_base", { url: base + path }), (error) => {
        assert.equal(error.code, "table", path);
        assert.match(error.message, pattern, path);
        return true;
      });
    }
  });
  assert.equal(tokens.encodingLoaded("cl100k_base"), false);
  assert.throws(() => tokens.installEncoding("cl100k_base", new Uint8Array([1, 2, 3])), { code: "table" });
  assert.equal(tokens.encodingLoaded("cl100k_base"), false);
});

test("loading over HTTP reports download then parse progress and installs the table", async () => {
  const body = table("cl100k_base");
  const events = [];
  await withServer({ "/cl100k_base.ccmt": { status: 200, body } }, async (base) => {
    await tokens.loadEncoding("cl100k_base", {
      url: `${base}/cl100k_base.ccmt`,
      onProgress: (done, total, phase) => events.push({ done, total, phase }),
    });
  });
  assert.equal(tokens.encodingLoaded("cl100k_base"), true);
  const downloads = events.filter((e) => e.phase === "download");
  const parses = events.filter((e) => e.phase === "parse");
  assert.ok(downloads.length >= 1 && parses.length >= 2, JSON.stringify(events.slice(0, 5)));
  assert.deepEqual(downloads.at(-1), { done: body.length, total: body.length, phase: "download" });
  assert.equal(parses.at(-1).done, 100256);
  assert.equal(parses.at(-1).total, 100256);
  assert.ok(events.indexOf(downloads.at(-1)) < events.indexOf(parses[0]), "download comes first");
  assert.equal(tokens.countTokens("hello world", "cl100k_base"), 2);
});

test("in Node, counting loads the o200k table from the package by itself", () => {
  assert.equal(tokens.encodingLoaded("o200k_base"), false);
  assert.equal(tokens.countTokens("hello world", "o200k_base"), 2);
  assert.equal(tokens.encodingLoaded("o200k_base"), true);
  // Special-token markers are ordinary text: several tokens, never one control token.
  assert.ok(tokens.countTokens("<|endoftext|>", "o200k_base") > 1);
  assert.equal(tokens.countTokens("", "o200k_base"), 0);
});

test("the counting module and the engine agree, and bad arguments are argument errors", () => {
  const text = "Cognitive Context Management keeps 中文 and code() small: 12345.";
  assert.equal(tokens.countTokens(text, "o200k_base"), engine.countTokens(text, "o200k_base"));
  assert.throws(() => tokens.countTokens("x", "p50k_base"), {
    code: "argument",
    message: "unknown encoding 'p50k_base'; supported: o200k_base, cl100k_base",
  });
  return assert.rejects(tokens.loadEncoding("gpt2"), { code: "argument" });
});

test("long texts, which take the direct UTF-8 path, count exactly like the session's stored messages", () => {
  // Over 1,024 UTF-16 units countTokens encodes with TextEncoder.encodeInto; a session's
  // message goes through wasm-bindgen's string conversion. Both must see the same text,
  // including the replacement of a lone surrogate.
  const text = "Ünïcödé and \uD800 lone surrogate, 中文テキスト, code() { return 42; }\n".repeat(60);
  assert.ok(text.length > 1024);
  const session = new engine.Session();
  session.beginTurn(text);
  session.endTurn("ok");
  const exchange = session.buildContext().included.find((item) => item.id === "ambient:1");
  const expected = exchange.tokens - engine.countTokens("ok", "o200k_base");
  assert.equal(tokens.countTokens(text, "o200k_base"), expected);
  assert.equal(engine.countTokens(text, "o200k_base"), expected);
  assert.equal(tokens.countTokens(text.slice(0, 500), "o200k_base") > 0, true);
});
