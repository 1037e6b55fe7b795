//! Cancelling a turn from another thread (a UI button, a signal handler, a test).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A flag that cancels the turn in progress, shared between the thread that runs the turn and
/// whoever may cancel it. Clones share the same flag.
///
/// The transport checks it between received chunks (and at least every
/// [`crate::POLL_INTERVAL`] while waiting for one), and a retry delay wakes up as soon as it is
/// set, so a cancelled turn ends promptly.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels: every holder sees it, and every wait on it ends.
    pub fn cancel(&self) {
        let (flag, wake) = &*self.inner;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
    }

    /// Whether [`cancel`](Self::cancel) was called (since the last [`reset`](Self::reset)).
    pub fn is_cancelled(&self) -> bool {
        *self.inner.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Clears the flag so the token can serve the next turn.
    pub fn reset(&self) {
        *self.inner.0.lock().unwrap_or_else(PoisonError::into_inner) = false;
    }

    /// Waits for `duration`, or less if the token is cancelled meanwhile. Returns whether it
    /// was cancelled.
    pub fn wait(&self, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let (flag, wake) = &*self.inner;
        let mut cancelled = flag.lock().unwrap_or_else(PoisonError::into_inner);
        while !*cancelled {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            cancelled = wake
                .wait_timeout(cancelled, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *cancelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_when_cancelled_from_another_thread() {
        let token = CancelToken::new();
        let canceller = token.clone();
        let started = Instant::now();
        let thread = std::thread::spawn(move || canceller.cancel());
        assert!(token.wait(Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(10));
        thread.join().unwrap();
        assert!(token.is_cancelled());
        token.reset();
        assert!(!token.is_cancelled());
        assert!(!token.wait(Duration::from_millis(1)));
    }
}
