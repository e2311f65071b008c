//! More of what AWS serves and DynamoDB Local does not, each through the `dynamodb-faults`
//! proxy and each with what the console must do about it: batches handed back in part,
//! 500s after a commit, writes that land late, a client token still in progress, write
//! units per partition, an index that has not seen the latest writes, stream errors and
//! shards that split twice, query pages that end before the matches do, and monitoring
//! counts under lost answers.

use crate::helpers::keys::*;
use std::time::Duration as StdDuration;

use dynamodb_faults::{Faults, Kind};
use serde_json::json;

use crate::helpers::{faulty_dynamodb, spawn_app_via};
use ops_console::server::services::inbox::publish::Publish;
use ops_console::server::store::events::outbox::Group;
use ops_console::server::store::events::outbox_reads::{self, Filter};
use ops_console::server::store::many::scan_json;
use ops_console::server::store::schema::{IDEMPOTENCY_STATS, MEASUREMENTS, SETTINGS};

fn to_everyone(i: usize) -> Publish {
    Publish {
        uids: None,
        label: "everyone".into(),
        category: Some(ck("news")),
        title: format!("public {i}"),
        body: "for all".into(),
        cta_uri: None,
        ttl: None,
        sender: "test".into(),
        host_system_id: None,
    }
}

/// Waits until the proxy has applied every late write it holds.
pub async fn late_writes_landed(proxy: &dynamodb_faults::Proxy) {
    for _ in 0..1200 {
        if proxy.report().late_pending == 0 {
            return;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    panic!("late writes never landed: {}", proxy.report());
}

#[tokio::test]
async fn a_batch_handed_back_in_part_is_finished_and_one_that_never_finishes_is_503() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let now = app.clock.now();
    for i in 0..5 {
        app.state
            .inbox
            .publish(
                &tk("acme"),
                &ik("news"),
                &to_everyone(i),
                &format!("p{i}"),
                now,
            )
            .await
            .unwrap();
    }
    let key = app.api_key(&["inbox:read"]).await;
    let feed = "/api/v1/inbox/tenants/acme/inboxes/news/users/u1/feed";
    // Every batch comes back with all but one of its keys unprocessed: the receipts of
    // five public messages take five calls, and the answer is whole.
    proxy.update(|f| {
        f.partial_batch_rate = 1.0;
        f.partial_batch_keeps = 1;
    });
    let a = app.api("GET", feed, &key, None).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["items"].as_array().unwrap().len(), 5);
    assert!(
        proxy.report().get(Kind::PartialBatch) >= 4,
        "{}",
        proxy.report()
    );
    // Twenty keys one at a time: past the store's retries, DynamoDB is busy, not the data
    // wrong: 503 with Retry-After, never a 500.
    proxy.set(Faults::default());
    for i in 5..25 {
        app.state
            .inbox
            .publish(
                &tk("acme"),
                &ik("news"),
                &to_everyone(i),
                &format!("p{i}"),
                now,
            )
            .await
            .unwrap();
    }
    proxy.update(|f| {
        f.partial_batch_rate = 1.0;
        f.partial_batch_keeps = 1;
    });
    let busy = app.api("GET", feed, &key, None).await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert!(
        busy.headers.contains_key("retry-after"),
        "{:?}",
        busy.headers
    );
}

#[tokio::test]
async fn a_write_answered_500_after_it_committed_is_stored_once() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = app.api_key(&["measurements:write"]).await;
    let body = json!({"measurement_id": "m-500", "user_id": "u-500", "weight": 70.1,
                      "unit": "kg", "timestamp": app.clock.now().to_rfc3339(), "source": "scale"});
    proxy.update(|f| f.error_after_commit_rate = 1.0);
    let first = app
        .post_json("/api/v1/measurements", &key, body.to_string())
        .await;
    proxy.set(Faults::default());
    assert!(
        matches!(first.status.as_u16(), 201 | 503),
        "accepted (its token answered the retry), or busy: {} {}",
        first.status,
        first.body
    );
    let again = app
        .post_json("/api/v1/measurements", &key, body.to_string())
        .await;
    assert!(matches!(again.status.as_u16(), 200 | 201), "{}", again.body);
    let stored = scan_json(&direct, MEASUREMENTS.base).await.unwrap();
    let copies = stored
        .iter()
        .filter(|v| v["SK"].as_str().is_some_and(|s| s.starts_with("MEAS#")))
        .count();
    assert_eq!(copies, 1);
    assert!(
        proxy.report().get(Kind::ErrorAfterCommit) >= 1,
        "{}",
        proxy.report()
    );
}

#[tokio::test]
async fn a_transaction_sent_again_while_it_runs_is_in_progress_then_replayed_and_applied_once() {
    use ops_console::server::store::tx;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    // Longer than the store's retries last: every retry meets the first still running.
    proxy.update(|f| {
        f.late_write_rate = 1.0;
        f.late_write_ms = 5_000;
    });
    let item = |pk: &str| {
        let u = aws_sdk_dynamodb::types::Update::builder()
            .table_name(app.store.table(SETTINGS.base))
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.into()))
            .update_expression("ADD hits :one SET expires_at = :e")
            .expression_attribute_values(
                ":one",
                aws_sdk_dynamodb::types::AttributeValue::N("1".into()),
            )
            .expression_attribute_values(
                ":e",
                aws_sdk_dynamodb::types::AttributeValue::N("4102444800".into()),
            )
            .build()
            .unwrap();
        aws_sdk_dynamodb::types::TransactWriteItem::builder()
            .update(u)
            .build()
    };
    // The first send lands late; every retry with its token meets it in progress.
    let busy = tx::transact(&app.store, vec![item("slow")]).await;
    proxy.update(|f| f.late_write_rate = 0.0);
    late_writes_landed(&proxy).await;
    // Once it landed, the same transaction (a new call: a new token) finds its work done
    // only if its conditions say so; here the counter shows the first one applied once.
    let done = format!("{busy:?}");
    let stored = scan_json(&direct, SETTINGS.base).await.unwrap();
    let hits = stored
        .iter()
        .find(|v| v["pk"] == "slow")
        .and_then(|v| v["hits"].as_i64());
    assert_eq!(hits, Some(1), "applied once ({done:?})");
    let r = proxy.report();
    assert!(
        r.get(Kind::LateWrite) >= 1 && r.get(Kind::TokenInProgress) >= 1,
        "{r}"
    );
}

#[tokio::test]
async fn a_late_claim_never_undoes_the_work_of_the_console_that_took_over() {
    let slow = faulty_dynamodb().await;
    let (a, direct) = spawn_app_via(&slow, |_| {}).await;
    let fast = faulty_dynamodb().await;
    let b = a.console_via(&fast.endpoint()).await;
    let key = a.api_key(&["switches:read", "switches:write"]).await;
    let now = a
        .api("GET", "/api/v1/kill-switches", &key, None)
        .await
        .json();
    let body = json!({"switch": "automation_enabled", "enable": !now["automation_enabled"].as_bool().unwrap(),
                      "expected_version": now["version"], "reason": "late claim", "confirm": true})
    .to_string();
    let request = || {
        axum::http::Request::post("/api/v1/kill-switches")
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .header("idempotency-key", "late-claim-1")
            .body(axum::body::Body::from(body.clone()))
            .unwrap()
    };
    // Console A is slow: its writes are answered 500 and land later, after console B
    // has done the work.
    slow.update(|f| {
        f.late_write_rate = 1.0;
        f.late_write_ms = 20_000;
    });
    let first = a.send(request()).await;
    assert_eq!(first.status, 503, "{}", first.body);
    assert!(first.headers.contains_key("retry-after"));
    // The client tries again; the load balancer sends it to console B.
    let second = b.send(request()).await;
    assert_eq!(second.status, 200, "{}", second.body);
    late_writes_landed(&slow).await;
    slow.set(Faults::default());
    // A's writes landed after B's: nothing was done twice, nothing undone.
    let third = a.send(request()).await;
    assert_eq!(third.status, 200, "{}", third.body);
    assert_eq!(third.body, second.body, "the same answer, replayed");
    let switches = ops_console::server::store::kill_switches::load(&direct, a.clock.now())
        .await
        .unwrap();
    assert_eq!(
        switches.version,
        now["version"].as_u64().unwrap() + 1,
        "one change"
    );
    assert!(slow.report().get(Kind::LateWrite) >= 1, "{}", slow.report());
}

#[tokio::test]
async fn a_late_position_never_moves_a_stream_back() {
    use ops_console::server::store::inbox::stream::Consumer;
    let slow = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&slow, |_| {}).await;
    let publish = |batch: usize| {
        let app = app.clone();
        async move {
            for i in 0..3 {
                let mut p = to_everyone(i);
                p.uids = Some(vec![uk(&format!("r{batch}-{i}"))]);
                let key = format!("k{batch}-{i}");
                let now = app.clock.now();
                app.state
                    .inbox
                    .publish(&tk("acme"), &ik("news"), &p, &key, now)
                    .await
                    .unwrap();
            }
        }
    };
    let mut consumer = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(30));
    // The first position the console saves is slow: answered 500, it lands two seconds
    // later, after the console read on and saved a later position.
    publish(0).await;
    slow.update(|f| {
        f.late_write_rate = 1.0;
        f.late_write_ms = 2_000;
        f.late_write_matching = "sequence".into();
    });
    let _ = consumer.round().await;
    slow.set(Faults::default());
    publish(1).await;
    for _ in 0..5 {
        consumer.round().await.unwrap();
    }
    late_writes_landed(&slow).await;
    assert!(slow.report().get(Kind::LateWrite) >= 1, "{}", slow.report());
    // The console, restarted, reads on from the saved position: nothing is left.
    let mut next = Consumer::new(direct.clone(), "one", StdDuration::from_secs(30));
    let mut read = 0;
    for _ in 0..3 {
        read += next.round().await.unwrap().records;
    }
    assert_eq!(read, 0, "the saved position is the furthest one read");
}

#[tokio::test]
async fn writes_are_billed_and_throttled_by_write_units_as_aws_counts_them() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let table = app.store.table(SETTINGS.base);
    let big = "x".repeat(1500);
    let put = |pk: &str| {
        app.store
            .client()
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S(pk.into()))
            .item("blob", AttributeValue::S(big.clone()))
    };
    put("units-a").send().await.unwrap();
    let before = proxy.report();
    put("units-b").send().await.unwrap();
    let plain = proxy.report().units_since(&before);
    assert_eq!(plain.write, 2.0, "1.5 KB rounds up to 2 units: {plain:?}");
    let before = proxy.report();
    let p = aws_sdk_dynamodb::types::Put::builder()
        .table_name(&table)
        .item("pk", AttributeValue::S("units-c".into()))
        .item("blob", AttributeValue::S(big.clone()))
        .build()
        .unwrap();
    app.store
        .client()
        .transact_write_items()
        .transact_items(
            aws_sdk_dynamodb::types::TransactWriteItem::builder()
                .put(p)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let tx = proxy.report().units_since(&before);
    assert_eq!(
        tx.write, 4.0,
        "a transaction's item is billed twice: {tx:?}"
    );
    // One partition takes 1 unit a second: a 2-unit write leaves it in debt, and the next
    // write within the second is throttled (the SDK retries it once it has paid).
    proxy.update(|f| {
        f.partitions = Some(dynamodb_faults::Limits {
            partition_write_per_s: 1.0,
            ..dynamodb_faults::Limits::unlimited()
        })
    });
    for _ in 0..20 {
        let _ = put("units-hot").send().await;
        if proxy.report().get(Kind::PartitionThrottle) > 0 {
            break;
        }
    }
    assert!(
        proxy.report().get(Kind::PartitionThrottle) >= 1,
        "{}",
        proxy.report()
    );
}

#[tokio::test]
async fn an_index_copy_is_billed_and_throttled_on_the_index_keys_partition_as_aws_does() {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
    use ops_console::server::store::schema::MW_IDEMPOTENCY;
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    // Two units a second per partition: AWS's 1,000, scaled by 0.002.
    proxy.update(|f| f.partitions = Some(dynamodb_faults::Limits::scaled(0.002)));
    let table = app.store.table(MW_IDEMPOTENCY.base);
    // No retries: the test sees each refusal as AWS sends it.
    let client = aws_sdk_dynamodb::Client::from_conf(
        app.store
            .client()
            .config()
            .to_builder()
            .retry_config(RetryConfig::disabled())
            .build(),
    );
    let day = format!("probe-{}", ops_console::server::ids::random_hex(4));
    // 2,500 bytes as DynamoDB counts them: names and values.
    let item = |id: &str| {
        let fixed = "event_id".len()
            + id.len()
            + "event_day".len()
            + day.len()
            + "created_sk".len()
            + 1
            + "blob".len();
        [
            ("event_id", AttributeValue::S(id.into())),
            ("event_day", AttributeValue::S(day.clone())),
            ("created_sk", AttributeValue::S("1".into())),
            ("blob", AttributeValue::S("x".repeat(2500 - fixed))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect::<std::collections::HashMap<_, _>>()
    };
    let in_transaction = |id: &str| {
        client.transact_write_items().transact_items(
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&table)
                        .set_item(Some(item(id)))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
    };
    let id = format!("probe-a-{day}");
    in_transaction(&id).send().await.unwrap();
    let report = proxy.report();
    let spent = |key: &str| {
        report
            .keys
            .iter()
            .find(|k| k.key == key)
            .map(|k| k.write)
            .unwrap_or(0.0)
    };
    // AWS's arithmetic: 3 KB twice on the item's partition, and again on the index key's.
    assert_eq!(
        spent(&format!("{table}|event_id={id}")),
        6.0,
        "{:?}",
        report.keys
    );
    assert_eq!(
        spent(&format!("{table}/index/event-day-index|event_day={day}")),
        6.0,
        "{:?}",
        report.keys
    );
    assert_eq!(
        spent(&format!(
            "{table}/index/conversation-events-index|conversation_id="
        )),
        0.0,
        "an index whose key the item lacks gets no copy"
    );
    // The index key's partition is in debt (2 - 6): a write of another item with the same
    // index key is refused there, though its own partition is fresh.
    let err = in_transaction(&format!("probe-b-{day}"))
        .send()
        .await
        .expect_err("the index partition is in debt");
    use aws_sdk_dynamodb::operation::put_item::PutItemError;
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
    let TransactWriteItemsError::TransactionCanceledException(cancelled) = err.into_service_error()
    else {
        panic!("a cancelled transaction");
    };
    let reasons: Vec<_> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or_default().to_string())
        .collect();
    assert_eq!(reasons, vec!["ThrottlingError".to_string()]);
    let err = client
        .put_item()
        .table_name(&table)
        .set_item(Some(item(&format!("probe-c-{day}"))))
        .send()
        .await
        .expect_err("refused on the index");
    let PutItemError::ProvisionedThroughputExceededException(e) = err.into_service_error() else {
        panic!("ProvisionedThroughputExceeded");
    };
    let reason = &e.throttling_reasons()[0];
    assert_eq!(
        reason.reason(),
        Some("IndexWriteKeyRangeThroughputExceeded")
    );
    assert!(
        reason
            .resource()
            .unwrap_or_default()
            .ends_with("/index/event-day-index"),
        "{reason:?}"
    );
    let report = proxy.report();
    assert_eq!(report.get(Kind::PartitionThrottle), 2, "{report}");
    let hot = report.keys.iter().find(|k| k.throttled > 0).unwrap();
    assert_eq!(
        hot.key,
        format!("{table}/index/event-day-index|event_day={day}")
    );
}

#[tokio::test]
async fn a_bulk_release_misses_nothing_the_index_had_not_shown_yet() {
    let secret = ops_console::server::outbound::signature::SigningSecret::generate();
    let (_receiver, url) = crate::receiver::Receiver::start(vec![secret.clone()]).await;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        // Room for a slow machine between the holds and the job's first pass.
        c.events.bulk_confirm_ms = 8_000;
    })
    .await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    for i in 0..2 {
        let e = crate::events::event(&format!("lag-{i}"), Some("m1"), "I am filing a chargeback");
        assert!(crate::events::post_event(&app, &key, &e)
            .await
            .status
            .is_success());
    }
    // Safe mode goes on before they are delivered: the dispatcher holds them.
    app.set_switches(true, true).await;
    app.state.events.dispatch_all().await.unwrap();
    // From now, the partitions of the held group show nothing written in the last 6 s
    // (less than a job waits before it trusts an empty pass), while the job's own
    // partition is up to date: the job's first passes find the group empty.
    let held = outbox_reads::count(&direct, Group::Held, &Filter::default())
        .await
        .unwrap();
    assert!(held >= 2, "{held} held");
    proxy.update(|f| {
        f.index_lag_ms = 6_000;
        f.index_lag_matching = "held#".into();
    });
    use ops_console::server::services::events::outbox::{job_op, BulkRequest};
    let req = BulkRequest {
        op: job_op("release").unwrap(),
        filter: Filter::default(),
        reason: "lag".into(),
        actor: "test".into(),
        form_key: "lag-release".into(),
    };
    app.set_switches(false, true).await;
    app.state.events.start_bulk("held", req).await.unwrap();
    let mut finished = false;
    for _ in 0..600 {
        app.state.events.run_jobs().await.unwrap();
        let jobs = scan_json(
            &direct,
            ops_console::server::store::schema::MW_IDEMPOTENCY.base,
        )
        .await
        .unwrap();
        finished = jobs
            .iter()
            .any(|v| v["kind"] == "job" && v["status"] == "finished");
        if finished {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    assert!(finished, "the job ended");
    proxy.set(Faults::default());
    let left = outbox_reads::count(&direct, Group::Held, &Filter::default())
        .await
        .unwrap();
    assert_eq!(left, 0, "every held action was released");
    assert!(
        proxy.report().get(Kind::IndexLag) >= 1,
        "{}",
        proxy.report()
    );
}

#[tokio::test]
async fn the_stream_consumer_reads_on_through_expired_iterators_trims_limits_and_splits_of_splits()
{
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    proxy.update(|f| {
        f.expired_iterator_rate = 0.4;
        f.trimmed_rate = 0.5;
        f.stream_limit_rate = 0.3;
        f.split_after_records = 3;
    });
    let mut consumer = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(30));
    let kinds = [Kind::ExpiredIterator, Kind::StreamLimit, Kind::Trimmed];
    let (mut deleted, mut counted) = (0, 0);
    // Removals keep coming while the consumer reads: a shard splits, and its children,
    // reading what follows, split again.
    for batch in 0..6 {
        deleted += publish_and_expire(&app, &direct, &format!("r{batch}"), 10).await;
        for _ in 0..300 {
            if let Ok(r) = consumer.round().await {
                counted += r.counted;
            }
            if counted == deleted {
                break;
            }
        }
    }
    assert_eq!(deleted, 60);
    // Until the consumer has met every fault at least once.
    for _ in 0..300 {
        if kinds.iter().all(|k| proxy.report().get(*k) > 0) {
            break;
        }
        if let Ok(r) = consumer.round().await {
            counted += r.counted;
        }
    }
    assert_eq!(
        counted,
        deleted,
        "every removal counted once: {}",
        proxy.report()
    );
    let r = proxy.report();
    for kind in kinds {
        assert!(r.get(kind) >= 1, "{kind:?}: {r}");
    }
    assert!(r.get(Kind::ShardSplit) >= 2, "a child split again: {r}");
}

#[tokio::test]
async fn every_read_that_needs_every_match_reads_every_page() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let now = app.clock.now();
    for (i, category) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let mut p = to_everyone(i);
        p.uids = Some(vec![uk("reader")]);
        p.category = Some(ck(category));
        app.state
            .inbox
            .publish(&tk("acme"), &ik("news"), &p, &format!("c{i}"), now)
            .await
            .unwrap();
    }
    for t in ["t1", "t2", "t3", "t4", "t5"] {
        let settings = ops_console::server::contract::inbox::TenantSettings {
            title: Some(t.into()),
            ttl: None,
        };
        app.state
            .inbox
            .put_tenant(&tk(t), settings, now)
            .await
            .unwrap();
    }
    let whole_counts = app
        .state
        .inbox
        .counts(&tk("acme"), &ik("news"), &uk("reader"))
        .await
        .unwrap();
    let whole_tenants = ops_console::server::store::inbox::tenants(&app.store)
        .await
        .unwrap();
    // Every query page ends after two items, as a 1 MB page ends.
    proxy.update(|f| f.query_page_items = 2);
    let paged_counts = app
        .state
        .inbox
        .counts(&tk("acme"), &ik("news"), &uk("reader"))
        .await
        .unwrap();
    let paged_tenants = ops_console::server::store::inbox::tenants(&app.store)
        .await
        .unwrap();
    assert_eq!(paged_counts, whole_counts);
    assert_eq!(paged_counts.unread_by_category.len(), 5);
    assert_eq!(paged_tenants, whole_tenants);
    assert!(paged_tenants.len() >= 5);
}

#[tokio::test]
async fn monitoring_counts_are_not_counted_twice_when_answers_are_lost() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = app.api_key(&["switches:read", "switches:write"]).await;
    for i in 0..4 {
        let now = app
            .api("GET", "/api/v1/kill-switches", &key, None)
            .await
            .json();
        let body = json!({"switch": "automation_enabled", "enable": !now["automation_enabled"].as_bool().unwrap(),
                          "expected_version": now["version"], "reason": "counted", "confirm": true});
        let req = axum::http::Request::post("/api/v1/kill-switches")
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .header("idempotency-key", format!("count-{i}"))
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        assert_eq!(app.send(req).await.status, 200);
    }
    // Every write commits and its answer is lost, also the SDK's retries of it.
    proxy.update(|f| f.lost_answer_rate = 1.0);
    let _ = app.state.idempotency.flush_stats().await;
    proxy.set(Faults::default());
    app.state.idempotency.flush_stats().await.unwrap();
    let stats = scan_json(&direct, IDEMPOTENCY_STATS.base).await.unwrap();
    let requests: i64 = stats
        .iter()
        .filter(|v| {
            v["scope"]
                .as_str()
                .is_some_and(|s| s.contains("kill-switches"))
        })
        .filter_map(|v| v["requests"].as_i64())
        .sum();
    assert_eq!(requests, 4, "four requests, counted once each: {stats:?}");
    assert!(proxy.report().get(Kind::LostAnswer) >= 1);
}

/// AWS serves `DescribeStream` about 10 times a second per account and region: a console
/// that reads its shards every second lists them once a minute (100 consoles: under 2 a
/// second), and at once when a shard it read has ended (its children are new, and are
/// read without waiting for the minute). The gauge of how long this console has not read
/// its shards to their newest record stays near zero while it reads.
#[tokio::test]
async fn the_stream_consumer_lists_the_shards_once_a_minute_and_again_when_one_ends() {
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let mut consumer = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(30));
    let before = proxy.report().describe_stream;
    for _ in 0..30 {
        consumer.round().await.unwrap();
    }
    let listed = proxy.report().describe_stream - before;
    assert_eq!(listed, 1, "30 rounds, one list");

    // A shard splits after 3 records: the consumer that read it to its end lists again,
    // and counts what its children hold (the second batch) in the rounds that follow.
    proxy.update(|f| f.split_after_records = 3);
    let before = proxy.report().describe_stream;
    let (mut deleted, mut counted) = (0, 0);
    for batch in 0..2 {
        deleted += publish_and_expire(&app, &direct, &format!("split-{batch}"), 8).await;
        for _ in 0..50 {
            counted += consumer.round().await.unwrap().counted;
            if counted == deleted {
                break;
            }
        }
    }
    assert!(deleted > 0);
    assert_eq!(counted, deleted, "{}", proxy.report());
    assert!(proxy.report().get(Kind::ShardSplit) >= 1);
    let listed = proxy.report().describe_stream - before;
    assert!(
        (1..=10).contains(&listed),
        "listed again when a shard ended, not every round: {listed}"
    );
}

/// `/healthz` answers from the process: no DynamoDB request per check, and 200 while
/// DynamoDB is away (a brownout must not make ECS replace every console at once); it says
/// what the console's own requests saw. Readiness and the alarms tell DynamoDB's state.
#[tokio::test]
async fn healthz_answers_from_the_process_while_dynamodb_is_away() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = app.api_key(&["switches:read"]).await;
    let before = proxy.report().requests;
    for _ in 0..5 {
        let h = app.get("/healthz", None).await;
        assert_eq!(h.status, 200);
        assert_eq!(
            h.json()["dynamodb"],
            "ok",
            "the key's requests were answered"
        );
    }
    assert_eq!(
        proxy.report().requests,
        before,
        "no DynamoDB request per check"
    );

    proxy.update(|f| f.outage = dynamodb_faults::Outage::Refuse);
    let refused = app.api("GET", "/api/v1/kill-switches", &key, None).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    let h = app.get("/healthz", None).await;
    assert_eq!(h.status, 200, "alive while DynamoDB is away");
    assert_eq!(h.json()["dynamodb"], "failing");
    proxy.update(|f| f.outage = dynamodb_faults::Outage::None);
    let back = app.api("GET", "/api/v1/kill-switches", &key, None).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(app.get("/healthz", None).await.json()["dynamodb"], "ok");
}

/// A hung DynamoDB (connections accepted, nothing answered, as AWS in a brownout) holds
/// no request past its deadline: a kill-switch change is answered 503 with `Retry-After`
/// and problem+json at `operations.request_deadline_ms`, long before the SDK's own
/// timeouts (10 s a try) would have answered. Once DynamoDB answers again, the same
/// request (same key) is made once.
#[tokio::test]
async fn a_hung_dynamodb_is_answered_503_with_retry_after_at_the_request_deadline() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |c| c.operations.request_deadline_ms = 1_000).await;
    let key = app.api_key(&["switches:write", "switches:read"]).await;
    let viewer = app
        .session_as("vera", ops_console::model::users::Role::Viewer)
        .await;
    let body = json!({"switch": "automation_enabled", "enable": true, "expected_version": 0,
                      "reason": "rollout", "confirm": true})
    .to_string();
    let send =
        || app.post_json_with_key_header("/api/v1/kill-switches", &key, "flip-hung", body.clone());

    proxy.update(|f| f.outage = dynamodb_faults::Outage::Hang);
    let started = std::time::Instant::now();
    let hung = send().await;
    let took = started.elapsed();
    assert_eq!(hung.status, 503, "{}", hung.body);
    assert_eq!(
        hung.headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        hung.headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(
        took < StdDuration::from_secs(10),
        "answered by the deadline, not by the SDK's timeouts: {took:?}"
    );
    assert!(proxy.report().requests > 0, "the request reached DynamoDB");
    // A server function's call gets the error its client reads: an `AppError`.
    let refused = app
        .call::<ops_console::api::idempotency::LoadIdempotencyHealth>(
            &[("window", "24h")],
            Some(&viewer),
        )
        .await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(refused.headers.contains_key("serverfnerror"));
    let e: ops_console::model::AppError = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(
        e,
        ops_console::model::AppError::Unavailable {
            retry_after_secs: 1
        }
    );

    proxy.update(|f| f.outage = dynamodb_faults::Outage::None);
    let mut done = send().await;
    for _ in 0..60 {
        // The first attempt's work may still hold its key: a careful client waits.
        if done.status != 409 && done.status != 503 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        done = send().await;
    }
    assert_eq!(done.status, 200, "{}", done.body);
    let again = send().await;
    assert_eq!(again.status, 200, "{}", again.body);
    let shown = app.api("GET", "/api/v1/kill-switches", &key, None).await;
    assert_eq!(shown.json()["automation_enabled"], true, "{}", shown.body);
    assert_eq!(shown.json()["version"], 1, "made once: {}", shown.body);
}

/// Publishes `n` messages of an hour to a user each (`<tag>-<i>`), then removes them as
/// DynamoDB's TTL would two hours later, through `direct`: how many items it removed.
async fn publish_and_expire(
    app: &crate::helpers::TestApp,
    direct: &ops_console::server::store::Store,
    tag: &str,
    n: usize,
) -> usize {
    publish_for_an_hour(app, tag, n).await;
    let now = app.clock.now();
    crate::helpers::sweep_inbox(direct, (now + chrono::Duration::hours(2)).timestamp()).await
}

/// Publishes `n` messages of an hour to a user each (`<tag>-<i>`).
async fn publish_for_an_hour(app: &crate::helpers::TestApp, tag: &str, n: usize) {
    let now = app.clock.now();
    for i in 0..n {
        let mut p = to_everyone(i);
        p.category = Some(ck("ops"));
        p.ttl = Some("1h".into());
        p.uids = Some(vec![uk(&format!("{tag}-{i}"))]);
        app.state
            .inbox
            .publish(&tk("acme"), &ik("news"), &p, &format!("{tag}-{i}"), now)
            .await
            .unwrap();
    }
}

/// A duplicate delivery is counted once on an event whose counter's write committed and was
/// answered 500 (the store sends it again, under its client token): the count is what the
/// helpdesk sent, not what the database was asked.
#[tokio::test]
async fn a_duplicate_is_counted_once_when_its_answer_is_lost() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::store::events::count_duplicate;
    use ops_console::server::store::schema::MW_IDEMPOTENCY;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = "evt:rp:c-dup:m-lost";
    direct
        .client()
        .put_item()
        .table_name(direct.table(MW_IDEMPOTENCY.base))
        .item("event_id", AttributeValue::S(key.into()))
        .item("kind", AttributeValue::S("event".into()))
        .send()
        .await
        .unwrap();
    proxy.update(|f| f.error_after_commit_rate = 1.0);
    count_duplicate(&app.store, key).await.expect("counted");
    proxy.set(Faults::default());
    count_duplicate(&app.store, key).await.expect("counted");
    let item = direct
        .client()
        .get_item()
        .table_name(direct.table(MW_IDEMPOTENCY.base))
        .key("event_id", AttributeValue::S(key.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    let counted = item.item().and_then(|i| i.get("duplicates")).cloned();
    assert_eq!(
        counted,
        Some(AttributeValue::N("2".into())),
        "two duplicates sent"
    );
    let report = proxy.report();
    assert!(report.get(Kind::ErrorAfterCommit) >= 1, "{report}");
    assert!(report.get(Kind::TokenReplay) >= 1, "{report}");
}

/// A flip that took effect while DynamoDB could not be reached to record its idempotent
/// result (each of the SDK's attempts reset) is answered only once the result is
/// recorded: the same request sent again is its replay, not a fresh run refused because
/// the version has moved on (as a chaos run's refused outage once did).
#[tokio::test]
async fn an_answer_waits_until_its_idempotent_result_is_recorded() {
    let proxy = faulty_dynamodb().await;
    let (app, _direct) = spawn_app_via(&proxy, |_| {}).await;
    let key = app.api_key(&["switches:write", "switches:read"]).await;
    let body = json!({"switch": "automation_enabled", "enable": true, "expected_version": 0,
                      "reason": "rollout", "confirm": true})
    .to_string();
    // Only the write recording a result fails so, until the SDK has given up once.
    proxy.update(|f| {
        f.reset_rate = 1.0;
        f.reset_matching = "claim_nonce = :mine AND #status = :started".into();
    });
    let watch = async {
        while proxy.report().get(Kind::Reset) < 3 {
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
        proxy.update(|f| f.reset_rate = 0.0);
    };
    let (first, ()) = tokio::join!(
        app.post_json_with_key_header("/api/v1/kill-switches", &key, "flip-recorded", body.clone()),
        watch
    );
    assert_eq!(first.status, 200, "{}", first.body);
    let again = app
        .post_json_with_key_header("/api/v1/kill-switches", &key, "flip-recorded", body)
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json(), first.json());
    assert!(again.headers.contains_key("idempotent-replayed"));
}

/// A stream position kept past the stream's 24 hours is trimmed on AWS with whatever
/// followed it, read or not: removals that are never counted. The consumer goes on from the
/// trim horizon and says so; the recount finds the counters the lost removals left high,
/// and `verify inbox --repair` sets them, after which a recount agrees.
#[tokio::test]
async fn removals_a_trim_took_unread_are_found_by_the_recount_and_repaired() {
    use ops_console::server::services::inbox::verify;
    use ops_console::server::store::inbox::stream::Consumer;
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let now = app.clock.now();
    publish_for_an_hour(&app, "trim", 6).await;
    // A consumer reads the stream to its end (the publishes), keeping its position.
    let mut first = Consumer::new(app.store.clone(), "one", StdDuration::from_secs(1));
    for _ in 0..20 {
        first.round().await.unwrap();
    }
    first.release().await.unwrap();
    let published_before = verify::verify(&direct, now.timestamp()).await.unwrap().0;
    assert!(published_before.is_empty(), "{published_before:?}");
    // The messages expire and are removed; then the kept position is trimmed, and the
    // first two removals after it with it.
    let removed =
        crate::helpers::sweep_inbox(&direct, (now + chrono::Duration::hours(2)).timestamp()).await;
    assert_eq!(removed, 6);
    proxy.update(|f| {
        f.trimmed_rate = 1.0;
        f.trim_loses = 2;
    });
    let mut next = Consumer::new(app.store.clone(), "two", StdDuration::from_secs(1));
    // Until it has read past the trim and counted what is left: once trimmed, it counts
    // the rest, and a round after that counts nothing more.
    let mut counted = 0;
    for _ in 0..100 {
        if proxy.report().get(Kind::Trimmed) > 0 {
            proxy.update(|f| f.trimmed_rate = 0.0);
        }
        let r = next.round().await.unwrap();
        counted += r.counted;
        if proxy.report().get(Kind::Trimmed) > 0 && counted >= removed - 2 && r.counted == 0 {
            break;
        }
    }
    let lost = proxy.report().get(Kind::TrimmedLost);
    assert_eq!(lost, 2, "{}", proxy.report());
    assert_eq!(
        counted,
        removed - 2,
        "every removal but the lost ones counted"
    );
    let later = (now + chrono::Duration::hours(2)).timestamp();
    let (drift, _) = verify::verify(&direct, later).await.unwrap();
    assert!(!drift.is_empty(), "the lost removals left counters high");
    assert!(drift.iter().all(|d| d.stored > d.counted), "{drift:?}");
    // No consumer runs now: nothing is left to count between the recounts.
    let repair = verify::repair(&direct, later, StdDuration::ZERO)
        .await
        .unwrap();
    assert!(repair.left.is_empty(), "{repair:?}");
    assert_eq!(repair.fixed, drift);
    let (after, _) = verify::verify(&direct, later).await.unwrap();
    assert!(after.is_empty(), "{after:?}");
}
