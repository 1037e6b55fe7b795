//! Compaction policy: level boundaries, presets, configuration errors, cooldown, hysteresis
//! and the overrides.

use ccm_core::compaction::{
    threshold_tokens, CompactionConfig, CompactionDecision, CompactionEvent, CompactionPolicy,
    DecisionReason, Level, PolicyState, ThresholdPreset, Usage,
};
use ccm_test_support::portable_tests;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WINDOW: u64 = 10_000;

fn usage(tokens: u64) -> Usage {
    Usage::new(tokens, WINDOW).unwrap()
}

fn policy(config: CompactionConfig) -> CompactionPolicy {
    CompactionPolicy::new(config).unwrap()
}

/// The event a planner would report for `decision` when the compaction left `after` tokens.
fn applied(decision: &CompactionDecision, after: u64) -> CompactionEvent {
    CompactionEvent {
        level: decision.level,
        trigger_usage: decision.usage,
        tokens_before: decision.usage.working_tokens,
        tokens_after: after,
        tokens_freed: decision.usage.working_tokens - after,
        moved: Vec::new(),
        rolling_summary: None,
        at_message: decision.at_message,
        at_ms: decision.at_ms,
    }
}

/// Decides at `tokens`; when it fires, applies a compaction that leaves `after(tokens)`.
/// Returns the decision.
fn step(
    policy: &mut CompactionPolicy,
    tokens: u64,
    message: u64,
    after: impl Fn(u64) -> u64,
) -> CompactionDecision {
    let decision = policy.decide(usage(tokens), message, message * 1_000);
    if decision.fires() {
        policy.record_applied(&applied(&decision, after(tokens)));
    }
    decision
}

portable_tests! {
    fn levels_start_exactly_at_each_threshold() {
        let config = CompactionConfig::default();
        let cases = [
            (0, Level::None),
            (5_999, Level::None),
            (6_000, Level::Soft),
            (7_499, Level::Soft),
            (7_500, Level::Hard),
            (8_999, Level::Hard),
            (9_000, Level::Emergency),
            (10_000, Level::Emergency),
            (25_000, Level::Emergency),
        ];
        for (tokens, level) in cases {
            assert_eq!(config.level_for(usage(tokens)), level, "{tokens} tokens");
        }
    }

    fn thresholds_are_exact_for_windows_that_do_not_divide_evenly() {
        let config = CompactionConfig::default();
        // 60 % of 8,192 is 4,915.2: 4,915 tokens are below it, 4,916 reach it.
        assert_eq!(threshold_tokens(8_192, 600), 4_916);
        assert_eq!(config.level_for(Usage::new(4_915, 8_192).unwrap()), Level::None);
        assert_eq!(config.level_for(Usage::new(4_916, 8_192).unwrap()), Level::Soft);
        assert_eq!(threshold_tokens(8_192, 900), 7_373);
        assert_eq!(config.level_for(Usage::new(7_372, 8_192).unwrap()), Level::Hard);
        assert_eq!(config.level_for(Usage::new(7_373, 8_192).unwrap()), Level::Emergency);
    }

    fn the_early_preset_is_50_65_80() {
        let config = CompactionConfig::preset(ThresholdPreset::Early);
        assert_eq!(
            (config.soft_per_mille, config.hard_per_mille, config.emergency_per_mille),
            (500, 650, 800)
        );
        assert_eq!(config.level_for(usage(4_999)), Level::None);
        assert_eq!(config.level_for(usage(5_000)), Level::Soft);
        assert_eq!(config.level_for(usage(6_500)), Level::Hard);
        assert_eq!(config.level_for(usage(8_000)), Level::Emergency);
        // Everything but the thresholds is the default.
        let standard = CompactionConfig::default();
        assert_eq!(config.cooldown_messages, standard.cooldown_messages);
        assert_eq!(config.keep_last_messages_hard, 5);
        assert_eq!(config.keep_last_messages_emergency, 4);
        assert_eq!(config.keep_fraction_hard_per_mille, 500);
        assert_eq!(config.stale_attachment_messages, 3);
        assert_eq!(
            CompactionConfig::from_json(r#"{"preset": "EARLY"}"#).unwrap(),
            config
        );
        assert_eq!(ThresholdPreset::from_name(" standard ").unwrap(), ThresholdPreset::Standard);
    }

    fn configuration_errors_name_the_field_and_the_range() {
        let error = |json: &str| CompactionConfig::from_json(json).unwrap_err().to_string();
        // Each invalid configuration with its whole message.
        let cases = [
            (r#"{"hard_per_mille": 600}"#, "compaction thresholds must increase strictly (soft < hard < emergency), got soft 600‰, hard 600‰, emergency 900‰"),
            (r#"{"cooldown_messages": -1}"#, "cooldown_messages must be between 0 and 1000000, got -1"),
            (r#"{"soft_per_mille": 0}"#, "soft_per_mille must be between 1 and 1000, got 0"),
            (r#"{"emergency_per_mille": 1200}"#, "emergency_per_mille must be between 1 and 1000, got 1200"),
            (r#"{"keep_last_messages_emergency": 6}"#, "keep_last_messages_emergency (6) must not exceed keep_last_messages_hard (5): the emergency level is the more aggressive one"),
            (r#"{"min_interval_ms": 0}"#, "min_interval_ms must be between 1 and 86400000, got 0"),
            (r#"{"preset": "aggressive"}"#, "unknown compaction preset 'aggressive'; expected standard (60/75/90 %) or early (50/65/80 %)"),
        ];
        for (json, message) in cases {
            assert_eq!(error(json), message, "{json}");
        }
        assert!(error(r#"{"soft": 500}"#).starts_with("invalid compaction configuration: unknown field `soft`"));
        assert!(error(r#"{"cooldown_messages": "two"}"#).starts_with("invalid compaction configuration: invalid type"));
        // A typed configuration is checked the same way.
        let typed = CompactionConfig { stale_attachment_messages: 0, ..CompactionConfig::default() };
        assert_eq!(
            CompactionPolicy::new(typed).unwrap_err().to_string(),
            "stale_attachment_messages must be between 1 and 1000000, got 0"
        );
        assert_eq!(Usage::new(1, 0).unwrap_err().to_string(), "the context window must be at least 1 token, got 0");
    }

    fn below_the_soft_threshold_nothing_fires() {
        let mut p = policy(CompactionConfig::default());
        let decision = p.decide(usage(5_999), 1, 0);
        assert_eq!(decision.reason, DecisionReason::BelowThreshold);
        assert_eq!(decision.level_to_apply(), None);
        assert_eq!(p.state().last_decision.as_ref(), Some(&decision));
        let first = p.decide(usage(6_000), 2, 0);
        assert_eq!(first.reason, DecisionReason::ThresholdReached);
        assert_eq!(first.level_to_apply(), Some(Level::Soft));
    }

    fn cooldown_waits_two_messages_after_a_compaction() {
        // No hysteresis, so only the cooldown holds.
        let config = CompactionConfig { hysteresis_per_mille: 0, ..CompactionConfig::default() };
        let mut p = policy(config);
        // The specification's example: 61 % at message 20 compacts to 55 %.
        let fired = step(&mut p, 6_100, 20, |_| 5_500);
        assert!(fired.fires());
        let held = step(&mut p, 6_000, 21, |_| 5_500);
        assert_eq!(
            held.reason,
            DecisionReason::Cooldown { messages_since: 1, messages_required: 2, ms_since: None, ms_required: None }
        );
        // Two messages after the compaction the cooldown is over.
        let again = step(&mut p, 6_500, 22, |_| 5_500);
        assert!(again.fires(), "{again:?}");

        // A longer cooldown holds message 22 too.
        let mut longer = policy(CompactionConfig { hysteresis_per_mille: 0, cooldown_messages: 3, ..CompactionConfig::default() });
        step(&mut longer, 6_100, 20, |_| 5_500);
        assert_eq!(step(&mut longer, 6_500, 22, |_| 5_500).reason.code(), "cooldown");
        assert!(step(&mut longer, 7_000, 23, |_| 5_500).fires());
    }

    fn a_minimum_interval_holds_until_enough_time_has_passed() {
        let config = CompactionConfig { hysteresis_per_mille: 0, min_interval_ms: Some(60_000), ..CompactionConfig::default() };
        let mut p = policy(config);
        let fired = p.decide(usage(6_500), 10, 1_000_000);
        p.record_applied(&applied(&fired, 5_000));
        let held = p.decide(usage(6_500), 15, 1_030_000);
        assert_eq!(
            held.reason,
            DecisionReason::Cooldown { messages_since: 5, messages_required: 2, ms_since: Some(30_000), ms_required: Some(60_000) }
        );
        assert!(p.decide(usage(6_500), 16, 1_060_000).fires());
        // A clock that goes backwards counts as no time passed, never as a huge interval.
        let mut q = policy(CompactionConfig { hysteresis_per_mille: 0, min_interval_ms: Some(60_000), ..CompactionConfig::default() });
        let fired = q.decide(usage(6_500), 10, 1_000_000);
        q.record_applied(&applied(&fired, 5_000));
        assert_eq!(q.decide(usage(6_500), 20, 500).reason.code(), "cooldown");
    }

    fn usage_hovering_at_a_threshold_does_not_compact_every_turn() {
        // Usage hovers between 59.9 % and 60.8 % for 60 messages (the ambient window slides,
        // so old exchanges leave as new ones arrive); each soft compaction frees a little.
        let run = |hysteresis: u16| {
            let mut p = policy(CompactionConfig { hysteresis_per_mille: hysteresis, ..CompactionConfig::default() });
            let mut compactions = 0;
            for message in 1..=60u64 {
                let tokens = 5_990 + (message * 37) % 90;
                let decision = p.decide(usage(tokens), message, 0);
                if decision.fires() {
                    compactions += 1;
                    p.record_applied(&applied(&decision, tokens - 60));
                }
            }
            (compactions, p)
        };
        let (with, p) = run(50);
        assert_eq!(with, 1, "hysteresis lets the level fire once while usage hovers");
        match &p.state().last_decision.as_ref().unwrap().reason {
            DecisionReason::Hysteresis { low_water_per_mille, refires_at_per_mille } => {
                assert_eq!(*low_water_per_mille, 596);
                assert_eq!(*refires_at_per_mille, 646);
            }
            other => panic!("expected a hysteresis hold, got {other:?}"),
        }
        let (without, _) = run(0);
        assert!(without >= 15, "without hysteresis only the cooldown spaces compactions ({without})");
    }

    fn a_growing_conversation_is_compacted_again_after_a_real_climb() {
        let mut p = policy(CompactionConfig::default());
        assert!(step(&mut p, 6_100, 1, |_| 5_900).fires());
        // 4.9 points above the low-water mark of 59 %: held.
        let held = step(&mut p, 6_390, 5, |t| t);
        assert_eq!(held.reason, DecisionReason::Hysteresis { low_water_per_mille: 590, refires_at_per_mille: 640 });
        // 5 points above: fires again, as regrowth.
        let again = step(&mut p, 6_400, 6, |_| 6_000);
        assert_eq!(again.reason, DecisionReason::Regrowth { low_water_per_mille: 590 });
    }

    fn a_dip_below_the_low_water_mark_rearms_the_level() {
        let mut p = policy(CompactionConfig::default());
        assert!(step(&mut p, 6_100, 1, |_| 5_950).fires());
        // An effort is concluded: usage drops to 40 %, then climbs back.
        assert_eq!(step(&mut p, 4_000, 5, |t| t).reason, DecisionReason::BelowThreshold);
        let again = step(&mut p, 6_000, 30, |_| 5_000);
        assert_eq!(again.reason, DecisionReason::Regrowth { low_water_per_mille: 400 });
    }

    fn a_higher_level_is_not_held_by_hysteresis() {
        let mut p = policy(CompactionConfig::default());
        assert!(step(&mut p, 6_100, 1, |_| 5_990).fires());
        let hard = step(&mut p, 7_500, 3, |_| 6_000);
        assert_eq!(hard.level, Level::Hard);
        assert_eq!(hard.reason, DecisionReason::Escalation { previous: Level::Soft });
    }

    fn emergency_after_a_lighter_compaction_bypasses_the_cooldown() {
        let mut p = policy(CompactionConfig::default());
        let hard = step(&mut p, 7_600, 10, |_| 7_400);
        assert_eq!(hard.level, Level::Hard);
        // One large attachment arrives with the next message.
        let emergency = step(&mut p, 9_300, 11, |_| 5_000);
        assert_eq!(emergency.level_to_apply(), Some(Level::Emergency));
        assert_eq!(emergency.reason, DecisionReason::Escalation { previous: Level::Hard });

        // With the bypass off, the emergency waits like any other level.
        let mut strict = policy(CompactionConfig { emergency_bypasses_cooldown: false, ..CompactionConfig::default() });
        step(&mut strict, 7_600, 10, |_| 7_400);
        assert_eq!(step(&mut strict, 9_300, 11, |_| 5_000).reason.code(), "cooldown");
        // A second emergency right after the first is held by the cooldown.
        let mut twice = policy(CompactionConfig::default());
        step(&mut twice, 9_500, 10, |_| 8_000);
        assert_eq!(step(&mut twice, 9_600, 11, |t| t).reason.code(), "cooldown");
    }

    fn over_the_window_nothing_holds_a_compaction_back() {
        let mut p = policy(CompactionConfig::default());
        step(&mut p, 9_500, 10, |_| 8_950);
        let over = step(&mut p, 10_001, 11, |_| 6_000);
        assert_eq!(over.reason, DecisionReason::OverWindow);
        assert_eq!(over.level_to_apply(), Some(Level::Emergency));
        // Exactly full is not over.
        let mut q = policy(CompactionConfig::default());
        step(&mut q, 9_500, 10, |_| 8_950);
        assert_eq!(step(&mut q, 10_000, 11, |t| t).reason.code(), "cooldown");
    }

    fn an_attempt_that_frees_nothing_starts_no_cooldown_but_is_not_retried_at_once() {
        let mut p = policy(CompactionConfig::default());
        let soft = p.decide(usage(6_200), 1, 0);
        assert!(soft.fires());
        p.record_not_applied(&soft);
        assert_eq!(p.state().last_compaction, None);
        // The same level right after: held by hysteresis, not by a cooldown.
        assert_eq!(p.decide(usage(6_250), 2, 0).reason.code(), "hysteresis");
        // A real climb retries it.
        assert!(p.decide(usage(6_700), 3, 0).fires());
        // A higher level right away: no cooldown applies because nothing was compacted.
        let hard = p.decide(usage(7_500), 4, 0);
        assert_eq!(hard.reason, DecisionReason::Escalation { previous: Level::Soft });
        // A failed soft attempt after a hard one does not lower the hard level's bar.
        p.record_not_applied(&hard);
        let soft_again = CompactionDecision { level: Level::Soft, ..p.decide(usage(7_400), 5, 0) };
        p.record_not_applied(&soft_again);
        assert_eq!(p.state().hysteresis.unwrap().level, Level::Hard);
    }

    fn windows_of_different_sizes_compare_exactly() {
        // The model was switched to a larger window after a compaction.
        let mut p = policy(CompactionConfig::default());
        let fired = p.decide(usage(6_000), 1, 0);
        p.record_applied(&applied(&fired, 5_000)); // 50 % of 10k
        // 11,000 of 20,000 is 55 %: exactly the margin above 50 %, but below the soft threshold.
        assert_eq!(p.decide(Usage::new(11_000, 20_000).unwrap(), 5, 0).reason, DecisionReason::BelowThreshold);
        assert!(Usage::new(11_000, 20_000).unwrap().risen_above(Usage::new(5_000, 10_000).unwrap(), 50));
        assert!(!Usage::new(10_999, 20_000).unwrap().risen_above(Usage::new(5_000, 10_000).unwrap(), 50));
        assert_eq!(Usage::new(7_833, 10_000).unwrap().percent(), "78.3%");
        assert_eq!(Usage::new(1, 3).unwrap().per_mille(), 333);
    }

    fn state_survives_a_round_trip_and_keeps_the_cooldown() {
        let mut p = policy(CompactionConfig::default());
        step(&mut p, 7_600, 10, |_| 5_000);
        let json = serde_json::to_string(p.state()).unwrap();
        let state: PolicyState = serde_json::from_str(&json).unwrap();
        assert_eq!(&state, p.state());
        let mut resumed = CompactionPolicy::with_state(CompactionConfig::default(), state).unwrap();
        assert_eq!(resumed.decide(usage(7_600), 11, 0).reason.code(), "cooldown");
        // Decisions serialise with a snake_case code.
        let decision = resumed.decide(usage(100), 12, 0);
        assert_eq!(
            serde_json::to_value(&decision).unwrap()["reason"],
            serde_json::json!({"code": "below_threshold"})
        );
        let config_json = serde_json::to_string(&CompactionConfig::default()).unwrap();
        assert_eq!(serde_json::from_str::<CompactionConfig>(&config_json).unwrap(), CompactionConfig::default());
    }

    fn levels_have_numbers_and_names() {
        for (n, name) in [(0, "none"), (1, "soft"), (2, "hard"), (3, "emergency")] {
            let level = Level::from_number(n).unwrap();
            assert_eq!((level.number(), level.name()), (n, name));
            assert_eq!(serde_json::to_value(level).unwrap(), serde_json::json!(name));
        }
        assert_eq!(Level::from_number(4), None);
        assert_eq!(Level::Hard.to_string(), "level 2 (hard)");
        assert!(Level::Emergency > Level::Hard && Level::Soft > Level::None);
    }
}
