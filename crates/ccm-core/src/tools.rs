//! The effort tools as the model sees them: definitions with JSON schemas, and dispatch by name
//! with JSON arguments.
//!
//! Architecture invariant: a tool call that fails returns `{"error": "..."}`, changes nothing
//! and produces no banner.

use crate::error::ToolError;
use crate::model::ToolDefinition;
use crate::session::Session;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// Names of every tool, in the order they are offered.
pub const TOOL_NAMES: [&str; 11] = [
    "open_effort",
    "close_effort",
    "switch_effort",
    "reopen_effort",
    "expand_effort",
    "collapse_effort",
    "effort_status",
    "search_efforts",
    "recall",
    "pin_context",
    "unpin_context",
];

/// What one tool call did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolOutcome {
    /// The tool that was called.
    pub name: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// The result for the model: the operation's report, or `{"error": "..."}`.
    pub result: Value,
    /// The banner shown to the user, on success only.
    pub banner: Option<String>,
}

impl ToolOutcome {
    /// The result as compact JSON text, as sent back to the model.
    pub fn result_json(&self) -> String {
        self.result.to_string()
    }
}

fn id_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> ToolDefinition {
    ToolDefinition {
        name: name.to_string(),
        description: description.to_string(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

/// The definitions of every effort tool, in OpenAI-style function form (name, description,
/// JSON Schema parameters).
pub fn tool_definitions() -> Vec<ToolDefinition> {
    vec![
        tool(
            "open_effort",
            "Start a new effort: a focused piece of work with a natural end. Call when the user starts working on something specific. The new effort becomes active and receives the following messages; several efforts can be open.",
            json!({
                "name": {"type": "string", "description": "Short name of the effort, e.g. 'auth bug'. Its id is derived from it."},
                "description": {"type": "string", "description": "Optional one-line description of the goal."}
            }),
            &["name"],
        ),
        tool(
            "close_effort",
            "Conclude an open effort when the user says it is done. Its full conversation leaves the context and the summary takes its place.",
            json!({
                "id": id_schema("Id of the open effort to conclude. Defaults to the active effort."),
                "summary": {"type": "string", "description": "Summary that keeps decisions, facts, identifiers and open questions. If omitted, one is written for you from the effort's conversation."}
            }),
            &[],
        ),
        tool(
            "switch_effort",
            "Make another open effort the active one, so new messages go to it. Both stay in context.",
            json!({"id": id_schema("Id of the open effort to switch to.")}),
            &["id"],
        ),
        tool(
            "reopen_effort",
            "Reopen a concluded effort to continue working on it; it becomes active with its full conversation in context.",
            json!({"id": id_schema("Id of the concluded effort to reopen.")}),
            &["id"],
        ),
        tool(
            "expand_effort",
            "Load a concluded effort's full conversation back into context temporarily, to answer questions its summary cannot.",
            json!({"id": id_schema("Id of the concluded effort to expand.")}),
            &["id"],
        ),
        tool(
            "collapse_effort",
            "Remove an expanded effort's full conversation from context; its summary stands in again.",
            json!({"id": id_schema("Id of the expanded effort to collapse.")}),
            &["id"],
        ),
        tool(
            "effort_status",
            "List the efforts in working memory (open, active, expanded, concluded) with token sizes, and how many are out of memory.",
            json!({}),
            &[],
        ),
        tool(
            "search_efforts",
            "Search everything said before that is not in the context: past efforts by topic (with their summaries), and the stored messages that best match, shown verbatim with when they were said, from effort logs, the general chat and attachments. Use when the user asks about something not shown in the context.",
            json!({"query": {"type": "string", "description": "What to search for: the user's question or its key words (names, topics, numbers)"}}),
            &["query"],
        ),
        tool(
            "recall",
            "Bring the stored messages that best match a query back into the context: each matching message with the one before and after it, instead of a whole effort log. They stay while the conversation refers to them and leave by themselves after a few turns without a mention. Use it to work with details said long ago.",
            json!({
                "query": {"type": "string", "description": "What to recall: the question or its key words"},
                "effort": {"type": "string", "description": "Optional: only this effort's log (its id), or 'ambient' for the general chat."}
            }),
            &["query"],
        ),
        tool(
            "pin_context",
            "Keep an item in context for a while even if it would otherwise leave: a summary (summary:<effort id>), an effort's full log (effort:<effort id>) or an ambient exchange (ambient:<turn>). The lease counts down only on turns where the item is included.",
            json!({
                "target": {"type": "string", "description": "summary:<effort id>, effort:<effort id> or ambient:<turn>"},
                "ttl_turns": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Included turns the lease lasts (default 5)."},
                "task": {"type": "string", "description": "Instead of a turn count: keep it while this open effort stays open."}
            }),
            &["target"],
        ),
        tool(
            "unpin_context",
            "End a lease made with pin_context. Pins made by the user cannot be removed by the model.",
            json!({"target": {"type": "string", "description": "The pinned target (or pin:<n>)."}}),
            &["target"],
        ),
    ]
}

#[derive(Deserialize)]
struct OpenArgs {
    name: String,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct CloseArgs {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
struct IdArgs {
    id: String,
}

#[derive(Deserialize)]
struct QueryArgs {
    query: String,
}

#[derive(Deserialize)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    effort: Option<String>,
}

#[derive(Deserialize)]
struct PinArgs {
    target: String,
    #[serde(default)]
    ttl_turns: Option<u32>,
    #[serde(default)]
    task: Option<String>,
}

#[derive(Deserialize)]
struct TargetArgs {
    target: String,
}

/// Parses tool arguments. Models send an empty string or `null` for "no arguments"; both are
/// read as `{}`. Unknown fields are ignored, because models add them often and they change
/// nothing; a missing or mistyped field is an error.
fn parse_args<T: DeserializeOwned>(tool: &str, args_json: &str) -> Result<T, ToolError> {
    let invalid = |reason: String| ToolError::InvalidArguments {
        tool: tool.to_string(),
        reason,
    };
    let trimmed = args_json.trim();
    let value: Value = if trimmed.is_empty() || trimmed == "null" {
        json!({})
    } else {
        serde_json::from_str(trimmed).map_err(|e| invalid(format!("not valid JSON ({e})")))?
    };
    if !value.is_object() {
        return Err(invalid(format!(
            "expected a JSON object, got {}",
            kind_of(&value)
        )));
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn report<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("tool reports contain only serialisable data")
}

impl Session {
    /// Executes a tool call by name with its JSON arguments. Never panics on bad input: an
    /// unknown tool, malformed arguments or a refused operation give an outcome with
    /// `ok: false`, a result `{"error": "..."}` for the model, no banner, and an unchanged
    /// session.
    ///
    /// # Examples
    /// ```
    /// use ccm_core::{Config, Session};
    /// let mut session = Session::new(Config::default()).unwrap();
    /// let outcome = session.execute_tool("open_effort", r#"{"name": "auth bug"}"#);
    /// assert!(outcome.ok);
    /// assert_eq!(outcome.banner.as_deref(), Some("--- Started effort: auth-bug ---"));
    /// let refused = session.execute_tool("expand_effort", r#"{"id": "auth-bug"}"#);
    /// assert!(!refused.ok);
    /// assert!(refused.result["error"].as_str().unwrap().contains("open"));
    /// ```
    pub fn execute_tool(&mut self, name: &str, args_json: &str) -> ToolOutcome {
        let outcome = self.execute_untraced(name, args_json);
        self.trace_tool(name, args_json, outcome.ok, &outcome.result_json());
        outcome
    }

    fn execute_untraced(&mut self, name: &str, args_json: &str) -> ToolOutcome {
        match self.dispatch(name, args_json) {
            Ok((result, banner)) => {
                // The operation may have changed what the context shows; the automatic
                // recall of the turn chooses again around it.
                self.refresh_auto_recall();
                ToolOutcome {
                    name: name.to_string(),
                    ok: true,
                    result,
                    banner,
                }
            }
            Err(error) => ToolOutcome {
                name: name.to_string(),
                ok: false,
                result: json!({"error": error.to_string()}),
                banner: None,
            },
        }
    }

    fn dispatch(&mut self, name: &str, args: &str) -> Result<(Value, Option<String>), ToolError> {
        // Every operation records its banner; reading it back from there keeps one source of
        // truth for banner texts.
        self.last_banner = None;
        let value = match name {
            "open_effort" => {
                let a: OpenArgs = parse_args(name, args)?;
                report(&self.open_effort(&a.name, a.description.as_deref())?)
            }
            "close_effort" => {
                let a: CloseArgs = parse_args(name, args)?;
                report(&self.close_effort(a.id.as_deref(), a.summary.as_deref())?)
            }
            "switch_effort" => report(&self.switch_effort(&parse_args::<IdArgs>(name, args)?.id)?),
            "reopen_effort" => report(&self.reopen_effort(&parse_args::<IdArgs>(name, args)?.id)?),
            "expand_effort" => report(&self.expand_effort(&parse_args::<IdArgs>(name, args)?.id)?),
            "collapse_effort" => {
                report(&self.collapse_effort(&parse_args::<IdArgs>(name, args)?.id)?)
            }
            "effort_status" => {
                parse_args::<Value>(name, args)?;
                return Ok((report(&self.effort_status()), None));
            }
            "search_efforts" => {
                let a: QueryArgs = parse_args(name, args)?;
                return Ok((self.search_efforts(&a.query)?.for_model(), None));
            }
            "recall" => {
                let a: RecallArgs = parse_args(name, args)?;
                self.recall(&a.query, a.effort.as_deref())?.for_model()
            }
            "pin_context" => {
                let a: PinArgs = parse_args(name, args)?;
                let request = crate::pins::PinRequest {
                    target: a.target,
                    kind: crate::pins::PinKind::Leased,
                    ttl_turns: a.ttl_turns,
                    task: a.task,
                };
                let pin = self.pin(request, crate::pins::PinOrigin::Model)?;
                let banner = format!("--- Pinned: {} (lease) ---", pin.target);
                return Ok((report(&pin), Some(banner)));
            }
            "unpin_context" => {
                let a: TargetArgs = parse_args(name, args)?;
                let pin = self.unpin(&a.target, crate::pins::PinOrigin::Model)?;
                let banner = format!("--- Unpinned: {} ---", pin.target);
                return Ok((report(&pin), Some(banner)));
            }
            other => {
                return Err(ToolError::UnknownTool {
                    name: other.to_string(),
                    available: TOOL_NAMES.join(", "),
                })
            }
        };
        Ok((value, self.last_banner.take()))
    }
}
