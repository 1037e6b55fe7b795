//! Sessions kept on a sync server as well as in the browser: the `fetch` transport of
//! ccm-store's wire format ([`FetchTransport`]), the synced revisions this browser remembers
//! ([`SyncedRevisions`]) and the operations a host runs to keep both copies the same
//! ([`SyncClient`]).
//!
//! The browser's store stays the session's working copy, so everything works offline; the
//! server's copy follows it. The rule that keeps the two apart from each other's turns is
//! ccm-store's (`ccm_store::sync`): each side refuses a write that does not build on its stored
//! revision, and the host remembers per session the revision at which both sides were last
//! the same. Two devices that both wrote since then are a conflict, which the person resolves
//! ([`SyncClient::resolve_conflict`]): one version stays under the session's id, the other is
//! kept as a branch, and nothing is lost.
//!
//! Only session records and the bearer token go to the server; a provider's API key is never
//! part of either.

use crate::error::{js_message, BrowserError};
use crate::session_store::{new_session_id, BrowserStore};
use ccm_core::persistence::WriteBatch;
use ccm_store::remote::{RemoteStore, Request, Response, Transport};
use ccm_store::sync::{self as store_sync, SyncOutcome};
use ccm_store::{RecordStore, SessionRow, StoreError, WriteMode};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Headers, RequestInit};

#[wasm_bindgen]
extern "C" {
    // The global `fetch`, as in transport.rs, so the same code runs in pages and workers.
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_with_request(request: &web_sys::Request) -> js_sys::Promise;
}

/// How long one request to the sync server may take, in milliseconds. A server that accepts
/// the connection and never answers would otherwise hold a sync (and the person's open of a
/// session) for ever; a refused connection fails at once anyway.
pub const REQUEST_TIMEOUT_MS: u64 = 15_000;

/// Sends the wire format's requests with `fetch`: the server's base URL before each path, the
/// bearer token in `Authorization`. A request that gets no answer becomes
/// [`StoreError::Unavailable`] with a sentence that says what to check, and the transport
/// remembers that the server was unreachable ([`FetchTransport::unreachable`]), which is how a
/// host tells "offline" from a refusal the server answered.
#[derive(Debug)]
pub struct FetchTransport {
    base_url: String,
    token: String,
    timeout_ms: u64,
    unreachable: Cell<bool>,
}

impl FetchTransport {
    /// A transport to the server at `base_url` (`http://` or `https://`, without the `/v1`
    /// of the routes) that presents `token`.
    ///
    /// # Errors
    /// [`BrowserError::Argument`] for an address that is not an http(s) URL, or an empty token.
    pub fn new(base_url: &str, token: &str) -> Result<FetchTransport, BrowserError> {
        let base_url = normalize_url(base_url)?;
        let token = token.trim();
        if token.is_empty() {
            return Err(BrowserError::argument(
                "the sync token is empty: paste the token the server's `ccm-server token create` printed",
            ));
        }
        Ok(FetchTransport {
            base_url,
            token: token.to_string(),
            timeout_ms: REQUEST_TIMEOUT_MS,
            unreachable: Cell::new(false),
        })
    }

    /// The server's base URL, as requests use it.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether the last request got no answer at all (refused, offline, timed out, or blocked
    /// by CORS, which a page cannot tell apart from a refused connection).
    pub fn unreachable(&self) -> bool {
        self.unreachable.get()
    }

    fn no_answer(&self, why: &str) -> StoreError {
        self.unreachable.set(true);
        let origin = web_sys::window()
            .and_then(|w| w.location().origin().ok())
            .unwrap_or_else(|| "this page's origin".to_string());
        StoreError::unavailable(format!(
            "the sync server at {} could not be reached ({why}). Check the address, that the server is running, and that it allows requests from {origin} (its --allow-origin, for CORS); turns are kept in this browser meanwhile and sent when it is reachable",
            self.base_url
        ))
    }
}

/// The base URL without trailing slashes, or why it cannot be one.
fn normalize_url(url: &str) -> Result<String, BrowserError> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(url.to_string())
        }
        _ => Err(BrowserError::argument(format!(
            "the sync server's address must start with http:// or https:// and name a host, got “{url}”"
        ))),
    }
}

impl Transport for FetchTransport {
    async fn send(&self, request: Request) -> Result<Response, StoreError> {
        let headers = Headers::new().map_err(|e| self.no_answer(&js_message(&e)))?;
        let authorization = format!("Bearer {}", self.token);
        headers
            .append("authorization", &authorization)
            .map_err(|_| {
                StoreError::unavailable(
                    "the sync token holds characters a request header cannot carry; paste it again",
                )
            })?;
        let init = RequestInit::new();
        init.set_method(request.method.as_str());
        if let Some(body) = &request.body {
            headers
                .append("content-type", "application/json")
                .map_err(|e| self.no_answer(&js_message(&e)))?;
            init.set_body(&JsValue::from_str(body));
        }
        init.set_headers(&headers);
        // Answers are never to be taken from a cache: each one is the server's state now.
        init.set_cache(web_sys::RequestCache::NoStore);
        let url = format!("{}{}", self.base_url, request.path);
        let fetch_request = web_sys::Request::new_with_str_and_init(&url, &init)
            .map_err(|e| self.no_answer(&js_message(&e)))?;
        let started = js_sys::Date::now();
        let answer = crate::transport::within(fetch_with_request(&fetch_request), self.timeout_ms)
            .await
            .map_err(|e| self.no_answer(&js_message(&e)))?;
        let Some(answer) = answer else {
            return Err(self.no_answer(&format!("no answer within {} s", self.timeout_ms / 1000)));
        };
        let response: web_sys::Response = answer.unchecked_into();
        let left = self
            .timeout_ms
            .saturating_sub((js_sys::Date::now() - started).max(0.0) as u64)
            .max(1);
        let text = response
            .text()
            .map_err(|e| self.no_answer(&js_message(&e)))?;
        let Some(body) = crate::transport::within(text, left)
            .await
            .map_err(|e| self.no_answer(&js_message(&e)))?
        else {
            return Err(self.no_answer(&format!(
                "the answer did not arrive within {} s",
                self.timeout_ms / 1000
            )));
        };
        self.unreachable.set(false);
        Ok(Response {
            status: response.status(),
            body: body.as_string().unwrap_or_default(),
        })
    }
}

/// The synced revision of each session, per server, in this browser's localStorage: the
/// revision at which this browser's copy and the server's were last known to be the same.
/// One entry per (server, session), so that two tabs writing different sessions never
/// overwrite each other's entries.
#[derive(Debug, Clone)]
pub struct SyncedRevisions {
    prefix: String,
}

/// The localStorage key prefix of every synced revision.
const REVISION_PREFIX: &str = "ccm.sync.revision.";
/// The localStorage key prefix of the sessions deleted here and not yet on the server.
const DELETED_PREFIX: &str = "ccm.sync.deleted.";

fn local_storage() -> Option<web_sys::Storage> {
    let storage = js_sys::Reflect::get(&js_sys::global(), &"localStorage".into()).ok()?;
    storage.dyn_into::<web_sys::Storage>().ok()
}

impl SyncedRevisions {
    /// The synced revisions of the server at `base_url`.
    pub fn for_server(base_url: &str) -> SyncedRevisions {
        SyncedRevisions {
            prefix: format!("{REVISION_PREFIX}{base_url}|"),
        }
    }

    /// The synced revision of session `id` (none when it was never synced with this server).
    pub fn get(&self, id: &str) -> Option<u64> {
        local_storage()?
            .get_item(&format!("{}{id}", self.prefix))
            .ok()
            .flatten()?
            .parse()
            .ok()
    }

    /// Remembers (or, with `None`, forgets) the synced revision of session `id`.
    ///
    /// # Errors
    /// localStorage is unavailable or full: the next sync then treats the session as never
    /// synced, which at worst shows a conflict that loses nothing.
    pub fn set(&self, id: &str, revision: Option<u64>) -> Result<(), BrowserError> {
        let storage = local_storage().ok_or_else(|| {
            BrowserError::Unavailable("localStorage is unavailable here".to_string())
        })?;
        let key = format!("{}{id}", self.prefix);
        match revision {
            Some(revision) => storage.set_item(&key, &revision.to_string()),
            None => storage.remove_item(&key),
        }
        .map_err(|e| {
            BrowserError::Storage(format!(
                "the synced revision could not be kept ({})",
                js_message(&e)
            ))
        })
    }
}

/// What a sync did to one session.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionSync {
    /// Both copies were already the same.
    InSync,
    /// This browser's turns were sent to the server.
    Pushed,
    /// Another device's turns were written here: a host that has the session open reloads it.
    Pulled,
    /// Both this browser and another device wrote since they were last the same: the person
    /// chooses ([`SyncClient::resolve_conflict`]). Nothing is sent until then.
    Conflict,
    /// Another device deleted the session on the server, and this browser had nothing the
    /// server lacked: it was deleted here too.
    DeletedHere,
    /// Another device deleted the session on the server while this browser held turns it
    /// never sent: the session was uploaded again rather than lose them.
    Restored,
}

/// What [`SyncClient::sync_all`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    /// Each session that changed on either side, and how.
    pub sessions: BTreeMap<String, SessionSync>,
    /// Sessions that could not be synced (damaged records, a refusal), one sentence each;
    /// the others were synced regardless.
    pub failures: Vec<(String, String)>,
}

impl SyncReport {
    /// The sessions in conflict.
    pub fn conflicts(&self) -> BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|(_, outcome)| **outcome == SessionSync::Conflict)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// This browser's sessions kept in sync with one server and one account (the token's).
pub struct SyncClient {
    remote: RemoteStore<FetchTransport>,
    revisions: SyncedRevisions,
    deleted_key: String,
}

/// Whether a failure means the server could not be reached (as opposed to a refusal).
pub fn is_unreachable(error: &BrowserError) -> bool {
    matches!(error, BrowserError::Unavailable(_))
}

impl SyncClient {
    /// A client of the server at `base_url` with the bearer `token`.
    ///
    /// # Errors
    /// An address that is not an http(s) URL, or an empty token.
    pub fn new(base_url: &str, token: &str) -> Result<SyncClient, BrowserError> {
        let transport = FetchTransport::new(base_url, token)?;
        let revisions = SyncedRevisions::for_server(transport.base_url());
        let deleted_key = format!("{DELETED_PREFIX}{}", transport.base_url());
        Ok(SyncClient {
            remote: RemoteStore::new(transport),
            revisions,
            deleted_key,
        })
    }

    /// The server's copy, as a record store.
    pub fn remote(&self) -> &RemoteStore<FetchTransport> {
        &self.remote
    }

    /// The synced revisions this client keeps.
    pub fn revisions(&self) -> &SyncedRevisions {
        &self.revisions
    }

    /// Whether the last request got no answer (see [`FetchTransport::unreachable`]).
    pub fn unreachable(&self) -> bool {
        self.remote.transport().unreachable()
    }

    /// Checks that the server answers and takes the token: one list request.
    ///
    /// # Errors
    /// The server cannot be reached, or refuses the token.
    pub async fn check(&self) -> Result<usize, BrowserError> {
        Ok(self.remote.rows().await?.0.len())
    }

    /// Sends what a local save just wrote (`batch`, already stored here as session `id`).
    /// When the server is at the revision the batch builds on, that is one request with the
    /// same batch; otherwise (a first save, turns saved while offline, a failed earlier push)
    /// the session is synced as a whole with [`SyncClient::sync_session`].
    ///
    /// # Errors
    /// As [`SyncClient::sync_session`].
    pub async fn push_saved(
        &self,
        local: &BrowserStore,
        id: &str,
        batch: &WriteBatch,
    ) -> Result<SessionSync, BrowserError> {
        let synced = self.revisions.get(id);
        if synced.is_some() && synced == Some(batch.base_revision) {
            let mode = WriteMode::Save {
                now_ms: js_sys::Date::now(),
            };
            match self.remote.write(id, batch, mode).await {
                Ok(row) => {
                    self.revisions.set(id, Some(row.header.revision))?;
                    return Ok(SessionSync::Pushed);
                }
                // Refused: another device wrote, or the server lost the session; the whole
                // comparison says which. An unreachable server is reported as it is.
                Err(StoreError::Conflict(_)) | Err(StoreError::NotFound { .. }) => {}
                Err(other) => return Err(other.into()),
            }
        }
        self.sync_session(local, id).await
    }

    /// Brings session `id`'s two copies together: pushes what only this browser has, pulls
    /// what only the server has, or reports a conflict.
    ///
    /// # Errors
    /// [`BrowserError::Unavailable`] when the server cannot be reached or refuses the token;
    /// another failure of either store, or records that cannot be read.
    pub async fn sync_session(
        &self,
        local: &BrowserStore,
        id: &str,
    ) -> Result<SessionSync, BrowserError> {
        let (local_rows, _) = local.rows().await?;
        let (remote_rows, _) = self.remote.rows().await?;
        let local_row = local_rows.into_iter().find(|row| row.id == id);
        let remote_row = remote_rows.into_iter().find(|row| row.id == id);
        if local_row.is_none() && remote_row.is_none() {
            return Ok(SessionSync::InSync);
        }
        self.sync_rows(local, id, local_row.as_ref(), remote_row.as_ref())
            .await
    }

    /// Syncs every session of either side, after sending the deletions made here while the
    /// server could not be reached. One session's failure does not stop the others; an
    /// unreachable server stops the whole sync. `skip` names sessions to leave for later,
    /// asked just before each one is synced (a host skips the session a turn is running in,
    /// whose save syncs it next).
    ///
    /// # Errors
    /// [`BrowserError::Unavailable`] when the server cannot be reached or refuses the token,
    /// or a failure to list this browser's sessions.
    pub async fn sync_all(
        &self,
        local: &BrowserStore,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<SyncReport, BrowserError> {
        let pending = self.pending_deletes();
        for id in &pending {
            match self.remote.delete(id).await {
                Ok(()) | Err(StoreError::NotFound { .. }) => self.forget_delete(id),
                Err(error) => return Err(error.into()),
            }
        }
        let (local_rows, _) = local.rows().await?;
        let (remote_rows, _) = self.remote.rows().await?;
        let mut rows: BTreeMap<String, (Option<SessionRow>, Option<SessionRow>)> = BTreeMap::new();
        for row in local_rows {
            let id = row.id.clone();
            rows.entry(id).or_default().0 = Some(row);
        }
        for row in remote_rows {
            let id = row.id.clone();
            rows.entry(id).or_default().1 = Some(row);
        }
        let mut report = SyncReport::default();
        for (id, (local_row, remote_row)) in rows {
            if skip(&id) {
                continue;
            }
            match self
                .sync_rows(local, &id, local_row.as_ref(), remote_row.as_ref())
                .await
            {
                Ok(SessionSync::InSync) => {}
                Ok(outcome) => {
                    report.sessions.insert(id, outcome);
                }
                Err(error) if is_unreachable(&error) => return Err(error),
                Err(error) => report.failures.push((id, error.to_string())),
            }
        }
        Ok(report)
    }

    async fn sync_rows(
        &self,
        local: &BrowserStore,
        id: &str,
        local_row: Option<&SessionRow>,
        remote_row: Option<&SessionRow>,
    ) -> Result<SessionSync, BrowserError> {
        let synced = self.revisions.get(id);
        let outcome = store_sync::sync_session(
            local,
            &self.remote,
            id,
            local_row,
            remote_row,
            synced,
            js_sys::Date::now(),
        )
        .await?;
        match outcome {
            SyncOutcome::InSync { revision } => {
                if synced != Some(revision) {
                    self.revisions.set(id, Some(revision))?;
                }
                Ok(SessionSync::InSync)
            }
            SyncOutcome::Pushed { revision, .. } => {
                self.revisions.set(id, Some(revision))?;
                Ok(SessionSync::Pushed)
            }
            SyncOutcome::Pulled { revision, .. } => {
                self.revisions.set(id, Some(revision))?;
                Ok(SessionSync::Pulled)
            }
            SyncOutcome::Conflict(conflict) => {
                let (Some(local_row), Some(remote_row)) = (local_row, remote_row) else {
                    return self.deleted_on_server(local, id, local_row, synced).await;
                };
                if self.same_records(local, id, local_row, remote_row).await? {
                    // A push whose answer was lost (the connection dropped after the server
                    // stored it): both sides hold the same revision with the same records.
                    self.revisions.set(id, Some(conflict.local_revision))?;
                    return Ok(SessionSync::InSync);
                }
                Ok(SessionSync::Conflict)
            }
        }
    }

    /// A session another device deleted on the server: deleted here too when this browser
    /// has nothing the server lacked, uploaded again when it does.
    async fn deleted_on_server(
        &self,
        local: &BrowserStore,
        id: &str,
        local_row: Option<&SessionRow>,
        synced: Option<u64>,
    ) -> Result<SessionSync, BrowserError> {
        let Some(local_row) = local_row else {
            self.revisions.set(id, None)?;
            return Ok(SessionSync::InSync);
        };
        if synced == Some(local_row.header.revision) {
            local.delete(id).await?;
            self.revisions.set(id, None)?;
            return Ok(SessionSync::DeletedHere);
        }
        let outcome = store_sync::sync_session(
            local,
            &self.remote,
            id,
            Some(local_row),
            None,
            None,
            js_sys::Date::now(),
        )
        .await?;
        self.revisions.set(id, outcome.synced_revision())?;
        Ok(SessionSync::Restored)
    }

    /// Whether two copies that both moved on from the synced revision hold the same records
    /// after all: the same header (revision included) and the same newest messages.
    async fn same_records(
        &self,
        local: &BrowserStore,
        id: &str,
        local_row: &SessionRow,
        remote_row: &SessionRow,
    ) -> Result<bool, BrowserError> {
        if local_row.header != remote_row.header {
            return Ok(false);
        }
        let to = local_row.header.next_seq;
        let from = to.saturating_sub(16);
        let (here, _) = local.messages_between(id, from, to).await?;
        let (there, _) = self.remote.messages_between(id, from, to).await?;
        Ok(here == there)
    }

    /// Resolves a conflict on session `id`: this browser's version is kept as a new session
    /// named `branch_name`, and the server's version takes the session's place here. Returns
    /// the branch's id; the host sends the branch to the server next
    /// ([`SyncClient::sync_session`]), or the next sync does. Which of the two the
    /// person continues in is the host's choice: the server's version ("load the other
    /// device's") or the branch ("keep this device's as a branch").
    ///
    /// # Errors
    /// A failure of either store; when the fork fails nothing was changed, when the
    /// replacement fails the branch holds this browser's version.
    pub async fn resolve_conflict(
        &self,
        local: &BrowserStore,
        id: &str,
        branch_name: &str,
    ) -> Result<String, BrowserError> {
        let branch = new_session_id();
        let now = js_sys::Date::now();
        store_sync::fork(local, local, id, &branch, branch_name, now).await?;
        store_sync::replace(&self.remote, local, id, now).await?;
        let (rows, _) = local.rows().await?;
        let revision = rows
            .iter()
            .find(|row| row.id == id)
            .map(|row| row.header.revision);
        self.revisions.set(id, revision)?;
        Ok(branch)
    }

    /// Deletes session `id` on the server too (it was deleted here). While the server cannot
    /// be reached, the deletion waits in localStorage for the next [`SyncClient::sync_all`],
    /// which sends it before it could pull the session back.
    ///
    /// # Errors
    /// A refusal by the server other than "not found".
    pub async fn delete(&self, id: &str) -> Result<(), BrowserError> {
        self.revisions.set(id, None)?;
        self.remember_delete(id);
        match self.remote.delete(id).await {
            Ok(()) | Err(StoreError::NotFound { .. }) => {
                self.forget_delete(id);
                Ok(())
            }
            Err(StoreError::Unavailable(_)) if self.unreachable() => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Renames session `id` on the server too. A name is not part of the session's
    /// revisions, so a rename made while the server cannot be reached stays on this device.
    ///
    /// # Errors
    /// The server cannot be reached, or refused.
    pub async fn rename(&self, id: &str, name: &str) -> Result<(), BrowserError> {
        match self.remote.rename(id, name, js_sys::Date::now()).await {
            Ok(()) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// The ids deleted here and not yet on the server, one per line (ids hold no line breaks:
    /// they are made by `new_session_id` or by another device's).
    fn pending_deletes(&self) -> BTreeSet<String> {
        local_storage()
            .and_then(|s| s.get_item(&self.deleted_key).ok().flatten())
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    fn write_pending(&self, pending: &BTreeSet<String>) {
        if let Some(storage) = local_storage() {
            let text: Vec<&str> = pending.iter().map(String::as_str).collect();
            let _ = if pending.is_empty() {
                storage.remove_item(&self.deleted_key)
            } else {
                storage.set_item(&self.deleted_key, &text.join("\n"))
            };
        }
    }

    fn remember_delete(&self, id: &str) {
        let mut pending = self.pending_deletes();
        pending.insert(id.to_string());
        self.write_pending(&pending);
    }

    fn forget_delete(&self, id: &str) {
        let mut pending = self.pending_deletes();
        if pending.remove(id) {
            self.write_pending(&pending);
        }
    }
}
