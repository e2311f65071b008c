//! The inbox (docs/inbox.md) against DynamoDB Local: publishing, feeds, reads, counters,
//! expiry through the stream consumer, and the recount.

use crate::helpers::keys::*;
use std::sync::Arc;

use chrono::Duration;
use serde_json::json;

use crate::helpers::{pct, spawn_app, TestApp};
use ops_console::server::crash_points::CrashPoints;
use ops_console::server::services::inbox::feed::Marked;
use ops_console::server::services::inbox::publish::Publish;
use ops_console::server::services::inbox::verify::verify;
use ops_console::server::store::inbox::stream;
use ops_console::server::store::inbox::{self as store, MessageItem, Stats};
use ops_console::server::store::schema::INBOX;
use ops_console::server::store::sweep;

const T: &str = "acme";
const I: &str = "news";

fn to_users(uids: Vec<String>, category: Option<&str>, ttl: Option<&str>) -> Publish {
    Publish::build(
        Some(uids.iter().map(|u| uk(u)).collect()),
        None,
        category.map(str::to_string),
        "Your invoice".into(),
        "It is ready.".into(),
        Some("https://acme.example/invoices".into()),
        ttl.map(str::to_string),
        "test",
        None,
    )
    .unwrap()
}

fn to_everyone(title: &str, category: Option<&str>, ttl: Option<&str>) -> Publish {
    Publish::build(
        None,
        None,
        category.map(str::to_string),
        title.into(),
        "For everyone.".into(),
        None,
        ttl.map(str::to_string),
        "test",
        None,
    )
    .unwrap()
}

async fn stats(app: &TestApp, uid: &str, category: &str) -> (i64, i64) {
    let pk = if uid == "$public" {
        store::public_pk(T, I)
    } else {
        store::user_pk(T, uid, I)
    };
    store::get::<Stats>(&app.store, &pk, &store::stats_sk(category))
        .await
        .unwrap()
        .map_or((0, 0), |s| (s.published, s.read))
}

async fn no_drift(app: &TestApp) {
    let (drift, items) = verify(&app.store, app.clock.now().timestamp())
        .await
        .unwrap();
    assert!(items > 0);
    assert!(drift.is_empty(), "drift: {drift:?}");
}

/// A console that dies once a publish wrote this many batches.
struct DiesAfterBatches(usize);

impl CrashPoints for DiesAfterBatches {
    fn after_publish_batch(&self, batches: usize) -> bool {
        batches == self.0
    }
}

#[tokio::test]
async fn publishing_to_250_users_is_atomic_per_batch_and_resumes_after_a_crash() {
    let app = spawn_app().await;
    let inbox = &app.state.inbox;
    let users: Vec<String> = (0..250).map(|i| format!("u{i:03}")).collect();
    let p = to_users(users.clone(), Some("billing"), None);
    let crashed = inbox
        .with_crash_points(Arc::new(DiesAfterBatches(3)))
        .publish(&tk(T), &ik(I), &p, "job-250", app.clock.now())
        .await;
    assert!(crashed.is_err(), "the simulated crash stops it");

    // Three whole batches (33 users each) and nothing else: every copy with its counters.
    let mut delivered = Vec::new();
    for u in &users {
        let (mine, _) = store::messages(&app.store, &store::user_pk(T, u, I), None, 0, 10)
            .await
            .unwrap();
        let (published, _) = stats(&app, u, "*").await;
        assert_eq!(
            mine.len() as i64,
            published,
            "{u}: copy and counter go together"
        );
        if !mine.is_empty() {
            delivered.push(mine[0].id.clone());
        }
    }
    assert_eq!(delivered.len(), 99);

    let done = inbox
        .publish(&tk(T), &ik(I), &p, "job-250", app.clock.now())
        .await
        .unwrap();
    assert!(done.resumed);
    assert_eq!(
        done.message_id, delivered[0],
        "the resumed publish keeps its message id"
    );
    for u in &users {
        let (mine, _) = store::messages(&app.store, &store::user_pk(T, u, I), None, 0, 10)
            .await
            .unwrap();
        assert_eq!(mine.len(), 1, "{u} has the message once");
        assert_eq!(mine[0].id, done.message_id);
        assert_eq!(stats(&app, u, "*").await, (1, 0), "{u}");
        assert_eq!(stats(&app, u, "billing").await, (1, 0), "{u}");
    }
    // A third run with the same job writes nothing new.
    inbox
        .publish(&tk(T), &ik(I), &p, "job-250", app.clock.now())
        .await
        .unwrap();
    assert_eq!(stats(&app, "u000", "*").await, (1, 0));
    no_drift(&app).await;
}

async fn publish_http(
    app: &TestApp,
    key: &str,
    idem: Option<&str>,
    body: &serde_json::Value,
) -> crate::helpers::Answer {
    let mut req =
        axum::http::Request::post(format!("/api/v1/inbox/tenants/{T}/inboxes/{I}/messages"))
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json");
    if let Some(k) = idem {
        req = req.header("idempotency-key", k);
    }
    app.send(req.body(axum::body::Body::from(body.to_string())).unwrap())
        .await
}

#[tokio::test]
async fn one_publish_request_sent_many_times_creates_one_message() {
    let app = spawn_app().await;
    let key = app.api_key(&["inbox:write", "inbox:read"]).await;
    let body = json!({"audience": {"kind": "users", "uids": ["ann", "bob"]}, "category": "promo",
                      "title": "Spring sale", "body": "20% off", "cta_uri": "https://acme.example/sale"});
    assert_eq!(
        publish_http(&app, &key, None, &body).await.status,
        400,
        "a key is required"
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let (app, key, body) = (app.clone(), key.clone(), body.clone());
        tasks.spawn(async move { publish_http(&app, &key, Some("pub-1"), &body).await });
    }
    let mut ids = Vec::new();
    while let Some(a) = tasks.join_next().await {
        let a = a.unwrap();
        assert!(
            a.status == 201 || a.status == 409,
            "{} {}",
            a.status,
            a.body
        );
        if a.status == 201 {
            ids.push(a.json()["message_id"].as_str().unwrap().to_string());
        }
    }
    let again = publish_http(&app, &key, Some("pub-1"), &body).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    ids.push(again.json()["message_id"].as_str().unwrap().to_string());
    ids.dedup();
    assert_eq!(ids.len(), 1, "one message id for every answer: {ids:?}");
    for u in ["ann", "bob"] {
        assert_eq!(stats(&app, u, "*").await, (1, 0));
        let feed = app
            .api(
                "GET",
                &format!("/api/v1/inbox/tenants/{T}/inboxes/{I}/users/{u}/feed"),
                &key,
                None,
            )
            .await;
        assert_eq!(feed.json()["items"].as_array().unwrap().len(), 1);
    }
    let reader = app.api_key(&["inbox:read"]).await;
    let refused = publish_http(&app, &reader, Some("pub-2"), &body).await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn a_hundred_concurrent_reads_of_one_message_count_once() {
    let app = spawn_app().await;
    let inbox = app.state.inbox.clone();
    let now = app.clock.now();
    let mine = inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_users(vec!["ann".into(), "bob".into()], Some("billing"), None),
            "j1",
            now,
        )
        .await
        .unwrap();
    let public = inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_everyone("Maintenance tonight", Some("ops"), None),
            "j2",
            now,
        )
        .await
        .unwrap();
    for id in [&mine.message_id, &public.message_id] {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..100 {
            let (inbox, id) = (inbox.clone(), id.clone());
            tasks.spawn(async move {
                inbox
                    .mark_read(&tk(T), &ik(I), &uk("ann"), &mk(&id), now)
                    .await
                    .unwrap()
            });
        }
        let mut first = 0;
        while let Some(m) = tasks.join_next().await {
            first += usize::from(m.unwrap() == Marked::Now);
        }
        assert_eq!(first, 1, "exactly one of 100 marks counts");
    }
    assert_eq!(stats(&app, "ann", "*").await, (1, 2));
    assert_eq!(stats(&app, "ann", "billing").await, (1, 1));
    assert_eq!(stats(&app, "ann", "ops").await, (0, 1));
    let ann = inbox.counts(&tk(T), &ik(I), &uk("ann")).await.unwrap();
    assert_eq!(
        (ann.total, ann.read, ann.unread, ann.public_published),
        (2, 2, 0, 1)
    );
    // Receipts are per user: Bob has read nothing.
    let bob = inbox.counts(&tk(T), &ik(I), &uk("bob")).await.unwrap();
    assert_eq!((bob.total, bob.read, bob.unread), (2, 0, 2));
    assert_eq!(bob.unread_by_category.get("ops"), Some(&1));
    let feed = inbox
        .feed(&tk(T), &ik(I), &uk("bob"), None, 10, now)
        .await
        .unwrap();
    assert!(feed.items.iter().all(|i| !i.read));
    let feed = inbox
        .feed(&tk(T), &ik(I), &uk("ann"), None, 10, now)
        .await
        .unwrap();
    assert!(feed.items.iter().all(|i| i.read));
    assert_eq!(
        inbox
            .mark_all_read(&tk(T), &ik(I), &uk("bob"), now)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        inbox
            .counts(&tk(T), &ik(I), &uk("bob"))
            .await
            .unwrap()
            .unread,
        0
    );
    no_drift(&app).await;
}

#[tokio::test]
async fn a_feed_merges_both_partitions_newest_first_across_pages() {
    let app = spawn_app().await;
    let inbox = &app.state.inbox;
    let mut all = Vec::new();
    for i in 0..13 {
        app.clock.advance(Duration::milliseconds(5));
        let p = if i % 2 == 0 {
            to_users(vec!["ann".into()], None, None)
        } else {
            to_everyone(&format!("news {i}"), None, None)
        };
        let out = inbox
            .publish(&tk(T), &ik(I), &p, &format!("j{i}"), app.clock.now())
            .await
            .unwrap();
        all.push(out.message_id);
    }
    // Someone else's message is not in Ann's feed.
    inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_users(vec!["zed".into()], None, None),
            "jz",
            app.clock.now(),
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = inbox
            .feed(
                &tk(T),
                &ik(I),
                &uk("ann"),
                cursor.as_deref(),
                5,
                app.clock.now(),
            )
            .await
            .unwrap();
        pages += 1;
        seen.extend(page.items.iter().map(|i| i.id.clone()));
        match page.next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    all.reverse();
    assert_eq!(seen, all, "newest first, each once");
    assert_eq!(pages, 3);
    let bad = inbox
        .feed(&tk(T), &ik(I), &uk("ann"), Some("nope"), 5, app.clock.now())
        .await;
    assert!(bad.is_err());
}

#[tokio::test]
async fn expired_messages_are_hidden_and_their_removal_counts_down_once() {
    let app = spawn_app().await;
    let inbox = app.state.inbox.clone();
    let now = app.clock.now();
    let mine = inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_users(vec!["ann".into()], Some("billing"), Some("1h")),
            "j1",
            now,
        )
        .await
        .unwrap();
    let public = inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_everyone("short-lived", Some("ops"), Some("1h")),
            "j2",
            now,
        )
        .await
        .unwrap();
    let lasting = inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_everyone("lasting", None, Some("30d")),
            "j3",
            now,
        )
        .await
        .unwrap();
    inbox
        .mark_read(&tk(T), &ik(I), &uk("ann"), &mk(&mine.message_id), now)
        .await
        .unwrap();
    inbox
        .mark_read(&tk(T), &ik(I), &uk("ann"), &mk(&public.message_id), now)
        .await
        .unwrap();
    assert_eq!(stats(&app, "ann", "*").await, (1, 2));

    app.clock.advance(Duration::hours(2));
    let later = app.clock.now();
    let feed = inbox
        .feed(&tk(T), &ik(I), &uk("ann"), None, 10, later)
        .await
        .unwrap();
    let ids: Vec<_> = feed.items.iter().map(|i| i.id.clone()).collect();
    assert_eq!(
        ids,
        vec![lasting.message_id.clone()],
        "expired ones are hidden before TTL removes them"
    );
    assert!(inbox
        .mark_read(&tk(T), &ik(I), &uk("ann"), &mk(&mine.message_id), later)
        .await
        .is_err());

    // DynamoDB Local has no TTL deleter: the sweep deletes, the stream consumer counts.
    let old_user_copy: Option<serde_json::Value> = store::get(
        &app.store,
        &store::user_pk(T, "ann", I),
        &store::message_sk(&mine.message_id),
    )
    .await
    .unwrap();
    let (_, deleted) = sweep::table(&app.store, &INBOX, later.timestamp(), |_, _| {})
        .await
        .unwrap();
    assert_eq!(
        deleted, 3,
        "the user copy, the public message and Ann's receipt"
    );
    let report = stream::consume(&app.store).await.unwrap();
    assert_eq!(report.counted, 3, "{report:?}");
    assert_eq!(stats(&app, "ann", "*").await, (0, 0));
    assert_eq!(stats(&app, "ann", "billing").await, (0, 0));
    assert_eq!(stats(&app, "$public", "*").await, (1, 0));
    assert_eq!(stats(&app, "$public", "ops").await, (0, 0));

    // A consumer that lost its position reads every removal again: nothing changes.
    stream::forget_positions(&app.store).await.unwrap();
    let again = stream::consume(&app.store).await.unwrap();
    assert_eq!((again.counted, again.repeated), (0, 3), "{again:?}");
    assert_eq!(stats(&app, "ann", "*").await, (0, 0));
    // And one removal handed over twice counts once.
    let item = serde_dynamo::to_item::<
        _,
        std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
    >(old_user_copy.unwrap())
    .unwrap();
    assert!(!stream::count_removal(&app.store, &item).await.unwrap());
    no_drift(&app).await;
}

#[tokio::test]
async fn after_a_random_workload_every_counter_agrees_with_a_recount() {
    let app = spawn_app().await;
    let inbox = app.state.inbox.clone();
    let users: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
    let cats = [Some("billing"), Some("promo"), None];
    let mut rng = ops_console::server::seed::Rng::new(99);
    let mut published = Vec::new();
    for i in 0..40 {
        let cat = *rng.pick(&cats);
        let ttl = if rng.below(4) == 0 { Some("1h") } else { None };
        let p = if rng.below(3) == 0 {
            to_everyone(&format!("all {i}"), cat, ttl)
        } else {
            let n = 1 + rng.below(6) as usize;
            let who: Vec<String> = (0..n)
                .map(|_| rng.pick(&users).clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            to_users(who, cat, ttl)
        };
        let out = inbox
            .publish(&tk(T), &ik(I), &p, &format!("rand-{i}"), app.clock.now())
            .await
            .unwrap();
        published.push(out.message_id);
        app.clock.advance(Duration::milliseconds(3));
    }
    for _ in 0..150 {
        let u = rng.pick(&users).clone();
        let id = rng.pick(&published).clone();
        // Not every user has every message: NotFound is a fine answer here.
        let _ = inbox
            .mark_read(&tk(T), &ik(I), &uk(&u), &mk(&id), app.clock.now())
            .await;
    }
    no_drift(&app).await;
    app.clock.advance(Duration::hours(2));
    sweep::table(&app.store, &INBOX, app.clock.now().timestamp(), |_, _| {})
        .await
        .unwrap();
    stream::consume(&app.store).await.unwrap();
    no_drift(&app).await;
    for u in &users {
        let c = inbox.counts(&tk(T), &ik(I), &uk(u)).await.unwrap();
        let mut cursor = None;
        let (mut total, mut read) = (0, 0);
        loop {
            let page = inbox
                .feed(
                    &tk(T),
                    &ik(I),
                    &uk(u),
                    cursor.as_deref(),
                    50,
                    app.clock.now(),
                )
                .await
                .unwrap();
            total += page.items.len() as i64;
            read += page.items.iter().filter(|m| m.read).count() as i64;
            match page.next {
                Some(x) => cursor = Some(x),
                None => break,
            }
        }
        assert_eq!(
            (c.total, c.read),
            (total, read),
            "{u}: counts agree with the feed"
        );
    }
}

#[tokio::test]
async fn keys_with_a_hash_or_out_of_bounds_are_refused() {
    let app = spawn_app().await;
    let key = app.api_key(&["inbox:write", "inbox:read"]).await;
    let put = |path: String, body: serde_json::Value| {
        let (app, key) = (app.clone(), key.clone());
        async move { app.api("PUT", &path, &key, Some(body.to_string())).await }
    };
    let a = put(
        format!("/api/v1/inbox/tenants/{}", pct("a#b")),
        json!({"title": "x"}),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.json()["field"].clone()),
        (400, json!("tenant"))
    );
    let long = "x".repeat(129);
    let a = put(format!("/api/v1/inbox/tenants/{long}"), json!({})).await;
    assert_eq!(a.status, 400);
    let a = put(
        format!("/api/v1/inbox/tenants/{T}/inboxes/{}", pct("in#box")),
        json!({}),
    )
    .await;
    assert_eq!(a.json()["field"], "inbox");
    let a = put(
        format!("/api/v1/inbox/tenants/{T}/inboxes/{I}"),
        json!({"ttl": {"default": "forever"}}),
    )
    .await;
    assert_eq!(a.json()["field"], "ttl.default");
    let ok = put(
        format!("/api/v1/inbox/tenants/{T}/inboxes/{I}"),
        json!({"title": "News", "ttl": {"default": "30d", "billing": "7d"}}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    for (body, field) in [
        (
            json!({"audience": {"kind": "users", "uids": ["ok", "bad#uid"]}, "title": "t", "body": "b"}),
            "audience.uids[1]",
        ),
        (
            json!({"audience": {"kind": "users", "uids": []}, "title": "t", "body": "b"}),
            "audience.uids",
        ),
        (
            json!({"audience": {"kind": "some"}, "title": "t", "body": "b"}),
            "audience.kind",
        ),
        (
            json!({"audience": {"kind": "everyone"}, "title": "t", "body": "b", "category": "a#b"}),
            "category",
        ),
        (
            json!({"audience": {"kind": "everyone"}, "title": "t", "body": "b", "cta_uri": "javascript:alert(1)"}),
            "cta_uri",
        ),
        (
            json!({"audience": {"kind": "everyone"}, "body": "b"}),
            "title",
        ),
        (
            json!({"audience": {"kind": "everyone"}, "title": "t"}),
            "body",
        ),
    ] {
        let a = publish_http(
            &app,
            &key,
            Some(&ops_console::server::ids::random_hex(8)),
            &body,
        )
        .await;
        assert_eq!(a.status, 400, "{field}: {}", a.body);
        assert_eq!(a.json()["field"], field);
    }
    let a = app
        .api(
            "GET",
            &format!(
                "/api/v1/inbox/tenants/{T}/inboxes/{I}/users/{}/feed",
                pct("u#1")
            ),
            &key,
            None,
        )
        .await;
    assert_eq!(a.json()["field"], "uid");
    // The inbox's type lifetime applies: billing messages live 7 days.
    let p = to_users(vec!["ann".into()], Some("billing"), None);
    let out = app
        .state
        .inbox
        .publish(&tk(T), &ik(I), &p, "jb", app.clock.now())
        .await
        .unwrap();
    let m: MessageItem = store::get(
        &app.store,
        &store::user_pk(T, "ann", I),
        &store::message_sk(&out.message_id),
    )
    .await
    .unwrap()
    .unwrap();
    let want = (app.clock.now() + Duration::days(7)).timestamp();
    assert!((m.expiredat - want).abs() <= 2, "{} vs {want}", m.expiredat);
}

#[tokio::test]
async fn stats_records_name_their_tenant_inbox_and_user_as_the_design_lists() {
    let app = spawn_app().await;
    let inbox = app.state.inbox.clone();
    inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_users(vec!["zoe".into()], Some("billing"), None),
            "stats-1",
            app.clock.now(),
        )
        .await
        .unwrap();
    inbox
        .publish(
            &tk(T),
            &ik(I),
            &to_everyone("all", None, None),
            "stats-2",
            app.clock.now(),
        )
        .await
        .unwrap();
    for (pk, uid) in [
        (store::user_pk(T, "zoe", I), "zoe"),
        (store::public_pk(T, I), "$public"),
    ] {
        for category in ["*", "billing"] {
            let Some(s) = store::get::<Stats>(&app.store, &pk, &store::stats_sk(category))
                .await
                .unwrap()
            else {
                assert!(uid == "$public" && category == "billing", "{pk} {category}");
                continue;
            };
            assert_eq!(
                (s.tenant_key.as_str(), s.inbox_key.as_str(), s.uid.as_str()),
                (T, I, uid),
                "{pk} {category}"
            );
        }
    }
}
