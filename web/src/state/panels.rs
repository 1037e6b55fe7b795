//! Which panel shows beside the chat (or instead of it at phone width), and whether the
//! inspector's budget breakdown is open.

use leptos::prelude::*;

/// The panel shown beside the chat (or instead of it at phone width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// Only the chat (phone width).
    Chat,
    /// The effort tiers.
    Memory,
    /// The context inspector.
    Context,
    /// The token curves.
    Tokens,
    /// Sessions and branches.
    Sessions,
    /// Provider and session settings.
    Settings,
}

impl Panel {
    /// The panels in tab order.
    pub const TABS: [Panel; 6] = [
        Panel::Chat,
        Panel::Memory,
        Panel::Context,
        Panel::Tokens,
        Panel::Sessions,
        Panel::Settings,
    ];

    /// The tab's label.
    pub fn label(self) -> &'static str {
        match self {
            Panel::Chat => "Chat",
            Panel::Memory => "Memory",
            Panel::Context => "Context",
            Panel::Tokens => "Tokens",
            Panel::Sessions => "Sessions",
            Panel::Settings => "Settings",
        }
    }

    /// The tab's `data-testid` suffix.
    pub fn key(self) -> &'static str {
        match self {
            Panel::Chat => "chat",
            Panel::Memory => "memory",
            Panel::Context => "context",
            Panel::Tokens => "tokens",
            Panel::Sessions => "sessions",
            Panel::Settings => "settings",
        }
    }
}

/// The panels part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct Panels {
    panel: RwSignal<Panel>,
    breakdown_open: RwSignal<bool>,
}

impl Panels {
    /// Memory beside the chat, the breakdown closed.
    pub fn new() -> Panels {
        Panels {
            panel: RwSignal::new(Panel::Memory),
            breakdown_open: RwSignal::new(false),
        }
    }

    /// The side panel.
    pub fn panel(&self) -> ReadSignal<Panel> {
        self.panel.read_only()
    }

    /// Shows `panel`.
    pub fn show(&self, panel: Panel) {
        self.panel.set(panel);
    }

    /// Set by the mode hotkey: the inspector opens its budget breakdown.
    pub fn breakdown_open(&self) -> RwSignal<bool> {
        self.breakdown_open
    }
}

impl Default for Panels {
    fn default() -> Self {
        Panels::new()
    }
}
