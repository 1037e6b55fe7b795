//! Pins and activation: what people and the model asked to keep in context, and how active
//! each candidate has been lately.

use crate::pins::Pin;
use std::collections::BTreeMap;

/// The pins of a session and the activation scores of its candidates. Small (a handful of
/// pins, the recently included items), so an undo record copies it whole. Read it through
/// [`crate::Session::pins`].
#[derive(Debug, Clone, PartialEq)]
pub struct Pins {
    /// Pins in creation order.
    pub(crate) list: Vec<Pin>,
    /// The number of the next pin.
    pub(crate) next_id: u64,
    /// Leases that ran out at the end of the last turn (reported once, as `ttl_expired`).
    pub(crate) expired: Vec<Pin>,
    /// Activation score per candidate id, in thousandths.
    pub(crate) activation: BTreeMap<String, u32>,
}

impl Default for Pins {
    fn default() -> Self {
        Pins {
            list: Vec::new(),
            next_id: 1,
            expired: Vec::new(),
            activation: BTreeMap::new(),
        }
    }
}

impl Pins {
    /// The pins in creation order.
    pub fn all(&self) -> &[Pin] {
        &self.list
    }

    /// The pin on a target, if any.
    pub fn on(&self, target: &str) -> Option<&Pin> {
        self.list.iter().find(|p| p.target == target)
    }

    /// The activation of a candidate (0 when it has none).
    pub(crate) fn activation_of(&self, id: &str) -> u32 {
        self.activation.get(id).copied().unwrap_or(0)
    }
}
