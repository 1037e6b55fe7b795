//! The blocking HTTP transport: one attempt of one [`LlmRequest`] against a real provider.
//!
//! The request runs on a worker thread that passes the response head and each body chunk
//! through a channel. The calling thread feeds the chunks into ccm-provider's
//! [`ProviderStream`] (streaming) or collects them (plain JSON), and checks the cancel flag
//! between chunks and at least every [`POLL_INTERVAL`] while it waits. That is what makes
//! cancellation prompt even while the socket read blocks: the caller stops waiting at once, and
//! the worker ends at its next chunk (or when the transport's timeouts run out), closing the
//! connection.

use crate::cancel::CancelToken;
use ccm_engine::LlmRequest;
use ccm_provider::{
    ErrorContext, ProviderConfig, ProviderError, ProviderResponse, ProviderStream, StreamDelta,
};
use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How often a waiting transport looks at the cancel flag when nothing arrives.
pub const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// The largest non-streaming body (or error body) read; a provider answer is far smaller, so
/// anything beyond is a misconfigured endpoint, not an answer.
const MAX_BODY_BYTES: usize = ccm_provider::output::MAX_RESPONSE_BODY_BYTES;

/// How long a request may take in each phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP and TLS).
    pub connect: Duration,
    /// From the request being sent to the response head. A non-streaming answer arrives
    /// whole, after the model has finished writing it, so this is generous by default.
    pub first_byte: Duration,
    /// The longest silence between two chunks of a body once the head arrived. A stream that
    /// stalls after part of the answer arrived ends with [`ProviderError::StreamStalled`], not
    /// with a timeout, so it is not retried while its beginning may be on screen; a body that
    /// never starts is a [`ProviderError::Timeout`], which is retried.
    pub idle: Duration,
    /// The longest the whole response may take, from the request to its last byte. A stream
    /// that trickles (never silent for `idle`, never finished) ends with
    /// [`ProviderError::StreamDeadline`] once this runs out.
    pub total: Duration,
}

impl Default for Timeouts {
    /// 10 s to connect, 5 minutes to the first byte, a minute of silence mid-body and ten
    /// minutes for the whole response (the same defaults as in the browser:
    /// [`ccm_provider::DEFAULT_HEADERS_TIMEOUT_MS`], [`ccm_provider::DEFAULT_IDLE_TIMEOUT_MS`],
    /// [`ccm_provider::DEFAULT_RESPONSE_DEADLINE_MS`]).
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_millis(ccm_provider::DEFAULT_HEADERS_TIMEOUT_MS),
            idle: Duration::from_millis(ccm_provider::DEFAULT_IDLE_TIMEOUT_MS),
            total: Duration::from_millis(ccm_provider::DEFAULT_RESPONSE_DEADLINE_MS),
        }
    }
}

/// What the worker thread reports.
enum Event {
    Head {
        status: u16,
        headers: Vec<(String, String)>,
    },
    Chunk(Vec<u8>),
    End,
    Failed(ureq::Error),
}

/// Sends [`LlmRequest`]s to one provider over HTTP, blocking the calling thread.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    config: ProviderConfig,
    timeouts: Timeouts,
    agent: ureq::Agent,
}

impl HttpTransport {
    /// A transport for the provider `config` describes, with the default [`Timeouts`].
    pub fn new(config: ProviderConfig) -> HttpTransport {
        HttpTransport::with_timeouts(config, Timeouts::default())
    }

    /// A transport with the given timeouts.
    pub fn with_timeouts(config: ProviderConfig, timeouts: Timeouts) -> HttpTransport {
        let agent = ureq::Agent::config_builder()
            // Error statuses are answers too: their bodies explain what went wrong.
            .http_status_as_error(false)
            .timeout_connect(Some(timeouts.connect))
            .timeout_recv_response(Some(timeouts.first_byte))
            // A backstop for the worker thread after the caller gave up waiting on it; the
            // caller enforces the idle timeout itself, precisely.
            .timeout_per_read(Some(timeouts.first_byte.max(timeouts.idle)))
            .user_agent(concat!("ccm/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        HttpTransport {
            config,
            timeouts,
            agent,
        }
    }

    /// The provider this transport talks to.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The timeouts in force.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Sends one attempt of `request` and waits for the whole answer. Streamed text and
    /// tool-call starts are passed to `on_delta` as they arrive.
    ///
    /// # Errors
    /// Every [`ProviderError`]: the provider's HTTP errors, [`ProviderError::Timeout`],
    /// [`ProviderError::ConnectionRefused`], [`ProviderError::Network`], a stream cut off
    /// before its end ([`ProviderError::StreamTruncated`]), invalid JSON, and
    /// [`ProviderError::Cancelled`] when `cancel` was set. Retrying is not done here: the turn
    /// engine decides that, and the caller waits.
    pub fn send(
        &self,
        request: &LlmRequest,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let http = request.to_http(&self.config)?;
        let context = request.error_context(&self.config);
        let (sender, receiver) = mpsc::channel();
        let agent = self.agent.clone();
        std::thread::Builder::new()
            .name("ccm-http".to_string())
            .spawn(move || fetch(&agent, http, &sender))
            .map_err(|error| {
                ProviderError::Network(format!("could not start the HTTP thread: {error}"))
            })?;
        let streaming = request.options.stream;
        Reception {
            transport: self,
            context: &context,
            receiver,
            cancel,
            stream: streaming.then(|| ProviderStream::new(self.config.kind)),
        }
        .run(on_delta)
    }
}

/// Performs the request on the worker thread and reports everything through `events`. Stops as
/// soon as the receiving side is gone (the caller cancelled or timed out).
fn fetch(agent: &ureq::Agent, http: ccm_provider::HttpRequest, events: &Sender<Event>) {
    let mut builder = agent.post(&http.url);
    for (name, value) in &http.headers {
        builder = builder.header(name, value);
    }
    let response = match builder.send(&http.body) {
        Ok(response) => response,
        Err(error) => {
            let _ = events.send(Event::Failed(error));
            return;
        }
    };
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    if events.send(Event::Head { status, headers }).is_err() {
        return;
    }
    let mut reader = response.into_body().into_reader();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let event = match reader.read(&mut buffer) {
            Ok(0) => Event::End,
            Ok(read) => Event::Chunk(buffer[..read].to_vec()),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => Event::Failed(ureq::Error::from(error)),
        };
        let last = !matches!(event, Event::Chunk(_));
        if events.send(event).is_err() || last {
            return;
        }
    }
}

/// The calling thread's side of one attempt.
struct Reception<'a> {
    transport: &'a HttpTransport,
    context: &'a ErrorContext,
    receiver: Receiver<Event>,
    cancel: &'a CancelToken,
    /// Set for streaming requests.
    stream: Option<ProviderStream>,
}

impl Reception<'_> {
    fn run(
        mut self,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ProviderResponse, ProviderError> {
        let timeouts = self.transport.timeouts;
        // Before the head, ureq enforces the connect and first-byte limits and reports which
        // one ran out; this deadline only guards against a worker that never reports.
        let head_deadline = timeouts.connect + timeouts.first_byte + Duration::from_secs(1);
        let mut head: Option<(u16, Vec<(String, String)>)> = None;
        let mut body: Vec<u8> = Vec::new();
        let mut last_event = Instant::now();
        let started = last_event;
        loop {
            if self.cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            if started.elapsed() >= timeouts.total {
                let total_ms = millis(timeouts.total);
                if self.answer_started(&head) {
                    // Still arriving, but too slowly to ever be worth the wait: what came is
                    // used if it was in fact complete, and otherwise the answer is reported
                    // incomplete (not retried, since its beginning may be on screen).
                    return self
                        .stream
                        .take()
                        .expect("answer_started checked it")
                        .finish_past_deadline(total_ms);
                }
                return Err(ProviderError::Timeout { after_ms: total_ms });
            }
            let (limit, limit_ms) = match head {
                None => (head_deadline, millis(timeouts.first_byte)),
                Some(_) => (timeouts.idle, millis(timeouts.idle)),
            };
            let waited = last_event.elapsed();
            if waited >= limit {
                if self.answer_started(&head) {
                    // A stream that stalls after part of the answer arrived is not retried
                    // blindly: the answer may be on screen. If it was in fact complete (the
                    // server only failed to close the connection), it is used.
                    return self
                        .stream
                        .take()
                        .expect("answer_started checked it")
                        .finish_stalled(limit_ms);
                }
                return Err(ProviderError::Timeout { after_ms: limit_ms });
            }
            let event = match self
                .receiver
                .recv_timeout(POLL_INTERVAL.min(limit - waited))
            {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ProviderError::Network(
                        "the HTTP thread ended without reporting a response".to_string(),
                    ))
                }
            };
            last_event = Instant::now();
            let success = head
                .as_ref()
                .is_some_and(|(status, _)| (200..300).contains(status));
            match event {
                Event::Head { status, headers } => {
                    if let Some(stream) = &mut self.stream {
                        let content_type = headers
                            .iter()
                            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                            .map(|(_, value)| value.as_str());
                        stream.set_content_type(content_type);
                    }
                    head = Some((status, headers));
                }
                Event::Chunk(bytes) => match (&mut self.stream, success) {
                    (Some(stream), true) => {
                        for delta in stream.push(&bytes)? {
                            if self.cancel.is_cancelled() {
                                return Err(ProviderError::Cancelled);
                            }
                            on_delta(delta);
                        }
                    }
                    _ => {
                        if body.len() + bytes.len() > MAX_BODY_BYTES {
                            // A successful body is the model's answer and gets the same message
                            // as every other host's (what the limit is and what to ask for);
                            // an error page that large is the server's fault, not the model's.
                            return Err(if success {
                                ccm_provider::body_too_large()
                            } else {
                                ProviderError::Protocol(format!(
                                    "the error response body is larger than {} MiB",
                                    MAX_BODY_BYTES >> 20
                                ))
                            });
                        }
                        body.extend_from_slice(&bytes);
                    }
                },
                Event::End => break,
                Event::Failed(error) => {
                    if self.answer_started(&head) {
                        // Part of the answer arrived (and may be on screen): the stream decides
                        // whether it was complete, and an incomplete one is reported as
                        // truncated, which is not retried.
                        return self
                            .stream
                            .take()
                            .expect("answer_started checked it")
                            .finish();
                    }
                    return Err(self.map_error(error, head.is_some()));
                }
            }
        }
        let (status, headers) = head.ok_or_else(|| {
            ProviderError::Network("the connection closed before a response arrived".to_string())
        })?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body);
            return Err(ProviderError::from_http(
                status,
                &headers,
                &text,
                self.context,
            ));
        }
        match self.stream {
            Some(stream) => stream.finish(),
            None => {
                let text = String::from_utf8(body).map_err(|error| ProviderError::InvalidJson {
                    context: format!("response body (it is not UTF-8: {error})"),
                    snippet: String::new(),
                })?;
                ccm_provider::parse_response(self.transport.config.kind, &text)
            }
        }
    }

    /// Whether a successful streaming response has delivered part of its body.
    fn answer_started(&self, head: &Option<(u16, Vec<(String, String)>)>) -> bool {
        let success = head
            .as_ref()
            .is_some_and(|(status, _)| (200..300).contains(status));
        success
            && self
                .stream
                .as_ref()
                .is_some_and(|stream| stream.bytes_received() > 0)
    }

    /// Turns a transport failure into the provider error people see.
    fn map_error(&self, error: ureq::Error, head_received: bool) -> ProviderError {
        let timeouts = self.transport.timeouts;
        let url = &self.context.url;
        match error {
            ureq::Error::Timeout(which) => ProviderError::Timeout {
                after_ms: match which {
                    ureq::Timeout::Connect | ureq::Timeout::Resolve => millis(timeouts.connect),
                    _ if head_received => millis(timeouts.idle),
                    _ => millis(timeouts.first_byte),
                },
            },
            ureq::Error::Io(io) => match io.kind() {
                io::ErrorKind::ConnectionRefused => {
                    ProviderError::ConnectionRefused { url: url.clone() }
                }
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ProviderError::Timeout {
                    after_ms: millis(if head_received {
                        timeouts.idle
                    } else {
                        timeouts.first_byte
                    }),
                },
                io::ErrorKind::UnexpectedEof if head_received => ProviderError::Network(
                    "the connection closed in the middle of the response".to_string(),
                ),
                _ => ProviderError::Network(format!("{io} ({url})")),
            },
            ureq::Error::HostNotFound => {
                ProviderError::Network(format!("the host of {url} could not be found"))
            }
            ureq::Error::BadUri(reason) => {
                ProviderError::InvalidConfig(format!("the URL {url} is not valid: {reason}"))
            }
            ureq::Error::ConnectionFailed => {
                ProviderError::Network(format!("could not connect to {url}"))
            }
            other => ProviderError::Network(format!("{other} ({url})")),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
