// Bundle size: what a browser downloads to count o200k tokens with each library.
//
// For each library, esbuild resolves a one-line entry module the way a browser build would
// (platform "browser", ES modules, the packages' "browser"/"import"/"default" export
// conditions) and reports in its metafile every file the entry reaches through static imports.
// Those files, as shipped (not minified again), are what native ES modules in a browser
// download; each one is compressed with brotli at quality 11, as a server would send it, and
// the sizes are added up. A .wasm file imported by a module (tiktoken's bundler build) is part
// of that graph; files fetched at run time (our wasm and rank table) are listed explicitly.
//
// Compressing ~25 MB at quality 11 takes tens of seconds, so sizes are cached by the SHA-256 of
// the file's content in .cache/brotli-q11.json (safe to delete).

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { brotliCompressSync, constants } from "node:zlib";
import { BENCH_DIR } from "./adapters.mjs";

const CACHE_FILE = join(BENCH_DIR, ".cache", "brotli-q11.json");

function loadCache() {
  try {
    return JSON.parse(readFileSync(CACHE_FILE, "utf8"));
  } catch {
    return {};
  }
}

function saveCache(cache) {
  mkdirSync(join(BENCH_DIR, ".cache"), { recursive: true });
  writeFileSync(CACHE_FILE, JSON.stringify(cache, null, 1) + "\n");
}

/** Brotli size at quality 11 (the maximum) of one file's bytes. */
function brotliSize(bytes, cache) {
  const key = createHash("sha256").update(bytes).digest("hex");
  if (cache[key] === undefined) {
    cache[key] = brotliCompressSync(bytes, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    }).length;
  }
  return cache[key];
}

/** The files that `entry` reaches, absolute paths, found by esbuild's metafile. */
async function moduleGraph(entry) {
  let esbuild;
  try {
    esbuild = await import("esbuild");
  } catch {
    throw new Error('npm package "esbuild" is missing from bench/tokenizers/node_modules (run `npm ci` in bench/tokenizers)');
  }
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: BENCH_DIR, loader: "js", sourcefile: "entry.js" },
    absWorkingDir: BENCH_DIR,
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "browser",
    // A wasm module imported from JavaScript is a file the browser downloads as it is.
    loader: { ".wasm": "file" },
    outdir: join(tmpdir(), "ccm-bench-bundle"),
    logLevel: "silent",
  });
  return Object.keys(result.metafile.inputs)
    .filter((path) => path !== "entry.js" && !path.startsWith("<"))
    .map((path) => resolve(BENCH_DIR, path));
}

/** Sizes of one set of files: per-file raw and brotli bytes and their sums. */
function sizeFiles(files, cache) {
  const rows = files.map((path) => {
    const bytes = readFileSync(path);
    return { file: relative(BENCH_DIR, path), raw: bytes.length, brotli: brotliSize(bytes, cache) };
  });
  return {
    files: rows,
    raw: rows.reduce((sum, r) => sum + r.raw, 0),
    brotli: rows.reduce((sum, r) => sum + r.brotli, 0),
  };
}

/**
 * Measures every adapter's browser download for o200k. Resolves to a list of
 * { id, label, note, raw, brotli, files } or { id, label, error }.
 */
export async function measureBundles(adapters) {
  const cache = loadCache();
  const out = [];
  const measure = async (id, label, spec) => {
    try {
      const explicit = spec.files ?? [];
      const missing = explicit.filter((path) => !existsSync(path));
      if (missing.length) throw new Error(`missing: ${missing.join(", ")}`);
      const traced = spec.entry ? await moduleGraph(spec.entry) : [];
      const files = [...new Set([...explicit, ...traced])];
      out.push({ id, label, note: spec.note, ...sizeFiles(files, cache) });
    } catch (error) {
      out.push({ id, label, note: spec.note, error: error.message.split("\n")[0] });
    }
  };
  for (const adapter of adapters) {
    await measure(adapter.id, adapter.label, adapter.bundle);
    for (const alternative of adapter.bundle.alternatives ?? []) {
      await measure(`${adapter.id}:full`, alternative.label, alternative);
    }
  }
  saveCache(cache);
  return out;
}
