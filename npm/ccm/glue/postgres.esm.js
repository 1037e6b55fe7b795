
// ----- PostgresSessionStore in browsers (npm/ccm/glue/postgres.esm.js) -----
// The PostgreSQL store is Node's (node/, from glue/postgres.cjs.js): a browser has no database
// connection. The classes exist here too, so code shared between server and browser imports
// the same names, and `open` says why it cannot open.
export class PostgresSessionStore {
  static async open() {
    const error = new Error("PostgresSessionStore keeps sessions in a PostgreSQL database and needs Node (with the `pg` package); in a browser, use SessionStore (IndexedDB or localStorage)");
    error.code = "unavailable";
    throw error;
  }
}

export class PostgresRecordTable {
  constructor() {
    const error = new Error("PostgresRecordTable reads and writes a PostgreSQL database and needs Node (with the `pg` package)");
    error.code = "unavailable";
    throw error;
  }
}
