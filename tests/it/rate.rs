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
    // Sends are counted in whole seconds of the clock, so a window of w seconds spans at
    // most w + 1 of them; one second more allows for a send's way from its count to the
    // receiver (a claim, a connection) on a loaded machine.
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
