//! `ccm-tables`: writes the committed rank tables (`tables/*.ccmt`) from tiktoken-rs.
//!
//! ```text
//! cargo run --release -p ccm-tokens --features generate --bin ccm-tables -- crates/ccm-tokens/tables
//! ```
//!
//! For every encoding it takes each ordinary token from tiktoken-rs by rank, writes the table,
//! reads the written file back and checks that it decodes to exactly those tokens, then prints
//! the token count, the file size and, when Node.js is on the PATH, the brotli size (the tables
//! are downloaded, so that is the size that matters).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use ccm_tokens::coverage::{common_scripts_part, COMMON_SCRIPTS_SUFFIX};
use ccm_tokens::table::{decode_table, encode_table};
use tiktoken_rs::{CoreBPE, Rank};

/// An encoding to write, with the ordinary vocabulary size we expect from tiktoken-rs. The
/// expected size guards against a tiktoken-rs update that silently changes a vocabulary.
struct Encoding {
    name: &'static str,
    load: fn() -> Result<CoreBPE, String>,
    expected_tokens: usize,
    /// Whether to write the common-scripts part too (`<name>.common.ccmt`), which the app
    /// loads first (see `ccm_tokens::coverage`).
    common_scripts_part: bool,
}

const ENCODINGS: [Encoding; 2] = [
    Encoding {
        name: "o200k_base",
        load: || tiktoken_rs::o200k_base().map_err(|e| e.to_string()),
        expected_tokens: 199_998,
        common_scripts_part: true,
    },
    Encoding {
        name: "cl100k_base",
        load: || tiktoken_rs::cl100k_base().map_err(|e| e.to_string()),
        expected_tokens: 100_256,
        common_scripts_part: false,
    },
];

/// Ranks above every known vocabulary; ranks are probed up to here so that an ordinary token
/// placed after the special tokens would not be missed.
const SCAN_LIMIT: Rank = 1 << 20;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out_dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: ccm-tables <out-dir>");
        eprintln!("writes o200k_base.ccmt and cl100k_base.ccmt into <out-dir>");
        return ExitCode::FAILURE;
    };
    let out_dir = PathBuf::from(out_dir);
    for encoding in &ENCODINGS {
        if let Err(message) = write_encoding(encoding, &out_dir) {
            eprintln!("ccm-tables: {}: {message}", encoding.name);
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn write_encoding(encoding: &Encoding, out_dir: &Path) -> Result<(), String> {
    let bpe = (encoding.load)()?;
    let tokens = ordinary_tokens(&bpe)?;
    if tokens.len() != encoding.expected_tokens {
        return Err(format!(
            "tiktoken-rs has {} ordinary tokens, expected {}; check the vocabulary before updating the expectation",
            tokens.len(),
            encoding.expected_tokens
        ));
    }

    write_table(
        &out_dir.join(format!("{}.ccmt", encoding.name)),
        encoding.name,
        &tokens,
    )?;
    if encoding.common_scripts_part {
        let name = format!("{}{COMMON_SCRIPTS_SUFFIX}", encoding.name);
        let part = common_scripts_part(&tokens);
        let kept = part.iter().filter(|token| !token.is_empty()).count();
        println!(
            "common-scripts part of {}: {kept} of {} tokens",
            encoding.name,
            tokens.len()
        );
        write_table(
            &out_dir.join(format!("{}.common.ccmt", encoding.name)),
            &name,
            &part,
        )?;
    }
    Ok(())
}

/// Writes `tokens` as the table `name` to `path`, reads the file back, checks it token by
/// token and prints its sizes.
fn write_table(path: &Path, name: &str, tokens: &[Vec<u8>]) -> Result<(), String> {
    let encoded = encode_table(name, tokens);
    std::fs::write(path, &encoded).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    // Check the file as it is on disk, which is what gets committed.
    let written =
        std::fs::read(path).map_err(|e| format!("cannot read back {}: {e}", path.display()))?;
    let decoded = decode_table(&written).map_err(|e| format!("{}: {e}", path.display()))?;
    if decoded.name != name {
        return Err(format!("the written table is named {:?}", decoded.name));
    }
    if decoded.len() != tokens.len() {
        return Err(format!(
            "the written table has {} tokens instead of {}",
            decoded.len(),
            tokens.len()
        ));
    }
    if let Some(rank) = (0..tokens.len()).find(|&r| decoded.token(r) != Some(&tokens[r][..])) {
        return Err(format!(
            "the written table differs from tiktoken-rs at rank {rank}"
        ));
    }

    let token_bytes: usize = tokens.iter().map(Vec::len).sum();
    let brotli = match brotli_size(path) {
        Ok(size) => format!("{size} bytes brotli (quality 11)"),
        Err(why) => format!("brotli size unavailable ({why})"),
    };
    println!(
        "{}: {} tokens, {token_bytes} token bytes, {} bytes raw, {brotli}; verified against tiktoken-rs",
        path.display(),
        tokens.len(),
        encoded.len()
    );
    Ok(())
}

/// Every ordinary token of `bpe`, indexed by rank. Special tokens such as `<|endoftext|>` are
/// not part of the table: the tokenizer handles them separately.
///
/// tiktoken-rs exposes no list of its vocabulary, but `decode_bytes` of a single rank returns
/// that token, ordinary or special, and fails for a rank that has none. So every rank up to
/// [`SCAN_LIMIT`] is probed and the special ranks are left out. A rank below the highest
/// ordinary one that has no token is a gap: it is written as an empty token (which no text can
/// match) and reported, because the tokenizer must then not assume contiguous ranks.
fn ordinary_tokens(bpe: &CoreBPE) -> Result<Vec<Vec<u8>>, String> {
    let special: HashSet<Rank> = bpe
        .special_tokens()
        .into_iter()
        .flat_map(|token| bpe.encode_with_special_tokens(token))
        .collect();
    let mut found = BTreeMap::new();
    for rank in 0..SCAN_LIMIT {
        if special.contains(&rank) {
            continue;
        }
        if let Ok(bytes) = bpe.decode_bytes(&[rank]) {
            if bytes.is_empty() {
                return Err(format!("rank {rank} is an empty token"));
            }
            found.insert(rank, bytes);
        }
    }
    let count = found
        .last_key_value()
        .map_or(0, |(&rank, _)| rank as usize + 1);
    let mut tokens = vec![Vec::new(); count];
    let mut gaps = Vec::new();
    for (rank, slot) in tokens.iter_mut().enumerate() {
        match found.remove(&(rank as Rank)) {
            Some(bytes) => *slot = bytes,
            None => gaps.push(rank),
        }
    }
    if !gaps.is_empty() {
        eprintln!(
            "warning: {} ranks have no ordinary token and are written as empty tokens: {gaps:?}",
            gaps.len()
        );
    }
    Ok(tokens)
}

/// The size of `path` compressed with brotli at quality 11, computed by Node.js (which ships
/// brotli) so that the generator needs no compression crate.
fn brotli_size(path: &Path) -> Result<usize, String> {
    const SCRIPT: &str = "const z = require('zlib');\
        const d = require('fs').readFileSync(process.argv[1]);\
        const p = {[z.constants.BROTLI_PARAM_QUALITY]: 11, [z.constants.BROTLI_PARAM_SIZE_HINT]: d.length};\
        console.log(z.brotliCompressSync(d, {params: p}).length);";
    let output = Command::new("node")
        .arg("-e")
        .arg(SCRIPT)
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "node failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("unexpected output from node: {e}"))
}
