// The package in a fresh Next.js app (app router, a route handler, Turbopack: Next 16's
// default), with no next.config: `next build` then `next start`, and `next dev`, each answering
// POST /api/chat with a turn of the offline demo model. Bundled into the server, the package's
// CommonJS module cannot find its .wasm and rank tables beside itself; its ES entry for Node
// names them so that Turbopack ships them (npm/ccm/glue/entry.node.mjs). Before that, both
// commands failed with ENOENT on node/ccm_bg.wasm unless the app listed the package in
// `serverExternalPackages`.
//
// npm/test-package prepares the app (npm/fixtures/nextjs, Next from a cached install, the
// packed tarball unpacked into its node_modules) and passes its directory in CCM_NEXTJS_DIR.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

const app = process.env.CCM_NEXTJS_DIR;
const next = app && join(app, "node_modules", "next", "dist", "bin", "next");
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", NODE_ENV: undefined };

/** Runs `next <args>` in the app; resolves with its output once `ready(output)` holds (or it exits). */
function runNext(args, { ready, timeout = 180_000 } = {}) {
  // A process group of its own, so that stopping it stops Next's workers too.
  const child = spawn(process.execPath, [next, ...args], { cwd: app, env, detached: true });
  let output = "";
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`next ${args.join(" ")} timed out:\n${output}`)), timeout);
    const check = () => {
      if (ready?.(output)) {
        clearTimeout(timer);
        resolve(output);
      }
    };
    child.stdout.on("data", (chunk) => { output += chunk; check(); });
    child.stderr.on("data", (chunk) => { output += chunk; check(); });
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (ready) reject(new Error(`next ${args.join(" ")} exited (${code}) before it was ready:\n${output}`));
      else if (code === 0) resolve(output);
      else reject(new Error(`next ${args.join(" ")} failed (${code}):\n${output}`));
    });
  });
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  };
  return { done, stop };
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function chat(port, message) {
  const response = await fetch(`http://127.0.0.1:${port}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text.slice(0, 2000));
  return JSON.parse(text);
}

/** Two turns against a running app: the session lives in the server between requests. */
async function converse(port) {
  const first = await chat(port, "Let's work on the auth bug: 401 after an hour.");
  assert.match(first.reply, /--- Started effort: auth-bug ---/);
  assert.equal(first.activeEffort, "auth-bug");
  // Exact counts: the rank table was found where Next put it.
  assert.equal(first.exact, true);
  assert.equal(first.helloWorld, 2);
  assert.ok(first.contextTokens > 0);
  const second = await chat(port, "One more detail: it only happens on mobile.");
  assert.equal(second.activeEffort, "auth-bug");
  assert.ok(second.contextTokens > first.contextTokens, JSON.stringify([first, second]));
}

test("the Next.js app needs no next.config", () => {
  assert.ok(app && existsSync(next), "CCM_NEXTJS_DIR must name the app npm/test-package prepared");
  assert.deepEqual(readdirSync(app).filter((name) => name.startsWith("next.config")), []);
});

test("next build, then next start, answers POST /api/chat", async () => {
  const build = await runNext(["build"]).done;
  assert.match(build, /Turbopack/, "Next 16 builds with Turbopack by default");
  assert.match(build, /\/api\/chat/);
  const port = await freePort();
  const server = runNext(["start", "-p", String(port), "-H", "127.0.0.1"], { ready: (out) => /Ready in/.test(out) });
  try {
    await server.done;
    await converse(port);
  } finally {
    server.stop();
  }
});

test("next dev answers POST /api/chat", async () => {
  const port = await freePort();
  const server = runNext(["dev", "-p", String(port), "-H", "127.0.0.1"], { ready: (out) => /Ready in/.test(out) });
  try {
    await server.done;
    await converse(port);
  } finally {
    server.stop();
  }
});
