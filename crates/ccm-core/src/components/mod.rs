//! The parts a session is made of. Each owns its fields and the rules that only concern them;
//! `Session` composes them and coordinates what spans several (a turn, a conclusion, a save).
//! None of them knows `Session`, so the planner and the persistence layout can borrow them
//! without a circle of imports. Hosts read them through the session's accessors
//! (`session.efforts()`, `session.pins()`, ...); every change goes through the session.
//! `Pins` is listed here with the others but lives in `crate::pins`, beside the pin types and
//! every rule about pins.

pub mod ambient;
pub mod attachments;
pub mod compaction;
pub mod efforts;
pub mod history;
pub mod recall;
pub mod saves;
pub(crate) mod versioned;

pub use crate::pins::Pins;
pub use ambient::Ambient;
pub use attachments::Attachments;
pub use compaction::Compaction;
pub use efforts::{Efforts, Expansion};
pub use history::History;
pub use recall::{IndexRequest, Recall, INDEX_CHUNK};
