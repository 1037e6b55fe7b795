// The addresses at which the app looks for a model server on this computer (Ollama, LM Studio)
// on a first visit of a page served from this computer, by itself (web/src/local_servers.rs,
// `well_known`). Where nothing listens, Chromium writes a console error for each refused
// request, as it does for every failed request, although the app expects the refusal and shows
// nothing; a page cannot make the request without that log line. The tools that fail on the
// app's console errors (tests/e2e/harness.mjs, bench/first-visit/bench.mjs) skip exactly these.
export const LOCAL_SERVER_PROBES = ['http://127.0.0.1:11434/v1/models', 'http://127.0.0.1:1234/v1/models'];

/**
 * Whether a console message (playwright-core's ConsoleMessage) is the browser's note on a
 * local-server probe: a request to one of LOCAL_SERVER_PROBES that failed (refused, offline,
 * or an HTTP error from another program on the port), or one that a server there kept from the
 * page by CORS.
 */
export function isLocalServerProbe(message) {
  const text = message.text();
  const url = message.location()?.url;
  return LOCAL_SERVER_PROBES.some(
    (probe) =>
      (url === probe && text.startsWith('Failed to load resource: ')) ||
      text.startsWith(`Access to fetch at '${probe}' from origin `),
  );
}
