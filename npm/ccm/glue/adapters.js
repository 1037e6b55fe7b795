
// ----- Adapters for hosts with their own model client (npm/ccm/glue/adapters.js) -----
// npm/build appends this file to the engine modules (ES module and CommonJS alike), where
// `Session` is the class wasm-bindgen defined above. It only reshapes data between CCM and the
// SDKs' message formats; every decision stays in the Rust session.

// The tool rounds of the turn in progress, per session: the assistant messages with tool calls
// the host got from its model and the results CCM gave back. They are sent again with every
// request of the turn, so `contextMessages` includes them. A session's rounds belong to one
// turn: beginning, ending or aborting a turn forgets them.
const ccmTurnRounds = new WeakMap();

for (const method of ["beginTurn", "endTurn", "abortTurn"]) {
  const original = Session.prototype[method];
  Session.prototype[method] = function (...args) {
    // Only a call that succeeded moves the session to another turn; a refused one (a
    // beginTurn during a turn) keeps the rounds of the turn in progress.
    const result = original.apply(this, args);
    ccmTurnRounds.delete(this);
    return result;
  };
}

function ccmRoundsOf(session) {
  let rounds = ccmTurnRounds.get(session);
  if (!rounds) {
    rounds = [];
    ccmTurnRounds.set(session, rounds);
  }
  return rounds;
}

function ccmArgumentError(message) {
  const error = new Error(message);
  error.code = "argument";
  return error;
}

// An options object of an adapter: absent, or a plain object with only the keys it knows, so a
// misspelt key is refused (as the module's own functions refuse it) instead of ignored.
function ccmAdapterOptions(method, options, known) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) {
    const what = Array.isArray(options) ? "an array" : typeof options === "bigint" ? "a BigInt" : `a ${typeof options}`;
    throw ccmArgumentError(`${method}: options must be an object, got ${what}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw ccmArgumentError(`${method}: unknown key \`${key}\` in options; the keys are ${known.join(", ")}`);
    }
  }
  return options;
}

// The arguments of a call as JSON text (what is sent back in an assistant message) and as an
// object (Anthropic's `input`, the AI SDK's `input`). Malformed text stays text: CCM answers
// it with an error result, and the object form is then `{}`, as ccm-provider sends it.
function ccmArguments(value) {
  if (typeof value === "string") {
    let parsed;
    try {
      parsed = JSON.parse(value);
    } catch {
      parsed = undefined;
    }
    const input = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : {};
    return { text: value, input };
  }
  if (value === undefined || value === null) return { text: "{}", input: {} };
  if (typeof value === "object" && !Array.isArray(value)) return { text: JSON.stringify(value), input: value };
  // Anything else (a number, an array, a boolean) is the model's mistake in this one call: it
  // goes on as JSON text, so CCM answers this call with an error result and the other calls
  // of the response still run.
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  return { text: typeof text === "string" ? text : JSON.stringify(String(value)), input: {} };
}

// Reads the tool calls out of a provider response: an OpenAI chat completion (or its
// `choices[0].message`), an Anthropic message (or its `content` blocks), a Vercel AI SDK
// result (or its `toolCalls`), or a LangChain AIMessage. Returns the format (which decides
// the shape of the results), the assistant's text and the calls.
function ccmReadResponse(response) {
  if (!response || typeof response !== "object" || typeof response === "function") {
    throw ccmArgumentError("runToolCalls needs a provider response: an OpenAI message, an Anthropic message, or an AI SDK result");
  }
  if (Array.isArray(response.choices)) response = response.choices[0]?.message ?? {};
  // The AI SDK's result also has `content` parts, and LangChain's AIMessage may have Anthropic
  // content blocks, so their own tool-call lists are looked at first.
  const aiCalls = Array.isArray(response.toolCalls)
    ? response.toolCalls
    : Array.isArray(response) && response.some((c) => c && typeof c.toolCallId === "string") ? response : null;
  if (aiCalls) {
    return {
      format: "ai-sdk",
      text: typeof response.text === "string" ? response.text : "",
      calls: aiCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, ...ccmArguments(c.input !== undefined ? c.input : c.args) })),
    };
  }
  if (Array.isArray(response.tool_calls)) {
    const calls = response.tool_calls.filter((c) => c && (c.function || typeof c.name === "string"));
    // LangChain's AIMessage has `tool_calls: [{ id, name, args }]`; OpenAI's has `function`.
    const langchain = calls.length > 0 && calls.every((c) => !c.function);
    return {
      format: langchain ? "langchain" : "openai",
      text: typeof response.content === "string" ? response.content : "",
      calls: calls.map((c, index) => (c.function
        ? { id: c.id, name: c.function.name, ...ccmArguments(c.function.arguments) }
        : { id: c.id ?? `call_${index}`, name: c.name, ...ccmArguments(c.args) })),
    };
  }
  const blocks = Array.isArray(response) ? response : Array.isArray(response.content) ? response.content : null;
  if (blocks) {
    return {
      format: "anthropic",
      text: blocks.filter((b) => b && b.type === "text").map((b) => b.text).join(""),
      calls: blocks.filter((b) => b && b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, ...ccmArguments(b.input) })),
    };
  }
  if (typeof response.content === "string" || response.content === null) {
    // An OpenAI (or LangChain) answer without tool calls: nothing to run.
    return { format: "openai", text: response.content ?? "", calls: [] };
  }
  throw ccmArgumentError("runToolCalls: the response has no tool calls in a known shape (OpenAI `tool_calls`, Anthropic `tool_use` blocks, AI SDK `toolCalls`)");
}

// The results in the shape the response's format sends them back in.
function ccmResultMessages(format, results) {
  if (results.length === 0) return [];
  switch (format) {
    case "anthropic":
      return [{
        role: "user",
        content: results.map((r) => ({
          type: "tool_result", tool_use_id: r.id, content: r.content, ...(r.ok ? {} : { is_error: true }),
        })),
      }];
    case "ai-sdk":
      return [{
        role: "tool",
        content: results.map((r) => ({
          type: "tool-result", toolCallId: r.id, toolName: r.name, output: { type: "json", value: r.value },
        })),
      }];
    default:
      return results.map((r) => ({ role: "tool", tool_call_id: r.id, content: r.content }));
  }
}

Session.prototype.runToolCalls = async function (response, options) {
  options = ccmAdapterOptions("runToolCalls", options, ["summarize"]);
  const { format, text, calls } = ccmReadResponse(response);
  const summarize = options.summarize;
  if (summarize !== undefined && typeof summarize !== "function") {
    throw ccmArgumentError("runToolCalls: `summarize` must be a function that returns the summary text");
  }
  const results = [];
  const outcomes = [];
  for (const call of calls) {
    // A name that is not text is the model's mistake in this one call: it is answered as an
    // unknown tool (an error result), and the other calls of the response still run.
    const name = typeof call.name === "string" ? call.name : "";
    // A stored session reads the raw log an expansion or a reopening needs first.
    await this.__ccmLoadLogsForCall("runToolCalls", name, call.text);
    let outcome;
    if (name === "close_effort" && summarize) {
      const args = call.input;
      outcome = await this.closeEffortWith({
        id: typeof args.id === "string" ? args.id : undefined,
        summary: typeof args.summary === "string" ? args.summary : undefined,
        summarize,
      });
    } else {
      outcome = this.executeTool(name, call.text);
    }
    outcomes.push(outcome);
    results.push({ id: call.id, name: call.name, ok: outcome.ok, value: outcome.result, content: JSON.stringify(outcome.result) });
  }
  if (calls.length > 0 && this.inTurn) {
    ccmRoundsOf(this).push({ text, calls, results });
  }
  return {
    format,
    outcomes,
    banners: outcomes.map((o) => o.banner).filter((b) => typeof b === "string"),
    messages: ccmResultMessages(format, results),
  };
};

// The opening user block ccm-provider puts before a conversation that starts with the
// assistant, and the prefix of a system message in the middle (as it sends them).
const CCM_CONVERSATION_START = "(The conversation so far follows.)";
const CCM_SYSTEM_NOTE = "[System note]\n";

function ccmOpenAIMessages(plan, rounds) {
  const messages = plan.messages.map((m) => ({ role: m.role, content: m.content }));
  for (const round of rounds) {
    // Text content, empty beside tool calls when the model wrote none: OpenAI accepts it,
    // and clients that read these messages (LangChain's) require a string.
    messages.push({
      role: "assistant",
      content: round.text,
      tool_calls: round.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.text } })),
    });
    for (const r of round.results) messages.push({ role: "tool", tool_call_id: r.id, content: r.content });
  }
  return messages;
}

function ccmAnthropicMessages(plan, rounds) {
  let start = 0;
  const system = [];
  while (start < plan.messages.length && plan.messages[start].role === "system") {
    if (plan.messages[start].content.trim() !== "") system.push(plan.messages[start].content);
    start += 1;
  }
  const messages = [];
  const add = (role, blocks) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) {
      // Tool results must come first in a user message that follows a `tool_use`.
      const merged = [...last.content, ...blocks];
      last.content = [...merged.filter((b) => b.type === "tool_result"), ...merged.filter((b) => b.type !== "tool_result")];
    } else {
      messages.push({ role, content: blocks });
    }
  };
  const text = (value) => (value.trim() === "" ? [] : [{ type: "text", text: value }]);
  for (const m of plan.messages.slice(start)) {
    if (m.role === "system") add("user", text(m.content).map((b) => ({ type: "text", text: CCM_SYSTEM_NOTE + b.text })));
    else add(m.role, text(m.content));
  }
  for (const round of rounds) {
    add("assistant", [...text(round.text), ...round.calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: c.input }))]);
    add("user", round.results.map((r) => ({ type: "tool_result", tool_use_id: r.id, content: r.content, ...(r.ok ? {} : { is_error: true }) })));
  }
  if (messages.length > 0 && messages[0].role !== "user") {
    messages.unshift({ role: "user", content: [{ type: "text", text: CCM_CONVERSATION_START }] });
  }
  return { system: system.join("\n\n"), messages };
}

// The AI SDK (5 and later) takes leading system text as a separate option and refuses system
// messages inside `messages` by default, so a later system message becomes a user message
// with the note prefix, as ccm-provider sends it to Anthropic. The option is `instructions`
// in ai 7 and `system` before (ai 7 still reads `system`, when `instructions` is absent); an
// SDK ignores an option it does not know, so with only one name an older `ai` sent every
// request without CCM's system prompt, silently. Both names carry the same text, so each
// version reads it once.
function ccmAiSdkMessages(plan, rounds) {
  let start = 0;
  const instructions = [];
  while (start < plan.messages.length && plan.messages[start].role === "system") {
    if (plan.messages[start].content.trim() !== "") instructions.push(plan.messages[start].content);
    start += 1;
  }
  const messages = plan.messages.slice(start).map((m) => (m.role === "system"
    ? { role: "user", content: CCM_SYSTEM_NOTE + m.content }
    : { role: m.role, content: m.content }));
  for (const round of rounds) {
    messages.push({
      role: "assistant",
      content: [
        ...(round.text === "" ? [] : [{ type: "text", text: round.text }]),
        ...round.calls.map((c) => ({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: c.input })),
      ],
    });
    messages.push({
      role: "tool",
      content: round.results.map((r) => ({ type: "tool-result", toolCallId: r.id, toolName: r.name, output: { type: "json", value: r.value } })),
    });
  }
  const system = instructions.join("\n\n");
  return { instructions: system, system, messages };
}

Session.prototype.contextMessages = function (options) {
  const format = ccmAdapterOptions("contextMessages", options, ["format"]).format ?? "openai";
  const rounds = this.inTurn ? ccmRoundsOf(this) : [];
  const plan = this.buildContext();
  switch (format) {
    case "openai":
      return ccmOpenAIMessages(plan, rounds);
    case "anthropic":
      return ccmAnthropicMessages(plan, rounds);
    case "ai-sdk":
      return ccmAiSdkMessages(plan, rounds);
    default:
      throw ccmArgumentError(`contextMessages: unknown format ${JSON.stringify(format)}; expected "openai", "anthropic" or "ai-sdk"`);
  }
};

// `runTurn` as an async iterator. The turn starts when `streamTurn` is called (a wrong argument
// is refused there, synchronously, and a wrong option makes the first `next()` throw, with
// runTurn's own message). The events come from runTurn's own callbacks (`onText`, `onRetry`,
// `onToolCall`) as they happen; the turn's banners are known when it has ended, so they are
// yielded then, before `done`. Leaving the loop before its `done` event (`break`, `return()`,
// `throw()`, even before the first `next()`) cancels the turn: one still running is aborted, and
// one that has already ended inside the module (the offline model answers at once) is taken
// back, as if it had never run: the session, its records to save and its revision are as before
// the turn. The loop exits once the session is restored. A turn whose `done` was yielded stays.
Session.prototype.streamTurn = function (userText, options) {
  if (typeof userText !== "string") {
    const what = userText === null ? "null" : Array.isArray(userText) ? "an array" : typeof userText === "bigint" ? "a BigInt" : `a ${typeof userText}`;
    throw ccmArgumentError(`streamTurn: userText must be a string, got ${what}`);
  }
  if (options !== undefined && (options === null || typeof options !== "object" || Array.isArray(options))) {
    const what = options === null ? "null" : Array.isArray(options) ? "an array" : typeof options === "bigint" ? "a BigInt" : `a ${typeof options}`;
    throw ccmArgumentError(`streamTurn: options must be an object, got ${what}`);
  }
  if (__ccmIsFreed(this)) {
    throw __ccmCodedError("freed", "streamTurn: this Session was freed (free() was called on it), so it can no longer be used");
  }
  options = options ?? {};
  for (const callback of ["onText", "onRetry", "onToolCall"]) {
    if (options[callback] !== undefined && typeof options[callback] !== "function") {
      throw ccmArgumentError(`streamTurn: options.${callback} must be a function`);
    }
  }
  const queue = [];
  let wake = null;
  const push = (event) => {
    queue.push(event);
    if (wake) {
      wake();
      wake = null;
    }
  };
  const controller = new AbortController();
  const outer = options.signal;
  if (outer && typeof outer.addEventListener === "function") {
    if (outer.aborted) controller.abort();
    else outer.addEventListener("abort", () => controller.abort(), { once: true });
  }
  let settled = false;
  // Whether the turn ended with a result, and whether its `done` event reached the loop: a turn
  // that ended but was never delivered is taken back when the loop is left.
  let succeeded = false;
  let delivered = false;
  const session = this;
  // `__ccmRunStreamedTurn` is runTurn keeping a copy of the session from before the turn until
  // `__ccmSettleStreamedTurn` takes the turn back or accepts it (npm/ccm's session.rs).
  const turn = this.__ccmRunStreamedTurn(userText, {
    ...options,
    signal: controller.signal,
    onText(text) {
      options.onText?.(text);
      push({ type: "text", text });
    },
    onRetry(retry) {
      options.onRetry?.(retry);
      push({ type: "retry", retry });
    },
    onToolCall(call) {
      options.onToolCall?.(call);
      push({ type: "tool_call", call });
    },
  }).then(
    (result) => {
      settled = true;
      succeeded = true;
      for (const banner of result.report.banners) push({ type: "banner", banner });
      push({ type: "done", result });
    },
    (error) => {
      settled = true;
      push({ type: "error", error });
    },
  );
  // Leaving the loop: a turn still running is aborted, and the loop waits until runTurn has
  // restored the session; a turn that has ended but whose `done` was not delivered is taken
  // back. Either way the copy of the session kept for it is released, so that when the loop is
  // left (or `return()` resolves) the session is as before the turn and holds no extra memory.
  let finished = false;
  const cancel = async () => {
    if (finished) return;
    finished = true;
    if (!settled) controller.abort();
    await turn.catch(() => {});
    try {
      if (!__ccmIsFreed(session)) session.__ccmSettleStreamedTurn(succeeded && !delivered);
    } catch {
      // The module stopped (reload_required) while the turn ran: the turn's own error, or the
      // next call, says so; leaving the loop must not throw a second time.
    }
  };
  const events = (async function* () {
    try {
      for (;;) {
        while (queue.length > 0) {
          const event = queue.shift();
          if (event.type === "error") throw event.error;
          if (event.type === "done") {
            // The turn is the loop's once `done` is handed over, even if the loop stops there.
            delivered = true;
            session.__ccmSettleStreamedTurn(false);
          }
          yield event;
          if (event.type === "done") return;
        }
        await new Promise((resolve) => {
          wake = resolve;
        });
      }
    } finally {
      await cancel();
    }
  })();
  // An async generator's `return()` before its first `next()` never runs its `finally`, so the
  // iterator is wrapped: leaving it at any point, even before the first event, cancels.
  return {
    next: (value) => events.next(value),
    async return(value) {
      await cancel();
      return events.return(value);
    },
    async throw(error) {
      await cancel();
      return events.throw(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
    // `await using` (where the runtime has it) cancels like leaving the loop.
    ...(typeof Symbol.asyncDispose === "symbol" ? { async [Symbol.asyncDispose]() { await this.return(); } } : {}),
  };
};
