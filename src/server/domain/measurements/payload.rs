//! A measurement as submitted, validated, and the payload its hash covers
//! (docs/measurements.md, "Normalizing"): weight in kg with 2 decimals, the timestamp in
//! UTC, the source in lower case, the unit. Floating-point safe: the weight is taken to the
//! microgram as decimal digits before it is rounded, so 70.004 kg and 70.0 + 0.004 kg are
//! the same payload.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::contract::{self, measurements::Measurement};
use crate::server::crypto::sha256_hex;
use crate::server::domain::fields::{self, parse_time};
use crate::server::domain::measurements::ids::{MeasuredUserId, MeasurementId};

/// What the payload hash covers, normalized (kg with 2 decimals, UTC, lower-case source).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    pub weight_kg: String,
    pub timestamp: String,
    pub unit: String,
    pub source: String,
}

/// A measurement as submitted, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    pub measurement_id: MeasurementId,
    pub user_id: MeasuredUserId,
    pub weight: f64,
    /// `kg`, `lb` or `g`.
    pub unit: String,
    pub timestamp: DateTime<Utc>,
    pub source: String,
}

const KG_PER_LB: f64 = 0.453_592_37;

/// Reads one measurement from JSON (a single body, or one item of a batch).
pub fn parse(v: &Value, now: DateTime<Utc>) -> Result<Submission, AppError> {
    Submission::new(contract::from_value(v)?, now)
}

impl Submission {
    /// Checks one measurement. `now` bounds how far in the future a timestamp may be.
    pub fn new(m: Measurement, now: DateTime<Utc>) -> Result<Submission, AppError> {
        let measurement_id = MeasurementId::parse(m.measurement_id)?;
        let user_id = MeasuredUserId::parse(m.user_id)?;
        if !m.weight.is_finite() {
            return Err(AppError::invalid("weight", "weight must be a number."));
        }
        let unit = fields::required("unit", m.unit, 8)?.to_ascii_lowercase();
        if !matches!(unit.as_str(), "kg" | "lb" | "g") {
            return Err(AppError::invalid("unit", "unit is kg, lb or g."));
        }
        let kg = to_kg(m.weight, &unit);
        if !(kg > 0.0 && kg <= 1000.0) {
            return Err(AppError::invalid(
                "weight",
                "weight must be more than 0 and at most 1000 kg.",
            ));
        }
        let raw_time = fields::required("timestamp", m.timestamp, 64)?;
        let timestamp = parse_time(&raw_time, "timestamp")?;
        if timestamp > now + Duration::hours(1) {
            return Err(AppError::invalid(
                "timestamp",
                "timestamp is more than an hour in the future; check the device clock.",
            ));
        }
        // Control characters are refused by `required`.
        let source = fields::required("source", m.source, 64)?.to_lowercase();
        Ok(Submission {
            measurement_id,
            user_id,
            weight: m.weight,
            unit,
            timestamp,
            source,
        })
    }
}

fn to_kg(weight: f64, unit: &str) -> f64 {
    match unit {
        "lb" => weight * KG_PER_LB,
        "g" => weight / 1000.0,
        _ => weight,
    }
}

/// Kilograms with 2 decimals, rounded half up from the value to the microgram.
pub fn kg_2dp(weight: f64, unit: &str) -> String {
    let micro = format!("{:.6}", to_kg(weight, unit));
    let (whole, frac) = micro.split_once('.').unwrap_or((&micro, "0"));
    let micro_units: i128 =
        whole.parse::<i128>().unwrap_or(0) * 1_000_000 + frac.parse::<i128>().unwrap_or(0);
    let hundredths = (micro_units + 5_000) / 10_000;
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

impl Submission {
    pub fn payload(&self) -> Payload {
        Payload {
            weight_kg: kg_2dp(self.weight, &self.unit),
            timestamp: iso(self.timestamp),
            unit: "kg".into(),
            source: self.source.clone(),
        }
    }
}

/// SHA-256 of the normalized payload (fields in a fixed order).
pub fn hash(p: &Payload) -> String {
    sha256_hex(serde_json::to_string(p).unwrap_or_default().as_bytes())
}

/// Field by field, what differs between the first submission and this one.
pub fn diff(original: &Payload, submitted: &Payload) -> Value {
    let a = serde_json::to_value(original).unwrap_or_default();
    let b = serde_json::to_value(submitted).unwrap_or_default();
    let mut out = Map::new();
    if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
        for (k, va) in a {
            let vb = b.get(k).cloned().unwrap_or(Value::Null);
            if *va != vb {
                out.insert(k.clone(), json!({"original": va, "submitted": vb}));
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(weight: f64, unit: &str, ts: &str, source: &str) -> Submission {
        Submission {
            measurement_id: MeasurementId::parse("m1").unwrap(),
            user_id: MeasuredUserId::parse("u1").unwrap(),
            weight,
            unit: unit.into(),
            timestamp: DateTime::parse_from_rfc3339(ts)
                .unwrap()
                .with_timezone(&Utc),
            source: source.into(),
        }
    }

    #[test]
    fn normalization_is_unit_timezone_and_float_safe() {
        assert_eq!(kg_2dp(70.004, "kg"), "70.00");
        assert_eq!(kg_2dp(70.0 + 0.004, "kg"), "70.00");
        assert_eq!(kg_2dp(70.005, "kg"), "70.01");
        assert_eq!(kg_2dp(154.32, "lb"), "70.00");
        assert_eq!(kg_2dp(70_000.0, "g"), "70.00");
        assert_eq!(kg_2dp(0.1 + 0.2, "kg"), "0.30");
        let a = sub(70.0, "kg", "2025-09-15T10:00:00Z", "scale");
        let b = sub(154.32, "lb", "2025-09-15T12:00:00+02:00", "scale");
        assert_eq!(
            hash(&a.payload()),
            hash(&b.payload()),
            "same weight and instant"
        );
        let c = sub(71.0, "kg", "2025-09-15T10:00:00Z", "scale");
        let d = diff(&a.payload(), &c.payload());
        assert_eq!(d["weight_kg"]["original"], "70.00");
        assert_eq!(d["weight_kg"]["submitted"], "71.00");
        assert!(d.get("timestamp").is_none());
    }
}
