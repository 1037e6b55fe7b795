// End-to-end tests of the app's interface for people: a phone lands on the chat with 44 px
// touch targets, the first run's welcome and its tour of example messages, the theme switch
// across a reload, the keyboard shortcuts, dialogs that take, keep and give back the focus,
// and axe-core with no serious or critical violation on any panel, light and dark.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  serveApp,
  startMock,
  launchBrowser,
  openApp,
  openPanel,
  banners,
  useMock,
  axe,
  settledFocusTestId,
  screenshot,
  unexpected,
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

const PHONE = { width: 390, height: 844 };

/** The tour's banners, in order (web/src/components/welcome.rs has the messages). */
const TOUR = [
  '--- Started effort: auth-bug ---',
  '--- Started effort: billing-export ---',
  '--- Switched to effort: auth-bug ---',
  '--- Concluded effort: auth-bug ---',
  '--- Expanded effort: auth-bug',
];

/** Clicks an example (in the welcome or the "next example" strip) and waits for its turn. */
async function runExample(page, button, banner) {
  const before = await page.getByTestId('banner').count();
  await button.click();
  await page.getByTestId('banner').nth(before).waitFor();
  await page.getByTestId('live-turn').waitFor({ state: 'detached' });
  const all = await banners(page);
  assert.ok(
    all.slice(before).some((b) => b.startsWith(banner)),
    `expected ${JSON.stringify(banner)} among ${JSON.stringify(all.slice(before))}`,
  );
}

/** Plays the whole tour from the welcome. */
async function playTour(page) {
  await runExample(page, page.getByTestId('example-prompt').first(), TOUR[0]);
  for (const banner of TOUR.slice(1)) {
    await runExample(page, page.getByTestId('next-example-prompt'), banner);
  }
}

/** Whether the focus is inside the element with this `data-testid`. */
function focusInside(page, testId) {
  return page.evaluate((id) => {
    const box = document.querySelector(`[data-testid="${id}"]`);
    return Boolean(box && document.activeElement && box.contains(document.activeElement));
  }, testId);
}

/**
 * The visible controls that a finger has to hit, with their size: buttons, links outside
 * running text (WCAG exempts those), fields, disclosure summaries and other focusable
 * elements. A checkbox counts with its label, which takes the tap as well.
 */
function touchTargets(page) {
  return page.evaluate(() => {
    const selector =
      'button, a[href], input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])';
    return [...document.querySelectorAll(selector)]
      .filter((el) => el.getClientRects().length > 0)
      .filter((el) => !el.closest('.rich p, .rich li') && !el.closest('.visually-hidden'))
      .map((el) => {
        const label = ['checkbox', 'radio'].includes(el.type) ? el.closest('label') : null;
        const rect = (label ?? el).getBoundingClientRect();
        const name = el.dataset.testid ?? el.getAttribute('aria-label') ?? el.textContent.trim().slice(0, 24);
        return { name: `${el.tagName.toLowerCase()} ${name}`, width: rect.width, height: rect.height };
      });
  });
}

test('a phone lands on the chat with the message box in view, and every control is a 44 px target', async (t) => {
  const { page, errors, context } = await openApp(browser, app.url, { viewport: PHONE });
  assert.equal(await page.getByTestId('tab-chat').getAttribute('aria-pressed'), 'true');
  const box = page.getByTestId('message-input');
  assert.ok(await box.isVisible(), 'the message box is shown');
  const rect = await box.boundingBox();
  assert.ok(rect.y >= 0 && rect.y + rect.height <= PHONE.height, `the message box is in view (${JSON.stringify(rect)})`);
  await page.getByTestId('welcome').waitFor();
  // The welcome is taller than a phone's chat: it is read from its top, where it says what
  // CCM is, not scrolled to its end like a conversation.
  assert.equal(await page.getByTestId('chat-log').evaluate((el) => el.scrollTop), 0);
  await screenshot(page, 'phone-welcome');

  // Some content, so the panels have their rows and buttons.
  await runExample(page, page.getByTestId('example-prompt').first(), TOUR[0]);
  await runExample(page, page.getByTestId('next-example-prompt'), TOUR[1]);

  // The memory tiers are one tap away.
  await page.getByTestId('tab-memory').click();
  await page.locator('[data-testid=open-effort][data-effort=auth-bug]').waitFor();
  assert.equal(await box.isVisible(), false);

  const smallest = {};
  const tooSmall = [];
  for (const tab of ['chat', 'memory', 'context', 'tokens', 'sessions', 'settings']) {
    await openPanel(page, tab);
    if (tab === 'context') {
      await page.getByTestId('breakdown').locator('summary').click();
      await page.getByTestId('last-request').locator('summary').click();
    }
    const targets = await touchTargets(page);
    assert.ok(targets.length > 5, `${tab}: controls found (${targets.length})`);
    const min = targets.reduce((m, c) => ({ width: Math.min(m.width, c.width), height: Math.min(m.height, c.height) }), {
      width: Infinity,
      height: Infinity,
    });
    smallest[tab] = `${targets.length} controls, smallest ${min.width.toFixed(1)}×${min.height.toFixed(1)} px`;
    // Half a pixel of rounding is allowed: layout sizes are fractional.
    tooSmall.push(...targets.filter((c) => c.width < 43.5 || c.height < 43.5).map((c) => `${tab}: ${c.name} ${c.width.toFixed(1)}×${c.height.toFixed(1)}`));
  }
  t.diagnostic(`touch targets at 390×844: ${JSON.stringify(smallest)}`);
  assert.deepEqual(tooSmall, [], 'every control is at least 44×44 px');
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= PHONE.width, `no horizontal scrolling at phone width (${width}px)`);

  // The tour can be ended before its last example.
  await openPanel(page, 'chat');
  await page.getByTestId('end-tour').click();
  await page.getByTestId('next-example').waitFor({ state: 'detached' });
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('the first run explains CCM and its example messages walk through efforts', async () => {
  const { page, errors, context } = await openApp(browser, app.url);
  const welcome = page.getByTestId('welcome');
  await welcome.waitFor();
  const words = await welcome.innerText();
  assert.match(words, /efforts/);
  assert.match(words, /offline demo model/);
  assert.equal(await page.getByTestId('example-prompt').count(), TOUR.length);
  await screenshot(page, 'welcome');

  // The first example opens an effort; the welcome makes way for the conversation and the
  // tour offers the next step above the message box.
  await runExample(page, page.getByTestId('example-prompt').first(), TOUR[0]);
  assert.equal(await welcome.count(), 0);
  assert.match(await page.getByTestId('next-example').innerText(), /2 of 5/);
  for (const banner of TOUR.slice(1)) {
    await runExample(page, page.getByTestId('next-example-prompt'), banner);
  }
  assert.equal(await page.getByTestId('next-example').count(), 0, 'the tour is over');
  const reply = await page.locator('[data-testid=message][data-role=assistant]').last().innerText();
  assert.match(reply, /raising the refresh token TTL to 24h fixed it/);

  // The header says in plain words what the model is sent; the budget meter is its tooltip.
  const status = page.getByTestId('header-status');
  assert.match(await status.innerText(), /^The model sees [\d.,]+k? of [\d.,]+k tokens, including [\d.,]+k? tokens of tool definitions · 1 effort open · 1 expanded$/);
  assert.match(await status.getAttribute('title'), /^CTX Light · \d+ auto items? · \+[\d.]+k? tokens · \d+% of budget/);

  // The welcome does not come back once there is a chat.
  await page.reload();
  await waitReady(page);
  await page.getByTestId('message').first().waitFor();
  assert.equal(await welcome.count(), 0);
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('the theme switch applies light, dark or the system theme, and a reload keeps it', async () => {
  const { page, errors, context } = await openApp(browser, app.url, { colorScheme: 'light' });
  const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await theme(), 'light');
  assert.equal(await background(), 'rgb(247, 247, 245)');

  await page.getByTestId('theme-select').selectOption('dark');
  assert.equal(await theme(), 'dark');
  assert.equal(await background(), 'rgb(22, 24, 27)');
  await runExample(page, page.getByTestId('example-prompt').first(), TOUR[0]);
  await screenshot(page, 'chat-dark');

  await page.reload();
  await waitReady(page);
  assert.equal(await theme(), 'dark', 'the choice survives a reload');
  assert.equal(await page.getByTestId('theme-select').inputValue(), 'dark');

  // "System" follows the operating system, also when it changes while the app is open.
  await page.getByTestId('theme-select').selectOption('system');
  assert.equal(await theme(), 'light');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await page.reload();
  await waitReady(page);
  assert.equal(await page.getByTestId('theme-select').inputValue(), 'system');
  assert.equal(await theme(), 'dark');
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

test('keyboard: shortcuts, and dialogs that take the focus, keep it, close on Escape and give it back', async () => {
  await mock.reset();
  const { page, errors, context } = await openApp(browser, app.url);
  const box = page.getByTestId('message-input');

  // "?" outside a field opens the list of shortcuts, with the focus inside.
  await page.locator('h1').click();
  await page.keyboard.press('?');
  const help = page.getByTestId('shortcuts-dialog');
  await help.waitFor();
  assert.ok(await focusInside(page, 'shortcuts-dialog'), 'the focus moved into the dialog');
  assert.ok((await page.getByTestId('shortcut').count()) >= 7);
  await screenshot(page, 'shortcuts');
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    assert.ok(await focusInside(page, 'shortcuts-dialog'), `Tab ${i + 1} stays in the dialog`);
  }
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Shift+Tab');
    assert.ok(await focusInside(page, 'shortcuts-dialog'), `Shift+Tab ${i + 1} stays in the dialog`);
  }
  // While it is open the page behind takes no shortcut: "/" does not leave the dialog.
  await page.keyboard.press('/');
  assert.ok(await focusInside(page, 'shortcuts-dialog'));
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });

  // Opened from the header's button, it gives the focus back to that button.
  await page.getByTestId('open-shortcuts').click();
  await help.waitFor();
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });
  assert.equal(await settledFocusTestId(page, 'open-shortcuts'), 'open-shortcuts');

  // "/" goes to the message box; Enter sends.
  await page.keyboard.press('/');
  assert.equal(await settledFocusTestId(page, 'message-input'), 'message-input');
  await page.keyboard.type("Let's work on the auth bug: users get 401 errors after an hour.");
  await page.keyboard.press('Enter');
  await page.getByTestId('banner').filter({ hasText: '--- Started effort: auth-bug ---' }).waitFor();
  await page.getByTestId('live-turn').waitFor({ state: 'detached' });

  // Alt+S opens the settings; Shift+Escape comes back to the message box from anywhere.
  await page.keyboard.press('Alt+KeyS');
  await page.getByTestId('settings-panel').waitFor();
  await page.getByTestId('cfg-eviction').focus();
  await page.keyboard.press('Shift+Escape');
  assert.equal(await settledFocusTestId(page, 'message-input'), 'message-input');

  // The conclude dialog: the summary takes the focus, Tab stays inside, Escape closes it, and
  // the focus returns to the button that opened it.
  await openPanel(page, 'memory');
  const conclude = page.getByTestId('action-conclude-auth-bug').first();
  await conclude.click();
  const dialog = page.getByTestId('conclude-dialog');
  await dialog.waitFor();
  assert.equal(await settledFocusTestId(page, 'conclude-summary'), 'conclude-summary');
  for (let i = 0; i < 8; i++) await page.keyboard.press('Tab');
  assert.ok(await focusInside(page, 'conclude-dialog'));
  // The page behind is inert: a click on a tab does not reach it.
  await assert.rejects(page.getByTestId('tab-context').click({ timeout: 1000 }));
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.equal(await settledFocusTestId(page, 'action-conclude-auth-bug'), 'action-conclude-auth-bug');
  assert.equal(await page.getByTestId('open-effort').count(), 1, 'Escape concluded nothing');

  // A dialog does not outlive a switch of panels.
  await page.getByTestId('read-log-auth-bug').click();
  const log = page.getByTestId('log-viewer');
  await log.waitFor();
  assert.ok(await focusInside(page, 'log-viewer'));
  await page.evaluate(() => document.querySelector('[data-testid=tab-context]').click());
  await log.waitFor({ state: 'detached' });
  await page.getByTestId('inspector').waitFor();

  // Escape stops a reply that is being written, and the text goes back into the box.
  await useMock(page, mock.url);
  const story = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
  await mock.enqueue([{ text: story, fault: { chunk_delay_ms: 60 } }]);
  await box.fill('Tell me a long story.');
  await box.press('Enter');
  await page.getByTestId('streaming-reply').filter({ hasText: 'word5' }).waitFor();
  await page.keyboard.press('Escape');
  await page.getByTestId('live-turn').waitFor({ state: 'detached' });
  assert.equal(await box.inputValue(), 'Tell me a long story.');
  await page.getByText('Stopped. Nothing was changed').waitFor();
  assert.deepEqual(unexpected(errors), []);
  await context.close();
});

/** Runs axe and keeps the serious and critical violations, described for a failure message. */
async function seriousViolations(page, where, log) {
  const violations = await axe(page);
  log.push(`${where}: ${violations.length ? violations.map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`).join(', ') : 'none'}`);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${where}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.slice(0, 3).join(' | ')}`);
}

test('axe-core finds no serious or critical violation on any panel or dialog, light and dark', async (t) => {
  const { page, errors, context } = await openApp(browser, app.url);
  const found = [];
  const log = [];
  found.push(...(await seriousViolations(page, 'light welcome', log)));
  await playTour(page);
  for (const theme of ['light', 'dark']) {
    await page.getByTestId('theme-select').selectOption(theme);
    for (const tab of ['memory', 'context', 'tokens', 'sessions', 'settings']) {
      await openPanel(page, tab);
      if (tab === 'context') {
        await page.getByTestId('breakdown').evaluate((d) => (d.open = true));
        await page.getByTestId('last-request').evaluate((d) => (d.open = true));
      }
      found.push(...(await seriousViolations(page, `${theme} ${tab}`, log)));
    }
    // The dialogs, each over the panel it belongs to.
    await openPanel(page, 'memory');
    await page.getByTestId('action-conclude-billing-export').first().click();
    await page.getByTestId('conclude-dialog').waitFor();
    found.push(...(await seriousViolations(page, `${theme} conclude dialog`, log)));
    await page.keyboard.press('Escape');
    await page.getByTestId('read-log-auth-bug').click();
    await page.getByTestId('log-viewer').waitFor();
    found.push(...(await seriousViolations(page, `${theme} log viewer`, log)));
    await page.keyboard.press('Escape');
    await page.getByTestId('open-shortcuts').click();
    await page.getByTestId('shortcuts-dialog').waitFor();
    found.push(...(await seriousViolations(page, `${theme} shortcuts`, log)));
    await page.keyboard.press('Escape');
  }
  await context.close();

  // A phone's chat panel, which only it shows alone.
  for (const colorScheme of ['light', 'dark']) {
    const phone = await openApp(browser, app.url, { viewport: PHONE, colorScheme });
    await phone.page.getByTestId('welcome').waitFor();
    found.push(...(await seriousViolations(phone.page, `phone ${colorScheme} chat`, log)));
    assert.deepEqual(unexpected(phone.errors), []);
    await phone.context.close();
  }
  t.diagnostic(`axe violations (any impact): ${log.join('; ')}`);
  assert.deepEqual(found, []);
  assert.deepEqual(unexpected(errors), []);
});
