// The model's output is held to limits of the person's size (issue 26), checked while the answer
// is read: an answer past 1,000,000 characters, tool-call arguments past 1,000,000 characters
// together, or a tool name past 1,000, fail the turn with a clear error, for both protocols,
// streamed or not, however long the answer goes on (the mock server sends 200 million
// characters without building them); nothing is stored and the session is as it was. An
// answer at the limit is stored, saved, loaded, exported and imported again.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSessionStore, Session } from "cognitive-context";
import { startMock } from "./mock.mjs";

const PROTOCOLS = [
  ["openai_compatible", (url) => `${url}/v1`],
  ["anthropic_compatible", (url) => url],
];

function options(mock, provider, baseUrl, stream) {
  return { provider, baseUrl: baseUrl(mock.url), model: "mock-model", stream, maxAttempts: 3, initialRetryDelayMs: 10 };
}

test("an answer or tool-call arguments past the output limits fail the turn and store nothing, in both protocols, streamed or not", async () => {
  const mock = await startMock();
  after(() => mock.stop());
  for (const [provider, baseUrl] of PROTOCOLS) {
    for (const stream of [true, false]) {
      const what = `${provider}, stream ${stream}`;
      const session = new Session();
      await session.runTurn("hello", options(mock, provider, baseUrl, stream));
      const before = session.toJSON();
      const cases = [
        [{ text: "", huge: { field: "text", chars: 200_000_000 } }, stream ? /answer is longer than 1,000,000 characters/ : /larger than 32 MiB|answer is longer than 1,000,000/],
        [{ text: "", huge: { field: "text", chars: 1_000_001 } }, /answer is longer than 1,000,000 characters/],
        [{ tool_calls: [{ name: "open_effort", arguments: {} }], huge: { field: "arguments", chars: 10_000_000 } }, /arguments of the model's tool calls are longer than 1,000,000 characters/],
        [{ tool_calls: [{ name: "n".repeat(1_001), arguments: {} }] }, /tool with more than 1,000 characters/],
      ];
      for (const [reply, message] of cases) {
        await mock.reset();
        await mock.enqueue([reply]);
        await assert.rejects(session.runTurn("write it all out", options(mock, provider, baseUrl, stream)), (error) => {
          assert.equal(error.code, "provider", what);
          assert.match(error.message, message, what);
          assert.match(error.message, /nothing of it was stored/, what);
          return true;
        });
        const requests = await mock.requests();
        assert.equal(requests.filter((r) => r.last_user_text === "write it all out").length, 1, `${what}: not retried`);
        assert.equal(session.inTurn, false, what);
        assert.deepEqual(session.toJSON(), before, `${what}: the session is unchanged`);
      }
      session.free();
    }
  }
});

test("an answer at the limit is stored, and its session saves, loads, exports and imports again", async () => {
  const mock = await startMock();
  after(() => mock.stop());
  const directory = mkdtempSync(join(tmpdir(), "ccm-model-output-"));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const store = await FileSessionStore.open({ directory });
  for (const [provider, baseUrl] of PROTOCOLS) {
    for (const stream of [true, false]) {
      const session = await store.create(`${provider} ${stream}`);
      await mock.enqueue([{ text: "", huge: { field: "text", chars: 1_000_000 } }]);
      const result = await session.runTurn("write it all out", options(mock, provider, baseUrl, stream));
      assert.equal(result.reply.length, 1_000_000);
      await store.save(session);
      const loaded = await store.load(session.storeId);
      assert.equal(loaded.toJSON().ambient.at(-1).content.length, 1_000_000);
      const exported = await store.exportSession(session.storeId);
      const copy = await store.importSession(exported, "copy");
      const reopened = await store.load(copy.id);
      assert.deepEqual(reopened.toJSON(), JSON.parse(exported));
      const restored = Session.fromJSON(exported);
      assert.equal(restored.turn, 1);
      for (const s of [session, loaded, reopened, restored]) s.free();
    }
  }
});
