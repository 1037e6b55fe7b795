//! The module's memory, measured: how many bytes the allocator has handed out and not taken
//! back (the live heap), beside the size of the WebAssembly memory itself.
//!
//! Every session of a process lives in one WebAssembly memory of at most 4 GiB, which can grow
//! but never shrink. The live heap is what the module's sessions, stores and caches hold right
//! now; the memory's size is the highest the live heap (plus the allocator's fragmentation) has
//! ever reached. A host watches both with `memoryUsage()`: a live heap that falls back after
//! sessions are freed while the memory stays flat is the allocator reusing what was freed.
//!
//! The count is kept by wrapping the allocator that Rust would use anyway; on wasm32 the
//! module has a single thread, so the relaxed atomics below cost no more than plain adds.

use crate::error::{Code, Failure};
use crate::types::to_js;
use serde::Serialize;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use wasm_bindgen::prelude::*;

/// The system allocator, counting the bytes it has handed out and not yet taken back.
struct CountingAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

impl CountingAllocator {
    fn added(size: usize) {
        let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        PEAK_LIVE_BYTES.fetch_max(live, Ordering::Relaxed);
    }

    fn removed(size: usize) {
        LIVE_BYTES.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counters only observe the sizes.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            CountingAllocator::added(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            CountingAllocator::added(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        CountingAllocator::removed(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            CountingAllocator::removed(layout.size());
            CountingAllocator::added(new_size);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Bytes the allocator has handed out and not taken back.
pub(crate) fn live_heap_bytes() -> u64 {
    LIVE_BYTES.load(Ordering::Relaxed) as u64
}

/// The size of the module's WebAssembly memory in bytes (what the process holds for it).
pub(crate) fn wasm_memory_bytes() -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::memory_size(0) as u64 * 65_536
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

/// The most a WebAssembly memory of this module can grow to: 4 GiB (wasm32's address space,
/// which Node and the browsers grant in full).
pub(crate) const MODULE_MEMORY_LIMIT: u64 = 4 << 30;

#[wasm_bindgen(typescript_custom_section)]
const MEMORY_USAGE_TS: &str = r#"
/** What `memoryUsage()` returns: the module's memory, shared by every session of the process
 * (or page). */
export interface MemoryUsage {
    /** Bytes the module's sessions, stores and caches hold now; freed sessions are not in it. */
    liveBytes: number;
    /** The highest `liveBytes` has been since the module was loaded. */
    peakLiveBytes: number;
    /** The size of the WebAssembly memory. It grows when the live heap needs room and never
     * shrinks; memory freed inside it is reused. */
    memoryBytes: number;
    /** The most the WebAssembly memory can grow to: 4 GiB, for every session together. */
    memoryLimitBytes: number;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `MemoryUsage`.
    #[wasm_bindgen(typescript_type = "MemoryUsage")]
    pub type JsMemoryUsage;
}

/// What `memoryUsage()` returns (see the TypeScript declaration above).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct MemoryUsage {
    /// Bytes the module's sessions, stores and caches hold now (freed ones excluded).
    pub live_bytes: f64,
    /// The highest `liveBytes` has been since the module was loaded.
    pub peak_live_bytes: f64,
    /// The size of the module's WebAssembly memory. It grows when the live heap needs room and
    /// never shrinks; memory freed inside it is reused.
    pub memory_bytes: f64,
    /// The most the WebAssembly memory can grow to (4 GiB), shared by every session of the
    /// process (or page).
    pub memory_limit_bytes: f64,
}

/// The module's memory: what its sessions hold now (`liveBytes`), the most they ever held
/// (`peakLiveBytes`), the size of the WebAssembly memory (`memoryBytes`, which grows and never
/// shrinks; freed memory is reused) and its limit (4 GiB, shared by every session of the
/// process). A server watches it to see that freed sessions give their memory back.
#[wasm_bindgen(js_name = memoryUsage)]
pub fn memory_usage() -> Result<JsMemoryUsage, JsValue> {
    to_js(&MemoryUsage {
        live_bytes: live_heap_bytes() as f64,
        peak_live_bytes: PEAK_LIVE_BYTES.load(Ordering::Relaxed) as f64,
        memory_bytes: wasm_memory_bytes() as f64,
        memory_limit_bytes: MODULE_MEMORY_LIMIT as f64,
    })
    .map_err(crate::error::fail)
}

// ----- Budgets -------------------------------------------------------------------------------

/// The memory budget of a session that sets none (`setDefaultMemoryBudget` changes it): 256 MiB,
/// a sixteenth of the module's memory. A session of ordinary chat holds a few kilobytes per
/// turn (some 4 KB for short messages, measured), so the budget is tens of thousands of turns;
/// a runaway session that fills it leaves fifteen sixteenths to the others, so it cannot take
/// the process down on its own.
pub(crate) const DEFAULT_SESSION_BUDGET: u64 = 256 << 20;

/// The smallest budget that can be set: below a megabyte an empty session's records and the
/// first long message would not fit.
pub(crate) const MIN_SESSION_BUDGET: u64 = 1 << 20;

/// The live heap beyond which no session may grow, whatever its budget: 3.5 GiB of the 4 GiB,
/// leaving the last half gigabyte for the working memory of calls in progress (counting a long
/// text, building a context, a save), so that the module refuses a change with an error the
/// host can act on instead of running out in the middle of a call and stopping every session.
pub(crate) const MODULE_LIVE_LIMIT: u64 = MODULE_MEMORY_LIMIT - (512 << 20);

/// How many bytes of memory a text of `bytes` bytes costs once stored: the text itself, its
/// terms in the recall index, its copy in the turn's records and in the plan of the next
/// request. Measured at about 2.2 for long prose; 3 keeps the check on the safe side.
pub(crate) const STORED_BYTES_PER_TEXT_BYTE: u64 = 3;

static DEFAULT_BUDGET: AtomicUsize = AtomicUsize::new(DEFAULT_SESSION_BUDGET as usize);

/// The budget of sessions that set none.
pub(crate) fn default_session_budget() -> u64 {
    DEFAULT_BUDGET.load(Ordering::Relaxed) as u64
}

/// A budget given by JavaScript: a whole number of bytes from a megabyte up to the module's
/// memory (4 GiB, which leaves a session only the module's own limit).
pub(crate) fn budget_arg(function: &str, value: &JsValue) -> Result<u64, Failure> {
    let Some(number) = value.as_f64() else {
        return Err(crate::args::arg(function, "bytes").wrong_type("a number of bytes", value));
    };
    if !(number.fract() == 0.0
        && number >= MIN_SESSION_BUDGET as f64
        && number <= MODULE_MEMORY_LIMIT as f64)
    {
        return Err(Failure::new(
            Code::Argument,
            format!(
                "{function}: bytes must be a whole number from {MIN_SESSION_BUDGET} (1 MiB) to {MODULE_MEMORY_LIMIT} (4 GiB, the module's whole memory, for no budget of the session's own); got {number}",
            ),
        ));
    }
    Ok(number as u64)
}

/// Sets the memory budget of every session that sets none of its own (`session.setMemoryBudget`),
/// those opened from a store included; 4 GiB (4294967296) leaves them only the module's limit.
/// The default is 256 MiB (268435456). A change that would take a session over its budget is
/// refused with `code: "memory_budget"`, before anything changes.
#[wasm_bindgen(js_name = setDefaultMemoryBudget)]
pub fn set_default_memory_budget(
    #[wasm_bindgen(unchecked_param_type = "number")] bytes: JsValue,
) -> Result<(), JsValue> {
    let bytes = budget_arg("setDefaultMemoryBudget", &bytes).map_err(crate::error::fail)?;
    DEFAULT_BUDGET.store(bytes as usize, Ordering::Relaxed);
    Ok(())
}

/// Megabytes with one decimal, for messages.
pub(crate) fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// Refuses a change that would add about `adding` bytes to a session that holds `holding`
/// under `budget`, or to a module whose live heap is near its end. `function` names the call.
pub(crate) fn check_room(
    function: &str,
    holding: u64,
    adding: u64,
    budget: u64,
) -> Result<(), Failure> {
    if holding.saturating_add(adding) > budget {
        return Err(Failure::new(
            Code::MemoryBudget,
            format!(
                "{function}: this session holds about {} of memory and this would add about {}, over its memory budget of {}; nothing was changed. Start a new session (or save this one and reopen it from its store, which reads only its working set), or raise the budget with session.setMemoryBudget(bytes) or setDefaultMemoryBudget(bytes)",
                megabytes(holding),
                megabytes(adding),
                megabytes(budget),
            ),
        )
        .with("budget", budget as f64)
        .with("footprint", holding as f64));
    }
    let live = live_heap_bytes();
    if live.saturating_add(adding) > MODULE_LIVE_LIMIT {
        return Err(Failure::new(
            Code::MemoryBudget,
            format!(
                "{function}: the module's memory, shared by every session of this process, holds {} of the {} it may use; nothing was changed. Free the sessions you no longer use (session.free(), or `using`), which gives their memory back at once, or lower the sessions' budget with setDefaultMemoryBudget(bytes)",
                megabytes(live),
                megabytes(MODULE_LIVE_LIMIT),
            ),
        )
        .with("budget", MODULE_LIVE_LIMIT as f64)
        .with("footprint", live as f64));
    }
    Ok(())
}

#[wasm_bindgen(typescript_custom_section)]
const MEMORY_FOOTPRINT_TS: &str = r#"
/** What `session.memoryFootprint()` returns: the memory the session holds, estimated in bytes,
 * and the budget it is held to. */
export interface MemoryFootprint {
    /** Message texts in memory, summaries, names and attachments. */
    texts: number;
    /** The recall index over every stored text, the effort search index, embeddings. */
    indexes: number;
    /** Per-turn records kept in memory: metrics, request telemetry, rewind records. */
    records: number;
    /** The sum of the three. */
    total: number;
    /** The session's memory budget (`memoryBudget`). */
    budget: number;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `MemoryFootprint`.
    #[wasm_bindgen(typescript_type = "MemoryFootprint")]
    pub type JsMemoryFootprint;
}

/// What `memoryFootprint()` returns (see the TypeScript declaration above).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FootprintWithBudget {
    pub(crate) texts: f64,
    pub(crate) indexes: f64,
    pub(crate) records: f64,
    pub(crate) total: f64,
    pub(crate) budget: f64,
}
