//! The app's components.
//!
//! Presentational components (`RichText`, `ChatLog`, `TierView`, `Inspector`, `TokenCurves`,
//! `Welcome`, `Modal`, `ThemeSwitch`) take data as props and report intents through callbacks,
//! so they can be mounted alone in a test. Container components (`App`, `ChatPanel`,
//! `SessionsPanel`, `SettingsPanel`, `ConcludeDialog`, `LogViewer`, `ShortcutsDialog`) read
//! the `AppState` context and wire the two together.

pub mod app;
pub mod chat;
pub mod conflict;
pub mod curves;
pub mod dialogs;
pub mod inspector;
pub mod local_offer;
pub mod media;
pub mod modal;
pub mod rich_text;
pub mod sessions;
pub mod settings;
pub mod shortcuts;
pub mod theme;
pub mod tiers;
pub mod welcome;
