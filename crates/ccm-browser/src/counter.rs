//! Which token counter a session counts with: the host's when given, else the build's
//! default (exact counts with the `exact` feature, the core's approximate rule without), and
//! for a stored session the counting rule it was stored with.
//!
//! A host's counter may fail (a JavaScript callback that throws), but `TokenCounter::count`
//! cannot return an error. Such a counter counts 0, reports its failure here
//! ([`report_counter_failure`]), and every operation that may count checks for it
//! ([`check_counter`]) before it keeps or stores anything.

use crate::error::BrowserError;
use ccm_core::tokens::{ApproximateCounter, TokenCounter};
use ccm_core::Config;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The first failure of a host counter since the last check.
    static COUNTER_FAILURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records that a host counter failed (the first failure since the last check is kept); the
/// next [`check_counter`] returns it.
pub fn report_counter_failure(message: impl FnOnce() -> String) {
    COUNTER_FAILURE.with(|f| {
        f.borrow_mut().get_or_insert_with(message);
    });
}

/// The failure of a host counter, if one failed since the last check.
///
/// # Errors
/// [`BrowserError::Counter`] with the counter's failure.
pub fn check_counter() -> Result<(), BrowserError> {
    match COUNTER_FAILURE.with(|f| f.borrow_mut().take()) {
        None => Ok(()),
        Some(message) => Err(BrowserError::Counter(message)),
    }
}

/// The counter of a session: the host's when given, else the build's default.
///
/// # Errors
/// The exact counter's table cannot be loaded.
pub fn counter_for(
    config: &Config,
    host: Option<Arc<dyn TokenCounter>>,
) -> Result<Arc<dyn TokenCounter>, BrowserError> {
    match host {
        Some(counter) => Ok(counter),
        None => default_counter(config),
    }
}

/// The exact counter for the session's encoding, loading its table through the registered
/// loader when needed; a clear error (how to load it) when the table is not available.
#[cfg(feature = "exact")]
fn default_counter(config: &Config) -> Result<Arc<dyn TokenCounter>, BrowserError> {
    ccm_tokens_wasm::ensure_counting_table(config.encoding.tokenizer_encoding())
        .map_err(BrowserError::Counter)?;
    let counter = ccm_core::ExactCounter::try_new(config.encoding)
        .map_err(|e| BrowserError::Counter(e.to_string()))?;
    Ok(Arc::new(counter))
}

/// Without the `exact` feature the approximate rule is the only built-in counter; its name
/// (`approximate`) is stored with the session, so its counts are never mistaken for exact ones.
#[cfg(not(feature = "exact"))]
fn default_counter(_config: &Config) -> Result<Arc<dyn TokenCounter>, BrowserError> {
    Ok(Arc::new(ApproximateCounter))
}

/// The counter for a stored session's counting rule `name`: the host's when given, else the
/// built-in one of that name.
///
/// # Errors
/// This build has no counter of that name built in (the host must pass one).
pub fn counter_named(
    name: &str,
    config: &Config,
    host: Option<Arc<dyn TokenCounter>>,
) -> Result<Arc<dyn TokenCounter>, BrowserError> {
    if host.is_some() {
        return counter_for(config, host);
    }
    if name == ApproximateCounter.name() {
        return Ok(Arc::new(ApproximateCounter));
    }
    let counter = default_counter(config)?;
    if counter.name() == name {
        return Ok(counter);
    }
    Err(BrowserError::Counter(format!(
        "this session was counted with '{name}', which this build does not have built in; pass a token counter named '{name}'"
    )))
}
