//! What a compaction did: the event recorded for the token curve and the plan's exclusions,
//! the banner shown to the person, and the rule that a compaction which frees nothing is not
//! applied.

use super::level::{Level, Usage};
use super::rolling::{RollingSource, SeqRange};
// Other crates name it by this path (`compaction::report::thousands`). It lives in a leaf
// module so that the errors, which print counts too, need not import the report.
pub use super::numbers::thousands;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why an item left the working set (or changed to a smaller form) during a compaction. The
/// codes follow the plan's snake_case exclusion codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveReason {
    /// An attachment now shows its summary instead of its full text (the text stays stored).
    CompressedAttachment,
    /// An expanded effort went idle and was collapsed to its summary before decay would have.
    CollapsedIdleExpansion,
    /// Left the working set at level 2: among the less relevant older ambient messages.
    // serde's snake_case would write `compacted_level2`; the plan's codes separate the digit.
    #[serde(rename = "compacted_level_2")]
    CompactedLevel2,
    /// Replaced by the rolling summary at level 3 (or compressed or collapsed at level 3
    /// although recently referenced).
    #[serde(rename = "compacted_level_3")]
    CompactedLevel3,
}

impl MoveReason {
    /// The reason code as written in plans and events.
    pub fn code(self) -> &'static str {
        match self {
            MoveReason::CompressedAttachment => "compressed_attachment",
            MoveReason::CollapsedIdleExpansion => "collapsed_idle_expansion",
            MoveReason::CompactedLevel2 => "compacted_level_2",
            MoveReason::CompactedLevel3 => "compacted_level_3",
        }
    }
}

impl fmt::Display for MoveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// What kind of item moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MovedKind {
    /// Ambient chat (an exchange or a message: the planner's unit).
    Ambient,
    /// A turn of an open effort's raw log (moved only as the emergency level's last resort).
    EffortTurn,
    /// An attachment, compressed to its summary.
    Attachment,
    /// An expanded effort's raw log, collapsed to its summary.
    Expanded,
    /// The previous rolling summary, folded into the new one.
    RollingSummary,
}

/// One item a compaction moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedItem {
    /// The working item's id, as the planner gave it.
    pub id: String,
    /// What it is.
    pub kind: MovedKind,
    /// Tokens that left the context with it.
    pub tokens: u64,
    /// Tokens of the smaller form that took its place: the attachment's or the effort's
    /// summary. 0 when it simply left, or when the shared rolling summary stands in for it
    /// (that summary is counted once, in [`CompactionEvent::rolling_summary`]).
    pub replacement_tokens: u64,
    /// Stored messages the item holds (0 for attachments and summaries).
    pub messages: u32,
    /// Why it moved.
    pub reason: MoveReason,
}

/// The rolling summary a level-3 compaction put in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollingSummaryInfo {
    /// The stored messages it stands for.
    pub covers: Vec<SeqRange>,
    /// Who wrote it.
    pub source: RollingSource,
    /// Tokens it adds to the context.
    pub tokens: u64,
}

/// One applied compaction, for the token curve, the plan's exclusions and the banner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionEvent {
    /// The level applied.
    pub level: Level,
    /// The usage that triggered it.
    pub trigger_usage: Usage,
    /// Working tokens before.
    pub tokens_before: u64,
    /// Working tokens after.
    pub tokens_after: u64,
    /// `tokens_before - tokens_after`.
    pub tokens_freed: u64,
    /// What moved, in the order the plan chose it.
    pub moved: Vec<MovedItem>,
    /// The rolling summary that entered the context (level 3 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_summary: Option<RollingSummaryInfo>,
    /// The message counter when it was applied.
    pub at_message: u64,
    /// When it was applied, in milliseconds (passed in).
    pub at_ms: u64,
}

impl CompactionEvent {
    /// Stored messages that left the working set (moved out or summarised).
    pub fn messages_moved(&self) -> u64 {
        self.moved.iter().map(|m| u64::from(m.messages)).sum()
    }

    /// The banner shown to the person, for example
    /// `--- Compacted context (level 2, hard): 3,120 tokens freed, 14 messages moved out of the working set (still stored) ---`.
    ///
    /// It names every kind of change the event made, so nothing leaves the context unseen.
    pub fn banner(&self) -> String {
        let count = |reason: MoveReason, kind: MovedKind| {
            self.moved
                .iter()
                .filter(|m| m.reason == reason && m.kind == kind)
                .count() as u64
        };
        let messages = |reason: MoveReason| -> u64 {
            self.moved
                .iter()
                .filter(|m| m.reason == reason)
                .map(|m| u64::from(m.messages))
                .sum()
        };
        let attachments = self
            .moved
            .iter()
            .filter(|m| m.kind == MovedKind::Attachment)
            .count() as u64;
        let expansions = self
            .moved
            .iter()
            .filter(|m| m.kind == MovedKind::Expanded)
            .count() as u64;
        let mut parts = vec![format!("{} tokens freed", thousands(self.tokens_freed))];
        if attachments > 0 {
            parts.push(format!(
                "{} compressed to {}",
                plural(attachments, "attachment", "attachments"),
                if attachments == 1 {
                    "its summary"
                } else {
                    "their summaries"
                }
            ));
        }
        if expansions > 0 {
            parts.push(format!(
                "{} collapsed",
                plural(expansions, "expanded effort", "expanded efforts")
            ));
        }
        let level2 = messages(MoveReason::CompactedLevel2);
        if level2 > 0 {
            parts.push(format!(
                "{} moved out of the working set",
                plural(level2, "message", "messages")
            ));
        }
        let level3 = messages(MoveReason::CompactedLevel3);
        let folded = count(MoveReason::CompactedLevel3, MovedKind::RollingSummary);
        if level3 > 0 || folded > 0 {
            let what = if level3 > 0 {
                plural(level3, "message", "messages")
            } else {
                "the previous summary".to_string()
            };
            parts.push(format!("{what} replaced by a rolling summary"));
        }
        format!(
            "--- Compacted context ({}, {}): {} (still stored) ---",
            format_args!("level {}", self.level.number()),
            self.level.name(),
            parts.join(", ")
        )
    }
}

/// Why a planned compaction is not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum NotApplied {
    /// Nothing qualified for moving at this level.
    NothingToMove,
    /// The moves would leave the context exactly as large.
    FreesNothing,
    /// The moves would make the context larger (a rolling summary longer than what it
    /// replaces).
    WouldGrow {
        /// Tokens the context would grow by.
        by: u64,
    },
}

impl fmt::Display for NotApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotApplied::NothingToMove => {
                f.write_str("nothing qualifies for compaction at this level")
            }
            NotApplied::FreesNothing => f.write_str("the compaction would free no tokens"),
            NotApplied::WouldGrow { by } => write!(
                f,
                "the compaction would make the context {} tokens larger",
                thousands(*by)
            ),
        }
    }
}

/// The rule that guards every compaction: it is applied only when it moves something and the
/// context ends up strictly smaller.
///
/// # Errors
/// The reason it must not be applied.
///
/// # Examples
/// ```
/// use ccm_core::compaction::{check_applicable, NotApplied};
/// assert_eq!(check_applicable(1_000, 400, 3), Ok(()));
/// assert_eq!(check_applicable(1_000, 1_000, 3), Err(NotApplied::FreesNothing));
/// assert_eq!(check_applicable(1_000, 1_200, 3), Err(NotApplied::WouldGrow { by: 200 }));
/// assert_eq!(check_applicable(1_000, 900, 0), Err(NotApplied::NothingToMove));
/// ```
pub fn check_applicable(
    tokens_before: u64,
    tokens_after: u64,
    moved: usize,
) -> Result<(), NotApplied> {
    if moved == 0 {
        Err(NotApplied::NothingToMove)
    } else if tokens_after > tokens_before {
        Err(NotApplied::WouldGrow {
            by: tokens_after - tokens_before,
        })
    } else if tokens_after == tokens_before {
        Err(NotApplied::FreesNothing)
    } else {
        Ok(())
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// What one compaction did, as the token curve and the metrics keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The level applied (1 soft, 2 hard, 3 emergency).
    pub level: u8,
    /// Usage that triggered it, per mille of the request budget.
    pub trigger_per_mille: u64,
    /// Working tokens before.
    pub tokens_before: u64,
    /// Working tokens after.
    pub tokens_after: u64,
    /// Tokens freed.
    pub tokens_freed: u64,
    /// Items moved out of the working set (or to a smaller form).
    pub items_moved: u64,
    /// The banner shown for it.
    pub banner: String,
    /// How older messages were ranked: `lexical` (BM25) or `embeddings`.
    pub relevance: String,
}

impl CompactionRecord {
    pub(crate) fn of(event: &CompactionEvent, relevance: &str) -> CompactionRecord {
        CompactionRecord {
            level: match event.level {
                Level::None => 0,
                Level::Soft => 1,
                Level::Hard => 2,
                Level::Emergency => 3,
            },
            trigger_per_mille: event.trigger_usage.working_tokens * 1000
                / event.trigger_usage.window_tokens.max(1),
            tokens_before: event.tokens_before,
            tokens_after: event.tokens_after,
            tokens_freed: event.tokens_freed,
            items_moved: event.moved.len() as u64,
            banner: event.banner(),
            relevance: relevance.to_string(),
        }
    }
}
