//! Reference rules (the seed's literal rule and the distinctive rule) and the token budgets of
//! working memory: the ambient window's and the resident summaries'.

use ccm_core::reference::{keyword_weight, MAX_DISTINCTIVE_POSTINGS};
use ccm_core::{
    Config, EventKind, ExclusionReason, Profile, ReferenceRule, SearchRule, Section, Session,
    NO_BUDGET,
};
use ccm_test_support::portable_tests;
use ccm_test_support::{chatter, concluded_effort, turn};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Four summaries of one domain: each shares "figure", "house", "answers" and "questions" with
/// every other, and has words of its own.
const DOMAIN: [(&str, &str); 4] = [
    (
        "via",
        "Via in the first house: the figure of the road answers questions about journeys and change.",
    ),
    (
        "puella",
        "Puella in the seventh house: the figure answers questions about partnership and harmony.",
    ),
    (
        "carcer",
        "Carcer in the twelfth house: the figure answers questions about confinement and delay.",
    ),
    (
        "laetitia",
        "Laetitia in the fifth house: the figure answers questions about joy and children.",
    ),
];

/// A message about Puella in the domain's own words: it names two shared keywords too.
const ABOUT_PUELLA: &str = "What does Puella, the figure of partnership, say in the seventh house?";

fn session_with(rule: ReferenceRule) -> Session {
    Session::new(Config {
        reference_rule: rule,
        ..Config::default()
    })
    .expect("valid configuration")
}

fn domain_session(rule: ReferenceRule) -> Session {
    let mut s = session_with(rule);
    for (name, summary) in DOMAIN {
        concluded_effort(&mut s, name, summary, 1);
    }
    s
}

portable_tests! {
    fn distinctive_rule_one_summary_of_a_domain_does_not_keep_the_others_alive() {
        let mut s = domain_session(ReferenceRule::Distinctive);
        for _ in 0..25 {
            turn(&mut s, ABOUT_PUELLA, &[], "Partnership and harmony.");
        }
        assert_eq!(s.efforts().summary_ids_in_memory(), ["puella"], "only the summary the messages single out stays");
        assert_eq!(s.efforts().evicted_ids(), ["via", "carcer", "laetitia"]);
    }

    fn seed_rule_two_shared_keywords_keep_every_summary_of_the_domain_alive() {
        // The literal rule stays available, with the behaviour the specification describes.
        let mut s = domain_session(ReferenceRule::Seed);
        for _ in 0..25 {
            turn(&mut s, ABOUT_PUELLA, &[], "Partnership and harmony.");
        }
        assert_eq!(s.efforts().summary_ids_in_memory(), ["via", "puella", "carcer", "laetitia"]);
        assert!(s.efforts().evicted_ids().is_empty());
    }

    fn distinctive_rule_decides_like_the_seed_rule_when_summaries_share_nothing() {
        for rule in [ReferenceRule::Seed, ReferenceRule::Distinctive] {
            let mut s = session_with(rule);
            concluded_effort(&mut s, "auth bug", "Fixed 401 errors: refresh token TTL raised to 86400 seconds.", 1);
            concluded_effort(&mut s, "email bounce", "Soft bounces retried three times, hard bounces suppressed.", 1);
            for _ in 0..15 {
                chatter(&mut s);
            }
            // Two keywords of one summary are a reference under either rule; one is not.
            turn(&mut s, "Is the refresh token still fine?", &[], "Yes.");
            turn(&mut s, "And the bounces?", &[], "Fine.");
            for _ in 0..5 {
                chatter(&mut s);
            }
            assert_eq!(s.efforts().summary_ids_in_memory(), ["auth-bug"], "{rule:?}");
        }
    }

    fn distinctive_rule_counts_an_id_only_as_whole_words() {
        let mut s = session_with(ReferenceRule::Distinctive);
        concluded_effort(&mut s, "auth bug", "Fixed 401 errors.", 1);
        let last = |s: &Session| s.efforts().get("auth-bug").unwrap().last_referenced_turn;
        let before = last(&s);
        turn(&mut s, "oauth-bugs are another story", &[], "Sure.");
        assert_eq!(last(&s), before, "a longer word is not the id");
        let mentioned = turn(&mut s, "Back to the auth bug for a second.", &[], "Sure.").turn;
        assert_eq!(last(&s), mentioned);
        // The seed rule matches the id anywhere in the text, as the specification writes it.
        let mut seed = session_with(ReferenceRule::Seed);
        concluded_effort(&mut seed, "auth bug", "Fixed 401 errors.", 1);
        let mentioned = turn(&mut seed, "oauth-bugs are another story", &[], "Sure.").turn;
        assert_eq!(seed.efforts().get("auth-bug").unwrap().last_referenced_turn, mentioned);
    }

    fn distinctive_rule_brings_back_an_evicted_summary_when_the_user_refers_to_it() {
        let mut s = domain_session(ReferenceRule::Distinctive);
        for _ in 0..25 {
            chatter(&mut s);
        }
        assert_eq!(s.efforts().evicted_ids().len(), 4);
        // The model's long answer touches Puella's words in passing: no return.
        turn(&mut s, "Tell me something.", &[], "Puella stands for partnership and harmony.");
        assert!(s.efforts().summary_ids_in_memory().is_empty());
        // The person asks about it: it returns, with its eviction countdown restarted.
        let asked = turn(&mut s, "Remind me what Puella meant for partnership.", &[], "Harmony.").turn;
        assert_eq!(s.efforts().summary_ids_in_memory(), ["puella"]);
        assert_eq!(s.efforts().get("puella").unwrap().last_referenced_turn, asked);
        // Resident again, the model's references keep it.
        for _ in 0..25 {
            turn(&mut s, "Go on.", &[], "Puella, partnership and harmony again.");
        }
        assert_eq!(s.efforts().summary_ids_in_memory(), ["puella"]);
    }

    fn seed_rule_brings_back_an_evicted_summary_on_any_reference() {
        let mut s = domain_session(ReferenceRule::Seed);
        for _ in 0..25 {
            chatter(&mut s);
        }
        assert_eq!(s.efforts().evicted_ids().len(), 4);
        turn(&mut s, "Tell me something.", &[], "Puella stands for partnership and harmony.");
        assert_eq!(s.efforts().summary_ids_in_memory(), ["puella"]);
    }

    fn summary_budget_evicts_the_least_recently_referenced_first() {
        let mut s = session_with(ReferenceRule::Distinctive);
        concluded_effort(&mut s, "via", DOMAIN[0].1, 1);
        concluded_effort(&mut s, "puella", DOMAIN[1].1, 1);
        // Room for any two of the three summaries, never for all three.
        let tokens = |s: &Session, id: &str, text: &str| {
            s.counter().count(&ccm_core::prompt::summary_line(id, text))
        };
        let sizes = [tokens(&s, "via", DOMAIN[0].1), tokens(&s, "puella", DOMAIN[1].1), tokens(&s, "carcer", DOMAIN[2].1)];
        let budget = sizes.iter().sum::<u32>() - sizes.iter().min().unwrap();
        let mut config = s.config().clone();
        config.summary_token_budget = budget;
        s.set_config(config).unwrap();
        turn(&mut s, "Remind me of Via and the road journeys.", &[], "Change.");
        let report = turn(&mut s, "Start carcer.", &[("open_effort", r#"{"name": "carcer"}"#)], "ok");
        assert!(report.metrics.events.iter().all(|e| e.kind != EventKind::EvictedOverBudget));
        let report = turn(&mut s, "Done.", &[("close_effort", &serde_json::json!({"summary": DOMAIN[2].1}).to_string())], "ok");
        // Puella was referenced longest ago (at its conclusion), Via more recently.
        assert_eq!(s.efforts().summary_ids_in_memory(), ["via", "carcer"]);
        assert_eq!(s.efforts().evicted_ids(), ["puella"]);
        assert!(s.efforts().get("puella").unwrap().evicted_over_budget);
        assert!(report
            .metrics
            .events
            .iter()
            .any(|e| e.kind == EventKind::EvictedOverBudget && e.effort == "puella"));
        let plan = s.build_plan();
        let group = plan.exclusion("evicted:over_budget").expect("a group of its own");
        assert_eq!((group.count, group.reason), (1, ExclusionReason::EvictedOverBudget));
        assert!(plan.exclusion("evicted").is_none(), "nothing left for going unreferenced");
        assert!(plan.totals.summary_tokens <= u64::from(budget));
        // Asked about again, it returns and the budget makes room by the same order.
        turn(&mut s, "What was Puella about, partnership?", &[], "Harmony.");
        assert_eq!(s.efforts().summary_ids_in_memory(), ["puella", "carcer"], "in conclusion order");
        assert!(!s.efforts().get("puella").unwrap().evicted_over_budget);
        assert_eq!(s.efforts().evicted_ids(), ["via"]);
        // The flag travels with the document.
        let restored = Session::from_json(&s.to_json().unwrap()).unwrap();
        assert!(restored.efforts().get("via").unwrap().evicted_over_budget);
        assert_eq!(restored.build_plan().exclusion("evicted:over_budget").unwrap().count, 1);
    }

    fn ambient_budget_keeps_the_newest_exchange_whole_and_drops_older_ones_whole() {
        let mut s = Session::new(Config::default()).unwrap();
        for i in 0..6 {
            turn(&mut s, &format!("short question {i}"), &[], &format!("short answer {i}"));
        }
        // Room for three of the six exchanges.
        let exchange: u64 = s.ambient().messages()[10..].iter().map(|m| u64::from(m.tokens)).sum();
        let budget = 3 * exchange + exchange / 2;
        let mut config = s.config().clone();
        config.ambient_token_budget = u32::try_from(budget).unwrap();
        s.set_config(config).unwrap();
        let plan = s.build_plan();
        let kept: Vec<&str> = plan.included.iter().filter(|i| i.section == Section::Ambient).map(|i| i.id.as_str()).collect();
        assert_eq!(kept, ["ambient:4", "ambient:5", "ambient:6"]);
        let window: u64 = plan.included.iter().filter(|i| i.section == Section::Ambient).map(|i| i.tokens).sum();
        assert!(window <= budget, "{window} > {budget}");
        let dropped: Vec<&str> = plan.excluded.iter().filter(|e| e.reason == ExclusionReason::OverAmbientBudget).map(|e| e.id.as_str()).collect();
        assert_eq!(dropped, ["ambient:1", "ambient:2", "ambient:3"], "the oldest leave, each whole, with the reason");
        assert!(plan.excluded.iter().all(|e| e.reason != ExclusionReason::OutsideAmbientWindow), "all six are within the ten-exchange window");
        assert_eq!(s.ambient_window().len(), 6);

        // One exchange larger than the whole budget still stays, whole: the newest always does.
        let long = "word ".repeat(200);
        turn(&mut s, &long, &[], "A long one.");
        let plan = s.build_plan();
        let ambient: Vec<&str> = plan.included.iter().filter(|i| i.section == Section::Ambient).map(|i| i.id.as_str()).collect();
        assert_eq!(ambient, ["ambient:7"]);
        assert_eq!(plan.item("ambient:7").unwrap().message_count, 2);
        assert!(plan.item("ambient:7").unwrap().tokens > budget);
        assert_eq!(s.ambient().messages().len(), 14, "every message stays stored");
    }

    fn no_budget_is_written_none_and_zero_is_the_smallest_budget() {
        let config = Config::from_json(r#"{"ambient_token_budget": "none", "summary_token_budget": " None ", "leased_token_budget": "none"}"#).unwrap();
        assert_eq!((config.ambient_token_budget, config.summary_token_budget, config.leased_token_budget), (NO_BUDGET, NO_BUDGET, NO_BUDGET));
        // Written back and read again, and checked like any stored configuration.
        config.validate().unwrap();
        let restored: Config = serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(restored, config);
        let error = Config::from_json(r#"{"ambient_token_budget": "unlimited"}"#).unwrap_err().to_string();
        assert_eq!(error, r#"invalid configuration: ambient_token_budget must be a number of tokens or "none" for no budget, got "unlimited""#);

        // No budget: the ambient window keeps its ten exchanges however long they are; a budget
        // of 0 keeps the newest exchange only.
        let long = "word ".repeat(1_600);
        let window = |budget: &str| {
            let mut s = Session::new(Config::from_json(&format!(r#"{{"ambient_token_budget": {budget}}}"#)).unwrap()).unwrap();
            for i in 0..12 {
                turn(&mut s, &format!("{long} {i}"), &[], "ok");
            }
            s.build_plan().included.iter().filter(|i| i.section == Section::Ambient).count()
        };
        assert_eq!(window(r#""none""#), 10);
        assert_eq!(window("0"), 1);
        assert_eq!(window("3000"), 1, "the default budget holds one exchange of 1,600 words");
    }

    fn the_seed_profile_is_the_specification_as_the_seeds_describe_it() {
        let seed = Profile::Seed.config();
        assert_eq!(seed.reference_rule, ReferenceRule::Seed);
        assert_eq!((seed.ambient_token_budget, seed.summary_token_budget), (NO_BUDGET, NO_BUDGET));
        assert_eq!((seed.recall_token_budget, seed.evidence_token_budget), (0, 0));
        assert_eq!(seed.search_rule, SearchRule::Seed);
        // The seeds' constants, and what they do not define, stay the defaults.
        let defaults = Config::default();
        assert_eq!((seed.decay_threshold, seed.summary_eviction_threshold, seed.ambient_window, seed.min_keyword_overlap), (3, 20, 10, 2));
        assert_eq!((seed.context_window, seed.context_mode, &seed.compaction), (defaults.context_window, defaults.context_mode, &defaults.compaction));
        // Named in a configuration, with fields over it; a default-rule document is unchanged.
        let named = Config::from_json(r#"{"profile": "seed", "ambient_window": 4}"#).unwrap();
        assert_eq!(named, Config { ambient_window: 4, ..Profile::Seed.config() });
        assert!(Config::from_json(r#"{"profile": "spec"}"#).unwrap_err().to_string().contains("unknown profile 'spec'; expected default or seed"));
        assert!(!serde_json::to_string(&defaults).unwrap().contains("search_rule"));
        let restored: Config = serde_json::from_str(&serde_json::to_string(&seed).unwrap()).unwrap();
        assert_eq!(restored, seed);
    }

    fn the_seed_search_matches_by_keyword_overlap_or_id_and_returns_summaries_only() {
        let mut s = Session::new(Profile::Seed.config()).unwrap();
        concluded_effort(&mut s, "auth bug", "Fixed 401 errors: refresh token TTL raised to one day.", 2);
        concluded_effort(&mut s, "perf fix", "Split the JS bundle; the login page loads in one second.", 2);
        concluded_effort(&mut s, "token audit", "Audited every token store; rotated the signing keys.", 2);
        // One shared keyword is not enough (the reference rule's two); two are.
        assert!(s.find_efforts("token").unwrap().results.is_empty());
        let found = s.find_efforts("refresh token expiry").unwrap();
        assert_eq!(found.results.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["auth-bug"]);
        assert!(found.evidence.groups.is_empty(), "the seeds' search returns summaries only");
        // An id mention outranks overlap; more shared keywords rank first.
        let found = s.find_efforts("perf fix: the bundle and the login page").unwrap();
        assert_eq!(found.results[0].id, "perf-fix");
        let found = s.find_efforts("token store signing keys, and the refresh token").unwrap();
        assert_eq!(found.results.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["token-audit", "auth-bug"]);
        // The ranked search finds what the seed search leaves out (a single shared word).
        let mut ranked = s.config().clone();
        ranked.search_rule = SearchRule::Ranked;
        s.set_config(ranked).unwrap();
        assert!(!s.find_efforts("token").unwrap().results.is_empty());
    }

    fn new_settings_are_validated_like_the_others() {
        let config = Config::from_json(r#"{"reference_rule": "seed", "ambient_token_budget": 0, "summary_token_budget": 2500}"#).unwrap();
        assert_eq!(config.reference_rule, ReferenceRule::Seed);
        assert_eq!((config.ambient_token_budget, config.summary_token_budget), (0, 2500));
        let error = Config::from_json(r#"{"reference_rule": "fuzzy"}"#).unwrap_err().to_string();
        assert!(error.contains("unknown reference rule 'fuzzy'; expected seed or distinctive"), "{error}");
        let error = Config::from_json(r#"{"summary_token_budget": -1}"#).unwrap_err().to_string();
        assert!(error.contains("summary_token_budget"), "{error}");
        assert_eq!(Config::default().reference_rule, ReferenceRule::Distinctive);
    }
}

portable_tests! {
    fn a_keyword_of_one_summary_weighs_one_and_shared_ones_less() {
        assert!((keyword_weight(1, 1) - 1.0).abs() < 1e-12);
        assert!((keyword_weight(1, 500) - 1.0).abs() < 1e-12);
        assert!(keyword_weight(2, 2) < 1.0);
        assert!(keyword_weight(10, 100) < keyword_weight(2, 100));
        assert_eq!(keyword_weight(MAX_DISTINCTIVE_POSTINGS + 1, 1000), 0.0);
        assert_eq!(keyword_weight(0, 10), 0.0);
    }
}
