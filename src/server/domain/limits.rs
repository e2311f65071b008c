//! DynamoDB's limits, and ours derived from them: the one place that knows them. Input
//! that would break one is refused here with a 400 naming the field (413 for sizes),
//! before DynamoDB is called, so no request reaches DynamoDB only to be refused by it
//! (which would surface as a 500).
//!
//! DynamoDB's own (developer guide, "Service, account, and table quotas"):
//! - a partition key value is 1 to 2,048 bytes, a sort key value 1 to 1,024 bytes (UTF-8),
//!   and neither may be an empty string;
//! - maps and lists nest at most 32 levels deep, the item itself being the first (so an
//!   attribute's value holds at most 31 levels of maps and lists; checked on DynamoDB
//!   Local, which refuses the 32nd);
//! - an item is at most 400 KB;
//! - a number has at most 38 significant digits, and is 0 or between 1E-130 and
//!   9.9999999999999999999999999999999999999E+125 in magnitude;
//! - a set is not empty and has no duplicates; an attribute name is not empty.

use serde_json::Value;

use crate::model::AppError;

pub const PARTITION_KEY_BYTES: usize = 2048;
pub const SORT_KEY_BYTES: usize = 1024;
pub const NESTING_LEVELS: usize = 32;
pub const ITEM_BYTES: usize = 400 * 1024;
pub const NUMBER_DIGITS: usize = 38;

/// A conversation's id: the conversations table's sort key, and part of every key built
/// from it (audit partitions, event keys) — a little below the sort-key limit.
pub const CONVERSATION_ID_BYTES: usize = 1000;
/// A conversation's primary channel (an E.164 number or an email): its partition key.
pub const PRIMARY_CHANNEL_BYTES: usize = 320;

/// `value` as a key part of at most `max_bytes` bytes: present and not too long.
pub fn key_part(field: &str, value: &str, max_bytes: usize) -> Result<(), AppError> {
    if value.is_empty() {
        return Err(AppError::invalid(
            field,
            format!("{field} must not be empty."),
        ));
    }
    if value.len() > max_bytes {
        return Err(AppError::invalid(
            field,
            format!(
                "{field} is {} bytes in UTF-8; at most {max_bytes} are allowed.",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Significant digits of a decimal number's text (`-0.00120e5` has 3).
fn significant_digits(text: &str) -> usize {
    let mantissa = text
        .trim_start_matches('-')
        .split(['e', 'E'])
        .next()
        .unwrap_or_default();
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let trimmed = digits.trim_start_matches('0').trim_end_matches('0');
    trimmed.len().max(1)
}

/// A JSON number DynamoDB can store.
pub fn number(field: &str, n: &serde_json::Number) -> Result<(), AppError> {
    let text = n.to_string();
    if significant_digits(&text) > NUMBER_DIGITS {
        return Err(AppError::invalid(
            field,
            format!("{field} has more than {NUMBER_DIGITS} significant digits."),
        ));
    }
    let magnitude = n.as_f64().map(f64::abs).unwrap_or(0.0);
    if magnitude != 0.0 && !(1e-130..1e126).contains(&magnitude) {
        return Err(AppError::invalid(
            field,
            format!("{field} is out of range: numbers are 0 or between 1e-130 and 1e126 in size."),
        ));
    }
    Ok(())
}

/// A JSON value stored as one attribute (a map of settings, say): nested at most
/// [`NESTING_LEVELS`] deep counting the item that holds it, every number storable, no
/// empty member names. The error names the path to the first problem.
pub fn attribute(field: &str, v: &Value) -> Result<(), AppError> {
    walk(field, v, 2)
}

fn walk(path: &str, v: &Value, depth: usize) -> Result<(), AppError> {
    match v {
        Value::Number(n) => number(path, n),
        Value::Array(items) => {
            nested(path, depth)?;
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), item, depth + 1)?;
            }
            Ok(())
        }
        Value::Object(m) => {
            nested(path, depth)?;
            for (k, item) in m {
                if k.is_empty() {
                    return Err(AppError::invalid(
                        path,
                        format!("{path} has a member with an empty name."),
                    ));
                }
                walk(&format!("{path}.{k}"), item, depth + 1)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn nested(path: &str, depth: usize) -> Result<(), AppError> {
    if depth > NESTING_LEVELS {
        return Err(AppError::invalid(
            path,
            format!(
                "{path} nests too deep: at most {} levels of maps and lists.",
                NESTING_LEVELS - 1
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nest(levels: usize) -> Value {
        (1..levels).fold(json!({"x": 1}), |inner, _| json!({ "x": inner }))
    }

    #[test]
    fn nesting_stops_at_31_levels_in_an_attribute() {
        assert!(attribute("m", &nest(31)).is_ok());
        let e = attribute("m", &nest(32)).unwrap_err();
        assert!(e.field().unwrap().starts_with("m.x"), "{e:?}");
    }

    #[test]
    fn numbers_dynamodb_cannot_store_are_refused() {
        let n = |t: &str| serde_json::from_str::<serde_json::Number>(t).unwrap();
        assert!(number("n", &n("1.5")).is_ok());
        assert!(number("n", &n("0")).is_ok());
        assert!(number("n", &n("1e125")).is_ok());
        assert!(number("n", &n("1e127")).is_err());
        assert!(number("n", &n("1e-131")).is_err());
        assert_eq!(significant_digits("-0.00120e5"), 2);
        assert_eq!(
            significant_digits("12345678901234567890123456789012345678"),
            38
        );
        assert!(number("n", &n("12345678901234567890123456789012345678")).is_ok());
    }

    #[test]
    fn key_parts_are_counted_in_bytes() {
        assert!(key_part("k", &"é".repeat(512), 1024).is_ok());
        assert!(key_part("k", &"é".repeat(513), 1024).is_err());
        assert!(key_part("k", "", 1024).is_err());
    }

    #[test]
    fn empty_member_names_are_refused() {
        assert!(attribute("m", &json!({"": 1})).is_err());
    }
}
