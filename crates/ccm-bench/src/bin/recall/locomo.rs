//! Reading the LoCoMo conversations (the layout is described in `shared/data/locomo/README.md`):
//! two speakers, dated sessions of dialog turns, and questions naming the turns that answer
//! them. The files are read without trusting them: a malformed file is refused with its name
//! and what is wrong, a malformed evidence id is skipped and counted.

use serde_json::Value;
use std::path::Path;

/// One dialog turn.
#[derive(Debug, Clone)]
pub struct DialogTurn {
    /// `D<session>:<k>`.
    pub id: String,
    /// Who said it.
    pub speaker: String,
    /// What was said, with the caption of a shared photo appended.
    pub text: String,
}

/// One dated session of a conversation.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its number in the file.
    pub number: u32,
    /// When it took place, as written (`1:56 pm on 8 May, 2023`).
    pub date: String,
    /// Milliseconds since the Unix epoch of `date`, when it could be read.
    pub at_ms: Option<u64>,
    /// Its dialog turns, in order.
    pub turns: Vec<DialogTurn>,
}

/// A question with the dialog turns that hold its answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// The question as written.
    pub text: String,
    /// 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
    pub category: u8,
    /// The dialog turn ids of its evidence.
    pub evidence: Vec<String>,
}

/// One conversation file.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The file's name without its extension.
    pub name: String,
    /// The sessions, in order.
    pub sessions: Vec<Session>,
    /// Questions of categories 1–4 with at least one well-formed evidence id.
    pub questions: Vec<Question>,
    /// Evidence ids that were malformed and skipped.
    pub skipped_evidence: usize,
}

fn field<'a>(value: &'a Value, name: &str, file: &str) -> Result<&'a Value, String> {
    value
        .get(name)
        .ok_or_else(|| format!("{file}: the field `{name}` is missing"))
}

fn string(value: &Value, name: &str, file: &str) -> Result<String, String> {
    field(value, name, file)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{file}: the field `{name}` is not a string"))
}

/// Whether an evidence id is well formed: `D<number>:<number>`.
fn well_formed(id: &str) -> bool {
    let Some(rest) = id.strip_prefix('D') else {
        return false;
    };
    let mut parts = rest.split(':');
    let session = parts.next().unwrap_or("");
    let turn = parts.next().unwrap_or("");
    parts.next().is_none()
        && !session.is_empty()
        && !turn.is_empty()
        && session.chars().all(|c| c.is_ascii_digit())
        && turn.chars().all(|c| c.is_ascii_digit())
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_index = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Reads `1:56 pm on 8 May, 2023` as milliseconds since the Unix epoch (UTC).
pub fn parse_date(text: &str) -> Option<u64> {
    let lower = text.to_lowercase();
    let (time, date) = lower.split_once(" on ")?;
    let time = time.trim();
    let (clock, meridiem) = time.split_at(time.len().checked_sub(2)?);
    let (hour, minute) = clock.trim().split_once(':')?;
    let mut hour: i64 = hour.trim().parse().ok()?;
    let minute: i64 = minute.trim().parse().ok()?;
    match meridiem {
        "pm" if hour != 12 => hour += 12,
        "am" if hour == 12 => hour = 0,
        "am" | "pm" => {}
        _ => return None,
    }
    let words: Vec<&str> = date
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let [day, month, year] = words.as_slice() else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let year: i64 = year.parse().ok()?;
    let days = days_from_civil(year, month, day);
    let ms = ((days * 24 + hour) * 60 + minute) * 60_000;
    u64::try_from(ms).ok()
}

/// Reads one conversation file.
pub fn read(path: &Path) -> Result<Conversation, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{file}: not valid JSON ({e})"))?;
    let mut sessions = Vec::new();
    let object = value
        .as_object()
        .ok_or_else(|| format!("{file}: not a JSON object"))?;
    let mut numbers: Vec<u32> = object
        .keys()
        .filter_map(|k| k.strip_prefix("session_")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    for number in numbers {
        let Some(Value::Array(turns)) = object.get(&format!("session_{number}")) else {
            continue;
        };
        if turns.is_empty() {
            continue;
        }
        let date = object
            .get(&format!("session_{number}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut dialog = Vec::with_capacity(turns.len());
        for turn in turns {
            let mut text = string(turn, "text", &file)?;
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            dialog.push(DialogTurn {
                id: string(turn, "dia_id", &file)?,
                speaker: string(turn, "speaker", &file)?,
                text,
            });
        }
        sessions.push(Session {
            number,
            at_ms: parse_date(&date),
            date,
            turns: dialog,
        });
    }
    if sessions.is_empty() {
        return Err(format!("{file}: no session with dialog turns"));
    }
    let mut questions = Vec::new();
    let mut skipped_evidence = 0;
    let qa = field(&value, "qa", &file)?
        .as_array()
        .ok_or_else(|| format!("{file}: `qa` is not a list"))?;
    for item in qa {
        let category = item.get("category").and_then(Value::as_u64).unwrap_or(0);
        if !(1..=4).contains(&category) {
            continue;
        }
        let mut evidence = Vec::new();
        for id in item
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match id.as_str() {
                Some(id) if well_formed(id.trim()) => evidence.push(id.trim().to_string()),
                _ => skipped_evidence += 1,
            }
        }
        if evidence.is_empty() {
            continue;
        }
        questions.push(Question {
            text: string(item, "question", &file)?,
            category: category as u8,
            evidence,
        });
    }
    Ok(Conversation {
        name: path
            .file_stem()
            .map_or_else(|| file.clone(), |s| s.to_string_lossy().into_owned()),
        sessions,
        questions,
        skipped_evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_utc_times() {
        // 2023-05-08 13:56 UTC
        assert_eq!(
            parse_date("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160_000)
        );
        assert_eq!(
            parse_date("12:09 am on 13 September, 2023"),
            Some(1_694_563_740_000)
        );
        assert_eq!(parse_date("noon on the 8th"), None);
    }

    #[test]
    fn evidence_ids_are_checked() {
        assert!(well_formed("D1:3"));
        assert!(well_formed("D12:140"));
        assert!(!well_formed("D:11:26"));
        assert!(!well_formed("D1"));
        assert!(!well_formed("1:3"));
    }
}
