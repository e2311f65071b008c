//! The receiver's breaker on DynamoDB Local, with two consoles (docs/events.md, "Breaker"):
//! a receiver that is down opens it after a run of failures, and from then on nothing is
//! claimed but one probe per interval, so no action reaches a dead letter and no schedule is
//! spent; the first answered probe closes it and the parked actions drain once each, in
//! order per conversation. An operator opens and closes it by hand, with a reason.

use chrono::Duration;

use crate::events::{app_with_receiver, event, post_event};
use crate::helpers::TestApp;
use ops_console::api::outbox::ReceiverBreaker;
use ops_console::model::users::Role;
use ops_console::server::store::events::outbox::Group;
use ops_console::server::store::events::outbox_reads::{self, Filter};
use ops_console::server::store::events::{self as records, ActionStatus};

async fn count(app: &TestApp, group: Group) -> u64 {
    outbox_reads::count(&app.store, group, &Filter::default())
        .await
        .unwrap()
}

/// Requests the receiver got, answered or not.
fn requests(receiver: &crate::receiver::Receiver, failing_from: usize) -> usize {
    receiver.total() + (failing_from - receiver.fail_first.lock().unwrap().0)
}

/// Both consoles' dispatchers, at once.
async fn both_rounds(app: &TestApp, other: &TestApp) {
    let (a, b) = tokio::join!(
        app.state.events.dispatch_all(),
        other.state.events.dispatch_all()
    );
    a.unwrap();
    b.unwrap();
}

#[tokio::test]
async fn a_receiver_down_parks_deliveries_and_after_one_answered_probe_each_goes_once_in_order() {
    let (app, receiver) = app_with_receiver().await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    const DOWN: usize = 10_000;
    receiver.fail_next(DOWN, 503);
    // Three messages of one conversation (they go in order) and three conversations.
    let mut ids = Vec::new();
    for m in 1..=3 {
        post_event(&app, &key, &event("c-brk", Some(&format!("m-{m}")), "hi")).await;
        ids.push(format!("act:rp_route:c-brk:m-{m}"));
    }
    for c in 1..=3 {
        post_event(&app, &key, &event(&format!("c-brk-{c}"), Some("m-1"), "hi")).await;
        ids.push(format!("act:rp_route:c-brk-{c}:m-1"));
    }
    // Long enough for every schedule (three attempts, 1 s and 2 s apart) to be spent
    // several times over without the breaker.
    for _ in 0..8 {
        both_rounds(&app, &other).await;
        app.clock.advance(Duration::milliseconds(2_100));
    }
    assert_eq!(count(&app, Group::Dead).await, 0, "no dead letter");
    let view = app.state.events.receiver(Role::Viewer).await.unwrap();
    let open = view.waits.expect("the breaker is open");
    assert!(
        open.words.contains("(system)")
            && open.words.contains("failed attempts in a row")
            && open.words.contains("receiver answered 503"),
        "{}",
        open.words
    );
    let sent = requests(&receiver, DOWN);
    assert!(
        (5..12).contains(&sent),
        "the run that opened it, and no more: {sent}"
    );
    let judged = app.state.alerts.judge().await.unwrap();
    let rule = judged
        .iter()
        .find(|j| j.id == "outbox.receiver_breaker")
        .expect("the breaker's rule");
    assert!(
        rule.breached && rule.summary.contains("receiver answered 503"),
        "{rule:?}"
    );

    // Parked: nothing goes before the probe is due, whichever console looks.
    app.clock.advance(Duration::seconds(10));
    let round = app.state.events.dispatch_all().await.unwrap();
    assert!(round.parked > 0, "{round:?}");
    assert_eq!(requests(&receiver, DOWN), sent, "nothing sent while parked");
    // The probe is due: one console sends one, the oldest; it fails and waits again, its
    // schedule unspent.
    app.clock.advance(Duration::seconds(31));
    both_rounds(&app, &other).await;
    assert_eq!(requests(&receiver, DOWN), sent + 1, "one probe");
    for id in &ids {
        let a = records::get_action(&app.store, id).await.unwrap().unwrap();
        assert!(
            matches!(a.status, ActionStatus::Queued | ActionStatus::Retry),
            "{id}: {a:?}"
        );
        assert!(
            a.attempts - a.round_start < 3,
            "{id}: the schedule is not spent ({} attempts, {} unspent)",
            a.attempts,
            a.round_start
        );
    }

    // The receiver is back: the next probe is answered, the breaker closes, and every
    // parked action goes once, in order within its conversation.
    receiver.fail_next(0, 503);
    app.clock.advance(Duration::seconds(31));
    both_rounds(&app, &other).await;
    both_rounds(&app, &other).await;
    let counts = receiver.counts();
    for id in &ids {
        assert_eq!(counts.get(id), Some(&1), "{id} once: {counts:?}");
    }
    let order: Vec<String> = receiver
        .order()
        .into_iter()
        .filter(|id| id.contains(":c-brk:"))
        .collect();
    assert_eq!(order, ids[..3].to_vec(), "in order");
    assert_eq!(count(&app, Group::Dead).await, 0);
    let view = app.state.events.receiver(Role::Viewer).await.unwrap();
    assert_eq!(view.waits, None, "closed");
    let audits = app.dump_tables().await;
    assert!(
        audits.contains("receiver_breaker_open") && audits.contains("a probe was answered"),
        "opened and closed by the system, audited"
    );
}

/// An operator opens the breaker by hand and closes it, each with a reason and audited; a
/// viewer can do neither; a close names the opening it ends; and safe mode still holds what
/// is due while the breaker is open.
#[tokio::test]
async fn an_operator_opens_and_closes_the_breaker_and_safe_mode_still_holds() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    let olga = app.session_as("olga", Role::Operator).await;
    let vic = app.session_as("vic", Role::Viewer).await;
    let breaker = |id: String, reason: &'static str, form_key: &'static str, who: String| {
        let app = &app;
        async move {
            app.call::<ReceiverBreaker>(
                &[
                    ("breaker_id", &id),
                    ("reason", reason),
                    ("form_key", form_key),
                ],
                Some(&who),
            )
            .await
        }
    };
    let open = |form_key: &'static str, who: &String| {
        breaker(String::new(), "receiver migration", form_key, who.clone())
    };
    assert_eq!(open("form-key-brk-0001", &vic).await.status, 403);
    let empty = breaker(String::new(), " ", "form-key-brk-0002", olga.clone()).await;
    assert_eq!(empty.status, 400, "{}", empty.body);
    let opened = open("form-key-brk-0003", &olga).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let again = open("form-key-brk-0003", &olga).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body, opened.body, "a double click: one opening");
    assert_eq!(open("form-key-brk-0004", &olga).await.status, 409);

    post_event(&app, &key, &event("c-brk-hand", Some("m-1"), "hi")).await;
    let round = app.state.events.dispatch_all().await.unwrap();
    assert_eq!((round.parked, receiver.total()), (1, 0), "{round:?}");
    // Safe mode holds what is due at delivery time, breaker or not.
    app.set_switches(true, true).await;
    let round = app.state.events.dispatch_all().await.unwrap();
    assert_eq!(round.held, 1, "{round:?}");
    assert_eq!(count(&app, Group::Held).await, 1);
    app.set_switches(false, true).await;

    let view = app.state.events.receiver(Role::Viewer).await.unwrap();
    let shown = view.waits.expect("open");
    assert!(
        shown.words.contains("(olga)") && shown.words.contains("“receiver migration”"),
        "{}",
        shown.words
    );
    let id = shown.breaker_id.expect("the opening a close names");
    assert_eq!(
        breaker(id.clone(), "done", "form-key-brk-0005", vic.clone())
            .await
            .status,
        403
    );
    assert_eq!(
        breaker("../x".into(), "done", "form-key-brk-0006", olga.clone())
            .await
            .status,
        400
    );
    assert_eq!(
        breaker(
            "0123456789abcdef".into(),
            "done",
            "form-key-brk-0007",
            olga.clone()
        )
        .await
        .status,
        409,
        "not this page's opening"
    );
    let closed = breaker(id, "migration done", "form-key-brk-0008", olga.clone()).await;
    assert_eq!(closed.status, 200, "{}", closed.body);
    let view = app.state.events.receiver(Role::Viewer).await.unwrap();
    assert_eq!(view.waits, None);
    let audits = app.dump_tables().await;
    assert!(
        audits.contains("receiver_breaker_open") && audits.contains("receiver_breaker_close"),
        "both audited"
    );
}

/// One message the receiver chokes on cannot keep the breaker open: a failed probe goes
/// behind the other parked actions, so the next probe is another, which closes it; the
/// others drain, and the one message goes on through its own schedule.
#[tokio::test]
async fn a_message_the_receiver_chokes_on_does_not_keep_the_breaker_open() {
    let (app, receiver) = app_with_receiver().await;
    let key = app.api_key(&["events:write"]).await;
    const DOWN: usize = 10_000;
    receiver.fail_next(DOWN, 503);
    let ids: Vec<String> = (1..=4)
        .map(|c| format!("act:rp_route:c-choke-{c}:m-1"))
        .collect();
    for c in 1..=4 {
        post_event(
            &app,
            &key,
            &event(&format!("c-choke-{c}"), Some("m-1"), "hi"),
        )
        .await;
    }
    for _ in 0..4 {
        app.state.events.dispatch_all().await.unwrap();
        app.clock.advance(Duration::milliseconds(2_100));
    }
    assert!(
        app.state
            .events
            .breaker_state(&ops_console::model::outbox::ReceiverName::default_one())
            .await
            .unwrap()
            .breaker_id
            .is_some(),
        "open"
    );
    // The receiver is back, but for one message: the oldest, the first probe.
    receiver.fail_next(0, 503);
    let mut oldest: Vec<_> = Vec::new();
    for id in &ids {
        let a = records::get_action(&app.store, id).await.unwrap().unwrap();
        oldest.push((a.next_at_ms, id.clone()));
    }
    oldest.sort();
    let poison = oldest[0].1.clone();
    receiver.chokes_on.lock().unwrap().push(poison.clone());
    app.clock.advance(Duration::seconds(31));
    app.state.events.dispatch_all().await.unwrap();
    assert!(receiver.counts().is_empty(), "the first probe choked");
    app.clock.advance(Duration::seconds(31));
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(
        app.state
            .events
            .breaker_state(&ops_console::model::outbox::ReceiverName::default_one())
            .await
            .unwrap()
            .breaker_id,
        None,
        "closed"
    );
    let counts = receiver.counts();
    for id in ids.iter().filter(|id| **id != poison) {
        assert_eq!(counts.get(id), Some(&1), "{id}: {counts:?}");
    }
}

/// A receiver that answers every other message with 503: its run of failures never grows
/// (each round has answers), so only the failure-rate rule can open the breaker.
async fn half_failing(rule_pct: i64) -> (TestApp, crate::receiver::Receiver) {
    use ops_console::server::outbound::signature::SigningSecret;
    let secret = SigningSecret::generate();
    let (receiver, url) = crate::receiver::Receiver::start(vec![secret.clone()]).await;
    let app = crate::helpers::spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.retry_schedule = "1s,1s,1s,1s,1s,1s".into();
        c.events.breaker_failures = 1000;
        c.events.breaker_failure_rate = rule_pct;
        c.events.breaker_min_attempts = 10;
    })
    .await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    for c in 1..=12 {
        let conversation = format!("c-half-{c}");
        post_event(&app, &key, &event(&conversation, Some("m-1"), "hi")).await;
        if c % 2 == 0 {
            let id = format!("act:rp_route:{conversation}:m-1");
            receiver.chokes_on.lock().unwrap().push(id);
        }
    }
    (app, receiver)
}

#[tokio::test]
async fn a_receiver_failing_half_its_attempts_opens_the_breaker_by_the_failure_rate_rule() {
    // Without the rule: answers between the failures keep the breaker closed.
    let (app, receiver) = half_failing(0).await;
    let other = app.second_console();
    for _ in 0..3 {
        both_rounds(&app, &other).await;
        app.clock.advance(Duration::milliseconds(1_100));
    }
    assert_eq!(receiver.total(), 6, "the answered half went");
    let b = app
        .state
        .events
        .breaker_state(&ops_console::model::outbox::ReceiverName::default_one())
        .await
        .unwrap();
    assert_eq!(b.breaker_id, None, "no rule, no opening: {b:?}");

    // With it (40 %, 10 attempts): the first rounds' 12 attempts, 6 failed, open it.
    let (app, receiver) = half_failing(40).await;
    let other = app.second_console();
    both_rounds(&app, &other).await;
    assert_eq!(receiver.total(), 6);
    let b = app
        .state
        .events
        .breaker_state(&ops_console::model::outbox::ReceiverName::default_one())
        .await
        .unwrap();
    assert!(b.breaker_id.is_some(), "open: {b:?}");
    assert_eq!(b.opened_by.as_deref(), Some("system"));
    let why = b.reason.unwrap_or_default();
    // "F of N attempts failed in the last M minutes (P %, the rule says 40 %); last: …":
    // whichever console judged last saw all 12, one judging earlier at least 10.
    let words: Vec<&str> = why.split(' ').collect();
    let (failed, attempts): (u64, u64) = (words[0].parse().unwrap(), words[2].parse().unwrap());
    assert!(
        (10..=12).contains(&attempts)
            && failed * 100 >= 40 * attempts
            && why.contains("attempts failed in the last")
            && why.contains("the rule says 40 %")
            && why.contains("receiver answered 503"),
        "{why}"
    );
    // Parked from here on: the failing half is not sent again, nothing else is either.
    let before = receiver.arrivals.lock().unwrap().len();
    app.clock.advance(Duration::milliseconds(1_100));
    both_rounds(&app, &other).await;
    assert_eq!(receiver.arrivals.lock().unwrap().len(), before, "parked");
    assert_eq!(count(&app, Group::Dead).await, 0);
}
