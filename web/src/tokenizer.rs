//! Which rank table the app has loaded, and loading the rest before it is needed.
//!
//! A first visit loads only the common-scripts part of `o200k_base` (Latin scripts,
//! punctuation, symbols and emoji: 475 kB instead of 651 kB with brotli; see
//! `ccm_tokens::coverage`), which counts such text exactly. Everything else needs the whole
//! table, so the app loads it before a turn with any text outside those scripts, before a turn
//! with a real model (whose answer may be in any script), and before an import; with a real
//! model chosen it starts loading right after start-up.

use crate::js::js_error_text;
use crate::state::{AppState, NoticeKind};
use ccm_core::tokens::Encoding;
use leptos::prelude::*;
use std::cell::RefCell;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// The encoding of the app's own sessions.
pub const APP_ENCODING: Encoding = Encoding::O200kBase;

/// Where the app's server has an encoding's whole rank table (Trunk copies the tables next to
/// index.html).
pub fn table_url(encoding: Encoding) -> String {
    format!("{}.ccmt", encoding.name())
}

/// Where the app's server has the common-scripts part of the app's encoding.
pub fn common_scripts_table_url() -> String {
    format!("{}.common.ccmt", APP_ENCODING.name())
}

/// Whether the app can count `text` exactly with what it has loaded.
pub fn counts_exactly(text: &str) -> bool {
    ccm_tokens_wasm::counts_exactly(APP_ENCODING.tokenizer_encoding(), text)
}

/// Whether the whole table of the app's encoding is loaded.
pub fn whole_table_loaded() -> bool {
    ccm_tokens_wasm::whole_table_loaded(APP_ENCODING.tokenizer_encoding())
}

thread_local! {
    /// The one download of the whole table in flight, shared by everyone who waits for it,
    /// so that a background load and a turn never download it twice.
    static WHOLE_TABLE: RefCell<Option<js_sys::Promise>> = const { RefCell::new(None) };
}

/// Loads the whole table of the app's encoding, or waits for the load already under way.
///
/// # Errors
/// The load's error in words; the next call tries again.
async fn load_whole_table() -> Result<(), String> {
    if whole_table_loaded() {
        return Ok(());
    }
    let promise = WHOLE_TABLE.with(|slot| {
        slot.borrow_mut()
            .get_or_insert_with(|| {
                wasm_bindgen_futures::future_to_promise(async {
                    let encoding = APP_ENCODING.tokenizer_encoding();
                    ccm_tokens_wasm::load_from_url(
                        encoding,
                        &table_url(APP_ENCODING),
                        &|_, _, _| {},
                    )
                    .await
                    .map(|()| JsValue::UNDEFINED)
                })
            })
            .clone()
    });
    let outcome = JsFuture::from(promise).await;
    if outcome.is_err() {
        // A failed download is not kept, so the next turn asks the server again.
        WHOLE_TABLE.with(|slot| slot.borrow_mut().take());
    }
    outcome.map(|_| ()).map_err(|error| js_error_text(&error))
}

/// Starts loading the whole table in the background when the chosen model is a real one, so
/// that its first turn does not wait for it.
pub fn preload_for_model(state: AppState) {
    if state.settings.provider().get_untracked().is_offline() || whole_table_loaded() {
        return;
    }
    leptos::task::spawn_local(async move {
        // A failure here is reported by the turn that needs the table, if one does.
        let _ = load_whole_table().await;
    });
}

/// Makes sure the app can count what a turn or an import will store: `texts` (the person's
/// message, attachments, an imported document) and, with a real model, an answer in any
/// script. Says what it loads while it does; returns `false` after telling the person why it
/// could not, in which case nothing must be stored.
pub async fn ready_to_count(state: AppState, texts: &[&str], real_model: bool) -> bool {
    if whole_table_loaded() || (!real_model && texts.iter().all(|text| counts_exactly(text))) {
        return true;
    }
    let shown_before = state.notices.busy().get_untracked();
    state.notices.set_busy(Some(
        "Loading the tokenizer for all scripts (650 kB, once)…".to_string(),
    ));
    let loaded = load_whole_table().await;
    state.notices.set_busy(shown_before);
    match loaded {
        Ok(()) => true,
        Err(error) => {
            state.notices.notify(
                NoticeKind::Error,
                format!(
                    "The tokenizer table for all scripts could not be loaded ({error}), so nothing was sent or imported; check the connection and try again."
                ),
            );
            false
        }
    }
}
