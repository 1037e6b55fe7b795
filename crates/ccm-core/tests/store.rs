//! The record layout: incremental saves, lazy loading, repair of unreadable records, and the
//! revision check that keeps two writers from losing each other's turns.

use ccm_core::compaction::AttachmentKind;
use ccm_core::persistence::WriteBatch;
use ccm_core::{EventKind, LogState, Session, SnapshotError};
use ccm_test_support::memory_store::MemoryStore;
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, session, turn};
use std::sync::Arc;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn save(session: &mut Session, store: &mut MemoryStore) -> WriteBatch {
    let batch = session.write_batch().expect("between turns");
    store.apply(&batch).expect("no other writer");
    session.mark_saved(&batch).expect("the batch just taken");
    batch
}

fn open(store: &MemoryStore) -> (Session, ccm_core::persistence::LoadReport) {
    let counter = session().counter().clone();
    Session::from_store(store.load(), counter).expect("header readable")
}

/// A session with history: concluded efforts, ambient chat, an open effort; saved after every
/// turn.
fn saved_session(rounds: usize) -> (Session, MemoryStore) {
    let mut s = session();
    let mut store = MemoryStore::default();
    for round in 0..rounds {
        let name = format!(
            "task {}",
            ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"][round % 6]
        );
        let name = format!("{name} {round}");
        turn(
            &mut s,
            &format!("Let's work on {name}."),
            &[("open_effort", &format!(r#"{{"name": "{name}"}}"#))],
            "Started.",
        );
        save(&mut s, &mut store);
        turn(
            &mut s,
            "The cache misses on cold start.",
            &[],
            "Warm it at boot.",
        );
        save(&mut s, &mut store);
        turn(
            &mut s,
            "Done.",
            &[(
                "close_effort",
                &format!(r#"{{"summary": "{name}: warmed the cache at boot."}}"#),
            )],
            "Concluded.",
        );
        save(&mut s, &mut store);
        chatter(&mut s);
        save(&mut s, &mut store);
    }
    turn(
        &mut s,
        "Start guild.",
        &[("open_effort", r#"{"name": "guild"}"#)],
        "ok",
    );
    save(&mut s, &mut store);
    (s, store)
}

portable_tests! {
    fn a_turn_writes_only_what_it_changed_however_long_the_history() {
        let (mut short, mut short_store) = saved_session(2);
        let (mut long, mut long_store) = saved_session(60);
        for (s, store) in [(&mut short, &mut short_store), (&mut long, &mut long_store)] {
            let report = turn(s, "guild ranks and permissions", &[], "Officers can invite.");
            let batch = save(s, store);
            // The header, the guild effort (its log grew), any effort whose summary left working
            // memory in this turn, two messages, one metrics point and one telemetry entry.
            let mut changed: Vec<&str> = vec!["guild"];
            changed.extend(report.metrics.events.iter().filter(|e| e.kind == ccm_core::EventKind::Evicted).map(|e| e.effort.as_str()));
            changed.sort_unstable();
            let mut written: Vec<&str> = batch.efforts.iter().map(|e| e.effort.id.as_str()).collect();
            written.sort_unstable();
            assert_eq!(written, changed);
            assert_eq!(batch.record_count(), 5 + changed.len(), "{batch:#?}");
            assert_eq!(batch.telemetry.len(), 1);
            assert_eq!(batch.messages.len(), 2);
            assert!(batch.efforts.iter().all(|e| e.effort.messages.is_empty()), "effort records never carry messages");
        }
        // Nothing changed: nothing but the header to write.
        assert_eq!(long.write_batch().unwrap().record_count(), 1);
    }

    fn opening_reads_only_the_working_set_and_behaves_like_the_original() {
        let (original, store) = saved_session(40);
        let (opened, report) = open(&store);
        assert!(report.is_clean(), "{:?}", report.problems);
        assert!(opened.build_plan().to_json() == original.build_plan().to_json(), "same plan");
        // Concluded logs stay on disk; the open one and the ambient tail are loaded.
        assert!(opened.efforts().all().iter().filter(|e| e.status == ccm_core::EffortStatus::Concluded).all(|e| e.log != LogState::Loaded));
        assert_eq!(opened.efforts().get("guild").unwrap().log, LogState::Loaded);
        assert_eq!(opened.ambient().messages().len(), 20);
        assert_eq!(opened.ambient().offset(), original.ambient().messages().len() as u64 - 20);
        assert!(!opened.is_fully_loaded());
        assert!(opened.to_json().unwrap_err().to_string().contains("only partly loaded"));
        // Both continue identically.
        let mut a = original;
        let mut b = opened;
        for s in [&mut a, &mut b] {
            turn(s, "Members need ranks.", &[], "Add a rank column.");
        }
        assert!(a.build_plan().to_json() == b.build_plan().to_json(), "same plan after a turn");
        assert_eq!(a.history().points().last(), b.history().points().last());
    }

    fn a_concluded_log_is_loaded_on_demand_for_expand_and_reopen() {
        let (original, store) = saved_session(3);
        let (mut opened, _) = open(&store);
        let id = "task-alpha-0";
        assert_eq!(ccm_core::tools::logs_needed(opened.efforts(), "expand_effort", &format!(r#"{{"id": "{id}"}}"#)), [id]);
        assert_eq!(ccm_core::tools::logs_needed(opened.efforts(), "expand_effort", r#"{"id": "Task Alpha 0"}"#), [id]);
        assert!(ccm_core::tools::logs_needed(opened.efforts(), "switch_effort", r#"{"id": "guild"}"#).is_empty());
        opened.begin_turn("Show me alpha.", 0).unwrap();
        let refused = opened.execute_tool("expand_effort", &format!(r#"{{"id": "{id}"}}"#));
        assert!(!refused.ok);
        assert!(refused.result["error"].as_str().unwrap().contains("is stored but not loaded"));
        opened.attach_effort_log(id, store.effort_log(id)).unwrap();
        let expanded = opened.execute_tool("expand_effort", &format!(r#"{{"id": "{id}"}}"#));
        assert!(expanded.ok, "{}", expanded.result);
        assert_eq!(expanded.result["tokens_loaded"], original.efforts().get(id).unwrap().raw_tokens);
        let plan = opened.build_plan();
        let item = plan.included.iter().find(|i| i.id == format!("effort:{id}")).unwrap();
        let shown: Vec<&str> = plan.messages[item.first_message + 1..item.first_message + item.message_count].iter().map(|m| m.content.as_str()).collect();
        let stored: Vec<&str> = original.efforts().get(id).unwrap().messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(shown, stored, "the expanded log is the stored one, byte for byte");
        opened.end_turn("Here it is.", 0).unwrap();
    }

    fn a_log_that_does_not_match_its_record_is_refused() {
        let (original, store) = saved_session(2);
        let (mut opened, _) = open(&store);
        // More messages than the record holds, or the same number out of order, are not the
        // log the record describes.
        let mut log = store.effort_log("task-alpha-0");
        log.push(original.ambient().messages()[0].clone());
        let error = opened.attach_effort_log("task-alpha-0", log).unwrap_err().to_string();
        assert!(error.contains("has 7 messages"), "{error}");
        let mut log = store.effort_log("task-alpha-0");
        log.swap(0, 1);
        let error = opened.attach_effort_log("task-alpha-0", log).unwrap_err().to_string();
        assert!(error.contains("not in sequence order"), "{error}");
        assert!(opened.efforts().get("task-alpha-0").unwrap().log != LogState::Loaded);
    }

    fn missing_records_are_reported_on_load_kept_as_they_are_and_exported() {
        let (mut s, mut store) = saved_session(3);
        for (name, text) in [("audit.md", "The audit covers billing exports."), ("roster.md", "Ana, Bo and Cy are on the roster.")] {
            s.begin_turn(&format!("Here is {name}."), 0).unwrap();
            s.attach(name, AttachmentKind::File, text, None).unwrap();
            s.end_turn("Got it.", 0).unwrap();
        }
        save(&mut s, &mut store);
        let counter = s.counter().clone();
        let full = s.to_document().unwrap();
        let alpha = full.efforts.iter().find(|e| e.id == "task-alpha-0").unwrap();
        let lost_effort_message = alpha.messages[2].seq;
        let lost_ambient = full.ambient[0].seq;
        // With att-1 gone, what bounds its message is the attachment after it.
        let next_attachment_turn = s.attachments().by_id()["att-2"].message_turn;
        store.forget_message(lost_effort_message).unwrap();
        store.forget_message(lost_ambient).unwrap();
        store.forget_attachment("att-1").unwrap();

        let (mut opened, report) = open(&store);
        let problems = report.problems.join("\n");
        assert!(problems.contains(&format!("1 of the {} ambient messages are missing from storage", full.ambient.len())), "{problems}");
        let alpha_turns = format!("turns {} to {}", alpha.opened_turn, alpha.concluded_turn.unwrap());
        assert!(problems.contains(&format!("effort 'task-alpha-0' (\"{}\", {alpha_turns}): 1 of its {} messages are missing from storage", alpha.name, alpha.messages.len())), "{problems}");
        assert!(problems.contains(&format!("attachment 'att-1' (attached to a message of turns 0 to {next_attachment_turn}) is missing from storage")), "{problems}");
        assert!(!problems.contains("att-2"), "{problems}");
        assert!(opened.attachments().by_id().contains_key("att-2"), "the readable attachment is kept");

        // The concluded log, loaded when it is expanded, shows what is readable and says what
        // is not, instead of refusing the expansion.
        let missing = opened.attach_effort_log("task-alpha-0", store.effort_log("task-alpha-0")).unwrap();
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].contains(&format!("the {} readable ones are shown", alpha.messages.len() - 1)), "{missing:?}");
        opened.begin_turn("Show me alpha.", 0).unwrap();
        let expanded = opened.execute_tool("expand_effort", r#"{"id": "task-alpha-0"}"#);
        assert!(expanded.ok, "{}", expanded.result);
        opened.end_turn("Here it is.", 0).unwrap();
        assert_eq!(opened.build_plan().totals.context_tokens, opened.working_tokens());

        // A save writes nothing in the missing records' places, and the next load reports them
        // again.
        save(&mut opened, &mut store);
        assert!(store.message_mut(lost_ambient).is_none());
        assert!(store.message_mut(lost_effort_message).is_none());
        let (_, again) = open(&store);
        for needle in ["ambient messages are missing", "effort 'task-alpha-0'", "attachment 'att-1'"] {
            assert!(again.problems.iter().any(|p| p.contains(needle)), "{needle}: {:?}", again.problems);
        }

        // The export takes out everything readable, says what is missing, and imports.
        let exported = store.export_repaired(Vec::new(), counter.clone()).unwrap();
        let repairs = exported.repairs.join("\n");
        assert!(repairs.contains("attachment 'att-1'"), "{repairs}");
        assert!(repairs.contains(&format!("message {lost_ambient} could not be read")), "{repairs}");
        assert!(repairs.contains(&format!("message {lost_effort_message} could not be read")), "{repairs}");
        assert_eq!(exported.attachments.iter().map(|a| a.attachment.id.as_str()).collect::<Vec<_>>(), ["att-2"]);
        let imported = Session::from_json_with_counter(&serde_json::to_string(&exported).unwrap(), counter.clone()).unwrap();
        assert_eq!(imported.attachments().by_id()["att-2"].attachment.full_text, "Ana, Bo and Cy are on the roster.");

        // An attachment whose effort lost its record and every message still goes out, in an
        // open effort of that name.
        let guild = full.efforts.iter().position(|e| e.id == "guild").unwrap() as u64;
        let guild_messages: Vec<u64> = store.effort_log("guild").iter().map(|m| m.seq).collect();
        store.forget_effort(guild).unwrap();
        for seq in guild_messages {
            store.forget_message(seq);
        }
        let exported = store.export_repaired(Vec::new(), counter.clone()).unwrap();
        assert!(exported.repairs.iter().any(|r| r.contains("its attachment 'att-2' is kept")), "{:?}", exported.repairs);
        let imported = Session::from_json_with_counter(&serde_json::to_string(&exported).unwrap(), counter).unwrap();
        assert!(imported.efforts().get("guild").is_some());
        assert_eq!(imported.attachments().by_id()["att-2"].attachment.full_text, "Ana, Bo and Cy are on the roster.");
    }

    fn an_unreadable_record_is_reported_and_the_session_still_opens() {
        let (original, mut store) = saved_session(3);
        let guild_first = original.efforts().get("guild").unwrap().messages[0].seq;
        store.forget_message(guild_first).unwrap();
        let mut records = store.load();
        records.unreadable.push("message 7: invalid JSON".to_string());
        let counter = original.counter().clone();
        let (opened, report) = Session::from_store(records, counter).unwrap();
        assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
        assert_eq!(report.problems[0], "message 7: invalid JSON");
        assert!(report.problems[1].contains("effort 'guild': 1 of 2 messages could be read"), "{:?}", report.problems);
        assert_eq!(opened.efforts().active_id(), Some("guild"));
        let plan = opened.build_plan();
        assert_eq!(plan.totals.context_tokens, opened.working_tokens());
        assert!(Session::from_store(Default::default(), original.counter().clone()).is_err(), "no header, no session");
    }

    fn a_store_with_open_efforts_and_none_active_opens_repaired_and_reports_it() {
        let (original, store) = saved_session(2);
        let mut records = store.load();
        records.header.as_mut().unwrap().active = None;
        let (opened, report) = Session::from_store(records, original.counter().clone()).unwrap();
        assert_eq!(opened.efforts().active_id(), Some("guild"));
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(report.problems[0].contains("none was active; 'guild', the most recently opened, is now active"), "{:?}", report.problems);
        // A wrong id is reported, and the same repair gives routing its active effort.
        let mut records = store.load();
        records.header.as_mut().unwrap().active = Some("no-such-effort".to_string());
        let (opened, report) = Session::from_store(records, original.counter().clone()).unwrap();
        assert_eq!(opened.efforts().active_id(), Some("guild"));
        assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
        assert!(report.problems[0].contains("'no-such-effort' is not an open effort"), "{:?}", report.problems);
    }

    fn a_save_never_lands_on_an_effort_record_that_could_not_be_read() {
        // The bug this pins: after a load that skipped an unreadable effort record, the efforts
        // behind it moved up one place and the next save wrote one of them into the damaged
        // record's position, so that effort was gone for good and another had two records.
        let (original, mut store) = saved_session(3);
        let before = store.load().efforts;
        let damaged = before[1].clone();
        let load_without_damaged = |store: &MemoryStore| {
            let mut records = store.load();
            records.efforts.retain(|r| r.position != damaged.position);
            records.unreadable.push(format!("effort record {} could not be read", damaged.position));
            records
        };
        let counter = original.counter().clone();
        let (mut opened, report) = Session::from_store(load_without_damaged(&store), counter.clone()).unwrap();
        assert!(report.problems.iter().any(|p| p.contains(&format!("record {} stays stored", damaged.position))), "{:?}", report.problems);
        // Change every effort record: a new effort, and the open one concluded.
        turn(&mut opened, "Done with guild.", &[("close_effort", r#"{"summary": "guild: settled the roster."}"#)], "Concluded.");
        turn(&mut opened, "Next: the audit.", &[("open_effort", r#"{"name": "audit"}"#)], "Started.");
        let batch = save(&mut opened, &mut store);
        assert!(!batch.efforts.is_empty());
        assert!(batch.efforts.iter().all(|r| r.position != damaged.position), "a record was written at the damaged position");

        let after = store.load().efforts;
        assert_eq!(after.iter().find(|r| r.position == damaged.position), Some(&damaged), "the damaged record is kept as it was");
        for record in &before {
            let now = after.iter().find(|r| r.position == record.position).unwrap();
            assert_eq!(now.effort.id, record.effort.id, "record {} changed hands", record.position);
        }
        let mut ids: Vec<&str> = after.iter().map(|r| r.effort.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), after.len(), "no effort has two records");
        assert_eq!(after.len(), before.len() + 1);

        // Still damaged on the next load, and still reported; the rest opens as saved.
        let (reopened, report) = Session::from_store(load_without_damaged(&store), counter).unwrap();
        assert!(report.problems.iter().any(|p| p.contains(&format!("{} of {} effort records could be read", before.len(), before.len() + 1))), "{:?}", report.problems);
        assert_eq!(reopened.efforts().active_id(), Some("audit"));
        assert!(reopened.efforts().get(&damaged.effort.id).is_none());
        assert_eq!(reopened.efforts().all().len(), before.len());
    }

    fn a_damaged_store_still_exports_everything_readable_and_the_export_imports() {
        let (original, mut store) = saved_session(3);
        let counter = original.counter().clone();
        // Undamaged, the repairing export is the ordinary export, byte for byte.
        assert_eq!(
            serde_json::to_string(&store.export_repaired(Vec::new(), counter.clone()).unwrap()).unwrap(),
            serde_json::to_string(&store.export().unwrap()).unwrap()
        );
        let full = original.to_document().unwrap();
        // Damage: a concluded effort's message, an ambient message, and a whole effort record
        // (its messages stay stored).
        let concluded = &full.efforts[0];
        let lost_effort_message = concluded.messages[1].seq;
        let lost_ambient = full.ambient[0].seq;
        store.forget_message(lost_effort_message).unwrap();
        store.forget_message(lost_ambient).unwrap();
        let lost_record = store.forget_effort(1).unwrap();
        assert!(store.export().is_err(), "the strict export refuses damaged records");

        let repaired = store
            .export_repaired(vec!["effort record 1 could not be read".to_string()], counter.clone())
            .unwrap();
        let repairs = repaired.repairs.join("\n");
        assert!(repairs.starts_with("effort record 1 could not be read"), "{repairs}");
        assert!(repairs.contains(&format!("message {lost_effort_message} could not be read")), "{repairs}");
        assert!(repairs.contains(&format!("message {lost_ambient} could not be read")), "{repairs}");
        assert!(repairs.contains(&format!("the record of effort '{}'", lost_record.effort.id)), "{repairs}");

        // Every readable message is in the export with its text, each seq exactly once.
        let mut exported: Vec<(u64, String)> = repaired
            .ambient
            .iter()
            .chain(repaired.efforts.iter().flat_map(|e| e.messages.iter()))
            .map(|m| (m.seq, m.content.clone()))
            .collect();
        exported.sort();
        let originals: Vec<(u64, String)> = {
            let mut all: Vec<(u64, String)> = full
                .ambient
                .iter()
                .chain(full.efforts.iter().flat_map(|e| e.messages.iter()))
                .map(|m| (m.seq, m.content.clone()))
                .collect();
            all.sort();
            all
        };
        assert_eq!(exported.len(), originals.len());
        for ((seq, text), (original_seq, original_text)) in exported.iter().zip(&originals) {
            assert_eq!(seq, original_seq);
            if *seq == lost_effort_message || *seq == lost_ambient {
                assert!(text.contains("could not be read"), "{text}");
            } else {
                assert_eq!(text, original_text);
            }
        }
        let recovered = repaired.efforts.iter().find(|e| e.id == lost_record.effort.id).unwrap();
        assert_eq!(recovered.messages.len() as u64, lost_record.message_count);

        // And it imports, and exports again to the same document.
        let json = serde_json::to_string(&repaired).unwrap();
        let imported = Session::from_json_with_counter(&json, counter).unwrap();
        let mut again = imported.to_document().unwrap();
        again.repairs = repaired.repairs.clone();
        assert_eq!(serde_json::to_string(&again).unwrap(), json);
    }

    fn two_writers_cannot_lose_each_others_turns() {
        let (_, mut store) = saved_session(2);
        let (mut first, _) = open(&store);
        let (mut second, _) = open(&store);
        turn(&mut first, "first tab writes", &[], "ok");
        turn(&mut second, "second tab writes", &[], "ok");
        save(&mut first, &mut store);
        let batch = second.write_batch().unwrap();
        let error = store.apply(&batch).unwrap_err();
        assert!(matches!(error, SnapshotError::Inconsistent(_)));
        assert!(error.to_string().contains("the session changed in another window"), "{error}");
        // The refused batch changed nothing: the store still holds the first tab's turn only.
        let (reloaded, _) = open(&store);
        assert!(reloaded.efforts().get("guild").unwrap().messages.iter().any(|m| m.content == "first tab writes"));
        assert!(!reloaded.efforts().get("guild").unwrap().messages.iter().any(|m| m.content == "second tab writes"));
        // The second tab's turn is still pending in memory, so nothing is lost there either.
        assert_eq!(second.write_batch().unwrap().messages.len(), 2);
        assert!(second.mark_saved(&reloaded.write_batch().unwrap()).is_err());
    }

    fn a_failed_write_can_be_retried() {
        let (mut s, mut store) = saved_session(1);
        turn(&mut s, "guild bank", &[], "ok");
        let batch = s.write_batch().unwrap();
        // The backend failed (quota, say): the session was not told it was saved.
        let retry = s.write_batch().unwrap();
        assert_eq!(batch, retry);
        store.apply(&retry).unwrap();
        s.mark_saved(&retry).unwrap();
        assert_eq!(s.write_batch().unwrap().messages.len(), 0);
    }

    fn export_from_the_store_equals_the_session_document() {
        let (original, store) = saved_session(5);
        let document = store.export().unwrap();
        assert!(serde_json::to_string(&document).unwrap() == original.to_json().unwrap());
        let imported = Session::from_document(document, original.counter().clone()).unwrap();
        assert!(imported.to_json().unwrap() == original.to_json().unwrap());
        // An imported session is saved whole into a new store and opens from it.
        let mut fresh = MemoryStore::default();
        let full = imported.full_write_batch().unwrap();
        fresh.apply(&full).unwrap();
        let (reopened, report) = open(&fresh);
        assert!(report.is_clean());
        assert!(reopened.build_plan().to_json() == original.build_plan().to_json(), "same plan");
    }

    fn saving_is_refused_mid_turn() {
        let (mut s, _) = saved_session(1);
        s.begin_turn("x", 0).unwrap();
        assert!(s.write_batch().is_err());
        assert!(s.full_write_batch().is_err());
        let _ = Arc::clone(s.counter());
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_turn_made_while_a_save_is_in_flight_stays_pending() {
    let (mut s, mut store) = saved_session(1);
    turn(&mut s, "first", &[], "ok");
    let in_flight = s.write_batch().unwrap();
    // Another turn happens before the backend confirms the first save.
    turn(&mut s, "second", &[], "ok");
    store.apply(&in_flight).unwrap();
    s.mark_saved(&in_flight).unwrap();
    let next = s.write_batch().unwrap();
    let contents: Vec<&str> = next
        .messages
        .iter()
        .map(|m| m.message.content.as_str())
        .collect();
    assert_eq!(
        contents,
        ["second", "ok"],
        "the second turn is still to be saved"
    );
    assert_eq!(next.metrics.len(), 1);
    assert_eq!(next.efforts.len(), 1, "the guild effort changed again");
    store.apply(&next).unwrap();
    s.mark_saved(&next).unwrap();
    let (reopened, report) = open(&store);
    assert!(report.is_clean());
    assert!(reopened.build_plan().to_json() == s.build_plan().to_json());
}

portable_tests! {
    fn effort_operations_between_turns_are_saved_with_the_next_save() {
        let mut s = session();
        ccm_test_support::concluded_effort(&mut s, "auth bug", "Fixed 401 errors: the refresh token TTL was 1h, now 24h.", 1);
        let mut store = MemoryStore::default();
        save(&mut s, &mut store);
        // The app's buttons between turns: they show on the last turn's metrics point.
        s.expand_effort("auth-bug").unwrap();
        s.collapse_effort("auth-bug").unwrap();
        let batch = save(&mut s, &mut store);
        assert_eq!(batch.metrics.len(), 1, "the amended point is written again");
        let (opened, report) = open(&store);
        assert!(report.is_clean(), "{:?}", report.problems);
        let kinds: Vec<EventKind> = opened.history().points().last().unwrap().events.iter().map(|e| e.kind).collect();
        assert!(kinds.ends_with(&[EventKind::Expanded, EventKind::Collapsed]), "{kinds:?}");
        assert_eq!(opened.history().points(), s.history().points());
        assert!(save(&mut s, &mut store).metrics.is_empty(), "nothing new, nothing written");
    }

    fn an_operation_made_while_a_batch_is_written_stays_pending() {
        let mut s = session();
        ccm_test_support::concluded_effort(&mut s, "auth bug", "Fixed 401 errors: the refresh token TTL was 1h, now 24h.", 1);
        let mut store = MemoryStore::default();
        save(&mut s, &mut store);
        s.expand_effort("auth-bug").unwrap();
        let batch = s.write_batch().unwrap();
        s.collapse_effort("auth-bug").unwrap();
        store.apply(&batch).unwrap();
        s.mark_saved(&batch).unwrap();
        save(&mut s, &mut store);
        let (opened, _) = open(&store);
        let kinds: Vec<EventKind> = opened.history().points().last().unwrap().events.iter().map(|e| e.kind).collect();
        assert!(kinds.ends_with(&[EventKind::Expanded, EventKind::Collapsed]), "{kinds:?}");
    }
}
