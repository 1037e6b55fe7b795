//! The planner's controls on `Session`: options, context modes, pins, attachments, branches
//! and telemetry. One-line delegations to the core, like the rest of the class.

use crate::error::{fail, Code, Failure, JsResult};
use crate::options::SessionOptions;
use crate::session::Session;
use crate::types::*;
use ccm_core::compaction::AttachmentKind;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::ContextMode;
use tsify::Ts;
use wasm_bindgen::prelude::*;

fn pin_kind(kind: &str) -> Result<PinKind, Failure> {
    match kind {
        "sticky" => Ok(PinKind::Sticky),
        "leased" => Ok(PinKind::Leased),
        "ephemeral" => Ok(PinKind::Ephemeral),
        other => Err(Failure::new(
            Code::Argument,
            format!("unknown pin kind '{other}'; expected sticky, leased or ephemeral"),
        )),
    }
}

fn mode_name(mode: ContextMode) -> &'static str {
    match mode {
        ContextMode::Off => "off",
        ContextMode::Light => "light",
        ContextMode::Heavy => "heavy",
    }
}

#[wasm_bindgen]
impl Session {
    /// Replaces the session's options between turns (thresholds, window and budget, context
    /// mode, compaction). Options not given take their defaults; the encoding cannot change
    /// in place (export and import the session to recount it).
    #[wasm_bindgen(js_name = setOptions)]
    pub fn set_options(&self, options: Option<Ts<SessionOptions>>) -> JsResult<()> {
        let config = SessionOptions::from_js(options).map_err(fail)?;
        self.change(|s| s.set_config(config))
    }

    /// The context mode: `"off"`, `"light"` or `"heavy"`.
    #[wasm_bindgen(getter, js_name = contextMode, unchecked_return_type = "ContextMode")]
    pub fn context_mode(&self) -> JsResult<String> {
        self.read(|s| mode_name(s.config().context_mode).to_string())
    }

    /// Sets the context mode (`"off"`, `"light"` or `"heavy"`).
    #[wasm_bindgen(js_name = setContextMode)]
    pub fn set_context_mode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ContextMode")] mode: &str,
    ) -> JsResult<()> {
        let mode = ContextMode::from_name(mode).map_err(fail)?;
        self.change(|s| {
            let config = ccm_core::Config {
                context_mode: mode,
                ..s.config().clone()
            };
            s.set_config(config)
        })
    }

    /// Moves to the next context mode (Off → Light → Heavy → Off), as the app's hotkey does,
    /// and returns it.
    #[wasm_bindgen(js_name = cycleContextMode, unchecked_return_type = "ContextMode")]
    pub fn cycle_context_mode(&self) -> JsResult<String> {
        self.change(|s| {
            let mode = s.config().context_mode.next();
            let config = ccm_core::Config {
                context_mode: mode,
                ..s.config().clone()
            };
            s.set_config(config).map(|_| mode_name(mode).to_string())
        })
    }

    /// The budget meter of the next request, e.g.
    /// `CTX Light · 3 auto items · +1.2k tokens · 61% of budget`.
    #[wasm_bindgen(js_name = budgetMeter)]
    pub fn budget_meter(&self) -> JsResult<JsBudgetMeter> {
        to_js(&self.read(|s| s.build_plan().meter)?).map_err(fail)
    }

    /// Pins a candidate (`summary:<effort>`, `effort:<effort>` or `ambient:<turn>`) as the
    /// user: `"sticky"` (always in, never expires), `"leased"` (for `ttlTurns` included turns,
    /// default 5, or while the open effort `task` stays open) or `"ephemeral"` (the next
    /// request only).
    pub fn pin(
        &self,
        target: String,
        #[wasm_bindgen(unchecked_param_type = "PinKind")] kind: &str,
        #[wasm_bindgen(js_name = ttlTurns)] ttl_turns: Option<u32>,
        task: Option<String>,
    ) -> JsResult<JsPin> {
        let kind = pin_kind(kind).map_err(fail)?;
        let request = PinRequest {
            target,
            kind,
            ttl_turns,
            task,
        };
        let pin = self.change(|s| s.pin(request, PinOrigin::User))?;
        to_js(&pin).map_err(fail)
    }

    /// Removes the pin on a target (or `pin:<n>`).
    pub fn unpin(&self, target: &str) -> JsResult<JsPin> {
        let pin = self.change(|s| s.unpin(target, PinOrigin::User))?;
        to_js(&pin).map_err(fail)
    }

    /// Every pin, in creation order.
    pub fn pins(&self) -> JsResult<JsPins> {
        to_js(&self.read(|s| s.pins().to_vec())?).map_err(fail)
    }

    /// Attaches a file (`kind` `"file"`, the default) or pasted text (`"pasted"`) to the user
    /// message of the turn in progress and returns its id. The text is stored whole and counted
    /// once; `summary` is what the context shows when compaction compresses it (an extractive
    /// one is made when omitted).
    pub fn attach(
        &self,
        name: &str,
        text: &str,
        #[wasm_bindgen(unchecked_optional_param_type = "\"file\" | \"pasted\"")] kind: Option<
            String,
        >,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] summary: Option<String>,
    ) -> JsResult<String> {
        let kind = match kind.as_deref() {
            None | Some("file") => AttachmentKind::File,
            Some("pasted") => AttachmentKind::PastedText,
            Some(other) => {
                return Err(fail(Failure::new(
                    Code::Argument,
                    format!("unknown attachment kind '{other}'; expected file or pasted"),
                )))
            }
        };
        self.change(|s| s.attach(name, kind, text, summary.as_deref()))
    }

    /// Shows an attachment's full text again after compaction compressed it.
    #[wasm_bindgen(js_name = expandAttachment)]
    pub fn expand_attachment(&self, id: &str) -> JsResult<bool> {
        self.change(|s| s.expand_attachment(id))
    }

    /// Shows an attachment's summary instead of its text.
    #[wasm_bindgen(js_name = compressAttachment)]
    pub fn compress_attachment(&self, id: &str) -> JsResult<bool> {
        self.change(|s| s.compress_attachment(id))
    }

    /// Telemetry of the recent turns (up to 500): each request's plan id, exclusions and
    /// usage, the tool calls, and the diff against the previous turn.
    pub fn telemetry(&self) -> JsResult<JsTelemetry> {
        to_js(&self.read(|s| s.telemetry().to_vec())?).map_err(fail)
    }

    /// This session's branch: its name, and where it was forked from.
    #[wasm_bindgen(getter)]
    pub fn branch(&self) -> JsResult<JsBranchInfo> {
        to_js(&self.read(|s| s.branch().clone())?).map_err(fail)
    }

    /// A new session forked from this one as it was at the end of `turn` (one of the last
    /// 1,000 turns), named `name`. Nothing done on the fork changes this session. The fork is
    /// not stored until it is saved as a new session.
    pub fn fork(&self, turn: u32, name: &str) -> JsResult<Session> {
        let fork = self.read(|s| s.fork_at(u64::from(turn), name))?;
        fork.map(Session::from_core_session).map_err(fail)
    }
}
