// Tests of the packed npm package, run with `node --test` in a scratch project where the
// tarball was installed (see npm/test-package). They import "cognitive-context" exactly as a user would.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Session, SessionStore, countTokens } from "cognitive-context";

const require = createRequire(import.meta.url);
const packageDir = join(require.resolve("cognitive-context/package.json"), "..");

// ----- the README's examples ---------------------------------------------------------------

/// Every ```js block of the shipped README, run as its own ES module. console.assert only
/// prints in Node, so each block runs with a console.assert that throws.
const readme = readFileSync(join(packageDir, "README.md"), "utf8");
const examples = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
const strictAssert =
  'console.assert = (ok, ...message) => { if (!ok) throw new Error("README assertion failed " + message.join(" ")); };\n';

test("the README has examples to run", () => {
  assert.ok(examples.length >= 5, `found ${examples.length} js blocks`);
});

examples.forEach((code, index) => {
  test(`README example ${index + 1} runs`, () => {
    const dir = mkdtempSync(join(process.cwd(), "readme-"));
    const file = join(dir, "example.mjs");
    // Imports must stay first in a module; the strict assert goes after them.
    const lines = code.split("\n");
    const firstCode = lines.findIndex((line) => !line.startsWith("import "));
    lines.splice(firstCode, 0, strictAssert);
    writeFileSync(file, lines.join("\n"));
    execFileSync(process.execPath, [file], { stdio: "pipe" });
  });
});

// ----- a scripted 30-turn session ----------------------------------------------------------

/// Distinct words per topic, so that no two summaries share the keywords that count as a
/// reference.
function turn(session, user, assistant = "ok") {
  session.beginTurn(user);
  return { report: null, end: (ops) => { ops?.(); return session.endTurn(assistant); } };
}

function stateOf(session, id) {
  const entry = session.effortStatus().efforts.find((e) => e.id === id);
  return entry ? entry.state : "evicted";
}

test("30 turns: decay, eviction and search behave as specified", () => {
  const s = new Session({ decayThreshold: 3, summaryEvictionThreshold: 20, ambientWindow: 10 });
  // Turns 1-3: the pelican effort, concluded with a summary.
  turn(s, "Let's work on the pelican migration").end(() => s.openEffort("pelican migration"));
  turn(s, "The pelican schema needs a new column").end();
  turn(s, "Pelican migration finished").end(() =>
    s.closeEffort({ summary: "Pelican schema migrated with a nullable column" }));
  assert.equal(stateOf(s, "pelican-migration"), "concluded");

  // Turn 4: the pelican effort is expanded; turns 5-7 never mention it: it decays in turn 7.
  turn(s, "Show me the full pelican history").end(() => {
    const expanded = s.expandEffort("pelican-migration");
    assert.ok(expanded.tokens_loaded > 0);
  });
  assert.equal(stateOf(s, "pelican-migration"), "expanded");
  const banners = [];
  for (let n = 5; n <= 7; n++) {
    const report = turn(s, `weather small talk number ${n}`).end();
    banners.push(...report.banners);
  }
  assert.deepEqual(banners, ["--- Auto-collapsed effort: pelican-migration (inactive for 3 turns) ---"]);
  assert.equal(stateOf(s, "pelican-migration"), "concluded");
  const plan = s.buildContext();
  assert.ok(plan.included.some((i) => i.id === "summary:pelican-migration"));

  // Turns 8-27: unrelated chat. The summary was last referenced in turn 4 (the expansion) and
  // leaves working memory after 20 turns without a reference.
  for (let n = 8; n <= 27; n++) {
    turn(s, `coffee chat number ${n}`).end();
    if (n < 24) assert.equal(stateOf(s, "pelican-migration"), "concluded", `turn ${n}`);
  }
  assert.equal(stateOf(s, "pelican-migration"), "evicted");
  const evictedPlan = s.buildContext();
  assert.ok(evictedPlan.excluded.some((i) => i.id === "evicted" && i.reason === "evicted_unreferenced"));
  // The ambient window keeps the last 10 exchanges; older chat is one grouped exclusion.
  assert.equal(evictedPlan.included.filter((i) => i.section === "ambient").length, 10);
  assert.ok(evictedPlan.excluded.some((i) => i.reason === "outside_ambient_window"));

  // Turn 28: search finds the evicted effort and brings it back.
  turn(s, "What did we do about the pelican schema?").end(() => {
    const found = s.searchEfforts("pelican schema");
    assert.equal(found.results[0].id, "pelican-migration");
    assert.equal(found.results[0].state, "evicted");
    assert.deepEqual(found.results[0].matched, ["pelican", "schema"]);
  });
  assert.equal(stateOf(s, "pelican-migration"), "concluded");
  assert.throws(() => s.searchEfforts("the and of"), { code: "effort" });

  // Turns 29-30, and the whole curve: 30 metrics points, savings against the naive context.
  turn(s, "more coffee").end();
  turn(s, "last coffee").end();
  const metrics = s.metrics();
  assert.equal(metrics.turn, 30);
  assert.equal(metrics.history.length, 30);
  assert.equal(metrics.decay.auto_collapses, 1);
  assert.ok(metrics.working_tokens < metrics.naive_tokens);
  assert.equal(metrics.history[6].events[0].kind, "auto_collapsed");

  // The document restores the same context.
  const restored = Session.fromJSON(JSON.stringify(s));
  assert.equal(restored.buildContext().plan_id, s.buildContext().plan_id);
});

test("abortTurn restores the session and returns the text", () => {
  const s = new Session();
  s.beginTurn("Let's work on the kiwi release");
  s.openEffort("kiwi release");
  assert.equal(s.abortTurn(), "Let's work on the kiwi release");
  assert.equal(s.activeEffort, undefined);
  assert.equal(s.turn, 0);
  assert.throws(() => s.endTurn("x"), { code: "turn", message: "no turn is in progress; call begin_turn first" });
});

test("options are validated with precise errors", () => {
  assert.throws(() => new Session({ ambientWindow: 2.5 }), { code: "config", message: "ambientWindow must be a whole number, got 2.5" });
  assert.throws(() => new Session({ encoding: "p50k" }), { code: "config", message: "unknown encoding 'p50k'; supported: o200k_base, cl100k_base" });
  assert.throws(() => new Session({ decayTreshold: 3 }), (error) => error.code === "config" && error.message.startsWith("unknown session option `decayTreshold`"));
  assert.equal(new Session({ encoding: "cl100k_base" }).metrics().counted_with, "cl100k_base");
  assert.equal(countTokens("hello world", "cl100k_base"), 2);
});

test("storage needs a browser: Node gets a clear error", async () => {
  await assert.rejects(SessionStore.open(), { code: "unavailable" });
});
