//! The `Session` class: a conversation under Cognitive Context Management.
//!
//! Every method is a delegation to `ccm_core::Session`; results are plain objects (no handles
//! to free), errors are thrown `Error`s with the core's message (see `error.rs`).

use crate::args::{arg, check_document_values, counter_arg, Limits, Size};
use crate::counter::{check_counter, counter_for};
use crate::engine::{self, JsTurnResult, UndoSlot};
use crate::error::{fail, Code, Failure, JsResult};
use crate::memory::JsMemoryFootprint;
use crate::options::SessionOptions;
use crate::types::*;
use ccm_browser::{BrowserError, BrowserSession, SessionCell};
use ccm_core::Session as CoreSession;
use js_sys::Promise;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefMut};
use tsify::Tsify;
use wasm_bindgen::prelude::*;

/// Arguments of `closeEffort`.
#[derive(Debug, Default, Clone, Tsify, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseEffortArgs {
    /// The open effort to conclude; the active one when omitted.
    #[tsify(optional)]
    pub id: Option<String>,
    /// The summary that replaces the raw log; the extractive summary when omitted.
    #[tsify(optional)]
    pub summary: Option<String>,
}

#[derive(Serialize)]
struct SessionMetrics<'a> {
    turn: u64,
    history: &'a [ccm_core::TurnMetrics],
    history_offset: u64,
    decay: ccm_core::DecayReport,
    working_tokens: u64,
    naive_tokens: u64,
    stored_messages: usize,
    counted_with: &'a str,
}

/// A conversation whose working context CCM keeps small, explainable and lossless.
///
/// Drive it turn by turn: `beginTurn(userText)`, any effort operations (directly, or the
/// model's tool calls through `executeTool`), `buildContext()` for the messages to send, then
/// `endTurn(assistantText)`. Or let `runTurn` do all of it against a model.
///
/// ```ts
/// const session = new Session();
/// session.beginTurn("Let's work on the auth bug: 401 after an hour.");
/// session.openEffort("auth bug");
/// session.endTurn("The refresh token probably expires early.");
/// ```
///
/// Results are plain objects; nothing needs `free()` for correctness (the object is released
/// by the garbage collector; `free()` only releases its memory sooner).
#[wasm_bindgen]
pub struct Session {
    /// The session with its store link, load problems and busy mark (ccm-browser's).
    pub(crate) inner: BrowserSession,
    /// The size limits of texts given to this object (session options, not stored).
    limits: Cell<Limits>,
    /// This session's memory budget in bytes; `None` follows `setDefaultMemoryBudget`.
    memory_budget: Cell<Option<u64>>,
    /// The session before the last turn `streamTurn` ran, until its loop accepts or takes back
    /// the turn, or anything changes the session (see `engine::TurnUndo`).
    pub(crate) turn_undo: UndoSlot,
}

impl Session {
    /// The JavaScript object of a browser session, with the default size limits.
    pub(crate) fn wrap(inner: BrowserSession) -> Session {
        Session {
            inner,
            limits: Cell::new(Limits::default()),
            memory_budget: Cell::new(None),
            turn_undo: UndoSlot::default(),
        }
    }

    /// This session's memory budget in bytes.
    pub(crate) fn memory_budget(&self) -> u64 {
        self.memory_budget
            .get()
            .unwrap_or_else(crate::memory::default_session_budget)
    }

    /// Refuses a change that would store about `text_bytes` bytes of new text in a session
    /// whose memory would then exceed its budget (or in a module whose memory is nearly used
    /// up), before anything changes: `function` names the call in the message.
    pub(crate) fn check_room(&self, function: &str, text_bytes: usize) -> JsResult<()> {
        let copies = if self.turn_undo.borrow().is_some() {
            2
        } else {
            1
        };
        self.check_room_for_copies(function, text_bytes, copies)
    }

    /// [`check_room`](Session::check_room) for a session held `copies` times: twice while a
    /// streamed turn keeps the session from before it (see `engine::TurnUndo`).
    fn check_room_for_copies(
        &self,
        function: &str,
        text_bytes: usize,
        copies: u64,
    ) -> JsResult<()> {
        let holding = self.read(|s| s.memory_footprint().total)?;
        let holding = holding.saturating_mul(copies);
        let adding = (text_bytes as u64).saturating_mul(crate::memory::STORED_BYTES_PER_TEXT_BYTE);
        crate::memory::check_room(function, holding, adding, self.memory_budget()).map_err(fail)
    }

    /// The size limits of this session's texts.
    pub(crate) fn limits(&self) -> Limits {
        self.limits.get()
    }

    /// Sets the size limits (from the session options it was made or opened with).
    pub(crate) fn set_limits(&self, limits: Limits) {
        self.limits.set(limits);
    }

    /// Sets the size limits (from the session options it was made or opened with).
    pub(crate) fn with_limits(self, limits: Limits) -> Session {
        self.set_limits(limits);
        self
    }

    /// A string argument of a method, checked against its size limit.
    pub(crate) fn text(
        &self,
        function: &str,
        name: &str,
        value: &JsValue,
        size: Size,
    ) -> JsResult<String> {
        arg(function, name)
            .string(value, size, &self.limits())
            .map_err(fail)
    }

    /// An optional string argument of a method, checked against its size limit.
    pub(crate) fn optional_text(
        &self,
        function: &str,
        name: &str,
        value: &JsValue,
        size: Size,
    ) -> JsResult<Option<String>> {
        arg(function, name)
            .optional_string(value, size, &self.limits())
            .map_err(fail)
    }

    fn cell(&self) -> Result<RefMut<'_, SessionCell>, Failure> {
        Ok(self.inner.borrow_cell()?)
    }

    /// Runs a read-only query.
    pub(crate) fn read<R>(&self, query: impl FnOnce(&CoreSession) -> R) -> JsResult<R> {
        let cell = self.cell().map_err(fail)?;
        Ok(query(&cell.core))
    }

    /// Runs a change, unless a save or a turn is running; checks the host counter afterwards.
    pub(crate) fn change<R, E: Into<Failure>>(
        &self,
        operation: impl FnOnce(&mut CoreSession) -> Result<R, E>,
    ) -> JsResult<R> {
        let mut cell = self.cell().map_err(fail)?;
        if let Some(busy) = cell.busy {
            return Err(fail(BrowserError::in_progress(busy)));
        }
        // A change after a streamed turn accepts that turn: taking it back now would undo this
        // change too.
        self.turn_undo.borrow_mut().take();
        let outcome = operation(&mut cell.core).map_err(|e| fail(e.into()));
        check_counter().map_err(fail)?;
        outcome
    }

    /// Wraps a core session.
    pub(crate) fn from_core_session(core: CoreSession) -> Session {
        Session::wrap(BrowserSession::from_core(core))
    }

    /// Runs `f` on the core session.
    ///
    /// # Panics
    /// When called from inside another call on the same session (a token counter callback).
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&mut CoreSession) -> R) -> R {
        self.inner.with_core(f)
    }
}

fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

#[wasm_bindgen]
extern "C" {
    /// A session document as a string or as the object `toJSON()` returns.
    #[wasm_bindgen(typescript_type = "string | SessionDocument")]
    pub type JsDocumentInput;
}

/// The JSON text of a document given as a string or an object (`function` names the call in
/// errors). Integers JavaScript cannot hold exactly are refused here, before anything changes.
pub(crate) fn document_text(function: &str, input: &JsValue) -> Result<String, Failure> {
    let document = arg(function, "document");
    let text = if input.is_string() {
        document.string(input, Size::Fixed(MAX_DOCUMENT_CHARS), &Limits::default())?
    } else if input.is_object() && !js_sys::Array::is_array(input) && !input.is_function() {
        js_sys::JSON::stringify(input)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or_else(|| {
                document.wrong_type(
                    "a JSON string or a plain object JSON can represent (no BigInt, no cycle)",
                    input,
                )
            })?
    } else {
        return Err(document.wrong_type("a JSON string or a plain object", input));
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
        check_document_values(&value)?;
    }
    Ok(text)
}

/// The longest session document accepted as text, in characters: the limit the app's import
/// and the core's session-size checks share (`ccm_browser::document`), so what one surface
/// stores another can import.
pub(crate) const MAX_DOCUMENT_CHARS: u32 = ccm_browser::document::MAX_DOCUMENT_CHARS as u32;

/// The configuration a document declares, for choosing its counter.
pub(crate) use ccm_browser::document_config;

#[wasm_bindgen]
impl Session {
    /// A new, empty session.
    ///
    /// `options` sets the thresholds and the encoding (see `SessionOptions`); invalid values
    /// throw an `Error` naming the option. `counter` replaces the built-in token counter (in
    /// `cognitive-context/lite`, without it the approximate counter is used).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> JsResult<Session> {
        let (config, limits) = SessionOptions::from_js("new Session", &options).map_err(fail)?;
        let counter = counter_arg(arg("new Session", "counter"), &counter).map_err(fail)?;
        let counter = counter_for(&config, counter).map_err(fail)?;
        let core = CoreSession::with_counter(config, counter).map_err(fail)?;
        check_counter().map_err(fail)?;
        Ok(Session::from_core_session(core).with_limits(limits))
    }

    /// Restores a session from its versioned document (a JSON string, or the object
    /// `toJSON()` returned). Counts made with another counting rule are recomputed.
    #[wasm_bindgen(js_name = fromJSON)]
    pub fn from_json(
        #[wasm_bindgen(unchecked_param_type = "string | SessionDocument")] json: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenCounter")] counter: JsValue,
    ) -> JsResult<Session> {
        let counter = counter_arg(arg("Session.fromJSON", "counter"), &counter).map_err(fail)?;
        let text = document_text("Session.fromJSON", &json).map_err(fail)?;
        // A session holds about as many bytes as its document has (the texts once, their
        // index and records in place of the JSON's syntax): a document over the default budget
        // is refused before it is read.
        crate::memory::check_room(
            "Session.fromJSON",
            0,
            text.len() as u64,
            crate::memory::default_session_budget(),
        )
        .map_err(fail)?;
        let counter = counter_for(&document_config(&text), counter).map_err(fail)?;
        let core = CoreSession::from_json_with_counter(&text, counter).map_err(fail)?;
        check_counter().map_err(fail)?;
        Ok(Session::from_core_session(core))
    }

    /// The session as its versioned document (`format: "ccm-session"`), a plain object, so
    /// `JSON.stringify(session)` writes the document. A session opened from storage is only
    /// partly in memory: export it with `SessionStore.exportSession` instead.
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> JsResult<JsSessionDocument> {
        let text = self.read(|s| s.to_json())?.map_err(fail)?;
        js_sys::JSON::parse(&text).map(JsCast::unchecked_into)
    }

    /// Opens a new effort and makes it active.
    #[wasm_bindgen(js_name = openEffort)]
    pub fn open_effort(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] description: JsValue,
    ) -> JsResult<JsOpened> {
        let name = self.text("openEffort", "name", &name, Size::Name)?;
        let description =
            self.optional_text("openEffort", "description", &description, Size::Message)?;
        self.check_room(
            "openEffort",
            name.len() + description.as_ref().map_or(0, String::len),
        )?;
        let opened = self.change(|s| s.open_effort(&name, description.as_deref()))?;
        to_js(&opened).map_err(fail)
    }

    /// Concludes an open effort (the active one when `id` is omitted); its summary replaces its
    /// raw log in the context. Without a summary the extractive summary is used.
    #[wasm_bindgen(js_name = closeEffort)]
    pub fn close_effort(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "CloseEffortArgs")] args: JsValue,
    ) -> JsResult<JsConcluded> {
        let limits = self.limits();
        let given = arg("closeEffort", "args")
            .options_object(&args, &["id", "summary"], limits.message_chars)
            .map_err(fail)?;
        let field = |key: &str, name: &str, size: Size| -> JsResult<Option<String>> {
            match &given {
                None => Ok(None),
                Some(object) => {
                    let value = js_sys::Reflect::get(object, &JsValue::from_str(key))?;
                    arg("closeEffort", name)
                        .optional_string(&value, size, &limits)
                        .map_err(fail)
                }
            }
        };
        let args = CloseEffortArgs {
            id: field("id", "args.id", Size::Name)?,
            summary: field("summary", "args.summary", Size::Message)?,
        };
        let concluded =
            self.change(|s| s.close_effort(args.id.as_deref(), args.summary.as_deref()))?;
        to_js(&concluded).map_err(fail)
    }

    /// Reopens a concluded effort: it becomes open and active with its raw log in context.
    /// For a session opened from storage, `await loadLogsForTool("reopen_effort", …)` first.
    #[wasm_bindgen(js_name = reopenEffort)]
    pub fn reopen_effort(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<JsReopened> {
        let id = self.text("reopenEffort", "id", &id, Size::Name)?;
        let reopened = self.change(|s| s.reopen_effort(&id))?;
        to_js(&reopened).map_err(fail)
    }

    /// Loads a concluded effort's raw log back into the context until it is collapsed or
    /// decays. For a session opened from storage, `await loadLogsForTool("expand_effort", …)`
    /// first.
    #[wasm_bindgen(js_name = expandEffort)]
    pub fn expand_effort(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<JsExpanded> {
        let id = self.text("expandEffort", "id", &id, Size::Name)?;
        let expanded = self.change(|s| s.expand_effort(&id))?;
        to_js(&expanded).map_err(fail)
    }

    /// Takes an expanded effort's raw log out of the context again.
    #[wasm_bindgen(js_name = collapseEffort)]
    pub fn collapse_effort(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<JsCollapsed> {
        let id = self.text("collapseEffort", "id", &id, Size::Name)?;
        let collapsed = self.change(|s| s.collapse_effort(&id))?;
        to_js(&collapsed).map_err(fail)
    }

    /// Makes another open effort the active one (it receives the next messages).
    #[wasm_bindgen(js_name = switchEffort)]
    pub fn switch_effort(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<JsSwitched> {
        let id = self.text("switchEffort", "id", &id, Size::Name)?;
        let switched = self.change(|s| s.switch_effort(&id))?;
        to_js(&switched).map_err(fail)
    }

    /// Every effort in working memory with its state and token sizes.
    #[wasm_bindgen(js_name = effortStatus)]
    pub fn effort_status(&self) -> JsResult<JsStatusReport> {
        to_js(&self.read(|s| s.effort_status())?).map_err(fail)
    }

    /// Searches everything stored: every concluded effort (evicted ones included), and the
    /// stored messages that best match (`evidence`: verbatim, with their date, within the
    /// session's `evidenceTokenBudget`). Each effort hit the query is about counts as a
    /// reference and returns to working memory. For a session opened from storage,
    /// `await loadLogsForTool("search_efforts", JSON.stringify({ query }))` first, so the
    /// evidence can show messages of concluded efforts.
    #[wasm_bindgen(js_name = searchEfforts)]
    pub fn search_efforts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
    ) -> JsResult<JsSearchResults> {
        let query = self.text("searchEfforts", "query", &query, Size::Message)?;
        let results = self.change(|s| s.search_efforts(&query))?;
        to_js(&results).map_err(fail)
    }

    /// The ranking of `searchEfforts` without its effects: nothing counts as referenced and
    /// nothing returns to working memory. For views that let a person look through the past.
    #[wasm_bindgen(js_name = findEfforts)]
    pub fn find_efforts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
    ) -> JsResult<JsSearchResults> {
        let query = self.text("findEfforts", "query", &query, Size::Message)?;
        let results = self
            .read(|s| s.find_efforts(&query))?
            .map_err(|e| fail(Failure::from(e)))?;
        to_js(&results).map_err(fail)
    }

    /// The stored messages that best match `query` (every effort log, the general chat and
    /// attachments) and are not in the context yet, each with its neighbours, grouped by log,
    /// within the session's `evidenceTokenBudget`. Changes nothing.
    #[wasm_bindgen(js_name = findMessages)]
    pub fn find_messages(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
    ) -> JsResult<JsEvidence> {
        let query = self.text("findMessages", "query", &query, Size::Message)?;
        let evidence = self
            .read(|s| s.find_messages(&query))?
            .map_err(|e| fail(Failure::from(e)))?;
        to_js(&evidence).map_err(fail)
    }

    /// Brings the stored messages that best match `query` into the context: each with the
    /// message before and after it, not whole logs. They stay while the conversation refers
    /// to them and leave by themselves after `decayThreshold` turns without a mention.
    /// `effort` limits it to one effort's log (or `"ambient"`). For a session opened from
    /// storage, `await loadLogsForTool("recall", JSON.stringify({ query }))` first.
    pub fn recall(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] effort: JsValue,
    ) -> JsResult<JsRecalled> {
        let query = self.text("recall", "query", &query, Size::Message)?;
        let effort = self.optional_text("recall", "effort", &effort, Size::Name)?;
        let recalled = self.change(|s| s.recall(&query, effort.as_deref()))?;
        to_js(&recalled).map_err(fail)
    }

    /// Turns on ranking by meaning for this session's searches (`searchEfforts`,
    /// `findMessages`, the `search_efforts` and `recall` tools) with vectors of `model`, which
    /// `refreshEmbeddings` fetches: the ranking by words is fused with the ranking by cosine
    /// similarity. Until vectors arrive, and for texts that have none, search ranks by words.
    #[wasm_bindgen(js_name = enableEmbeddings)]
    pub fn enable_embeddings(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] model: JsValue,
    ) -> JsResult<()> {
        let model = self.text("enableEmbeddings", "model", &model, Size::Name)?;
        self.change(|s| {
            s.enable_embeddings(&model);
            Ok::<(), Failure>(())
        })
    }

    /// Embeds the stored texts in memory that have no vector yet (newest first, at most
    /// `maxTexts`) and the `query`, at an OpenAI-compatible embeddings endpoint; resolves with
    /// how many stored texts were embedded. Turns embeddings on with `model` if they are off
    /// (or of another model, whose vectors are dropped).
    /// Call it before `runTurn` with the person's message as `query`, or after a few turns.
    #[wasm_bindgen(js_name = refreshEmbeddings, unchecked_return_type = "Promise<number>")]
    pub fn refresh_embeddings(
        &self,
        #[wasm_bindgen(unchecked_param_type = "EmbeddingsOptions")] options: JsValue,
    ) -> Promise {
        let session = self.inner.clone();
        let parsed = crate::engine::embeddings_options(&options);
        wasm_bindgen_futures::future_to_promise(async move {
            let (options, endpoint) = parsed.map_err(fail)?;
            session.with_core(|core| {
                if core.recall_state().embeddings_model() != Some(endpoint.model.as_str()) {
                    core.enable_embeddings(&endpoint.model);
                }
            });
            let embedded = ccm_browser::embeddings::refresh_recall_embeddings(
                session.cell(),
                options.query.as_deref(),
                &endpoint,
                options.max_texts.map_or(256, |n| n as usize),
            )
            .await
            .map_err(fail)?;
            Ok(JsValue::from_f64(embedded as f64))
        })
    }

    /// Whether search and the automatic recall see every stored message. A session opened
    /// from storage reads its working set only; its recall index is completed by
    /// `prepareRecall()` (and by `runTurn` before its first request).
    #[wasm_bindgen(getter, js_name = recallReady)]
    pub fn recall_ready(&self) -> JsResult<bool> {
        self.read(|s| s.recall_state().index_complete())
    }

    /// For a session opened from storage: completes its recall index, reading the stored
    /// messages in steps (a few thousand per step), and reads the messages the automatic
    /// recall of a turn in progress shows. Does nothing for a session made in memory.
    #[wasm_bindgen(js_name = prepareRecall, unchecked_return_type = "Promise<void>")]
    pub fn prepare_recall(&self) -> Promise {
        let session = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            session.prepare_recall().await.map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Begins a turn with the person's text (time stamped with `Date.now()`); returns the
    /// turn number.
    #[wasm_bindgen(js_name = beginTurn)]
    pub fn begin_turn(
        &self,
        #[wasm_bindgen(js_name = userText, unchecked_param_type = "string")] user_text: JsValue,
    ) -> JsResult<f64> {
        let user_text = self.text("beginTurn", "userText", &user_text, Size::Message)?;
        self.check_room("beginTurn", user_text.len())?;
        self.change(|s| s.begin_turn(&user_text, now_ms()))
            .map(|t| t as f64)
    }

    /// Ends the turn: stores the exchange in the right log, detects references, lets
    /// unreferenced expansions decay and summaries leave working memory, and records the
    /// turn's metrics point.
    #[wasm_bindgen(js_name = endTurn)]
    pub fn end_turn(
        &self,
        #[wasm_bindgen(js_name = assistantText, unchecked_param_type = "string")]
        assistant_text: JsValue,
    ) -> JsResult<JsTurnReport> {
        let assistant_text =
            self.text("endTurn", "assistantText", &assistant_text, Size::Message)?;
        self.check_room("endTurn", assistant_text.len())?;
        // The turn's begin kept room for an answer of the model's size; a longer answer given
        // here must still leave the session's export importable (the turn stays open).
        self.read(|s| s.room_for_answer(&assistant_text))?
            .map_err(fail)?;
        let report = self.change(|s| s.end_turn(&assistant_text, now_ms()))?;
        to_js(&report).map_err(fail)
    }

    /// Cancels the turn in progress and every operation made in it; returns the person's text
    /// so it can be sent again.
    #[wasm_bindgen(js_name = abortTurn)]
    pub fn abort_turn(&self) -> JsResult<String> {
        self.change(|s| s.abort_turn())
    }

    /// Executes a model's tool call by name. `args` is the call's arguments as the JSON text a
    /// provider sends, or as the object an SDK has already parsed from it (omitted: no
    /// arguments). Never throws for bad calls: an unknown tool, malformed arguments, a name or
    /// an argument over the session's limits, or a refused operation give
    /// `{ ok: false, result: { error } }` and change nothing. It throws (`code: "argument"`)
    /// only when `name` is not a string or `args` is neither a string nor a plain object, which
    /// is a mistake in the calling code rather than in the model's call.
    #[wasm_bindgen(js_name = executeTool)]
    pub fn execute_tool(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | Record<string, unknown>")] args: JsValue,
    ) -> JsResult<JsToolOutcome> {
        let limits = self.limits();
        // A model's call over a limit is the model's mistake, answered like any bad call so the
        // model can correct it; only a wrong type is the calling code's.
        // Tool names are the library's own, so their bound is fixed rather than the session's
        // name limit (a session with `maxNameChars` below 14 would refuse `search_efforts`).
        let name =
            match arg("executeTool", "name").string(&name, Size::Fixed(TOOL_NAME_CHARS), &limits) {
                Ok(name) => name,
                Err(failure) if failure.code == Code::TooLarge => {
                    return refused_call("(a name too long to repeat)", &failure.message);
                }
                Err(failure) => return Err(fail(failure)),
            };
        let args_json = match tool_arguments_json(args, &limits) {
            Ok(json) => json,
            Err(failure) if failure.code == Code::TooLarge => {
                return refused_call(&name, &failure.message);
            }
            Err(failure) => return Err(fail(failure)),
        };
        if let Err(message) = check_tool_argument_names(&name, &args_json, &limits) {
            return refused_call(&name, &message);
        }
        let outcome = self.change(|s| Ok::<_, Failure>(s.execute_tool(&name, &args_json)))?;
        to_js(&outcome).map_err(fail)
    }

    /// The context of the next request: its messages, token totals, and every candidate
    /// included (in order, with why) or excluded (with a reason code).
    #[wasm_bindgen(js_name = buildContext)]
    pub fn build_context(&self) -> JsResult<JsContextPlan> {
        to_js(&self.read(|s| s.build_plan())?).map_err(fail)
    }

    /// The token curve (one point per turn), the decay statistics and the current totals.
    pub fn metrics(&self) -> JsResult<JsSessionMetrics> {
        let cell = self.cell().map_err(fail)?;
        let s = &cell.core;
        to_js(&SessionMetrics {
            turn: s.turn(),
            history: s.history().points(),
            history_offset: s.history().offset(),
            decay: s.efforts().decay_stats().report(),
            working_tokens: s.working_tokens(),
            naive_tokens: s.naive_tokens(),
            stored_messages: s.stored_message_count(),
            counted_with: s.counter().name(),
        })
        .map_err(fail)
    }

    /// Turns completed (or begun, during a turn).
    #[wasm_bindgen(getter)]
    pub fn turn(&self) -> JsResult<f64> {
        self.read(|s| s.turn() as f64)
    }

    /// Whether a turn is in progress.
    #[wasm_bindgen(getter, js_name = inTurn)]
    pub fn in_turn(&self) -> JsResult<bool> {
        self.read(|s| s.in_turn())
    }

    /// The active effort's id, or `undefined`.
    #[wasm_bindgen(getter, js_name = activeEffort)]
    pub fn active_effort(&self) -> JsResult<Option<String>> {
        self.read(|s| s.efforts().active_id().map(str::to_string))
    }

    /// The id of the stored session this object was opened from or saved as, or `undefined`.
    #[wasm_bindgen(getter, js_name = storeId)]
    pub fn store_id(&self) -> JsResult<Option<String>> {
        let cell = self.cell().map_err(fail)?;
        Ok(cell.link.as_ref().map(|l| l.id.clone()))
    }

    /// The revision of the last save (0 if never saved).
    #[wasm_bindgen(getter)]
    pub fn revision(&self) -> JsResult<f64> {
        self.read(|s| s.revision() as f64)
    }

    /// What opening this session from storage had to skip or repair, one sentence each
    /// (empty when everything was read).
    #[wasm_bindgen(getter, js_name = loadProblems)]
    pub fn load_problems(&self) -> JsResult<Vec<String>> {
        let cell = self.cell().map_err(fail)?;
        Ok(cell.load_problems.clone())
    }

    /// For a session opened from storage: reads the stored records a tool call needs (the log
    /// of the effort `expand_effort` or `reopen_effort` names, the messages `search_efforts`
    /// or `recall` shows, and the rest of the recall index) so that the call can run. Does
    /// nothing when they are loaded or the session is not stored.
    #[wasm_bindgen(js_name = loadLogsForTool, unchecked_return_type = "Promise<void>")]
    pub fn load_logs_for_tool(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(js_name = argsJson, unchecked_param_type = "string")] args_json: JsValue,
    ) -> Promise {
        self.load_logs_for_call("loadLogsForTool", &name, &args_json)
    }

    /// `loadLogsForTool` for `runToolCalls` (npm/ccm/glue/adapters.js), so that its errors name
    /// the function the caller called rather than an internal step of it. Not public API.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __ccmLoadLogsForCall, unchecked_return_type = "Promise<void>")]
    pub fn load_logs_for_named_call(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] caller: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(js_name = argsJson, unchecked_param_type = "string")] args_json: JsValue,
    ) -> Promise {
        // The caller's name only labels messages; anything unexpected falls back to the
        // public name rather than failing the call.
        let caller = caller
            .as_string()
            .filter(|caller| caller == "runToolCalls")
            .unwrap_or_else(|| "loadLogsForTool".to_owned());
        self.load_logs_for_call(&caller, &name, &args_json)
    }

    fn load_logs_for_call(&self, function: &str, name: &JsValue, args_json: &JsValue) -> Promise {
        let session = self.inner.clone();
        let name = self.text(function, "name", name, Size::Name);
        let args_json = self.text(function, "argsJson", args_json, Size::Message);
        wasm_bindgen_futures::future_to_promise(async move {
            // A call over a size limit needs nothing loaded: `executeTool` answers it with an
            // error result, so a model's oversized call never makes `runToolCalls` throw.
            let too_large = |result: &JsResult<String>| matches!(result, Err(e) if is_too_large(e));
            if too_large(&name) || too_large(&args_json) {
                return Ok(JsValue::UNDEFINED);
            }
            let (name, args_json) = (name?, args_json?);
            session
                .load_logs_for(&name, &args_json)
                .await
                .map_err(fail)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Runs a whole turn against a model: the offline demo model (`provider: "offline"`, no
    /// network) or an HTTP provider through `fetch` (streaming, retries, cancellation with
    /// `signal`). On failure or cancellation the session is exactly as before the turn, and
    /// the thrown `Error` carries the person's text in `userText`.
    #[wasm_bindgen(js_name = runTurn, unchecked_return_type = "Promise<TurnResult>")]
    pub fn run_turn(
        &self,
        #[wasm_bindgen(js_name = userText, unchecked_param_type = "string")] user_text: JsValue,
        #[wasm_bindgen(unchecked_param_type = "TurnOptions")] options: JsValue,
    ) -> Promise {
        self.start_turn("runTurn", user_text, options, None)
    }

    /// `runTurn` for `streamTurn` (npm/ccm/glue/adapters.js): the session before the turn is
    /// kept until `__ccmSettleStreamedTurn` takes the turn back or accepts it, so that leaving
    /// the loop before its `done` event undoes a turn that had already ended. Not public API.
    #[doc(hidden)]
    #[wasm_bindgen(
        js_name = __ccmRunStreamedTurn,
        unchecked_return_type = "Promise<TurnResult>",
        skip_typescript
    )]
    pub fn run_streamed_turn(
        &self,
        #[wasm_bindgen(js_name = userText, unchecked_param_type = "string")] user_text: JsValue,
        #[wasm_bindgen(unchecked_param_type = "TurnOptions")] options: JsValue,
    ) -> Promise {
        self.start_turn(
            "streamTurn",
            user_text,
            options,
            Some(self.turn_undo.clone()),
        )
    }

    /// Ends what `__ccmRunStreamedTurn` kept: with `takeBack`, the session is put back as it
    /// was before the turn, if nothing has changed it since (returns whether it was); without,
    /// the turn stays. Either way the copy of the session is released. Not public API.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __ccmSettleStreamedTurn, skip_typescript)]
    pub fn settle_streamed_turn(&self, take_back: bool) -> bool {
        if take_back {
            engine::take_back_turn(self.inner.cell(), &self.turn_undo)
        } else {
            self.turn_undo.borrow_mut().take();
            false
        }
    }

    /// The memory this session holds, estimated in bytes (`texts`, `indexes`, `records` and
    /// their `total`), and its `budget`. A session opened from a store holds its working set
    /// only; stored history read for a tool call counts from then on.
    #[wasm_bindgen(js_name = memoryFootprint)]
    pub fn memory_footprint(&self) -> JsResult<JsMemoryFootprint> {
        let footprint = self.read(|s| s.memory_footprint())?;
        to_js(&crate::memory::FootprintWithBudget {
            texts: footprint.texts as f64,
            indexes: footprint.indexes as f64,
            records: footprint.records as f64,
            total: footprint.total as f64,
            budget: self.memory_budget() as f64,
        })
        .map_err(fail)
    }

    /// This session's memory budget in bytes: its own (`setMemoryBudget`) or the default
    /// (`setDefaultMemoryBudget`, 256 MiB unless changed).
    #[wasm_bindgen(getter, js_name = memoryBudget)]
    pub fn memory_budget_js(&self) -> f64 {
        self.memory_budget() as f64
    }

    /// Sets this session's memory budget in bytes, from 1 MiB up to 4 GiB (the module's whole
    /// memory, which leaves the session only the module's limit). A change that would take the
    /// session over it is refused with `code: "memory_budget"` before anything changes. The
    /// budget belongs to this object, like the size limits: a session opened again from a
    /// store starts with the default (`setDefaultMemoryBudget`).
    #[wasm_bindgen(js_name = setMemoryBudget)]
    pub fn set_memory_budget(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] bytes: JsValue,
    ) -> JsResult<()> {
        let bytes = crate::memory::budget_arg("setMemoryBudget", &bytes).map_err(fail)?;
        self.memory_budget.set(Some(bytes));
        Ok(())
    }
}

impl Session {
    /// Starts `runTurn` (or `streamTurn`'s turn, with `undo`): the arguments are checked and the
    /// budget is applied now, and the turn runs in the returned promise.
    fn start_turn(
        &self,
        function: &str,
        user_text: JsValue,
        options: JsValue,
        undo: Option<UndoSlot>,
    ) -> Promise {
        let cell = self.inner.cell().clone();
        if undo.is_some() {
            // A new streamed turn replaces what an earlier one kept.
            self.turn_undo.borrow_mut().take();
        }
        // A streamed turn keeps a copy of the session while it runs, so it needs room for two.
        let copies = if undo.is_some() { 2 } else { 1 };
        let user_text = self
            .text(function, "userText", &user_text, Size::Message)
            .and_then(|text| {
                self.check_room_for_copies(function, text.len(), copies)
                    .map(|()| text)
            });
        let options = engine::turn_options(&options);
        wasm_bindgen_futures::future_to_promise(async move {
            let user_text = user_text?;
            let options = options.map_err(fail)?;
            let result: JsTurnResult = engine::run_browser_turn(cell, user_text, options, undo)
                .await
                .map_err(fail)?;
            Ok(result.into())
        })
    }
}

/// The JSON text of a tool call's arguments as JavaScript hands them over: the text itself, or
/// an object an SDK parsed from it (stringified back, so the core checks it like any call).
/// The outcome of a model's call refused before it reached the session: `ok: false` with the
/// reason, as the core answers a bad call, and nothing changed.
fn refused_call(name: &str, reason: &str) -> JsResult<JsToolOutcome> {
    to_js(&ccm_core::tools::ToolOutcome {
        name: name.to_string(),
        ok: false,
        result: serde_json::json!({ "error": reason }),
        banner: None,
    })
    .map_err(fail)
}

/// The longest tool name `executeTool` reads; every tool's name is far shorter, and a longer
/// one is answered as an unknown tool without being copied.
const TOOL_NAME_CHARS: u32 = 200;

/// The arguments of the effort tools that name something (an effort's name or id, a pin's
/// target, a task): a model's call is held to the limit the person's own calls have
/// (`openEffort`, `pin`, ...), so that whatever a model names can also be named back.
const NAME_ARGUMENTS: [&str; 5] = ["name", "id", "effort", "target", "task"];

/// Checks the naming arguments of a call against the session's name limit. Arguments that are
/// not JSON or not an object pass through: the core refuses them with its own message.
fn check_tool_argument_names(name: &str, args_json: &str, limits: &Limits) -> Result<(), String> {
    let Ok(serde_json::Value::Object(arguments)) = serde_json::from_str(args_json) else {
        return Ok(());
    };
    for key in NAME_ARGUMENTS {
        let Some(serde_json::Value::String(text)) = arguments.get(key) else {
            continue;
        };
        let length: usize = text.chars().map(char::len_utf16).sum();
        if length > limits.name_chars as usize {
            return Err(format!(
                "{name}: the argument `{key}` is {} characters long, more than the limit of {} for names (the session option maxNameChars); use a short name, nothing was changed",
                ccm_core::compaction::report::thousands(length as u64),
                ccm_core::compaction::report::thousands(u64::from(limits.name_chars)),
            ));
        }
    }
    Ok(())
}

fn tool_arguments_json(args: JsValue, limits: &Limits) -> Result<String, Failure> {
    let arguments = arg("executeTool", "args");
    if args.is_undefined() {
        return Ok("{}".to_string());
    }
    if args.is_string() {
        return arguments.string(&args, Size::Message, limits);
    }
    if !args.is_object() || js_sys::Array::is_array(&args) || args.is_function() {
        return Err(arguments.wrong_type("a JSON string or a plain object", &args));
    }
    let text = js_sys::JSON::stringify(&args)
        .ok()
        .and_then(|text| text.dyn_into::<js_sys::JsString>().ok())
        .ok_or_else(|| {
            arguments.wrong_type(
                "a JSON string or a plain object JSON can represent (no BigInt, no cycle)",
                &args,
            )
        })?;
    arguments.string(&text, Size::Message, limits)
}

/// Whether a thrown `Error` is a refusal of a text over its size limit (`code: "too_large"`).
fn is_too_large(error: &JsValue) -> bool {
    js_sys::Reflect::get(error, &JsValue::from_str("code"))
        .ok()
        .and_then(|code| code.as_string())
        .is_some_and(|code| code == "too_large")
}
