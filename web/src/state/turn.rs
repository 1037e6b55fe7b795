//! The turn: the one in progress (what it shows while the model answers), the last one when
//! it failed, and what goes into the next one (the message box, attached files, the turn being
//! edited). `crate::turn` drives a turn through the operations here; views read the signals.

use crate::view_model::TurnBanners;
use ccm_browser::turn::{RequestPurpose, StreamDelta, TurnEvent};
use leptos::prelude::*;
use std::collections::BTreeMap;

/// What the turn in progress is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the model's first bytes.
    Waiting,
    /// Text is arriving.
    Streaming,
    /// The model asked for tools; they run between requests.
    Tools(Vec<String>),
    /// A separate request writes the summary of an effort being concluded.
    Summarizing(String),
    /// A request failed and will be sent again.
    Retrying {
        /// Seconds until the next attempt.
        seconds: u64,
        /// Why the last attempt failed.
        error: String,
    },
    /// The turn is done and being saved.
    Saving,
}

impl Phase {
    /// The progress text shown under the streaming reply.
    pub fn text(&self) -> String {
        match self {
            Phase::Waiting => "Waiting for the model…".to_string(),
            Phase::Streaming => "Writing…".to_string(),
            Phase::Tools(names) => format!("Running {}…", names.join(", ")),
            Phase::Summarizing(effort) => format!("Writing the summary of {effort}…"),
            Phase::Retrying { seconds, error } => {
                format!("Retrying in {seconds} s: {error}")
            }
            Phase::Saving => "Saving…".to_string(),
        }
    }
}

/// The turn in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTurn {
    /// The person's message.
    pub user_text: String,
    /// The reply text streamed so far.
    pub text: String,
    /// What is happening now.
    pub phase: Phase,
    /// Where the current request's streamed text starts in `text`, so that a retried attempt
    /// can drop what its failed predecessor showed.
    reply_start: usize,
}

impl LiveTurn {
    /// A turn that just began with the person's `user_text`: nothing shown yet.
    pub fn new(user_text: String) -> LiveTurn {
        LiveTurn {
            user_text,
            text: String::new(),
            phase: Phase::Waiting,
            reply_start: 0,
        }
    }

    /// Shows what the turn engine's driver reports.
    pub fn show(&mut self, event: TurnEvent<'_>) {
        match event {
            TurnEvent::Sending(request) => match &request.purpose {
                RequestPurpose::Turn { .. } => {
                    if request.attempt > 1 {
                        self.text.truncate(self.reply_start);
                    } else if !self.text.is_empty() {
                        self.text.push_str("\n\n");
                    }
                    self.reply_start = self.text.len();
                    self.phase = Phase::Waiting;
                }
                RequestPurpose::Summary { effort_id } => {
                    self.phase = Phase::Summarizing(effort_id.clone());
                }
                RequestPurpose::RollingSummary => {
                    self.phase = Phase::Summarizing("earlier conversation".to_string());
                }
            },
            TurnEvent::Delta {
                delta: StreamDelta::ToolCallStarted { name, .. },
                ..
            } => match &mut self.phase {
                Phase::Tools(names) => names.push(name.clone()),
                _ => self.phase = Phase::Tools(vec![name.clone()]),
            },
            TurnEvent::Delta { .. } => {
                if let Some(text) = event.reply_text() {
                    self.text.push_str(text);
                    self.phase = Phase::Streaming;
                }
            }
            TurnEvent::Retrying(wait) => {
                self.phase = Phase::Retrying {
                    seconds: wait.delay_ms.div_ceil(1000),
                    error: wait.error.clone(),
                };
            }
            // The banners of the turn's tool calls show with the finished turn, in order.
            TurnEvent::ToolCalled(_) => {}
        }
    }
}

/// A turn that failed; the session is as before it and the text can be sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedTurn {
    /// The person's message.
    pub user_text: String,
    /// What went wrong, for people.
    pub error: String,
}

/// A file waiting to go out with the next message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAttachment {
    /// The file name.
    pub name: String,
    /// Its text.
    pub text: String,
    /// Its tokens, counted with the session's encoding.
    pub tokens: u32,
}

/// The turn part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct TurnState {
    live: RwSignal<Option<LiveTurn>>,
    failed: RwSignal<Option<FailedTurn>>,
    draft: RwSignal<String>,
    banners: RwSignal<BTreeMap<u64, TurnBanners>>,
    abort: StoredValue<Option<web_sys::AbortController>, LocalStorage>,
    sending: StoredValue<bool>,
    attachments: RwSignal<Vec<PendingAttachment>>,
    editing: RwSignal<Option<u64>>,
}

impl TurnState {
    /// No turn, an empty box.
    pub fn new() -> TurnState {
        TurnState {
            live: RwSignal::new(None),
            failed: RwSignal::new(None),
            draft: RwSignal::new(String::new()),
            banners: RwSignal::new(BTreeMap::new()),
            abort: StoredValue::new_local(None),
            sending: StoredValue::new(false),
            attachments: RwSignal::new(Vec::new()),
            editing: RwSignal::new(None),
        }
    }

    /// The turn in progress.
    pub fn live(&self) -> ReadSignal<Option<LiveTurn>> {
        self.live.read_only()
    }

    /// Whether a turn is running (session changes wait for it). Does not track.
    pub fn in_turn(&self) -> bool {
        self.live.with_untracked(Option::is_some)
    }

    /// The person's message of the turn in progress. Does not track.
    pub fn live_user_text(&self) -> Option<String> {
        self.live
            .with_untracked(|live| live.as_ref().map(|live| live.user_text.clone()))
    }

    /// The last turn, when it failed.
    pub fn failed(&self) -> ReadSignal<Option<FailedTurn>> {
        self.failed.read_only()
    }

    /// The text in the message box.
    pub fn draft(&self) -> ReadSignal<String> {
        self.draft.read_only()
    }

    /// Exact banners by turn, for turns completed in this tab.
    pub fn banners(&self) -> ReadSignal<BTreeMap<u64, TurnBanners>> {
        self.banners.read_only()
    }

    /// Files waiting to go out with the next message.
    pub fn attachments(&self) -> ReadSignal<Vec<PendingAttachment>> {
        self.attachments.read_only()
    }

    /// The turn whose message is being edited in the box (sending then redoes that turn).
    pub fn editing(&self) -> ReadSignal<Option<u64>> {
        self.editing.read_only()
    }

    /// Whether a message is between its send and its running turn: a newer version announced
    /// meanwhile is left to the send's own check, which must not be raced.
    pub fn sending(&self) -> bool {
        self.sending.get_value()
    }

    /// Marks a message as between its send and its running turn (or no longer).
    pub fn set_sending(&self, sending: bool) {
        self.sending.set_value(sending);
    }

    /// Replaces the text in the message box.
    pub fn set_draft(&self, text: String) {
        self.draft.set(text);
    }

    /// Puts `text` back into the message box, keeping what is typed there too.
    pub fn keep_in_box(&self, text: &str) {
        self.draft.update(|draft| *draft = keep_both(text, draft));
    }

    /// Shows `text` as the turn in progress, out of the box, while the send is checked.
    pub fn show_sent(&self, text: String) {
        self.sending.set_value(true);
        self.failed.set(None);
        self.draft.set(String::new());
        self.live.set(Some(LiveTurn::new(text)));
    }

    /// Shows `text` as a turn that has just begun (again): nothing of a reply yet.
    pub fn restart(&self, text: String) {
        self.live.set(Some(LiveTurn::new(text)));
    }

    /// Shows what the turn engine's driver reports in the turn in progress.
    pub fn show(&self, event: TurnEvent<'_>) {
        self.live.update(|live| {
            if let Some(live) = live {
                live.show(event);
            }
        });
    }

    /// Sets what the turn in progress is doing.
    pub fn set_phase(&self, phase: Phase) {
        self.live.update(|live| {
            if let Some(live) = live {
                live.phase = phase;
            }
        });
    }

    /// Ends the turn in progress on screen.
    pub fn end(&self) {
        self.live.set(None);
    }

    /// Ends the turn in progress as failed: `user_text` can be sent again.
    pub fn fail(&self, user_text: String, error: String) {
        self.live.set(None);
        self.failed.set(Some(FailedTurn { user_text, error }));
    }

    /// Forgets the failed turn (it is sent again, or its text went back into the box).
    pub fn clear_failed(&self) {
        self.failed.set(None);
    }

    /// Keeps the banners of a completed turn.
    pub fn record_banners(&self, turn: u64, banners: TurnBanners) {
        self.banners.update(|all| {
            all.insert(turn, banners);
        });
    }

    /// Adds a banner after those of `turn` (an operation run from the app).
    pub fn push_banner(&self, turn: u64, banner: String) {
        self.banners
            .update(|b| b.entry(turn).or_default().after.push(banner));
    }

    /// Adds a file to the next message.
    pub fn attach(&self, file: PendingAttachment) {
        self.attachments.update(|pending| pending.push(file));
    }

    /// Removes the waiting file at `index`.
    pub fn remove_attachment(&self, index: usize) {
        self.attachments.update(|a| {
            if index < a.len() {
                a.remove(index);
            }
        });
    }

    /// The files waiting for the next message. Does not track.
    pub fn pending_attachments(&self) -> Vec<PendingAttachment> {
        self.attachments.get_untracked()
    }

    /// The files went out with a turn.
    pub fn clear_attachments(&self) {
        self.attachments.set(Vec::new());
    }

    /// Puts the message of `turn` into the box to be edited (`None`: editing ends).
    pub fn set_editing(&self, turn: Option<u64>) {
        self.editing.set(turn);
    }

    /// Keeps the controller that cancels the turn in progress (`None` when it ended).
    pub fn set_abort(&self, controller: Option<web_sys::AbortController>) {
        self.abort.set_value(controller);
    }

    /// Stops the turn in progress.
    pub fn stop(&self) {
        // `try_`: at the app's cleanup the handle may already be gone, and then so is the turn.
        self.abort.try_with_value(|controller| {
            if let Some(controller) = controller {
                controller.abort();
            }
        });
    }

    /// What a newly opened session starts without: the last session's banners, failure and
    /// edit.
    pub fn forget_session(&self) {
        self.banners.set(BTreeMap::new());
        self.failed.set(None);
        self.editing.set(None);
    }
}

/// Joins the text of a message that could not be kept in the session (`saved_aside`) with
/// what is typed in the box, so that neither is lost: the older first, each once.
pub fn keep_both(saved_aside: &str, typed: &str) -> String {
    let (aside, typed) = (saved_aside.trim(), typed.trim_end());
    if aside.is_empty() || typed.contains(aside) {
        typed.to_string()
    } else if typed.trim().is_empty() {
        aside.to_string()
    } else {
        format!("{aside}\n\n{typed}")
    }
}

impl Default for TurnState {
    fn default() -> Self {
        TurnState::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_browser::turn::{LlmRequest, PromptEstimate, RequestOptions, RetryWait};

    fn request(purpose: RequestPurpose, attempt: u32) -> LlmRequest {
        LlmRequest {
            purpose,
            attempt,
            messages: Vec::new(),
            tools: Vec::new(),
            options: RequestOptions::new("m"),
            plan_id: None,
            estimate: PromptEstimate::default(),
        }
    }

    fn turn(round: u32) -> RequestPurpose {
        RequestPurpose::Turn {
            round,
            final_answer_forced: false,
        }
    }

    fn text(live: &mut LiveTurn, purpose: &RequestPurpose, piece: &str) {
        let delta = StreamDelta::Text(piece.to_string());
        live.show(TurnEvent::Delta {
            purpose,
            delta: &delta,
        });
    }

    #[test]
    fn a_turn_shows_its_answers_tools_summaries_and_retries() {
        let mut live = LiveTurn::new("Let's fix the auth bug".to_string());
        live.show(TurnEvent::Sending(&request(turn(1), 1)));
        assert_eq!(live.phase, Phase::Waiting);
        text(&mut live, &turn(1), "Opening ");
        text(&mut live, &turn(1), "an effort.");
        assert_eq!(
            (live.text.as_str(), &live.phase),
            ("Opening an effort.", &Phase::Streaming)
        );
        for name in ["open_effort", "effort_status"] {
            let delta = StreamDelta::ToolCallStarted {
                id: format!("call_{name}"),
                name: name.to_string(),
            };
            live.show(TurnEvent::Delta {
                purpose: &turn(1),
                delta: &delta,
            });
        }
        assert_eq!(
            live.phase,
            Phase::Tools(vec!["open_effort".into(), "effort_status".into()])
        );

        // The next round's text starts a new paragraph; a retry of it drops what its failed
        // attempt showed, and nothing before.
        live.show(TurnEvent::Sending(&request(turn(2), 1)));
        text(&mut live, &turn(2), "Half an ans");
        let wait = RetryWait {
            delay_ms: 1_500,
            failed_attempt: 1,
            error: "the provider is overloaded".to_string(),
        };
        live.show(TurnEvent::Retrying(&wait));
        assert_eq!(
            live.phase,
            Phase::Retrying {
                seconds: 2,
                error: "the provider is overloaded".to_string()
            }
        );
        live.show(TurnEvent::Sending(&request(turn(2), 2)));
        assert_eq!(live.text, "Opening an effort.\n\n");
        text(&mut live, &turn(2), "Done.");
        assert_eq!(live.text, "Opening an effort.\n\nDone.");

        // Summary requests show as a phase; their text is not the reply.
        let summary = RequestPurpose::Summary {
            effort_id: "auth-bug".to_string(),
        };
        live.show(TurnEvent::Sending(&request(summary.clone(), 1)));
        assert_eq!(live.phase, Phase::Summarizing("auth-bug".to_string()));
        text(&mut live, &summary, "Fixed the TTL.");
        assert_eq!(live.text, "Opening an effort.\n\nDone.");
        live.show(TurnEvent::Sending(&request(
            RequestPurpose::RollingSummary,
            1,
        )));
        assert_eq!(
            live.phase,
            Phase::Summarizing("earlier conversation".to_string())
        );
    }

    #[test]
    fn no_text_is_lost_or_doubled() {
        assert_eq!(keep_both("", "typed"), "typed");
        assert_eq!(keep_both("sent", ""), "sent");
        assert_eq!(keep_both("sent", "  "), "sent");
        assert_eq!(keep_both("sent", "typed"), "sent\n\ntyped");
        assert_eq!(keep_both("sent", "sent\n\ntyped"), "sent\n\ntyped");
    }
}
