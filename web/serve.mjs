#!/usr/bin/env node
// Serves the app's Trunk build as static files on 127.0.0.1 (scripts/run uses it; the
// end-to-end tests use `serveDirectory` in-process). No watching, no rebuilding: the build
// cache lock is released before this starts, so a running app never blocks scripts/test.
//
// Usage: node web/serve.mjs DIST_DIR [PORT]   (PORT 0 picks a free one; default 8080)

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** Serves `dir` on 127.0.0.1:`port`; resolves to { url, close }. */
export async function serveDirectory(dir, port = 0) {
  const root = path.resolve(dir);
  const server = createServer(async (request, response) => {
    const url = new URL(request.url, 'http://127.0.0.1');
    let file = path.normalize(path.join(root, decodeURIComponent(url.pathname)));
    if (file !== root && !file.startsWith(root + path.sep)) {
      response.writeHead(403).end();
      return;
    }
    if (url.pathname.endsWith('/')) file = path.join(file, 'index.html');
    try {
      const body = await readFile(file);
      response.writeHead(200, {
        'content-type': MIME[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-store',
      });
      response.end(body);
    } catch {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, port = '8080'] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node web/serve.mjs DIST_DIR [PORT]');
    process.exit(2);
  }
  serveDirectory(dir, Number(port))
    .then(({ url }) => console.log(`CCM is running at ${url} (offline demo model ready; Ctrl+C stops it)`))
    .catch((error) => {
      console.error(`could not serve ${dir} on 127.0.0.1:${port}: ${error.message}`);
      process.exit(1);
    });
}
