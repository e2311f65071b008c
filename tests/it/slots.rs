//! The receiver's concurrency limit on DynamoDB Local, with two consoles (docs/events.md,
//! "Concurrency limit"): together they never have more requests at the receiver than its
//! slots, whatever each one could send at once; a slot whose holder died is free once its
//! lease has run out, and not before. The receiver counts the requests it is answering.

use std::time::Duration;

use crate::events::two_consoles_deliver;
use crate::events::{event, post_event};
use crate::helpers::spawn_app_with;
use crate::receiver::Receiver;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::store::events::slots;

#[tokio::test]
async fn two_consoles_together_keep_within_the_receivers_slots() {
    const SLOTS: usize = 2;
    const ACTIONS: usize = 12;
    // Slow answers: each console alone would have six at the receiver at once.
    let slow = |r: &Receiver| r.answer_ms.store(300, std::sync::atomic::Ordering::SeqCst);
    let (receiver, app, _) = two_consoles_deliver("c-slot", ACTIONS, slow, |c| {
        c.events.receiver_concurrency = SLOTS as i64;
        c.events.dispatch_concurrency = 6;
    })
    .await;
    assert_eq!(receiver.total(), ACTIONS, "every side effect delivered");
    assert!(receiver.counts().values().all(|n| *n == 1), "once each");
    let most = receiver.most_at_once();
    assert!(
        most <= SLOTS,
        "{most} requests at the receiver at once, {SLOTS} slots"
    );
    // The slots were held in DynamoDB, and every one was given back.
    let items = app.dump_tables().await;
    assert!(items.contains("receiver-slot#"), "no slot was taken");
}

#[tokio::test]
async fn a_slot_is_free_again_when_its_lease_runs_out_and_not_before() {
    let app = spawn_app_with(|_| {}).await;
    let (store, receiver) = (&app.store, "r-lease");
    let t = 1_800_000_000_000_i64;
    // Two slots, both held until t + 1000 (their holders die holding them).
    for holder in ["a", "b"] {
        let got = slots::take(store, receiver, 2, holder, t, t + 1000, 0)
            .await
            .unwrap();
        assert!(got.is_some(), "{holder} took a slot");
    }
    assert_eq!(
        slots::take(store, receiver, 2, "c", t + 999, t + 2000, 0)
            .await
            .unwrap(),
        None
    );
    // A lost answer sent again finds the slot its own.
    assert_eq!(
        slots::take(store, receiver, 2, "a", t + 10, t + 1000, 0)
            .await
            .unwrap(),
        Some(0)
    );
    // Once the lease has run out, another takes it.
    let late = slots::take(store, receiver, 2, "c", t + 1001, t + 2000, 0)
        .await
        .unwrap();
    assert_eq!(late, Some(0), "an expired slot was not taken");
    // One slot: a holder whose lease ran out cannot give back what is now another's.
    let one = "r-give-back";
    assert_eq!(
        slots::take(store, one, 1, "x", t, t + 1000, 0)
            .await
            .unwrap(),
        Some(0)
    );
    assert_eq!(
        slots::take(store, one, 1, "y", t + 1001, t + 2000, 0)
            .await
            .unwrap(),
        Some(0)
    );
    slots::give_back(store, one, 0, "x").await.unwrap();
    assert_eq!(
        slots::take(store, one, 1, "z", t + 1002, t + 3000, 0)
            .await
            .unwrap(),
        None
    );
    // Given back by its holder, it is free at once.
    slots::give_back(store, one, 0, "y").await.unwrap();
    assert_eq!(
        slots::take(store, one, 1, "z", t + 1003, t + 3000, 0)
            .await
            .unwrap(),
        Some(0)
    );
}

#[tokio::test]
async fn a_wide_limit_reads_a_window_of_slots_per_delivery_not_every_slot() {
    let proxy = crate::helpers::faulty_dynamodb().await;
    let (app, _direct) = crate::helpers::spawn_app_via(&proxy, |_| {}).await;
    let (store, receiver) = (&app.store, "r-wide");
    let t = 1_800_000_000_000_i64;
    // 256 slots, most of them free: a delivery reads one window of them, not all 256.
    let before = proxy.report();
    let got = slots::take(store, receiver, 256, "a", t, t + 1000, 40)
        .await
        .unwrap();
    let spent = proxy.report().units_since(&before);
    assert_eq!(got, Some(40), "the first free slot from where it started");
    // One read of a window and one write; every slot read at once costs three batches.
    assert!(
        spent.calls <= 2 && spent.read <= slots::WINDOW as f64,
        "a free slot among 256 cost {spent:?}"
    );
    // Every slot of the window held: the next window is read, and a slot of it taken.
    for (i, holder) in (0..slots::WINDOW).map(|i| (i, format!("h{i}"))) {
        let got = slots::take(store, receiver, 256, &holder, t, t + 1000, 40 + i)
            .await
            .unwrap();
        assert!(got.is_some(), "{holder} took a slot");
    }
    let got = slots::take(store, receiver, 256, "late", t, t + 1000, 40)
        .await
        .unwrap();
    assert_eq!(
        got,
        Some(40 + slots::WINDOW + 1),
        "the first free one past the held"
    );
    // Every slot held: none is taken, and every one was looked at.
    let few = "r-few";
    for holder in ["a", "b", "c"] {
        assert!(slots::take(store, few, 3, holder, t, t + 1000, 0)
            .await
            .unwrap()
            .is_some());
    }
    assert_eq!(
        slots::take(store, few, 3, "d", t, t + 1000, 2)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_dispatcher_told_to_stop_ends_the_delivery_under_way_and_gives_its_slot_back() {
    let secret = SigningSecret::generate();
    let (receiver, url) = Receiver::start(vec![secret.clone()]).await;
    receiver
        .answer_ms
        .store(1_500, std::sync::atomic::Ordering::SeqCst);
    let hook = url.clone();
    let app = spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.receiver_concurrency = 1;
    })
    .await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    post_event(&app, &key, &event("c-slot-stop", Some("m-1"), "hi")).await;
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let events = app.state.events.clone();
    let dispatcher = tokio::spawn(async move { events.run_dispatcher(stop).await });
    // A deployment stops the console while the receiver is answering.
    let started = std::time::Instant::now();
    while receiver
        .in_flight
        .0
        .load(std::sync::atomic::Ordering::SeqCst)
        == 0
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing was sent"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stopping.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), dispatcher)
        .await
        .expect("the dispatcher stopped")
        .unwrap();
    // The answer was recorded, not left in flight for another console to send again.
    let rec =
        ops_console::server::store::events::get_action(&app.store, "act:rp_route:c-slot-stop:m-1")
            .await
            .unwrap()
            .unwrap();
    assert_eq!(rec.status.as_str(), "delivered");
    assert_eq!(receiver.total(), 1);
    // And its slot is free: another takes it at once.
    let now = chrono::Utc::now().timestamp_millis();
    let receiver_key = ops_console::server::store::events::health::receiver_key(&hook);
    let free = slots::take(&app.store, &receiver_key, 1, "next", now, now + 1000, 0).await;
    assert_eq!(free.unwrap(), Some(0), "the slot was not given back");
}
