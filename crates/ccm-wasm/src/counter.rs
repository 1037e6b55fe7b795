//! Token counters: exact counts (equal to tiktoken's) in the full build, or a counter the host
//! passes in (any JavaScript tokenizer), or the core's approximate rule in the lite build.

use crate::error::{js_message, Code, Failure};
use ccm_core::tokens::{ApproximateCounter, TokenCounter};
use ccm_core::Config;
use std::cell::RefCell;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TOKEN_COUNTER_TS: &str = r#"
/**
 * A tokenizer supplied by the host. `count` must be deterministic (the same text always gives
 * the same count) and must not throw: stored counts are trusted forever after. `name`
 * identifies the counting rule and is stored with the session, so a session counted with
 * another rule is refused rather than mixed.
 */
export interface TokenCounter {
    name: string;
    count(text: string): number;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// The `TokenCounter` interface above, as JavaScript passes it.
    #[wasm_bindgen(typescript_type = "TokenCounter")]
    pub type JsTokenCounter;

    #[wasm_bindgen(method, getter, structural)]
    fn name(this: &JsTokenCounter) -> JsValue;

    #[wasm_bindgen(method, catch, structural)]
    fn count(this: &JsTokenCounter, text: &str) -> Result<JsValue, JsValue>;
}

thread_local! {
    /// The first failure of a host counter since the last check. `TokenCounter::count` cannot
    /// return an error, so a failing callback counts 0 and leaves its message here; every
    /// binding that may count checks it before returning and throws it.
    static COUNTER_FAILURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Throws the failure of a host counter, if one failed during the call that just ran.
pub(crate) fn check_counter() -> Result<(), Failure> {
    match COUNTER_FAILURE.with(|f| f.borrow_mut().take()) {
        None => Ok(()),
        Some(message) => Err(Failure::new(Code::Counter, message)),
    }
}

struct HostCounter {
    name: String,
    callback: JsTokenCounter,
}

// SAFETY: `TokenCounter` requires `Send + Sync` for native hosts that share sessions across
// threads. This crate is built for wasm32-unknown-unknown without the `atomics` target feature,
// where there is exactly one thread, so the JavaScript object can never be reached from a
// second thread. The cfg keeps a threaded build from compiling this promise at all.
#[cfg(not(target_feature = "atomics"))]
unsafe impl Send for HostCounter {}
#[cfg(not(target_feature = "atomics"))]
unsafe impl Sync for HostCounter {}

impl TokenCounter for HostCounter {
    fn count(&self, text: &str) -> u32 {
        let outcome = self.callback.count(text);
        let valid = outcome
            .as_ref()
            .ok()
            .and_then(JsValue::as_f64)
            .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= f64::from(u32::MAX));
        match (valid, outcome) {
            (Some(n), _) => n as u32,
            (None, outcome) => {
                let problem = match outcome {
                    Err(thrown) => format!("threw: {}", js_message(&thrown)),
                    Ok(value) => format!(
                        "returned {} instead of a whole number of tokens",
                        js_message(&value)
                    ),
                };
                COUNTER_FAILURE.with(|f| {
                    f.borrow_mut().get_or_insert_with(|| {
                        format!(
                            "the token counter '{}' {problem}; counts of this call are wrong, so reload the session before going on",
                            self.name
                        )
                    });
                });
                0
            }
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// The counter of a session: the host's when given, else the build's default.
pub(crate) fn counter_for(
    config: &Config,
    host: Option<JsTokenCounter>,
) -> Result<Arc<dyn TokenCounter>, Failure> {
    if let Some(callback) = host {
        let name = callback.name().as_string().filter(|n| !n.trim().is_empty());
        let Some(name) = name else {
            return Err(Failure::new(
                Code::Argument,
                "a token counter needs a non-empty `name` (stored with the session to tell counting rules apart)",
            ));
        };
        return Ok(Arc::new(HostCounter { name, callback }));
    }
    default_counter(config)
}

/// The exact counter for the session's encoding, loading its table through the registered
/// loader when needed; a clear error (how to load it) when the table is not available.
#[cfg(feature = "exact")]
fn default_counter(config: &Config) -> Result<Arc<dyn TokenCounter>, Failure> {
    ccm_tokens_wasm::ensure_tokenizer(config.encoding.tokenizer_encoding())
        .map_err(|message| Failure::new(Code::Counter, message))?;
    let counter = ccm_core::ExactCounter::try_new(config.encoding)
        .map_err(|e| Failure::new(Code::Counter, e.to_string()))?;
    Ok(Arc::new(counter))
}

/// Without the `exact` feature the approximate rule is the only built-in counter; its name
/// (`approximate`) is stored with the session, so its counts are never mistaken for exact ones.
#[cfg(not(feature = "exact"))]
fn default_counter(_config: &Config) -> Result<Arc<dyn TokenCounter>, Failure> {
    Ok(Arc::new(ApproximateCounter))
}

/// The counter for a stored session's counting rule, when this build has it built in.
pub(crate) fn counter_named(
    name: &str,
    config: &Config,
    host: Option<JsTokenCounter>,
) -> Result<Arc<dyn TokenCounter>, Failure> {
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
    Err(Failure::new(
        Code::Counter,
        format!(
            "this session was counted with '{name}', which this build does not have built in; pass a token counter named '{name}'"
        ),
    ))
}
