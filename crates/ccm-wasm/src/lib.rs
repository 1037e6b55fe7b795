//! # ccm-wasm
//!
//! Cognitive Context Management for JavaScript and TypeScript: the [`Session`] class, browser
//! storage of sessions ([`SessionStore`]: IndexedDB, with localStorage as the fallback), and a
//! `fetch`-based turn engine (`Session.runTurn`). Built into the npm package
//! `cognitive-context` with wasm-pack. This crate is the JavaScript face only: it checks the
//! arguments JavaScript passes (`args.rs`) and delegates to `ccm-browser` (storage, the
//! session cell, the `fetch` transport) and `ccm-core`, which own every rule.
//!
//! One file per exported class: `session.rs` (`Session`), `session_store.rs` (`SessionStore`).
//! Errors become JavaScript `Error`s in one place (`error.rs`), with the core's message and a
//! `code` property.
//!
//! ```ts
//! import { Session, countTokens } from "cognitive-context";
//!
//! const session = new Session({ decayThreshold: 3 });
//! session.beginTurn("Let's work on the auth bug: 401 after an hour.");
//! session.openEffort("auth bug");
//! session.endTurn("The refresh token probably expires early.");
//! const plan = session.buildContext();   // messages, totals, included/excluded with reasons
//! countTokens("hello world", "o200k_base"); // 2
//! ```
#![deny(missing_docs)]

mod adapters;
mod args;
mod counter;
mod engine;
mod error;
mod memory;
mod options;
mod planning;
mod session;
mod session_store;
mod types;

pub use adapters::tool_definitions;
pub use counter::JsTokenCounter;
pub use engine::{JsTurnResult, TurnOptions};
pub use memory::{memory_usage, set_default_memory_budget, JsMemoryFootprint, JsMemoryUsage};
pub use options::SessionOptions;
pub use session::{CloseEffortArgs, JsDocumentInput, Session};
pub use session_store::{
    CcmFileTexts, CcmImportReport, SaveReport, SessionInfo, SessionStore, StoreOptions,
};
pub use types::*;

use wasm_bindgen::prelude::*;

// `countTokens`, `loadEncodingFrom`, `installEncoding`, `encodingLoaded` and `setTableLoader`
// come from ccm-tokens-wasm, linked in so that the engine and direct counts share one set of
// installed tables.
pub use ccm_tokens_wasm::{count_tokens, encoding_loaded, install_encoding};

/// Whether sessions count exactly by default (`cognitive-context`, tables loaded on first use)
/// or with the approximate rule unless given a counter (`cognitive-context/lite`).
#[wasm_bindgen(js_name = hasExactTokenCounts)]
pub fn has_exact_token_counts() -> bool {
    cfg!(feature = "exact")
}

/// Test and benchmark helpers; not part of the JavaScript API. The storage tests reach every
/// method the way a host does, through the JavaScript face; these two hooks are for what no
/// method shows, the core's records behind a session (sequence numbers, write batches,
/// plans) and a session built turn by turn with a counter of the test's own.
#[doc(hidden)]
pub mod testing {
    use crate::Session;
    use ccm_core::Session as CoreSession;

    pub use ccm_browser::testing::{DB_VERSION, LAYOUT_VERSION};

    /// A package `Session` over `core`.
    pub fn session_of(core: CoreSession) -> Session {
        Session::from_core_session(core)
    }

    /// Runs `f` on the core session behind `session`.
    ///
    /// # Panics
    /// When called from inside another call on the same session (a token counter callback).
    pub fn with_core<R>(session: &Session, f: impl FnOnce(&mut CoreSession) -> R) -> R {
        session.with_core(f)
    }
}
