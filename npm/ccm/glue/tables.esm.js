
// ---- Appended by npm/build: where this package's rank tables are. ----
// The tables sit beside this module. The URLs are written out per encoding (no template
// string) so that bundlers recognise `new URL("./…", import.meta.url)` and ship the table
// files as assets.
const tableUrls = {
  o200k_base: () => new URL("./o200k_base.ccmt", import.meta.url).href,
  cl100k_base: () => new URL("./cl100k_base.ccmt", import.meta.url).href,
};

/**
 * Loads `encoding`'s rank table once (a later call resolves at once), so that `countTokens`
 * and sessions in that encoding can count. `options.url` overrides where the table is fetched
 * from; `options.onProgress(done, total, phase)` reports bytes (`"download"`) then tokens
 * (`"parse"`).
 */
export function loadEncoding(encoding, options) {
  try {
    options = __ccmCheckLoadArguments(encoding, options);
  } catch (error) {
    return Promise.reject(error);
  }
  const url = options.url ?? tableUrls[encoding]?.();
  if (url === undefined) {
    return Promise.reject(
      Object.assign(new Error(`unknown encoding '${encoding}'; supported: o200k_base, cl100k_base`), {
        code: "argument",
      }),
    );
  }
  return loadEncodingFrom(encoding, url, options.onProgress);
}
