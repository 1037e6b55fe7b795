//! Helpers shared by the integration tests, which run natively and, through
//! `wasm-bindgen-test`, in headless Chromium.

/// Declares tests that run natively (`#[test]`) and in the browser (`#[wasm_bindgen_test]`).
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
