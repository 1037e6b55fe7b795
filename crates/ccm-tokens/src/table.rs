//! The CCMT rank-table format: a compact binary form of a tiktoken vocabulary (the byte string
//! of every ordinary token, in rank order) that is small after brotli and quick to decode.
//!
//! The tables are downloaded by browsers before the first token can be counted, so the format
//! is shaped for the size of the *compressed* file first and decoding speed second. Almost every
//! token of a byte-pair-encoding vocabulary is the concatenation of two lower-ranked tokens, so
//! a token is stored as that pair instead of as bytes; only the tokens that have no such split
//! (the 256 single bytes of tiktoken's tables) are stored as raw bytes.
//!
//! A pair does not name its two parts by rank but by their place in a list of the tokens
//! decoded so far, ordered by how often each has been used as a part until then (one list for
//! left parts, one for right parts). A few thousand tokens are the parts of most pairs, and
//! they stay near the front of the lists, so the stored places are small numbers far more often
//! than ranks are. Each number is then written as one byte that holds its magnitude and its
//! three leading bits, which brotli models well, plus the remaining low bits, which are close to
//! random and so are packed into a plain bit stream instead of being left for brotli to fail
//! at. On tiktoken's `o200k_base` this is 7% smaller after brotli than version 1's three byte
//! planes of plain ranks (651 KB against 698 KB). Decoding reads the values, then turns places into
//! ranks list by list, keeping each list in order in constant time per token (see
//! [`UseOrder`]), and then copies the bytes of each token's two already decoded parts, so it
//! needs no lookup structure. It is slower than version 1's single pass (about 6 ms against 1.6
//! ms natively for `o200k_base`). In the app's first-visit benchmark on the throttled phone
//! profile, where the table arrives before the wasm has compiled so that its smaller download
//! makes Ready no sooner, that costs about 0.1 s of Ready (2.46 s against 2.35 s, back to back).
//!
//! # Layout (version 2)
//!
//! All integers are little-endian.
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `CCMT` |
//! | 2 | format version, `2` |
//! | 1 | length `L` of the encoding name |
//! | `L` | encoding name, UTF-8 (e.g. `o200k_base`) |
//! | 4 | token count `n` |
//! | 4 | total token bytes (sum of all token lengths) |
//! | 4 | length `R` of the raw byte stream |
//! | 4 | length `B` of the low-bit stream |
//! | 8 | checksum of everything else (see below) |
//! | `B` | low bits of the values, most significant bit first, the last byte padded with zeros |
//! | `n` | left value codes, one byte per token |
//! | `n` | right value codes, one byte per token |
//! | `R` | raw byte stream |
//!
//! Every token has a left and a right value, each stored as a code byte `c` and, for larger
//! values, low bits. A code below 16 is the value itself. A code `c` from 16 to 183 stands for a
//! value of `m = (c >> 3) + 3` significant bits whose top four bits are `8 | (c & 7)`; its other
//! `m - 4` bits are the next ones in the low-bit stream (for each token the left value's bits,
//! then the right value's). Larger codes are invalid.
//!
//! For the token of rank `r`, a left value of `0` means "raw": the right value is the token's
//! length and its bytes are the next ones in the raw stream. Any other left value `l` means the
//! token is the token at place `l - 1` of the left list followed by the token at place `right`
//! of the right list. Both lists hold the tokens of ranks `0..r` (so both places must be below
//! `r`), ordered by how many times each has been used as a left part (respectively right part)
//! by the tokens before `r`, most used first. Within a count the order is the one [`UseOrder`]
//! keeps: a token joins at the end with no use, and a token used once more swaps places with
//! the first token of its old count. An empty token (a raw token of length 0) is allowed, so a
//! vocabulary with a gap in its ranks can still be written; tiktoken's `o200k_base` and
//! `cl100k_base` have no gaps.
//!
//! The checksum is FNV-1a 64 over the header bytes before the checksum field, used as the seed
//! of four interleaved multiply-rotate lanes over the payload in 8-byte words (so that checking
//! a table costs a fraction of a millisecond), finished with FNV-1a over the last bytes and a
//! final mix. Every step is a bijection of the running state, so a change to any single 8-byte
//! word of the payload is always detected.
//!
//! Version 1 stored the left and right values as plain ranks (a left value being a rank plus
//! one) in three byte planes each and had no low-bit stream; this code reads only version 2.

use std::collections::HashMap;
use std::fmt;

/// The four bytes every table starts with.
pub const MAGIC: [u8; 4] = *b"CCMT";

/// The only format version this code reads and writes.
pub const FORMAT_VERSION: u16 = 2;

/// The most tokens a table may hold. It keeps every count within 32 bits and every value
/// within what a code byte can describe, and it is far above any real vocabulary.
pub const MAX_TOKENS: usize = 1 << 24;

/// The most token bytes a table may hold in total. It is far above any real vocabulary (tiktoken's
/// `o200k_base` has 1.4 MB) and it is checked before anything is allocated, so a corrupt or
/// hostile header cannot make the decoder reserve gigabytes.
pub const MAX_TOTAL_BYTES: usize = 64 << 20;

/// The longest token that can be stored as raw bytes (its length is a right value, kept as small
/// as in version 1, where values had 24 bits).
pub const MAX_RAW_TOKEN_LEN: usize = (1 << 24) - 1;

/// The longest encoding name, because its length is stored in one byte.
pub const MAX_NAME_LEN: usize = 255;

/// How many tokens the decoder decodes between two progress reports.
pub const PROGRESS_INTERVAL: usize = 16_384;

/// Bytes before the name: magic, version and name length.
const PREFIX_LEN: usize = 4 + 2 + 1;
/// Bytes after the name: token count, total bytes, raw length, low-bit length and checksum.
const COUNTS_LEN: usize = 4 + 4 + 4 + 4 + 8;
/// Code bytes per token in the payload: one for the left value and one for the right value.
const CODES_PER_TOKEN: usize = 2;
/// Values below this are stored as their own code byte, with no low bits.
const DIRECT_CODES: u32 = 16;
/// The highest valid code byte: a value of 25 significant bits, more than any count or length
/// within the limits above needs.
const MAX_CODE: u8 = 183;

/// A decoded table: every token's bytes, concatenated in rank order, and where each one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedTable {
    /// The encoding name stored in the table, e.g. `o200k_base`.
    pub name: String,
    /// The bytes of all tokens, in rank order, without separators.
    pub bytes: Vec<u8>,
    /// Where each token starts in `bytes`, plus the end: the token of rank `r` is
    /// `bytes[offsets[r] as usize..offsets[r + 1] as usize]`, and `offsets.len()` is the token
    /// count plus one.
    pub offsets: Vec<u32>,
}

impl DecodedTable {
    /// The number of tokens.
    #[must_use]
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether the table holds no token at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the token of rank `rank`, or `None` past the last rank.
    #[must_use]
    pub fn token(&self, rank: usize) -> Option<&[u8]> {
        let start = *self.offsets.get(rank)? as usize;
        let end = *self.offsets.get(rank + 1)? as usize;
        self.bytes.get(start..end)
    }
}

/// Why a table was refused. Nothing is returned for a refused table, not even a partial one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// The data ends inside the header.
    TruncatedHeader {
        /// The header length that could be determined so far.
        expected: usize,
        /// The length of the data.
        found: usize,
    },
    /// The data does not start with `CCMT`, so it is not a table at all.
    BadMagic {
        /// The first bytes of the data (fewer than four if it is that short).
        found: Vec<u8>,
    },
    /// The table was written in a format version this code cannot read.
    UnsupportedVersion {
        /// The version in the header.
        found: u16,
    },
    /// The encoding name is not UTF-8.
    InvalidName,
    /// The header claims more tokens than any table may hold.
    TooManyTokens {
        /// The token count in the header.
        count: u64,
    },
    /// The header claims more token bytes than any table may hold.
    TooManyBytes {
        /// The total token bytes in the header.
        total: u64,
    },
    /// The data ends before the token data the header announces.
    Truncated {
        /// The length of the token data the header announces.
        expected: u64,
        /// The length of the token data present.
        found: u64,
    },
    /// The data goes on after the token data the header announces.
    TrailingBytes {
        /// How many bytes follow the end of the table.
        extra: u64,
    },
    /// The content does not match the stored checksum: the data was damaged in storage or
    /// transfer.
    ChecksumMismatch {
        /// The checksum in the header.
        stored: u64,
        /// The checksum of the data as received.
        computed: u64,
    },
    /// A token refers to a place past the end of a list of the tokens decoded before it, that
    /// is, to a token that is not decoded yet.
    ForwardReference {
        /// The rank of the token being decoded.
        rank: usize,
        /// The place it refers to.
        place: usize,
    },
    /// A value's code byte is above the highest valid code.
    InvalidCode {
        /// The rank of the token being decoded.
        rank: usize,
        /// The code byte.
        code: u8,
    },
    /// A raw token extends past the end of the raw byte stream.
    RawOverrun {
        /// The rank of the token being decoded.
        rank: usize,
        /// The length of the raw token.
        len: usize,
        /// How many raw bytes were left.
        available: usize,
    },
    /// The tokens do not add up to the byte counts in the header.
    ByteCountMismatch {
        /// Which count disagrees: `token bytes`, `raw bytes` or `low-bit bytes`.
        what: &'static str,
        /// The count in the header.
        declared: u64,
        /// The count the tokens add up to (for token bytes, possibly only up to the first token
        /// that went past the declared count).
        actual: u64,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedHeader { expected, found } => write!(
                f,
                "table is truncated: expected at least {expected} bytes of header, found {found}"
            ),
            Self::BadMagic { found } => write!(
                f,
                "not a CCMT rank table: it should start with the bytes \"CCMT\" but starts with {found:02x?}"
            ),
            Self::UnsupportedVersion { found } => write!(
                f,
                "unsupported CCMT table version {found}: this build reads version {FORMAT_VERSION}; regenerate the table or update the code"
            ),
            Self::InvalidName => write!(f, "the table's encoding name is not valid UTF-8"),
            Self::TooManyTokens { count } => write!(
                f,
                "table claims {count} tokens, more than the limit of {MAX_TOKENS}; the header is corrupt"
            ),
            Self::TooManyBytes { total } => write!(
                f,
                "table claims {total} bytes of tokens, more than the limit of {MAX_TOTAL_BYTES}; the header is corrupt"
            ),
            Self::Truncated { expected, found } => write!(
                f,
                "table is truncated: expected {expected} bytes of token data, found {found}"
            ),
            Self::TrailingBytes { extra } => write!(
                f,
                "table has {extra} unexpected bytes after its end; it is corrupt or two files were joined"
            ),
            Self::ChecksumMismatch { stored, computed } => write!(
                f,
                "table is corrupt: checksum {computed:016x} does not match the stored {stored:016x}"
            ),
            Self::ForwardReference { rank, place } => write!(
                f,
                "table is corrupt: token {rank} is built from place {place} of a list of the {rank} tokens before it"
            ),
            Self::InvalidCode { rank, code } => write!(
                f,
                "table is corrupt: token {rank} has the value code {code}, above the highest valid code {MAX_CODE}"
            ),
            Self::RawOverrun {
                rank,
                len,
                available,
            } => write!(
                f,
                "table is corrupt: token {rank} needs {len} raw bytes but only {available} are left"
            ),
            Self::ByteCountMismatch {
                what,
                declared,
                actual,
            } => write!(
                f,
                "table is corrupt: the header declares {declared} {what} but the tokens use {actual}"
            ),
        }
    }
}

impl std::error::Error for TableError {}

/// Writes a table. `tokens[r]` is the token of rank `r`; an empty token marks a rank that has no
/// token. The output is deterministic: the same input always gives the same bytes.
///
/// # Panics
///
/// If the input exceeds the format's limits: a name longer than [`MAX_NAME_LEN`] bytes, more
/// than [`MAX_TOKENS`] tokens, more than [`MAX_TOTAL_BYTES`] token bytes, or a token longer than
/// [`MAX_RAW_TOKEN_LEN`] that is not the concatenation of two lower-ranked tokens. Tables are
/// written by the generator from known vocabularies, far inside these limits.
pub fn encode_table(name: &str, tokens: &[Vec<u8>]) -> Vec<u8> {
    assert!(
        name.len() <= MAX_NAME_LEN,
        "encoding name is {} bytes long; the limit is {MAX_NAME_LEN}",
        name.len()
    );
    assert!(
        tokens.len() <= MAX_TOKENS,
        "{} tokens exceed the limit of {MAX_TOKENS}",
        tokens.len()
    );
    let total_bytes: usize = tokens.iter().map(Vec::len).sum();
    assert!(
        total_bytes <= MAX_TOTAL_BYTES,
        "{total_bytes} token bytes exceed the limit of {MAX_TOTAL_BYTES}"
    );

    let splits = choose_splits(tokens);
    let n = tokens.len();
    let mut left_codes = Vec::with_capacity(n);
    let mut right_codes = Vec::with_capacity(n);
    let mut low_bits = BitWriter::default();
    let mut raw = Vec::new();
    let mut left_order = UseOrder::tracking_places(n);
    let mut right_order = UseOrder::tracking_places(n);
    for (rank, (token, split)) in tokens.iter().zip(&splits).enumerate() {
        let (left, right) = if let Some((a, b)) = *split {
            (left_order.use_rank(a) + 1, right_order.use_rank(b))
        } else {
            assert!(
                token.len() <= MAX_RAW_TOKEN_LEN,
                "a raw token of {} bytes exceeds the limit of {MAX_RAW_TOKEN_LEN}",
                token.len()
            );
            raw.extend_from_slice(token);
            // The assert above keeps the length within 24 bits.
            (0, token.len() as u32)
        };
        for (value, codes) in [(left, &mut left_codes), (right, &mut right_codes)] {
            let (code, low_len) = value_code(value);
            codes.push(code);
            low_bits.write(value, low_len);
        }
        // The assert on the token count keeps ranks within 32 bits.
        left_order.push(rank as u32);
        right_order.push(rank as u32);
    }
    let low_bits = low_bits.finish();

    let mut out = Vec::with_capacity(
        PREFIX_LEN + name.len() + COUNTS_LEN + low_bits.len() + 2 * n + raw.len(),
    );
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    // The asserts above keep the name length, the counts and the raw length within their
    // fields: the raw stream is part of the token bytes, and each token adds at most 50 low
    // bits.
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(&(total_bytes as u32).to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&(low_bits.len() as u32).to_le_bytes());
    let checksum_at = out.len();
    out.extend_from_slice(&[0; 8]);
    // The low bits first: they are nearly random, and brotli copes best with them in one block
    // of their own, ahead of the code bytes it can model.
    out.extend_from_slice(&low_bits);
    out.extend_from_slice(&left_codes);
    out.extend_from_slice(&right_codes);
    out.extend_from_slice(&raw);

    let (head, rest) = out.split_at(checksum_at);
    let sum = checksum(head, &rest[8..]);
    out[checksum_at..checksum_at + 8].copy_from_slice(&sum.to_le_bytes());
    out
}

/// Reads a table.
///
/// # Errors
///
/// A [`TableError`] if the data is not a table, is truncated or damaged, is of another format
/// version, exceeds the format's limits or is internally inconsistent.
pub fn decode_table(data: &[u8]) -> Result<DecodedTable, TableError> {
    decode_table_progress(data, &mut |_, _| {})
}

/// Like [`decode_table`], and calls `on_progress(done, total)` after every
/// [`PROGRESS_INTERVAL`] tokens and once at the end with `done == total`, so that a user
/// interface can show how far parsing is. Nothing is reported for a table refused before its
/// tokens are decoded.
///
/// # Errors
///
/// As [`decode_table`].
pub fn decode_table_progress(
    data: &[u8],
    on_progress: &mut dyn FnMut(usize, usize),
) -> Result<DecodedTable, TableError> {
    let header = read_header(data)?;
    let n = header.token_count;
    let payload = &data[header.len..];
    let (low_bits, rest) = payload.split_at(header.low_bits_len);
    let (left_codes, rest) = rest.split_at(n);
    let (right_codes, raw) = rest.split_at(n);
    let parts = read_parts(left_codes, right_codes, low_bits)?;
    let total = header.total_bytes;

    let mut offsets: Vec<u32> = Vec::with_capacity(n + 1);
    offsets.push(0);
    // The output buffer always has COPY_SLACK spare bytes after the token being written, so
    // that short tokens can be copied in fixed-size blocks (see `append_copy`); it is cut to
    // the exact length at the end. The header's total is bounded by MAX_TOTAL_BYTES, but a
    // valid table needs little more output than input, so the buffer starts in proportion to
    // the input and grows, by doubling, only as far as the (checked) tokens really need.
    let mut buf: Vec<u8> = vec![0; total.min(data.len().saturating_mul(4)) + COPY_SLACK];
    let mut pos = 0usize;
    let mut raw_pos = 0usize;

    for (r, &(left, right)) in parts.iter().enumerate() {
        let right = right as usize;
        if left == RAW_PART {
            let len = right;
            let available = raw.len() - raw_pos;
            if len > available {
                return Err(TableError::RawOverrun {
                    rank: r,
                    len,
                    available,
                });
            }
            reserve_output(&mut buf, pos, len, total)?;
            buf[pos..pos + len].copy_from_slice(&raw[raw_pos..raw_pos + len]);
            pos += len;
            raw_pos += len;
        } else {
            let (a, b) = (left as usize, right);
            // read_parts only lets a token refer to lower ranks, so their offsets and bytes
            // exist already.
            let (a_start, a_end) = (offsets[a] as usize, offsets[a + 1] as usize);
            let (b_start, b_end) = (offsets[b] as usize, offsets[b + 1] as usize);
            reserve_output(&mut buf, pos, (a_end - a_start) + (b_end - b_start), total)?;
            pos = append_copy(&mut buf, a_start, a_end, pos);
            pos = append_copy(&mut buf, b_start, b_end, pos);
        }
        // reserve_output keeps pos within MAX_TOTAL_BYTES, which fits in u32.
        offsets.push(pos as u32);
        if (r + 1) % PROGRESS_INTERVAL == 0 && r + 1 < n {
            on_progress(r + 1, n);
        }
    }
    buf.truncate(pos);
    let bytes = buf;

    if raw_pos != raw.len() {
        return Err(TableError::ByteCountMismatch {
            what: "raw bytes",
            declared: raw.len() as u64,
            actual: raw_pos as u64,
        });
    }
    if bytes.len() != total {
        return Err(TableError::ByteCountMismatch {
            what: "token bytes",
            declared: total as u64,
            actual: bytes.len() as u64,
        });
    }
    on_progress(n, n);
    Ok(DecodedTable {
        name: header.name,
        bytes,
        offsets,
    })
}

/// The left part of a raw token in [`read_parts`]' result, which no rank can be.
const RAW_PART: u32 = u32::MAX;

/// The first decoding passes: every token's two parts as ranks, or ([`RAW_PART`], length)
/// for a raw token, from the code bytes and the low bits.
///
/// Three tight loops, each over little memory, are much faster than one that does everything
/// per token: a place names a list entry anywhere, whose read usually misses the processor's
/// caches, and in a loop that also reads values and copies bytes each token waited for the one
/// before it (decoding `o200k_base` took 15 to 25 times longer that way, natively).
fn read_parts(
    left_codes: &[u8],
    right_codes: &[u8],
    low_bits: &[u8],
) -> Result<Vec<(u32, u32)>, TableError> {
    let n = left_codes.len();
    let low_bits_len = low_bits.len();
    let mut low_bits = BitReader::new(low_bits);
    // First the values, in place of the parts they name.
    let mut parts = Vec::with_capacity(n);
    for (r, (&left_code, &right_code)) in left_codes.iter().zip(right_codes).enumerate() {
        let left = read_value(left_code, &mut low_bits, r, low_bits_len)?;
        let right = read_value(right_code, &mut low_bits, r, low_bits_len)?;
        // Values are below 2^25 (MAX_CODE), so they fit in u32.
        parts.push((left as u32, right as u32));
    }
    if !low_bits.is_used_up() {
        return Err(TableError::ByteCountMismatch {
            what: "low-bit bytes",
            declared: low_bits_len as u64,
            actual: low_bits.bytes_read() as u64,
        });
    }
    // Then the places become ranks, one list at a time.
    for left_side in [true, false] {
        let mut order = UseOrder::new(n);
        for (r, part) in parts.iter_mut().enumerate() {
            if left_side {
                if part.0 == 0 {
                    part.0 = RAW_PART;
                } else {
                    part.0 = order.take(part.0 as usize - 1, r)?;
                }
            } else if part.0 != RAW_PART {
                part.1 = order.take(part.1 as usize, r)?;
            }
            // Ranks are below MAX_TOKENS (read_header checks the count), so never RAW_PART.
            order.push(r as u32);
        }
    }
    Ok(parts)
}

/// The checked fields of a table's header.
struct Header {
    name: String,
    token_count: usize,
    total_bytes: usize,
    /// The length of the low-bit stream, the first part of the payload.
    low_bits_len: usize,
    /// Where the payload starts.
    len: usize,
}

/// Checks everything that can be checked before decoding: the magic, the version, the name,
/// the counts against the format's limits and against the data's length, and the checksum.
/// Nothing proportional to the header's counts is allocated here.
fn read_header(data: &[u8]) -> Result<Header, TableError> {
    if data.get(..MAGIC.len()) != Some(&MAGIC[..]) {
        // A prefix of the magic is reported as truncation, anything else as a foreign file.
        let head = &data[..data.len().min(MAGIC.len())];
        if head.len() < MAGIC.len() && MAGIC.starts_with(head) {
            return Err(TableError::TruncatedHeader {
                expected: PREFIX_LEN + COUNTS_LEN,
                found: data.len(),
            });
        }
        return Err(TableError::BadMagic {
            found: head.to_vec(),
        });
    }
    let mut reader = Reader {
        data,
        pos: MAGIC.len(),
    };
    let version = u16::from_le_bytes(reader.array(PREFIX_LEN + COUNTS_LEN)?);
    if version != FORMAT_VERSION {
        return Err(TableError::UnsupportedVersion { found: version });
    }
    let [name_len] = reader.array(PREFIX_LEN + COUNTS_LEN)?;
    let header_len = PREFIX_LEN + usize::from(name_len) + COUNTS_LEN;
    let name = reader.take(usize::from(name_len), header_len)?;
    let name = std::str::from_utf8(name)
        .map_err(|_| TableError::InvalidName)?
        .to_owned();
    let token_count = u32::from_le_bytes(reader.array(header_len)?);
    let total_bytes = u32::from_le_bytes(reader.array(header_len)?);
    let raw_len = u32::from_le_bytes(reader.array(header_len)?);
    let low_bits_len = u32::from_le_bytes(reader.array(header_len)?);
    let checksum_at = reader.pos;
    let stored = u64::from_le_bytes(reader.array(header_len)?);

    if token_count as usize > MAX_TOKENS {
        return Err(TableError::TooManyTokens {
            count: u64::from(token_count),
        });
    }
    if total_bytes as usize > MAX_TOTAL_BYTES {
        return Err(TableError::TooManyBytes {
            total: u64::from(total_bytes),
        });
    }
    // Computed in u64 so that no header can overflow it; the limits above keep it far below.
    let expected = u64::from(token_count) * CODES_PER_TOKEN as u64
        + u64::from(raw_len)
        + u64::from(low_bits_len);
    let found = (data.len() - header_len) as u64;
    if found < expected {
        return Err(TableError::Truncated { expected, found });
    }
    if found > expected {
        return Err(TableError::TrailingBytes {
            extra: found - expected,
        });
    }
    let computed = checksum(&data[..checksum_at], &data[header_len..]);
    if computed != stored {
        return Err(TableError::ChecksumMismatch { stored, computed });
    }
    Ok(Header {
        name,
        token_count: token_count as usize,
        total_bytes: total_bytes as usize,
        low_bits_len: low_bits_len as usize,
        len: header_len,
    })
}

/// A cursor over the header that reports running out of data as truncation.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// The next `len` bytes; `header_len` is the header length known so far, for the error.
    fn take(&mut self, len: usize, header_len: usize) -> Result<&'a [u8], TableError> {
        let bytes = self
            .data
            .get(self.pos..self.pos + len)
            .ok_or(TableError::TruncatedHeader {
                expected: header_len,
                found: self.data.len(),
            })?;
        self.pos += len;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, header_len: usize) -> Result<[u8; N], TableError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, header_len)?);
        Ok(out)
    }
}

/// Spare bytes kept after the end of the decoded bytes, and the size of a short-token copy.
const COPY_SLACK: usize = 16;

/// Makes room for a token of `len` bytes at `pos`, plus [`COPY_SLACK`], after refusing a token
/// that would take the decoded bytes past the header's total: without this check, a table
/// whose tokens double in length could grow without bound.
fn reserve_output(
    buf: &mut Vec<u8>,
    pos: usize,
    len: usize,
    total: usize,
) -> Result<(), TableError> {
    if pos + len > total {
        return Err(TableError::ByteCountMismatch {
            what: "token bytes",
            declared: total as u64,
            actual: (pos + len) as u64,
        });
    }
    let needed = pos + len + COPY_SLACK;
    if buf.len() < needed {
        let grown = buf
            .len()
            .saturating_mul(2)
            .clamp(needed, total + COPY_SLACK);
        buf.resize(grown, 0);
    }
    Ok(())
}

/// Copies the already decoded `buf[start..end]` to `pos` and returns the position after it.
/// `buf` must hold [`COPY_SLACK`] bytes after `pos + (end - start)`, and `start < pos`.
///
/// Most tokens are a few bytes long, and a call to `memmove` per token would cost more than the
/// copy itself. A fixed-size copy of `COPY_SLACK` bytes compiles to a couple of vector moves
/// instead; the bytes it writes past the token are garbage that the next token overwrites (or
/// that is cut off at the end), and the bytes it reads past `end` are in bounds thanks to the
/// slack.
// Forced inline: as a call, this function costs a third of the decoding time.
#[inline(always)]
fn append_copy(buf: &mut [u8], start: usize, end: usize, pos: usize) -> usize {
    let len = end - start;
    if len <= COPY_SLACK {
        // Through a fixed-size array, because slice copies of a constant length are inlined
        // reliably while `copy_within` is not.
        let mut block = [0; COPY_SLACK];
        block.copy_from_slice(&buf[start..start + COPY_SLACK]);
        buf[pos..pos + COPY_SLACK].copy_from_slice(&block);
    } else {
        buf.copy_within(start..end, pos);
    }
    pos + len
}

/// The code byte of `value` and how many of its low bits go to the low-bit stream (see the
/// module documentation).
fn value_code(value: u32) -> (u8, u32) {
    if value < DIRECT_CODES {
        // Below 16, so it fits.
        return (value as u8, 0);
    }
    let significant = u32::BITS - value.leading_zeros();
    let low_len = significant - 4;
    let top = (value >> low_len) & 7;
    // Values are below 2^25 (at most MAX_TOKENS or MAX_RAW_TOKEN_LEN), so the code is at most
    // MAX_CODE.
    ((((significant - 3) << 3) | top) as u8, low_len)
}

/// Reads the value of `code` and its low bits, for the token of rank `rank`.
fn read_value(
    code: u8,
    low_bits: &mut BitReader<'_>,
    rank: usize,
    low_bits_len: usize,
) -> Result<usize, TableError> {
    if u32::from(code) < DIRECT_CODES {
        return Ok(usize::from(code));
    }
    if code > MAX_CODE {
        return Err(TableError::InvalidCode { rank, code });
    }
    let low_len = u32::from(code >> 3) - 1;
    let low = low_bits
        .read(low_len)
        .ok_or(TableError::ByteCountMismatch {
            what: "low-bit bytes",
            declared: low_bits_len as u64,
            actual: low_bits_len as u64 + 1,
        })?;
    Ok(((8 | usize::from(code & 7)) << low_len) | low as usize)
}

/// Writes values' low bits, most significant first, into bytes.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    /// Bits not yet written out, in the low `pending` bits.
    buffer: u64,
    pending: u32,
}

impl BitWriter {
    /// Appends the low `len` bits of `value` (at most 32).
    fn write(&mut self, value: u32, len: u32) {
        if len == 0 {
            return;
        }
        let mask = (1u64 << len) - 1;
        self.buffer = (self.buffer << len) | (u64::from(value) & mask);
        self.pending += len;
        while self.pending >= 8 {
            self.pending -= 8;
            self.bytes.push((self.buffer >> self.pending) as u8);
        }
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.pending > 0 {
            self.bytes.push((self.buffer << (8 - self.pending)) as u8);
        }
        self.bytes
    }
}

/// Reads what [`BitWriter`] wrote.
struct BitReader<'a> {
    bytes: &'a [u8],
    /// How many bytes have been moved into `buffer`.
    read: usize,
    /// Bits not yet consumed, in the low `available` bits.
    buffer: u64,
    available: u32,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            read: 0,
            buffer: 0,
            available: 0,
        }
    }

    /// The next `len` bits (at most 32) as a number, or `None` if the stream ends first.
    #[inline]
    fn read(&mut self, len: u32) -> Option<u32> {
        while self.available < len {
            let byte = *self.bytes.get(self.read)?;
            self.read += 1;
            // Bits above `available + 8` are stale and masked off below; shifting them out of
            // the top of the u64 is harmless.
            self.buffer = (self.buffer << 8) | u64::from(byte);
            self.available += 8;
        }
        self.available -= len;
        Some(((self.buffer >> self.available) & ((1u64 << len) - 1)) as u32)
    }

    /// How many bytes of the stream the values have reached into.
    fn bytes_read(&self) -> usize {
        self.read
    }

    /// Whether every byte was read and the bits left over are the zero padding of the last one,
    /// as the writer leaves it: anything else means the stream does not belong to these codes.
    fn is_used_up(&self) -> bool {
        self.read == self.bytes.len()
            && self.available < 8
            && self.buffer & ((1u64 << self.available) - 1) == 0
    }
}

/// The tokens decoded so far, ordered by how often each has been used as a part, most used
/// first: the list that a pair's place refers to (see the module documentation).
///
/// Keeping a list sorted by counts normally costs a search or a shift per change. Here a count
/// only ever grows by one, so the token that is used swaps places with the first token of its
/// old count, which then starts one place later; with the place where each count starts kept,
/// every step is a constant number of array operations. Each entry keeps its rank and its count
/// side by side, so that a step reads one entry from anywhere in the list (the one a place
/// names) and otherwise only memory that recent steps touched.
struct UseOrder {
    /// The entries, in list order.
    entries: Vec<UseEntry>,
    /// For each count `c` up to the highest one, how many tokens were used more than `c`
    /// times, which is the place of the first token used `c` times or fewer.
    more_used_than: Vec<u32>,
    /// Each rank's place, kept only by the encoder (the decoder reads places).
    place_of: Option<Vec<u32>>,
}

/// A token in a [`UseOrder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct UseEntry {
    rank: u32,
    uses: u32,
}

impl UseOrder {
    /// An empty list for up to `capacity` tokens, as the decoder needs it.
    fn new(capacity: usize) -> Self {
        Self {
            entries: Vec::with_capacity(capacity),
            more_used_than: vec![0],
            place_of: None,
        }
    }

    /// An empty list that also knows where each rank is, as the encoder needs it.
    fn tracking_places(capacity: usize) -> Self {
        Self {
            place_of: Some(Vec::with_capacity(capacity)),
            ..Self::new(capacity)
        }
    }

    /// Adds the next rank, unused, at the end.
    #[inline]
    fn push(&mut self, rank: u32) {
        if let Some(place_of) = &mut self.place_of {
            // The list never holds more than MAX_TOKENS ranks.
            place_of.push(self.entries.len() as u32);
        }
        self.entries.push(UseEntry { rank, uses: 0 });
    }

    /// The rank at `place`, which is then counted as used once more, for the token of rank
    /// `rank` (whose decoding refers to it).
    #[inline]
    fn take(&mut self, place: usize, rank: usize) -> Result<u32, TableError> {
        if place >= self.entries.len() {
            return Err(TableError::ForwardReference { rank, place });
        }
        Ok(self.record_use(place))
    }

    /// The place of `rank`, which is then counted as used once more (encoder only).
    fn use_rank(&mut self, rank: u32) -> u32 {
        let place = self
            .place_of
            .as_ref()
            .expect("the encoder's list tracks places")[rank as usize];
        self.record_use(place as usize);
        place
    }

    /// The ranks in list order.
    #[cfg(test)]
    fn ranks(&self) -> Vec<u32> {
        self.entries.iter().map(|entry| entry.rank).collect()
    }

    /// Counts one more use of the token at `place` and returns its rank: it swaps with the
    /// first token of its count, which keeps the list sorted since all tokens before that one
    /// are used more often.
    #[inline(always)]
    fn record_use(&mut self, place: usize) -> u32 {
        let used = self.entries[place];
        let count = used.uses as usize;
        let first = self.more_used_than[count] as usize;
        let displaced = self.entries[first];
        self.entries[place] = displaced;
        self.entries[first] = UseEntry {
            rank: used.rank,
            uses: used.uses + 1,
        };
        if let Some(place_of) = &mut self.place_of {
            // Both places are below MAX_TOKENS.
            place_of[used.rank as usize] = first as u32;
            place_of[displaced.rank as usize] = place as u32;
        }
        self.more_used_than[count] += 1;
        if self.more_used_than.len() == count + 1 {
            // The first token used count + 1 times: none is used more.
            self.more_used_than.push(0);
        }
        used.rank
    }
}

/// How many rounds of re-choosing splits by popularity the encoder runs. Each round lowers the
/// compressed size a little less; after four the gain is gone.
const SPLIT_ROUNDS: usize = 4;

/// Chooses, for every token, two lower-ranked tokens whose concatenation it is, or `None` if
/// there is no such pair (then the token is stored raw).
///
/// A token usually has several valid splits (`" the"` is `" t" + "he"` and `" th" + "e"`). The
/// choice does not matter for decoding but it does for the compressed size: the fewer distinct
/// ranks the pairs use, the better brotli predicts them. So the first choice (the longest left
/// part) is refined a few times by picking, for every token, the split whose two parts are used
/// most often by the current choice. Scores are integers so that the output does not depend on
/// floating-point details of the platform.
fn choose_splits(tokens: &[Vec<u8>]) -> Vec<Option<(u32, u32)>> {
    let mut rank_of: HashMap<&[u8], u32> = HashMap::with_capacity(tokens.len());
    for (rank, token) in tokens.iter().enumerate() {
        // A duplicated token keeps its lowest rank, which every later token can refer to.
        rank_of.entry(token.as_slice()).or_insert(rank as u32);
    }

    // Only lengths that some token has can be the length of a part. Checking that first keeps
    // a long token from costing one hash of a long slice per split point.
    let longest = tokens.iter().map(Vec::len).max().unwrap_or(0);
    let mut length_exists = vec![false; longest + 1];
    for token in tokens {
        length_exists[token.len()] = true;
    }

    // Every valid split of every token, as (left rank, right rank), grouped by token.
    let mut candidates: Vec<(u32, u32)> = Vec::new();
    let mut starts: Vec<usize> = Vec::with_capacity(tokens.len() + 1);
    for (rank, token) in tokens.iter().enumerate() {
        starts.push(candidates.len());
        let rank = rank as u32;
        for k in 1..token.len() {
            if !(length_exists[k] && length_exists[token.len() - k]) {
                continue;
            }
            let Some(&a) = rank_of.get(&token[..k]).filter(|&&a| a < rank) else {
                continue;
            };
            if let Some(&b) = rank_of.get(&token[k..]).filter(|&&b| b < rank) {
                candidates.push((a, b));
            }
        }
    }
    starts.push(candidates.len());
    let of_token = |rank: usize| &candidates[starts[rank]..starts[rank + 1]];

    let mut chosen: Vec<Option<(u32, u32)>> = (0..tokens.len())
        .map(|rank| of_token(rank).last().copied())
        .collect();
    let mut uses = vec![0u64; tokens.len()];
    for _ in 0..SPLIT_ROUNDS {
        uses.fill(0);
        for &(a, b) in chosen.iter().flatten() {
            uses[a as usize] += 1;
            uses[b as usize] += 1;
        }
        for (rank, choice) in chosen.iter_mut().enumerate() {
            *choice = of_token(rank)
                .iter()
                .copied()
                .max_by_key(|&(a, b)| (uses[a as usize] + 1) * (uses[b as usize] + 1));
        }
    }
    chosen
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// An odd multiplier with well-spread bits (the golden ratio), for the lanes and the final mix.
const LANE_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// FNV-1a 64, continuing from `state`.
fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        state ^= u64::from(byte);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// One lane step. XOR, multiplication by an odd number and rotation are each invertible, so two
/// different words always leave two different states.
fn lane_step(state: u64, word: u64) -> u64 {
    (state ^ word).wrapping_mul(LANE_MULTIPLIER).rotate_left(27)
}

/// The table checksum (see the module documentation). Four independent lanes let the processor
/// overlap the multiplications, which makes this several times faster than byte-wise FNV-1a on
/// the megabyte of a large table.
fn checksum(header: &[u8], payload: &[u8]) -> u64 {
    let seed = fnv1a(FNV_OFFSET, header);
    let mut lanes = [
        seed,
        seed ^ 0x1111_1111_1111_1111,
        seed ^ 0x2222_2222_2222_2222,
        seed ^ 0x3333_3333_3333_3333,
    ];
    let mut blocks = payload.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let mut le = [0; 8];
            le.copy_from_slice(word);
            *lane = lane_step(*lane, u64::from_le_bytes(le));
        }
    }
    let mut state = seed;
    for lane in lanes {
        state = lane_step(state, lane);
    }
    state = fnv1a(state, blocks.remainder());
    state ^= payload.len() as u64;
    state ^= state >> 32;
    state = state.wrapping_mul(LANE_MULTIPLIER);
    state ^ (state >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small vocabulary shaped like a real one: all 256 single bytes first (in a shuffled
    /// order, as tiktoken's are), then merges, then a few tokens that are stored raw.
    fn synthetic_tokens() -> Vec<Vec<u8>> {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b.wrapping_mul(37)]).collect();
        for word in [
            "he", " t", " th", "the", " the", "in", "ing", " in", " thing", " things", " s",
            " sing", " singing", "er", "ther", " o", " other", "an", " an", "other", " another",
        ] {
            tokens.push(word.as_bytes().to_vec());
        }
        // A duplicate, a token with no split into lower-ranked tokens, and invalid UTF-8.
        tokens.push(b"the".to_vec());
        tokens.push(b"zzzzzzz".to_vec());
        tokens.push(vec![0xff, 0xfe, 0x00, 0x80]);
        tokens
    }

    fn assert_round_trip(name: &str, tokens: &[Vec<u8>]) {
        let encoded = encode_table(name, tokens);
        let decoded = decode_table(&encoded).expect("a freshly encoded table decodes");
        assert_eq!(decoded.name, name);
        assert_eq!(decoded.len(), tokens.len());
        assert_eq!(decoded.offsets.len(), tokens.len() + 1);
        for (rank, token) in tokens.iter().enumerate() {
            assert_eq!(decoded.token(rank), Some(token.as_slice()), "rank {rank}");
        }
        assert_eq!(decoded.token(tokens.len()), None);
        let total: usize = tokens.iter().map(Vec::len).sum();
        assert_eq!(decoded.bytes.len(), total);
    }

    /// Rewrites the checksum after `data` was edited, so that a test reaches the check it aims
    /// at instead of stopping at the checksum.
    fn reseal(data: &mut [u8]) {
        let name_len = usize::from(data[6]);
        let checksum_at = PREFIX_LEN + name_len + 16;
        let sum = checksum(&data[..checksum_at], &data[checksum_at + 8..]);
        data[checksum_at..checksum_at + 8].copy_from_slice(&sum.to_le_bytes());
    }

    /// Where the token count of a table named `name` sits.
    fn counts_at(name: &str) -> usize {
        PREFIX_LEN + name.len()
    }

    #[test]
    fn round_trips_a_synthetic_vocabulary() {
        let tokens = synthetic_tokens();
        assert_round_trip("synthetic", &tokens);
        let encoded = encode_table("synthetic", &tokens);
        // The merges are stored as pairs: the raw stream holds the 256 bytes and the two tokens
        // that have no split, not the merged tokens' bytes.
        let raw_at = counts_at("synthetic") + 8;
        let raw_len = u32::from_le_bytes(encoded[raw_at..raw_at + 4].try_into().unwrap());
        assert_eq!(raw_len as usize, 256 + 7 + 4);
    }

    #[test]
    fn round_trips_edge_cases() {
        assert_round_trip("", &[]);
        assert_round_trip("empty_only", &[vec![]]);
        // Empty tokens (gaps) between and among merged tokens, and a token that refers to the
        // same lower token twice.
        assert_round_trip(
            "gaps",
            &[
                b"a".to_vec(),
                vec![],
                b"aa".to_vec(),
                vec![],
                b"aaaa".to_vec(),
            ],
        );
        // Only raw tokens, including long ones.
        assert_round_trip("raw", &[vec![7; 1000], vec![9; 70_000], b"x".to_vec()]);
        // Exponential growth through pairs stays correct.
        let mut doubling = vec![b"ab".to_vec()];
        for _ in 0..12 {
            let last = doubling.last().unwrap().clone();
            doubling.push([last.as_slice(), last.as_slice()].concat());
        }
        assert_round_trip("doubling", &doubling);
        let name = "n".repeat(MAX_NAME_LEN);
        assert_round_trip(&name, &[b"q".to_vec()]);
    }

    #[test]
    fn round_trips_parts_of_every_length_around_the_copy_block() {
        // Parts of 1 to 50 bytes on both sides of a pair, with bytes that differ from position
        // to position, so that a copy of the wrong length shows.
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut growing = vec![0u8];
        for k in 1..50u8 {
            growing.push(k);
            tokens.push(growing.clone());
            tokens.push([&[255][..], &growing].concat());
        }
        assert_round_trip("lengths", &tokens);
        let encoded = encode_table("lengths", &tokens);
        let raw_at = counts_at("lengths") + 8;
        let raw_len = u32::from_le_bytes(encoded[raw_at..raw_at + 4].try_into().unwrap());
        assert_eq!(raw_len, 256, "every long token is stored as a pair");
    }

    #[test]
    fn round_trips_more_tokens_than_a_plane_byte_can_count() {
        // Over 65,536 tokens, so that all three byte planes of the ranks are used.
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for i in 0..70_000usize {
            let mut token = tokens[i % 256].clone();
            token.extend_from_slice(&tokens[(i * 7919) % tokens.len()]);
            token.truncate(40);
            tokens.push(token);
        }
        assert_round_trip("large", &tokens);
    }

    /// Encoding is deterministic across runs and builds, not only within one process: the
    /// shipped table, decoded and encoded again, gives back its exact bytes (the file was
    /// written by an earlier build of `ccm-tables`).
    #[test]
    fn encoding_reproduces_the_shipped_table_byte_for_byte() {
        let shipped: &[u8] = include_bytes!("../tables/cl100k_base.ccmt");
        let decoded = decode_table(shipped).expect("the shipped table decodes");
        let tokens: Vec<Vec<u8>> = decoded
            .offsets
            .windows(2)
            .map(|w| decoded.bytes[w[0] as usize..w[1] as usize].to_vec())
            .collect();
        let encoded = encode_table(&decoded.name, &tokens);
        assert_eq!(encoded.len(), shipped.len());
        assert!(
            encoded == shipped,
            "re-encoding the shipped table changed its bytes"
        );
    }

    #[test]
    fn reports_progress() {
        let tokens: Vec<Vec<u8>> = (0..40_000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let encoded = encode_table("progress", &tokens);
        let mut reports = Vec::new();
        decode_table_progress(&encoded, &mut |done, total| reports.push((done, total)))
            .expect("decodes");
        assert_eq!(
            reports,
            [(16_384, 40_000), (32_768, 40_000), (40_000, 40_000)]
        );

        // A count that is a multiple of the interval is reported once at the end, not twice.
        let encoded = encode_table("progress", &tokens[..32_768]);
        let mut reports = Vec::new();
        decode_table_progress(&encoded, &mut |done, total| reports.push((done, total)))
            .expect("decodes");
        assert_eq!(reports, [(16_384, 32_768), (32_768, 32_768)]);

        let mut reports = Vec::new();
        decode_table_progress(&encode_table("e", &[]), &mut |d, t| reports.push((d, t)))
            .expect("decodes");
        assert_eq!(reports, [(0, 0)]);
    }

    #[test]
    fn refuses_every_truncation() {
        let encoded = encode_table("synthetic", &synthetic_tokens());
        for len in 0..encoded.len() {
            let err = decode_table(&encoded[..len]).expect_err("a truncated table is refused");
            assert!(
                matches!(
                    err,
                    TableError::TruncatedHeader { .. } | TableError::Truncated { .. }
                ),
                "truncated to {len}: {err}"
            );
            assert!(err.to_string().starts_with("table is truncated"), "{err}");
        }
        let header_len = counts_at("synthetic") + COUNTS_LEN;
        let err = decode_table(&encoded[..header_len + 10]).unwrap_err();
        assert_eq!(
            err,
            TableError::Truncated {
                expected: (encoded.len() - header_len) as u64,
                found: 10,
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "table is truncated: expected {} bytes of token data, found 10",
                encoded.len() - header_len
            )
        );
    }

    #[test]
    fn refuses_trailing_bytes() {
        let mut encoded = encode_table("synthetic", &synthetic_tokens());
        encoded.extend_from_slice(b"xyz");
        assert_eq!(
            decode_table(&encoded),
            Err(TableError::TrailingBytes { extra: 3 })
        );
    }

    #[test]
    fn refuses_every_flipped_byte() {
        let encoded = encode_table("synthetic", &synthetic_tokens());
        let header_len = counts_at("synthetic") + COUNTS_LEN;
        for at in 0..encoded.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut damaged = encoded.clone();
                damaged[at] ^= flip;
                let err = decode_table(&damaged).expect_err("a damaged table is refused");
                if at >= header_len {
                    assert!(
                        matches!(err, TableError::ChecksumMismatch { .. }),
                        "payload byte {at} ^ {flip:#x}: {err}"
                    );
                }
            }
        }
    }

    #[test]
    fn refuses_wrong_magic_and_version() {
        let mut encoded = encode_table("synthetic", &synthetic_tokens());
        let mut foreign = encoded.clone();
        foreign[..4].copy_from_slice(b"\x89PNG");
        let err = decode_table(&foreign).unwrap_err();
        assert_eq!(
            err,
            TableError::BadMagic {
                found: b"\x89PNG".to_vec()
            }
        );
        assert!(
            err.to_string().starts_with("not a CCMT rank table"),
            "{err}"
        );
        assert!(matches!(
            decode_table(b"{\"o200k\""),
            Err(TableError::BadMagic { .. })
        ));
        assert!(matches!(
            decode_table(b"CC"),
            Err(TableError::TruncatedHeader { .. })
        ));

        // A version 1 table (the format before the use-ordered lists) is refused by name.
        encoded[4..6].copy_from_slice(&1u16.to_le_bytes());
        reseal(&mut encoded);
        let err = decode_table(&encoded).unwrap_err();
        assert_eq!(err, TableError::UnsupportedVersion { found: 1 });
        assert_eq!(
            err.to_string(),
            "unsupported CCMT table version 1: this build reads version 2; regenerate the table or update the code"
        );
    }

    #[test]
    fn refuses_a_name_that_is_not_utf8() {
        let mut encoded = encode_table("ab", &synthetic_tokens());
        encoded[PREFIX_LEN] = 0xc3;
        reseal(&mut encoded);
        assert_eq!(decode_table(&encoded), Err(TableError::InvalidName));
    }

    #[test]
    fn refuses_absurd_counts_before_allocating() {
        // Headers of a few dozen bytes that claim billions of tokens or bytes. Had the decoder
        // reserved memory for them first, these tests would abort instead of returning.
        let encoded = encode_table("t", &[b"a".to_vec()]);
        let at = counts_at("t");
        let with = |offset: usize, value: u32| {
            let mut data = encoded.clone();
            data[at + offset..at + offset + 4].copy_from_slice(&value.to_le_bytes());
            reseal(&mut data);
            data
        };
        assert_eq!(
            decode_table(&with(0, u32::MAX)),
            Err(TableError::TooManyTokens {
                count: u64::from(u32::MAX)
            })
        );
        assert_eq!(
            decode_table(&with(4, u32::MAX)),
            Err(TableError::TooManyBytes {
                total: u64::from(u32::MAX)
            })
        );
        // Within the limits but not backed by data: refused as truncated.
        let err = decode_table(&with(0, MAX_TOKENS as u32)).unwrap_err();
        assert_eq!(
            err,
            TableError::Truncated {
                // Two code bytes per token and the one raw byte; the table holds three bytes.
                expected: MAX_TOKENS as u64 * 2 + 1,
                found: 3,
            }
        );
        let err = decode_table(&with(8, u32::MAX)).unwrap_err();
        assert!(matches!(err, TableError::Truncated { .. }), "{err}");
    }

    #[test]
    fn refuses_inconsistent_content_with_a_valid_checksum() {
        // Tokens 0 and 1 are raw, token 2 is the pair (0, 1): place 0 of the left list and
        // place 1 of the right list, values small enough to need no low bits.
        let tokens = [b"a".to_vec(), b"b".to_vec(), b"ab".to_vec()];
        let encoded = encode_table("t", &tokens);
        let payload_at = counts_at("t") + COUNTS_LEN;
        let n = 3;
        // The code byte of the left (side 0) or right (side 1) value of rank `rank`.
        let at = |side: usize, rank: usize| payload_at + side * n + rank;
        let edited = |edits: &[(usize, u8)]| {
            let mut data = encoded.clone();
            for &(offset, value) in edits {
                data[offset] = value;
            }
            reseal(&mut data);
            decode_table(&data)
        };
        assert_eq!(
            (encoded[at(0, 2)], encoded[at(1, 2)]),
            (1, 1),
            "token 2 refers to place 0 on the left (left value 1) and place 1 on the right"
        );
        assert_eq!(
            edited(&[(at(0, 2), 3)]),
            Err(TableError::ForwardReference { rank: 2, place: 2 })
        );
        assert_eq!(
            edited(&[(at(1, 2), 15)]),
            Err(TableError::ForwardReference { rank: 2, place: 15 })
        );
        let err = edited(&[(at(1, 2), 200)]).unwrap_err();
        assert_eq!(err, TableError::InvalidCode { rank: 2, code: 200 });
        assert_eq!(
            err.to_string(),
            "table is corrupt: token 2 has the value code 200, above the highest valid code 183"
        );
        // A code that needs low bits, in a table that has none.
        assert_eq!(
            edited(&[(at(1, 2), 16)]),
            Err(TableError::ByteCountMismatch {
                what: "low-bit bytes",
                declared: 0,
                actual: 1
            })
        );
        assert_eq!(
            edited(&[(at(1, 1), 5)]),
            Err(TableError::RawOverrun {
                rank: 1,
                len: 5,
                available: 1
            })
        );
        // Token 1 claims no raw bytes: one raw byte is left over.
        assert!(matches!(
            edited(&[(at(1, 1), 0), (at(1, 2), 0)]),
            Err(TableError::ByteCountMismatch {
                what: "raw bytes",
                ..
            })
        ));
        // A header total that disagrees with the tokens, both ways.
        let total_at = counts_at("t") + 4;
        assert!(matches!(
            edited(&[(total_at, 3)]),
            Err(TableError::ByteCountMismatch {
                what: "token bytes",
                ..
            })
        ));
        assert!(matches!(
            edited(&[(total_at, 5)]),
            Err(TableError::ByteCountMismatch {
                what: "token bytes",
                ..
            })
        ));
    }

    #[test]
    fn refuses_low_bits_that_the_codes_do_not_use() {
        let encoded = encode_table("synthetic", &synthetic_tokens());
        let low_len_at = counts_at("synthetic") + 12;
        let low_len = u32::from_le_bytes(encoded[low_len_at..low_len_at + 4].try_into().unwrap());
        assert!(low_len > 0, "places above 15 need low bits");
        // One more byte of low bits than the codes read: the header and the length agree, so
        // only the decoder can notice.
        let low_end = counts_at("synthetic") + COUNTS_LEN + low_len as usize;
        let mut longer = encoded[..low_end].to_vec();
        longer.push(0);
        longer.extend_from_slice(&encoded[low_end..]);
        longer[low_len_at..low_len_at + 4].copy_from_slice(&(low_len + 1).to_le_bytes());
        reseal(&mut longer);
        assert_eq!(
            decode_table(&longer),
            Err(TableError::ByteCountMismatch {
                what: "low-bit bytes",
                declared: u64::from(low_len) + 1,
                actual: u64::from(low_len),
            })
        );
    }

    #[test]
    fn value_codes_round_trip_at_every_magnitude() {
        let mut values: Vec<u32> = (0..64).collect();
        for bits in 5..=25 {
            let low = 1u32 << (bits - 1);
            values.extend([low, low + 1, low | (low >> 1), (low << 1) - 1]);
        }
        let mut writer = BitWriter::default();
        let mut codes = Vec::new();
        for &value in &values {
            let (code, low_len) = value_code(value);
            assert!(code <= MAX_CODE, "{value} has code {code}");
            assert_eq!(low_len == 0, value < DIRECT_CODES, "{value}");
            codes.push(code);
            writer.write(value, low_len);
        }
        let bytes = writer.finish();
        let mut reader = BitReader::new(&bytes);
        for (&value, &code) in values.iter().zip(&codes) {
            let read = read_value(code, &mut reader, 0, bytes.len()).expect("decodes");
            assert_eq!(read, value as usize, "code {code}");
        }
        assert!(reader.is_used_up());
        assert_eq!(value_code((1 << 25) - 1).0, MAX_CODE);
    }

    #[test]
    fn use_order_keeps_the_most_used_first() {
        let mut order = UseOrder::tracking_places(8);
        for rank in 0..5 {
            order.push(rank);
        }
        // Rank 3 used once: it swaps with the first unused token, rank 0.
        assert_eq!(order.use_rank(3), 3);
        assert_eq!(order.ranks(), [3, 1, 2, 0, 4]);
        // Rank 4, then rank 3 again: 4 joins the tokens used once, 3 leads alone.
        assert_eq!(order.use_rank(4), 4);
        assert_eq!(order.ranks(), [3, 4, 2, 0, 1]);
        assert_eq!(order.use_rank(3), 0);
        assert_eq!(order.ranks(), [3, 4, 2, 0, 1]);
        assert_eq!(order.use_rank(4), 1);
        // Now used as often as 3, and once more: it passes 3.
        assert_eq!(order.use_rank(4), 1);
        assert_eq!(order.ranks(), [4, 3, 2, 0, 1]);
        let uses: Vec<(u32, u32)> = order.entries.iter().map(|e| (e.rank, e.uses)).collect();
        assert_eq!(uses, [(4, 3), (3, 2), (2, 0), (0, 0), (1, 0)]);
        // The decoder's list, which reads places instead of ranks, follows the same steps.
        let mut decoder = UseOrder::new(8);
        for rank in 0..5 {
            decoder.push(rank);
        }
        for place in [3, 4, 0, 1, 1] {
            decoder.take(place, 9).expect("in the list");
        }
        assert_eq!(decoder.ranks(), order.ranks());
        assert_eq!(
            decoder.take(5, 9),
            Err(TableError::ForwardReference { rank: 9, place: 5 })
        );
    }

    #[test]
    fn checksum_detects_single_word_changes_anywhere() {
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let base = checksum(b"head", &payload);
        assert_ne!(base, checksum(b"heae", &payload));
        for at in 0..payload.len() {
            let mut changed = payload.clone();
            changed[at] ^= 0x80;
            assert_ne!(checksum(b"head", &changed), base, "byte {at}");
        }
        // Appended zeros are not invisible.
        let mut longer = payload.clone();
        longer.push(0);
        assert_ne!(checksum(b"head", &longer), base);
    }

    #[test]
    fn errors_describe_the_problem() {
        let err = TableError::ChecksumMismatch {
            stored: 1,
            computed: 2,
        };
        assert_eq!(
            err.to_string(),
            "table is corrupt: checksum 0000000000000002 does not match the stored 0000000000000001"
        );
        let _: &dyn std::error::Error = &err;
    }
}
