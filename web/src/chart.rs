//! The geometry of the token-curve chart: pure functions from per-turn numbers to SVG
//! coordinates and path strings.
//!
//! Nothing here touches the DOM, so every rule of the drawing (scales, ticks, paths, marker
//! placement, hover lookup, the savings headline) is tested natively with `cargo test`. The
//! component in `components::curves` only turns the result into SVG elements.

use ccm_core::metrics::{EventKind, TurnMetrics};
use ccm_core::telemetry::TurnTelemetry;

/// What happened in a turn that deserves a marker on the curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerKind {
    /// An effort was opened.
    Opened,
    /// An effort was concluded.
    Concluded,
    /// A concluded effort was expanded back into context.
    Expanded,
    /// An expanded effort collapsed by itself after going unreferenced.
    AutoCollapsed,
    /// A summary left working memory.
    Evicted,
    /// A compaction moved items out of the working set.
    Compacted,
}

impl MarkerKind {
    /// Every kind, in legend order.
    pub const ALL: [MarkerKind; 6] = [
        MarkerKind::Opened,
        MarkerKind::Concluded,
        MarkerKind::Expanded,
        MarkerKind::AutoCollapsed,
        MarkerKind::Evicted,
        MarkerKind::Compacted,
    ];

    /// The word shown in the legend and in hover text.
    pub fn label(self) -> &'static str {
        match self {
            MarkerKind::Opened => "opened",
            MarkerKind::Concluded => "concluded",
            MarkerKind::Expanded => "expanded",
            MarkerKind::AutoCollapsed => "auto-collapsed",
            MarkerKind::Evicted => "evicted",
            MarkerKind::Compacted => "compacted",
        }
    }

    /// The one letter drawn inside the marker, so markers stay distinguishable without colour.
    pub fn letter(self) -> &'static str {
        match self {
            MarkerKind::Opened => "O",
            MarkerKind::Concluded => "C",
            MarkerKind::Expanded => "E",
            MarkerKind::AutoCollapsed => "A",
            MarkerKind::Evicted => "V",
            MarkerKind::Compacted => "K",
        }
    }

    /// The CSS class suffix that colours the marker: the legend's word, which is a valid
    /// class name for every kind, so the stylesheet and the legend cannot drift apart.
    pub fn css(self) -> &'static str {
        self.label()
    }

    fn of_event(kind: EventKind) -> Option<MarkerKind> {
        match kind {
            EventKind::Opened => Some(MarkerKind::Opened),
            EventKind::Concluded => Some(MarkerKind::Concluded),
            EventKind::Expanded => Some(MarkerKind::Expanded),
            EventKind::AutoCollapsed => Some(MarkerKind::AutoCollapsed),
            EventKind::Evicted | EventKind::EvictedOverBudget => Some(MarkerKind::Evicted),
            // Switches, reopenings and manual collapses are visible in the tier view; on the
            // curve they would only add noise without a change the chart explains.
            // Recalled excerpts come and go with questions about the past; the inspector lists
            // them, the curve shows their tokens.
            EventKind::Switched
            | EventKind::Reopened
            | EventKind::Collapsed
            | EventKind::Recalled
            | EventKind::RecallDecayed => None,
        }
    }
}

/// One marker of a turn: what happened, to which effort, and the tokens involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// What happened.
    pub kind: MarkerKind,
    /// The effort's id (or the compaction level, for compactions).
    pub subject: String,
    /// Tokens loaded, freed or moved.
    pub tokens: u64,
}

/// The numbers of one turn that the chart draws.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    /// The turn.
    pub turn: u64,
    /// Tokens of the working context the turn was carried out with.
    pub context: u64,
    /// Tokens the naive everything-in-context baseline would have sent.
    pub naive: u64,
    /// Tokens of the context loaded by expanded efforts.
    pub expansion: u64,
    /// The provider's reported prompt tokens of the turn's last request, when it reported any.
    pub reported: Option<u64>,
    /// What happened in the turn.
    pub markers: Vec<Marker>,
}

/// The chart's points from the session's metrics history and the telemetry kept in memory.
pub fn curve_points(history: &[TurnMetrics], telemetry: &[TurnTelemetry]) -> Vec<CurvePoint> {
    history
        .iter()
        .map(|m| {
            let mut markers: Vec<Marker> = m
                .events
                .iter()
                .filter_map(|e| {
                    MarkerKind::of_event(e.kind).map(|kind| Marker {
                        kind,
                        subject: e.effort.clone(),
                        tokens: e.tokens,
                    })
                })
                .collect();
            markers.extend(m.compactions.iter().map(|c| Marker {
                kind: MarkerKind::Compacted,
                subject: format!("level {}", c.level),
                tokens: c.tokens_freed,
            }));
            let reported = telemetry.iter().find(|t| t.turn == m.turn).and_then(|t| {
                t.requests
                    .iter()
                    .rev()
                    .find_map(|r| r.reported_prompt_tokens)
            });
            CurvePoint {
                turn: m.turn,
                context: m.context_tokens,
                naive: m.naive_tokens,
                expansion: m.expansion_tokens,
                reported,
                markers,
            }
        })
        .collect()
}

/// The savings headline: how much smaller the working context is than the naive baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Savings {
    /// Percent of the naive context saved at the latest turn (0–100).
    pub percent_now: f64,
    /// Tokens not sent, summed over every turn shown.
    pub tokens_saved_total: u64,
    /// The latest turn's working context.
    pub context_now: u64,
    /// The latest turn's naive baseline.
    pub naive_now: u64,
}

/// The headline numbers, or `None` before the first turn.
pub fn savings(points: &[CurvePoint]) -> Option<Savings> {
    let last = points.last()?;
    let percent_now = if last.naive == 0 {
        0.0
    } else {
        100.0 * (1.0 - last.context as f64 / last.naive as f64)
    };
    Some(Savings {
        percent_now: percent_now.max(0.0),
        tokens_saved_total: points
            .iter()
            .map(|p| p.naive.saturating_sub(p.context))
            .sum(),
        context_now: last.context,
        naive_now: last.naive,
    })
}

/// The drawing area in SVG user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// Space around the plot for the axis labels.
const MARGIN_LEFT: f64 = 52.0;
const MARGIN_RIGHT: f64 = 14.0;
const MARGIN_TOP: f64 = 14.0;
const MARGIN_BOTTOM: f64 = 30.0;
/// Vertical distance between stacked markers of one turn.
const MARKER_STEP: f64 = 13.0;

/// Maps turns and token counts to SVG coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// The first turn shown.
    pub first_turn: u64,
    /// The last turn shown.
    pub last_turn: u64,
    /// The token count at the top of the plot (a round number at or above every value).
    pub top_tokens: u64,
    /// Left edge of the plot.
    pub left: f64,
    /// Right edge of the plot.
    pub right: f64,
    /// Top edge of the plot.
    pub top: f64,
    /// Bottom edge of the plot (the zero line).
    pub bottom: f64,
}

impl Scale {
    /// The x coordinate of a turn. A single turn sits in the middle.
    pub fn x(&self, turn: u64) -> f64 {
        if self.last_turn == self.first_turn {
            return (self.left + self.right) / 2.0;
        }
        let span = (self.last_turn - self.first_turn) as f64;
        self.left + (turn.saturating_sub(self.first_turn)) as f64 / span * (self.right - self.left)
    }

    /// The y coordinate of a token count (0 at the bottom).
    pub fn y(&self, tokens: u64) -> f64 {
        let top = self.top_tokens.max(1) as f64;
        self.bottom - (tokens.min(self.top_tokens) as f64 / top) * (self.bottom - self.top)
    }
}

/// The smallest "round" number (1, 2 or 5 times a power of ten) at or above `value`, and at
/// least 10, so the axis always has readable labels.
pub fn nice_ceiling(value: u64) -> u64 {
    let mut magnitude: u64 = 1;
    loop {
        for step in [1, 2, 5] {
            let candidate = step * magnitude;
            if candidate >= value.max(10) {
                return candidate;
            }
        }
        magnitude = magnitude.saturating_mul(10);
    }
}

/// Evenly spaced tick values from 0 to `top` inclusive (`parts` intervals).
pub fn ticks(top: u64, parts: u64) -> Vec<u64> {
    let parts = parts.max(1);
    (0..=parts).map(|i| top * i / parts).collect()
}

/// How many intervals split an axis whose top is a [`nice_ceiling`], so every label is round:
/// 2, 20, 200… in quarters (0.5 steps), 1 and 5 (and their powers of ten) in fifths.
pub fn tick_parts(top: u64) -> u64 {
    let mut leading = top.max(1);
    while leading >= 10 {
        leading /= 10;
    }
    if leading == 2 {
        4
    } else {
        5
    }
}

/// Turn numbers to label on the x axis: at most `max_labels`, always the first and the last.
pub fn turn_ticks(first: u64, last: u64, max_labels: u64) -> Vec<u64> {
    if last <= first {
        return vec![first];
    }
    let span = last - first;
    let raw = span.div_ceil(max_labels.max(2) - 1).max(1);
    // Short spans label every few turns; longer ones use round steps (10, 20, 50, …).
    let step = if span <= 10 { raw } else { nice_ceiling(raw) };
    let mut turns: Vec<u64> = (0..)
        .map(|i| first + i * step)
        .take_while(|t| *t < last)
        .collect();
    // Keep the last label clear of the one before it.
    if let Some(&previous) = turns.last() {
        if turns.len() > 1 && (last - previous) * 2 < step {
            turns.pop();
        }
    }
    turns.push(last);
    turns
}

/// A token count as people read it: `950`, `1.2k`, `34k`, `1.5M`.
pub fn format_tokens(tokens: u64) -> String {
    match tokens {
        0..=999 => tokens.to_string(),
        1_000..=9_999 => trim_zero(format!("{:.1}k", tokens as f64 / 1_000.0)),
        10_000..=999_999 => format!("{}k", (tokens + 500) / 1_000),
        _ => trim_zero(format!("{:.1}M", tokens as f64 / 1_000_000.0)),
    }
}

fn trim_zero(text: String) -> String {
    text.replace(".0k", "k").replace(".0M", "M")
}

/// An SVG polyline path (`M x y L x y …`) with coordinates rounded to 0.1 unit.
pub fn line_path(points: &[(f64, f64)]) -> String {
    let mut path = String::new();
    for (i, (x, y)) in points.iter().enumerate() {
        if i > 0 {
            path.push(' ');
        }
        path.push_str(&format!(
            "{}{:.1} {:.1}",
            if i == 0 { 'M' } else { 'L' },
            x,
            y
        ));
    }
    path
}

/// A closed area between the polyline `points` and the horizontal line at `baseline`.
pub fn area_path(points: &[(f64, f64)], baseline: f64) -> String {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return String::new();
    };
    format!(
        "M{:.1} {:.1} {} L{:.1} {:.1} Z",
        first.0,
        baseline,
        line_path(points).replacen('M', "L", 1),
        last.0,
        baseline
    )
}

/// A marker as drawn: its centre, what it shows, and the turn it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerGlyph {
    /// Centre x.
    pub x: f64,
    /// Centre y.
    pub y: f64,
    /// The turn.
    pub turn: u64,
    /// What it marks.
    pub marker: Marker,
}

/// Everything the chart component draws.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartGeometry {
    /// The mapping from data to coordinates.
    pub scale: Scale,
    /// The working context per turn.
    pub context_path: String,
    /// The naive baseline per turn.
    pub naive_path: String,
    /// The expansion overhead, as an area above the zero line.
    pub expansion_area: String,
    /// Provider-reported prompt tokens, one point per turn that has them.
    pub reported: Vec<(f64, f64, u64)>,
    /// Markers, stacked above the context line when a turn has several.
    pub markers: Vec<MarkerGlyph>,
    /// Labels of the token axis: position and text.
    pub y_labels: Vec<(f64, String)>,
    /// Labels of the turn axis: position and text.
    pub x_labels: Vec<(f64, String)>,
}

/// Lays out the chart for `points` in an area of `size`.
pub fn geometry(points: &[CurvePoint], size: Size) -> ChartGeometry {
    let first_turn = points.first().map_or(0, |p| p.turn);
    let last_turn = points.last().map_or(0, |p| p.turn);
    let highest = points
        .iter()
        .map(|p| p.naive.max(p.context).max(p.reported.unwrap_or(0)))
        .max()
        .unwrap_or(0);
    let scale = Scale {
        first_turn,
        last_turn,
        top_tokens: nice_ceiling(highest),
        left: MARGIN_LEFT,
        right: (size.width - MARGIN_RIGHT).max(MARGIN_LEFT + 1.0),
        top: MARGIN_TOP,
        bottom: (size.height - MARGIN_BOTTOM).max(MARGIN_TOP + 1.0),
    };
    let at = |turn: u64, tokens: u64| (scale.x(turn), scale.y(tokens));
    let context: Vec<(f64, f64)> = points.iter().map(|p| at(p.turn, p.context)).collect();
    let naive: Vec<(f64, f64)> = points.iter().map(|p| at(p.turn, p.naive)).collect();
    let expansion: Vec<(f64, f64)> = points.iter().map(|p| at(p.turn, p.expansion)).collect();
    let reported = points
        .iter()
        .filter_map(|p| p.reported.map(|r| (scale.x(p.turn), scale.y(r), r)))
        .collect();
    let markers = points
        .iter()
        .flat_map(|p| {
            let (x, y) = at(p.turn, p.context);
            p.markers
                .iter()
                .enumerate()
                .map(move |(i, marker)| MarkerGlyph {
                    x,
                    // Above the line, stacked upwards, but never above the plot.
                    y: (y - 10.0 - i as f64 * MARKER_STEP).max(scale.top + 5.0),
                    turn: p.turn,
                    marker: marker.clone(),
                })
        })
        .collect();
    let y_labels = ticks(scale.top_tokens, tick_parts(scale.top_tokens))
        .into_iter()
        .map(|t| (scale.y(t), format_tokens(t)))
        .collect();
    let x_labels = if points.is_empty() {
        Vec::new()
    } else {
        turn_ticks(first_turn, last_turn, 8)
            .into_iter()
            .map(|t| (scale.x(t), t.to_string()))
            .collect()
    };
    ChartGeometry {
        scale,
        context_path: line_path(&context),
        naive_path: line_path(&naive),
        expansion_area: if points.iter().any(|p| p.expansion > 0) {
            area_path(&expansion, scale.bottom)
        } else {
            String::new()
        },
        reported,
        markers,
        y_labels,
        x_labels,
    }
}

/// The index of the point nearest to the x coordinate `x` (for hover), or `None` without
/// points.
pub fn nearest_point(points: &[CurvePoint], scale: &Scale, x: f64) -> Option<usize> {
    points
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| {
            let da = (scale.x(a.turn) - x).abs();
            let db = (scale.x(b.turn) - x).abs();
            da.total_cmp(&db)
        })
        .map(|(i, _)| i)
}

/// The hover text of one turn: every number the chart shows for it.
pub fn hover_lines(point: &CurvePoint) -> Vec<String> {
    let mut lines = vec![
        format!("Turn {}", point.turn),
        format!("Working context: {} tokens", point.context),
        format!("Naive baseline: {} tokens", point.naive),
    ];
    if point.naive > 0 {
        lines.push(format!(
            "Saved: {:.0}%",
            100.0 * (1.0 - point.context as f64 / point.naive as f64).max(0.0)
        ));
    }
    if point.expansion > 0 {
        lines.push(format!("Expansion overhead: {} tokens", point.expansion));
    }
    if let Some(reported) = point.reported {
        lines.push(format!(
            "Provider-reported prompt: {reported} tokens (local count {})",
            point.context
        ));
    }
    for marker in &point.markers {
        lines.push(format!(
            "{} {} ({} tokens)",
            marker.kind.label(),
            marker.subject,
            marker.tokens
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_core::metrics::EffortEvent;

    fn point(turn: u64, context: u64, naive: u64) -> CurvePoint {
        CurvePoint {
            turn,
            context,
            naive,
            expansion: 0,
            reported: None,
            markers: Vec::new(),
        }
    }

    const SIZE: Size = Size {
        width: 600.0,
        height: 240.0,
    };

    #[test]
    fn nice_ceiling_rounds_up_to_one_two_or_five() {
        assert_eq!(nice_ceiling(0), 10);
        assert_eq!(nice_ceiling(10), 10);
        assert_eq!(nice_ceiling(11), 20);
        assert_eq!(nice_ceiling(480), 500);
        assert_eq!(nice_ceiling(501), 1_000);
        assert_eq!(nice_ceiling(1_001), 2_000);
        assert_eq!(nice_ceiling(28_000), 50_000);
    }

    #[test]
    fn ticks_split_the_axis_evenly() {
        assert_eq!(ticks(1_000, 4), vec![0, 250, 500, 750, 1_000]);
        assert_eq!(ticks(10, 0), vec![0, 10]);
    }

    #[test]
    fn tick_parts_give_round_labels() {
        assert_eq!(
            ticks(5_000, tick_parts(5_000)),
            vec![0, 1_000, 2_000, 3_000, 4_000, 5_000]
        );
        assert_eq!(
            ticks(2_000, tick_parts(2_000)),
            vec![0, 500, 1_000, 1_500, 2_000]
        );
        assert_eq!(ticks(10, tick_parts(10)), vec![0, 2, 4, 6, 8, 10]);
    }

    #[test]
    fn turn_ticks_keep_first_and_last_and_stay_few() {
        assert_eq!(turn_ticks(1, 1, 8), vec![1]);
        assert_eq!(turn_ticks(1, 5, 8), vec![1, 2, 3, 4, 5]);
        let many = turn_ticks(1, 1_000, 8);
        assert_eq!(many.first(), Some(&1));
        assert_eq!(many.last(), Some(&1_000));
        assert!(many.len() <= 9, "{many:?}");
        assert!(many.windows(2).all(|w| w[0] < w[1]), "{many:?}");
    }

    #[test]
    fn token_counts_are_formatted_for_people() {
        assert_eq!(format_tokens(950), "950");
        assert_eq!(format_tokens(1_000), "1k");
        assert_eq!(format_tokens(1_234), "1.2k");
        assert_eq!(format_tokens(34_400), "34k");
        assert_eq!(format_tokens(1_500_000), "1.5M");
    }

    #[test]
    fn scale_maps_turns_and_tokens_into_the_plot() {
        let g = geometry(&[point(1, 100, 100), point(11, 400, 1_000)], SIZE);
        let s = g.scale;
        assert_eq!(s.x(1), s.left);
        assert_eq!(s.x(11), s.right);
        assert_eq!(s.x(6), (s.left + s.right) / 2.0);
        assert_eq!(s.top_tokens, 1_000);
        assert_eq!(s.y(0), s.bottom);
        assert_eq!(s.y(1_000), s.top);
        assert!(s.y(400) < s.y(100), "more tokens are higher up");
    }

    #[test]
    fn a_single_turn_is_centred() {
        let g = geometry(&[point(3, 50, 80)], SIZE);
        assert_eq!(g.scale.x(3), (g.scale.left + g.scale.right) / 2.0);
        assert!(g.context_path.starts_with('M'));
        assert!(!g.context_path.contains('L'));
        assert_eq!(g.x_labels, vec![(g.scale.x(3), "3".to_string())]);
    }

    #[test]
    fn no_points_give_an_empty_chart() {
        let g = geometry(&[], SIZE);
        assert!(g.context_path.is_empty());
        assert!(g.naive_path.is_empty());
        assert!(g.markers.is_empty());
        assert!(g.x_labels.is_empty());
        assert_eq!(savings(&[]), None);
        assert_eq!(nearest_point(&[], &g.scale, 10.0), None);
    }

    #[test]
    fn paths_are_polylines_through_every_point() {
        assert_eq!(line_path(&[(1.0, 2.0), (3.25, 4.0)]), "M1.0 2.0 L3.2 4.0");
        assert_eq!(
            area_path(&[(1.0, 2.0), (3.0, 4.0)], 10.0),
            "M1.0 10.0 L1.0 2.0 L3.0 4.0 L3.0 10.0 Z"
        );
        assert_eq!(area_path(&[], 10.0), "");
    }

    #[test]
    fn the_expansion_area_is_drawn_only_when_something_was_expanded() {
        let mut points = vec![point(1, 100, 100), point(2, 300, 400)];
        assert!(geometry(&points, SIZE).expansion_area.is_empty());
        points[1].expansion = 150;
        let area = geometry(&points, SIZE).expansion_area;
        assert!(area.starts_with('M') && area.ends_with('Z'), "{area}");
    }

    #[test]
    fn markers_stack_above_the_context_line() {
        let mut p = point(2, 500, 900);
        p.markers = vec![
            Marker {
                kind: MarkerKind::Concluded,
                subject: "auth-bug".into(),
                tokens: 300,
            },
            Marker {
                kind: MarkerKind::Evicted,
                subject: "old".into(),
                tokens: 20,
            },
        ];
        let g = geometry(&[point(1, 100, 100), p], SIZE);
        assert_eq!(g.markers.len(), 2);
        let line_y = g.scale.y(500);
        assert!(g.markers[0].y < line_y);
        assert!(g.markers[1].y < g.markers[0].y);
        assert!(g.markers.iter().all(|m| m.y >= g.scale.top));
        assert_eq!(g.markers[0].x, g.scale.x(2));
    }

    #[test]
    fn nearest_point_picks_the_closest_turn() {
        let points = vec![point(1, 1, 1), point(2, 1, 1), point(3, 1, 1)];
        let g = geometry(&points, SIZE);
        assert_eq!(nearest_point(&points, &g.scale, 0.0), Some(0));
        assert_eq!(
            nearest_point(&points, &g.scale, g.scale.x(2) + 3.0),
            Some(1)
        );
        assert_eq!(nearest_point(&points, &g.scale, 10_000.0), Some(2));
    }

    #[test]
    fn savings_compare_the_last_turn_and_add_up_every_turn() {
        let s = savings(&[point(1, 100, 100), point(2, 250, 1_000)]).unwrap();
        assert_eq!(s.percent_now, 75.0);
        assert_eq!(s.tokens_saved_total, 750);
        assert_eq!((s.context_now, s.naive_now), (250, 1_000));
        // A context larger than the baseline (pins, attachments) never shows negative savings.
        assert_eq!(savings(&[point(1, 120, 100)]).unwrap().percent_now, 0.0);
    }

    #[test]
    fn curve_points_take_events_compactions_and_reported_usage() {
        let mut metrics = TurnMetrics::new(
            4,
            500,
            200,
            2_000,
            300,
            1,
            2,
            vec!["auth-bug".into()],
            0,
            0,
            vec![
                EffortEvent::new(EventKind::Expanded, "auth-bug", 200),
                EffortEvent::new(EventKind::Switched, "other", 0),
            ],
        );
        // Built from JSON so the test does not depend on every field of the record.
        let record = serde_json::json!({
            "level": 2,
            "trigger_per_mille": 760,
            "tokens_before": 900,
            "tokens_after": 500,
            "tokens_freed": 400,
            "items_moved": 3,
            "banner": "compacted",
            "relevance": "lexical"
        });
        metrics
            .compactions
            .push(serde_json::from_value(record).expect("a compaction record"));
        let points = curve_points(&[metrics], &[]);
        assert_eq!(points.len(), 1);
        let p = &points[0];
        assert_eq!(
            (p.turn, p.context, p.naive, p.expansion),
            (4, 500, 2_000, 200)
        );
        assert_eq!(p.reported, None);
        let kinds: Vec<MarkerKind> = p.markers.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![MarkerKind::Expanded, MarkerKind::Compacted]);
        assert_eq!(p.markers[1].subject, "level 2");
        assert_eq!(p.markers[1].tokens, 400);
    }

    #[test]
    fn hover_lines_show_every_number_of_the_turn() {
        let mut p = point(7, 250, 1_000);
        p.expansion = 40;
        p.reported = Some(262);
        let lines = hover_lines(&p);
        assert_eq!(lines[0], "Turn 7");
        assert!(lines.contains(&"Saved: 75%".to_string()));
        assert!(lines.contains(&"Expansion overhead: 40 tokens".to_string()));
        assert!(lines
            .iter()
            .any(|l| l == "Provider-reported prompt: 262 tokens (local count 250)"));
    }
}
