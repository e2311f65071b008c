//! What the Measurements page and the measurement part of the Audit page show.

use serde::{Deserialize, Serialize};

use crate::model::idempotency::ScopeHealth;

/// An accepted measurement on the chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub timestamp: String,
    pub weight_kg: f64,
    pub overridden: bool,
}

/// A rejected attempt on the chart, at the time and weight it was submitted with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    pub timestamp: String,
    pub weight_kg: f64,
    pub action: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub at: String,
    pub user_id: String,
    pub measurement_id: String,
    pub action: String,
    pub reason: String,
    pub weight_kg: String,
    pub timestamp: String,
    pub source: String,
    pub correlation_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptPage {
    pub rows: Vec<AttemptRow>,
    pub next: Option<String>,
    /// The link reference of the user the attempts are of (empty: by outcome).
    #[serde(default)]
    pub user_ref: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateHour {
    /// `YYYY-MM-DDTHH` (UTC).
    pub hour: String,
    pub attempts: u64,
    pub accepted: u64,
    pub duplicate: u64,
    pub conflict: u64,
    pub out_of_order: u64,
    pub invalid: u64,
    pub overrides: u64,
    pub skipped: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Whose attempts: "every user" or "this user".
    #[serde(default)]
    pub of: String,
    pub window: String,
    pub totals: RateHour,
    pub series: Vec<RateHour>,
    pub duplicate_pct: Option<f64>,
    pub out_of_order_pct: Option<f64>,
    pub override_pct: Option<f64>,
    pub alert_duplicate_max_pct: f64,
    pub duplicate_breached: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasurementsView {
    /// The measurement alert rules over every user (docs/measurements.md), judged as the alerter
    /// judges them.
    #[serde(default)]
    pub rules: Vec<RuleLine>,
    /// How long the chosen user's conflicts took to resolve, in words (empty: none).
    #[serde(default)]
    pub resolution: String,
    /// The user shown, as the reader may see their id.
    pub user: String,
    /// The user's link reference (empty: none chosen).
    #[serde(default)]
    pub user_ref: String,
    pub points: Vec<Point>,
    pub rejected: Vec<Rejected>,
    pub attempts: AttemptPage,
    pub rates: Rates,
    /// The request-level idempotency of the measurement endpoints.
    pub idempotency: Vec<ScopeHealth>,
}

/// One alert rule's verdict now, as the Measurements page lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleLine {
    pub summary: String,
    pub breached: bool,
}
