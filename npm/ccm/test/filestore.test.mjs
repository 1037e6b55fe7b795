// FileSessionStore, sessions in files for Node servers, from the packed tarball: what one
// process saved, another process (a restarted server) loads; a stale copy's save is refused
// as a conflict; a damaged file is reported, never silently dropped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSessionStore, Session } from "cognitive-context";

function scratch() {
  return mkdtempSync(join(tmpdir(), "ccm-file-store-"));
}

/** Runs a script in a new Node process (a restarted server) and returns its stdout. */
function inNewProcess(code) {
  return execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
}

function workOn(session, topic) {
  session.beginTurn(`Let's work on the ${topic}.`);
  session.openEffort(topic);
  session.endTurn(`Looking at the ${topic}.`);
}

test("a saved session survives a restart: a new process loads exactly what was saved", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    assert.equal(store.backend, "file");
    const session = await store.create("Auth work", { decayThreshold: 3 });
    workOn(session, "auth bug");
    const report = await store.save(session);
    assert.deepEqual(report, { revision: 2, records_written: 1 });
    assert.equal(session.revision, 2);
    const id = session.storeId;
    assert.match(id, /^[0-9a-f-]{36}$/);

    const output = inNewProcess(`
      import { FileSessionStore } from "cognitive-context";
      const store = await FileSessionStore.open({ directory: ${JSON.stringify(directory)} });
      const session = await store.load(${JSON.stringify(id)});
      const [info] = await store.list();
      console.log(JSON.stringify({ document: session.toJSON(), active: session.activeEffort, revision: session.revision, info }));
    `);
    const seen = JSON.parse(output);
    assert.deepEqual(seen.document, session.toJSON());
    assert.equal(seen.active, "auth-bug");
    assert.equal(seen.revision, 2);
    assert.equal(seen.info.name, "Auth work");
    assert.equal(seen.info.turn_count, 1);
    // Writes go through temporary files that are renamed: none is left behind.
    assert.deepEqual(readdirSync(join(directory, id)).sort(), ["info.json", "session.json"]);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("a copy that someone else saved over is refused with code conflict, and the stored session is unchanged", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const first = await store.create("Shared");
    const id = first.storeId;
    const second = await (await FileSessionStore.open({ directory })).load(id);
    workOn(first, "ledger");
    await store.save(first);
    workOn(second, "pelican");
    await assert.rejects(store.save(second), (e) => e.code === "conflict" && /saved elsewhere/.test(e.message) && /load it again/.test(e.message));
    // Another process saves over `first` too.
    inNewProcess(`
      import { FileSessionStore } from "cognitive-context";
      const store = await FileSessionStore.open({ directory: ${JSON.stringify(directory)} });
      const session = await store.load(${JSON.stringify(id)});
      session.beginTurn("from another process"); session.endTurn("ok");
      await store.save(session);
    `);
    workOn(first, "cache");
    await assert.rejects(store.save(first), { code: "conflict" });
    const stored = await store.load(id);
    assert.equal(stored.revision, 3);
    assert.equal(stored.turn, 2, "the ledger turn and the other process's turn");
    assert.equal(stored.activeEffort, "ledger");
    // Loading again continues from the stored state.
    workOn(stored, "cache");
    assert.equal((await store.save(stored)).revision, 4);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("a damaged file is reported by load (code storage, naming the file) and by list, and a lost info.json is rebuilt", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const good = await store.create("Good");
    const bad = await store.create("Bad");
    writeFileSync(join(directory, bad.storeId, "session.json"), '{"format":"ccm-file-store","info":');
    await assert.rejects(store.load(bad.storeId), (e) => e.code === "storage" && e.message.includes("is damaged") && e.message.includes("session.json"));
    rmSync(join(directory, bad.storeId, "info.json"));
    rmSync(join(directory, good.storeId, "info.json"));
    const listed = await store.list();
    assert.equal(listed.length, 2);
    const damaged = listed.find((info) => info.id === bad.storeId);
    assert.match(damaged.damaged, /not valid JSON/);
    assert.equal(listed.find((info) => info.id === good.storeId).name, "Good");

    await assert.rejects(store.load("../../etc"), { code: "not_found" });
    await assert.rejects(store.load("no-such-session"), { code: "not_found" });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("saves respect turns and locks; rename, export, import and delete work as in SessionStore", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const session = await store.create("Draft");
    session.beginTurn("mid-turn");
    await assert.rejects(store.save(session), (e) => e.code === "turn" && /endTurn or abortTurn/.test(e.message));
    session.endTurn("done");
    // A lock left by a process that died is broken; the save goes through.
    const lock = join(directory, session.storeId, "lock");
    writeFileSync(lock, "");
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(lock, old, old);
    assert.equal((await store.save(session)).revision, 2);
    assert.equal(existsSync(lock), false);

    await store.rename(session.storeId, "Final");
    assert.equal((await store.list())[0].name, "Final");
    const json = await store.exportSession(session.storeId);
    const copy = await store.importSession(json, "Copy");
    assert.equal(copy.name, "Copy");
    assert.deepEqual((await store.load(copy.id)).toJSON(), JSON.parse(json));
    await assert.rejects(store.importSession("{not json", "Broken"), { code: "snapshot" });
    await store.delete(session.storeId);
    assert.deepEqual((await store.list()).map((info) => info.id), [copy.id]);
    await assert.rejects(store.delete(session.storeId), { code: "not_found" });

    // A session made with `new Session()` is stored as a new one on its first save.
    const fresh = new Session();
    assert.equal(fresh.storeId, undefined);
    await store.save(fresh);
    assert.ok(fresh.storeId);
    assert.equal(JSON.parse(readFileSync(join(directory, fresh.storeId, "info.json"), "utf8")).revision, 1);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
