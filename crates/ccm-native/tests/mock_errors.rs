//! Failures against the real mock server: every error class ends the turn with the session
//! exactly as before and the person's text returned; transient errors are retried after the
//! delay the provider asks for; cancellation stops a stream or a retry wait at once.

mod common;

use ccm_engine::TurnEvent;
use ccm_mock_llm::{Fault, ScriptedReply};
use ccm_native::{run_blocking_turn, CancelToken, HttpTransport, Timeouts};
use ccm_provider::{ProviderError, ProviderKind};
use common::{
    config, failed_turn, ok_turn, quick_retries, server, session_with_open_effort, settings,
    transport, KINDS,
};
use serde_json::json;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Whether an error is the one a test expects.
type ErrorCheck = fn(&ProviderError) -> bool;

const USER_TEXT: &str = "Let's also look at the docs. The auth bug is done.";

/// A first reply that changes the session (so undoing is tested too), then `fault`.
fn script_failure(server: &ccm_mock_llm::MockServer, fault: ScriptedReply) {
    server.enqueue_all([
        ScriptedReply::tool_call("open_effort", json!({"name": "docs"})),
        fault,
    ]);
}

/// Runs a turn that must fail, and checks that the session and its next context are exactly
/// what they were, and that the person's text came back.
fn assert_fails_cleanly(
    transport: &mut HttpTransport,
    stream: bool,
    check: impl Fn(&ProviderError) -> bool,
) -> ProviderError {
    let mut s = session_with_open_effort();
    let before = s.to_json();
    let plan_before = s.build_plan().to_json();
    let failure = failed_turn(&mut s, USER_TEXT, settings(stream), transport);
    assert!(
        check(&failure.error),
        "unexpected error: {:?}",
        failure.error
    );
    assert_eq!(failure.user_text, USER_TEXT);
    assert!(!s.in_turn());
    assert_eq!(
        s.to_json(),
        before,
        "the session changed after {:?}",
        failure.error
    );
    assert_eq!(s.build_plan().to_json(), plan_before);
    failure.error
}

#[test]
fn http_error_statuses_leave_the_session_unchanged() {
    for kind in KINDS {
        for stream in [false, true] {
            let statuses: [(u16, ErrorCheck); 7] = [
                (400, |e| {
                    matches!(e, ProviderError::BadRequest { status: 400, .. })
                }),
                (401, |e| {
                    matches!(
                        e,
                        ProviderError::Unauthorized {
                            api_key_given: true,
                            ..
                        }
                    )
                }),
                (403, |e| matches!(e, ProviderError::Forbidden { .. })),
                (
                    404,
                    |e| matches!(e, ProviderError::NotFound { model, .. } if model == "mock-model"),
                ),
                (429, |e| matches!(e, ProviderError::RateLimited { .. })),
                (500, |e| {
                    matches!(e, ProviderError::Server { status: 500, .. })
                }),
                (503, |e| {
                    matches!(e, ProviderError::Server { status: 503, .. })
                }),
            ];
            for (status, check) in statuses {
                let server = server();
                script_failure(
                    &server,
                    ScriptedReply::fault(Fault::status(status).message("scripted failure")),
                );
                let error = assert_fails_cleanly(&mut transport(&server, kind), stream, check);
                assert!(
                    error.to_string().contains("scripted failure"),
                    "{kind:?} {status}: {error}"
                );
                assert_eq!(server.requests().len(), 2, "{kind:?} {status}: no retry");
            }
        }
    }
}

#[test]
fn a_timeout_leaves_the_session_unchanged() {
    let server = server();
    script_failure(&server, ScriptedReply::fault(Fault::delay_ms(3_000)));
    let mut slow = HttpTransport::with_timeouts(
        config(&server, ProviderKind::OpenAiCompatible),
        Timeouts {
            first_byte: Duration::from_millis(300),
            ..common::timeouts()
        },
    );
    let started = Instant::now();
    let error = assert_fails_cleanly(&mut slow, false, |e| {
        *e == ProviderError::Timeout { after_ms: 300 }
    });
    assert_eq!(
        error.to_string(),
        "The provider did not answer within 300 ms."
    );
    assert!(started.elapsed() < Duration::from_millis(2_500));
}

#[test]
fn a_stream_that_stalls_midway_ends_with_a_clear_error() {
    let server = server();
    script_failure(
        &server,
        ScriptedReply::text("This answer stalls after its first word.")
            .with_fault(Fault::chunk_delay_ms(3_000)),
    );
    let mut impatient = HttpTransport::with_timeouts(
        config(&server, ProviderKind::OpenAiCompatible),
        Timeouts {
            idle: Duration::from_millis(300),
            ..common::timeouts()
        },
    );
    let started = Instant::now();
    // The person's text comes back and the session is as before (checked by the helper).
    let error = assert_fails_cleanly(
        &mut impatient,
        true,
        |e| matches!(e, ProviderError::StreamStalled { after_ms: 300, events, .. } if *events > 0),
    );
    assert!(started.elapsed() < Duration::from_millis(2_500));
    assert!(
        error.to_string().starts_with(
            "The provider sent nothing for 300 ms in the middle of its answer (after "
        ),
        "{error}"
    );
    assert!(!error.is_transient());
}

/// The bug this pins: a stream that sends a byte every few milliseconds is never silent for
/// the idle timeout, so without a total deadline the turn waited as long as the trickle
/// lasted (here minutes; from a stuck proxy, for ever).
#[test]
fn a_stream_that_trickles_ends_at_the_total_deadline() {
    for kind in KINDS {
        let server = server();
        script_failure(
            &server,
            ScriptedReply::text("A long answer that arrives one byte at a time. ".repeat(8))
                .with_fault(Fault::trickle_ms(10)),
        );
        let mut patient_but_bounded = HttpTransport::with_timeouts(
            config(&server, kind),
            Timeouts {
                idle: Duration::from_millis(500),
                total: Duration::from_millis(1_500),
                ..common::timeouts()
            },
        );
        let started = Instant::now();
        // The person's text comes back and the session is as before (checked by the helper).
        let error = assert_fails_cleanly(&mut patient_but_bounded, true, |e| {
            matches!(
                e,
                ProviderError::StreamDeadline {
                    after_ms: 1_500,
                    ..
                }
            )
        });
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_millis(4_000),
            "{kind:?}: {waited:?}"
        );
        assert!(
            error.to_string().starts_with(
                "The provider's answer was still arriving after 1.5 s, the longest a response may take"
            ),
            "{error}"
        );
        assert!(
            !error.is_transient(),
            "not retried while its start may be on screen"
        );
    }
}

#[test]
fn the_total_deadline_is_ten_minutes_by_default() {
    assert_eq!(Timeouts::default().total, Duration::from_secs(600));
    assert_eq!(Timeouts::default().first_byte, Duration::from_secs(300));
}

/// A `200` stream whose body is empty or only a byte order mark (and blank lines) holds no
/// answer: whatever type it claims, it ends as an empty, cut-off stream with a clear error,
/// never as a success or as a "page" with nothing to quote.
#[test]
fn an_empty_or_bom_only_stream_is_a_cut_off_stream() {
    for kind in KINDS {
        for content_type in ["text/event-stream", "text/plain", "application/json"] {
            for body in ["", "\u{feff}", "\u{feff}\n\n", "\r\n\r\n"] {
                let server = server();
                script_failure(
                    &server,
                    ScriptedReply::fault(Fault::body(body, content_type)),
                );
                let error = assert_fails_cleanly(&mut transport(&server, kind), true, |e| {
                    *e == ProviderError::StreamTruncated {
                        events: 0,
                        text_chars: 0,
                        tool_calls: 0,
                    }
                });
                assert_eq!(
                    error.to_string(),
                    "The response stream ended before any event arrived: the provider sent an empty stream and no answer.",
                    "{kind:?} {content_type} {body:?}"
                );
            }
        }
    }
}

#[test]
fn the_idle_timeout_is_a_minute_by_default() {
    assert_eq!(Timeouts::default().idle, Duration::from_secs(60));
    assert_eq!(ccm_provider::DEFAULT_IDLE_TIMEOUT_MS, 60_000);
}

/// A login page of a proxy in front of the API, served with `200 OK`.
const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title>\
    <style>body { color: red }</style><script>var x = 1 < 2;</script></head>\n\
    <body><h1>Sign in to continue</h1>\n<p>Your session has   expired.</p></body></html>";

#[test]
fn an_html_page_instead_of_a_stream_is_reported_as_one() {
    for kind in KINDS {
        let server = server();
        script_failure(
            &server,
            ScriptedReply::fault(Fault::body(LOGIN_PAGE, "text/html; charset=utf-8")),
        );
        let error = assert_fails_cleanly(&mut transport(&server, kind), true, |e| {
            e.to_string().contains("HTML page")
        });
        assert_eq!(
            error.to_string(),
            "The provider answered with an HTML page, not an event stream: \"Sign in Sign in \
             to continue Your session has expired.\". Check the base URL: it may lead to a web \
             page, a login page or a proxy rather than to the API.",
            "{kind:?}"
        );
        assert!(!error.is_transient(), "an HTML page is not retried");
    }
}

#[test]
fn a_plain_text_body_instead_of_a_stream_is_reported_as_one() {
    let server = server();
    script_failure(
        &server,
        ScriptedReply::fault(Fault::body(
            "Service is starting,\nplease wait.",
            "text/plain",
        )),
    );
    let error = assert_fails_cleanly(
        &mut transport(&server, ProviderKind::OpenAiCompatible),
        true,
        |e| e.to_string().contains("not an event stream"),
    );
    assert_eq!(
        error.to_string(),
        "The provider answered with text/plain content, not an event stream: \"Service is \
         starting, please wait.\". Check the base URL and that the server speaks the \
         provider's protocol."
    );
}

#[test]
fn a_refused_connection_leaves_the_session_unchanged() {
    // A port that was just free: bound, then closed, so nothing listens there.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for kind in KINDS {
        let base = format!("http://127.0.0.1:{port}/v1");
        let mut refused = HttpTransport::with_timeouts(
            ccm_provider::ProviderConfig::custom(kind, &base, None),
            common::timeouts(),
        );
        let error = assert_fails_cleanly(
            &mut refused,
            false,
            |e| matches!(e, ProviderError::ConnectionRefused { url } if url.starts_with(&base)),
        );
        assert!(error
            .to_string()
            .starts_with(&format!("Could not connect to {base}")));
    }
}

#[test]
fn a_stream_cut_off_midway_leaves_the_session_unchanged() {
    for kind in KINDS {
        for abruptly in [false, true] {
            let server = server();
            let mut fault = Fault::truncate_after(4);
            fault.truncate_abruptly = abruptly;
            script_failure(
                &server,
                ScriptedReply::text("This answer will never be finished, sadly, at all.")
                    .with_fault(fault),
            );
            assert_fails_cleanly(
                &mut transport(&server, kind),
                true,
                |e| matches!(e, ProviderError::StreamTruncated { events, .. } if *events > 0),
            );
        }
    }
}

#[test]
fn invalid_json_leaves_the_session_unchanged() {
    for kind in KINDS {
        for stream in [false, true] {
            let server = server();
            script_failure(
                &server,
                ScriptedReply::text("broken").with_fault(Fault::malformed_json()),
            );
            assert_fails_cleanly(&mut transport(&server, kind), stream, |e| {
                matches!(e, ProviderError::InvalidJson { .. })
            });
        }
    }
}

#[test]
fn a_connection_closed_without_a_response_leaves_the_session_unchanged() {
    let server = server();
    script_failure(
        &server,
        ScriptedReply::fault(Fault::close_without_response()),
    );
    assert_fails_cleanly(
        &mut transport(&server, ProviderKind::OpenAiCompatible),
        false,
        |e| matches!(e, ProviderError::Network(_)),
    );
}

#[test]
fn rate_limits_and_server_errors_are_retried_with_backoff() {
    for kind in KINDS {
        let server = server();
        let mut limited = Fault::status(429);
        // Fractional seconds keep the test short; the client reads them as 300 ms.
        limited.retry_after = Some("0.3".to_string());
        server.enqueue_all([
            ScriptedReply::fault(limited),
            ScriptedReply::fault(Fault::status(503)),
            ScriptedReply::text("Third time lucky."),
        ]);
        let mut s = common::session();
        let result = ok_turn(
            &mut s,
            "Hello there.",
            settings(false).with_retry(quick_retries()),
            &mut transport(&server, kind),
        );
        assert_eq!(result.reply, "Third time lucky.");
        let record = &result.requests[0];
        assert_eq!(record.attempts, 3);
        let delays: Vec<u64> = record.retries.iter().map(|r| r.delay_ms).collect();
        // Retry-After is honoured; without it the policy's backoff applies (50 ms, doubled).
        assert_eq!(delays, [300, 100], "{kind:?}");

        let log = server.requests();
        let statuses: Vec<Option<u16>> = log.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [Some(429), Some(503), Some(200)]);
        // The request log shows the waits: the server saw the attempts that far apart.
        assert!(log[1].at_ms - log[0].at_ms >= 300, "{kind:?}: {log:?}");
        assert!(log[2].at_ms - log[1].at_ms >= 100, "{kind:?}: {log:?}");
        assert_eq!(log[0].body, log[1].body, "a retry sends the same request");
    }
}

#[test]
fn retries_give_up_after_the_last_attempt_and_never_retry_client_errors() {
    let server = server();
    server.enqueue_all((0..3).map(|_| ScriptedReply::fault(Fault::status(502))));
    let mut s = session_with_open_effort();
    let before = s.to_json();
    let failure = failed_turn(
        &mut s,
        USER_TEXT,
        settings(false).with_retry(quick_retries()),
        &mut transport(&server, ProviderKind::OpenAiCompatible),
    );
    assert!(matches!(
        failure.error,
        ProviderError::Server { status: 502, .. }
    ));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(failure.requests[0].attempts, 3);
    assert_eq!(s.to_json(), before);

    let server = common::server();
    server.enqueue(ScriptedReply::fault(Fault::status(400)));
    let failure = failed_turn(
        &mut s,
        USER_TEXT,
        settings(false).with_retry(quick_retries()),
        &mut transport(&server, ProviderKind::OpenAiCompatible),
    );
    assert!(matches!(failure.error, ProviderError::BadRequest { .. }));
    assert_eq!(server.requests().len(), 1, "4xx is never retried");
}

#[test]
fn cancelling_mid_stream_restores_the_session_at_once() {
    for kind in KINDS {
        let server = server();
        let long_answer = (0..40)
            .map(|i| format!("word{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        script_failure(
            &server,
            ScriptedReply::text(long_answer).with_fault(Fault::chunk_delay_ms(100)),
        );
        let mut s = session_with_open_effort();
        let before = s.to_json();
        let cancel = CancelToken::new();
        let mut texts = 0;
        let started = Instant::now();
        let outcome = run_blocking_turn(
            &mut s,
            USER_TEXT,
            settings(true),
            &mut transport(&server, kind),
            &cancel,
            &mut |event| {
                if let TurnEvent::Delta {
                    delta: ccm_provider::StreamDelta::Text(_),
                    ..
                } = event
                {
                    texts += 1;
                    // The person presses "stop" as soon as the answer starts to appear.
                    cancel.cancel();
                }
            },
        );
        let Err(ccm_engine::RunError::Failed(failure)) = outcome else {
            panic!("{kind:?}: the turn was not cancelled");
        };
        assert!(failure.was_cancelled(), "{kind:?}: {}", failure.error);
        assert_eq!(failure.user_text, USER_TEXT);
        assert_eq!(texts, 1, "no delta is passed on after the cancellation");
        // The whole stream takes over 4 s; cancelling does not wait for it.
        assert!(started.elapsed() < Duration::from_secs(3), "{kind:?}");
        assert_eq!(s.to_json(), before);
    }
}

#[test]
fn cancelling_during_a_retry_wait_ends_the_wait() {
    let server = server();
    let mut limited = Fault::status(429);
    limited.retry_after = Some("4".to_string());
    script_failure(&server, ScriptedReply::fault(limited));
    let mut s = session_with_open_effort();
    let before = s.to_json();
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    let started = Instant::now();
    let outcome = run_blocking_turn(
        &mut s,
        USER_TEXT,
        settings(false).with_retry(quick_retries()),
        &mut transport(&server, ProviderKind::OpenAiCompatible),
        &cancel,
        &mut |event| {
            if let TurnEvent::Retrying(wait) = event {
                assert_eq!(wait.delay_ms, 4_000);
                canceller.cancel();
            }
        },
    );
    let Err(ccm_engine::RunError::Failed(failure)) = outcome else {
        panic!("the turn was not cancelled");
    };
    assert!(failure.was_cancelled());
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 2, "nothing was sent again");
    assert_eq!(s.to_json(), before);
}
