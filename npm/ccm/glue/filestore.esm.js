
// ----- FileSessionStore in browsers (npm/ccm/glue/filestore.esm.js) -----
// The file store is Node's (node/, from glue/filestore.cjs.js); browsers keep sessions with
// SessionStore. The class exists here too, so code shared between server and browser imports
// the same names, and it says why it cannot open.
export class FileSessionStore {
  static async open() {
    const error = new Error("FileSessionStore keeps sessions in files and needs Node; in a browser, use SessionStore (IndexedDB or localStorage)");
    error.code = "unavailable";
    throw error;
  }
}
