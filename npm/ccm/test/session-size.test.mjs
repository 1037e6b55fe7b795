// Whatever a session stores can be exported and imported (issue 26): a session grown by
// messages alone is stopped before its export would pass the 64,000,000 characters an import
// accepts. The refusal has its own code (`session_full`), names the limit and the way out, and
// changes nothing; a session reopened from a FileSessionStore knows its total from the store
// without reading its history; and the export of the full session imports back.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session, FileSessionStore } from "cognitive-context";

const LONGEST_MESSAGE = 16_000_000;
const message = (n) => `Message ${n}: the whole build log follows.\n` + "x".repeat(LONGEST_MESSAGE - 60);

function assertSessionFull(error, what) {
  assert.equal(error.code, "session_full", error.message);
  assert.equal(error.limit, 62_000_000);
  assert.match(error.message, what);
  assert.match(error.message, /more than the 62,000,000 one session may hold \(so that its export stays within the 64,000,000 characters an import accepts\); nothing was changed\./);
  assert.match(error.message, /Start a new session to go on; this one can still be read, exported and searched/);
}

test("a FileSessionStore session grown by messages alone: the next message is refused with session_full, also after a reopen, and its export imports back", async () => {
  const directory = mkdtempSync(join(tmpdir(), "ccm-session-size-"));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const store = await FileSessionStore.open({ directory });
  // Messages of the longest any limit allows (the default maxMessageChars is 1,000,000).
  const options = { maxMessageChars: LONGEST_MESSAGE };
  let session = await store.create("a long log");
  session.setOptions(options);
  const id = session.storeId;
  let turns = 0;
  let refusal = null;
  for (let n = 0; n < 10 && !refusal; n++) {
    try {
      session.beginTurn(message(n));
    } catch (error) {
      refusal = error;
      break;
    }
    session.endTurn("Read it.");
    await store.save(session);
    turns++;
  }
  assert.ok(refusal, "the session never filled up");
  assertSessionFull(refusal, /^this message of 15,999,9\d\d characters would bring this session to [\d,]+ characters stored with room kept for the model's answer/);
  assert.equal(turns, 3);
  assert.equal(session.turn, 3, "nothing changed");
  // A short turn still goes.
  session.beginTurn("One short question.");
  // An answer a host gives that would not fit is refused too, and the turn stays open.
  assert.throws(() => session.endTurn("y".repeat(15_000_000)), (error) => {
    assertSessionFull(error, /^the answer of 15,000,000 characters would bring this session to/);
    return true;
  });
  session.endTurn("A short answer.");
  await store.save(session);
  session.free();

  // Reopened, the session holds its working set only, and still knows how much it stores.
  session = await store.load(id);
  session.setOptions(options);
  assert.throws(() => session.beginTurn(message(9)), (error) => {
    assertSessionFull(error, /^this message of/);
    return true;
  });
  assert.equal(session.turn, 4);
  session.free();

  // Its export fits the import limit and imports back, whole.
  const json = await store.exportSession(id);
  assert.ok(json.length <= 64_000_000, `the export is ${json.length} characters`);
  assert.ok(json.length > 48_000_000, `the session was filled: ${json.length}`);
  const imported = Session.fromJSON(json);
  assert.equal(imported.turn, 4);
  imported.free();
  const copy = await store.importSession(json, "the copy");
  const reopened = await store.load(copy.id);
  assert.equal(reopened.turn, 4);
  reopened.free();
});
