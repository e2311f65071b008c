//! Receivers per action type on DynamoDB Local (docs/events.md, "Receivers"): an admin adds
//! a named receiver with its own URL and secret and routes an action type to it; from then
//! on each side effect of that type goes there and nowhere else, once, in its order among
//! that receiver's side effects of its conversation, and the named receiver's pause and
//! breaker hold its own side effects only.

use std::collections::HashMap;

use crate::events::{app_with_receiver, event, post_event};
use crate::helpers::TestApp;
use crate::receiver::Receiver;
use ops_console::model::outbox::ReceiverName;
use ops_console::model::pages::query_value;
use ops_console::model::users::Role;
use ops_console::model::AppError;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::services::events::breaker::BreakerId;
use ops_console::server::services::events::controls::Control;
use ops_console::server::services::events::pause::PauseId;
use ops_console::server::services::events::receiver::{Change, Settings};
use ops_console::server::store::events as records;
use ops_console::server::store::events::outbox::Group;
use ops_console::server::store::events::outbox_reads::{self, Filter};

/// The action type of each side effect `receiver` took, by its `webhook-id`.
fn types(receiver: &Receiver) -> HashMap<String, String> {
    receiver
        .accepted
        .lock()
        .unwrap()
        .iter()
        .map(|(id, body)| {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            (
                id.clone(),
                v["type"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Adds the receiver `name` at a new test receiver, which verifies with the secret shown
/// once.
async fn add_receiver(app: &TestApp, name: &ReceiverName) -> Receiver {
    let (receiver, url) = Receiver::start(vec![]).await;
    let settings = Settings {
        url,
        enabled: true,
        limits: None,
    };
    let shown = app
        .state
        .events
        .change_receiver(name, Change::Settings(settings), 0, "admin")
        .await
        .unwrap()
        .expect("its first secret, shown once");
    let secret = SigningSecret::parse(&shown).unwrap();
    receiver.secrets.lock().unwrap().push(secret);
    receiver
}

/// An app delivering to `default`, with the receiver `crm` added and `tag` routed to it.
async fn tags_to_crm() -> (TestApp, Receiver, ReceiverName, Receiver) {
    let (app, default) = app_with_receiver().await;
    let crm = ReceiverName::parse("crm").unwrap();
    let to_crm = add_receiver(&app, &crm).await;
    app.state
        .events
        .set_route("tag", &crm, 1, "admin")
        .await
        .unwrap();
    (app, default, crm, to_crm)
}

/// Every side effect `receiver` took waited for the one before it of its receiver and
/// conversation, which `receiver` took first.
async fn in_order(app: &TestApp, receiver: &Receiver, name: Option<&str>) {
    let order = receiver.order();
    for (i, id) in order.iter().enumerate() {
        let rec = records::get_action(&app.store, id).await.unwrap().unwrap();
        assert_eq!(rec.receiver.as_deref(), name, "{id} routed there");
        if let Some(before) = &rec.after {
            let at = order.iter().position(|o| o == before);
            assert!(at.is_some_and(|at| at < i), "{id} went before {before}");
        }
    }
}

#[tokio::test]
async fn each_action_type_goes_to_its_receiver_in_order_under_that_receivers_pause_and_breaker() {
    let (app, default, crm, to_crm) = tags_to_crm().await;
    let events = &app.state.events;
    // A stale version, an unknown receiver, a type that is none, a name that is none.
    let refusals = [
        events.set_route("tag", &crm, 1, "admin").await,
        events
            .set_route(
                "assign",
                &ReceiverName::parse("nobody").unwrap(),
                2,
                "admin",
            )
            .await,
        events.set_route("teleport", &crm, 2, "admin").await,
    ];
    assert!(
        matches!(refusals[0], Err(AppError::Conflict(_))),
        "{refusals:?}"
    );
    assert!(matches!(&refusals[1], Err(AppError::Invalid { field, .. }) if field == "receiver"));
    assert!(matches!(&refusals[2], Err(AppError::Invalid { field, .. }) if field == "action_type"));
    assert!(ReceiverName::parse("Bad name").is_err() && ReceiverName::parse("-x").is_err());

    // The named receiver paused: its side effects wait; `default`'s go.
    let pause = Control::Pause;
    events
        .control(&crm, &pause, "crm maintenance", "op")
        .await
        .unwrap();
    let key = app.api_key(&["events:write"]).await;
    for c in 0..3 {
        for m in 0..2 {
            let text = "Where is my order? It is late and I want a refund";
            let body = event(&format!("c-route-{c}"), Some(&format!("m-{m}")), text);
            assert_eq!(post_event(&app, &key, &body).await.status, 200);
        }
    }
    let round = events.dispatch_all().await.unwrap();
    assert!(round.paused > 0, "{round:?}");
    assert_eq!(to_crm.total(), 0, "nothing reached the paused receiver");
    let first = types(&default);
    assert!(!first.is_empty(), "default's side effects went");
    assert!(first.values().all(|t| t != "action.tag"), "{first:?}");
    let default_default = ReceiverName::default_one();
    assert!(events
        .pause_state(&default_default)
        .await
        .unwrap()
        .pause_id
        .is_none());

    // Resumed: every tag reaches the named receiver once, in order; default takes no more.
    let id = events.pause_state(&crm).await.unwrap().pause_id.unwrap();
    let resume = Control::Resume(PauseId::parse(&id).unwrap());
    events.control(&crm, &resume, "done", "op").await.unwrap();
    events.dispatch_all().await.unwrap();
    let tags = types(&to_crm);
    assert!(!tags.is_empty(), "the tags went");
    assert!(tags.values().all(|t| t == "action.tag"), "{tags:?}");
    assert!(to_crm.counts().values().all(|n| *n == 1), "once each");
    assert_eq!(
        *to_crm.bad_signatures.lock().unwrap(),
        0,
        "signed with its own secret"
    );
    assert_eq!(types(&default).len(), first.len(), "default took no more");
    in_order(&app, &to_crm, Some("crm")).await;
    in_order(&app, &default, None).await;

    // The named receiver's breaker opened by hand: its side effects park, default's go.
    let open = Control::OpenBreaker;
    events
        .control(&crm, &open, "crm is failing", "op")
        .await
        .unwrap();
    let body = event(
        "c-route-9",
        Some("m-9"),
        "Where is my order? I want a refund",
    );
    assert_eq!(post_event(&app, &key, &body).await.status, 200);
    let round = events.dispatch_all().await.unwrap();
    assert!(round.parked > 0, "{round:?}");
    assert_eq!(types(&to_crm).len(), tags.len(), "parked");
    assert!(types(&default).len() > first.len(), "default delivered");
    let b = events.breaker_state(&default_default).await.unwrap();
    assert!(
        b.breaker_id.is_none(),
        "default's breaker is its own: {b:?}"
    );
    // Its own alert and series, counting its own parked side effects.
    let judged = app.state.alerts.judge().await.unwrap();
    let rule = |id: &str| judged.iter().find(|j| j.id == id).expect(id).clone();
    let (own, other) = (
        rule("outbox.receiver_breaker.crm"),
        rule("outbox.receiver_breaker"),
    );
    assert!(own.breached && own.sample > 0, "{own:?}");
    assert!(own.summary.starts_with("Receiver crm: "), "{}", own.summary);
    assert!(!other.breached, "{other:?}");
    let key = app.api_key(&["metrics:read"]).await;
    let metrics = app.api("GET", "/metrics", &key, None).await.body;
    assert!(
        metrics.contains("opsconsole_receiver_breaker_open{receiver=\"crm\"} 1"),
        "{metrics}"
    );
    let opening = events
        .breaker_state(&crm)
        .await
        .unwrap()
        .breaker_id
        .unwrap();
    let close = Control::CloseBreaker(BreakerId::parse(&opening).unwrap());
    events.control(&crm, &close, "back", "op").await.unwrap();
    events.dispatch_all().await.unwrap();
    assert!(types(&to_crm).len() > tags.len(), "the parked tags went");
    assert!(to_crm.counts().values().all(|n| *n == 1), "once each");
    let due = outbox_reads::count(&app.store, Group::Due, &Filter::default())
        .await
        .unwrap();
    assert_eq!(due, 0, "nothing is left");

    // Every change audited; the REST state names the receivers and the routes.
    let audits = app.dump_tables().await;
    assert!(audits.contains("receiver_routes") && audits.contains("receiver-crm-v1"));
    // The receivers and the routes stand until an admin changes them: no TTL.
    for pk in ["\"events-routes\"", "\"events-receiver#crm\""] {
        let item = audits.lines().find(|l| l.contains(pk)).expect(pk);
        assert!(!item.contains("expires_at"), "{item}");
    }
    let key = app.api_key(&["receiver:read"]).await;
    let state = app
        .api("GET", "/api/v1/receiver?receiver=crm", &key, None)
        .await;
    assert_eq!(state.status, 200, "{}", state.body);
    let v = state.json();
    assert_eq!(v["receiver"], "crm");
    assert_eq!(v["routes"]["tag"], "crm");
    assert_eq!(v["routes"]["assign"], "default");
    assert_eq!(v["state"], "delivering");
    let none = app
        .api("GET", "/api/v1/receiver?receiver=nobody", &key, None)
        .await;
    assert_eq!(none.status, 404, "{}", none.body);
    let bad = app
        .api("GET", "/api/v1/receiver?receiver=Bad%20name", &key, None)
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
}

#[tokio::test]
async fn a_named_receiver_is_added_once_and_at_most_eight_are() {
    let (app, _default) = app_with_receiver().await;
    let events = &app.state.events;
    let first = ReceiverName::parse("r1").unwrap();
    let _r1 = add_receiver(&app, &first).await;
    // Added again as new (version 0): refused, nothing doubled.
    let (_, url) = Receiver::start(vec![]).await;
    let again = Settings {
        url: url.clone(),
        enabled: true,
        limits: None,
    };
    let twice = events
        .change_receiver(&first, Change::Settings(again), 0, "admin")
        .await;
    assert!(matches!(twice, Err(AppError::Conflict(_))), "{twice:?}");
    // A secret for a receiver not added yet: refused.
    let early = events
        .change_receiver(
            &ReceiverName::parse("r9").unwrap(),
            Change::AddSecret,
            0,
            "admin",
        )
        .await;
    assert!(matches!(&early, Err(AppError::Invalid { field, .. }) if field == "url"));
    let mut kept = Vec::new();
    for n in 2..8 {
        kept.push(add_receiver(&app, &ReceiverName::parse(&format!("r{n}")).unwrap()).await);
    }
    let routes = events.routes().await.unwrap();
    assert_eq!(routes.receivers, ["r1", "r2", "r3", "r4", "r5", "r6", "r7"]);
    let ninth = Settings {
        url,
        enabled: true,
        limits: None,
    };
    let over = events
        .change_receiver(
            &ReceiverName::parse("r8").unwrap(),
            Change::Settings(ninth),
            0,
            "admin",
        )
        .await;
    assert!(
        matches!(&over, Err(AppError::Invalid { field, .. }) if field == "receiver"),
        "{over:?}"
    );
    assert_eq!(events.routes().await.unwrap().receivers.len(), 7);
}

#[tokio::test]
async fn a_pause_made_while_a_round_is_sending_stops_its_claims_within_the_round() {
    let (app, receiver) = app_with_receiver().await;
    receiver
        .answer_ms
        .store(400, std::sync::atomic::Ordering::SeqCst);
    let key = app.api_key(&["events:write"]).await;
    // 24 conversations: a round sends the first side effect of each, 4 at a time.
    for c in 0..24 {
        let text = "Where is my order? It is late and I want a refund";
        let body = event(&format!("c-mid-{c}"), Some("m-1"), text);
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    let events = app.state.events.clone();
    let round = tokio::spawn(async move { events.dispatch_round().await });
    let started = std::time::Instant::now();
    while receiver.total() == 0 {
        assert!(started.elapsed().as_secs() < 20, "nothing was sent");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let default = ReceiverName::default_one();
    let pause = Control::Pause;
    app.state
        .events
        .control(&default, &pause, "stop now", "op")
        .await
        .unwrap();
    let before = receiver.total();
    let r = round.await.unwrap().unwrap();
    // Counted from the pause's commit, not by a clock: the 4 in flight end, and at most two
    // waves of 4 are claimed before the next read of the pause (every 500 ms; a slower
    // machine only reads it sooner per wave). The round leaves the rest waiting. Without
    // the read, every one of the 24 went.
    assert!(r.left > 0, "{r:?}");
    let after = receiver.total() - before;
    assert!(
        after <= 12,
        "{after} sent after the pause, {} of 24 in all",
        receiver.total()
    );
    // And a pause of a receiver that is none is a 404, never an item.
    let nobody = ReceiverName::parse("nobody").unwrap();
    let refused = app.state.events.control(&nobody, &pause, "x", "op").await;
    assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
    let open = Control::OpenBreaker;
    let refused = app.state.events.control(&nobody, &open, "x", "op").await;
    assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
}

#[tokio::test]
async fn a_named_receivers_side_effect_put_in_defaults_range_by_an_older_console_goes_to_its_own() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let (app, default, crm, to_crm) = tags_to_crm().await;
    let events = &app.state.events;
    let pause = Control::Pause;
    events
        .control(&crm, &pause, "hold them", "op")
        .await
        .unwrap();
    let key = app.api_key(&["events:write"]).await;
    let body = event("c-old-1", Some("m-1"), "Where is my order? I want a refund");
    assert_eq!(post_event(&app, &key, &body).await.status, 200);
    events.dispatch_all().await.unwrap();
    // A release of a due tag by a console that knew no receivers: `default`'s sort key.
    let tags = outbox_reads::list(&app.store, Group::Due, &Filter::default(), None, 50)
        .await
        .unwrap()
        .0;
    // The first of its conversation's tags: it waits for none.
    let tag = tags
        .iter()
        .find(|a| a.receiver.is_some() && a.after.is_none())
        .expect("a tag waits");
    let plain = format!("{:013}#{}", tag.next_at_ms, tag.event_id);
    let table = app
        .store
        .table(ops_console::server::store::schema::MW_IDEMPOTENCY.base);
    app.store
        .client()
        .update_item()
        .table_name(&table)
        .key("event_id", AttributeValue::S(tag.event_id.clone()))
        .update_expression("SET outbox_sk = :sk")
        .expression_attribute_values(":sk", AttributeValue::S(plain))
        .send()
        .await
        .unwrap();
    let before = default.total();
    events.dispatch_all().await.unwrap();
    assert_eq!(
        default.total(),
        before,
        "default never takes crm's side effect"
    );
    let moved = records::get_action(&app.store, &tag.event_id)
        .await
        .unwrap()
        .unwrap();
    let sk = moved.outbox_sk.unwrap_or_default();
    assert!(sk.starts_with("crm#"), "back in its own range: {sk}");
    let id = events.pause_state(&crm).await.unwrap().pause_id.unwrap();
    let resume = Control::Resume(PauseId::parse(&id).unwrap());
    events.control(&crm, &resume, "go", "op").await.unwrap();
    events.dispatch_all().await.unwrap();
    assert!(to_crm.order().contains(&tag.event_id), "crm took it");
}

#[tokio::test]
async fn a_resend_of_one_receivers_window_sends_its_side_effects_only_each_once_more() {
    use ops_console::server::services::events::resend::ResendScope;
    let (app, default, _, to_crm) = tags_to_crm().await;
    let events = &app.state.events;
    let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let since = at(app.clock.now() - chrono::Duration::minutes(1));
    let key = app.api_key(&["events:write"]).await;
    for c in ["c-again-1", "c-again-2"] {
        let body = event(c, Some("m-1"), "Where is my order? I want a refund");
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    events.dispatch_all().await.unwrap();
    app.clock.advance(chrono::Duration::minutes(1));
    let until = at(app.clock.now());
    let (tags, others) = (to_crm.total(), default.total());
    assert!(tags > 0 && others > 0, "{tags} {others}");
    let scope = |receiver: Option<&str>| {
        ResendScope::parse("delivered", "", &since, &until, app.clock.now())
            .unwrap()
            .of_receiver(receiver)
            .unwrap()
    };
    // Each receiver counts its own; without one, every receiver's.
    let counted = events.count_resend(&scope(Some("crm"))).await.unwrap();
    assert_eq!(counted.n as usize, tags, "{}", counted.words);
    assert!(counted.words.contains(" to crm"), "{}", counted.words);
    let own = events.count_resend(&scope(Some("default"))).await.unwrap();
    assert_eq!(own.n as usize, others, "{}", own.words);
    let all = events.count_resend(&scope(None)).await.unwrap();
    assert_eq!(all.n as usize, tags + others, "{}", all.words);
    let none = events.count_resend(&scope(Some("nobody"))).await;
    assert!(matches!(none, Err(AppError::NotFound)), "{none:?}");
    // Sent again: crm's side effects, each once more, to crm; nothing more to default.
    let form_key = ops_console::server::ids::random_hex(16);
    let crm_lost_data = scope(Some("crm"));
    events
        .start_resend(
            &crm_lost_data,
            "crm lost data",
            &ops_console::server::services::events::resend::Resender {
                actor: "op",
                admin: false,
            },
            &form_key,
        )
        .await
        .unwrap();
    for _ in 0..40 {
        events.run_jobs().await.unwrap();
        events.dispatch_all().await.unwrap();
        let running = ops_console::server::store::events::jobs::running(&app.store);
        if running.await.unwrap().is_empty() {
            break;
        }
        app.clock.advance(chrono::Duration::milliseconds(250));
    }
    assert_eq!(to_crm.total(), 2 * tags, "each tag once more");
    assert!(to_crm.counts().values().all(|n| *n == 2), "once more each");
    assert_eq!(default.total(), others, "nothing more to default");
}

/// The Outbox's card, REST and `/metrics` give each receiver's queue depth: its own side
/// effects waiting, parked while its breaker is open; as many as it takes once it resumes.
#[tokio::test]
async fn each_receivers_queue_depth_counts_its_own_waiting_side_effects_on_the_outbox_in_rest_and_metrics(
) {
    // A name no other test gives a receiver: `/metrics` is one registry for every test of
    // this process, so its series are this test's own.
    let (app, _default) = app_with_receiver().await;
    let ledger = ReceiverName::parse("ledger").unwrap();
    let to_ledger = add_receiver(&app, &ledger).await;
    let events = &app.state.events;
    events.set_route("tag", &ledger, 1, "admin").await.unwrap();
    events
        .control(&ledger, &Control::Pause, "ledger maintenance", "op")
        .await
        .unwrap();
    let key = app.api_key(&["events:write"]).await;
    for c in 0..3 {
        let text = "Where is my order? It is late and I want a refund";
        let body = event(&format!("c-depth-{c}"), Some("m-1"), text);
        assert_eq!(post_event(&app, &key, &body).await.status, 200);
    }
    events.dispatch_all().await.unwrap();
    let page = events
        .outbox_page(
            "due",
            Filter::default(),
            "",
            None,
            &app.state.refs,
            Role::Viewer,
        )
        .await
        .unwrap();
    // Its side effects are listed with their receiver.
    assert!(!page.rows.is_empty());
    assert!(
        page.rows.iter().all(|r| r.to_receiver == " · to ledger"),
        "{:?}",
        page.rows
    );
    let names: Vec<&str> = page.receivers.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["default", "ledger"]);
    assert_eq!(
        page.receivers[0].queue, "Nothing waits for it.",
        "default delivered hers"
    );
    let words = page.receivers[1].queue.clone();
    let read = app.api_key(&["receiver:read"]).await;
    let rest = |receiver: &'static str| {
        let (app, read) = (&app, read.clone());
        async move {
            let path = format!("/api/v1/receiver?receiver={receiver}");
            let answer = app.api("GET", &path, &read, None).await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            answer.json()
        }
    };
    let waiting = rest("ledger").await;
    let depth = waiting["queue_depth"].as_u64().unwrap();
    assert!(depth > 0, "{waiting}");
    assert_eq!(waiting["queue_depth_exact"], true);
    assert_eq!(waiting["parked"], 0, "paused, not parked");
    assert_eq!(words, format!("{depth} side effects wait."));
    assert_eq!(rest("default").await["queue_depth"], 0);
    // Its side effects listed by REST, page by page: its tags only, as many as the depth.
    let mut listed = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/v1/receiver/actions?receiver=ledger&group=due&cursor={cursor}");
        let page = app.api("GET", &path, &read, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let v = page.json();
        listed.extend(v["actions"].as_array().unwrap().clone());
        match v["next"].as_str() {
            Some(next) => cursor = query_value(next),
            None => break,
        }
    }
    assert_eq!(listed.len() as u64, depth);
    for a in &listed {
        assert_eq!(a["action_type"], "tag", "{a}");
        assert_eq!(a["status_words"], "queued", "{a}");
    }
    let defaults = app
        .api("GET", "/api/v1/receiver/actions?group=due", &read, None)
        .await;
    assert_eq!(
        defaults.json()["actions"],
        serde_json::json!([]),
        "ledger's are its own"
    );
    assert_eq!(defaults.json()["group"], "due", "no group: the due one");
    let none = app
        .api(
            "GET",
            "/api/v1/receiver/actions?receiver=nobody",
            &read,
            None,
        )
        .await;
    assert_eq!(none.status, 404, "{}", none.body);
    for bad in ["group=sent", "cursor=forged"] {
        let path = format!("/api/v1/receiver/actions?receiver=ledger&{bad}");
        let refused = app.api("GET", &path, &read, None).await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }

    // Its breaker open as well: all of its queue is parked, on the card, in REST and the
    // metrics.
    events
        .control(&ledger, &Control::OpenBreaker, "ledger is failing", "op")
        .await
        .unwrap();
    let parked = rest("ledger").await;
    assert_eq!(parked["parked"].as_u64(), Some(depth), "{parked}");
    let card = events.receiver_detail(Role::Viewer, &ledger).await.unwrap();
    assert_eq!(
        card.receiver.queue,
        format!("{depth} side effects wait, parked while the breaker is open.")
    );
    app.state.alerts.judge().await.unwrap();
    let metrics_key = app.api_key(&["metrics:read"]).await;
    let metrics = app.api("GET", "/metrics", &metrics_key, None).await.body;
    for series in [
        format!("opsconsole_receiver_queue_depth{{receiver=\"ledger\"}} {depth}"),
        format!("opsconsole_receiver_parked{{receiver=\"ledger\"}} {depth}"),
    ] {
        assert!(metrics.contains(&series), "{series} in {metrics}");
    }

    // Resumed and closed: the receiver takes as many as the depth said, and none wait.
    let pause = events.pause_state(&ledger).await.unwrap().pause_id.unwrap();
    let resume = Control::Resume(PauseId::parse(&pause).unwrap());
    events
        .control(&ledger, &resume, "done", "op")
        .await
        .unwrap();
    let opening = events
        .breaker_state(&ledger)
        .await
        .unwrap()
        .breaker_id
        .unwrap();
    let close = Control::CloseBreaker(BreakerId::parse(&opening).unwrap());
    events.control(&ledger, &close, "back", "op").await.unwrap();
    events.dispatch_all().await.unwrap();
    assert_eq!(
        to_ledger.total() as u64,
        depth,
        "the depth was what it took"
    );
    assert_eq!(rest("ledger").await["queue_depth"], 0);
}

/// Every event that queues a side effect reads the routes: from one of their copies, each
/// written with every save (no staleness); never-saved routes get copies of the default at
/// the first read, and a save made without them (the release before) reaches them at the
/// next dispatch round.
#[tokio::test]
async fn routes_are_read_from_copies_and_a_save_without_them_is_mended() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::store::copies::COPIES;
    use ops_console::server::store::events::routes;
    let (app, _default) = app_with_receiver().await;
    let table = app.store.table("settings");
    let versions = || {
        let store = app.store.clone();
        async move {
            let all = ops_console::server::store::many::scan_json(&store, "settings")
                .await
                .unwrap();
            let mut v: Vec<String> = all
                .iter()
                .filter(|i| {
                    i["pk"]
                        .as_str()
                        .is_some_and(|p| p.starts_with("events-routes#copy#"))
                })
                .map(|i| i["version"].to_string())
                .collect();
            v.sort();
            v
        }
    };
    assert!(routes::load_copy(&app.store)
        .await
        .unwrap()
        .routes
        .is_empty());
    assert_eq!(versions().await, vec!["0".to_string(); COPIES as usize]);

    let crm = ReceiverName::parse("crm").unwrap();
    let _to_crm = add_receiver(&app, &crm).await;
    app.state
        .events
        .set_route("tag", &crm, 1, "admin")
        .await
        .unwrap();
    assert_eq!(versions().await, vec!["2".to_string(); COPIES as usize]);
    for _ in 0..16 {
        let read = routes::load_copy(&app.store).await.unwrap();
        assert_eq!(read.routes.get("tag").map(String::as_str), Some("crm"));
    }

    // The release before takes the route away, on the item alone.
    app.store
        .client()
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("events-routes".into()))
        .update_expression("REMOVE routes.#t SET version = :v")
        .expression_attribute_names("#t", "tag")
        .expression_attribute_values(":v", AttributeValue::N("3".into()))
        .send()
        .await
        .unwrap();
    app.state.events.dispatch_round().await.unwrap();
    assert_eq!(versions().await, vec!["3".to_string(); COPIES as usize]);
    for _ in 0..16 {
        assert!(routes::load_copy(&app.store)
            .await
            .unwrap()
            .routes
            .is_empty());
    }
}
