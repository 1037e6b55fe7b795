// A process survives one runaway session (issue 26): each session is held to a memory budget,
// measured by its footprint estimate, and a change that would exceed it is refused with
// `code: "memory_budget"` before anything changes, long before the module's 4 GiB run out;
// the other sessions go on. The estimate is checked against the allocator's real count.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Session, memoryUsage, setDefaultMemoryBudget, countTokens } from "cognitive-context";

const DEFAULT_BUDGET = 256 * 2 ** 20;
const prose = (n) => `The quarterly ledger reconciliation flagged rounding drift in invoice ${n}. `;

test("memoryUsage reports the live heap, its peak and the WebAssembly memory of the whole module", () => {
  const usage = memoryUsage();
  assert.deepEqual(Object.keys(usage).sort(), ["liveBytes", "memoryBytes", "memoryLimitBytes", "peakLiveBytes"]);
  assert.equal(usage.memoryLimitBytes, 4 * 2 ** 30);
  assert.ok(usage.liveBytes > 0 && usage.liveBytes <= usage.peakLiveBytes && usage.peakLiveBytes <= usage.memoryBytes, JSON.stringify(usage));
  // Allocating a session's texts shows in the live heap, and freeing it gives them back.
  countTokens("warm the tokenizer up", "o200k_base");
  const before = memoryUsage().liveBytes;
  const session = new Session();
  session.beginTurn(prose(1).repeat(12_000));
  session.endTurn("Noted.");
  const holding = memoryUsage().liveBytes - before;
  assert.ok(holding > 870_000, `an 870 KB text is held: ${holding}`);
  session.free();
  const after = memoryUsage().liveBytes - before;
  assert.ok(after < holding / 10, `freed: ${after} of ${holding} bytes still held`);
});

test("the footprint estimate follows the real growth of a session within a factor of two", () => {
  countTokens("warm the tokenizer up", "o200k_base");
  for (const [label, user, reply] of [
    ["short messages", (t) => `Turn ${t}: let's look at the billing export number ${t * 7}.`, (t) => `Sure, turn ${t}: it looks fine; next is item ${t}.`],
    ["long messages", (t) => prose(t).repeat(150), (t) => `We traced item ${t} to the currency conversion step. `.repeat(150)],
  ]) {
    const base = memoryUsage().liveBytes;
    const session = new Session();
    const start = session.memoryFootprint().total;
    for (let t = 0; t < 200; t++) {
      session.beginTurn(user(t));
      if (t % 25 === 0) session.openEffort(`topic ${t}`);
      session.endTurn(reply(t));
    }
    const footprint = session.memoryFootprint();
    const grown = memoryUsage().liveBytes - base;
    const estimated = footprint.total - start;
    assert.equal(footprint.total, footprint.texts + footprint.indexes + footprint.records);
    assert.equal(footprint.budget, DEFAULT_BUDGET);
    const ratio = estimated / grown;
    assert.ok(ratio > 0.5 && ratio < 2, `${label}: estimated ${estimated} bytes, the heap grew ${grown} (ratio ${ratio.toFixed(2)})`);
    session.free();
  }
});

test("a session over its budget is refused with memory_budget before anything changes; the others go on", async () => {
  const runaway = new Session();
  runaway.setMemoryBudget(2 * 2 ** 20);
  assert.equal(runaway.memoryBudget, 2 * 2 ** 20);
  const neighbour = new Session();
  neighbour.beginTurn("A neighbour's question.");
  neighbour.endTurn("A neighbour's answer.");
  const big = prose(0).repeat(2_000); // about 150 KB
  let refused;
  let turns = 0;
  for (; turns < 100; turns++) {
    try {
      runaway.beginTurn(big);
    } catch (error) {
      refused = error;
      break;
    }
    runaway.endTurn("Noted.");
  }
  assert.ok(refused, "refused within 100 turns");
  assert.ok(turns >= 2, `${turns} turns went through first`);
  assert.equal(refused.code, "memory_budget");
  assert.match(refused.message, /^beginTurn: this session holds about [\d.]+ MB of memory and this would add about [\d.]+ MB, over its memory budget of 2\.1 MB; nothing was changed/);
  assert.match(refused.message, /Start a new session/);
  assert.match(refused.message, /setMemoryBudget\(bytes\)/);
  assert.equal(refused.budget, 2 * 2 ** 20);
  assert.ok(refused.footprint <= 2 * 2 ** 20);
  assert.equal(runaway.inTurn, false, "nothing changed");
  assert.equal(runaway.turn, turns);

  // runTurn and streamTurn are refused the same way, before the turn starts.
  await assert.rejects(runaway.runTurn(big, { provider: "offline" }), { code: "memory_budget" });
  await assert.rejects(runaway.streamTurn(big, { provider: "offline" }).next(), { code: "memory_budget" });
  assert.equal(runaway.turn, turns);
  // A short message still fits, and raising the budget lets the long one through.
  runaway.beginTurn("Something short.");
  runaway.endTurn("Fine.");
  runaway.setMemoryBudget(64 * 2 ** 20);
  runaway.beginTurn(big);
  runaway.endTurn("Noted.");

  // The neighbour, with the default budget, is untouched.
  await neighbour.runTurn(big, { provider: "offline" });
  assert.equal(neighbour.turn, 2);
  runaway.free();
  neighbour.free();
});

test("attach, openEffort and fromJSON are held to the budget too", () => {
  const session = new Session();
  session.setMemoryBudget(2 ** 20);
  session.beginTurn("Here is the log.");
  const before = JSON.stringify(session.toJSON());
  assert.throws(() => session.attach("log.txt", prose(1).repeat(8_000)), (e) => e.code === "memory_budget" && /^attach: /.test(e.message));
  assert.throws(() => session.openEffort("x", prose(2).repeat(8_000)), (e) => e.code === "memory_budget" && /^openEffort: /.test(e.message));
  assert.equal(JSON.stringify(session.toJSON()), before);
  session.endTurn("Ok.");
  // A document is measured against the default budget before it is read.
  setDefaultMemoryBudget(2 ** 20);
  try {
    const large = new Session();
    large.setMemoryBudget(64 * 2 ** 20);
    large.beginTurn(prose(3).repeat(12_000));
    large.endTurn(prose(4).repeat(12_000));
    assert.throws(() => Session.fromJSON(JSON.stringify(large.toJSON())), (e) => e.code === "memory_budget" && /^Session\.fromJSON: /.test(e.message));
    large.free();
  } finally {
    setDefaultMemoryBudget(DEFAULT_BUDGET);
  }
  session.free();
});

test("setDefaultMemoryBudget sets the budget of sessions without their own; wrong budgets are refused", () => {
  const own = new Session();
  own.setMemoryBudget(8 * 2 ** 20);
  setDefaultMemoryBudget(3 * 2 ** 20);
  try {
    const plain = new Session();
    assert.equal(plain.memoryBudget, 3 * 2 ** 20);
    assert.equal(plain.memoryFootprint().budget, 3 * 2 ** 20);
    assert.equal(own.memoryBudget, 8 * 2 ** 20);
    plain.free();
  } finally {
    setDefaultMemoryBudget(DEFAULT_BUDGET);
  }
  assert.equal(new Session().memoryBudget, DEFAULT_BUDGET);
  for (const wrong of ["big", null, undefined, 1.5, -1, 0, 1000, NaN, Infinity, 2 ** 33]) {
    assert.throws(() => own.setMemoryBudget(wrong), (e) => e.code === "argument" && /setMemoryBudget: /.test(e.message), String(wrong));
    assert.throws(() => setDefaultMemoryBudget(wrong), (e) => e.code === "argument", String(wrong));
  }
  assert.equal(own.memoryBudget, 8 * 2 ** 20);
  own.setMemoryBudget(4 * 2 ** 30);
  assert.equal(own.memoryBudget, 4 * 2 ** 30);
  own.free();
});
