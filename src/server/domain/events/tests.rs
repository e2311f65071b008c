use chrono::{Duration, Utc};
use serde_json::json;

use super::decision::*;
use super::rules::*;
use super::state::ConversationState;
use super::*;
use crate::model::AppError;
use crate::server::config::EventsSection;

fn cfg() -> EventsSection {
    crate::server::config::Config::for_tests("http://127.0.0.1:1", "t").events
}

fn body(text: &str, message_id: Option<&str>) -> Vec<u8> {
    let mut v = json!({
        "conversation_id": "c-1",
        "created_at": "2026-11-22T10:01:30Z",
        "channel": "email",
        "text": text,
    });
    if let Some(m) = message_id {
        v["message_id"] = json!(m);
    }
    v.to_string().into_bytes()
}

const ON: Switches = Switches {
    safe_mode: false,
    automation_enabled: true,
};

/// A body cut off inside its object: not JSON at all.
const CUT_OFF: &[u8] = b"{not json";

#[test]
fn each_bad_field_is_named() {
    let cases: &[(serde_json::Value, &str)] = &[
        (json!([1]), "body"),
        (
            json!({"created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
            "conversation_id",
        ),
        (
            json!({"conversation_id": "a:b", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
            "conversation_id",
        ),
        (
            json!({"conversation_id": "c", "message_id": "", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
            "message_id",
        ),
        (
            json!({"conversation_id": "c", "created_at": "yesterday", "channel": "email", "text": "x"}),
            "created_at",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00", "channel": "email", "text": "x"}),
            "created_at",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "pigeon", "text": "x"}),
            "channel",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email"}),
            "text",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": 5}),
            "text",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": {"email": "nope"}}),
            "customer.email",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": {"phone": "12"}}),
            "customer.phone",
        ),
        (
            json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": "jane"}),
            "customer",
        ),
    ];
    for (v, field) in cases {
        match parse(v.to_string().as_bytes()) {
            Err(AppError::Invalid { field: f, .. }) => assert_eq!(&f, field, "{v}"),
            other => panic!("{v}: expected invalid {field}, got {other:?}"),
        }
    }
    assert!(matches!(parse(CUT_OFF), Err(AppError::Invalid { .. })));
}

#[test]
fn keys_use_the_message_id_or_the_text_and_time_bucket() {
    let c = cfg();
    let with_id = parse(&body("hello", Some("m-9"))).unwrap();
    assert_eq!(with_id.event_key(c.hash_bucket_seconds), "evt:rp:c-1:m-9");
    let a = parse(&body("Where is  my order?", None)).unwrap();
    let mut b = parse(&body("  where is my ORDER? ", None)).unwrap();
    assert_eq!(a.event_key(300), b.event_key(300), "same text, same bucket");
    b.created_at += Duration::seconds(60);
    assert_eq!(
        a.event_key(300),
        b.event_key(300),
        "10:02:30 is still in the 10:00 bucket"
    );
    b.created_at += Duration::seconds(240);
    assert_ne!(
        a.event_key(300),
        b.event_key(300),
        "10:06:30 is the next bucket"
    );
    let other = parse(&body("Where is my parcel?", None)).unwrap();
    assert_ne!(a.event_key(300), other.event_key(300));
}

#[test]
fn the_canonical_payload_is_deterministic_and_ignores_extra_fields() {
    let a = parse(br#"{"text":"hi  there","channel":"EMAIL","created_at":"2026-11-22T11:00:00+01:00","conversation_id":"c","extra":1}"#).unwrap();
    let b = parse(br#"{"conversation_id":"c","created_at":"2026-11-22T10:00:00Z","channel":"email","text":" hi there"}"#).unwrap();
    assert_eq!(a.canonical(), b.canonical());
}

#[test]
fn the_order_flow_asks_once_then_completes() {
    let c = cfg();
    let now = Utc::now();
    let empty = ConversationState::default();
    let first = parse(&body("Where is my order? It hasn't arrived", Some("m1"))).unwrap();
    let d1 = decide(&empty, &first, ON, &c, now);
    assert_eq!(d1.intent, "order_status");
    assert_eq!(d1.auto_reply.as_deref(), Some(ASK_ORDER_NUMBER));
    assert_eq!(d1.pending_flow.as_ref().unwrap().attempts, 1);
    let s1 = apply(&empty, &first, &d1, true, &c, 90, now);

    let again = parse(&body(
        "hello?? still waiting, where is my order",
        Some("m2"),
    ))
    .unwrap();
    let d2 = decide(&s1, &again, ON, &c, now);
    assert_eq!(d2.auto_reply, None, "asked once only");
    assert_eq!(d2.pending_flow.as_ref().unwrap().attempts, 2);
    let s2 = apply(&s1, &again, &d2, true, &c, 90, now);

    let answer = parse(&body("it is order #A-99812", Some("m3"))).unwrap();
    let d3 = decide(&s2, &answer, ON, &c, now);
    assert_eq!(d3.intent, "order_status");
    assert_eq!(d3.auto_reply.as_deref(), Some(ORDER_STATUS));
    assert_eq!(d3.pending_flow, None);
    assert_eq!(d3.order_ref_last4.as_deref(), Some("9812"));
    let s3 = apply(&s2, &answer, &d3, true, &c, 90, now);
    assert_eq!(
        s3.auto_replies_sent,
        vec![ASK_ORDER_NUMBER.to_string(), ORDER_STATUS.to_string()]
    );

    let later = parse(&body("where is my order 555123 now", Some("m4"))).unwrap();
    let d4 = decide(&s3, &later, ON, &c, now);
    assert_eq!(
        d4.auto_reply, None,
        "the order_status reply is never sent twice"
    );
}

#[test]
fn risk_escalates_and_automation_off_sends_no_reply() {
    let c = cfg();
    let now = Utc::now();
    let ev = parse(&body("I will file a chargeback, this is fraud", Some("m1"))).unwrap();
    let d = decide(&ConversationState::default(), &ev, ON, &c, now);
    assert_eq!(d.intent, "chargeback");
    assert_eq!(
        d.risk_flags,
        vec!["chargeback".to_string(), "fraud_suspected".to_string()]
    );
    assert!(d
        .actions
        .iter()
        .any(|a| a.action_type == ActionType::Escalate));
    assert!(d.actions.iter().any(|a| a.key == "act:rp_tag:c-1:fraud:m1"));
    assert!(d
        .actions
        .iter()
        .any(|a| a.key == "act:rp_assign:c-1:payments-escalations:m1"));

    let off = Switches {
        safe_mode: false,
        automation_enabled: false,
    };
    let ev = parse(&body("where is my order", Some("m2"))).unwrap();
    let d = decide(&ConversationState::default(), &ev, off, &c, now);
    assert_eq!(d.mode, Mode::RouteOnly);
    assert_eq!(d.auto_reply, None);
    assert!(d
        .actions
        .iter()
        .all(|a| a.action_type != ActionType::AutoReply));
}

#[test]
fn nothing_matched_goes_to_support() {
    let c = cfg();
    let ev = parse(&body("Hi, quick question about sizes", None)).unwrap();
    let d = decide(&ConversationState::default(), &ev, ON, &c, Utc::now());
    assert_eq!((d.intent.as_str(), d.team.as_str()), ("general", "support"));
    assert_eq!(d.actions.len(), 1);
    assert_eq!(d.actions[0].action_type, ActionType::Route);
}

/// The decision is stored as JSON with its event: mode and action types keep the strings
/// they always had, and read back to the same decision.
#[test]
fn a_stored_decision_keeps_its_strings() {
    let c = cfg();
    let ev = parse(&body("I will file a chargeback", Some("m1"))).unwrap();
    let d = decide(&ConversationState::default(), &ev, ON, &c, Utc::now());
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["mode"], "automation_candidate");
    assert_eq!(v["actions"][0]["action_type"], "route");
    assert!(v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["action_type"] == "escalate"));
    let back: Decision = serde_json::from_value(v).unwrap();
    assert_eq!(back, d);
}
