// streamTurn's promise (issue 26): leaving the loop before its `done` event, at any event,
// cancels the turn, even one that has already ended inside the module (the offline model
// answers at once), and the loop exits with the session exactly as before the turn: its
// document, metrics, next context, revision and what a save would write. With the offline model
// and with the local mock provider (crates/ccm-mock-llm, a real HTTP server), for every index.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session, FileSessionStore } from "cognitive-context";
import { startMock } from "./mock.mjs";

// Everything observable about a session that a turn could change.
function stateOf(session) {
  return JSON.stringify({
    document: session.toJSON(),
    metrics: session.metrics(),
    context: session.buildContext().messages,
    revision: session.revision,
    turn: session.turn,
    inTurn: session.inTurn,
    activeEffort: session.activeEffort ?? null,
  });
}

// The events of one whole streamed turn, and how many there were.
async function allEvents(session, text, options) {
  const kinds = [];
  for await (const event of session.streamTurn(text, options)) kinds.push(event.type);
  return kinds;
}

// Leaves the loop at event `index` (0 is the first) and returns that event's type.
async function breakAt(session, text, options, index) {
  let seen = 0;
  for await (const event of session.streamTurn(text, options)) {
    if (seen++ === index) return event.type;
  }
  throw new Error(`the turn ended before event ${index}`);
}

// The session right after the loop: no longer busy with the turn (a change goes through at
// once, without waiting a tick), then put back as it was.
function assertNotBusy(session) {
  session.beginTurn("probe");
  session.abortTurn();
}

const FIRST = "Let's work on the auth bug: 401 after an hour.";
const SECOND = "Now the billing export: totals are off by a cent in the CSV.";

test("offline model: breaking at every event before done takes the turn back; at done it stays", async () => {
  const start = new Session();
  await start.runTurn(FIRST, { provider: "offline" });
  const document = JSON.stringify(start.toJSON());
  const kinds = await allEvents(Session.fromJSON(document), SECOND, { provider: "offline" });
  assert.ok(kinds.length >= 3, kinds.join(","));
  assert.equal(kinds.at(-1), "done");
  for (let index = 0; index < kinds.length; index++) {
    const session = Session.fromJSON(document);
    const before = stateOf(session);
    const type = await breakAt(session, SECOND, { provider: "offline" }, index);
    assert.equal(type, kinds[index]);
    if (type === "done") {
      assert.equal(session.turn, 2, "a turn whose done was delivered stays");
      assert.notEqual(stateOf(session), before);
    } else {
      assert.equal(stateOf(session), before, `left at event ${index} (${type}): the session must be as before the turn`);
    }
    assertNotBusy(session);
    // The session goes on normally afterwards.
    await session.runTurn(SECOND, { provider: "offline" });
    assert.equal(session.turn, type === "done" ? 3 : 2);
    session.free();
  }
});

test("offline model: return() and throw() before the first next(), and `await using`-style disposal, cancel too", async () => {
  const session = new Session();
  await session.runTurn(FIRST, { provider: "offline" });
  const before = stateOf(session);
  const unread = session.streamTurn(SECOND, { provider: "offline" });
  assert.deepEqual(await unread.return(), { done: true, value: undefined });
  assert.equal(stateOf(session), before);
  const thrown = session.streamTurn(SECOND, { provider: "offline" });
  await assert.rejects(thrown.throw(new Error("stop")), /stop/);
  assert.equal(stateOf(session), before);
  if (typeof Symbol.asyncDispose === "symbol") {
    const disposed = session.streamTurn(SECOND, { provider: "offline" });
    await disposed.next();
    await disposed[Symbol.asyncDispose]();
    assert.equal(stateOf(session), before);
  }
  assertNotBusy(session);
});

test("offline model: a change made after the loop accepts the turn, so a late return() takes nothing back", async () => {
  const session = new Session();
  const events = session.streamTurn(FIRST, { provider: "offline" });
  await events.next();
  // Let the offline turn end inside the module, then change the session before leaving.
  await new Promise((resolve) => setTimeout(resolve, 50));
  session.openEffort("unrelated");
  const after = stateOf(session);
  await events.return();
  assert.equal(stateOf(session), after, "the later change and the turn before it stay");
  assert.equal(session.turn, 1);
});

test("file store: leaving early leaves the stored session, its revision and the next save as before", async () => {
  const directory = mkdtempSync(join(tmpdir(), "ccm-streamturn-"));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const store = await FileSessionStore.open({ directory });
  const created = await store.create("streamed");
  await created.runTurn(FIRST, { provider: "offline" });
  await store.save(created);
  const id = created.storeId;
  created.free();
  const stored = await store.exportSession(id);

  const session = await store.load(id);
  const before = stateOf(session);
  await breakAt(session, SECOND, { provider: "offline" }, 0);
  assert.equal(stateOf(session), before);
  const report = await store.save(session);
  assert.equal(report.revision, session.revision);
  assert.equal(await store.exportSession(id), stored, "nothing of the taken-back turn was stored");
  session.free();
});

test("mock provider over HTTP: breaking at every event before done takes the turn back", async () => {
  const mock = await startMock();
  after(() => mock.stop());
  const options = { provider: "openai_compatible", baseUrl: `${mock.url}/v1`, model: "mock-model", initialRetryDelayMs: 10 };
  // A turn with a retry, a tool call and a streamed answer: every kind of event.
  const script = [
    { fault: { status: 503 } },
    { tool_calls: [{ name: "open_effort", arguments: { name: "billing export" } }] },
    { text: "Opened it. The rounding happens before the sum, which loses a cent." },
  ];
  const start = new Session();
  await start.runTurn(FIRST, { provider: "offline" });
  const document = JSON.stringify(start.toJSON());

  await mock.reset();
  await mock.enqueue(script);
  const kinds = await allEvents(Session.fromJSON(document), SECOND, options);
  for (const kind of ["retry", "tool_call", "text", "banner", "done"]) assert.ok(kinds.includes(kind), kinds.join(","));

  for (let index = 0; index < kinds.length; index++) {
    await mock.reset();
    await mock.enqueue(script);
    const session = Session.fromJSON(document);
    const before = stateOf(session);
    const type = await breakAt(session, SECOND, options, index);
    assert.equal(type, kinds[index]);
    if (type === "done") {
      assert.equal(session.turn, 2);
      assert.equal(session.activeEffort, "billing-export");
    } else {
      assert.equal(stateOf(session), before, `left at event ${index} (${type}): the session must be as before the turn`);
    }
    assertNotBusy(session);
    session.free();
  }
});
