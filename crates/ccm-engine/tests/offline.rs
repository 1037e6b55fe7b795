//! The offline demo model driving the turn engine: each phrase it understands leads to the tool
//! call a well-behaved model would make, its summaries come from the effort's log, and it is
//! labelled as the offline demo model.

use ccm_core::{EffortState, EffortStatus, Session};
use ccm_engine::offline::{OfflineModel, OFFLINE_MARKER};
use ccm_engine::{RequestPurpose, ToolHandling};
use ccm_provider::StreamDelta;
use ccm_test_support::offline::{calls, say};
use ccm_test_support::portable_tests;
use ccm_test_support::session;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn state(session: &Session, id: &str) -> EffortState {
    session
        .effort_status()
        .efforts
        .into_iter()
        .find(|e| e.id == id)
        .map(|e| e.state)
        .unwrap_or(EffortState::Evicted)
}

portable_tests! {
    fn opens_talks_and_concludes_with_a_summary_from_the_log() {
        let mut s = session();
        let opened = say(&mut s, "Let's work on the auth bug: users get 401 after an hour.");
        assert_eq!(calls(&opened), [r#"open_effort({"name":"auth bug"})"#]);
        assert_eq!(
            opened.reply,
            format!("--- Started effort: auth-bug ---\n\n{OFFLINE_MARKER} Started effort auth-bug; tell me more about it.")
        );

        let noted = say(&mut s, "The refresh token TTL is 3600 in config/auth.yaml.");
        assert!(noted.tool_calls.is_empty());
        // Only the first reply of a conversation carries the marker.
        assert_eq!(noted.reply, "Noted, that goes into auth-bug.");

        let closed = say(&mut s, "Raised it to 86400 and the 401s are gone. That's resolved.");
        assert_eq!(calls(&closed), [r#"close_effort({"id":"auth-bug"})"#]);
        assert_eq!(closed.tool_calls[0].handling, ToolHandling::ClosedWithRequestedSummary);
        assert!(closed.requests.iter().any(|r| matches!(r.purpose, RequestPurpose::Summary { .. })));
        let summary = s.efforts().get("auth-bug").unwrap().summary.clone().unwrap().text.clone();
        assert_eq!(
            summary,
            "auth bug: Let's work on the auth bug: users get 401 after an hour. The refresh token \
             TTL is 3600 in config/auth.yaml. Raised it to 86400 and the 401s are gone."
        );
        assert!(closed.reply.starts_with(&format!("--- Concluded effort: auth-bug ---\n{summary}\n\n")));
        assert_eq!(s.efforts().get("auth-bug").unwrap().status, EffortStatus::Concluded);
    }

    fn switches_expands_collapses_and_reports_status() {
        let mut s = session();
        say(&mut s, "Let's work on the auth bug: users get 401 after an hour.");
        say(&mut s, "The refresh token TTL is 3600 in config/auth.yaml.");
        say(&mut s, "Raised it to 86400. We're done.");
        say(&mut s, "Help me with the billing export: the CSV has wrong totals.");
        let opened = say(&mut s, "Let's work on the docs site.");
        assert_eq!(calls(&opened), [r#"open_effort({"name":"docs site"})"#]);
        assert_eq!(s.efforts().active_id(), Some("docs-site"));

        let back = say(&mut s, "Back to the billing export.");
        assert_eq!(calls(&back), [r#"switch_effort({"id":"billing-export"})"#]);
        assert_eq!(s.efforts().active_id(), Some("billing-export"));

        let expanded = say(&mut s, "Remind me exactly what the TTL was in the auth bug?");
        assert_eq!(calls(&expanded), [r#"expand_effort({"id":"auth-bug"})"#]);
        assert_eq!(state(&s, "auth-bug"), EffortState::Expanded);
        assert!(
            expanded.model_text.contains("The refresh token TTL is 3600 in config/auth.yaml."),
            "{}", expanded.model_text
        );

        let collapsed = say(&mut s, "Got it, thanks.");
        assert_eq!(calls(&collapsed), [r#"collapse_effort({"id":"auth-bug"})"#]);
        assert_eq!(state(&s, "auth-bug"), EffortState::Concluded);

        let status = say(&mut s, "What's the status?");
        assert_eq!(calls(&status), ["effort_status({})"]);
        assert_eq!(
            status.model_text,
            "Status: open: billing-export (active), docs-site (open); 1 concluded in memory, 0 expanded, 0 out of memory."
        );

        // A question about a summary in memory is answered from it, without a tool.
        let recalled = say(&mut s, "What did we decide about the auth bug?");
        assert!(recalled.tool_calls.is_empty());
        assert!(recalled.model_text.starts_with("From auth-bug: auth bug: "), "{}", recalled.model_text);

        // Concluding the active effort and opening the next one in the same message.
        let both = say(&mut s, "The export is finished. Let's work on the onboarding emails next.");
        assert_eq!(
            calls(&both),
            [r#"close_effort({"id":"billing-export"})"#, r#"open_effort({"name":"onboarding emails"})"#]
        );
        assert_eq!(s.efforts().open_ids(), ["docs-site", "onboarding-emails"]);
    }

    fn searches_for_what_left_memory_and_expands_it_when_details_are_asked() {
        let mut s = session();
        say(&mut s, "Let's work on the pricing page: the yearly toggle shows monthly prices.");
        say(&mut s, "The toggle reads plan.interval but the API sends billing_period.");
        say(&mut s, "Mapped billing_period to interval in pricing.ts. That's resolved.");
        for i in 0..20 {
            let reply = say(&mut s, &format!("Unrelated chat number {i} about the weather."));
            assert!(reply.tool_calls.is_empty());
        }
        assert_eq!(s.efforts().evicted_ids(), ["pricing-page"]);

        let found = say(&mut s, "What did we decide about the yearly toggle earlier?");
        assert_eq!(
            calls(&found),
            [r#"search_efforts({"query":"What did we decide about the yearly toggle earlier?"})"#]
        );
        assert!(found.model_text.starts_with("Found pricing-page: pricing page: "), "{}", found.model_text);
        assert_eq!(state(&s, "pricing-page"), EffortState::Concluded);

        for i in 0..20 {
            say(&mut s, &format!("More chat number {i}, nothing else."));
        }
        assert_eq!(s.efforts().evicted_ids(), ["pricing-page"]);
        let detailed = say(&mut s, "Remind me of the details of the yearly toggle fix.");
        assert_eq!(
            calls(&detailed),
            [
                r#"search_efforts({"query":"Remind me of the details of the yearly toggle fix."})"#,
                r#"expand_effort({"id":"pricing-page"})"#
            ]
        );
        assert_eq!(detailed.tool_rounds, 2);
        assert_eq!(state(&s, "pricing-page"), EffortState::Expanded);
    }

    fn streams_its_text_a_word_at_a_time() {
        let response = ccm_provider::ProviderResponse {
            text: "Noted, that goes in.".into(),
            tool_calls: vec![],
            finish_reason: ccm_provider::FinishReason::Stop,
            usage: None,
        };
        let deltas = OfflineModel::stream_deltas(&response);
        let joined: String = deltas
            .iter()
            .map(|d| match d {
                StreamDelta::Text(t) => t.as_str(),
                StreamDelta::ToolCallStarted { .. } => "",
            })
            .collect();
        assert_eq!(deltas.len(), 4);
        assert_eq!(joined, response.text);
    }
}
