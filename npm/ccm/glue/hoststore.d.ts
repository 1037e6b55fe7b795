
// ----- Record stores whose I/O lives in JavaScript (npm/ccm/glue/hoststore.d.ts) -----

/**
 * The records one save writes, as the texts the store keeps. Every text is a record's JSON
 * exactly as CCM wrote it: store it as text (not as a parsed or JSON-typed value), so that it
 * reads back byte for byte and a damaged one can be told from a good one.
 */
export interface RecordWrites {
    /** `[position, text]` of each effort record that changed. */
    efforts: Array<[number, string]>;
    /** `[seq, log, text]` of each new message; `log` is `"ambient"` or `"effort:<id>"`. */
    messages: Array<[number, string, string]>;
    /** `[turn, text]` of each new metrics point. */
    metrics: Array<[number, string]>;
    /** `[turn, text]` of each turn's request telemetry. */
    telemetry: Array<[number, string]>;
    /** `[id, text]` of each attachment that is new or changed. */
    attachments: Array<[string, string]>;
}

/** What opening a session reads besides its row: its working set, never its whole history. */
export interface WorkingSetRequest {
    /** The efforts whose whole logs to read (the open ones). */
    effortLogs: string[];
    /** How many of the newest messages of the `"ambient"` log to read. */
    ambientTail: number;
    /** How many of the newest metrics points to read. */
    historyTail: number;
}

/** The records of a session's working set, read in one consistent snapshot. */
export interface WorkingSet {
    /** `[position, text]` of every effort record. */
    efforts: Array<[number, string]>;
    /** The logs asked for, by effort id: `[seq, text]` in sequence order. */
    effortLogs: Record<string, Array<[number, string]>>;
    /** The newest `ambientTail` ambient messages, `[seq, text]` in sequence order. */
    ambientTail: Array<[number, string]>;
    /** The newest `historyTail` metrics points, `[turn, text]` in turn order. */
    historyTail: Array<[number, string]>;
    /** `[id, text]` of every attachment. */
    attachments: Array<[string, string]>;
    /** `[log, count]`: how many messages each log holds, counted without reading them. */
    logSizes: Array<[string, number]>;
}

/** Every record of a session, for an export, read in one consistent snapshot. */
export interface AllRecords {
    /** The session's row text, or `null` when the session does not exist. */
    row: string | null;
    efforts: Array<[number, string]>;
    /** `[seq, log, text]` in sequence order. */
    messages: Array<[number, string, string]>;
    metrics: Array<[number, string]>;
    attachments: Array<[string, string]>;
}

/**
 * The storage interface a JavaScript backend implements for `SessionStore.openHost`: a table
 * of records per session, nothing more. CCM's side (in WebAssembly) keeps every rule: what a
 * save writes, what opening reads, the revision check's meaning, damaged records reported.
 * The backend's one duty beyond reading and writing is atomicity: `write` and `setRow` are
 * compare-and-set operations that apply entirely or not at all.
 */
export interface RecordTable {
    /** The backend's name, as `SessionStore.backend` reports it (e.g. `"postgres"`). */
    readonly kind: string;
    /** Every session's `[id, row text]`. */
    rows(): Promise<Array<[string, string]>>;
    /** A session's row text, or `null`. */
    row(id: string): Promise<string | null>;
    /**
     * Atomically: if the stored row text equals `expectedRow` (`null`: no session has this id),
     * writes `records` and sets the row to `newRow`, and resolves `true`; otherwise writes
     * nothing and resolves `false` (another writer came first). A failure (a lost connection)
     * rejects, and then nothing may have been written.
     */
    write(id: string, expectedRow: string | null, newRow: string, records: RecordWrites): Promise<boolean>;
    /** Atomically sets the row to `newRow` if it equals `expectedRow`; resolves whether it did. */
    setRow(id: string, expectedRow: string, newRow: string): Promise<boolean>;
    /**
     * The working set, in one snapshot, if the row still equals `expectedRow`; `null` if it
     * changed meanwhile (CCM then reads the row again).
     */
    workingSet(id: string, expectedRow: string, request: WorkingSetRequest): Promise<WorkingSet | null>;
    /** `[seq, text]` of every message of log `log`, in sequence order. */
    log(id: string, log: string): Promise<Array<[number, string]>>;
    /** `[seq, log, text]` of the messages with these sequence numbers that exist. */
    messages(id: string, seqs: number[]): Promise<Array<[number, string, string]>>;
    /** `[seq, log, text]` of the messages with `from <= seq < to`, in sequence order. */
    messagesBetween(id: string, from: number, to: number): Promise<Array<[number, string, string]>>;
    /** The telemetry text of one turn, or `null`. */
    telemetry(id: string, turn: number): Promise<string | null>;
    /** Every record of a session, in one snapshot. */
    all(id: string): Promise<AllRecords>;
    /** Deletes a session and every record of it; an unknown id is not an error. */
    delete(id: string): Promise<void>;
}
