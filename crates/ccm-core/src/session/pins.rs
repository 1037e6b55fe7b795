//! Pinning on the session: a pin's target and task checked against the efforts and the ambient
//! log, and the banner each change records. The pins and every rule about them are
//! `crate::pins`.

use super::Session;
use crate::model::EffortStatus;
use crate::pins::{LeaseScope, Pin, PinError, PinKind, PinOrigin, PinRequest, Pins};

impl Session {
    /// Checks that a target names something this session can put in context.
    fn check_pin_target(&self, target: &str) -> Result<(), PinError> {
        let invalid = |reason: String| PinError::InvalidTarget {
            target: target.to_string(),
            reason,
        };
        let (kind, rest) = target.split_once(':').ok_or_else(|| {
            invalid(
                "targets look like summary:<effort>, effort:<effort> or ambient:<turn>".to_string(),
            )
        })?;
        match kind {
            "summary" | "effort" => {
                let effort = self
                    .efforts.get(rest)
                    .ok_or_else(|| invalid(format!("no effort with id '{rest}'")))?;
                if kind == "summary" && effort.status != EffortStatus::Concluded {
                    return Err(invalid(format!(
                        "'{rest}' is open, so it has no summary yet; pin effort:{rest} to keep its log"
                    )));
                }
                Ok(())
            }
            "ambient" => {
                let turn: u64 = rest
                    .parse()
                    .map_err(|_| invalid(format!("'{rest}' is not a turn number")))?;
                if self.ambient.messages().iter().any(|m| m.turn == turn) {
                    Ok(())
                } else {
                    Err(invalid(format!("turn {turn} has no loaded ambient exchange")))
                }
            }
            other => Err(invalid(format!(
                "unknown kind '{other}'; targets look like summary:<effort>, effort:<effort> or ambient:<turn>"
            ))),
        }
    }

    /// Pins a target on behalf of `origin`. Pinning a target that is already pinned updates
    /// that pin (a sticky pin is never weakened). Records the banner `--- Pinned: <target>
    /// (<kind>) ---`, which the `pin_context` tool gives the model.
    ///
    /// # Errors
    /// [`PinError::InvalidTarget`] for an unknown target; [`PinError::NotAllowed`] when the
    /// model asks for anything but a lease, or for a lease longer than
    /// [`crate::pins::MAX_LEASE_TURNS`].
    pub fn pin(&mut self, request: PinRequest, origin: PinOrigin) -> Result<Pin, PinError> {
        let target = request.target.trim().to_string();
        self.check_pin_target(&target)?;
        Pins::check_kind(request.kind, origin)?;
        let lease = match request.kind {
            PinKind::Leased => Some(match &request.task {
                // A task lease lasts while its effort stays open, so the effort must be open now.
                Some(task) => {
                    let refused = |reason: String| PinError::InvalidTarget {
                        target: target.clone(),
                        reason,
                    };
                    let effort = self.efforts.get(task).ok_or_else(|| {
                        refused(format!("the task effort '{task}' does not exist"))
                    })?;
                    if effort.status != EffortStatus::Open {
                        return Err(refused(format!("the task effort '{task}' is not open")));
                    }
                    LeaseScope::Task {
                        effort: effort.id.clone(),
                    }
                }
                None => Pins::lease_of_turns(request.ttl_turns, origin)?,
            }),
            _ => None,
        };
        let pin = self
            .pins
            .put(target, request.kind, origin, lease, self.turn);
        // The banner names the kind asked for, as it always has; a sticky pin the request could
        // not weaken stays sticky all the same (see `Pins::put`).
        let kind = match request.kind {
            PinKind::Sticky => "sticky",
            PinKind::Leased => "lease",
            PinKind::Ephemeral => "ephemeral",
        };
        self.last_banner = Some(format!("--- Pinned: {} ({kind}) ---", pin.target));
        Ok(pin)
    }

    /// Removes the pin on a target (or with the id `pin:<n>`) on behalf of `origin`, and
    /// records the banner `--- Unpinned: <target> ---`, which the `unpin_context` tool gives
    /// the model.
    ///
    /// # Errors
    /// [`PinError::NotPinned`] when nothing matches; [`PinError::NotAllowed`] when the model
    /// tries to remove a pin that is not a lease.
    pub fn unpin(&mut self, target_or_id: &str, origin: PinOrigin) -> Result<Pin, PinError> {
        let pin = self.pins.remove(target_or_id, origin)?;
        self.last_banner = Some(format!("--- Unpinned: {} ---", pin.target));
        Ok(pin)
    }
}
