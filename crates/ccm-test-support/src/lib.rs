//! What the workspace's tests share, in one place instead of a copy per crate: the macro that
//! declares a test for both native and browser runs, sessions driven without an LLM, an
//! in-memory store with the browser backends' record layout, and the conversations that
//! several crates' tests are held to.
//!
//! Only ever a dev-dependency: no shipped build (the CLI, the app, the npm package) links it.
//! Everything here builds for `wasm32-unknown-unknown` too, since the portable tests run in
//! headless browsers. The helpers that need ccm-core sit behind the `core` feature, so the crates
//! below the domain (ccm-text, ccm-provider) can use the rest without depending on it.

pub mod closings;
pub mod fuzz;

#[cfg(feature = "core")]
pub mod conversation;
#[cfg(feature = "core")]
pub mod documents;
#[cfg(feature = "core")]
pub mod memory_store;
#[cfg(feature = "engine")]
pub mod offline;
#[cfg(feature = "core")]
pub mod rolling_history;
#[cfg(feature = "engine")]
pub mod scripted_host;

#[cfg(feature = "core")]
pub use conversation::{auth_bug_concluded, chatter, concluded_effort, session, turn};
#[cfg(feature = "core")]
pub use documents::{synthetic_document, WORDS};

/// Declares tests that run natively (`#[test]`) and in the browser (`#[wasm_bindgen_test]`).
///
/// The crate that invokes it needs `wasm-bindgen-test` among its wasm32 dev-dependencies: the
/// attribute is named at the call site.
#[macro_export]
macro_rules! portable_tests {
    ($( $(#[$meta:meta])* fn $name:ident() $body:block )*) => {
        $(
            $(#[$meta])*
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            #[cfg_attr(not(target_arch = "wasm32"), test)]
            fn $name() $body
        )*
    };
}
