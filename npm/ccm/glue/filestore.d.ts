
// ----- FileSessionStore (npm/ccm/glue/filestore.d.ts) -----

/** Options of `FileSessionStore.open`. */
export interface FileStoreOptions {
    /** The directory that holds the sessions (created when missing). Default `.ccm-sessions`. */
    directory?: string;
}
/**
 * Sessions in files, for Node servers: a `SessionStore` (backend `"files"`) whose sessions are
 * the same files as the CLI's `ccm chat --store file:DIR`. A save appends what changed since the
 * last one and commits it atomically; opening reads the working set, never the whole history.
 * A save is refused with `code: "conflict"` when someone else (another process, another object)
 * saved the session since this copy was opened or saved; damaged records are reported, never
 * silently dropped. Processes (Node or the CLI) lock each session while they read or write it.
 *
 * What holds when processes share the directory, crash or are killed:
 * - two saves are never both acknowledged with one revision, and an acknowledged turn is never
 *   lost (the revision is checked under the session's lock; the commit is an atomic rename);
 * - a lock of a process that is gone from this host (exited, killed, a zombie, its id reused)
 *   is taken over at once; another host's is waited for up to 30 seconds, and taken over after
 *   10 minutes; a lock whose call a WebAssembly trap stopped is let go when the event loop runs;
 * - `save` takes the session as it is at the call: a change before its promise settles is
 *   refused whole with `code: "busy"`, never half-stored, and made again it goes into the next
 *   save;
 * - a session deleted while another process saves it stays deleted; that save is refused with
 *   `code: "conflict"` and a message saying it was deleted;
 * - `list()` marks a session `damaged` (what is wrong, and the way out: `exportSession`, then
 *   `importSession`) when its commit cannot be read or its files do not match the lengths the
 *   commit records; it reads a few bytes per file, not the records, so a garbled byte inside a
 *   record is found by `load` (`loadProblems`) and `exportSession` (`repairs`) instead;
 * - temporary and set-aside lock files of processes that are gone are removed by `open`;
 * - after a trap every call says `code: "reload_required"`, and the files stay as they were.
 *
 * Sessions of the earlier whole-document layout (`<id>/session.json`) are imported on `open`
 * under the same id, name and times; their folders are renamed `<id>.migrated-v1` and kept.
 * In browsers, `open` throws `code: "unavailable"`.
 */
export declare class FileSessionStore {
    private constructor();
    static open(options?: FileStoreOptions): Promise<SessionStore & {
        /** The absolute path of the store's directory. */
        readonly directory: string;
    }>;
}
