// Type assertions on the package's declarations, checked by readme.test.mjs with tsc --strict
// (never run). Each `@ts-expect-error` line must be an error, so a declaration that loosens a
// closed set back to `string` fails the check; `notAny` fails to compile on an `any`.
import {
  Session,
  SessionStore,
  countTokens,
  loadEncoding,
  toolDefinitions,
  type CcmError,
  type CcmFileTexts,
  type ContextMode,
  type ErrorCode,
  type ExclusionReason,
  type PinKind,
  type Provider,
  type ToolName,
  type TurnOptions,
} from "cognitive-context";
import * as tokens from "cognitive-context/tokens";
import * as lite from "cognitive-context/lite";

type IsAny<T> = 0 extends 1 & T ? true : false;
/** Compiles only when `value`'s type is not `any`. */
function notAny<T>(value: T, ..._check: IsAny<T> extends true ? ["this value is typed any"] : []): T {
  return value;
}

const session = new Session({ contextMode: "heavy", encoding: "cl100k_base", compaction: "early" });
// @ts-expect-error a context mode that does not exist
new Session({ contextMode: "full" });
// @ts-expect-error an option that does not exist
new Session({ decayTreshold: 3 });

const mode: ContextMode = session.contextMode;
const next: "off" | "light" | "heavy" = session.cycleContextMode();
session.setContextMode("off");
// @ts-expect-error a context mode that does not exist
session.setContextMode("medium");
// @ts-expect-error contextMode is read-only; setContextMode changes it
session.contextMode = "off";

const kind: PinKind = "leased";
session.pin("summary:x", kind, 5);
// @ts-expect-error a pin kind that does not exist
session.pin("summary:x", "stiky");
session.attach("notes.txt", "text", "pasted");
// @ts-expect-error an attachment kind that does not exist
session.attach("notes.txt", "text", "upload");

// Tool outcomes narrow by `ok` and `name`; nothing in them is `any`.
const outcome = session.executeTool("search_efforts", '{"query": "auth"}');
const parsedOutcome = session.executeTool("search_efforts", { query: "auth" });
notAny(parsedOutcome.result);
notAny(outcome.result);
if (outcome.ok && outcome.name === "search_efforts") {
  const hits: number = outcome.result.results.length;
  // @ts-expect-error a search report has no summary field of its own
  outcome.result.summary;
}
if (!outcome.ok) {
  const message: string = outcome.result.error;
}
if (outcome.ok && outcome.name === "search_efforts") {
  // The model reads the matching messages as lines, grouped by log.
  const lines: string[] = outcome.result.messages[0].excerpts[0].lines;
}
// Recall: the evidence is typed to the message, and the log is a closed set.
const evidence = session.findMessages("auth");
notAny(evidence);
const said: string | undefined = evidence.groups[0]?.excerpts[0]?.messages[0]?.text;
const logKind: "effort" | "ambient" | "attachment" | undefined = evidence.groups[0]?.log.kind;
const recalled = session.recall("auth", "ambient");
const loaded: number = recalled.tokens_loaded;
const ready: boolean = session.recallReady;
async function recallTypes() {
  await session.prepareRecall();
  session.enableEmbeddings("nomic-embed-text");
  const embedded: number = await session.refreshEmbeddings({ baseUrl: "http://localhost:11434/v1", model: "nomic-embed-text", query: "auth" });
  // @ts-expect-error the model is required
  await session.refreshEmbeddings({ baseUrl: "http://localhost:11434/v1" });
}
const overRecall: ExclusionReason = "over_recall_budget";
new Session({ recallTokenBudget: 400, evidenceTokenBudget: 1500 });
new Session({ profile: "seed", ambientTokenBudget: "none", summaryTokenBudget: 0, searchRule: "ranked" });
// @ts-expect-error "none" is the only word a budget takes
new Session({ ambientTokenBudget: "unlimited" });
// @ts-expect-error the profiles are a closed set
new Session({ profile: "spec" });
new Session({ compaction: { preset: "early", softPerMille: 550, enabled: true } });
// @ts-expect-error compaction fields are spelt in camelCase
new Session({ compaction: { soft_per_mille: 550 } });
const toolNames: ToolName[] = toolDefinitions().map((tool) => tool.function.name);
const anthropicNames: ToolName[] = toolDefinitions({ format: "anthropic" }).map((tool) => tool.name);
const plainNames: ToolName[] = session.toolDefinitions({ format: "plain" }).map((tool) => tool.name);
// @ts-expect-error a tool format that does not exist
toolDefinitions({ format: "gemini" });
// @ts-expect-error the default (OpenAI) shape has its name under `function`
toolDefinitions()[0].name;
// The adapters: message formats are a closed set, and each format has its own shape.
const anthropicContext = session.contextMessages({ format: "anthropic" });
const system: string = anthropicContext.system;
const aiContext = session.contextMessages({ format: "ai-sdk" });
const instructions: string = aiContext.instructions;
notAny(session.contextMessages());
// @ts-expect-error a message format that does not exist
session.contextMessages({ format: "gemini" });
async function adapterTypes() {
  const result = await session.runToolCalls({ content: null, tool_calls: [] });
  const toolCallId: string = result.messages[0].tool_call_id;
  notAny(result.outcomes);
  const closed = await session.closeEffortWith({ summarize: (request) => request.prompt });
  notAny(closed);
  // @ts-expect-error summarize must return text
  await session.closeEffortWith({ summarize: () => 42 });
  for await (const event of session.streamTurn("hi", { provider: "offline" })) {
    if (event.type === "text") { const text: string = event.text; }
    if (event.type === "done") { const reply: string = event.result.reply; }
    // @ts-expect-error an event type that does not exist
    if (event.type === "finished") { }
  }
}
// @ts-expect-error tool names are a closed set
const toolName: ToolName = "delete_effort";

// Plans: reason codes are unions.
const plan = session.buildContext();
const reasons: ExclusionReason[] = plan.excluded.map((item) => item.reason);
// @ts-expect-error an exclusion reason that does not exist
const forgotten: ExclusionReason = "forgotten";
for (const item of plan.included) {
  if (item.reason.code === "pinned") {
    const pinKind: PinKind = item.reason.kind;
  }
}
const telemetry = session.telemetry();
notAny(telemetry[0]?.requests[0]?.included[0]?.why);

// runTurn: the provider is a closed set, headers a plain object, the result fully typed.
const provider: Provider = "openai_compatible";
const options: TurnOptions = {
  provider,
  baseUrl: "http://127.0.0.1:8080/v1",
  model: "m",
  headers: { "x-team": "ml" },
  idleTimeoutMs: 30_000,
  responseTimeoutMs: 300_000,
  onText: (text) => void text.length,
  onRetry: (retry) => void retry.delay_ms,
};
// @ts-expect-error a provider that does not exist
const gemini: TurnOptions = { provider: "gemini", model: "x" };
async function turn(): Promise<number> {
  const result = await session.runTurn("hello", { provider: "offline" });
  const request = notAny(result.requests[0]);
  notAny(result.tool_calls[0]?.result);
  if (request.purpose.kind === "summary") {
    const effort: string = request.purpose.effort_id;
  }
  if (request.outcome.status === "answered") {
    const reason = request.outcome.finish_reason;
    const stopped: boolean = reason === "stop" || (typeof reason === "object" && reason.other.length > 0);
  }
  return request.estimate.estimated_prompt_tokens + (request.usage?.prompt_tokens ?? 0);
}

// Storage: plain objects for files, a typed backend and telemetry.
async function storage(): Promise<void> {
  const store = await SessionStore.open({ backend: "auto" });
  const backend: "indexeddb" | "localstorage" | "files" | "postgres" | "host" = store.backend;
  // @ts-expect-error a backend that does not exist
  const unknownBackend: "indexeddb" | "localstorage" | "sqlite" = store.backend;
  // @ts-expect-error a backend that does not exist
  await SessionStore.open({ backend: "sqlite" });
  const files: CcmFileTexts = { manifest: "efforts: []", efforts: { "auth-bug": "{}" } };
  await store.importCcmFiles(files, "imported");
  const entry = notAny(await store.turnTelemetry("s1", 1));
  const turnNumber: number | undefined = entry?.turn;
}

// Errors: a closed set of codes.
try {
  session.endTurn("x");
} catch (e) {
  const error = e as CcmError;
  const code: ErrorCode = error.code;
  // @ts-expect-error an error code that does not exist
  const unknown: ErrorCode = "oops";
}

// Counting: encodings are a closed set, in every module.
const count: number = countTokens("hello", "o200k_base");
// @ts-expect-error an encoding without a table in the package
countTokens("hello", "p50k_base");
tokens.countTokens("hello", "cl100k_base");
// @ts-expect-error an encoding without a table in the package
void tokens.loadEncoding("gpt2");
void loadEncoding("o200k_base", { onProgress: (done, total, phase) => void [done, total, phase === "parse"] });
tokens.setTableLoader((encoding) => new Uint8Array(encoding.length));
const approximate: boolean = lite.hasExactTokenCounts();

export { mode, next, toolNames, toolName, reasons, forgotten, options, gemini, turn, storage, count, approximate };
