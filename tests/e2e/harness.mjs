// Test harness for the app's end-to-end tests: the app's own server (web/serve.mjs) over the
// release build, the mock LLM server (a real HTTP server on 127.0.0.1), Debian's Chromium
// through playwright-core, and small helpers that drive the app the way a person does.
//
// Environment:
//   CCM_DIST          the release build (scripts/test e2e builds it into
//                     $CARGO_TARGET_DIR/ccm-web-dist; default: <repo>/target/dist)
//   CCM_MOCK_LLM_BIN  the ccm-mock-llm binary (default: $CARGO_TARGET_DIR/debug/ccm-mock-llm)
//   CCM_CHROMIUM      the browser (default: /usr/bin/chromium)
//   CCM_SCREENSHOTS   where screenshots go (default: <repo>/docs/screenshots)

import { spawn } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveDirectory } from '../../web/serve.mjs';
import { isLocalServerProbe } from '../../web/local-probes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../..');
const dist = process.env.CCM_DIST ?? path.join(repoRoot, 'target/dist');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(repoRoot, 'target');
const mockBin = process.env.CCM_MOCK_LLM_BIN ?? path.join(targetDir, 'debug/ccm-mock-llm');
const chromiumPath = process.env.CCM_CHROMIUM ?? '/usr/bin/chromium';
export const screenshotDir = process.env.CCM_SCREENSHOTS ?? path.join(repoRoot, 'docs/screenshots');

/**
 * Serves the build on 127.0.0.1 (a free port) exactly as scripts/run does: compressed copies,
 * caching headers, the Content-Security-Policy. Resolves to { url, close }.
 */
export async function serveApp() {
  if (!existsSync(path.join(dist, 'index.html'))) {
    throw new Error(`no app build at ${dist}; build it with trunk first (scripts/test e2e does)`);
  }
  return serveDirectory(dist, 0);
}

/** Starts the mock LLM server; resolves to { url, enqueue, requests, reset, stop }. */
export async function startMock() {
  if (!existsSync(mockBin)) {
    throw new Error(`no mock server binary at ${mockBin}; build it with cargo build -p ccm-mock-llm`);
  }
  const child = spawn(mockBin, ['--idle-exit-secs', '600', '--max-lifetime-secs', '1800'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the mock server did not start within 20 s')), 20_000);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const match = /^CCM_MOCK_LLM_LISTENING (\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`the mock server exited with ${code}`)));
  });
  const control = async (method, route, body) => {
    const response = await fetch(`${url}/__mock/${route}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`mock ${route}: ${response.status} ${await response.text()}`);
    return response.json().catch(() => null);
  };
  return {
    url,
    /** Queues scripted replies (see crates/ccm-mock-llm/src/script.rs). */
    enqueue: (replies) => control('POST', 'enqueue', replies),
    requests: () => control('GET', 'requests'),
    reset: () => control('POST', 'reset', {}),
    stop: async () => {
      await control('POST', 'shutdown', {}).catch(() => {});
      if (child.exitCode === null) child.kill();
    },
  };
}

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Launches Debian's Chromium (never a downloaded browser). */
export function launchBrowser() {
  return chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/**
 * A fresh browser profile (its own IndexedDB) with a page on the app. Console errors and page
 * errors are collected in `errors`; `allow` lists message fragments a test expects.
 */
export async function openApp(browser, appUrl, { viewport = { width: 1440, height: 900 }, colorScheme } = {}) {
  const { context, page, errors } = await newPage(browser, appUrl, { viewport, colorScheme });
  await page.goto(appUrl);
  await waitReady(page);
  return { context, page, errors };
}

/**
 * A fresh browser context and page for the app, not yet navigated (so a test can route
 * requests first), collecting console errors and page errors into `errors`.
 */
export async function newPage(browser, appUrl, { viewport = { width: 1440, height: 900 }, colorScheme = 'light' } = {}) {
  // The system colour scheme is fixed (light unless a test asks), so the "System" theme and
  // the screenshots do not depend on the machine.
  const context = await browser.newContext({ viewport, colorScheme, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(appUrl).origin });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const errors = [];
  page.on('console', (message) => {
    if (message.type() !== 'error' || isLocalServerProbe(message)) return;
    errors.push(describeConsoleError(message));
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  return { context, page, errors };
}


/**
 * A console error as text. Chromium's note on a failed request names the request only in its
 * location, so its address is added in brackets: a test can then allow one exact request
 * ("net::ERR_CONNECTION_REFUSED (http://127.0.0.1:5555/v1/models)") rather than every failure.
 */
function describeConsoleError(message) {
  const text = message.text();
  const url = message.location()?.url;
  return text.startsWith('Failed to load resource: ') && url ? `${text} (${url})` : text;
}

/** Waits until the tokenizer is loaded and a session is open. */
export async function waitReady(page) {
  await page.getByTestId('ready').waitFor({ timeout: 120_000 });
}

/** Types a message, sends it with Enter and waits for the turn to finish. */
export async function send(page, text) {
  const box = page.getByTestId('message-input');
  await box.fill(text);
  await box.press('Enter');
  await page.getByTestId('live-turn').waitFor({ state: 'detached', timeout: 60_000 });
}

/** The chat's messages as "role: text". */
export function transcriptOf(page) {
  return page.getByTestId('message').evaluateAll((nodes) =>
    nodes.map((n) => `${n.dataset.role}: ${n.querySelector('.rich').innerText.trim()}`),
  );
}

/** Opens a side panel by its tab. */
export async function openPanel(page, key) {
  await page.getByTestId(`tab-${key}`).click();
}

/** The chat's banners (quiet notices), as text. */
export async function banners(page) {
  return page.getByTestId('banner').allInnerTexts();
}

/** The state of an effort in the manifest (`active`, `open`, `expanded`, `in memory`, `evicted`). */
export async function manifestState(page, id) {
  await openPanel(page, 'memory');
  return page.locator(`[data-testid=manifest-row][data-effort="${id}"]`).getAttribute('data-state');
}

/** Points the app at the mock server (custom OpenAI-compatible URL). */
export async function useMock(page, mockUrl, { stream = true } = {}) {
  await openPanel(page, 'settings');
  await page.getByTestId('provider-select').selectOption('custom_openai');
  await page.getByTestId('provider-url').fill(`${mockUrl}/v1`);
  await page.getByTestId('provider-model').fill('mock-model');
  const box = page.getByTestId('provider-stream');
  if ((await box.isChecked()) !== stream) await box.click();
  await page.getByTestId('save-provider').click();
  await page.getByText('Saved. The next message uses this provider.').waitFor();
}

/** Saves a screenshot of the page under docs/screenshots. */
export async function screenshot(page, name) {
  await mkdir(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`) });
}

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core (the npm package, injected into the page) on the whole page as it is and
 * resolves to its violations: [{ id, impact, help, nodes: [selector…] }]. It is evaluated
 * through the DevTools protocol, which the page's Content-Security-Policy does not govern, so
 * the app runs under its real policy.
 */
export async function axe(page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(await axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.map((n) => n.target.join(' ')),
  }));
}

/** The `data-testid` of the focused element, or of the closest ancestor that has one. */
export function focusedTestId(page) {
  return page.evaluate(() => document.activeElement?.closest('[data-testid]')?.dataset.testid ?? null);
}

/**
 * The test id that holds the focus once a focus move has settled. The app moves the focus in a
 * task after the key press or click (`focus_soon`, a dialog giving the focus back), so a check
 * right after the press can still see the element before; this waits up to two seconds for
 * `expected` and then returns whatever holds the focus, for the assertion to report.
 */
export async function settledFocusTestId(page, expected, timeout = 2000) {
  try {
    await page.waitForFunction(
      (id) => document.activeElement?.closest('[data-testid]')?.dataset.testid === id,
      expected,
      { timeout },
    );
  } catch {
    // Timed out: the caller's assertion names the element that holds the focus instead.
  }
  return focusedTestId(page);
}

/** Console errors that are not expected by the test. */
export function unexpected(errors, allow = []) {
  return errors.filter((e) => !allow.some((fragment) => e.includes(fragment)));
}
