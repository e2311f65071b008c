use std::sync::Arc;

use ops_console::api::kill_switches::ChangeKillSwitch;
use ops_console::model::kill_switches::Switch;
use ops_console::model::users::Role;
use ops_console::model::AppError;
use ops_console::server::domain::kill_switches::ChangeRequest;
use ops_console::server::services::kill_switches::{ChangeError, Origin, Switches, Ttls};
use ops_console::server::store::audit::{self, AuditItem};
use ops_console::server::store::kill_switches::{self, AUDIT_ACTION, AUDIT_PARTITION};

use crate::helpers::{spawn_app, TestApp};

const TTLS: Ttls = Ttls {
    audit_days: 60,
    settings_days: 365,
};

/// The switches of `app`, with this file's lifetimes.
fn service(app: &TestApp) -> Switches {
    Switches::new(app.store.clone(), app.clock.clone(), TTLS)
}

fn turn_safe_mode_off(version: u64, reason: &str) -> ChangeRequest {
    ChangeRequest {
        switch: Switch::SafeMode,
        enable: false,
        expected_version: version,
        reason: reason.into(),
        confirmed: true,
        ends: None,
        emergency: false,
    }
}

#[tokio::test]
async fn a_change_writes_the_switch_and_its_audit_record_together() {
    let app = spawn_app().await;
    let now = app.clock.now();
    let origin = Origin {
        actor: "alice",
        idempotency_key: "k1",
        action_id: "a1",
    };
    let next = service(&app)
        .change_at(&turn_safe_mode_off(0, "go live"), &origin, now)
        .await
        .unwrap();
    assert_eq!(next.version, 1);

    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert!(!stored.safe_mode.enabled);
    assert_eq!(stored.safe_mode.changed_by.as_deref(), Some("alice"));
    assert_eq!(stored.safe_mode.reason.as_deref(), Some("go live"));

    let h = service(&app).history(None, 10).await.unwrap();
    assert_eq!(h.entries.len(), 1);
    let e = &h.entries[0];
    assert_eq!(
        (e.actor.as_str(), e.switch, e.moved),
        ("alice", Switch::SafeMode, Some((true, false)))
    );
    let raw = audit::list_partition(&app.store, AUDIT_PARTITION, None, 10)
        .await
        .unwrap();
    let item = &raw.items[0];
    assert_eq!(item.action_type, AUDIT_ACTION);
    let ttl_days = (item.expires_at - now.timestamp()) / 86_400;
    assert_eq!(ttl_days, 60, "audit records live 60 days");

    // Atomicity: when the audit record cannot be written, the switch does not change.
    let at = app.clock.now();
    let blocker = AuditItem::new(AUDIT_PARTITION, AUDIT_ACTION, at, "dup", 60);
    audit::put(&app.store, &blocker).await.unwrap();
    let mut back_on = turn_safe_mode_off(1, "rollback");
    back_on.enable = true;
    let origin = Origin {
        actor: "bob",
        idempotency_key: "k2",
        action_id: "dup",
    };
    let result = service(&app).change_at(&back_on, &origin, at).await;
    assert!(result.is_err(), "the transaction fails as a whole");
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert_eq!(stored.version, 1, "switch untouched when its audit fails");
    assert!(!stored.safe_mode.enabled);
}

#[tokio::test]
async fn twenty_changes_from_one_stale_view_make_exactly_one_success() {
    let app = Arc::new(spawn_app().await);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("a{i}");
            let who = format!("user{i}");
            let origin = Origin {
                actor: &who,
                idempotency_key: &id,
                action_id: &id,
            };
            service(&app)
                .change(&turn_safe_mode_off(0, "race"), &origin)
                .await
        }));
    }
    let mut ok = 0;
    let mut conflicts = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(ChangeError::App(AppError::Conflict(msg))) => {
                assert!(msg.contains("someone else"), "{msg}");
                conflicts += 1;
            }
            Err(other) => panic!("unexpected: {other}"),
        }
    }
    assert_eq!((ok, conflicts), (1, 19));
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert_eq!(stored.version, 1);
    let h = service(&app).history(None, 50).await.unwrap();
    assert_eq!(h.entries.len(), 1, "exactly one audit record");
    assert_eq!(
        Some(h.entries[0].actor.clone()),
        stored.safe_mode.changed_by
    );
}

#[tokio::test]
async fn a_change_without_a_reason_is_refused_and_writes_nothing() {
    let app = spawn_app().await;
    let admin = app.session_as("root", Role::Admin).await;
    let writes_before = app.store.requests().get("TransactWriteItems");
    let answer = app
        .call::<ChangeKillSwitch>(
            &[
                ("switch", "safe_mode"),
                ("enable", "false"),
                ("expected_version", "0"),
                ("reason", "   "),
                ("confirm", "yes"),
                ("idempotency_key", "form-key-00000000000001"),
            ],
            Some(&admin),
        )
        .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.body.contains("reason"), "{}", answer.body);
    assert_eq!(
        app.store.requests().get("TransactWriteItems"),
        writes_before
    );
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert_eq!(stored.version, 0);
    assert!(stored.safe_mode.enabled);
    assert!(service(&app)
        .history(None, 10)
        .await
        .unwrap()
        .entries
        .is_empty());

    // Turning safe mode off also needs the explicit confirmation.
    let answer = app
        .call::<ChangeKillSwitch>(
            &[
                ("switch", "safe_mode"),
                ("enable", "false"),
                ("expected_version", "0"),
                ("reason", "go live"),
                ("idempotency_key", "form-key-00000000000001"),
            ],
            Some(&admin),
        )
        .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.body.contains("confirm"), "{}", answer.body);

    // And with both, the admin's change lands, named after the admin.
    let answer = app
        .call::<ChangeKillSwitch>(
            &[
                ("switch", "safe_mode"),
                ("enable", "false"),
                ("expected_version", "0"),
                ("reason", "go live"),
                ("confirm", "yes"),
                ("idempotency_key", "form-key-00000000000001"),
            ],
            Some(&admin),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let h = service(&app).history(None, 10).await.unwrap();
    assert_eq!(h.entries[0].actor, "root");
}

#[tokio::test]
async fn reasons_are_redacted_before_they_are_stored() {
    let app = spawn_app().await;
    let req = turn_safe_mode_off(0, "customer jane@example.com called from +1 415 555 0100");
    let switches = service(&app);
    let origin = Origin {
        actor: "alice",
        idempotency_key: "k",
        action_id: "a",
    };
    switches.change(&req, &origin).await.unwrap();
    let h = switches.history(None, 10).await.unwrap();
    assert_eq!(
        h.entries[0].reason,
        "customer ***@*** called from ***-***-0100"
    );
}

/// Every event and delivery reads the switches; no one item takes all those reads. Each
/// change writes every copy in its own transaction, so a read of any copy after the change
/// is acknowledged has it (no staleness). A change made without them (a console of the
/// release before, in a rolling deployment) is found and mended by the next look at the
/// timed changes; switches never set get copies of the safe defaults at the first look.
#[tokio::test]
async fn every_copy_of_the_switches_has_each_change_and_a_change_made_without_them_is_mended() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::store::kill_switches::{load_copy, COPIES};
    let app = spawn_app().await;
    let table = app.store.table("settings");
    let copy = |i: u32| {
        let (client, table) = (app.store.client().clone(), table.clone());
        async move {
            client
                .get_item()
                .table_name(table)
                .key("pk", AttributeValue::S(format!("kill_switches#copy#{i}")))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
        }
    };
    let version = |item: Option<std::collections::HashMap<String, AttributeValue>>| {
        item.and_then(|i| i.get("version").and_then(|v| v.as_n().ok()).cloned())
    };
    // Never set: one look at the timed changes writes copies of the safe defaults, so that
    // no request falls through to the item.
    service(&app).revert_due().await.unwrap();
    for i in 0..COPIES {
        assert_eq!(version(copy(i).await).as_deref(), Some("0"), "copy {i}");
    }
    let read = load_copy(&app.store, app.clock.now()).await.unwrap();
    assert!(
        read.safe_mode.enabled && read.version == 0,
        "the safe defaults"
    );
    let origin = Origin {
        actor: "alice",
        idempotency_key: "k1",
        action_id: "a1",
    };
    let now = app.clock.now();
    service(&app)
        .change_at(&turn_safe_mode_off(0, "go live"), &origin, now)
        .await
        .unwrap();
    for i in 0..COPIES {
        assert_eq!(version(copy(i).await).as_deref(), Some("1"), "copy {i}");
    }
    for _ in 0..20 {
        let read = load_copy(&app.store, app.clock.now()).await.unwrap();
        assert!(!read.safe_mode.enabled && read.version == 1);
    }

    // A console of the release before turns safe mode on, writing the item alone.
    app.store
        .client()
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("kill_switches".into()))
        .update_expression("SET safe_mode = :t, version = :v")
        .expression_attribute_values(":t", AttributeValue::Bool(true))
        .expression_attribute_values(":v", AttributeValue::N("2".into()))
        .send()
        .await
        .unwrap();
    let stale = load_copy(&app.store, app.clock.now()).await.unwrap();
    assert_eq!(
        stale.version, 1,
        "until mended, a copy holds the change before"
    );
    service(&app).revert_due().await.unwrap();
    for i in 0..COPIES {
        assert_eq!(
            version(copy(i).await).as_deref(),
            Some("2"),
            "copy {i} mended"
        );
    }
    for _ in 0..20 {
        let read = load_copy(&app.store, app.clock.now()).await.unwrap();
        assert!(read.safe_mode.enabled && read.version == 2);
    }
}
