//! A host of ccm-engine's one turn driver whose model answers from a script, as the engine's
//! tests of the driver and of host-run tools play it: one host for both, so each test sets
//! only what it is about (the answers, how stored records are read, the host tools' results,
//! cancellation during a wait) and reads back what the driver asked of the host.

use crate::memory_store::MemoryStore;
use ccm_core::Session;
use ccm_engine::driver::TurnHost;
use ccm_engine::{HostToolCall, LlmRequest, LogLoad};
use ccm_provider::{FinishReason, ProviderError, ProviderResponse, StreamDelta};
use serde_json::Value;
use std::collections::VecDeque;

/// How the scripted host answers a request to read stored logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Reads them from the store and attaches them.
    Works,
    /// Fails with a reason.
    Fails,
    /// Says it read them but attaches nothing (a host bug).
    ClaimsWithoutAttaching,
}

/// A model's answer of plain text that ends the turn: no tool calls, no usage reported.
pub fn answer(text: &str) -> ProviderResponse {
    ProviderResponse {
        text: text.to_string(),
        tool_calls: Vec::new(),
        finish_reason: FinishReason::Stop,
        usage: None,
    }
}

/// A turn host that answers each request with the next scripted answer, reads stored records
/// from `store`, runs host tools by handing out the next scripted result, and keeps what it
/// was asked: the loads, the waits and the tool calls.
pub struct ScriptedHost<'a> {
    /// The session the turn is in.
    pub session: Session,
    /// Where the session's stored records are read from.
    pub store: &'a MemoryStore,
    /// The model's answers (or failures), one a request, in order.
    pub answers: VecDeque<Result<ProviderResponse, ProviderError>>,
    /// How a request to read stored records is answered.
    pub reading: Reading,
    /// The results of the host's own tools, one a call, in order.
    pub tool_results: VecDeque<Result<Value, String>>,
    /// The reads of stored records the driver asked for.
    pub loads: Vec<LogLoad>,
    /// The waits the driver asked for, in ms.
    pub slept: Vec<u64>,
    /// The host tool calls the driver handed over.
    pub ran: Vec<HostToolCall>,
    /// Whether the person cancels during the first wait.
    pub cancel_when_sleeping: bool,
    /// Whether the person has cancelled.
    pub cancelled: bool,
    /// The time the host gives the session, in ms since the epoch.
    pub now_ms: u64,
}

impl<'a> ScriptedHost<'a> {
    /// A host for `session` with nothing scripted yet: stored records read from `store`,
    /// no cancellation, and the clock at 10 ms.
    pub fn new(session: Session, store: &'a MemoryStore) -> ScriptedHost<'a> {
        ScriptedHost {
            session,
            store,
            answers: VecDeque::new(),
            reading: Reading::Works,
            tool_results: VecDeque::new(),
            loads: Vec::new(),
            slept: Vec::new(),
            ran: Vec::new(),
            cancel_when_sleeping: false,
            cancelled: false,
            now_ms: 10,
        }
    }
}

impl TurnHost for ScriptedHost<'_> {
    fn with_session<R>(&mut self, change: impl FnOnce(&mut Session) -> R) -> R {
        change(&mut self.session)
    }

    async fn send(
        &mut self,
        _request: &LlmRequest,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        let outcome = self.answers.pop_front().expect("a scripted answer");
        if let Ok(response) = &outcome {
            on_delta(StreamDelta::Text(response.text.clone()));
        }
        outcome
    }

    async fn sleep(&mut self, ms: u64) {
        self.slept.push(ms);
        self.cancelled |= self.cancel_when_sleeping;
    }

    async fn load_logs(&mut self, load: &LogLoad) -> Result<(), String> {
        self.loads.push(load.clone());
        match self.reading {
            Reading::Works => {
                for id in &load.efforts {
                    self.session
                        .attach_effort_log(id, self.store.effort_log(id))
                        .map_err(|e| e.to_string())?;
                }
                if let Some(request) = load.index {
                    let messages = self
                        .store
                        .messages_between(request.from_seq, request.to_seq);
                    self.session
                        .index_stored_messages(request, messages)
                        .map_err(|e| e.to_string())?;
                }
                self.session
                    .attach_recalled_messages(self.store.messages_by_seq(&load.messages))
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
            Reading::Fails => Err("the disk is unreadable".to_string()),
            Reading::ClaimsWithoutAttaching => Ok(()),
        }
    }

    async fn run_tool(&mut self, call: &HostToolCall) -> Result<Value, String> {
        self.ran.push(call.clone());
        self.tool_results
            .pop_front()
            .expect("a scripted tool result")
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    fn now_ms(&self) -> u64 {
        self.now_ms
    }
}
