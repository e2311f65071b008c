use super::*;

/// The enums store exactly the strings the records always had.
#[test]
fn statuses_kinds_and_types_store_their_old_strings() {
    fn stored<T: Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }
    for s in [
        EventStatus::Processing,
        EventStatus::Decided,
        EventStatus::Processed,
    ] {
        assert_eq!(stored(s), s.as_str());
    }
    for s in [
        ActionStatus::Claimed,
        ActionStatus::Delivered,
        ActionStatus::Queued,
        ActionStatus::Retry,
        ActionStatus::Rejected,
        ActionStatus::Held,
        ActionStatus::Dead,
        ActionStatus::Discarded,
    ] {
        assert_eq!(stored(s), s.as_str());
    }
    for t in [
        ActionType::Route,
        ActionType::Tag,
        ActionType::Assign,
        ActionType::AutoReply,
        ActionType::Escalate,
    ] {
        assert_eq!(stored(t), t.as_str());
    }
    for m in [Mode::RouteOnly, Mode::AutomationCandidate] {
        assert_eq!(stored(m), m.as_str());
    }
    assert_eq!(stored(RecordKind::Event), "event");
    assert_eq!(stored(RecordKind::Action), "action");
    assert_eq!(stored(RecordKind::Job), "job");
    assert_eq!(
        [
            EventStatus::Processing.as_str(),
            EventStatus::Decided.as_str(),
            EventStatus::Processed.as_str()
        ],
        ["processing", "decided", "processed"]
    );
    assert_eq!(
        ActionStatus::Queued.to_string(),
        "queued",
        "answers say `already queued`"
    );
    assert_eq!(ActionType::AutoReply.as_str(), "auto_reply");
    assert_eq!(Mode::AutomationCandidate.as_str(), "automation_candidate");
}

/// `due-index` holds every attribute of a due side effect but its message and its trace: a
/// record read from it decodes, and an attribute added to [`ActionRecord`] without a place
/// in the projection fails here, not on a page.
#[test]
fn due_index_holds_all_of_a_side_effect_but_its_message_and_trace() {
    use crate::server::store::schema::DUE_INDEX_HOLDS;
    let rec = ActionRecord {
        event_id: "act:rp_route:c-1:m-1".into(),
        kind: RecordKind::Action,
        action_type: ActionType::Route,
        target: "support".into(),
        conversation_id: "c-1".into(),
        source_event: "evt:rp:c-1:m-1".into(),
        status: ActionStatus::Retry,
        result: Some("fail".into()),
        created_at: "2026-12-07T00:00:00.000Z".into(),
        updated_at: "2026-12-07T00:00:00.000Z".into(),
        expires_at: 1,
        attempts: 1,
        claim_nonce: "n".into(),
        lease_until_ms: 1,
        outbox: None,
        due: Some("due#07".into()),
        outbox_sk: Some("0000000000001#act".into()),
        next_at_ms: 1,
        receiver: Some("crm".into()),
        after: Some("act:x".into()),
        body: "{}".into(),
        tries: vec![Try {
            n: 1,
            at: "t".into(),
            ms: 1,
            result: "r".into(),
        }],
        cause: Some("http 503".into()),
        unknown: true,
        held_reason: Some("safe_mode".into()),
        round_start: 1,
        trace_parent: Some("00-x".into()),
    };
    let mut item = serde_json::to_value(&rec).unwrap();
    let item = item.as_object_mut().unwrap();
    item.insert("resend_job".into(), serde_json::json!("job:1"));
    // The keys of the table and the index, and what the index leaves out.
    let not_held = ["event_id", "due", "outbox_sk", "body", "trace_parent"];
    let mut missing: Vec<&str> = item
        .keys()
        .map(String::as_str)
        .filter(|k| !not_held.contains(k) && !DUE_INDEX_HOLDS.contains(k))
        .collect();
    // `outbox` is never on a due side effect written on `due-index`.
    missing.retain(|k| *k != "outbox");
    assert!(missing.is_empty(), "not in due-index: {missing:?}");
    // What a read of the index gives decodes (the message empty, the attempts there).
    let held: serde_json::Map<String, serde_json::Value> = item
        .iter()
        .filter(|(k, _)| !["body", "trace_parent"].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let read: ActionRecord = serde_json::from_value(serde_json::Value::Object(held)).unwrap();
    assert_eq!((read.body.as_str(), read.tries.len()), ("", 1));
}
