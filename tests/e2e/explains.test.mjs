// End-to-end tests of the app explaining itself (issue 25): a provider that is not there or
// refuses the page by CORS fails fast with what to check; saving a provider without its key
// says so next to the key; placeholders rather than values, and no keyboard hints on a
// phone; counts in grammatical words; one token count per turn that survives a reload; the
// stored total that counts attachments like working memory does; the header counting the
// tool definitions it sends; two tabs that catch up with each other and never lose a typed
// message; and the first visit that leaves the cl100k_base table for when it is needed.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  serveApp,
  startMock,
  launchBrowser,
  openApp,
  newPage,
  send,
  transcriptOf,
  openPanel,
  screenshot,
  unexpected,
  useMock,
  waitReady,
} from './harness.mjs';

let app;
let mock;
let browser;

before(async () => {
  app = await serveApp();
  mock = await startMock();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await mock?.stop();
  await app?.close();
});

/** Starts a local HTTP server with `handler`; resolves to { url, close }. */
async function serve(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** A port on which nothing listens (taken, then freed). */
async function closedPort() {
  const { url, close } = await serve(() => {});
  await close();
  return url;
}

/** Points the app at an OpenAI-compatible server at `base` (no key). */
async function useServer(page, base) {
  await openPanel(page, 'settings');
  await page.getByTestId('provider-select').selectOption('custom_openai');
  await page.getByTestId('provider-url').fill(`${base}/v1`);
  await page.getByTestId('provider-model').fill('some-model');
  await page.getByTestId('save-provider').click();
  await page.getByText('Saved. The next message uses this provider.').waitFor();
}

/** "3.7k" or "846" as a number. */
function tokensOf(text) {
  const match = /^([\d.]+)(k?)$/.exec(text.trim());
  assert.ok(match, `a token count: ${text}`);
  return Number(match[1]) * (match[2] ? 1000 : 1);
}

/** The console errors a request the browser could not complete writes. */
const NETWORK_ERRORS = ['net::ERR_CONNECTION_REFUSED', 'Access-Control-Allow-Origin', 'CORS policy', 'Failed to load resource'];

test('a server that is down fails at once and says what to check', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  const down = await closedPort();
  await useServer(page, down);
  const started = Date.now();
  await page.getByTestId('message-input').fill('Hello?');
  await page.getByTestId('message-input').press('Enter');
  const text = await page.getByTestId('turn-error-text').innerText();
  const seconds = (Date.now() - started) / 1000;
  assert.ok(seconds < 3, `the failure shows within 3 s, not after the retries (${seconds} s)`);
  const url = `${down}/v1/chat/completions`;
  assert.equal(
    text,
    `Could not connect to ${url}. Check the URL, that the server is running, and that it allows requests from ${new URL(app.url).origin} (CORS). Nothing was changed; your message can be sent again.`,
  );
  await screenshot(page, 'provider-down');
  assert.deepEqual(unexpected(errors, NETWORK_ERRORS), []);
  await context.close();
});

test('a server that refuses this page by CORS is named with the origin to allow, at once', async () => {
  const server = await serve((request, response) => {
    // Answers everything, but never with CORS headers.
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{}');
  });
  const { page, errors, context } = await openApp(browser, app.url);
  await useServer(page, server.url);
  const started = Date.now();
  await page.getByTestId('message-input').fill('Hello?');
  await page.getByTestId('message-input').press('Enter');
  const text = await page.getByTestId('turn-error-text').innerText();
  const seconds = (Date.now() - started) / 1000;
  assert.ok(seconds < 3, `the failure shows within 3 s (${seconds} s)`);
  assert.match(text, new RegExp(`^Network error while talking to the provider: The server at ${server.url}/v1/chat/completions answered, but the browser did not let this page read the answer: the server must allow requests from ${new URL(app.url).origin} \\(CORS\\)\\. Nothing was changed; your message can be sent again\\.$`));
  // The model list says the same in its own place.
  await page.getByTestId('load-models').click();
  const list = await page.getByTestId('models-message').filter({ hasText: 'No model list' }).innerText();
  assert.match(list, /^No model list\. The server at .*\/v1\/models answered, but the browser did not let this page read the answer/);
  assert.deepEqual(unexpected(errors, NETWORK_ERRORS), []);
  await context.close();
  await server.close();
});

test('saving a provider without its key says so next to the key and switches nothing', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await openPanel(page, 'settings');
  await page.getByTestId('provider-select').selectOption('openai');
  assert.equal(await page.getByTestId('provider-key').getAttribute('placeholder'), 'required by this provider');
  await page.getByTestId('save-provider').click();
  const beside = page.getByTestId('key-message');
  assert.equal(await beside.innerText(), 'OpenAI needs an API key: paste it here, then save again.');
  // The message sits right under the key field.
  const [field, message] = await Promise.all([
    page.getByTestId('provider-key').boundingBox(),
    beside.boundingBox(),
  ]);
  assert.ok(message.y > field.y && message.y - (field.y + field.height) < 40, JSON.stringify({ field, message }));
  const saved = await page.getByTestId('settings-message').innerText();
  assert.equal(saved, 'Not saved: the API key is missing. Replies still come from the offline demo model.');
  assert.doesNotMatch(saved + (await beside.innerText()), /enter it in Settings/);
  await screenshot(page, 'settings-key-missing');
  // Typing a key clears the complaint; the demo model still answers until a save.
  await page.getByTestId('provider-key').fill('sk-test');
  assert.equal(await beside.count(), 0);
  await send(page, 'hello');
  assert.equal(await page.getByTestId('turn-error').count(), 0, 'the demo model answered');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('forms show placeholders, not values, and the phone box has no keyboard hints', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await openPanel(page, 'settings');
  await page.getByTestId('provider-select').selectOption('custom_openai');
  const url = page.getByTestId('provider-url');
  const model = page.getByTestId('provider-model');
  assert.equal(await url.inputValue(), '', 'no address is made up');
  assert.equal(await model.inputValue(), '', 'no model name is made up');
  assert.match(await url.getAttribute('placeholder'), /^the server's base URL, e\.g\. http:\/\/localhost:8000\/v1$/);
  assert.equal(await model.getAttribute('placeholder'), "the model's name, as the provider lists it");
  assert.equal(await page.getByTestId('provider-key').getAttribute('placeholder'), 'optional for this provider');
  // A custom server needs its address and model before it can be saved.
  await url.fill('http://127.0.0.1:9/v1');
  await page.getByTestId('save-provider').click();
  assert.equal(
    await page.getByTestId('settings-message').innerText(),
    "Not saved: type the model's name, or load the model list and pick one.",
  );
  // The sync form names what goes in, not the developer's scripts.
  for (const id of ['sync-url', 'sync-token']) {
    const placeholder = await page.getByTestId(id).getAttribute('placeholder');
    assert.ok(placeholder && !/scripts\/|ccm-server/.test(placeholder), `${id}: ${placeholder}`);
    assert.equal(await page.getByTestId(id).inputValue(), '');
  }
  await screenshot(page, 'settings-placeholders');
  assert.match(await page.getByTestId('message-input').getAttribute('placeholder'), /Shift\+Enter/);
  assert.deepEqual(unexpected(errors), []);
  await context.close();

  const phone = await openApp(browser, app.url, { viewport: { width: 390, height: 844 } });
  assert.equal(await phone.page.getByTestId('message-input').getAttribute('placeholder'), 'Message');
  assert.deepEqual(unexpected(phone.errors), []);
  await phone.context.close();
});

test('a turn counts the same tokens before and after a reload, and the header counts the tool definitions', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await send(page, "Let's work on the login page: it is slow on mobile.");
  await send(page, 'The bundle is 2 MB.');
  const before = await page.getByTestId('turn-usage').allInnerTexts();
  assert.equal(before.length, 2);
  const status = await page.getByTestId('header-status').innerText();
  const match = /^The model sees ([\d.]+k?) of [\d.]+k tokens, including ([\d.]+k?) tokens of tool definitions · /.exec(status);
  assert.ok(match, status);
  const tools = tokensOf(match[2]);
  assert.ok(tools > 100, `the tool definitions are counted (${tools})`);
  // Each turn's prompt counts its tool definitions too: more than them alone.
  for (const line of before) {
    const tokensIn = tokensOf(/^≈?([\d.]+k?) tokens in/.exec(line)[1]);
    assert.ok(tokensIn > tools, `${line} counts the ${tools} tokens of tool definitions`);
  }
  await page.reload();
  await waitReady(page);
  await page.getByTestId('turn-usage').nth(1).waitFor();
  // The stored telemetry is read in the background; the counts settle on the same figures.
  await page.waitForFunction(
    (expected) => JSON.stringify([...document.querySelectorAll('[data-testid=turn-usage]')].map((n) => n.innerText)) === expected,
    JSON.stringify(before),
    { timeout: 10_000 },
  ).catch(() => {});
  assert.deepEqual(await page.getByTestId('turn-usage').allInnerTexts(), before);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('everything stored counts attachments, as working memory does', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  const words = Array.from({ length: 2500 }, (_, i) => `word${i % 300}`).join(' ');
  await page.getByTestId('attach-input').setInputFiles({ name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.from(words) });
  await page.getByTestId('pending-attachment').waitFor();
  await send(page, 'Here is a long file.');
  await openPanel(page, 'memory');
  const working = tokensOf((await page.getByTestId('working-tokens').innerText()).replace(' tokens', ''));
  const hint = await page.getByTestId('working-hint').innerText();
  const stored = tokensOf(/Everything stored would be ([\d.]+k?) tokens/.exec(hint)[1]);
  assert.ok(working > 1000, `the attachment is in working memory (${working})`);
  assert.ok(stored >= working, `everything stored (${stored}) holds what working memory holds (${working})`);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('a tab learns of the other tab\'s turn before it answers and keeps what is typed', async () => {
  const { context, page: first, errors } = await newPage(browser, app.url);
  await first.goto(app.url);
  await waitReady(first);
  const second = await context.newPage();
  second.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await second.goto(app.url);
  await waitReady(second);
  const box = second.getByTestId('message-input');
  await box.fill('Half a thought I am still typing');
  await send(first, "Let's work on the auth bug: users get 401 errors after an hour.");
  // The second tab shows the first tab's turn by itself, and the typed text stays.
  await second.getByText('users get 401 errors after an hour').first().waitFor({ timeout: 10_000 });
  assert.equal(await box.inputValue(), 'Half a thought I am still typing');
  await send(first, 'The refresh token TTL is 1h.');
  assert.equal(await first.getByTestId('save-conflict').count(), 0, 'the first tab saved its turn');
  await first.getByText('The refresh token TTL is 1h.').first().waitFor();
  // Sent at once after the first tab's turn, the second tab's message builds on it.
  await send(second, 'Hello from the second tab.');
  assert.equal(await second.getByTestId('save-conflict').count(), 0, 'no conflict: the second tab caught up first');
  const transcript = await second.getByTestId('message').allInnerTexts();
  const at = (needle) => transcript.findIndex((m) => m.includes(needle));
  assert.ok(at('TTL is 1h') >= 0 && at('TTL is 1h') < at('Hello from the second tab'), JSON.stringify(transcript));
  // And the first tab catches up with it in turn.
  await first.getByText('Hello from the second tab.').first().waitFor({ timeout: 10_000 });
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

/** Opens the app in a new page that records the path of every rank table it asks for. */
async function openRecordingTables() {
  const opened = await newPage(browser, app.url);
  const tables = [];
  opened.page.on('request', (request) => {
    if (request.url().endsWith('.ccmt')) tables.push(new URL(request.url()).pathname);
  });
  await opened.page.goto(app.url);
  await waitReady(opened.page);
  return { ...opened, tables };
}

/** Reloads the page and waits until it has fetched the whole o200k_base table. */
async function reloadUntilWholeTable(page) {
  await page.reload();
  await waitReady(page);
  await page.waitForFunction(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/o200k_base.ccmt')), null, { timeout: 20_000 });
}

test('a message in another script loads the whole o200k_base table before its turn, once', async () => {
  const { context, page, errors, tables } = await openRecordingTables();
  await send(page, 'Grüße — naïve café 🙂');
  assert.deepEqual(tables, ['/o200k_base.common.ccmt']);
  await send(page, 'Привет! Давайте обсудим план релиза.');
  const transcript = await transcriptOf(page);
  assert.ok(transcript.some((m) => m.startsWith('user: Привет!')), JSON.stringify(transcript));
  assert.ok(transcript.some((m) => m.startsWith('assistant:') && transcript.indexOf(m) > transcript.findIndex((t) => t.startsWith('user: Привет!'))), JSON.stringify(transcript));
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.ccmt']);
  await send(page, '我们把包拆开了。');
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.ccmt']);
  // The offline model quotes stored text in summaries and recalls, so after a reload this
  // browser loads the whole table again (from its cache) before anything is counted.
  tables.length = 0;
  await reloadUntilWholeTable(page);
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.ccmt']);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('a browser that has seen only common scripts keeps to the part after a reload; one with older sessions loads the whole table', async () => {
  const { context, page, errors, tables } = await openRecordingTables();
  await send(page, 'Plain English only, with a café and an emoji 🙂.');
  await page.reload();
  await waitReady(page);
  await page.waitForTimeout(1000);
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.common.ccmt']);
  // Sessions stored by a version of the app that did not keep track of scripts may hold any.
  await page.evaluate(() => localStorage.removeItem('ccm.app.tokenizerScripts'));
  tables.length = 0;
  await reloadUntilWholeTable(page);
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.ccmt']);
  assert.equal(await page.evaluate(() => localStorage.getItem('ccm.app.tokenizerScripts')), 'all');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('the first visit downloads only the common-scripts part of o200k_base; an import loads the whole table, a session counted with cl100k_base loads that', async () => {
  const { context, page, errors, tables } = await openRecordingTables();
  await send(page, 'hello');
  await page.waitForTimeout(1000);
  assert.deepEqual(tables, ['/o200k_base.common.ccmt']);
  // A session document counted with cl100k_base: this one exported, its encoding changed.
  await openPanel(page, 'sessions');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('[data-testid=session-row].active [data-testid=export-session]').click(),
  ]);
  const json = await streamText(await download.createReadStream());
  assert.match(json, /o200k_base/);
  const recount = json.replaceAll('o200k_base', 'cl100k_base');
  await page.getByTestId('import-json').setInputFiles({ name: 'older.json', mimeType: 'application/json', buffer: Buffer.from(recount) });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-name]')?.innerText.includes('older'), null, { timeout: 20_000 });
  // An import may hold any script, so the whole o200k_base comes first, then cl100k_base.
  assert.deepEqual(tables, ['/o200k_base.common.ccmt', '/o200k_base.ccmt', '/cl100k_base.ccmt']);
  await openPanel(page, 'settings');
  assert.equal(await page.getByTestId('cfg-encoding').innerText(), 'cl100k_base');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

/** The text of a readable stream. */
async function streamText(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

test('counts are grammatical: one model listed', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await useMock(page, mock.url);
  await page.getByTestId('load-models').click();
  const message = await page.getByTestId('models-message').filter({ hasText: 'listed' }).innerText();
  assert.match(message, /^(1 model|\d+ models) listed: pick one/);
  assert.doesNotMatch(message, /^1 models/);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});
