//! What the app does to the open session between turns: effort actions from the tier view,
//! pins, the configuration (and the window of the chosen model), the manifest's search and
//! recall. Each runs the core's operation (a tool, where the model has the same one, so its
//! banner is exact), marks the session changed and saves it.

use super::{sized_for_window, AppState, NoticeKind, OpenLog};
use crate::view_model::EffortAction;
use ccm_browser::BrowserSession;
use ccm_core::pins::{PinKind, PinOrigin, PinRequest};
use ccm_core::Config;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::rc::Rc;

impl AppState {
    /// Makes the session's context window follow the chosen model, when the model's window is
    /// known (from the app's table or the provider's list): an 8K model gets an 8K budget, so
    /// compaction starts where that model needs it. Says what changed.
    pub async fn follow_model_window(&self, model: &str, window: u32) {
        let Some(config) = self.session.with_core(|core| core.config().clone()) else {
            return;
        };
        if window == 0 || config.context_window == window {
            return;
        }
        match self.apply_config(sized_for_window(config, window)).await {
            Ok(()) => self.notices.notify(
                NoticeKind::Info,
                format!(
                    "This session's context window is now {window} tokens, the window of {model}. Settings › This session can change it."
                ),
            ),
            Err(e) => self.notices.notify(NoticeKind::Error, e),
        }
    }

    /// The manifest's search for `query`: the model's ranking of efforts and the stored
    /// messages that best match, read from storage first where a concluded log is not loaded.
    /// Changes nothing in the session.
    pub async fn search_manifest(&self, query: String) {
        if query.trim().is_empty() {
            self.session.search.set(None);
            return;
        }
        let Some(session) = self.session.current.get_value() else {
            return;
        };
        let args = serde_json::json!({ "query": query }).to_string();
        if !self.turn.in_turn() {
            if let Err(e) = session.load_logs_for("search_efforts", &args).await {
                self.notices
                    .notify(NoticeKind::Error, format!("Could not search: {e}"));
            }
        }
        // Only the answer to the latest query is shown: a slower earlier one must not win.
        let latest = self.session.search_query.get_value();
        if latest != query {
            return;
        }
        let view = session.with_core(|core| crate::view_model::search(core, &query));
        self.session.search.set(Some(view));
    }

    /// Brings the stored messages that best match `query` into the context, as the model's
    /// `recall` tool does: they stay while the conversation refers to them.
    pub async fn recall(&self, query: String) {
        let args = serde_json::json!({ "query": query }).to_string();
        let Some(session) = self
            .session_ready_for("recall", &args, "recalling messages", "Could not recall")
            .await
        else {
            return;
        };
        let (outcome, turn) =
            session.with_core(|core| (core.execute_tool("recall", &args), core.turn()));
        // Finding nothing to recall is an answer, not a failure.
        self.show_tool_outcome(outcome, turn, NoticeKind::Info, "nothing was recalled");
        self.session.changed();
        self.search_manifest(query).await;
        self.save().await;
    }

    /// Runs an effort action from the tier view. Logs a concluded effort needs are read from
    /// storage first; the operation itself is the core's tool, so its banner is exact.
    pub async fn effort_action(&self, action: EffortAction, id: String, summary: Option<String>) {
        let args = serde_json::json!({ "id": id }).to_string();
        let failed = format!("Could not read the log of {id}");
        let Some(session) = self
            .session_ready_for("expand_effort", &args, "changing efforts", &failed)
            .await
        else {
            return;
        };
        if action == EffortAction::ReadLog {
            let log = session.with_core(|core| {
                core.efforts().get(&id).map(|e| OpenLog {
                    id: e.id.clone(),
                    messages: e
                        .messages
                        .iter()
                        .map(|m| (m.role.as_str().to_string(), m.content.clone(), m.tokens))
                        .collect(),
                })
            });
            self.session.open_log.set(log);
            self.session.changed();
            return;
        }
        let Some(tool) = action.tool() else {
            return;
        };
        let args = match (&action, summary) {
            (EffortAction::Conclude, Some(summary)) if !summary.trim().is_empty() => {
                serde_json::json!({ "id": id, "summary": summary }).to_string()
            }
            _ => args,
        };
        let (outcome, turn) =
            session.with_core(|core| (core.execute_tool(tool, &args), core.turn()));
        self.show_tool_outcome(outcome, turn, NoticeKind::Error, "the operation failed");
        self.session.changed();
        self.save().await;
    }

    /// The current session with what the tool `tool` needs for `args` read from storage, for
    /// an operation run from the app; `None` (and a notice) while a turn runs (`doing` says
    /// what waits), without a session, or when the read fails (`failed` opens the notice).
    async fn session_ready_for(
        &self,
        tool: &str,
        args: &str,
        doing: &str,
        failed: &str,
    ) -> Option<Rc<BrowserSession>> {
        if self.turn.in_turn() {
            self.notices.notify(
                NoticeKind::Info,
                format!("Wait for the reply (or stop it) before {doing}."),
            );
            return None;
        }
        let session = self.session.current.get_value()?;
        if let Err(e) = session.load_logs_for(tool, args).await {
            self.notices
                .notify(NoticeKind::Error, format!("{failed}: {e}"));
            return None;
        }
        Some(session)
    }

    /// Shows what a tool run from the app did: its banner under the turn it belongs to, or its
    /// error as a notice of `failure_kind` (`fallback` when the result names no error).
    fn show_tool_outcome(
        &self,
        outcome: ccm_core::ToolOutcome,
        turn: u64,
        failure_kind: NoticeKind,
        fallback: &str,
    ) {
        if outcome.ok {
            if let Some(banner) = outcome.banner {
                self.turn.push_banner(turn, banner);
            }
        } else {
            let message = outcome
                .result
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or(fallback)
                .to_string();
            self.notices.notify(failure_kind, message);
        }
    }

    /// Pins (sticky, as the person's pin) or unpins an item of the plan.
    pub async fn set_pin(&self, target: String, pinned: bool) {
        let outcome = self.session.with_core(|core| {
            if pinned {
                core.pin(
                    PinRequest {
                        target: target.clone(),
                        kind: PinKind::Sticky,
                        ttl_turns: None,
                        task: None,
                    },
                    PinOrigin::User,
                )
                .map(|_| ())
            } else {
                core.unpin(&target, PinOrigin::User).map(|_| ())
            }
        });
        if let Some(Err(e)) = outcome {
            self.notices.notify(NoticeKind::Error, e.to_string());
        }
        self.session.changed();
        self.save().await;
    }

    /// Applies a new configuration to the current session.
    pub async fn apply_config(&self, config: Config) -> Result<(), String> {
        if self.turn.in_turn() {
            return Err("Wait for the reply (or stop it) before changing the settings.".into());
        }
        let result = self
            .session
            .with_core(|core| core.set_config(config))
            .unwrap_or(Ok(()));
        match result {
            Ok(()) => {
                self.session.changed();
                self.save().await;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Cycles the context mode Off → Light → Heavy (the hotkey) and opens the breakdown.
    pub fn cycle_mode(&self) {
        let Some(config) = self.session.with_core(|core| {
            let mut config = core.config().clone();
            config.context_mode = config.context_mode.next();
            config
        }) else {
            return;
        };
        let state = *self;
        state.panels.breakdown_open().set(true);
        spawn_local(async move {
            if let Err(e) = state.apply_config(config).await {
                state.notices.notify(NoticeKind::Error, e);
            }
        });
    }
}
