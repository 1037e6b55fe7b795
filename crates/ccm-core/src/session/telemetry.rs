//! Telemetry on the session: the engine records each request it sends and the usage the
//! provider reports; a turn's telemetry is finished when the turn ends (the record types are
//! `crate::telemetry`).

use super::Session;
use crate::plan::ContextPlan;
use crate::telemetry::{
    clip, diff_records, RequestRecord, ToolTrace, TurnTelemetry, TOOL_RESULT_TRACE_BYTES,
};

impl Session {
    /// Records a request of the turn in progress (the engine calls it for every request it
    /// sends). Ignored outside a turn.
    pub fn record_request(&mut self, plan: &ContextPlan, reported_prompt_tokens: Option<u64>) {
        if let Some(state) = &mut self.turn_state {
            state
                .requests
                .push(RequestRecord::of(plan, reported_prompt_tokens));
        }
    }

    /// Records the provider's reported prompt tokens for a request of the turn in progress.
    /// Returns whether a request with that plan id was found.
    pub fn report_usage(&mut self, plan_id: &str, reported_prompt_tokens: u64) -> bool {
        let Some(state) = &mut self.turn_state else {
            return false;
        };
        match state
            .requests
            .iter_mut()
            .rev()
            .find(|r| r.plan_id == plan_id)
        {
            Some(record) => {
                record.reported_prompt_tokens = Some(reported_prompt_tokens);
                true
            }
            None => false,
        }
    }

    pub(crate) fn trace_tool(&mut self, name: &str, arguments: &str, ok: bool, result: &str) {
        if let Some(state) = &mut self.turn_state {
            state.tools.push(ToolTrace {
                name: name.to_string(),
                arguments: clip(arguments, TOOL_RESULT_TRACE_BYTES),
                ok,
                result: clip(result, TOOL_RESULT_TRACE_BYTES),
            });
        }
    }

    /// Closes the turn's telemetry (called by `end_turn` with the turn's final plan).
    pub(crate) fn finish_telemetry(
        &mut self,
        final_plan: &ContextPlan,
        requests: Vec<RequestRecord>,
        tools: Vec<ToolTrace>,
    ) -> TurnTelemetry {
        let mut requests = requests;
        if requests.is_empty() {
            requests.push(RequestRecord::of(final_plan, None));
        }
        let previous = self
            .history
            .telemetry()
            .last()
            .and_then(|t| t.requests.last())
            .cloned();
        let last = requests.last().expect("at least one request");
        let entry = TurnTelemetry {
            turn: self.turn,
            diff: diff_records(previous.as_ref(), last),
            requests,
            tools,
        };
        if self.history.push_telemetry(entry.clone()) {
            self.saves.telemetry_saved = self.saves.telemetry_saved.saturating_sub(1);
        }
        entry
    }
}
