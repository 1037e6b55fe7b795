//! Turns answered by the offline demo model through the turn engine, as the engine's tests of
//! the model's phrasing and behaviour play them.

use ccm_core::Session;
use ccm_engine::offline::{OfflineModel, SessionFacts, OFFLINE_MODEL_NAME};
use ccm_engine::{run_instant_turn, EngineSettings, TurnResult};

/// One turn answered by the offline model; panics with the text if the turn fails.
pub fn say(session: &mut Session, text: &str) -> TurnResult {
    let model = OfflineModel::new();
    run_instant_turn(
        session,
        text,
        0,
        EngineSettings::new(OFFLINE_MODEL_NAME),
        |request, session| Ok(model.respond(request, &SessionFacts::of(session))),
    )
    .unwrap_or_else(|error| panic!("{text:?} failed: {error}"))
}

/// The tools called in a turn, as `name(arguments)`.
pub fn calls(result: &TurnResult) -> Vec<String> {
    result
        .tool_calls
        .iter()
        .map(|c| format!("{}({})", c.name, c.arguments))
        .collect()
}
