// Prints a Markdown table of the package's wasm, JS and rank-table artefacts: raw and brotli sizes.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { brotliCompressSync, constants } from "node:zlib";

const root = process.argv[2];
const rows = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (/\.(wasm|js|ccmt)$/.test(name)) rows.push(path);
  }
};
walk(root);
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log("| artefact | raw | brotli |");
console.log("|---|---|---|");
for (const path of rows.sort()) {
  const bytes = readFileSync(path);
  const brotli = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  console.log(`| ${relative(root, path)} | ${kb(bytes.length)} | ${kb(brotli.length)} |`);
}
