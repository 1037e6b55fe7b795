//! The session cell: a core session with what the browser adds to it (the stored session it
//! belongs to, what opening it had to skip, and whether a save or a turn of it is running).

use crate::error::BrowserError;
use crate::storage::Backend;
use ccm_core::Session as CoreSession;
use ccm_store::RecordStore;
use std::cell::{RefCell, RefMut};
use std::rc::Rc;

/// Where a stored session lives.
pub struct StoreLink {
    pub(crate) backend: Rc<Backend>,
    /// Its id in the store.
    pub id: String,
}

/// The state behind a [`BrowserSession`], shared with the futures of a save and of a turn,
/// which outlive one call.
pub struct SessionCell {
    /// The core session.
    pub core: CoreSession,
    /// What is running that must not be interleaved with changes (`"a save"`, `"a turn"`).
    pub busy: Option<&'static str>,
    /// The stored session this one was opened from or saved as.
    pub link: Option<StoreLink>,
    /// What opening this session from storage had to skip or repair, one sentence each.
    pub load_problems: Vec<String>,
}

/// A session in the browser: cheap to clone (clones share the one session).
#[derive(Clone)]
pub struct BrowserSession {
    cell: Rc<RefCell<SessionCell>>,
}

impl BrowserSession {
    /// A session linked to a stored one (or to none), with what its loading skipped.
    pub(crate) fn from_parts(
        core: CoreSession,
        link: Option<StoreLink>,
        load_problems: Vec<String>,
    ) -> BrowserSession {
        BrowserSession {
            cell: Rc::new(RefCell::new(SessionCell {
                core,
                busy: None,
                link,
                load_problems,
            })),
        }
    }

    /// A session kept in memory only (until a store saves it as a new stored session).
    /// What opening `core` from a document repaired is reported like a store's load problems.
    pub fn from_core(core: CoreSession) -> BrowserSession {
        let repairs = core.repairs_on_open().to_vec();
        BrowserSession::from_parts(core, None, repairs)
    }

    /// The shared cell, for hosts whose futures must hold the session across awaits.
    pub fn cell(&self) -> &Rc<RefCell<SessionCell>> {
        &self.cell
    }

    /// The cell for a change or a query, or [`BrowserError::Busy`] while another call on this
    /// session has not returned (a token counter callback calling back into its session).
    ///
    /// # Errors
    /// [`BrowserError::Busy`] as above.
    pub fn borrow_cell(&self) -> Result<RefMut<'_, SessionCell>, BrowserError> {
        self.cell.try_borrow_mut().map_err(|_| {
            BrowserError::busy(
                "the session is in use by a call that has not returned (a token counter callback must not call back into its session)",
            )
        })
    }

    /// Runs `f` on the core session, for hosts that drive it directly.
    ///
    /// # Panics
    /// When called from inside another call on the same session (a token counter callback).
    pub fn with_core<R>(&self, f: impl FnOnce(&mut CoreSession) -> R) -> R {
        f(&mut self.cell.borrow_mut().core)
    }

    /// The id of the stored session this one was opened from or saved as.
    pub fn store_id(&self) -> Option<String> {
        self.cell.borrow().link.as_ref().map(|link| link.id.clone())
    }

    /// What opening this session from storage had to skip or repair.
    pub fn problems(&self) -> Vec<String> {
        self.cell.borrow().load_problems.clone()
    }

    /// Reads the stored records a tool call needs (the log of the effort `expand_effort` or
    /// `reopen_effort` names, the messages a `search_efforts` or `recall` shows, and the rest
    /// of the recall index) into a session opened from storage, so that the call can run.
    /// Does nothing when they are loaded or the session is not stored.
    ///
    /// # Errors
    /// A storage failure, or a stored log that does not match its effort record.
    pub async fn load_logs_for(&self, name: &str, args_json: &str) -> Result<(), BrowserError> {
        load_logs_for_tool(&self.cell, name, args_json).await
    }

    /// Completes the recall index of a session opened from storage and reads the messages the
    /// automatic recall shows (see [`prepare_recall`]).
    ///
    /// # Errors
    /// A storage failure, or stored records that do not match the session.
    pub async fn prepare_recall(&self) -> Result<(), BrowserError> {
        prepare_recall(&self.cell).await
    }
}

/// Reads the logs a tool call needs into a stored session (see
/// [`BrowserSession::load_logs_for`]); for hosts that hold the cell across awaits.
///
/// # Errors
/// A storage failure, or a stored log that does not match its effort record.
pub async fn load_logs_for_tool(
    cell: &Rc<RefCell<SessionCell>>,
    name: &str,
    args_json: &str,
) -> Result<(), BrowserError> {
    prepare_recall(cell).await?;
    let (efforts, messages) = {
        let cell = cell.borrow();
        (
            ccm_core::tools::logs_needed(cell.core.efforts(), name, args_json),
            cell.core.messages_needed_for_tool(name, args_json),
        )
    };
    load_records(cell, &efforts, None, &messages).await
}

/// Reads everything a load of the turn driver names (`Step::Load`) from the session's store
/// and hands it to the session: raw logs, a step of the recall index's rebuild, and the
/// messages recalled excerpts show. A session that is not linked to a store has all of them in
/// memory.
///
/// # Errors
/// A storage failure, or stored records that do not match the session.
pub async fn load_records(
    cell: &Rc<RefCell<SessionCell>>,
    efforts: &[String],
    index: Option<ccm_core::session::IndexRequest>,
    messages: &[u64],
) -> Result<(), BrowserError> {
    load_effort_logs(cell, efforts).await?;
    let Some((backend, id)) = cell
        .borrow()
        .link
        .as_ref()
        .map(|link| (link.backend.clone(), link.id.clone()))
    else {
        return Ok(());
    };
    if let Some(request) = index {
        let (stored, unreadable) = backend
            .messages_between(&id, request.from_seq, request.to_seq)
            .await?;
        let mut cell = cell.borrow_mut();
        cell.load_problems.extend(unreadable);
        let problems = cell.core.index_stored_messages(request, stored)?;
        cell.load_problems.extend(problems);
    }
    if !messages.is_empty() {
        let (stored, unreadable) = backend.messages_by_seq(&id, messages).await?;
        let mut cell = cell.borrow_mut();
        cell.load_problems.extend(unreadable);
        cell.core.attach_recalled_messages(stored)?;
    }
    Ok(())
}

/// Completes the recall index of a session opened from a store, step by step (each step reads
/// at most `ccm_core::session::INDEX_CHUNK` messages), and reads the messages the automatic
/// recall of a turn in progress shows. Opening a session reads only its working set; a host
/// calls this afterwards (the app does it in the background, the turn driver before a
/// request) so that search and the automatic recall see every stored message.
///
/// # Errors
/// A storage failure, or stored records that do not match the session.
pub async fn prepare_recall(cell: &Rc<RefCell<SessionCell>>) -> Result<(), BrowserError> {
    loop {
        // The borrow ends with this statement: a `while let` would hold it through the body,
        // where the records are handed to the session.
        let request = cell.borrow().core.recall_state().index_request();
        let Some(request) = request else {
            break;
        };
        load_records(cell, &[], Some(request), &[]).await?;
    }
    let needed = cell.borrow().core.messages_needed_for_plan();
    load_records(cell, &[], None, &needed).await
}

/// Reads the raw logs of `efforts` from the session's store and attaches them (the turn
/// driver's `Step::Load`). A session that is not linked to a store has every log in memory, so
/// there is nothing to read.
///
/// # Errors
/// A storage failure, or a stored log that does not match its effort record.
pub async fn load_effort_logs(
    cell: &Rc<RefCell<SessionCell>>,
    efforts: &[String],
) -> Result<(), BrowserError> {
    let (backend, id) = match (&cell.borrow().link, efforts.is_empty()) {
        (Some(link), false) => (link.backend.clone(), link.id.clone()),
        _ => return Ok(()),
    };
    for effort in efforts {
        let (messages, unreadable) = backend.effort_log(&id, effort).await?;
        let mut cell = cell.borrow_mut();
        cell.load_problems.extend(unreadable);
        // A log with messages missing from storage is attached as far as it is readable; what
        // is missing joins the session's load problems.
        let missing = cell.core.attach_effort_log(effort, messages)?;
        cell.load_problems.extend(missing);
    }
    Ok(())
}
