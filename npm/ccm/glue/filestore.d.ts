
// ----- FileSessionStore (npm/ccm/glue/filestore.d.ts) -----

/** Options of `FileSessionStore.open`. */
export interface FileStoreOptions {
    /** The directory that holds the sessions, one folder each (created when missing). Default `.ccm-sessions`. */
    directory?: string;
}
/**
 * Sessions in files, for Node servers: the API of `SessionStore` (except `importCcmFiles`),
 * one folder per session, every write atomic (a temporary file renamed over the old one), a
 * save refused with `code: "conflict"` when someone else saved the session since this copy was
 * opened, and a damaged file reported with `code: "storage"` (and as `damaged` by `list`).
 * In browsers, `open` throws `code: "unavailable"`.
 */
export declare class FileSessionStore {
    private constructor();
    static open(options?: FileStoreOptions): Promise<FileSessionStore>;
    readonly backend: "file";
    /** The absolute path of the store's directory. */
    readonly directory: string;
    list(): Promise<SessionInfo[]>;
    create(name: string, options?: SessionOptions | null, counter?: TokenCounter | null): Promise<Session>;
    load(id: string, counter?: TokenCounter | null): Promise<Session>;
    save(session: Session): Promise<SaveReport>;
    turnTelemetry(id: string, turn: number): Promise<TurnTelemetry | null>;
    rename(id: string, name: string): Promise<void>;
    delete(id: string): Promise<void>;
    exportSession(id: string): Promise<string>;
    importSession(document: string | SessionDocument, name: string, counter?: TokenCounter | null): Promise<SessionInfo>;
}
