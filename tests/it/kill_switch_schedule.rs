//! Scheduled changes (docs/switches.md, "Scheduled changes"): a change set for later runs
//! once across consoles, whichever set it, on behalf of its author; a switch changed after
//! it was set voids it, and the history says why; conflicts are refused with the reason; a
//! cancel needs an admin and a reason; where turning safety off needs four eyes, it cannot
//! be scheduled.

use chrono::Duration;
use serde_json::json;

use ops_console::api::kill_switches::{CancelKillSwitchChange, ChangeKillSwitch};
use ops_console::model::kill_switches::KillSwitches;
use ops_console::model::users::Role;
use ops_console::server::store::kill_switches;

use crate::helpers::{spawn_app, spawn_app_with, Answer, TestApp};

async fn switches(app: &TestApp) -> KillSwitches {
    kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap()
}

/// The form's time for `minutes` from now (UTC, to the minute, as a `datetime-local` input
/// sends it).
fn in_minutes(app: &TestApp, minutes: i64) -> String {
    (app.clock.now() + Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M")
        .to_string()
}

/// Sets `switch` to `enable` at `at` through the console's form.
async fn set_for(
    app: &TestApp,
    who: &str,
    switch: &str,
    enable: bool,
    at: &str,
    key: &str,
) -> Answer {
    let version = switches(app).await.version.to_string();
    let enable = enable.to_string();
    app.call::<ChangeKillSwitch>(
        &[
            ("switch", switch),
            ("enable", &enable),
            ("expected_version", &version),
            ("reason", "holiday cover"),
            ("confirm", "yes"),
            ("at", at),
            ("idempotency_key", key),
        ],
        Some(who),
    )
    .await
}

/// Sets safe mode to `enable` in `minutes` through the API with `key`: 202 expected.
async fn set_by_key(app: &TestApp, key: &str, enable: bool, minutes: i64, idem: &str) -> Answer {
    let at = (app.clock.now() + Duration::minutes(minutes)).to_rfc3339();
    let body = json!({"switch": "safe_mode", "enable": enable,
                      "expected_version": switches(app).await.version,
                      "reason": "maintenance window", "confirm": true, "at": at})
    .to_string();
    let set = app
        .post_json_with_key_header("/api/v1/kill-switches", key, idem, body)
        .await;
    assert_eq!(set.status, 202, "{}", set.body);
    set
}

#[tokio::test]
async fn a_scheduled_change_runs_once_across_two_consoles_on_behalf_of_its_author() {
    let app = spawn_app().await;
    let other = app.second_console();
    let alice = app.session_as("alice", Role::Admin).await;
    let before = switches(&app).await;
    let at = in_minutes(&app, 10);
    for _ in 0..2 {
        // A double click sets it once.
        let set = set_for(
            &app,
            &alice,
            "safe_mode",
            false,
            &at,
            "form-key-schedule-0001",
        )
        .await;
        assert_eq!(set.status, 200, "{}", set.body);
        assert!(
            set.body.contains("Scheduled: Safe mode turns off at"),
            "{}",
            set.body
        );
    }
    let pending = app.state.kill_switches.schedule().await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].scheduled_by, "alice");
    assert_eq!(
        switches(&app).await,
        before,
        "nothing changes before its time"
    );
    assert!(app
        .state
        .kill_switches
        .run_schedule_due()
        .await
        .unwrap()
        .is_empty());

    app.clock.advance(Duration::minutes(11));
    let (a, b) = tokio::join!(
        app.state.kill_switches.run_schedule_due(),
        other.state.kill_switches.run_schedule_due(),
    );
    let ran: Vec<String> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(
        ran[0].starts_with("Scheduled: Safe mode turned off (set by alice"),
        "{}",
        ran[0]
    );
    let after = switches(&app).await;
    assert!(!after.safe_mode.enabled);
    assert_eq!(after.version, before.version + 1);
    assert_eq!(after.safe_mode.changed_by.as_deref(), Some("schedule"));
    assert!(app.state.kill_switches.schedule().await.unwrap().is_empty());
    // A console that looks late finds nothing to do.
    assert!(other
        .state
        .kill_switches
        .run_schedule_due()
        .await
        .unwrap()
        .is_empty());
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let run = &history.entries[0];
    assert_eq!(run.actor, "schedule");
    assert_eq!(run.moved, Some((true, false)));
    assert!(
        run.reason.starts_with("scheduled by alice at "),
        "{}",
        run.reason
    );
    assert_eq!(run.note.as_deref(), Some("on behalf of alice"));
    assert!(
        history.entries[1]
            .reason
            .starts_with("Safe mode set to turn off at "),
        "{}",
        history.entries[1].reason
    );
}

#[tokio::test]
async fn a_switch_changed_after_the_change_was_set_voids_it_and_the_history_says_why() {
    let app = spawn_app().await;
    let alice = app.session_as("alice", Role::Admin).await;
    let at = in_minutes(&app, 10);
    let set = set_for(
        &app,
        &alice,
        "automation_enabled",
        true,
        &at,
        "form-key-schedule-0101",
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    // A person turns automation on and off again meanwhile.
    app.set_switches(true, true).await;
    app.set_switches(true, false).await;
    let before = switches(&app).await;
    app.clock.advance(Duration::minutes(11));
    let ran = app.state.kill_switches.run_schedule_due().await.unwrap();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(
        ran[0].starts_with("A scheduled change did not run"),
        "{}",
        ran[0]
    );
    assert_eq!(switches(&app).await, before, "the person's change stands");
    assert!(app.state.kill_switches.schedule().await.unwrap().is_empty());
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let void = &history.entries[0];
    assert_eq!(void.moved, None);
    assert!(
        void.reason
            .starts_with("Did not run: Automation to turn on at ")
            && void
                .reason
                .contains("void: Automation was changed by test at"),
        "{}",
        void.reason
    );
}

#[tokio::test]
async fn conflicting_changes_are_refused_with_the_reason_and_an_admin_cancels_with_one() {
    let app = spawn_app().await;
    let alice = app.session_as("alice", Role::Admin).await;
    let carol = app.session_as("carol", Role::Admin).await;
    let olga = app.session_as("olga", Role::Operator).await;
    let first = set_for(
        &app,
        &alice,
        "safe_mode",
        false,
        &in_minutes(&app, 60),
        "form-key-schedule-0201",
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    // Off again later would find it off; one a minute apart has no clear order.
    let again = set_for(
        &app,
        &alice,
        "safe_mode",
        false,
        &in_minutes(&app, 120),
        "form-key-schedule-0202",
    )
    .await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains("turns it off already"),
        "{}",
        again.body
    );
    let near = set_for(
        &app,
        &alice,
        "safe_mode",
        true,
        &in_minutes(&app, 62),
        "form-key-schedule-0203",
    )
    .await;
    assert_eq!(near.status, 409, "{}", near.body);
    // In the past, or not a time: the field says so.
    let past = set_for(
        &app,
        &alice,
        "safe_mode",
        false,
        &in_minutes(&app, -5),
        "form-key-schedule-0204",
    )
    .await;
    assert_eq!(past.status, 400, "{}", past.body);
    let bad = set_for(
        &app,
        &alice,
        "safe_mode",
        false,
        "tomorrow",
        "form-key-schedule-0205",
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(app.state.kill_switches.schedule().await.unwrap().len(), 1);

    let id = app.state.kill_switches.schedule().await.unwrap()[0]
        .id
        .clone();
    let cancel = |who: &str, key: &'static str| {
        let id = id.clone();
        let who = who.to_string();
        let app = &app;
        async move {
            app.call::<CancelKillSwitchChange>(
                &[
                    ("id", &id),
                    ("reason", "plans changed"),
                    ("idempotency_key", key),
                ],
                Some(&who),
            )
            .await
        }
    };
    let no = cancel(&olga, "form-key-schedule-0206").await;
    assert_eq!(no.status, 403, "{}", no.body);
    let yes = cancel(&carol, "form-key-schedule-0207").await;
    assert_eq!(yes.status, 200, "{}", yes.body);
    assert!(yes.body.contains("Cancelled"), "{}", yes.body);
    assert!(app.state.kill_switches.schedule().await.unwrap().is_empty());
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    assert!(
        history.entries[0]
            .reason
            .starts_with("Cancelled: Safe mode to turn off at "),
        "{}",
        history.entries[0].reason
    );
    assert_eq!(history.entries[0].actor, "carol");
    app.clock.advance(Duration::minutes(61));
    assert!(app
        .state
        .kill_switches
        .run_schedule_due()
        .await
        .unwrap()
        .is_empty());
    assert!(switches(&app).await.safe_mode.enabled);

    // A client sets one through the API: 202, nothing changed yet.
    let key = app.api_key(&["switches:write"]).await;
    let later = (app.clock.now() + Duration::hours(3)).to_rfc3339();
    let body = json!({"switch": "safe_mode", "enable": false, "expected_version": switches(&app).await.version,
                      "reason": "maintenance over", "confirm": true, "at": later})
    .to_string();
    let set = app
        .post_json_with_key_header("/api/v1/kill-switches", &key, "schedule-api-0", body)
        .await;
    assert_eq!(set.status, 202, "{}", set.body);
    assert_eq!(set.json()["status"], "scheduled");
    assert_eq!(
        set.json()["scheduled"]["scheduled_by"]
            .as_str()
            .map(|s| s.starts_with("api:")),
        Some(true)
    );
    assert!(switches(&app).await.safe_mode.enabled);
}

#[tokio::test]
async fn where_four_eyes_are_required_safety_off_cannot_be_scheduled_but_safety_on_can() {
    let app = spawn_app_with(|c| c.switches.require_approval = Some(true)).await;
    app.set_switches(false, false).await;
    let alice = app.session_as("alice", Role::Admin).await;
    let at = in_minutes(&app, 30);
    let off = set_for(
        &app,
        &alice,
        "automation_enabled",
        true,
        &at,
        "form-key-schedule-0301",
    )
    .await;
    assert_eq!(off.status, 403, "{}", off.body);
    assert!(off.body.contains("second admin"), "{}", off.body);
    let on = set_for(
        &app,
        &alice,
        "safe_mode",
        true,
        &at,
        "form-key-schedule-0302",
    )
    .await;
    assert_eq!(on.status, 200, "{}", on.body);

    // A client sets one through the API and reads the schedule.
    let key = app.api_key(&["switches:write", "switches:read"]).await;
    let later = (app.clock.now() + Duration::hours(2)).to_rfc3339();
    let body = json!({"switch": "safe_mode", "enable": false, "expected_version": switches(&app).await.version,
                      "reason": "after the holiday", "confirm": true, "at": later})
    .to_string();
    let refused = app
        .post_json_with_key_header("/api/v1/kill-switches", &key, "schedule-api-1", body)
        .await;
    assert_eq!(
        refused.status, 403,
        "safety off, four eyes: {}",
        refused.body
    );
    let listed = app
        .api("GET", "/api/v1/kill-switches/schedule", &key, None)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.json()["scheduled"][0]["switch"], "safe_mode");
    assert_eq!(listed.json()["scheduled"][0]["enable"], true);
}

/// "Off at 18:00, on at 22:00" runs in turn (the second sees the first's move as the
/// schedule's own); when the consoles were away past both, the earlier gives way to the
/// later, and the switch ends where the latest plan says.
#[tokio::test]
async fn a_pair_of_changes_runs_in_turn_and_a_late_one_gives_way_to_the_later() {
    let app = spawn_app().await;
    let alice = app.session_as("alice", Role::Admin).await;
    let ks = &app.state.kill_switches;
    for (enable, minutes, key) in [
        (false, 10, "form-key-schedule-0401"),
        (true, 30, "form-key-schedule-0402"),
    ] {
        let set = set_for(
            &app,
            &alice,
            "safe_mode",
            enable,
            &in_minutes(&app, minutes),
            key,
        )
        .await;
        assert_eq!(set.status, 200, "{}", set.body);
    }
    app.clock.advance(Duration::minutes(11));
    assert_eq!(ks.run_schedule_due().await.unwrap().len(), 1);
    assert!(!switches(&app).await.safe_mode.enabled);
    app.clock.advance(Duration::minutes(20));
    let ran = ks.run_schedule_due().await.unwrap();
    assert!(
        ran[0].starts_with("Scheduled: Safe mode turned on"),
        "{ran:?}"
    );
    assert!(switches(&app).await.safe_mode.enabled);

    // Both due at once: the earlier is void, the later finds the switch there already.
    for (enable, minutes, key) in [
        (false, 10, "form-key-schedule-0403"),
        (true, 30, "form-key-schedule-0404"),
    ] {
        let set = set_for(
            &app,
            &alice,
            "safe_mode",
            enable,
            &in_minutes(&app, minutes),
            key,
        )
        .await;
        assert_eq!(set.status, 200, "{}", set.body);
    }
    let before = switches(&app).await;
    app.clock.advance(Duration::minutes(31));
    let ran = ks.run_schedule_due().await.unwrap();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(ran[0].contains("was due too"), "{}", ran[0]);
    assert!(ran[1].contains("is on already"), "{}", ran[1]);
    assert_eq!(switches(&app).await, before);
}

/// Four eyes turned on after a change was set hold when it runs.
#[tokio::test]
async fn four_eyes_turned_on_after_a_change_was_set_hold_when_it_runs() {
    use ops_console::server::services::kill_switches::ApprovalPolicy;
    let app = spawn_app().await;
    let alice = app.session_as("alice", Role::Admin).await;
    let set = set_for(
        &app,
        &alice,
        "automation_enabled",
        true,
        &in_minutes(&app, 10),
        "form-key-schedule-0501",
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let strict = app
        .state
        .kill_switches
        .clone()
        .with_approvals(ApprovalPolicy {
            required: true,
            minutes: 60,
            emergency_admins: Vec::new(),
        });
    app.clock.advance(Duration::minutes(11));
    let ran = strict.run_schedule_due().await.unwrap();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(
        ran[0].contains("needs a second admin's approval now"),
        "{}",
        ran[0]
    );
    assert!(!switches(&app).await.automation_enabled.enabled);
}

/// A change runs as its author's: one whose author lost the right to make it before it
/// came due by other ways than a revoke or a change of the user (a key that expired, a
/// demotion a console of the release before made without withdrawing) is void, and the
/// history and the announcement say why.
#[tokio::test]
async fn a_scheduled_change_whose_author_lost_the_right_is_void() {
    use ops_console::model::api_keys::ApiScope;
    let app = spawn_app().await;
    let bob = app.session_as("bob", Role::Admin).await;
    let _root = app.session_as("root", Role::Admin).await;
    // A key living one day sets safe mode off in 36 hours; bob sets safe mode on later.
    let key = app
        .state
        .api_keys
        .create_api_key("bot-day", &[ApiScope::SwitchesWrite], 1, "root")
        .await
        .unwrap();
    set_by_key(&app, &key, false, 36 * 60, "schedule-api-void").await;
    let at = (app.clock.now() + Duration::hours(37))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let b = set_for(&app, &bob, "safe_mode", true, &at, "form-key-schedule-0902").await;
    assert_eq!(b.status, 200, "{}", b.body);
    assert_eq!(app.state.kill_switches.schedule().await.unwrap().len(), 2);

    // Bob's role is written as a console of the release before wrote it: nothing withdrawn.
    app.store
        .client()
        .update_item()
        .table_name(
            app.store
                .table(ops_console::server::store::schema::USERS.base),
        )
        .key(
            "name",
            aws_sdk_dynamodb::types::AttributeValue::S("bob".into()),
        )
        .update_expression("SET #r = :r")
        .expression_attribute_names("#r", "role")
        .expression_attribute_values(
            ":r",
            aws_sdk_dynamodb::types::AttributeValue::S("viewer".into()),
        )
        .send()
        .await
        .unwrap();

    let before = switches(&app).await;
    app.clock.advance(Duration::hours(38));
    // A new key given the expired one's name is not the change's author.
    app.state
        .api_keys
        .create_api_key("bot-day", &[ApiScope::SwitchesWrite], 30, "root")
        .await
        .unwrap();
    let mut ran = Vec::new();
    for _ in 0..3 {
        ran.extend(app.state.kill_switches.run_schedule_due().await.unwrap());
    }
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(
        ran[0].contains("did not run") && ran[0].contains("was revoked or has expired"),
        "{}",
        ran[0]
    );
    assert!(
        ran[1].contains("bob who set it is no longer an admin"),
        "{}",
        ran[1]
    );
    assert_eq!(
        switches(&app).await.safe_mode,
        before.safe_mode,
        "nothing ran"
    );
    assert!(app.state.kill_switches.schedule().await.unwrap().is_empty());
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    assert!(
        history.entries[0]
            .reason
            .starts_with("Did not run: Safe mode to turn on at "),
        "{:#?}",
        history.entries
    );
}

/// Revoking a key, or disabling the admin who made it, takes what they left pending off the
/// schedule in the same step; the disabled admin's keys stop with them.
#[tokio::test]
async fn revoking_a_key_or_disabling_its_maker_withdraws_what_they_left_pending_at_once() {
    use ops_console::model::api_keys::ApiScope;
    use ops_console::server::services::users::Change;
    let app = spawn_app().await;
    let alice = app.session_as("alice", Role::Admin).await;
    let _root = app.session_as("root", Role::Admin).await;
    let keys = &app.state.api_keys;
    let scopes = [ApiScope::SwitchesWrite, ApiScope::SwitchesRead];
    let first = keys
        .create_api_key("bot-first", &scopes, 30, "alice")
        .await
        .unwrap();
    let second = keys
        .create_api_key("bot-second", &scopes, 30, "alice")
        .await
        .unwrap();
    set_by_key(&app, &first, false, 60, "withdraw-1").await;
    set_by_key(&app, &second, true, 120, "withdraw-2").await;
    let at = in_minutes(&app, 180);
    let a = set_for(
        &app,
        &alice,
        "automation_enabled",
        true,
        &at,
        "form-key-schedule-0911",
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let pending = || async { app.state.kill_switches.schedule().await.unwrap() };
    assert_eq!(pending().await.len(), 3);

    // The first key is revoked: its change leaves the schedule in the same step.
    let hash = |name: &'static str| {
        let app = &app;
        async move {
            ops_console::server::store::api_keys::list(&app.store, app.clock.now())
                .await
                .unwrap()
                .into_iter()
                .find(|k| k.name == name)
                .unwrap()
                .key_hash
        }
    };
    keys.revoke_api_key(&hash("bot-first").await, "client retired", "root")
        .await
        .unwrap();
    let left: Vec<String> = pending()
        .await
        .into_iter()
        .map(|s| s.scheduled_by)
        .collect();
    assert_eq!(
        left,
        vec!["api:bot-second".to_string(), "alice".to_string()]
    );

    // Alice is disabled: her own change and her other key's go, and the key stops.
    app.state
        .users
        .change_user("alice", Change::Disable, "left the team", "root")
        .await
        .unwrap();
    assert!(pending().await.is_empty(), "{:?}", pending().await);
    assert!(keys.resolve_api_key(&second).await.unwrap().is_none());
    assert!(keys.resolve_api_key(&first).await.unwrap().is_none());
    let history = app.state.kill_switches.history(None, 10).await.unwrap();
    let withdrawn: Vec<&str> = history
        .entries
        .iter()
        .map(|e| e.reason.as_str())
        .filter(|r| r.starts_with("Withdrawn with their right"))
        .collect();
    assert_eq!(withdrawn.len(), 3, "{:#?}", history.entries);
    let by = |who: &str| withdrawn.iter().filter(|r| r.contains(who)).count();
    assert_eq!(
        by("1 scheduled change by api:bot-first: “its API key was revoked”"),
        1
    );
    assert_eq!(
        by("1 scheduled change by alice, api:bot-second: “alice is no longer an admin”"),
        2,
        "{withdrawn:?}"
    );
    // Nothing is left to run.
    app.clock.advance(Duration::hours(4));
    assert!(app
        .state
        .kill_switches
        .run_schedule_due()
        .await
        .unwrap()
        .is_empty());
}

/// A client cancels the changes it set over REST (once, whatever it retries), never
/// another's.
#[tokio::test]
async fn a_client_cancels_its_own_scheduled_change_over_rest_and_no_one_elses() {
    let app = spawn_app().await;
    let mine = app.api_key(&["switches:write"]).await;
    let other = app.api_key(&["switches:write"]).await;
    let set = set_by_key(&app, &mine, false, 120, "cancel-own-0").await;
    let id = set.json()["scheduled"]["id"].as_str().unwrap().to_string();
    let cancel = json!({"id": id, "reason": "window moved"}).to_string();
    let path = "/api/v1/kill-switches/schedule/cancel";
    let refused = app
        .post_json_with_key_header(path, &other, "cancel-own-1", cancel.clone())
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(app.state.kill_switches.schedule().await.unwrap().len(), 1);
    for _ in 0..2 {
        let done = app
            .post_json_with_key_header(path, &mine, "cancel-own-2", cancel.clone())
            .await;
        assert_eq!(done.status, 200, "{}", done.body);
        assert_eq!(done.json()["status"], "cancelled");
    }
    assert!(app.state.kill_switches.schedule().await.unwrap().is_empty());
    let again = app
        .post_json_with_key_header(path, &mine, "cancel-own-3", cancel)
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
}
