//! The replay's results: the table (per conversation and in total), per-turn cost by tenth of
//! the conversation, recall, and the growth curve as SVG.

use crate::play::{ConversationResult, TurnPoint};
use std::fmt::Write as _;

/// Median of a list (the upper median for even lengths), 0 for an empty list.
pub fn median(values: &mut [u64]) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    values[values.len() / 2]
}

/// Median per-turn nanoseconds in each tenth of a conversation's turns.
pub fn cost_by_tenth(result: &ConversationResult) -> [u64; 10] {
    let mut tenths = [0u64; 10];
    let turns = result.points.len();
    for (tenth, slot) in tenths.iter_mut().enumerate() {
        let range = tenth * turns / 10..(tenth + 1) * turns / 10;
        let mut nanos: Vec<u64> = result.points[range].iter().map(|p| p.nanos).collect();
        *slot = median(&mut nanos);
    }
    tenths
}

/// Median per-turn nanoseconds in each tenth, pooled over every conversation (each turn
/// counted in the tenth of its own conversation).
pub fn pooled_cost_by_tenth(results: &[ConversationResult]) -> [u64; 10] {
    let mut pooled: Vec<Vec<u64>> = vec![Vec::new(); 10];
    for result in results {
        let turns = result.points.len();
        for (position, point) in result.points.iter().enumerate() {
            pooled[(position * 10 / turns.max(1)).min(9)].push(point.nanos);
        }
    }
    let mut tenths = [0u64; 10];
    for (slot, nanos) in tenths.iter_mut().zip(&mut pooled) {
        *slot = median(nanos);
    }
    tenths
}

fn ratio(last: u64, first: u64) -> f64 {
    last as f64 / first.max(1) as f64
}

fn saved(context: u64, naive: u64) -> f64 {
    100.0 * (1.0 - context as f64 / naive.max(1) as f64)
}

fn micros(nanos: u64) -> String {
    format!("{:.1}", nanos as f64 / 1000.0)
}

/// Totals over the whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Totals {
    /// Conversations played.
    pub conversations: usize,
    /// Exchanges played.
    pub exchanges: usize,
    /// Efforts opened.
    pub efforts: usize,
    /// Sum of the naive baselines at the end.
    pub naive_tokens: u64,
    /// Sum of working memory at the end.
    pub working_tokens: u64,
    /// Share saved at the end, over the sums.
    pub saved_percent: f64,
    /// Median of working memory at the end.
    pub median_working_tokens: u64,
    /// Largest working memory at the end.
    pub max_working_tokens: u64,
    /// Largest request of any turn.
    pub peak_request_tokens: u64,
    /// Median of resident summaries at the end.
    pub median_resident_summaries: u64,
    /// Largest number of resident summaries at the end.
    pub max_resident_summaries: u64,
    /// Largest ambient window at the end, in tokens.
    pub max_ambient_tokens: u64,
    /// Evicted efforts probed.
    pub recall_probes: usize,
    /// Share found first.
    pub recall_first_percent: f64,
    /// Share found in the top 3.
    pub recall_top3_percent: f64,
    /// Median per-turn cost by tenth, pooled.
    pub cost_by_tenth_nanos: [u64; 10],
    /// Last tenth over first tenth.
    pub cost_ratio_last_to_first: f64,
    /// Turns whose request did not fit the budget.
    pub over_budget_turns: usize,
    /// Problems the checks found.
    pub problems: usize,
}

/// Adds up a run.
pub fn totals(results: &[ConversationResult]) -> Totals {
    let naive: u64 = results.iter().map(|r| r.end_naive_tokens).sum();
    let working: u64 = results.iter().map(|r| r.end_working_tokens).sum();
    let mut ends: Vec<u64> = results.iter().map(|r| r.end_working_tokens).collect();
    let mut resident: Vec<u64> = results.iter().map(|r| r.end_resident_summaries).collect();
    let probes: Vec<_> = results.iter().flat_map(|r| &r.recall).collect();
    let first = probes.iter().filter(|p| p.rank == Some(1)).count();
    let top3 = probes
        .iter()
        .filter(|p| p.rank.is_some_and(|r| r <= 3))
        .count();
    let percent = |n: usize| 100.0 * n as f64 / probes.len().max(1) as f64;
    let tenths = pooled_cost_by_tenth(results);
    Totals {
        conversations: results.len(),
        exchanges: results.iter().map(|r| r.exchanges).sum(),
        efforts: results.iter().map(|r| r.efforts).sum(),
        naive_tokens: naive,
        working_tokens: working,
        saved_percent: saved(working, naive),
        median_working_tokens: median(&mut ends),
        max_working_tokens: ends.iter().copied().max().unwrap_or(0),
        peak_request_tokens: results
            .iter()
            .map(|r| r.peak_request_tokens)
            .max()
            .unwrap_or(0),
        median_resident_summaries: median(&mut resident),
        max_resident_summaries: resident.iter().copied().max().unwrap_or(0),
        max_ambient_tokens: results
            .iter()
            .map(|r| r.end_ambient_tokens)
            .max()
            .unwrap_or(0),
        recall_probes: probes.len(),
        recall_first_percent: percent(first),
        recall_top3_percent: percent(top3),
        cost_by_tenth_nanos: tenths,
        cost_ratio_last_to_first: ratio(tenths[9], tenths[0]),
        over_budget_turns: results
            .iter()
            .flat_map(|r| &r.points)
            .filter(|p| !p.within_budget)
            .count(),
        problems: results.iter().map(|r| r.problems.len()).sum(),
    }
}

/// The results as a Markdown table with a totals row and a short summary.
pub fn markdown(results: &[ConversationResult], totals: &Totals) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| conversation | exchanges | efforts | naive at end | working at end | saved | peak request | resident summaries | summary tokens | ambient tokens | µs/turn, first tenth | last tenth | ratio | evicted found first | in top 3 |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in results {
        let tenths = cost_by_tenth(r);
        let first = r.recall.iter().filter(|p| p.rank == Some(1)).count();
        let top3 = r
            .recall
            .iter()
            .filter(|p| p.rank.is_some_and(|k| k <= 3))
            .count();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1}% | {} | {} | {} | {} | {} | {} | {:.2} | {}/{} | {}/{} |",
            r.id,
            r.exchanges,
            r.efforts,
            r.end_naive_tokens,
            r.end_working_tokens,
            saved(r.end_working_tokens, r.end_naive_tokens),
            r.peak_request_tokens,
            r.end_resident_summaries,
            r.end_summary_tokens,
            r.end_ambient_tokens,
            micros(tenths[0]),
            micros(tenths[9]),
            ratio(tenths[9], tenths[0]),
            first,
            r.recall.len(),
            top3,
            r.recall.len(),
        );
    }
    let t = totals;
    let _ = writeln!(
        out,
        "| **total** | {} | {} | {} | {} | **{:.1}%** | {} | median {} (max {}) | | max {} | {} | {} | **{:.2}** | **{:.1}%** | **{:.1}%** |",
        t.exchanges,
        t.efforts,
        t.naive_tokens,
        t.working_tokens,
        t.saved_percent,
        t.peak_request_tokens,
        t.median_resident_summaries,
        t.max_resident_summaries,
        t.max_ambient_tokens,
        micros(t.cost_by_tenth_nanos[0]),
        micros(t.cost_by_tenth_nanos[9]),
        t.cost_ratio_last_to_first,
        t.recall_first_percent,
        t.recall_top3_percent,
    );
    let tenths: Vec<String> = t.cost_by_tenth_nanos.iter().map(|&n| micros(n)).collect();
    let _ = writeln!(
        out,
        "\n{} conversations, {} exchanges: {:.1}% saved at the end; working memory at the end: median {} tokens, largest {}; resident summaries at the end: median {}; evicted efforts found first by their own words: {:.1}% ({:.1}% in the top 3, {} probes); median µs per turn by tenth: {} (last/first {:.2}); requests over budget: {}; check problems: {}.",
        t.conversations,
        t.exchanges,
        t.saved_percent,
        t.median_working_tokens,
        t.max_working_tokens,
        t.median_resident_summaries,
        t.recall_first_percent,
        t.recall_top3_percent,
        t.recall_probes,
        tenths.join(" / "),
        t.cost_ratio_last_to_first,
        t.over_budget_turns,
        t.problems,
    );
    out
}

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The growth curve: for every conversation, the naive context (everything stored) and the
/// request CCM sent, over turns. Two panels share the turn axis: the full scale, where the naive
/// lines climb and CCM's stay flat, and a zoom on CCM's working context.
pub fn svg(results: &[ConversationResult], title: &str) -> String {
    let width = 960.0;
    let panel_height = 300.0;
    let left = 70.0;
    let right = 20.0;
    let top = 40.0;
    let gap = 60.0;
    let plot_width = width - left - right;
    let max_turn = results
        .iter()
        .map(|r| r.points.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let max_naive = results
        .iter()
        .flat_map(|r| &r.points)
        .map(|p| p.naive_tokens)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let max_request = results
        .iter()
        .flat_map(|r| &r.points)
        .map(|p| p.request_tokens)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let nice = |value: f64| {
        let step = 10f64.powf(value.log10().floor());
        (value / step).ceil() * step
    };
    let mut out = String::new();
    let height = top + 2.0 * panel_height + gap + 50.0;
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/><text x="{left}" y="24" font-size="15" font-weight="bold">{}</text>"##,
        escape(title)
    );
    let panels = [
        (top, nice(max_naive), "tokens (full scale)", true),
        (
            top + panel_height + gap,
            nice(max_request),
            "tokens (CCM's requests, zoomed)",
            false,
        ),
    ];
    for (y0, y_max, label, with_naive) in panels {
        let x = |turn: f64| left + plot_width * turn / max_turn;
        let y = |tokens: f64| y0 + panel_height - panel_height * tokens / y_max;
        let _ = writeln!(
            out,
            r##"<rect x="{left}" y="{y0}" width="{plot_width}" height="{panel_height}" fill="none" stroke="#999"/>"##
        );
        for step in 0..=4 {
            let value = y_max * f64::from(step) / 4.0;
            let _ = writeln!(
                out,
                r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                left + plot_width,
                left - 6.0,
                y(value) + 4.0,
                (value as u64),
                y = y(value)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{label}</text>"##,
            y0 + panel_height / 2.0,
            y0 + panel_height / 2.0
        );
        for result in results {
            let line = |value: &dyn Fn(&TurnPoint) -> u64| {
                result
                    .points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| format!("{:.1},{:.1}", x(i as f64 + 1.0), y(value(p) as f64)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if with_naive {
                let _ = writeln!(
                    out,
                    r##"<polyline fill="none" stroke="#c0392b" stroke-opacity="0.45" stroke-width="1.2" points="{}"/>"##,
                    line(&|p| p.naive_tokens)
                );
            }
            let _ = writeln!(
                out,
                r##"<polyline fill="none" stroke="#1f6feb" stroke-opacity="0.55" stroke-width="1.2" points="{}"/>"##,
                line(&|p| p.request_tokens)
            );
        }
    }
    let axis_y = top + 2.0 * panel_height + gap + 20.0;
    for step in 0..=5 {
        let turn = (max_turn * f64::from(step) / 5.0).round();
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{axis_y}" text-anchor="middle">{}</text>"##,
            left + plot_width * turn / max_turn,
            turn as u64
        );
    }
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">turn</text>"##,
        left + plot_width / 2.0,
        axis_y + 18.0
    );
    let legend_y = top + 16.0;
    let _ = writeln!(
        out,
        r##"<line x1="{0}" x2="{1}" y1="{legend_y}" y2="{legend_y}" stroke="#c0392b" stroke-width="2"/><text x="{2}" y="{3}">naive: every stored message</text><line x1="{0}" x2="{1}" y1="{4}" y2="{4}" stroke="#1f6feb" stroke-width="2"/><text x="{2}" y="{5}">CCM: the request sent</text>"##,
        left + 12.0,
        left + 36.0,
        left + 42.0,
        legend_y + 4.0,
        legend_y + 18.0,
        legend_y + 22.0,
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(&mut []), 0);
        assert_eq!(median(&mut [5, 1, 3]), 3);
        assert_eq!(median(&mut [4, 1, 3, 2]), 3);
    }
}
