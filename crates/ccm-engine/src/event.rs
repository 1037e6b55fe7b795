//! What happens during a turn, as a driver reports it to its user interface.

use crate::{LlmRequest, RequestPurpose, RetryWait, ToolTraceEntry};
use ccm_provider::StreamDelta;

/// What happens during a turn, for a user interface to show: the one event type that every
/// driver of [`TurnEngine`](crate::TurnEngine) reports through (the native runner, the npm
/// package's `runTurn`, the browser app). The turn's result or failure is not an event: the
/// driver returns it.
///
/// Events borrow from the driver's loop, so reporting one costs no copy; an observer that keeps
/// something clones it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TurnEvent<'a> {
    /// A request is being sent: the first attempt, or a retry (`attempt` above 1), whose
    /// streamed text replaces whatever the failed attempt showed. Sent after the turn, a
    /// [`RequestPurpose::RollingSummary`] request asks for the written rolling summary.
    Sending(&'a LlmRequest),
    /// Part of an answer arrived. Only deltas of [`RequestPurpose::Turn`] requests belong to
    /// the reply (see [`reply_text`](Self::reply_text)); a summary request's text ends up in a
    /// banner.
    Delta {
        /// Why the request was made.
        purpose: &'a RequestPurpose,
        /// What arrived.
        delta: &'a StreamDelta,
    },
    /// A request failed and will be sent again after the delay.
    Retrying(&'a RetryWait),
    /// A tool call of the model's answer was handled: run, refused with an error for the model,
    /// or concluded an effort. Its banner, if any, is in the entry.
    ToolCalled(&'a ToolTraceEntry),
}

impl<'a> TurnEvent<'a> {
    /// The piece of the reply this event carries, if any: streamed text of a request whose
    /// answer is the reply the person waits for.
    pub fn reply_text(&self) -> Option<&'a str> {
        match *self {
            TurnEvent::Delta {
                purpose,
                delta: StreamDelta::Text(text),
            } if purpose.is_answer() => Some(text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_of_the_answer_is_reply_text() {
        let turn = RequestPurpose::Turn {
            round: 1,
            final_answer_forced: false,
        };
        let summary = RequestPurpose::Summary {
            effort_id: "auth-bug".into(),
        };
        let text = StreamDelta::Text("Hello".into());
        let tool = StreamDelta::ToolCallStarted {
            id: "call_1".into(),
            name: "open_effort".into(),
        };
        let delta = |purpose, delta| TurnEvent::Delta { purpose, delta };
        assert_eq!(delta(&turn, &text).reply_text(), Some("Hello"));
        assert_eq!(delta(&summary, &text).reply_text(), None);
        assert_eq!(delta(&turn, &tool).reply_text(), None);
        let wait = RetryWait {
            delay_ms: 1_000,
            failed_attempt: 1,
            error: "overloaded".into(),
        };
        assert_eq!(TurnEvent::Retrying(&wait).reply_text(), None);
    }
}
