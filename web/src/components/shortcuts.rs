//! Keyboard shortcuts: which key does what ([`command_for`], a pure function the app's window
//! listener asks), and the help dialog that lists them ([`ShortcutsDialog`]).
//!
//! Shortcuts never take Ctrl or Cmd combinations, which belong to the browser, and the
//! single-character ones ("/", "?") only act when the person is not typing in a field.

use crate::components::modal::Modal;
use leptos::prelude::*;

/// What a shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop the reply being written.
    Stop,
    /// Put the focus in the message box (showing the chat on a phone).
    FocusMessage,
    /// Open the settings panel.
    OpenSettings,
    /// Cycle the context mode and open the budget breakdown.
    CycleMode,
    /// Show the list of shortcuts.
    Help,
}

/// A key press as the shortcut rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyPress<'a> {
    /// `KeyboardEvent.key` (the character or key name, layout-dependent).
    pub key: &'a str,
    /// `KeyboardEvent.code` (the physical key, layout-independent).
    pub code: &'a str,
    /// Alt (Option on a Mac) is held.
    pub alt: bool,
    /// Ctrl is held.
    pub ctrl: bool,
    /// Cmd (or the Windows key) is held.
    pub meta: bool,
    /// Shift is held.
    pub shift: bool,
    /// The focus is in a field that takes text.
    pub typing: bool,
}

/// The command a key press asks for, if any. `streaming` says whether a reply is being written
/// (only then does Escape stop something). Dialogs handle their own keys first; the app does
/// not ask while one is open.
pub fn command_for(press: &KeyPress<'_>, streaming: bool) -> Option<Command> {
    if press.ctrl || press.meta {
        return None;
    }
    if press.alt {
        // Alt combinations are matched by the physical key, so they work on every layout
        // (and on a Mac, where Option turns the letter into another character).
        return match (press.code, press.shift) {
            ("KeyM", false) => Some(Command::CycleMode),
            ("KeyS", false) => Some(Command::OpenSettings),
            _ => None,
        };
    }
    match press.key {
        "Escape" if press.shift => Some(Command::FocusMessage),
        "Escape" if streaming => Some(Command::Stop),
        "/" if !press.typing => Some(Command::FocusMessage),
        "?" if !press.typing => Some(Command::Help),
        _ => None,
    }
}

/// Whether a focused element takes typed text, so plain characters belong to it.
pub fn takes_text(element: &web_sys::Element) -> bool {
    match element.tag_name().as_str() {
        "TEXTAREA" | "SELECT" => true,
        "INPUT" => !matches!(
            element.get_attribute("type").as_deref(),
            Some("checkbox" | "radio" | "button" | "submit" | "reset" | "file" | "range" | "color")
        ),
        _ => element
            .get_attribute("contenteditable")
            .is_some_and(|v| v != "false"),
    }
}

/// The shortcuts as the help dialog lists them: the keys (each one a `<kbd>`), what they do.
pub const SHORTCUTS: [(&[&str], &str); 8] = [
    (&["Enter"], "Send the message (in the message box)"),
    (&["Shift", "Enter"], "Start a new line in the message"),
    (&["Esc"], "Stop the reply being written, or close a dialog"),
    (&["/"], "Go to the message box (when not typing elsewhere)"),
    (&["Shift", "Esc"], "Go to the message box from anywhere"),
    (&["Alt", "S"], "Open the settings"),
    (
        &["Alt", "M"],
        "Switch the context mode (Off, Light, Heavy) and show what the model is sent",
    ),
    (&["?"], "Show this list (when not typing)"),
];

/// The help dialog with every shortcut.
#[component]
pub fn ShortcutsDialog(
    /// Whether the dialog is open; cleared to close it.
    open: RwSignal<bool>,
) -> impl IntoView {
    let close = Callback::new(move |()| open.set(false));
    move || {
        open.get().then(|| {
            view! {
                <Modal title="Keyboard shortcuts" test_id="shortcuts-dialog" on_close=close>
                    <table class="shortcuts" data-testid="shortcut-list">
                        <thead>
                            <tr>
                                <th scope="col">"Keys"</th>
                                <th scope="col">"What they do"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {SHORTCUTS
                                .iter()
                                .map(|(keys, what)| {
                                    let keys = keys
                                        .iter()
                                        .enumerate()
                                        .map(|(i, key)| {
                                            view! {
                                                {(i > 0).then_some(" + ")}
                                                <kbd>{*key}</kbd>
                                            }
                                        })
                                        .collect_view();
                                    view! {
                                        <tr data-testid="shortcut">
                                            <td class="keys">{keys}</td>
                                            <td>{*what}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                    <p class="hint">"Alt is Option on a Mac."</p>
                    <div class="row">
                        <button type="button" data-testid="close-shortcuts" on:click=move |_| open.set(false)>
                            "Close"
                        </button>
                    </div>
                </Modal>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{command_for, Command, KeyPress};

    fn key(key: &str) -> KeyPress<'_> {
        KeyPress {
            key,
            ..KeyPress::default()
        }
    }

    #[test]
    fn escape_stops_only_a_reply_in_progress() {
        assert_eq!(command_for(&key("Escape"), true), Some(Command::Stop));
        assert_eq!(command_for(&key("Escape"), false), None);
        let typing = KeyPress {
            typing: true,
            ..key("Escape")
        };
        assert_eq!(command_for(&typing, true), Some(Command::Stop));
    }

    #[test]
    fn characters_are_shortcuts_only_outside_fields() {
        assert_eq!(command_for(&key("/"), false), Some(Command::FocusMessage));
        assert_eq!(command_for(&key("?"), false), Some(Command::Help));
        for k in ["/", "?"] {
            let typing = KeyPress {
                typing: true,
                ..key(k)
            };
            assert_eq!(command_for(&typing, false), None, "{k} while typing");
        }
        let shift_escape = KeyPress {
            shift: true,
            typing: true,
            ..key("Escape")
        };
        assert_eq!(
            command_for(&shift_escape, true),
            Some(Command::FocusMessage)
        );
    }

    #[test]
    fn alt_shortcuts_use_the_physical_key_and_leave_ctrl_and_cmd_alone() {
        let alt = |code, key| KeyPress {
            code,
            alt: true,
            ..KeyPress {
                key,
                ..KeyPress::default()
            }
        };
        assert_eq!(
            command_for(&alt("KeyM", "µ"), false),
            Some(Command::CycleMode)
        );
        assert_eq!(
            command_for(&alt("KeyS", "ß"), false),
            Some(Command::OpenSettings)
        );
        assert_eq!(command_for(&alt("KeyX", "x"), false), None);
        for (ctrl, meta) in [(true, false), (false, true)] {
            let press = KeyPress {
                ctrl,
                meta,
                ..alt("KeyS", "s")
            };
            assert_eq!(command_for(&press, false), None);
            let slash = KeyPress {
                ctrl,
                meta,
                ..key("/")
            };
            assert_eq!(command_for(&slash, false), None);
        }
    }
}
