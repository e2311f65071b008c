//! The idempotency engine against the bare operation it guards.

use std::time::Instant;

use serde_json::json;

use super::{print_rows, Series};
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::ids::random_hex;
use ops_console::server::services::idempotency::{Call, Engine, KeyInputs, Outcome, Secret};
use ops_console::server::store::audit::{self, AuditItem};
use ops_console::server::store::tx::Writes;
use ops_console::server::store::Store;

/// The bare operation: one audit record written once (a conditional put), as the
/// middleware's side effects are.
async fn bare(store: &Store, id: &str) -> Result<(), String> {
    let item = AuditItem::new("bench", "bench_write", chrono::Utc::now(), id, 1);
    audit::put(store, &item).await.map_err(|e| e.to_string())
}

/// The same audit record through the engine's one-request path: key and record in one
/// transaction.
async fn one_request(
    engine: &Engine,
    store: &Store,
    call: &Call<'_>,
) -> Result<Outcome<String>, String> {
    engine
        .run_writes(
            call,
            |a| async move {
                let item =
                    AuditItem::new("bench", "bench_write", chrono::Utc::now(), &a.key_hash, 1);
                let writes = audit::writes(store, &item).map_err(|e| e.to_string())?;
                Ok::<_, String>((writes, json!({"ok": true})))
            },
            |refusal| format!("refused: {refusal:?}"),
        )
        .await
        .map_err(|e| e.to_string())
}

/// An effect of two items (a change and its audit record, as the kill switches write),
/// named after `id`.
fn two_items(store: &Store, id: &str) -> Result<Writes, String> {
    let at = chrono::Utc::now();
    let change = AuditItem::new("bench", "bench_change", at, &format!("{id}-a"), 1);
    let record = AuditItem::new("bench", "bench_record", at, &format!("{id}-b"), 1);
    let a = audit::writes(store, &change).map_err(|e| e.to_string())?;
    Ok(a.and(audit::writes(store, &record).map_err(|e| e.to_string())?))
}

/// The two-item effect through the one-request path: key and both items in one transaction.
async fn one_request_two(
    engine: &Engine,
    store: &Store,
    call: &Call<'_>,
) -> Result<Outcome<String>, String> {
    engine
        .run_writes(
            call,
            |a| async move { Ok::<_, String>((two_items(store, &a.key_hash)?, json!({"ok": true}))) },
            |refusal| format!("refused: {refusal:?}"),
        )
        .await
        .map_err(|e| e.to_string())
}

/// Runs `f` once: how long it took and how many DynamoDB requests it made.
async fn timed<T, F, Fut>(store: &Store, f: F) -> Result<(std::time::Duration, u64, T), String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let r0 = store.requests().total();
    let t = Instant::now();
    let out = f().await?;
    Ok((t.elapsed(), store.requests().total() - r0, out))
}

pub async fn bench_engine(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<serde_json::Value>, String> {
    let engine = Engine::new(
        store.clone(),
        Secret::new(random_hex(32).into_bytes()),
        Clock::default(),
        config.idempotency.clone(),
    );
    eprintln!("bench: {n} calls per series on DynamoDB Local (warming up)");
    for i in 0..50 {
        bare(store, &format!("warm-{i}")).await?;
    }

    let mut series = Vec::new();
    // Interleaved rounds so drift in DynamoDB Local hits every series alike.
    let mut bare_s = Series::new("bare conditional write");
    let mut fresh_s = Series::new("engine, new key, three steps (claim, write, complete)");
    let mut replay_s = Series::new("engine, duplicate, three steps (replay)");
    let mut one_s = Series::new("engine, new key, one transaction (key + write)");
    let mut one_dup_s = Series::new("engine, duplicate, one transaction (replay)");
    // Effects that are transactions already (a kill-switch change: the switches and their
    // audit record) against that same transaction bare.
    let mut bare_tx_s = Series::new("bare transaction of a two-item effect");
    let mut two_s = Series::new("engine, new key, one transaction (key + the two items)");
    let mut two_dup_s = Series::new("engine, duplicate of the two-item effect");
    for i in 0..n {
        let r0 = store.requests().total();
        let t = Instant::now();
        bare(store, &format!("bare-{i}")).await?;
        let d = t.elapsed();
        bare_s.add(d, store.requests().total() - r0);

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
        fresh_s.add(d, store.requests().total() - r0);

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
        replay_s.add(d, store.requests().total() - r0);

        let inputs = KeyInputs::new().id("request", format!("one-{i}"));
        let call = Call {
            tenant: "bench",
            scope: "bench.write_one",
            inputs: &inputs,
            fingerprint: None,
        };
        let (d, reqs, out) = timed(store, || one_request(&engine, store, &call)).await?;
        if !matches!(out, Outcome::Fresh(_)) {
            return Err(format!("expected a fresh run, got {out:?}"));
        }
        one_s.add(d, reqs);
        let (d, reqs, out) = timed(store, || one_request(&engine, store, &call)).await?;
        if !matches!(out, Outcome::Replayed(_)) {
            return Err(format!("expected a replay, got {out:?}"));
        }
        one_dup_s.add(d, reqs);

        let (d, reqs, out) = timed(store, || async {
            let writes = two_items(store, &format!("bare-tx-{i}"))?;
            writes.commit(store).await.map_err(|e| e.to_string())
        })
        .await?;
        if !out.is_done() {
            return Err(format!("the bare transaction was refused: {out:?}"));
        }
        bare_tx_s.add(d, reqs);
        let inputs = KeyInputs::new().id("request", format!("two-{i}"));
        let call = Call {
            tenant: "bench",
            scope: "bench.write_two",
            inputs: &inputs,
            fingerprint: None,
        };
        let (d, reqs, out) = timed(store, || one_request_two(&engine, store, &call)).await?;
        if !matches!(out, Outcome::Fresh(_)) {
            return Err(format!("expected a fresh run, got {out:?}"));
        }
        two_s.add(d, reqs);
        let (d, reqs, out) = timed(store, || one_request_two(&engine, store, &call)).await?;
        if !matches!(out, Outcome::Replayed(_)) {
            return Err(format!("expected a replay, got {out:?}"));
        }
        two_dup_s.add(d, reqs);
    }
    series.push(bare_s);
    series.push(fresh_s);
    series.push(replay_s);
    series.push(one_s);
    series.push(one_dup_s);

    let mut rows = print_rows("idempotency engine", &series);
    rows.extend(print_rows(
        "idempotency engine, effect already a transaction",
        &[bare_tx_s, two_s, two_dup_s],
    ));
    rows.extend(powertools(&config.dynamodb.endpoint, n));
    Ok(rows)
}

/// The peer on the same DynamoDB Local, in the same run: AWS Lambda Powertools (Python)
/// timed by `scripts/powertools-bench` against its own bare conditional write. Its rows
/// carry its own baseline; skipped (with a note) when its virtualenv is not installed.
fn powertools(endpoint: &str, n: usize) -> Vec<serde_json::Value> {
    if !std::path::Path::new(".venv-powertools/bin/python").exists() {
        eprintln!(
            "bench: .venv-powertools is missing (make python-powertools); Powertools not measured"
        );
        return Vec::new();
    }
    let out = std::process::Command::new("scripts/powertools-bench")
        .args(["--endpoint", endpoint, "--n", &n.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output();
    let report: serde_json::Value = match out {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout).unwrap_or_default(),
        Ok(o) => {
            eprintln!("bench: powertools-bench failed ({})", o.status);
            return Vec::new();
        }
        Err(e) => {
            eprintln!("bench: powertools-bench could not start: {e}");
            return Vec::new();
        }
    };
    let tool = report["tool"].as_str().unwrap_or("powertools").to_string();
    let rows: Vec<serde_json::Value> = report["series"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut r| {
            r["tool"] = json!(tool);
            r
        })
        .collect();
    println!();
    println!(
        "{:<56} {:>9} {:>9} {:>10} {:>12}",
        tool, "p50 ms", "p99 ms", "req/call", "p50 ratio"
    );
    for r in &rows {
        println!(
            "{:<56} {:>9.2} {:>9.2} {:>10.2} {:>11.2}x",
            r["series"].as_str().unwrap_or_default(),
            r["p50_ms"].as_f64().unwrap_or_default(),
            r["p99_ms"].as_f64().unwrap_or_default(),
            r["dynamodb_requests_per_call"].as_f64().unwrap_or_default(),
            r["p50_ratio_vs_baseline"].as_f64().unwrap_or_default(),
        );
    }
    rows
}
