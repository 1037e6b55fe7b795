//! The chat: the conversation so far (a welcome with example messages while it is empty), the
//! reply being written, a failed turn with Retry, and the message box (Enter sends,
//! Shift+Enter adds a line).

use crate::components::rich_text::RichText;
use crate::components::welcome::{NextExample, Welcome, EXAMPLES};
use crate::provider::ProviderChoice;
use crate::state::{AppState, FailedTurn, LiveTurn, Startup};
use crate::turn;
use crate::view_model::{self, ChatEntry, TurnGroup};
use ccm_core::model::Role;
use leptos::html;
use leptos::prelude::*;

/// The conversation, turn by turn, with banners as quiet notices between the messages.
#[component]
pub fn ChatLog(
    /// The turns to show, oldest first.
    #[prop(into)]
    groups: Signal<Vec<TurnGroup>>,
    /// Stored messages not loaded (concluded efforts' logs of a session opened from storage).
    #[prop(into)]
    hidden: Signal<u64>,
    /// The turn in progress, if any.
    #[prop(into)]
    live: Signal<Option<LiveTurn>>,
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
                <p class="hint" data-testid="hidden-messages">
                    {move || {
                        format!(
                            "{} earlier messages belong to concluded efforts and are stored, not loaded. Read them from Memory › Raw logs.",
                            hidden.get(),
                        )
                    }}
                </p>
            </Show>
            <For
                each=move || groups.get()
                key=|group| (group.turn, group.entries.len(), entries_fingerprint(&group.entries))
                let:group
            >
                <section class="turn" data-testid="turn" data-turn=group.turn.to_string()>
                    {group.entries.into_iter().map(entry_view).collect_view()}
                </section>
            </For>
            {move || live.get().map(live_view)}
        </div>
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
        })
        .sum()
}

fn entry_view(entry: ChatEntry) -> AnyView {
    match entry {
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

/// The chat panel: log, failed turn, and the message box.
#[component]
pub fn ChatPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let transcript = Memo::new(move |_| {
        state
            .derive(|core| view_model::transcript(core))
            .unwrap_or_default()
    });
    let groups = Memo::new(move |_| {
        let banners = state.banners.get();
        transcript.with(|t| view_model::turn_groups(t, &banners))
    });
    let hidden = Signal::derive(move || transcript.with(|t| t.hidden));
    let ready = Signal::derive(move || matches!(state.startup.get(), Startup::Ready(_)));
    let textarea = NodeRef::<html::Textarea>::new();
    let send = move || {
        let text = state.draft.get_untracked();
        if !text.trim().is_empty() && ready.get_untracked() {
            turn::send_message(state, text);
        }
    };
    // The tour of examples: the index of the one to offer next, once the first was used.
    let tour = RwSignal::new(None::<usize>);
    let pick_example = Callback::new(move |index: usize| {
        let Some(example) = EXAMPLES.get(index) else {
            return;
        };
        if state.in_turn() {
            return;
        }
        state.draft.set(example.text.to_string());
        tour.set(Some(index + 1));
        if ready.get_untracked() {
            send();
        } else if let Some(el) = textarea.get_untracked() {
            // Not ready to send yet: the example waits in the box, where Enter sends it.
            let _ = el.focus();
        }
    });
    let offline =
        Signal::derive(move || state.provider.with(|p| p.choice == ProviderChoice::Offline));
    let next_example =
        Signal::derive(move || tour.get().filter(|_| state.live.with(Option::is_none)));
    // The message box gets the focus back when a reply ends, so a conversation stays
    // keyboard-only; focus the person moved to another field stays where it is.
    Effect::new(move |_| {
        if state.live.with(Option::is_some) {
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
            <ChatLog
                groups=groups
                hidden=hidden
                live=state.live
                empty=move || view! { <Welcome offline=offline on_pick=pick_example /> }
            />
            {move || {
                state
                    .failed
                    .get()
                    .map(|failed| {
                        view! {
                            <FailedCard
                                failed=failed
                                on_retry=Callback::new(move |text: String| {
                                    state.failed.set(None);
                                    turn::send_message(state, text);
                                })
                                on_edit=Callback::new(move |text: String| {
                                    state.failed.set(None);
                                    state.draft.set(text);
                                })
                            />
                        }
                    })
            }}
            <NextExample next=next_example on_pick=pick_example on_dismiss=Callback::new(move |()| tour.set(None)) />
            <form
                class="composer"
                on:submit=move |ev| {
                    ev.prevent_default();
                    send();
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
                    placeholder="Message (Enter to send, Shift+Enter for a new line)"
                    aria-keyshortcuts="/ Shift+Escape"
                    prop:value=move || state.draft.get()
                    on:input=move |ev| state.draft.set(event_target_value(&ev))
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                            ev.prevent_default();
                            send();
                        }
                    }
                ></textarea>
                <Show
                    when=move || state.live.with(Option::is_some)
                    fallback=move || {
                        view! {
                            <button
                                type="submit"
                                data-testid="send"
                                disabled=move || {
                                    !ready.get() || state.draft.with(|d| d.trim().is_empty())
                                }
                            >
                                {move || match state.startup.get() {
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
        </div>
    }
}
