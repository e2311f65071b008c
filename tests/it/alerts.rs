//! Alerts that reach people: two consoles judge the same breach at the same time, and the
//! channels hear of it once; once when it clears.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::spawn_app_with;

/// Every message a channel got: (path, webhook-id, body).
type Heard = Arc<Mutex<Vec<(String, String, Value)>>>;

async fn channel() -> (Heard, String) {
    let heard: Heard = Arc::default();
    async fn take(
        State(h): State<Heard>,
        uri: axum::http::Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> StatusCode {
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        h.lock().unwrap().push((uri.path().to_string(), id, body));
        StatusCode::OK
    }
    let app = Router::new()
        .route("/json", post(take))
        .route("/slack", post(take))
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (heard, format!("http://{addr}"))
}

fn about(heard: &Heard, alert: &str) -> Vec<(String, String, Value)> {
    heard
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, id, _)| id.starts_with(&format!("{alert}#")))
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_breach_is_announced_once_by_two_consoles_and_its_end_once() {
    let (heard, base) = channel().await;
    let app = spawn_app_with(|c| {
        c.operations.alert_webhook_url = format!("{base}/json");
        c.operations.alert_slack_url = format!("{base}/slack");
        c.operations.public_url = "https://ops.example.com".into();
    })
    .await;
    let other = app.second_console();
    let key = app.api_key(&["measurements:write"]).await;
    // 20 attempts, 4 of them repeats: a duplicate rate of 20 %, above the 10 % threshold.
    let t = (app.clock.now() - Duration::minutes(30)).to_rfc3339();
    for i in 0..16 {
        let body =
            json!({"measurement_id": format!("m-{i}"), "user_id": format!("u{i}"), "weight": 70.0,
                          "unit": "kg", "timestamp": t, "source": "scale"})
            .to_string();
        let times = if i < 4 { 2 } else { 1 };
        for _ in 0..times {
            let a = app
                .post_json("/api/v1/measurements", &key, body.clone())
                .await;
            assert!(a.status.is_success(), "{}", a.body);
        }
    }
    // Both consoles judge at once, three times over.
    for _ in 0..3 {
        let (a, b) = tokio::join!(app.state.alerts.check(), other.state.alerts.check());
        a.unwrap();
        b.unwrap();
    }
    let firing = about(&heard, "measurements.duplicates");
    assert_eq!(firing.len(), 2, "one message per channel: {firing:?}");
    let json_msg = firing.iter().find(|(p, _, _)| p == "/json").unwrap();
    assert_eq!(json_msg.1, "measurements.duplicates#1#firing");
    let m = &json_msg.2;
    assert_eq!(m["state"], "firing");
    assert_eq!(m["value"], 20.0);
    assert_eq!(m["threshold"], 10.0);
    assert_eq!(m["window"], "24h");
    assert_eq!(m["sample"], 20);
    assert_eq!(m["link"], "https://ops.example.com/measurements");
    let slack = firing.iter().find(|(p, _, _)| p == "/slack").unwrap();
    let text = slack.2["text"].as_str().unwrap();
    assert!(
        text.contains("FIRING")
            && text.contains("20.0%")
            && text.contains("https://ops.example.com/measurements"),
        "{text}"
    );
    // The Overview lists it.
    let listed = app.state.alerts.firing().await.unwrap();
    assert!(
        listed.iter().any(|a| a.id == "measurements.duplicates"),
        "{listed:?}"
    );

    // A day later the window holds no attempts: the alert clears, announced once.
    app.clock.advance(Duration::hours(25));
    for _ in 0..3 {
        let (a, b) = tokio::join!(app.state.alerts.check(), other.state.alerts.check());
        a.unwrap();
        b.unwrap();
    }
    let all = about(&heard, "measurements.duplicates");
    let resolved: Vec<_> = all
        .iter()
        .filter(|(_, id, _)| id.ends_with("#resolved"))
        .collect();
    assert_eq!(
        resolved.len(),
        2,
        "one resolved message per channel: {all:?}"
    );
    assert_eq!(resolved[0].1, "measurements.duplicates#1#resolved");
    assert_eq!(all.len(), 4, "nothing else about it: {all:?}");
    assert!(!app
        .state
        .alerts
        .firing()
        .await
        .unwrap()
        .iter()
        .any(|a| a.id == "measurements.duplicates"));
}
