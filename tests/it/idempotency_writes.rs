//! The engine's one-request path on DynamoDB Local: the key, the effect and the answer in
//! one transaction; duplicates answered from the cancelled transaction.

use std::time::Duration as StdDuration;

use chrono::Duration;
use dynamodb_faults::Kind;
use serde_json::json;

use ops_console::server::services::idempotency::{Begin, Call, Engine, KeyInputs, Outcome};
use ops_console::server::store::audit::{self, AuditItem};
use ops_console::server::store::idempotency::{self as store, KeyItem, KeyStatus};
use ops_console::server::store::Store;

use crate::helpers::{faulty_dynamodb, spawn_app, spawn_app_via, TestApp};

const SCOPE: &str = "tests.writes";
/// The audit partition every effect here writes to, one record per run.
const EFFECTS: &str = "tests#writes";

fn call<'a>(inputs: &'a KeyInputs, fingerprint: &str) -> Call<'a> {
    Call {
        tenant: "t1",
        scope: SCOPE,
        inputs,
        fingerprint: Some(fingerprint.to_string()),
    }
}

/// Writes one audit record named after `label` and the run's key, in one transaction with
/// the key; the answer names the label.
async fn write_once(
    engine: &Engine,
    store: &Store,
    call: &Call<'_>,
    label: &str,
) -> Outcome<String> {
    engine
        .run_writes(
            call,
            |attempt| async move {
                let id = format!("{label}-{}", &attempt.key_hash[..12]);
                let item = AuditItem::new(EFFECTS, "test_effect", chrono::Utc::now(), &id, 1);
                let writes = audit::writes(store, &item).map_err(|e| e.to_string())?;
                Ok::<_, String>((writes, json!({"ok": true, "data": {"label": label}})))
            },
            |refusal| format!("refused at {}", refusal.index),
        )
        .await
        .expect("store answers")
}

async fn effects(store: &Store) -> usize {
    audit::list_partition(store, EFFECTS, None, 100)
        .await
        .unwrap()
        .items
        .len()
}

fn key_id(app: &TestApp, inputs: &KeyInputs) -> String {
    let hash = app.state.idempotency.key_hash("t1", SCOPE, inputs);
    KeyItem::id_for("t1", SCOPE, &hash)
}

fn answered(outcome: &Outcome<String>) -> Option<serde_json::Value> {
    match outcome {
        Outcome::Fresh(r) | Outcome::Replayed(r) => r.data.clone(),
        _ => None,
    }
}

#[tokio::test]
async fn a_new_key_and_a_duplicate_each_cost_one_request() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "one");
    let before = app.store.requests().snapshot();
    let first = write_once(engine, &app.store, &call(&inputs, "a"), "first").await;
    let after = app.store.requests().snapshot();
    assert!(matches!(first, Outcome::Fresh(_)), "{first:?}");
    assert_eq!(
        after.values().sum::<u64>() - before.values().sum::<u64>(),
        1,
        "a new key: one TransactWriteItems, nothing else"
    );
    assert_eq!(
        after["TransactWriteItems"] - before.get("TransactWriteItems").copied().unwrap_or(0),
        1
    );

    let before = app.store.requests().snapshot();
    let second = write_once(engine, &app.store, &call(&inputs, "a"), "second").await;
    let after = app.store.requests().snapshot();
    assert!(matches!(second, Outcome::Replayed(_)), "{second:?}");
    assert_eq!(
        answered(&second),
        Some(json!({"label": "first"})),
        "the first answer"
    );
    assert_eq!(
        after.values().sum::<u64>() - before.values().sum::<u64>(),
        1,
        "a duplicate: the cancelled transaction, no read"
    );
    assert_eq!(effects(&app.store).await, 1, "the effect was written once");
    let key = store::get(&app.store, &key_id(&app, &inputs))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(key.status, KeyStatus::Succeeded);
    assert_eq!(key.watch, None, "a finished key is not watched");
    assert!(key.completed_at.is_some());
}

#[tokio::test]
async fn twenty_concurrent_calls_with_one_key_write_once_and_all_get_the_first_answer() {
    let app = spawn_app().await;
    let inputs = KeyInputs::new().id("request", "twenty");
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (engine, store, inputs) = (
            app.state.idempotency.clone(),
            app.store.clone(),
            inputs.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let label = format!("racer-{i}");
            write_once(&engine, &store, &call(&inputs, "a"), &label).await
        }));
    }
    let mut fresh = Vec::new();
    let mut replayed = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            o @ Outcome::Fresh(_) => fresh.push(answered(&o)),
            o @ Outcome::Replayed(_) => replayed.push(answered(&o)),
            other => panic!("a racer got {other:?}"),
        }
    }
    assert_eq!(fresh.len(), 1, "exactly one racer ran it");
    assert_eq!(replayed.len(), 19);
    assert!(
        replayed.iter().all(|r| *r == fresh[0]),
        "every racer got the winner's answer"
    );
    assert_eq!(effects(&app.store).await, 1);
}

#[tokio::test]
async fn the_same_key_with_another_request_is_a_mismatch_and_writes_nothing() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "mismatch");
    assert!(matches!(
        write_once(engine, &app.store, &call(&inputs, "a"), "a").await,
        Outcome::Fresh(_)
    ));
    assert_eq!(
        write_once(engine, &app.store, &call(&inputs, "b"), "b").await,
        Outcome::Mismatch
    );
    assert_eq!(effects(&app.store).await, 1);
}

#[tokio::test]
async fn an_expired_key_runs_again() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "expiry");
    write_once(engine, &app.store, &call(&inputs, "a"), "before").await;
    app.clock.advance(Duration::hours(23));
    assert!(matches!(
        write_once(engine, &app.store, &call(&inputs, "a"), "meanwhile").await,
        Outcome::Replayed(_)
    ));
    // Past its TTL, before DynamoDB's TTL has deleted it: free again.
    app.clock.advance(Duration::hours(2));
    let again = write_once(engine, &app.store, &call(&inputs, "a"), "after").await;
    assert_eq!(
        answered(&again),
        Some(json!({"label": "after"})),
        "{again:?}"
    );
    assert!(matches!(again, Outcome::Fresh(_)));
    assert_eq!(effects(&app.store).await, 2);
}

#[tokio::test]
async fn a_claim_of_the_three_step_path_is_waited_for_until_stale_then_taken_over() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "mixed");
    let c = call(&inputs, "a");
    // A console still on the three-step path claimed the key and is running.
    let Begin::Claimed(original) = engine.begin(&c).await.unwrap() else {
        panic!("the first claim wins");
    };
    let waiting = write_once(engine, &app.store, &c, "too early").await;
    assert!(matches!(waiting, Outcome::InProgress { .. }), "{waiting:?}");
    assert_eq!(effects(&app.store).await, 0);

    // That console died: its claim goes stale and one request takes it over.
    app.clock.advance(Duration::minutes(6));
    let taken = write_once(engine, &app.store, &c, "takeover").await;
    assert!(matches!(taken, Outcome::Fresh(_)), "{taken:?}");
    // The old owner, back late, cannot overwrite the answer.
    let late = ops_console::server::services::idempotency::Stored {
        status: None,
        json: r#"{"ok":true,"data":"late"}"#.into(),
        headers: None,
    };
    assert!(engine.succeed(&original, &late).await.unwrap().is_err());
    let again = write_once(engine, &app.store, &c, "after").await;
    assert_eq!(answered(&again), Some(json!({"label": "takeover"})));
}

#[tokio::test]
async fn a_failed_three_step_key_is_retried_even_with_another_request() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "failed");
    let Begin::Claimed(t) = engine.begin(&call(&inputs, "a")).await.unwrap() else {
        panic!("claimed");
    };
    engine.fail(&t, "upstream_down").await.unwrap().unwrap();
    let retried = write_once(engine, &app.store, &call(&inputs, "b"), "retry").await;
    assert!(matches!(retried, Outcome::Fresh(_)), "{retried:?}");
    assert_eq!(effects(&app.store).await, 1);
}

#[tokio::test]
async fn a_refused_write_stores_nothing_and_leaves_the_key_free() {
    let app = spawn_app().await;
    let engine = &app.state.idempotency;
    let inputs = KeyInputs::new().id("request", "refused");
    let c = call(&inputs, "a");
    let at = chrono::Utc::now();
    // The effect's record is already there: its condition refuses the transaction.
    let taken = AuditItem::new(EFFECTS, "test_effect", at, "taken", 1);
    audit::put(&app.store, &taken).await.unwrap();
    let refused = engine
        .run_writes(
            &c,
            |_| async {
                let writes = audit::writes(&app.store, &taken).map_err(|e| e.to_string())?;
                Ok::<_, String>((writes, json!({"ok": true})))
            },
            |refusal| format!("refused at {}", refusal.index),
        )
        .await
        .unwrap();
    assert_eq!(refused, Outcome::Failed("refused at 0".into()));
    assert_eq!(
        store::get(&app.store, &key_id(&app, &inputs))
            .await
            .unwrap(),
        None,
        "no key"
    );
    // A refusal before writing (the operation's own check) stores nothing either.
    let declined = engine
        .run_writes(
            &c,
            |_| async {
                Err::<(ops_console::server::store::tx::Writes, serde_json::Value), _>(
                    "no".to_string(),
                )
            },
            |_| "unreachable".to_string(),
        )
        .await
        .unwrap();
    assert_eq!(declined, Outcome::Failed("no".into()));
    // The key is free: the next call runs.
    assert!(matches!(
        write_once(engine, &app.store, &c, "then").await,
        Outcome::Fresh(_)
    ));
    assert_eq!(
        effects(&app.store).await,
        2,
        "the record that was there, and this one"
    );
}

#[tokio::test]
async fn a_call_whose_answer_is_lost_is_written_once_and_answered_as_fresh() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    let engine = app.state.idempotency.clone();
    let inputs = KeyInputs::new().id("request", "lost");
    proxy.update(|f| f.lost_answer_rate = 1.0);
    let task = tokio::spawn({
        let (engine, store, inputs) = (engine.clone(), app.store.clone(), inputs.clone());
        async move { write_once(&engine, &store, &call(&inputs, "a"), "lost").await }
    });
    // Once an answer was lost, the answers come back.
    while proxy.report().get(Kind::LostAnswer) == 0 {
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    proxy.update(|f| f.lost_answer_rate = 0.0);
    let out = task.await.unwrap();
    assert!(
        matches!(out, Outcome::Fresh(_)),
        "applied, its answer lost, then known: {out:?}"
    );
    assert_eq!(effects(&direct).await, 1, "written once");
    assert!(
        proxy.report().get(Kind::LostAnswer) >= 1,
        "{}",
        proxy.report()
    );
    let again = write_once(&engine, &app.store, &call(&inputs, "a"), "again").await;
    assert_eq!(answered(&again), Some(json!({"label": "lost"})));
}
