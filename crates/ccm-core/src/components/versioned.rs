//! A component that takes a new version number whenever it is borrowed mutably, so a plan can
//! be reused exactly as long as nothing the planner reads has changed.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};

/// Version numbers are drawn from one counter for the whole process, so a number names one
/// content: a component moved or swapped into another session carries its number with it, and
/// two different contents never share one.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// A value and the version of its content. Reading goes through `Deref`; every mutable borrow
/// goes through `DerefMut`, which draws a new version before handing the value out, so no
/// change can keep the old number (a borrow that changes nothing merely costs the reuse of a
/// plan). A clone has the same content and keeps the version.
#[derive(Debug, Clone)]
pub(crate) struct Versioned<T> {
    value: T,
    version: u64,
}

impl<T> Versioned<T> {
    pub(crate) fn new(value: T) -> Versioned<T> {
        Versioned {
            value,
            version: next_version(),
        }
    }

    /// The version of the content (an associated function, so it never hides a method of
    /// the value).
    pub(crate) fn version(this: &Versioned<T>) -> u64 {
        this.version
    }
}

impl<T: Default> Default for Versioned<T> {
    fn default() -> Versioned<T> {
        Versioned::new(T::default())
    }
}

impl<T> Deref for Versioned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Versioned<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.version = next_version();
        &mut self.value
    }
}
