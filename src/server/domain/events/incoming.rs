//! An inbound event: the webhook body validated and normalized, its canonical form (hashed,
//! never stored) and the event key it is deduplicated by.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::model::AppError;
use crate::server::contract::events::Event;
use crate::server::crypto::sha256_hex;
use crate::server::domain::events::ids::{HelpdeskConversationId, HelpdeskMessageId};

/// The channels a helpdesk event can come from, by the names the webhook uses.
pub const CHANNELS: &[&str] = &["email", "chat", "sms", "whatsapp", "social", "voice", "web"];

/// The channel an event came from: one of [`CHANNELS`], read in any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel(&'static str);

impl Channel {
    pub fn parse(raw: &str) -> Result<Channel, AppError> {
        let lower = raw.trim().to_ascii_lowercase();
        CHANNELS
            .iter()
            .find(|c| **c == lower)
            .map(|c| Channel(c))
            .ok_or_else(|| {
                AppError::invalid(
                    "channel",
                    format!("channel is one of {}.", CHANNELS.join(", ")),
                )
            })
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}
pub const MAX_TEXT_BYTES: usize = 100_000;

/// An event after validation. `text` lives only in memory while the event is decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Incoming {
    pub conversation_id: HelpdeskConversationId,
    pub message_id: Option<HelpdeskMessageId>,
    pub created_at: DateTime<Utc>,
    pub channel: Channel,
    /// Trimmed, whitespace collapsed.
    pub text: String,
    pub customer_email: Option<String>,
    pub customer_phone: Option<String>,
    pub customer_id: Option<String>,
}

/// An optional customer detail: trimmed, empty as absent, at most 256 characters.
fn detail(v: Option<String>, path: &str) -> Result<Option<String>, AppError> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) if s.len() <= 256 => Ok(Some(s.to_string())),
        Some(_) => Err(AppError::invalid(
            path,
            format!("{path} is at most 256 characters."),
        )),
    }
}

pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn customer_email(raw: Option<String>) -> Result<Option<String>, AppError> {
    let Some(e) = detail(raw, "customer.email")? else {
        return Ok(None);
    };
    let e = e.to_ascii_lowercase();
    let valid = e.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !e.contains(char::is_whitespace)
    });
    if !valid {
        return Err(AppError::invalid(
            "customer.email",
            "customer.email is not an email address.",
        ));
    }
    Ok(Some(e))
}

fn customer_phone(raw: Option<String>) -> Result<Option<String>, AppError> {
    let Some(p) = detail(raw, "customer.phone")? else {
        return Ok(None);
    };
    let digits: String = p.chars().filter(char::is_ascii_digit).collect();
    let shape_ok = p
        .chars()
        .all(|ch| ch.is_ascii_digit() || " +-().".contains(ch));
    if !shape_ok || !(7..=15).contains(&digits.len()) {
        return Err(AppError::invalid(
            "customer.phone",
            "customer.phone must have 7 to 15 digits.",
        ));
    }
    Ok(Some(format!("+{digits}")))
}

/// A webhook body, read and validated.
pub fn parse(body: &[u8]) -> Result<Incoming, AppError> {
    Incoming::try_from(crate::server::contract::from_json::<Event>(body)?)
}

/// The webhook's body, validated and normalized.
impl TryFrom<Event> for Incoming {
    type Error = AppError;

    fn try_from(e: Event) -> Result<Incoming, AppError> {
        let created_at = DateTime::parse_from_rfc3339(e.created_at.trim())
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                AppError::invalid(
                    "created_at",
                    "created_at must be an RFC 3339 time with an offset, like 2026-11-22T10:00:00Z.",
                )
            })?;
        let channel = Channel::parse(&e.channel)?;
        if e.text.len() > MAX_TEXT_BYTES {
            return Err(AppError::invalid(
                "text",
                format!("text is at most {MAX_TEXT_BYTES} bytes."),
            ));
        }
        let customer = e.customer.unwrap_or_default();
        Ok(Incoming {
            conversation_id: HelpdeskConversationId::parse(&e.conversation_id.into_string())?,
            message_id: e
                .message_id
                .map(|m| HelpdeskMessageId::parse(&m.into_string()))
                .transpose()?,
            created_at,
            channel,
            text: collapse(&e.text),
            customer_email: customer_email(customer.email)?,
            customer_phone: customer_phone(customer.phone)?,
            customer_id: detail(customer.id, "customer.id")?,
        })
    }
}

impl Incoming {
    /// The normalized payload, as canonical JSON (sorted keys). Hashed, never stored.
    pub fn canonical(&self) -> String {
        json!({
            "channel": self.channel.as_str(),
            "conversation_id": &*self.conversation_id,
            "created_at": crate::server::clock::iso(self.created_at),
            "customer": {
                "email": self.customer_email,
                "id": self.customer_id,
                "phone": self.customer_phone,
            },
            "message_id": self.message_id.as_deref(),
            "text": self.text,
        })
        .to_string()
    }

    /// The message id, or (without one) the hash of the text and the time bucket.
    pub fn message_ref(&self, bucket_seconds: i64) -> String {
        match &self.message_id {
            Some(id) => id.to_string(),
            None => {
                let bucket =
                    self.created_at.timestamp().div_euclid(bucket_seconds) * bucket_seconds;
                sha256_hex(format!("{}{}", self.text.to_lowercase(), bucket).as_bytes())
            }
        }
    }

    /// `evt:rp:{conversation_id}:{message_id or hash}` (docs/events.md, "Event keys and
    /// dedupe").
    pub fn event_key(&self, bucket_seconds: i64) -> String {
        format!(
            "evt:rp:{}:{}",
            self.conversation_id,
            self.message_ref(bucket_seconds)
        )
    }
}
