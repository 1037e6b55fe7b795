// The adapters for hosts with their own model client, from the packed tarball in Node:
// toolDefinitions' SDK shapes, runToolCalls with each provider's response shape,
// contextMessages with the turn's tool rounds, closeEffortWith (summaries written by the
// host's model), and streamTurn. The README recipes run the same against the real SDKs
// (recipes.test.mjs).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Session, toolDefinitions } from "cognitive-context";
import { startMock } from "./mock.mjs";

test("toolDefinitions: OpenAI's tools shape by default, Anthropic's and the plain one on request", () => {
  const openai = toolDefinitions();
  assert.equal(openai.length, 11);
  assert.deepEqual(Object.keys(openai[0]).sort(), ["function", "type"]);
  assert.equal(openai[0].type, "function");
  assert.equal(openai[0].function.name, "open_effort");
  assert.equal(openai[0].function.parameters.type, "object");
  assert.deepEqual(toolDefinitions({ format: "openai" }), openai);

  const anthropic = toolDefinitions({ format: "anthropic" });
  assert.deepEqual(Object.keys(anthropic[0]).sort(), ["description", "input_schema", "name"]);
  assert.deepEqual(anthropic[0].input_schema, openai[0].function.parameters);

  const plain = new Session().toolDefinitions({ format: "plain" });
  assert.deepEqual(plain[0], { name: "open_effort", description: openai[0].function.description, parameters: openai[0].function.parameters });
  assert.deepEqual(new Session().toolDefinitions(), openai);

  assert.throws(() => toolDefinitions({ format: "gemini" }), (e) => e.code === "argument" && /unknown format "gemini"/.test(e.message));
  assert.throws(() => toolDefinitions("anthropic"), { code: "argument" });
});

test("runToolCalls: an OpenAI message's calls run, the results come back as tool messages, and contextMessages carries the round", async () => {
  const session = new Session();
  session.beginTurn("Let's look at the billing export.");
  const response = {
    choices: [{
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "open_effort", arguments: '{"name":"billing export"}' } },
          { id: "call_2", type: "function", function: { name: "collapse_effort", arguments: { id: "billing-export" } } },
        ],
      },
    }],
  };
  const done = await session.runToolCalls(response);
  assert.equal(done.format, "openai");
  assert.equal(session.activeEffort, "billing-export");
  assert.deepEqual(done.outcomes.map((o) => o.ok), [true, false]);
  assert.deepEqual(done.banners, ["--- Started effort: billing-export ---"]);
  assert.equal(done.messages.length, 2);
  assert.deepEqual(done.messages[0], { role: "tool", tool_call_id: "call_1", content: JSON.stringify(done.outcomes[0].result) });
  assert.match(JSON.parse(done.messages[1].content).error, /is open/);

  const messages = session.contextMessages();
  const last3 = messages.slice(-3);
  assert.equal(last3[0].role, "assistant");
  assert.equal(last3[0].content, "", "empty text beside the tool calls");
  assert.deepEqual(last3[0].tool_calls[1], { id: "call_2", type: "function", function: { name: "collapse_effort", arguments: '{"id":"billing-export"}' } });
  assert.deepEqual(last3.slice(1), done.messages);
  // The user's message of this turn comes right before the round.
  assert.deepEqual(messages[messages.length - 4], { role: "user", content: "Let's look at the billing export." });

  // A refused beginTurn (a turn is in progress) keeps the rounds.
  assert.throws(() => session.beginTurn("again"), { code: "turn" });
  assert.equal(session.contextMessages().filter((m) => m.role === "tool").length, 2);
  // The rounds belong to the turn: ending it forgets them.
  session.endTurn("Opened.");
  assert.ok(session.contextMessages().every((m) => m.role !== "tool"));
});

test("runToolCalls: Anthropic tool_use blocks with object input; contextMessages({ format: 'anthropic' }) alternates and leads with system", async () => {
  const session = new Session();
  session.beginTurn("Start the ledger rounding work.");
  const message = {
    role: "assistant",
    content: [
      { type: "text", text: "Opening an effort." },
      { type: "tool_use", id: "toolu_1", name: "open_effort", input: { name: "ledger rounding" } },
      { type: "tool_use", id: "toolu_2", name: "no_such_tool", input: {} },
    ],
  };
  const done = await session.runToolCalls(message);
  assert.equal(done.format, "anthropic");
  assert.equal(session.activeEffort, "ledger-rounding");
  assert.equal(done.messages.length, 1);
  const [reply] = done.messages;
  assert.equal(reply.role, "user");
  assert.deepEqual(reply.content.map((b) => [b.type, b.tool_use_id, b.is_error ?? false]), [["tool_result", "toolu_1", false], ["tool_result", "toolu_2", true]]);

  const context = session.contextMessages({ format: "anthropic" });
  assert.ok(context.system.length > 0, "the system prompt is the top-level system text");
  assert.ok(context.messages.every((m) => m.role === "user" || m.role === "assistant"));
  for (let i = 1; i < context.messages.length; i++) {
    assert.notEqual(context.messages[i].role, context.messages[i - 1].role, "roles alternate");
  }
  assert.equal(context.messages[0].role, "user");
  const assistant = context.messages[context.messages.length - 2];
  assert.deepEqual(assistant.content, message.content);
  assert.deepEqual(context.messages[context.messages.length - 1], reply);

  // An aborted turn forgets its rounds too.
  session.abortTurn();
  session.beginTurn("again");
  assert.ok(session.contextMessages({ format: "anthropic" }).messages.every((m) => m.content.every((b) => b.type === "text")));
});

test("runToolCalls: Vercel AI SDK tool calls (input or args) and LangChain AIMessage tool_calls", async () => {
  const session = new Session();
  session.beginTurn("Let's work on the pelican migration.");
  const ai = await session.runToolCalls({
    text: "",
    toolCalls: [{ toolCallId: "c1", toolName: "open_effort", input: { name: "pelican migration" } }],
  });
  assert.equal(ai.format, "ai-sdk");
  assert.equal(ai.messages.length, 1);
  assert.equal(ai.messages[0].role, "tool");
  assert.deepEqual(ai.messages[0].content[0].output, { type: "json", value: ai.outcomes[0].result });
  assert.equal(session.activeEffort, "pelican-migration");

  const older = await session.runToolCalls([{ toolCallId: "c2", toolName: "effort_status", args: "{}" }]);
  assert.equal(older.outcomes[0].ok, true);

  const context = session.contextMessages({ format: "ai-sdk" });
  assert.ok(context.instructions.length > 0);
  // The same text under the name ai 5 and 6 read (recipes.test.mjs runs both on the wire).
  assert.equal(context.system, context.instructions);
  assert.ok(context.messages.every((m) => m.role !== "system"));
  assert.deepEqual(context.messages.slice(-4).map((m) => m.role), ["assistant", "tool", "assistant", "tool"]);
  assert.deepEqual(context.messages.at(-2).content, [{ type: "tool-call", toolCallId: "c2", toolName: "effort_status", input: {} }]);

  const langchain = await session.runToolCalls({ content: "", tool_calls: [{ id: "lc1", name: "search_efforts", args: { query: "pelican" } }] });
  assert.equal(langchain.format, "langchain");
  assert.deepEqual(langchain.messages.map((m) => [m.role, m.tool_call_id]), [["tool", "lc1"]]);

  await assert.rejects(session.runToolCalls(42), { code: "argument" });
  await assert.rejects(session.runToolCalls({ something: "else" }), { code: "argument" });
  const nothing = await session.runToolCalls({ role: "assistant", content: "Just text." });
  assert.deepEqual(nothing.messages, []);
});

test("closeEffortWith: the host's model writes the summary from runTurn's request; a failing one falls back to the extractive summary", async () => {
  const session = new Session();
  session.beginTurn("Let's fix the auth bug: 401 after an hour.");
  session.openEffort("auth bug");
  session.endTurn("The refresh token probably expires early.");
  session.beginTurn("Fixed it, the TTL was 1h; raised to 24h. Done.");

  let seen;
  const outcome = await session.closeEffortWith({
    summarize: async (request) => {
      seen = request;
      // The session is busy while the host's model writes: nothing can change underneath.
      assert.throws(() => session.openEffort("meanwhile"), { code: "busy" });
      return "Summary: Refresh token TTL raised from 1h to 24h; fixes the 401 after an hour.";
    },
  });
  assert.equal(seen.effort_id, "auth-bug");
  assert.equal(seen.messages[0].role, "system");
  assert.equal(seen.system, seen.messages[0].content);
  assert.match(seen.prompt, /401 after an hour/);
  assert.match(seen.prompt, /raised to 24h/, "the turn's own user text is in the log");
  assert.equal(seen.max_tokens, 400);
  assert.ok(outcome.ok && outcome.name === "close_effort");
  assert.equal(outcome.result.summary, "Refresh token TTL raised from 1h to 24h; fixes the 401 after an hour.");
  assert.equal(session.endTurn("Concluded.").banners[0].startsWith("--- Concluded effort: auth-bug ---"), true);

  session.beginTurn("Now the ledger.");
  session.openEffort("ledger");
  const fallback = await session.closeEffortWith({ summarize: () => { throw new Error("model offline"); } });
  assert.ok(fallback.ok);
  const report = session.endTurn("ok");
  assert.ok(report.banners.some((b) => b.includes("model offline")), report.banners.join("\n"));

  // A refused conclusion asks the host's model nothing.
  session.beginTurn("close it again");
  let asked = false;
  const refused = await session.closeEffortWith({ id: "ledger", summarize: () => { asked = true; return "x"; } });
  assert.equal(refused.ok, false);
  assert.equal(asked, false);
  await assert.rejects(session.closeEffortWith({}), { code: "argument" });
  session.endTurn("ok");
});

test("runToolCalls with summarize: a close_effort without a summary is summarised by the host's model, one with a summary is not", async () => {
  const session = new Session();
  session.beginTurn("Work on the cache layer.");
  session.openEffort("cache layer");
  session.openEffort("queue");
  let calls = 0;
  const summarize = () => {
    calls += 1;
    return "Cache layer: LRU with 5 min TTL chosen.";
  };
  const done = await session.runToolCalls({
    content: null,
    tool_calls: [
      { id: "a", type: "function", function: { name: "close_effort", arguments: '{"id":"cache-layer"}' } },
      { id: "b", type: "function", function: { name: "close_effort", arguments: '{"id":"queue","summary":"Queue: kept as is."}' } },
    ],
  }, { summarize });
  assert.equal(calls, 1);
  assert.equal(done.outcomes[0].result.summary, "Cache layer: LRU with 5 min TTL chosen.");
  assert.equal(done.outcomes[1].result.summary, "Queue: kept as is.");
  session.endTurn("Both concluded.");
});

test("streamTurn yields text as it streams, each tool call as it is handled, then banners and the result; leaving early cancels the turn", async () => {
  const session = new Session();
  const events = [];
  for await (const event of session.streamTurn("Let's work on the auth bug: 401 after an hour.", { provider: "offline" })) {
    events.push(event);
  }
  const kinds = events.map((e) => e.type);
  // The call is yielded when it has run, before the answer that follows it has streamed.
  assert.ok(kinds.indexOf("tool_call") >= 0 && kinds.indexOf("tool_call") < kinds.lastIndexOf("text"), kinds.join(","));
  assert.equal(kinds.at(-1), "done");
  assert.equal(events.find((e) => e.type === "tool_call").call.name, "open_effort");
  assert.ok(events.some((e) => e.type === "banner" && e.banner.startsWith("--- Started effort: auth-bug ---")));
  const done = events.at(-1);
  assert.equal(events.filter((e) => e.type === "text").map((e) => e.text).join(""), done.result.model_text);
  assert.equal(session.turn, 1);

  // A failed turn throws from the loop, with the person's text.
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(async () => {
    for await (const _ of session.streamTurn("cancelled", { provider: "offline", signal: controller.signal }));
  }, (e) => e.code === "cancelled" && e.userText === "cancelled");
});

test("streamTurn against the mock provider: streamed deltas and a retry event", async () => {
  const mock = await startMock();
  after(() => mock.stop());
  await mock.enqueue([
    { fault: { status: 503 } },
    { text: "First part. Second part." },
  ]);
  const session = new Session();
  const events = [];
  for await (const event of session.streamTurn("hello there", {
    provider: "openai_compatible", baseUrl: `${mock.url}/v1`, model: "mock-model", initialRetryDelayMs: 10,
  })) {
    events.push(event);
  }
  const retry = events.find((e) => e.type === "retry");
  assert.ok(retry && retry.retry.failed_attempt === 1, JSON.stringify(events));
  const text = events.filter((e) => e.type === "text").map((e) => e.text).join("");
  assert.equal(text, "First part. Second part.");
  assert.equal(events.at(-1).type, "done");
  assert.equal(session.turn, 1);

  // Breaking out of the loop cancels the turn: the session is as before it.
  await mock.enqueue([{ text: "one two three four five six seven eight", fault: { chunk_delay_ms: 150 } }]);
  for await (const event of session.streamTurn("Something else entirely.", { provider: "openai_compatible", baseUrl: `${mock.url}/v1`, model: "mock-model" })) {
    assert.equal(event.type, "text");
    break;
  }
  // The loop exits only once the session is restored: no waiting needed.
  assert.equal(session.inTurn, false);
  assert.equal(session.turn, 1);

  // return() before the first next() cancels too, and resolves once the session is restored.
  await mock.enqueue([{ text: "one two three four five six seven eight", fault: { chunk_delay_ms: 150 } }]);
  const unread = session.streamTurn("Never read.", { provider: "openai_compatible", baseUrl: `${mock.url}/v1`, model: "mock-model" });
  const started = performance.now();
  assert.deepEqual(await unread.return(), { done: true, value: undefined });
  assert.ok(performance.now() - started < 5_000, "cancelled, not waited out");
  assert.equal(session.inTurn, false);
  assert.equal(session.turn, 1);
  assert.deepEqual(await unread.next(), { done: true, value: undefined });
});

test("refreshEmbeddings: the mock endpoint's vectors make search rank by meaning as well as by words", async () => {
  const mock = await startMock();
  after(() => mock.stop());
  const s = new Session();
  const said = "I framed my photographs of the harbour at dawn.";
  s.beginTurn(said);
  s.endTurn("They will look lovely.");
  for (let n = 0; n < 14; n++) {
    s.beginTurn(`Small talk number ${n}.`);
    s.endTurn("Indeed.");
  }
  const question = "Tell me about my photography.";
  const texts = () => s.findMessages(question).groups.flatMap((g) => g.excerpts.flatMap((e) => e.messages.map((m) => m.text)));
  // By words alone nothing matches: "photography" and "photographs" have different stems.
  assert.ok(!texts().includes(said));
  const embedded = await s.refreshEmbeddings({ baseUrl: `${mock.url}/v1`, model: "mock-embed", query: question });
  assert.equal(embedded, 30);
  assert.ok(texts().includes(said), JSON.stringify(texts()));
  const requests = await mock.requests();
  assert.ok(requests.some((r) => r.path.endsWith("/embeddings")), JSON.stringify(requests.map((r) => r.path)));
  await assert.rejects(s.refreshEmbeddings({ baseUrl: `${mock.url}/v1` }), { code: "argument" });
  await assert.rejects(s.refreshEmbeddings({ baseUrl: "http://127.0.0.1:9/v1", model: "mock-embed", query: "x" }), { code: "provider" });
});
