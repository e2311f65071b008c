//! Measurements (docs/measurements.md) against DynamoDB Local: every case of the doc's
//! test list and the edge cases around it.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::helpers::{spawn_app, spawn_app_with, Answer, TestApp};
use ops_console::server::domain::measurements::payload::parse;
use ops_console::server::services::measurements::{Context, Measurements};
use ops_console::server::store::measurements::{self as store, Action};
use ops_console::server::store::query::Start;
use ops_console::server::store::schema::MEASUREMENTS;
use ops_console::server::store::{Busy, StoreError};

/// Now, to the second (the API takes timestamps to the second here).
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap()
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn body(id: &str, user: &str, weight: f64, unit: &str, at: DateTime<Utc>) -> Value {
    json!({"measurement_id": id, "user_id": user, "weight": weight, "unit": unit,
           "timestamp": ts(at), "source": "Scale-X"})
}

async fn post(
    app: &TestApp,
    key: &str,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = axum::http::Request::post(path)
        .header("host", "localhost")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    app.send(req.body(axum::body::Body::from(body.to_string())).unwrap())
        .await
}

async fn one(app: &TestApp, key: &str, b: &Value) -> Answer {
    post(app, key, "/api/v1/measurements", b, &[]).await
}

async fn writer(app: &TestApp) -> String {
    app.api_key(&["measurements:write"]).await
}

async fn audits(app: &TestApp, user: &str) -> Vec<store::AuditItem> {
    store::audits_of_user(&app.store, user, None, Start::First, 500)
        .await
        .unwrap()
        .0
}

async fn stored(app: &TestApp, user: &str) -> Vec<store::MeasurementItem> {
    store::measurements_of_user(&app.store, user, 500)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_same_measurement_twice_answers_the_original_result() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    let first = one(&app, &key, &body("m-1", "u1", 70.0, "kg", t0)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert!(first.headers.contains_key("x-correlation-id"));
    assert!(
        first.headers.contains_key("warning"),
        "no request key: warned"
    );
    let again = one(&app, &key, &body("m-1", "u1", 70.0, "kg", t0)).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.headers["x-duplicate-of"], "m-1");
    assert_eq!(again.json(), first.json(), "the original result again");
    assert_eq!(stored(&app, "u1").await.len(), 1);
    let actions: Vec<Action> = audits(&app, "u1").await.iter().map(|a| a.action).collect();
    assert_eq!(
        actions.iter().filter(|a| **a == Action::Accepted).count(),
        1
    );
    assert_eq!(
        actions.iter().filter(|a| **a == Action::Duplicate).count(),
        1
    );
}

#[tokio::test]
async fn the_same_id_with_another_payload_is_a_409_with_the_difference() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    assert_eq!(
        one(&app, &key, &body("m-1", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    let c = one(&app, &key, &body("m-1", "u1", 71.5, "kg", t0)).await;
    assert_eq!(c.status, 409, "{}", c.body);
    let v = c.json();
    assert_eq!(v["error"], "DuplicateMeasurement");
    assert_eq!(v["measurement_id"], "m-1");
    assert_eq!(v["original_result"]["weight_kg"], 70.0);
    assert_eq!(
        v["payload_diff"]["weight_kg"],
        json!({"original": "70.00", "submitted": "71.50"})
    );
    assert!(v["payload_diff"].get("timestamp").is_none());
    let s = stored(&app, "u1").await;
    assert_eq!((s.len(), s[0].weight_kg), (1, 70.0), "nothing overwritten");
    assert!(audits(&app, "u1")
        .await
        .iter()
        .any(|a| a.action == Action::Conflict && a.reason.contains("weight_kg")));
}

#[tokio::test]
async fn older_than_the_grace_period_is_a_422_and_skew_inside_it_is_accepted() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    assert_eq!(
        one(&app, &key, &body("m-0", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    let late = one(
        &app,
        &key,
        &body("m-1", "u1", 70.1, "kg", t0 - Duration::minutes(10)),
    )
    .await;
    assert_eq!(late.status, 422, "{}", late.body);
    let v = late.json();
    assert_eq!(v["error"], "OutOfOrderTimestamp");
    assert_eq!(v["user_id"], "u1");
    assert_eq!(
        v["last_accepted"],
        t0.to_rfc3339_opts(SecondsFormat::Millis, true)
    );
    assert_eq!(
        v["submitted"],
        (t0 - Duration::minutes(10)).to_rfc3339_opts(SecondsFormat::Millis, true)
    );
    // When to resubmit from (the last accepted minus the grace period), and the override.
    assert_eq!(
        v["accepted_from"],
        (t0 - Duration::minutes(5)).to_rfc3339_opts(SecondsFormat::Millis, true)
    );
    assert!(v["resolution"]
        .as_str()
        .unwrap()
        .contains("X-Force-Override: true"));
    assert_eq!(v["override"]["allowed"], false);
    assert_eq!(v["override"]["scope"], "measurements:admin");
    // Four minutes behind: inside the 300 s grace period.
    let skew = one(
        &app,
        &key,
        &body("m-2", "u1", 70.2, "kg", t0 - Duration::minutes(4)),
    )
    .await;
    assert_eq!(skew.status, 201, "{}", skew.body);
    // It did not move the last accepted time back: six minutes behind t0 is still late.
    assert_eq!(
        one(
            &app,
            &key,
            &body("m-3", "u1", 70.3, "kg", t0 - Duration::minutes(6))
        )
        .await
        .status,
        422
    );
    // Equal timestamps, different ids: both stored.
    assert_eq!(
        one(&app, &key, &body("m-4", "u1", 70.4, "kg", t0))
            .await
            .status,
        201
    );
    assert_eq!(stored(&app, "u1").await.len(), 3);
    // Another user has an order of their own.
    assert_eq!(
        one(
            &app,
            &key,
            &body("m-1", "u2", 80.0, "kg", t0 - Duration::days(1))
        )
        .await
        .status,
        201
    );
}

#[tokio::test]
async fn concurrent_submissions_for_one_user_keep_the_order() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::days(1);
    let mut tasks = tokio::task::JoinSet::new();
    // Interleaved so that late ones race early ones: 0, 19, 1, 18, ...
    let order: Vec<i64> = (0..10).flat_map(|i| [i, 19 - i]).collect();
    for i in order {
        let (app, key) = (app.clone(), key.clone());
        tasks.spawn(async move {
            let b = body(
                &format!("c-{i}"),
                "u1",
                70.0 + i as f64 / 10.0,
                "kg",
                t0 + Duration::minutes(10 * i),
            );
            (i, one(&app, &key, &b).await.status.as_u16())
        });
    }
    let mut accepted = 0;
    let mut late = 0;
    while let Some(r) = tasks.join_next().await {
        let (i, status) = r.unwrap();
        match status {
            201 => accepted += 1,
            422 => late += 1,
            other => panic!("c-{i}: {other}"),
        }
        if i == 19 {
            assert_eq!(status, 201, "the newest can never be out of order");
        }
    }
    assert_eq!(accepted + late, 20);
    let mut s = stored(&app, "u1").await;
    assert_eq!(s.len(), accepted);
    s.sort_by_key(|m| m.seq);
    let grace = Duration::seconds(300);
    let mut newest: Option<DateTime<Utc>> = None;
    for m in &s {
        let t = DateTime::parse_from_rfc3339(&m.timestamp)
            .unwrap()
            .with_timezone(&Utc);
        if let Some(n) = newest {
            assert!(t >= n - grace, "{} accepted after {n}", m.timestamp);
        }
        newest = Some(newest.map_or(t, |n| n.max(t)));
    }
    let seqs: Vec<i64> = s.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=accepted as i64).collect::<Vec<_>>(),
        "one acceptance at a time"
    );
}

#[tokio::test]
async fn batches_go_in_timestamp_order_per_user_with_and_without_fail_fast() {
    for fail_fast in [false, true] {
        let app = spawn_app_with(|c| c.measurements.batch_fail_fast = fail_fast).await;
        let key = writer(&app).await;
        let t0 = now() - Duration::days(2);
        assert_eq!(
            one(
                &app,
                &key,
                &body("b-0", "bea", 60.0, "kg", t0 + Duration::hours(5))
            )
            .await
            .status,
            201
        );
        let items = json!({"measurements": [
            body("a-2", "ann", 70.2, "kg", t0 + Duration::hours(2)),
            body("b-1", "bea", 60.1, "kg", t0 + Duration::hours(1)),
            body("a-1", "ann", 70.1, "kg", t0 + Duration::hours(1)),
            {"measurement_id": "x", "user_id": "ann", "weight": "heavy", "unit": "kg", "timestamp": ts(t0), "source": "s"},
            body("b-2", "bea", 60.2, "kg", t0 + Duration::hours(6)),
            body("a-3", "ann", 70.3, "kg", t0 + Duration::hours(3)),
        ]});
        let r = post(&app, &key, "/api/v1/measurements/batch", &items, &[]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        let status: Vec<&str> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["status"].as_str().unwrap())
            .collect();
        let b2 = if fail_fast { "skipped" } else { "accepted" };
        assert_eq!(
            status,
            vec![
                "accepted",
                "out_of_order",
                "accepted",
                "invalid",
                b2,
                "accepted"
            ],
            "fail_fast={fail_fast}"
        );
        assert_eq!(v["items"][3]["field"], "weight");
        assert_eq!(
            v["items"][1]["last_accepted"],
            (t0 + Duration::hours(5)).to_rfc3339_opts(SecondsFormat::Millis, true)
        );
        let ann: Vec<i64> = stored(&app, "ann").await.iter().map(|m| m.seq).collect();
        assert_eq!(ann, vec![1, 2, 3], "ann's items were taken oldest first");
        assert_eq!(v["summary"]["accepted"], if fail_fast { 3 } else { 4 });
        // What to send again, in order: the skipped item (the out-of-order one needs a
        // newer timestamp or an override, the invalid one a fix).
        let retry: Vec<u64> = v["retry_order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap())
            .collect();
        assert_eq!(retry, if fail_fast { vec![4] } else { vec![] });
        assert_eq!(
            v["items"][1]["accepted_from"],
            (t0 + Duration::hours(5) - Duration::minutes(5))
                .to_rfc3339_opts(SecondsFormat::Millis, true)
        );
        if fail_fast {
            assert!(audits(&app, "bea")
                .await
                .iter()
                .any(|a| a.action == Action::Skipped && a.measurement_id == "b-2"));
        }
    }
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::days(2);
    let big: Vec<Value> = (0..501)
        .map(|i| body(&format!("m{i}"), "u", 70.0, "kg", t0))
        .collect();
    let r = post(
        &app,
        &key,
        "/api/v1/measurements/batch",
        &json!({"measurements": big}),
        &[],
    )
    .await;
    assert_eq!(r.status, 413);
}

#[tokio::test]
async fn a_request_key_replays_its_answer_and_refuses_another_body() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    let b = body("k-1", "u1", 70.0, "kg", t0);
    let first = post(
        &app,
        &key,
        "/api/v1/measurements",
        &b,
        &[("x-idempotency-key", "req-1")],
    )
    .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.headers["x-idempotency-key"], "req-1");
    assert!(!first.headers.contains_key("warning"));
    let again = post(
        &app,
        &key,
        "/api/v1/measurements",
        &b,
        &[("x-idempotency-key", "req-1")],
    )
    .await;
    assert_eq!(again.status, 201, "the stored answer, status and all");
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.headers["x-idempotency-key"], "req-1");
    assert_eq!(again.json()["measurement_id"], "k-1");
    let other = body("k-2", "u1", 70.0, "kg", t0);
    let reused = post(
        &app,
        &key,
        "/api/v1/measurements",
        &other,
        &[("x-idempotency-key", "req-1")],
    )
    .await;
    assert_eq!(reused.status, 422);
    assert_eq!(stored(&app, "u1").await.len(), 1);
}

#[tokio::test]
async fn idempotency_records_expire_and_audits_carry_their_ttl() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now();
    assert_eq!(
        one(&app, &key, &body("e-1", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    assert_eq!(
        one(&app, &key, &body("e-1", "u1", 70.0, "kg", t0))
            .await
            .status,
        200
    );
    app.clock.advance(Duration::days(8));
    // Past IDEMPOTENCY_TTL_DAYS (7) the id is forgotten: the same payload is new again.
    let later = one(&app, &key, &body("e-1", "u1", 70.0, "kg", t0)).await;
    assert_eq!(later.status, 201, "{}", later.body);
    assert_eq!(later.json()["seq"], 2);
    let a = &audits(&app, "u1").await[0];
    let at = DateTime::parse_from_rfc3339(&a.at).unwrap().timestamp();
    assert_eq!(a.ttl - at, 30 * 86_400, "AUDIT_TTL_DAYS");
}

#[tokio::test]
async fn pounds_and_float_noise_normalize_to_the_same_payload() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    assert_eq!(
        one(&app, &key, &body("w-1", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    assert_eq!(
        one(&app, &key, &body("w-1", "u1", 154.32, "lb", t0))
            .await
            .status,
        200,
        "154.32 lb = 70.00 kg"
    );
    assert_eq!(
        one(&app, &key, &body("w-1", "u1", 70_000.0, "G", t0))
            .await
            .status,
        200,
        "units are case-insensitive"
    );
    assert_eq!(
        one(&app, &key, &body("w-2", "u1", 70.004, "kg", t0))
            .await
            .status,
        201
    );
    assert_eq!(
        one(&app, &key, &body("w-2", "u1", 70.0 + 0.004, "kg", t0))
            .await
            .status,
        200
    );
    let c = one(&app, &key, &body("w-2", "u1", 70.006, "kg", t0)).await;
    assert_eq!(c.status, 409, "70.01 is another weight");
}

#[tokio::test]
async fn overrides_need_the_admin_scope_and_the_setting() {
    let t0 = now() - Duration::hours(2);
    let app = spawn_app().await;
    let admin = app
        .api_key(&["measurements:write", "measurements:admin"])
        .await;
    assert_eq!(
        one(&app, &admin, &body("o-0", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    let h = [("x-force-override", "true")];
    let old = body("o-1", "u1", 69.0, "kg", t0 - Duration::days(3));
    let off = post(&app, &admin, "/api/v1/measurements", &old, &h).await;
    assert_eq!(
        off.status, 403,
        "ALLOW_TIMESTAMP_OVERRIDE is off: {}",
        off.body
    );

    let app = spawn_app_with(|c| c.measurements.allow_timestamp_override = true).await;
    let admin = app
        .api_key(&["measurements:write", "measurements:admin"])
        .await;
    let plain = writer(&app).await;
    assert_eq!(
        one(&app, &admin, &body("o-0", "u1", 70.0, "kg", t0))
            .await
            .status,
        201
    );
    assert_eq!(
        post(&app, &plain, "/api/v1/measurements", &old, &h)
            .await
            .status,
        403
    );
    assert_eq!(
        one(&app, &admin, &old).await.status,
        422,
        "no header: no override"
    );
    let ok = post(&app, &admin, "/api/v1/measurements", &old, &h).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.json()["status"], "override");
    let s = stored(&app, "u1").await;
    assert!(s
        .iter()
        .any(|m| m.measurement_id == "o-1" && m.overridden && m.seq == 0));
    assert!(audits(&app, "u1")
        .await
        .iter()
        .any(|a| a.action == Action::Override && a.measurement_id == "o-1"));
    // The last accepted time did not move back.
    assert_eq!(
        one(
            &app,
            &plain,
            &body("o-2", "u1", 70.0, "kg", t0 - Duration::hours(1))
        )
        .await
        .status,
        422
    );
}

#[tokio::test]
async fn invalid_bodies_are_a_400_naming_the_field_and_only_audited() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let now = now();
    let good = body("i-1", "uinv", 70.0, "kg", now - Duration::hours(1));
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        v
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("measurement_id");
            }),
            "measurement_id",
        ),
        (
            with(&|v| v["measurement_id"] = json!("a#b")),
            "measurement_id",
        ),
        (with(&|v| v["measurement_id"] = json!(7)), "measurement_id"),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("user_id");
            }),
            "user_id",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("weight");
            }),
            "weight",
        ),
        (with(&|v| v["weight"] = json!("70")), "weight"),
        (with(&|v| v["weight"] = json!(-1)), "weight"),
        (with(&|v| v["weight"] = json!(0)), "weight"),
        (with(&|v| v["weight"] = json!(5000)), "weight"),
        (with(&|v| v["unit"] = json!("stone")), "unit"),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("unit");
            }),
            "unit",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("timestamp");
            }),
            "timestamp",
        ),
        (with(&|v| v["timestamp"] = json!("yesterday")), "timestamp"),
        (
            with(&|v| v["timestamp"] = json!("2025-09-15T10:00:00")),
            "timestamp",
        ),
        (
            with(&|v| v["timestamp"] = json!(ts(now + Duration::hours(3)))),
            "timestamp",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("source");
            }),
            "source",
        ),
        (with(&|v| v["source"] = json!("  ")), "source"),
        (json!([good.clone()]), "body"),
    ];
    assert!(cases.len() >= 15);
    for (b, field) in &cases {
        let a = one(&app, &key, b).await;
        assert_eq!(a.status, 400, "{field}: {}", a.body);
        assert_eq!(a.json()["field"], *field, "{}", a.body);
    }
    let raw = app.post_json("/api/v1/measurements", &key, "{oops").await;
    assert_eq!(raw.status, 400);
    assert!(stored(&app, "uinv").await.is_empty(), "no measurement");
    let mine = audits(&app, "uinv").await;
    assert!(
        mine.len() >= 12 && mine.iter().all(|a| a.action == Action::Invalid),
        "{}",
        mine.len()
    );
    let (order, idemp) = store::read_state(&app.store, "uinv", "i-1").await.unwrap();
    assert!(order.is_none() && idemp.is_none());
    let outsider = app.api_key(&["inbox:write"]).await;
    assert_eq!(one(&app, &outsider, &good).await.status, 403);
}

async fn submit_to(m: &Measurements, app: &TestApp, id: &str, at: DateTime<Utc>) -> &'static str {
    let ctx = Context {
        correlation_id: "two-consoles".into(),
        force_override: false,
        admin: false,
    };
    let s = parse(&body(id, "u2", 70.0, "kg", at), app.clock.now()).unwrap();
    m.submit(&s, &ctx, app.clock.now()).await.unwrap().name()
}

/// Two console processes on one table, each with its own copy of the user's ordering
/// state: a copy spares the read before the transaction, and never decides against the
/// database (stale, it fails the version condition; "behind", it is read again).
#[tokio::test]
async fn two_consoles_keep_one_order_and_an_in_order_measurement_costs_one_request() {
    let app = spawn_app().await;
    let settings = app.state.config.measurements.clone();
    let a = Measurements::new(app.store.clone(), settings.clone());
    let b = Measurements::new(app.store.clone(), settings);
    let t0 = now() - Duration::hours(3);
    let cost = |before: u64| app.store.requests().total() - before;

    let r = app.store.requests().total();
    assert_eq!(submit_to(&a, &app, "x1", t0).await, "accepted");
    assert_eq!(
        cost(r),
        2,
        "first of a user: the state is read, then one transaction"
    );
    let r = app.store.requests().total();
    assert_eq!(
        submit_to(&a, &app, "x2", t0 + Duration::minutes(1)).await,
        "accepted"
    );
    assert_eq!(cost(r), 1, "next in order: one transaction, no read");

    // The other console moves the order on; a's copy is stale now.
    assert_eq!(
        submit_to(&b, &app, "x3", t0 + Duration::hours(2)).await,
        "accepted"
    );
    let r = app.store.requests().total();
    let late = submit_to(&a, &app, "x4", t0 + Duration::minutes(10)).await;
    assert_eq!(
        late, "out_of_order",
        "judged on the database's state, not a's copy"
    );
    assert_eq!(
        cost(r),
        3,
        "the failed transaction, the read, the attempt's audit"
    );
    assert_eq!(
        submit_to(&a, &app, "x5", t0 + Duration::hours(2)).await,
        "accepted"
    );
    // A repeat through the copy: the transaction's condition finds the first answer.
    let r = app.store.requests().total();
    assert_eq!(
        submit_to(&a, &app, "x5", t0 + Duration::hours(2)).await,
        "duplicate"
    );
    assert_eq!(
        cost(r),
        2,
        "the refused transaction, then the attempt's audit"
    );

    // The state gone (as TTL removes it): a's copy says "behind", the database does not.
    app.store
        .client()
        .delete_item()
        .table_name(app.store.table(MEASUREMENTS.base))
        .key("PK", AttributeValue::S(store::user_pk("u2")))
        .key("SK", AttributeValue::S("ORDER".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(submit_to(&a, &app, "x6", t0).await, "accepted");

    let ids: Vec<String> = stored(&app, "u2")
        .await
        .into_iter()
        .map(|m| m.measurement_id)
        .collect();
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(!ids.contains(&"x4".to_string()));
}

/// A 409 (the same id with another payload) is the client's business conflict, answered on
/// purpose: it counts as a client error of its scope, never as a failure.
#[tokio::test]
async fn a_409_counts_as_a_client_error_and_not_in_the_failure_rate() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    for (i, w) in [70.0, 71.5, 72.0].into_iter().enumerate() {
        let idem = format!("idem-409-{i}");
        let b = body("m-409", "u409", w, "kg", t0);
        let a = post(
            &app,
            &key,
            "/api/v1/measurements",
            &b,
            &[("Idempotency-Key", &idem)],
        )
        .await;
        assert_eq!(a.status, if w == 70.0 { 201 } else { 409 }, "{}", a.body);
    }
    app.state.idempotency.flush_stats().await.unwrap();
    let health = app.state.idempotency.health("24h").await.unwrap();
    let scope = health
        .scopes
        .iter()
        .find(|s| s.scope.contains("measurements"))
        .unwrap_or_else(|| {
            panic!(
                "{:?}",
                health.scopes.iter().map(|s| &s.scope).collect::<Vec<_>>()
            )
        });
    let t = &scope.totals;
    assert_eq!((t.client_errors, t.failures), (2, 0), "{t:?}");
    assert_eq!(t.failure_pct(), Some(0.0));
}

/// The rates of a chosen user count that user's attempts only.
#[tokio::test]
async fn the_rates_of_a_chosen_user_count_only_that_users_attempts() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    let mine = body("m-r1", "u-rates-1", 70.0, "kg", t0);
    for b in [&mine, &mine, &body("m-r2", "u-rates-2", 80.0, "kg", t0)] {
        assert!(one(&app, &key, b).await.status.is_success());
    }
    use ops_console::server::services::measurements::pages;
    let now = app.clock.now();
    let (user, _) = pages::rates_of_user(&app.store, "u-rates-1", "24h", 10.0, now)
        .await
        .unwrap();
    assert_eq!(user.of, "this user");
    assert_eq!((user.totals.attempts, user.totals.duplicate), (2, 1));
    assert_eq!(user.duplicate_pct, Some(50.0));
    let everyone = pages::rates(&app.store, "24h", 10.0, now).await.unwrap();
    assert_eq!(everyone.of, "every user");
    assert_eq!(everyone.totals.attempts, 3);
}

/// Every user's attempts of one outcome are spread over the shards of
/// `outcome-shard-index` (no partition takes every acceptance), and read back merged,
/// newest first, page by page, each once; none of them takes a copy in `outcome-index` (one
/// partition per outcome); a record of two releases back (no shard: on that index alone) is
/// read with them, and one of the release before (both keys, on both indexes) once.
#[tokio::test]
async fn attempts_of_one_outcome_are_sharded_and_read_with_the_release_befores() {
    use ops_console::server::store::many;
    let app = spawn_app().await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    let mut sent = Vec::new();
    for i in 0..30 {
        let id = format!("m-o{i:02}");
        let b = body(
            &id,
            &format!("u-out-{}", i % 7),
            70.0,
            "kg",
            t0 + Duration::seconds(i),
        );
        assert_eq!(one(&app, &key, &b).await.status, 201);
        sent.push(id);
    }
    // A duplicate is audited under its own outcome, not among the accepted.
    let again = body("m-o00", "u-out-0", 70.0, "kg", t0);
    assert_eq!(one(&app, &key, &again).await.status, 200);
    let raw = many::scan_json(&app.store, MEASUREMENTS.base)
        .await
        .unwrap();
    let accepted: Vec<&Value> = raw
        .iter()
        .filter(|i| i["SK"].as_str().is_some_and(|s| s.starts_with("AUDIT#")))
        .filter(|i| {
            i["outcome_shard"]
                .as_str()
                .is_some_and(|s| s.starts_with("accepted#"))
        })
        .collect();
    assert_eq!(accepted.len(), 30);
    assert!(
        raw.iter().all(|i| i.get("audit_outcome").is_none()),
        "no record is written to the unsharded index"
    );
    let shards: std::collections::BTreeSet<&str> = accepted
        .iter()
        .map(|i| i["outcome_shard"].as_str().unwrap())
        .collect();
    assert!(
        shards.len() >= 8 && shards.iter().all(|s| s.starts_with("accepted#")),
        "30 records over 16 shards: {shards:?}"
    );
    // The release before wrote its records with `audit_outcome` alone.
    let mut old: std::collections::HashMap<String, AttributeValue> =
        serde_dynamo::to_item(store::AuditItem {
            pk: store::user_pk("u-out-old"),
            sk: format!("AUDIT#{}#0a0b0c", ts(t0 - Duration::minutes(5))),
            user_id: "u-out-old".into(),
            measurement_id: "m-old".into(),
            action: Action::Accepted,
            reason: String::new(),
            payload: None,
            correlation_id: "c-old".into(),
            at: ts(t0 - Duration::minutes(5)),
            ttl: (Utc::now() + Duration::days(1)).timestamp(),
        })
        .unwrap();
    old.insert("audit_outcome".into(), AttributeValue::S("accepted".into()));
    // The release before wrote both keys: on both indexes, read once.
    let mut both = old.clone();
    both.insert(
        "SK".into(),
        AttributeValue::S(format!("AUDIT#{}#0d0e0f", ts(t0 - Duration::minutes(4)))),
    );
    both.insert("measurement_id".into(), AttributeValue::S("m-both".into()));
    both.insert(
        "outcome_shard".into(),
        AttributeValue::S("accepted#03".into()),
    );
    for item in [old, both] {
        app.store
            .client()
            .put_item()
            .table_name(app.store.table(MEASUREMENTS.base))
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }
    sent.push("m-old".into());
    sent.push("m-both".into());
    // Pages of 7 under one sealed cursor, each one query of each shard and of the old
    // index.
    let (mut cursor, mut seen) = (None::<String>, Vec::new());
    loop {
        let before = app.store.requests().snapshot();
        let (items, next) =
            store::audits_by_outcome(&app.store, Action::Accepted, cursor.as_deref(), 7)
                .await
                .unwrap();
        assert!(items.len() <= 7);
        let queries =
            app.store.requests().snapshot()["Query"] - before.get("Query").copied().unwrap_or(0);
        assert_eq!(queries, 17, "16 shards and the old index, once each");
        seen.extend(items);
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let sks: Vec<&str> = seen.iter().map(|a| a.sk.as_str()).collect();
    assert!(
        sks.windows(2).all(|w| w[0] > w[1]),
        "newest first, once: {sks:?}"
    );
    let mut ids: Vec<String> = seen.iter().map(|a| a.measurement_id.clone()).collect();
    ids.sort();
    sent.sort();
    assert_eq!(ids, sent);
    assert!(seen.iter().all(|a| a.action == Action::Accepted));
}

/// While `outcome-shard-index` is still being built on a table two releases old (AWS refuses
/// to query an index it is backfilling, for hours on a large table), one outcome's attempts
/// are busy (503, `Retry-After: 60`), not a list from `outcome-index` alone, which holds
/// none of this release's records; once it is built, every record, in order.
#[tokio::test]
async fn attempts_of_one_outcome_are_busy_while_their_index_is_built() {
    use dynamodb_faults::Kind;
    let proxy = crate::helpers::faulty_dynamodb().await;
    let (app, _direct) = crate::helpers::spawn_app_via(&proxy, |_| {}).await;
    let key = writer(&app).await;
    let t0 = now() - Duration::hours(1);
    for i in 0..12 {
        let b = body(
            &format!("m-b{i:02}"),
            &format!("u-build-{}", i % 3),
            70.0,
            "kg",
            t0 + Duration::seconds(i),
        );
        assert_eq!(one(&app, &key, &b).await.status, 201);
    }
    let building = |on: bool| {
        proxy.update(|f| {
            f.backfilling_indexes = if on {
                vec!["outcome-shard-index".into()]
            } else {
                Vec::new()
            }
        })
    };
    let page = |cursor: Option<String>| {
        let app = &app;
        async move { store::audits_by_outcome(&app.store, Action::Accepted, cursor.as_deref(), 5).await }
    };
    // Pages of 5; the second is asked for while the index is built, then again once it is.
    let (first, cursor) = page(None).await.expect("the first page");
    assert!(cursor.is_some());
    assert_eq!(proxy.report().get(Kind::Backfilling), 0);
    building(true);
    match page(cursor.clone()).await {
        Err(StoreError::Busy {
            cause: Busy::IndexBuilding,
            ..
        }) => {}
        other => panic!("busy while the index is built, got {other:?}"),
    }
    assert!(proxy.report().get(Kind::Backfilling) >= 1);
    building(false);
    let mut seen: Vec<String> = first.into_iter().map(|a| a.measurement_id).collect();
    let mut cursor = cursor;
    while let Some(c) = cursor {
        let (items, next) = page(Some(c)).await.expect("a page once the index is built");
        seen.extend(items.into_iter().map(|a| a.measurement_id));
        cursor = next;
    }
    let expected: Vec<String> = (0..12).rev().map(|i| format!("m-b{i:02}")).collect();
    assert_eq!(seen, expected);
}
