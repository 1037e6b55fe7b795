//! Arguments as JavaScript hands them over, checked before anything reaches the core.
//!
//! wasm-bindgen trusts the declared Rust types: a number where a `&str` is declared is read as
//! a pointer into the module's memory and traps (`memory access out of bounds`), and `null` or
//! an array gives a TypeError without a `code`. So every exported function takes its arguments
//! as `JsValue` and converts each one here, where a wrong type becomes an `Error` with
//! `code: "argument"` naming the function and the argument in JavaScript's words
//! ("beginTurn: userText must be a string, got a number").
//!
//! Texts are also checked against their size limit here, from the string's length alone,
//! before a single byte is copied into the module: a text over the limit is refused with
//! `code: "too_large"` before any allocation or token counting, so no input can exhaust the
//! module's memory (which would abort it for every session on the page).

use crate::error::{Code, Failure};
use js_sys::{JsString, Object};
use wasm_bindgen::{JsCast, JsValue};

/// How long texts may be, in characters as JavaScript counts them (`string.length`, UTF-16
/// code units), which is known without copying the text. One character is at most three bytes
/// of UTF-8 inside the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A message: `beginTurn`, `endTurn`, `runTurn`'s text, a summary, a search query, a tool
    /// call's arguments.
    pub(crate) message_chars: u32,
    /// A name or an id: effort names and ids, session names and ids, pin targets, branch names.
    pub(crate) name_chars: u32,
    /// The text of one attachment.
    pub(crate) attachment_chars: u32,
}

/// A megabyte of text in one chat message is far beyond any real message (the longest of the
/// ShareGPT conversations the replay reads is under 400 KB) while still letting a person paste
/// a long log; anything longer belongs in an attachment.
pub(crate) const DEFAULT_MESSAGE_CHARS: u32 = 1_000_000;
/// Names are shown in banners and sent to the model in every context; a thousand characters
/// is a paragraph, far more than a name needs.
pub(crate) const DEFAULT_NAME_CHARS: u32 = 1_000;
/// Four million characters is a 4 MB text file (about a million tokens, several times the
/// largest context window); counting one takes about a second.
pub(crate) const DEFAULT_ATTACHMENT_CHARS: u32 = 4_000_000;
/// No limit can be set above this: counting a text of one repeated character needs tens of
/// bytes of working memory per character, and 16 million characters is what the module's
/// memory can hold with room to spare (160 million aborted it). It is the longest text a
/// session document may hold (`ccm_browser::document`), so it is defined there once.
pub(crate) const MAX_LIMIT_CHARS: u32 = ccm_browser::document::MAX_TEXT_CHARS as u32;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            message_chars: DEFAULT_MESSAGE_CHARS,
            name_chars: DEFAULT_NAME_CHARS,
            attachment_chars: DEFAULT_ATTACHMENT_CHARS,
        }
    }
}

/// Which limit a text is checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Size {
    /// [`Limits::message_chars`].
    Message,
    /// [`Limits::name_chars`].
    Name,
    /// [`Limits::attachment_chars`].
    Attachment,
    /// A fixed bound for texts that are neither (a document, an encoding name, a URL).
    Fixed(u32),
}

impl Size {
    fn bound(self, limits: &Limits) -> (u32, Option<&'static str>) {
        match self {
            Size::Message => (limits.message_chars, Some("maxMessageChars")),
            Size::Name => (limits.name_chars, Some("maxNameChars")),
            Size::Attachment => (limits.attachment_chars, Some("maxAttachmentChars")),
            Size::Fixed(bound) => (bound, None),
        }
    }
}

/// The largest integer JavaScript holds exactly (2^53 - 1).
pub(crate) const MAX_SAFE_INTEGER: u64 = ccm_browser::document::MAX_SAFE_INTEGER;

/// How a value's type reads in an error message: "a number", "null", "an array", ... (the
/// tokens module's wording, shared so both modules say it alike).
pub(crate) use ccm_tokens_wasm::describe_type as describe;

/// One argument of one exported function, for checking and for naming it in errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg<'a> {
    /// The function as JavaScript calls it (`beginTurn`, `SessionStore.open`).
    pub(crate) function: &'a str,
    /// The argument's name as the TypeScript declaration spells it (`userText`).
    pub(crate) name: &'a str,
}

/// Shorthand for an [`Arg`].
pub(crate) fn arg<'a>(function: &'a str, name: &'a str) -> Arg<'a> {
    Arg { function, name }
}

impl Arg<'_> {
    /// The `argument` error for a value of the wrong type.
    pub(crate) fn wrong_type(&self, expected: &str, value: &JsValue) -> Failure {
        Failure::new(
            Code::Argument,
            format!(
                "{}: {} must be {expected}, got {}",
                self.function,
                self.name,
                describe(value)
            ),
        )
    }

    /// A string, within its size limit.
    pub(crate) fn string(
        &self,
        value: &JsValue,
        size: Size,
        limits: &Limits,
    ) -> Result<String, Failure> {
        let Some(text) = value.dyn_ref::<JsString>() else {
            return Err(self.wrong_type("a string", value));
        };
        self.check_length(text.length(), size, limits)?;
        Ok(String::from(text))
    }

    /// A string or nothing (`undefined` or `null`).
    pub(crate) fn optional_string(
        &self,
        value: &JsValue,
        size: Size,
        limits: &Limits,
    ) -> Result<Option<String>, Failure> {
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        self.string(value, size, limits)
            .map_err(|failure| {
                if failure.code == Code::Argument {
                    self.wrong_type("a string or undefined", value)
                } else {
                    failure
                }
            })
            .map(Some)
    }

    /// Refuses a text of `length` characters over its limit, before it is copied.
    pub(crate) fn check_length(
        &self,
        length: u32,
        size: Size,
        limits: &Limits,
    ) -> Result<(), Failure> {
        let (bound, option) = size.bound(limits);
        if length <= bound {
            return Ok(());
        }
        let setting = option
            .map(|option| format!(" (the session option {option})"))
            .unwrap_or_default();
        Err(Failure::new(
            Code::TooLarge,
            format!(
                "{}: {} is {} characters long, more than the limit of {}{setting}; nothing was changed",
                self.function,
                self.name,
                thousands(u64::from(length)),
                thousands(u64::from(bound)),
            ),
        ))
    }

    /// A whole number in `min..=max`.
    pub(crate) fn whole_number(&self, value: &JsValue, min: u64, max: u64) -> Result<u64, Failure> {
        let Some(number) = value.as_f64() else {
            return Err(self.wrong_type("a whole number", value));
        };
        if number.fract() != 0.0
            || !number.is_finite()
            || number < min as f64
            || number > max as f64
        {
            return Err(Failure::new(
                Code::Argument,
                format!(
                    "{}: {} must be a whole number from {} to {}, got {number}",
                    self.function,
                    self.name,
                    thousands(min),
                    thousands(max)
                ),
            ));
        }
        Ok(number as u64)
    }

    /// A whole number in `min..=max`, or nothing (`undefined` or `null`).
    pub(crate) fn optional_whole_number(
        &self,
        value: &JsValue,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, Failure> {
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        self.whole_number(value, min, max).map(Some)
    }

    /// A plain object whose keys are all in `known` (or nothing: `undefined` or `null`), none
    /// of whose string values is longer than `max_string` characters. serde-wasm-bindgen reads
    /// only the fields a struct declares, so a misspelt key would be ignored silently; this
    /// refuses it, naming it and the keys there are.
    pub(crate) fn options_object(
        &self,
        value: &JsValue,
        known: &[&str],
        max_string: u32,
    ) -> Result<Option<Object>, Failure> {
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        if !value.is_object() || js_sys::Array::is_array(value) || value.is_function() {
            return Err(self.wrong_type("an object", value));
        }
        let object: Object = value.clone().unchecked_into();
        for key in Object::keys(&object).iter() {
            let key = key.as_string().unwrap_or_default();
            if !known.contains(&key.as_str()) {
                return Err(Failure::new(
                    Code::Argument,
                    format!(
                        "{}: unknown key `{key}` in {}; the keys are {}",
                        self.function,
                        self.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        self.check_string_fields(&object, max_string)?;
        Ok(Some(object))
    }

    /// Refuses an object one of whose string fields is longer than `max_string` characters,
    /// before serde copies it into the module.
    pub(crate) fn check_string_fields(
        &self,
        object: &Object,
        max_string: u32,
    ) -> Result<(), Failure> {
        for key in Object::keys(object).iter() {
            let field = js_sys::Reflect::get(object, &key).unwrap_or_default();
            if let Some(text) = field.dyn_ref::<JsString>() {
                let name = format!("{}.{}", self.name, key.as_string().unwrap_or_default());
                arg(self.function, &name).check_length(
                    text.length(),
                    Size::Fixed(max_string),
                    &Limits::default(),
                )?;
            }
        }
        Ok(())
    }

    /// Checks the types of an options object's fields before serde reads them, so that a
    /// wrong one is named in JavaScript's words ("options.decayThreshold must be a number, got
    /// a string") rather than serde's. `fields` pairs each key with what it must be:
    /// [`Field::Number`], [`Field::String`], [`Field::Boolean`] or [`Field::StringMap`].
    /// `undefined` counts as not given.
    pub(crate) fn check_field_types(
        &self,
        object: &Object,
        fields: &[(&str, Field)],
    ) -> Result<(), Failure> {
        for (key, field) in fields {
            let value = js_sys::Reflect::get(object, &JsValue::from_str(key)).unwrap_or_default();
            if value.is_undefined() {
                continue;
            }
            let (fits, expected) = match field {
                Field::Number => (value.as_f64().is_some(), "a number"),
                Field::StringOrObject => (
                    value.is_string()
                        || (value.is_object()
                            && !js_sys::Array::is_array(&value)
                            && !value.is_function()),
                    "a string or an object",
                ),
                Field::Budget => (
                    value.as_f64().is_some() || value.is_string(),
                    "a number or \"none\"",
                ),
                Field::String => (value.is_string(), "a string"),
                Field::Boolean => (value.as_bool().is_some(), "a boolean"),
                Field::StringMap => (
                    value.is_object()
                        && !js_sys::Array::is_array(&value)
                        && Object::values(value.unchecked_ref::<Object>())
                            .iter()
                            .all(|v| v.is_string()),
                    "an object of strings",
                ),
            };
            if !fits {
                let name = format!("{}.{key}", self.name);
                return Err(arg(self.function, &name).wrong_type(expected, &value));
            }
        }
        Ok(())
    }

    /// A function (a callback), or nothing.
    pub(crate) fn optional_function(
        &self,
        value: &JsValue,
    ) -> Result<Option<js_sys::Function>, Failure> {
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        value
            .dyn_ref::<js_sys::Function>()
            .cloned()
            .map(Some)
            .ok_or_else(|| self.wrong_type("a function", value))
    }
}

/// What a field of an options object must be (see [`Arg::check_field_types`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    /// A number (whole or not; ranges are checked where it is read).
    Number,
    /// A token budget: a number, or the word `"none"` for no budget (checked where it is read).
    Budget,
    /// A name or an object of fields (`compaction`).
    StringOrObject,
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// A plain object whose values are strings (`headers`).
    StringMap,
}

/// A token counter argument (`{ name, count(text) }`), or nothing.
pub(crate) fn counter_arg(
    argument: Arg<'_>,
    value: &JsValue,
) -> Result<Option<crate::counter::JsTokenCounter>, Failure> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let count = if value.is_object() {
        js_sys::Reflect::get(value, &JsValue::from_str("count")).unwrap_or_default()
    } else {
        JsValue::UNDEFINED
    };
    if !count.is_function() {
        return Err(argument.wrong_type("a token counter { name, count(text) }", value));
    }
    Ok(Some(value.clone().unchecked_into()))
}

pub(crate) use ccm_core::compaction::report::thousands;

/// Refuses a session document with an integer JavaScript cannot hold exactly (beyond 2^53),
/// or with a text longer than any limit allows ([`MAX_LIMIT_CHARS`]): the checks of
/// `ccm_browser::document`, which the app's import runs too, so both refuse alike.
pub(crate) fn check_document_values(document: &serde_json::Value) -> Result<(), Failure> {
    use ccm_browser::document::DocumentRefusal;
    ccm_browser::document::check_document_values(document).map_err(|refusal| match refusal {
        DocumentRefusal::TooLarge(message) => Failure::new(Code::TooLarge, message),
        DocumentRefusal::UnsafeNumber(message) => Failure::new(Code::Snapshot, message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_with_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(16_000_000), "16,000,000");
    }

    #[test]
    fn documents_with_unsafe_integers_or_overlong_texts_are_refused_with_where_they_are() {
        let fine: serde_json::Value =
            serde_json::from_str(r#"{"a":[1,9007199254740991,-9007199254740991,1.5e300]}"#)
                .unwrap();
        assert!(check_document_values(&fine).is_ok());
        let big: serde_json::Value =
            serde_json::from_str(r#"{"a":{"b":[0,9007199254740992]}}"#).unwrap();
        let message = check_document_values(&big).unwrap_err().message;
        assert!(message.contains("a.b.1"), "{message}");
        let long = serde_json::Value::Array(vec![serde_json::Value::String(
            "é".repeat(MAX_LIMIT_CHARS as usize / 2 + 1)
                + &"a".repeat(MAX_LIMIT_CHARS as usize / 2),
        )]);
        let refused = check_document_values(&long).unwrap_err();
        assert_eq!(refused.code, Code::TooLarge);
        assert!(
            refused.message.contains("at 0 is 16,000,001 characters"),
            "{}",
            refused.message
        );
        // Two-byte characters: more bytes than the limit, not more characters.
        let wide = serde_json::Value::String("é".repeat(MAX_LIMIT_CHARS as usize));
        assert!(check_document_values(&wide).is_ok());
        let negative: serde_json::Value = serde_json::from_str(r#"[-9007199254740993]"#).unwrap();
        assert!(check_document_values(&negative).is_err());
    }
}
