//! A replay is the first answer: for every operation that takes an `Idempotency-Key`, the
//! same request with the same key answers with the first answer's status, its headers
//! (all but those of the connection or the request) and its body byte for byte, plus
//! `Idempotent-Replayed: true` — for a success and for a client error alike.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::Request;
use serde_json::json;

use crate::helpers::{spawn_app, Answer, TestApp};
use ops_console::server::http::idempotency::NOT_REPLAYED;

fn send(method: &str, path: &str, api_key: &str, idem: &str, body: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("authorization", format!("Bearer {api_key}"))
        .header("content-type", "application/json")
        .header("idempotency-key", idem)
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// The answer's own headers, as a replay must repeat them.
fn own_headers(a: &Answer) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in &a.headers {
        if NOT_REPLAYED.contains(&name.as_str()) {
            continue;
        }
        out.entry(name.as_str().to_string())
            .or_default()
            .push(value.to_str().unwrap_or_default().to_string());
    }
    out
}

/// Sends the request twice with one key; the second answer must be the first.
async fn replays(app: &TestApp, key: &str, method: &str, path: &str, body: &str, want: u16) {
    let idem = format!("replay-{}", ops_console::server::ids::random_hex(6));
    let first = app.send(send(method, path, key, &idem, body)).await;
    assert_eq!(first.status, want, "{method} {path}: {}", first.body);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = app.send(send(method, path, key, &idem, body)).await;
    assert_eq!(again.status, first.status, "{method} {path}: status");
    assert_eq!(
        again.body, first.body,
        "{method} {path}: body, byte for byte"
    );
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true"),
        "{method} {path}"
    );
    assert_eq!(
        own_headers(&again),
        own_headers(&first),
        "{method} {path}: the answer's headers"
    );
}

#[tokio::test]
async fn every_keyed_operation_replays_its_first_answer_success_or_client_error() {
    let app = spawn_app().await;
    let key = app
        .api_key(&[
            "switches:read",
            "switches:write",
            "inbox:read",
            "inbox:write",
            "conversations:read",
            "conversations:write",
            "measurements:write",
        ])
        .await;

    // Kill switches.
    let flip = json!({"switch": "automation_enabled", "enable": true, "expected_version": 0,
                      "reason": "replay test", "confirm": true});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/kill-switches",
        &flip.to_string(),
        200,
    )
    .await;
    let no_reason = json!({"switch": "automation_enabled", "enable": false, "expected_version": 1});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/kill-switches",
        &no_reason.to_string(),
        400,
    )
    .await;

    // Inbox: publish, read one, read all.
    let put = app
        .api(
            "PUT",
            "/api/v1/inbox/tenants/acme",
            &key,
            Some(json!({"title": "Acme"}).to_string()),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let to_ann =
        json!({"audience": {"kind": "users", "uids": ["ann"]}, "title": "Hi", "body": "Hello"});
    let messages = "/api/v1/inbox/tenants/acme/inboxes/news/messages";
    replays(&app, &key, "POST", messages, &to_ann.to_string(), 201).await;
    let untitled = json!({"audience": {"kind": "everyone"}, "body": "Hello"});
    replays(&app, &key, "POST", messages, &untitled.to_string(), 400).await;
    let feed = app
        .api(
            "GET",
            "/api/v1/inbox/tenants/acme/inboxes/news/users/ann/feed",
            &key,
            None,
        )
        .await;
    let id = feed.json()["items"][0]["id"].as_str().unwrap().to_string();
    let read = format!("/api/v1/inbox/tenants/acme/inboxes/news/users/ann/messages/{id}/read");
    replays(&app, &key, "POST", &read, "", 200).await;
    let unknown =
        "/api/v1/inbox/tenants/acme/inboxes/news/users/ann/messages/0000000000000000z/read";
    replays(&app, &key, "POST", unknown, "", 404).await;
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/inbox/tenants/acme/inboxes/news/users/ann/read-all",
        "",
        200,
    )
    .await;
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/inbox/tenants/acme/inboxes/news/users/$bad/read-all",
        "",
        400,
    )
    .await;

    // Conversations: create, update, append.
    let context = json!({"conversation_id": "ci-r#pi-r#req-r#447700900321", "channel_method": "whatsapp",
                         "recipient_tel": "+447700900321", "company_id": "ci-r", "project_id": "pi-r",
                         "request_id": "req-r"});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/conversations",
        &context.to_string(),
        201,
    )
    .await;
    let bad_context = json!({"conversation_id": "x", "channel_method": "fax"});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/conversations",
        &bad_context.to_string(),
        400,
    )
    .await;
    let path = "/api/v1/conversations/%2B447700900321/ci-r%23pi-r%23req-r%23447700900321";
    let status = json!({"conversation_status": "initial_message_sent"});
    replays(&app, &key, "PATCH", path, &status.to_string(), 200).await;
    let nothing = json!({});
    replays(&app, &key, "PATCH", path, &nothing.to_string(), 400).await;
    let message = json!({"entry_id": "e-1", "role": "assistant", "content": "Hello"});
    replays(
        &app,
        &key,
        "POST",
        &format!("{path}/messages"),
        &message.to_string(),
        201,
    )
    .await;
    let bad_message = json!({"entry_id": "e-2", "role": "robot", "content": "Hello"});
    replays(
        &app,
        &key,
        "POST",
        &format!("{path}/messages"),
        &bad_message.to_string(),
        400,
    )
    .await;

    // Measurements: accepted, and a 422 out of order; a batch, and an empty one.
    let now = app.clock.now();
    let m = |id: &str, minutes_ago: i64| {
        json!({"measurement_id": id, "user_id": "replayer", "weight": 70.2, "unit": "kg",
               "timestamp": (now - chrono::Duration::minutes(minutes_ago)).to_rfc3339(), "source": "scale"})
    };
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/measurements",
        &m("r-1", 1).to_string(),
        201,
    )
    .await;
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/measurements",
        &m("r-0", 600).to_string(),
        422,
    )
    .await;
    let batch = json!({"measurements": [m("r-2", 0)]});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/measurements/batch",
        &batch.to_string(),
        200,
    )
    .await;
    let empty = json!({"measurements": []});
    replays(
        &app,
        &key,
        "POST",
        "/api/v1/measurements/batch",
        &empty.to_string(),
        400,
    )
    .await;
}

#[tokio::test]
async fn a_replayed_measurement_keeps_its_correlation_id_and_duplicate_header() {
    let app = spawn_app().await;
    let key = app.api_key(&["measurements:write"]).await;
    let body = json!({"measurement_id": "dup-1", "user_id": "u-dup", "weight": 70.0, "unit": "kg",
                      "timestamp": app.clock.now().to_rfc3339(), "source": "scale"});
    let first = app
        .post_json("/api/v1/measurements", &key, body.to_string())
        .await;
    assert_eq!(first.status, 201);
    // The same measurement again, under a key: a duplicate answer with X-Duplicate-Of.
    let idem = "dup-key-1";
    let dup = app
        .send(send(
            "POST",
            "/api/v1/measurements",
            &key,
            idem,
            &body.to_string(),
        ))
        .await;
    assert_eq!(dup.status, 200);
    assert_eq!(dup.headers.get("x-duplicate-of").unwrap(), "dup-1");
    let replayed = app
        .send(send(
            "POST",
            "/api/v1/measurements",
            &key,
            idem,
            &body.to_string(),
        ))
        .await;
    assert_eq!(replayed.headers.get("x-duplicate-of").unwrap(), "dup-1");
    assert_eq!(
        replayed.headers.get("x-correlation-id"),
        dup.headers.get("x-correlation-id"),
        "the first answer's correlation id, not a new one"
    );
    assert_eq!(replayed.body, dup.body);
}

#[tokio::test]
async fn an_answer_too_large_to_keep_reaches_the_client_whole_and_the_key_stays_retryable() {
    let app = spawn_app().await;
    let key = app.api_key(&["measurements:write"]).await;
    let now = app.clock.now();
    // 500 items' report: well over what a key keeps (64 KiB).
    let items: Vec<_> = (0..500)
        .map(|i| {
            json!({"measurement_id": format!("big-{i:03}"), "user_id": format!("big-user-{}", i % 50),
                   "weight": 70.0, "unit": "kg",
                   "timestamp": (now - chrono::Duration::minutes(600 - i)).to_rfc3339(), "source": "scale"})
        })
        .collect();
    let body = json!({"measurements": items}).to_string();
    let first = app
        .send(send(
            "POST",
            "/api/v1/measurements/batch",
            &key,
            "big-batch",
            &body,
        ))
        .await;
    assert_eq!(first.status, 200);
    assert!(first.body.len() > 64 * 1024, "{} bytes", first.body.len());
    let report = first.json();
    assert_eq!(
        report["items"].as_array().unwrap().len(),
        500,
        "the whole body"
    );
    // Not kept: the same key runs again (every item now a duplicate), and answers whole.
    let again = app
        .send(send(
            "POST",
            "/api/v1/measurements/batch",
            &key,
            "big-batch",
            &body,
        ))
        .await;
    assert_eq!(again.status, 200);
    assert!(again.headers.get("idempotent-replayed").is_none());
    assert_eq!(again.json()["summary"]["duplicate"], 500);
}
