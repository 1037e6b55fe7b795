
// ----- PostgresSessionStore (npm/ccm/glue/postgres.d.ts) -----

/**
 * The part of a node-postgres 8 `Pool` (`new pg.Pool(...)` of the `pg` package) that the
 * store uses; declared here so that the package's types need no `@types/pg`.
 */
export interface PostgresPool {
    connect(): Promise<unknown>;
    end(): Promise<void>;
}
/** Options of `PostgresSessionStore.open`: exactly one of `pool` and `connectionString`. */
export interface PostgresStoreOptions {
    /** A `pg.Pool` the caller owns; `close()` leaves it open. */
    pool?: PostgresPool;
    /**
     * A connection URL (`postgres://user:password@host:5432/db`): the store opens its own pool
     * (which needs the `pg` package installed) and `close()` ends it. Messages name the host
     * and port, never the password.
     */
    connectionString?: string;
    /**
     * The database schema of the tables (`ccm` by default): letters, digits and `_`, not
     * starting with a digit, at most 63 characters. Created when missing.
     */
    schema?: string;
    /** How many connections the store's own pool keeps at most (16 by default); only with `connectionString`. */
    max?: number;
}
/**
 * Sessions in PostgreSQL, for Node servers: a `SessionStore` over the tables of the native
 * `ccm-store` backend (the same schema, created or migrated when the store opens), so Rust and
 * Node servers can share one database. Each save is one transaction that checks the stored
 * revision (a stale copy is refused with `code: "conflict"`); opening a session reads its
 * working set in one snapshot. A server that cannot be reached gives `code: "unavailable"`, a
 * connection lost during an operation `code: "storage"`, a full disk `code: "quota"`.
 * Needs the `pg` package (node-postgres 8). In browsers, `open` throws `code: "unavailable"`.
 */
export declare class PostgresSessionStore {
    private constructor();
    static open(options: PostgresStoreOptions): Promise<SessionStore & { close(): Promise<void> }>;
}
/**
 * The `RecordTable` under `PostgresSessionStore`, for wrapping or testing: `migrate()` creates
 * or migrates the tables and must run before the other methods.
 */
export declare class PostgresRecordTable implements RecordTable {
    constructor(pool: PostgresPool, schema?: string);
    readonly kind: string;
    /** The database schema the tables live in. */
    readonly schema: string;
    /** `host:port` of the server, as messages name it. */
    readonly server: string;
    migrate(): Promise<void>;
    /** The schema version the database is at. */
    schemaVersion(): Promise<number>;
    /** Refuses every later operation (with `code: "unavailable"`); the pool is left open. */
    close(): void;
    rows(): Promise<Array<[string, string]>>;
    row(id: string): Promise<string | null>;
    write(id: string, expectedRow: string | null, newRow: string, records: RecordWrites): Promise<boolean>;
    setRow(id: string, expectedRow: string, newRow: string): Promise<boolean>;
    workingSet(id: string, expectedRow: string, request: WorkingSetRequest): Promise<WorkingSet | null>;
    log(id: string, log: string): Promise<Array<[number, string]>>;
    messages(id: string, seqs: number[]): Promise<Array<[number, string, string]>>;
    messagesBetween(id: string, from: number, to: number): Promise<Array<[number, string, string]>>;
    telemetry(id: string, turn: number): Promise<string | null>;
    all(id: string): Promise<AllRecords>;
    delete(id: string): Promise<void>;
}
