// Tests of the packed npm package in Node, run with `node --test` in the fixture project where
// npm/test-package installed the tarball. They import "cognitive-context" exactly as a user
// would. (The README's examples are run by readme.test.mjs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { Session, SessionStore, countTokens } from "cognitive-context";

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

  // Turns 8-27: unrelated chat. The summary was last referenced in turn 4 (the expansion), so
  // it is in the contexts of turns 5 to 23 and leaves working memory at the end of turn 23.
  for (let n = 8; n <= 27; n++) {
    turn(s, `coffee chat number ${n}`).end();
    const expected = n < 23 ? "concluded" : "evicted";
    assert.equal(stateOf(s, "pelican-migration"), expected, `turn ${n}`);
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

test("recall: every stored message is found, recalled into the context, and brought in for a question on its own", () => {
  const s = new Session({ ambientWindow: 10 });
  turn(s, "My sister's wedding is on June 14 in Lisbon.", "How lovely!").end();
  for (let n = 1; n <= 14; n++) turn(s, `Random chat number ${n}.`, "Sure.").end();
  assert.ok(s.recallReady);
  // The message left the ambient window, and is found by its words, verbatim.
  const found = s.findMessages("when is the wedding in Lisbon");
  assert.equal(found.groups[0].log.kind, "ambient");
  const texts = found.groups[0].excerpts.flatMap((e) => e.messages.map((m) => m.text));
  assert.ok(texts.includes("My sister's wedding is on June 14 in Lisbon."), JSON.stringify(found));
  assert.ok(found.tokens > 0 && found.tokens <= 2000);
  // searchEfforts carries the same evidence; the tool result is the compact form the model reads.
  assert.deepEqual(s.findEfforts("wedding Lisbon").evidence, s.findMessages("wedding Lisbon"));
  s.beginTurn("Remind me, when is the wedding in Lisbon?");
  const auto = s.buildContext();
  const recalledItem = auto.included.find((i) => i.section === "recalled");
  assert.equal(recalledItem.reason.code, "auto_recalled");
  assert.ok(auto.totals.recall_tokens > 0);
  const outcome = s.executeTool("search_efforts", { query: "wedding Lisbon" });
  assert.ok(outcome.ok && outcome.name === "search_efforts");
  s.endTurn("June 14.");
  // recall() brings the excerpt into the context until it decays.
  s.beginTurn("Let's talk about the Lisbon trip.");
  const recalled = s.recall("sister wedding Lisbon");
  assert.ok(recalled.tokens_loaded > 0);
  s.endTurn("Sure.");
  const plan = s.buildContext();
  const item = plan.included.find((i) => i.reason.code === "recalled");
  assert.equal(item.section, "recalled");
  assert.equal(item.reason.query, "sister wedding Lisbon");
  assert.throws(() => s.recall("zebra unicorn"), { code: "effort" });
  assert.throws(() => s.findMessages("the of and"), { code: "effort" });
});

test("abortTurn restores the session and returns the text", () => {
  const s = new Session();
  s.beginTurn("Let's work on the kiwi release");
  s.openEffort("kiwi release");
  assert.equal(s.abortTurn(), "Let's work on the kiwi release");
  assert.equal(s.activeEffort, undefined);
  assert.equal(s.turn, 0);
  assert.throws(() => s.endTurn("x"), { code: "turn", message: "no turn is in progress; call beginTurn first" });
  s.beginTurn("one");
  assert.throws(() => s.beginTurn("two"), { code: "turn", message: "turn 1 is still in progress; call endTurn or abortTurn first" });
});

test("options are validated with precise errors", () => {
  assert.throws(() => new Session({ ambientWindow: 2.5 }), { code: "config", message: "ambientWindow must be a whole number, got 2.5" });
  assert.throws(() => new Session({ encoding: "p50k" }), { code: "config", message: "unknown encoding 'p50k'; supported: o200k_base, cl100k_base" });
  assert.throws(() => new Session({ decayTreshold: 3 }), (error) => error.code === "config" && error.message.startsWith("unknown session option `decayTreshold`"));
  assert.equal(new Session({ encoding: "cl100k_base" }).metrics().counted_with, "cl100k_base");
  assert.equal(countTokens("hello world", "cl100k_base"), 2);
});

test("every documented option is accepted: budgets of \"none\", the seed profile, the recall budgets", () => {
  // "none" is no budget: ten long ambient exchanges all stay; 0 keeps the newest only.
  const long = "word ".repeat(1600);
  const ambientKept = (options) => {
    const s = new Session(options);
    for (let n = 0; n < 12; n++) turn(s, `${long} ${n}`).end();
    return s.buildContext().included.filter((i) => i.section === "ambient").length;
  };
  assert.equal(ambientKept({ ambientTokenBudget: "none" }), 10);
  assert.equal(ambientKept({ ambientTokenBudget: 0 }), 1);
  assert.throws(() => new Session({ summaryTokenBudget: "unlimited" }), {
    code: "config",
    message: 'invalid configuration: summaryTokenBudget must be a number of tokens or "none" for no budget, got "unlimited"',
  });
  assert.throws(() => new Session({ leasedTokenBudget: true }), { code: "config", message: 'new Session: options.leasedTokenBudget must be a number or "none", got a boolean' });
  // The recall budgets, once refused at run time as unknown options although typed.
  new Session({ recallTokenBudget: 400, evidenceTokenBudget: 1500 });
  // The seed profile: search by keyword overlap, summaries only.
  const withTwoEfforts = (options) => {
    const s = new Session(options);
    for (const [name, summary] of [["auth bug", "Fixed 401 errors: refresh token TTL raised to one day."], ["token audit", "Audited every token store; rotated the signing keys."]]) {
      turn(s, `Let's work on the ${name}.`).end(() => s.openEffort(name));
      turn(s, "Done.").end(() => s.closeEffort({ summary }));
    }
    return s;
  };
  const seed = withTwoEfforts({ profile: "seed" });
  assert.deepEqual(seed.findEfforts("token").results, [], "one shared keyword is not enough for the seeds' search");
  const found = seed.findEfforts("refresh token expiry");
  assert.deepEqual(found.results.map((r) => r.id), ["auth-bug"]);
  assert.deepEqual(found.evidence.groups, []);
  assert.ok(withTwoEfforts().findEfforts("token").results.length > 0, "the ranked search finds it by one word");
  assert.throws(() => new Session({ profile: "spec" }), (e) => e.code === "config" && e.message.includes("unknown profile 'spec'"));
  assert.throws(() => new Session({ searchRule: "fuzzy" }), (e) => e.code === "config" && e.message.includes("unknown search rule 'fuzzy'"));
});

test("toCcmFiles writes the original layout: the manifest, one log per effort, rising timestamps", () => {
  // The import of these files is SessionStore.importCcmFiles (a browser store); the round trip
  // through it is tested in Rust (crates/ccm-import/tests/round_trip.rs) on the same code.
  const s = new Session();
  turn(s, "Hello there.", "Hi!").end();
  turn(s, "Let's work on the auth bug: 401 after an hour.", "Started.").end(() => s.openEffort("auth bug"));
  turn(s, "The refresh token TTL is 3600.", "Raise it to a day.").end();
  turn(s, "Done.", "Concluded.").end(() => s.closeEffort({ summary: "Refresh token TTL raised to 24h." }));
  turn(s, "Now the billing export.", "Started.").end(() => s.openEffort("billing export"));
  const files = s.toCcmFiles();
  assert.deepEqual(Object.keys(files).sort(), ["efforts", "manifest", "raw", "sessionState"]);
  assert.deepEqual(Object.keys(files.efforts), ["auth-bug", "billing-export"]);
  assert.match(files.manifest, /^efforts:\n/);
  assert.match(files.manifest, /id: auth-bug\n(.*\n)*? *status: concluded\n *summary: Refresh token TTL raised to 24h\./);
  assert.match(files.manifest, /active: true\n(.*\n)*? *id: billing-export\n/);
  const lines = (text) => text.trimEnd().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(lines(files.raw).map((l) => [l.role, l.content]), [["user", "Hello there."], ["assistant", "Hi!"]]);
  const auth = lines(files.efforts["auth-bug"]);
  assert.deepEqual(auth.map((l) => l.content), ["Let's work on the auth bug: 401 after an hour.", "Started.", "The refresh token TTL is 3600.", "Raise it to a day.", "Done.", "Concluded."]);
  // Every message of the session, in order, has a later timestamp than the one before.
  const all = [...lines(files.raw), ...auth, ...lines(files.efforts["billing-export"])].map((l) => Date.parse(l.timestamp));
  assert.ok(all.every((t) => Number.isFinite(t)));
  assert.deepEqual([...all].sort((a, b) => a - b), all);
  assert.equal(new Set(all).size, all.length);
  assert.equal(JSON.parse(files.sessionState).turn_count, 5);
});

test("compaction takes the Rust API's fields, not only a preset name", () => {
  // A small window filled by long messages: the standard thresholds compact, compaction off
  // leaves the planner to exclude, and custom thresholds are checked like the Rust API's.
  const fill = (options) => {
    const s = new Session({ contextWindow: 2048, reservedOutputTokens: 256, ambientTokenBudget: "none", ...options });
    const banners = [];
    for (let n = 0; n < 12; n++) {
      s.beginTurn(`Note ${n}: ${"detail ".repeat(120)}`);
      banners.push(...s.endTurn("ok").banners);
    }
    return banners.filter((b) => b.startsWith("--- Compacted context"));
  };
  assert.ok(fill({}).length > 0, "the standard thresholds compact");
  assert.deepEqual(fill({ compaction: { enabled: false } }), []);
  assert.deepEqual(fill({ compaction: "off" }), []);
  assert.ok(fill({ compaction: { preset: "early", softPerMille: 400, cooldownMessages: 0 } }).length > 0);
  assert.throws(() => new Session({ compaction: { softPerMille: 800, hardPerMille: 700 } }), (e) => e.code === "config" && e.message.includes("compaction thresholds must increase strictly"));
  assert.throws(() => new Session({ compaction: { softPermille: 500 } }), (e) => e.code === "config" && e.message.startsWith("unknown compaction option `softPermille`"));
  assert.throws(() => new Session({ compaction: { cooldownMessages: -1 } }), (e) => e.code === "config" && e.message.includes("cooldownMessages"), "errors name the option as JavaScript spells it");
  assert.throws(() => new Session({ compaction: 5 }), { code: "config", message: "new Session: options.compaction must be a string or an object, got a number" });
});

test("options and runTurn errors name things as JavaScript does", async () => {
  assert.throws(() => new Session({ contextWindow: 8000, reservedOutputTokens: 9000 }), {
    code: "config",
    message: "invalid configuration: reservedOutputTokens (9000) must be smaller than contextWindow (8000)",
  });
  const s = new Session();
  await assert.rejects(s.runTurn("hello", { provider: "gemini", model: "x" }), {
    code: "argument",
    message:
      "unknown provider 'gemini'; expected one of offline, openai, anthropic, openrouter, ollama, lmstudio, " +
      "openai_compatible (with a base URL), anthropic_compatible (with a base URL)",
  });
  // The same checks as on the command line and in the app (ccm-provider's), in JavaScript's terms.
  await assert.rejects(s.runTurn("hello", { provider: "openai_compatible", model: "x" }), {
    code: "argument",
    message: "the provider 'openai_compatible' needs a base URL, such as http://localhost:8000/v1 (give it as baseUrl)",
  });
  await assert.rejects(s.runTurn("hello", { provider: "openai", model: "x" }), {
    code: "argument",
    message: "OpenAI needs an API key: pass apiKey (or a baseUrl of a proxy that adds it)",
  });
  await assert.rejects(s.runTurn("hello", { provider: "ollama", baseUrl: "localhost:11434", model: "x" }), {
    code: "argument",
    message:
      "the base URL 'localhost:11434' must start with http:// or https:// followed by a host, " +
      "such as http://localhost:8000/v1",
  });
  // The session is untouched by a refused turn.
  assert.equal(s.turn, 0);
});

test("runTurn's records have the shapes its TypeScript declarations give them", async () => {
  // The declarations (TurnResult, TurnRequest, ToolTraceEntry in types.rs) are written by
  // hand; a field renamed in the core must fail here.
  const keys = (value) => Object.keys(value).sort();
  const s = new Session();
  const result = await s.runTurn("Let's work on the auth bug: 401 after an hour.", { provider: "offline" });
  assert.deepEqual(keys(result), ["final_answer_forced", "model_text", "reply", "report", "requests", "tool_calls", "tool_rounds"]);
  assert.equal(result.requests.length, 2);
  for (const request of result.requests) {
    assert.deepEqual(keys(request), ["attempts", "estimate", "outcome", "plan_id", "purpose", "reconciliation", "retries", "usage"]);
    assert.deepEqual(keys(request.estimate), ["context_tokens", "estimated_prompt_tokens", "tool_definition_tokens", "turn_extra_tokens"]);
    assert.deepEqual(keys(request.purpose), ["final_answer_forced", "kind", "round"]);
    assert.equal(request.purpose.kind, "turn");
    assert.deepEqual(keys(request.outcome), ["finish_reason", "status", "text_chars", "tool_calls"]);
  }
  assert.deepEqual(result.requests.map((r) => r.outcome.finish_reason), ["tool_calls", "stop"]);
  const [call] = result.tool_calls;
  assert.deepEqual(keys(call), ["arguments", "banner", "call_id", "handling", "name", "ok", "result", "round"]);
  assert.equal(call.handling, "executed");
  assert.deepEqual(call.result, { id: "auth-bug", open_efforts: ["auth-bug"] });
  // Telemetry's `why` is one of the codes of the InclusionReason type.
  const codes = ["system_prompt", "recently_referenced", "ambient_window", "expanded", "open_effort", "active_effort",
    "current_user_message", "pinned", "auto_retrieved", "auto_expanded", "attachment", "rolling_summary"];
  const whys = s.telemetry()[0].requests.flatMap((request) => request.included.map((item) => item.why));
  assert.ok(whys.length > 0 && whys.every((why) => codes.includes(why)), whys.join(", "));
});

test("executeTool takes the arguments as JSON text or as an SDK's parsed object, and refuses other types with code argument", () => {
  const s = new Session();
  s.beginTurn("Let's work on the billing export");
  // What the official SDKs hand over after parsing a tool call: an object.
  const opened = s.executeTool("open_effort", { name: "billing export" });
  assert.equal(opened.ok, true);
  assert.equal(opened.result.id, "billing-export");
  // The raw JSON text a provider sends still works, and so does an omitted argument.
  assert.equal(s.executeTool("effort_status", "{}").ok, true);
  assert.equal(s.executeTool("effort_status").ok, true);
  // A bad call from the model is a refused call, not an exception.
  assert.equal(s.executeTool("open_effort", "{not json").ok, false);
  const before = JSON.stringify(s.effortStatus());
  for (const [name, args] of [
    [42, "{}"],
    [null, "{}"],
    ["open_effort", 7],
    ["open_effort", true],
    ["open_effort", null],
    ["open_effort", ["billing"]],
    ["open_effort", 10n],
    ["open_effort", { name: 10n }],
  ]) {
    assert.throws(
      () => s.executeTool(name, args),
      (error) => error.code === "argument" && /^executeTool: (name|args) must be .*, got /.test(error.message),
      `executeTool(${typeof name}, ${Array.isArray(args) ? "array" : typeof args})`,
    );
  }
  assert.equal(JSON.stringify(s.effortStatus()), before, "refused calls changed nothing");
  s.endTurn("Opened.");
});

test("CommonJS callers get the same module", () => {
  const require = createRequire(import.meta.url);
  const cjs = require("cognitive-context");
  assert.equal(cjs.Session, Session);
  assert.equal(require("cognitive-context/lite").hasExactTokenCounts(), false);
});

test("storage needs a browser: Node gets a clear error that names FileSessionStore", async () => {
  await assert.rejects(SessionStore.open(), (e) => e.code === "unavailable" && e.message.includes("FileSessionStore.open"));
});
