//! The turn engine's state machine, driven with hand-made responses (no server): tool rounds,
//! bad tool calls, the forced final answer, summaries on close and their fallbacks, retries,
//! failures and cancellation, usage reconciliation, and how the reply is composed.

use ccm_core::{EffortStatus, Session};
use ccm_engine::{
    EngineError, EngineSettings, LlmRequest, RequestOutcome, RequestPurpose, Step, SummaryPolicy,
    ToolHandling, TurnEngine, TurnFailure, TurnResult,
};
use ccm_provider::{
    FinishReason, ProviderError, ProviderResponse, RetryPolicy, ToolCall, ToolChoice, Usage,
    WireMessage,
};
use ccm_test_support::portable_tests;
use ccm_test_support::{concluded_effort, session, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

fn tools(calls: Vec<ToolCall>) -> ProviderResponse {
    ProviderResponse {
        text: String::new(),
        tool_calls: calls,
        finish_reason: FinishReason::ToolCalls,
        usage: None,
    }
}

fn text(text: &str) -> ProviderResponse {
    ProviderResponse {
        text: text.to_string(),
        tool_calls: Vec::new(),
        finish_reason: FinishReason::Stop,
        usage: None,
    }
}

fn settings() -> EngineSettings {
    EngineSettings::new("test-model")
}

/// Drives a turn, answering each request with the next scripted outcome, and returns every
/// request sent (retries included) and the final step.
fn drive(
    session: &mut Session,
    user: &str,
    settings: EngineSettings,
    outcomes: Vec<Result<ProviderResponse, ProviderError>>,
) -> (Vec<LlmRequest>, Step) {
    let mut engine = TurnEngine::begin(session, user, 10, settings).expect("no turn in progress");
    let mut outcomes = outcomes.into_iter();
    let mut sent = Vec::new();
    loop {
        match engine.next(session).expect("engine used correctly") {
            Step::Send(request) => {
                let outcome = outcomes
                    .next()
                    .unwrap_or_else(|| panic!("unexpected extra request {:?}", request.purpose));
                sent.push(request);
                engine.receive(session, outcome, 20).unwrap();
            }
            Step::Wait(_) => {}
            done => {
                assert!(
                    outcomes.next().is_none(),
                    "not every scripted answer was used"
                );
                return (sent, done);
            }
        }
    }
}

fn done(step: Step) -> TurnResult {
    match step {
        Step::Done(result) => *result,
        other => panic!("expected the turn to end, got {other:?}"),
    }
}

fn failed(step: Step) -> TurnFailure {
    match step {
        Step::Failed(failure) => *failure,
        other => panic!("expected the turn to fail, got {other:?}"),
    }
}

/// The messages after the pending user message: this turn's tool exchange.
fn exchange(request: &LlmRequest) -> &[WireMessage] {
    let user = request
        .messages
        .iter()
        .rposition(|m| matches!(m, WireMessage::User(_)))
        .unwrap();
    &request.messages[user + 1..]
}

fn tool_result(message: &WireMessage) -> serde_json::Value {
    match message {
        WireMessage::ToolResult { content, .. } => serde_json::from_str(content).unwrap(),
        other => panic!("expected a tool result, got {other:?}"),
    }
}

/// A session with an open, active effort `auth-bug` holding one exchange.
fn session_with_open_effort() -> Session {
    let mut s = session();
    turn(
        &mut s,
        "Let's work on the auth bug: users get 401 after an hour.",
        &[("open_effort", r#"{"name": "auth bug"}"#)],
        "Started.",
    );
    turn(
        &mut s,
        "The refresh token TTL is 3600 in config/auth.yaml.",
        &[],
        "That explains the hour.",
    );
    s
}

portable_tests! {
    fn several_calls_per_answer_and_several_rounds() {
        let mut s = session();
        let (sent, step) = drive(
            &mut s,
            "Let's work on the auth bug and the billing export.",
            settings(),
            vec![
                Ok(ProviderResponse {
                    text: "I'll open both.".to_string(),
                    ..tools(vec![
                        call("c1", "open_effort", r#"{"name": "auth bug"}"#),
                        call("c2", "open_effort", r#"{"name": "billing export"}"#),
                    ])
                }),
                Ok(tools(vec![call("c3", "switch_effort", r#"{"id": "auth-bug"}"#)])),
                Ok(text("Both are open; we start with the auth bug.")),
            ],
        );
        let result = done(step);
        assert_eq!(sent.len(), 3);
        assert_eq!(result.tool_rounds, 2);
        assert!(!result.final_answer_forced);

        // Every request offers the tools; none forces the answer.
        for (i, request) in sent.iter().enumerate() {
            assert_eq!(
                request.purpose,
                RequestPurpose::Turn { round: i as u32 + 1, final_answer_forced: false }
            );
            assert_eq!(request.options.tool_choice, ToolChoice::Auto);
            assert_eq!(request.tools.len(), ccm_core::tool_definitions().len());
        }
        // The plan is built afresh for each request: the efforts opened in round 1 are in the
        // second request's context, before the person's message and the tool exchange.
        let headers = |r: &LlmRequest| {
            r.messages
                .iter()
                .filter(|m| matches!(m, WireMessage::System(t) if t.starts_with("[Effort log:")))
                .count()
        };
        assert_eq!(headers(&sent[0]), 0);
        assert_eq!(headers(&sent[1]), 2);
        assert!(exchange(&sent[0]).is_empty());
        let second = exchange(&sent[1]);
        assert_eq!(second.len(), 3, "{second:?}");
        assert!(matches!(&second[0], WireMessage::Assistant { tool_calls, .. } if tool_calls.len() == 2));
        assert_eq!(tool_result(&second[1])["id"], "auth-bug");
        assert_eq!(tool_result(&second[2])["id"], "billing-export");
        assert_eq!(exchange(&sent[2]).len(), 5);

        assert_eq!(
            result.reply,
            "--- Started effort: auth-bug ---\n--- Started effort: billing-export ---\n\
             --- Switched to effort: auth-bug ---\n\nI'll open both.\n\n\
             Both are open; we start with the auth bug."
        );
        // What the model said before its tool calls is part of its answer.
        assert_eq!(result.model_text, "I'll open both.\n\nBoth are open; we start with the auth bug.");
        assert_eq!(s.efforts().active_id(), Some("auth-bug"));
        assert_eq!(s.efforts().open_ids(), ["auth-bug", "billing-export"]);
        assert_eq!(result.tool_calls.len(), 3);
        assert!(result.tool_calls.iter().all(|c| c.ok && c.handling == ToolHandling::Executed));
        assert_eq!(result.tool_calls[2].round, 2);
        assert_eq!(
            result.tool_calls[0].banner.as_deref(),
            Some("--- Started effort: auth-bug ---")
        );
    }

    fn bad_tool_calls_get_error_results_and_the_turn_goes_on() {
        let mut s = session_with_open_effort();
        let before = s.to_json();
        let (sent, step) = drive(
            &mut s,
            "Try a few things.",
            settings(),
            vec![
                Ok(tools(vec![
                    call("bad_json", "open_effort", r#"{"name": "cache"#),
                    call("unknown_tool", "delete_everything", "{}"),
                    call("unknown_id", "expand_effort", r#"{"id": "no-such-effort"}"#),
                    call("wrong_state", "expand_effort", r#"{"id": "auth-bug"}"#),
                    call("close_unknown", "close_effort", r#"{"id": "nope"}"#),
                    call("close_bad", "close_effort", r#"{"id": 7}"#),
                ])),
                Ok(text("Nothing worked, sorry.")),
            ],
        );
        let result = done(step);
        // No summary request was made for the close calls that could not succeed.
        assert_eq!(sent.len(), 2);
        let results: Vec<serde_json::Value> =
            exchange(&sent[1])[1..].iter().map(tool_result).collect();
        let errors: Vec<&str> = results.iter().map(|r| r["error"].as_str().unwrap()).collect();
        assert!(errors[0].starts_with("invalid arguments for open_effort: not valid JSON"), "{}", errors[0]);
        assert!(errors[1].starts_with("unknown tool 'delete_everything'; available tools: open_effort"), "{}", errors[1]);
        assert!(errors[2].starts_with("no effort with id 'no-such-effort'"), "{}", errors[2]);
        assert!(errors[3].starts_with("cannot expand 'auth-bug': it is open"), "{}", errors[3]);
        assert!(errors[4].starts_with("no effort with id 'nope'"), "{}", errors[4]);
        assert!(errors[5].starts_with("invalid arguments for close_effort"), "{}", errors[5]);
        assert!(result.tool_calls.iter().all(|c| !c.ok && c.banner.is_none()));
        assert_eq!(result.reply, "Nothing worked, sorry.");
        // Only the exchange was stored: the failed calls changed nothing else.
        assert_eq!(s.efforts().open_ids(), ["auth-bug"]);
        assert_eq!(s.efforts().get("auth-bug").unwrap().messages.len(), 6);
        assert_ne!(s.to_json(), before);
    }

    fn the_answer_is_forced_after_the_last_tool_round() {
        let mut s = session();
        let status = || Ok(tools(vec![call("s", "effort_status", "{}")]));
        let mut forced = tools(vec![call("late", "open_effort", r#"{"name": "late"}"#)]);
        forced.text = "Here is where things stand.".to_string();
        let (sent, step) = drive(
            &mut s,
            "What is open?",
            settings().with_max_tool_rounds(2),
            vec![status(), status(), Ok(forced)],
        );
        let result = done(step);
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[1].options.tool_choice, ToolChoice::Auto);
        assert_eq!(sent[2].options.tool_choice, ToolChoice::None);
        assert_eq!(sent[2].purpose, RequestPurpose::Turn { round: 3, final_answer_forced: true });
        // The definitions are still sent: the conversation contains tool calls.
        assert_eq!(sent[2].tools.len(), ccm_core::tool_definitions().len());
        assert!(result.final_answer_forced);
        assert_eq!(result.tool_rounds, 2);
        // The call in the forced answer was recorded and ignored.
        let ignored = result.tool_calls.last().unwrap();
        assert_eq!(ignored.handling, ToolHandling::IgnoredInForcedAnswer);
        assert!(!ignored.ok);
        assert!(s.efforts().get("late").is_none());
        assert_eq!(result.reply, "Here is where things stand.");
    }

    fn the_default_allows_five_rounds() {
        let mut s = session();
        let status = || Ok(tools(vec![call("s", "effort_status", "{}")]));
        let mut outcomes: Vec<_> = (0..5).map(|_| status()).collect();
        outcomes.push(Ok(text("Done looking.")));
        let (sent, step) = drive(&mut s, "Look around.", settings(), outcomes);
        assert_eq!(sent.len(), 6);
        assert!(sent[..5].iter().all(|r| r.options.tool_choice == ToolChoice::Auto));
        assert_eq!(sent[5].options.tool_choice, ToolChoice::None);
        assert_eq!(done(step).tool_rounds, 5);
    }

    fn closing_asks_for_a_summary_of_the_raw_log() {
        let mut s = session_with_open_effort();
        let (sent, step) = drive(
            &mut s,
            "Raised the TTL to 86400 and it works. We're done.",
            settings(),
            vec![
                Ok(tools(vec![call("c1", "close_effort", "{}")])),
                Ok(text("Summary: Fixed 401s by raising the refresh token TTL in config/auth.yaml from 3600 to 86400.")),
                Ok(text("Concluded the auth bug.")),
            ],
        );
        let result = done(step);
        assert_eq!(sent.len(), 3);
        let summary = &sent[1];
        assert_eq!(summary.purpose, RequestPurpose::Summary { effort_id: "auth-bug".into() });
        assert!(summary.tools.is_empty());
        assert!(!summary.options.stream);
        assert_eq!(summary.plan_id, None);
        let WireMessage::User(prompt) = &summary.messages[1] else { panic!("no user message") };
        assert!(prompt.contains("USER: The refresh token TTL is 3600 in config/auth.yaml."));
        assert!(prompt.contains("ASSISTANT: That explains the hour."));
        // The turn's own message belongs to the effort's log and carries the final facts.
        assert!(prompt.contains("USER: Raised the TTL to 86400 and it works. We're done."));
        assert!(matches!(&summary.messages[0], WireMessage::System(p) if p.contains("identifiers")));

        let written = "Fixed 401s by raising the refresh token TTL in config/auth.yaml from 3600 to 86400.";
        let effort = s.efforts().get("auth-bug").unwrap();
        assert_eq!(effort.status, EffortStatus::Concluded);
        assert_eq!(effort.summary.as_ref().unwrap().text, written);
        // The raw log is kept, with this turn's exchange appended.
        assert_eq!(effort.messages.len(), 6);
        // The model reads the conclusion as the result of its call.
        let result_json = tool_result(&exchange(&sent[2])[1]);
        assert_eq!(result_json["summary"], written);
        assert_eq!(result_json["summary_source"], "provided");
        assert_eq!(result.tool_calls[0].handling, ToolHandling::ClosedWithRequestedSummary);
        assert_eq!(
            result.tool_calls[0].banner.as_deref(),
            Some(format!("--- Concluded effort: auth-bug ---\n{written}").as_str())
        );
        assert_eq!(
            result.reply,
            format!("--- Concluded effort: auth-bug ---\n{written}\n\nConcluded the auth bug.")
        );
        assert_eq!(result.requests.len(), 3);
    }

    fn a_failed_or_empty_summary_falls_back_to_the_extractive_one() {
        let cases: Vec<(Result<ProviderResponse, ProviderError>, &str)> = vec![
            (
                Err(ProviderError::Server { status: 500, message: "boom".into(), retry_after_ms: None }),
                "the summary request failed: The provider had a server error (HTTP 500): boom",
            ),
            (Ok(text("   ")), "the model returned an empty summary"),
            (Ok(tools(vec![call("x", "effort_status", "{}")])), "the model returned an empty summary"),
        ];
        for (summary_outcome, reason) in cases {
            let mut s = session_with_open_effort();
            let (sent, step) = drive(
                &mut s,
                "That's resolved.",
                settings().with_retry(RetryPolicy::never()),
                vec![
                    Ok(tools(vec![call("c1", "close_effort", r#"{"id": "auth-bug"}"#)])),
                    summary_outcome,
                    Ok(text("Concluded.")),
                ],
            );
            let result = done(step);
            assert_eq!(sent.len(), 3);
            let effort = s.efforts().get("auth-bug").unwrap();
            let summary = effort.summary.as_ref().unwrap();
            assert_eq!(effort.status, EffortStatus::Concluded);
            assert!(summary.text.starts_with("auth bug: "), "{}", summary.text);
            assert_eq!(effort.messages.len(), 6, "the raw log is kept");
            assert_eq!(result.tool_calls[0].handling, ToolHandling::ClosedWithFallbackSummary);
            assert_eq!(tool_result(&exchange(&sent[2])[1])["summary_source"], "extractive");
            let banner = &result.report.banners[0];
            assert!(banner.ends_with(&format!("(extractive summary: {reason})")), "{banner}");
        }
    }

    fn a_summary_in_the_call_is_used_or_requested_as_the_policy_says() {
        let own = r#"{"summary": "TTL raised from 3600 to 86400 in config/auth.yaml."}"#;
        // The default uses the model's own summary without another request.
        let mut s = session_with_open_effort();
        let (sent, step) = drive(
            &mut s,
            "We're done.",
            settings(),
            vec![Ok(tools(vec![call("c1", "close_effort", own)])), Ok(text("Closed."))],
        );
        assert_eq!(sent.len(), 2);
        assert_eq!(done(step).tool_calls[0].handling, ToolHandling::ClosedWithModelSummary);
        assert_eq!(
            s.efforts().get("auth-bug").unwrap().summary.as_ref().unwrap().text,
            "TTL raised from 3600 to 86400 in config/auth.yaml."
        );

        // AlwaysRequest asks anyway, and keeps the model's own summary as the fallback.
        let mut s = session_with_open_effort();
        let (sent, step) = drive(
            &mut s,
            "We're done.",
            settings()
                .with_summary_policy(SummaryPolicy::AlwaysRequest)
                .with_retry(RetryPolicy::never()),
            vec![
                Ok(tools(vec![call("c1", "close_effort", own)])),
                Err(ProviderError::Timeout { after_ms: 5 }),
                Ok(text("Closed.")),
            ],
        );
        assert_eq!(sent.len(), 3);
        assert!(matches!(sent[1].purpose, RequestPurpose::Summary { .. }));
        assert_eq!(done(step).tool_calls[0].handling, ToolHandling::ClosedWithModelSummary);
        assert_eq!(
            s.efforts().get("auth-bug").unwrap().summary.as_ref().unwrap().text,
            "TTL raised from 3600 to 86400 in config/auth.yaml."
        );

        // A blank summary counts as none: the engine asks for one.
        let mut s = session_with_open_effort();
        let (sent, _) = drive(
            &mut s,
            "We're done.",
            settings(),
            vec![
                Ok(tools(vec![call("c1", "close_effort", r#"{"summary": "  "}"#)])),
                Ok(text("Raised the TTL.")),
                Ok(text("Closed.")),
            ],
        );
        assert!(matches!(sent[1].purpose, RequestPurpose::Summary { .. }));
    }

    fn closing_a_concluded_effort_makes_no_summary_request() {
        let mut s = session();
        concluded_effort(&mut s, "cache layer", "Chose Redis with a 5 minute TTL.", 1);
        let (sent, step) = drive(
            &mut s,
            "Close the cache layer.",
            settings(),
            vec![
                Ok(tools(vec![
                    call("c1", "close_effort", r#"{"id": "cache-layer"}"#),
                    call("c2", "close_effort", "{}"),
                ])),
                Ok(text("It was already closed.")),
            ],
        );
        assert_eq!(sent.len(), 2);
        let result = done(step);
        assert!(result.tool_calls[0].result["error"].as_str().unwrap().contains("already concluded"));
        assert_eq!(
            result.tool_calls[1].result["error"],
            "no effort is active; pass the id of the open effort to close"
        );
    }

    fn a_provider_error_leaves_the_session_as_before() {
        for error in [
            ProviderError::Unauthorized { message: "bad key".into(), api_key_given: true },
            ProviderError::StreamTruncated { events: 3, text_chars: 12, tool_calls: 1 },
            ProviderError::InvalidJson { context: "response".into(), snippet: "{".into() },
        ] {
            let mut s = session_with_open_effort();
            let before = s.to_json();
            let plan_before = s.build_plan().to_json();
            // The first round changes the session; the failure of the second undoes it all.
            let (sent, step) = drive(
                &mut s,
                "Let's also work on the docs. We're done with auth.",
                settings(),
                vec![
                    Ok(tools(vec![
                        call("c1", "open_effort", r#"{"name": "docs"}"#),
                        call("c2", "close_effort", r#"{"id": "auth-bug", "summary": "TTL fixed."}"#),
                    ])),
                    Err(error.clone()),
                ],
            );
            assert_eq!(sent.len(), 2);
            let failure = failed(step);
            assert_eq!(failure.error, error);
            assert_eq!(failure.user_text, "Let's also work on the docs. We're done with auth.");
            assert!(!failure.was_cancelled());
            assert_eq!(failure.tool_calls.len(), 2);
            assert!(matches!(failure.requests[1].outcome, RequestOutcome::Failed { .. }));
            assert!(failure.to_string().ends_with("Nothing was changed; your message can be sent again."));
            assert!(!s.in_turn());
            assert_eq!(s.to_json(), before);
            assert_eq!(s.build_plan().to_json(), plan_before);
        }
    }

    fn transient_errors_are_retried_after_the_delay_the_policy_gives() {
        let mut s = session();
        let mut engine = TurnEngine::begin(&mut s, "Hello", 0, settings()).unwrap();
        let Step::Send(first) = engine.next(&mut s).unwrap() else { panic!() };
        assert_eq!(first.attempt, 1);
        let limited = ProviderError::RateLimited { message: "slow down".into(), retry_after_ms: Some(1_500) };
        engine.receive(&mut s, Err(limited), 1).unwrap();
        let Step::Wait(wait) = engine.next(&mut s).unwrap() else { panic!("expected a wait") };
        assert_eq!(wait.delay_ms, 1_500, "Retry-After is honoured");
        assert_eq!(wait.failed_attempt, 1);
        let Step::Send(second) = engine.next(&mut s).unwrap() else { panic!() };
        assert_eq!(second.attempt, 2);
        assert_eq!(second.messages, first.messages);
        let server = ProviderError::Server { status: 503, message: "busy".into(), retry_after_ms: None };
        engine.receive(&mut s, Err(server), 2).unwrap();
        let Step::Wait(wait) = engine.next(&mut s).unwrap() else { panic!("expected a wait") };
        assert_eq!(wait.delay_ms, 2_000, "backoff doubles without Retry-After");
        let Step::Send(third) = engine.next(&mut s).unwrap() else { panic!() };
        assert_eq!(third.attempt, 3);
        engine.receive(&mut s, Ok(text("Hi!")), 3).unwrap();
        let result = done(engine.next(&mut s).unwrap());
        assert_eq!(result.requests.len(), 1);
        assert_eq!(result.requests[0].attempts, 3);
        let delays: Vec<u64> = result.requests[0].retries.iter().map(|r| r.delay_ms).collect();
        assert_eq!(delays, [1_500, 2_000]);
        assert_eq!(result.reply, "Hi!");

        // A 4xx is never retried.
        let mut s = session();
        let before = s.to_json();
        let (sent, step) = drive(
            &mut s,
            "Hello",
            settings(),
            vec![Err(ProviderError::BadRequest { status: 400, message: "no".into(), code: None })],
        );
        assert_eq!(sent.len(), 1);
        assert!(failed(step).requests[0].retries.is_empty());
        assert_eq!(s.to_json(), before);
    }

    fn cancelling_restores_the_session_at_any_point() {
        // While the first request is out.
        let mut s = session_with_open_effort();
        let before = s.to_json();
        let mut engine = TurnEngine::begin(&mut s, "Let's work on docs.", 0, settings()).unwrap();
        engine.next(&mut s).unwrap();
        let failure = failed(engine.cancel(&mut s));
        assert!(failure.was_cancelled());
        assert_eq!(failure.user_text, "Let's work on docs.");
        assert_eq!(s.to_json(), before);
        assert!(engine.is_finished());
        assert!(matches!(engine.next(&mut s).unwrap(), Step::Failed(_)));

        // While a summary request is out, after another call already ran.
        let mut s = session_with_open_effort();
        let before = s.to_json();
        let mut engine = TurnEngine::begin(&mut s, "Done; let's work on docs.", 0, settings()).unwrap();
        engine.next(&mut s).unwrap();
        let calls = tools(vec![
            call("c1", "open_effort", r#"{"name": "docs"}"#),
            call("c2", "close_effort", r#"{"id": "auth-bug"}"#),
        ]);
        engine.receive(&mut s, Ok(calls), 1).unwrap();
        let Step::Send(summary) = engine.next(&mut s).unwrap() else { panic!() };
        assert!(matches!(summary.purpose, RequestPurpose::Summary { .. }));
        assert_eq!(s.efforts().open_ids(), ["auth-bug", "docs"]);
        // A cancellation reported by the transport ends the turn; it is no summary failure.
        engine.receive(&mut s, Err(ProviderError::Cancelled), 2).unwrap();
        let failure = failed(engine.next(&mut s).unwrap());
        assert!(failure.was_cancelled());
        assert_eq!(s.to_json(), before);

        // While waiting for a retry.
        let mut s = session();
        let before = s.to_json();
        let mut engine = TurnEngine::begin(&mut s, "Hi", 0, settings()).unwrap();
        engine.next(&mut s).unwrap();
        engine.receive(&mut s, Err(ProviderError::Timeout { after_ms: 1 }), 1).unwrap();
        assert!(matches!(engine.next(&mut s).unwrap(), Step::Wait(_)));
        assert!(failed(engine.cancel(&mut s)).was_cancelled());
        assert_eq!(s.to_json(), before);
    }

    fn usage_is_reconciled_with_the_local_estimate() {
        let mut s = session_with_open_effort();
        let mut first = tools(vec![call("c1", "effort_status", "{}")]);
        first.usage = Some(Usage { prompt_tokens: 1_000, completion_tokens: 7 });
        let mut second = text("All good.");
        second.usage = Some(Usage { prompt_tokens: 2_000, completion_tokens: 3 });
        let (sent, step) = drive(&mut s, "Status?", settings(), vec![Ok(first), Ok(second)]);
        let result = done(step);
        let [one, two] = &result.requests[..] else { panic!("two requests") };
        // The first request is the plan alone.
        assert_eq!(one.estimate.turn_extra_tokens, 0);
        assert_eq!(one.estimate.estimated_prompt_tokens, one.estimate.context_tokens);
        assert_eq!(one.plan_id, sent[0].plan_id);
        assert!(one.estimate.tool_definition_tokens > 100);
        let check = one.reconciliation.unwrap();
        assert_eq!(check.reported_prompt_tokens, 1_000);
        assert_eq!(check.estimated_prompt_tokens, one.estimate.estimated_prompt_tokens);
        assert_eq!(check.difference, 1_000 - one.estimate.estimated_prompt_tokens as i64);
        // The second adds the assistant's tool call and its result, counted with the session's
        // counter.
        let counter = s.counter();
        let WireMessage::ToolResult { content, .. } = &exchange(&sent[1])[1] else { panic!() };
        let extra = u64::from(counter.count("effort_status") + counter.count("{}") + counter.count(content));
        assert_eq!(two.estimate.turn_extra_tokens, extra);
        assert_eq!(two.estimate.estimated_prompt_tokens, two.estimate.context_tokens + extra);
        assert_eq!(two.reconciliation.unwrap().reported_prompt_tokens, 2_000);
        assert_eq!(two.usage.unwrap().completion_tokens, 3);
        // The session's telemetry keeps both requests with the reported usage and the tool call.
        let telemetry = &result.report.telemetry;
        let reported: Vec<Option<u64>> = telemetry.requests.iter().map(|r| r.reported_prompt_tokens).collect();
        assert_eq!(reported, [Some(1_000), Some(2_000)]);
        assert_eq!(telemetry.requests[0].plan_id, sent[0].plan_id.clone().unwrap());
        assert_eq!(telemetry.tools.len(), 1);
        assert_eq!(telemetry.tools[0].name, "effort_status");
    }

    fn decay_banners_follow_the_text() {
        let mut s = session();
        concluded_effort(&mut s, "cache layer", "Chose Redis with a 5 minute TTL.", 1);
        turn(&mut s, "Show me the cache layer log.", &[("expand_effort", r#"{"id": "cache-layer"}"#)], "Here.");
        for _ in 0..2 {
            ccm_test_support::chatter(&mut s);
        }
        let (_, step) = drive(
            &mut s,
            "Let's work on docs.",
            settings(),
            vec![
                Ok(tools(vec![call("c1", "open_effort", r#"{"name": "docs"}"#)])),
                Ok(text("Started the docs.")),
            ],
        );
        let result = done(step);
        assert_eq!(
            result.reply,
            "--- Started effort: docs ---\n\nStarted the docs.\n\n\
             --- Auto-collapsed effort: cache-layer (inactive for 3 turns) ---"
        );
    }

    fn misuse_is_reported_not_obeyed() {
        let mut s = session();
        let mut engine = TurnEngine::begin(&mut s, "Hi", 0, settings()).unwrap();
        assert_eq!(
            engine.receive(&mut s, Ok(text("early")), 0),
            Err(EngineError::NotAwaitingResponse)
        );
        let Step::Send(first) = engine.next(&mut s).unwrap() else { panic!() };
        // Asking again before the answer returns the same request.
        assert_eq!(engine.next(&mut s).unwrap(), Step::Send(first));
        assert!(matches!(
            TurnEngine::begin(&mut s, "again", 0, settings()),
            Err(EngineError::Turn(_))
        ));
        s.abort_turn().unwrap();
        let error = engine.receive(&mut s, Ok(text("late")), 0).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the session is not in turn 1 that this engine drives (the session is at turn 0, \
             not in a turn); a turn must be driven by one engine from begin to end"
        );
    }
}
