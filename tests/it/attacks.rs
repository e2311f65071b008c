//! An attacker's view (docs/security.md): each test carries out an attack as the role that
//! would try it and fails if it works. Page cursors read or forged by a viewer; the
//! console sent inside the network; made-up HTTP methods making idempotency scopes; a
//! sign-in that leads elsewhere; a lockout outrun by concurrent guesses or used to lock
//! someone out; smaller leaks to viewers; `/readyz` as a flood target.

use crate::helpers::keys::*;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use base64::Engine as _;
use chrono::Duration;
use serde_json::{json, Value};

use crate::events::{event, post_event};
use crate::helpers::{form, spawn_app, spawn_app_with, Answer, TestApp};
use crate::receiver::Receiver;
use ops_console::api::audit::ListAudit;
use ops_console::api::conversations::SearchConversations;
use ops_console::api::events::{ConversationState, ListEvents};
use ops_console::api::measurements::ListMeasurementAttempts;
use ops_console::api::outbox::{LoadOutbox, SaveReceiver, TestReceiver};
use ops_console::model::users::Role;
use ops_console::server::ids::{hex, random_hex};
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::store::schema::{ALL, IDEMPOTENCY_KEYS};

const TEL: &str = "+447700900555";
/// What the recipient's phone looks like inside ids.
const DIGITS: &str = "447700900555";
const USER: &str = "jane.doe@example.com";

/// Whether `cursor` shows any of `secrets`: as sent, hex-decoded or base64-decoded.
fn exposes(cursor: &str, secrets: &[&str]) -> bool {
    let mut readings = vec![cursor.to_string()];
    let unhex: Option<Vec<u8>> = (0..cursor.len() / 2)
        .map(|i| u8::from_str_radix(cursor.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    readings.extend(unhex.map(|b| String::from_utf8_lossy(&b).into_owned()));
    for engine in [
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
    ] {
        if let Ok(b) = engine.decode(cursor.trim_end_matches('=')) {
            readings.push(String::from_utf8_lossy(&b).into_owned());
        }
    }
    readings
        .iter()
        .any(|r| secrets.iter().any(|s| r.contains(s)))
}

/// The cursor format this console handed out before cursors were sealed: the hex of the
/// table key as JSON. A viewer who knows it writes any key they like.
fn forged(key: &Value) -> String {
    hex(key.to_string().as_bytes())
}

fn tampered(cursor: &str) -> String {
    let mut b = cursor.as_bytes().to_vec();
    let i = b.len() / 2;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

/// One paged listing as a viewer calls it: its server function with the fields of a search
/// and a cursor.
struct Listing {
    name: &'static str,
    path: &'static str,
    fields: Vec<(&'static str, String)>,
    /// The same listing for another search (a cursor must not open there).
    other: Vec<(&'static str, String)>,
    cursor_field: &'static str,
    next: fn(&Value) -> Option<String>,
}

impl Listing {
    async fn call(
        &self,
        app: &TestApp,
        fields: &[(&str, String)],
        cursor: Option<&str>,
        viewer: &str,
    ) -> Answer {
        let mut all: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if let Some(c) = cursor {
            all.push((self.cursor_field, c));
        }
        app.post_form(self.path, form(&all), Some(viewer)).await
    }
}

async fn seed_pages(app: &TestApp) {
    let writer = app
        .api_key(&["conversations:write", "events:write", "measurements:write"])
        .await;
    for i in 0..26 {
        let id = format!("c-{i:02}-{DIGITS}");
        let body = json!({
            "conversation_id": id, "channel_method": "whatsapp", "recipient_tel": TEL,
            "company_id": "ci-t-001", "project_id": "pi-t-001", "request_id": format!("req{i:02}"),
            "comms_consent": true,
        });
        let a = app
            .post_json("/api/v1/conversations", &writer, body.to_string())
            .await;
        assert!(a.status.is_success(), "{}", a.body);
    }
    let conversation = format!("helpdesk-{DIGITS}");
    for i in 0..51 {
        let e = event(
            &conversation,
            Some(&format!("m{i}")),
            "where is my order, I want a refund",
        );
        let a = post_event(app, &writer, &e).await;
        assert!(a.status.is_success(), "{}", a.body);
    }
    let now = app.clock.now();
    for i in 0..26 {
        let at =
            (now - Duration::minutes(60 - i)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let m = json!({"measurement_id": format!("m-{i}"), "user_id": USER, "weight": 70.5,
                       "unit": "kg", "timestamp": at, "source": "Scale-X"});
        let a = app
            .post_json("/api/v1/measurements", &writer, m.to_string())
            .await;
        assert!(a.status.is_success(), "{}", a.body);
    }
}

fn listings() -> Vec<Listing> {
    use leptos::server_fn::ServerFn;
    let conversation = format!("helpdesk-{DIGITS}");
    let search = |recipient: &str| {
        let mut f: Vec<(&'static str, String)> = [
            "company",
            "project",
            "company_number",
            "channel",
            "status",
            "task",
            "from",
            "to",
            "conversation",
        ]
        .iter()
        .map(|k| {
            (
                match *k {
                    "company" => "query[company]",
                    "project" => "query[project]",
                    "company_number" => "query[company_number]",
                    "channel" => "query[channel]",
                    "status" => "query[status]",
                    "task" => "query[task]",
                    "from" => "query[from]",
                    "to" => "query[to]",
                    _ => "query[conversation]",
                },
                String::new(),
            )
        })
        .collect();
        f.push(("query[recipient]", recipient.to_string()));
        f
    };
    let audit = |c: &str| {
        vec![
            ("conversation", c.to_string()),
            ("action_type", String::new()),
            ("day", String::new()),
            ("from", String::new()),
            ("to", String::new()),
        ]
    };
    vec![
        Listing {
            name: "conversation search",
            path: SearchConversations::PATH,
            fields: search(TEL),
            other: search("+447700900999"),
            cursor_field: "query[after]",
            next: |v| v["next"].as_str().map(str::to_string),
        },
        Listing {
            name: "events of a conversation",
            path: ListEvents::PATH,
            fields: vec![("conversation", conversation.clone())],
            other: vec![("conversation", "helpdesk-447700900999".into())],
            cursor_field: "cursor",
            next: |v| v["next_cursor"].as_str().map(str::to_string),
        },
        Listing {
            name: "recent events",
            path: ListEvents::PATH,
            fields: vec![("conversation", String::new())],
            other: vec![("conversation", "helpdesk-447700900999".into())],
            cursor_field: "cursor",
            next: |v| v["next_cursor"].as_str().map(str::to_string),
        },
        Listing {
            name: "audit of a conversation",
            path: ListAudit::PATH,
            fields: audit(&conversation),
            other: audit("helpdesk-447700900999"),
            cursor_field: "cursor",
            next: |v| v["next_cursor"].as_str().map(str::to_string),
        },
        Listing {
            name: "outbox",
            path: LoadOutbox::PATH,
            fields: vec![("group", "due".into()), ("cause", String::new())],
            other: vec![("group", "held".into()), ("cause", String::new())],
            cursor_field: "cursor",
            next: |v| v["next"].as_str().map(str::to_string),
        },
        Listing {
            name: "measurement attempts",
            path: ListMeasurementAttempts::PATH,
            fields: vec![("user", USER.into()), ("outcome", String::new())],
            other: vec![
                ("user", "someone.else@example.com".into()),
                ("outcome", String::new()),
            ],
            cursor_field: "cursor",
            next: |v| v["next"].as_str().map(str::to_string),
        },
    ]
}

#[tokio::test]
async fn a_viewer_can_neither_read_nor_forge_nor_replay_a_page_cursor() {
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    seed_pages(&app).await;
    let viewer = app.session_as("vera", Role::Viewer).await;
    let secrets = [
        DIGITS, USER, "helpdesk", "ci-t-001", "req0", "evt:", "act:", "USER#",
    ];
    for l in listings() {
        let first = l.call(&app, &l.fields, None, &viewer).await;
        assert_eq!(first.status, 200, "{}: {}", l.name, first.body);
        let cursor = (l.next)(&first.json()).unwrap_or_else(|| {
            panic!("{}: the first page has a next page: {}", l.name, first.body)
        });
        assert!(
            !exposes(&cursor, &secrets),
            "{}: the cursor shows what it holds: {cursor}",
            l.name
        );

        let second = l.call(&app, &l.fields, Some(&cursor), &viewer).await;
        assert_eq!(
            second.status, 200,
            "{}: the cursor opens: {}",
            l.name, second.body
        );

        let key = json!([
            ["conversation_id", "S", format!("helpdesk-{DIGITS}")],
            ["ts_action_id", "S", "9"]
        ]);
        for (what, bad) in [
            ("a forged key", forged(&key)),
            ("a tampered cursor", tampered(&cursor)),
            ("garbage", "not-a-cursor".to_string()),
        ] {
            let a = l.call(&app, &l.fields, Some(&bad), &viewer).await;
            assert_eq!(
                a.status, 400,
                "{}: {what} is refused, not served: {}",
                l.name, a.body
            );
            assert!(
                a.body.contains("cursor"),
                "{}: the refusal names the cursor: {}",
                l.name,
                a.body
            );
        }
        let replayed = l.call(&app, &l.other, Some(&cursor), &viewer).await;
        assert_eq!(
            replayed.status, 400,
            "{}: a cursor of one search does not open another: {}",
            l.name, replayed.body
        );
    }
    // A cursor lives two hours.
    let l = &listings()[0];
    let first = l.call(&app, &l.fields, None, &viewer).await;
    let cursor = (l.next)(&first.json()).unwrap();
    app.clock.advance(Duration::hours(3));
    let late = l.call(&app, &l.fields, Some(&cursor), &viewer).await;
    assert_eq!(late.status, 400, "an expired cursor: {}", late.body);
}

/// An app that may send nowhere but the public internet (the default).
async fn closed_app(tweak: impl FnOnce(&mut ops_console::server::config::Config)) -> TestApp {
    spawn_app_with(|c| {
        c.operations.outbound_allowed_networks = String::new();
        tweak(c);
    })
    .await
}

#[tokio::test]
async fn the_receiver_url_cannot_reach_inside_the_network() {
    let app = closed_app(|_| {}).await;
    let admin = app.session_as("ada", Role::Admin).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://127.8.9.10/hook",
        "http://0.0.0.0/hook",
        "http://10.0.0.5/hook",
        "http://172.20.1.1/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://224.0.0.1/hook",
        "http://[::1]/hook",
        "http://[::]/hook",
        "http://[fd00::1]/hook",
        "http://[fe80::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[::ffff:169.254.169.254]/hook",
        "http://[64:ff9b::a9fe:a9fe]/hook",
        "https://localhost/hook",
        // IPv6 outside global unicast, or in its special ranges.
        "http://[::ffff:0:7f00:1]/hook",
        "http://[::ffff:0:a9fe:a9fe]/hook",
        "http://[64:ff9b:1::7f00:1]/hook",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
        "http://[100::1]/hook",
    ] {
        let a = app
            .call::<SaveReceiver>(&[("url", url), ("version", "0")], Some(&admin))
            .await;
        assert_eq!(a.status, 400, "{url}: {}", a.body);
        assert!(
            a.body.contains("url") && a.body.contains("refused"),
            "{url}: {}",
            a.body
        );
    }
    // A URL of 60,000 characters is input to refuse, not to keep.
    let long = format!("https://example.com/{}", "a".repeat(60_000));
    let a = app
        .call::<SaveReceiver>(&[("url", &long), ("version", "0")], Some(&admin))
        .await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert!(a.body.contains("longer than 2048 characters"), "{}", a.body);
    assert!(
        ops_console::server::store::events::receiver::load(
            &app.store,
            &ops_console::model::outbox::ReceiverName::default_one()
        )
        .await
        .unwrap()
        .is_none(),
        "nothing was saved"
    );
}

#[tokio::test]
async fn deliveries_and_test_messages_connect_only_where_the_settings_allow() {
    let secret = SigningSecret::generate();
    let (receiver, url) = Receiver::start(vec![secret.clone()]).await;
    // A receiver named in the settings by a name that resolves to loopback (the check is
    // at connect time, after DNS: a rebinding name is caught the same way).
    let by_name = url.replace("127.0.0.1", "localhost");
    let closed = closed_app(|c| {
        c.events.webhook_url = by_name.clone();
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
    })
    .await;
    let admin = closed.session_as("ada", Role::Admin).await;
    let test = closed.call::<TestReceiver>(&[], Some(&admin)).await;
    assert_eq!(test.status, 200, "{}", test.body);
    // The answer is a sentence: the outcome and the time, never what came back.
    let said = test.json().as_str().unwrap_or_default().to_string();
    assert!(said.contains("refused"), "{said}");
    assert_eq!(receiver.total(), 0, "nothing reached the receiver");

    // The team's own network, listed in the settings: allowed, and nothing else is.
    let open = spawn_app_with(|c| {
        c.operations.outbound_allowed_networks = "127.0.0.1/32".into();
        c.events.webhook_url = url.clone();
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
    })
    .await;
    let admin = open.session_as("ada", Role::Admin).await;
    let test = open.call::<TestReceiver>(&[], Some(&admin)).await;
    let said = test.json().as_str().unwrap_or_default().to_string();
    assert!(said.contains("answered 204"), "{said}");
    assert_eq!(receiver.total(), 1);
    let refused = open
        .call::<SaveReceiver>(
            &[("url", "http://127.0.0.2:9/hook"), ("version", "0")],
            Some(&admin),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
}

#[tokio::test]
async fn a_thousand_made_up_methods_leave_no_scope_item_or_series() {
    let app = spawn_app().await;
    let key = app.api_key(&["metrics:read"]).await;
    let metrics_before = app.api("GET", "/metrics", &key, None).await.body;
    let items_before = app.dump_tables().await;
    let routes = [
        "/api/v1/conversations",
        "/api/v1/measurements",
        "/api/v1/kill-switches",
        "/api/v1/inbox/tenants/acme/inboxes/news/messages",
    ];
    let mut methods = Vec::new();
    for i in 0..1000 {
        let method = format!("X{}{i}", random_hex(3).to_uppercase());
        let route = routes[i % routes.len()];
        let req = Request::builder()
            .method(method.as_str())
            .uri(route)
            .header("host", "localhost")
            .header("authorization", format!("Bearer {key}"))
            .header("idempotency-key", random_hex(8))
            .body(Body::from("{}"))
            .unwrap();
        let a = app.send(req).await;
        assert_eq!(a.status, 405, "{method} {route}: {}", a.body);
        methods.push(method);
    }
    // Methods the console knows but a route does not serve: 405 too, nothing claimed.
    for route in routes {
        let a = app.api("DELETE", route, &key, Some("{}".into())).await;
        assert_eq!(a.status, 405, "DELETE {route}: {}", a.body);
    }
    let idempotency = app.store.table(IDEMPOTENCY_KEYS.base);
    let after = app.dump_tables().await;
    assert_eq!(
        after.matches(&idempotency).count(),
        items_before.matches(&idempotency).count(),
        "no idempotency key was claimed"
    );
    assert!(!after.contains("DELETE"), "no scope of an unserved method");
    let metrics_after = app.api("GET", "/metrics", &key, None).await.body;
    for m in &methods {
        assert!(!metrics_after.contains(m.as_str()), "no series names {m}");
    }
    assert!(!metrics_after.contains("http:DELETE") && !metrics_before.contains("http:DELETE"));
}

#[tokio::test]
async fn a_sign_in_never_leads_to_another_site() {
    let app = spawn_app().await;
    let password = app.add_user("nora", Role::Viewer).await;
    for next in [
        "/\t/evil.example",
        "/\r\n/evil.example",
        "/\\/evil.example",
        "\\\\evil.example",
        "//evil.example",
        "https://evil.example",
        "/login?next=//evil.example",
    ] {
        let a = app
            .post_form(
                "/login",
                form(&[("name", "nora"), ("password", &password), ("next", next)]),
                None,
            )
            .await;
        assert_eq!(a.status, 303, "{next:?}");
        assert_eq!(a.location(), Some("/"), "{next:?}");
    }
    let a = app
        .post_form(
            "/login",
            form(&[
                ("name", "nora"),
                ("password", &password),
                ("next", "/outbox?group=dead"),
            ]),
            None,
        )
        .await;
    assert_eq!(
        a.location(),
        Some("/outbox?group=dead"),
        "a page of the console's own"
    );
}

/// A sign-in form post from `addr`, as the server would see its connection.
async fn login_from(app: &TestApp, name: &str, password: &str, addr: &str) -> Answer {
    let peer: SocketAddr = format!("{addr}:40000").parse().unwrap();
    let mut req = Request::post("/login")
        .header("host", "localhost")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form(&[
            ("name", name),
            ("password", password),
            ("next", "/"),
        ])))
        .unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    app.send(req).await
}

fn outcome(a: &Answer) -> &'static str {
    match a.location() {
        Some(l) if l.contains("error=invalid") => "invalid",
        Some(l) if l.contains("error=locked") => "locked",
        Some(l) if l.contains("error=busy") => "busy",
        Some(l) if l.contains("error=slowed") => "slowed",
        _ if a.session_cookie().is_some() => "signed in",
        _ => "other",
    }
}

#[tokio::test]
async fn concurrent_guesses_are_checked_no_more_often_than_the_lockout_allows() {
    let app = spawn_app_with(|c| c.auth.password_checks_at_once = 64).await;
    let password = app.add_user("olga", Role::Viewer).await;
    let guesses: Vec<_> = (0..29)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                login_from(&app, "olga", &format!("guess-{i}"), "198.51.100.7").await
            })
        })
        .collect();
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for g in guesses {
        *seen.entry(outcome(&g.await.unwrap())).or_default() += 1;
    }
    // Five were checked: four wrong, and the fifth, wrong too, locked the name; the other
    // 24 were refused unchecked.
    assert_eq!(seen.get("invalid"), Some(&4), "{seen:?}");
    assert_eq!(seen.get("locked"), Some(&25), "{seen:?}");
    let right = login_from(&app, "olga", &password, "198.51.100.7").await;
    assert_eq!(
        outcome(&right),
        "locked",
        "the right password last is refused too"
    );

    // The lock is the attacker's: from another address the owner signs in.
    let owner = login_from(&app, "olga", &password, "203.0.113.20").await;
    assert_eq!(outcome(&owner), "signed in");
}

/// One address guessing many names (password spraying from one client) is slowed to one
/// check a turn, each turn further off, without locking anyone out: behind an office's
/// NAT, a colleague whose name has no failures of its own still signs in, in a turn.
#[tokio::test]
async fn one_address_guessing_many_names_is_slowed_but_locks_no_one_out() {
    let app = spawn_app_with(|c| c.auth.lockout_address_failures = 8).await;
    let password = app.add_user("pia", Role::Viewer).await;
    let office = "198.51.100.9";
    for i in 0..8 {
        let a = login_from(&app, &format!("name{i}"), "wrong-password", office).await;
        assert_eq!(outcome(&a), "invalid");
    }
    // Past the limit: the next check takes the address's turn; until the next turn,
    // everyone from it waits (told how long), the right password too.
    let a = login_from(&app, "name8", "wrong-password", office).await;
    assert_eq!(outcome(&a), "invalid", "checked in its turn");
    let b = login_from(&app, "pia", &password, office).await;
    assert_eq!(outcome(&b), "slowed");
    assert_eq!(
        b.headers.get("retry-after").map(|v| v.to_str().unwrap()),
        Some("1")
    );
    app.clock.advance(Duration::seconds(2));
    let c = login_from(&app, "pia", &password, office).await;
    assert_eq!(outcome(&c), "signed in", "not locked out: slowed");
    // Guessing on for the rest of the window: each turn twice as far off, up to 30 s, so
    // at most about one check in 30 s.
    let mut checked = 0;
    for i in 0..180 {
        app.clock.advance(Duration::seconds(5));
        let g = login_from(&app, &format!("spray{i}"), "wrong-password", office).await;
        match outcome(&g) {
            "invalid" => checked += 1,
            "slowed" => {}
            other => panic!("{other}"),
        }
    }
    assert!(
        (20..=40).contains(&checked),
        "{checked} guesses checked in 15 minutes from one address"
    );
    let d = login_from(&app, "pia", &password, "203.0.113.21").await;
    assert_eq!(outcome(&d), "signed in", "another address is not slowed");
}

#[tokio::test]
async fn a_flood_of_sign_ins_is_refused_at_once_past_the_bound() {
    let app = spawn_app_with(|c| c.auth.password_checks_at_once = 1).await;
    app.add_user("quinn", Role::Viewer).await;
    let flood: Vec<_> = (0..40)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                login_from(&app, "quinn", &format!("guess-{i}"), "198.51.100.11").await
            })
        })
        .collect();
    let mut busy = 0;
    for f in flood {
        let a = f.await.unwrap();
        if outcome(&a) == "busy" {
            assert_eq!(
                a.headers.get("retry-after").map(|v| v.to_str().unwrap()),
                Some("1")
            );
            busy += 1;
        }
    }
    assert!(
        busy > 0,
        "past one check at a time, sign-ins are refused at once"
    );
}

#[tokio::test]
async fn viewers_read_no_receiver_token_no_staff_records_and_no_message_id() {
    let app = spawn_app_with(|c| {
        c.events.webhook_url = "http://bot:pa55@127.0.0.1:9/hook/p4thtok3n?token=s3cr3t".into();
        c.events.webhook_secret =
            ops_console::server::config::Secret::new(SigningSecret::generate().expose());
    })
    .await;
    // The staff records made here are in the Audit page's day.
    app.stand_at_noon();
    let viewer = app.session_as("vic", Role::Viewer).await;
    let admin = app.session_as("ada", Role::Admin).await;
    let page = app
        .call::<LoadOutbox>(&[("group", "due"), ("cause", "")], Some(&viewer))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let url = page.json()["receivers"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !url.contains("s3cr3t") && !url.contains("pa55") && !url.contains("p4thtok3n"),
        "{url}"
    );
    let admin_page = app
        .call::<LoadOutbox>(&[("group", "due"), ("cause", "")], Some(&admin))
        .await;
    assert!(admin_page.json()["receivers"][0]["url"]
        .as_str()
        .unwrap()
        .contains("s3cr3t"));

    // Records about staff and API keys: admins only.
    let audit = |c: &str, t: &str| {
        vec![
            ("conversation", c.to_string()),
            ("action_type", t.to_string()),
            ("day", String::new()),
            ("from", String::new()),
            ("to", String::new()),
        ]
    };
    for (c, t) in [
        ("system#users", ""),
        ("system#api_keys", ""),
        ("", "user_change"),
    ] {
        let f = audit(c, t);
        let fields: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let a = app.call::<ListAudit>(&fields, Some(&viewer)).await;
        assert_eq!(a.status, 403, "{c}{t}: {}", a.body);
        assert_eq!(
            app.call::<ListAudit>(&fields, Some(&admin)).await.status,
            200
        );
    }
    let today = audit("", "");
    let fields: Vec<(&str, &str)> = today.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let rows = app.call::<ListAudit>(&fields, Some(&viewer)).await;
    assert!(
        !rows.body.contains("system#users"),
        "today's records hide staff changes: {}",
        rows.body
    );
    let all = app.call::<ListAudit>(&fields, Some(&admin)).await;
    assert!(
        all.body.contains("system#users"),
        "admins see them: {}",
        all.body
    );

    // The state's last message id is redacted as the Events page redacts it.
    let writer = app.api_key(&["events:write"]).await;
    let conversation = format!("helpdesk-{DIGITS}");
    let e = event(&conversation, Some("jane.doe@example.com"), "hello");
    let posted = post_event(&app, &writer, &e).await;
    assert!(posted.status.is_success(), "{}", posted.body);
    let state = app
        .call::<ConversationState>(&[("conversation", conversation.as_str())], Some(&viewer))
        .await;
    assert!(!state.body.contains("jane.doe"), "{}", state.body);
}

#[tokio::test]
async fn readyz_tells_the_public_only_ready_or_not_and_a_flood_costs_one_check() {
    let app = spawn_app().await;
    let public = app.get("/readyz", None).await;
    assert_eq!(public.status, 200, "{}", public.body);
    assert_eq!(public.json(), json!({"status": "ready"}));
    let described = || {
        app.store
            .requests()
            .snapshot()
            .get("DescribeTable")
            .copied()
            .unwrap_or(0)
    };
    let (before, started) = (described(), std::time::Instant::now());
    let probes: Vec<_> = (0..50)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { app.get("/readyz", None).await.status })
        })
        .collect();
    for p in probes {
        assert_eq!(p.await.unwrap(), 200);
    }
    // One check (a DescribeTable per table) per 5 s at most, however slow the machine.
    let checks = described() - before;
    let allowed = (started.elapsed().as_secs() / 5 + 1) * ALL.len() as u64;
    assert!(
        checks <= allowed,
        "fifty probes asked DynamoDB {checks} times ({allowed} allowed)"
    );
    // A ready console has no problems to name: a key, real or made up, costs no read.
    let key = app.api_key(&["metrics:read"]).await;
    app.clock.advance(Duration::seconds(6));
    let read = || {
        let r = app.store.requests().snapshot();
        r.get("GetItem").copied().unwrap_or(0) + r.get("Query").copied().unwrap_or(0)
    };
    let before = read();
    let detail = app.api("GET", "/readyz", &key, None).await;
    assert_eq!(detail.json(), json!({"status": "ready"}), "{}", detail.body);
    for _ in 0..20 {
        let made_up = format!("opsk_{}", random_hex(24));
        let a = app.api("GET", "/readyz", &made_up, None).await;
        assert_eq!(a.status, 200);
    }
    assert_eq!(read() - before, 0, "keys at a ready console were looked up");
}

/// Every `href`, `action` and `src` of a page, percent-decoded.
fn urls_of(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "action=\"", "src=\""] {
        for part in html.split(attr).skip(1) {
            let url = part
                .split('"')
                .next()
                .unwrap_or_default()
                .replace("&amp;", "&");
            out.push(percent_decoded(&url));
        }
    }
    out
}

fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match (
            b[i],
            s.get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok()),
        ) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn no_url_the_console_makes_carries_anything_personal() {
    use ops_console::server::services::inbox::publish::Publish;
    let app = spawn_app().await;
    app.set_switches(false, true).await;
    seed_pages(&app).await;
    let p = Publish::build(
        Some(vec![uk(USER)]),
        None,
        None,
        "Your invoice".into(),
        "It is ready.".into(),
        None,
        None,
        "test",
        None,
    )
    .unwrap();
    app.state
        .inbox
        .publish(&tk("acme"), &ik("news"), &p, "job-1", app.clock.now())
        .await
        .unwrap();
    let secrets = [DIGITS, "jane.doe", "helpdesk-4477"];
    let conversation = format!("helpdesk-{DIGITS}");
    let forms: Vec<Vec<(&str, &str)>> = vec![
        vec![("page", "conversations"), ("q", TEL)],
        // A mistyped email or phone falls through to the company search: sealed too.
        vec![("page", "conversations"), ("q", "jane.doe(at)example.com")],
        vec![("page", "events"), ("conversation", &conversation)],
        vec![("page", "audit"), ("conversation", &conversation)],
        vec![("page", "measurements"), ("user", USER), ("window", "24h")],
        vec![("page", "attempts"), ("user", USER)],
        vec![
            ("page", "inbox-user"),
            ("tenant", "acme"),
            ("inbox", "news"),
            ("user", USER),
        ],
        // A raw value in a hidden field is sealed too.
        vec![("page", "measurements"), ("user_ref", USER)],
        vec![("page", "events"), ("conversation_ref", &conversation)],
    ];
    for role in [Role::Viewer, Role::Operator, Role::Admin] {
        let cookie = app.session_as(&format!("u{}", random_hex(3)), role).await;
        for f in &forms {
            let found = app.post_form("/find", form(f), Some(&cookie)).await;
            assert_eq!(found.status, 303, "{f:?}");
            let location = found.location().unwrap().to_string();
            assert!(
                !secrets
                    .iter()
                    .any(|s| percent_decoded(&location).contains(s)),
                "{f:?} led to {location}"
            );
            let page = app.get(&location, Some(&cookie)).await;
            assert_eq!(page.status, 200, "{location}: {}", page.body);
            // A reference opens what it stands for, and a viewer still reads it masked:
            // holding a link is no way to read the id behind it.
            if role == Role::Viewer {
                let shown = secrets.iter().find(|s| page.body.contains(*s));
                assert!(shown.is_none(), "a viewer on {location} reads {shown:?}");
            }
            for url in urls_of(&page.body) {
                assert!(
                    !secrets.iter().any(|s| url.contains(s)),
                    "{role:?} on {location}: a link carries it: {url}"
                );
            }
            // The page found what was asked for (the reference opened).
            assert!(
                page.body.contains("attempt-row")
                    || page.body.contains("event-row")
                    || page.body.contains("feed-item")
                    || page.body.contains("audit")
                    || page.body.contains("conversation-row"),
                "{location} shows results"
            );
        }
    }
    // The CSV's file name is not the user's id.
    let viewer = app.session_as("csv-reader", Role::Operator).await;
    let csv = app
        .get(
            &format!("/measurements/audit.csv?user={}", crate::helpers::pct(USER)),
            Some(&viewer),
        )
        .await;
    assert_eq!(csv.status, 200);
    let name = csv.headers["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!name.contains("jane"), "{name}");
}

#[tokio::test]
async fn an_outbox_job_named_by_anything_but_its_id_and_an_endless_reason_are_refused_as_input() {
    let app = spawn_app().await;
    let viewer = app.session_as("jobs-viewer", Role::Viewer).await;
    // An id DynamoDB would refuse as a key (over 2 KB): a 400, never a 500.
    let long = "a".repeat(3000);
    let ans = app
        .call::<ops_console::api::outbox::OutboxJob>(&[("id", long.as_str())], Some(&viewer))
        .await;
    assert_eq!(ans.status, 400, "{}", ans.body);
    let operator = app.session_as("jobs-operator", Role::Operator).await;
    let reason = "r".repeat(600);
    let ans = app
        .call::<ops_console::api::outbox::MoveAction>(
            &[
                ("action", "x"),
                ("op", "discard"),
                ("reason", reason.as_str()),
                ("form_key", &random_hex(16)),
            ],
            Some(&operator),
        )
        .await;
    assert_eq!(ans.status, 400, "{}", ans.body);
    assert!(ans.body.contains("reason"), "{}", ans.body);
}
