//! Audit records in words: one line per record ("Routed to payments — suppressed by safe
//! mode"), made from its action type, its (redacted) payload and its result. The JSON stays
//! one click away on the page; this is what a person reads first. Each area words its own
//! records (`events::sentences`, `kill_switches`, `users`); this puts the line together.

use serde_json::Value;

use crate::server::domain::events;
use crate::server::domain::events::sentences::capitalised;
use crate::server::domain::{kill_switches, users};

/// The line for one record. Unknown action types and payloads still read as a sentence.
pub fn describe(action_type: &str, payload: &str, result: &str) -> String {
    let p: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let text = |k: &str| p.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let reason = text("reason")
        .map(|r| format!(": “{r}”"))
        .unwrap_or_default();
    let target = text("target").unwrap_or("?");
    // A delivery attempt of a side effect: about the delivery, not the routing.
    if let Some(n) = p.get("attempt").and_then(Value::as_i64) {
        if let Some(line) = events::sentences::attempt(action_type, target, n, result) {
            return line;
        }
    }
    let what = match action_type {
        "decision" => events::sentences::decision(&p),
        "route" => format!("Routed to {target}"),
        "tag" => format!("Tagged {target}"),
        "assign" => format!("Assigned to {target}"),
        "auto_reply" => format!("Auto-reply {target}"),
        "escalate" => format!("Escalated to {target}"),
        "kill_switch_change" => kill_switches::change_in_words(&p, &reason),
        "kill_switch_trigger" => kill_switches::trigger_in_words(&p),
        "kill_switch_trip" => kill_switches::trip_in_words(&p),
        "reveal_contact" => format!("Contact details revealed{reason}"),
        "user_change" => users::change_in_words(&p, &reason),
        "many_lookups" => format!(
            "{} searched by a typed phone number, email or id {} times within {} minutes",
            text("user").unwrap_or("?"),
            p.get("lookups").and_then(Value::as_i64).unwrap_or(0),
            p.get("window_minutes").and_then(Value::as_i64).unwrap_or(0)
        ),
        "api_key_created" => format!("API key {} created", text("name").unwrap_or("?")),
        "api_key_revoked" => format!("API key {} revoked{reason}", text("name").unwrap_or("?")),
        "idempotency_key_expired" => format!(
            "Idempotency key in {} expired by hand{reason}",
            text("scope").unwrap_or("?")
        ),
        t if t.starts_with("outbox_") => {
            format!(
                "Side effect {}{reason}",
                t["outbox_".len()..].replace('_', " ")
            )
        }
        other => capitalised(&other.replace('_', " ")),
    };
    match outcome(result) {
        Some(o) => format!("{what} — {o}"),
        None => what,
    }
}

/// What a result adds to the line: nothing for a plain success.
fn outcome(result: &str) -> Option<String> {
    let r = result.trim();
    if r.is_empty() || r == "success" || r.starts_with("success: ") {
        return None;
    }
    Some(match r {
        "suppressed: safe_mode" => "suppressed by safe mode".into(),
        "held: safe_mode" => "held by safe mode".into(),
        "queued: outbox" => "queued for delivery".into(),
        _ => r.replace(": ", " — ").replace('_', " "),
    })
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn records_read_as_sentences() {
        assert_eq!(
            describe(
                "route",
                r#"{"target":"payments","intent":"refund"}"#,
                "suppressed: safe_mode"
            ),
            "Routed to payments — suppressed by safe mode"
        );
        assert_eq!(
            describe(
                "decision",
                r#"{"intent":"order_status","team":"orders","confidence":0.92,"safe_mode":true}"#,
                "success"
            ),
            "Decided “order status” for orders (92 % sure), in safe mode"
        );
        assert_eq!(
            describe(
                "kill_switch_change",
                r#"{"switch":"safe_mode","from":true,"to":false,"version":3,"reason":"incident over"}"#,
                "success"
            ),
            "Safe mode turned off: “incident over”"
        );
        assert_eq!(
            describe(
                "kill_switch_trigger",
                r#"{"switch":"automation_enabled","change":"rotated"}"#,
                "success"
            ),
            "Automation's trigger URL rotated"
        );
        assert_eq!(
            describe(
                "kill_switch_trip",
                r#"{"switch":"safe_mode","rule":"outbox.dead_letters","change":"attached"}"#,
                "success"
            ),
            "Trip attached: when outbox.dead_letters fires, safe mode turns on"
        );
        assert_eq!(
            describe(
                "user_change",
                r#"{"change":"set_role","user":"sam","from":"viewer","to":"operator","reason":"on call"}"#,
                ""
            ),
            "sam's role changed from viewer to operator: “on call”"
        );
        assert_eq!(
            describe(
                "outbox_redrive",
                r#"{"reason":"receiver fixed","by":"ada"}"#,
                "success: redrive"
            ),
            "Side effect redrive: “receiver fixed”"
        );
        assert_eq!(
            describe(
                "route",
                r#"{"target":"billing","attempt":1,"event_key":"evt:x"}"#,
                "fail: receiver answered 503"
            ),
            "“Route billing” not delivered (attempt 1): receiver answered 503"
        );
        assert_eq!(
            describe("mystery_thing", "not json", "failed: timeout"),
            "Mystery thing — failed — timeout"
        );
    }
}
