//! Every point at which a save can stop: a file system that dies at its k-th change (tearing
//! that write in half), for every k, and the checks that the committed revision is intact and
//! that the next writer, the same one retrying or another one, commits cleanly.

use super::fs::{Access, FileHandle, FileSystem, NativeFs};
use super::store::Store;
use crate::backend::WriteMode;
use ccm_core::compaction::AttachmentKind;
use ccm_core::snapshot::SessionDocument;
use ccm_core::tokens::{ApproximateCounter, TokenCounter};
use ccm_core::{Config, Session};
use std::cell::Cell;
use std::io;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// How many more changes the file system makes before it dies; shared by its files.
#[derive(Debug, Clone)]
struct Budget(Rc<Cell<Option<u64>>>);

impl Budget {
    /// Whether the next change may be made; at the one that exhausts the budget the process
    /// dies, and every call after it fails as well.
    fn spend(&self) -> io::Result<bool> {
        match self.0.get() {
            None => Err(io::Error::other("the process was killed")),
            Some(0) => {
                self.0.set(None);
                Ok(false)
            }
            Some(n) => {
                self.0.set(Some(n - 1));
                Ok(true)
            }
        }
    }

    fn alive(&self) -> io::Result<()> {
        match self.0.get() {
            Some(_) => Ok(()),
            None => Err(io::Error::other("the process was killed")),
        }
    }
}

fn killed() -> io::Error {
    io::Error::other("the process was killed")
}

#[derive(Debug)]
struct DyingFs {
    native: NativeFs,
    budget: Budget,
}

#[derive(Debug)]
struct DyingFile {
    native: <NativeFs as FileSystem>::File,
    budget: Budget,
}

impl FileHandle for DyingFile {
    fn size(&self) -> io::Result<u64> {
        self.budget.alive()?;
        self.native.size()
    }

    fn read_at(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        self.budget.alive()?;
        self.native.read_at(offset, len)
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.write_at(offset, bytes);
        }
        // Killed in the middle of the write: half of it reached the file.
        self.native.write_at(offset, &bytes[..bytes.len() / 2])?;
        Err(killed())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.truncate(len);
        }
        Err(killed())
    }

    fn sync(&self) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.sync();
        }
        Err(killed())
    }
}

impl FileSystem for DyingFs {
    type File = DyingFile;
    type Lock = <NativeFs as FileSystem>::Lock;

    fn open(&self, path: &str, access: Access) -> io::Result<Option<DyingFile>> {
        self.budget.alive()?;
        Ok(self.native.open(path, access)?.map(|native| DyingFile {
            native,
            budget: self.budget.clone(),
        }))
    }

    fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        self.budget.alive()?;
        self.native.read_file(path)
    }

    fn replace(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.replace(path, bytes);
        }
        Err(killed())
    }

    fn create_dir(&self, path: &str) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.create_dir(path);
        }
        Err(killed())
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.budget.alive()?;
        self.native.list_dir(path)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.rename(from, to);
        }
        Err(killed())
    }

    fn remove_tree(&self, path: &str) -> io::Result<()> {
        if self.budget.spend()? {
            return self.native.remove_tree(path);
        }
        Err(killed())
    }

    fn lock(&self, path: &str, exclusive: bool, create: bool) -> io::Result<Option<Self::Lock>> {
        self.budget.alive()?;
        self.native.lock(path, exclusive, create)
    }

    fn describe(&self, path: &str) -> String {
        self.native.describe(path)
    }

    fn process_tag(&self) -> String {
        self.native.process_tag()
    }
}

fn counter() -> Arc<dyn TokenCounter> {
    Arc::new(ApproximateCounter)
}

/// Turn `n`: with `tools`, an effort opened in turn 0 and concluded in turn 5, another
/// opened in turn 8 with an attachment; ambient talk otherwise.
fn turn(session: &mut Session, n: u64, words: &str, tools: bool) {
    let now = 1_700_000_000_000 + n * 60_000;
    session
        .begin_turn(&format!("{words} {n}"), now)
        .expect("between turns");
    match n {
        _ if !tools => {}
        0 => {
            session.execute_tool("open_effort", r#"{"name": "alpha work"}"#);
        }
        5 => {
            session.execute_tool("close_effort", r#"{"summary": "alpha: done in turn 5."}"#);
        }
        8 => {
            session.execute_tool("open_effort", r#"{"name": "beta work"}"#);
            session
                .attach(
                    "trace.log",
                    AttachmentKind::File,
                    &"a line\n".repeat(30),
                    None,
                )
                .expect("in a turn");
        }
        _ => {}
    }
    session
        .end_turn(&format!("answer {n}"), now + 1)
        .expect("in a turn");
}

fn native(dir: &Path) -> Store<NativeFs> {
    let store = Store {
        fs: NativeFs::new(dir.to_path_buf()),
    };
    store.prepare().expect("a store");
    store
}

/// Everything stored, as text, for comparing two readings.
fn stored_text(store: &Store<NativeFs>) -> String {
    let records = store.read_all("s").expect("the records");
    serde_json::to_string(&(
        records.row.expect("a row"),
        records.efforts,
        records.messages,
        records.metrics,
        records.attachments,
        records.unreadable,
    ))
    .expect("json")
}

fn export(store: &Store<NativeFs>) -> SessionDocument {
    let records = store.read_all("s").expect("the records");
    let header = records.row.expect("a row").header;
    SessionDocument::from_stored_records(
        header,
        records.efforts,
        records.messages,
        records.metrics,
        records.attachments,
        records.unreadable,
        counter(),
    )
    .expect("an export")
}

/// Opens the session as a host does and asserts that nothing needed repair.
fn open_clean(store: &Store<NativeFs>, what: &str) -> Session {
    let (_, records) = store.load("s").expect("a load");
    let (session, report) = Session::from_store(records, counter()).expect("opens");
    assert!(report.problems.is_empty(), "{what}: {:?}", report.problems);
    session
}

fn save<F: FileSystem>(store: &Store<F>, session: &mut Session) -> Result<(), crate::StoreError> {
    let batch = session.write_batch().expect("between turns");
    let now_ms = session.turn() as f64;
    store.write("s", &batch, WriteMode::Save { now_ms })?;
    session.mark_saved(&batch).expect("the batch just written");
    Ok(())
}

#[test]
fn a_save_stopped_at_any_point_leaves_the_last_revision_and_the_next_write_commits() {
    let root = std::env::temp_dir().join(format!("ccm-files-dying-{}", std::process::id()));
    let mut steps = 0;
    for k in 0.. {
        let dir = root.join(k.to_string());
        let store = native(&dir);
        let mut session = Session::with_counter(Config::default(), counter()).expect("a session");
        for n in 0..8 {
            turn(&mut session, n, "talk", true);
            if n == 0 {
                let batch = session.full_write_batch().expect("a batch");
                let mode = WriteMode::Create {
                    now_ms: 0.0,
                    name: "s".into(),
                };
                store.write("s", &batch, mode).expect("created");
                session.mark_saved(&batch).expect("saved");
            } else {
                save(&store, &mut session).expect("saved");
            }
        }
        let before = stored_text(&store);
        turn(&mut session, 8, "talk", true);
        let dying = Store {
            fs: DyingFs {
                native: NativeFs::new(dir.clone()),
                budget: Budget(Rc::new(Cell::new(Some(k)))),
            },
        };
        if save(&dying, &mut session).is_ok() {
            steps = k;
            break;
        }
        // Another process opens the directory after the death.
        let store = native(&dir);
        assert_eq!(stored_text(&store), before, "stopped at change {k}");
        open_clean(&store, &format!("opened after a stop at change {k}"));
        if k % 2 == 0 {
            // The same writer retries its pending batch.
            save(&store, &mut session).expect("the retry");
            let exported = serde_json::to_string(&export(&store)).expect("json");
            assert_eq!(
                exported,
                session.to_json().expect("the document"),
                "retry after {k}"
            );
        } else {
            // Another writer builds on the stored revision with plain talk: the dead write's
            // effort record, attachment and new effort log are not written over, so they
            // must have been undone.
            let mut other = open_clean(&store, "the other writer");
            turn(&mut other, 8, "another", false);
            turn(&mut other, 9, "another", false);
            save(&store, &mut other).expect("the other writer's save");
            let document = export(&store);
            assert!(
                document.repairs.is_empty(),
                "after {k}: {:?}",
                document.repairs
            );
            assert_eq!(document.turn, 10, "after {k}");
            let reopened = open_clean(&store, &format!("reopened after {k}"));
            assert_eq!(reopened.turn(), 10);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(steps > 10, "a save made only {steps} changes");
    println!("a save stopped at each of its {steps} changes left the last revision intact");
}
