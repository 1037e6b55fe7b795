//! Token counters: exact counts (equal to tiktoken's) in the full build, or a counter the host
//! passes in (any JavaScript tokenizer), or the core's approximate rule in the lite build.

use crate::error::{js_message, Code, Failure};
use ccm_core::tokens::TokenCounter;
use ccm_core::Config;
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

/// Throws the failure of a host counter, if one failed during the call that just ran.
pub(crate) fn check_counter() -> Result<(), Failure> {
    ccm_browser::counter::check_counter().map_err(Failure::from)
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
                // `count` cannot fail: the failure waits for the next `check_counter`.
                ccm_browser::counter::report_counter_failure(|| {
                    format!(
                        "the token counter '{}' {problem}; counts of this call are wrong, so reload the session before going on",
                        self.name
                    )
                });
                0
            }
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// The host's counter as the core takes it, or `None` when the host passed none.
///
/// # Errors
/// A counter without a usable `name` (`code: "argument"`).
pub(crate) fn host_counter(
    host: Option<JsTokenCounter>,
) -> Result<Option<Arc<dyn TokenCounter>>, Failure> {
    let Some(callback) = host else {
        return Ok(None);
    };
    let name = callback.name().as_string().filter(|n| !n.trim().is_empty());
    let Some(name) = name else {
        return Err(Failure::new(
            Code::Argument,
            "a token counter needs a non-empty `name` (stored with the session to tell counting rules apart)",
        ));
    };
    Ok(Some(Arc::new(HostCounter { name, callback })))
}

/// The counter of a session: the host's when given, else the build's default.
pub(crate) fn counter_for(
    config: &Config,
    host: Option<JsTokenCounter>,
) -> Result<Arc<dyn TokenCounter>, Failure> {
    Ok(ccm_browser::counter::counter_for(
        config,
        host_counter(host)?,
    )?)
}
