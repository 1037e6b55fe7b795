// ---- Prepended by npm/build: where this Node module finds its .wasm and rank tables. ----
// Run as it is, the module finds them beside itself (`__dirname`). Bundled into a server
// (Next.js's Turbopack), `__dirname` points nowhere and a path built from it is not a file the
// bundler ships; the package's ES entry for Node (index.mjs, lite.mjs, tokens.mjs) names each
// file with `new URL("./file", import.meta.url)`, which bundlers do ship, and hands those
// locations over here before this module runs. A location that is not a file (webpack's
// public `/_next/static/…` path) is skipped for the next: beside this file, then the package
// as installed in the working directory. The import and the require are one instance either
// way, since the ES entry re-exports this module.
const __ccmGivenAssets = globalThis[Symbol.for("cognitive-context.assets")] ?? {};
function __ccmAsset(name) {
  const fs = require("node:fs");
  const path = require("node:path");
  const dir = name.endsWith(".ccmt") ? "web" : "node";
  const candidates = [];
  if (__ccmGivenAssets[name] !== undefined) {
    const given = String(__ccmGivenAssets[name]);
    candidates.push(given.startsWith("file:") ? require("node:url").fileURLToPath(given) : given);
  }
  candidates.push(path.join(__dirname, "..", dir, name));
  try {
    const root = path.dirname(
      require("node:module").createRequire(path.join(process.cwd(), "noop.js")).resolve("cognitive-context/package.json"));
    candidates.push(path.join(root, dir, name));
  } catch {
    // Not installed in the working directory: the candidates above are all there is.
  }
  const found = candidates.find((candidate) => fs.existsSync(candidate));
  if (found === undefined) {
    throw Object.assign(new Error(
      `cognitive-context: cannot find its file ${name} (looked in ${candidates.join(", ")}). ` +
      "A bundler moved the package's code away from its files: import the package with `import` " +
      "(its ES entry names the files so that bundlers ship them), or leave the package out of the " +
      'server bundle (Next.js: `serverExternalPackages: ["cognitive-context"]` in next.config).'),
      name.endsWith(".ccmt") ? { code: "table" } : {});
  }
  return found;
}
