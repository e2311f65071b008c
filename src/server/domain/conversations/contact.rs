//! A conversation's contact details as the design keeps them: the channel it is on
//! ([`ChannelMethod`]), E.164 phone numbers and email addresses (lower-cased), each refusal
//! naming its field.

use std::fmt;

use crate::model::AppError;

/// The channel a conversation is on. Read case-insensitively, written lower-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelMethod {
    Whatsapp,
    Email,
    Sms,
}

impl ChannelMethod {
    pub const ALL: [ChannelMethod; 3] = [
        ChannelMethod::Whatsapp,
        ChannelMethod::Email,
        ChannelMethod::Sms,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelMethod::Whatsapp => "whatsapp",
            ChannelMethod::Email => "email",
            ChannelMethod::Sms => "sms",
        }
    }

    /// The channel `raw` names, or a 400 naming `field`.
    pub fn parse(raw: &str, field: &str) -> Result<ChannelMethod, AppError> {
        let lower = raw.trim().to_ascii_lowercase();
        ChannelMethod::ALL
            .into_iter()
            .find(|c| c.as_str() == lower)
            .ok_or_else(|| {
                AppError::invalid(
                    field,
                    format!("{field} must be one of whatsapp, email, sms."),
                )
            })
    }
}

impl fmt::Display for ChannelMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
    fn channels_are_three_read_in_any_case() {
        assert_eq!(
            ChannelMethod::parse("WhatsApp", "c").unwrap(),
            ChannelMethod::Whatsapp
        );
        assert_eq!(ChannelMethod::parse(" sms ", "c").unwrap().as_str(), "sms");
        for bad in ["", "chat", "e-mail", "smss"] {
            assert_eq!(
                ChannelMethod::parse(bad, "channel_method")
                    .unwrap_err()
                    .field(),
                Some("channel_method")
            );
        }
    }

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
}
