//! The last plan a session built, kept with the key of the state it was built from, so that
//! the same state is planned once: the compaction check, the request, `end_turn`'s leases and
//! metrics, the meter and the inspector all read one plan while nothing changes.
//!
//! The key is exact, never a guess: the version of every component the planner borrows (a
//! component takes a new version whenever it is borrowed mutably, see
//! `components::versioned`) and the small values it reads, compared by value.

use super::{ContextPlan, PlanInput, SystemPrompt};
use crate::components::compaction::PlannedCompaction;
use crate::components::versioned::Versioned;
use std::sync::{Arc, Mutex, PoisonError};

/// What a plan was built from.
#[derive(Debug, Clone, PartialEq)]
struct PlanKey {
    turn: u64,
    system: (String, String, u32),
    versions: [u64; 8],
    attachments_in_working_set: Vec<String>,
    pending: Option<(String, u32)>,
}

impl PlanKey {
    fn of(input: &PlanInput<'_>) -> PlanKey {
        // Destructured field by field: a field added to `PlanInput` does not compile until
        // it is part of the key.
        let PlanInput {
            turn,
            config,
            system: SystemPrompt { text, hash, tokens },
            efforts,
            ambient,
            pins,
            compaction: PlannedCompaction { rolling, compacted },
            attachments,
            recall,
            attachments_in_working_set,
            pending,
        } = input;
        PlanKey {
            turn: *turn,
            system: (text.to_string(), hash.to_string(), *tokens),
            versions: [
                Versioned::version(config),
                Versioned::version(efforts),
                Versioned::version(ambient),
                Versioned::version(pins),
                Versioned::version(rolling),
                Versioned::version(compacted),
                Versioned::version(attachments),
                Versioned::version(recall),
            ],
            attachments_in_working_set: attachments_in_working_set.clone(),
            pending: pending.map(|(text, tokens)| (text.to_string(), tokens)),
        }
    }
}

/// The cached plan: its key, whether its messages were rendered, the plan.
type Entry = (PlanKey, bool, Arc<ContextPlan>);

/// One session's last plan. Behind a mutex so that a plan built through `&self` (the meter,
/// the inspector) is kept as well, and the session stays `Sync`; the lock is held only to read
/// or replace the entry, never while planning.
#[derive(Debug, Default)]
pub(crate) struct PlanCache(Mutex<Option<Entry>>);

impl Clone for PlanCache {
    fn clone(&self) -> PlanCache {
        PlanCache(Mutex::new(self.entry().clone()))
    }
}

impl PlanCache {
    fn entry(&self) -> std::sync::MutexGuard<'_, Option<Entry>> {
        // Nothing panics while the lock is held, and the entry is replaced whole.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The plan for `input`: the cached one when it was built from the same state (and
    /// rendered, if `render` is asked), otherwise a new one, which replaces it.
    pub(crate) fn plan(&self, input: &PlanInput<'_>, render: bool) -> Arc<ContextPlan> {
        let key = PlanKey::of(input);
        if let Some((cached, rendered, plan)) = self.entry().as_ref() {
            if *cached == key && (*rendered || !render) {
                return Arc::clone(plan);
            }
        }
        let plan = Arc::new(super::build(input, render));
        *self.entry() = Some((key, render, Arc::clone(&plan)));
        plan
    }
}
