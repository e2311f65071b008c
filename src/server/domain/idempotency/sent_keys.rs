//! The keys a client sends to make a write idempotent, checked once where they enter:
//! a REST client's `Idempotency-Key` header ([`IdempotencyKey`]) and the key a console form
//! carries ([`FormKey`], rendered into the form by the server).

use std::fmt;
use std::ops::Deref;

use crate::model::AppError;

/// A REST client's `Idempotency-Key`: 1 to 255 visible ASCII characters (spaces and tabs
/// inside too, as HTTP allows in a header value), trimmed.
#[derive(Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

/// The longest `Idempotency-Key`, in characters.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

impl IdempotencyKey {
    pub fn parse(raw: &str) -> Result<IdempotencyKey, AppError> {
        let k = raw.trim();
        if (1..=IDEMPOTENCY_KEY_MAX).contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
        {
            Ok(IdempotencyKey(k.to_string()))
        } else {
            Err(AppError::invalid(
                "Idempotency-Key",
                "The Idempotency-Key header must be 1 to 255 visible ASCII characters.",
            ))
        }
    }
}

/// The key of one console form: 16 to 128 ASCII letters, digits, `-` or `_`, trimmed. The
/// server renders a fresh one into each form; anything else is a stale or forged form.
#[derive(Clone, PartialEq, Eq)]
pub struct FormKey(String);

impl FormKey {
    pub fn parse(raw: &str) -> Result<FormKey, AppError> {
        let k = raw.trim();
        let ok = (16..=128).contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(FormKey(k.to_string()))
        } else {
            Err(AppError::invalid(
                "idempotency_key",
                "This form is out of date. Reload the page and try again.",
            ))
        }
    }
}

macro_rules! text_key {
    ($name:ident) => {
        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        /// Never printed whole: a key can be all a replay needs.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(..{} chars)", stringify!($name), self.0.len())
            }
        }
    };
}

text_key!(IdempotencyKey);
text_key!(FormKey);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_keys_are_visible_ascii_up_to_255() {
        assert_eq!(&*IdempotencyKey::parse("  order-7 ").unwrap(), "order-7");
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        assert!(
            IdempotencyKey::parse("a\tb c").is_ok(),
            "what HTTP allows inside a value"
        );
        for bad in ["", "   ", &"k".repeat(256), "café", "a\nb", "a\u{7}"] {
            let e = IdempotencyKey::parse(bad).unwrap_err();
            assert_eq!(e.field(), Some("Idempotency-Key"), "{bad:?}");
        }
    }

    #[test]
    fn form_keys_are_what_the_server_renders() {
        let rendered = crate::server::ids::random_hex(16);
        assert_eq!(&*FormKey::parse(&rendered).unwrap(), rendered);
        assert!(FormKey::parse(" form-key-00000000000001 ").is_ok());
        for bad in [
            "",
            "short",
            &"k".repeat(129),
            "form key 0000000000001",
            "form#key#0000000000001",
            "ключ-формы-000000000001",
        ] {
            let e = FormKey::parse(bad).unwrap_err();
            assert_eq!(e.field(), Some("idempotency_key"), "{bad:?}");
        }
        assert!(!format!("{:?}", FormKey::parse(&rendered).unwrap()).contains(&rendered));
    }
}
