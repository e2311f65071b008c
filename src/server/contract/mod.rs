//! The REST API's contracts: one request type and one answer type per operation, each
//! `Deserialize`/`Serialize` and `ToSchema`. They are the API's only description: the
//! handlers read and write them, the OpenAPI document is generated from them, and the
//! domain turns each request into its own validated types (`TryFrom`). They depend on
//! nothing else of the server.
//!
//! Limits that JSON Schema can state are stated here (`maxLength`, `maxItems`, ranges);
//! the domain checks them again with DynamoDB's own (domain/limits.rs).

pub mod conversations;
pub mod events;
pub mod health;
pub mod inbox;
pub mod kill_switches;
pub mod measurements;
pub mod receiver;
pub mod users;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::model::AppError;

/// An identifier a client may send as a string or a number (helpdesks do both). Fields
/// of this type state their schema with `value_type`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Id {
    Text(String),
    Number(serde_json::Number),
}

impl Id {
    pub fn into_string(self) -> String {
        match self {
            Id::Text(s) => s,
            Id::Number(n) => n.to_string(),
        }
    }
}

/// A flag a client may send as `true`/`false` or `1`/`0`. Fields of this type state their
/// schema with `value_type`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Flag {
    Bool(bool),
    Bit(u8),
}

impl Flag {
    /// `None` for a number other than 0 or 1.
    pub fn value(self) -> Option<bool> {
        match self {
            Flag::Bool(b) => Some(b),
            Flag::Bit(0) => Some(false),
            Flag::Bit(1) => Some(true),
            Flag::Bit(_) => None,
        }
    }
}

/// `bytes` as JSON of type `T`, or a 400 naming the field that is wrong. A list is never a
/// body (serde would read one into a struct by position).
pub fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    if bytes.trim_ascii_start().starts_with(b"[") {
        return Err(not_an_object());
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| field_error(e.path().to_string(), e.inner()))
}

/// An already parsed JSON value as `T` (a batch's items are read one by one).
pub fn from_value<T: DeserializeOwned>(v: &serde_json::Value) -> Result<T, AppError> {
    if v.is_array() {
        return Err(not_an_object());
    }
    serde_path_to_error::deserialize(v).map_err(|e| field_error(e.path().to_string(), e.inner()))
}

fn not_an_object() -> AppError {
    AppError::invalid("body", "The body must be a JSON object.")
}

fn field_error(path: String, e: &serde_json::Error) -> AppError {
    if e.is_syntax() || e.is_eof() {
        return AppError::invalid("body", format!("The body is not valid JSON: {e}."));
    }
    let text = e.to_string();
    // serde_json ends its messages with where the problem is; the field says it better.
    let text = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(head, _)| head)
        .to_string();
    let path = if path == "." { String::new() } else { path };
    let join = |field: &str| {
        if path.is_empty() {
            field.to_string()
        } else {
            format!("{path}.{field}")
        }
    };
    if let Some(missing) = text
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
    {
        let field = join(missing);
        return AppError::invalid(&field, format!("{field} is required."));
    }
    let field = if path.is_empty() {
        "body".to_string()
    } else {
        path
    };
    AppError::invalid(&field, format!("{field}: {text}."))
}

#[cfg(test)]
mod tests {
    use super::inbox::PublishRequest;
    use super::*;

    fn field_of<T: DeserializeOwned + std::fmt::Debug>(body: &str) -> String {
        from_json::<T>(body.as_bytes())
            .unwrap_err()
            .field()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn errors_name_the_field_by_its_path() {
        let ok = r#"{"audience": {"kind": "users", "uids": ["a"]}, "title": "t", "body": "b"}"#;
        assert!(from_json::<PublishRequest>(ok.as_bytes()).is_ok());
        assert_eq!(
            field_of::<PublishRequest>(r#"{"audience": {}, "title": "t", "body": "b"}"#),
            "audience.kind"
        );
        assert_eq!(
            field_of::<PublishRequest>(
                r#"{"audience": {"kind": "users", "uids": ["a", 5]}, "title": "t", "body": "b"}"#
            ),
            "audience.uids[1]"
        );
        assert_eq!(
            field_of::<PublishRequest>(r#"{"audience": {"kind": "users"}}"#),
            "title"
        );
        assert_eq!(field_of::<PublishRequest>("[1, 2]"), "body");
        assert_eq!(field_of::<PublishRequest>("{oops"), "body");
        let e = from_json::<PublishRequest>(br#"{"audience": {}, "title": "t", "body": "b"}"#)
            .unwrap_err();
        assert_eq!(e.to_string(), "audience.kind is required.");
    }

    #[test]
    fn flags_take_booleans_and_bits() {
        let f: Vec<Flag> = serde_json::from_str("[true, 0, 1, 7]").unwrap();
        let values: Vec<Option<bool>> = f.into_iter().map(Flag::value).collect();
        assert_eq!(values, [Some(true), Some(false), Some(true), None]);
    }
}
