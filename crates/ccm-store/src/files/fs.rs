//! The file operations the store's format is written against, and their native
//! implementation over `std::fs`.
//!
//! Paths are relative to the store's directory and use `/`, so that another implementation
//! (Node's `fs` called from WebAssembly) can take them as they are.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// For reading; a missing file is `None`.
    Read,
    /// For reading and writing; a missing file is `None`.
    Write,
    /// For reading and writing, created empty when missing.
    Create,
}

/// An open file: reads and writes at offsets, so that no operation depends on a cursor.
pub(crate) trait FileHandle {
    /// The file's length.
    fn size(&self) -> io::Result<u64>;
    /// Up to `len` bytes from `offset`; fewer at the end of the file.
    fn read_at(&self, offset: u64, len: u64) -> io::Result<Vec<u8>>;
    /// Writes `bytes` at `offset`, extending the file (with zeros up to `offset`) as needed.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file to `len` bytes.
    fn truncate(&self, len: u64) -> io::Result<()>;
    /// Returns once everything written is on the storage device.
    fn sync(&self) -> io::Result<()>;
}

/// The operations on a directory tree that the format needs. Each is small enough to map
/// onto one or two calls of any file API.
pub(crate) trait FileSystem {
    /// An open file.
    type File: FileHandle;
    /// A held lock, released when dropped.
    type Lock;

    /// Opens `path` as `access` says.
    fn open(&self, path: &str, access: Access) -> io::Result<Option<Self::File>>;
    /// The whole content of a small file, or `None` when it does not exist.
    fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>>;
    /// Replaces `path` with `bytes` atomically: a reader, or a crash at any point, finds
    /// either the old content or the new one, and the new one is on the device on return.
    fn replace(&self, path: &str, bytes: &[u8]) -> io::Result<()>;
    /// Creates a directory and its parents, durably.
    fn create_dir(&self, path: &str) -> io::Result<()>;
    /// The names in a directory; none when it does not exist.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;
    /// Renames a file or directory atomically.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a directory and everything in it; a missing one is not an error.
    fn remove_tree(&self, path: &str) -> io::Result<()>;
    /// Takes the inter-process lock of the file `path`: exclusive for a writer, shared for a
    /// reader, waiting for it. `create` makes the lock file when missing; without it a
    /// missing lock file is `None`.
    fn lock(&self, path: &str, exclusive: bool, create: bool) -> io::Result<Option<Self::Lock>>;
    /// `path` as a person finds it, for error messages.
    fn describe(&self, path: &str) -> String;
}

/// The native file system under one directory. It counts every byte it writes.
#[derive(Debug, Clone)]
pub(crate) struct NativeFs {
    root: PathBuf,
    written: Arc<AtomicU64>,
}

/// A file of [`NativeFs`].
#[derive(Debug)]
pub(crate) struct NativeFile {
    file: File,
    written: Arc<AtomicU64>,
}

/// Names temporary files uniquely within a process; the process id keeps processes apart.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl NativeFs {
    pub(crate) fn new(root: PathBuf) -> NativeFs {
        NativeFs {
            root,
            written: Arc::new(AtomicU64::new(0)),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Bytes written through this file system so far.
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
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
    type Lock = File;

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

    fn lock(&self, path: &str, exclusive: bool, create: bool) -> io::Result<Option<File>> {
        let access = if create { Access::Create } else { Access::Read };
        let Some(file) = self.open(path, access)? else {
            return Ok(None);
        };
        let file = file.file;
        if exclusive {
            file.lock()?;
        } else {
            file.lock_shared()?;
        }
        Ok(Some(file))
    }

    fn describe(&self, path: &str) -> String {
        self.path(path).display().to_string()
    }
}
