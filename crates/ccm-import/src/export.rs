//! Export of a session into the original CCM file layout, the other direction of
//! [`convert`](crate::convert): `manifest.yaml`, `raw.jsonl`, `efforts/<id>.jsonl` and
//! `session_state.json`, as the original writes them (the manifest's keys sorted, as PyYAML
//! writes them; one JSON object per log line with `role`, `content` and `timestamp`).
//!
//! What the layout cannot hold is left out, and an import of the export gives back the same
//! conversation: every message with its role, text, log and order, each effort's name,
//! description, status, summary and last reference, the active effort and the turn count.
//! Left out: token counts (recounted on import), pins, compaction state, attachments,
//! expansions (transient by design), metrics and the branch.
//!
//! **Order.** The original's logs carry no sequence numbers; an import orders the messages of
//! all logs by their timestamps. So every exported timestamp is strictly later than the one of
//! the message before it in the session: a message's own time when the times already rise, else
//! one millisecond after the previous message (sessions driven without a clock store 0).

use ccm_core::model::{EffortStatus, Message};
use ccm_core::snapshot::SessionDocument;
use std::collections::BTreeMap;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter};

/// A session in the original file layout, as texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcmExport {
    /// `manifest.yaml`.
    pub manifest_yaml: String,
    /// `raw.jsonl`, the ambient log (empty when there is none).
    pub raw_jsonl: String,
    /// `efforts/<id>.jsonl` as `(id, text)`, in the manifest's order.
    pub effort_logs: Vec<(String, String)>,
    /// `session_state.json`.
    pub session_state_json: String,
}

impl CcmExport {
    /// The files as [`convert`](crate::convert) reads them.
    pub fn files(&self) -> crate::CcmFiles<'_> {
        crate::CcmFiles {
            manifest_yaml: &self.manifest_yaml,
            raw_jsonl: &self.raw_jsonl,
            effort_logs: self
                .effort_logs
                .iter()
                .map(|(id, text)| (id.as_str(), text.as_str()))
                .collect(),
            session_state_json: Some(&self.session_state_json),
        }
    }
}

/// Writes `document` in the original layout.
///
/// # Examples
/// ```
/// use ccm_core::{ApproximateCounter, Config, Session};
/// use std::sync::Arc;
///
/// let mut session = Session::with_counter(Config::default(), Arc::new(ApproximateCounter)).unwrap();
/// session.begin_turn("Let's work on the auth bug.", 0).unwrap();
/// session.execute_tool("open_effort", r#"{"name": "auth bug"}"#);
/// session.end_turn("Started.", 0).unwrap();
/// let files = ccm_import::export(&session.to_document().unwrap());
/// assert!(files.manifest_yaml.contains("id: auth-bug"));
/// let again = ccm_import::convert(&files.files(), Config::default(), &ApproximateCounter).unwrap();
/// assert_eq!(again.document.efforts[0].messages.len(), 2);
/// ```
pub fn export(document: &SessionDocument) -> CcmExport {
    let times = rising_times(document);
    let line = |message: &Message| {
        let mut text = serde_json::json!({
            "role": message.role.as_str(),
            "content": message.content,
            "timestamp": iso_time(times[&message.seq]),
        })
        .to_string();
        text.push('\n');
        text
    };
    // The time of each turn, for the manifest's `updated` of an effort concluded in it.
    let mut turn_times: BTreeMap<u64, u64> = BTreeMap::new();
    for message in document
        .ambient
        .iter()
        .chain(document.efforts.iter().flat_map(|e| &e.messages))
    {
        let time = times[&message.seq];
        turn_times
            .entry(message.turn)
            .and_modify(|t| *t = (*t).max(time))
            .or_insert(time);
    }
    let latest = times.values().copied().max().unwrap_or(0);
    let mut entries = Vec::with_capacity(document.efforts.len());
    let mut effort_logs = Vec::with_capacity(document.efforts.len());
    for effort in &document.efforts {
        let first = effort.messages.first().map_or(latest, |m| times[&m.seq]);
        let updated = match (effort.status, effort.concluded_turn) {
            (EffortStatus::Concluded, Some(turn)) => turn_times.get(&turn).copied(),
            _ => None,
        }
        .or_else(|| effort.messages.last().map(|m| times[&m.seq]))
        .unwrap_or(first);
        let mut entry = Hash::new();
        let mut put = |key: &str, value: Yaml| {
            entry.insert(Yaml::String(key.to_string()), value);
        };
        put(
            "active",
            Yaml::Boolean(document.active.as_deref() == Some(effort.id.as_str())),
        );
        put("created", Yaml::String(iso_time(first)));
        if let Some(description) = &effort.description {
            put("description", Yaml::String(description.clone()));
        }
        put("id", Yaml::String(effort.id.clone()));
        put(
            "last_referenced_turn",
            Yaml::Integer(i64::try_from(effort.last_referenced_turn).unwrap_or(i64::MAX)),
        );
        put("name", Yaml::String(effort.name.clone()));
        put(
            "raw_file",
            Yaml::String(format!("efforts/{}.jsonl", effort.id)),
        );
        put(
            "status",
            Yaml::String(
                match effort.status {
                    EffortStatus::Open => "open",
                    EffortStatus::Concluded => "concluded",
                }
                .to_string(),
            ),
        );
        put(
            "summary",
            effort
                .summary
                .as_ref()
                .map_or(Yaml::Null, |s| Yaml::String(s.text.clone())),
        );
        put("updated", Yaml::String(iso_time(updated)));
        entries.push(Yaml::Hash(entry));
        effort_logs.push((
            effort.id.clone(),
            effort.messages.iter().map(line).collect::<String>(),
        ));
    }
    let mut root = Hash::new();
    root.insert(Yaml::String("efforts".to_string()), Yaml::Array(entries));
    let mut manifest_yaml = String::new();
    YamlEmitter::new(&mut manifest_yaml)
        .dump(&Yaml::Hash(root))
        .expect("writing YAML into a String cannot fail");
    // The emitter starts with a document marker and ends without a newline; PyYAML writes
    // neither the marker nor a missing final newline.
    let manifest_yaml = format!(
        "{}\n",
        manifest_yaml
            .strip_prefix("---\n")
            .unwrap_or(&manifest_yaml)
    );
    CcmExport {
        manifest_yaml,
        raw_jsonl: document.ambient.iter().map(line).collect(),
        effort_logs,
        session_state_json: serde_json::json!({
            "turn_count": document.turn,
            "updated": iso_time(latest),
        })
        .to_string(),
    }
}

/// Each message's exported time by sequence number: its own, or just after the previous
/// message's when the stored times do not rise (see the module documentation).
fn rising_times(document: &SessionDocument) -> BTreeMap<u64, u64> {
    let mut messages: Vec<&Message> = document
        .ambient
        .iter()
        .chain(document.efforts.iter().flat_map(|e| &e.messages))
        .collect();
    messages.sort_by_key(|m| m.seq);
    let mut times = BTreeMap::new();
    let mut previous: Option<u64> = None;
    for message in messages {
        let time = match previous {
            Some(before) if message.at_ms <= before => before + 1,
            _ => message.at_ms,
        };
        times.insert(message.seq, time);
        previous = Some(time);
    }
    times
}

/// `ms` since the epoch as ISO 8601 in UTC with milliseconds (`2026-02-15T17:01:00.000Z`).
fn iso_time(ms: u64) -> String {
    let seconds = ms / 1000;
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the inverse of the import's
/// `days_from_civil`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_in_utc_and_read_back_by_the_import() {
        for ms in [
            0,
            1,
            999,
            86_399_999,
            951_782_400_000,
            1_771_174_860_123,
            4_102_444_800_000,
        ] {
            let text = iso_time(ms);
            assert_eq!(crate::parse_time(&text), Some(ms), "{text}");
        }
        assert_eq!(iso_time(1_771_174_860_000), "2026-02-15T17:01:00.000Z");
    }
}
