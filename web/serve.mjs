#!/usr/bin/env node
// Serves the app's release build on 127.0.0.1 (scripts/run uses it; the end-to-end tests and
// the first-visit benchmark use `serveDirectory` in-process). No watching, no rebuilding: the
// build cache lock is released before this starts, so a running app never blocks scripts/test.
//
// What a first visit needs from a server, and what this one does:
// - Compression: the build writes `.br` and `.gz` next to each compressible file
//   (web/postbuild.mjs, a Trunk hook), and each request gets the smallest variant its
//   `Accept-Encoding` allows, so nothing is compressed per request.
// - Caching: files whose names carry Trunk's content hash (the wasm, its JavaScript, the CSS,
//   the loading-screen module) never change under their name, so they are `immutable` for a
//   year; everything else (index.html, the tokenizer tables) is `no-cache` with an ETag, so a
//   repeat visit revalidates it with a 304 of a few hundred bytes.
// - A Content-Security-Policy on the page (see `contentSecurityPolicy` for each directive).
//
// The whole build is read into memory at start, so the server answers from one consistent
// build even while a new one is being written into the same directory.
//
// Usage: node web/serve.mjs DIST_DIR [PORT]   (PORT 0 picks a free one; default 8080)

import { createServer } from 'node:http';
import { readFile, readdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.ccmt': 'application/octet-stream',
};

/** The suffixes web/postbuild.mjs writes, by the content coding each holds. */
export const ENCODINGS = { br: '.br', gzip: '.gz' };

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/**
 * The policy for the page. `inlineHashes` are the 'sha256-…' sources of the page's inline
 * <script> and <style> elements (Trunk's start-up script and the loading screen), so no
 * 'unsafe-inline' is needed for either.
 */
export function contentSecurityPolicy({ scriptHashes = [], styleHashes = [] } = {}) {
  return [
    // Anything not named below is refused.
    "default-src 'none'",
    // The app's own modules, the inline start-up script by its hash, and compiling the
    // WebAssembly module ('wasm-unsafe-eval' allows WebAssembly compilation and nothing else;
    // JavaScript eval stays refused).
    ["script-src 'self' 'wasm-unsafe-eval'", ...scriptHashes].join(' '),
    // The stylesheet and the loading screen's inline <style>. Style attributes in markup are
    // refused too; the app sets element styles through the CSSOM, which CSP allows.
    ["style-src 'self'", ...styleHashes].join(' '),
    // The favicon is an empty data: URL; nothing else loads images.
    "img-src 'self' data:",
    // The tokenizer tables come from this server. The LLM provider is whatever URL the user
    // configures: OpenAI, Anthropic or OpenRouter over https, Ollama or LM Studio on
    // http://localhost, a model server on the local network over plain http. No list fixed
    // here can hold all of those, so any http(s) origin is allowed. What keeps a key or a
    // conversation from being sent elsewhere is script-src: no injected script can run to do
    // it, and the app itself sends only to the configured provider.
    "connect-src 'self' https: http:",
    // No <base> rewriting, no form posting anywhere, no framing by other sites (clickjacking).
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The CSP source for a piece of inline code: 'sha256-' and its base64 digest. */
function hashSource(code) {
  return `'sha256-${createHash('sha256').update(code, 'utf8').digest('base64')}'`;
}

/** The hash sources of an HTML page's inline scripts and styles. */
export function inlineHashes(html) {
  const scriptHashes = [];
  for (const [, attrs, code] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (!/\bsrc\s*=/i.test(attrs)) scriptHashes.push(hashSource(code));
  }
  const styleHashes = [...html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/gi)].map(([, code]) =>
    hashSource(code),
  );
  return { scriptHashes, styleHashes };
}

/**
 * Trunk names a processed asset after a hash of its content (`ccm-web-5f0c…_bg.wasm`,
 * `style-9a1e….css`, `4b7d…-initializer.mjs`): a run of at least 10 hex digits between
 * separators. A name without one (index.html, the tables Trunk copies as they are) can change
 * its content, so it must be revalidated.
 */
export function isContentHashed(name) {
  return /(^|[-_.])[0-9a-f]{10,}([-_.]|$)/.test(name);
}

/** Every file under `dir`, as paths relative to it with forward slashes. */
async function listFiles(dir, prefix = '') {
  const files = [];
  for (const entry of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await listFiles(dir, relative)));
    else if (entry.isFile()) files.push(relative);
  }
  return files;
}

/** A strong ETag for one representation (content and coding). */
function etagOf(body, coding) {
  const digest = createHash('sha256').update(body).digest('base64url').slice(0, 22);
  return coding === 'identity' ? `"${digest}"` : `"${digest}-${coding}"`;
}

/**
 * Reads a build directory into memory: for each URL path its content type, cache policy and
 * representations (identity, and br / gzip where the build wrote them). Throws when the
 * directory has no index.html, since then there is no app to serve.
 */
export async function loadSite(dir) {
  const root = path.resolve(dir);
  const files = await listFiles(root).catch((error) => {
    throw new Error(`cannot read the app build at ${root}: ${error.message}`);
  });
  if (!files.includes('index.html')) {
    throw new Error(`no index.html in ${root}; build the app first (scripts/run does)`);
  }
  const present = new Set(files);
  const compressedSuffixes = Object.values(ENCODINGS);
  const isVariant = (file) =>
    compressedSuffixes.some((suffix) => file.endsWith(suffix) && present.has(file.slice(0, -suffix.length)));

  const html = await readFile(path.join(root, 'index.html'), 'utf8');
  const csp = contentSecurityPolicy(inlineHashes(html));
  const site = new Map();
  for (const file of files) {
    if (isVariant(file)) continue;
    const body = await readFile(path.join(root, file));
    const representations = { identity: { body, etag: etagOf(body, 'identity') } };
    for (const [coding, suffix] of Object.entries(ENCODINGS)) {
      if (present.has(file + suffix)) {
        const encoded = await readFile(path.join(root, file + suffix));
        representations[coding] = { body: encoded, etag: etagOf(body, coding) };
      }
    }
    const name = path.posix.basename(file);
    const isHtml = file.endsWith('.html');
    // Only a hashed name that the page refers to is cached for good: the page is always
    // revalidated, so a new build's page names its new files.
    const immutable = !isHtml && isContentHashed(name) && html.includes(name);
    site.set(`/${file}`, {
      type: MIME[path.extname(file)] ?? 'application/octet-stream',
      cacheControl: immutable ? IMMUTABLE : REVALIDATE,
      csp: isHtml ? csp : undefined,
      representations,
    });
  }
  return site;
}

/**
 * The codings a request accepts, best first, from its Accept-Encoding header: by weight, and br
 * before gzip when the client weighs them equally (br is the smallest). Codings with q=0 are
 * left out. Identity stays acceptable unless refused (by `identity;q=0`, or `*;q=0` without it),
 * and unless weighed explicitly it comes last: a client that names a coding wants it.
 */
export function acceptedCodings(header = '') {
  const weights = new Map();
  for (const part of (header ?? '').split(',')) {
    const [rawName, ...params] = part.toLowerCase().split(';');
    const name = rawName.trim();
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)).find(Boolean);
    weights.set(name, q ? Number(q[1]) : 1);
  }
  const preference = ['br', 'gzip', 'identity'];
  const weight = (coding) => {
    if (weights.has(coding)) return weights.get(coding);
    if (coding !== 'identity') return weights.get('*') ?? 0;
    return weights.get('*') === 0 ? 0 : Number.MIN_VALUE;
  };
  return preference
    .filter((coding) => weight(coding) > 0)
    .sort((a, b) => weight(b) - weight(a) || preference.indexOf(a) - preference.indexOf(b));
}

/** Whether an If-None-Match header names `etag` (weak comparison, as RFC 9110 asks for it). */
function matchesEtag(header, etag) {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const bare = (tag) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => bare(tag) === etag);
}

/** The request handler over a site from `loadSite`. */
export function handler(site) {
  return (request, response) => {
    const common = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { ...common, allow: 'GET, HEAD', 'content-type': 'text/plain' });
      response.end('only GET and HEAD are served here\n');
      return;
    }
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(request.url, 'http://127.0.0.1').pathname);
    } catch {
      response.writeHead(400, { ...common, 'content-type': 'text/plain' }).end('malformed URL\n');
      return;
    }
    if (pathname.endsWith('/')) pathname += 'index.html';
    const entry = site.get(pathname);
    if (!entry) {
      response.writeHead(404, { ...common, 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const codings = acceptedCodings(request.headers['accept-encoding']);
    const coding = codings.find((c) => entry.representations[c]) ?? 'identity';
    const { body, etag } = entry.representations[coding];
    const headers = {
      ...common,
      'content-type': entry.type,
      'cache-control': entry.cacheControl,
      etag,
      vary: 'Accept-Encoding',
    };
    if (entry.csp) headers['content-security-policy'] = entry.csp;
    if (coding !== 'identity') headers['content-encoding'] = coding;
    if (matchesEtag(request.headers['if-none-match'], etag)) {
      // A 304 repeats the validators and caching headers; the body's own headers stay out.
      delete headers['content-type'];
      delete headers['content-encoding'];
      response.writeHead(304, headers).end();
      return;
    }
    headers['content-length'] = body.length;
    response.writeHead(200, headers);
    response.end(request.method === 'HEAD' ? undefined : body);
  };
}

/** Serves the build in `dir` on 127.0.0.1:`port`; resolves to { url, close }. */
export async function serveDirectory(dir, port = 0) {
  const site = await loadSite(dir);
  const server = createServer(handler(site));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        // Browsers keep idle connections open; without this, close would wait for them.
        server.closeIdleConnections();
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, port = '8080'] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node web/serve.mjs DIST_DIR [PORT]');
    process.exit(2);
  }
  if (!/^\d+$/.test(port) || Number(port) > 65535) {
    console.error(`serve.mjs: the port must be a number from 0 to 65535, not '${port}'`);
    process.exit(2);
  }
  serveDirectory(dir, Number(port))
    .then(({ url }) => console.log(`CCM is running at ${url} (offline demo model ready; Ctrl+C stops it)`))
    .catch((error) => {
      console.error(`could not serve ${dir} on 127.0.0.1:${port}: ${error.message}`);
      process.exit(1);
    });
}
