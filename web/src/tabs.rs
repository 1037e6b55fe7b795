//! Other tabs of the app in this browser: each save is announced on a `BroadcastChannel`, so
//! a tab showing the same session learns of it at once and, when it has nothing of its own
//! that is unsaved, loads the newer version by itself. A tab also checks the stored revision
//! before it sends (a message may cross the announcement), so it never answers from a state
//! another tab has moved on from. Whatever is typed in the message box is kept on every path.

use crate::state::AppState;
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::prelude::*;
use web_sys::BroadcastChannel;

/// The channel's name; every tab of the app on this origin joins it.
const CHANNEL: &str = "ccm-app-saves";

thread_local! {
    // The tab's end of the channel, kept for the page's lifetime (closing it would stop the
    // listener).
    static TAB_CHANNEL: std::cell::RefCell<Option<BroadcastChannel>> =
        const { std::cell::RefCell::new(None) };
}

/// Joins the channel and catches up whenever another tab announces a save of the session
/// this tab shows. Without `BroadcastChannel` (very old browsers) the check before each send
/// still keeps the tab from answering from a stale state.
pub fn listen(state: AppState) {
    let Ok(channel) = BroadcastChannel::new(CHANNEL) else {
        return;
    };
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            let id = event.data().as_string();
            if id.is_some() && id == state.session.id().get_untracked() {
                spawn_local(async move {
                    state.catch_up(false).await;
                });
            }
        });
    channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The listener lives as long as the page.
    on_message.forget();
    TAB_CHANNEL.with(|slot| *slot.borrow_mut() = Some(channel));
}

/// Tells the other tabs that session `id` was saved (a tab does not receive its own messages).
pub fn announce(id: &str) {
    TAB_CHANNEL.with(|slot| {
        if let Some(channel) = slot.borrow().as_ref() {
            let _ = channel.post_message(&JsValue::from_str(id));
        }
    });
}
