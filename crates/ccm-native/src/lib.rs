//! # ccm-native
//!
//! The native transports of CCM. ccm-engine's [`TurnEngine`](ccm_engine::TurnEngine) is
//! sans-IO: it says which request to send, and what to do with the answer. This crate sends
//! them:
//!
//! * [`HttpTransport`] talks to any provider ccm-provider speaks (OpenAI-compatible or
//!   Anthropic) over blocking HTTP, streaming answers chunk by chunk into its
//!   [`ProviderStream`](ccm_provider::ProviderStream), with connect, first-byte and idle
//!   [`Timeouts`], refused connections reported as such, and prompt cancellation.
//! * [`OfflineResponder`] answers with the engine's offline demo model: no network, no key.
//! * [`run_blocking_turn`] is the loop between the two: it drives the engine with a [`Responder`],
//!   waits out the retry delays the engine decides on (honouring `Retry-After`), and cancels
//!   the turn when the [`CancelToken`] is set, which leaves the session exactly as before. It
//!   reports progress as [`TurnEvent`](ccm_engine::TurnEvent)s.
//! * [`metrics_to_json`] and [`metrics_to_csv`] write the per-turn metrics of a run.
//!
//! The tests of this crate run against the real local mock server of `ccm-mock-llm`.
//!
//! ```
//! use ccm_engine::EngineSettings;
//! use ccm_engine::offline::OFFLINE_MODEL_NAME;
//! use ccm_core::{Config, Session};
//! use ccm_native::{run_blocking_turn, CancelToken, OfflineResponder};
//!
//! let mut session = Session::new(Config::default()).unwrap();
//! let result = run_blocking_turn(
//!     &mut session,
//!     "Help me with the CSV import: dates come out as numbers.",
//!     EngineSettings::new(OFFLINE_MODEL_NAME),
//!     &mut OfflineResponder::new(),
//!     &CancelToken::new(),
//!     &mut |_event| {},
//! )
//! .unwrap();
//! assert!(result.reply.starts_with("--- Started effort: csv-import ---"));
//! ```
#![deny(missing_docs)]

mod cancel;
mod embeddings;
mod http;
mod report;
mod runner;

pub use cancel::CancelToken;
pub use embeddings::{refresh_embeddings, refresh_recall_embeddings, RECALL_EMBEDDING_BATCH};
pub use http::{HttpTransport, Timeouts, POLL_INTERVAL};
pub use report::{metrics_to_csv, metrics_to_json, CSV_HEADER};
pub use runner::{
    now_ms, run_blocking_turn, run_stored_turn, OfflineResponder, RecordLoader, Responder,
};
