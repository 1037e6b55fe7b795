//! Session options as JavaScript passes them: a plain object with camelCase fields, every field
//! optional. Validation is the core's; this file only maps names and number types.

use crate::args::{arg, Field, Limits, MAX_LIMIT_CHARS};
use crate::error::{Code, Failure, COMPACTION_JS_NAMES};
use ccm_core::config::{BudgetInput, ConfigInput};
use ccm_core::Config;
use serde::Deserialize;
use tsify::Tsify;
use wasm_bindgen::{JsCast, JsValue};

/// Options of a new session. Every field is optional; a missing field takes the
/// specification's default.
///
/// ```ts
/// const session = new Session({ decayThreshold: 5, ambientWindow: 4, encoding: "cl100k_base" });
/// ```
#[derive(Debug, Default, Clone, Tsify, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionOptions {
    /// Turns without a reference before an expanded effort collapses by itself. Default 3.
    #[tsify(optional)]
    pub decay_threshold: Option<f64>,
    /// Turns without a reference before a concluded effort's summary leaves working memory.
    /// Default 20.
    #[tsify(optional)]
    pub summary_eviction_threshold: Option<f64>,
    /// Recent ambient exchanges (user + assistant pairs) kept in working memory. Default 10.
    #[tsify(optional)]
    pub ambient_window: Option<f64>,
    /// Most tokens the ambient window keeps; the newest exchange is always kept whole, older
    /// ones leave whole (reason `over_ambient_budget`). `"none"` for no budget (the window's
    /// exchange count alone, as the specification has it); 0 keeps the newest exchange only.
    /// Default 3000.
    #[tsify(optional, type = "number | \"none\"")]
    pub ambient_token_budget: Option<BudgetOption>,
    /// Most tokens the summaries in working memory keep; beyond it the least recently
    /// referenced leave working memory (reason `evicted_over_budget`), still searchable.
    /// `"none"` for no budget; 0 keeps no summary resident. Default 800.
    #[tsify(optional, type = "number | \"none\"")]
    pub summary_token_budget: Option<BudgetOption>,
    /// How references to summaries are detected: `"distinctive"` (keywords weighted by how few
    /// summaries share them; the default) or `"seed"` (the specification's literal rule: the
    /// id, or any two summary keywords).
    #[tsify(optional, type = "\"distinctive\" | \"seed\"")]
    pub reference_rule: Option<String>,
    /// Summary keywords one message must mention to count as a reference. Default 2.
    #[tsify(optional)]
    pub min_keyword_overlap: Option<f64>,
    /// Tokenizer encoding of every count. Default `"o200k_base"`.
    #[tsify(optional, type = "\"o200k_base\" | \"cl100k_base\"")]
    pub encoding: Option<String>,
    /// Replaces the opening paragraph of the system prompt; the tool guidance and the memory
    /// section are always appended.
    #[tsify(optional)]
    pub system_prompt: Option<String>,
    /// The model's context window in tokens. Default 128000.
    #[tsify(optional)]
    pub context_window: Option<f64>,
    /// Tokens kept free for the answer; the request budget is the window minus these.
    /// Default 4096.
    #[tsify(optional)]
    pub reserved_output_tokens: Option<f64>,
    /// Most tokens leased pins may add to one request; `"none"` for no budget. Default 8000.
    #[tsify(optional, type = "number | \"none\"")]
    pub leased_token_budget: Option<BudgetOption>,
    /// How much the planner pulls in on its own. Default `"light"`.
    #[tsify(optional, type = "\"off\" | \"light\" | \"heavy\"")]
    pub context_mode: Option<String>,
    /// Most tokens the automatic recall adds to a request: excerpts of earlier messages, outside
    /// working memory, that match the user's message (twice as many in `"heavy"` mode, none in
    /// `"off"` mode; 0 turns it off). Default 800.
    #[tsify(optional)]
    pub recall_token_budget: Option<f64>,
    /// Most tokens of earlier messages a search result shows verbatim (`searchEfforts`,
    /// `findMessages`), and that one `recall` brings into the context. Default 2000.
    #[tsify(optional)]
    pub evidence_token_budget: Option<f64>,
    /// How `searchEfforts` finds past efforts: `"ranked"` (the default: ranked by rare words,
    /// with the matching messages as evidence) or `"seed"` (the specification's: keyword
    /// overlap with the summaries, summaries only).
    #[tsify(optional, type = "\"ranked\" | \"seed\"")]
    pub search_rule: Option<String>,
    /// The configuration the other options start from: `"default"`, or `"seed"` for the
    /// specification as the seeds describe it (their reference rule, no token budgets, no
    /// automatic recall, their search). Options given besides it override it.
    #[tsify(optional, type = "\"default\" | \"seed\"")]
    pub profile: Option<String>,
    /// Compaction: a preset name, `"standard"` (60/75/90 %), `"early"` (50/65/80 %) or
    /// `"off"`, or an object of the Rust API's fields in camelCase, each optional, over the
    /// preset it names (`{ preset: "early", softPerMille: 550, cooldownMessages: 4 }`,
    /// `{ enabled: false }`). Default `"standard"`.
    #[tsify(
        optional,
        type = "\"standard\" | \"early\" | \"off\" | CompactionOptions"
    )]
    pub compaction: Option<CompactionOption>,
    /// Longest message text this object accepts (`beginTurn`, `endTurn`, `runTurn`, summaries,
    /// search queries, tool arguments), in characters as JavaScript counts them
    /// (`string.length`). Longer texts are refused with `code: "too_large"` before anything is
    /// copied or counted. Default 1,000,000; at most 16,000,000. Not stored with the session.
    #[tsify(optional)]
    pub max_message_chars: Option<f64>,
    /// Longest name or id (effort names and ids, pin targets, branch names). Default 1,000.
    #[tsify(optional)]
    pub max_name_chars: Option<f64>,
    /// Longest attachment text. Default 4,000,000.
    #[tsify(optional)]
    pub max_attachment_chars: Option<f64>,
}

/// The compaction option as JavaScript passes it: a preset name or an object of fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CompactionOption {
    /// `"standard"`, `"early"` or `"off"`.
    Preset(String),
    /// Fields in camelCase (see [`COMPACTION_JS_NAMES`]); the core checks their ranges.
    Fields(serde_json::Map<String, serde_json::Value>),
}

/// The TypeScript type of the compaction object, written next to the table it mirrors.
#[wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
const COMPACTION_OPTIONS_TS: &str = r#"
/** Compaction fields over a preset; every field is optional (see the README's Compaction). */
export interface CompactionOptions {
    /** `false` turns compaction off: the planner leaves out what does not fit instead. */
    enabled?: boolean;
    /** The thresholds the other fields start from. Default `"standard"`. */
    preset?: "standard" | "early";
    /** Usage (per mille of the request budget) from which each level applies; each below the next. */
    softPerMille?: number;
    hardPerMille?: number;
    emergencyPerMille?: number;
    /** Messages that must pass after a compaction before the next one (0 disables). */
    cooldownMessages?: number;
    /** Milliseconds that must pass after a compaction before the next one. */
    minIntervalMs?: number;
    /** Rise above the low-water mark before a level at or below the last one fires again. */
    hysteresisPerMille?: number;
    /** Whether a jump to the emergency level right after a lighter compaction ignores the cooldown. */
    emergencyBypassesCooldown?: boolean;
    /** Most recent ambient messages the hard level always keeps. */
    keepLastMessagesHard?: number;
    /** Most recent ambient messages the emergency level keeps. */
    keepLastMessagesEmergency?: number;
    /** Share (per mille) of the older ambient messages the hard level keeps, most relevant first. */
    keepFractionHardPerMille?: number;
    /** Messages without a reference after which a full attachment is compressed. */
    staleAttachmentMessages?: number;
    /** Turns without a reference after which an expanded effort is collapsed early. */
    idleExpansionTurns?: number;
    /** Word limit of the emergency level's rolling summary. */
    rollingSummaryMaxWords?: number;
}
"#;

/// The compaction option in the core's terms, or a `config` error naming an unknown field.
fn compaction_input(value: Option<CompactionOption>) -> Result<Option<serde_json::Value>, Failure> {
    match value {
        None => Ok(None),
        Some(CompactionOption::Preset(name)) if name == "off" => {
            Ok(Some(serde_json::json!({ "enabled": false })))
        }
        Some(CompactionOption::Preset(name)) => Ok(Some(serde_json::json!({ "preset": name }))),
        Some(CompactionOption::Fields(fields)) => {
            let mut core = serde_json::Map::new();
            for (key, value) in fields {
                let Some((rust, _)) = COMPACTION_JS_NAMES.iter().find(|(_, js)| *js == key) else {
                    let known: Vec<&str> = COMPACTION_JS_NAMES.iter().map(|(_, js)| *js).collect();
                    return Err(Failure::new(
                        Code::Config,
                        format!(
                            "unknown compaction option `{key}`; the options are {}",
                            known.join(", ")
                        ),
                    ));
                };
                core.insert((*rust).to_string(), value);
            }
            Ok(Some(serde_json::Value::Object(core)))
        }
    }
}

/// A token budget as JavaScript passes it: a number, or `"none"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum BudgetOption {
    /// Tokens (a whole number, checked below).
    Tokens(f64),
    /// A word: `"none"` for no budget; any other is refused by the core, naming the option.
    Word(String),
}

/// A budget option in the core's terms: whole numbers checked as for every number, words as
/// they are (the core accepts `"none"` and names the field for any other).
fn budget(option: &str, value: Option<BudgetOption>) -> Result<Option<BudgetInput>, Failure> {
    match value {
        None => Ok(None),
        Some(BudgetOption::Tokens(tokens)) => {
            Ok(whole(option, Some(tokens))?.map(BudgetInput::Tokens))
        }
        Some(BudgetOption::Word(word)) => Ok(Some(BudgetInput::Word(word))),
    }
}

/// JavaScript numbers are doubles: a threshold must be a whole number before the core checks
/// its range, and the error names the option as JavaScript spells it.
fn whole(option: &str, value: Option<f64>) -> Result<Option<i64>, Failure> {
    match value {
        None => Ok(None),
        Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => Ok(Some(v as i64)),
        Some(v) => Err(Failure::new(
            Code::Config,
            format!("{option} must be a whole number, got {v}"),
        )),
    }
}

impl SessionOptions {
    /// The validated configuration.
    pub(crate) fn resolve(self) -> Result<Config, Failure> {
        let input = ConfigInput {
            decay_threshold: whole("decayThreshold", self.decay_threshold)?,
            min_keyword_overlap: whole("minKeywordOverlap", self.min_keyword_overlap)?,
            summary_eviction_threshold: whole(
                "summaryEvictionThreshold",
                self.summary_eviction_threshold,
            )?,
            ambient_window: whole("ambientWindow", self.ambient_window)?,
            ambient_token_budget: budget("ambientTokenBudget", self.ambient_token_budget)?,
            summary_token_budget: budget("summaryTokenBudget", self.summary_token_budget)?,
            reference_rule: self.reference_rule,
            encoding: self.encoding,
            system_prompt: self.system_prompt,
            context_window: whole("contextWindow", self.context_window)?,
            reserved_output_tokens: whole("reservedOutputTokens", self.reserved_output_tokens)?,
            leased_token_budget: budget("leasedTokenBudget", self.leased_token_budget)?,
            context_mode: self.context_mode,
            recall_token_budget: whole("recallTokenBudget", self.recall_token_budget)?,
            evidence_token_budget: whole("evidenceTokenBudget", self.evidence_token_budget)?,
            compaction: compaction_input(self.compaction)?,
            search_rule: self.search_rule,
            profile: self.profile,
        };
        Ok(input.resolve()?)
    }

    /// The size limits these options set (the defaults for those not given).
    pub(crate) fn limits(&self) -> Result<Limits, Failure> {
        let defaults = Limits::default();
        let limit = |option: &str, value: Option<f64>, default: u32| -> Result<u32, Failure> {
            match whole(option, value)? {
                None => Ok(default),
                Some(n) if (1..=i64::from(MAX_LIMIT_CHARS)).contains(&n) => Ok(n as u32),
                Some(n) => Err(Failure::new(
                    Code::Config,
                    format!("{option} must be from 1 to {MAX_LIMIT_CHARS}, got {n}"),
                )),
            }
        };
        Ok(Limits {
            message_chars: limit(
                "maxMessageChars",
                self.max_message_chars,
                defaults.message_chars,
            )?,
            name_chars: limit("maxNameChars", self.max_name_chars, defaults.name_chars)?,
            attachment_chars: limit(
                "maxAttachmentChars",
                self.max_attachment_chars,
                defaults.attachment_chars,
            )?,
        })
    }

    /// Reads the options argument (an object, or `undefined`) JavaScript passed to
    /// `function`: a value that is not an object is an `argument` error; unknown or invalid
    /// options are `config` errors naming the option.
    pub(crate) fn read_js(function: &str, value: &JsValue) -> Result<SessionOptions, Failure> {
        let options = arg(function, "options");
        if value.is_undefined() || value.is_null() {
            return Ok(SessionOptions::default());
        }
        if !value.is_object() || js_sys::Array::is_array(value) || value.is_function() {
            return Err(options.wrong_type("an object of session options", value));
        }
        // Every string option is short (a name or an encoding) except the system prompt,
        // which is checked like a message, before serde copies it.
        options.check_string_fields(value.unchecked_ref(), Limits::default().message_chars)?;
        // Unknown keys keep their `config` code and the list of options.
        unknown_option(value)?;
        // A value of the wrong type is an invalid option, like one out of range.
        options
            .check_field_types(value.unchecked_ref(), &OPTION_TYPES)
            .map_err(|failure| Failure::new(Code::Config, failure.message))?;
        tsify::Ts::<SessionOptions>::new_unchecked(value.clone()).to_rust_checked()
    }

    /// Reads the options argument and resolves it: the configuration and the size limits.
    pub(crate) fn from_js(function: &str, value: &JsValue) -> Result<(Config, Limits), Failure> {
        let options = SessionOptions::read_js(function, value)?;
        let limits = options.limits()?;
        Ok((options.resolve()?, limits))
    }
}

/// What each option must be, checked before serde reads them (see `Arg::check_field_types`).
const OPTION_TYPES: [(&str, Field); 21] = [
    ("decayThreshold", Field::Number),
    ("summaryEvictionThreshold", Field::Number),
    ("ambientWindow", Field::Number),
    ("ambientTokenBudget", Field::Budget),
    ("summaryTokenBudget", Field::Budget),
    ("referenceRule", Field::String),
    ("minKeywordOverlap", Field::Number),
    ("encoding", Field::String),
    ("systemPrompt", Field::String),
    ("contextWindow", Field::Number),
    ("reservedOutputTokens", Field::Number),
    ("leasedTokenBudget", Field::Budget),
    ("contextMode", Field::String),
    ("recallTokenBudget", Field::Number),
    ("evidenceTokenBudget", Field::Number),
    ("searchRule", Field::String),
    ("profile", Field::String),
    ("compaction", Field::StringOrObject),
    ("maxMessageChars", Field::Number),
    ("maxNameChars", Field::Number),
    ("maxAttachmentChars", Field::Number),
];

/// The option names, as JavaScript spells them.
const KNOWN_OPTIONS: [&str; 21] = [
    "decayThreshold",
    "summaryEvictionThreshold",
    "ambientWindow",
    "ambientTokenBudget",
    "summaryTokenBudget",
    "referenceRule",
    "minKeywordOverlap",
    "encoding",
    "systemPrompt",
    "contextWindow",
    "reservedOutputTokens",
    "leasedTokenBudget",
    "contextMode",
    "recallTokenBudget",
    "evidenceTokenBudget",
    "searchRule",
    "profile",
    "compaction",
    "maxMessageChars",
    "maxNameChars",
    "maxAttachmentChars",
];

/// Reading options with a check for misspelt names. serde-wasm-bindgen reads only the fields a
/// struct declares, so `deny_unknown_fields` never sees an unknown one; without this check
/// `{ decayTreshold: 5 }` would silently keep the default.
pub(crate) trait CheckedOptions {
    /// The options, or an error naming the first unknown or invalid field.
    fn to_rust_checked(&self) -> Result<SessionOptions, Failure>;
}

impl CheckedOptions for tsify::Ts<SessionOptions> {
    fn to_rust_checked(&self) -> Result<SessionOptions, Failure> {
        unknown_option(&self.js_value())?;
        self.to_rust()
            .map_err(|e| Failure::new(Code::Config, format!("invalid session options: {e}")))
    }
}

/// Refuses the first key of an options object that is not an option, listing the options.
fn unknown_option(value: &JsValue) -> Result<(), Failure> {
    if value.is_object() {
        for key in js_sys::Object::keys(value.unchecked_ref::<js_sys::Object>()).iter() {
            let key = key.as_string().unwrap_or_default();
            if !KNOWN_OPTIONS.contains(&key.as_str()) {
                return Err(Failure::new(
                    Code::Config,
                    format!(
                        "unknown session option `{key}`; the options are {}",
                        KNOWN_OPTIONS.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}
