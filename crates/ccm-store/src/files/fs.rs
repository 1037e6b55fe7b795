//! The file operations the store's format is written against, and their native
//! implementation over `std::fs` ([`NativeFs`], not on wasm32).
//!
//! Another crate implements [`FileSystem`] to run the same format elsewhere: `ccm-browser`
//! does so over JavaScript functions, which Node's synchronous `fs` module provides, so that
//! a Node host and the CLI write the same files. Paths are relative to the store's directory
//! and use `/`, so that any implementation can take them as they are; the empty path is the
//! directory itself.
//!
//! # Locks
//!
//! A lock of the store is a pair of files in `locks/`: `<name>.lock`, which native processes
//! lock with the operating system's file lock, and `<name>.lock.owner`, which every process
//! (native or not) creates exclusively while it holds the lock and removes when it lets go.
//! Node has no synchronous file lock, so the owner file is the protocol both kinds of process
//! honour; the operating system's lock is what lets a native process tell at once that an
//! owner file left by another native process is stale. [`NativeFs`] describes the protocol.

use std::io;

#[cfg(not(target_arch = "wasm32"))]
mod native;

#[cfg(not(target_arch = "wasm32"))]
pub use native::{NativeFile, NativeFs, NativeLock};

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// For reading; a missing file is `None`.
    Read,
    /// For reading and writing; a missing file is `None`.
    Write,
    /// For reading and writing, created empty when missing.
    Create,
}

/// An open file: reads and writes at offsets, so that no operation depends on a cursor. The
/// file is closed when the value is dropped.
pub trait FileHandle {
    /// The file's length.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn size(&self) -> io::Result<u64>;
    /// Up to `len` bytes from `offset`; fewer at the end of the file.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn read_at(&self, offset: u64, len: u64) -> io::Result<Vec<u8>>;
    /// Writes `bytes` at `offset`, extending the file (with zeros up to `offset`) as needed.
    ///
    /// # Errors
    /// The failure of the underlying call; [`io::ErrorKind::StorageFull`] or
    /// [`io::ErrorKind::QuotaExceeded`] when the disk is full, which the store reports as a
    /// quota error.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file to `len` bytes.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn truncate(&self, len: u64) -> io::Result<()>;
    /// Returns once everything written is on the storage device.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn sync(&self) -> io::Result<()>;
}

/// The operations on a directory tree that the format needs. Each is small enough to map
/// onto one or two calls of any file API. A missing file or directory is reported as
/// [`io::ErrorKind::NotFound`] where it is an error at all.
pub trait FileSystem {
    /// An open file.
    type File: FileHandle;
    /// A held lock, released when dropped.
    type Lock;

    /// Opens `path` as `access` says.
    ///
    /// # Errors
    /// The failure of the underlying call (a missing file is `Ok(None)`, not an error).
    fn open(&self, path: &str, access: Access) -> io::Result<Option<Self::File>>;
    /// The whole content of a small file, or `None` when it does not exist.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>>;
    /// Replaces `path` with `bytes` atomically: a reader, or a crash at any point, finds
    /// either the old content or the new one, and the new one is on the device on return.
    ///
    /// # Errors
    /// The failure of the underlying calls; the old content is then still in place.
    fn replace(&self, path: &str, bytes: &[u8]) -> io::Result<()>;
    /// Creates a directory and its parents, durably; an existing one is not an error.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn create_dir(&self, path: &str) -> io::Result<()>;
    /// The names in a directory; none when it does not exist.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;
    /// Renames a file or directory atomically.
    ///
    /// # Errors
    /// The failure of the underlying call; [`io::ErrorKind::NotFound`] when `from` is missing.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a directory and everything in it; a missing one is not an error.
    ///
    /// # Errors
    /// The failure of the underlying call.
    fn remove_tree(&self, path: &str) -> io::Result<()>;
    /// Takes the inter-process lock of the file `path`: exclusive for a writer, shared for a
    /// reader (an implementation may make every lock exclusive), waiting for it. `create`
    /// makes the lock file when missing; without it a missing lock file is `None`. The store
    /// never takes a second lock while it holds one, so a lock that is not reentrant is fine.
    ///
    /// # Errors
    /// The failure of the underlying call, or a lock that another process keeps too long.
    fn lock(&self, path: &str, exclusive: bool, create: bool) -> io::Result<Option<Self::Lock>>;
    /// `path` as a person finds it, for error messages.
    fn describe(&self, path: &str) -> String;
    /// A name for this process that no other process using the directory at the same time
    /// has, for the names of the store's temporary entries (the trash of a delete).
    fn process_tag(&self) -> String;
}
