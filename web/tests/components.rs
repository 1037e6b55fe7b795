//! Component tests in headless Chromium: each test mounts one component into a fresh element,
//! waits a tick, and checks the DOM and the callbacks. Run with
//! `cargo test -p ccm-web --target wasm32-unknown-unknown --tests`.
#![cfg(target_arch = "wasm32")]

use ccm_core::Session;
use ccm_web::chart::{self, CurvePoint, Marker, MarkerKind};
use ccm_web::components::chat::ChatLog;
use ccm_web::components::curves::TokenCurves;
use ccm_web::components::inspector::Inspector;
use ccm_web::components::modal::Modal;
use ccm_web::components::rich_text::RichText;
use ccm_web::components::shortcuts::{ShortcutsDialog, SHORTCUTS};
use ccm_web::components::theme::{ThemeSwitch, THEME_KEY};
use ccm_web::components::tiers::TierView;
use ccm_web::components::welcome::{NextExample, Welcome, EXAMPLES};
use ccm_web::view_model::{self, EffortAction, TurnGroup};
use leptos::prelude::*;
use std::sync::{Arc, Mutex};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// A fresh element in the page for one test.
fn container() -> web_sys::HtmlElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let element: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
    document.body().unwrap().append_child(&element).unwrap();
    element
}

fn all(root: &web_sys::HtmlElement, selector: &str) -> Vec<web_sys::HtmlElement> {
    let list = root.query_selector_all(selector).unwrap();
    (0..list.length())
        .filter_map(|i| list.item(i))
        .map(|n| n.unchecked_into())
        .collect()
}

fn one(root: &web_sys::HtmlElement, selector: &str) -> web_sys::HtmlElement {
    root.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("no element matches {selector}"))
        .unchecked_into()
}

fn text(root: &web_sys::HtmlElement) -> String {
    root.text_content().unwrap_or_default()
}

/// Fails unless `element` has the attribute `name` with the value `expected`.
fn assert_attribute(element: &web_sys::Element, name: &str, expected: &str) {
    assert_eq!(
        element.get_attribute(name).as_deref(),
        Some(expected),
        "{name}"
    );
}

/// Types `text` into `input` as a person would (the value, then an `input` event), and waits
/// a tick for the view to follow.
async fn type_into(input: &web_sys::HtmlInputElement, text: &str) {
    input.set_value(text);
    input
        .dispatch_event(&web_sys::Event::new("input").unwrap())
        .unwrap();
    leptos::task::tick().await;
}

/// A session with an open effort, a concluded one, an expanded one and ambient chat.
fn session() -> Session {
    let mut s = ccm_test_support::auth_bug_concluded();
    s.begin_turn("Let's work on the billing export", 7).unwrap();
    s.open_effort("billing export", None).unwrap();
    s.end_turn("Started billing.", 8).unwrap();
    s.begin_turn("Let's work on the search index", 9).unwrap();
    s.open_effort("search index", None).unwrap();
    s.end_turn("Started search.", 10).unwrap();
    s
}

#[wasm_bindgen_test]
async fn tier_view_shows_every_tier_and_reports_actions() {
    let mut core = session();
    core.expand_effort("auth-bug").unwrap();
    let snapshot = view_model::tiers(&core);
    let pressed: Arc<Mutex<Vec<(EffortAction, String)>>> = Arc::default();
    let log = pressed.clone();
    let recalled: Arc<Mutex<Vec<String>>> = Arc::default();
    let recall_log = recalled.clone();
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        // The app runs the search on the session (after reading what it needs from storage);
        // here it runs on a core session at once, one where auth-bug is not expanded (the
        // search leaves out what the context shows).
        let search = RwSignal::new(None);
        let searched = session();
        view! {
            <TierView
                tiers=Signal::stored(snapshot.clone())
                on_action=Callback::new(move |a| log.lock().unwrap().push(a))
                search=search
                on_search=Callback::new(move |q: String| search.set(Some(view_model::search(&searched, &q))))
                on_recall=Callback::new(move |q| recall_log.lock().unwrap().push(q))
            />
        }
    });
    leptos::task::tick().await;

    let open = all(&root, "[data-testid=open-effort]");
    assert_eq!(open.len(), 2);
    let active = one(&root, "[data-testid=open-effort][data-state=active]");
    assert_attribute(&active, "data-effort", "search-index");
    assert!(text(&active).contains("active"));

    let expanded = one(&root, "[data-testid=expanded-effort]");
    assert_attribute(&expanded, "data-countdown", "3");
    assert!(
        text(&expanded).contains("collapses in 3 turns"),
        "{}",
        text(&expanded)
    );
    assert!(
        all(&root, "[data-testid=summary-effort]").is_empty(),
        "expanded is listed once"
    );

    let manifest = all(&root, "[data-testid=manifest-row]");
    assert_eq!(manifest.len(), 3);
    assert!(text(&one(&root, "[data-testid=tier-manifest]")).contains("Refresh token TTL"));
    assert_eq!(all(&root, "[data-testid=raw-log]").len(), 3);

    one(&root, "[data-testid=action-collapse-auth-bug]").click();
    one(&root, "[data-testid=action-switch-billing-export]").click();
    one(&root, "[data-testid=read-log-auth-bug]").click();
    assert_eq!(
        *pressed.lock().unwrap(),
        vec![
            (EffortAction::Collapse, "auth-bug".to_string()),
            (EffortAction::Switch, "billing-export".to_string()),
            (EffortAction::ReadLog, "auth-bug".to_string()),
        ]
    );

    // The manifest's search is the model's ranking: the concluded effort the query is about,
    // and its messages verbatim (the open efforts are in the context already).
    let search: web_sys::HtmlInputElement =
        one(&root, "[data-testid=manifest-search]").unchecked_into();
    type_into(&search, "TTL refresh").await;
    let rows = all(&root, "[data-testid=manifest-row]");
    assert_eq!(rows.len(), 1);
    assert_attribute(&rows[0], "data-effort", "auth-bug");
    let evidence = one(&root, "[data-testid=search-evidence]");
    assert_attribute(&evidence, "data-query", "TTL refresh");
    assert!(
        text(&evidence).contains("user: Fixed: the TTL was wrong."),
        "{}",
        text(&evidence)
    );
    one(&root, "[data-testid=recall-button]").click();
    assert_eq!(*recalled.lock().unwrap(), ["TTL refresh"]);
    // A query without a searchable word says so.
    type_into(&search, "the and").await;
    assert!(text(&one(&root, "[data-testid=tier-manifest]")).contains("no searchable word"));
}

#[wasm_bindgen_test]
async fn tier_view_shows_summaries_with_their_eviction_countdown() {
    let snapshot = view_model::tiers(&session());
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! {
            <TierView
                tiers=Signal::stored(snapshot.clone())
                on_action=Callback::new(|_| {})
                search=Signal::stored(None)
                on_search=Callback::new(|_| {})
                on_recall=Callback::new(|_| {})
            />
        }
    });
    leptos::task::tick().await;
    let summary = one(&root, "[data-testid=summary-effort]");
    assert_attribute(&summary, "data-effort", "auth-bug");
    assert_attribute(&summary, "data-countdown", "18");
    assert!(text(&summary).contains("leaves memory in 18"));
    assert!(text(&one(&root, "[data-testid=tier-expanded]")).contains("Nothing expanded"));
}

fn sample_points() -> Vec<CurvePoint> {
    (1..=6)
        .map(|turn| CurvePoint {
            turn,
            context: 200 + turn * 10,
            naive: 200 + turn * 120,
            expansion: if turn == 4 { 80 } else { 0 },
            reported: (turn == 6).then_some(290),
            markers: if turn == 3 {
                vec![Marker {
                    kind: MarkerKind::Concluded,
                    subject: "auth-bug".into(),
                    tokens: 300,
                }]
            } else if turn == 4 {
                vec![Marker {
                    kind: MarkerKind::Expanded,
                    subject: "auth-bug".into(),
                    tokens: 80,
                }]
            } else {
                Vec::new()
            },
        })
        .collect()
}

#[wasm_bindgen_test]
async fn token_curves_draw_the_geometry_and_show_a_turn_on_demand() {
    let points = sample_points();
    let expected = chart::geometry(
        &points,
        chart::Size {
            width: 640.0,
            height: 260.0,
        },
    );
    let root = container();
    let stored = points.clone();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! { <TokenCurves points=Signal::stored(stored.clone()) /> }
    });
    leptos::task::tick().await;

    let context = one(&root, "[data-testid=context-line]");
    assert_eq!(
        context.get_attribute("d"),
        Some(expected.context_path.clone())
    );
    assert_eq!(
        one(&root, "[data-testid=naive-line]").get_attribute("d"),
        Some(expected.naive_path.clone())
    );
    assert!(!expected.expansion_area.is_empty());
    assert_eq!(
        one(&root, "[data-testid=expansion-area]").get_attribute("d"),
        Some(expected.expansion_area.clone())
    );
    let markers = all(&root, "[data-testid=chart-marker]");
    assert_eq!(markers.len(), 2);
    assert_attribute(&markers[0], "data-kind", "concluded");
    assert_eq!(all(&root, "[data-testid=reported-point]").len(), 1);
    let headline = text(&one(&root, "[data-testid=savings-headline]"));
    assert!(headline.starts_with("72% smaller"), "{headline}");

    // Keyboard reading: End selects the last turn, ArrowLeft the one before.
    let frame = one(&root, ".chart-frame");
    for key in ["End", "ArrowLeft"] {
        let init = web_sys::KeyboardEventInit::new();
        init.set_key(key);
        init.set_bubbles(true);
        let event =
            web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
        frame.dispatch_event(&event).unwrap();
    }
    leptos::task::tick().await;
    let hover = text(&one(&root, "[data-testid=chart-hover]"));
    assert!(hover.starts_with("Turn 5"), "{hover}");
    assert!(hover.contains("Naive baseline: 800 tokens"), "{hover}");
}

#[wasm_bindgen_test]
async fn inspector_lists_items_reasons_and_pins() {
    let snapshot = view_model::inspector(&session());
    let pins: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let cycles: Arc<Mutex<u32>> = Arc::default();
    let (pin_log, cycle_log) = (pins.clone(), cycles.clone());
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        let pin_log = pin_log.clone();
        let cycle_log = cycle_log.clone();
        view! {
            <Inspector
                snapshot=Signal::stored(Some(snapshot.clone()))
                breakdown_open=RwSignal::new(true)
                on_pin=Callback::new(move |p| pin_log.lock().unwrap().push(p))
                on_cycle_mode=Callback::new(move |()| *cycle_log.lock().unwrap() += 1)
            />
        }
    });
    leptos::task::tick().await;

    let meter = text(&one(&root, "[data-testid=budget-meter]"));
    assert!(meter.starts_with("CTX Light"), "{meter}");
    let included = all(&root, "[data-testid=included-item]");
    assert_attribute(&included[0], "data-item", "system");
    let summary = one(
        &root,
        "[data-testid=included-item][data-item='summary:auth-bug']",
    );
    assert!(
        text(&summary).contains("leaves memory in"),
        "{}",
        text(&summary)
    );
    let excluded = one(
        &root,
        "[data-testid=excluded-item][data-item='effort:auth-bug']",
    );
    assert_attribute(&excluded, "data-reason", "summarized");
    let diff = text(&one(&root, "[data-testid=plan-diff]"));
    assert!(diff.contains("effort:search-index"), "{diff}");
    let messages = all(&root, "[data-testid=request-messages] > li");
    assert!(messages.len() >= 3, "system, summary, logs…");
    assert_attribute(&messages[0], "data-role", "system");

    one(&root, "[data-testid='pin-summary:auth-bug']").click();
    one(&root, "[data-testid=cycle-mode]").click();
    assert_eq!(
        *pins.lock().unwrap(),
        vec![("summary:auth-bug".to_string(), true)]
    );
    assert_eq!(*cycles.lock().unwrap(), 1);
}

#[wasm_bindgen_test]
async fn rich_text_never_injects_html_and_adds_copy_buttons() {
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), || {
        view! {
            <RichText text="Hi <img src=x onerror=\"window.hacked=1\"> **bold**\n\n<script>window.hacked=2</script>\n\n```rust\nfn main() {}\n```\n[x](javascript:alert(1))" />
        }
    });
    leptos::task::tick().await;
    assert!(all(&root, "img").is_empty());
    assert!(all(&root, "script").is_empty());
    assert!(text(&root).contains("<img src=x"));
    assert_eq!(text(&one(&root, "strong")), "bold");
    assert!(all(&root, "a").is_empty(), "unsafe links are not links");
    let block = one(&root, "[data-testid=code-block]");
    assert!(text(&block).contains("fn main() {}"));
    assert_eq!(text(&one(&root, "[data-testid=copy-code]")), "Copy");
}

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// The element that has the focus, if any, as the `HtmlElement` the tests hold.
fn focused() -> Option<web_sys::HtmlElement> {
    document()
        .active_element()
        .map(|element| element.unchecked_into())
}

fn press(target: &web_sys::HtmlElement, key: &str, shift: bool) {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(key);
    init.set_shift_key(shift);
    init.set_bubbles(true);
    init.set_cancelable(true);
    let event =
        web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    target.dispatch_event(&event).unwrap();
}

fn change_select(select: &web_sys::HtmlElement, value: &str) {
    let select: &web_sys::HtmlSelectElement = select.unchecked_ref();
    select.set_value(value);
    select
        .dispatch_event(&web_sys::Event::new("change").unwrap())
        .unwrap();
}

#[wasm_bindgen_test]
async fn a_modal_takes_the_focus_keeps_tab_inside_and_gives_the_focus_back() {
    let root = container();
    let opener: web_sys::HtmlElement = document()
        .create_element("button")
        .unwrap()
        .unchecked_into();
    opener.set_text_content(Some("Open"));
    root.append_child(&opener).unwrap();
    opener.focus().unwrap();

    let open = RwSignal::new(false);
    let closes: Arc<Mutex<u32>> = Arc::default();
    let log = closes.clone();
    let mount = container();
    let _handle = leptos::mount::mount_to(mount.clone(), move || {
        let log = log.clone();
        let close = Callback::new(move |()| {
            *log.lock().unwrap() += 1;
            open.set(false);
        });
        move || {
            open.get().then(|| {
                view! {
                    <Modal title="A question" test_id="test-dialog" on_close=close>
                        <input data-testid="answer" />
                        <button type="button" data-testid="ok">"OK"</button>
                    </Modal>
                }
            })
        }
    });
    leptos::task::tick().await;
    assert!(all(&mount, "dialog").is_empty(), "closed at first");

    open.set(true);
    leptos::task::tick().await;
    let dialog: web_sys::HtmlDialogElement = one(&mount, "dialog").unchecked_into();
    assert!(dialog.open(), "shown");
    assert!(dialog.matches(":modal").unwrap(), "shown as a modal");
    let title_id = dialog.get_attribute("aria-labelledby").unwrap();
    assert_eq!(
        document()
            .get_element_by_id(&title_id)
            .unwrap()
            .text_content()
            .as_deref(),
        Some("A question")
    );
    // The first control (the close button in the title bar) has the focus.
    let close = one(&mount, "[data-testid=dialog-close]");
    assert_eq!(focused().as_ref(), Some(&close));

    // Tab from the last control wraps to the first; Shift+Tab from the first to the last.
    let ok = one(&mount, "[data-testid=ok]");
    ok.focus().unwrap();
    press(&ok, "Tab", false);
    assert_eq!(focused().as_ref(), Some(&close));
    press(&close, "Tab", true);
    assert_eq!(focused().as_ref(), Some(&ok));
    // Between two controls the browser moves the focus itself: the trap leaves it alone.
    let answer = one(&mount, "[data-testid=answer]");
    answer.focus().unwrap();
    press(&answer, "Tab", false);
    assert_eq!(focused().as_ref(), Some(&answer));

    // Escape closes it, and the focus goes back to the opener.
    press(&answer, "Escape", false);
    leptos::task::tick().await;
    assert_eq!(*closes.lock().unwrap(), 1);
    assert!(all(&mount, "dialog").is_empty(), "gone after Escape");
    assert_eq!(focused().as_ref(), Some(&opener));

    // A click on the backdrop (the dialog element itself) closes it too; one inside does not.
    open.set(true);
    leptos::task::tick().await;
    one(&mount, "[data-testid=answer]").click();
    assert_eq!(*closes.lock().unwrap(), 1);
    one(&mount, "dialog").click();
    leptos::task::tick().await;
    assert_eq!(*closes.lock().unwrap(), 2);
    assert!(
        all(&mount, "dialog").is_empty(),
        "gone after a backdrop click"
    );
}

#[wasm_bindgen_test]
async fn the_shortcuts_dialog_lists_every_shortcut_and_closes() {
    let open = RwSignal::new(true);
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! { <ShortcutsDialog open=open /> }
    });
    leptos::task::tick().await;
    let rows = all(&root, "[data-testid=shortcut]");
    assert_eq!(rows.len(), SHORTCUTS.len());
    for (row, (keys, what)) in rows.iter().zip(SHORTCUTS) {
        let shown: Vec<String> = all(row, "kbd")
            .iter()
            .map(|k| k.text_content().unwrap_or_default())
            .collect();
        assert_eq!(shown, keys.to_vec());
        assert!(text(row).contains(what), "{}", text(row));
    }
    one(&root, "[data-testid=close-shortcuts]").click();
    leptos::task::tick().await;
    assert!(!open.get_untracked());
    assert!(all(&root, "[data-testid=shortcuts-dialog]").is_empty());
}

#[wasm_bindgen_test]
async fn the_theme_switch_applies_the_choice_and_remembers_it() {
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    storage.remove_item(THEME_KEY).unwrap();
    let html = document().document_element().unwrap();
    let system_dark = web_sys::window()
        .unwrap()
        .match_media("(prefers-color-scheme: dark)")
        .unwrap()
        .unwrap()
        .matches();
    let system = if system_dark { "dark" } else { "light" };

    let root = container();
    let handle = leptos::mount::mount_to(root.clone(), || view! { <ThemeSwitch /> });
    leptos::task::tick().await;
    assert_attribute(&html, "data-theme", system);

    let select = one(&root, "[data-testid=theme-select]");
    let other = if system_dark { "light" } else { "dark" };
    change_select(&select, other);
    leptos::task::tick().await;
    assert_attribute(&html, "data-theme", other);
    assert_eq!(storage.get_item(THEME_KEY).unwrap().as_deref(), Some(other));
    drop(handle);

    // A new page (here: a new switch) starts from the remembered choice.
    let again = container();
    let _handle = leptos::mount::mount_to(again.clone(), || view! { <ThemeSwitch /> });
    leptos::task::tick().await;
    let select = one(&again, "[data-testid=theme-select]");
    assert_eq!(
        select.unchecked_ref::<web_sys::HtmlSelectElement>().value(),
        other
    );
    assert_attribute(&html, "data-theme", other);

    // Back to the system's theme: nothing is remembered, the system decides.
    change_select(&select, "system");
    leptos::task::tick().await;
    assert_eq!(storage.get_item(THEME_KEY).unwrap(), None);
    assert_attribute(&html, "data-theme", system);
}

#[wasm_bindgen_test]
async fn the_welcome_offers_the_tour_in_order() {
    let picked: Arc<Mutex<Vec<usize>>> = Arc::default();
    let log = picked.clone();
    let offline = RwSignal::new(true);
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        let log = log.clone();
        view! { <Welcome offline=offline on_pick=Callback::new(move |i| log.lock().unwrap().push(i)) /> }
    });
    leptos::task::tick().await;
    let buttons = all(&root, "[data-testid=example-prompt]");
    let texts: Vec<String> = buttons.iter().map(text).collect();
    let expected: Vec<String> = EXAMPLES.iter().map(|e| e.text.to_string()).collect();
    assert_eq!(texts, expected);
    assert!(text(&root).contains("efforts"));
    assert!(!all(&root, "[data-testid=welcome-offline]").is_empty());
    buttons[2].click();
    assert_eq!(*picked.lock().unwrap(), vec![2]);
    // With a real model the welcome does not talk about the demo model's phrases.
    offline.set(false);
    leptos::task::tick().await;
    assert!(all(&root, "[data-testid=welcome-offline]").is_empty());
}

#[wasm_bindgen_test]
async fn the_next_example_follows_the_tour_and_can_be_ended() {
    let picked: Arc<Mutex<Vec<usize>>> = Arc::default();
    let ended: Arc<Mutex<u32>> = Arc::default();
    let (pick_log, end_log) = (picked.clone(), ended.clone());
    let next = RwSignal::new(Some(1));
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        let pick_log = pick_log.clone();
        let end_log = end_log.clone();
        view! {
            <NextExample
                next=next
                on_pick=Callback::new(move |i| pick_log.lock().unwrap().push(i))
                on_dismiss=Callback::new(move |()| *end_log.lock().unwrap() += 1)
            />
        }
    });
    leptos::task::tick().await;
    let strip = text(&one(&root, "[data-testid=next-example]"));
    assert!(strip.contains("2 of 5"), "{strip}");
    assert_eq!(
        text(&one(&root, "[data-testid=next-example-prompt]")),
        EXAMPLES[1].text
    );
    one(&root, "[data-testid=next-example-prompt]").click();
    one(&root, "[data-testid=end-tour]").click();
    assert_eq!(*picked.lock().unwrap(), vec![1]);
    assert_eq!(*ended.lock().unwrap(), 1);
    // Past the last example, nothing is offered.
    next.set(Some(EXAMPLES.len()));
    leptos::task::tick().await;
    assert!(all(&root, "[data-testid=next-example]").is_empty());
}

#[wasm_bindgen_test]
async fn the_chat_log_is_a_focusable_log_with_a_view_for_an_empty_chat() {
    let transcript = view_model::transcript(&session());
    let groups = RwSignal::new(Vec::<TurnGroup>::new());
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! {
            <ChatLog
                groups=groups
                empty=|| view! { <p data-testid="empty-view">"Nothing yet"</p> }
            />
        }
    });
    leptos::task::tick().await;
    let log = one(&root, "[data-testid=chat-log]");
    assert_attribute(&log, "role", "log");
    assert_attribute(&log, "aria-live", "polite");
    assert_eq!(log.tab_index(), 0, "keyboard users can scroll it");
    assert!(!all(&root, "[data-testid=empty-view]").is_empty());

    groups.set(view_model::turn_groups(&transcript, &Default::default()));
    leptos::task::tick().await;
    assert!(all(&root, "[data-testid=empty-view]").is_empty());
    assert_eq!(
        all(&root, "[data-testid=message]").len(),
        transcript.messages.len()
    );
}

#[wasm_bindgen_test]
async fn the_chat_log_folds_a_concluded_effort_and_shows_each_turns_usage() {
    let transcript = view_model::transcript(&session());
    let all_messages = {
        let groups = view_model::turn_groups(&transcript, &Default::default());
        groups
            .iter()
            .flat_map(|g| &g.entries)
            .filter(|e| matches!(e, view_model::ChatEntry::Message(_)))
            .count()
    };
    let folded = RwSignal::new(std::collections::BTreeSet::<String>::new());
    let groups = Signal::derive(move || {
        view_model::fold_efforts(
            view_model::turn_groups(&transcript, &Default::default()),
            &transcript.concluded,
            &folded.get(),
        )
    });
    let usage = Signal::stored(
        [(1u64, "12 tokens in · 3 out · free".to_string())]
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    let on_fold = Callback::new(move |(effort, fold): (String, bool)| {
        record.lock().unwrap().push((effort.clone(), fold));
        folded.update(|f| {
            if fold {
                f.insert(effort);
            } else {
                f.remove(&effort);
            }
        });
    });
    let root = container();
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! {
            <ChatLog
                groups=groups
                usage=usage
                on_fold=on_fold
            />
        }
    });
    leptos::task::tick().await;
    assert_eq!(all(&root, "[data-testid=message]").len(), all_messages);
    let usage_lines = all(&root, "[data-testid=turn-usage]");
    assert_eq!(usage_lines.len(), 1);
    assert_eq!(text(&usage_lines[0]), "12 tokens in · 3 out · free");

    let fold = one(&root, "[data-testid=effort-fold][data-effort=auth-bug]");
    assert_attribute(&fold, "data-folded", "false");
    one(&fold, "button").click();
    leptos::task::tick().await;
    assert_eq!(*asked.lock().unwrap(), vec![("auth-bug".to_string(), true)]);
    let folded_messages = all(&root, "[data-testid=message]").len();
    assert!(
        folded_messages < all_messages,
        "the effort's messages are left out"
    );
    let fold = one(&root, "[data-testid=effort-fold][data-effort=auth-bug]");
    assert_attribute(&fold, "data-folded", "true");
    assert_eq!(one(&fold, "button").text_content().as_deref(), Some("Show"));
    one(&fold, "button").click();
    leptos::task::tick().await;
    assert_eq!(all(&root, "[data-testid=message]").len(), all_messages);
}
