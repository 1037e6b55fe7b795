// The README's recipes (the `openai` SDK, `@anthropic-ai/sdk`, the Vercel AI SDK, LangChain.js)
// run against the local mock provider, with the SDKs installed in the fixture project from its
// lock file. readme.test.mjs type-checked them with tsc --strict against the SDKs' own types
// and emitted them; here each runs in its own Node process, its SDK pointed at the mock through
// the SDK's own environment variables, as a developer would point it at another endpoint.
//
// The scripted model opens an effort in the first turn and concludes it (without a summary of
// its own) in the second, so every recipe goes through a tool round, sends the results back in
// its SDK's shape, and has its own client write the summary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startMock } from "./mock.mjs";

const require = createRequire(import.meta.url);
const fixtures = fileURLToPath(new URL("..", import.meta.url));
const packageDir = dirname(require.resolve("cognitive-context/package.json"));
const readme = readFileSync(join(packageDir, "README.md"), "utf8");
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]);
const recipes = blocks
  .map((code, index) => ({ name: /^\/\/ Recipe: (\S+)/.exec(code)?.[1], index }))
  .filter((recipe) => recipe.name);

const SUMMARY = "Refresh token TTL raised from 1h to 24h; the 401 after an hour is fixed.";
const script = [
  { label: "open", when: { last_user_contains: "auth bug" }, tool_calls: [{ name: "open_effort", arguments: { name: "auth bug" } }] },
  { label: "answer-1", text: "Let's look at the refresh token." },
  { label: "close", tool_calls: [{ name: "close_effort", arguments: { id: "auth-bug" } }] },
  { label: "summary", when: { summary_request: true }, text: SUMMARY },
  { label: "answer-2", text: "Concluded." },
];

let mock;
before(async () => {
  mock = await startMock();
});
after(async () => {
  await mock?.stop();
});

test("the README has a recipe for each SDK", () => {
  assert.deepEqual(recipes.map((r) => r.name).sort(), ["ai-sdk", "anthropic", "langchain", "openai"]);
});

for (const { name, index } of recipes) {
  test(`recipe ${name} runs against the mock provider`, async () => {
    const compiled = join(fixtures, "typescript", "out", `readme-${index + 1}.js`);
    assert.ok(existsSync(compiled), `${compiled} is missing: readme.test.mjs compiles the README's blocks first`);
    await mock.reset();
    await mock.enqueue(script);
    const env = {
      ...process.env,
      OPENAI_API_KEY: "test-key",
      OPENAI_BASE_URL: `${mock.url}/v1`,
      ANTHROPIC_API_KEY: "test-key",
      ANTHROPIC_BASE_URL: mock.url,
    };
    const { stdout } = await promisify(execFile)(process.execPath, [compiled], { env, timeout: 60_000 });
    assert.match(stdout, /--- Started effort: auth-bug ---/);
    assert.match(stdout, /Let's look at the refresh token\./);
    assert.match(stdout, /--- Concluded effort: auth-bug ---/);
    assert.match(stdout, /Concluded\./);
    assert.ok(stdout.includes(SUMMARY), "the effort is concluded with the summary the recipe's own client asked for");

    const requests = (await mock.requests()).filter((r) => Array.isArray(r.body?.messages));
    const served = requests.map((r) => r.reply?.label);
    assert.deepEqual(served, ["open", "answer-1", "close", "summary", "answer-2"], JSON.stringify(served));
    // The request after the tool round carries the call and its result in the SDK's shape.
    const body = JSON.stringify(requests[1].body.messages);
    assert.match(body, name === "anthropic" ? /"tool_result"/ : /"role":"tool"/);
    assert.match(body, /open_efforts/);
    // The summary request is runTurn's: the effort's log, and the user's text of the turn.
    const summaryBody = JSON.stringify(requests[3].body);
    assert.match(summaryBody, /401 after an hour/);
    assert.match(summaryBody, /now 24h/);
  });
}
