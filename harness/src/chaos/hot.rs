//! The hot-item run: fifty users' scales sending a measurement a second each, and fifty
//! users reading one broadcast at the same moment, with DynamoDB's per-item write limit
//! on (scaled down to 20 writes a second). Nothing any two of them write may be the same
//! item often enough to be throttled.

use std::time::Duration;

use chrono::Utc;
use dynamodb_faults::{Faults, Kind, Proxy};
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::clients::Http;

pub const USERS: usize = 50;
pub const ITEM_WRITES_PER_S: u32 = 20;

#[derive(Default)]
pub struct HotRun {
    pub throttled: u64,
    pub hottest: Option<(String, u32)>,
    pub failures: Vec<String>,
    pub requests: usize,
}

/// Runs the hot phase against the consoles behind `http`; the proxy's limit is on for its
/// duration only.
pub async fn run(proxy: &Proxy, http: &Http) -> HotRun {
    let before = proxy.report().get(Kind::HotItem);
    let saved = proxy.faults();
    let give_up = Instant::now() + Duration::from_secs(60);
    let mut failures = Vec::new();
    let broadcast = json!({"audience": {"kind": "everyone"}, "category": "news",
                           "title": "Maintenance tonight", "body": "From 22:00."});
    let id = match http
        .until_final(
            Method::POST,
            "/api/v1/inbox/tenants/chaos/inboxes/news/messages",
            &broadcast,
            Some("hot-broadcast"),
            give_up,
        )
        .await
    {
        Some((201, v)) => v["message_id"].as_str().unwrap_or_default().to_string(),
        other => {
            failures.push(format!("the broadcast: {other:?}"));
            return HotRun {
                throttled: 0,
                hottest: None,
                failures,
                requests: 0,
            };
        }
    };
    proxy.set(Faults {
        conflicts: true,
        hold_ms: (2, 5),
        item_writes_per_s: ITEM_WRITES_PER_S,
        ..Faults::default()
    });
    let start = Utc::now() - chrono::Duration::hours(3);
    let mut tasks = tokio::task::JoinSet::new();
    for u in 0..USERS {
        let http = http.clone();
        let id = id.clone();
        tasks.spawn(async move {
            let mut answers: Vec<(String, Option<u16>)> = Vec::new();
            let read = format!(
                "/api/v1/inbox/tenants/chaos/inboxes/news/users/hot{u}/messages/{id}/read"
            );
            let r = http
                .until_final(Method::POST, &read, &Value::Null, None, give_up)
                .await;
            answers.push((read, r.map(|(s, _)| s)));
            for n in 0..4i64 {
                let body = json!({"measurement_id": format!("hot{u}-{n}"), "user_id": format!("hot{u}"),
                                  "weight": 80.0 + n as f64 / 10.0, "unit": "kg", "source": "scale",
                                  "timestamp": (start + chrono::Duration::minutes(n)).to_rfc3339()});
                let r = http
                    .until_final(Method::POST, "/api/v1/measurements", &body, None, give_up)
                    .await;
                answers.push((format!("measurement hot{u}-{n}"), r.map(|(s, _)| s)));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            answers
        });
    }
    let mut requests = 0;
    while let Some(done) = tasks.join_next().await {
        for (what, status) in done.unwrap_or_default() {
            requests += 1;
            if !status.is_some_and(|s| (200..300).contains(&s)) {
                failures.push(format!("{what}: {status:?}"));
            }
        }
    }
    let report = proxy.report();
    proxy.set(saved);
    HotRun {
        throttled: report.get(Kind::HotItem) - before,
        hottest: report.hottest,
        failures,
        requests,
    }
}
