//! Checks of single values from a request contract (`crate::server::contract`), with errors
//! that name the field (`channel_config.company_email`): the contract's types say what
//! shape a value has, these say what it may contain. Bad input is a 400 that says what to
//! fix, never a 500.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::model::AppError;

/// A trimmed text of 1 to `max` characters without control characters; blank is absent.
pub fn text(name: &str, v: Option<String>, max: usize) -> Result<Option<String>, AppError> {
    let Some(s) = v else { return Ok(None) };
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if t.chars().count() > max {
        return Err(AppError::invalid(
            name,
            format!("{name} is at most {max} characters."),
        ));
    }
    if t.chars().any(char::is_control) {
        return Err(AppError::invalid(
            name,
            format!("{name} must not contain control characters."),
        ));
    }
    Ok(Some(t.to_string()))
}

/// As [`text`], and present.
pub fn required(name: &str, v: impl Into<Option<String>>, max: usize) -> Result<String, AppError> {
    text(name, v.into(), max)?
        .ok_or_else(|| AppError::invalid(name, format!("{name} is required.")))
}

/// A whole number in `0..=max`.
pub fn count(name: &str, v: Option<i64>, max: i64) -> Result<Option<i64>, AppError> {
    match v {
        Some(n) if !(0..=max).contains(&n) => Err(AppError::invalid(
            name,
            format!("{name} must be a whole number from 0 to {max}."),
        )),
        v => Ok(v),
    }
}

/// A JSON object of at most `max_bytes` serialized, stored as one attribute: within
/// DynamoDB's nesting and number limits.
pub fn object(
    name: &str,
    v: Option<Map<String, Value>>,
    max_bytes: usize,
) -> Result<Option<Map<String, Value>>, AppError> {
    let Some(m) = v else { return Ok(None) };
    let whole = Value::Object(m);
    if whole.to_string().len() > max_bytes {
        return Err(AppError::invalid(
            name,
            format!("{name} is at most {} KiB.", max_bytes / 1024),
        ));
    }
    super::limits::attribute(name, &whole)?;
    let Value::Object(m) = whole else {
        unreachable!("built as an object above")
    };
    Ok(Some(m))
}

/// A list of at most `max_items` texts, each trimmed and checked by `each` (given the
/// entry's name, `field[i]`).
pub fn list(
    name: &str,
    v: Option<Vec<String>>,
    max_items: usize,
    each: impl Fn(&str, &str) -> Result<String, AppError>,
) -> Result<Option<Vec<String>>, AppError> {
    let Some(items) = v else { return Ok(None) };
    if items.len() > max_items {
        return Err(AppError::invalid(
            name,
            format!("{name} has at most {max_items} entries."),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, s)| each(s.trim(), &format!("{name}[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// An RFC 3339 timestamp with an offset, in UTC.
pub fn time(name: &str, v: Option<String>) -> Result<Option<DateTime<Utc>>, AppError> {
    text(name, v, 64)?
        .map(|raw| parse_time(&raw, name))
        .transpose()
}

pub fn parse_time(raw: &str, name: &str) -> Result<DateTime<Utc>, AppError> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            AppError::invalid(
                name,
                format!(
                    "{name} must be an RFC 3339 time with an offset, like 2026-11-22T10:00:00Z."
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_trimmed_bounded_and_named() {
        assert_eq!(text("t", Some("  a ".into()), 3).unwrap(), Some("a".into()));
        assert_eq!(text("t", Some("   ".into()), 3).unwrap(), None);
        let e = text("channel_config.company_email", Some("abcd".into()), 3).unwrap_err();
        assert_eq!(e.field(), Some("channel_config.company_email"));
        assert!(required("t", Some(" ".to_string()), 3).is_err());
        assert!(text("t", Some("a\u{7}".into()), 3).is_err());
        assert!(count("n", Some(-1), 5).is_err());
        assert_eq!(count("n", Some(5), 5).unwrap(), Some(5));
    }
}
