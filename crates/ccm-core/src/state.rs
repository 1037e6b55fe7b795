//! The session-wide state that the exported document and the stored header share: everything
//! that decides the context except the bulk records (efforts with their logs, ambient messages,
//! metrics, attachments), which each layout keeps in its own way.
//!
//! The document (`SessionDocument`, in `snapshot`) and the header (`SessionHeader`, in `persistence`)
//! keep their field order, so their bytes stay what they were;
//! both are assembled from and taken apart into one [`SessionState`], so the session reads and
//! writes its state in one place ([`crate::Session::state`] and the restore it shares between
//! an import and a store's load), and both layouts convert with the two macros below. A new
//! scalar is a field here, in both layouts, in the macros' two lists and in those two places;
//! a test checks that both layouts carry every field.

use crate::compaction::{MoveReason, PolicyState, RollingSummary};
use crate::config::Config;
use crate::metrics::DecayStats;
use crate::pins::Pin;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The name of the line every session starts on.
pub const MAIN_BRANCH: &str = "main";

/// Which branch a session is, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchInfo {
    /// The branch's name.
    pub name: String,
    /// The branch it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The parent's turn it was forked at (the last turn the two share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_turn: Option<u64>,
}

impl BranchInfo {
    /// The main line.
    pub fn main() -> BranchInfo {
        BranchInfo {
            name: MAIN_BRANCH.to_string(),
            parent: None,
            fork_turn: None,
        }
    }

    /// Whether this is the main line (nothing to record in a document).
    pub fn is_main(&self) -> bool {
        *self == BranchInfo::main()
    }
}

/// The session-wide state, with efforts named by id (the layouts' way) rather than by index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Name of the counting rule every stored count was made with (e.g. `o200k_base`).
    pub counted_with: String,
    /// The configuration.
    pub config: Config,
    /// Turns completed (or begun, when exported mid-turn).
    pub turn: u64,
    /// Next message sequence number (also the number of stored messages).
    pub next_seq: u64,
    /// Next conclusion sequence number.
    pub next_concluded_seq: u64,
    /// The active effort's id.
    pub active: Option<String>,
    /// Open efforts' ids in opening order.
    pub open: Vec<String>,
    /// Decay statistics.
    pub decay: DecayStats,
    /// Turn of the last auto-collapse of each effort not expanded again since.
    pub auto_collapsed_at: BTreeMap<String, u64>,
    /// Pins in creation order.
    pub pins: Vec<Pin>,
    /// Next pin number.
    pub next_pin_id: u64,
    /// Activation scores by candidate id (thousandths).
    pub activation: BTreeMap<String, u32>,
    /// Next attachment number.
    pub next_attachment: u64,
    /// The rolling summary of the last level-3 compaction.
    pub rolling: Option<RollingSummary>,
    /// Working-set items compaction moved out, with why.
    pub compacted: BTreeMap<String, MoveReason>,
    /// The compaction policy's state (last compaction, hysteresis mark, last decision).
    pub compaction_state: PolicyState,
    /// The session's branch: its name and, for a fork, its parent and fork turn.
    pub branch: BranchInfo,
}

/// The [`SessionState`] held by `layout`'s same-named fields (a document or a header, taken by
/// value: its other fields stay for the caller to move out).
macro_rules! state_of_layout {
    ($layout:ident) => {
        $crate::state::SessionState {
            counted_with: $layout.counted_with,
            config: $layout.config,
            turn: $layout.turn,
            next_seq: $layout.next_seq,
            next_concluded_seq: $layout.next_concluded_seq,
            active: $layout.active,
            open: $layout.open,
            decay: $layout.decay,
            auto_collapsed_at: $layout.auto_collapsed_at,
            pins: $layout.pins,
            next_pin_id: $layout.next_pin_id,
            activation: $layout.activation,
            next_attachment: $layout.next_attachment,
            rolling: $layout.rolling,
            compacted: $layout.compacted,
            compaction_state: $layout.compaction_state,
            branch: $layout.branch,
        }
    };
}
pub(crate) use state_of_layout;

/// The layout `Layout { its own fields }` whose state fields are taken from `state`.
macro_rules! layout_with_state {
    ($layout:ident { $($field:ident $(: $value:expr)?),* $(,)? }, $state:ident) => {
        $layout {
            $($field $(: $value)?,)*
            counted_with: $state.counted_with,
            config: $state.config,
            turn: $state.turn,
            next_seq: $state.next_seq,
            next_concluded_seq: $state.next_concluded_seq,
            active: $state.active,
            open: $state.open,
            decay: $state.decay,
            auto_collapsed_at: $state.auto_collapsed_at,
            pins: $state.pins,
            next_pin_id: $state.next_pin_id,
            activation: $state.activation,
            next_attachment: $state.next_attachment,
            rolling: $state.rolling,
            compacted: $state.compacted,
            compaction_state: $state.compaction_state,
            branch: $state.branch,
        }
    };
}
pub(crate) use layout_with_state;
