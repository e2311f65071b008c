//! The receiver's rate limit on DynamoDB Local, with two consoles (docs/events.md, "Rate
//! limit"): together they never send more than `rate × w + burst` in any w seconds,
//! whatever each one has ready; a burst goes at once after a quiet spell; and the budget is
//! spread over several items, none taking every send. The receiver records when each
//! request arrived.

use std::time::Duration;

use crate::events::two_consoles_deliver;

/// The most arrivals within any `window`.
fn busiest(arrivals: &[std::time::Instant], window: Duration) -> usize {
    let mut sorted = arrivals.to_vec();
    sorted.sort();
    (0..sorted.len())
        .map(|i| {
            sorted[i..]
                .iter()
                .take_while(|t| **t - sorted[i] < window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn two_consoles_together_stay_within_the_receivers_rate() {
    const RATE: usize = 5;
    const ACTIONS: usize = 30;
    let (receiver, app, took) = two_consoles_deliver(
        "c-rate",
        ACTIONS,
        |_| {},
        |c| {
            c.events.receiver_rate = RATE as i64;
            c.events.dispatch_concurrency = 8;
        },
    )
    .await;
    assert_eq!(receiver.total(), ACTIONS, "every side effect delivered");
    assert!(receiver.counts().values().all(|n| *n == 1), "once each");
    let arrivals = receiver.arrivals.lock().unwrap().clone();
    // A burst of the rate: any w seconds hold at most 5w + 5 (10 in one, 20 in three); a
    // second's rate more allows for a send's way from its count to the receiver (a claim,
    // a connection) on a loaded machine.
    let most = busiest(&arrivals, Duration::from_secs(1));
    assert!(
        most <= 3 * RATE,
        "{most} sends within one second, rate {RATE}"
    );
    let most = busiest(&arrivals, Duration::from_secs(3));
    assert!(
        most <= 5 * RATE,
        "{most} sends within three seconds, rate {RATE}"
    );
    assert!(
        took >= Duration::from_secs((ACTIONS / RATE - 1) as u64),
        "{ACTIONS} sends at {RATE} a second took only {took:?}"
    );
    // The budget of a second is spread over its shards, each holding its share.
    let items = app.dump_tables().await;
    let shards: std::collections::BTreeSet<&str> = items
        .match_indices("receiver-rate#")
        .filter_map(|(i, _)| items[i..].split('"').next())
        .filter_map(|pk| pk.rsplit('#').next())
        .collect();
    assert!(
        shards.len() > 1,
        "more than one item took the sends: {shards:?}"
    );
}

#[tokio::test]
async fn a_burst_goes_at_once_after_a_quiet_spell_and_then_the_rate_holds() {
    const RATE: usize = 2;
    const BURST: usize = 16;
    const ACTIONS: usize = 30;
    let (receiver, app, took) = two_consoles_deliver(
        "c-burst",
        ACTIONS,
        |_| {},
        |c| {
            c.events.receiver_rate = RATE as i64;
            c.events.receiver_burst = BURST as i64;
            c.events.dispatch_concurrency = 8;
        },
    )
    .await;
    assert_eq!(receiver.total(), ACTIONS, "every side effect delivered");
    assert!(receiver.counts().values().all(|n| *n == 1), "once each");
    // The Outbox and the Overview say the limits in words.
    let view = app
        .state
        .events
        .receiver(ops_console::model::users::Role::Viewer)
        .await
        .unwrap();
    assert_eq!(
        view.limits,
        "Every console together: at most 2 requests a second (a burst of 16)."
    );
    let arrivals = receiver.arrivals.lock().unwrap().clone();
    let three = Duration::from_secs(3);
    let most = busiest(&arrivals, three);
    // Without a burst, three seconds span at most four of the rate's: 8 sends.
    assert!(
        most >= 12,
        "only {most} sends within three seconds: the burst of {BURST} did not go"
    );
    // The bound, plus a second's rate for a send's way from its count to the receiver.
    assert!(
        most <= 3 * RATE + BURST + RATE,
        "{most} sends within three seconds, rate {RATE}, burst {BURST}"
    );
    assert!(
        took >= Duration::from_secs(((ACTIONS - BURST) / RATE - 1) as u64),
        "{ACTIONS} sends at {RATE} a second after a burst of {BURST} took only {took:?}"
    );
}

/// The limits an admin saves with the receiver hold on every console, whatever each one's
/// settings say: here one console has no rate and the other a rate of 100, and together
/// they keep to the saved rate of 2 (a burst of 2) and one request at once. Limits no
/// console could keep are refused, naming the field, and change nothing.
#[tokio::test]
async fn the_limits_saved_with_the_receiver_hold_on_every_console_whatever_its_settings() {
    use ops_console::model::outbox::ReceiverLimits;
    use ops_console::model::users::Role;
    use ops_console::model::AppError;
    use ops_console::server::services::events::receiver::{Change, Settings};
    const ACTIONS: usize = 10;
    let secret = ops_console::server::outbound::signature::SigningSecret::generate();
    let (receiver, url) = crate::receiver::Receiver::start(vec![secret.clone()]).await;
    let app = crate::helpers::spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.dispatch_concurrency = 8;
    })
    .await;
    app.set_switches(false, true).await;
    let other = app.second_console_with(|c| c.events.receiver_rate = 100);
    let events = &app.state.events;
    let view = events.receiver(Role::Admin).await.unwrap();
    let change = |rate, burst, concurrency| {
        Change::Settings(Settings {
            url: view.url.clone(),
            enabled: true,
            limits: Some(ReceiverLimits {
                rate,
                burst,
                concurrency,
            }),
        })
    };
    for (refused, field) in [((6_000, 7, 0), "burst"), ((2, 0, 300), "concurrency")] {
        let (rate, burst, concurrency) = refused;
        let err = events
            .change_receiver(
                &ops_console::model::outbox::ReceiverName::default_one(),
                change(rate, burst, concurrency),
                view.version,
                "admin",
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, AppError::Invalid { field: f, .. } if f == field),
            "{err:?}"
        );
    }
    events
        .change_receiver(
            &ops_console::model::outbox::ReceiverName::default_one(),
            change(2, 2, 1),
            view.version,
            "admin",
        )
        .await
        .unwrap();
    // Every console reads the same limits, and the REST state shows them.
    let words = "Every console together: at most 2 requests a second (a burst of 2) and 1 at once.";
    for console in [&app, &other] {
        let seen = console.state.events.receiver(Role::Viewer).await.unwrap();
        assert_eq!(seen.limits, words);
    }
    let key = app.api_key(&["receiver:read"]).await;
    let state = app.api("GET", "/api/v1/receiver", &key, None).await;
    assert_eq!(
        (
            state.json()["rate_per_second"].clone(),
            state.json()["burst"].clone(),
            state.json()["concurrency"].clone()
        ),
        (2.into(), 2.into(), 1.into()),
        "{}",
        state.body
    );
    // The change is audited with the limits in words.
    assert!(
        app.dump_tables()
            .await
            .contains(&format!("limits: {words}")),
        "the receiver's audit record names the limits"
    );
    // Limits no console could keep, written past the form (by hand, say), are not kept:
    // the settings' apply (none here) until an admin saves good ones.
    {
        use ops_console::server::store::events::receiver as stored;
        let mut item = stored::load(
            &app.store,
            &ops_console::model::outbox::ReceiverName::default_one(),
        )
        .await
        .unwrap()
        .unwrap();
        let good = item.clone();
        item.limits = Some(ReceiverLimits {
            rate: i64::MAX,
            burst: 0,
            concurrency: 0,
        });
        let by_hand = |next: &stored::ReceiverItem, id: &str| {
            let audit = ops_console::server::store::audit::AuditItem::new(
                stored::AUDIT_PARTITION,
                "receiver_change",
                app.clock.now(),
                id,
                1,
            );
            let (store, next) = (app.store.clone(), next.clone());
            async move { stored::save(&store, &next, next.version, &audit).await }
        };
        assert!(by_hand(&item, "by-hand").await.unwrap());
        let seen = events.receiver(Role::Viewer).await.unwrap();
        assert_eq!(seen.limits, "", "refused limits: the settings' (none)");
        assert!(by_hand(&good, "by-hand-back").await.unwrap());
    }

    let key = app.api_key(&["events:write"]).await;
    for c in 0..ACTIONS {
        let body = crate::events::event(&format!("c-saved-{c}"), Some("m-1"), "hi");
        crate::events::post_event(&app, &key, &body).await;
    }
    let took = crate::events::both_deliver(&app, &other, &receiver, ACTIONS).await;
    assert_eq!(receiver.total(), ACTIONS, "every side effect delivered");
    assert!(receiver.counts().values().all(|n| *n == 1), "once each");
    let arrivals = receiver.arrivals.lock().unwrap().clone();
    // The bound, 3 × 2 + 2, plus a second's rate for a send's way to the receiver.
    let most = busiest(&arrivals, Duration::from_secs(3));
    assert!(most <= 10, "{most} sends within three seconds, rate 2");
    assert!(
        took >= Duration::from_secs(((ACTIONS - 2) / 2 - 1) as u64),
        "{ACTIONS} sends at 2 a second took only {took:?}"
    );
}

/// The budget's items straight in DynamoDB Local: a burst's worth goes at once, the next
/// send waits one interval (and the item says when), and a time set by a console whose
/// clock ran far ahead is started again rather than starving every other console.
#[tokio::test]
async fn the_budget_holds_its_burst_and_a_clock_far_ahead_starves_no_one() {
    use ops_console::server::store::events::rate::{take, Seen, Taken, MAX_SKEW_US};
    let app = crate::helpers::spawn_app().await;
    let receiver = format!("r{}", ops_console::server::ids::random_hex(4));
    let now = 1_900_000_000_000_000_i64;
    // A rate of 2 and a burst of 2: two items, each one send a second and one at once.
    let at = |t: i64| move || t;
    let seen = Seen::default();
    for _ in 0..2 {
        let got = take(&app.store, &seen, &receiver, at(now), (2, 2), 0).await;
        assert_eq!(got.unwrap(), Taken::Yes);
    }
    let spent = take(&app.store, &seen, &receiver, at(now), (2, 2), 0).await;
    assert!(
        matches!(spent.unwrap(), Taken::No { room_at_us, .. } if room_at_us == now + 1_000_000),
        "the third send within the burst waits a second"
    );
    // Another console, which has seen nothing, is refused by DynamoDB the same.
    let fresh = Seen::default();
    let other = take(&app.store, &fresh, &receiver, at(now + 500_000), (2, 2), 0).await;
    assert!(matches!(other.unwrap(), Taken::No { .. }));
    // A console that reads other limits (a change on its way) counts on items of its own:
    // it neither splits nor spends the others' shares.
    let changed = take(&app.store, &fresh, &receiver, at(now + 500_000), (2, 3), 0).await;
    assert_eq!(changed.unwrap(), Taken::Yes);
    let items = app.dump_tables().await;
    let item = items
        .lines()
        .find(|l| l.contains(&format!("receiver-rate#{receiver}#2-3#0")))
        .expect("an item named by the limits");
    assert!(
        item.contains("expires_at"),
        "gone with TTL once unused: {item}"
    );
    let later = take(&app.store, &seen, &receiver, at(now + 1_000_000), (2, 2), 0).await;
    assert_eq!(later.unwrap(), Taken::Yes, "room again after one interval");

    // A console whose clock runs a minute ahead spends both items up to its own time...
    let ahead = now + 60_000_000;
    for _ in 0..2 {
        let got = take(
            &app.store,
            &Seen::default(),
            &receiver,
            at(ahead),
            (2, 2),
            0,
        )
        .await;
        assert_eq!(got.unwrap(), Taken::Yes);
    }
    // ...which lies further ahead than a burst and the allowed skew: started again.
    let back = now + 2_000_000;
    assert!(ahead > back + 1_000_000 + MAX_SKEW_US);
    let got = take(&app.store, &Seen::default(), &receiver, at(back), (2, 2), 0).await;
    assert_eq!(got.unwrap(), Taken::Yes, "not starved by a clock far ahead");
}
