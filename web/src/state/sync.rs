//! Where syncing with a server stands: the client of the server set up in this browser, the
//! status the header and Settings show ([`SyncStatus`]), and the sessions in conflict.
//! `crate::sync` decides when to sync and changes these through the operations here; the
//! status is defined here, with the state that holds it, so that the state needs nothing of
//! `crate::sync` (which acts on the whole `AppState`).

use ccm_browser::sync::SyncClient;
use leptos::prelude::*;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Where syncing stands, as the header and Settings show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncStatus {
    /// No sync server is set up.
    Off,
    /// A sync is running.
    Syncing,
    /// Every session is the same here and on the server.
    Synced,
    /// The server cannot be reached; turns are kept here and sent later. The text says why.
    Offline(String),
    /// Another device wrote a session this browser also wrote: the person chooses.
    Conflict,
    /// The server answered with a refusal (a token it does not take, a damaged session).
    Failed(String),
}

impl SyncStatus {
    /// The status's short name (its `data-state`).
    pub fn key(&self) -> &'static str {
        match self {
            SyncStatus::Off => "off",
            SyncStatus::Syncing => "syncing",
            SyncStatus::Synced => "synced",
            SyncStatus::Offline(_) => "offline",
            SyncStatus::Conflict => "conflict",
            SyncStatus::Failed(_) => "failed",
        }
    }

    /// The status in words.
    pub fn label(&self) -> &'static str {
        match self {
            SyncStatus::Off => "Sync off",
            SyncStatus::Syncing => "Syncing…",
            SyncStatus::Synced => "Synced",
            SyncStatus::Offline(_) => "Offline",
            SyncStatus::Conflict => "Sync conflict",
            SyncStatus::Failed(_) => "Sync failed",
        }
    }

    /// What the person may want to know beyond the label.
    pub fn detail(&self) -> String {
        match self {
            SyncStatus::Off => {
                "Sessions are kept in this browser only. Enter a sync server and token to keep them on every device.".to_string()
            }
            SyncStatus::Syncing => "Sending and receiving turns…".to_string(),
            SyncStatus::Synced => {
                "Every session here is on the sync server too.".to_string()
            }
            SyncStatus::Offline(why) => format!(
                "Turns are saved in this browser and sent when the server can be reached again: {why}."
            ),
            SyncStatus::Conflict => {
                "Another device changed a conversation this browser changed too. Open it to choose which version to continue.".to_string()
            }
            SyncStatus::Failed(why) => format!("The sync server refused: {why}."),
        }
    }
}

/// The sync part of the app's state: `Copy` handles.
#[derive(Clone, Copy)]
pub struct SyncState {
    client: StoredValue<Option<Rc<SyncClient>>, LocalStorage>,
    status: RwSignal<SyncStatus>,
    conflicts: RwSignal<BTreeSet<String>>,
    running: StoredValue<bool>,
}

impl SyncState {
    /// Sync off.
    pub fn new() -> SyncState {
        SyncState {
            client: StoredValue::new_local(None),
            status: RwSignal::new(SyncStatus::Off),
            conflicts: RwSignal::new(BTreeSet::new()),
            running: StoredValue::new(false),
        }
    }

    /// The sync server's client, when sync is set up in this browser.
    pub fn client(&self) -> Option<Rc<SyncClient>> {
        self.client.get_value()
    }

    /// Whether sync is set up in this browser.
    pub fn is_on(&self) -> bool {
        self.client.with_value(Option::is_some)
    }

    /// Sets up (`Some`) or turns off sync; either way no session is in conflict any more.
    pub fn set_client(&self, client: Option<Rc<SyncClient>>) {
        self.client.set_value(client);
        self.conflicts.set(BTreeSet::new());
    }

    /// Where syncing stands.
    pub fn status(&self) -> ReadSignal<SyncStatus> {
        self.status.read_only()
    }

    /// Says where syncing stands.
    pub fn set_status(&self, status: SyncStatus) {
        self.status.set(status);
    }

    /// Sessions that this browser and another device both changed since they were last the
    /// same: no turn is taken into one until the person chooses a version.
    pub fn conflicts(&self) -> ReadSignal<BTreeSet<String>> {
        self.conflicts.read_only()
    }

    /// Marks the session `id` as in conflict, or no longer.
    pub fn set_conflict(&self, id: &str, in_conflict: bool) {
        self.conflicts.update(|c| {
            if in_conflict {
                c.insert(id.to_string());
            } else {
                c.remove(id);
            }
        });
    }

    /// Keeps in conflict only the sessions `keep` says are still in conflict.
    pub fn keep_conflicts(&self, keep: impl Fn(&String) -> bool) {
        self.conflicts.update(|c| c.retain(|id| keep(id)));
    }

    /// Whether a sync runs now (syncs take turns).
    pub fn running(&self) -> bool {
        self.running.get_value()
    }

    /// Marks a sync as running, or no longer.
    pub fn set_running(&self, running: bool) {
        self.running.set_value(running);
    }
}

impl Default for SyncState {
    fn default() -> Self {
        SyncState::new()
    }
}
