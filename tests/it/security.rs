//! Who may call what: every REST operation (read from the OpenAPI document, where each
//! one names its scope) with every scope, a bad key and none; every server function as
//! anonymous, viewer, operator and admin. Each answer must match the table exactly:
//! refused with 401/403 where it must be, never where it must not.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::helpers::{form, spawn_app, TestApp};
use ops_console::model::api_keys::ApiScope;
use ops_console::model::users::Role;
use ops_console::server::ids::random_hex;

/// A value for each path parameter the API has.
fn fill(path: &str) -> String {
    path.replace("{tenant}", "acme")
        .replace("{inbox}", "news")
        .replace("{uid}", "u1")
        .replace("{message_id}", "0000000000000000a")
        .replace("{primary_channel}", "%2B447700900555")
        .replace("{conversation_id}", "c-1")
}

async fn rest(app: &TestApp, method: &str, path: &str, key: Option<&str>) -> u16 {
    let mut uri = fill(path);
    if path.ends_with("/lookup") {
        uri.push_str("?channel=whatsapp&company_number=%2B447700900101&recipient=%2B447700900555");
    }
    let mut req = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost")
        .header("idempotency-key", random_hex(8));
    if let Some(k) = key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    if method != "GET" {
        req = req.header("content-type", "application/json");
    }
    let body = if method == "GET" { "" } else { "{}" };
    app.send(req.body(axum::body::Body::from(body)).unwrap())
        .await
        .status
        .as_u16()
}

#[tokio::test]
async fn every_rest_operation_answers_each_scope_as_its_document_says() {
    let app = spawn_app().await;
    let doc: Value = app.get("/api/openapi.json", None).await.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut keys = Vec::new();
    for scope in ApiScope::ALL.map(ApiScope::as_str) {
        keys.push((scope.to_string(), app.api_key(&[scope]).await));
    }
    let mut operations = 0;
    let mut used = BTreeSet::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            operations += 1;
            let method = method.to_uppercase();
            let needs: Option<Vec<String>> = op["security"][0].get("api_key").map(|s| {
                s.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect()
            });
            let label = format!("{method} {path}");
            let Some(needs) = needs else {
                // No key needed: open to anyone, or its credential is in its path (a
                // trigger URL's secret), where a made-up one is a 401.
                let s = rest(&app, &method, path, None).await;
                if op["responses"].get("401").is_some() {
                    assert_eq!(s, 401, "{label}: a made-up path credential");
                } else {
                    assert!(s == 200 || s == 503, "{label}: anonymous {s}");
                }
                continue;
            };
            used.extend(needs.iter().cloned());
            assert_eq!(
                rest(&app, &method, path, None).await,
                401,
                "{label}: no key"
            );
            assert_eq!(
                rest(&app, &method, path, Some("not-a-key")).await,
                401,
                "{label}: bad key"
            );
            for (scope, key) in &keys {
                let s = rest(&app, &method, path, Some(key)).await;
                let allowed = needs.is_empty() || needs.contains(scope);
                if allowed {
                    assert!(s != 401 && s != 403, "{label} with {scope}: {s}");
                } else {
                    assert_eq!(s, 403, "{label} with {scope}");
                }
            }
        }
    }
    assert_eq!(operations, 33, "every REST operation is in the document");
    for scope in &used {
        assert!(ApiScope::parse(scope).is_some(), "{scope} is a real scope");
    }
}

/// A server function's path, the least role it needs (`None`: anyone), valid arguments.
type Entry = (
    &'static str,
    Option<Role>,
    Vec<(&'static str, &'static str)>,
);

fn server_functions() -> Vec<Entry> {
    use leptos::server_fn::ServerFn;
    use ops_console::api::alerts::*;
    use ops_console::api::outbox::*;
    use ops_console::api::resend::*;
    use ops_console::api::{
        api_keys::*, audit::*, kill_switches::*, measurements::*, shell::*, users::*,
    };
    use ops_console::api::{conversations::*, events::*, idempotency::*, inbox::*, openapi::*};
    let key = "0123456789abcdef0123";
    let v = Some(Role::Viewer);
    let o = Some(Role::Operator);
    let a = Some(Role::Admin);
    vec![
        (LoadShellInfo::PATH, None, vec![]),
        (LoadApiDoc::PATH, v, vec![]),
        (
            SearchConversations::PATH,
            v,
            vec![
                ("query[recipient]", ""),
                ("query[company]", "ci-1"),
                ("query[project]", ""),
                ("query[company_number]", ""),
                ("query[channel]", ""),
                ("query[status]", ""),
                ("query[task]", ""),
                ("query[from]", ""),
                ("query[to]", ""),
            ],
        ),
        (LoadConversation::PATH, v, vec![("r", "00")]),
        (
            RevealContact::PATH,
            a,
            vec![("r", "00"), ("reason", "a check"), ("idempotency_key", key)],
        ),
        (ListEvents::PATH, v, vec![("conversation", "")]),
        (ConversationState::PATH, v, vec![("conversation", "c-1")]),
        (ConversationTimeline::PATH, v, vec![("conversation", "c-1")]),
        (
            ListAudit::PATH,
            v,
            vec![
                ("conversation", "c-1"),
                ("action_type", ""),
                ("day", ""),
                ("from", ""),
                ("to", ""),
                ("tz", ""),
            ],
        ),
        (
            LoadOutbox::PATH,
            v,
            vec![("group", "dead"), ("cause", ""), ("conversation", "")],
        ),
        (LoadReceiver::PATH, v, vec![]),
        (
            StartOutboxJob::PATH,
            o,
            vec![
                ("op", "redrive"),
                ("group", "dead"),
                ("cause", ""),
                ("reason", "a check"),
                ("form_key", key),
            ],
        ),
        (OutboxJob::PATH, v, vec![("id", "x")]),
        (
            MoveAction::PATH,
            o,
            vec![
                ("action", "00"),
                ("op", "redrive"),
                ("reason", "a check"),
                ("form_key", key),
            ],
        ),
        (
            CountResend::PATH,
            o,
            vec![
                ("group", "delivered"),
                ("action_type", ""),
                ("since", "2026-11-27T14:00"),
                ("until", "2026-11-27T15:00"),
            ],
        ),
        (
            StartResend::PATH,
            o,
            vec![
                ("group", "delivered"),
                ("action_type", ""),
                ("since", "2026-11-27T14:00"),
                ("until", "2026-11-27T15:00"),
                ("reason", "a check"),
                ("form_key", key),
            ],
        ),
        (
            PauseReceiver::PATH,
            o,
            vec![("pause_id", ""), ("reason", "a check"), ("form_key", key)],
        ),
        (
            ReceiverBreaker::PATH,
            o,
            vec![("breaker_id", ""), ("reason", "a check"), ("form_key", key)],
        ),
        (
            SaveReceiver::PATH,
            a,
            vec![("url", "http://127.0.0.1:9/hook"), ("version", "0")],
        ),
        (AddReceiverSecret::PATH, a, vec![("version", "0")]),
        (
            RetireReceiverSecret::PATH,
            a,
            vec![("id", "x"), ("version", "0")],
        ),
        (TestReceiver::PATH, a, vec![]),
        (
            SaveRoute::PATH,
            a,
            vec![
                ("action_type", "tag"),
                ("receiver", "default"),
                ("version", "0"),
            ],
        ),
        (LoadEventStats::PATH, v, vec![]),
        (LoadFiringAlerts::PATH, v, vec![]),
        (LoadIdempotencyHealth::PATH, v, vec![("window", "24h")]),
        (IdempotencyAlerts::PATH, v, vec![]),
        (ListIdempotencyKeys::PATH, v, vec![("which", "stuck")]),
        (LoadIdempotencyKey::PATH, v, vec![("id", "x")]),
        (
            ExpireIdempotencyKey::PATH,
            a,
            vec![("id", "x"), ("reason", "a check")],
        ),
        (LoadInboxPage::PATH, v, vec![("tenant", ""), ("inbox", "")]),
        (
            SaveTenant::PATH,
            o,
            vec![("tenant", "acme"), ("title", "Acme"), ("ttl", "30d")],
        ),
        (
            SaveInbox::PATH,
            o,
            vec![
                ("tenant", "acme"),
                ("inbox", "news"),
                ("title", "News"),
                ("description", ""),
                ("ttl", "30d"),
                ("ttl_types", ""),
            ],
        ),
        (
            PublishMessage::PATH,
            o,
            vec![("tenant", "acme"), ("inbox", "news"), ("draft", key)],
        ),
        (
            SaveDraft::PATH,
            o,
            vec![
                ("p[tenant]", "acme"),
                ("p[inbox]", "news"),
                ("p[audience]", "everyone"),
                ("p[uids]", ""),
                ("p[category]", ""),
                ("p[title]", "Hi"),
                ("p[body]", "Hello"),
                ("p[cta_uri]", ""),
                ("p[ttl]", ""),
                ("p[idempotency_key]", key),
            ],
        ),
        (
            LoadUserView::PATH,
            v,
            vec![("tenant", "acme"), ("inbox", "news"), ("uid", "u1")],
        ),
        (
            MarkRead::PATH,
            o,
            vec![
                ("tenant", "acme"),
                ("inbox", "news"),
                ("uid", "u1"),
                ("message_id", ""),
            ],
        ),
        (
            LoadMeasurements::PATH,
            v,
            vec![("user", "u1"), ("outcome", ""), ("window", "24h")],
        ),
        (
            ListMeasurementAttempts::PATH,
            v,
            vec![("user", "u1"), ("outcome", "")],
        ),
        (LoadKillSwitches::PATH, v, vec![]),
        (LoadKillSwitchAutomation::PATH, v, vec![]),
        (
            ChangeKillSwitch::PATH,
            a,
            vec![
                ("switch", "safe_mode"),
                ("enable", "true"),
                ("expected_version", "0"),
                ("reason", "a check"),
                ("idempotency_key", key),
            ],
        ),
        (KillSwitchHistory::PATH, v, vec![]),
        (LoadKillSwitchApprovals::PATH, v, vec![]),
        (
            DecideKillSwitchApproval::PATH,
            a,
            vec![
                ("id", "00000000000000000000000000000000"),
                ("decision", "reject"),
                ("reason", "a check"),
                ("idempotency_key", key),
            ],
        ),
        (
            CancelKillSwitchChange::PATH,
            a,
            vec![
                ("id", "00000000000000000000000000000000"),
                ("reason", "a check"),
                ("idempotency_key", key),
            ],
        ),
        (
            ChangeKillSwitchTrip::PATH,
            a,
            vec![
                ("op", "attach"),
                ("rule", "outbox.dead_letters"),
                ("switch", "safe_mode"),
                ("idempotency_key", key),
            ],
        ),
        (
            RotateKillSwitchTrigger::PATH,
            a,
            vec![("switch", "safe_mode"), ("idempotency_key", key)],
        ),
        (
            RevokeKillSwitchTrigger::PATH,
            a,
            vec![("switch", "automation_enabled"), ("idempotency_key", key)],
        ),
        (ListUsers::PATH, a, vec![]),
        (LoadUsers::PATH, a, vec![]),
        (LoadApiKeys::PATH, a, vec![]),
        (
            AddUser::PATH,
            a,
            vec![
                ("name", "nobody-new"),
                ("role", "viewer"),
                ("idempotency_key", key),
            ],
        ),
        (
            ResetPassword::PATH,
            a,
            vec![
                ("name", "nobody"),
                ("reason", "a check"),
                ("idempotency_key", key),
            ],
        ),
        (
            CreateApiKey::PATH,
            a,
            vec![
                ("name", "bot-check"),
                ("scopes[switches:read]", "on"),
                ("days", ""),
                ("idempotency_key", key),
            ],
        ),
        (
            RevokeApiKey::PATH,
            a,
            vec![
                ("key_hash", "0"),
                ("reason", "a check"),
                ("idempotency_key", key),
            ],
        ),
        (CompanySuggestions::PATH, v, vec![]),
        (ApiClientNames::PATH, v, vec![]),
        (
            FindIdempotencyByCorrelation::PATH,
            v,
            vec![("correlation_id", "c-1")],
        ),
        (
            FindIdempotencyKey::PATH,
            v,
            vec![("raw", "k-1"), ("client", "nobody")],
        ),
        (
            SetUserRole::PATH,
            a,
            vec![
                ("name", "nobody"),
                ("role", "viewer"),
                ("reason", "a check"),
            ],
        ),
        (
            SetUserDisabled::PATH,
            a,
            vec![
                ("name", "nobody"),
                ("disabled", "true"),
                ("reason", "a check"),
            ],
        ),
    ]
}

#[tokio::test]
async fn every_server_function_answers_each_role_as_its_table_says() {
    let app = spawn_app().await;
    let table = server_functions();
    let registered: BTreeSet<&str> = leptos::server_fn::axum::server_fn_paths()
        .map(|(p, _)| p)
        .collect();
    let listed: BTreeSet<&str> = table.iter().map(|(p, _, _)| *p).collect();
    assert_eq!(registered, listed, "the table lists every server function");
    let sessions = [
        (
            Role::Viewer,
            app.session_as("sec-viewer", Role::Viewer).await,
        ),
        (
            Role::Operator,
            app.session_as("sec-operator", Role::Operator).await,
        ),
        (Role::Admin, app.session_as("sec-admin", Role::Admin).await),
    ];
    for (path, needs, fields) in &table {
        let anon = app
            .post_form(path, form(fields), None)
            .await
            .status
            .as_u16();
        match needs {
            None => assert!(anon < 400, "{path}: anonymous {anon}"),
            Some(_) => assert_eq!(anon, 401, "{path}: anonymous"),
        }
        for (role, cookie) in &sessions {
            let s = app.post_form(path, form(fields), Some(cookie)).await;
            let allowed = needs.is_none_or(|n| role.allows(n));
            if allowed {
                assert!(
                    s.status != 401 && s.status != 403,
                    "{path} as {role}: {} {}",
                    s.status,
                    s.body
                );
            } else {
                assert_eq!(s.status, 403, "{path} as {role}");
            }
        }
    }
}
