//! The app's sessions on a sync server, so that one conversation continues on every device.
//!
//! IndexedDB stays the working copy: every turn is saved there first, so the app works
//! offline, and then pushed to the server (one request when the server is where this browser
//! left it). Opening the app or a session pulls what other devices wrote. The rules are
//! ccm-browser's [`SyncClient`] (over ccm-store's sync algorithm); this module decides when
//! to run them, keeps one sync running at a time, and shows what happened: the status
//! (off, syncing, synced, offline, conflict, failed), reloads of a session another device
//! moved on, and the choice a conflict leaves to the person.
//!
//! Only session records and the sync token go to the server. The provider's API key is kept
//! apart (`state/settings.rs`) and never sent there.

use crate::state::{read_local, write_local, AppState, NoticeKind, SyncStatus};
use ccm_browser::sync::{is_unreachable, SessionSync, SyncClient, SyncReport};
use ccm_browser::BrowserError;
use ccm_core::persistence::WriteBatch;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::rc::Rc;

/// Where the sync server's address and token are kept in this browser (two plain entries: no
/// JSON to decode for two strings).
const URL_KEY: &str = "ccm.app.sync.url";
const TOKEN_KEY: &str = "ccm.app.sync.token";

/// How often a sync is tried again while the server cannot be reached, in milliseconds.
pub const RETRY_MS: f64 = 10_000.0;

/// The sync server and token, as the person entered them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncSettings {
    /// The server's base URL (empty: sync is off).
    pub url: String,
    /// The bearer token the server issued.
    pub token: String,
}

impl SyncSettings {
    /// The settings this browser keeps, if sync was set up here.
    pub fn stored() -> Option<SyncSettings> {
        let url = read_local(URL_KEY).filter(|url| !url.is_empty())?;
        Some(SyncSettings {
            url,
            token: read_local(TOKEN_KEY).unwrap_or_default(),
        })
    }
}

/// Opens the sync client of the stored settings, if sync was set up in this browser.
pub fn init(state: AppState) {
    let Some(settings) = SyncSettings::stored() else {
        state.sync.set_status(SyncStatus::Off);
        return;
    };
    match SyncClient::new(&settings.url, &settings.token) {
        Ok(client) => {
            state.sync.set_client(Some(Rc::new(client)));
            state.sync.set_status(SyncStatus::Syncing);
        }
        Err(e) => state.sync.set_status(SyncStatus::Failed(e.to_string())),
    }
}

/// Sets up sync with `settings` (kept in this browser) and syncs every session; returns the
/// outcome in words for the form, or why the settings cannot be used.
pub async fn configure(state: AppState, settings: SyncSettings) -> Result<String, String> {
    let client = SyncClient::new(&settings.url, &settings.token).map_err(|e| e.to_string())?;
    write_local(URL_KEY, Some(&settings.url))
        .and_then(|()| write_local(TOKEN_KEY, Some(&settings.token)))
        .map_err(|e| format!("The sync settings could not be kept in this browser: {e}"))?;
    state.sync.set_client(Some(Rc::new(client)));
    sync_all(state).await;
    Ok(state.sync.status().with_untracked(|s| match s {
        SyncStatus::Synced => "Saved. Every session is synced.".to_string(),
        other => format!("Saved. {}", other.detail()),
    }))
}

/// Turns sync off in this browser; the sessions stay here and on the server.
pub fn turn_off(state: AppState) {
    let _ = write_local(URL_KEY, None);
    let _ = write_local(TOKEN_KEY, None);
    state.sync.set_client(None);
    state.sync.set_status(SyncStatus::Off);
}

/// Holds the one sync that runs at a time: two at once could both push the same turns, and
/// the second would be refused as if another device had written.
struct SyncTurn(AppState);

impl Drop for SyncTurn {
    fn drop(&mut self) {
        self.0.sync.set_running(false);
    }
}

async fn take_turn(state: AppState) -> SyncTurn {
    while state.sync.running() {
        crate::js::timeout(20.0).await;
    }
    state.sync.set_running(true);
    SyncTurn(state)
}

/// The client and the store, when sync is on and storage is open.
fn parts(state: AppState) -> Option<(Rc<SyncClient>, ccm_browser::BrowserStore)> {
    Some((state.sync.client()?, state.session.store()?))
}

/// Shows a failure of a sync: offline when the server could not be reached, failed when it
/// refused.
fn show_failure(state: AppState, client: &SyncClient, error: &BrowserError) {
    let text = error.to_string();
    if is_unreachable(error) && client.unreachable() {
        state.sync.set_status(SyncStatus::Offline(text));
    } else {
        state.sync.set_status(SyncStatus::Failed(text));
    }
}

/// The status after a successful sync: a conflict anywhere outweighs "synced".
fn settle(state: AppState) {
    let conflicted = state.sync.conflicts().with_untracked(|c| !c.is_empty());
    state.sync.set_status(if conflicted {
        SyncStatus::Conflict
    } else {
        SyncStatus::Synced
    });
}

/// Records what a sync did to session `id`; returns whether the open session must be read
/// again from storage (another device's turns were written into it).
fn note(state: AppState, id: &str, outcome: &SessionSync) -> bool {
    let current = state.session.id().get_untracked().as_deref() == Some(id);
    match outcome {
        SessionSync::Conflict => {
            state.sync.set_conflict(id, true);
            false
        }
        SessionSync::Pulled => {
            state.sync.set_conflict(id, false);
            current
        }
        SessionSync::DeletedHere => {
            state.notices.notify(
                NoticeKind::Info,
                "A conversation deleted on another device was deleted here too.",
            );
            current
        }
        SessionSync::Restored => {
            state.notices.notify(
                NoticeKind::Info,
                "A conversation was deleted on another device while this browser held turns it had not sent; it was uploaded again so that they are not lost.",
            );
            false
        }
        SessionSync::InSync | SessionSync::Pushed => {
            state.sync.set_conflict(id, false);
            false
        }
    }
}

/// Reads the open session again after a sync wrote into it, unless a turn is running (its
/// save will then meet the newer version and say so).
async fn reload_current(state: AppState) {
    if state.turn.in_turn() {
        return;
    }
    let Some(id) = state.session.id().get_untracked() else {
        return;
    };
    let exists = state
        .session
        .list()
        .with_untracked(|list| list.iter().any(|s| s.id == id));
    if exists {
        state.open_session(id, false).await;
    } else {
        state.open_any().await;
    }
}

/// Syncs every session (the app's start, the Sync settings, a retry): sessions that exist
/// only on the server appear here, turns taken here while offline go out, and the open
/// session is read again when another device moved it on.
pub async fn sync_all(state: AppState) {
    let Some((client, store)) = parts(state) else {
        return;
    };
    let _turn = take_turn(state).await;
    state.sync.set_status(SyncStatus::Syncing);
    // The open session is left alone while a turn runs in it: its save comes next and syncs it.
    let busy = move |id: &str| {
        state.turn.in_turn() && state.session.id().get_untracked().as_deref() == Some(id)
    };
    match client.sync_all(&store, &busy).await {
        Ok(report) => {
            let reload = apply_report(state, &report);
            state.refresh_sessions().await;
            settle(state);
            if reload {
                reload_current(state).await;
            }
        }
        Err(error) => show_failure(state, &client, &error),
    }
}

/// Applies what [`SyncClient::sync_all`] did; returns whether the open session must be read
/// again.
fn apply_report(state: AppState, report: &SyncReport) -> bool {
    let mut reload = false;
    let conflicts = report.conflicts();
    // A session no longer reported in conflict was resolved elsewhere (or synced since).
    state
        .sync
        .keep_conflicts(|id| conflicts.contains(id) || report.sessions.contains_key(id));
    for (id, outcome) in &report.sessions {
        reload |= note(state, id, outcome);
    }
    for (id, failure) in &report.failures {
        state.notices.notify(
            NoticeKind::Error,
            format!("Session {id} could not be synced: {failure}"),
        );
    }
    reload
}

/// One piece of sync work on one session. Every piece runs through [`run`], one future type
/// for all of them, which keeps the sync code in the app's download once.
enum Job {
    /// Sync the session (before it opens, or after it was created, imported or forked here).
    Sync(String),
    /// Push what a local save of the session just wrote (the save's batch).
    Saved(String, Box<WriteBatch>),
    /// Delete the session on the server too.
    Delete(String),
    /// Rename the session on the server too.
    Rename(String, String),
}

/// Runs one job in its turn and shows what it did.
async fn run(state: AppState, job: Job) {
    let Some((client, store)) = parts(state) else {
        return;
    };
    let _turn = take_turn(state).await;
    state.sync.set_status(SyncStatus::Syncing);
    // Only a push can find the open session moved on by another device; a session synced
    // before it opens is read by the opening itself.
    let may_reload = matches!(job, Job::Saved(..));
    let (id, outcome) = match job {
        Job::Sync(id) => {
            let outcome = client.sync_session(&store, &id).await;
            (id, outcome)
        }
        Job::Saved(id, batch) => {
            let outcome = client.push_saved(&store, &id, &batch).await;
            (id, outcome)
        }
        Job::Delete(id) => {
            let outcome = match client.delete(&id).await {
                // Kept for later: the server could not be reached.
                Ok(()) if client.unreachable() => Err(BrowserError::Unavailable(
                    "the deletion is sent when the server can be reached".to_string(),
                )),
                done => done.map(|()| SessionSync::InSync),
            };
            (id, outcome)
        }
        Job::Rename(id, name) => {
            let outcome = client.rename(&id, &name).await;
            (id, outcome.map(|()| SessionSync::InSync))
        }
    };
    match outcome {
        Ok(outcome) => {
            let reload = note(state, &id, &outcome);
            if !matches!(outcome, SessionSync::InSync | SessionSync::Pushed) {
                state.refresh_sessions().await;
            }
            settle(state);
            if reload && may_reload {
                // Spawned, not awaited: opening a session runs a sync job itself, and this one
                // holds the turn until it returns.
                spawn_local(reload_current(state));
            }
        }
        Err(error) => show_failure(state, &client, &error),
    }
}

/// Syncs one session before it opens, so that it opens with what other devices wrote. When
/// the server cannot be reached, the session opens as this browser has it.
pub async fn before_open(state: AppState, id: &str) {
    run(state, Job::Sync(id.to_string())).await;
}

/// Pushes what a local save of session `id` just wrote, in the background.
pub fn after_save(state: AppState, id: String, batch: WriteBatch) {
    spawn_local(run(state, Job::Saved(id, Box::new(batch))));
}

/// Sends a session just stored here (created, imported, forked) in the background.
pub fn push_new(state: AppState, id: String) {
    spawn_local(run(state, Job::Sync(id)));
}

/// Deletes a session on the server too, in the background (later, when it is unreachable).
pub fn deleted(state: AppState, id: String) {
    state.sync.set_conflict(&id, false);
    spawn_local(run(state, Job::Delete(id)));
}

/// Renames a session on the server too, in the background.
pub fn renamed(state: AppState, id: String, name: String) {
    spawn_local(run(state, Job::Rename(id, name)));
}

/// Resolves the open session's conflict. Either way this browser's version is kept as a
/// branch (a new session, sent to the server too) and the session itself takes the other
/// device's version; `continue_in_branch` opens the branch, otherwise the session with the
/// other device's version opens. The message box is not touched, so nothing typed is lost.
pub async fn resolve(state: AppState, continue_in_branch: bool) {
    let (Some((client, store)), Some(id)) = (parts(state), state.session.id().get_untracked())
    else {
        return;
    };
    let name = state
        .session
        .list()
        .get_untracked()
        .into_iter()
        .find(|s| s.id == id)
        .map(|s| s.name)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Conversation".to_string());
    let branch_name = format!("{name} (this device's version)");
    let outcome = {
        let _turn = take_turn(state).await;
        state.sync.set_status(SyncStatus::Syncing);
        client.resolve_conflict(&store, &id, &branch_name).await
    };
    match outcome {
        Ok(branch) => {
            state.sync.set_conflict(&id, false);
            state.refresh_sessions().await;
            settle(state);
            // The branch goes to the server next (or with the next sync, when it cannot be
            // reached now).
            push_new(state, branch.clone());
            let (open, told) = if continue_in_branch {
                (
                    branch,
                    format!("This device's version continues as “{branch_name}”; “{name}” now holds the other device's."),
                )
            } else {
                (
                    id,
                    format!("Loaded the other device's version; this device's is kept as “{branch_name}”."),
                )
            };
            state.open_session(open, false).await;
            state.notices.notify(NoticeKind::Info, told);
        }
        Err(error) => {
            show_failure(state, &client, &error);
            state.notices.notify(
                NoticeKind::Error,
                format!("The conflict could not be resolved: {error}. Nothing was lost; try again when the server can be reached."),
            );
        }
    }
}

/// Tries again while the server cannot be reached: when the browser says it is back online,
/// and every [`RETRY_MS`] while the status is offline or failed. Runs for the app's lifetime.
pub fn keep_retrying(state: AppState) {
    let online = window_event_listener(leptos::ev::online, move |_| {
        spawn_local(sync_all(state));
    });
    on_cleanup(move || online.remove());
    spawn_local(async move {
        loop {
            crate::js::timeout(RETRY_MS).await;
            let waiting = state.sync.status().try_with_untracked(|s| {
                matches!(s, SyncStatus::Offline(_) | SyncStatus::Failed(_))
            });
            match waiting {
                Some(true) => sync_all(state).await,
                Some(false) => {}
                // The app is gone (its signals disposed): stop.
                None => return,
            }
        }
    });
}
