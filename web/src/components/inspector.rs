//! The context inspector: the budget meter, every included item with its reason, tier, TTL and
//! tokens, every excluded item with its reason, pins, the exact messages of the last request,
//! its diff against the turn before, and compaction events.

use crate::view_model::{
    pin_kind, CompactionRow, ExcludedRow, IncludedRow, InspectorSnapshot, LastRequest, PinRow,
};
use ccm_core::pins::PinKind;
use leptos::prelude::*;

/// The inspector.
#[component]
pub fn Inspector(
    /// What to show (`None` before a session is open).
    #[prop(into)]
    snapshot: Signal<Option<InspectorSnapshot>>,
    /// Whether the budget breakdown (included and excluded items) is open.
    breakdown_open: RwSignal<bool>,
    /// Pin (`true`) or unpin (`false`) an item by its id.
    on_pin: Callback<(String, bool)>,
    /// Cycle the context mode Off → Light → Heavy.
    on_cycle_mode: Callback<()>,
) -> impl IntoView {
    let body = move || {
        let Some(s) = snapshot.get() else {
            return view! { <p class="empty">"No session is open."</p> }.into_any();
        };
        let included = s.included.len();
        let excluded = s.excluded.len();
        view! {
            <BudgetMeter
                meter=s.meter.clone()
                mode=s.mode
                context_tokens=s.context_tokens
                request_budget=s.request_budget
                context_window=s.context_window
                on_cycle_mode=on_cycle_mode
            />
            <details
                class="breakdown"
                data-testid="breakdown"
                prop:open=move || breakdown_open.get()
                on:toggle=move |ev| {
                    let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
                    breakdown_open.set(open);
                }
            >
                <summary>{format!("Included: {} · Excluded: {}", crate::words::count(included, "item", "items"), excluded)}</summary>
                <IncludedTable rows=s.included on_pin=on_pin />
                <ExcludedTable rows=s.excluded />
            </details>
            <section aria-label="Pins">
                <h3>"Pins"</h3>
                <ul class="rows"><PinList pins=s.pins on_pin=on_pin /></ul>
            </section>
            <section aria-label="Last request">
                <h3>"Last request"</h3>
                {match s.last_request {
                    None => view! { <p class="empty">"No request yet in this tab's memory."</p> }.into_any(),
                    Some(last) => view! { <LastRequestView last=last /> }.into_any(),
                }}
            </section>
            <section aria-label="Compactions">
                <h3>"Compactions"</h3>
                <ul class="rows"><CompactionList compactions=s.compactions /></ul>
            </section>
        }
        .into_any()
    };
    view! {
        <div class="inspector" data-testid="inspector">
            {body}
        </div>
    }
}

/// The budget meter: the mode's line, the share of the request budget in use, and the button
/// that cycles the context mode.
#[component]
fn BudgetMeter(
    /// The meter line.
    meter: String,
    /// The context mode's name.
    mode: &'static str,
    /// Tokens in the plan.
    context_tokens: u64,
    /// The request budget.
    request_budget: u64,
    /// The model's context window.
    context_window: u64,
    /// Cycle the context mode Off → Light → Heavy.
    on_cycle_mode: Callback<()>,
) -> impl IntoView {
    let percent = (context_tokens * 100)
        .checked_div(request_budget)
        .unwrap_or(0)
        .min(100);
    view! {
        <section class="meter" aria-label="Budget meter">
            <p class="meter-line" data-testid="budget-meter">{meter}</p>
            <div class="meter-bar" role="meter" aria-valuemin="0" aria-valuemax="100" aria-valuenow=percent.to_string() aria-label="Share of the request budget used">
                // `style:width` sets the width through the CSSOM; a `style` attribute would
                // be refused by the app's Content-Security-Policy (web/serve.mjs).
                <div class="meter-fill" style:width=format!("{percent}%")></div>
            </div>
            <p class="hint">
                {format!(
                    "{} of {} tokens (window {}). ",
                    context_tokens,
                    request_budget,
                    context_window,
                )}
                <button
                    type="button"
                    class="small"
                    data-testid="cycle-mode"
                    aria-keyshortcuts="Alt+M"
                    title="Alt+M"
                    on:click=move |_| on_cycle_mode.run(())
                >
                    {format!("Mode: {} (Alt+M cycles)", mode)}
                </button>
            </p>
        </section>
    }
}

/// The included items in context order, each with why it is in, and a pin button where it
/// can be pinned.
#[component]
fn IncludedTable(
    /// The rows.
    rows: Vec<IncludedRow>,
    /// Pin (`true`) or unpin (`false`) an item by its id.
    on_pin: Callback<(String, bool)>,
) -> impl IntoView {
    let included = rows
        .iter()
        .map(|row| {
            let id = row.id.clone();
            let pinned = row.pin == Some(PinKind::Sticky);
            let pin_button = row.pinnable.then(|| {
                let label = if pinned {
                    format!("Unpin {id}")
                } else {
                    format!("Pin {id}")
                };
                let target = id.clone();
                view! {
                    <button
                        type="button"
                        class="small"
                        data-testid=format!("pin-{id}")
                        aria-pressed=pinned.to_string()
                        aria-label=label
                        on:click=move |_| on_pin.run((target.clone(), !pinned))
                    >
                        {if pinned { "Unpin" } else { "Pin" }}
                    </button>
                }
            });
            view! {
                <tr data-testid="included-item" data-item=row.id.clone()>
                    <td>
                        <code>{row.id.clone()}</code>
                        {row.pin.map(|kind| view! { <span class="badge">{pin_kind(kind)}</span> })}
                    </td>
                    <td>{row.section}</td>
                    <td class="reason">{row.reason.clone()}</td>
                    <td class="num">{row.tier}</td>
                    <td>{row.ttl.clone()}</td>
                    <td class="num">{row.tokens}</td>
                    <td>{pin_button}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Included, in context order"</h3>
        <div class="table-wrap">
            <table class="items" data-testid="included-items">
                <thead>
                    <tr>
                        <th>"Item"</th>
                        <th>"Section"</th>
                        <th>"Why it is in"</th>
                        <th>"Tier"</th>
                        <th>"TTL"</th>
                        <th>"Tokens"</th>
                        <th>
                            <span class="visually-hidden">"Pin"</span>
                        </th>
                    </tr>
                </thead>
                <tbody>{included}</tbody>
            </table>
        </div>
    }
}

/// The excluded items and groups, each with why it is out.
#[component]
fn ExcludedTable(
    /// The rows.
    rows: Vec<ExcludedRow>,
) -> impl IntoView {
    let excluded = rows
        .iter()
        .map(|row| {
            view! {
                <tr data-testid="excluded-item" data-item=row.id.clone() data-reason=row.reason>
                    <td>
                        <code>{row.id.clone()}</code>
                        {row.pin.map(|kind| view! { <span class="badge">{pin_kind(kind)}</span> })}
                    </td>
                    <td>{row.section}</td>
                    <td class="reason">
                        <code>{row.reason}</code>
                    </td>
                    <td class="num">{row.count}</td>
                    <td class="num">{row.tokens}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Excluded"</h3>
        <div class="table-wrap">
            <table class="items" data-testid="excluded-items">
                <thead>
                    <tr>
                        <th>"Item"</th>
                        <th>"Section"</th>
                        <th>"Why it is out"</th>
                        <th>"Count"</th>
                        <th>"Tokens"</th>
                    </tr>
                </thead>
                <tbody>{excluded}</tbody>
            </table>
        </div>
    }
}

/// The pins, with Unpin for the person's own (sticky) pins.
#[component]
fn PinList(
    /// The pins in creation order.
    pins: Vec<PinRow>,
    /// Unpin (`false`) an item by its id.
    on_pin: Callback<(String, bool)>,
) -> impl IntoView {
    if pins.is_empty() {
        view! { <li class="empty">"Nothing pinned. Pin an item below to keep it in every request."</li> }.into_any()
    } else {
        pins.iter()
            .map(|p| {
                let target = p.target.clone();
                let can_unpin = p.kind == PinKind::Sticky;
                view! {
                    <li data-testid="pin" data-target=p.target.clone()>
                        <code>{p.target.clone()}</code>
                        <span class="badge">{pin_kind(p.kind)}</span>
                        <span class="hint">{p.detail.clone()}</span>
                        {can_unpin.then(|| view! {
                            <button
                                type="button"
                                class="small"
                                aria-label=format!("Unpin {target}")
                                on:click=move |_| on_pin.run((target.clone(), false))
                            >
                                "Unpin"
                            </button>
                        })}
                    </li>
                }
            })
            .collect_view()
            .into_any()
    }
}

/// The last request: its turn and token counts, its diff against the turn before, its tool
/// calls and its exact messages.
#[component]
fn LastRequestView(
    /// The request.
    last: LastRequest,
) -> impl IntoView {
    let reported = match last.reported_prompt_tokens {
        Some(r) => format!(
            "provider reported {r} prompt tokens; local count {}",
            last.estimated_prompt_tokens
        ),
        None => format!(
            "local count {} tokens (the provider reported none)",
            last.estimated_prompt_tokens
        ),
    };
    let messages = match last.messages {
        Ok(messages) => view! {
            <ol class="request-messages" data-testid="request-messages">
                {messages
                    .into_iter()
                    .map(|m| {
                        view! {
                            <li data-role=m.role>
                                <span class="badge">{m.role}</span>
                                <pre class="request-text">{m.content}</pre>
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        }
        .into_any(),
        Err(why) => view! {
            <p class="hint">{format!("The messages cannot be rebuilt here: {why}")}</p>
        }
        .into_any(),
    };
    let diff = if last.diff.is_empty() {
        view! { <p class="empty">"Nothing entered or left."</p> }.into_any()
    } else {
        view! {
            <ul class="diff" data-testid="plan-diff">
                {last
                    .diff
                    .into_iter()
                    .map(|d| {
                        let sign = match d.change {
                            "entered" => "+",
                            "left" => "−",
                            _ => "~",
                        };
                        view! {
                            <li class=format!("diff-{}", d.change) data-change=d.change>
                                {format!("{sign} {} ({} tokens) — {}", d.id, d.tokens, d.why)}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any()
    };
    let tools = (!last.tools.is_empty()).then(|| {
        view! {
            <h4>"Tool calls"</h4>
            <ul class="tools" data-testid="tool-calls">
                {last
                    .tools
                    .into_iter()
                    .map(|(name, args, ok)| {
                        view! {
                            <li>
                                <code>{format!("{name}({args})")}</code>
                                {if ok { " ✓" } else { " ✗ error" }}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
    });
    view! {
        <p class="hint">
            {format!(
                "Turn {} · {} request(s) · plan {} · {}",
                last.turn,
                last.requests,
                last.plan_id,
                reported,
            )}
        </p>
        <h4>{format!("Diff against the previous turn ({:+} tokens)", last.token_delta)}</h4>
        {diff}
        {tools}
        <details data-testid="last-request">
            <summary>"Exact messages of the last request"</summary>
            {messages}
        </details>
    }
}

/// The compactions, newest first.
#[component]
fn CompactionList(
    /// The compactions.
    compactions: Vec<CompactionRow>,
) -> impl IntoView {
    if compactions.is_empty() {
        // An item of the list it stands in for: a list may hold only <li> elements.
        view! { <li class="empty">"No compaction so far."</li> }.into_any()
    } else {
        compactions
            .iter()
            .map(|c| {
                view! {
                    <li data-testid="compaction">
                        {format!(
                            "Turn {}: level {} at {}% of the budget, {} → {} tokens, {} moved",
                            c.turn,
                            c.level,
                            c.trigger_percent,
                            c.tokens_before,
                            c.tokens_after,
                            crate::words::count(c.items_moved as usize, "item", "items"),
                        )}
                    </li>
                }
            })
            .collect_view()
            .into_any()
    }
}
