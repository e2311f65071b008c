//! The items of the measurements table (docs/data-model.md, "measurements").

use crate::server::domain::measurements::payload::Payload;
use serde::{Deserialize, Serialize};

/// What became of an attempt: its audit record's `action` (and the outcome in
/// `outcome_shard`, the outcome index's key), and the hourly counter it adds to. Stored as the names below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    #[serde(rename = "accepted")]
    Accepted,
    #[serde(rename = "duplicate")]
    Duplicate,
    #[serde(rename = "conflict")]
    Conflict,
    #[serde(rename = "out_of_order")]
    OutOfOrder,
    #[serde(rename = "invalid")]
    Invalid,
    #[serde(rename = "override")]
    Override,
    #[serde(rename = "skipped")]
    Skipped,
}

impl Action {
    pub const ALL: [Action; 7] = [
        Action::Accepted,
        Action::Duplicate,
        Action::Conflict,
        Action::OutOfOrder,
        Action::Invalid,
        Action::Override,
        Action::Skipped,
    ];

    /// The stored name (the same as serde's).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accepted => "accepted",
            Action::Duplicate => "duplicate",
            Action::Conflict => "conflict",
            Action::OutOfOrder => "out_of_order",
            Action::Invalid => "invalid",
            Action::Override => "override",
            Action::Skipped => "skipped",
        }
    }

    /// The action stored as `name`, if there is one.
    pub fn parse(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdempItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub measurement_id: String,
    pub payload_hash: String,
    pub payload: Payload,
    /// The answer the first submission got, as its JSON text: replayed byte for byte
    /// (a map would bring `70.0` back as `70`).
    pub result: String,
    pub processed_at: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OrderItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub last_accepted: String,
    pub last_measurement_id: String,
    /// Moves by one with every acceptance: the check-and-move is conditioned on it.
    pub version: i64,
    pub updated_at: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub measurement_id: String,
    pub user_id: String,
    pub weight_kg: f64,
    pub weight: f64,
    pub unit: String,
    pub timestamp: String,
    pub source: String,
    pub received_at: String,
    /// The ordering version this acceptance made (0: ordering off or an override).
    pub seq: i64,
    #[serde(rename = "override")]
    pub overridden: bool,
    pub correlation_id: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub user_id: String,
    pub measurement_id: String,
    pub action: Action,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    pub correlation_id: String,
    pub at: String,
    pub ttl: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_store_their_names() {
        for a in Action::ALL {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
            assert_eq!(
                serde_dynamo::to_attribute_value::<_, aws_sdk_dynamodb::types::AttributeValue>(a)
                    .unwrap()
                    .as_s()
                    .unwrap(),
                a.as_str()
            );
            assert_eq!(Action::parse(a.as_str()), Some(a));
        }
        assert_eq!(Action::parse("nope"), None);
    }
}
