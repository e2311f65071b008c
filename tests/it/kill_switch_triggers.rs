//! Trigger URLs (docs/switches.md, "Trigger URLs"): an outside monitor moves a switch to its
//! safe position through a secret URL, once however often it calls; a wrong, rotated or
//! revoked secret changes nothing.

use serde_json::json;

use ops_console::api::kill_switches::{RevokeKillSwitchTrigger, RotateKillSwitchTrigger};
use ops_console::model::kill_switches::Switch;
use ops_console::model::users::Role;
use ops_console::server::ids::random_hex;
use ops_console::server::store::kill_switches;

use crate::helpers::{spawn_app, Answer, TestApp};

async fn call(app: &TestApp, secret: &str, body: &str) -> Answer {
    let req = axum::http::Request::post(format!("/api/v1/kill-switches/triggers/{secret}"))
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    app.send(req).await
}

/// Alertmanager's webhook payload (version 4), with a label no record may keep.
fn alertmanager(status: &str) -> String {
    json!({
        "version": "4", "status": status, "receiver": "ops-console",
        "groupKey": "{}:{alertname=\"HighErrorRate\"}",
        "groupLabels": {"alertname": "HighErrorRate"},
        "commonLabels": {"alertname": "HighErrorRate", "customer": "jane.doe@example.com"},
        "alerts": [{"status": status, "labels": {"alertname": "HighErrorRate"},
                    "annotations": {"summary": "call +44 7700 900123"}}]
    })
    .to_string()
}

async fn version(app: &TestApp) -> u64 {
    kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap()
        .version
}

#[tokio::test]
async fn a_trigger_url_turns_safety_on_once_and_keeps_nothing_of_the_payload() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let switches = &app.state.kill_switches;
    let secret = switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let before = version(&app).await;

    let first = call(&app, &secret, &alertmanager("firing")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["changed"], true);
    assert_eq!(first.json()["switch"], "safe_mode");
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert!(stored.safe_mode.enabled);
    assert!(
        stored.automation_enabled.enabled,
        "the other switch untouched"
    );
    assert_eq!(stored.version, before + 1);
    assert_eq!(stored.safe_mode.changed_by.as_deref(), Some("trigger"));
    assert_eq!(
        stored.safe_mode.reason.as_deref(),
        Some("trigger URL: Alertmanager alert HighErrorRate firing")
    );

    // Alertmanager sends again (its repeat interval, a retry): nothing more happens.
    for _ in 0..3 {
        let again = call(&app, &secret, &alertmanager("firing")).await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(again.json()["changed"], false);
    }
    assert_eq!(version(&app).await, before + 1);

    // Off again, then many calls at once (two consoles behind a load balancer): one change.
    app.set_switches(false, true).await;
    let off = version(&app).await;
    let calls = (0..6).map(|_| {
        let body = alertmanager("firing");
        let app = &app;
        let secret = secret.clone();
        async move { call(app, &secret, &body).await }
    });
    let answers = futures_util::future::join_all(calls).await;
    let changed = answers
        .iter()
        .inspect(|a| assert_eq!(a.status, 200, "{}", a.body))
        .filter(|a| a.json()["changed"] == true)
        .count();
    assert_eq!(changed, 1);
    assert_eq!(version(&app).await, off + 1);

    // A resolved alert changes nothing: a person turns safety off again.
    app.set_switches(false, true).await;
    let v = version(&app).await;
    let resolved = call(&app, &secret, &alertmanager("resolved")).await;
    assert_eq!(resolved.status, 200, "{}", resolved.body);
    assert_eq!(resolved.json()["changed"], false);
    let not_json = call(&app, &secret, "fire!").await;
    assert_eq!(not_json.status, 400, "{}", not_json.body);
    assert_eq!(version(&app).await, v);

    // Nothing of the payload's labels or annotations is kept anywhere.
    let dump = app.dump_tables().await;
    assert!(!dump.contains("jane.doe"), "a label was stored");
    assert!(!dump.contains("7700 900123"), "an annotation was stored");
    assert!(!dump.contains(&secret), "the secret itself was stored");
}

#[tokio::test]
async fn a_wrong_rotated_or_revoked_secret_is_a_401_that_changes_nothing() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let switches = &app.state.kill_switches;
    let old = switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let new = switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    assert_ne!(old, new);
    let auto = switches
        .rotate_trigger(Switch::AutomationEnabled, "alice")
        .await
        .unwrap();
    let v = version(&app).await;
    for bad in [
        old.clone(),
        format!("kst_{}", random_hex(32)),
        "kst_short".into(),
        "../../kill-switches".replace('/', "%2F"),
        format!("{new}x"),
    ] {
        let a = call(&app, &bad, "").await;
        assert_eq!(a.status, 401, "{bad}: {}", a.body);
        assert_eq!(a.headers["content-type"], "application/problem+json");
    }
    assert_eq!(version(&app).await, v, "nothing changed");

    // Each switch's URL moves that switch only, to its safe position.
    let a = call(&app, &auto, "").await;
    assert_eq!(a.status, 200, "{}", a.body);
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert!(!stored.automation_enabled.enabled, "automation off");
    assert!(!stored.safe_mode.enabled, "safe mode untouched");
    assert_eq!(
        stored.automation_enabled.reason.as_deref(),
        Some("trigger URL: a monitor firing")
    );

    switches
        .revoke_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let revoked = call(&app, &new, "").await;
    assert_eq!(revoked.status, 401, "{}", revoked.body);
    assert!(
        !kill_switches::load(&app.store, app.clock.now())
            .await
            .unwrap()
            .safe_mode
            .enabled
    );
}

/// The secret in the `Authorization` header (`POST /api/v1/kill-switches/triggers`) does
/// what it does in the path; any other credential there, or none, is a 401 that changes
/// nothing (an API key is no trigger secret).
#[tokio::test]
async fn a_trigger_secret_in_the_authorization_header_works_as_in_the_path() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let secret = app
        .state
        .kill_switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let key = app.api_key(&["switches:write"]).await;
    let by_header = |credential: Option<String>| {
        let mut req = axum::http::Request::post("/api/v1/kill-switches/triggers")
            .header("host", "localhost")
            .header("content-type", "application/json");
        if let Some(c) = credential {
            req = req.header("authorization", c);
        }
        req.body(axum::body::Body::from(alertmanager("firing")))
            .unwrap()
    };
    let v = version(&app).await;
    for bad in [
        None,
        Some(format!("Bearer {key}")),
        Some(format!("Basic {secret}")),
        Some(format!("Bearer kst_{}", random_hex(32))),
    ] {
        let a = app.send(by_header(bad.clone())).await;
        assert_eq!(a.status, 401, "{bad:?}: {}", a.body);
    }
    assert_eq!(version(&app).await, v, "nothing changed");
    let a = app.send(by_header(Some(format!("Bearer {secret}")))).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["changed"], true);
    let again = app.send(by_header(Some(format!("Bearer {secret}")))).await;
    assert_eq!(again.json()["changed"], false, "once");
    assert!(
        kill_switches::load(&app.store, app.clock.now())
            .await
            .unwrap()
            .safe_mode
            .enabled
    );
}

#[tokio::test]
async fn only_admins_make_rotate_or_revoke_trigger_urls_and_the_url_is_shown_once() {
    let app = spawn_app().await;
    for (name, role) in [("vic", Role::Viewer), ("olga", Role::Operator)] {
        let cookie = app.session_as(name, role).await;
        let form = [
            ("switch", "safe_mode"),
            ("idempotency_key", "k0123456789abcdef"),
        ];
        let made = app
            .call::<RotateKillSwitchTrigger>(&form, Some(&cookie))
            .await;
        assert_eq!(made.status, 403, "{name}: {}", made.body);
        let gone = app
            .call::<RevokeKillSwitchTrigger>(&form, Some(&cookie))
            .await;
        assert_eq!(gone.status, 403, "{name}: {}", gone.body);
    }
    assert!(app
        .state
        .kill_switches
        .triggers()
        .await
        .unwrap()
        .safe_mode
        .is_none());

    // A double submission makes one URL; the secret is in the first answer only.
    let admin = app.session_as("root", Role::Admin).await;
    let form = [
        ("switch", "safe_mode"),
        ("idempotency_key", "k1123456789abcdef"),
    ];
    let first = app
        .call::<RotateKillSwitchTrigger>(&form, Some(&admin))
        .await;
    let again = app
        .call::<RotateKillSwitchTrigger>(&form, Some(&admin))
        .await;
    assert_eq!(
        (first.status.as_u16(), again.status.as_u16()),
        (200, 200),
        "{} {}",
        first.body,
        again.body
    );
    let url = first.json()["secret"].as_str().unwrap().to_string();
    assert!(url.contains("/api/v1/kill-switches/triggers/kst_"), "{url}");
    assert!(again.json()["secret"].is_null(), "{}", again.body);
    let stored = app.state.kill_switches.triggers().await.unwrap();
    assert_eq!(stored.version, 1, "made once");
    let secret = url.rsplit('/').next().unwrap();
    app.set_switches(false, false).await;
    assert_eq!(call(&app, secret, "").await.status, 200);
    // Its history, in words, for anyone reading the audit.
    let page = app.state.kill_switches.history(None, 10).await.unwrap();
    assert_eq!(page.entries[0].actor, "trigger");
}

/// The history tells every change of the switches' partition: a move, and a change of what
/// moves them without a person (a trip, a trigger URL), in words. A page of ten is ten rows
/// even when the newest records are all such changes (they used to be dropped, leaving a
/// first page of "No changes yet" above an Older link).
#[tokio::test]
async fn the_history_tells_trips_and_trigger_urls_and_keeps_its_pages_full() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let switches = &app.state.kill_switches;
    app.set_switches(true, true).await;
    for _ in 0..6 {
        switches
            .rotate_trigger(Switch::SafeMode, "alice")
            .await
            .unwrap();
    }
    for _ in 0..3 {
        switches
            .attach_trip("outbox.dead_letters", Switch::SafeMode, "bob")
            .await
            .unwrap();
        switches
            .remove_trip("outbox.dead_letters", Switch::SafeMode, "bob")
            .await
            .unwrap();
    }
    let first = switches.history(None, 10).await.unwrap();
    assert_eq!(first.entries.len(), 10, "{:?}", first.entries);
    let newest = &first.entries[0];
    assert_eq!(
        (newest.actor.as_str(), newest.switch, newest.moved),
        ("bob", Switch::SafeMode, None)
    );
    assert!(
        newest.reason.starts_with("Trip ") && newest.reason.contains("outbox.dead_letters"),
        "{}",
        newest.reason
    );
    assert!(
        first.entries[6..]
            .iter()
            .all(|e| e.reason == "Safe mode's trigger URL rotated" && e.moved.is_none()),
        "{:?}",
        first.entries
    );
    let older = switches
        .history(first.next_cursor.as_deref(), 10)
        .await
        .unwrap();
    let reasons: Vec<&str> = older.entries.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons[..3],
        [
            "Safe mode's trigger URL rotated",
            "Safe mode's trigger URL made",
            "test setup"
        ],
        "{:?}",
        older.entries
    );
    assert_eq!(older.entries[2].moved, Some((false, true)));
}

/// A body over 256 KiB is a 413 problem, read no further, and changes nothing, whatever
/// the secret.
#[tokio::test]
async fn a_trigger_body_over_its_limit_is_a_413_that_changes_nothing() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let secret = app
        .state
        .kill_switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let before = version(&app).await;
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(300 * 1024));
    let answer = call(&app, &secret, &big).await;
    assert_eq!(answer.status, 413, "{}", answer.body);
    assert_eq!(
        answer.headers["content-type"], "application/problem+json",
        "{}",
        answer.body
    );
    assert_eq!(version(&app).await, before);
}

/// Alertmanager sends a firing group again every repeat interval: one firing episode (its
/// group and start) moves the switch once, so a person who turns safety off while the
/// alert still fires is not overruled by the next repeat; the alert firing anew is a new
/// episode.
#[tokio::test]
async fn a_repeat_of_the_same_firing_never_overrules_a_person() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    let secret = app
        .state
        .kill_switches
        .rotate_trigger(Switch::SafeMode, "alice")
        .await
        .unwrap();
    let firing = |started: &str| {
        json!({
            "version": "4", "status": "firing", "groupKey": "{}:{alertname=\"HighErrorRate\"}",
            "commonLabels": {"alertname": "HighErrorRate"},
            "alerts": [{"status": "firing", "startsAt": started}]
        })
        .to_string()
    };
    let first = call(&app, &secret, &firing("2026-11-27T08:00:00Z")).await;
    assert_eq!(first.json()["changed"], true, "{}", first.body);
    // A person decides safety may go off while the alert still fires.
    app.set_switches(false, true).await;
    let before = version(&app).await;
    for _ in 0..2 {
        let repeat = call(&app, &secret, &firing("2026-11-27T08:00:00Z")).await;
        assert_eq!(repeat.status, 200, "{}", repeat.body);
        assert_eq!(repeat.json()["changed"], false, "{}", repeat.body);
    }
    assert_eq!(version(&app).await, before, "the person's change stands");
    // It resolved and fired again: a new episode moves the switch.
    let again = call(&app, &secret, &firing("2026-11-27T10:00:00Z")).await;
    assert_eq!(again.json()["changed"], true, "{}", again.body);
    assert_eq!(version(&app).await, before + 1);
}
