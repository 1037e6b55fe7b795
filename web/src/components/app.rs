//! The root component: start-up (tokenizer table, storage, last session), the header (a plain
//! status line, the theme switch, the shortcuts), notices, the chat and the side panel, and
//! the keyboard shortcuts.

use crate::chart::{self, format_tokens};
use crate::components::chat::ChatPanel;
use crate::components::curves::TokenCurves;
use crate::components::dialogs::{run_action, ConcludeDialog, LogViewer};
use crate::components::inspector::Inspector;
use crate::components::media::{media_query, PHONE_QUERY};
use crate::components::sessions::SessionsPanel;
use crate::components::settings::SettingsPanel;
use crate::components::shortcuts::{command_for, takes_text, Command, KeyPress, ShortcutsDialog};
use crate::components::theme::ThemeSwitch;
use crate::components::tiers::TierView;
use crate::js::{js_error_text, timeout};
use crate::provider::ProviderInSettings;
use crate::state::{AppState, NoticeKind, Panel, Startup};
use crate::view_model::{self, EffortAction, TierSnapshot};
use ccm_core::ContextPlan;
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;

/// Loads the common-scripts part of the default encoding's rank table (download and parse
/// progress in the header; the page stays responsive, so the message box takes text
/// meanwhile), then opens storage and the last session. The whole table follows when a turn or
/// an import needs it (`crate::tokenizer`), and the other encoding's table (cl100k_base) only
/// when a session counted with it is opened or imported (`state::load_table_for`).
async fn start(state: AppState) {
    let started = js_sys::Date::now();
    let report = |done: usize, total: usize, phase: &str| {
        state.notices.set_startup(Startup::Tokenizer {
            phase: phase.to_string(),
            done,
            total,
        });
    };
    let encoding = crate::tokenizer::APP_ENCODING;
    let url = crate::tokenizer::common_scripts_table_url();
    if let Err(error) =
        ccm_tokens_wasm::load_from_url(encoding.tokenizer_encoding(), &url, &report).await
    {
        let message = format!(
            "The tokenizer table could not be loaded ({}). CCM needs it to count tokens; reload the page to try again.",
            js_error_text(&error)
        );
        state.notices.notify(NoticeKind::Error, message.clone());
        state.notices.set_startup(Startup::Failed(message));
        return;
    }
    let took = js_sys::Date::now() - started;
    state.notices.set_startup(Startup::Storage);
    timeout(0.0).await;
    state.open_storage().await;
    crate::tabs::listen(state);
    state.notices.set_startup(Startup::Ready(format!(
        "Tokenizer o200k_base loaded in {took:.0} ms"
    )));
    crate::tokenizer::after_start(state);
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

/// The header's status in plain words: how much the model is sent against its budget (the
/// context and the tool definitions that go with every request, which it names), and how many
/// efforts are open, expanded and summarised in its memory.
pub fn plain_status(
    context_tokens: u64,
    tool_tokens: u64,
    request_budget: u64,
    open: usize,
    expanded: usize,
    summaries: usize,
) -> String {
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut sent = format!(
        "The model sees {} of {} tokens",
        format_tokens(context_tokens + tool_tokens),
        format_tokens(request_budget)
    );
    if tool_tokens > 0 {
        let word = if tool_tokens == 1 { "token" } else { "tokens" };
        sent.push_str(&format!(
            ", including {} {word} of tool definitions",
            format_tokens(tool_tokens)
        ));
    }
    let mut parts = vec![sent];
    if open + expanded + summaries == 0 {
        parts.push("no effort open".to_string());
    }
    if open > 0 {
        parts.push(count(open, "effort open", "efforts open"));
    }
    if expanded > 0 {
        parts.push(format!("{expanded} expanded"));
    }
    if summaries > 0 {
        parts.push(count(summaries, "summary", "summaries"));
    }
    parts.join(" · ")
}

/// The header's status line while no session is open yet.
const LOADING_STATUS: &str = "Opening your conversation…";

/// Focuses an element by its id once the view has caught up with a panel switch (a panel
/// hidden by the layout cannot take the focus until it is shown).
fn focus_soon(id: &'static str) {
    spawn_local(async move {
        timeout(0.0).await;
        let element = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(id))
            .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok());
        if let Some(element) = element {
            let _ = element.focus();
        }
    });
}

/// Whether a dialog is open; it owns the keyboard then.
fn dialog_open() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector("dialog[open]").ok().flatten())
        .is_some()
}

/// The app.
#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new();
    provide_context(state);
    // A phone shows one panel at a time: it starts on the chat, with the message box in view.
    let narrow = media_query(PHONE_QUERY);
    if narrow.get_untracked() {
        state.panels.show(Panel::Chat);
    }
    spawn_local(start(state));
    crate::sync::keep_retrying(state);

    let help_open = RwSignal::new(false);
    let concluding = RwSignal::new(None::<String>);
    // A dialog belongs to the panel it was opened from: switching panels closes it.
    Effect::new(move |previous: Option<Panel>| {
        let panel = state.panels.panel().get();
        if previous.is_some_and(|p| p != panel) {
            concluding.set(None);
            state.session.close_log();
            help_open.set(false);
        }
        panel
    });
    listen_for_shortcuts(state, narrow, help_open);
    // A turn still running when the app goes away is cancelled, so no request outlives it.
    on_cleanup(move || crate::turn::stop(state));

    // The plan of the next request, built once per change of the session and shared by the
    // tiers, the inspector and the meter (a plan costs about as much as a turn).
    let plan = Memo::new(move |_| state.session.derive(|core| core.build_plan()));
    let tiers = Memo::new(move |_| {
        plan.with(|plan| {
            let plan = plan.as_ref()?;
            state
                .session
                .derive(|core| view_model::tiers_with_plan(core, plan))
        })
        .unwrap_or_default()
    });
    view! {
        <div class="app" class:show-chat=move || state.panels.panel().get() == Panel::Chat>
            <Header plan=plan tiers=tiers help_open=help_open />
            <Notices />
            <PanelTabs narrow=narrow />
            <main class="layout">
                <section class="chat" aria-label="Chat">
                    <ChatPanel />
                </section>
                <SidePanel plan=plan tiers=tiers concluding=concluding />
            </main>
            <ConcludeDialog effort=concluding />
            <LogViewer />
            <ShortcutsDialog open=help_open />
        </div>
    }
}

/// The keyboard shortcuts (components::shortcuts lists them), from anywhere but a dialog, for
/// as long as the app is mounted. `narrow`: one panel at a time (phone width); `help_open`
/// opens the list of shortcuts.
fn listen_for_shortcuts(state: AppState, narrow: Signal<bool>, help_open: RwSignal<bool>) {
    let hotkeys = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.default_prevented() || ev.is_composing() || dialog_open() {
            return;
        }
        let typing = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| takes_text(&el));
        let (key, code) = (ev.key(), ev.code());
        let press = KeyPress {
            key: &key,
            code: &code,
            alt: ev.alt_key(),
            ctrl: ev.ctrl_key(),
            meta: ev.meta_key(),
            shift: ev.shift_key(),
            typing,
        };
        let Some(command) = command_for(&press, state.turn.in_turn()) else {
            return;
        };
        ev.prevent_default();
        match command {
            Command::Stop => crate::turn::stop(state),
            Command::FocusMessage => {
                if narrow.get_untracked() {
                    state.panels.show(Panel::Chat);
                }
                focus_soon("message-box");
            }
            Command::OpenSettings => {
                state.panels.show(Panel::Settings);
                focus_soon("side-panel");
            }
            Command::CycleMode => {
                state.panels.show(Panel::Context);
                state.cycle_mode();
            }
            Command::Help => help_open.set(true),
        }
    });
    on_cleanup(move || hotkeys.remove());
}

/// The header: the session's name, the provider, the plain status line (the plan's meter as
/// its tooltip), start-up and sync, the theme switch and the shortcuts button.
#[component]
fn Header(
    /// The plan of the next request (`None` before a session is open).
    plan: Memo<Option<ContextPlan>>,
    /// The effort tiers.
    tiers: Memo<TierSnapshot>,
    /// Opens the list of keyboard shortcuts.
    help_open: RwSignal<bool>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    // The plan's meter line and totals: the header says them in plain words, and keeps the
    // meter's own line as its tooltip.
    let plan_totals = Memo::new(move |_| {
        plan.with(|plan| {
            plan.as_ref().map(|plan| {
                (
                    plan.meter.line.clone(),
                    plan.totals.context_tokens,
                    plan.budget.request_budget,
                )
            })
        })
    });
    // Until a session is open there is nothing to count: the header says it is loading rather
    // than "0 of 0 tokens".
    // The tool definitions go with every request, so the header counts them with the context.
    let tool_tokens = Memo::new(move |_| {
        plan.track();
        state
            .session
            .derive(view_model::tool_definition_tokens)
            .unwrap_or_default()
    });
    let status_line = Memo::new(move |_| {
        let Some((_, context, budget)) = plan_totals.get() else {
            return LOADING_STATUS.to_string();
        };
        let tools = tool_tokens.get();
        tiers.with(|t| {
            plain_status(
                context,
                tools,
                budget,
                t.open.len(),
                t.expanded.len(),
                t.summaries.len(),
            )
        })
    });
    let status_loading = move || plan_totals.with(Option::is_none);
    let status_title = move || {
        plan_totals.with(|totals| match totals {
            Some((line, _, _)) => format!("{line} (Alt+M switches the context mode)"),
            None => "The budget meter appears once the conversation is open.".to_string(),
        })
    };
    let session_name = Memo::new(move |_| {
        let id = state.session.id().get();
        state.session.list().with(|list| {
            list.iter()
                .find(|s| Some(&s.id) == id.as_ref())
                .map(|s| s.name.clone())
                .unwrap_or_else(|| "Unsaved session".to_string())
        })
    });

    view! {
    <header class="top">
        <h1>"CCM"</h1>
        <span class="session-name" data-testid="session-name">{session_name}</span>
        <span class="provider" data-testid="provider-label" title=move || state.settings.provider().with(|p| p.choice.settings_label())>
            {move || state.settings.provider().with(|p| p.short_label())}
        </span>
        <span class="plain-status" data-testid="header-status" data-loading=move || status_loading().to_string() title=status_title>{status_line}</span>
        <StartupStatus />
        <span class="header-tools">
            <ThemeSwitch />
            <button
                type="button"
                class="secondary"
                data-testid="open-shortcuts"
                aria-label="Keyboard shortcuts"
                aria-keyshortcuts="?"
                title="Keyboard shortcuts (?)"
                on:click=move |_| help_open.set(true)
            >
                "?"
            </button>
        </span>
    </header>
    }
}

/// Where start-up stands (the tokenizer's progress, then Ready), a long operation in progress,
/// and the sync badge.
#[component]
fn StartupStatus() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
    <span class="status" role="status" data-testid="startup">
        {move || match state.notices.startup().get() {
            Startup::Tokenizer { phase, done, total } => view! {
                <span class="spinner" aria-hidden="true"></span>
                <span data-testid="tokenizer-progress">{tokenizer_progress(&phase, done, total)}</span>
            }.into_any(),
            Startup::Failed(_) => view! { <span class="failed" data-testid="startup-failed">"Tokenizer unavailable"</span> }.into_any(),
            Startup::Storage => view! { <span class="spinner" aria-hidden="true"></span> "Opening saved sessions…" }.into_any(),
            Startup::Ready(note) => view! { <span class="ready" data-testid="ready" title=note>"Ready"</span> }.into_any(),
        }}
        {move || state.notices.busy().get().map(|b| view! { <span class="busy" data-testid="busy"><span class="spinner" aria-hidden="true"></span>{b}</span> })}
        <button
            type="button"
            class="sync-badge"
            data-testid="sync-status"
            hidden=move || state.sync.status().with(|s| *s == crate::state::SyncStatus::Off)
            data-state=move || state.sync.status().with(|s| s.key())
            title=move || state.sync.status().with(|s| s.detail())
            on:click=move |_| state.panels.show(Panel::Settings)
        >
            {move || state.sync.status().with(|s| s.label())}
        </button>
    </span>
    }
}

/// The notices, each with its dismiss button.
#[component]
fn Notices() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
    <div class="notices" data-testid="notices">
        {move || {
            state
                .notices.list()
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
                            <button type="button" class="dismiss" aria-label="Dismiss" on:click=move |_| state.notices.dismiss(id)>"×"</button>
                        </div>
                    }
                })
                .collect_view()
        }}
    </div>
    }
}

/// The panel tabs. `narrow`: the phone layout, where Chat is a panel of its own.
#[component]
fn PanelTabs(narrow: Signal<bool>) -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
    <nav class="tabs" aria-label="Panels">
        {Panel::TABS
            .into_iter()
            .map(|panel| {
                view! {
                    <button
                        type="button"
                        class=if panel == Panel::Chat { "tab chat-tab" } else { "tab" }
                        data-testid=format!("tab-{}", panel.key())
                        aria-keyshortcuts=(panel == Panel::Settings).then_some("Alt+S")
                        // Beside the chat (wider than a phone) the chat panel shows the
                        // memory tiers, so the Memory tab is the one pressed.
                        aria-pressed=move || {
                            let shown = state.panels.panel().get();
                            let pressed = shown == panel
                                || (panel == Panel::Memory && shown == Panel::Chat && !narrow.get());
                            pressed.to_string()
                        }
                        on:click=move |_| state.panels.show(panel)
                    >
                        {panel.label()}
                    </button>
                }
            })
            .collect_view()}
    </nav>
    }
}

/// The side panel (the only panel at phone width): tiers, inspector, token curves, sessions or
/// settings. `concluding` opens the conclude dialog for an effort.
#[component]
fn SidePanel(
    /// The plan of the next request (`None` before a session is open).
    plan: Memo<Option<ContextPlan>>,
    /// The effort tiers.
    tiers: Memo<TierSnapshot>,
    /// The effort whose conclude dialog is open.
    concluding: RwSignal<Option<String>>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let inspector = Memo::new(move |_| {
        plan.with(|plan| {
            let plan = plan.as_ref()?;
            state
                .session
                .derive(|core| view_model::inspector_with_plan(core, plan))
        })
    });
    let points = Memo::new(move |_| {
        state
            .session
            .derive(|core| chart::curve_points(core.history().points(), core.history().telemetry()))
            .unwrap_or_default()
    });
    let on_action = Callback::new(move |(action, id): (EffortAction, String)| {
        run_action(state, concluding, action, id)
    });
    let on_pin = Callback::new(move |(target, pinned): (String, bool)| {
        spawn_local(async move { state.set_pin(target, pinned).await })
    });
    let on_cycle_mode = Callback::new(move |()| state.cycle_mode());
    let on_search = Callback::new(move |query: String| {
        state.session.set_search_query(query.clone());
        spawn_local(async move { state.search_manifest(query).await })
    });
    let on_recall =
        Callback::new(move |query: String| spawn_local(async move { state.recall(query).await }));
    view! {
        <aside class="side" id="side-panel" tabindex="-1" aria-label="Context management">
            {move || match state.panels.panel().get() {
                Panel::Memory | Panel::Chat => view! {
                    <TierView tiers=tiers on_action=on_action search=state.session.search() on_search=on_search on_recall=on_recall />
                }
                .into_any(),
                Panel::Context => view! {
                    <Inspector snapshot=inspector breakdown_open=state.panels.breakdown_open() on_pin=on_pin on_cycle_mode=on_cycle_mode />
                }
                .into_any(),
                Panel::Tokens => view! { <TokenCurves points=points /> }.into_any(),
                Panel::Sessions => view! { <SessionsPanel /> }.into_any(),
                Panel::Settings => view! { <SettingsPanel /> }.into_any(),
            }}
        </aside>
    }
}

#[cfg(test)]
mod tests {
    use super::{plain_status, tokenizer_progress};

    #[test]
    fn the_plain_status_counts_what_the_model_sees() {
        assert_eq!(
            plain_status(850, 0, 126_976, 0, 0, 0),
            "The model sees 850 of 127k tokens · no effort open"
        );
        assert_eq!(
            plain_status(720, 514, 7_168, 1, 0, 1),
            "The model sees 1.2k of 7.2k tokens, including 514 tokens of tool definitions · 1 effort open · 1 summary"
        );
        assert_eq!(
            plain_status(5_000, 1, 126_976, 2, 1, 3),
            "The model sees 5k of 127k tokens, including 1 token of tool definitions · 2 efforts open · 1 expanded · 3 summaries"
        );
    }

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
