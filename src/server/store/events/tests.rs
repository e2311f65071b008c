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
