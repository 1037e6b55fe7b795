//! # ccm-tokens-wasm
//!
//! Exact token counts for JavaScript (every count equals tiktoken's), in a module that stays
//! small because the rank tables are not inside it: a host loads a table once per encoding,
//! and the first count after that is immediate.
//!
//! - Browsers: `await loadEncoding("o200k_base", { onProgress })` fetches
//!   `tables/o200k_base.ccmt` from the package (the npm glue supplies the URL and calls
//!   [`load_encoding_from`]); `countTokens` before that throws an error saying so.
//! - Node: the package's glue registers a synchronous loader ([`set_table_loader`]) that reads
//!   the table file, so `countTokens` works at once.
//! - Anywhere: [`install_encoding`] takes the table's bytes directly.
//!
//! The engine module (`ccm-wasm`) links this crate, so the same functions are exported there
//! and the engine's exact counter finds the same installed tables.

use ccm_tokens::{Encoding, Tokenizer};
use js_sys::{Function, JsString, Reflect, Uint8Array};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// A JavaScript `Error` with a `code` property (`argument`, `table`, `network`), the same
/// convention as the engine module's errors.
fn failure(code: &str, message: impl AsRef<str>) -> JsValue {
    let error = js_sys::Error::new(message.as_ref());
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(&error, &"code".into(), &code.into());
    error.into()
}

/// How a value's type reads in an error message: "a number", "null", "an array", ...
/// Public so the engine module (ccm-wasm), which links this crate, words its argument errors
/// the same way from the same code.
pub fn describe_type(value: &JsValue) -> String {
    if value.is_null() {
        return "null".to_string();
    }
    if js_sys::Array::is_array(value) {
        return "an array".to_string();
    }
    match value.js_typeof().as_string().as_deref() {
        Some("undefined") => "undefined".to_string(),
        Some("object") => "an object".to_string(),
        Some("bigint") => "a BigInt".to_string(),
        Some(kind) => format!("a {kind}"),
        None => "a value of unknown type".to_string(),
    }
}

/// The `argument` error for `function`'s argument `name` of the wrong type.
fn wrong_type(function: &str, name: &str, expected: &str, value: &JsValue) -> JsValue {
    failure(
        "argument",
        format!(
            "{function}: {name} must be {expected}, got {}",
            describe_type(value)
        ),
    )
}

/// The longest text `countTokens` counts, in characters (`string.length`): counting a text of
/// one repeated character needs tens of bytes of working memory per character, and sixteen
/// million characters is what the module's memory holds with room to spare. Longer texts are
/// refused before anything is copied, with `code: "too_large"`.
pub const MAX_COUNT_CHARS: u32 = 16_000_000;

/// A string argument, refused (before it is copied) when it is not a string or longer than
/// `max_chars`.
fn string_arg(
    function: &str,
    name: &str,
    value: &JsValue,
    max_chars: u32,
) -> Result<JsString, JsValue> {
    let Some(text) = value.dyn_ref::<JsString>() else {
        return Err(wrong_type(function, name, "a string", value));
    };
    if text.length() > max_chars {
        return Err(failure(
            "too_large",
            format!(
                "{function}: {name} is {} characters long, more than the limit of {max_chars}; split it and add the counts",
                text.length()
            ),
        ));
    }
    Ok(text.clone())
}

/// An encoding name argument: a string naming one of the encodings.
fn encoding_arg(function: &str, value: &JsValue) -> Result<Encoding, JsValue> {
    // No encoding name is longer than a few characters; a long string is simply unknown.
    let name = string_arg(function, "encoding", value, 64).map_err(|error| {
        if value.is_string() {
            failure(
                "argument",
                format!("{function}: unknown encoding; supported: o200k_base, cl100k_base"),
            )
        } else {
            error
        }
    })?;
    encoding_named(&String::from(name))
}

/// The encoding named `name`, or an `argument` error listing the names there are.
fn encoding_named(name: &str) -> Result<Encoding, JsValue> {
    Encoding::from_name(name).ok_or_else(|| {
        failure(
            "argument",
            format!("unknown encoding '{name}'; supported: o200k_base, cl100k_base"),
        )
    })
}

#[wasm_bindgen(typescript_custom_section)]
const ENCODING_TS: &str = r#"
/** A tokenizer encoding with a rank table in this package. */
export type Encoding = "o200k_base" | "cl100k_base";
/** The progress of loading a table: bytes while downloading, then tokens while parsing. */
export type LoadProgress = (done: number, total: number, phase: "download" | "parse") => void;
/** A synchronous source of an encoding's `.ccmt` bytes (see `setTableLoader`). */
export type TableLoader = (encoding: Encoding) => Uint8Array;
"#;

thread_local! {
    /// The host's synchronous table loader (Node registers one that reads the package's file).
    static TABLE_LOADER: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers `loader(encodingName) => Uint8Array` to be called the first time an encoding is
/// needed and not installed. The npm package registers one in Node; a host may register its
/// own (any synchronous source of the `.ccmt` bytes).
#[wasm_bindgen(js_name = setTableLoader)]
pub fn set_table_loader(
    #[wasm_bindgen(unchecked_param_type = "TableLoader")] loader: JsValue,
) -> Result<(), JsValue> {
    let loader = loader
        .dyn_into::<Function>()
        .map_err(|value| wrong_type("setTableLoader", "loader", "a function", &value))?;
    TABLE_LOADER.with(|slot| *slot.borrow_mut() = Some(loader));
    Ok(())
}

/// Installs `encoding`'s rank table from the bytes of its `.ccmt` file. Installing an encoding
/// that is already installed does nothing.
///
/// # Errors
/// An `argument` error for an unknown encoding; a `table` error (nothing installed) when the
/// bytes are not that encoding's table, with what is wrong with them.
#[wasm_bindgen(js_name = installEncoding)]
pub fn install_encoding(
    #[wasm_bindgen(unchecked_param_type = "Encoding")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array")] table: JsValue,
) -> Result<(), JsValue> {
    let encoding = encoding_arg("installEncoding", &encoding)?;
    let table = table
        .dyn_into::<Uint8Array>()
        .map_err(|value| wrong_type("installEncoding", "table", "a Uint8Array", &value))?;
    // The largest table is under 4 MB; anything far larger is not a table and is refused
    // before it is copied.
    if table.length() > MAX_TABLE_BYTES {
        return Err(failure(
            "too_large",
            format!(
                "installEncoding: table is {} bytes, more than any rank table ({MAX_TABLE_BYTES})",
                table.length()
            ),
        ));
    }
    ccm_tokens::install(encoding, &table.to_vec())
        .map(|_| ())
        .map_err(|e| failure("table", table_problem(encoding, &e)))
}

/// What is wrong with a table a host gave for `encoding`, as every loading path says it.
fn table_problem(encoding: Encoding, error: &ccm_tokens::LoadError) -> String {
    format!("cannot use the {encoding} table: {error}")
}

/// Whether `encoding`'s table is ready (compiled in or installed), so counting will not load.
///
/// # Errors
/// An `argument` error for an unknown encoding.
#[wasm_bindgen(js_name = encodingLoaded)]
pub fn encoding_loaded(
    #[wasm_bindgen(unchecked_param_type = "Encoding")] encoding: JsValue,
) -> Result<bool, JsValue> {
    let encoding = encoding_arg("encodingLoaded", &encoding)?;
    Ok(ccm_tokens::is_installed(encoding) || ccm_tokens::embedded_table(encoding).is_some())
}

/// The tokenizer for `encoding`: installed, compiled in, or loaded now with the registered
/// loader. The error says how to load the table when none of these is possible.
pub fn ensure_tokenizer(encoding: Encoding) -> Result<&'static Tokenizer, String> {
    if let Some(tokenizer) = ccm_tokens::tokenizer(encoding) {
        return Ok(tokenizer);
    }
    let loader = TABLE_LOADER.with(|slot| slot.borrow().clone());
    let Some(loader) = loader else {
        return Err(format!(
            "the {encoding} rank table is not loaded yet: `await loadEncoding(\"{encoding}\")` once before counting (it downloads {encoding}.ccmt from the package)"
        ));
    };
    let bytes = loader
        .call1(&JsValue::UNDEFINED, &encoding.name().into())
        .map_err(|e| format!("the table loader failed for {encoding}: {}", describe(&e)))?;
    let bytes = bytes.dyn_into::<Uint8Array>().map_err(|value| {
        format!(
            "the table loader returned {} instead of a Uint8Array for {encoding}",
            describe(&value)
        )
    })?;
    ccm_tokens::install(encoding, &bytes.to_vec()).map_err(|e| table_problem(encoding, &e))
}

/// Makes sure a session can count with `encoding`: the whole table or its common-scripts part
/// is installed (a host that installs only the part loads the whole table before it hands over
/// text in other scripts), else the whole table is loaded as [`ensure_tokenizer`] does.
///
/// # Errors
/// As [`ensure_tokenizer`].
pub fn ensure_counting_table(encoding: Encoding) -> Result<(), String> {
    if ccm_tokens::best_tokenizer(encoding).is_some() {
        return Ok(());
    }
    ensure_tokenizer(encoding).map(|_| ())
}

/// A short description of a thrown or returned JavaScript value for an error message.
fn describe(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    value.as_string().unwrap_or_else(|| describe_type(value))
}

/// The exact number of tokens of `text` in `encoding` (`"o200k_base"` or `"cl100k_base"`),
/// special-token markers counted as ordinary text: always equal to tiktoken's count.
///
/// # Errors
/// An `argument` error for an unknown encoding; a `table` error when the encoding's table is
/// not loaded and cannot be (in browsers: `await loadEncoding(encoding)` first).
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding")] encoding: JsValue,
) -> Result<u32, JsValue> {
    let text = string_arg("countTokens", "text", &text, MAX_COUNT_CHARS)?;
    let encoding = encoding_arg("countTokens", &encoding)?;
    let tokenizer = ensure_tokenizer(encoding).map_err(|m| failure("table", m))?;
    let count = with_utf8(&text, |text| tokenizer.count(text));
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

#[wasm_bindgen]
extern "C" {
    /// The platform's `TextEncoder` (browsers, workers and Node all have it).
    type Utf8Encoder;

    #[wasm_bindgen(constructor, js_class = "TextEncoder")]
    fn new() -> Utf8Encoder;

    #[wasm_bindgen(method, js_class = "TextEncoder", js_name = encodeInto)]
    fn encode_into(this: &Utf8Encoder, source: &JsString, destination: &Uint8Array) -> JsValue;
}

thread_local! {
    static ENCODER: Utf8Encoder = Utf8Encoder::new();
}

/// Texts shorter than this (in UTF-16 units) are copied by wasm-bindgen's own conversion,
/// which is quicker for small strings.
const DIRECT_ENCODE_FROM: u32 = 1024;

/// Calls `f` with `text` as UTF-8. Long texts are encoded by `TextEncoder.encodeInto` straight
/// into this module's memory: wasm-bindgen's conversion copies ASCII one character at a time
/// in JavaScript, which was 14% of counting a megabyte of code.
fn with_utf8<R>(text: &JsString, f: impl FnOnce(&str) -> R) -> R {
    let units = text.length();
    if units < DIRECT_ENCODE_FROM {
        return f(&String::from(text));
    }
    // Each UTF-16 unit becomes at most three bytes of UTF-8.
    let capacity = units as usize * 3;
    let mut bytes: Vec<u8> = Vec::with_capacity(capacity);
    let written = ENCODER.with(|encoder| {
        // SAFETY: the view covers exactly the vector's allocated capacity, and nothing
        // allocates in this module (which could move or grow its memory) until the view is
        // dropped at the end of this closure.
        let view = unsafe { Uint8Array::view_mut_raw(bytes.as_mut_ptr(), capacity) };
        let result = encoder.encode_into(text, &view);
        Reflect::get(&result, &"written".into())
            .ok()
            .and_then(|w| w.as_f64())
            .map_or(0, |w| (w as usize).min(capacity))
    });
    // SAFETY: encodeInto wrote `written` bytes at the start of the allocation.
    unsafe { bytes.set_len(written) };
    match std::str::from_utf8(&bytes) {
        Ok(utf8) => f(utf8),
        // encodeInto always writes UTF-8 (lone surrogates become U+FFFD), so this is only a
        // guard; the slower conversion gives the same text.
        Err(_) => f(&String::from(text)),
    }
}

/// Downloads `encoding`'s table from `url` and installs it, reporting progress to
/// `onProgress(done, total, phase)`: bytes during `"download"` (total 0 when the server sends
/// no length), tokens during `"parse"`. Resolves at once when the encoding is already loaded.
/// The npm package's `loadEncoding(encoding, options)` calls this with the package's URL.
///
/// # Errors
/// An `argument` error for an unknown encoding; a `network` error when the fetch fails or
/// answers with an HTTP error (the message has the status and URL); a `table` error when the
/// bytes are not the encoding's table. Nothing is installed after an error.
#[wasm_bindgen(js_name = loadEncodingFrom)]
pub async fn load_encoding_from(
    #[wasm_bindgen(unchecked_param_type = "Encoding")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
    #[wasm_bindgen(js_name = onProgress, unchecked_optional_param_type = "LoadProgress")]
    on_progress: JsValue,
) -> Result<(), JsValue> {
    let encoding = encoding_arg("loadEncodingFrom", &encoding)?;
    let url = String::from(string_arg("loadEncodingFrom", "url", &url, 100_000)?);
    let on_progress =
        if on_progress.is_undefined() || on_progress.is_null() {
            None
        } else {
            Some(on_progress.dyn_into::<Function>().map_err(|value| {
                wrong_type("loadEncodingFrom", "onProgress", "a function", &value)
            })?)
        };
    load_from_url(encoding, &url, &|done, total, phase| {
        if let Some(callback) = &on_progress {
            // A throwing progress callback must not abort the load; its error is dropped.
            let _ = callback.call3(
                &JsValue::UNDEFINED,
                &(done as f64).into(),
                &(total as f64).into(),
                &phase.into(),
            );
        }
    })
    .await
}

/// Whether `text` can be counted exactly for `encoding` with the tables installed now. A host
/// may install the common-scripts part of a table first (see `ccm_tokens::coverage`); text in
/// other scripts then needs the whole table.
pub fn counts_exactly(encoding: Encoding, text: &str) -> bool {
    ccm_tokens::tokenizer_for(encoding, text).is_some()
}

/// Whether the whole table of `encoding` is installed or compiled in.
pub fn whole_table_loaded(encoding: Encoding) -> bool {
    ccm_tokens::tokenizer(encoding).is_some()
}

/// [`load_encoding_from`] for Rust callers (the app): downloads `encoding`'s table from `url`
/// and installs it, reporting `(done, total, phase)` as it goes. The file may be the whole
/// table or its common-scripts part (its header says which); nothing is downloaded once the
/// whole table is installed.
///
/// # Errors
/// As [`load_encoding_from`]: a JavaScript `Error` with `code` `network` or `table`.
pub async fn load_from_url(
    encoding: Encoding,
    url: &str,
    report: &dyn Fn(usize, usize, &str),
) -> Result<(), JsValue> {
    if ccm_tokens::tokenizer(encoding).is_some() {
        return Ok(());
    }
    let bytes = download(url, report).await?;
    // Let the page paint and take input between the download and the parse, and between
    // steps of the parse: nothing runs longer than a few milliseconds at a time.
    yield_to_event_loop().await;
    let mut build = Tokenizer::build_in_steps(encoding, &bytes)
        .map_err(|e| failure("table", table_problem(encoding, &e)))?;
    drop(bytes);
    while !build.is_done() {
        let (done, total) = build.step(PARSE_STEP_TOKENS);
        report(done, total, "parse");
        yield_to_event_loop().await;
    }
    ccm_tokens::install_tokenizer(build.finish());
    Ok(())
}

/// The largest `.ccmt` file `installEncoding` takes (the o200k_base table is about 2 MB).
const MAX_TABLE_BYTES: u32 = 64 * 1024 * 1024;

/// Tokens indexed between two yields to the event loop (a few milliseconds of work in wasm).
const PARSE_STEP_TOKENS: usize = 32_768;

/// Fetches `url` into memory, reading the body chunk by chunk to report progress.
async fn download(url: &str, report: &dyn Fn(usize, usize, &str)) -> Result<Vec<u8>, JsValue> {
    let network = |what: String| failure("network", format!("cannot load {url}: {what}"));
    let fetch = Reflect::get(&js_sys::global(), &"fetch".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| network("this environment has no fetch".into()))?;
    let response = fetch
        .call1(&JsValue::UNDEFINED, &url.into())
        .map_err(|e| network(describe(&e)))?;
    let response = JsFuture::from(js_sys::Promise::resolve(&response))
        .await
        .map_err(|e| network(describe(&e)))?
        .dyn_into::<web_sys::Response>()
        .map_err(|_| network("fetch did not return a Response".into()))?;
    if !response.ok() {
        return Err(network(format!(
            "HTTP {} {}",
            response.status(),
            response.status_text()
        )));
    }
    let total = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let Some(body) = response.body() else {
        return Ok(Vec::new());
    };
    let reader = body
        .get_reader()
        .dyn_into::<web_sys::ReadableStreamDefaultReader>()
        .map_err(|_| network("the body has no default reader".into()))?;
    let mut bytes = Vec::with_capacity(total);
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| network(describe(&e)))?;
        let done = Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into::<Uint8Array>().ok())
            .ok_or_else(|| network("the body gave a chunk that is not bytes".into()))?;
        let start = bytes.len();
        bytes.resize(start + value.length() as usize, 0);
        value.copy_to(&mut bytes[start..]);
        report(bytes.len(), total, "download");
    }
    Ok(bytes)
}

/// Resolves on the next macrotask, so a long load does not hold the event loop in one piece.
async fn yield_to_event_loop() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let set_timeout = Reflect::get(&js_sys::global(), &"setTimeout".into())
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        match set_timeout {
            Some(set_timeout) => {
                let _ = set_timeout.call2(&JsValue::UNDEFINED, &resolve, &0.into());
            }
            None => {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
        }
    });
    let _ = JsFuture::from(promise).await;
}
