//! # ccm-wasm
//!
//! Cognitive Context Management for JavaScript and TypeScript: the [`Session`] class, browser
//! storage of sessions ([`SessionStore`]: IndexedDB, with localStorage as the fallback), and a
//! `fetch`-based turn engine (`Session.runTurn`). Built into the npm package `ccm` with
//! wasm-pack; this crate only delegates to `ccm-core`, which owns every rule.
//!
//! One file per exported class: `session.rs` (`Session`), `store.rs` (`SessionStore`).
//! Errors become JavaScript `Error`s in one place (`error.rs`), with the core's message and a
//! `code` property.
//!
//! ```ts
//! import { Session, countTokens } from "ccm";
//!
//! const session = new Session({ decayThreshold: 3 });
//! session.beginTurn("Let's work on the auth bug: 401 after an hour.");
//! session.openEffort("auth bug");
//! session.endTurn("The refresh token probably expires early.");
//! const plan = session.buildContext();   // messages, totals, included/excluded with reasons
//! countTokens("hello world", "o200k_base"); // 2
//! ```
#![deny(missing_docs)]

mod counter;
mod engine;
mod error;
mod options;
mod planning;
mod session;
mod storage;
mod store;
pub mod transport;
mod types;

pub use counter::JsTokenCounter;
pub use engine::{JsTurnResult, TurnOptions};
pub use options::SessionOptions;
pub use session::{CloseEffortArgs, JsDocumentInput, Session};
pub use store::{
    CcmFileTexts, CcmImportReport, SaveReport, SessionInfo, SessionStore, StoreOptions,
};
pub use types::*;

use wasm_bindgen::prelude::*;

/// Exact tokens of `text` in `encoding` (`"o200k_base"` or `"cl100k_base"`), special-token
/// markers counted as ordinary text. Only in the full build (`ccm`); `ccm/lite` has no rank
/// tables.
///
/// The first call per encoding parses its rank tables (a few hundred milliseconds).
#[cfg(feature = "tiktoken")]
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(text: &str, encoding: &str) -> Result<u32, JsValue> {
    use ccm_core::tokens::TokenCounter;
    let encoding = ccm_core::Encoding::from_name(encoding)
        .map_err(|e| error::fail(error::Failure::from(e)))?;
    Ok(ccm_core::TiktokenCounter::new(encoding).count(text))
}

/// The effort tools as OpenAI-style function definitions (the same as
/// `Session.toolDefinitions()`).
#[wasm_bindgen(js_name = toolDefinitions)]
pub fn tool_definitions() -> Result<JsToolDefinitions, JsValue> {
    types::to_js(&ccm_core::tool_definitions()).map_err(error::fail)
}

/// Whether this build has tiktoken's rank tables (`ccm`) or not (`ccm/lite`).
#[wasm_bindgen(js_name = hasExactTokenCounts)]
pub fn has_exact_token_counts() -> bool {
    cfg!(feature = "tiktoken")
}

/// Test and benchmark helpers; not part of the JavaScript API.
#[doc(hidden)]
pub mod testing {
    pub use crate::storage::idb::DB_VERSION;
    pub use crate::storage::local::LAYOUT_VERSION;
}
