//! Measurements: one measurement at a time, with idempotency and ordering against the
//! same work without them, and against a lone `PutItem` of the measurement.

use std::time::Instant;

use chrono::{Duration, Utc};
use serde_json::{json, Value};

use super::{plain_put, print_rows, Series};
use ops_console::server::config::Config;
use ops_console::server::domain::measurements::payload::parse;
use ops_console::server::services::measurements::{Context, Measurements, Outcome};
use ops_console::server::store::measurements::MeasurementItem;
use ops_console::server::store::schema::MEASUREMENTS;
use ops_console::server::store::Store;

pub async fn bench_measurements(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<Value>, String> {
    let guarded = Measurements::new(store.clone(), config.measurements.clone());
    let mut off = config.measurements.clone();
    off.enable_idempotency = false;
    off.enable_ordering = false;
    let unguarded = Measurements::new(store.clone(), off);
    let ctx = Context {
        correlation_id: "bench".into(),
        force_override: false,
        admin: false,
    };
    let start = Utc::now() - Duration::days(30);
    let mut plain = Series::new("measurements: lone PutItem (baseline)");
    let mut bare = Series::new("measurements: stored + audited, no guards");
    let mut full = Series::new("measurements: + idempotency + ordering");
    let mut dup = Series::new("measurements: duplicate (same id, same payload)");
    for i in 0..n {
        let at = start + Duration::seconds(i as i64 * 60);
        let body = |user: &str, id: String| {
            json!({"measurement_id": id, "user_id": user, "weight": 70.0 + (i % 50) as f64 / 10.0,
                   "unit": "kg", "timestamp": at.to_rfc3339(), "source": "bench"})
        };
        let s_bare =
            parse(&body("bench-bare", format!("b{i}")), Utc::now()).map_err(|e| e.to_string())?;
        let s_full =
            parse(&body("bench-full", format!("f{i}")), Utc::now()).map_err(|e| e.to_string())?;

        let item = MeasurementItem {
            pk: "USER#bench-plain".into(),
            sk: format!("MEAS#{}#p{i}", at.to_rfc3339()),
            measurement_id: format!("p{i}"),
            user_id: "bench-plain".into(),
            weight_kg: s_bare.weight,
            weight: s_bare.weight,
            unit: "kg".into(),
            timestamp: at.to_rfc3339(),
            source: "bench".into(),
            received_at: Utc::now().to_rfc3339(),
            seq: 0,
            overridden: false,
            correlation_id: "bench".into(),
            ttl: (Utc::now() + Duration::days(1)).timestamp(),
        };
        let r0 = store.requests().total();
        let t = Instant::now();
        plain_put(store, MEASUREMENTS.base, &item).await?;
        plain.add(t.elapsed(), store.requests().total() - r0);

        for (series, m, s, want) in [
            (&mut bare, &unguarded, &s_bare, "accepted"),
            (&mut full, &guarded, &s_full, "accepted"),
            (&mut dup, &guarded, &s_full, "duplicate"),
        ] {
            let r0 = store.requests().total();
            let t = Instant::now();
            let out = m
                .submit(s, &ctx, Utc::now())
                .await
                .map_err(|e| e.to_string())?;
            series.add(t.elapsed(), store.requests().total() - r0);
            if out.name() != want {
                return Err(format!("expected {want}, got {}", out.name()));
            }
            if let Outcome::OutOfOrder { .. } = out {
                return Err("a benchmark measurement came out of order".into());
            }
        }
    }
    Ok(print_rows("measurements", &[plain, bare, full, dup]))
}
