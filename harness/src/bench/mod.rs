//! `ops-console bench`: each part of ops-console against the bare DynamoDB work it adds
//! guarantees to, side by side in one run on its own in-memory DynamoDB Local. DynamoDB
//! Local's absolute speed says little about AWS; the ratios are the result. Figures also
//! go to `target/bench/report.json`.

mod conversations;
mod delivery;
mod engine;
mod events;
mod inbox;
mod measurements;
mod pages;
mod signin;

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use dynamodb_faults::{Faults, Proxy, Report, Units};
use serde_json::{json, Map, Value};

use ops_console::server::config::Config;
use ops_console::server::dynamo_local::{self, DynamoLocal};
use ops_console::server::ids::random_hex;
use ops_console::server::store::{schema, Connection, Store};

pub(crate) struct Series {
    pub name: &'static str,
    pub samples: Vec<Duration>,
    pub wall: Duration,
    pub requests: u64,
    /// Capacity units the calls consumed, as AWS bills them.
    pub units: Units,
}

/// The proxy every benchmark's DynamoDB requests go through (no faults): it counts the
/// capacity units of each operation as AWS bills them.
static METER: OnceLock<Proxy> = OnceLock::new();
/// The meter's reading at the last call any series recorded.
static MARK: Mutex<Option<Report>> = Mutex::new(None);

/// The units consumed since the last call any series recorded (a call's own, and whatever
/// was done to set it up).
fn units_since_mark() -> Units {
    let Some(meter) = METER.get() else {
        return Units::default();
    };
    let now = meter.report();
    let Ok(mut mark) = MARK.lock() else {
        return Units::default();
    };
    let used = mark
        .as_ref()
        .map_or_else(Units::default, |m| now.units_since(m));
    *mark = Some(now);
    used
}

impl Series {
    pub fn new(name: &'static str) -> Series {
        // What was done before this series' first call is not its own.
        units_since_mark();
        Series {
            name,
            samples: vec![],
            wall: Duration::ZERO,
            requests: 0,
            units: Units::default(),
        }
    }

    pub fn add(&mut self, took: Duration, requests: u64) {
        self.samples.push(took);
        self.wall += took;
        self.requests += requests;
        let u = units_since_mark();
        self.units.write += u.write;
        self.units.read += u.read;
    }

    pub fn pct(&self, p: f64) -> f64 {
        let mut s = self.samples.clone();
        s.sort();
        let i = ((s.len() as f64 - 1.0) * p).round() as usize;
        s.get(i).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
    }

    pub fn per_sec(&self) -> f64 {
        self.samples.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// What to measure and how much.
pub struct Options {
    /// Calls per series.
    pub n: usize,
    /// Parts to run (`engine`, `events`, `delivery`, `ack`, `measurements`, `inbox`, `conversations`,
    /// `signin`, `pages`); empty: all.
    pub only: Vec<String>,
    /// Conversation counts the search latency is measured at.
    pub conversation_sizes: Vec<usize>,
}

pub async fn run(opts: &Options) -> Result<(), String> {
    let wants = |part: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == part);
    let local = DynamoLocal::start(dynamo_local::Options {
        jar: None,
        data_dir: None,
        port: None,
        log_file: None,
    })
    .map_err(|e| e.to_string())?;
    let prefix = format!("bench{}_", random_hex(3));
    let config = Config::for_tests(&local.endpoint(), &prefix);
    let meter = Proxy::start(&local.endpoint(), Faults::default(), 1)
        .await
        .map_err(|e| format!("meter: {e}"))?;
    let endpoint = meter.endpoint();
    let _ = METER.set(meter);
    let store = Store::connect(Connection {
        endpoint: Some(&endpoint),
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
    eprintln!("bench: {} calls per series on DynamoDB Local", opts.n);
    let mut report = Map::new();
    report.insert("dynamodb".into(), json!("DynamoDB Local (in memory)"));
    report.insert("calls_per_series".into(), json!(opts.n));
    if wants("engine") {
        let rows = engine::bench_engine(&store, &config, opts.n).await?;
        report.insert("idempotency_engine".into(), Value::Array(rows));
    }
    if wants("events") {
        let rows = events::bench_events(&store, &config, opts.n).await?;
        report.insert("events".into(), Value::Array(rows));
    }
    if wants("delivery") {
        let rows = delivery::bench_delivery(&store, &config, opts.n).await?;
        report.insert("delivery".into(), Value::Array(rows));
    }
    if wants("ack") {
        let rows = events::bench_ack(&store, &config, opts.n).await?;
        report.insert("event_ack".into(), Value::Array(rows));
    }
    if wants("measurements") {
        let rows = measurements::bench_measurements(&store, &config, opts.n).await?;
        report.insert("measurements".into(), Value::Array(rows));
    }
    if wants("inbox") {
        let rows = inbox::bench_inbox(&store, opts.n, 1000).await?;
        report.insert("inbox".into(), Value::Array(rows));
    }
    if wants("conversations") {
        let v = conversations::bench_conversations(&store, &opts.conversation_sizes).await?;
        report.insert("conversations".into(), v);
    }
    if wants("signin") {
        let rows = signin::bench_signin(&store, &config, opts.n / 2).await?;
        report.insert("signin_flood".into(), Value::Array(rows));
    }
    if wants("pages") {
        report.insert("page_weight".into(), pages::weight());
        let rows = pages::render(&store, &config, opts.n / 10).await?;
        report.insert("pages".into(), Value::Array(rows));
    }
    summary(&report);
    let cost = costs(&report);
    report.insert("cost".into(), cost);
    std::fs::create_dir_all("target/bench").map_err(|e| e.to_string())?;
    std::fs::write(
        "target/bench/report.json",
        serde_json::to_string_pretty(&Value::Object(report)).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    println!("\nwritten to target/bench/report.json");
    local.stop();
    Ok(())
}

/// On-demand prices (us-east-1, standard tables, since November 2024): dollars per million
/// write and read request units.
const DOLLARS_PER_MILLION: (f64, f64) = (0.625, 0.125);

/// What a million of each operation costs on demand, from the units this run measured.
fn costs(report: &Map<String, Value>) -> Value {
    let find = |part: &str, series: &str| -> Option<(f64, f64)> {
        report.get(part)?.as_array()?.iter().find_map(|r| {
            (r["series"].as_str()? == series).then(|| {
                (
                    r["write_units_per_call"].as_f64().unwrap_or(0.0),
                    r["read_units_per_call"].as_f64().unwrap_or(0.0),
                )
            })
        })
    };
    let picks = [
        (
            "events",
            "events: new event (claim, decide, 1 effect queued)",
            "a new event",
        ),
        ("events", "events: duplicate delivery", "a duplicate event"),
        (
            "measurements",
            "measurements: + idempotency + ordering",
            "a new measurement",
        ),
        (
            "measurements",
            "measurements: duplicate (same id, same payload)",
            "a duplicate measurement",
        ),
        (
            "inbox",
            "inbox: publish to everyone",
            "a publish to everyone",
        ),
        (
            "inbox",
            "inbox: publish to ten users",
            "a publish to ten users",
        ),
        (
            "inbox",
            "inbox: mark read (once, with counters)",
            "a read receipt",
        ),
    ];
    println!();
    println!(
        "{:<36} {:>9} {:>9} {:>22}",
        "cost (on demand, as AWS bills)", "WRU/op", "RRU/op", "$ per million ops"
    );
    let rows: Vec<Value> = picks
        .iter()
        .filter_map(|(part, series, what)| {
            let (w, r) = find(part, series)?;
            let dollars = w * DOLLARS_PER_MILLION.0 + r * DOLLARS_PER_MILLION.1;
            println!("{what:<36} {w:>9.2} {r:>9.2} {dollars:>22.2}");
            Some(json!({"operation": what, "write_units": w, "read_units": r, "dollars_per_million": dollars}))
        })
        .collect();
    json!({"dollars_per_million_units": {"write": DOLLARS_PER_MILLION.0, "read": DOLLARS_PER_MILLION.1}, "operations": rows})
}

/// The headline figures of every part in one table, each a ratio to the baseline measured
/// next to it in this run.
fn summary(report: &Map<String, Value>) {
    let row = |part: &str, i: usize| -> Option<(String, f64, f64, f64)> {
        let r = report.get(part)?.get(i)?;
        Some((
            r["series"].as_str()?.to_string(),
            r["p50_ms"].as_f64()?,
            r["p50_ratio_vs_baseline"].as_f64()?,
            r["dynamodb_requests_per_call"].as_f64()?,
        ))
    };
    let picks = [
        ("idempotency_engine", 1),
        ("idempotency_engine", 2),
        ("idempotency_engine", 3),
        ("idempotency_engine", 4),
        ("idempotency_engine", 6),
        ("idempotency_engine", 7),
        ("idempotency_engine", 9),
        ("idempotency_engine", 10),
        ("events", 1),
        ("events", 2),
        ("event_ack", 1),
        ("measurements", 2),
        ("measurements", 3),
        ("inbox", 1),
        ("inbox", 3),
    ];
    println!();
    println!(
        "{:<60} {:>9} {:>14} {:>10}",
        "summary (each against its baseline in this run)", "p50 ms", "p50 vs base", "req/call"
    );
    for (part, i) in picks {
        if let Some((name, p50, ratio, reqs)) = row(part, i) {
            println!("{name:<60} {p50:>9.2} {ratio:>13.2}x {reqs:>10.2}");
        }
    }
    if let Some(Value::Array(rows)) = report.get("conversations") {
        for r in rows {
            if let (Some(name), Some(ratio)) = (
                r["search"].as_str(),
                r["ratio_largest_vs_smallest"].as_f64(),
            ) {
                println!(
                    "{:<60} {:>9} {:>13.2}x {:>10}",
                    format!("conversations: {name} (largest vs smallest)"),
                    "",
                    ratio,
                    ""
                );
            }
        }
    }
}

/// One unconditional `PutItem` of a serializable item.
pub(crate) async fn plain_put<T: serde::Serialize>(
    store: &Store,
    base: &str,
    item: &T,
) -> Result<(), String> {
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

pub(crate) fn print_rows(title: &str, series: &[Series]) -> Vec<serde_json::Value> {
    let base_p50 = series[0].pct(0.5);
    let base_rate = series[0].per_sec();
    println!();
    println!(
        "{:<56} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>12} {:>10}",
        title,
        "p50 ms",
        "p99 ms",
        "calls/s",
        "req/call",
        "WRU/call",
        "RRU/call",
        "p50 ratio",
        "rate ratio"
    );
    series
        .iter()
        .map(|s| {
            let calls = s.samples.len().max(1) as f64;
            let reqs = s.requests as f64 / calls;
            let (wru, rru) = (s.units.write / calls, s.units.read / calls);
            println!(
                "{:<56} {:>9.2} {:>9.2} {:>9.0} {:>10.2} {:>9.2} {:>9.2} {:>11.2}x {:>9.2}x",
                s.name,
                s.pct(0.5),
                s.pct(0.99),
                s.per_sec(),
                reqs,
                wru,
                rru,
                s.pct(0.5) / base_p50.max(1e-9),
                s.per_sec() / base_rate.max(1e-9)
            );
            json!({
                "series": s.name, "calls": s.samples.len(), "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99),
                "calls_per_sec": s.per_sec(), "dynamodb_requests_per_call": reqs,
                "write_units_per_call": wru, "read_units_per_call": rru,
                "p50_ratio_vs_baseline": s.pct(0.5) / base_p50.max(1e-9),
                "rate_ratio_vs_baseline": s.per_sec() / base_rate.max(1e-9),
            })
        })
        .collect()
}
