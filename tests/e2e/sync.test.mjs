// End-to-end tests of sync: the app on two devices (two browser contexts, each with its own
// IndexedDB and localStorage) against the real sync server (the ccm-server binary) on a real,
// throwaway PostgreSQL cluster. A turn taken on one device appears on the other after a
// reload; a conflict (both devices wrote from the same revision, one of them offline) is
// resolved both ways without losing the other version or the text in the message box; a
// second account sees none of the first account's sessions.
//
// Environment (scripts/test e2e sets both):
//   CCM_SERVER_BIN         the ccm-server binary (default: $CARGO_TARGET_DIR/debug/ccm-server)
//   CCM_TEST_POSTGRES_URL  a PostgreSQL cluster to use; without it the test starts its own
//                          with scripts/postgres-cluster and stops it at the end

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  serveApp,
  launchBrowser,
  openApp,
  send,
  openPanel,
  screenshot,
  unexpected,
  waitReady,
  repoRoot,
} from './harness.mjs';

const run = promisify(execFile);
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(repoRoot, 'target');
const serverBin = process.env.CCM_SERVER_BIN ?? path.join(targetDir, 'debug/ccm-server');
const clusterScript = path.join(repoRoot, 'scripts/postgres-cluster');

let app;
let browser;
let clusterDir;
let databaseUrl;
let server;
let serverUrl;
let aliceToken;
let bobToken;
// The two devices of the first account, shared by the tests in order.
let laptop;
let phone;

/** Creates an account's token with the server's own command. */
async function createToken(account) {
  const { stdout } = await run(serverBin, ['token', 'create', '--account', account, '--raw', '--database', databaseUrl]);
  const token = stdout.trim();
  assert.ok(token.length > 0, `no token printed for ${account}`);
  return token;
}

/** Starts ccm-server on a free port, allowing the app's origin; resolves to its URL. */
function startServer(origin) {
  const child = spawn(serverBin, ['serve', '--database', databaseUrl, '--listen', '127.0.0.1:0', '--allow-origin', origin], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  server = child;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('ccm-server did not start within 30 s')), 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const match = /^ccm-server listening on (\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`ccm-server exited with ${code}`)));
  });
}

function stopServer() {
  if (server && server.exitCode === null) server.kill();
}

// A test run ended by a signal (the step's time limit) never reaches `after`: the server is
// stopped here too, so it never outlives the run.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    stopServer();
    process.exit(1);
  });
}
process.once('exit', stopServer);

/** The account's sessions as the server lists them (the wire format's ListResponse). */
async function serverSessions(token) {
  const response = await fetch(`${serverUrl}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.status, 200, `listing the sessions answered ${response.status}`);
  return (await response.json()).sessions;
}

/** Waits until the server lists a session of the account that `matches`; resolves to it. */
async function serverFinds(token, what, matches) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const session = (await serverSessions(token)).find(matches);
    if (session) return session;
    if (Date.now() > deadline) throw new Error(`the server never listed ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the server holds session `id` at turn `turn` or later. */
async function serverReaches(token, id, turn) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const session = (await serverSessions(token)).find((s) => s.id === id);
    if (session && session.header.turn >= turn) return session;
    if (Date.now() > deadline) {
      throw new Error(`the server did not reach turn ${turn} of ${id} (it has ${session ? session.header.turn : 'no such session'})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sets up sync in Settings and waits until the first sync is done. */
async function enableSync(page, token) {
  await openPanel(page, 'settings');
  await page.getByTestId('sync-url').fill(serverUrl);
  await page.getByTestId('sync-token').fill(token);
  await page.getByTestId('sync-save').click();
  await page.getByTestId('sync-message').filter({ hasText: 'Saved.' }).waitFor();
  await syncState(page, 'synced');
}

/** Waits until the header's sync status is `state`. */
async function syncState(page, state, timeout = 30_000) {
  await page.locator(`[data-testid=sync-status][data-state="${state}"]`).waitFor({ timeout });
}

/** The open session's id (read from the Sessions panel, which it opens). */
async function currentId(page) {
  await openPanel(page, 'sessions');
  return page.locator('[data-testid=session-row].active').getAttribute('data-session');
}

/** The chat's messages as text. */
function transcript(page) {
  return page.getByTestId('message').evaluateAll((nodes) => nodes.map((n) => n.querySelector('.rich').innerText.trim()));
}

/** Opens session `id` from the Sessions panel. */
async function openSession(page, id) {
  await openPanel(page, 'sessions');
  await page.locator(`[data-testid=session-row][data-session="${id}"] [data-testid=open-session]`).click();
  await page.locator(`[data-testid=session-row][data-session="${id}"].active`).waitFor();
}

before(async () => {
  assert.ok(existsSync(serverBin), `no ccm-server binary at ${serverBin}; build it with cargo build -p ccm-server`);
  databaseUrl = process.env.CCM_TEST_POSTGRES_URL;
  if (!databaseUrl) {
    clusterDir = await mkdtemp(path.join(tmpdir(), 'ccm-sync-e2e-'));
    databaseUrl = (await run(clusterScript, ['start', clusterDir])).stdout.trim();
  }
  app = await serveApp();
  serverUrl = await startServer(new URL(app.url).origin);
  aliceToken = await createToken(`alice-${process.pid}-${Date.now()}`);
  bobToken = await createToken(`bob-${process.pid}-${Date.now()}`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  stopServer();
  await app?.close();
  if (clusterDir) await run(clusterScript, ['stop', clusterDir]);
});

test('a turn taken on one device appears on the other after a reload', async () => {
  laptop = await openApp(browser, app.url);
  await enableSync(laptop.page, aliceToken);
  const id = await currentId(laptop.page);
  await send(laptop.page, "Let's work on the auth bug: tokens expire too early.");
  await serverReaches(aliceToken, id, 1);
  await syncState(laptop.page, 'synced');

  // The phone starts with its own empty conversation; sync brings the laptop's.
  phone = await openApp(browser, app.url);
  await enableSync(phone.page, aliceToken);
  await openSession(phone.page, id);
  assert.ok(
    (await transcript(phone.page)).some((t) => t.includes('tokens expire too early')),
    "the laptop's turn is on the phone",
  );

  // A later turn on the laptop is on the phone after a reload.
  await send(laptop.page, 'The TTL is read in seconds but stored in minutes.');
  await serverReaches(aliceToken, id, 2);
  await phone.page.reload();
  await waitReady(phone.page);
  await syncState(phone.page, 'synced');
  assert.equal(await currentId(phone.page), id, 'the phone reopens the conversation it had open');
  await phone.page.getByTestId('message').filter({ hasText: 'stored in minutes' }).waitFor();

  await openPanel(phone.page, 'settings');
  await phone.page.getByTestId('sync-form').scrollIntoViewIfNeeded();
  assert.equal(await phone.page.getByTestId('sync-status-detail').getAttribute('data-state'), 'synced');
  await screenshot(phone.page, 'sync-settings');
  assert.deepEqual(unexpected(laptop.errors), []);
  assert.deepEqual(unexpected(phone.errors), []);
});

/**
 * Makes both devices write the open session `id` from the same revision: the phone offline,
 * then the laptop online. Returns once the phone, back online, shows the conflict with
 * `draft` typed in its message box.
 */
async function conflict(id, round, draft) {
  // The laptop reads what the phone sent before, so that only the new turns differ.
  await laptop.page.reload();
  await waitReady(laptop.page);
  await syncState(laptop.page, 'synced');
  const before = (await serverSessions(aliceToken)).find((s) => s.id === id).header.turn;

  await phone.context.setOffline(true);
  await send(phone.page, `Phone note ${round}: the refresh token is rotated twice.`);
  await syncState(phone.page, 'offline');

  await send(laptop.page, `Laptop note ${round}: the clock skew is two minutes.`);
  await serverReaches(aliceToken, id, before + 1);

  await phone.page.getByTestId('message-input').fill(draft);
  await phone.context.setOffline(false);
  await phone.page.getByTestId('sync-conflict').waitFor({ timeout: 30_000 });
  await syncState(phone.page, 'conflict');
  assert.equal(await phone.page.getByTestId('send').isDisabled(), true, 'no turn is taken into a session in conflict');
  return before;
}

test("a conflict: load the other device's version, this device's kept as a branch", async () => {
  const id = await currentId(phone.page);
  const before = await conflict(id, 1, 'Draft typed on the phone, one');
  await screenshot(phone.page, 'sync-conflict');

  await phone.page.getByTestId('sync-load-theirs').click();
  await phone.page.getByTestId('sync-conflict').waitFor({ state: 'detached' });
  assert.equal(await currentId(phone.page), id, 'the conversation stays open');
  await phone.page.getByTestId('message').filter({ hasText: 'Laptop note 1' }).waitFor();
  assert.ok(!(await transcript(phone.page)).some((t) => t.includes('Phone note 1')), "the laptop's version is loaded");
  assert.equal(await phone.page.getByTestId('message-input').inputValue(), 'Draft typed on the phone, one');

  // The phone's version is a branch, here and on the server.
  const branch = await serverFinds(aliceToken, 'the branch', (s) => s.name.endsWith("(this device's version)"));
  await openPanel(phone.page, 'sessions');
  await phone.page.locator(`[data-testid=session-row][data-session="${branch.id}"]`).waitFor();

  // The draft goes out in the conversation, which syncs again.
  await phone.page.getByTestId('message-input').press('Enter');
  await phone.page.getByTestId('live-turn').waitFor({ state: 'detached', timeout: 60_000 });
  await serverReaches(aliceToken, id, before + 2);

  // The branch holds the phone's turn.
  await openSession(phone.page, branch.id);
  await phone.page.getByTestId('message').filter({ hasText: 'Phone note 1' }).waitFor();
  await openSession(phone.page, id);
  await syncState(phone.page, 'synced');
});

test("a conflict: keep this device's version as a branch and continue there", async () => {
  const id = await currentId(phone.page);
  const before = await conflict(id, 2, 'Draft typed on the phone, two');

  await phone.page.getByTestId('sync-keep-branch').click();
  await phone.page.getByTestId('sync-conflict').waitFor({ state: 'detached' });
  const branchId = await currentId(phone.page);
  assert.notEqual(branchId, id, 'the phone continues in a new session');
  await phone.page.getByTestId('message').filter({ hasText: 'Phone note 2' }).waitFor();
  assert.ok(!(await transcript(phone.page)).some((t) => t.includes('Laptop note 2')));
  assert.equal(await phone.page.getByTestId('message-input').inputValue(), 'Draft typed on the phone, two');

  // The draft goes into the branch, which is on the server with it.
  await phone.page.getByTestId('message-input').press('Enter');
  await phone.page.getByTestId('live-turn').waitFor({ state: 'detached', timeout: 60_000 });
  // The branch is the phone's version (the laptop's turns before, the phone's note) and the draft.
  await serverReaches(aliceToken, branchId, before + 2);

  // The original took the laptop's version, on the phone as well.
  await openSession(phone.page, id);
  await phone.page.getByTestId('message').filter({ hasText: 'Laptop note 2' }).waitFor();
  assert.ok(!(await transcript(phone.page)).some((t) => t.includes('Phone note 2')));
  await syncState(phone.page, 'synced');

  // The laptop, reloaded, lists the branch and still holds its own turns.
  await laptop.page.reload();
  await waitReady(laptop.page);
  await syncState(laptop.page, 'synced');
  await openPanel(laptop.page, 'sessions');
  await laptop.page.locator(`[data-testid=session-row][data-session="${branchId}"]`).waitFor();
  await laptop.page.getByTestId('message').filter({ hasText: 'Laptop note 2' }).waitFor();
  // Going offline shows one expected console error per refused request, nothing else.
  assert.deepEqual(unexpected(laptop.errors), []);
  assert.deepEqual(unexpected(phone.errors, ['ERR_INTERNET_DISCONNECTED', 'Failed to load resource']), []);
});

test("a second account sees none of the first account's sessions", async () => {
  const alice = await serverSessions(aliceToken);
  assert.ok(alice.length >= 3, `alice has her sessions on the server (${alice.length})`);

  const other = await openApp(browser, app.url);
  await enableSync(other.page, bobToken);
  await openPanel(other.page, 'sessions');
  const ids = await other.page.getByTestId('session-row').evaluateAll((rows) => rows.map((r) => r.dataset.session));
  assert.equal(ids.length, 1, 'only its own new conversation');
  for (const session of alice) assert.ok(!ids.includes(session.id), `${session.id} is not listed for bob`);

  // Asked directly, the server denies that alice's sessions exist for bob.
  const bob = await serverSessions(bobToken);
  assert.deepEqual(bob.map((s) => s.id), ids);
  const response = await fetch(`${serverUrl}/v1/sessions/${encodeURIComponent(alice[0].id)}`, {
    headers: { authorization: `Bearer ${bobToken}` },
  });
  assert.equal(response.status, 404);
  assert.deepEqual(unexpected(other.errors), []);
  await other.context.close();
  await laptop.context.close();
  await phone.context.close();
});
