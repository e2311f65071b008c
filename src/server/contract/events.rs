//! `POST /api/v1/events`: one customer message from the helpdesk.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Id;

/// Who wrote it, as the helpdesk knows them (only hashes and last digits are kept).
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
pub struct Customer {
    #[schema(max_length = 256)]
    pub email: Option<String>,
    #[schema(max_length = 256)]
    pub phone: Option<String>,
    #[schema(max_length = 256)]
    pub id: Option<String>,
}

/// One customer message. Unknown fields are ignored (helpdesks send many).
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct Event {
    /// 1 to 128 letters, digits, `_`, `-`, `.`, `@`, `+` or `/`.
    #[schema(value_type = String, max_length = 128, min_length = 1, pattern = "^[A-Za-z0-9_.@+/-]+$")]
    pub conversation_id: Id,
    /// Without one, the same text within one time bucket is the same event.
    #[schema(value_type = Option<String>, max_length = 128, pattern = "^[A-Za-z0-9_.@+/-]+$")]
    pub message_id: Option<Id>,
    /// RFC 3339 with an offset.
    pub created_at: String,
    /// `email`, `chat`, `sms`, `whatsapp`, `social`, `voice` or `web`.
    #[schema(max_length = 32)]
    pub channel: String,
    /// The message (at most 100,000 bytes); only its hash is kept.
    pub text: String,
    pub customer: Option<Customer>,
}

/// One side effect the decision planned.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PlannedEffect {
    pub action_type: String,
    pub target: String,
    /// Stable across retries: the receiver's dedupe key.
    pub key: String,
    /// `delivered`, `queued`, `suppressed`, `rejected`, or `already <status>`.
    pub result: String,
}

/// What became of the event: recorded now, or a delivery of one recorded before.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct EventAnswer {
    pub event_key: String,
    pub duplicate: bool,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_mode: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_flags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<PlannedEffect>>,
}
