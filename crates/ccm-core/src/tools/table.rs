//! The effort tools, one entry each: what the model is told (name, description, argument
//! schema), what it gets back (the TypeScript type of the result), what the call needs before
//! it can run, and the handler that runs it.
//!
//! A new tool is a new entry here, listed in [`BUILTIN`], and its handler below it. Nothing
//! else names it: the engine, the store and the offline model ask the table what a tool needs,
//! and the package's TypeScript `ToolResults` is written from the entries' result types.

use super::{parse_args, Needs, Runs, Tool, ToolReply};
use crate::error::ToolError;
use crate::pins::{PinKind, PinOrigin, PinRequest};
use crate::session::Session;
use serde::Deserialize;
use serde_json::{json, Value};

/// Every effort tool, in the order they are offered to the model. A slice, so that a new entry
/// is one line here and no count changes.
pub const BUILTIN: &[Tool] = &[
    OPEN_EFFORT,
    CLOSE_EFFORT,
    SWITCH_EFFORT,
    REOPEN_EFFORT,
    EXPAND_EFFORT,
    COLLAPSE_EFFORT,
    EFFORT_STATUS,
    SEARCH_EFFORTS,
    RECALL,
    PIN_CONTEXT,
    UNPIN_CONTEXT,
];

fn id_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// The report an effort operation gives, with the banner the operation recorded: every
/// operation records its banner on the session, and reading it back from there keeps one
/// source of truth for banner texts.
fn recorded<T: serde::Serialize>(session: &mut Session, report: &T) -> ToolReply {
    (to_value(report), session.last_banner.take())
}

fn to_value<T: serde::Serialize>(report: &T) -> Value {
    serde_json::to_value(report).expect("tool reports contain only serialisable data")
}

#[derive(Deserialize)]
struct IdArgs {
    id: String,
}

fn id_argument(tool: &str, args: &str) -> Result<String, ToolError> {
    Ok(parse_args::<IdArgs>(tool, args)?.id)
}

/// `open_effort`.
pub const OPEN_EFFORT: Tool = Tool {
    name: "open_effort",
    description: "Start a new effort: a focused piece of work with a natural end. Call when the user starts working on something specific. The new effort becomes active and receives the following messages; several efforts can be open.",
    properties: || {
        json!({
            "name": {"type": "string", "description": "Short name of the effort, e.g. 'auth bug'. Its id is derived from it."},
            "description": {"type": "string", "description": "Optional one-line description of the goal."}
        })
    },
    required: &["name"],
    result_type: "Opened",
    needs: Needs::Nothing,
    runs: Runs::Session(open_effort),
};

fn open_effort(session: &mut Session, args: &str) -> Result<ToolReply, ToolError> {
    #[derive(Deserialize)]
    struct OpenArgs {
        name: String,
        #[serde(default)]
        description: Option<String>,
    }
    let a: OpenArgs = parse_args(OPEN_EFFORT.name, args)?;
    let opened = session.open_effort(&a.name, a.description.as_deref())?;
    Ok(recorded(session, &opened))
}

/// `close_effort`.
pub const CLOSE_EFFORT: Tool = Tool {
    name: "close_effort",
    description: "Conclude an open effort when the user says it is done. Its full conversation leaves the context and the summary takes its place.",
    properties: || {
        json!({
            "id": id_schema("Id of the open effort to conclude. Defaults to the active effort."),
            "summary": {"type": "string", "description": "Summary that keeps decisions, facts, identifiers and open questions. If omitted, one is written for you from the effort's conversation."}
        })
    },
    required: &[],
    result_type: "Concluded",
    needs: Needs::ModelSummary,
    runs: Runs::Session(close_effort),
};

fn close_effort(session: &mut Session, args: &str) -> Result<ToolReply, ToolError> {
    #[derive(Deserialize)]
    struct CloseArgs {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Option<String>,
    }
    let a: CloseArgs = parse_args(CLOSE_EFFORT.name, args)?;
    let concluded = session.close_effort(a.id.as_deref(), a.summary.as_deref())?;
    Ok(recorded(session, &concluded))
}

/// `switch_effort`.
pub const SWITCH_EFFORT: Tool = Tool {
    name: "switch_effort",
    description:
        "Make another open effort the active one, so new messages go to it. Both stay in context.",
    properties: || json!({"id": id_schema("Id of the open effort to switch to.")}),
    required: &["id"],
    result_type: "Switched",
    needs: Needs::Nothing,
    runs: Runs::Session(|session, args| {
        let switched = session.switch_effort(&id_argument(SWITCH_EFFORT.name, args)?)?;
        Ok(recorded(session, &switched))
    }),
};

/// `reopen_effort`.
pub const REOPEN_EFFORT: Tool = Tool {
    name: "reopen_effort",
    description: "Reopen a concluded effort to continue working on it; it becomes active with its full conversation in context.",
    properties: || json!({"id": id_schema("Id of the concluded effort to reopen.")}),
    required: &["id"],
    result_type: "Reopened",
    needs: Needs::EffortLog,
    runs: Runs::Session(|session, args| {
        let reopened = session.reopen_effort(&id_argument(REOPEN_EFFORT.name, args)?)?;
        Ok(recorded(session, &reopened))
    }),
};

/// `expand_effort`.
pub const EXPAND_EFFORT: Tool = Tool {
    name: "expand_effort",
    description: "Load a concluded effort's full conversation back into context temporarily, to answer questions its summary cannot.",
    properties: || json!({"id": id_schema("Id of the concluded effort to expand.")}),
    required: &["id"],
    result_type: "Expanded",
    needs: Needs::EffortLog,
    runs: Runs::Session(|session, args| {
        let expanded = session.expand_effort(&id_argument(EXPAND_EFFORT.name, args)?)?;
        Ok(recorded(session, &expanded))
    }),
};

/// `collapse_effort`.
pub const COLLAPSE_EFFORT: Tool = Tool {
    name: "collapse_effort",
    description:
        "Remove an expanded effort's full conversation from context; its summary stands in again.",
    properties: || json!({"id": id_schema("Id of the expanded effort to collapse.")}),
    required: &["id"],
    result_type: "Collapsed",
    needs: Needs::Nothing,
    runs: Runs::Session(|session, args| {
        let collapsed = session.collapse_effort(&id_argument(COLLAPSE_EFFORT.name, args)?)?;
        Ok(recorded(session, &collapsed))
    }),
};

/// `effort_status`: no banner, since it changes nothing.
pub const EFFORT_STATUS: Tool = Tool {
    name: "effort_status",
    description: "List the efforts in working memory (open, active, expanded, concluded) with token sizes, and how many are out of memory.",
    properties: || json!({}),
    required: &[],
    result_type: "StatusReport",
    needs: Needs::Nothing,
    runs: Runs::Session(|session, args| {
        parse_args::<Value>(EFFORT_STATUS.name, args)?;
        Ok((to_value(&session.effort_status()), None))
    }),
};

#[derive(Deserialize)]
struct QueryArgs {
    query: String,
}

/// `search_efforts`: no banner; the efforts it brings back announce themselves when they are
/// referenced.
pub const SEARCH_EFFORTS: Tool = Tool {
    name: "search_efforts",
    description: "Search everything said before that is not in the context: past efforts by topic (with their summaries), and the stored messages that best match, shown verbatim with when they were said, from effort logs, the general chat and attachments. Use when the user asks about something not shown in the context.",
    properties: || {
        json!({"query": {"type": "string", "description": "What to search for: the user's question or its key words (names, topics, numbers)"}})
    },
    required: &["query"],
    result_type: "SearchResultsForModel",
    needs: Needs::FoundMessages,
    runs: Runs::Session(|session, args| {
        let a: QueryArgs = parse_args(SEARCH_EFFORTS.name, args)?;
        Ok((session.search_efforts(&a.query)?.for_model(), None))
    }),
};

/// `recall`.
pub const RECALL: Tool = Tool {
    name: "recall",
    description: "Bring the stored messages that best match a query back into the context: each matching message with the one before and after it, instead of a whole effort log. They stay while the conversation refers to them and leave by themselves after a few turns without a mention. Use it to work with details said long ago.",
    properties: || {
        json!({
            "query": {"type": "string", "description": "What to recall: the question or its key words"},
            "effort": {"type": "string", "description": "Optional: only this effort's log (its id), or 'ambient' for the general chat."}
        })
    },
    required: &["query"],
    result_type: "RecalledForModel",
    needs: Needs::RecalledMessages,
    runs: Runs::Session(recall),
};

fn recall(session: &mut Session, args: &str) -> Result<ToolReply, ToolError> {
    #[derive(Deserialize)]
    struct RecallArgs {
        query: String,
        #[serde(default)]
        effort: Option<String>,
    }
    let a: RecallArgs = parse_args(RECALL.name, args)?;
    let recalled = session.recall(&a.query, a.effort.as_deref())?.for_model();
    Ok((recalled, session.last_banner.take()))
}

/// `pin_context`: a lease, since pins the model makes are never sticky.
pub const PIN_CONTEXT: Tool = Tool {
    name: "pin_context",
    description: "Keep an item in context for a while even if it would otherwise leave: a summary (summary:<effort id>), an effort's full log (effort:<effort id>) or an ambient exchange (ambient:<turn>). The lease counts down only on turns where the item is included.",
    properties: || {
        json!({
            "target": {"type": "string", "description": "summary:<effort id>, effort:<effort id> or ambient:<turn>"},
            "ttl_turns": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Included turns the lease lasts (default 5)."},
            "task": {"type": "string", "description": "Instead of a turn count: keep it while this open effort stays open."}
        })
    },
    required: &["target"],
    result_type: "Pin",
    needs: Needs::Nothing,
    runs: Runs::Session(pin_context),
};

fn pin_context(session: &mut Session, args: &str) -> Result<ToolReply, ToolError> {
    #[derive(Deserialize)]
    struct PinArgs {
        target: String,
        #[serde(default)]
        ttl_turns: Option<u32>,
        #[serde(default)]
        task: Option<String>,
    }
    let a: PinArgs = parse_args(PIN_CONTEXT.name, args)?;
    let request = PinRequest {
        target: a.target,
        kind: PinKind::Leased,
        ttl_turns: a.ttl_turns,
        task: a.task,
    };
    let pin = session.pin(request, PinOrigin::Model)?;
    Ok(recorded(session, &pin))
}

/// `unpin_context`: only leases the model made; the person's pins are theirs.
pub const UNPIN_CONTEXT: Tool = Tool {
    name: "unpin_context",
    description:
        "End a lease made with pin_context. Pins made by the user cannot be removed by the model.",
    properties: || json!({"target": {"type": "string", "description": "The pinned target (or pin:<n>)."}}),
    required: &["target"],
    result_type: "Pin",
    needs: Needs::Nothing,
    runs: Runs::Session(|session, args| {
        #[derive(Deserialize)]
        struct TargetArgs {
            target: String,
        }
        let a: TargetArgs = parse_args(UNPIN_CONTEXT.name, args)?;
        let pin = session.unpin(&a.target, PinOrigin::Model)?;
        Ok(recorded(session, &pin))
    }),
};
