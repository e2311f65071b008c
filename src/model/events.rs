//! What the Events and conversation pages show. No message text anywhere.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub event_key: String,
    /// Masked: a conversation id can carry the recipient's phone or email.
    pub conversation_id: String,
    /// The conversation's link reference (no personal data in URLs).
    pub conversation_ref: String,
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
    /// The link reference of the conversation the events are filtered by (empty: all).
    #[serde(default)]
    pub conversation_ref: String,
}

/// Table B as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateView {
    /// Masked.
    pub conversation_id: String,
    pub conversation_ref: String,
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

/// Overview's event figures: the last 60 minutes, and today's safe-mode suppressions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventStats {
    pub events_last_hour: u64,
    pub per_minute: f64,
    /// Calls of the helpdesk webhook: events and their duplicate deliveries.
    pub received_last_hour: u64,
    pub duplicates_last_hour: u64,
    /// Duplicates / calls received, in percent; `None` without calls.
    pub duplicate_rate_pct: Option<f64>,
    /// The hour was busier than a page view reads: its figures are estimated from the
    /// newest events (their rate over the span they cover).
    #[serde(default)]
    pub events_estimated: bool,
    pub suppressed_today: u64,
    /// False: today's suppressed records were counted up to a bound, and there are more.
    #[serde(default)]
    pub suppressed_exact: bool,
    pub outbox_pending: u64,
    /// Where side effects go and how that goes (the URL shown by role).
    pub receiver: crate::model::outbox::ReceiverView,
}

/// One conversation's story, oldest first: each event the helpdesk sent (its message id,
/// duplicate deliveries counted), what was decided, and each side effect with where it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub entries: Vec<TimelineEntry>,
    /// Older events exist than the ones shown (the newest are shown).
    pub older: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// RFC 3339: when the event arrived.
    pub at: String,
    /// Redacted.
    pub message_id: Option<String>,
    /// Deliveries of the same event after the first (answered from the record, no effect).
    pub duplicates: i64,
    /// The decision in words ("Decided “order status” for billing (90 % sure)").
    pub decision: String,
    pub effects: Vec<TimelineEffect>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineEffect {
    /// `route`, `tag`, …, in words: "Route to billing".
    pub what: String,
    /// `not queued`, `queued`, `held`, `sending`, `sent`, `delivered`, `failed`, `dead`,
    /// `discarded`: "sent" only once it went out, "delivered" only once the receiver took it.
    pub state: String,
    /// The state in a sentence, with the last attempt's answer.
    pub words: String,
    pub attempts: i64,
    /// RFC 3339: when it reached this state.
    pub at: String,
}
