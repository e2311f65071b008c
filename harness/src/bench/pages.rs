//! Each page's weight as a browser receives it (from the page-weight run) and the time to
//! render each page on the server, signed in as an admin, through the real router.

use std::time::Instant;

use axum::body::Body;
use axum::http::{header, Request};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::Series;
use ops_console::model::users::Role;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::ids::random_hex;
use ops_console::server::services::idempotency::Secret;
use ops_console::server::state::AppState;
use ops_console::server::store::Store;

const PAGES: &[&str] = &[
    "/",
    "/kill-switches",
    "/events",
    "/conversations?company=ci-acme-001",
    "/audit",
    "/inbox",
    "/idempotency",
    "/measurements?user=bench-full",
    "/users",
    "/api",
];

/// What each page's cold first load put on the wire, as the page-weight run in Chromium
/// measured it (`make weight`, which `make bench` runs first): bytes (compressed, headers
/// included), requests, the wasm's share, and the time until the page was hydrated.
pub fn weight() -> Value {
    let file = "target/bench/page-weight.json";
    let report: Value = match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_default(),
        Err(_) => {
            eprintln!("bench: {file} is missing (make weight); page weight not shown");
            return Value::Null;
        }
    };
    println!();
    println!(
        "{:<56} {:>10} {:>9} {:>10} {:>13}",
        "page, cold first load (release, Chromium)", "bytes", "requests", "wasm", "hydrated ms"
    );
    for p in report["pages"].as_array().into_iter().flatten() {
        let page = p["page"].as_str().unwrap_or_default();
        let page = page
            .split_once("?r=")
            .map_or(page.to_string(), |(path, _)| format!("{path}?r=…"));
        println!(
            "{:<56} {:>10} {:>9} {:>10} {:>13}",
            page,
            p["bytes"].to_string(),
            p["requests"].to_string(),
            p["wasm"].to_string(),
            p["hydrated_ms"].to_string()
        );
    }
    println!("budget per page: {} bytes", report["budget_bytes"]);
    report
}

pub async fn render(store: &Store, config: &Config, n: usize) -> Result<Vec<Value>, String> {
    let state = AppState::new(
        config.clone(),
        store.clone(),
        Clock::default(),
        Secret::new(random_hex(32).into_bytes()),
    );
    let password = random_hex(12);
    state
        .users
        .add_user("bench-admin", Role::Admin, &password, "bench")
        .await
        .map_err(|e| e.to_string())?;
    let (session, _) = state
        .users
        .login("bench-admin", &password, None)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("{e:?}"))?;
    let app = ops_console::server::startup::app(state);
    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>10} {:>10}",
        "server-rendered page (admin)", "p50 ms", "p99 ms", "KiB", "requests"
    );
    let mut rows = Vec::new();
    for page in PAGES {
        let mut s = Series::new(page);
        let mut size = 0;
        for _ in 0..n.clamp(5, 50) {
            let req = Request::get(*page)
                .header(header::HOST, "localhost")
                .header(header::COOKIE, format!("ops_session={session}"))
                .body(Body::empty())
                .map_err(|e| e.to_string())?;
            let r0 = store.requests().total();
            let t = Instant::now();
            let res = app.clone().oneshot(req).await.map_err(|e| e.to_string())?;
            let status = res.status();
            let body = axum::body::to_bytes(res.into_body(), 8 << 20)
                .await
                .map_err(|e| e.to_string())?;
            s.add(t.elapsed(), store.requests().total() - r0);
            if !status.is_success() {
                return Err(format!("{page}: {status}"));
            }
            size = body.len();
        }
        let reqs = s.requests as f64 / s.samples.len().max(1) as f64;
        println!(
            "{:<44} {:>9.2} {:>9.2} {:>10.1} {:>10.1}",
            page,
            s.pct(0.5),
            s.pct(0.99),
            size as f64 / 1024.0,
            reqs
        );
        rows.push(json!({"page": page, "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99), "html_bytes": size, "dynamodb_requests": reqs}));
    }
    Ok(rows)
}
