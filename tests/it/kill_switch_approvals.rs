//! Four eyes (docs/switches.md, "Approvals"): with approvals required, turning safe mode off
//! or automation on is a request a second admin approves or rejects; the requester cannot
//! approve; an expired, replaced or stale request cannot be approved; two approvals at once
//! apply the change once; the emergency path is for named admins, marked and announced;
//! turning safety on never waits; a viewer or an operator can do none of it.

use serde_json::json;

use ops_console::api::kill_switches::{
    ChangeKillSwitch, DecideKillSwitchApproval, LoadKillSwitchApprovals,
};
use ops_console::model::kill_switches::{Approval, KillSwitches};
use ops_console::model::users::Role;
use ops_console::server::store::kill_switches;

use crate::helpers::{spawn_app_with, Answer, TestApp};

/// An app that requires approvals, with `erin` as its emergency admin and alerts sent to
/// `alerts` (if any).
async fn strict(alerts: Option<String>) -> TestApp {
    spawn_app_with(|c| {
        c.switches.require_approval = Some(true);
        c.switches.emergency_admins = "erin".into();
        if let Some(url) = alerts {
            c.alerts.webhook_url = url;
        }
    })
    .await
}

async fn switches(app: &TestApp) -> KillSwitches {
    kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap()
}

async fn pending(app: &TestApp) -> Vec<Approval> {
    app.state.kill_switches.approvals().await.unwrap()
}

/// Asks to turn safe mode off through the console's form, against the switches as stored.
async fn ask_off(
    app: &TestApp,
    who: &str,
    key: &str,
    reason: &str,
    extra: &[(&str, &str)],
) -> Answer {
    let version = switches(app).await.version;
    ask_off_at(app, who, key, reason, version, extra).await
}

/// [`ask_off`] against the switches' `version` as the page showed it.
async fn ask_off_at(
    app: &TestApp,
    who: &str,
    key: &str,
    reason: &str,
    version: u64,
    extra: &[(&str, &str)],
) -> Answer {
    let version = version.to_string();
    let mut fields = vec![
        ("switch", "safe_mode"),
        ("enable", "false"),
        ("expected_version", version.as_str()),
        ("reason", reason),
        ("confirm", "yes"),
        ("idempotency_key", key),
    ];
    fields.extend_from_slice(extra);
    app.call::<ChangeKillSwitch>(&fields, Some(who)).await
}

async fn decide(app: &TestApp, who: &str, id: &str, decision: &str, key: &str) -> Answer {
    app.call::<DecideKillSwitchApproval>(
        &[
            ("id", id),
            ("decision", decision),
            ("reason", "checked the incident channel"),
            ("idempotency_key", key),
        ],
        Some(who),
    )
    .await
}

#[tokio::test]
async fn turning_safety_off_waits_for_a_second_admin_who_is_not_its_requester() {
    let app = strict(None).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let bob = app.session_as("bob", Role::Admin).await;
    let olga = app.session_as("olga", Role::Operator).await;
    let vic = app.session_as("vic", Role::Viewer).await;
    let before = switches(&app).await;
    assert!(before.safe_mode.enabled);

    let asked = ask_off(&app, &alice, "form-key-approvals-0001", "go live", &[]).await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(asked.body.contains("Requested"), "{}", asked.body);
    // A double click asks once.
    let again = ask_off(&app, &alice, "form-key-approvals-0001", "go live", &[]).await;
    assert_eq!(again.status, 200, "{}", again.body);
    let waiting = pending(&app).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let id = waiting[0].id.clone();
    assert_eq!(waiting[0].requested_by, "alice");
    assert_eq!(switches(&app).await, before, "nothing changed yet");

    // Everyone reads the requests; the Kill switches page counts them.
    let listed = app.call::<LoadKillSwitchApprovals>(&[], Some(&vic)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains(&id), "{}", listed.body);
    let key = app.api_key(&["switches:read"]).await;
    let rest = app
        .api("GET", "/api/v1/kill-switches/approvals", &key, None)
        .await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!(rest.json()["requests"][0]["id"], id.as_str());

    // The requester cannot approve; a viewer or an operator cannot decide at all.
    let own = decide(&app, &alice, &id, "approve", "form-key-approvals-0002").await;
    assert_eq!(own.status, 403, "{}", own.body);
    assert!(own.body.contains("another admin"), "{}", own.body);
    for (who, key) in [
        (&olga, "form-key-approvals-0003"),
        (&vic, "form-key-approvals-0004"),
    ] {
        for decision in ["approve", "reject"] {
            let no = decide(&app, who, &id, decision, key).await;
            assert_eq!(no.status, 403, "{}", no.body);
        }
        let no = ask_off(&app, who, key, "me too", &[]).await;
        assert_eq!(no.status, 403, "{}", no.body);
    }
    assert_eq!(pending(&app).await.len(), 1);
    assert_eq!(switches(&app).await, before);

    // A second admin approves: the change lands as alice's, saying who approved it.
    let yes = decide(&app, &bob, &id, "approve", "form-key-approvals-0005").await;
    assert_eq!(yes.status, 200, "{}", yes.body);
    assert!(yes.body.contains("Approved"), "{}", yes.body);
    let after = switches(&app).await;
    assert!(!after.safe_mode.enabled);
    assert_eq!(after.version, before.version + 1);
    assert_eq!(after.safe_mode.changed_by.as_deref(), Some("alice"));
    assert_eq!(after.safe_mode.reason.as_deref(), Some("go live"));
    assert!(pending(&app).await.is_empty());

    // Approving it again (another form) finds nothing to approve.
    let twice = decide(&app, &bob, &id, "approve", "form-key-approvals-0006").await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert!(twice.body.contains("no longer pending"), "{}", twice.body);
    assert_eq!(switches(&app).await.version, after.version);

    // The history tells the request and the approved change, in words.
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let change = &history.entries[0];
    assert_eq!(change.moved, Some((true, false)));
    assert_eq!(change.actor, "alice");
    let note = change.note.clone().unwrap_or_default();
    assert!(
        note.contains("approved by bob") && note.contains("checked the incident channel"),
        "{note}"
    );
    // The approval is bob's own record too: the audit trail finds it by who made it.
    let approval = &history.entries[1];
    assert_eq!(approval.actor, "bob");
    assert_eq!(approval.moved, None);
    assert_eq!(
        approval.reason,
        "Approved alice's request to turn safe mode off: “checked the incident channel”"
    );
    let request = &history.entries[2];
    assert_eq!(request.moved, None);
    assert_eq!(request.actor, "alice");
    assert!(
        request
            .reason
            .starts_with("Asks a second admin to turn safe mode off: “go live”"),
        "{}",
        request.reason
    );
}

#[tokio::test]
async fn an_expired_a_replaced_or_a_stale_request_cannot_be_approved() {
    let app = strict(None).await;
    app.set_switches(true, true).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let bob = app.session_as("bob", Role::Admin).await;
    let carol = app.session_as("carol", Role::Admin).await;

    // Replaced: alice asks again (an edit); the first request can no longer be approved.
    ask_off(&app, &alice, "form-key-replaced-0001", "first words", &[]).await;
    let first = pending(&app).await[0].id.clone();
    let edit = ask_off(&app, &alice, "form-key-replaced-0002", "better words", &[]).await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    let waiting = pending(&app).await;
    assert_eq!(waiting.len(), 1);
    assert_ne!(waiting[0].id, first);
    assert_eq!(waiting[0].reason, "better words");
    let old = decide(&app, &bob, &first, "approve", "form-key-replaced-0003").await;
    assert_eq!(old.status, 409, "{}", old.body);
    // Another admin cannot ask over it.
    let over = ask_off(&app, &carol, "form-key-replaced-0004", "mine", &[]).await;
    assert_eq!(over.status, 409, "{}", over.body);
    assert!(over.body.contains("alice's request"), "{}", over.body);

    // Stale: the switches changed since (automation turned off: towards safety, at once).
    let second = waiting[0].id.clone();
    let version = switches(&app).await.version.to_string();
    let off = app
        .call::<ChangeKillSwitch>(
            &[
                ("switch", "automation_enabled"),
                ("enable", "false"),
                ("expected_version", version.as_str()),
                ("reason", "calm down"),
                ("idempotency_key", "form-key-replaced-0005"),
            ],
            Some(&carol),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert!(
        !off.body.contains("Requested"),
        "safety on never waits: {}",
        off.body
    );
    let before = switches(&app).await;
    assert!(!before.automation_enabled.enabled);
    let stale = decide(&app, &bob, &second, "approve", "form-key-replaced-0006").await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(
        stale.body.contains("can no longer be approved"),
        "{}",
        stale.body
    );
    assert_eq!(switches(&app).await, before);

    // Expired: a fresh request, an hour and a minute later.
    ask_off(&app, &alice, "form-key-replaced-0007", "third time", &[]).await;
    let third = pending(&app).await[0].id.clone();
    app.clock.advance(chrono::Duration::minutes(61));
    assert!(
        pending(&app).await.is_empty(),
        "an expired request is not listed"
    );
    let late = decide(&app, &bob, &third, "approve", "form-key-replaced-0008").await;
    assert_eq!(late.status, 409, "{}", late.body);
    assert!(late.body.contains("expired"), "{}", late.body);
    assert_eq!(switches(&app).await, before);
}

#[tokio::test]
async fn two_admins_approving_on_two_consoles_at_once_apply_the_change_once() {
    let app = strict(None).await;
    let other = app.second_console();
    let alice = app.session_as("alice", Role::Admin).await;
    let bob = app.session_as("bob", Role::Admin).await;
    let carol = app.session_as("carol", Role::Admin).await;
    ask_off(&app, &alice, "form-key-race-00000001", "go live", &[]).await;
    let id = pending(&app).await[0].id.clone();
    let before = switches(&app).await;
    let (a, b) = tokio::join!(
        decide(&app, &bob, &id, "approve", "form-key-race-00000002"),
        decide(&other, &carol, &id, "approve", "form-key-race-00000003"),
    );
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} / {}", a.body, b.body);
    assert_eq!(switches(&app).await.version, before.version + 1);
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let changes = history.entries.iter().filter(|e| e.moved.is_some()).count();
    assert_eq!(changes, 1, "{history:?}");
}

#[tokio::test]
async fn the_emergency_path_is_for_named_admins_marked_in_the_history_and_announced() {
    let (heard, base) = crate::alerts::channel().await;
    let app = strict(Some(format!("{base}/json"))).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let erin = app.session_as("erin", Role::Admin).await;
    let before = switches(&app).await;

    let no = ask_off(
        &app,
        &alice,
        "form-key-emergency-001",
        "now",
        &[("emergency", "yes")],
    )
    .await;
    assert_eq!(no.status, 403, "{}", no.body);
    assert!(no.body.contains("emergency admins"), "{}", no.body);
    assert!(pending(&app).await.is_empty());
    assert_eq!(switches(&app).await, before);

    let yes = ask_off(
        &app,
        &erin,
        "form-key-emergency-002",
        "customers waiting",
        &[("emergency", "yes")],
    )
    .await;
    assert_eq!(yes.status, 200, "{}", yes.body);
    // A double click (the same form, as the page showed it) announces once.
    let again = ask_off_at(
        &app,
        &erin,
        "form-key-emergency-002",
        "customers waiting",
        before.version,
        &[("emergency", "yes")],
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let after = switches(&app).await;
    assert!(!after.safe_mode.enabled);
    assert_eq!(after.version, before.version + 1);
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let note = history.entries[0].note.clone().unwrap_or_default();
    assert!(note.starts_with("emergency:"), "{note}");
    let messages: Vec<_> = heard
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, body)| body["summary"].as_str().unwrap_or_default().to_string())
        .filter(|s| s.starts_with("Emergency: erin turned Safe mode off"))
        .collect();
    assert_eq!(messages.len(), 1, "{messages:?}");

    // Turning safety on again never waits, for anyone.
    let version = after.version.to_string();
    let on = app
        .call::<ChangeKillSwitch>(
            &[
                ("switch", "safe_mode"),
                ("enable", "true"),
                ("expected_version", version.as_str()),
                ("reason", "back to safe"),
                ("idempotency_key", "form-key-emergency-003"),
            ],
            Some(&alice),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert!(switches(&app).await.safe_mode.enabled);
    assert!(pending(&app).await.is_empty());
}

#[tokio::test]
async fn a_client_asks_through_the_api_and_a_person_other_than_its_maker_approves() {
    use ops_console::model::api_keys::ApiScope;
    let app = strict(None).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let bob = app.session_as("bob", Role::Admin).await;
    let write = ApiScope::parse("switches:write").unwrap();
    let key = app
        .state
        .api_keys
        .create_api_key("incident-bot", &[write], 30, "alice")
        .await
        .unwrap();
    let body = json!({"switch": "safe_mode", "enable": false, "expected_version": 0,
                      "reason": "deploy done", "confirm": true})
    .to_string();
    let post = || {
        axum::http::Request::post("/api/v1/kill-switches")
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .header("idempotency-key", "client-asks-1")
            .body(axum::body::Body::from(body.clone()))
            .unwrap()
    };
    let first = app.send(post()).await;
    assert_eq!(first.status, 202, "{}", first.body);
    assert_eq!(first.json()["status"], "awaiting_approval");
    let id = first.json()["request"]["id"].as_str().unwrap().to_string();
    // The client's retry asks once.
    let retry = app.send(post()).await;
    assert_eq!(retry.status, 202, "{}", retry.body);
    assert_eq!(retry.json()["request"]["id"], id.as_str());
    assert_eq!(pending(&app).await.len(), 1);
    assert!(switches(&app).await.safe_mode.enabled);

    // The admin who made the key asked through it: they cannot approve it either.
    let own = decide(&app, &alice, &id, "approve", "form-key-client-00000").await;
    assert_eq!(own.status, 403, "{}", own.body);
    assert_eq!(
        pending(&app).await[0].on_behalf_of.as_deref(),
        Some("alice")
    );

    let yes = decide(&app, &bob, &id, "approve", "form-key-client-00001").await;
    assert_eq!(yes.status, 200, "{}", yes.body);
    let after = switches(&app).await;
    assert!(!after.safe_mode.enabled);
    assert!(
        after
            .safe_mode
            .changed_by
            .as_deref()
            .is_some_and(|b| b.starts_with("api:")),
        "{after:?}"
    );
}

/// Four eyes are two people: an admin made or promoted after a request cannot approve it
/// (its requester could have made them), the console makes no admins while approvals are
/// required, the person who made a key on the command line cannot approve what the key
/// asks, and a request whose requester lost the right cannot be approved.
#[tokio::test]
async fn four_eyes_are_two_people_not_a_requester_and_an_admin_they_made() {
    use ops_console::api::users::{AddUser, ResetPassword, SetUserRole};
    use ops_console::model::api_keys::ApiScope;
    let app = strict(None).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let carol = app.session_as("carol", Role::Admin).await;
    let root = app.session_as("root", Role::Admin).await;
    let olga = app.session_as("olga", Role::Operator).await;

    // The console refuses to make an admin here, plainly; the command line still does.
    let added = app
        .call::<AddUser>(
            &[
                ("name", "mallory"),
                ("role", "admin"),
                ("idempotency_key", "form-key-users-0901"),
            ],
            Some(&alice),
        )
        .await;
    assert_eq!(added.status, 403, "{}", added.body);
    assert!(added.body.contains("command line"), "{}", added.body);
    let promoted = app
        .call::<SetUserRole>(
            &[
                ("name", "olga"),
                ("role", "admin"),
                ("reason", "she approves for me"),
            ],
            Some(&alice),
        )
        .await;
    assert_eq!(promoted.status, 403, "{}", promoted.body);
    let _ = olga;
    // Nor does it reset another admin's password (the one who sees it could approve as
    // them); an operator's it does.
    let reset = |name: &'static str, key: &'static str| {
        let app = &app;
        let alice = alice.clone();
        async move {
            app.call::<ResetPassword>(
                &[
                    ("name", name),
                    ("reason", "forgot it"),
                    ("idempotency_key", key),
                ],
                Some(&alice),
            )
            .await
        }
    };
    let refused = reset("carol", "form-key-users-0902").await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("command line"), "{}", refused.body);
    let operator = reset("olga", "form-key-users-0903").await;
    assert_eq!(operator.status, 200, "{}", operator.body);

    // Alice asks; an admin made afterwards (on the command line) cannot approve it.
    let asked = ask_off(&app, &alice, "form-key-approvals-0901", "go live", &[]).await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    let id = pending(&app).await[0].id.clone();
    app.clock.advance(chrono::Duration::minutes(1));
    let made_after = app.session_as("alice2", Role::Admin).await;
    let refused = decide(&app, &made_after, &id, "approve", "form-key-approvals-0902").await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("after this request was made"),
        "{}",
        refused.body
    );
    assert!(switches(&app).await.safe_mode.enabled, "nothing changed");

    // A key made on the command line by root asks; root cannot approve it.
    let key = app
        .state
        .api_keys
        .create_api_key("incident-bot", &[ApiScope::SwitchesWrite], 30, "cli:root")
        .await
        .unwrap();
    let rejected = decide(&app, &carol, &id, "reject", "form-key-approvals-0903").await;
    assert_eq!(rejected.status, 200, "{}", rejected.body);
    let body = json!({"switch": "safe_mode", "enable": false,
                      "expected_version": switches(&app).await.version,
                      "reason": "maintenance over", "confirm": true})
    .to_string();
    let by_key = app
        .post_json_with_key_header("/api/v1/kill-switches", &key, "approvals-cli-1", body)
        .await;
    assert_eq!(by_key.status, 202, "{}", by_key.body);
    let id = pending(&app).await[0].id.clone();
    let own = decide(&app, &root, &id, "approve", "form-key-approvals-0904").await;
    assert_eq!(own.status, 403, "{}", own.body);
    assert!(own.body.contains("another admin"), "{}", own.body);

    // The key lapses (it is made to expire here): its request can no longer be approved.
    let table = app
        .store
        .table(ops_console::server::store::schema::API_KEYS.base);
    let hash = ops_console::server::store::api_keys::list(&app.store, app.clock.now())
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.name == "incident-bot")
        .unwrap()
        .key_hash;
    app.store
        .client()
        .update_item()
        .table_name(table)
        .key("key_hash", aws_sdk_dynamodb::types::AttributeValue::S(hash))
        .update_expression("SET expires_at = :e")
        .expression_attribute_values(
            ":e",
            aws_sdk_dynamodb::types::AttributeValue::N(app.clock.now().timestamp().to_string()),
        )
        .send()
        .await
        .unwrap();
    let lapsed = decide(&app, &carol, &id, "approve", "form-key-approvals-0905").await;
    assert_eq!(lapsed.status, 403, "{}", lapsed.body);
    assert!(
        lapsed.body.contains("can no longer be approved"),
        "{}",
        lapsed.body
    );
    assert!(switches(&app).await.safe_mode.enabled, "nothing changed");
}
