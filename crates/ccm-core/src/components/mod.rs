//! The parts a session is made of. Each owns its fields and the rules that only concern them;
//! `Session` composes them and coordinates what spans several (a turn, a conclusion, a save).
//! None of them knows `Session`, so the planner and the persistence layout can borrow them
//! without a circle of imports.

pub(crate) mod ambient;
pub(crate) mod attachments;
pub(crate) mod compaction;
pub(crate) mod efforts;
pub(crate) mod history;
pub(crate) mod pins;
pub(crate) mod recall;
pub(crate) mod saves;
pub(crate) mod versioned;
