//! The server's life: the public [`MockServer`] handle, the accept loop, the lifetime watchdog and the per-connection thread. What a request
//! gets in reply is decided in `routes.rs`; what the threads share is `shared.rs`.
//!
//! Threads: one accept loop, one watchdog, and one short-lived thread per connection, at
//! most [`MockConfig::max_connections`] at a time (the accept loop waits for a free slot,
//! which pushes back on a client that opens too many connections instead of failing it).

use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::http::{self, ReadError};
use crate::openai;
use crate::record::RecordedRequest;
use crate::routes::{route, send_json, Ending};
use crate::script::ScriptedReply;
use crate::shared::{wait_on, Life, Shared, State, DEFAULT_MODEL};

/// How long a connection may sit silent while its request is read.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a write may block on a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the watchdog checks the idle and lifetime limits.
const WATCHDOG_TICK: Duration = Duration::from_millis(50);
/// How long a finished connection waits for the client to close its side (see
/// [`close_gracefully`]).
const LINGER: Duration = Duration::from_secs(2);

/// How to run a [`MockServer`].
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// The port on 127.0.0.1; 0 (the default) lets the system pick a free one.
    pub port: u16,
    /// Stop after this long without a request in flight. `None` (the library default)
    /// never stops for idleness; the binary defaults to 120 seconds.
    pub idle_exit: Option<Duration>,
    /// Stop this long after starting, whatever happens. `None` (the library default) has no
    /// limit; the binary defaults to 1800 seconds.
    pub max_lifetime: Option<Duration>,
    /// Replies queued at start.
    pub script: Vec<ScriptedReply>,
    /// The most connections handled at once (default 64).
    pub max_connections: usize,
    /// Print one line per logged request on stderr (default off).
    pub log_to_stderr: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            port: 0,
            idle_exit: None,
            max_lifetime: None,
            script: Vec::new(),
            max_connections: 64,
            log_to_stderr: false,
        }
    }
}

/// A running mock provider server on 127.0.0.1. It stops when dropped.
///
/// The methods mirror the control endpoints, so a Rust test can script and inspect the
/// server in-process while its client talks to it over real TCP.
pub struct MockServer {
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server.
    ///
    /// # Panics
    /// Panics when the port cannot be bound; with the default port 0 that only happens when
    /// the machine is out of ports or threads. Use [`MockServer::try_start`] to handle it.
    pub fn start(config: MockConfig) -> MockServer {
        Self::try_start(config).unwrap_or_else(|e| panic!("ccm-mock-llm could not start: {e}"))
    }

    /// Starts a server, returning the bind or thread error instead of panicking.
    ///
    /// # Errors
    /// Returns the I/O error of binding `127.0.0.1:port` or of spawning the server threads.
    pub fn try_start(config: MockConfig) -> io::Result<MockServer> {
        // Only the loopback address is ever bound: the server must not be reachable from
        // anywhere but this machine.
        let listener = TcpListener::bind(("127.0.0.1", config.port))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            addr,
            started: Instant::now(),
            idle_exit: config.idle_exit,
            max_lifetime: config.max_lifetime,
            max_connections: config.max_connections.max(1),
            log_to_stderr: config.log_to_stderr,
            state: Mutex::new(State {
                queue: config.script.into(),
                log: Vec::new(),
                models: vec![DEFAULT_MODEL.to_string()],
                next_seq: 0,
            }),
            stopping: AtomicBool::new(false),
            life: Mutex::new(Life {
                stopped: false,
                open_connections: 0,
                active_requests: 0,
                last_activity: Instant::now(),
            }),
            life_changed: Condvar::new(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("ccm-mock-accept".into())
                .spawn(move || accept_loop(&shared, listener))?
        };
        let spawned = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("ccm-mock-watchdog".into())
                .spawn(move || watchdog(&shared))
        };
        let watchdog = match spawned {
            Ok(handle) => handle,
            Err(e) => {
                shared.request_stop();
                let _ = acceptor.join();
                return Err(e);
            }
        };
        Ok(MockServer {
            shared,
            acceptor: Some(acceptor),
            watchdog: Some(watchdog),
        })
    }

    /// The address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.shared.addr.port()
    }

    /// The base URL without a trailing slash, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Appends one reply to the queue (like `POST /__mock/enqueue`).
    pub fn enqueue(&self, reply: ScriptedReply) {
        self.shared.state().queue.push_back(reply);
    }

    /// Appends several replies to the queue, in order.
    pub fn enqueue_all(&self, replies: impl IntoIterator<Item = ScriptedReply>) {
        self.shared.state().queue.extend(replies);
    }

    /// Replaces the queue (like `POST /__mock/script`).
    pub fn set_script(&self, replies: Vec<ScriptedReply>) {
        self.shared.state().queue = replies.into();
    }

    /// The replies still queued, in order.
    pub fn queued(&self) -> Vec<ScriptedReply> {
        self.shared.state().queue.iter().cloned().collect()
    }

    /// Every request logged so far (like `GET /__mock/requests`).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.state().log.clone()
    }

    /// Clears the queue and the request log and lists `mock-model` again (like
    /// `POST /__mock/reset`). Sequence numbers keep counting, so ids stay unique across a
    /// reset.
    pub fn reset(&self) {
        let mut state = self.shared.state();
        state.queue.clear();
        state.log.clear();
        state.models = vec![DEFAULT_MODEL.to_string()];
    }

    /// Asks the server to stop accepting connections; requests in flight finish on their
    /// own threads. Returns at once.
    pub fn shutdown(&self) {
        self.shared.request_stop();
    }

    /// Whether the accept loop has ended (after [`MockServer::shutdown`],
    /// `POST /__mock/shutdown`, the idle limit or the lifetime limit).
    pub fn is_stopped(&self) -> bool {
        self.shared.life().stopped
    }

    /// Blocks until the accept loop has ended, then waits up to `grace` for connections
    /// still being served (so a response to `/__mock/shutdown` is fully written).
    pub fn wait(&self, grace: Duration) {
        let mut life = self.shared.life();
        while !life.stopped {
            life = wait_on(&self.shared.life_changed, life, WATCHDOG_TICK);
        }
        let deadline = Instant::now() + grace;
        while life.open_connections > 0 && Instant::now() < deadline {
            life = wait_on(&self.shared.life_changed, life, WATCHDOG_TICK);
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.request_stop();
        if let Some(handle) = self.acceptor.take() {
            let _ = handle.join();
        }
        if let Some(handle) = self.watchdog.take() {
            let _ = handle.join();
        }
    }
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.shared.addr)
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

/// Keeps `open_connections` right even if a connection thread panics.
struct ConnectionSlot(Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut life = self.0.life();
        life.open_connections -= 1;
        life.last_activity = Instant::now();
        drop(life);
        self.0.life_changed.notify_all();
    }
}

/// Marks a request in flight, so a slow stream is not mistaken for idleness.
struct ActiveRequest<'a>(&'a Shared);

impl<'a> ActiveRequest<'a> {
    fn begin(shared: &'a Shared) -> Self {
        let mut life = shared.life();
        life.active_requests += 1;
        life.last_activity = Instant::now();
        ActiveRequest(shared)
    }
}

impl Drop for ActiveRequest<'_> {
    fn drop(&mut self) {
        let mut life = self.0.life();
        life.active_requests -= 1;
        life.last_activity = Instant::now();
    }
}

/// Accepts connections until a stop is requested, one thread per connection.
fn accept_loop(shared: &Arc<Shared>, listener: TcpListener) {
    loop {
        {
            let mut life = shared.life();
            while life.open_connections >= shared.max_connections && !shared.is_stopping() {
                life = wait_on(&shared.life_changed, life, WATCHDOG_TICK);
            }
        }
        if shared.is_stopping() {
            break;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if shared.is_stopping() {
                    break;
                }
                shared.life().open_connections += 1;
                let slot = ConnectionSlot(Arc::clone(shared));
                let spawned =
                    thread::Builder::new()
                        .name("ccm-mock-conn".into())
                        .spawn(move || {
                            let slot = slot;
                            handle_connection(&slot.0, stream);
                        });
                // If the thread could not start, the closure (and with it the slot and the
                // stream) has been dropped, which released the slot and closed the socket.
                drop(spawned);
            }
            Err(_) => {
                if shared.is_stopping() {
                    break;
                }
                // Usually out of file descriptors: back off instead of spinning.
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
    drop(listener);
    shared.life().stopped = true;
    shared.life_changed.notify_all();
}

/// Requests a stop when the idle or lifetime limit is reached.
fn watchdog(shared: &Shared) {
    let mut life = shared.life();
    loop {
        if shared.is_stopping() {
            return;
        }
        let over_lifetime = shared
            .max_lifetime
            .is_some_and(|max| shared.started.elapsed() >= max);
        let idle = shared
            .idle_exit
            .is_some_and(|idle| life.active_requests == 0 && life.last_activity.elapsed() >= idle);
        if over_lifetime || idle {
            drop(life);
            shared.request_stop();
            return;
        }
        life = wait_on(&shared.life_changed, life, WATCHDOG_TICK);
    }
}

/// Serves one connection: read one request, answer it, close.
fn handle_connection(shared: &Shared, mut stream: TcpStream) {
    // Without TCP_NODELAY small SSE chunks can sit in Nagle's buffer, which would blur the
    // chunk delays that tests measure.
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let request = match http::read_request(&mut stream) {
        Ok(request) => request,
        Err(ReadError::Silent) => return,
        Err(ReadError::Reject { status, message }) => {
            let _active = ActiveRequest::begin(shared);
            let body =
                openai::simple_error(&format!("bad request: {message}"), "invalid_request_error");
            let _ = send_json(&mut stream, status, &body, &[], None);
            close_gracefully(stream);
            return;
        }
    };
    let _active = ActiveRequest::begin(shared);
    match route(shared, &request, &mut stream) {
        Ending::Graceful => close_gracefully(stream),
        Ending::Abort => {
            let _ = stream.shutdown(Shutdown::Both);
        }
        Ending::StopServer => {
            close_gracefully(stream);
            shared.request_stop();
        }
    }
}

/// Sends our FIN, then reads until the client closes (bounded in time and bytes). Closing
/// a socket with unread input makes the kernel send a reset, which can destroy a response
/// the client has not read yet; draining first avoids that.
fn close_gracefully(mut stream: TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 8192];
    let mut drained = 0usize;
    while Instant::now() < deadline && drained < 4 * 1024 * 1024 {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if http::is_read_timeout(&e) => continue,
            Err(_) => break,
        }
    }
}
