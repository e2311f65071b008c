//! What the Events, conversation and Audit pages show. No message text anywhere.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub event_key: String,
    pub conversation_id: String,
    pub message_id: Option<String>,
    pub channel: String,
    pub created_at: String,
    pub status: String,
    pub mode: String,
    pub safe_mode: bool,
    pub intent: Option<String>,
    pub team: Option<String>,
    pub duplicates: i64,
    pub attempts: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    pub events: Vec<EventRow>,
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub conversation_id: String,
    pub at: String,
    pub action_type: String,
    pub payload: String,
    pub idempotency_key: String,
    pub result: String,
    pub actor: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRows {
    pub rows: Vec<AuditRow>,
    pub next_cursor: Option<String>,
}

/// Table B as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateView {
    pub conversation_id: String,
    pub exists: bool,
    pub version: i64,
    pub updated_at: String,
    pub last_intent: Option<String>,
    pub last_routed_team: Option<String>,
    pub last_routing_confidence: Option<f64>,
    pub last_processed_message_id: Option<String>,
    pub risk_flags: Vec<String>,
    pub pending_flow: Option<String>,
    pub last_auto_reply: Option<String>,
    pub auto_replies_sent: Vec<String>,
    pub order_ref_last4: Option<String>,
    pub events_seen: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxRow {
    pub action_key: String,
    pub action_type: String,
    pub target: String,
    pub conversation_id: String,
    pub queued_at: String,
}

/// Overview's event figures: the last 60 minutes, and today's safe-mode suppressions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventStats {
    pub events_last_hour: u64,
    pub per_minute: f64,
    pub deliveries_last_hour: u64,
    pub duplicates_last_hour: u64,
    /// Duplicates / deliveries, in percent; `None` without deliveries.
    pub duplicate_rate_pct: Option<f64>,
    pub suppressed_today: u64,
    pub outbox_pending: u64,
    pub webhook: Option<String>,
}
