// The package's entry for browsers and bundlers (written by npm/build from npm/ccm/glue).
//
// ./@MODULE@.js is wasm-pack's `web` build, which needs its WebAssembly instantiated before
// any export works. This entry does that on import, with top-level await, so code that imports
// it can call it at once, as with any other module. The URL is written as
// `new URL("./file", import.meta.url)` because that is how bundlers recognise a file to ship
// (webpack, Vite and Parcel copy it as an asset and rewrite the URL; in a browser without a
// bundler it is the file beside this one).
import init from "./@MODULE@.js";

await init({ module_or_path: new URL("./@MODULE@_bg.wasm", import.meta.url) });

export * from "./@MODULE@.js";
