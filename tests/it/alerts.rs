//! Alerts that reach people: two consoles judge the same breach at the same time, and the
//! channels hear of it once; once when it clears.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use chrono::Duration;
use serde_json::{json, Value};

use crate::events::{event, post_event};
use crate::helpers::spawn_app_with;
use crate::receiver::Receiver;
use ops_console::api::shell::LoadShellInfo;
use ops_console::model::users::Role;
use ops_console::server::outbound::signature::SigningSecret;

/// Every message a channel got: (path, webhook-id, body).
pub(crate) type Heard = Arc<Mutex<Vec<(String, String, Value)>>>;

pub(crate) async fn channel() -> (Heard, String) {
    let heard: Heard = Arc::default();
    async fn take(
        State(h): State<Heard>,
        uri: axum::http::Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> StatusCode {
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        h.lock().unwrap().push((uri.path().to_string(), id, body));
        StatusCode::OK
    }
    let app = Router::new()
        .route("/json", post(take))
        .route("/slack", post(take))
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (heard, format!("http://{addr}"))
}

/// Both consoles judge at once, three times over.
async fn check_both(app: &crate::helpers::TestApp, other: &crate::helpers::TestApp) {
    for _ in 0..3 {
        let (a, b) = tokio::join!(app.state.alerts.check(), other.state.alerts.check());
        a.unwrap();
        b.unwrap();
    }
}

fn about(heard: &Heard, alert: &str) -> Vec<(String, String, Value)> {
    heard
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, id, _)| id.starts_with(&format!("{alert}#")))
        .cloned()
        .collect()
}

/// 20 measurement attempts, 4 of them repeats: a duplicate rate of 20 %, above the 10 %
/// threshold of `measurements.duplicates`.
async fn duplicates_breach(app: &crate::helpers::TestApp) {
    let key = app.api_key(&["measurements:write"]).await;
    let t = (app.clock.now() - Duration::minutes(30)).to_rfc3339();
    for i in 0..16 {
        let body =
            json!({"measurement_id": format!("m-{i}"), "user_id": format!("u{i}"), "weight": 70.0,
                          "unit": "kg", "timestamp": t, "source": "scale"})
            .to_string();
        let times = if i < 4 { 2 } else { 1 };
        for _ in 0..times {
            let a = app
                .post_json("/api/v1/measurements", &key, body.clone())
                .await;
            assert!(a.status.is_success(), "{}", a.body);
        }
    }
}

/// A trip on a rule: when it fires, judged by two consoles at once, safe mode turns on once,
/// by the system, with the rule's figures and window; the message says so. A person who
/// turns safety off again while the alert still fires is not overruled, and the alert's
/// end turns nothing off.
#[tokio::test]
async fn a_trip_turns_safe_mode_on_once_when_its_rule_fires_and_never_turns_safety_off() {
    use ops_console::model::kill_switches::Switch;
    use ops_console::server::store::kill_switches;
    let (heard, base) = channel().await;
    let app = spawn_app_with(|c| c.alerts.webhook_url = format!("{base}/json")).await;
    let other = app.second_console();
    app.set_switches(false, true).await;
    let switches = &app.state.kill_switches;
    switches
        .attach_trip("measurements.duplicates", Switch::SafeMode, "alice")
        .await
        .unwrap();
    // One rule may trip both switches: each moves once.
    switches
        .attach_trip(
            "measurements.duplicates",
            Switch::AutomationEnabled,
            "alice",
        )
        .await
        .unwrap();
    // A rule that does not fire changes nothing.
    switches
        .attach_trip("outbox.dead_letters", Switch::AutomationEnabled, "alice")
        .await
        .unwrap();
    let load = || async {
        kill_switches::load(&app.store, app.clock.now())
            .await
            .unwrap()
    };
    let before = load().await.version;
    duplicates_breach(&app).await;
    check_both(&app, &other).await;
    let now = load().await;
    assert!(now.safe_mode.enabled, "tripped");
    assert!(!now.automation_enabled.enabled, "tripped too");
    assert_eq!(now.version, before + 2, "each once, across both consoles");
    assert_eq!(now.safe_mode.changed_by.as_deref(), Some("system"));
    let reason = now.safe_mode.reason.clone().unwrap();
    assert!(
        reason.starts_with("trip: measurements.duplicates fired: ")
            && reason.contains("20.0%")
            && reason.ends_with("(window 24h)"),
        "{reason}"
    );
    let firing = about(&heard, "measurements.duplicates");
    assert_eq!(firing.len(), 1, "{firing:?}");
    let summary = firing[0].2["summary"].as_str().unwrap();
    assert!(
        summary.ends_with("; its trip turned safe mode on; its trip turned automation off"),
        "{summary}"
    );
    // Every page's banner says what put each switch there, until a person changes it.
    let viewer = app.session_as("vera", Role::Viewer).await;
    let banner = || async {
        let shell = app.call::<LoadShellInfo>(&[], Some(&viewer)).await.json();
        shell["live_switches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["what"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        banner().await,
        [
            "Safe mode was turned on by a trip",
            "Automation was turned off by a trip"
        ]
    );
    // A client with `switches:read` lists the trips and the rules they may name.
    let key = app.api_key(&["switches:read"]).await;
    let listed = app
        .api("GET", "/api/v1/kill-switches/trips", &key, None)
        .await
        .json();
    let trips: Vec<(&str, &str)> = listed["trips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["rule"].as_str().unwrap(), t["switch"].as_str().unwrap()))
        .collect();
    assert_eq!(
        trips,
        [
            ("measurements.duplicates", "safe_mode"),
            ("measurements.duplicates", "automation_enabled"),
            ("outbox.dead_letters", "automation_enabled")
        ]
    );
    assert_eq!(listed["trips"][0]["rule_label"], "Measurement duplicates");
    assert!(listed["rules"].as_array().unwrap().len() >= 5);

    // A person turns safe mode off while the alert still fires: the trip does not overrule.
    app.set_switches(false, true).await;
    let v = load().await.version;
    check_both(&app, &other).await;
    assert_eq!(load().await.version, v);
    assert!(!load().await.safe_mode.enabled);
    assert_eq!(banner().await, ["Safe mode is off", "Automation is on"]);
    // It resolves: nothing turns off or on.
    app.clock.advance(Duration::hours(25));
    check_both(&app, &other).await;
    assert_eq!(load().await.version, v);
    assert_eq!(
        about(&heard, "measurements.duplicates").len(),
        2,
        "fired, resolved"
    );
}

/// A trip hands its switch to whoever fires its rule; an admin may trust one scope's clients
/// alone. Limited to a scope, another scope's alert (a device key's failures, say) moves
/// nothing, and its own scope's trips it. The form says who fires each rule, a scope on a rule
/// not judged per scope is refused, and the reason of the change has the figures that tripped.
#[tokio::test]
async fn a_trip_limited_to_one_scope_is_not_fired_by_another_scopes_clients() {
    use ops_console::api::kill_switches::ChangeKillSwitchTrip;
    use ops_console::model::kill_switches::Switch;
    use ops_console::server::ids::random_hex;
    use ops_console::server::store::kill_switches;
    let app = spawn_app_with(|_| {}).await;
    app.set_switches(false, true).await;
    let admin = app.session_as("ada", Role::Admin).await;
    let inbox = "http:POST /api/v1/inboxes/publish";
    let devices = "http:POST /api/v1/measurements";
    let attach = |rule: &'static str, scope: &'static str| {
        let app = &app;
        let admin = admin.clone();
        async move {
            let key = random_hex(16);
            let fields = [
                ("op", "attach"),
                ("rule", rule),
                ("scope", scope),
                ("switch", "safe_mode"),
                ("idempotency_key", key.as_str()),
            ];
            app.call::<ChangeKillSwitchTrip>(&fields, Some(&admin))
                .await
        }
    };
    let refused = attach("measurements.duplicates", devices).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("not judged per scope"),
        "{}",
        refused.body
    );
    let made = attach("idempotency.failure", inbox).await;
    assert!(made.status.is_success(), "{}", made.body);
    let stored = app.state.kill_switches.trips().await.unwrap().trips;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].rule, format!("idempotency.failure:{inbox}"));

    let load = || async {
        kill_switches::load(&app.store, app.clock.now())
            .await
            .unwrap()
    };
    let why =
        "Failure rate of the scope is 40.0%, above 5.0%, over 24 h (50 requests) (window 24h)";
    // Both scopes' alerts fire (recorded as a console records a firing).
    for scope in [inbox, devices] {
        let id = format!("idempotency.failure:{scope}");
        let change = ops_console::server::store::alerts::Change {
            id: &id,
            to: "firing",
            episode: 1,
            since: "2026-12-06T10:00:00Z",
            summary: why,
            link: "",
            now_ms: app.clock.now().timestamp_millis(),
            expires_at: (app.clock.now() + Duration::days(1)).timestamp(),
        };
        assert!(
            ops_console::server::store::alerts::record(&app.store, &change)
                .await
                .unwrap()
        );
    }
    let switches = &app.state.kill_switches;
    let other = switches
        .trip(&format!("idempotency.failure:{devices}"), 1, why)
        .await
        .unwrap();
    assert!(other.is_empty(), "another scope's alert moves nothing");
    assert!(!load().await.safe_mode.enabled);
    let own = switches
        .trip(&format!("idempotency.failure:{inbox}"), 1, why)
        .await
        .unwrap();
    assert_eq!(own, [Switch::SafeMode]);
    let now = load().await;
    assert!(now.safe_mode.enabled);
    let reason = now.safe_mode.reason.unwrap();
    assert!(
        reason.contains("(50 requests)") && reason.contains("40.0%"),
        "{reason}"
    );

    // Clients read the limit in words, and who fires each rule.
    let key = app.api_key(&["switches:read"]).await;
    let listed = app
        .api("GET", "/api/v1/kill-switches/trips", &key, None)
        .await
        .json();
    assert_eq!(
        listed["trips"][0]["rule_label"],
        format!("Idempotency failure rate of {inbox}")
    );
    let rules = listed["rules"].as_array().unwrap();
    let duplicates = rules
        .iter()
        .find(|r| r["rule"] == "measurements.duplicates")
        .unwrap();
    assert_eq!(duplicates["per_scope"], false);
    assert!(duplicates["driven_by"]
        .as_str()
        .unwrap()
        .contains("device key"));
}

#[tokio::test]
async fn a_breach_is_announced_once_by_two_consoles_and_its_end_once() {
    let (heard, base) = channel().await;
    let app = spawn_app_with(|c| {
        c.alerts.webhook_url = format!("{base}/json");
        c.alerts.slack_url = format!("{base}/slack");
        c.operations.public_url = "https://ops.example.com".into();
    })
    .await;
    let other = app.second_console();
    duplicates_breach(&app).await;
    check_both(&app, &other).await;
    let firing = about(&heard, "measurements.duplicates");
    assert_eq!(firing.len(), 2, "one message per channel: {firing:?}");
    let json_msg = firing.iter().find(|(p, _, _)| p == "/json").unwrap();
    assert_eq!(json_msg.1, "measurements.duplicates#1#firing");
    let m = &json_msg.2;
    assert_eq!(m["state"], "firing");
    assert_eq!(m["value"], 20.0);
    assert_eq!(m["threshold"], 10.0);
    assert_eq!(m["window"], "24h");
    assert_eq!(m["sample"], 20);
    assert_eq!(m["link"], "https://ops.example.com/measurements");
    let slack = firing.iter().find(|(p, _, _)| p == "/slack").unwrap();
    let text = slack.2["text"].as_str().unwrap();
    assert!(
        text.contains("FIRING")
            && text.contains("20.0%")
            && text.contains("https://ops.example.com/measurements"),
        "{text}"
    );
    // The Overview lists it.
    let listed = app.state.alerts.firing().await.unwrap();
    assert!(
        listed.iter().any(|a| a.id == "measurements.duplicates"),
        "{listed:?}"
    );

    // A day later the window holds no attempts: the alert clears, announced once.
    app.clock.advance(Duration::hours(25));
    check_both(&app, &other).await;
    let all = about(&heard, "measurements.duplicates");
    let resolved: Vec<_> = all
        .iter()
        .filter(|(_, id, _)| id.ends_with("#resolved"))
        .collect();
    assert_eq!(
        resolved.len(),
        2,
        "one resolved message per channel: {all:?}"
    );
    assert_eq!(resolved[0].1, "measurements.duplicates#1#resolved");
    assert_eq!(all.len(), 4, "nothing else about it: {all:?}");
    assert!(!app
        .state
        .alerts
        .firing()
        .await
        .unwrap()
        .iter()
        .any(|a| a.id == "measurements.duplicates"));
}

/// A receiver that fails every delivery: its health says so (attempts against deliveries
/// as the receiver counted them, since when, the last error in words), both consoles
/// announce the alert once, and once more when it takes deliveries again.
#[tokio::test]
async fn a_receiver_failing_every_delivery_shows_its_health_and_is_announced_once() {
    use ops_console::model::users::Role;
    let (heard, base) = channel().await;
    let secret = SigningSecret::generate();
    let (receiver, url) = Receiver::start(vec![secret.clone()]).await;
    let app = spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
        c.events.retry_schedule = "1s,2s,4s,8s".into();
        c.alerts.webhook_url = format!("{base}/json");
    })
    .await;
    app.set_switches(false, true).await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;
    receiver.fail_next(1000, 503);
    for c in 0..3 {
        let e = event(&format!("c-fail-{c}"), Some("m-1"), "hi");
        assert_eq!(post_event(&app, &key, &e).await.status, 200);
    }
    for _ in 0..3 {
        let (a, b) = tokio::join!(
            app.state.events.dispatch_all(),
            other.state.events.dispatch_all()
        );
        a.unwrap();
        b.unwrap();
        app.clock.advance(Duration::milliseconds(2_100));
    }
    let sent = 1000 - receiver.fail_first.lock().unwrap().0 as u64;
    assert!(sent >= 6, "the receiver was called: {sent}");
    let h = app
        .state
        .events
        .receiver(Role::Viewer)
        .await
        .unwrap()
        .health
        .unwrap();
    assert_eq!(h.attempts_last_hour, sent, "every attempt the receiver saw");
    assert_eq!(
        h.delivered_last_hour, 0,
        "failed attempts are not deliveries"
    );
    assert!(h.every_attempt_failed && h.failing_since.is_some(), "{h:?}");
    assert_eq!(h.last_success, None);
    assert_eq!(h.last_error.as_deref(), Some("receiver answered 503"));

    check_both(&app, &other).await;
    let firing = about(&heard, "outbox.receiver_failing");
    assert_eq!(firing.len(), 1, "announced once: {firing:?}");
    assert_eq!(firing[0].1, "outbox.receiver_failing#1#firing");
    let summary = firing[0].2["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("took 0 of {sent} delivery attempts"))
            && summary.contains("receiver answered 503"),
        "{summary}"
    );
    assert_eq!(firing[0].2["sample"], sent);

    // The receiver takes deliveries again: healthy, and the alert resolves once. Its
    // failures opened the breaker: the first probe (due after `breaker_probe_seconds`)
    // closes it, and the rest follow.
    receiver.fail_next(0, 503);
    app.clock.advance(Duration::seconds(31));
    app.state.events.dispatch_all().await.unwrap();
    let delivered = receiver.total() as u64;
    assert!(delivered >= 3, "every side effect delivered: {delivered}");
    assert!(receiver.counts().values().all(|n| *n == 1), "once each");
    let h = app
        .state
        .events
        .receiver(Role::Viewer)
        .await
        .unwrap()
        .health
        .unwrap();
    assert_eq!(h.delivered_last_hour, delivered);
    assert_eq!(h.attempts_last_hour, sent + delivered);
    assert!(h.failing_since.is_none() && h.last_error.is_none() && h.last_success.is_some());
    check_both(&app, &other).await;
    let all = about(&heard, "outbox.receiver_failing");
    assert_eq!(all.len(), 2, "firing once, resolved once: {all:?}");
    assert_eq!(all[1].1, "outbox.receiver_failing#1#resolved");
}

/// A receiver nobody listens at: its error reads in words, not the connector's.
#[tokio::test]
async fn a_receiver_that_refuses_connections_reads_so_in_words() {
    use ops_console::model::users::Role;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let secret = SigningSecret::generate();
    let app = spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
    })
    .await;
    app.set_switches(false, true).await;
    let key = app.api_key(&["events:write"]).await;
    let e = event("c-closed", Some("m-1"), "hi");
    assert_eq!(post_event(&app, &key, &e).await.status, 200);
    app.state.events.dispatch_all().await.unwrap();
    let h = app
        .state
        .events
        .receiver(Role::Admin)
        .await
        .unwrap()
        .health
        .unwrap();
    assert_eq!((h.attempts_last_hour, h.delivered_last_hour), (1, 0));
    assert_eq!(
        h.last_error.as_deref(),
        Some("could not connect: connection refused (nothing listens at that address)")
    );
}

/// The measurement rules of design doc 5 are judged by the alerter: a burst of measurements
/// older than the user's newest is an out-of-order spike against a quiet day.
#[tokio::test]
async fn an_out_of_order_spike_is_judged_breached_and_the_quiet_rules_not() {
    let app = spawn_app_with(|_| {}).await;
    let key = app.api_key(&["measurements:write"]).await;
    // Attempts are counted in the hour they are posted: all 22 land in one.
    app.stand_in_next_hour(Duration::minutes(1));
    let newest = app.clock.now() - Duration::minutes(5);
    for i in 0..22i64 {
        let t = (newest - Duration::minutes(i * 10)).to_rfc3339();
        let body = json!({"measurement_id": format!("ooo-{i}"), "user_id": "u-ooo", "weight": 70.0,
                          "unit": "kg", "timestamp": t, "source": "scale"})
        .to_string();
        let a = app.post_json("/api/v1/measurements", &key, body).await;
        assert!(a.status.as_u16() < 500, "{}", a.body);
    }
    let judged = app.state.alerts.judge().await.unwrap();
    let rule = |id: &str| {
        judged
            .iter()
            .find(|j| j.id == id)
            .unwrap_or_else(|| panic!("{id}: {judged:?}"))
    };
    let spike = rule("measurements.out_of_order_spike");
    assert!(spike.breached, "{spike:?}");
    assert_eq!(spike.sample, 22);
    assert!(!rule("measurements.audit_growth").breached);
    assert!(!rule("measurements.duplicates").breached);
}
