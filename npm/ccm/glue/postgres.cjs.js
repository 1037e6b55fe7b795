
// ----- PostgresSessionStore: sessions in PostgreSQL for Node servers (npm/ccm/glue/postgres.cjs.js) -----
// npm/build appends this file to the Node engine modules (CommonJS), after the file store. It
// is a `RecordTable` (glue/hoststore.d.ts) over a `pg.Pool` of node-postgres 8: it reads and
// writes record texts, and `SessionStore.openHost` (in WebAssembly) keeps every rule of a
// session store on top of it.
//
// The tables are exactly those of ccm-store's native backend (crates/ccm-store/src/postgres.rs):
// the same schema (`ccm` by default), tables, columns and types, the same `schema_version`
// table and version number, migrations under the same advisory lock, so a Rust server and a
// Node server can share one database and each open what the other saved. Every record and row
// is kept as `text`, never `jsonb`, so it reads back byte for byte and a damaged record stays
// as it is, to be reported when it is read.
//
// `pg` is an optional peer dependency: it is required only when a store is opened from a
// connection string, so the package loads without it.

const ccmPgCrypto = require("crypto");

// The schema version this file creates and migrates to: SCHEMA_VERSION of postgres.rs.
const CCM_PG_SCHEMA_VERSION = 1;
// The layout of the record texts, recorded with each migration: RECORD_SCHEMA_VERSION of
// ccm-core, whose records the WebAssembly module writes.
const CCM_PG_RECORD_LAYOUT = 1;

// The migrations, by version; `{s}` stands for the quoted schema name. The statements are the
// native backend's, so a database created by either is the one the other expects.
const CCM_PG_MIGRATIONS = [
  [
    1,
    `CREATE TABLE {s}.sessions (
        id text PRIMARY KEY,
        row text NOT NULL,
        revision bigint NOT NULL,
        updated_ms double precision NOT NULL
    );
    CREATE TABLE {s}.efforts (
        session text NOT NULL,
        position bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, position)
    );
    CREATE TABLE {s}.messages (
        session text NOT NULL,
        seq bigint NOT NULL,
        log text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, seq)
    );
    CREATE INDEX messages_by_log ON {s}.messages (session, log, seq);
    CREATE TABLE {s}.metrics (
        session text NOT NULL,
        turn bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, turn)
    );
    CREATE TABLE {s}.telemetry (
        session text NOT NULL,
        turn bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, turn)
    );
    CREATE TABLE {s}.attachments (
        session text NOT NULL,
        id text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (session, id)
    );`,
  ],
];

// SQLSTATEs that mean another writer came first: a create racing another create of the same
// id, or a save racing a delete. The caller reloads; nothing was written.
const CCM_PG_CONFLICT_STATES = new Set(["23505", "40001", "40P01"]);
// SQLSTATEs with which the server ends the session itself (shutdown, restart, recovery).
const CCM_PG_SESSION_ENDED_STATES = new Set(["57P01", "57P02", "57P03"]);
const CCM_PG_DISK_FULL = "53100";

const CCM_PG_OPTION_KEYS = ["pool", "connectionString", "schema", "max"];

// The errors this file makes, told apart from the client's and the server's: they pass
// through the error handling unchanged, and they never mean that a connection broke.
const ccmPgOwnErrors = new WeakSet();

function ccmPgError(code, message) {
  const error = new Error(message);
  error.code = code;
  ccmPgOwnErrors.add(error);
  return error;
}

function ccmPgIsOwn(error) {
  return typeof error === "object" && error !== null && ccmPgOwnErrors.has(error);
}

function ccmPgDescribeValue(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "bigint") return "a BigInt";
  if (typeof value === "object") return "an object";
  if (typeof value === "undefined") return "undefined";
  return `${/^[aeiou]/.test(typeof value) ? "an" : "a"} ${typeof value}`;
}

function ccmPgArgument(where, name, expected, value) {
  return ccmPgError("argument", `${where}: ${name} must be ${expected}, got ${ccmPgDescribeValue(value)}`);
}

function ccmPgCheckText(where, name, value) {
  if (typeof value !== "string") throw ccmPgArgument(where, name, "a string", value);
}

function ccmPgCheckCount(where, name, value) {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw ccmPgArgument(where, name, "a whole number of at least 0", value);
  }
}

// The same rule as the native backend: the name is used inside double quotes as it is.
function ccmPgValidSchema(name) {
  return typeof name === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && name.length <= 63;
}

// A server error carries a SQLSTATE and a severity; anything else (a socket error, a closed
// client, a protocol failure) is about the connection, not about one statement.
function ccmPgIsServerError(error) {
  return Boolean(error) && typeof error.code === "string" && /^[0-9A-Z]{5}$/.test(error.code) && error.severity !== undefined;
}

function ccmPgConnectionLost(error) {
  if (ccmPgIsOwn(error)) return false;
  if (ccmPgIsServerError(error)) return CCM_PG_SESSION_ENDED_STATES.has(error.code) || error.code.startsWith("08");
  return true;
}

// A connection URL inside a message would carry its password; its user-info part is masked
// wherever one appears, whatever produced the message.
function ccmPgMaskCredentials(text) {
  return text.replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s:@/]*):[^\s@/]*@/g, "$1:***@");
}

// The error's kind and, for server errors, the server's own sentence and SQLSTATE.
function ccmPgDescribe(error) {
  if (!error) return "unknown error";
  if (ccmPgIsServerError(error)) return ccmPgMaskCredentials(`${error.message} (${error.code})`);
  let text = typeof error.message === "string" ? error.message : String(error);
  // Node reports a refused connection to a name with several addresses (localhost: ::1 and
  // 127.0.0.1) as an AggregateError whose own message is empty.
  if (!text && Array.isArray(error.errors)) text = error.errors.map((e) => e && e.message).filter(Boolean).join("; ");
  if (!text) text = typeof error.code === "string" ? error.code : "unknown error";
  return ccmPgMaskCredentials(text);
}

// `host:port` of the server the pool connects to, for messages: never the password. pg's own
// client reads the options and the PG* environment variables, so the name is the one it uses;
// making a client opens no connection.
function ccmPgServerOf(pool) {
  try {
    const Client = pool.Client;
    if (typeof Client === "function") {
      const client = new Client(pool.options || {});
      const host = client.host || "localhost";
      const port = client.port || 5432;
      return host.startsWith("/") ? `the socket in ${host} (port ${port})` : `${host}:${port}`;
    }
  } catch {
    // A custom client class that cannot be made this way: the message names no address.
  }
  return "the configured address";
}

// A statement's name for the per-connection cache of prepared statements, derived from its
// text: two tables on one pool (different schemas) never give one name two texts, which pg
// refuses, and the name stays within PostgreSQL's 63-byte identifier limit.
function ccmPgStatementName(text) {
  return `ccm_${ccmPgCrypto.createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
}

// The statements of one schema, as the native backend writes them.
function ccmPgStatements(s) {
  const upsert = (table, key, keyType) =>
    `INSERT INTO ${s}.${table} (session, ${key}, record)
     SELECT $1::text, k, r FROM UNNEST($2::${keyType}[], $3::text[]) AS u(k, r)
     ON CONFLICT (session, ${key}) DO UPDATE SET record = EXCLUDED.record`;
  const texts = {
    row: `SELECT row FROM ${s}.sessions WHERE id = $1`,
    rowForUpdate: `SELECT row FROM ${s}.sessions WHERE id = $1 FOR UPDATE`,
    rows: `SELECT id, row FROM ${s}.sessions ORDER BY id COLLATE "C"`,
    insertRow: `INSERT INTO ${s}.sessions (id, row, revision, updated_ms) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO NOTHING`,
    // The row lock taken before makes the comparison with the old text redundant; it keeps
    // the compare-and-set in the statement itself should the locking ever change.
    updateRow: `UPDATE ${s}.sessions SET row = $2, revision = $3, updated_ms = $4
     WHERE id = $1 AND row = $5`,
    upsertEfforts: upsert("efforts", "position", "bigint"),
    upsertMessages: `INSERT INTO ${s}.messages (session, seq, log, record)
     SELECT $1::text, k, l, r FROM UNNEST($2::bigint[], $3::text[], $4::text[]) AS u(k, l, r)
     ON CONFLICT (session, seq) DO UPDATE SET log = EXCLUDED.log, record = EXCLUDED.record`,
    upsertMetrics: upsert("metrics", "turn", "bigint"),
    upsertTelemetry: upsert("telemetry", "turn", "bigint"),
    upsertAttachments: upsert("attachments", "id", "text"),
    efforts: `SELECT position, record FROM ${s}.efforts WHERE session = $1 ORDER BY position`,
    attachments: `SELECT id, record FROM ${s}.attachments WHERE session = $1 ORDER BY id COLLATE "C"`,
    logs: `SELECT log, seq, record FROM ${s}.messages
     WHERE session = $1 AND log = ANY($2::text[]) ORDER BY log, seq`,
    ambientTail: `SELECT seq, record FROM ${s}.messages WHERE session = $1 AND log = 'ambient'
     ORDER BY seq DESC LIMIT $2`,
    historyTail: `SELECT turn, record FROM ${s}.metrics WHERE session = $1 ORDER BY turn DESC LIMIT $2`,
    // Counted over the (session, log, seq) index: no message text is read.
    logSizes: `SELECT log, count(*) AS n FROM ${s}.messages WHERE session = $1 GROUP BY log
     ORDER BY log COLLATE "C"`,
    log: `SELECT seq, record FROM ${s}.messages WHERE session = $1 AND log = $2 ORDER BY seq`,
    messagesBetween: `SELECT seq, log, record FROM ${s}.messages
     WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`,
    messagesBySeq: `SELECT seq, log, record FROM ${s}.messages
     WHERE session = $1 AND seq = ANY($2::bigint[]) ORDER BY seq`,
    allMessages: `SELECT seq, log, record FROM ${s}.messages WHERE session = $1 ORDER BY seq`,
    allMetrics: `SELECT turn, record FROM ${s}.metrics WHERE session = $1 ORDER BY turn`,
    telemetry: `SELECT record FROM ${s}.telemetry WHERE session = $1 AND turn = $2`,
    setRow: `UPDATE ${s}.sessions SET row = $3, revision = $4, updated_ms = $5
     WHERE id = $1 AND row = $2`,
    // The row first: a save in progress holds it, so a delete waits for the save instead of
    // deleting records under it (and both lock in the same order).
    delete: [
      `DELETE FROM ${s}.sessions WHERE id = $1`,
      `DELETE FROM ${s}.efforts WHERE session = $1`,
      `DELETE FROM ${s}.messages WHERE session = $1`,
      `DELETE FROM ${s}.metrics WHERE session = $1`,
      `DELETE FROM ${s}.telemetry WHERE session = $1`,
      `DELETE FROM ${s}.attachments WHERE session = $1`,
    ],
  };
  const prepared = (text) => ({ name: ccmPgStatementName(text), text });
  const statements = {};
  for (const [key, value] of Object.entries(texts)) {
    statements[key] = Array.isArray(value) ? value.map(prepared) : prepared(value);
  }
  return statements;
}

// The columns the sessions table keeps beside the row text: the revision and the time of the
// last update, read from the row itself, as the native backend stores them.
function ccmPgRowColumns(where, text) {
  ccmPgCheckText(where, "newRow", text);
  let row;
  try {
    row = JSON.parse(text);
  } catch (error) {
    throw ccmPgError("argument", `${where}: newRow is not a session row's JSON (${error.message})`);
  }
  const revision = row && row.header ? row.header.revision : undefined;
  if (!Number.isSafeInteger(revision) || revision < 0) {
    throw ccmPgError("argument", `${where}: newRow has no header.revision that is a whole number`);
  }
  if (typeof row.updated_ms !== "number" || !Number.isFinite(row.updated_ms)) {
    throw ccmPgError("argument", `${where}: newRow has no updated_ms that is a number`);
  }
  return { revision, updatedMs: row.updated_ms };
}

// One record per key, the last one winning as sequential writes would have it: an
// `ON CONFLICT DO UPDATE` may not touch a row twice in one statement. Keys come out sorted, as
// the native backend sends them.
function ccmPgKeyed(where, name, entries, numericKeys, width) {
  if (!Array.isArray(entries)) throw ccmPgArgument(where, `records.${name}`, "an array", entries);
  const unique = new Map();
  for (const entry of entries) {
    if (!Array.isArray(entry) || entry.length !== width) {
      throw ccmPgArgument(where, `each of records.${name}`, `an array of ${width} values`, entry);
    }
    const key = entry[0];
    if (numericKeys ? !Number.isSafeInteger(key) || key < 0 : typeof key !== "string") {
      throw ccmPgArgument(where, `a key of records.${name}`, numericKeys ? "a whole number of at least 0" : "a string", key);
    }
    for (let i = 1; i < width; i++) ccmPgCheckText(where, `a text of records.${name}`, entry[i]);
    unique.set(key, entry.slice(1));
  }
  const keys = [...unique.keys()].sort(numericKeys ? (a, b) => a - b : undefined);
  return { keys, values: keys.map((key) => unique.get(key)) };
}

// pg returns bigint columns as strings (a bigint may exceed 2^53); sequence numbers, turns,
// positions and counts never do, and the table's callers expect numbers.
function ccmPgNumber(value) {
  return typeof value === "number" ? value : Number(value);
}

// Sets an own, enumerable property whatever the key is (`__proto__` included).
function ccmPgPut(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class PostgresRecordTable {
  #pool;
  #schema;
  #server;
  #sql;
  #closed = false;

  /**
   * A record table over `pool` in `schema` (default "ccm"). Call `migrate()` before any other
   * method; `PostgresSessionStore.open` does.
   */
  constructor(pool, schema = "ccm") {
    if (pool === null || typeof pool !== "object" || typeof pool.connect !== "function") {
      throw ccmPgArgument("PostgresRecordTable", "pool", "a pg.Pool", pool);
    }
    if (!ccmPgValidSchema(schema)) {
      throw ccmPgError("argument", `PostgresRecordTable: the schema name ${JSON.stringify(schema)} is not usable: letters, digits and '_' only, not starting with a digit, at most 63 characters`);
    }
    this.#pool = pool;
    this.#schema = schema;
    this.#server = ccmPgServerOf(pool);
    this.#sql = ccmPgStatements(`"${schema}"`);
  }

  /** The backend's name, as `SessionStore.backend` reports it. */
  get kind() {
    return "postgres";
  }

  /** The database schema the tables live in. */
  get schema() {
    return this.#schema;
  }

  /** `host:port` of the server, as messages name it (never the password). */
  get server() {
    return this.#server;
  }

  /** Refuses every later operation; the pool itself is its owner's to end. */
  close() {
    this.#closed = true;
  }

  /**
   * Creates the schema and its tables, or migrates them to this version, in one transaction
   * under the advisory lock the native backend takes, so several processes (Rust or Node)
   * starting at once apply each migration exactly once.
   */
  async migrate() {
    const context = `the schema '${this.#schema}' could not be created or migrated`;
    const quoted = `"${this.#schema}"`;
    return this.#transaction("BEGIN", async (client) => {
      // The key is the native backend's, so both serialise on one lock.
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`ccm-store schema ${this.#schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted};
        CREATE TABLE IF NOT EXISTS ${quoted}.schema_version (
            version integer PRIMARY KEY,
            record_layout integer NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        );`);
      const found = await client.query(`SELECT coalesce(max(version), 0) AS version FROM ${quoted}.schema_version`);
      const current = ccmPgNumber(found.rows[0].version);
      if (current > CCM_PG_SCHEMA_VERSION) {
        throw ccmPgError("storage", `the sessions in schema '${this.#schema}' on ${this.#server} were stored by a newer version of this program (schema version ${current}, this one knows up to ${CCM_PG_SCHEMA_VERSION}); update cognitive-context to open them (nothing was changed)`);
      }
      for (const [version, script] of CCM_PG_MIGRATIONS) {
        if (version <= current) continue;
        await client.query(script.replaceAll("{s}", quoted));
        await client.query(`INSERT INTO ${quoted}.schema_version (version, record_layout) VALUES ($1, $2)`, [version, CCM_PG_RECORD_LAYOUT]);
      }
      return { commit: true, value: undefined };
    }, (error) => {
      throw this.#failure(context, error);
    });
  }

  /** The schema version the database is at. */
  async schemaVersion() {
    const found = await this.#query("the schema version could not be read", {
      text: `SELECT coalesce(max(version), 0) AS version FROM "${this.#schema}".schema_version`,
    });
    return ccmPgNumber(found.rows[0].version);
  }

  async rows() {
    const found = await this.#query("the sessions could not be listed", this.#sql.rows);
    return found.rows.map((r) => [r.id, r.row]);
  }

  async row(id) {
    ccmPgCheckText("PostgresRecordTable.row", "id", id);
    const found = await this.#query(`session '${id}' could not be read`, this.#sql.row, [id]);
    return found.rows.length ? found.rows[0].row : null;
  }

  async write(id, expectedRow, newRow, records) {
    const where = "PostgresRecordTable.write";
    ccmPgCheckText(where, "id", id);
    if (expectedRow !== null) ccmPgCheckText(where, "expectedRow", expectedRow);
    const { revision, updatedMs } = ccmPgRowColumns(where, newRow);
    if (records === null || typeof records !== "object" || Array.isArray(records)) {
      throw ccmPgArgument(where, "records", "an object { efforts, messages, metrics, telemetry, attachments }", records);
    }
    const batches = [
      [this.#sql.upsertEfforts, ccmPgKeyed(where, "efforts", records.efforts ?? [], true, 2)],
      [this.#sql.upsertMetrics, ccmPgKeyed(where, "metrics", records.metrics ?? [], true, 2)],
      [this.#sql.upsertTelemetry, ccmPgKeyed(where, "telemetry", records.telemetry ?? [], true, 2)],
      [this.#sql.upsertAttachments, ccmPgKeyed(where, "attachments", records.attachments ?? [], false, 2)],
    ];
    const messages = ccmPgKeyed(where, "messages", records.messages ?? [], true, 3);
    const sql = this.#sql;
    return this.#transaction("BEGIN", async (client) => {
      if (expectedRow === null) {
        // A new session: the insert waits for a concurrent creator of the same id to finish,
        // then inserts nothing, and this writer came second.
        const inserted = await client.query({ ...sql.insertRow, values: [id, newRow, revision, updatedMs] });
        if (inserted.rowCount !== 1) return { commit: false, value: false };
      } else {
        // The lock is held to the end of the transaction: a concurrent save of this session
        // waits here, then reads the row this one wrote.
        const found = await client.query({ ...sql.rowForUpdate, values: [id] });
        if (found.rows.length !== 1 || found.rows[0].row !== expectedRow) return { commit: false, value: false };
      }
      for (const [statement, { keys, values }] of batches) {
        if (keys.length === 0) continue;
        await client.query({ ...statement, values: [id, keys, values.map((v) => v[0])] });
      }
      if (messages.keys.length > 0) {
        await client.query({
          ...sql.upsertMessages,
          values: [id, messages.keys, messages.values.map((v) => v[0]), messages.values.map((v) => v[1])],
        });
      }
      if (expectedRow !== null) {
        const updated = await client.query({ ...sql.updateRow, values: [id, newRow, revision, updatedMs, expectedRow] });
        if (updated.rowCount !== 1) return { commit: false, value: false };
      }
      return { commit: true, value: true };
    }, (error, committing) => this.#saveFailure(id, error, committing));
  }

  async setRow(id, expectedRow, newRow) {
    const where = "PostgresRecordTable.setRow";
    ccmPgCheckText(where, "id", id);
    ccmPgCheckText(where, "expectedRow", expectedRow);
    const { revision, updatedMs } = ccmPgRowColumns(where, newRow);
    // One statement is atomic by itself: under READ COMMITTED, an UPDATE that waited for a
    // concurrent writer checks its condition again against the row that writer committed.
    try {
      const updated = await this.#withClient((client) =>
        client.query({ ...this.#sql.setRow, values: [id, expectedRow, newRow, revision, updatedMs] }));
      return updated.rowCount === 1;
    } catch (error) {
      if (ccmPgIsServerError(error) && CCM_PG_CONFLICT_STATES.has(error.code)) return false;
      throw this.#failure(`session '${id}' could not be updated`, error);
    }
  }

  async workingSet(id, expectedRow, request) {
    const where = "PostgresRecordTable.workingSet";
    ccmPgCheckText(where, "id", id);
    ccmPgCheckText(where, "expectedRow", expectedRow);
    if (request === null || typeof request !== "object" || Array.isArray(request)) {
      throw ccmPgArgument(where, "request", "an object { effortLogs, ambientTail, historyTail }", request);
    }
    const effortIds = request.effortLogs ?? [];
    if (!Array.isArray(effortIds)) throw ccmPgArgument(where, "request.effortLogs", "an array of effort ids", effortIds);
    for (const effort of effortIds) ccmPgCheckText(where, "each of request.effortLogs", effort);
    ccmPgCheckCount(where, "request.ambientTail", request.ambientTail);
    ccmPgCheckCount(where, "request.historyTail", request.historyTail);
    const sql = this.#sql;
    const context = `session '${id}' could not be read`;
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      const found = await client.query({ ...sql.row, values: [id] });
      if (found.rows.length !== 1 || found.rows[0].row !== expectedRow) return { commit: false, value: null };
      const efforts = await client.query({ ...sql.efforts, values: [id] });
      const effortLogs = {};
      const effortOfKey = new Map();
      for (const effort of effortIds) {
        ccmPgPut(effortLogs, effort, []);
        effortOfKey.set(`effort:${effort}`, effort);
      }
      if (effortOfKey.size > 0) {
        const logs = await client.query({ ...sql.logs, values: [id, [...effortOfKey.keys()]] });
        for (const r of logs.rows) effortLogs[effortOfKey.get(r.log)].push([ccmPgNumber(r.seq), r.record]);
      }
      const ambient = request.ambientTail > 0 ? (await client.query({ ...sql.ambientTail, values: [id, request.ambientTail] })).rows : [];
      const history = request.historyTail > 0 ? (await client.query({ ...sql.historyTail, values: [id, request.historyTail] })).rows : [];
      const attachments = await client.query({ ...sql.attachments, values: [id] });
      const sizes = await client.query({ ...sql.logSizes, values: [id] });
      return {
        commit: true,
        value: {
          efforts: efforts.rows.map((r) => [ccmPgNumber(r.position), r.record]),
          effortLogs,
          // Read newest first to take the tail; given in sequence order.
          ambientTail: ambient.map((r) => [ccmPgNumber(r.seq), r.record]).reverse(),
          historyTail: history.map((r) => [ccmPgNumber(r.turn), r.record]).reverse(),
          attachments: attachments.rows.map((r) => [r.id, r.record]),
          logSizes: sizes.rows.map((r) => [r.log, ccmPgNumber(r.n)]),
        },
      };
    }, (error) => {
      throw this.#failure(context, error);
    });
  }

  async log(id, log) {
    ccmPgCheckText("PostgresRecordTable.log", "id", id);
    ccmPgCheckText("PostgresRecordTable.log", "log", log);
    const found = await this.#query(`the log '${log}' of session '${id}' could not be read`, this.#sql.log, [id, log]);
    return found.rows.map((r) => [ccmPgNumber(r.seq), r.record]);
  }

  async messages(id, seqs) {
    const where = "PostgresRecordTable.messages";
    ccmPgCheckText(where, "id", id);
    if (!Array.isArray(seqs)) throw ccmPgArgument(where, "seqs", "an array of sequence numbers", seqs);
    for (const seq of seqs) ccmPgCheckCount(where, "each of seqs", seq);
    if (seqs.length === 0) return [];
    const found = await this.#query(`messages of session '${id}' could not be read`, this.#sql.messagesBySeq, [id, seqs]);
    return found.rows.map((r) => [ccmPgNumber(r.seq), r.log, r.record]);
  }

  async messagesBetween(id, from, to) {
    const where = "PostgresRecordTable.messagesBetween";
    ccmPgCheckText(where, "id", id);
    ccmPgCheckCount(where, "from", from);
    ccmPgCheckCount(where, "to", to);
    if (to <= from) return [];
    const found = await this.#query(`messages of session '${id}' could not be read`, this.#sql.messagesBetween, [id, from, to]);
    return found.rows.map((r) => [ccmPgNumber(r.seq), r.log, r.record]);
  }

  async telemetry(id, turn) {
    ccmPgCheckText("PostgresRecordTable.telemetry", "id", id);
    ccmPgCheckCount("PostgresRecordTable.telemetry", "turn", turn);
    const found = await this.#query(`the telemetry of turn ${turn} could not be read`, this.#sql.telemetry, [id, turn]);
    return found.rows.length ? found.rows[0].record : null;
  }

  async all(id) {
    ccmPgCheckText("PostgresRecordTable.all", "id", id);
    const sql = this.#sql;
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      const found = await client.query({ ...sql.row, values: [id] });
      if (found.rows.length === 0) {
        return { commit: true, value: { row: null, efforts: [], messages: [], metrics: [], attachments: [] } };
      }
      const efforts = await client.query({ ...sql.efforts, values: [id] });
      const messages = await client.query({ ...sql.allMessages, values: [id] });
      const metrics = await client.query({ ...sql.allMetrics, values: [id] });
      const attachments = await client.query({ ...sql.attachments, values: [id] });
      return {
        commit: true,
        value: {
          row: found.rows[0].row,
          efforts: efforts.rows.map((r) => [ccmPgNumber(r.position), r.record]),
          messages: messages.rows.map((r) => [ccmPgNumber(r.seq), r.log, r.record]),
          metrics: metrics.rows.map((r) => [ccmPgNumber(r.turn), r.record]),
          attachments: attachments.rows.map((r) => [r.id, r.record]),
        },
      };
    }, (error) => {
      throw this.#failure(`session '${id}' could not be read for export`, error);
    });
  }

  async delete(id) {
    ccmPgCheckText("PostgresRecordTable.delete", "id", id);
    return this.#transaction("BEGIN", async (client) => {
      for (const statement of this.#sql.delete) await client.query({ ...statement, values: [id] });
      return { commit: true, value: undefined };
    }, (error) => {
      throw this.#failure(`session '${id}' could not be deleted`, error);
    });
  }

  // A client of the pool for one operation, always given back. A client whose connection
  // failed is given back with the error, so the pool closes it instead of handing it out again.
  async #withClient(body) {
    if (this.#closed || this.#pool.ending || this.#pool.ended) {
      throw ccmPgError("unavailable", `this PostgreSQL session store was closed; open it again to use it`);
    }
    let client;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw ccmPgError("unavailable", `the PostgreSQL server at ${this.#server} cannot be reached (${ccmPgDescribe(error)}); check that it runs and accepts connections`);
    }
    // A checked-out client has no listener for errors of its connection (the pool listens
    // only while the client is idle), and an 'error' event without one would end the process.
    let broken = null;
    const onError = (error) => {
      broken = error || new Error("connection error");
    };
    client.on("error", onError);
    try {
      return await body(client, (error) => {
        broken = broken || error;
      });
    } catch (error) {
      if (ccmPgConnectionLost(error)) broken = broken || error;
      throw error;
    } finally {
      client.removeListener("error", onError);
      client.release(broken || undefined);
    }
  }

  // One statement outside a transaction: one statement sees one snapshot by itself.
  async #query(context, statement, values) {
    try {
      return await this.#withClient((client) => client.query(values ? { ...statement, values } : statement));
    } catch (error) {
      throw this.#failure(context, error);
    }
  }

  // Runs `body` in a transaction begun with `begin`. `body` resolves `{ commit, value }`: the
  // transaction is committed or rolled back, and `value` is the result. On an error the
  // transaction is rolled back (unless the connection is gone, which rolls it back on the
  // server) and `onError(error, committing)` gives the result or throws.
  async #transaction(begin, body, onError) {
    let outcome;
    try {
      outcome = await this.#withClient(async (client, markBroken) => {
        let committing = false;
        try {
          await client.query(begin);
          const { commit, value } = await body(client);
          if (commit) {
            committing = true;
            await client.query("COMMIT");
          } else {
            await client.query("ROLLBACK");
          }
          return { value };
        } catch (error) {
          if (ccmPgConnectionLost(error)) {
            markBroken(error);
          } else {
            try {
              await client.query("ROLLBACK");
            } catch (rollbackError) {
              // A connection that cannot roll back is not given out again.
              markBroken(rollbackError);
            }
          }
          return { error, committing };
        }
      });
    } catch (error) {
      // The pool gave no client, or the store is closed: nothing was begun.
      if (ccmPgIsOwn(error)) throw error;
      return onError(error, false);
    }
    if ("error" in outcome) return onError(outcome.error, outcome.committing);
    return outcome.value;
  }

  // The error for a failed operation other than a save.
  #failure(context, error) {
    if (ccmPgIsOwn(error)) return error;
    if (ccmPgConnectionLost(error)) {
      return ccmPgError("storage", `${context}: the connection to the PostgreSQL server at ${this.#server} was lost (${ccmPgDescribe(error)})`);
    }
    if (error.code === CCM_PG_DISK_FULL) {
      return ccmPgError("quota", `${context}: the database server's disk is full (${ccmPgDescribe(error)})`);
    }
    return ccmPgError("storage", `${context}: ${ccmPgDescribe(error)}`);
  }

  // The result or error of a failed save: `false` when another writer came first, a rejection
  // otherwise, which says whether anything can have been written.
  #saveFailure(id, error, committing) {
    if (ccmPgIsOwn(error)) throw error;
    if (ccmPgConnectionLost(error)) {
      if (committing) {
        throw ccmPgError("storage", `the connection to the PostgreSQL server at ${this.#server} was lost while session '${id}' was being committed (${ccmPgDescribe(error)}); the server may or may not have stored this save, so reload the session to see which revision is stored`);
      }
      throw ccmPgError("storage", `the connection to the PostgreSQL server at ${this.#server} was lost while session '${id}' was being saved (${ccmPgDescribe(error)}); the server rolled the save back, nothing was written`);
    }
    if (CCM_PG_CONFLICT_STATES.has(error.code)) return false;
    if (error.code === CCM_PG_DISK_FULL) {
      throw ccmPgError("quota", `the database server's disk is full; nothing of session '${id}' was written (${ccmPgDescribe(error)})`);
    }
    throw ccmPgError("storage", `session '${id}' could not be saved; nothing was written (${ccmPgDescribe(error)})`);
  }
}

// `pg`, loaded when first needed: it is an optional peer dependency of the package.
function ccmPgModule() {
  try {
    return require("pg");
  } catch (error) {
    if (error && error.code === "MODULE_NOT_FOUND" && /['"]pg['"]/.test(String(error.message))) {
      throw ccmPgError("unavailable", "PostgresSessionStore needs the `pg` package (node-postgres 8), which is not installed; install it with npm install pg");
    }
    throw ccmPgError("unavailable", `the \`pg\` package could not be loaded (${error && error.message ? error.message : String(error)})`);
  }
}

class PostgresSessionStore {
  constructor() {
    throw ccmPgError("argument", "PostgresSessionStore is not constructed; open one with PostgresSessionStore.open({ connectionString }) or PostgresSessionStore.open({ pool })");
  }

  /**
   * Opens a session store in PostgreSQL: over `pool` (a pg.Pool the caller owns) or over a
   * pool of its own to `connectionString`. Creates or migrates the tables in `schema`
   * (default "ccm"), then resolves a `SessionStore` with a `close()` method.
   */
  static async open(options) {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw ccmPgError("argument", `PostgresSessionStore.open takes an object such as { connectionString: "postgres://user@host/db" } or { pool }, got ${ccmPgDescribeValue(options)}`);
    }
    for (const key of Object.keys(options)) {
      if (!CCM_PG_OPTION_KEYS.includes(key)) {
        throw ccmPgError("argument", `PostgresSessionStore.open: unknown key \`${key}\` in options; the keys are ${CCM_PG_OPTION_KEYS.join(", ")}`);
      }
    }
    const { pool: given, connectionString, schema = "ccm", max } = options;
    if ((given === undefined) === (connectionString === undefined)) {
      throw ccmPgError("argument", "PostgresSessionStore.open: give exactly one of options.pool (a pg.Pool) and options.connectionString");
    }
    if (given !== undefined && (given === null || typeof given !== "object" || typeof given.connect !== "function")) {
      throw ccmPgArgument("PostgresSessionStore.open", "options.pool", "a pg.Pool", given);
    }
    if (connectionString !== undefined && (typeof connectionString !== "string" || connectionString === "")) {
      throw ccmPgArgument("PostgresSessionStore.open", "options.connectionString", "a non-empty string", connectionString);
    }
    if (!ccmPgValidSchema(schema)) {
      throw ccmPgError("argument", `PostgresSessionStore.open: the schema name ${JSON.stringify(schema)} is not usable: letters, digits and '_' only, not starting with a digit, at most 63 characters`);
    }
    if (max !== undefined) {
      if (given !== undefined) {
        throw ccmPgError("argument", "PostgresSessionStore.open: options.max sizes the pool opened from connectionString; a given pool keeps its own size");
      }
      if (!Number.isSafeInteger(max) || max < 1) throw ccmPgArgument("PostgresSessionStore.open", "options.max", "a whole number of at least 1", max);
    }

    let pool = given;
    if (pool === undefined) {
      const pg = ccmPgModule();
      pool = new pg.Pool({
        connectionString,
        max: max ?? 16,
        // pg waits this long both for the server to accept a connection and for a free client
        // of the pool; without it an unreachable host fails only after the system's TCP timeout.
        connectionTimeoutMillis: 10_000,
        application_name: "ccm-store",
      });
      // An idle connection that the server closes emits 'error' on the pool, which would end
      // the process without a listener; the pool has already discarded that client, and the
      // next operation opens a new one.
      pool.on("error", () => {});
    }
    const owned = given === undefined;
    const table = new PostgresRecordTable(pool, schema);
    let store;
    try {
      await table.migrate();
      store = await SessionStore.openHost(table);
    } catch (error) {
      if (owned) await pool.end().catch(() => {});
      throw error;
    }
    let closing = null;
    Object.defineProperty(store, "close", {
      configurable: true,
      value: async function close() {
        table.close();
        // The pool opened here is ended here; a given pool stays its owner's.
        if (owned) {
          closing ??= pool.end();
          await closing;
        }
      },
    });
    return store;
  }
}

exports.PostgresSessionStore = PostgresSessionStore;
exports.PostgresRecordTable = PostgresRecordTable;
