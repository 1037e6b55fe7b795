// The package in a web app, bundled by each bundler as a developer would run it: Vite (dev
// server and build), esbuild, Rollup and webpack 5 build npm/fixtures/app/main.js with the
// commands in npm/fixtures/package.json (no configuration files), a page without a bundler
// imports it through an import map, and headless Chromium opens each page twice: the first visit creates a session, counts tokens and saves the session to
// IndexedDB; after a reload the page loads it back.
//
// Runs in the fixture project where npm/test-package installed the packed tarball (this file
// is copied to <fixtures>/test/). Writes each bundle's size to <fixtures>/bundles.md.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { readFile, readdir, stat, writeFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync } from "node:zlib";
import { chromium } from "playwright-core";

const fixtures = fileURLToPath(new URL("..", import.meta.url));

// The flags of every headless Chromium in this repository's tests (see DESIGN's toolchain notes).
const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

// What each bundler needed beyond its plain command, for the size table and the README.
const BUNDLERS = [
  { name: "Vite build", dir: "vite", script: "build:vite", config: "none" },
  { name: "esbuild", dir: "esbuild", script: "build:esbuild", config: "copy the .wasm and .ccmt files beside the bundle" },
  { name: "Rollup", dir: "rollup", script: "build:rollup", config: "@rollup/plugin-node-resolve (to find any npm package); copy the .wasm and .ccmt files beside the bundle" },
  { name: "webpack 5", dir: "webpack", script: "build:webpack", config: "none" },
];

let browser;
const sizes = [];

before(async () => {
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

after(async () => {
  await browser?.close();
  const table = [
    "| bundler | configuration | JS | JS brotli | wasm | wasm brotli | rank tables | build |",
    "|---|---|---|---|---|---|---|---|",
    ...sizes.map((s) => `| ${s.name} | ${s.config} | ${kib(s.js)} | ${kib(s.jsBrotli)} | ${kib(s.wasm)} | ${kib(s.wasmBrotli)} | ${kib(s.tables)} | ${s.seconds.toFixed(1)} s |`),
  ].join("\n");
  await writeFile(join(fixtures, "bundles.md"), `${table}\n`);
});

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;

/** Serves `root` as static files on 127.0.0.1 (wasm with its MIME type, for streaming compilation). */
async function serve(root) {
  const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
  const server = createServer(async (request, response) => {
    let path = normalize(join(root, decodeURIComponent(new URL(request.url, "http://x").pathname)));
    if (!path.startsWith(root)) path = root;
    if (path.endsWith("/")) path += "index.html";
    try {
      const body = await readFile(path);
      response.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404);
      response.end("not found");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) };
}

/** Opens `url`, waits for the page's outcome, reloads, waits again; returns both outcomes. */
async function visitTwice(url) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("response", (response) => {
    // The favicon is the only file a fixture does not ship.
    if (response.status() >= 400 && !response.url().endsWith("/favicon.ico")) {
      problems.push(`HTTP ${response.status()} for ${response.url()}`);
    }
  });
  const outcome = async () => {
    await page.waitForFunction(() => window.ccmFixture !== undefined, null, { timeout: 60_000 });
    return page.evaluate(() => window.ccmFixture);
  };
  try {
    await page.goto(url);
    const first = await outcome();
    await page.reload();
    const second = await outcome();
    return { first, second, problems };
  } finally {
    await context.close();
  }
}

function checkVisits({ first, second, problems }) {
  assert.deepEqual(problems, []);
  assert.equal(first.error, undefined, first.error);
  assert.equal(second.error, undefined, second.error);
  assert.equal(first.visit, "first");
  assert.equal(first.count, 2, "o200k_base count of the engine module");
  assert.equal(first.tokensModuleCount, 2, "cl100k_base count of the tokens module");
  assert.equal(first.backend, "indexeddb");
  assert.ok(first.saved.records_written > 0);
  assert.equal(first.turn, 1);
  assert.equal(first.activeEffort, "auth-bug");
  assert.equal(second.visit, "after reload");
  assert.deepEqual(second.loadProblems, []);
  assert.equal(second.turn, 1);
  assert.equal(second.activeEffort, "auth-bug");
  assert.equal(second.contextTokens, first.contextTokens, "the loaded session builds the same context");
  assert.ok(first.contextTokens > first.standalone, "the stored exchange is in the context");
}

// Brotli at quality 11 (as SIZES.md) takes seconds for a 2.7 MB .wasm, and every bundler ships
// the same .wasm bytes, so each distinct file is compressed once.
const brotliSizes = new Map();
function brotliSize(bytes) {
  const key = createHash("sha256").update(bytes).digest("hex");
  if (!brotliSizes.has(key)) brotliSizes.set(key, brotliCompressSync(bytes).length);
  return brotliSizes.get(key);
}

/** Sizes of what a bundler wrote: JavaScript, wasm (raw and brotli) and the rank tables. */
async function measure(dir) {
  const total = { js: 0, jsBrotli: 0, wasm: 0, wasmBrotli: 0, tables: 0 };
  const walk = async (path) => {
    for (const entry of await readdir(path, { withFileTypes: true })) {
      const file = join(path, entry.name);
      if (entry.isDirectory()) {
        await walk(file);
        continue;
      }
      const kind = { ".js": "js", ".wasm": "wasm", ".ccmt": "tables" }[extname(file)];
      if (kind === undefined) continue;
      const bytes = await readFile(file);
      total[kind] += bytes.length;
      if (kind !== "tables") total[`${kind}Brotli`] += brotliSize(bytes);
    }
  };
  await walk(dir);
  return total;
}

for (const bundler of BUNDLERS) {
  test(`${bundler.name}: the built page counts, saves to IndexedDB and loads after a reload`, async () => {
    const started = performance.now();
    execFileSync("npm", ["run", "--silent", bundler.script], { cwd: fixtures, stdio: ["ignore", "pipe", "pipe"] });
    const seconds = (performance.now() - started) / 1000;
    const dist = join(fixtures, bundler.dir, "dist");
    assert.ok((await stat(dist)).isDirectory(), `${bundler.script} wrote ${dist}`);
    sizes.push({ name: bundler.name, config: bundler.config, seconds, ...(await measure(dist)) });
    // Vite's build writes its own index.html into dist; the others' pages load ./dist/main.js.
    const site = await serve(bundler.dir === "vite" ? dist : join(fixtures, bundler.dir));
    try {
      checkVisits(await visitTwice(site.url));
    } finally {
      await site.close();
    }
  });
}

test("no bundler: the page works with an import map and the package's files served as they are", async () => {
  // The fixture directory is served whole, so the import map can point into node_modules.
  const site = await serve(fixtures);
  try {
    checkVisits(await visitTwice(`${site.url}plain/`));
  } finally {
    await site.close();
  }
});

test("Vite dev server: the page works with the package pre-bundled, without configuration", async () => {
  const { createServer: createViteServer } = await import("vite");
  const server = await createViteServer({
    root: join(fixtures, "vite"),
    logLevel: "warn",
    server: { host: "127.0.0.1", port: 0 },
  });
  await server.listen();
  try {
    const visits = await visitTwice(server.resolvedUrls.local[0]);
    checkVisits(visits);
    // The point of this test: Vite pre-bundled the package (moving its modules away from their
    // .wasm and .ccmt files), and the URLs still lead to the files.
    const optimized = Object.keys(server.environments.client.depsOptimizer?.metadata.optimized ?? {});
    assert.ok(optimized.includes("cognitive-context"), `pre-bundled: ${optimized.join(", ")}`);
  } finally {
    await server.close();
  }
});
