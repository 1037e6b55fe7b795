// End-to-end tests of Regenerate and Edit against the mock provider: each makes a new version
// of the conversation at the redone turn, kept in the same conversation (one row in Sessions),
// browsable in place with ‹ ›; any earlier message can be edited, also after a reload; and
// redoing a turn adds no notice.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serveApp, startMock, launchBrowser, openApp, send, openPanel, useMock, screenshot, unexpected, transcriptOf } from './harness.mjs';

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

/** The tools of turn `turn` in the chat. */
const toolsOf = (page, turn) => page.locator(`[data-testid=turn][data-turn="${turn}"] [data-testid=turn-tools]`);

/** Waits until the turn in progress has ended and its answer is shown. */
async function answered(page, text) {
  await page.locator('[data-testid=message][data-role=assistant]', { hasText: text }).waitFor();
  await page.getByTestId('live-turn').waitFor({ state: 'detached' });
}

/** The session rows' names. */
async function sessionRows(page) {
  await openPanel(page, 'sessions');
  return page.getByTestId('session-row').evaluateAll((rows) => rows.map((r) => r.dataset.name));
}

test('regenerate and edit make versions of a turn in the same conversation, browsed in place', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  await useMock(page, mock.url);
  await mock.enqueue([{ text: 'Cats sleep a lot.' }]);
  await send(page, 'Tell me about cats.');
  await mock.enqueue([{ text: 'Dogs are loyal.' }]);
  await send(page, 'And dogs?');
  await mock.enqueue([{ text: 'Birds sing at dawn.' }]);
  await send(page, 'And birds?');
  const rowsBefore = await sessionRows(page);
  const noticesBefore = await page.getByTestId('notice').count();

  // Regenerate the last answer: a second version of turn 3, shown as 2 / 2.
  await mock.enqueue([{ text: 'Birds migrate in autumn.' }]);
  await toolsOf(page, 3).getByTestId('regenerate').click();
  await answered(page, 'Birds migrate in autumn.');
  assert.deepEqual(await transcriptOf(page), [
    'user: Tell me about cats.', 'assistant: Cats sleep a lot.',
    'user: And dogs?', 'assistant: Dogs are loyal.',
    'user: And birds?', 'assistant: Birds migrate in autumn.',
  ]);
  assert.equal(await toolsOf(page, 3).getByTestId('version-position').innerText(), '2 / 2');
  assert.equal(await toolsOf(page, 2).getByTestId('turn-versions').count(), 0, 'turn 2 has one version');

  // Edit the first message (not the last): a third line of the conversation from turn 1 on.
  await toolsOf(page, 1).getByTestId('edit-message').click();
  const box = page.getByTestId('message-input');
  assert.equal(await box.inputValue(), 'Tell me about cats.');
  await page.getByTestId('editing').waitFor();
  await mock.enqueue([{ text: 'Horses are fast.' }]);
  await box.fill('Tell me about horses.');
  await box.press('Enter');
  await answered(page, 'Horses are fast.');
  assert.deepEqual(await transcriptOf(page), ['user: Tell me about horses.', 'assistant: Horses are fast.']);
  assert.equal(await toolsOf(page, 1).getByTestId('version-position').innerText(), '2 / 2');

  // One conversation in Sessions, whatever its versions; no notice piled up.
  const rows = await sessionRows(page);
  assert.equal(rows.length, rowsBefore.length, JSON.stringify(rows));
  assert.equal(await page.getByTestId('session-versions').innerText(), '3 versions');
  assert.equal(await page.getByTestId('notice').count(), noticesBefore);

  // Back to the first version of turn 1: the cats line, as it was last used (its second
  // version of turn 3).
  await page.getByTestId('chat-log').waitFor();
  await toolsOf(page, 1).getByTestId('previous-version').click();
  await page.locator('[data-testid=message][data-role=user]', { hasText: 'Tell me about cats.' }).waitFor();
  assert.equal(await toolsOf(page, 1).getByTestId('version-position').innerText(), '1 / 2');
  await toolsOf(page, 3).getByTestId('turn-versions').waitFor();
  assert.equal(await toolsOf(page, 3).getByTestId('version-position').innerText(), '2 / 2');
  await toolsOf(page, 3).getByTestId('previous-version').click();
  await page.locator('[data-testid=message][data-role=assistant]', { hasText: 'Birds sing at dawn.' }).waitFor();
  assert.equal(await toolsOf(page, 3).getByTestId('version-position').innerText(), '1 / 2');
  await screenshot(page, 'chat-versions');

  // After a reload an earlier message can still be edited (the fork is rebuilt from storage).
  await page.reload();
  await page.getByTestId('ready').waitFor({ timeout: 120_000 });
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=message]').length >= 6);
  await toolsOf(page, 2).getByTestId('edit-message').click();
  assert.equal(await box.inputValue(), 'And dogs?');
  await mock.enqueue([{ text: 'Fish swim.' }]);
  await box.fill('And fish?');
  await box.press('Enter');
  await answered(page, 'Fish swim.');
  assert.deepEqual(await transcriptOf(page), [
    'user: Tell me about cats.', 'assistant: Cats sleep a lot.',
    'user: And fish?', 'assistant: Fish swim.',
  ]);
  assert.equal(await toolsOf(page, 2).getByTestId('version-position').innerText(), '2 / 2');
  assert.equal((await sessionRows(page)).length, rowsBefore.length);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});
