//! JavaScript values and timers for the app: the text of an error value, and a wait that lets
//! the page paint. (Requests to providers go through `ccm_browser::transport`, the same `fetch`
//! transport `Session.runTurn` uses, so the npm package and the app cannot drift apart in how
//! they stream, classify HTTP errors or honour Stop.)

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The message of a JavaScript error value, for people.
pub fn js_error_text(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        return text;
    }
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "unknown error".to_string())
}

/// Resolves after `ms` milliseconds (a macrotask, so the page can paint in between).
pub async fn timeout(ms: f64) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ =
                window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32);
        }
    });
    let _ = JsFuture::from(promise).await;
}
