// Child processes: the stages that must not share a heap, caches or a JIT with the main
// process (exactness, pathological inputs, time to first count) run their work in a fresh
// `node`, and this module starts them, enforces time limits and collects what they report.

import { fork, spawn } from "node:child_process";

/**
 * Runs `script` with fork() (an IPC channel for structured messages). `onMessage(message,
 * control)` sees every message; `control.setDeadline(ms)` arms (or re-arms) a timer that kills
 * the child with SIGKILL when it fires, `control.clearDeadline()` disarms it. `timeoutMs` is an
 * overall limit for the whole child. Resolves (never rejects) with
 * { code, signal, timedOut, stderr }, where timedOut is true when a deadline killed it.
 */
export function runWorker(script, args, { onMessage = () => {}, timeoutMs, execArgv = [] } = {}) {
  return new Promise((resolvePromise) => {
    const child = fork(script, args, { execArgv, stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let stderr = "";
    let timedOut = false;
    let deadline;
    let overall;
    const kill = () => {
      timedOut = true;
      child.kill("SIGKILL");
    };
    const control = {
      setDeadline(ms) {
        clearTimeout(deadline);
        deadline = setTimeout(kill, ms);
      },
      clearDeadline() {
        clearTimeout(deadline);
      },
    };
    if (timeoutMs) overall = setTimeout(kill, timeoutMs);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      // Keep the tail only: a crashing library can print a lot.
      stderr = (stderr + chunk).slice(-8000);
    });
    child.on("message", (message) => onMessage(message, control));
    child.on("error", (error) => {
      stderr += `\n${error.message}`;
    });
    child.on("exit", (code, signal) => {
      clearTimeout(deadline);
      clearTimeout(overall);
      resolvePromise({ code, signal, timedOut, stderr: stderr.trim() });
    });
  });
}

/**
 * Runs `node script args` with spawn() (no IPC channel, so nothing extra is set up in the
 * child) and resolves with its stdout, stderr and exit status; kills it after `timeoutMs`.
 */
export function runNode(script, args, { timeoutMs = 60_000 } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr = (stderr + chunk).slice(-8000)));
    child.on("error", (error) => (stderr += `\n${error.message}`));
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, timedOut, stdout, stderr: stderr.trim() });
    });
  });
}

/** Sends one message from a worker and waits until it is handed to the parent. */
export function send(message) {
  return new Promise((resolvePromise, reject) => {
    if (!process.send) {
      reject(new Error("this script is a worker of bench.mjs and must be started by it (no IPC channel)"));
      return;
    }
    process.send(message, (error) => (error ? reject(error) : resolvePromise()));
  });
}

/**
 * Runs a worker's main function: reports an exception to the parent as a message (so the parent
 * can say which library failed and why), then closes the IPC channel so the child exits.
 */
export async function workerMain(main) {
  try {
    await main();
  } catch (error) {
    try {
      await send({ type: "error", message: error?.message ?? String(error), stack: error?.stack });
    } catch {
      console.error(error);
    }
    process.exitCode = 1;
  }
  process.disconnect?.();
}

/** The first line of a child's error output, for a one-line message in a table. */
export function firstLine(text) {
  return (text ?? "").split("\n").find((line) => line.trim()) ?? "";
}
