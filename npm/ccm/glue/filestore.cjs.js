
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
// `locks/<name>.lock.owner`, holding `{"pid","host","time_ms","holder":"node","start","thread",
// "nonce"}` and removed when the lock is let go. Native processes (the CLI) take the operating system's
// lock on `locks/<name>.lock` and then the same owner file, so Node processes and native
// processes exclude each other through it. What makes it sound when processes die:
//
// - The owner file appears whole: it is written under a temporary name and linked into place
//   (`link` fails when the name exists), so no process ever reads a half-written owner. Where
//   the file system has no hard links it is created exclusively (`wx`) and written instead.
// - Every owner file is unique (`nonce`), so a file judged stale cannot be confused with a new
//   one that happens to hold the same text.
// - An owner is stale when its process is gone from this host: no `/proc/<pid>` entry, a
//   zombie (killed but not yet reaped by its parent, which may be the very process waiting for
//   the lock), or a process of that id started at another time than the owner's (`start`, the
//   id reused); where there is no /proc, `process.kill(pid, 0)` failing with ESRCH. An owner of
//   this very process that no store of it holds was left by a call the module never finished
//   (a trap) and is stale too. A native owner file that cannot be read is stale after 10
//   seconds (its process died between creating and writing it), and one written on another
//   host after 10 minutes.
// - Taking a stale lock over is serialised among Node processes by a second lock, the break
//   file (`<owner>.break`, made the same way): under it the owner file is read again and, if it
//   is still the stale one, moved aside and removed. Without it, two processes could both judge
//   one file stale and the second remove the lock the first had just taken. A break file whose
//   process is gone, or older than 10 seconds (the takeover takes microseconds), is removed
//   first.
// - A lock is held only inside one synchronous call of the module (the store's file calls
//   never yield), so any lock still held when the event loop runs again belongs to a call that
//   never returned (the module trapped): it is let go then, in a microtask, instead of blocking
//   other processes until this one exits.
//
// A held owner file is waited for (short synchronous sleeps, up to 30 seconds, then the lock
// fails with `code: "storage"` naming the process). Readers lock too (exclusively here), so a
// read never sees a save half-done.
//
// Leftovers. A process killed in the middle of an atomic replace leaves its temporary file
// (`<file>.tmp-<tag>-<n>`), and one killed during a takeover a set-aside owner file
// (`<owner>.stale-<tag>-<n>`) or a break file. `FileSessionStore.open` removes those whose
// process is gone (a Node tag names the process and its host; a native one, `<pid>-<n>`, only
// the process, and is judged on this host), those older than 10 minutes in any case, and the
// owner files of processes that are gone.
//
// Damage. `list()` reads, besides each session's commit, a bounded part of its other files:
// their sizes against the lengths the commit records, the byte where the committed records
// end, and the first bytes of each committed log (the Rust store's `files_problem`). A session
// whose files do not match is listed with `damaged` set to what is wrong and the way out
// (export it, import the export as a new session); so is a session folder whose commit was
// lost, which only this file can see (`ccmSessionProblem`). Damage inside records that the commit's lengths cannot show (a
// garbled byte in the middle of records.dat) is found by `load` (`loadProblems`) and
// `exportSession` (`repairs`), which read the records themselves.
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
const ccmThreads = require("worker_threads");

const CCM_OLD_FILE_FORMAT = "ccm-file-store";
const CCM_OLD_FILE_VERSION = 1;
const CCM_MIGRATED_SUFFIX = ".migrated-v1";
const CCM_LOCK_WAIT_MS = 30_000;
const CCM_UNWRITTEN_OWNER_STALE_MS = 10_000;
const CCM_UNCHECKED_OWNER_STALE_MS = 10 * 60_000;
// A takeover holds the break file for microseconds; one this old was left by a process that
// stopped in the middle of it.
const CCM_BREAK_STALE_MS = 10_000;
const CCM_LOCK_POLL_MS = 3;
// The size of one row of an index file, and the least bytes its last row takes (one slot).
const CCM_ROW_BYTES = 64;
const CCM_SLOT_BYTES = 32;

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

// ----- processes: who holds a lock, and whether it still runs -----

const ccmHost = ccmOs.hostname();
// A short id of this host, in the names of temporary files, so that a process cleaning up
// judges only its own host's files by process id.
const ccmHostId = ccmCrypto.createHash("sha256").update(ccmHost).digest("hex").slice(0, 8);
const ccmProcAvailable = process.platform === "linux" && ccmFs.existsSync("/proc/self/stat");

/**
 * The state and start time (in clock ticks since boot) of process `pid` from /proc: `null` when
 * there is no such process, `undefined` where /proc cannot tell.
 */
function ccmProcStat(pid) {
  if (!ccmProcAvailable) return undefined;
  let text;
  try {
    text = ccmFs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (error) {
    return ccmMissing(error) ? null : undefined;
  }
  // The command name (in parentheses) may hold spaces; the fields after it do not.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0], start: fields[19] };
}

const ccmOwnStart = ccmProcStat(process.pid)?.start ?? null;
const ccmThreadId = ccmThreads.threadId;

/**
 * Whether process `pid` of this host is gone: no such process, a zombie (killed, not yet
 * reaped: its parent may be the very process asking, blocked in a lock wait), or another
 * process under a reused id (`start` differs).
 */
function ccmProcessGone(pid, start) {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true;
  const stat = ccmProcStat(pid);
  if (stat === null) return true;
  if (stat !== undefined) {
    if (stat.state === "Z" || stat.state === "X" || stat.state === "x") return true;
    return typeof start === "string" && start !== stat.start;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return error.code === "ESRCH";
  }
}

// The owner files this thread holds now, by content: an owner file of this thread that is not
// here was left by a call that never finished.
const ccmHeldOwners = new Set();

function ccmOwnerText(holder) {
  return JSON.stringify({
    pid: process.pid,
    host: ccmHost,
    time_ms: Date.now(),
    holder,
    start: ccmOwnStart,
    thread: ccmThreadId,
    nonce: ccmCrypto.randomBytes(8).toString("hex"),
  });
}

/** Whether the owner (or break) file `text`, last modified at `modifiedMs`, is stale. */
function ccmOwnerStale(text, modifiedMs) {
  let owner;
  try {
    owner = JSON.parse(text);
  } catch {
    owner = null;
  }
  if (!owner || typeof owner !== "object" || !Number.isSafeInteger(owner.pid) || typeof owner.host !== "string") {
    return Date.now() - modifiedMs > CCM_UNWRITTEN_OWNER_STALE_MS;
  }
  // A native process writes an empty host where it cannot read the name (Windows); such an
  // owner is taken as this host's, as the native side takes it.
  if (owner.host === ccmHost || owner.host === "") {
    if (owner.pid === process.pid && (owner.start ?? null) === ccmOwnStart) {
      // Another thread of this process holds it while this process runs; this thread's own is
      // stale unless this thread holds it now.
      return owner.thread === ccmThreadId && !ccmHeldOwners.has(text);
    }
    return ccmProcessGone(owner.pid, owner.start);
  }
  return Date.now() - Number(owner.time_ms) > CCM_UNCHECKED_OWNER_STALE_MS;
}

// Hard links are used to make an owner file appear whole; a file system without them gets
// exclusive creation instead.
let ccmLinksWork = true;

/**
 * The file primitives of `directory` (an absolute path), over Node's synchronous `fs`: the
 * `FilePrimitives` the Rust file store calls (glue/fileprimitives.d.ts), and `clearLeftovers`.
 */
function ccmFilePrimitives(directory) {
  const tag = `${process.pid}-${ccmHostId}-${ccmCrypto.randomBytes(4).toString("hex")}`;
  let temporaries = 0;
  let nextLock = 1;
  const locks = new Map();

  const full = (path) => (path === "" ? directory : ccmPath.join(directory, ...path.split("/")));
  const temporaryOf = (path, kind) => `${path}.${kind}-${tag}-${temporaries++}`;

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

  const readText = (path) => {
    try {
      return ccmFs.readFileSync(path, "utf8");
    } catch (error) {
      if (ccmMissing(error)) return null;
      throw error;
    }
  };

  // ----- owner files (see the comment at the top) -----

  // Writes `content` under a temporary name beside `target`, for `placeWhole`; `null` where the
  // file system has no hard links.
  const stage = (target, content) => {
    if (!ccmLinksWork) return null;
    const staging = temporaryOf(target, "tmp");
    ccmFs.writeFileSync(staging, content, { flag: "wx" });
    return staging;
  };

  // Puts `content` at `target` whole, unless a file is there: true when it did. `staging` is
  // what `stage` wrote (the caller removes it).
  const placeWhole = (target, content, staging) => {
    if (staging !== null && ccmLinksWork) {
      try {
        ccmFs.linkSync(staging, target);
        return true;
      } catch (error) {
        if (error.code === "EEXIST") return false;
        if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"].includes(error.code)) throw error;
        ccmLinksWork = false;
      }
    }
    let fd;
    try {
      fd = ccmFs.openSync(target, "wx");
    } catch (error) {
      if (error.code === "EEXIST") return false;
      throw error;
    }
    try {
      writeAll(fd, Buffer.from(content, "utf8"), 0);
    } catch (error) {
      ccmFs.closeSync(fd);
      ccmFs.rmSync(target, { force: true });
      throw error;
    }
    ccmFs.closeSync(fd);
    return true;
  };

  // `placeWhole` once, its temporary file removed.
  const placeOnce = (target, content) => {
    const staging = stage(target, content);
    try {
      return placeWhole(target, content, staging);
    } finally {
      if (staging !== null) ccmFs.rmSync(staging, { force: true });
    }
  };

  // Removes `path` if it still holds `content` (a file of this thread's: nobody else replaces it).
  const removeIfHolding = (path, content) => {
    if (readText(path) === content) ccmFs.rmSync(path, { force: true });
  };

  // Moves the stale file `path` (which held `seen`) aside and removes it. Only a native process
  // taking the same file over at the same moment can have replaced it meanwhile; its file is
  // linked back.
  const setAside = (path, seen) => {
    const aside = temporaryOf(path, "stale");
    try {
      ccmFs.renameSync(path, aside);
    } catch (error) {
      if (ccmMissing(error)) return;
      throw error;
    }
    let moved = null;
    try {
      moved = ccmFs.readFileSync(aside, "utf8");
    } catch {
      // Gone already: nothing to put back.
    }
    if (moved !== null && moved !== seen) {
      try {
        ccmFs.linkSync(aside, path);
      } catch {
        // Another owner file exists: the process whose file was moved aside loses it.
      }
    }
    ccmFs.rmSync(aside, { force: true });
  };

  // Removes the break file `breakPath` if the process that made it is gone.
  const clearStaleBreak = (breakPath) => {
    let seen;
    let modifiedMs;
    try {
      seen = ccmFs.readFileSync(breakPath, "utf8");
      modifiedMs = ccmFs.statSync(breakPath).mtimeMs;
    } catch (error) {
      if (ccmMissing(error)) return;
      throw error;
    }
    if (ccmOwnerStale(seen, modifiedMs) || Date.now() - modifiedMs > CCM_BREAK_STALE_MS) setAside(breakPath, seen);
  };

  // Takes the stale owner file `ownerPath` (which held `seen`) away, under the break file, so
  // that of the processes that judged it stale only one removes it, and only it.
  const breakStale = (ownerPath, seen) => {
    const breakPath = `${ownerPath}.break`;
    const mine = ccmOwnerText("node");
    if (!placeOnce(breakPath, mine)) {
      clearStaleBreak(breakPath);
      return;
    }
    ccmHeldOwners.add(mine);
    try {
      if (readText(ownerPath) === seen) setAside(ownerPath, seen);
    } finally {
      ccmHeldOwners.delete(mine);
      removeIfHolding(breakPath, mine);
    }
  };

  const takeOwner = (ownerPath) => {
    const content = ccmOwnerText("node");
    const staging = stage(ownerPath, content);
    try {
      return waitForOwner(ownerPath, content, staging);
    } finally {
      if (staging !== null) ccmFs.rmSync(staging, { force: true });
    }
  };

  const waitForOwner = (ownerPath, content, staging) => {
    const deadline = Date.now() + CCM_LOCK_WAIT_MS;
    for (;;) {
      if (placeWhole(ownerPath, content, staging)) {
        ccmHeldOwners.add(content);
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
      if (ccmOwnerStale(seen, modifiedMs)) {
        breakStale(ownerPath, seen);
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

  const release = (handle) => {
    const held = locks.get(handle);
    if (held === undefined) return;
    locks.delete(handle);
    // Only this lock's own file is removed: one that another process took over as stale is
    // that process's now.
    ccmHeldOwners.delete(held.content);
    removeIfHolding(held.ownerPath, held.content);
  };

  // ----- leftovers of processes that were killed (see the comment at the top) -----

  // Whether the temporary or set-aside file `name` (at `path`) belongs to no running process.
  const abandoned = (name, path) => {
    const match = /\.(?:tmp|stale)-(\d+)-(.+)$/.exec(name);
    if (!match) return false;
    let modifiedMs;
    try {
      modifiedMs = ccmFs.statSync(path).mtimeMs;
    } catch {
      return false;
    }
    if (Date.now() - modifiedMs > CCM_UNCHECKED_OWNER_STALE_MS) return true;
    const pid = Number(match[1]);
    const nodeTag = /^([0-9a-f]{8})-[0-9a-f]{8}-\d+$/.exec(match[2]);
    // Another host's process cannot be checked from here; its files go by age alone.
    if (nodeTag && nodeTag[1] !== ccmHostId) return false;
    if (pid === process.pid) return false;
    return ccmProcessGone(pid, undefined);
  };

  const clearIn = (dir) => {
    let names;
    try {
      names = ccmFs.readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const path = ccmPath.join(dir, name);
      if (abandoned(name, path)) ccmFs.rmSync(path, { force: true });
    }
    return names;
  };

  const clearLeftovers = () => {
    clearIn(directory);
    for (const name of clearIn(full("locks")) ?? []) {
      const path = full(`locks/${name}`);
      try {
        if (name.endsWith(".owner.break")) {
          clearStaleBreak(path);
        } else if (name.endsWith(".owner")) {
          const seen = readText(path);
          if (seen !== null && ccmOwnerStale(seen, ccmFs.statSync(path).mtimeMs)) breakStale(path, seen);
        }
      } catch (error) {
        // Let go or taken over by its process meanwhile.
        if (!ccmMissing(error)) throw error;
      }
    }
    // A folder without a commit stays: it is a creation that never committed, or a session
    // whose commit was lost, and the files cannot tell which.
    for (const name of ccmFs.readdirSync(full("sessions"))) clearIn(full(`sessions/${name}`));
  };

  const primitives = {
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
      const temporary = temporaryOf(target, "tmp");
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
      // The store's file calls never yield, so this runs after the call that took the lock has
      // returned, or has been stopped by a trap: in the second case the lock is let go here.
      queueMicrotask(() => release(handle));
      return handle;
    },

    unlock(handle) {
      release(handle);
    },

    describe(path) {
      return full(path);
    },

    /** Removes what killed processes left in the directory (see the comment at the top). */
    clearLeftovers,
  };
  return primitives;
}

// ----- damage that the commit alone does not show (see the comment at the top) -----

/** The folder name of session `id` in `sessions/`, as ccm-store names it (files.rs). */
function ccmSessionFolderName(id) {
  let name = "";
  for (const byte of Buffer.from(id, "utf8")) {
    const c = String.fromCharCode(byte);
    name += /[a-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return name;
}

/** The id a folder in `sessions/` was named after, or `null` for a name the store did not make. */
function ccmSessionIdOf(name) {
  if (!/^(?:[a-z0-9_-]|%[0-9A-F]{2})+$/.test(name)) return null;
  const bytes = [];
  for (let i = 0; i < name.length; i++) {
    if (name[i] === "%") {
      bytes.push(parseInt(name.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(name.charCodeAt(i));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

const CCM_GONE = Symbol("the session was deleted");

function ccmWayOut(id) {
  return `. Its files are kept as they are: store.exportSession(${JSON.stringify(id)}) takes out everything readable (its \`repairs\` list says what was lost), and store.importSession(thatExport, name) stores it as a new, healthy session`;
}

/**
 * What is wrong with the files of session folder `name` that its commit can be checked
 * against, reading a bounded part of each; `null` when nothing is, `CCM_GONE` when the session
 * was deleted meanwhile.
 */
function ccmSessionProblem(directory, name) {
  const folder = ccmPath.join(directory, "sessions", name);
  const file = (part) => ccmPath.join(folder, part);
  const size = (part) => {
    try {
      return ccmFs.statSync(file(part)).size;
    } catch (error) {
      if (ccmMissing(error)) return -1;
      throw error;
    }
  };
  try {
    let text;
    try {
      text = ccmFs.readFileSync(file("commit"), "utf8");
    } catch (error) {
      if (!ccmMissing(error)) throw error;
      if (!ccmFs.existsSync(folder)) return CCM_GONE;
      return "its commit file (which says what of its files is committed) is missing; create an empty file named commit in its folder, and the store reads the newest version of every record";
    }
    const end = text.indexOf("\n");
    const head = /^ccm-files-commit 1 revision=(\d+) seq_end=(\d+) data=(\d+)$/.exec(end < 0 ? text : text.slice(0, end));
    let header = null;
    try {
      header = JSON.parse(text.slice(end + 1)).header;
    } catch {
      // The Rust store lists an unreadable commit as damaged by itself.
    }
    if (!head || !header || typeof header !== "object") return null;
    const seqEnd = Number(head[2]);
    const dataLength = Number(head[3]);
    const records = size("records.dat");
    if (dataLength > 0 && records < 0) return "records.dat, which holds its records, is missing";
    if (records >= 0 && records < dataLength) {
      return `records.dat is shorter (${records} bytes) than its commit says (${dataLength} bytes): it was cut`;
    }
    if (dataLength > 0) {
      // Every record is followed by a newline, so the last committed byte is one.
      const fd = ccmFs.openSync(file("records.dat"), "r");
      const last = Buffer.alloc(1);
      try {
        ccmFs.readSync(fd, last, 0, 1, dataLength - 1);
      } finally {
        ccmFs.closeSync(fd);
      }
      if (last[0] !== 0x0a) return "the bytes of records.dat where its last committed record ends were overwritten";
    }
    const indexes = [
      ["messages.idx", seqEnd, "messages"],
      ["metrics.idx", header.history_len, "metrics points"],
      ["efforts.idx", header.effort_count, "effort records"],
    ];
    for (const [part, rows, what] of indexes) {
      if (!Number.isSafeInteger(rows) || rows <= 0) continue;
      const bytes = size(part);
      if (bytes < 0) return `${part}, the index of its ${rows} ${what}, is missing`;
      const least = (rows - 1) * CCM_ROW_BYTES + CCM_SLOT_BYTES;
      if (bytes < least) return `${part} is shorter (${bytes} bytes) than its ${rows} ${what} need (${least} bytes): it was cut`;
    }
    let logs = [];
    try {
      logs = ccmFs.readdirSync(file("logs")).filter((log) => log.endsWith(".seq"));
    } catch (error) {
      if (!ccmMissing(error)) throw error;
    }
    for (const log of logs) {
      const fd = ccmFs.openSync(file(`logs/${log}`), "r");
      const start = Buffer.alloc(10);
      let read;
      try {
        read = ccmFs.readSync(fd, start, 0, start.length, 0);
      } finally {
        ccmFs.closeSync(fd);
      }
      if (read < start.length || start.toString("latin1") !== "ccm-log 1 ") {
        return `the log file logs/${log} does not start with its header: it was cut or overwritten`;
      }
    }
    return null;
  } catch (error) {
    if (ccmMissing(error) && !ccmFs.existsSync(folder)) return CCM_GONE;
    return `its files cannot be read (${error.message})`;
  }
}

/**
 * `list` of the Rust store (which reports the damage a session's files show against its
 * commit), with the sessions whose commit is missing, which the Rust store cannot list.
 */
async function ccmListWithDamage(listed, directory) {
  const sessions = await listed;
  const healthy = [];
  const damaged = [];
  const names = new Set();
  for (const info of sessions) {
    names.add(ccmSessionFolderName(info.id));
    // The Rust store checks each listed session's files against its commit itself and words
    // the damage with its way out; checking them again here would name the way out twice.
    if (info.damaged) damaged.push(info);
    else healthy.push(info);
  }
  let folders = [];
  try {
    folders = ccmFs.readdirSync(ccmPath.join(directory, "sessions"));
  } catch (error) {
    if (!ccmMissing(error)) throw error;
  }
  for (const name of folders) {
    const id = ccmSessionIdOf(name);
    if (id === null || names.has(name)) continue;
    // A folder without a commit is a creation that never committed (cleared by the next open)
    // unless its intent builds on a committed revision: then its commit was lost.
    let intent = null;
    try {
      intent = JSON.parse(ccmFs.readFileSync(ccmPath.join(directory, "sessions", name, "intent"), "utf8"));
    } catch {
      continue;
    }
    if (!intent || !(intent.base > 0)) continue;
    const problem = ccmSessionProblem(directory, name);
    if (problem === null || problem === CCM_GONE) continue;
    damaged.push({
      id,
      name: `Damaged session ${id}`,
      created_ms: 0,
      updated_ms: 0,
      turn_count: 0,
      message_count: 0,
      revision: 0,
      damaged: `session "${id}" is damaged: ${problem}${ccmWayOut(id)}`,
    });
  }
  return [...healthy, ...damaged];
}

/** Whether session `id` has no commit in `directory` any more (it was deleted). */
function ccmSessionDeleted(directory, id) {
  return !ccmFs.existsSync(ccmPath.join(directory, "sessions", ccmSessionFolderName(id), "commit"));
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

/**
 * Gives the store its Node-side parts: `list` reports the damage the files show, and a save
 * refused because the session was deleted says so.
 */
function ccmWrapStore(store, directory) {
  const list = store.list;
  const save = store.save;
  const methods = {
    list() {
      // Called at once, so that what it refuses at the call (a stopped module) it refuses here.
      return ccmListWithDamage(list.call(store), directory);
    },
    save(session) {
      // The id is read first, and the save is called at once: it takes what it writes before it
      // returns (see SessionStore.save), so nothing here comes between.
      let id;
      try {
        id = session.storeId;
      } catch {
        // A freed or foreign value: the save's own check says what is wrong with it.
      }
      return save.call(store, session).then(undefined, (error) => {
        if (error && error.code === "conflict" && typeof id === "string" && ccmSessionDeleted(directory, id)) {
          error.message = `session "${id}" was deleted (by another process or another store object) while this copy was open, so the save was refused and nothing was stored; to keep this copy, store it as a new session with store.importSession(session.toJSON(), name)`;
        }
        throw error;
      });
    },
  };
  for (const [name, value] of Object.entries(methods)) {
    Object.defineProperty(value, "name", { value: name });
    Object.defineProperty(store, name, { value, writable: true, configurable: true });
  }
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
    const primitives = ccmFilePrimitives(directory);
    const store = await SessionStore.openFiles(directory, primitives);
    Object.defineProperty(store, "directory", { value: directory, enumerable: true });
    try {
      primitives.clearLeftovers();
    } catch (error) {
      // What is left stays until the next open; the sessions are unaffected.
      process.emitWarning(`some files that stopped processes left in ${directory} could not be removed (${error.message}); they are tried again at the next open`, { code: "CCM_FILE_LEFTOVERS" });
    }
    ccmWrapStore(store, directory);
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
