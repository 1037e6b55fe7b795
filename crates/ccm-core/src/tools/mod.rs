//! The effort tools as data: one table of entries (`table.rs`), each with what the model is
//! told (name, description, JSON Schema of the arguments), the TypeScript type of its result,
//! what the call needs before it can run (a stored log, stored messages, a text the model
//! writes) and who runs it (the session, through the entry's handler, or the host). The turn
//! engine, the store and the offline model read the table instead of matching names, so a
//! misspelt name is a compile error rather than a call that silently needs nothing.
//!
//! Architecture invariant: a tool call that fails returns `{"error": "..."}`, changes nothing
//! and produces no banner.

mod table;

use crate::components::Efforts;
use crate::error::ToolError;
use crate::model::{LogState, ToolDefinition};
use crate::session::Session;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

pub use table::{
    BUILTIN, CLOSE_EFFORT, COLLAPSE_EFFORT, EFFORT_STATUS, EXPAND_EFFORT, OPEN_EFFORT, PIN_CONTEXT,
    RECALL, REOPEN_EFFORT, SEARCH_EFFORTS, SWITCH_EFFORT, UNPIN_CONTEXT,
};

/// The names of the built-in tools as constants, for code that matches on a name (a `match`
/// arm cannot read a field of a table entry). Each is its entry's name, so it cannot drift.
pub mod name {
    use super::table;

    /// [`table::OPEN_EFFORT`]'s name.
    pub const OPEN_EFFORT: &str = table::OPEN_EFFORT.name;
    /// [`table::CLOSE_EFFORT`]'s name.
    pub const CLOSE_EFFORT: &str = table::CLOSE_EFFORT.name;
    /// [`table::SWITCH_EFFORT`]'s name.
    pub const SWITCH_EFFORT: &str = table::SWITCH_EFFORT.name;
    /// [`table::REOPEN_EFFORT`]'s name.
    pub const REOPEN_EFFORT: &str = table::REOPEN_EFFORT.name;
    /// [`table::EXPAND_EFFORT`]'s name.
    pub const EXPAND_EFFORT: &str = table::EXPAND_EFFORT.name;
    /// [`table::COLLAPSE_EFFORT`]'s name.
    pub const COLLAPSE_EFFORT: &str = table::COLLAPSE_EFFORT.name;
    /// [`table::EFFORT_STATUS`]'s name.
    pub const EFFORT_STATUS: &str = table::EFFORT_STATUS.name;
    /// [`table::SEARCH_EFFORTS`]'s name.
    pub const SEARCH_EFFORTS: &str = table::SEARCH_EFFORTS.name;
    /// [`table::RECALL`]'s name.
    pub const RECALL: &str = table::RECALL.name;
    /// [`table::PIN_CONTEXT`]'s name.
    pub const PIN_CONTEXT: &str = table::PIN_CONTEXT.name;
    /// [`table::UNPIN_CONTEXT`]'s name.
    pub const UNPIN_CONTEXT: &str = table::UNPIN_CONTEXT.name;
}

/// Names of every built-in tool, in the order they are offered.
pub const TOOL_NAMES: [&str; BUILTIN.len()] = names_of::<{ BUILTIN.len() }>(BUILTIN);

/// The names of the first `N` of `tools` (all of them, as `TOOL_NAMES` calls it).
const fn names_of<const N: usize>(tools: &[Tool]) -> [&'static str; N] {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = tools[i].name;
        i += 1;
    }
    names
}

/// What a handler gives back: the result for the model, and the banner for the person (none
/// for a call that changes nothing they would see).
pub type ToolReply = (Value, Option<String>);

/// Runs a tool call on the session with the call's JSON arguments (read them with
/// [`parse_args`]). An error is the model's `{"error": "..."}`; the handler must then have
/// changed nothing.
pub type ToolHandler = fn(&mut Session, &str) -> Result<ToolReply, ToolError>;

/// What a tool call needs before it can run, beyond the session in memory. A host that opened
/// the session from a store reads the stored records first (the engine asks for them with a
/// `Step::Load`); the engine asks the model for a text a call needs and did not bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: the session in memory is enough.
    Nothing,
    /// The stored raw log of the effort its `id` argument names
    /// ([`logs_needed`]).
    EffortLog,
    /// The stored messages a search for its `query` argument shows, from every log
    /// ([`Session::messages_needed_for_tool`]).
    FoundMessages,
    /// The stored messages a recall of its `query` argument shows, from the log its `effort`
    /// argument names or every log, the automatic recall's excerpts included.
    RecalledMessages,
    /// An effort's summary written by the model: when the call's arguments carry none, the
    /// turn engine asks the model for one before the call runs.
    ModelSummary,
}

/// Who runs a tool's calls.
#[derive(Debug, Clone, Copy)]
pub enum Runs {
    /// The session, with this handler.
    Session(ToolHandler),
    /// The host (a command-line tool, a JavaScript application): the turn engine hands the
    /// call over (`Step::RunTool`) and stores the host's result like any other
    /// ([`Session::record_host_tool_result`]). The session itself refuses to run it.
    Host,
}

/// One entry of the tool table.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The function name the model calls.
    pub name: &'static str,
    /// When the model should call it.
    pub description: &'static str,
    /// The JSON Schema properties of its arguments object.
    pub properties: fn() -> Value,
    /// The properties the model must give.
    pub required: &'static [&'static str],
    /// The TypeScript type of a successful result: a type the npm package declares
    /// (`ccm-wasm/src/types.rs`) or an inline object type. The package's `ToolResults` entry
    /// for the tool is written from it.
    pub result_type: &'static str,
    /// What a call needs before it can run.
    pub needs: Needs,
    /// Who runs it.
    pub runs: Runs,
}

impl Tool {
    /// The definition sent to the model: OpenAI-style function form, its arguments one object
    /// with no properties beyond the schema's.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: json!({
                "type": "object",
                "properties": (self.properties)(),
                "required": self.required,
                "additionalProperties": false,
            }),
        }
    }

    /// Whether the host runs its calls rather than the session.
    pub fn runs_in_host(&self) -> bool {
        matches!(self.runs, Runs::Host)
    }
}

/// The built-in entry named `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static Tool> {
    BUILTIN.iter().find(|tool| tool.name == name)
}

/// Efforts whose raw logs a tool call needs but are not loaded (for a tool whose table entry
/// needs [`Needs::EffortLog`]), read from `session.efforts()`. A host that opened the session
/// from a store reads these logs and attaches them
/// ([`Session::attach_effort_log`]) before executing the call.
pub fn logs_needed(efforts: &Efforts, name: &str, args_json: &str) -> Vec<String> {
    if needs_of(name) != Needs::EffortLog {
        return Vec::new();
    }
    let id = serde_json::from_str::<Value>(args_json)
        .ok()
        .and_then(|v| v.get("id")?.as_str().map(str::to_string));
    id.and_then(|id| {
        efforts
            .get(&id)
            .or_else(|| efforts.get(&crate::text::slugify(&id)))
    })
    .filter(|e| e.log != LogState::Loaded)
    .map(|e| vec![e.id.clone()])
    .unwrap_or_default()
}

/// What a call of `name` needs before it can run; [`Needs::Nothing`] for a name the built-in
/// table does not have (its call fails as an unknown tool without reading anything).
pub fn needs_of(name: &str) -> Needs {
    builtin(name).map_or(Needs::Nothing, |tool| tool.needs)
}

/// The tools offered in a turn: the built-in table, and the entries a host adds (its own tools,
/// run by the session with their handler or by the host).
#[derive(Debug, Clone, Default)]
pub struct Tools {
    added: Vec<Tool>,
}

impl Tools {
    /// The built-in tools only.
    pub fn builtin() -> Tools {
        Tools::default()
    }

    /// These tools and `tool`, offered after them.
    ///
    /// # Errors
    /// [`ToolError::NameTaken`] when a tool of that name is already offered: the model could
    /// not tell the two apart.
    pub fn with(mut self, tool: Tool) -> Result<Tools, ToolError> {
        if self.get(tool.name).is_some() {
            return Err(ToolError::NameTaken {
                name: tool.name.to_string(),
            });
        }
        self.added.push(tool);
        Ok(self)
    }

    /// Every entry, in the order they are offered.
    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        BUILTIN.iter().chain(&self.added)
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.iter().find(|tool| tool.name == name)
    }

    /// The definitions sent to the model, in order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.iter().map(Tool::definition).collect()
    }

    /// Executes a tool call by name with its JSON arguments, as [`Session::execute_tool`] does
    /// for the built-in tools. A host's tool is refused: its call goes to the host.
    pub fn execute(&self, session: &mut Session, name: &str, args_json: &str) -> ToolOutcome {
        let outcome = self.execute_untraced(session, name, args_json);
        session.trace_tool(name, args_json, outcome.ok, &outcome.result_json());
        outcome
    }

    fn execute_untraced(&self, session: &mut Session, name: &str, args_json: &str) -> ToolOutcome {
        // Handlers read the banner their operation recorded; one left from before must not be
        // taken for theirs.
        session.last_banner = None;
        let reply = match self.get(name).map(|tool| tool.runs) {
            Some(Runs::Session(handler)) => handler(session, args_json),
            Some(Runs::Host) => Err(ToolError::RunsInHost {
                name: name.to_string(),
            }),
            None => Err(ToolError::UnknownTool {
                name: name.to_string(),
                available: self.iter().map(|t| t.name).collect::<Vec<_>>().join(", "),
            }),
        };
        match reply {
            Ok((result, banner)) => {
                // The operation may have changed what the context shows; the automatic
                // recall of the turn chooses again around it.
                session.refresh_auto_recall();
                ToolOutcome {
                    name: name.to_string(),
                    ok: true,
                    result,
                    banner,
                }
            }
            Err(error) => failed(name, error.to_string()),
        }
    }
}

fn failed(name: &str, error: String) -> ToolOutcome {
    ToolOutcome {
        name: name.to_string(),
        ok: false,
        result: json!({ "error": error }),
        banner: None,
    }
}

/// The definitions of every built-in tool, in OpenAI-style function form (name, description,
/// JSON Schema parameters).
pub fn tool_definitions() -> Vec<ToolDefinition> {
    BUILTIN.iter().map(Tool::definition).collect()
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
        Tools::builtin().execute(self, name, args_json)
    }

    /// Records the result of a call the host ran (a tool whose entry [`Runs::Host`]) the way
    /// a call the session runs is recorded, in the turn's tool trace, and returns it as an
    /// outcome: `Ok` is the result for the model, `Err` the reason it failed, which the model
    /// receives as `{"error": "..."}`. A host's result has no banner.
    pub fn record_host_tool_result(
        &mut self,
        name: &str,
        args_json: &str,
        result: Result<Value, String>,
    ) -> ToolOutcome {
        let outcome = match result {
            Ok(result) => ToolOutcome {
                name: name.to_string(),
                ok: true,
                result,
                banner: None,
            },
            Err(reason) => failed(name, reason),
        };
        self.trace_tool(name, args_json, outcome.ok, &outcome.result_json());
        outcome
    }
}

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

/// Parses a tool's arguments: a handler's first step. Models send an empty string or `null` for "no arguments"; both are
/// read as `{}`. Unknown fields are ignored, because models add them often and they change
/// nothing; a missing or mistyped field is an error.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args_json: &str) -> Result<T, ToolError> {
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
