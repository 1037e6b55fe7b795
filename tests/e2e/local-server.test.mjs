// End-to-end tests of the offer of a model server on this computer (issue 25): on the first
// run, while the offline demo model answers, the app asks Ollama's and LM Studio's usual
// addresses for their models and, when one answers, asks the person whether to use it. Use
// switches the custom OpenAI-compatible endpoint to that server with the model chosen, and
// the next message is answered by it; Not now is remembered; nothing shows, and nothing but
// the refused probe reaches the console, when no server answers; a server that keeps the page
// out by CORS is named with what to turn on.
//
// The mock LLM server (a real HTTP server that speaks the OpenAI protocol and lists models at
// /v1/models with CORS) plays the local server. The app is told where to look through the
// localStorage entry ccm.app.localServerProbes (web/src/local_servers.rs), set before the page
// loads, so no test depends on ports 11434 and 1234 being free or taken.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  serveApp,
  startMock,
  launchBrowser,
  newPage,
  waitReady,
  send,
  openPanel,
  transcriptOf,
  screenshot,
  unexpected,
  axe,
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

/** An address on which nothing listens (a port taken, then freed). */
async function closedAddress() {
  const { url, close } = await serve(() => {});
  await close();
  return url;
}

/** Makes the mock list these model names at /v1/models. */
async function listModels(names) {
  const response = await fetch(`${mock.url}/__mock/models`, { method: 'POST', body: JSON.stringify(names) });
  assert.equal(response.status, 200, await response.text());
}

/**
 * Opens the app in a fresh profile that looks for model servers at `servers` ([{ name, url }])
 * instead of the usual addresses (none given: the usual ones), and waits until it is ready.
 */
async function openLookingAt(servers) {
  const { context, page, errors } = await newPage(browser, app.url);
  if (servers) {
    await context.addInitScript((json) => localStorage.setItem('ccm.app.localServerProbes', json), JSON.stringify(servers));
  }
  await page.goto(app.url);
  await waitReady(page);
  return { context, page, errors };
}

/** The welcome's part: where the first-run offer appears. */
function firstRun(page) {
  return page.getByTestId('local-server-first-run');
}

/** Waits until the welcome has looked (or decided not to) and returns its state. */
async function lookedState(page) {
  await page.waitForFunction(() => {
    const state = document.querySelector('[data-testid=local-server-first-run]')?.dataset.state;
    return state === 'done' || state === 'skipped';
  });
  return firstRun(page).getAttribute('data-state');
}

/** The requests the mock logged for its model list. */
async function modelListRequests() {
  return (await mock.requests()).filter((r) => r.kind === 'models' && r.method === 'GET');
}

test('a model server on this computer is offered, and Use switches to it with the chosen model', async () => {
  await mock.reset();
  await listModels(['llama3.2:latest', 'nomic-embed-text:latest', 'qwen2.5:7b']);
  const { context, page, errors } = await openLookingAt([{ name: 'Ollama', url: mock.url }]);
  const question = firstRun(page).getByTestId('local-server-question');
  assert.equal(await question.innerText(), 'Ollama is running on this computer with llama3.2 and 2 other models. Use it?');
  // Asking switched nothing: the demo model still answers, and the server got no message.
  assert.equal(await page.getByTestId('provider-label').innerText(), 'Offline demo model');
  assert.ok((await mock.requests()).every((r) => r.kind !== 'openai_chat'), 'no message went to the server');
  const picker = firstRun(page).getByTestId('local-server-model');
  assert.equal(await picker.inputValue(), 'llama3.2:latest', 'a chat model is suggested, not the embedding model');
  assert.deepEqual(await picker.locator('option').allInnerTexts(), ['llama3.2', 'nomic-embed-text', 'qwen2.5:7b']);
  await screenshot(page, 'local-server-offer');
  const serious = (await axe(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious, [], 'the offer is accessible');

  // Settings stay open beside the chat: their form must follow what the welcome switched.
  await openPanel(page, 'settings');
  assert.equal(await page.getByTestId('provider-select').inputValue(), 'offline');
  await picker.selectOption('qwen2.5:7b');
  await firstRun(page).getByTestId('local-server-use').click();
  assert.equal(
    await firstRun(page).getByTestId('local-server-message').innerText(),
    `Replies now come from Ollama on this computer (qwen2.5:7b, ${mock.url}/v1). Settings can change it.`,
  );
  assert.equal(await page.getByTestId('provider-label').innerText(), `${mock.url}/v1 · qwen2.5:7b`);

  // The next message is answered by that server, with that model and no key.
  await send(page, 'Hello from this computer.');
  const transcript = await transcriptOf(page);
  assert.equal(transcript.at(-1), 'assistant: Mock reply to: "Hello from this computer."');
  const chats = (await mock.requests()).filter((r) => r.kind === 'openai_chat');
  assert.equal(chats.length, 1);
  assert.equal(chats[0].body.model, 'qwen2.5:7b');
  assert.equal(chats[0].headers.authorization, undefined, 'no API key is sent');

  // Settings show the server in force, and it stays after a reload, with no offer.
  assert.equal(await page.getByTestId('provider-select').inputValue(), 'custom_openai');
  assert.equal(await page.getByTestId('provider-url').inputValue(), `${mock.url}/v1`);
  assert.equal(await page.getByTestId('provider-model').inputValue(), 'qwen2.5:7b');
  // Saving that form later keeps the server rather than restoring the demo model.
  await page.getByTestId('save-provider').click();
  await page.getByText('Saved. The next message uses this provider.').waitFor();
  assert.equal(await page.getByTestId('provider-label').innerText(), `${mock.url}/v1 · qwen2.5:7b`);
  const asked = (await modelListRequests()).length;
  await page.reload();
  await waitReady(page);
  await page.locator('[data-testid=message][data-role=user]').filter({ hasText: 'Hello from this computer.' }).waitFor();
  assert.equal(await page.getByTestId('provider-label').innerText(), `${mock.url}/v1 · qwen2.5:7b`);
  assert.equal(await page.getByTestId('local-server-question').count(), 0);
  assert.equal((await modelListRequests()).length, asked, 'a chosen provider is not asked about again');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('with no server answering nothing is offered, and the console holds only the refused probes', async () => {
  const ollama = await closedAddress();
  const lmStudio = await closedAddress();
  const { context, page, errors } = await openLookingAt([
    { name: 'Ollama', url: ollama },
    { name: 'LM Studio', url: lmStudio },
  ]);
  assert.equal(await lookedState(page), 'done');
  assert.equal(await firstRun(page).locator('*').count(), 0, 'the welcome shows nothing of the search');
  // The probe did run: the browser noted each refused request, and nothing else.
  const refused = [`net::ERR_CONNECTION_REFUSED (${ollama}/v1/models)`, `net::ERR_CONNECTION_REFUSED (${lmStudio}/v1/models)`];
  for (const probe of refused) assert.ok(errors.some((e) => e.endsWith(probe)), `${probe} in ${JSON.stringify(errors)}`);
  assert.deepEqual(unexpected(errors, refused), []);

  // Asked in Settings, the app says where it looked and what a running server may need.
  await openPanel(page, 'settings');
  const search = page.getByTestId('local-server-search');
  await search.getByTestId('look-for-local-server').click();
  assert.equal(
    await search.getByTestId('local-server-message').innerText(),
    `No model server answered on this computer (looked for Ollama at ${ollama}, LM Studio at ${lmStudio}). If one is running: LM Studio needs “Enable CORS” in its server settings, and Ollama needs OLLAMA_ORIGINS for pages that are not on localhost.`,
  );
  assert.equal(await search.getByTestId('local-server-use').count(), 0);
  assert.equal(await page.getByTestId('provider-label').innerText(), 'Offline demo model');
  assert.deepEqual(unexpected(errors, refused), []);
  await context.close();

  // At the usual addresses (whatever listens there on this machine), the search ends and
  // leaves nothing in the console that the harness does not know to be the probe.
  const usual = await openLookingAt(undefined);
  assert.equal(await lookedState(usual.page), 'done');
  assert.deepEqual(unexpected(usual.errors), []);
  await usual.context.close();
});

test('Not now is remembered, and Settings can still find and use the server', async () => {
  await mock.reset();
  const { context, page, errors } = await openLookingAt([{ name: 'LM Studio', url: mock.url }]);
  const question = firstRun(page).getByTestId('local-server-question');
  assert.equal(await question.innerText(), 'LM Studio is running on this computer with mock-model. Use it?');
  assert.equal(await firstRun(page).getByTestId('local-server-model').count(), 0, 'one model needs no picker');
  await firstRun(page).getByTestId('local-server-not-now').click();
  await question.waitFor({ state: 'detached' });
  assert.equal(await page.getByTestId('provider-label').innerText(), 'Offline demo model');

  // Another visit neither asks nor even looks.
  const asked = (await modelListRequests()).length;
  assert.equal(asked, 1);
  await page.reload();
  await waitReady(page);
  assert.equal(await lookedState(page), 'skipped');
  assert.equal(await firstRun(page).locator('*').count(), 0);
  assert.equal((await modelListRequests()).length, asked, 'no request after Not now');

  // Settings look when asked, offer Use without Not now, and the form follows.
  await openPanel(page, 'settings');
  const search = page.getByTestId('local-server-search');
  await search.getByTestId('look-for-local-server').click();
  assert.equal(await search.getByTestId('local-server-question').innerText(), 'LM Studio is running on this computer with mock-model. Use it?');
  assert.equal(await search.getByTestId('local-server-not-now').count(), 0);
  await screenshot(page, 'settings-local-server');
  await search.getByTestId('local-server-use').click();
  await search.getByText(`Replies now come from LM Studio on this computer (mock-model, ${mock.url}/v1).`, { exact: false }).waitFor();
  assert.equal(await page.getByTestId('provider-select').inputValue(), 'custom_openai');
  assert.equal(await page.getByTestId('provider-url').inputValue(), `${mock.url}/v1`);
  assert.equal(await page.getByTestId('provider-model').inputValue(), 'mock-model');
  await send(page, 'Are you there?');
  assert.equal((await transcriptOf(page)).at(-1), 'assistant: Mock reply to: "Are you there?"');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('a server that keeps this page out by CORS is named with what to turn on', async () => {
  // Answers the model list, but without CORS headers, as LM Studio does until "Enable CORS".
  const closed = await serve((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"data":[{"id":"local-model"}]}');
  });
  const { context, page, errors } = await openLookingAt([{ name: 'LM Studio', url: closed.url }]);
  const message = firstRun(page).getByTestId('local-server-message');
  assert.equal(
    await message.innerText(),
    `LM Studio seems to be running on this computer (${closed.url}), but it does not let this page read its answers. In LM Studio, turn on “Enable CORS” in the local server's settings.`,
  );
  assert.equal(await firstRun(page).getByTestId('local-server-use').count(), 0);
  await screenshot(page, 'local-server-cors');
  // The hint can be put away like the offer.
  await firstRun(page).getByTestId('local-server-not-now').click();
  await message.waitFor({ state: 'detached' });
  const probe = `${closed.url}/v1/models`;
  const allowed = [`Access to fetch at '${probe}' from origin '${new URL(app.url).origin}'`, `net::ERR_FAILED (${probe})`];
  assert.deepEqual(unexpected(errors, allowed), []);
  await context.close();
  await closed.close();
});
