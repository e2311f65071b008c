//! What AWS DynamoDB does and DynamoDB Local does not, through the `dynamodb-faults`
//! proxy: transaction conflicts, throttles, lost answers, empty stream pages, shard splits,
//! and several readers of one stream. Each test switches on the fault it is about.

use crate::helpers::keys::*;
use std::collections::HashMap;
use std::time::Duration as StdDuration;

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use chrono::Duration;
use dynamodb_faults::{Faults, Kind};
use serde_json::json;

use crate::helpers::{faulty_dynamodb, spawn_app_via, store_for};
use ops_console::server::store::schema::SETTINGS;
use ops_console::server::store::tx::{self, Outcome, Reason};
use ops_console::server::store::{Busy, Store, StoreError};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

/// A settings-table item with a counter, as a transaction action.
fn bump(store: &Store, pk: &str) -> TransactWriteItem {
    let u = Update::builder()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk))
        .update_expression("ADD hits :one SET expires_at = :e")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .expression_attribute_values(":e", AttributeValue::N("4102444800".into()))
        .build()
        .unwrap();
    TransactWriteItem::builder().update(u).build()
}

async fn hits(store: &Store, pk: &str) -> i64 {
    let out = store
        .client()
        .get_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    out.item
        .and_then(|i| i.get("hits").and_then(|v| v.as_n().ok()).cloned())
        .map_or(0, |n| n.parse().unwrap())
}

/// The reasons DynamoDB gave, for one raw transaction (no retry).
async fn raw_reasons(store: &Store, actions: Vec<TransactWriteItem>) -> Vec<Reason> {
    let e = store
        .client()
        .transact_write_items()
        .set_transact_items(Some(actions))
        .send()
        .await
        .expect_err("the transaction is cancelled");
    tx::reasons(&e.into_service_error())
}

#[tokio::test]
async fn a_transaction_touching_an_item_another_transaction_holds_is_cancelled_as_a_conflict() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let store = app.store.clone();
    proxy.set(Faults {
        conflicts: true,
        hold_ms: (3_000, 3_000),
        ..Faults::default()
    });
    // The first holds "x" for 3 s; the second, sent once the first is holding, meets it.
    let first = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .client()
                .transact_write_items()
                .transact_items(bump(&store, "x"))
                .send()
                .await
        })
    };
    while proxy.report().writes == 0 {
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    let reasons = raw_reasons(&store, vec![bump(&store, "y"), bump(&store, "x")]).await;
    assert_eq!(reasons, vec![Reason::None, Reason::Conflict]);
    first.await.unwrap().expect("the first transaction commits");
    assert_eq!(proxy.report().get(Kind::Conflict), 1);

    // The helper waits its turn: both land, once each.
    proxy.update(|f| f.hold_ms = (400, 400));
    let a = tokio::spawn({
        let store = store.clone();
        async move { tx::transact(&store, vec![bump(&store, "z")]).await }
    });
    let b = tx::transact(&store, vec![bump(&store, "z")]).await.unwrap();
    assert!(b.is_done());
    assert!(a.await.unwrap().unwrap().is_done());
    assert_eq!(hits(&store, "z").await, 2);
    assert!(
        proxy.report().get(Kind::Conflict) >= 2,
        "{}",
        proxy.report()
    );
}

#[tokio::test]
async fn conflicts_past_the_budget_are_busy_and_the_api_answers_503_with_retry_after() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let store = app.store.clone();
    // The key is made first: making one is a transaction too.
    let key = app.api_key(&["switches:write", "switches:read"]).await;
    proxy.update(|f| f.conflict_rate = 1.0);
    let err = tx::transact(&store, vec![bump(&store, "w")])
        .await
        .expect_err("every attempt is cancelled");
    assert!(
        matches!(
            err,
            StoreError::Busy {
                cause: Busy::Conflict,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(hits(&direct, "w").await, 0, "nothing written");

    // A kill-switch change through the API: 503 + Retry-After while every transaction
    // conflicts, then the same request (same key) goes through once.
    let body = json!({"switch": "automation_enabled", "enable": true, "expected_version": 0,
                      "reason": "rollout", "confirm": true})
    .to_string();
    let send = || {
        app.send(
            axum::http::Request::post("/api/v1/kill-switches")
                .header("host", "localhost")
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .header("idempotency-key", "flip-1")
                .body(axum::body::Body::from(body.clone()))
                .unwrap(),
        )
    };
    let busy = send().await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(
        busy.headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        busy.headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    proxy.set(Faults::default());
    let mut done = send().await;
    for _ in 0..20 {
        // The refused attempt's claim may still be in progress: a careful client waits.
        if done.status != 409 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        done = send().await;
    }
    assert_eq!(done.status, 200, "{}", done.body);
    let again = send().await;
    assert_eq!(again.status, 200, "{}", again.body);
    let switches = ops_console::server::store::kill_switches::load(&direct, app.clock.now())
        .await
        .unwrap();
    assert_eq!(switches.version, 1, "one change, however often it was sent");
    assert!(switches.automation_enabled.enabled);
}

#[tokio::test]
async fn a_hot_item_is_throttled_inside_a_transaction_and_the_helper_waits_for_capacity() {
    // Three writes within half a second: no other test's load in between.
    crate::helpers::alone().await;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let store = app.store.clone();
    proxy.update(|f| f.item_writes_per_s = 2);
    // Two writes at once spend the item's capacity; the third is throttled.
    let write = || {
        store
            .client()
            .transact_write_items()
            .transact_items(bump(&store, "hot"))
            .send()
    };
    let (a, b) = tokio::join!(write(), write());
    a.unwrap();
    b.unwrap();
    let reasons = raw_reasons(&store, vec![bump(&store, "cold"), bump(&store, "hot")]).await;
    assert_eq!(reasons, vec![Reason::None, Reason::Throttled]);
    // The helper backs off until the item has capacity again.
    let out = tx::transact(&store, vec![bump(&store, "hot")])
        .await
        .unwrap();
    assert!(out.is_done());
    assert_eq!(hits(&direct, "hot").await, 3);
    assert_eq!(
        hits(&direct, "cold").await,
        0,
        "the throttled transaction wrote nothing"
    );
    assert!(proxy.report().get(Kind::HotItem) >= 1);
}

#[tokio::test]
async fn a_failed_condition_comes_back_with_the_item_and_other_codes_are_other() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let store = app.store.clone();
    let item = HashMap::from([
        ("pk".to_string(), s("once")),
        ("v".to_string(), s("first")),
        (
            "expires_at".to_string(),
            AttributeValue::N("4102444800".into()),
        ),
    ]);
    let put = |v: &str| {
        let mut it = item.clone();
        it.insert("v".into(), s(v));
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(store.table(SETTINGS.base))
                    .set_item(Some(it))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .unwrap(),
            )
            .build()
    };
    assert!(tx::transact(&store, vec![put("first")])
        .await
        .unwrap()
        .is_done());
    let out = tx::transact(&store, vec![bump(&store, "n"), put("second")])
        .await
        .unwrap();
    let Outcome::Refused(refused) = out else {
        panic!("refused by the condition")
    };
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, 1);
    let found = refused[0].1.as_ref().expect("the item as it was");
    assert_eq!(found.get("v"), Some(&s("first")));
    assert_eq!(
        hits(&store, "n").await,
        0,
        "nothing of the transaction was written"
    );

    let other = aws_sdk_dynamodb::types::CancellationReason::builder()
        .code("ValidationError")
        .build();
    assert_eq!(Reason::of(&other), Reason::Other("ValidationError".into()));
}

#[tokio::test]
async fn a_transaction_whose_answer_is_lost_is_sent_again_with_its_token_and_applies_once() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let store = app.store.clone();
    proxy.update(|f| f.lost_answer_rate = 1.0);
    // Every answer is lost: the SDK and then the helper resend with the same token, and
    // DynamoDB (like AWS, within ten minutes) answers the repeat without writing again.
    let task = tokio::spawn({
        let store = store.clone();
        async move { tx::transact(&store, vec![bump(&store, "lost")]).await }
    });
    // Once an answer was lost, the answers come back.
    while proxy.report().get(Kind::LostAnswer) == 0 {
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    proxy.update(|f| f.lost_answer_rate = 0.0);
    let out = task.await.unwrap();
    assert!(
        matches!(&out, Ok(o) if o.is_done()),
        "once the answers come back the helper is done: {out:?}"
    );
    assert_eq!(hits(&direct, "lost").await, 1, "applied once");
    let report = proxy.report();
    assert!(report.get(Kind::LostAnswer) >= 1, "{report}");
    assert!(report.get(Kind::TokenReplay) >= 1, "{report}");
}

#[tokio::test]
async fn a_measurement_whose_answer_is_lost_is_stored_once_and_answered_as_accepted() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = app.api_key(&["measurements:write"]).await;
    let body = json!({"measurement_id": "m-lost", "user_id": "u-lost", "weight": 71.5,
                      "unit": "kg", "timestamp": app.clock.now().to_rfc3339(), "source": "scale"});
    proxy.update(|f| {
        f.lost_answer_rate = 0.5;
        f.conflicts = true;
        f.hold_ms = (1, 3);
    });
    let first = app
        .post_json("/api/v1/measurements", &key, body.to_string())
        .await;
    proxy.set(Faults::default());
    assert!(
        first.status == 201 || first.status == 503,
        "accepted, or busy with Retry-After: {} {}",
        first.status,
        first.body
    );
    let again = app
        .post_json("/api/v1/measurements", &key, body.to_string())
        .await;
    assert!(again.status == 200 || again.status == 201, "{}", again.body);
    let stored = ops_console::server::store::many::scan_json(
        &direct,
        ops_console::server::store::schema::MEASUREMENTS.base,
    )
    .await
    .unwrap();
    let copies = stored
        .iter()
        .filter(|v| v["SK"].as_str().is_some_and(|s| s.starts_with("MEAS#")))
        .count();
    assert_eq!(copies, 1, "one measurement, however the answers went");
}

/// Publishes `n` short-lived messages, to two users each.
async fn publish_short_lived(app: &crate::helpers::TestApp, n: usize) {
    let inbox = app.state.inbox.clone();
    for i in 0..n {
        let p = ops_console::server::services::inbox::publish::Publish {
            uids: Some(vec![uk(&format!("r{i}")), uk(&format!("s{i}"))]),
            label: "two".into(),
            category: Some(ck("ops")),
            title: format!("short {i}"),
            body: "gone soon".into(),
            cta_uri: None,
            host_system_id: None,
            sender: "test".into(),
            ttl: Some("1h".into()),
        };
        inbox
            .publish(
                &tk("acme"),
                &ik("news"),
                &p,
                &format!("k{i}"),
                app.clock.now(),
            )
            .await
            .unwrap();
    }
}

/// Lets two hours pass and deletes what expired, as TTL would (on the direct store).
/// Returns how many items were deleted.
async fn expire(app: &crate::helpers::TestApp, direct: &Store) -> usize {
    app.clock.advance(Duration::hours(2));
    crate::helpers::sweep_inbox(direct, app.clock.now().timestamp()).await
}

async fn publish_and_expire(app: &crate::helpers::TestApp, direct: &Store, n: usize) -> usize {
    publish_short_lived(app, n).await;
    expire(app, direct).await
}

async fn drift(direct: &Store) -> usize {
    ops_console::server::services::inbox::verify::verify(direct, chrono::Utc::now().timestamp())
        .await
        .unwrap()
        .0
        .len()
}

#[tokio::test]
async fn the_stream_consumer_reads_on_through_empty_pages() {
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let deleted = publish_and_expire(&app, &direct, 5).await;
    assert_eq!(deleted, 10);
    assert!(
        drift(&direct).await > 0,
        "counters still count the removed copies"
    );
    proxy.update(|f| f.empty_page_rate = 0.7);
    let mut consumer = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(30));
    let mut counted = 0;
    for _ in 0..200 {
        counted += consumer.round().await.unwrap().counted;
        if counted == deleted {
            break;
        }
    }
    assert_eq!(counted, deleted, "every removal counted, once");
    assert_eq!(drift(&direct).await, 0);
    assert!(
        proxy.report().get(Kind::EmptyPage) > 0,
        "{}",
        proxy.report()
    );
}

#[tokio::test]
async fn a_split_shard_is_read_to_its_end_before_its_children() {
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    // The shard splits once 8 of its records have passed: the publishes' records stay in
    // the parent, the removals that follow go to the two children.
    proxy.update(|f| f.split_after_records = 8);
    publish_short_lived(&app, 6).await;
    let mut consumer = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(30));
    consumer.round().await.unwrap();
    assert_eq!(
        proxy.report().get(Kind::ShardSplit),
        1,
        "{}",
        proxy.report()
    );
    let deleted = expire(&app, &direct).await;
    let mut counted = 0;
    for _ in 0..100 {
        counted += consumer
            .round()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .counted;
        if counted == deleted {
            break;
        }
    }
    assert_eq!(
        counted, deleted,
        "every removal counted once, from the children"
    );
    assert_eq!(drift(&direct).await, 0);
    let states: Vec<serde_json::Value> =
        ops_console::server::store::many::scan_json(&direct, SETTINGS.base)
            .await
            .unwrap()
            .into_iter()
            .filter(|v| {
                v["pk"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("inbox-stream#"))
            })
            .collect();
    let is_child = |v: &serde_json::Value| {
        let pk = v["pk"].as_str().unwrap_or_default();
        pk.ends_with("-c0") || pk.ends_with("-c1")
    };
    let parent = states
        .iter()
        .find(|v| !is_child(v))
        .expect("the parent's state");
    assert_eq!(parent["finished"], true, "{parent}");
    let finished_at = parent["finished_at"]
        .as_i64()
        .expect("when the parent ended");
    let children: Vec<_> = states.iter().filter(|v| is_child(v)).collect();
    assert_eq!(children.len(), 2, "{states:?}");
    for c in children {
        assert!(
            c["started_at"].as_i64().unwrap() >= finished_at,
            "a child was read before its parent ended: {c} vs {parent}"
        );
    }
}

#[tokio::test]
async fn a_shard_held_by_a_console_that_died_is_taken_over_after_its_lease() {
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let second = store_for(&app, &proxy.endpoint()).await;
    // Long enough for the removals and a round of the other console, however slow.
    let lease = StdDuration::from_secs(15);
    let mut first = Consumer::new(app.store.clone(), "first", lease);
    first.round().await.unwrap();
    let taken = std::time::Instant::now();
    // The first console dies holding the lease; removals come meanwhile.
    drop(first);
    let deleted = publish_and_expire(&app, &direct, 3).await;
    let mut other = Consumer::new(second, "second", lease);
    let blocked = other.round().await.unwrap();
    assert_eq!(blocked.records, 0, "the shard is still the first console's");
    tokio::time::sleep(
        (taken + lease + StdDuration::from_millis(200))
            .saturating_duration_since(std::time::Instant::now()),
    )
    .await;
    let mut counted = 0;
    for _ in 0..50 {
        counted += other.round().await.unwrap().counted;
        if counted == deleted {
            break;
        }
    }
    assert_eq!(counted, deleted);
    assert_eq!(drift(&direct).await, 0);
    let owners: Vec<String> = ops_console::server::store::many::scan_json(&direct, SETTINGS.base)
        .await
        .unwrap()
        .into_iter()
        .filter(|v| {
            v["pk"]
                .as_str()
                .is_some_and(|p| p.starts_with("inbox-stream#"))
        })
        .map(|v| v["owner"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !owners.is_empty() && owners.iter().all(|o| o == "second"),
        "{owners:?}"
    );
}

#[tokio::test]
async fn fifty_users_at_once_throttle_no_item() {
    crate::helpers::alone().await;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let started_hour = app.clock.now().format("%Y-%m-%dT%H").to_string();
    let key = app
        .api_key(&["measurements:write", "inbox:write", "inbox:read"])
        .await;
    // A broadcast everyone reads at once.
    let broadcast = app
        .send(
            axum::http::Request::post("/api/v1/inbox/tenants/acme/inboxes/news/messages")
                .header("host", "localhost")
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .header("idempotency-key", "broadcast-1")
                .body(axum::body::Body::from(
                    json!({"audience": {"kind": "everyone"}, "title": "Maintenance", "body": "Tonight."})
                        .to_string(),
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(broadcast.status, 201, "{}", broadcast.body);
    let id = broadcast.json()["message_id"].as_str().unwrap().to_string();
    proxy.set(Faults {
        conflicts: true,
        hold_ms: (2, 5),
        item_writes_per_s: 20,
        ..Faults::default()
    });
    let start = app.clock.now() - Duration::hours(1);
    let mut tasks = tokio::task::JoinSet::new();
    for u in 0..50 {
        let app = app.clone();
        let key = key.clone();
        let id = id.clone();
        tasks.spawn(async move {
            let mut statuses = Vec::new();
            // Each user's scale sends one measurement a second.
            for n in 0..4i64 {
                let body = json!({"measurement_id": format!("m{u}-{n}"), "user_id": format!("user{u}"),
                                  "weight": 70.0 + n as f64 / 10.0, "unit": "kg",
                                  "timestamp": (start + Duration::minutes(n)).to_rfc3339(), "source": "scale"});
                statuses.push(app.post_json("/api/v1/measurements", &key, body.to_string()).await.status.as_u16());
                if n == 0 {
                    let read = app
                        .post_json(
                            &format!("/api/v1/inbox/tenants/acme/inboxes/news/users/user{u}/messages/{id}/read"),
                            &key,
                            "",
                        )
                        .await;
                    statuses.push(read.status.as_u16());
                }
                tokio::time::sleep(StdDuration::from_millis(1000)).await;
            }
            statuses
        });
    }
    let mut statuses = Vec::new();
    while let Some(s) = tasks.join_next().await {
        statuses.extend(s.unwrap());
    }
    let report = proxy.report();
    println!("hot-item run: {report}");
    assert_eq!(report.get(Kind::HotItem), 0, "{report}");
    let refused: Vec<&u16> = statuses
        .iter()
        .filter(|s| !(200..300).contains(*s))
        .collect();
    assert!(
        refused.is_empty(),
        "{refused:?} of {} requests",
        statuses.len()
    );
    // The counters are exact: the shards add up to what was recorded (from the hour the
    // run began to the hour it ended).
    let hour = app.clock.now().format("%Y-%m-%dT%H").to_string();
    let stats = ops_console::server::store::measurements::stats(&direct, &started_hour, &hour)
        .await
        .unwrap();
    let attempts: i64 = stats
        .iter()
        .map(|(_, c)| c.get("attempts").copied().unwrap_or(0))
        .sum();
    assert_eq!(attempts, 200, "every attempt counted once");
    let reads = ops_console::server::store::inbox::read_counts(
        &direct,
        "acme",
        &[("news".to_string(), id.clone())],
    )
    .await
    .unwrap();
    assert_eq!(
        reads[&("news".to_string(), id)],
        50,
        "every reader counted once"
    );
}
