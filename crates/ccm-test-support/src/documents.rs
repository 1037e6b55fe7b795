//! Large, distinct texts for attachments and recall: the same documents as the CLI's
//! compaction proof run, which writes them with ccm-replay's `synthetic` module.

pub use ccm_replay::synthetic::{document as synthetic_document, WORDS};
