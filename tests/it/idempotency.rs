//! The idempotency engine against DynamoDB Local: real concurrent tasks, real conditions.

use ops_console::model::api_keys::ApiScope;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use axum::body::Body;
use axum::http::{header, Request};
use chrono::Duration;
use serde_json::{json, Value};

use ops_console::server::services::idempotency::{
    sha256_hex, Begin, Call, Engine, KeyInputs, Outcome, Secret, Stored,
};
use ops_console::server::store::idempotency::{self as store, KeyItem};

use crate::helpers::{spawn_app, Answer, TestApp};

const SCOPE: &str = "tests.operation";

fn inputs(n: &str) -> KeyInputs {
    KeyInputs::new()
        .id("request", n)
        .text("note", "some free text")
}

async fn run_counting(
    engine: &Engine,
    key: &KeyInputs,
    ran: Arc<AtomicUsize>,
    hold: StdDuration,
) -> Outcome<String> {
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: key,
        fingerprint: None,
    };
    engine
        .run(&call, |attempt| async move {
            let n = ran.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::time::sleep(hold).await;
            Ok::<_, String>(json!({"ok": true, "data": {"run": n, "attempt": attempt.number}}))
        })
        .await
        .expect("store answers")
}

fn stored_item(app: &TestApp, key: &KeyInputs) -> String {
    let hash = app.state.idempotency.key_hash("t1", SCOPE, key);
    KeyItem::id_for("t1", SCOPE, &hash)
}

#[tokio::test]
async fn fifty_concurrent_calls_with_one_key_run_the_operation_once() {
    let app = spawn_app().await;
    let ran = Arc::new(AtomicUsize::new(0));
    let key = inputs("fifty");
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (engine, key, ran) = (app.state.idempotency.clone(), key.clone(), ran.clone());
        tasks.push(tokio::spawn(async move {
            run_counting(&engine, &key, ran, StdDuration::from_millis(300)).await
        }));
    }
    let mut fresh = 0;
    let mut others = 0;
    for t in tasks {
        match t.await.unwrap() {
            Outcome::Fresh(r) => {
                fresh += 1;
                assert_eq!(r.data, Some(json!({"run": 1, "attempt": 1})));
            }
            Outcome::Replayed(r) => {
                others += 1;
                assert_eq!(r.data, Some(json!({"run": 1, "attempt": 1})));
            }
            Outcome::InProgress { retry_after } => {
                others += 1;
                assert!(retry_after >= StdDuration::from_secs(1));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the operation ran once");
    assert_eq!((fresh, others), (1, 49));
    // And afterwards every call is a replay of that one result.
    let again = run_counting(&app.state.idempotency, &key, ran.clone(), StdDuration::ZERO).await;
    assert!(matches!(again, Outcome::Replayed(_)), "{again:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_operation_is_retried_and_counts_its_attempts() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let key = inputs("retry");
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: None,
    };
    let first = engine
        .run(&call, |_| async {
            Err::<Value, _>("provider_down".to_string())
        })
        .await
        .unwrap();
    assert_eq!(first, Outcome::Failed("provider_down".to_string()));
    let item = store::get(&app.store, &stored_item(&app, &key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((item.status.as_str(), item.attempt_count), ("failed", 1));
    assert_eq!(item.stop_reason.as_deref(), Some("provider_down"));

    let second = engine
        .run(&call, |a| async move {
            Ok::<_, String>(json!({"ok": true, "data": a.number}))
        })
        .await
        .unwrap();
    assert!(
        matches!(second, Outcome::Fresh(ref r) if r.data == Some(json!(2))),
        "{second:?}"
    );
    let item = store::get(&app.store, &stored_item(&app, &key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((item.status.as_str(), item.attempt_count), ("succeeded", 2));
    assert_eq!(item.stop_reason, None);
}

#[tokio::test]
async fn a_stale_claim_is_taken_over_by_exactly_one_racer_and_the_old_owner_cannot_overwrite() {
    let app = spawn_app().await;
    let engine = app.state.idempotency.clone();
    let key = inputs("stale");
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: None,
    };
    let Begin::Claimed(original) = engine.begin(&call).await.unwrap() else {
        panic!("first claim wins");
    };
    // Not stale yet: others are told to wait.
    assert!(matches!(
        engine.begin(&call).await.unwrap(),
        Begin::InProgress { .. }
    ));

    app.clock.advance(Duration::minutes(6));
    let mut racers = Vec::new();
    for _ in 0..10 {
        let (engine, key) = (engine.clone(), key.clone());
        racers.push(tokio::spawn(async move {
            let call = Call {
                tenant: "t1",
                scope: SCOPE,
                inputs: &key,
                fingerprint: None,
            };
            engine.begin(&call).await.unwrap()
        }));
    }
    let mut winners = Vec::new();
    for r in racers {
        match r.await.unwrap() {
            Begin::Claimed(t) => winners.push(t),
            Begin::InProgress { .. } => {}
            _ => panic!("a racer got something other than a claim or a wait"),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one racer takes the stale claim over"
    );
    let winner = winners.pop().unwrap();
    assert_eq!(winner.attempt, 2);

    let theirs = Stored {
        status: None,
        json: r#"{"ok":true,"data":"winner"}"#.into(),
        headers: None,
    };
    engine.succeed(&winner, &theirs).await.unwrap().unwrap();
    // The original owner finishes late: refused, and told what stands.
    let late = Stored {
        status: None,
        json: r#"{"ok":true,"data":"late"}"#.into(),
        headers: None,
    };
    let refused = engine.succeed(&original, &late).await.unwrap();
    assert_eq!(refused, Err(Some(theirs.clone())));
    assert!(engine.fail(&original, "late").await.unwrap().is_err());
    let item = store::get(&app.store, &stored_item(&app, &key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.response_json.as_deref(), Some(theirs.json.as_str()));
    assert_eq!((item.status.as_str(), item.attempt_count), ("succeeded", 2));
}

#[tokio::test]
async fn an_expired_record_is_run_again() {
    let app = spawn_app().await;
    let ran = Arc::new(AtomicUsize::new(0));
    let key = inputs("expiry");
    let engine = &app.state.idempotency;
    assert!(matches!(
        run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await,
        Outcome::Fresh(_)
    ));
    app.clock.advance(Duration::hours(23));
    assert!(matches!(
        run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await,
        Outcome::Replayed(_)
    ));
    // Past its 24 h TTL, before DynamoDB's TTL has deleted it: absent.
    app.clock.advance(Duration::hours(2));
    assert!(matches!(
        run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await,
        Outcome::Fresh(_)
    ));
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_same_key_with_another_request_is_a_mismatch() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let key = inputs("mismatch");
    let call = |fp: &str| Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: Some(fp.to_string()),
    };
    let ok = |_| async { Ok::<_, String>(json!({"ok": true})) };
    assert!(matches!(
        engine.run(&call("a"), ok).await.unwrap(),
        Outcome::Fresh(_)
    ));
    assert_eq!(engine.run(&call("b"), ok).await.unwrap(), Outcome::Mismatch);
    assert!(matches!(
        engine.run(&call("a"), ok).await.unwrap(),
        Outcome::Replayed(_)
    ));
}

#[tokio::test]
async fn two_secrets_give_two_hashes_for_the_same_inputs() {
    let app = spawn_app().await;
    let config = app.state.config.idempotency.clone();
    let a = Engine::new(
        app.store.clone(),
        Secret::new(b"a".repeat(32)),
        app.clock.clone(),
        config.clone(),
    );
    let b = Engine::new(
        app.store.clone(),
        Secret::new(b"b".repeat(32)),
        app.clock.clone(),
        config,
    );
    let key = inputs("secrets");
    assert_ne!(a.key_hash("t1", SCOPE, &key), b.key_hash("t1", SCOPE, &key));
    assert_eq!(a.key_hash("t1", SCOPE, &key).len(), 64);
}

#[tokio::test]
async fn block_listed_fields_never_reach_dynamodb() {
    let app = spawn_app().await;
    let key = inputs("blocked");
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: None,
    };
    let secrets = [
        "INTERNAL-1",
        "DEBUG-2",
        "PROMPT-3",
        "ERRMSG-4",
        "STACK-5",
        "PROVIDER-6",
        "MODEL-7",
        "REQID-8",
        "USERTEXT-9",
    ];
    let outcome = app
        .state
        .idempotency
        .run(&call, |_| async {
            Ok::<_, String>(json!({
                "ok": true, "stopReason": "done", "traceId": "tr-1",
                "_internal": {"cost": "INTERNAL-1"}, "debug": "DEBUG-2", "prompt": "PROMPT-3",
                "error": {"message": "ERRMSG-4"}, "stack": "STACK-5", "provider": "PROVIDER-6",
                "model": "MODEL-7", "requestId": "REQID-8",
                "data": {"count": 2, "text": "USERTEXT-9", "model": "MODEL-7"},
            }))
        })
        .await
        .unwrap();
    let Outcome::Fresh(safe) = outcome else {
        panic!("fresh")
    };
    assert_eq!(safe.trace_id.as_deref(), Some("tr-1"));
    let item = store::get(&app.store, &stored_item(&app, &key))
        .await
        .unwrap()
        .unwrap();
    let everything = serde_json::to_string(&item).unwrap();
    for s in secrets {
        assert!(
            !everything.contains(s),
            "{s} reached DynamoDB: {everything}"
        );
    }
    assert!(!everything.contains("some free text"));
    assert_eq!(
        item.response_json.as_deref(),
        Some(r#"{"ok":true,"stopReason":"done","traceId":"tr-1","data":{"count":2}}"#)
    );
}

#[tokio::test]
async fn a_duplicate_costs_exactly_one_dynamodb_request() {
    let app = spawn_app().await;
    let ran = Arc::new(AtomicUsize::new(0));
    let key = inputs("cost");
    let engine = &app.state.idempotency;
    let before = app.store.requests().total();
    run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await;
    let fresh_cost = app.store.requests().total() - before;
    assert_eq!(fresh_cost, 2, "a fresh run: the claim and the completion");
    let before = app.store.requests().snapshot();
    let outcome = run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await;
    assert!(matches!(outcome, Outcome::Replayed(_)));
    let after = app.store.requests().snapshot();
    let spent: u64 = after.values().sum::<u64>() - before.values().sum::<u64>();
    assert_eq!(spent, 1, "a duplicate: one PutItem, no extra read");
    assert_eq!(after["PutItem"] - before["PutItem"], 1);
}

#[tokio::test]
async fn outcomes_are_counted_per_scope_and_hour() {
    let app = spawn_app().await;
    let ran = Arc::new(AtomicUsize::new(0));
    let engine = &app.state.idempotency;
    // Counted in one hour: the test's clock stands still at the start of one.
    app.stand_in_next_hour(chrono::Duration::zero());
    for i in 0..3 {
        let key = inputs(&format!("stats-{i}"));
        run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await;
        run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await;
    }
    engine.flush_stats().await.unwrap();
    let hour = ops_console::server::services::idempotency::hour_key(app.clock.now());
    let buckets = store::read_stats(&app.store, SCOPE, &hour).await.unwrap();
    assert_eq!(buckets.len(), 1);
    let c = &buckets[0].counts;
    assert_eq!((c["requests"], c["fresh"], c["replayed"]), (6, 3, 3));
    let all = store::read_stats(&app.store, store::ALL_SCOPES, &hour)
        .await
        .unwrap();
    assert_eq!(all[0].scopes, vec![SCOPE.to_string()]);
    // Every console's flushes of every scope would meet on the hour's `#all` item: a
    // console notes a scope there once an hour, and a later flush writes its totals alone.
    let key = inputs("stats-later");
    run_counting(engine, &key, ran.clone(), StdDuration::ZERO).await;
    let before = app.store.requests().snapshot();
    engine.flush_stats().await.unwrap();
    let after = app.store.requests().snapshot();
    assert_eq!(
        after["UpdateItem"] - before["UpdateItem"],
        1,
        "the totals only"
    );
    let buckets = store::read_stats(&app.store, SCOPE, &hour).await.unwrap();
    assert_eq!(buckets[0].counts["fresh"], 4);
}

// --- HTTP -----------------------------------------------------------------------------------

async fn post_switch(app: &TestApp, api_key: &str, idem: Option<&str>, body: &Value) -> Answer {
    let mut req = Request::post("/api/v1/kill-switches")
        .header(header::AUTHORIZATION, format!("Bearer {api_key}"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(k) = idem {
        req = req.header("Idempotency-Key", k);
    }
    app.send(req.body(Body::from(body.to_string())).unwrap())
        .await
}

pub(crate) fn turn_off(version: u64) -> Value {
    json!({"switch": "safe_mode", "enable": false, "expected_version": version,
           "reason": "incident over", "confirm": true})
}

pub(crate) async fn writer_key(app: &TestApp, name: &str) -> String {
    let scopes = [ApiScope::SwitchesWrite, ApiScope::SwitchesRead];
    app.state
        .api_keys
        .create_api_key(name, &scopes, 30, "test")
        .await
        .unwrap()
}

#[tokio::test]
async fn http_needs_a_key_replays_it_and_refuses_it_for_another_body() {
    let app = spawn_app().await;
    let key = writer_key(&app, "incident-bot").await;

    let missing = post_switch(&app, &key, None, &turn_off(0)).await;
    assert_eq!(missing.status, 400, "{}", missing.body);
    assert_eq!(missing.json()["field"], "Idempotency-Key");
    assert!(app
        .state
        .kill_switches
        .history(None, 10)
        .await
        .unwrap()
        .entries
        .is_empty());

    let first = post_switch(&app, &key, Some("k-1"), &turn_off(0)).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["safe_mode"], false);
    assert!(first.headers.get("idempotent-replayed").is_none());

    let again = post_switch(&app, &key, Some("k-1"), &turn_off(0)).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.json(), first.json());
    let h = app.state.kill_switches.history(None, 10).await.unwrap();
    assert_eq!(h.entries.len(), 1, "the retry changed nothing");
    assert_eq!(h.entries[0].actor, "api:incident-bot");

    let other = post_switch(
        &app,
        &key,
        Some("k-1"),
        &json!({"switch": "automation_enabled"}),
    )
    .await;
    assert_eq!(other.status, 422, "{}", other.body);
    assert_eq!(
        other.headers[header::CONTENT_TYPE],
        "application/problem+json"
    );
}

#[tokio::test]
async fn http_a_request_while_the_first_runs_gets_409_with_retry_after() {
    let app = spawn_app().await;
    let key = writer_key(&app, "slow-bot").await;
    let body = turn_off(0);
    // The first request has claimed the key and is still running.
    let inputs = KeyInputs::new()
        .id("principal", sha256_hex(key.as_bytes()))
        .id("key", "k-slow");
    let mut digest = b"POST /api/v1/kill-switches\n".to_vec();
    digest.extend_from_slice(body.to_string().as_bytes());
    let call = Call {
        tenant: "api",
        scope: "http:POST /api/v1/kill-switches",
        inputs: &inputs,
        fingerprint: Some(sha256_hex(&digest)),
    };
    let Begin::Claimed(_running) = app.state.idempotency.begin(&call).await.unwrap() else {
        panic!("claimed");
    };
    let second = post_switch(&app, &key, Some("k-slow"), &body).await;
    assert_eq!(second.status, 409, "{}", second.body);
    let retry: u64 = second.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert!(app
        .state
        .kill_switches
        .history(None, 10)
        .await
        .unwrap()
        .entries
        .is_empty());
}

#[tokio::test]
async fn http_keys_are_private_to_the_client_that_sent_them() {
    let app = spawn_app().await;
    let alice = writer_key(&app, "alice-bot").await;
    let bob = writer_key(&app, "bob-bot").await;
    let first = post_switch(&app, &alice, Some("shared-key"), &turn_off(0)).await;
    assert_eq!(first.status, 200, "{}", first.body);
    // Bob's identical request with the same key is his own request, not Alice's replay:
    // it runs, and finds the version already moved on.
    let bobs = post_switch(&app, &bob, Some("shared-key"), &turn_off(0)).await;
    assert!(bobs.headers.get("idempotent-replayed").is_none());
    assert_eq!(bobs.status, 409, "{}", bobs.body);
    assert!(
        bobs.body.contains("Changed by someone else"),
        "{}",
        bobs.body
    );
}

#[tokio::test]
async fn a_raw_key_is_found_for_the_client_that_sent_it_and_only_for_it() {
    use ops_console::server::services::idempotency::sha256_hex;
    let app = spawn_app().await;
    let alice = writer_key(&app, "alice-bot").await;
    let bob = writer_key(&app, "bob-bot").await;
    assert_eq!(
        post_switch(&app, &alice, Some("lookup-7f3c"), &turn_off(0))
            .await
            .status,
        200
    );
    let engine = &app.state.idempotency;
    let found = engine
        .find_raw_key("lookup-7f3c", &[sha256_hex(alice.as_bytes())])
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].scope, "http:POST /api/v1/kill-switches");
    assert_eq!(found[0].status, "succeeded");
    let not_bobs = engine
        .find_raw_key("lookup-7f3c", &[sha256_hex(bob.as_bytes())])
        .await
        .unwrap();
    assert!(
        not_bobs.is_empty(),
        "a key is private to the client that sent it"
    );
    let unknown = engine
        .find_raw_key("never-sent", &[sha256_hex(alice.as_bytes())])
        .await
        .unwrap();
    assert!(unknown.is_empty());

    // The key's page names the API key that sent it and leads to what it changed.
    let api_keys = [
        (sha256_hex(bob.as_bytes()), "bob-bot".to_string()),
        (sha256_hex(alice.as_bytes()), "alice-bot".to_string()),
    ];
    let detail = engine.key_summary(&found[0].id, &api_keys).await.unwrap();
    assert_eq!(detail.api_key.as_deref(), Some("alice-bot"));
    let detail = ops_console::server::services::idempotency::health::detail_for_role(
        detail,
        ops_console::model::users::Role::Viewer,
        &|u| app.state.refs.user(u),
    );
    assert_eq!(
        detail.resource.map(|r| r.href).as_deref(),
        Some("/kill-switches")
    );
    let unnamed = engine
        .key_summary(&found[0].id, &api_keys[..1])
        .await
        .unwrap();
    assert_eq!(unnamed.api_key, None, "only the key that sent it names it");
}

#[tokio::test]
async fn a_request_is_found_by_the_correlation_id_it_carried_and_a_retry_is_the_same_key() {
    let app = spawn_app().await;
    let key = writer_key(&app, "corr-bot").await;
    let send = |correlation: &'static str| {
        let req = Request::post("/api/v1/kill-switches")
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", "corr-key-1")
            .header("X-Correlation-Id", correlation);
        app.send(req.body(Body::from(turn_off(0).to_string())).unwrap())
    };
    assert_eq!(send("trace-4711").await.status, 200);
    // The retry logged under another correlation id replays the same key: the key keeps
    // the id of the request that made it.
    let retry = send("trace-4712").await;
    assert_eq!(retry.status, 200);
    assert!(retry.headers.get("idempotent-replayed").is_some());
    let engine = &app.state.idempotency;
    let found = engine.find_by_correlation("trace-4711").await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].scope, "http:POST /api/v1/kill-switches");
    assert!(engine
        .find_by_correlation("trace-4712")
        .await
        .unwrap()
        .is_empty());
    assert!(engine
        .find_by_correlation("never-logged")
        .await
        .unwrap()
        .is_empty());
    let bad = engine.find_by_correlation("has space").await.unwrap_err();
    assert_eq!(bad.field(), Some("correlation_id"));
}

// --- the console ----------------------------------------------------------------------------

#[tokio::test]
async fn a_double_submitted_kill_switch_form_changes_once() {
    use ops_console::api::kill_switches::ChangeKillSwitch;
    use ops_console::model::users::Role;
    let app = Arc::new(spawn_app().await);
    let admin = app.session_as("root", Role::Admin).await;
    let fields: &[(&str, &str)] = &[
        ("switch", "safe_mode"),
        ("enable", "false"),
        ("expected_version", "0"),
        ("reason", "double click"),
        ("confirm", "yes"),
        ("idempotency_key", "form-key-double-click-1"),
    ];
    let (a, b) = tokio::join!(
        app.call::<ChangeKillSwitch>(fields, Some(&admin)),
        app.call::<ChangeKillSwitch>(fields, Some(&admin)),
    );
    assert_eq!(
        (a.status.as_u16(), b.status.as_u16()),
        (200, 200),
        "{} / {}",
        a.body,
        b.body
    );
    let again = app.call::<ChangeKillSwitch>(fields, Some(&admin)).await;
    assert_eq!(
        again.status, 200,
        "a refresh re-posting the form: {}",
        again.body
    );
    let h = app.state.kill_switches.history(None, 10).await.unwrap();
    assert_eq!(h.entries.len(), 1, "one change, one audit record");
    assert_eq!(h.entries[0].version, 1);
}

#[tokio::test]
async fn only_admins_expire_a_key_and_the_expiry_is_audited() {
    use ops_console::api::idempotency::{ExpireIdempotencyKey, LoadIdempotencyHealth};
    use ops_console::model::users::Role;
    use ops_console::server::services::idempotency::health::{AUDIT_EXPIRED, AUDIT_PARTITION};
    use ops_console::server::store::audit;
    let app = spawn_app().await;
    let key = inputs("stuck");
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: None,
    };
    let Begin::Claimed(_) = app.state.idempotency.begin(&call).await.unwrap() else {
        panic!("claimed")
    };
    let id = stored_item(&app, &key);
    let viewer = app.session_as("vera", Role::Viewer).await;
    let admin = app.session_as("ada", Role::Admin).await;
    let fields = [("id", id.as_str()), ("reason", "worker crashed")];
    let refused = app
        .call::<ExpireIdempotencyKey>(&fields, Some(&viewer))
        .await;
    assert_eq!(refused.status, 403);
    let no_reason = app
        .call::<ExpireIdempotencyKey>(&[("id", id.as_str()), ("reason", " ")], Some(&admin))
        .await;
    assert_eq!(no_reason.status, 400);
    let done = app
        .call::<ExpireIdempotencyKey>(&fields, Some(&admin))
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let audits = audit::list_partition(&app.store, AUDIT_PARTITION, None, 10)
        .await
        .unwrap();
    assert_eq!(audits.items.len(), 1);
    assert_eq!(
        (
            audits.items[0].action_type.as_str(),
            audits.items[0].actor.as_str()
        ),
        (AUDIT_EXPIRED, "ada")
    );
    assert!(!audits.items[0].action_payload_redacted.contains(&id));
    // The stuck operation can run again at once.
    assert!(matches!(
        app.state.idempotency.begin(&call).await.unwrap(),
        Begin::Claimed(_)
    ));

    // The monitoring page's numbers, as a viewer reads them.
    let health = app
        .call::<LoadIdempotencyHealth>(&[("window", "24h")], Some(&viewer))
        .await;
    assert_eq!(health.status, 200, "{}", health.body);
    let h = health.json();
    let scope = h["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scope"] == SCOPE)
        .unwrap();
    assert_eq!(scope["totals"]["fresh"], 2);
    assert_eq!(scope["series"].as_array().unwrap().len(), 24);
    let bad = app
        .call::<LoadIdempotencyHealth>(&[("window", "1y")], Some(&viewer))
        .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn viewers_see_a_keys_stored_answer_without_personal_data() {
    use ops_console::api::idempotency::LoadIdempotencyKey;
    use ops_console::model::users::Role;
    use ops_console::server::store::many::scan_json;
    use ops_console::server::store::schema::IDEMPOTENCY_KEYS;
    let app = spawn_app().await;
    // A measurement's answer names its user: here, by an email.
    let writer = app.api_key(&["measurements:write"]).await;
    let at = chrono::Utc::now() - Duration::hours(1);
    let body = json!({"measurement_id": "m-private", "user_id": "jane.doe@example.com",
                      "weight": 70.0, "unit": "kg", "source": "Scale-X",
                      "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)});
    let req = Request::post("/api/v1/measurements")
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {writer}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", "private-1")
        .body(Body::from(body.to_string()))
        .unwrap();
    let posted = app.send(req).await;
    assert_eq!(posted.status, 201, "{}", posted.body);
    let keys = scan_json(&app.store, IDEMPOTENCY_KEYS.base).await.unwrap();
    let id = keys
        .iter()
        .find(|k| k["scope"] == "http:POST /api/v1/measurements")
        .and_then(|k| k["id"].as_str())
        .expect("the request's key is stored")
        .to_string();

    let shown = |a: &Answer| {
        assert_eq!(a.status, 200, "{}", a.body);
        a.json()["response_json"]
            .as_str()
            .expect("the stored answer")
            .to_string()
    };
    let viewer = app.session_as("vera", Role::Viewer).await;
    let answer = app
        .call::<LoadIdempotencyKey>(&[("id", id.as_str())], Some(&viewer))
        .await;
    let seen = shown(&answer);
    assert!(!seen.contains("jane.doe@example.com"), "{seen}");
    let seen: Value = serde_json::from_str(&seen).expect("still JSON");
    assert_eq!(seen["user_id"], "***@***");
    assert_eq!(seen["measurement_id"], "m-private");
    // Operators work with the data as it is.
    let operator = app.session_as("olga", Role::Operator).await;
    let answer = app
        .call::<LoadIdempotencyKey>(&[("id", id.as_str())], Some(&operator))
        .await;
    let seen = shown(&answer);
    assert!(seen.contains("jane.doe@example.com"), "{seen}");
}

#[tokio::test]
async fn the_sweep_deletes_expired_keys_and_keeps_live_ones() {
    let app = spawn_app().await;
    let ran = Arc::new(AtomicUsize::new(0));
    let engine = &app.state.idempotency;
    let old = inputs("sweep-old");
    run_counting(engine, &old, ran.clone(), StdDuration::ZERO).await;
    app.clock.advance(Duration::hours(20));
    let live = inputs("sweep-live");
    run_counting(engine, &live, ran.clone(), StdDuration::ZERO).await;
    // 25 h after the first: the first key has expired, the second has not.
    let now = (app.clock.now() + Duration::hours(5)).timestamp();
    let (mut deleted, mut start) = (0, None);
    loop {
        let (_, d, next) = store::sweep_page(&app.store, now, start).await.unwrap();
        deleted += d;
        match next {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    assert_eq!(deleted, 1);
    assert!(store::get(&app.store, &stored_item(&app, &old))
        .await
        .unwrap()
        .is_none());
    assert!(store::get(&app.store, &stored_item(&app, &live))
        .await
        .unwrap()
        .is_some());
}

/// Claims the key of `name` (as a request starts): its ticket and its item's id.
async fn claimed(
    app: &TestApp,
    name: &str,
) -> (ops_console::server::services::idempotency::Ticket, String) {
    let key = inputs(name);
    let call = Call {
        tenant: "t1",
        scope: SCOPE,
        inputs: &key,
        fingerprint: None,
    };
    let Begin::Claimed(ticket) = app.state.idempotency.begin(&call).await.unwrap() else {
        panic!("claimed")
    };
    (ticket, stored_item(app, &key))
}

/// Every key of a watch list (`stuck` or `failed`), page after page, as the page lists them.
async fn watched(app: &TestApp, which: &str) -> Vec<String> {
    let mut listed: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let page = app
            .state
            .idempotency
            .watched_keys(which, cursor.as_deref())
            .await
            .unwrap();
        listed.extend(page.keys.into_iter().map(|k| k.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    listed
}

/// The keys to watch are spread over the shards of `watch-shard-index` (no partition takes
/// every key's copy) and listed merged in order, page by page, none twice; a key that a
/// console of the release before watched on the unsharded `watch-index` is moved over by
/// the mender and listed too; a key that ended well leaves the list.
#[tokio::test]
async fn watched_keys_are_sharded_and_merged_in_order_and_an_old_releases_are_moved_over() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::store::schema::IDEMPOTENCY_KEYS;
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let mut failed = Vec::new();
    for i in 0..25 {
        let (ticket, id) = claimed(&app, &format!("watch-{i}")).await;
        engine
            .fail(&ticket, "receiver down")
            .await
            .unwrap()
            .unwrap();
        failed.push(id);
        app.clock.advance(Duration::seconds(1));
    }
    let table = app.store.table(IDEMPOTENCY_KEYS.base);
    let item = |id: String| {
        let (client, table) = (app.store.client().clone(), table.clone());
        async move {
            client
                .get_item()
                .table_name(table)
                .key("id", AttributeValue::S(id))
                .send()
                .await
                .unwrap()
                .item
                .unwrap()
        }
    };
    let mut shards = std::collections::BTreeSet::new();
    for id in &failed {
        let stored = item(id.clone()).await;
        assert!(
            !stored.contains_key("watch"),
            "nothing on the unsharded index"
        );
        let key = stored["watch_key"].as_s().unwrap().clone();
        assert!(key.starts_with("failed#"), "{key}");
        shards.insert(key);
    }
    assert!(shards.len() >= 10, "25 keys over many shards: {shards:?}");

    // A key the release before failed: on `watch-index` only, until the mender moves it.
    let (ticket, old_id) = claimed(&app, "watch-old").await;
    engine
        .fail(&ticket, "receiver down")
        .await
        .unwrap()
        .unwrap();
    let earliest = app.clock.now().timestamp_millis() - 3_600_000;
    app.store
        .client()
        .update_item()
        .table_name(&table)
        .key("id", AttributeValue::S(old_id.clone()))
        .update_expression("SET watch = :f, watch_at = :at REMOVE watch_key, watch_sk")
        .expression_attribute_values(":f", AttributeValue::S("failed".into()))
        .expression_attribute_values(":at", AttributeValue::N(earliest.to_string()))
        .send()
        .await
        .unwrap();

    // One that ended well: not listed.
    let (ticket, _) = claimed(&app, "watch-fine").await;
    let answer = Stored {
        status: None,
        json: "{}".into(),
        headers: None,
    };
    engine.succeed(&ticket, &answer).await.unwrap().unwrap();

    let list_all = || watched(&app, "failed");
    let before = list_all().await;
    let mut newest_first: Vec<String> = failed.iter().rev().cloned().collect();
    assert_eq!(before, newest_first, "every shard, merged newest first");

    let now = app.clock.now().timestamp();
    assert_eq!(store::mend_watch(&app.store, now).await.unwrap(), 1);
    assert_eq!(
        store::mend_watch(&app.store, now).await.unwrap(),
        0,
        "moved once"
    );
    let moved = item(old_id.clone()).await;
    assert!(!moved.contains_key("watch"), "{moved:?}");
    newest_first.push(old_id);
    assert_eq!(list_all().await, newest_first, "the old one, oldest, last");
}

/// The stuck list (started keys past their stale time) over every shard, oldest first and
/// page by page; a key taken over by a console of the release before (it wrote only
/// `watch`/`watch_at` and a new stale time) is not stuck while its new owner runs.
#[tokio::test]
async fn stuck_keys_are_listed_oldest_first_from_every_shard() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::store::schema::IDEMPOTENCY_KEYS;
    let app = spawn_app().await;
    let mut started = Vec::new();
    for i in 0..23 {
        started.push(claimed(&app, &format!("stuck-{i}")).await.1);
        app.clock.advance(Duration::seconds(1));
    }
    let list_all = || watched(&app, "stuck");
    assert!(list_all().await.is_empty(), "none is stale yet");
    app.clock.advance(Duration::hours(1));
    assert_eq!(
        list_all().await,
        started,
        "every shard, merged oldest first"
    );

    // An old console takes the first one over: a new stale time, on `watch`/`watch_at`.
    let later = (app.clock.now().timestamp_millis() + 300_000).to_string();
    app.store
        .client()
        .update_item()
        .table_name(app.store.table(IDEMPOTENCY_KEYS.base))
        .key("id", AttributeValue::S(started[0].clone()))
        .update_expression("SET stale_at = :later, watch = :s, watch_at = :later")
        .expression_attribute_values(":later", AttributeValue::N(later))
        .expression_attribute_values(":s", AttributeValue::S("started".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        list_all().await,
        started[1..].to_vec(),
        "running again: not stuck"
    );
}
