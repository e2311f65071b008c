//! The conversations API and pages (docs/conversations.md) against DynamoDB Local.

use serde_json::{json, Value};

use crate::helpers::{pct, spawn_app, TestApp};
use ops_console::api::conversations::{LoadConversation, RevealContact};
use ops_console::model::users::Role;
use ops_console::server::store::conversations as store;

const TEL: &str = "+447700900555";

fn context(id: &str) -> Value {
    json!({
        "conversation_id": id,
        "channel_method": "whatsapp",
        "recipient_tel": TEL,
        "company_id": "ci-t-001",
        "project_id": "pi-t-001",
        "request_id": "req-1",
        "recipient_first_name": "Jane",
        "recipient_last_name": "Doe",
        "comms_consent": true,
        "channel_config": {"company_whatsapp_number": "+447700900101", "company_email": "x@acme.example"},
        "company_rep": {"name": "Sam Carter", "email": "sam@acme.example"},
    })
}

fn path(id: &str) -> String {
    format!("/api/v1/conversations/{}/{}", pct(TEL), pct(id))
}

async fn create(app: &TestApp, key: &str, body: &Value) -> crate::helpers::Answer {
    app.post_json("/api/v1/conversations", key, body.to_string())
        .await
}

async fn append(app: &TestApp, key: &str, id: &str, entry: &str) -> crate::helpers::Answer {
    let m = json!({"entry_id": entry, "role": "user", "content": "Thursday works for me"});
    app.post_json(&format!("{}/messages", path(id)), key, m.to_string())
        .await
}

async fn writer(app: &TestApp) -> String {
    app.api_key(&["conversations:write", "conversations:read"])
        .await
}

#[tokio::test]
async fn creating_twice_is_idempotent_and_other_content_conflicts() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "ci-t-001#pi-t-001#req-1#447700900555";
    let first = create(&app, &key, &context(id)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.json()["created"], true);
    let again = create(&app, &key, &context(id)).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json()["created"], false);

    let mut other = context(id);
    other["project_id"] = json!("pi-t-999");
    let conflict = create(&app, &key, &other).await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);

    let stored = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    assert_eq!(stored.project_id, "pi-t-001", "nothing overwritten");
    assert_eq!(stored.conversation_status.as_str(), "processing");
    assert_eq!(stored.task_complete, 0);
    assert!(stored.comms_consent);
    assert!(!stored.function_call && !stored.hand_off_to_human);
    assert!(stored.messages.is_empty());
    // Sparse index keys: a WhatsApp conversation has the WhatsApp and recipient keys only.
    assert_eq!(
        stored.gsi_company_whatsapp_number.as_deref(),
        Some("+447700900101")
    );
    assert_eq!(stored.gsi_recipient_tel.as_deref(), Some(TEL));
    assert_eq!(stored.gsi_company_email, None);
    assert_eq!(stored.gsi_company_sms_number, None);

    // The attribute types docs/data-model.md gives: task_complete a Number, comms_consent a
    // Bool, messages a List; the status the same string the API took.
    let raw = app
        .store
        .client()
        .get_item()
        .table_name(app.store.table("conversations"))
        .key(
            "primary_channel",
            aws_sdk_dynamodb::types::AttributeValue::S(TEL.into()),
        )
        .key(
            "conversation_id",
            aws_sdk_dynamodb::types::AttributeValue::S(id.into()),
        )
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert!(raw["task_complete"].is_n());
    assert!(raw["comms_consent"].is_bool());
    assert!(raw["messages"].is_l());
    assert!(raw["ttl"].is_n());
    assert_eq!(raw["conversation_status"].as_s().unwrap(), "processing");
}

#[tokio::test]
async fn bad_context_objects_are_refused_naming_the_field_and_write_nothing() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "ci-t-001#pi-t-001#req-1#447700900555";
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = context(id);
        f(&mut v);
        v
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("conversation_id");
            }),
            "conversation_id",
        ),
        (
            with(&|v| v["conversation_id"] = json!(12)),
            "conversation_id",
        ),
        (
            with(&|v| v["conversation_id"] = json!("x".repeat(600))),
            "conversation_id",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("channel_method");
            }),
            "channel_method",
        ),
        (
            with(&|v| v["channel_method"] = json!("telegram")),
            "channel_method",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("recipient_tel");
            }),
            "recipient_tel",
        ),
        (
            with(&|v| v["recipient_tel"] = json!("07700900555")),
            "recipient_tel",
        ),
        (
            with(&|v| v["recipient_tel"] = json!("+44 7700 900555")),
            "recipient_tel",
        ),
        (
            with(&|v| v["channel_method"] = json!("email")),
            "recipient_email",
        ),
        (
            with(&|v| v["recipient_email"] = json!("jane.example.com")),
            "recipient_email",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("company_id");
            }),
            "company_id",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("project_id");
            }),
            "project_id",
        ),
        (with(&|v| v["request_id"] = json!("")), "request_id"),
        (
            with(&|v| v["comms_consent"] = json!("yes")),
            "comms_consent",
        ),
        (with(&|v| v["project_data"] = json!([1, 2])), "project_data"),
        (
            with(&|v| v["allowed_channels"] = json!(["whatsapp", "fax"])),
            "allowed_channels[1]",
        ),
        (
            with(&|v| v["channel_config"]["company_whatsapp_number"] = json!("whatsapp-1")),
            "channel_config.company_whatsapp_number",
        ),
        (
            with(&|v| v["channel_config"]["company_email"] = json!("not an email")),
            "channel_config.company_email",
        ),
        (
            with(&|v| v["initial_request_timestamp"] = json!("yesterday")),
            "initial_request_timestamp",
        ),
        (
            with(&|v| v["auto_queue_reply_message_from_number"] = json!(["+1"])),
            "auto_queue_reply_message_from_number[0]",
        ),
        (json!([1, 2, 3]), "body"),
    ];
    assert!(cases.len() >= 15);
    for (body, field) in &cases {
        let a = create(&app, &key, body).await;
        assert_eq!(a.status, 400, "{field}: {}", a.body);
        assert_eq!(a.json()["field"], *field, "{}", a.body);
        assert_eq!(
            a.headers["content-type"], "application/problem+json",
            "{field}"
        );
    }
    let not_json = app
        .post_json("/api/v1/conversations", &key, "{not json")
        .await;
    assert_eq!(not_json.status, 400);
    let huge = app
        .post_json("/api/v1/conversations", &key, "x".repeat(200 * 1024))
        .await;
    assert_eq!(huge.status, 413);
    // A path's table key is held to the same rule as a Context Object's: a control
    // character or an id past the sort key's limit is a 400 naming it, for every method.
    for (bad, field) in [
        (path("c\u{7}1"), "conversation_id"),
        (path(&"😀".repeat(251)), "conversation_id"),
        (
            format!("/api/v1/conversations/{}/c-1", pct("+1\n5")),
            "primary_channel",
        ),
    ] {
        let read = app.api("GET", &bad, &key, None).await;
        assert_eq!(read.status, 400, "{bad}: {}", read.body);
        assert_eq!(read.json()["field"], field, "{}", read.body);
        let m = json!({"entry_id": "e1", "role": "user", "content": "hi"});
        let posted = app
            .post_json(&format!("{bad}/messages"), &key, m.to_string())
            .await;
        assert_eq!(posted.status, 400, "{bad}: {}", posted.body);
        assert_eq!(posted.json()["field"], field, "{}", posted.body);
    }
    let dump = app.dump_tables().await;
    assert!(
        !dump.contains(&app.store.table("conversations")),
        "no conversation stored: {dump}"
    );
}

#[tokio::test]
async fn scopes_are_enforced() {
    let app = spawn_app().await;
    let reader = app.api_key(&["conversations:read"]).await;
    let a = create(&app, &reader, &context("c-1")).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let events_only = app.api_key(&["events:write"]).await;
    let a = app.api("GET", &path("c-1"), &events_only, None).await;
    assert_eq!(a.status, 403);
    let a = app.api("GET", &path("c-1"), "nope", None).await;
    assert_eq!(a.status, 401);
}

#[tokio::test]
async fn the_same_entry_id_is_appended_once_and_concurrent_appends_lose_nothing() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "c-appends";
    assert_eq!(create(&app, &key, &context(id)).await.status, 201);
    assert_eq!(append(&app, &key, id, "e-0").await.status, 201);
    let dup = append(&app, &key, id, "e-0").await;
    assert_eq!(dup.status, 200, "{}", dup.body);
    assert_eq!(dup.json()["duplicate"], true);

    // 20 different entries at once, and 20 copies of one more entry at once.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 1..=20 {
        let (app, key) = (app.clone(), key.clone());
        tasks.spawn(async move { append(&app, &key, id, &format!("e-{i}")).await.status });
    }
    for _ in 0..20 {
        let (app, key) = (app.clone(), key.clone());
        tasks.spawn(async move { append(&app, &key, id, "e-same").await.status });
    }
    let mut created = 0;
    while let Some(s) = tasks.join_next().await {
        let s = s.unwrap();
        assert!(s == 201 || s == 200, "{s}");
        created += usize::from(s == 201);
    }
    assert_eq!(created, 21, "20 distinct entries and one copy of e-same");
    let c = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    assert_eq!(c.messages.len(), 22);
    assert_eq!(c.message_count, 22);
    let mut ids: Vec<_> = c.messages.iter().map(|m| m.entry_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 22);

    let missing = append(&app, &key, "no-such", "e-1").await;
    assert_eq!(missing.status, 404);
    let bad = app
        .post_json(
            &format!("{}/messages", path(id)),
            &key,
            json!({"entry_id": "e-x", "role": "bot", "content": "hi"}).to_string(),
        )
        .await;
    assert_eq!(bad.json()["field"], "role");
}

#[tokio::test]
async fn a_full_conversation_refuses_appends_with_413_before_dynamodb_would() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "c-full";
    assert_eq!(create(&app, &key, &context(id)).await.status, 201);
    let big = "lorem ipsum ".repeat(8_000); // 96 KB
    let mut statuses = Vec::new();
    for i in 0..6 {
        let m = json!({"entry_id": format!("big-{i}"), "role": "assistant", "content": big});
        let a = app
            .post_json(&format!("{}/messages", path(id)), &key, m.to_string())
            .await;
        statuses.push(a.status.as_u16());
        if a.status == 413 {
            assert_eq!(
                a.json()["type"],
                "urn:ops-console:problem:payload-too-large"
            );
            break;
        }
    }
    assert_eq!(statuses, vec![201, 201, 201, 201, 413], "{statuses:?}");
    let c = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    assert_eq!(c.messages.len(), 4);
    // Still updatable: the budget keeps room for the other attributes.
    let upd = app
        .api(
            "PATCH",
            &path(id),
            &key,
            Some(
                json!({"hand_off_to_human": true, "hand_off_to_human_reason": "r".repeat(1000)})
                    .to_string(),
            ),
        )
        .await;
    assert_eq!(upd.status, 200, "{}", upd.body);
}

#[tokio::test]
async fn status_moves_only_along_allowed_transitions() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "c-status";
    assert_eq!(create(&app, &key, &context(id)).await.status, 201);
    let patch = |body: Value| {
        let (app, key) = (app.clone(), key.clone());
        async move {
            app.api("PATCH", &path(id), &key, Some(body.to_string()))
                .await
        }
    };
    let skip = patch(json!({"conversation_status": "reply_received"})).await;
    assert_eq!(skip.status, 409, "{}", skip.body);
    assert!(skip.json()["detail"]
        .as_str()
        .unwrap()
        .contains("initial_message_sent"));
    let before = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let ok = patch(json!({"conversation_status": "initial_message_sent", "thread_id": "thread_1"}))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let after = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    assert!(
        after.updated_at > before.updated_at,
        "updated_at moves on every change"
    );
    assert_eq!(after.thread_id.as_deref(), Some("thread_1"));
    // The same move again is a no-op, not an error (a retried request).
    assert_eq!(
        patch(json!({"conversation_status": "initial_message_sent"}))
            .await
            .status,
        200
    );
    assert_eq!(
        patch(json!({"hand_off_to_human": true})).await.json()["field"],
        "hand_off_to_human_reason"
    );
    assert_eq!(
        patch(json!({"function_call": true})).await.json()["field"],
        "function_call_type"
    );
    assert_eq!(patch(json!({})).await.status, 400);
    let done = patch(json!({"conversation_status": "completed", "task_complete": true, "function_call": true, "function_call_type": "submit_application"})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let c = store::get(&app.store, TEL, id).await.unwrap().unwrap();
    assert_eq!(
        (c.conversation_status.as_str(), c.task_complete),
        ("completed", 1)
    );
    assert_eq!(c.function_call_type.as_deref(), Some("submit_application"));
    assert_eq!(
        patch(json!({"conversation_status": "failed"})).await.status,
        200
    );
    let back = patch(json!({"conversation_status": "completed"})).await;
    assert_eq!(back.status, 409, "failed is final: {}", back.body);
    let missing = app
        .api(
            "PATCH",
            &path("nope"),
            &key,
            Some(json!({"task_complete": true}).to_string()),
        )
        .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn replies_are_linked_by_company_number_and_recipient() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    assert_eq!(create(&app, &key, &context("c-link")).await.status, 201);
    let mut email = context("c-mail");
    email["channel_method"] = json!("email");
    email["recipient_email"] = json!("Jane@Example.org");
    assert_eq!(create(&app, &key, &email).await.status, 201);
    let found = app
        .api(
            "GET",
            &format!(
                "/api/v1/conversations/lookup?channel=whatsapp&company_number={}&recipient={}",
                pct("+447700900101"),
                pct(TEL)
            ),
            &key,
            None,
        )
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    let rows = found.json()["conversations"].as_array().unwrap().clone();
    assert_eq!(
        rows.len(),
        1,
        "the email conversation is not in the WhatsApp index"
    );
    assert_eq!(rows[0]["conversation_id"], "c-link");
    let by_email = app
        .api(
            "GET",
            &format!(
                "/api/v1/conversations/lookup?channel=email&company_number={}&recipient={}",
                pct("x@acme.example"),
                pct("jane@example.org")
            ),
            &key,
            None,
        )
        .await;
    assert_eq!(
        by_email.json()["conversations"][0]["conversation_id"],
        "c-mail"
    );
    let bad = app
        .api(
            "GET",
            "/api/v1/conversations/lookup?channel=fax",
            &key,
            None,
        )
        .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn viewers_see_masked_data_and_admins_reveal_it_with_an_audited_reason() {
    let app = spawn_app().await;
    let key = writer(&app).await;
    let id = "ci-t-001#pi-t-001#req-1#447700900555";
    assert_eq!(create(&app, &key, &context(id)).await.status, 201);
    assert_eq!(append(&app, &key, id, "e-1").await.status, 201);
    let r = app.state.refs.encode(TEL, id);

    let viewer = app.session_as("vera", Role::Viewer).await;
    let v = app
        .call::<LoadConversation>(&[("r", &r)], Some(&viewer))
        .await;
    assert_eq!(v.status, 200, "{}", v.body);
    assert!(
        !v.body.contains("900555") && !v.body.contains("Jane") && !v.body.contains("Thursday"),
        "{}",
        v.body
    );
    assert!(
        !v.body.contains("sam@acme.example"),
        "config maps are masked too"
    );
    assert_eq!(v.json()["recipient_tel"], "***-***-0555");
    assert_eq!(v.json()["messages"][0]["content_hidden"], true);

    let operator = app.session_as("otto", Role::Operator).await;
    let o = app
        .call::<LoadConversation>(&[("r", &r)], Some(&operator))
        .await;
    assert!(
        o.body.contains("Thursday works for me"),
        "operators read messages"
    );
    assert!(!o.body.contains("900555"), "but not contact details");

    let admin = app.session_as("ada", Role::Admin).await;
    let a = app
        .call::<LoadConversation>(&[("r", &r)], Some(&admin))
        .await;
    assert_eq!(a.json()["revealed"], false);
    let form_key = a.json()["form_key"].as_str().unwrap().to_string();
    let no_reason = app
        .call::<RevealContact>(
            &[("r", &r), ("reason", " "), ("idempotency_key", &form_key)],
            Some(&admin),
        )
        .await;
    assert_eq!(no_reason.status, 400);
    let refused = app
        .call::<RevealContact>(
            &[
                ("r", &r),
                ("reason", "customer called"),
                ("idempotency_key", &form_key),
            ],
            Some(&operator),
        )
        .await;
    assert_eq!(refused.status, 403);
    for _ in 0..2 {
        // A double submission reveals (and audits) once.
        let ok = app
            .call::<RevealContact>(
                &[
                    ("r", &r),
                    ("reason", "customer called, ticket 4411"),
                    ("idempotency_key", &form_key),
                ],
                Some(&admin),
            )
            .await;
        assert_eq!(ok.status, 200, "{}", ok.body);
    }
    let a = app
        .call::<LoadConversation>(&[("r", &r)], Some(&admin))
        .await;
    assert_eq!(a.json()["revealed"], true);
    assert_eq!(a.json()["recipient_tel"], TEL);
    assert_eq!(a.json()["recipient_name"], "Jane Doe");
    let v = app
        .call::<LoadConversation>(&[("r", &r)], Some(&viewer))
        .await;
    assert!(!v.body.contains("900555"), "a reveal is the admin's alone");

    let audit = ops_console::server::store::audit::list_partition(&app.store, id, None, 10)
        .await
        .unwrap();
    let reveals: Vec<_> = audit
        .items
        .iter()
        .filter(|i| i.action_type == "reveal_contact")
        .collect();
    assert_eq!(reveals.len(), 1);
    assert_eq!(reveals[0].actor, "ada");
    assert!(reveals[0]
        .action_payload_redacted
        .contains("customer called"));

    let last = if r.ends_with('0') { "1" } else { "0" };
    let tampered = format!("{}{last}", &r[..r.len() - 1]);
    let t = app
        .call::<LoadConversation>(&[("r", &tampered)], Some(&viewer))
        .await;
    assert_eq!(t.status, 400);
}

/// A conversation of `company` (named `name`) in `project`, for recipient `n`.
fn of_company(company: &str, name: &str, project: &str, n: u32) -> Value {
    let tel = format!("+4477009{n:05}");
    json!({
        "conversation_id": format!("{company}#{project}#req-{n}#{}", &tel[1..]),
        "channel_method": "sms",
        "recipient_tel": tel,
        "company_id": company,
        "project_id": project,
        "request_id": format!("req-{n}"),
        "company_name": name,
        "project_name": format!("{project} name"),
    })
}

#[tokio::test]
async fn the_search_box_finds_companies_by_name_in_any_case_and_conversations_by_id() {
    use ops_console::model::conversations::SearchQuery;
    let app = spawn_app().await;
    let key = writer(&app).await;
    let bodies = [
        of_company("ci-dir-001", "Acme Haulage", "pi-a", 1),
        of_company("ci-dir-001", "Acme Haulage", "pi-b", 2),
        of_company("ci-dir-001", "Acme Haulage", "pi-b", 3),
        of_company("ci-dir-002", "Acme Foods", "pi-a", 4),
    ];
    // Created at once, each twice (a retry racing its original): the directory is written
    // concurrently and still names each company once.
    let creates = bodies
        .iter()
        .chain(bodies.iter())
        .map(|b| create(&app, &key, b));
    for a in futures_util::future::join_all(creates).await {
        assert!(matches!(a.status.as_u16(), 200 | 201), "{}", a.body);
    }
    let now = chrono::Utc::now();
    let suggested = app
        .state
        .conversations
        .directory
        .suggestions(now.timestamp())
        .await
        .unwrap();
    let names: Vec<(&str, &str)> = suggested
        .iter()
        .map(|c| (c.name.as_str(), c.company_id.as_str()))
        .collect();
    assert_eq!(
        names,
        [("Acme Foods", "ci-dir-002"), ("Acme Haulage", "ci-dir-001")]
    );

    let search = |q: SearchQuery| {
        let app = &app;
        async move {
            app.state
                .conversations
                .search_page(&app.state.refs, &q, now)
                .await
                .unwrap()
        }
    };
    let company = |c: &str| SearchQuery {
        company: c.into(),
        ..SearchQuery::default()
    };
    let by_name = search(company("acme HAULAGE")).await;
    assert_eq!(by_name.rows.len(), 3);
    assert_eq!(by_name.company.unwrap().company_id, "ci-dir-001");
    assert_eq!(search(company("CI-DIR-002")).await.rows.len(), 1);
    let ambiguous = search(company("acme")).await;
    assert!(ambiguous.rows.is_empty());
    assert_eq!(ambiguous.companies.len(), 2);
    let unknown = search(company("no such company")).await;
    assert!(unknown.searched && unknown.rows.is_empty() && unknown.company.is_none());

    let id = "ci-dir-001#pi-b#req-3#447700900003";
    let one = search(SearchQuery {
        conversation: id.into(),
        ..SearchQuery::default()
    })
    .await;
    assert_eq!(one.rows.len(), 1);
    assert_eq!(one.count, Some(1));
    assert!(!one.rows[0].conversation_id.contains("900003"), "masked");
    assert_eq!(one.rows[0].created_ago, "just now");
}
