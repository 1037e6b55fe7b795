//! The state at the end of an earlier turn, rebuilt from what the session holds, for a fork
//! before the rewind window (`crate::branch`). Nothing a session stores is ever deleted and
//! every message carries its turn, so the conversation up to any turn is exact; what the
//! working set looked like then is only partly recorded, and is rebuilt as a fresh open would
//! find it, erring towards showing more raw log rather than a summary written later.

use super::Session;
use crate::error::SnapshotError;
use crate::metrics::{DecayStats, EventKind};
use crate::model::EffortStatus;
use crate::snapshot::{DocumentRecords, SessionDocument};
use std::collections::{BTreeMap, BTreeSet};

impl Session {
    /// This session as it was at the end of `turn`, rebuilt from its messages, effort records,
    /// attachments and metrics history; the caller has checked that the session is fully
    /// loaded, not in a turn, and at `turn` or later. The result keeps this session's branch
    /// (the caller names the fork) and is a new line: its first save is a full write.
    ///
    /// What it holds at `turn`:
    /// - the ambient and effort messages stored in turns up to `turn`, and the efforts opened
    ///   by then;
    /// - an effort concluded by then and not reopened since (as of `turn`) is concluded with
    ///   its summary; one concluded only later is open with no summary, since the summary it
    ///   may have had then was replaced by one that can mention later turns;
    /// - the active effort is the one holding the latest message if it is open, else the first
    ///   open effort (the rule `close_effort` applies), else none;
    /// - pins made by then on items that exist then; no expansions, no activation, no decay
    ///   record, no compaction and nothing recalled, as a fresh open of those records has;
    ///   references after `turn` count as made at `turn`, and summaries are evicted by the
    ///   same rule as at the end of a turn.
    pub(crate) fn rebuilt_at(&self, turn: u64) -> Result<Session, SnapshotError> {
        // The metrics history records every reopening; an effort open now whose last
        // conclusion is before `turn` was concluded at `turn` exactly when it was reopened
        // after it. Without the event (a history cut short), it is taken as open.
        let mut reopened_at: BTreeMap<&str, u64> = BTreeMap::new();
        for point in self.history.points() {
            for event in &point.events {
                if event.kind == EventKind::Reopened {
                    reopened_at.insert(event.effort.as_str(), point.turn);
                }
            }
        }

        let ambient: Vec<_> = self
            .ambient
            .messages()
            .iter()
            .filter(|m| m.turn <= turn)
            .cloned()
            .collect();
        let mut efforts = Vec::new();
        // Open efforts with the turn they were last opened or reopened in, for their order.
        let mut open: Vec<(u64, usize)> = Vec::new();
        for effort in self.efforts.all().iter().filter(|e| e.opened_turn <= turn) {
            let index = efforts.len();
            let mut rebuilt = effort.clone_without_messages();
            rebuilt.messages = effort
                .messages
                .iter()
                .filter(|m| m.turn <= turn)
                .cloned()
                .collect();
            rebuilt.raw_tokens = u64::from(rebuilt.header_tokens)
                + rebuilt
                    .messages
                    .iter()
                    .map(|m| u64::from(m.tokens))
                    .sum::<u64>();
            rebuilt.last_referenced_turn = rebuilt.last_referenced_turn.min(turn);
            rebuilt.evicted = false;
            rebuilt.evicted_over_budget = false;
            let concluded_by_then = effort.concluded_turn.is_some_and(|c| c <= turn)
                && effort.summary.is_some()
                && effort.concluded_seq.is_some();
            let reopened = reopened_at.get(effort.id.as_str()).copied();
            let concluded_then = concluded_by_then
                && match effort.status {
                    EffortStatus::Concluded => true,
                    EffortStatus::Open => reopened.is_some_and(|r| r > turn),
                };
            if !concluded_by_then {
                rebuilt.concluded_turn = None;
                rebuilt.concluded_seq = None;
                rebuilt.summary = None;
            }
            if concluded_then {
                rebuilt.status = EffortStatus::Concluded;
            } else {
                rebuilt.status = EffortStatus::Open;
                let opened = match reopened {
                    Some(r) if concluded_by_then && r <= turn => r,
                    _ => effort.opened_turn,
                };
                open.push((opened, index));
            }
            efforts.push(rebuilt);
        }
        open.sort_unstable();
        let open: Vec<usize> = open.into_iter().map(|(_, i)| i).collect();

        let next_seq =
            (ambient.len() + efforts.iter().map(|e| e.messages.len()).sum::<usize>()) as u64;
        let latest_in_effort = efforts
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.messages.last().map(|m| (m.seq, Some(i))));
        let latest = ambient
            .last()
            .map(|m| (m.seq, None))
            .into_iter()
            .chain(latest_in_effort)
            .max();
        let active = match latest {
            Some((_, Some(holder))) if open.contains(&holder) => Some(holder),
            _ => open.first().copied(),
        };

        let attachments: Vec<_> = self
            .attachments
            .by_id()
            .values()
            .filter(|a| a.message_seq < next_seq && a.log.is_some())
            .map(|a| {
                let mut a = a.clone();
                a.attachment.references.retain(|&seq| seq < next_seq);
                // Compaction's moves are not kept, so nothing stands compressed.
                a.attachment.expand();
                a
            })
            .collect();
        let next_attachment = 1 + attachments
            .iter()
            .filter_map(|a| a.attachment.id.strip_prefix("att-")?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);

        let status: BTreeMap<&str, EffortStatus> =
            efforts.iter().map(|e| (e.id.as_str(), e.status)).collect();
        let ambient_turns: BTreeSet<u64> = ambient.iter().map(|m| m.turn).collect();
        let attachment_ids: BTreeSet<&str> = attachments
            .iter()
            .map(|a| a.attachment.id.as_str())
            .collect();
        // A pin is kept when its target names an item of the rebuilt state; a target this
        // check does not know is dropped rather than kept on an item that may not exist.
        let exists = |target: &str| -> bool {
            let Some((kind, rest)) = target.split_once(':') else {
                return false;
            };
            match kind {
                "summary" => status.get(rest) == Some(&EffortStatus::Concluded),
                "effort" => {
                    let id = rest.split_once('@').map_or(rest, |(id, _)| id);
                    status.contains_key(id)
                }
                "ambient" => rest
                    .parse::<u64>()
                    .is_ok_and(|t| ambient_turns.contains(&t)),
                "attachment" => attachment_ids.contains(rest),
                "recall" => rest
                    .split('.')
                    .next()
                    .and_then(|seq| seq.parse::<u64>().ok())
                    .is_some_and(|seq| seq < next_seq),
                _ => false,
            }
        };
        let pins = self
            .pins
            .all()
            .iter()
            .filter(|pin| pin.created_turn <= turn && exists(&pin.target))
            .filter(|pin| match &pin.lease {
                Some(crate::pins::LeaseScope::Task { effort }) => {
                    status.get(effort.as_str()) == Some(&EffortStatus::Open)
                }
                _ => true,
            })
            .cloned()
            .collect();

        let mut state = self.state();
        state.turn = turn;
        state.next_seq = next_seq;
        state.next_concluded_seq = efforts
            .iter()
            .filter_map(|e| e.concluded_seq)
            .max()
            .map_or(0, |seq| seq + 1);
        state.active = active.map(|i| efforts[i].id.clone());
        state.open = open.iter().map(|&i| efforts[i].id.clone()).collect();
        state.decay = DecayStats::default();
        state.auto_collapsed_at = BTreeMap::new();
        state.pins = pins;
        state.activation = BTreeMap::new();
        state.next_attachment = next_attachment;
        state.rolling = None;
        state.compacted = BTreeMap::new();
        state.compaction_state = Default::default();
        let history = self
            .history
            .points()
            .iter()
            .filter(|p| p.turn <= turn)
            .cloned()
            .collect();
        let document = SessionDocument::assemble(
            state,
            DocumentRecords {
                efforts,
                ambient,
                history,
                attachments,
                repairs: Vec::new(),
            },
        );
        // The import checks every invariant and builds the indexes, as for any document.
        let mut rebuilt = Session::from_document(document, self.counter.clone())?;
        // The summaries that would have left working memory by the end of `turn`: exactly
        // those of a fresh eviction at that turn for efforts not referenced since.
        rebuilt.evict_summaries(turn + 1, &mut Vec::new());
        rebuilt.saves.dirty_efforts.clear();
        rebuilt.history.keep_telemetry_through(turn, &self.history);
        Ok(rebuilt)
    }
}
