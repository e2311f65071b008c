//! Page cursors: a query's `LastEvaluatedKey`, made opaque for URLs and checked on the way
//! back so a hand-edited cursor is a clear 400, not a DynamoDB validation error.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::StoreError;

type Key = HashMap<String, AttributeValue>;

/// Hex of a JSON list of `[name, "S"|"N", value]`. Only string and number key parts exist
/// in our tables.
pub fn encode(key: &Key) -> String {
    let mut parts: Vec<(&str, &str, &str)> = key
        .iter()
        .filter_map(|(name, v)| match v {
            AttributeValue::S(s) => Some((name.as_str(), "S", s.as_str())),
            AttributeValue::N(n) => Some((name.as_str(), "N", n.as_str())),
            _ => None,
        })
        .collect();
    parts.sort();
    let json = serde_json::to_string(&parts).unwrap_or_default();
    json.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Decodes a cursor, accepting exactly the key attributes `expected` names.
pub fn decode(cursor: &str, expected: &[&str]) -> Result<Key, StoreError> {
    if !cursor.len().is_multiple_of(2) || cursor.len() > 4096 {
        return Err(StoreError::BadCursor);
    }
    let bytes: Vec<u8> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| StoreError::BadCursor)?;
    let parts: Vec<(String, String, String)> =
        serde_json::from_slice(&bytes).map_err(|_| StoreError::BadCursor)?;
    let mut key = Key::new();
    for (name, ty, value) in parts {
        if !expected.contains(&name.as_str()) || value.is_empty() {
            return Err(StoreError::BadCursor);
        }
        let v = match ty.as_str() {
            "S" => AttributeValue::S(value),
            "N" if value.parse::<f64>().is_ok() => AttributeValue::N(value),
            _ => return Err(StoreError::BadCursor),
        };
        key.insert(name, v);
    }
    if key.len() != expected.len() {
        return Err(StoreError::BadCursor);
    }
    Ok(key)
}

/// `Some(cursor)` when the query says there is more.
pub fn next(last_evaluated_key: Option<&Key>) -> Option<String> {
    last_evaluated_key.filter(|k| !k.is_empty()).map(encode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let key = Key::from([
            ("pk".to_string(), AttributeValue::S("a#b".into())),
            ("n".to_string(), AttributeValue::N("12".into())),
        ]);
        let c = encode(&key);
        assert_eq!(decode(&c, &["pk", "n"]).unwrap(), key);
        assert!(decode(&c, &["pk"]).is_err(), "unexpected attribute");
        assert!(decode(&c, &["pk", "n", "sk"]).is_err(), "missing attribute");
        assert!(decode("zz", &["pk"]).is_err());
        assert!(decode("abc", &["pk"]).is_err());
        assert!(decode("", &["pk"]).is_err());
    }
}
