//! What the server's threads share: the scripted queue and the log (`State`), the connection
//! bookkeeping (`Life`) and the limits, behind one `Shared`. The accept loop and the connection
//! threads (`server.rs`) and the routes that answer a request (`routes.rs`) both read it, so it
//! sits below both of them.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::inspect::ChatFacts;
use crate::record::{RecordedRequest, ReplySource};
use crate::reply::default_reply;
use crate::script::ScriptedReply;

/// State shared by the server's threads.
pub(crate) struct Shared {
    pub(crate) addr: SocketAddr,
    pub(crate) started: Instant,
    pub(crate) idle_exit: Option<Duration>,
    pub(crate) max_lifetime: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) log_to_stderr: bool,
    pub(crate) state: Mutex<State>,
    pub(crate) stopping: AtomicBool,
    pub(crate) life: Mutex<Life>,
    /// Signalled whenever `life` changes or a stop is requested.
    pub(crate) life_changed: Condvar,
}

/// The scripted queue and the log.
pub(crate) struct State {
    pub queue: VecDeque<ScriptedReply>,
    pub log: Vec<RecordedRequest>,
    /// The model names `GET …/models` lists (`POST /__mock/models` replaces them).
    pub models: Vec<String>,
    pub(crate) next_seq: u64,
}

/// What `GET …/models` lists until a test sets its own names.
pub(crate) const DEFAULT_MODEL: &str = "mock-model";

/// Connection and activity bookkeeping for the idle limit, the connection limit and `wait`.
pub(crate) struct Life {
    pub(crate) stopped: bool,
    pub(crate) open_connections: usize,
    pub(crate) active_requests: usize,
    pub(crate) last_activity: Instant,
}

/// Locks a mutex even if a thread panicked while holding it: the data here stays usable
/// (at worst a log entry is missing), and one bad request must not take the server down.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on a condition variable for at most `timeout`, tolerating poisoning like [`lock`].
pub(crate) fn wait_on<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    cv.wait_timeout(guard, timeout)
        .unwrap_or_else(PoisonError::into_inner)
        .0
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn life(&self) -> MutexGuard<'_, Life> {
        lock(&self.life)
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn request_stop(&self) {
        if self.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        drop(self.life());
        self.life_changed.notify_all();
        // The accept loop blocks in accept(); a connection of our own wakes it up so it can
        // see the flag. If the loop already ended, the connection is refused, which is fine.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
    }

    pub(crate) fn elapsed_ms(&self) -> u64 {
        self.started
            .elapsed()
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// Appends an entry to the log, giving it its sequence number and time.
    pub(crate) fn push_log(&self, entry: RecordedRequest) -> u64 {
        self.append(self.state(), entry)
    }

    /// Appends under a lock the caller already holds, then releases it before tracing.
    fn append(&self, mut state: MutexGuard<'_, State>, mut entry: RecordedRequest) -> u64 {
        entry.seq = state.next_seq;
        entry.at_ms = self.elapsed_ms();
        state.next_seq += 1;
        let seq = entry.seq;
        let line = self.trace_line(&entry);
        state.log.push(entry);
        drop(state);
        print_trace(line);
        seq
    }

    /// Takes the first queued reply that matches the request (or makes the default reply)
    /// and logs the request, in one step so concurrent requests cannot take the same reply.
    pub(crate) fn take_reply(
        &self,
        mut entry: RecordedRequest,
        facts: &ChatFacts,
    ) -> (u64, ScriptedReply) {
        let mut state = self.state();
        let (reply, source) = match state.queue.iter().position(|r| reply_matches(r, facts)) {
            Some(i) => (
                state.queue.remove(i).unwrap_or_default(),
                ReplySource::Script,
            ),
            None => (default_reply(facts), ReplySource::Default),
        };
        let fault = reply.fault.clone().unwrap_or_default();
        entry.status = if fault.close_without_response {
            None
        } else {
            Some(fault.status.unwrap_or(200))
        };
        entry.reply_source = Some(source);
        entry.reply = Some(reply.clone());
        let seq = self.append(state, entry);
        (seq, reply)
    }

    /// The `--verbose` line for a log entry. It is printed after the state lock is released:
    /// a parent that does not drain stderr can block the write, and that must stall only
    /// this connection, not every request.
    fn trace_line(&self, entry: &RecordedRequest) -> Option<String> {
        if !self.log_to_stderr {
            return None;
        }
        let status = entry
            .status
            .map_or_else(|| "no response".to_string(), |s| s.to_string());
        let source = match entry.reply_source {
            Some(ReplySource::Script) => {
                match entry.reply.as_ref().and_then(|r| r.label.as_deref()) {
                    Some(label) => format!(" [script: {label}]"),
                    None => " [script]".to_string(),
                }
            }
            Some(ReplySource::Default) => " [default reply]".to_string(),
            None => String::new(),
        };
        Some(format!(
            "ccm-mock-llm: #{} {} {} -> {}{}",
            entry.seq, entry.method, entry.path, status, source
        ))
    }
}

/// Prints a `--verbose` line, if there is one.
fn print_trace(line: Option<String>) {
    if let Some(line) = line {
        eprintln!("{line}");
    }
}

/// Whether a queued reply may answer a request; see [`crate::ReplyMatch`].
fn reply_matches(reply: &ScriptedReply, facts: &ChatFacts) -> bool {
    let (wants_summary, needle) = match &reply.when {
        Some(when) => (when.summary_request, when.last_user_contains.as_deref()),
        None => (false, None),
    };
    wants_summary == facts.summary_request
        && needle.is_none_or(|n| facts.last_user_text.contains(n))
}
