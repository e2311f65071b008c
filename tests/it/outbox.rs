//! The outbox on DynamoDB Local: signed deliveries a receiver verifies, secret rotation,
//! the retry schedule to a dead letter, redrive exactly once, order within a conversation,
//! safe mode holding, a dead console's delivery taken over, two consoles never sending one
//! action twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chrono::Duration;

use crate::events::{app_with_receiver, app_with_receiver_retrying, event, post_event};
use crate::helpers::TestApp;
use ops_console::server::crash_points::CrashPoints;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::services::events::outbox::{job_op, BulkRequest};
use ops_console::server::services::events::receiver::{Change, Settings};
use ops_console::server::store::events::outbox::Group;
use ops_console::server::store::events::outbox_reads::{self, Filter};
use ops_console::server::store::events::{self as records, ActionRecord};

async fn action(app: &TestApp, key: &str) -> ActionRecord {
    records::get_action(&app.store, key).await.unwrap().unwrap()
}

async fn count(app: &TestApp, group: Group) -> u64 {
    outbox_reads::count(&app.store, group, &Filter::default())
        .await
        .unwrap()
}

/// Runs every running bulk job to its end: passes a dispatcher round apart (a job ends
/// on a pass that finds nothing a while after an earlier one did, see `CONFIRM_MS`).
async fn run_jobs(app: &TestApp) {
    for _ in 0..20 {
        app.state.events.run_jobs().await.unwrap();
        app.clock.advance(chrono::Duration::milliseconds(250));
    }
}

/// A console that dies as soon as it claimed its first delivery.
#[derive(Default)]
struct DiesAfterClaim(AtomicBool);

impl CrashPoints for DiesAfterClaim {
    fn after_delivery_claim(&self) -> bool {
        !self.0.swap(true, Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_console_that_dies_holding_a_delivery_is_taken_over_after_its_lease() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let body = event(
        "c-crash",
        Some("m-7"),
        "Where is my order? It has not arrived",
    );
    assert_eq!(post_event(&app, &key, &body).await.status, 200);
    let dying = app
        .state
        .events
        .with_crash_points(Arc::new(DiesAfterClaim::default()));
    dying.dispatch_round().await.unwrap();
    assert_eq!(receiver.total(), 0, "died before sending");
    let claimed = action(&app, "act:rp_route:c-crash:m-7").await;
    assert_eq!(
        claimed.status.as_str(),
        "claimed",
        "in flight, its console gone"
    );
    // Another console finds it in flight: not before the lease runs out.
    let other = app.second_console();
    other.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0);
    app.clock.advance(Duration::seconds(61));
    // No redelivery of the event: the other console finishes on its own.
    other.state.events.dispatch_all().await.unwrap();
    let counts = receiver.counts();
    assert_eq!(
        counts.get("act:rp_route:c-crash:m-7"),
        Some(&1),
        "{counts:?}"
    );
    let done = action(&app, "act:rp_route:c-crash:m-7").await;
    assert_eq!(done.status.as_str(), "delivered");
    assert_eq!(done.attempts, 2, "claimed twice, sent once");
    app.state.events.dispatch_all().await.unwrap();
    other.state.events.dispatch_all().await.unwrap();
    assert_eq!(
        receiver.total(),
        counts.values().sum::<usize>(),
        "nothing more"
    );
}

#[tokio::test]
async fn the_schedule_ends_in_a_dead_letter_and_a_redrive_delivers_it_exactly_once() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    assert_eq!(
        post_event(&app, &key, &event("c-dead", Some("m-1"), "hi"))
            .await
            .status,
        200
    );
    // Three attempts (now, +1 s, +2 s): every one 503.
    receiver.fail_next(100, 503);
    for _ in 0..4 {
        app.state.events.dispatch_all().await.unwrap();
        app.clock.advance(Duration::milliseconds(2_500));
    }
    let dead = action(&app, "act:rp_route:c-dead:m-1").await;
    assert_eq!(dead.status.as_str(), "dead");
    assert_eq!(dead.attempts, 3);
    assert_eq!(dead.cause.as_deref(), Some("http 503"));
    assert_eq!(count(&app, Group::Dead).await, 1);
    assert_eq!(receiver.total(), 0);

    // The receiver is back; an operator redrives every 503 dead letter, twice (a double
    // click): one job, one delivery.
    receiver.fail_next(0, 503);
    let redrive = || BulkRequest {
        op: job_op("redrive").unwrap(),
        filter: Filter {
            cause: Some("http 503".into()),
            ..Filter::default()
        },
        reason: "receiver fixed".into(),
        actor: "ops".into(),
        form_key: "form-1".into(),
    };
    let job = app
        .state
        .events
        .start_bulk("dead", redrive())
        .await
        .unwrap();
    assert_eq!(job.total, 1, "the count it showed before");
    let again = app
        .state
        .events
        .start_bulk("dead", redrive())
        .await
        .unwrap();
    assert_eq!(again.id, job.id, "one job");
    run_jobs(&app).await;
    assert_eq!(app.state.events.job(&job.id).await.unwrap().done, 1);
    assert!(!app.state.events.job(&job.id).await.unwrap().running);
    app.state.events.dispatch_all().await.unwrap();
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.counts().get("act:rp_route:c-dead:m-1"), Some(&1));
    assert_eq!(
        action(&app, "act:rp_route:c-dead:m-1")
            .await
            .status
            .as_str(),
        "delivered"
    );
    assert_eq!(count(&app, Group::Dead).await, 0);
    let audit = ops_console::server::store::audit::list_partition(&app.store, "c-dead", None, 100)
        .await
        .unwrap();
    assert!(audit
        .items
        .iter()
        .any(|a| a.action_type == "outbox_redrive" && a.actor == "ops"));
}

#[tokio::test]
async fn a_receiver_verifies_every_message_and_a_rotation_keeps_it_verifying() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let events = app.state.events.clone();
    // The admin saves the receiver (it keeps the settings' secret) and adds a second one.
    let view = events
        .receiver(ops_console::model::users::Role::Admin)
        .await
        .unwrap();
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::Settings(Settings {
                url: view.url.clone(),
                enabled: true,
                limits: None,
            }),
            0,
            "admin",
        )
        .await
        .unwrap();
    let shown = events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::AddSecret,
            1,
            "admin",
        )
        .await
        .unwrap()
        .expect("a new secret is shown once");
    let new = SigningSecret::parse(&shown).unwrap();
    // The receiver switches to the new secret only: both sign, so it verifies.
    *receiver.secrets.lock().unwrap() = vec![new.clone()];
    post_event(&app, &key, &event("c-rot", Some("m-1"), "hi")).await;
    events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 1);
    assert_eq!(*receiver.bad_signatures.lock().unwrap(), 0);
    // The old secret is retired; a receiver that still only knows it refuses (401): a
    // dead letter, not retried.
    let old_id = events
        .receiver(ops_console::model::users::Role::Admin)
        .await
        .unwrap()
        .secrets[0]
        .id
        .clone();
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::RetireSecret { id: old_id },
            2,
            "admin",
        )
        .await
        .unwrap();
    assert_eq!(
        view.source, "settings",
        "from the server's settings until saved"
    );
    *receiver.secrets.lock().unwrap() = vec![SigningSecret::generate()];
    post_event(&app, &key, &event("c-rot", Some("m-2"), "hi")).await;
    events.dispatch_all().await.unwrap();
    let refused = action(&app, "act:rp_route:c-rot:m-2").await;
    assert_eq!(refused.status.as_str(), "dead");
    assert_eq!(refused.cause.as_deref(), Some("http 401"));
    assert_eq!(*receiver.bad_signatures.lock().unwrap(), 1);
    // A stale version is refused: two admins do not overwrite each other.
    assert!(events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::AddSecret,
            1,
            "admin2"
        )
        .await
        .is_err());
}

#[tokio::test]
async fn side_effects_of_one_conversation_arrive_in_order_under_concurrent_events() {
    let (app, receiver) = app_with_receiver().await;
    let app = Arc::new(app);
    let key = app.api_key(&["events:write"]).await;
    // Twelve events of one conversation at once, and another conversation beside it.
    let mut tasks = Vec::new();
    for i in 0..12 {
        for conv in ["c-order", "c-other"] {
            let (app, key) = (app.clone(), key.clone());
            let body = event(
                conv,
                Some(&format!("m-{i}")),
                "I want a refund for my order",
            );
            tasks.push(tokio::spawn(async move {
                loop {
                    let a = post_event(&app, &key, &body).await;
                    if a.status != 409 {
                        break a.status;
                    }
                }
            }));
        }
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    // Two consoles deliver at once.
    let other = app.second_console();
    let (a, b) = tokio::join!(
        app.state.events.dispatch_all(),
        other.state.events.dispatch_all()
    );
    a.unwrap();
    b.unwrap();
    app.state.events.dispatch_all().await.unwrap();
    let order = receiver.order();
    let position: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let mut chained = 0;
    for key in &order {
        let a = action(&app, key).await;
        if let Some(before) = &a.after {
            chained += 1;
            assert!(
                position[before.as_str()] < position[key.as_str()],
                "{before} must arrive before {key}"
            );
        }
    }
    assert!(
        chained >= 20,
        "the actions of each conversation are chained: {chained}"
    );
    assert!(receiver.counts().values().all(|n| *n == 1), "each once");
}

#[tokio::test]
async fn safe_mode_holds_queued_side_effects_until_an_operator_releases_them() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    post_event(
        &app,
        &key,
        &event("c-hold", Some("m-1"), "I am filing a chargeback"),
    )
    .await;
    // Safe mode goes on before they are delivered: they are held, not sent.
    app.set_switches(true, true).await;
    let round = app.state.events.dispatch_all().await.unwrap();
    assert_eq!(round.held, 4, "{round:?}");
    assert_eq!(receiver.total(), 0);
    assert_eq!(count(&app, Group::Held).await, 4);
    // Releasing while safe mode is on would only hold them again: refused, saying so.
    let held_one = outbox_reads::list(&app.store, Group::Held, &Filter::default(), None, 1)
        .await
        .unwrap()
        .0;
    let early = app.state.refs.action(&held_one[0].event_id);
    let refused = app
        .state
        .events
        .move_one(
            &early,
            job_op("release").unwrap(),
            "too soon",
            "ops",
            "f0",
            &app.state.refs,
        )
        .await;
    assert!(
        matches!(&refused, Err(ops_console::model::AppError::Conflict(m)) if m.contains("Safe mode is on")),
        "{refused:?}"
    );
    let bulk = BulkRequest {
        op: job_op("release").unwrap(),
        filter: Filter::default(),
        reason: "too soon".into(),
        actor: "ops".into(),
        form_key: "f0".into(),
    };
    assert!(app.state.events.start_bulk("held", bulk).await.is_err());
    assert_eq!(count(&app, Group::Held).await, 4, "nothing moved");
    // Safe mode off again: held ones stay held until released.
    app.set_switches(false, true).await;
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0, "held until released");
    // One is discarded, the rest released in bulk.
    let held = outbox_reads::list(&app.store, Group::Held, &Filter::default(), None, 10)
        .await
        .unwrap()
        .0;
    let discard = held
        .iter()
        .find(|a| a.event_id.starts_with("act:rp_tag"))
        .unwrap();
    let key_ref = app.state.refs.action(&discard.event_id);
    assert!(app
        .state
        .events
        .move_one(
            &key_ref,
            job_op("discard").unwrap(),
            "not needed",
            "ops",
            "f1",
            &app.state.refs
        )
        .await
        .unwrap());
    let job = app
        .state
        .events
        .start_bulk(
            "held",
            BulkRequest {
                op: job_op("release").unwrap(),
                filter: Filter::default(),
                reason: "incident over".into(),
                actor: "ops".into(),
                form_key: "f2".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(job.total, 3);
    run_jobs(&app).await;
    app.state.events.dispatch_all().await.unwrap();
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 3, "{:?}", receiver.counts());
    assert!(!receiver.counts().contains_key(&discard.event_id));
    assert_eq!(
        action(&app, &discard.event_id).await.status.as_str(),
        "discarded"
    );
}

#[tokio::test]
async fn two_consoles_never_deliver_one_action_twice() {
    let (app, receiver) = app_with_receiver().await;
    let app = Arc::new(app);
    let key = app.api_key(&["events:write"]).await;
    let other = Arc::new(app.second_console());
    // Events arrive while both consoles deliver, round after round.
    let producer = {
        let (app, key) = (app.clone(), key.clone());
        tokio::spawn(async move {
            for i in 0..40 {
                let body = event(
                    &format!("c-two-{}", i % 8),
                    Some(&format!("m-{i}")),
                    "hello",
                );
                assert_eq!(post_event(&app, &key, &body).await.status, 200);
            }
        })
    };
    let deliverer = |console: Arc<TestApp>| {
        tokio::spawn(async move {
            for _ in 0..30 {
                console.state.events.dispatch_round().await.unwrap();
            }
        })
    };
    let (d1, d2) = (deliverer(app.clone()), deliverer(other.clone()));
    producer.await.unwrap();
    d1.await.unwrap();
    d2.await.unwrap();
    // An attempt that outlived its timeout on a slow machine is due again a moment later:
    // deliver until nothing is due.
    for _ in 0..20 {
        if count(&app, Group::Due).await == 0 {
            break;
        }
        app.clock.advance(chrono::Duration::seconds(3));
        app.state.events.dispatch_all().await.unwrap();
        other.state.events.dispatch_all().await.unwrap();
    }
    let counts = receiver.counts();
    assert_eq!(counts.len(), 40, "every action delivered");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
}

#[tokio::test]
async fn a_receiver_that_is_gone_stops_delivery_until_an_admin_turns_it_on() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let events = app.state.events.clone();
    let url = events
        .receiver(ops_console::model::users::Role::Admin)
        .await
        .unwrap()
        .url;
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::Settings(Settings {
                url: url.clone(),
                enabled: true,
                limits: None,
            }),
            0,
            "admin",
        )
        .await
        .unwrap();
    receiver.fail_next(1, 410);
    post_event(&app, &key, &event("c-gone", Some("m-1"), "hi")).await;
    events.dispatch_all().await.unwrap();
    let view = events
        .receiver(ops_console::model::users::Role::Admin)
        .await
        .unwrap();
    assert!(!view.enabled, "410 turned delivery off");
    assert_eq!(receiver.total(), 0);
    // The next one waits (not a dead letter) until an admin turns delivery on again.
    post_event(&app, &key, &event("c-gone2", Some("m-1"), "hi")).await;
    let round = events.dispatch_all().await.unwrap();
    assert_eq!(round.no_receiver, 1, "{round:?}");
    assert_eq!(count(&app, Group::Due).await, 1);
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::Settings(Settings {
                url,
                enabled: true,
                limits: None,
            }),
            view.version,
            "admin",
        )
        .await
        .unwrap();
    events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 1);
    assert_eq!(
        count(&app, Group::Dead).await,
        1,
        "the one that met the 410"
    );
}

#[tokio::test]
async fn expired_side_effects_and_events_are_swept_where_nothing_else_deletes_them() {
    let (app, _receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    post_event(&app, &key, &event("c-sweep", Some("m-1"), "hi")).await;
    assert_eq!(count(&app, Group::Due).await, 1);
    // Not yet expired: nothing is deleted.
    let now = app.clock.now().timestamp();
    ops_console::server::store::sweep::all(&app.store, now)
        .await
        .unwrap();
    assert_eq!(count(&app, Group::Due).await, 1);
    // Past every lifetime (the outbox keeps 30 days; events 30): all gone.
    let later = now + 400 * 86_400;
    let swept = ops_console::server::store::sweep::all(&app.store, later)
        .await
        .unwrap();
    let deleted: usize = swept.iter().map(|(_, _, d)| d).sum();
    assert!(deleted >= 3, "event, action and audit records: {swept:?}");
    assert_eq!(count(&app, Group::Due).await, 0);
    assert!(records::get_event(&app.store, "evt:rp:c-sweep:m-1")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_long_queue_behind_a_retrying_side_effect_is_delivered_in_order_once_it_goes() {
    let (app, receiver) = app_with_receiver_retrying("1m,1m").await;
    let key = app.api_key(&["events:write"]).await;
    let text = "I want a refund for my order";
    // The conversation's first side effect fails once and waits a minute to retry...
    receiver.fail_next(1, 503);
    let first = event("c-long", Some("m-00"), text);
    assert_eq!(post_event(&app, &key, &first).await.status, 200);
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0);
    // ...while more of its conversation queue behind it than a round reads of a partition.
    for i in 1..40 {
        let body = event("c-long", Some(&format!("m-{i:02}")), text);
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0, "all wait for the first");
    app.clock.advance(Duration::seconds(70));
    app.state.events.dispatch_all().await.unwrap();
    let order = receiver.order();
    assert!(order.len() >= 40, "every one delivered: {}", order.len());
    let expected: Vec<String> = (0..40).map(|i| format!("m-{i:02}")).collect();
    let arrived: Vec<String> = order
        .iter()
        .map(|k| k.rsplit(':').next().unwrap().to_string())
        .collect();
    let mut firsts = arrived.clone();
    firsts.dedup();
    assert_eq!(firsts, expected, "in the order they were queued");
    assert!(receiver.counts().values().all(|n| *n == 1), "each once");
}

#[tokio::test]
async fn an_event_sent_again_after_its_key_expired_is_new_and_its_side_effects_go_again() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let body = event("c-again", Some("m-1"), "Where is my order?");
    assert_eq!(post_event(&app, &key, &body).await.status, 200);
    app.state.events.dispatch_all().await.unwrap();
    let first = receiver.total();
    assert!(first >= 1);
    // 31 days on, the key and its side effects' records have expired (TTL has not deleted
    // them yet): the same message is a new event, recorded whole.
    app.clock.advance(Duration::days(31));
    let key = app.api_key(&["events:write"]).await;
    let again = post_event(&app, &key, &body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json()["duplicate"], false);
    let queued = again.json()["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["result"] == "queued")
        .count();
    assert!(queued >= 1, "{}", again.body);
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(
        receiver.total(),
        first + queued,
        "its side effects went again"
    );
    let rec = action(&app, "act:rp_route:c-again:m-1").await;
    assert_eq!(rec.status.as_str(), "delivered");
}

#[tokio::test]
async fn a_receiver_named_only_in_the_settings_that_is_gone_is_turned_off_too() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let events = app.state.events.clone();
    assert_eq!(
        events
            .receiver(ops_console::model::users::Role::Admin)
            .await
            .unwrap()
            .version,
        0,
        "never saved"
    );
    receiver.fail_next(1, 410);
    post_event(&app, &key, &event("c-gone-cfg", Some("m-1"), "hi")).await;
    events.dispatch_all().await.unwrap();
    let view = events
        .receiver(ops_console::model::users::Role::Admin)
        .await
        .unwrap();
    assert!(!view.enabled, "410 turned delivery off: {view:?}");
    post_event(&app, &key, &event("c-gone-cfg2", Some("m-1"), "hi")).await;
    let round = events.dispatch_all().await.unwrap();
    assert_eq!(round.no_receiver, 1, "the next one waits: {round:?}");
    assert_eq!(receiver.total(), 0);
    // An admin turns it on again; the secret from the settings still signs.
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            Change::Settings(Settings {
                url: view.url.clone(),
                enabled: true,
                limits: None,
            }),
            view.version,
            "admin",
        )
        .await
        .unwrap();
    events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 1);
}

#[tokio::test]
async fn the_outbox_lists_one_conversations_side_effects_and_the_delivered_ones() {
    use ops_console::model::users::Role;
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    for (i, conv) in ["c-narrow", "c-beside", "c-narrow"].iter().enumerate() {
        let body = event(
            conv,
            Some(&format!("m-{i}")),
            "I want a refund for my order",
        );
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    let events = &app.state.events;
    let refs = &app.state.refs;
    let page = |group: &'static str, conversation: String| async move {
        events
            .outbox_page(
                group,
                Filter::default(),
                &conversation,
                None,
                refs,
                Role::Viewer,
            )
            .await
            .unwrap()
    };
    let narrow = refs.of_id("c-narrow");
    // Before delivery: one conversation's queued side effects, by its reference only.
    let queued = page("due", narrow.clone()).await;
    let queued_all = page("due", String::new()).await;
    assert!(!queued.rows.is_empty());
    assert!(
        queued.rows.len() < queued_all.rows.len(),
        "the other conversation's are left out"
    );
    // References are new at every answer: they are compared by what they open to.
    let opened = |r: &str| refs.decode(r).map(|(_, id)| id);
    assert!(queued
        .rows
        .iter()
        .all(|r| opened(&r.conversation_ref).as_deref() == Some("c-narrow")));
    assert_eq!(
        queued
            .conversation
            .as_ref()
            .and_then(|c| opened(&c.reference)),
        Some("c-narrow".to_string())
    );
    assert!(page("delivered", narrow.clone()).await.rows.is_empty());

    events.dispatch_all().await.unwrap();
    // Delivered: exactly what the receiver took of this conversation, and nothing is due.
    let mut took: Vec<String> = Vec::new();
    for k in receiver.order() {
        if action(&app, &k).await.conversation_id == "c-narrow" {
            took.push(k);
        }
    }
    assert!(!took.is_empty());
    let delivered = page("delivered", narrow.clone()).await;
    assert_eq!(delivered.rows.len(), took.len(), "{took:?}");
    assert!(delivered.rows.iter().all(|r| r.status == "delivered"));
    assert!(page("due", narrow.clone()).await.rows.is_empty());
    let all_delivered = page("delivered", String::new()).await.rows.len();
    assert_eq!(all_delivered, receiver.order().len());
    // A group that does not exist is the reader's mistake.
    let wrong = events
        .outbox_page("sent", Filter::default(), "", None, refs, Role::Viewer)
        .await;
    assert!(wrong.is_err());
}

/// An operator pauses the deliveries with a reason: nothing is claimed or sent, no retry
/// schedule is spent, and the Outbox says who and why; a viewer can do neither; a resume
/// names the pause it ends (never a newer one); then each waiting action goes once.
#[tokio::test]
async fn an_operator_pauses_deliveries_and_resumes_them_and_nothing_is_spent_meanwhile() {
    use ops_console::api::outbox::PauseReceiver;
    use ops_console::model::users::Role;
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let olga = app.session_as("olga", Role::Operator).await;
    let vic = app.session_as("vic", Role::Viewer).await;
    let pause = |who: &str, form_key: &'static str| {
        let who = who.to_string();
        let app = &app;
        async move {
            app.call::<PauseReceiver>(
                &[
                    ("pause_id", ""),
                    ("reason", "receiver maintenance"),
                    ("form_key", form_key),
                ],
                Some(&who),
            )
            .await
        }
    };
    assert_eq!(pause(&vic, "form-key-pause-0001").await.status, 403);
    let empty = app
        .call::<PauseReceiver>(
            &[
                ("pause_id", ""),
                ("reason", " "),
                ("form_key", "form-key-pause-0002"),
            ],
            Some(&olga),
        )
        .await;
    assert_eq!(empty.status, 400, "{}", empty.body);
    let paused = pause(&olga, "form-key-pause-0003").await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    // The same form again (a double click): one pause, the first answer.
    let again = pause(&olga, "form-key-pause-0003").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body, paused.body);
    // A second pause while paused is refused.
    assert_eq!(pause(&olga, "form-key-pause-0004").await.status, 409);

    post_event(&app, &key, &event("c-pause", Some("m-1"), "hi")).await;
    // Both consoles: nothing claimed, nothing sent.
    let other = app.second_console();
    let round = app.state.events.dispatch_all().await.unwrap();
    other.state.events.dispatch_all().await.unwrap();
    assert_eq!((round.paused, receiver.total()), (1, 0), "{round:?}");
    app.clock.advance(Duration::minutes(10));
    app.state.events.dispatch_all().await.unwrap();
    let waiting = action(&app, "act:rp_route:c-pause:m-1").await;
    assert_eq!(
        (waiting.status.as_str(), waiting.attempts),
        ("queued", 0),
        "no schedule spent"
    );
    let view = app.state.events.receiver(Role::Viewer).await.unwrap();
    let shown = view.waits.expect("the Outbox says it is paused");
    assert!(
        shown.words.starts_with("Paused by olga since ")
            && shown.words.contains("“receiver maintenance”"),
        "{}",
        shown.words
    );
    let id = shown.pause_id.expect("the pause a resume names");

    let resume = |id: String, form_key: &'static str, who: String| {
        let app = &app;
        async move {
            app.call::<PauseReceiver>(
                &[
                    ("pause_id", &id),
                    ("reason", "maintenance done"),
                    ("form_key", form_key),
                ],
                Some(&who),
            )
            .await
        }
    };
    assert_eq!(
        resume(id.clone(), "form-key-pause-0005", vic.clone())
            .await
            .status,
        403
    );
    assert_eq!(
        resume(
            "0123456789abcdef".into(),
            "form-key-pause-0006",
            olga.clone()
        )
        .await
        .status,
        409,
        "not this page's pause"
    );
    assert_eq!(
        resume("../x".into(), "form-key-pause-0007", olga.clone())
            .await
            .status,
        400
    );
    let resumed = resume(id, "form-key-pause-0008", olga.clone()).await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.counts().get("act:rp_route:c-pause:m-1"), Some(&1));
    let delivered = action(&app, "act:rp_route:c-pause:m-1").await;
    assert_eq!(
        delivered.attempts, 1,
        "one attempt, the first of its schedule"
    );
    let audits = app.dump_tables().await;
    assert!(
        audits.contains("receiver_pause") && audits.contains("receiver_resume"),
        "both audited"
    );
}

/// A 429 with `Retry-After` answered to one console stops every console's sends to the
/// receiver for that long, not only the answered action's; then they go again.
#[tokio::test]
async fn a_429_with_retry_after_pauses_every_consoles_sends_for_that_long() {
    use crate::receiver::RETRY_AFTER_SECS;
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let other = app.second_console();
    post_event(&app, &key, &event("c-429-a", Some("m-1"), "hi")).await;
    receiver.fail_next(1, 429);
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 0);
    // Another conversation's action, due now, waits on the other console too.
    post_event(&app, &key, &event("c-429-b", Some("m-1"), "hi")).await;
    let round = other.state.events.dispatch_all().await.unwrap();
    assert_eq!((round.paused, receiver.total()), (1, 0), "{round:?}");
    let b = action(&app, "act:rp_route:c-429-b:m-1").await;
    assert_eq!(b.attempts, 0, "not claimed: nothing spent");
    let view = app
        .state
        .events
        .receiver(ops_console::model::users::Role::Viewer)
        .await
        .unwrap();
    assert!(
        view.waits
            .as_ref()
            .is_some_and(|p| p.words.contains("(429)") && p.pause_id.is_none()),
        "{view:?}"
    );
    app.clock.advance(Duration::seconds(RETRY_AFTER_SECS + 1));
    other.state.events.dispatch_all().await.unwrap();
    app.state.events.dispatch_all().await.unwrap();
    let counts = receiver.counts();
    assert_eq!(
        (
            counts.get("act:rp_route:c-429-a:m-1"),
            counts.get("act:rp_route:c-429-b:m-1")
        ),
        (Some(&1), Some(&1)),
        "{counts:?}"
    );
}
