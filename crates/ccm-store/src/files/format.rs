//! The byte formats of the file store, without I/O: file names, index rows, log entries, the
//! commit and the intent. Every fixed-width number is little-endian.

use crate::records::{decode, log_key, SessionRow};
use ccm_core::persistence::LogRef;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The text of the `layout` file: the version of the whole directory's layout.
pub(crate) const LAYOUT_VERSION: u32 = 1;

/// Bytes of one slot of an index row: offset, length, revision and check, as four `u64`.
pub(crate) const SLOT_BYTES: u64 = 32;

/// Bytes of one index row: two slots, so that a record can be rewritten without touching the
/// version the committed revision still points at.
pub(crate) const ROW_BYTES: u64 = 2 * SLOT_BYTES;

/// Bytes of one log entry: a sequence number and its check.
pub(crate) const ENTRY_BYTES: u64 = 16;

/// Bytes of a log file's header, which names the log the file lists.
pub(crate) const LOG_HEADER_BYTES: u64 = 256;

/// The longest file name this store makes from an id: well below the 255 bytes most file
/// systems allow, so that temporary names built on it fit too.
const MAX_NAME_BYTES: usize = 200;

/// Seeds of the checks, one per kind of fixed-width record, so that a slot's bytes never
/// pass as a log entry's and the other way round.
const SLOT_SEED: u64 = 0x6363_6d2d_736c_6f74;
const ENTRY_SEED: u64 = 0x6363_6d2d_6c6f_6773;
const LOG_NAME_SEED: u64 = 0x6363_6d2d_6e61_6d65;

/// The 64-bit FNV-1a hash of `bytes`, started from `seed`. It detects torn and overwritten
/// fixed-width records; nothing here needs a cryptographic hash.
pub(crate) fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325 ^ seed;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

// ----- names -----

/// The file name of an id: ASCII lowercase letters, digits, `-` and `_` stay as they are and
/// every other byte becomes `%XX`. Upper case is escaped too, so that two ids never share a
/// name on a case-insensitive file system, and `.` is escaped, so that no name is `..` or
/// hidden and the store's temporary names (which contain a dot) never look like an id.
///
/// # Errors
/// A sentence for an empty id or one whose name would be too long for a file system.
pub(crate) fn file_name(id: &str) -> Result<String, String> {
    if id.is_empty() {
        return Err("an empty session id cannot be stored".to_string());
    }
    let mut name = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "the id '{id}' is too long to name a file ({} bytes once escaped, {MAX_NAME_BYTES} allowed)",
            name.len()
        ));
    }
    Ok(name)
}

/// The id a file name was made from, or `None` for a name this store did not make (a
/// temporary file, another program's file).
pub(crate) fn id_of_file_name(name: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.bytes();
    while let Some(byte) = rest.next() {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => bytes.push(byte),
            b'%' => {
                let high = char::from(rest.next()?).to_digit(16)?;
                let low = char::from(rest.next()?).to_digit(16)?;
                bytes.push((high * 16 + low) as u8);
            }
            _ => return None,
        }
    }
    let id = String::from_utf8(bytes).ok()?;
    // Only the canonical spelling counts, so one id never has two directories.
    (!id.is_empty() && file_name(&id).ok()? == name).then_some(id)
}

/// The name of the file listing a log's sequence numbers. Effort ids can be long and in any
/// script, so effort logs are named by a hash of their key; the key itself is in the file's
/// header.
pub(crate) fn log_file_name(log: &LogRef) -> String {
    match log {
        LogRef::Ambient => "ambient.seq".to_string(),
        LogRef::Effort(_) => format!(
            "effort-{:016x}.seq",
            fnv1a(LOG_NAME_SEED, log_key(log).as_bytes())
        ),
    }
}

// ----- index rows -----

/// One version of a record: where its text lies in `records.dat` and the revision that wrote
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Offset of the text in `records.dat`.
    pub offset: u64,
    /// Length of the text in bytes (without the newline that follows it).
    pub len: u64,
    /// The revision whose write stored this version.
    pub revision: u64,
}

/// What a slot's 32 bytes hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// All zero: never written, or cleared.
    Empty,
    /// Bytes whose check fails: torn or overwritten.
    Damaged,
    /// A version of the record.
    Written(Slot),
}

fn slot_check(offset: u64, len: u64, revision: u64) -> u64 {
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&offset.to_le_bytes());
    bytes[8..16].copy_from_slice(&len.to_le_bytes());
    bytes[16..].copy_from_slice(&revision.to_le_bytes());
    fnv1a(SLOT_SEED, &bytes)
}

/// The 32 bytes of a slot.
pub(crate) fn encode_slot(slot: Slot) -> [u8; SLOT_BYTES as usize] {
    let mut bytes = [0u8; SLOT_BYTES as usize];
    bytes[..8].copy_from_slice(&slot.offset.to_le_bytes());
    bytes[8..16].copy_from_slice(&slot.len.to_le_bytes());
    bytes[16..24].copy_from_slice(&slot.revision.to_le_bytes());
    let check = slot_check(slot.offset, slot.len, slot.revision);
    bytes[24..].copy_from_slice(&check.to_le_bytes());
    bytes
}

fn decode_slot(bytes: &[u8]) -> SlotState {
    if bytes.iter().all(|b| *b == 0) {
        return SlotState::Empty;
    }
    let (offset, len, revision) = (read_u64(bytes, 0), read_u64(bytes, 8), read_u64(bytes, 16));
    if read_u64(bytes, 24) != slot_check(offset, len, revision) {
        return SlotState::Damaged;
    }
    SlotState::Written(Slot {
        offset,
        len,
        revision,
    })
}

/// What an index row holds for a reader of one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No record: never written, written only by a later or unfinished write, or removed.
    Absent,
    /// No readable version: the row's bytes are damaged.
    Damaged,
    /// The version the revision sees.
    Record(Slot),
}

/// The slots of a row (64 bytes; a shorter row, at the end of a file, counts as zero).
fn slots_of(row: &[u8]) -> [SlotState; 2] {
    let mut full = [0u8; ROW_BYTES as usize];
    let n = row.len().min(full.len());
    full[..n].copy_from_slice(&row[..n]);
    [
        decode_slot(&full[..SLOT_BYTES as usize]),
        decode_slot(&full[SLOT_BYTES as usize..]),
    ]
}

/// The version of a row that revision `revision` sees: the newest slot written by it or
/// before it. A slot written by a later revision belongs to a write that has not committed
/// (or that a newer reader sees); a damaged slot is the remains of an interrupted write or of
/// damage, and counts only when no slot is readable.
pub(crate) fn visible(row: &[u8], revision: u64) -> Found {
    let slots = slots_of(row);
    let newest = slots
        .iter()
        .filter_map(|slot| match slot {
            SlotState::Written(s) if s.revision <= revision => Some(*s),
            _ => None,
        })
        .max_by_key(|s| s.revision);
    match newest {
        Some(slot) => Found::Record(slot),
        None if slots.contains(&SlotState::Damaged) => Found::Damaged,
        None => Found::Absent,
    }
}

/// The bytes a writer at a revision after `committed` writes into a row to store `slot`,
/// with their offset within the row: the slot the committed revision does not see, so that
/// its version stays intact until the commit. A row without any visible version is written
/// whole, clearing the other slot, so that it never holds two versions of one revision.
pub(crate) fn row_write(row: &[u8], committed: u64, slot: Slot) -> (u64, Vec<u8>) {
    let slots = slots_of(row);
    let visible_at = (0..2).find(|&i| {
        matches!(visible(row, committed), Found::Record(s) if slots[i] == SlotState::Written(s))
    });
    match visible_at {
        Some(i) => {
            let other = 1 - i as u64;
            (other * SLOT_BYTES, encode_slot(slot).to_vec())
        }
        None => {
            let mut bytes = encode_slot(slot).to_vec();
            bytes.extend_from_slice(&[0u8; SLOT_BYTES as usize]);
            (0, bytes)
        }
    }
}

/// The slots of a row that an unfinished write on `committed` left: those written by a
/// later revision and those whose bytes are damaged. Each is given by its offset within the
/// row, to be cleared.
pub(crate) fn unfinished_slots(row: &[u8], committed: u64) -> Vec<u64> {
    slots_of(row)
        .iter()
        .enumerate()
        .filter(|(_, slot)| match slot {
            SlotState::Written(s) => s.revision > committed,
            SlotState::Damaged => true,
            SlotState::Empty => false,
        })
        .map(|(i, _)| i as u64 * SLOT_BYTES)
        .collect()
}

// ----- logs -----

/// The 16 bytes of a log entry.
pub(crate) fn encode_entry(seq: u64) -> [u8; ENTRY_BYTES as usize] {
    let mut bytes = [0u8; ENTRY_BYTES as usize];
    bytes[..8].copy_from_slice(&seq.to_le_bytes());
    bytes[8..].copy_from_slice(&fnv1a(ENTRY_SEED, &seq.to_le_bytes()).to_le_bytes());
    bytes
}

/// The sequence number of a log entry, or `None` when its bytes are damaged or torn.
pub(crate) fn decode_entry(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < ENTRY_BYTES as usize {
        return None;
    }
    let seq = read_u64(bytes, 0);
    (read_u64(bytes, 8) == fnv1a(ENTRY_SEED, &seq.to_le_bytes())).then_some(seq)
}

/// The header of a log file: a line naming the log, padded with zeros.
///
/// # Errors
/// A sentence when the log's key does not fit (an effort id of more than about 200 bytes,
/// which no id the core makes reaches).
pub(crate) fn encode_log_header(log: &LogRef) -> Result<Vec<u8>, String> {
    let key = serde_json::to_string(&log_key(log)).expect("a string serialises");
    let mut header = format!("ccm-log 1 {key}\n").into_bytes();
    if header.len() as u64 > LOG_HEADER_BYTES {
        return Err(format!(
            "the log key {key} is too long for the file store's log header"
        ));
    }
    header.resize(LOG_HEADER_BYTES as usize, 0);
    Ok(header)
}

/// The log a log file's header names.
pub(crate) fn decode_log_header(bytes: &[u8]) -> Option<LogRef> {
    let text = std::str::from_utf8(bytes).ok()?;
    let line = text.split('\n').next()?;
    let key: String = serde_json::from_str(line.strip_prefix("ccm-log 1 ")?).ok()?;
    if key == "ambient" {
        return Some(LogRef::Ambient);
    }
    key.strip_prefix("effort:")
        .map(|id| LogRef::Effort(id.to_string()))
}

// ----- the commit -----

/// The committed state of a session, as its `commit` file holds it.
#[derive(Debug, Clone)]
pub(crate) struct Commit {
    /// The committed revision: slots written by a later one are not seen.
    pub revision: u64,
    /// One past the highest committed message sequence number: log entries from here on
    /// belong to an unfinished write.
    pub seq_end: u64,
    /// Committed length of `records.dat`.
    pub data_len: u64,
    /// The session row, or why it cannot be read.
    pub row: Result<SessionRow, String>,
}

const COMMIT_MAGIC: &str = "ccm-files-commit 1";

impl Commit {
    /// The file's text: one line of numbers, then the row as JSON. The numbers come first
    /// and on their own, so that a damaged row leaves the records readable.
    pub(crate) fn encode(revision: u64, seq_end: u64, data_len: u64, row: &SessionRow) -> Vec<u8> {
        format!(
            "{COMMIT_MAGIC} revision={revision} seq_end={seq_end} data={data_len}\n{}\n",
            crate::records::encode(row)
        )
        .into_bytes()
    }

    /// The commit in `bytes`, or why it cannot be read at all (then every record counts as
    /// committed, see [`Commit::unreadable`]).
    pub(crate) fn decode(session: &str, bytes: &[u8]) -> Result<Commit, String> {
        let unreadable = || {
            format!(
                "the commit file of session '{session}' cannot be read (its first line is damaged)"
            )
        };
        let text = std::str::from_utf8(bytes).map_err(|_| unreadable())?;
        let (line, rest) = text.split_once('\n').ok_or_else(unreadable)?;
        let numbers = line.strip_prefix(COMMIT_MAGIC).ok_or_else(unreadable)?;
        let mut fields = [None; 3];
        for field in numbers.split_whitespace() {
            let (key, value) = field.split_once('=').ok_or_else(unreadable)?;
            let value: u64 = value.parse().map_err(|_| unreadable())?;
            match key {
                "revision" => fields[0] = Some(value),
                "seq_end" => fields[1] = Some(value),
                "data" => fields[2] = Some(value),
                _ => return Err(unreadable()),
            }
        }
        let [Some(revision), Some(seq_end), Some(data_len)] = fields else {
            return Err(unreadable());
        };
        let row_text = rest.strip_suffix('\n').unwrap_or(rest);
        let row = decode::<SessionRow>(
            &format!("the header record of session '{session}'"),
            Some(row_text),
        );
        Ok(Commit {
            revision,
            seq_end,
            data_len,
            row,
        })
    }

    /// The state to read a session whose commit cannot be read at all: every written
    /// version counts, the newest of each record is read.
    pub(crate) fn unreadable(problem: String) -> Commit {
        Commit {
            revision: u64::MAX,
            seq_end: u64::MAX,
            data_len: u64::MAX,
            row: Err(problem),
        }
    }
}

// ----- the intent -----

/// What a write is about to change beyond the end of `records.dat`: the index rows it
/// writes and the lengths of the log files it appends to. It is stored before the first
/// such change, so that the next writer can undo a write that never committed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Intent {
    /// The revision the write builds on.
    pub base: u64,
    /// Per index file, the rows written, as ranges.
    pub rows: Vec<(String, Vec<(u64, u64)>)>,
    /// Per log file, its length before the write.
    pub logs: Vec<(String, u64)>,
}

/// Sorted row numbers as ranges of consecutive numbers: a write's messages are one range.
pub(crate) fn ranges_of(rows: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut sorted: Vec<u64> = rows.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for row in sorted {
        match ranges.last_mut() {
            Some((_, end)) if *end == row => *end += 1,
            _ => ranges.push((row, row + 1)),
        }
    }
    ranges
}

/// The range `start..end` of a stored pair.
pub(crate) fn range((start, end): (u64, u64)) -> Range<u64> {
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_refuse_what_is_unsafe() {
        for id in ["abc", "Round-Trip", "../etc/passwd", "a.b", "日本", "x%41"] {
            let name = file_name(id).unwrap();
            assert!(name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"%-_".contains(&b)));
            assert_eq!(id_of_file_name(&name).as_deref(), Some(id));
        }
        assert!(file_name("").is_err());
        assert!(file_name(&"x".repeat(201)).is_err());
        assert_eq!(id_of_file_name("commit.tmp-1"), None);
        assert_eq!(id_of_file_name("%61"), None, "only the canonical spelling");
    }

    #[test]
    fn a_row_keeps_the_committed_version_while_the_next_is_written() {
        let first = Slot {
            offset: 0,
            len: 10,
            revision: 1,
        };
        let (at, bytes) = row_write(&[], 0, first);
        let mut row = vec![0u8; ROW_BYTES as usize];
        row[at as usize..at as usize + bytes.len()].copy_from_slice(&bytes);
        assert_eq!(visible(&row, 0), Found::Absent);
        assert_eq!(visible(&row, 1), Found::Record(first));
        let second = Slot {
            offset: 11,
            len: 5,
            revision: 2,
        };
        let (at, bytes) = row_write(&row, 1, second);
        assert_eq!(at, SLOT_BYTES);
        row[at as usize..at as usize + bytes.len()].copy_from_slice(&bytes);
        assert_eq!(visible(&row, 1), Found::Record(first));
        assert_eq!(visible(&row, 2), Found::Record(second));
        assert_eq!(unfinished_slots(&row, 1), vec![SLOT_BYTES]);
        row[3] ^= 0xff;
        assert_eq!(visible(&row, 1), Found::Damaged);
    }

    #[test]
    fn entries_and_headers_detect_damage() {
        assert_eq!(decode_entry(&encode_entry(42)), Some(42));
        assert_eq!(decode_entry(&[0u8; 16]), None);
        let log = LogRef::Effort("cache-warmup".into());
        let header = encode_log_header(&log).unwrap();
        assert_eq!(header.len() as u64, LOG_HEADER_BYTES);
        assert_eq!(decode_log_header(&header), Some(log));
        assert_eq!(ranges_of([5, 3, 4, 9]), vec![(3, 6), (9, 10)]);
    }
}
