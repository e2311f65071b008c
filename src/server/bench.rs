//! `ops-console bench`: the idempotency engine against the bare operation, side by side in
//! one run on its own in-memory DynamoDB Local. DynamoDB Local's absolute speed says little
//! about AWS; the ratios are the result. Figures also go to `target/bench/report.json`.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::idempotency::{Call, Engine, KeyInputs, Outcome, Secret};
use crate::server::dynamo_local::{self, DynamoLocal};
use crate::server::ids::random_hex;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::{schema, Connection, Store};

struct Series {
    name: &'static str,
    samples: Vec<Duration>,
    wall: Duration,
    requests: u64,
}

impl Series {
    fn pct(&self, p: f64) -> f64 {
        let mut s = self.samples.clone();
        s.sort();
        let i = ((s.len() as f64 - 1.0) * p).round() as usize;
        s.get(i).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
    }
    fn per_sec(&self) -> f64 {
        self.samples.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The bare operation: one audit record written once (a conditional put), as the
/// middleware's side effects are.
async fn bare(store: &Store, id: &str) -> Result<(), String> {
    let item = AuditItem::new("bench", "bench_write", chrono::Utc::now(), id, 1);
    audit::put(store, &item).await.map_err(|e| e.to_string())
}

pub async fn run(n: &usize) -> Result<(), String> {
    let n = *n;
    let local = DynamoLocal::start(dynamo_local::Options {
        jar: None,
        data_dir: None,
        port: None,
        log_file: None,
    })
    .map_err(|e| e.to_string())?;
    let prefix = format!("bench{}_", random_hex(3));
    let config = Config::for_tests(&local.endpoint(), &prefix);
    let store = Store::connect(Connection {
        endpoint: Some(&local.endpoint()),
        region: &config.dynamodb.region,
        table_prefix: &prefix,
        env: config.env.as_str(),
    })
    .await;
    store
        .wait_until_reachable(Duration::from_secs(60))
        .await
        .map_err(|e| e.to_string())?;
    schema::bootstrap(&store).await.map_err(|e| e.to_string())?;
    let engine = Engine::new(
        store.clone(),
        Secret::new(random_hex(32).into_bytes()),
        Clock::default(),
        config.idempotency.clone(),
    );
    eprintln!("bench: {n} calls per series on DynamoDB Local (warming up)");
    for i in 0..50 {
        bare(&store, &format!("warm-{i}")).await?;
    }

    let mut series = Vec::new();
    // Interleaved rounds so drift in DynamoDB Local hits every series alike.
    let mut bare_s = Series {
        name: "bare conditional write",
        samples: vec![],
        wall: Duration::ZERO,
        requests: 0,
    };
    let mut fresh_s = Series {
        name: "engine, new key (claim + write + complete)",
        samples: vec![],
        wall: Duration::ZERO,
        requests: 0,
    };
    let mut replay_s = Series {
        name: "engine, duplicate (replay)",
        samples: vec![],
        wall: Duration::ZERO,
        requests: 0,
    };
    for i in 0..n {
        let r0 = store.requests().total();
        let t = Instant::now();
        bare(&store, &format!("bare-{i}")).await?;
        let d = t.elapsed();
        bare_s.samples.push(d);
        bare_s.wall += d;
        bare_s.requests += store.requests().total() - r0;

        let inputs = KeyInputs::new().id("request", format!("req-{i}"));
        let call = Call {
            tenant: "bench",
            scope: "bench.write",
            inputs: &inputs,
            fingerprint: None,
        };
        let r0 = store.requests().total();
        let t = Instant::now();
        let out = engine
            .run(&call, |a| {
                let store = store.clone();
                async move {
                    bare(&store, &a.key_hash).await?;
                    Ok::<_, String>(json!({"ok": true}))
                }
            })
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, Outcome::Fresh(_)) {
            return Err(format!("expected a fresh run, got {out:?}"));
        }
        fresh_s.samples.push(d);
        fresh_s.wall += d;
        fresh_s.requests += store.requests().total() - r0;

        let r0 = store.requests().total();
        let t = Instant::now();
        let out = engine
            .run(&call, |_| async {
                Err::<serde_json::Value, _>("must not run".to_string())
            })
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, Outcome::Replayed(_)) {
            return Err(format!("expected a replay, got {out:?}"));
        }
        replay_s.samples.push(d);
        replay_s.wall += d;
        replay_s.requests += store.requests().total() - r0;
    }
    series.push(bare_s);
    series.push(fresh_s);
    series.push(replay_s);

    let base_p50 = series[0].pct(0.5);
    let base_rate = series[0].per_sec();
    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>10} {:>12} {:>10}",
        "series", "p50 ms", "p99 ms", "calls/s", "req/call", "p50 ratio", "rate ratio"
    );
    let mut rows = Vec::new();
    for s in &series {
        let reqs = s.requests as f64 / s.samples.len().max(1) as f64;
        println!(
            "{:<44} {:>9.2} {:>9.2} {:>9.0} {:>10.2} {:>11.2}x {:>9.2}x",
            s.name,
            s.pct(0.5),
            s.pct(0.99),
            s.per_sec(),
            reqs,
            s.pct(0.5) / base_p50.max(1e-9),
            s.per_sec() / base_rate.max(1e-9)
        );
        rows.push(json!({
            "series": s.name, "calls": s.samples.len(), "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99),
            "calls_per_sec": s.per_sec(), "dynamodb_requests_per_call": reqs,
            "p50_ratio_vs_bare": s.pct(0.5) / base_p50.max(1e-9),
            "rate_ratio_vs_bare": s.per_sec() / base_rate.max(1e-9),
        }));
    }
    let report = json!({"idempotency_engine": rows, "dynamodb": "DynamoDB Local (in memory)", "calls_per_series": n});
    std::fs::create_dir_all("target/bench").map_err(|e| e.to_string())?;
    std::fs::write(
        "target/bench/report.json",
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    println!("\nwritten to target/bench/report.json");
    local.stop();
    Ok(())
}
