//! The planner's controls on `Session`: options, context modes, pins, attachments, branches
//! and telemetry. One-line delegations to the core, like the rest of the class.

use crate::args::{arg, Size};
use crate::error::{fail, Code, Failure, JsResult};
use crate::options::SessionOptions;
use crate::session::Session;
use crate::types::*;
use ccm_core::compaction::AttachmentKind;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::ContextMode;
use wasm_bindgen::prelude::*;

/// The longest lease of a pin, in turns: a million turns outlasts any session.
const MAX_LEASE_TURNS: u32 = 1_000_000;

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
    pub fn set_options(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
    ) -> JsResult<()> {
        let (config, limits) = SessionOptions::from_js("setOptions", &options).map_err(fail)?;
        self.change(|s| s.set_config(config))?;
        self.set_limits(limits);
        Ok(())
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
        #[wasm_bindgen(unchecked_param_type = "ContextMode")] mode: JsValue,
    ) -> JsResult<()> {
        let mode = self.text("setContextMode", "mode", &mode, Size::Name)?;
        let mode = ContextMode::from_name(&mode).map_err(fail)?;
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
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PinKind")] kind: JsValue,
        #[wasm_bindgen(js_name = ttlTurns, unchecked_optional_param_type = "number")]
        ttl_turns: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] task: JsValue,
    ) -> JsResult<JsPin> {
        let target = self.text("pin", "target", &target, Size::Name)?;
        let kind = self.text("pin", "kind", &kind, Size::Name)?;
        // A lease of more turns than a session can have is a mistake, and a negative one
        // must not wrap around to four billion.
        let ttl_turns = arg("pin", "ttlTurns")
            .optional_whole_number(&ttl_turns, 1, u64::from(MAX_LEASE_TURNS))
            .map_err(fail)?
            .map(|turns| turns as u32);
        let task = self.optional_text("pin", "task", &task, Size::Name)?;
        let kind = pin_kind(&kind).map_err(fail)?;
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
    pub fn unpin(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
    ) -> JsResult<JsPin> {
        let target = self.text("unpin", "target", &target, Size::Name)?;
        let pin = self.change(|s| s.unpin(&target, PinOrigin::User))?;
        to_js(&pin).map_err(fail)
    }

    /// Every pin, in creation order.
    pub fn pins(&self) -> JsResult<JsPins> {
        to_js(&self.read(|s| s.pins().all().to_vec())?).map_err(fail)
    }

    /// Attaches a file (`kind` `"file"`, the default) or pasted text (`"pasted"`) to the user
    /// message of the turn in progress and returns its id. The text is stored whole and counted
    /// once; `summary` is what the context shows when compaction compresses it (an extractive
    /// one is made when omitted).
    pub fn attach(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "\"file\" | \"pasted\"")] kind: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] summary: JsValue,
    ) -> JsResult<String> {
        let name = self.text("attach", "name", &name, Size::Name)?;
        let kind = self.optional_text("attach", "kind", &kind, Size::Name)?;
        let summary = self.optional_text("attach", "summary", &summary, Size::Message)?;
        let text = self.text("attach", "text", &text, Size::Attachment)?;
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
        self.check_room(
            "attach",
            text.len() + summary.as_ref().map_or(0, String::len),
        )?;
        self.change(|s| s.attach(&name, kind, &text, summary.as_deref()))
    }

    /// Shows an attachment's full text again after compaction compressed it.
    #[wasm_bindgen(js_name = expandAttachment)]
    pub fn expand_attachment(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<bool> {
        let id = self.text("expandAttachment", "id", &id, Size::Name)?;
        self.change(|s| s.expand_attachment(&id))
    }

    /// Shows an attachment's summary instead of its text.
    #[wasm_bindgen(js_name = compressAttachment)]
    pub fn compress_attachment(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
    ) -> JsResult<bool> {
        let id = self.text("compressAttachment", "id", &id, Size::Name)?;
        self.change(|s| s.compress_attachment(&id))
    }

    /// Telemetry of the recent turns (up to 500): each request's plan id, exclusions and
    /// usage, the tool calls, and the diff against the previous turn.
    pub fn telemetry(&self) -> JsResult<JsTelemetry> {
        to_js(&self.read(|s| s.history().telemetry().to_vec())?).map_err(fail)
    }

    /// This session's branch: its name, and where it was forked from.
    #[wasm_bindgen(getter)]
    pub fn branch(&self) -> JsResult<JsBranchInfo> {
        to_js(&self.read(|s| s.branch().clone())?).map_err(fail)
    }

    /// A new session forked from this one as it was at the end of `turn` (one of the last
    /// 1,000 turns run since it was created, opened or imported: what rewinding needs is kept
    /// in memory, not stored), named `name`. Nothing done on the fork changes this session. The fork is
    /// not stored until it is saved as a new session.
    pub fn fork(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] turn: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> JsResult<Session> {
        // Any turn JavaScript can name exactly; the core says which ones can be forked.
        let turn = arg("fork", "turn")
            .whole_number(&turn, 0, crate::args::MAX_SAFE_INTEGER)
            .map_err(fail)?;
        let name = self.text("fork", "name", &name, Size::Name)?;
        let limits = self.limits();
        let fork = self.read(|s| s.fork_at(turn, &name))?;
        fork.map(|core| Session::from_core_session(core).with_limits(limits))
            .map_err(fail)
    }
}
