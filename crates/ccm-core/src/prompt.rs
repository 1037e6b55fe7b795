//! The system prompt: who the model is, how to use the effort tools, and how memory works.

/// The opening paragraph used when the configuration gives none.
pub const DEFAULT_PREAMBLE: &str = "You are a helpful assistant. The conversation is organised \
into efforts: focused pieces of work with a natural end. You manage them with tools, and the \
context you see is managed for you as described below.";

/// Guidance for every effort tool. Kept next to the tool definitions' descriptions in spirit:
/// the definitions say what a tool does, this says when to call it.
pub const TOOL_GUIDANCE: &str = "## Efforts

### open_effort
Call when the user starts a focused piece of work (\"let's work on…\", \"help me with…\"). \
Several efforts can be open; the new one becomes active and receives the following messages.

### close_effort
Call only when the user says the work is done or resolved. Write a short summary that keeps \
decisions, facts, identifiers and open questions; it replaces the full conversation in context.

### switch_effort
Call when the user wants to go back to another open effort.

### reopen_effort
Call when the user wants to continue a concluded effort.

### expand_effort
Call when the user asks about details of a concluded effort that its summary cannot answer. \
It loads the full conversation back temporarily.

### collapse_effort
Call when the user is done reviewing an expanded effort, or moves on to another topic. \
Expanded efforts also collapse by themselves after a few turns without a mention.

### effort_status
Call to see which efforts are open, active, expanded, concluded or out of memory.";

/// The memory section of slice 4: tells the model that not every summary is shown and how to
/// find the others.
pub const MEMORY_SECTION: &str = "## Memory

Concluded effort summaries shown below are only the recently referenced ones, and only the most \
recent general chat is shown. Everything older is still stored: search_efforts(query) finds past \
efforts and the messages that match (verbatim, dated), recall(query) brings such messages back \
for a while, expand_effort(id) loads an effort's full log. [Recalled …] messages are earlier ones \
that match the user's message. The full logs of open efforts come last, with the active effort's \
log at the very end.";

/// Builds the system prompt from an optional preamble override.
pub fn system_prompt(preamble: Option<&str>) -> String {
    format!(
        "{}\n\n{}\n\n{}",
        preamble.unwrap_or(DEFAULT_PREAMBLE).trim(),
        TOOL_GUIDANCE,
        MEMORY_SECTION
    )
}

/// The context line that stands for a concluded effort.
pub fn summary_line(id: &str, summary: &str) -> String {
    format!("[Concluded effort: {id}] {summary}")
}

/// The header that introduces an effort's raw log in a context. It does not say whether the
/// effort is open or expanded, so it can be counted once, when the effort is opened.
pub fn effort_header(id: &str, name: &str, description: Option<&str>) -> String {
    match description {
        Some(d) if !d.trim().is_empty() => {
            format!(
                "[Effort log: {id}] {name} ({}). The messages that follow belong to this effort.",
                d.trim()
            )
        }
        _ => format!("[Effort log: {id}] {name}. The messages that follow belong to this effort."),
    }
}
