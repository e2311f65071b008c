//! Resend a time window on DynamoDB Local: the count before, then each side effect of the
//! window sent again once per job with its own `webhook-id`, in its conversation's order,
//! by two consoles working the job; nothing outside the window or the kind; a page of the
//! job done again (a console that died before saving its progress) sends nothing twice,
//! and a progress write that fails leaves the job's count right; audited; refused under
//! safe mode.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use dynamodb_faults::Kind;

use crate::events::{app_with_receiver, app_with_receiver_via, event, post_event};
use crate::helpers::{faulty_dynamodb, spawn_app_via, TestApp};
use crate::receiver::Receiver;
use ops_console::server::services::events::resend::ResendScope;
use ops_console::server::store::events::job_moves;
use ops_console::server::store::events::jobs::{self, JobRecord, JobStatus};
use ops_console::server::store::events::outbox::{self, Group, Move};
use ops_console::server::store::events::outbox_reads::{self, Filter};
use ops_console::server::store::events::{self as records};

/// An admin of the Outbox (discarded side effects are an admin's to resend).
const OPS: ops_console::server::services::events::resend::Resender<'static> =
    ops_console::server::services::events::resend::Resender {
        actor: "ops",
        admin: true,
    };

const CHARGEBACK: &str = "I am filing a chargeback for this order";

fn at(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// Delivers everything due, on both consoles, until the receiver takes nothing more.
async fn deliver_all(a: &TestApp, b: &TestApp, receiver: &Receiver) {
    loop {
        let before = receiver.total();
        let (x, y) = tokio::join!(a.state.events.dispatch_all(), b.state.events.dispatch_all());
        x.unwrap();
        y.unwrap();
        if receiver.total() == before {
            return;
        }
    }
}

/// Runs the running jobs on both consoles at once, and delivers, until no job runs.
async fn run_jobs(a: &TestApp, b: &TestApp, receiver: &Receiver) {
    for _ in 0..40 {
        let (x, y) = tokio::join!(a.state.events.run_jobs(), b.state.events.run_jobs());
        x.unwrap();
        y.unwrap();
        deliver_all(a, b, receiver).await;
        if jobs::running(&a.store).await.unwrap().is_empty() {
            return;
        }
        a.clock.advance(Duration::milliseconds(250));
    }
    panic!("the job never ended");
}

/// The webhook-ids the receiver took after the first `from`, in order.
fn ids_after(receiver: &Receiver, from: usize) -> Vec<String> {
    receiver.order().split_off(from)
}

#[tokio::test]
async fn a_window_is_counted_then_sent_again_once_per_job_with_its_own_ids_in_order() {
    let (app, receiver) = app_with_receiver().await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    // Before the window: one side effect delivered.
    assert_eq!(
        post_event(&app, &key, &event("c-before", Some("m-1"), "hi"))
            .await
            .status,
        200
    );
    deliver_all(&app, &other, &receiver).await;
    app.clock.advance(Duration::minutes(1));
    let since = app.clock.now();
    // In the window: two conversations, several side effects each.
    for c in ["c-in-1", "c-in-2"] {
        assert_eq!(
            post_event(&app, &key, &event(c, Some("m-1"), CHARGEBACK))
                .await
                .status,
            200
        );
        deliver_all(&app, &other, &receiver).await;
        app.clock.advance(Duration::seconds(5));
    }
    let in_window: Vec<String> = ids_after(&receiver, 1);
    assert!(in_window.len() >= 4, "{in_window:?}");
    let until = app.clock.now();
    app.clock.advance(Duration::minutes(1));
    // After the window: one more.
    assert_eq!(
        post_event(&app, &key, &event("c-after", Some("m-1"), "hi"))
            .await
            .status,
        200
    );
    deliver_all(&app, &other, &receiver).await;
    let sent_before = receiver.total();

    // The count comes first, and names what it counts.
    let now = app.clock.now();
    let scope = ResendScope::parse("delivered", "", &at(since), &at(until), now).unwrap();
    let count = app.state.events.count_resend(&scope).await.unwrap();
    assert_eq!(count.n as usize, in_window.len(), "{}", count.words);
    assert!(
        count.words.contains("delivered side effects decided from"),
        "{}",
        count.words
    );
    let tags = ResendScope::parse("delivered", "tag", &at(since), &at(until), now).unwrap();
    let tag_count = app.state.events.count_resend(&tags).await.unwrap().n;
    assert!(
        tag_count >= 2 && (tag_count as usize) < in_window.len(),
        "{tag_count}"
    );

    // Started twice from one form (a double click): one job.
    let first = app
        .state
        .events
        .start_resend(&scope, "the receiver lost its data", &OPS, "form-1")
        .await
        .unwrap();
    let again = other
        .state
        .events
        .start_resend(&scope, "the receiver lost its data", &OPS, "form-1")
        .await
        .unwrap();
    assert_eq!(first, again);
    let job = jobs::running(&app.store).await.unwrap();
    assert_eq!(job.len(), 1);
    let job_key = job[0].event_id.clone();
    run_jobs(&app, &other, &receiver).await;

    // Each side effect of the window once more, with its own id, and nothing else.
    let resent = ids_after(&receiver, sent_before);
    let mut expected = in_window.clone();
    let mut got = resent.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "each once, with its own webhook-id");
    // In each conversation, in the order the receiver first took them.
    let order_in = |ids: &[String], c: &str| -> Vec<String> {
        ids.iter().filter(|i| i.contains(c)).cloned().collect()
    };
    for c in ["c-in-1", "c-in-2"] {
        assert_eq!(order_in(&resent, c), order_in(&in_window, c), "{c}");
    }
    let done = jobs::get(&app.store, &job_key).await.unwrap().unwrap();
    assert_eq!(done.done as usize, in_window.len());

    // A page of the job done again (a console that died before it saved its progress,
    // reading a fresh index): the action carries the job's key, so nothing moves.
    let one = records::get_action(&app.store, &in_window[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(one.status.as_str(), "delivered");
    let audit = ops_console::server::store::audit::AuditItem::new(
        &one.conversation_id,
        "outbox_resend",
        app.clock.now(),
        "test-again",
        1,
    );
    let moved = outbox::apply_move(
        &app.store,
        &one,
        Move::Resend,
        "again",
        &job_key,
        app.clock.now().timestamp_millis(),
        &audit,
    )
    .await
    .unwrap();
    assert!(!moved, "a job resends an action once");
    deliver_all(&app, &other, &receiver).await;
    assert_eq!(receiver.total(), sent_before + in_window.len());

    // Every move is audited with its reason.
    let trail = ops_console::server::store::audit::list_partition(&app.store, "c-in-1", None, 100)
        .await
        .unwrap();
    let resends = trail
        .items
        .iter()
        .filter(|a| a.action_type == "outbox_resend")
        .count();
    assert_eq!(resends, order_in(&in_window, "c-in-1").len());

    // Another job (another form) is another resend: once more each, and only the tags.
    app.clock.advance(Duration::seconds(1));
    let tags =
        ResendScope::parse("delivered", "tag", &at(since), &at(until), app.clock.now()).unwrap();
    app.state
        .events
        .start_resend(&tags, "tags only", &OPS, "form-2")
        .await
        .unwrap();
    let from = receiver.total();
    run_jobs(&app, &other, &receiver).await;
    let second: Vec<String> = ids_after(&receiver, from);
    assert_eq!(second.len() as u64, tag_count);
    let counts: HashMap<String, usize> = receiver.counts();
    for id in &in_window {
        let want = if second.contains(id) { 3 } else { 2 };
        assert_eq!(counts.get(id), Some(&want), "{id}");
    }
}

#[tokio::test]
async fn a_resend_under_safe_mode_is_refused_and_a_bad_window_is_a_clear_error() {
    let (app, _receiver) = app_with_receiver().await;
    let now = app.clock.now();
    let since = at(now - Duration::hours(1));
    let scope = ResendScope::parse("dead", "", &since, &at(now), now).unwrap();
    app.set_switches(true, true).await;
    let refused = app
        .state
        .events
        .start_resend(&scope, "why", &OPS, "form-1")
        .await;
    assert!(
        matches!(&refused, Err(ops_console::model::AppError::Conflict(m)) if m.contains("Safe mode is on")),
        "{refused:?}"
    );
    assert!(jobs::running(&app.store).await.unwrap().is_empty());
    app.set_switches(false, true).await;
    // No reason: refused before anything is written.
    let no_reason = app
        .state
        .events
        .start_resend(&scope, "  ", &OPS, "form-1")
        .await;
    assert!(
        matches!(&no_reason, Err(ops_console::model::AppError::Invalid { field, .. }) if field == "reason"),
        "{no_reason:?}"
    );
    assert!(jobs::running(&app.store).await.unwrap().is_empty());
}

/// One resend runs per receiver at a time (the same form again finds its own job), one
/// person runs at most two jobs at once, and discarded side effects are an admin's to
/// resend.
#[tokio::test]
async fn resends_are_capped_per_receiver_and_per_person_and_discarded_ones_are_an_admins() {
    use ops_console::model::AppError;
    use ops_console::server::services::events::resend::Resender;
    let (app, _receiver) = app_with_receiver().await;
    app.set_switches(false, true).await;
    let now = app.clock.now();
    let since = at(now - Duration::hours(1));
    let operator = Resender {
        actor: "olga",
        admin: false,
    };
    let discarded = ResendScope::parse("discarded", "", &since, &at(now), now).unwrap();
    let refused = app
        .state
        .events
        .start_resend(&discarded, "sent after all", &operator, "form-cap-0")
        .await;
    assert!(
        matches!(&refused, Err(AppError::Refused(m)) if m.contains("an admin's choice")),
        "{refused:?}"
    );
    assert!(jobs::running(&app.store).await.unwrap().is_empty());

    let every = ResendScope::parse("delivered", "", &since, &at(now), now).unwrap();
    let delivered = every.clone().of_receiver(Some("default")).unwrap();
    let events = &app.state.events;
    events
        .start_resend(&delivered, "lost data", &operator, "form-cap-1")
        .await
        .unwrap();
    // The same form again (a double click, a retry) finds its job.
    events
        .start_resend(&delivered, "lost data", &operator, "form-cap-1")
        .await
        .unwrap();
    // Another form, by anyone, waits for it.
    let second = events
        .start_resend(&delivered, "lost data", &OPS, "form-cap-2")
        .await;
    assert!(
        matches!(&second, Err(AppError::Conflict(m)) if m.contains("running already (started by olga)")),
        "{second:?}"
    );
    // A resend of every receiver's meets it too.
    let all = events
        .start_resend(&every, "lost data", &OPS, "form-cap-6")
        .await;
    assert!(matches!(&all, Err(AppError::Conflict(_))), "{all:?}");
    assert_eq!(jobs::running(&app.store).await.unwrap().len(), 1);

    // A person with two jobs running starts no third (a bulk discard and the resend).
    let held = ops_console::server::services::events::outbox::BulkRequest {
        op: jobs::JobOp::Discard,
        filter: Filter::default(),
        reason: "noise".into(),
        actor: "olga".into(),
        form_key: "form-cap-3".into(),
    };
    events.start_bulk("held", held).await.unwrap();
    use ops_console::server::services::events::receiver::{Change, Settings};
    let crm = ops_console::model::outbox::ReceiverName::parse("crm").unwrap();
    let (_crm, url) = Receiver::start(vec![]).await;
    let settings = Settings {
        url,
        enabled: true,
        limits: None,
    };
    events
        .change_receiver(&crm, Change::Settings(settings), 0, "admin")
        .await
        .unwrap();
    let third = every.clone().of_receiver(Some(crm.as_str())).unwrap();
    let r = events
        .start_resend(&third, "lost data", &operator, "form-cap-4")
        .await;
    assert!(
        matches!(&r, Err(AppError::Conflict(m)) if m.contains("You have 2 bulk jobs running")),
        "{r:?}"
    );
    // Someone else may.
    events
        .start_resend(&third, "lost data", &OPS, "form-cap-5")
        .await
        .unwrap();
}

/// A side effect an operator discarded is in its own group, and a resend of discarded ones
/// counts it and sends it once per job with its own `webhook-id`; a resend of delivered
/// ones leaves it alone.
#[tokio::test]
async fn a_discarded_side_effect_is_resent_once_by_a_window_of_discarded_ones() {
    use ops_console::server::store::events::outbox::Group;
    use ops_console::server::store::events::outbox_reads::{self, Filter};
    let (app, receiver) = app_with_receiver().await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    let since = app.clock.now();
    // Queued, held once safe mode is on, then discarded by an operator: never sent.
    let answer = post_event(&app, &key, &event("c-discarded", Some("m-1"), "hi")).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    app.set_switches(true, true).await;
    app.state.events.dispatch_all().await.unwrap();
    let held = outbox_reads::list(&app.store, Group::Held, &Filter::default(), None, 10)
        .await
        .unwrap()
        .0;
    assert_eq!(held.len(), 1);
    let audit = ops_console::server::store::audit::AuditItem::new(
        &held[0].conversation_id,
        "outbox_discard",
        app.clock.now(),
        "test-discard",
        1,
    );
    let now_ms = app.clock.now().timestamp_millis();
    let discard = outbox::apply_move(
        &app.store,
        &held[0],
        Move::Discard,
        "no",
        "ops",
        now_ms,
        &audit,
    );
    assert!(discard.await.unwrap());
    let discarded = Group::Discarded;
    assert_eq!(
        outbox_reads::count(&app.store, discarded, &Filter::default())
            .await
            .unwrap(),
        1,
        "a discarded side effect is in its own group"
    );
    app.set_switches(false, true).await;
    deliver_all(&app, &other, &receiver).await;
    assert_eq!(receiver.total(), 0, "discarded: not sent");
    app.clock.advance(Duration::seconds(5));
    let now = app.clock.now();

    let delivered = ResendScope::parse("delivered", "", &at(since), &at(now), now).unwrap();
    assert_eq!(
        app.state.events.count_resend(&delivered).await.unwrap().n,
        0
    );
    let scope = ResendScope::parse("discarded", "", &at(since), &at(now), now).unwrap();
    let count = app.state.events.count_resend(&scope).await.unwrap();
    assert_eq!(count.n, 1, "{}", count.words);
    assert!(
        count
            .words
            .starts_with("1 discarded side effect decided from"),
        "{}",
        count.words
    );
    app.state
        .events
        .start_resend(&scope, "sent after all", &OPS, "form-d")
        .await
        .unwrap();
    // Its own name on the record: the release before reads an unknown group as dead
    // letters, and cannot read this name at all.
    let job = jobs::running(&app.store).await.unwrap();
    assert_eq!(job[0].op, jobs::JobOp::ResendDiscarded);
    assert!(app.dump_tables().await.contains("resend_discarded"));
    run_jobs(&app, &other, &receiver).await;
    assert_eq!(
        receiver.order(),
        vec![held[0].event_id.clone()],
        "once, with its own id"
    );
    let sent = records::get_action(&app.store, &held[0].event_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sent.status.as_str(), "delivered");
}

/// A job whose page's progress write fails after the page's moves (DynamoDB answers 500
/// to every try, and applies them only long after; a console dying there is the same):
/// the moves counted themselves when they were made, so the job ends with `done` equal to
/// what the receiver was sent again, and the late writes change nothing when they land.
#[tokio::test]
async fn a_jobs_progress_write_lost_after_its_moves_leaves_done_equal_to_what_was_resent() {
    let proxy = faulty_dynamodb().await;
    let (app, direct, receiver) = app_with_receiver_via(&proxy).await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    let since = app.clock.now();
    for c in ["c-lost-1", "c-lost-2"] {
        let answer = post_event(&app, &key, &event(c, Some("m-1"), CHARGEBACK)).await;
        assert_eq!(answer.status, 200);
    }
    deliver_all(&app, &other, &receiver).await;
    // What the resend takes: the side effects delivered (one the receiver was slow to
    // answer waits to retry, and is not among them).
    let before = receiver.total();
    let all = Filter::default();
    let sent = outbox_reads::count(&direct, Group::Delivered, &all)
        .await
        .unwrap() as usize;
    assert!(sent >= 4, "{sent}");
    app.clock.advance(Duration::seconds(1));
    let now = app.clock.now();
    let scope = ResendScope::parse("delivered", "", &at(since), &at(now), now).unwrap();
    app.state
        .events
        .start_resend(&scope, "the receiver lost its data", &OPS, "form-lost")
        .await
        .unwrap();
    let job_key = jobs::running(&direct).await.unwrap()[0].event_id.clone();

    // Every try of the page's progress write is answered 500 and lands 15 s later.
    proxy.update(|f| {
        f.late_write_rate = 1.0;
        f.late_write_ms = 15_000;
        f.late_write_matching = "#skipped = :skipped".into();
    });
    let failed = app.state.events.run_jobs().await;
    assert!(failed.is_err(), "the progress write failed: {failed:?}");
    proxy.update(|f| f.late_write_rate = 0.0);
    assert!(proxy.report().get(Kind::LateWrite) > 0);
    deliver_all(&app, &other, &receiver).await;
    assert_eq!(
        receiver.total(),
        before + sent,
        "the page's moves were made"
    );

    run_jobs(&app, &other, &receiver).await;
    let counted = |job: &JobRecord| (job.status, job.done as usize, job.skipped);
    let job = jobs::get(&direct, &job_key).await.unwrap().unwrap();
    assert_eq!(counted(&job), (JobStatus::Finished, sent, 0));
    assert_eq!(
        receiver.total(),
        before + sent,
        "each once more, and no more"
    );
    crate::aws_failures::late_writes_landed(&proxy).await;
    let job = jobs::get(&direct, &job_key).await.unwrap().unwrap();
    assert_eq!(counted(&job), (JobStatus::Finished, sent, 0));

    // A move under a job that is not the mover's (its lease ran out and another console
    // took it) is refused whole: nothing moves, nothing is counted. A second job, over
    // the same window, held by another console.
    app.clock.advance(Duration::seconds(1));
    let again = ResendScope::parse("delivered", "", &at(since), &at(now), app.clock.now());
    app.state
        .events
        .start_resend(&again.unwrap(), "once more", &OPS, "form-lost-2")
        .await
        .unwrap();
    let second = jobs::running(&direct).await.unwrap()[0].event_id.clone();
    let at_ms = app.clock.now().timestamp_millis();
    assert!(jobs::take(&direct, &second, "other-console", at_ms, 60_000)
        .await
        .unwrap());
    let first = receiver.order()[0].clone();
    let one = records::get_action(&direct, &first).await.unwrap().unwrap();
    let audit = |id: &str| {
        ops_console::server::store::audit::AuditItem::new(
            &one.conversation_id,
            "outbox_resend",
            app.clock.now(),
            id,
            1,
        )
    };
    let by = |nonce| jobs::Lease {
        key: &second,
        nonce,
    };
    let (a, b) = (audit("a"), audit("b"));
    let mine = job_moves::counted_move(&direct, &one, Move::Resend, "x", at_ms, &a, by("me"));
    assert_eq!(mine.await.unwrap(), job_moves::Moved::NotMine);
    let still = records::get_action(&direct, &first).await.unwrap().unwrap();
    assert_eq!(still.status.as_str(), "delivered");
    assert_eq!(jobs::get(&direct, &second).await.unwrap().unwrap().done, 0);
    // The holder's own move is made and counted.
    let theirs = by("other-console");
    let made = job_moves::counted_move(&direct, &one, Move::Resend, "x", at_ms, &b, theirs);
    assert_eq!(made.await.unwrap(), job_moves::Moved::Moved);
    let moved = records::get_action(&direct, &first).await.unwrap().unwrap();
    assert_eq!(moved.status.as_str(), "queued");
    assert_eq!(jobs::get(&direct, &second).await.unwrap().unwrap().done, 1);
}

/// A page's progress write that lands late, after a later page's, changes nothing. Here an
/// empty pass's "nothing left since t" (answered 500, applied 10 s later), landing after a
/// pass that found some, would end the job one pass early: before the index has shown
/// what joined the group a moment before.
#[tokio::test]
async fn a_progress_write_that_lands_after_a_later_pages_changes_nothing() {
    let proxy = faulty_dynamodb().await;
    let (app, direct) = spawn_app_via(&proxy, |_| {}).await;
    app.set_switches(false, true).await;
    let now = app.clock.now();
    let since = now - Duration::minutes(1);
    let scope = ResendScope::parse("delivered", "", &at(since), &at(now), now).unwrap();
    app.state
        .events
        .start_resend(&scope, "nothing yet", &OPS, "form-late")
        .await
        .unwrap();
    let key = jobs::running(&direct).await.unwrap()[0].event_id.clone();
    let now_ms = now.timestamp_millis();
    assert!(jobs::take(&direct, &key, "console-a", now_ms, 60_000)
        .await
        .unwrap());
    let now_iso = ops_console::server::clock::iso(now);
    let page = |empty_since_ms| jobs::Progress {
        lease: jobs::Lease {
            key: &key,
            nonce: "console-a",
        },
        skipped: (0, 0),
        pages: 0,
        empty_since_ms,
        finished: false,
        now_iso: &now_iso,
    };
    proxy.update(|f| {
        f.late_write_rate = 1.0;
        f.late_write_ms = 10_000;
        f.late_write_matching = ":pages".into();
    });
    let empty = jobs::progress(&app.store, &page(Some(now_ms))).await;
    assert!(empty.is_err(), "every try answered 500: {empty:?}");
    proxy.update(|f| f.late_write_rate = 0.0);
    assert!(proxy.report().get(Kind::LateWrite) > 0);
    // The next pass read the job as it was, found some, and saved that.
    assert!(jobs::progress(&app.store, &page(None)).await.unwrap());
    crate::aws_failures::late_writes_landed(&proxy).await;
    let job = jobs::get(&direct, &key).await.unwrap().unwrap();
    assert_eq!(
        (job.pages, job.empty_since_ms, job.status),
        (1, None, JobStatus::Running)
    );
}

/// A console's own earlier progress write (answered as failed) that lands while a later
/// page of the same console runs, between its read of the job and its save: the save is
/// refused, and made again over what is stored, so the earlier empty pass's "nothing left
/// since" does not stand over a page that found some (it would end the job a pass early).
#[tokio::test]
async fn a_pages_save_refused_by_its_consoles_own_late_write_is_made_again_over_it() {
    let proxy = faulty_dynamodb().await;
    let (app, direct, receiver) = app_with_receiver_via(&proxy).await;
    let key = app.api_key(&["events:write"]).await;
    let since = app.clock.now();
    let answer = post_event(&app, &key, &event("c-save", Some("m-1"), CHARGEBACK)).await;
    assert_eq!(answer.status, 200);
    deliver_all(&app, &app.second_console(), &receiver).await;
    let all = Filter::default();
    let delivered = outbox_reads::count(&direct, Group::Delivered, &all)
        .await
        .unwrap();
    assert!(delivered >= 3, "{delivered}");
    app.clock.advance(Duration::seconds(1));
    let now = app.clock.now();
    let scope = ResendScope::parse("delivered", "", &at(since), &at(now), now).unwrap();
    let events = app.state.events.clone();
    events
        .start_resend(&scope, "again", &OPS, "form-save")
        .await
        .unwrap();
    let job_key = jobs::running(&direct).await.unwrap()[0].event_id.clone();

    // Every move is held 4 s on its way: the page is slow, and its save comes last.
    proxy.update(|f| {
        f.conflicts = true;
        f.hold_ms = (4_000, 4_000);
    });
    let page = tokio::spawn(async move { events.run_jobs().await });
    // Once the first move is made, the page has read the job and not saved yet: the
    // console's earlier save lands now (an empty pass's mark, one page more).
    let moved = || async {
        let stored = jobs::get(&direct, &job_key).await.unwrap().unwrap();
        (stored.done > 0).then_some(stored)
    };
    let mut read = None;
    for _ in 0..600 {
        read = moved().await;
        if read.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read = read.expect("the page moved something");
    let lease = jobs::Lease {
        key: &job_key,
        nonce: &read.claim_nonce,
    };
    let now_iso = ops_console::server::clock::iso(app.clock.now());
    let late = jobs::Progress {
        lease,
        skipped: (0, 0),
        pages: read.pages,
        empty_since_ms: Some(app.clock.now().timestamp_millis()),
        finished: false,
        now_iso: &now_iso,
    };
    assert!(jobs::progress(&direct, &late).await.unwrap());
    assert!(read.done < delivered as i64, "the page still moves");
    page.await.unwrap().unwrap();
    proxy.update(|f| f.hold_ms = (0, 0));

    let job = jobs::get(&direct, &job_key).await.unwrap().unwrap();
    let state = (job.done, job.pages, job.empty_since_ms, job.status);
    let want = (delivered as i64, read.pages + 2, None, JobStatus::Running);
    assert_eq!(state, want, "the page's save stands over the late one");
}
