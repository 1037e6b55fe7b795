//! What changed between two plans (or two recorded requests): items that entered, left (and
//! why) or changed size.

use super::{ContextPlan, DiffEntry, ExcludedItem, IncludedItem, PlanDiff};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An included item, as telemetry keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemRef {
    /// The item id.
    pub id: String,
    /// Its tokens.
    pub tokens: u64,
    /// Its inclusion reason code.
    pub why: String,
}

impl ItemRef {
    /// An included item's id, tokens and reason code.
    pub fn of(item: &IncludedItem) -> ItemRef {
        ItemRef {
            id: item.id.clone(),
            tokens: item.tokens,
            why: item.reason.code().to_string(),
        }
    }
}

/// Compares two plans: what entered, what left and why, what changed size.
pub fn diff_plans(old: &ContextPlan, new: &ContextPlan) -> PlanDiff {
    let old_included: Vec<ItemRef> = old.included.iter().map(ItemRef::of).collect();
    let old_items: BTreeMap<&str, &ItemRef> =
        old_included.iter().map(|i| (i.id.as_str(), i)).collect();
    let new_included: Vec<ItemRef> = new.included.iter().map(ItemRef::of).collect();
    diff_items(
        &old_items,
        old.totals.context_tokens,
        &new_included,
        &new.excluded,
        new.totals.context_tokens,
    )
}

/// The diff of included items, shared by live plans and recorded requests.
pub(crate) fn diff_items(
    old_items: &BTreeMap<&str, &ItemRef>,
    old_total: u64,
    new_included: &[ItemRef],
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
