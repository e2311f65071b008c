//! `ops-console chaos`: clients that retry with the same keys (events, publishes,
//! measurements, kill-switch flips) while DynamoDB Local and the console are killed and
//! restarted at random moments; then the promises are checked: every acknowledged request
//! is stored, no side effect is applied twice at the receiver, inbox counters match a
//! recount, and every audit record has its action and every action its audit record.

mod checks;
mod clients;
mod procs;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::server::config::Config;
use crate::server::domain::sessions::{create_api_key, SCOPES};
use crate::server::seed::Rng;
use crate::server::store::{schema, Connection, Store};
use clients::{Acked, Http, Tally};
use procs::{free_port, Console, Db, Receiver};

pub struct Options {
    pub seconds: u64,
    pub clients: usize,
    pub seed: u64,
    pub dir: PathBuf,
}

#[derive(Debug, Default)]
pub struct Faults {
    pub dynamodb: u32,
    pub console: u32,
}

/// Runs the harness; `Ok(true)` when every check held.
pub async fn run(opts: &Options) -> Result<bool, String> {
    let _ = std::fs::remove_dir_all(&opts.dir);
    std::fs::create_dir_all(opts.dir.join("dynamodb")).map_err(|e| e.to_string())?;
    let mut db = Db::new(free_port()?, opts.dir.join("dynamodb"));
    let config = Config::for_tests(&db.endpoint(), "");
    let store = Store::connect(Connection {
        endpoint: Some(&db.endpoint()),
        region: &config.dynamodb.region,
        table_prefix: "",
        env: config.env.as_str(),
    })
    .await;
    db.start(&store).await?;
    schema::bootstrap(&store).await.map_err(|e| e.to_string())?;
    let scopes: Vec<String> = SCOPES.iter().map(|s| s.to_string()).collect();
    let key = create_api_key(&store, "chaos", &scopes, 1, "chaos", 1, chrono::Utc::now())
        .await
        .map_err(|e| e.to_string())?;

    let receiver = Arc::new(Receiver::default());
    let hook_port = procs::start_receiver(receiver.clone()).await?;
    let port = free_port()?;
    let env = vec![
        ("OPS_DYNAMODB_ENDPOINT", db.endpoint()),
        ("OPS_APP_SITE_ADDR", format!("127.0.0.1:{port}")),
        (
            "OPS_APP_DATA_DIR",
            opts.dir.join("console").display().to_string(),
        ),
        ("OPS_APP_DEMO_DATA", "false".into()),
        (
            "OPS_EVENTS_WEBHOOK_URL",
            format!("http://127.0.0.1:{hook_port}/hook"),
        ),
        ("OPS_EVENTS_WEBHOOK_BACKOFF_MS", "50".into()),
        ("OPS_EVENTS_LEASE_SECONDS", "3".into()),
        ("OPS_IDEMPOTENCY_STALE_SECONDS", "3".into()),
        ("RUST_LOG", "warn".into()),
        ("LEPTOS_SITE_ROOT", "target/site".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut console = Console::new(port, env, opts.dir.join("console.log"));
    console.start()?;
    if !console.healthy(Duration::from_secs(60)).await {
        return Err("the console did not start (see target/chaos/console.log)".into());
    }
    // The inbox tenant the publishes go to.
    let body = serde_json::json!({"title": "Chaos", "ttl": "30d"});
    let inbox = crate::server::domain::inbox::Inbox::new(store.clone(), 365);
    inbox
        .put_tenant("chaos", &body, chrono::Utc::now())
        .await
        .map_err(|e| e.to_string())?;

    let started = Instant::now();
    let stop = started + Duration::from_secs(opts.seconds);
    let give_up = stop + Duration::from_secs(120);
    let tally = Arc::new(Tally::default());
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..opts.clients {
        let http = Http::new(port, key.clone(), tally.clone());
        tasks.spawn(clients::client(http, id, opts.seed, stop, give_up));
    }

    let mut rng = Rng::new(opts.seed);
    let mut faults = Faults::default();
    while Instant::now() + Duration::from_millis(1500) < stop {
        tokio::time::sleep(Duration::from_millis(1500 + rng.below(3000))).await;
        let down = Duration::from_millis(200 + rng.below(1300));
        if rng.below(10) < 4 {
            db.kill();
            faults.dynamodb += 1;
            tokio::time::sleep(down).await;
            db.start(&store).await?;
        } else {
            console.stop(false);
            faults.console += 1;
            tokio::time::sleep(down).await;
            console.start()?;
            if !console.healthy(Duration::from_secs(60)).await {
                return Err("the console did not come back".into());
            }
        }
        eprintln!(
            "chaos: {} DynamoDB and {} console kills so far",
            faults.dynamodb, faults.console
        );
    }

    let mut acked: Vec<Acked> = Vec::new();
    let mut client_errors = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| e.to_string())? {
            Ok(a) => acked.extend(a),
            Err(e) => client_errors.push(e),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    console.stop(true);

    let found = checks::check(&store, &acked, &receiver).await?;
    let requests = tally.requests.load(Ordering::Relaxed);
    let count = |f: fn(&Acked) -> bool| acked.iter().filter(|a| f(a)).count();
    println!(
        "chaos: {:.0} s, {} clients, seed {}",
        elapsed, opts.clients, opts.seed
    );
    println!(
        "  load held: {} requests ({:.0}/s), {} retries, {} operations",
        requests,
        requests as f64 / elapsed.max(1.0),
        tally.retries.load(Ordering::Relaxed),
        tally.operations.load(Ordering::Relaxed)
    );
    println!(
        "  acknowledged: {} events, {} publishes, {} measurements, {} flips; {} gave up unanswered",
        count(|a| matches!(a, Acked::Event { .. })),
        count(|a| matches!(a, Acked::Publish { .. })),
        count(|a| matches!(a, Acked::Measurement { .. })),
        count(|a| matches!(a, Acked::Flip)),
        tally.unanswered.load(Ordering::Relaxed)
    );
    println!(
        "  faults survived: {} DynamoDB Local kills, {} console kills",
        faults.dynamodb, faults.console
    );
    println!(
        "  side effects: {} applied at the receiver from {} requests ({} refused by it with 503 and retried, {} re-sent with the same key and dropped)",
        found.applied, found.receiver_requests, found.receiver_refused, found.resent
    );
    for e in &client_errors {
        println!("  VIOLATION (client): {e}");
    }
    for v in &found.violations {
        println!("  VIOLATION: {v}");
    }
    let ok = client_errors.is_empty() && found.violations.is_empty();
    println!(
        "  {}",
        if ok {
            "every check held"
        } else {
            "checks FAILED"
        }
    );
    Ok(ok)
}
