//! Pinning on the session: pin, unpin and the list of pins, checked against the efforts and
//! the ambient log (the pin types and their rules are `crate::pins`).

use super::Session;
use crate::model::EffortStatus;
use crate::pins::{
    LeaseScope, Pin, PinError, PinKind, PinOrigin, PinRequest, DEFAULT_LEASE_TURNS, MAX_LEASE_TURNS,
};

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
                if self.ambient.messages.iter().any(|m| m.turn == turn) {
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
    /// that pin (a sticky pin is never weakened).
    ///
    /// # Errors
    /// [`PinError::InvalidTarget`] for an unknown target; [`PinError::NotAllowed`] when the
    /// model asks for anything but a lease, or for a lease longer than [`MAX_LEASE_TURNS`].
    pub fn pin(&mut self, request: PinRequest, origin: PinOrigin) -> Result<Pin, PinError> {
        let target = request.target.trim().to_string();
        self.check_pin_target(&target)?;
        if origin != PinOrigin::User && request.kind == PinKind::Sticky {
            return Err(PinError::NotAllowed(
                "only the user can make a sticky pin; ask for a lease (ttl_turns) instead"
                    .to_string(),
            ));
        }
        if origin == PinOrigin::Model && request.kind != PinKind::Leased {
            return Err(PinError::NotAllowed(
                "the model can only make leased pins".to_string(),
            ));
        }
        let lease = match request.kind {
            PinKind::Leased => Some(match (&request.task, request.ttl_turns) {
                (Some(task), _) => {
                    let effort = self.efforts.get(task).ok_or_else(|| PinError::InvalidTarget {
                        target: target.clone(),
                        reason: format!("the task effort '{task}' does not exist"),
                    })?;
                    if effort.status != EffortStatus::Open {
                        return Err(PinError::InvalidTarget {
                            target: target.clone(),
                            reason: format!("the task effort '{task}' is not open"),
                        });
                    }
                    LeaseScope::Task {
                        effort: effort.id.clone(),
                    }
                }
                (None, Some(0)) => {
                    return Err(PinError::NotAllowed(
                        "a lease must last at least one turn".to_string(),
                    ))
                }
                (None, Some(turns)) if origin == PinOrigin::Model && turns > MAX_LEASE_TURNS => {
                    return Err(PinError::NotAllowed(format!(
                        "a lease from the model lasts at most {MAX_LEASE_TURNS} turns; longer holds are the user's call"
                    )))
                }
                (None, turns) => LeaseScope::Turns {
                    remaining: turns.unwrap_or(DEFAULT_LEASE_TURNS),
                },
            }),
            _ => None,
        };
        let turn = self.turn;
        if let Some(existing) = self.pins.list.iter_mut().find(|p| p.target == target) {
            if existing.kind == PinKind::Sticky && request.kind != PinKind::Sticky {
                return Ok(existing.clone());
            }
            existing.kind = request.kind;
            existing.lease = lease;
            existing.origin = origin;
            return Ok(existing.clone());
        }
        let pin = Pin {
            id: self.pins.next_id,
            target,
            kind: request.kind,
            origin,
            lease,
            created_turn: turn,
            references: 0,
        };
        self.pins.next_id += 1;
        self.pins.list.push(pin.clone());
        Ok(pin)
    }

    /// Removes the pin on a target (or with the id `pin:<n>`) on behalf of `origin`.
    ///
    /// # Errors
    /// [`PinError::NotPinned`] when nothing matches; [`PinError::NotAllowed`] when the model
    /// tries to remove a pin that is not a lease.
    pub fn unpin(&mut self, target_or_id: &str, origin: PinOrigin) -> Result<Pin, PinError> {
        let key = target_or_id.trim();
        let position = self
            .pins
            .list
            .iter()
            .position(|p| p.target == key || format!("pin:{}", p.id) == key)
            .ok_or_else(|| PinError::NotPinned(key.to_string()))?;
        if origin == PinOrigin::Model && self.pins.list[position].kind != PinKind::Leased {
            return Err(PinError::NotAllowed(format!(
                "'{key}' is pinned by the user; only the user can unpin it"
            )));
        }
        Ok(self.pins.list.remove(position))
    }
}
