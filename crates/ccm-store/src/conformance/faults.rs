//! The suite's cases for what crashed and concurrent processes leave behind: a save killed
//! while it held the session's lock or before its commit, a change or a delete that meets a
//! save in flight, storage damaged so that a whole session cannot be read, temporary files,
//! and healthy sessions after failed operations.
//!
//! Each backend's harness fakes the crashes its storage can have ([`Fault`]) and says in one
//! line why it cannot have the others ([`Injected::CannotExist`]); the case then checks the
//! part that applies (the save after it, the race, the listing) on storage without the fault,
//! so no case is skipped without a word.

use super::{
    counter, document_json, export, fail, join, new_session, now_ms, open, saved_conversation,
    scripted_turn, Check, Harness, SuiteError,
};
use crate::backend::RecordStore;
use crate::sessions;
use ccm_core::Session;

/// What a crashed or concurrent process can leave in a backend's storage. A harness leaves
/// each one the way its storage would hold it ([`Harness::inject`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The session's lock, as a process that died while holding it left it (the file store:
    /// an owner file naming a process id that no longer runs).
    LockOfDeadProcess,
    /// The session's lock, left by a process whose id another process has since been given
    /// (the file store: an owner file naming a running process with another start time).
    LockOfReusedProcessId,
    /// The mark of a lock takeover that died half-way (the file store: `<owner>.break` of a
    /// process that no longer runs), beside a lock of a dead process.
    InterruptedLockTakeover,
    /// A save that died after writing part of its records and before its commit, with the
    /// temporary files it had made.
    SaveKilledBeforeCommit,
}

impl Fault {
    /// Every fault, in the order the crash case injects them.
    pub const ALL: [Fault; 4] = [
        Fault::LockOfDeadProcess,
        Fault::LockOfReusedProcessId,
        Fault::InterruptedLockTakeover,
        Fault::SaveKilledBeforeCommit,
    ];
}

/// Whether a harness could leave a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injected {
    /// The fault is in the storage now.
    Done,
    /// This backend's storage cannot hold the fault; the sentence says why (for the report).
    CannotExist(&'static str),
}

impl Injected {
    /// The answer of a backend whose every write is one transaction of its storage (IndexedDB,
    /// PostgreSQL, a record table whose write is one call): the storage takes the locks and
    /// rolls back a write whose process died, so no crash leaves anything behind.
    pub fn transactional(fault: Fault) -> Injected {
        Injected::CannotExist(match fault {
            Fault::SaveKilledBeforeCommit => {
                "a write is one transaction, which the storage rolls back whole when its process dies"
            }
            _ => "the storage holds the locks of a write and lets them go when its process dies",
        })
    }
}

/// The damage every store of records under keys can have: a row that is not a row.
pub const ROW_DAMAGE: &str = "the row is not a row";

/// The properties of this module, with what each means; [`super::PROPERTIES`] lists them
/// after the others.
pub(super) const PROPERTIES: [(&str, &str); 6] = [
    (
        "crashed_save_leftovers",
        "after each crash a backend can leave, the next save goes through at once, two concurrent saves are never both acknowledged, and no acknowledged turn is lost",
    ),
    (
        "change_during_save",
        "a change that is half made when a save runs is refused whole or saved whole, never stored half-done",
    ),
    (
        "delete_during_save",
        "a delete meeting a save in flight wins or is refused with a clear error; the session never comes back and no raw OS error shows",
    ),
    (
        "damage_listed",
        "every kind of damage that makes a whole session unreadable is listed as damaged, and opening it gives a clear error",
    ),
    (
        "no_orphaned_temporaries",
        "no temporary file outlives a crashed or concurrent save once the storage is opened again",
    ),
    (
        "healthy_never_damaged",
        "a healthy session is never listed or opened as damaged, also after refused, failed and crashed operations",
    ),
];

/// Runs this module's properties, in the order of [`PROPERTIES`], and says for each fault
/// whether the backend's storage could hold it (the report's lines, so that a case that ran
/// without a fault says so).
pub(super) async fn run<H: Harness>(harness: &mut H) -> (Vec<(&'static str, Check)>, Vec<String>) {
    let mut notes = Vec::new();
    let results = vec![
        (
            PROPERTIES[0].0,
            crashed_save_leftovers(harness, &mut notes).await,
        ),
        (PROPERTIES[1].0, change_during_save(harness).await),
        (PROPERTIES[2].0, delete_during_save(harness).await),
        (PROPERTIES[3].0, damage_listed(harness).await),
        (
            PROPERTIES[4].0,
            no_orphaned_temporaries(harness, &mut notes).await,
        ),
        (PROPERTIES[5].0, healthy_never_damaged(harness).await),
    ];
    (results, notes)
}

/// How long a save after a crash may take: a lock a dead process left must be seen as stale
/// at once, not after the wait for a live holder (30 seconds).
const AFTER_CRASH_LIMIT_MS: f64 = 5_000.0;

/// Words of an operating system's error that must never reach a person unexplained.
const RAW_OS_ERRORS: [&str; 5] = ["ENOTEMPTY", "EEXIST", "ENOENT", "os error", "EBUSY"];

fn raw_os_error(message: &str) -> Option<&'static str> {
    RAW_OS_ERRORS.into_iter().find(|raw| message.contains(raw))
}

/// The listing and the opening of session `id` find it healthy: listed without damage,
/// opened without problems, exported without repairs.
async fn healthy<S: RecordStore>(store: &S, id: &str, after: &str) -> Check {
    let listed = sessions::list(store)
        .await
        .or_else(|e| fail(&format!("listing {after}"), e))?;
    let entry = listed
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| format!("{after}, session {id} is not listed"))?;
    ensure!(
        entry.damaged.is_none(),
        "{after}, the healthy session {id} is listed as damaged: {:?}",
        entry.damaged
    );
    let (_, problems) = open(store, id)
        .await
        .or_else(|e| fail(&format!("opening {id} {after}"), e))?;
    ensure!(
        problems.is_empty(),
        "{after}, the healthy session {id} opened with problems: {problems:?}"
    );
    let exported = export(store, id)
        .await
        .or_else(|e| fail(&format!("exporting {id} {after}"), e))?;
    ensure!(
        exported.repairs.is_empty(),
        "{after}, the healthy session {id} exported with repairs: {:?}",
        exported.repairs
    );
    Ok(())
}

/// One round of two handles saving one revision at once: exactly one is acknowledged, the
/// other refused as a conflict, and the stored session holds the winner's turn and not the
/// loser's. `first` decides which handle's save is polled first.
async fn one_winner<S: RecordStore>(a: &S, b: &S, id: &str, round: u64, first: bool) -> Check {
    let (mut left, _) = open(a, id).await.or_else(|e| fail("opening A", e))?;
    let (mut right, _) = open(b, id).await.or_else(|e| fail("opening B", e))?;
    let texts = [format!("A's turn {round}"), format!("B's turn {round}")];
    for (session, text) in [(&mut left, &texts[0]), (&mut right, &texts[1])] {
        session
            .begin_turn(text, 1_800_000_000_000)
            .or_else(|e| fail("a turn", e))?;
        session
            .end_turn("acknowledged", 1_800_000_000_001)
            .or_else(|e| fail("a turn", e))?;
    }
    let (ra, rb) = if first {
        join(
            sessions::save::<_, SuiteError>(a, id, &mut left, now_ms(300 + round)),
            sessions::save::<_, SuiteError>(b, id, &mut right, now_ms(300 + round)),
        )
        .await
    } else {
        let (rb, ra) = join(
            sessions::save::<_, SuiteError>(b, id, &mut right, now_ms(300 + round)),
            sessions::save::<_, SuiteError>(a, id, &mut left, now_ms(300 + round)),
        )
        .await;
        (ra, rb)
    };
    let acknowledged: Vec<u64> = [&ra, &rb]
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|report| report.revision))
        .collect();
    ensure!(
        acknowledged.len() == 1,
        "round {round}: {} of two concurrent saves were acknowledged (revisions {acknowledged:?})",
        acknowledged.len()
    );
    for refused in [&ra, &rb].into_iter().filter_map(|r| r.as_ref().err()) {
        ensure!(
            refused.code() == Some("conflict"),
            "round {round}: the refused save failed with {refused} instead of a conflict"
        );
    }
    let winner = usize::from(ra.is_err());
    let stored = export(a, id).await.or_else(|e| fail("exporting", e))?;
    // The turns may be stored in an effort's log as well as in ambient chat.
    let users: Vec<&str> = stored
        .ambient
        .iter()
        .chain(stored.efforts.iter().flat_map(|e| e.messages.iter()))
        .filter(|m| m.role == ccm_core::Role::User)
        .map(|m| m.content.as_str())
        .collect();
    ensure!(
        users.contains(&texts[winner].as_str()),
        "round {round}: the acknowledged turn {:?} is not stored",
        texts[winner]
    );
    ensure!(
        !users.contains(&texts[1 - winner].as_str()),
        "round {round}: the refused turn {:?} was stored",
        texts[1 - winner]
    );
    ensure!(
        stored.repairs.is_empty(),
        "round {round}: the stored session needs repairs: {:?}",
        stored.repairs
    );
    Ok(())
}

async fn crashed_save_leftovers<H: Harness>(harness: &mut H, notes: &mut Vec<String>) -> Check {
    for fault in Fault::ALL {
        let store = harness.fresh().await;
        let id = "crashed";
        saved_conversation(&store, id, 3).await?;
        // Where the storage cannot hold the fault, the rest runs on storage without it: the
        // save after it and the races are the part of the case that applies.
        notes.push(match harness.inject(&store, id, fault).await {
            Injected::Done => format!("{fault:?}: injected"),
            Injected::CannotExist(why) => format!("{fault:?}: cannot exist here: {why}"),
        });
        // What another process opens after the crash: it must not wait for the dead one.
        let next = harness.second_handle(&store).await;
        let (mut session, _) = open(&next, id)
            .await
            .or_else(|e| fail(&format!("opening after {fault:?}"), e))?;
        scripted_turn(&mut session, 3);
        let started = harness.clock_ms();
        sessions::save::<_, SuiteError>(&next, id, &mut session, now_ms(3))
            .await
            .or_else(|e| fail(&format!("the save after {fault:?}"), e))?;
        let took = harness.clock_ms() - started;
        let blocked = took.total_cmp(&AFTER_CRASH_LIMIT_MS).is_ge();
        ensure!(
            !blocked,
            "the save after {fault:?} took {took:.0} ms: a dead process's lock blocked it"
        );
        let other = harness.second_handle(&store).await;
        for round in 0..4 {
            one_winner(&next, &other, id, round, round % 2 == 0)
                .await
                .map_err(|e| format!("after {fault:?}: {e}"))?;
        }
        healthy(&other, id, &format!("after {fault:?} and the races")).await?;
    }
    Ok(())
}

async fn change_during_save<H: Harness>(harness: &mut H) -> Check {
    // `sessions::save` holds the session mutably until the store has answered, so in Rust no
    // change can be made while a save is in flight; what a host can still do is save a session
    // whose change is half made (a turn begun, not ended). That save must refuse the change
    // whole, store nothing of it, and store it whole once it is complete.
    let store = harness.fresh().await;
    let id = "in-flight";
    let mut session = saved_conversation(&store, id, 4).await?;
    let before = document_json(&export(&store, id).await.or_else(|e| fail("export", e))?);
    session
        .begin_turn(
            "the second half of this turn is not there yet",
            1_800_000_000_000,
        )
        .or_else(|e| fail("beginning a turn", e))?;
    match sessions::save::<_, SuiteError>(&store, id, &mut session, now_ms(4)).await {
        Err(SuiteError::Turn(_)) => {}
        Err(e) => return fail("saving a half-made turn failed with another error", e),
        Ok(_) => return Err("a save stored a turn that was only begun".into()),
    }
    let after = document_json(&export(&store, id).await.or_else(|e| fail("export", e))?);
    ensure!(
        after == before,
        "the refused save of a half-made turn changed the stored session"
    );
    session
        .end_turn("now it is whole", 1_800_000_000_001)
        .or_else(|e| fail("ending the turn", e))?;
    sessions::save::<_, SuiteError>(&store, id, &mut session, now_ms(5))
        .await
        .or_else(|e| fail("saving the whole turn", e))?;
    let reader = harness.second_handle(&store).await;
    let stored = export(&reader, id).await.or_else(|e| fail("export", e))?;
    let expected = session.to_json().or_else(|e| fail("the document", e))?;
    ensure!(
        document_json(&stored) == expected,
        "the completed turn was not stored whole"
    );
    Ok(())
}

/// The failure of a save that met a delete: a refusal that says the session was deleted,
/// never a raw error of the operating system.
fn clear_refusal(round: usize, error: &SuiteError) -> Check {
    let message = error.to_string();
    if let Some(raw) = raw_os_error(&message) {
        return Err(format!(
            "round {round}: a save meeting a delete failed with a raw {raw}: {message}"
        ));
    }
    ensure!(
        matches!(error.code(), Some("conflict" | "not_found")),
        "round {round}: a save meeting a delete failed with {message} instead of a conflict"
    );
    ensure!(
        message.contains("deleted"),
        "round {round}: a save refused because of a delete does not say so: {message}"
    );
    Ok(())
}

async fn delete_during_save<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    let deleter = harness.second_handle(&store).await;
    for round in 0..6 {
        let id = format!("deleted-{round}");
        let mut session = saved_conversation(&store, &id, 3).await?;
        if round >= 4 {
            // A crash's remains must not make the delete fail (a directory that is not empty).
            let _ = harness
                .inject(&store, &id, Fault::SaveKilledBeforeCommit)
                .await;
        }
        scripted_turn(&mut session, 3);
        let saving = sessions::save::<_, SuiteError>(&store, &id, &mut session, now_ms(3));
        let deleting = deleter.delete(&id);
        let (saved, deleted) = if round % 2 == 0 {
            join(saving, deleting).await
        } else {
            let (deleted, saved) = join(deleting, saving).await;
            (saved, deleted)
        };
        if let Err(e) = &deleted {
            if let Some(raw) = raw_os_error(&e.to_string()) {
                return Err(format!(
                    "round {round}: the delete failed with a raw {raw}: {e}"
                ));
            }
            return fail(&format!("round {round}: the delete during a save"), e);
        }
        if let Err(e) = &saved {
            clear_refusal(round, e)?;
        }
        // The delete wins either way: the session is gone and stays gone.
        let listed = sessions::list(&store)
            .await
            .or_else(|e| fail("listing", e))?;
        ensure!(
            !listed.iter().any(|s| s.id == id),
            "round {round}: a session deleted during a save is listed again"
        );
        match open(&deleter, &id).await {
            Err(e) if e.code() == Some("not_found") => {}
            Err(e) => return fail(&format!("round {round}: opening the deleted session"), e),
            Ok(_) => return Err(format!("round {round}: the deleted session opens again")),
        }
        // A later save of the old copy does not bring it back.
        scripted_turn(&mut session, 4);
        match sessions::save::<_, SuiteError>(&store, &id, &mut session, now_ms(4)).await {
            Ok(_) => {
                return Err(format!(
                    "round {round}: a save brought the deleted session back"
                ))
            }
            Err(e) => clear_refusal(round, &e)?,
        }
    }
    Ok(())
}

async fn damage_listed<H: Harness>(harness: &mut H) -> Check {
    let kinds = harness.damage_kinds();
    ensure!(
        !kinds.is_empty(),
        "the harness names no kind of damage (every backend can at least lose its row)"
    );
    for kind in kinds {
        let store = harness.fresh().await;
        saved_conversation(&store, "damaged", 8).await?;
        saved_conversation(&store, "healthy", 3).await?;
        harness.damage(&store, "damaged", &kind).await;
        let reader = harness.second_handle(&store).await;
        let listed = sessions::list(&reader)
            .await
            .or_else(|e| fail(&format!("listing after {kind}"), e))?;
        let entry = listed
            .iter()
            .find(|s| s.id == "damaged")
            .ok_or_else(|| format!("{kind}: the damaged session is not listed"))?;
        let Some(problem) = &entry.damaged else {
            return Err(format!("{kind}: the session is listed as healthy"));
        };
        ensure!(
            problem.contains("export"),
            "{kind}: the listing does not say the way out (an export): {problem}"
        );
        healthy(
            &reader,
            "healthy",
            &format!("after {kind} in another session"),
        )
        .await?;
        match open(&reader, "damaged").await {
            Err(e) => {
                ensure!(
                    e.code() == Some("storage"),
                    "{kind}: opening failed with {e} instead of a storage error"
                );
                if let Some(raw) = raw_os_error(&e.to_string()) {
                    return Err(format!("{kind}: opening failed with a raw {raw}: {e}"));
                }
            }
            Ok((_, problems)) => ensure!(
                !problems.is_empty(),
                "{kind}: the damaged session opens as if nothing were wrong"
            ),
        }
    }
    Ok(())
}

async fn no_orphaned_temporaries<H: Harness>(harness: &mut H, notes: &mut Vec<String>) -> Check {
    let store = harness.fresh().await;
    let id = "temporaries";
    saved_conversation(&store, id, 3).await?;
    let _ = harness
        .inject(&store, id, Fault::SaveKilledBeforeCommit)
        .await;
    let _ = harness
        .inject(&store, id, Fault::InterruptedLockTakeover)
        .await;
    let next = harness.second_handle(&store).await;
    let other = harness.second_handle(&store).await;
    for round in 0..3 {
        one_winner(&next, &other, id, round, round % 2 == 1).await?;
    }
    let reopened = harness.second_handle(&store).await;
    match harness.leftovers(&reopened) {
        Ok(left) => ensure!(
            left.is_empty(),
            "temporary files outlived the crashed and concurrent saves: {left:?}"
        ),
        // The crash and the races above still ran; the storage has no temporaries to leave.
        Err(why) => notes.push(format!("temporary files: none can exist here: {why}")),
    }
    healthy(&reopened, id, "after the temporaries were cleared").await
}

async fn healthy_never_damaged<H: Harness>(harness: &mut H) -> Check {
    let store = harness.fresh().await;
    let id = "healthy";
    let mut session = saved_conversation(&store, id, 6).await?;
    let other = harness.second_handle(&store).await;
    // A refused stale save.
    let (mut stale, _) = open(&other, id).await.or_else(|e| fail("opening", e))?;
    scripted_turn(&mut session, 6);
    sessions::save::<_, SuiteError>(&store, id, &mut session, now_ms(6))
        .await
        .or_else(|e| fail("saving", e))?;
    scripted_turn(&mut stale, 6);
    if sessions::save::<_, SuiteError>(&other, id, &mut stale, now_ms(6))
        .await
        .is_ok()
    {
        return Err("a stale save was accepted".into());
    }
    healthy(&other, id, "after a refused save").await?;
    // A refused creation over the id, and a refused save of a half-made turn.
    let mut intruder = new_session();
    scripted_turn(&mut intruder, 0);
    let _ = sessions::insert::<_, SuiteError>(&other, id, &mut intruder, "x", 0.0, false).await;
    session
        .begin_turn("half a turn", 1_800_000_000_000)
        .or_else(|e| fail("a turn", e))?;
    let _ = sessions::save::<_, SuiteError>(&store, id, &mut session, now_ms(7)).await;
    session
        .abort_turn()
        .or_else(|e| fail("aborting the turn", e))?;
    healthy(&other, id, "after a refused creation and a refused save").await?;
    // A crashed save, where the backend can have one; then the crash is not damage.
    let crashed = harness
        .inject(&store, id, Fault::SaveKilledBeforeCommit)
        .await;
    let reader = harness.second_handle(&store).await;
    let after = match crashed {
        Injected::Done => "after a save killed before its commit",
        Injected::CannotExist(_) => "after the operations above, read again",
    };
    healthy(&reader, id, after).await?;
    // And its export still imports as the same session.
    let exported = document_json(&export(&reader, id).await.or_else(|e| fail("export", e))?);
    Session::from_json_with_counter(&exported, counter())
        .or_else(|e| fail("importing the healthy session's export", e))?;
    Ok(())
}
