
// ----- FileSessionStore: sessions on a server's disk (npm/ccm/glue/filestore.cjs.js) -----
// npm/build appends this file to the Node engine modules (CommonJS), after the guard. It is
// the Node half of the file store: the store itself is the Rust one (ccm_store::files, the
// same code as `ccm chat --store file:DIR`), compiled into this module and reached through
// `SessionStore.openFiles`; what lives here are the file operations it is written against
// (the `FilePrimitives` of glue/fileprimitives.d.ts), made of Node's synchronous `fs`
// functions. So a directory written by the CLI and one written by a Node server are the same
// layout, and a save appends only what changed: its cost follows the turn, not the session.
//
// The primitives are synchronous because the format is: a save checks the stored revision and
// writes under one lock, without yielding, and a commit is a file replaced atomically (a
// temporary file, fsynced, renamed over the old one, the directory fsynced).
//
// Locks. Node has no synchronous file lock, so a lock here is the owner file
// `locks/<name>.lock.owner`, created exclusively (`wx`) and holding
// `{"pid","host","time_ms","holder":"node"}`, removed when the lock is let go. Native processes
// (the CLI) take the operating system's lock on `locks/<name>.lock` and then the same owner
// file, so Node processes and native processes exclude each other through it, and one session
// may be written by both at once. An owner file is waited for (short synchronous sleeps, up to
// 30 seconds, then the lock fails with `code: "storage"` naming the process) unless it is
// stale: its process is gone from this host (`process.kill(pid, 0)` fails with ESRCH); it is
// unreadable and older than 10 seconds (its process died between creating and writing it); or
// it was written on another host more than 10 minutes ago. A stale file is moved aside under a
// unique name and removed, and linked back if what was moved turns out to be another process's
// new file. Readers lock too (exclusively here), so a read never sees a save half-done.
//
// Migration. The store of earlier versions kept whole documents, `<dir>/<id>/session.json`
// (`{ format: "ccm-file-store", version: 1, info, document }`) beside `<id>/info.json`. On
// `open`, each such session is imported into the new layout under the same id, name and times,
// and its folder is then renamed `<id>.migrated-v1` (kept, never deleted) so it is imported
// once. A session that cannot be imported (a damaged file) stays where it is, and a warning
// (`process.emitWarning`, code CCM_FILE_MIGRATION) says why; the next `open` tries again.

const ccmFs = require("fs");
const ccmPath = require("path");
const ccmOs = require("os");
const ccmCrypto = require("crypto");

const CCM_OLD_FILE_FORMAT = "ccm-file-store";
const CCM_OLD_FILE_VERSION = 1;
const CCM_MIGRATED_SUFFIX = ".migrated-v1";
const CCM_LOCK_WAIT_MS = 30_000;
const CCM_UNWRITTEN_OWNER_STALE_MS = 10_000;
const CCM_UNCHECKED_OWNER_STALE_MS = 10 * 60_000;
const CCM_LOCK_POLL_MS = 3;

function ccmStoreError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

function ccmDescribe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "bigint") return "a BigInt";
  if (typeof value === "object") return "an object";
  if (typeof value === "undefined") return "undefined";
  return `${/^[aeiou]/.test(typeof value) ? "an" : "a"} ${typeof value}`;
}

// A synchronous sleep: the primitives must not return to the event loop in the middle of a save.
const ccmSleepCell = new Int32Array(new SharedArrayBuffer(4));
function ccmSleep(ms) {
  Atomics.wait(ccmSleepCell, 0, 0, ms);
}

function ccmMissing(error) {
  return error && error.code === "ENOENT";
}

/**
 * The file primitives of `directory` (an absolute path), over Node's synchronous `fs`: the
 * `FilePrimitives` the Rust file store calls (glue/fileprimitives.d.ts).
 */
function ccmFilePrimitives(directory) {
  const tag = `${process.pid}-${ccmCrypto.randomBytes(4).toString("hex")}`;
  const host = ccmOs.hostname();
  let temporaries = 0;
  let nextLock = 1;
  const locks = new Map();

  const full = (path) => (path === "" ? directory : ccmPath.join(directory, ...path.split("/")));

  // Makes a directory's entries (a new or renamed file) durable. Windows cannot open a
  // directory to sync it; there the rename itself is what the system promises.
  const syncDirectory = (dir) => {
    if (process.platform === "win32") return;
    const fd = ccmFs.openSync(dir, "r");
    try {
      ccmFs.fsyncSync(fd);
    } finally {
      ccmFs.closeSync(fd);
    }
  };

  const writeAll = (fd, bytes, position) => {
    let done = 0;
    while (done < bytes.length) {
      done += ccmFs.writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
    }
  };

  // ----- owner files (see the comment at the top) -----

  const alive = (pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return error.code !== "ESRCH";
    }
  };

  const stale = (text, modifiedMs) => {
    let owner;
    try {
      owner = JSON.parse(text);
    } catch {
      owner = null;
    }
    if (!owner || !Number.isSafeInteger(owner.pid) || typeof owner.host !== "string") {
      return Date.now() - modifiedMs > CCM_UNWRITTEN_OWNER_STALE_MS;
    }
    // A native process writes an empty host where it cannot read the name (Windows); such an
    // owner is taken as this host's, as the native side takes it.
    if (owner.host === host || owner.host === "") return !alive(owner.pid);
    return Date.now() - Number(owner.time_ms) > CCM_UNCHECKED_OWNER_STALE_MS;
  };

  const setAside = (ownerPath, seen) => {
    const aside = `${ownerPath}.stale-${tag}-${temporaries++}`;
    try {
      ccmFs.renameSync(ownerPath, aside);
    } catch (error) {
      if (ccmMissing(error)) return;
      throw error;
    }
    // Between the read and the rename another process may have set the stale file aside and
    // created its own: that live file goes back, unless yet another one is there already.
    let moved = null;
    try {
      moved = ccmFs.readFileSync(aside, "utf8");
    } catch {
      // Gone already: nothing to put back.
    }
    if (moved !== null && moved !== seen) {
      try {
        ccmFs.linkSync(aside, ownerPath);
      } catch {
        // Another owner file exists: the process whose file was moved aside loses it.
      }
    }
    ccmFs.rmSync(aside, { force: true });
  };

  const takeOwner = (ownerPath) => {
    const content = JSON.stringify({ pid: process.pid, host, time_ms: Date.now(), holder: "node" });
    const deadline = Date.now() + CCM_LOCK_WAIT_MS;
    for (;;) {
      let fd = null;
      try {
        fd = ccmFs.openSync(ownerPath, "wx");
      } catch (error) {
        if (error.code !== "EEXIST") throw error;
      }
      if (fd !== null) {
        try {
          writeAll(fd, Buffer.from(content, "utf8"), 0);
        } catch (error) {
          ccmFs.closeSync(fd);
          ccmFs.rmSync(ownerPath, { force: true });
          throw error;
        }
        ccmFs.closeSync(fd);
        return content;
      }
      let seen;
      let modifiedMs;
      try {
        seen = ccmFs.readFileSync(ownerPath, "utf8");
        modifiedMs = ccmFs.statSync(ownerPath).mtimeMs;
      } catch (error) {
        if (ccmMissing(error)) continue;
        throw error;
      }
      if (stale(seen, modifiedMs)) {
        setAside(ownerPath, seen);
        continue;
      }
      if (Date.now() >= deadline) {
        let holder = "another process";
        try {
          const owner = JSON.parse(seen);
          holder = `process ${owner.pid} on ${owner.host}`;
        } catch {
          // The owner is not written yet; "another process" says all there is.
        }
        throw ccmStoreError(
          "storage",
          `the session is locked by ${holder} (for more than ${CCM_LOCK_WAIT_MS / 1000} seconds); if no such process uses these sessions, remove ${ownerPath}`,
        );
      }
      ccmSleep(CCM_LOCK_POLL_MS);
    }
  };

  return {
    tag,

    open(path, access) {
      const file = full(path);
      try {
        return ccmFs.openSync(file, access === "read" ? "r" : "r+");
      } catch (error) {
        if (!ccmMissing(error) || access !== "create") {
          if (ccmMissing(error)) return null;
          throw error;
        }
      }
      const fd = ccmFs.openSync(file, ccmFs.constants.O_RDWR | ccmFs.constants.O_CREAT);
      try {
        // A new file's name must survive a crash as surely as what is written into it.
        syncDirectory(ccmPath.dirname(file));
      } catch (error) {
        ccmFs.closeSync(fd);
        throw error;
      }
      return fd;
    },

    size(fd) {
      return ccmFs.fstatSync(fd).size;
    },

    readAt(fd, offset, length) {
      const buffer = Buffer.allocUnsafe(length);
      let done = 0;
      while (done < length) {
        const read = ccmFs.readSync(fd, buffer, done, length - done, offset + done);
        if (read === 0) break;
        done += read;
      }
      return buffer.subarray(0, done);
    },

    writeAt(fd, offset, bytes) {
      writeAll(fd, bytes, offset);
    },

    truncate(fd, length) {
      ccmFs.ftruncateSync(fd, length);
    },

    sync(fd) {
      ccmFs.fdatasyncSync(fd);
    },

    close(fd) {
      ccmFs.closeSync(fd);
    },

    readFile(path) {
      try {
        return ccmFs.readFileSync(full(path));
      } catch (error) {
        if (ccmMissing(error)) return null;
        throw error;
      }
    },

    replace(path, bytes) {
      const target = full(path);
      const temporary = `${target}.tmp-${tag}-${temporaries++}`;
      try {
        const fd = ccmFs.openSync(temporary, "w");
        try {
          writeAll(fd, bytes, null);
          ccmFs.fsyncSync(fd);
        } finally {
          ccmFs.closeSync(fd);
        }
        ccmFs.renameSync(temporary, target);
      } catch (error) {
        ccmFs.rmSync(temporary, { force: true });
        throw error;
      }
      syncDirectory(ccmPath.dirname(target));
    },

    createDir(path) {
      const dir = full(path);
      try {
        if (ccmFs.statSync(dir).isDirectory()) return;
      } catch (error) {
        if (!ccmMissing(error)) throw error;
      }
      ccmFs.mkdirSync(dir, { recursive: true });
      syncDirectory(ccmPath.dirname(dir));
    },

    listDir(path) {
      try {
        return ccmFs.readdirSync(full(path));
      } catch (error) {
        if (ccmMissing(error)) return [];
        throw error;
      }
    },

    rename(from, to) {
      const target = full(to);
      ccmFs.renameSync(full(from), target);
      syncDirectory(ccmPath.dirname(target));
    },

    removeTree(path) {
      ccmFs.rmSync(full(path), { recursive: true, force: true });
    },

    // Shared locks are taken exclusively: an owner file has one owner.
    lock(path, _exclusive, create) {
      const file = full(path);
      if (create) {
        ccmFs.closeSync(ccmFs.openSync(file, "a"));
      } else if (!ccmFs.existsSync(file)) {
        return null;
      }
      const ownerPath = `${file}.owner`;
      const content = takeOwner(ownerPath);
      const handle = nextLock++;
      locks.set(handle, { ownerPath, content });
      return handle;
    },

    unlock(handle) {
      const held = locks.get(handle);
      if (held === undefined) return;
      locks.delete(handle);
      // Only this lock's own file is removed: one that another process took over as stale is
      // that process's now.
      let current = null;
      try {
        current = ccmFs.readFileSync(held.ownerPath, "utf8");
      } catch {
        return;
      }
      if (current === held.content) ccmFs.rmSync(held.ownerPath, { force: true });
    },

    describe(path) {
      return full(path);
    },
  };
}

// ----- migration of the whole-document layout of earlier versions -----

function ccmWarnMigration(message) {
  process.emitWarning(message, { code: "CCM_FILE_MIGRATION" });
}

/** The ids of sessions in the old layout: folders that hold a `session.json`. */
function ccmOldSessionIds(directory) {
  const ids = [];
  for (const entry of ccmFs.readdirSync(directory, { withFileTypes: true })) {
    if (!entry.isDirectory() || !/^[A-Za-z0-9_-]{1,100}$/.test(entry.name)) continue;
    if (ccmFs.existsSync(ccmPath.join(directory, entry.name, "session.json"))) ids.push(entry.name);
  }
  return ids.sort();
}

/** Imports one old-layout session under its id, then renames its folder out of the way. */
async function ccmMigrate(store, directory, id) {
  const folder = ccmPath.join(directory, id);
  const file = ccmPath.join(folder, "session.json");
  let record;
  try {
    record = JSON.parse(ccmFs.readFileSync(file, "utf8"));
  } catch (error) {
    if (ccmMissing(error)) return;
    ccmWarnMigration(`the session "${id}" of the earlier file layout was not imported: ${file} cannot be read (${error.message}); it stays where it is`);
    return;
  }
  if (!record || record.format !== CCM_OLD_FILE_FORMAT || !record.info || !record.document) {
    ccmWarnMigration(`the session "${id}" of the earlier file layout was not imported: ${file} is not a ${CCM_OLD_FILE_FORMAT} record; it stays where it is`);
    return;
  }
  if (record.version > CCM_OLD_FILE_VERSION) {
    ccmWarnMigration(`the session "${id}" was written by a newer version of cognitive-context (file format ${record.version}) and was not imported; it stays where it is`);
    return;
  }
  const info = record.info;
  const name = typeof info.name === "string" ? info.name : "";
  const created = Number.isFinite(info.created_ms) ? info.created_ms : Date.now();
  const updated = Number.isFinite(info.updated_ms) ? info.updated_ms : created;
  try {
    await store.importSessionAs(id, record.document, name, created, updated);
  } catch (error) {
    // A conflict means the id is stored already: an earlier open (or another process opening
    // the directory now) imported it and stopped before renaming the folder.
    if (!error || error.code !== "conflict") {
      ccmWarnMigration(`the session "${id}" of the earlier file layout was not imported (${error && error.message}); it stays where it is`);
      return;
    }
  }
  try {
    ccmFs.renameSync(folder, folder + CCM_MIGRATED_SUFFIX);
  } catch (error) {
    // Another process opening the directory renamed it first.
    if (!ccmMissing(error) && error.code !== "EEXIST" && error.code !== "ENOTEMPTY") throw error;
  }
}

function ccmIoError(action, error) {
  if (error && (error.code === "ENOSPC" || error.code === "EDQUOT")) return ccmStoreError("quota", `${action}: the disk is full`);
  return ccmStoreError("storage", `${action}: ${error && error.message ? error.message : String(error)}`);
}

class FileSessionStore {
  constructor() {
    throw ccmStoreError("argument", "FileSessionStore is opened with `await FileSessionStore.open({ directory })`, which returns a SessionStore");
  }

  /**
   * Opens (and creates when missing) the store in `directory` (default `.ccm-sessions` in the
   * working directory): a `SessionStore` whose backend is `"files"`, with a `directory`
   * property (the absolute path). Sessions of the earlier whole-document layout are imported
   * first.
   */
  static async open(options = {}) {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw ccmStoreError("argument", `FileSessionStore.open takes an object such as { directory: "./sessions" }, got ${ccmDescribe(options)}`);
    }
    for (const key of Object.keys(options)) {
      if (key !== "directory") throw ccmStoreError("argument", `FileSessionStore.open: unknown key \`${key}\` in options; the keys are directory`);
    }
    if (options.directory !== undefined && typeof options.directory !== "string") {
      throw ccmStoreError("argument", `FileSessionStore.open: options.directory must be a string, got ${ccmDescribe(options.directory)}`);
    }
    const directory = ccmPath.resolve(options.directory ?? ".ccm-sessions");
    let old;
    try {
      ccmFs.mkdirSync(directory, { recursive: true });
      old = ccmOldSessionIds(directory);
    } catch (error) {
      throw ccmIoError(`cannot open the session directory ${directory}`, error);
    }
    const store = await SessionStore.openFiles(directory, ccmFilePrimitives(directory));
    Object.defineProperty(store, "directory", { value: directory, enumerable: true });
    for (const id of old) await ccmMigrate(store, directory, id);
    return store;
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
