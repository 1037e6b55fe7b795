//! Which rank table the app has loaded, and loading the rest before it is needed.
//!
//! A first visit loads only the common-scripts part of `o200k_base` (Latin scripts,
//! punctuation, symbols and emoji: 475 kB instead of 651 kB with brotli; see
//! `ccm_tokens::coverage`), which counts such text exactly. Everything else needs the whole
//! table, and a count made once is kept forever, so the app loads the whole table before
//! anything outside those scripts can be counted:
//! - before a turn whose message or attachments hold other scripts;
//! - before a turn with a real model, whose answer may be in any script;
//! - before every import (a document may spell any character as a JSON escape);
//! - before every turn once this browser has seen other scripts or synchronises with a
//!   server, since the offline model's summaries and recalls quote stored text (remembered in
//!   localStorage; a browser that already had sessions before this rule counts as having seen
//!   them).
//!
//! With a real model, a synchronised account or other scripts seen, the load starts right
//! after start-up, so a turn rarely waits for it.

use crate::js::js_error_text;
use crate::state::{read_local, write_local, AppState, NoticeKind};
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

/// Where this browser remembers that it has stored text outside the common scripts: `all`
/// once it has, `common` while it has not.
const SCRIPTS_KEY: &str = "ccm.app.tokenizerScripts";

/// Whether this browser may hold text outside the common scripts: it said so, or it keeps
/// sessions in step with a sync server (which brings text from other devices).
fn other_scripts_possible() -> bool {
    read_local(SCRIPTS_KEY).as_deref() != Some("common")
        || crate::sync::SyncSettings::stored().is_some()
}

/// Remembers that this browser now holds text outside the common scripts. A failure to write
/// (storage full or off) only means that the next visit loads the whole table again.
fn remember_other_scripts() {
    let _ = write_local(SCRIPTS_KEY, Some("all"));
}

/// After start-up: the first start of a browser with no stored message marks it as holding
/// only the common scripts (one that already has messages may hold anything); then, when a
/// turn will need the whole table anyway (a real model, other scripts, a sync server), starts
/// loading it in the background so that the first turn does not wait.
pub fn after_start(state: AppState) {
    if read_local(SCRIPTS_KEY).is_none() {
        let holds_messages = state
            .session
            .list()
            .get_untracked()
            .iter()
            .any(|info| info.message_count > 0.0 || info.damaged.is_some());
        let value = if !holds_messages { "common" } else { "all" };
        let _ = write_local(SCRIPTS_KEY, Some(value));
    }
    let real_model = !state.settings.provider().get_untracked().is_offline();
    if whole_table_loaded() || !(real_model || other_scripts_possible()) {
        return;
    }
    leptos::task::spawn_local(async move {
        // A failure here is reported by the turn that needs the table, if one does.
        let _ = load_whole_table().await;
    });
}

/// Makes sure the app can count what a turn will store: `texts` (the person's message and
/// attachments), a real model's answer in any script, and whatever stored text the offline
/// model may quote. Says what it loads while it does; returns `false` after telling the person
/// why it could not, in which case nothing must be sent.
pub async fn ready_for_turn(state: AppState, texts: &[&str], real_model: bool) -> bool {
    let covered = texts.iter().all(|text| counts_exactly(text));
    if !covered {
        remember_other_scripts();
    }
    if whole_table_loaded() || (covered && !real_model && !other_scripts_possible()) {
        return true;
    }
    load_with_notice(state).await
}

/// Makes sure the app can count an import, which may hold any script.
pub async fn ready_for_import(state: AppState) -> bool {
    remember_other_scripts();
    whole_table_loaded() || load_with_notice(state).await
}

/// Loads the whole table with a line in the header while it does; reports a failure.
async fn load_with_notice(state: AppState) -> bool {
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
