//! The helpdesk events' tables (docs/events.md; keys and indexes in docs/data-model.md):
//! the event and side-effect records of `rp_mw_idempotency-<env>` (Table A) and the
//! per-conversation state of `rp_mw_conversation_state-<env>` (Table B).
//!
//! Both kinds of Table A record are claims: a worker puts the record with its own nonce
//! and a lease, and every later write of that worker is conditioned on the nonce, so a
//! worker that lost its claim (it was slow, its lease ran out, another took over) can
//! never overwrite what the new owner did.

use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::items::Claim;

mod claims;
mod decisions;
mod reads;
pub use claims::*;
pub use decisions::*;
pub use reads::*;

/// What a Table A record is: stored as `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordKind {
    /// An inbound event (`evt:` keys).
    #[serde(rename = "event")]
    Event,
    /// A side effect (`act:` keys).
    #[serde(rename = "action")]
    Action,
}

/// Where an event is: `processing` → `decided` → `processed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventStatus {
    #[serde(rename = "processing")]
    Processing,
    /// The decision is recorded (with the state and its audit); side effects may be pending.
    #[serde(rename = "decided")]
    Decided,
    #[serde(rename = "processed")]
    Processed,
}

impl EventStatus {
    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventStatus::Processing => "processing",
            EventStatus::Decided => "decided",
            EventStatus::Processed => "processed",
        }
    }
}

/// What the automation switch allowed when an event was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Automation off: route, tag, assign, escalate; no auto-reply.
    #[serde(rename = "route_only")]
    RouteOnly,
    #[serde(rename = "automation_candidate")]
    AutomationCandidate,
}

impl Mode {
    pub fn of(automation_enabled: bool) -> Mode {
        if automation_enabled {
            Mode::AutomationCandidate
        } else {
            Mode::RouteOnly
        }
    }

    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::RouteOnly => "route_only",
            Mode::AutomationCandidate => "automation_candidate",
        }
    }
}

/// The kinds of side effect a decision can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionType {
    #[serde(rename = "route")]
    Route,
    #[serde(rename = "tag")]
    Tag,
    #[serde(rename = "assign")]
    Assign,
    #[serde(rename = "auto_reply")]
    AutoReply,
    #[serde(rename = "escalate")]
    Escalate,
}

impl ActionType {
    /// The stored string, also the audit record's `action_type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionType::Route => "route",
            ActionType::Tag => "tag",
            ActionType::Assign => "assign",
            ActionType::AutoReply => "auto_reply",
            ActionType::Escalate => "escalate",
        }
    }
}

/// Where a side effect is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionStatus {
    /// A worker holds it and is delivering it.
    #[serde(rename = "claimed")]
    Claimed,
    #[serde(rename = "delivered")]
    Delivered,
    /// No webhook is configured: it waits in the outbox.
    #[serde(rename = "queued")]
    Queued,
    /// Delivery failed in a way worth retrying: the next owner may claim it again.
    #[serde(rename = "retry")]
    Retry,
    /// The receiver refused it (4xx other than 429): retrying would not help.
    #[serde(rename = "rejected")]
    Rejected,
}

impl ActionStatus {
    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Claimed => "claimed",
            ActionStatus::Delivered => "delivered",
            ActionStatus::Queued => "queued",
            ActionStatus::Retry => "retry",
            ActionStatus::Rejected => "rejected",
        }
    }

    /// Nothing is left to do for it: a re-run skips it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ActionStatus::Delivered | ActionStatus::Queued | ActionStatus::Rejected
        )
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(EventStatus, Mode, ActionType, ActionStatus);

/// An inbound event (Table A, `evt:` keys). Never holds the message body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub event_id: String,
    /// Always [`RecordKind::Event`].
    pub kind: RecordKind,
    pub status: EventStatus,
    pub mode: Mode,
    pub conversation_id: String,
    pub created_at: String,
    pub last_processed_at: String,
    /// From the payload's `created_at`.
    pub received_at: String,
    pub expires_at: i64,
    pub safe_mode: bool,
    pub automation_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    pub payload_sha256: String,
    pub payload_bytes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    pub channel: String,
    /// The decision as recorded (redacted JSON), once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Deliveries of this event after the first.
    #[serde(default)]
    pub duplicates: i64,
    /// How many workers claimed it (more than 1: a crash was recovered).
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// Index keys: `YYYY-MM-DD` of `created_at`, and `created_at#event_id`.
    pub event_day: String,
    pub created_sk: String,
}

/// A side effect (Table A, `act:` keys).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub event_id: String,
    /// Always [`RecordKind::Action`].
    pub kind: RecordKind,
    pub action_type: ActionType,
    /// Team, tag, assignee or reply type.
    pub target: String,
    pub conversation_id: String,
    /// The event that caused it.
    pub source_event: String,
    pub status: ActionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: i64,
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// Set only while it waits in the outbox (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox_sk: Option<String>,
}

/// A multi-step flow waiting for the customer. `type` stays a string: the only flow today
/// is `need_order_number`, and its name belongs to the decision rules, not to storage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingFlow {
    #[serde(rename = "type")]
    pub flow_type: String,
    pub requested_at: String,
    pub attempts: i64,
}

/// The last auto-reply sent. Reply types come from the configured rules: an open set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LastAutoReply {
    #[serde(rename = "type")]
    pub reply_type: String,
    pub sent_at: String,
    pub source_message_id: String,
}

/// Table B: the little a multi-step flow needs, and the last decision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationState {
    pub conversation_id: String,
    /// Optimistic concurrency: every write names the version it read.
    pub version: i64,
    pub updated_at: String,
    pub expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_processed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_processed_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_routed_team: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_routing_confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_intent: Option<String>,
    #[serde(
        with = "serde_dynamo::string_set",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub risk_flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_flow: Option<PendingFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_auto_reply: Option<LastAutoReply>,
    /// Every auto-reply type sent in this conversation: none is sent twice.
    #[serde(
        with = "serde_dynamo::string_set",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auto_replies_sent: Vec<String>,
    /// The order number the customer gave, as its last 4 characters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_ref_last4: Option<String>,
    /// `created_at` of the newest event applied: an older event arriving late does not
    /// overwrite the `last_*` fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_at: Option<String>,
    /// Events applied so far.
    #[serde(default)]
    pub events_seen: i64,
}

#[cfg(test)]
mod tests;
