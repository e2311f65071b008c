//! A conversation's state (Table B, `rp_mw_conversation_state-<env>`): the little a
//! multi-step flow needs, and the last decision. The rules (`rules.rs`) produce it; the
//! store keeps it as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    /// The conversation's newest side effect: the next one waits for it (delivery order
    /// within a conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox_tail: Option<String>,
    /// The same for each named receiver: order holds per receiver (`outbox_tail` is
    /// `default`'s).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outbox_tails: BTreeMap<String, String>,
}
