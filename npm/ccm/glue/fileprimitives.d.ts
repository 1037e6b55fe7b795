
// ----- File primitives of the file store (npm/ccm/glue/fileprimitives.d.ts) -----

/**
 * The file operations the file store (`SessionStore.openFiles`) is written against: the same
 * Rust code as the CLI's `--store file:DIR`, run in WebAssembly over these functions.
 * `FileSessionStore.open` builds them from Node's synchronous `fs`; another host can provide
 * its own. Every function is synchronous.
 *
 * Paths are relative to the store's directory and separated by `/`; `""` is the directory.
 * A function reports a failure by throwing an error whose `code` says what it was:
 * `"ENOENT"` (missing), `"ENOSPC"` or `"EDQUOT"` (the disk is full: the store's error is
 * `code: "quota"`); anything else becomes `code: "storage"` with the thrown message.
 */
export interface FilePrimitives {
    /** A name for this process that no other process using the directory at the same time has. */
    readonly tag: string;
    /** Opens a file and returns its handle; `null` when it is missing (`"create"` makes it empty instead, durably). */
    open(path: string, access: "read" | "write" | "create"): number | null;
    /** The file's length in bytes. */
    size(handle: number): number;
    /** Up to `length` bytes from `offset`; fewer at the end of the file. */
    readAt(handle: number, offset: number, length: number): Uint8Array;
    /** Writes `bytes` at `offset`, extending the file as needed. */
    writeAt(handle: number, offset: number, bytes: Uint8Array): void;
    /** Cuts the file to `length` bytes. */
    truncate(handle: number, length: number): void;
    /** Returns once what was written to the file is on the storage device (fsync). */
    sync(handle: number): void;
    close(handle: number): void;
    /** The whole content of a small file, or `null` when it is missing. */
    readFile(path: string): Uint8Array | null;
    /**
     * Replaces `path` with `bytes` atomically and durably: a temporary file, synced, renamed
     * over `path`, and the directory synced. A crash at any point leaves the old or the new content.
     */
    replace(path: string, bytes: Uint8Array): void;
    /** Creates a directory and its parents, durably; an existing one is fine. */
    createDir(path: string): void;
    /** The names in a directory; `[]` when it is missing. */
    listDir(path: string): string[];
    /** Renames a file or directory atomically (and durably). */
    rename(from: string, to: string): void;
    /** Removes a directory and everything in it; a missing one is fine. */
    removeTree(path: string): void;
    /**
     * Takes the inter-process lock of the lock file `path` (exclusive for a writer, shared for a
     * reader; taking every lock exclusively is fine), waiting for it, and returns its handle.
     * `create` makes the lock file when missing; without it a missing lock file is `null`.
     * Processes that share a directory must honour one protocol: the owner file that
     * `FileSessionStore` and the CLI use is described in glue/filestore.cjs.js. The store holds
     * a lock only inside one synchronous call, so `FileSessionStore`'s primitives let go, as soon
     * as the event loop runs again, of a lock that a call stopped by a WebAssembly trap left.
     */
    lock(path: string, exclusive: boolean, create: boolean): number | null;
    /** Lets go of a lock `lock` returned. */
    unlock(handle: number): void;
    /** The path as a person finds it, for messages (default: the directory and the path joined). */
    describe?(path: string): string;
}
