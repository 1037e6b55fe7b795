//! The offer of a model server running on this computer (Ollama, LM Studio): made by itself in
//! the empty chat's welcome while the offline demo model answers, and on request in Settings.
//! Nothing is switched until the person says Use; "Not now" is remembered in this browser, so
//! the welcome does not ask again (Settings still can). `crate::local_servers` finds the
//! servers and words the offer.

use crate::local_servers::{
    blocked_sentence, is_local_host, nothing_found_sentence, servers_to_probe, spoken_model_name,
    Found, LocalServer, Probe, NOT_NOW_KEY, PROBE_ADDRESSES_KEY,
};
use crate::provider::ProviderSettings;
use crate::state::{read_local, write_local, AppState, NoticeKind};
use ccm_browser::transport::page_origin;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;

/// What the offer shows.
#[derive(Debug, Clone, PartialEq)]
enum Shown {
    /// Nothing: not looked yet, or nothing to say.
    Nothing,
    /// A server that answered with models, and the question.
    Offer(Found),
    /// A sentence: what was switched (`ok`), or what stands in the way.
    Said { ok: bool, text: String },
}

thread_local! {
    /// The welcome's finding, kept for the page's life: the welcome comes back with every
    /// empty chat, and asking the servers again each time would only repeat the answer.
    static FIRST_RUN_FINDING: RefCell<Option<Shown>> = const { RefCell::new(None) };
}

/// Whether this page is served from this computer, and its origin (for the advice).
fn page() -> (bool, String) {
    let origin = page_origin().unwrap_or_default();
    let host = origin.split("://").nth(1).unwrap_or_default();
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .map(|h| format!("{h}]"))
            .unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default().to_string()
    };
    (is_local_host(&host), origin)
}

/// Asks the servers and decides what to show: the first one with models, else one closed to
/// this page, with what to change. With `explain`, also why nothing else could be offered.
async fn look(servers: Vec<LocalServer>, explain: bool) -> Shown {
    let probes = crate::local_servers::probe_all(&servers).await;
    let (page_is_local, origin) = page();
    let said = |text: String| Shown::Said { ok: false, text };
    if let Some(found) = probes.iter().find_map(|p| match p {
        Probe::Found(found) => Some(found.clone()),
        _ => None,
    }) {
        return Shown::Offer(found);
    }
    for probe in &probes {
        match probe {
            Probe::Blocked(server) => return said(blocked_sentence(server, &origin)),
            Probe::Unusable(text) if explain => return said(text.clone()),
            _ => {}
        }
    }
    if explain {
        said(nothing_found_sentence(&servers, page_is_local))
    } else {
        Shown::Nothing
    }
}

/// Switches to `model` on the server found (no key), makes the session's window follow the
/// model where it is known, and returns the settings now in force.
fn use_server(state: AppState, found: &Found, model: &str) -> ProviderSettings {
    let settings = state
        .settings
        .provider()
        .with_untracked(|current| found.settings(current, model));
    state
        .settings
        .save_provider(settings.clone(), String::new(), state.notices);
    let window = settings.model_info().map(|i| i.context_window);
    if let Some(window) = window.filter(|w| *w > 0) {
        let model = model.to_string();
        spawn_local(async move { state.follow_model_window(&model, window).await });
    }
    settings
}

/// The question with its model picker, Use, and (in the welcome) Not now.
#[component]
fn OfferCard(
    /// The server found.
    found: Found,
    /// Where the outcome is shown.
    shown: RwSignal<Shown>,
    /// Called with the settings once the server is used.
    #[prop(optional)]
    on_used: Option<Callback<ProviderSettings>>,
    /// Offer "Not now" (the welcome does; Settings was asked).
    #[prop(optional)]
    not_now: bool,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let model = RwSignal::new(found.suggested_model().to_string());
    let models = found.models.clone();
    let several = models.len() > 1;
    let question = found.offer_sentence();
    let accept = move |_| {
        let chosen = model.get_untracked();
        let settings = use_server(state, &found, &chosen);
        shown.set(Shown::Said {
            ok: true,
            text: found.used_sentence(&chosen),
        });
        if let Some(on_used) = on_used {
            on_used.run(settings);
        }
    };
    view! {
        <div class="notice local-offer" role="group" aria-label="Model server on this computer" data-testid="local-server-offer">
            <div>
                <p data-testid="local-server-question">{question}</p>
                <div class="row">
                    <Show when=move || several>
                        <select aria-label="Model" data-testid="local-server-model" on:change=move |ev| model.set(event_target_value(&ev))>
                            {models.iter().map(|id| {
                                let value = id.clone();
                                view! { <option value=id.clone() selected=move || model.get() == value>{spoken_model_name(id).to_string()}</option> }
                            }).collect_view()}
                        </select>
                    </Show>
                    <button type="button" data-testid="local-server-use" on:click=accept>"Use"</button>
                    <Show when=move || not_now>
                        <NotNow shown />
                    </Show>
                </div>
            </div>
        </div>
    }
}

/// "Not now": remembered in this browser, so the welcome does not offer again.
#[component]
fn NotNow(
    /// Cleared when the person declines.
    shown: RwSignal<Shown>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let decline = move |_| {
        if let Err(e) = write_local(NOT_NOW_KEY, Some("yes")) {
            state.notices.notify(
                NoticeKind::Error,
                format!("“Not now” could not be remembered ({e}): the offer may come back."),
            );
        }
        shown.set(Shown::Nothing);
    };
    view! { <button type="button" class="secondary" data-testid="local-server-not-now" on:click=decline>"Not now"</button> }
}

/// What `shown` holds, as the offer card or a sentence.
fn shown_view(
    shown: RwSignal<Shown>,
    on_used: Option<Callback<ProviderSettings>>,
    not_now: bool,
) -> impl IntoView {
    move || {
        match shown.get() {
        Shown::Nothing => ().into_any(),
        Shown::Offer(found) => match on_used {
            Some(on_used) => view! { <OfferCard found shown on_used not_now /> }.into_any(),
            None => view! { <OfferCard found shown not_now /> }.into_any(),
        },
        // In the welcome, what stands in the way is set apart like the offer, and can be put
        // away like it.
        Shown::Said { ok: false, text } if not_now => view! {
            <div class="notice local-offer" role="group" aria-label="Model server on this computer">
                <div>
                    <p role="status" data-testid="local-server-message">{text}</p>
                    <div class="row"><NotNow shown /></div>
                </div>
            </div>
        }
        .into_any(),
        Shown::Said { ok, text } => view! {
            <p class=if ok { "ok" } else { "hint" } role="status" data-testid="local-server-message">{text}</p>
        }
        .into_any(),
    }
    }
}

/// In the welcome: looks for a server once per page while the demo model answers, unless the
/// person said "Not now" or the page is not on this computer (there the browser may ask for
/// permission to reach local devices, which must not happen unasked). Outside the app (a
/// component test without the app's state) it shows nothing.
#[component]
pub fn FirstRunOffer() -> impl IntoView {
    let Some(state) = use_context::<AppState>() else {
        return ().into_any();
    };
    let shown = RwSignal::new(Shown::Nothing);
    let progress = RwSignal::new("skipped");
    let wanted = state
        .settings
        .provider()
        .with_untracked(ProviderSettings::is_offline)
        && read_local(NOT_NOW_KEY).is_none()
        && page().0;
    // A broken override looks nowhere: the welcome is no place for its error (Settings says it).
    let servers = servers_to_probe(read_local(PROBE_ADDRESSES_KEY).as_deref()).ok();
    match (FIRST_RUN_FINDING.with(|f| f.borrow().clone()), servers) {
        (Some(finding), _) if wanted => {
            shown.set(finding);
            progress.set("done");
        }
        (None, Some(servers)) if wanted => {
            progress.set("looking");
            FIRST_RUN_FINDING.with(|f| *f.borrow_mut() = Some(Shown::Nothing));
            spawn_local(async move {
                let finding = look(servers, false).await;
                FIRST_RUN_FINDING.with(|f| *f.borrow_mut() = Some(finding.clone()));
                shown.set(finding);
                progress.set("done");
            });
        }
        _ => {}
    }
    // The question stands only while the demo model answers, and what Use did only while
    // the server it chose does.
    let visible = move || {
        let offline = state.settings.provider().with(ProviderSettings::is_offline);
        offline != matches!(shown.get(), Shown::Said { ok: true, .. })
    };
    view! {
        <div data-testid="local-server-first-run" data-state=move || progress.get()>
            <Show when=visible>{shown_view(shown, None, true)}</Show>
        </div>
    }
    .into_any()
}

/// In Settings: "Look for a model server on this computer", with what was found or why not.
#[component]
pub fn LocalServerSearch(
    /// Called with the settings once a server is used (they are saved already).
    on_used: Callback<ProviderSettings>,
) -> impl IntoView {
    let shown = RwSignal::new(Shown::Nothing);
    let looking = RwSignal::new(false);
    let search = move |_| {
        looking.set(true);
        shown.set(Shown::Nothing);
        spawn_local(async move {
            let finding = match servers_to_probe(read_local(PROBE_ADDRESSES_KEY).as_deref()) {
                Ok(servers) => look(servers, true).await,
                Err(text) => Shown::Said { ok: false, text },
            };
            shown.set(finding);
            looking.set(false);
        });
    };
    view! {
        <div class="field" data-testid="local-server-search">
            <div class="row">
                <button type="button" class="secondary" data-testid="look-for-local-server" disabled=move || looking.get() on:click=search>
                    "Look for a model server on this computer"
                </button>
            </div>
            <small class="hint">"Ollama and LM Studio run models on your own computer, with no key. What you send them stays on it."</small>
            {move || looking.get().then(|| view! { <p class="hint" role="status">"Looking…"</p> })}
            {shown_view(shown, Some(on_used), false)}
        </div>
    }
}
