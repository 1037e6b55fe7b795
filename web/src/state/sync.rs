//! Where syncing with a server stands: the client of the server set up in this browser, the
//! status the header and Settings show, and the sessions in conflict. `crate::sync` decides
//! when to sync and changes these through the operations here.

use crate::sync::SyncStatus;
use ccm_browser::sync::SyncClient;
use leptos::prelude::*;
use std::collections::BTreeSet;
use std::rc::Rc;

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
    /// already be gone, and then so is the sync.
    pub fn set_running(&self, running: bool) {
        self.running.set_value(running);
    }
}

impl Default for SyncState {
    fn default() -> Self {
        SyncState::new()
    }
}
