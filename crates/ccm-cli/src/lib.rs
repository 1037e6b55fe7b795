//! # ccm-cli
//!
//! The library half of the `ccm` command: the scripted proof runs ([`proof`]), which drive a
//! session through its tools without an LLM and print what the specification's tables promise.
//! They live here rather than in ccm-core because the command is their one user; the core's
//! own tests build what they need themselves. The binary (`src/main.rs`) adds the command line,
//! `ccm chat`, `ccm script` and `ccm replay`.
//!
//! ```
//! use ccm_cli::proof;
//! use ccm_core::tokens::{default_counter, Encoding};
//! use ccm_core::Config;
//!
//! let (run, _session) = proof::slice3(Config::default(), default_counter(Encoding::O200kBase));
//! assert!(run.tool_errors.is_empty());
//! let collapse = "--- Auto-collapsed effort: auth-bug (inactive for 3 turns) ---";
//! assert!(run.rows.iter().any(|row| row.banners.iter().any(|b| b == collapse)));
//! ```
#![deny(missing_docs)]

pub mod proof;
