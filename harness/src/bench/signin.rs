//! The console under a flood of password guesses: `/healthz` and a signed-in page timed
//! idle, while 200 clients load the sign-in page (the same load without password work), and
//! while 200 clients post wrong passwords, each for a new name from a new address (no
//! lockout stops them), over real connections to a console served in this process.
//! Password checks run off the async workers and are bounded
//! (`auth.password_checks_at_once`); the result is the p99 while guessing against the p99
//! under the same load of page loads.

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
use ops_console::model::users::Role;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::ids::random_hex;
use ops_console::server::services::idempotency::Secret;
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

/// What a flooding client sends.
#[derive(Clone, Copy)]
enum Flood {
    /// The sign-in page: ordinary load, no password work.
    Page,
    /// A wrong password for a name never tried before, from an address never seen before
    /// (the load balancer's `X-Forwarded-For`): no lockout stops it, so every one costs a
    /// password check. The worst a distributed guesser can do.
    Guesses,
}

/// One flooding client, as fast as the console answers.
async fn flood(
    client: Http,
    base: String,
    kind: Flood,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    busy: Arc<AtomicU64>,
) {
    while !stop.load(Ordering::Relaxed) {
        let req = match kind {
            Flood::Page => Request::get(format!("{base}/login")).body(Full::new(Bytes::new())),
            Flood::Guesses => {
                let r = random_hex(4);
                let b = u8::from_str_radix(&r[..2], 16).unwrap_or(1);
                let c = u8::from_str_radix(&r[2..4], 16).unwrap_or(1);
                let body = format!("name=guess-{r}&password=wrong-{r}&next=%2F");
                Request::post(format!("{base}/login"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .header("x-forwarded-for", format!("203.0.{b}.{c}"))
                    .body(Full::new(Bytes::from(body)))
            }
        };
        let Ok(req) = req else { return };
        if let Ok(res) = client.request(req).await {
            let refused_busy = res
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .is_some_and(|l| l.contains("error=busy"));
            let _ = res.into_body().collect().await;
            sent.fetch_add(1, Ordering::Relaxed);
            if refused_busy {
                busy.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// /healthz and a signed-in page, timed while 200 clients flood the console with `kind`
/// (none: idle). Units are left out of flooded series: the flood's own would be counted.
async fn under(
    client: &Http,
    base: &str,
    cookie: &str,
    n: usize,
    kind: Option<(Flood, &'static str, &'static str)>,
) -> Result<(Series, Series, String), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = kind
        .iter()
        .flat_map(|(k, _, _)| std::iter::repeat_n(*k, FLOOD))
        .map(|k| {
            let c: Http = Client::builder(TokioExecutor::new()).build_http();
            let (stop, sent, busy) = (stop.clone(), sent.clone(), busy.clone());
            tokio::spawn(flood(c, base.to_string(), k, stop, sent, busy))
        })
        .collect();
    // Let the flood reach full strength before timing.
    while !flooders.is_empty() && sent.load(Ordering::Relaxed) < FLOOD as u64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (health_name, page_name) = kind.map_or(
        ("/healthz, idle", "/kill-switches (signed in), idle"),
        |(_, h, p)| (h, p),
    );
    let started = Instant::now();
    let (health, page) = (format!("{base}/healthz"), format!("{base}/kill-switches"));
    let mut h = series(client, health_name, &health, cookie, n).await?;
    let mut p = series(client, page_name, &page, cookie, n).await?;
    let took = started.elapsed().as_secs_f64().max(1e-9);
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        let _ = f.await;
    }
    if kind.is_some() {
        h.units = Default::default();
        p.units = Default::default();
    }
    let (sent, busy) = (sent.load(Ordering::Relaxed), busy.load(Ordering::Relaxed));
    Ok((
        h,
        p,
        format!(
            "{sent} answered ({:.0}/s), {busy} of them \"busy, try again\"",
            sent as f64 / took
        ),
    ))
}

pub async fn bench_signin(store: &Store, config: &Config, n: usize) -> Result<Vec<Value>, String> {
    let mut config = config.clone();
    // The flood's guesses come through a load balancer on loopback.
    config.auth.trusted_proxies = "127.0.0.1/32".into();
    let state = AppState::new(
        config,
        store.clone(),
        Clock::default(),
        Secret::new(random_hex(32).into_bytes()),
    );
    let password = random_hex(12);
    state
        .users
        .add_user("bench-viewer", Role::Viewer, &password, "bench")
        .await
        .map_err(|e| e.to_string())?;
    let (cookie, _) = state
        .users
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
    // Warm up (connections, the page's first render).
    series(
        &client,
        "warm-up",
        &format!("{base}/kill-switches"),
        &cookie,
        5,
    )
    .await?;
    let (idle_h, idle_p, _) = under(&client, &base, &cookie, n, None).await?;
    let (page_h, page_p, page_sent) = under(
        &client,
        &base,
        &cookie,
        n,
        Some((
            Flood::Page,
            "/healthz, 200 clients loading /login",
            "/kill-switches, 200 clients loading /login",
        )),
    )
    .await?;
    let (guess_h, guess_p, guesses) = under(
        &client,
        &base,
        &cookie,
        n,
        Some((
            Flood::Guesses,
            "/healthz, 200 clients guessing passwords",
            "/kill-switches, 200 clients guessing passwords",
        )),
    )
    .await?;
    server.abort();
    let p99 = |a: &Series, b: &Series| b.pct(0.99) / a.pct(0.99).max(1e-9);
    let (health_ratio, page_ratio) = (p99(&page_h, &guess_h), p99(&page_p, &guess_p));
    let mut rows = super::print_rows("sign-in flood: /healthz", &[idle_h, page_h, guess_h]);
    rows.extend(super::print_rows(
        "sign-in flood: a signed-in page",
        &[idle_p, page_p, guess_p],
    ));
    println!(
        "p99 while guessing vs while loading /login: /healthz {health_ratio:.2}x, signed-in page \
         {page_ratio:.2}x; /login loads: {page_sent}; guesses: {guesses}"
    );
    rows.push(json!({
        "series": "p99 during password guesses vs during page loads",
        "healthz_p99_ratio": health_ratio,
        "page_p99_ratio": page_ratio,
        "page_loads": page_sent,
        "guesses": guesses,
    }));
    Ok(rows)
}
