// One adapter per token counter. Every stage of the benchmark talks to the libraries only
// through this interface, so "ours" is measured exactly like the peers:
//
//   id         short name used on the command line, in tables and in results/latest.json
//   name       npm package name (or "ccm-tokens (ours)")
//   exact      true when the library claims exact tiktoken counts; estimators are left out of
//              the exactness check and marked as estimates in the tables
//   version()  the installed version
//   open(enc)  loads the library and its rank table for one encoding ("o200k_base" or
//              "cl100k_base") and resolves to { count(text) -> number, close() }
//   bundle     what a browser downloads to count o200k tokens (see lib/bundle-size.mjs)
//
// Modules are imported inside open(), never at the top of this file, so that importing the
// adapter list costs nothing and a child process measuring time to first count loads only the
// one library it measures.
//
// Special tokens: our counter treats "<|endoftext|>" and the like as ordinary text, so every
// adapter asks its library for exactly that (encode_ordinary, or an empty set of disallowed
// special tokens). With the libraries' defaults most of them would throw on such text instead.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { packageVersion } from "./corpora.mjs";

const require = createRequire(import.meta.url);
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = resolve(BENCH_DIR, "..", "..");

export const ENCODINGS = ["o200k_base", "cl100k_base"];
/** The `tiktoken` package (OpenAI's Rust core compiled to wasm) is the reference for exactness. */
export const REFERENCE_ID = "tiktoken";
export const OURS_ID = "ours";
export const DEFAULT_OURS_PATH = join(REPO_ROOT, "target", "bench-tokenizers", "dist", "node", "ccm_tokens.js");

/**
 * Imports an npm module and turns a missing package into a message that says what to do,
 * instead of Node's bare ERR_MODULE_NOT_FOUND.
 */
async function importPackage(specifier, packageName) {
  try {
    return await import(specifier);
  } catch (error) {
    if (error?.code === "ERR_MODULE_NOT_FOUND" || error?.code === "MODULE_NOT_FOUND") {
      throw new Error(
        `cannot load "${specifier}": npm package "${packageName}" is missing from bench/tokenizers/node_modules ` +
          `(run \`npm ci\` in bench/tokenizers; scripts/bench-tokenizers does it)`,
      );
    }
    throw error;
  }
}

function checkEncoding(encoding) {
  if (!ENCODINGS.includes(encoding)) throw new Error(`unknown encoding "${encoding}" (expected one of ${ENCODINGS.join(", ")})`);
}

const peers = [
  {
    id: "tiktoken",
    name: "tiktoken",
    exact: true,
    how: "`get_encoding(enc).encode_ordinary(text).length` (wasm; `free()` after use); the reference",
    async open(encoding) {
      checkEncoding(encoding);
      let module;
      try {
        // The package's Node entry is CommonJS; it reads tiktoken_bg.wasm (which embeds the
        // rank tables of every encoding) from disk.
        module = require("tiktoken");
      } catch (error) {
        if (error?.code !== "MODULE_NOT_FOUND") throw error;
        throw new Error('npm package "tiktoken" is missing from bench/tokenizers/node_modules (run `npm ci` in bench/tokenizers)');
      }
      const encoder = module.get_encoding(encoding);
      // encode_ordinary never treats any text as a special token. There is no count function,
      // so the count is the length of the returned Uint32Array.
      return {
        count: (text) => encoder.encode_ordinary(text).length,
        // The encoder lives in wasm memory; free() releases it.
        close: () => encoder.free(),
      };
    },
    bundle: {
      // For one encoding in a browser, tiktoken documents the lite build plus one encoder JSON.
      entry: `import { Tiktoken } from "tiktoken/lite"; import o200k from "tiktoken/encoders/o200k_base.json"; globalThis.enc = new Tiktoken(o200k.bpe_ranks, o200k.special_tokens, o200k.pat_str);`,
      note: "lite build: lite/tiktoken.js, lite/tiktoken_bg.js, lite/tiktoken_bg.wasm, plus encoders/o200k_base.json (the ranks)",
      // The default entry point's wasm embeds all encodings; shown as a second row for scale.
      alternatives: [
        {
          label: "tiktoken (full build)",
          entry: `import { get_encoding } from "tiktoken"; globalThis.enc = get_encoding("o200k_base");`,
          note: "tiktoken.js, tiktoken_bg.js and tiktoken_bg.wasm, which embeds every encoding's ranks",
        },
      ],
    },
  },
  {
    id: "gpt-tokenizer",
    name: "gpt-tokenizer",
    exact: true,
    how: "`countTokens(text, { disallowedSpecial: new Set() })` from `gpt-tokenizer/encoding/<enc>`",
    async open(encoding) {
      checkEncoding(encoding);
      // One module per encoding; each holds its own encoder and merge cache.
      const module = await importPackage(`gpt-tokenizer/encoding/${encoding}`, "gpt-tokenizer");
      // An empty disallowed set turns off the "disallowed special token" check, and with no
      // allowed set nothing is encoded as a special token: "<|endoftext|>" is ordinary text.
      const options = { disallowedSpecial: new Set() };
      return { count: (text) => module.countTokens(text, options), close() {} };
    },
    bundle: {
      entry: `import { countTokens } from "gpt-tokenizer/encoding/o200k_base"; globalThis.count = countTokens;`,
      note: "ESM build: esm/encoding/o200k_base.js and every module it imports, incl. esm/bpeRanks/o200k_base.js (the ranks)",
    },
  },
  {
    id: "js-tiktoken",
    name: "js-tiktoken",
    exact: true,
    how: "`new Tiktoken(ranks).encode(text, [], []).length` with `js-tiktoken/lite` and `js-tiktoken/ranks/<enc>`",
    async open(encoding) {
      checkEncoding(encoding);
      // The "lite" core with one rank file is how js-tiktoken is meant to be used for one
      // encoding (the full entry point bundles every encoding's ranks).
      const { Tiktoken } = await importPackage("js-tiktoken/lite", "js-tiktoken");
      const ranks = (await importPackage(`js-tiktoken/ranks/${encoding}`, "js-tiktoken")).default;
      const encoder = new Tiktoken(ranks);
      // encode(text, allowedSpecial = [], disallowedSpecial = []): nothing special, nothing refused.
      return { count: (text) => encoder.encode(text, [], []).length, close() {} };
    },
    bundle: {
      entry: `import { Tiktoken } from "js-tiktoken/lite"; import ranks from "js-tiktoken/ranks/o200k_base"; globalThis.enc = new Tiktoken(ranks);`,
      note: "dist/lite.js and its shared chunk, plus dist/ranks/o200k_base.js (the ranks) and base64-js",
    },
  },
  {
    id: "ai-tokenizer",
    name: "ai-tokenizer",
    exact: true,
    how: "`new Tokenizer(encoding).encode(text, [], []).length` with `ai-tokenizer/encoding/<enc>`",
    async open(encoding) {
      checkEncoding(encoding);
      const { Tokenizer } = await importPackage("ai-tokenizer", "ai-tokenizer");
      const data = await importPackage(`ai-tokenizer/encoding/${encoding}`, "ai-tokenizer");
      const tokenizer = new Tokenizer(data);
      // Tokenizer.count(text) takes no options and refuses special tokens; the public
      // encode(text, allowedSpecial, disallowedSpecial) with two empty lists treats them as
      // ordinary text, so the count is the length of that.
      return { count: (text) => tokenizer.encode(text, [], []).length, close() {} };
    },
    bundle: {
      entry: `import { Tokenizer } from "ai-tokenizer"; import * as o200k from "ai-tokenizer/encoding/o200k_base"; globalThis.tok = new Tokenizer(o200k);`,
      note: "dist/index.js (the tokenizer and its model list) plus dist/encoding/o200k_base.js and its data chunk",
    },
  },
  {
    id: "tokenx",
    name: "tokenx",
    exact: false,
    how: "`estimateTokenCount(text)`: a heuristic estimate, not compared for exactness",
    async open(encoding) {
      checkEncoding(encoding);
      const { estimateTokenCount } = await importPackage("tokenx", "tokenx");
      // A heuristic with no rank table: the same estimate for every encoding.
      return { count: (text) => estimateTokenCount(text), close() {} };
    },
    bundle: {
      entry: `import { estimateTokenCount } from "tokenx"; globalThis.count = estimateTokenCount;`,
      note: "dist/index.mjs (no rank table: it estimates)",
    },
  },
];

for (const peer of peers) {
  peer.version = () => packageVersion(peer.name);
  peer.label = peer.exact ? peer.name : `${peer.name} (estimate)`;
}

/** The directory npm/build wrote, from the path of our nodejs module (<dist>/node/ccm_tokens.js). */
export function oursDist(oursPath) {
  return resolve(dirname(oursPath), "..");
}

/** The adapter of our counter, loaded from the wasm-pack nodejs build at `oursPath`. */
export function oursAdapter(oursPath) {
  const path = resolve(oursPath);
  const dist = oursDist(path);
  return {
    id: OURS_ID,
    name: "ccm-tokens (ours)",
    label: "ccm (ours)",
    exact: true,
    how: "`countTokens(text, enc)` from the wasm-pack nodejs build (`node/ccm_tokens.js`)",
    path,
    available: () => existsSync(path),
    version() {
      // The build has no version of its own worth showing; the repository's commit says which code ran.
      try {
        const commit = execFileSync("git", ["-C", REPO_ROOT, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
        const dirty = execFileSync("git", ["-C", REPO_ROOT, "status", "--porcelain", "--", "crates", "npm"], { encoding: "utf8" }).trim();
        return dirty ? `${commit}+changes` : commit;
      } catch {
        return "unknown";
      }
    },
    async open(encoding) {
      checkEncoding(encoding);
      if (!existsSync(path)) {
        throw new Error(`our counter is not built: ${path} does not exist (build it with npm/build <dist>, or pass --ours <path-to-ccm_tokens.js>)`);
      }
      // wasm-pack's nodejs target is CommonJS; on first use it reads <dist>/web/<encoding>.ccmt.
      const module = require(path);
      if (typeof module.countTokens !== "function") {
        throw new Error(`${path} does not export countTokens(text, encoding); exports: ${Object.keys(module).join(", ")}`);
      }
      return { count: (text) => module.countTokens(text, encoding), close() {} };
    },
    bundle: {
      files: [join(dist, "web", "ccm_tokens_bg.wasm"), join(dist, "web", "ccm_tokens.js"), join(dist, "web", "o200k_base.ccmt")],
      entry: `import init, { countTokens } from ${JSON.stringify(join(dist, "web", "ccm_tokens.js"))}; globalThis.count = countTokens; globalThis.init = init;`,
      note: "web/ccm_tokens.js + ccm_tokens_bg.wasm (wasm-pack web target) + web/o200k_base.ccmt (the ranks)",
    },
  };
}

/**
 * All adapters for a run: ours first when its module exists (a missing module is reported by the
 * caller and the run goes on with the peers), then the peers in a fixed order.
 * `only`, when given, keeps those ids (the reference is always kept).
 */
export function adapterList({ oursPath = DEFAULT_OURS_PATH, only } = {}) {
  const ours = oursAdapter(oursPath);
  let list = [...(ours.available() ? [ours] : []), ...peers];
  if (only?.length) {
    const unknown = only.filter((id) => id !== OURS_ID && !peers.some((p) => p.id === id));
    if (unknown.length) throw new Error(`unknown library id(s): ${unknown.join(", ")} (known: ${[OURS_ID, ...peers.map((p) => p.id)].join(", ")})`);
    list = list.filter((a) => only.includes(a.id) || a.id === REFERENCE_ID);
  }
  return { adapters: list, ours, oursMissing: !ours.available() };
}

/** Finds one adapter by id (used by child processes, which get the id on their command line). */
export function adapterById(id, oursPath = DEFAULT_OURS_PATH) {
  if (id === OURS_ID) return oursAdapter(oursPath);
  const peer = peers.find((p) => p.id === id);
  if (!peer) throw new Error(`unknown library id "${id}"`);
  return peer;
}
