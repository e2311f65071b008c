//! The outbox's due group on its own index (docs/events.md, "The due group's own index"):
//! a fleet halfway through turning `events.due_index` on delivers what each console
//! queued, lists and counts it alike; a claim changes its copy on `due-index` in place, on
//! one partition of many; a round that reads a few partitions still finds what another
//! console queued.

use crate::events::{app_with_receiver, app_with_receiver_via, event, post_event};
use crate::helpers::TestApp;
use ops_console::server::store::events::outbox::{due_shard_of, shard_of, Group, DUE_SHARDS};
use ops_console::server::store::events::outbox_reads::{self, Filter};
use ops_console::server::store::events::{self as records, ActionRecord};

async fn action(app: &TestApp, key: &str) -> ActionRecord {
    records::get_action(&app.store, key).await.unwrap().unwrap()
}

async fn due_count(app: &TestApp) -> u64 {
    outbox_reads::count(&app.store, Group::Due, &Filter::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_fleet_halfway_through_turning_the_due_index_on_delivers_what_each_queued() {
    let (new, receiver) = app_with_receiver().await;
    let old = new.second_console_with(|c| c.events.due_index = false);
    let key = new.api_key(&["events:write"]).await;
    let text = "Where is my order? It has not arrived";
    assert_eq!(
        post_event(&new, &key, &event("c-new", Some("m-1"), text))
            .await
            .status,
        200
    );
    assert_eq!(
        post_event(&old, &key, &event("c-old", Some("m-1"), text))
            .await
            .status,
        200
    );
    // Each where its console writes the due group.
    let on_new = action(&new, "act:rp_route:c-new:m-1").await;
    assert_eq!(
        (on_new.due.as_deref(), on_new.outbox.as_deref()),
        (
            Some(Group::Due.partition(due_shard_of("c-new")).as_str()),
            None
        )
    );
    let on_old = action(&old, "act:rp_route:c-old:m-1").await;
    assert_eq!(
        (on_old.due.as_deref(), on_old.outbox.as_deref()),
        (None, Some(Group::Due.partition(shard_of("c-old")).as_str()))
    );
    // Every console lists and counts both.
    let queued = new.state.events.outbox_counts().await.unwrap().queued;
    assert!(queued >= 2, "{queued}");
    assert_eq!(due_count(&old).await, due_count(&new).await);
    let (listed, _) = outbox_reads::list(&old.store, Group::Due, &Filter::default(), None, 50)
        .await
        .unwrap();
    let listed: Vec<&str> = listed.iter().map(|a| a.event_id.as_str()).collect();
    assert!(
        listed.contains(&"act:rp_route:c-new:m-1") && listed.contains(&"act:rp_route:c-old:m-1"),
        "{listed:?}"
    );
    // The console that writes the old layout delivers what the other queued, and the
    // other's too: each once.
    old.state.events.dispatch_all().await.unwrap();
    let counts = receiver.counts();
    assert_eq!(counts.get("act:rp_route:c-new:m-1"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("act:rp_route:c-old:m-1"), Some(&1), "{counts:?}");
    new.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.counts(), counts, "nothing went twice");
    // Delivered: out of the due group on both indexes.
    for (app, k) in [
        (&new, "act:rp_route:c-new:m-1"),
        (&old, "act:rp_route:c-old:m-1"),
    ] {
        let a = action(app, k).await;
        assert_eq!(a.status.as_str(), "delivered");
        assert_eq!(a.due, None, "{k} left due-index");
        assert_eq!(
            a.outbox.as_deref(),
            Some(
                Group::Delivered
                    .partition(shard_of(&a.conversation_id))
                    .as_str()
            )
        );
    }
}

/// The first round that sees safe mode on reads every due partition and holds what another
/// console queued before it went on, at once; the rounds after read what a round reads out
/// of it (`outbox-index`'s 8, the next 8 of the rotation, and where this console put
/// something), not all 136 of the due group's partitions, which an idle console had read
/// every round while safe mode stayed on. Nothing is sent; off and on again, it sweeps again.
#[tokio::test]
async fn in_safe_mode_the_first_round_holds_everything_due_and_the_next_read_a_few_partitions() {
    let (app, receiver) = app_with_receiver().await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    let queries = || {
        app.store
            .requests()
            .snapshot()
            .get("Query")
            .copied()
            .unwrap_or(0)
    };
    for turn in 1..=2 {
        let body = event(
            &format!("c-held-{turn}"),
            Some("m-1"),
            "Where is my order? It has not arrived",
        );
        assert_eq!(post_event(&other, &key, &body).await.status, 200);
        let queued = due_count(&app).await as usize;
        assert!(queued >= 1, "{queued}");
        app.set_switches(true, true).await;
        let held = app.state.events.dispatch_round().await.unwrap().held;
        assert_eq!(
            held, queued,
            "turn {turn}: held by the first round in safe mode"
        );
        for _ in 0..3 {
            let before = queries();
            app.state.events.dispatch_round().await.unwrap();
            let made = queries() - before;
            // 8 + 8, and one more where the last round found something.
            assert!(
                made <= 20,
                "turn {turn}: a round in safe mode made {made} queries"
            );
        }
        app.set_switches(false, true).await;
        app.state.events.dispatch_round().await.unwrap();
    }
    assert_eq!(receiver.total(), 0, "sent in safe mode");
}

#[tokio::test]
async fn a_round_reading_a_few_due_partitions_finds_what_another_console_queued() {
    let (app, receiver) = app_with_receiver().await;
    // Another console queues it: this one was not told, so only its rotation finds it.
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    let body = event(
        "c-elsewhere",
        Some("m-1"),
        "Where is my order? It has not arrived",
    );
    assert_eq!(post_event(&other, &key, &body).await.status, 200);
    let mut rounds = 0;
    while receiver.total() == 0 {
        rounds += 1;
        assert!(
            rounds <= DUE_SHARDS / 8 + 1,
            "not found within a turn of the rotation ({rounds} rounds)"
        );
        app.state.events.dispatch_round().await.unwrap();
    }
    assert_eq!(
        receiver.counts().get("act:rp_route:c-elsewhere:m-1"),
        Some(&1)
    );
}

/// Write units on `due-index` and on `outbox-index`'s due partitions, as AWS bills them.
fn due_units(report: &dynamodb_faults::Report) -> (f64, f64) {
    let sum = |needle: &str| {
        report
            .keys
            .iter()
            .filter(|k| k.key.contains(needle))
            .map(|k| k.write)
            .sum::<f64>()
    };
    (
        sum("/index/due-index|"),
        sum("/index/outbox-index|outbox=due#"),
    )
}

#[tokio::test]
async fn a_claim_changes_its_due_copy_in_place_on_one_partition_of_many() {
    let proxy = crate::helpers::faulty_dynamodb().await;
    // AWS's partitions, without limits: the proxy counts what each key is written.
    proxy.update(|f| f.partitions = Some(dynamodb_faults::Limits::unlimited()));
    let (new, _direct, receiver) = app_with_receiver_via(&proxy).await;
    let old = new.second_console_with(|c| c.events.due_index = false);
    let key = new.api_key(&["events:write"]).await;
    let text = "hi";
    // One side effect's life (queued, claimed, delivered) on each layout.
    let before = due_units(&proxy.report());
    assert_eq!(
        post_event(&new, &key, &event("c-units-new", Some("m-1"), text))
            .await
            .status,
        200
    );
    new.state.events.dispatch_all().await.unwrap();
    let after_new = due_units(&proxy.report());
    assert_eq!(
        post_event(&old, &key, &event("c-units-old", Some("m-1"), text))
            .await
            .status,
        200
    );
    old.state.events.dispatch_all().await.unwrap();
    let after_old = due_units(&proxy.report());
    // Every side effect of both events delivered, once each.
    let counts = receiver.counts();
    let of = |c: &str| {
        counts
            .keys()
            .filter(|k| k.contains(&format!(":{c}:")))
            .count()
    };
    let (n_new, n_old) = (of("c-units-new"), of("c-units-old"));
    assert!(n_new >= 1 && n_new == n_old, "{counts:?}");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    let new_layout = (after_new.0 - before.0, after_new.1 - before.1);
    let old_layout = (after_old.0 - after_new.0, after_old.1 - after_new.1);
    assert_eq!(
        new_layout.1, 0.0,
        "nothing on outbox-index's due partitions"
    );
    assert_eq!(old_layout.0, 0.0, "nothing on due-index");
    // Queued in the decision's transaction (1 unit, billed twice) and removed in the
    // attempt's (1, twice) on both; the claim changes the copy in place on `due-index` (1)
    // where on `outbox-index` it moves its key (a removal and a put: 2).
    assert_eq!(n_new, 1, "one side effect: {counts:?}");
    assert_eq!(new_layout.0, 5.0, "{new_layout:?} against {old_layout:?}");
    assert_eq!(old_layout.1, 6.0, "{new_layout:?} against {old_layout:?}");
    // On the conversation's one partition of due-index.
    let partition = format!(
        "/index/due-index|due={}",
        Group::Due.partition(due_shard_of("c-units-new"))
    );
    let report = proxy.report();
    let used: Vec<&str> = report
        .keys
        .iter()
        .filter(|k| k.key.contains("/index/due-index|"))
        .map(|k| k.key.as_str())
        .collect();
    assert!(used.len() == 1 && used[0].ends_with(&partition), "{used:?}");
}

#[tokio::test]
async fn a_copy_left_on_due_index_by_the_release_before_is_not_due_and_a_late_copy_is_not_claimed()
{
    use ops_console::server::store::events::outbox;
    use ops_console::server::store::schema::MW_IDEMPOTENCY;
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let text = "Where is my order? It has not arrived";
    for c in ["c-stale", "c-late"] {
        let body = event(c, Some("m-1"), text);
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    let table = app.store.table(MW_IDEMPOTENCY.base);
    let set = |k: &'static str, expr: &'static str, values: Vec<(&'static str, &str)>| {
        let mut req = app
            .store
            .client()
            .update_item()
            .table_name(&table)
            .key(
                "event_id",
                aws_sdk_dynamodb::types::AttributeValue::S(k.into()),
            )
            .update_expression(expr);
        if expr.contains("#st") {
            req = req.expression_attribute_names("#st", "status");
        }
        for (name, v) in values {
            req = req.expression_attribute_values(
                name,
                aws_sdk_dynamodb::types::AttributeValue::S(v.into()),
            );
        }
        req.send()
    };
    // The release before holds it (a rollback with the flag on): it knows no `due`.
    let held = Group::Held.partition(shard_of("c-stale"));
    set(
        "act:rp_route:c-stale:m-1",
        "SET #st = :held, outbox = :o",
        vec![(":held", "held"), (":o", &held)],
    )
    .await
    .unwrap();
    // A copy read from due-index, and then the action moved to outbox-index by a console
    // with the flag off (its retry).
    let late = action(&app, "act:rp_route:c-late:m-1").await;
    let due = Group::Due.partition(shard_of("c-late"));
    set(
        "act:rp_route:c-late:m-1",
        "SET outbox = :o REMOVE due",
        vec![(":o", &due)],
    )
    .await
    .unwrap();
    let now = chrono::Utc::now().timestamp_millis() + 60_000;
    let claimed = outbox::claim(&app.store, &late, None, "n-late", now, 10_000)
        .await
        .unwrap();
    assert!(claimed.is_none(), "a copy of the other index is refused");
    // Not in the due group: not counted, listed or sent; the late one is, from its index.
    let (listed, _) = outbox_reads::list(&app.store, Group::Due, &Filter::default(), None, 50)
        .await
        .unwrap();
    let listed: Vec<&str> = listed.iter().map(|a| a.event_id.as_str()).collect();
    assert!(!listed.contains(&"act:rp_route:c-stale:m-1"), "{listed:?}");
    app.state.events.dispatch_all().await.unwrap();
    let counts = receiver.counts();
    assert_eq!(counts.get("act:rp_route:c-stale:m-1"), None, "{counts:?}");
    assert_eq!(
        counts.get("act:rp_route:c-late:m-1"),
        Some(&1),
        "{counts:?}"
    );
    assert_eq!(
        action(&app, "act:rp_route:c-stale:m-1")
            .await
            .status
            .as_str(),
        "held"
    );
}

/// Runs bulk jobs until the one job stored has finished; its `done`.
async fn run_job_to_its_end(app: &TestApp, direct: &ops_console::server::store::Store) -> i64 {
    use ops_console::server::store::schema::MW_IDEMPOTENCY;
    for _ in 0..600 {
        app.state.events.run_jobs().await.unwrap();
        let items = ops_console::server::store::many::scan_json(direct, MW_IDEMPOTENCY.base)
            .await
            .unwrap();
        if let Some(job) = items
            .iter()
            .find(|v| v["kind"] == "job" && v["status"] == "finished")
        {
            return job["done"].as_i64().unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the job did not end");
}

/// AWS's indexes trail their table: for a while after a write a query shows the item's old
/// version, or the item where it no longer is (a ghost), and a count counts them. Every
/// reader that acts on the outbox's indexes (the dispatcher's holds and claims, a bulk
/// release) acts on the item itself, conditioned on its state: each action is held once,
/// released once and delivered once, however often its stale copies are read.
#[tokio::test]
async fn old_versions_and_ghosts_on_the_indexes_move_each_action_once() {
    use dynamodb_faults::Kind;
    use ops_console::server::services::events::outbox::{job_op, BulkRequest};
    let proxy = crate::helpers::faulty_dynamodb().await;
    let (app, direct, receiver) = app_with_receiver_via(&proxy).await;
    // The indexes lag 20 s (room for a loaded machine between the steps below), but
    // nothing written matches the text yet: every answer is settled and remembered as
    // what the index shows.
    let settled = |f: &mut dynamodb_faults::Faults| {
        f.index_lag_ms = 20_000;
        f.index_lag_matching = "\u{7f}settled".into();
    };
    proxy.update(settled);
    let key = app.api_key(&["events:write"]).await;
    let text = "Where is my order? It has not arrived";
    for i in 0..3 {
        let body = event(&format!("c-ghost-{i}"), Some("m-1"), text);
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    let queued = due_count(&app).await;
    assert!(queued >= 3, "{queued}");
    // From now every index trails by 20 s.
    proxy.update(|f| f.index_lag_matching = String::new());
    // Safe mode holds them, and the next rounds still see them due: each is held once.
    app.set_switches(true, true).await;
    app.state.events.dispatch_all().await.unwrap();
    let held = |app: &TestApp| {
        let store = app.store.clone();
        async move {
            ops_console::server::store::many::scan_json(
                &store,
                ops_console::server::store::schema::MW_IDEMPOTENCY.base,
            )
            .await
            .unwrap()
            .iter()
            .filter(|v| v["status"] == "held")
            .count() as u64
        }
    };
    assert_eq!(held(&app).await, queued);
    // The held count trails: what was just held is not counted yet.
    let counted = outbox_reads::count(&app.store, Group::Held, &Filter::default())
        .await
        .unwrap();
    assert!(counted < queued, "{counted} of {queued}");
    assert!(proxy.report().get(Kind::CountLag) >= 1);
    // Safe mode off: the dispatcher's rounds (those partitions where it last found work
    // among them) read their ghosts and claim none.
    app.set_switches(false, true).await;
    let before = proxy.report();
    for _ in 0..3 {
        app.state.events.dispatch_round().await.unwrap();
    }
    assert_eq!(receiver.total(), 0, "a ghost was delivered");
    let report = proxy.report().since(&before);
    assert!(report.get(Kind::IndexGhost) >= queued, "{report}");
    // The held partitions settle (a count remembered), then trail again.
    proxy.update(settled);
    assert_eq!(
        outbox_reads::count(&app.store, Group::Held, &Filter::default())
            .await
            .unwrap(),
        queued
    );
    proxy.update(|f| f.index_lag_matching = String::new());
    // A bulk release reads the held copies again after it moved them: each released once.
    let req = BulkRequest {
        op: job_op("release").unwrap(),
        filter: Filter::default(),
        reason: "ghosts".into(),
        actor: "test".into(),
        form_key: "ghost-release".into(),
    };
    app.state.events.start_bulk("held", req).await.unwrap();
    assert_eq!(run_job_to_its_end(&app, &direct).await, queued as i64);
    assert_eq!(held(&app).await, 0);
    // Released, they are due again, read as their old queued copies, and each is
    // delivered once, its ghost read after it left refused.
    let before = proxy.report();
    app.state.events.dispatch_all().await.unwrap();
    for _ in 0..3 {
        app.state.events.dispatch_round().await.unwrap();
    }
    let counts = receiver.counts();
    assert_eq!(counts.len() as u64, queued, "{counts:?}");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    let report = proxy.report().since(&before);
    assert!(report.get(Kind::IndexOldVersion) >= 1, "{report}");
}
