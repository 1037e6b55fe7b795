
// ----- Adapters for hosts with their own model client (npm/ccm/glue/adapters.d.ts) -----

/** The message formats `contextMessages` and `runToolCalls` speak. */
export type MessageFormat = "openai" | "anthropic" | "ai-sdk";

/** A message of the OpenAI chat completions API, as the `openai` SDK's `messages` takes it. */
export type OpenAIMessage =
    | { role: "system" | "user"; content: string; }
    | { role: "assistant"; content: string; tool_calls?: OpenAIToolCall[]; }
    | { role: "tool"; tool_call_id: string; content: string; };
/** A tool call in an OpenAI assistant message. */
export interface OpenAIToolCall { id: string; type: "function"; function: { name: string; arguments: string; }; }

/** A content block of the Anthropic messages API, as `@anthropic-ai/sdk` takes it. */
export type AnthropicBlock =
    | { type: "text"; text: string; }
    | { type: "tool_use"; id: string; name: string; input: Record<string, unknown>; }
    | { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean; };
/** A message of the Anthropic messages API. */
export interface AnthropicMessage { role: "user" | "assistant"; content: AnthropicBlock[]; }
/**
 * The context for the Vercel AI SDK (`ai` 5 to 7), spread into `generateText` / `streamText`:
 * the system prompt as `instructions` (ai 7) and as `system` (ai 5 and 6; ai 7 reads it only
 * without `instructions`), and the `messages`.
 */
export interface AiSdkContext { instructions: string; system: string; messages: AiSdkMessage[]; }
/** The context for the Anthropic messages API: its `system` parameter and its `messages`. */
export interface AnthropicContext { system: string; messages: AnthropicMessage[]; }

/** A JSON value (a tool result as the SDKs type it). */
export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue; };
/** A tool result part of the Vercel AI SDK (`ai` 5 and later). */
export interface AiSdkToolResultPart { type: "tool-result"; toolCallId: string; toolName: string; output: { type: "json"; value: JsonValue; }; }
/** A message of the Vercel AI SDK (`ModelMessage` of `ai` 5 and later). */
export type AiSdkMessage =
    | { role: "user"; content: string; }
    | { role: "assistant"; content: string | ({ type: "text"; text: string; } | { type: "tool-call"; toolCallId: string; toolName: string; input: Record<string, unknown>; })[]; }
    | { role: "tool"; content: AiSdkToolResultPart[]; };

/** A provider response whose tool calls `runToolCalls` runs. */
export type ProviderResponse =
    /** An OpenAI chat completion, or its `choices[0].message`. */
    | { choices: { message: OpenAIResponseMessage; }[]; }
    | OpenAIResponseMessage
    /** An Anthropic message, or its `content` blocks. */
    | { content: { type: string; }[]; }
    | { type: string; }[]
    /** A Vercel AI SDK result (`generateText`), or its `toolCalls`. */
    | { toolCalls: AiSdkToolCall[]; text?: string; }
    | AiSdkToolCall[]
    /** A LangChain `AIMessage`. */
    | LangChainAIMessage;
/** The part of a LangChain `AIMessage` that `runToolCalls` reads. */
export interface LangChainAIMessage { tool_calls?: { id?: string; name: string; args: Record<string, unknown>; }[]; }
/** An assistant message of the OpenAI chat completions API as the SDK returns it. */
export interface OpenAIResponseMessage {
    content: string | null;
    tool_calls?: ({ id: string; type?: string; function: { name: string; arguments: string | Record<string, unknown>; }; } | { id: string; type: string; })[];
}
/** A tool call of the Vercel AI SDK (`input` in `ai` 5, `args` before). */
export interface AiSdkToolCall { toolCallId: string; toolName: string; input?: unknown; args?: unknown; }

/** What `runToolCalls` did, and the results in the shape to send back. */
export interface ToolCallsResult<M> {
    /** The format the response was recognised as (`"langchain"` for an AIMessage, whose results are OpenAI-shaped). */
    format: MessageFormat | "langchain";
    /** Each call's outcome, in order. */
    outcomes: ToolOutcome[];
    /** The banners of the calls that succeeded (show them to the person). */
    banners: string[];
    /** The results to append to the conversation: OpenAI `tool` messages, one Anthropic `user` message with `tool_result` blocks, or one AI SDK `tool` message. */
    messages: M[];
}

/** Options of `runToolCalls`. */
export interface RunToolCallsOptions {
    /** Writes the summary of an effort the model concludes without one, as `runTurn` does (see `closeEffortWith`). */
    summarize?: Summarizer;
}

/** An event of `streamTurn`. */
export type TurnStreamEvent =
    /** A piece of the answer, as it streams in. */
    | { type: "text"; text: string; }
    /** A retry about to be waited for; text shown so far belongs to the failed attempt. */
    | { type: "retry"; retry: RetryNotice; }
    /** A tool call of the turn, as soon as it has been handled (run, refused, or concluding an effort). */
    | { type: "tool_call"; call: ToolTraceEntry; }
    /** A banner of the turn (reported when the turn has ended). */
    | { type: "banner"; banner: string; }
    /** The turn's result, as `runTurn` resolves it; the last event. */
    | { type: "done"; result: TurnResult; };

export interface Session {
    /**
     * The context of the next request as messages for an SDK, including the tool calls of the
     * turn in progress that went through `runToolCalls` and their results, so a loop with tool
     * rounds sends `contextMessages()` again after each round.
     */
    contextMessages(options?: { format?: "openai" }): OpenAIMessage[];
    contextMessages(options: { format: "anthropic" }): AnthropicContext;
    contextMessages(options: { format: "ai-sdk" }): AiSdkContext;
    /**
     * Runs the tool calls of a provider response (OpenAI, Anthropic, Vercel AI SDK or LangChain;
     * arguments as JSON text or objects) and gives the results in the shape to send back.
     */
    runToolCalls(response: { toolCalls: AiSdkToolCall[]; } | AiSdkToolCall[], options?: RunToolCallsOptions): Promise<ToolCallsResult<{ role: "tool"; content: AiSdkToolResultPart[]; }>>;
    runToolCalls(response: { choices: { message: OpenAIResponseMessage; }[]; } | OpenAIResponseMessage | LangChainAIMessage, options?: RunToolCallsOptions): Promise<ToolCallsResult<{ role: "tool"; tool_call_id: string; content: string; }>>;
    runToolCalls(response: { content: { type: string; }[]; } | { type: string; }[], options?: RunToolCallsOptions): Promise<ToolCallsResult<{ role: "user"; content: Extract<AnthropicBlock, { type: "tool_result"; }>[]; }>>;
    runToolCalls(response: ProviderResponse, options?: RunToolCallsOptions): Promise<ToolCallsResult<OpenAIMessage | AnthropicMessage | AiSdkMessage>>;
    /**
     * `runTurn` as an async iterator of events: text as it streams, retries, then the turn's
     * tool calls and banners, and `done` with the result. The turn starts at the call. Leaving
     * the loop before `done` (`break`, `return()`, `throw()`, at any event or before the first)
     * cancels the turn, even one that has already ended inside the module: the loop exits with
     * the session, what its next save writes and its revision as before the turn. A turn whose
     * `done` was delivered stays, and so does one the session was changed after. A failed turn
     * throws from the loop.
     */
    streamTurn(userText: string, options: TurnOptions): AsyncGenerator<TurnStreamEvent, void, undefined>;
}
