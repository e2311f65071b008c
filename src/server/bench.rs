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

    let rows = print_rows("idempotency engine", &series);
    let event_rows = bench_events(&store, &config, n).await?;
    let report = json!({
        "idempotency_engine": rows,
        "events": event_rows,
        "dynamodb": "DynamoDB Local (in memory)",
        "calls_per_series": n,
    });
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

/// One unconditional `PutItem` of a serializable item.
async fn plain_put<T: serde::Serialize>(store: &Store, base: &str, item: &T) -> Result<(), String> {
    let av = serde_dynamo::to_item(item).map_err(|e| e.to_string())?;
    store
        .client()
        .put_item()
        .table_name(store.table(base))
        .set_item(Some(av))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn print_rows(title: &str, series: &[Series]) -> Vec<serde_json::Value> {
    let base_p50 = series[0].pct(0.5);
    let base_rate = series[0].per_sec();
    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>10} {:>12} {:>10}",
        title, "p50 ms", "p99 ms", "calls/s", "req/call", "p50 ratio", "rate ratio"
    );
    series
        .iter()
        .map(|s| {
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
            json!({
                "series": s.name, "calls": s.samples.len(), "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99),
                "calls_per_sec": s.per_sec(), "dynamodb_requests_per_call": reqs,
                "p50_ratio_vs_baseline": s.pct(0.5) / base_p50.max(1e-9),
                "rate_ratio_vs_baseline": s.per_sec() / base_rate.max(1e-9),
            })
        })
        .collect()
}

/// Event ingestion: a new event and its duplicate against the same items written plainly
/// (event record, conversation state, decision audit, one side effect and its audit: what a
/// pipeline without conditions, reads or transactions would write).
async fn bench_events(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<serde_json::Value>, String> {
    use crate::model::switches::Switch;
    use crate::server::domain::events::parse;
    use crate::server::domain::ingest::{Ingest, Outcome as IngestOutcome};
    use crate::server::domain::kill_switches::{change, ChangeRequest, Ttls};
    use crate::server::store::mw::{ActionRecord, ConversationState, EventRecord};
    use crate::server::store::schema::{MW_CONVERSATION_STATE, MW_IDEMPOTENCY};

    let clock = Clock::default();
    let ingest = Ingest::new(
        store.clone(),
        clock.clone(),
        std::sync::Arc::new(config.clone()),
    )?;
    let current = crate::server::store::switches::load(store, clock.now())
        .await
        .map_err(|e| e.to_string())?;
    let req = ChangeRequest {
        switch: Switch::SafeMode,
        enable: false,
        expected_version: current.version,
        reason: "benchmark".into(),
        confirmed: true,
    };
    let ttls = Ttls {
        audit_days: 1,
        settings_days: 1,
    };
    change(store, &req, "bench", "bench", &ttls, clock.now(), "bench")
        .await
        .map_err(|e| format!("{e:?}"))?;

    let new_series = |name| Series {
        name,
        samples: vec![],
        wall: Duration::ZERO,
        requests: 0,
    };
    let mut plain = new_series("events: plain puts, no conditions (baseline)");
    let mut fresh = new_series("events: new event (claim, decide, 1 effect)");
    let mut dup = new_series("events: duplicate delivery");
    let now = chrono::Utc::now();
    for i in 0..n {
        let body = json!({
            "conversation_id": format!("bench-c{}", i % 50),
            "message_id": format!("m-{i}"),
            "created_at": now.to_rfc3339(),
            "channel": "chat",
            "text": "hello, a quick question",
        })
        .to_string();
        let ev = parse(body.as_bytes()).map_err(|e| e.to_string())?;

        // The baseline writes the same five items, unconditionally.
        let r0 = store.requests().total();
        let t = Instant::now();
        let record = EventRecord {
            event_id: format!("plain:{i}"),
            kind: "event".into(),
            status: "processed".into(),
            mode: "route_only".into(),
            conversation_id: ev.conversation_id.clone(),
            created_at: now.to_rfc3339(),
            last_processed_at: now.to_rfc3339(),
            received_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            safe_mode: false,
            automation_enabled: false,
            source_message_id: ev.message_id.clone(),
            payload_sha256: "0".repeat(64),
            payload_bytes: 100,
            intent: Some("general".into()),
            channel: "chat".into(),
            decision: Some("{}".into()),
            duplicates: 0,
            attempts: 1,
            claim_nonce: "n".into(),
            lease_until_ms: 0,
            event_day: "plain".into(),
            created_sk: format!("plain:{i}"),
        };
        plain_put(store, MW_IDEMPOTENCY.base, &record).await?;
        let state = ConversationState {
            conversation_id: format!("plain-c{}", i % 50),
            version: i as i64 + 1,
            updated_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            ..ConversationState::default()
        };
        plain_put(store, MW_CONVERSATION_STATE.base, &state).await?;
        let audit_item = AuditItem::new("plain", "decision", now, &format!("p{i}"), 1);
        plain_put(store, schema::MW_AUDIT_ACTIONS.base, &audit_item).await?;
        let action = ActionRecord {
            event_id: format!("plain-act:{i}"),
            kind: "action".into(),
            action_type: "route".into(),
            target: "support".into(),
            conversation_id: "plain".into(),
            source_event: format!("plain:{i}"),
            status: "queued".into(),
            result: None,
            created_at: now.to_rfc3339(),
            updated_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            attempts: 1,
            claim_nonce: "n".into(),
            lease_until_ms: 0,
            outbox: None,
            outbox_sk: None,
        };
        plain_put(store, MW_IDEMPOTENCY.base, &action).await?;
        let audit_item = AuditItem::new("plain", "route", now, &format!("pa{i}"), 1);
        plain_put(store, schema::MW_AUDIT_ACTIONS.base, &audit_item).await?;
        let d = t.elapsed();
        plain.samples.push(d);
        plain.wall += d;
        plain.requests += store.requests().total() - r0;

        let r0 = store.requests().total();
        let t = Instant::now();
        let out = ingest
            .ingest(&ev, "bench")
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, IngestOutcome::Processed { .. }) {
            return Err(format!("expected a new event, got {out:?}"));
        }
        fresh.samples.push(d);
        fresh.wall += d;
        fresh.requests += store.requests().total() - r0;

        let r0 = store.requests().total();
        let t = Instant::now();
        let out = ingest
            .ingest(&ev, "bench")
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, IngestOutcome::Duplicate { .. }) {
            return Err(format!("expected a duplicate, got {out:?}"));
        }
        dup.samples.push(d);
        dup.wall += d;
        dup.requests += store.requests().total() - r0;
    }
    Ok(print_rows("event ingestion", &[plain, fresh, dup]))
}
