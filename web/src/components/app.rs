//! The root component: start-up (tokenizer table, storage, last session), the header, notices, the
//! chat and the side panel, and the mode hotkey.

use crate::chart;
use crate::components::chat::ChatPanel;
use crate::components::curves::TokenCurves;
use crate::components::dialogs::{run_action, ConcludeDialog, LogViewer};
use crate::components::inspector::Inspector;
use crate::components::sessions::SessionsPanel;
use crate::components::settings::SettingsPanel;
use crate::components::theme::ThemeSwitch;
use crate::components::tiers::TierView;
use crate::state::{AppState, NoticeKind, Panel, Startup};
use crate::transport::{js_error_text, timeout};
use crate::view_model::{self, EffortAction};
use ccm_core::tokens::Encoding;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Where the app's server has the rank tables (Trunk copies them next to index.html).
fn table_url(encoding: Encoding) -> String {
    format!("{}.ccmt", encoding.name())
}

/// Loads the default encoding's rank table (download and parse progress in the header; the
/// page stays responsive, so the message box takes text meanwhile), then opens storage and
/// the last session, then loads the other encoding in the background for imported sessions.
async fn start(state: AppState) {
    let started = js_sys::Date::now();
    let report = |done: usize, total: usize, phase: &str| {
        state.startup.set(Startup::Tokenizer {
            phase: phase.to_string(),
            done,
            total,
        });
    };
    let encoding = Encoding::O200kBase;
    if let Err(error) =
        ccm_tokens_wasm::load_from_url(encoding.tokenizer_encoding(), &table_url(encoding), &report)
            .await
    {
        let message = format!(
            "The tokenizer table could not be loaded ({}). CCM needs it to count tokens; reload the page to try again.",
            js_error_text(&error)
        );
        state.notify(NoticeKind::Error, message.clone());
        state.startup.set(Startup::Failed(message));
        return;
    }
    let took = js_sys::Date::now() - started;
    state.startup.set(Startup::Storage);
    timeout(0.0).await;
    state.open_storage().await;
    state.startup.set(Startup::Ready(format!(
        "Tokenizer o200k_base loaded in {took:.0} ms"
    )));
    let other = Encoding::Cl100kBase;
    if let Err(error) =
        ccm_tokens_wasm::load_from_url(other.tokenizer_encoding(), &table_url(other), &|_, _, _| {})
            .await
    {
        state.notify(
            NoticeKind::Info,
            format!(
                "The cl100k_base table could not be loaded ({}); sessions that use it cannot open until a reload.",
                js_error_text(&error)
            ),
        );
    }
}

/// The header's status while the tokenizer loads: what is happening and how far along.
fn tokenizer_progress(phase: &str, done: usize, total: usize) -> String {
    let what = if phase == "parse" {
        "Preparing the tokenizer"
    } else {
        "Downloading the tokenizer"
    };
    match (phase, total) {
        (_, 0) if done == 0 => format!("{what}…"),
        ("download", 0) => format!("{what}… {} KiB", done / 1024),
        _ => format!("{what}… {}%", (done * 100 / total.max(1)).min(100)),
    }
}

/// The app.
#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new();
    provide_context(state);
    spawn_local(start(state));

    let concluding = RwSignal::new(None::<String>);
    // A dialog belongs to the panel it was opened from: switching panels closes it.
    Effect::new(move |previous: Option<Panel>| {
        let panel = state.panel.get();
        if previous.is_some_and(|p| p != panel) {
            concluding.set(None);
            state.open_log.set(None);
        }
        panel
    });

    // Alt+M cycles the context mode and opens the budget breakdown, from anywhere.
    let hotkey = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.alt_key() && !ev.ctrl_key() && !ev.meta_key() && ev.code() == "KeyM" {
            ev.prevent_default();
            state.panel.set(Panel::Context);
            state.cycle_mode();
        }
    });
    on_cleanup(move || hotkey.remove());
    // A turn still running when the app goes away is cancelled, so no request outlives it.
    on_cleanup(move || crate::turn::stop(state));

    let tiers = Memo::new(move |_| {
        state
            .derive(|core| view_model::tiers(core))
            .unwrap_or_default()
    });
    let inspector = Memo::new(move |_| state.derive(|core| view_model::inspector(core)));
    let points = Memo::new(move |_| {
        state
            .derive(|core| chart::curve_points(core.history(), core.telemetry()))
            .unwrap_or_default()
    });
    let meter = Memo::new(move |_| {
        state
            .derive(|core| core.build_plan().meter.line)
            .unwrap_or_default()
    });
    let on_action = Callback::new(move |(action, id): (EffortAction, String)| {
        run_action(state, concluding, action, id)
    });
    let on_pin = Callback::new(move |(target, pinned): (String, bool)| {
        spawn_local(async move { state.set_pin(target, pinned).await })
    });
    let on_cycle_mode = Callback::new(move |()| state.cycle_mode());
    let session_name = Memo::new(move |_| {
        let id = state.session_id.get();
        state.sessions.with(|list| {
            list.iter()
                .find(|s| Some(&s.id) == id.as_ref())
                .map(|s| s.name.clone())
                .unwrap_or_else(|| "Unsaved session".to_string())
        })
    });

    view! {
        <div class="app" class:show-chat=move || state.panel.get() == Panel::Chat>
            <header class="top">
                <h1>"CCM"</h1>
                <span class="session-name" data-testid="session-name">{session_name}</span>
                <span class="provider" data-testid="provider-label" title=move || state.provider.with(|p| p.choice.label().to_string())>
                    {move || state.provider.with(|p| p.short_label())}
                </span>
                <span class="meter-line" data-testid="header-meter" title="Budget meter (Alt+M cycles the mode)">{meter}</span>
                <span class="status" role="status" data-testid="startup">
                    {move || match state.startup.get() {
                        Startup::Tokenizer { phase, done, total } => view! {
                            <span class="spinner" aria-hidden="true"></span>
                            <span data-testid="tokenizer-progress">{tokenizer_progress(&phase, done, total)}</span>
                        }.into_any(),
                        Startup::Failed(_) => view! { <span class="failed" data-testid="startup-failed">"Tokenizer unavailable"</span> }.into_any(),
                        Startup::Storage => view! { <span class="spinner" aria-hidden="true"></span> "Opening saved sessions…" }.into_any(),
                        Startup::Ready(note) => view! { <span class="ready" data-testid="ready" title=note>"Ready"</span> }.into_any(),
                    }}
                    {move || state.busy.get().map(|b| view! { <span class="busy" data-testid="busy"><span class="spinner" aria-hidden="true"></span>{b}</span> })}
                </span>
                <span class="header-tools">
                    <ThemeSwitch />
                </span>
            </header>
            <div class="notices" data-testid="notices">
                {move || {
                    state
                        .notices
                        .get()
                        .into_iter()
                        .map(|n| {
                            let (class, role) = match n.kind {
                                NoticeKind::Info => ("notice info", "status"),
                                NoticeKind::Error => ("notice error", "alert"),
                            };
                            let id = n.id;
                            view! {
                                <div class=class role=role data-testid="notice">
                                    <span>{n.text}</span>
                                    <button type="button" class="dismiss" aria-label="Dismiss" on:click=move |_| state.dismiss(id)>"×"</button>
                                </div>
                            }
                        })
                        .collect_view()
                }}
            </div>
            <nav class="tabs" aria-label="Panels">
                {Panel::TABS
                    .into_iter()
                    .map(|panel| {
                        view! {
                            <button
                                type="button"
                                class=if panel == Panel::Chat { "tab chat-tab" } else { "tab" }
                                data-testid=format!("tab-{}", panel.key())
                                aria-pressed=move || (state.panel.get() == panel).to_string()
                                on:click=move |_| state.panel.set(panel)
                            >
                                {panel.label()}
                            </button>
                        }
                    })
                    .collect_view()}
            </nav>
            <main class="layout">
                <section class="chat" aria-label="Chat">
                    <ChatPanel />
                </section>
                <aside class="side" aria-label="Context management">
                    {move || match state.panel.get() {
                        Panel::Memory | Panel::Chat => view! { <TierView tiers=tiers on_action=on_action /> }.into_any(),
                        Panel::Context => view! {
                            <Inspector snapshot=inspector breakdown_open=state.breakdown_open on_pin=on_pin on_cycle_mode=on_cycle_mode />
                        }
                        .into_any(),
                        Panel::Tokens => view! { <TokenCurves points=points /> }.into_any(),
                        Panel::Sessions => view! { <SessionsPanel /> }.into_any(),
                        Panel::Settings => view! { <SettingsPanel /> }.into_any(),
                    }}
                </aside>
            </main>
            <ConcludeDialog effort=concluding />
            <LogViewer />
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::tokenizer_progress;

    #[test]
    fn tokenizer_progress_says_what_happens_and_how_far() {
        assert_eq!(
            tokenizer_progress("download", 0, 0),
            "Downloading the tokenizer…"
        );
        assert_eq!(
            tokenizer_progress("download", 600 * 1024, 0),
            "Downloading the tokenizer… 600 KiB"
        );
        assert_eq!(
            tokenizer_progress("download", 300, 1200),
            "Downloading the tokenizer… 25%"
        );
        assert_eq!(
            tokenizer_progress("parse", 199_998, 199_998),
            "Preparing the tokenizer… 100%"
        );
    }
}
