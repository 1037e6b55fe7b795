//! The door's vocabulary: the types of ccm-engine and ccm-provider that a browser host passes
//! to this crate's functions or gets back from them, re-exported so that the app and ccm-wasm
//! name them through their one door and depend on neither crate themselves.
//!
//! Only words are re-exported here, never behaviour: beginning and running a turn, sending a
//! request, writing a summary or a model-list request, headers and request shapes are this
//! crate's functions ([`crate::driver`], [`crate::summary`], [`crate::transport`]) over
//! ccm-engine and ccm-provider. This file is the only place in the crate that re-exports
//! either crate (crates/ccm-browser/tests/door.rs checks it, and that the hosts reach past the
//! door nowhere).

/// What a host says about a turn and hears from it: the settings a turn begins with, the events
/// it shows while the turn runs, and how the turn ended.
pub mod turn {
    pub use ccm_engine::offline::OFFLINE_MODEL_NAME;
    pub use ccm_engine::{
        EngineError, EngineSettings, LlmRequest, PromptEstimate, RequestPurpose, RetryWait,
        RunError, TurnEvent, TurnFailure, TurnResult,
    };
    pub use ccm_provider::{RequestOptions, RetryPolicy, StreamDelta};
}

/// Which provider a host talks to: the names people choose from, the configuration made from a
/// choice, the provider's typed error, and the table of well-known models.
pub mod provider {
    pub use ccm_provider::models::{known_model, ModelInfo};
    pub use ccm_provider::{
        EmbeddingsEndpoint, Preset, ProviderChoice, ProviderChoiceError, ProviderConfig,
        ProviderError, ProviderKind, ProviderName,
    };
}
