use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request};
use chrono::Duration;
use ops_console::model::api_keys::ApiScope;

use ops_console::api::kill_switches::ChangeKillSwitch;
use ops_console::api::users::SetUserRole;
use ops_console::model::users::Role;
use ops_console::server::services::users::Change;
use ops_console::server::store::users;
use ops_console::server::store::{audit, kill_switches};

use crate::helpers::{captured_logs, form, spawn_app};

const TURN_OFF: &[(&str, &str)] = &[
    ("switch", "safe_mode"),
    ("enable", "false"),
    ("expected_version", "0"),
    ("reason", "go live"),
    ("confirm", "yes"),
    ("idempotency_key", "form-key-0123456789abcdef"),
];

#[tokio::test]
async fn a_wrong_password_opens_no_session() {
    let app = spawn_app().await;
    let password = app.add_user("alice", Role::Admin).await;
    let wrong = app.login("alice", &format!("{password}x")).await;
    assert_eq!(wrong.status, 303);
    assert_eq!(wrong.session_cookie(), None);
    assert!(wrong
        .location()
        .unwrap()
        .starts_with("/login?error=invalid"));
    let unknown = app.login("nobody", &password).await;
    assert_eq!(
        unknown.location(),
        wrong.location(),
        "unknown users look the same"
    );

    let right = app.login("alice", &password).await;
    assert_eq!(right.location(), Some("/"));
    let cookie_header = right
        .headers
        .get(header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        cookie_header.contains("HttpOnly") && cookie_header.contains("SameSite=Strict"),
        "{cookie_header}"
    );
    let id = right.session_cookie().unwrap();
    assert_eq!(id.len(), 64, "256-bit id");
    let page = app.get("/kill-switches", Some(&id)).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("alice"), "the top bar names the user");
}

#[tokio::test]
async fn five_failures_lock_the_user_for_fifteen_minutes() {
    let app = spawn_app().await;
    let password = app.add_user("bob", Role::Viewer).await;
    for _ in 0..4 {
        assert!(app
            .login("bob", "wrong-password")
            .await
            .location()
            .unwrap()
            .contains("error=invalid"));
    }
    let fifth = app.login("bob", "wrong-password").await;
    assert!(fifth.location().unwrap().contains("error=locked"));
    let locked = app.login("bob", &password).await;
    assert!(
        locked.location().unwrap().contains("error=locked"),
        "even the right password is refused"
    );
    assert_eq!(locked.session_cookie(), None);

    // Unknown names lock the same way: the answer does not reveal who exists.
    for _ in 0..5 {
        app.login("ghost", "wrong-password").await;
    }
    assert!(app
        .login("ghost", "x")
        .await
        .location()
        .unwrap()
        .contains("error=locked"));

    app.clock.advance(Duration::minutes(16));
    let after = app.login("bob", &password).await;
    assert!(
        after.session_cookie().is_some(),
        "the lock ends after 15 minutes"
    );
}

#[tokio::test]
async fn expired_or_deleted_sessions_go_back_to_login() {
    let app = spawn_app().await;
    let cookie = app.session_as("carol", Role::Viewer).await;
    assert_eq!(app.get("/", Some(&cookie)).await.status, 200);

    app.clock.advance(Duration::hours(9));
    let idle = app.get("/kill-switches", Some(&cookie)).await;
    assert_eq!(idle.status, 303, "idle for 9 h: expired");
    assert_eq!(idle.location(), Some("/login?next=/kill-switches"));

    let password = app.add_user("dave", Role::Viewer).await;
    let cookie = app.login("dave", &password).await.session_cookie().unwrap();
    // Active every few hours, still the absolute limit of 7 days holds.
    for _ in 0..24 {
        app.clock.advance(Duration::hours(7));
        if app.get("/", Some(&cookie)).await.status != 200 {
            break;
        }
    }
    assert_eq!(
        app.get("/", Some(&cookie)).await.status,
        303,
        "absolute expiry"
    );

    let cookie = app.login("dave", &password).await.session_cookie().unwrap();
    let out = app.post_form("/logout", String::new(), Some(&cookie)).await;
    assert_eq!(out.location(), Some("/login"));
    assert_eq!(
        app.get("/", Some(&cookie)).await.status,
        303,
        "the session is deleted"
    );
    assert_eq!(app.get("/", None).await.status, 303);
}

#[tokio::test]
async fn viewers_and_operators_cannot_flip_kill_switches() {
    let app = spawn_app().await;
    for (name, role) in [("vic", Role::Viewer), ("olga", Role::Operator)] {
        let cookie = app.session_as(name, role).await;
        let answer = app.call::<ChangeKillSwitch>(TURN_OFF, Some(&cookie)).await;
        assert_eq!(answer.status, 403, "{name}: {}", answer.body);
    }
    let anonymous = app.call::<ChangeKillSwitch>(TURN_OFF, None).await;
    assert_eq!(anonymous.status, 401);
    let stored = kill_switches::load(&app.store, app.clock.now())
        .await
        .unwrap();
    assert_eq!(stored.version, 0, "nothing written");
    assert!(
        audit::list_partition(&app.store, kill_switches::AUDIT_PARTITION, None, 5)
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The viewer sees the page, without controls; the Users page is closed to them.
    let cookie = app.session_as("vera", Role::Viewer).await;
    let page = app.get("/kill-switches", Some(&cookie)).await;
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("Turn safe mode off"),
        "no controls for viewers"
    );
    assert_eq!(app.get("/users", Some(&cookie)).await.status, 403);
}

#[tokio::test]
async fn cross_origin_posts_are_refused() {
    let app = spawn_app().await;
    let admin = app.session_as("root", Role::Admin).await;
    let req = Request::post(<ChangeKillSwitch as leptos::server_fn::ServerFn>::PATH)
        .header(header::HOST, "localhost")
        .header(header::ORIGIN, "https://evil.example")
        .header(header::COOKIE, format!("ops_session={admin}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form(TURN_OFF)))
        .unwrap();
    assert_eq!(app.send(req).await.status, 403);
    let req = Request::post("/logout")
        .header(header::HOST, "localhost")
        .header("sec-fetch-site", "cross-site")
        .header(header::COOKIE, format!("ops_session={admin}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.send(req).await.status, 403);
    assert_eq!(
        kill_switches::load(&app.store, app.clock.now())
            .await
            .unwrap()
            .version,
        0
    );
    assert_eq!(
        app.get("/", Some(&admin)).await.status,
        200,
        "still signed in"
    );
}

#[tokio::test]
async fn the_last_admin_cannot_be_demoted_even_in_a_race() {
    let app = Arc::new(spawn_app().await);
    let root = app.session_as("root", Role::Admin).await;
    let answer = app
        .call::<SetUserRole>(
            &[("name", "root"), ("role", "viewer"), ("reason", "oops")],
            Some(&root),
        )
        .await;
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert!(answer.body.contains("last active admin"), "{}", answer.body);

    // Two admins demote each other at the same time: one must stay admin.
    app.add_user("second", Role::Admin).await;
    let users = &app.state.users;
    let (a, b) = tokio::join!(
        users.change_user("root", Change::SetRole(Role::Viewer), "swap", "second"),
        users.change_user("second", Change::SetRole(Role::Viewer), "swap", "root"),
    );
    assert!(
        a.is_ok() != b.is_ok(),
        "exactly one demotion succeeds: {a:?} {b:?}"
    );
    let admins = users::list(&app.store, app.clock.now())
        .await
        .unwrap()
        .into_iter()
        .filter(|u| u.is_active_admin(app.clock.now()))
        .count();
    assert_eq!(admins, 1);

    // Every change is audited with who did it.
    let log = audit::list_partition(&app.store, "system#users", None, 20)
        .await
        .unwrap();
    assert!(log
        .items
        .iter()
        .any(|i| i.action_payload_redacted.contains("set_role")));
}

#[tokio::test]
async fn api_keys_need_the_right_scope() {
    let app = spawn_app().await;
    let api_keys = &app.state.api_keys;
    let reader = api_keys
        .create_api_key("worker", &[ApiScope::SwitchesRead], 30, "test")
        .await
        .unwrap();
    let other = api_keys
        .create_api_key("events", &[ApiScope::EventsWrite], 30, "test")
        .await
        .unwrap();
    let get = |key: Option<String>| {
        let mut req = Request::get("/api/v1/kill-switches").header(header::HOST, "localhost");
        if let Some(k) = key {
            req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
        }
        req.body(Body::empty()).unwrap()
    };
    let none = app.send(get(None)).await;
    assert_eq!(none.status, 401);
    assert_eq!(
        none.headers.get(header::CONTENT_TYPE).unwrap(),
        "application/problem+json"
    );
    assert_eq!(
        app.send(get(Some("opsk_not-a-key".into()))).await.status,
        401
    );
    let wrong_scope = app.send(get(Some(other))).await;
    assert_eq!(wrong_scope.status, 403);
    assert_eq!(wrong_scope.json()["required_scope"], "switches:read");
    let ok = app.send(get(Some(reader.clone()))).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["safe_mode"], true);

    app.clock.advance(Duration::days(31));
    assert_eq!(app.send(get(Some(reader))).await.status, 401, "expired key");
}

#[tokio::test]
async fn no_password_session_id_or_api_key_reaches_the_logs() {
    let app = spawn_app().await;
    let password = app.add_user("erin", Role::Admin).await;
    app.login("erin", "a-wrong-password-1").await;
    let session = app.login("erin", &password).await.session_cookie().unwrap();
    app.call::<ChangeKillSwitch>(TURN_OFF, Some(&session)).await;
    app.post_form("/logout", String::new(), Some(&session))
        .await;
    let key = app
        .state
        .api_keys
        .create_api_key("log-test", &[ApiScope::SwitchesRead], 1, "test")
        .await
        .unwrap();
    app.send(
        Request::get("/api/v1/kill-switches")
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let logs = captured_logs();
    assert!(logs.contains("signed in"), "the capture works");
    for secret in [
        password.as_str(),
        "a-wrong-password-1",
        session.as_str(),
        key.as_str(),
    ] {
        assert!(!logs.contains(secret), "a secret reached the logs");
    }
}

#[tokio::test]
async fn an_api_key_is_revoked_once_under_concurrent_revokes_and_its_use_is_noted_hourly() {
    use ops_console::server::services::api_keys::REVOKE_ACTION;
    use ops_console::server::store::api_keys;
    let app = spawn_app().await;
    let api_keys = &app.state.api_keys;
    let key = api_keys
        .create_api_key("bot-rev", &[ApiScope::SwitchesRead], 30, "ada")
        .await
        .unwrap();
    let listed = |app: &crate::helpers::TestApp| {
        let store = app.store.clone();
        let now = app.clock.now();
        async move { api_keys::list(&store, now).await.unwrap().remove(0) }
    };
    assert_eq!(listed(&app).await.last_used_at, None);

    // The first use is noted; uses within the hour are not written again.
    assert!(api_keys.resolve_api_key(&key).await.unwrap().is_some());
    let noted = listed(&app).await.last_used_at.expect("noted");
    let writes = app.store.requests().get("UpdateItem");
    for _ in 0..5 {
        assert!(api_keys.resolve_api_key(&key).await.unwrap().is_some());
    }
    assert_eq!(
        app.store.requests().get("UpdateItem"),
        writes,
        "no write within the hour"
    );
    app.clock.advance(Duration::minutes(61));
    assert!(api_keys.resolve_api_key(&key).await.unwrap().is_some());
    assert!(listed(&app).await.last_used_at.unwrap() > noted);

    // Eight admins revoke it at once: one does, the others find it revoked already.
    let hash = listed(&app).await.key_hash;
    let revokes = (0..8).map(|i| {
        let (api_keys, hash) = (api_keys.clone(), hash.clone());
        tokio::spawn(async move {
            api_keys
                .revoke_api_key(&hash, "client retired", &format!("admin{i}"))
                .await
        })
    });
    let results: Vec<_> = futures_util::future::join_all(revokes)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .all(|e| *e == ops_console::model::AppError::NotFound));
    assert!(
        api_keys.resolve_api_key(&key).await.unwrap().is_none(),
        "a revoked key opens nothing"
    );
    let item = listed(&app).await;
    assert!(
        item.revoked_at.is_some() && item.revoked_by.is_some(),
        "still listed, as revoked"
    );
    let log = audit::list_partition(&app.store, "system#api_keys", None, 20)
        .await
        .unwrap();
    let revoked = log
        .items
        .iter()
        .filter(|a| a.action_type == REVOKE_ACTION)
        .count();
    assert_eq!(revoked, 1, "one audit record for one revoke");
}

/// Every request of a machine client reads its key: no one item takes them all. A request
/// reads one of the key's copies, written with the key and with its revoke in one
/// transaction (no staleness); a key made by the release before gets its copies at its
/// first use, and one revoked by the release before has its copies revoked at the next look.
#[tokio::test]
async fn requests_read_copies_of_their_key_and_a_revoke_reaches_every_copy() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use ops_console::server::crypto::sha256_hex;
    use ops_console::server::store::api_keys::{self, COPIES};
    let proxy = crate::helpers::faulty_dynamodb().await;
    let (app, _direct) = crate::helpers::spawn_app_via(&proxy, |_| {}).await;
    proxy.update(|f| f.partitions = Some(dynamodb_faults::Limits::unlimited()));
    let api_keys = &app.state.api_keys;
    let table = app.store.table("api_keys");
    let key = api_keys
        .create_api_key("bot-hot", &[ApiScope::SwitchesRead], 30, "ada")
        .await
        .unwrap();
    let hash = sha256_hex(key.as_bytes());
    for _ in 0..24 {
        assert!(api_keys.resolve_api_key(&key).await.unwrap().is_some());
    }
    let reads = |report: &dynamodb_faults::Report, key: &str| {
        report
            .keys
            .iter()
            .filter(|k| k.key == key)
            .map(|k| k.read)
            .sum::<f64>()
    };
    let report = proxy.report();
    assert_eq!(
        reads(&report, &format!("{table}|key_hash={hash}")),
        0.0,
        "the key's own item is not read by requests: {:?}",
        report.keys
    );
    let copies_read = (0..COPIES)
        .filter(|i| reads(&report, &format!("{table}|key_hash={hash}#copy#{i}")) > 0.0)
        .count();
    assert!(
        copies_read >= 3,
        "reads spread over the copies: {copies_read}"
    );
    assert_eq!(
        api_keys::list(&app.store, app.clock.now())
            .await
            .unwrap()
            .len(),
        1,
        "copies are not listed"
    );

    // Revoked: no copy lets a request in, at once.
    api_keys
        .revoke_api_key(&hash, "client retired", "ada")
        .await
        .unwrap();
    for _ in 0..24 {
        assert!(api_keys.resolve_api_key(&key).await.unwrap().is_none());
    }

    // A key of the release before: its item alone. Its first use writes the copies.
    let old_key = format!("{}old", &key[..key.len() - 3]);
    let old_hash = sha256_hex(old_key.as_bytes());
    let now = app.clock.now();
    let put = |revoked: bool| {
        let mut req = app
            .store
            .client()
            .put_item()
            .table_name(&table)
            .item("key_hash", AttributeValue::S(old_hash.clone()))
            .item("name", AttributeValue::S("bot-old".into()))
            .item(
                "scopes",
                AttributeValue::L(vec![AttributeValue::S("switches:read".into())]),
            )
            .item("created_at", AttributeValue::S(now.to_rfc3339()))
            .item("created_by", AttributeValue::S("ada".into()))
            .item(
                "expires_at",
                AttributeValue::N((now.timestamp() + 86_400).to_string()),
            );
        if revoked {
            req = req
                .item("revoked_at", AttributeValue::S(now.to_rfc3339()))
                .item("revoked_by", AttributeValue::S("ada".into()));
        }
        req.send()
    };
    put(false).await.unwrap();
    assert!(api_keys.resolve_api_key(&old_key).await.unwrap().is_some());
    let scan = ops_console::server::store::many::scan_json(&app.store, "api_keys")
        .await
        .unwrap();
    let copies = scan
        .iter()
        .filter(|i| {
            i["key_hash"]
                .as_str()
                .is_some_and(|h| h.starts_with(&format!("{old_hash}#")))
        })
        .count();
    assert_eq!(
        copies, COPIES as usize,
        "its copies were written at its first use"
    );

    // The release before revokes it, on its item alone: the next look revokes the copies.
    put(true).await.unwrap();
    assert_eq!(api_keys::mend_revoked(&app.store).await.unwrap(), 1);
    for _ in 0..24 {
        assert!(api_keys.resolve_api_key(&old_key).await.unwrap().is_none());
    }
    assert_eq!(api_keys::mend_revoked(&app.store).await.unwrap(), 0, "once");

    // The release before listed the copies, and an admin revoked one: the key is revoked
    // whole at the next look (the check fails closed).
    let third = api_keys
        .create_api_key("bot-part", &[ApiScope::SwitchesRead], 30, "ada")
        .await
        .unwrap();
    let third_hash = sha256_hex(third.as_bytes());
    app.store
        .client()
        .update_item()
        .table_name(&table)
        .key(
            "key_hash",
            AttributeValue::S(format!("{third_hash}#copy#5")),
        )
        .update_expression("SET revoked_at = :at, revoked_by = :by")
        .expression_attribute_values(":at", AttributeValue::S(app.clock.now().to_rfc3339()))
        .expression_attribute_values(":by", AttributeValue::S("ada".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(api_keys::mend_revoked(&app.store).await.unwrap(), 1);
    for _ in 0..24 {
        assert!(api_keys.resolve_api_key(&third).await.unwrap().is_none());
    }
    let listed = api_keys::list(&app.store, app.clock.now()).await.unwrap();
    assert!(listed
        .iter()
        .find(|k| k.key_hash == third_hash)
        .is_some_and(|k| k.revoked_at.is_some()));
}

/// The names of the console's own changes (a revert or a trip, a trigger URL, a scheduled
/// change) are no user's: the history and every page's banner tell those moves by them.
#[tokio::test]
async fn no_user_takes_the_name_of_the_consoles_own_changes() {
    let app = crate::helpers::spawn_app().await;
    for name in ["system", "trigger", "Schedule"] {
        let refused = app
            .state
            .users
            .add_user(name, Role::Operator, "a long enough password 1", "alice")
            .await
            .unwrap_err();
        assert_eq!(refused.field(), Some("name"), "{name}: {refused:?}");
    }
}
