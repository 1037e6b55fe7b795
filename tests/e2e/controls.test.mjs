// End-to-end tests of the chat's controls against the mock provider: the model picker filled
// from the provider's /models list, the context window following the chosen model (an 8K
// model compacts), cost per turn and per session, the session's system prompt and
// temperature; attached files (Regenerate and Edit: versions.test.mjs); and the losing tab of two tabs
// saving the same session.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  serveApp,
  startMock,
  launchBrowser,
  openApp,
  newPage,
  send,
  openPanel,
  banners,
  useMock,
  screenshot,
  unexpected,
  waitReady,
  transcriptOf,
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

/** The chat requests the mock served since `from` (its log index). */
async function chatRequestsSince(from) {
  const log = await mock.requests();
  return log.slice(from).filter((r) => r.kind === 'openai_chat' && !r.summary_request);
}

/** A message of about `tokens` tokens that mentions nothing of any effort. */
const filler = (i, tokens) => `Note ${i}: ${Array.from({ length: tokens }, (_, k) => `w${(k * 7 + i) % 97}`).join(' ')}`;

test('the model picker lists the provider models; the window, compaction and cost follow the model', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await useMock(page, mock.url);

  // The provider's list fills the picker; free text stays possible.
  await page.getByTestId('load-models').click();
  await page.getByTestId('models-message').filter({ hasText: '1 model listed' }).waitFor();
  assert.deepEqual(
    await page.locator('[data-testid=model-options] option').evaluateAll((o) => o.map((x) => x.value)),
    ['mock-model'],
  );
  assert.match(await page.getByTestId('model-facts').innerText(), /Not in the app's table/);

  // A known 8K model: its window and prices come from the app's table.
  await page.getByTestId('provider-model').fill('gpt-4');
  assert.match(await page.getByTestId('model-facts').innerText(), /context window 8192 tokens · \$30\.00 \/ \$60\.00 per million/);
  await page.getByTestId('save-provider').click();
  await page.getByText(/context window is now 8192 tokens, the window of gpt-4/).waitFor();
  assert.equal(await page.getByTestId('cfg-window').inputValue(), '8192');
  await screenshot(page, 'settings-model-picker');

  // The session's system prompt and temperature go out with the next request.
  await page.getByTestId('cfg-system-prompt').fill('You answer like a ship captain.');
  await page.getByTestId('cfg-temperature').fill('0.3');
  await page.getByTestId('apply-config').click();
  await page.getByText('Applied from the next request on.').waitFor();
  const before = (await mock.requests()).length;
  await send(page, 'Hello there, how are you?');
  const [first] = await chatRequestsSince(before);
  assert.equal(first.body.model, 'gpt-4');
  assert.equal(first.body.temperature, 0.3);
  assert.match(first.body.messages[0].content, /^You answer like a ship captain\./);

  // Tokens and cost per turn and for the session, at gpt-4's prices.
  assert.match(await page.getByTestId('turn-usage').first().innerText(), /tokens in · \d+ out · \$0\.\d+/);
  assert.match(await page.getByTestId('session-usage').innerText(), /^This session: .*tokens in · .* out · \$/);

  // Attached files fill an 8K window: stale ones are compressed to their summaries (a 128K
  // window would hold them all). Further below: a new session starts with gpt-4's window too.
  for (let i = 1; i <= 6 && !(await banners(page)).some((b) => b.includes('Compacted context')); i++) {
    await page.getByTestId('attach-input').setInputFiles({
      name: `notes-${i}.txt`,
      mimeType: 'text/plain',
      buffer: Buffer.from(filler(i, 700)),
    });
    await page.getByTestId('pending-attachment').waitFor();
    await send(page, `Here are my notes, part ${i}.`);
  }
  assert.ok((await banners(page)).some((b) => b.includes('Compacted context')), JSON.stringify(await banners(page)));

  // A new session starts with the chosen model's window, not the 128K default.
  await openPanel(page, 'sessions');
  await page.getByTestId('new-session-name').fill('Second with gpt-4');
  await page.getByTestId('new-session').click();
  await openPanel(page, 'settings');
  await page.waitForFunction(() => document.querySelector('[data-testid=cfg-window]')?.value === '8192');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('session settings reach what the Rust API sets: no budget, the seed profile, compaction off and custom thresholds', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await openPanel(page, 'settings');
  // A word other than "none" is refused with the way out.
  await page.getByTestId('cfg-ambient-budget').fill('lots');
  await page.getByTestId('apply-config').click();
  await page.getByText(/Ambient budget must be a whole number of tokens, or “none” for no budget, got “lots”/).waitFor();

  // The seed profile fills the form; applied, the form shows what is in force.
  await page.getByTestId('cfg-seed-profile').click();
  assert.equal(await page.getByTestId('cfg-ambient-budget').inputValue(), 'none');
  await page.getByTestId('cfg-compaction-on').uncheck();
  await page.getByTestId('apply-config').click();
  await page.getByText('Applied from the next request on.').waitFor();
  assert.equal(await page.getByTestId('cfg-ambient-budget').inputValue(), 'none');
  assert.equal(await page.getByTestId('cfg-summary-budget').inputValue(), 'none');
  assert.equal(await page.getByTestId('cfg-recall-budget').inputValue(), '0');
  assert.equal(await page.getByTestId('cfg-search-rule').inputValue(), 'seed');
  assert.equal(await page.getByTestId('cfg-reference-rule').inputValue(), 'seed');
  assert.equal(await page.getByTestId('cfg-compaction-on').isChecked(), false);

  // Custom thresholds, checked by the core's rule; then valid ones.
  await page.getByTestId('cfg-compaction-on').check();
  await page.getByTestId('cfg-compaction').selectOption('custom');
  await page.getByTestId('cfg-soft').fill('70');
  await page.getByTestId('cfg-hard').fill('65');
  await page.getByTestId('cfg-emergency').fill('95');
  await page.getByTestId('apply-config').click();
  await page.getByText('The compaction levels must rise: soft below hard below emergency, got 70 %, 65 % and 95 %').waitFor();
  await page.getByTestId('cfg-hard').fill('80');
  await page.getByTestId('apply-config').click();
  await page.getByText('Applied from the next request on.').waitFor();
  assert.equal(await page.getByTestId('cfg-compaction').inputValue(), 'custom');
  assert.deepEqual(
    [await page.getByTestId('cfg-soft').inputValue(), await page.getByTestId('cfg-hard').inputValue(), await page.getByTestId('cfg-emergency').inputValue()],
    ['70', '80', '95'],
  );
  assert.equal(await page.getByTestId('cfg-compaction-on').isChecked(), true);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('attach a file to a message', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await useMock(page, mock.url);
  await mock.enqueue([{ text: 'The first answer about cats.' }]);
  await send(page, 'Tell me about cats.');

  // Attach a Markdown file: its tokens are shown before sending, and it goes to the model.
  await page.getByTestId('attach-input').setInputFiles({
    name: 'notes.md',
    mimeType: 'text/markdown',
    buffer: Buffer.from('# Cache notes\n\nThe cache TTL is 24h since the outage in March.\n'),
  });
  const chip = page.getByTestId('pending-attachment');
  assert.match(await chip.innerText(), /notes\.md · \d+ tokens/);
  const before = (await mock.requests()).length;
  await mock.enqueue([{ text: 'Your notes say the TTL is 24h.' }]);
  await send(page, 'What do my notes say?');
  const [request] = await chatRequestsSince(before);
  assert.match(JSON.stringify(request.body.messages), /The cache TTL is 24h since the outage in March/);
  assert.match(await page.getByTestId('message-attachment').innerText(), /notes\.md · \d+ tokens/);
  assert.equal(await chip.count(), 0, 'the file went out with the message');
  // A file that is not text is refused in words.
  await page.getByTestId('attach-input').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: Buffer.from([137, 80, 78, 71]) });
  await page.getByText('photo.png is not a text file: attach text, Markdown or code.').waitFor();
  await screenshot(page, 'chat-controls');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('the losing tab stops, keeps the typed text, and offers the newer version or a branch', async () => {
  // Two tabs of one browser profile on the same session, both on the mock provider.
  const { context, page: first, errors } = await newPage(browser, app.url);
  await first.goto(app.url);
  await waitReady(first);
  await useMock(first, mock.url);
  const second = await context.newPage();
  second.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await second.goto(app.url);
  await waitReady(second);
  const box = second.getByTestId('message-input');

  // Tabs learn of each other's saves before they send, so only turns that overlap can
  // collide: the second tab's reply is held back while the first tab takes and saves a turn.
  const race = async (mine, theirs) => {
    await mock.enqueue([{ text: 'A slow answer.', fault: { delay_ms: 2500 } }, { text: 'A quick answer.' }]);
    await box.fill(mine);
    await box.press('Enter');
    await second.getByTestId('live-turn').waitFor();
    await send(first, theirs);
  };
  await race('Hello from the second tab.', "Let's work on the auth bug: users get 401 errors after an hour.");
  const card = second.getByTestId('save-conflict');
  await card.waitFor();
  assert.match(await card.innerText(), /Another tab saved a newer version of this conversation/);
  await box.fill('Words I typed and do not want to lose.');
  assert.equal(await second.getByTestId('send').isDisabled(), true);
  await box.press('Enter');
  assert.equal(await second.getByTestId('live-turn').count(), 0, 'no turn is taken');
  assert.equal(await box.inputValue(), 'Words I typed and do not want to lose.');
  await screenshot(second, 'save-conflict');

  // Load the newer version: the first tab's turn shows, the second tab's does not, and its
  // message goes back into the box before what was typed since.
  await second.getByTestId('conflict-load-newer').click();
  await card.waitFor({ state: 'detached' });
  const newer = await transcriptOf(second);
  assert.ok(newer.some((m) => m.includes('401 errors')), JSON.stringify(newer));
  assert.ok(!newer.some((m) => m.includes('Hello from the second tab')), JSON.stringify(newer));
  assert.equal(await box.inputValue(), 'Hello from the second tab.\n\nWords I typed and do not want to lose.');

  // Again, and this time keep the second tab's version as a branch.
  await box.fill('');
  await race('My own idea from the second tab.', 'The refresh token TTL is 1h.');
  await card.waitFor();
  await box.fill('Still typing here.');
  await second.getByTestId('conflict-keep-branch').click();
  await card.waitFor({ state: 'detached' });
  assert.match(await second.getByTestId('session-name').innerText(), /\(this tab's version\)$/);
  const mine = await transcriptOf(second);
  assert.ok(mine.some((m) => m.includes('My own idea from the second tab.')), JSON.stringify(mine));
  assert.equal(await box.inputValue(), 'Still typing here.');
  // The branch takes turns again.
  await send(second, 'And one more.');
  assert.equal(await card.count(), 0);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});
