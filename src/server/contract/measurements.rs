//! `/api/v1/measurements`: devices post weight measurements, one or a batch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// One measurement as a device sends it.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct Measurement {
    /// The device's id for this reading: sending it again is a no-op.
    #[schema(max_length = 128, min_length = 1)]
    pub measurement_id: String,
    #[schema(max_length = 128, min_length = 1)]
    pub user_id: String,
    pub weight: f64,
    /// `kg`, `lb` or `g`.
    #[schema(max_length = 8)]
    pub unit: String,
    /// RFC 3339 with an offset; at most an hour ahead.
    #[schema(max_length = 64)]
    pub timestamp: String,
    #[schema(max_length = 64, min_length = 1)]
    pub source: String,
}

/// How a measurement was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stored {
    Accepted,
    /// Older than the user's last accepted one, stored by an admin's override.
    Override,
}

/// A stored measurement: the answer to its first submission, and to every repeat of it.
/// Members are in alphabetical order, the order answers stored before had.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, ToSchema)]
pub struct MeasurementResult {
    pub correlation_id: String,
    pub measurement_id: String,
    /// The user's ordering version this measurement moved to (0 for an override).
    pub seq: i64,
    pub source: String,
    pub status: Stored,
    pub timestamp: String,
    pub user_id: String,
    pub weight_kg: f64,
}

/// A batch; each item is read on its own, so one bad item does not spoil the others.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct MeasurementBatch {
    #[schema(value_type = Vec<Measurement>, max_items = 500)]
    pub measurements: Vec<Value>,
}

/// What became of one item of a batch, at its index in the request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct BatchItem {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measurement_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// accepted, override, duplicate, conflict, out_of_order, invalid, skipped, unavailable
    pub status: String,
    pub http_status: u16,
    /// invalid: the field that is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// accepted, override, duplicate: the stored measurement; conflict: the first one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<MeasurementResult>,
    /// conflict: field by field, `{"original": …, "submitted": …}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub payload_diff: Option<Value>,
    /// out_of_order: the user's last accepted timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_accepted: Option<String>,
    /// out_of_order: the earliest timestamp accepted now (resubmit from it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_from: Option<String>,
}

/// A batch's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
pub struct BatchReport {
    pub items: Vec<BatchItem>,
    /// How many items came to each status.
    pub summary: BTreeMap<String, usize>,
    /// The items worth sending again, by index, in the order to send them: each user's
    /// skipped or not-stored-now items oldest first (resending them in this order keeps
    /// every user's timestamps moving forward). Out-of-order items are not in it: they need
    /// a newer timestamp or an admin's override.
    pub retry_order: Vec<usize>,
}
