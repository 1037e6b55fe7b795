//! Two devices keeping one conversation through the real server: `ccm_store::sync` with each
//! device's local copy in a store of its own (a PostgreSQL schema standing in for the app's
//! IndexedDB, which the browser tests cover) and the server over HTTP. Push, pull, a device
//! offline for 50 turns, a conflict resolved both ways, a session deleted on another device:
//! every message checked, nothing lost, nothing duplicated.

mod common;

use ccm_core::Session;
use ccm_server::Limits;
use ccm_store::conformance::{counter_for, new_session, scripted_turn, SuiteError};
use ccm_store::postgres::{PostgresOptions, PostgresStore};
use ccm_store::sync::{fork, replace, sync_session, SyncOutcome};
use ccm_store::{sessions, RecordStore, SessionRow};
use common::{block_on, unique_schema, url, TestServer};

/// A device: its local store, its view of the server, and the synced revision per session.
struct Device<R> {
    local: PostgresStore,
    remote: R,
    synced: std::collections::BTreeMap<String, u64>,
}

impl<R: RecordStore> Device<R> {
    async fn new(remote: R) -> Device<R> {
        let local = PostgresStore::connect(
            &url(),
            PostgresOptions {
                schema: unique_schema("device"),
                pool_size: 2,
                ..PostgresOptions::default()
            },
        )
        .await
        .expect("a local store");
        Device {
            local,
            remote,
            synced: Default::default(),
        }
    }

    async fn row(store: &impl RecordStore, id: &str) -> Option<SessionRow> {
        let (rows, _) = store.rows().await.expect("a list");
        rows.into_iter().find(|row| row.id == id)
    }

    /// Syncs one session and remembers the synced revision.
    async fn sync(&mut self, id: &str) -> SyncOutcome {
        let local_row = Self::row(&self.local, id).await;
        let remote_row = Self::row(&self.remote, id).await;
        let outcome = sync_session(
            &self.local,
            &self.remote,
            id,
            local_row.as_ref(),
            remote_row.as_ref(),
            self.synced.get(id).copied(),
            1.0,
        )
        .await
        .unwrap_or_else(|e| panic!("syncing {id}: {e}"));
        if let Some(revision) = outcome.synced_revision() {
            self.synced.insert(id.to_string(), revision);
        }
        outcome
    }

    /// Takes turns `turns` on the local copy, saving each locally.
    async fn take_turns(&self, id: &str, turns: std::ops::Range<u64>) {
        let (mut session, _, _) = sessions::open::<_, SuiteError>(&self.local, id, counter_for)
            .await
            .unwrap_or_else(|e| panic!("opening {id} locally: {e}"));
        for n in turns {
            scripted_turn(&mut session, n);
            sessions::save::<_, SuiteError>(&self.local, id, &mut session, n as f64)
                .await
                .unwrap_or_else(|e| panic!("saving turn {n} locally: {e}"));
        }
    }

    async fn create(&self, id: &str, turns: u64) {
        let mut session = new_session();
        sessions::insert::<_, SuiteError>(&self.local, id, &mut session, id, 1.0, true)
            .await
            .expect("a local session");
        self.take_turns(id, 0..turns).await;
    }
}

/// The messages of a stored session as (seq, role, content), in order.
async fn messages(store: &impl RecordStore, id: &str) -> Vec<(u64, String, String)> {
    let records = store.read_all(id).await.expect("every record");
    assert!(records.unreadable.is_empty(), "{:?}", records.unreadable);
    records
        .messages
        .iter()
        .map(|m| {
            (
                m.message.seq,
                format!("{:?}", m.message.role),
                m.message.content.clone(),
            )
        })
        .collect()
}

/// What a turn-by-turn session of `turns` turns holds, made without any store.
fn expected(turns: std::ops::Range<u64>, base: Option<Session>) -> Vec<(u64, String, String)> {
    let mut session = base.unwrap_or_else(new_session);
    for n in turns {
        scripted_turn(&mut session, n);
    }
    let document: serde_json::Value =
        serde_json::from_str(&session.to_json().expect("a document")).expect("json");
    let mut all: Vec<(u64, String, String)> = Vec::new();
    let mut take = |list: &serde_json::Value| {
        for m in list.as_array().into_iter().flatten() {
            let role = match m["role"].as_str().unwrap() {
                "user" => "User",
                "assistant" => "Assistant",
                other => other,
            };
            all.push((
                m["seq"].as_u64().unwrap(),
                role.to_string(),
                m["content"].as_str().unwrap().to_string(),
            ));
        }
    };
    take(&document["ambient"]);
    for effort in document["efforts"].as_array().into_iter().flatten() {
        take(&effort["messages"]);
    }
    all.sort();
    all
}

#[test]
fn a_turn_on_one_device_reaches_the_other_and_an_offline_device_catches_up() {
    let server = TestServer::start("sync", Limits::default());
    let token = server.token("gina").token;
    block_on(async {
        let mut laptop = Device::new(server.store(&token)).await;
        let mut phone = Device::new(server.store(&token)).await;

        laptop.create("talk", 6).await;
        let pushed = laptop.sync("talk").await;
        assert!(
            matches!(pushed, SyncOutcome::Pushed { revision: 7, .. }),
            "{pushed:?}"
        );
        // The phone has never seen it: the whole session comes down.
        let pulled = phone.sync("talk").await;
        assert!(
            matches!(pulled, SyncOutcome::Pulled { revision: 7, .. }),
            "{pulled:?}"
        );
        assert_eq!(messages(&phone.local, "talk").await, expected(0..6, None));
        assert_eq!(
            phone.sync("talk").await,
            SyncOutcome::InSync { revision: 7 }
        );

        // One turn on the phone, pushed as one batch; the laptop pulls just that turn.
        phone.take_turns("talk", 6..7).await;
        let pushed = phone.sync("talk").await;
        assert!(
            matches!(pushed, SyncOutcome::Pushed { revision: 8, .. }),
            "{pushed:?}"
        );
        let pulled = laptop.sync("talk").await;
        let SyncOutcome::Pulled {
            revision: 8,
            records,
        } = pulled
        else {
            panic!("{pulled:?}")
        };
        assert!(records < 12, "a pull of one turn wrote {records} records");
        assert_eq!(messages(&laptop.local, "talk").await, expected(0..7, None));

        // A push that was stored but whose answer was lost: the synced revision is behind on
        // both sides, yet the two hold the same session, which is no conflict.
        laptop.take_turns("talk", 7..8).await;
        let batch = ccm_store::sync::catch_up_batch(
            &laptop.local,
            "talk",
            Some(
                &Device::<ccm_store::remote::RemoteStore<ccm_server::client::HttpTransport>>::row(
                    &laptop.remote,
                    "talk",
                )
                .await
                .unwrap()
                .header,
            ),
        )
        .await
        .unwrap();
        laptop
            .remote
            .write("talk", &batch, ccm_store::WriteMode::Save { now_ms: 3.0 })
            .await
            .unwrap();
        assert_eq!(
            laptop.sync("talk").await,
            SyncOutcome::InSync { revision: 9 }
        );
        assert!(matches!(
            phone.sync("talk").await,
            SyncOutcome::Pulled { revision: 9, .. }
        ));

        // The laptop goes offline for 50 turns, then syncs once.
        laptop.take_turns("talk", 8..57).await;
        let pushed = laptop.sync("talk").await;
        assert!(
            matches!(pushed, SyncOutcome::Pushed { revision: 58, .. }),
            "{pushed:?}"
        );
        let pulled = phone.sync("talk").await;
        assert!(
            matches!(pulled, SyncOutcome::Pulled { revision: 58, .. }),
            "{pulled:?}"
        );
        let want = expected(0..57, None);
        assert_eq!(messages(&server.store(&token), "talk").await, want);
        assert_eq!(messages(&phone.local, "talk").await, want);
        assert_eq!(messages(&laptop.local, "talk").await, want);
        // The copies open to the same working context as the laptop's own session.
        let (on_phone, _, problems) =
            sessions::open::<_, SuiteError>(&phone.local, "talk", counter_for)
                .await
                .unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let (on_laptop, _, _) = sessions::open::<_, SuiteError>(&laptop.local, "talk", counter_for)
            .await
            .unwrap();
        assert_eq!(on_phone.header(), on_laptop.header());
    });
}

#[test]
fn two_devices_that_both_wrote_get_a_conflict_and_either_choice_keeps_every_turn() {
    let server = TestServer::start("conflict", Limits::default());
    let token = server.token("hugo").token;
    block_on(async {
        let mut laptop = Device::new(server.store(&token)).await;
        let mut phone = Device::new(server.store(&token)).await;
        laptop.create("plan", 4).await;
        laptop.sync("plan").await;
        phone.sync("plan").await;

        // Both take turns from revision 5: the laptop syncs first and wins.
        laptop.take_turns("plan", 4..6).await;
        phone.take_turns("plan", 100..103).await;
        assert!(matches!(
            laptop.sync("plan").await,
            SyncOutcome::Pushed { .. }
        ));
        let conflict = phone.sync("plan").await;
        let SyncOutcome::Conflict(found) = &conflict else {
            panic!("{conflict:?}")
        };
        assert_eq!(found.synced_revision, Some(5));
        assert_eq!(found.local_revision, 8);
        assert_eq!(found.remote_revision, Some(7));
        // Nothing was written on either side by finding the conflict.
        assert_eq!(
            messages(&server.store(&token), "plan").await.len(),
            expected(0..6, None).len()
        );

        let mine = messages(&phone.local, "plan").await;
        let theirs = messages(&server.store(&token), "plan").await;
        // Choice 1, "load the other device's version": this device's version is kept as a
        // branch first (locally and on the server), then the session takes the server's.
        fork(
            &phone.local,
            &phone.local,
            "plan",
            "plan-branch",
            "plan ⎇ phone",
            2.0,
        )
        .await
        .unwrap();
        replace(&phone.remote, &phone.local, "plan", 2.0)
            .await
            .unwrap();
        phone.synced.insert("plan".to_string(), 7);
        assert_eq!(
            phone.sync("plan").await,
            SyncOutcome::InSync { revision: 7 }
        );
        assert!(matches!(
            phone.sync("plan-branch").await,
            SyncOutcome::Pushed { .. }
        ));
        assert_eq!(messages(&phone.local, "plan").await, theirs);
        assert_eq!(messages(&phone.local, "plan-branch").await, mine);
        assert_eq!(messages(&server.store(&token), "plan-branch").await, mine);
        // The laptop sees the branch appear.
        assert!(matches!(
            laptop.sync("plan-branch").await,
            SyncOutcome::Pulled { .. }
        ));
        let (rows, _) = phone.local.rows().await.unwrap();
        let branch = rows.iter().find(|r| r.id == "plan-branch").unwrap();
        assert_eq!(branch.name, "plan ⎇ phone");

        // Choice 2, "keep this device's turns as a branch": the same two steps, and the
        // person continues in the branch; again both versions are kept.
        phone.take_turns("plan", 200..201).await;
        laptop.take_turns("plan", 6..7).await;
        assert!(matches!(
            laptop.sync("plan").await,
            SyncOutcome::Pushed { .. }
        ));
        assert!(matches!(phone.sync("plan").await, SyncOutcome::Conflict(_)));
        let mine = messages(&phone.local, "plan").await;
        fork(
            &phone.local,
            &phone.local,
            "plan",
            "plan-2",
            "plan ⎇ phone 2",
            3.0,
        )
        .await
        .unwrap();
        replace(&phone.remote, &phone.local, "plan", 3.0)
            .await
            .unwrap();
        let stored =
            Device::<ccm_store::remote::RemoteStore<ccm_server::client::HttpTransport>>::row(
                &phone.remote,
                "plan",
            )
            .await
            .unwrap();
        phone
            .synced
            .insert("plan".to_string(), stored.header.revision);
        assert!(matches!(
            phone.sync("plan-2").await,
            SyncOutcome::Pushed { .. }
        ));
        phone.take_turns("plan-2", 201..202).await;
        assert!(matches!(
            phone.sync("plan-2").await,
            SyncOutcome::Pushed { .. }
        ));
        let kept = messages(&server.store(&token), "plan-2").await;
        assert!(
            kept.starts_with(&mine),
            "the branch lost this device's turns"
        );
        assert_eq!(
            messages(&server.store(&token), "plan").await,
            messages(&laptop.local, "plan").await
        );
    });
}

#[test]
fn a_session_deleted_on_another_device_is_not_pushed_back_silently() {
    let server = TestServer::start("deleted", Limits::default());
    let token = server.token("iris").token;
    block_on(async {
        let mut laptop = Device::new(server.store(&token)).await;
        laptop.create("old", 3).await;
        laptop.sync("old").await;
        server.store(&token).delete("old").await.unwrap();
        let outcome = laptop.sync("old").await;
        let SyncOutcome::Conflict(found) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(found.remote_revision, None);
        // The local copy is untouched.
        assert_eq!(messages(&laptop.local, "old").await, expected(0..3, None));
    });
}
