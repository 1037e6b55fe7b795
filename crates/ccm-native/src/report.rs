//! Per-turn metrics as files: pretty JSON (the records as they are) and CSV (one row per turn,
//! for spreadsheets and plotting the token curve).

use ccm_core::metrics::TurnMetrics;
use std::fmt::Write as _;

/// The CSV header, in column order.
pub const CSV_HEADER: &str = "turn,context_tokens,naive_tokens,savings_vs_naive,\
expansion_tokens,expansion_overhead,next_context_tokens,summaries_in_memory,\
ambient_messages_in_memory,open_efforts,evicted_efforts,expanded,events";

/// The metrics as a pretty-printed JSON array of [`TurnMetrics`].
pub fn metrics_to_json(metrics: &[TurnMetrics]) -> String {
    serde_json::to_string_pretty(metrics).expect("metrics contain only serialisable data")
}

/// The metrics as CSV with [`CSV_HEADER`]: one row per turn, ratios with four decimals,
/// expanded efforts joined with `;`, and events written `kind:effort` joined with `;`.
pub fn metrics_to_csv(metrics: &[TurnMetrics]) -> String {
    let mut csv = String::from(CSV_HEADER);
    csv.push('\n');
    for m in metrics {
        let events: Vec<String> = m
            .events
            .iter()
            .map(|e| {
                let kind = serde_json::to_value(e.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{kind}:{}", e.effort)
            })
            .collect();
        let _ = writeln!(
            csv,
            "{},{},{},{:.4},{},{:.4},{},{},{},{},{},{},{}",
            m.turn,
            m.context_tokens,
            m.naive_tokens,
            m.savings_vs_naive,
            m.expansion_tokens,
            m.expansion_overhead,
            m.next_context_tokens,
            m.summaries_in_memory,
            m.ambient_messages_in_memory,
            m.open_efforts,
            m.evicted_efforts,
            csv_field(&m.expanded.join(";")),
            csv_field(&events.join(";")),
        );
    }
    csv
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_core::metrics::{EffortEvent, EventKind};

    #[test]
    fn one_row_per_turn_with_joined_lists() {
        let metrics = vec![TurnMetrics::new(
            3,
            500,
            100,
            2_000,
            450,
            1,
            2,
            vec!["auth-bug".into(), "a,b".into()],
            1,
            0,
            vec![
                EffortEvent::new(EventKind::Expanded, "auth-bug", 100),
                EffortEvent::new(EventKind::AutoCollapsed, "cache", 80),
            ],
        )];
        let csv = metrics_to_csv(&metrics);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[1],
            "3,500,2000,0.7500,100,0.2000,450,1,2,1,0,\"auth-bug;a,b\",expanded:auth-bug;auto_collapsed:cache"
        );
        assert_eq!(lines.len(), 2);
        let back: Vec<TurnMetrics> = serde_json::from_str(&metrics_to_json(&metrics)).unwrap();
        assert_eq!(back, metrics);
    }
}
