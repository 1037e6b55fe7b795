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
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Session } from "cognitive-context";
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

// The start of CCM's system prompt, which every turn's request must carry: without it the model
// never sees the efforts, the summaries or the tools' rules.
const SYSTEM_START = new Session().contextMessages()[0].content.slice(0, 80);

/** Whether a request body (any provider's shape) carries CCM's system prompt. */
const carriesSystemPrompt = (body) => JSON.stringify(body).includes(JSON.stringify(SYSTEM_START).slice(1, -1));

// The ai-sdk recipe as someone on `ai` 5 runs it: the compiled recipe with its imports pointed
// at ai 5.0 and @ai-sdk/openai 2.0 (installed under the aliases ai-v5 and @ai-sdk/openai-v2),
// and `system:` for `instructions:` in its own summary call, as the README says for ai 5 and 6.
// ai 5 ignores an option it does not know: when contextMessages gave `instructions` alone,
// every request of this run went out without CCM's system prompt and nothing failed.
const variants = recipes.map((recipe) => ({ ...recipe, sdk: recipe.name }));
const aiSdk = recipes.find((recipe) => recipe.name === "ai-sdk");
if (aiSdk) variants.push({ ...aiSdk, sdk: "ai 5", rewrite: (code) => code
  .replace(/from "ai"/g, 'from "ai-v5"')
  .replace(/from "@ai-sdk\/openai"/g, 'from "@ai-sdk/openai-v2"')
  .replace(/\binstructions: request\.system\b/g, "system: request.system") });

for (const { name, index, sdk, rewrite } of variants) {
  test(`recipe ${name}${sdk === name ? "" : ` with ${sdk}`} runs against the mock provider`, async () => {
    let compiled = join(fixtures, "typescript", "out", `readme-${index + 1}.js`);
    assert.ok(existsSync(compiled), `${compiled} is missing: readme.test.mjs compiles the README's blocks first`);
    if (rewrite) {
      const original = readFileSync(compiled, "utf8");
      const changed = rewrite(original);
      assert.notEqual(changed, original);
      compiled = compiled.replace(/\.js$/, `-${sdk.replace(/\W/g, "")}.js`);
      writeFileSync(compiled, changed);
    }
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
    // Every request of a turn carries CCM's system prompt on the wire, and the summary request
    // the recipe's own system text (runTurn's summary instructions).
    for (const at of [0, 1, 2, 4]) {
      assert.ok(carriesSystemPrompt(requests[at].body), `request ${at} (${served[at]}) went out without CCM's system prompt: ${JSON.stringify(requests[at].body).slice(0, 400)}`);
    }
    const summary = requests[3].body;
    const summarySystem = summary.system ?? summary.messages.find((m) => m.role === "system" || m.role === "developer")?.content;
    assert.ok(summarySystem, `the summary request went out without its system text: ${JSON.stringify(summary).slice(0, 400)}`);
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
