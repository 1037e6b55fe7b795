//! What a host loop with its own model client needs from Rust: the tool definitions in the
//! shape of the SDK it uses (`toolDefinitions({ format })`), and concluding an effort with a
//! summary the host's model writes (`closeEffortWith({ summarize })`), made exactly as
//! `runTurn` makes it (ccm-engine's summary prompt, the same cleaning and the same fallback).
//!
//! The rest of the adapters (message arrays for the SDKs, running a provider response's tool
//! calls, the turn as an async iterator) is data reshaping that lives in the JavaScript glue
//! appended to the module by npm/build (npm/ccm/glue/adapters.js).

use crate::counter::check_counter;
use crate::error::{fail, js_message, Code, Failure, JsResult};
use crate::session::Session;
use crate::types::{to_js, JsToolOutcome};
use ccm_browser::summary::{summary_of_answer, SummaryRequest as EffortSummary};
use ccm_browser::{BrowserError, SessionCell};
use ccm_core::{EffortStatus, ToolDefinition, ToolOutcome};
use js_sys::{Function, Promise, Reflect};
use serde::Serialize;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(typescript_custom_section)]
const ADAPTER_TYPES: &str = r#"
/** The shapes `toolDefinitions` gives the effort tools in. */
export type ToolFormat = "openai" | "anthropic" | "plain";
/** A tool as the OpenAI chat completions API takes it (`tools` of the `openai` SDK). */
export interface OpenAITool {
    type: "function";
    function: { name: ToolName; description: string; parameters: Record<string, unknown>; };
}
/** A tool as the Anthropic messages API takes it (`tools` of `@anthropic-ai/sdk`). */
export interface AnthropicTool {
    name: ToolName;
    description: string;
    input_schema: { type: "object"; [key: string]: unknown; };
}
/** The effort tools in OpenAI's `tools` shape (the default), Anthropic's, or plain `{ name, description, parameters }`. */
export function toolDefinitions(options?: { format?: "openai" }): OpenAITool[];
export function toolDefinitions(options: { format: "anthropic" }): AnthropicTool[];
export function toolDefinitions(options: { format: "plain" }): ToolDefinition[];
export function toolDefinitions(options?: { format?: ToolFormat }): OpenAITool[] | AnthropicTool[] | ToolDefinition[];

/** What a host's model is asked when an effort is concluded: the same request `runTurn` sends. */
export interface SummaryRequest {
    /** The effort being concluded. */
    effort_id: string;
    /** The instructions (a system prompt). */
    system: string;
    /** The effort's log and the request to summarise it (a user message). */
    prompt: string;
    /** `system` and `prompt` as a message array, for clients that take one. */
    messages: { role: "system" | "user"; content: string; }[];
    /** The output limit `runTurn` uses for summaries. */
    max_tokens: number;
}
/** Asks the host's model for a summary and returns its text. */
export type Summarizer = (request: SummaryRequest) => string | Promise<string>;
/** Options of `closeEffortWith`. */
export interface CloseEffortWithOptions {
    /** The open effort to conclude; the active one when omitted. */
    id?: string;
    /** A summary the model already wrote (in its `close_effort` arguments): used as it is, with no request. */
    summary?: string;
    /** Writes the summary with the host's model. */
    summarize: Summarizer;
}
export interface Session {
    /** The effort tools in OpenAI's `tools` shape (the default), Anthropic's, or plain `{ name, description, parameters }`. */
    toolDefinitions(options?: { format?: "openai" }): OpenAITool[];
    toolDefinitions(options: { format: "anthropic" }): AnthropicTool[];
    toolDefinitions(options: { format: "plain" }): ToolDefinition[];
    toolDefinitions(options?: { format?: ToolFormat }): OpenAITool[] | AnthropicTool[] | ToolDefinition[];
    /**
     * Concludes an effort with a summary written by the host's own model, as `runTurn` does:
     * `summarize` gets the summary request and returns the text. When it throws, or returns
     * nothing usable, the effort is concluded with the extractive summary and the banner says
     * why. Resolves to the `close_effort` tool outcome (send `result` back to the model).
     */
    closeEffortWith(options: CloseEffortWithOptions): Promise<ToolOutcome>;
}
"#;

/// The shapes `toolDefinitions` produces.
#[derive(Clone, Copy)]
enum ToolFormat {
    OpenAi,
    Anthropic,
    Plain,
}

/// Reads `{ format }`; omitted (or `undefined`) means OpenAI's shape.
fn tool_format(options: &JsValue) -> Result<ToolFormat, Failure> {
    if options.is_undefined() || options.is_null() {
        return Ok(ToolFormat::OpenAi);
    }
    if !options.is_object() {
        return Err(Failure::new(
            Code::Argument,
            "toolDefinitions: the options must be an object such as { format: \"anthropic\" }",
        ));
    }
    let format = Reflect::get(options, &JsValue::from_str("format")).unwrap_or_default();
    if format.is_undefined() {
        return Ok(ToolFormat::OpenAi);
    }
    match format.as_string().as_deref() {
        Some("openai") => Ok(ToolFormat::OpenAi),
        Some("anthropic") => Ok(ToolFormat::Anthropic),
        Some("plain") => Ok(ToolFormat::Plain),
        other => Err(Failure::new(
            Code::Argument,
            format!(
                "toolDefinitions: unknown format {}; expected \"openai\", \"anthropic\" or \"plain\"",
                other.map_or_else(|| "(not a string)".to_string(), |name| format!("\"{name}\""))
            ),
        )),
    }
}

/// One definition in the requested shape.
fn shaped(definition: ToolDefinition, format: ToolFormat) -> Value {
    match format {
        ToolFormat::OpenAi => json!({
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.parameters,
            },
        }),
        ToolFormat::Anthropic => json!({
            "name": definition.name,
            "description": definition.description,
            "input_schema": definition.parameters,
        }),
        ToolFormat::Plain => json!({
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters,
        }),
    }
}

fn definitions(options: &JsValue) -> JsResult<JsValue> {
    let format = tool_format(options).map_err(fail)?;
    let tools: Vec<Value> = ccm_core::tool_definitions()
        .into_iter()
        .map(|definition| shaped(definition, format))
        .collect();
    to_js(&tools).map_err(fail)
}

/// The effort tools for a model request, in the shape `options.format` names (see the
/// TypeScript overloads in `ADAPTER_TYPES`).
#[wasm_bindgen(js_name = toolDefinitions, skip_typescript)]
pub fn tool_definitions(options: JsValue) -> JsResult<JsValue> {
    definitions(&options)
}

/// The summary request as the host's callback receives it.
#[derive(Serialize)]
struct SummaryRequest {
    effort_id: String,
    system: String,
    prompt: String,
    messages: Vec<Value>,
    max_tokens: u32,
}

impl SummaryRequest {
    fn new(request: EffortSummary) -> SummaryRequest {
        let mut system = String::new();
        let mut prompt = String::new();
        let mut shaped = Vec::new();
        // ccm-browser's summary request is one system and one user message; nothing else is
        // ever in it.
        for (role, text) in request.messages() {
            shaped.push(json!({ "role": role, "content": text }));
            if role == "system" {
                system = text.to_string();
            } else {
                prompt = text.to_string();
            }
        }
        SummaryRequest {
            max_tokens: request.max_tokens(),
            effort_id: request.effort_id,
            system,
            prompt,
            messages: shaped,
        }
    }
}

/// Options of `closeEffortWith`, read from the JavaScript object.
struct CloseWith {
    id: Option<String>,
    summary: Option<String>,
    summarize: Function,
}

fn optional_string(options: &JsValue, field: &str) -> Result<Option<String>, Failure> {
    let value = Reflect::get(options, &JsValue::from_str(field)).unwrap_or_default();
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value.as_string().map(Some).ok_or_else(|| {
        Failure::new(
            Code::Argument,
            format!("closeEffortWith: `{field}` must be a string"),
        )
    })
}

fn close_with_options(options: &JsValue) -> Result<CloseWith, Failure> {
    if !options.is_object() {
        return Err(Failure::new(
            Code::Argument,
            "closeEffortWith needs an object with a `summarize` function",
        ));
    }
    // A misspelt key is refused, as every other options object of the module refuses it.
    let object: &js_sys::Object = options.unchecked_ref();
    for key in js_sys::Object::keys(object).iter() {
        let key = key.as_string().unwrap_or_default();
        if !["id", "summary", "summarize"].contains(&key.as_str()) {
            return Err(Failure::new(
                Code::Argument,
                format!("closeEffortWith: unknown key `{key}` in options; the keys are id, summary, summarize"),
            ));
        }
    }
    let summarize = Reflect::get(options, &JsValue::from_str("summarize"))
        .unwrap_or_default()
        .dyn_into::<Function>()
        .map_err(|_| {
            Failure::new(
                Code::Argument,
                "closeEffortWith: `summarize` must be a function that returns the summary text",
            )
        })?;
    Ok(CloseWith {
        id: optional_string(options, "id")?,
        summary: optional_string(options, "summary")?
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        summarize,
    })
}

/// Marks the session busy while the host's model writes the summary, so that no change slips
/// in between reading the effort's log and concluding it.
struct SummaryGuard(Rc<RefCell<SessionCell>>);

impl Drop for SummaryGuard {
    fn drop(&mut self) {
        if let Ok(mut cell) = self.0.try_borrow_mut() {
            cell.busy = None;
        }
    }
}

fn borrow(cell: &Rc<RefCell<SessionCell>>) -> Result<std::cell::RefMut<'_, SessionCell>, Failure> {
    let state = cell.try_borrow_mut().map_err(|_| {
        Failure::new(
            Code::Busy,
            "the session is in use by a call that has not returned",
        )
    })?;
    if let Some(busy) = state.busy {
        return Err(BrowserError::in_progress(busy).into());
    }
    Ok(state)
}

/// Runs `close_effort` as the model's tool call would, so the outcome (and its banner) is the
/// one `executeTool` gives.
fn close_tool(
    cell: &Rc<RefCell<SessionCell>>,
    id: Option<&str>,
    summary: Option<&str>,
) -> Result<ToolOutcome, Failure> {
    let arguments = json!({ "id": id, "summary": summary }).to_string();
    let outcome = borrow(cell)?.core.execute_tool("close_effort", &arguments);
    check_counter()?;
    Ok(outcome)
}

/// Concludes with the extractive summary, saying why in the banner (as `runTurn` does when a
/// summary request fails).
fn close_with_fallback(
    cell: &Rc<RefCell<SessionCell>>,
    id: &str,
    reason: &str,
) -> Result<ToolOutcome, Failure> {
    let result = borrow(cell)?
        .core
        .close_effort_with_fallback(Some(id), reason);
    check_counter()?;
    Ok(match result {
        // Its banner (which names the reason) reaches the person through the turn's banners,
        // as with runTurn.
        Ok(concluded) => ToolOutcome {
            name: "close_effort".into(),
            ok: true,
            result: serde_json::to_value(&concluded).unwrap_or(Value::Null),
            banner: None,
        },
        Err(error) => ToolOutcome {
            name: "close_effort".into(),
            ok: false,
            result: json!({ "error": error.to_string() }),
            banner: None,
        },
    })
}

async fn close_effort_with(
    cell: Rc<RefCell<SessionCell>>,
    options: CloseWith,
) -> Result<ToolOutcome, Failure> {
    let request = {
        let state = borrow(&cell)?;
        let core = &state.core;
        match core.efforts().resolve(options.id.as_deref()) {
            Ok(effort) if effort.status == EffortStatus::Open => {
                // The turn's own user message is stored in this effort when the turn ends, and
                // often carries the final facts, so the summary sees it (as in ccm-engine).
                let pending = core
                    .pending_user_message()
                    .map(|(text, _)| text)
                    .filter(|_| core.routing_target() == Some(effort.id.as_str()));
                Some(SummaryRequest::new(EffortSummary::for_effort(
                    effort, pending,
                )))
            }
            _ => None,
        }
    };
    let Some(request) = request else {
        // The session gives its precise refusal (unknown id, not open, no active effort) and
        // changes nothing; no summary is asked for an effort that cannot be concluded.
        return close_tool(&cell, options.id.as_deref(), None);
    };
    let effort_id = request.effort_id.clone();
    if let Some(summary) = &options.summary {
        return close_tool(&cell, Some(&effort_id), Some(summary));
    }
    let argument: JsValue = to_js(&request)?;
    let answer = {
        borrow(&cell)?.busy = Some("a summary");
        let _guard = SummaryGuard(cell.clone());
        match options.summarize.call1(&JsValue::NULL, &argument) {
            Ok(value) => JsFuture::from(Promise::resolve(&value))
                .await
                .map_err(|error| format!("the summary callback failed: {}", js_message(&error))),
            Err(error) => Err(format!(
                "the summary callback failed: {}",
                js_message(&error)
            )),
        }
    };
    let summary = answer.and_then(|value| {
        value
            .as_string()
            .and_then(|text| summary_of_answer(&text))
            .ok_or_else(|| "the summary callback returned no text".to_string())
    });
    match summary {
        Ok(summary) => close_tool(&cell, Some(&effort_id), Some(&summary)),
        Err(reason) => close_with_fallback(&cell, &effort_id, &reason),
    }
}

#[wasm_bindgen]
impl Session {
    /// The effort tools for a model request, in the shape `options.format` names.
    #[wasm_bindgen(js_name = toolDefinitions, skip_typescript)]
    pub fn tool_definitions(&self, options: JsValue) -> JsResult<JsValue> {
        definitions(&options)
    }

    /// Concludes an effort with a summary the host's model writes; see `ADAPTER_TYPES`.
    #[wasm_bindgen(js_name = closeEffortWith, skip_typescript)]
    pub fn close_effort_with(&self, options: JsValue) -> Promise {
        let cell = self.inner.cell().clone();
        let options = close_with_options(&options);
        wasm_bindgen_futures::future_to_promise(async move {
            let outcome = close_effort_with(cell, options.map_err(fail)?)
                .await
                .map_err(fail)?;
            let outcome: JsToolOutcome = to_js(&outcome).map_err(fail)?;
            Ok(outcome.into())
        })
    }
}
