//! The losing tab: another tab saved a newer revision of the session, so this tab's last
//! changes could not be saved. The tab takes no more turns into a session it cannot save and
//! offers, in plain words, to load the newer version or to keep its own as a branch (a new
//! stored session). The text in the message box is never touched. The same card makes the
//! same offer when another device, rather than another tab, wrote the session (a sync
//! conflict).

use crate::state::AppState;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The card shown while the current session takes no turns: another tab saved a newer version
/// of it (this tab's changes could not be saved), or another device wrote it too (a sync
/// conflict: neither version was sent over the other). Both offer the same two ways on, in
/// words for each case; one card serves both, so the app carries its markup once.
#[component]
pub fn ConflictCard() -> impl IntoView {
    let state = expect_context::<AppState>();
    let working = RwSignal::new(false);
    // The tab's conflict comes first: until it is resolved nothing here can even be saved.
    let device = move || !state.session.conflict().get() && state.in_sync_conflict();
    let run = move |branch: bool| {
        if working.get_untracked() {
            return;
        }
        working.set(true);
        let device = untrack(device);
        spawn_local(async move {
            match (device, branch) {
                (true, _) => crate::sync::resolve(state, branch).await,
                (false, true) => state.keep_as_branch().await,
                (false, false) => state.load_newer().await,
            }
            working.set(false);
        });
    };
    let pick = move |tab: &'static str, other_device: &'static str| {
        move || if device() { other_device } else { tab }
    };
    // The two ways on differ only in what they do and say: loading the other version is the
    // primary button, keeping this one as a branch the secondary.
    let way_on = move |keep_branch: bool, test_id, label| {
        view! {
            <button
                type="button"
                class=keep_branch.then_some("secondary")
                data-testid=test_id
                disabled=move || working.get()
                on:click=move |_| run(keep_branch)
            >
                {label}
            </button>
        }
    };
    view! {
        <Show when=move || state.blocked()>
            <div class="failed conflict" data-testid=pick("save-conflict", "sync-conflict") role="alert">
                <p class="failed-title">
                    {pick("Another tab changed this conversation", "Another device changed this conversation")}
                </p>
                <p>
                    {pick(
                        "Another tab saved a newer version of this conversation while this tab was answering, so this tab's last turn could not be saved. This tab sends nothing more into it until you choose. Loading the newer version puts this tab's last message back in the box; keeping this tab's version keeps it in the branch. What is typed in the box stays either way.",
                        "Another device sent turns to this conversation that this browser does not have, and this browser has turns the other device does not have. Choose which version to continue; the other is kept as a branch under Sessions. Your message in the box stays.",
                    )}
                </p>
                <div class="row">
                    {way_on(
                        false,
                        pick("conflict-load-newer", "sync-load-theirs"),
                        pick("Load the newer version", "Load the other device's version"),
                    )}
                    {way_on(
                        true,
                        pick("conflict-keep-branch", "sync-keep-branch"),
                        pick("Keep this tab's version as a branch", "Keep this device's version as a branch"),
                    )}
                </div>
            </div>
        </Show>
    }
}
