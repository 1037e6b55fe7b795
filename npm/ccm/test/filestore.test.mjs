// FileSessionStore, sessions in files for Node servers, from the packed tarball: the Rust file
// store (the CLI's `--store file:DIR` layout) over Node's synchronous `fs`. What one process
// saved, another loads; a save appends what changed, so its size does not grow with the
// session; two processes racing on one session lose nothing; a process killed in the middle
// of a save leaves the last revision; the earlier whole-document layout is imported; damage is
// reported, never silently dropped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, fork } from "node:child_process";
import {
  existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSessionStore, Session } from "cognitive-context";

// The package's entry as a URL, so that scripts outside the fixture project import it too.
const PACKAGE = import.meta.resolve("cognitive-context");

function scratch() {
  return mkdtempSync(join(tmpdir(), "ccm-file-store-"));
}

/** Runs a script in a new Node process (a restarted server) and returns its stdout. */
function inNewProcess(code) {
  return execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
}

/** Writes a child script into `dir` and returns its path, for `fork`. */
function childScript(dir, name, code) {
  const file = join(dir, name);
  writeFileSync(file, `import { FileSessionStore } from ${JSON.stringify(PACKAGE)};\n${code}`);
  return file;
}

function workOn(session, topic) {
  session.beginTurn(`Let's work on the ${topic}.`);
  session.openEffort(topic);
  session.endTurn(`Looking at the ${topic}.`);
}

/** The bytes of every file under `dir`. */
function treeBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? treeBytes(path) : statSync(path).size;
  }
  return total;
}

/** Names of files under `dir` that look like temporaries of an atomic replace. */
function temporaries(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...temporaries(path));
    else if (/\.tmp-/.test(entry.name)) found.push(path);
  }
  return found;
}

function userTexts(document) {
  return document.ambient.filter((m) => m.role === "user").map((m) => m.content);
}

test("a saved session survives a restart: a new process loads exactly what was saved, in the CLI's layout", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    assert.equal(store.backend, "files");
    assert.equal(store.directory, directory);
    const session = await store.create("Auth work", { decayThreshold: 3 });
    workOn(session, "auth bug");
    const report = await store.save(session);
    assert.equal(report.revision, session.revision);
    const id = session.storeId;
    assert.ok(id);
    assert.match(readFileSync(join(directory, "layout"), "utf8"), /^ccm-files 1\n/);
    const folder = join(directory, "sessions", id);
    assert.match(readFileSync(join(folder, "commit"), "utf8"), /^ccm-files-commit 1 revision=/);
    assert.ok(existsSync(join(folder, "records.dat")));

    const output = inNewProcess(`
      import { FileSessionStore } from ${JSON.stringify(PACKAGE)};
      const store = await FileSessionStore.open({ directory: ${JSON.stringify(directory)} });
      const session = await store.load(${JSON.stringify(id)});
      const [info] = await store.list();
      console.log(JSON.stringify({ document: session.toJSON(), active: session.activeEffort, revision: session.revision, info }));
    `);
    const seen = JSON.parse(output);
    assert.deepEqual(seen.document, session.toJSON());
    assert.equal(seen.active, "auth-bug");
    assert.equal(seen.revision, session.revision);
    assert.equal(seen.info.name, "Auth work");
    assert.equal(seen.info.turn_count, 1);
    // Every replace went through a temporary file that was renamed, and no lock is held.
    assert.deepEqual(temporaries(directory), []);
    assert.deepEqual(readdirSync(join(directory, "locks")).filter((n) => n.endsWith(".owner")), []);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("a stale copy's save is refused with code conflict; rename, telemetry, export, import and delete work", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const first = await store.create("Shared");
    const id = first.storeId;
    // Another store object on the same directory: another process, in effect.
    const elsewhere = await FileSessionStore.open({ directory });
    const second = await elsewhere.load(id);
    workOn(first, "ledger");
    await store.save(first);
    workOn(second, "pelican");
    await assert.rejects(elsewhere.save(second), { code: "conflict" });
    // A session is saved by the store object it was opened from.
    await assert.rejects(store.save(second), { code: "argument" });
    first.beginTurn("mid-turn");
    await assert.rejects(store.save(first), { code: "turn" });
    first.endTurn("done");
    await store.save(first);

    await store.rename(id, "Final");
    assert.equal((await store.list())[0].name, "Final");
    assert.equal(await store.turnTelemetry(id, 99), null);
    const json = await store.exportSession(id);
    const copy = await store.importSession(json, "Copy");
    assert.equal(copy.name, "Copy");
    assert.deepEqual((await store.load(copy.id)).toJSON(), JSON.parse(json));
    await assert.rejects(store.importSession("{not json", "Broken"), { code: "snapshot" });
    await store.delete(id);
    assert.deepEqual((await store.list()).map((info) => info.id), [copy.id]);
    await assert.rejects(store.load(id), { code: "not_found" });
    await assert.rejects(store.load("../../etc"), { code: "not_found" });

    // A session made with `new Session()` is stored as a new one on its first save.
    const fresh = new Session();
    await store.save(fresh);
    assert.ok(fresh.storeId);
    assert.equal((await store.list()).length, 2);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("a save appends what changed: its bytes at turn 600 are within 1.5x of its bytes at turn 10", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const session = await store.create("Long");
    const added = new Map();
    for (let turn = 1; turn <= 600; turn++) {
      // Every turn the same length, so that a save's size can only grow with the session.
      const n = String(turn).padStart(4, "0");
      session.beginTurn(`question ${n} about the weather and nothing else at all`);
      session.endTurn(`answer ${n} about the weather and nothing else at all`);
      const before = treeBytes(directory);
      await store.save(session);
      added.set(turn, treeBytes(directory) - before);
    }
    const mean = (from, to) => {
      let sum = 0;
      for (let t = from; t <= to; t++) sum += added.get(t);
      return sum / (to - from + 1);
    };
    const early = mean(8, 12);
    const late = mean(596, 600);
    console.log(`bytes added by a save: ${early.toFixed(0)} at turn ~10, ${late.toFixed(0)} at turn ~600`);
    assert.ok(early > 0 && late > 0);
    assert.ok(late <= early * 1.5, `a save at turn ~600 added ${late} bytes, at turn ~10 ${early}`);
    const reopened = await (await FileSessionStore.open({ directory })).load(session.storeId);
    assert.equal(reopened.turn, 600);
    assert.deepEqual(reopened.loadProblems, []);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("two processes racing saves on one session: exactly one save wins each revision, nothing is lost", async () => {
  const directory = scratch();
  const scripts = scratch();
  const turns = 25;
  try {
    const store = await FileSessionStore.open({ directory });
    const created = await store.create("Raced");
    const id = created.storeId;
    const racer = childScript(scripts, "racer.mjs", `
      const [directory, id, label, turns] = process.argv.slice(2);
      const store = await FileSessionStore.open({ directory });
      const accepted = [];
      let refused = 0;
      while (accepted.length < Number(turns)) {
        const session = await store.load(id);
        const text = label + " turn " + accepted.length;
        session.beginTurn(text);
        session.endTurn("ack " + text);
        try {
          accepted.push((await store.save(session)).revision);
        } catch (error) {
          if (error.code !== "conflict") throw error;
          refused++;
        }
      }
      process.stdout.write(JSON.stringify({ label, accepted, refused }) + "\\n");
    `);
    const run = (label) => new Promise((resolve, reject) => {
      const child = fork(racer, [directory, id, label, String(turns)], { silent: true });
      let out = "";
      child.stdout.on("data", (chunk) => { out += chunk; });
      child.stderr.on("data", (chunk) => { out += chunk; });
      child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`racer ${label} failed: ${out}`))));
    });
    const results = await Promise.all([run("a"), run("b")]);
    const revisions = results.flatMap((r) => r.accepted).sort((x, y) => x - y);
    console.log(`race: ${results.map((r) => `${r.label} accepted ${r.accepted.length}, refused ${r.refused}`).join("; ")}`);
    assert.equal(new Set(revisions).size, revisions.length, "no revision was accepted twice");
    for (let i = 1; i < revisions.length; i++) assert.equal(revisions[i], revisions[i - 1] + 1, "the accepted revisions follow each other");
    const document = JSON.parse(await store.exportSession(id));
    assert.deepEqual(document.repairs ?? [], []);
    const texts = userTexts(document);
    for (const label of ["a", "b"]) {
      for (let n = 0; n < turns; n++) {
        assert.equal(texts.filter((t) => t === `${label} turn ${n}`).length, 1, `${label} turn ${n} is stored once`);
      }
    }
    assert.equal(texts.length, 2 * turns);
    assert.equal((await store.load(id)).revision, revisions.at(-1));
  } finally {
    rmSync(directory, { recursive: true, force: true });
    rmSync(scripts, { recursive: true, force: true });
  }
});

test("a process killed in the middle of saves leaves the last revision (or the one after it), which opens cleanly", async () => {
  const directory = scratch();
  const scripts = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const created = await store.create("Killed");
    const id = created.storeId;
    const saver = childScript(scripts, "saver.mjs", `
      const [directory, id] = process.argv.slice(2);
      const store = await FileSessionStore.open({ directory });
      const session = await store.load(id);
      for (let n = 0; ; n++) {
        session.beginTurn("a question about the weather, number " + n);
        // Efforts too, named by the turn, which goes on from round to round.
        if (n % 7 === 0) session.openEffort("topic " + session.turn);
        session.endTurn("an answer about the weather, number " + n);
        const report = await store.save(session);
        // Synchronous on a pipe on Linux, so a printed revision was saved before the kill.
        process.stdout.write("saved " + report.revision + "\\n");
      }
    `);
    // Whether the kill landed between a save's first change and its commit: records.dat runs
    // past the committed length, or the intent builds on the committed revision.
    const folder = join(directory, "sessions", id);
    const midSave = () => {
      const [, revision, data] = /revision=(\d+) seq_end=\d+ data=(\d+)/.exec(readFileSync(join(folder, "commit"), "utf8")).map(Number);
      let base = null;
      try {
        base = JSON.parse(readFileSync(join(folder, "intent"), "utf8")).base;
      } catch {
        // No intent yet.
      }
      return statSync(join(folder, "records.dat")).size > data || base === revision;
    };
    const delays = [0, 1, 2, 3, 5, 8, 0, 1, 2, 4, 6, 10, 15, 25, 40, 60, 0, 1, 2, 3];
    let stored = 0;
    let interrupted = 0;
    for (const [round, delay] of delays.entries()) {
      const child = fork(saver, [directory, id], { silent: true });
      let last = null;
      let text = "";
      const exited = new Promise((resolve) => child.on("exit", resolve));
      await new Promise((resolve, reject) => {
        child.stdout.on("data", (chunk) => {
          text += chunk;
          for (const match of text.matchAll(/saved (\d+)\n/g)) last = Math.max(last ?? 0, Number(match[1]));
          if (last !== null) resolve();
        });
        child.stderr.on("data", (chunk) => reject(new Error(`round ${round}: ${chunk}`)));
        exited.then(() => reject(new Error(`round ${round}: the saver exited before saving: ${text}`)));
      });
      await new Promise((resolve) => setTimeout(resolve, delay));
      child.kill("SIGKILL");
      await exited;
      for (const match of text.matchAll(/saved (\d+)\n/g)) last = Math.max(last, Number(match[1]));
      if (midSave()) interrupted++;
      const reopened = await FileSessionStore.open({ directory });
      const session = await reopened.load(id);
      assert.deepEqual(session.loadProblems, [], `round ${round}`);
      assert.ok(
        session.revision === last || session.revision === last + 1,
        `round ${round} (killed ${delay} ms after a save): stored revision ${session.revision}, last printed ${last}`,
      );
      const document = JSON.parse(await reopened.exportSession(id));
      assert.deepEqual(document.repairs ?? [], [], `round ${round}`);
      stored = session.revision;
    }
    console.log(`kill loop: ${delays.length} rounds, ${interrupted} killed inside a save, the session at revision ${stored}`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
    rmSync(scripts, { recursive: true, force: true });
  }
});

test("sessions of the earlier whole-document layout are imported once, under their ids, names and times", async () => {
  const directory = scratch();
  try {
    const original = new Session({ decayThreshold: 3 });
    workOn(original, "migration");
    const id = "3f2b6a52-1c55-4a4e-9d1b-0c6f9d2b1a77";
    const info = { id, name: "Old one", created_ms: 1_600_000_000_000, updated_ms: 1_600_000_500_000, turn_count: 1, message_count: 2, revision: 4 };
    mkdirSync(join(directory, id));
    writeFileSync(join(directory, id, "session.json"), JSON.stringify({ format: "ccm-file-store", version: 1, info, document: original.toJSON() }));
    writeFileSync(join(directory, id, "info.json"), JSON.stringify(info));
    const broken = "0a6f1f0e-0000-4000-8000-000000000000";
    mkdirSync(join(directory, broken));
    writeFileSync(join(directory, broken, "session.json"), '{"format":"ccm-file-store","info":');

    const warnings = [];
    const onWarning = (warning) => warnings.push(warning);
    process.on("warning", onWarning);
    let store;
    try {
      store = await FileSessionStore.open({ directory });
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].code, "CCM_FILE_MIGRATION");
    assert.match(warnings[0].message, new RegExp(broken));

    const listed = await store.list();
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, id);
    assert.equal(listed[0].name, "Old one");
    assert.equal(listed[0].created_ms, info.created_ms);
    assert.equal(listed[0].updated_ms, info.updated_ms);
    const loaded = await store.load(id);
    assert.deepEqual(loaded.toJSON(), original.toJSON());
    assert.equal(loaded.activeEffort, "migration");
    // The old folder is kept under another name; the damaged one stays where it was.
    assert.ok(existsSync(join(directory, `${id}.migrated-v1`, "session.json")));
    assert.ok(!existsSync(join(directory, id)));
    assert.ok(existsSync(join(directory, broken, "session.json")));

    // Opening again imports nothing twice, and the session goes on in the new layout.
    workOn(loaded, "after migration");
    await store.save(loaded);
    const again = await FileSessionStore.open({ directory });
    assert.equal((await again.list()).length, 1);
    assert.equal((await again.load(id)).turn, 2);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test("damage is reported: a damaged record by load and export, a damaged commit by list and load", async () => {
  const directory = scratch();
  try {
    const store = await FileSessionStore.open({ directory });
    const session = await store.create("Damaged");
    for (const word of ["alpha", "bravo", "charlie-marker", "delta"]) {
      session.beginTurn(`tell me about ${word}`);
      session.endTurn(`${word} it is`);
    }
    await store.save(session);
    const id = session.storeId;
    const folder = join(directory, "sessions", id);
    // Break the JSON of one message's record, keeping its length.
    const records = readFileSync(join(folder, "records.dat"));
    const at = records.indexOf("tell me about charlie-marker");
    assert.ok(at > 0);
    records.fill("{".charCodeAt(0), at - 12, at + 8);
    writeFileSync(join(folder, "records.dat"), records);

    const loaded = await store.load(id);
    assert.equal(loaded.loadProblems.length, 1, JSON.stringify(loaded.loadProblems));
    assert.match(loaded.loadProblems[0], /message/);
    const document = JSON.parse(await store.exportSession(id));
    assert.ok(document.repairs.length > 0);

    // A commit whose first line reads but whose row does not: listed as damaged.
    const other = await store.create("Row damaged");
    const commit = join(directory, "sessions", other.storeId, "commit");
    writeFileSync(commit, readFileSync(commit, "utf8").split("\n")[0] + "\n{");
    const listed = await store.list();
    const damaged = listed.find((info) => info.id === other.storeId);
    assert.ok(damaged.damaged, JSON.stringify(listed));
    await assert.rejects(store.load(other.storeId), { code: "storage" });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
