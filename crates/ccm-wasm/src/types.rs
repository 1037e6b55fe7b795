//! TypeScript declarations of the plain objects the bindings return.
//!
//! They are the core's serde shapes (snake_case fields, exactly the JSON a model receives as a
//! tool result and an export contains), converted by [`to_js`]. The core crate has no wasm
//! dependency, so its types cannot derive `Tsify`; the declarations below are written by hand
//! next to the one conversion function. Every closed set is a union of string literals, and no
//! declaration uses `any`: the package test type-checks the README's examples and a file of
//! type assertions (`npm/ccm/test/types.ts`) with `tsc --strict` against them, and compares
//! the shapes with values the package really returns. `ToolResults` (each tool's name and the
//! type of its result) is checked against the core's tool table by a test below.

use crate::error::{Code, Failure};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The declarations up to the entries of `ToolResults`.
#[allow(dead_code)] // Read by the custom section only; see `joined`.
const DECLARATIONS_BEFORE_TOOL_RESULTS: &str = r#"
/** Where an effort is. */
export type EffortState = "active" | "open" | "expanded" | "concluded" | "evicted";

/** Result of `openEffort`. */
export interface Opened { id: string; open_efforts: string[]; }
/** Result of `closeEffort`. */
export interface Concluded {
    id: string;
    summary: string;
    summary_source: "provided" | "extractive";
    /** Tokens of the raw log that left the context. */
    raw_tokens: number;
    /** Tokens of the summary line that entered it. */
    summary_tokens: number;
    /** The effort active afterwards: concluding the active effort while others stay open makes
     * the first of them active. Absent when no effort is active. */
    now_active?: string;
}
/** Result of `reopenEffort`. */
export interface Reopened { id: string; raw_tokens: number; }
/** Result of `expandEffort`. */
export interface Expanded { id: string; tokens_loaded: number; }
/** Result of `collapseEffort`. */
export interface Collapsed { id: string; tokens_freed: number; }
/** Result of `switchEffort`. */
export interface Switched { id: string; previous: string | null; }

/** One effort in `effortStatus()`. */
export interface EffortStatusEntry {
    id: string;
    name: string;
    state: EffortState;
    raw_tokens: number;
    summary_tokens?: number;
    turns_until_auto_collapse?: number;
    turns_until_eviction?: number;
}
/** Result of `effortStatus()`. */
export interface StatusReport {
    turn: number;
    active: string | null;
    efforts: EffortStatusEntry[];
    evicted_count: number;
    expansion_tokens: number;
}
/** One hit of `searchEfforts`. */
export interface SearchHit {
    id: string;
    name: string;
    /** The state before this search brought it back into working memory. */
    state: EffortState;
    summary: string;
    score: number;
    matched: string[];
    /** Whether the query matched what the effort is about (id, name, summary) rather than only
     * words said in its log; only such hits count as references and return to working memory. */
    about: boolean;
    raw_tokens: number;
}
/** One stored message of the evidence a search or a recall shows. */
export interface EvidenceMessage {
    seq: number;
    /** `user` for a passage of an attachment. */
    role: "user" | "assistant";
    turn: number;
    /** When it was stored (ms since the Unix epoch; 0 when the host passed no time). */
    at_ms: number;
    /** The text exactly as stored. */
    text: string;
}
/** Neighbouring messages of one log shown together: a matching message with the one before
 * and after it. */
export interface EvidenceExcerpt {
    /** Its item id in a context plan: `recall:<seq>`. */
    id: string;
    turn: number;
    /** The day its first message was stored, e.g. `8 May 2023` (UTC); absent when unknown. */
    date?: string;
    score: number;
    matched: string[];
    messages: EvidenceMessage[];
    /** Tokens it takes, its header line included. */
    tokens: number;
}
/** Where a group of evidence is stored. */
export type EvidenceLog =
    | { kind: "effort"; id: string; name: string; state: EffortState }
    | { kind: "ambient" }
    | { kind: "attachment"; id: string; name: string };
/** The excerpts of one log, in the order they were said. */
export interface EvidenceGroup { log: EvidenceLog; excerpts: EvidenceExcerpt[]; }
/** The stored messages that best match a query and are not in the context yet, within the
 * session's `evidenceTokenBudget`: `findMessages`, and `SearchResults.evidence`. */
export interface Evidence {
    groups: EvidenceGroup[];
    tokens: number;
    /** Matching messages not shown: over the budget, or already in the context. */
    more: number;
    /** Present (true) while the index of a session opened from storage is being rebuilt:
     * older messages may be missing (`await session.prepareRecall()` completes it). */
    incomplete?: boolean;
}
/** Result of `searchEfforts` and `findEfforts`. */
export interface SearchResults { query: string; results: SearchHit[]; evidence: Evidence; }
/** What a `search_efforts` tool call gives the model: the efforts (a summary only for those the
 * query is about) and the matching messages, one line each, compact. */
export interface SearchResultsForModel {
    query: string;
    results: (Omit<SearchHit, "summary"> & { summary?: string })[];
    messages: ({ effort: string; state: EffortState } | { log: "ambient" } | { attachment: string; name: string }) & {
        excerpts: { date?: string; lines: string[] }[];
    }[];
    more_matching_messages?: number;
    note?: string;
}
/** Result of `recall`: the excerpts now in the context. */
export interface Recalled {
    query: string;
    excerpts: EvidenceGroup[];
    tokens_loaded: number;
    turns_until_auto_collapse: number;
}
/** What a `recall` tool call gives the model (the excerpts themselves are in the context). */
export interface RecalledForModel {
    query: string;
    recalled: (({ effort: string; state: EffortState } | { log: "ambient" } | { attachment: string; name: string }) & { turn: number; date?: string; messages: number })[];
    tokens_loaded: number;
    turns_until_auto_collapse: number;
}

/** The report each effort tool gives the model when it succeeds. */
export interface ToolResults {"#;

/// The declarations from the end of `ToolResults` up to the members of the `Provider` union.
#[allow(dead_code)] // Read by the custom section only; see `joined`.
const DECLARATIONS_BEFORE_PROVIDERS: &str = r#"
}
/** The names of the effort tools. */
export type ToolName = keyof ToolResults;
/** What a refused or malformed tool call gives the model (nothing was changed). */
export interface ToolError { error: string; }
/**
 * What one `executeTool` call did: the tool's report and banner when `ok`, otherwise
 * `{ error }`. Check `ok` (or `name`) to narrow `result`.
 */
export type ToolOutcome =
    | { [Name in ToolName]: {
          name: Name;
          ok: true;
          /** The result for the model: the operation's report. */
          result: ToolResults[Name];
          /** The banner shown to the user (`null` for `effort_status` and `search_efforts`). */
          banner: string | null;
      } }[ToolName]
    | { name: string; ok: false; result: ToolError; banner: null };
/** A tool definition in OpenAI-style function form. */
export interface ToolDefinition { name: ToolName; description: string; parameters: Record<string, unknown>; }

export type EventKind = "opened" | "concluded" | "reopened" | "expanded" | "collapsed" | "auto_collapsed" | "switched" | "evicted" | "evicted_over_budget" | "recalled" | "recall_decayed";
export interface EffortEvent { kind: EventKind; effort: string; tokens: number; }
/** One point of the token curve, recorded at the end of every turn. */
export interface TurnMetrics {
    turn: number;
    context_tokens: number;
    expansion_tokens: number;
    expansion_overhead: number;
    naive_tokens: number;
    savings_vs_naive: number;
    next_context_tokens: number;
    summaries_in_memory: number;
    ambient_messages_in_memory: number;
    expanded: string[];
    open_efforts: number;
    evicted_efforts: number;
    events: EffortEvent[];
}
/** Result of `endTurn`. */
export interface TurnReport {
    turn: number;
    /** The effort the exchange was stored in, or null for the ambient log. */
    routed_to: string | null;
    banners: string[];
    metrics: TurnMetrics;
}

export type Section = "system" | "summary" | "ambient" | "expanded" | "open" | "raw_log" | "pending" | "attachment" | "rolling" | "recalled";
export type PinKind = "sticky" | "leased" | "ephemeral";
export type InclusionReason =
    | { code: "system_prompt" }
    | { code: "recently_referenced"; turns_since_reference: number; turns_until_eviction: number }
    | { code: "ambient_window" }
    | { code: "expanded"; turns_since_reference: number; turns_until_auto_collapse: number }
    | { code: "open_effort" }
    | { code: "active_effort" }
    | { code: "current_user_message" }
    | { code: "pinned"; kind: PinKind; pin: number }
    | { code: "auto_retrieved"; score: number; matched: string[] }
    | { code: "auto_expanded"; score: number }
    | { code: "attachment"; mode: "full" | "compressed" }
    | { code: "rolling_summary"; covers: string }
    | { code: "recalled"; query: string; turns_since_reference: number; turns_until_auto_collapse: number }
    | { code: "auto_recalled"; score: number; matched: string[] };
export type ExclusionReason =
    | "expanded" | "summarized" | "decayed" | "evicted_unreferenced" | "evicted_over_budget"
    | "outside_ambient_window" | "over_ambient_budget"
    | "over_budget" | "ttl_expired" | "mode_off" | "superseded" | "not_loaded"
    | "compacted_level_2" | "compacted_level_3" | "dependency_excluded" | "over_recall_budget";
/** How long an included item stays without a new reference. */
export type TtlState =
    | { kind: "decay"; turns: number }
    | { kind: "eviction"; turns: number }
    | { kind: "lease"; turns: number }
    | { kind: "task"; effort: string }
    | { kind: "ephemeral" }
    | { kind: "permanent" };
export interface IncludedItem {
    id: string;
    section: Section;
    tokens: number;
    reason: InclusionReason;
    /** Fill tier: 0 is filled first; higher tiers give way under budget pressure. */
    priority: number;
    ttl: TtlState;
    depends_on: string[];
    /** Activation score in thousandths. */
    activation: number;
    /** Turns (or exchanges) the item holds: a plan never splits one. */
    atoms: number;
    first_message: number;
    message_count: number;
}
export interface ExcludedItem { id: string; section: Section; tokens: number; count: number; reason: ExclusionReason; }
export interface PlanTotals {
    context_tokens: number;
    system_tokens: number;
    summary_tokens: number;
    ambient_tokens: number;
    expansion_tokens: number;
    open_tokens: number;
    pending_tokens: number;
    pinned_tokens: number;
    auto_tokens: number;
    attachment_tokens: number;
    rolling_tokens: number;
    /** Recalled excerpts: the `recall` tool's and the automatic recall's. */
    recall_tokens: number;
    naive_tokens: number;
    excluded_tokens: number;
}
export type ContextMode = "off" | "light" | "heavy";
export interface Budget {
    context_window: number;
    reserved_output_tokens: number;
    request_budget: number;
    leased_budget: number;
    leased_used: number;
    mandatory_over_budget: boolean;
}
export interface BudgetMeter {
    mode: ContextMode;
    auto_items: number;
    auto_tokens: number;
    percent_of_budget: number;
    /** For example `CTX Light · 3 auto items · +1.2k tokens · 61% of budget`. */
    line: string;
}
export interface ContextMessage { role: "system" | "user" | "assistant"; content: string; }
/** Result of `buildContext()`: the messages to send and why every candidate is in or out. */
export interface ContextPlan {
    plan_id: string;
    /** Hash of the messages alone: what a replay of the recipe reproduces. */
    request_hash: string;
    turn: number;
    mode: ContextMode;
    budget: Budget;
    included: IncludedItem[];
    excluded: ExcludedItem[];
    totals: PlanTotals;
    meter: BudgetMeter;
    /** How to rebuild the messages from stored records. */
    recipe: unknown[];
    messages: ContextMessage[];
}
/** A pin: an item kept in context. */
export interface Pin {
    id: number;
    /** `summary:<effort>`, `effort:<effort>` or `ambient:<turn>`. */
    target: string;
    kind: PinKind;
    origin: "user" | "model" | "auto";
    lease?: { scope: "turns"; remaining: number } | { scope: "task"; effort: string };
    created_turn: number;
    references: number;
}
/** What changed between two requests. */
export interface PlanDiff {
    entered: { id: string; tokens: number; why: string }[];
    left: { id: string; tokens: number; why: string }[];
    changed: { id: string; tokens: number; why: string }[];
    token_delta: number;
}
/** One turn's telemetry: its requests, tool calls and the diff against the previous turn. */
export interface TurnTelemetry {
    turn: number;
    requests: {
        plan_id: string;
        request_hash: string;
        estimated_prompt_tokens: number;
        reported_prompt_tokens: number | null;
        included: { id: string; tokens: number; why: InclusionReason["code"] }[];
        excluded: ExcludedItem[];
        recipe: unknown[];
    }[];
    /** The tool calls; `result` is the JSON text sent back to the model (cut at 2,000 bytes). */
    tools: { name: string; arguments: string; ok: boolean; result: string }[];
    diff: PlanDiff;
}
/** How the turn engine handled one tool call of `runTurn`. */
export type ToolHandling =
    | "executed"
    | "closed_with_model_summary"
    | "closed_with_requested_summary"
    | "closed_with_fallback_summary"
    | "ignored_in_forced_answer";
/** One handled tool call of a turn. */
export interface ToolTraceEntry {
    /** The turn request whose answer contained the call (1 for the first). */
    round: number;
    call_id: string;
    /** The tool's name as the model wrote it. */
    name: string;
    /** The arguments exactly as the model wrote them. */
    arguments: string;
    handling: ToolHandling;
    ok: boolean;
    /** The result sent back to the model; `null` for a call that was ignored. */
    result: ToolResults[ToolName] | ToolError | null;
    banner: string | null;
}
/** Why the model stopped: `stop`, `tool_calls`, `length`, or another reason as the provider spelled it. */
export type FinishReason = "stop" | "tool_calls" | "length" | { other: string };
/** Why a request of `runTurn` was made. */
export type RequestPurpose =
    | { kind: "turn"; round: number; final_answer_forced: boolean }
    | { kind: "summary"; effort_id: string }
    | { kind: "rolling_summary" };
/** Everything recorded about one request of `runTurn`. */
export interface TurnRequest {
    purpose: RequestPurpose;
    /** The context plan it was built from (turn requests only). */
    plan_id: string | null;
    /** How many times it was sent. */
    attempts: number;
    /** The local estimate of its prompt, counted with the session's counter. */
    estimate: {
        context_tokens: number;
        turn_extra_tokens: number;
        estimated_prompt_tokens: number;
        tool_definition_tokens: number;
    };
    /** The token counts the provider reported, if it did. */
    usage: { prompt_tokens: number; completion_tokens: number } | null;
    /** The estimate next to the provider's prompt count. */
    reconciliation: {
        estimated_prompt_tokens: number;
        reported_prompt_tokens: number;
        difference: number;
        ratio: number | null;
    } | null;
    /** The attempts that failed and were retried. */
    retries: { attempt: number; error: string; delay_ms: number }[];
    outcome:
        | { status: "pending" }
        | { status: "answered"; text_chars: number; tool_calls: number; finish_reason: FinishReason }
        | { status: "failed"; error: string };
}
/** Result of `runTurn`. */
export interface TurnResult {
    /** What the person sees: the operations' banners, the model's text, then decay banners. */
    reply: string;
    /** The model's final text, stored as the turn's assistant message. */
    model_text: string;
    report: TurnReport;
    /** Every request of the turn (summary requests included), with usage and retries. */
    requests: TurnRequest[];
    tool_calls: ToolTraceEntry[];
    tool_rounds: number;
    final_answer_forced: boolean;
}
/** A retry `runTurn` is about to wait for. */
export interface RetryNotice { delay_ms: number; failed_attempt: number; error: string; }
/**
 * Who answers `runTurn`: `"offline"` (the deterministic demo model, no network), a preset, or
 * any server at a `baseUrl` by its protocol's `"…_compatible"` name.
 */
export type Provider ="#;

/// The declarations after the members of the `Provider` union.
#[allow(dead_code)] // Read by the custom section only; see `joined`.
const DECLARATIONS_AFTER_PROVIDERS: &str = r#";
/** Where `SessionStore` keeps sessions. */
export type StorageBackend = "indexeddb" | "localstorage" | "files" | "postgres" | "host";
/** The `code` of every `Error` the package throws. */
export type ErrorCode =
    | "config" | "effort" | "turn" | "snapshot" | "conflict" | "quota" | "blocked"
    | "version_change" | "unavailable" | "not_found" | "storage" | "busy" | "counter"
    | "argument" | "provider" | "cancelled" | "import" | "pin" | "branch" | "attachment"
    | "table" | "network" | "too_large" | "freed" | "reload_required" | "memory_budget"
    | "session_full";
/**
 * The errors the package throws: an `Error` with a `code` to branch on. A failed `runTurn`
 * also carries the person's text in `userText` (and `cancelled`), so it can be sent again. A
 * `memory_budget` refusal carries the budget it enforced (`budget`, in bytes) and what the
 * session (or, for the module's own limit, every session together) held (`footprint`). A
 * `session_full` refusal (a message, answer or attachment that would take what the session
 * stores past the most its export may hold and still be imported) carries that limit in
 * characters (`limit`); the session can still be read, exported and searched.
 */
export interface CcmError extends Error {
    code: ErrorCode;
    userText?: string;
    cancelled?: boolean;
    budget?: number;
    footprint?: number;
    limit?: number;
}
/** One branch of `branches()`. */
export interface BranchInfo { name: string; parent?: string; fork_turn?: number; }
export interface DecayReport {
    auto_collapses: number;
    manual_collapses: number;
    avg_expansion_duration: number;
    manual_vs_auto_collapse: number;
    false_decay_rate: number;
    tokens_saved_by_decay: number;
}
/** Result of `metrics()`. */
export interface SessionMetrics {
    turn: number;
    /** The loaded metrics points (a session opened from storage loads the newest 500). */
    history: TurnMetrics[];
    /** Older points that are stored but not loaded. */
    history_offset: number;
    decay: DecayReport;
    /** Tokens of the working context now. */
    working_tokens: number;
    /** Tokens of everything stored: the context without CCM. */
    naive_tokens: number;
    stored_messages: number;
    counted_with: string;
}
/** The versioned session document (`format: "ccm-session"`), as `toJSON()` returns it. */
export interface SessionDocument { format: "ccm-session"; version: number; [field: string]: unknown; }
"#;

/// The declarations joined when this crate is compiled: a custom section must be a constant,
/// the tool names and result types are the core's tool table and the provider names are
/// ccm-provider's constant, so both lists are written from their sources and cannot drift.
pub(crate) mod joined {
    // The custom section is their only reader: a native build leaves it out, and in a wasm
    // build wasm-bindgen reads them from an unnamed static the dead-code lint does not follow.
    #![allow(dead_code)]

    use super::{
        DECLARATIONS_AFTER_PROVIDERS, DECLARATIONS_BEFORE_PROVIDERS,
        DECLARATIONS_BEFORE_TOOL_RESULTS,
    };
    use ccm_core::tools::{Tool, BUILTIN};

    /// One entry of `ToolResults`, around a tool's name and its result type.
    const ENTRY_START: &str = "\n    ";
    const ENTRY_MIDDLE: &str = ": ";
    const ENTRY_END: &str = ";";

    /// One member of the `Provider` union, around a provider's name.
    const MEMBER_START: &str = "\n    | \"";
    const MEMBER_END: &str = "\"";

    /// The tools whose results `ToolResults` types: the core's table, so that a tool added
    /// there is typed here without an edit.
    const TOOLS: &[Tool] = BUILTIN;

    /// The provider names the `Provider` union lists: ccm-provider's, so that a preset or a
    /// protocol added there is typed here without an edit.
    const PROVIDER_NAMES: &[&str] = &ccm_browser::provider::ProviderName::NAMES;

    /// The length of [`RESULT_TYPES`], which the bytes below need before they are written.
    const RESULT_TYPES_LEN: usize = write_result_types(&mut []);

    /// [`RESULT_TYPES`] as bytes. Only compilation reads them (the text below refers to them), so
    /// the array is never copied at run time.
    #[allow(clippy::large_const_arrays)]
    const RESULT_TYPES_BYTES: [u8; RESULT_TYPES_LEN] = {
        let mut bytes = [0; RESULT_TYPES_LEN];
        write_result_types(&mut bytes);
        bytes
    };

    /// Every declaration of this file, the entries of `ToolResults` and the members of the
    /// `Provider` union included.
    pub(crate) const RESULT_TYPES: &str = match std::str::from_utf8(&RESULT_TYPES_BYTES) {
        Ok(text) => text,
        Err(_) => panic!("the declarations are UTF-8, as their pieces are"),
    };

    /// Writes the declarations into `out` (nothing when it is empty, to measure them) and returns
    /// their length: the text before `ToolResults`' entries, one entry per tool, the text before
    /// the union, one member per provider name, the text after.
    const fn write_result_types(out: &mut [u8]) -> usize {
        let mut at = write_piece(out, 0, DECLARATIONS_BEFORE_TOOL_RESULTS);
        let mut tool = 0;
        while tool < TOOLS.len() {
            at = write_piece(out, at, ENTRY_START);
            at = write_piece(out, at, TOOLS[tool].name);
            at = write_piece(out, at, ENTRY_MIDDLE);
            at = write_piece(out, at, TOOLS[tool].result_type);
            at = write_piece(out, at, ENTRY_END);
            tool += 1;
        }
        at = write_piece(out, at, DECLARATIONS_BEFORE_PROVIDERS);
        let mut name = 0;
        while name < PROVIDER_NAMES.len() {
            at = write_piece(out, at, MEMBER_START);
            at = write_piece(out, at, PROVIDER_NAMES[name]);
            at = write_piece(out, at, MEMBER_END);
            name += 1;
        }
        write_piece(out, at, DECLARATIONS_AFTER_PROVIDERS)
    }

    /// Copies `piece` into `out` at `at` when `out` has room for the whole text (the measuring
    /// pass gives none), and returns where the next piece starts.
    const fn write_piece(out: &mut [u8], at: usize, piece: &str) -> usize {
        let bytes = piece.as_bytes();
        if !out.is_empty() {
            let mut i = 0;
            while i < bytes.len() {
                out[at + i] = bytes[i];
                i += 1;
            }
        }
        at + bytes.len()
    }
}

#[wasm_bindgen(typescript_custom_section)]
const RESULT_TYPES_TS: &str = joined::RESULT_TYPES;

#[wasm_bindgen]
extern "C" {
    /// A pin.
    #[wasm_bindgen(typescript_type = "Pin")]
    pub type JsPin;
    /// Every pin.
    #[wasm_bindgen(typescript_type = "Pin[]")]
    pub type JsPins;
    /// Recent turns' telemetry.
    #[wasm_bindgen(typescript_type = "TurnTelemetry[]")]
    pub type JsTelemetry;
    /// A branch.
    #[wasm_bindgen(typescript_type = "BranchInfo")]
    pub type JsBranchInfo;
    /// The budget meter.
    #[wasm_bindgen(typescript_type = "BudgetMeter")]
    pub type JsBudgetMeter;
    /// `Opened`.
    #[wasm_bindgen(typescript_type = "Opened")]
    pub type JsOpened;
    /// `Concluded`.
    #[wasm_bindgen(typescript_type = "Concluded")]
    pub type JsConcluded;
    /// `Reopened`.
    #[wasm_bindgen(typescript_type = "Reopened")]
    pub type JsReopened;
    /// `Expanded`.
    #[wasm_bindgen(typescript_type = "Expanded")]
    pub type JsExpanded;
    /// `Collapsed`.
    #[wasm_bindgen(typescript_type = "Collapsed")]
    pub type JsCollapsed;
    /// `Switched`.
    #[wasm_bindgen(typescript_type = "Switched")]
    pub type JsSwitched;
    /// `StatusReport`.
    #[wasm_bindgen(typescript_type = "StatusReport")]
    pub type JsStatusReport;
    /// `Evidence`.
    #[wasm_bindgen(typescript_type = "Evidence")]
    pub type JsEvidence;
    /// `Recalled`.
    #[wasm_bindgen(typescript_type = "Recalled")]
    pub type JsRecalled;
    /// `SearchResults`.
    #[wasm_bindgen(typescript_type = "SearchResults")]
    pub type JsSearchResults;
    /// `ToolOutcome`.
    #[wasm_bindgen(typescript_type = "ToolOutcome")]
    pub type JsToolOutcome;
    /// `ToolDefinition[]`.
    #[wasm_bindgen(typescript_type = "ToolDefinition[]")]
    pub type JsToolDefinitions;
    /// `TurnReport`.
    #[wasm_bindgen(typescript_type = "TurnReport")]
    pub type JsTurnReport;
    /// `ContextPlan`.
    #[wasm_bindgen(typescript_type = "ContextPlan")]
    pub type JsContextPlan;
    /// `SessionMetrics`.
    #[wasm_bindgen(typescript_type = "SessionMetrics")]
    pub type JsSessionMetrics;
    /// `SessionDocument`.
    #[wasm_bindgen(typescript_type = "SessionDocument")]
    pub type JsSessionDocument;
}

/// Converts a core value to a plain JavaScript object typed as `T`.
///
/// JSON-compatible conversion: maps become plain objects, `None` becomes `null` (fields the
/// core skips when empty stay absent), and integers stay numbers (every count and turn is far
/// below 2^53).
pub(crate) fn to_js<S: Serialize + ?Sized, T: JsCast>(value: &S) -> Result<T, Failure> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map(JsCast::unchecked_into)
        .map_err(|e| Failure::new(Code::Argument, format!("could not convert a result: {e}")))
}

/// `ToolResults` is written from the core's tool table (see `joined`); these tests check that
/// the written interface reads back as the table, and that every result type it names is one
/// this file declares, so a tool whose result type is missing or misspelt fails here rather than
/// in a consumer's type check.
#[cfg(test)]
mod tests {
    use ccm_core::tools::BUILTIN;

    /// The declarations, as the custom section takes them.
    fn result_types_ts() -> &'static str {
        super::joined::RESULT_TYPES
    }

    /// The `name: Type;` lines of the declaration `export interface ToolResults { … }`.
    fn tool_results_entries() -> Vec<(String, String)> {
        let start = result_types_ts()
            .find("export interface ToolResults {")
            .expect("the declarations have a ToolResults interface");
        let body = &result_types_ts()[start..];
        // The interface ends at the first `}` that opens a line: an inline object type closes
        // on its own entry's line.
        let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
        body.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (name, ty) = line
                    .trim_end_matches(';')
                    .split_once(':')
                    .unwrap_or_else(|| panic!("a ToolResults line is not `name: Type;`: {line}"));
                (name.trim().to_string(), ty.trim().to_string())
            })
            .collect()
    }

    #[test]
    fn the_typescript_tool_results_match_the_tool_table() {
        let declared = tool_results_entries();
        let table: Vec<(String, String)> = BUILTIN
            .iter()
            .map(|tool| (tool.name.to_string(), tool.result_type.to_string()))
            .collect();
        assert_eq!(
            declared, table,
            "ToolResults as written and the tool table (ccm_core::tools::BUILTIN) disagree"
        );
        let declarations = result_types_ts();
        for tool in BUILTIN {
            let ty = tool.result_type;
            // An inline object type needs no declaration of its own: `tsc --strict` in the
            // package test checks it where it stands.
            let inline = ty.starts_with('{') && ty.ends_with('}');
            assert!(
                inline
                    || declarations.contains(&format!("export interface {ty} "))
                    || declarations.contains(&format!("export type {ty} ")),
                "{}'s result type {ty} is not declared in RESULT_TYPES_TS",
                tool.name
            );
        }
    }
}
