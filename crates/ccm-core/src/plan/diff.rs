//! What changed between two plans (or two recorded requests): items that entered, left (and
//! why) or changed size.

use super::{ContextPlan, DiffEntry, ExcludedItem, PlanDiff};
use std::collections::{BTreeMap, BTreeSet};

/// Compares two plans: what entered, what left and why, what changed size.
pub fn diff_plans(old: &ContextPlan, new: &ContextPlan) -> PlanDiff {
    let old = crate::telemetry::RequestRecord::of(old, None);
    let new = crate::telemetry::RequestRecord::of(new, None);
    crate::telemetry::diff_records(Some(&old), &new)
}

/// The diff of included items, shared by live plans and recorded requests.
pub(crate) fn diff_items(
    old_items: &BTreeMap<&str, &crate::telemetry::ItemRef>,
    old_total: u64,
    new_included: &[crate::telemetry::ItemRef],
    new_excluded: &[ExcludedItem],
    new_total: u64,
) -> PlanDiff {
    let new_ids: BTreeSet<&str> = new_included.iter().map(|i| i.id.as_str()).collect();
    let mut diff = PlanDiff {
        token_delta: new_total as i64 - old_total as i64,
        ..PlanDiff::default()
    };
    for item in new_included {
        match old_items.get(item.id.as_str()) {
            None => diff.entered.push(DiffEntry {
                id: item.id.clone(),
                tokens: item.tokens,
                why: item.why.clone(),
            }),
            Some(before) if before.tokens != item.tokens => diff.changed.push(DiffEntry {
                id: item.id.clone(),
                tokens: item.tokens,
                why: if item.tokens > before.tokens {
                    "grew"
                } else {
                    "shrank"
                }
                .to_string(),
            }),
            Some(_) => {}
        }
    }
    for (id, item) in old_items {
        if new_ids.contains(id) {
            continue;
        }
        let why = new_excluded
            .iter()
            .find(|e| e.id == *id)
            .map(|e| e.reason.code().to_string())
            .or_else(|| {
                // Ambient exchanges leave as part of the grouped window exclusion.
                id.starts_with("ambient:").then(|| {
                    new_excluded
                        .iter()
                        .find(|e| e.id.starts_with("ambient:before:"))
                        .map(|e| e.reason.code().to_string())
                })?
            })
            .unwrap_or_else(|| "gone".to_string());
        diff.left.push(DiffEntry {
            id: id.to_string(),
            tokens: item.tokens,
            why,
        });
    }
    diff
}
