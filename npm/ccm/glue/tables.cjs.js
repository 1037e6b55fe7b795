
// ---- Appended by npm/build: Node reads this package's rank tables from disk. ----
{
  const { readFileSync } = require("node:fs");
  // The tables ship once, in web/ beside the browser modules that fetch them; __ccmAsset
  // (assets.cjs.js, prepended) finds them there, or where a server bundler shipped them.
  const tablePath = (encoding) => __ccmAsset(`${encoding}.ccmt`);
  // Counting and sessions load a table the first time they need it, synchronously.
  module.exports.setTableLoader((encoding) => readFileSync(tablePath(encoding)));
  /**
   * Loads `encoding`'s rank table now (Node reads it from the package; `options.url` fetches
   * it instead), so that the first count does not pay for it.
   */
  module.exports.loadEncoding = async (encoding, options) => {
    // Defined in guard.js, which npm/build appends after this file.
    options = __ccmCheckLoadArguments(encoding, options);
    if (options.url !== undefined) {
      return module.exports.loadEncodingFrom(encoding, options.url, options.onProgress);
    }
    if (!["o200k_base", "cl100k_base"].includes(encoding)) {
      throw Object.assign(new Error(`unknown encoding '${encoding}'; supported: o200k_base, cl100k_base`), {
        code: "argument",
      });
    }
    module.exports.installEncoding(encoding, readFileSync(tablePath(encoding)));
  };
}
