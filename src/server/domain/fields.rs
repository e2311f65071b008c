//! Reading fields of a JSON body with errors that name the field (`channel_config.company_email`),
//! for every REST endpoint: bad input is a 400 that says what to fix, never a 500.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use crate::model::AppError;

/// The members of a JSON object body.
pub fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, AppError> {
    v.as_object().ok_or_else(|| {
        let what = if path.is_empty() { "The body" } else { path };
        AppError::invalid(
            if path.is_empty() { "body" } else { path },
            format!("{what} must be a JSON object."),
        )
    })
}

/// A body as JSON, or a 400 that says where it breaks.
pub fn parse_json(bytes: &[u8]) -> Result<Value, AppError> {
    serde_json::from_slice(bytes)
        .map_err(|e| AppError::invalid("body", format!("The body is not valid JSON: {e}.")))
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A view of one object that names its fields by their path.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Fields<'a> {
    pub fn of(v: &'a Value, path: &str) -> Result<Fields<'a>, AppError> {
        Ok(Fields {
            map: object(v, path)?,
            path: path.to_string(),
        })
    }

    pub fn name(&self, field: &str) -> String {
        join(&self.path, field)
    }

    fn present(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    pub fn has(&self, field: &str) -> bool {
        self.present(field).is_some()
    }

    /// A trimmed string of 1 to `max` characters without control characters, if present.
    pub fn opt_str(&self, field: &str, max: usize) -> Result<Option<String>, AppError> {
        let name = self.name(field);
        match self.present(field) {
            None => Ok(None),
            Some(Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() {
                    return Ok(None);
                }
                if t.chars().count() > max {
                    return Err(AppError::invalid(
                        &name,
                        format!("{name} is at most {max} characters."),
                    ));
                }
                if t.chars().any(char::is_control) {
                    return Err(AppError::invalid(
                        &name,
                        format!("{name} must not contain control characters."),
                    ));
                }
                Ok(Some(t.to_string()))
            }
            Some(_) => Err(AppError::invalid(
                &name,
                format!("{name} must be a string."),
            )),
        }
    }

    pub fn req_str(&self, field: &str, max: usize) -> Result<String, AppError> {
        self.opt_str(field, max)?.ok_or_else(|| {
            let name = self.name(field);
            AppError::invalid(&name, format!("{name} is required."))
        })
    }

    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, AppError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => {
                let name = self.name(field);
                Err(AppError::invalid(
                    &name,
                    format!("{name} must be true or false."),
                ))
            }
        }
    }

    /// A whole number in `0..=max`, if present.
    pub fn opt_count(&self, field: &str, max: i64) -> Result<Option<i64>, AppError> {
        match self.present(field) {
            None => Ok(None),
            Some(v) => match v.as_i64() {
                Some(n) if (0..=max).contains(&n) => Ok(Some(n)),
                _ => {
                    let name = self.name(field);
                    Err(AppError::invalid(
                        &name,
                        format!("{name} must be a whole number from 0 to {max}."),
                    ))
                }
            },
        }
    }

    /// A JSON object of at most `max_bytes` serialized, if present.
    pub fn opt_object(
        &self,
        field: &str,
        max_bytes: usize,
    ) -> Result<Option<Map<String, Value>>, AppError> {
        let name = self.name(field);
        match self.present(field) {
            None => Ok(None),
            Some(Value::Object(m)) => {
                let whole = Value::Object(m.clone());
                if whole.to_string().len() > max_bytes {
                    return Err(AppError::invalid(
                        &name,
                        format!("{name} is at most {} KiB.", max_bytes / 1024),
                    ));
                }
                // Stored as one attribute: within DynamoDB's nesting and number limits.
                super::limits::attribute(&name, &whole)?;
                Ok(Some(m.clone()))
            }
            Some(_) => Err(AppError::invalid(
                &name,
                format!("{name} must be an object."),
            )),
        }
    }

    /// A list of strings, each checked by `each`, if present.
    pub fn opt_list(
        &self,
        field: &str,
        max_items: usize,
        each: impl Fn(&str, &str) -> Result<String, AppError>,
    ) -> Result<Option<Vec<String>>, AppError> {
        let name = self.name(field);
        match self.present(field) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                if items.len() > max_items {
                    return Err(AppError::invalid(
                        &name,
                        format!("{name} has at most {max_items} entries."),
                    ));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let at = format!("{name}[{i}]");
                        match v.as_str() {
                            Some(s) => each(s.trim(), &at),
                            None => Err(AppError::invalid(&at, format!("{at} must be a string."))),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
            Some(_) => Err(AppError::invalid(&name, format!("{name} must be a list."))),
        }
    }

    /// An RFC 3339 timestamp with an offset, normalized to UTC with milliseconds.
    pub fn opt_time(&self, field: &str) -> Result<Option<DateTime<Utc>>, AppError> {
        let Some(raw) = self.opt_str(field, 64)? else {
            return Ok(None);
        };
        parse_time(&raw, &self.name(field)).map(Some)
    }
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

/// ISO 8601 UTC with milliseconds: sorts as text in time order.
pub fn iso_ms(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An E.164 phone number: `+`, a non-zero digit, 8 to 15 digits in all.
pub fn e164(raw: &str, name: &str) -> Result<String, AppError> {
    let digits = raw.strip_prefix('+').unwrap_or("");
    let ok = (8..=15).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
        && !digits.starts_with('0');
    if ok {
        Ok(raw.to_string())
    } else {
        Err(AppError::invalid(
            name,
            format!("{name} must be an E.164 phone number, like +447123456789."),
        ))
    }
}

/// A plausible email address, lower-cased.
pub fn email(raw: &str, name: &str) -> Result<String, AppError> {
    let lower = raw.to_ascii_lowercase();
    let bad = || {
        AppError::invalid(
            name,
            format!("{name} must be an email address, like jane@example.com."),
        )
    };
    let (local, domain) = lower.split_once('@').ok_or_else(bad)?;
    let local_ok = (1..=64).contains(&local.len())
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._%+-'".contains(c))
        && !local.starts_with('.')
        && !local.ends_with('.');
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()));
    if local_ok && domain_ok && lower.len() <= 254 {
        Ok(lower)
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_and_emails() {
        assert!(e164("+447123456789", "p").is_ok());
        for bad in [
            "447123456789",
            "+0447123",
            "+44 7123 456789",
            "+12",
            "+1234567890123456",
        ] {
            assert!(e164(bad, "p").is_err(), "{bad}");
        }
        assert_eq!(
            email("J.Doe@Example.COM", "e").unwrap(),
            "j.doe@example.com"
        );
        for bad in [
            "jdoe",
            "@x.com",
            "a@b",
            "a@-b.com",
            "a b@c.com",
            "a@b.c0m",
            ".a@b.com",
        ] {
            assert!(email(bad, "e").is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_nested_field() {
        let v: Value = serde_json::json!({"channel_config": {"company_email": 5}});
        let outer = Fields::of(&v, "").unwrap();
        let inner_v = &v["channel_config"];
        let inner = Fields::of(inner_v, &outer.name("channel_config")).unwrap();
        let e = inner.opt_str("company_email", 10).unwrap_err();
        assert_eq!(e.field(), Some("channel_config.company_email"));
    }
}
