
// ----- FileSessionStore: sessions on a server's disk (npm/ccm/glue/filestore.cjs.js) -----
// npm/build appends this file to the Node engine modules (CommonJS), after the adapters. It is
// plain JavaScript over `Session.toJSON` / `Session.fromJSON`: the Rust `SessionStore` needs
// IndexedDB or localStorage, which Node does not have.
//
// Layout: `<directory>/<id>/session.json` holds `{ format, version, info, document }`, the
// whole session document and its revision, and `<id>/info.json` a copy of `info` so that
// `list()` need not read whole sessions. Every write goes to a temporary file that is then
// renamed over the old one (a rename is atomic on one file system), so a crash leaves either
// the old or the new file, never half of one. `session.json` is the truth: a damaged or
// missing `info.json` is rebuilt from it. A save holds `<id>/lock` (created exclusively), so
// two processes never interleave their check of the revision and their write.

const ccmFs = require("fs");
const ccmPath = require("path");
const ccmCrypto = require("crypto");

const CCM_FILE_FORMAT = "ccm-file-store";
const CCM_FILE_VERSION = 1;
// A lock older than this was left by a process that died while saving.
const CCM_STALE_LOCK_MS = 30_000;

function ccmStoreError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

// The checks every public method makes before it touches the disk, so a wrong argument is
// refused with `code: "argument"` (as SessionStore refuses it) and nothing is written.
const CCM_MAX_NAME_CHARS = 1000;

function ccmDescribe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "bigint") return "a BigInt";
  if (typeof value === "object") return "an object";
  if (typeof value === "undefined") return "undefined";
  return `${/^[aeiou]/.test(typeof value) ? "an" : "a"} ${typeof value}`;
}

function ccmFileArgument(method, name, expected, value) {
  return ccmStoreError("argument", `FileSessionStore.${method}: ${name} must be ${expected}, got ${ccmDescribe(value)}`);
}

function ccmCheckText(method, name, value, maxChars) {
  if (typeof value !== "string") throw ccmFileArgument(method, name, "a string", value);
  if (maxChars !== undefined && value.length > maxChars) {
    throw ccmStoreError("too_large", `FileSessionStore.${method}: ${name} is ${value.length} characters long; the limit is ${maxChars}`);
  }
}

function ccmCheckCounter(method, counter) {
  if (counter !== undefined && counter !== null && typeof counter !== "function") {
    throw ccmFileArgument(method, "counter", "a function that counts a text's tokens", counter);
  }
}

// Errors of `Session.fromJSON` about its arguments keep their code; anything else means the
// document itself could not be read.
const CCM_ARGUMENT_CODES = new Set(["argument", "config", "too_large", "freed"]);

// What each session object is linked to: its store, id and the revision it was read or saved
// at (the conflict check compares it with the stored one).
const ccmFileLinks = new WeakMap();

for (const [name, field] of [["storeId", "id"], ["revision", "revision"]]) {
  const original = Object.getOwnPropertyDescriptor(Session.prototype, name);
  Object.defineProperty(Session.prototype, name, {
    configurable: true,
    enumerable: original.enumerable,
    get() {
      const link = ccmFileLinks.get(this);
      return link ? link[field] : original.get.call(this);
    },
  });
}

async function ccmWriteAtomically(file, text) {
  const temporary = `${file}.${process.pid}.${ccmCrypto.randomBytes(4).toString("hex")}.tmp`;
  const handle = await ccmFs.promises.open(temporary, "w");
  try {
    await handle.writeFile(text, "utf8");
    // On disk before the rename, so the rename never exposes an empty file after a crash.
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await ccmFs.promises.rename(temporary, file);
  } catch (error) {
    await ccmFs.promises.rm(temporary, { force: true });
    throw error;
  }
}

function ccmIoError(action, error) {
  if (error && error.code === "ENOSPC") return ccmStoreError("quota", `${action}: the disk is full`);
  return ccmStoreError("storage", `${action}: ${error && error.message ? error.message : String(error)}`);
}

class FileSessionStore {
  constructor(directory) {
    this.directory = directory;
  }

  /**
   * Opens (and creates when missing) a store in `directory` (default `.ccm-sessions` in the
   * working directory).
   */
  static async open(options = {}) {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw ccmStoreError("argument", `FileSessionStore.open takes an object such as { directory: "./sessions" }, got ${ccmDescribe(options)}`);
    }
    for (const key of Object.keys(options)) {
      if (key !== "directory") throw ccmStoreError("argument", `FileSessionStore.open: unknown key \`${key}\` in options; the keys are directory`);
    }
    if (options.directory !== undefined) ccmCheckText("open", "options.directory", options.directory);
    const directory = ccmPath.resolve(options.directory ?? ".ccm-sessions");
    try {
      await ccmFs.promises.mkdir(directory, { recursive: true });
    } catch (error) {
      throw ccmIoError(`cannot create the session directory ${directory}`, error);
    }
    return new FileSessionStore(directory);
  }

  /** The backend's name, as `SessionStore.backend` gives it. */
  get backend() {
    return "file";
  }

  #folderOf(id) {
    // Ids are made by the store; anything else (a path, `..`) is no id of this store.
    if (typeof id !== "string" || !/^[A-Za-z0-9_-]{1,100}$/.test(id)) {
      throw ccmStoreError("not_found", `no stored session with id ${JSON.stringify(id)}`);
    }
    return ccmPath.join(this.directory, id);
  }

  /** Reads `<id>/session.json`; a file that is not a stored session is reported as damaged. */
  async #readRecord(id) {
    const file = ccmPath.join(this.#folderOf(id), "session.json");
    let text;
    try {
      text = await ccmFs.promises.readFile(file, "utf8");
    } catch (error) {
      if (error.code === "ENOENT") throw ccmStoreError("not_found", `no stored session with id "${id}"`);
      throw ccmIoError(`cannot read ${file}`, error);
    }
    let record;
    try {
      record = JSON.parse(text);
    } catch (error) {
      throw ccmStoreError("storage", `the stored session "${id}" is damaged: ${file} is not valid JSON (${error.message})`);
    }
    if (!record || record.format !== CCM_FILE_FORMAT || !record.info || !record.document) {
      throw ccmStoreError("storage", `the stored session "${id}" is damaged: ${file} is not a ${CCM_FILE_FORMAT} record`);
    }
    if (record.version > CCM_FILE_VERSION) {
      throw ccmStoreError("storage", `the stored session "${id}" was written by a newer version of cognitive-context (file format ${record.version}); update the package to open it`);
    }
    return record;
  }

  async #writeRecord(id, info, session) {
    const folder = this.#folderOf(id);
    const record = { format: CCM_FILE_FORMAT, version: CCM_FILE_VERSION, info, document: session.toJSON() };
    try {
      await ccmFs.promises.mkdir(folder, { recursive: true });
      await ccmWriteAtomically(ccmPath.join(folder, "session.json"), JSON.stringify(record));
      await ccmWriteAtomically(ccmPath.join(folder, "info.json"), JSON.stringify(info));
    } catch (error) {
      throw ccmIoError(`cannot save the session "${id}" in ${folder}`, error);
    }
  }

  async #withLock(id, action) {
    const lock = ccmPath.join(this.#folderOf(id), "lock");
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await ccmFs.promises.open(lock, "wx");
        await handle.close();
        break;
      } catch (error) {
        if (error.code === "ENOENT") throw ccmStoreError("not_found", `no stored session with id "${id}"`);
        if (error.code !== "EEXIST") throw ccmIoError(`cannot lock the session "${id}"`, error);
        const stat = await ccmFs.promises.stat(lock).catch(() => null);
        if (stat && Date.now() - stat.mtimeMs > CCM_STALE_LOCK_MS) {
          await ccmFs.promises.rm(lock, { force: true });
        } else if (attempt >= 200) {
          throw ccmStoreError("busy", `the session "${id}" is being saved by another process (${lock} exists); try again`);
        } else {
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    }
    try {
      return await action();
    } finally {
      await ccmFs.promises.rm(lock, { force: true });
    }
  }

  #infoOf(id, name, session, created, revision) {
    const metrics = session.metrics();
    return {
      id,
      name,
      created_ms: created,
      updated_ms: Date.now(),
      turn_count: session.turn,
      message_count: metrics.stored_messages,
      revision,
    };
  }

  /** Every stored session, newest first; a damaged one is listed with `damaged` saying why. */
  async list() {
    let entries;
    try {
      entries = await ccmFs.promises.readdir(this.directory, { withFileTypes: true });
    } catch (error) {
      throw ccmIoError(`cannot read the session directory ${this.directory}`, error);
    }
    const sessions = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !/^[A-Za-z0-9_-]{1,100}$/.test(entry.name)) continue;
      const id = entry.name;
      let info = null;
      try {
        info = JSON.parse(await ccmFs.promises.readFile(ccmPath.join(this.directory, id, "info.json"), "utf8"));
      } catch {
        // The summary file is only a copy; session.json decides.
        try {
          info = (await this.#readRecord(id)).info;
        } catch (error) {
          if (error.code === "not_found") continue;
          info = { id, name: "", created_ms: 0, updated_ms: 0, turn_count: 0, message_count: 0, revision: 0, damaged: error.message };
        }
      }
      sessions.push(info);
    }
    return sessions.sort((a, b) => b.updated_ms - a.updated_ms);
  }

  /** Creates a new session, stores it, and returns it (linked to this store). */
  async create(name, options, counter) {
    ccmCheckText("create", "name", name, CCM_MAX_NAME_CHARS);
    ccmCheckCounter("create", counter);
    const session = counter === undefined ? new Session(options) : new Session(options, counter);
    const id = ccmCrypto.randomUUID();
    const now = Date.now();
    await this.#writeRecord(id, this.#infoOf(id, name, session, now, 1), session);
    ccmFileLinks.set(session, { store: this, id, name: name, created: now, revision: 1 });
    return session;
  }

  /** Opens a stored session. */
  async load(id, counter) {
    ccmCheckText("load", "id", id);
    ccmCheckCounter("load", counter);
    const record = await this.#readRecord(id);
    let session;
    try {
      session = counter === undefined ? Session.fromJSON(record.document) : Session.fromJSON(record.document, counter);
    } catch (error) {
      throw ccmStoreError("storage", `the stored session "${id}" is damaged: its document cannot be opened (${error.message})`);
    }
    ccmFileLinks.set(session, { store: this, id, name: record.info.name, created: record.info.created_ms, revision: record.info.revision });
    return session;
  }

  /**
   * Saves the session. Refused with `code: "conflict"` when someone else (another process,
   * another object loaded from the same record) saved it since this object was loaded or
   * saved; nothing stored changes then. A session made with `new Session()` is stored as a new
   * session on its first save.
   */
  async save(session) {
    if (!(session instanceof Session)) throw ccmStoreError("argument", "FileSessionStore.save takes a Session");
    if (session.inTurn) throw ccmStoreError("turn", "a session cannot be saved during a turn; call endTurn or abortTurn first");
    let link = ccmFileLinks.get(session);
    // Store objects on the same directory are the same store (a restarted server opens a new
    // one); the conflict check, not object identity, keeps their saves apart.
    if (link && link.store.directory !== this.directory) {
      throw ccmStoreError("argument", "this session belongs to another store; save it there, or import its JSON here");
    }
    if (!link) {
      const id = ccmCrypto.randomUUID();
      const now = Date.now();
      await this.#writeRecord(id, this.#infoOf(id, "", session, now, 1), session);
      ccmFileLinks.set(session, { store: this, id, name: "", created: now, revision: 1 });
      return { revision: 1, records_written: 1 };
    }
    return this.#withLock(link.id, async () => {
      const stored = await this.#readRecord(link.id);
      if (stored.info.revision !== link.revision) {
        throw ccmStoreError("conflict", `the session "${link.id}" was saved elsewhere since it was opened (stored revision ${stored.info.revision}, this copy's ${link.revision}); load it again to continue`);
      }
      const revision = link.revision + 1;
      await this.#writeRecord(link.id, this.#infoOf(link.id, stored.info.name, session, stored.info.created_ms, revision), session);
      link.revision = revision;
      return { revision, records_written: 1 };
    });
  }

  /** The stored telemetry of one turn (read from the whole document here), or `null`. */
  async turnTelemetry(id, turn) {
    ccmCheckText("turnTelemetry", "id", id);
    if (!Number.isSafeInteger(turn) || turn < 0) throw ccmFileArgument("turnTelemetry", "turn", "a whole number of 0 or more", turn);
    const session = await this.load(id);
    return session.telemetry().find((entry) => entry.turn === turn) ?? null;
  }

  /** Renames a stored session. */
  async rename(id, name) {
    ccmCheckText("rename", "id", id);
    ccmCheckText("rename", "name", name, CCM_MAX_NAME_CHARS);
    await this.#withLock(id, async () => {
      const record = await this.#readRecord(id);
      const info = { ...record.info, name: name, updated_ms: Date.now() };
      const folder = this.#folderOf(id);
      const text = JSON.stringify({ ...record, info });
      try {
        await ccmWriteAtomically(ccmPath.join(folder, "session.json"), text);
        await ccmWriteAtomically(ccmPath.join(folder, "info.json"), JSON.stringify(info));
      } catch (error) {
        throw ccmIoError(`cannot rename the session "${id}"`, error);
      }
    });
  }

  /** Deletes a stored session and its files. */
  async delete(id) {
    ccmCheckText("delete", "id", id);
    const folder = this.#folderOf(id);
    if (!ccmFs.existsSync(folder)) throw ccmStoreError("not_found", `no stored session with id "${id}"`);
    await ccmFs.promises.rm(folder, { recursive: true, force: true });
  }

  /** The stored session as its versioned JSON document (`Session.fromJSON` and `importSession` take it). */
  async exportSession(id) {
    ccmCheckText("exportSession", "id", id);
    return JSON.stringify((await this.#readRecord(id)).document);
  }

  /** Stores a session document (JSON text or the object `toJSON()` returns) as a new session. */
  async importSession(json, name, counter) {
    if (typeof json !== "string" && (json === null || typeof json !== "object" || Array.isArray(json))) {
      throw ccmFileArgument("importSession", "json", "the document's JSON text or object", json);
    }
    ccmCheckText("importSession", "name", name, CCM_MAX_NAME_CHARS);
    ccmCheckCounter("importSession", counter);
    let session;
    try {
      session = counter === undefined ? Session.fromJSON(json) : Session.fromJSON(json, counter);
    } catch (error) {
      if (error && CCM_ARGUMENT_CODES.has(error.code)) throw error;
      throw ccmStoreError("snapshot", `the document cannot be imported: ${error.message}`);
    }
    const id = ccmCrypto.randomUUID();
    const info = this.#infoOf(id, name, session, Date.now(), 1);
    await this.#writeRecord(id, info, session);
    return info;
  }
}

// SessionStore cannot open in Node (no IndexedDB, no localStorage); its error names the store
// that can.
const ccmOpenBrowserStore = SessionStore.open;
SessionStore.open = async function (options) {
  try {
    return await ccmOpenBrowserStore.call(this, options);
  } catch (error) {
    if (error && error.code === "unavailable" && typeof error.message === "string") {
      error.message += "; in Node, keep sessions in files with FileSessionStore.open({ directory })";
    }
    throw error;
  }
};

exports.FileSessionStore = FileSessionStore;
