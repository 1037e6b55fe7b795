// The local mock LLM provider (crates/ccm-mock-llm) for the package's tests: a real HTTP server
// on 127.0.0.1 that speaks OpenAI chat completions and Anthropic messages, streams, and serves
// scripted replies. npm/test-package passes the binary in CCM_MOCK_LLM_BIN.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";

export const mockBin = process.env.CCM_MOCK_LLM_BIN;

/** Whether a mock server binary was given. npm/test-package always gives one; the tests that
 * need it never skip without it: startMock fails with the way to build it. */
export const haveMock = Boolean(mockBin);

/** Starts the server; resolves to { url, enqueue, requests, reset, stop }. */
export async function startMock() {
  if (!haveMock) throw new Error(`no mock server binary (CCM_MOCK_LLM_BIN=${mockBin}); build it with cargo build -p ccm-mock-llm`);
  const child = spawn(mockBin, ["--idle-exit-secs", "300", "--max-lifetime-secs", "1200"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the mock server did not start within 20 s")), 20_000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      const match = /^CCM_MOCK_LLM_LISTENING (\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`the mock server exited with ${code}`)));
  });
  const control = async (method, route, body) => {
    const response = await fetch(`${url}/__mock/${route}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`mock ${route}: ${response.status} ${await response.text()}`);
    return response.json().catch(() => null);
  };
  return {
    url,
    /** Queues scripted replies (crates/ccm-mock-llm/src/script.rs). */
    enqueue: (replies) => control("POST", "enqueue", replies),
    /** The requests the server received, oldest first. */
    requests: async () => {
      const log = await control("GET", "requests");
      return Array.isArray(log) ? log : log.requests;
    },
    reset: () => control("POST", "reset", {}),
    stop: async () => {
      await control("POST", "shutdown", {}).catch(() => {});
      if (child.exitCode === null) child.kill();
    },
  };
}
