//! The file store (`ccm_store::files`) over file operations that JavaScript provides: Node's
//! synchronous `fs` functions, wrapped by `FileSessionStore.open` (npm/ccm/glue/filestore.cjs.js).
//!
//! The format code is the CLI's, so a directory written by `ccm chat --store file:DIR` and one
//! written by a Node server are the same layout. Every call is synchronous, as the format
//! expects: a save runs to its commit without yielding, and its future completes on its first
//! poll.
//!
//! The object of primitives has this shape (also in npm/ccm/glue/fileprimitives.d.ts). Paths
//! are relative to the store's directory, separated by `/`; the empty path is the directory.
//!
//! ```ts
//! interface FilePrimitives {
//!   /** A name for this process that no other process using the directory at the same time has. */
//!   readonly tag: string;
//!   /** Opens a file; `null` when it is missing (`"create"` makes it empty instead). */
//!   open(path: string, access: "read" | "write" | "create"): number | null;
//!   size(handle: number): number;
//!   /** Up to `length` bytes from `offset`; fewer at the end of the file. */
//!   readAt(handle: number, offset: number, length: number): Uint8Array;
//!   /** Writes at `offset`, extending the file as needed. */
//!   writeAt(handle: number, offset: number, bytes: Uint8Array): void;
//!   truncate(handle: number, length: number): void;
//!   /** Returns once what was written is on the device (fsync). */
//!   sync(handle: number): void;
//!   close(handle: number): void;
//!   /** A whole small file, or `null` when it is missing. */
//!   readFile(path: string): Uint8Array | null;
//!   /** Atomically: a temporary file, synced, renamed over `path`, its directory synced. */
//!   replace(path: string, bytes: Uint8Array): void;
//!   /** Creates a directory and its parents; an existing one is fine. */
//!   createDir(path: string): void;
//!   /** The names in a directory; `[]` when it is missing. */
//!   listDir(path: string): string[];
//!   rename(from: string, to: string): void;
//!   /** Removes a directory tree; a missing one is fine. */
//!   removeTree(path: string): void;
//!   /** Takes the inter-process lock of `path`, waiting; `null` when the file is missing and
//!    *  `create` is false. */
//!   lock(path: string, exclusive: boolean, create: boolean): number | null;
//!   unlock(handle: number): void;
//!   /** The path as a person finds it, for messages (default: the directory joined with it). */
//!   describe?(path: string): string;
//! }
//! ```
//!
//! A primitive reports a failure by throwing; the thrown value's `code` decides what the store
//! makes of it: `"ENOENT"` is a missing file ([`io::ErrorKind::NotFound`]), `"ENOSPC"` a full
//! disk and `"EDQUOT"` an exhausted disk quota (both `quota` errors of the store, as a full disk
//! is for the CLI), and anything else a `storage` error carrying the thrown message.

use crate::error::{js_message, BrowserError};
use ccm_store::files::fs::{Access, FileHandle, FileSystem};
use ccm_store::files::FileStore;
use js_sys::{Array, Function, Reflect, Uint8Array};
use std::cell::Cell;
use std::fmt;
use std::io;
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};

/// The functions of the primitives object, looked up once.
struct Primitives {
    object: JsValue,
    open: Function,
    size: Function,
    read_at: Function,
    write_at: Function,
    truncate: Function,
    sync: Function,
    close: Function,
    read_file: Function,
    replace: Function,
    create_dir: Function,
    list_dir: Function,
    rename: Function,
    remove_tree: Function,
    lock: Function,
    unlock: Function,
    describe: Option<Function>,
}

/// The I/O error a thrown JavaScript value stands for.
fn io_error(thrown: &JsValue) -> io::Error {
    let code = if thrown.is_object() {
        Reflect::get(thrown, &JsValue::from_str("code"))
            .ok()
            .and_then(|code| code.as_string())
    } else {
        None
    };
    let kind = match code.as_deref() {
        Some("ENOENT") => io::ErrorKind::NotFound,
        Some("ENOSPC") => io::ErrorKind::StorageFull,
        Some("EDQUOT") => io::ErrorKind::QuotaExceeded,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, js_message(thrown))
}

/// The failure of a primitive that returned something other than what its contract says: a
/// mistake in the primitives, reported rather than trusted.
fn contract(name: &str, expected: &str, got: &JsValue) -> io::Error {
    let got = if got.is_null() {
        "null".to_string()
    } else if got.is_undefined() {
        "undefined".to_string()
    } else {
        got.js_typeof().as_string().unwrap_or_default()
    };
    io::Error::other(format!(
        "the file primitive {name} returned {got}, not {expected}"
    ))
}

/// A number a primitive returned as a size, offset or handle.
fn whole_number(name: &str, value: &JsValue) -> io::Result<f64> {
    match value.as_f64() {
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(n),
        _ => Err(contract(name, "a whole number", value)),
    }
}

/// Bytes a primitive returned.
fn bytes(name: &str, value: JsValue) -> io::Result<Vec<u8>> {
    match value.dyn_into::<Uint8Array>() {
        Ok(array) => Ok(array.to_vec()),
        Err(value) => Err(contract(name, "a Uint8Array", &value)),
    }
}

/// A handle or `null` that a primitive returned.
fn optional_handle(name: &str, value: &JsValue) -> io::Result<Option<f64>> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    whole_number(name, value).map(Some)
}

impl Primitives {
    /// Looks the functions up; a missing one is named.
    fn of(object: JsValue) -> Result<Primitives, String> {
        if !object.is_object() {
            return Err("the file primitives must be an object of functions".to_string());
        }
        let function = |name: &str| -> Result<Function, String> {
            Reflect::get(&object, &JsValue::from_str(name))
                .ok()
                .and_then(|value| value.dyn_into::<Function>().ok())
                .ok_or_else(|| format!("the file primitives have no function '{name}'"))
        };
        let describe = Reflect::get(&object, &JsValue::from_str("describe"))
            .ok()
            .and_then(|value| value.dyn_into::<Function>().ok());
        Ok(Primitives {
            open: function("open")?,
            size: function("size")?,
            read_at: function("readAt")?,
            write_at: function("writeAt")?,
            truncate: function("truncate")?,
            sync: function("sync")?,
            close: function("close")?,
            read_file: function("readFile")?,
            replace: function("replace")?,
            create_dir: function("createDir")?,
            list_dir: function("listDir")?,
            rename: function("rename")?,
            remove_tree: function("removeTree")?,
            lock: function("lock")?,
            unlock: function("unlock")?,
            describe,
            object,
        })
    }

    fn call(&self, function: &Function, args: &[JsValue]) -> io::Result<JsValue> {
        let result = match args {
            [a] => function.call1(&self.object, a),
            [a, b] => function.call2(&self.object, a, b),
            [a, b, c] => function.call3(&self.object, a, b, c),
            _ => function.apply(&self.object, &args.iter().collect::<Array>()),
        };
        result.map_err(|thrown| io_error(&thrown))
    }
}

/// The file system of a directory, through JavaScript primitives. It counts every byte it
/// writes, as the native one does.
#[derive(Clone)]
pub(crate) struct JsFs {
    primitives: Rc<Primitives>,
    /// The directory as the host named it, for messages.
    label: String,
    tag: String,
    written: Rc<Cell<u64>>,
}

impl fmt::Debug for JsFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsFs")
            .field("label", &self.label)
            .field("written", &self.written.get())
            .finish_non_exhaustive()
    }
}

impl JsFs {
    /// The file system of the directory `label` (for messages), through `primitives`.
    ///
    /// # Errors
    /// A sentence when `primitives` lacks a function or its `tag`.
    pub(crate) fn new(label: &str, primitives: JsValue) -> Result<JsFs, String> {
        let primitives = Primitives::of(primitives)?;
        let tag = Reflect::get(&primitives.object, &JsValue::from_str("tag"))
            .ok()
            .and_then(|tag| tag.as_string())
            .filter(|tag| !tag.is_empty())
            .ok_or_else(|| {
                "the file primitives have no 'tag' (a name for this process)".to_string()
            })?;
        Ok(JsFs {
            primitives: Rc::new(primitives),
            label: label.trim_end_matches(['/', '\\']).to_string(),
            tag,
            written: Rc::new(Cell::new(0)),
        })
    }

    /// Bytes written through this file system so far (record texts, index rows, log entries,
    /// intents and commits), as `NativeFs` counts them.
    #[allow(
        dead_code,
        reason = "for tests and hosts that measure saves, as FileStore::bytes_written does natively"
    )]
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written.get()
    }

    fn count(&self, bytes: usize) {
        self.written.set(self.written.get() + bytes as u64);
    }

    fn call(&self, function: &Function, args: &[JsValue]) -> io::Result<JsValue> {
        self.primitives.call(function, args)
    }
}

/// An open file of [`JsFs`], closed when dropped.
pub(crate) struct JsFile {
    fs: JsFs,
    handle: JsValue,
}

impl fmt::Debug for JsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsFile")
            .field("handle", &self.handle.as_f64())
            .finish()
    }
}

impl Drop for JsFile {
    fn drop(&mut self) {
        // A failed close loses nothing the store relies on: what must be durable was synced.
        let _ = self.fs.call(
            &self.fs.primitives.close,
            std::slice::from_ref(&self.handle),
        );
    }
}

fn number(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

impl FileHandle for JsFile {
    fn size(&self) -> io::Result<u64> {
        let size = self
            .fs
            .call(&self.fs.primitives.size, std::slice::from_ref(&self.handle))?;
        whole_number("size", &size).map(|n| n as u64)
    }

    fn read_at(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let read = self.fs.call(
            &self.fs.primitives.read_at,
            &[self.handle.clone(), number(offset), number(len)],
        )?;
        let read = bytes("readAt", read)?;
        if read.len() as u64 > len {
            return Err(io::Error::other(format!(
                "the file primitive readAt returned {} bytes where at most {len} were asked for",
                read.len()
            )));
        }
        Ok(read)
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.fs.call(
            &self.fs.primitives.write_at,
            &[
                self.handle.clone(),
                number(offset),
                Uint8Array::from(bytes).into(),
            ],
        )?;
        self.fs.count(bytes.len());
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.fs.call(
            &self.fs.primitives.truncate,
            &[self.handle.clone(), number(len)],
        )?;
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.fs
            .call(&self.fs.primitives.sync, std::slice::from_ref(&self.handle))?;
        Ok(())
    }
}

/// A lock held through [`JsFs`], released when dropped.
pub(crate) struct JsLock {
    fs: JsFs,
    handle: JsValue,
}

impl Drop for JsLock {
    fn drop(&mut self) {
        // A lock that cannot be released is the primitives' to break as stale.
        let _ = self.fs.call(
            &self.fs.primitives.unlock,
            std::slice::from_ref(&self.handle),
        );
    }
}

impl FileSystem for JsFs {
    type File = JsFile;
    type Lock = JsLock;

    fn open(&self, path: &str, access: Access) -> io::Result<Option<JsFile>> {
        let access = match access {
            Access::Read => "read",
            Access::Write => "write",
            Access::Create => "create",
        };
        let handle = self.call(
            &self.primitives.open,
            &[JsValue::from_str(path), JsValue::from_str(access)],
        )?;
        Ok(optional_handle("open", &handle)?.map(|_| JsFile {
            fs: self.clone(),
            handle,
        }))
    }

    fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        let read = self.call(&self.primitives.read_file, &[JsValue::from_str(path)])?;
        if read.is_null() || read.is_undefined() {
            return Ok(None);
        }
        bytes("readFile", read).map(Some)
    }

    fn replace(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.call(
            &self.primitives.replace,
            &[JsValue::from_str(path), Uint8Array::from(bytes).into()],
        )?;
        self.count(bytes.len());
        Ok(())
    }

    fn create_dir(&self, path: &str) -> io::Result<()> {
        self.call(&self.primitives.create_dir, &[JsValue::from_str(path)])?;
        Ok(())
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let listed = self.call(&self.primitives.list_dir, &[JsValue::from_str(path)])?;
        if !Array::is_array(&listed) {
            return Err(contract("listDir", "an array of names", &listed));
        }
        let mut names: Vec<String> = Array::from(&listed)
            .iter()
            .filter_map(|name| name.as_string())
            .collect();
        names.sort();
        Ok(names)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.call(
            &self.primitives.rename,
            &[JsValue::from_str(from), JsValue::from_str(to)],
        )?;
        Ok(())
    }

    fn remove_tree(&self, path: &str) -> io::Result<()> {
        self.call(&self.primitives.remove_tree, &[JsValue::from_str(path)])?;
        Ok(())
    }

    fn lock(&self, path: &str, exclusive: bool, create: bool) -> io::Result<Option<JsLock>> {
        let handle = self.call(
            &self.primitives.lock,
            &[
                JsValue::from_str(path),
                JsValue::from_bool(exclusive),
                JsValue::from_bool(create),
            ],
        )?;
        Ok(optional_handle("lock", &handle)?.map(|_| JsLock {
            fs: self.clone(),
            handle,
        }))
    }

    fn describe(&self, path: &str) -> String {
        if let Some(describe) = &self.primitives.describe {
            let described = self
                .call(describe, &[JsValue::from_str(path)])
                .ok()
                .and_then(|text| text.as_string());
            if let Some(text) = described {
                return text;
            }
        }
        if path.is_empty() {
            self.label.clone()
        } else {
            format!("{}/{path}", self.label)
        }
    }

    fn process_tag(&self) -> String {
        self.tag.clone()
    }
}

/// Opens the file store in the directory `directory_label` names, through `primitives` (the
/// object described in this module's documentation).
///
/// # Errors
/// [`StoreError::Storage`] when `primitives` lacks a function, or the directory cannot be
/// prepared (see `FileStore::with_fs`); [`StoreError::Quota`] when the disk is full.
pub(crate) fn open_files(
    directory_label: &str,
    primitives: JsValue,
) -> Result<FileStore<JsFs>, BrowserError> {
    // Primitives without every function are the caller's mistake, not the storage's.
    let fs = JsFs::new(directory_label, primitives).map_err(BrowserError::Argument)?;
    Ok(FileStore::with_fs(fs)?)
}
