//! A viewer guessing a masked phone number (docs/security.md, "Nothing personal in a URL"):
//! a reference `/find` makes of a guess cannot be compared with a page's, and searches by
//! what a person typed are counted, audited past a threshold and refused past a limit, on
//! every console alike.

use serde_json::json;

use crate::helpers::{form, spawn_app_with, TestApp};
use ops_console::api::audit::ListAudit;
use ops_console::api::events::ListEvents;
use ops_console::model::users::Role;

const TEL: &str = "+447700900321";
const DIGITS: &str = "447700900321";

async fn conversation(app: &TestApp, id: &str) {
    let writer = app.api_key(&["conversations:write"]).await;
    let body = json!({
        "conversation_id": id, "channel_method": "whatsapp", "recipient_tel": TEL,
        "company_id": "ci-t-001", "project_id": "pi-t-001", "request_id": "req01",
        "comms_consent": true,
    });
    let a = app
        .post_json("/api/v1/conversations", &writer, body.to_string())
        .await;
    assert!(a.status.is_success(), "{}", a.body);
}

/// The value of `name=` in a location's query.
fn query_value<'a>(location: &'a str, name: &str) -> &'a str {
    location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix(&format!("{name}=")))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_guess_sealed_by_find_never_matches_a_pages_reference_and_guessing_is_limited() {
    let app = spawn_app_with(|c| {
        c.auth.lookups_limit = 4;
        c.auth.lookups_audit_after = 2;
    })
    .await;
    let id = format!("c-1-{DIGITS}");
    conversation(&app, &id).await;
    let viewer = app.session_as("guesser", Role::Viewer).await;
    let find = |q: &str| form(&[("page", "conversations"), ("q", q)]);

    // A company the directory knows goes by its id; anything else the box takes for a
    // company (a mistyped phone number among them) goes sealed, never as typed. Neither
    // is a lookup by a contact detail.
    let known = app
        .post_form("/find", find("ci-t-001"), Some(&viewer))
        .await;
    assert_eq!(
        query_value(known.location().unwrap(), "company"),
        "ci-t-001"
    );
    let mistyped = app
        .post_form("/find", find("+44 7700 9OO321"), Some(&viewer))
        .await;
    let location = mistyped.location().unwrap();
    assert!(!query_value(location, "company").is_empty(), "{location}");
    assert!(!location.contains("9OO"), "{location}");

    // 1 and 2: the same guess twice. Were references deterministic, the two (and the
    // page's own reference of the conversation) would be equal: an oracle for the digits
    // a page masks.
    let first = app.post_form("/find", find(TEL), Some(&viewer)).await;
    let second = app.post_form("/find", find(TEL), Some(&viewer)).await;
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(second.status, 303, "{}", second.body);
    let (a, b) = (
        query_value(first.location().unwrap(), "recipient").to_string(),
        query_value(second.location().unwrap(), "recipient").to_string(),
    );
    assert!(!a.is_empty() && !a.contains(DIGITS), "{a}");
    assert_ne!(a, b, "two references of one guess are alike");
    // Both still open to what was typed: the page shows the conversation.
    let page = app.get(first.location().unwrap(), Some(&viewer)).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("conversation-row"), "{}", page.body);
    if let Some(i) = page.body.find(DIGITS) {
        panic!(
            "the viewer reads it: {}",
            &page.body[i.saturating_sub(300)..(i + 100).min(page.body.len())]
        );
    }

    // 3: a conversation id typed on the Events page. 4: one put raw in the page's address
    // (the server function counts it: nothing bypasses /find's count).
    let typed = app
        .post_form(
            "/find",
            form(&[("page", "events"), ("conversation", &id)]),
            Some(&viewer),
        )
        .await;
    assert_eq!(typed.status, 303);
    let by_address = app
        .call::<ListEvents>(&[("conversation", &id)], Some(&viewer))
        .await;
    assert_eq!(by_address.status, 200, "{}", by_address.body);

    // 5: past the limit, refused with a page that says so, and a raw id in an address too.
    let refused = app.post_form("/find", find(TEL), Some(&viewer)).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.headers.contains_key("retry-after"));
    assert!(refused.body.contains("works again in"), "{}", refused.body);
    let refused = app
        .call::<ListEvents>(&[("conversation", &id)], Some(&viewer))
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    // A second console counts into the same counter.
    let other = app.second_console();
    let refused = other.post_form("/find", find(TEL), Some(&viewer)).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    // A reference (a page's link) is no lookup: it still opens.
    let followed = app.get(first.location().unwrap(), Some(&viewer)).await;
    assert_eq!(followed.status, 200);
    assert!(followed.body.contains("conversation-row"));
    // Someone else's searches are their own.
    let colleague = app.session_as("colleague", Role::Viewer).await;
    let theirs = app.post_form("/find", find(TEL), Some(&colleague)).await;
    assert_eq!(theirs.status, 303);

    // The second lookup named the guesser in one audit record, for admins.
    let admin = app.session_as("auditor", Role::Admin).await;
    let fields = [
        ("conversation", ""),
        ("action_type", "many_lookups"),
        ("day", ""),
        ("from", ""),
        ("to", ""),
    ];
    let audit = app.call::<ListAudit>(&fields, Some(&admin)).await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let rows = audit.json()["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{}", audit.body);
    assert_eq!(
        rows[0]["summary"],
        "guesser searched by a typed phone number, email or id 2 times within 60 minutes"
    );
    let hidden = app.call::<ListAudit>(&fields, Some(&viewer)).await;
    assert_eq!(hidden.status, 403, "a viewer reads no staff records");
    let metrics = ops_console::server::metrics::render();
    assert!(
        metrics.contains("opsconsole_lookups_total{result=\"refused\"}"),
        "{metrics}"
    );
}
