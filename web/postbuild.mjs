#!/usr/bin/env node
// Finishes the app's release build; Trunk runs it as a post_build hook (Trunk.toml) on its
// staging directory, before the build replaces the old one. Two steps, in this order:
//
// 1. The wasm size in index.html. Trunk writes the wasm's size into the start-up script for
//    the loading screen's progress, but measures it before wasm-opt shrinks the file (Trunk
//    0.21.14), so the bar would stop at three quarters and jump. The size is set to the file's.
// 2. A brotli (`.br`) and a gzip (`.gz`) copy next to each compressible file, made once here so
//    the server (web/serve.mjs) never compresses per request and can afford the slowest,
//    smallest settings (brotli quality 11, gzip level 9).
//
// Debug builds are left alone: they are for `trunk serve` during development, and compressing
// a 15 MB debug wasm at quality 11 would add most of a minute to every rebuild.
//
// Usage: node web/postbuild.mjs [DIR]   (default: $TRUNK_STAGING_DIR)

import { readFile, readdir, writeFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants } from 'node:zlib';
import { fileURLToPath } from 'node:url';

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

/** Text and binary formats that compress well (images are already compressed). */
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.wasm', '.json', '.svg', '.ccmt']);

/** Below this, a compressed response saves less than its extra header costs. */
const MIN_BYTES = 1024;

async function filesUnder(dir) {
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/**
 * Sets the size in index.html's `__trunkInitializer(init, '/…_bg.wasm', SIZE, …)` call to the
 * size of that wasm file. Resolves to { from, to }; throws when the call is not there, since
 * then Trunk's start-up script changed and this step needs a look.
 */
export async function fixWasmSize(dir) {
  const page = path.join(dir, 'index.html');
  const html = await readFile(page, 'utf8');
  const call = /(__trunkInitializer\(init, '([^']+_bg\.wasm)', )(\d+)/.exec(html);
  if (!call) {
    throw new Error(`${page} has no __trunkInitializer(init, '…_bg.wasm', size, …) call to correct`);
  }
  const [, before, url, from] = call;
  const to = (await stat(path.join(dir, url.replace(/^\//, '')))).size;
  await writeFile(page, html.replace(call[0], `${before}${to}`));
  return { from: Number(from), to };
}

/** Compresses every eligible file under `dir`; resolves to one summary row per file. */
export async function compressDirectory(dir) {
  const files = (await filesUnder(dir)).filter((f) => COMPRESSIBLE.has(path.extname(f)));
  return Promise.all(
    files.map(async (file) => {
      const raw = await readFile(file);
      // Stale copies from an earlier build must not outlive the file they were made from.
      await Promise.all(['.br', '.gz'].map((suffix) => rm(file + suffix, { force: true })));
      const row = { file: path.relative(dir, file), raw: raw.length };
      if (raw.length < MIN_BYTES) return row;
      const [br, gzipped] = await Promise.all([
        brotli(raw, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
            [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
            [constants.BROTLI_PARAM_MODE]:
              path.extname(file) === '.wasm' || path.extname(file) === '.ccmt'
                ? constants.BROTLI_MODE_GENERIC
                : constants.BROTLI_MODE_TEXT,
          },
        }),
        gz(raw, { level: constants.Z_BEST_COMPRESSION }),
      ]);
      // A copy that is not smaller is useless; the server then sends the file as it is.
      if (br.length < raw.length) {
        await writeFile(file + '.br', br);
        row.br = br.length;
      }
      if (gzipped.length < raw.length) {
        await writeFile(file + '.gz', gzipped);
        row.gzip = gzipped.length;
      }
      return row;
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? process.env.TRUNK_STAGING_DIR;
  if (!dir) {
    console.error('usage: node web/postbuild.mjs DIR (or run it as a Trunk hook, which sets TRUNK_STAGING_DIR)');
    process.exit(2);
  }
  if (process.env.TRUNK_PROFILE === 'debug') {
    console.log('postbuild: debug build, left as it is');
    process.exit(0);
  }
  const kib = (n) => (n === undefined ? '-' : `${(n / 1024).toFixed(0)} KiB`);
  fixWasmSize(dir)
    .then(({ from, to }) => {
      console.log(`postbuild: wasm size for the loading screen: ${from} -> ${to} bytes`);
      return compressDirectory(dir);
    })
    .then((rows) => {
      for (const row of rows.sort((a, b) => b.raw - a.raw)) {
        console.log(`postbuild: ${row.file}: ${kib(row.raw)}, brotli ${kib(row.br)}, gzip ${kib(row.gzip)}`);
      }
    })
    .catch((error) => {
      console.error(`postbuild: ${error.message}`);
      process.exit(1);
    });
}
