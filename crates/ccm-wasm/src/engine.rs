//! `Session.runTurn`: ccm-engine's sans-IO turn engine run by ccm-browser's driver
//! (`ccm_browser::BrowserSession::begin_turn`), with `fetch` as the transport or the offline
//! demo model.
//!
//! The loop only moves bytes and waits: the engine decides what to send, when to retry
//! (`RetryPolicy`), and how to end or undo the turn. Requests go out through
//! [`ccm_browser::transport`], which the browser app uses too.
//! Cancellation: when `signal` aborts, the request in flight is aborted by `fetch` itself and
//! the engine cancels the turn, which restores the session and returns the person's text.

use crate::args::Field;
use crate::error::{Code, Failure};
use ccm_browser::provider::{
    EmbeddingsEndpoint, ProviderChoice, ProviderChoiceError, ProviderConfig, ProviderKind,
    ProviderName,
};
use ccm_browser::transport::Limits;
use ccm_browser::turn::{
    EngineSettings, RetryPolicy, RunError, TurnEvent, TurnFailure, OFFLINE_MODEL_NAME,
};
use ccm_browser::{BrowserError, Model, SessionCell};
use js_sys::Function;
use serde::Deserialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use tsify::Tsify;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

#[wasm_bindgen]
extern "C" {
    /// `TurnResult`.
    #[wasm_bindgen(typescript_type = "TurnResult")]
    pub type JsTurnResult;
}

/// How `runTurn` talks to a model.
#[derive(Debug, Clone, Tsify, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnOptions {
    /// `"offline"` (the deterministic demo model, no network), a preset (`"openai"`,
    /// `"anthropic"`, `"openrouter"`, `"ollama"`, `"lmstudio"`), or any server at `baseUrl` by
    /// its protocol's `"…_compatible"` name; the `Provider` type lists them all.
    #[tsify(type = "Provider")]
    pub provider: String,
    /// The model name; required except for `"offline"`.
    #[tsify(optional)]
    pub model: Option<String>,
    /// The base URL (`https://host/v1`); defaults to the preset's.
    #[tsify(optional)]
    pub base_url: Option<String>,
    /// The API key, sent only to the provider's URL.
    #[tsify(optional)]
    pub api_key: Option<String>,
    /// Extra headers of every request, as a plain object (`{ "x-team": "ml" }`).
    #[tsify(optional, type = "Record<string, string>")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Stream the answer (text arrives through `onText`). Default `true`.
    #[tsify(optional)]
    pub stream: Option<bool>,
    /// Output limit of a turn request.
    #[tsify(optional)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[tsify(optional)]
    pub temperature: Option<f64>,
    /// Rounds of tool calls before a plain answer is forced. Default 5.
    #[tsify(optional)]
    pub max_tool_rounds: Option<u32>,
    /// Attempts per request, the first included (1 = never retry). Default 4.
    #[tsify(optional)]
    pub max_attempts: Option<u32>,
    /// Delay before the first retry, doubled for each further one. Default 1000.
    #[tsify(optional)]
    pub initial_retry_delay_ms: Option<u32>,
    /// How long a streamed answer may send nothing before the turn gives up on it with a
    /// `provider` error (the person's text is kept in `userText`); 0 waits for ever. Default
    /// 60000 (a minute).
    #[tsify(optional)]
    pub idle_timeout_ms: Option<u32>,
    /// The longest one provider response may take, from the request to its last byte, before
    /// the turn gives up on it with a `provider` error (the person's text is kept in
    /// `userText`): a stream that trickles in, never silent for `idleTimeoutMs` but never
    /// finished, ends here, and so does a server that never sends its response headers. 0
    /// waits for ever. Default 600000 (ten minutes).
    #[tsify(optional)]
    pub response_timeout_ms: Option<u32>,
    /// Cancels the turn: the session is restored and the thrown error has `code: "cancelled"`.
    #[tsify(optional, type = "AbortSignal")]
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    pub signal: JsValue,
    /// Called with each piece of answer text as it streams in.
    #[tsify(optional, type = "(text: string) => void")]
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    pub on_text: JsValue,
    /// Called before waiting for a retry. Text shown so far belongs to the failed attempt.
    #[tsify(optional, type = "(retry: RetryNotice) => void")]
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    pub on_retry: JsValue,
    /// Called with each tool call of the model's answers as soon as it has been handled (run,
    /// refused with an error for the model, or concluding an effort), with its banner if any.
    #[tsify(optional, type = "(call: ToolTraceEntry) => void")]
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    pub on_tool_call: JsValue,
}

/// Every key of `TurnOptions`, as JavaScript spells them.
const TURN_OPTION_KEYS: [&str; 17] = [
    "provider",
    "model",
    "baseUrl",
    "apiKey",
    "headers",
    "stream",
    "maxTokens",
    "temperature",
    "maxToolRounds",
    "maxAttempts",
    "initialRetryDelayMs",
    "idleTimeoutMs",
    "responseTimeoutMs",
    "signal",
    "onText",
    "onRetry",
    "onToolCall",
];

/// Reads `runTurn`'s options: unknown keys, numbers out of range and callbacks that are not
/// functions are refused with `code: "argument"` naming the option, before anything runs.
pub(crate) fn turn_options(value: &JsValue) -> Result<TurnOptions, Failure> {
    let options = crate::args::arg("runTurn", "options");
    if value.is_undefined() || value.is_null() {
        return Err(options.wrong_type("an object with at least a `provider`", value));
    }
    let object = options
        .options_object(value, &TURN_OPTION_KEYS, crate::args::DEFAULT_MESSAGE_CHARS)?
        .unwrap_or_default();
    let field =
        |key: &str| js_sys::Reflect::get(&object, &JsValue::from_str(key)).unwrap_or_default();
    for key in [
        "maxTokens",
        "maxToolRounds",
        "maxAttempts",
        "initialRetryDelayMs",
        "idleTimeoutMs",
        "responseTimeoutMs",
    ] {
        let name = format!("options.{key}");
        crate::args::arg("runTurn", &name).optional_whole_number(
            &field(key),
            0,
            u64::from(u32::MAX),
        )?;
    }
    for key in ["onText", "onRetry", "onToolCall"] {
        let name = format!("options.{key}");
        crate::args::arg("runTurn", &name).optional_function(&field(key))?;
    }
    let signal = field("signal");
    if !(signal.is_undefined() || signal.is_null() || signal.is_instance_of::<AbortSignal>()) {
        return Err(
            crate::args::arg("runTurn", "options.signal").wrong_type("an AbortSignal", &signal)
        );
    }
    let temperature = field("temperature");
    if !(temperature.is_undefined() || temperature.as_f64().is_some_and(f64::is_finite)) {
        return Err(crate::args::arg("runTurn", "options.temperature")
            .wrong_type("a finite number", &temperature));
    }
    let provider = field("provider");
    if !provider.is_string() {
        return Err(
            crate::args::arg("runTurn", "options.provider").wrong_type("a string", &provider)
        );
    }
    options.check_field_types(
        &object,
        &[
            ("model", Field::String),
            ("baseUrl", Field::String),
            ("apiKey", Field::String),
            ("headers", Field::StringMap),
            ("stream", Field::Boolean),
        ],
    )?;
    tsify::Ts::<TurnOptions>::new_unchecked(value.clone())
        .to_rust()
        .map_err(|e| invalid(format!("invalid runTurn options: {e}")))
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(Code::Argument, message)
}

impl TurnOptions {
    /// The transport the options choose. The provider's name, base URL and key are checked by
    /// ccm-provider's `ProviderConfig::from_choice`, as on the command line and in the app; the
    /// names it accepts are the TypeScript `Provider` type's, and a few older spellings.
    fn transport(&self) -> Result<Model, Failure> {
        let provider: ProviderName = self
            .provider
            .parse()
            .map_err(|e: ProviderChoiceError| invalid(e.to_string()))?;
        let choice = ProviderChoice {
            provider,
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            headers: self
                .headers
                .iter()
                .flatten()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        };
        let config = ProviderConfig::from_choice(&choice).map_err(|error| match error {
            ProviderChoiceError::MissingApiKey { .. } => invalid(format!(
                "{error}: pass apiKey (or a baseUrl of a proxy that adds it)"
            )),
            ProviderChoiceError::MissingBaseUrl { .. } => {
                invalid(format!("{error} (give it as baseUrl)"))
            }
            _ => invalid(error.to_string()),
        })?;
        let defaults = Limits::default();
        let limits = Limits {
            idle_ms: self.idle_timeout_ms.map_or(defaults.idle_ms, u64::from),
            total_ms: self
                .response_timeout_ms
                .map_or(defaults.total_ms, u64::from),
            ..defaults
        };
        // A program gets the offline answer at once (no pause between words); only the app
        // paces it for people.
        Ok(Model::of(config, limits, 0))
    }

    fn settings(&self, offline: bool) -> Result<EngineSettings, Failure> {
        let model = match (&self.model, offline) {
            (Some(model), _) => model.clone(),
            (None, true) => OFFLINE_MODEL_NAME.to_string(),
            (None, false) => return Err(invalid("runTurn needs a `model` for an HTTP provider")),
        };
        let mut settings = EngineSettings::new(model).with_stream(self.stream.unwrap_or(true));
        if let Some(rounds) = self.max_tool_rounds {
            settings = settings.with_max_tool_rounds(rounds);
        }
        if let Some(max_tokens) = self.max_tokens {
            settings.max_tokens = max_tokens;
        }
        settings.temperature = self.temperature;
        let mut retry = RetryPolicy::default();
        if let Some(attempts) = self.max_attempts {
            // Zero attempts would send nothing; reading it as one would hide the caller's
            // mistake, so it is refused like any other out-of-range option.
            if attempts == 0 {
                return Err(invalid(
                    "runTurn: maxAttempts must be at least 1 (1 sends the request once, without retries); got 0",
                ));
            }
            retry.max_attempts = attempts;
        }
        if let Some(delay) = self.initial_retry_delay_ms {
            retry.initial_delay_ms = u64::from(delay);
        }
        Ok(settings.with_retry(retry))
    }

    fn signal(&self) -> Option<AbortSignal> {
        self.signal.dyn_ref::<AbortSignal>().cloned()
    }
}

fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

fn call(callback: &JsValue, argument: &JsValue) {
    if let Some(function) = callback.dyn_ref::<Function>() {
        // A failing callback is the host's bug; it must not break the turn.
        let _ = function.call1(&JsValue::NULL, argument);
    }
}

/// Passes a turn event to the host's callbacks: `onText` with each piece of the reply, and
/// `onRetry` with the notice before a retry delay, and `onToolCall` with each tool call once it
/// has been handled. The JavaScript API has no callback for a request being sent.
fn notify(options: &TurnOptions, event: TurnEvent<'_>) {
    match event {
        TurnEvent::Retrying(wait) => {
            // A notice that cannot be converted is not worth failing the turn over: the retry
            // happens either way.
            if let Ok(notice) = crate::types::to_js::<_, JsValue>(wait) {
                call(&options.on_retry, &notice);
            }
        }
        TurnEvent::Delta { .. } => {
            if let Some(text) = event.reply_text() {
                call(&options.on_text, &JsValue::from_str(text));
            }
        }
        TurnEvent::ToolCalled(entry) => {
            // As with retry notices, a conversion failure must not fail the turn.
            if let Ok(entry) = crate::types::to_js::<_, JsValue>(entry) {
                call(&options.on_tool_call, &entry);
            }
        }
        TurnEvent::Sending(_) => {}
    }
}

/// The failure thrown for a turn that ended without an answer.
fn turn_failure(failure: &TurnFailure) -> Failure {
    let code = if failure.was_cancelled() {
        Code::Cancelled
    } else {
        Code::Provider
    };
    Failure::new(code, failure.to_string())
        .with("userText", failure.user_text.clone())
        .with("cancelled", failure.was_cancelled())
}

/// The session as it was before a turn, kept so that a turn that has ended can be taken back
/// as if it had never run (`streamTurn` left before its `done` event). It is the whole core
/// session, so it holds as much memory as the session while it is kept: it lives from the start
/// of the turn until the host takes the turn back, accepts it, or changes the session.
pub(crate) struct TurnUndo {
    /// The core session before the turn began.
    before: ccm_core::Session,
    /// The cell's load problems before the turn (a turn may read stored records and add some).
    load_problems: Vec<String>,
}

/// Where a turn keeps its [`TurnUndo`]: the session object's slot, shared with the turn's future.
pub(crate) type UndoSlot = Rc<RefCell<Option<TurnUndo>>>;

/// Puts the session back as it was before the turn `slot` holds, if that turn has ended and
/// nothing has changed the session since (no save, no other turn): returns whether it did. The
/// slot is emptied either way.
pub(crate) fn take_back_turn(cell: &RefCell<SessionCell>, slot: &UndoSlot) -> bool {
    let Some(undo) = slot.borrow_mut().take() else {
        return false;
    };
    let Ok(mut state) = cell.try_borrow_mut() else {
        return false;
    };
    let unchanged_since = state.busy.is_none()
        && !state.core.in_turn()
        && state.core.turn() == undo.before.turn() + 1
        && state.core.revision() == undo.before.revision();
    if unchanged_since {
        state.core = undo.before;
        state.load_problems = undo.load_problems;
    }
    unchanged_since
}

/// Runs one turn; see `Session.runTurn`. With `undo`, the session before the turn is kept in it
/// (see [`TurnUndo`]) and dropped again if the turn fails, which restores the session itself.
pub(crate) async fn run_browser_turn(
    cell: Rc<RefCell<SessionCell>>,
    user_text: String,
    options: TurnOptions,
    undo: Option<UndoSlot>,
) -> Result<JsTurnResult, Failure> {
    let model = options.transport()?;
    let settings = options.settings(model.is_offline())?;
    // The session before the turn, kept before the turn begins (a busy session or a refused
    // turn empties the slot again below, so nothing is kept for a turn that never ran).
    if let Some(slot) = &undo {
        let state = cell.borrow();
        *slot.borrow_mut() = Some(TurnUndo {
            before: state.core.clone(),
            load_problems: state.load_problems.clone(),
        });
    }
    let turn = match ccm_browser::driver::begin_turn(&cell, &user_text, now_ms(), settings) {
        Ok(turn) => turn,
        Err(error) => {
            if let Some(slot) = &undo {
                slot.borrow_mut().take();
            }
            return Err(error.into());
        }
    };
    let outcome = turn
        .run(&model, options.signal(), &mut |event| {
            notify(&options, event)
        })
        .await;
    if outcome.is_err() {
        // The engine has restored the session: there is nothing to take back.
        if let Some(slot) = &undo {
            slot.borrow_mut().take();
        }
    }
    match outcome {
        Ok(result) => crate::types::to_js(&result),
        Err(RunError::Failed(failure)) => Err(turn_failure(&failure)),
        Err(RunError::Engine(error)) => Err(BrowserError::from(error).into()),
    }
}

#[cfg(test)]
mod tests {
    use ccm_browser::provider::ProviderName;

    /// ccm-provider's one list of names (which its errors give) and the TypeScript `Provider`
    /// type must not drift apart when a provider is added.
    #[test]
    fn every_provider_name_is_listed_and_typed() {
        // The declarations as the custom section takes them.
        let declaration = crate::types::joined::RESULT_TYPES;
        let union = &declaration[declaration.find("export type Provider =").unwrap()..];
        let union = &union[..union.find(';').unwrap()];
        let typed: Vec<&str> = union.split('"').skip(1).step_by(2).collect();
        let listed: Vec<&str> = ProviderName::all().iter().map(|name| name.name()).collect();
        assert_eq!(typed, listed, "the Provider type and ccm-provider's names");
        for name in listed {
            assert!(
                ProviderName::accepted_names().contains(name),
                "{name} is not in the error's list"
            );
        }
    }
}

/// Where `refreshEmbeddings` gets vectors from: an OpenAI-compatible `/embeddings` endpoint
/// (OpenAI, Ollama, LM Studio, any compatible server).
#[derive(Debug, Clone, Tsify, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EmbeddingsOptions {
    /// The endpoint's base URL, e.g. `http://localhost:11434/v1` (the request goes to
    /// `<baseUrl>/embeddings`).
    pub base_url: String,
    /// The embedding model; the same model for every refresh of a session.
    pub model: String,
    /// The API key, sent only to `baseUrl`.
    #[tsify(optional)]
    pub api_key: Option<String>,
    /// Also embed this text (the person's message, or a search query) so that the next
    /// ranking for it fuses in the vectors.
    #[tsify(optional)]
    pub query: Option<String>,
    /// At most this many stored texts without a vector are embedded, newest first. Default
    /// 256.
    #[tsify(optional)]
    pub max_texts: Option<u32>,
}

const EMBEDDINGS_OPTION_KEYS: [&str; 5] = ["baseUrl", "model", "apiKey", "query", "maxTexts"];

/// Reads `refreshEmbeddings`' options, refusing unknown keys and wrong types with
/// `code: "argument"` before anything is sent.
pub(crate) fn embeddings_options(
    value: &JsValue,
) -> Result<(EmbeddingsOptions, EmbeddingsEndpoint), Failure> {
    let options = crate::args::arg("refreshEmbeddings", "options");
    if value.is_undefined() || value.is_null() {
        return Err(options.wrong_type("an object with `baseUrl` and `model`", value));
    }
    let object = options
        .options_object(
            value,
            &EMBEDDINGS_OPTION_KEYS,
            crate::args::DEFAULT_MESSAGE_CHARS,
        )?
        .unwrap_or_default();
    let field =
        |key: &str| js_sys::Reflect::get(&object, &JsValue::from_str(key)).unwrap_or_default();
    for key in ["baseUrl", "model"] {
        if !field(key).is_string() {
            return Err(
                crate::args::arg("refreshEmbeddings", &format!("options.{key}"))
                    .wrong_type("a string", &field(key)),
            );
        }
    }
    options.check_field_types(
        &object,
        &[("apiKey", Field::String), ("query", Field::String)],
    )?;
    crate::args::arg("refreshEmbeddings", "options.maxTexts").optional_whole_number(
        &field("maxTexts"),
        0,
        u64::from(u32::MAX),
    )?;
    let parsed: EmbeddingsOptions = tsify::Ts::<EmbeddingsOptions>::new_unchecked(value.clone())
        .to_rust()
        .map_err(|e| invalid(format!("invalid refreshEmbeddings options: {e}")))?;
    let choice = ProviderChoice {
        provider: ProviderName::Compatible(ProviderKind::OpenAiCompatible),
        base_url: Some(parsed.base_url.clone()),
        api_key: parsed.api_key.clone(),
        headers: Vec::new(),
    };
    let provider = ProviderConfig::from_choice(&choice)
        .map_err(|e| invalid(format!("refreshEmbeddings: {e}")))?
        .ok_or_else(|| invalid("refreshEmbeddings needs an endpoint's baseUrl"))?;
    let endpoint = EmbeddingsEndpoint {
        provider,
        model: parsed.model.trim().to_string(),
        dimensions: None,
    };
    Ok((parsed, endpoint))
}
