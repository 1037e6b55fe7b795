// The package's ES entry for Node (written by npm/build from npm/ccm/glue).
//
// The module itself is CommonJS (./@MODULE@.js, one instance for `import` and `require`). This
// entry exists for server bundlers (Next.js's Turbopack, webpack): they ship a file named with
// `new URL("./file", import.meta.url)` and rewrite the URL to where it went, while the
// CommonJS module's `__dirname` paths name nothing once bundled. ./@MODULE@.assets.mjs hands
// those URLs to the module (see assets.cjs.js); it is imported first, so it runs first.
import "./@MODULE@.assets.mjs";
import ccm from "./@MODULE@.js";

export default ccm;
export const { @NAMES@ } = ccm;
