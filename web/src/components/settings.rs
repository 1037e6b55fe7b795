//! Settings: the provider (offline demo model by default, presets, custom URLs), the model
//! name and the API key (in memory for the tab unless the person asks to remember it), and the
//! current session's thresholds, budget, context mode and compaction preset; the sync server.

use crate::components::local_offer::LocalServerSearch;
use crate::model_fetch::fetch_models;
use crate::models::ListedModel;
use crate::provider::{ProviderInSettings, ProviderSettings};
use crate::state::{AppState, SyncStatus};
use crate::sync::SyncSettings;
use ccm_browser::provider::ProviderName;
use ccm_core::compaction::{CompactionConfig, ThresholdPreset};
use ccm_core::config::{ContextMode, Profile, ReferenceRule, SearchRule, NO_BUDGET};
use ccm_core::Config;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// A number field bound to a string signal (validated by the core when applied).
#[component]
fn NumberField(
    /// The label.
    label: &'static str,
    /// The field's `data-testid`.
    test_id: &'static str,
    /// The value as typed.
    value: RwSignal<String>,
    /// What the setting does.
    help: &'static str,
    /// The smallest value the browser accepts (1 unless 0 means something, as "off").
    #[prop(default = "1")]
    min: &'static str,
) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input type="number" min=min data-testid=test_id prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
            <small class="hint">{help}</small>
        </label>
    }
}

fn parse(field: &str, text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| format!("{field} must be a whole number, got “{}”", text.trim()))
}

/// A token budget as the form shows it: its number, or "none" for no budget.
fn budget_text(budget: u32) -> String {
    if budget == NO_BUDGET {
        "none".to_string()
    } else {
        budget.to_string()
    }
}

/// Reads a token budget field: a whole number, or "none" (any case) for no budget.
fn parse_budget(field: &str, text: &str) -> Result<u32, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(NO_BUDGET);
    }
    text.trim().parse::<u32>().map_err(|_| {
        format!(
            "{field} must be a whole number of tokens, or “none” for no budget, got “{}”",
            text.trim()
        )
    })
}

/// Reads a compaction threshold in percent of the request budget (1 to 100, whole or with
/// one decimal) as the per-mille value the configuration keeps.
fn parse_percent(field: &str, text: &str) -> Result<u16, String> {
    match text.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(percent) if (0.1..=100.0).contains(&percent) => Ok((percent * 10.0).round() as u16),
        _ => Err(format!(
            "{field} must be a percentage from 0.1 to 100, got “{}”",
            text.trim()
        )),
    }
}

/// A per-mille threshold as the form shows it, in percent.
fn percent_text(per_mille: u16) -> String {
    let percent = f64::from(per_mille) / 10.0;
    if percent.fract() == 0.0 {
        format!("{percent:.0}")
    } else {
        format!("{percent:.1}")
    }
}

/// A choice among named values, shown with what each means.
#[component]
fn ChoiceField(
    /// The label.
    label: &'static str,
    /// The select's `data-testid`.
    test_id: &'static str,
    /// The chosen value's name.
    value: RwSignal<String>,
    /// Each value's name and its description.
    choices: &'static [(&'static str, &'static str)],
    /// What the setting does.
    help: &'static str,
) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <select data-testid=test_id on:change=move |ev| value.set(event_target_value(&ev))>
                {choices
                    .iter()
                    .map(|(name, text)| view! { <option value=*name selected=move || value.get() == *name>{*text}</option> })
                    .collect_view()}
            </select>
            <small class="hint">{help}</small>
        </label>
    }
}

/// A field that takes a number of tokens or the word "none".
#[component]
fn BudgetField(
    /// The label.
    label: &'static str,
    /// The field's `data-testid`.
    test_id: &'static str,
    /// The value as typed.
    value: RwSignal<String>,
    /// What the setting does.
    help: &'static str,
) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input inputmode="numeric" data-testid=test_id placeholder="a number of tokens, or none" prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
            <small class="hint">{help}</small>
        </label>
    }
}

/// The settings panel.
#[component]
pub fn SettingsPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    // The session form is rebuilt whenever the configuration in force changes.
    let session_message = RwSignal::new(None::<(bool, String)>);
    let current = Memo::new(move |_| state.session.derive(|core| core.config().clone()));
    view! {
        <div class="settings" data-testid="settings-panel">
            <ProviderForm />
            <SyncForm />
            {move || current.get().map(|config| view! { <SessionForm config=config message=session_message /> })}
        </div>
    }
}

/// The provider form's fields, as typed (the key included), started from the stored settings.
#[derive(Clone, Copy)]
struct ProviderFields {
    choice: RwSignal<ProviderName>,
    base_url: RwSignal<String>,
    model: RwSignal<String>,
    stream: RwSignal<bool>,
    remember: RwSignal<bool>,
    key: RwSignal<String>,
    input_price: RwSignal<String>,
    output_price: RwSignal<String>,
    embeddings_url: RwSignal<String>,
    embeddings_model: RwSignal<String>,
}

/// A price as its field shows it (blank: the app's table).
fn price_text(price: Option<f64>) -> String {
    price.map(|p| p.to_string()).unwrap_or_default()
}

impl ProviderFields {
    /// Fields showing `saved` and `key`.
    fn new(saved: ProviderSettings, key: String) -> ProviderFields {
        ProviderFields {
            choice: RwSignal::new(saved.choice),
            base_url: RwSignal::new(saved.base_url),
            model: RwSignal::new(saved.model),
            stream: RwSignal::new(saved.stream),
            remember: RwSignal::new(saved.remember_key),
            key: RwSignal::new(key),
            input_price: RwSignal::new(price_text(saved.input_price)),
            output_price: RwSignal::new(price_text(saved.output_price)),
            embeddings_url: RwSignal::new(saved.embeddings_url),
            embeddings_model: RwSignal::new(saved.embeddings_model),
        }
    }

    /// Shows `saved` and `key` (settings saved elsewhere).
    fn show(&self, saved: ProviderSettings, key: String) {
        self.choice.set(saved.choice);
        self.base_url.set(saved.base_url);
        self.model.set(saved.model);
        self.stream.set(saved.stream);
        self.remember.set(saved.remember_key);
        self.input_price.set(price_text(saved.input_price));
        self.output_price.set(price_text(saved.output_price));
        self.embeddings_url.set(saved.embeddings_url);
        self.embeddings_model.set(saved.embeddings_model);
        self.key.set(key);
    }

    /// The settings the fields hold (without the key), or what is wrong with a price.
    fn settings(&self) -> Result<ProviderSettings, String> {
        Ok(ProviderSettings {
            choice: self.choice.get_untracked(),
            base_url: self.base_url.get_untracked().trim().to_string(),
            model: self.model.get_untracked().trim().to_string(),
            stream: self.stream.get_untracked(),
            remember_key: self.remember.get_untracked(),
            input_price: parse_price("The prompt price", &self.input_price.get_untracked())?,
            output_price: parse_price("The answer price", &self.output_price.get_untracked())?,
            embeddings_url: self.embeddings_url.get_untracked().trim().to_string(),
            embeddings_model: self.embeddings_model.get_untracked().trim().to_string(),
        })
    }
}

/// What the app knows of the model named in the fields: its window (the provider's list
/// first) and prices. Tracks the fields and the list.
fn model_facts(fields: ProviderFields, listed: RwSignal<Vec<ListedModel>>) -> String {
    let settings = ProviderSettings {
        model: fields.model.get(),
        choice: fields.choice.get(),
        input_price: parse_price("", &fields.input_price.get()).ok().flatten(),
        output_price: parse_price("", &fields.output_price.get()).ok().flatten(),
        ..ProviderSettings::default()
    };
    let listed_window = listed.with(|l| {
        l.iter()
            .find(|m| m.id == settings.model.trim())
            .and_then(|m| m.context_window)
    });
    match (settings.model_info(), listed_window) {
        (Some(info), listed_window) => {
            let window = listed_window.unwrap_or(info.context_window);
            let window = if window > 0 {
                format!("context window {window} tokens")
            } else {
                "context window unknown (the session keeps its own)".to_string()
            };
            format!(
                "{window} · ${:.2} / ${:.2} per million tokens in / out",
                info.input_per_million, info.output_per_million
            )
        }
        (None, Some(window)) => format!("context window {window} tokens (from the provider's list) · price unknown"),
        (None, None) => "Not in the app's table: the session keeps its context window, and costs are not shown unless you enter prices below.".to_string(),
    }
}

/// Saves the provider form's settings, or says in `provider_message` (and in `key_message`
/// for a missing key) why not; the session's window then follows the model.
fn save_provider_form(
    state: AppState,
    fields: ProviderFields,
    listed: RwSignal<Vec<ListedModel>>,
    provider_message: RwSignal<Option<(bool, String)>>,
    key_message: RwSignal<Option<(bool, String)>>,
) {
    let settings = match fields.settings() {
        Ok(settings) => settings,
        Err(e) => return provider_message.set(Some((false, e))),
    };
    let key_text = fields.key.get_untracked();
    key_message.set(None);
    // Said where the person is: next to the key field, and nothing is switched.
    if settings.choice.needs_key() && key_text.trim().is_empty() {
        let using = state.settings.provider().with_untracked(|current| {
            if current.is_offline() {
                "the offline demo model".to_string()
            } else {
                current.short_label()
            }
        });
        key_message.set(Some((
            false,
            format!(
                "{} needs an API key: paste it here, then save again.",
                settings.choice.settings_label()
            ),
        )));
        return provider_message.set(Some((
            false,
            format!("Not saved: the API key is missing. Replies still come from {using}."),
        )));
    }
    if !settings.is_offline() && settings.model.is_empty() {
        return provider_message.set(Some((
            false,
            "Not saved: type the model's name, or load the model list and pick one.".into(),
        )));
    }
    match settings.provider_config(Some(&key_text)) {
        Ok(_) => {
            // The session's window follows the model: the provider's list first (it
            // knows its own models), then the app's table.
            let window = listed
                .with_untracked(|l| {
                    l.iter()
                        .find(|m| m.id == settings.model)
                        .and_then(|m| m.context_window)
                })
                .or_else(|| {
                    settings
                        .model_info()
                        .map(|i| i.context_window)
                        .filter(|w| *w > 0)
                });
            let model_name = settings.engine_settings().model;
            state
                .settings
                .save_provider(settings, key_text, state.notices);
            provider_message.set(Some((
                true,
                "Saved. The next message uses this provider.".into(),
            )));
            if let Some(window) = window {
                spawn_local(async move {
                    state.follow_model_window(&model_name, window).await;
                });
            }
        }
        Err(e) => provider_message.set(Some((false, e))),
    }
}

/// The provider form: the provider, the local-server search, the provider's fields, the
/// embeddings endpoint, and Save.
#[component]
fn ProviderForm() -> impl IntoView {
    let state = expect_context::<AppState>();
    let fields = ProviderFields::new(
        state.settings.provider().get_untracked(),
        state.settings.api_key().get_untracked(),
    );
    let provider_message = RwSignal::new(None::<(bool, String)>);
    // What is wrong with the key, shown under the key field.
    let key_message = RwSignal::new(None::<(bool, String)>);
    // The provider's model list, once asked for: names for the picker, windows where listed.
    let listed = RwSignal::new(Vec::<ListedModel>::new());
    let list_message = RwSignal::new(None::<(bool, String)>);
    let save_provider = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        save_provider_form(state, fields, listed, provider_message, key_message);
    };
    // The form follows settings saved elsewhere (the welcome's offer of a model server on this
    // computer), so that a later save here keeps them instead of restoring what it showed.
    Effect::new(move |seen: Option<()>| {
        let saved = state.settings.provider().get();
        if seen.is_some() {
            fields.show(saved, state.settings.api_key().get_untracked());
        }
    });
    view! {
        <form on:submit=save_provider aria-labelledby="provider-title">
            <h2 id="provider-title">"Model provider"</h2>
            <label class="field">
                <span>"Provider"</span>
                <select
                    data-testid="provider-select"
                    on:change=move |ev| {
                        if let Some(next) = ProviderName::from_name(&event_target_value(&ev)) {
                            let defaults = ProviderSettings::for_choice(next);
                            fields.choice.set(next);
                            fields.base_url.set(defaults.base_url);
                            fields.model.set(defaults.model);
                        }
                    }
                >
                    {ProviderName::all()
                        .into_iter()
                        .map(|c| view! { <option value=c.key() selected=move || fields.choice.get() == c>{c.settings_label()}</option> })
                        .collect_view()}
                </select>
            </label>
            // The fields follow the server used through the effect above.
            <LocalServerSearch on_used=Callback::new(move |_| provider_message.set(None)) />
            <Show when=move || fields.choice.get() != ProviderName::Offline fallback=|| view! {
                <p class="hint">"The offline demo model is deterministic and needs no key or network: it opens, switches, concludes, expands and searches efforts when you say so (“let's work on …”, “back to …”, “that's resolved”, “remind me exactly …”)."</p>
            }>
                <ProviderFields fields=fields listed=listed list_message=list_message key_message=key_message />
            </Show>
            <label class="field">
                <span>"Embeddings endpoint (optional)"</span>
                <input data-testid="embeddings-url" placeholder="e.g. http://localhost:11434/v1 (empty: none)" prop:value=move || fields.embeddings_url.get() on:input=move |ev| fields.embeddings_url.set(event_target_value(&ev)) />
                <small class="hint">"An OpenAI-compatible /embeddings server (Ollama, LM Studio, OpenAI). Searches of earlier messages then rank by meaning as well as by words. Empty: by words only."</small>
            </label>
            <label class="field">
                <span>"Embedding model"</span>
                <input data-testid="embeddings-model" placeholder="e.g. nomic-embed-text" prop:value=move || fields.embeddings_model.get() on:input=move |ev| fields.embeddings_model.set(event_target_value(&ev)) />
            </label>
            <button type="submit" data-testid="save-provider">"Save provider"</button>
            {message_view(provider_message)}
        </form>
    }
}

/// The fields of a provider other than the offline model: URL, model (with the provider's
/// list), prices, key, and streaming.
#[component]
fn ProviderFields(
    /// The form's fields.
    fields: ProviderFields,
    /// The provider's model list, once asked for.
    listed: RwSignal<Vec<ListedModel>>,
    /// The outcome of asking for the list.
    list_message: RwSignal<Option<(bool, String)>>,
    /// What is wrong with the key.
    key_message: RwSignal<Option<(bool, String)>>,
) -> impl IntoView {
    let load_models = move |_| {
        let settings = match fields.settings() {
            Ok(settings) => settings,
            Err(e) => return list_message.set(Some((false, e))),
        };
        let key_text = fields.key.get_untracked();
        list_message.set(Some((true, "Asking the provider for its models…".into())));
        spawn_local(async move {
            match fetch_models(&settings, &key_text).await {
                Ok(models) => {
                    list_message.set(Some((
                        true,
                        format!(
                            "{} listed: pick one in the Model field, or type any name.",
                            crate::words::count(models.len(), "model", "models")
                        ),
                    )));
                    listed.set(models);
                }
                Err(e) => {
                    list_message.set(Some((false, format!("No model list. {}", sentence(&e)))))
                }
            }
        });
    };
    let model_facts = move || model_facts(fields, listed);
    view! {
        <label class="field">
            <span>"Base URL"</span>
            <input data-testid="provider-url" inputmode="url" autocomplete="off" placeholder=move || fields.choice.get().base_url_placeholder() prop:value=move || fields.base_url.get() on:input=move |ev| fields.base_url.set(event_target_value(&ev)) />
        </label>
        <label class="field">
            <span>"Model"</span>
            <input data-testid="provider-model" list="model-options" autocomplete="off" placeholder="the model's name, as the provider lists it" prop:value=move || fields.model.get() on:input=move |ev| fields.model.set(event_target_value(&ev)) />
            <datalist id="model-options" data-testid="model-options">
                <For each=move || listed.get() key=|m| m.id.clone() let:m>
                    <option value=m.id.clone()></option>
                </For>
            </datalist>
            <small class="hint" data-testid="model-facts">{model_facts}</small>
        </label>
        <div class="row">
            <button type="button" class="secondary" data-testid="load-models" on:click=load_models>
                "Load the model list"
            </button>
        </div>
        {message_view_with_id(list_message, "models-message")}
        <label class="field">
            <span>"Prompt price (US$ per million tokens)"</span>
            <input inputmode="decimal" data-testid="price-in" placeholder="from the app's table" prop:value=move || fields.input_price.get() on:input=move |ev| fields.input_price.set(event_target_value(&ev)) />
        </label>
        <label class="field">
            <span>"Answer price (US$ per million tokens)"</span>
            <input inputmode="decimal" data-testid="price-out" placeholder="from the app's table" prop:value=move || fields.output_price.get() on:input=move |ev| fields.output_price.set(event_target_value(&ev)) />
        </label>
        <label class="field">
            <span>"API key"</span>
            <input type="password" autocomplete="off" data-testid="provider-key" placeholder=move || if fields.choice.get().needs_key() { "required by this provider" } else { "optional for this provider" } prop:value=move || fields.key.get() on:input=move |ev| { fields.key.set(event_target_value(&ev)); key_message.set(None); } />
            {message_view_with_id(key_message, "key-message")}
            <small class="hint">"Kept in memory for this tab only, unless you tick the box below. Never exported with a session."</small>
        </label>
        <label class="check">
            <input type="checkbox" data-testid="remember-key" prop:checked=move || fields.remember.get() on:change=move |ev| fields.remember.set(event_target_checked(&ev)) />
            "Remember the key in this browser (localStorage)"
        </label>
        <label class="check">
            <input type="checkbox" data-testid="provider-stream" prop:checked=move || fields.stream.get() on:change=move |ev| fields.stream.set(event_target_checked(&ev)) />
            "Stream replies"
        </label>
    }
}

/// The sync server: its address and the token it issued, the status, and turning sync off.
#[component]
fn SyncForm() -> impl IntoView {
    let state = expect_context::<AppState>();
    let initial = SyncSettings::stored().unwrap_or_default();
    let url = RwSignal::new(initial.url);
    let token = RwSignal::new(initial.token);
    let message = RwSignal::new(None::<(bool, String)>);
    let working = RwSignal::new(false);
    let save = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        if working.get_untracked() {
            return;
        }
        let settings = SyncSettings {
            url: url.get_untracked().trim().to_string(),
            token: token.get_untracked().trim().to_string(),
        };
        working.set(true);
        message.set(Some((true, "Connecting…".to_string())));
        spawn_local(async move {
            let outcome = crate::sync::configure(state, settings).await;
            let ok = outcome.is_ok()
                && state
                    .sync
                    .status()
                    .with_untracked(|s| matches!(s, SyncStatus::Synced | SyncStatus::Conflict));
            message.set(Some(match outcome {
                Ok(text) => (ok, text),
                Err(text) => (false, text),
            }));
            working.set(false);
        });
    };
    let turn_off = move |_| {
        crate::sync::turn_off(state);
        url.set(String::new());
        token.set(String::new());
        message.set(Some((
            true,
            "Sync is off. Sessions stay in this browser and on the server.".to_string(),
        )));
    };
    let status = move || state.sync.status().get();
    view! {
        <form on:submit=save aria-labelledby="sync-title" data-testid="sync-form">
            <h2 id="sync-title">"Sync"</h2>
            <p class="sync-line">
                <span class="sync-badge" data-testid="sync-status-detail" data-state=move || status().key()>{move || status().label()}</span>
                " "
                <small class="hint" data-testid="sync-status-text">{move || status().detail()}</small>
            </p>
            <label class="field">
                <span>"Sync server"</span>
                <input data-testid="sync-url" inputmode="url" autocomplete="off" placeholder="the sync server's address, e.g. https://sync.example.org" prop:value=move || url.get() on:input=move |ev| url.set(event_target_value(&ev)) />
                <small class="hint">"A CCM sync server keeps your sessions so that they continue on every device. This browser keeps its own copy and works offline."</small>
            </label>
            <label class="field">
                <span>"Token"</span>
                <input type="password" autocomplete="off" data-testid="sync-token" placeholder="the token the sync server's owner gave you" prop:value=move || token.get() on:input=move |ev| token.set(event_target_value(&ev)) />
                <small class="hint">"Kept in this browser. Only sessions and this token go to the sync server, never your model provider's API key."</small>
            </label>
            <div class="row">
                <button type="submit" data-testid="sync-save" disabled=move || working.get()>"Save and sync"</button>
                <button type="button" class="secondary" data-testid="sync-off" disabled=move || state.sync.status().with(|s| *s == SyncStatus::Off) on:click=turn_off>"Turn sync off"</button>
            </div>
            {message_view_with_id(message, "sync-message")}
        </form>
    }
}

/// The current session's settings, started from its configuration. The panel renders a new
/// form whenever the configuration changes, so the fields always show what is in force.
#[component]
fn SessionForm(
    /// The configuration in force.
    config: Config,
    /// The result of the last apply, kept by the panel across re-renders.
    message: RwSignal<Option<(bool, String)>>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let fields = ConfigFields::of(&config);
    let temperature = RwSignal::new(
        state
            .settings
            .temperature()
            .get_untracked()
            .map(|t| t.to_string())
            .unwrap_or_default(),
    );
    let encoding = config.encoding.name();
    let base = config;
    let apply = move |ev: web_sys::SubmitEvent| {
        ev.prevent_default();
        let built = fields.config(&base);
        let temperature_value = parse_temperature(&temperature.get_untracked());
        match built.and_then(|config| Ok((config, temperature_value?))) {
            Err(e) => message.set(Some((false, e))),
            Ok((config, temperature_value)) => {
                state.settings.set_temperature(
                    temperature_value,
                    state.session.id_now(),
                    state.notices,
                );
                spawn_local(async move {
                    match state.apply_config(config).await {
                        Ok(()) => {
                            message.set(Some((true, "Applied from the next request on.".into())))
                        }
                        Err(e) => message.set(Some((false, e))),
                    }
                });
            }
        }
    };
    view! {
        <form on:submit=apply aria-labelledby="session-settings-title">
            <h2 id="session-settings-title">"This session"</h2>
            <label class="field">
                <span>"System prompt"</span>
                <textarea data-testid="cfg-system-prompt" rows="3" placeholder="Instructions the model gets before every conversation of this session (optional)" prop:value=move || fields.system_prompt.get() on:input=move |ev| fields.system_prompt.set(event_target_value(&ev))></textarea>
                <small class="hint">"Replaces the opening paragraph of the system prompt in every request of this session; CCM's instructions about efforts always follow it."</small>
            </label>
            <label class="field">
                <span>"Temperature"</span>
                <input inputmode="decimal" data-testid="cfg-temperature" placeholder="the provider's default" prop:value=move || temperature.get() on:input=move |ev| temperature.set(event_target_value(&ev)) />
                <small class="hint">"0 answers the same way every time, higher values vary more (0 to 2). Blank keeps the provider's default."</small>
            </label>
            <RecallFields fields=fields />
            <NumberField label="Context window (tokens)" test_id="cfg-window" value=fields.window help="The model's window; compaction levels are shares of it." />
            <NumberField label="Reserved for the answer (tokens)" test_id="cfg-reserved" value=fields.reserved help="The request budget is the window minus this." />
            <label class="field">
                <span>"Context mode"</span>
                <select data-testid="cfg-mode" on:change=move |ev| fields.mode.set(event_target_value(&ev))>
                    {["off", "light", "heavy"]
                        .into_iter()
                        .map(|m| view! { <option value=m selected=move || fields.mode.get() == m>{m}</option> })
                        .collect_view()}
                </select>
                <small class="hint">"Off pulls in nothing by itself; Light adds matching summaries; Heavy also loads the best match's log. Alt+M cycles it."</small>
            </label>
            <CompactionFields enabled=fields.compaction_on preset=fields.preset soft=fields.soft hard=fields.hard emergency=fields.emergency />
            <p class="field">
                <span>"Encoding"</span>
                <code data-testid="cfg-encoding">{encoding}</code>
                <small class="hint">"Stored token counts were made with this encoding, so it cannot change in place: export the session, then import it into a session with the other encoding to recount."</small>
            </p>
            <button type="submit" data-testid="apply-config">"Apply to this session"</button>
            {message_view(message)}
        </form>
    }
}

/// The fields of the session form, one signal each, as text (or a switch) while the person
/// edits them; [`ConfigFields::config`] reads them into a configuration when the form is
/// applied. A part of its own so that the form's component is its markup.
#[derive(Clone, Copy)]
struct ConfigFields {
    decay: RwSignal<String>,
    eviction: RwSignal<String>,
    ambient: RwSignal<String>,
    overlap: RwSignal<String>,
    ambient_budget: RwSignal<String>,
    summary_budget: RwSignal<String>,
    recall_budget: RwSignal<String>,
    rule: RwSignal<String>,
    search: RwSignal<String>,
    compaction_on: RwSignal<bool>,
    soft: RwSignal<String>,
    hard: RwSignal<String>,
    emergency: RwSignal<String>,
    window: RwSignal<String>,
    reserved: RwSignal<String>,
    mode: RwSignal<String>,
    preset: RwSignal<String>,
    system_prompt: RwSignal<String>,
}

impl ConfigFields {
    /// The fields showing `config`.
    fn of(config: &Config) -> ConfigFields {
        let named = ThresholdPreset::ALL
            .into_iter()
            .find(|p| CompactionConfig::preset(*p) == config.compaction)
            .map_or("custom", |p| p.name());
        ConfigFields {
            decay: RwSignal::new(config.decay_threshold.to_string()),
            eviction: RwSignal::new(config.summary_eviction_threshold.to_string()),
            ambient: RwSignal::new(config.ambient_window.to_string()),
            overlap: RwSignal::new(config.min_keyword_overlap.to_string()),
            ambient_budget: RwSignal::new(budget_text(config.ambient_token_budget)),
            summary_budget: RwSignal::new(budget_text(config.summary_token_budget)),
            recall_budget: RwSignal::new(config.recall_token_budget.to_string()),
            rule: RwSignal::new(config.reference_rule.name().to_string()),
            search: RwSignal::new(config.search_rule.name().to_string()),
            compaction_on: RwSignal::new(config.compaction.enabled),
            soft: RwSignal::new(percent_text(config.compaction.soft_per_mille)),
            hard: RwSignal::new(percent_text(config.compaction.hard_per_mille)),
            emergency: RwSignal::new(percent_text(config.compaction.emergency_per_mille)),
            window: RwSignal::new(config.context_window.to_string()),
            reserved: RwSignal::new(config.reserved_output_tokens.to_string()),
            mode: RwSignal::new(config.context_mode.label().to_lowercase()),
            preset: RwSignal::new(named.to_string()),
            system_prompt: RwSignal::new(config.system_prompt.clone().unwrap_or_default()),
        }
    }

    /// `base` with the fields' values, checked by the core's rules; or why they cannot be
    /// used, in words for the form.
    fn config(&self, base: &Config) -> Result<Config, String> {
        let mut config = base.clone();
        config.decay_threshold = parse("Decay", &self.decay.get_untracked())?;
        config.summary_eviction_threshold = parse("Eviction", &self.eviction.get_untracked())?;
        config.ambient_window = parse("Ambient window", &self.ambient.get_untracked())?;
        config.min_keyword_overlap = parse("Keyword overlap", &self.overlap.get_untracked())?;
        config.ambient_token_budget =
            parse_budget("Ambient budget", &self.ambient_budget.get_untracked())?;
        config.summary_token_budget =
            parse_budget("Summary budget", &self.summary_budget.get_untracked())?;
        config.recall_token_budget =
            parse("Automatic recall", &self.recall_budget.get_untracked())?;
        config.reference_rule =
            ReferenceRule::from_name(&self.rule.get_untracked()).map_err(|e| e.to_string())?;
        config.search_rule =
            SearchRule::from_name(&self.search.get_untracked()).map_err(|e| e.to_string())?;
        config.context_window = parse("Context window", &self.window.get_untracked())?;
        config.reserved_output_tokens =
            parse("Reserved answer tokens", &self.reserved.get_untracked())?;
        config.context_mode =
            ContextMode::from_name(&self.mode.get_untracked()).map_err(|e| e.to_string())?;
        let prompt = self.system_prompt.get_untracked();
        config.system_prompt = (!prompt.trim().is_empty()).then(|| prompt.trim().to_string());
        if let Ok(p) = ThresholdPreset::from_name(&self.preset.get_untracked()) {
            if CompactionConfig::preset(p) != base.compaction {
                config.compaction = CompactionConfig::preset(p);
            }
        } else {
            // Custom thresholds: the three levels in percent, checked by the core's rule
            // (each below the next).
            let levels = [
                parse_percent("Soft level", &self.soft.get_untracked())?,
                parse_percent("Hard level", &self.hard.get_untracked())?,
                parse_percent("Emergency level", &self.emergency.get_untracked())?,
            ];
            if !(levels[0] < levels[1] && levels[1] < levels[2]) {
                return Err(format!(
                    "The compaction levels must rise: soft below hard below emergency, got {} %, {} % and {} %",
                    percent_text(levels[0]),
                    percent_text(levels[1]),
                    percent_text(levels[2])
                ));
            }
            config.compaction.soft_per_mille = levels[0];
            config.compaction.hard_per_mille = levels[1];
            config.compaction.emergency_per_mille = levels[2];
        }
        config.compaction.enabled = self.compaction_on.get_untracked();
        config
            .validate()
            .map_err(|e| e.to_string().replace("invalid configuration: ", ""))?;
        Ok(config)
    }
}

/// The fields of how efforts are recalled and forgotten: decay, eviction, the ambient window,
/// the token budgets, the reference rule and search, and the seed profile's values.
#[component]
fn RecallFields(
    /// The session form's fields.
    fields: ConfigFields,
) -> impl IntoView {
    view! {
        <NumberField label="Decay (turns)" test_id="cfg-decay" value=fields.decay help="Turns without a reference before an expanded effort collapses by itself." />
        <NumberField label="Eviction (turns)" test_id="cfg-eviction" value=fields.eviction help="Turns without a reference before a summary leaves working memory." />
        <NumberField label="Ambient window (exchanges)" test_id="cfg-ambient" value=fields.ambient help="Recent exchanges outside any effort kept in context." />
        <BudgetField label="Ambient budget (tokens)" test_id="cfg-ambient-budget" value=fields.ambient_budget help="Most tokens the ambient window keeps; the newest exchange always stays whole. “none”: the window's exchange count alone, as the specification has it." />
        <BudgetField label="Summary budget (tokens)" test_id="cfg-summary-budget" value=fields.summary_budget help="Most tokens the summaries in memory keep; the least recently mentioned leave first and stay searchable. “none”: every summary mentioned within the eviction turns stays." />
        <NumberField label="Automatic recall (tokens)" test_id="cfg-recall-budget" min="0" value=fields.recall_budget help="Most tokens of earlier messages that match your message added to a request in Light mode (twice as many in Heavy); 0 turns it off." />
        <NumberField label="Keyword overlap" test_id="cfg-overlap" value=fields.overlap help="Summary keywords a message must mention to count as a reference (weighted by how distinctive they are, under the distinctive rule)." />
        <ChoiceField label="Reference rule" test_id="cfg-reference-rule" value=fields.rule
            choices=&[("distinctive", "distinctive (words few summaries share)"), ("seed", "seed (the id, or any two summary keywords)")]
            help="How a message is found to mention a summary, which keeps it in memory." />
        <ChoiceField label="Search" test_id="cfg-search-rule" value=fields.search
            choices=&[("ranked", "ranked (rare words first, with the matching messages)"), ("seed", "seed (two summary keywords or the id; summaries only)")]
            help="How search_efforts and the Manifest's search find past efforts." />
        <p class="field">
            <button type="button" data-testid="cfg-seed-profile" on:click=move |_| {
                let seed = Profile::Seed.config();
                fields.rule.set(seed.reference_rule.name().to_string());
                fields.search.set(seed.search_rule.name().to_string());
                fields.ambient_budget.set(budget_text(seed.ambient_token_budget));
                fields.summary_budget.set(budget_text(seed.summary_token_budget));
                fields.recall_budget.set(seed.recall_token_budget.to_string());
                fields.decay.set(seed.decay_threshold.to_string());
                fields.eviction.set(seed.summary_eviction_threshold.to_string());
                fields.ambient.set(seed.ambient_window.to_string());
                fields.overlap.set(seed.min_keyword_overlap.to_string());
            }>"Fill in the seed profile"</button>
            <small class="hint">"The specification as its seeds describe it: their reference rule and search, no token budgets, no automatic recall. Apply to use it."</small>
        </p>
    }
}

/// Compaction on or off, and its thresholds (a preset, or three custom levels).
#[component]
fn CompactionFields(
    enabled: RwSignal<bool>,
    preset: RwSignal<String>,
    soft: RwSignal<String>,
    hard: RwSignal<String>,
    emergency: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label class="check">
            <input type="checkbox" data-testid="cfg-compaction-on" prop:checked=move || enabled.get() on:change=move |ev| enabled.set(event_target_checked(&ev)) />
            "Compaction (off: nothing is compacted, and the planner leaves out what does not fit the window instead)"
        </label>
        <label class="field">
            <span>"Compaction thresholds"</span>
            <select data-testid="cfg-compaction" on:change=move |ev| preset.set(event_target_value(&ev))>
                <option value="standard" selected=move || preset.get() == "standard">"standard (60 / 75 / 90 %)"</option>
                <option value="early" selected=move || preset.get() == "early">"early (50 / 65 / 80 %)"</option>
                <option value="custom" selected=move || preset.get() == "custom">"custom"</option>
            </select>
        </label>
        <Show when=move || preset.get() == "custom">
            <div class="field-row">
                <label class="field"><span>"Soft (%)"</span><input inputmode="decimal" data-testid="cfg-soft" prop:value=move || soft.get() on:input=move |ev| soft.set(event_target_value(&ev)) /></label>
                <label class="field"><span>"Hard (%)"</span><input inputmode="decimal" data-testid="cfg-hard" prop:value=move || hard.get() on:input=move |ev| hard.set(event_target_value(&ev)) /></label>
                <label class="field"><span>"Emergency (%)"</span><input inputmode="decimal" data-testid="cfg-emergency" prop:value=move || emergency.get() on:input=move |ev| emergency.set(event_target_value(&ev)) /></label>
            </div>
            <small class="hint">"Shares of the request budget at which each compaction level starts, each below the next."</small>
        </Show>
    }
}

/// Reads the temperature field: blank means the provider's default.
fn parse_temperature(text: &str) -> Result<Option<f64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(Some(t)),
        _ => Err(format!(
            "The temperature must be a number from 0 to 2 (or blank for the provider's default), got “{text}”"
        )),
    }
}

/// Reads a price field: blank means "the table's".
fn parse_price(field: &str, text: &str) -> Result<Option<f64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(price) if price.is_finite() && price >= 0.0 => Ok(Some(price)),
        _ => Err(format!(
            "{field} must be a number of dollars per million tokens (or blank for the app's table), got “{text}”"
        )),
    }
}

/// The result line of a form.
fn message_view(message: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    message_view_with_id(message, "settings-message")
}

/// `text` as a sentence: a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.trim().chars();
    let capital: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    ccm_browser::transport::full_stop(capital)
}

/// The result line of a form, with its own `data-testid`.
fn message_view_with_id(
    message: RwSignal<Option<(bool, String)>>,
    test_id: &'static str,
) -> impl IntoView {
    move || {
        message.get().map(|(ok, text)| {
            view! {
                <p class=if ok { "ok" } else { "error" } role=if ok { "status" } else { "alert" } data-testid=test_id>
                    {text}
                </p>
            }
        })
    }
}
