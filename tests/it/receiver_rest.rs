//! `/api/v1/receiver` on DynamoDB Local: incident tooling reads the receiver's state, pauses
//! and resumes, opens and closes the breaker, counts and resends a window, each under its
//! scope, with a reason, once per `Idempotency-Key`, audited as the key's client.

use chrono::Duration;
use serde_json::json;

use crate::events::{app_with_receiver, event, post_event};

fn at(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

#[tokio::test]
async fn incident_tooling_pauses_resumes_and_works_the_breaker_under_its_scope() {
    let (app, _receiver) = app_with_receiver().await;
    let reader = app.api_key(&["receiver:read"]).await;
    let writer = app.api_key(&["receiver:read", "receiver:write"]).await;
    let state = |key: String| {
        let app = &app;
        async move { app.api("GET", "/api/v1/receiver", &key, None).await }
    };
    let first = state(reader.clone()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["state"], "delivering");
    // Its limits, as the settings set them (none here).
    assert_eq!(first.json()["rate_per_second"], 0);
    assert_eq!(first.json()["concurrency"], 0);
    assert_eq!(first.json()["burst"], 0);

    // Reading is not writing; a write needs its Idempotency-Key and a reason.
    let pause = json!({"reason": "receiver maintenance"}).to_string();
    let refused = app
        .post_json_with_key_header("/api/v1/receiver/pause", &reader, "k-1", pause.clone())
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let no_key = app
        .post_json("/api/v1/receiver/pause", &writer, pause.clone())
        .await;
    assert_eq!(no_key.status, 400, "{}", no_key.body);
    let no_reason = app
        .post_json_with_key_header(
            "/api/v1/receiver/pause",
            &writer,
            "k-0",
            json!({"reason": " "}).to_string(),
        )
        .await;
    assert_eq!(no_reason.status, 400, "{}", no_reason.body);
    // A resume whose id came out empty is refused, never taken for a pause.
    let empty_id = app
        .post_json_with_key_header(
            "/api/v1/receiver/pause",
            &writer,
            "k-00",
            json!({"reason": "done", "pause_id": ""}).to_string(),
        )
        .await;
    assert_eq!(empty_id.status, 400, "{}", empty_id.body);
    assert_eq!(state(reader.clone()).await.json()["state"], "delivering");

    // Paused once, whatever the retries.
    let paused = app
        .post_json_with_key_header("/api/v1/receiver/pause", &writer, "k-1", pause.clone())
        .await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    let again = app
        .post_json_with_key_header("/api/v1/receiver/pause", &writer, "k-1", pause.clone())
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json(), paused.json());
    let now = state(reader.clone()).await.json();
    assert_eq!(now["state"], "paused");
    assert!(
        now["waits"]
            .as_str()
            .unwrap()
            .contains("receiver maintenance"),
        "{now}"
    );
    // A second pause (another key) changes nothing and says why.
    let second = app
        .post_json_with_key_header("/api/v1/receiver/pause", &writer, "k-2", pause)
        .await;
    assert_eq!(second.status, 409, "{}", second.body);

    // A resume names the pause it ends.
    let resume = json!({"reason": "done", "pause_id": now["pause_id"]}).to_string();
    let resumed = app
        .post_json_with_key_header("/api/v1/receiver/pause", &writer, "k-3", resume)
        .await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    assert_eq!(state(reader.clone()).await.json()["state"], "delivering");

    // The breaker, opened and closed by hand.
    let open = app
        .post_json_with_key_header(
            "/api/v1/receiver/breaker",
            &writer,
            "k-4",
            json!({"reason": "receiver migration"}).to_string(),
        )
        .await;
    assert_eq!(open.status, 200, "{}", open.body);
    let now = state(reader.clone()).await.json();
    assert_eq!(now["state"], "breaker_open", "{now}");
    let close = json!({"reason": "migrated", "breaker_id": now["breaker_id"]}).to_string();
    let closed = app
        .post_json_with_key_header("/api/v1/receiver/breaker", &writer, "k-5", close)
        .await;
    assert_eq!(closed.status, 200, "{}", closed.body);
    assert_eq!(state(reader).await.json()["state"], "delivering");

    // Audited as the key's client.
    let trail =
        ops_console::server::store::audit::list_partition(&app.store, "system#receiver", None, 50)
            .await
            .unwrap();
    let by_api = trail
        .items
        .iter()
        .filter(|a| a.actor.starts_with("api:"))
        .count();
    assert_eq!(by_api, 4, "{:?}", trail.items);
}

#[tokio::test]
async fn a_window_is_counted_and_resent_once_per_idempotency_key() {
    let (app, receiver) = app_with_receiver().await;
    let events = app.api_key(&["events:write"]).await;
    let writer = app.api_key(&["receiver:read", "receiver:write"]).await;
    let since = app.clock.now() - Duration::seconds(1);
    assert_eq!(
        post_event(&app, &events, &event("c-rest", Some("m-1"), "hi"))
            .await
            .status,
        200
    );
    app.state.events.dispatch_all().await.unwrap();
    assert_eq!(receiver.total(), 1);
    let until = app.clock.now() + Duration::seconds(1);

    let bad = app
        .api(
            "GET",
            "/api/v1/receiver/resends/count?since=yesterday&until=today",
            &writer,
            None,
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.json()["field"], "since", "{}", bad.body);
    // Past year 9999, or ended before anything still kept: a 400, never a 500.
    for (query, field) in [
        ("since=2026-01-01T00:00&until=%2B10000-01-01T00:00", "until"),
        ("since=2001-01-01T00:00&until=2001-01-02T00:00", "until"),
    ] {
        let a = app
            .api(
                "GET",
                &format!("/api/v1/receiver/resends/count?{query}"),
                &writer,
                None,
            )
            .await;
        assert_eq!(a.status, 400, "{query}: {}", a.body);
        assert_eq!(a.json()["field"], field, "{query}: {}", a.body);
    }
    let path = format!(
        "/api/v1/receiver/resends/count?since={}&until={}",
        at(since),
        at(until)
    );
    let count = app.api("GET", &path, &writer, None).await;
    assert_eq!(count.status, 200, "{}", count.body);
    assert_eq!(count.json()["n"], 1);

    let body =
        json!({"since": at(since), "until": at(until), "reason": "receiver restored"}).to_string();
    let started = app
        .post_json_with_key_header("/api/v1/receiver/resends", &writer, "r-1", body.clone())
        .await;
    assert_eq!(started.status, 202, "{}", started.body);
    let again = app
        .post_json_with_key_header("/api/v1/receiver/resends", &writer, "r-1", body)
        .await;
    assert_eq!(again.status, 202);
    let running = ops_console::server::store::events::jobs::running(&app.store)
        .await
        .unwrap();
    assert_eq!(running.len(), 1, "one job per Idempotency-Key");
    assert!(running[0].actor.starts_with("api:"));
    for _ in 0..10 {
        app.state.events.run_jobs().await.unwrap();
        app.state.events.dispatch_all().await.unwrap();
        app.clock.advance(Duration::milliseconds(500));
    }
    assert_eq!(receiver.total(), 2, "sent once more");
    assert_eq!(receiver.counts().values().copied().max(), Some(2));
}

/// A queue depth DynamoDB will not count now (its `Select=COUNT` queries throttled, the
/// rest answered): the receiver's state is still read, its card says the depth was not
/// read, and REST gives 0 with `queue_depth_exact: false`, never a 5xx.
#[tokio::test]
async fn a_queue_depth_dynamodb_will_not_count_leaves_the_state_read_and_says_so() {
    let proxy = crate::helpers::faulty_dynamodb().await;
    let (app, _direct, _receiver) = crate::events::app_with_receiver_via(&proxy).await;
    let reader = app.api_key(&["receiver:read"]).await;
    proxy.update(|f| {
        f.throttle_rate = 1.0;
        f.throttle_matching = "\"Select\":\"COUNT\"".into();
    });
    let state = app.api("GET", "/api/v1/receiver", &reader, None).await;
    assert_eq!(state.status, 200, "{}", state.body);
    let body = state.json();
    assert_eq!(
        (
            body["queue_depth"].clone(),
            body["queue_depth_exact"].clone()
        ),
        (json!(0), json!(false))
    );
    assert_eq!(body["state"], "delivering");
    let events = &app.state.events;
    let default = ops_console::model::outbox::ReceiverName::default_one();
    let role = ops_console::model::users::Role::Viewer;
    let (detail, _) = events.receiver_state(role, &default).await.unwrap();
    let words = "Its queue depth was not read (DynamoDB is busy).";
    assert_eq!(detail.receiver.queue, words);
    assert!(proxy.report().get(dynamodb_faults::Kind::Throttle) > 0);

    // Counted again once DynamoDB answers.
    proxy.update(|f| f.throttle_rate = 0.0);
    let state = app.api("GET", "/api/v1/receiver", &reader, None).await;
    assert_eq!(
        state.json()["queue_depth_exact"],
        json!(true),
        "{}",
        state.body
    );
}
