//! The ids a device sends with a measurement, checked once where they enter (a body, a
//! batch item): 1 to 128 characters, trimmed, no `#` (the key separator), no spaces or
//! control characters.

use crate::model::AppError;
use crate::server::domain::fields;

fn check(field: &str, raw: String) -> Result<String, AppError> {
    let v = fields::required(field, raw, 128)?;
    if v.contains('#') || v.chars().any(char::is_whitespace) {
        return Err(AppError::invalid(
            field,
            format!("{field} must not contain # or spaces."),
        ));
    }
    Ok(v)
}

macro_rules! device_id {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn parse(raw: impl Into<String>) -> Result<$name, AppError> {
                check($field, raw.into()).map($name)
            }
        }

        text_type!($name);
    };
}

device_id!(
    /// A measurement's id, unique per user: what makes a resend the same measurement.
    MeasurementId,
    "measurement_id"
);
device_id!(
    /// The user a measurement is of, as the device names them.
    MeasuredUserId,
    "user_id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ids_are_trimmed_and_refuse_separators() {
        assert_eq!(&*MeasurementId::parse(" m-1 ").unwrap(), "m-1");
        assert!(MeasurementId::parse("x".repeat(128)).is_ok());
        for bad in ["", "  ", "a#b", "a b", "a\u{7}b"] {
            assert_eq!(
                MeasuredUserId::parse(bad).unwrap_err().field(),
                Some("user_id"),
                "{bad:?}"
            );
        }
        assert!(MeasurementId::parse("x".repeat(129)).is_err());
    }
}
