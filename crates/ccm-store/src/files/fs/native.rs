//! [`NativeFs`]: the file operations over `std::fs`, and the native side of the lock
//! protocol that Node processes share.

use super::{Access, FileHandle, FileSystem};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The native file system under one directory. It counts every byte it writes.
///
/// # Locks
///
/// [`FileSystem::lock`] takes two locks, in this order:
///
/// 1. the operating system's exclusive lock on the lock file (`flock` on Unix-like systems),
///    which serialises native processes and is released by the system when a process dies;
/// 2. the owner file, the lock file's path with `.owner` added, created exclusively and
///    holding one line of JSON, `{"pid":…,"host":"…","time_ms":…,"holder":"native"}`, and
///    removed when the lock is let go. Node processes (which have no synchronous file lock)
///    take only this one, with `"holder":"node"`, so every process honours it.
///
/// An owner file that is there already is waited for (up to 30 seconds, then the lock fails
/// naming its process) unless it is stale: written by a native process of this host (every
/// native owner holds the system lock, which this process now holds, so that owner is gone);
/// written on this host by a process that no longer runs (`kill(pid, 0)`, as Node's
/// `process.kill(pid, 0)`, on Unix-like systems); unreadable and older than 10 seconds (its
/// process died between creating and writing it); or written on another host, or where
/// processes cannot be checked (Windows), more than 10 minutes ago. A stale owner file is moved aside under a unique name
/// and removed; if what was moved is not the file judged stale (another process replaced it
/// meanwhile), it is linked back.
///
/// Shared locks are taken exclusively too: a native reader must own the owner file so that a
/// Node writer cannot start under it, and owning it while other readers hold the system lock
/// shared would make the first rule above unsound. A read takes milliseconds, so readers of
/// one session taking turns costs little.
#[derive(Debug, Clone)]
pub struct NativeFs {
    root: PathBuf,
    written: Arc<AtomicU64>,
}

/// A file of [`NativeFs`].
#[derive(Debug)]
pub struct NativeFile {
    file: File,
    written: Arc<AtomicU64>,
}

/// Names temporary files uniquely within a process; the process id keeps processes apart.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl NativeFs {
    /// The files under `root`.
    pub fn new(root: PathBuf) -> NativeFs {
        NativeFs {
            root,
            written: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The directory the paths are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Bytes written through this file system so far.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Removes what processes that are gone left while they saved or took a lock over: the
    /// temporary files of an atomic replace (`<file>.tmp-<tag>`), set-aside owner files
    /// (`<owner>.stale-<tag>`) and takeover marks (`<owner>.break`), in the directory, in
    /// `locks/` and in every session's directory. A live process's files stay. Best effort:
    /// what cannot be removed now is tried again at the next opening.
    pub fn clear_leftovers(&self) {
        let mut dirs = vec![self.root.clone(), self.path("locks")];
        if let Ok(sessions) = std::fs::read_dir(self.path("sessions")) {
            dirs.extend(sessions.flatten().map(|entry| entry.path()));
        }
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let (Ok(name), Ok(meta)) = (entry.file_name().into_string(), entry.metadata())
                else {
                    continue;
                };
                let Ok(modified) = meta.modified() else {
                    continue;
                };
                if meta.is_file() && abandoned(&name, || std::fs::read(entry.path()).ok(), modified)
                {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(relative.split('/').filter(|part| !part.is_empty()));
        path
    }

    fn count(&self, bytes: usize) {
        self.written.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Makes a directory's entries (a renamed or new file) durable. Only Unix-like systems can
/// open a directory to sync it; elsewhere the rename itself is what the system promises.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

fn missing_is_none<T>(result: io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl FileHandle for NativeFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_at(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::with_capacity(len.min(1 << 20) as usize);
        file.take(len).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)?;
        self.written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

impl FileSystem for NativeFs {
    type File = NativeFile;
    type Lock = NativeLock;

    fn open(&self, path: &str, access: Access) -> io::Result<Option<NativeFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        match access {
            Access::Read => {}
            Access::Write => {
                options.write(true);
            }
            Access::Create => {
                options.write(true).create(true);
            }
        }
        let path = self.path(path);
        let existed = access != Access::Create || path.exists();
        let file = missing_is_none(options.open(&path))?;
        if !existed && file.is_some() {
            // A new file's name must survive a crash as surely as what is written into it.
            if let Some(parent) = path.parent() {
                sync_dir(parent)?;
            }
        }
        Ok(file.map(|file| NativeFile {
            file,
            written: self.written.clone(),
        }))
    }

    fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        missing_is_none(std::fs::read(self.path(path)))
    }

    fn replace(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let target = self.path(path);
        let number = TEMPORARY.fetch_add(1, Ordering::Relaxed);
        let temporary = self.path(&format!("{path}.tmp-{}-{number}", std::process::id()));
        let outcome = (|| {
            let mut file = File::create(&temporary)?;
            file.write_all(bytes)?;
            self.count(bytes.len());
            file.sync_all()?;
            std::fs::rename(&temporary, &target)?;
            match target.parent() {
                Some(parent) => sync_dir(parent),
                None => Ok(()),
            }
        })();
        if outcome.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        outcome
    }

    fn create_dir(&self, path: &str) -> io::Result<()> {
        let path = self.path(path);
        if path.is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(&path)?;
        match path.parent() {
            Some(parent) => sync_dir(parent),
            None => Ok(()),
        }
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let Some(entries) = missing_is_none(std::fs::read_dir(self.path(path)))? else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        for entry in entries {
            // Names that are not Unicode were not made by this store.
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let to = self.path(to);
        std::fs::rename(self.path(from), &to)?;
        match to.parent() {
            Some(parent) => sync_dir(parent),
            None => Ok(()),
        }
    }

    fn remove_tree(&self, path: &str) -> io::Result<()> {
        missing_is_none(std::fs::remove_dir_all(self.path(path))).map(|_| ())
    }

    fn lock(&self, path: &str, _exclusive: bool, create: bool) -> io::Result<Option<NativeLock>> {
        let access = if create { Access::Create } else { Access::Read };
        let Some(file) = self.open(path, access)? else {
            return Ok(None);
        };
        let file = file.file;
        // Exclusive whatever was asked: see the type's documentation.
        file.lock()?;
        let mut owner = self.path(path).into_os_string();
        owner.push(".owner");
        let owner = PathBuf::from(owner);
        let content = take_owner(&owner)?;
        Ok(Some(NativeLock {
            owner,
            content,
            _file: file,
        }))
    }

    fn describe(&self, path: &str) -> String {
        self.path(path).display().to_string()
    }

    fn process_tag(&self) -> String {
        std::process::id().to_string()
    }
}

/// A lock held by [`NativeFs`]: the owner file, removed when dropped, and the open lock file
/// whose system lock is released after it.
#[derive(Debug)]
pub struct NativeLock {
    owner: PathBuf,
    content: Vec<u8>,
    _file: File,
}

impl Drop for NativeLock {
    fn drop(&mut self) {
        // Only this lock's own file is removed: one that another process took over as stale
        // (this process was judged gone) is that process's now.
        if std::fs::read(&self.owner).is_ok_and(|bytes| bytes == self.content) {
            let _ = std::fs::remove_file(&self.owner);
        }
    }
}

// ----- owner files -----

/// How long a lock waits for another process's owner file.
const OWNER_WAIT: Duration = Duration::from_secs(30);
/// How old an owner file without readable content must be to be stale.
const UNWRITTEN_STALE: Duration = Duration::from_secs(10);
/// How old an owner file whose process cannot be checked must be to be stale.
const UNCHECKED_STALE_MS: f64 = 10.0 * 60.0 * 1000.0;
/// How long to sleep between looks at an owner file.
const OWNER_POLL: Duration = Duration::from_millis(3);

/// The content of an owner file.
#[derive(Debug, Serialize, Deserialize)]
struct Owner {
    pid: u32,
    host: String,
    time_ms: f64,
    holder: String,
    /// When the process started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`),
    /// where the system says: an owner whose id now names a process started at another time
    /// is gone (its id was given to a new process). Node writes it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<String>,
}

/// The host name, as Node's `os.hostname()` gives it (both call `gethostname`); `None` where
/// there is no such call, and owner files of other processes are judged by their age.
#[cfg(unix)]
fn this_host() -> Option<&'static str> {
    static HOST: OnceLock<Option<String>> = OnceLock::new();
    HOST.get_or_init(|| {
        let mut buffer = [0u8; 256];
        // SAFETY: the buffer is writable for its whole length, which is what is passed.
        let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
        if status != 0 {
            return None;
        }
        let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
        String::from_utf8(buffer[..end].to_vec())
            .ok()
            .filter(|name| !name.is_empty())
    })
    .as_deref()
}

#[cfg(not(unix))]
fn this_host() -> Option<&'static str> {
    None
}

/// What `/proc` says of process `pid`: `Some(None)` when there is no such process,
/// `Some(Some((state, start)))` when there is, `None` where `/proc` cannot tell (another
/// system, or no permission).
fn proc_stat(pid: u32) -> Option<Option<(String, String)>> {
    let text = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // No /proc at all is a system that cannot tell, not a process that is gone.
            return Path::new("/proc/self/stat").exists().then_some(None);
        }
        Err(_) => return None,
    };
    // The command name (in parentheses) may hold spaces; the fields after it do not.
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(Some((
        fields.first()?.to_string(),
        fields.get(19)?.to_string(),
    )))
}

/// This process's start time as `/proc` gives it, for its owner files.
fn own_start() -> Option<String> {
    static START: OnceLock<Option<String>> = OnceLock::new();
    START
        .get_or_init(|| {
            proc_stat(std::process::id())
                .flatten()
                .map(|(_, start)| start)
        })
        .clone()
}

/// Whether process `pid` of this host, which started at `start` when that is known, is gone:
/// no such process, a zombie (killed, not yet reaped), or another process under the same id;
/// `None` when this cannot be told.
fn process_gone(pid: u32, start: Option<&str>) -> Option<bool> {
    match proc_stat(pid) {
        Some(None) => Some(true),
        Some(Some((state, started))) => {
            Some(matches!(state.as_str(), "Z" | "X" | "x") || start.is_some_and(|s| s != started))
        }
        None => process_alive(pid).map(|alive| !alive),
    }
}

/// Whether process `pid` of this host runs (or cannot be told: `None`).
#[cfg(unix)]
fn process_alive(pid: u32) -> Option<bool> {
    let pid = libc::pid_t::try_from(pid).ok().filter(|pid| *pid > 0)?;
    // SAFETY: signal 0 is no signal: the call only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return Some(true);
    }
    // EPERM: it exists but belongs to another user.
    Some(io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> Option<bool> {
    None
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Whether the owner file with `bytes`, last modified at `modified`, is stale; the caller
/// holds the lock file's system lock exclusively.
fn stale(bytes: &[u8], modified: Option<SystemTime>) -> bool {
    let Ok(owner) = serde_json::from_slice::<Owner>(bytes) else {
        let age = modified.and_then(|m| m.elapsed().ok()).unwrap_or_default();
        return age > UNWRITTEN_STALE;
    };
    // Where the host name cannot be read, native owners write it empty, and an empty one is
    // taken as this host's: a native owner elsewhere would need this directory on a network
    // file system, where the system lock is all either process has.
    let host = this_host().unwrap_or_default();
    let same_host = owner.host == host;
    if same_host && owner.holder == "native" {
        return true;
    }
    if same_host && !host.is_empty() {
        if let Some(gone) = process_gone(owner.pid, owner.start.as_deref()) {
            return gone;
        }
    }
    now_ms() - owner.time_ms > UNCHECKED_STALE_MS
}

/// Whether a file another process made while it held or took over a lock (a temporary or
/// set-aside file named `<name>.tmp-<tag>` or `<name>.stale-<tag>`, or a takeover's
/// `<owner>.break`), last modified at `modified`, belongs to no running process. A native tag
/// is `<pid>-<n>`; a Node tag, `<pid>-<host>-<random>-<n>`, names a host by a hash this side
/// does not compute, so Node's files go by age here (a Node process removes them at once).
fn abandoned(name: &str, bytes: impl FnOnce() -> Option<Vec<u8>>, modified: SystemTime) -> bool {
    let age = modified.elapsed().unwrap_or_default();
    if age.as_secs_f64() * 1000.0 > UNCHECKED_STALE_MS {
        return true;
    }
    if name.ends_with(".owner.break") {
        // A break file holds its maker's owner record; it is never held for long.
        return match bytes().and_then(|b| serde_json::from_slice::<Owner>(&b).ok()) {
            Some(owner) if owner.host == this_host().unwrap_or_default() => {
                owner.pid != std::process::id()
                    && process_gone(owner.pid, owner.start.as_deref()).unwrap_or(false)
            }
            Some(_) => false,
            None => age > UNWRITTEN_STALE,
        };
    }
    let Some((_, tag)) = name
        .rsplit_once(".tmp-")
        .or_else(|| name.rsplit_once(".stale-"))
    else {
        return false;
    };
    let parts: Vec<&str> = tag.split('-').collect();
    match parts.as_slice() {
        [pid, number] if number.chars().all(|c| c.is_ascii_digit()) => pid
            .parse::<u32>()
            .is_ok_and(|pid| pid != std::process::id() && process_gone(pid, None).unwrap_or(false)),
        _ => false,
    }
}

/// Creates the owner file `path` for this process, waiting for another process's, and
/// returns what it wrote.
fn take_owner(path: &Path) -> io::Result<Vec<u8>> {
    let content = serde_json::to_vec(&Owner {
        pid: std::process::id(),
        host: this_host().unwrap_or_default().to_string(),
        time_ms: now_ms(),
        holder: "native".to_string(),
        start: own_start(),
    })
    .map_err(io::Error::other)?;
    let deadline = Instant::now() + OWNER_WAIT;
    loop {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut file) => {
                if let Err(error) = file.write_all(&content) {
                    let _ = std::fs::remove_file(path);
                    return Err(error);
                }
                return Ok(content);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
        let seen = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if stale(&seen, modified) {
            set_aside(path, &seen)?;
            continue;
        }
        if Instant::now() >= deadline {
            let holder = serde_json::from_slice::<Owner>(&seen).map_or_else(
                |_| "another process".to_string(),
                |o| format!("process {} on {}", o.pid, o.host),
            );
            return Err(io::Error::other(format!(
                "the session is locked by {holder} (for more than {} seconds); if no such process uses these sessions, remove {}",
                OWNER_WAIT.as_secs(),
                path.display()
            )));
        }
        std::thread::sleep(OWNER_POLL);
    }
}

/// Removes the stale owner file `path`, whose content was `seen`.
fn set_aside(path: &Path, seen: &[u8]) -> io::Result<()> {
    let number = TEMPORARY.fetch_add(1, Ordering::Relaxed);
    let mut aside = path.as_os_str().to_os_string();
    aside.push(format!(".stale-{}-{number}", std::process::id()));
    let aside = PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    }
    // Between the read and the rename another process may have set the stale file aside and
    // created its own: that live file goes back, unless yet another one is there already.
    if std::fs::read(&aside).is_ok_and(|moved| moved != seen) {
        let _ = std::fs::hard_link(&aside, path);
    }
    let _ = std::fs::remove_file(&aside);
    Ok(())
}
