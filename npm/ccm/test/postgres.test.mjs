// PostgresSessionStore's record table against a real PostgreSQL server: the schema the native
// backend uses, created once by concurrent opens; every write a compare-and-set that applies
// entirely or not at all; reads in one snapshot; record texts kept byte for byte (damaged ones
// too); and failures reported with the store's codes, without the password.
//
// The server's URL comes from CCM_TEST_POSTGRES_URL, e.g.
//   export CCM_TEST_POSTGRES_URL="$(scripts/postgres-cluster start /tmp/ccm-pg)"
// The tests use the `pg` package (node-postgres 8) from the project they run in.
//
// Run from the packed package (npm/test-package), the classes come from "cognitive-context";
// run from a clone (`node --test npm/ccm/test/postgres.test.mjs` with `pg` on NODE_PATH), from
// npm/ccm/glue/postgres.cjs.js directly. There `SessionStore.openHost` (defined by the
// WebAssembly module the glue is appended to) is stood in for by a stub that returns the table.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";

const require = createRequire(import.meta.url);
const url = process.env.CCM_TEST_POSTGRES_URL;

if (!url) {
  test("CCM_TEST_POSTGRES_URL names a PostgreSQL server to test against", () => {
    assert.fail("CCM_TEST_POSTGRES_URL is not set: start a throwaway cluster with `export CCM_TEST_POSTGRES_URL=\"$(scripts/postgres-cluster start /tmp/ccm-pg)\"` and run the tests again");
  });
} else {
  defineTests();
}

/** The package's classes when the package exports them, the glue file's otherwise. */
function loadStore() {
  let packaged = null;
  try {
    packaged = require("cognitive-context");
  } catch {
    // Not installed here (a clone): the glue file is used below.
  }
  if (packaged && typeof packaged.PostgresRecordTable === "function") return { ...packaged, packaged: true };
  const glue = require("../glue/postgres.cjs.js");
  // The glue calls `SessionStore.openHost(table)`, which the WebAssembly module defines in the
  // package; here a stub stands in for it and hands the table back.
  globalThis.SessionStore ??= { openHost: async (table) => ({ stub: true, table }) };
  return { ...glue, packaged: false };
}

function defineTests() {
  const pg = require("pg");
  const { PostgresSessionStore, PostgresRecordTable } = loadStore();
  const admin = new pg.Pool({ connectionString: url, max: 4 });
  const pool = new pg.Pool({ connectionString: url, max: 12 });
  const schemas = [];

  after(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
    await admin.end();
  });

  /** A schema of its own for one test, dropped when the file ends. */
  function freshSchema() {
    const schema = `t_${randomBytes(6).toString("hex")}`;
    schemas.push(schema);
    return schema;
  }

  async function freshTable() {
    const table = new PostgresRecordTable(pool, freshSchema());
    await table.migrate();
    return table;
  }

  /** A session row's text as CCM writes it (the fields the table reads, and some others). */
  function rowText(id, revision, extra = "") {
    return JSON.stringify({ id, name: `session ${id}${extra}`, created_ms: 1000, updated_ms: 1000 + revision, header: { revision, turn: revision } });
  }

  const NO_RECORDS = { efforts: [], messages: [], metrics: [], telemetry: [], attachments: [] };

  function records(parts) {
    return { ...NO_RECORDS, ...parts };
  }

  async function expectCode(promise, code, pattern) {
    await assert.rejects(promise, (error) => {
      assert.equal(error.code, code, `expected code ${code}, got ${error.code}: ${error.message}`);
      if (pattern) assert.match(error.message, pattern);
      return true;
    });
  }

  /** A local TCP port that nothing listens on (it was free a moment ago). */
  async function closedPort() {
    const server = createServer();
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address();
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  test("two opens at once create the native backend's schema once; opening again changes nothing", async () => {
    const schema = freshSchema();
    const [a, b] = await Promise.all([
      PostgresSessionStore.open({ connectionString: url, schema }),
      PostgresSessionStore.open({ connectionString: url, schema }),
    ]);
    try {
      const versions = await admin.query(`SELECT version, record_layout FROM "${schema}".schema_version`);
      assert.deepEqual(versions.rows, [{ version: 1, record_layout: 1 }]);
      const c = await PostgresSessionStore.open({ pool, schema });
      await c.close();
      assert.equal((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".schema_version`)).rows[0].n, 1);

      // The tables, columns and types of crates/ccm-store/src/postgres.rs, so that a Rust
      // server and a Node server share them.
      const columns = await admin.query(
        `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
         WHERE table_schema = $1 ORDER BY table_name, ordinal_position`, [schema]);
      const layout = {};
      for (const r of columns.rows) (layout[r.table_name] ??= []).push(`${r.column_name} ${r.data_type}${r.is_nullable === "NO" ? " not null" : ""}`);
      assert.deepEqual(layout, {
        attachments: ["session text not null", "id text not null", "record text not null"],
        efforts: ["session text not null", "position bigint not null", "record text not null"],
        messages: ["session text not null", "seq bigint not null", "log text not null", "record text not null"],
        metrics: ["session text not null", "turn bigint not null", "record text not null"],
        schema_version: ["version integer not null", "record_layout integer not null", "applied_at timestamp with time zone not null"],
        sessions: ["id text not null", "row text not null", "revision bigint not null", "updated_ms double precision not null"],
        telemetry: ["session text not null", "turn bigint not null", "record text not null"],
      });
      const keys = await admin.query(
        `SELECT t.relname AS table_name, pg_get_indexdef(i.indexrelid) AS definition FROM pg_index i
         JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = $1 ORDER BY 1, 2`, [schema]);
      const definitions = keys.rows.map((r) => r.definition.replace(`"${schema}".`, "").replace(`${schema}.`, ""));
      assert.ok(definitions.some((d) => /^CREATE INDEX messages_by_log ON messages USING btree \(session, log, seq\)$/.test(d)), definitions.join("\n"));
      assert.ok(definitions.some((d) => /UNIQUE INDEX messages_pkey ON messages USING btree \(session, seq\)$/.test(d)), definitions.join("\n"));
      assert.ok(definitions.some((d) => /UNIQUE INDEX sessions_pkey ON sessions USING btree \(id\)$/.test(d)), definitions.join("\n"));
      if (a.stub) {
        assert.equal(a.table.kind, "postgres");
        assert.equal(a.table.schema, schema);
      }
      assert.equal(await new PostgresRecordTable(pool, schema).schemaVersion(), 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a schema migrated by a newer version is refused with code storage, and left unchanged", async () => {
    const table = await freshTable();
    await admin.query(`INSERT INTO "${table.schema}".schema_version (version, record_layout) VALUES (2, 1)`);
    await expectCode(PostgresSessionStore.open({ pool, schema: table.schema }), "storage", /newer version.*schema version 2.*nothing was changed/);
    assert.equal((await admin.query(`SELECT count(*)::int AS n FROM "${table.schema}".schema_version`)).rows[0].n, 2);
  });

  test("open refuses wrong options with code argument", async () => {
    await expectCode(PostgresSessionStore.open(), "argument", /takes an object/);
    await expectCode(PostgresSessionStore.open("postgres://x"), "argument", /takes an object/);
    await expectCode(PostgresSessionStore.open({ connectionString: url, directory: "x" }), "argument", /unknown key `directory`.*pool, connectionString, schema, max/);
    await expectCode(PostgresSessionStore.open({}), "argument", /exactly one of/);
    await expectCode(PostgresSessionStore.open({ pool, connectionString: url }), "argument", /exactly one of/);
    await expectCode(PostgresSessionStore.open({ pool: {} }), "argument", /options\.pool must be a pg\.Pool/);
    await expectCode(PostgresSessionStore.open({ connectionString: "" }), "argument", /non-empty string/);
    await expectCode(PostgresSessionStore.open({ pool, schema: "1bad" }), "argument", /schema name "1bad" is not usable/);
    await expectCode(PostgresSessionStore.open({ pool, schema: 'a"b' }), "argument", /not usable/);
    await expectCode(PostgresSessionStore.open({ pool, max: 3 }), "argument", /options\.max/);
    await expectCode(PostgresSessionStore.open({ connectionString: url, max: 0 }), "argument", /options\.max must be/);
    assert.throws(() => new PostgresSessionStore(), (error) => error.code === "argument");
  });

  test("close ends the store's own pool and leaves a given pool open; a closed store refuses with code unavailable", async () => {
    const schema = freshSchema();
    const given = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const store = await PostgresSessionStore.open({ pool: given, schema });
      await store.close();
      await store.close();
      assert.equal((await given.query("SELECT 1 AS one")).rows[0].one, 1);
      if (store.stub) await expectCode(store.table.rows(), "unavailable", /closed/);
    } finally {
      await given.end();
    }
    const own = await PostgresSessionStore.open({ connectionString: url, schema, max: 2 });
    await own.close();
    if (own.stub) await expectCode(own.table.rows(), "unavailable", /closed/);
  });

  test("write creates a session, and refuses a stale expectedRow without writing anything", async () => {
    const table = await freshTable();
    const id = "s-1";
    const first = rowText(id, 1);
    assert.equal(await table.write(id, null, first, records({
      efforts: [[0, '{"effort":0}']],
      messages: [[1, "ambient", '{"m":1}'], [2, "effort:auth", '{"m":2}']],
      metrics: [[1, '{"turn":1}']],
      telemetry: [[1, '{"t":1}']],
      attachments: [["a-1", '{"a":1}']],
    })), true);
    assert.equal(await table.row(id), first);
    // The row's revision and time are kept in their columns too, as the native backend does.
    const columns = await admin.query(`SELECT revision, updated_ms FROM "${table.schema}".sessions WHERE id = $1`, [id]);
    assert.deepEqual(columns.rows, [{ revision: "1", updated_ms: 1001 }]);

    // Creating an id that exists, or saving over a row that is not the stored one: refused.
    assert.equal(await table.write(id, null, rowText(id, 1, " again"), records({ messages: [[3, "ambient", "{}"]] })), false);
    const stale = rowText(id, 0);
    assert.equal(await table.write(id, stale, rowText(id, 2), records({
      efforts: [[0, '{"effort":"overwritten"}']],
      messages: [[3, "ambient", '{"m":3}']],
      attachments: [["a-2", "{}"]],
    })), false);
    assert.equal(await table.write("no-such", first, rowText("no-such", 2), NO_RECORDS), false);
    const before = await table.all(id);
    assert.equal(before.row, first);
    assert.deepEqual(before.efforts, [[0, '{"effort":0}']]);
    assert.deepEqual(before.messages, [[1, "ambient", '{"m":1}'], [2, "effort:auth", '{"m":2}']]);
    assert.deepEqual(before.attachments, [["a-1", '{"a":1}']]);
    assert.deepEqual(await table.all("no-such"), { row: null, efforts: [], messages: [], metrics: [], attachments: [] });

    // The save on the stored row applies: records upserted, the row replaced.
    const second = rowText(id, 2);
    assert.equal(await table.write(id, first, second, records({
      efforts: [[0, '{"effort":"zero v2"}'], [1, '{"effort":1}']],
      messages: [[3, "ambient", '{"m":3}']],
      metrics: [[2, '{"turn":2}']],
      attachments: [["a-1", '{"a":"v2"}']],
    })), true);
    const after = await table.all(id);
    assert.equal(after.row, second);
    assert.deepEqual(after.efforts, [[0, '{"effort":"zero v2"}'], [1, '{"effort":1}']]);
    assert.deepEqual(after.messages.map(([seq]) => seq), [1, 2, 3]);
    assert.deepEqual(after.metrics, [[1, '{"turn":1}'], [2, '{"turn":2}']]);
    assert.deepEqual(after.attachments, [["a-1", '{"a":"v2"}']]);
    assert.deepEqual(await table.rows(), [[id, second]]);
  });

  test("a key given twice in one write keeps the last text", async () => {
    const table = await freshTable();
    assert.equal(await table.write("d", null, rowText("d", 1), records({
      efforts: [[4, "first"], [4, "last"]],
      messages: [[7, "ambient", "first"], [7, "effort:x", "last"]],
      attachments: [["k", "first"], ["k", "last"]],
    })), true);
    const all = await table.all("d");
    assert.deepEqual(all.efforts, [[4, "last"]]);
    assert.deepEqual(all.messages, [[7, "effort:x", "last"]]);
    assert.deepEqual(all.attachments, [["k", "last"]]);
  });

  test("of concurrent writes on one expected row exactly one applies, and only its records are stored", async () => {
    const table = await freshTable();
    const id = "race";
    const base = rowText(id, 1);
    assert.equal(await table.write(id, null, base, NO_RECORDS), true);
    const writers = Array.from({ length: 8 }, (_, i) => i);
    const results = await Promise.all(writers.map((i) =>
      table.write(id, base, rowText(id, 2, ` by ${i}`), records({ messages: [[10 + i, "ambient", `{"writer":${i}}`]], efforts: [[0, `{"writer":${i}}`]] }))));
    assert.equal(results.filter(Boolean).length, 1, JSON.stringify(results));
    const winner = results.indexOf(true);
    const all = await table.all(id);
    assert.equal(all.row, rowText(id, 2, ` by ${winner}`));
    assert.deepEqual(all.messages, [[10 + winner, "ambient", `{"writer":${winner}}`]]);
    assert.deepEqual(all.efforts, [[0, `{"writer":${winner}}`]]);

    // Concurrent creates of one new id: one applies.
    const creates = await Promise.all(writers.map((i) =>
      table.write("new", null, rowText("new", 1, ` by ${i}`), records({ messages: [[1, "ambient", `{"creator":${i}}`]] }))));
    assert.equal(creates.filter(Boolean).length, 1, JSON.stringify(creates));
    const creator = creates.indexOf(true);
    assert.deepEqual((await table.all("new")).messages, [[1, "ambient", `{"creator":${creator}}`]]);
  });

  test("setRow is a compare-and-set on the row alone", async () => {
    const table = await freshTable();
    const first = rowText("r", 1);
    await table.write("r", null, first, NO_RECORDS);
    const renamed = rowText("r", 1, " renamed");
    assert.equal(await table.setRow("r", rowText("r", 0), renamed), false);
    assert.equal(await table.setRow("r", first, renamed), true);
    assert.equal(await table.setRow("r", first, rowText("r", 1, " twice")), false);
    assert.equal(await table.setRow("missing", first, renamed), false);
    assert.equal(await table.row("r"), renamed);
    assert.equal(await table.row("missing"), null);
  });

  test("workingSet reads the working set in one snapshot, and null once the row changed", async () => {
    const table = await freshTable();
    const id = "ws";
    const messages = [];
    for (let seq = 1; seq <= 12; seq++) {
      const log = seq % 3 === 0 ? "effort:auth" : seq % 4 === 0 ? "effort:closed" : "ambient";
      messages.push([seq, log, `{"seq":${seq}}`]);
    }
    const row = rowText(id, 1);
    await table.write(id, null, row, records({
      efforts: [[1, "e1"], [0, "e0"]],
      messages,
      metrics: [[1, "m1"], [2, "m2"], [3, "m3"], [4, "m4"]],
      attachments: [["b", "B"], ["a", "A"], ["Z", "z"]],
    }));
    const set = await table.workingSet(id, row, { effortLogs: ["auth", "empty"], ambientTail: 3, historyTail: 2 });
    assert.deepEqual(set, {
      efforts: [[0, "e0"], [1, "e1"]],
      effortLogs: { auth: [[3, '{"seq":3}'], [6, '{"seq":6}'], [9, '{"seq":9}'], [12, '{"seq":12}']], empty: [] },
      ambientTail: [[7, '{"seq":7}'], [10, '{"seq":10}'], [11, '{"seq":11}']],
      historyTail: [[3, "m3"], [4, "m4"]],
      // Attachment ids in byte order, as the native backend reads them.
      attachments: [["Z", "z"], ["a", "A"], ["b", "B"]],
      logSizes: [["ambient", 6], ["effort:auth", 4], ["effort:closed", 2]],
    });
    const none = await table.workingSet(id, row, { effortLogs: [], ambientTail: 0, historyTail: 0 });
    assert.deepEqual([none.ambientTail, none.historyTail, none.effortLogs], [[], [], {}]);

    await table.setRow(id, row, rowText(id, 2));
    assert.equal(await table.workingSet(id, row, { effortLogs: ["auth"], ambientTail: 3, historyTail: 2 }), null);
    assert.equal(await table.workingSet("missing", row, { effortLogs: [], ambientTail: 3, historyTail: 2 }), null);
    await expectCode(table.workingSet(id, row, { effortLogs: [], ambientTail: -1, historyTail: 2 }), "argument");
  });

  test("record texts read back byte for byte: non-ASCII, texts that are not JSON, damaged ones", async () => {
    const table = await freshTable();
    const id = "bytes-é";
    const texts = [
      '{"text":"Grüße, 你好, こんにちは, 🦀 and a\u0301 combining accent"}',
      "\u2028 line separator, \t tab, \r\n CRLF and a lone \\ backslash",
      '{ "spacing" :  1 ,"order":"kept" , "dup":1, "dup":2 }',
      "this is not JSON at all",
      '{"truncated": "half a rec',
      '"quoted", {braces}, NULL, null, ,commas,',
      "NULL",
      "",
      "x".repeat(1 << 20),
    ];
    const row = rowText(id, 1, " ✓");
    assert.equal(await table.write(id, null, row, records({
      efforts: texts.map((text, i) => [i, text]),
      messages: texts.map((text, i) => [i + 1, i % 2 ? "ambient" : "effort:e-é", text]),
      metrics: texts.map((text, i) => [i, text]),
      telemetry: texts.map((text, i) => [i, text]),
      attachments: texts.map((text, i) => [`att-${i}-✓`, text]),
    })), true);
    const all = await table.all(id);
    assert.equal(all.row, row);
    assert.deepEqual(all.efforts.map(([, text]) => text), texts);
    assert.deepEqual(all.messages.map(([, , text]) => text), texts);
    assert.deepEqual(all.metrics.map(([, text]) => text), texts);
    for (let i = 0; i < texts.length; i++) assert.equal(await table.telemetry(id, i), texts[i]);
    assert.deepEqual(new Set(all.attachments.map(([, text]) => text)), new Set(texts));
    const set = await table.workingSet(id, row, { effortLogs: ["e-é"], ambientTail: 100, historyTail: 100 });
    assert.deepEqual(set.effortLogs["e-é"].map(([, text]) => text), texts.filter((_, i) => i % 2 === 0));
    assert.deepEqual(set.ambientTail.map(([, text]) => text), texts.filter((_, i) => i % 2 === 1));
    // The server holds the very same bytes (not a normalised JSON value).
    const stored = await admin.query(`SELECT record FROM "${table.schema}".efforts WHERE session = $1 AND position = 2`, [id]);
    assert.equal(Buffer.from(stored.rows[0].record, "utf8").toString("hex"), Buffer.from(texts[2], "utf8").toString("hex"));
    // And through the log read.
    assert.deepEqual(await table.log(id, "effort:e-é"), set.effortLogs["e-é"]);
  });

  test("messages, messagesBetween, log, telemetry and delete read and remove what they name", async () => {
    const table = await freshTable();
    const id = "reads";
    await table.write(id, null, rowText(id, 1), records({
      messages: [[1, "ambient", "m1"], [2, "effort:a", "m2"], [3, "ambient", "m3"], [5, "effort:a", "m5"]],
      telemetry: [[1, "t1"], [2, "t2"]],
      metrics: [[1, "x"]],
      efforts: [[0, "e"]],
      attachments: [["f", "file"]],
    }));
    await table.write("other", null, rowText("other", 1), records({ messages: [[1, "ambient", "other m1"]], telemetry: [[1, "other t1"]] }));

    assert.deepEqual(await table.messages(id, [5, 4, 1, 99]), [[1, "ambient", "m1"], [5, "effort:a", "m5"]]);
    assert.deepEqual(await table.messages(id, []), []);
    assert.deepEqual(await table.messagesBetween(id, 2, 5), [[2, "effort:a", "m2"], [3, "ambient", "m3"]]);
    assert.deepEqual(await table.messagesBetween(id, 5, 5), []);
    assert.deepEqual(await table.messagesBetween(id, 6, 2), []);
    assert.deepEqual(await table.messagesBetween(id, 0, 2 ** 53 - 1), [[1, "ambient", "m1"], [2, "effort:a", "m2"], [3, "ambient", "m3"], [5, "effort:a", "m5"]]);
    assert.deepEqual(await table.log(id, "effort:a"), [[2, "m2"], [5, "m5"]]);
    assert.deepEqual(await table.log(id, "ambient"), [[1, "m1"], [3, "m3"]]);
    assert.deepEqual(await table.log(id, "effort:none"), []);
    assert.equal(await table.telemetry(id, 2), "t2");
    assert.equal(await table.telemetry(id, 3), null);
    for (const [seq] of await table.messages(id, [1, 2])) assert.equal(typeof seq, "number");

    await table.delete(id);
    await table.delete(id);
    await table.delete("never-existed");
    assert.equal(await table.row(id), null);
    assert.deepEqual(await table.all(id), { row: null, efforts: [], messages: [], metrics: [], attachments: [] });
    assert.equal(await table.telemetry(id, 1), null);
    for (const name of ["efforts", "messages", "metrics", "telemetry", "attachments"]) {
      const left = await admin.query(`SELECT count(*)::int AS n FROM "${table.schema}".${name} WHERE session = $1`, [id]);
      assert.equal(left.rows[0].n, 0, name);
    }
    // The other session is untouched.
    assert.deepEqual(await table.messages("other", [1]), [[1, "ambient", "other m1"]]);
    assert.equal(await table.telemetry("other", 1), "other t1");
    // An id can be created again after a delete, from nothing.
    assert.equal(await table.write(id, null, rowText(id, 1), NO_RECORDS), true);
    assert.deepEqual((await table.all(id)).messages, []);
  });

  test("wrong arguments are refused with code argument before anything is written", async () => {
    const table = await freshTable();
    await expectCode(table.write("a", null, "not a row", NO_RECORDS), "argument", /newRow is not a session row/);
    await expectCode(table.write("a", null, JSON.stringify({ header: {} }), NO_RECORDS), "argument", /revision/);
    await expectCode(table.write("a", null, rowText("a", 1), records({ messages: [[1, "ambient"]] })), "argument", /3 values/);
    await expectCode(table.write("a", null, rowText("a", 1), records({ efforts: [[-1, "x"]] })), "argument", /whole number/);
    await expectCode(table.write("a", null, rowText("a", 1), records({ attachments: [[1, "x"]] })), "argument", /a string/);
    await expectCode(table.write(1, null, rowText("a", 1), NO_RECORDS), "argument", /id must be a string/);
    await expectCode(table.messages("a", [1.5]), "argument");
    assert.deepEqual(await table.rows(), []);
    assert.throws(() => new PostgresRecordTable(pool, "bad-name"), (error) => error.code === "argument");
  });

  test("an unreachable server gives code unavailable naming host and port, never the password", async () => {
    const port = await closedPort();
    const secret = "s3cret-Pa55word";
    const connectionString = `postgres://ccm:${secret}@127.0.0.1:${port}/ccm_test`;
    await assert.rejects(PostgresSessionStore.open({ connectionString }), (error) => {
      assert.equal(error.code, "unavailable", error.message);
      assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
      assert.match(error.message, /cannot be reached/);
      assert.ok(!error.message.includes(secret), error.message);
      return true;
    });
    const unreachable = new pg.Pool({ connectionString, connectionTimeoutMillis: 5000 });
    try {
      const table = new PostgresRecordTable(unreachable, "ccm");
      assert.equal(table.server, `127.0.0.1:${port}`);
      await expectCode(table.row("x"), "unavailable", new RegExp(`127\\.0\\.0\\.1:${port}`));
      await expectCode(table.write("x", null, rowText("x", 1), NO_RECORDS), "unavailable");
    } finally {
      await unreachable.end();
    }
  });

  test("a connection lost in the middle of a save rejects with code storage, nothing written, and the store goes on", async () => {
    const table = await freshTable();
    const id = "lost";
    const base = rowText(id, 1);
    await table.write(id, null, base, NO_RECORDS);
    const tag = `ccm-lost-${randomBytes(4).toString("hex")}`;
    const victimPool = new pg.Pool({ connectionString: url, max: 1, application_name: tag });
    victimPool.on("error", () => {});
    const victim = new PostgresRecordTable(victimPool, table.schema);
    // Another transaction holds the session's row, so the save waits on its lock, where its
    // connection is then ended by the server.
    const holder = await admin.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT row FROM "${table.schema}".sessions WHERE id = $1 FOR UPDATE`, [id]);
      const saving = victim.write(id, base, rowText(id, 2), records({ messages: [[1, "ambient", "lost"]] }));
      saving.catch(() => {});
      let killed = false;
      for (let i = 0; i < 200 && !killed; i++) {
        const found = await admin.query(
          "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [tag]);
        killed = found.rows.some((r) => r.done);
        if (!killed) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      assert.ok(killed, "the waiting save was never seen");
      await expectCode(saving, "storage", /was lost while session 'lost' was being saved.*nothing was written/);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    assert.deepEqual(await table.all(id), { row: base, efforts: [], messages: [], metrics: [], attachments: [] });
    // The broken connection was not handed out again: the next save on the same pool works.
    assert.equal(await victim.write(id, base, rowText(id, 2), records({ messages: [[1, "ambient", "kept"]] })), true);
    assert.deepEqual((await table.all(id)).messages, [[1, "ambient", "kept"]]);
    await victimPool.end();
  });
}
