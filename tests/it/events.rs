//! The helpdesk webhook end to end on DynamoDB Local: exactly-once processing, the answer
//! never waiting on the receiver, side effects delivered once (signed) from the outbox,
//! safe mode, crash recovery, data minimization. The outbox's own rules (schedule, dead
//! letters, redrive, order, two consoles) are in `outbox.rs`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{captured_logs, spawn_app, spawn_app_with, TestApp};
use crate::receiver::Receiver;
use ops_console::server::domain::events::decision::Switches;
use ops_console::server::domain::events::parse;
use ops_console::server::domain::events::rules::{apply, decide};
use ops_console::server::domain::events::state::ConversationState;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::store::events as records;
use ops_console::server::store::events::outbox::Group;
use ops_console::server::store::events::outbox_reads::{self, Filter};

pub fn event(conversation: &str, message: Option<&str>, text: &str) -> Value {
    let mut v = json!({
        "conversation_id": conversation,
        "created_at": "2026-11-22T10:00:00Z",
        "channel": "email",
        "text": text,
    });
    if let Some(m) = message {
        v["message_id"] = json!(m);
    }
    v
}

pub async fn post_event(app: &TestApp, key: &str, body: &Value) -> crate::helpers::Answer {
    app.post_json("/api/v1/events", key, body.to_string()).await
}

/// An app delivering to a receiver that verifies with the app's secret; retries after 1 s
/// and 2 s (the tests move the clock), then a dead letter.
pub async fn app_with_receiver() -> (TestApp, Receiver) {
    app_with_receiver_retrying("1s,2s").await
}

/// The same, retrying on `schedule`.
pub async fn app_with_receiver_retrying(schedule: &'static str) -> (TestApp, Receiver) {
    let secret = SigningSecret::generate();
    let (receiver, url) = Receiver::start(vec![secret.clone()]).await;
    let app = spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.retry_schedule = schedule.into();
        c.events.webhook_timeout_ms = 2_000;
    })
    .await;
    app.set_switches(false, true).await;
    (app, receiver)
}

/// [`app_with_receiver`] on a DynamoDB that fails as `proxy` makes it fail; with the same
/// tables without it (to set up and check what is really stored).
pub async fn app_with_receiver_via(
    proxy: &dynamodb_faults::Proxy,
) -> (TestApp, ops_console::server::store::Store, Receiver) {
    let secret = SigningSecret::generate();
    let (receiver, url) = Receiver::start(vec![secret.clone()]).await;
    let (app, direct) = crate::helpers::spawn_app_via(proxy, move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.retry_schedule = "1s,2s".into();
        c.events.webhook_timeout_ms = 2_000;
    })
    .await;
    app.set_switches(false, true).await;
    (app, direct, receiver)
}

async fn audit_of(app: &TestApp, conversation: &str) -> Vec<(String, String)> {
    let page =
        ops_console::server::store::audit::list_partition(&app.store, conversation, None, 100)
            .await
            .unwrap();
    page.items
        .into_iter()
        .map(|a| (a.action_type, a.result))
        .collect()
}

#[tokio::test]
async fn the_same_event_delivered_twenty_times_at_once_is_processed_once() {
    let (app, receiver) = app_with_receiver().await;
    let app = Arc::new(app);
    let key = app.api_key(&["events:write"]).await;
    // Routes to payments, tags chargeback, assigns, escalates: four side effects.
    let body = event("c-20", Some("m-1"), "I am filing a chargeback with my bank");
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (app, key, body) = (app.clone(), key.clone(), body.clone());
        tasks.push(tokio::spawn(
            async move { post_event(&app, &key, &body).await },
        ));
    }
    let mut statuses = BTreeMap::new();
    for t in tasks {
        let a = t.await.unwrap();
        let label = match (a.status.as_u16(), a.status.is_success()) {
            (200, _) if a.json()["duplicate"] == true => "duplicate",
            (200, _) => "processed",
            (409, _) => "in progress",
            _ => panic!("unexpected answer {}: {}", a.status, a.body),
        };
        *statuses.entry(label).or_insert(0) += 1;
    }
    assert_eq!(statuses.get("processed"), Some(&1), "{statuses:?}");
    // The helpdesk retries the ones told to wait: they are duplicates now.
    let again = post_event(&app, &key, &body).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["duplicate"], true);

    let record = records::get_event(&app.store, "evt:rp:c-20:m-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "processed");
    let dups = statuses.get("duplicate").copied().unwrap_or(0) as i64 + 1;
    assert_eq!(
        record.duplicates, dups,
        "every duplicate delivery is counted"
    );
    let audit = audit_of(&app, "c-20").await;
    assert_eq!(
        audit.iter().filter(|(t, _)| t == "decision").count(),
        1,
        "one decision: {audit:?}"
    );
    app.state.events.dispatch_all().await.unwrap();
    let counts = receiver.counts();
    assert_eq!(counts.len(), 4, "route, tag, assign, escalate: {counts:?}");
    assert!(
        counts.values().all(|n| *n == 1),
        "each delivered once: {counts:?}"
    );
    assert!(counts.contains_key("act:rp_tag:c-20:chargeback:m-1"));
    assert!(counts.contains_key("act:rp_escalate:c-20:m-1"));
    assert_eq!(
        *receiver.bad_signatures.lock().unwrap(),
        0,
        "every one signed"
    );
}

#[tokio::test]
async fn safe_mode_delivers_nothing_and_still_records_the_decision() {
    let (app, receiver) = app_with_receiver().await;
    app.set_switches(true, true).await;
    let key = app.api_key(&["events:write"]).await;
    let a = post_event(
        &app,
        &key,
        &event("c-safe", Some("m-1"), "please refund my order"),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let v = a.json();
    assert_eq!(v["safe_mode"], true);
    assert_eq!(v["intent"], "refund_request");
    assert!(v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["result"] == "suppressed"));
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0, "no delivery in safe mode");
    let audit = audit_of(&app, "c-safe").await;
    assert!(audit.iter().any(|(t, r)| t == "decision" && r == "success"));
    assert!(audit
        .iter()
        .any(|(t, r)| t == "route" && r == "suppressed: safe_mode"));
    assert!(audit
        .iter()
        .any(|(t, r)| t == "tag" && r == "suppressed: safe_mode"));
    let state = records::get_state(&app.store, "c-safe").await.unwrap();
    assert_eq!(state.last_intent.as_deref(), Some("refund_request"));
}

#[tokio::test]
async fn without_a_message_id_the_same_text_in_one_bucket_is_one_event() {
    let app = spawn_app().await;
    app.set_switches(false, false).await;
    let key = app.api_key(&["events:write"]).await;
    let mut first = event("c-hash", None, "Hello,   is anyone there?");
    first["created_at"] = json!("2026-11-22T10:01:00Z");
    let mut second = event("c-hash", None, "hello, is anyone there?");
    second["created_at"] = json!("2026-11-22T10:04:59Z");
    let a = post_event(&app, &key, &first).await;
    assert_eq!(a.json()["duplicate"], false, "{}", a.body);
    let b = post_event(&app, &key, &second).await;
    assert_eq!(b.json()["duplicate"], true, "{}", b.body);
    assert_eq!(a.json()["event_key"], b.json()["event_key"]);
    let mut later = second.clone();
    later["created_at"] = json!("2026-11-22T10:05:00Z");
    let c = post_event(&app, &key, &later).await;
    assert_eq!(
        c.json()["duplicate"],
        false,
        "the next bucket is a new event"
    );
    // Without a receiver, side effects wait in the outbox.
    assert_eq!(a.json()["actions"][0]["result"], "queued");
    let round = app.state.events.dispatch_all().await.unwrap();
    assert_eq!(round.no_receiver, 2, "{round:?}");
    let waiting = outbox_reads::count(&app.store, Group::Due, &Filter::default())
        .await
        .unwrap();
    assert_eq!(waiting, 2);
}

#[tokio::test]
async fn the_answer_never_waits_for_the_receiver_and_a_failing_receiver_is_retried() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let body = event("c-retry", Some("m-1"), "hi there");
    receiver.fail_next(2, 503);
    let first = post_event(&app, &key, &body).await;
    assert_eq!(first.status, 200, "acknowledged at once: {}", first.body);
    assert_eq!(first.json()["actions"][0]["result"], "queued");
    // First attempt: 503, a retry in about a second.
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0);
    let action = records::get_action(&app.store, "act:rp_route:c-retry:m-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(action.status.as_str(), "retry");
    assert_eq!(action.cause.as_deref(), Some("http 503"));
    // Not before its time.
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0);
    app.clock.advance(Duration::milliseconds(1_200));
    app.state.events.dispatch_all().await.unwrap();
    app.clock.advance(Duration::milliseconds(2_400));
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.counts().get("act:rp_route:c-retry:m-1"), Some(&1));
    let delivered = records::get_action(&app.store, "act:rp_route:c-retry:m-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivered.status.as_str(), "delivered");
    assert_eq!(delivered.attempts, 3);
    assert_eq!(delivered.tries.len(), 3, "each attempt kept");
    let audit = audit_of(&app, "c-retry").await;
    assert!(audit
        .iter()
        .any(|(t, r)| t == "route" && r.starts_with("fail: receiver answered 503")));
    assert!(audit
        .iter()
        .any(|(t, r)| t == "route" && r.starts_with("success")));
    // A redelivery of the event is a duplicate and sends nothing more.
    let again = post_event(&app, &key, &body).await;
    assert_eq!(again.json()["duplicate"], true);
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 1);
}

#[tokio::test]
async fn a_thousand_events_with_duplicates_lose_no_state_update() {
    crate::helpers::alone().await;
    let app = Arc::new(spawn_app().await);
    app.set_switches(false, false).await;
    let key = app.api_key(&["events:write"]).await;
    // 700 distinct events over 50 conversations, 300 of them delivered twice.
    let texts = [
        "hello",
        "I want a refund",
        "hello again",
        "this looks like fraud",
    ];
    let mut distinct = Vec::new();
    for i in 0..700 {
        let mut e = event(
            &format!("conv-{}", i % 50),
            Some(&format!("m-{i}")),
            texts[i % 4],
        );
        e["created_at"] = json!(format!("2026-11-22T10:{:02}:{:02}Z", (i / 60) % 60, i % 60));
        distinct.push(e);
    }
    let mut deliveries: Vec<Value> = distinct.clone();
    deliveries.extend(distinct.iter().step_by(7).take(100).cloned());
    deliveries.extend(distinct.iter().skip(3).step_by(7).take(100).cloned());
    deliveries.extend(distinct.iter().skip(5).step_by(7).take(100).cloned());
    assert_eq!(deliveries.len(), 1000);
    // Interleave: a fixed shuffle, then 8 concurrent senders.
    let mut order: Vec<usize> = (0..deliveries.len()).collect();
    let mut x = 12345u64;
    for i in (1..order.len()).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        order.swap(i, (x >> 33) as usize % (i + 1));
    }
    let deliveries = Arc::new(deliveries);
    let order = Arc::new(order);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let (app, key, deliveries, order) =
            (app.clone(), key.clone(), deliveries.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let (mut fresh, mut dup) = (0, 0);
            for idx in order.iter().skip(w).step_by(8) {
                loop {
                    let a = post_event(&app, &key, &deliveries[*idx]).await;
                    match a.status.as_u16() {
                        200 if a.json()["duplicate"] == true => dup += 1,
                        200 => fresh += 1,
                        // The first delivery of a copy is still running: retry, as a
                        // helpdesk does.
                        409 => {
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                            continue;
                        }
                        s => panic!("answer {s}: {}", a.body),
                    }
                    break;
                }
            }
            (fresh, dup)
        }));
    }
    let (mut fresh, mut dup) = (0, 0);
    for t in tasks {
        let (f, d) = t.await.unwrap();
        fresh += f;
        dup += d;
    }
    assert_eq!((fresh, dup), (700, 300));

    // The sequential result: the same distinct events folded one at a time through the
    // same decision and state functions, in memory.
    let cfg = app.state.config.events.clone();
    let mut sequential: HashMap<String, ConversationState> = HashMap::new();
    let off = Switches {
        safe_mode: false,
        automation_enabled: false,
    };
    for body in &distinct {
        let ev = parse(body.to_string().as_bytes()).unwrap();
        let state = sequential
            .entry(ev.conversation_id.to_string())
            .or_insert_with(|| ConversationState {
                conversation_id: ev.conversation_id.to_string(),
                ..ConversationState::default()
            });
        let now = app.clock.now();
        let d = decide(state, &ev, off, &cfg, now);
        *state = apply(state, &ev, &d, true, &cfg, 90, now);
    }
    let comparable = |mut s: ConversationState| {
        s.updated_at.clear();
        s.last_processed_at = None;
        s.expires_at = 0;
        // Which action is newest depends on the order concurrent events committed in.
        s.outbox_tail = None;
        s
    };
    let mut total_duplicates = 0;
    for c in 0..50 {
        let id = format!("conv-{c}");
        let concurrent = records::get_state(&app.store, &id).await.unwrap();
        assert_eq!(concurrent.events_seen, 14, "{id}: every event counted once");
        assert_eq!(concurrent.version, 14, "{id}: one write per event");
        let alone = sequential.remove(&id).unwrap();
        assert_eq!(comparable(concurrent), comparable(alone), "{id}");
        let page = records::events_of_conversation(&app.store, &id, None, 100)
            .await
            .unwrap();
        assert_eq!(page.items.len(), 14);
        total_duplicates += page.items.iter().map(|e| e.duplicates).sum::<i64>();
        let audit = audit_of(&app, &id).await;
        assert_eq!(
            audit.iter().filter(|(t, _)| t == "decision").count(),
            14,
            "{id}"
        );
    }
    assert_eq!(total_duplicates, 300);
}

#[tokio::test]
async fn no_text_email_or_phone_is_stored_or_logged() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    let text = "Hi, I'm jane.roe@example.org, call me on +1 (555) 201-7788. Where is my order 4433221? Track it at https://track.example/abc";
    let mut body = event("c-pii", Some("m-pii"), text);
    body["customer"] =
        json!({"email": "Jane.Roe@Example.org", "phone": "+1 555 201 7788", "id": "cust-9"});
    let a = post_event(&app, &key, &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // And once without a message id (its key is a hash of the text).
    let mut hashed = event("c-pii", None, text);
    hashed["customer"] = body["customer"].clone();
    assert_eq!(post_event(&app, &key, &hashed).await.status, 200);

    let stored = app.dump_tables().await;
    assert!(stored.contains("c-pii"), "the dump sees the records");
    let logs = captured_logs();
    for needle in [
        "jane.roe@example.org",
        "Jane.Roe",
        // Not "555" alone: log timestamps have milliseconds.
        "(555)",
        "555 201",
        "5552017788",
        "201-7788",
        "2017788",
        "4433221",
        "track.example",
        "Where is my order",
        "call me on",
    ] {
        assert!(!stored.contains(needle), "stored: {needle}");
        assert!(!logs.contains(needle), "logged: {needle}");
    }
    let state = records::get_state(&app.store, "c-pii").await.unwrap();
    assert_eq!(
        state.order_ref_last4.as_deref(),
        Some("3221"),
        "last 4 only"
    );
}

#[tokio::test]
async fn bad_input_is_a_clear_4xx_and_writes_nothing() {
    let app = spawn_app().await;
    let key = app.api_key(&["events:write"]).await;
    let reader = app.api_key(&["switches:read"]).await;
    let good = event("c-bad", Some("m-1"), "hello");

    let no_scope = post_event(&app, &reader, &good).await;
    assert_eq!(no_scope.status, 403);
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("created_at");
    let a = post_event(&app, &key, &missing).await;
    assert_eq!(a.status, 400);
    assert_eq!(
        a.headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert_eq!(a.json()["field"], "created_at");
    let mut bad_channel = good.clone();
    bad_channel["channel"] = json!("fax");
    assert_eq!(
        post_event(&app, &key, &bad_channel).await.json()["field"],
        "channel"
    );
    let broken = app
        .post_json("/api/v1/events", &key, "{\"conversation_id\":")
        .await;
    assert_eq!(broken.status, 400);
    assert_eq!(broken.json()["field"], "body");

    let mut huge = good.clone();
    huge["text"] = json!("x".repeat(300 * 1024));
    let too_big = post_event(&app, &key, &huge).await;
    assert_eq!(too_big.status, 413, "{}", too_big.body);
    assert_eq!(
        too_big.headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(records::get_event(&app.store, "evt:rp:c-bad:m-1")
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        records::get_state(&app.store, "c-bad")
            .await
            .unwrap()
            .version,
        0
    );
}

#[tokio::test]
async fn the_pages_show_events_state_and_audit() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    post_event(
        &app,
        &key,
        &event("c-page", Some("m-1"), "where is my order?"),
    )
    .await;
    post_event(
        &app,
        &key,
        &event("c-page", Some("m-1"), "where is my order?"),
    )
    .await;
    let cookie = app
        .session_as("vie", ops_console::model::users::Role::Viewer)
        .await;
    let events = app.get("/events", Some(&cookie)).await;
    assert_eq!(events.status, 200);
    assert!(events.body.contains("c-page"), "{}", events.body);
    assert!(events.body.contains("order_status → fulfillment"));
    assert!(
        !events.body.contains("where is my order"),
        "no text on the page"
    );
    let state = app
        .get("/events/conversation?id=c-page", Some(&cookie))
        .await;
    assert!(state.body.contains("need_order_number"), "{}", state.body);
    assert!(state.body.contains("ask_order_number"));
    let audit = app
        .get("/audit?action_type=auto_reply", Some(&cookie))
        .await;
    assert!(audit.body.contains("queued: outbox"), "{}", audit.body);
    let bad = app.get("/audit?day=yesterday", Some(&cookie)).await;
    assert_eq!(bad.status, 200);
    assert!(bad.body.contains("A day is YYYY-MM-DD."));
    let overview = app.get("/", Some(&cookie)).await;
    assert!(overview.body.contains("data-testid=\"duplicate-rate\""));
    assert!(
        overview.body.contains("50.0 %"),
        "1 duplicate of 2 deliveries"
    );
}

/// A conversation's timeline answers "did we send it twice?": the event with its message
/// id and its duplicate delivery counted, the decision, and each side effect "queued"
/// until the receiver took it, then "delivered" — never "sent" before it went out.
#[tokio::test]
async fn a_conversation_timeline_counts_duplicates_and_says_queued_until_delivered() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let e = event("c-timeline", Some("m-1"), "where is my order?");
    for _ in 0..2 {
        assert_eq!(post_event(&app, &key, &e).await.status, 200);
    }
    let refs = &app.state.refs;
    let t = app.state.events.timeline(refs, "c-timeline").await.unwrap();
    assert_eq!(t.entries.len(), 1, "{t:?}");
    let entry = &t.entries[0];
    assert_eq!(entry.duplicates, 1);
    assert_eq!(entry.message_id.as_deref(), Some("m-1"));
    assert!(entry.decision.starts_with("Decided"), "{}", entry.decision);
    assert!(!entry.effects.is_empty());
    assert!(
        entry
            .effects
            .iter()
            .all(|f| f.state == "queued" && f.attempts == 0),
        "{:?}",
        entry.effects
    );
    app.state.events.dispatch_all().await.unwrap();
    let t = app.state.events.timeline(refs, "c-timeline").await.unwrap();
    let effects = &t.entries[0].effects;
    assert_eq!(
        effects.len(),
        receiver.total(),
        "each one reached the receiver once"
    );
    assert!(
        effects
            .iter()
            .all(|f| f.state == "delivered" && f.attempts == 1),
        "{effects:?}"
    );
    assert!(receiver.counts().values().all(|n| *n == 1));
    // A Channel Router conversation (the audit links a contact reveal's record here, `#`
    // and all) has no events: the pages show nothing for it, not a refusal.
    let router_id = "acme#p1#r1#h1";
    let by_ref = refs.of_id(router_id);
    let t = app.state.events.timeline(refs, &by_ref).await.unwrap();
    assert!(t.entries.is_empty());
    let s = app
        .state
        .events
        .conversation_state(refs, &by_ref)
        .await
        .unwrap();
    assert!(!s.exists);
    let l = app.state.events.list(refs, router_id, None).await.unwrap();
    assert!(l.events.is_empty());
    let bad = app.state.events.timeline(refs, "a b").await.unwrap_err();
    assert_eq!(bad.field(), Some("conversation"));
}

/// The Audit page's day is the reader's: a New York day is read from two UTC days (the
/// by-day index's partitions), newest first, paged across both, and nothing from the hours
/// either side of it.
#[tokio::test]
async fn an_audit_day_in_new_york_reads_two_utc_days_and_pages_across_them() {
    use ops_console::model::users::Role;
    use ops_console::server::domain::audit::window::Typed;
    use ops_console::server::services::audit::AuditFilter;
    use ops_console::server::store::audit::{self, AuditItem};
    let app = spawn_app().await;
    let at = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let put = |when: chrono::DateTime<chrono::Utc>, id: String| {
        let store = app.store.clone();
        async move {
            let item = AuditItem::new("c-zone", "decision", when, &id, 30);
            audit::put(&store, &item).await.unwrap();
        }
    };
    // Either side of the New York day of 25 November (UTC−05:00).
    put(at("2026-11-25T04:59:59Z"), "before".into()).await;
    put(at("2026-11-26T05:00:00Z"), "after".into()).await;
    // Within it: 30 on each UTC day.
    let mut sent = Vec::new();
    for i in 0..30 {
        let first = at("2026-11-25T05:00:00Z") + chrono::Duration::minutes(i * 10);
        let second = at("2026-11-26T04:59:00Z") - chrono::Duration::minutes(i * 10);
        for (when, id) in [
            (first, format!("in-a{i:02}")),
            (second, format!("in-b{i:02}")),
        ] {
            put(when, id.clone()).await;
            sent.push(id);
        }
    }
    // Each record is in one of its day's shards of the by-day index; one the release
    // before wrote (its day unsharded) is read with them.
    let mut old = AuditItem::new("c-zone", "decision", at("2026-11-25T12:00:30Z"), "old", 30);
    old.audit_day = "2026-11-25".into();
    audit::put(&app.store, &old).await.unwrap();
    sent.push("old".into());
    let (refs, audit) = (&app.state.refs, &app.state.audit);
    // The 25th of November, in the zone `tz` minutes east of UTC.
    let day_in = |tz: &'static str| AuditFilter {
        conversation: "",
        action_type: "",
        window: Typed {
            day: "2026-11-25",
            from: "",
            to: "",
            tz,
        },
    };
    let read = |cursor: Option<String>| async move {
        let f = day_in("-300");
        audit
            .rows(refs, &f, Role::Admin, cursor.as_deref())
            .await
            .unwrap()
    };
    let first = read(None).await;
    assert_eq!(
        first.window.as_deref(),
        Some("2026-11-25, 00:00–23:59, UTC−05:00")
    );
    // The cursor is one boundary, however many of the day's 64 shards the page read.
    let cursor = first.next_cursor.clone().unwrap();
    assert!(cursor.len() < 400, "{} characters", cursor.len());
    let second = read(first.next_cursor.clone()).await;
    assert!(second.next_cursor.is_none());
    let times: Vec<String> = first
        .rows
        .iter()
        .chain(&second.rows)
        .map(|r| r.at.clone())
        .collect();
    assert_eq!(
        times.len(),
        sent.len(),
        "every record of the day, once: {times:?}"
    );
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    assert_eq!(
        times.first().map(String::as_str),
        Some("2026-11-26T04:59:00Z")
    );
    assert_eq!(
        times.last().map(String::as_str),
        Some("2026-11-25T05:00:00Z")
    );
    // In UTC, the same day is the other 24 hours: the record before it, and the 30 of the
    // 25th UTC.
    let f = day_in("");
    let utc = app
        .state
        .audit
        .rows(refs, &f, Role::Admin, None)
        .await
        .unwrap();
    assert_eq!(utc.rows.len(), 32);
    // A cursor is the server's: one made up is refused as the reader's mistake.
    let forged = app
        .state
        .audit
        .rows(refs, &f, Role::Admin, Some("1.x"))
        .await;
    assert!(forged.is_err());
}

/// Just after midnight today's partition is empty: the recent list starts with yesterday's
/// events rather than "No events" above an "Older" link.
#[tokio::test]
async fn just_after_midnight_the_recent_events_start_with_yesterdays() {
    let app = spawn_app().await;
    let key = app.api_key(&["events:write"]).await;
    let e = event("c-midnight", Some("m-1"), "where is my order?");
    assert_eq!(post_event(&app, &key, &e).await.status, 200);
    app.clock.advance(Duration::days(1));
    let page = app
        .state
        .events
        .list(&app.state.refs, "", None)
        .await
        .unwrap();
    assert_eq!(page.events.len(), 1, "yesterday's event on the first page");
    assert_eq!(page.next_cursor, None, "two days are recent: nothing older");
}

/// Two consoles delivering to a receiver of their own, which `prepare` can slow down: `n`
/// side effects posted (one to each conversation `<prefix>-<i>`), then both consoles
/// dispatching until the receiver took them all (90 s at most). The receiver, the first
/// console (the second shares its tables), and how long the deliveries took.
pub async fn two_consoles_deliver(
    prefix: &str,
    n: usize,
    prepare: impl FnOnce(&crate::receiver::Receiver),
    tweak: impl FnOnce(&mut ops_console::server::config::Config),
) -> (
    crate::receiver::Receiver,
    crate::helpers::TestApp,
    std::time::Duration,
) {
    let secret = ops_console::server::outbound::signature::SigningSecret::generate();
    let (receiver, url) = crate::receiver::Receiver::start(vec![secret.clone()]).await;
    prepare(&receiver);
    let app = crate::helpers::spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        tweak(c);
    })
    .await;
    app.set_switches(false, true).await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    for c in 0..n {
        post_event(
            &app,
            &key,
            &event(&format!("{prefix}-{c}"), Some("m-1"), "hi"),
        )
        .await;
    }
    let took = both_deliver(&app, &other, &receiver, n).await;
    (receiver, app, took)
}

/// Rounds on both consoles at once until the receiver has `n` (90 s at most): how long
/// that took.
pub async fn both_deliver(
    app: &crate::helpers::TestApp,
    other: &crate::helpers::TestApp,
    receiver: &crate::receiver::Receiver,
    n: usize,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    while receiver.total() < n && started.elapsed() < std::time::Duration::from_secs(90) {
        let (a, b) = tokio::join!(
            app.state.events.dispatch_all(),
            other.state.events.dispatch_all()
        );
        a.unwrap();
        b.unwrap();
    }
    started.elapsed()
}

/// The Overview reads a bounded number of events whatever the traffic: the newest first, up
/// to a limit divided among the day's shards, each saying where it stopped; below the
/// limit it reads the hour whole. Events spread over the day's shards, and a page of the
/// day merges them newest first.
#[tokio::test]
async fn the_overview_counts_a_busy_hour_from_its_newest_events_and_says_so() {
    use ops_console::model::users::Role;
    use ops_console::server::store::events::{count_events_since, day_key, day_keys, DAY_SHARDS};
    let app = crate::helpers::spawn_app_with(|_| {}).await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    // The half hour counted and the nine minutes posted stay in one day (CI once ran this
    // test at 00:10).
    app.stand_at_noon();
    let from = app.clock.now() - chrono::Duration::minutes(30);
    let day = from.format("%Y-%m-%d").to_string();
    // Six conversations whose events share one shard of the day, and six spread.
    let tag = ops_console::server::ids::random_hex(4);
    let id = |c: &str| format!("evt:rp:{c}:m-1");
    let crowd: Vec<String> = {
        let mut found = Vec::new();
        let target = day_key(&day, &id(&format!("c-busy-0-{tag}")), DAY_SHARDS);
        for n in 0.. {
            let c = format!("c-busy-{n}-{tag}");
            if day_key(&day, &id(&c), DAY_SHARDS) == target {
                found.push(c);
            }
            if found.len() == 6 {
                break;
            }
        }
        found
    };
    // Three more in other shards, between them.
    let target = day_key(&day, &id(&crowd[0]), DAY_SHARDS);
    let spread: Vec<String> = (0..)
        .map(|n| format!("c-spread-{n}-{tag}"))
        .filter(|c| day_key(&day, &id(c), DAY_SHARDS) != target)
        .take(3)
        .collect();
    let mut posted = Vec::new();
    for (i, c) in crowd.iter().enumerate() {
        posted.push(c.clone());
        if i % 2 == 1 {
            posted.push(spread[i / 2].clone());
        }
    }
    for c in &posted {
        let a = post_event(&app, &key, &event(c, Some("m-1"), "Where is my order?")).await;
        assert!(a.status.is_success(), "{}", a.body);
        app.clock.advance(chrono::Duration::minutes(1));
    }
    let from_sk = ops_console::server::clock::iso(from);
    let shards = day_keys(&day).len();
    // One per shard: the crowded shard stops at its newest, and says so.
    let some = count_events_since(&app.store, &day, &from_sk, shards)
        .await
        .unwrap();
    let stopped: Vec<_> = some.iter().filter(|s| !s.exact).collect();
    assert_eq!(stopped.len(), 1, "{some:?}");
    assert_eq!(stopped[0].events, 1);
    let oldest = stopped[0].oldest_sk.clone().unwrap();
    assert!(oldest.contains(&crowd[5]), "the newest: {oldest}");
    let all = count_events_since(&app.store, &day, &from_sk, 100 * shards)
        .await
        .unwrap();
    assert_eq!(all.iter().map(|s| s.events).sum::<u64>(), 9, "{all:?}");
    assert!(all.iter().all(|s| s.exact));
    // The day's pages merge its shards newest first, each event once.
    let newest_first: Vec<String> = posted.iter().rev().cloned().collect();
    let mut shown = Vec::new();
    let mut cursor = None;
    for _ in 0..5 {
        let page = ops_console::server::store::events::events_of_day(
            &app.store,
            &day,
            cursor.as_deref(),
            4,
        )
        .await
        .unwrap();
        shown.extend(page.items.into_iter().map(|e| e.conversation_id));
        assert!(page.next_cursor.as_ref().is_none_or(|c| c.len() < 400));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(shown, newest_first);
    let stats = app.state.events.stats(Role::Admin).await.unwrap();
    assert_eq!(stats.events_last_hour, 9);
    assert!(!stats.events_estimated && stats.suppressed_exact);
}

/// One action type's records are spread over the shards of `action-type-index` (stored
/// as `decision#NN`: no partition takes every decision), and read back by type, newest
/// first, page by page, each once, with the type as it is named; a record of the release
/// before (`decision`, unsharded) is read with them, by type and within its conversation,
/// and records of other types are not.
#[tokio::test]
async fn audit_records_of_one_type_are_sharded_and_read_with_the_release_befores() {
    use ops_console::model::users::Role;
    use ops_console::server::domain::audit::window::Typed;
    use ops_console::server::services::audit::AuditFilter;
    use ops_console::server::store::audit::{self, AuditItem};
    use ops_console::server::store::{many, schema::MW_AUDIT_ACTIONS};
    let app = spawn_app().await;
    let t0 = app.clock.now() - Duration::hours(2);
    let mut sent = Vec::new();
    for i in 0..40 {
        let when = t0 + Duration::seconds(i);
        let c = format!("c-type-{}", i % 5);
        audit::put(
            &app.store,
            &AuditItem::new(&c, "decision", when, &format!("d{i:02}"), 30),
        )
        .await
        .unwrap();
        audit::put(
            &app.store,
            &AuditItem::new(&c, "route", when, &format!("r{i:02}"), 30),
        )
        .await
        .unwrap();
        sent.push(format!("{}#d{i:02}", ops_console::server::clock::iso(when)));
    }
    let raw = many::scan_json(&app.store, MW_AUDIT_ACTIONS.base)
        .await
        .unwrap();
    let shards: std::collections::BTreeSet<&str> = raw
        .iter()
        .filter_map(|a| a["action_type"].as_str())
        .filter(|t| t.starts_with("decision"))
        .collect();
    assert!(
        shards.len() >= 10 && shards.iter().all(|t| t.len() == "decision#00".len()),
        "40 decisions over 32 shards: {shards:?}"
    );
    // The release before wrote the type unsharded.
    let old = AuditItem::new("c-type-0", "decision", t0 - Duration::minutes(1), "old", 30);
    app.store
        .client()
        .put_item()
        .table_name(app.store.table(MW_AUDIT_ACTIONS.base))
        .set_item(Some(serde_dynamo::to_item(&old).unwrap()))
        .send()
        .await
        .unwrap();
    sent.push(old.ts_action_id.clone());
    let (refs, audit) = (&app.state.refs, &app.state.audit);
    let filter = |conversation: &'static str| AuditFilter {
        conversation,
        action_type: "decision",
        window: Typed {
            day: "",
            from: "",
            to: "",
            tz: "",
        },
    };
    let (mut cursor, mut rows) = (None::<String>, Vec::new());
    loop {
        let page = audit
            .rows(refs, &filter(""), Role::Admin, cursor.as_deref())
            .await
            .unwrap();
        rows.extend(page.rows);
        match page.next_cursor {
            Some(c) => {
                assert!(c.len() < 400, "one boundary: {} characters", c.len());
                cursor = Some(c);
            }
            None => break,
        }
    }
    assert!(rows.iter().all(|r| r.action_type == "decision"), "{rows:?}");
    let times: Vec<&str> = rows.iter().map(|r| r.at.as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    assert_eq!(rows.len(), sent.len(), "every decision once");
    // Within one conversation the type is a filter, sharded or not.
    let one = audit
        .rows(refs, &filter("c-type-0"), Role::Admin, None)
        .await
        .unwrap();
    assert_eq!(one.rows.len(), 8 + 1, "{:?}", one.rows);
    assert!(one.rows.iter().all(|r| r.action_type == "decision"));
}
