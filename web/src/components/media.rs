//! CSS media queries as signals, for the few decisions the app makes in Rust about the
//! device: the phone layout (which panel to land on) and the system's colour scheme (for the
//! "System" theme).

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// The phone layout's breakpoint. `web/style.css` switches to one panel at a time at the same
/// width; keep the two equal.
pub const PHONE_QUERY: &str = "(max-width: 800px)";

/// A touch screen or a phone-wide window: no keyboard hints there (a phone has no
/// Shift+Enter), the same query the stylesheet uses for its touch layout.
pub const TOUCH_OR_NARROW_QUERY: &str = "(max-width: 800px), (pointer: coarse)";

/// Whether the system asks for dark colours.
pub const PREFERS_DARK_QUERY: &str = "(prefers-color-scheme: dark)";

/// Whether `query` matches now, kept up to date while the calling component is mounted.
/// Without `matchMedia` (not a browser) it is `false`.
pub fn media_query(query: &str) -> Signal<bool> {
    let list = web_sys::window().and_then(|w| w.match_media(query).ok().flatten());
    let matches = RwSignal::new(list.as_ref().is_some_and(web_sys::MediaQueryList::matches));
    if let Some(list) = list {
        let on_change = Closure::<dyn Fn(web_sys::MediaQueryListEvent)>::new(
            move |ev: web_sys::MediaQueryListEvent| {
                let _ = matches.try_set(ev.matches());
            },
        );
        let _ = list.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // The listener goes with the component; the closure is dropped with the stored value.
        let held = StoredValue::new_local((list, on_change));
        on_cleanup(move || {
            held.try_with_value(|(list, on_change)| {
                let _ = list.remove_event_listener_with_callback(
                    "change",
                    on_change.as_ref().unchecked_ref(),
                );
            });
        });
    }
    matches.into()
}
