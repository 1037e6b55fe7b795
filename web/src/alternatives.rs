//! A conversation's alternatives: the versions of its turns that Regenerate and Edit made.
//!
//! Each alternative is stored as a branch session of its own (a fork before the redone turn,
//! whose header names the stored session it came from and the turn it was forked at), so
//! nothing is ever rewritten. This module turns the session list into conversations: a
//! family is a main line with every branch forked from it or from its branches; the session
//! list shows one row per family, and the chat shows, at each turn that has several
//! versions, which one is open and how many there are ("‹ 2 / 3 ›"). Pure and tested natively.

use ccm_browser::SessionInfo;
use std::collections::BTreeMap;

/// One stored session as a member of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its stored id.
    pub id: String,
    /// The stored session it was forked from, when that session is still listed.
    pub parent: Option<String>,
    /// The last turn it shares with its parent.
    pub fork_turn: u64,
    /// Turns it holds.
    pub turns: u64,
    /// Its creation time, which orders the versions of a turn (the original first).
    pub created_ms: f64,
    /// Its last save, which picks the version a person was last on.
    pub updated_ms: f64,
}

/// The conversations of a session list, indexed by stored id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Families {
    lines: BTreeMap<String, Line>,
}

/// One version of a turn: the session to open for it, and whether it is the open one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The session that continues this version (the most recently used one holding it).
    pub id: String,
    /// Whether the open session holds this version.
    pub current: bool,
}

impl Families {
    /// Reads the families from a session list. A branch whose parent is not a listed session
    /// (a fork named in the Branches section, whose parent is a branch name, or one whose
    /// parent was deleted) is a family of its own: it still opens, it is only not grouped.
    pub fn of(sessions: &[SessionInfo]) -> Families {
        let listed: std::collections::BTreeSet<&str> =
            sessions.iter().map(|s| s.id.as_str()).collect();
        let lines = sessions
            .iter()
            .filter(|s| s.damaged.is_none())
            .map(|s| {
                let origin = s.branch.as_ref().and_then(|b| {
                    let parent = b.parent.as_deref()?;
                    let turn = b.fork_turn?;
                    (parent != s.id && listed.contains(parent)).then(|| (parent.to_string(), turn))
                });
                let line = Line {
                    id: s.id.clone(),
                    parent: origin.as_ref().map(|(p, _)| p.clone()),
                    fork_turn: origin.map_or(0, |(_, t)| t),
                    turns: s.turn_count.max(0.0) as u64,
                    created_ms: s.created_ms,
                    updated_ms: s.updated_ms,
                };
                (s.id.clone(), line)
            })
            .collect();
        let mut families = Families { lines };
        families.break_cycles();
        families
    }

    /// Headers edited by hand could name each other as parents; the smallest id of such a
    /// circle becomes a main line, so every session has one family whichever it is read from.
    fn break_cycles(&mut self) {
        let ids: Vec<String> = self.lines.keys().cloned().collect();
        for id in ids {
            let mut at = self.lines[&id].parent.clone();
            let mut steps = 0;
            while let Some(parent) = at {
                if parent == id {
                    if let Some(line) = self.lines.get_mut(&id) {
                        line.parent = None;
                        line.fork_turn = 0;
                    }
                    break;
                }
                steps += 1;
                if steps > self.lines.len() {
                    break;
                }
                at = self.lines.get(&parent).and_then(|line| line.parent.clone());
            }
        }
    }

    /// The chain from `id` up to its family's main line, each with the last turn `id` shares
    /// with it (`u64::MAX` for `id` itself). A cycle (which a hand-edited header could make)
    /// ends the chain where it repeats.
    fn ancestry(&self, id: &str) -> Vec<(&str, u64)> {
        let mut chain = Vec::new();
        let mut shared = u64::MAX;
        let mut at = self.lines.get(id);
        while let Some(line) = at {
            if chain.iter().any(|(seen, _)| *seen == line.id) {
                break;
            }
            chain.push((line.id.as_str(), shared));
            shared = shared.min(line.fork_turn);
            at = line.parent.as_deref().and_then(|p| self.lines.get(p));
        }
        chain
    }

    /// The family's main line of `id` (itself when it is not grouped).
    pub fn root<'a>(&'a self, id: &'a str) -> &'a str {
        self.ancestry(id).last().map_or(id, |(root, _)| root)
    }

    /// The last turn two sessions share: `u64::MAX` for the same session, `None` for
    /// sessions of different families.
    pub fn shared_turns(&self, a: &str, b: &str) -> Option<u64> {
        let up_a = self.ancestry(a);
        let up_b = self.ancestry(b);
        up_a.iter().find_map(|(node, shared_a)| {
            up_b.iter()
                .find(|(other, _)| other == node)
                .map(|(_, shared_b)| (*shared_a).min(*shared_b))
        })
    }

    /// Every session of the family of `id`, `id` included.
    pub fn members(&self, id: &str) -> Vec<&Line> {
        let root = self.root(id);
        self.lines
            .values()
            .filter(|line| self.root(&line.id) == root)
            .collect()
    }

    /// The session a list shows for each family: its most recently saved member.
    pub fn shown(&self) -> Vec<&str> {
        let mut best: BTreeMap<&str, &Line> = BTreeMap::new();
        for line in self.lines.values() {
            let root = self.root(&line.id);
            let better = best
                .get(root)
                .is_none_or(|kept| line.updated_ms > kept.updated_ms);
            if better {
                best.insert(root, line);
            }
        }
        best.values().map(|line| line.id.as_str()).collect()
    }

    /// The versions of turn `turn` as seen from the open session `current`, in the order
    /// they were made; empty when the turn has only one version. Two sessions hold the same
    /// version of a turn when they share it; those that share everything before it and hold
    /// the turn are its versions.
    pub fn versions(&self, current: &str, turn: u64) -> Vec<Version> {
        if turn == 0 || !self.lines.contains_key(current) {
            return Vec::new();
        }
        let holders: Vec<&Line> = self
            .members(current)
            .into_iter()
            .filter(|line| line.turns >= turn)
            .filter(|line| {
                self.shared_turns(current, &line.id)
                    .is_some_and(|shared| shared >= turn - 1)
            })
            .collect();
        // Group the holders into versions of the turn: one group per distinct version.
        let mut groups: Vec<Vec<&Line>> = Vec::new();
        for line in holders {
            let same = groups.iter_mut().find(|group| {
                self.shared_turns(&group[0].id, &line.id)
                    .is_some_and(|shared| shared >= turn)
            });
            match same {
                Some(group) => group.push(line),
                None => groups.push(vec![line]),
            }
        }
        if groups.len() < 2 {
            return Vec::new();
        }
        let first_made = |group: &Vec<&Line>| {
            group
                .iter()
                .map(|line| line.created_ms)
                .fold(f64::INFINITY, f64::min)
        };
        groups.sort_by(|a, b| first_made(a).total_cmp(&first_made(b)));
        groups
            .iter()
            .map(|group| {
                let current_here = group.iter().any(|line| line.id == current);
                let id = if current_here {
                    current.to_string()
                } else {
                    group
                        .iter()
                        .max_by(|a, b| a.updated_ms.total_cmp(&b.updated_ms))
                        .map(|line| line.id.clone())
                        .unwrap_or_default()
                };
                Version {
                    id,
                    current: current_here,
                }
            })
            .collect()
    }
}

impl Families {
    /// The versions of every turn of `current` up to `turns` that has several, by turn. A
    /// conversation without alternatives costs one pass over the list.
    pub fn turn_versions(&self, current: &str, turns: u64) -> BTreeMap<u64, Vec<Version>> {
        let members = self.members(current);
        if members.len() < 2 {
            return BTreeMap::new();
        }
        // No turn at or before the earliest fork can have a second version.
        let first = members
            .iter()
            .filter(|line| line.parent.is_some())
            .map(|line| line.fork_turn + 1)
            .min()
            .unwrap_or(1);
        (first..=turns)
            .map(|turn| (turn, self.versions(current, turn)))
            .filter(|(_, versions)| !versions.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_core::branch::BranchInfo;

    fn session(
        id: &str,
        turns: u64,
        made: f64,
        used: f64,
        from: Option<(&str, u64)>,
    ) -> SessionInfo {
        SessionInfo {
            id: id.to_string(),
            name: "Conversation".to_string(),
            created_ms: made,
            updated_ms: used,
            turn_count: turns as f64,
            message_count: turns as f64 * 2.0,
            revision: 1.0,
            damaged: None,
            branch: from.map(|(parent, turn)| BranchInfo {
                name: "regenerated".to_string(),
                parent: Some(parent.to_string()),
                fork_turn: Some(turn),
            }),
        }
    }

    fn ids(versions: &[Version]) -> Vec<(&str, bool)> {
        versions
            .iter()
            .map(|v| (v.id.as_str(), v.current))
            .collect()
    }

    #[test]
    fn a_single_session_has_no_alternatives() {
        let families = Families::of(&[session("a", 5, 1.0, 2.0, None)]);
        for turn in 0..=6 {
            assert!(families.versions("a", turn).is_empty());
        }
        assert_eq!(families.shown(), ["a"]);
    }

    #[test]
    fn a_regenerated_last_turn_has_two_versions_in_the_order_they_were_made() {
        // "a" ran turns 1..=3; "b" was forked after turn 2 and redid turn 3.
        let list = [
            session("a", 3, 1.0, 5.0, None),
            session("b", 3, 6.0, 7.0, Some(("a", 2))),
        ];
        let families = Families::of(&list);
        assert_eq!(ids(&families.versions("b", 3)), [("a", false), ("b", true)]);
        assert_eq!(ids(&families.versions("a", 3)), [("a", true), ("b", false)]);
        // The turns before the fork are shared: one version each.
        assert!(families.versions("b", 2).is_empty());
        assert!(families.versions("b", 1).is_empty());
        // The list shows the conversation once, by the version last used.
        assert_eq!(families.shown(), ["b"]);
        assert_eq!(families.root("b"), "a");
    }

    #[test]
    fn versions_of_an_earlier_turn_group_the_sessions_that_continue_each_one() {
        // a: turns 1..=6. b: edited turn 3 (fork after 2), ran to 5. c: regenerated b's
        // turn 5 (fork after 4). d: edited turn 2 of a (fork after 1).
        let list = [
            session("a", 6, 1.0, 10.0, None),
            session("b", 5, 2.0, 11.0, Some(("a", 2))),
            session("c", 5, 3.0, 12.0, Some(("b", 4))),
            session("d", 2, 4.0, 9.0, Some(("a", 1))),
        ];
        let families = Families::of(&list);
        // From c: turn 3 has a's version and b's (which c continues, and was used last).
        assert_eq!(ids(&families.versions("c", 3)), [("a", false), ("c", true)]);
        // Turn 5 has b's and c's; turn 4 one version (b and c share it).
        assert_eq!(ids(&families.versions("c", 5)), [("b", false), ("c", true)]);
        assert!(families.versions("c", 4).is_empty());
        // Turn 2 has a's version (held by a, b and c, c used last) and d's.
        assert_eq!(ids(&families.versions("c", 2)), [("c", true), ("d", false)]);
        assert_eq!(ids(&families.versions("a", 2)), [("a", true), ("d", false)]);
        // From a, turn 5 is a's own: b's turn 5 follows a different turn 3.
        assert!(families.versions("a", 5).is_empty());
        assert_eq!(families.shown(), ["c"]);
        assert_eq!(families.members("d").len(), 4);
        let by_turn = families.turn_versions("c", 5);
        assert_eq!(by_turn.keys().copied().collect::<Vec<_>>(), [2, 3, 5]);
        assert_eq!(by_turn[&3], families.versions("c", 3));
    }

    #[test]
    fn branches_whose_parent_is_not_listed_stand_alone() {
        let list = [
            session("a", 3, 1.0, 2.0, None),
            // A fork from the Branches section names its parent branch, not a stored id.
            session("f", 2, 3.0, 4.0, Some(("main", 1))),
            // A fork whose parent session was deleted.
            session("g", 3, 5.0, 6.0, Some(("gone", 2))),
        ];
        let families = Families::of(&list);
        let mut shown = families.shown();
        shown.sort_unstable();
        assert_eq!(shown, ["a", "f", "g"]);
        assert!(families.versions("g", 3).is_empty());
        assert_eq!(families.shared_turns("a", "f"), None);
    }

    #[test]
    fn a_cycle_in_damaged_headers_does_not_hang() {
        let list = [
            session("a", 3, 1.0, 2.0, Some(("b", 1))),
            session("b", 3, 3.0, 4.0, Some(("a", 1))),
        ];
        let families = Families::of(&list);
        assert_eq!(families.shown().len(), 1);
        assert_eq!(families.versions("a", 2).len(), 2);
    }
}
