// The model's side of the API is held to the person's limits (issue 26): a model's tool call
// over a size limit, or with arguments that are not an object, is answered with ok: false on
// its own, never thrown, and the other calls of the response still run; runTurn checks its
// options as strictly as the rest of the API.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Session } from "cognitive-context";

test("the model's calls are held to the person's limits: a name openEffort refuses is refused to open_effort too", () => {
  const s = new Session({ maxNameChars: 10 });
  s.beginTurn("start something");
  assert.throws(() => s.openEffort("n".repeat(11)), { code: "too_large" });
  for (const [tool, args] of [
    ["open_effort", { name: "n".repeat(11) }],
    ["open_effort", JSON.stringify({ name: "n".repeat(11), description: "fine" })],
    ["pin_context", { target: `summary:${"x".repeat(20)}` }],
    ["switch_effort", { id: "i".repeat(11) }],
  ]) {
    const outcome = s.executeTool(tool, args);
    assert.equal(outcome.ok, false, tool);
    assert.match(outcome.result.error, /more than the limit of 10 for names \(the session option maxNameChars\)/, tool);
  }
  // A name too long to be a name is answered too, not thrown.
  const badName = s.executeTool("x".repeat(201), {});
  assert.equal(badName.ok, false);
  assert.match(badName.result.error, /more than the limit of 200/);
  assert.equal(s.toJSON().efforts.length, 0, "nothing was opened");
  assert.equal(s.executeTool("open_effort", { name: "n".repeat(10) }).ok, true);
  s.endTurn("ok");
});

test("runTurn refuses maxAttempts 0 instead of reading it as 1", async () => {
  const s = new Session();
  await assert.rejects(s.runTurn("hello", { provider: "offline", maxAttempts: 0 }), { code: "argument", message: /maxAttempts must be at least 1/ });
  assert.equal(s.inTurn, false);
  assert.equal(s.turn, 0);
  const result = await s.runTurn("hello", { provider: "offline", maxAttempts: 1 });
  assert.equal(typeof result.reply, "string");
});

test("runToolCalls answers each bad call on its own: the valid calls of the response still run, nothing throws", async () => {
  const s = new Session();
  s.beginTurn("let's start");
  const response = {
    choices: [{
      message: {
        content: "",
        tool_calls: [
          { id: "good", type: "function", function: { name: "open_effort", arguments: JSON.stringify({ name: "login page" }) } },
          { id: "number", type: "function", function: { name: "open_effort", arguments: 42 } },
          { id: "huge", type: "function", function: { name: "open_effort", arguments: JSON.stringify({ name: "x".repeat(2_000_000) }) } },
          { id: "long-name", type: "function", function: { name: "open_effort", arguments: { name: "n".repeat(5_000) } } },
          { id: "status", type: "function", function: { name: "effort_status", arguments: "{}" } },
          { id: "nameless", type: "function", function: { name: 7, arguments: "{}" } },
        ],
      },
    }],
  };
  const { outcomes, messages } = await s.runToolCalls(response);
  assert.deepEqual(outcomes.map((o) => o.ok), [true, false, false, false, true, false]);
  assert.match(outcomes[1].result.error, /JSON object/);
  assert.match(outcomes[2].result.error, /more than the limit of 1,000,000 \(the session option maxMessageChars\)/);
  assert.match(outcomes[3].result.error, /more than the limit of 1,000 for names/);
  // A name that is not text is answered as an unknown tool, in the public vocabulary.
  assert.doesNotMatch(outcomes[5].result.error, /loadLogsForTool|argsJson/);
  assert.deepEqual(messages.map((m) => m.tool_call_id), ["good", "number", "huge", "long-name", "status", "nameless"]);
  assert.equal(s.activeEffort, "login-page");
  s.endTurn("Started.");
});
