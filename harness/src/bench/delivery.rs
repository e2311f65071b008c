//! Delivery: side effects delivered per second by two consoles to a receiver that answers
//! at once, against the same receiver fed by a bare loop of HTTP posts (what this machine
//! can send at all), and what the shared rate limit costs in DynamoDB requests per delivery.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{print_rows, Series};
use ops_console::server::clock::Clock;
use ops_console::server::config::{Config, Secret};
use ops_console::server::crypto::Seal;
use ops_console::server::domain::events::parse;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::services::events::Events;
use ops_console::server::store::Store;

/// Requests in flight at once: two consoles' `events.dispatch_concurrency` (4 each).
const IN_FLIGHT: usize = 8;

/// `n` posts of a side effect's size, [`IN_FLIGHT`] at a time, over kept-alive connections.
async fn bare_loop(url: &str, n: usize) -> Result<Duration, String> {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<_, Full<hyper::body::Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let uri: hyper::Uri = url.parse().map_err(|e| format!("{e}"))?;
    let body = hyper::body::Bytes::from(json!({"type": "route", "target": "support"}).to_string());
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..IN_FLIGHT {
        let (client, uri, body) = (client.clone(), uri.clone(), body.clone());
        tasks.spawn(async move {
            for _ in (w..n).step_by(IN_FLIGHT) {
                let req = hyper::Request::post(uri.clone())
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))
                    .map_err(|e| e.to_string())?;
                client.request(req).await.map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(t.elapsed())
}

/// Two consoles on `store` sending to `url`, with `rate` (0: no limit).
fn consoles(store: &Store, config: &Config, url: &str, rate: i64) -> Result<[Events; 2], String> {
    let mut cfg = config.clone();
    cfg.events.webhook_url = url.into();
    cfg.events.webhook_secret = Secret::new(SigningSecret::generate().expose());
    cfg.events.receiver_rate = rate;
    // The receiver is on this machine.
    cfg.operations.outbound_allowed_networks = "127.0.0.0/8".into();
    let cfg = Arc::new(cfg);
    let one = || {
        Events::new(
            store.clone(),
            Clock::default(),
            cfg.clone(),
            Seal::from_keys([5; 32], [6; 32]),
        )
    };
    Ok([one()?, one()?])
}

/// Queues `n` side effects (one per event, over 50 conversations), then times both
/// consoles delivering them all: the series holds `n` calls of the mean time each.
async fn deliver(
    name: &'static str,
    store: &Store,
    pair: &[Events; 2],
    got: &AtomicU64,
    n: usize,
) -> Result<Series, String> {
    let tag = ops_console::server::ids::random_hex(3);
    for i in 0..n {
        let body = json!({
            "conversation_id": format!("deliver-{tag}-c{}", i % 50),
            "message_id": format!("m-{i}"),
            "created_at": chrono::Utc::now().to_rfc3339(),
            "channel": "chat",
            "text": "hello, a quick question",
        })
        .to_string();
        let ev = parse(body.as_bytes()).map_err(|e| e.to_string())?;
        pair[0]
            .ingest(&ev, "bench")
            .await
            .map_err(|e| e.to_string())?;
    }
    let want = got.load(Ordering::Relaxed) + n as u64;
    let mut series = Series::new(name);
    let r0 = store.requests().total();
    let t = Instant::now();
    let run = |e: &Events| {
        let e = e.clone();
        async move {
            while got.load(Ordering::Relaxed) < want && t.elapsed() < Duration::from_secs(300) {
                e.dispatch_all().await.map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(())
        }
    };
    let (a, b) = tokio::join!(run(&pair[0]), run(&pair[1]));
    a?;
    b?;
    let took = t.elapsed();
    if got.load(Ordering::Relaxed) < want {
        return Err(format!("{name}: not every side effect was delivered"));
    }
    let requests = store.requests().total() - r0;
    for i in 0..n {
        let share = requests / n as u64 + u64::from((i as u64) < requests % n as u64);
        series.add(took / n as u32, share);
    }
    Ok(series)
}

pub async fn bench_delivery(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<serde_json::Value>, String> {
    super::events::safe_mode_off(store, &Clock::default()).await?;
    let (url, got) = super::events::receiver(0).await?;
    let mut bare = Series::new("delivery: bare HTTP posts, 8 at a time (baseline)");
    let took = bare_loop(&url, n).await?;
    for _ in 0..n {
        bare.add(took / n as u32, 0);
    }
    let free = consoles(store, config, &url, 0)?;
    let two = deliver(
        "delivery: two consoles, no rate limit",
        store,
        &free,
        &got,
        n,
    )
    .await?;
    let paced = consoles(store, config, &url, 6000)?;
    let limited = deliver(
        "delivery: two consoles, shared rate limit (6000/s)",
        store,
        &paced,
        &got,
        n,
    )
    .await?;
    Ok(print_rows(
        "side effects delivered vs a bare loop of posts",
        &[bare, two, limited],
    ))
}
