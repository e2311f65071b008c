//! The inbox's keys — tenant, inbox, user, category and message — checked once where they
//! enter (a path, a form, a body) into types that cannot hold an invalid key: 1 to 128
//! characters, no `#` (the key separator), no spaces or control characters, not starting
//! with `$` (reserved for `$public`) and not `*` (every category). The OpenAPI document
//! states the same rule from the same place ([`KEY_PATTERN`]).

use crate::model::AppError;

/// The longest key, in characters.
pub const KEY_MAX_CHARS: usize = 128;

/// The rule as a regular expression (JSON Schema's `pattern`), in the syntax ECMA, Python
/// and Rust's `regex` share. Their `\s` differ on U+FEFF (ECMA counts it as a space), so
/// the rule names it, and refuses it too.
pub const KEY_PATTERN: &str = r"^(?:[^#$*\s\uFEFF\x00-\x1f\x7f-\x9f][^#\s\uFEFF\x00-\x1f\x7f-\x9f]*|\*[^#\s\uFEFF\x00-\x1f\x7f-\x9f]+)$";

/// `raw` trimmed, if it is a key; else a 400 naming `field`.
fn check(raw: &str, field: &str) -> Result<String, AppError> {
    let k = raw.trim();
    let bad = |why: &str| AppError::invalid(field, format!("{field} {why}."));
    if k.is_empty() {
        return Err(bad("is required"));
    }
    if k.chars().count() > KEY_MAX_CHARS {
        return Err(bad("is at most 128 characters"));
    }
    if k.contains('#') {
        return Err(bad("must not contain #"));
    }
    if k.starts_with('$') || k == "*" {
        return Err(bad("must not start with $ or be *"));
    }
    if k.chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\u{FEFF}')
    {
        return Err(bad("must not contain spaces or control characters"));
    }
    Ok(k.to_string())
}

fn key_schema(what: &str) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!(
            "{what}: 1 to 128 characters, no '#', spaces or control characters, not starting with '$', not '*'."
        )))
        .min_length(Some(1))
        .max_length(Some(KEY_MAX_CHARS))
        .pattern(Some(KEY_PATTERN))
        .into()
}

macro_rules! inbox_key {
    ($(#[$doc:meta])* $name:ident, $field:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        // Debugs as its text: a publish's fingerprint (`{:?}` of its audience) stays what
        // it was when these were strings, so a retry across a deployment matches.
        text_type!($name);

        impl $name {
            pub fn parse(raw: &str) -> Result<$name, AppError> {
                $name::parse_as(raw, $field)
            }

            /// As [`Self::parse`], an error naming `field` (an entry of a list).
            pub fn parse_as(raw: &str, field: &str) -> Result<$name, AppError> {
                check(raw, field).map($name)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                key_schema($what)
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

inbox_key!(
    /// A tenant's key.
    TenantKey, "tenant", "A tenant's key"
);
inbox_key!(
    /// An inbox's key, within its tenant.
    InboxKey, "inbox", "An inbox's key"
);
inbox_key!(
    /// A user's key (their id in the tenant's app).
    UserKey, "uid", "A user's key"
);
inbox_key!(
    /// A message category (`ttl` entries are per category).
    CategoryKey, "category", "A message category"
);
inbox_key!(
    /// A published message's id, as a client sends it back.
    MessageKey, "message_id", "A message's id"
);

#[cfg(test)]
mod tests {
    use super::*;

    const BAD: [&str; 10] = [
        "",
        "   ",
        "a#b",
        "$public",
        "*",
        "a b",
        "a\u{7}b",
        "a\u{85}b",
        "#",
        "acme\u{FEFF}",
    ];

    #[test]
    fn keys_are_trimmed_and_bounded() {
        assert_eq!(TenantKey::parse(" acme ").unwrap().as_str(), "acme");
        assert!(TenantKey::parse(&"x".repeat(128)).is_ok());
        assert!(
            TenantKey::parse(&"é".repeat(128)).is_ok(),
            "characters, not bytes"
        );
        assert!(TenantKey::parse(&"x".repeat(129)).is_err());
        for bad in BAD {
            let e = UserKey::parse(bad).unwrap_err();
            assert_eq!(e.field(), Some("uid"), "{bad:?}");
        }
        let e = UserKey::parse_as("a#b", "audience.uids[3]").unwrap_err();
        assert_eq!(e.to_string(), "audience.uids[3] must not contain #.");
    }

    #[test]
    fn a_key_debugs_as_its_text() {
        let uids = Some(vec![
            UserKey::parse("ann").unwrap(),
            UserKey::parse("bob").unwrap(),
        ]);
        assert_eq!(format!("{uids:?}"), r#"Some(["ann", "bob"])"#);
    }

    /// The pattern the OpenAPI document states takes exactly what `parse` takes (trimmed).
    #[test]
    fn the_documented_pattern_is_the_rule() {
        let re = regex::Regex::new(KEY_PATTERN).unwrap();
        for good in ["acme", "a", "*x", "a$b", "u-1.2@x", &"é".repeat(3)] {
            assert!(TenantKey::parse(good).is_ok(), "{good:?}");
            assert!(re.is_match(good), "{good:?}");
        }
        for bad in BAD {
            assert!(!re.is_match(bad), "{bad:?}");
        }
    }
}
