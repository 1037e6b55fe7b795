//! Import (and export) of a session in the original CCM file layout: `manifest.yaml`, `raw.jsonl` (the
//! ambient log), `efforts/<id>.jsonl` (one raw log per effort) and, when present,
//! `session_state.json` (the turn counter). The files are given as text; the result is a
//! [`SessionDocument`] with every token recounted by the caller's counter, ready for
//! [`Session::from_document`](ccm_core::Session::from_document).
//!
//! The original layout stores less than a session document, so the converter derives the rest
//! and says so in [`ImportedCcm::notes`]:
//!
//! - **Order and turns.** Log lines carry no sequence numbers. When every line has a
//!   timestamp (`timestamp` or `ts`, ISO 8601 or epoch milliseconds), the messages of all logs
//!   are merged by time (ties keep file order: ambient first, then efforts in manifest order);
//!   otherwise the ambient log comes first and each effort's log follows in manifest order. A
//!   user message starts a turn and the assistant messages after it belong to that turn.
//! - **Efforts.** An effort is opened in the turn of its first message and concluded in the
//!   turn of its last, or in the later turn its `updated` time falls in; its `last_referenced_turn` is the manifest's when it has one. Conclusion
//!   order follows the manifest's `updated` time, else manifest order. A concluded effort
//!   without a summary gets the extractive summary (never an empty one).
//! - **The active effort** is the open one marked `active: true`, else the most recently
//!   opened one (noted when several are open and none is marked, since routing needs one).
//! - **Not imported:** `expanded.json` (expansions are transient by design) and lines whose
//!   role is neither `user` nor `assistant` (CCM logs hold only those; each skip is noted).
//!
//! A file that cannot be parsed, an effort log without a manifest entry, or a manifest that
//! names one effort twice stops the import with an [`ImportError`] that names the file and
//! line: nothing is half-imported.
//!
//! The manifest is parsed with `yaml-rust2`, a maintained YAML 1.2 parser: the original wrote
//! it with PyYAML, whose output includes quoted, folded and multi-line scalars that a
//! hand-written subset parser would get wrong on real files.
//!
//! The other direction, [`export`], writes a session in the same layout; an import of the
//! export gives back the same conversation.
#![deny(missing_docs)]

mod export;
pub use export::{export, CcmExport};

use ccm_core::config::Config;
use ccm_core::metrics::DecayStats;
use ccm_core::model::{Effort, EffortStatus, LogState, Message, Role, Summary, SummarySource};
use ccm_core::prompt;
use ccm_core::snapshot::{SessionDocument, FORMAT, VERSION};
use ccm_core::text;
use ccm_core::tokens::TokenCounter;
use std::collections::{BTreeMap, BTreeSet};
use yaml_rust2::{Yaml, YamlLoader};

/// The files of one session, as text.
#[derive(Debug, Clone, Default)]
pub struct CcmFiles<'a> {
    /// `manifest.yaml`.
    pub manifest_yaml: &'a str,
    /// `raw.jsonl`; empty when the session has no ambient messages.
    pub raw_jsonl: &'a str,
    /// `efforts/<id>.jsonl` as `(id, text)`: the file name without `.jsonl`, and its content.
    pub effort_logs: Vec<(&'a str, &'a str)>,
    /// `session_state.json`, when the session has one (its `turn_count` is kept).
    pub session_state_json: Option<&'a str>,
}

/// A converted session and what the converter had to assume or skip.
#[derive(Debug, Clone)]
pub struct ImportedCcm {
    /// The session document.
    pub document: SessionDocument,
    /// One sentence per assumption or skipped line, written for the person importing.
    pub notes: Vec<String>,
}

/// Why the files could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// `manifest.yaml` is not YAML of the expected shape.
    #[error("manifest.yaml: {0}")]
    Manifest(String),
    /// A line of a log file is not a message.
    #[error("{file} line {line}: {reason}")]
    Line {
        /// The file, e.g. `efforts/auth-bug.jsonl`.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A file that does not fit the manifest.
    #[error("{0}")]
    Layout(String),
}

/// Which log a message came from: `None` for the ambient log, else the effort's index.
type Source = Option<usize>;

struct Line {
    source: Source,
    role: Role,
    content: String,
    at_ms: Option<u64>,
}

struct ManifestEffort {
    id: String,
    name: String,
    description: Option<String>,
    status: EffortStatus,
    active: bool,
    summary: Option<String>,
    updated_ms: Option<u64>,
    last_referenced_turn: Option<u64>,
}

fn manifest_error(message: impl Into<String>) -> ImportError {
    ImportError::Manifest(message.into())
}

/// A scalar as text: YAML may read `id: 2024` as a number, which is still a fine id.
fn scalar_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_manifest(text: &str, notes: &mut Vec<String>) -> Result<Vec<ManifestEffort>, ImportError> {
    let documents = YamlLoader::load_from_str(text).map_err(|e| manifest_error(e.to_string()))?;
    let Some(root) = documents.into_iter().next() else {
        return Ok(Vec::new());
    };
    let efforts = match &root["efforts"] {
        Yaml::Array(list) => list.clone(),
        Yaml::Null | Yaml::BadValue if root.as_hash().is_some() || root.is_null() => Vec::new(),
        _ => return Err(manifest_error("expected a mapping with an `efforts` list")),
    };
    let mut parsed = Vec::with_capacity(efforts.len());
    let mut seen = BTreeSet::new();
    for (i, entry) in efforts.iter().enumerate() {
        let at = |field: &str| format!("effort {} ({field})", i + 1);
        if entry.as_hash().is_none() {
            return Err(manifest_error(format!("effort {} is not a mapping", i + 1)));
        }
        let given = scalar_text(&entry["id"])
            .or_else(|| scalar_text(&entry["name"]))
            .ok_or_else(|| manifest_error(format!("{} is missing", at("id"))))?;
        let id = text::slugify(&given);
        if id.is_empty() {
            return Err(manifest_error(format!(
                "{} {given:?} has no letter or digit",
                at("id")
            )));
        }
        if id != given {
            notes.push(format!(
                "effort id {given:?} became '{id}' (ids are lowercase words joined by hyphens)"
            ));
        }
        if !seen.insert(id.clone()) {
            return Err(manifest_error(format!("effort '{id}' appears twice")));
        }
        let status = match scalar_text(&entry["status"]).as_deref().map(str::trim) {
            Some("open") | Some("active") => EffortStatus::Open,
            Some("concluded") | Some("closed") | Some("done") => EffortStatus::Concluded,
            Some(other) => {
                return Err(manifest_error(format!(
                    "{} is '{other}'; expected open or concluded",
                    at("status")
                )))
            }
            None => return Err(manifest_error(format!("{} is missing", at("status")))),
        };
        let updated_ms = scalar_text(&entry["updated"]).and_then(|t| parse_time(&t));
        let last_referenced_turn = entry["last_referenced_turn"]
            .as_i64()
            .and_then(|t| u64::try_from(t).ok());
        parsed.push(ManifestEffort {
            name: scalar_text(&entry["name"]).unwrap_or_else(|| given.clone()),
            id,
            description: scalar_text(&entry["description"]).filter(|d| !d.trim().is_empty()),
            status,
            active: entry["active"].as_bool().unwrap_or(false),
            summary: scalar_text(&entry["summary"]).filter(|s| !s.trim().is_empty()),
            updated_ms,
            last_referenced_turn,
        });
    }
    Ok(parsed)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Milliseconds since the epoch of an ISO 8601 date-time (`2026-02-15T18:00:00.123456`,
/// optionally with `Z` or `±hh:mm`; no zone reads as UTC) or of a number of milliseconds.
fn parse_time(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<u64>() {
        return Some(ms);
    }
    let (date, time) = text.split_once(['T', ' '])?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: u32 = date_parts.next()?.parse().ok()?;
    let day: u32 = date_parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (clock, offset_minutes) = match time.find(['Z', 'z', '+', '-']) {
        None => (time, 0i64),
        Some(i) => {
            let zone = &time[i..];
            let minutes = if zone.eq_ignore_ascii_case("z") {
                0
            } else {
                let sign = if zone.starts_with('-') { -1 } else { 1 };
                let digits: String = zone[1..].chars().filter(char::is_ascii_digit).collect();
                let hours: i64 = digits.get(..2)?.parse().ok()?;
                let mins: i64 = digits.get(2..4).unwrap_or("0").parse().ok()?;
                sign * (hours * 60 + mins)
            };
            (&time[..i], minutes)
        }
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms = hms.splitn(3, ':');
    let hour: i64 = hms.next()?.parse().ok()?;
    let minute: i64 = hms.next()?.parse().ok()?;
    let second: i64 = hms.next().unwrap_or("0").parse().ok()?;
    let millis: i64 = format!("{:0<3}", fraction.get(..3.min(fraction.len()))?)
        .parse()
        .ok()?;
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
        - offset_minutes * 60;
    u64::try_from(seconds * 1_000 + millis).ok()
}

fn parse_log(
    file: &str,
    text: &str,
    source: Source,
    notes: &mut Vec<String>,
) -> Result<Vec<Line>, ImportError> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let error = |reason: String| ImportError::Line {
            file: file.to_string(),
            line: i + 1,
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| error(format!("not valid JSON ({e})")))?;
        let role = match value.get("role").and_then(|r| r.as_str()) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some(other) => {
                notes.push(format!("{file} line {}: a '{other}' message was skipped (CCM logs keep user and assistant messages)", i + 1));
                continue;
            }
            None => return Err(error("has no `role`".to_string())),
        };
        let content = value
            .get("content")
            .and_then(|c| c.as_str())
            .ok_or_else(|| error("has no text `content`".to_string()))?;
        let at_ms = match value.get("timestamp").or_else(|| value.get("ts")) {
            Some(serde_json::Value::String(t)) => parse_time(t),
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            _ => None,
        };
        lines.push(Line {
            source,
            role,
            content: content.to_string(),
            at_ms,
        });
    }
    Ok(lines)
}

/// Converts the files into a session document, counting every text with `counter`.
///
/// # Errors
/// [`ImportError`] naming the file (and line) that cannot be read; nothing is converted then.
///
/// # Examples
/// ```
/// use ccm_import::{convert, CcmFiles};
/// use ccm_core::{ApproximateCounter, Config, Session};
/// use std::sync::Arc;
///
/// let files = CcmFiles {
///     manifest_yaml: "efforts:\n- id: auth-bug\n  status: concluded\n  summary: Refresh token TTL raised to 24h.\n",
///     raw_jsonl: "",
///     effort_logs: vec![("auth-bug", "{\"role\": \"user\", \"content\": \"401 after an hour\"}\n{\"role\": \"assistant\", \"content\": \"Check the TTL.\"}\n")],
///     session_state_json: None,
/// };
/// let imported = convert(&files, Config::default(), &ApproximateCounter).unwrap();
/// let session = Session::from_document(imported.document, Arc::new(ApproximateCounter)).unwrap();
/// assert_eq!(session.efforts().summary_ids_in_memory(), ["auth-bug"]);
/// ```
pub fn convert(
    files: &CcmFiles<'_>,
    config: Config,
    counter: &dyn TokenCounter,
) -> Result<ImportedCcm, ImportError> {
    let mut notes = Vec::new();
    let manifest = parse_manifest(files.manifest_yaml, &mut notes)?;
    let lines = lines_in_order(files, &manifest, &mut notes)?;
    let (ambient, logs, turn) = number_messages(lines, manifest.len(), counter);
    let next_seq = (ambient.len() + logs.iter().map(Vec::len).sum::<usize>()) as u64;
    let turn = turns_with_session_state(files.session_state_json, turn, &mut notes);
    let concluded = conclusion_order(&manifest);
    // The turn each message's time falls in, to place a conclusion at the manifest's `updated`
    // time (an effort concluded in a later turn than its last message, as when the person
    // closes a background effort).
    let mut turn_starts: Vec<(u64, u64)> = ambient
        .iter()
        .chain(logs.iter().flatten())
        .map(|m| (m.at_ms, m.turn))
        .collect();
    turn_starts.sort_unstable();
    // Each pair's turn becomes the latest turn at or before its time, so one binary search per
    // concluded effort finds it.
    let mut latest = 0;
    for (_, turn) in &mut turn_starts {
        latest = latest.max(*turn);
        *turn = latest;
    }
    let mut efforts: Vec<Effort> = Vec::with_capacity(manifest.len());
    let mut search = ccm_core::search::SearchIndex::default();
    for (i, (entry, messages)) in manifest.iter().zip(logs).enumerate() {
        let concluded = concluded.get(&i).copied();
        let conclusion_turn = entry.updated_ms.and_then(|updated| {
            let up_to = turn_starts.partition_point(|(at_ms, _)| *at_ms <= updated);
            up_to.checked_sub(1).map(|last| turn_starts[last].1)
        });
        let effort = imported_effort(
            entry,
            messages,
            (concluded, conclusion_turn),
            turn,
            counter,
            &search,
            &mut notes,
        );
        efforts.push(effort);
        let index = efforts.len() - 1;
        if efforts[index].summary.is_some() {
            search.insert(index, &efforts[index]);
        }
    }
    let open: Vec<String> = efforts
        .iter()
        .filter(|e| e.status == EffortStatus::Open)
        .map(|e| e.id.clone())
        .collect();
    let active = active_effort(&manifest, &open, &mut notes);
    // Built through serde so that fields the document gains later (with their defaults)
    // need no change here: this converter only knows what the original layout can fill.
    let document = serde_json::json!({
        "format": FORMAT,
        "version": VERSION,
        "counted_with": counter.name(),
        "config": config,
        "turn": turn,
        "next_seq": next_seq,
        "next_concluded_seq": concluded.len() as u64,
        "active": active,
        "open": open,
        "efforts": efforts,
        "ambient": ambient,
        "decay": DecayStats::default(),
        "auto_collapsed_at": {},
        "history": [],
    });
    let document: SessionDocument = serde_json::from_value(document).map_err(|e| {
        ImportError::Layout(format!(
            "the converted session is not a valid document: {e}"
        ))
    })?;
    Ok(ImportedCcm { document, notes })
}

/// Every log line, ambient and effort logs together, in the order the session had them: by
/// time where every line has one (a stable sort keeps file order for equal times), else the
/// ambient log first and the effort logs after it in manifest order.
fn lines_in_order(
    files: &CcmFiles<'_>,
    manifest: &[ManifestEffort],
    notes: &mut Vec<String>,
) -> Result<Vec<Line>, ImportError> {
    let index: BTreeMap<&str, usize> = manifest
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut lines = parse_log("raw.jsonl", files.raw_jsonl, None, notes)?;
    let mut logged = BTreeSet::new();
    // Effort logs in manifest order, so that file order (the tie-breaker) is deterministic
    // whatever order the caller listed the files in.
    let mut effort_files: Vec<(usize, &str, &str)> = Vec::new();
    for (name, text) in &files.effort_logs {
        let id = text::slugify(name);
        let Some(&i) = index.get(id.as_str()) else {
            return Err(ImportError::Layout(format!(
                "efforts/{name}.jsonl has no entry in manifest.yaml; add the effort to the manifest or leave the file out"
            )));
        };
        if !logged.insert(i) {
            return Err(ImportError::Layout(format!(
                "two log files belong to effort '{id}'"
            )));
        }
        effort_files.push((i, name, text));
    }
    effort_files.sort_by_key(|(i, _, _)| *i);
    for (i, name, text) in effort_files {
        let file = format!("efforts/{name}.jsonl");
        lines.extend(parse_log(&file, text, Some(i), notes)?);
    }
    if !lines.is_empty() {
        if lines.iter().all(|l| l.at_ms.is_some()) {
            lines.sort_by_key(|l| l.at_ms);
        } else {
            notes.push("some messages have no timestamp, so the ambient log is placed before the effort logs instead of merging them by time".to_string());
        }
    }
    Ok(lines)
}

/// The lines as messages, numbered in order: a user message starts a turn and the assistant
/// messages after it belong to that turn. Returns the ambient log, each effort's log (by
/// manifest index) and the last turn.
fn number_messages(
    lines: Vec<Line>,
    efforts: usize,
    counter: &dyn TokenCounter,
) -> (Vec<Message>, Vec<Vec<Message>>, u64) {
    let mut turn = 0u64;
    let mut ambient = Vec::new();
    let mut logs: Vec<Vec<Message>> = vec![Vec::new(); efforts];
    let mut last_at = 0u64;
    for (seq, line) in lines.into_iter().enumerate() {
        if line.role == Role::User || turn == 0 {
            turn += 1;
        }
        let at_ms = line.at_ms.unwrap_or(last_at);
        last_at = at_ms;
        let message = Message {
            seq: seq as u64,
            turn,
            role: line.role,
            tokens: counter.count(&line.content),
            content: line.content,
            at_ms,
        };
        match line.source {
            None => ambient.push(message),
            Some(i) => logs[i].push(message),
        }
    }
    (ambient, logs, turn)
}

/// The session's turn: the logs' count, or `session_state.json`'s `turn_count` where it is
/// higher (turns without messages leave no line).
fn turns_with_session_state(
    session_state_json: Option<&str>,
    logged_turns: u64,
    notes: &mut Vec<String>,
) -> u64 {
    let state_turns = session_state_json
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.get("turn_count")?.as_u64());
    match state_turns {
        Some(state_turns) => {
            if state_turns < logged_turns {
                notes.push(format!("session_state.json counts {state_turns} turns but the logs hold {logged_turns}; the logs' count is kept"));
            }
            logged_turns.max(state_turns)
        }
        None => logged_turns,
    }
}

/// Each concluded effort's conclusion sequence number, by manifest index: in the order of the
/// manifest's `updated` time where every concluded effort has one, else in manifest order.
fn conclusion_order(manifest: &[ManifestEffort]) -> BTreeMap<usize, u64> {
    let mut concluded: Vec<usize> = (0..manifest.len())
        .filter(|&i| manifest[i].status == EffortStatus::Concluded)
        .collect();
    if concluded.iter().all(|&i| manifest[i].updated_ms.is_some()) {
        concluded.sort_by_key(|&i| (manifest[i].updated_ms, i));
    }
    concluded
        .iter()
        .enumerate()
        .map(|(n, &i)| (i, n as u64))
        .collect()
}

/// The effort of a manifest entry with its log: opened in the turn of its first message,
/// concluded in the turn of its last, with the manifest's summary or else the extractive
/// one. `search` indexes the efforts imported before it.
fn imported_effort(
    entry: &ManifestEffort,
    messages: Vec<Message>,
    (concluded_seq, conclusion_turn): (Option<u64>, Option<u64>),
    turn: u64,
    counter: &dyn TokenCounter,
    search: &ccm_core::search::SearchIndex,
    notes: &mut Vec<String>,
) -> Effort {
    let opened_turn = messages.first().map_or(0, |m| m.turn);
    let last_message_turn = messages.last().map_or(opened_turn, |m| m.turn);
    // Concluded in the turn of its `updated` time when that is later than its last message.
    let last_turn = conclusion_turn.map_or(last_message_turn, |t| t.max(last_message_turn));
    let header = prompt::effort_header(&entry.id, &entry.name, entry.description.as_deref());
    let header_tokens = counter.count(&header);
    let raw_tokens =
        u64::from(header_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
    let summary = match entry.status {
        EffortStatus::Open => None,
        EffortStatus::Concluded => Some(imported_summary(entry, &messages, counter, search, notes)),
    };
    let last_referenced_turn = match entry.last_referenced_turn {
        Some(t) if t <= turn => t,
        Some(t) => {
            notes.push(format!("effort '{}' was last referenced in turn {t}, after the session's turn {turn}; its last message's turn is used", entry.id));
            last_turn
        }
        None => last_turn,
    };
    Effort {
        id: entry.id.clone(),
        name: entry.name.clone(),
        description: entry.description.clone(),
        status: entry.status,
        opened_turn,
        concluded_turn: summary.as_ref().map(|_| last_turn),
        concluded_seq,
        summary: summary.map(std::sync::Arc::new),
        messages,
        header,
        header_tokens,
        raw_tokens,
        last_referenced_turn,
        evicted: false,
        evicted_over_budget: false,
        log: LogState::Loaded,
    }
}

/// A concluded effort's summary: the manifest's, or the extractive summary of its log.
fn imported_summary(
    entry: &ManifestEffort,
    messages: &[Message],
    counter: &dyn TokenCounter,
    search: &ccm_core::search::SearchIndex,
    notes: &mut Vec<String>,
) -> Summary {
    let (summary_text, source) = match &entry.summary {
        Some(given) => (given.trim().to_string(), SummarySource::Provided),
        None => {
            notes.push(format!(
                "concluded effort '{}' had no summary; the extractive summary of its log was used",
                entry.id
            ));
            let mut texts: Vec<&str> = entry.description.iter().map(String::as_str).collect();
            texts.extend(messages.iter().map(|m| m.content.as_str()));
            (
                text::extractive_summary(&entry.name, &texts),
                SummarySource::Extractive,
            )
        }
    };
    let rendered = prompt::summary_line(&entry.id, &summary_text);
    Summary {
        tokens: counter.count(&rendered),
        keywords: text::extract_keywords(&summary_text),
        // Chosen against the efforts imported before it, as a live session chooses them
        // against the efforts concluded before.
        terms: search.distinctive_log_terms(messages.iter().map(|m| m.content.as_str())),
        text: summary_text,
        source,
        rendered,
    }
}

/// The active effort: the open one marked `active: true`, else the only open one; of several
/// marked, the last.
fn active_effort(
    manifest: &[ManifestEffort],
    open: &[String],
    notes: &mut Vec<String>,
) -> Option<String> {
    let marked: Vec<&ManifestEffort> = manifest
        .iter()
        .filter(|e| e.active && e.status == EffortStatus::Open)
        .collect();
    match (marked.as_slice(), open) {
        ([one], _) => Some(one.id.clone()),
        ([], [only]) => Some(only.clone()),
        ([], []) => None,
        // Routing needs an active effort while any is open (slice 2); the last opened is the
        // one the person most likely worked on last.
        ([], several) => {
            let last = several.last().cloned();
            notes.push(format!(
                "{} open efforts and none is marked active; '{}', the most recently opened, is the active one",
                several.len(),
                last.as_deref().unwrap_or_default()
            ));
            last
        }
        (several, _) => {
            notes.push(format!(
                "{} open efforts are marked active; the last of them is the active one",
                several.len()
            ));
            several.last().map(|e| e.id.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_core::tokens::ApproximateCounter;
    use ccm_core::Session;
    use std::sync::Arc;

    /// A manifest as PyYAML writes it (`default_flow_style=False`): sorted keys, quoted
    /// timestamps, a long summary folded over two lines, `null` summaries of open efforts.
    const MANIFEST: &str = "\
efforts:
- active: false
  created: '2026-02-15T17:00:00.000001'
  id: auth-bug
  raw_file: efforts/auth-bug.jsonl
  status: concluded
  summary: 'Fixed 401 errors after one hour: the refresh token TTL was 3600 seconds
    in config/auth.yaml; raised to 86400.'
  updated: '2026-02-15T17:10:00'
- active: true
  created: '2026-02-15T17:20:00'
  id: guild-feature
  raw_file: efforts/guild-feature.jsonl
  status: open
  summary: null
  updated: '2026-02-15T17:20:00'
";

    fn line(role: &str, content: &str, minute: u32) -> String {
        format!("{{\"role\": \"{role}\", \"content\": \"{content}\", \"timestamp\": \"2026-02-15T17:{minute:02}:00\"}}\n")
    }

    fn sample() -> (String, String, String) {
        let raw = line("user", "hi there", 0)
            + &line("assistant", "hello", 0)
            + &line("user", "how is the weather", 15)
            + &line("assistant", "sunny", 15);
        let auth = line("user", "users get 401 after an hour", 1)
            + &line("assistant", "check the refresh token TTL", 1)
            + &line("user", "raised it, done", 9)
            + &line("assistant", "concluded", 9);
        let guild =
            line("user", "let's build the guild feature", 20) + &line("assistant", "started", 20);
        (raw, auth, guild)
    }

    #[test]
    fn converts_the_original_layout_into_a_session_that_opens() {
        let (raw, auth, guild) = sample();
        let files = CcmFiles {
            manifest_yaml: MANIFEST,
            raw_jsonl: &raw,
            // Listed out of manifest order on purpose: the converter orders by the manifest.
            effort_logs: vec![("guild-feature", &guild), ("auth-bug", &auth)],
            session_state_json: Some(r#"{"turn_count": 5, "updated": "2026-02-15T17:21:00"}"#),
        };
        let imported = convert(&files, Config::default(), &ApproximateCounter).unwrap();
        assert!(imported.notes.is_empty(), "{:?}", imported.notes);
        let doc = &imported.document;
        assert_eq!(doc.turn, 5);
        assert_eq!(doc.next_seq, 10);
        assert_eq!(doc.active.as_deref(), Some("guild-feature"));
        assert_eq!(doc.open, ["guild-feature"]);
        // Merged by time: ambient turn 1, auth-bug turns 2-3, ambient turn 4, guild turn 5.
        let turns =
            |messages: &[Message]| messages.iter().map(|m| (m.seq, m.turn)).collect::<Vec<_>>();
        assert_eq!(turns(&doc.ambient), [(0, 1), (1, 1), (6, 4), (7, 4)]);
        assert_eq!(
            turns(&doc.efforts[0].messages),
            [(2, 2), (3, 2), (4, 3), (5, 3)]
        );
        let auth = &doc.efforts[0];
        assert_eq!(
            (auth.opened_turn, auth.concluded_turn, auth.concluded_seq),
            (2, Some(3), Some(0))
        );
        // PyYAML's folded line joins with one space.
        assert_eq!(
            auth.summary.as_ref().unwrap().text,
            "Fixed 401 errors after one hour: the refresh token TTL was 3600 seconds in config/auth.yaml; raised to 86400."
        );
        // Every count is the counter's: header, messages, summary line.
        let counter = ApproximateCounter;
        assert_eq!(
            auth.messages[0].tokens,
            counter.count("users get 401 after an hour")
        );
        assert_eq!(
            auth.raw_tokens,
            u64::from(auth.header_tokens)
                + auth
                    .messages
                    .iter()
                    .map(|m| u64::from(m.tokens))
                    .sum::<u64>()
        );
        assert_eq!(
            auth.messages[0].at_ms,
            parse_time("2026-02-15T17:01:00Z").unwrap()
        );

        let session =
            Session::from_document(imported.document, Arc::new(ApproximateCounter)).unwrap();
        assert_eq!(session.efforts().active_id(), Some("guild-feature"));
        assert_eq!(session.efforts().summary_ids_in_memory(), ["auth-bug"]);
        let plan = session.build_plan();
        assert!(plan.included.iter().any(|i| i.id == "summary:auth-bug"));
        assert!(plan.included.iter().any(|i| i.id == "effort:guild-feature"));
    }

    #[test]
    fn several_open_efforts_and_none_marked_active_make_the_last_opened_active() {
        let (raw, auth, guild) = sample();
        let manifest = MANIFEST
            .replace("status: concluded", "status: open")
            .replace("active: true", "active: false");
        let files = CcmFiles {
            manifest_yaml: &manifest,
            raw_jsonl: &raw,
            effort_logs: vec![("guild-feature", &guild), ("auth-bug", &auth)],
            session_state_json: None,
        };
        let imported = convert(&files, Config::default(), &ApproximateCounter).unwrap();
        assert_eq!(imported.document.open, ["auth-bug", "guild-feature"]);
        assert_eq!(imported.document.active.as_deref(), Some("guild-feature"));
        assert!(
            imported
                .notes
                .iter()
                .any(|n| n.contains("2 open efforts and none is marked active")),
            "{:?}",
            imported.notes
        );
        let session =
            Session::from_document(imported.document, Arc::new(ApproximateCounter)).unwrap();
        assert_eq!(session.efforts().active_id(), Some("guild-feature"));
        assert!(session.repairs_on_open().is_empty());
    }

    #[test]
    fn without_timestamps_the_ambient_log_comes_first_and_a_missing_summary_is_extracted() {
        let manifest = "efforts:\n  - id: Old Work\n    status: concluded\n";
        let files = CcmFiles {
            manifest_yaml: manifest,
            raw_jsonl: "{\"role\":\"user\",\"content\":\"hello\"}\n{\"role\":\"assistant\",\"content\":\"hi\"}\n",
            effort_logs: vec![("old-work", "{\"role\":\"user\",\"content\":\"migrate the billing tables\"}\n{\"role\":\"system\",\"content\":\"x\"}\n{\"role\":\"assistant\",\"content\":\"migrated\"}\n")],
            session_state_json: None,
        };
        let imported = convert(&files, Config::default(), &ApproximateCounter).unwrap();
        let doc = &imported.document;
        assert_eq!(
            doc.ambient.iter().map(|m| m.seq).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(doc.efforts[0].id, "old-work");
        assert_eq!(
            doc.efforts[0]
                .messages
                .iter()
                .map(|m| (m.seq, m.turn))
                .collect::<Vec<_>>(),
            [(2, 2), (3, 2)]
        );
        assert_eq!(
            doc.efforts[0].summary.as_ref().unwrap().source,
            SummarySource::Extractive
        );
        let notes = imported.notes.join("\n");
        assert!(notes.contains("\"Old Work\" became 'old-work'"), "{notes}");
        assert!(
            notes.contains("efforts/old-work.jsonl line 2: a 'system' message was skipped"),
            "{notes}"
        );
        assert!(notes.contains("no timestamp"), "{notes}");
        assert!(notes.contains("had no summary"), "{notes}");
        Session::from_document(imported.document, Arc::new(ApproximateCounter)).unwrap();
    }

    #[test]
    fn bad_files_are_refused_with_the_file_and_line() {
        let convert_with = |manifest: &str, logs: Vec<(&str, &str)>| {
            convert(
                &CcmFiles {
                    manifest_yaml: manifest,
                    raw_jsonl: "",
                    effort_logs: logs,
                    session_state_json: None,
                },
                Config::default(),
                &ApproximateCounter,
            )
            .map(|_| ())
            .unwrap_err()
            .to_string()
        };
        let manifest = "efforts:\n- id: a\n  status: open\n";
        assert_eq!(
            convert_with(
                manifest,
                vec![("a", "{\"role\":\"user\",\"content\":\"ok\"}\nnot json\n")]
            ),
            "efforts/a.jsonl line 2: not valid JSON (expected ident at line 1 column 2)"
        );
        assert_eq!(
            convert_with(manifest, vec![("b", "")]),
            "efforts/b.jsonl has no entry in manifest.yaml; add the effort to the manifest or leave the file out"
        );
        assert_eq!(
            convert_with("efforts:\n- id: a\n  status: paused\n", vec![]),
            "manifest.yaml: effort 1 (status) is 'paused'; expected open or concluded"
        );
        assert_eq!(
            convert_with(
                "efforts:\n- id: a\n  status: open\n- id: A\n  status: open\n",
                vec![]
            ),
            "manifest.yaml: effort 'a' appears twice"
        );
        assert!(convert_with("efforts: [unclosed", vec![]).starts_with("manifest.yaml: "));
    }

    #[test]
    fn iso_times_with_zones_and_fractions() {
        assert_eq!(parse_time("1970-01-01T00:00:01.5"), Some(1_500));
        assert_eq!(parse_time("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            parse_time("2026-02-15T18:00:00.123456Z"),
            Some(1_771_178_400_123)
        );
        assert_eq!(parse_time("1771178400123"), Some(1_771_178_400_123));
        assert_eq!(parse_time("yesterday"), None);
    }
}
