//! What the Audit page (and a conversation's records on the Events page) shows: records
//! with their sentence, masked.

use serde::{Deserialize, Serialize};

/// Every action type an audit record can have, with what people call it.
pub const ACTION_TYPES: &[(&str, &str)] = &[
    ("decision", "Decision"),
    ("route", "Route"),
    ("tag", "Tag"),
    ("assign", "Assign"),
    ("auto_reply", "Auto-reply"),
    ("escalate", "Escalate"),
    ("kill_switch_change", "Kill switch change"),
    ("kill_switch_trigger", "Kill switch trigger URL"),
    ("kill_switch_trip", "Kill switch trip"),
    ("reveal_contact", "Contact revealed"),
    ("user_change", "User change"),
    ("many_lookups", "Many lookups by typed values"),
    ("api_key_created", "API key created"),
    ("api_key_revoked", "API key revoked"),
    ("idempotency_key_expired", "Idempotency key expired"),
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    /// Masked, or `system#…` for console-level records.
    pub conversation_id: String,
    /// The link reference of the conversation; `None` for console-level records.
    pub conversation_ref: Option<String>,
    pub at: String,
    pub action_type: String,
    /// What happened, in words ("Routed to payments — suppressed by safe mode").
    #[serde(default)]
    pub summary: String,
    pub payload: String,
    pub idempotency_key: String,
    pub result: String,
    pub actor: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRows {
    pub rows: Vec<AuditRow>,
    pub next_cursor: Option<String>,
    /// The conversation the rows are filtered by, masked, when they are.
    #[serde(default)]
    pub conversation: Option<String>,
    /// Its link reference (empty: none), for the paging links.
    #[serde(default)]
    pub conversation_ref: String,
    /// The day and time range read, in the reader's zone, in words.
    #[serde(default)]
    pub window: Option<String>,
}
