//! The chat: the conversation so far (a welcome with example messages while it is empty), the
//! reply being written, a failed turn with Retry, and the message box (Enter sends,
//! Shift+Enter adds a line).

use crate::alternatives::{Families, Version};
use crate::chat_controls;
use crate::components::conflict::ConflictCard;
use crate::components::rich_text::RichText;
use crate::components::welcome::{NextExample, Welcome, EXAMPLES};
use crate::state::ArchiveState;
use crate::state::{AppState, FailedTurn, LiveTurn, PendingAttachment, Startup};
use crate::turn;
use crate::view_model::EffortAction;
use crate::view_model::{self, ChatEntry, Transcript, TurnGroup};
use ccm_browser::provider::ProviderName;
use ccm_core::model::Role;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::{BTreeMap, BTreeSet};

/// The conversation, turn by turn, with banners as quiet notices between the messages.
#[component]
pub fn ChatLog(
    /// The turns to show, oldest first.
    #[prop(into)]
    groups: Signal<Vec<TurnGroup>>,
    /// Stored messages not loaded (concluded efforts' logs of a session opened from storage);
    /// none by default.
    #[prop(optional, into)]
    hidden: Signal<u64>,
    /// Whether the stored conversation beyond the session's memory is being read.
    #[prop(optional, into)]
    reading: Signal<bool>,
    /// Tokens and cost per turn, as text.
    #[prop(optional, into)]
    usage: Signal<BTreeMap<u64, String>>,
    /// Folds (`true`) or unfolds a concluded effort's messages.
    #[prop(optional, into)]
    on_fold: Option<Callback<(String, bool)>>,
    /// The turn in progress, if any (none by default).
    #[prop(optional, into)]
    live: Signal<Option<LiveTurn>>,
    /// The versions of each turn that has several (Regenerate and Edit make them).
    #[prop(optional, into)]
    versions: Signal<BTreeMap<u64, Vec<Version>>>,
    /// Whether Edit and Regenerate are offered on the turns now.
    #[prop(optional, into)]
    redo: Signal<bool>,
    /// Edits or regenerates a turn, or opens another version of it; without it the log
    /// offers none of these.
    #[prop(optional)]
    on_turn: Option<Callback<TurnAction>>,
    /// What to show while the conversation is empty (nothing by default).
    #[prop(optional, into)]
    empty: ViewFn,
) -> impl IntoView {
    let log = NodeRef::<html::Div>::new();
    let is_empty =
        move || hidden.get() == 0 && live.with(Option::is_none) && groups.with(Vec::is_empty);
    // The newest message stays in view as turns complete and text streams in. An empty chat
    // is read from the top instead: its welcome starts with what CCM is.
    Effect::new(move |_| {
        let empty = is_empty();
        if let Some(el) = log.get() {
            el.set_scroll_top(if empty { 0 } else { el.scroll_height() });
        }
    });
    // Focusable, so keyboard users can scroll it with the arrow keys; a log, so screen readers
    // announce new messages politely.
    view! {
        <div
            class="chat-log"
            node_ref=log
            data-testid="chat-log"
            role="log"
            aria-live="polite"
            aria-label="Conversation"
            tabindex="0"
        >
            <Show when=is_empty>{empty.run()}</Show>
            <Show when=move || { hidden.get() > 0 }>
                <p class="hint" data-testid="hidden-messages" role="status">
                    {move || {
                        if reading.get() {
                            format!("Reading {} earlier messages from storage…", hidden.get())
                        } else {
                            format!(
                                "{} earlier messages are stored but could not be shown here. Read them from Memory › Raw logs.",
                                hidden.get(),
                            )
                        }
                    }}
                </p>
            </Show>
            <For
                each=move || groups.get()
                key=|group| (group.turn, group.entries.len(), entries_fingerprint(&group.entries))
                let:group
            >
                <section class="turn" data-testid="turn" data-turn=group.turn.to_string()>
                    {
                        // The turn's tokens and cost follow its messages.
                        let turn = group.turn;
                        let asked = group.entries.iter().find_map(|entry| match entry {
                            ChatEntry::Message(m) if m.role == Role::User => Some(m.content.clone()),
                            _ => None,
                        });
                        let tools = on_turn.map(|on_turn| turn_tools(turn, asked, versions, redo, on_turn));
                        let entries = group
                            .entries
                            .into_iter()
                            .map(|entry| entry_view(entry, on_fold))
                            .collect_view();
                        let usage_line = move || {
                            usage
                                .with(|u| u.get(&turn).cloned())
                                .map(|text| view! { <p class="turn-usage" data-testid="turn-usage">{text}</p> })
                        };
                        view! { {entries} {tools} {usage_line} }
                    }
                </section>
            </For>
            {move || live.get().map(live_view)}
        </div>
    }
}

/// What a turn's tools ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnAction {
    /// Put the turn's message back into the box, to send a changed version in its place.
    Edit {
        /// The turn.
        turn: u64,
        /// Its message as sent.
        text: String,
    },
    /// Ask for the turn's answer again.
    Regenerate {
        /// The turn.
        turn: u64,
        /// Its message, sent again.
        text: String,
    },
    /// Open another version of the conversation (a stored session of the same family).
    Open(String),
}

/// A turn's tools: which version of it this is (‹ 2 / 3 ›, when there are several), and Edit
/// and Regenerate for a turn whose message the person wrote.
fn turn_tools(
    turn: u64,
    asked: Option<String>,
    versions: Signal<BTreeMap<u64, Vec<Version>>>,
    redo: Signal<bool>,
    on_turn: Callback<TurnAction>,
) -> impl IntoView {
    let switcher = move || {
        let list = versions.with(|v| v.get(&turn).cloned())?;
        let at = list.iter().position(|v| v.current)?;
        let previous = at
            .checked_sub(1)
            .and_then(|i| list.get(i))
            .map(|v| v.id.clone());
        let next = list.get(at + 1).map(|v| v.id.clone());
        Some(view! {
            <span class="versions" data-testid="turn-versions" role="group" aria-label=format!("Versions of turn {turn}")>
                {version_button("‹", "previous-version", "Previous version", previous, redo, on_turn)}
                <span data-testid="version-position">{format!("{} / {}", at + 1, list.len())}</span>
                {version_button("›", "next-version", "Next version", next, redo, on_turn)}
            </span>
        })
    };
    let actions = asked.map(|text| {
        let edit_text = text.clone();
        view! {
            <Show when=move || redo.get()>
                {redo_button(
                    "edit-message",
                    "Change this message and send it again; the current version stays, and ‹ › switches between them",
                    "Edit",
                    on_turn,
                    TurnAction::Edit { turn, text: edit_text.clone() },
                )}
                {redo_button(
                    "regenerate",
                    "Ask for this answer again; the current one stays, and ‹ › switches between them",
                    "Regenerate",
                    on_turn,
                    TurnAction::Regenerate { turn, text: text.clone() },
                )}
            </Show>
        }
    });
    view! { <div class="turn-tools" data-testid="turn-tools">{switcher} {actions}</div> }
}

/// A button under a turn that redoes it (Edit or Regenerate) with `action`.
fn redo_button(
    test_id: &'static str,
    title: &'static str,
    label: &'static str,
    on_turn: Callback<TurnAction>,
    action: TurnAction,
) -> impl IntoView {
    view! {
        <button
            type="button"
            class="secondary small"
            data-testid=test_id
            title=title
            on:click=move |_| on_turn.run(action.clone())
        >
            {label}
        </button>
    }
}

/// A button of the version switcher: opens `target`, disabled where there is none or while
/// no turn can be redone.
fn version_button(
    arrow: &'static str,
    test_id: &'static str,
    label: &'static str,
    target: Option<String>,
    redo: Signal<bool>,
    on_turn: Callback<TurnAction>,
) -> impl IntoView {
    let missing = target.is_none();
    view! {
        <button
            type="button"
            class="secondary small"
            data-testid=test_id
            aria-label=label
            disabled=move || missing || !redo.get()
            on:click=move |_| {
                if let Some(id) = target.clone() {
                    on_turn.run(TurnAction::Open(id));
                }
            }
        >
            {arrow}
        </button>
    }
}

/// A cheap fingerprint of a turn's entries, so a turn re-renders when a banner is added or a
/// message changes.
fn entries_fingerprint(entries: &[ChatEntry]) -> usize {
    entries
        .iter()
        .map(|e| match e {
            ChatEntry::Message(m) => m.content.len() + m.seq as usize,
            ChatEntry::Banner(b) => b.len(),
            ChatEntry::EffortFold { count, folded, .. } => count + usize::from(*folded),
        })
        .sum()
}

fn entry_view(entry: ChatEntry, on_fold: Option<Callback<(String, bool)>>) -> AnyView {
    match entry {
        ChatEntry::EffortFold {
            effort,
            count,
            folded,
        } => {
            let label = if folded {
                format!(
                    "Show the {} of concluded effort {effort}",
                    crate::words::messages(count)
                )
            } else {
                format!(
                    "Fold the {} of concluded effort {effort}",
                    crate::words::messages(count)
                )
            };
            let words = if folded {
                format!(
                    "Effort {effort} (concluded) · {} folded",
                    crate::words::messages(count)
                )
            } else {
                format!(
                    "Effort {effort} (concluded) · {}",
                    crate::words::messages(count)
                )
            };
            let id = effort.clone();
            view! {
                <div class="effort-fold" data-testid="effort-fold" data-effort=effort data-folded=folded.to_string()>
                    <span>{words}</span>
                    <button
                        type="button"
                        class="secondary small"
                        aria-expanded=(!folded).to_string()
                        aria-label=label
                        on:click=move |_| {
                            if let Some(on_fold) = on_fold {
                                on_fold.run((id.clone(), !folded));
                            }
                        }
                    >
                        {if folded { "Show" } else { "Fold" }}
                    </button>
                </div>
            }
            .into_any()
        }
        ChatEntry::Banner(text) => view! {
            <div class="banner" data-testid="banner" role="note">{text}</div>
        }
        .into_any(),
        ChatEntry::Message(m) => {
            let (class, who) = match m.role {
                Role::User => ("message user", "You"),
                Role::Assistant => ("message assistant", "Assistant"),
                Role::System => ("message system", "System"),
            };
            let place = m
                .effort
                .clone()
                .map_or_else(|| "ambient".to_string(), |id| format!("effort {id}"));
            view! {
                <article class=class data-testid="message" data-role=m.role.as_str() data-seq=m.seq.to_string()>
                    <header class="message-head">
                        <span class="who">{who}</span>
                        <span class="meta">{format!("{place} · {} tokens", m.tokens)}</span>
                    </header>
                    {(!m.attachments.is_empty()).then(|| view! {
                        <ul class="attachments">
                            {m.attachments.into_iter().map(|(name, tokens)| view! {
                                <li class="attachment" data-testid="message-attachment">{format!("Attached: {name} · {tokens} tokens")}</li>
                            }).collect_view()}
                        </ul>
                    })}
                    <RichText text=m.content />
                </article>
            }
            .into_any()
        }
    }
}

fn live_view(live: LiveTurn) -> impl IntoView {
    view! {
        <section class="turn live" data-testid="live-turn" aria-busy="true">
            <article class="message user" data-testid="pending-message">
                <header class="message-head">
                    <span class="who">"You"</span>
                    <span class="meta">"sending"</span>
                </header>
                <RichText text=live.user_text />
            </article>
            <article class="message assistant streaming" data-testid="streaming-reply">
                <header class="message-head">
                    <span class="who">"Assistant"</span>
                </header>
                <RichText text=live.text />
                <p class="progress" data-testid="turn-progress" role="status">
                    <span class="spinner" aria-hidden="true"></span>
                    {live.phase.text()}
                </p>
            </article>
        </section>
    }
}

/// A turn that failed: what went wrong, in words, with Retry and Edit.
#[component]
pub fn FailedCard(
    /// The failed turn.
    failed: FailedTurn,
    /// Send the same text again.
    on_retry: Callback<String>,
    /// Put the text back into the message box.
    on_edit: Callback<String>,
) -> impl IntoView {
    let retry_text = failed.user_text.clone();
    let edit_text = failed.user_text.clone();
    view! {
        <div class="failed" data-testid="turn-error" role="alert">
            <p class="failed-title">"The reply failed"</p>
            <p class="failed-error" data-testid="turn-error-text">{failed.error}</p>
            <div class="row">
                <button type="button" data-testid="retry-turn" on:click=move |_| on_retry.run(retry_text.clone())>
                    "Retry"
                </button>
                <button type="button" class="secondary" on:click=move |_| on_edit.run(edit_text.clone())>
                    "Edit message"
                </button>
            </div>
        </div>
    }
}

/// The chat panel: the conversation, a failed turn, the conflict card, the session's usage,
/// and the message box with what goes out with the next message.
#[component]
pub fn ChatPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let transcript = transcript_memo(state);
    let (usage_lines, session_usage) = usage_texts(state, transcript);
    let ready = Signal::derive(move || matches!(state.notices.startup().get(), Startup::Ready(_)));
    let textarea = NodeRef::<html::Textarea>::new();
    let send = Callback::new(move |()| {
        let text = state.turn.draft().get_untracked();
        if text.trim().is_empty() || !ready.get_untracked() || state.blocked_now() {
            return;
        }
        if let Some(turn) = state.turn.editing().get_untracked() {
            // The edited message replaces the turn's message in a new version of the
            // conversation.
            state.turn.set_draft(String::new());
            spawn_local(chat_controls::resend_edited(state, turn, text));
        } else {
            turn::send_message(state, text);
        }
    });
    // The tour of examples: the index of the one to offer next, once the first was used.
    let tour = RwSignal::new(None::<usize>);
    let pick_example = Callback::new(move |index: usize| {
        let Some(example) = EXAMPLES.get(index) else {
            return;
        };
        if state.turn.in_turn() {
            return;
        }
        state.turn.set_draft(example.text.to_string());
        tour.set(Some(index + 1));
        if ready.get_untracked() {
            send.run(());
        } else if let Some(el) = textarea.get_untracked() {
            // Not ready to send yet: the example waits in the box, where Enter sends it.
            let _ = el.focus();
        }
    });
    let offline = Signal::derive(move || {
        state
            .settings
            .provider()
            .with(|p| p.choice == ProviderName::Offline)
    });
    let next_example = Signal::derive(move || {
        tour.get()
            .filter(|_| state.turn.live().with(Option::is_none))
    });
    // The message box gets the focus back when a reply ends, so a conversation stays
    // keyboard-only; focus the person moved to another field stays where it is.
    Effect::new(move |_| {
        if state.turn.live().with(Option::is_some) {
            return;
        }
        let elsewhere = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        if let Some(el) = textarea.get() {
            if !elsewhere {
                let _ = el.focus();
            }
        }
    });
    view! {
        <div class="chat-panel">
            <ExpandedBefore />
            <Conversation
                transcript=transcript
                usage=usage_lines
                textarea=textarea
                empty=move || view! { <Welcome offline=offline on_pick=pick_example /> }
            />
            <LastFailure />
            <ConflictCard />
            {move || {
                session_usage
                    .get()
                    .map(|text| view! { <p class="session-usage" data-testid="session-usage">{text}</p> })
            }}
            <EditingHint />
            <PendingAttachments />
            <NextExample next=next_example on_pick=pick_example on_dismiss=Callback::new(move |()| tour.set(None)) />
            <Composer textarea=textarea ready=ready send=send />
        </div>
    }
}

/// The current session's transcript: what the session holds, merged with the stored
/// conversation read after opening it (`ArchiveState::Read`).
fn transcript_memo(state: AppState) -> Memo<Transcript> {
    Memo::new(move |_| {
        let live = state
            .session
            .derive(view_model::transcript)
            .unwrap_or_default();
        let current = state.session.id().get();
        state.session.archive().with(|archive| match archive {
            ArchiveState::Read {
                session_id,
                transcript,
                ..
            } if current.as_ref() == Some(session_id) => {
                view_model::merge_transcripts(&live, transcript)
            }
            _ => live,
        })
    })
}

/// Tokens and cost per turn, and the line for the whole session, priced for the model now
/// chosen.
fn usage_texts(
    state: AppState,
    transcript: Memo<Transcript>,
) -> (Signal<BTreeMap<u64, String>>, Signal<Option<String>>) {
    let turn_usage = Memo::new(move |_| {
        transcript
            .with(|t| {
                state.session.stored_telemetry().with(|stored| {
                    state
                        .session
                        .derive(|core| view_model::turn_usage(core, t, stored))
                })
            })
            .unwrap_or_default()
    });
    let price = Memo::new(move |_| state.settings.provider().with(|p| p.model_info()));
    let usage_lines = Signal::derive(move || {
        let price = price.get();
        turn_usage.with(|usage| {
            usage
                .iter()
                .map(|(turn, u)| (*turn, view_model::usage_text(u, price.as_ref())))
                .collect::<BTreeMap<u64, String>>()
        })
    });
    let session_usage = Signal::derive(move || {
        let price = price.get();
        turn_usage.with(|usage| {
            (!usage.is_empty()).then(|| {
                let total = view_model::total_usage(usage.values());
                format!(
                    "This session: {}",
                    view_model::usage_text(&total, price.as_ref())
                )
            })
        })
    });
    (usage_lines, session_usage)
}

/// The conversation with its turn tools: folding of concluded efforts, the versions of each
/// turn, Edit (into the message box `textarea`) and Regenerate.
#[component]
fn Conversation(
    /// The session's transcript.
    transcript: Memo<Transcript>,
    /// Tokens and cost by turn.
    usage: Signal<BTreeMap<u64, String>>,
    /// The message box, which Edit fills and focuses.
    textarea: NodeRef<html::Textarea>,
    /// What shows while the conversation is empty.
    #[prop(into)]
    empty: ViewFn,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    // Concluded efforts whose messages the person folded away.
    let folded = RwSignal::new(BTreeSet::<String>::new());
    let groups = Memo::new(move |_| {
        let banners = state.turn.banners().get();
        let folded = folded.get();
        transcript.with(|t| {
            view_model::fold_efforts(view_model::turn_groups(t, &banners), &t.concluded, &folded)
        })
    });
    let hidden = Signal::derive(move || transcript.with(|t| t.hidden));
    let reading = Signal::derive(move || {
        state
            .session
            .archive()
            .with(|a| matches!(a, ArchiveState::Reading))
    });
    let on_fold = Callback::new(move |(effort, fold): (String, bool)| {
        folded.update(|f| {
            if fold {
                f.insert(effort);
            } else {
                f.remove(&effort);
            }
        });
    });
    // Edit and Regenerate are offered on every turn while no turn runs and no other tab's
    // newer version is pending; the versions they made are browsed in place.
    let redo = Memo::new(move |_| {
        state.session.track();
        state.turn.live().with(Option::is_none)
            && state.turn.editing().with(Option::is_none)
            && chat_controls::can_redo(&state)
    });
    let versions = Memo::new(move |_| {
        state.session.track();
        let Some(current) = state.session.id().get() else {
            return BTreeMap::new();
        };
        let turns = state.session.read(|core| core.turn()).unwrap_or(0);
        state
            .session
            .list()
            .with(|list| Families::of(list).turn_versions(&current, turns))
    });
    let on_turn = Callback::new(move |action: TurnAction| match action {
        TurnAction::Edit { turn, text } => {
            state.turn.set_draft(text);
            state.turn.set_editing(Some(turn));
            if let Some(el) = textarea.get_untracked() {
                let _ = el.focus();
            }
        }
        TurnAction::Regenerate { turn, text } => {
            spawn_local(chat_controls::regenerate(state, turn, text));
        }
        TurnAction::Open(id) => spawn_local(chat_controls::open_version(state, id)),
    });
    view! {
        <ChatLog
            groups=groups
            hidden=hidden
            reading=reading
            usage=usage
            on_fold=on_fold
            live=state.turn.live()
            versions=versions
            redo=redo
            on_turn=on_turn
            empty=empty
        />
    }
}

/// The last turn, when it failed: Retry sends it again, Edit puts it back into the box.
#[component]
fn LastFailure() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        state.turn.failed().get().map(|failed| {
            view! {
                <FailedCard
                    failed=failed
                    on_retry=Callback::new(move |text: String| {
                        state.turn.clear_failed();
                        turn::send_message(state, text);
                    })
                    on_edit=Callback::new(move |text: String| {
                        state.turn.clear_failed();
                        state.turn.set_draft(text);
                    })
                />
            }
        })
    }
}

/// Says which turn's message is being edited in the box, with Cancel.
#[component]
fn EditingHint() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        state
            .turn
            .editing()
            .get()
            .map(|turn| {
                view! {
                    <div class="hint editing" data-testid="editing" role="status">
                        <span>{format!("Editing your message of turn {turn}: Send makes a new version of the conversation from here, and the current one stays (‹ › switches between them).")}</span>
                        <button
                            type="button"
                            class="secondary small"
                            data-testid="cancel-edit"
                            on:click=move |_| {
                                state.turn.set_editing(None);
                                state.turn.set_draft(String::new());
                            }
                        >
                            "Cancel"
                        </button>
                    </div>
                }
            })
    }
}

/// The files waiting to go out with the next message, each with its tokens and a remove
/// button.
#[component]
fn PendingAttachments() -> impl IntoView {
    let state = expect_context::<AppState>();
    let pending_list = move || {
        let files: Vec<(usize, PendingAttachment)> = state
            .turn
            .attachments()
            .get()
            .into_iter()
            .enumerate()
            .collect();
        files
    };
    view! {
        <Show when=move || state.turn.attachments().with(|a| !a.is_empty())>
            <ul class="attachments pending" data-testid="pending-attachments" aria-label="Files attached to your next message">
                <For
                    each=pending_list
                    key=|(i, a)| (*i, a.name.clone())
                    let:item
                >
                    {
                        let (index, file) = item;
                        let name = file.name.clone();
                        view! {
                            <li class="attachment" data-testid="pending-attachment" data-name=file.name.clone()>
                                <span>{format!("{} · {} tokens", file.name, file.tokens)}</span>
                                <button
                                    type="button"
                                    class="dismiss"
                                    aria-label=format!("Remove {name}")
                                    disabled=move || state.turn.live().with(Option::is_some)
                                    on:click=move |_| state.turn.remove_attachment(index)
                                >
                                    "×"
                                </button>
                            </li>
                        }
                    }
                </For>
            </ul>
        </Show>
    }
}

/// The message box (Enter sends, Shift+Enter adds a line), Attach, and Send or Stop.
#[component]
fn Composer(
    /// The message box.
    textarea: NodeRef<html::Textarea>,
    /// Whether the tokenizer and storage are ready, so a message can be sent.
    ready: Signal<bool>,
    /// Sends the text in the box.
    send: Callback<()>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let touch =
        crate::components::media::media_query(crate::components::media::TOUCH_OR_NARROW_QUERY);
    let file_input = NodeRef::<html::Input>::new();
    view! {
        <form
            class="composer"
            on:submit=move |ev| {
                ev.prevent_default();
                send.run(());
            }
        >
            <label class="visually-hidden" for="message-box">
                "Message"
            </label>
            <textarea
                id="message-box"
                data-testid="message-input"
                node_ref=textarea
                rows="2"
                placeholder=move || if touch.get() { "Message" } else { "Message (Enter to send, Shift+Enter for a new line)" }
                aria-keyshortcuts="/ Shift+Escape"
                prop:value=move || state.turn.draft().get()
                on:input=move |ev| state.turn.set_draft(event_target_value(&ev))
                on:keydown=move |ev| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                        ev.prevent_default();
                        send.run(());
                    }
                }
            ></textarea>
            <input
                type="file"
                class="visually-hidden"
                tabindex="-1"
                aria-hidden="true"
                aria-label="Attach a text file"
                multiple=true
                accept="text/*,.md,.markdown,.txt,.json,.yaml,.yml,.toml,.csv,.rs,.py,.js,.ts,.go,.java,.c,.h,.cpp,.sh,.sql,.html,.css"
                data-testid="attach-input"
                node_ref=file_input
                on:change=move |ev| {
                    let input: web_sys::HtmlInputElement = event_target(&ev);
                    let files: Vec<web_sys::File> = input
                        .files()
                        .map(|list| (0..list.length()).filter_map(|i| list.get(i)).collect())
                        .unwrap_or_default();
                    // The same file can be chosen again later.
                    input.set_value("");
                    spawn_local(async move {
                        for file in files {
                            chat_controls::add_file(state, file).await;
                        }
                    });
                }
            />
            <button
                type="button"
                class="secondary attach"
                data-testid="attach"
                aria-label="Attach a text file"
                title="Attach a text, Markdown or code file to your next message"
                disabled=move || state.turn.live().with(Option::is_some)
                on:click=move |_| {
                    if let Some(input) = file_input.get_untracked() {
                        input.click();
                    }
                }
            >
                "Attach"
            </button>
            <Show
                when=move || state.turn.live().with(Option::is_some)
                fallback=move || {
                    view! {
                        <button
                            type="submit"
                            data-testid="send"
                            disabled=move || {
                                !ready.get() || state.blocked()
                                    || state.turn.draft().with(|d| d.trim().is_empty())
                            }
                        >
                            {move || match state.notices.startup().get() {
                                Startup::Ready(_) => "Send",
                                Startup::Failed(_) => "Unavailable",
                                _ => "Loading…",
                            }}
                        </button>
                    }
                }
            >
                <button
                    type="button"
                    class="stop"
                    data-testid="stop"
                    aria-label="Stop the reply"
                    aria-keyshortcuts="Escape"
                    title="Stop the reply (Esc)"
                    on:click=move |_| turn::stop(state)
                >
                    "Stop"
                </button>
            </Show>
        </form>
    }
}

/// Efforts that were expanded when the session was last used: expansions are not kept when a
/// session is stored, so after a reload they are collapsed, and this says so, with a button
/// to expand each again. An effort expanded again leaves the list.
#[component]
fn ExpandedBefore() -> impl IntoView {
    let state = expect_context::<AppState>();
    let efforts = Memo::new(move |_| {
        let current = state.session.id().get();
        let before = state.session.archive().with(|archive| match archive {
            ArchiveState::Read {
                session_id,
                expanded_before,
                ..
            } if current.as_ref() == Some(session_id) => expanded_before.clone(),
            _ => Vec::new(),
        });
        state
            .session
            .derive(|core| {
                before
                    .into_iter()
                    .filter(|id| core.efforts().expansion(id).is_none())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    });
    view! {
        <Show when=move || efforts.with(|e| !e.is_empty())>
            <div class="hint expanded-before" data-testid="expanded-before" role="status">
                <span>
                    {move || {
                        let list = efforts.get().join(", ");
                        format!("Expanded before the reload, collapsed now (expansions are not kept): {list}.")
                    }}
                </span>
                <For each=move || efforts.get() key=|id| id.clone() let:id>
                    <button
                        type="button"
                        class="secondary small"
                        data-testid="expand-again"
                        data-effort=id.clone()
                        on:click={
                            let id = id.clone();
                            move |_| {
                                let id = id.clone();
                                spawn_local(async move {
                                    state.effort_action(EffortAction::Expand, id, None).await;
                                });
                            }
                        }
                    >
                        {format!("Expand {id} again")}
                    </button>
                </For>
            </div>
        </Show>
    }
}
