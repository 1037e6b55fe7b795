//! Graduated compaction: keeping a long or heavy conversation inside the model's window
//! without losing a byte.
//!
//! After every message, usage is the working context's tokens over the window. Below the soft
//! threshold nothing happens; above it, three levels of increasing force apply (defaults 60,
//! 75 and 90 %; the 50/65/80 set is [`ThresholdPreset::Early`]):
//!
//! 1. **soft**: attachments nobody referenced in the last 3 messages show their summary
//!    instead of their text; expanded efforts that went idle collapse to their summary.
//! 2. **hard**: the older ambient messages are ranked by relevance to the user's message
//!    (BM25 by default, embeddings when configured); the top half and the last 5 messages stay,
//!    the rest leave the working set.
//! 3. **emergency**: every attachment is compressed, only the last 4 ambient messages stay,
//!    and the rest of the working history is replaced by a rolling summary (written by a model,
//!    or extractive offline, never empty).
//!
//! Every level changes only the working set: stored messages, attachments' full texts and
//! raw logs stay as they were and can be brought back byte for byte. A compaction that would
//! free nothing or make the context larger is not applied.
//!
//! # The pieces
//!
//! | module | what |
//! |---|---|
//! | [`level`] | [`Level`] and [`Usage`]: the scale the other modules speak of |
//! | [`policy`] | [`CompactionConfig`] and [`CompactionPolicy`]: when to compact (thresholds, cooldown, hysteresis) |
//! | [`attachments`] | [`Attachment`]: full text, summary, both token counts, mode, reference history |
//! | [`relevance`] | [`bm25_scores`], [`EmbeddingCache`] (the endpoint's JSON is `ccm-provider`'s), [`select_keep`] |
//! | [`rolling`] | [`RollingSummary`], the extractive fallback |
//! | [`planner`] | [`plan_compaction`]: which items move at a level, and [`CompactionPlan::finish`] |
//! | [`report`] | [`CompactionEvent`], [`MovedItem`], [`MoveReason`], banners, [`check_applicable`] |
//!
//! # Integration contract (for the context planner)
//!
//! Everything here is pure and independent of `Session`. The planner owns the working set
//! and the store; these components only decide.
//!
//! **State the session keeps**: one [`CompactionPolicy`] (persist its [`PolicyState`] with the
//! session, and include it in the undo record of a turn, since `decide` mutates it); the
//! [`Attachment`]s; at most one current [`RollingSummary`]; the set of items moved out of the
//! working set with their [`MoveReason`] (for the plan's exclusions); optionally an
//! [`EmbeddingCache`].
//!
//! **After each message is stored** (or once per turn after the user message, with the
//! message counter of that message):
//!
//! 1. Detect attachment references in the new message: [`detect_references`].
//! 2. `let decision = policy.decide(Usage::new(working_tokens, window)?, message_counter, at_ms);`
//!    `working_tokens` is the plan's context total (stored counts); `window` is whichever limit
//!    the request must respect (the request budget, i.e. window minus reserved output, is the
//!    safe choice). Show `decision.reason` in the UI when it holds.
//! 3. If `decision.level_to_apply()` is `Some(level)`: describe the working context as
//!    [`WorkingItem`]s, **fixed items included** so the totals match:
//!    - `WorkingItem::fixed` for the system prompt, effort summaries, the pending user message;
//!    - `WorkingItem::ambient` per planner atom of the ambient window (an exchange: `seqs` its
//!      stored messages, `messages` 2, `text` as the model reads it, e.g. `USER: …\nASSISTANT: …`);
//!    - `WorkingItem::effort_turn` per turn of each open effort's raw log (the header can be a
//!      fixed item);
//!    - `WorkingItem::expanded` per expanded effort (raw tokens, its summary's tokens, turns
//!      since its last reference);
//!    - `WorkingItem::attachment(&attachment, message_counter)`;
//!    - `WorkingItem::rolling_summary` for the current rolling summary, if any;
//!    - `.pinned()` on anything a pin keeps.
//!
//!    Then `let plan = plan_compaction(&CompactionInput { level, items, query, relevance,
//!    config, window_tokens })?;` with `query` the user message being answered and
//!    `relevance` either `Relevance::Lexical` or `Relevance::Scores(&scores_by_item_id)`
//!    computed with [`EmbeddingCache::scores`] (fall back to lexical if the endpoint fails).
//! 4. If `plan.rolling` is `Some(r)`: build the request with ccm-engine's
//!    `rolling_summary_prompt(&r.input(), r.max_words)`, send it, record the answer with
//!    [`RollingSummary::from_llm`]; on any failure, an empty answer, or
//!    [`CompactionError::SummaryTooLarge`] from step 5, use
//!    `RollingSummary::extractive(&r.input(), r.max_words, counter)`; if even that is too
//!    large, finish `plan.without_rolling()`.
//! 5. `match plan.finish(&decision, summary.as_ref())?`:
//!    - [`CompactionOutcome::Applied`]`(event)`: apply every [`MovedItem`] (below), then
//!      `policy.record_applied(&event)`, show `event.banner()`, attach the event to the
//!      turn's metrics point;
//!    - [`CompactionOutcome::NotApplied`]: change nothing, `policy.record_not_applied(&decision)`.
//!
//! **Applying the moves** (the planner's job; nothing is deleted):
//!
//! | `reason` | `kind` | effect on the working set | plan entry |
//! |---|---|---|---|
//! | `compressed_attachment` / `compacted_level_3` | `attachment` | `Attachment::compress()` | included in compressed form |
//! | `collapsed_idle_expansion` / `compacted_level_3` | `expanded` | collapse (the summary returns) | raw log excluded with the reason |
//! | `compacted_level_2` | `ambient` | out of the working set | excluded, reason `compacted_level_2` |
//! | `compacted_level_3` | `ambient`, `effort_turn`, `rolling_summary` | out; the new rolling summary (covering `event.rolling_summary.covers`) stands in | excluded, reason `compacted_level_3`; the summary is included |
//!
//! Moved items stay stored: ambient messages in the ambient log, effort turns in their raw
//! log, attachments' full text in the attachment. Bringing one back (an `expand` of an
//! attachment, a search hit, a re-expansion) is a working-set change the planner already
//! knows how to make; [`RollingSummary::covers`] says which stored messages a summary stands
//! for.
//!
//! **Cost**: a decision is O(1); planning is O(working set · log) plus BM25 over the ambient
//! items; nothing here reads the stored history.
//!
//! **Determinism**: thresholds and usage are compared as integers; BM25 scores are rounded to
//! 6 decimals before ranking; ties go to the newer item; every collection is ordered.

pub mod attachments;
pub mod error;
pub mod level;
mod numbers;
pub mod planner;
pub mod policy;
pub mod relevance;
pub mod report;
pub mod rolling;

pub use attachments::{
    detect_references, extractive_attachment_summary, stale_attachments, Attachment,
    AttachmentKind, AttachmentMode, NewAttachment, SessionAttachment,
};
pub use error::{
    AttachmentError, CompactionConfigError, CompactionError, EmbeddingError, RelevanceError,
    RollingSummaryError, SessionFull, UsageError, MAX_IMPORT_DOCUMENT_CHARS,
    MAX_SESSION_ATTACHMENT_CHARS, MAX_SESSION_STORED_CHARS, RECORDED_FROM_CHARS,
    ROOM_FOR_ANSWER_CHARS,
};
pub use level::{Level, Usage};
pub use planner::{
    plan_compaction, CompactionInput, CompactionOutcome, CompactionPlan, ItemKind, Relevance,
    RollingPlan, WorkingItem,
};
pub use policy::{
    threshold_tokens, CompactionConfig, CompactionConfigInput, CompactionDecision, CompactionMark,
    CompactionPolicy, DecisionReason, HysteresisMark, PolicyState, ThresholdPreset,
};
pub use relevance::{
    bm25_scores, cosine_similarity, lexical_terms, select_keep, EmbeddingBatch, EmbeddingCache,
    KeepSelection,
};
pub use report::{
    check_applicable, thousands, CompactionEvent, CompactionRecord, MoveReason, MovedItem,
    MovedKind, NotApplied, RollingSummaryInfo,
};
pub use rolling::{
    describe_ranges, extractive_text, merge_ranges, rolling_budget_tokens, HistoryText,
    RollingInput, RollingSource, RollingSummary, SeqRange,
};
