//! The file store's operations, written against [`FileSystem`] so that they do not depend on
//! where the files are.

use super::format::{
    decode_entry, decode_log_header, encode_entry, encode_log_header, file_name, id_of_file_name,
    log_file_name, range, ranges_of, row_write, unfinished_slots, visible, Commit, Found, Intent,
    Slot, ENTRY_BYTES, LAYOUT_VERSION, LOG_HEADER_BYTES, ROW_BYTES, SLOT_BYTES,
};
use super::fs::{Access, FileHandle, FileSystem};
use crate::backend::{
    existing_row, next_row, DamagedSession, LogRead, MessagesRead, StoredRecords, WriteMode,
    DAMAGED_WAY_OUT,
};
use crate::error::{StoreError, StoreResult};
use crate::records::{decode_all, encode, SessionRow};
use ccm_core::persistence::{LoadedRecords, LogRef, StoredMessage, WriteBatch};
use ccm_core::telemetry::TurnTelemetry;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// The index files of a session, one per kind of record, each with its rows by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Table {
    /// Message records by sequence number.
    Messages,
    /// Effort records by position.
    Efforts,
    /// Metrics points by index in the history.
    Metrics,
    /// Request telemetry by turn.
    Telemetry,
    /// Attachments by number (`att-<number>`).
    Attachments,
}

impl Table {
    const ALL: [Table; 5] = [
        Table::Messages,
        Table::Efforts,
        Table::Metrics,
        Table::Telemetry,
        Table::Attachments,
    ];

    pub(crate) fn file(self) -> &'static str {
        match self {
            Table::Messages => "messages.idx",
            Table::Efforts => "efforts.idx",
            Table::Metrics => "metrics.idx",
            Table::Telemetry => "telemetry.idx",
            Table::Attachments => "attachments.idx",
        }
    }

    fn of_file(file: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.file() == file)
    }

    /// What the record at `key` is, for the person reading a problem.
    fn what(self, key: u64) -> String {
        match self {
            Table::Messages => format!("message {key}"),
            Table::Efforts => format!("effort record {key}"),
            Table::Metrics => format!("the metrics point at {key}"),
            Table::Telemetry => format!("the telemetry of turn {key}"),
            Table::Attachments => format!("attachment att-{key}"),
        }
    }
}

/// The paths of one session's files.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    dir: String,
}

impl Paths {
    fn new(name: &str) -> Paths {
        Paths {
            dir: format!("sessions/{name}"),
        }
    }

    fn commit(&self) -> String {
        format!("{}/commit", self.dir)
    }

    fn intent(&self) -> String {
        format!("{}/intent", self.dir)
    }

    fn records(&self) -> String {
        format!("{}/records.dat", self.dir)
    }

    fn table(&self, table: Table) -> String {
        format!("{}/{}", self.dir, table.file())
    }

    fn logs(&self) -> String {
        format!("{}/logs", self.dir)
    }

    fn log_file(&self, file: &str) -> String {
        format!("{}/logs/{file}", self.dir)
    }
}

/// The lock file of a session. Lock files live apart from the sessions and are never
/// removed: a process waiting for a lock holds the file open, and removing it would let a
/// third process lock a new file of the same name at the same time.
fn lock_path(name: &str) -> String {
    format!("locks/{name}.lock")
}

/// The session directory name of `id`, or the refusal of an id no file can be named after.
fn session_name(id: &str) -> Result<String, StoreError> {
    file_name(id).map_err(|problem| {
        StoreError::storage(format!(
            "{problem}; the file store cannot keep this session"
        ))
    })
}

/// The failure of an I/O call: [`StoreError::Quota`] for a full disk or an exhausted disk
/// quota, else [`StoreError::Storage`], each naming the file and the action.
fn failure<F: FileSystem>(fs: &F, action: &str, path: &str, error: io::Error) -> StoreError {
    let file = fs.describe(path);
    match error.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => StoreError::quota(format!(
            "could not {action} {file}: the disk is full ({error}); the stored session is unchanged. Free some space and try again"
        )),
        _ => StoreError::storage(format!("could not {action} {file}: {error}")),
    }
}

/// Numbers the trash entries of deletes within a process.
static TRASHED: AtomicU64 = AtomicU64::new(0);

/// The file store's operations over the files of `fs`.
#[derive(Debug)]
pub(crate) struct Store<F: FileSystem> {
    pub(crate) fs: F,
}

impl<F: FileSystem> Store<F> {
    /// Wraps the result of an I/O call into a store error for `action` on `path`.
    fn io<T>(&self, result: io::Result<T>, action: &str, path: &str) -> Result<T, StoreError> {
        result.map_err(|e| failure(&self.fs, action, path, e))
    }

    fn open_file(&self, path: &str, access: Access) -> Result<Option<F::File>, StoreError> {
        let action = match access {
            Access::Read => "open",
            Access::Write | Access::Create => "open for writing",
        };
        self.io(self.fs.open(path, access), action, path)
    }

    fn created(&self, path: &str) -> Result<F::File, StoreError> {
        self.open_file(path, Access::Create)?.ok_or_else(|| {
            StoreError::storage(format!(
                "could not create {}: it vanished as it was created",
                self.fs.describe(path)
            ))
        })
    }

    /// Makes the directory ready: checks the layout version, creates the directories and
    /// clears the remains of deletes that were interrupted.
    pub(crate) fn prepare(&self) -> Result<(), StoreError> {
        self.io(self.fs.create_dir(""), "create the directory", "")?;
        match self.io(self.fs.read_file("layout"), "read", "layout")? {
            Some(bytes) => {
                let version = std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|text| text.trim().strip_prefix("ccm-files "))
                    .and_then(|version| version.parse::<u32>().ok());
                match version {
                    Some(v) if v <= LAYOUT_VERSION => {}
                    Some(v) => {
                        return Err(StoreError::storage(format!(
                            "the sessions in {} were written by a newer version of this program (layout {v}, this one reads {LAYOUT_VERSION}); update it to open them",
                            self.fs.describe("")
                        )));
                    }
                    None => {
                        return Err(StoreError::storage(format!(
                            "{} is not a session directory of this program (its file 'layout' is not ours); choose another directory",
                            self.fs.describe("")
                        )));
                    }
                }
            }
            None => {
                let text = format!("ccm-files {LAYOUT_VERSION}\n");
                self.io(
                    self.fs.replace("layout", text.as_bytes()),
                    "write",
                    "layout",
                )?;
            }
        }
        for dir in ["sessions", "locks", "trash"] {
            self.io(self.fs.create_dir(dir), "create the directory", dir)?;
        }
        // Another process may be removing the same entries right now; whatever either
        // leaves is removed at a later opening.
        for entry in self.fs.list_dir("trash").unwrap_or_default() {
            let _ = self.fs.remove_tree(&format!("trash/{entry}"));
        }
        Ok(())
    }

    /// The commit of a session, `None` when it has none (no such session, or a creation
    /// that never committed).
    fn commit(&self, id: &str, paths: &Paths) -> Result<Option<Commit>, StoreError> {
        let path = paths.commit();
        let Some(bytes) = self.io(self.fs.read_file(&path), "read", &path)? else {
            return Ok(None);
        };
        let mut commit = Commit::decode(id, &bytes).unwrap_or_else(Commit::unreadable);
        if let Ok(row) = &mut commit.row {
            // The directory names the session: a directory copied under another name is that
            // other session.
            row.id = id.to_string();
        }
        Ok(Some(commit))
    }

    /// A reader's view of session `id` under a shared lock, or `None` when it does not exist.
    fn reader(&self, id: &str) -> Result<Option<Reader<'_, F>>, StoreError> {
        let name = session_name(id)?;
        let lock_file = lock_path(&name);
        let lock = self.io(self.fs.lock(&lock_file, false, false), "lock", &lock_file)?;
        let Some(lock) = lock else {
            return Ok(None);
        };
        let paths = Paths::new(&name);
        let Some(commit) = self.commit(id, &paths)? else {
            return Ok(None);
        };
        let records = self.open_file(&paths.records(), Access::Read)?;
        Ok(Some((
            lock,
            View {
                store: self,
                paths,
                commit,
                records,
            },
        )))
    }

    /// Every session's row, and the sessions whose row cannot be read.
    pub(crate) fn rows(&self) -> Result<(Vec<SessionRow>, Vec<DamagedSession>), StoreError> {
        let names = self.io(self.fs.list_dir("sessions"), "list", "sessions")?;
        let mut rows = Vec::new();
        let mut damaged = Vec::new();
        for name in names {
            let Some(id) = id_of_file_name(&name) else {
                continue;
            };
            // The commit is replaced atomically, so it is read without the lock.
            let paths = Paths::new(&name);
            match self.commit(&id, &paths) {
                Ok(None) => {}
                Ok(Some(commit)) => match self.files_problem(&paths, &commit) {
                    Ok(None) => rows.extend(commit.row.ok()),
                    Ok(Some(problem)) => {
                        // A session deleted while it was looked at is gone, not damaged.
                        if matches!(self.commit(&id, &paths), Ok(Some(_))) {
                            damaged.push(DamagedSession { id, problem });
                        }
                    }
                    Err(error) => damaged.push(DamagedSession {
                        id,
                        problem: error.to_string(),
                    }),
                },
                Err(error) => damaged.push(DamagedSession {
                    id,
                    problem: error.to_string(),
                }),
            }
        }
        Ok((rows, damaged))
    }

    /// What makes the whole of a session unreadable, checked against its commit by reading a
    /// bounded part of each file (sizes, one byte of `records.dat`, each log's header):
    /// `Ok(None)` when nothing does. Listing reports it and opening refuses with it, because
    /// such damage spoils every read of the session, where a damaged record is held and
    /// reported by the read that meets it.
    fn files_problem(&self, paths: &Paths, commit: &Commit) -> Result<Option<String>, StoreError> {
        let row = match &commit.row {
            Ok(row) => row,
            Err(problem) => return Ok(Some(problem.clone())),
        };
        let records = paths.records();
        let data = self.open_file(&records, Access::Read)?;
        match &data {
            None if commit.data_len > 0 => {
                return Ok(Some(
                    "records.dat, which holds its records, is missing".to_string(),
                ))
            }
            None => {}
            Some(file) => {
                let size = self.io(file.size(), "read the size of", &records)?;
                if size < commit.data_len {
                    return Ok(Some(format!(
                        "records.dat is shorter ({size} bytes) than its commit says ({} bytes): it was cut",
                        commit.data_len
                    )));
                }
                // Every record is followed by a newline, so the last committed byte is one.
                if commit.data_len > 0 {
                    let last = self.io(file.read_at(commit.data_len - 1, 1), "read", &records)?;
                    if last != b"\n" {
                        return Ok(Some(
                            "the bytes of records.dat where its last committed record ends were overwritten".to_string(),
                        ));
                    }
                }
            }
        }
        let indexes = [
            (Table::Messages, commit.seq_end, "messages"),
            (Table::Metrics, row.header.history_len, "metrics points"),
            (Table::Efforts, row.header.effort_count, "effort records"),
        ];
        for (table, rows, what) in indexes {
            if rows == 0 {
                continue;
            }
            let path = paths.table(table);
            let file = table.file();
            let Some(index) = self.open_file(&path, Access::Read)? else {
                return Ok(Some(format!(
                    "{file}, the index of its {rows} {what}, is missing"
                )));
            };
            let size = self.io(index.size(), "read the size of", &path)?;
            // The last row's second slot may be unwritten (a file ends where its bytes end).
            let least = (rows - 1) * ROW_BYTES + SLOT_BYTES;
            if size < least {
                return Ok(Some(format!(
                    "{file} is shorter ({size} bytes) than its {rows} {what} need ({least} bytes): it was cut"
                )));
            }
        }
        let logs = paths.logs();
        for log in self.io(self.fs.list_dir(&logs), "list", &logs)? {
            if !log.ends_with(".seq") {
                continue;
            }
            let path = paths.log_file(&log);
            let Some(file) = self.open_file(&path, Access::Read)? else {
                continue;
            };
            // Only a log that holds a committed entry is checked: a write killed as it made a
            // new log leaves a file with a partial header and no committed entry, which no
            // read of the committed revision looks at.
            let start = self.io(
                file.read_at(0, LOG_HEADER_BYTES + ENTRY_BYTES),
                "read",
                &path,
            )?;
            let Some(entry) = start.get(LOG_HEADER_BYTES as usize..) else {
                continue;
            };
            let committed = decode_entry(entry).is_some_and(|seq| seq < commit.seq_end);
            if committed && decode_log_header(&start[..LOG_HEADER_BYTES as usize]).is_none() {
                return Ok(Some(format!(
                    "the log file logs/{log} does not start with its header: it was cut or overwritten"
                )));
            }
        }
        Ok(None)
    }

    /// Writes a batch under the session's exclusive lock, after checking [`next_row`]
    /// against the committed row.
    pub(crate) fn write(
        &self,
        id: &str,
        batch: &WriteBatch,
        mode: WriteMode,
    ) -> Result<SessionRow, StoreError> {
        let name = session_name(id)?;
        let lock_file = lock_path(&name);
        let _lock = self
            .io(self.fs.lock(&lock_file, true, true), "lock", &lock_file)?
            .ok_or_else(|| {
                StoreError::storage(format!("could not create the lock file {lock_file}"))
            })?;
        let paths = Paths::new(&name);
        let commit = self.commit(id, &paths)?;
        let row = next_row(id, commit.as_ref().map(|c| c.row.clone()), batch, mode)?;
        let base = commit.map_or((0, 0, 0), |c| (c.revision, c.seq_end, c.data_len));
        check_batch(batch, &row, base.0, base.1)?;
        let logs = paths.logs();
        self.io(self.fs.create_dir(&logs), "create the directory", &logs)?;
        self.undo_unfinished(&paths, base.0)?;
        let outcome = self.write_batch(&paths, batch, &row, base);
        if outcome.is_err() {
            // What this write changed is undone now rather than by the next writer, so the
            // files stay as the commit describes them; if this fails too, the next writer
            // undoes it.
            let _ = self.undo_unfinished(&paths, base.0);
        }
        outcome.map(|()| row)
    }

    /// Appends the batch's records, writes its index rows and log entries, and commits.
    fn write_batch(
        &self,
        paths: &Paths,
        batch: &WriteBatch,
        row: &SessionRow,
        (revision, seq_end, data_len): (u64, u64, u64),
    ) -> Result<(), StoreError> {
        let new_revision = row.header.revision;
        // The texts, appended to `records.dat` after its committed length: whatever an
        // unfinished write left beyond it is cut first.
        let records_path = paths.records();
        let records = self.created(&records_path)?;
        let size = self.io(records.size(), "read the size of", &records_path)?;
        if size < data_len {
            return Err(StoreError::storage(format!(
                "{} is shorter ({size} bytes) than its commit says ({data_len} bytes); the session's records were cut by something else, and nothing was written",
                self.fs.describe(&records_path)
            )));
        }
        if size > data_len {
            self.io(records.truncate(data_len), "truncate", &records_path)?;
        }
        let mut texts = Vec::new();
        let mut rows: BTreeMap<Table, BTreeMap<u64, Slot>> = BTreeMap::new();
        let mut place = |table: Table, key: u64, text: String| {
            let slot = Slot {
                offset: data_len + texts.len() as u64,
                len: text.len() as u64,
                revision: new_revision,
            };
            texts.extend_from_slice(text.as_bytes());
            texts.push(b'\n');
            rows.entry(table).or_default().insert(key, slot);
        };
        let mut log_seqs: BTreeMap<&LogRef, Vec<u64>> = BTreeMap::new();
        for stored in &batch.messages {
            place(Table::Messages, stored.message.seq, encode(stored));
            log_seqs
                .entry(&stored.log)
                .or_default()
                .push(stored.message.seq);
        }
        for record in &batch.efforts {
            place(Table::Efforts, record.position, encode(record));
        }
        let first_point = batch.header.history_len - batch.metrics.len() as u64;
        for (i, point) in batch.metrics.iter().enumerate() {
            place(Table::Metrics, first_point + i as u64, encode(point));
        }
        for entry in &batch.telemetry {
            place(Table::Telemetry, entry.turn, encode(entry));
        }
        for attachment in &batch.attachments {
            let number = attachment_number(&attachment.attachment.id).unwrap_or_default();
            place(Table::Attachments, number, encode(attachment));
        }
        self.io(
            records.write_at(data_len, &texts),
            "append to",
            &records_path,
        )?;
        self.io(records.sync(), "sync", &records_path)?;
        let new_data_len = data_len + texts.len() as u64;
        let new_seq_end = batch
            .messages
            .iter()
            .map(|m| m.message.seq + 1)
            .fold(seq_end, u64::max);

        // Plan every change to the index and log files, and record it as the intent before
        // making any: an unfinished write is undone from it.
        let mut intent = Intent {
            base: revision,
            ..Intent::default()
        };
        let mut table_writes = Vec::new();
        for (table, slots) in &rows {
            let path = paths.table(*table);
            let file = self.created(&path)?;
            let writes = self.plan_rows(&file, &path, slots, revision)?;
            intent
                .rows
                .push((table.file().to_string(), ranges_of(slots.keys().copied())));
            table_writes.push((path, file, writes));
        }
        let mut log_writes = Vec::new();
        for (log, seqs) in &log_seqs {
            let file_name = log_file_name(log);
            let path = paths.log_file(&file_name);
            let file = self.created(&path)?;
            let size = self.io(file.size(), "read the size of", &path)?;
            let kept = if size < LOG_HEADER_BYTES {
                0
            } else {
                let entries = self.io(committed_entries(&file, size, seq_end), "read", &path)?;
                LOG_HEADER_BYTES + entries * ENTRY_BYTES
            };
            if kept < size {
                self.io(file.truncate(kept), "truncate", &path)?;
            }
            let mut bytes = Vec::new();
            if kept == 0 {
                bytes = encode_log_header(log).map_err(StoreError::storage)?;
            }
            for seq in seqs {
                bytes.extend_from_slice(&encode_entry(*seq));
            }
            intent.logs.push((file_name, kept));
            log_writes.push((path, file, kept, bytes));
        }
        let intent_path = paths.intent();
        let intent_text = serde_json::to_vec(&intent).expect("an intent serialises");
        self.io(
            self.fs.replace(&intent_path, &intent_text),
            "write",
            &intent_path,
        )?;

        for (path, file, writes) in &table_writes {
            for (offset, bytes) in writes {
                self.io(file.write_at(*offset, bytes), "write", path)?;
            }
            self.io(file.sync(), "sync", path)?;
        }
        for (path, file, at, bytes) in &log_writes {
            self.io(file.write_at(*at, bytes), "append to", path)?;
            self.io(file.sync(), "sync", path)?;
        }

        // The commit makes the new revision visible, atomically.
        let commit_path = paths.commit();
        let commit = Commit::encode(new_revision, new_seq_end, new_data_len, row);
        self.io(
            self.fs.replace(&commit_path, &commit),
            "write",
            &commit_path,
        )
    }

    /// The writes that store `slots` in the index `file`, each into the slot of its row that
    /// the committed revision does not see; writes to neighbouring rows are merged.
    fn plan_rows(
        &self,
        file: &F::File,
        path: &str,
        slots: &BTreeMap<u64, Slot>,
        committed: u64,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let keys: Vec<u64> = slots.keys().copied().collect();
        let mut writes: Vec<(u64, Vec<u8>)> = Vec::new();
        for run in runs(&keys) {
            let current = self.io(
                file.read_at(run.start * ROW_BYTES, (run.end - run.start) * ROW_BYTES),
                "read",
                path,
            )?;
            for key in run.clone() {
                let at = ((key - run.start) * ROW_BYTES) as usize;
                let row = current.get(at..).unwrap_or_default();
                let row = &row[..row.len().min(ROW_BYTES as usize)];
                let (offset, bytes) = row_write(row, committed, slots[&key]);
                let offset = key * ROW_BYTES + offset;
                match writes.last_mut() {
                    Some((start, pending)) if *start + pending.len() as u64 == offset => {
                        pending.extend_from_slice(&bytes);
                    }
                    _ => writes.push((offset, bytes)),
                }
            }
        }
        Ok(writes)
    }

    /// Undoes a write on `committed` that did not commit: clears the index slots it wrote
    /// and cuts the log files back to their lengths before it, as its intent lists them.
    fn undo_unfinished(&self, paths: &Paths, committed: u64) -> Result<(), StoreError> {
        let intent_path = paths.intent();
        let Some(bytes) = self.io(self.fs.read_file(&intent_path), "read", &intent_path)? else {
            return Ok(());
        };
        // An intent that cannot be read belongs to no write: it is replaced atomically, so a
        // write that went further than its intent always finds it whole.
        let Ok(intent) = serde_json::from_slice::<Intent>(&bytes) else {
            return Ok(());
        };
        if intent.base != committed {
            return Ok(());
        }
        for (file, ranges) in &intent.rows {
            // Only the store's own file names are followed, whatever the intent says.
            let Some(table) = Table::of_file(file) else {
                continue;
            };
            let path = paths.table(table);
            let Some(handle) = self.open_file(&path, Access::Write)? else {
                continue;
            };
            let rows_in_file = self
                .io(handle.size(), "read the size of", &path)?
                .div_ceil(ROW_BYTES);
            let mut cleared = false;
            for pair in ranges {
                let keys = range(*pair);
                let keys = keys.start.min(rows_in_file)..keys.end.min(rows_in_file);
                if keys.is_empty() {
                    continue;
                }
                let bytes = self.io(
                    handle.read_at(keys.start * ROW_BYTES, (keys.end - keys.start) * ROW_BYTES),
                    "read",
                    &path,
                )?;
                for (i, row) in bytes.chunks(ROW_BYTES as usize).enumerate() {
                    for offset in unfinished_slots(row, committed) {
                        let at = (keys.start + i as u64) * ROW_BYTES + offset;
                        self.io(handle.write_at(at, &[0u8; 32]), "write", &path)?;
                        cleared = true;
                    }
                }
            }
            if cleared {
                self.io(handle.sync(), "sync", &path)?;
            }
        }
        for (file, length) in &intent.logs {
            let own_name = file.ends_with(".seq")
                && file
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
                && !file.starts_with('.');
            if !own_name {
                continue;
            }
            let path = paths.log_file(file);
            let Some(handle) = self.open_file(&path, Access::Write)? else {
                continue;
            };
            if self.io(handle.size(), "read the size of", &path)? > *length {
                self.io(handle.truncate(*length), "truncate", &path)?;
                self.io(handle.sync(), "sync", &path)?;
            }
        }
        Ok(())
    }

    /// What opening session `id` reads.
    pub(crate) fn load(&self, id: &str) -> Result<(SessionRow, LoadedRecords), StoreError> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        let row = existing_row(id, Some(view.commit.row.clone()))?;
        if let Some(problem) = self.files_problem(&view.paths, &view.commit)? {
            return Err(StoreError::storage(format!(
                "session '{id}' cannot be opened: {problem}{DAMAGED_WAY_OUT}"
            )));
        }
        let header = &row.header;
        let request = header.load_request();
        let mut loaded = LoadedRecords {
            header: Some(header.clone()),
            ..LoadedRecords::default()
        };
        let unreadable = &mut loaded.unreadable;
        loaded.efforts = view.all_records(Table::Efforts, unreadable)?;
        for effort in &request.effort_logs {
            let log = LogRef::Effort(effort.clone());
            let seqs = view.log_entries(&log, unreadable)?;
            let messages = view.messages(&seqs, Some(&log), unreadable)?;
            let log = messages.into_iter().map(|m| m.message).collect();
            loaded.effort_logs.insert(effort.clone(), log);
        }
        let ambient_seqs = view.log_tail(&LogRef::Ambient, request.ambient_tail, unreadable)?;
        loaded.ambient_tail = view
            .messages(&ambient_seqs, Some(&LogRef::Ambient), unreadable)?
            .into_iter()
            .map(|m| m.message)
            .collect();
        let history = header.history_len - request.history_tail..header.history_len;
        loaded.history_tail = view.records_in(Table::Metrics, history, unreadable)?;
        loaded.attachments = view.all_records(Table::Attachments, unreadable)?;
        loaded.log_sizes = Some(view.log_sizes()?);
        Ok((row, loaded))
    }

    /// The raw log of one effort.
    pub(crate) fn effort_log(&self, id: &str, effort: &str) -> StoreResult<LogRead> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        existing_row(id, Some(view.commit.row.clone()))?;
        let mut unreadable = Vec::new();
        let log = LogRef::Effort(effort.to_string());
        let seqs = view.log_entries(&log, &mut unreadable)?;
        let messages = view.messages(&seqs, Some(&log), &mut unreadable)?;
        Ok((
            messages.into_iter().map(|m| m.message).collect(),
            unreadable,
        ))
    }

    /// The stored messages with sequence numbers `from..to`.
    pub(crate) fn messages_between(
        &self,
        id: &str,
        from: u64,
        to: u64,
    ) -> Result<MessagesRead, StoreError> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        let mut unreadable = Vec::new();
        let to = to.min(view.commit.seq_end);
        let messages = view.records_in(Table::Messages, from..to.max(from), &mut unreadable)?;
        Ok((messages, unreadable))
    }

    /// The stored messages with these sequence numbers.
    pub(crate) fn messages_by_seq(
        &self,
        id: &str,
        seqs: &[u64],
    ) -> Result<MessagesRead, StoreError> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        let mut unreadable = Vec::new();
        let messages = view.messages(seqs, None, &mut unreadable)?;
        Ok((messages, unreadable))
    }

    /// Every record of a session, for an export.
    pub(crate) fn read_all(&self, id: &str) -> Result<StoredRecords, StoreError> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        let mut read = StoredRecords::of(view.commit.row.clone());
        let unreadable = &mut read.unreadable;
        read.efforts = view.all_records(Table::Efforts, unreadable)?;
        read.messages = view.all_records(Table::Messages, unreadable)?;
        read.metrics = view.all_records(Table::Metrics, unreadable)?;
        read.attachments = view.all_records(Table::Attachments, unreadable)?;
        Ok(read)
    }

    /// The telemetry of one turn.
    pub(crate) fn telemetry(
        &self,
        id: &str,
        turn: u64,
    ) -> Result<Option<TurnTelemetry>, StoreError> {
        let Some((_lock, view)) = self.reader(id)? else {
            return Err(StoreError::not_found(id));
        };
        let mut unreadable = Vec::new();
        let mut found: Vec<TurnTelemetry> =
            view.records_in(Table::Telemetry, turn..turn + 1, &mut unreadable)?;
        match unreadable.pop() {
            Some(problem) => Err(StoreError::Storage(problem)),
            None => Ok(found.pop()),
        }
    }

    /// Renames a session; its revision and records stay.
    pub(crate) fn rename(&self, id: &str, name: &str, now_ms: f64) -> Result<(), StoreError> {
        let dir_name = session_name(id)?;
        let lock_file = lock_path(&dir_name);
        let Some(_lock) = self.io(self.fs.lock(&lock_file, true, false), "lock", &lock_file)?
        else {
            return Err(StoreError::not_found(id));
        };
        let paths = Paths::new(&dir_name);
        let commit = self.commit(id, &paths)?;
        let mut row = existing_row(id, commit.as_ref().map(|c| c.row.clone()))?;
        let commit = commit.expect("a row was read from it");
        row.name = name.to_string();
        row.updated_ms = now_ms;
        let path = paths.commit();
        let text = Commit::encode(commit.revision, commit.seq_end, commit.data_len, &row);
        self.io(self.fs.replace(&path, &text), "write", &path)
    }

    /// Deletes a session: its directory leaves `sessions/` in one rename, then is removed.
    pub(crate) fn delete(&self, id: &str) -> Result<(), StoreError> {
        // An id no file can be named after was never stored.
        let Ok(name) = file_name(id) else {
            return Ok(());
        };
        let lock_file = lock_path(&name);
        let Some(_lock) = self.io(self.fs.lock(&lock_file, true, false), "lock", &lock_file)?
        else {
            return Ok(());
        };
        let dir = Paths::new(&name).dir;
        let number = TRASHED.fetch_add(1, Ordering::Relaxed);
        let trash = format!("trash/{name}.{}-{number}", self.fs.process_tag());
        match self.fs.rename(&dir, &trash) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(failure(&self.fs, "move to the trash", &dir, e)),
        }
        // The session is deleted once its directory left `sessions/`; what fails to be
        // removed now is removed when a store is next opened on this directory.
        let _ = self.fs.remove_tree(&trash);
        Ok(())
    }
}

/// Checks what the format relies on before anything is written.
fn check_batch(
    batch: &WriteBatch,
    row: &SessionRow,
    revision: u64,
    seq_end: u64,
) -> Result<(), StoreError> {
    if row.header.revision <= revision {
        return Err(StoreError::storage(format!(
            "the batch's revision {} does not follow the stored revision {revision}; nothing was written",
            row.header.revision
        )));
    }
    if let Some(stored) = batch.messages.iter().find(|m| m.message.seq < seq_end) {
        return Err(StoreError::storage(format!(
            "the batch rewrites message {}, which is stored; a save only adds messages, and nothing was written",
            stored.message.seq
        )));
    }
    if (batch.metrics.len() as u64) > batch.header.history_len {
        return Err(StoreError::storage(format!(
            "the batch holds {} metrics points but its header counts {}; nothing was written",
            batch.metrics.len(),
            batch.header.history_len
        )));
    }
    if let Some(odd) = batch
        .attachments
        .iter()
        .find(|a| attachment_number(&a.attachment.id).is_none())
    {
        return Err(StoreError::storage(format!(
            "attachment '{}' is not numbered like 'att-1'; the file store keeps attachments by number, and nothing was written",
            odd.attachment.id
        )));
    }
    for stored in &batch.messages {
        encode_log_header(&stored.log).map_err(StoreError::storage)?;
    }
    Ok(())
}

/// The number of an attachment id `att-<number>`.
fn attachment_number(id: &str) -> Option<u64> {
    id.strip_prefix("att-")?.parse().ok()
}

/// Sorted keys as runs of consecutive keys.
fn runs(keys: &[u64]) -> Vec<Range<u64>> {
    ranges_of(keys.iter().copied())
        .into_iter()
        .map(range)
        .collect()
}

/// How many entries of a log file belong to committed writes: the entries before those an
/// unfinished write appended at its end (entries whose sequence number is not below the
/// committed `seq_end`, or torn ones). It reads from the end, usually one entry.
fn committed_entries<H: FileHandle>(file: &H, size: u64, seq_end: u64) -> io::Result<u64> {
    const STEP: u64 = 64;
    let mut end = size.saturating_sub(LOG_HEADER_BYTES) / ENTRY_BYTES;
    while end > 0 {
        let start = end.saturating_sub(STEP);
        let bytes = file.read_at(
            LOG_HEADER_BYTES + start * ENTRY_BYTES,
            (end - start) * ENTRY_BYTES,
        )?;
        for i in (0..end - start).rev() {
            let at = (i * ENTRY_BYTES) as usize;
            let entry = bytes
                .get(at..at + ENTRY_BYTES as usize)
                .and_then(decode_entry);
            if entry.is_some_and(|seq| seq < seq_end) {
                return Ok(start + i + 1);
            }
        }
        end = start;
    }
    Ok(0)
}

/// A held shared lock and the view it protects.
type Reader<'a, F> = (<F as FileSystem>::Lock, View<'a, F>);

/// A reader's view of one session at its committed revision.
struct View<'a, F: FileSystem> {
    store: &'a Store<F>,
    paths: Paths,
    commit: Commit,
    records: Option<F::File>,
}

impl<F: FileSystem> View<'_, F> {
    fn io<T>(&self, result: io::Result<T>, action: &str, path: &str) -> Result<T, StoreError> {
        self.store.io(result, action, path)
    }

    /// What the rows `keys` of `table` hold at the committed revision; rows past the end of
    /// the file are absent.
    fn rows(&self, table: Table, keys: &[u64]) -> Result<Vec<(u64, Found)>, StoreError> {
        let path = self.paths.table(table);
        let Some(file) = self.store.open_file(&path, Access::Read)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::with_capacity(keys.len());
        // Runs of consecutive keys, in the order asked, are read in one call each.
        let mut i = 0;
        while i < keys.len() {
            let mut j = i + 1;
            while j < keys.len() && keys[j] == keys[j - 1].wrapping_add(1) {
                j += 1;
            }
            let bytes = self.io(
                file.read_at(keys[i] * ROW_BYTES, (j - i) as u64 * ROW_BYTES),
                "read",
                &path,
            )?;
            for (k, key) in keys[i..j].iter().enumerate() {
                let row = bytes.get(k * ROW_BYTES as usize..).unwrap_or_default();
                let row = &row[..row.len().min(ROW_BYTES as usize)];
                found.push((*key, visible(row, self.commit.revision)));
            }
            i = j;
        }
        Ok(found)
    }

    /// The number of rows `table`'s file holds.
    fn row_count(&self, table: Table) -> Result<u64, StoreError> {
        let path = self.paths.table(table);
        let Some(file) = self.store.open_file(&path, Access::Read)? else {
            return Ok(0);
        };
        Ok(self
            .io(file.size(), "read the size of", &path)?
            .div_ceil(ROW_BYTES))
    }

    /// The texts of the records `wanted` points at, each with what it is. Texts that lie
    /// together in `records.dat` are read in one call.
    fn texts(
        &self,
        wanted: Vec<(String, Slot)>,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        const MAX_SPAN: u64 = 4 << 20;
        let path = self.paths.records();
        let mut order: Vec<usize> = (0..wanted.len()).collect();
        order.sort_by_key(|&i| wanted[i].1.offset);
        // Each record's text, `None` for the ones that cannot be read from where their row
        // points (those are described at once).
        let mut texts: Vec<Option<Option<String>>> = vec![None; wanted.len()];
        let mut i = 0;
        while i < order.len() {
            let first = wanted[order[i]].1;
            let mut end = first.offset.saturating_add(first.len);
            let mut j = i + 1;
            while j < order.len() {
                let next = wanted[order[j]].1;
                let next_end = next.offset.saturating_add(next.len);
                if next.offset > end.saturating_add(1) || next_end - first.offset > MAX_SPAN {
                    break;
                }
                end = end.max(next_end);
                j += 1;
            }
            let bytes = match &self.records {
                Some(file) if end <= self.commit.data_len => self.io(
                    file.read_at(first.offset, end - first.offset),
                    "read",
                    &path,
                )?,
                _ => Vec::new(),
            };
            for &index in &order[i..j] {
                let slot = wanted[index].1;
                let at = (slot.offset - first.offset) as usize;
                match bytes.get(at..at.saturating_add(slot.len as usize)) {
                    Some(text) => texts[index] = Some(String::from_utf8(text.to_vec()).ok()),
                    None => unreadable.push(format!(
                        "{} lies beyond the stored data of its session; it was skipped",
                        wanted[index].0
                    )),
                }
            }
            i = j;
        }
        Ok(wanted
            .into_iter()
            .zip(texts)
            .filter_map(|((what, _), text)| text.map(|text| (what, text)))
            .collect())
    }

    /// The readable records among `found`, decoded; a damaged row or record is described in
    /// `unreadable`.
    fn decoded<T: DeserializeOwned>(
        &self,
        table: Table,
        found: Vec<(u64, Found)>,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<T>, StoreError> {
        let mut wanted = Vec::new();
        for (key, found) in found {
            match found {
                Found::Absent => {}
                Found::Damaged => unreadable.push(format!(
                    "the index entry of {} is damaged; it was skipped",
                    table.what(key)
                )),
                Found::Record(slot) => wanted.push((table.what(key), slot)),
            }
        }
        let texts = self.texts(wanted, unreadable)?;
        Ok(decode_all(texts, unreadable))
    }

    /// The records of `table` with keys in `keys`.
    fn records_in<T: DeserializeOwned>(
        &self,
        table: Table,
        keys: Range<u64>,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<T>, StoreError> {
        let keys: Vec<u64> = keys.collect();
        let found = self.rows(table, &keys)?;
        self.decoded(table, found, unreadable)
    }

    /// Every record of `table` (messages only up to the committed end).
    fn all_records<T: DeserializeOwned>(
        &self,
        table: Table,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<T>, StoreError> {
        let mut count = self.row_count(table)?;
        if table == Table::Messages {
            count = count.min(self.commit.seq_end);
        }
        self.records_in(table, 0..count, unreadable)
    }

    /// The stored messages with sequence numbers `seqs`, in that order. With `listed_in`,
    /// they were listed by that log: a listed message without a record, or stored in
    /// another log, is described in `unreadable`.
    fn messages(
        &self,
        seqs: &[u64],
        listed_in: Option<&LogRef>,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let seqs: Vec<u64> = seqs
            .iter()
            .copied()
            .filter(|seq| *seq < self.commit.seq_end)
            .collect();
        let mut found = self.rows(Table::Messages, &seqs)?;
        if let Some(log) = listed_in {
            for (seq, row) in &found {
                if *row == Found::Absent {
                    unreadable.push(format!(
                        "message {seq} is listed in {} but its record is missing; it was skipped",
                        describe_log(log)
                    ));
                }
            }
        }
        found.retain(|(_, row)| *row != Found::Absent);
        let mut messages: Vec<StoredMessage> = self.decoded(Table::Messages, found, unreadable)?;
        if let Some(log) = listed_in {
            messages.retain(|m| {
                let belongs = &m.log == log;
                if !belongs {
                    unreadable.push(format!(
                        "message {} is listed in {} but stored in another log; it was skipped",
                        m.message.seq,
                        describe_log(log)
                    ));
                }
                belongs
            });
        }
        Ok(messages)
    }

    /// Every committed sequence number a log lists, in order: the tail that holds every
    /// entry, which `log_tail` reads in one piece.
    fn log_entries(
        &self,
        log: &LogRef,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<u64>, StoreError> {
        self.log_tail(log, u64::MAX, unreadable)
    }

    /// The sequence numbers of `bytes` (whole committed entries); a damaged one is described.
    fn entries(&self, log: &LogRef, bytes: &[u8], unreadable: &mut Vec<String>) -> Vec<u64> {
        let mut seqs = Vec::with_capacity(bytes.len() / ENTRY_BYTES as usize);
        for entry in bytes.chunks(ENTRY_BYTES as usize) {
            match decode_entry(entry) {
                Some(seq) => seqs.push(seq),
                None => unreadable.push(format!(
                    "an entry of the index of {} is damaged; the message it listed was skipped",
                    describe_log(log)
                )),
            }
        }
        seqs
    }

    /// The last `count` committed sequence numbers a log lists, in order.
    fn log_tail(
        &self,
        log: &LogRef,
        count: u64,
        unreadable: &mut Vec<String>,
    ) -> Result<Vec<u64>, StoreError> {
        let path = self.paths.log_file(&log_file_name(log));
        if count == 0 {
            return Ok(Vec::new());
        }
        let Some(file) = self.store.open_file(&path, Access::Read)? else {
            return Ok(Vec::new());
        };
        let size = self.io(file.size(), "read the size of", &path)?;
        let committed = self.io(
            committed_entries(&file, size, self.commit.seq_end),
            "read",
            &path,
        )?;
        // A damaged entry lists no message, so one more is read for each.
        let mut start = committed.saturating_sub(count);
        let mut end = committed;
        let mut tail: Vec<u64> = Vec::new();
        while end > start {
            let bytes = self.io(
                file.read_at(
                    LOG_HEADER_BYTES + start * ENTRY_BYTES,
                    (end - start) * ENTRY_BYTES,
                ),
                "read",
                &path,
            )?;
            let mut seqs = self.entries(log, &bytes, unreadable);
            seqs.append(&mut tail);
            tail = seqs;
            let missing = count.saturating_sub(tail.len() as u64);
            end = start;
            start = start.saturating_sub(missing);
        }
        Ok(tail)
    }

    /// How many message records each log lists, from the log files' sizes and headers: no
    /// message is read.
    fn log_sizes(&self) -> Result<BTreeMap<LogRef, u64>, StoreError> {
        let logs = self.paths.logs();
        let names = self.io(self.store.fs.list_dir(&logs), "list", &logs)?;
        let mut sizes = BTreeMap::new();
        for name in names.iter().filter(|n| n.ends_with(".seq")) {
            let path = self.paths.log_file(name);
            let Some(file) = self.store.open_file(&path, Access::Read)? else {
                continue;
            };
            let header = self.io(file.read_at(0, LOG_HEADER_BYTES), "read", &path)?;
            let Some(log) = decode_log_header(&header) else {
                continue;
            };
            let size = self.io(file.size(), "read the size of", &path)?;
            let count = self.io(
                committed_entries(&file, size, self.commit.seq_end),
                "read",
                &path,
            )?;
            *sizes.entry(log).or_insert(0) += count;
        }
        Ok(sizes)
    }
}

fn describe_log(log: &LogRef) -> String {
    match log {
        LogRef::Ambient => "the ambient log".to_string(),
        LogRef::Effort(id) => format!("the log of effort '{id}'"),
    }
}
