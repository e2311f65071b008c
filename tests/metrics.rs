//! `/metrics` as a Prometheus scraper reads it, in a test binary of its own: the recorder is
//! one per process, so no other test moves these counters while this one counts them. One
//! test, in steps: each area's work moves its counters by exactly what it did. The text it
//! read last is written to `target/test-logs/metrics.txt` for `promtool check metrics`.

#[allow(dead_code)]
#[path = "it/helpers.rs"]
mod helpers;
#[allow(dead_code)]
#[path = "it/receiver.rs"]
mod receiver;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::Request;
use chrono::Duration;
use serde_json::json;

use helpers::{spawn_app_with, TestApp};
use ops_console::server::outbound::signature::SigningSecret;

/// `name{labels}` → value, for every sample of the text format.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

struct Scrape {
    app: TestApp,
    key: String,
    last: BTreeMap<String, f64>,
    text: String,
}

impl Scrape {
    async fn read(&mut self) -> BTreeMap<String, f64> {
        let answer = self.app.api("GET", "/metrics", &self.key, None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        self.text = answer.body.clone();
        samples(&answer.body)
    }

    /// How much each sample moved since the last call (samples that did not move are left
    /// out).
    async fn moved(&mut self) -> BTreeMap<String, f64> {
        let now = self.read().await;
        let moved = now
            .iter()
            .filter_map(|(k, v)| {
                let before = self.last.get(k).copied().unwrap_or(0.0);
                (*v != before).then(|| (k.clone(), v - before))
            })
            .collect();
        self.last = now;
        moved
    }
}

fn at(moved: &BTreeMap<String, f64>, sample: &str) -> f64 {
    moved.get(sample).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn each_area_moves_its_counters_by_what_it_did() {
    let secret = SigningSecret::generate();
    let (hook, url) = receiver::Receiver::start(vec![secret.clone()]).await;
    let app = spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
    })
    .await;
    app.set_switches(false, true).await;
    let metrics_key = app.api_key(&["metrics:read"]).await;
    let key = app
        .api_key(&[
            "events:write",
            "measurements:write",
            "inbox:write",
            "inbox:read",
            "switches:read",
        ])
        .await;

    // Scraping needs a key with metrics:read.
    assert_eq!(app.api("GET", "/metrics", "nope", None).await.status, 401);
    assert_eq!(app.api("GET", "/metrics", &key, None).await.status, 403);
    let mut scrape = Scrape {
        app: app.clone(),
        key: metrics_key,
        last: BTreeMap::new(),
        text: String::new(),
    };
    let first = scrape.moved().await;
    assert_eq!(
        at(
            &first,
            &format!(
                "opsconsole_build_info{{version=\"{}\"}}",
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );

    // Events: one new, one duplicate; its side effect delivered.
    let event = json!({"conversation_id": "c-metrics", "message_id": "m-1", "created_at": "2026-11-22T10:00:00Z",
                       "channel": "email", "text": "Where is my order?"})
    .to_string();
    for _ in 0..2 {
        let a = app.post_json("/api/v1/events", &key, event.clone()).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    app.state.events.dispatch_all().await.unwrap();
    let m = scrape.moved().await;
    assert_eq!(at(&m, "opsconsole_events_received_total"), 2.0);
    assert_eq!(at(&m, "opsconsole_events_duplicates_total"), 1.0);
    assert_eq!(
        at(
            &m,
            "opsconsole_events_decided_total{mode=\"automation_candidate\"}"
        ),
        1.0
    );
    let delivered = hook.total() as f64;
    assert!(delivered >= 1.0);
    assert_eq!(
        at(
            &m,
            "opsconsole_outbox_deliveries_total{result=\"delivered\"}"
        ),
        delivered
    );
    assert_eq!(
        at(
            &m,
            "opsconsole_http_requests_total{route=\"/api/v1/events\",method=\"POST\",status=\"200\"}"
        ),
        2.0
    );
    assert_eq!(
        at(
            &m,
            "opsconsole_dynamodb_requests_total{operation=\"PutItem\",result=\"condition_failed\"}"
        ),
        1.0,
        "the duplicate's claim: {m:?}"
    );
    assert!(
        at(
            &m,
            "opsconsole_dynamodb_requests_total{operation=\"TransactWriteItems\",result=\"ok\"}"
        ) >= 1.0
    );

    // Measurements: accepted, a duplicate, an invalid one.
    let t = (app.clock.now() - Duration::hours(1)).to_rfc3339();
    let body = json!({"measurement_id": "m-1", "user_id": "ann", "weight": 70.1, "unit": "kg", "timestamp": t, "source": "scale"});
    for _ in 0..2 {
        let a = app
            .post_json("/api/v1/measurements", &key, body.to_string())
            .await;
        assert!(a.status.is_success(), "{}", a.body);
    }
    let bad = json!({"measurement_id": "m-2", "user_id": "ann", "weight": "heavy", "unit": "kg", "timestamp": t, "source": "scale"});
    let a = app
        .post_json("/api/v1/measurements", &key, bad.to_string())
        .await;
    assert_eq!(a.status, 400, "{}", a.body);
    let m = scrape.moved().await;
    assert_eq!(
        at(&m, "opsconsole_measurements_total{outcome=\"accepted\"}"),
        1.0
    );
    assert_eq!(
        at(&m, "opsconsole_measurements_total{outcome=\"duplicate\"}"),
        1.0
    );
    assert_eq!(
        at(&m, "opsconsole_measurements_total{outcome=\"invalid\"}"),
        1.0
    );

    // The inbox: a broadcast published (then sent again with its key: a replay), read once
    // and twice.
    let publish = || {
        Request::post("/api/v1/inbox/tenants/acme/inboxes/news/messages")
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .header("idempotency-key", "metrics-broadcast-1")
            .body(Body::from(
                json!({"audience": {"kind": "everyone"}, "title": "Maintenance", "body": "Tonight."})
                    .to_string(),
            ))
            .unwrap()
    };
    let first = app.send(publish()).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = app.send(publish()).await;
    assert_eq!(again.status, 201, "{}", again.body);
    let id = first.json()["message_id"].as_str().unwrap().to_string();
    let read = format!("/api/v1/inbox/tenants/acme/inboxes/news/users/ann/messages/{id}/read");
    for _ in 0..2 {
        let a = app.post_json(&read, &key, "").await;
        assert!(a.status.is_success(), "{}", a.body);
    }
    let m = scrape.moved().await;
    assert_eq!(at(&m, "opsconsole_inbox_publishes_total"), 1.0);
    assert_eq!(at(&m, "opsconsole_inbox_reads_total"), 1.0);
    let scope = m
        .keys()
        .find(|k| {
            k.starts_with("opsconsole_idempotency_outcomes_total{")
                && k.contains("outcome=\"fresh\"")
        })
        .expect("the publish's key counted")
        .replace("outcome=\"fresh\"", "outcome=\"replayed\"");
    assert_eq!(at(&m, &scope), 1.0, "the replay counted in the same scope");

    // The kill switches: every console reads them every 5 s (their position and last
    // change); a trigger URL moves one to safety; the four-eyes steps are counted.
    use ops_console::model::kill_switches::Switch;
    use ops_console::server::domain::kill_switches::approvals::Decision;
    use ops_console::server::domain::kill_switches::ChangeRequest;
    use ops_console::server::services::kill_switches::ApprovalPolicy;
    let switches = &app.state.kill_switches;
    let secret = switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let a = app
        .post_json(
            &format!("/api/v1/kill-switches/triggers/{secret}"),
            &key,
            "",
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let strict = switches.clone().with_approvals(ApprovalPolicy {
        required: true,
        minutes: 60,
        emergency_admins: Vec::new(),
    });
    let req = ChangeRequest {
        switch: Switch::SafeMode,
        enable: false,
        expected_version: strict.load().await.unwrap().version,
        reason: "metrics".into(),
        confirmed: true,
        ends: None,
        emergency: false,
    };
    // Both are admins from before the request (an approval needs two people).
    for who in ["alice", "bob"] {
        app.add_user(who, ops_console::model::users::Role::Admin)
            .await;
    }
    let made = strict.request_change(&req, "alice", None).await.unwrap();
    strict
        .decide(&made.id, Decision::Approve, "looked", "bob")
        .await
        .unwrap();
    strict.revert_due().await.unwrap();
    let m = scrape.moved().await;
    assert_eq!(
        at(
            &m,
            "opsconsole_kill_switch_trips_total{switch=\"safe_mode\",by=\"trigger\"}"
        ),
        1.0
    );
    for step in ["requested", "approved"] {
        let sample = format!("opsconsole_kill_switch_approvals_total{{step=\"{step}\"}}");
        assert_eq!(at(&m, &sample), 1.0, "{step}");
    }
    let stored = strict.load().await.unwrap();
    assert!(!stored.safe_mode.enabled);
    let last = &scrape.last;
    assert_eq!(last["opsconsole_kill_switch_on{switch=\"safe_mode\"}"], 0.0);
    assert_eq!(
        last["opsconsole_kill_switch_on{switch=\"automation_enabled\"}"],
        1.0
    );
    let changed =
        chrono::DateTime::parse_from_rfc3339(stored.safe_mode.changed_at.as_deref().unwrap())
            .unwrap()
            .timestamp() as f64;
    assert_eq!(
        last["opsconsole_kill_switch_changed_timestamp_seconds{switch=\"safe_mode\"}"],
        changed
    );

    // Every feature in use for promtool: a named receiver's queue depth (the alert check
    // counts it) and a lookup by a typed value.
    use ops_console::model::outbox::ReceiverName;
    use ops_console::server::services::events::receiver::{Change, Settings};
    let crm = ReceiverName::parse("crm").unwrap();
    let (_crm_hook, crm_url) = receiver::Receiver::start(vec![]).await;
    app.state
        .events
        .change_receiver(
            &crm,
            Change::Settings(Settings {
                url: crm_url,
                enabled: true,
                limits: None,
            }),
            0,
            "alice",
        )
        .await
        .unwrap();
    app.state.alerts.judge().await.unwrap();
    app.state.users.count_lookup("alice").await.unwrap();
    let m = scrape.moved().await;
    assert_eq!(at(&m, "opsconsole_lookups_total{result=\"counted\"}"), 1.0);
    let text = &scrape.text;
    for family in [
        "opsconsole_receiver_queue_depth",
        "opsconsole_lookups_total",
    ] {
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family}: {text}"
        );
    }
    assert!(
        scrape
            .last
            .contains_key("opsconsole_receiver_queue_depth{receiver=\"crm\"}"),
        "{text}"
    );

    std::fs::create_dir_all("target/test-logs").unwrap();
    std::fs::write("target/test-logs/metrics.txt", &scrape.text).unwrap();
}
