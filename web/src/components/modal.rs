//! The one way the app shows a dialog: a native `<dialog>` opened with `showModal()`, so the
//! page behind it is inert (no clicks, no focus, hidden from screen readers), plus what the
//! browser does not do reliably on its own: focus moves to the dialog's first control (or the
//! one marked `autofocus`), Tab and Shift+Tab wrap around inside it, Escape and a click on the
//! backdrop close it, and focus goes back to the control that opened it.
//!
//! The dialog is shown while the component is mounted; the caller closes it by unmounting it
//! (clearing the signal it renders from) when `on_close` runs.

use leptos::html;
use leptos::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wasm_bindgen::JsCast;

/// What can take the focus inside a dialog, for the initial focus and the Tab trap.
const FOCUSABLE: &str =
    "button:not([disabled]), [href], input:not([disabled]):not([type=hidden]), \
     select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex='-1'])";

/// The elements of `root` that Tab can reach, in document order (hidden ones left out).
pub fn focusable_in(root: &web_sys::Element) -> Vec<web_sys::HtmlElement> {
    let Ok(list) = root.query_selector_all(FOCUSABLE) else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|node| node.dyn_into::<web_sys::HtmlElement>().ok())
        // An element that is not rendered (display: none, or inside a closed <details>) has
        // no client rects and cannot take the focus.
        .filter(|el| el.get_client_rects().length() > 0)
        .collect()
}

fn active_element() -> Option<web_sys::Element> {
    web_sys::window()?.document()?.active_element()
}

/// Focuses the element marked `autofocus`, else the first focusable one, else the dialog.
fn focus_initial(dialog: &web_sys::HtmlDialogElement) {
    let marked = dialog
        .query_selector("[autofocus]")
        .ok()
        .flatten()
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok());
    let target = marked.or_else(|| focusable_in(dialog).into_iter().next());
    match target {
        Some(el) => {
            let _ = el.focus();
        }
        None => {
            let _ = dialog.focus();
        }
    }
}

/// Keeps Tab inside the dialog: from the last control it wraps to the first, and Shift+Tab
/// from the first wraps to the last. Returns whether it moved the focus itself.
fn trap_tab(dialog: &web_sys::HtmlDialogElement, backwards: bool) -> bool {
    let controls = focusable_in(dialog);
    let (Some(first), Some(last)) = (controls.first(), controls.last()) else {
        // Nothing to move to: the focus stays where it is.
        return true;
    };
    let active = active_element();
    let inside = active
        .as_ref()
        .is_some_and(|el| dialog.contains(Some(el.unchecked_ref())));
    let at = |el: &web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a == el.unchecked_ref::<web_sys::Element>())
    };
    let next = match (inside, backwards) {
        (false, false) => first,
        (false, true) => last,
        (true, false) if at(last) => first,
        (true, true) if at(first) => last,
        _ => return false,
    };
    let _ = next.focus();
    true
}

/// A modal dialog with a title and a close button.
#[component]
pub fn Modal(
    /// The dialog's title (its accessible name).
    #[prop(into)]
    title: String,
    /// The dialog's `data-testid`; the title's id is derived from it.
    test_id: &'static str,
    /// Asks the owner to close the dialog (Escape, the close button, a click on the backdrop).
    on_close: Callback<()>,
    /// Extra classes for the dialog.
    #[prop(optional)]
    class: &'static str,
    /// The dialog's content.
    children: Children,
) -> impl IntoView {
    let dialog = NodeRef::<html::Dialog>::new();
    // The control that had the focus when the dialog was asked for; it gets it back on close.
    // Captured now, before the dialog is in the page and takes the focus.
    let opener = StoredValue::new_local(active_element());
    // The element once shown, for the cleanup (the node reference may be gone by then).
    let shown = StoredValue::new_local(None::<web_sys::HtmlDialogElement>);
    Effect::new(move |_| {
        if let Some(el) = dialog.get() {
            shown.set_value(Some(el.clone()));
            if !el.open() {
                if let Err(error) = el.show_modal() {
                    leptos::logging::warn!("the dialog could not open as modal: {error:?}");
                    el.set_open(true);
                }
            }
            focus_initial(&el);
        }
    });
    // Set when the component goes away, so the `close` event that closing it then queues
    // (events outlive the component) is not taken for a close request from the browser.
    let closing = Arc::new(AtomicBool::new(false));
    let closed_by_owner = closing.clone();
    on_cleanup(move || {
        // Closed first: while a modal dialog is shown, everything behind it is inert and
        // cannot take the focus. The element itself stays where it is, because the view that
        // rendered it removes it and needs it in place to know where to put what follows.
        closed_by_owner.store(true, Ordering::Relaxed);
        shown.try_with_value(|el| {
            if let Some(el) = el {
                el.close();
            }
        });
        opener.try_with_value(|opener| {
            // The opener may have gone (a conclusion re-renders the row its button was in);
            // then the message box is the place to continue from, when it is on screen.
            let target = opener
                .as_ref()
                .filter(|el| el.is_connected())
                .and_then(|el| el.clone().dyn_into::<web_sys::HtmlElement>().ok())
                .or_else(|| {
                    web_sys::window()?
                        .document()?
                        .get_element_by_id("message-box")?
                        .dyn_into::<web_sys::HtmlElement>()
                        .ok()
                });
            if let Some(target) = target {
                let _ = target.focus();
            }
        });
    });
    let title_id = format!("{test_id}-title");
    let labelled_by = title_id.clone();
    let on_keydown = move |ev: web_sys::KeyboardEvent| {
        let Some(el) = dialog.get_untracked() else {
            return;
        };
        match ev.key().as_str() {
            "Escape" => {
                // Handled here, so the browser's own cancel does not close the element behind
                // the app's back, and the app's Escape shortcut (Stop) does not see it.
                ev.prevent_default();
                ev.stop_propagation();
                on_close.run(());
            }
            "Tab"
                if !ev.alt_key()
                    && !ev.ctrl_key()
                    && !ev.meta_key()
                    && trap_tab(&el, ev.shift_key()) =>
            {
                ev.prevent_default();
            }
            _ => {}
        }
    };
    view! {
        <dialog
            node_ref=dialog
            class=format!("dialog {class}")
            aria-labelledby=labelled_by
            data-testid=test_id
            tabindex="-1"
            on:keydown=on_keydown
            // A click whose target is the dialog element itself landed on the backdrop: the
            // content is wrapped in a box that catches every click inside.
            on:click=move |ev| {
                let on_dialog = ev.target().zip(dialog.get_untracked()).is_some_and(
                    |(target, el)| target == *el.unchecked_ref::<web_sys::EventTarget>(),
                );
                if on_dialog {
                    on_close.run(());
                }
            }
            // The browser closed it itself (a close request it does not let the page refuse).
            on:close=move |_| {
                if !closing.load(Ordering::Relaxed) {
                    on_close.run(());
                }
            }
        >
            <div class="dialog-box">
                <div class="dialog-head">
                    <h2 id=title_id>{title}</h2>
                    <CloseButton
                        class="secondary dialog-close"
                        test_id="dialog-close"
                        label="Close"
                        title="Close (Esc)"
                        on_click=on_close
                    />
                </div>
                {children()}
            </div>
        </dialog>
    }
}

/// A "×" button that closes or ends what it sits in (a dialog, the tour of examples).
#[component]
pub fn CloseButton(
    /// Its classes.
    class: &'static str,
    /// Its `data-testid`.
    test_id: &'static str,
    /// What it does, for screen readers.
    label: &'static str,
    /// Its tooltip.
    title: &'static str,
    /// Called on a click.
    on_click: Callback<()>,
) -> impl IntoView {
    view! {
        <button
            type="button"
            class=class
            data-testid=test_id
            aria-label=label
            title=title
            on:click=move |_| on_click.run(())
        >
            "×"
        </button>
    }
}
