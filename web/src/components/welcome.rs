//! The first run: what CCM does, in plain words, in the empty chat, and a short tour of
//! example messages that show efforts at work (open one, open another, switch back, conclude,
//! ask about it later). After the first example the tour offers the next one above the
//! message box until it is finished or dismissed.
//!
//! The examples are phrased the way the offline demo model understands; a test below plays
//! them through that model, so a change to it that breaks the tour fails here.

use crate::components::local_offer::FirstRunOffer;
use crate::components::modal::CloseButton;
use leptos::prelude::*;

/// One example message of the tour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    /// What it shows, in a few words.
    pub step: &'static str,
    /// The message it sends.
    pub text: &'static str,
}

/// The tour, in the order its steps build on each other.
pub const EXAMPLES: [Example; 5] = [
    Example {
        step: "Open an effort",
        text: "Let's work on the auth bug: users get 401 errors after an hour.",
    },
    Example {
        step: "Open a second one",
        text: "Let's work on the billing export: the CSV misses the VAT column.",
    },
    Example {
        step: "Switch back",
        text: "Back to the auth bug.",
    },
    Example {
        step: "Conclude it",
        text:
            "The auth bug is resolved: raising the refresh token TTL to 24h fixed it. We're done.",
    },
    Example {
        step: "Ask about it later",
        text: "Remind me exactly how we fixed the auth bug?",
    },
];

/// The welcome shown in an empty chat.
#[component]
pub fn Welcome(
    /// Whether the offline demo model answers (then the welcome says what it understands).
    #[prop(into)]
    offline: Signal<bool>,
    /// Called with the index of the example chosen.
    on_pick: Callback<usize>,
) -> impl IntoView {
    view! {
        <section class="welcome" data-testid="welcome" aria-labelledby="welcome-title">
            <h2 id="welcome-title">"Chat with a model that keeps its memory tidy"</h2>
            <FirstRunOffer />
            <p>
                "CCM splits a conversation into "
                <strong>"efforts"</strong>
                ": one per topic you work on. While an effort is open, the model sees all of it. When you conclude it, a short summary takes its place, so the model's context stays small; the whole conversation stays stored and comes back when you ask about it."
            </p>
            <p>
                "The Memory, Context and Tokens panels show what the model is sent at every turn, and why."
            </p>
            <Show when=move || offline.get()>
                <p class="hint" data-testid="welcome-offline">
                    "You are talking to the offline demo model: it runs in this page, needs no key and understands only simple phrases like the ones below. Choose a real model under Settings."
                </p>
            </Show>
            <h3>"Try it: five messages, in order"</h3>
            <ol class="examples">
                {EXAMPLES
                    .iter()
                    .enumerate()
                    .map(|(i, example)| {
                        view! {
                            <li>
                                <span class="example-step">{example.step}</span>
                                <button
                                    type="button"
                                    class="example"
                                    data-testid="example-prompt"
                                    data-index=i.to_string()
                                    on:click=move |_| on_pick.run(i)
                                >
                                    {example.text}
                                </button>
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        </section>
    }
}

/// The tour's next step above the message box: its message as a button, and a way to stop
/// the tour.
#[component]
pub fn NextExample(
    /// The index of the next example (`None`, or past the end: nothing is shown).
    #[prop(into)]
    next: Signal<Option<usize>>,
    /// Called with the index of the example chosen.
    on_pick: Callback<usize>,
    /// Called when the person ends the tour.
    on_dismiss: Callback<()>,
) -> impl IntoView {
    move || {
        let index = next.get()?;
        let example = EXAMPLES.get(index)?;
        Some(view! {
            <div class="next-example" data-testid="next-example" role="group" aria-label="Next example">
                <span class="example-step">
                    {format!("Next example, {} of {}: {}", index + 1, EXAMPLES.len(), example.step.to_lowercase())}
                </span>
                <button type="button" class="example" data-testid="next-example-prompt" on:click=move |_| on_pick.run(index)>
                    {example.text}
                </button>
                <CloseButton
                    class="secondary dismiss"
                    test_id="end-tour"
                    label="End the tour of examples"
                    title="End the tour"
                    on_click=on_dismiss
                />
            </div>
        })
    }
}

#[cfg(test)]
mod tests {
    use super::EXAMPLES;
    use ccm_core::{Config, Session};
    use ccm_engine::offline::{OfflineModel, SessionFacts, OFFLINE_MODEL_NAME};
    use ccm_engine::{run_instant_turn, EngineSettings};

    /// The tour does with the offline demo model what each step says it shows.
    #[test]
    fn the_tour_works_with_the_offline_model() {
        let mut session = Session::new(Config::default()).unwrap();
        let model = OfflineModel::new();
        let expected = [
            "--- Started effort: auth-bug ---",
            "--- Started effort: billing-export ---",
            "--- Switched to effort: auth-bug ---",
            "--- Concluded effort: auth-bug ---",
            "--- Expanded effort: auth-bug",
        ];
        let mut last_reply = String::new();
        for (turn, (example, banner)) in EXAMPLES.iter().zip(expected).enumerate() {
            let result = run_instant_turn(
                &mut session,
                example.text,
                turn as u64,
                EngineSettings::new(OFFLINE_MODEL_NAME),
                |request, session| Ok(model.respond(request, &SessionFacts::of(session))),
            )
            .unwrap();
            assert!(
                result.reply.starts_with(banner),
                "{}: {:?}",
                example.step,
                result.reply
            );
            last_reply = result.reply;
        }
        // Asked how it was fixed, the model quotes the fix from the log it loaded.
        assert!(
            last_reply.contains("raising the refresh token TTL to 24h fixed it"),
            "{last_reply}"
        );
        // Concluding the active effort left the other one active.
        assert_eq!(session.efforts().active_id(), Some("billing-export"));
    }
}
