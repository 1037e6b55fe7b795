//! The colour theme: the system's choice, light or dark. The choice is remembered in
//! localStorage; the page's `<html>` element carries the theme in effect as
//! `data-theme="light"` or `"dark"`, which `web/style.css` reads. "System" follows the
//! operating system's setting as it changes.

use crate::components::media::{media_query, PREFERS_DARK_QUERY};
use crate::state::{read_local, write_local};
use leptos::prelude::*;

/// The localStorage key of the person's choice.
pub const THEME_KEY: &str = "ccm.app.theme";

/// A theme choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    /// Follow the operating system.
    #[default]
    System,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

impl Theme {
    /// Every choice, in the order the switch lists them.
    pub const ALL: [Theme; 3] = [Theme::System, Theme::Light, Theme::Dark];

    /// The stored form.
    pub fn key(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    /// The choice a stored value names; anything else is the default.
    pub fn from_key(key: &str) -> Theme {
        Theme::ALL
            .into_iter()
            .find(|t| t.key() == key)
            .unwrap_or_default()
    }

    /// What the switch shows.
    pub fn label(self) -> &'static str {
        match self {
            Theme::System => "System theme",
            Theme::Light => "Light",
            Theme::Dark => "Dark",
        }
    }

    /// The theme in effect (`"light"` or `"dark"`), given whether the system prefers dark.
    pub fn resolve(self, system_dark: bool) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
            Theme::System if system_dark => "dark",
            Theme::System => "light",
        }
    }
}

fn set_page_theme(resolved: &str) {
    if let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = root.set_attribute("data-theme", resolved);
    }
}

/// The theme switch. Mounting it applies the remembered theme at once (before the app's first
/// paint when it is part of the app's first render).
#[component]
pub fn ThemeSwitch() -> impl IntoView {
    let choice = RwSignal::new(Theme::from_key(&read_local(THEME_KEY).unwrap_or_default()));
    let system_dark = media_query(PREFERS_DARK_QUERY);
    // Synchronously first, so the app never paints in the wrong colours; then on every change.
    set_page_theme(choice.get_untracked().resolve(system_dark.get_untracked()));
    Effect::new(move |_| set_page_theme(choice.get().resolve(system_dark.get())));
    let on_change = move |ev: web_sys::Event| {
        let next = Theme::from_key(&event_target_value(&ev));
        choice.set(next);
        // A browser that refuses storage (private mode, quota) still switches for this tab.
        let stored = (next != Theme::System).then(|| next.key());
        if let Err(e) = write_local(THEME_KEY, stored) {
            leptos::logging::warn!("the theme could not be remembered: {e}");
        }
    };
    view! {
        <label class="theme-switch">
            <span class="visually-hidden">"Theme"</span>
            <select data-testid="theme-select" on:change=on_change>
                {Theme::ALL
                    .into_iter()
                    .map(|t| view! { <option value=t.key() selected=move || choice.get() == t>{t.label()}</option> })
                    .collect_view()}
            </select>
        </label>
    }
}

#[cfg(test)]
mod tests {
    use super::Theme;

    #[test]
    fn a_stored_choice_round_trips_and_anything_else_is_the_system_theme() {
        for theme in Theme::ALL {
            assert_eq!(Theme::from_key(theme.key()), theme);
        }
        assert_eq!(Theme::from_key(""), Theme::System);
        assert_eq!(Theme::from_key("solarized"), Theme::System);
    }

    #[test]
    fn only_the_system_theme_follows_the_system() {
        assert_eq!(Theme::System.resolve(true), "dark");
        assert_eq!(Theme::System.resolve(false), "light");
        assert_eq!(Theme::Light.resolve(true), "light");
        assert_eq!(Theme::Dark.resolve(false), "dark");
    }
}
