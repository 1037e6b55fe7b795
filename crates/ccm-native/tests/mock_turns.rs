//! Whole turns against the real mock server, over both protocols: several rounds of tool
//! calls, streamed tool calls whose arguments arrive in fragments, summaries on close with
//! their failure paths, and the usage reconciliation of every request.

mod common;

use ccm_core::EffortStatus;
use ccm_engine::{RequestPurpose, ToolHandling, TurnEvent};
use ccm_mock_llm::{estimate_prompt_tokens, Fault, ScriptedReply, ScriptedToolCall};
use ccm_native::{run_blocking_turn, CancelToken};
use ccm_provider::{ProviderKind, StreamDelta};
use common::{
    ok_turn, server, session, session_with_open_effort, settings, transport, turn_with, KINDS,
};
use serde_json::json;

/// The chat requests in the server's log (preflights and others left out).
fn chat_requests(server: &ccm_mock_llm::MockServer) -> Vec<ccm_mock_llm::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.body.is_some())
        .collect()
}

#[test]
fn a_turn_runs_several_rounds_of_tool_calls() {
    for kind in KINDS {
        let server = server();
        server.enqueue_all([
            ScriptedReply::tool_calls(vec![
                ScriptedToolCall::new("open_effort", json!({"name": "auth bug"})),
                ScriptedToolCall::new("open_effort", json!({"name": "billing export"})),
            ]),
            ScriptedReply::tool_call("switch_effort", json!({"id": "auth-bug"})),
            ScriptedReply::text("Both are open; the auth bug comes first."),
        ]);
        let mut s = session();
        let result = ok_turn(
            &mut s,
            "Let's work on the auth bug and the billing export.",
            settings(false),
            &mut transport(&server, kind),
        );
        assert_eq!(result.tool_rounds, 2, "{kind:?}");
        assert_eq!(
            result.reply,
            "--- Started effort: auth-bug ---\n--- Started effort: billing-export ---\n\
             --- Switched to effort: auth-bug ---\n\nBoth are open; the auth bug comes first."
        );
        assert_eq!(s.efforts().open_ids(), ["auth-bug", "billing-export"]);
        assert_eq!(s.efforts().active_id(), Some("auth-bug"));

        let log = chat_requests(&server);
        assert_eq!(log.len(), 3, "{kind:?}");
        for request in &log {
            assert_eq!(
                request.tool_names().len(),
                ccm_core::tool_definitions().len()
            );
            assert!(!request.summary_request);
        }
        // Each later request quotes the ids of the calls it answers: once in the assistant
        // message that made them, once in the result.
        for call in &result.tool_calls {
            let body = log[call.round as usize].body.as_ref().unwrap().to_string();
            assert_eq!(
                body.matches(&call.call_id).count(),
                2,
                "{kind:?} {}",
                call.call_id
            );
        }
        // The effort opened in round 1 is in the next request's context.
        let second = log[1].body.as_ref().unwrap().to_string();
        assert!(second.contains("[Effort log: billing-export]"), "{kind:?}");
        assert!(!log[0]
            .body
            .as_ref()
            .unwrap()
            .to_string()
            .contains("[Effort log:"));
    }
}

#[test]
fn streamed_tool_calls_are_accumulated_across_chunks() {
    for kind in KINDS {
        let server = server();
        let description = "Users get 401 errors one hour after login; the refresh token TTL \
                           is 3600 seconds in config/auth.yaml.";
        server.enqueue_all([
            ScriptedReply::tool_call(
                "open_effort",
                json!({"name": "auth bug", "description": description}),
            ),
            ScriptedReply::text("Started the auth bug. Which client sends the refresh call?"),
        ]);
        let mut s = session();
        let mut deltas: Vec<StreamDelta> = Vec::new();
        let result = run_blocking_turn(
            &mut s,
            "Let's work on the auth bug.",
            settings(true),
            &mut transport(&server, kind),
            &CancelToken::new(),
            &mut |event| {
                if let TurnEvent::Delta { delta, .. } = event {
                    deltas.push(delta.clone());
                }
            },
        )
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        // The arguments arrived in 5-byte fragments and were put together before running.
        assert_eq!(
            s.efforts().get("auth-bug").unwrap().description.as_deref(),
            Some(description),
            "{kind:?}"
        );
        assert!(result.tool_calls[0].ok);
        assert!(
            matches!(&deltas[0], StreamDelta::ToolCallStarted { name, .. } if name == "open_effort"),
            "{kind:?}: {deltas:?}"
        );
        let text: String = deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, result.model_text);
        assert!(deltas.len() > 5, "the text came word by word: {deltas:?}");
        for request in chat_requests(&server) {
            assert!(request.stream, "{kind:?}");
        }
        // The usage of a stream is reported (OpenAI only when asked for, which the core does).
        assert!(
            result.requests.iter().all(|r| r.usage.is_some()),
            "{kind:?}"
        );
    }
}

#[test]
fn closing_an_effort_asks_for_its_summary() {
    for kind in KINDS {
        let server = server();
        let written = "Fixed the 401s: refresh token TTL in config/auth.yaml raised from 3600 \
                       to 86400 seconds.";
        server.enqueue_all([
            ScriptedReply::tool_call("close_effort", json!({"id": "auth-bug"})),
            ScriptedReply::text(written).for_summary_requests(),
            ScriptedReply::text("Concluded the auth bug."),
        ]);
        let mut s = session_with_open_effort();
        let result = ok_turn(
            &mut s,
            "Raised it to 86400 and it works. We're done.",
            settings(true),
            &mut transport(&server, kind),
        );
        let log = chat_requests(&server);
        assert_eq!(log.len(), 3, "{kind:?}");
        let summary_request = &log[1];
        assert!(summary_request.summary_request, "{kind:?}");
        assert!(summary_request.tool_names().is_empty());
        assert!(!summary_request.stream, "summary requests never stream");
        let body = summary_request.body.as_ref().unwrap().to_string();
        assert!(body.contains("USER: The refresh token TTL is 3600 in config/auth.yaml."));
        assert!(body.contains("USER: Raised it to 86400 and it works. We're done."));

        let effort = s.efforts().get("auth-bug").unwrap();
        assert_eq!(effort.status, EffortStatus::Concluded);
        assert_eq!(effort.summary.as_ref().unwrap().text, written);
        assert_eq!(effort.messages.len(), 6, "the raw log is kept");
        assert_eq!(
            result.tool_calls[0].handling,
            ToolHandling::ClosedWithRequestedSummary
        );
        assert_eq!(
            result.reply,
            format!("--- Concluded effort: auth-bug ---\n{written}\n\nConcluded the auth bug.")
        );
        assert!(matches!(
            result.requests[1].purpose,
            RequestPurpose::Summary { .. }
        ));
    }
}

#[test]
fn a_failed_or_empty_summary_request_falls_back_and_says_why() {
    let cases = [
        (
            ScriptedReply::fault(Fault::status(500).message("summariser down")),
            "(extractive summary: the summary request failed: The provider had a server error \
             (HTTP 500): summariser down)",
        ),
        (
            ScriptedReply::fault(Fault::malformed_json()),
            "(extractive summary: the summary request failed: Could not read the provider's",
        ),
        (
            ScriptedReply::default(),
            "(extractive summary: the model returned an empty summary)",
        ),
    ];
    for (summary_reply, expected) in cases {
        for kind in KINDS {
            let server = server();
            server.enqueue_all([
                ScriptedReply::tool_call("close_effort", json!({})),
                summary_reply.clone().for_summary_requests(),
                ScriptedReply::text("Concluded."),
            ]);
            let mut s = session_with_open_effort();
            let result = ok_turn(
                &mut s,
                "That's resolved.",
                settings(false),
                &mut transport(&server, kind),
            );
            let effort = s.efforts().get("auth-bug").unwrap();
            assert_eq!(effort.status, EffortStatus::Concluded);
            let summary = &effort.summary.as_ref().unwrap().text;
            assert!(summary.starts_with("auth bug: "), "{summary}");
            assert_eq!(effort.messages.len(), 6, "the raw log is kept");
            assert_eq!(
                result.tool_calls[0].handling,
                ToolHandling::ClosedWithFallbackSummary
            );
            let banner = &result.report.banners[0];
            assert!(banner.contains(expected), "{kind:?}: {banner}");
            assert_eq!(chat_requests(&server).len(), 3);
        }
    }
}

#[test]
fn a_close_that_cannot_succeed_makes_no_summary_request() {
    let server = server();
    server.enqueue_all([
        ScriptedReply::tool_call("close_effort", json!({"id": "no-such-effort"})),
        ScriptedReply::text("There is no such effort."),
    ]);
    let mut s = session_with_open_effort();
    let result = ok_turn(
        &mut s,
        "Close the other thing.",
        settings(false),
        &mut transport(&server, ProviderKind::OpenAiCompatible),
    );
    assert_eq!(chat_requests(&server).len(), 2);
    assert!(chat_requests(&server).iter().all(|r| !r.summary_request));
    assert!(result.tool_calls[0].result["error"]
        .as_str()
        .unwrap()
        .starts_with("no effort with id 'no-such-effort'"));
    assert_eq!(
        s.efforts().get("auth-bug").unwrap().status,
        EffortStatus::Open
    );
}

#[test]
fn usage_is_reconciled_for_every_request() {
    for kind in KINDS {
        for stream in [false, true] {
            let server = server();
            server.enqueue_all([
                ScriptedReply::tool_call("effort_status", json!({})),
                ScriptedReply::text("Nothing is open yet."),
            ]);
            let mut s = session();
            let (outcome, _) = turn_with(
                &mut s,
                "What is open?",
                settings(stream),
                &mut transport(&server, kind),
                &CancelToken::new(),
            );
            let result = outcome.unwrap();
            let log = chat_requests(&server);
            assert_eq!(result.requests.len(), 2);
            for (record, request) in result.requests.iter().zip(&log) {
                let reported = estimate_prompt_tokens(request.body.as_ref().unwrap());
                let check = record
                    .reconciliation
                    .unwrap_or_else(|| panic!("{kind:?} stream={stream}: no usage"));
                assert_eq!(check.reported_prompt_tokens, reported);
                assert_eq!(
                    check.estimated_prompt_tokens,
                    record.estimate.context_tokens + record.estimate.turn_extra_tokens
                );
                assert_eq!(
                    check.difference,
                    reported as i64 - check.estimated_prompt_tokens as i64
                );
            }
            // The second request carries the tool exchange on top of the plan.
            assert_eq!(result.requests[0].estimate.turn_extra_tokens, 0);
            assert!(result.requests[1].estimate.turn_extra_tokens > 0);
        }
    }
}
