//! DynamoDB's limits reached through the API are 400s naming the field (413 for sizes),
//! decided before DynamoDB is called: each limit plus one, and nothing written.

use serde_json::{json, Value};

use crate::helpers::{pct, spawn_app, TestApp};
use ops_console::server::store::many::scan_json;
use ops_console::server::store::schema::CONVERSATIONS;

fn context(id: &str) -> Value {
    json!({"conversation_id": id, "channel_method": "whatsapp", "recipient_tel": "+447700900777",
           "company_id": "ci-l", "project_id": "pi-l", "request_id": "req-l"})
}

async fn conversations_stored(app: &TestApp) -> usize {
    scan_json(&app.store, CONVERSATIONS.base)
        .await
        .unwrap()
        .len()
}

/// A 400 naming `field` (or a field under it), and no conversation written.
async fn refused(app: &TestApp, key: &str, body: Value, field: &str) {
    let before = conversations_stored(app).await;
    let a = app
        .post_json("/api/v1/conversations", key, body.to_string())
        .await;
    assert_eq!(a.status, 400, "{}", a.body);
    let named = a.json()["field"].as_str().unwrap_or_default().to_string();
    assert!(
        named.starts_with(field),
        "{named} should name {field}: {}",
        a.body
    );
    assert_eq!(conversations_stored(app).await, before, "nothing written");
}

fn nested(levels: usize) -> Value {
    (1..levels).fold(json!({"leaf": 1}), |inner, _| json!({ "x": inner }))
}

#[tokio::test]
async fn a_conversation_id_past_the_sort_key_limit_is_refused_in_bytes() {
    let app = spawn_app().await;
    let key = app
        .api_key(&["conversations:write", "conversations:read"])
        .await;
    // 1,000 bytes is the limit: 500 two-byte characters pass, 501 do not.
    let ok = format!("ci-l#pi-l#req-l#{}", "é".repeat(492));
    assert_eq!(ok.len(), 1000);
    let a = app
        .post_json("/api/v1/conversations", &key, context(&ok).to_string())
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let over = format!("ci-l#pi-l#req-l#{}", "é".repeat(493));
    refused(&app, &key, context(&over), "conversation_id").await;
}

#[tokio::test]
async fn path_keys_past_dynamodbs_key_sizes_are_400s() {
    let app = spawn_app().await;
    let key = app
        .api_key(&["conversations:write", "conversations:read"])
        .await;
    let long_id = "x".repeat(1001);
    let a = app
        .api(
            "GET",
            &format!(
                "/api/v1/conversations/{}/{}",
                pct("+447700900777"),
                pct(&long_id)
            ),
            &key,
            None,
        )
        .await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], "conversation_id");
    let long_pc = "9".repeat(321);
    for (method, suffix, body) in [
        ("GET", "", None),
        (
            "PATCH",
            "",
            Some(json!({"task_complete": true}).to_string()),
        ),
        (
            "POST",
            "/messages",
            Some(json!({"entry_id": "e", "role": "user", "content": "hi"}).to_string()),
        ),
    ] {
        let a = app
            .api(
                method,
                &format!("/api/v1/conversations/{}/c-1{suffix}", pct(&long_pc)),
                &key,
                body,
            )
            .await;
        assert_eq!(a.status, 400, "{method}: {}", a.body);
        assert_eq!(a.json()["field"], "primary_channel");
    }
}

#[tokio::test]
async fn maps_nested_past_dynamodbs_32_levels_or_with_unstorable_numbers_are_refused() {
    let app = spawn_app().await;
    let key = app.api_key(&["conversations:write"]).await;
    let mut ok = context("ci-l#pi-l#req-ok#1");
    // 32 levels with the item: 31 in the attribute pass, 32 do not.
    ok["channel_config"] = nested(31);
    let a = app
        .post_json("/api/v1/conversations", &key, ok.to_string())
        .await;
    assert_eq!(a.status, 201, "31 levels are fine: {}", a.body);
    let mut deep = context("ci-l#pi-l#req-deep#1");
    deep["channel_config"] = nested(32);
    refused(&app, &key, deep, "channel_config.x").await;
    for (n, number) in [("big", json!(1e200)), ("tiny", json!(1e-200))] {
        let mut b = context(&format!("ci-l#pi-l#req-{n}#1"));
        b["project_data"] = json!({"score": number});
        refused(&app, &key, b, "project_data.score").await;
    }
    let mut unnamed = context("ci-l#pi-l#req-unnamed#1");
    unnamed["ai_config"] = json!({"": "x"});
    refused(&app, &key, unnamed, "ai_config").await;
}

#[tokio::test]
async fn empty_keys_and_oversized_bodies_are_refused_before_dynamodb() {
    let app = spawn_app().await;
    let key = app
        .api_key(&["conversations:write", "measurements:write"])
        .await;
    refused(&app, &key, context(""), "conversation_id").await;
    let m = json!({"measurement_id": "", "user_id": "u", "weight": 70, "unit": "kg",
                   "timestamp": app.clock.now().to_rfc3339(), "source": "s"});
    let a = app
        .post_json("/api/v1/measurements", &key, m.to_string())
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["field"], "measurement_id");
    // A body past the limit is a 413, unread.
    let huge = context(&format!("ci-l#pi-l#req-h#{}", "1".repeat(10)));
    let mut huge = huge;
    huge["project_data"] = json!({"blob": "x".repeat(200 * 1024)});
    let a = app
        .post_json("/api/v1/conversations", &key, huge.to_string())
        .await;
    assert_eq!(a.status, 413, "{}", a.body);
}
