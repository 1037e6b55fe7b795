// End-to-end tests of what the app's server (web/serve.mjs) sends for a first and a repeat
// visit: compressed responses chosen by Accept-Encoding, immutable caching of the hashed
// assets, revalidation of the page and the tables, the loading screen in the page's first
// bytes and its progress in Chromium, and the Content-Security-Policy, under which the whole
// app runs without a single violation. Runs against the release build that scripts/run serves.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { serveApp, launchBrowser, openApp, newPage, openPanel, send, screenshot, unexpected, waitReady } from './harness.mjs';
import { acceptedCodings } from '../../web/serve.mjs';

let app;
let browser;

before(async () => {
  app = await serveApp();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await app?.close();
});

/**
 * A raw GET (no decompression, unlike fetch), so the test sees the bytes and headers exactly
 * as the server sent them. Resolves to { status, headers, body }.
 */
function get(pathname, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(pathname, app.url), { headers }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }),
      );
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The page as built, and the files it names: the wasm, its JavaScript, the CSS, the initializer. */
async function assets() {
  const html = (await get('/', { 'accept-encoding': 'identity' })).body.toString('utf8');
  const named = (pattern) => {
    const match = pattern.exec(html);
    assert.ok(match, `index.html names no file matching ${pattern}`);
    return match[1];
  };
  return {
    html,
    wasm: named(/["'](\/[^"']+_bg\.wasm)["']/),
    js: named(/["'](\/ccm-web-[^"']+\.js)["']/),
    css: named(/href="(\/[^"]+\.css)"/),
    boot: named(/["'](\/[^"']+boot\.mjs)["']/),
  };
}

test('Accept-Encoding chooses brotli, gzip or none, and each decodes to the same bytes', async () => {
  const { wasm, js } = await assets();
  for (const file of [wasm, js, '/o200k_base.ccmt', '/']) {
    const plain = await get(file, { 'accept-encoding': 'identity' });
    assert.equal(plain.status, 200, file);
    assert.equal(plain.headers['content-encoding'], undefined, `${file} with identity`);
    assert.equal(plain.headers.vary, 'Accept-Encoding', file);

    const br = await get(file, { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br.headers['content-encoding'], 'br', `${file}: br is preferred when offered`);
    assert.ok(br.body.length < plain.body.length, `${file}: brotli is smaller`);
    assert.ok(brotliDecompressSync(br.body).equals(plain.body), `${file}: brotli decodes to the file`);
    assert.equal(Number(br.headers['content-length']), br.body.length);

    const gz = await get(file, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip', `${file} with gzip only`);
    assert.ok(gunzipSync(gz.body).equals(plain.body), `${file}: gzip decodes to the file`);

    const refused = await get(file, { 'accept-encoding': 'br;q=0, gzip;q=0.5' });
    assert.equal(refused.headers['content-encoding'], 'gzip', `${file}: br;q=0 refuses brotli`);

    const none = await get(file);
    assert.equal(none.headers['content-encoding'], undefined, `${file} without Accept-Encoding`);
    // Each representation has its own validator, so a cache never mixes them up.
    assert.notEqual(br.headers.etag, plain.headers.etag);
    assert.notEqual(gz.headers.etag, br.headers.etag);
  }
  // The wasm is the bulk of a first visit; it must shrink to well under half.
  const rawWasm = await get(wasm, { 'accept-encoding': 'identity' });
  const brWasm = await get(wasm, { 'accept-encoding': 'br' });
  assert.ok(brWasm.body.length < rawWasm.body.length / 2, `wasm: ${brWasm.body.length} of ${rawWasm.body.length} bytes`);
});

test('Accept-Encoding is read with its weights', () => {
  assert.deepEqual(acceptedCodings('gzip, deflate, br, zstd'), ['br', 'gzip', 'identity']);
  assert.deepEqual(acceptedCodings('gzip;q=1.0, br;q=0.8'), ['gzip', 'br', 'identity']);
  assert.deepEqual(acceptedCodings('br;q=0, gzip'), ['gzip', 'identity']);
  assert.deepEqual(acceptedCodings('gzip;q=0.5, identity'), ['identity', 'gzip']);
  assert.deepEqual(acceptedCodings('*'), ['br', 'gzip', 'identity']);
  assert.deepEqual(acceptedCodings('*;q=0'), []);
  assert.deepEqual(acceptedCodings('identity;q=0, gzip'), ['gzip']);
  assert.deepEqual(acceptedCodings('GZIP ; Q=0.7'), ['gzip', 'identity']);
  assert.deepEqual(acceptedCodings(''), ['identity']);
  assert.deepEqual(acceptedCodings(undefined), ['identity']);
  assert.deepEqual(acceptedCodings(null), ['identity']);
});

test('hashed assets are immutable; the page and the tables are revalidated with an ETag', async () => {
  const { wasm, js, css, boot } = await assets();
  for (const file of [wasm, js, css, boot]) {
    const response = await get(file, { 'accept-encoding': 'br' });
    assert.equal(response.status, 200, file);
    assert.equal(response.headers['cache-control'], 'public, max-age=31536000, immutable', file);
  }
  for (const file of ['/', '/index.html', '/o200k_base.common.ccmt', '/o200k_base.ccmt', '/cl100k_base.ccmt']) {
    const first = await get(file, { 'accept-encoding': 'br' });
    assert.equal(first.headers['cache-control'], 'no-cache', file);
    assert.match(first.headers.etag ?? '', /^"[^"]+"$/, `${file} has a strong ETag`);
    const again = await get(file, { 'accept-encoding': 'br', 'if-none-match': first.headers.etag });
    assert.equal(again.status, 304, `${file} with its ETag`);
    assert.equal(again.body.length, 0, `${file}: a 304 has no body`);
    assert.equal(again.headers.etag, first.headers.etag);
    const stale = await get(file, { 'accept-encoding': 'br', 'if-none-match': '"an-older-build"' });
    assert.equal(stale.status, 200, `${file} with another ETag`);
  }
  // The ETag names one representation: the brotli one does not validate the plain one.
  const br = await get('/', { 'accept-encoding': 'br' });
  const plain = await get('/', { 'accept-encoding': 'identity', 'if-none-match': br.headers.etag });
  assert.equal(plain.status, 200);
});

test('requests outside the build are refused plainly', async () => {
  assert.equal((await get('/no-such-file.js')).status, 404);
  assert.equal((await get('/../Cargo.toml')).status, 404);
  assert.equal((await get('/%2e%2e/Cargo.toml')).status, 404);
  const post = await new Promise((resolve, reject) => {
    const req = httpRequest(new URL('/', app.url), { method: 'POST' }, resolve);
    req.on('error', reject);
    req.end();
  });
  assert.equal(post.statusCode, 405);
  assert.equal(post.headers.allow, 'GET, HEAD');
  post.resume();
});

test('the loading screen is in the first bytes of the page, before anything that blocks painting', async () => {
  const { html } = await assets();
  const boot = html.indexOf('id="boot"');
  assert.ok(boot > 0, 'the page has the loading screen');
  // The first round trip of a new connection carries about 14 kB (ten TCP segments); the
  // screen and its inline style must be inside it.
  const compressed = (await get('/', { 'accept-encoding': 'br' })).body.length;
  assert.ok(compressed < 14_000, `the page is ${compressed} bytes with brotli`);
  assert.ok(boot < 14_000, `the loading screen starts at byte ${boot}`);
  // A stylesheet link in <head> would hold back the first paint until it arrived.
  const stylesheets = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*>/g)].map((m) => m.index);
  assert.ok(stylesheets.length > 0, 'the app stylesheet is linked');
  for (const at of stylesheets) assert.ok(at > boot, 'every stylesheet comes after the loading screen');
  assert.ok(html.indexOf('<style>') < boot, 'the loading screen style is inline, before it');
});

test('the loading screen shows the download of the app, then gives way to the app', async () => {
  const { context, page, errors } = await newPage(browser, app.url, { viewport: { width: 390, height: 844 } });
  // Every text the loading screen shows, recorded in the page as it changes (from its first
  // parsed bytes on, so no change is missed).
  await page.addInitScript(() => {
    window.__bootTexts = [];
    const record = () => {
      const text = document.getElementById('boot-text')?.textContent;
      if (text !== undefined && text !== window.__bootTexts.at(-1)) window.__bootTexts.push(text);
    };
    new MutationObserver(record).observe(document, { childList: true, characterData: true, subtree: true });
  });
  // A slow link (about 3 s for the wasm, 5 s to Ready), so the screen is seen and its progress
  // moves.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 40,
    downloadThroughput: 300_000,
    uploadThroughput: 300_000,
  });
  await page.goto(app.url, { waitUntil: 'commit' });
  const screen = page.getByTestId('boot');
  await screen.waitFor({ state: 'visible' });
  // A third of the way, so the screenshot shows the bar moving.
  await page.waitForFunction(() => document.getElementById('boot-progress')?.value >= 30);
  const progress = await page.locator('#boot-progress').evaluate((bar) => bar.value);
  assert.ok(progress < 100, `the download is not done yet (${progress}%)`);
  assert.match(await page.locator('#boot-text').innerText(), /^Loading the app… [0-9]+%$/);
  await screenshot(page, 'loading-screen');
  await waitReady(page);
  assert.equal(await screen.count(), 0, 'the loading screen is gone once the app runs');
  const texts = await page.evaluate(() => window.__bootTexts);
  assert.equal(texts[0], 'Loading the app…');
  const percents = texts
    .map((t) => /Loading the app… ([0-9]+)%/.exec(t))
    .filter(Boolean)
    .map(([, percent]) => Number(percent));
  assert.ok(percents.length >= 3, `several progress steps were shown: ${JSON.stringify(texts)}`);
  for (let i = 1; i < percents.length; i++) assert.ok(percents[i] >= percents[i - 1], 'progress never goes back');
  // The total is the wasm as served (web/postbuild.mjs corrects Trunk's), so the share grows
  // smoothly to the end instead of jumping from three quarters.
  assert.ok(percents.at(-1) >= 90, `the last share shown was ${percents.at(-1)}%`);
  assert.equal(texts.at(-1), 'Starting the app…');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('a wasm that cannot be loaded leaves the loading screen saying so', async () => {
  const { context, page, errors } = await newPage(browser, app.url);
  await page.route(/_bg\.wasm$/, (route) => route.fulfill({ status: 404, body: 'gone' }));
  await page.goto(app.url);
  await page.getByText(/CCM could not start .*Reload the page to try again/).waitFor();
  assert.equal(await page.locator('#boot-progress').count(), 0);
  assert.ok(errors.some((e) => e.includes('CCM could not start')), `the failure is logged: ${errors}`);
  await context.close();
});

test('the page is served with a Content-Security-Policy and the app runs without a violation', async () => {
  const { html } = await assets();
  const policy = (await get('/')).headers['content-security-policy'];
  assert.ok(policy, 'the page has a Content-Security-Policy');
  const directives = Object.fromEntries(
    policy.split(';').map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name, values];
    }),
  );
  assert.deepEqual(directives['default-src'], ["'none'"]);
  assert.ok(directives['script-src'].includes("'wasm-unsafe-eval'"));
  for (const list of [directives['script-src'], directives['style-src']]) {
    assert.ok(!list.includes("'unsafe-inline'") && !list.includes("'unsafe-eval'"), policy);
  }
  // One hash per inline script and style of the page, and nothing inline beyond them.
  const inlineScripts = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)].length;
  const inlineStyles = [...html.matchAll(/<style\b/g)].length;
  assert.equal(directives['script-src'].filter((s) => s.startsWith("'sha256-")).length, inlineScripts);
  assert.equal(directives['style-src'].filter((s) => s.startsWith("'sha256-")).length, inlineStyles);
  assert.deepEqual(directives['frame-ancestors'], ["'none'"]);

  // Every violation the browser reports, recorded in the page.
  const { context, page, errors } = await newPage(browser, app.url);
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (event) =>
      window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  await page.goto(app.url);
  await waitReady(page);
  // Every panel once, with a turn behind it so the panels have something to draw.
  await send(page, "Let's work on the auth bug: users get 401 errors after an hour.");
  for (const key of ['memory', 'context', 'tokens', 'sessions', 'settings']) {
    await openPanel(page, key);
    await page.waitForTimeout(100);
  }
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  assert.deepEqual(unexpected(errors), []);
  // The policy is really enforced (and the recorder works): an inline script that is not the
  // page's own is refused and reported.
  const ran = await page.evaluate(() => {
    const script = document.createElement('script');
    script.textContent = 'window.__injectedRan = true;';
    document.body.append(script);
    return window.__injectedRan === true;
  });
  assert.equal(ran, false, 'an injected inline script must not run');
  await page.waitForFunction(() => window.__violations.length > 0);
  assert.deepEqual(await page.evaluate(() => window.__violations), ['script-src-elem inline']);
  await context.close();
});

test('a repeat visit is answered from the cache and by revalidation', async () => {
  // The first visit fills the profile's cache; the second is a new tab in the same profile.
  const first = await openApp(browser, app.url);
  await first.page.waitForTimeout(500);
  await first.page.close();
  const page = await first.context.newPage();
  const cdp = await first.context.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  const statuses = [];
  cdp.on('Network.loadingFinished', ({ encodedDataLength }) => {
    bytes += encodedDataLength;
  });
  cdp.on('Network.responseReceivedExtraInfo', ({ statusCode }) => statuses.push(statusCode));
  await page.goto(app.url);
  await waitReady(page);
  await page.waitForTimeout(500);
  // The page and the common-scripts part of o200k_base are revalidated (304; the whole tables
  // are not asked for until a turn, an import or a session needs them); the hashed files never leave the cache.
  assert.deepEqual(statuses, [304, 304]);
  assert.ok(bytes < 50_000, `a repeat visit transferred ${bytes} bytes`);
  assert.deepEqual(unexpected(first.errors), []);
  await first.context.close();
});
