//! # ccm-replay
//!
//! Plays public real conversations through CCM, the way a host without an LLM drives a session,
//! and measures what working memory holds: savings against the naive context, resident
//! summaries, the ambient window, the cost of a turn as the conversation grows, and whether
//! evicted efforts can be found again by their own words. `ccm replay` (the CLI) prints and
//! draws it; `ccm-bench` uses it for its real-text cases.
//!
//! - [`dataset`] reads the ShareGPT layout and refuses damaged records precisely.
//! - [`play`] drives a session through one conversation and checks what it stored.
//! - [`report`] adds up the results, writes the table and draws the growth curve.
//! - [`synthetic`] writes deterministic documents for runs without a data set.
#![deny(missing_docs)]

pub mod dataset;
pub mod play;
pub mod report;
pub mod synthetic;
