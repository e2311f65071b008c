//! The console under a flood of wrong sign-ins: `/healthz` and a signed-in page timed idle,
//! then while 200 clients keep posting wrong passwords, over real connections to a console
//! served in this process. Password checks run off the async workers and are bounded
//! (`auth.password_checks_at_once`); the ratio of the two p99s is the result.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use super::Series;
use ops_console::model::accounts::Role;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::domain::idempotency::Secret;
use ops_console::server::ids::random_hex;
use ops_console::server::state::AppState;
use ops_console::server::store::Store;

const FLOOD: usize = 200;

type Http = Client<HttpConnector, Full<Bytes>>;

async fn get(client: &Http, url: &str, cookie: &str) -> Result<Duration, String> {
    let req = Request::get(url)
        .header("cookie", format!("ops_session={cookie}"))
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let res = client.request(req).await.map_err(|e| e.to_string())?;
    let status = res.status();
    res.into_body().collect().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{url}: {status}"));
    }
    Ok(started.elapsed())
}

async fn series(
    client: &Http,
    name: &'static str,
    url: &str,
    cookie: &str,
    n: usize,
) -> Result<Series, String> {
    let mut s = Series::new(name);
    for _ in 0..n {
        s.add(get(client, url, cookie).await?, 0);
    }
    Ok(s)
}

/// One flooding client: wrong passwords for `admin` as fast as the console answers.
async fn flood(client: Http, url: String, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let body = format!("name=admin&password=wrong-{}&next=%2F", random_hex(4));
        let req = Request::post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(body)));
        let Ok(req) = req else { return };
        if let Ok(res) = client.request(req).await {
            let _ = res.into_body().collect().await;
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

pub async fn bench_signin(store: &Store, config: &Config, n: usize) -> Result<Vec<Value>, String> {
    let state = AppState::new(
        config.clone(),
        store.clone(),
        Clock::default(),
        Secret::new(random_hex(32).into_bytes()),
    );
    let password = random_hex(12);
    state
        .accounts
        .add_user("bench-viewer", Role::Viewer, &password, "bench")
        .await
        .map_err(|e| e.to_string())?;
    let (cookie, _) = state
        .accounts
        .login("bench-viewer", &password, None)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("{e:?}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let app = ops_console::server::startup::app(state)
        .into_make_service_with_connect_info::<SocketAddr>();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client: Http = Client::builder(TokioExecutor::new()).build_http();
    let base = format!("http://{addr}");
    let (health, page) = (format!("{base}/healthz"), format!("{base}/kill-switches"));
    // Warm up (connections, the page's first render).
    series(&client, "warm-up", &page, &cookie, 5).await?;
    let idle_health = series(&client, "/healthz, idle", &health, &cookie, n).await?;
    let idle_page = series(
        &client,
        "/kill-switches (signed in), idle",
        &page,
        &cookie,
        n,
    )
    .await?;

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = (0..FLOOD)
        .map(|_| {
            let c: Http = Client::builder(TokioExecutor::new()).build_http();
            tokio::spawn(flood(
                c,
                format!("{base}/login"),
                stop.clone(),
                sent.clone(),
            ))
        })
        .collect();
    // Let the flood reach full strength before timing.
    while sent.load(Ordering::Relaxed) < FLOOD as u64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let flood_health = series(
        &client,
        "/healthz, during 200 wrong sign-ins at once",
        &health,
        &cookie,
        n,
    )
    .await?;
    let flood_page = series(
        &client,
        "/kill-switches, during 200 wrong sign-ins at once",
        &page,
        &cookie,
        n,
    )
    .await?;
    let flooded_for = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        let _ = f.await;
    }
    server.abort();
    let sign_ins = sent.load(Ordering::Relaxed);
    let p99 = |idle: &Series, busy: &Series| busy.pct(0.99) / idle.pct(0.99).max(1e-9);
    let (health_ratio, page_ratio) = (
        p99(&idle_health, &flood_health),
        p99(&idle_page, &flood_page),
    );
    let mut rows = super::print_rows("sign-in flood: /healthz", &[idle_health, flood_health]);
    rows.extend(super::print_rows(
        "sign-in flood: a signed-in page",
        &[idle_page, flood_page],
    ));
    println!(
        "p99 during the flood vs idle: /healthz {health_ratio:.2}x, signed-in page {page_ratio:.2}x; \
         wrong sign-ins answered: {sign_ins} ({:.0}/s)",
        sign_ins as f64 / flooded_for.as_secs_f64().max(1e-9)
    );
    rows.push(json!({
        "series": "p99 during the flood vs idle",
        "healthz_p99_ratio": health_ratio,
        "page_p99_ratio": page_ratio,
        "wrong_sign_ins_answered": sign_ins,
    }));
    Ok(rows)
}
