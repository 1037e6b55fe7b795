//! The three memory tiers: working memory (open efforts, expanded efforts with their
//! countdown to auto-collapse, summaries with their countdown to eviction), the manifest of
//! every effort (searched the way the model searches, evicted efforts and every stored message
//! included), and the raw logs.

use crate::chart::format_tokens;
use crate::view_model::{
    actions_for, state_label, EffortAction, EffortRow, EvidenceView, SearchView, TierSnapshot,
};
use leptos::prelude::*;

/// One tier's rows, or a line saying the tier is empty.
fn rows_or<'a>(
    rows: impl IntoIterator<Item = &'a EffortRow>,
    empty: impl Into<String>,
    row: impl FnMut(&'a EffortRow) -> AnyView,
) -> AnyView {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        let empty: String = empty.into();
        return view! { <li class="empty">{empty}</li> }.into_any();
    }
    rows.map(row).collect_view().into_any()
}

/// The name and id every effort row starts with.
fn name_and_id(row: &EffortRow) -> impl IntoView {
    view! {
        <span class="name">{row.name.clone()}</span>
        <code class="id">{row.id.clone()}</code>
    }
}

/// The matching messages of a search: per log, its excerpts with their date, verbatim.
fn evidence_list(groups: &[EvidenceView]) -> AnyView {
    groups
        .iter()
        .map(|group| {
            view! {
                <li class="row evidence" data-testid="evidence-group">
                    <div class="row-main"><span class="name">{group.label.clone()}</span></div>
                    {group
                        .excerpts
                        .iter()
                        .map(|excerpt| {
                            view! {
                                <blockquote class="excerpt" data-testid="evidence-excerpt" data-excerpt=excerpt.id.clone()>
                                    {excerpt.date.clone().map(|d| view! { <p class="date">{d}</p> })}
                                    {excerpt
                                        .messages
                                        .iter()
                                        .map(|(role, text)| {
                                            view! {
                                                <p class="line"><span class="role">{format!("{}: ", role.as_str())}</span>{text.clone()}</p>
                                            }
                                        })
                                        .collect_view()}
                                </blockquote>
                            }
                        })
                        .collect_view()}
                </li>
            }
        })
        .collect_view()
        .into_any()
}

/// The tier view.
#[component]
pub fn TierView(
    /// The tiers to show.
    #[prop(into)]
    tiers: Signal<TierSnapshot>,
    /// Called with an action and the effort's id when a button is pressed.
    on_action: Callback<(EffortAction, String)>,
    /// The results of the manifest's search for the last query (`None` while it is empty).
    #[prop(into)]
    search: Signal<Option<SearchView>>,
    /// Called with the query whenever the search box changes.
    on_search: Callback<String>,
    /// Called with the query when the person asks to bring its matching messages into the
    /// context.
    on_recall: Callback<String>,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    view! {
        <div class="tiers" data-testid="tier-view">
            <WorkingMemory tiers=tiers on_action=on_action />
            <Manifest tiers=tiers on_action=on_action search=search query=query on_search=on_search on_recall=on_recall />
            <RawLogs tiers=tiers on_action=on_action />
        </div>
    }
}

/// The buttons of the actions `row`'s effort allows in its state.
fn action_buttons(row: &EffortRow, on_action: Callback<(EffortAction, String)>) -> impl IntoView {
    let id = row.id.clone();
    actions_for(row.state)
        .iter()
        .map(|&action| {
            let id = id.clone();
            let label = format!("{} {}", action.label().trim_end_matches('…'), id);
            view! {
                <button
                    type="button"
                    class="small"
                    data-testid=format!("action-{}-{}", action.test_id(), id)
                    aria-label=label
                    on:click=move |_| on_action.run((action, id.clone()))
                >
                    {action.label()}
                </button>
            }
        })
        .collect_view()
}

/// Working memory: its tokens, the open efforts, the expanded ones with their countdowns, and
/// the summaries in memory with theirs.
#[component]
fn WorkingMemory(
    tiers: Signal<TierSnapshot>,
    on_action: Callback<(EffortAction, String)>,
) -> impl IntoView {
    view! {
        <section class="tier" data-testid="tier-working" aria-labelledby="tier-working-title">
            <h2 id="tier-working-title">
                "Working memory "
                <span class="tokens" data-testid="working-tokens">{move || format!("{} tokens", format_tokens(tiers.with(|t| t.working_tokens)))}</span>
            </h2>
            <p class="hint" data-testid="working-hint">
                {move || {
                    tiers
                        .with(|t| {
                            format!(
                                "Turn {}. Everything stored would be {} tokens; {} in the window.",
                                t.turn,
                                format_tokens(t.naive_tokens),
                                match t.ambient_in_memory {
                                    1 => "1 ambient message is".to_string(),
                                    n => format!("{n} ambient messages are"),
                                },
                            )
                        })
                }}
            </p>
            <h3>"Open efforts"</h3>
            <ul class="rows" data-testid="tier-open">
                {move || {
                    tiers
                        .with(|t| {
                            rows_or(&t.open, "No open effort.", |row| {
                                let active = row.state == ccm_core::session::EffortState::Active;
                                view! {
                                    <li class="row" class:active=active data-testid="open-effort" data-effort=row.id.clone() data-state=state_label(row.state)>
                                        <div class="row-main">
                                            {name_and_id(row)}
                                            {active.then(|| view! { <span class="badge active">"active"</span> })}
                                            <span class="tokens">{format!("{} tokens · {} messages", row.raw_tokens, row.messages)}</span>
                                        </div>
                                        <div class="row-actions">{action_buttons(row, on_action)}</div>
                                    </li>
                                }
                                .into_any()
                            })
                        })
                }}
            </ul>
            <h3>"Expanded"</h3>
            <ul class="rows" data-testid="tier-expanded">
                {move || {
                    tiers
                        .with(|t| {
                            rows_or(&t.expanded, "Nothing expanded.", |row| {
                                let left = row.turns_until_auto_collapse.unwrap_or(0);
                                view! {
                                    <li class="row" data-testid="expanded-effort" data-effort=row.id.clone() data-countdown=left.to_string()>
                                        <div class="row-main">
                                            {name_and_id(row)}
                                            <span class="countdown" title="Turns without a reference before it collapses by itself">
                                                {format!("collapses in {left} turn{}", if left == 1 { "" } else { "s" })}
                                            </span>
                                            <span class="tokens">{format!("+{} tokens", row.raw_tokens)}</span>
                                        </div>
                                        <div class="row-actions">{action_buttons(row, on_action)}</div>
                                    </li>
                                }
                                .into_any()
                            })
                        })
                }}
            </ul>
            <h3>"Summaries in memory"</h3>
            <ul class="rows" data-testid="tier-summaries">
                {move || {
                    tiers
                        .with(|t| {
                            rows_or(&t.summaries, "No summary in memory.", |row| {
                                let left = row.turns_until_eviction.unwrap_or(0);
                                view! {
                                    <li class="row" data-testid="summary-effort" data-effort=row.id.clone() data-countdown=left.to_string()>
                                        <div class="row-main">
                                            {name_and_id(row)}
                                            <span class="countdown" title="Turns without a reference before the summary leaves working memory">
                                                {format!("leaves memory in {left}")}
                                            </span>
                                            <span class="tokens">{format!("{} tokens", row.summary_tokens.unwrap_or(0))}</span>
                                        </div>
                                        <p class="summary">{row.summary.clone().unwrap_or_default()}</p>
                                        <div class="row-actions">{action_buttons(row, on_action)}</div>
                                    </li>
                                }
                                .into_any()
                            })
                        })
                }}
            </ul>
        </section>
    }
}

/// The manifest: every effort (evicted ones too), filtered by the search box, and the stored
/// messages the search found.
#[component]
fn Manifest(
    tiers: Signal<TierSnapshot>,
    on_action: Callback<(EffortAction, String)>,
    search: Signal<Option<SearchView>>,
    /// The text in the search box.
    query: RwSignal<String>,
    on_search: Callback<String>,
    on_recall: Callback<String>,
) -> impl IntoView {
    view! {
        <section class="tier" data-testid="tier-manifest" aria-labelledby="tier-manifest-title">
            <h2 id="tier-manifest-title">
                "Manifest "
                <span class="tokens">{move || tiers.with(|t| format!("{}, {} evicted", crate::words::count(t.manifest.len(), "effort", "efforts"), t.evicted_count))}</span>
            </h2>
            <label class="search">
                <span class="visually-hidden">"Search everything said"</span>
                <input
                    type="search"
                    data-testid="manifest-search"
                    placeholder="Search efforts and every message"
                    prop:value=move || query.get()
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        query.set(text.clone());
                        on_search.run(text);
                    }
                />
            </label>
            <ul class="rows">
                {move || {
                    let found = search.get().filter(|_| !query.get().trim().is_empty());
                    tiers
                        .with(|t| {
                            let rows: Vec<&EffortRow> = match &found {
                                None => t.manifest.iter().collect(),
                                Some(found) => found
                                    .efforts
                                    .iter()
                                    .filter_map(|id| t.manifest.iter().find(|row| &row.id == id))
                                    .collect(),
                            };
                            let empty = match &found {
                                Some(SearchView { problem: Some(problem), .. }) => problem.clone(),
                                _ => "No effort matches.".to_string(),
                            };
                            rows_or(rows, empty, |row| {
                                view! {
                                    <li class="row" data-testid="manifest-row" data-effort=row.id.clone() data-state=state_label(row.state)>
                                        <div class="row-main">
                                            {name_and_id(row)}
                                            <span class=format!("badge state-{}", state_label(row.state).replace(' ', "-"))>{state_label(row.state)}</span>
                                            <span class="tokens">
                                                {match row.summary_tokens {
                                                    Some(s) => format!("raw {} · summary {} tokens", row.raw_tokens, s),
                                                    None => format!("raw {} tokens", row.raw_tokens),
                                                }}
                                            </span>
                                        </div>
                                        {row.summary.clone().map(|s| view! { <p class="summary">{s}</p> })}
                                        <div class="row-actions">{action_buttons(row, on_action)}</div>
                                    </li>
                                }
                                .into_any()
                            })
                        })
                }}
            </ul>
            <SearchEvidence search=search query=query on_recall=on_recall />
        </section>
    }
}

/// The stored messages the manifest's search found, and the button that recalls them.
#[component]
fn SearchEvidence(
    search: Signal<Option<SearchView>>,
    /// The text in the search box.
    query: RwSignal<String>,
    on_recall: Callback<String>,
) -> impl IntoView {
    move || {
        search
            .get()
            .filter(|s| !query.get().trim().is_empty() && s.problem.is_none())
            .map(|found| {
                let recall_query = found.query.clone();
                let shown = !found.groups.is_empty();
                view! {
                    <div class="evidence-list" data-testid="search-evidence" data-query=found.query.clone()>
                        <h3>"Messages"</h3>
                        <ul class="rows">
                            {if shown {
                                evidence_list(&found.groups)
                            } else {
                                view! { <li class="empty">"No stored message outside the context matches."</li> }.into_any()
                            }}
                        </ul>
                        {(found.more > 0).then(|| view! { <p class="hint">{format!("{} more matching messages (over the budget, or in the context already).", found.more)}</p> })}
                        {found.incomplete.then(|| view! { <p class="hint">"Older messages are still being indexed."</p> })}
                        {shown.then(|| view! {
                            <button
                                type="button"
                                class="small"
                                data-testid="recall-button"
                                title="Brings these messages into the model's context; they leave by themselves after a few turns without a mention."
                                on:click=move |_| on_recall.run(recall_query.clone())
                            >
                                "Recall into context"
                            </button>
                        })}
                    </div>
                }
            })
    }
}

/// Every effort's raw log, with a button to read it.
#[component]
fn RawLogs(
    tiers: Signal<TierSnapshot>,
    on_action: Callback<(EffortAction, String)>,
) -> impl IntoView {
    view! {
        <section class="tier" data-testid="tier-raw" aria-labelledby="tier-raw-title">
            <h2 id="tier-raw-title">"Raw logs"</h2>
            <p class="hint">"Every message ever stored stays here; nothing is deleted."</p>
            <ul class="rows">
                {move || {
                    tiers
                        .with(|t| {
                            t.manifest
                                .iter()
                                .map(|row| {
                                    let id = row.id.clone();
                                    view! {
                                        <li class="row compact" data-testid="raw-log" data-effort=row.id.clone()>
                                            <span class="name">{row.id.clone()}</span>
                                            <span class="tokens">{format!("{} messages · {} tokens", row.messages, row.raw_tokens)}</span>
                                            <button
                                                type="button"
                                                class="small"
                                                data-testid=format!("read-log-{}", row.id)
                                                aria-label=format!("Read the raw log of {}", row.id)
                                                on:click=move |_| on_action.run((EffortAction::ReadLog, id.clone()))
                                            >
                                                "Read"
                                            </button>
                                        </li>
                                    }
                                })
                                .collect_view()
                        })
                }}
            </ul>
        </section>
    }
}
