//! Page cursors: where a query goes on, made opaque for URLs. A cursor is sealed
//! (authenticated encryption under the server secret's `page-cursor` key, [`Seal`]), so
//! nobody can read the key it carries (a recipient's phone number, a conversation id, a
//! user id) or forge one; it is bound to the query it came from (table, index, partition,
//! conditions, filters, order), so it cannot be replayed against another search; and it
//! lives [`LIFETIME`]. A cursor that fails any of this is [`StoreError::BadCursor`] (a 400).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

use super::StoreError;
use crate::server::clock::Clock;
use crate::server::crypto::{sha256_hex, Seal};

pub type Key = HashMap<String, AttributeValue>;

/// How long a cursor opens after it was handed out: a page left open over lunch still
/// pages on; a link kept for a day starts again from the first page.
pub const LIFETIME: chrono::Duration = chrono::Duration::hours(2);
/// A cursor from a console whose clock runs this much ahead still opens.
const SKEW: chrono::Duration = chrono::Duration::minutes(2);

/// What a cursor is bound to: the query it continues, as text that differs whenever the
/// query does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding(String);

impl Binding {
    /// The query of these parts (each one a name or a value; order matters).
    pub fn new<'a>(parts: impl IntoIterator<Item = &'a str>) -> Binding {
        let mut text = String::new();
        for p in parts {
            // Length-prefixed, so no two lists of parts make the same text.
            text.push_str(&format!("{}:{p};", p.len()));
        }
        Binding(text)
    }

    fn digest(&self) -> String {
        sha256_hex(self.0.as_bytes())[..32].to_string()
    }
}

/// An attribute value as a binding part: its type and its value.
pub fn part(v: &AttributeValue) -> String {
    match v {
        AttributeValue::S(s) => format!("S={s}"),
        AttributeValue::N(n) => format!("N={n}"),
        other => format!("{other:?}"),
    }
}

/// Seals and opens the cursors of one console. Every console of an environment derives the
/// same keys from the server secret, so a cursor opens behind any of them.
#[derive(Clone)]
pub struct Cursors {
    seal: Seal,
    clock: Clock,
}

impl Cursors {
    pub fn new(seal: Seal, clock: Clock) -> Cursors {
        Cursors { seal, clock }
    }

    /// Cursors under keys of this process only: for a store that serves no pages (the
    /// command line, tools). A cursor it makes opens nowhere else.
    pub fn ephemeral() -> Cursors {
        Cursors::new(Seal::ephemeral(), Clock::default())
    }

    /// `position` (any JSON) as a cursor of the query `binding` names.
    pub fn seal(&self, binding: &Binding, position: Value) -> String {
        let body = json!({
            "b": binding.digest(),
            "t": self.clock.now().timestamp(),
            "p": position,
        });
        self.seal.seal_text(body.to_string().as_bytes())
    }

    /// The position a cursor of `binding` holds, if this store made it for that query and it
    /// has not expired.
    pub fn open(&self, binding: &Binding, cursor: &str) -> Result<Value, StoreError> {
        let plain = self.seal.open_text(cursor).ok_or(StoreError::BadCursor)?;
        let mut body: Value = serde_json::from_slice(&plain).map_err(|_| StoreError::BadCursor)?;
        if body["b"].as_str() != Some(binding.digest().as_str()) {
            return Err(StoreError::BadCursor);
        }
        let now = self.clock.now().timestamp();
        let issued = body["t"].as_i64().ok_or(StoreError::BadCursor)?;
        if issued < now - LIFETIME.num_seconds() || issued > now + SKEW.num_seconds() {
            return Err(StoreError::BadCursor);
        }
        Ok(body["p"].take())
    }

    /// A table key as a cursor of `binding`.
    pub fn seal_key(&self, binding: &Binding, key: &Key) -> String {
        self.seal(binding, key_json(key))
    }

    /// The table key a cursor of `binding` holds, with exactly the attributes `expected`.
    pub fn open_key(
        &self,
        binding: &Binding,
        cursor: &str,
        expected: &[&str],
    ) -> Result<Key, StoreError> {
        key_of_json(&self.open(binding, cursor)?, expected)
    }
}

/// A table key as JSON: `[name, "S"|"N", value]` for each part (only string and number key
/// parts exist in our tables), sorted.
pub fn key_json(key: &Key) -> Value {
    let mut parts: Vec<(&str, &str, &str)> = key
        .iter()
        .filter_map(|(name, v)| match v {
            AttributeValue::S(s) => Some((name.as_str(), "S", s.as_str())),
            AttributeValue::N(n) => Some((name.as_str(), "N", n.as_str())),
            _ => None,
        })
        .collect();
    parts.sort();
    json!(parts)
}

/// The table key [`key_json`] made, accepting exactly the attributes `expected`.
pub fn key_of_json(value: &Value, expected: &[&str]) -> Result<Key, StoreError> {
    let parts: Vec<(String, String, String)> =
        serde_json::from_value(value.clone()).map_err(|_| StoreError::BadCursor)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cursors() -> Cursors {
        Cursors::new(Seal::derive(b"secret", "page-cursor"), Clock::default())
    }

    fn key() -> Key {
        Key::from([
            ("pk".to_string(), AttributeValue::S("+447700900123".into())),
            ("n".to_string(), AttributeValue::N("12".into())),
        ])
    }

    /// Neither the text nor its bytes carry `plain` or a part of it, in the clear or as
    /// base64 at any alignment. (A check for a two-letter part such as `pk` in the text
    /// would fail by chance: random base64 holds any two letters one time in twenty.)
    fn shows_nothing_of(cursor: &str, plain: &str) {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine;
        let bytes = URL_SAFE_NO_PAD.decode(cursor).expect("a cursor is base64");
        let holds = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        for part in [plain, "447700900123", "\"pk\""] {
            assert!(!holds(&bytes, part.as_bytes()), "the bytes hold {part}");
        }
        assert!(!cursor.contains("447700900123"));
        for skip in 0..3 {
            let encoded = URL_SAFE_NO_PAD.encode(&plain.as_bytes()[skip..]);
            let needle = &encoded[..encoded.len() - 4];
            assert!(!cursor.contains(needle), "the text holds {plain} as base64");
        }
    }

    #[test]
    fn a_cursor_opens_for_its_query_only_and_shows_nothing() {
        let c = cursors();
        let search = Binding::new(["conversations", "S=+447700900123"]);
        let cursor = c.seal_key(&search, &key());
        let plain = r#"["pk","S","+447700900123"]"#;
        shows_nothing_of(&cursor, plain);
        for offset in 0..3 {
            // The check sees a key that is only encoded, at every alignment: in the bytes,
            // and, shifted by a character so the bytes do not show it, in the text.
            use base64::engine::general_purpose::URL_SAFE_NO_PAD;
            use base64::Engine;
            let open = format!("{}{{\"p\":[{plain}]}}", "x".repeat(offset));
            let bare = URL_SAFE_NO_PAD.encode(&open);
            assert!(std::panic::catch_unwind(|| shows_nothing_of(&bare, plain)).is_err());
            let mut shifted = format!("A{bare}");
            if shifted.len() % 4 == 1 {
                shifted.push('A');
            }
            let bytes = URL_SAFE_NO_PAD.decode(&shifted).unwrap();
            assert!(!bytes.windows(plain.len()).any(|w| w == plain.as_bytes()));
            assert!(std::panic::catch_unwind(|| shows_nothing_of(&shifted, plain)).is_err());
        }
        assert_eq!(c.open_key(&search, &cursor, &["pk", "n"]).unwrap(), key());
        let other = Binding::new(["conversations", "S=+447700900999"]);
        assert!(
            c.open_key(&other, &cursor, &["pk", "n"]).is_err(),
            "another search"
        );
        assert!(
            c.open_key(&search, &cursor, &["pk"]).is_err(),
            "unexpected attribute"
        );
        assert!(
            c.open_key(&search, &cursor, &["pk", "n", "sk"]).is_err(),
            "missing one"
        );
        let elsewhere = Cursors::new(Seal::derive(b"other", "page-cursor"), Clock::default());
        assert!(
            elsewhere.open_key(&search, &cursor, &["pk", "n"]).is_err(),
            "another secret"
        );
        for forged in ["", "zz", "abc", &key_json(&key()).to_string()] {
            assert!(c.open(&search, forged).is_err(), "{forged}");
        }
    }

    #[test]
    fn a_cursor_expires() {
        let c = cursors();
        let b = Binding::new(["q"]);
        let cursor = c.seal(&b, json!(1));
        c.clock.advance(LIFETIME - chrono::Duration::minutes(1));
        assert_eq!(c.open(&b, &cursor).unwrap(), json!(1));
        c.clock.advance(chrono::Duration::minutes(2));
        assert!(c.open(&b, &cursor).is_err());
    }

    #[test]
    fn bindings_of_different_parts_differ() {
        assert_ne!(Binding::new(["ab", "c"]), Binding::new(["a", "bc"]));
        assert_ne!(Binding::new(["a"]), Binding::new(["a", ""]));
    }
}
