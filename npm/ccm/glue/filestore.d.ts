
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
