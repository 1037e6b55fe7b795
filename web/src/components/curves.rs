//! The token curves: per turn, the working context against the naive baseline, the expansion
//! overhead, markers for effort events and compactions, the provider's reported prompt tokens,
//! and the savings headline. Hover (or the arrow keys) shows one turn's numbers.

use crate::chart::{self, format_tokens, ChartGeometry, CurvePoint, MarkerKind, Size};
use leptos::html;
use leptos::prelude::*;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 260.0;

/// The chart with its headline and legend. The parts: the headline, the drawing with its
/// hover cursor ([`chart_layers`]), the [`Legend`] and the [`HoverCard`] of the selected turn.
#[component]
pub fn TokenCurves(
    /// One point per turn, oldest first.
    #[prop(into)]
    points: Signal<Vec<CurvePoint>>,
) -> impl IntoView {
    let size = Size {
        width: WIDTH,
        height: HEIGHT,
    };
    let geometry = Memo::new(move |_| points.with(|p| chart::geometry(p, size)));
    let selected = RwSignal::new(None::<usize>);
    let svg = NodeRef::<html::Div>::new();
    let on_move = move |ev: web_sys::MouseEvent| {
        let Some(frame) = svg.get() else { return };
        let rect = frame.get_bounding_client_rect();
        if rect.width() <= 0.0 {
            return;
        }
        let x = (f64::from(ev.client_x()) - rect.left()) / rect.width() * WIDTH;
        let index = points.with(|p| geometry.with(|g| chart::nearest_point(p, &g.scale, x)));
        selected.set(index);
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        let len = points.with(Vec::len);
        if len == 0 {
            return;
        }
        let current = selected.get_untracked().unwrap_or(len - 1);
        let next = match ev.key().as_str() {
            "ArrowLeft" => current.saturating_sub(1),
            "ArrowRight" => (current + 1).min(len - 1),
            "Home" => 0,
            "End" => len - 1,
            _ => return,
        };
        ev.prevent_default();
        selected.set(Some(next));
    };
    let cursor = move || {
        let index = selected.get()?;
        let x = points
            .with(|p| p.get(index).map(|pt| pt.turn))
            .map(|turn| geometry.with(|g| g.scale.x(turn)))?;
        let (top, bottom) = geometry.with(|g| (g.scale.top, g.scale.bottom));
        Some(view! { <line class="cursor" x1=x y1=top x2=x y2=bottom /> })
    };
    view! {
        <div class="curves" data-testid="token-curves">
            <p class="headline" data-testid="savings-headline">{move || points.with(|p| headline(p))}</p>
            <div
                class="chart-frame"
                node_ref=svg
                tabindex="0"
                role="img"
                aria-label="Token curve per turn: working context against the naive baseline. Use the arrow keys to read each turn."
                on:mousemove=on_move
                on:mouseleave=move |_| selected.set(None)
                on:keydown=on_key
            >
                <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") preserveAspectRatio="none" data-testid="chart-svg">
                    {move || geometry.with(chart_layers)}
                    {cursor}
                </svg>
            </div>
            <Legend />
            <HoverCard points selected=selected.read_only() />
        </div>
    }
}

/// The savings headline above the chart.
fn headline(points: &[CurvePoint]) -> String {
    match chart::savings(points) {
        None => "No turn yet: the curve starts with the first reply.".to_string(),
        Some(s) => format!(
            "{:.0}% smaller than the naive context now ({} vs {} tokens) · {} tokens not sent over {}",
            s.percent_now,
            format_tokens(s.context_now),
            format_tokens(s.naive_now),
            format_tokens(s.tokens_saved_total),
            crate::words::turns(points.len()),
        ),
    }
}

/// What the chart draws of its geometry, back to front: the grid with the token labels, the
/// turn labels, the axis, the three curves, the provider-reported points and the event
/// markers.
fn chart_layers(g: &ChartGeometry) -> impl IntoView {
    let s = g.scale;
    let grid = g
        .y_labels
        .iter()
        .map(|(y, label)| {
            view! {
                <line class="grid" x1=s.left y1=*y x2=s.right y2=*y />
                <text class="axis" x=s.left - 6.0 y=*y + 4.0 text-anchor="end">
                    {label.clone()}
                </text>
            }
        })
        .collect_view();
    let x_axis = g
        .x_labels
        .iter()
        .map(|(x, label)| {
            view! {
                <text class="axis" x=*x y=s.bottom + 16.0 text-anchor="middle">
                    {label.clone()}
                </text>
            }
        })
        .collect_view();
    let reported = g
        .reported
        .iter()
        .map(|(x, y, tokens)| {
            view! {
                <circle class="reported" cx=*x cy=*y r="3" data-testid="reported-point">
                    <title>{format!("provider-reported prompt: {tokens} tokens")}</title>
                </circle>
            }
        })
        .collect_view();
    let markers = g
        .markers
        .iter()
        .map(|m| {
            view! {
                <g class=format!("marker marker-{}", m.marker.kind.css()) data-testid="chart-marker" data-kind=m.marker.kind.label()>
                    <circle cx=m.x cy=m.y r="6" />
                    <text x=m.x y=m.y + 3.5 text-anchor="middle">{m.marker.kind.letter()}</text>
                    <title>
                        {format!("turn {}: {} {} ({} tokens)", m.turn, m.marker.kind.label(), m.marker.subject, m.marker.tokens)}
                    </title>
                </g>
            }
        })
        .collect_view();
    view! {
        {grid}
        {x_axis}
        <line class="axis-line" x1=s.left y1=s.bottom x2=s.right y2=s.bottom />
        <path class="expansion" d=g.expansion_area.clone() data-testid="expansion-area" />
        <path class="naive" d=g.naive_path.clone() data-testid="naive-line" />
        <path class="context" d=g.context_path.clone() data-testid="context-line" />
        {reported}
        {markers}
    }
}

/// What each line, area and marker of the chart stands for.
#[component]
fn Legend() -> impl IntoView {
    view! {
        <ul class="legend" aria-label="Legend">
            <li>
                <span class="swatch context"></span>
                "working context"
            </li>
            <li>
                <span class="swatch naive"></span>
                "naive (everything in context)"
            </li>
            <li>
                <span class="swatch expansion"></span>
                "expansion overhead"
            </li>
            <li>
                <span class="swatch reported"></span>
                "provider-reported prompt"
            </li>
            {MarkerKind::ALL
                .iter()
                .map(|k| {
                    view! {
                        <li>
                            <span class=format!("dot marker-{}", k.css())>{k.letter()}</span>
                            {k.label()}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// The numbers of the turn the pointer or the arrow keys selected (empty when none is).
#[component]
fn HoverCard(
    /// One point per turn, oldest first.
    points: Signal<Vec<CurvePoint>>,
    /// The selected turn's index in `points`.
    selected: ReadSignal<Option<usize>>,
) -> impl IntoView {
    let lines = move || {
        let index = selected.get()?;
        points.with(|p| p.get(index).map(chart::hover_lines))
    };
    view! {
        <div class="hover-card" data-testid="chart-hover" aria-live="polite">
            {move || {
                lines()
                    .map(|lines| {
                        lines.into_iter().map(|line| view! { <p>{line}</p> }).collect_view()
                    })
            }}
        </div>
    }
}
