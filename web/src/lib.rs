//! # ccm-web
//!
//! The CCM browser app: chat with the offline demo model or any LLM provider while watching
//! the context manage itself (the effort tiers, the context plan and the token curves).
//!
//! A client-side rendered Leptos app, built by Trunk from the repository's `index.html`. Every
//! rule lives in `ccm-core`; sessions are kept in IndexedDB by `ccm-browser`'s store. The pure
//! parts (chart geometry, Markdown, the snapshots the views render, provider settings, file
//! import) are plain modules tested natively; the components are tested in headless Chromium
//! (`tests/components.rs`) and the whole app end to end with Playwright (`tests/e2e/`).
#![deny(missing_docs)]

pub mod alternatives;
pub mod chart;
pub mod chat_controls;
pub mod components;
pub mod import;
pub mod js;
pub mod local_servers;
pub mod markdown;
pub mod model_fetch;
pub mod models;
pub mod provider;
pub mod state;
pub mod sync;
pub mod tabs;
pub mod tokenizer;
pub mod turn;
pub mod view_model;
pub mod words;

/// Mounts the app into the page's `<body>`.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(components::app::App);
}
