//! The session's side of planning: it lends its components to the planner (`plan::PlanInput`)
//! and offers the plan, the context and recipe replay as methods.

use super::Session;
use crate::model::ContextMessage;
use crate::plan::{self, ContextPlan, PlanInput, RecipePart, SystemPrompt};
use std::sync::Arc;

impl Session {
    /// The system prompt as the planner reads it.
    fn system(&self) -> SystemPrompt<'_> {
        SystemPrompt {
            text: &self.system_prompt,
            hash: &self.system_hash,
            tokens: self.system_tokens,
        }
    }

    /// The planner's view of the session: its components, borrowed.
    pub(crate) fn plan_input(&self) -> PlanInput<'_> {
        PlanInput {
            turn: self.turn,
            config: &self.config,
            system: self.system(),
            efforts: &self.efforts,
            ambient: &self.ambient,
            pins: &self.pins,
            compaction: self.compaction.planned(),
            attachments: &self.attachments,
            recall: &self.recall,
            attachments_in_working_set: self.attachments_in_working_set(),
            pending: self.pending_user_message(),
        }
    }

    /// Raw logs the next plan would include if they were loaded (pinned logs and Heavy mode's
    /// best match). A host that opened the session from a store attaches them before planning.
    pub fn logs_needed_for_plan(&self) -> Vec<String> {
        plan::logs_needed(&self.plan_input())
    }

    /// Builds the context plan for the current state: the next request's messages, with the
    /// reason for every candidate, within the request budget. The same state always gives a
    /// byte-identical plan.
    ///
    /// The session keeps the last plan it built: while nothing the planner reads has changed,
    /// this is a copy of it, not a new plan.
    pub fn build_plan(&self) -> ContextPlan {
        ContextPlan::clone(&self.plan(true))
    }

    /// Builds the plan from scratch, without looking at the kept one: for checks that the kept
    /// plan is never stale.
    pub fn build_plan_afresh(&self) -> ContextPlan {
        plan::build(&self.plan_input(), true)
    }

    /// The plan of the current state, the kept one when it is still current; without
    /// `render`, messages, the recipe and the ids may be left empty (what token totals need,
    /// at a fraction of the cost).
    pub(crate) fn plan(&self, render: bool) -> Arc<ContextPlan> {
        self.plan_cache.plan(&self.plan_input(), render)
    }

    /// The messages of the working context, in order (the plan's messages).
    pub fn build_context(&self) -> Vec<ContextMessage> {
        self.build_plan().messages
    }

    /// Rebuilds a request's messages from a stored recipe, reading every part from the stored
    /// records: the check that a logged plan can be replayed to identical request bytes.
    ///
    /// # Errors
    /// A sentence naming the first part that cannot be rebuilt (a message not loaded or not
    /// stored, a system prompt that changed since).
    pub fn replay_recipe(&self, recipe: &[RecipePart]) -> Result<Vec<ContextMessage>, String> {
        plan::replay(
            &self.system(),
            &self.efforts,
            &self.ambient,
            &self.attachments,
            recipe,
        )
    }
}
